#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: effect
short_description: Record the realized effect of an applied plan step next to its prediction
description:
  - Puts a plan step's predicted ops/s before and after its switch next to the cluster's throughput measured by
    M(tactician.nosql.observe) before the roll and after it, with the measured gain, the error of the predicted
    gain, and whether both windows carried the same workload (read ratio within O(same_mix_tolerance)).
  - With O(history), the record is kept in the history store (state C(effect/<cluster>/<plan created>/<step>)),
    written again only when it changes, so the report lists every applied step's prediction and outcome.
  - C(playbooks/autotune.yml) calls it after each roll. Check mode returns the record and writes nothing.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  plan_file:
    description: The plan file (YAML, C(tactician.plan/v1)) whose step was applied.
    type: path
  plan:
    description: The plan document itself (as M(tactician.nosql.plan) returns it), instead of O(plan_file).
    type: dict
  step:
    description: Index of the applied step in the plan's steps.
    type: int
    default: 0
  before:
    description: The cluster's workload sample observed before the roll (C(cluster) of M(tactician.nosql.observe)).
    type: dict
    required: true
  after:
    description: The cluster's workload sample observed after the roll.
    type: dict
    required: true
  applied:
    description:
      - Whether the step was applied (false records a plan that was not, e.g. in the plan_only runs of
        C(playbooks/autotune.yml)).
    type: bool
    default: true
  same_mix_tolerance:
    description: Largest change of the read ratio between the windows for which they count as the same workload.
    type: float
    default: 0.1
  history:
    description: History store (SQLite path) to keep the record in; none returns it only.
    type: path
attributes:
  check_mode:
    description: Computes the record; writes nothing.
    support: full
  diff_mode:
    description: No diff is shown.
    support: none
"""

EXAMPLES = r"""
- name: What the roll changed, next to what the plan predicted
  tactician.nosql.effect:
    plan_file: "{{ tactician_plans_dir }}/next.yml"
    before: "{{ observed_before.aggregate }}"
    after: "{{ observed_after.aggregate }}"
    history: "{{ tactician_lab_dir }}/history.sqlite3"
  register: effect
"""

RETURN = r"""
effect:
  description: The record (schema C(tactician.effect/v1)).
  returned: always
  type: dict
  contains:
    predicted:
      description: C(before), C(after) ops/s and C(gain) (a share) the plan predicted; null where it predicted none.
      type: dict
    measured:
      description: C(before), C(after) ops/s, C(gain), and the read ratios of both windows.
      type: dict
    same_workload:
      description: Whether both windows carried the same operation mix.
      type: bool
    gain_error:
      description: Measured gain minus predicted gain.
      type: float
    notes:
      description: Why the measured gain may not be the configuration's alone.
      type: list
      elements: str
summary:
  description: One line with the predicted and measured gain.
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail
from ansible_collections.tactician.nosql.plugins.module_utils.planning import effects
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history as history_store


def main():
    module = AnsibleModule(
        argument_spec=dict(
            plan_file=dict(type="path"),
            plan=dict(type="dict"),
            step=dict(type="int", default=0),
            before=dict(type="dict", required=True),
            after=dict(type="dict", required=True),
            applied=dict(type="bool", default=True),
            same_mix_tolerance=dict(type="float", default=effects.SAME_MIX_TOLERANCE),
            history=dict(type="path"),
        ),
        required_one_of=[["plan_file", "plan"]],
        mutually_exclusive=[["plan_file", "plan"]],
        supports_check_mode=True,
    )
    p = module.params
    try:
        doc = planfile.load_plan(p["plan_file"]) if p["plan_file"] else p["plan"]
        record = effects.realized(
            doc,
            p["before"],
            p["after"],
            step=p["step"],
            applied=p["applied"],
            same_mix_tolerance=p["same_mix_tolerance"],
        )
        changed = False
        if p["history"] and module.check_mode and not os.path.exists(p["history"]):
            changed = True
        elif p["history"]:
            store = history_store.open_history(p["history"], readonly=module.check_mode)
            try:
                if module.check_mode:
                    changed = store.load_state(effects.state_key(record)) != record
                else:
                    changed = effects.save(store, record)
            finally:
                store.close()
    except TacticianError as exc:
        fail(module, exc)
    module.exit_json(changed=changed, effect=record, summary=effects.summary(record))


if __name__ == "__main__":
    main()
