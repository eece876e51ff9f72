# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Plan mode static: the best configuration for one workload, and one switch to it now when it is predicted better
than the configuration in place.

The static tuner (tuner.tune: the surrogate and a genetic algorithm over the catalog's parameters, honouring their
types, ranges and the node's memory budget) searches from the configuration in place and the default; the plan
has one step at offset 0 when its optimum beats the configuration in place, none otherwise.

A switch of a knob that pays only once every SSTable is rewritten (the catalog's ``rewrite``: sstable_format,
compression.chunk_length_in_kb) is priced (rewrite.py): the step carries the rewrite's time, the ops it loses and
its break-even, and the switch is planned only when it pays back within ``horizon_s`` (how long the configuration
is kept). When it does not, or when the data a node holds is not known, the rewrite knobs keep their values and the
tuner searches again without them: the plan then switches only what pays without a rewrite, and says why.

Any other switch that restarts nodes is priced on its roll alone (the ops the nodes down do not serve) and held to
the same horizon; when the gain does not win the roll back, the knobs that need a restart keep their values and the
tuner searches again for what changes live or by ALTER TABLE.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile
from ansible_collections.tactician.nosql.plugins.module_utils.planning import rewrite as rewrites
from ansible_collections.tactician.nosql.plugins.module_utils.planning import tuner
from ansible_collections.tactician.nosql.plugins.module_utils.planning.dynamic import changes

DEFAULT_HORIZON_S = 1800.0
"""How long a static plan's configuration is assumed kept when nothing says (the plan module's horizon)."""


@dataclass
class StaticOptions:
    """What mode static needs besides the context: the workload to tune for, parameters kept out of the search
    (name to value), the generations of the search, how long the configuration is kept (a switch that rewrites the
    data must pay back within it) and how a rewrite is priced (None: not priced)."""

    workload: dict | None = None
    fixed: dict | None = None
    generations: int = 60
    horizon_s: float = DEFAULT_HORIZON_S
    rewrite: rewrites.RewriteModel | None = rewrites.RewriteModel()

    @classmethod
    def from_params(cls, params):
        """The options from the plan module's parameters."""
        return cls(
            workload=params["workload"],
            fixed=params["fixed"],
            horizon_s=float(params.get("horizon") or DEFAULT_HORIZON_S),
            rewrite=rewrites.RewriteModel.from_params(params),
        )


def _describe_gain(after, before, evaluations):
    return (
        "the static tuner predicts %s ops/s for this workload against %s with the configuration in place "
        "(%+.1f %%), after %d evaluations"
        % (
            f"{after:,.0f}",
            f"{before:,.0f}",
            100.0 * (after - before) / before if before else 0.0,
            evaluations,
        )
    )


def _roll_price(catalog, current, setting, roll, before, after, horizon_s):
    """({cost_ops, break_even_s, gain_ops} of a switch that restarts nodes, or None for a live one; a refusal text
    when the ops its roll loses are not won back within the horizon, else None)."""
    if not catalog.restarting(setting, current):
        return None, None
    roll_s = roll.duration(True)
    lost = before * rewrites.down_time(roll, True)
    gain = (after - before) * max(0.0, horizon_s - roll_s) - lost
    even = lost / (after - before)
    price = {"cost_ops": round(lost, 1), "break_even_s": round(even, 1), "gain_ops": round(gain, 1)}
    if gain > 0:
        return price, None
    return price, (
        "a roll of restarts (%s) loses about %s ops, which the predicted gain wins back only after %s; not planned: "
        "it does not pay back within the horizon of %s"
        % (rewrites.duration(roll_s), f"{lost:,.0f}", rewrites.duration(roll_s + even), rewrites.duration(horizon_s))
    )


def make_plan(
    throughput,
    workload,
    current,
    roll,
    catalog,
    *,
    default=None,
    feasible=None,
    fixed=None,
    seed=0,
    generations=60,
    horizon_s=DEFAULT_HORIZON_S,
    rewrite=None,
    rf=None,
):
    """The plan body of mode static: {"steps", "predicted", "baselines", "reasons", "timing", ...}.

    throughput: tuner.Throughput (or FunctionThroughput with a feature space); workload: the workload to tune for
    (a sample's data_bytes may ride along: the data the cluster holds); current and default: complete
    configurations; roll: cost_benefit.Roll; catalog: the store's Catalog; rewrite: a rewrite.RewriteModel prices a
    switch of the catalog's rewrite knobs (None: not priced); horizon_s: how long the configuration is kept; rf:
    the replication factor (the data a node holds when it is estimated from the workload's records)."""
    if not workload:
        raise PlanningError("workload: mode static needs the workload to tune for")
    horizon_s = float(horizon_s)
    if math.isnan(horizon_s) or horizon_s <= 0:
        raise PlanningError("horizon: %r is not allowed; give the seconds the configuration is kept (> 0)" % horizon_s)
    modelled = rewrites.modelled(workload)
    fixed = dict(fixed or {})
    default = dict(default or current)

    def search(kept):
        """The tuner's best for the workload, the parameters of kept held at their values (the rewrite knobs a
        refused switch leaves as they are) besides the fixed ones."""
        return tuner.tune(
            throughput,
            [modelled],
            feasible=feasible,
            fixed=dict(fixed, **kept) or None,
            include=[current, dict(default, **kept)],
            seed=seed,
            generations=generations,
        )

    found = search({})
    if not found["included"][0]["feasible"]:
        # Scored as infeasible, the configuration in place would make any switch look like a gain.
        raise PlanningError(
            "current: the configuration in place does not pass the feasibility rule (the catalog's constraints or "
            "the memory budget); give the settings the nodes run"
        )
    before = found["included"][0]["score"]
    evaluations = found["evaluations"]
    reasons = []
    chosen, after = found["config"], found["score"]
    setting = changes(catalog, current, chosen)
    cost = None
    refused = []
    if rewrite is not None and setting and after > before:
        knobs = rewrites.rewritten(catalog, setting)
        if knobs:
            restart = bool(catalog.restarting(setting, current))
            size, source = rewrite.data_per_node(workload, roll.nodes, rf)
            refusal = None
            if size is None:
                refusal = "switching %s rewrites every SSTable, and its price is unknown: %s" % (
                    ", ".join(sorted(knobs)),
                    source,
                )
            else:
                rate, bound = rewrite.rate(chosen, catalog)
                cost = rewrites.price(
                    size,
                    rate,
                    rewrite.loss,
                    before,
                    after,
                    roll.nodes,
                    rewrite.order,
                    roll.duration(restart),
                    rewrites.down_time(roll, restart),
                )
                text = rewrites.describe(knobs, cost, source, bound)
                if cost["pays_back_s"] is None or cost["pays_back_s"] > horizon_s:
                    refusal = text + "; not planned: it does not pay back within the horizon of %s" % rewrites.duration(
                        horizon_s
                    )
                else:
                    reasons.append(text + ", within the horizon of %s" % rewrites.duration(horizon_s))
            if refusal is not None:
                # Keep the rewrite knobs as they are and search again: what pays without a rewrite.
                reasons.append(refusal)
                refused = sorted(knobs)
                again = search({n: current[n] for n in knobs if n in throughput.space.parameters})
                evaluations += again["evaluations"]
                chosen, after, cost = again["config"], again["score"], None
                setting = changes(catalog, current, chosen)
    roll_cost = None
    if setting and after > before and cost is None:
        roll_cost, refusal = _roll_price(catalog, current, setting, roll, before, after, horizon_s)
        if refusal is None and roll_cost is not None:
            reasons.append(
                "a roll of restarts loses about %s ops, won back %s after it ends"
                % (f"{roll_cost['cost_ops']:,.0f}", rewrites.duration(roll_cost["break_even_s"]))
            )
        if refusal is not None:
            # Keep what needs a restart as it is and search again: what pays without a roll of restarts.
            reasons.append(refusal)
            knobs = catalog.restarting(throughput.space.parameters, current)
            refused = sorted(set(refused) | set(knobs))
            again = search({n: current[n] for n in refused if n in throughput.space.parameters})
            evaluations += again["evaluations"]
            chosen, after, roll_cost = again["config"], again["score"], None
            setting = changes(catalog, current, chosen)
    steps = []
    if setting and after > before:
        restart = bool(catalog.restarting(setting, current))
        reason = _describe_gain(after, before, evaluations)
        if reasons:
            reason += "; " + "; ".join(reasons)
        predicted = {
            "ops_per_s_before": round(before, 1),
            "ops_per_s_after": round(after, 1),
            "cost_ops": cost["ops_lost"] if cost else 0.0,
            "gain_ops": 0.0,
            "break_even_s": cost["break_even_s"] if cost else None,
            "kept_s": 0.0,
        }
        if cost:
            predicted["gain_ops"] = round(
                (after - before) * max(0.0, horizon_s - cost["pays_back_s"] + cost["break_even_s"]) - cost["ops_lost"],
                1,
            )
            predicted["kept_s"] = horizon_s
            predicted["rewrite"] = dict(cost, parameters=sorted(rewrites.rewritten(catalog, setting)))
        elif roll_cost:
            predicted.update(roll_cost)
            predicted["kept_s"] = horizon_s
        steps.append(
            planfile.new_step(
                step=0,
                offset_s=0.0,
                configuration=setting,
                full_configuration=chosen,
                restart=restart,
                roll_s=roll.duration(restart),
                workload=workload,
                predicted=predicted,
                reason=reason,
            )
        )
    elif refused:
        reasons.append(
            "keeping %s as it is, the configuration in place is predicted best for this workload" % ", ".join(refused)
        )
    else:
        reasons.append("the configuration in place is predicted best for this workload")
    return {
        "steps": steps,
        "predicted": {
            "ops_per_s": round(after, 1),
            "ops": round(after, 1),
            "in_place_ops_per_s": round(before, 1),
            "gain_share": round((after - before) / before, 5) if before else None,
        },
        "baselines": {"in_place": round(before, 1), "default": round(found["included"][1]["score"], 1)},
        "reasons": reasons,
        "timing": {"elapsed_s": found["elapsed_s"], "evaluations": evaluations},
        "solver": "ga",
        "lookahead": {},
    }


def plan(context, options):
    """The plan document of mode static (context: a modes.PlanContext with its surrogate and roll loaded)."""
    body = make_plan(
        context.throughput(),
        options.workload,
        context.current_configuration(),
        context.roll,
        context.catalog,
        default=context.default_configuration(),
        feasible=context.feasible(),
        fixed=options.fixed,
        seed=context.seed,
        generations=options.generations,
        horizon_s=options.horizon_s,
        rewrite=options.rewrite,
        rf=(context.cluster_facts or {}).get("rf"),
    )
    return planfile.build(
        body,
        context.store,
        context.start,
        context.store_version,
        context.cluster_facts,
        context.surrogate.facts,
        context.current_configuration(),
        kind="static",
    )
