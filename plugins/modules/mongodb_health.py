#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: mongodb_health
short_description: Check that a MongoDB server answers, and report its version and role
description:
  - Connects with the connection options (SCRAM, TLS), runs C(ping), C(buildInfo) and C(hello) (C(isMaster) on
    servers without C(hello)), and reports the server version and whether it is a standalone, a replica set
    primary, secondary or arbiter (C(other) for a member in another state), or a C(mongos).
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
extends_documentation_fragment:
  - tactician.nosql.mongodb
options:
  fail_when_unhealthy:
    description: Fail when the server does not answer (otherwise return RV(healthy=false)).
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
- name: The MongoDB server answers
  tactician.nosql.mongodb_health:
    login_host: 127.0.0.1
    login_user: tactician
    login_password: "{{ mongodb_password }}"
    auth_mechanism: SCRAM-SHA-256
"""

RETURN = r"""
healthy:
  description: The server answered ping, buildInfo and hello.
  returned: always
  type: bool
server:
  description: Version, role (standalone, primary, secondary, arbiter, other, mongos), replica set name, wire version.
  returned: when healthy
  type: dict
  sample: {version: "8.0.4", role: primary, set_name: rs0, max_wire_version: 25}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core import errors
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail_imports
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import client as mongodb


def main():
    argument_spec = mongodb.mongodb_argument_spec()
    argument_spec.update(fail_when_unhealthy=dict(type="bool", default=True))
    module = AnsibleModule(
        argument_spec=argument_spec,
        required_together=[["login_user", "login_password"]],
        supports_check_mode=True,
    )
    fail_imports(module, mongodb.missing_libraries())
    client = None
    try:
        # The error is the verdict: its text alone is the result's error, the failure says what it means.
        with errors.reported_as(mongodb.MongoAdminError, None):
            client = mongodb.connect(module.params)
            server = mongodb.server_facts(client)
    except TacticianError as exc:
        if module.params["fail_when_unhealthy"]:
            module.fail_json(msg="MongoDB server not healthy: %s" % exc, healthy=False, **exc.report())
        module.exit_json(changed=False, healthy=False, error=str(exc))
    finally:
        if client is not None:
            client.close()
    module.exit_json(changed=False, healthy=True, server=server)


if __name__ == "__main__":
    main()
