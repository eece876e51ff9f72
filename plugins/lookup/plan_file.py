# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Lookup tactician.nosql.plan_file: a plan file read and checked on the controller."""

from __future__ import annotations

DOCUMENTATION = r"""
name: plan_file
short_description: Read a plan file, checked against its schema, and optionally its approval
description:
  - Reads each plan file given as a term (YAML of schema C(tactician.plan/v1), written by M(tactician.nosql.plan))
    on the controller and checks it against the schema; a file that is missing, not YAML or malformed fails the
    lookup with a message naming the file and the field at fault (for example C(steps[0].offset_s)), before the
    play touches anything.
  - With O(approved=true) the plan must also be approved and applicable now; the lookup fails naming what is
    wrong - C(approval.approved is not true) (nobody approved it); C(approval.digest) (the approval records no
    digest, or the plan changed after it was approved - approve it again with M(tactician.nosql.plan_approval));
    C(steps) (no steps, nothing to apply); C(current.configuration) (the plan was made for another configuration
    than O(current), the one in place - plan again).
  - With O(step), that step must exist; with O(digest), the plan's content must have that digest (the plan
    decided on is the plan rolled).
  - A relative path is looked for like the C(ansible.builtin.file) lookup does (the play's and role's C(files/)
    folders and their own folders), then in the current directory.
  - The rules are the engine's (C(plugins/module_utils/planning/plan_file.py)); the filters
    P(tactician.nosql.plan_gate#filter) and P(tactician.nosql.plan_applied#filter) apply the others.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  _terms:
    description: Paths of plan files.
    required: true
    type: list
    elements: path
  approved:
    description:
      - Check the plan is approved, its approval digest matches its content, it has steps, and it was made for
        O(current).
    type: bool
    default: false
  current:
    description:
      - The configuration in place, parameter name to value. With O(approved), the plan's
        C(current.configuration) restricted to these keys must equal it.
      - Empty accepts a plan made for any configuration.
    type: dict
    default: {}
  current_source:
    description: Where O(current) came from (a file or a variable), named in the message when it does not match.
    type: str
  step:
    description: The index of a step that must exist in the plan (the step a roll applies).
    type: int
  digest:
    description:
      - The content digest (C(sha256:...)) the plan must have, for example the C(digest) of the decision of
        P(tactician.nosql.plan_gate#filter); an empty value checks nothing.
    type: str
"""

EXAMPLES = r"""
- name: Read a plan file, failing on a malformed one naming the field
  ansible.builtin.set_fact:
    plan: "{{ lookup('tactician.nosql.plan_file', tactician_plan_file, step=tactician_plan_step | default(0)) }}"

- name: An approved plan, made for the configuration in place
  ansible.builtin.set_fact:
    plan: >-
      {{ lookup('tactician.nosql.plan_file', '.lab/plans/cassandra-20261122T101500.yml', approved=true,
                current=applied.configuration, current_source='.lab/plans/cassandra-applied.yml') }}

- name: The steps of two plans
  ansible.builtin.debug:
    msg: "{{ query('tactician.nosql.plan_file', 'plans/a.yml', 'plans/b.yml') | map(attribute='steps') | list }}"
"""

RETURN = r"""
_raw:
  description:
    - The plan document of each file, as it is in the file (C(schema), C(store), C(cluster), C(current),
      C(steps), C(predicted), C(baselines), C(reasons), C(approval), ...). C(lookup) gives the document of a
      single file itself.
  type: list
  elements: dict
"""

import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile
from ansible_collections.tactician.nosql.plugins.plugin_utils.plain import plain


def read_plan(path, approved=False, current=None, current_source=None, step=None, digest=None):
    """The checked plan document of the file at path (an existing local path); errors as AnsibleLookupError."""
    try:
        if not os.path.isfile(path):
            raise planfile.PlanFileError("no such file (tactician_plan_file names a plan file of the controller)")
        doc = planfile.load_plan(path)
        if step is not None:
            planfile.check_step(doc, step)
        if digest and planfile.digest(doc) != digest:
            raise planfile.PlanFileError(
                "the plan changed since it was decided on: its content digest is %s, not %s"
                % (planfile.digest(doc), digest)
            )
        if approved:
            planfile.check_approved(doc, plain(current or {}), current_source)
    except planfile.PlanFileError as exc:
        text = str(exc)
        if not text.startswith("plan_file: "):
            text = "plan_file: %s: %s" % (path, text)
        raise AnsibleLookupError(text) from None
    return doc


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if not terms:
            raise AnsibleLookupError("plan_file: give the path of a plan file")
        options = {name: self.get_option(name) for name in ("approved", "current", "current_source", "step", "digest")}
        docs = []
        for term in terms:
            term = str(term)
            path = term
            if not os.path.isabs(term):
                found = self.find_file_in_search_path(variables or {}, "files", term, ignore_missing=True)
                path = found or os.path.abspath(term)
            docs.append(read_plan(path, **options))
        return docs
