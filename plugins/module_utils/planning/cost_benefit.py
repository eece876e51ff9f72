# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Dynamic reconfiguration plans (seed 001 sections 4.3-4.4): whether and when a switch pays off.

The cluster and its roll are a ``Roll``: N nodes, R of them restarted at a time (rolling.batch_rule), each batch
offline T_r seconds; a change of live parameters only takes ``live_s`` and no node goes offline. Time is cut in
steps of T_d seconds; a plan is a list of switches (step k, configuration index c) that start at the beginning of
their step. A switch rolls batch after batch: while batch i is down, the nodes already switched serve with the new
configuration, the others with the old one, each node 1/N of the cluster's throughput (seed 001 Eq. 4), so a plan's
ops over the lookahead are B - L of Eq. 7-9 computed on the timeline itself. A new switch starts only once the
previous roll is over (at least T_r * N / R apart, as the paper requires).

- ``Timeline``: f_ops as a matrix F[step, configuration] (from tuner.Throughput), optionally capped by the offered
  load per step (a cluster cannot serve more than is asked); ops of steady steps and of every possible switch.
- ``best_plan()``: the plan that maximizes the ops over the lookahead among the candidate configurations, exactly,
  by dynamic programming over (step, configuration); ``ga_plan()``: the paper's genetic search over plans (pygad,
  crossover 0.8, population 50), seeded with the no-switch and the greedy plans.
- ``simulate()``: the ops per step of any plan on any F (the forecast, or the actual workload for a benchmark).
- ``baselines()``: default, static-optimized (one configuration for the whole known future, in place from the
  start), naive (switch to each step's optimum whenever it changes, every node at once) and theoretical best (each
  step's optimum, no switch cost), on the same F.
- ``break_even()``: the gain curve of one switch against staying, and the time after which it is positive
  (seed 001 Fig. 1).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ansible_collections.tactician.nosql.plugins.module_utils.core import checks, imports
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError

DEFAULT_STEP_S = 30.0


class PlanError(PlanningError, ValueError):
    """Bad input to the planner; the message names the field and what is allowed."""


def _np():
    return imports.require("numpy", PlanError, "planning")


def _number(field, value, minimum=None, above=None):
    return checks.number(field, value, PlanError, minimum=minimum, above=above)


def _whole(field, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise PlanError("%s: %r is not a whole number >= %d" % (field, value, minimum))
    return value


@dataclass(frozen=True)
class Roll:
    """How a switch reaches the cluster: nodes, batch (R), restart_s (T_r per batch), live_s (a live change)."""

    nodes: int
    batch: int
    restart_s: float
    live_s: float = 0.0

    def __post_init__(self):
        _whole("nodes", self.nodes)
        _whole("batch", self.batch)
        if self.batch > self.nodes:
            raise PlanError(
                "batch: %d is more than the %d nodes; allowed: 1 to %d" % (self.batch, self.nodes, self.nodes)
            )
        _number("restart_s", self.restart_s, minimum=0)
        _number("live_s", self.live_s, minimum=0)

    @property
    def batches(self):
        return int(math.ceil(self.nodes / self.batch))

    def duration(self, restart=True):
        """Seconds from the start of a switch until every node runs the new configuration (T_R = N T_r / R)."""
        return self.batches * self.restart_s if restart else self.live_s

    def layout(self, restart=True):
        """[(start offset, end offset, share of nodes on the old config, share on the new one)] of a switch: the
        online shares while each batch is down; a live change keeps every node on the old one until it is done."""
        if not restart:
            return [(0.0, self.live_s, 1.0, 0.0)] if self.live_s > 0 else []
        out = []
        for index in range(self.batches):
            done = index * self.batch
            down = min(self.batch, self.nodes - done)
            old = self.nodes - done - down
            out.append((index * self.restart_s, (index + 1) * self.restart_s, old / self.nodes, done / self.nodes))
        return out

    def to_dict(self):
        return {
            "nodes": self.nodes,
            "batch": self.batch,
            "batches": self.batches,
            "restart_s": self.restart_s,
            "live_s": self.live_s,
            "roll_s": self.duration(True),
        }


class Timeline:
    """Ops of steady steps and of switches over a lookahead of F.shape[0] steps of step_s seconds.

    F: array [steps, configurations] of cluster ops/s (f_ops). demand: optional offered load per step (ops/s); the
    cluster serves min(demand, capacity). restart: optional [configurations, configurations] booleans, whether a
    switch from a to b needs restarts (default: every switch does). layouts: optional function (a, b) -> (layout,
    duration) for switches whose roll depends on the pair (complete-sets: only the sets that change go down)."""

    def __init__(self, F, roll, step_s=DEFAULT_STEP_S, demand=None, restart=None, layouts=None):
        np = _np()
        F = np.asarray(F, dtype=float)
        if F.ndim != 2 or F.shape[0] < 1 or F.shape[1] < 1:
            raise PlanError(
                "F: expected a matrix [steps, configurations] with at least one of each, got %s" % (F.shape,)
            )
        if not np.all(np.isfinite(F)) or np.any(F < 0):
            raise PlanError("F: throughputs must be finite and >= 0")
        if not isinstance(roll, Roll):
            raise PlanError("roll: expected a Roll")
        self.F = F
        self.steps, self.configs = F.shape
        self.roll = roll
        self.step_s = _number("step_s", step_s, above=0)
        self.horizon_s = self.steps * self.step_s
        if demand is not None:
            demand = np.asarray(demand, dtype=float)
            if demand.shape != (self.steps,) or not np.all(np.isfinite(demand)) or np.any(demand < 0):
                raise PlanError("demand: give one offered load >= 0 per step (%d)" % self.steps)
        self.demand = demand
        if restart is None:
            restart = np.ones((self.configs, self.configs), dtype=bool)
        restart = np.asarray(restart, dtype=bool)
        if restart.shape != (self.configs, self.configs):
            raise PlanError("restart: expected a [%d, %d] matrix of booleans" % (self.configs, self.configs))
        self.restart = restart
        self.layouts = layouts
        self._roll_cache = None
        self.debt = None
        """A debt.Ledger (set by its attach()): plans then carry the compaction debt each configuration leaves."""

    def layout_of(self, a, b):
        """(layout, duration) of a switch from configuration a to b."""
        if self.layouts is not None:
            layout, duration = self.layouts(a, b)
            return [tuple(float(x) for x in part) for part in layout], float(duration)
        restart = bool(self.restart[a, b])
        return self.roll.layout(restart), self.roll.duration(restart)

    def _groups(self):
        """{(layout, duration): mask of the (a, b) pairs that roll that way}."""
        np = _np()
        groups = {}
        for a in range(self.configs):
            for b in range(self.configs):
                if a == b:
                    continue
                layout, duration = self.layout_of(a, b)
                key = (tuple(layout), duration)
                if key not in groups:
                    groups[key] = np.zeros((self.configs, self.configs), dtype=bool)
                groups[key][a, b] = True
        return groups

    # -------------------------------------------------------------------------------------------- integrals
    def _served(self, k, capacity):
        np = _np()
        if self.demand is None:
            return capacity
        return np.minimum(capacity, self.demand[k])

    def step_ops(self):
        """Ops of each step with each configuration in place for the whole step: [steps, configurations]."""
        np = _np()
        if self.demand is None:
            return self.F * self.step_s
        return np.minimum(self.F, self.demand[:, None]) * self.step_s

    def _mixed(self, t0, t1, w_old, w_new, old, new):
        """Ops over [t0, t1) with w_old of the nodes on configuration old and w_new on new (scalars or arrays of
        configuration indexes, broadcast)."""
        total = 0.0
        t1 = min(t1, self.horizon_s)
        if t1 <= t0:
            return total
        k = int(t0 // self.step_s)
        while k < self.steps:
            start = max(t0, k * self.step_s)
            end = min(t1, (k + 1) * self.step_s)
            if end <= start:
                break
            row = self.F[k]
            capacity = w_old * row[old] + w_new * row[new]
            total = total + self._served(k, capacity) * (end - start)
            k += 1
        return total

    def _next_step(self, t):
        """First step boundary at or after t (capped at the horizon)."""
        return min(self.steps, int(math.ceil(t / self.step_s - 1e-9)))

    def switch_ops(self):
        """(ops, resume): ops[k, a, b] from the start of step k until the first step boundary after a switch from
        configuration a to b has finished (the rest of the lookahead when it finishes later), and resume[k, a, b]
        that step. The diagonal is staying one step."""
        if self._roll_cache is not None:
            return self._roll_cache
        np = _np()
        C = self.configs
        ops = np.zeros((self.steps, C, C))
        resume = np.zeros((self.steps, C, C), dtype=int)
        old = np.arange(C)[:, None]
        new = np.arange(C)[None, :]
        steady = self.step_ops()
        for (layout, duration), mask in self._groups().items():
            for k in range(self.steps):
                t0 = k * self.step_s
                total = np.zeros((C, C))
                for start, end, w_old, w_new in layout:
                    total = total + self._mixed(t0 + start, t0 + end, w_old, w_new, old, new)
                finish = t0 + duration
                back = self._next_step(finish) if finish > t0 else k + 1
                back = max(back, k + 1)
                total = total + self._mixed(finish, back * self.step_s, 0.0, 1.0, old, new)
                ops[k] = np.where(mask, total, ops[k])
                resume[k] = np.where(mask, back, resume[k])
        diagonal = np.arange(C)
        ops[:, diagonal, diagonal] = steady
        resume[:, diagonal, diagonal] = np.arange(self.steps)[:, None] + 1
        self._roll_cache = (ops, resume)
        return self._roll_cache

    # -------------------------------------------------------------------------------------------- plans
    def value(self, switches, start):
        """Total ops of a plan (switches [(step, configuration)], taken in order; a switch before the previous roll
        ended or to the configuration already in place is ignored). With a debt ledger: less what the debt costs."""
        if self.debt is not None:
            return self.debt.value(self, switches, _whole("start", start, 0))
        ops, resume = self.switch_ops()
        steady = self.step_ops()
        plan = _normalize(switches, self.steps, self.configs)
        total = 0.0
        current = _whole("start", start, 0)
        k = 0
        queue = iter(plan)
        pending = next(queue, None)
        while k < self.steps:
            while pending is not None and pending[0] < k:
                pending = next(queue, None)
            if pending is not None and pending[0] == k and pending[1] != current:
                target = pending[1]
                total += ops[k, current, target]
                k = int(resume[k, current, target])
                current = target
                pending = next(queue, None)
                continue
            total += steady[k, current]
            k += 1
        return total

    def applied(self, switches, start):
        """The switches value() actually takes, as [(step, from, to)]."""
        _ops, resume = self.switch_ops()
        out = []
        current = start
        free = 0
        for step, target in _normalize(switches, self.steps, self.configs):
            if step < free or target == current:
                continue
            out.append((step, current, target))
            free = int(resume[step, current, target])
            current = target
        return out


def _normalize(switches, steps, configs):
    out = []
    for index, item in enumerate(switches or []):
        try:
            step, target = int(item[0]), int(item[1])
        except (TypeError, ValueError, IndexError):
            raise PlanError("switches[%d]: expected (step, configuration index), got %r" % (index, item)) from None
        if not 0 <= step < steps:
            raise PlanError("switches[%d]: step %d is outside the lookahead (0 to %d)" % (index, step, steps - 1))
        if not 0 <= target < configs:
            raise PlanError(
                "switches[%d]: configuration %d is not a candidate (0 to %d)" % (index, target, configs - 1)
            )
        out.append((step, target))
    return sorted(out, key=lambda pair: pair[0])


# ------------------------------------------------------------------------------------------------ search
def best_plan(timeline, start, min_gain=0.0, tail_s=0.0):
    """The plan with the most ops over the lookahead among the candidate configurations (dynamic programming:
    V[k, c] = max(stay one step, switch to b and go on from where the roll ends)). A plan whose gain over not
    switching is below min_gain (a share, e.g. 0.02) is replaced by not switching. tail_s values what each
    configuration would serve after the lookahead, as if its last step's workload went on that long (0: nothing
    after the lookahead counts, so a switch whose payback falls beyond it is never planned).

    Returns {"switches": [(step, from, to)], "ops", "stay_ops", "gain", "solver", "elapsed_s"}."""
    started = time.monotonic()
    np = _np()
    start = _whole("start", start, 0)
    if start >= timeline.configs:
        raise PlanError("start: configuration %d is not a candidate (0 to %d)" % (start, timeline.configs - 1))
    min_gain = _number("min_gain", min_gain, minimum=0)
    tail_s = _number("tail_s", tail_s, minimum=0)
    if timeline.debt is not None:
        result = timeline.debt.best_plan(timeline, start, min_gain=min_gain, tail_s=tail_s)
        result["elapsed_s"] = round(time.monotonic() - started, 4)
        return result
    ops, resume = timeline.switch_ops()
    K, C = timeline.steps, timeline.configs
    value = np.zeros((K + 1, C))
    if tail_s > 0:
        value[K] = timeline.step_ops()[K - 1] * (tail_s / timeline.step_s)
    choice = np.zeros((K, C), dtype=int)
    for k in range(K - 1, -1, -1):
        options = ops[k] + value[resume[k], np.arange(C)[None, :]]
        choice[k] = np.argmax(options, axis=1)
        # Prefer staying on ties, so that no switch is planned for nothing.
        stay = options[np.arange(C), np.arange(C)]
        best = options[np.arange(C), choice[k]]
        choice[k] = np.where(best > stay + 1e-9 * np.maximum(1.0, np.abs(stay)), choice[k], np.arange(C))
        value[k] = options[np.arange(C), choice[k]]
    switches = []
    k, current = 0, start
    while k < K:
        target = int(choice[k, current])
        if target != current:
            switches.append((k, current, target))
            k = int(resume[k, current, target])
            current = target
        else:
            k += 1
    stay_ops = float(timeline.step_ops()[:, start].sum())
    # Ops inside the lookahead (the tail only steers the search).
    total = float(value[0, start]) if tail_s == 0 else timeline.value([(s, b) for s, _a, b in switches], start)
    result = {"switches": switches, "ops": total, "stay_ops": stay_ops, "solver": "exact"}
    # The gain the search maximized (the tail included) decides whether the plan is worth its switches.
    stay_value = stay_ops + float(value[K, start])
    objective_gain = (float(value[0, start]) - stay_value) / stay_value if stay_value > 0 else 0.0
    if switches and objective_gain < min_gain:
        result.update(switches=[], ops=stay_ops, rejected_gain=objective_gain)
    result["gain"] = result["ops"] - stay_ops
    result["elapsed_s"] = round(time.monotonic() - started, 4)
    return result


def greedy_switches(timeline, start, optimum):
    """The naive rule as a plan: switch to optimum[k] whenever it differs from what is in place and no roll runs."""
    _ops, resume = timeline.switch_ops()
    switches = []
    current, k = start, 0
    while k < timeline.steps:
        target = int(optimum[k])
        if target != current:
            switches.append((k, target))
            k = int(resume[k, current, target])
            current = target
        else:
            k += 1
    return switches


def ga_plan(timeline, start, seeds=(), seed=0, population=50, generations=200, crossover=0.8, stop_after=3):
    """The paper's search (seed 001 section 4.4): a genetic algorithm over plans, one gene per step (0 = keep the
    configuration, c + 1 = switch to candidate c), fitness = the plan's ops; population 50, crossover 0.8, stopped
    after stop_after generations without improvement. seeds: plans ([(step, configuration)]) put in the first
    population (the no-switch plan always is)."""
    started = time.monotonic()
    np = _np()
    pygad = imports.require("pygad", PlanError, "the genetic plan search")
    K, C = timeline.steps, timeline.configs
    rng = np.random.default_rng(seed)
    genes = np.zeros((population, K), dtype=int)
    switch_rate = min(0.5, 2.0 / K)
    for row in range(population):
        mask = rng.random(K) < switch_rate
        genes[row, mask] = rng.integers(1, C + 1, size=int(mask.sum()))
    genes[0] = 0
    for slot, plan in enumerate(seeds, start=1):
        if slot >= population:
            break
        genes[slot] = 0
        for step, target in _normalize(plan, K, C):
            genes[slot, step] = target + 1

    def decode(solution):
        return [(k, int(g) - 1) for k, g in enumerate(solution) if int(g) > 0]

    def fitness(_ga, solution, _index):
        return timeline.value(decode(solution), start)

    ga = pygad.GA(
        num_generations=generations,
        num_parents_mating=max(2, population // 2),
        fitness_func=fitness,
        initial_population=genes,
        gene_type=int,
        gene_space=list(range(C + 1)),
        crossover_probability=crossover,
        mutation_probability=min(0.5, 1.0 / K),
        parent_selection_type="tournament",
        keep_elitism=2,
        random_seed=seed,
        stop_criteria="saturate_%d" % stop_after,
        suppress_warnings=True,
    )
    ga.run()
    solution, best, _index = ga.best_solution(pop_fitness=ga.last_generation_fitness)
    applied = timeline.applied(decode(solution), start)
    stay_ops = float(timeline.step_ops()[:, start].sum())
    return {
        "switches": applied,
        "ops": float(best),
        "stay_ops": stay_ops,
        "gain": float(best) - stay_ops,
        "solver": "ga",
        "generations": int(ga.generations_completed),
        "elapsed_s": round(time.monotonic() - started, 4),
    }


# ------------------------------------------------------------------------------------------------ evaluation
def simulate(timeline, switches, start):
    """Ops per step of a plan ([(step, configuration)] or best_plan's [(step, from, to)]) on timeline's F.

    Returns {"ops_per_step": [...], "total", "switches": [{"step", "from", "to", "start_s", "end_s", "restart"}]}."""
    np = _np()
    pairs = [(item[0], item[-1]) for item in switches]
    applied = timeline.applied(pairs, start)
    per_step = np.zeros(timeline.steps)
    records = []
    step_s = timeline.step_s
    current = start
    segments = []  # (t0, t1, w_old, w_new, old, new)
    cursor = 0.0
    for step, old, new in applied:
        t0 = step * step_s
        if t0 > cursor:
            segments.append((cursor, t0, 1.0, 0.0, current, current))
        restart = bool(timeline.restart[old, new])
        layout, duration = timeline.layout_of(old, new)
        for begin, end, w_old, w_new in layout:
            segments.append((t0 + begin, t0 + end, w_old, w_new, old, new))
        finish = t0 + duration
        records.append(
            {
                "step": step,
                "from": old,
                "to": new,
                "start_s": t0,
                "end_s": finish,
                "restart": restart,
            }
        )
        cursor = finish
        current = new
    if cursor < timeline.horizon_s:
        segments.append((cursor, timeline.horizon_s, 1.0, 0.0, current, current))
    for t0, t1, w_old, w_new, old, new in segments:
        t1 = min(t1, timeline.horizon_s)
        k = int(t0 // step_s)
        while k < timeline.steps and t0 < t1:
            end = min(t1, (k + 1) * step_s)
            if end > t0:
                capacity = w_old * timeline.F[k, old] + w_new * timeline.F[k, new]
                per_step[k] += float(timeline._served(k, capacity)) * (end - t0)
            t0 = end
            k += 1
    return {"ops_per_step": [float(x) for x in per_step], "total": float(per_step.sum()), "switches": records}


def break_even(timeline, step, old, new, until=None, resolution_s=1.0):
    """The gain curve of switching from old to new at step (and staying on new until the step until, default the
    end of the lookahead) against staying on old: [(seconds since the switch, gain in ops)], and the first time
    after which the gain stays >= 0 (None when it never does within the window)."""
    np = _np()
    step_s = timeline.step_s
    end_step = timeline.steps if until is None else min(timeline.steps, int(until))
    t0 = step * step_s
    t_end = end_step * step_s
    layout, duration = timeline.layout_of(old, new)
    resolution_s = _number("resolution_s", resolution_s, above=0)
    times = np.arange(t0, t_end + 1e-9, resolution_s)
    if len(times) < 2:
        times = np.array([t0, t_end])
    rates = np.zeros(len(times))
    for i, t in enumerate(times[:-1]):
        k = min(timeline.steps - 1, int(t // step_s))
        offset = t - t0
        w_old, w_new = 0.0, 1.0
        if offset < duration:
            w_old, w_new = 0.0, 0.0
            for begin, end, a, b in layout:
                if begin <= offset < end:
                    w_old, w_new = a, b
                    break
        switched = float(timeline._served(k, w_old * timeline.F[k, old] + w_new * timeline.F[k, new]))
        stayed = float(timeline._served(k, timeline.F[k, old]))
        rates[i] = (switched - stayed) * (times[i + 1] - t)
    gain = np.concatenate([[0.0], np.cumsum(rates[:-1])])
    offsets = times - t0
    negative = np.nonzero(gain < -1e-9)[0]
    if gain[-1] < 0:
        even = None
    elif len(negative) == 0:
        even = 0.0
    else:
        even = float(offsets[min(negative[-1] + 1, len(offsets) - 1)])
    return {
        "curve": [(round(float(o), 3), round(float(g), 2)) for o, g in zip(offsets, gain, strict=True)],
        "break_even_s": even,
        "window_s": float(t_end - t0),
        "roll_s": duration,
        "cost_ops": round(float(-min(0.0, gain.min())), 2),
        "gain_ops": round(float(gain[-1]), 2),
    }


def baselines(timeline, default, static, optimum, naive_roll=None, naive_layouts=None):
    """Ops over the lookahead of the papers' baselines on timeline's F:

    default: configuration index kept all along; static: the static-optimized configuration index (in place from
    the start, no switch); optimum: each step's best configuration index (the static tuner's C_opt(W(k)));
    naive: switches to optimum[k] whenever it changes, every node at once (naive_roll, default all nodes with the
    timeline's T_r); theoretical best: optimum[k] at every step with no switch cost."""
    np = _np()
    steady = timeline.step_ops()
    optimum = [int(x) for x in optimum]
    if len(optimum) != timeline.steps:
        raise PlanError("optimum: give one configuration index per step (%d)" % timeline.steps)
    roll = naive_roll or Roll(
        nodes=timeline.roll.nodes,
        batch=timeline.roll.nodes,
        restart_s=timeline.roll.restart_s,
        live_s=timeline.roll.live_s,
    )
    naive_line = Timeline(timeline.F, roll, timeline.step_s, timeline.demand, timeline.restart, naive_layouts)
    naive_switches = greedy_switches(naive_line, default, optimum)
    # Each step's best candidate: the static tuner's optimum, or a candidate it predicts better still.
    ceiling = float(np.max(steady, axis=1).sum())
    return {
        "default": float(steady[:, default].sum()),
        "static_optimized": float(steady[:, static].sum()),
        "naive": naive_line.value(naive_switches, default),
        "naive_switches": len(naive_line.applied(naive_switches, default)),
        "theoretical_best": ceiling,
    }
