# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Filter tactician.nosql.plan_applied: the configuration record autotune keeps after a step is applied."""

from __future__ import annotations

DOCUMENTATION = r"""
name: plan_applied
short_description: The configuration record kept after a plan's step is applied
description:
  - The record C(playbooks/autotune.yml) writes to C(<plans>/<cluster>-applied.yml) after a roll, which the next
    run plans from.
  - Its C(configuration) is the step's C(full_configuration), or O(current) with the step's C(configuration) over
    it when the step has none.
  - A step that is not in the plan fails the filter, naming the allowed range.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
positional: step, current
options:
  _input:
    description: The plan document.
    type: dict
    required: true
  step:
    description: The index of the step applied.
    type: int
    default: 0
  current:
    description: The configuration in place before the step.
    type: dict
    default: {}
  cluster:
    description: The cluster's name; defaults to the plan's C(cluster.name).
    type: str
  plan:
    description: The plan file's path, kept in the record.
    type: str
  previous:
    description:
      - The configuration the step left, kept as the switch's way back (the next plan's hysteresis and undo).
      - Defaults to O(current); a revert passes the configuration it rolled back from.
    type: dict
"""

EXAMPLES = r"""
- name: Keep the configuration applied
  ansible.builtin.copy:
    content: "{{ plan | tactician.nosql.plan_applied(0, current, plan=plan_path) | to_nice_yaml(sort_keys=false) }}"
    dest: .lab/plans/cassandra-applied.yml
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The record.
  type: dict
  contains:
    cluster:
      description: The cluster's name.
      type: str
    plan:
      description: The plan file's path, or null.
      type: str
    applied:
      description: When, ISO 8601 UTC.
      type: str
      sample: "2026-11-22T10:25:00Z"
    configuration:
      description: The whole configuration in place after the step.
      type: dict
    previous:
      description: The configuration the step left.
      type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile
from ansible_collections.tactician.nosql.plugins.plugin_utils.plain import plain


def plan_applied(doc, step=0, current=None, cluster=None, plan=None, previous=None):
    try:
        return planfile.applied_record(
            plain(doc),
            plain(step),
            plain(current or {}),
            cluster=cluster,
            plan=plan,
            previous=None if previous is None else plain(previous),
        )
    except planfile.PlanFileError as exc:
        raise AnsibleFilterError("plan_applied: %s" % exc) from None


class FilterModule:
    def filters(self):
        return {"plan_applied": plan_applied}
