# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Forecast accuracy on the dynamic workload generators: the share of forecasts within 10 % of the actual value,
1, 2, 5 and 15 minutes ahead, per generator and method, and the lookahead T_L each method would choose.

    .venv/bin/python benchmarks/forecast_accuracy.py                   # full run: 8 h of each workload
    .venv/bin/python benchmarks/forecast_accuracy.py --short           # smaller sizes, under a minute
    .venv/bin/python benchmarks/forecast_accuracy.py --noise 0.05 --markdown results/forecast.md --csv f.csv

What IRIS reported (seed 001, section 6.2, Table 1): ARIMA (20,1,20) chosen by BIC, 500 samples of history at
T_d = 30 s, accuracy = share of read-ratio predictions within 10 % of the actual, at 1 / 2 / 5 / 15 min ahead:
"Slow" (2 switches) 90.2 / 83.6 / 70.5 / 70.5 %, "Medium" 77.0 / 60.7 / 14.8 / 46.0 %, "Fast" (14 switches)
44.3 / 39.3 / 47.5 / 39.3 %, "Write" 45.9 / 59.0 / 36.1 / 37.7 %. With a 70 % threshold only "Slow" supports a
lookahead, so IRIS used T_L < 5 min on MG-RAST and the job queue's perfect forecast for the HPC workload.

Workloads (schedules.py generators, one series of T_d = 30 s steps each, seeded):
- hpc-1, hpc-5: the HPC job queue of IRIS 5.2 with 1 and 5 concurrent jobs at 200 ops/s (phases of U(200, 100K)
  operations then last about 4 min per job on average, like the queue traces of IRIS Fig. 3);
- abrupt-slow, abrupt-fast: the MG-RAST-like read ratio jumping between 0 and 1, intervals U(20, 90) min and
  U(1, 10) min (the "Slow" and "Fast" days of Table 1);
- daily: the Bus-Tracking mix with a daily rate shape, one simulated day every 4 h, 5 % jitter per step.
The job queue and abrupt generators run at a constant rate, and the daily one has a constant mix, so those
throughput (resp. read ratio) series are constant: every method is exact on them unless --noise adds measurement
noise (relative Gaussian noise, seeded, clipped to the field's range; the oracle still reads the noise-free
schedule, so its accuracy shows what the noise alone costs).

Methods: arima (d = 1 as IRIS' (20,1,20), p <= 3 and q <= 3 by BIC), arima-kpss (d in {0, 1} by KPSS tests first:
a stationary model forecasts a drift to the long-run mean, which a switching workload never sits at), markov (10 states,
mode), last-value (persistence) and schedule (the oracle: the known schedule, a reference line).

Sizes: full = 8 h (960 steps), 500 steps of history (as IRIS), an origin every 7 steps (62 origins; the paper's
Table 1 has 61 predictions per cell), ARIMA re-selects its order every 20 origins and re-estimates its parameters
at every origin (warm start). ARIMA takes nearly all the time: 260-370 s of CPU, so 2.5-3.5 min on 2 cores with
--jobs 2 (the default: one process per core, at most 2); --noise makes every throughput series non-constant and
needs about 500 s of CPU (4-4.5 min). --refit apply keeps the parameters between re-selections (only
the filter runs on the new data) and takes a third of the CPU for nearly the same accuracy. --short = 3 h, 200 steps
of history, an origin every 10 steps: 30-55 s of CPU, 15-30 s on 2 cores.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import random
import time
from concurrent.futures import ProcessPoolExecutor

from _common import ROOT, use_collection

use_collection()

from ansible_collections.tactician.nosql.plugins.module_utils.models import forecast, forecast_series
from ansible_collections.tactician.nosql.plugins.module_utils.workload import schedules

STEP_S = 30.0
HORIZONS_STEPS = (2, 4, 10, 30)
FIELDS = ("read_ratio", "throughput")
METHODS = (
    ("arima", "arima", {}),
    ("arima-kpss", "arima", {"min_d": 0}),
    ("markov", "markov", {}),
    ("last-value", "last_value", {}),
    ("schedule", "schedule", {}),
)
SIZES = {
    "full": {"duration_s": 8 * 3600.0, "history": 500, "stride": 7},
    "short": {"duration_s": 3 * 3600.0, "history": 200, "stride": 10},
}
PAPER = (
    "IRIS Table 1 (ARIMA, read ratio): Slow 90.2 / 83.6 / 70.5 / 70.5 %, Fast 44.3 / 39.3 / 47.5 / 39.3 % "
    "at 1 / 2 / 5 / 15 min"
)


def generators(seed, duration_s):
    """(name, schedule) of every workload, all seeded."""
    return [
        ("hpc-1", schedules.hpc_job_queue(seed, 1, duration_s, 200.0, step_s=STEP_S)),
        ("hpc-5", schedules.hpc_job_queue(seed, 5, duration_s, 200.0, step_s=STEP_S)),
        ("abrupt-slow", schedules.abrupt_switching(seed, duration_s, 1200.0, 5400.0, 1000.0)),
        ("abrupt-fast", schedules.abrupt_switching(seed, duration_s, 60.0, 600.0, 1000.0)),
        ("daily", schedules.daily_pattern(seed, duration_s, 1000.0, day_s=4 * 3600.0, step_s=STEP_S)),
    ]


def add_noise(values, field, noise, rng):
    """values x (1 + N(0, noise)), clipped to the field's valid range."""
    low, high = forecast_series.FIELD_BOUNDS[field]
    out = []
    for value in values:
        noisy = value * (1.0 + rng.gauss(0.0, noise)) if noise else value
        noisy = max(noisy, low) if low is not None else noisy
        out.append(min(noisy, high) if high is not None else noisy)
    return out


def run_one(task):
    """Accuracy of one method on one (workload, field), with the lookahead it would choose."""
    name, index, field, method_index, seed, size, noise, refit = task
    label, method, options = METHODS[method_index]
    if method == "arima":
        options = dict(options, refit=refit)
    params = SIZES[size]
    started = time.process_time()
    schedule = generators(seed, params["duration_s"])[index][1]
    clean = forecast_series.series_from_schedule(schedule, STEP_S, fields=(field,))
    rng = random.Random("%d/%s/%s" % (seed, name, field))
    observed = dict(clean, **{field: add_noise(clean[field], field, noise, rng)})
    result = forecast.evaluate(
        observed,
        methods=(method,),
        horizons_steps=HORIZONS_STEPS,
        fields=(field,),
        history=params["history"],
        stride=params["stride"],
        known=clean,
        options={method: options},
    )
    lookahead = forecast.lookaheads(result, step_s=STEP_S)[0]
    return {
        "field": field,
        "workload": name,
        "method": label,
        "accuracy": {row["horizon_steps"]: row["accuracy"] for row in result},
        "n": result[0]["n"],
        "lookahead_s": lookahead["lookahead_s"],
        "reason": lookahead["reason"],
        "cpu_s": time.process_time() - started,
    }


def horizon_label(steps):
    return "%g min" % (steps * STEP_S / 60.0)


def percent(value):
    return "n/a" if value is None else "%.1f %%" % (100.0 * value)


def lookahead_label(seconds):
    return "none" if not seconds else "%g min" % (seconds / 60.0)


def table_lines(rows, field, markdown=False):
    header = ["workload", "method", *(horizon_label(h) for h in HORIZONS_STEPS), "T_L (>= 70 %)", "n"]
    body = [
        [
            row["workload"],
            row["method"],
            *(percent(row["accuracy"][h]) for h in HORIZONS_STEPS),
            lookahead_label(row["lookahead_s"]),
            str(row["n"]),
        ]
        for row in rows
        if row["field"] == field
    ]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(cells) + " |" for cells in body]
        return lines
    widths = [max(len(cells[i]) for cells in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(widths[i]) if i < 2 else cell.rjust(widths[i]) for i, cell in enumerate(header))]
    lines.append("  ".join("-" * width for width in widths))
    for cells in body:
        lines.append(
            "  ".join(cell.ljust(widths[i]) if i < 2 else cell.rjust(widths[i]) for i, cell in enumerate(cells))
        )
    return lines


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["field", "workload", "method", *(horizon_label(h) for h in HORIZONS_STEPS), "lookahead_s", "n"]
        )
        for row in rows:
            accuracy = ["" if row["accuracy"][h] is None else "%.4f" % row["accuracy"][h] for h in HORIZONS_STEPS]
            writer.writerow([row["field"], row["workload"], row["method"], *accuracy, row["lookahead_s"], row["n"]])


def write_markdown(path, rows, settings):
    lines = ["# Forecast accuracy (share within 10 % of the actual)", "", settings, ""]
    for field in FIELDS:
        lines += ["## %s" % field, "", *table_lines(rows, field, markdown=True), ""]
    lines += [PAPER + ".", ""]
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--short", action="store_true", help="3 h workloads and 200 steps of history (< 1 min)")
    parser.add_argument("--noise", type=float, default=0.0, help="relative Gaussian measurement noise, e.g. 0.05")
    parser.add_argument("--seed", type=int, default=1, help="seed of the workloads and of the noise")
    parser.add_argument("--refit", choices=("warm", "apply"), default="warm", help="ARIMA refit between re-selections")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    parser.add_argument("--csv", metavar="PATH", help="write the table as CSV")
    parser.add_argument("--markdown", metavar="PATH", help="write the tables as Markdown")
    args = parser.parse_args()
    if args.noise < 0:
        parser.error("--noise: %r is below 0; choose a relative noise >= 0" % args.noise)
    if args.jobs < 1:
        parser.error("--jobs: %r is below 1" % args.jobs)
    size = "short" if args.short else "full"
    params = SIZES[size]
    started = time.perf_counter()
    names = [name for name, _schedule in generators(args.seed, params["duration_s"])]
    tasks = [
        (name, i, field, m, args.seed, size, args.noise, args.refit)
        for field in FIELDS
        for i, name in enumerate(names)
        for m in range(len(METHODS))
    ]
    # ARIMA tasks take nearly all the time: hand them out first so that both workers stay busy to the end.
    order = sorted(range(len(tasks)), key=lambda k: (METHODS[tasks[k][3]][1] != "arima", k))
    if args.jobs > 1:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            done = dict(zip(order, pool.map(run_one, [tasks[k] for k in order]), strict=True))
    else:
        done = {k: run_one(tasks[k]) for k in order}
    rows = [done[k] for k in range(len(tasks))]
    cpu = math.fsum(row["cpu_s"] for row in rows)
    wall = time.perf_counter() - started
    settings = (
        "%s run: %g h per workload at T_d = %g s, %d steps of history, an origin every %d steps, noise %g, seed %d, "
        "ARIMA refit %s"
        % (
            size,
            params["duration_s"] / 3600.0,
            STEP_S,
            params["history"],
            params["stride"],
            args.noise,
            args.seed,
            args.refit,
        )
    )
    print(settings)
    for field in FIELDS:
        print()
        print("%s: share of forecasts within 10 %% of the actual" % field)
        for line in table_lines(rows, field):
            print(line)
    print()
    print(PAPER)
    print("wall time %.1f s (%d worker process(es), %.1f s CPU in the workers)" % (wall, args.jobs, cpu))
    if args.csv:
        write_csv(args.csv, rows)
        print("wrote %s" % os.path.relpath(args.csv, ROOT))
    if args.markdown:
        write_markdown(args.markdown, rows, settings + "; wall time %.1f s." % wall)
        print("wrote %s" % os.path.relpath(args.markdown, ROOT))


if __name__ == "__main__":
    main()
