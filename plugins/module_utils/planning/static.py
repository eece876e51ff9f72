# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Plan mode static: the best configuration for one workload, and one switch to it now when it is predicted better
than the configuration in place.

The static tuner (tuner.tune: the surrogate and a genetic algorithm over the catalog's parameters, honouring their
types, ranges and the node's memory budget) searches from the configuration in place and the default; the plan
has one step at offset 0 when its optimum beats the configuration in place, none otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile
from ansible_collections.tactician.nosql.plugins.module_utils.planning import tuner
from ansible_collections.tactician.nosql.plugins.module_utils.planning.dynamic import changes


@dataclass
class StaticOptions:
    """What mode static needs besides the context: the workload to tune for, parameters kept out of the search
    (name to value), and the generations of the search."""

    workload: dict | None = None
    fixed: dict | None = None
    generations: int = 60

    @classmethod
    def from_params(cls, params):
        """The options from the plan module's parameters."""
        return cls(workload=params["workload"], fixed=params["fixed"])


def plan(context, options):
    """The plan document of mode static (context: a modes.PlanContext with its surrogate and roll loaded)."""
    catalog, roll = context.catalog, context.roll
    throughput = context.throughput()
    feasible = context.feasible()
    current = context.current_configuration()
    workload = options.workload
    if not workload:
        raise PlanningError("workload: mode static needs the workload to tune for")
    fixed = dict(options.fixed or {})
    found = tuner.tune(
        throughput,
        [workload],
        feasible=feasible,
        fixed=fixed or None,
        include=[current, context.default_configuration()],
        seed=context.seed,
        generations=options.generations,
    )
    before = found["included"][0]["score"]
    after = found["score"]
    setting = changes(catalog, current, found["config"])
    steps = []
    if setting and after > before:
        restart = any(catalog.apply_kind(n, current.get(n)) != "live" for n in setting)
        steps.append(
            planfile.new_step(
                step=0,
                offset_s=0.0,
                configuration=setting,
                full_configuration=found["config"],
                restart=restart,
                roll_s=roll.duration(restart),
                workload=workload,
                predicted={
                    "ops_per_s_before": round(before, 1),
                    "ops_per_s_after": round(after, 1),
                    "cost_ops": 0.0,
                    "gain_ops": 0.0,
                    "break_even_s": None,
                    "kept_s": 0.0,
                },
                reason="the static tuner predicts %s ops/s for this workload against %s with the configuration "
                "in place (%+.1f %%), after %d evaluations"
                % (
                    f"{after:,.0f}",
                    f"{before:,.0f}",
                    100.0 * (after - before) / before if before else 0.0,
                    found["evaluations"],
                ),
            )
        )
    body = {
        "steps": steps,
        "predicted": {
            "ops_per_s": round(after, 1),
            "ops": round(after, 1),
            "in_place_ops_per_s": round(before, 1),
            "gain_share": round((after - before) / before, 5) if before else None,
        },
        "baselines": {"in_place": round(before, 1), "default": round(found["included"][1]["score"], 1)},
        "reasons": [] if steps else ["the configuration in place is predicted best for this workload"],
        "timing": {"elapsed_s": found["elapsed_s"], "evaluations": found["evaluations"]},
        "solver": "ga",
        "lookahead": {},
    }
    return planfile.build(
        body,
        context.store,
        context.start,
        context.store_version,
        context.cluster_facts,
        context.surrogate.facts,
        current,
        kind="static",
    )
