# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Redis adapter: connection options (ACL user/password, TLS), per-node admin and cluster views.

The only place of the collection that imports redis-py. One plain client per node: a cluster
client created right after the cluster forms may not see the replicas yet.
"""

from __future__ import annotations

import time
import traceback

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import StoreError
from ansible_collections.tactician.nosql.plugins.module_utils.core.process import wait_until
from ansible_collections.tactician.nosql.plugins.module_utils.core.timing import poll_health
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.operations import redis_operation

try:
    import redis as redis_lib
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import RedisError

    HAS_REDIS = True
    REDIS_IMPORT_ERROR = None
except ImportError:
    redis_lib = None
    HAS_REDIS = False
    REDIS_IMPORT_ERROR = traceback.format_exc()

    class RedisError(Exception):
        pass

    class RedisConnectionError(RedisError):
        pass


CLUSTER_SLOTS = 16384


class RedisAdminError(StoreError):
    """A Redis node could not be reached or refused a command."""


def redis_argument_spec():
    """Connection options of every module that talks to Redis (doc fragment tactician.nosql.redis)."""
    return dict(
        login_host=dict(type="str", default="127.0.0.1"),
        login_port=dict(type="int", default=6379),
        login_user=dict(type="str"),
        login_password=dict(type="str", no_log=True),
        tls=dict(type="bool", default=False),
        ca_certs=dict(type="path"),
        client_cert_file=dict(type="path"),
        client_key_file=dict(type="path", no_log=False),
        validate_certs=dict(type="bool", default=True),
        check_hostname=dict(type="bool", default=True),
        connect_timeout=dict(type="float", default=5.0),
    )


def params_from_any(params):
    """This adapter's connection options from the collection's store-neutral ones (doc fragment any_store)."""
    return dict(
        login_user=params.get("login_user"),
        login_password=params.get("login_password"),
        tls=params.get("tls"),
        ca_certs=params.get("ca_file"),
        client_cert_file=params.get("client_cert_file"),
        client_key_file=params.get("client_key_file"),
        validate_certs=params.get("validate_certs", True),
        check_hostname=params.get("check_hostname", True),
        connect_timeout=params.get("connect_timeout") or 5.0,
    )


def missing_libraries():
    return [] if HAS_REDIS else [("redis", REDIS_IMPORT_ERROR)]


def split_node(text, default_port=6379):
    """'host:port' -> (host, port); IPv6 as '[::1]:6379'."""
    text = str(text).strip()
    if text.startswith("["):
        host, _sep, rest = text[1:].partition("]")
        port = rest.lstrip(":") or default_port
        return host, int(port)
    if text.count(":") == 1:
        host, port = text.split(":")
        return host, int(port)
    return text, int(default_port)


def client(params, host=None, port=None, retries=True):
    """A plain redis.Redis for one node with the module's auth and TLS options. A validated certificate must also
    name the node (host as given: an IP address needs an IP entry in its subject alternative names), unless
    check_hostname is off."""
    kwargs = dict(
        host=host or params.get("login_host") or "127.0.0.1",
        port=int(port or params.get("login_port") or 6379),
        username=params.get("login_user") or None,
        password=params.get("login_password") or None,
        socket_connect_timeout=float(params.get("connect_timeout") or 5.0),
        socket_timeout=max(5.0, float(params.get("connect_timeout") or 5.0)),
        decode_responses=True,
    )
    if not retries:
        kwargs["retry"] = None
        kwargs["retry_on_error"] = []
    if params.get("tls"):
        kwargs.update(
            ssl=True,
            ssl_ca_certs=params.get("ca_certs"),
            ssl_certfile=params.get("client_cert_file"),
            ssl_keyfile=params.get("client_key_file"),
            ssl_cert_reqs="required" if params.get("validate_certs", True) else "none",
            ssl_check_hostname=bool(params.get("validate_certs", True) and params.get("check_hostname", True)),
        )
    return redis_lib.Redis(**kwargs)


def on_key_owner(params, host, port, call, hops=3):
    """call(conn) on the node that serves the key it touches, and its result: a Redis Cluster node that does not
    serve the key's slot answers MOVED with the one that does, and the call is made there (at most hops times)."""
    for _hop in range(hops):
        conn = client(params, host, port, retries=False)
        try:
            return call(conn)
        except redis_lib.exceptions.MovedError as exc:
            host, port = exc.host, exc.port
        finally:
            conn.close()
    raise RedisAdminError(
        "%s:%s: the key's slot kept moving (%d MOVED replies); is the cluster resharding?" % (host, port, hops)
    )


def ping(conn):
    try:
        return bool(conn.ping())
    except RedisError:
        return False


def raw_command(conn, *args):
    """Send a command and return the server's reply unparsed (redis-py's reply parsers change between versions)."""
    connection = conn.connection_pool.get_connection()
    try:
        connection.send_command(*args)
        reply = connection.read_response()
    finally:
        conn.connection_pool.release(connection)
    return reply.decode("utf-8", "replace") if isinstance(reply, bytes) else reply


def cluster_info(conn):
    """CLUSTER INFO as a dict of strings and ints."""
    raw = raw_command(conn, "CLUSTER", "INFO")
    info = {}
    for line in str(raw).splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            value = value.strip()
            info[key] = int(value) if value.lstrip("-").isdigit() else value
    return info


def cluster_nodes(conn):
    """CLUSTER NODES parsed: list of dicts id, address, flags, master_id, link, slots."""
    raw = raw_command(conn, "CLUSTER", "NODES")
    nodes = []
    for line in str(raw).splitlines():
        parts = line.split()
        if len(parts) < 8:
            continue
        address = parts[1].split("@")[0]
        nodes.append(
            dict(
                id=parts[0],
                address=address,
                flags=parts[2].split(","),
                master_id=None if parts[3] == "-" else parts[3],
                link=parts[7],
                slots=parts[8:],
            )
        )
    return nodes


def myself(nodes):
    for node in nodes:
        if "myself" in node["flags"]:
            return node
    return None


def replication_info(conn):
    info = conn.info("replication")
    return dict(
        role=info.get("role"),
        master_link_status=info.get("master_link_status"),
        connected_slaves=info.get("connected_slaves", 0),
    )


def node_view(conn):
    """What one node says about the cluster and its own replication."""
    info = cluster_info(conn)
    repl = replication_info(conn)
    return dict(
        cluster_state=info.get("cluster_state"),
        slots_assigned=info.get("cluster_slots_assigned", 0),
        slots_ok=info.get("cluster_slots_ok", 0),
        known_nodes=info.get("cluster_known_nodes", 0),
        size=info.get("cluster_size", 0),
        role=repl["role"],
        master_link_status=repl["master_link_status"],
    )


def view_problems(address, view, expected_nodes=None):
    """Reasons why a node's view is not healthy (empty list when it is)."""
    problems = []
    if view.get("cluster_state") != "ok":
        problems.append("%s: cluster_state is %s" % (address, view.get("cluster_state")))
    if view.get("slots_ok") != CLUSTER_SLOTS:
        problems.append("%s: %s of %d slots ok" % (address, view.get("slots_ok"), CLUSTER_SLOTS))
    if expected_nodes and view.get("known_nodes") != expected_nodes:
        problems.append("%s: knows %s nodes, expected %d" % (address, view.get("known_nodes"), expected_nodes))
    if view.get("role") == "slave" and view.get("master_link_status") != "up":
        problems.append("%s: replica link to its master is %s" % (address, view.get("master_link_status")))
    return problems


def cluster_views(params, nodes):
    """{address: view or {'error': text}} for every 'host:port' in nodes."""
    views = {}
    for address in nodes:
        host, port = split_node(address)
        conn = client(params, host, port, retries=False)
        try:
            views[address] = node_view(conn)
        except RedisError as exc:
            views[address] = dict(error=str(exc))
        finally:
            conn.close()
    return views


def problems_of(views, expected_nodes=None):
    """Every finding that makes the cluster unhealthy, from the nodes' views."""
    problems = []
    for address, view in views.items():
        if "error" in view:
            problems.append("%s: unreachable: %s" % (address, view["error"]))
        else:
            problems.extend(view_problems(address, view, expected_nodes))
    return problems


def summary(healthy, problems, views):
    """Lines a person reads: the verdict, then each node's role and view of the cluster."""
    lines = ["Redis: %s (%d nodes)" % ("healthy" if healthy else "NOT healthy", len(views))]
    for address, view in views.items():
        if "error" in view:
            lines.append("  %s unreachable" % address)
            continue
        role = "replica (link %s)" % view.get("master_link_status") if view.get("role") == "slave" else "master"
        lines.append(
            "  %s %s: cluster_state=%s slots_ok=%s known_nodes=%s"
            % (address, role, view.get("cluster_state"), view.get("slots_ok"), view.get("known_nodes"))
        )
    lines.extend("  problem: %s" % problem for problem in problems)
    return lines


def wait_healthy(params, nodes, timeout, expected_nodes=None, interval=0.5):
    """Poll every node until the cluster is healthy or timeout; the report of common.poll_health."""

    def check():
        views = cluster_views(params, nodes)
        return problems_of(views, expected_nodes), views

    return poll_health(check, timeout, interval)


def slot_ranges(masters):
    """Split the 16384 slots into contiguous (first, last) ranges, one per master."""
    ranges = []
    start = 0
    for index in range(masters):
        end = ((index + 1) * CLUSTER_SLOTS) // masters - 1
        ranges.append((start, end))
        start = end + 1
    return ranges


def node_ids(conn):
    me = myself(cluster_nodes(conn))
    return me["id"] if me else None


def cluster_shape(params, nodes, replicas):
    """Classify the listed nodes: 'formed' (one cluster of exactly these nodes), 'empty' (none in a cluster)
    or 'partial'; plus details for the message."""
    details = {}
    empty = 0
    for address in nodes:
        host, port = split_node(address)
        conn = client(params, host, port)
        try:
            info = cluster_info(conn)
            if info.get("cluster_enabled", 1) in (0, "0"):
                raise RedisAdminError("%s does not run in cluster mode (cluster-enabled no)" % address)
            details[address] = dict(
                known_nodes=info.get("cluster_known_nodes", 0),
                slots_assigned=info.get("cluster_slots_assigned", 0),
                cluster_state=info.get("cluster_state"),
                keys=conn.dbsize(),
            )
        except RedisError as exc:
            raise RedisAdminError("cannot query %s: %s" % (address, exc)) from exc
        finally:
            conn.close()
        if details[address]["known_nodes"] <= 1 and details[address]["slots_assigned"] == 0:
            empty += 1
    if empty == len(nodes):
        return "empty", details
    if all(d["known_nodes"] == len(nodes) and d["slots_assigned"] == CLUSTER_SLOTS for d in details.values()):
        return "formed", details
    return "partial", details


def create_cluster(params, nodes, replicas, timeout=60.0):
    """Form a cluster from empty nodes: the first len(nodes)/(replicas+1) become masters with
    contiguous slot ranges, the rest replicate them round-robin. Returns the master/replica map."""
    if len(nodes) % (replicas + 1) != 0:
        raise RedisAdminError(
            "nodes: %d nodes cannot be split into masters with %d replicas each" % (len(nodes), replicas)
        )
    masters_count = len(nodes) // (replicas + 1)
    if masters_count < 3:
        raise RedisAdminError("nodes: a Redis cluster needs at least 3 masters, got %d" % masters_count)
    conns = {address: client(params, *split_node(address)) for address in nodes}
    try:
        masters = nodes[:masters_count]
        replica_nodes = nodes[masters_count:]
        for epoch, address in enumerate(nodes, start=1):
            conns[address].execute_command("CLUSTER SET-CONFIG-EPOCH", epoch)
        for address, (first, last) in zip(masters, slot_ranges(masters_count), strict=True):
            conns[address].execute_command("CLUSTER ADDSLOTSRANGE", first, last)
        first_conn = conns[nodes[0]]
        for address in nodes[1:]:
            host, port = split_node(address)
            first_conn.execute_command("CLUSTER MEET", host, port)
        ids = {address: node_ids(conn) for address, conn in conns.items()}

        def everyone_knows_everyone():
            for conn in conns.values():
                known = [n for n in cluster_nodes(conn) if "handshake" not in n["flags"] and "noaddr" not in n["flags"]]
                if len(known) != len(nodes):
                    return False
            return True

        _wait(everyone_knows_everyone, timeout, "every node to know the other %d" % (len(nodes) - 1))
        layout = {address: [] for address in masters}
        for index, address in enumerate(replica_nodes):
            master = masters[index % masters_count]
            _retry(
                lambda a=address, m=master: conns[a].execute_command("CLUSTER REPLICATE", ids[m]),
                timeout,
                "%s to replicate %s" % (address, master),
            )
            layout[master].append(address)
        return layout
    finally:
        for conn in conns.values():
            conn.close()


def _wait(predicate, timeout, what):
    wait_until(predicate, timeout, 0.2, what=what)


def _retry(call, timeout, what, interval=0.3):
    start = time.monotonic()
    while True:
        try:
            return call()
        except RedisError as exc:
            if time.monotonic() - start > timeout:
                raise RedisAdminError("gave up on %s after %ss: %s" % (what, timeout, exc)) from exc
            time.sleep(interval)


def cluster_layout(params, nodes):
    """{master address: [replica addresses]} as the first reachable node sees it."""
    for address in nodes:
        conn = client(params, *split_node(address))
        try:
            listed = cluster_nodes(conn)
        except RedisError:
            continue
        finally:
            conn.close()
        by_id = {n["id"]: n["address"] for n in listed}
        layout = {n["address"]: [] for n in listed if "master" in n["flags"]}
        for n in listed:
            if "slave" in n["flags"] and n["master_id"] in by_id:
                layout.setdefault(by_id[n["master_id"]], []).append(n["address"])
        return layout
    raise RedisAdminError("no node of %s answered CLUSTER NODES" % ", ".join(nodes))


def shutdown(params, host, port, save=True):
    """SHUTDOWN [SAVE|NOSAVE] without client retries (the dropped connection is the expected answer)."""
    conn = client(params, host, port, retries=False)
    try:
        conn.execute_command("SHUTDOWN", "SAVE" if save else "NOSAVE")
    except RedisConnectionError:
        pass
    finally:
        conn.close()


def flush_masters(params, nodes):
    """FLUSHALL on every master of the listed nodes (replicas follow): the reload step of a cold evaluation."""
    flushed = []
    for address in nodes:
        conn = client(params, *split_node(address), retries=False)
        try:
            if replication_info(conn)["role"] == "master":
                conn.execute_command("FLUSHALL")
                flushed.append(address)
        except RedisError as exc:
            raise RedisAdminError("cannot flush %s: %s" % (address, exc)) from exc
        finally:
            conn.close()
    return flushed


def _pairs(flat):
    """A RESP3 map, or a RESP2 flat [key, value, key, value, ...] list, as a dict (keys decoded)."""
    if isinstance(flat, dict):
        return {_text(key): value for key, value in flat.items()}
    flat = list(flat or [])
    return {_text(flat[i]): flat[i + 1] for i in range(0, len(flat) - 1, 2)}


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def parse_cluster_shards(reply):
    """CLUSTER SHARDS (Redis 7) -> [{slots: [(first, last)], nodes: [{id, endpoint, port, role, health,
    replication_offset}]}], the topology of the cluster as one node sees it."""
    shards = []
    for raw in reply or []:
        shard = _pairs(raw)
        slots = [int(x) for x in shard.get("slots", [])]
        nodes = []
        for node in shard.get("nodes", []):
            fields = _pairs(node)
            nodes.append(
                {
                    "id": _text(fields.get("id")),
                    "endpoint": _text(fields.get("endpoint") or fields.get("ip")),
                    "port": int(fields.get("port") or fields.get("tls-port") or 0),
                    "role": _text(fields.get("role")),
                    "health": _text(fields.get("health")),
                    "replication_offset": int(fields.get("replication-offset") or 0),
                }
            )
        shards.append({"slots": list(zip(slots[0::2], slots[1::2], strict=False)), "nodes": nodes})
    return shards


def state_from_info(persistence, memory):
    """The state fields of one moment from INFO persistence and INFO memory (the fields as INFO names them):
    rdb_bgsave_in_progress and aof_rewrite_in_progress (1 while the fork writes, else 0),
    rdb_changes_since_last_save (writes not in an RDB file yet), mem_fragmentation_ratio (RSS / used memory, as
    Redis computes it), memory_fill (used_memory / maxmemory, None with no maxmemory: no limit to fill). A field
    INFO does not give is None."""

    def whole(section, name):
        value = section.get(name)
        return None if value is None else int(value)

    fragmentation = memory.get("mem_fragmentation_ratio")
    maxmemory = int(memory.get("maxmemory") or 0)
    used = memory.get("used_memory")
    return {
        "rdb_bgsave_in_progress": whole(persistence, "rdb_bgsave_in_progress"),
        "aof_rewrite_in_progress": whole(persistence, "aof_rewrite_in_progress"),
        "rdb_changes_since_last_save": whole(persistence, "rdb_changes_since_last_save"),
        "mem_fragmentation_ratio": None if fragmentation is None else max(float(fragmentation), 0.0),
        "memory_fill": int(used) / float(maxmemory) if maxmemory > 0 and used is not None else None,
    }


def workload_counters(conn):
    """One node's cumulative counters, gauges and state from INFO: calls per operation kind (commandstats mapped
    by telemetry.operations.REDIS_COMMAND_OPERATIONS), keyspace hits and misses, evicted keys; gauges role, used
    memory and dataset bytes; state from INFO persistence and memory (state_from_info)."""
    commandstats = conn.info("commandstats")
    counters = {"read": 0, "scan": 0, "update": 0, "delete": 0, "other": 0}
    for key, stats in commandstats.items():
        command = key[len("cmdstat_") :] if key.startswith("cmdstat_") else key
        calls = int(stats.get("calls", 0)) if isinstance(stats, dict) else 0
        counters[redis_operation(command)] += calls
    stats = conn.info("stats")
    counters["keyspace_hits"] = int(stats.get("keyspace_hits", 0))
    counters["keyspace_requests"] = counters["keyspace_hits"] + int(stats.get("keyspace_misses", 0))
    if stats.get("evicted_keys") is not None:
        counters["evicted_keys"] = int(stats["evicted_keys"])
    memory = conn.info("memory")
    persistence = conn.info("persistence")
    role = replication_info(conn)["role"]
    try:
        shards = parse_cluster_shards(raw_command(conn, "CLUSTER", "SHARDS"))
    except RedisError:
        shards = None  # not in cluster mode, or a server older than 7.0
    return {
        "counters": counters,
        "gauges": {
            "role": "replica" if role == "slave" else role,
            "data_bytes": int(memory.get("used_memory_dataset", memory.get("used_memory", 0))),
            "used_memory": int(memory.get("used_memory", 0)),
            "maxmemory": int(memory.get("maxmemory", 0)),
            "shards": shards,
        },
        "state": state_from_info(persistence, memory),
    }


def raw_command_bytes(conn, *args):
    """Like raw_command, but the reply's strings stay bytes: key names of any encoding, exactly as MIGRATE needs
    them back (used by redis_slots)."""
    connection = conn.connection_pool.get_connection()
    try:
        connection.send_command(*args)
        return connection.read_response(disable_decoding=True)
    finally:
        conn.connection_pool.release(connection)


# ----------------------------------------------------------------------------------------- what a roll watches
REDIRECTIONS = ("errorstat_MOVED", "errorstat_ASK")
"""Error replies that are a cluster client's routine (a slot moved, or a failover happened), not a failure."""


def client_counters(conn):
    """The node's running totals the client signals come from: commands and their microseconds, and the calls that
    failed or were rejected (INFO commandstats) less the MOVED/ASK redirections among them (INFO errorstats: a
    cluster client's routine), plus refused connections (INFO stats). Error replies to commands the server does not
    know (such as a newer client's CLIENT SETINFO on every connection to Redis 7.0) are in no command's stats, and
    do not count: they say nothing of the service."""
    commands = conn.info("commandstats")
    errors = conn.info("errorstats")
    stats = conn.info("stats")
    per_command = [v for v in commands.values() if isinstance(v, dict)]
    failed = sum(int(v.get("failed_calls", 0)) + int(v.get("rejected_calls", 0)) for v in per_command)
    redirected = sum(int(errors.get(k, {}).get("count", 0)) for k in REDIRECTIONS if isinstance(errors.get(k), dict))
    return dict(
        at=time.monotonic(),
        calls=sum(int(v.get("calls", 0)) for v in per_command),
        usec=sum(int(v.get("usec", 0)) for v in per_command),
        errors=max(0, failed - redirected) + int(stats.get("rejected_connections", 0)),
    )


def signals_between(before, after):
    """{"p99_ms", "ops_per_s", "errors_per_s"} of one node between two client_counters, or None when its totals
    fell (it restarted in between). Redis keeps no recent percentile: p99_ms is the mean time per command over the
    interval, never above the p99, so a threshold it breaks the p99 breaks too."""
    seconds = after["at"] - before["at"]
    calls, usec, errors = (after[k] - before[k] for k in ("calls", "usec", "errors"))
    if seconds <= 0 or calls < 0 or usec < 0 or errors < 0:
        return None
    return dict(
        p99_ms=round(usec / calls / 1000.0, 3) if calls else None,
        ops_per_s=round(calls / seconds, 3),
        errors_per_s=round(errors / seconds, 3),
    )
