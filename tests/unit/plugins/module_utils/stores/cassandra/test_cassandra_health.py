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
