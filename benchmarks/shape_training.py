# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Training rows for the throughput surrogate, measured on the bench node shape (one node on its own CPU in a 2 GiB
memory cgroup over 4.3 GB of rows, the client on the other CPU), warm, on the knobs that showed effects there.

The design: per workload and per compression chunk length (the twin tables of knob_effects.py, 16 and 4 KiB),
one warm client runs through the configurations of a D-optimal design (quadratic terms, so that points inside the
ranges are measured too) over the live knobs, switched between windows as knob_effects.py does. The configuration
in place (the defaults) opens and closes every run and comes back every --defaults-every windows: a run's
throughput drifts (each update-bearing client leaves SSTables its later windows read through), and each row's
throughput is corrected by the defaults interpolated at its window (the measured one is kept beside it).
--reload-each gives every workload a freshly reloaded table. Each window becomes one dataset row
(tactician.dataset_row/v1) with the node's CPU, the client side's CPU and the CPU speed the probe measured beside
the throughput.

    .venv/bin/ansible-playbook -i inventories/bench playbooks/lab_up.yml
    .venv/bin/python benchmarks/shape_training.py --workloads b,a,c,f --configs 7 --reload-each
    .venv/bin/python benchmarks/surrogate_accuracy.py --dataset .lab/bench/datasets/cassandra-shape.jsonl
    .venv/bin/python benchmarks/shape_training.py --fit-only --model catalog/models/cassandra-shape.json

--row-cache puts the twin tables' row cache in the design too (0-256 MiB, off in the defaults): each window that
changes it alters both tables' caching (the clients re-prepare) and starts with the cache as the window before left
it, which the defaults' windows in between measure as drift.

Each (workload, table) takes warm-up + windows x (settle + window) seconds, with configs - 1 windows of the
design and one of the defaults every --defaults-every - 1 of them, first and last: with 7 configurations and the
defaults every third window, 10 windows, about 11 minutes of 60 s windows after the warm-up.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

import knob_effects as ke

from ansible_collections.tactician.nosql.plugins.module_utils.core import catalog
from ansible_collections.tactician.nosql.plugins.module_utils.models import model_files as modelstore
from ansible_collections.tactician.nosql.plugins.module_utils.models import surrogate_design, surrogate_features
from ansible_collections.tactician.nosql.plugins.module_utils.models import training as modeling
from ansible_collections.tactician.nosql.plugins.module_utils.trials import speed_probe
from ansible_collections.tactician.nosql.plugins.module_utils.workload import ycsb

# The live knobs of the design, their ranges on this node shape, and how each is applied.
RANGES = {
    "concurrent_reads": [4, 128],
    "key_cache_size": [0, 256],
    "compaction_throughput": [8, 128],
}
DEFAULTS = {"concurrent_reads": 32, "compaction_throughput": 64}
CHUNK = "compression.chunk_length_in_kb"
# With --row-cache: the row cache of the twin tables, off in the defaults (Cassandra's; cassandra_latest.yaml's
# too). Each switch alters both tables' caching, which makes the clients re-prepare (knob_effects.set_row_cache).
ROW_CACHE = "row_cache_size"
ROW_CACHE_RANGE = [0, 256]
ROW_CACHE_SWITCH_S = 30
LIVE_KNOBS = (*RANGES, ROW_CACHE)


def design_ranges(row_cache=False):
    """The live knobs' ranges of a design, the row cache's among them when asked for."""
    return dict(RANGES, **({ROW_CACHE: ROW_CACHE_RANGE} if row_cache else {}))


def design_defaults(key_cache_mb, row_cache=False):
    """The defaults of a design: the node's configured key cache, the row cache off when it is in the design."""
    return dict(DEFAULTS, key_cache_size=key_cache_mb, **({ROW_CACHE: 0} if row_cache else {}))


def apply_config(config, node=None):
    """The live knobs of config set on the node (the bench node by default)."""
    node = node or ke._shape.BENCH_NODE
    for name, value in config.items():
        if name == "key_cache_size":
            ke.set_key_cache(int(value), node)
        elif name == "concurrent_reads":
            ke.nodetool("setconcurrency", "ReadStage", int(value), node=node)
        elif name == "concurrent_writes":
            ke.nodetool("setconcurrency", "MutationStage", int(value), node=node)
        elif name == "compaction_throughput":
            ke.nodetool("setcompactionthroughput", int(value), node=node)
        elif name == ROW_CACHE:
            ke.set_row_cache(int(value), node, tables=sorted(set(node.tables.values())))
        else:
            raise SystemExit("%s: not a live knob of this design (%s)" % (name, ", ".join(LIVE_KNOBS)))


def live_design(count, seed, key_cache_mb, row_cache=False):
    """count configurations of the live knobs, the defaults first: a D-optimal design with quadratic terms."""
    ranges = design_ranges(row_cache)
    space = surrogate_features.FeatureSpace(
        catalog.Catalog.for_store("cassandra", "5.0"),
        list(ranges),
        ranges=ranges,
        defaults=design_defaults(key_cache_mb, row_cache),
    )
    found = surrogate_design.design(space, count, method="d_optimal", seed=seed, terms="quadratic")
    return [{k: int(round(float(v))) for k, v in point.items()} for point in found["points"]]


def workload_row(spec, records, threads):
    letter = ke.WORKLOADS[spec]["workload"]
    props = ke.WORKLOADS[spec]["props"]
    mix = ycsb.op_mix(ycsb.workload(letter, **props))
    return {
        "name": spec,
        "mix": mix,
        "records": records,
        "requestdistribution": ycsb.workload(letter, **props).requestdistribution,
        "threads": threads,
    }


def interleaved(configs, every):
    """The order of a run's windows: the defaults (configs[0]) first, then after every `every` - 1 other
    configurations, and last. every 0: the defaults first and last only."""
    others = configs[1:]
    if not every:
        return [configs[0]] + others + [configs[0]]
    order = [configs[0]]
    step = max(1, every - 1)
    for start in range(0, len(others), step):
        order += others[start : start + step] + [configs[0]]
    return order


def drift_corrected(measured, reference):
    """The windows' throughput with the run's drift taken out: each window's ops/s times the run's mean of the
    reference windows over the reference interpolated at that window (linearly between the reference windows on
    either side; the nearest one at the ends). Returns [(config, record, factor)], factor 1 when the run has fewer
    than two reference windows with a throughput."""
    anchors = [(r["start"], r["ops_s"]) for c, r in measured if c == reference and r.get("ops_s")]
    if len(anchors) < 2:
        return [(c, r, 1.0) for c, r in measured]
    level = sum(v for _t, v in anchors) / len(anchors)
    out = []
    for config, record in measured:
        t = record["start"]
        before = [a for a in anchors if a[0] <= t]
        after = [a for a in anchors if a[0] >= t]
        if before and after and after[0][0] > before[-1][0]:
            (t0, v0), (t1, v1) = before[-1], after[0]
            at = v0 + (v1 - v0) * (t - t0) / (t1 - t0)
        else:
            at = (before[-1] if before else after[0])[1]
        out.append((config, record, level / at))
    return out


def table_windows(spec, chunk_kb, configs, args, sampler, probe, warmup_s, reset, label="-", log=None, node=None):
    """One warm client on the node's table of chunk_kb (the bench node by default): after warmup_s, per config its
    live knobs set, --settle-s, then a --window-s window; reset set at the end, also after an error. [(config,
    window record)], in the order of configs (fewer when the client stopped early). shape_racing.py measures its
    evaluations with it too."""
    node = node or ke._shape.BENCH_NODE
    table = node.tables[chunk_kb]
    # A row cache switch alters both twin tables twice each (the re-prepare) and waits for schema agreement: the
    # client's run is planned long enough for it, or its last windows would come after its end.
    switch_s = ROW_CACHE_SWITCH_S if any(ROW_CACHE in config for config in configs) else 0
    total = warmup_s + len(configs) * (args.settle_s + args.window_s + 5 + switch_s) + 60
    client = ke.Client(ke.client_params(spec, table, total, args.threads, args.records, node=node))
    client.start()
    # A client's first status lines come after its connections are up.
    time.sleep(max(warmup_s, 10.0))
    windows = []
    try:
        for index, config in enumerate(configs):
            apply_config(config, node)
            time.sleep(args.settle_s)
            start = sampler.sample()
            time.sleep(args.window_s)
            windows.append((config, start, sampler.sample()))
            if log:
                log("  window %d/%d %s done" % (index + 1, len(configs), config))
            if client.error or not client.is_alive():
                break
    finally:
        apply_config(reset, node)
    client.join()
    if client.error:
        raise SystemExit("%s: the client failed: %s" % (spec, client.error))
    status, speeds = client.status(), probe.samples()
    return [(config, ke.window_record(label, start, end, status, speeds)) for config, start, end in windows]


def run_table(spec, chunk_kb, configs, args, sampler, probe, log, warmup_s):
    """One client run on the table of chunk_kb through configs, the defaults (configs[0]) interleaved every
    --defaults-every windows: window records."""
    order = interleaved(configs, args.defaults_every)
    log("%s / %s KiB: warm-up %d s, then %d windows" % (spec, chunk_kb, warmup_s, len(order)))
    return table_windows(spec, chunk_kb, order, args, sampler, probe, warmup_s, configs[0], log=log)


def dataset_rows(spec, chunk_kb, measured, args, stamp, reference=None):
    """One dataset row per window with a throughput. With reference (the run's defaults), ops_per_s is the drift
    corrected throughput (drift_corrected) and the run keeps the measured one beside it."""
    factors = drift_corrected(measured, reference) if reference is not None else [(c, r, 1.0) for c, r in measured]
    rows = []
    for index, (config, record, factor) in enumerate(factors):
        if not record["ops_s"]:
            continue
        seconds = record["seconds"]
        rows.append(
            {
                "key": "shape-%s/%s/%dk/w%02d" % (stamp, spec, chunk_kb, index),
                "workload": workload_row(spec, args.records, args.threads),
                "config": dict(config, **{CHUNK: chunk_kb}),
                "hardware": {"heap_mb": 1024, "memory_limit_mb": 2048, "server_cpus": 1},
                "ops_per_s": round(record["ops_s"] * factor, 1),
                "run": {
                    "wall_s": seconds,
                    "server_cpu_s": round(record["server_cpu"] * seconds, 2),
                    "client_cpu_s": round(record["client_side_cpu"] * seconds, 2),
                    # The client has a CPU of its own here: nothing else shares the node's.
                    "other_cpu_s": 0.0,
                    "cpu_speed": record["cpu_speed"],
                    "ops_per_speed": record["ops_per_speed"],
                    "read_mb_s": record["read_mb_s"],
                    "cache_mb": record["cache_mb"],
                    "window": index,
                    "measured_ops_s": record["ops_s"],
                    "drift_factor": round(factor, 4),
                },
            }
        )
    return rows


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--workloads", default="b,a", help="of %s, separated by commas" % ", ".join(ke.WORKLOADS))
    parser.add_argument("--chunks", default="16,4", help="compression chunk lengths (KiB) of the twin tables")
    parser.add_argument("--configs", type=int, default=8, help="configurations per (workload, table), the defaults one")
    parser.add_argument("--window-s", type=float, default=60.0)
    parser.add_argument("--settle-s", type=float, default=8.0)
    parser.add_argument("--warmup-s", type=float, default=600.0, help="before the first run")
    parser.add_argument("--rewarm-s", type=float, default=120.0, help="before every later run (another table)")
    parser.add_argument(
        "--defaults-every",
        type=int,
        default=3,
        help="a window of the defaults every N windows of a run, each row's throughput corrected for the drift "
        "they show (0: the defaults first and last, the rows as measured)",
    )
    parser.add_argument(
        "--reload-each", action="store_true", help="reload the data sets before every workload (a fresh table each)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--records", type=int, default=4000000)
    parser.add_argument("--threads", type=int, default=64)
    parser.add_argument("--dataset", default=os.path.join(ke.BENCH, "datasets", "cassandra-shape.jsonl"))
    parser.add_argument(
        "--model",
        default=None,
        help="fit the surrogate on the dataset and save it here, its rows beside it (NAME.dataset.jsonl)",
    )
    parser.add_argument("--fit-only", action="store_true", help="measure nothing: fit the dataset (needs --model)")
    parser.add_argument(
        "--row-cache",
        action="store_true",
        help="the twin tables' row cache in the design too (%s %d-%d MiB, off in the defaults)"
        % (ROW_CACHE, ROW_CACHE_RANGE[0], ROW_CACHE_RANGE[1]),
    )
    args = parser.parse_args(argv)
    args.workloads = args.workloads.split(",")
    for name in args.workloads:
        if name not in ke.WORKLOADS:
            parser.error("--workloads: %r is not allowed; choose from %s" % (name, ", ".join(ke.WORKLOADS)))
    try:
        args.chunks = [int(c) for c in args.chunks.split(",")]
    except ValueError:
        parser.error("--chunks: give KiB values from %s" % ", ".join(str(c) for c in ke.CHUNK_TABLES))
    for chunk in args.chunks:
        if chunk not in ke.CHUNK_TABLES:
            parser.error("--chunks: %r is not allowed; choose from %s" % (chunk, ", ".join(map(str, ke.CHUNK_TABLES))))
    if args.fit_only and not args.model:
        parser.error("--fit-only: give --model, the file to save the surrogate in")
    if args.defaults_every < 0 or args.defaults_every == 1:
        parser.error("--defaults-every: %r is not allowed; choose 0 or 2 and more" % args.defaults_every)
    if args.configs < 2:
        parser.error("--configs: %r is too few; choose 2 or more" % args.configs)
    return args


def fit(dataset, model_file, log=print):
    """Fit the surrogate on the dataset's rows, save it to model_file and the rows beside it; the summary lines."""
    rows = modeling.read_dataset(dataset)
    row_cache = any(ROW_CACHE in row["config"] for row in rows)
    hardware = modelstore.hardware_profile(name="bench-shape", vcpu=1, ram_gb=2.0, heap_mb=1024)
    _doc, _evaluation, summary = modeling.fit_surrogate(
        rows,
        "cassandra",
        "5.0",
        hardware,
        model_file=model_file,
        ranges=dict(design_ranges(row_cache), **{CHUNK: [min(ke.CHUNK_TABLES), max(ke.CHUNK_TABLES)]}),
        defaults={"key_cache_size": 51, **({ROW_CACHE: 0} if row_cache else {})},
    )
    base = model_file[: -len(".json")] if model_file.endswith(".json") else model_file
    shutil.copyfile(dataset, base + ".dataset.jsonl")
    for line in summary:
        log(line)
    return summary


def main(argv=None):
    args = parse_args(argv)
    if args.fit_only:
        fit(args.dataset, args.model)
        return 0
    out, stamp, log, server_cpus = ke._shape.start_run("shape-training")
    ke._shape.ensure_loaded(args.records, log=log)
    log(ke._shape.describe())
    key_cache_mb = ke.defaults_key_cache(log=log)
    sampler = ke.Sampler(ke._shape.server_pid())
    written = 0
    warmup = args.warmup_s
    probe_file = os.path.join(out, "cpu-speed-%s.txt" % stamp)
    with speed_probe.SpeedProbe(server_cpus or set(range(os.cpu_count() or 1)), probe_file) as probe:
        for w_index, spec in enumerate(args.workloads):
            if args.reload_each and w_index:
                # The updates of the workload before left SSTables in the tables: this one starts from the data set.
                ke._shape.ensure_loaded(args.records, force=True, log=log)
                sampler = ke.Sampler(ke._shape.server_pid())
                warmup = args.warmup_s
            for c_index, chunk_kb in enumerate(args.chunks):
                seed = args.seed + 10 * w_index + c_index
                configs = live_design(args.configs, seed, key_cache_mb, args.row_cache)
                measured = run_table(spec, chunk_kb, configs, args, sampler, probe, log, warmup)
                warmup = args.rewarm_s
                reference = configs[0] if args.defaults_every else None
                for row in dataset_rows(spec, chunk_kb, measured, args, stamp, reference):
                    written += bool(modeling.append_row(args.dataset, row.pop("key"), row))
                log("%s / %s KiB: %d windows; dataset %s" % (spec, chunk_kb, len(measured), args.dataset))
    log("%d rows written to %s" % (written, args.dataset))
    if args.model:
        fit(args.dataset, args.model, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
