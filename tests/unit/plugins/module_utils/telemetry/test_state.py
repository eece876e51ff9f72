"""The ``state`` of a workload sample (telemetry/samples.py STATE_FIELDS): its validation, its aggregation across
nodes, how observe reduces a node's readings over the window (telemetry/observer.py), and its way through the
history store (telemetry/history.py)."""

from __future__ import annotations

import json
import sqlite3

import pytest
import testlib

from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history, samples
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import observer as observe
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.samples import (
    STATE_FIELDS,
    SampleError,
    aggregate_state,
    new_sample,
    validate_sample,
)


def Clock():
    return testlib.Clock(1_700_000_000.0)


def cassandra_sample(state=None, node="127.0.0.1:9042", time=1_700_000_030.0):
    return new_sample("cassandra", "lab", node, time, 30, {"read": 10.0, "update": 5.0}, state=state)


# ---------------------------------------------------------------------------------------------------------------
# The schema
# ---------------------------------------------------------------------------------------------------------------


def test_a_sample_without_state_stays_valid():
    sample = new_sample("cassandra", "lab", "127.0.0.1:9042", 1.0, 30, {"read": 1.0})
    assert "state" not in sample
    assert validate_sample(json.loads(json.dumps(sample))) == sample


def test_new_sample_gives_every_field_of_the_store_null_unless_told():
    sample = cassandra_sample({"pending_compactions": 3, "sstables_per_read": 1.5})
    assert list(sample["state"]) == list(STATE_FIELDS["cassandra"])
    assert sample["state"]["pending_compactions"] == 3 and sample["state"]["sstables_per_read"] == 1.5
    assert sample["state"]["live_sstables"] is None and sample["state"]["key_cache_fill"] is None
    redis = new_sample("redis", "lab", "127.0.0.1:6381", 1.0, 30, {}, state={"memory_fill": 1.2})
    assert set(redis["state"]) == set(STATE_FIELDS["redis"]) and redis["state"]["memory_fill"] == 1.2


def test_every_store_has_its_fields_and_every_field_a_known_rule():
    assert set(STATE_FIELDS) == set(samples.STORES)
    for fields in STATE_FIELDS.values():
        for spec in fields.values():
            assert spec.kind in ("count", "number")
            assert spec.window in ("peak", "last", "rate")
            assert spec.cluster in ("sum", "max", "mean")
    cassandra = STATE_FIELDS["cassandra"]
    assert cassandra["pending_compactions"].cluster == "sum" and cassandra["sstables_per_read"].cluster == "max"
    assert cassandra["chunk_cache_fill"].cluster == "mean"


@pytest.mark.parametrize(
    ("store", "state", "message"),
    [
        (
            "cassandra",
            {"compaction_backlog": 1},
            r"^state: unknown key compaction_backlog; allowed for cassandra: pending_compactions, "
            r"pending_compaction_bytes, .*chunk_cache_fill$",
        ),
        ("redis", {"pending_compactions": 1}, r"^state: unknown key pending_compactions; allowed for redis: rdb_"),
        ("cassandra", {"pending_compactions": -1}, r"^state.pending_compactions: -1 is below 0"),
        ("cassandra", {"pending_flushes": 1.5}, r"^state.pending_flushes: 1.5 is not a whole number >= 0 or null"),
        ("cassandra", {"live_sstables": True}, r"^state.live_sstables: True is not a whole number"),
        ("cassandra", {"sstables_per_read": "2"}, r"^state.sstables_per_read: '2' is not a number or null"),
        ("cassandra", {"key_cache_fill": float("nan")}, r"^state.key_cache_fill: nan is not a finite number"),
        ("mongodb", {"wiredtiger_cache_fill": -0.1}, r"^state.wiredtiger_cache_fill: -0.1 is below 0"),
    ],
)
def test_bad_state_names_the_field_and_what_is_allowed(store, state, message):
    node = {"cassandra": "127.0.0.1:9042", "redis": "127.0.0.1:6381", "mongodb": "127.0.0.1:27017"}[store]
    with pytest.raises(SampleError, match=message):
        new_sample(store, "lab", node, 1.0, 30, {}, state=state)
    sample = new_sample(store, "lab", node, 1.0, 30, {})
    sample["state"] = state
    with pytest.raises(SampleError, match=message):
        validate_sample(sample)


def test_state_must_be_a_mapping():
    sample = cassandra_sample()
    sample["state"] = [1, 2]
    with pytest.raises(SampleError, match=r"^state: \[1, 2\] is not a mapping; keys for cassandra: pending_comp"):
        validate_sample(sample)


def test_a_fill_may_pass_one_when_the_store_runs_over_its_limit():
    sample = new_sample("redis", "lab", "127.0.0.1:6381", 1.0, 30, {}, state={"memory_fill": 1.04})
    assert sample["state"]["memory_fill"] == 1.04


# ---------------------------------------------------------------------------------------------------------------
# Aggregation across nodes
# ---------------------------------------------------------------------------------------------------------------


def test_aggregate_sums_backlogs_takes_the_worst_sstables_per_read_and_the_mean_fill():
    nodes = [
        {"pending_compactions": 2, "pending_flushes": 0, "sstables_per_read": 1.0, "key_cache_fill": 0.5},
        {"pending_compactions": 5, "pending_flushes": 1, "sstables_per_read": 3.0, "key_cache_fill": 0.25},
        {"pending_compactions": 0, "pending_flushes": 0, "sstables_per_read": 2.0, "key_cache_fill": None},
    ]
    cluster = aggregate_state("cassandra", nodes)
    assert cluster["pending_compactions"] == 7 and isinstance(cluster["pending_compactions"], int)
    assert cluster["pending_flushes"] == 1
    assert cluster["sstables_per_read"] == 3.0
    assert cluster["key_cache_fill"] == pytest.approx(0.375)  # the nodes that report it
    assert cluster["live_sstables"] is None  # no node reports it
    assert set(cluster) == set(STATE_FIELDS["cassandra"])


def test_a_sum_with_a_node_missing_is_unknown_not_a_smaller_total():
    cluster = aggregate_state("cassandra", [{"pending_compactions": 4}, {"pending_compactions": None}, None])
    assert cluster["pending_compactions"] is None


def test_redis_aggregate():
    nodes = [
        {"rdb_bgsave_in_progress": 1, "evictions_per_s": 2.5, "mem_fragmentation_ratio": 1.1, "memory_fill": 0.9},
        {"rdb_bgsave_in_progress": 0, "evictions_per_s": 0.5, "mem_fragmentation_ratio": 1.6, "memory_fill": 0.7},
    ]
    cluster = aggregate_state("redis", nodes)
    assert cluster["rdb_bgsave_in_progress"] == 1 and cluster["evictions_per_s"] == 3.0
    assert cluster["mem_fragmentation_ratio"] == 1.6 and cluster["memory_fill"] == pytest.approx(0.8)


# ---------------------------------------------------------------------------------------------------------------
# Observe: readings over the window
# ---------------------------------------------------------------------------------------------------------------


def test_node_state_takes_the_peak_of_backlogs_and_the_last_of_the_rest():
    readings = [
        {"pending_compactions": 0, "pending_flushes": 2, "key_cache_fill": 0.1},
        {"pending_compactions": 4, "pending_flushes": 0, "key_cache_fill": 0.2},
        {"pending_compactions": 1, "pending_flushes": 0, "key_cache_fill": None},
    ]
    state = observe.node_state("cassandra", readings, {"live_sstables": 12, "sstables_per_read": 2.0})
    assert state["pending_compactions"] == 4 and state["pending_flushes"] == 2
    assert state["key_cache_fill"] == 0.2  # the newest reading that has a value
    assert state["live_sstables"] == 12 and state["sstables_per_read"] == 2.0
    assert state["row_cache_fill"] is None and state["pending_compactions_estimated"] is None


def test_node_state_rate_fields_come_from_the_window_counter_rate():
    state = observe.node_state("redis", [{"memory_fill": 0.5}], rates={"evicted_keys": 12.5})
    assert state["evictions_per_s"] == 12.5
    assert observe.node_state("redis", [{}], rates={})["evictions_per_s"] is None


def _state_probe(node, clock, backlog, final=None, fail=False):
    """A Cassandra probe whose pending compactions follow backlog(elapsed) and whose final readings are final."""
    start = clock.now
    calls = {"final_at": None}

    def snapshot():
        elapsed = clock.now - start
        return {
            "counters": {"read": 100 * elapsed, "write": 50 * elapsed},
            "gauges": {"data_bytes": 1000},
            "state": {"pending_compactions": backlog(elapsed), "pending_flushes": 0, "chunk_cache_fill": 0.5},
        }

    def final_state():
        calls["final_at"] = clock.now
        if fail:
            raise RuntimeError("nodetool tablestats on 127.0.0.1:7199 failed (exit 1): Connection refused")
        return dict(final or {})

    return observe.Probe(node, snapshot, final_state=final_state), calls


def test_observe_puts_the_state_in_every_sample_and_the_cluster():
    clock = Clock()
    one, calls = _state_probe(
        "127.0.0.1:9042", clock, lambda t: 3 if t == 10 else 0, {"live_sstables": 4, "sstables_per_read": 1.0}
    )
    two, _calls = _state_probe("127.0.0.2:9042", clock, lambda t: 1, {"live_sstables": 6, "sstables_per_read": 2.0})
    result = observe.observe([one, two], "cassandra", "lab", duration=30, interval=5, clock=clock, sleep=clock.sleep)
    first, second = result["samples"]
    assert first["state"]["pending_compactions"] == 3  # a backlog seen at one reading of the window
    assert second["state"]["pending_compactions"] == 1
    assert first["state"]["live_sstables"] == 4 and first["state"]["chunk_cache_fill"] == 0.5
    cluster = result["aggregate"]["state"]
    assert cluster["pending_compactions"] == 4 and cluster["live_sstables"] == 10
    assert cluster["sstables_per_read"] == 2.0 and cluster["chunk_cache_fill"] == 0.5
    assert calls["final_at"] == first["time"]  # read once the window is over
    assert any("state pending_compactions 3" in line for line in observe.summary(result))


def test_a_failed_final_reading_leaves_its_fields_null_and_says_why():
    clock = Clock()
    probe, _calls = _state_probe("127.0.0.1:9042", clock, lambda t: 0, fail=True)
    result = observe.observe([probe], "cassandra", "lab", duration=10, interval=5, clock=clock, sleep=clock.sleep)
    sample = result["samples"][0]
    assert sample["state"]["live_sstables"] is None and sample["state"]["sstables_per_read"] is None
    assert sample["state"]["pending_compactions"] == 0  # the CQL readings still count
    assert sample["extra"]["state_error"].startswith("RuntimeError: nodetool tablestats on 127.0.0.1:7199 failed")
    assert any("state not read: RuntimeError" in line for line in observe.summary(result))
    assert result["aggregate"]["state"]["live_sstables"] is None


def test_a_probe_without_state_gives_a_null_state():
    clock = Clock()

    def snapshot():
        return {"counters": {"read": 10 * (clock.now - 1_700_000_000.0)}, "gauges": {}}

    probe = observe.Probe("127.0.0.1:27017", snapshot)
    result = observe.observe([probe], "mongodb", "lab", duration=10, interval=5, clock=clock, sleep=clock.sleep)
    assert result["samples"][0]["state"] == dict.fromkeys(STATE_FIELDS["mongodb"])
    assert result["aggregate"]["state"] == dict.fromkeys(STATE_FIELDS["mongodb"])


def test_the_final_readings_of_several_nodes_run_side_by_side():
    clock = Clock()
    probes = [_state_probe("127.0.0.%d:9042" % i, clock, lambda t: 0, {"live_sstables": i})[0] for i in (1, 2, 3)]
    result = observe.observe(probes, "cassandra", "lab", duration=10, interval=5, clock=clock, sleep=clock.sleep)
    assert [s["state"]["live_sstables"] for s in result["samples"]] == [1, 2, 3]
    assert result["aggregate"]["state"]["live_sstables"] == 6


# ---------------------------------------------------------------------------------------------------------------
# History
# ---------------------------------------------------------------------------------------------------------------


def test_state_is_stored_and_read_back(tmp_path):
    path = str(tmp_path / "history.sqlite3")
    with_state = cassandra_sample({"pending_compactions": 2, "sstables_per_read": 1.5, "key_cache_fill": 0.25})
    with history.SQLiteHistory(path) as store:
        assert store.add_sample(with_state)
        assert store.add_sample(with_state) is False  # the very same sample
        back = store.samples(cluster="lab")
    assert back == [with_state]
    assert back[0]["state"]["pending_compactions"] == 2 and back[0]["state"]["live_sstables"] is None


def test_a_history_written_before_state_reads_as_it_was_next_to_new_samples(tmp_path):
    # A file as the collection wrote it before samples had a state: schema version 1, a sample without one.
    path = str(tmp_path / "old.sqlite3")
    old = new_sample("cassandra", "lab", "127.0.0.1:9042", 1_700_000_000.0, 30, {"read": 10.0})
    with history.SQLiteHistory(path):
        pass
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO samples (schema, store, cluster, node, time, window_s, config_id, json)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (old["schema"], "cassandra", "lab", old["node"], old["time"], 30.0, None, json.dumps(old)),
        )
    new = cassandra_sample({"pending_compactions": 1})
    with history.SQLiteHistory(path) as store:
        assert store.schema_version == history.SCHEMA_VERSION == 1  # the state needs no migration
        store.add_sample(new)
        back = store.samples(cluster="lab")
    assert back == [old, new]
    assert "state" not in back[0] and back[1]["state"]["pending_compactions"] == 1
    with history.SQLiteHistory(path, readonly=True) as store:
        assert len(store.samples()) == 2


def test_the_history_refuses_a_bad_state_naming_the_sample(tmp_path):
    good = cassandra_sample({"pending_compactions": 1})
    bad = cassandra_sample(node="127.0.0.2:9042")
    bad["state"] = {"pending_compactions": -3}
    with history.SQLiteHistory(str(tmp_path / "h.sqlite3")) as store:
        with pytest.raises(SampleError, match=r"^samples\[1\]\.state.pending_compactions: -3 is below 0"):
            store.add_samples([good, bad])
        assert store.samples() == []


def test_redis_evictions_are_a_rate_over_the_window_and_replicas_count_in_the_state():
    clock = Clock()
    start = clock.now

    def node(evicted_per_s, fill):
        def snapshot():
            elapsed = clock.now - start
            return {
                "counters": {"read": 10 * elapsed, "evicted_keys": evicted_per_s * elapsed},
                "gauges": {},
                "state": {"memory_fill": fill, "rdb_bgsave_in_progress": 0},
            }

        return snapshot

    master = observe.Probe("127.0.0.1:6381", node(4.0, 0.9))
    replica = observe.Probe("127.0.0.1:6384", node(0.0, 0.7), counted=False)
    result = observe.observe([master, replica], "redis", "lab", duration=10, interval=5, clock=clock, sleep=clock.sleep)
    assert result["samples"][0]["state"]["evictions_per_s"] == pytest.approx(4.0)
    assert result["samples"][1]["state"]["evictions_per_s"] == 0.0
    cluster = result["aggregate"]["state"]
    assert cluster["evictions_per_s"] == pytest.approx(4.0) and cluster["memory_fill"] == pytest.approx(0.8)
    assert cluster["rdb_bgsave_in_progress"] == 0 and cluster["mem_fragmentation_ratio"] is None
