"""The Redis node's guards: a master fails over only to a replica in sync, a replica lost during the failover
stops the roll with its name, the client signals come from the counters' deltas (fakes, no server)."""

from __future__ import annotations

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.apply import guards
from ansible_collections.tactician.nosql.plugins.module_utils.apply.redis_node import RedisNode
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter


class FakeConn:
    def __init__(self, replication=None, sections=None, alive=True):
        self.replication = replication or {}
        self.sections = sections or {}
        self.alive = alive

    def info(self, section):
        if section == "replication":
            return self.replication
        return self.sections[section]

    def ping(self):
        if not self.alive:
            raise redis_adapter.RedisError("Connection refused")
        return True

    def close(self):
        pass


def _node(monkeypatch, conns, **params):
    node = RedisNode(dict(address="127.0.0.1:6391", daemon={"pid_file": "x"}, failover_timeout=0.2, **params), None)
    monkeypatch.setattr(node, "_client", lambda address=None: conns[address or node.name])
    monkeypatch.setattr(node, "_role", lambda conn=None: "master")
    monkeypatch.setattr("time.sleep", lambda seconds: None)
    return node


MASTER = {"role": "master", "master_repl_offset": 500}


def test_a_master_whose_replica_is_not_in_sync_is_not_failed_over(monkeypatch):
    replication = dict(MASTER, slave0={"ip": "127.0.0.1", "port": 6394, "state": "wait_bgsave", "offset": 0, "lag": 9})
    node = _node(monkeypatch, {"127.0.0.1:6391": FakeConn(replication)})
    monkeypatch.setattr(node, "_swap_with", lambda replica: pytest.fail("failed over to %s" % replica))
    with pytest.raises(guards.ClusterNotReady) as info:
        node.prepare_restart()
    message = str(info.value)
    assert (
        "no replica in sync" in message and "127.0.0.1:6394: state wait_bgsave, last acknowledgement 9 s ago" in message
    )
    assert info.value.kind == "failover"


def test_a_replica_lost_during_the_failover_stops_the_roll_with_its_name(monkeypatch):
    replication = dict(MASTER, slave0={"ip": "127.0.0.1", "port": 6394, "state": "online", "offset": 500, "lag": 0})
    conns = {"127.0.0.1:6391": FakeConn(replication), "127.0.0.1:6394": FakeConn(alive=False)}
    node = _node(monkeypatch, conns, peers=["127.0.0.1:6394"])

    def swap(replica):
        raise redis_adapter.RedisError("Connection closed by server.")

    monkeypatch.setattr(node, "_swap_with", swap)
    monkeypatch.setattr(redis_adapter, "cluster_views", lambda params, nodes: {n: {"error": "refused"} for n in nodes})
    with pytest.raises(
        guards.ClusterNotReady, match="replica 127.0.0.1:6394 was lost during the failover of 127.0.0.1:6391"
    ):
        node.prepare_restart()


def test_a_replica_in_sync_is_the_one_failed_over_to(monkeypatch):
    replication = dict(
        MASTER,
        slave0={"ip": "127.0.0.1", "port": 6394, "state": "online", "offset": 490, "lag": 1},
        slave1={"ip": "127.0.0.1", "port": 6395, "state": "online", "offset": 499, "lag": 5},
    )
    node = _node(monkeypatch, {"127.0.0.1:6391": FakeConn(replication)})
    swapped = []
    monkeypatch.setattr(node, "_swap_with", swapped.append)
    assert node.prepare_restart() == ["failover to 127.0.0.1:6394"] and swapped == ["127.0.0.1:6394"]


def test_client_signals_from_the_counters():
    sections = {
        "commandstats": {
            "cmdstat_get": {"calls": 900, "usec": 1800, "rejected_calls": 52, "failed_calls": 0},
            "cmdstat_set": {"calls": 100, "usec": 200, "rejected_calls": 0, "failed_calls": 1},
        },
        # ERR 40: CLIENT SETINFO refused by Redis 7.0 at each connection (in no command's stats); MOVED 50.
        "errorstats": {"errorstat_ERR": {"count": 40}, "errorstat_MOVED": {"count": 50}},
        "stats": {"rejected_connections": 1},
    }
    before = redis_adapter.client_counters(FakeConn(sections=sections))
    assert (before["calls"], before["usec"], before["errors"]) == (1000, 2000, 4)
    after = dict(before, at=before["at"] + 10.0, calls=3000, usec=6000, errors=14)
    assert redis_adapter.signals_between(before, after) == {"p99_ms": 0.002, "ops_per_s": 200.0, "errors_per_s": 1.0}
    restarted = dict(after, calls=5)
    assert redis_adapter.signals_between(after, restarted) is None


def test_the_guard_reads_the_clients_from_prometheus_when_it_is_given(monkeypatch):
    """guard_prometheus: one query for the cluster, the nodes of the roll kept, none of them asked for counters."""
    from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import prometheus

    asked = []

    def signals(client, store, cluster, nodes=None, window_s=60.0, at=None):
        asked.append((store, cluster))
        return {
            "127.0.0.1:6391": dict(p99_ms=0.1, ops_per_s=900.0, errors_per_s=0.0, via="prometheus"),
            "127.0.0.1:6392": dict(p99_ms=0.2, ops_per_s=100.0, errors_per_s=50.0, via="prometheus"),
            "127.0.0.9:6391": dict(p99_ms=99.0, ops_per_s=100.0, errors_per_s=100.0, via="prometheus"),
        }

    monkeypatch.setattr(prometheus, "client_signals", signals)
    node = _node(
        monkeypatch,
        {},
        peers=["127.0.0.1:6392"],
        guard={"error_rate": 0.01, "max_wait_s": 0},
        guard_prometheus={"url": "prometheus://127.0.0.1:9390", "cluster": "cache"},
    )
    monkeypatch.setattr(redis_adapter, "cluster_views", lambda params, nodes: {})
    monkeypatch.setattr(redis_adapter, "problems_of", lambda views: [])
    with pytest.raises(guards.ClusterNotReady, match=r"client error rate 4\.76 % above 1\.00 %") as stopped:
        node.check_before_stop()
    assert asked == [("redis", "cache")]
    assert stopped.value.seen["signals"]["via"] == "prometheus"
    assert sorted(stopped.value.seen["signals"]["nodes"]) == ["127.0.0.1:6391", "127.0.0.1:6392"]

    # Prometheus not answering: the signals are unknown, and the guard stops the roll when they stay so
    def down(*args, **kwargs):
        raise prometheus.PrometheusError("down")

    monkeypatch.setattr(prometheus, "client_signals", down)
    with pytest.raises(guards.ClusterNotReady, match=r"the client signals could not be read"):
        node.check_before_stop()
