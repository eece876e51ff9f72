#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: observe
short_description: Sample the live workload of Cassandra, Redis or MongoDB nodes into workload samples
description:
  - Snapshots every node's counters every O(interval) seconds for O(duration) seconds (the decision step T_d)
    and returns one workload sample per node and one for the cluster (schema C(tactician.workload_sample/v1)),
    with operations per second by type, read ratio, cache hit ratios, data size, latency percentiles where the store
    gives them, CPU (user + system + iowait), memory and disk usage, and the C(state) the store carries (compaction
    and flush backlogs, SSTables per read, cache and memory fill; see docs/observe.md for each field's source).
  - "Cassandra: the CQL virtual tables (C(system_views.coordinator_read_latency), C(coordinator_write_latency),
    C(coordinator_scan_latency), C(caches), C(disk_usage)); writes count as updates (CQL cannot tell an insert
    from an update). Redis: C(INFO commandstats) mapped to operations, C(INFO stats) keyspace hits and misses,
    C(INFO memory); only masters count in the cluster's operations. MongoDB: C(serverStatus) opcounters and
    WiredTiger cache, C(dbStats)."
  - "The C(state) of Cassandra from CQL (C(system_views.thread_pools), C(sstable_tasks), C(caches)) at every snapshot;
    with O(cassandra_home), also C(nodetool tablestats), C(tablehistograms) and C(compactionstats) once per node after
    the window (about 1.5 s a call), for what Cassandra 5.0 keeps out of the virtual tables: live SSTables, SSTables
    per read and the compaction strategies' estimate of pending compactions. Redis from C(INFO persistence),
    C(INFO memory) and C(INFO stats); MongoDB from C(serverStatus) C(wiredTiger.cache). A value the store does not
    give is null."
  - With O(history), the samples are written to the history store and the rate trackers kept there, so the
    5-minute window fills up over successive runs. Nothing is written unless every node answered.
  - CPU and memory are those of the machine the module runs on; give O(nodes[].pid_file) to add the server
    process's own CPU (C(extra.process_cpu_pct)) and O(nodes[].data_dir) for its data disk. For nodes on other
    machines, give O(node_usage), the readings M(tactician.nosql.node_usage) took on each node over the same
    window, and each sample's resources are then its node's own. Since those readings end after the window, the
    usual way is two calls - O(defer_write=true) while M(tactician.nosql.node_usage) runs on the nodes, then
    O(pending) with the readings (playbooks/tasks/observe_window.yml does both).
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
extends_documentation_fragment:
  - tactician.nosql.any_store
options:
  store:
    description: The store the nodes run.
    type: str
    choices: [cassandra, redis, mongodb]
    required: true
  cluster:
    description: Name of the cluster in the samples and the history.
    type: str
    default: lab
  nodes:
    description: The nodes to sample. Required unless O(pending) is given.
    type: list
    elements: dict
    suboptions:
      address:
        description: Cassandra node address, Redis C(host:port), MongoDB C(host:port).
        type: str
        required: true
      port:
        description: Cassandra CQL port of this node, when not O(port).
        type: int
      pid_file:
        description: PID file of the server process, when it runs on this machine.
        type: path
      data_dir:
        description: Data directory of the node, for disk usage.
        type: path
      host:
        description: Inventory name of the node (the cluster_nodes lookup gives it); O(node_usage) readings are
          matched to the node by it.
        type: str
      jmx_port:
        description: Cassandra JMX port of this node, for nodetool with O(cassandra_home) (default 7199).
        type: int
      jmx_host:
        description: Address of the node's JMX, for nodetool with O(cassandra_home) (default 127.0.0.1).
        type: str
      jmx_local:
        description:
          - The node's JMX answers on its own host only (the cluster_nodes lookup says so of a packaged install
            with JMX on loopback). Its nodetool state (SSTables, SSTables per read, pending compactions) is then
            not read from where observe runs; its CQL counters are read as for any node.
        type: bool
        default: false
  duration:
    description: Seconds to observe (the sample's window, T_d).
    type: float
    default: 30
  interval:
    description: Seconds between snapshots (the shortest window).
    type: float
    default: 5
  keyspaces:
    description: Cassandra keyspaces to count; all but the system keyspaces when empty.
    type: list
    elements: str
    default: []
  cassandra_home:
    description:
      - Cassandra installation whose C(lib/) holds the jars, on the machine the module runs on. When set, nodetool
        reads each node's live SSTables, SSTables per read and estimated pending compactions after the window;
        when unset those state fields are null.
      - A node whose nodetool call fails keeps them null and says why in C(extra.state_error); the sample stands.
    type: path
  java:
    description: The java executable for nodetool.
    type: path
    default: java
  jmx_user:
    description: JMX user, when JMX authentication is on.
    type: str
  jmx_password:
    description: JMX password (through a private password file, never a command line).
    type: str
  history:
    description:
      - History store to write to (a SQLite path or C(sqlite:///path)); nothing is written when unset.
      - Or a PostgreSQL URL C(postgresql://user@host/database?sslmode=verify-full&...) that several controllers
        share, its password from libpq's password file or E(PGPASSWORD) (never in the URL).
      - Or C(prometheus://host:port?records=PATH_OR_URL) (C(prometheus+https://) with TLS) - samples read from a
        Prometheus server at every T_d step (docs/monitoring.md), configurations and state kept in the C(records)
        history.
    type: str
  source:
    description:
      - C(poll) takes the window's snapshots from the nodes themselves, for O(duration) seconds.
      - C(prometheus) reads the window that ends now from the Prometheus server of O(history) (a
        C(prometheus://) URL) and returns at once, with no connection to the nodes; every node of O(cluster) that
        Prometheus scrapes is in the result (O(nodes), when given, keeps only those). Nothing is written, as the
        samples already are in Prometheus. The fields and their queries are in docs/monitoring.md.
    type: str
    choices: [poll, prometheus]
    default: poll
  ago:
    description:
      - With O(source=prometheus), the window ends this many seconds before now (an observation of the past;
        autotune reads its sub-windows before a roll this way, at once).
    type: float
    default: 0
  connect_timeout:
    description: Seconds to wait for each connection.
    type: float
    default: 10
  node_usage:
    description:
      - The results of M(tactician.nosql.node_usage) on the nodes (as registered, C(async_status) results
        included), matched to O(nodes) by their inventory name (O(nodes[].host)) or address. Each sample's
        C(resources) and C(extra.process_cpu_pct) are then read on its node over that sample's window;
        C(extra.resources_from) names the node. A node whose readings failed or do not cover the window keeps
        null resources and says why in C(extra.resources_error); the sample stands. Readings of a name that is no
        node of the observation are refused.
    type: list
    elements: dict
  defer_write:
    description:
      - Observe, return RV(pending) and write nothing, so the samples can be written by a second call with
        O(pending) once the nodes' readings of this window are in.
    type: bool
    default: false
  pending:
    description:
      - RV(pending) of a call with O(defer_write=true), as returned. Nothing is sampled - its samples get the
        resources of O(node_usage) and are written to O(history) with the rate trackers. O(store) must be the
        pending observation's. Exclusive with O(nodes).
    type: str
attributes:
  check_mode:
    description: Observing changes nothing; in check mode the history is not written.
    support: full
  diff_mode:
    description: Returns no diff.
    support: none
"""

EXAMPLES = r"""
- name: Sample the lab's Cassandra ring for 30 s and keep it
  tactician.nosql.observe:
    store: cassandra
    cluster: lab
    nodes: "{{ query('tactician.nosql.cluster_nodes', 'cassandra', store='cassandra') }}"
    login_user: cassandra
    login_password: "{{ cassandra_password }}"
    history: "{{ tactician_lab_dir }}/history.sqlite3"
  register: observed
"""

RETURN = r"""
samples:
  description: One workload sample per node (schema tactician.workload_sample/v1), with its C(state).
  returned: success
  type: list
  elements: dict
aggregate:
  description: The cluster's sample (node C(cluster)); Redis counts masters only in the operations. Its C(state)
    sums the backlogs of every node, takes the worst SSTables per read and fragmentation and the mean fill.
  returned: success
  type: dict
pending:
  description: With O(defer_write=true), what a second call needs to write the samples (pass it as O(pending)), as one
    packed line of text (the samples and the rate trackers; no secret).
  returned: when O(defer_write=true)
  type: str
summary:
  description: Lines for a person.
  returned: success
  type: list
  elements: str
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core import errors
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import (
    any_store_argument_spec,
    fail,
    fail_imports,
)
from ansible_collections.tactician.nosql.plugins.module_utils.stores import probes as observe_stores
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history as history_store
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import observer as observe


def observe_prometheus(module):
    """source=prometheus: the window that ends now, read from the history's Prometheus server."""
    params = module.params
    if params["pending"] is not None or params["defer_write"]:
        module.fail_json(msg="source: prometheus reads a window that has passed; pending and defer_write are for poll")
    if params["ago"] < 0:
        module.fail_json(msg="ago: %r must be 0 or more seconds before now" % params["ago"])
    try:
        with errors.reported_as(observe.ObserveError, None):
            with history_store.open_history(params["history"], readonly=True) as store:
                if not isinstance(store, history_store.PrometheusHistory):
                    module.fail_json(
                        msg="history: source prometheus reads a prometheus://host:port history (got %s)"
                        % params["history"].split("?", 1)[0]
                    )
                result = store.window(
                    params["store"], params["cluster"], params["duration"], end=time.time() - params["ago"]
                )
    except TacticianError as exc:
        fail(module, exc)
    if params["nodes"]:
        wanted = set()
        for node in params["nodes"]:
            address = node["address"]
            wanted.add(address)
            if params["store"] == "cassandra":
                wanted.add("%s:%d" % (address, node.get("port") or params["port"]))
        result["samples"] = [s for s in result["samples"] if s["node"] in wanted]
    module.exit_json(changed=False, source="prometheus", summary=observe.summary(result), **result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            **any_store_argument_spec(),
            store=dict(type="str", choices=list(observe.OPERATION_COUNTERS), required=True),
            cluster=dict(type="str", default="lab"),
            nodes=dict(
                type="list",
                elements="dict",
                options=dict(
                    address=dict(type="str", required=True),
                    port=dict(type="int"),
                    pid_file=dict(type="path"),
                    data_dir=dict(type="path"),
                    host=dict(type="str"),
                    jmx_port=dict(type="int"),
                    jmx_host=dict(type="str"),
                    jmx_local=dict(type="bool", default=False),
                ),
            ),
            cassandra_home=dict(type="path"),
            java=dict(type="path", default="java"),
            jmx_user=dict(type="str"),
            jmx_password=dict(type="str", no_log=True),
            duration=dict(type="float", default=30.0),
            interval=dict(type="float", default=5.0),
            keyspaces=dict(type="list", elements="str", default=[], no_log=False),
            history=dict(type="str"),
            connect_timeout=dict(type="float", default=10.0),
            node_usage=dict(type="list", elements="dict"),
            defer_write=dict(type="bool", default=False),
            pending=dict(type="str"),
            source=dict(type="str", choices=["poll", "prometheus"], default="poll"),
            ago=dict(type="float", default=0.0),
        ),
        required_together=[["login_user", "login_password"]],
        required_if=[["source", "poll", ["nodes", "pending"], True], ["source", "prometheus", ["history"]]],
        mutually_exclusive=[["nodes", "pending"], ["pending", "defer_write"]],
        supports_check_mode=True,
    )
    params = module.params
    if params["source"] == "prometheus":
        observe_prometheus(module)
    if params["ago"]:
        module.fail_json(msg="ago: a poll observes the window from now on; ago is for source prometheus")
    pending = None
    if params["pending"] is not None:
        try:
            pending = observe.unpack_pending(params["pending"])
        except TacticianError as exc:
            fail(module, exc)
        if pending.get("store") != params["store"]:
            module.fail_json(
                msg="pending: an observation of %r, not of store %r; give the pending result of the same store"
                % (pending.get("store"), params["store"])
            )
    else:
        fail_imports(module, observe_stores.missing_libraries(params["store"]))
    store = None
    try:
        # A node's address the client cannot parse raises a plain ValueError: its text alone, as always.
        with errors.reported_as(observe.ObserveError, None):
            if params["history"] and not module.check_mode:
                store = history_store.open_history(params["history"])
            if pending is not None:
                result = observe.complete(pending, params["node_usage"], history=store)
            else:
                with observe_stores.Probes(params) as probes:
                    result = observe.observe(
                        probes,
                        params["store"],
                        params["cluster"],
                        params["duration"],
                        params["interval"],
                        history=store,
                        defer=params["defer_write"],
                        node_usage=params["node_usage"],
                    )
    except TacticianError as exc:
        fail(module, exc)
    finally:
        if store is not None:
            store.close()
    if "pending" in result:
        result["pending"] = observe.pack_pending(result["pending"])
    module.exit_json(changed=False, summary=observe.summary(result), **result)


if __name__ == "__main__":
    main()
