# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The realized effect of an applied plan step, next to what the plan predicted (the loop's last arrow), and the
decision to take the step back when it did worse than the prediction's lower bound.

A plan step predicts the cluster's ops/s before and after its switch for the workload it expects. After the roll,
the cluster is observed again: the record puts the measured throughput before and after, the workload actually
seen in both windows, and the prediction side by side, so a person (and the report) can tell a planner that
predicts well from one that does not.

A measured gain is a result only when both windows lie wholly inside one workload phase and measure the servers.
Each side is a list of sub-window samples (several observe samples in a row; one sample is a list of one), and the
record's ``verdict`` says whether the measurement holds, checked in this order:

- ``implausible``: a measurement error, not a result. The realized ratio after/before lies outside
  [1/plausible_ratio, plausible_ratio] (3 by default: no setting of this collection moved the lab's throughput by
  more than 1.7x), or one side's throughput is below 1/plausible_ratio of the other side's sub-window median (the
  window caught a collapse: a compaction debt paid, a node away), or there was no throughput before the switch.
  The gain and its interval are then left out (``measured.gain`` null; the raw number stays in
  ``measured.raw_gain`` for the diagnosis) and are never used as a result.
- ``mixed_phases``: the two windows carried different mixes (read ratio apart by more than
  ``same_mix_tolerance``): the change is the workload's as much as the configuration's.
- ``unstable``: a side is not one phase inside: the read ratio of one of its sub-windows is further than
  ``same_mix_tolerance`` from the side's, or the throughput of one of its sub-windows lies outside
  [median/plausible_ratio, median*plausible_ratio] of the side's sub-windows (a transient within the window). The
  throughput's coefficient of variation over the sub-windows is reported either way.
- ``throttled``: the clients offered ``offered`` ops/s and a side served (almost) all of it: the throughput
  measures the clients' limit, not the configuration.
- ``valid`` otherwise.

With at least two sub-windows a side, the realized gain has a 95 % confidence interval: a t interval of
log(after/before) with the variance of the sub-window means (delta method: the squared coefficients of variation
over n on each side) and Welch-Satterthwaite degrees of freedom rounded down, taken back as exp(.) - 1 (so it lies
above -100 % and is centred on the point value in log terms).

The prediction's lower bound is the step's ``predicted.gain_low_share`` (the relative gain after/before - 1 at the
low end of the forecast's uncertainty, which dynamic plans give), else 0.0: the switch must at least not lose.
``below_lower_bound`` is true when even the upper end of the realized gain's interval is below that bound (null
when the verdict is not valid, the step was not applied, or there is no interval), and then ``revert`` holds the
configuration to go back to: the step's changed keys with the values in place before it (the plan's
``current.configuration`` and the steps before it, completed by the configuration in place the caller knew).
``revert_plan()`` makes the plan document that rolls it back, the same way the forward step was rolled, and the
history keeps the revert under ``revert/<cluster>/<plan created>/<step>``, next to the effect record, so a step is
reverted once. A revert plan's own effect is recorded but never reverted.

Records go to the history store's state under ``effect/<cluster>/<plan created>/<step>`` (one per applied step,
written again only when its content changes) and are listed by ``effects()``. ``training_rows()`` gives a valid
record's two measured points (workload, configuration, ops/s) as rows of the surrogate's dataset.
"""

from __future__ import annotations

import datetime
import math
import os
import statistics

from ansible_collections.tactician.nosql.plugins.module_utils.core import checks, stats
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import CoreError, PlanningError
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile

EFFECT_SCHEMA = "tactician.effect/v1"
REVERT_SCHEMA = "tactician.revert/v1"
STATE_PREFIX = "effect/"
REVERT_PREFIX = "revert/"
SAME_MIX_TOLERANCE = 0.1
PLAUSIBLE_RATIO = 3.0
"""The realized after/before ratio of a plausible measurement lies within [1/3, 3]."""
OFFERED_TOLERANCE = 0.05
"""A side that served at least (1 - this) of the offered ops/s was limited by the clients."""
LOWER_BOUND_DEFAULT = "default: the step has no predicted.gain_low_share, so it must at least not lose"
CI_METHOD = (
    "95 % t interval of log(after/before) over the sub-windows (delta method, Welch-Satterthwaite df rounded down)"
)

VERDICTS = ("valid", "implausible", "mixed_phases", "unstable", "throttled")
"""The verdicts; a record is used as a result only when valid."""


class EffectError(PlanningError, ValueError):
    """Bad input to the effect record; the message names the field."""


def t975(df):
    """The 97.5 % quantile of Student's t with df degrees of freedom rounded down (Welch's df, conservatively;
    core/stats.py)."""
    try:
        return stats.t_quantile(0.975, math.floor(df) if isinstance(df, float) and df >= 1 else df)
    except CoreError as exc:
        raise EffectError(str(exc)) from None


# ---------------------------------------------------------------------------------------------- the windows
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
    window_s = sample.get("window_s")
    if window_s is not None:
        window_s = checks.number("%s.window_s" % field, window_s, EffectError, above=0)
    return throughput, read_ratio, sample.get("time"), window_s


def window(field, samples, tolerance=SAME_MIX_TOLERANCE, plausible_ratio=PLAUSIBLE_RATIO):
    """One side of the effect from its sub-window samples (a sample or a list of them, in time order).

    Returns {"throughput" (ops/s over the whole side, sub-windows weighted by their length), "read_ratio" (of the
    operations of the whole side), "subwindows" (the sub-windows' ops/s), "median", "cv" (coefficient of variation
    of the sub-windows' ops/s; None with fewer than 2), "stable", "problems" (why not), "time" (end of the last
    sub-window), "window_s" (their total length)}."""
    if isinstance(samples, dict):
        parsed = [_sample(field, samples)]
    elif isinstance(samples, (list, tuple)) and samples:
        parsed = [_sample("%s[%d]" % (field, index), sample) for index, sample in enumerate(samples)]
    else:
        raise EffectError(
            "%s: expected the cluster's workload sample or a non-empty list of them (sub-windows of one side)" % field
        )
    rates = [tput for tput, _rr, _t, _w in parsed]
    weights = [w if w is not None else 1.0 for _tput, _rr, _t, w in parsed]
    throughput = math.fsum(w * r for w, r in zip(weights, rates, strict=True)) / math.fsum(weights)
    mixes = [(w * r, rr) for w, r, (_t, rr, _time, _w) in zip(weights, rates, parsed, strict=True) if rr is not None]
    read_ratio = None
    if mixes:
        ops = math.fsum(o for o, _rr in mixes)
        if ops > 0:
            read_ratio = math.fsum(o * rr for o, rr in mixes) / ops
        else:
            read_ratio = math.fsum(rr for _o, rr in mixes) / len(mixes)
    median = statistics.median(rates)
    mean = statistics.fmean(rates)
    cv = statistics.stdev(rates) / mean if len(rates) >= 2 and mean > 0 else None
    problems = []
    if read_ratio is not None:
        for index, (_t, rr, _time, _w) in enumerate(parsed):
            if rr is not None and abs(rr - read_ratio) > tolerance:
                problems.append(
                    "%s: sub-window %d has read ratio %s against %s for the whole window (apart by more than %g):"
                    " the window spans two phases" % (field, index, _fmt(rr), _fmt(read_ratio), tolerance)
                )
    for index, rate in enumerate(rates):
        if median > 0 and not median / plausible_ratio <= rate <= median * plausible_ratio:
            problems.append(
                "%s: sub-window %d served %s ops/s against a median of %s over the window's %d sub-windows"
                " (outside [1/%g, %g] of it): a transient, not a steady state"
                % (field, index, f"{rate:,.0f}", f"{median:,.0f}", len(rates), plausible_ratio, plausible_ratio)
            )
        elif median == 0 and rate > 0:
            problems.append("%s: sub-window %d served %s ops/s while most served none" % (field, index, f"{rate:,.0f}"))
    times = [t for _tput, _rr, t, _w in parsed if t is not None]
    return {
        "throughput": throughput,
        "read_ratio": read_ratio,
        "subwindows": rates,
        "median": median,
        "cv": cv,
        "stable": not problems,
        "problems": problems,
        "time": times[-1] if times else None,
        "window_s": math.fsum(w for _tput, _rr, _t, w in parsed if w is not None) or None,
    }


def gain_interval(before, after):
    """(low, high) of the 95 % interval of the realized gain after/before - 1 from two windows' sub-windows (see
    the module's docstring), or None when a side has fewer than 2 sub-windows or no throughput."""
    n0, n1 = len(before["subwindows"]), len(after["subwindows"])
    if n0 < 2 or n1 < 2 or before["throughput"] <= 0 or after["throughput"] <= 0:
        return None
    m0, m1 = statistics.fmean(before["subwindows"]), statistics.fmean(after["subwindows"])
    if m0 <= 0 or m1 <= 0:
        return None
    v0 = statistics.variance(before["subwindows"]) / (n0 * m0 * m0)
    v1 = statistics.variance(after["subwindows"]) / (n1 * m1 * m1)
    centre = math.log(after["throughput"] / before["throughput"])
    if v0 + v1 == 0:
        return (math.exp(centre) - 1.0, math.exp(centre) - 1.0)
    df = (v0 + v1) ** 2 / (v0 * v0 / (n0 - 1) + v1 * v1 / (n1 - 1))
    half = t975(df) * math.sqrt(v0 + v1)
    return (math.exp(centre - half) - 1.0, math.exp(centre + half) - 1.0)


# ---------------------------------------------------------------------------------------------- the prediction
def _steps(doc, step):
    if not isinstance(doc, dict) or "steps" not in doc:
        raise EffectError("plan: expected a plan document (tactician.plan/v1)")
    steps = doc.get("steps") or []
    if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step < max(1, len(steps)):
        raise EffectError("step: %r is not a step of this plan (it has %d)" % (step, len(steps)))
    return steps


def predicted(doc, step=0):
    """What plan doc predicted for its step: {"before", "after", "gain", "gain_low"} in ops/s and shares (None
    where it predicted none, e.g. a tactic plan), with the step's configuration, tactic and nodes."""
    steps = _steps(doc, step)
    entry = steps[step] if steps else {}
    numbers = entry.get("predicted") or {}
    before = numbers.get("ops_per_s_before")
    after = numbers.get("ops_per_s_after")
    if not steps:
        value = (doc.get("predicted") or {}).get("ops_per_s")
        before = after = value
    gain = after / before - 1.0 if before and after is not None else None
    low = numbers.get("gain_low_share")
    if isinstance(low, bool) or not isinstance(low, (int, float)) or not math.isfinite(low):
        low = None
    return {
        "before": before,
        "after": after,
        "gain": None if gain is None else round(gain, 5),
        "gain_low": None if low is None else round(float(low), 5),
        "configuration": dict(entry.get("configuration") or {}),
        "tactic": entry.get("tactic"),
        "nodes": list(entry.get("nodes") or []),
        "at": entry.get("at"),
    }


def lower_bound(doc, step=0):
    """(bound, source): the least realized gain the step's prediction allows, its predicted.gain_low_share, else
    0.0 (the switch must at least not lose)."""
    low = predicted(doc, step)["gain_low"]
    if low is None:
        return 0.0, LOWER_BOUND_DEFAULT
    return low, "predicted.gain_low_share"


def configuration_before(doc, step=0, current=None):
    """The whole configuration in place before plan doc's step: current (the configuration in place the caller
    knew) with the plan's current.configuration over it, then each earlier step's full_configuration (or its
    changes)."""
    steps = _steps(doc, step)
    configuration = dict(current or {})
    configuration.update((doc.get("current") or {}).get("configuration") or {})
    for entry in steps[:step]:
        if entry.get("full_configuration") is not None:
            configuration = dict(entry["full_configuration"])
        else:
            configuration.update(entry.get("configuration") or {})
    return configuration


def configuration_after(doc, step=0, current=None):
    """The whole configuration in place once plan doc's step is applied."""
    steps = _steps(doc, step)
    entry = steps[step] if steps else {}
    if entry.get("full_configuration") is not None:
        return dict(entry["full_configuration"])
    configuration = configuration_before(doc, step, current)
    configuration.update(entry.get("configuration") or {})
    return configuration


def revert_target(doc, step=0, current=None):
    """(target, why_not): the configuration that takes plan doc's step back - {"configuration" (the step's changed
    keys with the values before it), "full_configuration", "undo" (the values the step set), "nodes"} - or None
    and the reason when the step cannot be taken back by a roll."""
    steps = _steps(doc, step)
    if not steps:
        return None, "the plan has no step to take back"
    entry = steps[step]
    if entry.get("tactic"):
        return None, "a tactic step is taken back by its inverse tactic (role tactician.nosql.*_tactics), not a roll"
    if entry.get("vm_type"):
        return None, "a VM type change is taken back with the cloud provider's tooling, not a roll"
    changed = entry.get("configuration") or {}
    before = configuration_before(doc, step, current)
    unknown = sorted(key for key in changed if key not in before)
    if unknown:
        return None, (
            "the value before the switch of %s is not known (neither in the plan's current.configuration nor in"
            " the configuration in place given)" % ", ".join(unknown)
        )
    configuration = {key: before[key] for key in changed if before[key] != changed[key]}
    if not configuration:
        return None, "the step changed nothing that differs from the configuration before it"
    return {
        "configuration": configuration,
        "full_configuration": before,
        "undo": {key: changed[key] for key in configuration},
        "nodes": list(entry.get("nodes") or []),
    }, None


# ---------------------------------------------------------------------------------------------- the record
def _implausible(side0, side1, plausible_ratio):
    """Why the two windows are a measurement error rather than a result (an empty list when they are not)."""
    tput0, tput1 = side0["throughput"], side1["throughput"]
    if tput0 <= 0:
        return ["no throughput before the switch (0 ops/s): there is no relative gain to measure"]
    found = []
    ratio = tput1 / tput0
    if not 1.0 / plausible_ratio <= ratio <= plausible_ratio:
        found.append(
            "a realized change of %+.1f %% (after/before %.2f) is outside the plausible [1/%g, %g]: a"
            " measurement error, not a result" % (100.0 * (ratio - 1.0), ratio, plausible_ratio, plausible_ratio)
        )
    for name, side, other_name, other in (("before", side0, "after", side1), ("after", side1, "before", side0)):
        if other["median"] > 0 and side["throughput"] < other["median"] / plausible_ratio:
            found.append(
                "the %s window served %s ops/s, far below the %s window's sub-window median of %s (under 1/%g of"
                " it): it caught a collapse (compaction debt, a node away), not the configuration"
                % (name, f"{side['throughput']:,.0f}", other_name, f"{other['median']:,.0f}", plausible_ratio)
            )
    return found


def _throttled(side0, side1, offered, offered_tolerance):
    """Which windows served (almost) all the clients offered (an empty list when offered is unknown)."""
    if offered is None:
        return []
    return [
        "the %s window served %s of the %s ops/s the clients offer: it measures the clients' limit"
        % (name, f"{side['throughput']:,.0f}", f"{offered:,.0f}")
        for name, side in (("before", side0), ("after", side1))
        if side["throughput"] >= (1.0 - offered_tolerance) * offered
    ]


def _judge(doc, step, current, applied, verdict, measured_gain, interval, bound, side0, side1):
    """(below_lower_bound, decision, revert) of a record: judged only for an applied step, a valid verdict and an
    interval; a revert only below the bound, for a step that is not itself a revert and that a roll takes back."""
    bound, bound_source = bound
    below = None
    revert = None
    if not applied:
        decision = "no judgement: the step was not applied"
    elif verdict != "valid":
        decision = "no judgement: the measurement is %s%s, so nothing is reverted" % (
            verdict,
            " (a measurement error)" if verdict == "implausible" else "",
        )
    elif interval is None:
        decision = (
            "no judgement: a confidence interval needs at least 2 sub-windows a side (got %d before, %d after)"
            % (len(side0["subwindows"]), len(side1["subwindows"]))
        )
    else:
        below = interval[1] < bound
        words = "realized %+.1f %% [95 %% CI %+.1f %%, %+.1f %%], lower bound %+.1f %% (%s)" % (
            100.0 * measured_gain,
            100.0 * interval[0],
            100.0 * interval[1],
            100.0 * bound,
            bound_source,
        )
        if not below:
            decision = "keep: the interval reaches the lower bound; %s" % words
        elif doc.get("revert_of"):
            decision = "below the lower bound, but a revert is not reverted again (a person decides); %s" % words
        else:
            target, why_not = revert_target(doc, step, current)
            if target is None:
                decision = "below the lower bound, but no revert: %s; %s" % (why_not, words)
            else:
                decision = "revert: even the upper end of the interval is below the lower bound; %s" % words
                revert = target
    return below, decision, revert


def realized(
    doc,
    before,
    after,
    step=0,
    applied=True,
    same_mix_tolerance=SAME_MIX_TOLERANCE,
    current=None,
    plausible_ratio=PLAUSIBLE_RATIO,
    offered=None,
    offered_tolerance=OFFERED_TOLERANCE,
):
    """The effect record of plan doc's step: predicted and measured ops/s before and after, the gains with the
    realized gain's interval, the error of the predicted gain, the verdict on the measurement, whether the gain is
    below the prediction's lower bound and, when it is, the configuration to go back to.

    before, after: the cluster's workload sample of each side, or a list of sub-window samples. current: the
    configuration in place before the roll as the caller knew it (completes the revert's configuration).
    plausible_ratio: the bound of a plausible realized ratio (see the module's docstring). offered: ops/s the
    clients offer when they are throttled (None: closed-loop or unknown)."""
    same_mix_tolerance = checks.number("same_mix_tolerance", same_mix_tolerance, EffectError, minimum=0)
    plausible_ratio = checks.number("plausible_ratio", plausible_ratio, EffectError, above=1)
    offered_tolerance = checks.number("offered_tolerance", offered_tolerance, EffectError, minimum=0)
    if offered is not None:
        offered = checks.number("offered", offered, EffectError, above=0)
    prediction = predicted(doc, step)
    side0 = window("before", before, same_mix_tolerance, plausible_ratio)
    side1 = window("after", after, same_mix_tolerance, plausible_ratio)
    tput0, tput1 = side0["throughput"], side1["throughput"]
    read0, read1 = side0["read_ratio"], side1["read_ratio"]
    raw_gain = tput1 / tput0 - 1.0 if tput0 > 0 else None

    implausible = _implausible(side0, side1, plausible_ratio)
    same = read0 is not None and read1 is not None and abs(read1 - read0) <= same_mix_tolerance
    throttled = _throttled(side0, side1, offered, offered_tolerance)
    if implausible:
        verdict = "implausible"
    elif not same:
        verdict = "mixed_phases"
    elif not (side0["stable"] and side1["stable"]):
        verdict = "unstable"
    elif throttled:
        verdict = "throttled"
    else:
        verdict = "valid"

    interval = gain_interval(side0, side1) if verdict != "implausible" else None
    measured_gain = raw_gain if verdict != "implausible" else None
    error = None
    if measured_gain is not None and prediction["gain"] is not None:
        error = measured_gain - prediction["gain"]
    bound, bound_source = lower_bound(doc, step)

    notes = []
    if not applied:
        notes.append("the step was not applied: the measured change is the workload's, not the plan's")
    notes.extend(implausible)
    if not same:
        notes.append(
            "the workload changed between the windows (read ratio %s -> %s): the measured gain mixes the "
            "configuration's effect with the workload's" % (_fmt(read0), _fmt(read1))
        )
    notes.extend(side0["problems"] + side1["problems"])
    notes.extend(throttled)

    below, decision, revert = _judge(
        doc, step, current, applied, verdict, measured_gain, interval, (bound, bound_source), side0, side1
    )

    return {
        "schema": EFFECT_SCHEMA,
        "cluster": (doc.get("cluster") or {}).get("name"),
        "store": doc.get("store"),
        "plan": {
            "created": doc.get("created"),
            "kind": doc.get("kind"),
            "step": step,
            "revert_of": (doc.get("revert_of") or {}).get("effect"),
        },
        "applied": bool(applied),
        "configuration": prediction["configuration"],
        "tactic": prediction["tactic"],
        "nodes": prediction["nodes"],
        "predicted": {k: prediction[k] for k in ("before", "after", "gain", "gain_low")},
        "measured": {
            "before": round(tput0, 1),
            "after": round(tput1, 1),
            "gain": _round(measured_gain),
            "gain_ci95": None if interval is None else [_round(interval[0]), _round(interval[1])],
            "ci_method": CI_METHOD,
            "raw_gain": _round(raw_gain),
            "read_ratio_before": _round(read0),
            "read_ratio_after": _round(read1),
            "subwindows_before": [round(x, 1) for x in side0["subwindows"]],
            "subwindows_after": [round(x, 1) for x in side1["subwindows"]],
            "cv_before": _round(side0["cv"], 4),
            "cv_after": _round(side1["cv"], 4),
            "windows": [
                {"time": side0["time"], "window_s": side0["window_s"]},
                {"time": side1["time"], "window_s": side1["window_s"]},
            ],
        },
        "verdict": verdict,
        "measurement_error": verdict == "implausible",
        "same_workload": bool(same),
        "bounds": {
            "same_mix_tolerance": same_mix_tolerance,
            "plausible_ratio": plausible_ratio,
            "offered": offered,
            "offered_tolerance": offered_tolerance,
        },
        "gain_error": _round(error),
        "lower_bound": {"gain": bound, "source": bound_source},
        "below_lower_bound": below,
        "decision": decision,
        "revert": revert,
        "notes": notes,
    }


def _round(value, digits=5):
    return None if value is None else round(value, digits)


def _fmt(value):
    return "?" if value is None or not math.isfinite(value) else "%.2f" % value


def _key(prefix, cluster, created, step):
    return "%s%s/%s/%s" % (prefix, cluster or "-", created or "-", step)


def state_key(record):
    """Where record goes in the history's state."""
    return _key(STATE_PREFIX, record.get("cluster"), record["plan"].get("created"), record["plan"].get("step", 0))


def revert_key(record):
    """Where the revert of record's step goes in the history's state (next to the effect record)."""
    return _key(REVERT_PREFIX, record.get("cluster"), record["plan"].get("created"), record["plan"].get("step", 0))


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


def reverts(history, cluster=None):
    """The revert records kept in history (of one cluster, or all), oldest plan first."""
    prefix = REVERT_PREFIX + ("%s/" % cluster if cluster else "")
    return [record for _key, record in history.states(prefix)]


def summary(record):
    """One line a person reads: predicted and measured gain with its interval, the verdict, the caveats and the
    decision."""
    what = record["tactic"] or ", ".join("%s=%s" % kv for kv in sorted(record["configuration"].items())) or "no change"
    predicted_gain = record["predicted"]["gain"]
    measured = record["measured"]
    verdict = record.get("verdict", "valid")
    if verdict == "implausible":
        text = "%s: predicted %s; MEASUREMENT ERROR, not a result (%s -> %s ops/s)" % (
            what,
            _pct(predicted_gain),
            f"{measured['before']:,.0f}",
            f"{measured['after']:,.0f}",
        )
    else:
        ci = measured.get("gain_ci95")
        text = "%s: predicted %s, measured %s%s (%s -> %s ops/s)" % (
            what,
            _pct(predicted_gain),
            _pct(measured["gain"]),
            " [95 %% CI %s, %s]" % (_pct(ci[0]), _pct(ci[1])) if ci else "",
            f"{measured['before']:,.0f}",
            f"{measured['after']:,.0f}",
        )
        if verdict != "valid":
            text += "; verdict %s" % verdict
    if record["notes"]:
        text += "; " + "; ".join(record["notes"])
    if record.get("decision") and record.get("applied") and verdict == "valid":
        text += "; " + record["decision"]
    return text


def _pct(value):
    return "n/a" if value is None else "%+.1f %%" % (100.0 * value)


# ---------------------------------------------------------------------------------------------- the revert
def revert_plan(doc, step, record, current=None, plan=None, start=None):
    """The plan document (tactician.plan/v1, not approved) whose single step takes plan doc's step back to the
    configuration before it, as record (its effect record, asking for a revert) says; rolled by the same
    rolling_reconfigure.yml as the forward step. plan: the forward plan file's path (named in revert_of); start:
    epoch seconds of the revert (default now)."""
    if not record.get("revert"):
        raise EffectError(
            "revert: the effect record asks for no revert (verdict %s, below_lower_bound %s): %s"
            % (record.get("verdict"), record.get("below_lower_bound"), record.get("decision"))
        )
    steps = _steps(doc, step)
    entry = steps[step]
    target = record["revert"]
    measured = record["measured"]
    key = state_key(record)
    reason = "takes back step %d of the plan created %s (%s): effect record %s measured %s -> %s ops/s" % (
        step,
        doc.get("created"),
        ", ".join("%s=%s" % kv for kv in sorted(target["undo"].items())),
        key,
        f"{measured['before']:,.0f}",
        f"{measured['after']:,.0f}",
    )
    new = planfile.new_step(
        step=0,
        offset_s=0.0,
        nodes=target["nodes"] or None,
        configuration=dict(target["configuration"]),
        full_configuration=dict(target["full_configuration"]),
        restart=entry.get("restart"),
        roll_s=entry.get("roll_s"),
        workload=entry.get("workload"),
        predicted={
            # measured, not modelled: the previous configuration served measured.before under this workload
            "ops_per_s_before": measured["after"],
            "ops_per_s_after": measured["before"],
            "cost_ops": 0.0,
            "break_even_s": None,
        },
        reason=reason,
    )
    gain_back = measured["before"] / measured["after"] - 1.0 if measured["after"] else None
    # over one decision step of the forward plan, the ops the measured throughputs give (no model is asked)
    seconds = float((doc.get("lookahead") or {}).get("step_s") or 30.0)
    body = {
        "steps": [new],
        "predicted": {
            "ops": round(measured["before"] * seconds, 1),
            "in_place_ops": round(measured["after"] * seconds, 1),
            "ops_per_s": measured["before"],
            "gain_share": None if gain_back is None else round(gain_back, 5),
            "source": "measured by effect record %s" % key,
        },
        "baselines": {},
        "reasons": [
            "the switch did worse than its prediction allows: %s" % record["decision"],
            "the configuration goes back to what it was before the switch, rolled like the switch was",
        ],
    }
    forward = configuration_after(doc, step, target["full_configuration"])
    revert = planfile.build(
        body,
        doc.get("store"),
        _time() if start is None else start,
        doc.get("store_version"),
        doc.get("cluster") or {},
        doc.get("model") or {},
        forward,
        lookahead={"steps": 1, "step_s": seconds, "seconds": seconds},
        kind=doc.get("kind") or "dynamic",
    )
    revert["consistency_level"] = doc.get("consistency_level") or revert["consistency_level"]
    revert["revert_of"] = {
        "effect": key,
        "plan": plan,
        "plan_created": doc.get("created"),
        "step": step,
        "measured_gain": measured["gain"],
        "gain_ci95": measured["gain_ci95"],
        "lower_bound": record["lower_bound"]["gain"],
    }
    return planfile.validate(revert)


def _time():
    return datetime.datetime.now(datetime.UTC).timestamp()


def prepare_revert(history, doc, step, record, path, current=None, plan=None, approve_by=None, check_mode=False):
    """What autotune does with a record that asks for a revert: the revert plan at path (made, or the one there
    already for this record), approved by approve_by when given, and the revert kept in history (status planned).

    A revert already rolled (the history says so) is not made again: due is False. Check mode writes nothing and
    approves nothing. Returns (changed, {"path", "due", "status", "approved", "digest", "effect", "plan", "roll"
    (due, approved and not check mode: roll it now), "next" (what happens next, for a person)}) or (False, None)
    when the record asks for no revert."""
    if not record.get("revert"):
        return False, None
    rkey = revert_key(record)
    state = history.load_state(rkey) if history is not None else None
    if state and state.get("status") == "rolled":
        return False, {
            "path": state.get("plan_file"),
            "due": False,
            "status": "rolled",
            "approved": state.get("approved"),
            "digest": state.get("digest"),
            "effect": state_key(record),
            "plan": None,
            "roll": False,
            "next": "the step was rolled back already (%s, %s): not again"
            % (state.get("plan_file"), state.get("rolled")),
        }
    existing = None
    if path and os.path.exists(path):
        try:
            existing = planfile.load_plan(path)
        except planfile.PlanFileError as exc:
            raise EffectError("revert_plan_file: %s" % exc) from None
        if (existing.get("revert_of") or {}).get("effect") != state_key(record):
            raise EffectError(
                "revert_plan_file: %s holds another plan (revert_of %s, not %s); give a path of its own"
                % (path, (existing.get("revert_of") or {}).get("effect"), state_key(record))
            )
    doc_out = existing or revert_plan(doc, step, record, current=current, plan=plan)
    held = planfile.approval_state(doc_out)
    if approve_by and not check_mode and not (held["approved"] and held["digest_ok"]):
        doc_out = planfile.approve(doc_out, approve_by)
    changed = doc_out is not existing
    if changed and path and not check_mode:
        planfile.save_plan(path, doc_out)
    approved = planfile.approval_state(doc_out)
    entry = {
        "schema": REVERT_SCHEMA,
        "effect": state_key(record),
        "plan_file": path,
        "digest": approved["content_digest"],
        "approved": approved["approved"] and bool(approved["digest_ok"]),
        "approved_by": approved["by"],
        "configuration": dict(record["revert"]["configuration"]),
        "undo": dict(record["revert"]["undo"]),
        "status": "planned",
        "planned": (state or {}).get("planned") or planfile.stamp(_time()),
        "rolled": None,
    }
    if history is not None and not check_mode and state != entry:
        history.save_state(rkey, entry)
        changed = True
    if check_mode:
        after = "check mode: the revert plan %s is neither written nor approved, and not rolled" % path
    elif entry["approved"]:
        after = "the revert plan %s is approved by %s: it is rolled now" % (path, entry["approved_by"])
    else:
        after = (
            "the revert plan %s waits for a person: approve it (playbooks/approve_plan.yml), then autotune in mode"
            " approve rolls it" % path
        )
    return changed, {
        "path": path,
        "due": True,
        "status": "planned",
        "approved": entry["approved"],
        "digest": entry["digest"],
        "effect": entry["effect"],
        "plan": doc_out,
        "roll": entry["approved"] and not check_mode,
        "next": after,
    }


def mark_rolled(history, doc, step, at=None, check_mode=False):
    """Record in history that the revert of plan doc's step was rolled; False when it was recorded already.
    EffectError when no revert of that step was planned."""
    _steps(doc, step)
    key = _key(REVERT_PREFIX, (doc.get("cluster") or {}).get("name"), doc.get("created"), step)
    if not history.load_state(key):
        raise EffectError(
            "revert_rolled: no revert of step %d of the plan created %s is planned in the history (%s)"
            % (step, doc.get("created"), key)
        )
    return _rolled(history, key, at, check_mode)


def _rolled(history, key, at, check_mode):
    """Mark the revert state at key rolled; False when there is none or it is rolled already."""
    state = history.load_state(key)
    if not state or state.get("status") == "rolled":
        return False
    if not check_mode:
        history.save_state(key, dict(state, status="rolled", rolled=planfile.stamp(_time() if at is None else at)))
    return True


# ---------------------------------------------------------------------------------------------- the models
def training_rows(record, doc, step=0, current=None, hardware=None):
    """The measured points of a valid record as rows of the surrogate's dataset (``tactician.nosql.model``
    action=record): [{"key", "row"}] for the configuration before and the one after, each with the step's
    workload (the one the plan asked the model about), the whole configuration, ops_per_s per node (the cluster's
    divided by the nodes, as the dataset's rows are) and the cluster's in run. Empty unless the verdict is valid
    and the step was applied with a workload."""
    if record.get("verdict") != "valid" or not record.get("applied"):
        return []
    steps = _steps(doc, step)
    entry = steps[step] if steps else {}
    workload = entry.get("workload")
    if not workload or entry.get("tactic") or entry.get("vm_type"):
        return []
    cluster = doc.get("cluster") or {}
    nodes = cluster.get("nodes")
    if isinstance(nodes, (list, tuple)):
        nodes = len(nodes)
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        nodes = len(cluster.get("hosts") or []) or 1
    measured = record["measured"]
    key = state_key(record)
    rows = []
    for side, configuration in (
        ("before", configuration_before(doc, step, current)),
        ("after", configuration_after(doc, step, current)),
    ):
        rows.append(
            {
                "key": "%s/%s" % (key, side),
                "row": {
                    "workload": dict(workload),
                    "config": configuration,
                    "hardware": dict(hardware or {}),
                    "ops_per_s": round(measured[side] / nodes, 1),
                    "run": {
                        "design": "effect",
                        "effect": key,
                        "side": side,
                        "cluster_ops_per_s": measured[side],
                        "nodes": nodes,
                        "window_s": measured["windows"][0 if side == "before" else 1]["window_s"],
                        "cv": measured["cv_%s" % side],
                        "read_ratio": measured["read_ratio_%s" % side],
                    },
                },
            }
        )
    return rows


# ---------------------------------------------------------------------------------------------- the module's run
def record_effect(
    history,
    doc,
    step,
    before,
    after,
    *,
    applied=True,
    same_mix_tolerance=SAME_MIX_TOLERANCE,
    current=None,
    plausible_ratio=PLAUSIBLE_RATIO,
    offered=None,
    offered_tolerance=OFFERED_TOLERANCE,
    hardware=None,
    plan_file=None,
    revert_plan_file=None,
    revert_approved_by=None,
    check_mode=False,
    history_missing=False,
):
    """What the module effect does: the record, kept in history (None: not kept; history_missing: a history file
    that check mode did not create), the revert plan when the record asks for one and revert_plan_file is given,
    and the measured points for the models. The effect of an applied revert plan marks its revert rolled (a person
    approved it and autotune applied it in mode approve). Returns {"changed", "effect", "summary", "revert_plan",
    "training_rows"}."""
    record = realized(
        doc,
        before,
        after,
        step=step,
        applied=applied,
        same_mix_tolerance=same_mix_tolerance,
        current=current,
        plausible_ratio=plausible_ratio,
        offered=offered,
        offered_tolerance=offered_tolerance,
    )
    changed = bool(history_missing)
    if history is not None:
        changed = history.load_state(state_key(record)) != record if check_mode else save(history, record)
        answered = (doc.get("revert_of") or {}).get("effect")
        if applied and answered and answered.startswith(STATE_PREFIX):
            # a revert plan applied some other way (mode approve, after a person approved it): its revert is rolled
            changed = _rolled(history, REVERT_PREFIX + answered[len(STATE_PREFIX) :], None, check_mode) or changed
    revert = None
    if revert_plan_file:
        revert_changed, revert = prepare_revert(
            history,
            doc,
            step,
            record,
            revert_plan_file,
            current=current,
            plan=plan_file,
            approve_by=revert_approved_by,
            check_mode=check_mode,
        )
        changed = changed or revert_changed
    return {
        "changed": changed,
        "effect": record,
        "summary": summary(record),
        "revert_plan": revert,
        "training_rows": training_rows(record, doc, step, current, hardware),
    }
