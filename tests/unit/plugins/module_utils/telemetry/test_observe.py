from __future__ import annotations

import json
import os

import pytest
import testlib
from testlib import FIXTURES

from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import client as mongodb
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import observer as observe

FIXTURES = os.path.join(FIXTURES, "mongodb")


def Clock():
    return testlib.Clock(1_700_000_000.0)


def counting_probe(node, clock, per_second, counted=True, gauges=None):
    """A probe whose counters grow at per_second rates with the fake clock."""
    start = clock.now

    def snapshot():
        elapsed = clock.now - start
        return {"counters": {k: v * elapsed for k, v in per_second.items()}, "gauges": dict(gauges or {})}

    return observe.Probe(node, snapshot, counted=counted)


def test_cassandra_rates_read_ratio_hits_and_aggregate():
    clock = Clock()
    rates = {"read": 300.0, "write": 100.0, "scan": 0.0, "key_cache_hits": 240.0, "key_cache_requests": 300.0}
    probes = [
        counting_probe("127.0.0.1:9042", clock, rates, gauges={"data_bytes": 1000}),
        counting_probe("127.0.0.2:9042", clock, rates, gauges={"data_bytes": 500}),
    ]
    result = observe.observe(probes, "cassandra", "lab", duration=30, interval=5, clock=clock, sleep=clock.sleep)
    node = result["samples"][0]
    assert node["ops_per_s"]["read"] == pytest.approx(300.0) and node["ops_per_s"]["update"] == pytest.approx(100.0)
    assert node["read_ratio"] == pytest.approx(0.75) and node["hit_ratio"]["key_cache"] == pytest.approx(0.8)
    assert node["extra"]["windows"]["5s"]["read"] == pytest.approx(300.0)
    assert node["extra"]["windows"]["5m"] is None
    agg = result["aggregate"]
    assert agg["node"] == "cluster" and agg["throughput"] == pytest.approx(800.0) and agg["data_bytes"] == 1500


def test_redis_aggregate_counts_masters_only():
    clock = Clock()
    master = counting_probe("127.0.0.1:6381", clock, {"read": 90.0, "update": 10.0}, counted=True)
    replica = counting_probe("127.0.0.1:6384", clock, {"update": 10.0}, counted=False)
    result = observe.observe([master, replica], "redis", "lab", duration=10, interval=5, clock=clock, sleep=clock.sleep)
    assert result["aggregate"]["throughput"] == pytest.approx(100.0)
    assert result["aggregate"]["read_ratio"] == pytest.approx(0.9)


def test_unreachable_node_names_the_host_and_writes_nothing(tmp_path):
    clock = Clock()

    def broken():
        raise ConnectionError("Connection refused")

    store = history.open_history(str(tmp_path / "h.sqlite3"))
    probes = [counting_probe("127.0.0.1:6381", clock, {"read": 1.0}), observe.Probe("127.0.0.9:6381", broken)]
    with pytest.raises(observe.ObserveError, match=r"^127\.0\.0\.9:6381: cannot be observed: Connection refused"):
        observe.observe(probes, "redis", "lab", duration=10, interval=5, history=store, clock=clock, sleep=clock.sleep)
    assert store.samples() == []
    store.close()


def test_history_keeps_samples_and_trackers_across_runs(tmp_path):
    clock = Clock()
    path = str(tmp_path / "h.sqlite3")
    probe = counting_probe("127.0.0.1:9042", clock, {"read": 10.0, "write": 10.0})
    for _run in range(12):
        clock.sleep(1.0)
        with history.open_history(path) as store:
            observe.observe(
                [probe], "cassandra", "lab", duration=30, interval=5, history=store, clock=clock, sleep=clock.sleep
            )
    with history.open_history(path) as store:
        samples = store.samples(cluster="lab", node="127.0.0.1:9042")
        assert len(samples) == 12
        assert samples[-1]["extra"]["windows"]["5m"]["read"] == pytest.approx(10.0)
        assert len(store.samples(cluster="lab", node="cluster")) == 12


def test_bad_arguments_name_the_field():
    with pytest.raises(observe.ObserveError, match="^store:"):
        observe.observe([object()], "scylla", "lab")
    with pytest.raises(observe.ObserveError, match="^nodes:"):
        observe.observe([], "redis", "lab")


def test_mongodb_counters_from_recorded_server_status():
    from bson import json_util

    with open(os.path.join(FIXTURES, "server_status_primary_8.0.json")) as handle:
        status = json_util.loads(handle.read())
    snap = mongodb.counters_from_server_status(status)
    ops = status["opcounters"]
    assert snap["counters"]["read"] == int(ops["query"]) and snap["counters"]["insert"] == int(ops["insert"])
    cache = status["wiredTiger"]["cache"]
    assert snap["counters"]["wiredtiger_cache_requests"] == int(cache["pages requested from the cache"])
    assert snap["counters"]["wiredtiger_cache_hits"] == int(cache["pages requested from the cache"]) - int(
        cache["pages read into cache"]
    )
    maximum = int(cache["maximum bytes configured"])
    assert snap["state"] == {
        "wiredtiger_cache_fill": pytest.approx(int(cache["bytes currently in the cache"]) / maximum),
        "wiredtiger_dirty_fill": pytest.approx(int(cache["tracked dirty bytes in the cache"]) / maximum),
    }
    assert 0.7 < snap["state"]["wiredtiger_cache_fill"] < 0.8  # 6.0 GB of the 7.5 GiB cache


def test_mongodb_state_is_null_without_wiredtiger():
    # FerretDB (and any other engine) answers serverStatus without a wiredTiger section.
    state = mongodb.state_from_server_status({"host": "ferret", "metrics": {}, "ok": 1.0})
    assert state == {"wiredtiger_cache_fill": None, "wiredtiger_dirty_fill": None}
    no_maximum = {"wiredTiger": {"cache": {"bytes currently in the cache": 10, "maximum bytes configured": 0}}}
    assert mongodb.state_from_server_status(no_maximum)["wiredtiger_cache_fill"] is None


SHARDS = [
    [
        b"slots",
        [0, 5460],
        b"nodes",
        [
            [
                b"id",
                b"e7d1",
                b"port",
                6381,
                b"ip",
                b"127.0.0.1",
                b"endpoint",
                b"127.0.0.1",
                b"role",
                b"master",
                b"replication-offset",
                1234,
                b"health",
                b"online",
            ],
            [
                b"id",
                b"07c3",
                b"port",
                6384,
                b"ip",
                b"127.0.0.1",
                b"endpoint",
                b"127.0.0.1",
                b"role",
                b"replica",
                b"replication-offset",
                1234,
                b"health",
                b"online",
            ],
        ],
    ]
]


class FakeConnection:
    def send_command(self, *args):
        assert args == ("CLUSTER", "SHARDS")

    def read_response(self):
        return SHARDS


class FakePool:
    def get_connection(self):
        return FakeConnection()

    def release(self, connection):
        pass


class FakeRedis:
    def __init__(self, commandstats, role="master"):
        self.commandstats = commandstats
        self.role = role
        self.connection_pool = FakePool()

    def info(self, section):
        if section == "commandstats":
            return self.commandstats
        if section == "stats":
            return {"keyspace_hits": 90, "keyspace_misses": 10, "evicted_keys": 3}
        if section == "memory":
            return {"used_memory": 2048, "used_memory_dataset": 1024, "maxmemory": 0, "mem_fragmentation_ratio": 1.5}
        if section == "persistence":
            return {"rdb_bgsave_in_progress": 1, "aof_rewrite_in_progress": 0, "rdb_changes_since_last_save": 40}
        if section == "replication":
            return {"role": self.role}
        raise KeyError(section)


def test_redis_commands_map_to_operations():
    stats = {
        "cmdstat_hgetall": {"calls": 50},
        "cmdstat_hmget": {"calls": 5},
        "cmdstat_hset": {"calls": 40},
        "cmdstat_zrangebyscore": {"calls": 3},
        "cmdstat_del": {"calls": 2},
        "cmdstat_info": {"calls": 7},
        "cmdstat_cluster|info": {"calls": 4},
    }
    snap = redis_adapter.workload_counters(FakeRedis(stats))
    assert snap["counters"]["read"] == 55 and snap["counters"]["update"] == 40
    assert snap["counters"]["scan"] == 3 and snap["counters"]["delete"] == 2 and snap["counters"]["other"] == 11
    assert snap["counters"]["keyspace_requests"] == 100 and snap["gauges"]["data_bytes"] == 1024
    assert snap["counters"]["evicted_keys"] == 3
    assert snap["state"] == {
        "rdb_bgsave_in_progress": 1,
        "aof_rewrite_in_progress": 0,
        "rdb_changes_since_last_save": 40,
        "mem_fragmentation_ratio": 1.5,
        "memory_fill": None,  # maxmemory 0: no limit to fill
    }
    shard = snap["gauges"]["shards"][0]
    assert shard["slots"] == [(0, 5460)]
    assert [(n["port"], n["role"], n["health"]) for n in shard["nodes"]] == [
        (6381, "master", "online"),
        (6384, "replica", "online"),
    ]
    assert json.dumps(snap)


def _fixture(name):
    from bson import json_util

    with open(os.path.join(FIXTURES, name)) as handle:
        return json_util.loads(handle.read())


def test_mongodb_collection_facts_from_recorded_collstats_and_indexstats():
    facts = mongodb.collection_facts(_fixture("coll_stats_storage_stats.json")[0], _fixture("index_stats.json"))
    assert facts["documents"] == 21504331 and facts["data_bytes"] == 9341204480
    assert facts["indexes"]["customer_1_createdAt_-1"]["accesses"] == 287114390
    assert facts["indexes"]["status_1"]["hidden"] is True and facts["indexes"]["status_1"]["accesses"] == 0
    assert facts["indexes"]["expiresAt_1"]["ttl_seconds"] == 0
    assert facts["indexes"]["region_1_total_-1"]["building"] is True


def test_mongodb_profiler_summary():
    docs = [{"op": "query", "millis": 120}, {"op": "query", "millis": 450}, {"op": "update", "millis": 90}]
    assert mongodb.profiler_summary(docs) == {
        "query": {"count": 2, "max_ms": 450},
        "update": {"count": 1, "max_ms": 90},
    }


def test_cluster_shards_as_resp3_maps():
    reply = [
        {
            "slots": [0, 16383],
            "nodes": [
                {
                    "id": "4368",
                    "port": 6499,
                    "ip": "",
                    "endpoint": "",
                    "role": "master",
                    "replication-offset": 0,
                    "health": "online",
                }
            ],
        }
    ]
    assert redis_adapter.parse_cluster_shards(reply) == [
        {
            "slots": [(0, 16383)],
            "nodes": [
                {
                    "id": "4368",
                    "endpoint": "",
                    "port": 6499,
                    "role": "master",
                    "health": "online",
                    "replication_offset": 0,
                }
            ],
        }
    ]
