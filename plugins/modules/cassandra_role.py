#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: cassandra_role
short_description: Create, alter or drop a Cassandra role (password authentication)
description:
  - Reads the role from C(system_auth.roles) and changes it only when its login or superuser flag differs, or
    when it does not exist. Cassandra keeps only a salted hash of a password, so the password is set when the role
    is created, or on every run with O(update_password=always).
  - A fresh cluster has only the default superuser C(cassandra), whose authentication needs a QUORUM of
    C(system_auth) replicas; a cluster that must stay available while nodes restart needs a role of its own.
    With O(bootstrap_user), the module logs in as that user when O(login_user) cannot log in yet (the first run).
  - Returned statements never contain the password.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
extends_documentation_fragment:
  - tactician.nosql.cassandra
options:
  name:
    description: Role name.
    type: str
    required: true
  state:
    description: Whether the role exists.
    type: str
    choices: [present, absent]
    default: present
  password:
    description: Password of the role (never logged).
    type: str
  update_password:
    description: Set the password only when the role is created, or on every run.
    type: str
    choices: [on_create, always]
    default: on_create
  login:
    description: The role can log in.
    type: bool
    default: true
  superuser:
    description: The role is a superuser.
    type: bool
    default: false
  bootstrap_user:
    description: User to log in as when O(login_user) cannot (yet) log in, typically the default superuser.
    type: str
  bootstrap_password:
    description: Its password.
    type: str
attributes:
  check_mode:
    description: Reports the changed status and the statements (password hidden) a real run would execute.
    support: full
  diff_mode:
    description: Shows the role's login and superuser flags before and after.
    support: full
"""

EXAMPLES = r"""
- name: A superuser of the collection's own, created with the default superuser on the first run
  tactician.nosql.cassandra_role:
    name: tactician
    password: "{{ cassandra_password }}"
    superuser: true
    login_user: tactician
    login_password: "{{ cassandra_password }}"
    bootstrap_user: cassandra
    bootstrap_password: cassandra

- name: The default superuser may no longer log in
  tactician.nosql.cassandra_role:
    name: cassandra
    login: false
    superuser: true
    login_user: tactician
    login_password: "{{ cassandra_password }}"
"""

RETURN = r"""
queries:
  description: CQL statements executed (or that would be, in check mode), passwords hidden.
  returned: always
  type: list
  elements: str
  sample: ["CREATE ROLE tactician WITH PASSWORD = '********' AND LOGIN = true AND SUPERUSER = true"]
connected_as:
  description: The user the module logged in as (O(login_user) or O(bootstrap_user)).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core import errors
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail, fail_imports, with_diff
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.roles import ensure_role


def main():
    argument_spec = cql.cassandra_argument_spec()
    argument_spec.update(
        name=dict(type="str", required=True),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        password=dict(type="str", no_log=True),
        update_password=dict(type="str", choices=["on_create", "always"], default="on_create", no_log=False),
        login=dict(type="bool", default=True),
        superuser=dict(type="bool", default=False),
        bootstrap_user=dict(type="str"),
        bootstrap_password=dict(type="str", no_log=True),
    )
    module = AnsibleModule(
        argument_spec=argument_spec,
        required_together=cql.cassandra_required_together() + [["bootstrap_user", "bootstrap_password"]],
        supports_check_mode=True,
    )
    fail_imports(module, cql.missing_libraries())
    params = module.params
    cluster = None
    connected_as = params["login_user"]
    try:
        with errors.reported_as(cql.CassandraError, "CQL error on role %s" % params["name"]):
            try:
                cluster, session = cql.connect(params)
            except cql.CassandraError:
                if not params["bootstrap_user"]:
                    raise
                connected_as = params["bootstrap_user"]
                cluster, session = cql.connect(
                    dict(params, login_user=params["bootstrap_user"], login_password=params["bootstrap_password"])
                )
            result = ensure_role(
                session,
                params["name"],
                params["state"],
                params["password"],
                params["login"],
                params["superuser"],
                params["update_password"],
                module.check_mode,
            )
    except TacticianError as exc:
        fail(module, exc)
    finally:
        if cluster is not None:
            cluster.shutdown()
    with_diff(module, result)
    module.exit_json(connected_as=connected_as, **result)


if __name__ == "__main__":
    main()
