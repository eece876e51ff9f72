from __future__ import annotations

import json

import pytest
from testlib import Clock

from ansible_collections.tactician.nosql.plugins.module_utils.apply import guards
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import health


def test_policy_defaults_and_bad_values_name_the_field():
    policy = guards.GuardPolicy.from_dict(None)
    assert policy.p99_ms == 500.0 and policy.error_rate == 0.01 and policy.max_wait_s == 300.0
    assert guards.GuardPolicy.from_dict({"p99_ms": None, "max_wait_s": None}).p99_ms is None
    with pytest.raises(guards.GuardError, match=r"guard.p99_milis: not an option; allowed: p99_ms, error_rate"):
        guards.GuardPolicy.from_dict({"p99_milis": 5})
    with pytest.raises(guards.GuardError, match=r"guard.error_rate: 5 is above 1; allowed: 0 to 1"):
        guards.GuardPolicy.from_dict({"error_rate": 5})
    with pytest.raises(guards.GuardError, match=r"guard.interval_s: 0 must be greater than 0"):
        guards.GuardPolicy.from_dict({"interval_s": 0})
    with pytest.raises(guards.GuardError, match=r"guard.peer_down_polls"):
        guards.GuardPolicy.from_dict({"peer_down_polls": 0})


def test_combine_takes_the_worst_coordinator_and_every_request():
    signals = guards.combine(
        {
            "a": {"p99_ms": 12.0, "ops_per_s": 900.0, "errors_per_s": 0.0},
            "b": {"p99_ms": 40.0, "ops_per_s": 90.0, "errors_per_s": 10.0},
            "c": {"error": "connection refused"},
        }
    )
    assert signals["p99_ms"] == 40.0 and signals["ops_per_s"] == 990.0
    assert signals["error_rate"] == pytest.approx(10.0 / 1000.0)
    assert guards.combine({"c": {"error": "down"}})["error_rate"] is None


def test_thin_traffic_is_not_judged():
    # An idle node just restarted: its p99 is that of its first few requests.
    per_node = {
        "a": {"p99_ms": 655.0, "ops_per_s": 2.1, "errors_per_s": 0.5},
        "b": {"p99_ms": 40.0, "ops_per_s": 50.0, "errors_per_s": 0.0},
    }
    signals = guards.combine(per_node, min_ops_per_s=10.0)
    assert signals["p99_ms"] == 40.0 and signals["error_rate"] == pytest.approx(0.5 / 52.6, abs=1e-6)
    idle = guards.combine({"a": per_node["a"]}, min_ops_per_s=10.0)
    assert idle["p99_ms"] is None and idle["error_rate"] is None
    assert guards.breaches(idle, guards.GuardPolicy()) == []


def test_wait_calm_returns_at_once_when_calm_and_waits_while_not():
    clock = Clock()
    policy = guards.GuardPolicy(p99_ms=100.0, error_rate=0.01, max_wait_s=60.0, interval_s=10.0)
    seen = iter([None, {"p99_ms": 300.0, "error_rate": 0.0}, {"p99_ms": 50.0, "error_rate": 0.0}])
    report = guards.wait_calm(lambda: next(seen), policy, "stopping n1", clock=clock, sleep=clock.sleep)
    assert report["checked"] and report["waited"] == 20.0 and report["signals"]["p99_ms"] == 50.0


def test_wait_calm_stops_when_the_signals_stay_above_for_too_long():
    clock = Clock()
    policy = guards.GuardPolicy(p99_ms=100.0, error_rate=0.01, max_wait_s=30.0, interval_s=10.0)
    with pytest.raises(guards.ClusterNotReady) as info:
        guards.wait_calm(
            lambda: {"p99_ms": 80.0, "error_rate": 0.05}, policy, "stopping n1", clock=clock, sleep=clock.sleep
        )
    message = str(info.value)
    assert message.startswith("before stopping n1: client error rate 5.00 % above 1.00 % for 30 s")
    assert "guard.max_wait_s" in message and info.value.seen["signals"]["error_rate"] == 0.05


def test_wait_calm_without_thresholds_reads_nothing():
    def never():
        raise AssertionError("read")

    report = guards.wait_calm(never, guards.GuardPolicy(p99_ms=None, error_rate=None), "stopping n1")
    assert report["checked"] is False


def test_a_peer_counts_as_down_only_in_polls_in_a_row():
    watch = guards.PeerWatch(2)
    assert watch.update({"b": "refused"}) == {}
    assert watch.update({}) == {}
    assert watch.update({"b": "refused"}) == {}
    assert watch.update({"b": "seen DN by c"}) == {"b": "seen DN by c"}


def _view(status=None, nodetool_error=None, cql_error=None):
    view = {}
    if status is not None:
        view["status"] = status
    if nodetool_error:
        view["nodetool_error"] = nodetool_error
    if cql_error:
        view["cql_error"] = cql_error
    return view


def test_down_peers_ignores_the_restarting_nodes_own_view():
    views = {
        "a": _view({"a": "UN", "b": "DN", "c": "DN"}),  # just started: sees everyone down
        "b": _view({"a": "UN", "b": "UN", "c": "UN"}),
        "c": _view({"a": "DN", "b": "UN", "c": "UN"}),  # sees the restarting node down: not a peer problem
    }
    assert health.down_peers(views, "a") == {}
    views["b"] = _view(nodetool_error="Connection refused to host: 127.0.0.2\nmore", cql_error="refused")
    views["c"]["status"]["b"] = "DN"
    assert health.down_peers(views, "a") == {"b": "answers neither JMX nor CQL (Connection refused to host: 127.0.0.2)"}
    views["b"] = _view({"a": "UN", "b": "UN", "c": "UN"}, cql_error="timeout")
    assert health.down_peers(views, "a") == {"b": "seen DN by c"}


def test_node_states_say_how_the_others_see_each_node():
    views = {
        "a": _view({"a": "UN", "b": "DN", "c": "UN"}),
        "b": _view(nodetool_error="refused", cql_error="refused"),
        "c": _view({"a": "UN", "b": "DN", "c": "UN"}),
    }
    states = health.node_states(views)
    assert states["a"] == "UN" and states["c"] == "UN"
    assert states["b"] == "answers neither JMX nor CQL; DN as seen by a; DN as seen by c"


def _bean(scope, name, **fields):
    return dict(name="org.apache.cassandra.metrics:type=ClientRequest,scope=%s,name=%s" % (scope, name), **fields)


def test_client_requests_from_mxdump():
    beans = [
        _bean("Read", "Latency", Count=10, OneMinuteRate=100.0, **{"99thPercentile": 61214.0}),
        _bean("Write", "Latency", Count=10, OneMinuteRate=50.0, **{"99thPercentile": 2000.0}),
        _bean("RangeSlice", "Latency", Count=3, OneMinuteRate=2.0, **{"99thPercentile": 379022.0}),
        _bean("Read-QUORUM", "Latency", Count=10, OneMinuteRate=100.0, **{"99thPercentile": 90000.0}),
        _bean("Read", "Timeouts", Count=4, OneMinuteRate=1.5),
        _bean("Write", "Unavailables", Count=1, OneMinuteRate=0.5),
        _bean("CASRead", "Failures", Count=1, OneMinuteRate=9.0),
    ]
    text = "some log line\n" + json.dumps({"beans": beans}).replace("2000.0", "NaN", 0)
    signals = health.parse_client_requests(text)
    # Range scans count as requests but not in the p99 (they are slow by nature); per-CL scopes are not counted
    # twice; CAS is not watched.
    assert signals == {"p99_ms": 61.214, "ops_per_s": 152.0, "errors_per_s": 2.0}
    idle = health.parse_client_requests(json.dumps({"beans": [_bean("Read", "Latency", Count=0, Mean=float("nan"))]}))
    assert idle == {"p99_ms": None, "ops_per_s": 0.0, "errors_per_s": 0.0}


def test_signal_log_measures_the_longest_stretch_above():
    clock = Clock()
    log = guards.SignalLog(guards.GuardPolicy(p99_ms=10.0, max_wait_s=25.0), clock=clock)
    for p99 in (5.0, 20.0, 30.0, 5.0, 20.0):
        log.add({"p99_ms": p99, "error_rate": 0.0})
        clock.sleep(10.0)
    report = log.report()
    assert report["worst_p99_ms"] == 30.0 and report["longest_above_s"] == 10.0 and not log.too_long()
    for _step in range(3):
        log.add({"p99_ms": 20.0, "error_rate": 0.0})
        clock.sleep(10.0)
    assert log.too_long() and log.report()["breach"] == ["p99 latency 20.0 ms above 10.0 ms"]


def test_a_node_whose_errors_are_not_known_does_not_dilute_the_error_rate():
    per_node = {
        "a": {"p99_ms": 5.0, "ops_per_s": 90.0, "errors_per_s": 10.0},
        "b": {"p99_ms": 40.0, "ops_per_s": 900.0, "errors_per_s": None, "via": "cql"},
    }
    signals = guards.combine(per_node)
    assert signals["p99_ms"] == 40.0 and signals["ops_per_s"] == 990.0 and signals["error_rate"] == 0.1
    assert guards.combine({"b": per_node["b"]})["error_rate"] is None


def test_the_other_nodes_of_the_batch_are_not_watched_while_the_node_starts(monkeypatch):
    """A batch of R = RF - CL nodes restarts at once: the node starting must not stop the roll because the other
    node of its batch is down, and a node outside the batch that goes down still stops it."""
    from ansible_collections.tactician.nosql.plugins.module_utils.apply import cassandra_node

    # jmx_local: a peer is watched by its CQL port alone.
    peers = [dict(address=a, native_port=9042, jmx_local=True) for a in ("127.0.0.1", "127.0.0.2", "127.0.0.3")]
    node = cassandra_node.CassandraNode(
        dict(address="127.0.0.1", port=9042, peers=peers, batch=["127.0.0.2"], guard={"peer_down_polls": 1}), None
    )
    assert [p["address"] for p in node._peer_nodes()] == ["127.0.0.1", "127.0.0.3"]
    down = {"127.0.0.2"}
    monkeypatch.setattr(cassandra_node.process, "port_open", lambda host, port: host not in down)
    monkeypatch.setattr(cassandra_node.guards, "time_to_poll", lambda last, every: True)
    check = node._peer_ports_watch()
    check()  # its batch partner down: nothing to say
    down.add("127.0.0.3")
    with pytest.raises(guards.PeerDownError) as raised:
        check()
    assert set(raised.value.peers) == {"127.0.0.3"}
    # Without the batch (a batch of one), the same partner down stops the step.
    alone = cassandra_node.CassandraNode(
        dict(address="127.0.0.1", port=9042, peers=peers, guard={"peer_down_polls": 1}), None
    )
    assert [p["address"] for p in alone._peer_nodes()] == ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
