# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""benchmarks/shape_tuning.py without a server: the rotation of the arms, the ratios to the defaults of the same
round with the A/A floor beside them, the table, and the command line."""

from __future__ import annotations

import os
import sys

import pytest
from testlib import ROOT

BENCHMARKS = os.path.join(ROOT, "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)

import shape_tuning as bench


def _windows(rounds, gain, noise=(1.0, 1.02, 0.99, 1.01, 0.98, 1.0)):
    out = []
    for index, order in enumerate(bench.rotation(rounds)):
        for arm in order:
            ops = 4000.0 * noise[index % len(noise)]
            if arm == "tuned":
                ops *= gain * noise[(index + 2) % len(noise)]
            if arm == "defaults again":
                ops *= noise[(index + 1) % len(noise)]
            out.append(
                {"arm": arm, "round": index, "ops_s": ops, "server_cpu": 0.97, "client_side_cpu": 0.25, "read_mb_s": 50}
            )
    return out


def test_every_arm_takes_every_place_in_the_order():
    orders = bench.rotation(6)
    for place in range(3):
        assert sorted(order[place] for order in orders) == sorted(bench.ARMS * 2)


def test_four_arms_rotate_in_a_williams_square():
    orders = bench.rotation(8, bench.ARMS_LATEST)
    for place in range(4):
        assert sorted(order[place] for order in orders) == sorted(bench.ARMS_LATEST * 2)
    # Every arm follows every other arm equally often: no carry-over of one arm falls on another more than the rest.
    follows = {}
    for order in orders[:4]:
        for before, after in zip(order, order[1:], strict=False):
            follows[(before, after)] = follows.get((before, after), 0) + 1
    assert len(follows) == 12 and set(follows.values()) == {1}


def test_the_latest_arm_is_summarized_and_printed_beside_the_others():
    windows = []
    for index, order in enumerate(bench.rotation(4, bench.ARMS_LATEST)):
        for arm in order:
            ops = {"defaults": 4000.0, "tuned": 5000.0, bench.LATEST: 4400.0}.get(arm, 4000.0 + 10 * index)
            windows.append({"arm": arm, "round": index, "ops_s": ops, "server_cpu": 0.97, "idle_node_cpu": 0.01})
    summary = bench.summarize(windows, bench.ARMS_LATEST)
    assert summary[bench.LATEST]["ratio"] == pytest.approx(1.1)
    configs = {arm: {"concurrent_reads": 32} for arm in bench.ARMS_LATEST}
    configs[bench.LATEST] = {"node": bench.LATEST, "compression_chunk_kb": 16}
    text = bench.markdown(
        [
            {
                "workload": "b",
                "arms": list(bench.ARMS_LATEST),
                "configs": configs,
                "predicted": {},
                "windows": windows,
            }
        ]
    )
    assert "| B | cassandra_latest |" in text and "(idle node 0.01)" in text


def test_a_gain_beyond_the_floor_is_called_better():
    summary = bench.summarize(_windows(6, 1.25))
    assert summary["tuned"]["ratio"] == pytest.approx(1.25, rel=0.02)
    assert summary["tuned"]["won"] == 6 and summary["tuned"]["n"] == 6
    assert summary["defaults again"]["low"] < 1.0 < summary["defaults again"]["high"]
    text = bench.markdown(
        [
            {
                "workload": "b",
                "configs": {arm: {"concurrent_reads": 32} for arm in bench.ARMS},
                "predicted": {"tuned": 5000.0, "defaults": 4000.0},
                "windows": _windows(6, 1.25),
            }
        ]
    )
    assert "**better**, outside the floor" in text and "the floor: +-" in text


def test_a_gain_inside_the_floor_is_not_claimed():
    summary = bench.summarize(_windows(6, 1.0))
    text = bench.markdown(
        [{"workload": "b", "configs": {arm: {} for arm in bench.ARMS}, "predicted": {}, "windows": _windows(6, 1.0)}]
    )
    assert summary["tuned"]["low"] < 1.0 < summary["tuned"]["high"] and "inside the floor" in text


def test_the_command_line_names_what_is_allowed():
    assert bench.parse_args([]).workloads == ["b"]
    for bad in (["--workloads", "z"], ["--rounds", "1"]):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)


class _Sampler:
    def __init__(self):
        self.cpu = 0.0

    def sample(self):
        self.cpu += 0.5
        return {"server_cpu": self.cpu}


def test_the_rounds_run_each_arm_on_its_node_and_the_other_node_idles(monkeypatch):
    applied, runs = [], []
    monkeypatch.setattr(bench.st, "apply_config", lambda config, node=None: applied.append(dict(config)))

    def client_window(spec, table, args, seconds, settle, sampler, probe, label, node):
        runs.append((label, node.name, table, seconds))
        return {"arm": label, "ops_s": 4000.0, "server_cpu": 0.9}

    monkeypatch.setattr(bench.ke, "client_window", client_window)
    base = {"concurrent_reads": 32, "key_cache_size": 51, "compaction_throughput": 64, bench.st.CHUNK: 16}
    configs = {
        "defaults": base,
        "tuned": dict(base, concurrent_reads=124, **{bench.st.CHUNK: 4}),
        bench.LATEST: {"node": bench.LATEST, bench.st.CHUNK: 16},
        "defaults again": base,
    }
    samplers = {bench.ke._shape.BENCH_NODE.name: _Sampler(), bench.ke._shape.LATEST_NODE.name: _Sampler()}
    args = bench.parse_args(["--rounds", "4", "--latest", "--warmup-s", "30"])
    bench.warm_up("b", configs, args, samplers, None, print)
    assert [(r[1], r[2]) for r in runs] == [
        ("bench-cassandra1", "usertable"),
        ("bench-cassandra1", "usertable_c4"),
        ("bench-latest1", "usertable"),
    ]
    runs.clear()
    applied.clear()
    windows = bench.measure("b", configs, args, samplers, None, print)
    assert len(windows) == 16 and all("idle_node_cpu" in w for w in windows)
    latest = [r for r in runs if r[0] == bench.LATEST]
    assert len(latest) == 4 and {r[1] for r in latest} == {"bench-latest1"}
    assert {r[2] for r in runs if r[0] == "tuned"} == {"usertable_c4"}
    # The latest node's settings are its cassandra.yaml: no live knob is set for its runs, and none leaks "node".
    assert all("node" not in config for config in applied) and len(applied) == 12 + 1


def _record_runs(monkeypatch):
    """(applied, runs): the live knobs set, as (node, configuration), and the client runs, as (label, node, table),
    with no node touched."""
    applied, runs = [], []
    monkeypatch.setattr(bench.st, "apply_config", lambda config, node=None: applied.append((node.name, dict(config))))

    def client_window(spec, table, args, seconds, settle, sampler, probe, label, node):
        runs.append((label, node.name, table))
        return {"arm": label, "ops_s": 4000.0, "server_cpu": 0.9}

    monkeypatch.setattr(bench.ke, "client_window", client_window)
    return applied, runs


def test_with_a_tuned_node_the_tuned_arm_runs_there_with_its_knobs(monkeypatch):
    applied, runs = _record_runs(monkeypatch)
    base = {"concurrent_reads": 32, bench.st.CHUNK: 16}
    configs = {
        "defaults": base,
        "tuned": {"concurrent_reads": 124, bench.st.CHUNK: 4, "node": bench.TUNED},
        "defaults again": base,
    }
    nodes = (bench.ke._shape.BENCH_NODE, bench.ke._shape.TUNED_NODE)
    samplers = {node.name: _Sampler() for node in nodes}
    args = bench.parse_args(["--rounds", "3", "--tuned-node"])
    bench.measure("b", configs, args, samplers, None, print)
    assert {r[1:] for r in runs if r[0] == "tuned"} == {("bench-tuned1", "usertable_c4")}
    assert {r[1] for r in runs if r[0] != "tuned"} == {"bench-cassandra1"}
    assert ("bench-tuned1", {"concurrent_reads": 124}) in applied
    assert all(name == "bench-cassandra1" for name, config in applied if config["concurrent_reads"] == 32)


def _pair_configs(latest=False):
    base = {"concurrent_reads": 32, bench.st.CHUNK: 16}
    configs = {"defaults": base, "tuned": {"concurrent_reads": 124, bench.st.CHUNK: 4, "node": bench.TUNED}}
    if latest:
        configs[bench.LATEST] = {"node": bench.LATEST, bench.st.CHUNK: 16}
    configs["defaults again"] = base
    return configs


def test_pairs_run_the_node_aa_then_each_arm_against_the_bench_nodes_defaults(monkeypatch):
    applied, runs = _record_runs(monkeypatch)
    nodes = (bench.ke._shape.BENCH_NODE, bench.ke._shape.TUNED_NODE, bench.ke._shape.LATEST_NODE)
    samplers = {node.name: _Sampler() for node in nodes}
    args = bench.parse_args(["--design", "pairs", "--rounds", "4", "--latest"])
    assert args.tuned_node
    windows = bench.measure_pairs("b", _pair_configs(latest=True), args, samplers, None, print)
    assert [w["phase"] for w in windows] == [bench.NODE_AA] * 8 + ["tuned"] * 8 + [bench.LATEST] * 8
    # ABBA in every phase; A always the bench node's defaults on its 16 KiB table.
    assert [w["arm"] for w in windows[:8]] == ["A", "B", "B", "A", "A", "B", "B", "A"]
    assert {r[1:] for r in runs if r[0] == "A"} == {("bench-cassandra1", "usertable")}
    # The node A/A: the tuned node on the defaults and the same chunk length; then its tuned configuration.
    assert {r[1:] for r in runs[:8] if r[0] == "B"} == {("bench-tuned1", "usertable")}
    assert {r[1:] for r in runs[8:16] if r[0] == "B"} == {("bench-tuned1", "usertable_c4")}
    assert {r[1:] for r in runs[16:] if r[0] == "B"} == {("bench-latest1", "usertable")}
    assert ("bench-tuned1", {"concurrent_reads": 32}) in applied and (
        "bench-tuned1",
        {"concurrent_reads": 124},
    ) in applied
    assert all(name != "bench-latest1" for name, _config in applied)


def _pair_windows(gains, node_bias=1.05, noise=(1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99)):
    out = []
    for phase, gain in gains.items():
        for index, label in enumerate(bench.designs.window_order(4)):
            ops = 4000.0 * noise[index % len(noise)]
            if label == "B":
                ops *= node_bias * gain
            out.append(
                {
                    "phase": phase,
                    "arm": label,
                    "index": index,
                    "node": "bench-tuned1" if label == "B" else "bench-cassandra1",
                    "ops_s": ops,
                    "ops_per_speed": ops / 40000.0,
                    "server_cpu": 0.95,
                    "client_side_cpu": 0.2,
                    "read_mb_s": 60.0,
                }
            )
    return out


def test_pairs_take_the_node_aa_out_and_call_a_gain_against_its_floor():
    windows = _pair_windows({bench.NODE_AA: 1.0, "tuned": 1.25})
    found = bench.summarize_pairs(windows)
    assert found["floor"] is not None and found["floor"] > 0.0
    tuned = found["phases"]["tuned"]
    # As measured, tuned carries the tuned node's own 5 %; with the node A/A taken out, the configuration's 25 %.
    assert tuned["summary"]["ratio"] == pytest.approx(1.05 * 1.25, rel=0.02)
    assert tuned["corrected"]["ratio"] == pytest.approx(1.25, rel=0.02)
    assert tuned["verdict"] == "B better" and tuned["node"] == {"A": "bench-cassandra1", "B": "bench-tuned1"}
    # Its verdict with the node A/A taken out: against the A/A's noise around its own ratio, not around 1.
    assert found["spread"] is not None and found["spread"] < found["floor"]
    assert found["aa_ratio"] == pytest.approx(1.05, rel=0.02)
    assert tuned["verdict_corrected"] == "B better"
    text = bench.render([{"workload": "b", "design": "pairs", "configs": _pair_configs(), "windows": windows}])
    assert "| B | node A/A |" in text and "| B | tuned |" in text and "B better" in text
    assert "around 1.05" in text


def test_pairs_set_every_other_phase_against_latest_when_latest_ran():
    windows = _pair_windows({bench.NODE_AA: 1.0, "tuned": 1.10, bench.LATEST: 1.25})
    found = bench.summarize_pairs(windows)
    # The phases' A arms ran the same defaults: the ratio of their pair ratios compares tuned with latest.
    assert found["phases"]["tuned"]["against_latest"]["ratio"] == pytest.approx(1.10 / 1.25, rel=0.01)
    assert found["phases"][bench.LATEST]["against_latest"] is None
    assert found["phases"][bench.NODE_AA]["against_latest"] is None
    text = bench.render([{"workload": "b", "design": "pairs", "configs": _pair_configs(True), "windows": windows}])
    assert "B against cassandra_latest" in text and "- tuned: 0.880 [" in text
    # Without a latest phase there is nothing to set against it.
    alone = bench.summarize_pairs(_pair_windows({bench.NODE_AA: 1.0, "tuned": 1.10}))
    assert alone["phases"]["tuned"]["against_latest"] is None


def test_the_floor_text_names_the_noise_around_the_node_aa_when_the_nodes_differ():
    assert bench.floor_text(None, None, None) == "-"
    assert bench.floor_text(0.02, 0.02, 1.0) == "+-2.0 %"
    assert bench.floor_text(0.135, 0.008, 1.126) == "+-13.5 % (+-0.8 % around 1.126)"


def test_the_pairs_design_names_what_is_allowed():
    for bad in (["--design", "crossover"], ["--design", "pairs", "--rounds", "3"]):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)


def test_pairs_warm_each_phase_b_table_right_before_its_phase(monkeypatch):
    _applied, runs = _record_runs(monkeypatch)
    nodes = (bench.ke._shape.BENCH_NODE, bench.ke._shape.TUNED_NODE, bench.ke._shape.LATEST_NODE)
    samplers = {node.name: _Sampler() for node in nodes}
    args = bench.parse_args(["--design", "pairs", "--rounds", "2", "--latest", "--warmup-s", "30"])
    bench.measure_pairs("b", _pair_configs(latest=True), args, samplers, None, print)
    warm = [(index, r[1], r[2]) for index, r in enumerate(runs) if r[0] == "warm-up"]
    # The bench node's table once; then B's table of each phase just before that phase's 4 windows.
    assert warm == [
        (0, "bench-cassandra1", "usertable"),
        (1, "bench-tuned1", "usertable"),
        (6, "bench-tuned1", "usertable_c4"),
        (11, "bench-latest1", "usertable"),
    ]


def test_ucs_phases_switch_the_tuned_nodes_table_before_them_and_keep_the_price(monkeypatch):
    applied, runs = _record_runs(monkeypatch)
    switched, states = [], []

    def switch_compaction(table, options, node=None, log=print):
        switched.append((node.name, table, options, len(runs)))
        return {
            "seconds": 70.0,
            "node_cpu_s": 65.0,
            "write_mb": 4300.0,
            "before": {"sstables": 9},
            "after": {"sstables": 4},
        }

    def table_state(table, node=None):
        states.append((node.name, table))
        return {"sstables": 3, "sstables_per_read": 1.0, "sstables_per_read_max": 3.0, "pending_compactions": 0}

    monkeypatch.setattr(bench.ke._shape, "switch_compaction", switch_compaction)
    monkeypatch.setattr(bench.ke._shape, "table_state", table_state)
    args = bench.parse_args(
        ["--design", "pairs", "--rounds", "2", "--no-tuned", "--ucs", "L4,T4", "--table-state", "--workloads", "a"]
    )
    base = {"concurrent_reads": 32, bench.st.CHUNK: 16}
    configs = {"defaults": base}
    for scaling in args.ucs:
        configs[bench.ucs_arm(scaling)] = dict(base, node=bench.TUNED, **{bench.UCS: scaling})
    configs["defaults again"] = base
    nodes = (bench.ke._shape.BENCH_NODE, bench.ke._shape.TUNED_NODE)
    samplers = {node.name: _Sampler() for node in nodes}
    switches = []
    windows = bench.measure_pairs("a", configs, args, samplers, None, print, switches)
    assert [w["phase"] for w in windows] == [bench.NODE_AA] * 4 + ["UCS L4"] * 4 + ["UCS T4"] * 4
    # Each UCS phase switches the tuned node's 16 KiB table once, before its first window; the bench node never.
    assert [(s[0], s[1], s[3]) for s in switched] == [
        ("bench-tuned1", "usertable", 4),
        ("bench-tuned1", "usertable", 8),
    ]
    assert "'scaling_parameters': 'L4'" in switched[0][2] and "UnifiedCompactionStrategy" in switched[0][2]
    assert [s["phase"] for s in switches] == ["UCS L4", "UCS T4"] and switches[0]["seconds"] == 70.0
    # The compaction is no live knob: it never reaches apply_config; every window keeps its table's state.
    assert all(bench.UCS not in config and "node" not in config for _name, config in applied)
    assert len(states) == 12 and windows[0]["state"]["sstables_per_read"] == 1.0
    text = bench.render(
        [{"workload": "a", "design": "pairs", "configs": configs, "windows": windows, "switches": switches}]
    )
    assert "| A | UCS L4 |" in text and "- UCS L4: 3.0 / 3.0 SSTables, 1.0 / 1.0 per read" in text
    assert "- the switch before UCS T4 (bench-tuned1, usertable): 70 s, 65 s of node CPU, 4300 MB written" in text


def test_ucs_phases_name_what_is_allowed():
    for bad in (
        ["--design", "pairs", "--rounds", "2", "--ucs", "X4"],
        ["--design", "pairs", "--rounds", "2", "--ucs", "L4;T4"],
        ["--ucs", "L4"],
        ["--no-tuned"],
    ):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)
    assert bench.parse_args(["--design", "pairs", "--rounds", "2", "--ucs", " L10, T4 ,N"]).ucs == ["L10", "T4", "N"]


def _compactions(compactions, when, node_cpu_s, write_mb):
    """A fake major_compaction that records (node, table, when()) in compactions and prices 70 s, 4 -> 1 SSTables."""

    def major_compaction(table, node=None):
        compactions.append((node.name, table, when() if when else None))
        return {
            "seconds": 70.0,
            "node_cpu_s": node_cpu_s,
            "write_mb": write_mb,
            "before": {"sstables": 4},
            "after": {"sstables": 1},
        }

    return major_compaction


def test_node_phases_restart_the_tuned_node_only_when_its_settings_change_and_compact_before_the_phase(monkeypatch):
    applied, runs = _record_runs(monkeypatch)
    restarts, compactions = [], []

    def restart_with(node, settings=None, heap=None, log=print):
        restarts.append((node.name, dict(settings or {}), heap, len(runs)))
        return {"seconds": 45.0, "settings": dict(settings or {}), "heap": heap or "1G", "pid": 5000 + len(restarts)}

    monkeypatch.setattr(bench.ke._shape, "restart_with", restart_with)
    monkeypatch.setattr(bench.ke._shape, "major_compaction", _compactions(compactions, lambda: len(runs), 66.0, 4300.0))
    monkeypatch.setattr(bench.ke._shape, "server_pid", lambda node=None: 4242)
    monkeypatch.setattr(bench.ke, "Sampler", lambda pid, group=None: _Sampler())
    specs = ["heap=512M", "heap=512M+chunk=4+compact", "disk_access_mode=mmap"]
    args = bench.parse_args(
        ["--design", "pairs", "--rounds", "2", "--no-tuned"] + sum((["--node-phase", s] for s in specs), [])
    )
    configs = bench.arm_configs(args, {"concurrent_reads": 32}, {"concurrent_reads": 124, bench.st.CHUNK: 4})
    assert list(configs) == ["defaults"] + [bench.node_phase_arm(s) for s in specs] + ["defaults again"]
    samplers = {node.name: _Sampler() for node in (bench.ke._shape.BENCH_NODE, bench.ke._shape.TUNED_NODE)}
    switches, state = [], {}
    windows = bench.measure_pairs("b", configs, args, samplers, None, print, switches, state)
    phases = [bench.NODE_AA] + [bench.node_phase_arm(s) for s in specs]
    assert [w["phase"] for w in windows] == sum(([p] * 4 for p in phases), [])
    # No restart for the node A/A; one for the heap, none for the same heap with the 4 KiB table; one for the
    # cassandra.yaml key (with the inventory's heap again); each before its phase's first window.
    assert restarts == [
        ("bench-tuned1", {}, "512M", 4),
        ("bench-tuned1", {"disk_access_mode": "mmap"}, None, 12),
    ]
    assert compactions == [("bench-tuned1", "usertable_c4", 8)]
    assert state == {"settings": {"disk_access_mode": "mmap"}, "heap": None}
    assert {r[2] for r in runs[8:12] if r[0] == "B"} == {"usertable_c4"}
    # What the node restarts with never reaches the live knobs.
    assert all(set(config) <= {"concurrent_reads"} for _name, config in applied)
    assert [s["kind"] for s in switches] == ["restart", "compaction", "restart"]
    text = bench.render(
        [{"workload": "b", "design": "pairs", "configs": configs, "windows": windows, "switches": switches}]
    )
    assert "- the restart before tuned node: heap=512M (bench-tuned1, with its own settings, heap 512M): 45 s" in text
    assert (
        "- the compaction before tuned node: heap=512M+chunk=4+compact (bench-tuned1, usertable_c4): 70 s, 66 s of "
        "node CPU, 4300 MB written, SSTables 4 -> 1" in text
    )


def test_node_phases_name_what_is_allowed():
    for bad in ("heap=512", "chunk=8", "compact=yes", "Disk=1", "x", "heap=1G+", ""):
        with pytest.raises(SystemExit):
            bench.parse_args(["--design", "pairs", "--rounds", "2", "--node-phase", bad])
    with pytest.raises(SystemExit):
        bench.parse_args(["--node-phase", "heap=512M"])
    found = bench.parse_args(
        ["--design", "pairs", "--rounds", "2", "--node-phase", "file_cache_enabled=true+heap=768M"]
    ).node_phase
    assert found == {
        "file_cache_enabled=true+heap=768M": {bench.NODE_SETTINGS: {"file_cache_enabled": True}, bench.HEAP: "768M"}
    }


def test_what_a_run_changes_on_the_tuned_node_is_put_back_even_when_it_fails(monkeypatch):
    statements, restarts = [], []
    monkeypatch.setattr(bench.ke._shape, "cql_execute", lambda statement, node=None: statements.append(statement))
    monkeypatch.setattr(bench.ke._shape, "restart_with", lambda node, log=print: restarts.append(node.name))
    with pytest.raises(RuntimeError):
        with bench.tuned_node_restored(print) as changes:
            changes["compaction"]["usertable"] = "{'class': 'SizeTieredCompactionStrategy'}"
            changes["restart"].update(settings={}, heap="512M")
            raise RuntimeError("a window failed")
    assert statements == ["ALTER TABLE tactician.usertable WITH compaction = {'class': 'SizeTieredCompactionStrategy'}"]
    assert restarts == ["bench-tuned1"]
    # Nothing changed: nothing to put back. A node the run stops anyway is not restarted first.
    with bench.tuned_node_restored(print):
        pass
    with bench.tuned_node_restored(print, stopping=[bench.ke._shape.TUNED_NODE]) as changes:
        changes["restart"].update(settings={"disk_access_mode": "mmap"}, heap=None)
    assert restarts == ["bench-tuned1"] and len(statements) == 1


def test_a_node_phase_stops_when_the_node_was_not_restarted(monkeypatch):
    _record_runs(monkeypatch)
    monkeypatch.setattr(bench.ke._shape, "server_pid", lambda node=None: 4242)
    monkeypatch.setattr(
        bench.ke._shape,
        "restart_with",
        lambda node, settings=None, heap=None, log=print: {"seconds": 30.0, "settings": {}, "heap": heap, "pid": 4242},
    )
    args = bench.parse_args(["--design", "pairs", "--rounds", "2", "--no-tuned", "--node-phase", "heap=512M"])
    configs = bench.arm_configs(args, {"concurrent_reads": 32}, {})
    samplers = {node.name: _Sampler() for node in (bench.ke._shape.BENCH_NODE, bench.ke._shape.TUNED_NODE)}
    with pytest.raises(SystemExit, match="was not restarted"):
        bench.measure_pairs("b", configs, args, samplers, None, print, [], {})


def test_concurrent_runs_each_pairs_two_windows_at_the_same_time_and_warms_both_nodes_per_phase(monkeypatch):
    applied, _runs = _record_runs(monkeypatch)
    together = []

    def client_windows_together(runs, args, seconds, settle, probe):
        together.append([(label, node.name, table) for _spec, table, _sampler, label, node in runs])
        return [
            {"arm": label, "ops_s": 4000.0 * (1.1 if label == "B" else 1.0), "server_cpu": 0.5}
            for _spec, _table, _sampler, label, _node in runs
        ]

    monkeypatch.setattr(bench.ke, "client_windows_together", client_windows_together)
    args = bench.parse_args(["--design", "concurrent", "--rounds", "4", "--warmup-s", "60"])
    assert args.tuned_node
    samplers = {node.name: _Sampler() for node in (bench.ke._shape.BENCH_NODE, bench.ke._shape.TUNED_NODE)}
    windows = bench.measure_pairs("b", _pair_configs(), args, samplers, None, print)
    # Per phase: a warm-up of both tables together, then 4 runs of two windows each, in the ABBA order's pairs.
    assert [call[0][0] for call in together] == ["warm-up", "A", "B", "A", "B"] * 2
    assert all({label for label, _n, _t in call} <= {"A", "B", "warm-up"} and len(call) == 2 for call in together)
    assert [w["arm"] for w in windows[:8]] == ["A", "B", "B", "A", "A", "B", "B", "A"]
    assert [w["index"] for w in windows[:8]] == list(range(8))
    assert {(w["arm"], w["node"]) for w in windows} == {("A", "bench-cassandra1"), ("B", "bench-tuned1")}
    found = bench.summarize_pairs(windows)
    assert found["phases"]["tuned"]["summary"]["ratio"] == pytest.approx(1.1)
    text = bench.render([{"workload": "b", "design": "concurrent", "configs": _pair_configs(), "windows": windows}])
    assert "| B | node A/A |" in text and "| B | tuned |" in text
    assert ("bench-tuned1", {"concurrent_reads": 124}) in applied


def test_compact_first_compacts_every_table_an_arm_reads_once_and_prices_it(monkeypatch):
    compactions = []
    monkeypatch.setattr(bench.ke._shape, "major_compaction", _compactions(compactions, None, 36.0, 4400.0))
    # The tuned node's 16 KiB table is one SSTable already: left as it is.
    held = {("bench-tuned1", "usertable"): 1}
    monkeypatch.setattr(
        bench.ke._shape, "table_state", lambda table, node=None: {"sstables": held.get((node.name, table), 2)}
    )
    args = bench.parse_args(["--design", "concurrent", "--rounds", "2", "--latest", "--compact-first"])
    tuned = {"concurrent_reads": 124, bench.st.CHUNK: 4}
    configs = bench.arm_configs(args, {"concurrent_reads": 32}, tuned, raced=dict(tuned, concurrent_reads=64))
    # The defaults (bench node, 16 KiB), the node A/A's defaults on the tuned node (16 KiB), then the tuned and
    # raced arms' 4 KiB table (once), and the latest node's own.
    pairs = [(node.name, table) for node, table in bench.tables_read(configs)]
    assert pairs == [
        ("bench-cassandra1", "usertable"),
        ("bench-tuned1", "usertable"),
        ("bench-tuned1", "usertable_c4"),
        ("bench-latest1", "usertable"),
    ]
    switches = bench.compact_first(configs, print)
    assert [(node, table) for node, table, _when in compactions] == [pairs[0], pairs[2], pairs[3]]
    assert [s["phase"] for s in switches] == ["the phases"] * 3
    assert bench.switch_note(switches[0]).startswith(
        "- the compaction before the phases (bench-cassandra1, usertable): 70 s, 36 s of node CPU, 4400 MB written, "
        "SSTables 4 -> 1"
    )
    with pytest.raises(SystemExit):
        bench.parse_args(["--rounds", "2", "--compact-first"])


def test_compact_each_phase_compacts_the_two_tables_of_every_phase_before_it(monkeypatch):
    applied, runs = _record_runs(monkeypatch)
    compactions = []
    monkeypatch.setattr(bench.ke._shape, "major_compaction", _compactions(compactions, lambda: len(runs), 30.0, 4300.0))
    monkeypatch.setattr(bench.ke, "Sampler", lambda pid, group=None: _Sampler())
    # The tuned node's 4 KiB table is one SSTable already when its phase comes: left as it is.
    held = {"usertable_c4": 1}
    monkeypatch.setattr(bench.ke._shape, "table_state", lambda table, node=None: {"sstables": held.get(table, 3)})
    args = bench.parse_args(["--design", "pairs", "--rounds", "2", "--latest", "--compact-each-phase"])
    configs = bench.arm_configs(args, {"concurrent_reads": 32}, {"concurrent_reads": 124, bench.st.CHUNK: 4})
    nodes = (bench.ke._shape.BENCH_NODE, bench.ke._shape.TUNED_NODE, bench.ke._shape.LATEST_NODE)
    samplers = {node.name: _Sampler() for node in nodes}
    switches = []
    windows = bench.measure_pairs("f", configs, args, samplers, None, print, switches, {})
    # Before each phase's first window (4 windows a phase): the bench node's table and B's (the latest node's too).
    assert compactions == [
        ("bench-cassandra1", "usertable", 0),
        ("bench-tuned1", "usertable", 0),
        ("bench-cassandra1", "usertable", 4),
        ("bench-cassandra1", "usertable", 8),
        ("bench-latest1", "usertable", 8),
    ]
    assert [s["phase"] for s in switches][-1] == bench.LATEST and len(windows) == 12
    with pytest.raises(SystemExit):
        bench.parse_args(["--rounds", "2", "--compact-each-phase"])


def test_a_row_cache_a_run_turned_on_is_turned_off_at_its_end_even_on_a_node_it_stops(monkeypatch):
    applied = []
    monkeypatch.setattr(bench.st, "apply_config", lambda config, node=None: applied.append((node.name, config)))
    with pytest.raises(RuntimeError):
        with bench.tuned_node_restored(print, stopping=[bench.ke._shape.TUNED_NODE]) as changes:
            changes["row_cache"] = True
            raise RuntimeError("a window failed")
    assert applied == [("bench-tuned1", {"row_cache_size": 0})]
    # A race on top of cassandra_latest turned it on on the latest node: off there.
    applied.clear()
    with bench.tuned_node_restored(print) as changes:
        changes["row_cache"] = bench.ke._shape.LATEST_NODE
    assert applied == [("bench-latest1", {"row_cache_size": 0})]


def test_disk_read_caps_are_checked_held_for_every_start_and_lifted(monkeypatch, capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(["--disk-read-limit", "fast"])
    assert "--disk-read-limit: 'fast' is not a rate" in capsys.readouterr().err
    assert bench.parse_args(["--disk-read-limit", "80M"]).disk_read_limit == "80M"
    with pytest.raises(SystemExit):
        bench.parse_args(["--disk-read-iops", "5"])
    assert "--disk-read-iops: 5 is not allowed" in capsys.readouterr().err
    shape = bench.ke._shape
    calls = []
    monkeypatch.setattr(
        shape, "run_playbook", lambda path, inventory, extra_vars=None: calls.append(extra_vars) or _Ok()
    )
    monkeypatch.setattr(shape, "RUN_VARS", {})
    running = {shape.BENCH_NODE.name}
    monkeypatch.setattr(shape, "node_running", lambda node=shape.BENCH_NODE: node.name in running)
    shape.cap_disk_reads([shape.BENCH_NODE, shape.TUNED_NODE], "80M", 1200, log=lambda line: None)
    caps = {"cassandra_node_disk_read_limit": "80M", "cassandra_node_disk_read_iops": 1200}
    # The running node is capped live; the stopped one gets the cap at its start, and at a restart with settings.
    assert calls == [caps]
    shape.playbook("lab_up.yml", shape.TUNED_NODE, extra_vars={"cassandra_node_heap_size": "1G"})
    assert calls[-1] == dict(caps, cassandra_node_heap_size="1G")
    assert shape.describe_caps(caps) == "capped at 80M/s and 1200 reads/s"
    shape.playbook("lab_down.yml", shape.TUNED_NODE)
    assert calls[-1] is None
    shape.cap_disk_reads([shape.BENCH_NODE, shape.TUNED_NODE], log=lambda line: None)
    assert calls[-1] == {"cassandra_node_disk_read_limit": "", "cassandra_node_disk_read_iops": 0}
    assert shape.RUN_VARS == {}


class _Ok:
    returncode = 0
    stderr = ""


def test_a_node_restarted_fresh_is_stopped_then_started_cold_with_its_caps(monkeypatch):
    shape = bench.ke._shape
    calls, dropped = [], []
    monkeypatch.setattr(
        shape,
        "run_playbook",
        lambda path, inventory, extra_vars=None: calls.append((os.path.basename(path), extra_vars)) or _Ok(),
    )
    monkeypatch.setattr(shape.bulk, "drop_cached", dropped.append)
    caps = {"cassandra_node_disk_read_limit": "", "cassandra_node_disk_read_iops": 1200}
    monkeypatch.setattr(shape, "RUN_VARS", {shape.BENCH_NODE.name: caps})
    seconds = shape.restart_fresh(shape.BENCH_NODE, log=lambda line: None)
    # A new JVM and a new memory group: stopped (the group removed), its data's pages dropped, started with the
    # caps the run holds on it.
    assert calls == [("lab_down.yml", None), ("lab_up.yml", caps)] and seconds >= 0
    assert dropped == [shape.BENCH_NODE.data_dir]
    assert bench.parse_args(["--design", "concurrent", "--rounds", "4", "--keep-nodes"]).keep_nodes
    assert not bench.parse_args(["--design", "concurrent", "--rounds", "4"]).keep_nodes
