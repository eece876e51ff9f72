from __future__ import annotations

from ansible_collections.tactician.nosql.plugins.module_utils.core.timing import poll_health
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import health as cassandra_cluster


def test_poll_health_stops_at_the_first_clean_check():
    answers = iter([(["n1 sees n2 as DN"], {"n1": 1}), ([], {"n1": 2}), (["never asked"], {})])
    report = poll_health(lambda: next(answers), timeout=10, interval=0)
    assert report["healthy"] is True and report["problems"] == [] and report["views"] == {"n1": 2}


def test_poll_health_gives_the_last_problems_after_timeout():
    report = poll_health(lambda: (["still down"], {"n": 0}), timeout=0, interval=0)
    assert report == dict(healthy=False, problems=["still down"], views={"n": 0}, waited=report["waited"])


VIEWS = {
    "127.0.0.1": {"status": {"127.0.0.1": "UN", "127.0.0.2": "DN"}, "cql": "5.0.9"},
    "127.0.0.2": {"nodetool_error": "Connection refused", "cql_error": "no host"},
}


def test_cassandra_problems_name_who_sees_what():
    problems = cassandra_cluster.problems_of(VIEWS, ["127.0.0.1", "127.0.0.2", "127.0.0.3"])
    assert problems == [
        "127.0.0.1 sees 127.0.0.2 as DN",
        "127.0.0.1 sees 127.0.0.3 as absent",
        "127.0.0.2: nodetool status failed: Connection refused",
        "127.0.0.2: CQL not answering: no host",
    ]


def test_cassandra_summary_lines():
    lines = cassandra_cluster.summary(False, ["x"], VIEWS)
    assert lines[0] == "Cassandra: NOT healthy (2 nodes)"
    assert lines[1] == "  127.0.0.1 sees 127.0.0.1=UN 127.0.0.2=DN; CQL 5.0.9"
    assert lines[2] == "  127.0.0.2 sees nothing (nodetool failed); CQL down"
    assert lines[3] == "  problem: x"


class _Row:
    def __init__(self, address, heartbeat, status="NORMAL,-42", generation=1700000000):
        self.address, self.heartbeat, self.generation, self.status_with_port = address, heartbeat, generation, status


def test_a_gossip_view_counts_an_endpoint_up_only_when_its_heartbeat_advanced():
    first = [_Row("10.0.0.1", 100), _Row("10.0.0.2", 200), _Row("10.0.0.3", 300), _Row("10.0.0.4", 50, "BOOT,1")]
    second = [_Row("10.0.0.1", 103), _Row("10.0.0.2", 200), _Row("10.0.0.3", 301, "shutdown,true")]
    second.append(_Row("10.0.0.4", 52, "BOOT,1"))
    states = cassandra_cluster.parse_gossip(first, second, "10.0.0.1")
    assert states == {"10.0.0.1": "UN", "10.0.0.2": "DN", "10.0.0.3": "DN", "10.0.0.4": "UJ"}


def test_a_restart_is_a_new_generation_not_a_heartbeat_that_went_back():
    first = [_Row("10.0.0.2", 9000, generation=1700000000)]
    second = [_Row("10.0.0.2", 3, generation=1700000500)]
    assert cassandra_cluster.parse_gossip(first, second, "10.0.0.1") == {"10.0.0.2": "UN"}
    # the node asked answers, so it is up in its own view even when its own heartbeat row did not move yet
    assert cassandra_cluster.parse_gossip([_Row("10.0.0.1", 5)], [_Row("10.0.0.1", 5)], "10.0.0.1") == {
        "10.0.0.1": "UN"
    }
    assert cassandra_cluster.gossip_state(None, True) == "U?"


def test_a_local_only_jmx_is_asked_on_its_own_host_and_by_its_gossip_elsewhere(monkeypatch):
    asked = []
    monkeypatch.setattr(
        cassandra_cluster, "run_nodetool", lambda home, host, port, args, **kw: asked.append(port) or ""
    )
    monkeypatch.setattr(cassandra_cluster, "_gossip_view", lambda params, node: {"via": "gossip", "status": {}})
    nodes = [
        dict(address="10.0.0.1", jmx_host="127.0.0.1", jmx_port=7199, jmx_local=True),
        dict(address="10.0.0.2", jmx_host="127.0.0.1", jmx_port=7199, jmx_local=True),
        dict(address="10.0.0.3", jmx_host="10.0.0.3", jmx_port=7299),
    ]
    params = dict(cassandra_home="/opt/c", check_cql=False, here="10.0.0.1")
    views = cassandra_cluster.node_views(params, nodes)
    assert sorted(asked) == [7199, 7299]  # its own JMX and the remote one, never the peer's loopback
    assert views["10.0.0.2"]["via"] == "gossip" and "via" not in views["10.0.0.1"]
    assert cassandra_cluster.jmx_reachable(nodes[1]) is False and cassandra_cluster.jmx_reachable(nodes[2]) is True
    monkeypatch.setattr(cassandra_cluster, "cql_client_signals", lambda params, node: {"via": "cql"})
    signals = cassandra_cluster.client_signals(dict(params, here=None), nodes[:2])
    assert signals == {"10.0.0.1": {"via": "cql"}, "10.0.0.2": {"via": "cql"}}


def test_a_coordinator_read_by_cql_gives_its_worst_p99_and_its_rate_but_no_errors():
    rows = [
        dict(keyspace_name="shop", table_name="a", count=900, per_second=120.5, p99th_ms=4.2),
        dict(keyspace_name="shop", table_name="b", count=10, per_second=0.0, p99th_ms=90.0),  # idle: no p99
        dict(keyspace_name="system", table_name="local", count=0, per_second=0.0, p99th_ms=0.0),
        dict(keyspace_name="shop", table_name="a", count=400, per_second=30.0, p99th_ms=7.5),
    ]
    assert cassandra_cluster.parse_coordinator_latency(rows) == dict(p99_ms=7.5, ops_per_s=150.5, errors_per_s=None)


def test_a_gossip_view_that_cannot_be_read_names_why():
    views = {"10.0.0.2": {"via": "gossip", "cql_error": "refused", "nodetool_error": "its view not read"}}
    assert cassandra_cluster.problems_of(views, ["10.0.0.2"])[0] == "10.0.0.2: its gossip state: its view not read"
    # a login refused is a node that runs: not whole, but not down
    assert cassandra_cluster.down_peers(views, "10.0.0.1") == {}
    views["10.0.0.2"]["port_closed"] = True
    assert cassandra_cluster.down_peers(views, "10.0.0.1") == {
        "10.0.0.2": "its CQL port is closed, its JMX being local to its host (refused)"
    }


def test_auth_reads_take_system_auths_replication_and_the_servers_read_level():
    simple = {"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "2"}
    auth = cassandra_cluster.parse_auth(
        {"authenticator": "PasswordAuthenticator", "auth_read_consistency_level": "local_one"}, simple
    )
    assert auth == dict(rf=2, cl="LOCAL_ONE", authenticator="PasswordAuthenticator")
    topology = {"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc1": "3", "dc2": "3"}
    assert cassandra_cluster.parse_auth({"authenticator": "PasswordAuthenticator"}, topology) == dict(
        rf={"dc1": 3, "dc2": 3}, cl="LOCAL_QUORUM", authenticator="PasswordAuthenticator"
    )


def test_a_cluster_that_checks_no_password_reads_no_role():
    simple = {"class": "SimpleStrategy", "replication_factor": "1"}
    assert cassandra_cluster.parse_auth({"authenticator": "AllowAllAuthenticator"}, simple) is None
    assert cassandra_cluster.parse_auth({"authenticator": None}, simple) is None
    assert cassandra_cluster.parse_auth({"authenticator": "PasswordAuthenticator"}, None) is None
