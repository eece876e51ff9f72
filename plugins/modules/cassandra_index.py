#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: cassandra_index
short_description: Create or drop a secondary index (SAI by default) on a live Cassandra table
description:
  - Reads the index from C(system_schema.indexes) and creates it (C(CREATE INDEX IF NOT EXISTS ... USING 'sai'))
    or drops it (C(DROP INDEX IF EXISTS)) only when needed.
  - An index of the same name on another table, target, implementation or with other options is an error,
    unless O(recreate) is set; it is then dropped and created again.
  - Storage-attached indexes (SAI) are built in the background after C(CREATE INDEX) returns; with O(wait_built)
    the module waits until every node that is up reports the index built and queryable.
  - Check mode reports the same C(changed) and the statements a real run would execute; diff mode shows the
    index before and after.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
extends_documentation_fragment:
  - tactician.nosql.cassandra
options:
  keyspace:
    description: Keyspace of the table and of the index.
    type: str
    required: true
  table:
    description: Table the index is on. Required with O(state=present).
    type: str
  name:
    description: Index name (unique in its keyspace).
    type: str
    required: true
  column:
    description: Column to index. Give O(column) or O(target) with O(state=present).
    type: str
  target:
    description:
      - Target on a collection column instead of O(column), for example C(keys(tags)), C(values(tags)),
        C(entries(attributes)) or C(full(frozen_list)).
    type: str
  using:
    description:
      - Index implementation. V(sai) (storage-attached index), V(legacy_local_table) (the legacy secondary
        index), V(sasi) (needs C(sasi_indexes_enabled) on the nodes), or a fully qualified index class.
    type: str
    default: sai
  options:
    description:
      - "Options of the index, for example C({case_sensitive: false, normalize: true}) for an SAI index on text."
    type: dict
  state:
    description: Whether the index exists.
    type: str
    choices: [present, absent]
    default: present
  recreate:
    description: Drop and create again an existing index of this name that differs from what is asked.
    type: bool
    default: false
  wait_built:
    description:
      - Wait until every node that is up has built the index (SAI - C(system_views.sai_column_indexes) reports
        it queryable and not building; other indexes - listed in C(system.IndexInfo)).
      - Skipped in check mode.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait with O(wait_built); the module fails when the index is not built by then.
    type: int
    default: 300
attributes:
  check_mode:
    description: Can run in check mode and return the changed status and the statements a real run would.
    support: full
  diff_mode:
    description: Returns the index before and after when run with C(--diff).
    support: full
notes:
  - Schema changes propagate to every node of the cluster; run the module once per cluster (C(run_once)).
"""

EXAMPLES = r"""
- name: SAI index on field0, built before the play goes on
  tactician.nosql.cassandra_index:
    keyspace: ycsb
    table: usertable
    name: usertable_field0_idx
    column: field0
    wait_built: true
    login_user: cassandra
    login_password: "{{ cassandra_password }}"
  run_once: true

- name: Case-insensitive SAI index on the keys of a map
  tactician.nosql.cassandra_index:
    keyspace: shop
    table: products
    name: products_attribute_keys_idx
    target: keys(attributes)
    options:
      case_sensitive: false
    login_user: cassandra
    login_password: "{{ cassandra_password }}"

- name: Drop an index
  tactician.nosql.cassandra_index:
    keyspace: ycsb
    name: usertable_field0_idx
    state: absent
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
    - CREATE INDEX IF NOT EXISTS usertable_field0_idx ON ycsb.usertable (field0) USING 'sai'
index:
  description: The index after the run (what it would be, in check mode); empty when it does not exist.
  returned: always
  type: dict
  sample:
    table: usertable
    target: field0
    class_name: org.apache.cassandra.index.sai.StorageAttachedIndex
    options: {}
built:
  description: Whether every node that is up reports the index built.
  returned: when O(wait_built) is set and not in check mode
  type: bool
  sample: true
nodes:
  description: Build status of the index on each node that is up (address to built).
  returned: when O(wait_built) is set and not in check mode
  type: dict
  sample:
    127.0.0.1: true
waited:
  description: Seconds spent waiting for the build.
  returned: when O(wait_built) is set and not in check mode
  type: float
  sample: 1.52
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core import errors
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail, fail_imports, with_diff
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import indexes, schema


def main():
    argument_spec = cql.cassandra_argument_spec()
    argument_spec.update(
        keyspace=dict(type="str", required=True, no_log=False),
        table=dict(type="str"),
        name=dict(type="str", required=True),
        column=dict(type="str"),
        target=dict(type="str"),
        using=dict(type="str", default="sai"),
        options=dict(type="dict"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        recreate=dict(type="bool", default=False),
        wait_built=dict(type="bool", default=False),
        wait_timeout=dict(type="int", default=300),
    )
    module = AnsibleModule(
        argument_spec=argument_spec,
        required_together=cql.cassandra_required_together(),
        required_if=[["state", "present", ["table"]], ["state", "present", ["column", "target"], True]],
        mutually_exclusive=[["column", "target"]],
        supports_check_mode=True,
    )
    fail_imports(module, cql.missing_libraries())
    params = module.params
    label = "%s.%s" % (params["keyspace"], params["name"])
    cluster = None
    result = None
    try:
        with errors.reported_as(cql.CassandraError, "CQL error on index %s" % label, with_type=True):
            # Bad input fails here, before any connection.
            schema.check_name(params["keyspace"], "keyspace")
            schema.check_table_name(params["name"], "name")
            sai = True
            if params["state"] == "present":
                schema.check_table_name(params["table"], "table")
                indexes.index_target(params["column"], params["target"])
                class_name, _using = indexes.index_class(params["using"])
                sai = class_name == indexes.SAI_CLASS
            if params["wait_timeout"] < 0:
                raise cql.CassandraError("wait_timeout: %r is not allowed; give seconds >= 0" % params["wait_timeout"])
            cluster, session = cql.connect(params)
            result = indexes.ensure_index(
                session,
                params["keyspace"],
                params["table"],
                params["name"],
                state=params["state"],
                column=params["column"],
                target=params["target"],
                using=params["using"],
                options=params["options"],
                recreate=params["recreate"],
                check_mode=module.check_mode,
            )
            if params["wait_built"] and params["state"] == "present" and not module.check_mode:
                result.update(
                    indexes.wait_index_built(
                        session, params["keyspace"], params["name"].lower(), sai, params["wait_timeout"]
                    )
                )
    except TacticianError as exc:
        fail(module, exc)
    finally:
        if cluster is not None:
            cluster.shutdown()
    result.pop("created", None)
    result["index"] = with_diff(module, result)["after"]
    if result.get("built") is False:
        module.fail_json(
            msg="index %s not built on every node after %s s: %s" % (label, result["waited"], result["nodes"]), **result
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
