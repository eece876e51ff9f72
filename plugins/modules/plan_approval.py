#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: plan_approval
short_description: Approve a plan file, or revoke its approval
description:
  - A person reads a plan file (written by M(tactician.nosql.plan)) and approves it with O(state=approved) and
    O(by); C(playbooks/autotune.yml) in mode C(approve) applies only an approved plan.
  - Approving writes the plan's C(approval) block, C(approved=true), C(by), C(at) and C(digest), the SHA-256 of the
    plan's content without the approval block. A plan changed after it was approved no longer has that digest,
    and autotune refuses it until it is approved again.
  - The plan file is checked against its schema first; a malformed plan, or one without steps, is refused naming
    the field, and the file is left as it is.
  - O(state=approved) leaves a plan approved by the same O(by) whose digest matches as it is. O(state=revoked)
    sets the block back to C(approved=false) (a plan not approved is left as it is).
  - Run it where the plan file is, the controller (C(hosts=localhost), C(delegate_to=localhost) or an ad-hoc
    C(ansible localhost -m tactician.nosql.plan_approval ...)).
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  path:
    description: The plan file.
    type: path
    required: true
  state:
    description: Whether the plan is approved.
    type: str
    choices: [approved, revoked]
    default: approved
  by:
    description: Who approves the plan (a name). Required with O(state=approved).
    type: str
  at:
    description:
      - When it was approved, ISO 8601 (a time without zone is UTC). Defaults to now.
      - Ignored when the plan is already approved by O(by) with a digest that matches.
    type: str
attributes:
  check_mode:
    description: Reports whether the approval would change and the approval block it would write; writes nothing.
    support: full
  diff_mode:
    description: Returns the approval block before and after.
    support: full
notes:
  - A plan file is rewritten as a whole when its approval changes (the same content; comments in it are not kept).
seealso:
  - module: tactician.nosql.plan
  - plugin: tactician.nosql.plan_file
    plugin_type: lookup
"""

EXAMPLES = r"""
- name: Approve a plan after reading it
  tactician.nosql.plan_approval:
    path: .lab/plans/cassandra-20261122T101500.yml
    by: jane.doe
  delegate_to: localhost

- name: Take the approval back
  tactician.nosql.plan_approval:
    path: .lab/plans/cassandra-20261122T101500.yml
    state: revoked
  delegate_to: localhost

# ad hoc, from the checkout (source scripts/env.sh first):
#   ansible localhost -m tactician.nosql.plan_approval -a "path=.lab/plans/cassandra-20261122T101500.yml by=jane.doe"
"""

RETURN = r"""
approval:
  description: The plan's approval block after the task.
  returned: always
  type: dict
  sample:
    approved: true
    by: jane.doe
    at: "2026-11-22T10:20:00Z"
    digest: sha256:5f0c...
digest:
  description: The digest of the plan's content (C(sha256:...)).
  returned: always
  type: str
summary:
  description: The plan in lines for a person (its switches with their reasons, the totals).
  returned: always
  type: list
  elements: str
path:
  description: The plan file.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail, with_diff
from ansible_collections.tactician.nosql.plugins.module_utils.planning.plan_file import set_approval


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            state=dict(type="str", choices=["approved", "revoked"], default="approved"),
            by=dict(type="str"),
            at=dict(type="str"),
        ),
        required_if=[("state", "approved", ["by"])],
        supports_check_mode=True,
    )
    params = module.params
    try:
        result = set_approval(
            params["path"], params["state"], by=params["by"], at=params["at"], check_mode=module.check_mode
        )
    except TacticianError as exc:
        fail(module, exc)
    before = result.pop("before")
    result["diff"] = dict(before=before, after=result["approval"])
    with_diff(module, result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
