# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
name: cluster_nodes
short_description: The nodes of an inventory group in the shape the cluster modules take
description:
  - For each inventory group given, returns its hosts as the health and cluster modules of the collection want
    them, read from the role variables of M(tactician.nosql.cassandra_daemon) and M(tactician.nosql.redis_daemon)
    users (C(cassandra_node_*), C(redis_node_*)).
  - C(cassandra) gives one dict per host with C(address), C(jmx_port) and C(host) (the inventory name).
  - C(redis) gives one C(host:port) string per host.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  _terms:
    description: Inventory group names.
    required: true
    type: list
    elements: str
  store:
    description: Which shape to return.
    type: str
    choices: [cassandra, redis]
    required: true
"""

EXAMPLES = r"""
- name: Every Cassandra node sees every other UN
  tactician.nosql.cassandra_health:
    nodes: "{{ query('tactician.nosql.cluster_nodes', 'cassandra', store='cassandra') }}"
    cassandra_home: /opt/tactician/cassandra-5.0.9

- name: Redis cluster health
  tactician.nosql.redis_health:
    nodes: "{{ query('tactician.nosql.cluster_nodes', 'redis', store='redis') }}"
"""

RETURN = r"""
_raw:
  description: One entry per host of the groups, in inventory order.
  type: list
  elements: raw
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase


def _node(store, host, hostvars):
    if store == "cassandra":
        return {
            "host": host,
            "address": hostvars.get("cassandra_node_listen_address", "127.0.0.1"),
            "jmx_port": int(hostvars.get("cassandra_node_jmx_port", 7199)),
        }
    return "%s:%d" % (hostvars.get("redis_node_bind", "127.0.0.1"), int(hostvars.get("redis_node_port", 6379)))


def cluster_nodes(terms, variables, store):
    """The nodes of the groups in terms, from the inventory's groups and hostvars."""
    variables = variables or {}
    groups = variables.get("groups", {})
    hostvars = variables.get("hostvars", {})
    nodes = []
    for group in terms:
        if group not in groups:
            raise AnsibleLookupError(
                "cluster_nodes: inventory group %r does not exist; groups: %s" % (group, ", ".join(sorted(groups)))
            )
        for host in groups[group]:
            nodes.append(_node(store, host, hostvars.get(host, {})))
    return nodes


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        return cluster_nodes(terms, variables, self.get_option("store"))
