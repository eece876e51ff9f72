# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Compaction debt: the backlog a configuration leaves behind, and the reads that pay for it.

A write leaves bytes a node has to compact later; a node compacts at most its compaction throughput (a throttle in
MiB/s; 0 or none: as fast as the node can, ``capacity_mib_s``). Where writes outpace compaction, pending bytes grow
(the debt); where compaction outpaces them, the debt shrinks. While a debt is outstanding, reads meet more SSTables
and the catching-up compaction takes CPU and disk from the clients, so a step serves only (1 - penalty) of its
throughput:

    penalty = min(max_penalty, penalty_per_gib * debt in GiB * read share of the step)

A write-only phase pays nothing while it accrues (the surrogate's measurements of a throttled upload already hold
its gain); the reads after it pay, and so does every operation of a step in which the debt is paid off (the
catching-up compaction takes CPU and disk from writes too: the share is 1 then). A debt still outstanding at the end
of the lookahead is a liability, not a free gain: it is charged as what paying it off at capacity would cost under
the last step's throughput. So throttling compaction in an upload is priced together with the read phase that
follows it.

The defaults were read off the lab (3 nodes on 2 CPUs, 1 KiB records, RF 3): a 330 s upload at ~3,600 inserts/s
throttled to 2 MiB/s left ~4 GiB per node, and the read phase after it served 43 % less while it was paid off at
about 16 MiB/s. Set them for your nodes (``capacity_mib_s`` from the compaction rate nodetool compactionstats shows
when compaction runs unthrottled).

``Ledger`` is what a cost_benefit.Timeline carries (``timeline.debt``) to make its plans debt-aware: best_plan()
becomes a dynamic program over (step, configuration, debt level), value() a simulation that carries the debt.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ansible_collections.tactician.nosql.plugins.module_utils.core import checks, imports
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError

GIB = float(1 << 30)
MIB = float(1 << 20)
READS = ("read", "scan", "rmw")
WRITES = ("update", "insert", "rmw")
AVERSION = 1e-4
"""Share of a step's ops charged per GiB a node owes, on top of the penalty: a debt is a risk (the quiet phase
that was to pay it may not come), so of two plans that serve the same the one that pays earlier wins."""
LEVELS = 48
"""Debt levels of the dynamic program (0 and a geometric grid up to the largest debt the lookahead can build)."""


class DebtError(PlanningError, ValueError):
    """Bad debt settings; the message names the field and what is allowed."""


def _np():
    return imports.require("numpy", DebtError, "planning")


@dataclass(frozen=True)
class DebtModel:
    """How writes turn into compaction debt and what the debt costs (see the module's docstring).

    parameter: the tuned parameter that throttles compaction (MiB/s per node, 0 = unthrottled); bytes_per_write:
    bytes a node has to compact per client write (record size x replicas per node x write amplification);
    capacity_mib_s: what a node compacts per second unthrottled; pay_penalty: the share of throughput lost while a
    debt is being paid off (the catching-up compaction's CPU and disk); penalty_per_gib: the share lost per GiB of
    debt per node and read share (reads meet more SSTables); max_penalty: the cap of both; pending_bytes: the debt
    per node now (observe's pending_compaction_bytes per node: a lower bound, it counts running compactions)."""

    parameter: str = "compaction_throughput"
    bytes_per_write: float = 4096.0
    capacity_mib_s: float = 16.0
    pay_penalty: float = 0.45
    penalty_per_gib: float = 0.05
    max_penalty: float = 0.6
    pending_bytes: float = 0.0

    def __post_init__(self):
        if not isinstance(self.parameter, str) or not self.parameter:
            raise DebtError("debt.parameter: give the name of the parameter that throttles compaction")
        checks.number("debt.bytes_per_write", self.bytes_per_write, DebtError, minimum=0)
        checks.number("debt.capacity_mib_s", self.capacity_mib_s, DebtError, above=0)
        checks.number("debt.pay_penalty", self.pay_penalty, DebtError, minimum=0)
        checks.number("debt.penalty_per_gib", self.penalty_per_gib, DebtError, minimum=0)
        checks.number("debt.max_penalty", self.max_penalty, DebtError, minimum=0)
        if self.max_penalty >= 1:
            raise DebtError("debt.max_penalty: %r is not allowed; give a share in [0, 1)" % (self.max_penalty,))
        checks.number("debt.pending_bytes", self.pending_bytes, DebtError, minimum=0)

    @classmethod
    def from_dict(cls, data):
        """A model from a mapping (None or {} = the defaults); unknown keys are refused by name."""
        return checks.options(cls, data, DebtError, "debt")

    def to_dict(self):
        return asdict(self)

    @property
    def capacity(self):
        """Bytes per second a node compacts unthrottled."""
        return self.capacity_mib_s * MIB

    def rate(self, config):
        """Bytes per second a node compacts with config (its throttle, at most the capacity)."""
        value = (config or {}).get(self.parameter)
        if value is None or isinstance(value, bool):
            return self.capacity
        try:
            value = float(value)
        except (TypeError, ValueError):
            return self.capacity
        if value <= 0 or not math.isfinite(value):
            return self.capacity
        return min(self.capacity, value * MIB)

    def penalty(self, debt_bytes, read_share, paying=0.0):
        """Share of a step's throughput lost with debt_bytes outstanding per node (array-friendly): the reads'
        amplification, plus pay_penalty for the share of the step spent paying it off."""
        np = _np()
        amplification = self.penalty_per_gib * np.asarray(debt_bytes) / GIB * read_share
        return np.minimum(self.max_penalty, self.pay_penalty * np.asarray(paying) + amplification)

    def payoff_cost(self, debt_bytes, ops_per_s, read_share, write_bytes_s=0.0):
        """Ops lost paying debt_bytes off at capacity (less the writes' own need) while serving ops_per_s with
        read_share: pay_penalty over the time it takes, plus the reads' amplification of a debt falling linearly,
        at most max_penalty over that time."""
        np = _np()
        debt = np.maximum(0.0, np.asarray(debt_bytes, dtype=float))
        net = max(self.capacity - float(write_bytes_s), 0.1 * self.capacity)
        seconds = debt / net
        share = self.pay_penalty + self.penalty_per_gib * debt / GIB * read_share / 2.0
        return float(ops_per_s) * seconds * np.minimum(self.max_penalty, share)


def shares(workloads):
    """(read share, write share) per step of planning workloads ({"mix": {op: share}})."""
    reads, writes = [], []
    for workload in workloads:
        mix = dict((workload or {}).get("mix") or {})
        total = sum(float(v) for v in mix.values()) or 1.0
        reads.append(sum(float(mix.get(op, 0.0)) for op in READS) / total)
        writes.append(sum(float(mix.get(op, 0.0)) for op in WRITES) / total)
    return reads, writes


class Ledger:
    """The debt side of a Timeline: the model, each candidate's compaction rate, and each step's read and write
    shares. attach() sets it on a Timeline; cost_benefit.best_plan() and Timeline.value() then use it."""

    def __init__(self, model, candidates, workloads):
        np = _np()
        if not isinstance(model, DebtModel):
            raise DebtError("debt: expected a DebtModel")
        self.model = model
        self.rates = np.array([model.rate(c) for c in candidates], dtype=float)
        reads, writes = shares(workloads)
        self.read_share = np.array(reads, dtype=float)
        self.write_share = np.array(writes, dtype=float)
        self._line, self._arrays = None, {}

    def attach(self, line):
        if len(self.read_share) != line.steps or len(self.rates) != line.configs:
            raise DebtError(
                "debt: the ledger has %d steps and %d configurations, the timeline %d and %d"
                % (len(self.read_share), len(self.rates), line.steps, line.configs)
            )
        line.debt = self
        self._line, self._arrays = line, {}
        return line

    def _once(self, line, name, compute):
        """An array of the attached line computed once (every switch gain of the guard asks for it again)."""
        if line is not self._line:
            return compute()
        if name not in self._arrays:
            self._arrays[name] = compute()
        return self._arrays[name]

    # ------------------------------------------------------------------------------------- per step
    def served(self, line):
        """Cluster ops/s served per step and configuration, [steps, configurations]."""
        return self._once(line, "served", lambda: line.step_ops() / line.step_s)

    def headroom(self, line):
        """Capacity over what is served, per step and configuration (>= 1; above 1 where the offered load is below
        the capacity: a debt then first eats into the idle capacity)."""
        np = _np()
        served = self.served(line)
        return self._once(line, "headroom", lambda: np.where(served > 0, line.F / np.maximum(served, 1e-12), 1.0))

    def keep(self, penalty, headroom, mean=0.0):
        """Share of the served ops counted under a penalty on the capacity, less the aversion to mean bytes owed."""
        np = _np()
        return np.minimum(1.0, (1.0 - penalty) * headroom) - AVERSION * np.asarray(mean) / GIB

    def growth(self, line):
        """Debt change per node over each step with each configuration in place (bytes), [steps, configs]."""

        def compute():
            writes = self.served(line) * self.write_share[:, None] * self.model.bytes_per_write
            return (writes - self.rates[None, :]) * line.step_s

        return self._once(line, "growth", compute)

    def _advance(self, debt, growth, read_share):
        """(debt after one step, penalty share of the step, mean debt) from debt (array) with growth bytes over the
        step."""
        np = _np()
        debt = np.asarray(debt, dtype=float)
        end = np.maximum(0.0, debt + growth)
        if growth < 0:
            # Paying off: the share of the step until the debt is gone (all of it while some is left).
            paying = np.minimum(1.0, debt / -growth)
            mean = np.where(end > 0, (debt + end) / 2.0, debt * paying / 2.0)
        else:
            paying = np.zeros_like(debt)
            mean = debt + growth / 2.0
        return end, self.model.penalty(mean, read_share, paying), mean

    def liability(self, line, debt, config):
        """Ops the debt left at the end of the lookahead will cost (paid at capacity under the last step's
        throughput of config and the lookahead's read share)."""
        last = line.steps - 1
        served = float(self.served(line)[last, config])
        writes = served * float(self.write_share[last]) * self.model.bytes_per_write
        return self.model.payoff_cost(debt, served, float(self.read_share[last]), writes)

    # ------------------------------------------------------------------------------------- plans
    def value(self, line, switches, start, detail=False):
        """Ops of a plan with the debt carried: each step's ops less its penalty, less the liability left."""
        ops, resume = line.switch_ops()
        steady = line.step_ops()
        growth = self.growth(line)
        room = self.headroom(line)
        debt = float(self.model.pending_bytes)
        total, current, k = 0.0, start, 0
        plan = {step: target for step, _from, target in line.applied(switches, start)}
        lost = 0.0
        while k < line.steps:
            if k in plan:
                target = plan[k]
                end = int(resume[k, current, target])
                share = float(ops[k, current, target]) / (end - k)
                for j in range(k, end):
                    debt, pen, mean = self._advance(debt, float(growth[j, target]), float(self.read_share[j]))
                    kept = float(self.keep(pen, room[j, target], mean))
                    total += share * kept
                    lost += share * (1.0 - kept)
                k, current = end, target
                continue
            debt, pen, mean = self._advance(debt, float(growth[k, current]), float(self.read_share[k]))
            kept = float(self.keep(pen, room[k, current], mean))
            total += float(steady[k, current]) * kept
            lost += float(steady[k, current]) * (1.0 - kept)
            k += 1
        owed = float(self.liability(line, debt, current))
        if detail:
            return {"ops": total - owed, "penalty_ops": lost, "liability_ops": owed, "end_bytes": float(debt)}
        return total - owed

    def levels(self, line):
        np = _np()
        growth = self.growth(line)
        most = float(self.model.pending_bytes) + float(np.maximum(growth, 0.0).max(axis=1).sum())
        if most <= MIB:
            return np.array([0.0, MIB])
        return np.concatenate([[0.0], np.geomspace(MIB, most * 1.01, LEVELS - 1)])

    def best_plan(self, line, start, min_gain=0.0, tail_s=0.0):
        """cost_benefit.best_plan() with the debt: V[k, c, d] over debt levels d (values between levels
        interpolated); the plan is then followed from the actual debt now, step by step."""
        np = _np()
        ops, resume = line.switch_ops()
        K, C = line.steps, line.configs
        levels = self.levels(line)
        growth = self.growth(line)
        room = self.headroom(line)
        value = np.zeros((K + 1, C, len(levels)))
        tail = line.step_ops()[K - 1] * (tail_s / line.step_s) if tail_s > 0 else np.zeros(C)
        for c in range(C):
            value[K, c] = tail[c] - self.liability(line, levels, c)

        def options(k, current, debt):
            """Value of every target from (k, current, debt): [targets] for a scalar or [targets, levels]."""
            debt = np.atleast_1d(np.asarray(debt, dtype=float))
            out = np.empty((C, debt.size))
            for b in range(C):
                end = int(resume[k, current, b])
                d = debt.copy()
                keep = np.zeros_like(d)
                for j in range(k, end):
                    d, pen, mean = self._advance(d, float(growth[j, b]), float(self.read_share[j]))
                    keep = keep + self.keep(pen, room[j, b], mean)
                keep = keep / (end - k)
                out[b] = ops[k, current, b] * keep + np.interp(d, levels, value[end, b])
            return out

        for k in range(K - 1, -1, -1):
            for a in range(C):
                table = options(k, a, levels)
                stay = table[a]
                best = table.max(axis=0)
                value[k, a] = np.where(best > stay + 1e-9 * np.maximum(1.0, np.abs(stay)), best, stay)
        switches = []
        k, current, debt = 0, start, float(self.model.pending_bytes)
        while k < K:
            table = options(k, current, debt)[:, 0]
            target = int(np.argmax(table))
            if not table[target] > table[current] + 1e-9 * max(1.0, abs(table[current])):
                target = current
            end = int(resume[k, current, target])
            for j in range(k, end):
                debt = float(self._advance(np.array(debt), float(growth[j, target]), float(self.read_share[j]))[0])
            if target != current:
                switches.append((k, current, target))
            k, current = end, target
        pairs = [(s, b) for s, _a, b in switches]
        stay = self.value(line, [], start, detail=True)
        planned = self.value(line, pairs, start, detail=True)
        stay_value = stay["ops"] + float(tail[start])
        planned_value = planned["ops"] + (float(tail[switches[-1][2]]) if switches else float(tail[start]))
        result = {"switches": switches, "ops": planned["ops"], "stay_ops": stay["ops"], "solver": "exact+debt"}
        objective_gain = (planned_value - stay_value) / stay_value if stay_value > 0 else 0.0
        if switches and objective_gain < min_gain:
            result.update(switches=[], ops=stay["ops"], rejected_gain=objective_gain)
            planned = stay
        result["gain"] = result["ops"] - result["stay_ops"]
        result["debt"] = {
            "end_bytes": round(planned["end_bytes"], 1),
            "penalty_ops": round(planned["penalty_ops"], 1),
            "liability_ops": round(planned["liability_ops"], 1),
            "stay_end_bytes": round(stay["end_bytes"], 1),
            "stay_penalty_ops": round(stay["penalty_ops"], 1),
            "stay_liability_ops": round(stay["liability_ops"], 1),
        }
        return result

    def hold_cost(self, line, config, steps, then=None):
        """Ops lost to the debt when config is held from step 0 for steps steps and then (default config) for the
        rest of the line: penalties, then what the debt left at the line's end costs to pay off, from the debt now.
        """
        growth = self.growth(line)
        room = self.headroom(line)
        served = self.served(line)
        then = config if then is None else then
        debt, lost = float(self.model.pending_bytes), 0.0
        steps = min(int(steps), line.steps)
        held = config
        for k in range(line.steps):
            held = config if k < steps else then
            debt, pen, mean = self._advance(debt, float(growth[k, held]), float(self.read_share[k]))
            lost += float(served[k, held]) * line.step_s * (1.0 - float(self.keep(pen, room[k, held], mean)))
        return lost + float(self.liability(line, debt, held))
