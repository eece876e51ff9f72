#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: plan_record
short_description: Keep a plan, or the configuration a roll applied, in the history that controllers share
description:
  - Controllers that share one history (a PostgreSQL database for several AWX jobs or cron machines) see each
    other's plans and effects through it, and the next run plans from the configuration the last of them applied,
    whatever working directory it runs in. C(playbooks/autotune.yml) records every plan it makes and every
    configuration it applies.
  - O(plan_file) keeps the plan document of that file (checked against the plan schema) under the cluster and its
    C(created) time. O(applied) keeps the record the filter C(tactician.nosql.plan_applied) gives as the cluster's
    applied configuration (replacing the one before), and logs that configuration for the cluster with source
    C(applied), so the history's transitions show the switch.
  - Read them back with the lookup C(tactician.nosql.history), with C(kind=plans) or C(kind=applied).
  - Idempotent (the same document again changes nothing); check mode writes nothing.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  history:
    description:
      - The history (a file, C(sqlite:///path), C(postgresql://user@host/database?...), or a
        C(prometheus://host:port?records=...) history, whose records take it).
    type: str
    required: true
  cluster:
    description: The cluster's name in the history.
    type: str
    required: true
  plan_file:
    description: A plan file written by M(tactician.nosql.plan), kept as it is.
    type: path
  applied:
    description: The applied record (C(cluster), C(plan), C(applied), C(configuration), C(previous)).
    type: dict
attributes:
  check_mode:
    description: Reports whether the history would change; writes nothing.
    support: full
  diff_mode:
    description: No diff is returned.
    support: none
seealso:
  - module: tactician.nosql.plan
  - plugin: tactician.nosql.history
    plugin_type: lookup
"""

EXAMPLES = r"""
- name: Keep the plan in the shared history
  tactician.nosql.plan_record:
    history: postgresql://tactician@db.example:5432/tactician?sslmode=verify-full
    cluster: orders
    plan_file: /srv/tactician/plans/orders-20261205T101500.yml
  delegate_to: localhost

- name: Keep the configuration the roll applied
  tactician.nosql.plan_record:
    history: postgresql://tactician@db.example:5432/tactician?sslmode=verify-full
    cluster: orders
    applied: "{{ plan_doc | tactician.nosql.plan_applied(0, current, cluster='orders', plan=plan_path) }}"
  delegate_to: localhost
"""

RETURN = r"""
key:
  description: Where the document is kept in the history's state.
  returned: always
  type: str
  sample: plan/orders/2026-12-05T10:15:00Z
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_history
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history as history_store


def main():
    module = AnsibleModule(
        argument_spec=dict(
            history=dict(type="str", required=True),
            cluster=dict(type="str", required=True),
            plan_file=dict(type="path"),
            applied=dict(type="dict"),
        ),
        required_one_of=[["plan_file", "applied"]],
        mutually_exclusive=[["plan_file", "applied"]],
        supports_check_mode=True,
    )
    p = module.params
    try:
        with history_store.open_history(p["history"], readonly=module.check_mode) as store:
            if p["plan_file"]:
                doc = planfile.load_plan(p["plan_file"])
                key = plan_history.plan_key(p["cluster"], doc)
                changed = plan_history.record_plan(store, p["cluster"], doc, p["plan_file"], module.check_mode)
            else:
                key = plan_history.APPLIED_PREFIX + p["cluster"]
                changed = plan_history.record_applied(store, p["cluster"], p["applied"], module.check_mode)
    except TacticianError as exc:
        fail(module, exc)
    module.exit_json(changed=changed, key=key)


if __name__ == "__main__":
    main()
