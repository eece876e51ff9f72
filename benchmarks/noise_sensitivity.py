# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Noise sensitivity of our plans (seed 001 Fig. 7-8, seed 002 Fig. 14): the gain over static-optimized as noise is
added to the workload forecast and to the throughput predictor, each next to the same run without noise.

    .venv/bin/python benchmarks/noise_sensitivity.py            # full: 4 h traces, 10 (predictor: 5) noise seeds
    .venv/bin/python benchmarks/noise_sensitivity.py --short    # 1 h traces, 2 seeds
    .venv/bin/python benchmarks/noise_sensitivity.py --parts forecast duration --markdown n.md --csv n.csv

Three parts:

- forecast (IRIS Fig. 7): the HPC job queue on the simulated 3-node cluster of benchmarks/plan_dynamic.py (RF 3,
  CL ONE, T_r 70 s, the synthetic throughput function with IRIS Fig. 1's trade-offs); our receding-horizon
  controller reads the job queue's forecast plus U(-R, R) on every step's read ratio, clipped to [0, 1]; R = 0 is
  the oracle. IRIS used 5 concurrent jobs; here 1 job at 50 ops/s (phases of about 17 min), because with 5 jobs
  (or 4 min phases) the theoretical best is within 2 % of static-optimized and no noise can move anything
  (benchmarks/scale_out.py shows the same trace);
- duration (IRIS Fig. 8): read-heavy (read ratio 0.95) 3 min, write-heavy (0.05) 3 min, read-heavy 3 min; one plan
  made at the start on a forecast whose write-heavy phase is off by x = actual - predicted seconds (-180 to +180),
  then run on the actual trace; T_r 30 s here (a 70 s batch does not pay off within 3 min);
- predictor (OptimusCloud Fig. 14): the heterogeneous Cassandra cluster of benchmarks/hetero_perf.py on the HPC
  queue with 1 job; noise p on the throughput predictor (every VM type x configuration's predicted ops/s times
  1 + U(-p, p), so the candidates and the plan are chosen on wrong numbers, then run on the true ones) and on the
  workload predictor (U(-p, p) on the forecast read ratio); our perf/$ over homogeneous-static.

What the papers reported: IRIS Fig. 7, noise on the predicted workload "slightly reduces" the gain (the plan's
decisions are binary, so most survive); Fig. 8, the gain is highest at zero error and turns negative beyond -60 s
or +80 s, worse on the side where the write phase is predicted too long (47 % vs 26 % penalty); OptimusCloud
Fig. 14, the improvement over homogeneous-static falls with noise, faster for the throughput predictor than for
the workload predictor.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time

from _common import use_collection

use_collection()

import _control
import hetero_perf
import plan_dynamic

from ansible_collections.tactician.nosql.plugins.module_utils.core import replication
from ansible_collections.tactician.nosql.plugins.module_utils.models import forecast_series
from ansible_collections.tactician.nosql.plugins.module_utils.planning import cost_benefit as planner
from ansible_collections.tactician.nosql.plugins.module_utils.workload import schedules

STEP_S = plan_dynamic.STEP_S
PARTS = ("forecast", "duration", "predictor")
LEVELS = {
    "forecast": {"short": (0.0, 0.1, 0.3, 0.5), "full": (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)},
    "predictor": {"short": (0.0, 0.1, 0.3), "full": (0.0, 0.1, 0.2, 0.3, 0.5)},
}
SEEDS = {"forecast": {"short": 2, "full": 10}, "predictor": {"short": 2, "full": 5}}
PAPER = {
    "forecast": "IRIS Fig. 7: noise on the predicted workload slightly reduces the gain",
    "duration": "IRIS Fig. 8: peak gain at zero error, negative beyond -60 s / +80 s, worse when predicted too long",
    "predictor": "OptimusCloud Fig. 14: gain over homogeneous-static falls with noise, faster for the throughput "
    "predictor",
}


def hpc_ratios(duration_s, seed, jobs=1, rate=50.0):
    schedule = schedules.hpc_job_queue(seed, jobs, duration_s, rate, step_s=STEP_S)
    return forecast_series.series_from_schedule(schedule, STEP_S, fields=("read_ratio",))["read_ratio"]


def summary(values):
    return statistics.mean(values), min(values), max(values)


def part_forecast(size, seed):
    """IRIS Fig. 7: [(level, mean gain vs static, min, max, mean ours / best)]."""
    duration = 3600.0 if size == "short" else 4 * 3600.0
    ratios = hpc_ratios(duration, seed)
    rule = replication.batch_rule(3, "ONE", 3)
    roll = planner.Roll(nodes=3, batch=rule["batch"], restart_s=70.0)
    sim = plan_dynamic.Simulation(plan_dynamic.SyntheticThroughput(3), None, ratios, roll, None, seed)
    base = planner.baselines(sim.line, 0, sim.static, sim.optimum)

    def make_line(rows):
        return planner.Timeline(rows, roll, STEP_S, restart=sim.restart)

    rows = []
    for level in LEVELS["forecast"][size]:
        gains, fractions = [], []
        for repeat in range(SEEDS["forecast"][size] if level > 0 else 1):
            predict = _control.noisy_oracle(ratios, level, "%d/%d" % (seed, repeat)) if level else None
            predict = predict or _control.oracle(ratios)
            switches = _control.receding(sim.line, sim.rows_for, predict, 60, 0, make_line)
            value = sim.line.value(switches, 0)
            gains.append(_control.gain(value, base["static_optimized"]))
            fractions.append(_control.ratio(value, base["theoretical_best"]))
        rows.append(sweep_row("forecast", level, gains, fractions, "static-optimized"))
    return rows


def sweep_row(part, level, gains, fractions, reference):
    """One row of a noise sweep: the gains over the reference at one noise level, and the share of the best."""
    mean, low, high = summary(gains)
    return dict(
        part=part,
        level=level,
        runs=len(gains),
        gain_mean=mean,
        gain_min=low,
        gain_max=high,
        ratio_best=statistics.mean(fractions),
        gain_vs_stay=None,
        reference=reference,
    )


def duration_trace(write_s, phase_s=180.0, read=0.95, write=0.05):
    """Read ratios per step: read-heavy phase_s, write-heavy write_s, read-heavy until 3 x phase_s."""
    steps = int(round(3 * phase_s / STEP_S))
    first = int(round(phase_s / STEP_S))
    middle = int(round(max(0.0, write_s) / STEP_S))
    return [read] * first + [write] * min(middle, steps - first) + [read] * max(0, steps - first - middle)


def part_duration(size, seed, restart_s=30.0):
    """IRIS Fig. 8: [(x = actual - predicted write duration, gain of the plan vs static-optimized)]."""
    actual = duration_trace(180.0)
    rule = replication.batch_rule(3, "ONE", 3)
    roll = planner.Roll(nodes=3, batch=rule["batch"], restart_s=restart_s)
    sim = plan_dynamic.Simulation(plan_dynamic.SyntheticThroughput(3), None, actual, roll, None, seed)
    base = planner.baselines(sim.line, 0, sim.static, sim.optimum)
    start = sim.optimum[0]
    stay = sim.line.value([], start)
    rows = []
    step = 30 if size == "full" else 60
    for x in range(-180, 181, step):
        predicted = duration_trace(180.0 - x)
        plan = planner.best_plan(planner.Timeline(sim.rows_for(predicted), roll, STEP_S), start)
        value = sim.line.value([(s, b) for s, _a, b in plan["switches"]], start)
        rows.append(
            dict(
                part="duration",
                level=x,
                runs=1,
                gain_mean=_control.gain(value, base["static_optimized"]),
                gain_min=None,
                gain_max=None,
                ratio_best=_control.ratio(value, base["theoretical_best"]),
                gain_vs_stay=_control.gain(value, stay),
                reference="static-optimized",
            )
        )
    return rows


def part_predictor(size, seed):
    """OptimusCloud Fig. 14: [(kind, p, mean gain of ours over homogeneous-static, min, max)]."""
    duration = 3600.0 if size == "short" else 4 * 3600.0
    ratios = hetero_perf.trace("hpc-1", seed, duration)
    vms = hetero_perf.load_vms()
    rows = []
    for kind in ("throughput", "workload"):
        for level in LEVELS["predictor"][size]:
            gains, fractions = [], []
            for repeat in range(SEEDS["predictor"][size] if level > 0 else 1):
                noise = dict(node_noise=level) if kind == "throughput" else dict(forecast_noise=level)
                result = hetero_perf.run_case(
                    "cassandra",
                    vms,
                    ratios,
                    forecasts=("oracle",),
                    seed="%d/%d" % (seed, repeat),
                    systems=("ours",),
                    **noise,
                )
                gains.append(result["ours (oracle)"]["vs_static"])
                fractions.append(result["ours (oracle)"]["ratio_to_best"])
            rows.append(sweep_row("predictor-%s" % kind, level, gains, fractions, "homogeneous-static (perf/$)"))
    return rows


def percent(value):
    return "-" if value is None else "%+.1f %%" % (100 * value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--short", action="store_true", help="1 h traces, 2 seeds per noise level")
    parser.add_argument("--parts", nargs="+", default=list(PARTS), choices=list(PARTS))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--markdown")
    parser.add_argument("--csv")
    args = parser.parse_args()
    started = time.time()
    size = "short" if args.short else "full"
    print(
        "model: the synthetic function (IRIS Fig. 1 trade-offs) for forecast and duration, the analytic stores of "
        "benchmarks/_analytic.py for predictor; %s run, %d (forecast) and %d (predictor) noise seeds per level"
        % (size, SEEDS["forecast"][size], SEEDS["predictor"][size])
    )
    rows = []
    lines = []
    for part in args.parts:
        t = time.time()
        found = {"forecast": part_forecast, "duration": part_duration, "predictor": part_predictor}[part](
            size, args.seed
        )
        rows += found
        if part == "duration":
            header = (
                "| x = actual - predicted write duration (s) | ours vs static-optimized | vs staying | ours / best |"
            )
            body = [
                "| %+d | %s | %s | %.3f |"
                % (r["level"], percent(r["gain_mean"]), percent(r["gain_vs_stay"]), r["ratio_best"])
                for r in found
            ]
        else:
            header = "| noise on | level | runs | ours vs %s: mean | min | max | ours / best (mean) |" % (
                "static-optimized" if part == "forecast" else "homogeneous-static"
            )
            body = [
                "| %s | %g | %d | %s | %s | %s | %.3f |"
                % (
                    "forecast read ratio"
                    if r["part"] == "forecast"
                    else ("throughput predictor" if r["part"].endswith("throughput") else "workload forecast"),
                    r["level"],
                    r["runs"],
                    percent(r["gain_mean"]),
                    percent(r["gain_min"]),
                    percent(r["gain_max"]),
                    r["ratio_best"],
                )
                for r in found
            ]
        section = ["### %s (%s)" % (part, PAPER[part]), "", header, "|" + "---|" * header.count(" | ") + "---|", *body]
        section.append("")
        section.append("(%.1f s)" % (time.time() - t))
        print("\n".join(section) + "\n", flush=True)
        lines += section + [""]
    print("wall time %.1f s" % (time.time() - started))
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            for row in rows:
                writer.writerow({k: round(v, 5) if isinstance(v, float) else v for k, v in row.items()})


if __name__ == "__main__":
    main()
