"""Unit tests of a Cassandra node's state (plugins/module_utils/stores/cassandra/state.py) without a server: the
system_views rows and the nodetool outputs recorded from a Cassandra 5.0.9 node under a write load
(tests/fixtures/cassandra/README.md), and small rows made up for the edge cases."""

from __future__ import annotations

import json
import os

import pytest
from testlib import FIXTURES

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import StoreError
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import state
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import samples

FIXTURES = os.path.join(FIXTURES, "cassandra")


def recorded(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return json.load(handle) if name.endswith(".json") else handle.read()


def rows(name):
    return recorded("system_views_%s.json" % name)


# ---------------------------------------------------------------------------------------------------------------
# CQL virtual tables
# ---------------------------------------------------------------------------------------------------------------


def test_state_from_the_recorded_virtual_tables():
    result = state.state_from_rows(rows("thread_pools"), rows("sstable_tasks"), rows("caches"))
    assert set(result) == set(state.CQL_FIELDS)
    pools = {row["name"]: row for row in rows("thread_pools")}
    compaction, flush = pools["CompactionExecutor"], pools["MemtableFlushWriter"]
    assert result["pending_compactions"] == compaction["pending_tasks"] + compaction["active_tasks"]
    assert result["pending_flushes"] == flush["pending_tasks"] + flush["active_tasks"]
    running = [r for r in rows("sstable_tasks") if "compaction" in r["kind"] and r["unit"] == "bytes"]
    assert result["pending_compaction_bytes"] == sum(r["total"] - r["progress"] for r in running)
    caches = {row["name"]: row for row in rows("caches")}
    assert result["key_cache_fill"] == pytest.approx(caches["keys"]["size_bytes"] / caches["keys"]["capacity_bytes"])
    for name, field in (("rows", "row_cache_fill"), ("chunks", "chunk_cache_fill")):
        if name not in caches or not caches[name]["capacity_bytes"]:
            assert result[field] is None  # a cache that is off has no fill
    # The state is valid as a sample's
    samples.validate_state("cassandra", result)


def test_the_recording_was_taken_with_work_in_flight():
    # The recording is worth something only if it shows a backlog: it was taken during a compaction.
    assert any("compaction" in row["kind"] for row in rows("sstable_tasks"))


def test_compactions_in_bytes_count_and_other_tasks_do_not():
    tasks = [
        {"kind": "compaction", "unit": "bytes", "total": 1000, "progress": 250},
        {"kind": "major compaction", "unit": "bytes", "total": 500, "progress": 500},
        {"kind": "tombstone compaction", "unit": "bytes", "total": 300, "progress": 400},  # past its estimate
        {"kind": "index summary redistribution", "unit": "bytes", "total": 9000, "progress": 0},
        {"kind": "compaction", "unit": "keys", "total": 9000, "progress": 0},
    ]
    result = state.state_from_rows([], tasks, [])
    assert result["pending_compaction_bytes"] == 750
    assert result["pending_compactions"] is None and result["pending_flushes"] is None  # pools not listed


def test_cache_fill_is_size_over_capacity_and_null_when_off():
    caches = [
        {"name": "keys", "capacity_bytes": 1000, "size_bytes": 250},
        {"name": "rows", "capacity_bytes": 0, "size_bytes": 0},
        {"name": "counters", "capacity_bytes": 100, "size_bytes": 100},
    ]
    pools = [{"name": "CompactionExecutor", "pending_tasks": 3, "active_tasks": 1}]
    result = state.state_from_rows(pools, [], caches)
    assert result["key_cache_fill"] == 0.25 and result["row_cache_fill"] is None
    assert result["chunk_cache_fill"] is None and result["pending_compactions"] == 4


class Row:
    """A row as the driver gives it: columns as attributes."""

    def __init__(self, **columns):
        self.__dict__.update(columns)


class FakeSession:
    """Answers the SELECTs of workload_counters with recorded rows (as driver rows)."""

    def __init__(self):
        self.queries = []

    def execute(self, query):
        self.queries.append(query)
        table = query.rsplit("system_views.", 1)[1].split()[0]
        if table in ("thread_pools", "sstable_tasks", "caches"):
            return [Row(**row) for row in rows(table)]
        return []


def test_workload_counters_read_the_caches_once_and_add_the_state():
    session = FakeSession()
    snap = cql.workload_counters(session, ["ycsb"])
    assert snap["state"] == state.state_from_rows(rows("thread_pools"), rows("sstable_tasks"), rows("caches"))
    assert sum("system_views.caches" in query for query in session.queries) == 1
    assert snap["counters"]["key_cache_requests"] >= snap["counters"]["key_cache_hits"]
    quiet = FakeSession()
    assert "state" not in cql.workload_counters(quiet, ["ycsb"], with_state=False)
    assert not any("thread_pools" in query for query in quiet.queries)


# ---------------------------------------------------------------------------------------------------------------
# nodetool
# ---------------------------------------------------------------------------------------------------------------


def test_tablestats_json_of_the_observed_keyspaces():
    tables = state.parse_tablestats_json(recorded("nodetool_tablestats_json.txt"), ["ycsb_it"])
    assert tables and {keyspace for keyspace, _table in tables} == {"ycsb_it"}
    usertable = tables[("ycsb_it", "usertable")]
    assert usertable["sstable_count"] >= 1 and usertable["local_read_count"] > 0
    everything = state.parse_tablestats_json(recorded("nodetool_tablestats_json.txt"))
    assert ("ycsb_it", "usertable") in everything
    assert not any(keyspace in state.SYSTEM_KEYSPACES for keyspace, _table in everything)


def test_tablestats_json_after_a_logging_line_on_stdout():
    text = "22:01:33.120 [main] DEBUG o.a.c.tools.NodeProbe -- connected\n" + recorded("nodetool_tablestats_json.txt")
    assert state.parse_tablestats_json(text, ["ycsb_it"]) == state.parse_tablestats_json(
        recorded("nodetool_tablestats_json.txt"), ["ycsb_it"]
    )
    with pytest.raises(state.CassandraStateError, match="not JSON"):
        state.parse_tablestats_json("22:01:33.120 [main] DEBUG nothing else")


def test_tablehistograms_sstables_column():
    histograms = state.parse_tablehistograms(recorded("nodetool_tablehistograms.txt"), ["ycsb_it"])
    usertable = histograms[("ycsb_it", "usertable")]
    assert set(usertable) == {"p50", "p75", "p95", "p98", "p99", "min", "max"}
    assert 0 <= usertable["min"] <= usertable["p50"] <= usertable["p99"] <= usertable["max"]
    assert set(histograms) == {key for key in histograms if key[0] == "ycsb_it"}


def test_tablehistograms_of_a_table_without_sstables():
    text = (
        "No SSTables exists, unable to calculate 'Partition Size' and 'Cell Count' percentiles\n"
        "\n"
        "ks/t histograms\n"
        "Percentile      Read Latency     Write Latency          SSTables    Partition Size        Cell Count\n"
        "                    (micros)          (micros)                             (bytes)                  \n"
        "50%                     0.00             20.50              0.00               NaN               NaN\n"
        "Max                     0.00             35.43              0.00               NaN               NaN\n"
    )
    assert state.parse_tablehistograms(text) == {("ks", "t"): {"p50": 0.0, "max": 0.0}}


def test_compactionstats_pending_tasks():
    assert state.parse_compactionstats(recorded("nodetool_compactionstats.txt")) == 0
    # the node's total, not the per-table line below it, nor the running compaction's row
    assert state.parse_compactionstats(recorded("nodetool_compactionstats_pending.txt")) == 2
    assert state.parse_compactionstats("pending tasks: 7\n- ks.t: 7\n") == 7
    assert state.parse_compactionstats("concurrent compactors    2\npending tasks            12\n") == 12
    assert state.parse_compactionstats("nothing here") is None


def test_state_from_the_recorded_nodetool_outputs():
    tablestats = state.parse_tablestats_json(recorded("nodetool_tablestats_json.txt"), ["ycsb_it"])
    histograms = state.parse_tablehistograms(recorded("nodetool_tablehistograms.txt"), ["ycsb_it"])
    pending = state.parse_compactionstats(recorded("nodetool_compactionstats.txt"))
    result = state.state_from_nodetool(tablestats, histograms, pending)
    assert set(result) == set(state.NODETOOL_FIELDS)
    assert result["live_sstables"] == sum(stats["sstable_count"] for stats in tablestats.values())
    assert result["sstables_per_read"] == histograms[("ycsb_it", "usertable")]["p50"]
    assert result["sstables_per_read_max"] == histograms[("ycsb_it", "usertable")]["max"]
    assert result["pending_compactions_estimated"] == pending
    samples.validate_state("cassandra", result)


def test_sstables_per_read_only_from_tables_that_served_reads():
    tablestats = {
        ("ks", "read"): {"sstable_count": 3, "local_read_count": 10},
        ("ks", "written"): {"sstable_count": 9, "local_read_count": 0},
    }
    histograms = {("ks", "read"): {"p50": 2.0, "max": 4.0}, ("ks", "written"): {"p50": 0.0, "max": 0.0}}
    result = state.state_from_nodetool(tablestats, histograms, None)
    assert result == {
        "pending_compactions_estimated": None,
        "live_sstables": 12,
        "sstables_per_read": 2.0,
        "sstables_per_read_max": 4.0,
    }
    unread = state.state_from_nodetool({("ks", "written"): tablestats[("ks", "written")]}, histograms, 0)
    assert unread["sstables_per_read"] is None and unread["sstables_per_read_max"] is None
    assert unread["live_sstables"] == 9 and unread["pending_compactions_estimated"] == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", r"^nodetool tablestats -F json: not JSON"),
        ("[1]", r"^nodetool tablestats -F json: \[1\] is not a mapping of keyspaces"),
        ('{"ks": {"tables": {"t": {"pending_flushes": 0}}}}', r"^nodetool tablestats -F json: ks.t has no usable"),
    ],
)
def test_bad_tablestats_name_the_command(text, message):
    with pytest.raises(state.CassandraStateError, match=message):
        state.parse_tablestats_json(text)
    assert issubclass(state.CassandraStateError, StoreError)


def _recorded_nodetool(monkeypatch):
    """nodetool answering from the recorded outputs; returns the calls, as (home, host, port, args, jmx_password)."""
    calls = []
    outputs = {
        "tablestats": recorded("nodetool_tablestats_json.txt"),
        "tablehistograms": recorded("nodetool_tablehistograms.txt"),
        "compactionstats": recorded("nodetool_compactionstats.txt"),
    }

    def fake_nodetool(home, host, port, args, **options):
        calls.append((home, host, port, list(args), options.get("jmx_password")))
        return outputs[args[0]]

    monkeypatch.setattr(state, "run_nodetool", fake_nodetool)
    return calls


def test_nodetool_state_runs_three_calls_with_the_keyspaces(monkeypatch):
    calls = _recorded_nodetool(monkeypatch)
    result = state.nodetool_state("/opt/cassandra", "127.0.0.1", 7499, ["ycsb_it"], jmx_password="s3")
    assert [call[3] for call in calls] == [
        ["tablestats", "-F", "json", "ycsb_it"],
        ["tablehistograms"],
        ["compactionstats"],
    ]
    assert all(call[:3] == ("/opt/cassandra", "127.0.0.1", 7499) and call[4] == "s3" for call in calls)
    assert result["live_sstables"] >= 1 and result["sstables_per_read"] is not None


def test_nodetool_state_of_one_table_asks_for_it_alone(monkeypatch):
    calls = _recorded_nodetool(monkeypatch)
    every = state.nodetool_state("/opt/cassandra", "127.0.0.1", 7499, ["ycsb_it"])
    calls.clear()
    one = state.nodetool_state("/opt/cassandra", "127.0.0.1", 7499, tables=[("ycsb_it", "usertable")])
    assert [call[3] for call in calls] == [
        ["tablestats", "-F", "json", "ycsb_it.usertable"],
        ["tablehistograms", "ycsb_it", "usertable"],
        ["compactionstats"],
    ]
    assert one["live_sstables"] <= every["live_sstables"] and one["pending_compactions_estimated"] is not None
    assert state.nodetool_state("/opt/cassandra", "127.0.0.1", 7499, tables=[("nosuch", "table")])["live_sstables"] == 0
