"""Unit tests of observe's probes (plugins/module_utils/stores/probes.py) with the connections faked: the Cassandra
probe reads nodetool after the window only when told where the jars are."""

from __future__ import annotations

from ansible_collections.tactician.nosql.plugins.module_utils.stores import probes
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import state


class FakeCluster:
    def __init__(self):
        self.closed = False

    def shutdown(self):
        self.closed = True


def _params(**extra):
    return dict(store="cassandra", nodes=[{"address": "127.0.0.11", "jmx_port": 7499}], keyspaces=["ycsb"], **extra)


def test_cassandra_probe_reads_nodetool_only_with_cassandra_home(monkeypatch):
    clusters = []

    def connect(params, hosts=None, only_these_hosts=False):
        clusters.append(FakeCluster())
        return clusters[-1], object()

    calls = []

    def nodetool_state(home, host, port, keyspaces, **options):
        calls.append((home, host, port, keyspaces, options))
        return {"live_sstables": 5}

    monkeypatch.setattr(cql, "connect", connect)
    monkeypatch.setattr(state, "nodetool_state", nodetool_state)
    with probes.Probes(_params()) as found:
        assert found[0].node == "127.0.0.11:9042" and found[0].final_state() == {}
    with probes.Probes(_params(cassandra_home="/opt/cassandra", jmx_user="jmx", jmx_password="pw")) as found:
        assert found[0].final_state() == {"live_sstables": 5}
    home, host, port, keyspaces, options = calls[0]
    assert (home, host, port, keyspaces) == ("/opt/cassandra", "127.0.0.1", 7499, ["ycsb"])
    assert options == {"java": "java", "jmx_user": "jmx", "jmx_password": "pw"}
    assert all(cluster.closed for cluster in clusters)
