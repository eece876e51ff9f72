# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Safe switching: a switch starts only when its gain stays positive under what the forecast has been worth.

A plan (cost_benefit.best_plan) trusts its forecast and its throughput model blindly. decide() puts a guard in
front of the plan's first switch, the only one a receding-horizon controller ever starts:

1. Trust. The forecast's error paths (actual - predicted, step by step over the lookahead, at past origins of this
   cluster's history: a backtest) are set against those of persistence ("the workload stays as it is"). The
   forecast is used only when its mean absolute error over the switch's window is below persistence's by
   ``skill_margin`` (a share); otherwise the plan is made on persistence, so a forecast no better than doing
   nothing never triggers a switch. With fewer than ``min_paths`` error paths (a new cluster, a short history) no
   error is known: every workload of the domain counts as possible and only a configuration that wins in all of
   them is switched to - or the one the last switch left, when the workload turned against the switch (now and
   over the recent past) and its worst case is no worse (undo). Only past moments like now count (analogs():
   the same read ratio, and of those the ones whose regime was as old, same_age(), when they are enough); a
   regime seen at fewer than ``min_paths`` origins is a cold start too. On a cold start (``cold_regimes``) a
   switch may also be valued held for its commitment (rule 3) on how long the history's regimes went on
   (regime_scenarios(), the history's first regime counted as long as it was seen), at the cold start's bound:
   the worst of at least ``min_independent`` regimes longer than now's, one a complete one of now's level; and the
   option of waiting (rule 2) then holds on a cold start too, over the domain, for the long run (rule 4).
2. Uncertainty (seed 001's lookahead-from-accuracy rule, made quantitative). The switch (to b, held until the
   plan's next switch or the end of the lookahead) is valued against staying in each scenario: the central path,
   and the central path plus each past error path (the error the forecast made then, applied to what it predicts
   now), every scenario paying the roll (seed 001 Eq. 9). The throughput of b is lowered by the model's own
   relative error (``model_error``: as OnlineTune's safe set, a candidate must beat what is in place by more than
   the model can tell). The decision uses the lower confidence bound of the mean gain (Student t at
   ``confidence``, one-sided): what the forecast has actually been worth, not what it promises. A candidate
   safer than the one in place (a better worst case over the read ratios) needs only its expected gain: the
   bound prices a risk the switch leaves behind. While the workload seen now still favours the configuration in
   place, that risk has not shown, and staying commits the cluster to nothing: the safer switch must then also
   gain, on average over the scenarios, against the same switch started once the workload turns
   (against_waiting(): the option of waiting).
3. Hysteresis and dwell. The lower bound must exceed ``margin`` x the ops of staying over the window
   (``back_margin`` when b is the configuration left last); no switch starts sooner than ``min_dwell_s`` after the
   previous one ended. With ``horizon`` commitment a switch is also valued held only as long as it commits the
   cluster to (its roll and the dwell after it, the way out paid where that window ends against it), and the
   better of the two bounds counts: a watching controller may leave once the dwell is over, so a phase that lasts
   longer than the commitment but not the whole lookahead no longer blocks a switch that pays inside it. That
   bound is the lower confidence bound on the past moments whose regime was as young as now's, when
   ``min_independent`` of them lie a commitment apart; whether the errors are known at all still takes
   ``min_independent`` origins a lookahead apart. Without such young moments, the commitment is also valued on
   how long every complete regime of the history went on once it had lasted as long as now's, whatever its level
   (regime_scenarios(): now's workload held for what was left of it, then the read ratio worst for the switch),
   one regime one independent scenario: how long regimes last is evidence every phase gives.
4. The long run. A configuration that does not win over the next lookahead may still win over every lookahead:
   the one the whole trace favours (static-optimized, which no forecast of one lookahead shows when the workload
   swings). The history observed so far is cut into lookahead-long blocks; the switch's steady gain in each block
   is a sample of what a lookahead to come brings. Held as long as the history is (as many blocks ahead), with
   the lower confidence bound of the mean block gain, one roll paid: when that exceeds the margin over at least
   ``min_independent`` blocks, and the switch does not lose on average over the next lookahead's scenarios (nor,
   leaving a risk that has not shown, against the option of waiting), it starts: the workload's past as its
   forecast, trusted as far as its blocks agree.

Everything is in the planner's units: ops over the window, a Timeline per scenario (cost_benefit.Timeline).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ansible_collections.tactician.nosql.plugins.module_utils.core import checks, imports, stats
from ansible_collections.tactician.nosql.plugins.module_utils.models.forecast_series import (
    AGE,
    AGE_RADIUS,
    FIELD_BOUNDS,
)
from ansible_collections.tactician.nosql.plugins.module_utils.planning import cost_benefit as planner

DOMAIN_GRID = tuple(round(0.1 * i, 1) for i in range(11))
"""Read ratios every scenario of the cold start (no error known) covers."""


HORIZONS = ("lookahead", "commitment")
"""How long a switch is valued: the whole lookahead, or what the switch commits the cluster to (its roll and the
minimum dwell after it), the way out paid where that window ends on a workload against it."""


class SafetyError(planner.PlanError):
    """Bad input to the safety rule; the message names the field and what is allowed."""


def _np():
    return imports.require("numpy", SafetyError, "the safety rule")


@dataclass(frozen=True)
class SafetyPolicy:
    """The guard's settings (module option ``safety`` of the plan module; every key optional)."""

    confidence: float = 0.9
    margin: float = 0.005
    back_margin: float = 0.02
    min_dwell_s: float = 600.0
    min_paths: int = 8
    max_paths: int = 60
    skill_margin: float = 0.05
    model_error: float = 0.0
    analog_radius: float = 0.15
    min_independent: int = 3
    horizon: str = "commitment"
    cold_regimes: bool = False

    def __post_init__(self):
        def number(name, low, high):
            value = getattr(self, name)
            checks.number("safety.%s" % name, value, SafetyError, minimum=low)
            if value > high:
                raise SafetyError("safety.%s: %r is above %g; allowed: %g to %g" % (name, value, high, low, high))

        number("confidence", 0.5, 0.999)
        number("margin", 0.0, 1.0)
        number("back_margin", 0.0, 1.0)
        number("min_dwell_s", 0.0, 7 * 86400.0)
        number("skill_margin", 0.0, 1.0)
        number("model_error", 0.0, 0.9)
        number("analog_radius", 0.0, 1.0)
        if not isinstance(self.cold_regimes, bool):
            raise SafetyError("safety.cold_regimes: %r is not true or false" % (self.cold_regimes,))
        if self.horizon not in HORIZONS:
            raise SafetyError(
                "safety.horizon: %r is not allowed; choose one of %s" % (self.horizon, ", ".join(HORIZONS))
            )
        for name in ("min_paths", "max_paths", "min_independent"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 2:
                raise SafetyError("safety.%s: %r is not a whole number >= 2" % (name, value))
        if self.max_paths < self.min_paths:
            raise SafetyError(
                "safety.max_paths: %d is below min_paths %d; allowed: >= min_paths" % (self.max_paths, self.min_paths)
            )

    @classmethod
    def from_dict(cls, data):
        """A policy from a mapping (None or {} = the defaults); unknown keys are refused by name."""
        return checks.options(cls, data, SafetyError, "safety")

    def to_dict(self):
        return asdict(self)


# ------------------------------------------------------------------------------------------------ error paths
def error_paths(actual, predictions, steps):
    """Error paths of a forecaster: for every origin o of predictions ({o: [predicted o+1 .. o+steps]} of one field)
    whose whole horizon is known, [actual[o + h] - predicted[h - 1] for h in 1..steps], newest origin last."""
    out = []
    n = len(actual)
    for origin in sorted(predictions):
        predicted = predictions[origin]
        if origin + steps >= n or len(predicted) < steps:
            continue
        out.append([float(actual[origin + h]) - float(predicted[h - 1]) for h in range(1, steps + 1)])
    return out


def persistence_paths(actual, origins, steps):
    """Error paths of persistence (the last value forecast) at origins: [actual[o + h] - actual[o]]."""
    n = len(actual)
    return [
        [float(actual[o + h]) - float(actual[o]) for h in range(1, steps + 1)]
        for o in sorted(origins)
        if 0 <= o and o + steps < n
    ]


def _field_paths(paths, field):
    """Paths as {field: [errors]} mappings, or plain lists for a single field."""
    return [p if isinstance(p, dict) else {field: p} for p in paths]


def mean_abs_error(paths, steps):
    """Mean |error| over the first steps horizons of every path and field (None without paths)."""
    total, count = 0.0, 0
    for path in paths:
        for values in path.values():
            for value in values[:steps]:
                total += abs(value)
                count += 1
    return total / count if count else None


def skill(forecast_paths, persistence_paths_, steps):
    """1 - MAE(forecast) / MAE(persistence) over the first steps horizons (None when either is unknown; 0 when
    persistence makes no error, since then nothing can beat it)."""
    f = mean_abs_error(forecast_paths, steps)
    p = mean_abs_error(persistence_paths_, steps)
    if f is None or p is None:
        return None
    if p <= 1e-12:
        return 0.0
    return 1.0 - f / p


# ------------------------------------------------------------------------------------------------ scenarios
def _bounds(field):
    low, high = FIELD_BOUNDS.get(field, (0.0, None))
    return (0.0 if low is None else low), high


def apply_errors(central, errors):
    """central ({field: [values]}) plus one error path ({field: [errors]}), clipped to each field's bounds."""
    out = {}
    for field, values in central.items():
        delta = errors.get(field)
        if delta is None:
            out[field] = list(values)
            continue
        low, high = _bounds(field)
        row = []
        for index, value in enumerate(values):
            moved = value + (delta[index] if index < len(delta) else delta[-1] if delta else 0.0)
            moved = max(low, moved)
            row.append(min(high, moved) if high is not None else moved)
        out[field] = row
    return out


def domain_scenarios(central):
    """Scenarios of a cold start: the read ratio held at each value of DOMAIN_GRID (or every share on read and
    update only), other fields as forecast."""
    steps = len(next(iter(central.values())))
    out = []
    for ratio in DOMAIN_GRID:
        scenario = {field: list(values) for field, values in central.items()}
        if "read_ratio" in central:
            scenario["read_ratio"] = [ratio] * steps
        else:
            for field in list(scenario):
                if field in ("read", "update", "insert", "scan", "rmw"):
                    scenario[field] = [0.0] * steps
            scenario["read"] = [ratio] * steps
            scenario["update"] = [round(1.0 - ratio, 6)] * steps
        out.append(scenario)
    return out


def _pieces(layout, duration, step_s, steps):
    """[(step, seconds, share of nodes on the old configuration, share on the new)] of a switch at time 0 held
    until steps * step_s."""
    horizon = steps * step_s
    segments = [tuple(part) for part in layout] + [(duration, horizon, 0.0, 1.0)]
    out = []
    for a, b, w_old, w_new in segments:
        a, b = max(0.0, a), min(horizon, b)
        while b - a > 1e-9:
            k = int(a // step_s + 1e-9)
            end = min(b, (k + 1) * step_s)
            out.append((k, end - a, w_old, w_new))
            a = end
    return out


def switch_gain(line, current, target, steps, model_error=0.0):
    """(gain ops, stay ops, steady gain share) of switching from current to target at time 0 and holding it for
    steps steps, against staying, on line (a Timeline), with the target's throughput lowered by model_error; when
    the last step favours current, the roll back to it is charged too."""
    np = _np()
    layout, duration = line.layout_of(current, target)
    steps = min(steps, line.steps)
    F = line.F
    factor = 1.0 - model_error

    def served(k, capacity):
        return min(capacity, line.demand[k]) if line.demand is not None else capacity

    switched = 0.0
    for k, seconds, w_old, w_new in _pieces(layout, duration, line.step_s, steps):
        switched += served(k, w_old * F[k, current] + w_new * F[k, target] * factor) * seconds
    stay = sum(served(k, F[k, current]) * line.step_s for k in range(steps))
    # The way back: where the window ends on a workload that favours the configuration left, going back costs a
    # roll (its ops lost against serving on with the configuration left), so the switch must pay for it too.
    last = steps - 1
    if F[last, current] > F[last, target] * factor:
        back, _duration = line.layout_of(target, current)
        for a, b, w_old, w_new in back:
            mixed = w_old * F[last, target] * factor + w_new * F[last, current]
            switched -= max(0.0, served(last, F[last, current]) - served(last, mixed)) * (b - a)
    # The steady share: every step after the roll, new against old (what an effect measurement compares).
    first = min(steps, int(math.ceil(duration / line.step_s - 1e-9)))
    olds = np.array([served(k, F[k, current]) for k in range(first, steps)])
    news = np.array([served(k, F[k, target] * factor) for k in range(first, steps)])
    share = float(news.sum() / olds.sum() - 1.0) if olds.size and olds.sum() > 0 else 0.0
    if getattr(line, "debt", None) is not None:
        # The compaction debt each side leaves over the window, and what paying it off costs after it.
        # (The window held, then back to current: the debt is paid by the steps after the window too.)
        switched -= line.debt.hold_cost(line, target, steps, then=current) - line.debt.hold_cost(line, current, steps)
    return switched - stay, stay, share


def _shifted(line, start):
    """line from step start on (a Timeline of its remaining steps, without a debt ledger)."""
    demand = None if line.demand is None else line.demand[start:]
    return planner.Timeline(
        line.F[start:], line.roll, line.step_s, demand=demand, restart=line.restart, layouts=line.layouts
    )


def against_waiting(line, current, target, steps, model_error=0.0):
    """Ops gained by switching from current to target now rather than once the workload turns: a watching
    controller that stays sees the first step favouring target one step late and starts the same switch then,
    held to the end of the window. Against staying when the workload never turns inside the window. (Without the
    line's debt: the two arms are valued alike.)"""
    factor = 1.0 - model_error
    plain = _shifted(line, 0)
    steps = min(steps, plain.steps)
    now, _stay, _share = switch_gain(plain, current, target, steps, model_error)
    turn = next((k for k in range(steps) if plain.F[k, target] * factor > plain.F[k, current]), None)
    if turn is None or turn + 1 >= steps:
        return now
    later, _stay, _share = switch_gain(_shifted(plain, turn + 1), current, target, steps - turn - 1, model_error)
    return now - later


def _t_quantile(confidence, df):
    """One-sided Student t quantile (core/stats.py)."""
    return stats.t_quantile(confidence, df)


def effective_paths(count, origins, window_steps):
    """How many independent error paths count paths are worth: paths whose origins lie closer than the window
    they are scored over share most of their errors, so only origins at least a window apart count (greedily,
    oldest first; at least 2, at most count). origins None: every path independent."""
    if origins is None:
        return count
    independent, last = 0, None
    for origin in sorted(origins):
        if last is None or origin - last >= window_steps:
            independent += 1
            last = origin
    return max(min(2.0, float(count)), min(float(count), float(independent)))


def assess(lines, current, target, steps, policy, cold=False, origins=None):
    """Gains of the switch in every scenario: {"gains", "expected", "lower", "stay", "share_low", "worst", "n"}.

    lines: a Timeline per scenario (at least steps long; only the first steps count). A cold start (no error
    paths) takes the worst scenario as the bound; otherwise the lower confidence bound of the mean over the
    scenarios, with as many degrees of freedom as the paths hold independent ones (effective_paths of their
    origins)."""
    gains, stays, shares = [], [], []
    for line in lines:
        gain, stay, share = switch_gain(line, current, target, steps, policy.model_error)
        gains.append(gain)
        stays.append(stay)
        shares.append(share)
    n = len(gains)
    mean = sum(gains) / n
    stay = sum(stays) / n
    share_mean = sum(shares) / n
    if cold or n < 3:
        lower, share_low = min(gains), min(shares)
        n_eff = n
    else:
        n_eff = effective_paths(n, origins, steps)
        t = _t_quantile(policy.confidence, max(1.0, n_eff - 1))
        sd = math.sqrt(sum((g - mean) ** 2 for g in gains) / (n - 1))
        sd_share = math.sqrt(sum((s - share_mean) ** 2 for s in shares) / (n - 1))
        lower = mean - t * sd / math.sqrt(n_eff)
        share_low = share_mean - t * sd_share / math.sqrt(n_eff)
    return {
        "gains": gains,
        "expected": mean,
        "lower": lower,
        "stay": stay,
        "share": share_mean,
        "share_low": share_low,
        "central": gains[0],
        "worst": min(gains),
        "n": n,
        "n_eff": round(n_eff, 1),
    }


# ------------------------------------------------------------------------------------------------ the decision
@dataclass
class Decision:
    """What decide() concluded: target is None when nothing starts now; reason says why, in a sentence."""

    target: int | None
    reason: str
    basis: str
    skill: float | None = None
    assessment: dict | None = None
    plan: dict | None = None

    def to_dict(self):
        out = {"switch": self.target is not None, "target": self.target, "basis": self.basis, "reason": self.reason}
        out["skill"] = None if self.skill is None else round(float(self.skill), 4)
        out["target"] = None if self.target is None else int(self.target)
        if self.assessment:
            a = self.assessment
            out.update(
                expected_gain_ops=round(float(a["expected"]), 1),
                lower_gain_ops=round(float(a["lower"]), 1),
                worst_gain_ops=round(float(a["worst"]), 1),
                stay_ops=round(float(a["stay"]), 1),
                gain_share=round(float(a["share"]), 5),
                gain_low_share=round(float(a["share_low"]), 5),
                scenarios=int(a["n"]),
                independent=float(a.get("n_eff", a["n"])),
            )
            if "window" in a:
                out["window_steps"] = int(a["window"])
        return out


def _spread(count, most):
    """Indexes of at most `most` of count items, evenly spread, the newest always kept."""
    if count <= most:
        return list(range(count))
    return sorted({int(round(i * (count - 1) / (most - 1))) for i in range(most)})


def analogs(states, now, radius):
    """Indexes of the origins that saw a workload like now's: every ratio field of the origin's last observed
    workload (states, one mapping per origin) within radius of now's. Errors depend on where the workload is (a
    read-heavy stretch can only fall), so only past moments like this one say what may come next. Without states
    or now, every origin."""
    if states is None or now is None:
        return None
    out = []
    for index, state in enumerate(states):
        common = [f for f in now if f in state and FIELD_BOUNDS.get(f) == (0.0, 1.0)]
        if common and all(abs(float(state[f]) - float(now[f])) <= radius + 1e-9 for f in common):
            out.append(index)
    return out


def same_age(chosen, states, now):
    """The indexes of chosen whose state's age (AGE) is within a factor of two of now's (counting the step
    itself): how long a regime has lasted says how long it may go on (a storm just begun against one an hour
    old). None when now or the states carry no age."""
    if now is None or states is None or AGE not in now:
        return None
    here = float(now[AGE]) + 1.0
    out = []
    for index in chosen:
        if AGE not in states[index]:
            return None
        there = float(states[index][AGE]) + 1.0
        if there <= 2.0 * here and here <= 2.0 * there:
            out.append(index)
    return out


def history_blocks(make_line, history, steps, least):
    """A Timeline per steps-long block of history (the newest blocks, oldest first), or None with fewer than
    least blocks."""
    length = min(len(values) for values in history.values()) if history else 0
    blocks = length // steps if steps else 0
    if blocks < least:
        return None
    start = length - blocks * steps
    return [
        make_line(
            {field: list(values[start + b * steps : start + (b + 1) * steps]) for field, values in history.items()}
        )
        for b in range(blocks)
    ]


def long_run(make_line, history, current, target, steps, policy, blocks=None):
    """The switch from current to target, valued on the history (the long run): {"gains" (the steady gain of each
    steps-long block, newest last), "expected" and "lower" (over as many blocks ahead as the history holds, one
    roll paid), "stay", "n"}; None with fewer than policy.min_independent blocks. blocks: the history's Timelines
    when already made (history_blocks)."""
    np = _np()
    if blocks is None:
        blocks = history_blocks(make_line, history, steps, policy.min_independent)
    if blocks is None:
        return None
    factor = 1.0 - policy.model_error
    gains, stays, rolls = [], [], []
    for line in blocks:
        F = line.F[:steps]
        olds, news = F[:, current], F[:, target] * factor
        if line.demand is not None:
            demand = np.asarray(line.demand[:steps], dtype=float)
            olds, news = np.minimum(olds, demand), np.minimum(news, demand)
        steady = float((news - olds).sum()) * line.step_s
        gain, stay, _share = switch_gain(line, current, target, steps, policy.model_error)
        gains.append(steady)
        stays.append(stay)
        rolls.append(max(0.0, steady - gain))
    n = len(blocks)
    mean = sum(gains) / n
    sd = math.sqrt(sum((g - mean) ** 2 for g in gains) / (n - 1))
    lower = mean - _t_quantile(policy.confidence, n - 1) * sd / math.sqrt(n)
    # The future valued as long as the past seen (n lookaheads), the roll (and the way back) paid once.
    roll = sum(rolls) / n
    return {"gains": gains, "expected": n * mean - roll, "lower": n * lower - roll, "stay": sum(stays), "n": n}


def decide(
    make_line,
    current,
    forecast,
    persistence,
    forecast_errors=(),
    persistence_errors=(),
    policy=None,
    since_switch_s=None,
    previous=None,
    tail_s=0.0,
    min_gain=0.0,
    origins=None,
    states=None,
    now=None,
    recent=None,
    history=None,
):
    """Whether to start a switch now, and to which candidate.

    make_line(path) -> cost_benefit.Timeline of a workload path ({field: [values per step]}); forecast and
    persistence: the two paths over the lookahead (persistence: the last observed workload held); *_errors: their
    error paths ({field: [actual - predicted per horizon]} or plain lists for read_ratio), one per origin, oldest
    first; origins: the step of each path's origin (paths closer than their window are not independent; None: all
    are); states and now: the last observed workload at each origin and now ({field: value}): only the origins
    like now count (analogs()), and with fewer than min_paths of them no error is known (a cold start);
    since_switch_s: seconds since the last switch ended (None: none known); previous: the candidate index left by
    the last switch (hysteresis, and the fallback a cold start may go back to); recent: the workload observed
    over the last steps ({field: [values]}); history: the workload observed so far ({field: [values per step]},
    oldest first), for the long run (rule 4 of the module docstring; rule 5 of docs/plan.md).

    The central path is the forecast when it beats persistence by skill_margin, else persistence. When the plan
    on a skilled forecast waits, nothing starts. Otherwise every candidate is valued in the scenarios (the plan's
    own target held until its next switch, the others over the lookahead): the plan's target when its lower bound
    exceeds the margin, else the one with the highest lower bound when that exceeds the margin. Returns a
    Decision."""
    policy = policy or SafetyPolicy()
    forecast_errors = _field_paths(forecast_errors, "read_ratio")
    persistence_errors = _field_paths(persistence_errors, "read_ratio")
    if forecast_errors and persistence_errors and len(forecast_errors) != len(persistence_errors):
        raise SafetyError(
            "forecast_errors: give one path per origin, as persistence_errors (%d against %d)"
            % (len(forecast_errors), len(persistence_errors))
        )
    steps = len(next(iter(forecast.values())))
    every = list(range(max(len(forecast_errors), len(persistence_errors))))
    raw = {"forecast": forecast_errors, "persistence": persistence_errors, "origins": origins}
    young = None
    chosen = analogs(states, now, policy.analog_radius)
    if chosen is None:
        chosen = every
    elif len(chosen) < policy.min_paths:
        # A regime seen too seldom to know what follows it: nothing is known (a cold start). The errors of other
        # regimes say nothing of it (a read-heavy burst in a write-heavy day is no calmer for the calm around it).
        pass
    else:
        # Of the moments like this one, those whose regime was as old as now's, when they are evidence enough.
        aged = same_age(chosen, states, now)
        if aged is not None and len(aged) >= policy.min_paths:
            young = [aged[i] for i in _spread(len(aged), policy.max_paths)]
        if (
            aged is not None
            and len(aged) >= policy.min_paths
            and (
                origins is None
                or effective_paths(len(aged), [origins[i] for i in aged], steps) >= policy.min_independent
            )
        ):
            chosen = aged
    chosen = [chosen[i] for i in _spread(len(chosen), policy.max_paths)]
    forecast_errors = [forecast_errors[i] for i in chosen if i < len(forecast_errors)]
    persistence_errors = [persistence_errors[i] for i in chosen if i < len(persistence_errors)]
    origins = None if origins is None else [origins[i] for i in chosen]
    if since_switch_s is not None and since_switch_s < policy.min_dwell_s:
        return Decision(
            None,
            "the last switch ended %.0f s ago, under the minimum dwell of %.0f s"
            % (since_switch_s, policy.min_dwell_s),
            "dwell",
        )
    # Paths of one episode are one piece of evidence: trust needs min_independent origins a lookahead apart.
    independent = effective_paths(len(persistence_errors), origins, steps) if origins is not None else None
    if independent is not None and independent < policy.min_independent:
        forecast_errors, persistence_errors = [], []
    known = len(forecast_errors) >= policy.min_paths and len(persistence_errors) >= policy.min_paths
    score = skill(forecast_errors, persistence_errors, steps) if known else None
    if score is not None and score > policy.skill_margin:
        basis, central, errors = "forecast", forecast, forecast_errors
    elif len(persistence_errors) >= policy.min_paths:
        basis, central, errors = "persistence", persistence, persistence_errors
    else:
        basis, central, errors = "cold start", persistence, None
    line = make_line(central)
    plan = planner.best_plan(line, current, min_gain=min_gain, tail_s=tail_s)
    if basis == "forecast" and (not plan["switches"] or plan["switches"][0][0] != 0):
        return Decision(
            None,
            "on the forecast (skill %.2f) the plan %s"
            % (score, "keeps the configuration" if not plan["switches"] else "switches later, not now"),
            basis,
            score,
            None,
            plan,
        )
    planned = plan["switches"][0][2] if plan["switches"] and plan["switches"][0][0] == 0 else None
    windows = {}
    for target in range(line.configs):
        if target == current:
            continue
        hold = line.steps
        if target == planned and len(plan["switches"]) > 1:
            # Held until the plan's next switch, and at least the dwell the next switch will have to wait.
            dwell = math.ceil((line.layout_of(current, target)[1] + policy.min_dwell_s) / line.step_s - 1e-9)
            hold = min(line.steps, max(1, plan["switches"][1][0], dwell))
        windows[target] = hold
    if basis == "forecast" and planned is not None:
        local = skill(forecast_errors, persistence_errors, windows[planned])
        if local is not None and local <= policy.skill_margin:
            basis, central, errors = "persistence", persistence, persistence_errors
    scenarios = domain_scenarios(central) if errors is None else [apply_errors(central, e) for e in errors]
    # One Timeline per scenario for every candidate (central counts as a scenario only without error paths).
    lines = [make_line(scenario) for scenario in ([central] if errors is None or not scenarios else []) + scenarios]
    central_line = make_line(central)
    # The workload seen now, held: whether the risk a safer candidate leaves has shown yet.
    observed = central_line if central is persistence else make_line(persistence)
    # Each candidate's worst case: its lowest throughput with the read ratio held anywhere in the domain (a cold
    # start's scenarios are the domain already).
    domain = (
        lines[len(lines) - len(scenarios) :] if errors is None else [make_line(s) for s in domain_scenarios(central)]
    )
    floors = [min(float(item.F[:, c].mean()) for item in domain) for c in range(line.configs)]
    best = None
    assessed = {}
    young_lines = None
    waiting = {}
    # The plan's own target first: when it holds under the uncertainty, the plan's choice stands.
    order = sorted(windows, key=lambda t: t != planned)
    for target in order:
        window = windows[target]
        margin = policy.back_margin if previous is not None and target == previous else policy.margin
        found = assess(lines, current, target, window, policy, cold=errors is None, origins=origins)
        found["needed"] = margin * max(found["stay"], 0.0)
        found["window"] = window
        found["target"] = target
        if (
            errors is not None
            and floors[target] > floors[current] * (1.0 + 1e-9)
            and found["expected"] > found["lower"]
        ):
            # A safer configuration (a better worst case than the one in place): leaving a risk needs the
            # expected gain, not its lower bound - the uncertainty that bound prices is the risk left behind.
            lower = found["expected"]
            if observed.F[0, current] >= observed.F[0, target] * (1.0 - policy.model_error):
                # While the workload seen now still favours the configuration in place, the risk has not shown,
                # and staying commits the cluster to nothing: a watching controller leaves once it shows. So the
                # switch now must also gain against that later one (the option of waiting, as seed 001's
                # break-even: a switch is worth starting early only if the risk turns faster than a reaction).
                waits = [against_waiting(item, current, target, window, policy.model_error) for item in lines]
                lower = min(lower, sum(waits) / len(waits))
                found["waiting"] = waiting[target] = sum(waits) / len(waits)
            found.update(lower=lower, safer=True)
        if errors is None and target == previous and recent is not None and found["lower"] <= found["needed"]:
            # Undo: with nothing known of what comes, the configuration the last switch left is the known fallback
            # (as OnlineTune keeps the starting configuration in its safe set). Go back to it when it wins on the
            # workload seen now and over the recent past replayed, and its worst case over the domain is no worse.
            now_gain, _stay, _share = switch_gain(central_line, current, target, window, policy.model_error)
            past = make_line({field: list(values) for field, values in recent.items()})
            past_gain, _stay, _share = switch_gain(past, current, target, past.steps, policy.model_error)
            if now_gain > found["needed"] and past_gain > 0 and floors[target] >= floors[current]:
                found.update(lower=now_gain, share_low=0.0, undo=True)
        if errors is None and policy.cold_regimes and now is not None and AGE in now and history:
            # Regimes on a cold start: nothing is known of what follows a workload of this kind, but how long the
            # history's regimes went on is known. The switch valued held for its commitment (a watching controller
            # may leave after it) on every regime that lasted longer than now's - the history's first counted as
            # long as it was seen - now's workload held for what was left of it, then the read ratio worst for the
            # switch; a cold start's bound, the worst of them, with min_independent regimes, one a complete one of
            # now's level.
            short = min(window, _commitment(line, current, target, policy))
            lasting = regime_scenarios(
                make_line, persistence, history, now[AGE], domain, current, target, policy, True, _level(now)
            )
            if lasting is not None and len(lasting) < worst_of_needed(policy.confidence):
                # The worst of n exchangeable regimes is beaten by the next one time in n + 1: a bound at the
                # policy's confidence needs that many regimes.
                lasting = None
            if lasting is not None:
                pooled = assess(lasting, current, target, short, policy, cold=True)
                pooled.update(
                    needed=margin * max(pooled["stay"], 0.0), window=short, target=target, regimes=True, cold=True
                )
                if (
                    pooled["lower"] > pooled["needed"]
                    and pooled["lower"] - pooled["needed"] > found["lower"] - found["needed"]
                ):
                    found = pooled
        if (
            errors is None
            and policy.cold_regimes
            and observed.F[0, current] >= observed.F[0, target] * (1.0 - policy.model_error)
        ):
            # The option of waiting on a cold start (rule 3): while the workload seen now favours the configuration
            # in place, leaving it must also gain, over the read ratios a cold start deems possible, against
            # leaving once the workload turns - or the long run (rule 4) leaves a phase the regimes entered.
            waits = [against_waiting(item, current, target, window, policy.model_error) for item in lines]
            waiting[target] = sum(waits) / len(waits)
        if policy.horizon == "commitment" and errors is not None:
            # The switch commits the cluster only to its roll and the dwell after it; a watching controller can
            # leave then. Valued held that long (the way out paid where it ends against the switch) at its lower
            # confidence bound - never the safer candidate's expected gain, which prices leaving a risk over the
            # whole window - or as above, whichever bound is better. Over so short a window the past moments
            # whose regime was as old as now's are evidence enough when they lie a commitment apart.
            short = _commitment(line, current, target, policy)
            if short < window:
                brief_lines, brief_origins = lines, origins
                if young is not None and young != chosen:
                    pool_origins = None if raw["origins"] is None else [raw["origins"][i] for i in young]
                    if (
                        pool_origins is None
                        or effective_paths(len(young), pool_origins, short) >= policy.min_independent
                    ):
                        if young_lines is None:
                            source = raw[basis]
                            young_lines = [
                                make_line(apply_errors(central, source[i])) for i in young if i < len(source)
                            ]
                        brief_lines, brief_origins = young_lines, pool_origins
                brief = assess(brief_lines, current, target, short, policy, origins=brief_origins)
                brief.update(needed=margin * max(brief["stay"], 0.0), window=short, target=target)
                if brief["lower"] - brief["needed"] > found["lower"] - found["needed"]:
                    found = brief
                if brief_lines is lines and now is not None and AGE in now:
                    # Too few moments of this level as young as now's: how long a regime that has lasted as long
                    # as now's went on, read from every complete regime of the history, whatever its level, and
                    # after its end the read ratio worst for the switch (rule 4 of docs/plan.md).
                    lasting = regime_scenarios(
                        make_line, persistence, history, now[AGE], domain, current, target, policy
                    )
                    if lasting is not None:
                        pooled = assess(lasting, current, target, short, policy)
                        pooled.update(
                            needed=margin * max(pooled["stay"], 0.0), window=short, target=target, regimes=True
                        )
                        if pooled["lower"] - pooled["needed"] > found["lower"] - found["needed"]:
                            found = pooled
        if target in waiting:
            found["waiting"] = waiting[target]
        assessed[target] = found
        if best is None or found["lower"] - found["needed"] > best["lower"] - best["needed"]:
            best = found
        if target == planned and found["lower"] > found["needed"]:
            break
    if best is None:
        return Decision(None, "no other candidate", basis, score, None, plan)
    bound = (
        "the workload seen now and the recent past, going back to the configuration the last switch left"
        if best.get("undo")
        else "the mean of %d scenarios, the target being safer than the configuration in place (a better worst case "
        "over every read ratio)%s"
        % (
            best["n"],
            ", against staying as well as against leaving once the workload turns" if "waiting" in best else "",
        )
        if best.get("safer")
        else "the worst of %d regimes of the history that lasted longer than now's (now's workload held for what "
        "was left of each, then the read ratio worst for the switch)" % best["n"]
        if best.get("cold")
        else "the worst of %d domain scenarios" % best["n"]
        if errors is None
        else "the %.0f %% lower bound over %d scenarios (%.1f independent)"
        % (100 * policy.confidence, best["n"], best["n_eff"])
    )
    text = "on the %s (skill %s) the best switch, to candidate %d, gains %s ops expected and %s at %s; needed %s" % (
        basis,
        "n/a" if score is None else "%.2f" % score,
        best["target"],
        f"{best['expected']:,.0f}",
        f"{best['lower']:,.0f}",
        bound,
        f"{best['needed']:,.0f}",
    )
    if best.get("window", steps) < steps:
        text += (
            " (held %d steps: its roll and the minimum dwell, after which a watching controller can leave)"
            % (best["window"])
        )
    if best["lower"] > best["needed"]:
        return Decision(best["target"], text, basis, score, best, plan)
    lasting = _long_run_choice(make_line, history, current, steps, assessed, previous, policy)
    if lasting is not None:
        found = lasting
        lasting_text = (
            "over the %d lookahead-long blocks of the history so far the switch to candidate %d gains %s ops "
            "expected and %s at the %.0f %% lower bound; needed %s; over the next lookahead it gains %s expected"
            % (
                found["n"],
                found["target"],
                f"{found['expected']:,.0f}",
                f"{found['lower']:,.0f}",
                100 * policy.confidence,
                f"{found['needed']:,.0f}",
                f"{found['near']:,.0f}",
            )
        )
        return Decision(found["target"], lasting_text, "history", score, found, plan)
    return Decision(None, text + ": keep the configuration", basis, score, best, plan)


def _read_ratios(history):
    """The read ratio of every step of history ({field: [values]}), or None when it holds no read share."""
    if not history:
        return None
    if "read_ratio" in history:
        return [float(v) for v in history["read_ratio"]]
    if "read" in history:
        return [float(v) for v in history["read"]]
    return None


def regimes(values, radius=AGE_RADIUS):
    """[(level, steps)] of every regime of values, oldest first (a regime: the steps within radius of its first,
    whose value is its level). The first regime's start and the last's end are not seen."""
    out, start = [], 0
    for index in range(1, len(values)):
        if abs(float(values[index]) - float(values[start])) > radius + 1e-9:
            out.append((float(values[start]), index - start))
            start = index
    if len(values):
        out.append((float(values[start]), len(values) - start))
    return out


def worst_of_needed(confidence):
    """How many exchangeable samples make their worst a one-sided bound at this confidence: the next sample falls
    below all n of them with probability 1 / (n + 1), so n >= confidence / (1 - confidence) (9 at 0.9)."""
    return max(1, int(math.ceil(confidence / (1.0 - confidence) - 1e-9)))


def regime_lengths(values, radius=AGE_RADIUS, first=False):
    """Steps each complete regime of values lasted (the last regime, still going on, left out; the first, whose
    start is not seen, too unless first: then it counts as lasting as long as it was seen - it lasted at least
    that long, so what it says of how long regimes last errs short)."""
    seen = regimes(values, radius)[:-1]
    return [length for _level, length in (seen if first else seen[1:])]


def _level(now):
    """Now's read ratio ({field: value} with read_ratio or a read share), or None."""
    if not now:
        return None
    for field in ("read_ratio", "read"):
        if field in now:
            return float(now[field])
    return None


def regime_scenarios(make_line, persistence, history, age, domain, current, target, policy, first=False, level=None):
    """Scenarios of how long the workload seen now goes on, from every complete regime of the history that
    lasted longer than now's has (age steps), whatever its level: now's workload held for what was left of that
    regime, then the read ratio of the domain worst for the switch from current to target. None with fewer than
    policy.min_independent such regimes. (Each regime is one independent sample.) first: the history's first
    regime counts too, as long as it was seen (regime_lengths). level: now's read ratio; then None as well unless
    one of those regimes, a complete one, was of now's level (within policy.analog_radius): a regime of this kind
    has been seen to outlast now's age at least once."""
    values = _read_ratios(history)
    if values is None:
        return None
    age = int(age)
    seen = regimes(values)[:-1]
    longer = [(there, length) for there, length in (seen if first else seen[1:]) if length > age]
    if len(longer) < policy.min_independent:
        return None
    # Of now's level: a complete regime (the first, seen only in part, is no such evidence).
    if level is not None and not any(
        length > age and abs(there - level) <= policy.analog_radius + 1e-9 for there, length in seen[1:]
    ):
        return None
    left = [length - age - 1 for _there, length in longer]
    factor = 1.0 - policy.model_error
    edges = [float(item.F[0, target]) * factor - float(item.F[0, current]) for item in domain]
    worst = domain_scenarios(persistence)[edges.index(min(edges))]
    return [
        make_line({field: list(persistence[field][:steps]) + list(worst[field][steps:]) for field in persistence})
        for steps in left
    ]


def _commitment(line, current, target, policy):
    """Steps the switch from current to target commits the cluster to: its roll, then the minimum dwell (at least
    one step, at most the line)."""
    duration = line.layout_of(current, target)[1]
    return max(1, min(line.steps, int(math.ceil((duration + policy.min_dwell_s) / line.step_s - 1e-9))))


def _long_run_choice(make_line, history, current, steps, assessed, previous, policy):
    """The candidate the long run favours (rule 4), or None: the highest lower bound over the history's blocks
    (steps long) above its margin, among the candidates that do not lose on average over the next lookahead's
    scenarios."""
    blocks = history_blocks(make_line, history, steps, policy.min_independent) if history else None
    if blocks is None:
        return None
    chosen = None
    for target, near in assessed.items():
        if near["expected"] < 0 or near.get("waiting", 0.0) < 0:
            # Losing over the next lookahead, or leaving a risk that has not shown (the option of waiting).
            continue
        found = long_run(make_line, history, current, target, steps, policy, blocks=blocks)
        margin = policy.back_margin if previous is not None and target == previous else policy.margin
        found.update(
            target=target,
            needed=margin * max(found["stay"], 0.0),
            near=near["expected"],
            share=near["share"],
            share_low=near["share_low"],
            worst=min(found["gains"]),
            n_eff=float(found["n"]),
        )
        if found["lower"] > found["needed"] and (
            chosen is None or found["lower"] - found["needed"] > chosen["lower"] - chosen["needed"]
        ):
            chosen = found
    return chosen
