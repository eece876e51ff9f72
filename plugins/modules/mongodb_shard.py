#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: mongodb_shard
short_description: Shard a MongoDB collection on a ranged or hashed shard key through a mongos
description:
  - Connects to a C(mongos) (anything else fails with a message saying what the server is), reads
    C(config.collections) and shards the collection only when it is not sharded yet.
  - Runs C(enableSharding) first when C(config.databases) has no entry for the database (or, before MongoDB
    7.0, marks it not partitioned), then C(shardCollection).
  - A collection already sharded on the same key is left alone; one sharded on another key fails (changing a
    shard key needs C(reshardCollection) or C(refineCollectionShardKey), which this module does not run).
  - Check mode reports the same C(changed) and the commands a real run would execute; diff mode shows the
    shard key before and after.
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
    description: Collection to shard.
    type: str
    required: true
  key:
    description:
      - "The shard key in order, as a mapping C({field: direction}) or a list of C({field: direction}) or
        C([field, direction]) items."
      - "Directions: C(1) (ranged) or C(hashed) (at most one field)."
      - A collection with documents needs an index that starts with the shard key (see
        M(tactician.nosql.mongodb_index)); an empty one gets it from C(shardCollection).
    type: raw
    required: true
  unique:
    description: Enforce uniqueness of the shard key (not with a hashed key).
    type: bool
    default: false
  state:
    description: Only C(present) (the collection is sharded); unsharding is not done by this module.
    type: str
    choices: [present]
    default: present
attributes:
  check_mode:
    description: Can run in check mode and return the changed status and the commands a real run would report.
    support: full
  diff_mode:
    description: Returns the shard key before and after when run with C(--diff).
    support: full
notes:
  - Needs the C(enableSharding) action (role C(clusterManager) or C(enableSharding) privileges) and read access
    to the C(config) database.
"""

EXAMPLES = r"""
- name: Spread the orders over the shards by a hashed customer id
  tactician.nosql.mongodb_shard:
    database: shop
    collection: orders
    key:
      customer: hashed
    login_host: mongos.example.net
    login_user: tactician
    login_password: "{{ mongodb_password }}"

- name: Ranged compound shard key, in order
  tactician.nosql.mongodb_shard:
    database: shop
    collection: events
    key:
      - [tenant, 1]
      - [created, 1]
"""

RETURN = r"""
commands:
  description: Commands executed on the admin database (or that would be, in check mode), each with C($db).
  returned: always
  type: list
  elements: dict
  sample:
    - {enableSharding: shop, $db: admin}
    - {shardCollection: shop.orders, key: {customer: hashed}, unique: false, $db: admin}
sharding:
  description: The collection's shard key and uniqueness after the run.
  returned: always
  type: dict
  sample: {key: {customer: hashed}, unique: false}
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
        key=dict(type="raw", required=True, no_log=False),
        unique=dict(type="bool", default=False),
        state=dict(type="str", choices=["present"], default="present"),
    )
    module = AnsibleModule(
        argument_spec=argument_spec,
        required_together=[["login_user", "login_password"]],
        supports_check_mode=True,
    )
    fail_imports(module, mongodb.missing_libraries())
    params = module.params
    target = "%s.%s" % (params["database"], params["collection"])
    client = None
    try:
        with errors.reported_as(
            mongodb.MongoAdminError, "MongoDB error while sharding %s" % target, passing=mongodb_schema.SchemaError
        ):
            # Bad input fails before any connection is made.
            mongodb_schema.check_namespace(params["database"], params["collection"])
            mongodb_schema.normalize_shard_key(params["key"])
            client = mongodb.connect(params)
            result = mongodb_schema.ensure_sharded(
                client,
                params["database"],
                params["collection"],
                params["key"],
                unique=params["unique"],
                check_mode=module.check_mode,
            )
    except TacticianError as exc:
        fail(module, exc)
    finally:
        if client is not None:
            client.close()
    with_diff(module, result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
