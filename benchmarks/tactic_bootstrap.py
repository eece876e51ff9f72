# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Labelled tactic runs on the bench Cassandra node (seed 000, PaSTA 4.1): the tactic advisor's bootstrap from real
benchmark runs instead of the knowledge base alone.

    .venv/bin/python benchmarks/tactic_bootstrap.py                 # 7 scenarios, 20 s windows
    .venv/bin/python benchmarks/tactic_bootstrap.py --short         # 4 scenarios, 8 s windows
    .venv/bin/python benchmarks/tactic_bootstrap.py --repeats 2 --out catalog/advisor/cassandra-bench.jsonl

Each scenario creates its own table (20,000 rows), drives a mixed load through the Python driver (point reads,
writes, queries that filter on a non-key column), measures a window "before", applies one tactic through the
collection's schema code (add or drop SAI indexes, row cache on, compaction STCS -> LCS), measures a window
"after", and labels the "before" features with the tactic when the KPI that triggered it improved by at least
--min-gain (else "none": the tactic did not pay off here). The calm scenario runs at a low rate that breaches no
SLA and is labelled "none" without a tactic.

The features are what the advisor reads (advisor.FEATURES): machine CPU, memory and disk percent, the operation mix,
throughput and p99.9 latency seen by the client, the key cache hit ratio from system_views.caches, the share of
queries filtering on unindexed columns, the indexes, the share of writes that maintain an index. Every scenario's
SLA asks 10 % more throughput than its own "before" window delivered and a p99.9 under --sla-p999-ms, so each is
triggered as an operator who wants more would trigger it.

The runs are written as JSON lines in the advisor's state format (features, tactic, source "benchmark", plus the
measured before/after), so `plan mode=tactic advisor_bootstrap=<file>` learns from them. The script then prints, per
scenario, the KPI before/after and the label, and the advisor's leave-one-out agreement with the measured labels:
knowledge base alone vs knowledge base + the other runs.

The bench node must be up (ansible-playbook -i inventories/bench playbooks/lab_up.yml); the numbers are this shared
2-CPU machine's, client included.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import threading
import time

from _common import ROOT, use_collection

use_collection()

from ansible_collections.tactician.nosql.plugins.module_utils.models import advisor
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cassandra
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import indexes as indexes_mod
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import tables
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import resources

KEYSPACE = "tactician"
ROWS = 20000
OWNERS = 1000
PAYLOAD = 200

SCENARIOS = [
    # name, mix (read, write, filter), indexes before, tactic, how, rate (None: as fast as it goes), keys
    dict(name="filters-read-heavy", mix=(0.6, 0.2, 0.2), indexes=(), tactic="add_index", apply="index:owner"),
    dict(name="filters-light", mix=(0.85, 0.1, 0.05), indexes=(), tactic="add_index", apply="index:owner"),
    dict(
        name="ingest-indexed",
        mix=(0.1, 0.9, 0.0),
        indexes=("owner", "category", "payload"),
        tactic="drop_index",
        apply="drop:owner,category,payload",
    ),
    dict(
        name="ingest-indexed-queried",
        mix=(0.05, 0.8, 0.15),
        indexes=("owner", "category"),
        tactic="drop_index",
        apply="drop:owner,category",
    ),
    dict(name="hot-reads", mix=(0.95, 0.05, 0.0), indexes=(), tactic="resize_cache", apply="rowcache", hot=200),
    dict(name="overwrites", mix=(0.5, 0.5, 0.0), indexes=(), tactic="change_compaction", apply="lcs", hot=2000),
    dict(name="calm", mix=(0.7, 0.3, 0.0), indexes=(), tactic="none", apply=None, rate=100),
]
SHORT = ("filters-read-heavy", "ingest-indexed", "hot-reads", "calm")


def bench_params():
    secret = os.path.join(ROOT, ".lab", "bench", "secrets", "cassandra-password")
    if not os.path.exists(secret):
        raise SystemExit("no bench password at .lab/bench/secrets; bring the bench node up first (lab_up.yml)")
    with open(secret, encoding="utf-8") as handle:
        password = handle.read().split()[0]
    return {"login_hosts": ["127.0.0.31"], "login_user": "tactician", "login_password": password}


class Table:
    """One scenario's table and its prepared statements."""

    def __init__(self, session, name, hot=None):
        self.session, self.name, self.hot = session, name, hot
        self.prepare()

    def prepare(self):
        t = "%s.%s" % (KEYSPACE, self.name)
        s = self.session
        self.read = s.prepare("SELECT id, owner, category, payload FROM %s WHERE id = ?" % t)
        self.write = s.prepare("INSERT INTO %s (id, owner, category, payload) VALUES (?, ?, ?, ?)" % t)
        self.filter = s.prepare("SELECT id FROM %s WHERE owner = ? LIMIT 50 ALLOW FILTERING" % t)

    def key(self, rng):
        return rng.randrange(self.hot or ROWS)

    def row(self, rng, key):
        owner = "owner%04d" % rng.randrange(OWNERS)
        payload = "%08d" % rng.randrange(10**8) + "x" * (PAYLOAD - 8)
        return (key, owner, rng.randrange(50), payload)


def create(session, name, indexes):
    tables.ensure_table(session, KEYSPACE, name, state="absent")
    tables.ensure_table(
        session,
        KEYSPACE,
        name,
        columns={"id": "int", "owner": "text", "category": "int", "payload": "text"},
        primary_key=["id"],
        options=tables.wanted_table_options(
            compaction={"class": "SizeTieredCompactionStrategy"}, caching={"keys": "ALL", "rows_per_partition": "NONE"}
        ),
    )
    for column in indexes:
        indexes_mod.ensure_index(session, KEYSPACE, name, "%s_%s_idx" % (name.replace("-", "_"), column), column=column)


def load(session, table, threads=16):
    rng = random.Random(7)
    rows = [table.row(rng, key) for key in range(ROWS)]
    from cassandra.concurrent import execute_concurrent_with_args

    execute_concurrent_with_args(session, table.write, rows, concurrency=threads * 4)


def drive(table, mix, seconds, threads=16, rate=None, seed=1):
    """Run the mix for seconds; {ops, errors, throughput, p999_ms, latencies by kind, read/write/filter counts}."""
    stop = time.monotonic() + seconds
    lock = threading.Lock()
    lat = {"read": [], "write": [], "filter": []}
    errors = [0]
    per_thread = None if rate is None else rate / float(threads)

    def worker(index):
        rng = random.Random(seed * 1000 + index)
        local = {"read": [], "write": [], "filter": []}
        failed = 0
        started = time.monotonic()
        done = 0
        while True:
            now = time.monotonic()
            if now >= stop:
                break
            if per_thread:
                due = started + done / per_thread
                if due > now:
                    time.sleep(min(due - now, stop - now))
                    continue
            pick = rng.random()
            if pick < mix[0]:
                kind, statement, args = "read", table.read, (table.key(rng),)
            elif pick < mix[0] + mix[1]:
                kind, statement = "write", table.write
                args = table.row(rng, table.key(rng))
            else:
                kind, statement, args = "filter", table.filter, ("owner%04d" % rng.randrange(OWNERS),)
            begin = time.perf_counter()
            try:
                list(table.session.execute(statement, args, timeout=30))
                local[kind].append(1000.0 * (time.perf_counter() - begin))
            except Exception:  # a timeout or an overloaded node: a failed operation, counted
                failed += 1
            done += 1
        with lock:
            for kind, values in local.items():
                lat[kind].extend(values)
            errors[0] += failed

    cpu_before = resources.read_proc_stat()["cpu"]
    caches_before = cache_counters(table.session)
    began = time.monotonic()
    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    elapsed = time.monotonic() - began
    cpu = resources.cpu_split(cpu_before, resources.read_proc_stat()["cpu"])
    caches_after = cache_counters(table.session)
    everything = sorted(v for values in lat.values() for v in values)
    ops = len(everything)
    hits = caches_after[0] - caches_before[0]
    requests = caches_after[1] - caches_before[1]
    return {
        "ops": ops,
        "errors": errors[0],
        "throughput": ops / elapsed,
        "p999_ms": everything[min(ops - 1, int(0.999 * ops))] if ops else 0.0,
        "p50_ms": statistics.median(everything) if ops else 0.0,
        "counts": {kind: len(values) for kind, values in lat.items()},
        "cpu": cpu.get("cpu_pct") or 0.0,
        "hit_ratio": hits / requests if requests > 0 else 0.0,
    }


def cache_counters(session):
    for row in session.execute("SELECT name, hit_count, request_count FROM system_views.caches"):
        if row.name == "keys":
            return int(row.hit_count or 0), int(row.request_count or 0)
    return 0, 0


def features(run, mix, indexes, sla_p999_ms, sla_min_throughput):
    """The advisor's features of a measured window."""
    total = max(1, sum(run["counts"].values()))
    share = {kind: count / total for kind, count in run["counts"].items()}
    memory = resources.memory_usage(resources.read_meminfo())
    disk = resources.disk_usage(ROOT)
    filters_unindexed = share["filter"] if "owner" not in indexes else 0.0
    return {
        "cpu": round(run["cpu"], 2),
        "memory": round(memory["mem_pct"], 2),
        "disk": round(disk["disk_pct"], 2),
        "read_share": round(share["read"] + share["filter"], 4),
        "write_share": round(share["write"], 4),
        "scan_share": 0.0,
        "throughput": round(run["throughput"], 1),
        "p999_ms": round(run["p999_ms"], 2),
        "sla_p999_ms": float(sla_p999_ms),
        "sla_min_throughput": round(float(sla_min_throughput), 1),
        "hit_ratio": round(run["hit_ratio"], 4),
        "unindexed_query_share": round(filters_unindexed, 4),
        "indexes": float(len(indexes)),
        "index_write_share": round(share["write"] if indexes else 0.0, 4),
        "nodes": 1.0,
        "replicas": 1.0,
        "data_gb": round(ROWS * (PAYLOAD + 40) / 1e9, 4),
    }


def index_name(table, column):
    return "%s_%s_idx" % (table, column)


def apply_tactic(session, name, how, indexes):
    """Apply the scenario's tactic with the collection's schema code; the indexes after."""
    kind, _sep, arg = how.partition(":")
    if kind == "index":
        indexes_mod.ensure_index(session, KEYSPACE, name, index_name(name, arg), column=arg)
        return tuple(indexes) + (arg,)
    if kind == "drop":
        for column in arg.split(","):
            indexes_mod.ensure_index(session, KEYSPACE, name, index_name(name, column), state="absent")
        return ()
    if kind == "rowcache":
        options = tables.wanted_table_options(caching={"keys": "ALL", "rows_per_partition": "ALL"})
    elif kind == "lcs":
        options = tables.wanted_table_options(compaction={"class": "LeveledCompactionStrategy"})
    else:
        raise ValueError(how)
    tables.ensure_table(session, KEYSPACE, name, options=options)
    if kind == "lcs":
        settle(session)
    return indexes


def settle(session, timeout=120):
    """Wait until the node runs no compaction (system_views.sstable_tasks empty) or timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not list(session.execute("SELECT * FROM system_views.sstable_tasks")):
            return
        time.sleep(1)


def improved(before, after, feats, min_gain):
    """The KPI that triggered the scenario improved by min_gain (throughput up, or the breached p99.9 down)."""
    gain = after["throughput"] / before["throughput"] if before["throughput"] else 0.0
    if gain >= 1.0 + min_gain:
        return True, gain
    if feats["p999_ms"] > feats["sla_p999_ms"] and after["p999_ms"] <= before["p999_ms"] * (1.0 - 2 * min_gain):
        return gain >= 1.0 - min_gain, gain  # the breached latency fell a lot, without costing throughput
    return False, gain


def measured(run):
    """What a person reads of a window: ops/s, latencies, failed operations, CPU, key cache hit ratio."""
    return {k: round(run[k], 3) for k in ("throughput", "p999_ms", "p50_ms", "errors", "cpu", "hit_ratio")}


def run_scenario(session, scenario, seconds, args, repeat):
    name = "tb_%s_%d" % (scenario["name"].replace("-", "_"), repeat)
    create(session, name, scenario["indexes"])
    table = Table(session, name, hot=scenario.get("hot"))
    load(session, table)
    cassandra_schema_wait(session)
    drive(table, scenario["mix"], min(5.0, seconds), rate=scenario.get("rate"), seed=99)  # warm-up
    before = drive(table, scenario["mix"], seconds, rate=scenario.get("rate"), seed=repeat + 1)
    sla_floor = (1.0 + args.min_gain) * before["throughput"] if scenario["apply"] else before["throughput"] * 0.5
    feats = features(before, scenario["mix"], scenario["indexes"], args.sla_p999_ms, sla_floor)
    record = {
        "features": feats,
        "source": "benchmark",
        "scenario": scenario["name"],
        "repeat": repeat,
        "tried": scenario["tactic"],
        "before": measured(before),
    }
    if scenario["apply"] is None:
        record.update(tactic="none", improved=None, gain=None)
    else:
        started = time.monotonic()
        indexes = apply_tactic(session, name, scenario["apply"], scenario["indexes"])
        table.prepare()
        record["apply_s"] = round(time.monotonic() - started, 1)
        drive(table, scenario["mix"], min(5.0, seconds), rate=scenario.get("rate"), seed=98)
        after = drive(table, scenario["mix"], seconds, rate=scenario.get("rate"), seed=repeat + 1)
        good, gain = improved(before, after, feats, args.min_gain)
        record.update(
            tactic=scenario["tactic"] if good else "none",
            improved=good,
            gain=round(gain, 3),
            indexes_after=len(indexes),
            after=measured(after),
        )
    tables.ensure_table(session, KEYSPACE, name, state="absent")
    return record


def cassandra_schema_wait(session):
    session.cluster.control_connection.wait_for_schema_agreement()


def agreement(runs, use_runs, seed=0):
    """The advisor's decision for each run's 'before' features against its measured label, the runs it learned
    being those of the other repeats (with one repeat: every other run, which never includes its own scenario)."""
    right = 0
    repeats = len({run["repeat"] for run in runs})
    for index, run in enumerate(runs):
        tactics = advisor.TacticAdvisor(seed=seed)
        tactics.bootstrap(advisor.knowledge_base(seed=seed), source="knowledge_base")
        if use_runs:
            others = [
                (r["features"], r["tactic"])
                for i, r in enumerate(runs)
                if (r["repeat"] != run["repeat"] if repeats > 1 else i != index)
            ]
            tactics.bootstrap(others, source="benchmark")
        decided = tactics.decide(run["features"], now=0.0)["tactic"]
        run.setdefault("decided", {})["with_runs" if use_runs else "knowledge_base"] = decided
        right += decided == run["tactic"]
    return right / len(runs) if runs else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--short", action="store_true", help="4 scenarios, 8 s windows")
    parser.add_argument("--seconds", type=float, default=None, help="measured window per run (20; short 8)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each scenario")
    parser.add_argument("--min-gain", type=float, default=0.10, help="KPI improvement that confirms a tactic")
    parser.add_argument("--sla-p999-ms", type=float, default=100.0)
    parser.add_argument(
        "--out", default=os.path.join(ROOT, ".lab", "bench", "advisor", "tactic-runs.jsonl"), help="JSON lines written"
    )
    args = parser.parse_args()
    seconds = args.seconds or (8.0 if args.short else 20.0)
    scenarios = [s for s in SCENARIOS if not args.short or s["name"] in SHORT]
    began = time.time()
    cluster, session = cassandra.connect(bench_params(), only_these_hosts=True)
    try:
        cassandra.ensure_keyspace(
            session, KEYSPACE, "present", cassandra.wanted_replication("SimpleStrategy", replication_factor=1)
        )
        runs = []
        for repeat in range(args.repeats):
            for scenario in scenarios:
                print("... %s (run %d): %.0f s windows" % (scenario["name"], repeat + 1, seconds), flush=True)
                runs.append(run_scenario(session, scenario, seconds, args, repeat))
    finally:
        cluster.shutdown()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"schema": advisor.STATE_SCHEMA}) + "\n")
        for run in runs:
            handle.write(json.dumps(run, sort_keys=True) + "\n")
    kb_only = agreement(runs, use_runs=False)
    with_runs = agreement(runs, use_runs=True)
    print()
    print("| scenario | tactic tried | ops/s before | ops/s after | gain | p99.9 ms before | after | label |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for run in runs:
        after = run.get("after") or {}
        print(
            "| %s | %s | %.0f | %s | %s | %.1f | %s | %s |"
            % (
                run["scenario"],
                run["tried"],
                run["before"]["throughput"],
                "%.0f" % after["throughput"] if after else "-",
                "%.2f" % run["gain"] if run.get("gain") else "-",
                run["before"]["p999_ms"],
                "%.1f" % after["p999_ms"] if after else "-",
                run["tactic"],
            )
        )
    print()
    print(
        "| advisor (%s) | agrees with the measured label |"
        % ("runs of the other repeats learned" if args.repeats > 1 else "every other run learned")
    )
    print("|---|---:|")
    print("| knowledge base alone | %d/%d (%.2f) |" % (round(kb_only * len(runs)), len(runs), kb_only))
    print("| knowledge base + lab runs | %d/%d (%.2f) |" % (round(with_runs * len(runs)), len(runs), with_runs))
    print()
    print("decisions:", ", ".join("%s->%s" % (r["scenario"], r["decided"]) for r in runs))
    print("failed operations:", sum(r["before"]["errors"] + (r.get("after") or {}).get("errors", 0) for r in runs))
    print("written: %s (%d runs); %.0f s" % (os.path.relpath(args.out, ROOT), len(runs), time.time() - began))


if __name__ == "__main__":
    main()
