# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Cassandra adapter: connection options (password auth, client TLS) and CQL access.

The only place of the collection that imports the DataStax Python driver.
"""

from __future__ import annotations

import re
import ssl
import traceback

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import StoreError
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import state as node_state
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.state import SYSTEM_KEYSPACES

try:
    from cassandra import ConsistencyLevel
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import RoundRobinPolicy, WhiteListRoundRobinPolicy
    from cassandra.query import SimpleStatement

    HAS_DRIVER = True
    DRIVER_IMPORT_ERROR = None
except ImportError:
    HAS_DRIVER = False
    DRIVER_IMPORT_ERROR = traceback.format_exc()


class CassandraError(StoreError):
    """A CQL connection or statement failed."""


def cassandra_argument_spec():
    """Connection options of every module that talks CQL (see doc fragment tactician.nosql.cassandra)."""
    return dict(
        login_hosts=dict(type="list", elements="str", default=["127.0.0.1"]),
        login_port=dict(type="int", default=9042),
        login_user=dict(type="str"),
        login_password=dict(type="str", no_log=True),
        ssl=dict(type="bool", default=False),
        ssl_ca_file=dict(type="path"),
        ssl_cert_file=dict(type="path"),
        ssl_key_file=dict(type="path", no_log=False),
        ssl_validate=dict(type="bool", default=True),
        ssl_check_hostname=dict(type="bool", default=True),
        connect_timeout=dict(type="float", default=10.0),
    )


def params_from_any(params, port=None):
    """This adapter's connection options from the collection's store-neutral ones (doc fragment any_store)."""
    return dict(
        login_port=int(port or params.get("port") or 9042),
        login_user=params.get("login_user"),
        login_password=params.get("login_password"),
        ssl=params.get("tls"),
        ssl_ca_file=params.get("ca_file"),
        ssl_cert_file=params.get("client_cert_file"),
        ssl_key_file=params.get("client_key_file"),
        ssl_validate=params.get("validate_certs", True),
        ssl_check_hostname=params.get("check_hostname", True),
        connect_timeout=params.get("connect_timeout") or 10.0,
    )


def cassandra_required_together():
    return [["login_user", "login_password"], ["ssl_cert_file", "ssl_key_file"]]


def missing_libraries():
    return [] if HAS_DRIVER else [("cassandra-driver", DRIVER_IMPORT_ERROR)]


def ssl_context(params):
    """An SSLContext for client TLS from the ssl_* options, or None when ssl is off. A validated certificate must
    also name the node: the driver then checks it against the address it connects to (an IP address needs an IP
    entry in the certificate's subject alternative names), unless ssl_check_hostname is off."""
    if not params.get("ssl"):
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if params.get("ssl_validate", True):
        context.verify_mode = ssl.CERT_REQUIRED
        context.check_hostname = bool(params.get("ssl_check_hostname", True))
        if params.get("ssl_ca_file"):
            context.load_verify_locations(cafile=params["ssl_ca_file"])
        else:
            context.load_default_certs()
    else:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if params.get("ssl_cert_file"):
        context.load_cert_chain(params["ssl_cert_file"], params.get("ssl_key_file"))
    return context


def connect(params, hosts=None, only_these_hosts=False):
    """Open (cluster, session). With only_these_hosts, queries go to the given hosts alone."""
    hosts = list(hosts or params.get("login_hosts") or ["127.0.0.1"])
    policy = WhiteListRoundRobinPolicy(hosts) if only_these_hosts else RoundRobinPolicy()
    profile = ExecutionProfile(
        load_balancing_policy=policy,
        request_timeout=max(10.0, float(params.get("connect_timeout") or 10.0)),
        consistency_level=ConsistencyLevel.ONE,
    )
    kwargs = dict(
        contact_points=hosts,
        port=int(params.get("login_port") or 9042),
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        connect_timeout=float(params.get("connect_timeout") or 10.0),
        control_connection_timeout=float(params.get("connect_timeout") or 10.0),
        protocol_version=5,
    )
    if params.get("login_user"):
        kwargs["auth_provider"] = PlainTextAuthProvider(
            username=params["login_user"], password=params.get("login_password") or ""
        )
    context = ssl_context(params)
    if context is not None:
        kwargs["ssl_context"] = context
    cluster = Cluster(**kwargs)
    try:
        session = cluster.connect()
    except Exception as exc:
        cluster.shutdown()
        raise CassandraError("cannot connect to %s port %s: %s" % (hosts, kwargs["port"], exc)) from exc
    return cluster, session


def conditional(session, statement, values=()):
    """Run a lightweight transaction (INSERT/UPDATE/DELETE ... IF ...): Paxos among the replicas at SERIAL, the
    commit at QUORUM. Returns (applied, the row as it is when not applied, as a dict)."""
    query = SimpleStatement(
        statement, consistency_level=ConsistencyLevel.QUORUM, serial_consistency_level=ConsistencyLevel.SERIAL
    )
    try:
        row = session.execute(query, values).one()
    except Exception as exc:
        raise CassandraError("%s: %s" % (statement.split("(")[0].strip(), exc)) from exc
    if row is None:
        return True, None
    data = row._asdict() if hasattr(row, "_asdict") else dict(row)
    applied = bool(data.pop("[applied]", True))
    return applied, data


def read_serial(session, statement, values=()):
    """The first row of a SELECT read at SERIAL (it sees what a lightweight transaction in progress commits), or
    None."""
    query = SimpleStatement(statement, consistency_level=ConsistencyLevel.SERIAL)
    try:
        row = session.execute(query, values).one()
    except Exception as exc:
        raise CassandraError("%s: %s" % (statement.split(" FROM")[0].strip(), exc)) from exc
    if row is None:
        return None
    return row._asdict() if hasattr(row, "_asdict") else dict(row)


def local_info(session):
    """release_version, cluster_name and data center of the node that answers."""
    row = session.execute("SELECT release_version, cluster_name, data_center FROM system.local").one()
    return dict(release_version=row.release_version, cluster_name=row.cluster_name, data_center=row.data_center)


def keyspace_replication(session, name):
    """The replication map of keyspace name and its durable_writes flag, or None when it does not exist."""
    row = session.execute(
        "SELECT replication, durable_writes FROM system_schema.keyspaces WHERE keyspace_name = %s", (name,)
    ).one()
    if row is None:
        return None
    return dict(replication=dict(row.replication), durable_writes=bool(row.durable_writes))


def token_ring(session):
    """{address: [token, ...]} of every node, as the answering node knows the ring (system.local and
    system.peers_v2), and {address: data center}."""
    tokens, centers = {}, {}
    local = session.execute("SELECT broadcast_address, listen_address, data_center, tokens FROM system.local").one()
    address = str(local.broadcast_address or local.listen_address)
    tokens[address] = sorted(int(t) for t in (local.tokens or ()))
    centers[address] = local.data_center
    for row in session.execute("SELECT peer, data_center, tokens FROM system.peers_v2"):
        tokens[str(row.peer)] = sorted(int(t) for t in (row.tokens or ()))
        centers[str(row.peer)] = row.data_center
    return tokens, centers


def replication_factor(replication, data_center=None):
    """One data centre's replication factor from a keyspace's replication map (SimpleStrategy: its factor)."""
    klass = str(replication.get("class", "")).rsplit(".", 1)[-1]
    if klass == "SimpleStrategy":
        return int(replication["replication_factor"])
    centers = {k: int(v) for k, v in replication.items() if k != "class"}
    if data_center is None:
        if len(centers) != 1:
            raise CassandraError(
                "data_center: the keyspace is replicated to %s; name the one to plan for" % ", ".join(sorted(centers))
            )
        data_center = next(iter(centers))
    if data_center not in centers:
        raise CassandraError(
            "data_center: %r holds no replica; choose one of %s" % (data_center, ", ".join(sorted(centers)))
        )
    return centers[data_center]


REPLICATION_CLASSES = ["SimpleStrategy", "NetworkTopologyStrategy"]
_NAME = re.compile(r"^[A-Za-z0-9_]{1,48}$")


def wanted_replication(replication_class, replication_factor=None, data_centers=None):
    """The replication map as system_schema.keyspaces stores it."""
    if replication_class == "SimpleStrategy":
        if not replication_factor or int(replication_factor) < 1:
            raise CassandraError("replication_factor: must be an integer >= 1 with SimpleStrategy")
        return {
            "class": "org.apache.cassandra.locator.SimpleStrategy",
            "replication_factor": str(int(replication_factor)),
        }
    if replication_class == "NetworkTopologyStrategy":
        if not data_centers:
            raise CassandraError("data_centers: give {dc name: replicas} with NetworkTopologyStrategy")
        wanted = {"class": "org.apache.cassandra.locator.NetworkTopologyStrategy"}
        for dc, count in data_centers.items():
            if int(count) < 0:
                raise CassandraError("data_centers.%s: replicas must be >= 0" % dc)
            wanted[str(dc)] = str(int(count))
        return wanted
    raise CassandraError(
        "replication_class: %r is not allowed; choose one of %s" % (replication_class, ", ".join(REPLICATION_CLASSES))
    )


def _cql_map(mapping):
    return "{" + ", ".join("'%s': '%s'" % (key, value) for key, value in mapping.items()) + "}"


def ensure_keyspace(session, name, state, replication=None, durable_writes=True, check_mode=False):
    """Create, alter or drop a keyspace. Returns dict(changed, queries, diff)."""
    if not _NAME.match(name or ""):
        raise CassandraError("name: %r is not a keyspace name (letters, digits, _; at most 48)" % name)
    current = keyspace_replication(session, name)
    before = current or {}
    queries = []
    if state == "absent":
        if current is not None:
            queries.append("DROP KEYSPACE %s" % name)
        after = {}
    else:
        after = dict(replication=replication, durable_writes=bool(durable_writes))
        if current is None:
            queries.append(
                "CREATE KEYSPACE %s WITH replication = %s AND durable_writes = %s"
                % (name, _cql_map(replication), str(bool(durable_writes)).lower())
            )
        elif current != after:
            queries.append(
                "ALTER KEYSPACE %s WITH replication = %s AND durable_writes = %s"
                % (name, _cql_map(replication), str(bool(durable_writes)).lower())
            )
    if queries and not check_mode:
        for query in queries:
            session.execute(query, timeout=60)
    return dict(changed=bool(queries), queries=queries, diff=dict(before=before, after=after))


def prepare_ycsb_table(session, keyspace, table="usertable", fieldcount=10, replication_factor=1, truncate=False):
    """Keyspace and table in the layout of the YCSB bindings (y_id text key, fieldN blob); truncate to reload."""
    for name, field in ((keyspace, "keyspace"), (table, "table")):
        if not _NAME.match(name or ""):
            raise CassandraError("%s: %r is not a CQL name (letters, digits, _; at most 48)" % (field, name))
    if keyspace_replication(session, keyspace) is None:
        session.execute(
            "CREATE KEYSPACE IF NOT EXISTS %s WITH replication = %s"
            % (keyspace, _cql_map(wanted_replication("SimpleStrategy", replication_factor))),
            timeout=60,
        )
    columns = ", ".join("field%d blob" % index for index in range(int(fieldcount)))
    session.execute(
        "CREATE TABLE IF NOT EXISTS %s.%s (y_id text PRIMARY KEY, %s)" % (keyspace, table, columns), timeout=60
    )
    if truncate:
        session.execute("TRUNCATE %s.%s" % (keyspace, table), timeout=120)


_CACHES = {"keys": "key_cache", "rows": "row_cache", "chunks": "chunk_cache", "counters": "counter_cache"}


def _user_rows(session, table, keyspaces):
    rows = session.execute("SELECT * FROM system_views.%s" % table)
    for row in rows:
        if keyspaces and row.keyspace_name not in keyspaces:
            continue
        if not keyspaces and row.keyspace_name in SYSTEM_KEYSPACES:
            continue
        yield row


def workload_counters(session, keyspaces=None, with_state=True):
    """One node's cumulative counters, current gauges and state from the CQL virtual tables (system_views):
    coordinator read/write/scan counts and latencies of the user tables, cache hits and requests, disk usage;
    compaction and flush backlogs and cache fill (stores/cassandra/state.py).

    counters: read, write, scan (requests this node coordinated), <cache>_hits, <cache>_requests;
    gauges: latency_ms {read, update (the writes), scan: {p50, p99}} (worst table), data_bytes;
    state (unless with_state is off): state.CQL_FIELDS."""
    counters = {}
    latency = {}
    for op, table in (
        ("read", "coordinator_read_latency"),
        ("write", "coordinator_write_latency"),
        ("scan", "coordinator_scan_latency"),
    ):
        total = 0
        worst = {"p50": None, "p99": None}
        for row in _user_rows(session, table, keyspaces):
            total += int(row.count or 0)
            if row.count:
                for key, value in (("p50", row.p50th_ms), ("p99", row.p99th_ms)):
                    if value is not None and (worst[key] is None or value > worst[key]):
                        worst[key] = float(value)
        counters[op] = total
        latency["update" if op == "write" else op] = worst
    caches = list(session.execute("SELECT * FROM system_views.caches"))
    for row in caches:
        name = _CACHES.get(row.name)
        if name:
            counters[name + "_hits"] = int(row.hit_count or 0)
            counters[name + "_requests"] = int(row.request_count or 0)
    mebibytes = sum(int(row.mebibytes or 0) for row in _user_rows(session, "disk_usage", keyspaces))
    snapshot = {"counters": counters, "gauges": {"latency_ms": latency, "data_bytes": mebibytes * 1024 * 1024}}
    if with_state:
        snapshot["state"] = node_state.cql_state(session, caches)
    return snapshot
