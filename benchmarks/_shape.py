# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The bench node in the shape of a real one (docs/lab.md "Node shape"), shared by the benchmarks that measure on it:
where it lives, its data set of millions of rows (written once as SSTables, linked in by a reload), and nodetool
and CQL against it. Import after _common.use_collection(integration=True)."""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import datetime
import glob
import os
import signal
import subprocess
import time

import yaml
from _common import ROOT, stamped_log
from ansible_run import run_playbook

from ansible_collections.tactician.nosql.plugins.module_utils.core import cgroups, process
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import bulk, tables
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import daemon as cdaemon
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import state as cstate
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.server import run_nodetool

BENCH = os.path.join(ROOT, ".lab", "bench")
HOME = os.path.join(ROOT, ".lab", "cassandra-5.0.9")
DRIVER = os.path.join(BENCH, "load-driver")
KEYSPACE = "tactician"
RECORDS = 4000000


@dataclasses.dataclass(frozen=True)
class Node:
    """A bench node: its inventory, where it lives, how it is reached, and the tables of its data sets (compression
    chunk length in KiB -> table) with the storage mode and SSTable format its data sets are written in."""

    name: str
    inventory: str
    host: str
    jmx_port: int
    tables: dict
    compatibility: str = "CASSANDRA_4"
    sstable_format: str = "big"
    # Chunk lengths whose data sets are copied into the node rather than hard-linked: its table then shares no
    # cached page with another node's table of the same rows.
    copied: tuple = ()

    @property
    def node_dir(self):
        return os.path.join(BENCH, "cassandra", self.name)

    @property
    def data_dir(self):
        return os.path.join(self.node_dir, "data", "data")

    @property
    def pid_file(self):
        return os.path.join(self.node_dir, "cassandra.pid")

    @property
    def group(self):
        return "cassandra-%s-9042" % self.host


# The table the workloads run on, and a twin of it written with 4 KiB compression blocks (Cassandra's default is
# 16 KiB): the same rows, so that the chunk length can be compared without rewriting a table between windows.
BENCH_NODE = Node(
    "bench-cassandra1",
    os.path.join(ROOT, "inventories", "bench"),
    "127.0.0.31",
    7899,
    {16: "usertable", 4: "usertable_c4"},
)
# The experts' configuration (Cassandra 5.0.9's conf/cassandra_latest.yaml: BTI files, trie memtables, unified
# compaction) on a node of the same shape beside it, its rows written in its own format.
LATEST_NODE = Node(
    "bench-latest1",
    os.path.join(ROOT, "inventories", "bench-latest"),
    "127.0.0.33",
    7999,
    {16: "usertable"},
    compatibility="NONE",
    sstable_format="bti",
)
# The tuned configuration on a node of its own (the bench node's settings, another cluster). It holds both twin
# tables. The 4 KiB one is a hard link to the bench node's files (no copy), which the bench node does not read
# while this node does (the page cache belongs to the file, not to the link). The 16 KiB one, the table the bench
# node's defaults read, is a copy of its own (4.3 GB), so that the two nodes can run the defaults side by side on
# the same rows with a page cache each (shape_tuning.py --design pairs, its node A/A).
TUNED_NODE = Node(
    "bench-tuned1",
    os.path.join(ROOT, "inventories", "bench-tuned"),
    "127.0.0.34",
    8099,
    {16: "usertable", 4: "usertable_c4"},
    copied=(16,),
)
# The bench node's settings with the BTI SSTable format (and storage_compatibility_mode NONE, which it needs): its twin
# tables hold the same rows written as BTI files, for a race with the format in its space (shape_racing.py
# --formats), which reads a configuration's format on the node that has it. Its 16 KiB table is a copy of its own:
# the latest node links the same data set.
BTI_NODE = Node(
    "bench-bti1",
    os.path.join(ROOT, "inventories", "bench-bti"),
    "127.0.0.35",
    8199,
    {16: "usertable", 4: "usertable_c4"},
    compatibility="NONE",
    sstable_format="bti",
    copied=(16,),
)
# The bench node's, for the benchmarks that measure on it alone.
DATA_DIR, GROUP, CHUNK_TABLES = BENCH_NODE.data_dir, BENCH_NODE.group, BENCH_NODE.tables


def _interrupted(number, _frame):
    raise KeyboardInterrupt("signal %d" % number)


def start_run(kind, out=None):
    """What every measuring script on the bench node does first: this process (and the clients it starts) kept off
    the node's CPU, the output folder, a UTC stamp and a stamped log there. Returns (out, stamp, log, server_cpus)."""
    client_cpus, server_cpus = process.cpu_split()
    if client_cpus:
        os.sched_setaffinity(0, client_cpus)
    # kill -TERM <pid> ends a run as Ctrl-C does, through its cleanup (knobs, tables and nodes put back); a run
    # started in the background ignores SIGINT.
    signal.signal(signal.SIGTERM, _interrupted)
    # A client runs in a thread that waits on its process; a run ended early would leave that load on the node.
    atexit.register(stop_descendants)
    out = out or os.path.join(BENCH, kind)
    os.makedirs(out, exist_ok=True)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    return out, stamp, stamped_log(os.path.join(out, "%s-%s.log" % (kind, stamp))), server_cpus


def descendants(pid=None, proc="/proc"):
    """PIDs of the processes below pid (default: this one), children first."""
    parents = {}
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(os.path.join(proc, entry, "stat"), encoding="utf-8") as handle:
                state, parent = handle.read().rsplit(")", 1)[1].split()[:2]
        except (OSError, ValueError):
            continue  # ended while read
        if state != "Z":  # a zombie has ended already
            parents.setdefault(int(parent), []).append(int(entry))
    found, todo = [], [pid or os.getpid()]
    while todo:
        children = parents.get(todo.pop(0), [])
        found.extend(children)
        todo.extend(children)
    return found


def stop_descendants(log=print):
    """SIGTERM to every process this run started that still runs (a client's load driver)."""
    for child in descendants():
        try:
            os.kill(child, signal.SIGTERM)
        except ProcessLookupError:
            continue
        log("stopped process %d, still running at the end of the run" % child)


def password():
    with open(os.path.join(BENCH, "secrets", "cassandra-password")) as handle:
        return handle.read().strip()


def nodetool(*args, node=BENCH_NODE):
    return run_nodetool(HOME, "127.0.0.1", node.jmx_port, [str(a) for a in args], timeout=3600)


def cql_execute(statement, timeout=120, node=BENCH_NODE):
    cluster, session = cql.connect(dict(login_hosts=[node.host], login_user="tactician", login_password=password()))
    try:
        return list(session.execute(statement, timeout=timeout))
    finally:
        cluster.shutdown()


def alter_table(table, node=BENCH_NODE, **options):
    """Bring a table of the node's keyspace to these options through the collection's cassandra_table engine (one
    ALTER TABLE, and for a caching change the clients made to re-prepare, as an operator's play would)."""
    cluster, session = cql.connect(dict(login_hosts=[node.host], login_user="tactician", login_password=password()))
    try:
        return tables.ensure_table(session, KEYSPACE, table, options=tables.wanted_table_options(**options))
    finally:
        cluster.shutdown()


def table_state(table, node=BENCH_NODE):
    """The state a configuration leaves in one of the node's tables: {"sstables", "sstables_per_read" (the p50 of
    SSTables touched per local read; None before the table's first read), "sstables_per_read_max",
    "pending_compactions" (the node's)}, from the observe layer's nodetool_state (three nodetool calls)."""
    found = cstate.nodetool_state(HOME, "127.0.0.1", node.jmx_port, tables=[(KEYSPACE, table)], timeout=600)
    return {
        "sstables": found["live_sstables"],
        "sstables_per_read": found["sstables_per_read"],
        "sstables_per_read_max": found["sstables_per_read_max"],
        "pending_compactions": found["pending_compactions_estimated"],
    }


def table_compaction(table, node=BENCH_NODE):
    """The compaction options of one of the node's tables (system_schema.tables), as a CQL map literal."""
    rows = cql_execute(
        "SELECT compaction FROM system_schema.tables WHERE keyspace_name = '%s' AND table_name = '%s'"
        % (KEYSPACE, table),
        node=node,
    )
    if not rows:
        raise SystemExit("%s.%s: no such table on %s" % (KEYSPACE, table, node.name))
    return cql_map(dict(rows[0].compaction))


def cql_map(options):
    """{"class": "X", ...} as a CQL map literal."""
    return "{%s}" % ", ".join("'%s': '%s'" % (k, str(v).replace("'", "''")) for k, v in sorted(options.items()))


def priced(table, node, action):
    """Run action() on the node and price it: {"seconds", "node_cpu_s", "write_mb" (bytes the node wrote
    meanwhile), "before", "after" (table_state)} plus what action returns (a dict)."""
    pid = server_pid(node)
    before = table_state(table, node)
    cpu0, written0, began = process.cpu_seconds(pid), io_counters(pid).get("write_bytes"), time.monotonic()
    outcome = action()
    return dict(
        outcome,
        seconds=round(time.monotonic() - began, 1),
        node_cpu_s=round(process.cpu_seconds(pid) - cpu0, 1),
        write_mb=round((io_counters(pid)["write_bytes"] - written0) / 1e6, 1) if written0 is not None else None,
        before=before,
        after=table_state(table, node),
    )


def switch_compaction(table, options, node=BENCH_NODE, timeout_s=1800.0, poll_s=10.0, log=print):
    """ALTER TABLE ... WITH compaction = options on the node, then wait until the compactions it starts have run
    (no pending task in two polls in a row, or timeout_s). Returns the switch's price (priced), with "options" and
    "finished" (False on timeout)."""

    def switch():
        began = time.monotonic()
        cql_execute("ALTER TABLE %s.%s WITH compaction = %s" % (KEYSPACE, table, options), node=node)
        quiet = 0
        while time.monotonic() - began < timeout_s:
            time.sleep(poll_s)
            pending = cstate.parse_compactionstats(nodetool("compactionstats", node=node))
            quiet = quiet + 1 if pending == 0 else 0
            if quiet >= 2:
                return {"options": options, "finished": True}
            log(
                "  %s.%s on %s: %s compactions pending (%.0f s)"
                % (KEYSPACE, table, node.name, pending, time.monotonic() - began)
            )
        return {"options": options, "finished": False}

    return priced(table, node, switch)


def node_settings(node=BENCH_NODE):
    """(cassandra_node_settings, cassandra_node_heap_size) of the node's inventory (its group_vars/cassandra.yml)."""
    with open(os.path.join(node.inventory, "group_vars", "cassandra.yml"), encoding="utf-8") as handle:
        variables = yaml.safe_load(handle) or {}
    return dict(variables.get("cassandra_node_settings") or {}), str(variables.get("cassandra_node_heap_size", "1G"))


def restart_with(node, settings=None, heap=None, log=print):
    """Restart the node with these cassandra.yaml keys on top of its inventory's and this heap size (both None: as
    its inventory says), through the lab role (lab_up.yml with the variables as extra vars; the role rewrites the
    file and restarts the node when it changed). Returns the price: {"seconds", "settings", "heap", "pid" (the
    node's, after)}."""
    base, base_heap = node_settings(node)
    merged = dict(base, **(settings or {}))
    began = time.monotonic()
    # The role restarts a running node whose cassandra.yaml or start parameters (the heap) changed since it
    # started; the node keeps its memory group and the page cache in it, as a real machine's restart keeps the
    # operating system's page cache.
    playbook(
        "lab_up.yml",
        node,
        extra_vars={"cassandra_node_settings": merged, "cassandra_node_heap_size": heap or base_heap},
    )
    seconds = round(time.monotonic() - began, 1)
    log(
        "  %s restarted with %s, heap %s in %.0f s"
        % (node.name, settings or "its own settings", heap or base_heap, seconds)
    )
    pid = server_pid(node)
    return {"seconds": seconds, "settings": dict(settings or {}), "heap": heap or base_heap, "pid": pid}


def major_compaction(table, node=BENCH_NODE):
    """nodetool compact of one of the node's tables (all its SSTables into one), priced as switch_compaction."""

    def compact():
        nodetool("compact", KEYSPACE, table, node=node)
        return {"options": "nodetool compact", "finished": True}

    return priced(table, node, compact)


def io_counters(pid):
    """The process's I/O counters (/proc/<pid>/io: read_bytes, write_bytes, ...), {} when unreadable."""
    try:
        with open("/proc/%d/io" % pid) as handle:
            return {k: int(v) for k, v in (line.split(":") for line in handle if ":" in line)}
    except (OSError, ValueError):
        return {}


def block_device(path):
    """The name of the whole disk that holds path (vda for a file on /dev/vda1), or None."""
    try:
        number = os.stat(path).st_dev
        link = os.path.realpath("/sys/dev/block/%d:%d" % (os.major(number), os.minor(number)))
    except OSError:
        return None
    if not os.path.exists(link):
        return None
    # A partition's directory sits inside its disk's.
    return (
        os.path.basename(os.path.dirname(link))
        if os.path.exists(os.path.join(link, "partition"))
        else (os.path.basename(link))
    )


def disk_counters(device, path="/proc/diskstats"):
    """The disk's counters since boot: {"reads" (completed), "read_ms" (time spent reading), "busy_ms" (time with
    I/O in flight)}, {} when unknown. The whole device's, whichever process read."""
    if not device:
        return {}
    try:
        with open(path) as handle:
            for line in handle:
                fields = line.split()
                if len(fields) > 12 and fields[2] == device:
                    return {"reads": int(fields[3]), "read_ms": int(fields[6]), "busy_ms": int(fields[12])}
    except (OSError, ValueError):
        pass
    return {}


def server_pid(node=BENCH_NODE):
    return process.read_pid(node.pid_file)


def node_running(node=BENCH_NODE):
    pid = server_pid(node)
    return bool(pid) and process.pid_alive(pid)


def require_node(node=BENCH_NODE):
    if not node_running(node):
        raise SystemExit(
            "the bench node %s is not running: ansible-playbook -i %s playbooks/lab_up.yml"
            % (node.name, os.path.relpath(node.inventory, ROOT))
        )


def datasets(records=RECORDS, chunks=(16, 4), node=BENCH_NODE):
    """The data sets of the node's tables (written when missing, kept): chunk length in KiB -> description."""
    out = {}
    for chunk in chunks:
        if chunk not in node.tables:
            continue
        options = "compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': %d}" % chunk
        out[chunk] = bulk.build_dataset(
            os.path.join(BENCH, "datasets"),
            HOME,
            DRIVER,
            KEYSPACE,
            node.tables[chunk],
            records,
            table_options=options,
            compatibility=node.compatibility,
            sstable_format=node.sstable_format,
        )
        out[chunk]["options"] = options
    return out


# node name: the lab role's variables this run holds on it ({"cassandra_node_disk_read_iops": 1200, ...}): the disk
# read caps of disk_caps() and the allocator of allocator(); every lab_up.yml of the node keeps them until released.
RUN_VARS = {}
CAP_VARS = ("cassandra_node_disk_read_limit", "cassandra_node_disk_read_iops")
ALLOCATOR_VARS = ("cassandra_node_jemalloc",)


def hold(node, variables):
    """Keep these role variables on every later lab_up.yml of the node, for the run."""
    RUN_VARS[node.name] = dict(RUN_VARS.get(node.name, {}), **variables)


def release(node, names=None):
    """Stop keeping these role variables (None: all of them) on the node's later starts."""
    kept = {k: v for k, v in RUN_VARS.pop(node.name, {}).items() if names is not None and k not in names}
    if kept:
        RUN_VARS[node.name] = kept


def held(node, names):
    """The role variables of these names the run holds on the node ({} for none)."""
    return {k: v for k, v in RUN_VARS.get(node.name, {}).items() if k in names}


def playbook(name, node=BENCH_NODE, extra_vars=None):
    if name == "lab_up.yml":
        kept = RUN_VARS.get(node.name)
        if kept:
            extra_vars = dict(extra_vars or {}, **kept)
    result = run_playbook(os.path.join(ROOT, "playbooks", name), node.inventory, extra_vars=extra_vars)
    if result.returncode != 0:
        raise SystemExit(
            "%s on the inventory %s failed:\n%s" % (name, os.path.relpath(node.inventory, ROOT), result.stderr[-3000:])
        )


def cap_disk_reads(nodes, limit=None, iops=None, log=print):
    """Cap the nodes' reads from the disk (limit: bytes per second as "80M"; iops: reads per second) or lift the
    caps (both None), live, through the lab role: the shared disk split into volumes of their own. A node started
    or restarted later in the run gets the same caps; nodes not running are left to their next start."""
    caps = dict(zip(CAP_VARS, (limit or "", int(iops or 0)), strict=True))
    for node in nodes:
        if limit or iops:
            hold(node, caps)
        else:
            release(node, CAP_VARS)
        if node_running(node):
            playbook("lab_up.yml", node, extra_vars=caps)
            log("%s: disk reads %s" % (node.name, describe_caps(caps) or "uncapped"))


@contextlib.contextmanager
def disk_caps(nodes, limit=None, iops=None, log=print, stopping=()):
    """The nodes' disk reads capped for the block (cap_disk_reads; nothing when neither cap is given), lifted when it
    ends on every node but those in stopping: nodes the caller stops after the block (it may fill the list inside
    it), whose groups go with them."""
    if not (limit or iops):
        yield
        return
    cap_disk_reads(nodes, limit, iops, log=log)
    try:
        yield
    finally:
        cap_disk_reads([node for node in nodes if node not in stopping], log=log)
        for node in stopping:
            release(node, CAP_VARS)


def add_disk_cap_options(parser, whose):
    """--disk-read-limit and --disk-read-iops of a measuring script: the caps of cap_disk_reads on whose disk reads
    ("every node's", "the raced node's"), for the run."""
    parser.add_argument(
        "--disk-read-limit",
        default=None,
        help="cap %s disk reads at this rate (as 80M: bytes per second) for the run, through the lab role's "
        "cassandra_node_disk_read_limit, as volumes of their own would: the nodes share one disk here" % whose,
    )
    parser.add_argument(
        "--disk-read-iops",
        type=int,
        default=0,
        help="cap %s disk reads at this many per second for the run (cassandra_node_disk_read_iops); beside or "
        "instead of --disk-read-limit" % whose,
    )


def check_disk_cap_options(parser, args):
    """Refuse bad --disk-read-limit / --disk-read-iops values by name (parser.error)."""
    try:
        cgroups.parse_rate(args.disk_read_limit, "--disk-read-limit")
        cgroups.parse_iops(args.disk_read_iops, "--disk-read-iops")
    except cgroups.CgroupError as exc:
        parser.error(str(exc))


def add_allocator_option(parser, whose):
    """--jemalloc of a measuring script: the allocator whose nodes run with for the run (allocator())."""
    parser.add_argument(
        "--jemalloc",
        default=None,
        help="run %s with this native allocator for the run (the lab role's cassandra_node_jemalloc: auto preloads "
        "the installed libjemalloc, as Cassandra's bin/cassandra does, or give a library's path; off or unset: as "
        "the inventory says, glibc's malloc); a running node is restarted with it, and as its inventory says at "
        "the end" % whose,
    )


def check_allocator_option(parser, args):
    """Refuse a bad --jemalloc by name (parser.error), and one that finds no library (auto on a machine without)."""
    try:
        library = cdaemon.jemalloc_library(args.jemalloc)
    except cdaemon.DaemonError as exc:
        parser.error("--%s" % exc)
    if args.jemalloc not in (None, "", "off") and library is None:
        parser.error("--jemalloc: auto found no libjemalloc installed here; install it (libjemalloc2) or choose off")


def preloaded(pid):
    """The jemalloc library mapped into the process (its /proc maps), or None: it runs on glibc's malloc."""
    try:
        with open("/proc/%d/maps" % int(pid), encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if "libjemalloc" in line:
                    return line.split()[-1]
    except (OSError, TypeError, ValueError):
        return None
    return None


@contextlib.contextmanager
def allocator(nodes, jemalloc=None, log=print, stopping=()):
    """The nodes run on this allocator for the block (cassandra_node_jemalloc: auto, or a library's path): the
    running ones restarted with it now, any started later with it. None or off: nothing done (the inventories' own,
    glibc's malloc). When the block ends, the running nodes but those in stopping are restarted as their
    inventories say. A restart keeps the node's memory group and the page cache in it."""
    if jemalloc in (None, "", "off"):
        yield
        return
    for node in nodes:
        hold(node, {"cassandra_node_jemalloc": jemalloc})
        if node_running(node):
            playbook("lab_up.yml", node)
            pid = server_pid(node)
            log("%s: restarted with %s preloaded (PID %s)" % (node.name, preloaded(pid) or "nothing", pid))
    try:
        yield
    finally:
        for node in nodes:
            release(node, ALLOCATOR_VARS)
            if node not in stopping and node_running(node):
                playbook("lab_up.yml", node)
                log("%s: restarted as its inventory says (%s)" % (node.name, preloaded(server_pid(node)) or "glibc"))


def describe_caps(caps):
    """The caps for people: "capped at 80M/s and 1200 reads/s", "" for none."""
    parts = (["%s/s" % caps[CAP_VARS[0]]] if caps.get(CAP_VARS[0]) else []) + (
        ["%d reads/s" % caps[CAP_VARS[1]]] if caps.get(CAP_VARS[1]) else []
    )
    return "capped at " + " and ".join(parts) if parts else ""


def start_node(node=BENCH_NODE):
    """Start a stopped node (lab_up.yml) with none of its table data in the page cache: the memory group of its
    last run was removed when it stopped, and the pages that group held stay cached, charged to no node, so the
    new group would read them outside its limit."""
    bulk.drop_cached(node.data_dir)
    playbook("lab_up.yml", node)


def restart_fresh(node=BENCH_NODE, log=print):
    """Stop a running node and start it again as start_node does: a new JVM, its memory group new and empty. What
    a node's earlier runs left in its process (a row cache's off-heap memory kept after its capacity went to 0, heap
    pages touched by a compaction) stays resident until it stops, and takes its place from the page cache a limit
    leaves. Returns the seconds it took."""
    began = time.monotonic()
    playbook("lab_down.yml", node)
    start_node(node)
    seconds = round(time.monotonic() - began, 1)
    log("%s restarted fresh in %.0f s" % (node.name, seconds))
    return seconds


def reload(sets, log=print, node=BENCH_NODE):
    """Truncate the tables, stop the node, link the data sets in, start it (the node starts cold)."""
    began = time.monotonic()
    cluster, session = cql.connect(dict(login_hosts=[node.host], login_user="tactician", login_password=password()))
    try:
        for dataset in sets.values():
            cql.prepare_ycsb_table(session, KEYSPACE, dataset["table"], 10, 1, truncate=True)
            session.execute("ALTER TABLE %s.%s WITH %s" % (KEYSPACE, dataset["table"], dataset["options"]), timeout=60)
    finally:
        cluster.shutdown()
    playbook("lab_down.yml", node)
    for chunk, dataset in sets.items():
        bulk.link_into_table(dataset, node.data_dir, copy=chunk in node.copied)
    start_node(node)
    log("reloaded %s in %.0f s" % (", ".join(d["name"] for d in sets.values()), time.monotonic() - began))


def ensure_loaded(records=RECORDS, chunks=(16, 4), force=False, log=print, node=BENCH_NODE):
    """The data sets in the node's tables: reloaded when asked, or when a table no longer holds its data set's
    files and only them (a compaction rewrote them, another data set is in, or the writes of an earlier run were
    flushed beside them: the latest node, never compacted, had gathered an upload's rows and 15 SSTables). Returns
    the data sets."""
    require_node(node)
    sets = datasets(records, chunks, node)
    for dataset in sets.values():
        log(
            "data set %s: %d rows, %.2f GB%s"
            % (
                dataset["name"],
                dataset["records"],
                dataset["bytes"] / 1e9,
                " (written in %.0f s)" % dataset["seconds"] if dataset["built"] else "",
            )
        )
    if force or not all(bulk.is_loaded(d, node.data_dir, copy=c in node.copied, exact=True) for c, d in sets.items()):
        reload(sets, log, node)
    return sets


def resident_bytes(paths):
    """Bytes of these files in the page cache, whichever memory group they are charged to (util-linux fincore),
    or None when fincore is missing or fails."""
    if not paths:
        return 0
    try:
        result = subprocess.run(
            ["fincore", "--bytes", "--noheadings", "--output", "RES", *paths],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return sum(int(line.split()[0]) for line in result.stdout.splitlines() if line.strip())
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


def cached_outside(node=BENCH_NODE):
    """A lower bound of the node's table data cached outside its memory group, in bytes: the resident bytes of its
    tables' Data.db files less the whole page cache its group holds (None when either is unknown). Pages charged
    elsewhere (a copy, a checksum, another process's read) are reads the group's limit does not count, and make the
    node's page cache larger than the shape says."""
    if not cgroups.version():
        return None
    stats = cgroups.MemoryGroup(node.group).stats()
    if not stats.get("exists") or stats.get("cache") is None:
        return None
    files = glob.glob(os.path.join(node.data_dir, KEYSPACE, "*", "*Data.db"))
    resident = resident_bytes(files)
    return None if resident is None else max(0, resident - int(stats["cache"]))


def describe(node=BENCH_NODE):
    """The node shape in one line, for every table of results."""
    client_cpus, server_cpus = process.cpu_split()
    group = cgroups.MemoryGroup(node.group).stats() if cgroups.version() else {}
    outside = cached_outside(node)
    library = preloaded(server_pid(node))
    return "node on CPU %s, load driver and controller on CPU %s; memory cgroup limit %s (heap 1 GiB, %s)%s; %s%s" % (
        process.format_cpus(server_cpus),
        process.format_cpus(client_cpus),
        cgroups.format_size(group.get("limit")),
        "jemalloc %s" % os.path.basename(library) if library else "glibc's malloc",
        "; disk reads %s per node" % describe_caps(held(node, CAP_VARS)) if held(node, CAP_VARS) else "",
        "data set of %dM rows, 4.3 GB" % (RECORDS // 1000000),
        "" if outside is None else "; its tables' data cached outside its memory group: %.0f MB" % (outside / 1e6),
    )
