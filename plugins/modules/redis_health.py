#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: redis_health
short_description: Check (and wait) until a Redis Cluster is healthy as every node sees it
description:
  - Asks every listed node for C(CLUSTER INFO) and C(INFO replication); healthy means every node reports
    C(cluster_state:ok) with all 16384 slots ok, knows the expected number of nodes, and every replica's link to
    its master is up.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
extends_documentation_fragment:
  - tactician.nosql.redis
options:
  nodes:
    description: The nodes to ask, as C(host:port).
    type: list
    elements: str
    required: true
  expected_nodes:
    description: How many nodes each must know; defaults to the length of O(nodes).
    type: int
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
- name: The lab's Redis cluster is healthy
  tactician.nosql.redis_health:
    nodes: [127.0.0.1:6381, 127.0.0.1:6382, 127.0.0.1:6383, 127.0.0.1:6384, 127.0.0.1:6385, 127.0.0.1:6386]
    login_user: tactician
    login_password: "{{ redis_password }}"
    wait_timeout: 30
"""

RETURN = r"""
healthy:
  description: Whether every node reports a healthy cluster.
  returned: always
  type: bool
problems:
  description: What is wrong, one line per finding.
  returned: always
  type: list
  elements: str
views:
  description: Per node, what it reports (cluster_state, slots_ok, known_nodes, role, master_link_status) or its error.
  returned: always
  type: dict
waited:
  description: Seconds spent polling.
  returned: always
  type: float
summary:
  description: The verdict and each node's view, as lines for a person.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import exit_health, fail, fail_imports
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter


def main():
    argument_spec = redis_adapter.redis_argument_spec()
    argument_spec.update(
        nodes=dict(type="list", elements="str", required=True),
        expected_nodes=dict(type="int"),
        wait_timeout=dict(type="int", default=0),
        fail_when_unhealthy=dict(type="bool", default=True),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    fail_imports(module, redis_adapter.missing_libraries())
    params = module.params
    try:
        report = redis_adapter.wait_healthy(
            params,
            params["nodes"],
            params["wait_timeout"],
            expected_nodes=params["expected_nodes"] or len(params["nodes"]),
        )
    except TacticianError as exc:
        fail(module, exc)
    exit_health(module, "Redis", report, redis_adapter.summary(report["healthy"], report["problems"], report["views"]))


if __name__ == "__main__":
    main()
