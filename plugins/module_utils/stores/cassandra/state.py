# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""What a Cassandra node carries from one moment to the next: compaction and flush backlogs, SSTables per read,
live SSTables and how full its caches are (the ``state`` of a workload sample, telemetry/samples.py).

Two sources, and what Cassandra 5.0.9 gives through each:

- CQL virtual tables, cheap enough for every snapshot of observe: ``system_views.thread_pools`` (the
  CompactionExecutor and MemtableFlushWriter pools: tasks pending and active), ``system_views.sstable_tasks`` (the
  compactions running now, with their total and progress in bytes) and ``system_views.caches`` (size and capacity
  of the key, row and chunk caches).
- nodetool, only when asked for (a JVM of ~1.5 s a call, and the Cassandra jars where observe runs), once after
  the window: the table metrics that 5.0.9 keeps out of the virtual tables. ``tablestats -F json`` (SSTable count
  and local reads per table), ``tablehistograms`` (the SSTablesPerReadHistogram percentiles, a recent-weighted
  histogram) and ``compactionstats`` (pending tasks as the compaction strategies estimate them).

The parsers take the text or rows as recorded, so they are tested without a server.
"""

from __future__ import annotations

import json
import math
import re

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import StoreError
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.server import run_nodetool

SYSTEM_KEYSPACES = (
    "system",
    "system_auth",
    "system_schema",
    "system_distributed",
    "system_traces",
    "system_views",
    "system_virtual_schema",
    "system_cluster_metadata",
)
COMPACTION_POOL = "CompactionExecutor"
FLUSH_POOL = "MemtableFlushWriter"
CACHE_FILLS = {"keys": "key_cache_fill", "rows": "row_cache_fill", "chunks": "chunk_cache_fill"}
"""system_views.caches name -> state field."""

CQL_FIELDS = ("pending_compactions", "pending_compaction_bytes", "pending_flushes", *CACHE_FILLS.values())
NODETOOL_FIELDS = ("pending_compactions_estimated", "live_sstables", "sstables_per_read", "sstables_per_read_max")


class CassandraStateError(StoreError):
    """A node's state could not be read or parsed; the message names the command or the table."""


def _get(row, name):
    """A column of a row as the driver gives it (named tuple) or as recorded (a dict)."""
    return row.get(name) if isinstance(row, dict) else getattr(row, name, None)


def _int(value):
    return None if value is None else int(value)


def state_from_rows(thread_pools, sstable_tasks, caches):
    """The state fields of one moment from the rows of system_views.thread_pools, sstable_tasks and caches.

    pending_compactions: tasks queued or running on the CompactionExecutor pool (pending_tasks + active_tasks);
    pending_compaction_bytes: bytes the compactions running now still have to read (total - progress of the
    sstable_tasks rows whose kind is a compaction and whose unit is bytes; compactions not started yet are not
    counted); pending_flushes: memtable flushes queued or being written (MemtableFlushWriter pending + active);
    <cache>_fill: size_bytes / capacity_bytes, None for a cache of capacity 0 (off). A pool or cache the node does
    not list gives None."""
    pools = {_get(row, "name"): row for row in thread_pools}
    state = {}
    for field, pool in (("pending_compactions", COMPACTION_POOL), ("pending_flushes", FLUSH_POOL)):
        row = pools.get(pool)
        if row is None or _get(row, "pending_tasks") is None:
            state[field] = None
        else:
            state[field] = int(_get(row, "pending_tasks")) + int(_get(row, "active_tasks") or 0)
    remaining = 0
    for row in sstable_tasks:
        kind = str(_get(row, "kind") or "").lower()
        if "compaction" in kind and str(_get(row, "unit") or "").lower() == "bytes":
            total, progress = _int(_get(row, "total")) or 0, _int(_get(row, "progress")) or 0
            remaining += max(total - progress, 0)
    state["pending_compaction_bytes"] = remaining
    for field in CACHE_FILLS.values():
        state[field] = None
    for row in caches:
        field = CACHE_FILLS.get(_get(row, "name"))
        capacity = _int(_get(row, "capacity_bytes"))
        if field and capacity:
            state[field] = max(int(_get(row, "size_bytes") or 0), 0) / float(capacity)
    return state


def cql_state(session, caches=None):
    """state_from_rows of the node the session talks to; caches: the system_views.caches rows when the caller
    has just read them (all columns)."""
    if caches is None:
        caches = list(session.execute("SELECT * FROM system_views.caches"))
    return state_from_rows(
        list(session.execute("SELECT * FROM system_views.thread_pools")),
        list(session.execute("SELECT * FROM system_views.sstable_tasks")),
        caches,
    )


def _observed(keyspace, keyspaces):
    return keyspace in keyspaces if keyspaces else keyspace not in SYSTEM_KEYSPACES


def parse_tablestats_json(text, keyspaces=None):
    """{(keyspace, table): {"sstable_count", "local_read_count"}} from ``nodetool tablestats -F json`` for the
    observed keyspaces (the given ones, else every non-system keyspace)."""
    # The document starts at the first line that opens an object: a JVM or logging line may come before it.
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("{")), 0)
    try:
        document = json.loads("\n".join(lines[start:]))
    except ValueError as exc:
        raise CassandraStateError("nodetool tablestats -F json: not JSON (%s)" % exc) from None
    if not isinstance(document, dict):
        raise CassandraStateError("nodetool tablestats -F json: %r is not a mapping of keyspaces" % (document,))
    tables = {}
    for keyspace, facts in document.items():
        if not isinstance(facts, dict) or not isinstance(facts.get("tables"), dict):
            continue
        if not _observed(keyspace, keyspaces):
            continue
        for table, stats in facts["tables"].items():
            try:
                tables[(keyspace, table)] = {
                    "sstable_count": int(stats["sstable_count"]),
                    "local_read_count": int(stats.get("local_read_count") or 0),
                }
            except (KeyError, TypeError, ValueError) as exc:
                raise CassandraStateError(
                    "nodetool tablestats -F json: %s.%s has no usable sstable_count (%s)" % (keyspace, table, exc)
                ) from None
    return tables


_HISTOGRAM_HEADER = re.compile(r"^\s*(\S+)/(\S+) histograms\s*$")
_HISTOGRAM_ROW = re.compile(r"^\s*(50%|75%|95%|98%|99%|Min|Max)\s+(.*)$")
_SSTABLES_COLUMN = 2
"""Index of the SSTables column among the numbers of a row: Read Latency, Write Latency, SSTables, Partition
Size, Cell Count."""


def _number(text):
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None  # NaN: no value


def parse_tablehistograms(text, keyspaces=None):
    """{(keyspace, table): {"p50", "p75", "p95", "p98", "p99", "min", "max"}} of the SSTables column of
    ``nodetool tablehistograms`` (SSTables touched per local read), for the observed keyspaces."""
    tables = {}
    current = None
    for line in text.splitlines():
        header = _HISTOGRAM_HEADER.match(line)
        if header:
            key = (header.group(1), header.group(2))
            current = key if _observed(key[0], keyspaces) else None
            if current:
                tables[current] = {}
            continue
        row = _HISTOGRAM_ROW.match(line)
        if row and current:
            numbers = row.group(2).split()
            if len(numbers) > _SSTABLES_COLUMN:
                label = row.group(1).rstrip("%").lower()
                tables[current]["p" + label if label.isdigit() else label] = _number(numbers[_SSTABLES_COLUMN])
    return tables


_PENDING_TASKS = re.compile(r"^\s*pending tasks\s*:?\s+(\d+)\s*$", re.IGNORECASE)


def parse_compactionstats(text):
    """The node's ``pending tasks`` of ``nodetool compactionstats`` (the strategies' estimate of the compactions
    still needed, plus those running), or None when the text has no such line."""
    for line in text.splitlines():
        match = _PENDING_TASKS.match(line)
        if match:
            return int(match.group(1))
    return None


def state_from_nodetool(tablestats, histograms, pending_tasks):
    """The nodetool state fields from the parsed outputs: live_sstables (SSTables of the observed tables),
    sstables_per_read (the worst p50 of the observed tables that served local reads) and sstables_per_read_max
    (their worst max), pending_compactions_estimated. No table with reads: SSTables per read is None."""
    read = [key for key, stats in tablestats.items() if stats["local_read_count"] > 0]
    p50 = [histograms[key].get("p50") for key in read if key in histograms]
    high = [histograms[key].get("max") for key in read if key in histograms]
    p50 = [value for value in p50 if value is not None]
    high = [value for value in high if value is not None]
    return {
        "pending_compactions_estimated": pending_tasks,
        "live_sstables": sum(stats["sstable_count"] for stats in tablestats.values()),
        "sstables_per_read": max(p50) if p50 else None,
        "sstables_per_read_max": max(high) if high else None,
    }


def nodetool_state(
    cassandra_home,
    jmx_host,
    jmx_port,
    keyspaces=None,
    java="java",
    jmx_user=None,
    jmx_password=None,
    timeout=60,
    tables=None,
):
    """The nodetool state fields of one node (three nodetool calls, one after the other). tables: only these
    (keyspace, table) pairs are observed (their keyspaces are then the observed ones), and tablestats and, for a
    single table, tablehistograms are asked for them alone."""

    def run(args):
        return run_nodetool(
            cassandra_home,
            jmx_host,
            jmx_port,
            args,
            java=java,
            jmx_user=jmx_user,
            jmx_password=jmx_password,
            timeout=timeout,
        )

    tables = [tuple(table) for table in tables or []]
    keyspaces = list(dict.fromkeys(k for k, _t in tables)) if tables else list(keyspaces or [])
    names = ["%s.%s" % table for table in tables] or keyspaces
    tablestats = parse_tablestats_json(run(["tablestats", "-F", "json", *names]), keyspaces)
    histograms = parse_tablehistograms(run(["tablehistograms", *(tables[0] if len(tables) == 1 else ())]), keyspaces)
    if tables:
        tablestats = {key: value for key, value in tablestats.items() if key in tables}
        histograms = {key: value for key, value in histograms.items() if key in tables}
    return state_from_nodetool(tablestats, histograms, parse_compactionstats(run(["compactionstats"])))
