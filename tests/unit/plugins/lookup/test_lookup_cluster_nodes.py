from __future__ import annotations

import pytest
from ansible.errors import AnsibleLookupError

from ansible_collections.tactician.nosql.plugins.lookup.cluster_nodes import cluster_nodes

VARIABLES = {
    "groups": {"cassandra": ["c1", "c2"], "redis": ["r1", "r2"]},
    "hostvars": {
        "c1": {"cassandra_node_listen_address": "127.0.0.1", "cassandra_node_jmx_port": 7199},
        "c2": {"cassandra_node_listen_address": "127.0.0.2", "cassandra_node_jmx_port": "7299"},
        "r1": {"redis_node_port": 6381, "redis_node_bind": "127.0.0.1"},
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
    with pytest.raises(AnsibleLookupError, match="neither an inventory group nor a host; groups: cassandra, redis"):
        cluster_nodes(["mongo"], VARIABLES, "redis")


def test_a_host_name_gives_that_host_alone_and_a_list_counts_as_its_items():
    assert cluster_nodes(["c2"], VARIABLES, "cassandra") == [{"host": "c2", "address": "127.0.0.2", "jmx_port": 7299}]
    assert cluster_nodes([["r2", "r1"]], VARIABLES, "redis") == ["127.0.0.5:6382", "127.0.0.1:6381"]


def test_an_inventory_of_its_own_names_addresses_ports_and_jmx():
    variables = {
        "groups": {"cassandra": ["db1", "db2"], "redis": ["cache1", "cache2", "cache3"]},
        "hostvars": {
            "db1": {"ansible_host": "10.0.0.11", "tactician_jmx_host": "10.0.0.11", "tactician_jmx_port": 7199},
            "db2": {"tactician_node_address": "10.0.1.12", "ansible_host": "db2.example", "tactician_node_port": 9142},
            "cache1": {"ansible_host": "10.0.0.21"},
            "cache2": {"ansible_host": "10.0.0.22", "tactician_node_port": 6380},
            "cache3": {},
        },
    }
    assert cluster_nodes(["cassandra"], variables, "cassandra") == [
        {"host": "db1", "address": "10.0.0.11", "jmx_port": 7199, "jmx_host": "10.0.0.11"},
        {"host": "db2", "address": "10.0.1.12", "jmx_port": 7199, "native_port": 9142},
    ]
    assert cluster_nodes(["redis"], variables, "redis") == ["10.0.0.21:6379", "10.0.0.22:6380", "cache3:6379"]


def test_a_packaged_node_with_jmx_on_loopback_is_asked_by_nodetool_on_its_own_host_only():
    variables = {
        "groups": {"cassandra": ["db1", "db2", "db3", "db4"]},
        "hostvars": {
            "db1": {"ansible_host": "10.0.0.11", "tactician_service_name": "cassandra"},
            "db2": {
                "ansible_host": "10.0.0.12",
                "tactician_service_name": "cassandra",
                "tactician_jmx_host": "10.0.0.12",
            },
            "db3": {"ansible_host": "10.0.0.13", "tactician_service_name": "cassandra", "tactician_jmx_local": "false"},
            "db4": {"ansible_host": "10.0.0.14", "tactician_jmx_local": True},
        },
    }
    local = [node.get("jmx_local", False) for node in cluster_nodes(["cassandra"], variables, "cassandra")]
    assert local == [True, False, False, True]


def test_mongodb_shape_is_what_observe_takes():
    variables = {
        "groups": {"mongodb": ["m1", "m2", "m3"]},
        "hostvars": {
            "m1": {"ansible_host": "10.0.0.31"},
            "m2": {"tactician_node_address": "10.0.1.32", "ansible_host": "m2.example", "tactician_node_port": "27018"},
            "m3": {},
        },
    }
    assert cluster_nodes(["mongodb"], variables, "mongodb") == [
        {"host": "m1", "address": "10.0.0.31:27017"},
        {"host": "m2", "address": "10.0.1.32:27018"},
        {"host": "m3", "address": "m3:27017"},
    ]


def test_mongodb_lab_server_from_the_ferretdb_node_role_variables():
    variables = {
        "groups": {"mongodb": ["mongodb1", "m2"]},
        "hostvars": {
            "mongodb1": {"ferretdb_node_listen_address": "127.0.0.1", "ferretdb_node_port": 27027},
            "m2": {"tactician_node_address": "10.0.0.32", "tactician_node_port": 27018, "ferretdb_node_port": 27027},
        },
    }
    assert cluster_nodes(["mongodb"], variables, "mongodb") == [
        {"host": "mongodb1", "address": "127.0.0.1:27027"},
        {"host": "m2", "address": "10.0.0.32:27018"},
    ]
