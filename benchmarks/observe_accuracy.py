"""Observe accuracy on the lab: drive each YCSB workload A-F at a fixed target rate with the load driver and,
while it runs, let observe sample the node(s) for one window; print what the driver did and what observe saw,
side by side, with the ratio.

    .venv/bin/python benchmarks/observe_accuracy.py --inventory tests/integration/inventory/test_cluster
    .venv/bin/python benchmarks/observe_accuracy.py --stores cassandra --workloads a c --window 30

The clusters must be up (playbooks/lab_up.yml with the same inventory). Throughput is compared in server
operations: a read-modify-write (F) is a read and a write to the server, so the driver's client rate is multiplied
by the reads + writes per client operation of the workload's mix, or, where the binding counts the commands it
sends (Redis: a scan is one range query plus one hash read per record returned), by commands per operation.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

from _common import ROOT, use_collection

use_collection()

import yaml

from ansible_collections.tactician.nosql.plugins.module_utils.stores import probes as observe_stores
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import observer as observe
from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run as loadrun
from ansible_collections.tactician.nosql.plugins.module_utils.workload import (
    loaddriver,
    ycsb,
)


def inventory_facts(inventory):
    """Lab directory, Cassandra node and Redis nodes of a lab-style inventory (hosts.yml + group_vars)."""
    hosts = yaml.safe_load(open(os.path.join(inventory, "hosts.yml")))["all"]["children"]
    lab_dir = os.path.normpath(os.path.join(ROOT, ".lab", "test" if "test_cluster" in inventory else ""))
    cassandra = [
        dict(address=v["cassandra_node_listen_address"], name=k) for k, v in hosts["cassandra"]["hosts"].items()
    ]
    redis = ["127.0.0.1:%d" % v["redis_node_port"] for v in hosts["redis"]["hosts"].values()]
    return lab_dir, cassandra, redis


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--inventory", default=os.path.join(ROOT, "inventories", "lab"))
    parser.add_argument("--stores", nargs="+", default=["cassandra", "redis"], choices=["cassandra", "redis"])
    parser.add_argument("--workloads", nargs="+", default=list("abcdef"), choices=list("abcdef"))
    parser.add_argument("--window", type=float, default=30.0, help="observe window (T_d), seconds")
    parser.add_argument("--warmup", type=float, default=12.0, help="seconds of load before observing")
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--rate", type=int, nargs=2, default=[1500, 3000], metavar=("CASSANDRA", "REDIS"))
    args = parser.parse_args()
    lab_dir, cassandra_nodes, redis_nodes = inventory_facts(os.path.abspath(args.inventory))
    with open(os.path.join(lab_dir, "secrets", "redis-password")) as handle:
        redis_password = handle.read().split()[0]
    driver_home = os.path.join(lab_dir, "load-driver")
    rows = []
    for store in args.stores:
        rate = args.rate[0] if store == "cassandra" else args.rate[1]
        if store == "cassandra":
            conn = dict(hosts=[n["address"] for n in cassandra_nodes], **cassandra_login(lab_dir))
            nodes = [
                dict(address=n["address"], pid_file=os.path.join(lab_dir, "cassandra", n["name"], "cassandra.pid"))
                for n in cassandra_nodes
            ]
        else:
            conn = dict(hosts=redis_nodes[:3], login_user="tactician", login_password=redis_password)
            nodes = [dict(address=a) for a in redis_nodes]
        base = dict(store=store, driver_home=driver_home, threads=16, processes=1, keyspace="ycsb_bench", **conn)
        # Load once with the workload that scans, so E finds its index; every workload shares the record layout.
        load = dict(base, workload="e", phases=["load"], reload=True, properties={"recordcount": args.records})
        loadrun.execute(load, loadrun.plan(load))
        for letter in args.workloads:
            spec = ycsb.workload(letter, recordcount=args.records)
            reads, writes = ycsb.server_operations(spec)
            duration = args.warmup + args.window + 8
            run = dict(
                base,
                workload=letter,
                phases=["run"],
                target=rate,
                status_interval=2,
                properties={"recordcount": args.records, "operationcount": int(rate * duration)},
                # Bounded by time too: a workload slower than its target (Redis scans on a busy machine) would
                # otherwise run until its operation count, long after the window.
                max_seconds=int(duration) + 5,
            )
            outcome = {}
            worker = threading.Thread(target=drive, args=(run, outcome))
            worker.start()
            time.sleep(args.warmup)
            observe_params = dict(
                conn, store=store, nodes=nodes, port=9042, keyspaces=["ycsb_bench"] if store == "cassandra" else []
            )
            with observe_stores.Probes(observe_params) as probes:
                seen = observe.observe(probes, store, "bench", duration=args.window, interval=5.0)
            end = time.time()
            worker.join()
            result = outcome["result"]
            client_rate = loaddriver.ops_between(result["status_by_process"][0], end - args.window, end)
            expected_rr = ycsb.read_ratio(spec)
            agg = seen["aggregate"]
            # Server operations per client operation: what the binding counted it sent (Redis: a scan is a range
            # query plus one read per record), else the reads and writes of the mix.
            per_op = reads + writes
            total_ops = (result["throughput"] or 0.0) * (result["runtime_ms"] or 0.0) / 1000.0
            if result.get("server_commands") and total_ops:
                per_op = result["server_commands"] / total_ops
            server_rate = client_rate * per_op if client_rate else None
            rows.append(
                dict(
                    store=store,
                    workload=letter.upper(),
                    target=rate,
                    client_ops=client_rate,
                    expected_server_ops=server_rate,
                    observed_ops=agg["throughput"],
                    ratio=(agg["throughput"] / server_rate) if server_rate else None,
                    expected_rr=expected_rr,
                    observed_rr=agg["read_ratio"],
                    failed=result["failed_total"],
                )
            )
            print_row(rows[-1])
            sys.stdout.flush()
    print()
    header = (
        "| store | workload | target ops/s | driver ops/s (window) | driver server ops/s | observed ops/s "
        "| observed / driver | read ratio expected | read ratio observed | diff | failed |"
    )
    print(header)
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            "| %s | %s | %d | %.1f | %.1f | %.1f | %.3f | %.3f | %s | %s | %d |"
            % (
                row["store"],
                row["workload"],
                row["target"],
                row["client_ops"] or 0,
                row["expected_server_ops"] or 0,
                row["observed_ops"],
                row["ratio"] or 0,
                row["expected_rr"],
                "n/a" if row["observed_rr"] is None else "%.3f" % row["observed_rr"],
                "n/a" if row["observed_rr"] is None else "%+.3f" % (row["observed_rr"] - row["expected_rr"]),
                row["failed"],
            )
        )


def cassandra_login(lab_dir):
    """The lab's own superuser (lab_up creates it); the test clusters keep the built-in one."""
    secret = os.path.join(lab_dir, "secrets", "cassandra-password")
    if "test" not in os.path.basename(lab_dir.rstrip(os.sep)) and os.path.exists(secret):
        with open(secret) as handle:
            return dict(login_user="tactician", login_password=handle.read().split()[0])
    return dict(login_user="cassandra", login_password="cassandra")


def drive(params, outcome):
    outcome["result"] = loadrun.execute(params, loadrun.plan(params))[0]


def print_row(row):
    print(
        "%s %s: driver %.1f ops/s (server ops %.1f), observed %.1f ops/s (x%.3f); read ratio %.3f expected, %s observed"
        % (
            row["store"],
            row["workload"],
            row["client_ops"] or 0,
            row["expected_server_ops"] or 0,
            row["observed_ops"],
            row["ratio"] or 0,
            row["expected_rr"],
            row["observed_rr"],
        )
    )


if __name__ == "__main__":
    main()
