#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: redis_cluster
short_description: Form a Redis Cluster of masters and replicas and wait until it is healthy
description:
  - With empty cluster-mode nodes, the first C(len(nodes) / (replicas + 1)) become masters with contiguous slot
    ranges and the others replicate them in turn; then waits until every node reports C(cluster_state:ok)
    and every replica's link to its master is up.
  - When the listed nodes already form one cluster, only waits for health and reports no change.
  - Nodes that are partly in a cluster are refused with the state of each node; nothing is touched.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
extends_documentation_fragment:
  - tactician.nosql.redis
options:
  nodes:
    description: The nodes as C(host:port); their order decides masters first.
    type: list
    elements: str
    required: true
  replicas:
    description: Replicas per master.
    type: int
    default: 1
  wait_timeout:
    description: Seconds to wait for the cluster to form and become healthy.
    type: int
    default: 120
attributes:
  check_mode:
    description: Can run in check mode and return the changed status a real run would report.
    support: full
  diff_mode:
    description: Returns no diff.
    support: none
"""

EXAMPLES = r"""
- name: Three masters, three replicas
  tactician.nosql.redis_cluster:
    nodes: [127.0.0.1:6381, 127.0.0.1:6382, 127.0.0.1:6383, 127.0.0.1:6384, 127.0.0.1:6385, 127.0.0.1:6386]
    replicas: 1
    login_user: tactician
    login_password: "{{ redis_password }}"
"""

RETURN = r"""
layout:
  description: Each master with its replicas.
  returned: success
  type: dict
  sample: {"127.0.0.1:6381": ["127.0.0.1:6385"]}
views:
  description: What each node reports (cluster_state, slots, known nodes, role, master link).
  returned: success
  type: dict
waited:
  description: Seconds spent waiting for health.
  returned: success
  type: float
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail, fail_imports
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter


def main():
    argument_spec = redis_adapter.redis_argument_spec()
    argument_spec.update(
        nodes=dict(type="list", elements="str", required=True),
        replicas=dict(type="int", default=1),
        wait_timeout=dict(type="int", default=120),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    fail_imports(module, redis_adapter.missing_libraries())
    params = module.params
    nodes = params["nodes"]
    if params["replicas"] < 0:
        module.fail_json(msg="replicas: must be >= 0, got %d" % params["replicas"])
    try:
        shape, details = redis_adapter.cluster_shape(params, nodes, params["replicas"])
        if shape == "partial":
            module.fail_json(
                msg="nodes: some nodes are already in a cluster and others are not; nothing was changed. "
                "Reset them (CLUSTER RESET) or list exactly the nodes of one cluster.",
                details=details,
            )
        changed = shape == "empty"
        if changed and module.check_mode:
            module.exit_json(changed=True, layout={}, views={}, waited=0.0)
        if changed:
            redis_adapter.create_cluster(params, nodes, params["replicas"], timeout=params["wait_timeout"])
        report = redis_adapter.wait_healthy(params, nodes, params["wait_timeout"], expected_nodes=len(nodes))
        if not report["healthy"]:
            module.fail_json(
                msg="Redis cluster not healthy: " + "; ".join(report["problems"]),
                views=report["views"],
                changed=changed,
            )
        layout = redis_adapter.cluster_layout(params, nodes)
    except TacticianError as exc:
        fail(module, exc)
    module.exit_json(changed=changed, layout=layout, views=report["views"], waited=report["waited"])


if __name__ == "__main__":
    main()
