"""Write a schedule file of workload phases for the load driver (tactician-load --schedule, module load's schedule):

  scripts/tactician-schedule hpc --jobs 5 --duration 1800 --rate 2000 --seed 7 -o hpc5.yml
  scripts/tactician-schedule abrupt --duration 900 --min-interval 30 --max-interval 180 --rate 1500 -o switch.yml
  scripts/tactician-schedule daily --duration 1200 --rate 1500 -o daily.yml

Generators (seeded, reproducible): the HPC job queue of seed 001 (upload / analysis / commit phases, 1, 5 or 10
concurrent jobs), abrupt read/write switching, and the daily-pattern mix. Prints the phases as a table.
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.tactician.nosql.plugins.module_utils.workload import schedules


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tactician-schedule", description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("kind", choices=["hpc", "abrupt", "daily"])
    parser.add_argument("-o", "--output", required=True, help="file to write (.yml/.yaml or .json)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=float, default=1800.0, help="seconds")
    parser.add_argument("--rate", type=float, default=1000.0, help="ops/s (0: unthrottled)")
    parser.add_argument("--step", type=float, default=30.0, help="seconds per step (T_d) of hpc and daily")
    parser.add_argument("--jobs", type=int, default=1, help="hpc: concurrent jobs")
    parser.add_argument("--min-interval", type=float, default=30.0, help="abrupt: shortest phase, seconds")
    parser.add_argument("--max-interval", type=float, default=600.0, help="abrupt: longest phase, seconds")
    args = parser.parse_args(argv)
    try:
        if args.kind == "hpc":
            schedule = schedules.hpc_job_queue(
                args.seed, concurrent_jobs=args.jobs, duration_s=args.duration, rate=args.rate, step_s=args.step
            )
        elif args.kind == "abrupt":
            schedule = schedules.abrupt_switching(
                args.seed,
                duration_s=args.duration,
                min_interval_s=args.min_interval,
                max_interval_s=args.max_interval,
                rate=args.rate,
            )
        else:
            schedule = schedules.daily_pattern(args.seed, duration_s=args.duration, rate=args.rate, step_s=args.step)
        schedules.save_schedule(schedule, args.output)
    except (ValueError, OSError) as exc:
        sys.exit("tactician-schedule: %s" % exc)
    at = 0.0
    for phase in schedule.phases:
        print(
            "%7.0f s  %6.0f s  %7.0f ops/s  read ratio %.2f  %s"
            % (at, phase.duration_s, phase.rate, phase.read_ratio, phase.label or "")
        )
        at += phase.duration_s
    print("%d phases, %.0f s, written to %s" % (len(schedule.phases), schedule.duration_s, args.output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
