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
        predicted {ops_per_s_before, ops_per_s_after, cost_ops, gain_ops, break_even_s, kept_s, rewrite}, reason
        (rewrite: the price of a switch that rewrites the data, planning/rewrite.py price())
    skipped: [{at, offset_s, reason}] # changes of the optimum the plan does not follow, and why
    predicted: {ops, in_place_ops, gain_ops, gain_share}
    baselines: {default, static_optimized, naive, theoretical_best, in_place}   # ops over the lookahead
    reasons: [...]
    revert_of: {effect, plan, plan_created, step, ...}   # only a revert plan: the effect record it answers
    approval: {approved: false, by, at}   # approved: {approved: true, by, at, digest} (see approve())

The schema check names the field that is wrong. No secret ever reaches a plan file: a key that looks like one is
refused before anything is written.

The rules of approving and applying a plan are here too (the last section): its digest, approving and revoking,
the checks of an approved plan, the decision of autotune's modes and the configuration record after a step is
applied. The playbooks reach them through the lookup tactician.nosql.plan_file and the filters
tactician.nosql.plan_gate and tactician.nosql.plan_applied; they write none of these rules themselves.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import os
import tempfile

from ansible_collections.tactician.nosql.plugins.module_utils.core import imports
from ansible_collections.tactician.nosql.plugins.module_utils.core import schema as core_schema
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError
from ansible_collections.tactician.nosql.plugins.module_utils.core.secrets import check_no_secrets

yaml = imports.optional("yaml")  # a requirement of the collection; dumps and load_plan say so without it

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
                "rewrite": {"type": "object"},
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
        "revert_of": {"type": "object"},
        "approval": {
            "type": "object",
            "properties": {
                "approved": {"type": "boolean"},
                "by": {"type": ["string", "null"]},
                "at": {"type": ["string", "null"]},
                "digest": {"type": ["string", "null"]},
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


# ---------------------------------------------------------------- approval, and the decision to apply a plan
# The one place of these rules: playbooks/autotune.yml and playbooks/rolling_reconfigure.yml use them through the
# lookup tactician.nosql.plan_file and the filters plan_gate and plan_applied, the module plan_approval approves a
# plan file with them, scripts/tactician_demo.py explains autotune's decisions with them.

MODES = ("plan_only", "approve", "auto")
"""autotune's modes (tactician_autotune_mode)."""
APPROVAL_STATES = ("approved", "revoked")
DIGEST_ALGORITHM = "sha256"
_APPROVE_HOW = (
    "read the plan, then approve it with the module tactician.nosql.plan_approval (state: approved, by: <who>)"
    " or playbooks/approve_plan.yml"
)


def _mapping(doc, field="plan"):
    if not isinstance(doc, dict):
        raise PlanFileError("%s: %r is not a mapping (a plan document of schema %s)" % (field, doc, PLAN_SCHEMA_NAME))
    return doc


def canonical(doc):
    """The text the digest is taken over: the plan without its approval block, JSON with sorted keys.

    Independent of the file's layout (key order, quoting, comments): the same content gives the same text whether
    it was read from YAML or came back from a module as JSON."""
    content = {key: value for key, value in _mapping(doc).items() if key != "approval"}
    return json.dumps(_plain(content), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def digest(doc):
    """``sha256:<hex>`` of the plan's canonical content without its approval block (what an approval approved)."""
    return "%s:%s" % (DIGEST_ALGORITHM, hashlib.sha256(canonical(doc).encode("utf-8")).hexdigest())


def _who(by):
    if not isinstance(by, str) or not by.strip():
        raise PlanFileError("by: %r: give who approves the plan (a name such as jane.doe; not empty)" % (by,))
    return by.strip()


def _when(at):
    """at as the plan files' UTC text: None is now; a datetime, a Unix time or ISO 8601 text."""
    if at is None:
        return stamp(_now())
    if isinstance(at, bool):
        raise PlanFileError("at: %r is not a time; give ISO 8601 such as 2026-11-22T10:20:00Z" % (at,))
    if isinstance(at, (datetime.datetime, int, float)):
        return stamp(at)
    try:
        moment = datetime.datetime.fromisoformat(str(at).strip())
    except ValueError:
        raise PlanFileError("at: %r is not a time; give ISO 8601 such as 2026-11-22T10:20:00Z" % (at,)) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return stamp(moment)


def approval_state(doc):
    """What the approval block says and whether it still holds: dict(approved, by, at, digest, content_digest,
    digest_ok). digest is the recorded one (or None), content_digest the plan's now; digest_ok is None when no
    digest was recorded."""
    approval = _mapping(doc).get("approval") or {}
    now = digest(doc)
    recorded = approval.get("digest")
    return dict(
        approved=approval.get("approved") is True,
        by=approval.get("by"),
        at=approval.get("at"),
        digest=recorded,
        content_digest=now,
        digest_ok=None if not recorded else recorded == now,
    )


def approve(doc, by, at=None):
    """A copy of doc (validated, with steps) approved by by at at (default now), with the digest of its content.

    The digest lets check_approved see a plan changed after it was approved."""
    validate(_mapping(doc))
    if not doc["steps"]:
        raise PlanFileError("steps: the plan has none (it keeps the configuration in place): nothing to approve")
    approved = dict(doc)
    approved["approval"] = {"approved": True, "by": _who(by), "at": _when(at), "digest": digest(doc)}
    return approved


def revoke(doc):
    """A copy of doc (validated) with the approval block of a plan nobody approved."""
    validate(_mapping(doc))
    revoked = dict(doc)
    revoked["approval"] = {"approved": False, "by": None, "at": None}
    return revoked


def made_for(doc, current_configuration):
    """The plan's current.configuration restricted to the keys of the configuration in place."""
    planned = (_mapping(doc).get("current") or {}).get("configuration") or {}
    current = _current(current_configuration)
    return {key: planned[key] for key in current if key in planned}


def _current(current_configuration):
    if current_configuration is None:
        return {}
    if not isinstance(current_configuration, dict):
        raise PlanFileError(
            "current_configuration: %r is not a mapping of settings (the configuration in place)"
            % (current_configuration,)
        )
    return current_configuration


def _json(value):
    return json.dumps(_plain(value), sort_keys=True, default=str)


def check_approved(doc, current_configuration=None, source=None):
    """doc (validated) when it may be applied as approved; PlanFileError naming what is wrong otherwise.

    In this order: approval.approved is not true; the recorded digest is missing or is not the content's (the
    plan changed after it was approved: approve it again); the plan has no steps; it was made for another
    configuration than the one in place (its current.configuration restricted to the keys of
    current_configuration is not equal to it: plan again). source names where current_configuration came from
    (a file, a variable) in that message."""
    validate(_mapping(doc))
    state = approval_state(doc)
    if not state["approved"]:
        raise PlanFileError("approval.approved is not true: nobody approved this plan; %s" % _APPROVE_HOW)
    who = "by %s at %s" % (state["by"] or "(nobody named)", state["at"] or "(no time)")
    if not state["digest"]:
        raise PlanFileError(
            "approval.digest: missing: the approval (%s) does not record which content was approved (edited by hand?);"
            " %s" % (who, _APPROVE_HOW)
        )
    if not state["digest_ok"]:
        raise PlanFileError(
            "approval.digest: the plan changed after it was approved %s (approved %s, the content now %s): read it"
            " again and approve it again" % (who, state["digest"], state["content_digest"])
        )
    if not doc["steps"]:
        raise PlanFileError("steps: the plan has none (it keeps the configuration in place): nothing to apply")
    current = _current(current_configuration)
    planned = made_for(doc, current)
    if planned != current:
        raise PlanFileError(
            "current.configuration: the plan was made for %s but the configuration in place%s is %s: plan again"
            % (_json(planned), " (%s)" % source if source else "", _json(current))
        )
    return doc


def _step_s(step_s):
    try:
        value = float(step_s)
    except (TypeError, ValueError):
        value = None
    if isinstance(step_s, bool) or value is None or not 0 < value < float("inf"):
        raise PlanFileError(
            "step_s: %r is not a number of seconds > 0 (the decision step, tactician_autotune_step_s)" % (step_s,)
        )
    return value


def _min_gain(min_gain):
    try:
        value = float(min_gain)
    except (TypeError, ValueError):
        value = None
    if value is None or isinstance(min_gain, bool) or math.isnan(value):
        raise PlanFileError(
            "min_gain: %r is not a number; give the least predicted gain share to apply, such as 0.05 for 5 %%"
            % (min_gain,)
        )
    return value


def step_due_now(doc, step_s):
    """The index of the step due now, or None: the first step when its offset_s is less than one decision step.

    Steps are in time order (validate), so when the first one is not due, none is."""
    step_s = _step_s(step_s)
    steps = _mapping(doc).get("steps") or []
    if steps and float(steps[0]["offset_s"]) < step_s:
        return 0
    return None


def check_step(doc, step):
    """step as the index of one of doc's steps; PlanFileError naming the allowed range otherwise."""
    steps = _mapping(doc).get("steps") or []
    index = None
    if isinstance(step, bool):
        index = None
    elif isinstance(step, int):
        index = step
    elif isinstance(step, float) and step.is_integer():
        index = int(step)
    elif isinstance(step, str) and step.strip().isdigit():
        index = int(step)
    if index is None:
        raise PlanFileError("step: %r is not the index of a step (0, 1, ...)" % (step,))
    if not steps:
        raise PlanFileError("step: %r: the plan has no steps (it keeps the configuration in place)" % (step,))
    if not 0 <= index < len(steps):
        raise PlanFileError(
            "step: %r is not a step of the plan; allowed: 0 to %d (it has %d)" % (step, len(steps) - 1, len(steps))
        )
    return index


def _decision(apply, step, reason, doc):
    return {"apply": apply, "step": step, "reason": reason, "digest": digest(doc)}


def gate(doc, mode, min_gain, step_s, current=None, source=None):
    """Whether autotune applies a plan now: dict(apply, step, reason, digest).

    mode plan_only: never (a person reads the plan first). approve: step 0, at once, when check_approved passes
    (current: the configuration in place, source: where it came from); else reason is check_approved's message.
    auto: the step due now (step_due_now) when the plan's predicted.gain_share is at least min_gain. reason says
    why, or why not, for a person; digest is the plan's content digest (rolling_reconfigure.yml checks the plan file
    it rolls still has it)."""
    if mode not in MODES:
        raise PlanFileError("mode: %r is not allowed; choose one of %s" % (mode, ", ".join(MODES)))
    min_gain = _min_gain(min_gain)
    step_s = _step_s(step_s)
    validate(_mapping(doc))
    steps = doc["steps"]
    if mode == "plan_only":
        return _decision(
            False,
            None,
            "mode plan_only: the plan (%d switch(es)) is for a person to read and approve; nothing is applied"
            % len(steps),
            doc,
        )
    if mode == "approve":
        try:
            check_approved(doc, current, source)
        except PlanFileError as exc:
            return _decision(False, None, "not applied: %s" % exc, doc)
        approval = doc["approval"]
        return _decision(
            True,
            0,
            "approved by %s at %s: step 0 (planned for %s, +%d s) is applied now"
            % (approval.get("by"), approval.get("at"), steps[0]["at"], int(steps[0]["offset_s"])),
            doc,
        )
    if not steps:
        return _decision(False, None, "nothing to apply: the plan keeps the configuration in place", doc)
    due = step_due_now(doc, step_s)
    if due is None:
        return _decision(
            False,
            None,
            "not due yet: the first switch is in %d s (at %s), not within this decision step of %g s; a later run"
            " decides" % (int(steps[0]["offset_s"]), steps[0]["at"], step_s),
            doc,
        )
    gain = float((doc.get("predicted") or {}).get("gain_share") or 0.0)
    if gain < min_gain:
        return _decision(
            False,
            None,
            "gain under the threshold: %+.1f %% < %.1f %% (the predicted gain over the lookahead against min_gain)"
            % (100.0 * gain, 100.0 * min_gain),
            doc,
        )
    return _decision(
        True,
        due,
        "step %d is due now (+%d s, within the decision step of %g s) and the predicted gain over the lookahead is"
        " %+.1f %% >= %.1f %%" % (due, int(steps[due]["offset_s"]), step_s, 100.0 * gain, 100.0 * min_gain),
        doc,
    )


def applied_configuration(doc, step, current=None):
    """The whole configuration in place once step is applied: its full_configuration, else current with the
    step's configuration over it."""
    index = check_step(doc, step)
    entry = doc["steps"][index]
    if entry.get("full_configuration") is not None:
        return dict(entry["full_configuration"])
    configuration = dict(_current(current))
    configuration.update(entry["configuration"])
    return configuration


def applied_record(doc, step_index, current, cluster=None, plan=None, at=None, previous=None):
    """The record autotune keeps after applying step_index (<plans>/<cluster>-applied.yml; the next run plans from
    its configuration and holds the one it left as the switch's way back): dict(cluster, plan, applied,
    configuration, previous). cluster defaults to the plan's cluster.name, plan is the plan file's path, at the
    time it was applied (default now), previous the configuration the switch left (default current)."""
    configuration = applied_configuration(doc, step_index, current)
    return {
        "cluster": cluster if cluster is not None else (doc.get("cluster") or {}).get("name"),
        "plan": plan,
        "applied": _when(at),
        "configuration": configuration,
        "previous": dict(_current(current if previous is None else previous)),
    }


def set_approval(path, state, by=None, at=None, check_mode=False):
    """Approve or revoke the plan file at path; what the module plan_approval does.

    Idempotent: approved stays as it is when it is approved by the same person and its digest still matches the
    content; revoked when it is not approved. Returns dict(changed, path, approval (after), before (the approval
    block before), digest (the content's), summary (the plan's lines for a person)); writes only when changed and
    not check_mode."""
    if state not in APPROVAL_STATES:
        raise PlanFileError("state: %r is not allowed; choose one of %s" % (state, ", ".join(APPROVAL_STATES)))
    if state == "approved" and by is None:
        raise PlanFileError("by: required with state approved (who approves the plan)")
    doc = load_plan(path)
    before = dict(doc.get("approval") or {})
    held = approval_state(doc)
    if state == "approved":
        unchanged = held["approved"] and held["digest_ok"] and held["by"] == _who(by)
        after = doc if unchanged else approve(doc, by, at)
    else:
        unchanged = not held["approved"]
        after = doc if unchanged else revoke(doc)
    if not unchanged and not check_mode:
        save_plan(path, after)
    return dict(
        changed=not unchanged,
        path=path,
        approval=dict(after.get("approval") or {}),
        before=before,
        digest=held["content_digest"],
        summary=summary(after),
    )
