#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: effect
short_description: Record the realized effect of an applied plan step next to its prediction, and whether to revert it
description:
  - Puts a plan step's predicted ops/s before and after its switch next to the cluster's throughput measured by
    M(tactician.nosql.observe) before the roll and after it, with the measured gain, its 95 % confidence interval,
    the error of the predicted gain, and a C(verdict) on the measurement.
  - Each side is a list of sub-window samples (several observe samples in a row) or one sample. The verdict is
    C(valid) only when both windows lie wholly inside one workload phase and measure the servers; in this order it
    is C(implausible) (a realized ratio after/before outside [1/O(plausible_ratio), O(plausible_ratio)], or one
    side far below the other side's sub-window median; a measurement error, never used as a result),
    C(mixed_phases) (the two windows' read ratios apart by more than O(same_mix_tolerance)), C(unstable) (a
    sub-window's read ratio further than O(same_mix_tolerance) from its window's, or its throughput outside
    [1/O(plausible_ratio), O(plausible_ratio)] of its window's median), C(throttled) (a side served the clients'
    O(offered) load).
  - The confidence interval is a t interval of log(after/before) over the sub-windows (delta method,
    Welch-Satterthwaite degrees of freedom rounded down); it needs at least 2 sub-windows a side.
  - C(below_lower_bound) compares the upper end of that interval with the step's C(predicted.gain_low_share)
    (0.0 when the plan gives none, so the switch must at least not lose); it is null unless the verdict is valid.
    When it is true, C(revert) holds the configuration to go back to, and with O(revert_plan_file) the module
    writes the plan that rolls it back (approved in the name of O(revert_approved_by) when given) and keeps the
    revert in the history (state C(revert/<cluster>/<plan created>/<step>), next to the effect record). A revert
    already rolled is not planned again; the effect of a revert plan is never reverted.
  - With O(history), the record is kept in the history store (state C(effect/<cluster>/<plan created>/<step>)),
    written again only when it changes, so the report lists every applied step's prediction and outcome.
  - O(revert_rolled=true) records instead that the revert plan of O(step) was rolled (C(playbooks/autotune.yml)
    calls it after the roll).
  - C(playbooks/autotune.yml) calls it after each roll. Check mode returns the record and the revert plan and writes
    nothing, approves nothing.
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
    description:
      - The cluster's workload sample observed before the roll (C(aggregate) of M(tactician.nosql.observe)), or a
        list of them, one per sub-window, in time order.
      - Required unless O(revert_rolled).
    type: raw
  after:
    description: The same after the roll. Required unless O(revert_rolled).
    type: raw
  applied:
    description:
      - Whether the step was applied (false records a plan that was not, e.g. in the plan_only runs of
        C(playbooks/autotune.yml)).
    type: bool
    default: true
  same_mix_tolerance:
    description:
      - Largest change of the read ratio between the windows for which they count as the same workload, and
        between a sub-window and its window for which the window counts as one phase.
    type: float
    default: 0.1
  plausible_ratio:
    description:
      - A realized throughput ratio after/before outside [1/this, this] is a measurement error (verdict
        C(implausible)); a sub-window outside [1/this, this] of its window's median makes the window C(unstable).
    type: float
    default: 3.0
  offered:
    description:
      - Ops/s the clients offer when they are throttled (an open-loop load); a side that served at least
        1 - O(offered_tolerance) of it makes the verdict C(throttled). None for closed-loop clients.
    type: float
  offered_tolerance:
    description: See O(offered).
    type: float
    default: 0.05
  current:
    description:
      - The configuration in place before the roll, as the caller knew it; completes the plan's
        C(current.configuration) for the configuration to go back to and the measured points.
    type: dict
    default: {}
  hardware:
    description: The hardware profile's numbers, kept in the measured points (C(training_rows)).
    type: dict
    default: {}
  revert_plan_file:
    description:
      - Where to write the revert plan when the record asks for a revert; an existing file there must be the revert
        plan of the same effect record, and is kept as it is.
    type: path
  revert_approved_by:
    description:
      - Approve the revert plan in this name (C(playbooks/autotune.yml) gives it in mode auto only). Never in check
        mode.
    type: str
  revert_rolled:
    description: Record in O(history) that the revert plan of O(step) was rolled, instead of recording an effect.
    type: bool
    default: false
  history:
    description:
      - History store to keep the record in (a SQLite path or C(sqlite:///path)); none returns it only.
      - Or a PostgreSQL URL C(postgresql://user@host/database?sslmode=verify-full&...) that several controllers
        share, its password from libpq's password file or E(PGPASSWORD) (never in the URL).
      - Or C(prometheus://host:port?records=PATH_OR_URL) (C(prometheus+https://) with TLS) - samples read from a
        Prometheus server at every T_d step (docs/monitoring.md), configurations and state kept in the C(records)
        history.
    type: path
attributes:
  check_mode:
    description: Computes the record and the revert plan; writes nothing, approves nothing.
    support: full
  diff_mode:
    description: No diff is shown.
    support: none
"""

EXAMPLES = r"""
- name: What the roll changed, next to what the plan predicted
  tactician.nosql.effect:
    plan_file: "{{ tactician_plans_dir }}/next.yml"
    before: "{{ observed_before.results | map(attribute='aggregate') | list }}"
    after: "{{ observed_after.results | map(attribute='aggregate') | list }}"
    current: "{{ configuration_in_place }}"
    revert_plan_file: "{{ tactician_plans_dir }}/next-revert.yml"
    history: "{{ tactician_lab_dir }}/history.sqlite3"
  register: effect

- name: After the revert plan was rolled
  tactician.nosql.effect:
    plan_file: "{{ tactician_plans_dir }}/next.yml"
    revert_rolled: true
    history: "{{ tactician_lab_dir }}/history.sqlite3"
"""

RETURN = r"""
effect:
  description: The record (schema C(tactician.effect/v1)).
  returned: unless revert_rolled
  type: dict
  contains:
    predicted:
      description: C(before), C(after) ops/s, C(gain) and C(gain_low) (shares) the plan predicted; null where it
        predicted none.
      type: dict
    measured:
      description:
        - C(before), C(after) ops/s, C(gain) (null when the verdict is implausible), C(gain_ci95) ([low, high] or
          null), C(ci_method), C(raw_gain), the read ratios of both windows, the sub-windows' ops/s and the
          coefficients of variation (C(cv_before), C(cv_after)).
      type: dict
    verdict:
      description: C(valid), C(implausible), C(mixed_phases), C(unstable) or C(throttled).
      type: str
    measurement_error:
      description: Whether the verdict is implausible (the measured gain is not a result).
      type: bool
    same_workload:
      description: Whether both windows carried the same operation mix.
      type: bool
    gain_error:
      description: Measured gain minus predicted gain.
      type: float
    lower_bound:
      description: C(gain), the least realized gain the prediction allows, and its C(source).
      type: dict
    below_lower_bound:
      description: Whether the upper end of the realized gain's interval is below the lower bound; null unless the
        verdict is valid and the step was applied.
      type: bool
    decision:
      description: Keep, revert or no judgement, and why, for a person.
      type: str
    revert:
      description: The configuration to go back to (C(configuration), C(full_configuration), C(undo), C(nodes)),
        when below_lower_bound is true and the step can be rolled back; else null.
      type: dict
    notes:
      description: Why the measured gain may not be the configuration's alone.
      type: list
      elements: str
summary:
  description: One line with the predicted and measured gain.
  returned: always
  type: str
revert_plan:
  description:
    - The revert plan when the record asks for a revert and O(revert_plan_file) is given; else null. C(path),
      C(due) (not rolled yet), C(status) (planned or rolled), C(approved), C(digest), C(effect) (the effect
      record's key), C(plan) (the document), C(roll) (due, approved and not check mode - roll it now), C(next)
      (what happens next, for a person).
  returned: unless revert_rolled
  type: dict
training_rows:
  description:
    - The measured points of a valid record (C(key), C(row)), as M(tactician.nosql.model) takes them with
      C(action=record); empty otherwise.
  returned: unless revert_rolled
  type: list
  elements: dict
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
            before=dict(type="raw"),
            after=dict(type="raw"),
            applied=dict(type="bool", default=True),
            same_mix_tolerance=dict(type="float", default=effects.SAME_MIX_TOLERANCE),
            plausible_ratio=dict(type="float", default=effects.PLAUSIBLE_RATIO),
            offered=dict(type="float"),
            offered_tolerance=dict(type="float", default=effects.OFFERED_TOLERANCE),
            current=dict(type="dict", default={}),
            hardware=dict(type="dict", default={}),
            revert_plan_file=dict(type="path"),
            revert_approved_by=dict(type="str"),
            revert_rolled=dict(type="bool", default=False),
            history=dict(type="path"),
        ),
        required_one_of=[["plan_file", "plan"]],
        mutually_exclusive=[["plan_file", "plan"]],
        required_if=[["revert_rolled", False, ["before", "after"]], ["revert_rolled", True, ["history"]]],
        supports_check_mode=True,
    )
    p = module.params
    store = None
    try:
        doc = planfile.load_plan(p["plan_file"]) if p["plan_file"] else p["plan"]
        local = history_store.local_file(p["history"]) if p["history"] else None
        missing = module.check_mode and local is not None and not os.path.exists(local)
        if p["history"] and not missing:
            store = history_store.open_history(p["history"], readonly=module.check_mode)
        if p["revert_rolled"]:
            changed = True if missing else effects.mark_rolled(store, doc, p["step"], check_mode=module.check_mode)
            module.exit_json(changed=changed, summary="the revert of step %d was rolled" % p["step"])
        result = effects.record_effect(
            store,
            doc,
            p["step"],
            p["before"],
            p["after"],
            applied=p["applied"],
            same_mix_tolerance=p["same_mix_tolerance"],
            current=p["current"],
            plausible_ratio=p["plausible_ratio"],
            offered=p["offered"],
            offered_tolerance=p["offered_tolerance"],
            hardware=p["hardware"],
            plan_file=p["plan_file"],
            revert_plan_file=p["revert_plan_file"],
            revert_approved_by=p["revert_approved_by"],
            check_mode=module.check_mode,
            history_missing=missing,
        )
    except TacticianError as exc:
        fail(module, exc)
    finally:
        if store is not None:
            store.close()
    module.exit_json(**result)


if __name__ == "__main__":
    main()
