# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Plan files: what the planner decided, for a person to approve and for rolling_reconfigure.yml to apply.

A plan file is YAML (schema ``tactician.plan/v1``)::

    schema: tactician.plan/v1
    created: 2026-11-21T23:40:00Z
    store: cassandra
    store_version: 5.0.9
    consistency_level: ONE            # read by rolling_reconfigure.yml
    cluster: {name, nodes, hosts, rf, batch, batches, rule, restart_s, live_s, roll_s}
    lookahead: {start, steps, step_s, seconds, forecast_method}
    model: {file, hardware_profile, training_data_sha256, metrics}
    current: {configuration}
    steps:                            # the switches, in order; rolling_reconfigure.yml applies one per run
      - at, offset_s, configuration (only what changes), full_configuration, restart, roll_s, workload,
        predicted {ops_per_s_before, ops_per_s_after, cost_ops, gain_ops, break_even_s, kept_s}, reason
    skipped: [{at, offset_s, reason}] # changes of the optimum the plan does not follow, and why
    predicted: {ops, in_place_ops, gain_ops, gain_share}
    baselines: {default, static_optimized, naive, theoretical_best, in_place}   # ops over the lookahead
    reasons: [...]
    approval: {approved: false, by, at}

The schema check names the field that is wrong. No secret ever reaches a plan file: a key that looks like one is
refused before anything is written.
"""

from __future__ import annotations

import datetime
import os
import tempfile

from ansible_collections.tactician.nosql.plugins.module_utils.core import schema as core_schema
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError
from ansible_collections.tactician.nosql.plugins.module_utils.core.secrets import check_no_secrets

try:
    import yaml
except ImportError:  # pragma: no cover - the collection requires PyYAML; the check is for a clear error
    yaml = None

PLAN_SCHEMA_NAME = "tactician.plan/v1"
STORES = ("cassandra", "redis", "mongodb")

_NUMBER = {"type": "number"}
_OPTIONAL_NUMBER = {"type": ["number", "null"]}

STEP_SCHEMA = {
    "type": "object",
    "required": ["at", "offset_s", "configuration", "reason"],
    "properties": {
        "at": {"type": "string"},
        "offset_s": {"type": "number", "minimum": 0},
        "step": {"type": "integer", "minimum": 0},
        "configuration": {"type": "object"},
        "full_configuration": {"type": "object"},
        "restart": {"type": "boolean"},
        "roll_s": {"type": "number", "minimum": 0},
        "workload": {"type": "object"},
        "candidate": {"type": "integer", "minimum": 0},
        "from_candidate": {"type": "integer", "minimum": 0},
        "nodes": {"type": "array", "items": {"type": "string"}},
        "set": {"type": "integer", "minimum": 0},
        "batch": {"type": "integer", "minimum": 0},
        "vm_type": {
            "type": "object",
            "required": ["from", "to"],
            "properties": {"from": {"type": ["string", "null"]}, "to": {"type": "string"}},
            "additionalProperties": False,
        },
        "tactic_probability": {"type": "number", "minimum": 0, "maximum": 1},
        "triggers": {"type": "array", "items": {"type": "string"}},
        "predicted": {
            "type": "object",
            "required": ["ops_per_s_before", "ops_per_s_after", "cost_ops", "break_even_s"],
            "properties": {
                "ops_per_s_before": _NUMBER,
                "ops_per_s_after": _NUMBER,
                "cost_ops": _NUMBER,
                "gain_ops": _NUMBER,
                "break_even_s": _OPTIONAL_NUMBER,
                "kept_s": _NUMBER,
            },
        },
        "gain_curve": {"type": "array"},
        "tactic": {"type": ["string", "null"]},
        "reason": {"type": "string"},
    },
    "additionalProperties": False,
}

PLAN_SCHEMA = {
    "type": "object",
    "required": ["schema", "created", "store", "steps", "predicted", "baselines", "reasons"],
    "additionalProperties": False,
    "properties": {
        "schema": {"const": PLAN_SCHEMA_NAME},
        "created": {"type": "string"},
        "store": {"enum": list(STORES)},
        "store_version": {"type": ["string", "null"]},
        "kind": {"enum": ["dynamic", "static", "heterogeneous", "tactic"]},
        "consistency_level": {"type": "string"},
        "cluster": {"type": "object"},
        "lookahead": {"type": "object"},
        "model": {"type": "object"},
        "current": {"type": "object"},
        "steps": {"type": "array", "items": STEP_SCHEMA},
        "skipped": {"type": "array"},
        "candidates": {"type": "array"},
        "sets": {"type": "array"},
        "static_optimized": {"type": "object"},
        "fixed": {"type": "object"},
        "predicted": {"type": "object", "required": ["ops"]},
        "baselines": {"type": "object"},
        "reasons": {"type": "array", "items": {"type": "string"}},
        "timing": {"type": "object"},
        "solver": {"type": "string"},
        "approval": {
            "type": "object",
            "properties": {
                "approved": {"type": "boolean"},
                "by": {"type": ["string", "null"]},
                "at": {"type": ["string", "null"]},
            },
        },
    },
}


class PlanFileError(PlanningError, ValueError):
    """A plan file is missing, malformed or holds something it must not; the message names the field."""


def _now():
    return datetime.datetime.now(datetime.UTC)


def stamp(moment):
    """ISO 8601 UTC text of a datetime or a Unix time."""
    if not isinstance(moment, datetime.datetime):
        moment = datetime.datetime.fromtimestamp(float(moment), datetime.UTC)
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def validate(doc):
    """Raise PlanFileError naming the first field of doc that breaks the schema (or holds a secret)."""
    core_schema.validate(doc, PLAN_SCHEMA, error=PlanFileError, document="plan")
    check_no_secrets(doc, "plan", PlanFileError, "a plan file never holds")
    for index, step in enumerate(doc["steps"]):
        if not (step["configuration"] or step.get("vm_type") or step.get("tactic")):
            raise PlanFileError(
                "steps[%d].configuration: empty; a step changes configuration, vm_type or tactic" % index
            )
        if not step.get("tactic") and "predicted" not in step:
            raise PlanFileError("steps[%d].predicted: required (what the switch is predicted to give)" % index)
    offsets = [step["offset_s"] for step in doc["steps"]]
    if offsets != sorted(offsets):
        raise PlanFileError("steps: the switches must be in time order (offset_s %s)" % offsets)
    return doc


def _plain(value):
    """value with tuples as lists and numpy scalars as Python numbers (what YAML and JSON can hold)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()
    return value


def new_step(
    *,
    step,
    offset_s,
    configuration,
    reason,
    from_candidate=None,
    candidate=None,
    set=None,
    batch=None,
    nodes=None,
    full_configuration=None,
    restart=None,
    roll_s=None,
    workload=None,
    tactic=None,
    tactic_probability=None,
    triggers=None,
    predicted=None,
    gain_curve=None,
    vm_type=None,
):
    """One step of a plan body, as every mode makes it: the keys of STEP_SCHEMA but ``at`` (build() adds it from
    the plan's start and offset_s). A key given None is left out; the keys always come in this order, so plan
    files of every mode read alike.

    step: its number; offset_s: seconds after the plan's start; configuration: only what changes; reason: why.
    Dynamic plans add from_candidate and candidate, heterogeneous plans set, batch, nodes and vm_type ({from, to}),
    tactic plans tactic, tactic_probability and triggers; predicted is {ops_per_s_before, ops_per_s_after,
    cost_ops, gain_ops, break_even_s, kept_s}."""
    values = {
        "step": step,
        "offset_s": offset_s,
        "from_candidate": from_candidate,
        "candidate": candidate,
        "set": set,
        "batch": batch,
        "nodes": nodes,
        "configuration": configuration,
        "full_configuration": full_configuration,
        "restart": restart,
        "roll_s": roll_s,
        "workload": workload,
        "tactic": tactic,
        "tactic_probability": tactic_probability,
        "triggers": triggers,
        "predicted": predicted,
        "gain_curve": gain_curve,
        "reason": reason,
        "vm_type": vm_type,
    }
    return {key: value for key, value in values.items() if value is not None}


def build(
    body, store, start, store_version=None, cluster=None, model=None, current=None, lookahead=None, kind="dynamic"
):
    """The plan document from planning.make_plan's body: times added to each step (start + offset)."""
    if store not in STORES:
        raise PlanFileError("store: %r is not allowed; choose one of %s" % (store, ", ".join(STORES)))
    start_dt = (
        start if isinstance(start, datetime.datetime) else datetime.datetime.fromtimestamp(float(start), datetime.UTC)
    )
    steps = []
    for step in body.get("steps", []):
        entry = dict(step)
        entry["at"] = stamp(start_dt + datetime.timedelta(seconds=float(step["offset_s"])))
        entry.pop("from_candidate", None)
        steps.append(entry)
    skipped = []
    for item in body.get("skipped", []):
        entry = dict(item)
        entry["at"] = stamp(start_dt + datetime.timedelta(seconds=float(item["offset_s"])))
        skipped.append(entry)
    cluster = dict(cluster or {})
    doc = {
        "schema": PLAN_SCHEMA_NAME,
        "created": stamp(_now()),
        "store": store,
        "store_version": store_version,
        "kind": kind,
        "consistency_level": str(cluster.get("cl") or cluster.get("consistency_level") or "ONE"),
        "cluster": cluster,
        "lookahead": dict(body.get("lookahead") or {}, start=stamp(start_dt), **(lookahead or {})),
        "model": dict(model or {}),
        "current": {"configuration": dict(current or {})},
        "steps": steps,
        "skipped": skipped,
        "candidates": body.get("candidates", []),
        "static_optimized": body.get("static_optimized", {}),
        "fixed": body.get("fixed", {}),
        "predicted": body["predicted"],
        "baselines": body["baselines"],
        "reasons": list(body.get("reasons", [])),
        "timing": body.get("timing", {}),
        "solver": body.get("solver", ""),
        "approval": {"approved": False, "by": None, "at": None},
    }
    if body.get("sets"):
        doc["sets"] = body["sets"]
    return validate(_plain(doc))


def dumps(doc):
    if yaml is None:
        raise PlanFileError("writing a plan file needs the Python library PyYAML")
    return yaml.safe_dump(_plain(doc), sort_keys=False, default_flow_style=False, width=120, allow_unicode=True)


def save_plan(path, doc):
    """Write doc (validated) to path atomically; returns the text written."""
    validate(doc)
    text = dumps(doc)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, exist_ok=True)
        handle, tmp = tempfile.mkstemp(prefix=".plan-", dir=directory)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        raise PlanFileError("plan_file: cannot write %s: %s" % (path, exc)) from None
    return text


def load_plan(path):
    """The validated plan document of a file."""
    if yaml is None:
        raise PlanFileError("reading a plan file needs the Python library PyYAML")
    try:
        with open(path, encoding="utf-8") as handle:
            doc = yaml.safe_load(handle)
    except OSError as exc:
        raise PlanFileError("plan_file: cannot read %s: %s" % (path, exc)) from None
    except yaml.YAMLError as exc:
        raise PlanFileError("plan_file: %s is not YAML: %s" % (path, exc)) from None
    return validate(doc)


def summary(doc):
    """Lines a person reads before approving: the switches with their reasons, the skipped changes, the totals."""
    lines = []
    predicted = doc.get("predicted", {})
    base = doc.get("baselines", {})
    look = doc.get("lookahead", {})
    if doc.get("kind") == "tactic":
        step = (doc.get("steps") or [{}])[0]
        lines.append(
            "tactic plan for %s: %s" % (doc.get("store"), step.get("tactic") or predicted.get("tactic") or "none")
        )
        if step:
            lines.append("     %s" % step["reason"])
        lines.extend("  " + reason for reason in doc.get("reasons", []))
        return lines
    if doc.get("kind") == "heterogeneous":
        lines.append(
            "heterogeneous plan for %s: %d complete-set change(s); predicted %s ops/s at %.3f $/h (%s ops/s per $/h, "
            "%+.1f %% over the assignment in place: %s ops/s at %.3f $/h)"
            % (
                doc.get("store"),
                len(doc.get("steps", [])),
                "{:,.0f}".format(predicted.get("ops_per_s", 0)),
                predicted.get("cost_per_h", 0),
                "{:,.0f}".format(predicted.get("perf_per_dollar", 0)),
                100.0 * (predicted.get("gain_share") or 0.0),
                "{:,.0f}".format(predicted.get("in_place_ops_per_s", 0)),
                predicted.get("in_place_cost_per_h", 0),
            )
        )
        for index, step in enumerate(doc.get("steps", [])):
            change = []
            if step.get("vm_type"):
                change.append("VM type %s -> %s" % (step["vm_type"]["from"], step["vm_type"]["to"]))
            change.extend("%s=%s" % (k, v) for k, v in sorted(step["configuration"].items()))
            lines.append(
                "  %d. batch %d at +%s s, set %d (%s): %s"
                % (
                    index + 1,
                    step["batch"],
                    int(step["offset_s"]),
                    step["set"],
                    ", ".join(step["nodes"]),
                    "; ".join(change),
                )
            )
            lines.append("     %s" % step["reason"])
        homogeneous = base.get("best_homogeneous")
        if homogeneous:
            lines.append(
                "  best homogeneous cluster: %s everywhere, %s ops/s per $/h"
                % (homogeneous["vm_type"], "{:,.0f}".format(homogeneous["perf_per_dollar"]))
            )
        lines.extend("  " + reason for reason in doc.get("reasons", []))
        return lines
    if doc.get("kind") == "static":
        lines.append(
            "static plan for %s: %d switch(es), predicted %s ops/s (%+.1f %% over the configuration in place)"
            % (
                doc.get("store"),
                len(doc.get("steps", [])),
                "{:,.0f}".format(predicted.get("ops_per_s", 0)),
                100.0 * (predicted.get("gain_share") or 0.0),
            )
        )
    else:
        lines.append(
            "%s plan for %s, lookahead %s s from %s: %d switch(es), predicted %s ops (%+.1f %% over keeping the "
            "configuration in place)"
            % (
                doc.get("kind", "dynamic"),
                doc.get("store"),
                look.get("seconds"),
                look.get("start"),
                len(doc.get("steps", [])),
                "{:,.0f}".format(predicted.get("ops", 0)),
                100.0 * (predicted.get("gain_share") or 0.0),
            )
        )
    for index, step in enumerate(doc.get("steps", [])):
        settings = ", ".join("%s=%s" % (k, v) for k, v in sorted(step["configuration"].items()))
        lines.append("  %d. at %s (+%s s): set %s" % (index + 1, step["at"], int(step["offset_s"]), settings))
        lines.append("     %s" % step["reason"])
    for item in doc.get("skipped", []):
        lines.append(
            "  not followed at %s (+%s s): %s" % (item.get("at"), int(item.get("offset_s", 0)), item["reason"])
        )
    if base:
        parts = ["%s %s" % (name, f"{value:,.0f}") for name, value in base.items() if isinstance(value, float)]
        lines.append("  baselines (ops over the lookahead): " + ", ".join(parts))
    lines.extend("  " + reason for reason in doc.get("reasons", []))
    return lines
