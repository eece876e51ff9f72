# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Filter tactician.nosql.plan_gate: whether autotune applies a plan now, and why."""

from __future__ import annotations

DOCUMENTATION = r"""
name: plan_gate
short_description: Whether autotune applies a plan now, and the reason a person reads
description:
  - The approval gate of C(playbooks/autotune.yml) for a plan document (from M(tactician.nosql.plan) or the
    lookup P(tactician.nosql.plan_file#lookup)).
  - V(plan_only) never applies; a person reads the plan and approves it.
  - V(approve) applies step 0 at once when the plan is approved, its approval digest matches its content, it has
    steps and it was made for O(current) (the configuration in place); otherwise the reason is what is wrong.
  - V(auto) applies the step due now - the first step, when its C(offset_s) is less than one decision step
    O(step_s) - when the plan's C(predicted.gain_share) is at least O(min_gain).
  - "The reason says why or why not, for example C(not due yet: the first switch is in 90 s ...) or
    C(gain under the threshold: +3.2 % < 5.0 % ...)."
  - A malformed plan, an unknown mode or a bad number fails the filter, naming the field.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
positional: mode, min_gain, step_s
options:
  _input:
    description: The plan document.
    type: dict
    required: true
  mode:
    description: The autotune mode.
    type: str
    choices: [plan_only, approve, auto]
    required: true
  min_gain:
    description: Least predicted gain share over the lookahead that mode V(auto) applies (0.05 is 5 %).
    type: float
    default: 0.05
  step_s:
    description: The decision step in seconds; a step is due now when its offset is less than this.
    type: float
    default: 30
  current:
    description: The configuration in place (mode V(approve)); empty accepts a plan made for any.
    type: dict
    default: {}
  current_source:
    description: Where O(current) came from, named in the reason when it does not match.
    type: str
"""

EXAMPLES = r"""
- name: Decide whether to apply
  ansible.builtin.set_fact:
    decision: "{{ plan.plan | tactician.nosql.plan_gate('auto', 0.05, 30) }}"

- name: Why
  ansible.builtin.debug:
    msg: "{{ decision.reason }}"
"""

RETURN = r"""
_value:
  description: The decision.
  type: dict
  contains:
    apply:
      description: Whether to apply a step now.
      type: bool
    step:
      description: The index of the step to apply, or null.
      type: int
    reason:
      description: Why, or why not, for a person.
      type: str
      sample: "gain under the threshold: +3.2 % < 5.0 % (the predicted gain over the lookahead against min_gain)"
    digest:
      description: The plan's content digest (C(sha256:...)); the roll checks the plan file still has it.
      type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile
from ansible_collections.tactician.nosql.plugins.plugin_utils.plain import plain


def plan_gate(doc, mode, min_gain=0.05, step_s=30, current=None, current_source=None):
    try:
        return planfile.gate(
            plain(doc), plain(mode), plain(min_gain), plain(step_s), plain(current or {}), current_source
        )
    except planfile.PlanFileError as exc:
        raise AnsibleFilterError("plan_gate: %s" % exc) from None


class FilterModule:
    def filters(self):
        return {"plan_gate": plan_gate}
