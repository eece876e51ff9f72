# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The node objects of the reconfiguration step machine (apply/node_step.py), one per store: ``node_for``.

Each one reads the node's live settings, applies live-changeable ones, writes the config file (keeping its
comments and order), stops and starts the node, and says when the cluster sees it back; the shared parts are in
node_base.py, each store's in cassandra_node.py, redis_node.py and mongodb_node.py.
"""

from __future__ import annotations

from ansible_collections.tactician.nosql.plugins.module_utils.apply import config_base
from ansible_collections.tactician.nosql.plugins.module_utils.apply.cassandra_node import CassandraNode
from ansible_collections.tactician.nosql.plugins.module_utils.apply.mongodb_node import MongoNode
from ansible_collections.tactician.nosql.plugins.module_utils.apply.redis_node import RedisNode
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import client as mongo
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter


def missing_libraries(store):
    modules = {"cassandra": cql, "redis": redis_adapter, "mongodb": mongo}
    return modules[store].missing_libraries() + config_base.missing_libraries()


NODES = {"cassandra": CassandraNode, "redis": RedisNode, "mongodb": MongoNode}


def node_for(store, params, catalog):
    return NODES[store](params, catalog)
