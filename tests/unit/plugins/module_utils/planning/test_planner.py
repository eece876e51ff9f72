# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The cost-benefit planner of seed 001 (Eq. 7-9): rolls, plan values, the exact and genetic searches, baselines,
break-even, and the static tuner it draws its candidates from."""

from __future__ import annotations

import itertools
import json
import os

import numpy as np
import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog import Catalog
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError
from ansible_collections.tactician.nosql.plugins.module_utils.models import advisor
from ansible_collections.tactician.nosql.plugins.module_utils.models.surrogate import Surrogate
from ansible_collections.tactician.nosql.plugins.module_utils.models.surrogate_design import feasible_by_catalog
from ansible_collections.tactician.nosql.plugins.module_utils.models.surrogate_features import FeatureSpace
from ansible_collections.tactician.nosql.plugins.module_utils.planning import cost_benefit as planner
from ansible_collections.tactician.nosql.plugins.module_utils.planning import (
    dynamic,
    heterogeneous,
    modes,
    safety,
    tuner,
)
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile
from ansible_collections.tactician.nosql.plugins.module_utils.planning.cost_benefit import PlanError, Roll, Timeline

HW = {"vcpu": 2, "ram_gb": 8, "heap_mb": 1024}


# ------------------------------------------------------------------------------------------------ rolls
def test_roll_layout_shares_of_nodes_online():
    roll = Roll(nodes=3, batch=1, restart_s=30)
    assert roll.batches == 3 and roll.duration() == 90
    assert roll.layout() == [
        (0.0, 30.0, 2 / 3, 0.0),
        (30.0, 60.0, 1 / 3, 1 / 3),
        (60.0, 90.0, 0.0, 2 / 3),
    ]
    assert Roll(nodes=3, batch=3, restart_s=30).layout() == [(0.0, 30.0, 0.0, 0.0)]
    assert Roll(nodes=4, batch=1, restart_s=10, live_s=5).layout(restart=False) == [(0.0, 5.0, 1.0, 0.0)]


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"nodes": 0, "batch": 1, "restart_s": 1}, "nodes"),
        ({"nodes": 2, "batch": 3, "restart_s": 1}, "batch"),
        ({"nodes": 2, "batch": 1, "restart_s": -1}, "restart_s"),
        ({"nodes": 2, "batch": 1, "restart_s": float("nan")}, "restart_s"),
    ],
)
def test_roll_refuses_bad_input(kwargs, field):
    with pytest.raises(PlanError, match=field):
        Roll(**kwargs)


# ------------------------------------------------------------------------------------------------ values
def test_switch_value_by_hand():
    F = np.array([[100.0, 200.0]] * 10)
    line = Timeline(F, Roll(nodes=3, batch=1, restart_s=30), step_s=30)
    # batch 1 down: 2/3 x 100; batch 2 down: 1/3 x 100 + 1/3 x 200; batch 3 down: 2/3 x 200; then 7 steps at 200.
    assert line.value([(0, 1)], 0) == pytest.approx(2000 + 3000 + 4000 + 7 * 30 * 200)
    assert line.value([], 0) == pytest.approx(10 * 30 * 100)
    sim = planner.simulate(line, [(0, 1)], 0)
    assert sim["total"] == pytest.approx(line.value([(0, 1)], 0))
    assert sim["ops_per_step"][:3] == pytest.approx([2000, 3000, 4000])
    assert sim["switches"] == [{"step": 0, "from": 0, "to": 1, "start_s": 0.0, "end_s": 90.0, "restart": True}]


def test_a_switch_during_a_roll_is_ignored():
    F = np.array([[100.0, 200.0, 300.0]] * 10)
    line = Timeline(F, Roll(nodes=3, batch=1, restart_s=30), step_s=30)
    assert line.applied([(0, 1), (2, 2), (3, 2)], 0) == [(0, 0, 1), (3, 1, 2)]
    assert line.value([(0, 1), (2, 2)], 0) == pytest.approx(line.value([(0, 1)], 0))


def test_demand_caps_what_is_served():
    F = np.array([[100.0, 200.0]] * 4)
    line = Timeline(F, Roll(nodes=1, batch=1, restart_s=0), step_s=10, demand=[150, 150, 50, 50])
    assert line.value([], 1) == pytest.approx(10 * (150 + 150 + 50 + 50))
    assert line.value([], 0) == pytest.approx(10 * (100 + 100 + 50 + 50))


def test_live_switch_takes_no_node_offline():
    F = np.array([[100.0, 200.0]] * 4)
    restart = np.array([[False, False], [False, False]])
    line = Timeline(F, Roll(nodes=2, batch=1, restart_s=60, live_s=10), step_s=30, restart=restart)
    # 10 s on the old configuration, then the new one.
    assert line.value([(0, 1)], 0) == pytest.approx(10 * 100 + 20 * 200 + 3 * 30 * 200)


def test_break_even_by_hand():
    F = np.array([[100.0, 200.0]] * 10)
    line = Timeline(F, Roll(nodes=2, batch=1, restart_s=30), step_s=30)
    even = planner.break_even(line, 0, 0, 1)
    # First batch down: 50 against 100 for 30 s (-1500); second: 100 against 100; then +100 ops/s.
    assert even["cost_ops"] == pytest.approx(1500)
    assert even["break_even_s"] == pytest.approx(75, abs=1)
    assert even["gain_ops"] == pytest.approx(-1500 + 240 * 100, rel=1e-3)
    never = planner.break_even(line, 8, 0, 1)
    assert never["break_even_s"] is None


# ------------------------------------------------------------------------------------------------ search
def _brute_force(line, start):
    best = line.value([], start)
    for genes in itertools.product(range(line.configs + 1), repeat=line.steps):
        plan = [(k, g - 1) for k, g in enumerate(genes) if g]
        best = max(best, line.value(plan, start))
    return best


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_exact_plan_is_the_optimum(seed):
    rng = np.random.default_rng(seed)
    F = rng.uniform(50, 150, size=(6, 3))
    line = Timeline(F, Roll(nodes=2, batch=1, restart_s=float(rng.choice([5, 20, 45]))), step_s=30)
    plan = planner.best_plan(line, 0)
    assert plan["ops"] == pytest.approx(_brute_force(line, 0))
    assert line.value([(s, b) for s, _a, b in plan["switches"]], 0) == pytest.approx(plan["ops"])


def test_short_phase_is_not_followed_and_long_one_is():
    # Config 0 suits reads, 1 writes. Write phases of 1 step (30 s) and of 10 steps.
    reads, writes = [100.0, 60.0], [60.0, 100.0]
    F = np.array([reads] * 5 + [writes] + [reads] * 5 + [writes] * 10 + [reads] * 3)
    line = Timeline(F, Roll(nodes=3, batch=1, restart_s=20), step_s=30)
    plan = planner.best_plan(line, 0)
    # The rolls start one step early: their first batch is down while the old phase ends (anticipation pays).
    assert [s for s, _a, _b in plan["switches"]] == [10, 20]
    assert plan["ops"] > plan["stay_ops"]
    base = planner.baselines(line, 0, 0, np.argmax(F, axis=1))
    assert base["theoretical_best"] >= plan["ops"] >= base["static_optimized"]
    assert base["naive"] < plan["ops"]  # every node down at each of the 4 changes
    assert base["naive_switches"] == 4


def test_min_gain_rejects_a_marginal_plan():
    F = np.array([[100.0, 100.5]] * 40)
    line = Timeline(F, Roll(nodes=1, batch=1, restart_s=1), step_s=30)
    assert planner.best_plan(line, 0)["switches"]
    plan = planner.best_plan(line, 0, min_gain=0.01)
    assert plan["switches"] == [] and plan["rejected_gain"] < 0.01


def test_ga_plan_reaches_the_exact_optimum_when_seeded_and_never_loses_to_no_switch():
    rng = np.random.default_rng(7)
    F = rng.uniform(50, 150, size=(20, 4))
    line = Timeline(F, Roll(nodes=3, batch=1, restart_s=15), step_s=30)
    exact = planner.best_plan(line, 0)
    ga = planner.ga_plan(line, 0, seed=1)
    assert ga["ops"] >= line.value([], 0) - 1e-6
    assert ga["ops"] <= exact["ops"] + 1e-6
    seeded = planner.ga_plan(line, 0, seeds=[[(s, b) for s, _a, b in exact["switches"]]], seed=1)
    assert seeded["ops"] == pytest.approx(exact["ops"])


def test_bad_plans_name_the_field():
    line = Timeline(np.ones((3, 2)), Roll(nodes=1, batch=1, restart_s=1))
    with pytest.raises(PlanError, match=r"switches\[0\].*outside"):
        line.value([(5, 1)], 0)
    with pytest.raises(PlanError, match=r"switches\[0\].*not a candidate"):
        line.value([(0, 9)], 0)
    with pytest.raises(PlanError, match="F:"):
        Timeline(-np.ones((3, 2)), Roll(nodes=1, batch=1, restart_s=1))
    with pytest.raises(PlanError, match="demand"):
        Timeline(np.ones((3, 2)), Roll(nodes=1, batch=1, restart_s=1), demand=[1, 2])


# ------------------------------------------------------------------------------------------------ tuner
TUNED = ["concurrent_writes", "concurrent_reads", "memtable_heap_space", "compaction"]
RANGES = {
    "concurrent_writes": [8, 64],
    "concurrent_reads": [8, 64],
    "memtable_heap_space": [32, 384],
    "compaction": ["SizeTieredCompactionStrategy", "LeveledCompactionStrategy"],
}


def _truth(workload, config):
    """A store whose writes like many writer threads and few reader threads, and reads the other way round."""
    reads = workload["mix"].get("read", 0.0)
    writers, readers = config["concurrent_writes"], config["concurrent_reads"]
    return (
        1000.0
        + 40.0 * writers * (1 - reads)
        - 20.0 * writers * reads
        + 30.0 * readers * reads
        - 15.0 * readers * (1 - reads)
    )


@pytest.fixture(scope="module")
def catalog():
    return Catalog.for_store("cassandra")


@pytest.fixture(scope="module")
def model(catalog):
    space = FeatureSpace(catalog, TUNED, ranges=RANGES)
    rng = np.random.default_rng(0)
    rows = []
    for _row in range(400):
        config = space.decode_unit(rng.random(space.dimension))
        ratio = float(rng.choice([0.0, 0.1, 0.5, 0.9, 1.0]))
        workload = {"mix": {"read": ratio, "update": 1 - ratio} if ratio < 1 else {"read": 1.0}}
        rows.append({"workload": workload, "config": config, "hardware": HW, "ops_per_s": _truth(workload, config)})
    return Surrogate(space, n_estimators=30, max_depth=8).fit(rows)


WRITES = {"mix": {"read": 0.1, "update": 0.9}}
READS = {"mix": {"read": 0.9, "update": 0.1}}


def test_tune_finds_what_each_workload_likes(model, catalog):
    f_ops = tuner.Throughput(model, hardware=HW)
    feasible = feasible_by_catalog(catalog, memory_mb=8192, heap_mb=1024)
    default = model.space.default_config(HW)
    writes = tuner.tune(f_ops, [WRITES], feasible=feasible, include=[default], seed=0)
    reads = tuner.tune(f_ops, [READS], feasible=feasible, include=[default], seed=0)
    assert writes["config"]["concurrent_writes"] >= 48 and writes["config"]["concurrent_reads"] <= 24
    assert reads["config"]["concurrent_reads"] >= 48 and reads["config"]["concurrent_writes"] <= 24
    assert writes["score"] >= writes["included"][0]["score"]
    fixed = tuner.tune(f_ops, [WRITES], fixed={"compaction": "LeveledCompactionStrategy"}, seed=0, generations=5)
    assert fixed["config"]["compaction"] == "LeveledCompactionStrategy"


def test_tune_refuses_bad_input(model):
    f_ops = tuner.Throughput(model, hardware=HW)
    with pytest.raises(tuner.TuneError, match="workloads"):
        tuner.tune(f_ops, [])
    with pytest.raises(tuner.TuneError, match="weights"):
        tuner.tune(f_ops, [READS], weights=[1, 2])
    with pytest.raises(tuner.TuneError, match=r"fixed\.concurrent_compactors: not a tuned parameter"):
        tuner.tune(f_ops, [READS], fixed={"concurrent_compactors": 2})
    with pytest.raises(tuner.TuneError, match="population"):
        tuner.tune(f_ops, [READS], population=1)


def test_simplify_keeps_only_the_changes_the_model_rewards(model):
    # A store where only concurrent_writes matters: a search lands anywhere on the plateau of the others, and
    # simplify puts every parameter but that one back to the configuration in place.
    f_ops = tuner.FunctionThroughput(lambda w, c: 1000.0 + 10.0 * c["concurrent_writes"], space=model.space)
    reference = model.space.default_config(HW)
    found = dict(reference, concurrent_writes=64, concurrent_reads=9, memtable_heap_space=300)
    found["compaction"] = "LeveledCompactionStrategy"
    simple = tuner.simplify(f_ops, [WRITES], found, reference)
    assert simple["config"] == dict(reference, concurrent_writes=64)
    assert sorted(simple["reverted"]) == ["compaction", "concurrent_reads", "memtable_heap_space"]
    assert simple["score"] == pytest.approx(1640.0)
    # Nothing to simplify when the configuration is the reference.
    assert tuner.simplify(f_ops, [WRITES], reference, reference)["reverted"] == []
    many = tuner.tune_many(f_ops, [([WRITES], None)], include=[reference], reference=reference, refine_generations=2)
    assert {n for n in many[0]["config"] if many[0]["config"][n] != reference[n]} <= {"concurrent_writes"}


def test_to_unit_inverts_decode_unit(model):
    space = model.space
    for point in np.random.default_rng(3).random((20, space.dimension)):
        config = space.decode_unit(point)
        assert space.decode_unit(tuner.to_unit(space, config)) == config


# ------------------------------------------------------------------------------------------------ planning
def _phased_forecast(pattern):
    ratios = []
    for ratio, steps in pattern:
        ratios.extend([ratio] * steps)
    return {"fields": {"read_ratio": ratios}}


def test_make_plan_follows_long_phases_and_explains(model, catalog):
    f_ops = tuner.Throughput(model, hardware=HW, nodes=3)
    forecast = _phased_forecast([(0.9, 10), (0.1, 1), (0.9, 10), (0.1, 30), (0.9, 9)])
    roll = Roll(nodes=3, batch=2, restart_s=70)
    body = dynamic.make_plan(f_ops, forecast, {}, roll, catalog, default={})
    offsets = [step["offset_s"] for step in body["steps"]]
    assert offsets and offsets[0] <= 10 * 30  # the first switch comes before the long write phase
    assert all(step["configuration"] for step in body["steps"])
    assert all("compaction" not in step["configuration"] for step in body["steps"])  # table-level: fixed
    assert all(step["reason"].startswith("from +") for step in body["steps"])
    base = body["baselines"]
    assert base["theoretical_best"] >= body["predicted"]["ops"] >= base["in_place"]
    assert body["predicted"]["ops"] >= base["static_optimized"] * 0.99
    skipped_steps = [item["offset_s"] for item in body["skipped"]]
    assert 10 * 30 in skipped_steps  # the one-step write burst is not followed
    assert body["timing"]["candidates"] >= 3


def test_plan_document_round_trip_and_schema(model, catalog, tmp_path):
    f_ops = tuner.Throughput(model, hardware=HW, nodes=3)
    body = dynamic.make_plan(
        f_ops, _phased_forecast([(0.9, 5), (0.1, 40)]), {}, Roll(nodes=3, batch=2, restart_s=60), catalog
    )
    doc = planfile.build(body, "cassandra", 1_800_000_000, "5.0.9", {"cl": "ONE", "nodes": 3}, {"file": "m.json"})
    assert doc["schema"] == "tactician.plan/v1" and doc["consistency_level"] == "ONE"
    assert doc["steps"][0]["at"].startswith("2027-01-15T")
    path = tmp_path / "plans" / "next.yml"
    planfile.save_plan(str(path), doc)
    assert planfile.load_plan(str(path)) == doc
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"
    lines = planfile.summary(doc)
    assert "switch" in lines[0] and any("set concurrent" in line for line in lines)
    bad = dict(doc, steps=[dict(doc["steps"][0], configuration={})])
    with pytest.raises(planfile.PlanFileError, match=r"steps\[0\]\.configuration"):
        planfile.validate(bad)
    secret = dict(doc, cluster={"login_password": "x"})
    with pytest.raises(planfile.PlanFileError, match="cluster.login_password"):
        planfile.validate(secret)
    with pytest.raises(planfile.PlanFileError, match="store"):
        planfile.validate(dict(doc, store="mysql"))


def test_forecast_to_workloads():
    workloads, demand = dynamic.workloads_from_forecast(
        {"fields": {"read_ratio": [0.93, 0.12], "throughput": [100.0, 0.0]}}, base={"records": 10}
    )
    assert workloads == [
        {"records": 10, "mix": {"read": 0.95, "update": 0.05}},
        {"records": 10, "mix": {"read": 0.1, "update": 0.9}},
    ]
    assert demand == [100.0, 0.0]
    # A schedule's phase without a rate (0) is closed-loop: unbounded, not idle.
    forecast = {"method": "schedule", "fields": {"read_ratio": [0.93, 0.12], "throughput": [100.0, 0.0]}}
    _workloads, demand = dynamic.workloads_from_forecast(forecast, unthrottled_zero=dynamic.is_schedule(forecast))
    assert demand == [100.0, dynamic.UNBOUNDED]
    assert dynamic.workloads_from_forecast({"read_ratio": [1.0]})[1] is None
    with pytest.raises(PlanningError, match="read_ratio"):
        dynamic.workloads_from_forecast({"fields": {"throughput": [1.0]}})


def test_forecast_shares_of_server_operations_become_the_mix():
    """predict's share fields (forecast_series.SHARE_FIELDS) carry no rmw, and a delete: the mix keeps inserts and
    scans apart from updates instead of falling back on the read ratio, and a delete counts as an update."""
    fields = {
        "read_ratio": [0.5, 0.1],
        "throughput": [100.0, 200.0],
        "read": [0.1, 0.1],
        "update": [0.0, 0.0],
        "insert": [0.0, 0.8],
        "scan": [0.9, 0.0],
        "delete": [0.0, 0.1],
    }
    workloads, _demand = dynamic.workloads_from_forecast({"fields": fields})
    assert [w["mix"] for w in workloads] == [{"read": 0.1, "scan": 0.9}, {"read": 0.1, "update": 0.1, "insert": 0.8}]
    with pytest.raises(PlanningError, match="read, update, insert, scan"):
        dynamic.workloads_from_forecast({"fields": {"throughput": [1.0], "read": [1.0]}})


def _idle_forecast(steps=20, **changed):
    """predict's forecast of samples that counted no operation (its read ratio 0 too), with fields changed."""
    fields = {
        name: [0.0] * steps for name in ("read_ratio", "throughput", "read", "update", "insert", "scan", "delete")
    }
    fields.update(changed)
    return {"method": "last_value", "fields": fields}


def test_a_forecast_that_counts_no_operation_is_told_apart():
    assert dynamic.counts_no_operations(_idle_forecast())
    assert dynamic.counts_no_operations(_idle_forecast()["fields"])
    # an operation counted somewhere, a schedule's forecast, a read ratio without shares or throughput: not idle
    assert not dynamic.counts_no_operations(_idle_forecast(update=[0.0] * 19 + [0.5]))
    assert not dynamic.counts_no_operations(_idle_forecast(throughput=[0.0] * 19 + [3.0]))
    assert not dynamic.counts_no_operations(dict(_idle_forecast(), method="schedule"))
    assert not dynamic.counts_no_operations({"fields": {"read_ratio": [0.0] * 3, "throughput": [0.0] * 3}})
    assert not dynamic.counts_no_operations({"fields": {"read_ratio": [0.0] * 3, "read": [0.0] * 3}})
    assert not dynamic.counts_no_operations(None) and not dynamic.counts_no_operations({"fields": []})


def test_a_forecast_that_counts_no_operation_keeps_the_configuration(model, catalog):
    """Planned as it stood, such a forecast read as a write-only workload (read ratio 0) nobody observed."""
    f_ops = tuner.Throughput(model, hardware=HW, nodes=3)
    current = {"concurrent_reads": 16}
    body = dynamic.make_plan(f_ops, _idle_forecast(), current, Roll(nodes=3, batch=2, restart_s=60), catalog)
    assert body["steps"] == [] and body["skipped"] == []
    assert body["reasons"] == [dynamic.NO_OPERATIONS] and "no workload to plan for" in body["reasons"][0]
    assert body["predicted"]["gain_ops"] == 0.0 and body["predicted"]["gain_share"] is None
    assert body["static_optimized"]["concurrent_reads"] == 16
    assert body["lookahead"] == {"steps": 20, "step_s": 30.0, "seconds": 600.0}
    doc = planfile.build(body, "mongodb", 1_800_000_000, "7.0", {"cl": "ONE", "nodes": 1}, {"file": "m.json"})
    assert (
        planfile.summary(doc)[0].startswith("dynamic plan for mongodb") and "0 switch(es)" in planfile.summary(doc)[0]
    )
    # one step that counted operations is planned as before
    busy = dynamic.make_plan(
        f_ops,
        _idle_forecast(read_ratio=[0.9] * 20, read=[0.9] * 20, update=[0.1] * 20, throughput=[500.0] * 20),
        current,
        Roll(nodes=3, batch=2, restart_s=60),
        catalog,
    )
    assert dynamic.NO_OPERATIONS not in busy["reasons"] and busy["baselines"]


def test_a_tail_after_the_lookahead_lets_a_late_switch_pay_off():
    # The write phase starts near the end of the lookahead: without a tail the roll's payback falls outside it.
    F = np.array([[100.0, 60.0]] * 10 + [[60.0, 100.0]] * 2)
    line = Timeline(F, Roll(nodes=3, batch=1, restart_s=30), step_s=30)
    assert planner.best_plan(line, 0)["switches"] == []
    late = planner.best_plan(line, 0, tail_s=1800)
    assert [s for s, _a, _b in late["switches"]] and late["ops"] == pytest.approx(
        line.value([(s, b) for s, _a, b in late["switches"]], 0)
    )
    with pytest.raises(PlanError, match="tail_s"):
        planner.best_plan(line, 0, tail_s=-1)


# ------------------------------------------------------------------------------------------------ plan modes
VMS = [
    {"name": "small", "vcpu": 2, "ram_gb": 8, "disk_ssd": True, "price_per_h": 0.10},
    {"name": "large", "vcpu": 4, "ram_gb": 16, "disk_ssd": True, "price_per_h": 0.25},
    {"name": "tiny", "vcpu": 1, "ram_gb": 2, "disk_ssd": True, "price_per_h": 0.02},
]
RING = {"n%d" % i: [i * 100] for i in range(6)}


def _hetero(model, catalog, **kwargs):
    options = dict(
        vms=VMS,
        cluster={"tokens": RING, "rf": 3, "cl": "ONE", "vm_type": "large"},
        current=model.space.complete({}, HW),
        default=model.space.default_config(HW),
        batch_sets=2,
        horizon_s=3600.0,
    )
    options.update(kwargs)
    return heterogeneous.hetero_plan(model, catalog, HW, READS, **options)


def test_hetero_plan_changes_each_set_and_rolls_count_sets_minus_cl(model, catalog):
    body = _hetero(model, catalog)
    assert [sorted(s["nodes"]) for s in body["sets"]] == [["n0", "n3"], ["n1", "n4"], ["n2", "n5"]]
    steps = body["steps"]
    assert steps, body["reasons"]
    # One step per changed set; at most count(sets) - CL = 2 sets in one batch.
    assert [s["batch"] for s in steps] == sorted(s["batch"] for s in steps)
    assert max(sum(1 for s in steps if s["batch"] == b) for b in {s["batch"] for s in steps}) <= 2
    assert all(s["vm_type"]["from"] == "large" for s in steps if "vm_type" in s)
    assert body["predicted"]["perf_per_dollar"] > body["predicted"]["in_place_perf_per_dollar"]
    doc = planfile.build(body, "cassandra", 1_800_000_000, "5.0.9", {"cl": "ONE"}, {}, {}, kind="heterogeneous")
    lines = planfile.summary(doc)
    assert lines[0].startswith("heterogeneous plan") and "set 0" in "\n".join(lines)


def test_hetero_plan_keeps_the_assignment_when_the_gain_is_below_min_gain(model, catalog):
    body = _hetero(model, catalog, min_gain=10.0)
    assert body["steps"] == [] and all("min_gain" in reason for reason in body["reasons"])


def test_hetero_plan_honours_budget_and_min_ops(model, catalog):
    body = _hetero(model, catalog, budget_per_h=0.7)
    assert body["predicted"]["cost_per_h"] <= 0.7
    with pytest.raises(PlanningError, match="budget_per_h / min_ops"):
        _hetero(model, catalog, budget_per_h=0.05, min_ops=1e9)


@pytest.mark.parametrize(
    "cluster, field",
    [
        ({"tokens": RING, "rf": 3, "vm_type": "huge"}, "cluster.vm_type: 'huge' is not in the VM catalog"),
        ({"tokens": RING, "rf": 3}, "cluster.vm_type: name the VM type"),
        ({"tokens": RING, "rf": 9, "vm_type": "large"}, "cluster.rf"),
        ({"vm_type": "large"}, "cluster: mode heterogeneous needs the complete-sets"),
        ({"sets": [["a"], ["a"]], "vm_type": "large"}, "cluster.sets: a node is in two complete-sets"),
        (
            {"sets": [["a", "b"]], "vm_types": {"a": "large", "b": "small"}},
            "cluster.vm_types: the nodes of complete-set 0 run large, small",
        ),
    ],
)
def test_hetero_plan_refuses_bad_clusters_by_name(model, catalog, cluster, field):
    with pytest.raises(PlanningError, match=field.replace("(", r"\(")):
        _hetero(model, catalog, cluster=cluster)


def test_hetero_plan_refuses_a_bad_vm_scaling(model, catalog):
    with pytest.raises(PlanningError, match="vm_scaling: 'cores' is not allowed; choose one of vcpu, model"):
        _hetero(model, catalog, vm_scaling="cores")


def _tactic(options, start=None, check_mode=False):
    """The plan document of mode tactic through the modes interface (its options as a mapping)."""
    return modes.make_plan_document(modes.build_context("tactic", start=start, check_mode=check_mode), options)


HOT = {"cpu": 96.0, "read_share": 0.95, "write_share": 0.05, "hit_ratio": 0.95, "p999_ms": 20.0, "sla_p999_ms": 10.0}


def test_tactic_plan_decides_only_when_triggered_and_learns_once(tmp_path):
    state = tmp_path / "advisor.jsonl"
    doc = _tactic({"sample": HOT, "state_file": str(state)}, start=0)
    assert doc["kind"] == "tactic" and doc["steps"][0]["tactic"] == "add_replica"
    assert doc["steps"][0]["triggers"] and doc["timing"]["learned_now"] == 400
    planfile.validate(doc)
    calm = dict(HOT, cpu=30.0, p999_ms=2.0)
    doc = _tactic({"sample": calm, "state_file": str(state)}, start=0)
    assert doc["steps"] == [] and "no tactic is due" in doc["reasons"][0] and doc["timing"]["learned_now"] == 0
    outcome = {"sample": HOT, "tactic": "add_replica", "improved": True, "at": 100.0}
    lines = state.read_text().count("\n")
    for _time in range(2):
        _tactic({"sample": HOT, "state_file": str(state), "outcome": outcome})
    assert state.read_text().count("\n") == lines + 2  # one applied record and one example, not twice


def test_tactic_plan_in_check_mode_writes_nothing_and_refuses_unknown_features(tmp_path):
    state = tmp_path / "advisor.jsonl"
    _tactic({"sample": HOT, "state_file": str(state)}, check_mode=True)
    assert not state.exists()
    with pytest.raises(advisor.AdvisorError, match="features.cpu_load: unknown feature; allowed: cpu, memory"):
        _tactic({"sample": {"cpu_load": 1.0}})
    with pytest.raises(PlanningError, match="mode: 'magic' is not allowed; choose one of dynamic"):
        modes.build_context("magic")


def test_tactic_plan_bootstraps_from_labelled_runs_and_names_bad_lines(tmp_path):
    runs = tmp_path / "runs.jsonl"
    lines = ['{"schema": "tactician.advisor/v1"}']
    for index in range(60):  # measured here: on this node, a saturated read-heavy CPU called for add_node
        sample = dict(HOT, cpu=91.0 + index % 8)
        lines.append(json.dumps({"features": sample, "tactic": "add_node", "source": "benchmark", "gain": 1.3}))
    runs.write_text("\n".join(lines) + "\n")
    only = {"sample": HOT, "bootstrap": str(runs), "knowledge_base": False}
    doc = _tactic(only, start=0, check_mode=True)
    assert doc["steps"][0]["tactic"] == "add_node" and doc["timing"]["bootstrap"] == "benchmark runs"
    both = _tactic(dict(only, knowledge_base=True), start=0)
    assert both["timing"]["bootstrap"] == "knowledge_base + benchmark runs" and both["timing"]["examples"] == 460
    with pytest.raises(PlanningError, match="needs the knowledge base or labelled runs"):
        _tactic({"sample": HOT, "knowledge_base": False})
    runs.write_text('{"features": {"cpu": 1}, "tactic": "reboot"}\n')
    with pytest.raises(advisor.AdvisorError, match="runs.jsonl: run 1: tactic: 'reboot' is not allowed"):
        _tactic(only)
    runs.write_text("not json\n")
    with pytest.raises(advisor.AdvisorError, match="runs.jsonl line 1 is not JSON"):
        _tactic(only)
    with pytest.raises(advisor.AdvisorError, match="advisor_bootstrap: .* is not a file"):
        _tactic(dict(only, bootstrap=str(tmp_path / "none.jsonl")))
    with pytest.raises(advisor.AdvisorError, match="advisor_bootstrap: run 2 has no features and tactic"):
        bad = [{"schema": advisor.STATE_SCHEMA}, {"tactic": "none"}]
        _tactic(dict(only, bootstrap=bad))


def test_the_shipped_lab_runs_load_by_name_and_bootstrap_the_advisor():
    from ansible_collections.tactician.nosql.plugins.action.plan import advisor_runs_path

    path = advisor_runs_path("cassandra-bench")
    assert path.endswith(os.path.join("catalog", "advisor", "cassandra-bench.jsonl")) and os.path.exists(path)
    runs = advisor.check_runs(advisor.read_runs(path))
    assert len(runs) >= 7 and {"add_index", "none"} <= {tactic for _x, tactic in runs}
    doc = _tactic({"sample": HOT, "bootstrap": path}, check_mode=True)
    assert doc["timing"]["bootstrap"] == "knowledge_base + benchmark runs"
    assert advisor_runs_path("/no/such/file.jsonl") == "/no/such/file.jsonl"


def test_redis_layout_gives_one_complete_set_per_member_rank():
    layout = {"m1:6381": ["r1:6384"], "m2:6382": ["r2:6385"], "m3:6383": ["r3:6386"]}
    sets, hosts = heterogeneous.cluster_sets({"shards": layout}, store="redis")
    assert sets == [["m1:6381", "m2:6382", "m3:6383"], ["r1:6384", "r2:6385", "r3:6386"]] and len(hosts) == 6


def test_the_guard_decides_the_first_switch_and_the_plan_file_holds_its_numbers(model, catalog, tmp_path):
    f_ops = tuner.Throughput(model, hardware=HW, nodes=3)
    roll = Roll(nodes=3, batch=2, restart_s=60)
    forecast = _phased_forecast([(0.1, 45)])
    forecast["method"] = "markov"
    # The forecast said a long write phase three times before and each time reads went on: it is worth nothing.
    steps = 45
    forecast["errors"] = {
        "origins": [0, 60, 120, 180, 240, 300],
        "states": [{"read_ratio": 0.9}] * 6,
        "now": {"read_ratio": 0.9},
        "forecast": [{"read_ratio": [0.8] * steps}] * 6,
        "persistence": [{"read_ratio": [0.0] * steps}] * 6,
    }
    policy = safety.SafetyPolicy(min_paths=4)
    body = dynamic.make_plan(f_ops, forecast, {}, roll, catalog, default={}, safety=policy)
    assert body["safety"]["basis"] == "persistence" and not body["safety"]["switch"]
    assert not body["steps"] and body["reasons"][0].startswith("safety: ")
    # The same forecast with a record of being right: the plan's first switch starts, with its lower bound.
    forecast["errors"]["forecast"] = [{"read_ratio": [0.0] * steps}] * 6
    forecast["errors"]["persistence"] = [{"read_ratio": [-0.8] * steps}] * 6
    forecast["errors"]["states"] = [{"read_ratio": 0.9}] * 6
    trusted = dynamic.make_plan(f_ops, forecast, {}, roll, catalog, default={}, safety=policy)
    assert trusted["safety"]["basis"] == "forecast"
    if trusted["safety"]["switch"]:
        assert trusted["steps"][0]["offset_s"] == 0 and "gain_low_share" in trusted["steps"][0]["predicted"]
    doc = planfile.build(trusted, "cassandra", 1_800_000_000, "5.0.9", {"cl": "ONE", "nodes": 3}, {"file": "m.json"})
    planfile.save_plan(str(tmp_path / "p.yml"), doc)
    assert planfile.load_plan(str(tmp_path / "p.yml")) == doc


def test_the_configuration_the_last_switch_left_is_a_candidate_the_guard_knows_as_the_way_back(
    model, catalog, monkeypatch
):
    f_ops = tuner.Throughput(model, hardware=HW, nodes=3)
    roll = Roll(nodes=3, batch=2, restart_s=60)
    forecast = _phased_forecast([(0.5, 45)])
    forecast["errors"] = {"history": {"read_ratio": [0.9] * 100 + [0.5] * 60}, "now": {"read_ratio": 0.5}}
    seen = {}
    decide = safety.decide

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return decide(*args, **kwargs)

    monkeypatch.setattr(safety, "decide", spy)
    left = {"concurrent_reads": 8, "concurrent_writes": 8}
    body = dynamic.make_plan(
        f_ops, forecast, {}, roll, catalog, default={}, safety=safety.SafetyPolicy(), previous=left
    )
    labels = [c["label"] for c in body["candidates"]]
    index = labels.index("left by the last switch")
    assert seen["previous"] == index and body["candidates"][index]["config"]["concurrent_reads"] == 8
    assert seen["recent"] == {"read_ratio": [0.5] * 45}  # the history's last lookahead
    # Without a record of the last switch there is no way back to know, and the candidates stay as they were.
    seen.clear()
    plain = dynamic.make_plan(f_ops, forecast, {}, roll, catalog, default={}, safety=safety.SafetyPolicy())
    assert seen["previous"] is None and seen["recent"] is None
    assert "left by the last switch" not in [c["label"] for c in plain["candidates"]]
    with pytest.raises(dynamic.PlanningError, match=r"^previous: "):
        dynamic.make_plan(f_ops, forecast, {}, roll, catalog, default={}, previous={"no_such_knob": 1})
