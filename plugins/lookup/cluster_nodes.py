# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
name: cluster_nodes
short_description: The nodes of an inventory group in the shape the cluster modules take
description:
  - For each inventory group given, returns its hosts as the health and cluster modules of the collection want
    them, from each host's inventory variables; a host name given instead of a group returns that host alone (the
    bench node of the measuring playbooks, one node's own step).
  - The address clients reach a node at is C(tactician_node_address), else the lab roles' variable
    (C(cassandra_node_listen_address), C(redis_node_bind), C(ferretdb_node_listen_address)), else C(ansible_host),
    else the inventory name; its port C(tactician_node_port), else C(redis_node_port) (Redis) or
    C(ferretdb_node_port) (MongoDB), else the store's default.
  - C(cassandra) gives one dict per host with C(address), C(jmx_port) (C(tactician_jmx_port), else
    C(cassandra_node_jmx_port), else 7199) and C(host) (the inventory name), plus C(jmx_host) when
    C(tactician_jmx_host) is set (nodetool reaches the node there), C(native_port) when C(tactician_node_port)
    is, and C(jmx_local=true) when the node's JMX answers only on its own host (C(tactician_jmx_local), else true
    for a node with C(tactician_service_name) whose C(tactician_jmx_host) is unset or a loopback address, as a
    packaged install binds it by default); its view of the ring is then read by nodetool only on that host, and
    by CQL from its gossip state everywhere else.
  - C(redis) gives one C(host:port) string per host.
  - C(mongodb) gives one dict per host with C(address) (C(host:port), port 27017 unless C(tactician_node_port) or
    C(ferretdb_node_port)) and C(host) (the inventory name), as M(tactician.nosql.observe) takes them.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  _terms:
    description: Inventory group names, or host names (that host alone); a list counts as its items.
    required: true
    type: list
    elements: str
  store:
    description: Which shape to return.
    type: str
    choices: [cassandra, redis, mongodb]
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

- name: Sample the MongoDB nodes for 30 s
  tactician.nosql.observe:
    store: mongodb
    nodes: "{{ query('tactician.nosql.cluster_nodes', 'mongodb', store='mongodb') }}"
"""

RETURN = r"""
_raw:
  description: One entry per host of the groups, in inventory order.
  type: list
  elements: raw
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase


def _address(host, hostvars, lab_var):
    """Where the clients reach the node: tactician_node_address, the lab role's variable, ansible_host, the name."""
    for value in (hostvars.get("tactician_node_address"), hostvars.get(lab_var), hostvars.get("ansible_host")):
        if value:
            return str(value)
    return host


LOOPBACK = ("127.", "::1", "localhost")


def _jmx_local(hostvars):
    """Whether the node's JMX answers only on its own host: tactician_jmx_local, else true for a node its service
    manager runs (a packaged install, whose cassandra-env.sh binds JMX to loopback by default) when its
    tactician_jmx_host is unset or a loopback address."""
    if "tactician_jmx_local" in hostvars:
        value = hostvars["tactician_jmx_local"]
        return value if isinstance(value, bool) else str(value).strip().lower() in ("1", "true", "yes", "on")
    if not hostvars.get("tactician_service_name"):
        return False
    return str(hostvars.get("tactician_jmx_host") or "127.0.0.1").startswith(LOOPBACK)


def _node(store, host, hostvars):
    if store == "cassandra":
        node = {
            "host": host,
            "address": _address(host, hostvars, "cassandra_node_listen_address"),
            "jmx_port": int(hostvars.get("tactician_jmx_port", hostvars.get("cassandra_node_jmx_port", 7199))),
        }
        if hostvars.get("tactician_jmx_host"):
            node["jmx_host"] = str(hostvars["tactician_jmx_host"])
        if _jmx_local(hostvars):
            node["jmx_local"] = True
        if hostvars.get("tactician_node_port"):
            node["native_port"] = int(hostvars["tactician_node_port"])
        return node
    if store == "mongodb":
        port = int(hostvars.get("tactician_node_port", hostvars.get("ferretdb_node_port", 27017)))
        return {"host": host, "address": "%s:%d" % (_address(host, hostvars, "ferretdb_node_listen_address"), port)}
    port = int(hostvars.get("tactician_node_port", hostvars.get("redis_node_port", 6379)))
    return "%s:%d" % (_address(host, hostvars, "redis_node_bind"), port)


def _flat(terms):
    for term in terms:
        if isinstance(term, (list, tuple)):
            yield from _flat(term)
        else:
            yield term


def cluster_nodes(terms, variables, store):
    """The nodes of the groups (or single hosts) in terms, from the inventory's groups and hostvars."""
    variables = variables or {}
    groups = variables.get("groups", {})
    hostvars = variables.get("hostvars", {})
    nodes = []
    for term in _flat(terms):
        if term in groups:
            hosts = groups[term]
        elif term in hostvars:
            hosts = [term]
        else:
            raise AnsibleLookupError(
                "cluster_nodes: %r is neither an inventory group nor a host; groups: %s"
                % (term, ", ".join(sorted(groups)))
            )
        for host in hosts:
            nodes.append(_node(store, host, hostvars.get(host, {})))
    return nodes


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        return cluster_nodes(terms, variables, self.get_option("store"))
