#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: mongodb_index
short_description: Create, change or drop a MongoDB index (secondary, compound, TTL, partial, unique)
description:
  - Reads the collection's indexes with C(listIndexes) and changes them only when the wanted index differs.
  - An index with the same keys and options is left alone. A TTL index whose only difference is
    C(expireAfterSeconds) is changed in place with C(collMod) (this also turns an existing single-field index
    into a TTL index). Any other difference (keys, O(unique), O(sparse), O(partial_filter_expression), removing
    a TTL) fails with a message naming the differences, unless O(recreate=true), which drops and re-creates the
    index.
  - When O(name) is not given, the index is named as MongoDB names it (C(field_direction) joined by C(_)); an
    index created earlier with the same keys under another name is then taken as the wanted index.
  - Check mode reports the same C(changed) and the commands a real run would execute; diff mode shows the
    index's options before and after.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
extends_documentation_fragment:
  - tactician.nosql.mongodb
options:
  database:
    description: Database of the collection.
    type: str
    required: true
  collection:
    description: Collection the index belongs to (it is created with the first index when missing).
    type: str
    required: true
  name:
    description:
      - Index name. Defaults to the name MongoDB generates from O(keys), for example C(customer_1_total_-1).
      - With O(state=absent), the index to drop (otherwise it is found by O(keys)).
    type: str
  keys:
    description:
      - "The index keys in order, each item either a one-entry mapping C({field: direction}) or a pair
        C([field, direction])."
      - "Directions: C(1) (ascending), C(-1) (descending), C(hashed), C(text), C(2dsphere)."
      - Required with O(state=present).
    type: list
    elements: raw
  unique:
    description: Reject documents that repeat the indexed values (not with a hashed field).
    type: bool
    default: false
  sparse:
    description: Index only documents that have the indexed fields (not together with O(partial_filter_expression)).
    type: bool
    default: false
  expire_after_seconds:
    description:
      - Makes a TTL index, whose documents the server deletes this many seconds after the date in the field.
      - Only on a single ascending or descending field other than C(_id); 0 to 2147483647.
    type: int
  partial_filter_expression:
    description: "Index only the documents matching this filter, for example C({status: {$eq: open}})."
    type: dict
  state:
    description: Whether the index exists.
    type: str
    choices: [present, absent]
    default: present
  recreate:
    description:
      - Drop and re-create an index whose keys or options differ in a way MongoDB cannot change in place.
      - Queries lose the index until it is built again.
    type: bool
    default: false
attributes:
  check_mode:
    description: Can run in check mode and return the changed status and the commands a real run would report.
    support: full
  diff_mode:
    description: Returns the index's keys and options before and after when run with C(--diff).
    support: full
notes:
  - Needs the C(createIndex), C(collMod), C(dropIndex) and C(listIndexes) actions on the database (role
    C(dbAdmin) or C(readWrite) plus C(dbAdmin)).
  - A TTL index deletes expired documents in the background, once per C(ttlMonitorSleepSecs) (60 seconds by
    default); it does not delete them at the moment they expire.
"""

EXAMPLES = r"""
- name: Secondary index on status
  tactician.nosql.mongodb_index:
    database: shop
    collection: orders
    keys:
      - status: 1
    login_user: tactician
    login_password: "{{ mongodb_password }}"

- name: Compound index for the customer's orders, newest first
  tactician.nosql.mongodb_index:
    database: shop
    collection: orders
    keys:
      - [customer, 1]
      - [created, -1]

- name: Sessions expire an hour after their last use (TTL)
  tactician.nosql.mongodb_index:
    database: shop
    collection: sessions
    keys:
      - lastUsed: 1
    expire_after_seconds: 3600

- name: Unique partial index on open orders only
  tactician.nosql.mongodb_index:
    database: shop
    collection: orders
    name: open_order_number
    keys:
      - number: 1
    unique: true
    partial_filter_expression:
      status: open

- name: Drop an index nobody uses
  tactician.nosql.mongodb_index:
    database: shop
    collection: orders
    name: legacy_1
    state: absent
"""

RETURN = r"""
name:
  description: Name of the index (the generated one when O(name) was not given).
  returned: always
  type: str
  sample: customer_1_created_-1
commands:
  description: Database commands executed (or that would be, in check mode), each with the database in C($db).
  returned: always
  type: list
  elements: dict
  sample:
    - createIndexes: orders
      indexes:
        - key: {customer: 1, created: -1}
          name: customer_1_created_-1
      $db: shop
index:
  description: The index's keys and managed options after the run.
  returned: when O(state=present)
  type: dict
  sample:
    name: lastUsed_1
    key: {lastUsed: 1}
    unique: false
    sparse: false
    expireAfterSeconds: 3600
    partialFilterExpression: null
indexes:
  description: Every index of the collection after the run (in check mode, as it would be), with the same fields.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core import errors
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail, fail_imports, with_diff
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import client as mongodb
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import schema as mongodb_schema


def main():
    argument_spec = mongodb.mongodb_argument_spec()
    argument_spec.update(
        database=dict(type="str", required=True),
        collection=dict(type="str", required=True),
        name=dict(type="str"),
        keys=dict(type="list", elements="raw", no_log=False),
        unique=dict(type="bool", default=False),
        sparse=dict(type="bool", default=False),
        expire_after_seconds=dict(type="int"),
        partial_filter_expression=dict(type="dict"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        recreate=dict(type="bool", default=False),
    )
    module = AnsibleModule(
        argument_spec=argument_spec,
        required_together=[["login_user", "login_password"]],
        required_if=[["state", "present", ["keys"]], ["state", "absent", ["name", "keys"], True]],
        supports_check_mode=True,
    )
    fail_imports(module, mongodb.missing_libraries())
    params = module.params
    target = "%s.%s" % (params["database"], params["collection"])
    client = None
    try:
        with errors.reported_as(
            mongodb.MongoAdminError, "MongoDB error on the indexes of %s" % target, passing=mongodb_schema.SchemaError
        ):
            if params["state"] == "present":
                # Bad input fails before any connection is made.
                mongodb_schema.wanted_index(
                    params["keys"],
                    params["name"],
                    params["unique"],
                    params["sparse"],
                    params["expire_after_seconds"],
                    params["partial_filter_expression"],
                )
            client = mongodb.connect(params)
            result = mongodb_schema.ensure_index(
                client,
                params["database"],
                params["collection"],
                state=params["state"],
                keys=params["keys"],
                name=params["name"],
                unique=params["unique"],
                sparse=params["sparse"],
                expire_after_seconds=params["expire_after_seconds"],
                partial_filter_expression=params["partial_filter_expression"],
                recreate=params["recreate"],
                check_mode=module.check_mode,
            )
    except TacticianError as exc:
        fail(module, exc)
    finally:
        if client is not None:
            client.close()
    with_diff(module, result)
    if params["state"] == "absent":
        result.pop("index", None)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
