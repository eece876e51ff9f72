# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The compaction debt a throttle leaves, priced with the phase that pays it (planning/debt.py)."""

import numpy as np
import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.planning import cost_benefit as planner
from ansible_collections.tactician.nosql.plugins.module_utils.planning import debt, safety

READ = {"mix": {"read": 0.95, "update": 0.05}}
UPLOAD = {"mix": {"insert": 1.0}}
CONFIGS = [{"compaction_throughput": 64}, {"compaction_throughput": 2}]
# The lab's upload: throttled compaction serves ~30 % more inserts; reads barely care.
OPS = {"read": [4800.0, 4700.0], "upload": [2800.0, 3650.0]}


def timeline(workloads, demand=None, ledger=True, model=None):
    F = np.array([OPS["read"] if w is READ else OPS["upload"] for w in workloads])
    roll = planner.Roll(3, 1, 20.0, live_s=5.0)
    line = planner.Timeline(F, roll, 30.0, demand=demand, restart=np.zeros((2, 2), dtype=bool))
    if ledger:
        debt.Ledger(model or debt.DebtModel(), CONFIGS, workloads).attach(line)
    return line


def test_a_throttled_upload_is_priced_with_the_read_phase_that_pays_for_it():
    workloads = [READ] * 5 + [UPLOAD] * 11 + [READ] * 9
    plain = planner.best_plan(timeline(workloads, ledger=False), 0, min_gain=0.01)
    # Without the debt the throttle looks good for the whole upload.
    assert plain["switches"][0][2] == 1
    line = timeline(workloads)
    priced = planner.best_plan(line, 0, min_gain=0.01)
    assert priced["switches"] == []
    # The plain plan, once its debt is carried, loses against keeping the configuration.
    pairs = [(s, b) for s, _a, b in plain["switches"]]
    assert line.value(pairs, 0) < line.value([], 0)
    detail = line.debt.value(line, [(5, 1), (16, 0)], 0, detail=True)
    assert detail["penalty_ops"] > 0 and detail["end_bytes"] == 0


def test_a_quiet_phase_after_the_upload_pays_the_debt_for_free():
    workloads = [READ] * 5 + [UPLOAD] * 11 + [READ] * 20 + [READ] * 9
    demand = np.array([1e9] * 16 + [1500.0] * 20 + [1e9] * 9)
    line = timeline(workloads, demand=demand)
    plan = planner.best_plan(line, 0, min_gain=0.01)
    targets = [(s, b) for s, _a, b in plan["switches"]]
    assert targets[0][1] == 1 and targets[0][0] <= 5
    # Back to unthrottled as the quiet phase starts, and no debt left.
    assert targets[-1] == (16, 0)
    assert plan["debt"]["end_bytes"] == 0
    assert plan["gain"] > 0


def test_a_debt_left_at_the_end_of_the_lookahead_is_a_liability():
    workloads = [UPLOAD] * 20
    line = timeline(workloads)
    throttled = line.debt.value(line, [(0, 1)], 0, detail=True)
    assert throttled["end_bytes"] > 1 << 30
    assert throttled["liability_ops"] > 0
    assert throttled["ops"] < timeline(workloads, ledger=False).value([(0, 1)], 0) - throttled["liability_ops"] + 1


def test_the_guard_counts_the_debt_of_a_switch():
    workloads = [UPLOAD] * 6 + [READ] * 10
    plain, priced = timeline(workloads, ledger=False), timeline(workloads)
    gain_plain, _stay, _share = safety.switch_gain(plain, 0, 1, 6)
    gain_priced, _stay, _share = safety.switch_gain(priced, 0, 1, 6)
    assert gain_plain > 0 > gain_priced


def test_rates_and_penalties():
    model = debt.DebtModel()
    assert model.rate({"compaction_throughput": 0}) == model.capacity
    assert model.rate({"compaction_throughput": 2}) == 2 * debt.MIB
    assert model.rate({"compaction_throughput": 1000}) == model.capacity
    assert model.rate({}) == model.capacity
    assert float(model.penalty(100 * debt.GIB, 1.0, 1.0)) == model.max_penalty
    assert float(model.penalty(0.0, 1.0, 0.0)) == 0.0
    assert float(model.payoff_cost(0.0, 1000.0, 1.0)) == 0.0
    assert float(model.payoff_cost(debt.GIB, 1000.0, 1.0)) > 0


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"capacity": 3}, "debt.capacity: not an option; allowed: parameter"),
        ({"max_penalty": 1.0}, "debt.max_penalty"),
        ({"capacity_mib_s": 0}, "debt.capacity_mib_s"),
        ({"pending_bytes": -1}, "debt.pending_bytes"),
    ],
)
def test_bad_settings_name_the_field(settings, message):
    with pytest.raises(debt.DebtError, match=message.replace("(", r"\(").replace(")", r"\)")):
        debt.DebtModel.from_dict(settings)
