from __future__ import annotations

import pytest
from ansible.errors import AnsibleLookupError

from ansible_collections.tactician.nosql.plugins.lookup.cluster_nodes import cluster_nodes

VARIABLES = {
    "groups": {"cassandra": ["c1", "c2"], "redis": ["r1", "r2"]},
    "hostvars": {
        "c1": {"cassandra_node_listen_address": "127.0.0.1", "cassandra_node_jmx_port": 7199},
        "c2": {"cassandra_node_listen_address": "127.0.0.2", "cassandra_node_jmx_port": "7299"},
        "r1": {"redis_node_port": 6381},
        "r2": {"redis_node_port": 6382, "redis_node_bind": "127.0.0.5"},
    },
}


def test_cassandra_shape():
    nodes = cluster_nodes(["cassandra"], VARIABLES, "cassandra")
    assert nodes == [
        {"host": "c1", "address": "127.0.0.1", "jmx_port": 7199},
        {"host": "c2", "address": "127.0.0.2", "jmx_port": 7299},
    ]


def test_redis_shape():
    assert cluster_nodes(["redis"], VARIABLES, "redis") == ["127.0.0.1:6381", "127.0.0.5:6382"]


def test_unknown_group_names_the_groups():
    with pytest.raises(AnsibleLookupError, match="group 'mongo' does not exist; groups: cassandra, redis"):
        cluster_nodes(["mongo"], VARIABLES, "redis")
