#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: cassandra_ring_info
short_description: Read a Cassandra cluster's token ring and its complete-sets for one keyspace
description:
  - Reads every node's tokens and data centre from C(system.local) and C(system.peers_v2) over CQL, and the
    keyspace's replication from C(system_schema.keyspaces).
  - From them, the complete-sets (OptimusCloud, seed 002) - disjoint groups of nodes each holding every record of
    the keyspace once - found by colouring each token range's replicas (the owner and the next RF - 1 distinct
    nodes clockwise in the data centre; racks are not taken into account). Their count is what
    M(tactician.nosql.plan) in mode C(heterogeneous) and the rolling batch of complete-sets use.
  - Changes nothing.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
extends_documentation_fragment:
  - tactician.nosql.cassandra
options:
  keyspace:
    description: Keyspace whose replication defines the replica sets.
    type: str
    required: true
  data_center:
    description: Data centre to plan for, when the keyspace is replicated to several.
    type: str
  nodes:
    description:
      - The inventory's nodes (as the lookup C(tactician.nosql.cluster_nodes) returns them), so the result names
        nodes by inventory host instead of address.
    type: list
    elements: dict
attributes:
  check_mode:
    description: Reads only.
    support: full
  diff_mode:
    description: Nothing to show; it changes nothing.
    support: none
"""

EXAMPLES = r"""
- name: Complete-sets of the YCSB keyspace
  tactician.nosql.cassandra_ring_info:
    keyspace: ycsb
    nodes: "{{ query('tactician.nosql.cluster_nodes', 'cassandra', store='cassandra') }}"
    login_hosts: ["{{ cassandra_node_listen_address }}"]
    login_user: "{{ tactician_cassandra_user }}"
    login_password: "{{ tactician_cassandra_password }}"
  register: ring

- name: Plan VM types and configurations per complete-set
  tactician.nosql.plan:
    mode: heterogeneous
    model_file: .lab/bench/models/cassandra-surrogate.json
    workload: {mix: {read: 0.95, update: 0.05}, requestdistribution: zipfian, records: 20000, threads: 32}
    cluster: {nodes: "{{ ring.nodes }}", rf: "{{ ring.rf }}", cl: ONE, sets: "{{ ring.complete_sets }}"}
    budget: 2.5
"""

RETURN = r"""
tokens:
  description: Tokens of each node of the data centre (inventory host name, else address).
  returned: always
  type: dict
nodes:
  description: The data centre's nodes, sorted.
  returned: always
  type: list
  elements: str
rf:
  description: The keyspace's replication factor in the data centre.
  returned: always
  type: int
data_center:
  description: The data centre planned for.
  returned: always
  type: str
replication:
  description: The keyspace's replication map.
  returned: always
  type: dict
complete_sets:
  description: Disjoint groups of nodes, each holding every record once (the whole data centre when none exist).
  returned: always
  type: list
  elements: list
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core import errors
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail, fail_imports
from ansible_collections.tactician.nosql.plugins.module_utils.planning import complete_sets as hetero
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql


def main():
    argument_spec = cql.cassandra_argument_spec()
    argument_spec.update(
        keyspace=dict(type="str", required=True, no_log=False),
        data_center=dict(type="str"),
        nodes=dict(type="list", elements="dict"),
    )
    module = AnsibleModule(
        argument_spec=argument_spec,
        required_together=cql.cassandra_required_together(),
        supports_check_mode=True,
    )
    fail_imports(module, cql.missing_libraries())
    params = module.params
    names = {str(n["address"]): str(n.get("host") or n["address"]) for n in params["nodes"] or [] if n.get("address")}
    cluster = None
    try:
        with errors.reported_as(cql.CassandraError, "CQL error reading the ring"):
            cluster, session = cql.connect(params)
            tokens, centers = cql.token_ring(session)
            found = cql.keyspace_replication(session, params["keyspace"])
            if found is None:
                module.fail_json(msg="keyspace: %s does not exist" % params["keyspace"])
            replication = found["replication"]
            rf = cql.replication_factor(replication, params["data_center"])
            present = sorted(set(centers.values()))
            center = params["data_center"]
            if center is None and str(replication.get("class", "")).endswith("SimpleStrategy"):
                if len(present) > 1:
                    module.fail_json(
                        msg="data_center: the ring spans %s; name the one to plan for" % ", ".join(present)
                    )
                center = present[0]
            elif center is None:
                center = next(k for k in replication if k != "class")
            ring = {names.get(a, a): t for a, t in tokens.items() if centers.get(a) == center}
            if not ring:
                module.fail_json(msg="data_center: %r has no node; the ring has %s" % (center, ", ".join(present)))
            if rf > len(ring):
                module.fail_json(
                    msg="keyspace %s: replication factor %d exceeds the %d node(s) of %s"
                    % (params["keyspace"], rf, len(ring), center)
                )
            sets = hetero.complete_sets(hetero.cassandra_replicas(ring, rf), nodes=list(ring))
    except TacticianError as exc:
        fail(module, exc)
    finally:
        if cluster is not None:
            cluster.shutdown()
    module.exit_json(
        changed=False,
        tokens=ring,
        nodes=sorted(ring),
        rf=rf,
        data_center=center,
        replication=replication,
        complete_sets=sets,
    )


if __name__ == "__main__":
    main()
