# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Cluster-level Cassandra checks: every node must see every expected peer Up/Normal (UN) and
answer CQL. Health is what the cluster sees, not what one node says about itself.

A node's view is read by `nodetool status` on its JMX. A node whose JMX listens only on its own host (a packaged
install's default, LOCAL_JMX=yes: ``jmx_local`` in its node dict) can be asked that way only where this code runs on
that host (``here``, its address); from anywhere else its view is read by CQL from its gossip state
(system_views.gossip_info): every endpoint's status, and whether its heartbeat advanced over GOSSIP_WINDOW_S, which
is what the failure detector behind nodetool's Up/Down judges by."""

from __future__ import annotations

import json
import math
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.tactician.nosql.plugins.module_utils.core import process
from ansible_collections.tactician.nosql.plugins.module_utils.core.timing import poll_health
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.server import (
    CassandraServerError,
    parse_status,
    run_nodetool,
)

MAX_PARALLEL_VIEWS = 8
"""Nodes asked at once (each a nodetool JVM of about 100 MiB while it runs)."""

GOSSIP_WINDOW_S = 2.5
"""Seconds between the two reads of a node's gossip state: a live endpoint's heartbeat reaches every node about
once a second."""

_GOSSIP_STATES = (("NORMAL", "N"), ("BOOT", "J"), ("LEAVING", "L"), ("MOVING", "M"), ("LEFT", "L"))


def jmx_reachable(node, here=None):
    """Whether node's JMX can be asked from where this code runs: always, unless its JMX is local to its own host
    (jmx_local) and that host is not here (the address of the node this code runs on, or None)."""
    return not node.get("jmx_local") or (here is not None and node["address"] == here)


def node_views(params, nodes):
    """{address: {'status': {peer: 'UN'...}, 'cql': release_version} or {'error': ...}} per node, in the order of
    nodes. The nodes are asked at the same time: each view is a nodetool JVM and a CQL connection that mostly wait.
    params["here"]: the address of the node this code runs on (see jmx_reachable)."""
    if len(nodes) <= 1:
        return {node["address"]: _node_view(params, node) for node in nodes}
    with ThreadPoolExecutor(max_workers=min(len(nodes), MAX_PARALLEL_VIEWS)) as pool:
        views = list(pool.map(lambda node: _node_view(params, node), nodes))
    return {node["address"]: view for node, view in zip(nodes, views, strict=True)}


def gossip_state(status, advanced, is_self=False):
    """nodetool's two letters for one endpoint of a gossip view: U when its heartbeat advanced over the window (or
    it is the node asked, which answers), else D; then N(ormal), J(oining), L(eaving), M(oving) from its status
    (status_with_port: "NORMAL,<token>", "shutdown,true" after a drain: DN), "?" when it has none."""
    kind = (status or "").split(",", 1)[0].strip().upper()
    if kind == "SHUTDOWN":
        return "DN"
    letter = dict(_GOSSIP_STATES).get(kind, "?")
    return ("U" if (advanced or is_self) else "D") + letter


def parse_gossip(first, second, self_address):
    """{address: state} from two reads of system_views.gossip_info (lists of rows with address, generation,
    heartbeat and status_with_port or status), GOSSIP_WINDOW_S apart."""
    before = {str(row.address): _beat(row) for row in first}
    states = {}
    for row in second:
        address = str(row.address)
        status = getattr(row, "status_with_port", None) or getattr(row, "status", None)
        beat, earlier = _beat(row), before.get(address)
        advanced = beat is not None and earlier is not None and beat > earlier
        states[address] = gossip_state(status, advanced, is_self=address == self_address)
    return states


def _beat(row):
    """(generation, heartbeat) of a gossip row, or None: a restart starts a new generation at a low heartbeat."""
    if getattr(row, "heartbeat", None) is None:
        return None
    return (getattr(row, "generation", None) or 0, row.heartbeat)


def _gossip_view(params, node):
    """A node's view read by CQL from its gossip state; the view dict of _node_view (status, cql or the errors)."""
    view = {"via": "gossip"}
    cluster = None
    try:
        conn_params = dict(params)
        if node.get("native_port"):
            conn_params["login_port"] = node["native_port"]
        cluster, session = cql.connect(conn_params, hosts=[node["address"]], only_these_hosts=True)
        query = "SELECT * FROM system_views.gossip_info"
        first = list(session.execute(query))
        time.sleep(float(params.get("gossip_window_s") or GOSSIP_WINDOW_S))
        second = list(session.execute(query))
        view["status"] = parse_gossip(first, second, node["address"])
        view["cql"] = cql.local_info(session)["release_version"]
    except Exception as exc:  # the driver raises many types; all mean "no CQL here"
        view["cql_error"] = str(exc)
        view["nodetool_error"] = "its view not read: its JMX is local to its host and CQL did not answer"
        # a node that refuses a login or a query still runs; only one whose port is closed is down
        port = node.get("native_port") or params.get("login_port") or 9042
        view["port_closed"] = not process.port_open(node["address"], port)
    finally:
        if cluster is not None:
            cluster.shutdown()
    return view


def _node_view(params, node):
    address = node["address"]
    if not jmx_reachable(node, params.get("here")):
        return _gossip_view(params, node)
    view = {}
    try:
        text = run_nodetool(
            params["cassandra_home"],
            node.get("jmx_host") or "127.0.0.1",
            node.get("jmx_port") or 7199,
            ["status"],
            java=params.get("java") or "java",
            jmx_user=params.get("jmx_user"),
            jmx_password=params.get("jmx_password"),
            timeout=60,
        )
        view["status"] = parse_status(text)
    except CassandraServerError as exc:
        view["nodetool_error"] = str(exc)
    if params.get("check_cql", True):
        cluster = None
        try:
            conn_params = dict(params)
            if node.get("native_port"):
                conn_params["login_port"] = node["native_port"]
            cluster, session = cql.connect(conn_params, hosts=[address], only_these_hosts=True)
            view["cql"] = cql.local_info(session)["release_version"]
        except Exception as exc:  # the driver raises many types; all mean "no CQL here"
            view["cql_error"] = str(exc)
        finally:
            if cluster is not None:
                cluster.shutdown()
    return view


def problems_of(views, expected):
    problems = []
    for address, view in views.items():
        if "nodetool_error" in view:
            how = "its gossip state" if view.get("via") == "gossip" else "nodetool status failed"
            problems.append("%s: %s: %s" % (address, how, view["nodetool_error"]))
        else:
            for peer in expected:
                state = view["status"].get(peer)
                if state != "UN":
                    problems.append("%s sees %s as %s" % (address, peer, state or "absent"))
        if "cql_error" in view:
            problems.append("%s: CQL not answering: %s" % (address, view["cql_error"]))
    return problems


def wait_healthy(params, nodes, timeout, interval=3.0):
    """Poll until every node sees every expected node UN (and answers CQL); the report of common.poll_health."""
    expected = params.get("expected_nodes") or [node["address"] for node in nodes]

    def check():
        views = node_views(params, nodes)
        return problems_of(views, expected), views

    return poll_health(check, timeout, interval)


def summary(healthy, problems, views):
    """Lines a person reads: the verdict, then each node's view of the ring."""
    lines = ["Cassandra: %s (%d nodes)" % ("healthy" if healthy else "NOT healthy", len(views))]
    for address, view in views.items():
        seen = " ".join("%s=%s" % item for item in sorted(view.get("status", {}).items()))
        cql = ("CQL %s" % view["cql"]) if "cql" in view else "CQL down"
        via = " (its gossip state, by CQL)" if view.get("via") == "gossip" else ""
        lines.append("  %s sees %s%s; %s" % (address, seen or "nothing (nodetool failed)", via, cql))
    lines.extend("  problem: %s" % problem for problem in problems)
    return lines


# ----------------------------------------------------------------------------------------- what a roll watches
CLIENT_REQUEST_BEANS = "org.apache.cassandra.metrics:type=ClientRequest,*"
"""The coordinators' client request metrics (one JMX query: `nodetool sjk mxdump -q`)."""

_SCOPES = ("Read", "Write", "RangeSlice")
_LATENCY_SCOPES = ("Read", "Write")
_ERRORS = ("Timeouts", "Unavailables", "Failures")


def parse_client_requests(text):
    """{"p99_ms", "ops_per_s", "errors_per_s"} of one coordinator from `sjk mxdump` JSON of CLIENT_REQUEST_BEANS:
    the worst p99 of reads and writes (the decaying reservoir of the last minutes, microseconds -> ms), requests
    and errors (timeouts, unavailables, failures) per second over the last minute (the one-minute rates)."""
    start = text.find("{")
    if start < 0:
        raise CassandraServerError("no JSON in the mxdump output: %s" % text.strip()[-200:])
    beans = json.loads(text[start:]).get("beans") or []
    p99s, ops, errors = [], 0.0, 0.0
    for bean in beans:
        fields = dict(part.split("=", 1) for part in bean.get("name", "").split(":", 1)[-1].split(",") if "=" in part)
        scope, name = fields.get("scope"), fields.get("name")
        if scope not in _SCOPES:
            continue
        rate = _finite(bean.get("OneMinuteRate"))
        if name == "Latency":
            ops += rate
            if scope in _LATENCY_SCOPES and bean.get("Count"):
                p99s.append(_finite(bean.get("99thPercentile")) / 1000.0)
        elif name in _ERRORS:
            errors += rate
    return dict(p99_ms=round(max(p99s), 3) if p99s else None, ops_per_s=round(ops, 3), errors_per_s=round(errors, 3))


def _finite(value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        return 0.0
    return value if math.isfinite(value) else 0.0


def client_signals(params, nodes):
    """{address: parse_client_requests(...) or {"error": text}} for every node, asked at the same time. A node whose
    JMX is local to its host is read by JMX only there (params["here"]); from elsewhere by cql_client_signals."""

    def one(node):
        if not jmx_reachable(node, params.get("here")):
            return cql_client_signals(params, node)
        try:
            text = run_nodetool(
                params["cassandra_home"],
                node.get("jmx_host") or "127.0.0.1",
                node.get("jmx_port") or 7199,
                ["sjk", "mxdump", "-q", CLIENT_REQUEST_BEANS],
                java=params.get("java") or "java",
                jmx_user=params.get("jmx_user"),
                jmx_password=params.get("jmx_password"),
                timeout=60,
            )
            return parse_client_requests(text)
        except (CassandraServerError, ValueError) as exc:
            return dict(error=str(exc))

    with ThreadPoolExecutor(max_workers=max(1, min(len(nodes), MAX_PARALLEL_VIEWS))) as pool:
        found = list(pool.map(one, nodes))
    return {node["address"]: signals for node, signals in zip(nodes, found, strict=True)}


_COORDINATOR_TABLES = ("coordinator_read_latency", "coordinator_write_latency")


def parse_coordinator_latency(rows):
    """{"p99_ms", "ops_per_s", "errors_per_s": None} of one coordinator from the rows of Cassandra's per-table
    coordinator latency tables (system_views.coordinator_read_latency and _write_latency: count, per_second, the
    p99 in ms): the worst p99 of the tables served, the requests per second summed. Errors are not in them."""
    p99s, ops = [], 0.0
    for row in rows:
        fields = row._asdict() if hasattr(row, "_asdict") else dict(row)
        rate = _finite(fields.get("per_second"))
        p99 = next((fields[k] for k in ("p99th_ms", "p99th") if fields.get(k) is not None), None)
        ops += rate
        if rate > 0 and int(fields.get("count") or 0) > 0 and p99 is not None:
            p99s.append(_finite(p99))
    return dict(p99_ms=round(max(p99s), 3) if p99s else None, ops_per_s=round(ops, 3), errors_per_s=None)


def cql_client_signals(params, node):
    """The client signals of a node whose JMX cannot be asked from here, by CQL (parse_coordinator_latency; rates
    over five minutes where JMX gives one), or {"error": text}."""
    cluster = None
    try:
        conn_params = dict(params)
        if node.get("native_port"):
            conn_params["login_port"] = node["native_port"]
        cluster, session = cql.connect(conn_params, hosts=[node["address"]], only_these_hosts=True)
        rows = []
        for table in _COORDINATOR_TABLES:
            rows.extend(session.execute("SELECT * FROM system_views.%s" % table))
        return dict(parse_coordinator_latency(rows), via="cql")
    except Exception as exc:  # the driver raises many types; all mean "not read"
        return dict(error="its JMX is local to its host and CQL did not answer: %s" % _first_line(exc))
    finally:
        if cluster is not None:
            cluster.shutdown()


def down_peers(views, me):
    """{peer: evidence} of the nodes other than me that are down in this poll: the node itself answers neither
    nodetool nor CQL, or a node other than me that answers sees it down (D*). me's own view is left out: a node
    that has just started sees its peers down until gossip has told it otherwise."""
    down = {}
    for address, view in views.items():
        if address == me:
            continue
        if view.get("via") == "gossip":
            if view.get("port_closed"):
                down[address] = "its CQL port is closed, its JMX being local to its host (%s)" % _first_line(
                    view.get("cql_error", "")
                )
        elif "nodetool_error" in view and "cql_error" in view:
            down[address] = "answers neither JMX nor CQL (%s)" % _first_line(view["nodetool_error"])
    for observer, view in views.items():
        if observer == me or "status" not in view:
            continue
        for peer, state in view["status"].items():
            if peer != me and peer != observer and peer in views and state and state.startswith("D"):
                down.setdefault(peer, "seen %s by %s" % (state, observer))
    return down


def _first_line(text):
    lines = [line for line in str(text).splitlines() if line.strip()]
    return (lines[0] if lines else "")[:200]


def pending_hints(params, nodes):
    """{holder: {target address or host id: hint files}} of the hints the nodes hold (system_views.pending_hints),
    and {holder: error} for the nodes that could not be asked."""
    held, errors = {}, {}
    for node in nodes:
        cluster = None
        try:
            conn_params = dict(params)
            if node.get("native_port"):
                conn_params["login_port"] = node["native_port"]
            cluster, session = cql.connect(conn_params, hosts=[node["address"]], only_these_hosts=True)
            for row in session.execute("SELECT * FROM system_views.pending_hints"):
                files = int(getattr(row, "files", 0) or 0)
                if files:
                    target = str(getattr(row, "address", None) or row.host_id)
                    held.setdefault(node["address"], {})[target] = files
        except Exception as exc:  # the driver raises many types; all mean "could not ask"
            errors[node["address"]] = _first_line(exc)
        finally:
            if cluster is not None:
                cluster.shutdown()
    return held, errors


def node_states(views):
    """{address: state} of every node of the views: "UN" when every other node that answers sees it UN and it
    answers itself; else what is wrong ("DN as seen by 127.0.0.3", "answers neither JMX nor CQL")."""
    states = {}
    for address, view in views.items():
        seen = {
            observer: other["status"].get(address) or "absent"
            for observer, other in views.items()
            if observer != address and "status" in other
        }
        odd = sorted("%s as seen by %s" % (state, observer) for observer, state in seen.items() if state != "UN")
        if "nodetool_error" in view and "cql_error" in view:
            odd.insert(0, "answers neither JMX nor CQL")
        elif "cql_error" in view:
            odd.insert(0, "CQL not answering")
        states[address] = "UN" if not odd else "; ".join(odd)
    return states


def auth_replication(replication):
    """system_auth's replication as the batch rule takes it: SimpleStrategy's factor, or {data center: replicas}."""
    klass = str(replication.get("class", "")).rsplit(".", 1)[-1]
    if klass == "SimpleStrategy":
        return int(replication["replication_factor"])
    return {dc: int(n) for dc, n in replication.items() if dc != "class"}


def parse_auth(settings, replication):
    """How the cluster reads its roles at login and at every permission check, from system_views.settings
    ({name: value}) and system_auth's replication map: {"rf", "cl", "authenticator"}, or None when it checks no
    password (AllowAllAuthenticator) and so reads no role. Cassandra 4.1+ reads at auth_read_consistency_level
    (LOCAL_QUORUM by default) whenever its auth caches miss, superusers or not."""
    authenticator = str(settings.get("authenticator") or "")
    if not authenticator or "AllowAll" in authenticator or replication is None:
        return None
    return dict(
        rf=auth_replication(replication),
        cl=str(settings.get("auth_read_consistency_level") or "LOCAL_QUORUM").upper(),
        authenticator=authenticator,
    )


def auth_reads(params):
    """parse_auth of the cluster the login reaches, or {"error": text} when it cannot be read."""
    cluster = None
    try:
        cluster, session = cql.connect(params)
        settings = {}
        for name in ("authenticator", "auth_read_consistency_level"):
            row = session.execute("SELECT value FROM system_views.settings WHERE name = %s", (name,)).one()
            settings[name] = row.value if row is not None else None
        found = cql.keyspace_replication(session, "system_auth")
        return parse_auth(settings, found and found["replication"])
    except Exception as exc:  # the driver raises many types; all mean "not read"
        return dict(error="system_auth's replication or the auth settings not read: %s" % _first_line(exc))
    finally:
        if cluster is not None:
            cluster.shutdown()
