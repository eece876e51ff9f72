# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""benchmarks/tuning_gain.py without a server: the surrogate + GA on the race's budget (its own design of as many
runs as the race had, a surrogate fitted on those runs alone, the GA's answer), the shipped surrogate's path and
the speedup interval."""

from __future__ import annotations

import math
import os
import sys

import pytest
from testlib import ROOT

BENCHMARKS = os.path.join(ROOT, "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)

import tuning_gain

from ansible_collections.tactician.nosql.plugins.module_utils.models import training as modeling
from ansible_collections.tactician.nosql.plugins.module_utils.planning import racing

LIVE = {
    "concurrent_reads": [8, 64],
    "concurrent_writes": [8, 64],
    "concurrent_compactors": [1, 4],
    "key_cache_size": [0, 64],
    "compaction_throughput": [16, 128],
}


@pytest.fixture(name="race")
def fixture_race():
    # As the race module builds it from tactician_live_design (playbooks/tune.yml).
    return racing.race_from_spec(
        modeling._catalog("cassandra", "5.0.9"),
        {
            "parameters": list(LIVE),
            "ranges": LIVE,
            "defaults": {"concurrent_compactors": 2},
            "instances": [{"workload": tuning_gain.work_of("a")}],
            "budget_evaluations": 12,
            "heap_mb": 1024,
        },
    )


def measured(configs, ops):
    """Rows as playbooks/compare.yml records them, ops/s = ops(config)."""
    return [
        {"name": name, "round": 0, "workload": tuning_gain.work_of("a"), "config": config, "ops_per_s": ops(config)}
        for name, config in configs.items()
    ]


def test_the_design_has_the_race_budget_in_distinct_configurations_the_default_first(race):
    design = tuning_gain.budget_design(race, 12)
    assert list(design) == ["d%02d" % i for i in range(12)]
    assert design["d00"] == race.default_config()
    assert len({tuple(sorted(c.items())) for c in design.values()}) == 12
    for config in design.values():
        assert set(config) == set(LIVE)
        for name, (low, high) in LIVE.items():
            assert low <= config[name] <= high
    # Deterministic: the same race gives the same design.
    assert tuning_gain.budget_design(race, 12) == design


def test_a_surrogate_on_the_design_alone_finds_what_the_runs_show(race):
    design = tuning_gain.budget_design(race, 12)
    rows = measured(design, lambda c: 1000.0 + 50.0 * c["concurrent_writes"])
    model, r2 = tuning_gain.budget_surrogate(race, rows)
    assert model.training_rows == 12
    assert r2 > 0.5
    best = tuning_gain.ga_config(model, "a", race.default_config(), feasible=race.feasible)
    assert set(best) == set(LIVE)
    assert best["concurrent_writes"] > race.default_config()["concurrent_writes"]


def test_the_budget_surrogate_needs_a_few_measured_runs(race):
    design = dict(list(tuning_gain.budget_design(race, 12).items())[:3])
    rows = measured(design, lambda c: 100.0) + [{"name": "x", "workload": {}, "config": {}, "ops_per_s": None}]
    with pytest.raises(SystemExit, match="design: 3 measured runs; a surrogate needs at least 4"):
        tuning_gain.budget_surrogate(race, rows)


def test_without_a_shipped_surrogate_there_is_no_offline_configuration(tmp_path, race):
    assert tuning_gain.shipped_config("a", race.default_config(), str(tmp_path / "none.json")) is None


def test_the_shipped_surrogate_keeps_the_unraced_parameters_at_their_defaults(race):
    if not os.path.exists(tuning_gain.SHIPPED_MODEL):
        pytest.skip("no shipped bench surrogate")
    default = race.default_config()
    config = tuning_gain.shipped_config("a", default, tuning_gain.SHIPPED_MODEL, space=sorted(default))
    assert set(config) == set(LIVE)


def test_the_interval_is_a_geometric_mean():
    mean, low, high = tuning_gain.interval([2.0, 0.5, 1.0])
    assert mean == pytest.approx(1.0)
    assert low < 1.0 < high
    assert math.isnan(tuning_gain.interval([1.2])[1])


def test_a_probed_run_is_judged_per_unit_of_cpu_speed():
    assert tuning_gain.run_value({"ops_per_s": "5000.0", "ops_per_speed": "120.5"}) == 120.5
    assert tuning_gain.run_value({"ops_per_s": "5000.0", "ops_per_speed": None}) == 5000.0
    assert tuning_gain.run_value({"ops_per_s": 5000.0, "ops_per_speed": "None"}) == 5000.0
    assert tuning_gain.run_value({"ops_per_s": 5000.0}) == 5000.0
