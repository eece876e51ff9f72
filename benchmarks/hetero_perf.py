# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Heterogeneous perf/$ on simulated clusters (seed 002, OptimusCloud Fig. 8-12): a VM type and a configuration per
complete-set, switched with the workload, against homogeneous clusters, side by side on the same traces.

    .venv/bin/python benchmarks/hetero_perf.py              # full: 4 h of each trace
    .venv/bin/python benchmarks/hetero_perf.py --short      # 1 h of each
    .venv/bin/python benchmarks/hetero_perf.py --stores redis --traces hpc-10 --markdown h.md --csv h.csv

Clusters (planning/complete_sets.py): Cassandra, 6 nodes with evenly spaced tokens, RF 3: hetero.complete_sets
finds 3 complete-sets of 2 nodes; Redis, 3 shards of a master and a replica: 2 complete-sets of 3 nodes. CL ONE, so
count(sets) - CL sets go down at a time (rolling.batch_rule), 30 s for a configuration change and 90 s when the VM
type changes (the paper's averages). The VM types and prices: catalog/vms/aws-us-east-1.yml (13 EC2 types).

A node's ops/s comes from the analytic stores of benchmarks/_analytic.py (no lab machine measures 13 VM types);
the cluster's from vm_types.cluster_throughput (reads served by one set in proportion to capacity, writes applied by
every set). Every system runs on the same trace at saturation; perf/$ = total ops / total $ (reported as ops/s per
$/h), each next to the theoretical best's:

- homogeneous-static: one VM type and configuration everywhere, the best perf/$ for the whole trace known in advance
  (the paper's impractically optimistic baseline);
- homogeneous-dynamic: at every workload change, the whole cluster to the best homogeneous VM type and configuration
  for the new workload, every node at once (as CherryPick and Selecta reconfigure: reactive, no cost-benefit);
- homogeneous VM, dynamic configuration (SOPHIA in the paper): the VM type the store's documentation recommends
  (c5.large for Cassandra, r5.large for Redis; the paper's c4/r4 are not in the catalog), the configuration planned
  with the cost-benefit analysis on the job queue's forecast, RF - CL nodes rolled at a time;
- ours: per complete-set VM type and configuration, candidates = vm_types.best_assignment of each distinct workload
  (read ratio on a 0.05 grid), planned by planner.best_plan on the predicted perf/$ over a 30 min lookahead with the
  complete-set rolls of hetero.set_layouts, replanned at every step no roll runs (receding horizon); forecast by the
  job queue (oracle: the paper's HPC setting, accurate over an hour) and by the Markov chain on the history;
- theoretical best: each step's best heterogeneous assignment with no switch cost.

Every dynamic system starts from the homogeneous-static cluster. What OptimusCloud reported (perf/$ over
Homogeneous-Static): MG-RAST +86 % / +74 % (Fig. 8), HPC +20 % (CL ONE) / +24 % (QUORUM) at RF 3 (Fig. 10), Redis
HPC +19 % (Fig. 12); 80-90 % of the theoretical best.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import time

from _common import ROOT, use_collection

use_collection()

import _analytic
import _control
import numpy as np
import yaml

from ansible_collections.tactician.nosql.plugins.module_utils.core import replication
from ansible_collections.tactician.nosql.plugins.module_utils.models import forecast_series
from ansible_collections.tactician.nosql.plugins.module_utils.planning import complete_sets as hetero
from ansible_collections.tactician.nosql.plugins.module_utils.planning import cost_benefit as planner
from ansible_collections.tactician.nosql.plugins.module_utils.planning import vm_types
from ansible_collections.tactician.nosql.plugins.module_utils.workload import schedules

STEP_S = 30.0
LOOKAHEAD_S = 1800.0
QUANTUM = 0.05
VM_CATALOG = os.path.join(ROOT, "catalog", "vms", "aws-us-east-1.yml")
RECOMMENDED_VM = {"cassandra": "c5.large", "redis": "r5.large"}
TRACES = {
    "cassandra": ("hpc-1", "hpc-10", "abrupt-fast"),
    "redis": ("hpc-1", "hpc-10"),
}
PAPER_HPC = "Fig. 10 (HPC, RF 3, CL ONE): +20 % perf/$ over homogeneous-static; 80-90 % of best"
PAPER_REDIS = "Fig. 12 (Redis, HPC): +19 % perf/$ over homogeneous-static"
PAPER = {
    ("cassandra", "hpc-1"): PAPER_HPC,
    ("cassandra", "hpc-10"): PAPER_HPC,
    ("cassandra", "abrupt-fast"): "Fig. 8 (MG-RAST): +86 % (16 GB) / +74 % (100 GB) over homogeneous-static",
    ("redis", "hpc-1"): PAPER_REDIS,
    ("redis", "hpc-10"): PAPER_REDIS,
}


def load_vms(path=VM_CATALOG):
    """The VM catalog checked by vm_types.check_vms, with each type's family kept (the analytic stores read it)."""
    with open(path, encoding="utf-8") as handle:
        raw = yaml.safe_load(handle)
    vms = vm_types.check_vms(raw, os.path.basename(path))
    families = {str(vm["name"]): vm.get("family") for vm in raw["vms"]}
    for vm in vms:
        vm["family"] = families.get(vm["name"])
    return vms


def cluster(store):
    """(complete-sets, replication factor) of the simulated cluster, found by complete_sets.py."""
    if store == "cassandra":
        nodes = ["cassandra%d" % i for i in range(6)]
        span = 2**64 // len(nodes)
        tokens = {node: [-(2**63) + i * span] for i, node in enumerate(nodes)}
        return hetero.complete_sets(hetero.cassandra_replicas(tokens, 3)), 3
    shards = [{"master": "redis-m%d" % i, "replicas": ["redis-r%d" % i]} for i in range(3)]
    return hetero.redis_complete_sets(shards), 2


def trace(name, seed, duration_s):
    if name.startswith("hpc-"):
        schedule = schedules.hpc_job_queue(seed, int(name.split("-")[1]), duration_s, 200.0, step_s=STEP_S)
    elif name == "abrupt-fast":
        schedule = schedules.abrupt_switching(seed, duration_s, 60.0, 600.0)
    elif name == "abrupt-slow":
        schedule = schedules.abrupt_switching(seed, duration_s, 1200.0, 5400.0)
    else:
        raise ValueError("trace: %r is not one of hpc-N, abrupt-fast, abrupt-slow" % name)
    return forecast_series.series_from_schedule(schedule, STEP_S, fields=("read_ratio",))["read_ratio"]


def quantize(ratio):
    return min(1.0, max(0.0, round(round(float(ratio) / QUANTUM) * QUANTUM, 6)))


class Predictor:
    """node_ops[v][c] at a read ratio from the analytic store; with noise, every entry times (1 + U(-noise, noise)),
    drawn once per (read ratio, VM type, configuration) from the seed (OptimusCloud Fig. 14's noisy throughput
    predictor: an error that belongs to the input, not to the moment)."""

    def __init__(self, store, vms, noise=0.0, seed=0):
        self.store, self.vms, self.noise, self.seed = store, vms, float(noise), seed
        self._cache = {}

    def node_ops(self, ratio):
        q = quantize(ratio)
        if q not in self._cache:
            matrix = _analytic.node_ops_matrix(self.store, self.vms, q)
            if self.noise > 0:
                rng = random.Random("predictor/%s/%s/%s/%s" % (self.store, self.noise, self.seed, q))
                matrix = [[x * (1.0 + rng.uniform(-self.noise, self.noise)) for x in row] for row in matrix]
            self._cache[q] = matrix
        return self._cache[q]


class Cluster:
    """The simulated cluster: its complete-sets, costs and the cluster ops/s of any assignment at any read ratio."""

    def __init__(self, store, vms, cl="ONE"):
        self.store, self.vms, self.cl = store, vms, cl
        self.sets, self.rf = cluster(store)
        self.sizes = [len(s) for s in self.sets]
        self.nodes = sum(self.sizes)
        rule = replication.batch_rule(
            len(self.sets), cl, self.nodes, sets=len(self.sets), nodes_per_set=max(self.sizes)
        )
        self.batch_sets = rule["batch_sets"]
        self.set_rule = rule["rule"]
        self.node_rule = replication.batch_rule(self.rf, cl, self.nodes)
        self.truth = Predictor(store, vms)

    def ops(self, assignment, ratio, predictor=None):
        node_ops = (predictor or self.truth).node_ops(ratio)
        return vm_types.evaluate_assignment(assignment, node_ops, self.sizes, self.vms, quantize(ratio))[0]

    def cost(self, assignment):
        return vm_types.assignment_cost(assignment, self.sizes, self.vms)

    def best(self, ratio, predictor=None):
        """vm_types.best_assignment at this read ratio, as a tuple of (VM index, configuration index) per set."""
        node_ops = (predictor or self.truth).node_ops(ratio)
        found = vm_types.best_assignment(node_ops, self.sizes, self.vms, quantize(ratio))
        return tuple(tuple(pair) for pair in found["assignment"])

    def homogeneous(self, ratios, vm_names=None, predictor=None):
        """The one VM type and configuration, everywhere, with the best perf/$ over these read ratios."""
        best = None
        for v, vm in enumerate(self.vms):
            if vm_names is not None and vm["name"] not in vm_names:
                continue
            for c in range(len(_analytic.config_names(self.store))):
                assignment = tuple((v, c) for _set in self.sets)
                total = sum(self.ops(assignment, r, predictor) for r in ratios)
                value = total / self.cost(assignment)
                if best is None or value > best[0] + 1e-12:
                    best = (value, assignment)
        return best[1]

    def describe(self, assignment):
        names = _analytic.config_names(self.store)
        return " + ".join(
            "%dx %s/%s" % (self.sizes[p], self.vms[v]["name"], names[c]) for p, (v, c) in enumerate(assignment)
        )


class Candidates:
    """One system's candidate assignments, their ops matrix on the actual trace and their roll between them."""

    def __init__(self, cl, assignments, ratios, layouts_batch=None, roll=None):
        self.cluster = cl
        self.assignments = []
        self.index = {}
        for a in assignments:
            self.add(a)
        self.ratios = ratios
        self.costs = np.asarray([cl.cost(a) for a in self.assignments])
        self.F = np.asarray([[cl.ops(a, r) for a in self.assignments] for r in ratios])
        self.roll = roll or planner.Roll(nodes=cl.nodes, batch=cl.nodes, restart_s=hetero.DEFAULT_T_DOWN_CONFIG_S)
        self.layouts = (
            hetero.set_layouts(self.assignments, cl.sizes, layouts_batch) if layouts_batch is not None else None
        )
        self.line = planner.Timeline(self.F, self.roll, STEP_S, layouts=self.layouts)

    def add(self, assignment):
        assignment = tuple(tuple(pair) for pair in assignment)
        if assignment not in self.index:
            self.index[assignment] = len(self.assignments)
            self.assignments.append(assignment)
        return self.index[assignment]

    def make_line(self, rows):
        return planner.Timeline(rows, self.roll, STEP_S, layouts=self.layouts)

    def rows_for(self, predictor):
        cache = {}

        def rows(ratios):
            out = []
            for r in ratios:
                q = quantize(r)
                if q not in cache:
                    pairs = zip(self.assignments, self.costs, strict=True)
                    cache[q] = [self.cluster.ops(a, q, predictor) / c for a, c in pairs]
                out.append(cache[q])
            return np.asarray(out)

        return rows

    def outcome(self, switches, start):
        """(total ops, total $, perf/$ in ops/s per $/h, switches applied) of a plan on the actual trace."""
        applied = self.line.applied(switches, start)
        ops = planner.simulate(self.line, applied, start)["total"]
        placed = _control.in_place(applied, len(self.ratios), start)
        dollars = float(sum(self.costs[a] for a in placed)) * STEP_S / 3600.0
        return ops, dollars, ops / (dollars * 3600.0), len(applied)


def run_case(
    store, vms, ratios, forecasts=("oracle", "markov"), node_noise=0.0, forecast_noise=0.0, seed=0, systems=None
):
    """Every system on one trace; returns {system: {ops, dollars, perf_per_dollar, switches, ...}}."""
    cl = Cluster(store, vms)
    steps = len(ratios)
    lookahead = int(LOOKAHEAD_S // STEP_S)
    distinct = sorted({quantize(r) for r in ratios})
    static = cl.homogeneous(ratios)
    out = {}
    started = time.monotonic()
    systems = systems or ("homogeneous-static", "homogeneous-dynamic", "sophia", "ours", "best")

    # Theoretical best: each step's best assignment, no switch cost.
    best_of = {q: cl.best(q) for q in distinct}
    best_ops = sum(cl.ops(best_of[quantize(r)], r) for r in ratios) * STEP_S
    best_dollars = sum(cl.cost(best_of[quantize(r)]) for r in ratios) * STEP_S / 3600.0
    out["best"] = dict(ops=best_ops, dollars=best_dollars, perf_per_dollar=best_ops / (best_dollars * 3600.0))
    steps_best = [best_of[quantize(r)] for r in ratios]
    out["best"]["switches"] = sum(1 for a, b in zip(steps_best, steps_best[1:], strict=False) if a != b)

    static_ops = sum(cl.ops(static, r) for r in ratios) * STEP_S
    static_dollars = cl.cost(static) * steps * STEP_S / 3600.0
    out["homogeneous-static"] = dict(
        ops=static_ops,
        dollars=static_dollars,
        perf_per_dollar=static_ops / (static_dollars * 3600.0),
        switches=0,
        layout=cl.describe(static),
    )

    if "homogeneous-dynamic" in systems:
        homog_of = {q: cl.homogeneous([q]) for q in distinct}
        cands = Candidates(cl, [static, *homog_of.values()], ratios, layouts_batch=len(cl.sets))
        optimum = [cands.index[homog_of[quantize(r)]] for r in ratios]
        switches = planner.greedy_switches(cands.line, 0, optimum)
        ops, dollars, value, count = cands.outcome(switches, 0)
        out["homogeneous-dynamic"] = dict(ops=ops, dollars=dollars, perf_per_dollar=value, switches=count)

    if "sophia" in systems:
        names = [RECOMMENDED_VM[store]]
        fixed_static = cl.homogeneous(ratios, vm_names=names)
        fixed_of = {q: cl.homogeneous([q], vm_names=names) for q in distinct}
        roll = planner.Roll(nodes=cl.nodes, batch=cl.node_rule["batch"], restart_s=hetero.DEFAULT_T_DOWN_CONFIG_S)
        cands = Candidates(cl, [fixed_static, *fixed_of.values()], ratios, roll=roll)
        switches = _control.receding(
            cands.line, cands.rows_for(None), _control.oracle(ratios), lookahead, 0, cands.make_line
        )
        ops, dollars, value, count = cands.outcome(switches, 0)
        out["sophia"] = dict(ops=ops, dollars=dollars, perf_per_dollar=value, switches=count, vm=names[0])

    if "ours" in systems:
        predictor = Predictor(store, vms, noise=node_noise, seed=seed) if node_noise else cl.truth
        ours_of = {q: cl.best(q, predictor) for q in distinct}
        cands = Candidates(cl, [static, *ours_of.values()], ratios, layouts_batch=cl.batch_sets)
        for name in forecasts:
            if name == "oracle":
                predict = (
                    _control.noisy_oracle(ratios, forecast_noise, seed) if forecast_noise else _control.oracle(ratios)
                )
            else:
                predict = _control.forecaster(ratios, name, STEP_S)
            switches = _control.receding(cands.line, cands.rows_for(predictor), predict, lookahead, 0, cands.make_line)
            ops, dollars, value, count = cands.outcome(switches, 0)
            placed = _control.in_place(cands.line.applied(switches, 0), steps, 0)
            vm_types = sorted({cl.vms[v]["name"] for a in set(placed) for v, _c in cands.assignments[a]})
            out["ours (%s)" % name] = dict(
                ops=ops, dollars=dollars, perf_per_dollar=value, switches=count, vm_types=" ".join(vm_types)
            )
    for result in out.values():
        result["ratio_to_best"] = _control.ratio(result["perf_per_dollar"], out["best"]["perf_per_dollar"])
        result["vs_static"] = _control.gain(result["perf_per_dollar"], out["homogeneous-static"]["perf_per_dollar"])
    out["_meta"] = dict(
        elapsed_s=time.monotonic() - started,
        sets=len(cl.sets),
        sizes=cl.sizes,
        rule=cl.set_rule,
        static=cl.describe(static),
        distinct=len(distinct),
    )
    return out


SYSTEMS = ("homogeneous-static", "homogeneous-dynamic", "sophia", "ours (oracle)", "ours (markov)", "best")
LABELS = {
    "homogeneous-static": "homogeneous-static",
    "homogeneous-dynamic": "homogeneous-dynamic",
    "sophia": "homogeneous VM, dynamic config",
    "ours (oracle)": "ours (complete-sets, job-queue forecast)",
    "ours (markov)": "ours (complete-sets, Markov forecast)",
    "best": "theoretical best",
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--short", action="store_true", help="1 h traces instead of 4 h")
    parser.add_argument("--stores", nargs="+", default=["cassandra", "redis"], choices=["cassandra", "redis"])
    parser.add_argument("--traces", nargs="+", help="trace names (default per store: %s)" % TRACES)
    parser.add_argument("--forecasts", nargs="+", default=["oracle", "markov"], choices=["oracle", "markov"])
    parser.add_argument("--vm-catalog", default=VM_CATALOG)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--markdown")
    parser.add_argument("--csv")
    args = parser.parse_args()
    started = time.time()
    duration = 3600.0 if args.short else 4 * 3600.0
    vms = load_vms(args.vm_catalog)
    print(
        "model: the analytic stores of benchmarks/_analytic.py (no lab surrogate covers 13 VM types); "
        "VM catalog %s (%d types); %g h traces at T_d %g s; lookahead %g min"
        % (os.path.relpath(args.vm_catalog, ROOT), len(vms), duration / 3600.0, STEP_S, LOOKAHEAD_S / 60.0)
    )
    header = ["store", "trace", "system", "perf/$ (ops/s per $/h)", "/ best", "vs homogeneous-static", "switches"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    rows = []
    notes = []
    for store in args.stores:
        for name in args.traces or TRACES[store]:
            ratios = trace(name, args.seed, duration)
            result = run_case(store, vms, ratios, forecasts=args.forecasts, seed=args.seed)
            meta = result.pop("_meta")
            notes.append(
                "%s %s: %d complete-sets of %s nodes (%s); homogeneous-static = %s; %d distinct workloads; %.1f s"
                % (
                    store,
                    name,
                    meta["sets"],
                    "/".join(map(str, meta["sizes"])),
                    meta["rule"],
                    meta["static"],
                    meta["distinct"],
                    meta["elapsed_s"],
                )
            )
            for system in SYSTEMS:
                if system not in result:
                    continue
                r = result[system]
                row = dict(
                    store=store,
                    trace=name,
                    system=system,
                    ops=round(r["ops"]),
                    dollars=round(r["dollars"], 4),
                    perf_per_dollar=round(r["perf_per_dollar"], 1),
                    ratio_to_best=round(r["ratio_to_best"], 4),
                    vs_static=round(r["vs_static"], 4),
                    switches=r.get("switches", 0),
                    paper=PAPER.get((store, name), ""),
                )
                rows.append(row)
                lines.append(
                    "| %s | %s | %s | %s | %.3f | %+.1f %% | %d |"
                    % (
                        store,
                        name,
                        LABELS[system],
                        f"{r['perf_per_dollar']:,.0f}",
                        r["ratio_to_best"],
                        100 * r["vs_static"],
                        r.get("switches", 0),
                    )
                )
            print("\n".join(lines if len(rows) <= len(SYSTEMS) else lines[-len(result) :]), flush=True)
    print()
    for note in notes:
        print(note)
    for key, text in PAPER.items():
        print("OptimusCloud, %s %s: %s" % (*key, text))
    print("wall time %.1f s" % (time.time() - started))
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n\n" + "\n".join("- " + n for n in notes) + "\n")
    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
