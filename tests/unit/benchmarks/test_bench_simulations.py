# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The benchmarks' simulation logic (benchmarks/_analytic.py, _control.py, hetero_perf.py, scale_out.py,
noise_sensitivity.py): the analytic stores' trade-offs, forecasts, the receding-horizon controller, complete-set
rolls and the heterogeneous cluster, on small inputs and without servers."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from testlib import ROOT

BENCHMARKS = os.path.join(ROOT, "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)

import _analytic
import _control
import hetero_perf
import noise_sensitivity
import plan_dynamic
import scale_out

from ansible_collections.tactician.nosql.plugins.module_utils.planning import cost_benefit as planner

VM = {"name": "m5.2xlarge", "family": "general", "vcpu": 8, "ram_gb": 32, "price_per_h": 0.384}
SMALL = {"name": "c5.large", "family": "compute", "vcpu": 2, "ram_gb": 4, "price_per_h": 0.085}


# ------------------------------------------------------------------------------------------------ analytic stores
def test_cassandra_configurations_trade_reads_for_writes():
    names = _analytic.config_names("cassandra")
    read_opt, write_opt = names.index("read-optimized"), names.index("write-optimized")
    assert _analytic.cassandra_node_ops(VM, read_opt, 1.0) > _analytic.cassandra_node_ops(VM, write_opt, 1.0)
    assert _analytic.cassandra_node_ops(VM, write_opt, 0.0) > _analytic.cassandra_node_ops(VM, read_opt, 0.0)
    # Pure writes scale with the sustained vCPUs; a burstable type sustains 30 % of them.
    assert _analytic.cassandra_node_ops(VM, 0, 0.0) == pytest.approx(3000.0 * 8)
    burstable = dict(VM, family="burstable")
    assert _analytic.cassandra_node_ops(burstable, 0, 0.0) == pytest.approx(3000.0 * 8 * 0.3)


def test_cassandra_memory_matters_for_reads_and_large_heaps():
    write_opt = _analytic.config_names("cassandra").index("write-optimized")
    assert _analytic.cassandra_node_ops(SMALL, write_opt, 0.5) == 0.0  # needs 8 GiB of RAM
    small_reads = _analytic.cassandra_node_ops(SMALL, 0, 1.0) / SMALL["vcpu"]
    large_reads = _analytic.cassandra_node_ops(VM, 0, 1.0) / VM["vcpu"]
    assert large_reads > 2 * small_reads  # the data fits the page cache of 32 GiB, not of 4 GiB
    assert _analytic.cassandra_heap_gb(32.0) == 8.0 and _analytic.cassandra_heap_gb(2.0) == 1.0


def test_redis_maxmemory_trades_hits_for_write_headroom():
    names = _analytic.config_names("redis")
    low = names.index("maxmemory 50% allkeys-lru")
    high = names.index("maxmemory 90% allkeys-lru")
    r5 = {"name": "r5.large", "family": "memory", "vcpu": 2, "ram_gb": 16, "price_per_h": 0.126}
    assert _analytic.redis_node_ops(r5, high, 1.0) > _analytic.redis_node_ops(r5, low, 1.0)
    assert _analytic.redis_node_ops(r5, low, 0.0) > _analytic.redis_node_ops(r5, high, 0.0)
    matrix = _analytic.node_ops_matrix("redis", [r5, SMALL], 0.5)
    assert len(matrix) == 2 and len(matrix[0]) == len(names) == 9


# ------------------------------------------------------------------------------------------------ control
def test_oracle_and_noisy_oracle():
    series = [0.0, 0.5, 1.0]
    assert _control.oracle(series)(1, 4) == [0.5, 1.0, 1.0, 1.0]
    assert _control.oracle(series)(5, 2) == [1.0, 1.0]
    noisy = _control.noisy_oracle(series, 0.5, seed=3)
    first = noisy(0, 3)
    assert first == noisy(0, 3) == _control.noisy_oracle(series, 0.5, seed=3)(0, 3)
    assert all(0.0 <= v <= 1.0 for v in first) and first != series
    assert _control.noisy_oracle(series, 0.0, seed=3)(0, 3) == series


def test_in_place_ratio_gain_and_machine():
    assert _control.in_place([(2, 0, 1), (4, 1, 2)], 6, 0) == [0, 0, 1, 1, 2, 2]
    assert _control.in_place([(1, 3)], 3, 0) == [0, 3, 3]
    assert _control.ratio(3.0, 4.0) == 0.75 and _control.ratio(1.0, 0.0) is None
    assert _control.gain(5.0, 4.0) == pytest.approx(0.25) and _control.gain(1.0, 0) is None
    info = _control.machine()
    assert info["cpus"] >= 1 and set(info) >= {"cpu_model", "memory_gb", "kernel", "python"}
    assert len(_control.utc_stamp()) == len("20260101T000000Z")


def _two_phase_line(restart_s):
    # Configuration 0 is best for the first 10 steps, 1 for the next 30 (2x as fast).
    F = np.array([[10.0, 5.0]] * 10 + [[5.0, 10.0]] * 30)
    roll = planner.Roll(nodes=3, batch=1, restart_s=restart_s)
    return F, roll, planner.Timeline(F, roll, 30.0)


def test_receding_switches_when_it_pays_and_not_when_the_roll_is_too_long():
    F, roll, line = _two_phase_line(10.0)
    rows = list(F)

    def rows_for(future):
        return np.asarray(future)

    def predict(k, steps):
        future = rows[k : k + steps]
        return future + [future[-1]] * (steps - len(future))

    def make_line(matrix):
        return planner.Timeline(matrix, roll, 30.0)

    switches = _control.receding(line, rows_for, predict, 40, 0, make_line)
    assert switches == [(10, 1)]
    cache = {}
    assert _control.receding(line, rows_for, predict, 40, 0, make_line, cache=cache) == switches
    from_one = _control.receding(line, rows_for, predict, 40, 1, make_line)
    assert 0 in cache and _control.receding(line, rows_for, predict, 40, 1, make_line, cache=cache) == from_one
    assert line.value(switches, 0) > line.value([], 0)
    _F, long_roll, long_line = _two_phase_line(2000.0)
    none = _control.receding(long_line, rows_for, predict, 40, 0, lambda m: planner.Timeline(m, long_roll, 30.0))
    assert none == []


# ------------------------------------------------------------------------------------------------ models
def test_simulations_fall_back_to_the_shipped_surrogate_then_to_the_synthetic_function(monkeypatch, tmp_path):
    missing = str(tmp_path / "cassandra-surrogate.json")
    monkeypatch.setattr(plan_dynamic, "MODEL", missing)
    f_ops, catalog, feasible, note = plan_dynamic.load_surrogate(missing, 3)
    assert f_ops is not None and catalog is not None and feasible is not None
    assert "no lab surrogate at" in note and "the repository's surrogate catalog/models/cassandra-bench.json" in note
    shipped = os.path.join(plan_dynamic.ROOT, "catalog", "models", "cassandra-bench.json")
    assert "model: the repository's surrogate" in plan_dynamic.load_surrogate(shipped, 3)[3]
    assert f_ops.matrix([plan_dynamic.workload(0.5)], [f_ops.space.default_config(f_ops.hardware)]).shape == (1, 1)
    monkeypatch.setattr(plan_dynamic, "SHIPPED_MODEL", str(tmp_path / "none.json"))
    f_ops, _catalog, _feasible, note = plan_dynamic.load_surrogate(missing, 3)
    assert f_ops is None and "synthetic function alone" in note
    assert plan_dynamic.load_surrogate(missing, 3, "synthetic")[0] is None
    with pytest.raises(SystemExit):
        plan_dynamic.load_surrogate(missing, 3, "surrogate")


# ------------------------------------------------------------------------------------------------ scale-out
@pytest.mark.parametrize("nodes", [4, 8, 32])
def test_allocated_rings_split_into_rf_complete_sets(nodes):
    roll, layouts, rule = scale_out.roll_for("complete-sets", nodes, "ONE", 70.0, 3)
    assert "3 sets" in rule
    layout, duration = layouts(0, 1)
    assert duration == 140.0 and len(layout) == 2  # 2 sets, then 1: constant whatever N
    _roll, layouts, _rule = scale_out.roll_for("complete-sets", nodes, "QUORUM", 70.0, 3)
    assert layouts(0, 1)[1] == 210.0


def test_rolling_grows_with_nodes_and_aggressive_does_not():
    assert scale_out.roll_for("rolling", 4, "ONE", 70.0, 3)[0].duration() == 140.0
    assert scale_out.roll_for("rolling", 32, "ONE", 70.0, 3)[0].duration() == 1120.0
    assert scale_out.roll_for("rolling", 32, "QUORUM", 70.0, 3)[0].duration() == 2240.0
    assert scale_out.roll_for("aggressive", 32, "QUORUM", 70.0, 3)[0].duration() == 70.0
    with pytest.raises(ValueError):
        scale_out.allocated_ring(2)


def test_scale_out_run_reports_ratios_on_a_synthetic_trace():
    ratios = [0.95] * 40 + [0.05] * 40
    roll = planner.Roll(nodes=3, batch=2, restart_s=70.0)
    sim = plan_dynamic.Simulation(plan_dynamic.SyntheticThroughput(3), None, ratios, roll, None, 1)
    row = scale_out.run(sim, ratios, 8, "ONE", "aggressive", 70.0, 60, 3)
    assert row["roll_s"] == 70.0 and row["switches_from_default"] >= 1
    assert 0 < row["ratio_best_from_default"] <= 1.0
    assert row["theoretical_best"] == pytest.approx(sim.line.step_ops().max(axis=1).sum() * 8 / 3)


# ------------------------------------------------------------------------------------------------ heterogeneous
def test_hetero_clusters_and_predictor_noise():
    vms = hetero_perf.load_vms()
    assert len(vms) == 13 and all("family" in vm for vm in vms)
    cassandra = hetero_perf.Cluster("cassandra", vms)
    assert cassandra.sizes == [2, 2, 2] and cassandra.batch_sets == 2
    redis = hetero_perf.Cluster("redis", vms)
    assert redis.sizes == [3, 3] and redis.batch_sets == 1
    clean = hetero_perf.Predictor("cassandra", vms).node_ops(0.52)
    assert clean == hetero_perf.Predictor("cassandra", vms).node_ops(0.5)  # the 0.05 grid
    noisy = hetero_perf.Predictor("cassandra", vms, noise=0.2, seed=1).node_ops(0.5)
    assert noisy == hetero_perf.Predictor("cassandra", vms, noise=0.2, seed=1).node_ops(0.5)
    pairs = [(a, b) for row_a, row_b in zip(clean, noisy, strict=True) for a, b in zip(row_a, row_b, strict=True)]
    assert any(a != b for a, b in pairs) and all(abs(b - a) <= 0.2 * a + 1e-9 for a, b in pairs)


def test_hetero_best_is_at_least_every_homogeneous_and_switching_pays_on_long_phases():
    vms = hetero_perf.load_vms()
    cl = hetero_perf.Cluster("cassandra", vms)
    best = cl.best(0.0)
    homogeneous = cl.homogeneous([0.0])
    assert cl.ops(best, 0.0) / cl.cost(best) >= cl.ops(homogeneous, 0.0) / cl.cost(homogeneous) - 1e-9
    ratios = [1.0] * 60 + [0.0] * 60
    result = hetero_perf.run_case("cassandra", vms, ratios, forecasts=("oracle",))
    assert result["ours (oracle)"]["vs_static"] > 0.05
    assert result["ours (oracle)"]["switches"] >= 1
    assert result["homogeneous-static"]["switches"] == 0
    assert set(result) >= {"best", "homogeneous-dynamic", "sophia", "_meta"}


# ------------------------------------------------------------------------------------------------ noise
def test_duration_trace_and_its_error_curve_peaks_near_zero():
    assert len(noise_sensitivity.duration_trace(180.0)) == 18
    assert noise_sensitivity.duration_trace(0.0) == [0.95] * 18
    assert noise_sensitivity.duration_trace(400.0)[6:] == [0.05] * 12
    rows = noise_sensitivity.part_duration("short", 1)
    at = {row["level"]: row["gain_mean"] for row in rows}
    assert at[0] == max(at.values())
    assert at[-180] < at[0] and at[180] < at[0]


def test_rolling_availability_fails_when_a_plain_roll_fails_or_a_write_is_lost(capsys):
    import rolling_availability

    ok = dict(store="cassandra", case="rolling (R = RF - CL)", rc=0, probe_missing=0)
    peer = dict(store="cassandra", case="kill cassandra2 while cassandra1 restarts", rc=2, probe_missing=0)
    assert rolling_availability.verdict([ok, peer]) == 0
    failed = dict(ok, rc=2, playbook_tail="...\n127.0.0.1 went down while 127.0.0.2:9042 was starting\nend")
    assert rolling_availability.verdict([failed]) == 1
    assert "the roll failed (rc 2)" in capsys.readouterr().err
    assert rolling_availability.verdict([dict(peer, probe_missing=3)]) == 1
    assert "3 acknowledged writes lost" in capsys.readouterr().err
