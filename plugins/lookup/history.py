# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
name: history
short_description: Read workload samples and configuration changes back from the history store
description:
  - Reads the history store that the collection's modules write (workload samples of schema
    C(tactician.workload_sample/v1), the configurations each node ran) for the clusters given as terms.
  - C(kind=samples) gives the samples, oldest first; C(kind=transitions) the configuration changes as
    C(time), C(node), C(from_config_id), C(to_config_id); C(kind=configs) the configuration log with each
    entry's C(config).
  - C(kind=plans) gives the plans kept by M(tactician.nosql.plan_record) (C(cluster), C(plan_file), C(plan)),
    oldest first; C(kind=applied) the configuration autotune applied last (one record, or none);
    C(kind=effects) the realized effects M(tactician.nosql.effect) recorded. With a history that controllers
    share, these are every controller's.
  - With several clusters the lists are joined in the order of the terms.
  - Only reads. A history file that does not exist is an error; the lookup never creates one.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  _terms:
    description: Cluster names.
    required: true
    type: list
    elements: str
  path:
    description:
      - The history file, or a URL (C(sqlite:///absolute/path)).
      - Or a PostgreSQL URL C(postgresql://user@host:5432/database?sslmode=verify-full&...), its password from
        libpq's password file or E(PGPASSWORD) (never in the URL).
      - Or C(prometheus://host:port?records=PATH_OR_URL) (C(prometheus+https://) with TLS) - samples read from a
        Prometheus server at every T_d step (docs/monitoring.md), configurations and state kept in the C(records)
        history.
      - Defaults to E(TACTICIAN_HISTORY) when set, else C(~/.local/share/tactician/history.sqlite3).
    type: str
    env:
      - name: TACTICIAN_HISTORY
  kind:
    description: What to read.
    type: str
    choices: [samples, transitions, configs, plans, applied, effects]
    default: samples
  missing:
    description:
      - What a history file that does not exist, or a database nothing has written to yet, gives - V(error), or
        V(empty) (nothing recorded yet, as on a cluster's first run).
    type: str
    choices: [error, empty]
    default: error
  store:
    description: Only samples of this store (C(kind=samples) only).
    type: str
    choices: [cassandra, redis, mongodb]
  node:
    description: Only this node (C(address:port), or C(cluster) for cluster-wide entries).
    type: str
  window_s:
    description: Only samples covering windows of this many seconds (C(kind=samples) only).
    type: float
  last:
    description: Keep the newest N entries of each cluster (N windows for samples); C(0) keeps all.
    type: int
    default: 10
  since:
    description: Only entries at or after this time, unix seconds or ISO 8601 (no zone means UTC).
    type: str
  until:
    description: Only entries at or before this time, unix seconds or ISO 8601 (no zone means UTC).
    type: str
  field:
    description:
      - Return only this value of each entry, a dotted path such as C(ops_per_s.read), C(hit_ratio.key_cache)
        or C(to_config_id).
    type: str
"""

EXAMPLES = r"""
- name: Reads per second over the last 10 windows of one node
  ansible.builtin.debug:
    msg: "{{ query('tactician.nosql.history', 'lab', node='127.0.0.1:9042', field='ops_per_s.read') }}"

- name: The read ratio of the cluster aggregate, every 30 s window since a time
  ansible.builtin.set_fact:
    read_ratios: >-
      {{ query('tactician.nosql.history', 'lab', node='cluster', window_s=30, since='2026-05-09T09:00:00Z',
               last=0, field='read_ratio') }}

- name: Configuration changes since a date
  ansible.builtin.debug:
    msg: "{{ query('tactician.nosql.history', 'lab', kind='transitions', since='2026-05-01T00:00:00Z', last=0) }}"

- name: The plans every controller sharing the history made for cluster orders, and the configuration applied last
  ansible.builtin.debug:
    msg:
      plans: "{{ query('tactician.nosql.history', 'orders', path=shared_history, kind='plans', field='plan_file') }}"
      applied: "{{ query('tactician.nosql.history', 'orders', path=shared_history, kind='applied', missing='empty') }}"

- name: A history file elsewhere
  ansible.builtin.debug:
    msg: "{{ query('tactician.nosql.history', 'lab', path='sqlite:///srv/tactician/history.sqlite3', last=1) }}"
"""

RETURN = r"""
_raw:
  description:
    - One entry per sample, transition or configuration log entry, oldest first within each cluster;
      with O(field), the value at that path in each entry.
  type: list
  elements: raw
"""

import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.tactician.nosql.plugins.module_utils.planning import effects, plan_history
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.history import (
    EmptyHistoryError,
    default_history_path,
    local_file,
    open_history,
)

KINDS = ("samples", "transitions", "configs", "plans", "applied", "effects")
MISSING = ("error", "empty")


def _pluck(entry, field):
    value = entry
    walked = []
    for part in field.split("."):
        walked.append(part)
        if isinstance(value, dict) and part in value:
            value = value[part]
            continue
        keys = ", ".join(sorted(value)) if isinstance(value, dict) else "none, %r is not a mapping" % (value,)
        raise AnsibleLookupError("history: field %r: no %r; keys there: %s" % (field, ".".join(walked), keys))
    return value


def history_lookup(
    terms,
    path=None,
    kind="samples",
    store=None,
    node=None,
    last=10,
    since=None,
    until=None,
    field=None,
    window_s=None,
    missing="error",
):
    """What the history lookup returns for terms (cluster names); errors as AnsibleLookupError."""
    if not terms:
        raise AnsibleLookupError("history: give at least one cluster name")
    if kind not in KINDS:
        raise AnsibleLookupError("history: kind %r is not known; allowed: %s" % (kind, ", ".join(KINDS)))
    if not isinstance(last, int) or isinstance(last, bool) or last < 0:
        raise AnsibleLookupError("history: last %r is not a whole number >= 0 (0 keeps all)" % (last,))
    if missing not in MISSING:
        raise AnsibleLookupError("history: missing %r is not known; allowed: %s" % (missing, ", ".join(MISSING)))
    path = path or default_history_path()
    local = local_file(path)
    if local is not None and not os.path.exists(local) and missing == "empty":
        return []
    if local is not None and not os.path.exists(local):
        raise AnsibleLookupError(
            "history: the history file %s does not exist (set path= or TACTICIAN_HISTORY to the file that the"
            " collection's modules write; the lookup never creates one)" % local
        )
    try:
        history = open_history(path, readonly=True)
    except EmptyHistoryError as exc:
        if missing == "empty":
            return []
        raise AnsibleLookupError("history: %s" % exc) from None
    except ValueError as exc:
        raise AnsibleLookupError("history: %s" % exc) from None
    entries = []
    try:
        with history:
            for cluster in terms:
                if kind == "samples":
                    found = history.samples(
                        store=store, cluster=cluster, node=node, since=since, until=until, last=last, window_s=window_s
                    )
                elif kind == "plans":
                    found = plan_history.plans(history, cluster)
                    found = found[-last:] if last else found
                elif kind == "applied":
                    found = [r for r in [plan_history.applied(history, cluster)] if r]
                elif kind == "effects":
                    found = effects.effects(history, cluster)
                    found = found[-last:] if last else found
                elif kind == "configs":
                    found = history.config_log(cluster, node=node, since=since, until=until, last=last)
                    for entry in found:
                        entry["config"] = history.get_config(entry["config_id"])
                else:
                    found = history.transitions(cluster, since=since, until=until, node=node)
                    if last:
                        found = found[-last:]
                entries.extend(found)
    except ValueError as exc:
        raise AnsibleLookupError("history: %s" % exc) from None
    if field:
        return [_pluck(entry, field) for entry in entries]
    return entries


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        options = {
            name: self.get_option(name)
            for name in ("path", "kind", "store", "node", "last", "since", "until", "field", "window_s", "missing")
        }
        return history_lookup(terms, **options)
