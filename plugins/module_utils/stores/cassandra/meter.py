# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Server-side counters of one Cassandra node over CQL for a calibration run: the operations it coordinated and
its cache hits (row cache by default), read before and after a measurement window.
"""

from __future__ import annotations

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import StoreError
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql


class MeterError(StoreError):
    """The node's counters could not be read; the message names the node or the table."""


class CassandraMeter:
    """Server-side counters of one Cassandra node over CQL: operations it coordinated and row cache hits."""

    def __init__(self, params, address, cache="row_cache"):
        self.cache = cache
        conn = dict(cql.params_from_any(params), login_hosts=[address])
        try:
            self.cluster, self.session = cql.connect(conn, hosts=[address], only_these_hosts=True)
        except cql.CassandraError as exc:
            raise MeterError("%s: %s" % (address, exc)) from exc
        self.keyspaces = [params.get("keyspace") or "ycsb"]

    def counters(self):
        data = cql.workload_counters(self.session, self.keyspaces, with_state=False)["counters"]
        return {
            "reads": data.get("read", 0) + data.get("scan", 0),
            "writes": data.get("write", 0),
            "hits": data.get(self.cache + "_hits", 0),
            "requests": data.get(self.cache + "_requests", 0),
        }

    def cache_entries(self):
        """(capacity bytes, size bytes, entries) of the cache, to turn a capacity into a number of records."""
        name = {"row_cache": "rows", "key_cache": "keys", "chunk_cache": "chunks"}[self.cache]
        for row in self.session.execute(
            "SELECT name, capacity_bytes, size_bytes, entry_count FROM system_views.caches"
        ):
            if row.name == name:
                return int(row.capacity_bytes or 0), int(row.size_bytes or 0), int(row.entry_count or 0)
        raise MeterError("system_views.caches has no %s cache" % name)

    def close(self):
        self.cluster.shutdown()
