#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: cassandra_health
short_description: Check (and wait) until every Cassandra node sees every other node Up/Normal
description:
  - Runs C(nodetool status) against every listed node, so the ring is judged as each peer sees it, not as one
    node reports itself, and opens a CQL session to each node (with the connection options) to prove it serves
    clients. A node whose JMX answers only on its own host (O(nodes[].jmx_local)) is asked by CQL instead,
    unless the module runs on it (O(here)).
  - Polls until healthy or O(wait_timeout) runs out; fails with every problem found when the cluster is not healthy.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
extends_documentation_fragment:
  - tactician.nosql.cassandra
options:
  nodes:
    description: The nodes to ask.
    type: list
    elements: dict
    required: true
    suboptions:
      address:
        description: The node's listen/rpc address, as C(nodetool status) shows it.
        type: str
        required: true
      host:
        description: Inventory name of the node, for reports only.
        type: str
      jmx_host:
        description: Address of its local JMX.
        type: str
        default: 127.0.0.1
      jmx_port:
        description: Its JMX port.
        type: int
        default: 7199
      native_port:
        description: Its CQL port, when not O(login_port).
        type: int
      jmx_local:
        description:
          - Its JMX answers only on its own host (a packaged install's default). Its view is then read by
            C(nodetool) only when the module runs on that node (O(here)), and otherwise by CQL from its gossip
            state (C(system_views.gossip_info)), an endpoint counting as up when its heartbeat advanced over
            2.5 s.
        type: bool
        default: false
  here:
    description:
      - The address of the node the module runs on, when it runs on one of O(nodes) (for example delegated to
        the first node of a packaged cluster); a node with C(jmx_local) is asked by C(nodetool) only there.
    type: str
  expected_nodes:
    description: Addresses that every node must see UN; defaults to the addresses of O(nodes).
    type: list
    elements: str
  cassandra_home:
    description: Directory whose C(lib/) holds the Cassandra jars (nodetool runs from them).
    type: path
    required: true
  java:
    description: The java executable.
    type: path
    default: java
  jmx_user:
    description: JMX user, when JMX authentication is on.
    type: str
  jmx_password:
    description: JMX password (through a private password file, never a command line).
    type: str
  check_cql:
    description: Also open a CQL session to each node.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to keep polling before declaring the cluster unhealthy; 0 checks once.
    type: int
    default: 0
  fail_when_unhealthy:
    description: Fail when the cluster is not healthy (otherwise return RV(healthy=false)).
    type: bool
    default: true
attributes:
  check_mode:
    description: Can run in check mode and return the changed status a real run would report.
    support: full
  diff_mode:
    description: Returns no diff.
    support: none
"""

EXAMPLES = r"""
- name: Wait until the three lab nodes all see each other UN
  tactician.nosql.cassandra_health:
    cassandra_home: /opt/tactician/cassandra/5.0.9
    login_user: cassandra
    login_password: "{{ cassandra_password }}"
    nodes:
      - {address: 127.0.0.1, jmx_port: 7199}
      - {address: 127.0.0.2, jmx_port: 7299}
      - {address: 127.0.0.3, jmx_port: 7399}
    wait_timeout: 300
"""

RETURN = r"""
healthy:
  description: Every node sees every expected node UN (and answers CQL when O(check_cql)).
  returned: always
  type: bool
problems:
  description: What is wrong, one line per finding.
  returned: always
  type: list
  elements: str
views:
  description: Per node, the state of every peer as it sees it (C(status)), its release version (C(cql)) or the errors.
  returned: always
  type: dict
  sample: {"127.0.0.1": {"status": {"127.0.0.1": UN, "127.0.0.2": UN}, "cql": "5.0.9"}}
waited:
  description: Seconds spent polling.
  returned: always
  type: float
summary:
  description: The verdict and each node's view, as lines for a person.
  returned: always
  type: list
  elements: str
auth:
  description:
    - How the cluster reads its roles at every login and permission check that misses its auth caches, for the
      roll's batch; C(null) when it checks no password.
    - C(rf) is system_auth's replication (a number, or replicas per data center), C(cl) the server's
      C(auth_read_consistency_level), C(error) says why it could not be read.
  returned: when O(check_cql)
  type: dict
  sample: {"rf": 2, "cl": "LOCAL_QUORUM", "authenticator": "PasswordAuthenticator"}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import exit_health, fail, fail_imports
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import health as cassandra_cluster


def main():
    argument_spec = cql.cassandra_argument_spec()
    argument_spec.update(
        nodes=dict(
            type="list",
            elements="dict",
            required=True,
            options=dict(
                address=dict(type="str", required=True),
                host=dict(type="str"),
                jmx_host=dict(type="str", default="127.0.0.1"),
                jmx_port=dict(type="int", default=7199),
                native_port=dict(type="int"),
                jmx_local=dict(type="bool", default=False),
            ),
        ),
        here=dict(type="str"),
        expected_nodes=dict(type="list", elements="str"),
        cassandra_home=dict(type="path", required=True),
        java=dict(type="path", default="java"),
        jmx_user=dict(type="str"),
        jmx_password=dict(type="str", no_log=True),
        check_cql=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=0),
        fail_when_unhealthy=dict(type="bool", default=True),
    )
    module = AnsibleModule(
        argument_spec=argument_spec,
        required_together=cql.cassandra_required_together(),
        supports_check_mode=True,
    )
    if module.params["check_cql"]:
        fail_imports(module, cql.missing_libraries())
    try:
        report = cassandra_cluster.wait_healthy(module.params, module.params["nodes"], module.params["wait_timeout"])
    except TacticianError as exc:
        fail(module, exc)
    if module.params["check_cql"]:
        report["auth"] = cassandra_cluster.auth_reads(module.params)
    exit_health(
        module, "Cassandra", report, cassandra_cluster.summary(report["healthy"], report["problems"], report["views"])
    )


if __name__ == "__main__":
    main()
