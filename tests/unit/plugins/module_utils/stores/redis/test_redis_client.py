from __future__ import annotations

import os

import pytest
from redis._parsers.helpers import parse_info
from testlib import FIXTURES

from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as r

NODES = """07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:6384@16384 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:6382@16382 master - 0 1426238316232 2 connected 5461-10922
292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:6383@16383 master - 0 1426238318243 3 connected 10923-16383
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:6381@16381 myself,master - 0 0 1 connected 0-5460
"""


def test_split_node():
    assert r.split_node("127.0.0.1:6381") == ("127.0.0.1", 6381)
    assert r.split_node("[::1]:6390") == ("::1", 6390)
    assert r.split_node("redis-a") == ("redis-a", 6379)


@pytest.mark.parametrize("masters", [1, 3, 5, 7])
def test_slot_ranges_cover_every_slot_once(masters):
    ranges = r.slot_ranges(masters)
    assert ranges[0][0] == 0 and ranges[-1][1] == r.CLUSTER_SLOTS - 1
    assert all(nxt[0] == cur[1] + 1 for cur, nxt in zip(ranges, ranges[1:], strict=False))
    sizes = [last - first + 1 for first, last in ranges]
    assert max(sizes) - min(sizes) <= 1


def test_cluster_nodes_and_layout(monkeypatch):
    monkeypatch.setattr(r, "raw_command", lambda conn, *args: NODES)
    nodes = r.cluster_nodes(object())
    assert r.myself(nodes)["address"] == "127.0.0.1:6381"
    replica = [n for n in nodes if "slave" in n["flags"]][0]
    assert replica["master_id"] == "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca"
    assert [n["slots"] for n in nodes if n["address"].endswith("6383")] == [["10923-16383"]]


def test_cluster_info_parses_numbers(monkeypatch):
    monkeypatch.setattr(
        r, "raw_command", lambda conn, *args: "cluster_state:ok\r\ncluster_slots_ok:16384\r\ncluster_known_nodes:6\r\n"
    )
    assert r.cluster_info(object()) == dict(cluster_state="ok", cluster_slots_ok=16384, cluster_known_nodes=6)


def test_view_problems_names_each_fault():
    good = dict(cluster_state="ok", slots_ok=16384, known_nodes=6, role="slave", master_link_status="up")
    assert r.view_problems("a:1", good, 6) == []
    bad = dict(cluster_state="fail", slots_ok=10000, known_nodes=5, role="slave", master_link_status="down")
    problems = r.view_problems("a:1", bad, 6)
    assert len(problems) == 4
    assert "cluster_state is fail" in problems[0] and "link to its master is down" in problems[3]


def test_summary_lines():
    views = {
        "a:1": dict(cluster_state="ok", slots_ok=16384, known_nodes=2, role="master"),
        "b:2": dict(error="refused"),
    }
    lines = r.summary(False, ["b:2: unreachable: refused"], views)
    assert lines[0] == "Redis: NOT healthy (2 nodes)"
    assert "a:1 master: cluster_state=ok" in lines[1] and "b:2 unreachable" in lines[2]


def test_create_cluster_refuses_bad_shapes():
    with pytest.raises(r.RedisAdminError, match="nodes: 5 nodes"):
        r.create_cluster({}, ["h:%d" % i for i in range(5)], 1)
    with pytest.raises(r.RedisAdminError, match="at least 3 masters"):
        r.create_cluster({}, ["h:%d" % i for i in range(4)], 1)


def test_client_carries_auth_and_tls_options():
    conn = r.client(
        dict(login_user="u", login_password="p", tls=True, ca_certs="/ca.pem", validate_certs=True), "h", 6390
    )
    kwargs = conn.connection_pool.connection_kwargs
    assert kwargs["username"] == "u" and kwargs["password"] == "p"
    assert kwargs["host"] == "h" and kwargs["port"] == 6390
    assert kwargs["ssl_ca_certs"] == "/ca.pem" and kwargs["ssl_cert_reqs"] == "required"
    assert kwargs["ssl_check_hostname"] is True


def test_client_checks_the_hostname_only_of_a_validated_certificate():
    def kwargs(**options):
        return r.client(dict(tls=True, **options), "h", 6390).connection_pool.connection_kwargs

    assert kwargs(check_hostname=False)["ssl_check_hostname"] is False
    assert kwargs(validate_certs=False)["ssl_check_hostname"] is False
    assert kwargs(client_cert_file="/c.pem", client_key_file="/k.pem")["ssl_certfile"] == "/c.pem"


def test_store_neutral_tls_options_reach_the_client_options():
    params = r.params_from_any(
        dict(tls=True, ca_file="/ca.pem", client_cert_file="/c.pem", client_key_file="/k.pem", validate_certs=False)
    )
    assert params["ca_certs"] == "/ca.pem" and params["validate_certs"] is False
    assert params["client_cert_file"] == "/c.pem" and params["client_key_file"] == "/k.pem"
    assert params["check_hostname"] is True


# ---------------------------------------------------------------------------------------------------------------
# State from INFO, recorded (tests/fixtures/redis/README.md)
# ---------------------------------------------------------------------------------------------------------------


def _recorded_info(name):
    with open(os.path.join(FIXTURES, "redis", "info_%s.txt" % name), encoding="utf-8") as handle:
        return parse_info(handle.read())


def test_state_from_recorded_info_without_maxmemory():
    persistence, memory = _recorded_info("persistence"), _recorded_info("memory")
    assert r.state_from_info(persistence, memory) == {
        "rdb_bgsave_in_progress": 0,
        "aof_rewrite_in_progress": 0,
        "rdb_changes_since_last_save": 661,
        "mem_fragmentation_ratio": 5.96,
        "memory_fill": None,  # maxmemory 0: no limit to fill
    }
    assert _recorded_info("stats")["evicted_keys"] == 0


def test_state_from_recorded_info_over_maxmemory():
    memory = _recorded_info("memory_maxmemory")
    state = r.state_from_info(_recorded_info("persistence"), memory)
    assert state["memory_fill"] == memory["used_memory"] / memory["maxmemory"]
    assert 1.0 < state["memory_fill"] < 1.01  # just over the limit: what eviction then brings back
    assert _recorded_info("stats_maxmemory")["evicted_keys"] == 7935


def test_state_fields_info_does_not_give_are_null():
    assert r.state_from_info({}, {}) == dict.fromkeys(
        (
            "rdb_bgsave_in_progress",
            "aof_rewrite_in_progress",
            "rdb_changes_since_last_save",
            "mem_fragmentation_ratio",
            "memory_fill",
        )
    )
