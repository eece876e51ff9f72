# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Filter tactician.nosql.history_shared: whether a history is a database several controllers share."""

from __future__ import annotations

DOCUMENTATION = r"""
name: history_shared
short_description: Whether a history is one several controllers share
description:
  - True for a PostgreSQL history (C(postgresql://...) or C(postgres://...), with or without a driver suffix such
    as C(postgresql+psycopg://)), which several controllers (AWX jobs, cron machines) reach at once; false for a
    file path, C(sqlite:///...), a C(prometheus://) history and an empty value.
  - C(playbooks/autotune.yml) and C(playbooks/approve_plan.yml) keep plans, approvals and the applied configuration
    in a shared history by default (C(tactician_autotune_share_plans)).
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  _input:
    description: The history's path or URL (C(tactician_history)).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Share the plans when the history is a database
  ansible.builtin.set_fact:
    share_plans: "{{ tactician_history | tactician.nosql.history_shared }}"
"""

RETURN = r"""
_value:
  description: Whether the history is shared.
  type: bool
"""

from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history as history_store


def history_shared(url_or_path):
    return history_store.is_shared(url_or_path)


class FilterModule:
    def filters(self):
        return {"history_shared": history_shared}
