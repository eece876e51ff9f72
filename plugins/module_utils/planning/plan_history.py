# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Plans and the configuration autotune applied, kept in the history store beside the effects, so that
controllers sharing one history (PostgreSQL: several AWX jobs, cron on two machines) see each other's plans and
plan from the configuration the last of them applied.

A plan is kept under ``plan/<cluster>/<created>`` (the plan document as its file holds it, with the file's name);
the applied record (plan_file.applied_record) under ``applied/<cluster>``, replaced at every switch, and logged as
the cluster's configuration (source ``applied``) so that the history's transitions show it. The files in the plans
directory stay what a person reads and approves; the history is what controllers share.
"""

from __future__ import annotations

import os

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError

PLAN_PREFIX = "plan/"
APPLIED_PREFIX = "applied/"


class PlanHistoryError(PlanningError, ValueError):
    """Bad input for the plan history; the message starts with the field at fault."""


def _cluster(cluster):
    if not isinstance(cluster, str) or not cluster or "/" in cluster:
        raise PlanHistoryError("cluster: %r is not a cluster name (text without /)" % (cluster,))
    return cluster


def plan_key(cluster, doc):
    created = doc.get("created") if isinstance(doc, dict) else None
    if not created:
        raise PlanHistoryError("plan: the document has no created time; is it a plan file's content?")
    return "%s%s/%s" % (PLAN_PREFIX, _cluster(cluster), created)


def record_plan(history, cluster, doc, plan_file=None, check_mode=False):
    """Keep the plan doc of cluster (plan_file: the file it was written to; its name is kept). Returns True when it
    was not there yet (or differed)."""
    key = plan_key(cluster, doc)
    entry = {"cluster": cluster, "plan_file": os.path.basename(plan_file) if plan_file else None, "plan": doc}
    if history.load_state(key) == entry:
        return False
    if not check_mode:
        history.save_state(key, entry)
    return True


def plans(history, cluster):
    """The plans kept for cluster, oldest first: [{"cluster", "plan_file", "plan"}]."""
    return [entry for _key, entry in history.states("%s%s/" % (PLAN_PREFIX, _cluster(cluster)))]


def record_applied(history, cluster, record, check_mode=False):
    """Keep record (plan_file.applied_record) as the cluster's applied configuration, and log that configuration for
    the cluster (source applied). Returns True when it changed what the history held."""
    if not isinstance(record, dict) or not isinstance(record.get("configuration"), dict) or not record.get("applied"):
        raise PlanHistoryError("applied: not an applied record (configuration and applied time, as plan_applied gives)")
    key = APPLIED_PREFIX + _cluster(cluster)
    if history.load_state(key) == record:
        return False
    if not check_mode:
        history.save_state(key, record)
        history.record_config(
            cluster,
            "cluster",
            record["configuration"],
            time=record["applied"],
            source="applied",
            note=record.get("plan"),
        )
    return True


def applied(history, cluster):
    """The applied record of cluster that the history holds, or None."""
    return history.load_state(APPLIED_PREFIX + _cluster(cluster))
