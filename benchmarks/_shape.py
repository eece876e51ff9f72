# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The bench node in the shape of a real one (docs/lab.md "Node shape"), shared by the benchmarks that measure on it:
where it lives, its data set of millions of rows (written once as SSTables, linked in by a reload), and nodetool
and CQL against it. Import after _common.use_collection(integration=True)."""

from __future__ import annotations

import os
import time

from _common import ROOT
from ansible_run import run_playbook

from ansible_collections.tactician.nosql.plugins.module_utils.core import cgroups, process
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import bulk
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.server import run_nodetool

BENCH = os.path.join(ROOT, ".lab", "bench")
INVENTORY = os.path.join(ROOT, "inventories", "bench")
NODE_DIR = os.path.join(BENCH, "cassandra", "bench-cassandra1")
DATA_DIR = os.path.join(NODE_DIR, "data", "data")
PID_FILE = os.path.join(NODE_DIR, "cassandra.pid")
HOME = os.path.join(ROOT, ".lab", "cassandra-5.0.9")
DRIVER = os.path.join(BENCH, "load-driver")
HOST, JMX_PORT, KEYSPACE = "127.0.0.31", 7899, "tactician"
GROUP = "cassandra-%s-9042" % HOST
RECORDS = 4000000
# The table the workloads run on, and a twin of it written with 4 KiB compression blocks (Cassandra's default is
# 16 KiB): the same rows, so that the chunk length can be compared without rewriting a table between windows.
CHUNK_TABLES = {16: "usertable", 4: "usertable_c4"}


def password():
    with open(os.path.join(BENCH, "secrets", "cassandra-password")) as handle:
        return handle.read().strip()


def nodetool(*args):
    return run_nodetool(HOME, "127.0.0.1", JMX_PORT, [str(a) for a in args], timeout=3600)


def cql_execute(statement, timeout=120):
    cluster, session = cql.connect(dict(login_hosts=[HOST], login_user="tactician", login_password=password()))
    try:
        return list(session.execute(statement, timeout=timeout))
    finally:
        cluster.shutdown()


def server_pid():
    return process.read_pid(PID_FILE)


def require_node():
    if not server_pid() or not process.pid_alive(server_pid()):
        raise SystemExit("the bench node is not running: ansible-playbook -i inventories/bench playbooks/lab_up.yml")


def datasets(records=RECORDS, chunks=(16, 4)):
    """The data sets of the tables (written when missing, kept): chunk length in KiB -> description."""
    out = {}
    for chunk in chunks:
        options = "compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': %d}" % chunk
        out[chunk] = bulk.build_dataset(
            os.path.join(BENCH, "datasets"), HOME, DRIVER, KEYSPACE, CHUNK_TABLES[chunk], records, table_options=options
        )
        out[chunk]["options"] = options
    return out


def playbook(name):
    result = run_playbook(os.path.join(ROOT, "playbooks", name), INVENTORY)
    if result.returncode != 0:
        raise SystemExit("%s on the bench inventory failed:\n%s" % (name, result.stdout[-3000:]))


def reload(sets, log=print):
    """Truncate the tables, stop the node, link the data sets in, start it (the node starts cold)."""
    began = time.monotonic()
    cluster, session = cql.connect(dict(login_hosts=[HOST], login_user="tactician", login_password=password()))
    try:
        for dataset in sets.values():
            cql.prepare_ycsb_table(session, KEYSPACE, dataset["table"], 10, 1, truncate=True)
            session.execute("ALTER TABLE %s.%s WITH %s" % (KEYSPACE, dataset["table"], dataset["options"]), timeout=60)
    finally:
        cluster.shutdown()
    playbook("lab_down.yml")
    for dataset in sets.values():
        bulk.link_into_table(dataset, DATA_DIR)
    playbook("lab_up.yml")
    log("reloaded %s in %.0f s" % (", ".join(d["name"] for d in sets.values()), time.monotonic() - began))


def ensure_loaded(records=RECORDS, chunks=(16, 4), force=False, log=print):
    """The data sets in the node's tables: reloaded when asked, or when a table no longer holds its data set's
    files (a compaction rewrote them, or another data set is in). Returns the data sets."""
    require_node()
    sets = datasets(records, chunks)
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
    if force or not all(bulk.is_loaded(d, DATA_DIR) for d in sets.values()):
        reload(sets, log)
    return sets


def describe():
    """The node shape in one line, for every table of results."""
    client_cpus, server_cpus = process.cpu_split()
    group = cgroups.MemoryGroup(GROUP).stats() if cgroups.version() else {}
    return "node on CPU %s, load driver and controller on CPU %s; memory cgroup limit %s (heap 1 GiB); %s" % (
        process.format_cpus(server_cpus),
        process.format_cpus(client_cpus),
        cgroups.format_size(group.get("limit")),
        "data set of %dM rows, 4.3 GB" % (RECORDS // 1000000),
    )
