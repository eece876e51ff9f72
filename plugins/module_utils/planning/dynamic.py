# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Plan mode dynamic (seed 001, IRIS): the switches that pay off over a forecast - candidates, the cost-benefit
search, baselines, reasons.

make_plan() makes the plan body (seed 001 sections 4.2-4.4):

1. the forecast becomes one workload per step (shares of each operation, else the read ratio as reads and
   updates, on a grid of ``quantum`` so that near-equal steps share one static optimum) and, when the forecast
   has it, the offered load per step;
2. the candidate configurations: the one in place, the default, the static tuner's optimum of every distinct
   workload, the optimum of each pair of consecutive phases (a configuration good for both can beat switching
   twice), and the static-optimized one of the whole lookahead. Parameters whose change rewrites the data (the
   catalog's apply kind "table", e.g. the compaction strategy, and the knobs whose catalog entry has ``rewrite``,
   e.g. sstable_format) stay as they are, as IRIS keeps the compaction method fixed; the reasons give a rewrite
   knob's price (rewrite.py) when the data a node holds is known;
3. f_ops of every (step, candidate), the roll (N, R = RF - CL, T_r), and the plan with the most predicted ops
   (planner.best_plan, or the paper's genetic search);
4. for each switch: predicted ops/s before and after, cost of the roll, break-even time and the reason; for each
   change of the optimum the plan does not follow, why; the baselines on the same forecast.

A forecast that counts no operation at any step (counts_no_operations: an idle cluster, or a server that gives no
operation counters) has no workload to plan for: the plan keeps the configuration in place and says why, rather
than planning for a mix nobody observed.

The result is the body of a plan file (plan_file.py). plan() is what modes.MODES runs: make_plan() on the
context's surrogate, roll and configuration in place, then the plan document.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError
from ansible_collections.tactician.nosql.plugins.module_utils.models import predict
from ansible_collections.tactician.nosql.plugins.module_utils.planning import cost_benefit as planner
from ansible_collections.tactician.nosql.plugins.module_utils.planning import debt as compaction
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile
from ansible_collections.tactician.nosql.plugins.module_utils.planning import rewrite as rewrites
from ansible_collections.tactician.nosql.plugins.module_utils.planning import safety as guard
from ansible_collections.tactician.nosql.plugins.module_utils.planning import tuner
from ansible_collections.tactician.nosql.plugins.module_utils.workload import schedules

DEFAULT_QUANTUM = 0.05
MAX_PAIR_PHASES = 16
"""Phase pairs are tried as compromise candidates only when the forecast has at most this many phases."""
SHARES = ("read", "update", "insert", "scan", "rmw")
"""The surrogate's operation shares. A forecast gives the server's operations (forecast_series.SHARE_FIELDS: read,
update, insert, scan, delete): a read-modify-write is already a read and an update there, and a delete is planned
as an update (the surrogate has no delete share; both are a mutation of one row)."""
FORECAST_SHARES = ("read", "update", "insert", "scan")


def _round(value, quantum):
    return round(round(float(value) / quantum) * quantum, 6)


UNBOUNDED = 1e12
"""The offered load of a schedule's unthrottled step (its rate 0: closed-loop clients take what they get)."""


def is_schedule(forecast):
    """Whether a forecast is a known schedule's (predict's method schedule)."""
    return isinstance(forecast, dict) and (
        forecast.get("method") == "schedule" or (forecast.get("describe") or {}).get("method") == "schedule"
    )


def workloads_from_forecast(forecast, base=None, quantum=DEFAULT_QUANTUM, unthrottled_zero=False):
    """(workloads, demand): one workload mapping per forecast step, and the offered load per step (None when the
    forecast has no throughput or it is all zero, i.e. unknown: the cluster is taken as saturated). With
    unthrottled_zero (a schedule's forecast, where throughput 0 is a phase without a rate), a step of throughput 0
    among throttled ones is unbounded rather than idle.

    forecast: {"fields": {field: [values]}} (predict mode forecast) or {field: [values]}. base: the workload
    keys that are not forecast (requestdistribution, records, record_bytes, threads)."""
    if not isinstance(forecast, dict):
        raise PlanningError("forecast: expected the forecast of predict (a mapping with fields)")
    fields = forecast.get("fields", forecast)
    if not isinstance(fields, dict):
        raise PlanningError("forecast.fields: expected a mapping of field to values")
    quantum = float(quantum)
    if not 0 < quantum <= 0.5:
        raise PlanningError("quantum: %r is not in (0, 0.5]" % quantum)
    has_shares = all(op in fields for op in FORECAST_SHARES)
    if not has_shares and "read_ratio" not in fields:
        raise PlanningError(
            "forecast.fields: needs read_ratio or the shares %s; has %s"
            % (", ".join(FORECAST_SHARES), ", ".join(fields))
        )
    counted = SHARES + ("delete", "read_ratio", "throughput")
    lengths = {len(values) for name, values in fields.items() if name in counted}
    if len(lengths) != 1 or 0 in lengths:
        raise PlanningError("forecast.fields: every field needs the same, non-zero number of steps")
    steps = lengths.pop()
    base = dict(base or {})
    base.pop("mix", None)
    workloads = []
    for k in range(steps):
        if has_shares:
            shares = {op: float(fields[op][k]) for op in SHARES if op in fields}
            shares["update"] += float(fields["delete"][k]) if "delete" in fields else 0.0
            mix = {op: _round(share, quantum) for op, share in shares.items()}
            mix = {op: share for op, share in mix.items() if share > 0}
            if not mix:
                mix = {"read": 1.0}
        else:
            ratio = min(1.0, max(0.0, _round(fields["read_ratio"][k], quantum)))
            mix = {op: share for op, share in (("read", ratio), ("update", round(1.0 - ratio, 6))) if share > 0}
        workloads.append(dict(base, mix=mix))
    demand = None
    if "throughput" in fields:
        values = [max(0.0, float(v)) for v in fields["throughput"]]
        if any(v > 0 for v in values):
            demand = [UNBOUNDED if unthrottled_zero and v == 0 else v for v in values]
    return workloads, demand


NO_OPERATIONS = (
    "the forecast counts no operation at any step (an idle cluster, or a server whose status gives no operation"
    " counters, as FerretDB's serverStatus has no opcounters): there is no workload to plan for; keeping the"
    " configuration in place"
)


def counts_no_operations(forecast):
    """Whether a forecast of observed samples counts no operation at any step: its throughput and every operation
    share it gives are 0 everywhere (predict's series of a cluster that was idle from its first sample: its read
    ratio is 0 too, which would read as write-only). A known schedule's forecast always has a mix, and a forecast
    with a read ratio but no shares cannot tell an idle step from a write-only one: neither counts."""
    if not isinstance(forecast, dict) or is_schedule(forecast):
        return False
    fields = forecast.get("fields", forecast)
    if not isinstance(fields, dict) or not fields.get("throughput"):
        return False
    shares = [fields[op] for op in (*SHARES, "delete") if op in fields]
    if not shares:
        return False
    try:
        return all(float(value) == 0 for values in (fields["throughput"], *shares) for value in values)
    except (TypeError, ValueError):
        return False


def _kept_for_no_operations(workloads, current_full, fixed, step_s, solver, started):
    """The plan body of a forecast that counts no operation: no switch, nothing predicted, the reason."""
    return {
        "steps": [],
        "safety": None,
        "skipped": [],
        "candidates": [{"index": 0, "label": "in place", "config": current_full}],
        "predicted": {"ops": 0.0, "in_place_ops": 0.0, "gain_ops": 0.0, "gain_share": None, "ops_per_step": []},
        "baselines": {},
        "static_optimized": current_full,
        "fixed": fixed,
        "lookahead": {"steps": len(workloads), "step_s": step_s, "seconds": len(workloads) * step_s},
        "demand": False,
        "solver": solver,
        "reasons": [NO_OPERATIONS],
        "timing": {"candidates": 1, "elapsed_s": round(time.monotonic() - started, 4)},
    }


def phases(workloads):
    """[(first step, last step + 1, workload)] of the runs of equal consecutive workloads."""
    out = []
    for k, workload in enumerate(workloads):
        key = tuner.config_key(workload)
        if out and out[-1][3] == key:
            out[-1][1] = k + 1
        else:
            out.append([k, k + 1, workload, key])
    return [(a, b, w) for a, b, w, _key in out]


def restart_matrix(catalog, configs):
    """[a, b] = whether switching from configs[a] to configs[b] restarts nodes (a changed parameter is not live)."""
    np = planner._np()
    C = len(configs)
    restart = np.zeros((C, C), dtype=bool)
    for a in range(C):
        for b in range(C):
            if a == b:
                continue
            changed = [n for n in configs[a] if not catalog.equal(n, configs[a][n], configs[b].get(n))]
            # A table option (ALTER TABLE) restarts nothing, but it is priced as a roll here: the recompaction a
            # strategy or memtable change sets off is not modelled, and a roll's price keeps the switch rare.
            restart[a, b] = any(catalog.apply_kind(n, configs[a][n]) != "live" for n in changed)
    return restart


def _describe_workload(workload):
    mix = workload.get("mix", {})
    reads = mix.get("read", 0.0) + mix.get("scan", 0.0) + mix.get("rmw", 0.0)
    total = sum(mix.values()) or 1.0
    ratio = reads / total
    kind = "read-heavy" if ratio >= 0.7 else "write-heavy" if ratio <= 0.3 else "mixed"
    return "read ratio %.2f (%s)" % (ratio, kind)


def _duration(seconds):
    seconds = int(round(seconds))
    if seconds < 120:
        return "%d s" % seconds
    minutes, rest = divmod(seconds, 60)
    return "%d min %02d s" % (minutes, rest) if rest else "%d min" % minutes


def changes(catalog, old, new):
    """{parameter: new value} of the parameters new sets differently from old."""
    return {n: v for n, v in new.items() if not catalog.equal(n, old.get(n), v)}


def make_plan(
    throughput,
    forecast,
    current,
    roll,
    catalog,
    step_s=30.0,
    workload_base=None,
    feasible=None,
    quantum=DEFAULT_QUANTUM,
    solver="exact",
    min_gain=0.0,
    seed=0,
    tune_generations=8,
    default=None,
    tail_s=0.0,
    safety=None,
    since_switch_s=None,
    debt=None,
    previous=None,
    rewrite=None,
):
    """The plan body: {"steps", "predicted", "baselines", "candidates", "skipped", "reasons", "timing", ...}.

    throughput: tuner.Throughput (its feature space's tuned parameters are planned). forecast: predict's forecast
    (or {field: values}). current: the configuration in place (missing tuned parameters take their defaults).
    roll: planner.Roll. catalog: the store's Catalog. solver: exact (dynamic programming over the candidates) or
    ga (the paper's genetic search over plans, seeded with the exact and the greedy plan). safety: a
    safety.SafetyPolicy puts the guard in front of the plan's first switch (safe_first_switch()); since_switch_s:
    seconds since the last switch ended (its dwell). debt: a debt.DebtModel prices the compaction debt a throttle
    leaves (when its parameter is tuned): the search, the guard and the predicted ops carry it. previous: the
    configuration the last switch left, a candidate of its own, which the guard knows as the way back. rewrite: a
    rewrite.RewriteModel; the tuned knobs that rewrite the data stay fixed, and a reason gives their price with it
    (None: the reason only names them)."""
    started = time.monotonic()
    if solver not in ("exact", "ga"):
        raise PlanningError("solver: %r is not allowed; choose exact or ga" % (solver,))
    # An observed sample's data size may ride along for the rewrite's price; the surrogate does not read it.
    sample_base = dict(workload_base or {})
    workload_base = rewrites.modelled(sample_base) if workload_base is not None else None
    space = throughput.space
    known = is_schedule(forecast)
    workloads, demand = workloads_from_forecast(forecast, workload_base, quantum, unthrottled_zero=known)
    try:
        current_full = space.complete(current or {}, throughput.hardware)
        default_full = space.complete(default or {}, throughput.hardware)
    except Exception as exc:
        raise PlanningError("current: %s" % exc) from None
    fixed = {n: current_full[n] for n in space.parameters if catalog.apply_kind(n) == "table" or catalog.rewrite(n)}
    default_full.update(fixed)
    if counts_no_operations(forecast):
        return _kept_for_no_operations(workloads, current_full, fixed, step_s, solver, started)
    previous_full = None
    if previous:
        try:
            previous_full = space.complete(previous, throughput.hardware)
        except Exception as exc:
            raise PlanningError("previous: %s" % exc) from None
        previous_full.update(fixed)
    timings = {}

    # 2. candidates
    t = time.monotonic()
    runs = phases(workloads)
    distinct = {}
    for a, b, workload in runs:
        key = tuner.config_key(workload)
        entry = distinct.setdefault(key, {"workload": workload, "steps": 0})
        entry["steps"] += b - a
    include = [current_full, default_full]
    candidates = [current_full, default_full]
    labels = ["in place", "default"]

    def add(config, label):
        key = tuner.config_key(config)
        for index, other in enumerate(candidates):
            if tuner.config_key(other) == key:
                return index
        candidates.append(config)
        labels.append(label)
        return len(candidates) - 1

    previous_index = add(previous_full, "left by the last switch") if previous_full is not None else None
    if previous_index is not None:
        include.append(previous_full)

    # One shared pool scored for every workload, then a short refinement per objective (tuner.tune_many): the
    # optimum of each distinct workload, of each pair of consecutive phases, and of the whole lookahead.
    keys = list(distinct)
    groups = [([distinct[k]["workload"]], None) for k in keys]
    labels_of = ["optimum for %s" % _describe_workload(distinct[k]["workload"]) for k in keys]
    if 2 <= len(runs) <= MAX_PAIR_PHASES:
        seen = set()
        for (a1, b1, w1), (a2, b2, w2) in zip(runs, runs[1:], strict=False):
            pair = (tuner.config_key(w1), tuner.config_key(w2))
            if pair in seen or pair[0] == pair[1]:
                continue
            seen.add(pair)
            groups.append(([w1, w2], [b1 - a1, b2 - a2]))
            labels_of.append("compromise for %s then %s" % (_describe_workload(w1), _describe_workload(w2)))
    groups.append(([distinct[k]["workload"] for k in keys], [distinct[k]["steps"] for k in keys]))
    labels_of.append("static-optimized for the whole lookahead")
    found = tuner.tune_many(
        throughput,
        groups,
        feasible=feasible,
        fixed=fixed,
        include=include,
        seed=seed,
        refine_generations=tune_generations,
        reference=current_full,
    )
    searches = len(groups)
    indexes = [add(item["config"], label) for item, label in zip(found, labels_of, strict=True)]
    optimum_of = {k: indexes[i] for i, k in enumerate(keys)}
    static_index = indexes[-1]
    timings["candidates_s"] = round(time.monotonic() - t, 4)

    # 3. f_ops and the search
    t = time.monotonic()
    F = throughput.matrix(workloads, candidates)
    restart = restart_matrix(catalog, candidates)
    line = planner.Timeline(F, roll, step_s=step_s, demand=demand, restart=restart)
    if debt is not None and debt.parameter not in space.parameters:
        debt = None
    if debt is not None:
        plain = planner.best_plan(line, 0, min_gain=min_gain, tail_s=tail_s)
        compaction.Ledger(debt, candidates, workloads).attach(line)
        # Static-optimized with the debt priced: the candidate that serves the most held for the whole lookahead
        # (the surrogate's static optimum may be a throttle whose debt the reads pay).
        held = [line.debt.value(line, [], c) for c in range(len(candidates))]
        static_index = max(range(len(candidates)), key=lambda c: (held[c], c == static_index))
    exact = planner.best_plan(line, 0, min_gain=min_gain, tail_s=tail_s)
    result = exact
    optimum_steps = [optimum_of[tuner.config_key(w)] for w in workloads]
    if solver == "ga":
        result = planner.ga_plan(
            line,
            0,
            seeds=[[(s, b) for s, _a, b in exact["switches"]], planner.greedy_switches(line, 0, optimum_steps)],
            seed=seed,
        )
    timings["search_s"] = round(time.monotonic() - t, 4)
    guarded = None
    if safety is not None:
        t = time.monotonic()
        guarded = safe_first_switch(
            throughput,
            forecast,
            workload_base,
            quantum,
            candidates,
            roll,
            step_s,
            restart,
            safety,
            since_switch_s,
            tail_s,
            min_gain,
            debt,
            previous=None if previous_index == 0 else previous_index,
        )
        timings["safety_s"] = round(time.monotonic() - t, 4)
        first = result["switches"][0] if result["switches"] and result["switches"][0][0] == 0 else None
        target = guarded["target"]
        if target is None and first is not None or target is not None and (first is None or first[2] != target):
            # The guard decides what starts now; the plan is what follows from that.
            switches = [(0, target)] if target is not None else []
            result = {
                "switches": line.applied(switches, 0),
                "ops": float(line.value(switches, 0)),
                "stay_ops": result["stay_ops"],
                "solver": result["solver"] + "+safety",
            }
            if debt is not None:
                result["debt"] = line.debt.value(line, switches, 0, detail=True)
    base = planner.baselines(line, 1, static_index, optimum_steps)
    base["in_place"] = result["stay_ops"]
    sim = planner.simulate(line, result["switches"], 0)

    # 4. steps, reasons, skipped changes
    steps = []
    switch_steps = [s for s, _a, _b in result["switches"]]
    in_place = [0] * line.steps
    current_index = 0
    cursor = 0
    for s, _a, b in result["switches"]:
        for k in range(cursor, s):
            in_place[k] = current_index
        current_index, cursor = b, s
    for k in range(cursor, line.steps):
        in_place[k] = current_index
    for number, (s, a, b) in enumerate(result["switches"]):
        until = switch_steps[number + 1] if number + 1 < len(switch_steps) else line.steps
        even = planner.break_even(line, s, a, b, until=until, resolution_s=max(1.0, step_s / 30.0))
        before = float(F[s, a])
        after = float(F[s, b])
        kept_s = (until - s) * step_s
        batches = roll.batches if restart[a, b] else 0
        reason = (
            "from +%s the workload is %s; %s is predicted at %s ops/s against %s with the configuration in place "
            "(%+.1f %%); the switch (%s) costs %s ops and pays off after %s; it is kept %s"
            % (
                _duration(s * step_s),
                _describe_workload(workloads[s]),
                labels[b],
                f"{after:,.0f}",
                f"{before:,.0f}",
                100.0 * (after - before) / before if before > 0 else float("inf"),
                "%d batch%s of %s" % (batches, "" if batches == 1 else "es", _duration(roll.restart_s))
                if batches
                else "live, no restart",
                "{:,.0f}".format(even["cost_ops"]),
                _duration(even["break_even_s"]) if even["break_even_s"] is not None else "the window",
                _duration(kept_s),
            )
        )
        steps.append(
            planfile.new_step(
                step=s,
                offset_s=s * step_s,
                from_candidate=a,
                candidate=b,
                configuration=changes(catalog, candidates[a], candidates[b]),
                full_configuration=candidates[b],
                restart=bool(restart[a, b]),
                roll_s=line.layout_of(a, b)[1],
                workload=workloads[s],
                predicted={
                    "ops_per_s_before": round(before, 1),
                    "ops_per_s_after": round(after, 1),
                    **(
                        {
                            # The effect is measured right after the roll: it is held against no more than the
                            # gain predicted then (a switch whose gain comes in a later phase, or in a debt paid
                            # off, shows none in a quiet phase right after it).
                            "gain_low_share": min(
                                guarded["gain_low_share"], (after - before) / before if before > 0 else 0.0
                            ),
                            "gain_share": guarded["gain_share"],
                        }
                        if guarded and number == 0 and guarded.get("gain_low_share") is not None
                        else {}
                    ),
                    "cost_ops": even["cost_ops"],
                    "gain_ops": even["gain_ops"],
                    "break_even_s": even["break_even_s"],
                    "kept_s": kept_s,
                },
                gain_curve=even["curve"][:: max(1, len(even["curve"]) // 60)],
                reason=reason,
            )
        )
    skipped = []
    for k in range(1, line.steps):
        if optimum_steps[k] == optimum_steps[k - 1] or k in switch_steps:
            continue
        target, held = optimum_steps[k], in_place[k]
        if target == held:
            continue
        end = k + 1
        while end < line.steps and optimum_steps[end] == target:
            end += 1
        busy = any(s < k < s + math.ceil(line.layout_of(a, b)[1] / step_s) for s, a, b in result["switches"])
        if busy:
            why = "a roll is still running"
        else:
            even = planner.break_even(line, k, held, target, until=end, resolution_s=max(1.0, step_s / 30.0))
            if even["break_even_s"] is None:
                why = "the phase lasts %s, shorter than the switch needs to pay off (it would lose %s ops)" % (
                    _duration((end - k) * step_s),
                    "{:,.0f}".format(max(0.0, -even["gain_ops"])),
                )
            else:
                why = "the plan does better over the whole lookahead by keeping %s" % labels[held]
        skipped.append({"step": k, "offset_s": k * step_s, "optimum": target, "reason": why})
    total = result["ops"]
    reasons = []
    if not steps:
        reasons.append(
            "no switch pays off over the %s lookahead: keeping the configuration in place is predicted best"
            % _duration(line.horizon_s)
            + (
                " (the best plan gained only %.2f %%, below min_gain)" % (100.0 * exact["rejected_gain"])
                if "rejected_gain" in exact
                else ""
            )
        )
    for label, value in (("default", base["default"]), ("static-optimized", base["static_optimized"])):
        if value > 0:
            reasons.append("predicted %+.1f %% ops over %s" % (100.0 * (total - value) / value, label))
    if base["theoretical_best"] > 0:
        reasons.append(
            "predicted %.1f %% of the theoretical best (no switch cost)" % (100.0 * total / base["theoretical_best"])
        )
    if debt is not None:
        reasons.append(_debt_reason(debt, line, result, plain))
    left_out = rewrites.rewritten(catalog, [n for n in fixed if n in space.parameters])
    if left_out:
        reasons.append(_rewrite_reason(left_out, rewrite, sample_base, roll, float(F[0, 0]), current_full, catalog))
    if guarded is not None:
        reasons.insert(0, "safety: " + guarded["reason"])
    return {
        "steps": steps,
        "safety": guarded,
        "skipped": skipped,
        "candidates": [{"index": i, "label": labels[i], "config": c} for i, c in enumerate(candidates)],
        "predicted": {
            "ops": round(total, 1),
            "in_place_ops": round(result["stay_ops"], 1),
            "gain_ops": round(total - result["stay_ops"], 1),
            "gain_share": round((total - result["stay_ops"]) / result["stay_ops"], 5) if result["stay_ops"] else None,
            "ops_per_step": [round(x, 1) for x in sim["ops_per_step"]],
            **({"debt": _debt_summary(line, result)} if debt is not None else {}),
        },
        **({"debt_model": debt.to_dict()} if debt is not None else {}),
        "baselines": {name: round(value, 1) if isinstance(value, float) else value for name, value in base.items()},
        "static_optimized": candidates[static_index],
        "fixed": fixed,
        "lookahead": {"steps": line.steps, "step_s": step_s, "seconds": line.horizon_s},
        "demand": demand is not None,
        "solver": result["solver"],
        "reasons": reasons,
        "timing": dict(
            timings,
            searches=searches,
            candidates=len(candidates),
            elapsed_s=round(time.monotonic() - started, 4),
        ),
    }


def _rewrite_reason(knobs, model, workload_base, roll, ops_per_s, current, catalog):
    """Why the rewrite knobs were left out of the search, with their price when the data a node holds is known:
    the time a rewrite takes and the ops it loses at the throughput in place (the gain it would buy is not
    searched, so no break-even)."""
    text = "left out of the search, as they are: %s (a switch rewrites every SSTable" % ", ".join(sorted(knobs))
    if model is None:
        return text + "; not priced)"
    size, source = model.data_per_node(workload_base, roll.nodes)
    if size is None:
        return text + "; its price needs the data a node holds: rewrite.data_bytes)"
    rate, bound = model.rate(current, catalog)
    restart = bool(catalog.restarting(knobs, current))
    cost = rewrites.price(
        size,
        rate,
        model.loss,
        ops_per_s,
        ops_per_s,
        roll.nodes,
        model.order,
        roll.duration(restart),
        rewrites.down_time(roll, restart),
    )
    return text + ": %s a node at %s, %s in all, %s ops lost at the throughput in place%s; %.1f GB a node from %s)" % (
        rewrites.duration(cost["seconds_per_node"]),
        bound,
        rewrites.duration(cost["seconds"]),
        f"{cost['ops_lost']:,.0f}",
        " (%s of them while the nodes restart)" % f"{cost['roll_ops_lost']:,.0f}" if cost["roll_ops_lost"] else "",
        size / 1e9,
        source,
    )


def _debt_summary(line, result):
    """What the plan's compaction debt comes to: per node at the end, and the ops it costs (penalties while it is
    outstanding, and what paying off the rest will cost after the lookahead), the plan's and staying's."""
    pairs = [(s, b) for s, _a, b in result["switches"]]
    planned = line.debt.value(line, pairs, 0, detail=True)
    stay = line.debt.value(line, [], 0, detail=True)
    return {
        "end_mib": round(planned["end_bytes"] / compaction.MIB, 1),
        "cost_ops": round(planned["penalty_ops"] + planned["liability_ops"], 1),
        "in_place_end_mib": round(stay["end_bytes"] / compaction.MIB, 1),
        "in_place_cost_ops": round(stay["penalty_ops"] + stay["liability_ops"], 1),
    }


def _debt_reason(model, line, result, plain):
    """One sentence on how the debt changed the plan (plain: the plan the search finds without it)."""
    summary = _debt_summary(line, result)
    text = "compaction debt priced (%s throttles it; %.0f MiB/s a node unthrottled): the plan leaves %s MiB a node" % (
        model.parameter,
        model.capacity_mib_s,
        f"{summary['end_mib']:,.0f}",
    )
    text += " and costs %s ops to pay it" % f"{summary['cost_ops']:,.0f}"
    plain_pairs = [(s, b) for s, _a, b in plain["switches"]]
    if plain_pairs != [(s, b) for s, _a, b in result["switches"]] and plain_pairs:
        lost = line.debt.value(line, [], 0) - line.debt.value(line, plain_pairs, 0)
        if lost > 0:
            text += "; without the debt the plan would switch %s, which loses %s ops against keeping the " % (
                ", ".join("at +%s to candidate %d" % (_duration(s * line.step_s), b) for s, b in plain_pairs),
                f"{lost:,.0f}",
            )
            text += "configuration once its debt is paid"
        else:
            text += "; without the debt the plan would differ"
    return text


def safe_first_switch(
    throughput,
    forecast,
    workload_base,
    quantum,
    candidates,
    roll,
    step_s,
    restart,
    policy,
    since_switch_s=None,
    tail_s=0.0,
    min_gain=0.0,
    debt=None,
    previous=None,
):
    """The guard's decision (planning/safety.py) on this forecast: {"target" (candidate index or None), "reason",
    "basis", "skill", gains...}. The forecast's "errors" (predict's error paths) say what it has been worth; a
    known schedule is a perfect forecast; without either nothing is known of its errors (a cold start). previous:
    the index of the candidate the last switch left (hysteresis; the undo of a cold start), with the history's
    last lookahead as the recent past."""
    fields = forecast.get("fields", forecast)
    if "read_ratio" not in fields:
        raise PlanningError("forecast.fields.read_ratio: the safety rule plans on the read ratio; forecast it too")
    steps = len(fields["read_ratio"])
    rows = {}
    known = is_schedule(forecast)

    def make_line(path):
        ratios = list(path["read_ratio"])
        part = {"read_ratio": ratios}
        if "throughput" in fields:
            part["throughput"] = list(fields["throughput"][: len(ratios)])
        workloads, demand = workloads_from_forecast({"fields": part}, workload_base, quantum, unthrottled_zero=known)
        missing = [w for w in workloads if tuner.config_key(w) not in rows]
        if missing:
            unique = {tuner.config_key(w): w for w in missing}
            matrix = throughput.matrix(list(unique.values()), candidates)
            for key, row in zip(unique, matrix, strict=True):
                rows[key] = row
        F = planner._np().asarray([rows[tuner.config_key(w)] for w in workloads])
        line = planner.Timeline(F, roll, step_s=step_s, demand=demand, restart=restart)
        if debt is not None:
            compaction.Ledger(debt, candidates, workloads).attach(line)
        return line

    errors = forecast.get("errors") or {}
    now = errors.get("now") or {"read_ratio": fields["read_ratio"][0]}
    central = {"read_ratio": list(fields["read_ratio"])}
    persistence = {"read_ratio": [float(now["read_ratio"])] * steps}
    if known:
        # A known schedule: no error at all, against persistence's full range; and no dwell: the switch back it
        # plans (the one the guard valued the first switch with) is no back-and-forth of a noisy forecast.
        policy = dataclasses.replace(policy, min_dwell_s=0.0)
        since_switch_s = None
        forecast_errors = [{"read_ratio": [0.0] * steps}] * policy.min_paths
        persistence_errors = [{"read_ratio": [1.0] * steps}] * policy.min_paths
        errors = {}
    else:

        def cut(paths):
            return [{"read_ratio": list(p["read_ratio"][:steps])} for p in paths if "read_ratio" in p]

        forecast_errors = cut(errors.get("forecast") or [])
        persistence_errors = cut(errors.get("persistence") or [])
    history = None if known else _history(errors.get("history"))
    decision = guard.decide(
        make_line,
        0,
        central,
        persistence,
        forecast_errors,
        persistence_errors,
        policy,
        since_switch_s=since_switch_s,
        tail_s=tail_s,
        min_gain=min_gain,
        origins=errors.get("origins"),
        states=errors.get("states"),
        now=None if known else now,
        history=history,
        previous=previous,
        recent=_recent(history, steps) if previous is not None else None,
    )
    out = decision.to_dict()
    out["policy"] = policy.to_dict()
    if known:
        out["basis"] = "schedule" if decision.basis == "forecast" else decision.basis
    return out


def _history(history):
    """The read ratios observed so far (the forecast's errors.history) as the safety rule takes them, or None."""
    values = (history or {}).get("read_ratio") if isinstance(history, dict) else None
    if not isinstance(values, list) or not values:
        return None
    return {"read_ratio": [float(v) for v in values]}


def _recent(history, steps):
    """The last steps values of the history ({field: [values]}), or None without one."""
    if not history:
        return None
    return {field: list(values[-steps:]) for field, values in history.items() if values} or None


def model_error_of(metrics, ceiling=0.5):
    """The relative error of a surrogate from its held-out metrics (mape, in %), at most ceiling; None when the
    model file records none (models fitted before mape was kept)."""
    mape = (metrics or {}).get("mape")
    if not isinstance(mape, int | float) or isinstance(mape, bool) or not math.isfinite(mape) or mape < 0:
        return None
    return min(float(ceiling), float(mape) / 100.0)


# ------------------------------------------------------------------------------------------------ the mode
@dataclass
class DynamicOptions:
    """What mode dynamic needs besides the context: the forecast (predict mode forecast's result or its forecast
    key), the workload keys it does not give, the share grid, the solver (exact or ga), the least gain a plan with
    switches needs, the seconds after the lookahead its last workload is assumed to go on, and the refinement
    generations of each candidate's search."""

    forecast: dict | None = None
    workload_base: dict | None = None
    quantum: float = DEFAULT_QUANTUM
    solver: str = "exact"
    min_gain: float = 0.0
    tail_s: float = 0.0
    tune_generations: int = 8
    safety: guard.SafetyPolicy | None = None
    since_switch_s: float | None = None
    previous: dict | None = None
    model_error_given: bool = False
    debt: compaction.DebtModel | None = None
    rewrite: rewrites.RewriteModel | None = None

    @classmethod
    def from_params(cls, params):
        """The options from the plan module's parameters: the forecast, or the steps of schedule_file as a perfect
        forecast from schedule_position over horizon seconds."""
        forecast = params["forecast"]
        if params["schedule_file"]:
            schedule = schedules.load_schedule(params["schedule_file"])
            forecast = predict.forecast_workload(
                schedule=schedule,
                schedule_position=params["schedule_position"],
                method="schedule",
                step_s=params["step"],
                horizon_s=params["horizon"],
            )
        elif not forecast:
            raise PlanningError("forecast: mode dynamic needs forecast (from predict mode forecast) or schedule_file")
        settings = dict(params.get("safety") or {})
        enabled = settings.pop("enabled", True)
        if not isinstance(enabled, bool):
            raise PlanningError("safety.enabled: %r is not allowed; choose true or false" % (enabled,))
        owed = dict(params.get("debt") or {})
        priced = owed.pop("enabled", True)
        if not isinstance(priced, bool):
            raise PlanningError("debt.enabled: %r is not allowed; choose true or false" % (priced,))
        return cls(
            debt=compaction.DebtModel.from_dict(owed) if priced else None,
            rewrite=rewrites.RewriteModel.from_params(params),
            forecast=forecast,
            workload_base=params["workload_base"],
            quantum=params["quantum"],
            solver=params["solver"],
            min_gain=params["min_gain"],
            tail_s=params["tail"],
            safety=guard.SafetyPolicy.from_dict(settings) if enabled else None,
            since_switch_s=params.get("since_switch"),
            previous=params.get("previous") or None,
            model_error_given="model_error" in settings,
        )


def plan(context, options):
    """The plan document of mode dynamic (context: a modes.PlanContext with its surrogate and roll loaded)."""
    throughput = context.throughput()
    feasible = context.feasible()
    current = context.current_configuration()
    forecast = options.forecast
    policy = options.safety
    if policy is not None and not options.model_error_given:
        # The surrogate's own held-out error: a candidate must beat what is in place by more than the model can tell.
        error = model_error_of((context.surrogate.facts or {}).get("metrics"))
        if error is not None:
            policy = dataclasses.replace(policy, model_error=error)
    if not forecast:
        raise PlanningError("forecast: mode dynamic needs a forecast (predict mode forecast) or a schedule_file")
    body = make_plan(
        throughput,
        forecast.get("forecast", forecast) if isinstance(forecast, dict) else forecast,
        current,
        context.roll,
        context.catalog,
        step_s=context.step_s,
        workload_base=options.workload_base,
        feasible=feasible,
        quantum=options.quantum,
        solver=options.solver,
        min_gain=options.min_gain,
        seed=context.seed,
        tune_generations=options.tune_generations,
        default=context.default_configuration(),
        tail_s=options.tail_s,
        safety=policy,
        since_switch_s=options.since_switch_s,
        debt=options.debt,
        previous=options.previous,
        rewrite=options.rewrite,
    )
    return planfile.build(
        body,
        context.store,
        context.start,
        context.store_version,
        context.cluster_facts,
        context.surrogate.facts,
        current,
        kind="dynamic",
    )
