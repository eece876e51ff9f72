# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Real tuning gain on the bench Cassandra node (seed 004): race each workload within a time budget, then measure
the default, the raced configuration and the surrogate + GA configuration side by side, round after round. Prints
ops/s per configuration, the speedup over the default (geometric mean of the per-round ratios) with a 95 %
confidence interval (paired by round), and the paired t-test's p-value (both on the logarithms).

The same budget: after the race, the surrogate + GA gets as many runs as the race had, of the same kind, on a
design of its own (a Latin hypercube over the raced parameters, the default first); a surrogate fitted on those
runs alone is searched by the GA (--surrogate budget, the default). --surrogate shipped searches the bench
surrogate fitted offline instead (catalog/models/cassandra-bench.json: 54 runs of the training design, not
counted in any budget).

Two spaces. --space full (the default of the script) races the training design (restart parameters too): every run
is on a freshly restarted node, warmed up, with its rows loaded again (cold, as in seed 004), about 40 s a run on
two CPUs. --space live races the parameters Cassandra changes live (tactician_live_design) on one JVM warmed up
once, on the rows in place, about 15 s a run: what fits the full benchmark set (benchmarks/run.py). Both give
every configuration the same kind of run, so none profits from a JVM the others did not get.

    .venv/bin/python benchmarks/tuning_gain.py                        # YCSB A and E, 60 min races, 10 rounds
    .venv/bin/python benchmarks/tuning_gain.py --short                # 10 min races, 3 rounds
    .venv/bin/python benchmarks/tuning_gain.py --space live --budget-s 240 --run-s 10 --warmup-s 20

The bench node must be up (ansible-playbook -i inventories/bench playbooks/lab_up.yml) and nothing else running:
every number is a throughput on this machine's two CPUs. Races and comparisons resume: an interrupted run picks up
where it stopped (delete .lab/bench/races and .lab/bench/datasets/compare-* and design-* to start over).

What the irace study reported (seed 004): speedups of 6-30 % over the default after budgets of 500-2000
evaluations (8-48 h); with the default seeded in, good results earlier where the default is good.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

from _common import ROOT, use_collection

use_collection(integration=True)

from ansible_run import run_playbook

from ansible_collections.tactician.nosql.plugins.module_utils.models import model_files as modelstore
from ansible_collections.tactician.nosql.plugins.module_utils.models import surrogate as sg
from ansible_collections.tactician.nosql.plugins.module_utils.models import surrogate_design, surrogate_validation
from ansible_collections.tactician.nosql.plugins.module_utils.models import training as modeling
from ansible_collections.tactician.nosql.plugins.module_utils.planning import (
    racing,
    tuner,
)
from ansible_collections.tactician.nosql.plugins.module_utils.trials import designs

INVENTORY = os.path.join(ROOT, "inventories", "bench")
LAB = os.path.join(ROOT, ".lab", "bench")
MODEL = os.path.join(LAB, "models", "cassandra-surrogate.json")
# The bench surrogate fitted on this project's bench node (catalog/models/cassandra-bench.dataset.jsonl).
SHIPPED_MODEL = os.path.join(ROOT, "catalog", "models", "cassandra-bench.json")
RECORDS, THREADS, DISTRIBUTION = 20000, 32, "zipfian"
MIXES = {"a": {"read": 0.5, "update": 0.5}, "b": {"read": 0.95, "update": 0.05}, "e": {"scan": 0.95, "insert": 0.05}}


def work_of(workload):
    return {"mix": MIXES[workload], "requestdistribution": DISTRIBUTION, "records": RECORDS, "threads": THREADS}


def ga_config(model, workload, default, hardware=None, feasible=None, space=None):
    """The surrogate + GA optimum for the workload, the default seeded in. With space (the raced parameters) the GA
    searches those only and keeps the surrogate's other parameters at their defaults; without, the enumerated
    parameters (the compaction strategy) stay at the default's."""
    heap_mb = (hardware or {}).get("heap_mb")
    if space:
        default = model.space.complete(dict(default), heap_mb=heap_mb)
        fixed = {n: default[n] for n in model.space.parameters if n not in space}
    else:
        fixed = {n: default[n] for n in model.space.parameters if n in default and model.space.kind(n) == "enum"}
    found = tuner.tune(
        tuner.Throughput(model, hardware=hardware),
        [work_of(workload)],
        feasible=feasible,
        fixed=fixed or None,
        include=[default],
        seed=0,
        generations=100,
    )
    config = dict(found["config"])
    return {n: config[n] for n in space} if space else config


def shipped_config(workload, default, model_file, space=None):
    """The surrogate + GA optimum on a surrogate fitted offline (the bench surrogate), or None without one."""
    if not os.path.exists(model_file):
        return None
    data, metadata = modelstore.load_model(model_file, kind="surrogate", store="cassandra")
    model = sg.Surrogate.from_dict(data)
    hardware = metadata["hardware_profile"]
    feasible = surrogate_design.feasible_by_catalog(
        model.space.catalog, memory_mb=hardware["ram_gb"] * 1024, heap_mb=hardware.get("heap_mb")
    )
    return ga_config(model, workload, default, hardware=hardware, feasible=feasible, space=space)


def budget_design(race, runs):
    """The surrogate's own design for the race's budget: as many configurations as the race ran evaluations, a
    Latin hypercube over the raced parameters with the default as its first point, one run each."""
    found = surrogate_design.design(race.space, runs, method="lhs", seed=race.seed, feasible=race.feasible)
    # The design's points are distinct already; the race's fixed parameters (none in the live space) keep their value.
    return {"d%02d" % index: dict(config, **race.fixed) for index, config in enumerate(found["points"])}


def budget_surrogate(race, rows):
    """A surrogate fitted on the design's runs only (the race's space), and its leave-one-out R^2."""
    measured = [r for r in rows if r.get("ops_per_s") is not None]
    if len(measured) < 4:
        raise SystemExit("design: %d measured runs; a surrogate needs at least 4" % len(measured))
    r2 = surrogate_validation.cross_validate(measured, k=len(measured), space=race.space)["pooled"]["r2"]
    return sg.Surrogate(race.space, seed=0).fit(measured), r2


def run_value(row):
    """A comparison run's throughput per unit of CPU speed when the probe ran (--space shaped), else its ops/s."""
    per = row.get("ops_per_speed")
    try:
        return float(per)
    except (TypeError, ValueError):
        return float(row["ops_per_s"])


def interval(ratios):
    """Geometric mean of the per-round ratios and its 95 % t interval (on the logarithms, so that a round where
    the default happened to be slow does not weigh more than one where it happened to be fast), as every design of
    trials/designs.py reads them."""
    found = designs.summarize(ratios)
    low, high = found["t_interval"] or (float("nan"), float("nan"))
    return found["ratio"], low, high


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--short", action="store_true", help="10 min races, 3 rounds")
    parser.add_argument("--workloads", nargs="+", default=["a", "e"])
    parser.add_argument(
        "--space",
        choices=["full", "live", "shaped"],
        default="full",
        help="full: the training design, a restart and a cold load per run; live: the live parameters on one warm "
        "JVM and the rows in place; shaped: the live parameters of tactician_shaped_design on the node shape of a "
        "real one, its data set of 4M rows in place (docs/lab.md) (default full)",
    )
    parser.add_argument("--budget-s", type=float, help="race budget in seconds of runs (default 3600, short 600)")
    parser.add_argument("--rounds", type=int, help="side-by-side rounds (default 10, short 3)")
    parser.add_argument("--run-s", type=int, help="seconds of each measured run, races and rounds (default 20)")
    parser.add_argument("--warmup-s", type=int, help="seconds of load before each measured run (default 20)")
    parser.add_argument(
        "--surrogate",
        choices=["budget", "shipped"],
        default="budget",
        help="budget: the surrogate + GA gets the race's budget, a design of as many runs as the race had (of the "
        "same kind), fitted and searched after the race; shipped: the surrogate fitted offline (--model), whose "
        "training runs are not counted (default budget)",
    )
    parser.add_argument(
        "--model",
        default=MODEL,
        help="the bench surrogate for the surrogate + GA configuration (default %s, else the one the repository "
        "ships, %s)" % (os.path.relpath(MODEL, ROOT), os.path.relpath(SHIPPED_MODEL, ROOT)),
    )
    parser.add_argument(
        "--work-dir",
        help="where the race histories and the comparisons' rows go (default .lab/bench/races and "
        ".lab/bench/datasets, where an interrupted run resumes); a new folder starts from scratch",
    )
    args = parser.parse_args()
    if args.work_dir:
        # Absolute: the playbooks resolve a relative path against their own folder, not the current one.
        args.work_dir = os.path.abspath(args.work_dir)
        os.makedirs(args.work_dir, exist_ok=True)
    model_file = args.model if os.path.exists(args.model) or args.model != MODEL else SHIPPED_MODEL
    if args.surrogate == "budget":
        print("surrogate + GA: a surrogate fitted on a design of as many runs as the race had", flush=True)
    else:
        print("surrogate + GA: the surrogate %s" % os.path.relpath(model_file, ROOT), flush=True)
    # Variables of the race (tactician_race*) and of the comparison (tactician_compare*) playbooks.
    playbook_vars = {}
    if args.run_s:
        playbook_vars.update(tactician_race_run_s=args.run_s, tactician_compare_run_s=args.run_s)
    if args.warmup_s:
        playbook_vars.update(tactician_race_warmup_s=args.warmup_s, tactician_compare_warmup_s=args.warmup_s)
    live = args.space in ("live", "shaped")
    if args.space == "shaped":
        import _shape

        _shape.ensure_loaded()
        print("node shape: %s" % _shape.describe(), flush=True)
        playbook_vars.update(
            tactician_race="{{ tactician_shaped_design }}",
            tactician_race_keyspace=_shape.KEYSPACE,
            tactician_compare_keyspace=_shape.KEYSPACE,
            tactician_race_records=_shape.RECORDS,
            tactician_compare_records=_shape.RECORDS,
            tactician_race_threads=64,
            tactician_compare_threads=64,
            tactician_race_load_rows=False,
            tactician_compare_load_rows=False,
            # The node's CPU speed changes by itself: races and comparisons judge throughput per unit of it.
            tactician_race_speed_probe_cpus="upper-half",
            tactician_compare_speed_probe_cpus="upper-half",
        )
    if live:
        playbook_vars.update(
            tactician_race=playbook_vars.get("tactician_race", "{{ tactician_live_design }}"),
            tactician_race_restart=False,
            tactician_race_reload=False,
            tactician_compare_restart=False,
            tactician_compare_reload=False,
        )
    suffix = ("-" + args.space if live else "") + ("-short" if args.short else "")
    budget = args.budget_s or (600.0 if args.short else 3600.0)
    rounds = args.rounds or (3 if args.short else 10)
    started = time.time()
    rows = []

    def dataset_file(name):
        return os.path.join(args.work_dir or os.path.join(LAB, "datasets"), name)

    def compare(workload, configs, default, rounds, dataset, what):
        """Runs of configurations side by side (playbooks/compare.yml) into a dataset; exits when they fail."""
        done = run_playbook(
            "playbooks/compare.yml",
            INVENTORY,
            dict(
                tactician_compare_workload=workload,
                tactician_compare_configs=configs,
                tactician_compare_defaults=default,
                tactician_compare_rounds=rounds,
                tactician_compare_dataset=dataset,
                **{k: v for k, v in playbook_vars.items() if k.startswith("tactician_compare")},
            ),
        )
        if done.returncode != 0:
            sys.exit("%s of %s failed:\n%s" % (what, workload, done.stderr[-3000:]))

    for workload in args.workloads:
        history = os.path.join(
            args.work_dir or os.path.join(LAB, "races"),
            "cassandra-ycsb-%s%s.jsonl" % (workload, suffix),
        )
        t = time.time()
        race = run_playbook(
            "playbooks/tune.yml",
            INVENTORY,
            dict(
                tactician_race_workload=workload,
                tactician_race_budget_s=budget,
                tactician_race_history=history,
                **{k: v for k, v in playbook_vars.items() if k.startswith("tactician_race")},
            ),
        )
        if race.returncode != 0:
            sys.exit("race of %s failed:\n%s" % (workload, race.stderr[-3000:]))
        race_s = time.time() - t
        finished = racing.Race.from_history(history)
        pending, result = finished.ask(history)
        assert not pending, "the race of %s did not finish" % workload
        default = finished.default_config()
        # "default again": the default against itself in the same rounds, the A/A noise floor of the comparison.
        configs = {"default": {}, "default again": {}, "raced": result["best"]["config"]}
        times = "race %.0f s (%d runs)" % (race_s, result["evaluations"])
        if args.surrogate == "budget":
            # The same budget: as many runs of the same kind as the race had, on a design of the surrogate's own.
            design = budget_design(finished, result["evaluations"])
            t = time.time()
            design_file = dataset_file("design-%s%s.jsonl" % (workload, suffix))
            compare(workload, design, default, 1, design_file, "design")
            model, r2 = budget_surrogate(finished, modeling.read_dataset(design_file))
            times += ", design %.0f s (%d runs, leave-one-out R^2 %s)" % (
                time.time() - t,
                len(design),
                modeling.r2_text(r2),
            )
            configs["surrogate+GA"] = ga_config(model, workload, default, feasible=finished.feasible)
        else:
            ga = shipped_config(workload, default, model_file, space=sorted(default) if live else None)
            if ga:
                configs["surrogate+GA"] = ga
        dataset = dataset_file("compare-%s%s.jsonl" % (workload, suffix))
        t = time.time()
        compare(workload, configs, default, rounds, dataset, "comparison")
        times += ", comparison %.0f s" % (time.time() - t)
        measured = {}
        for row in modeling.read_dataset(dataset):
            measured.setdefault(row["name"], {})[int(row["round"])] = run_value(row)
        base = measured["default"]
        for name in configs:
            values = measured.get(name, {})
            common = sorted(set(values) & set(base))
            ratios = [values[r] / base[r] for r in common if base[r] > 0]
            mean, low, high = interval(ratios) if ratios else (float("nan"),) * 3
            p_value = float("nan")
            if name != "default" and len(common) >= 2:
                from scipy import stats

                # Paired t-test on the logarithms: the same test as the interval's.
                p_value = float(
                    stats.ttest_rel([math.log(values[r]) for r in common], [math.log(base[r]) for r in common]).pvalue
                )
            rows.append(
                "| %s | %s | %d | %s | %.3f [%.3f, %.3f] | %s | %s |"
                % (
                    workload.upper(),
                    name,
                    len(common),
                    f"{statistics.mean(values[r] for r in common):,.0f}" if common else "-",
                    mean,
                    low,
                    high,
                    "%.3g" % p_value if name != "default" else "-",
                    json.dumps(configs[name] if name != "default" else default, sort_keys=True)
                    if name != "default"
                    else times,
                )
            )
        print("\n".join(rows[-len(configs) :]), flush=True)
    print()
    print(
        "| workload | configuration | rounds | %s (mean) | speedup vs default, geometric mean [95 %% CI] | paired t p"
        " | configuration / times |" % ("ops/s per unit of CPU speed" if args.space == "shaped" else "ops/s")
    )
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(
        "\nirace study (seed 004): +6 to +30 %% over default after 8-48 h; wall time %.0f s" % (time.time() - started)
    )


if __name__ == "__main__":
    main()
