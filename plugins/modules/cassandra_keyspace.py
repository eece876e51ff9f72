#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: cassandra_keyspace
short_description: Create, alter or drop a Cassandra keyspace and its replication
description:
  - Reads the keyspace from C(system_schema.keyspaces) and changes it only when it differs from what is asked.
  - Check mode reports the same C(changed) and the statements a real run would execute; diff mode shows the
    replication before and after.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
extends_documentation_fragment:
  - tactician.nosql.cassandra
options:
  name:
    description: Keyspace name (letters, digits and C(_), at most 48).
    type: str
    required: true
  state:
    description: Whether the keyspace exists.
    type: str
    choices: [present, absent]
    default: present
  replication_class:
    description: Replication strategy.
    type: str
    choices: [SimpleStrategy, NetworkTopologyStrategy]
    default: SimpleStrategy
  replication_factor:
    description: Replicas of each row with C(SimpleStrategy).
    type: int
    default: 1
  data_centers:
    description: "Replicas per data center with C(NetworkTopologyStrategy), for example C({datacenter1: 3})."
    type: dict
  durable_writes:
    description: Write the commit log for this keyspace.
    type: bool
    default: true
attributes:
  check_mode:
    description: Can run in check mode and return the changed status a real run would report.
    support: full
  diff_mode:
    description: Returns the replication before and after when run with C(--diff).
    support: full
notes:
  - Raising the replication factor does not stream existing data; run C(nodetool repair) on the keyspace afterwards.
"""

EXAMPLES = r"""
- name: Keyspace of the lab, three replicas
  tactician.nosql.cassandra_keyspace:
    name: tactician
    replication_factor: 3
    login_user: cassandra
    login_password: "{{ cassandra_password }}"
"""

RETURN = r"""
queries:
  description: CQL statements executed (or that would be, in check mode).
  returned: always
  type: list
  elements: str
  sample:
    - >-
      CREATE KEYSPACE tactician WITH replication = {'class': 'org.apache.cassandra.locator.SimpleStrategy',
      'replication_factor': '3'} AND durable_writes = true
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core import errors
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail, fail_imports, with_diff
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql


def main():
    argument_spec = cql.cassandra_argument_spec()
    argument_spec.update(
        name=dict(type="str", required=True),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        replication_class=dict(type="str", choices=cql.REPLICATION_CLASSES, default="SimpleStrategy"),
        replication_factor=dict(type="int", default=1),
        data_centers=dict(type="dict"),
        durable_writes=dict(type="bool", default=True),
    )
    module = AnsibleModule(
        argument_spec=argument_spec,
        required_together=cql.cassandra_required_together(),
        supports_check_mode=True,
    )
    fail_imports(module, cql.missing_libraries())
    params = module.params
    cluster = None
    try:
        with errors.reported_as(cql.CassandraError, "CQL error on keyspace %s" % params["name"]):
            replication = None
            if params["state"] == "present":
                replication = cql.wanted_replication(
                    params["replication_class"], params["replication_factor"], params["data_centers"]
                )
            cluster, session = cql.connect(params)
            result = cql.ensure_keyspace(
                session, params["name"], params["state"], replication, params["durable_writes"], module.check_mode
            )
    except TacticianError as exc:
        fail(module, exc)
    finally:
        if cluster is not None:
            cluster.shutdown()
    with_diff(module, result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
