from __future__ import annotations

import copy
import json
import os

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TelemetryError
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.rates import RateTracker, window_label
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.resources import (
    cpu_split,
    disk_usage,
    memory_usage,
    parse_meminfo,
    parse_proc_stat,
    read_proc_stat,
    sample_resources,
)
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.samples import (
    OPS,
    RESOURCES,
    SAMPLE_SCHEMA,
    SampleError,
    new_sample,
    validate_sample,
)

# ---------------------------------------------------------------------------------------------------------------
# Counters to rates
# ---------------------------------------------------------------------------------------------------------------


def tracker_with(times, counters_at, **options):
    tracker = RateTracker(**options)
    for time in times:
        tracker.add(time, counters_at(time))
    return tracker


def steady_then_faster(t):
    """reads at 7/s throughout; writes at 10/s until t=370, then 100/s."""
    return {"reads": 7 * t, "writes": 10 * min(t, 370) + 100 * max(0, t - 370)}


def test_rates_over_three_windows_are_exact():
    tracker = tracker_with(range(401), steady_then_faster)
    rates = tracker.rates()
    assert list(rates) == ["5s", "30s", "5m"]
    assert rates["5s"]["rates"] == {"reads": 7.0, "writes": 100.0}
    assert rates["30s"]["rates"] == {"reads": 7.0, "writes": 100.0}
    # 5 min from t=100 to t=400: 270 s at 10/s and 30 s at 100/s.
    assert rates["5m"]["rates"] == {"reads": 7.0, "writes": (270 * 10 + 30 * 100) / 300}
    assert rates["5m"]["rates"]["writes"] == 19.0
    for label, window in (("5s", 5.0), ("30s", 30.0), ("5m", 300.0)):
        assert rates[label]["window_s"] == window
        assert rates[label]["span_s"] == window
        assert rates[label]["start"] == 400 - window
        assert rates[label]["end"] == 400
        assert rates[label]["points"] == window + 1
        assert rates[label]["reason"] is None
        assert rates[label]["resets"] == []


def test_windows_are_configurable_and_labelled():
    tracker = tracker_with(range(0, 3601, 60), lambda t: {"ops": 3 * t}, windows=(60, 3600))
    assert list(tracker.rates()) == ["1m", "1h"]
    assert tracker.rate("1h")["rates"] == {"ops": 3.0}
    assert tracker.rate(60)["span_s"] == 60
    assert [window_label(s) for s in (5, 30, 300, 7200, 1.5)] == ["5s", "30s", "5m", "2h", "1.5s"]
    with pytest.raises(TelemetryError, match=r"^window: '30s' is not tracked; allowed: 1m, 1h"):
        tracker.rate("30s")


def test_jittered_snapshots_use_the_actual_span():
    # An Ansible module called every T_d = 30 s never lands exactly 30 s apart.
    times = [0, 31, 59, 92]
    tracker = tracker_with(times, lambda t: {"ops": 4 * t})
    result = tracker.rate(30)
    assert result["start"] == 59
    assert result["span_s"] == 33
    assert result["rates"] == {"ops": 4.0}


def test_counter_reset_counts_the_new_value_as_increase_since_restart():
    def counters(t):
        # 10/s until the restart between t=99 and t=100; 5 counted after it by t=100, then 10/s again.
        return {"ops": 10 * t if t < 100 else 5 + 10 * (t - 100)}

    tracker = tracker_with(range(111), counters)
    result = tracker.rate(30)
    assert result["start"] == 80
    assert result["resets"] == ["ops"]
    assert result["rates"]["ops"] == ((990 - 800) + 105) / 30
    # A window after the restart does not see it.
    assert tracker.rate(5)["resets"] == []
    assert tracker.rate(5)["rates"]["ops"] == 10.0


def test_two_resets_inside_one_window():
    values = [100, 200, 300, 50, 150, 20, 120]  # restarts before the 4th and 6th snapshots
    tracker = RateTracker(windows=(6,))
    for time, value in enumerate(values):
        tracker.add(time, {"ops": value})
    result = tracker.rate(6)
    assert result["resets"] == ["ops"]
    assert result["rates"]["ops"] == ((300 - 100) + 150 + 120) / 6


def test_too_short_history_gives_none_with_a_reason():
    tracker = RateTracker()
    empty = tracker.rate(30)
    assert empty["rates"] == {}
    assert empty["reason"].startswith("too short: no snapshot")
    tracker.add(0, {"ops": 0})
    one = tracker.rate(5)
    assert one["rates"] == {"ops": None}
    assert one["reason"].startswith("too short: 1 snapshot")
    for time in range(1, 11):
        tracker.add(time, {"ops": 2 * time})
    rates = tracker.rates()
    assert rates["5s"]["rates"] == {"ops": 2.0}
    assert rates["30s"]["rates"] == {"ops": None}
    assert rates["30s"]["reason"] == "too short: the snapshots held cover 10s of the 30s window"
    assert rates["5m"]["reason"].startswith("too short")


def test_an_observation_has_a_rate_over_its_own_snapshots_however_late_they_came():
    # A loaded node answered late: snapshots at 0, 3.9 and 8.2 s of a 6.7 s observation, after an older one kept
    # from the last run at -64 s. The window's edge has no snapshot near it; the observation's own span does.
    tracker = tracker_with([-64.0, 0.0, 3.9, 8.2], lambda t: {"ops": 1000 + 10 * t}, windows=(6.7, 300))
    assert tracker.rate(6.7)["reason"].startswith("gap")
    since = tracker.rate(6.7, since=0.0)
    assert since["reason"] is None and since["span_s"] == 8.2 and since["rates"]["ops"] == 10.0
    assert tracker.rate(6.7, since=8.2)["reason"].startswith("too short: no two snapshots since")


def test_gap_gives_none_with_a_reason():
    tracker = tracker_with(list(range(61)) + [100], lambda t: {"ops": t})
    rates = tracker.rates()
    assert rates["30s"]["rates"] == {"ops": None}
    assert rates["30s"]["reason"] == "gap: no snapshot within 6s of t-30s; nearest at t-40s and t-0s"
    assert rates["5s"]["reason"].startswith("gap: no snapshot within 1s of t-5s")
    assert rates["5m"]["reason"].startswith("too short")


def test_a_long_gap_drops_the_old_snapshots():
    tracker = tracker_with(list(range(100)) + [1000], lambda t: {"ops": t})
    assert tracker.snapshots == [(1000, {"ops": 1000})]
    assert tracker.rate(30)["reason"].startswith("too short: 1 snapshot")


def test_counter_new_at_the_end_is_missing():
    tracker = RateTracker(windows=(5,))
    for time in range(6):
        counters = {"ops": 3 * time}
        if time >= 3:
            counters["hits"] = time
        tracker.add(time, counters)
    result = tracker.rate(5)
    assert result["rates"] == {"hits": None, "ops": 3.0}
    assert result["missing"] == ["hits"]


def test_snapshots_are_pruned_to_the_longest_window():
    tracker = tracker_with(range(2000), lambda t: {"ops": t})
    times = [time for time, _values in tracker.snapshots]
    assert times[0] >= 1999 - 300 * 1.2
    assert tracker.rate(300)["rates"] == {"ops": 1.0}
    capped = tracker_with(range(50), lambda t: {"ops": t}, max_snapshots=10)
    assert len(capped.snapshots) == 10


def test_tracker_round_trip_through_a_dict():
    tracker = tracker_with(range(0, 200, 5), steady_then_faster, windows=(5, 30, 120), tolerance=0.1)
    data = json.loads(json.dumps(tracker.to_dict()))
    assert data["schema"] == "tactician.rate_tracker/v1"
    again = RateTracker.from_dict(data)
    assert again.to_dict() == tracker.to_dict()
    assert again.rates() == tracker.rates()
    for time in (200, 205):
        tracker.add(time, steady_then_faster(time))
        again.add(time, steady_then_faster(time))
    assert again.rates() == tracker.rates()
    assert again.windows == [5.0, 30.0, 120.0]
    assert again.tolerance == 0.1


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"schema": "other/v9"}, r"^schema: 'other/v9' is not supported; allowed: tactician.rate_tracker/v1"),
        ({"schema": "tactician.rate_tracker/v1", "windows": []}, r"^windows: give at least one"),
        ({"schema": "tactician.rate_tracker/v1", "tolerance": 1.5}, r"^tolerance: 1.5 must be below 1"),
        (
            {"schema": "tactician.rate_tracker/v1", "snapshots": [[1, {"a": 1}], [1, {"a": 2}]]},
            r"^time: 1 is not after",
        ),
        ({"schema": "tactician.rate_tracker/v1", "snapshots": [[1, {"a": -1}]]}, r"^counters.a: -1 is below 0"),
        ({"schema": "tactician.rate_tracker/v1", "snapshots": [[1]]}, r"^snapshots\[0\]: \[1\] is not"),
    ],
)
def test_tracker_rejects_bad_input_naming_the_field(data, message):
    with pytest.raises(TelemetryError, match=message):
        RateTracker.from_dict(data)


def test_tracker_errors_are_value_errors():
    tracker = RateTracker()
    tracker.add(10, {"ops": 1})
    with pytest.raises(ValueError, match=r"^time: 9 is not after the last snapshot \(10\)"):
        tracker.add(9, {"ops": 2})
    with pytest.raises(ValueError, match=r"^counters.ops: 'x' is not a number"):
        tracker.add(11, {"ops": "x"})


# ---------------------------------------------------------------------------------------------------------------
# CPU, memory, disk
# ---------------------------------------------------------------------------------------------------------------

STAT_BEFORE = """cpu  1000 200 300 5000 100 10 20 0 0 0
cpu0 500 100 150 2500 50 5 10 0 0 0
intr 12345 0 0
ctxt 999
"""
# Deltas of the cpu line: user 30, nice 10, system 15, idle 100, iowait 20, irq 3, softirq 2, steal 20 = 200.
STAT_AFTER = """cpu  1030 210 315 5100 120 13 22 20 7 0
cpu0 515 105 157 2551 60 6 11 10 3 0
intr 12999 0 0
ctxt 1500
"""


def test_cpu_split_from_proc_stat_lines():
    before, after = parse_proc_stat(STAT_BEFORE), parse_proc_stat(STAT_AFTER)
    assert sorted(before) == ["cpu", "cpu0"]
    assert before["cpu"] == {
        "user": 1000,
        "nice": 200,
        "system": 300,
        "idle": 5000,
        "iowait": 100,
        "irq": 10,
        "softirq": 20,
        "steal": 0,
    }
    split = cpu_split(before["cpu"], after["cpu"])
    assert split == {
        "cpu_pct": 40.0,  # user + system + iowait
        "cpu_user_pct": 20.0,  # (30 + 10) / 200
        "cpu_system_pct": 10.0,  # (15 + 3 + 2) / 200
        "cpu_iowait_pct": 10.0,  # 20 / 200
        "cpu_idle_pct": 50.0,
        "cpu_steal_pct": 10.0,
    }
    # The same from the raw lines; one core on its own.
    assert cpu_split(STAT_BEFORE.splitlines()[0], STAT_AFTER.splitlines()[0]) == split
    core = cpu_split(before["cpu0"], after["cpu0"])
    assert core["cpu_user_pct"] == 100.0 * 20 / 100
    assert core["cpu_pct"] == 100.0 * (20 + 9 + 10) / 100


def test_cpu_split_edge_cases():
    idle = cpu_split("cpu 1 0 1 100 0 0 0 0", "cpu 1 0 1 300 0 0 0 0")
    assert idle["cpu_pct"] == 0.0
    assert idle["cpu_idle_pct"] == 100.0
    assert set(cpu_split("cpu 1 0 1 100", "cpu 1 0 1 100").values()) == {None}
    # Old kernels print fewer fields; iowait going backwards counts as 0.
    short = cpu_split("cpu 10 0 10 80", "cpu 40 0 10 110")
    assert short["cpu_user_pct"] == 50.0
    backwards = cpu_split("cpu 0 0 0 0 50 0 0 0", "cpu 50 0 0 50 40 0 0 0")
    assert backwards["cpu_iowait_pct"] == 0.0
    assert backwards["cpu_pct"] == 50.0
    with pytest.raises(TelemetryError, match=r"^cpu: 'intr 1 2' is not a cpu line"):
        cpu_split("intr 1 2", "cpu 1 1 1 1")


MEMINFO = """MemTotal:       16000000 kB
MemFree:         2000000 kB
MemAvailable:    12000000 kB
Buffers:          500000 kB
Cached:          6000000 kB
HugePages_Total:       0
"""


def test_meminfo_and_memory_usage():
    info = parse_meminfo(MEMINFO)
    assert info["MemTotal"] == 16000000 * 1024
    assert info["HugePages_Total"] == 0
    usage = memory_usage(info)
    assert usage == {"mem_bytes": 4000000 * 1024, "mem_pct": 25.0, "mem_total_bytes": 16000000 * 1024}
    old_kernel = {key: value for key, value in info.items() if key != "MemAvailable"}
    assert memory_usage(old_kernel)["mem_bytes"] == (16000000 - 8500000) * 1024
    with pytest.raises(TelemetryError, match=r"^meminfo.MemTotal: missing"):
        memory_usage({})


def test_disk_usage_of_a_path(tmp_path):
    usage = disk_usage(str(tmp_path))
    assert set(usage) == {"disk_bytes", "disk_pct", "disk_total_bytes"}
    assert 0 <= usage["disk_bytes"] <= usage["disk_total_bytes"]
    assert 0 <= usage["disk_pct"] <= 100


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="Linux /proc only")
def test_reads_this_machine():
    cpu = read_proc_stat()["cpu"]
    assert cpu["idle"] > 0
    resources = sample_resources(
        cpu=cpu_split(STAT_BEFORE.splitlines()[0], STAT_AFTER.splitlines()[0]),
        memory=memory_usage(parse_meminfo(MEMINFO)),
        disk=disk_usage("/"),
    )
    assert list(resources) == list(RESOURCES)
    assert resources["cpu_pct"] == 40.0
    assert resources["mem_pct"] == 25.0
    assert "cpu_idle_pct" not in resources


# ---------------------------------------------------------------------------------------------------------------
# The workload sample
# ---------------------------------------------------------------------------------------------------------------


def good_sample():
    return new_sample(
        "cassandra",
        "lab",
        "127.0.0.1:9042",
        1746784800,
        30,
        {"read": 600, "scan": 200, "update": 150, "insert": 50, "other": 7},
        hit_ratio={"key_cache": 0.9, "row_cache": None},
        data_bytes=10**9,
        latency_ms={"read": {"p50": 0.4, "p99": 2.5}},
        resources={"cpu_pct": 55.0, "mem_bytes": 2**30},
        config_id="abc",
        extra={"client": "ycsb"},
    )


def test_new_sample_computes_throughput_and_read_ratio():
    sample = good_sample()
    assert sample["schema"] == SAMPLE_SCHEMA == "tactician.workload_sample/v1"
    assert sample["ops_per_s"] == {
        "read": 600.0,
        "update": 150.0,
        "insert": 50.0,
        "scan": 200.0,
        "delete": 0.0,
        "other": 7.0,
    }
    assert sample["throughput"] == 1007.0
    assert sample["read_ratio"] == 0.8  # (600 + 200) / (600 + 200 + 150 + 50)
    assert sample["latency_ms"] == {"read": {"p50": 0.4, "p95": None, "p99": 2.5, "p999": None}}
    assert list(sample["resources"]) == list(RESOURCES)
    assert sample["resources"]["disk_pct"] is None
    assert sample["time"] == 1746784800.0
    assert validate_sample(json.loads(json.dumps(sample))) == sample


def test_read_ratio_is_none_without_reads_or_writes():
    idle = new_sample("redis", "lab", "cluster", 10, 5, {})
    assert idle["throughput"] == 0.0
    assert idle["read_ratio"] is None
    other_only = new_sample("redis", "lab", "127.0.0.1:6381", 10, 5, {"other": 12})
    assert other_only["read_ratio"] is None
    assert set(OPS) == set(other_only["ops_per_s"])


def mutate(path, value):
    def apply(sample):
        target = sample
        for part in path[:-1]:
            target = target[part]
        if value is DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value

    return apply


DELETE = object()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (mutate(["schema"], "tactician.workload_sample/v2"), r"^schema: .* allowed: tactician.workload_sample/v1"),
        (mutate(["store"], "scylla"), r"^store: 'scylla' is not known; allowed: cassandra, redis, mongodb"),
        (mutate(["cluster"], ""), r"^cluster: '' is not a non-empty string"),
        (mutate(["node"], "127.0.0.1"), r"^node: '127.0.0.1' is not address:port or 'cluster'"),
        (mutate(["time"], "now"), r"^time: 'now' is not a number"),
        (mutate(["window_s"], 0), r"^window_s: 0 must be above 0"),
        (mutate(["ops_per_s", "read"], -1.0), r"^ops_per_s.read: -1.0 is below 0"),
        (mutate(["ops_per_s", "delete"], DELETE), r"^ops_per_s.delete: missing; .*read, update, insert, scan"),
        (mutate(["ops_per_s", "get"], 1.0), r"^ops_per_s: unknown key get; allowed: read, update"),
        (mutate(["throughput"], 5.0), r"^throughput: 5.0 is not the sum of ops_per_s \(1007.0\)"),
        (mutate(["read_ratio"], 0.5), r"^read_ratio: 0.5 is not \(read \+ scan\)"),
        (mutate(["read_ratio"], None), r"^read_ratio: None is not a number"),
        (mutate(["hit_ratio", "key_cache"], 1.5), r"^hit_ratio.key_cache: 1.5 is above 1"),
        (mutate(["data_bytes"], 1.5), r"^data_bytes: 1.5 is not an integer or null"),
        (
            mutate(["latency_ms", "read", "p75"], 1.0),
            r"^latency_ms.read: unknown key p75; allowed: p50, p95, p99, p999",
        ),
        (mutate(["latency_ms", "get"], {}), r"^latency_ms: unknown key get; allowed: read, update"),
        (mutate(["resources", "cpu_pct"], 120.0), r"^resources.cpu_pct: 120.0 is above 100"),
        (mutate(["resources", "mem_bytes"], float("nan")), r"^resources.mem_bytes: nan is not a finite number"),
        (mutate(["resources", "cpu_pct"], DELETE), r"^resources.cpu_pct: missing"),
        (mutate(["config_id"], 7), r"^config_id: 7 is not a non-empty string"),
        (mutate(["extra"], {"when": object()}), r"^extra: not JSON-serialisable"),
        (mutate(["hit_ratio"], [0.5]), r"^hit_ratio: \[0.5\] is not a mapping of cache name to ratio, e.g. key_cache"),
        (mutate(["data_bytes"], DELETE), r"^data_bytes: missing; a sample needs all of"),
        (mutate(["color"], "blue"), r"^color: unknown key; allowed: schema, store"),
    ],
)
def test_validation_errors_name_the_field(change, message):
    sample = copy.deepcopy(good_sample())
    change(sample)
    with pytest.raises(SampleError, match=message):
        validate_sample(sample)


def test_sample_errors_are_value_errors():
    with pytest.raises(ValueError, match=r"^ops_per_s: unknown key reads; allowed: read, update, insert"):
        new_sample("redis", "lab", "cluster", 1, 30, {"reads": 1})
    with pytest.raises(ValueError, match=r"^sample: \[\] is not a mapping"):
        validate_sample([])
