# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""benchmarks/knob_effects.py without a server: the summaries of a design's windows (pairs, raw, ABBA blocks), the
Markdown table with the floor's verdicts, the price of the chunk-length switch, and the command line."""

from __future__ import annotations

import os
import sys
import types

import pytest
from testlib import ROOT

BENCHMARKS = os.path.join(ROOT, "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)

import knob_effects as bench


def _windows(pairs, gain=1.0, drift=1.0):
    from ansible_collections.tactician.nosql.plugins.module_utils.trials import designs

    out = []
    for index, arm in enumerate(designs.window_order(pairs)):
        ops = 5000.0 * drift**index * (gain if arm == "B" else 1.0)
        out.append(
            {
                "arm": arm,
                "seconds": 60.0,
                "ops_s": ops,
                "ops_per_speed": ops,
                "cpu_speed": 1.0,
                "server_cpu": 0.98,
                "client_side_cpu": 0.3,
                "read_mb_s": 60.0,
                "cache_mb": 600,
            }
        )
    return out


def _row(knob, windows, a="in place", b="in place"):
    return {
        "workload": "b",
        "knob": knob,
        "how": "-",
        "A": a,
        "B": b,
        "window_s": 60.0,
        "windows": windows,
    }


def test_blocks_use_whole_blocks_only_and_cancel_a_drift():
    summaries = bench._summaries(_windows(5, gain=1.1, drift=1.02))
    assert set(summaries) == set(bench.ESTIMATORS)
    blocks = summaries["blocks, raw"]
    assert blocks["n"] == 2 and blocks["ratio"] == pytest.approx(1.1)
    assert summaries["pairs, raw"]["n"] == 5


def test_the_table_gives_each_estimator_its_own_floor_and_verdict():
    import random

    rng = random.Random(4)
    aa = _windows(8)
    for window in aa:
        window["ops_s"] = window["ops_per_speed"] = window["ops_s"] * rng.uniform(0.98, 1.02)
    rows = [_row("A/A", aa), _row("concurrent_reads", _windows(8, gain=1.3, drift=1.01), 32, 8)]
    text = bench.markdown(rows, "a shape")
    lines = [line for line in text.splitlines() if line.startswith("| B |")]
    assert "(the floor)" in lines[0] and "+-" in lines[0]
    assert "B better" in lines[1]
    # The estimator is chosen on the A/A windows (no drift there: adjacent pairs are narrowest or tie) and used
    # for the knob too; the drift of the knob's windows does not choose it.
    chosen = lines[0].split(" | ")[6]
    assert chosen in bench.ESTIMATORS and lines[1].split(" | ")[6] == chosen
    assert "the other estimators" in text and "Throughput per window" in text


def test_the_price_of_the_switch_is_one_sentence():
    row = {
        "workload": "b",
        "knob": bench.CHUNK_KNOB + " (the switch)",
        "A": 16,
        "B": 4,
        "rewrite_s": 300.0,
        "rewrite_server_cpu_s": 250.0,
        "written_gb": 4.4,
        "ops_s": {"before": 5000.0, "during": 3000.0, "after": 6000.0},
        "windows": [],
        "ops_lost": 600000,
        "break_even_s": 600,
    }
    text = bench.markdown([row], "a shape")
    assert "the rewrite took 300 s and 250.0 s of node CPU, wrote 4.4 GB" in text
    assert "600000 operations lost" in text and "pays them back in 600 s" in text


def test_the_command_line_names_what_is_allowed():
    args = bench.parse_args(["--workloads", "b", "--knobs", "none", "--aa-pairs", "16"])
    assert args.knobs == [] and args.aa_pairs == 16
    with pytest.raises(SystemExit):
        bench.parse_args(["--knobs", "row_cache"])


def test_a_live_knob_takes_its_candidate_from_the_command_line():
    args = bench.parse_args(["--workloads", "b", "--knobs", "concurrent_reads=128,key_cache_size=0"])
    assert args.knobs == ["concurrent_reads=128", "key_cache_size=0"]
    assert bench.knob_name("concurrent_reads=128") == "concurrent_reads"
    assert bench.knob_candidate("concurrent_reads=128", 8) == 128
    assert bench.knob_candidate("concurrent_reads", 8) == 8
    assert bench.knob_candidate("memtable=skiplist", "trie") == "skiplist"
    with pytest.raises(SystemExit):
        bench.parse_args(["--knobs", "row_cache=64"])


def test_the_row_cache_is_turned_on_per_table_and_emptied_when_off(monkeypatch):
    calls = []
    monkeypatch.setattr(bench, "nodetool", lambda *args, **kw: calls.append(("nodetool",) + args) or "")
    # Through the collection's table engine, which makes the clients re-prepare after a caching change.
    monkeypatch.setattr(
        bench._shape, "alter_table", lambda table, node=None, **options: calls.append(("alter", table, options))
    )
    monkeypatch.setitem(bench._CAPACITIES, bench._shape.BENCH_NODE.name, (51, 16, 25))
    monkeypatch.setattr(bench, "_CURRENT", {})
    bench.set_row_cache(256)
    assert calls[0] == ("alter", "usertable", {"caching": {"keys": "ALL", "rows_per_partition": "ALL"}})
    assert calls[1:] == [("nodetool", "setcachecapacity", 51, 256, 25)]
    calls.clear()
    bench.set_row_cache(0)
    assert calls[0] == ("alter", "usertable", {"caching": {"keys": "ALL", "rows_per_partition": "NONE"}})
    assert calls[1:] == [("nodetool", "invalidaterowcache"), ("nodetool", "setcachecapacity", 51, 16, 25)]
    assert bench.LIVE_KNOBS["row_cache_size"][1:3] == (0, 256)


def test_the_key_and_row_caches_keep_each_other_when_set(monkeypatch):
    # setcachecapacity sets the three capacities at once: a key cache set after the row cache keeps the row cache.
    calls = []
    monkeypatch.setattr(bench, "nodetool", lambda *args, **kw: calls.append(args) or "")
    monkeypatch.setattr(bench._shape, "alter_table", lambda table, node=None, **options: None)
    monkeypatch.setitem(bench._CAPACITIES, bench._shape.BENCH_NODE.name, (51, 16, 25))
    monkeypatch.setattr(bench, "_CURRENT", {})
    bench.set_row_cache(128, tables=("usertable", "usertable_c4"))
    bench.set_key_cache(0)
    bench.set_row_cache(64)
    assert [c for c in calls if c[0] == "setcachecapacity"] == [
        ("setcachecapacity", 51, 128, 25),
        ("setcachecapacity", 0, 128, 25),
        ("setcachecapacity", 0, 64, 25),
    ]


class _Group:
    def __init__(self, name):
        self.name = name

    def stats(self):
        return {"exists": True, "cache": 600 * 10**6, "limit": 2 << 30}


def test_data_cached_outside_the_nodes_memory_group_is_named(monkeypatch, tmp_path):
    node = bench._shape.dataclasses.replace(bench._shape.BENCH_NODE, inventory=str(tmp_path))
    monkeypatch.setattr(bench._shape, "BENCH", str(tmp_path))
    table = os.path.join(node.data_dir, bench._shape.KEYSPACE, "usertable-0123")
    os.makedirs(table)
    for name in ("nb-1-big-Data.db", "nb-1-big-Index.db"):
        with open(os.path.join(table, name), "w") as handle:
            handle.write("x")
    monkeypatch.setattr(bench._shape.cgroups, "version", lambda: 1)
    monkeypatch.setattr(bench._shape.cgroups, "MemoryGroup", _Group)
    seen = []

    def resident(paths):
        seen.extend(os.path.basename(p) for p in paths)
        return 1400 * 10**6

    real = bench._shape.resident_bytes
    monkeypatch.setattr(bench._shape, "resident_bytes", resident)
    # 1.4 GB of its Data.db files resident, 0.6 GB of page cache in its group: at least 0.8 GB cached elsewhere.
    assert bench._shape.cached_outside(node) == 800 * 10**6 and seen == ["nb-1-big-Data.db"]
    assert "cached outside its memory group: 800 MB" in bench._shape.describe(node)
    monkeypatch.setattr(bench._shape, "resident_bytes", lambda paths: None)
    assert bench._shape.cached_outside(node) is None
    assert real([]) == 0


def test_a_node_starts_with_none_of_its_data_cached_and_restarts_with_its_settings_on_top(monkeypatch, tmp_path):
    node = bench._shape.dataclasses.replace(bench._shape.TUNED_NODE, inventory=str(tmp_path))
    monkeypatch.setattr(bench._shape, "BENCH", str(tmp_path))
    os.makedirs(os.path.join(tmp_path, "group_vars"))
    with open(os.path.join(tmp_path, "group_vars", "cassandra.yml"), "w") as handle:
        handle.write("cassandra_node_heap_size: 1G\ncassandra_node_settings:\n  row_cache_size: 16MiB\n")
    steps = []
    monkeypatch.setattr(bench._shape.bulk, "drop_cached", lambda directory: steps.append(("drop", directory)))
    monkeypatch.setattr(
        bench._shape, "playbook", lambda name, node=None, extra_vars=None: steps.append((name, extra_vars))
    )
    bench._shape.start_node(node)
    # The pages its last memory group held are dropped before the new group starts.
    assert steps == [("drop", node.data_dir), ("lab_up.yml", None)]
    steps.clear()
    monkeypatch.setattr(bench._shape, "server_pid", lambda node=None: 4242)
    price = bench._shape.restart_with(node, {"disk_access_mode": "mmap"}, "512M", log=lambda *a: None)
    assert steps == [
        (
            "lab_up.yml",
            {
                "cassandra_node_settings": {"row_cache_size": "16MiB", "disk_access_mode": "mmap"},
                "cassandra_node_heap_size": "512M",
            },
        )
    ]
    # No cache is dropped on a restart.
    assert price["heap"] == "512M" and price["settings"] == {"disk_access_mode": "mmap"} and price["pid"] == 4242
    steps.clear()
    bench._shape.restart_with(node, log=lambda *a: None)
    assert steps[0][1] == {"cassandra_node_settings": {"row_cache_size": "16MiB"}, "cassandra_node_heap_size": "1G"}


def test_a_playbook_run_leaves_the_callers_signal_handlers_and_a_bench_run_stops_on_sigterm(monkeypatch):
    import signal
    import types

    import ansible_run

    def fake_run(**kwargs):
        # What ansible-runner does when no cancel callback is given.
        signal.signal(signal.SIGTERM, lambda *a: None)
        signal.signal(signal.SIGINT, lambda *a: None)
        return types.SimpleNamespace(rc=0, stats={}, stdout=None)

    monkeypatch.setattr(ansible_run.ansible_runner, "run", fake_run)
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        assert ansible_run.run_playbook("playbooks/lab_up.yml", "inventories/bench").returncode == 0
        assert {s: signal.getsignal(s) for s in before} == before
        signal.signal(signal.SIGTERM, bench._shape._interrupted)
        with pytest.raises(KeyboardInterrupt):
            bench._shape._interrupted(signal.SIGTERM, None)
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)


def test_the_disk_of_a_window_is_read_from_its_counters(tmp_path):
    stats = tmp_path / "diskstats"
    stats.write_text(
        " 254       0 vda 60839723 21247 1889147618 61464827 201655 157288 70524984 658902 0 3763636 62165879\n"
        " 254       1 vda1 100 0 800 50 0 0 0 0 0 40 50\n"
    )
    found = bench._shape.disk_counters("vda", str(stats))
    assert found == {"reads": 60839723, "read_ms": 61464827, "busy_ms": 3763636}
    assert bench._shape.disk_counters("sdz", str(stats)) == {} and bench._shape.disk_counters(None) == {}
    start = {"disk_reads": 1000, "disk_read_ms": 5000, "disk_busy_ms": 0}
    end = {"disk_reads": 3000, "disk_read_ms": 25000, "disk_busy_ms": 1500}
    # 2,000 reads in 2 s, 10 ms each on average, I/O in flight for 1.5 of the 2 s.
    assert bench.disk_rates(start, end, 2.0) == {"disk_reads_s": 1000.0, "disk_read_ms": 10.0, "disk_busy": 0.75}
    assert bench.disk_rates({"disk_reads": None}, end, 2.0)["disk_read_ms"] is None


def test_clients_together_start_before_either_window_opens_and_keep_their_own_counts(monkeypatch):
    events = []

    class FakeClient:
        def __init__(self, params):
            self.table, self.error = params["properties"]["table"], None

        def start(self):
            events.append(("start", self.table))

        def join(self):
            events.append(("join", self.table))

        def status(self):
            rate = 4000.0 if self.table == "usertable" else 6000.0
            return [(t, rate * t) for t in (0.0, 1e12)]

    class FakeSampler:
        def __init__(self, name):
            self.name = name

        def sample(self):
            events.append(("sample", self.name))
            return {
                "t": 100.0 if len([e for e in events if e[0] == "sample"]) <= 2 else 160.0,
                "server_cpu": 0.0,
                "machine_cpu": 0.0,
                "read_bytes": 0,
                "write_bytes": 0,
                "cache_mb": None,
            }

    class FakeProbe:
        def samples(self):
            return []

    monkeypatch.setattr(bench, "Client", FakeClient)
    monkeypatch.setattr(bench, "password", lambda: "x")
    monkeypatch.setattr(bench.time, "sleep", lambda s: events.append(("sleep", s)))
    args = types.SimpleNamespace(threads=64, records=1000)
    runs = [
        ("b", "usertable", FakeSampler("A"), "A", bench._shape.BENCH_NODE),
        ("b", "usertable_c4", FakeSampler("B"), "B", bench._shape.TUNED_NODE),
    ]
    records = bench.client_windows_together(runs, args, 60.0, 20.0, FakeProbe())
    # Both clients start, then the settle, then both windows open; both join before either closes.
    assert [e[0] for e in events[:5]] == ["start", "start", "sleep", "sample", "sample"]
    assert [e[0] for e in events[5:]] == ["join", "join", "sample", "sample"]
    assert [r["arm"] for r in records] == ["A", "B"]
    assert [round(r["ops_s"]) for r in records] == [4000, 6000]


def test_clients_together_interrupted_end_their_client_processes(monkeypatch):
    # kill -TERM raises KeyboardInterrupt in the waiting thread; the clients' threads would outlive it.
    stopped = []

    class WaitingClient:
        def __init__(self, params):
            self.error = None

        def start(self):
            pass

        def join(self):
            raise KeyboardInterrupt("signal 15")

    class FakeSampler:
        def sample(self):
            return {"t": 0.0}

    monkeypatch.setattr(bench, "Client", WaitingClient)
    monkeypatch.setattr(bench, "password", lambda: "x")
    monkeypatch.setattr(bench.time, "sleep", lambda s: None)
    monkeypatch.setattr(bench.loaddriver, "stop_clients", lambda: stopped.append(True) or 2)
    runs = [("b", "usertable", FakeSampler(), "A", bench._shape.BENCH_NODE)]
    args = types.SimpleNamespace(threads=64, records=1000)
    with pytest.raises(KeyboardInterrupt):
        bench.client_windows_together(runs, args, 60.0, 20.0, None)
    assert stopped == [True]


def test_a_step_on_the_node_is_priced_in_time_cpu_writes_and_table_state(monkeypatch):
    cpu, written, calls = iter([10.0, 46.0]), iter([1_000_000, 4_389_000_000]), []
    monkeypatch.setattr(bench._shape, "server_pid", lambda node=None: 4242)
    monkeypatch.setattr(bench._shape.process, "cpu_seconds", lambda pid: next(cpu))
    monkeypatch.setattr(bench._shape, "io_counters", lambda pid: {"write_bytes": next(written)})
    states = iter([{"sstables": 3}, {"sstables": 1}])
    monkeypatch.setattr(bench._shape, "table_state", lambda table, node=None: next(states))
    monkeypatch.setattr(bench._shape, "nodetool", lambda *args, node=None: calls.append(args) or "")
    price = bench._shape.major_compaction("usertable_c4", bench._shape.TUNED_NODE)
    assert calls == [("compact", "tactician", "usertable_c4")]
    assert price["node_cpu_s"] == 36.0 and price["write_mb"] == 4388.0 and price["finished"]
    assert price["before"] == {"sstables": 3} and price["after"] == {"sstables": 1} and price["seconds"] >= 0


def test_the_hot_set_workloads_send_nine_in_ten_operations_to_one_row_in_a_hundred(monkeypatch):
    monkeypatch.setattr(bench, "password", lambda: "secret")
    args = bench.parse_args(["--workloads", "b-hot,a-hot", "--knobs", "row_cache_size"])
    assert args.workloads == ["b-hot", "a-hot"]
    for spec, letter in (("b-hot", "b"), ("a-hot", "a")):
        props = bench.client_params(spec, "usertable", 60, 64, 4000000)["properties"]
        assert props["requestdistribution"] == "hotspot" and props["hotspotdatafraction"] == 0.01
        assert props["hotspotopnfraction"] == 0.9 and bench.WORKLOADS[spec]["workload"] == letter


def test_configured_key_cache_is_cassandras_default_for_the_heap_unless_set():
    assert bench.configured_key_cache({}, "1G") == 51
    assert bench.configured_key_cache({}, "4G") == 100
    assert bench.configured_key_cache({"key_cache_size": ""}, "512M") == 25
    assert bench.configured_key_cache({"key_cache_size": "0MiB"}, "1G") == 0
    assert bench.configured_key_cache({"key_cache_size": "64MiB"}, "1G") == 64


@pytest.mark.parametrize("found, set_back", [(206, [51]), (51, [])])
def test_defaults_key_cache_sets_back_only_what_a_run_before_left(monkeypatch, found, set_back):
    node = types.SimpleNamespace(name="bench-cassandra1")
    said, set_to = [], []
    monkeypatch.setattr(bench._shape, "node_settings", lambda _node: ({}, "1G"))
    monkeypatch.setattr(bench, "cache_capacities", lambda _node: (found, 16, 0))
    monkeypatch.setattr(bench, "set_key_cache", lambda value, _node: set_to.append(value))
    assert bench.defaults_key_cache(node, log=said.append) == 51
    assert set_to == set_back
    assert len(said) == len(set_back)
    assert all("%d MiB found" % found in text and "configured 51 MiB" in text for text in said)


def test_descendants_are_found_below_the_process_and_zombies_left_out(tmp_path):
    for pid, parent, state in ((10, 1, "S"), (11, 10, "S"), (12, 11, "S"), (13, 10, "Z"), (14, 2, "S")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text("%d (java (x)) %s %d 0 0\n" % (pid, state, parent))
    (tmp_path / "self").mkdir()
    assert bench._shape.descendants(10, proc=str(tmp_path)) == [11, 12]


def test_the_knob_designs_take_the_disk_caps_and_refuse_bad_ones_by_name(capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(["--workloads", "e,f", "--disk-read-iops", "-1"])
    assert "--disk-read-iops" in capsys.readouterr().err
    args = bench.parse_args(["--workloads", "e,f", "--disk-read-iops", "1200"])
    assert (args.workloads, args.disk_read_iops, args.disk_read_limit) == (["e", "f"], 1200, None)


def test_a_window_carries_the_groups_page_cache_and_anonymous_memory(monkeypatch):
    # A row cache's memory stays in the process after the cache shrinks: the window says what the page cache got.
    class FakeGroup:
        def stats(self):
            return {"exists": True, "cache": 600 * 1048576, "anon": 1500 * 1048576}

    sampler = bench.Sampler.__new__(bench.Sampler)
    sampler.pid, sampler.group, sampler.device = 4242, FakeGroup(), None
    monkeypatch.setattr(bench._shape, "io_counters", lambda pid: {"read_bytes": 0, "write_bytes": 0})
    monkeypatch.setattr(bench._shape, "disk_counters", lambda device: {})
    monkeypatch.setattr(bench.process, "cpu_seconds", lambda pid: 1.0)
    monkeypatch.setattr(bench.loaddriver, "machine_busy_seconds", lambda: 2.0)
    start = sampler.sample()
    end = dict(start, t=start["t"] + 60.0)
    record = bench.window_record("A", start, end, [], [])
    assert (record["cache_mb"], record["anon_mb"]) == (600, 1500)
    # A sample of an older run, without the field, still makes a window.
    end.pop("anon_mb")
    assert bench.window_record("A", start, end, [], [])["anon_mb"] is None


def test_disk_caps_hold_for_the_block_and_are_lifted_on_the_nodes_not_stopped(monkeypatch):
    calls = []
    monkeypatch.setattr(bench._shape, "node_running", lambda node: True)
    monkeypatch.setattr(
        bench._shape, "playbook", lambda name, node, extra_vars=None: calls.append((node.name, extra_vars))
    )
    bench_node, latest = bench._shape.BENCH_NODE, bench._shape.LATEST_NODE
    stopping = []
    with bench._shape.disk_caps([bench_node, latest], iops=1200, log=lambda *a: None, stopping=stopping):
        assert bench._shape.RUN_VARS[latest.name]["cassandra_node_disk_read_iops"] == 1200
        stopping.append(latest)  # started inside the block, stopped by the caller after it
    # Lifted live on the node that stays; the stopped node's caps are forgotten with it.
    assert calls[-1] == (bench_node.name, {"cassandra_node_disk_read_limit": "", "cassandra_node_disk_read_iops": 0})
    assert len(calls) == 3 and bench._shape.RUN_VARS == {}
    # No cap asked: nothing done.
    with bench._shape.disk_caps([bench_node], log=lambda *a: None):
        pass
    assert len(calls) == 3


def test_the_allocator_is_refused_by_name_held_for_every_start_and_restored(monkeypatch, tmp_path, capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(["--workloads", "f", "--jemalloc", "yes"])
    assert "--jemalloc: 'yes' is not allowed" in capsys.readouterr().err
    library = tmp_path / "libjemalloc.so.2"
    library.write_bytes(b"")
    assert bench.parse_args(["--workloads", "f", "--jemalloc", str(library)]).jemalloc == str(library)
    monkeypatch.setattr(bench._shape.cdaemon, "JEMALLOC_DIRS", (str(tmp_path / "none"),))
    with pytest.raises(SystemExit):
        bench.parse_args(["--workloads", "f", "--jemalloc", "auto"])
    assert "found no libjemalloc" in capsys.readouterr().err

    calls = []
    monkeypatch.setattr(bench._shape, "node_running", lambda node: True)
    monkeypatch.setattr(bench._shape, "server_pid", lambda node: 4242)
    monkeypatch.setattr(bench._shape, "preloaded", lambda pid: None)
    monkeypatch.setattr(
        bench._shape,
        "run_playbook",
        lambda path, inventory, extra_vars=None: calls.append(extra_vars) or types.SimpleNamespace(returncode=0),
    )
    monkeypatch.setattr(bench._shape, "RUN_VARS", {})
    node = bench._shape.BENCH_NODE
    with bench._shape.disk_caps([node], iops=1200, log=lambda *a: None):
        with bench._shape.allocator([node], "auto", log=lambda *a: None):
            # The restart with it, and every later start of the node (a cap change here) keeps it with the caps.
            bench._shape.playbook("lab_up.yml", node, extra_vars={"x": 1})
    assert calls[1]["cassandra_node_jemalloc"] == "auto" and calls[1]["cassandra_node_disk_read_iops"] == 1200
    assert calls[2]["cassandra_node_jemalloc"] == "auto" and calls[2]["x"] == 1
    # Restarted as the inventory says when the block ends (the caps still held), then the caps lifted.
    assert "cassandra_node_jemalloc" not in calls[3] and calls[3]["cassandra_node_disk_read_iops"] == 1200
    assert calls[4]["cassandra_node_disk_read_iops"] == 0 and bench._shape.RUN_VARS == {}
    # off: nothing done.
    calls.clear()
    with bench._shape.allocator([node], "off", log=lambda *a: None):
        pass
    assert calls == []
