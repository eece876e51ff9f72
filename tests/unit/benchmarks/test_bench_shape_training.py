# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""benchmarks/shape_training.py without a server: the design over the live knobs, the dataset rows a run's
windows become (and that the surrogate's accuracy benchmark reads), and the command line."""

from __future__ import annotations

import os
import sys

import pytest
from testlib import ROOT

BENCHMARKS = os.path.join(ROOT, "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)

import shape_training as bench


def test_the_design_starts_from_the_defaults_and_stays_in_its_ranges():
    configs = bench.live_design(8, 0, 51)
    assert len(configs) == 8
    assert configs[0] == {"concurrent_reads": 32, "key_cache_size": 51, "compaction_throughput": 64}
    for config in configs:
        for name, (low, high) in bench.RANGES.items():
            assert low <= config[name] <= high
    assert bench.live_design(8, 0, 51) == configs  # the same seed, the same design


def test_windows_become_dataset_rows_with_the_chunk_length_and_the_cpu():
    record = {
        "ops_s": 4200.0,
        "seconds": 60.0,
        "server_cpu": 0.97,
        "client_side_cpu": 0.25,
        "cpu_speed": 1.1,
        "ops_per_speed": 3818.2,
        "read_mb_s": 40.0,
        "cache_mb": 640,
    }
    config = {"concurrent_reads": 8, "key_cache_size": 0, "compaction_throughput": 64}
    args = bench.parse_args(["--workloads", "b"])
    rows = bench.dataset_rows("b", 4, [(config, record), (config, dict(record, ops_s=None))], args, "T")
    assert len(rows) == 1  # a window the client did not cover gives no row
    row = rows[0]
    assert row["config"][bench.CHUNK] == 4 and row["config"]["concurrent_reads"] == 8
    assert row["workload"]["name"] == "b" and row["workload"]["mix"]["read"] == pytest.approx(0.95)
    assert row["run"]["server_cpu_s"] == pytest.approx(58.2) and row["run"]["client_cpu_s"] == pytest.approx(15.0)
    assert row["key"] == "shape-T/b/4k/w00"


def test_the_command_line_names_what_is_allowed():
    assert bench.parse_args([]).workloads == ["b", "a"]
    for bad in (["--workloads", "z"], ["--chunks", "8"], ["--chunks", "x"], ["--configs", "1"]):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)


def test_the_defaults_come_back_every_few_windows():
    configs = ["d", 1, 2, 3, 4, 5]
    assert bench.interleaved(configs, 3) == ["d", 1, 2, "d", 3, 4, "d", 5, "d"]
    assert bench.interleaved(configs, 0) == ["d", 1, 2, 3, 4, 5, "d"]
    assert bench.interleaved(configs, 2) == ["d", 1, "d", 2, "d", 3, "d", 4, "d", 5, "d"]


def _record(start, ops):
    return {"start": start, "ops_s": ops}


def test_a_drift_the_defaults_show_is_taken_out_of_the_rows():
    d, x = {"concurrent_reads": 32}, {"concurrent_reads": 128}
    # The defaults fall from 4000 to 3000 over the run; the other configuration is 10 % better all along.
    measured = [(d, _record(0, 4000.0)), (x, _record(50, 3850.0)), (d, _record(100, 3000.0))]
    corrected = bench.drift_corrected(measured, d)
    level = 3500.0
    assert corrected[1][2] == pytest.approx(level / 3500.0)
    assert corrected[1][1]["ops_s"] * corrected[1][2] == pytest.approx(3850.0)
    assert [c[2] for c in corrected][0] == pytest.approx(level / 4000.0)
    # Past the last defaults window: the nearest one; with a single one, nothing is corrected.
    tail = bench.drift_corrected(measured + [(x, _record(150, 3300.0))], d)
    assert tail[-1][2] == pytest.approx(level / 3000.0)
    assert {f for _c, _r, f in bench.drift_corrected(measured[:2], d)} == {1.0}


def test_rows_keep_the_measured_throughput_beside_the_corrected_one():
    d, x = {"concurrent_reads": 32}, {"concurrent_reads": 128}
    base = {"seconds": 60.0, "server_cpu": 0.9, "client_side_cpu": 0.2, "cpu_speed": 1.0, "ops_per_speed": 1.0}
    base.update(read_mb_s=40.0, cache_mb=600)
    measured = [
        (d, dict(base, start=0, ops_s=4000.0)),
        (x, dict(base, start=50, ops_s=3850.0)),
        (d, dict(base, start=100, ops_s=3000.0)),
    ]
    args = bench.parse_args(["--workloads", "b"])
    rows = bench.dataset_rows("b", 16, measured, args, "T", reference=d)
    assert rows[1]["ops_per_s"] == pytest.approx(3850.0) and rows[1]["run"]["measured_ops_s"] == 3850.0
    assert rows[0]["ops_per_s"] == pytest.approx(3500.0) and rows[0]["run"]["drift_factor"] == pytest.approx(0.875)
    with pytest.raises(SystemExit):
        bench.parse_args(["--defaults-every", "1"])


class _Client:
    started = None

    def __init__(self, params):
        self.params, self.error, self.alive = params, None, True
        _Client.started = self

    def start(self):
        pass

    def is_alive(self):
        return self.alive

    def join(self):
        pass

    def status(self):
        return "status"


class _Sampler:
    def __init__(self):
        self.count = 0

    def sample(self):
        self.count += 1
        return self.count


def test_a_table_run_sets_each_configuration_then_the_reset_and_keeps_one_record_per_window(monkeypatch):
    applied = []
    monkeypatch.setattr(bench.ke, "Client", _Client)
    monkeypatch.setattr(
        bench.ke, "client_params", lambda spec, table, total, threads, records, node=None: (table, total)
    )
    monkeypatch.setattr(bench.ke, "window_record", lambda label, start, end, status, speeds: (label, start, end))
    monkeypatch.setattr(bench, "apply_config", lambda config, node=None: applied.append(config))
    monkeypatch.setattr(bench.time, "sleep", lambda seconds: None)
    probe = type("Probe", (), {"samples": lambda self: []})()
    args = bench.parse_args(["--window-s", "30", "--settle-s", "5"])
    configs = [{"concurrent_reads": 32}, {"concurrent_reads": 8}]
    out = bench.table_windows("b", 4, configs, args, _Sampler(), probe, 60, {"concurrent_reads": 32}, "race")
    assert out == [(configs[0], ("race", 1, 2)), (configs[1], ("race", 3, 4))]
    assert applied == [*configs, {"concurrent_reads": 32}]
    assert _Client.started.params == (bench.ke.CHUNK_TABLES[4], 60 + 2 * (5 + 30 + 5) + 60)
    # With the row cache among the knobs each window gets the time its switch takes.
    applied.clear()
    cached = [{"concurrent_reads": 32, "row_cache_size": 0}, {"concurrent_reads": 32, "row_cache_size": 128}]
    bench.table_windows("b", 4, cached, args, _Sampler(), probe, 60, cached[0], "race")
    assert _Client.started.params[1] == 60 + 2 * (5 + 30 + 5 + bench.ROW_CACHE_SWITCH_S) + 60

    # A client that stops early ends the run: the windows so far, the reset set all the same.
    applied.clear()
    monkeypatch.setattr(_Client, "is_alive", lambda self: False)
    out = bench.table_windows("b", 16, configs, args, _Sampler(), probe, 0, {"concurrent_reads": 32})
    assert [c for c, _r in out] == [configs[0]] and applied == [configs[0], {"concurrent_reads": 32}]


def test_the_row_cache_joins_the_design_off_in_the_defaults_and_is_set_on_both_twin_tables(monkeypatch):
    configs = bench.live_design(8, 0, 51, row_cache=True)
    assert configs[0] == dict(bench.design_defaults(51), row_cache_size=0)
    assert configs[0]["concurrent_reads"] == 32 and configs[0][bench.ROW_CACHE] == 0
    assert all(0 <= c["row_cache_size"] <= 256 for c in configs)
    assert any(c["row_cache_size"] > 0 for c in configs)
    assert bench.parse_args(["--row-cache"]).row_cache and not bench.parse_args([]).row_cache
    calls = []
    monkeypatch.setattr(bench.ke, "set_row_cache", lambda value, node, tables: calls.append((value, node, tables)))
    node = bench.ke._shape.BENCH_NODE
    bench.apply_config({"row_cache_size": 128}, node)
    assert calls == [(128, node, sorted(set(node.tables.values())))]
    with pytest.raises(SystemExit, match="row_cache_size"):
        bench.apply_config({"row_cache": 1}, node)
