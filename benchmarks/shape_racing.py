# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Iterated racing on the bench node shape: the model-free static tuner (planning/racing.py, seed 004's irace) with
real, warm windows as its evaluations, on the same knobs and the same budget of measured windows as the surrogate
+ GA (benchmarks/shape_training.py then shape_tuning.py).

The space: the live knobs of shape_training.py (concurrent_reads, key_cache_size, compaction_throughput, in its
ranges) and the compression chunk length of the twin tables (4 or 16 KiB: the same rows written at each, so a
configuration's chunk length picks the table its window reads; a rewrite of the table is not raced). The defaults
are seeded into the first iteration, as tune.yml does.

An evaluation is one window of a warm client: the configuration's live knobs set on the bench node, --settle-s
left out, then --window-s measured (ops/s; the node's and the client side's CPU and the CPU speed kept beside it
in the history). The race asks for every evaluation it needs before its next decision (the configurations alive on
the next instance); they are run grouped by table, one client per table, in a shuffled order, the table warmed
first (--warmup-s the first time, --rewarm-s after the other table). The budget counts windows: the surrogate the
side-by-side runs search was fitted on 16 windows of workload B (8 per table) and 16 of A.

    .venv/bin/ansible-playbook -i inventories/bench playbooks/lab_up.yml
    .venv/bin/python benchmarks/shape_racing.py --workload b --budget 16
    .venv/bin/python benchmarks/shape_tuning.py --workloads b --design concurrent --rounds 4 --warmup-s 300 \
        --table-state --raced .lab/bench/shape-racing/race-b-<stamp>.jsonl
    .venv/bin/python benchmarks/shape_racing.py --dry-run --budget 16    # the race on a made-up response, no node

--row-cache puts the twin tables' row cache in the space too (0-256 MiB, off in the defaults as in Cassandra's
and cassandra_latest.yaml's): the knob with the largest measured effect on this node shape (docs/benchmarks.md,
"The row cache, filled at last"). Every switch of it alters both tables' caching, so the clients re-prepare; a
window that turns it on starts with an empty cache (--settle-s is the only fill it gets), and turning it off
leaves the node's page cache smaller for a while: the race's windows carry that state, as its drift.

--formats puts the SSTable format in the space too (big, the defaults', or bti, cassandra_latest.yaml's: a restart
and a rewrite of the table on one node). As the chunk length picks a twin table, the format picks a twin node: the
bench node reads BIG files, inventories/bench-bti (the bench node's settings with storage_compatibility_mode NONE
and the BTI format, the same shape, started for the race and stopped after) the same rows written as BTI files.
Each node keeps its own page cache warm, so a window on the other node needs no rewarm; the rewrite a switch of
format costs a real node is not raced (the catalog's sstable_format gives its price).

The race's history (tactician.race/v1, as tune.yml writes) is the input of shape_tuning.py --raced, which re-measures
the race's best beside the defaults and the surrogate + GA's configuration in a run that took no part in either.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import sys
import time

import knob_effects as ke
import shape_training as st
from _common import ROOT

from ansible_collections.tactician.nosql.plugins.module_utils.core import catalog
from ansible_collections.tactician.nosql.plugins.module_utils.models import surrogate_features
from ansible_collections.tactician.nosql.plugins.module_utils.planning import racing
from ansible_collections.tactician.nosql.plugins.module_utils.trials import speed_probe

CHUNKS = (4, 16)
FORMAT = "sstable_format"
FORMATS = ("big", "bti")


def format_node(config, node=None):
    """The node a configuration's window runs on: with the format in the space, the twin node of its format (BIG
    files on the bench node, BTI files on the bti node); else node (the raced node)."""
    if FORMAT not in config:
        return node or ke._shape.BENCH_NODE
    return ke._shape.BTI_NODE if config[FORMAT] == "bti" else ke._shape.BENCH_NODE


def _value(value):
    """A raced value as the history keeps it: numbers as whole numbers, a choice (the format) as its name."""
    return value if isinstance(value, str) else int(value)


def make_race(spec, budget, seed, first_test, key_cache_mb, row_cache=False, on_latest=False, formats=False):
    """The race over the live knobs and the twin tables' chunk length, the defaults (16 KiB) seeded in; with
    row_cache, the twin tables' row cache too (off in the defaults). on_latest: on the latest node, seeded with
    cassandra_latest.yaml's own values: its one table (16 KiB, BTI files, which use no key cache: the key cache is
    left out), the other live knobs and the row cache raced on top of the experts' configuration. formats: the
    SSTable format too (big or bti, the twin nodes), the defaults seeded in each."""
    ranges = dict(st.design_ranges(row_cache), **{st.CHUNK: [min(CHUNKS), max(CHUNKS)]})
    defaults = dict(st.design_defaults(key_cache_mb, row_cache), **{st.CHUNK: 16})
    fixed = None
    if formats:
        # The defaults seeded in each format (with 16 evaluations a race samples 5 or 6 configurations, which may
        # all draw one format); the key cache stays in the space (BTI files do not use it).
        ranges[FORMAT] = list(FORMATS)
        defaults[FORMAT] = "big"
    if on_latest:
        ranges.pop("key_cache_size")
        defaults.pop("key_cache_size")
        fixed = {st.CHUNK: 16}
    space = surrogate_features.FeatureSpace(
        catalog.Catalog.for_store("cassandra", "5.0"), list(ranges), ranges=ranges, defaults=defaults
    )

    def twin_table(config):
        # Only the chunk lengths a twin table is written at can be measured without rewriting a table.
        ok = int(config.get(st.CHUNK, 16)) in CHUNKS
        return ok, "" if ok else "%s: only the twin tables' %s KiB" % (st.CHUNK, " and ".join(map(str, CHUNKS)))

    node = {"node": ke._shape.LATEST_NODE.name} if on_latest else {}
    return racing.Race(
        space,
        [dict(node, workload=spec, seed=index) for index in range(budget)],
        budget_evaluations=budget,
        seed=seed,
        initial=[defaults] + ([dict(defaults, **{FORMAT: "bti"})] if formats else []),
        feasible=twin_table,
        first_test=first_test,
        each_test=1,
        fixed=fixed,
    )


def race_node(header):
    """The node a race ran on (its history's header): the latest node when its instances say so, else the bench
    node."""
    instances = header.get("instances")
    on_latest = bool(instances) and instances[0].get("node") == ke._shape.LATEST_NODE.name
    return ke._shape.LATEST_NODE if on_latest else ke._shape.BENCH_NODE


def newest_race(folder, workload):
    """The history of the newest finished race of this workload in folder (shape_racing.py's run folder), or None:
    how `make bench` hands the race it ran to shape_tuning.py --raced."""
    return newest_race_best(folder, workload)[0]


def newest_race_best(folder, workload):
    """(newest_race(), its race_best()), each history read once; (None, None) when there is none."""
    found = glob.glob(os.path.join(folder, "race-%s-*.jsonl" % workload))
    for path in sorted(found, key=os.path.getmtime, reverse=True):
        try:
            best = race_best(path)
        except SystemExit:
            continue  # not a race history, or a race stopped before its end
        return path, best
    return None, None


def race_best(path):
    """(best configuration, the race's result) of a finished race's history written by this script."""
    history = racing.TrialHistory(path)
    header = history.header
    if not header or not header.get("instances"):
        raise SystemExit("--raced: %s is not a race history (no tactician.race/v1 header)" % path)
    node = race_node(header)
    race = make_race(
        header["instances"][0]["workload"],
        header["budget_evaluations"],
        header["seed"],
        header["first_test"],
        header["initial"][0].get("key_cache_size", 0),
        row_cache=st.ROW_CACHE in header["initial"][0],
        on_latest=node is ke._shape.LATEST_NODE,
        formats=FORMAT in header["initial"][0],
    )
    pending, result = race.ask(history)
    if pending:
        raise SystemExit(
            "--raced: the race of %s has not finished (%d evaluations pending)" % (path, result["pending"])
        )
    best = {k: _value(v) for k, v in result["best"]["config"].items()}
    return best, dict(result, node=format_node(best, node).name)


def live_part(config):
    return {k: int(v) for k, v in config.items() if k in st.LIVE_KNOBS}


def measure(spec, pending, args, samplers, probe, log, warm, rng, reset, node=None):
    """Run the pending evaluations, grouped by node and table: [(config, index, record)]. samplers: {node name: its
    window sampler} of the raced nodes. warm: {node name: the table it last
    read} (updated; each node's page cache is its own). reset: the live knobs set back after each table's windows,
    the node's own defaults (its key cache as found at the start, not a constant: the defaults of shape_training
    have none)."""
    groups = {}
    for entry in pending:
        where = format_node(entry["config"], node)
        for instance in entry["instances"]:
            key = (where.name, int(entry["config"][st.CHUNK]))
            groups.setdefault(key, (where, []))[1].append((entry["config"], instance["index"]))
    done = []
    # The tables each node read last first (warm already), then the other tables of those nodes, then a node's first.
    for key in sorted(groups, key=lambda k: (warm.get(k[0]) != k[1], k[0] not in warm, k)):
        where, items = groups[key]
        chunk = key[1]
        rng.shuffle(items)
        last = warm.get(where.name)
        warmup = 0.0 if last == chunk else (args.rewarm_s if last else args.warmup_s)
        log(
            "%s, %s KiB: %s %d windows"
            % (where.name, chunk, "warm-up %d s, then" % warmup if warmup else "warm,", len(items))
        )
        measured = st.table_windows(
            spec,
            chunk,
            [live_part(c) for c, _i in items],
            args,
            samplers.get(where.name),
            probe,
            warmup,
            live_part(reset),
            "race",
            node=where,
        )
        warm[where.name] = chunk
        for (config, index), (_live, record) in zip(items, measured, strict=False):
            log(
                "  %s on instance %d: %s ops/s (page cache %s MiB, anonymous %s MiB)"
                % (
                    live_part(config),
                    index,
                    ke._fmt(record["ops_s"], "%.0f"),
                    ke._fmt(record.get("cache_mb"), "%.0f"),
                    ke._fmt(record.get("anon_mb"), "%.0f"),
                )
            )
            done.append((config, index, record))
    return done


def made_up(config, instance):
    """--dry-run's response: 4 KiB chunks +20 %, concurrent_reads below 20 -25 %, a row cache of 64 MiB or more
    +25 %, BTI files +15 %, 5 % noise per window."""
    rng = random.Random(json.dumps([config, instance], sort_keys=True, default=str))
    value = 3000.0 * (1.2 if int(config[st.CHUNK]) == 4 else 1.0)
    value *= 0.75 if int(config["concurrent_reads"]) < 20 else 1.0
    value *= 1.25 if int(config.get(st.ROW_CACHE, 0)) >= 64 else 1.0
    value *= 1.15 if config.get(FORMAT) == "bti" else 1.0
    return value * rng.gauss(1.0, 0.05)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--workload", default="b", help="one of %s" % ", ".join(ke.WORKLOADS))
    parser.add_argument("--budget", type=int, default=16, help="evaluations (measured windows) in all")
    parser.add_argument("--first-test", type=int, default=2, help="instances before the first elimination test")
    parser.add_argument("--window-s", type=float, default=50.0)
    parser.add_argument("--settle-s", type=float, default=8.0)
    parser.add_argument("--warmup-s", type=float, default=300.0, help="before the first client run")
    parser.add_argument("--rewarm-s", type=float, default=120.0, help="before a client run on the other table")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--records", type=int, default=4000000)
    parser.add_argument("--threads", type=int, default=64)
    parser.add_argument("--history", default=None, help="the race's history (default: a new file in the run folder)")
    parser.add_argument("--dry-run", action="store_true", help="race a made-up response; no node needed")
    parser.add_argument(
        "--row-cache",
        action="store_true",
        help="the twin tables' row cache in the space too (%s %d-%d MiB, off in the defaults)"
        % (st.ROW_CACHE, st.ROW_CACHE_RANGE[0], st.ROW_CACHE_RANGE[1]),
    )
    parser.add_argument(
        "--on-latest",
        action="store_true",
        help="race on the latest node (started for the race when it is not running, and stopped after), seeded "
        "with cassandra_latest.yaml's own values: the live knobs and, with --row-cache, the row cache on top of the "
        "experts' configuration (its one 16 KiB BTI table; no key cache, which BTI files do not use)",
    )
    parser.add_argument(
        "--keep-nodes",
        action="store_true",
        help="leave a raced node that runs already as it is; by default it is restarted first (a new JVM, its memory "
        "group new), as the nodes the race starts: what earlier runs left in a node's process, such as a row cache's "
        "memory, takes page cache from its group, and with --formats would favour the node started for the race",
    )
    parser.add_argument(
        "--formats",
        action="store_true",
        help="the SSTable format in the space too (%s; big in the defaults): a bti configuration's windows run on "
        "the bti twin node (inventories/bench-bti, started for the race when it is not running, and stopped after)"
        % " or ".join(FORMATS),
    )
    ke._shape.add_disk_cap_options(parser, "the raced node's")
    ke._shape.add_allocator_option(parser, "the raced node")
    args = parser.parse_args(argv)
    ke._shape.check_disk_cap_options(parser, args)
    ke._shape.check_allocator_option(parser, args)
    if args.formats and args.on_latest:
        parser.error("--formats: not with --on-latest (the latest node reads BTI files only); choose one")
    if args.workload not in ke.WORKLOADS:
        parser.error("--workload: %r is not allowed; choose from %s" % (args.workload, ", ".join(ke.WORKLOADS)))
    if args.budget < 2:
        parser.error("--budget: %r is too few; choose 2 or more" % args.budget)
    if args.first_test < 1:
        parser.error("--first-test: %r is not allowed; choose 1 or more" % args.first_test)
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.dry_run:
        race = make_race(
            args.workload, args.budget, args.seed, args.first_test, 51, args.row_cache, args.on_latest, args.formats
        )
        result = race.run(made_up, args.history)
        print(json.dumps({k: result[k] for k in ("best", "elites", "configurations", "evaluations")}, indent=1))
        return 0
    out, stamp, log, server_cpus = ke._shape.start_run("shape-racing")
    node = ke._shape.LATEST_NODE if args.on_latest else ke._shape.BENCH_NODE
    nodes = [node] + ([ke._shape.BTI_NODE] if args.formats else [])
    started = []
    try:
        with ke._shape.disk_caps(nodes, args.disk_read_limit, args.disk_read_iops, log=log, stopping=started):
            with ke._shape.allocator(nodes, args.jemalloc, log=log, stopping=started):
                for other in nodes:
                    if ke._shape.node_running(other):
                        if not args.keep_nodes:
                            log("restarting %s first: a new JVM, as a node the race starts" % other.name)
                            ke._shape.restart_fresh(other, log=log)
                    elif other is not ke._shape.BENCH_NODE:
                        log("starting %s (%s)" % (other.name, os.path.relpath(other.inventory, ROOT)))
                        started.append(other)
                        ke._shape.start_node(other)
                return run_race(args, out, stamp, log, server_cpus, node, nodes)
    finally:
        for stopped in started:
            log("stopping %s" % stopped.name)
            ke._shape.playbook("lab_down.yml", stopped)


def run_race(args, out, stamp, log, server_cpus, node, nodes=None):
    nodes = nodes or [node]
    for each in nodes:
        ke._shape.ensure_loaded(args.records, log=log, node=each)
        log("%s: %s" % (each.name, ke._shape.describe(each)))
    on_latest = node is ke._shape.LATEST_NODE
    key_cache_mb = 0 if on_latest else ke.defaults_key_cache(log=log)
    race = make_race(
        args.workload, args.budget, args.seed, args.first_test, key_cache_mb, args.row_cache, on_latest, args.formats
    )
    # The node's defaults, its configured key cache: what every table's windows set back (the twin nodes have the
    # same inventory key cache).
    reset = {k: v for k, v in race.initial[0].items() if k != FORMAT}
    history = args.history or os.path.join(out, "race-%s-%s.jsonl" % (args.workload, stamp))
    samplers = {each.name: ke.Sampler(ke._shape.server_pid(each), each.group) for each in nodes}
    rng = random.Random(args.seed)
    warm = {}
    began = time.monotonic()
    with speed_probe.SpeedProbe(
        server_cpus or set(range(os.cpu_count() or 1)), os.path.join(out, "cpu-speed-%s.txt" % stamp)
    ) as probe:
        while True:
            pending, state = race.ask(history)
            if not pending:
                break
            log(
                "race: %d evaluations pending, %d done; leader %s"
                % (state["pending"], state["evaluations"], state.get("leader"))
            )
            measured = measure(args.workload, pending, args, samplers, probe, log, warm, rng, reset, node)
            for config, index, record in measured:
                if not record.get("ops_s"):
                    raise SystemExit("instance %d of %s: the window has no throughput" % (index, config))
                extra = {
                    k: record.get(k)
                    for k in ("server_cpu", "client_side_cpu", "cpu_speed", "read_mb_s", "cache_mb", "anon_mb")
                }
                extra["node"] = format_node(config, node).name
                race.tell(history, config, index, record["ops_s"], record["seconds"], extra={"run": extra})
    result = state
    lines = [
        "Race on workload %s on %s, %d windows of %d s (%.0f min in all); history %s"
        % (args.workload, node.name, result["evaluations"], args.window_s, (time.monotonic() - began) / 60, history),
        "best: %s (mean %s ops/s over %d instances)"
        % (result["best"]["config"], result["best"]["mean"], result["best"]["instances"]),
    ]
    lines += ["elite: %s (mean %s over %d)" % (e["config"], e["mean"], e["instances"]) for e in result["elites"]]
    with open(os.path.join(out, "race-%s-%s.md" % (args.workload, stamp)), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
