# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Effect sizes of Cassandra 5.0 knobs on a node shaped like a real one, each with its A/A noise floor beside it.

The node shape (inventories/bench): one Cassandra node on its own CPU (the load driver and this script on the
other), its memory capped by a memory cgroup (2 GiB: 1 GiB heap, the rest off-heap and page cache) under a data
set of 4M YCSB rows (about 4.3 GB), written offline as SSTables and linked into the table in seconds
(stores/cassandra/bulk.py), so that reads miss the page cache and reach the disk.

The designs (trials/designs.py):
- A/A: the configuration in place against itself in interleaved windows (ABBA), the noise floor;
- live knobs (nodetool, ALTER TABLE, the device's read-ahead): one warm client runs through the whole workload,
  and the knob is switched between the windows, in ABBA order, a settle time left out of every window;
- the compression chunk length (a rewrite of every SSTable to change on a live table: priced by the time
  `nodetool upgradesstables -a` takes, not switched back and forth): a second table holding the same rows written
  with the other chunk length, the windows alternating between the two tables (a client run per window).
Every pair of adjacent windows gives a ratio B / A; the table gives their geometric mean, the 95 % interval (t on
the logarithms, or bootstrap when they are skewed), the pairs each arm won, and the verdict against the floor.
Every window records the node's and the client side's CPU, the bytes the node read from the disk and its page
cache.

    .venv/bin/python benchmarks/knob_effects.py                      # B, A, C, F, E, upload; every knob
    .venv/bin/python benchmarks/knob_effects.py --short              # B only: A/A and two knobs, 30 s windows
    .venv/bin/python benchmarks/knob_effects.py --workloads b --knobs key_cache_size,concurrent_reads

The bench node must be up: ansible-playbook -i inventories/bench playbooks/lab_up.yml (run.py brings it up).
Needs root for the memory cgroup and the read-ahead knob (the device's setting is restored at the end).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

from _common import use_collection

use_collection(integration=True)

import _shape
from _shape import BENCH, CHUNK_TABLES, DATA_DIR, DRIVER, GROUP, KEYSPACE, nodetool, password

from ansible_collections.tactician.nosql.plugins.module_utils.core import cgroups, process
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog import Catalog
from ansible_collections.tactician.nosql.plugins.module_utils.trials import designs, speed_probe
from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run as loadrun
from ansible_collections.tactician.nosql.plugins.module_utils.workload import loaddriver

# YCSB core workloads, and an upload (the HPC trace's: 95 % inserts).
HOTSPOT = {"requestdistribution": "hotspot", "hotspotdatafraction": 0.01, "hotspotopnfraction": 0.9}
WORKLOADS = {
    "a": {"workload": "a", "props": {}},
    "b": {"workload": "b", "props": {}},
    "c": {"workload": "c", "props": {}},
    "e": {"workload": "e", "props": {}},
    "f": {"workload": "f", "props": {}},
    "upload": {"workload": "a", "props": {"readproportion": 0.05, "updateproportion": 0.0, "insertproportion": 0.95}},
    # A small hot set (YCSB's hotspot chooser: 90 % of the operations on 1 % of the rows, 40,000 of 4M, about 45 MB),
    # the shape where a row cache can hold what the reads want: B's reads on it, and A's updates, each of which
    # invalidates its row in the cache.
    "b-hot": {"workload": "b", "props": dict(HOTSPOT)},
    "a-hot": {"workload": "a", "props": dict(HOTSPOT)},
}


# ----------------------------------------------------------------------------------------------- the knobs
def cache_capacities(node=_shape.BENCH_NODE):
    """(key, row, counter) cache capacities in MiB, from nodetool info."""
    found = {}
    for line in nodetool("info", node=node).splitlines():
        for name in ("Key", "Row", "Counter"):
            if line.startswith(name + " Cache"):
                text = line.split("capacity", 1)[1].split(",")[0].strip()
                number, unit = text.split()
                found[name] = (
                    float(number) * {"bytes": 1 / 1048576.0, "KiB": 1 / 1024.0, "MiB": 1.0, "GiB": 1024.0}[unit]
                )
    return int(round(found["Key"])), int(round(found["Row"])), int(round(found["Counter"]))


_CAPACITIES = {}  # node name: (key, row, counter) MiB, as the node started (read once)
_CURRENT = {}  # node name: the capacities this run set last
# What the node's settings mean and default to (catalog/cassandra-5.0.yml).
CATALOG = Catalog.for_store("cassandra")


def set_capacities(node, key=None, row=None):
    """nodetool setcachecapacity sets the three caches at once: the one not given keeps what this run set last
    (at first what the node had)."""
    if node.name not in _CAPACITIES:
        _CAPACITIES[node.name] = cache_capacities(node)
    now_key, now_row, counter = _CURRENT.get(node.name, _CAPACITIES[node.name])
    wanted = (now_key if key is None else int(key), now_row if row is None else int(row), counter)
    nodetool("setcachecapacity", *wanted, node=node)
    _CURRENT[node.name] = wanted


def set_key_cache(value, node=_shape.BENCH_NODE):
    set_capacities(node, key=value)


def configured_key_cache(settings, heap):
    """The key cache capacity (MiB) a node starts with: its cassandra.yaml key_cache_size, else the catalog's
    default for its heap (Cassandra's: the smaller of 5 % of the heap and 100 MiB)."""
    if settings.get("key_cache_size") not in (None, ""):
        return CATALOG.normalize("key_cache_size", settings["key_cache_size"])
    return CATALOG.defaults(heap_mb=cgroups.parse_size(heap, "cassandra_node_heap_size") >> 20)["key_cache_size"]


def defaults_key_cache(node=_shape.BENCH_NODE, log=print):
    """The key cache of the defaults: the one the node is configured to start with. A run before may have left
    another capacity on the running node (set live, kept until a restart); it is set back, and said."""
    configured = configured_key_cache(*_shape.node_settings(node))
    found = cache_capacities(node)[0]
    if found != configured:
        log(
            "%s: key cache %d MiB found, left by a run before; set back to its configured %d MiB"
            % (node.name, found, configured)
        )
        set_key_cache(configured, node)
    return configured


def set_row_cache(value, node=None, tables=("usertable",)):
    """The tables' row cache on (value MiB of capacity, every row of a partition cached) or off (0: the tables'
    default caching, the cache emptied so that its memory goes back to the page cache, and the node's own
    capacity set back). Live only when the node started with row_cache_size above 0 (the bench inventory's 16
    MiB): with 0 the node has no row cache to size."""
    node = node or _shape.BENCH_NODE
    if node.name not in _CAPACITIES:
        _CAPACITIES[node.name] = cache_capacities(node)
    for table in tables:
        _shape.alter_table(table, node=node, caching={"keys": "ALL", "rows_per_partition": "ALL" if value else "NONE"})
    if value:
        set_capacities(node, row=value)
    else:
        nodetool("invalidaterowcache", node=node)
        set_capacities(node, row=_CAPACITIES[node.name][1])


def read_ahead_file():
    """The read-ahead setting of the block device that holds the node's data directory."""
    dev = os.stat(DATA_DIR).st_dev
    base = "/sys/dev/block/%d:%d" % (os.major(dev), os.minor(dev))
    for path in (os.path.join(base, "queue", "read_ahead_kb"), os.path.join(base, "..", "queue", "read_ahead_kb")):
        if os.path.exists(path):
            return os.path.realpath(path)
    return None


def set_read_ahead(value):
    with open(read_ahead_file(), "w") as handle:
        handle.write(str(int(value)))


def set_memtable(value):
    _shape.cql_execute("ALTER TABLE %s.usertable WITH memtable = '%s'" % (KEYSPACE, value))
    nodetool("flush", KEYSPACE, "usertable")  # the next memtable is of the new kind


# name: (how it changes, the reference value (None: the one in place), the candidate, apply(value))
LIVE_KNOBS = {
    "key_cache_size": ("live: nodetool setcachecapacity (MiB)", None, 256, set_key_cache),
    "concurrent_reads": (
        "live: nodetool setconcurrency ReadStage",
        32,
        8,
        lambda v: nodetool("setconcurrency", "ReadStage", v),
    ),
    "concurrent_writes": (
        "live: nodetool setconcurrency MutationStage",
        32,
        8,
        lambda v: nodetool("setconcurrency", "MutationStage", v),
    ),
    "compaction_throughput": (
        "live: nodetool setcompactionthroughput (MiB/s)",
        64,
        8,
        lambda v: nodetool("setcompactionthroughput", v),
    ),
    "concurrent_compactors": (
        "live: nodetool setconcurrentcompactors",
        2,
        1,
        lambda v: nodetool("setconcurrentcompactors", v),
    ),
    "row_cache_size": (
        "live: ALTER TABLE ... WITH caching (rows_per_partition ALL / NONE) and nodetool setcachecapacity (MiB)",
        0,
        256,
        set_row_cache,
    ),
    "read_ahead_kb": ("live: the device's read_ahead_kb (not Cassandra's; machine-wide)", None, 16, set_read_ahead),
    "memtable": ("per table: ALTER TABLE ... WITH memtable (next flush)", "skiplist", "trie", set_memtable),
}
CHUNK_KNOB = "compression_chunk_kb"
# Seconds a switch may take beyond its settle time (ALTER TABLE ... WITH memtable flushes the table).
SWITCH_S = {"memtable": 90}


def knob_name(spec):
    """The knob of a --knobs entry: NAME or NAME=CANDIDATE."""
    return spec.split("=", 1)[0] if spec else spec


def knob_candidate(spec, default):
    """The candidate value of a --knobs entry (NAME=CANDIDATE), else the knob's own candidate."""
    if "=" not in spec:
        return default
    text = spec.split("=", 1)[1]
    return int(text) if text.lstrip("-").isdigit() else text


def current_value(knob):
    if knob == "key_cache_size":
        found = cache_capacities()
        _CAPACITIES.setdefault(_shape.BENCH_NODE.name, found)
        _CURRENT[_shape.BENCH_NODE.name] = found
        return found[0]
    if knob == "read_ahead_kb":
        with open(read_ahead_file()) as handle:
            return int(handle.read())
    return LIVE_KNOBS[knob][1]


# ----------------------------------------------------------------------------------------------- measuring
class Sampler:
    """CPU of the node and of the rest of the machine, the node's disk reads and page cache, and the counters of
    the disk its data is on, at one moment."""

    def __init__(self, pid, group=GROUP, data_dir=None):
        self.pid = pid
        self.group = cgroups.MemoryGroup(group) if cgroups.version() else None
        self.device = _shape.block_device(data_dir or _shape.BENCH)

    def sample(self):
        counters = _shape.io_counters(self.pid)
        stats = self.group.stats() if self.group else {}
        disk = _shape.disk_counters(self.device)
        return {
            "disk_reads": disk.get("reads"),
            "disk_read_ms": disk.get("read_ms"),
            "disk_busy_ms": disk.get("busy_ms"),
            "t": time.time(),
            "server_cpu": process.cpu_seconds(self.pid),
            "machine_cpu": loaddriver.machine_busy_seconds(),
            "read_bytes": counters.get("read_bytes"),
            "write_bytes": counters.get("write_bytes"),
            "cache_mb": (stats.get("cache") or 0) / 1048576.0 if stats.get("exists") else None,
            # The group's anonymous memory: the heap and what the process holds off it (a row cache's memory
            # stays resident after the cache shrinks), which the page cache does not get.
            "anon_mb": (stats.get("anon") or 0) / 1048576.0 if stats.get("exists") else None,
        }


def window_record(label, start, end, status, speeds):
    span = end["t"] - start["t"]
    server = end["server_cpu"] - start["server_cpu"]
    machine = end["machine_cpu"] - start["machine_cpu"]
    ops = loaddriver.ops_between(status, start["t"], end["t"]) if status else None
    speed = speed_probe.speed_between(speeds, start["t"], end["t"])
    return {
        "arm": label,
        "start": start["t"],
        "seconds": round(span, 1),
        "ops_s": ops,
        # The node's CPU speed in the window (the probe's median), and the throughput per unit of it.
        "cpu_speed": round(speed, 2) if speed else None,
        "ops_per_speed": ops / speed if ops and speed else None,
        "server_cpu": round(server / span, 3),
        "client_side_cpu": round(max(0.0, machine - server) / span, 3),
        "read_mb_s": round((end["read_bytes"] - start["read_bytes"]) / span / 1e6, 1) if end["read_bytes"] else None,
        "cache_mb": round(end["cache_mb"]) if end["cache_mb"] is not None else None,
        "anon_mb": round(end["anon_mb"]) if end.get("anon_mb") is not None else None,
        **disk_rates(start, end, span),
    }


def disk_rates(start, end, span):
    """The disk in a window, from its counters: reads completed per second, the mean time a read took (ms; reads
    queue behind each other, so it grows with the reads in flight), and the share of the window with I/O in
    flight; None where a counter is missing."""
    if any(sample.get(key) is None for sample in (start, end) for key in ("disk_reads", "disk_read_ms")):
        return {"disk_reads_s": None, "disk_read_ms": None, "disk_busy": None}
    reads = end["disk_reads"] - start["disk_reads"]
    busy = None
    if start.get("disk_busy_ms") is not None and end.get("disk_busy_ms") is not None:
        busy = round((end["disk_busy_ms"] - start["disk_busy_ms"]) / 1000.0 / span, 3)
    return {
        "disk_reads_s": round(reads / span, 1),
        "disk_read_ms": round((end["disk_read_ms"] - start["disk_read_ms"]) / reads, 2) if reads > 0 else None,
        "disk_busy": busy,
    }


def client_params(spec, table, seconds, threads, records, node=_shape.BENCH_NODE):
    props = dict(WORKLOADS[spec]["props"], recordcount=records, operationcount=loadrun.UNBOUNDED_OPERATIONS)
    props["table"] = table
    return loadrun.with_defaults(
        store="cassandra",
        driver_home=DRIVER,
        hosts=[node.host],
        login_user="tactician",
        login_password=password(),
        keyspace=KEYSPACE,
        workload=WORKLOADS[spec]["workload"],
        phases=["run"],
        threads=threads,
        max_seconds=int(seconds),
        status_interval=1,
        properties=props,
        server_pid_files=[node.pid_file],
        timeout=int(seconds) + 600,
    )


class Client(threading.Thread):
    """One YCSB client run in the background; its status lines give the throughput of any window."""

    def __init__(self, params):
        super().__init__(daemon=True)
        self.params, self.result, self.error = params, None, None

    def run(self):
        try:
            self.result = loadrun.execute(self.params, loadrun.plan(self.params))[0]
        except Exception as exc:  # reported by the caller
            self.error = exc

    def status(self):
        return self.result["status_by_process"][0] if self.result else []


def live_design(name, labels, values, apply, settle_s, window_s, sampler, log):
    """Windows in the order of labels, values[label] applied before each (when it changes); returns the windows
    with their sample pairs (throughput filled in once the client's status is in)."""
    windows, applied = [], None
    for label in labels:
        if values[label] != applied:
            apply(values[label])
            applied = values[label]
        time.sleep(settle_s)
        start = sampler.sample()
        time.sleep(window_s)
        windows.append((label, start, sampler.sample()))
        log("  %s window %d/%d (%s = %s) done" % (name, len(windows), len(labels), label, values[label]))
    return windows


# The ways of reading a design's windows: adjacent pairs or ABBA blocks, throughput raw or per unit of CPU speed.
ESTIMATORS = ("pairs, per CPU speed", "blocks, per CPU speed", "pairs, raw", "blocks, raw")


def _summaries(records):
    """{estimator: summary} of a design's windows; blocks use the whole blocks of four only, and cancel a drift
    that is linear within a block."""
    labels = [r["arm"] for r in records]
    whole = len(labels) - len(labels) % 4
    out = {}
    for key, name in (("ops_per_speed", "per CPU speed"), ("ops_s", "raw")):
        values = [r.get(key) for r in records]
        out["pairs, " + name] = designs.summarize(designs.pair_ratios(labels, values))
        out["blocks, " + name] = designs.summarize(designs.block_ratios(labels[:whole], values[:whole]))
    return out


def _unchanged(_value):
    """The A/A design's switch: nothing changes."""


def measure_workload(spec, knobs, args, probe, log):
    pid = _shape.server_pid()
    sampler = Sampler(pid)
    labels = designs.window_order(args.pairs, "abba")
    aa_labels = designs.window_order(args.aa_pairs or args.pairs, "abba")
    plan = [] if args.aa_pairs == 0 else [("A/A", args.aa_window_s, None)]
    plan += [(k, args.window_s, k) for k in knobs if knob_name(k) in LIVE_KNOBS]
    if not plan:
        return [chunk_design(spec, args, sampler, probe, log)] if CHUNK_KNOB in knobs else []
    # The client runs through every design; a switch that flushes (the memtable) took up to 80 s more per window
    # on the node shape, so each window is given its knob's switch time as well (a window the client did not
    # cover drops its pair).
    total = args.warmup_s + sum(
        len(aa_labels if k is None else labels) * (args.settle_s + w + SWITCH_S.get(knob_name(k), 5)) + 30
        for _name, w, k in plan
    )
    client = Client(client_params(spec, "usertable", total + 60, args.threads, args.records))
    client.start()
    log("%s: warm-up %d s, then %s" % (spec, args.warmup_s, ", ".join(n for n, _w, _k in plan)))
    time.sleep(args.warmup_s)
    raw = []
    for name, window_s, knob in plan:
        if knob is None:
            values, apply, how = {"A": "in place", "B": "in place"}, _unchanged, "the same configuration"
        else:
            name = knob_name(knob)
            how, reference, candidate, apply = LIVE_KNOBS[name]
            candidate = knob_candidate(knob, candidate)
            reference = current_value(name) if reference is None else reference
            values = {"A": reference, "B": candidate}
        try:
            order = aa_labels if knob is None else labels
            windows = live_design(name, order, values, apply, args.settle_s, window_s, sampler, log)
        finally:
            if knob is not None:
                apply(values["A"])
        raw.append((name, how, values, windows))
        if client.error or not client.is_alive():
            break
    client.join()
    if client.error:
        raise SystemExit("%s: the client failed: %s" % (spec, client.error))
    status = client.status()
    speeds = probe.samples()
    results = []
    for name, how, values, windows in raw:
        records = [window_record(label, start, end, status, speeds) for label, start, end in windows]
        results.append(
            {
                "workload": spec,
                "knob": name,
                "how": how,
                "A": values["A"],
                "B": values["B"],
                "window_s": records[0]["seconds"] if records else None,
                "windows": records,
                "summaries": _summaries(records),
            }
        )
    results.append({"workload": spec, "knob": "(run)", "client": _client_summary(client.result)})
    if CHUNK_KNOB in knobs:
        results.append(chunk_design(spec, args, sampler, probe, log))
    return results


def client_window(spec, table, args, seconds, settle, sampler, probe, label, node=_shape.BENCH_NODE):
    """One client run of settle + seconds on the node's table, measured after its first settle seconds: its window
    record (the sampler samples that node)."""
    return client_windows_together([(spec, table, sampler, label, node)], args, seconds, settle, probe)[0]


def client_windows_together(runs, args, seconds, settle, probe):
    """Client runs of settle + seconds on several nodes at the same time, one client each, measured after their
    first settle seconds: runs are (spec, table, sampler, label, node); returns their window records in that
    order. Every node sees the same disk and the same CPU share at the same moment."""
    clients = [
        Client(client_params(spec, table, settle + seconds, args.threads, args.records, node))
        for spec, table, _sampler, _label, node in runs
    ]
    try:
        for client in clients:
            client.start()
        time.sleep(settle)
        starts = [sampler.sample() for _spec, _table, sampler, _label, _node in runs]
        for client in clients:
            client.join()
    except BaseException:
        # Interrupted (Ctrl-C, kill -TERM): the clients run in threads that outlive this one; end their processes.
        loaddriver.stop_clients()
        raise
    ends = [sampler.sample() for _spec, _table, sampler, _label, _node in runs]
    records = []
    for (spec, _table, _sampler, label, _node), client, start, end in zip(runs, clients, starts, ends, strict=True):
        if client.error:
            raise SystemExit("%s: the client failed: %s" % (spec, client.error))
        status = client.status()
        end = dict(end, t=min(end["t"], status[-1][0])) if status else end
        records.append(window_record(label, start, end, status, probe.samples()))
    return records


def chunk_design(spec, args, sampler, probe, log):
    """The same rows in two tables of different compression chunk length; windows alternate tables, one client
    run per window (its first settle_s seconds left out)."""
    labels = designs.window_order(args.pairs, "abba")
    values = {"A": 16, "B": 4}
    records = []
    for index, label in enumerate(labels):
        table = CHUNK_TABLES[values[label]]
        began = time.time()
        records.append(client_window(spec, table, args, args.window_s, args.chunk_settle_s, sampler, probe, label))
        log(
            "  %s window %d/%d (%s = %d KiB, %.0f s) done"
            % (CHUNK_KNOB, index + 1, len(labels), label, values[label], time.time() - began)
        )
    return {
        "workload": spec,
        "knob": CHUNK_KNOB,
        "how": "per table: ALTER TABLE ... WITH compression, then nodetool upgradesstables -a (a rewrite of the table)",
        "A": 16,
        "B": 4,
        "window_s": args.window_s,
        "windows": records,
        "summaries": _summaries(records),
    }


def price_chunk_switch(spec, args, sampler, probe, log, chunk_kb=4):
    """What switching the chunk length of the live table costs: under the workload, ALTER TABLE ... WITH
    compression, then `nodetool upgradesstables -a` (a rewrite of every SSTable). A client run gives the window
    before; during the rewrite, client runs of window_s follow each other until it ends; a last run gives the window
    after. Gives the rewrite's wall time, node CPU and bytes written, the throughput before, during (the seconds the
    runs covered, their starts left out) and after, and the operations lost against the throughput before: the
    price the planner's cost-benefit weighs against the gain. The table's data set is reloaded by the next run."""
    table = CHUNK_TABLES[16]

    def measured_run(seconds, settle):
        return client_window(spec, table, args, seconds, settle, sampler, probe, "run")

    before = measured_run(args.window_s, args.warmup_s)
    switch = sampler.sample()
    done = {}

    def rewrite():
        try:
            _shape.cql_execute(
                "ALTER TABLE %s.%s WITH compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': %d}"
                % (KEYSPACE, table, chunk_kb)
            )
            nodetool("upgradesstables", "-a", KEYSPACE, table)
        except Exception as exc:  # reported below
            done["error"] = exc
        done["at"] = sampler.sample()

    worker = threading.Thread(target=rewrite, daemon=True)
    worker.start()
    log("  %s: rewriting %s with %d KiB chunks under the workload" % (spec, table, chunk_kb))
    during = []
    while worker.is_alive():
        during.append(measured_run(args.window_s, args.chunk_settle_s))
    worker.join()
    if "error" in done:
        raise SystemExit("%s: the rewrite failed: %s" % (spec, done["error"]))
    rewritten = done["at"]
    written = rewritten["write_bytes"] - switch["write_bytes"] if switch["write_bytes"] is not None else None
    after = measured_run(args.window_s, args.chunk_settle_s)
    covered = sum(w["seconds"] for w in during if w["ops_s"] is not None)
    during_ops_s = (
        sum(w["ops_s"] * w["seconds"] for w in during if w["ops_s"] is not None) / covered if covered else None
    )
    rewrite_s = rewritten["t"] - switch["t"]
    lost = (before["ops_s"] - during_ops_s) * rewrite_s if before["ops_s"] and during_ops_s is not None else None
    gain = after["ops_s"] - before["ops_s"] if before["ops_s"] and after["ops_s"] else None
    log("  %s: rewrite done in %.0f s" % (spec, rewrite_s))
    return {
        "workload": spec,
        "knob": CHUNK_KNOB + " (the switch)",
        "A": 16,
        "B": chunk_kb,
        "rewrite_s": round(rewrite_s, 1),
        "rewrite_server_cpu_s": round(rewritten["server_cpu"] - switch["server_cpu"], 1),
        "written_gb": round(written / 1e9, 2) if written else None,
        "ops_s": {"before": before["ops_s"], "during": during_ops_s, "after": after["ops_s"]},
        "windows": [before] + during + [after],
        "ops_lost": round(lost) if lost is not None else None,
        # After how long one window's gain pays the operations lost: an indication; the effect is the design's.
        "break_even_s": round(lost / gain) if lost and gain and gain > 0 else None,
    }


def _client_summary(result):
    if not result:
        return None
    return {
        "throughput": result.get("throughput"),
        "failed": result.get("failed_total"),
        "client_cpu_s": result.get("client_cpu_s"),
        "server_cpu_s": result.get("server_cpu_s"),
        "wall_s": result.get("wall_s"),
    }


# ----------------------------------------------------------------------------------------------- report
def _interval_text(summary):
    bounds = designs.interval_of(summary) if summary else None
    if not bounds:
        return "-"
    return "%.3f [%.3f, %.3f]%s" % (
        summary["ratio"],
        bounds[0],
        bounds[1],
        " (bootstrap)" if summary.get("skewed") else "",
    )


def markdown(results, shape):
    """The table of effects: per workload, the estimator with the narrowest A/A floor (chosen on the A/A windows
    alone) gives each knob's ratio, interval and verdict; the other estimators follow with their own floors. The
    summaries are computed from the windows, so a saved run renders again with --render."""
    rows = [row for row in results if row.get("windows") and "A" in {w["arm"] for w in row["windows"]}]
    for row in rows:
        row["summaries"] = _summaries(row["windows"])
    floors = {}
    for row in rows:
        if row["knob"] == "A/A":
            floors[row["workload"]] = {name: designs.noise_floor(s) for name, s in row["summaries"].items()}
            floors[row["workload"]]["(chosen)"] = designs.narrowest_floor(row["summaries"])[0]
    lines = [
        "Node shape: %s." % shape,
        "",
        "| workload | knob | how it changes | A (reference) | B | windows | estimator (narrowest A/A floor) | B / A"
        " [95 %] | B won | noise floor (A/A) | verdict | the other estimators: B / A [95 %] (their floor)"
        " | node CPU | client side CPU | disk read MB/s A / B | page cache MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        found = floors.get(row["workload"], {})
        chosen = found.get("(chosen)") or ESTIMATORS[0]
        summary, floor = row["summaries"][chosen], found.get(chosen)
        arms = {label: [w for w in row["windows"] if w["arm"] == label] for label in ("A", "B")}

        def mean(key, label, arms=arms):
            values = [w[key] for w in arms[label] if w.get(key) is not None]
            return sum(values) / len(values) if values else None

        aa = row["knob"] == "A/A"
        others = "; ".join(
            "%s %s (+-%.1f %%)" % (name, _interval_text(row["summaries"][name]), 100 * found[name])
            if found.get(name) is not None
            else "%s %s" % (name, _interval_text(row["summaries"][name]))
            for name in ESTIMATORS
            if name != chosen
        )
        lines.append(
            "| %s | %s | %s | %s | %s | %d x %s s | %s | %s | %d of %d | %s | %s | %s | %s | %s | %s / %s | %s |"
            % (
                row["workload"].upper() if len(row["workload"]) == 1 else row["workload"],
                row["knob"],
                row["how"],
                row["A"],
                row["B"],
                len(row["windows"]),
                row["window_s"],
                chosen,
                _interval_text(summary),
                summary["b_won"],
                summary["n"],
                "+-%.1f %%" % (100 * floor) if floor is not None else "-",
                "(the floor)" if aa else designs.verdict(summary, floor),
                others,
                _fmt(mean("server_cpu", "A")),
                _fmt(mean("client_side_cpu", "A")),
                _fmt(mean("read_mb_s", "A"), "%.0f"),
                _fmt(mean("read_mb_s", "B"), "%.0f"),
                _fmt(mean("cache_mb", "A"), "%.0f"),
            )
        )
    for row in results:
        if "rewrite_s" in row:
            ops = row["ops_s"]
            lines.append("")
            lines.append(
                "The price of the switch (%s, %s -> %s KiB on the live table, under workload %s): the rewrite took"
                " %.0f s and %s s of node CPU, wrote %s GB; ops/s before %s, during %s, after %s; %s operations"
                " lost; the gain of the window after pays them back in %s s."
                % (
                    CHUNK_KNOB,
                    row["A"],
                    row["B"],
                    row["workload"].upper(),
                    row["rewrite_s"],
                    row["rewrite_server_cpu_s"],
                    row["written_gb"],
                    _fmt(ops["before"], "%.0f"),
                    _fmt(ops["during"], "%.0f"),
                    _fmt(ops["after"], "%.0f"),
                    row["ops_lost"],
                    row["break_even_s"],
                )
            )
    lines.append("")
    lines.append("Throughput per window (ops/s, in the order run):")
    lines.append("")
    for row in results:
        if "windows" in row:
            lines.append(
                "- %s / %s: %s"
                % (
                    row["workload"],
                    row["knob"],
                    " ".join(
                        "%s %s (speed %s)" % (w["arm"], _fmt(w["ops_s"], "%.0f"), w.get("cpu_speed") or "-")
                        for w in row["windows"]
                    ),
                )
            )
    return "\n".join(lines) + "\n"


def _fmt(value, pattern="%.2f"):
    return pattern % value if value is not None else "-"


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--short", action="store_true", help="workload B: A/A and two knobs, 30 s windows")
    parser.add_argument("--workloads", default=None, help="of %s, separated by commas" % ", ".join(WORKLOADS))
    parser.add_argument(
        "--knobs",
        default=None,
        help="of %s (a live knob as NAME=VALUE sets its candidate); none: the A/A design alone"
        % ", ".join(list(LIVE_KNOBS) + [CHUNK_KNOB]),
    )
    parser.add_argument("--pairs", type=int, default=None, help="pairs of windows per design (ABBA order)")
    parser.add_argument(
        "--aa-pairs", type=int, default=None, help="pairs of the A/A design (default --pairs; 0: no A/A design)"
    )
    parser.add_argument("--window-s", type=float, default=None, help="a knob's measured window")
    parser.add_argument("--aa-window-s", type=float, default=None, help="the A/A design's window")
    parser.add_argument("--settle-s", type=float, default=10.0, help="left out after every switch")
    parser.add_argument("--chunk-settle-s", type=float, default=20.0, help="left out at a client's start")
    parser.add_argument("--warmup-s", type=float, default=60.0)
    parser.add_argument("--records", type=int, default=4000000)
    parser.add_argument("--threads", type=int, default=64)
    parser.add_argument(
        "--price-chunk-switch",
        action="store_true",
        help="after the designs, switch the live table to 4 KiB chunks under the first workload and price it",
    )
    parser.add_argument("--reload", action="store_true", help="reload the data sets even when they are in place")
    parser.add_argument("--out", default=os.path.join(BENCH, "knob-effects"))
    parser.add_argument("--markdown", default=None)
    parser.add_argument("--render", default=None, help="print the table of a saved run (its JSON file) and stop")
    parser.add_argument("--csv", default=None, help="(accepted for run.py; the tables are Markdown)")
    _shape.add_disk_cap_options(parser, "the bench node's")
    _shape.add_allocator_option(parser, "the bench node")
    args = parser.parse_args(argv)
    _shape.check_disk_cap_options(parser, args)
    _shape.check_allocator_option(parser, args)
    if args.short:
        args.workloads = args.workloads or "b"
        args.knobs = args.knobs or "key_cache_size,concurrent_reads"
        args.pairs = args.pairs or 3
        args.window_s = args.window_s or 30.0
        args.aa_window_s = args.aa_window_s or 30.0
    args.workloads = (args.workloads or "b,a,c,f,e,upload").split(",")
    args.knobs = [] if args.knobs == "none" else (args.knobs or ",".join(list(LIVE_KNOBS) + [CHUNK_KNOB])).split(",")
    args.pairs = args.pairs or 3
    args.window_s = args.window_s or 30.0
    args.aa_window_s = args.aa_window_s or 60.0
    for name in args.workloads:
        if name not in WORKLOADS:
            parser.error("--workloads: %r is not allowed; choose from %s" % (name, ", ".join(WORKLOADS)))
    for spec in args.knobs:
        name = knob_name(spec)
        if name not in LIVE_KNOBS and spec != CHUNK_KNOB:
            parser.error(
                "--knobs: %r is not allowed; choose from %s" % (name, ", ".join(list(LIVE_KNOBS) + [CHUNK_KNOB]))
            )
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.render:
        with open(args.render, encoding="utf-8") as handle:
            saved = json.load(handle)
        print(markdown(saved["results"], saved["shape"]))
        return 0
    args.out, stamp, log, server_cpus = _shape.start_run("knob-effects", args.out)

    read_ahead = current_value("read_ahead_kb") if read_ahead_file() else None
    began = time.monotonic()
    results = []
    out_json = os.path.join(args.out, "knob-effects-%s.json" % stamp)
    probe_file = os.path.join(args.out, "cpu-speed-%s.txt" % stamp)
    try:
        with _shape.disk_caps([_shape.BENCH_NODE], args.disk_read_limit, args.disk_read_iops, log=log):
            with _shape.allocator([_shape.BENCH_NODE], args.jemalloc, log=log):
                _shape.ensure_loaded(args.records, force=args.reload, log=log)
                shape = _shape.describe()
                log(shape)
                with speed_probe.SpeedProbe(server_cpus or set(range(os.cpu_count() or 1)), probe_file) as probe:
                    for spec in args.workloads:
                        results += measure_workload(spec, args.knobs, args, probe, log)
                        with open(out_json, "w", encoding="utf-8") as handle:
                            json.dump(
                                {"shape": shape, "args": vars(args), "results": results}, handle, indent=1, default=str
                            )
                    if args.price_chunk_switch:
                        sampler = Sampler(_shape.server_pid())
                        results.append(price_chunk_switch(args.workloads[0], args, sampler, probe, log))
                        with open(out_json, "w", encoding="utf-8") as handle:
                            json.dump(
                                {"shape": shape, "args": vars(args), "results": results}, handle, indent=1, default=str
                            )
    finally:
        if read_ahead is not None:
            set_read_ahead(read_ahead)
    text = markdown(results, shape)
    text += "\nWall time: %.0f min.\n" % ((time.monotonic() - began) / 60.0)
    with open(os.path.join(args.out, "knob-effects-%s.md" % stamp), "w", encoding="utf-8") as handle:
        handle.write(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
