# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Probes of each store for observe: one connection per node, opened before observing and closed after."""

from __future__ import annotations

from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import state as cassandra_state
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import client as mongodb
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.observer import ObserveError, Probe


def missing_libraries(store):
    return {"cassandra": cql, "redis": redis_adapter, "mongodb": mongodb}[store].missing_libraries()


class Probes:
    """Context manager: the probes of the listed nodes with their open connections."""

    def __init__(self, params):
        self.params = params
        self.closers = []
        self.probes = []

    def __enter__(self):
        try:
            for node in self.params["nodes"]:
                probe = getattr(self, "_" + self.params["store"])(node)
                probe.host = node.get("host")
                self.probes.append(probe)
        except Exception:
            self.__exit__(None, None, None)
            raise
        return self.probes

    def __exit__(self, *exc):
        for close in self.closers:
            try:
                close()
            except Exception:  # closing what may already be broken
                pass
        return False

    def _cassandra(self, node):
        params = cql.params_from_any(self.params, node.get("port"))
        try:
            cluster, session = cql.connect(params, hosts=[node["address"]], only_these_hosts=True)
        except cql.CassandraError as exc:
            raise ObserveError("%s: %s" % (node["address"], exc)) from exc
        self.closers.append(cluster.shutdown)
        keyspaces = self.params.get("keyspaces") or None
        return Probe(
            "%s:%d" % (node["address"], params["login_port"]),
            lambda: cql.workload_counters(session, keyspaces),
            node.get("pid_file"),
            node.get("data_dir"),
            final_state=self._cassandra_nodetool(node, keyspaces),
        )

    def _cassandra_nodetool(self, node, keyspaces):
        """The nodetool readings of the node after the window, when cassandra_home says where the jars are."""
        home = self.params.get("cassandra_home")
        if not home or node.get("jmx_local"):  # a JMX local to the node's host is not reachable from here
            return None
        return lambda: cassandra_state.nodetool_state(
            home,
            node.get("jmx_host") or "127.0.0.1",
            node.get("jmx_port") or 7199,
            keyspaces,
            java=self.params.get("java") or "java",
            jmx_user=self.params.get("jmx_user"),
            jmx_password=self.params.get("jmx_password"),
        )

    def _redis(self, node):
        host, port = redis_adapter.split_node(node["address"])
        conn = redis_adapter.client(redis_adapter.params_from_any(self.params), host, port, retries=False)
        self.closers.append(conn.close)
        try:
            role = redis_adapter.replication_info(conn)["role"]
        except redis_adapter.RedisError as exc:
            raise ObserveError("%s: cannot be observed: %s" % (node["address"], exc)) from exc
        # Replicas replay their master's writes: the cluster's operations are the masters'.
        return Probe(
            node["address"],
            lambda: redis_adapter.workload_counters(conn),
            node.get("pid_file"),
            node.get("data_dir"),
            counted=role == "master",
        )

    def _mongodb(self, node):
        client = mongodb.connect(mongodb.params_from_any(self.params, node["address"]))
        self.closers.append(client.close)
        return Probe(
            node["address"], lambda: mongodb.workload_counters(client), node.get("pid_file"), node.get("data_dir")
        )
