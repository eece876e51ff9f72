"""Resources read on the node itself (resources.measure_node / window_usage) and put into observe's samples
(observer.apply_node_usage, the deferred write of observer.complete)."""

from __future__ import annotations

import pytest
from test_observe import Clock, counting_probe

from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history, resources
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import observer as observe

TOTAL = 8 * 1024**3


def reading(t, busy, idle, used, process=None):
    """A node_usage reading at t: busy and idle ticks so far, used bytes of memory."""
    cpu = dict.fromkeys(resources.CPU_FIELDS, 0)
    cpu.update(user=busy, idle=idle)
    return {
        "t": t,
        "cpu": cpu,
        "mem": {"mem_bytes": used, "mem_pct": 100.0 * used / TOTAL, "mem_total_bytes": TOTAL},
        "process_cpu_s": process,
    }


def usage(node, start, seconds, busy_share=0.25, process_share=None, step=1.0):
    """node_usage's result: readings every step seconds from start, the CPU busy_share of the time."""
    snaps = []
    for i in range(int(seconds / step) + 1):
        t = start + i * step
        ticks = 100 * i * step
        snaps.append(
            reading(
                t,
                int(ticks * busy_share),
                int(ticks * (1 - busy_share)),
                2 * 1024**3,
                None if process_share is None else process_share * i * step,
            )
        )
    return {
        "node": node,
        "snapshots": snaps,
        "disk": {"disk_bytes": 10, "disk_pct": 1.0, "disk_total_bytes": 1000},
        "cpus": 4,
    }


def test_window_usage_takes_the_readings_of_the_window():
    measured = usage("n1", 1000.0, 40, busy_share=0.25, process_share=0.5)
    found, process, why = resources.window_usage(measured, 1005.0, 1035.0)
    assert why is None
    assert found["cpu_pct"] == pytest.approx(25.0, abs=0.5)
    assert found["mem_bytes"] == 2 * 1024**3 and found["disk_pct"] == 1.0
    assert process == pytest.approx(50.0)


def test_window_usage_refuses_readings_that_miss_the_window():
    measured = usage("n1", 1000.0, 10)
    found, process, why = resources.window_usage(measured, 1005.0, 1035.0)
    assert found is None and process is None
    assert "cover 17 % of the window" in why and "clocks" in why


def test_window_usage_bridges_a_gap_in_the_readings_with_the_readings_around_the_window():
    """A node too busy to read on time: readings at 10.6 and 12.7 inside a 4 s window, the next at 16.0. The
    readings nearest the edges cover half of it; the ones around it cover all of it in a span of 5.4 s."""
    measured = usage("n1", 1000.0, 40, busy_share=0.25, process_share=0.5, step=0.1)
    measured["snapshots"] = [s for s in measured["snapshots"] if s["t"] <= 1012.7 + 1e-9 or s["t"] >= 1016.0 - 1e-9]
    found, process, why = resources.window_usage(measured, 1010.7, 1014.7)
    assert why is None
    assert found["cpu_pct"] == pytest.approx(25.0, abs=0.5) and process == pytest.approx(50.0)
    # A gap too wide for the window (the readings inside span under half of it, and the window is under half of
    # the span around it) is still refused.
    measured["snapshots"] = [s for s in measured["snapshots"] if s["t"] <= 1012.0 + 1e-9 or s["t"] >= 1020.0 - 1e-9]
    found, process, why = resources.window_usage(measured, 1010.7, 1014.7)
    assert found is None and "cover 32 % of the window" in why


def test_window_usage_takes_late_readings_inside_the_window_when_the_node_read_before_and_after_it():
    """Readings at 11.4 and 14.3 inside the window 11.0 to 15.0, the others at 8.0 and 18.0: the ones inside
    cover 72 % of it, the span around it is 10 s, and the node was reading all through the window."""
    measured = usage("n1", 1000.0, 40, busy_share=0.25, process_share=0.5, step=0.1)
    keep = (1008.0, 1011.4, 1014.3, 1018.0)
    measured["snapshots"] = [s for s in measured["snapshots"] if any(abs(s["t"] - t) < 1e-6 for t in keep)]
    found, process, why = resources.window_usage(measured, 1011.0, 1015.0)
    assert why is None
    assert found["cpu_pct"] == pytest.approx(25.0, abs=0.5) and process == pytest.approx(50.0)
    # Without the reading after the window, the node may have stopped measuring in it: refused.
    measured["snapshots"] = measured["snapshots"][:-1]
    found, process, why = resources.window_usage(measured, 1011.0, 1015.0)
    assert found is None and "cover 72 % of the window" in why


def test_measure_node_reads_this_machine(tmp_path):
    clock = Clock()
    measured = resources.measure_node(3.0, 1.0, data_dir=str(tmp_path), clock=clock, sleep=clock.sleep)
    assert len(measured["snapshots"]) == 4 and measured["disk"]["disk_total_bytes"] > 0
    assert measured["pid"] is None and measured["cpus"] >= 1


def test_measure_node_names_a_bad_field(tmp_path):
    with pytest.raises(resources.ReadingError, match=r"^data_dir: .* is not a directory on this node"):
        resources.measure_node(1.0, data_dir=str(tmp_path / "none"))
    with pytest.raises(resources.ReadingError, match=r"^pid_file: .* holds no process ID on this node"):
        resources.measure_node(1.0, pid_file=str(tmp_path / "none.pid"))


def _probes(clock):
    probes = [
        counting_probe("10.0.0.1:6379", clock, {"read": 90.0, "update": 10.0}),
        counting_probe("10.0.0.2:6379", clock, {"read": 45.0, "update": 5.0}),
    ]
    probes[0].host, probes[1].host = "cache1", "cache2"
    return probes


def test_deferred_observation_is_written_with_each_nodes_own_resources(tmp_path):
    clock = Clock()
    start = clock.now
    store = history.open_history(str(tmp_path / "h.sqlite3"))
    result = observe.observe(
        _probes(clock),
        "redis",
        "prod",
        duration=30,
        interval=5,
        history=store,
        clock=clock,
        sleep=clock.sleep,
        defer=True,
    )
    assert store.samples() == [] and set(result["pending"]["hosts"].values()) == {"cache1", "cache2"}
    readings = [usage("cache1", start - 2, 40, 0.25, 0.1), usage("cache2", start - 1, 40, 0.75)]
    # As async_status registers them: the module's result beside Ansible's own keys.
    readings = [dict(r, finished=1, ansible_job_id="j%d" % i, item=r["node"]) for i, r in enumerate(readings)]
    written = observe.complete(result["pending"], readings, history=store)
    one, two = written["samples"]
    assert one["resources"]["cpu_pct"] == pytest.approx(25.0, abs=0.5)
    assert two["resources"]["cpu_pct"] == pytest.approx(75.0, abs=0.5)
    assert one["extra"]["resources_from"] == "node cache1" and one["extra"]["process_cpu_pct"] == pytest.approx(10.0)
    assert written["aggregate"]["resources"]["cpu_pct"] == pytest.approx(50.0, abs=0.5)
    kept = store.samples(cluster="prod")
    assert len(kept) == 3 and {s["resources"]["cpu_pct"] is not None for s in kept} == {True}
    assert store.load_state("rate_tracker/redis/prod/10.0.0.1:6379") is not None
    store.close()


def test_a_failed_or_late_reading_leaves_null_resources_and_says_why():
    clock = Clock()
    start = clock.now
    result = observe.observe(
        _probes(clock), "redis", "prod", duration=30, interval=5, clock=clock, sleep=clock.sleep, defer=True
    )
    failed = {"node": "cache1", "failed": True, "msg": "pid_file: /run/x.pid holds no process ID on this node"}
    late = usage("cache2", start + 25, 40)
    written = observe.complete(result["pending"], [failed, late])
    one, two = written["samples"]
    assert one["resources"]["cpu_pct"] is None and "holds no process ID" in one["extra"]["resources_error"]
    assert two["resources"]["cpu_pct"] is None and "cover" in two["extra"]["resources_error"]


def test_readings_of_an_unknown_node_are_refused():
    clock = Clock()
    result = observe.observe(
        _probes(clock), "redis", "prod", duration=10, interval=5, clock=clock, sleep=clock.sleep, defer=True
    )
    with pytest.raises(observe.ObserveError, match=r"^node_usage: cache9 is no node of this observation"):
        observe.complete(result["pending"], [usage("cache9", clock.now - 10, 20)])
    with pytest.raises(observe.ObserveError, match=r"^node_usage\[0\]\.snapshots: missing or empty"):
        observe.complete(result["pending"], [{"node": "cache1"}])
    with pytest.raises(observe.ObserveError, match=r"^pending\.trackers: missing"):
        observe.complete({k: v for k, v in result["pending"].items() if k != "trackers"}, [])


def test_a_reading_registered_with_failed_when_false_counts_as_failed():
    clock = Clock()
    result = observe.observe(
        _probes(clock), "redis", "prod", duration=10, interval=5, clock=clock, sleep=clock.sleep, defer=True
    )
    quiet = {"item": "cache1", "failed": False, "finished": 1, "msg": "cache1: cannot be read on this node: EACCES"}
    written = observe.complete(result["pending"], [quiet, usage("cache2", clock.now - 12, 20)])
    assert "EACCES" in written["samples"][0]["extra"]["resources_error"]
    assert written["samples"][1]["resources"]["cpu_pct"] is not None


def test_pending_travels_packed_and_a_damaged_record_is_refused():
    clock = Clock()
    result = observe.observe(
        _probes(clock), "redis", "cassandra", duration=10, interval=5, clock=clock, sleep=clock.sleep, defer=True
    )
    packed = observe.pack_pending(result["pending"])
    # A no_log value equal to the cluster's name would be masked in a plain mapping, never inside the record.
    assert "cassandra" not in packed and packed.startswith(observe.PENDING_PREFIX)
    assert observe.unpack_pending(packed) == result["pending"]
    with pytest.raises(observe.ObserveError, match=r"^pending: the record is damaged"):
        observe.unpack_pending(packed[:-8] + "********")
    with pytest.raises(observe.ObserveError, match=r"^pending: not the pending result of a deferred observe"):
        observe.unpack_pending({"store": "redis"})


def test_the_state_a_node_read_of_itself_fills_the_fields_nothing_else_reported():
    sample = {"state": {"live_sstables": None, "sstables_per_read": None, "pending_compactions": 3}, "extra": {}}
    entry = {"state": {"live_sstables": 12, "sstables_per_read": 2.0, "pending_compactions": 9, "unknown": 1}}
    observe._apply_node_state(sample, entry)
    # the window's own readings stand; a field the sample does not have is no field of its store
    assert sample["state"] == {"live_sstables": 12, "sstables_per_read": 2.0, "pending_compactions": 3}
    failed = {"state": {"live_sstables": None}, "extra": {}}
    observe._apply_node_state(failed, {"state_error": "CassandraServerError: nodetool exited 1"})
    assert failed["state"]["live_sstables"] is None and "nodetool exited 1" in failed["extra"]["state_error"]


def test_why_a_nodes_state_is_missing_travels_through_the_deferred_write():
    clock = Clock()
    start = clock.now
    result = observe.observe(
        _probes(clock), "redis", "prod", duration=10, interval=5, clock=clock, sleep=clock.sleep, defer=True
    )
    failed = dict(usage("cache2", start - 2, 20), state_error="CassandraServerError: no JMX on 127.0.0.1:7199")
    written = observe.complete(result["pending"], [usage("cache1", start - 2, 20), failed])
    first, second = written["samples"]
    assert "state_error" not in first["extra"] and "no JMX" in second["extra"]["state_error"]
    assert second["resources"]["cpu_pct"] is not None  # the resources read stand
