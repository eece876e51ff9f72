# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Scale-out of dynamic reconfiguration (seed 001, IRIS Fig. 5): the same trace on 4, 8 and 32 simulated nodes
(weak scaling: the data per node fixed, every node saturated), CL ONE and QUORUM, RF 3, three ways to roll a switch:

- rolling (IRIS): R = RF - CL nodes at a time (rolling.batch_rule), so a roll takes N / R batches of T_r: it grows
  with the cluster;
- aggressive (IRIS-AGGRESSIVE): every node at once, one batch of T_r, data unavailable meanwhile, but with the
  same cost-benefit planning (unlike naive, which switches at every change);
- complete-sets (OptimusCloud): the ring's complete-sets (hetero.complete_sets on a ring whose tokens were
  allocated for RF 3) rolled count(sets) - CL sets at a time: 2 batches at CL ONE, 3 at QUORUM, whatever N.

    .venv/bin/python benchmarks/scale_out.py              # full: 4 h of the HPC queue, 1 job at 50 ops/s
    .venv/bin/python benchmarks/scale_out.py --short      # 1 h
    .venv/bin/python benchmarks/scale_out.py --nodes 4 8 --cl ONE --jobs 5 --rate 200 --markdown s.md --csv s.csv

The trace: IRIS ran this on the workload of its Exp. 2 (the HPC queue). Here the queue has 1 job at 50 ops/s, so a
job phase of U(200, 100K) operations lasts about 17 min: long enough against a roll for a switch to pay off at
4 nodes, which is what scaling out then erodes. With 5 jobs, or at 200 ops/s (4 min phases), the theoretical best
is within 2 % of static-optimized and no switch pays off at any N (--jobs 5 --rate 200 shows it).

The controller is ours (receding horizon, planner.best_plan over a 30 min lookahead) with the job queue's perfect
forecast (oracle, as IRIS for the HPC queue), started from the default configuration (as IRIS) and from the
static-optimized one (what switching adds once the static tuning is done). Throughput: the synthetic function of
benchmarks/plan_dynamic.py (IRIS Fig. 1's trade-offs) by default. The lab surrogate (--f-ops surrogate) predicts
one configuration best for every workload, so there is nothing to switch and nothing to scale. Totals scale with
N (weak scaling), so the table shows ratios: ours over static-optimized and over the theoretical best.

What IRIS reported (Fig. 5, text): the gain over static-optimized shrinks as N grows, since T_R = N T_r / R grows;
with QUORUM the roll is longer but each batch costs less, so it is not much worse; the aggressive variant stays
close to the theoretical best at every scale, paying one short outage per switch.
"""

from __future__ import annotations

import argparse
import csv
import math
import time

from _common import use_collection

use_collection()

import _control
import plan_dynamic

from ansible_collections.tactician.nosql.plugins.module_utils.core import replication
from ansible_collections.tactician.nosql.plugins.module_utils.models import forecast_series
from ansible_collections.tactician.nosql.plugins.module_utils.planning import complete_sets as hetero
from ansible_collections.tactician.nosql.plugins.module_utils.planning import cost_benefit as planner
from ansible_collections.tactician.nosql.plugins.module_utils.workload import schedules

STEP_S = plan_dynamic.STEP_S
RF = 3
MODES = ("rolling", "aggressive", "complete-sets")
PAPER = (
    "IRIS Fig. 5: gain over static-optimized falls with N for rolling IRIS (T_R grows linearly), QUORUM not much "
    "worse, IRIS-AGGRESSIVE stays close to the theoretical best at 4, 8 and 32 servers"
)


def allocated_ring(nodes, rf=RF):
    """{node: [tokens]} of a ring whose tokens were allocated for rf: the positions cycle through rf groups of
    nodes, so every range has one replica in each group (as allocate_tokens_for_local_replication_factor aims)."""
    sizes = [nodes // rf + (1 if i < nodes % rf else 0) for i in range(rf)]
    if min(sizes) < 1:
        raise ValueError("nodes: %d is fewer than rf %d" % (nodes, rf))
    per = math.lcm(*sizes)
    first = [sum(sizes[:i]) for i in range(rf)]
    owners = ["n%03d" % (first[s] + j % sizes[s]) for j in range(per) for s in range(rf)]
    span = 2**64 // len(owners)
    tokens = {}
    for i, owner in enumerate(owners):
        tokens.setdefault(owner, []).append(-(2**63) + i * span)
    return tokens


def roll_for(mode, nodes, cl, restart_s, configs):
    """(Roll, layouts or None, rule text) of a mode on a cluster of nodes."""
    if mode == "rolling":
        rule = replication.batch_rule(RF, cl, nodes)
        return planner.Roll(nodes=nodes, batch=rule["batch"], restart_s=restart_s), None, rule["rule"]
    if mode == "aggressive":
        roll = planner.Roll(nodes=nodes, batch=nodes, restart_s=restart_s)
        return roll, None, "aggressive: %d of %d nodes at a time" % (nodes, nodes)
    sets = hetero.complete_sets(hetero.cassandra_replicas(allocated_ring(nodes), RF))
    sizes = [len(s) for s in sets]
    rule = replication.batch_rule(len(sets), cl, nodes, sets=len(sets), nodes_per_set=max(sizes))
    assignments = [tuple((0, c) for _s in sets) for c in range(configs)]
    layouts = hetero.set_layouts(assignments, sizes, rule["batch_sets"], t_config_s=restart_s, t_vm_s=restart_s)
    roll = planner.Roll(nodes=nodes, batch=rule["batch"], restart_s=restart_s)
    return (
        roll,
        layouts,
        "%d sets of %s nodes, %d set(s) at a time"
        % (
            len(sets),
            "/".join(map(str, sizes)),
            rule["batch_sets"],
        ),
    )


def run(sim, ratios, nodes, cl, mode, restart_s, lookahead, base_nodes):
    """One (N, CL, mode): the ratios of ours (from default and from static-opt) and the roll's length."""
    roll, layouts, rule = roll_for(mode, nodes, cl, restart_s, len(sim.candidates))
    line = planner.Timeline(sim.F, roll, STEP_S, restart=sim.restart, layouts=layouts)

    def make_line(rows):
        return planner.Timeline(rows, roll, STEP_S, restart=sim.restart, layouts=layouts)

    base = planner.baselines(line, 0, sim.static, sim.optimum)
    predict = _control.oracle(ratios)
    out = dict(
        nodes=nodes,
        cl=cl,
        mode=mode,
        rule=rule,
        roll_s=line.layout_of(0, 1)[1] if len(sim.candidates) > 1 else 0.0,
    )
    scale = nodes / float(base_nodes)
    cache = {}  # the same oracle forecast from both starts: each step's predicted timeline is built once
    for start_name, start in (("default", 0), ("static", sim.static)):
        switches = _control.receding(line, sim.rows_for, predict, lookahead, start, make_line, cache=cache)
        value = line.value(switches, start)
        out["ours_from_%s" % start_name] = value * scale
        out["switches_from_%s" % start_name] = len(line.applied(switches, start))
    for key in ("default", "static_optimized", "naive", "theoretical_best"):
        out[key] = base[key] * scale
    best, static = out["theoretical_best"], out["static_optimized"]
    out["ratio_best_from_default"] = _control.ratio(out["ours_from_default"], best)
    out["gain_static_from_default"] = _control.gain(out["ours_from_default"], static)
    out["gain_static_from_static"] = _control.gain(out["ours_from_static"], static)
    out["best_vs_static"] = _control.gain(best, static)
    out["naive_vs_default"] = _control.gain(out["naive"], out["default"])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--short", action="store_true", help="1 h trace instead of 4 h")
    parser.add_argument("--nodes", type=int, nargs="+", default=[4, 8, 32])
    parser.add_argument("--cl", nargs="+", default=["ONE", "QUORUM"], choices=["ONE", "QUORUM"])
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--jobs", type=int, default=1, help="concurrent jobs of the HPC queue")
    parser.add_argument("--rate", type=float, default=50.0, help="ops/s of the whole queue (sets how long phases last)")
    parser.add_argument("--restart-s", type=float, default=70.0, help="T_r, seconds a batch is offline")
    parser.add_argument("--lookahead-s", type=float, default=1800.0)
    parser.add_argument("--f-ops", default="synthetic", choices=["synthetic", "surrogate"])
    parser.add_argument("--model", default=plan_dynamic.MODEL)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--markdown")
    parser.add_argument("--csv")
    args = parser.parse_args()
    started = time.time()
    duration = 3600.0 if args.short else 4 * 3600.0
    schedule = schedules.hpc_job_queue(args.seed, args.jobs, duration, args.rate, step_s=STEP_S)
    ratios = forecast_series.series_from_schedule(schedule, STEP_S, fields=("read_ratio",))["read_ratio"]
    base_nodes = 3
    if args.f_ops == "surrogate":
        f_ops, catalog, feasible, note = plan_dynamic.load_surrogate(args.model, base_nodes, "surrogate")
    else:
        f_ops, catalog, feasible = plan_dynamic.SyntheticThroughput(base_nodes), None, None
        note = "model: the synthetic function (IRIS Fig. 1 trade-offs, benchmarks/plan_dynamic.py SYNTHETIC)"
    print(note)
    rule = replication.batch_rule(RF, "ONE", base_nodes)
    roll = planner.Roll(nodes=base_nodes, batch=rule["batch"], restart_s=args.restart_s)
    sim = plan_dynamic.Simulation(f_ops, catalog, ratios, roll, feasible, args.seed)
    lookahead = int(args.lookahead_s // STEP_S)
    settings = (
        "HPC queue, %d jobs, %g h (%d steps of %g s); RF %d; T_r %g s per batch; lookahead %g min; forecast: the "
        "job queue (oracle); %d candidate configurations"
        % (
            args.jobs,
            duration / 3600.0,
            len(ratios),
            STEP_S,
            RF,
            args.restart_s,
            lookahead * STEP_S / 60.0,
            len(sim.candidates),
        )
    )
    print(settings)
    header = [
        "nodes",
        "CL",
        "mode",
        "roll",
        "roll s",
        "ours / best",
        "ours vs static",
        "ours from static-opt vs static",
        "best vs static",
        "switches",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    print("\n".join(lines))
    rows = []
    for nodes in args.nodes:
        for cl in args.cl:
            for mode in args.modes:
                row = run(sim, ratios, nodes, cl, mode, args.restart_s, lookahead, base_nodes)
                rows.append(row)
                lines.append(
                    "| %d | %s | %s | %s | %.0f | %.3f | %+.1f %% | %+.1f %% | %+.1f %% | %d / %d |"
                    % (
                        nodes,
                        cl,
                        mode,
                        row["rule"],
                        row["roll_s"],
                        row["ratio_best_from_default"],
                        100 * row["gain_static_from_default"],
                        100 * row["gain_static_from_static"],
                        100 * row["best_vs_static"],
                        row["switches_from_default"],
                        row["switches_from_static"],
                    )
                )
                print(lines[-1], flush=True)
    naive = rows[0]["naive_vs_default"] if rows else 0.0
    notes = [note, settings, "naive (every node at once at every change) vs default: %+.1f %%" % (100 * naive), PAPER]
    print("\n".join(notes[2:]))
    print("wall time %.1f s" % (time.time() - started))
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n\n" + "".join("- %s\n" % n for n in notes))
    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            for row in rows:
                writer.writerow({k: round(v, 5) if isinstance(v, float) else v for k, v in row.items()})


if __name__ == "__main__":
    main()
