# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Plan mode tactic (seed 000, PaSTA): the tactic a monitoring sample calls for.

The tactic advisor (models/advisor.py) decides on one monitoring sample; its state file keeps what it learned
(bootstrapped from the knowledge base when empty), and an observed outcome of the last tactic is learned first.
The mode needs no catalog, no surrogate and no roll.

plan() is what modes.MODES runs; tactic_plan() makes the plan body.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError
from ansible_collections.tactician.nosql.plugins.module_utils.models import advisor
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile


@dataclass
class TacticOptions:
    """What mode tactic needs besides the context: the monitoring sample (the advisor's features), the advisor's
    state file, the observed outcome of the tactic last applied, the saturation threshold in percent, the window
    and penalty against undoing a recent tactic, labelled runs an empty advisor learns (or the path of their file)
    and whether it learns the knowledge base first."""

    sample: dict | None = None
    state_file: str | None = None
    outcome: dict | None = None
    saturation: float = 90.0
    oscillation_window_s: float = 3600.0
    oscillation_penalty: float = 0.5
    bootstrap: list | str | None = None
    knowledge_base: bool = True

    @classmethod
    def from_params(cls, params):
        """The options from the plan module's parameters (the runs the action plugin read, else the file)."""
        return cls(
            sample=params["sample"],
            state_file=params["advisor_state"],
            outcome=params["outcome"],
            saturation=params["saturation"],
            oscillation_window_s=params["oscillation_window"],
            oscillation_penalty=params["oscillation_penalty"],
            bootstrap=params["advisor_runs"] if params["advisor_runs"] is not None else params["advisor_bootstrap"],
            knowledge_base=params["advisor_knowledge_base"],
        )


def plan(context, options):
    """The plan document of mode tactic (context: a modes.PlanContext; its check_mode keeps the state file as it
    is, its start is when the advisor decides)."""
    if not isinstance(options.sample, dict):
        raise PlanningError("sample: mode tactic needs the monitoring sample (features of the advisor)")
    runs = options.bootstrap
    if isinstance(runs, str):
        runs = advisor.check_runs(advisor.read_runs(runs), "advisor_bootstrap: %s" % runs)
    elif runs is not None:
        runs = advisor.check_runs(runs)
    body, _learned = tactic_plan(
        options.sample,
        state_file=options.state_file,
        outcome=options.outcome,
        check_mode=context.check_mode,
        now=context.start,
        saturation=options.saturation,
        oscillation_window_s=options.oscillation_window_s,
        oscillation_penalty=options.oscillation_penalty,
        bootstrap=runs,
        knowledge_base=options.knowledge_base,
        seed=context.seed,
    )
    facts = {k: v for k, v in context.cluster.items() if k in ("name", "nodes", "rf", "cl")}
    facts["cl"] = str(facts.get("cl", "ONE")).upper()
    return planfile.build(
        body, context.store, context.start, context.store_version, facts, {}, context.current, kind="tactic"
    )


def tactic_plan(
    sample,
    state_file=None,
    outcome=None,
    check_mode=False,
    now=None,
    saturation=advisor.SATURATION,
    oscillation_window_s=3600.0,
    oscillation_penalty=0.5,
    bootstrap=None,
    knowledge_base=True,
    seed=0,
):
    """(body, learned): the body of a tactic plan for one monitoring sample, and how many examples were learned
    now (bootstrap and outcome; none are written in check mode).

    An empty advisor (no state yet) learns the knowledge base (unless knowledge_base is false), then bootstrap:
    labelled runs [(features, tactic)] such as advisor.read_runs() returns, weighted as measured examples."""
    tactics = advisor.TacticAdvisor(
        state_file=state_file,
        saturation=saturation,
        oscillation_window_s=oscillation_window_s,
        oscillation_penalty=oscillation_penalty,
        seed=seed,
    )
    if check_mode:
        tactics.state_file = None
    before = tactics.learned
    sources = []
    if tactics.learned == 0:
        if knowledge_base:
            tactics.bootstrap(advisor.knowledge_base(seed=seed), source="knowledge_base")
            sources.append("knowledge_base")
        if bootstrap:
            tactics.bootstrap(bootstrap, source="benchmark")
            sources.append("benchmark runs")
        if not sources:
            raise PlanningError("advisor_bootstrap: an empty advisor needs the knowledge base or labelled runs")
    if outcome:
        if not isinstance(outcome, dict) or not {"sample", "tactic", "improved"} <= set(outcome):
            raise PlanningError("outcome: expected {sample, tactic, improved[, at]} of the tactic last applied")
        if not isinstance(outcome["improved"], bool):
            raise PlanningError("outcome.improved: %r is not a boolean" % (outcome["improved"],))
        at = outcome.get("at")
        seen = at is not None and any(abs(t - float(at)) < 1e-6 and a == outcome["tactic"] for t, a in tactics.applied)
        if not seen:  # the same outcome (same tactic and time) is learned once, however often it is given
            tactics.applied_tactic(outcome["tactic"], at=at)
            tactics.outcome(outcome["sample"], outcome["tactic"], outcome["improved"])
    decision = tactics.decide(sample, now=now)
    learned = tactics.learned - before
    steps = []
    if decision["tactic"] != "none":
        probability = decision["probabilities"].get(decision["tactic"], 0.0)
        steps.append(
            planfile.new_step(
                step=0,
                offset_s=0.0,
                configuration={},
                tactic=decision["tactic"],
                tactic_probability=float(min(1.0, max(0.0, probability))),
                triggers=list(decision["reasons"]),
                reason="%s (tree probability %.2f) because %s"
                % (decision["tactic"], probability, "; ".join(decision["reasons"])),
            )
        )
    reasons = []
    if not decision["triggered"]:
        reasons.append("no SLA breach and no saturation: no tactic is due")
    elif decision["tactic"] == "none":
        reasons.append("triggered (%s) but the advisor chooses no tactic" % "; ".join(decision["reasons"]))
    if decision["suppressed"]:
        reasons.append(decision["suppressed"])
    body = {
        "steps": steps,
        "predicted": {"ops": None, "tactic": decision["tactic"], "probabilities": decision["probabilities"]},
        "baselines": {},
        "reasons": reasons,
        "timing": {
            "decision_ms": decision["elapsed_ms"],
            "examples": tactics.learned,
            "learned_now": learned,
            "bootstrap": " + ".join(sources) if before == 0 else "state_file",
        },
        "solver": "hoeffding_adaptive_tree",
        "lookahead": {"sample": advisor.features(sample)},
    }
    return body, learned
