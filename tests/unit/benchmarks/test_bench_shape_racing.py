# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""benchmarks/shape_racing.py without a server: the race measures only the twin tables' chunk lengths, seeds the
defaults in, keeps to its budget of windows, and its best becomes a phase of shape_tuning.py --raced."""

from __future__ import annotations

import json
import os
import sys

import pytest
from testlib import ROOT

BENCHMARKS = os.path.join(ROOT, "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)

import shape_racing as bench
import shape_training as st
import shape_tuning


def _raced(tmp_path, budget=16):
    history = str(tmp_path / "race.jsonl")
    race = bench.make_race("b", budget, 0, 2, 51)
    result = race.run(bench.made_up, history)
    return history, race, result


def test_the_race_measures_only_the_twin_tables_and_keeps_to_its_budget(tmp_path):
    history, race, result = _raced(tmp_path)
    assert race.ask(history)[1]["finished"] and result["evaluations"] <= 16
    trials = [json.loads(line) for line in open(history, encoding="utf-8").read().splitlines()[1:]]
    assert trials and {t["config"][st.CHUNK] for t in trials} <= {4, 16}
    # The defaults (16 KiB, the live knobs' defaults) were seeded in.
    assert race.initial[0][st.CHUNK] == 16 and race.initial[0]["concurrent_reads"] == 32
    # The made-up response rewards 4 KiB chunks: the race's best reads the 4 KiB table.
    assert result["best"]["config"][st.CHUNK] == 4


def test_race_best_reads_a_finished_history_and_refuses_an_unfinished_one(tmp_path):
    history, _race, result = _raced(tmp_path)
    best, found = bench.race_best(history)
    assert best == {k: int(v) for k, v in result["best"]["config"].items()} and found["finished"]
    lines = open(history, encoding="utf-8").read().splitlines()
    partial = tmp_path / "partial.jsonl"
    partial.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="has not finished"):
        bench.race_best(str(partial))
    other = tmp_path / "other.jsonl"
    other.write_text('{"config_key": "x", "instance": 0, "value": 1}\n', encoding="utf-8")
    with pytest.raises(SystemExit, match="not a race history"):
        bench.race_best(str(other))


def test_the_raced_configuration_is_a_phase_on_the_tuned_node(tmp_path):
    history, _race, _result = _raced(tmp_path)
    best, _found = bench.race_best(history)
    args = shape_tuning.parse_args(["--design", "concurrent", "--rounds", "4", "--raced", history])
    defaults = {"concurrent_reads": 32, "compaction_throughput": 64, "key_cache_size": 51}
    configs = shape_tuning.arm_configs(args, defaults, dict(defaults, **{st.CHUNK: 4}), best)
    assert list(configs) == ["defaults", "tuned", "raced", "defaults again"]
    assert configs["raced"] == dict(best, node="tuned")
    assert [phase for phase, _a, _b in shape_tuning.pair_phases(configs)] == ["node A/A", "tuned", "raced"]


def test_a_folder_hands_over_the_newest_finished_race_of_the_workload(tmp_path):
    folder = tmp_path / "shape-racing"
    folder.mkdir()
    assert bench.newest_race(str(folder), "b") is None
    history, _race, _result = _raced(folder)
    finished = folder / "race-b-20261207T000000Z.jsonl"
    os.rename(history, finished)
    # A newer race stopped before its end, and another workload's, are passed over.
    lines = finished.read_text(encoding="utf-8").splitlines()
    stopped = folder / "race-b-20261207T010000Z.jsonl"
    stopped.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    other = folder / "race-a-20261207T020000Z.jsonl"
    other.write_text(finished.read_text(encoding="utf-8"), encoding="utf-8")
    os.utime(stopped, (2e9, 2e9))
    os.utime(other, (2.1e9, 2.1e9))
    assert bench.newest_race(str(folder), "b") == str(finished)
    assert bench.newest_race(str(folder), "e") is None


def test_the_bad_disk_caps_of_a_race_are_refused_by_name(capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(["--disk-read-iops", "-3"])
    assert "--disk-read-iops" in capsys.readouterr().err
    args = bench.parse_args(["--disk-read-iops", "1200", "--disk-read-limit", "80M"])
    assert (args.disk_read_iops, args.disk_read_limit) == (1200, "80M")


def test_a_race_on_top_of_latest_keeps_its_one_table_and_becomes_a_phase_after_latest(tmp_path):
    history = str(tmp_path / "race-b.jsonl")
    race = bench.make_race("b", 10, 0, 2, 0, row_cache=True, on_latest=True)
    # Seeded with cassandra_latest.yaml's own live values; no key cache (BTI files use none), its one 16 KiB table.
    assert race.initial[0] == {"concurrent_reads": 32, "compaction_throughput": 64, st.ROW_CACHE: 0, st.CHUNK: 16}
    race.run(bench.made_up, history)
    best, found = bench.race_best(history)
    assert found["node"] == bench.ke._shape.LATEST_NODE.name and best[st.CHUNK] == 16 and "key_cache_size" not in best
    assert bench.race_node(bench.racing.TrialHistory(history).header) is bench.ke._shape.LATEST_NODE
    configs = shape_tuning.arm_configs(
        shape_tuning.parse_args(["--design", "concurrent", "--rounds", "4", "--latest", "--raced", history]),
        dict(st.DEFAULTS, key_cache_size=51),
        {"concurrent_reads": 124, st.CHUNK: 4},
        dict(best, node=shape_tuning.LATEST),
    )
    # Its phase comes after the latest node's own, which its live knobs and row cache must not reach.
    assert list(configs) == ["defaults", "tuned", shape_tuning.LATEST, shape_tuning.RACED, "defaults again"]
    assert shape_tuning.node_of(configs[shape_tuning.RACED]) is bench.ke._shape.LATEST_NODE
    assert configs["defaults"][st.ROW_CACHE] == 0 or not best.get(st.ROW_CACHE)
    # A race on the bench node stays where it was: a phase on the tuned node.
    plain, _race, _result = _raced(tmp_path)
    assert bench.race_best(plain)[1]["node"] == bench.ke._shape.BENCH_NODE.name


def test_raced_is_refused_outside_the_paired_designs(capsys):
    with pytest.raises(SystemExit):
        shape_tuning.parse_args(["--design", "rounds", "--raced", "race.jsonl"])
    assert "--raced" in capsys.readouterr().err


def test_bad_arguments_name_the_option(capsys):
    for argv, option in ((["--workload", "z"], "--workload"), (["--budget", "1"], "--budget")):
        with pytest.raises(SystemExit):
            bench.parse_args(argv)
        assert option in capsys.readouterr().err


def test_the_evaluations_are_measured_table_by_table_the_warm_one_first(monkeypatch):
    calls = []

    def table_windows(spec, chunk, configs, args, sampler, probe, warmup_s, reset, label="-", log=None, node=None):
        calls.append((chunk, warmup_s, reset, label))
        return [(c, {"ops_s": 1000.0 + i}) for i, c in enumerate(configs)]

    monkeypatch.setattr(st, "table_windows", table_windows)
    args = bench.parse_args(["--warmup-s", "300", "--rewarm-s", "120"])
    a = {"concurrent_reads": 40, "key_cache_size": 10, "compaction_throughput": 64, st.CHUNK: 4}
    b = dict(a, **{st.CHUNK: 16})
    pending = [{"config": a, "instances": [{"index": 0}, {"index": 1}]}, {"config": b, "instances": [{"index": 0}]}]
    warm = {bench.ke._shape.BENCH_NODE.name: 16}
    reset = dict(st.DEFAULTS, key_cache_size=51)
    done = bench.measure("b", pending, args, {}, None, lambda text: None, warm, bench.random.Random(0), reset)
    # The warm 16 KiB table first and without a warm-up, then the 4 KiB one after a rewarm.
    assert [c[:2] for c in calls] == [(16, 0.0), (4, 120.0)]
    # Every knob the race sets is set back, the key cache to what the node had (a race once left 206 MiB behind).
    assert all(back == {**st.DEFAULTS, "key_cache_size": 51} and label == "race" for _c, _w, back, label in calls)
    assert sorted((c[st.CHUNK], index) for c, index, _r in done) == [(4, 0), (4, 1), (16, 0)]
    assert warm == {bench.ke._shape.BENCH_NODE.name: 4}


def test_with_the_row_cache_the_race_searches_it_and_every_other_arm_turns_it_off(tmp_path):
    history = str(tmp_path / "race.jsonl")
    race = bench.make_race("b", 24, 0, 2, 51, row_cache=True)
    assert race.initial[0][st.ROW_CACHE] == 0
    race.run(bench.made_up, history)
    best, _found = bench.race_best(history)  # the header says the row cache was in the space
    assert st.ROW_CACHE in best
    assert bench.live_part(dict(best)) == {k: v for k, v in best.items() if k != st.CHUNK}
    args = shape_tuning.parse_args(["--design", "concurrent", "--rounds", "4", "--raced", history])
    defaults = {"concurrent_reads": 32, "compaction_throughput": 64, "key_cache_size": 51}
    raced = dict(best, **{st.ROW_CACHE: 128})
    configs = shape_tuning.arm_configs(args, defaults, dict(defaults, **{st.CHUNK: 4}), raced)
    # The tuned node serves the node A/A with the defaults: they turn the raced arm's row cache off.
    assert configs["defaults"][st.ROW_CACHE] == 0 and configs["raced"][st.ROW_CACHE] == 128
    plain = shape_tuning.arm_configs(args, defaults, dict(defaults, **{st.CHUNK: 4}), dict(raced, row_cache_size=0))
    assert st.ROW_CACHE not in plain["defaults"]


def test_with_the_formats_each_window_runs_on_the_twin_node_of_its_format(tmp_path, monkeypatch, capsys):
    shape = bench.ke._shape
    history = str(tmp_path / "race.jsonl")
    race = bench.make_race("b", 24, 0, 2, 51, formats=True)
    assert race.initial[0][bench.FORMAT] == "big" and race.initial[0]["key_cache_size"] == 51
    result = race.run(bench.made_up, history)
    formats = {
        json.loads(line)["config"][bench.FORMAT] for line in open(history, encoding="utf-8").read().splitlines()[1:]
    }
    assert formats == {"big", "bti"}
    # The made-up response rewards BTI files: the best reads them, on the bti node; the history says so.
    best, found = bench.race_best(history)
    assert (
        best[bench.FORMAT] == "bti" == result["best"]["config"][bench.FORMAT] and found["node"] == shape.BTI_NODE.name
    )
    assert bench.format_node({bench.FORMAT: "big"}) is shape.BENCH_NODE and bench.format_node({}) is shape.BENCH_NODE
    # Measured node by node, table by table: each node's warm table first, the format never set as a live knob.
    calls = []

    def table_windows(spec, chunk, configs, args, sampler, probe, warmup_s, reset, label="-", log=None, node=None):
        calls.append((node.name, chunk, warmup_s, sampler, reset))
        return [(c, {"ops_s": 1000.0}) for c in configs]

    monkeypatch.setattr(st, "table_windows", table_windows)
    args = bench.parse_args(["--formats", "--warmup-s", "300", "--rewarm-s", "120"])
    a = {"concurrent_reads": 40, "key_cache_size": 10, "compaction_throughput": 64, st.CHUNK: 4, bench.FORMAT: "bti"}
    pending = [
        {"config": a, "instances": [{"index": 0}]},
        {"config": dict(a, **{bench.FORMAT: "big"}), "instances": [{"index": 0}]},
        {"config": dict(a, **{st.CHUNK: 16, bench.FORMAT: "big"}), "instances": [{"index": 0}]},
    ]
    warm = {shape.BENCH_NODE.name: 16}
    samplers = {shape.BENCH_NODE.name: "bench sampler", shape.BTI_NODE.name: "bti sampler"}
    reset = dict(st.DEFAULTS, key_cache_size=51)
    done = bench.measure("b", pending, args, samplers, None, lambda text: None, warm, bench.random.Random(0), reset)
    assert [c[:4] for c in calls] == [
        (shape.BENCH_NODE.name, 16, 0.0, "bench sampler"),
        (shape.BENCH_NODE.name, 4, 120.0, "bench sampler"),
        (shape.BTI_NODE.name, 4, 300.0, "bti sampler"),
    ]
    assert all(bench.FORMAT not in back for *_x, back in calls) and len(done) == 3
    with pytest.raises(SystemExit):
        bench.parse_args(["--formats", "--on-latest"])
    assert "--formats: not with --on-latest" in capsys.readouterr().err


def test_a_raced_best_that_reads_bti_files_is_a_phase_on_the_bti_node(tmp_path):
    shape = bench.ke._shape
    history = str(tmp_path / "race-b.jsonl")
    bench.make_race("b", 16, 0, 2, 51, formats=True).run(bench.made_up, history)
    best, found = bench.race_best(history)
    assert best[bench.FORMAT] == "bti" and found["node"] == shape.BTI_NODE.name
    args = shape_tuning.parse_args(["--design", "concurrent", "--rounds", "4", "--latest", "--raced", history])
    # The run starts the bti node beside the others; a race without the format needs none.
    races = shape_tuning.raced_races(args)
    assert races == {"b": (history, best, found)} and shape_tuning.raced_on_bti(races)
    plain, _race, _result = _raced(tmp_path)
    plain_args = shape_tuning.parse_args(["--design", "concurrent", "--raced", plain])
    assert not shape_tuning.raced_on_bti(shape_tuning.raced_races(plain_args))
    assert shape_tuning.raced_races(shape_tuning.parse_args(["--design", "concurrent"])) == {}
    defaults = dict(st.DEFAULTS, key_cache_size=51)
    configs = shape_tuning.arm_configs(args, defaults, dict(defaults, **{st.CHUNK: 4}), best)
    assert shape_tuning.node_of(configs[shape_tuning.RACED]) is shape.BTI_NODE
    # The format is the node, never a live knob.
    assert bench.FORMAT not in shape_tuning.live_part(configs[shape_tuning.RACED])
    assert shape_tuning.RACED in [p for p, _a, _b in shape_tuning.pair_phases(configs)]


def test_a_race_restarts_its_running_nodes_fresh_and_starts_and_stops_the_bti_node(monkeypatch, tmp_path):
    shape = bench.ke._shape
    calls = []
    monkeypatch.setattr(shape, "start_run", lambda kind: (str(tmp_path), "stamp", lambda text: None, {1}))
    monkeypatch.setattr(shape, "node_running", lambda node: node is shape.BENCH_NODE)
    monkeypatch.setattr(shape, "restart_fresh", lambda node, log=None: calls.append(("fresh", node.name)))
    monkeypatch.setattr(shape, "start_node", lambda node: calls.append(("start", node.name)))
    monkeypatch.setattr(shape, "playbook", lambda name, node, extra_vars=None: calls.append((name, node.name)))
    monkeypatch.setattr(bench, "run_race", lambda *a: calls.append(("race", [n.name for n in a[-1]])) or 0)
    assert bench.main(["--formats"]) == 0
    bench_name, bti = shape.BENCH_NODE.name, shape.BTI_NODE.name
    # The bench node restarted as a new JVM (a row cache's memory of an earlier run would favour the new node).
    assert calls == [
        ("fresh", bench_name),
        ("start", bti),
        ("race", [bench_name, bti]),
        ("lab_down.yml", bti),
    ]
    calls.clear()
    assert bench.main(["--keep-nodes"]) == 0
    assert calls == [("race", [bench_name])]
