# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Dynamic reconfiguration on simulated workloads (seed 001 Fig. 4-6): total ops of our plans against the papers'
baselines, side by side, on one simulated cluster, and the time a plan takes.

    .venv/bin/python benchmarks/plan_dynamic.py                  # full: 4 h of each workload
    .venv/bin/python benchmarks/plan_dynamic.py --short          # 1 h of each, under a minute
    .venv/bin/python benchmarks/plan_dynamic.py --model other.json --restart-s 70 --nodes 3 --rf 3 --cl ONE

Throughput functions (--f-ops): "surrogate", the lab-trained surrogate (.lab/bench/models/cassandra-surrogate.json,
made by playbooks/collect_training.yml on the bench node) and "synthetic", the analytic function with IRIS Fig. 1's
trade-offs (SYNTHETIC below). The default, "both", runs the two side by side. Without the bench's own surrogate (a
fresh clone) the surrogate rows use the copy the repository ships, catalog/models/cassandra-bench.json, and without
that one too the synthetic function runs alone; the first line of the output says which model was used.

The simulated cluster: f_ops(W, C) = nodes x the lab-trained surrogate's ops/s for workload W (the read ratio of
each 30 s step as reads and updates, zipfian keys, the training's records and client threads) and configuration
C; a switch restarts R = RF - CL nodes at a time, each batch offline T_r seconds (default 70 s, what a Cassandra
node of the lab took under load, docs/reconfigure.md). Candidates: the default and the static tuner's optimum of
each distinct workload (read ratio on a 0.05 grid) and of the whole trace; the compaction strategy stays fixed.

Compared on the actual workload of each trace (total ops, and the ratio to the theoretical best):
- default: the default configuration all along;
- static-optimized: the one configuration best for the whole trace, in place from the start;
- naive: switch to the optimum of the current step whenever it changes, every node at once (no CBA);
- ours: every step with no roll running, forecast the next lookahead (Markov chain over the history so far, as
  the forecast module's best method on these traces; or ARIMA, --method), plan it (planner.best_plan) and start
  the plan's first switch when it is due now (receding horizon);
- ours, oracle: the same with the actual future as the forecast (the job queue's perfect forecast);
- ours from static-opt: our controller (forecast as ours) on a cluster already running the static-optimized
  configuration - what switching adds once the static tuning is done;
- theoretical best: each step's best candidate with no switch cost.

What IRIS reported (seed 001, Fig. 6, HPC queue): ours within 9.5 % of the theoretical best; +18.9 % and
+25.7 % over static-optimized with 1 and 5 jobs, identical with 10; naive down to 32.9 % below default.

Planning time: make_plan (candidates by the static tuner, f_ops, the exact search, break-even, reasons) for a
30 min lookahead at T_d = 30 s (60 decision points), and the genetic search over plans on the same candidates.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time

from _common import ROOT, use_collection

use_collection()

import numpy as np

from ansible_collections.tactician.nosql.plugins.module_utils.core import replication
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog import Catalog
from ansible_collections.tactician.nosql.plugins.module_utils.models import forecast, forecast_series, surrogate_design
from ansible_collections.tactician.nosql.plugins.module_utils.models import model_files as modelstore
from ansible_collections.tactician.nosql.plugins.module_utils.models import surrogate as sg
from ansible_collections.tactician.nosql.plugins.module_utils.planning import cost_benefit as planner
from ansible_collections.tactician.nosql.plugins.module_utils.planning import dynamic, tuner
from ansible_collections.tactician.nosql.plugins.module_utils.workload import schedules

STEP_S = 30.0
MODEL = os.path.join(ROOT, ".lab", "bench", "models", "cassandra-surrogate.json")
SHIPPED_MODEL = os.path.join(ROOT, "catalog", "models", "cassandra-bench.json")
"""The bench surrogate as the repository ships it (fitted on this project's bench node, its rows next to it): the
fallback when the bench's own model (made on the bench node by playbooks/collect_training.yml) is missing."""
BASE = {"requestdistribution": "zipfian", "records": 20000, "threads": 32}
PAPER = (
    "IRIS (seed 001 Fig. 6, HPC queue): within 9.5 % of theoretical best; +18.9 % / +25.7 % over static-optimized "
    "with 1 / 5 jobs, identical with 10; naive down to -32.9 % vs default"
)


def traces(duration_s, seed):
    out = []
    for jobs in (1, 5, 10):
        out.append(
            ("hpc-%d" % jobs, schedules.hpc_job_queue(seed, concurrent_jobs=jobs, duration_s=duration_s, rate=200))
        )
    out.append(
        (
            "abrupt-slow",
            schedules.abrupt_switching(seed, duration_s=duration_s, min_interval_s=1200, max_interval_s=5400),
        )
    )
    out.append(
        ("abrupt-fast", schedules.abrupt_switching(seed, duration_s=duration_s, min_interval_s=60, max_interval_s=600))
    )
    return out


def workload(ratio):
    ratio = min(1.0, max(0.0, round(round(ratio / 0.05) * 0.05, 6)))
    mix = {op: share for op, share in (("read", ratio), ("update", round(1 - ratio, 6))) if share > 0}
    return dict(BASE, mix=mix)


SYNTHETIC = {
    # IRIS Fig. 1's scale: a read-optimized configuration serves read-heavy work 25 % faster than the default and
    # write-heavy work 30 % slower; a write-optimized one the other way round; a balanced one 8 % better on both.
    "default": lambda r: 1.0,
    "read-optimized": lambda r: 1.0 + 0.25 * r - 0.30 * (1 - r),
    "write-optimized": lambda r: 1.0 + 0.25 * (1 - r) - 0.30 * r,
    "balanced": lambda r: 1.08,
}
SYNTHETIC_NODE_OPS = 20000.0


class SyntheticThroughput:
    """f_ops with known trade-offs (SYNTHETIC): nodes x 20,000 ops/s x the configuration's factor at the read ratio."""

    def __init__(self, nodes):
        self.nodes = nodes

    def matrix(self, workloads, configs):
        rows = []
        for w in workloads:
            mix = w["mix"]
            r = mix.get("read", 0.0) / max(sum(mix.values()), 1e-9)
            rows.append([self.nodes * SYNTHETIC_NODE_OPS * SYNTHETIC[c["name"]](r) for c in configs])
        return np.asarray(rows)


class Simulation:
    """One trace on the simulated cluster: candidates, f_ops of every (step, candidate), the controllers."""

    def __init__(self, f_ops, catalog, ratios, roll, feasible, seed):
        self.roll = roll
        self.ratios = ratios
        self.workloads = [workload(r) for r in ratios]
        if isinstance(f_ops, SyntheticThroughput):
            self._synthetic(f_ops)
            return
        space = f_ops.space
        default = space.default_config(f_ops.hardware)
        fixed = {n: default[n] for n in space.parameters if catalog.apply_kind(n) == "table"}
        self.candidates = [default]
        self.keys = {}
        distinct = {}
        for w in self.workloads:
            distinct.setdefault(tuner.config_key(w), [w, 0])[1] += 1
        started = time.monotonic()
        for key, (w, _count) in sorted(distinct.items()):
            found = tuner.tune(f_ops, [w], feasible=feasible, fixed=fixed, include=[default], seed=seed, generations=30)
            self.keys[key] = self._add(found["config"])
        static = tuner.tune(
            f_ops,
            [w for w, _n in distinct.values()],
            weights=[n for _w, n in distinct.values()],
            feasible=feasible,
            fixed=fixed,
            include=list(self.candidates),
            seed=seed,
            generations=30,
        )
        self.static = self._add(static["config"])
        self.tune_s = time.monotonic() - started
        self.F = f_ops.matrix(self.workloads, self.candidates)
        self.row = {tuner.config_key(w): self.F[i] for i, w in enumerate(self.workloads)}
        self.f_ops = f_ops
        self.restart = dynamic.restart_matrix(catalog, self.candidates)
        self.line = planner.Timeline(self.F, roll, STEP_S, restart=self.restart)
        self.optimum = [self.keys[tuner.config_key(w)] for w in self.workloads]

    def _synthetic(self, f_ops):
        self.candidates = [{"name": name} for name in SYNTHETIC]
        self.tune_s = 0.0
        self.F = f_ops.matrix(self.workloads, self.candidates)
        self.row = {tuner.config_key(w): self.F[i] for i, w in enumerate(self.workloads)}
        self.f_ops = f_ops
        self.restart = np.ones((len(self.candidates), len(self.candidates)), dtype=bool)
        self.line = planner.Timeline(self.F, self.roll, STEP_S, restart=self.restart)
        self.optimum = [int(i) for i in np.argmax(self.F, axis=1)]
        self.static = int(np.argmax(self.F.sum(axis=0)))

    def with_roll(self, roll):
        """The same trace and candidates on a cluster that rolls differently (scale-out, aggressive, sets)."""
        other = object.__new__(Simulation)
        other.__dict__.update(self.__dict__)
        other.roll = roll
        other.line = planner.Timeline(self.F, roll, STEP_S, restart=self.restart)
        return other

    def _add(self, config):
        key = tuner.config_key(config)
        for index, other in enumerate(self.candidates):
            if tuner.config_key(other) == key:
                return index
        self.candidates.append(config)
        return len(self.candidates) - 1

    def rows_for(self, ratios):
        rows = []
        for r in ratios:
            key = tuner.config_key(workload(r))
            if key not in self.row:
                self.row[key] = self.f_ops.matrix([workload(r)], self.candidates)[0]
            rows.append(self.row[key])
        return np.asarray(rows)

    def receding(self, predict, lookahead, tail_s=0.0, min_gain=0.0, start=0):
        """Switches our controller starts from candidate start, replanning every step with no roll running."""
        executed = []
        current = start
        k = 0
        plan_times = []
        _ops, resume = self.line.switch_ops()
        while k < len(self.ratios):
            future = predict(k, lookahead)
            started = time.monotonic()
            line = planner.Timeline(self.rows_for(future), self.roll, STEP_S, restart=self.restart)
            plan = planner.best_plan(line, current, min_gain=min_gain, tail_s=tail_s)
            plan_times.append(time.monotonic() - started)
            if plan["switches"] and plan["switches"][0][0] == 0:
                target = plan["switches"][0][2]
                executed.append((k, target))
                k = int(resume[k, current, target])
                current = target
            else:
                k += 1
        return executed, plan_times


def load_surrogate(path, nodes, choice="both"):
    """(f_ops, catalog, feasible, note): the lab surrogate as f_ops of a cluster of nodes, or (None, None, None,
    note) when only the synthetic function is asked for or no surrogate file exists and "both" was asked for."""
    if choice == "synthetic":
        return None, None, None, "model: the synthetic function (IRIS Fig. 1 trade-offs), as asked"
    fallback = ""
    if not os.path.exists(path) and path == MODEL and os.path.exists(SHIPPED_MODEL):
        fallback = "no lab surrogate at %s (it is made on the bench node); " % os.path.relpath(path, ROOT)
        path = SHIPPED_MODEL
    if not os.path.exists(path):
        where = os.path.relpath(path, ROOT)
        if choice == "surrogate":
            sys.exit(
                "%s: no surrogate model; collect and fit one on the bench node first (docs/predict.md: "
                "playbooks/collect_training.yml, then model action=fit kind=surrogate)" % where
            )
        return (
            None,
            None,
            None,
            "model: no lab surrogate at %s (it is made on the bench node); using the synthetic function "
            "alone (IRIS Fig. 1 trade-offs, benchmarks/plan_dynamic.py SYNTHETIC)" % where,
        )
    data, metadata = modelstore.load_model(path, kind="surrogate", store="cassandra")
    catalog = Catalog.for_store("cassandra", metadata.get("store_version"))
    model = sg.Surrogate.from_dict(data, catalog=catalog)
    hardware = metadata["hardware_profile"]
    f_ops = tuner.Throughput(model, hardware=hardware, nodes=nodes)
    feasible = surrogate_design.feasible_by_catalog(
        catalog, memory_mb=hardware["ram_gb"] * 1024.0, heap_mb=hardware.get("heap_mb")
    )
    r2 = (metadata.get("metrics") or {}).get("r2")
    note = "model: %s%s surrogate %s (%d training rows, held-out R^2 %s) and the synthetic function" % (
        fallback,
        "the repository's" if os.path.abspath(path) == os.path.abspath(SHIPPED_MODEL) else "lab",
        os.path.relpath(path, ROOT),
        metadata.get("training_points", 0),
        "%.3f" % r2 if isinstance(r2, (int, float)) else "?",
    )
    if choice == "surrogate":
        note = note.rsplit(" and the", 1)[0]
    return f_ops, catalog, feasible, note


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--short", action="store_true", help="1 h traces instead of 4 h")
    parser.add_argument("--model", default=MODEL, help="surrogate model file (default the bench's)")
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--rf", type=int, default=3)
    parser.add_argument("--cl", default="ONE")
    parser.add_argument("--restart-s", type=float, default=70.0, help="T_r, seconds a batch is offline")
    parser.add_argument("--lookahead-s", type=float, default=1800.0)
    parser.add_argument("--method", default="markov", choices=["markov", "last_value", "arima"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tail-s", type=float, default=0.0, help="value after the lookahead (best_plan tail_s)")
    parser.add_argument("--min-gain", type=float, default=0.0, help="least predicted gain share of a plan")
    parser.add_argument(
        "--f-ops",
        default="both",
        choices=["surrogate", "synthetic", "both"],
        help="throughput function: the lab-trained surrogate, IRIS-like known trade-offs, or both tables",
    )
    parser.add_argument("--timing-repeats", type=int, default=3, help="make_plan runs timed per solver (median)")
    parser.add_argument("--markdown")
    parser.add_argument("--csv")
    args = parser.parse_args()
    started = time.time()
    f_ops, catalog, feasible, model_note = load_surrogate(args.model, args.nodes, args.f_ops)
    print(model_note)
    rule = replication.batch_rule(args.rf, args.cl, args.nodes)
    roll = planner.Roll(nodes=args.nodes, batch=rule["batch"], restart_s=args.restart_s)
    lookahead = int(args.lookahead_s // STEP_S)
    duration = 3600.0 if args.short else 4 * 3600.0
    print(
        "cluster %d nodes, %s, T_r %.0f s per batch (roll %.0f s); "
        "lookahead %d steps of %.0f s (tail %.0f s, min gain %.3f); forecast %s"
        % (
            args.nodes,
            rule["rule"],
            args.restart_s,
            roll.duration(),
            lookahead,
            STEP_S,
            args.tail_s,
            args.min_gain,
            args.method,
        )
    )
    header = (
        "| workload | steps | default | static-opt | naive | ours (%s) | ours, oracle | theoretical best |"
        " ours / best |"
        " ours vs static | naive vs default | switches ours / naive | ours from static-opt vs static |" % args.method
    )
    lines = [header, "|" + "---|" * 13]
    csv_rows = []
    plan_times = []
    functions = []
    if f_ops is not None:
        functions.append(("surrogate", f_ops))
    if args.f_ops in ("synthetic", "both"):
        functions.append(("synthetic", SyntheticThroughput(args.nodes)))
    cases = [(label, fn, name, schedule) for label, fn in functions for name, schedule in traces(duration, args.seed)]
    for label, function, name, schedule in cases:
        series = forecast_series.series_from_schedule(schedule, STEP_S, fields=("read_ratio",))
        ratios = series["read_ratio"]
        sim = Simulation(function, catalog, ratios, roll, feasible, args.seed)
        name = "%s (%s)" % (name, label)
        base = planner.baselines(sim.line, 0, sim.static, sim.optimum)

        def oracle(k, steps, ratios=ratios):
            future = ratios[k : k + steps]
            return future + [future[-1]] * (steps - len(future))

        made = {}  # the forecasts of this trace, shared by our controller from the default and from static-opt

        # The defaults bind this trace's values to the closure (the loop rebinds the names).
        def predicted(k, steps, ratios=ratios, made=made):  # pylint: disable=dangerous-default-value
            if (k, steps) in made:
                return made[k, steps]
            history = ratios[max(0, k - 500) : k]
            if len(history) < 20:
                return [history[-1] if history else ratios[0]] * steps
            fc = forecast.forecast(
                {"t": [i * STEP_S for i in range(len(history))], "read_ratio": history, "step_s": STEP_S},
                steps,
                method=args.method,
            )
            made[k, steps] = fc["fields"]["read_ratio"]
            return made[k, steps]

        ours, times = sim.receding(predicted, lookahead, args.tail_s, args.min_gain)
        plan_times += times
        oracle_switches, _times = sim.receding(oracle, lookahead, args.tail_s, args.min_gain)
        value = sim.line.value(ours, 0)
        value_oracle = sim.line.value(oracle_switches, 0)
        # The same controller on a cluster already on the static-optimized configuration.
        from_static, _times = sim.receding(predicted, lookahead, args.tail_s, args.min_gain, start=sim.static)
        value_from_static = sim.line.value(from_static, sim.static)
        best = base["theoretical_best"]
        row = dict(
            workload=name,
            f_ops=label,
            steps=len(ratios),
            default=base["default"],
            static_optimized=base["static_optimized"],
            naive=base["naive"],
            ours=value,
            ours_oracle=value_oracle,
            ours_from_static=value_from_static,
            theoretical_best=best,
            switches_ours=len(sim.line.applied(ours, 0)),
            switches_naive=base["naive_switches"],
            candidates=len(sim.candidates),
            tune_s=round(sim.tune_s, 2),
        )
        csv_rows.append(row)
        lines.append(
            "| %s | %d | %s | %s | %s | %s | %s | %s | %.3f (oracle %.3f) | %+.1f %% (oracle %+.1f %%) | %+.1f %%"
            " | %d / %d | %+.1f %% (%d switches) |"
            % (
                name,
                len(ratios),
                *(f"{row[k]:,.0f}" for k in ("default", "static_optimized", "naive", "ours", "ours_oracle")),
                f"{best:,.0f}",
                value / best,
                value_oracle / best,
                100 * (value / base["static_optimized"] - 1),
                100 * (value_oracle / base["static_optimized"] - 1),
                100 * (base["naive"] / base["default"] - 1),
                row["switches_ours"],
                row["switches_naive"],
                100 * (value_from_static / base["static_optimized"] - 1),
                len(sim.line.applied(from_static, sim.static)),
            )
        )
        print(lines[-1] if len(lines) > 3 else "\n".join(lines), flush=True)

    if f_ops is None:
        timing = "planning time of make_plan: not measured (it needs a surrogate model)"
        print("\n" + timing)
        finish(args, lines, csv_rows, started, [model_note, timing])
        return
    # Planning time of the plan module's engine for 60 decision points.
    schedule = schedules.hpc_job_queue(args.seed, concurrent_jobs=5, duration_s=1800.0, rate=200)
    ratios = forecast_series.series_from_schedule(schedule, STEP_S, fields=("read_ratio",))["read_ratio"][:60]
    times = {"exact": [], "ga": []}
    for repeat in range(max(1, args.timing_repeats)):
        for solver, spent in times.items():
            t = time.monotonic()
            body = dynamic.make_plan(
                f_ops,
                {"fields": {"read_ratio": ratios}},
                {},
                roll,
                catalog,
                step_s=STEP_S,
                workload_base=BASE,
                feasible=feasible,
                seed=repeat,
                solver=solver,
            )
            spent.append(time.monotonic() - t)
    timings, ga_times = times["exact"], times["ga"]
    timing = (
        "plan for 60 decision points (make_plan: %d candidates, %d static searches): exact %.2f s (median of %d, "
        "max %.2f), genetic %.2f s; receding-horizon search alone: median %.1f ms per decision (%d decisions)"
        % (
            body["timing"]["candidates"],
            body["timing"]["searches"],
            statistics.median(timings),
            len(timings),
            max(timings),
            statistics.median(ga_times),
            1000 * statistics.median(plan_times),
            len(plan_times),
        )
    )
    print("\n" + timing)
    finish(args, lines, csv_rows, started, [model_note, timing])


def finish(args, lines, csv_rows, started, notes=()):
    print(PAPER)
    print("wall time %.1f s" % (time.time() - started))
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write("\n".join(lines) + "\n\n" + "".join("- %s\n" % note for note in notes))
    if args.csv:
        with open(args.csv, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(csv_rows[0]))
            writer.writeheader()
            writer.writerows(csv_rows)


if __name__ == "__main__":
    main()
