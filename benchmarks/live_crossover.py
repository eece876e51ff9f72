# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Live settings measured side by side on a warm, loaded lab cluster: a crossover design.

    .venv/bin/python benchmarks/live_crossover.py --mix read=0.95,update=0.05 \
        --a '{"concurrent_reads": 32, "concurrent_writes": 32}' --b '{"concurrent_reads": 8, "concurrent_writes": 8}'
    .venv/bin/python benchmarks/live_crossover.py --short            # 4 windows of 30 s
    .venv/bin/python benchmarks/live_crossover.py --dataset .lab/datasets/lab-live.jsonl   # rows to fit a surrogate
    .venv/bin/python benchmarks/live_crossover.py --mix insert=1.0 \
        --a '{"compaction_throughput": 64}' --b '{"compaction_throughput": 2}'   # an upload; -p adds YCSB properties

One client load runs without a break; every window the whole cluster switches between configuration A and B
(live settings only, through nodetool on every node, as the catalog applies them), and the ops/s of each window
are read from the client's own status lines, leaving out the first seconds after each switch. A, B, A, B ...
windows next to each other share the machine's state (JIT warm-up, other tenants, compaction), which cold runs
minutes apart do not: on this 2-CPU machine, cold runs of one configuration differ by up to 5x, adjacent windows
by a few percent. Prints each window, the paired ratios B/A (each B window against the mean of its neighbours),
their mean with a 95 % confidence interval, and appends one dataset row per window when --dataset is given (a
node's share of the cluster's ops/s, the unit of the planner's single-node surrogate).
The lab must be up (make lab).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import threading
import time

from _common import ROOT, use_collection

use_collection()

from ansible_collections.tactician.nosql.plugins.module_utils.core import catalog as catalog_mod
from ansible_collections.tactician.nosql.plugins.module_utils.core import catalog_files
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.models import training as modeling
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.server import run_nodetool
from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run as loadrun
from ansible_collections.tactician.nosql.plugins.module_utils.workload import loaddriver

LAB = os.path.join(ROOT, ".lab")
NODES = [("127.0.0.1", 7199), ("127.0.0.2", 7299), ("127.0.0.3", 7399)]
T_975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--a", default='{"concurrent_reads": 32, "concurrent_writes": 32}', help="settings A (JSON)")
    parser.add_argument("--b", default='{"concurrent_reads": 8, "concurrent_writes": 8}', help="settings B (JSON)")
    parser.add_argument("--mix", default="read=0.95,update=0.05", help="operation shares, e.g. read=0.05,update=0.95")
    parser.add_argument("--windows", type=int, default=8, help="windows in all (A and B in turns, A first)")
    parser.add_argument("--window-s", type=float, default=45.0)
    parser.add_argument("--skip-s", type=float, default=15.0, help="seconds left out after each switch")
    parser.add_argument("--warmup-s", type=float, default=60.0, help="load before the first window")
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--keyspace", default="tactician_crossover")
    parser.add_argument(
        "--caching",
        help='the table\'s caching option after the load, e.g. \'{"keys": "ALL", "rows_per_partition": "ALL"}\''
        " (the row cache holds rows only of tables that ask for it)",
    )
    parser.add_argument("--dataset", help="append one row per window (the format tactician.nosql.model fits)")
    parser.add_argument(
        "-p", dest="properties", action="append", default=[], metavar="NAME=VALUE", help="another YCSB property"
    )
    parser.add_argument("--short", action="store_true", help="4 windows of 30 s, 10 s skipped, 30 s warm-up")
    args = parser.parse_args(argv)
    if args.short:
        args.windows, args.window_s, args.skip_s, args.warmup_s = 4, 30.0, 10.0, 30.0
    return args


def set_caching(params, keyspace, caching):
    """ALTER TABLE <keyspace>.usertable WITH caching = ..., checked by the schema module's rules."""
    from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
    from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import tables

    wanted = tables.normalize_caching(caching)
    cluster, session = cql.connect(dict(cql.params_from_any(params), login_hosts=params["hosts"]))
    try:
        session.execute(
            "ALTER TABLE %s.usertable WITH caching = {%s}"
            % (keyspace, ", ".join("'%s': '%s'" % item for item in sorted(wanted.items()))),
            timeout=60,
        )
    finally:
        cluster.shutdown()
    print("caching of %s.usertable: %s" % (keyspace, wanted))


def parse_mix(text):
    mix = {}
    for part in text.split(","):
        name, _sep, value = part.partition("=")
        mix[name.strip()] = float(value)
    if abs(sum(mix.values()) - 1.0) > 1e-6:
        sys.exit("--mix: the shares must sum to 1 (got %s)" % text)
    return mix


def parse_properties(items):
    properties = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            sys.exit("-p: give NAME=VALUE (got %r)" % item)
        properties[name.strip()] = value.strip()
    return properties


def live_commands(settings):
    """(setting, nodetool argv) of each setting, from the catalog's live entries; refuses restart-only settings."""
    cat = catalog_mod.Catalog.for_store("cassandra", "5.0")
    commands = []
    for name, value in settings.items():
        try:
            entry = cat.entry(name)
        except catalog_files.CatalogError as exc:
            sys.exit("--a/--b: %s" % exc)
        live = entry.get("live") if entry else None
        if not live or live.get("method") != "nodetool":
            sys.exit("--a/--b: %s is not a live nodetool setting; the crossover switches live settings only" % name)
        try:
            # The settings themselves are the "current" values of commands that set several at once.
            commands.append((name, cat.live_action(name, value, current=settings)["nodetool"]))
        except catalog_files.CatalogError as exc:
            sys.exit("--a/--b: %s" % exc)
    return commands


def apply(settings):
    home = os.path.join(LAB, "cassandra-5.0.9")
    done = []
    for _name, argv in live_commands(settings):
        # setcachecapacity sets three caches at once: one call per node, not three.
        if argv in done:
            continue
        done.append(argv)
        for _host, port in NODES:
            run_nodetool(home, "127.0.0.1", port, argv)


def main(argv=None):
    args = parse_args(argv)
    settings = {"A": json.loads(args.a), "B": json.loads(args.b)}
    mix = parse_mix(args.mix)
    for value in settings.values():
        live_commands(value)
    with open(os.path.join(LAB, "secrets", "cassandra-password"), encoding="utf-8") as handle:
        password = handle.readline().strip()
    params = loadrun.with_defaults(
        store="cassandra",
        hosts=[host for host, _port in NODES],
        login_user="tactician",
        login_password=password,
        properties={
            "recordcount": str(args.records),
            "requestdistribution": "zipfian",
            "readproportion": str(mix.get("read", 0.0)),
            "updateproportion": str(mix.get("update", 0.0)),
            "insertproportion": str(mix.get("insert", 0.0)),
            "scanproportion": str(mix.get("scan", 0.0)),
            "readmodifywriteproportion": "0",
            **parse_properties(args.properties),
        },
        phases=["load"],
        reload=True,
        threads=args.threads,
        keyspace=args.keyspace,
        replication_factor=3,
        driver_home=os.path.join(LAB, "load-driver"),
    )
    print("A = %s\nB = %s\nmix %s, %d records, %d threads" % (args.a, args.b, args.mix, args.records, args.threads))
    apply(settings["A"])
    loadrun.execute(params, loadrun.plan(params))
    if args.caching:
        set_caching(params, args.keyspace, json.loads(args.caching))
    total = args.warmup_s + args.windows * args.window_s + 5
    run_params = dict(params, phases=["run"], reload=False)
    run_params["properties"] = dict(params["properties"], operationcount=str(loadrun.UNBOUNDED_OPERATIONS))
    run_params["max_seconds"] = int(total)
    outcome = {}

    def drive():
        try:
            outcome["results"] = loadrun.execute(run_params, loadrun.plan(run_params))
        except TacticianError as exc:
            outcome["error"] = str(exc)

    driver = threading.Thread(target=drive, daemon=True)
    driver.start()
    start = time.time()
    windows = []
    time.sleep(args.warmup_s)
    for index in range(args.windows):
        if not driver.is_alive():
            break
        name = "AB"[index % 2]
        began = time.time()
        apply(settings[name])
        applied = time.time()
        windows.append({"name": name, "switch": began, "from": applied + args.skip_s, "to": began + args.window_s})
        time.sleep(max(0.0, began + args.window_s - time.time()))
    driver.join()
    apply(settings["A"])
    if "error" in outcome:
        sys.exit("the load failed: %s" % outcome["error"])
    status = outcome["results"][-1]["status_by_process"][0]
    for window in windows:
        # A switch that took longer than the window leaves nothing to measure in it.
        if window["to"] - window["from"] < 5:
            window["ops_per_s"] = None
        else:
            window["ops_per_s"] = loaddriver.ops_between(status, window["from"], window["to"])
        print(
            "window %2d %s  t+%4.0f s  %8.0f ops/s  (switch took %.1f s)"
            % (
                windows.index(window) + 1,
                window["name"],
                window["from"] - start,
                window["ops_per_s"] or 0,
                window["from"] - args.skip_s - window["switch"],
            )
        )
    ratios = []
    for index, window in enumerate(windows):
        if window["name"] != "B":
            continue
        neighbours = [windows[j]["ops_per_s"] for j in (index - 1, index + 1) if 0 <= j < len(windows)]
        neighbours = [value for value in neighbours if value]
        if neighbours and window["ops_per_s"]:
            ratios.append(window["ops_per_s"] / statistics.mean(neighbours))
    if ratios:
        mean = statistics.mean(ratios)
        half = (
            T_975.get(len(ratios) - 1, 2.0) * statistics.stdev(ratios) / math.sqrt(len(ratios))
            if len(ratios) > 1
            else float("nan")
        )
        print("B/A per B window: %s" % ", ".join("%.3f" % r for r in ratios))
        print("B/A mean %.3f, 95 %% CI [%.3f, %.3f] over %d pairs" % (mean, mean - half, mean + half, len(ratios)))
    failed = outcome["results"][-1]["failed_total"]
    print("failed operations: %d" % failed)
    if args.dataset:
        for number, window in enumerate(windows):
            if not window["ops_per_s"]:
                continue
            modeling.append_row(
                args.dataset,
                "crossover/%s/%s/%d" % (time.strftime("%Y%m%dT%H%M%S", time.gmtime(start)), window["name"], number),
                {
                    "name": window["name"],
                    "round": number,
                    "workload": {
                        "name": "a",
                        "mix": mix,
                        "requestdistribution": "zipfian",
                        "records": args.records,
                        "threads": args.threads,
                    },
                    "config": settings[window["name"]],
                    # A node's share of the cluster's ops/s: the planner's f_ops is nodes x a node's prediction
                    # (seed 001 Eq. 4), so a model fitted on these rows predicts the whole cluster's.
                    "ops_per_s": round(window["ops_per_s"] / len(NODES), 1),
                    "run": {
                        "failed_total": failed,
                        "wall_s": round(window["to"] - window["from"], 1),
                        "design": "crossover",
                        "cluster_ops_per_s": round(window["ops_per_s"], 1),
                        "nodes": len(NODES),
                    },
                },
            )
        print("appended %d rows to %s" % (len(windows), args.dataset))
    return 0


if __name__ == "__main__":
    sys.exit(main())
