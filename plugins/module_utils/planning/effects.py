# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The realized effect of an applied plan step, next to what the plan predicted (the loop's last arrow).

A plan step predicts the cluster's ops/s before and after its switch for the workload it expects. After the roll,
the cluster is observed again: the record puts the measured throughput before and after, the workload actually
seen in both windows, and the prediction side by side, so a person (and the report) can tell a planner that
predicts well from one that does not. A measured gain only means something when both windows carried the same
workload: the record says whether they did (read ratio within ``same_mix_tolerance``) and, for a load that
clients throttle, that throughput measures the offered load rather than the configuration.

Records go to the history store's state under ``effect/<cluster>/<plan created>/<step>`` (one per applied step,
written again only when its content changes) and are listed by ``effects()``.
"""

from __future__ import annotations

import math

from ansible_collections.tactician.nosql.plugins.module_utils.core import checks
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError

EFFECT_SCHEMA = "tactician.effect/v1"
STATE_PREFIX = "effect/"
SAME_MIX_TOLERANCE = 0.1


class EffectError(PlanningError, ValueError):
    """Bad input to the effect record; the message names the field."""


def _sample(field, sample):
    """(throughput, read_ratio, time, window_s) of a workload sample (the cluster's, from observe)."""
    if not isinstance(sample, dict):
        raise EffectError("%s: expected the cluster's workload sample (observe's cluster result)" % field)
    for key in ("throughput", "read_ratio"):
        if key not in sample:
            raise EffectError("%s.%s: missing; give the cluster sample that observe returns" % (field, key))
    throughput = checks.number("%s.throughput" % field, sample["throughput"], EffectError, minimum=0)
    read_ratio = sample["read_ratio"]
    if read_ratio is not None:
        read_ratio = checks.number("%s.read_ratio" % field, read_ratio, EffectError, minimum=0)
    return throughput, read_ratio, sample.get("time"), sample.get("window_s")


def predicted(doc, step=0):
    """What plan doc predicted for its step: {"before", "after", "gain"} in ops/s (None where it predicted none,
    e.g. a tactic plan), with the step's configuration, tactic and nodes."""
    if not isinstance(doc, dict) or "steps" not in doc:
        raise EffectError("plan: expected a plan document (tactician.plan/v1)")
    steps = doc.get("steps") or []
    if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step < max(1, len(steps)):
        raise EffectError("step: %r is not a step of this plan (it has %d)" % (step, len(steps)))
    entry = steps[step] if steps else {}
    numbers = entry.get("predicted") or {}
    before = numbers.get("ops_per_s_before")
    after = numbers.get("ops_per_s_after")
    if not steps:
        value = (doc.get("predicted") or {}).get("ops_per_s")
        before = after = value
    gain = after / before - 1.0 if before and after is not None else None
    return {
        "before": before,
        "after": after,
        "gain": None if gain is None else round(gain, 5),
        "configuration": dict(entry.get("configuration") or {}),
        "tactic": entry.get("tactic"),
        "nodes": list(entry.get("nodes") or []),
        "at": entry.get("at"),
    }


def realized(doc, before, after, step=0, applied=True, same_mix_tolerance=SAME_MIX_TOLERANCE):
    """The effect record of plan doc's step: predicted and measured ops/s before and after, the gains, the error
    of the predicted gain, and whether the two windows carried the same workload."""
    prediction = predicted(doc, step)
    tput0, read0, time0, window0 = _sample("before", before)
    tput1, read1, time1, window1 = _sample("after", after)
    measured_gain = tput1 / tput0 - 1.0 if tput0 > 0 else None
    same = read0 is not None and read1 is not None and abs(read1 - read0) <= same_mix_tolerance
    error = None
    if measured_gain is not None and prediction["gain"] is not None:
        error = measured_gain - prediction["gain"]
    notes = []
    if not applied:
        notes.append("the step was not applied: the measured change is the workload's, not the plan's")
    if not same:
        notes.append(
            "the workload changed between the windows (read ratio %s -> %s): the measured gain mixes the "
            "configuration's effect with the workload's" % (_fmt(read0), _fmt(read1))
        )
    return {
        "schema": EFFECT_SCHEMA,
        "cluster": (doc.get("cluster") or {}).get("name"),
        "store": doc.get("store"),
        "plan": {"created": doc.get("created"), "kind": doc.get("kind"), "step": step},
        "applied": bool(applied),
        "configuration": prediction["configuration"],
        "tactic": prediction["tactic"],
        "nodes": prediction["nodes"],
        "predicted": {k: prediction[k] for k in ("before", "after", "gain")},
        "measured": {
            "before": round(tput0, 1),
            "after": round(tput1, 1),
            "gain": None if measured_gain is None else round(measured_gain, 5),
            "read_ratio_before": read0,
            "read_ratio_after": read1,
            "windows": [{"time": time0, "window_s": window0}, {"time": time1, "window_s": window1}],
        },
        "same_workload": bool(same),
        "gain_error": None if error is None else round(error, 5),
        "notes": notes,
    }


def _fmt(value):
    return "?" if value is None or not math.isfinite(value) else "%.2f" % value


def state_key(record):
    """Where record goes in the history's state."""
    return "%s%s/%s/%s" % (
        STATE_PREFIX,
        record.get("cluster") or "-",
        record["plan"].get("created") or "-",
        record["plan"].get("step", 0),
    )


def save(history, record):
    """Write record to the history store's state; False when the same record is there already."""
    key = state_key(record)
    if history.load_state(key) == record:
        return False
    history.save_state(key, record)
    return True


def effects(history, cluster=None):
    """The effect records kept in history (of one cluster, or all), oldest plan first."""
    prefix = STATE_PREFIX + ("%s/" % cluster if cluster else "")
    return [record for _key, record in history.states(prefix)]


def summary(record):
    """One line a person reads: predicted and measured gain, and the caveats."""
    predicted_gain = record["predicted"]["gain"]
    measured_gain = record["measured"]["gain"]
    text = "%s: predicted %s, measured %s (%s -> %s ops/s)" % (
        record["tactic"] or ", ".join("%s=%s" % kv for kv in sorted(record["configuration"].items())) or "no change",
        "n/a" if predicted_gain is None else "%+.1f %%" % (100.0 * predicted_gain),
        "n/a" if measured_gain is None else "%+.1f %%" % (100.0 * measured_gain),
        f"{record['measured']['before']:,.0f}",
        f"{record['measured']['after']:,.0f}",
    )
    if record["notes"]:
        text += "; " + "; ".join(record["notes"])
    return text
