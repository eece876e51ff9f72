# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Cluster-level Cassandra checks: every node must see every expected peer Up/Normal (UN) and
answer CQL. Health is what the cluster sees, not what one node says about itself."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ansible_collections.tactician.nosql.plugins.module_utils.core.timing import poll_health
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.server import (
    CassandraServerError,
    parse_status,
    run_nodetool,
)

MAX_PARALLEL_VIEWS = 8
"""Nodes asked at once (each a nodetool JVM of about 100 MiB while it runs)."""


def node_views(params, nodes):
    """{address: {'status': {peer: 'UN'...}, 'cql': release_version} or {'error': ...}} per node, in the order of
    nodes. The nodes are asked at the same time: each view is a nodetool JVM and a CQL connection that mostly wait."""
    if len(nodes) <= 1:
        return {node["address"]: _node_view(params, node) for node in nodes}
    with ThreadPoolExecutor(max_workers=min(len(nodes), MAX_PARALLEL_VIEWS)) as pool:
        views = list(pool.map(lambda node: _node_view(params, node), nodes))
    return {node["address"]: view for node, view in zip(nodes, views, strict=True)}


def _node_view(params, node):
    address = node["address"]
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
            problems.append("%s: nodetool status failed: %s" % (address, view["nodetool_error"]))
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
        lines.append("  %s sees %s; %s" % (address, seen or "nothing (nodetool failed)", cql))
    lines.extend("  problem: %s" % problem for problem in problems)
    return lines
