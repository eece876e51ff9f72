#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: reconfigure_node
short_description: Bring one Cassandra, Redis or MongoDB node to a wanted configuration, live or by a restart
description:
  - One node's step of a rolling reconfiguration. Validates the wanted settings against the parameter catalog of
    the store (names, types, ranges, the node's memory budget) before anything is touched, reads what the node
    runs now (Cassandra C(system_views.settings), Redis C(CONFIG GET), MongoDB C(getParameter)) and changes only
    what differs.
  - Settings that can change live are applied live (Cassandra C(nodetool set*), Redis C(CONFIG SET) then
    C(CONFIG REWRITE), MongoDB C(setParameter)) and written to the config file so that they survive a restart.
  - For the others the node is restarted - Cassandra drained first; a Redis master failed over to its most
    up-to-date replica first (C(CLUSTER FAILOVER), with retries); a MongoDB primary stepped down first - its
    config file rewritten in place (comments and key order kept, a backup kept next to it), started again and
    awaited until the cluster sees it back. Cassandra is back when every peer sees it Up/Normal and no peer holds
    hints for it; Redis when every node reports cluster_state ok and its replica link is up; MongoDB when it
    answers as primary or secondary.
  - Right before a node stops, the whole cluster is checked again (not only once before the roll) - Cassandra
    every node Up/Normal in every node's view, answering CQL, and no hints pending on any node; Redis every node
    answering with cluster_state ok and every replica link up; MongoDB every member of the replica set PRIMARY,
    SECONDARY or ARBITER, one primary, every secondary within C(guard.max_lag_s) of it, and a primary stepped down
    with another member elected before it stops - and the client-visible signals of O(guard) are
    waited on while above their thresholds. When the cluster is not ready the task fails with the reason and the
    node is not touched.
  - While the node is down its peers are watched. A peer that goes down meanwhile ends the step at once (not at
    O(rejoin_timeout)), naming the peer; the node is left running on the new configuration (or, when it does not
    run, started on its previous one), never restarted a second time while a peer is down.
  - Then the new values are read back from the node (verify). If the node does not come back, the previous
    config file is restored and the node started again before the task fails, so a roll stops with the cluster
    available.
  - Restarts belong to C(playbooks/rolling_reconfigure.yml), which calls this module one batch of nodes at a time.
    Use O(allow_restart=false) to refuse any change that needs a restart.
  - The catalog is read on the controller from the collection's C(catalog/) folder and passed to the node.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
extends_documentation_fragment:
  - tactician.nosql.any_store
options:
  store:
    description: The store the node belongs to.
    type: str
    choices: [cassandra, redis, mongodb]
    required: true
  address:
    description:
      - The node. Cassandra - its RPC address (the CQL port is O(port)). Redis and MongoDB - C(host:port).
    type: str
    required: true
  settings:
    description:
      - "Wanted settings by catalog name (see the C(tactician.nosql.catalog) lookup), for example
        C({memtable_heap_space: 256, concurrent_writes: 64}) for Cassandra or C({maxmemory: 104857600}) for Redis.
        Values may carry units as the server writes them (C(256MiB), C(100mb))."
    type: dict
    default: {}
  config_file:
    description: The node's config file (cassandra.yaml, redis.conf, mongod.conf), rewritten in place.
    type: path
  catalog_version:
    description: Version of the store's catalog to use (default the newest).
    type: str
  catalog:
    description: The catalog itself; set by the action plugin from the collection's catalog files.
    type: dict
  allow_restart:
    description: Restart the node when a setting needs it. With V(false) such a change fails and nothing is touched.
    type: bool
    default: true
  force_restart:
    description:
      - Restart the node even when every change can be made live, or when nothing changes (the settings are
        written to the config file and the node drained, stopped, started and verified as for a restart change).
      - For measurements that must each start from a fresh process, such as the runs of C(playbooks/compare.yml).
      - Contradicts O(allow_restart=false).
    type: bool
    default: false
  verify:
    description: Read the values back from the node after the change and fail when they differ.
    type: bool
    default: true
  rollback:
    description: When the node does not come back, restore the previous config file and start it again.
    type: bool
    default: true
  memory_mb:
    description: Memory of the node in MiB for the budget check (default the managed host's MemTotal).
    type: int
  heap_mb:
    description: Cassandra heap in MiB for the budget check (default from C(heap_size) in O(daemon)).
    type: int
  daemon:
    description:
      - How the collection's own runner starts and stops the node (lab and test nodes) - the options of
        M(tactician.nosql.cassandra_daemon) or M(tactician.nosql.redis_daemon) without C(state).
      - Without it, the node's O(service), or O(stop_command) and O(start_command) (a supervisor).
    type: dict
  service:
    description:
      - The service that runs the node on this host (a packaged install), for example V(redis-server) or
        V(cassandra) - stopped and started through O(service_manager); the package's own scripts guard against a
        second server.
      - Exclusive with O(daemon) and O(stop_command)/O(start_command).
    type: str
  service_manager:
    description:
      - What runs O(service) - V(systemd) (C(systemctl stop|start)), V(sysv) (C(service NAME stop|start)), or
        V(auto), systemd when it is the running init, else the SysV scripts.
    type: str
    choices: [auto, systemd, sysv]
    default: auto
  stop_command:
    description:
      - Argument vector that stops the node (Cassandra is drained before it runs), e.g. C([systemctl, stop, mongod]).
    type: list
    elements: str
  start_command:
    description: Argument vector that starts the node.
    type: list
    elements: str
  status_command:
    description:
      - Argument vector that tells whether the node's process runs - exit code 0 while it runs, 1, 2 or 3 when it
        does not (the LSB status codes), or the state C(systemctl is-active) prints.
      - While the step waits for the node to come back, a process found gone in three polls in a row ends the wait
        at once (the node is rolled back) instead of after O(rejoin_timeout).
      - With O(service) it is C(systemctl is-active NAME) or C(service NAME status).
    type: list
    elements: str
  peers:
    description:
      - The other nodes of the cluster, whose view decides when the node is back. Cassandra - a list of
        C({address, jmx_host, jmx_port, native_port, jmx_local}) (the tactician.nosql.cluster_nodes lookup's; a
        peer with C(jmx_local) is watched by CQL and its gossip state, its JMX being reachable on its own host
        only); Redis - a list of C(host:port).
    type: list
    elements: raw
    default: []
  batch:
    description:
      - Cassandra - the addresses of the other nodes restarted in the same batch of a roll (as O(peers) names them).
        The batch rule (R = RF - CL) lets them be down all through this node's step, so they are neither checked
        before the stop nor watched while the node is down; every other peer is. C(playbooks/rolling_reconfigure.yml)
        passes them.
    type: list
    elements: str
    default: []
  rejoin_timeout:
    description: Seconds to wait for the node to be back as its peers see it.
    type: int
    default: 600
  cassandra_home:
    description: Cassandra installation with C(lib/) (for nodetool).
    type: path
  java:
    description: Java executable for nodetool.
    type: str
    default: java
  jmx_host:
    description: JMX host of the Cassandra node.
    type: str
    default: 127.0.0.1
  jmx_port:
    description: JMX port of the Cassandra node.
    type: int
    default: 7199
  jmx_user:
    description: JMX user, when JMX authentication is on.
    type: str
  jmx_password:
    description: JMX password (passed to nodetool through a private file, never on its command line).
    type: str
  guard:
    description:
      - The client-visible thresholds of the roll, read right before each stop and while the node is down. Every
        key is optional; see docs/rolling.md for how each signal is read.
      - C(p99_ms) (default V(500)) - the worst p99 latency of reads and writes the clients may see (Cassandra the
        coordinators' ClientRequest latency; Redis the mean time per command); V(null) for no limit.
      - C(error_rate) (default V(0.01)) - the share of client requests that may fail (Cassandra timeouts,
        unavailables and failures; Redis failed or rejected calls less MOVED and ASK redirections, and refused
        connections); V(null) for no limit.
      - C(max_wait_s) (default V(300)) - how long the signals may stay above the thresholds (and hints stay
        pending) before the roll stops.
      - C(interval_s) (default V(5)) - seconds between two reads of the signals.
      - C(peer_down_polls) (default V(2)) - polls in a row that must see a peer down before the step stops for it.
      - C(min_ops_per_s) (default V(10)) - requests per second below which a node's p99 (and the cluster's error
        rate) is not judged - the percentile of a handful of requests, such as the first after a restart, is no
        client signal.
      - C(max_lag_s) (default V(10), MongoDB) - how far behind the primary a secondary may be, in seconds, when the
        replica set is checked right before a member stops (waited for up to C(max_wait_s)).
    type: dict
  guard_prometheus:
    description:
      - Read the client-visible signals of O(guard) from a Prometheus server instead of asking every node - one
        query for the whole cluster, and it reaches nodes whose JMX or stats are local to their host. Cassandra's
        from the JMX exporter agent (the coordinators' ClientRequest counts, errors and p99), Redis's from the
        Redis exporter (calls, failed and rejected calls less MOVED/ASK, refused connections, time per call), over
        the last minute (docs/monitoring.md).
      - While Prometheus does not answer, the signals are unknown and the guard waits; past C(guard.max_wait_s)
        the roll stops.
    type: dict
    suboptions:
      url:
        description:
          - C(prometheus://host:port) (C(prometheus+https://host:port?ca_file=...&cert_file=...&key_file=...) with
            TLS).
        type: str
        required: true
      cluster:
        description: The value of the C(cluster) label on the cluster's series.
        type: str
        required: true
  failover:
    description:
      - Redis - fail a master over to a replica in sync before restarting it (V(auto)), or never. With no replica
        in sync (online, acknowledged within 2 s), or the replica lost during the failover, the task fails and the
        master is not stopped.
    type: str
    choices: [auto, never]
    default: auto
attributes:
  check_mode:
    description:
      - Reports the changes, whether a restart is required and the steps a real run would take; touches nothing.
    support: full
  diff_mode:
    description: Shows the running values before and the wanted values after.
    support: full
  action:
    description: An action plugin loads the catalog on the controller.
    support: full
notes:
  - The keys this module sets are recorded in C(<config_file>.tuned.json) so that the node roles leave them alone.
"""

EXAMPLES = r"""
- name: Bigger memtables on a lab node (needs a restart)
  tactician.nosql.reconfigure_node:
    store: cassandra
    address: 127.0.0.2
    settings:
      memtable_heap_space: 256
      memtable_flush_writers: 4
    config_file: "{{ cassandra_node_dir }}/conf/cassandra.yaml"
    cassandra_home: "{{ cassandra_node_home }}"
    jmx_port: 7299
    login_user: cassandra
    login_password: "{{ cassandra_password }}"
    peers: "{{ query('tactician.nosql.cluster_nodes', 'cassandra', store='cassandra') }}"

- name: A packaged Redis, restarted by its service manager when a setting needs it
  tactician.nosql.reconfigure_node:
    store: redis
    address: "{{ ansible_host }}:6379"
    settings:
      maxmemory-policy: allkeys-lfu
    config_file: /etc/redis/redis.conf
    service: redis-server
    login_password: "{{ redis_password }}"
    tls: true
    ca_file: /etc/redis/tls/ca.pem
    client_cert_file: /etc/redis/tls/client.pem
    client_key_file: /etc/redis/tls/client-key.pem
    peers: "{{ query('tactician.nosql.cluster_nodes', 'redis', store='redis') }}"

- name: Redis eviction, live
  tactician.nosql.reconfigure_node:
    store: redis
    address: 127.0.0.1:6381
    settings:
      maxmemory: 64mb
      maxmemory-policy: allkeys-lru
    login_user: tactician
    login_password: "{{ redis_password }}"
    allow_restart: false
"""

RETURN = r"""
changes:
  description: Settings that differ, with the running value, the wanted one and how it is applied.
  returned: always
  type: dict
  sample: {memtable_heap_space: {before: 128, after: 256, apply: restart}}
file_changes:
  description: Keys of the config file that change.
  returned: always
  type: dict
restart_required:
  description: Whether a change needs a restart of the node.
  returned: always
  type: bool
restart_forced:
  description: Whether the node is restarted only because O(force_restart) asks for it.
  returned: always
  type: bool
steps:
  description: Steps taken (or planned, in check mode).
  returned: always
  type: list
  elements: str
  sample: [stop, write config, start, rejoin, verify]
commands:
  description: Live commands executed (never with secrets).
  returned: always
  type: list
  elements: str
timings:
  description: Seconds per step (read, prepare, stop, write_config, start, rejoin, verify, rollback).
  returned: always
  type: dict
downtime:
  description: Seconds from stopping the node until the cluster saw it back (T_r).
  returned: when the node was restarted
  type: float
rejoin:
  description: How the node came back (Cassandra - seconds to UN and until hints were delivered).
  returned: when the node was restarted
  type: dict
guard:
  description: What was checked right before the stop (the cluster's views, hints, the client signals and the wait).
  returned: when the node was to be restarted
  type: dict
clients_while_down:
  description: The client signals the live peers reported while the node was down (worst p99, worst error rate,
    the longest stretch above the thresholds).
  returned: when the node was restarted (Cassandra)
  type: dict
stopped:
  description: Why the roll stops at this node - V(cluster not ready) (nothing touched), V(peer down),
    V(client guard) (nothing stopped when RV(touched) is false), V(failover), V(node not back).
  returned: on failure after the checks began
  type: str
touched:
  description: Whether the node was stopped (false - it runs as before).
  returned: on failure after the checks began
  type: bool
peer_down:
  description: The peers that went down during the step, with what showed it.
  returned: when a peer went down
  type: dict
left:
  description: The state the node was left in when a peer went down.
  returned: when a peer went down
  type: str
cluster:
  description: Every node's state as last seen (Cassandra how the others see it; Redis role and cluster_state).
  returned: on failure after the checks began
  type: dict
rollback:
  description: What the rollback did, when the node did not come back.
  returned: on failure after the node was stopped
  type: dict
verified:
  description: Values read back from the node after the change.
  returned: when verify ran
  type: dict
config_backup:
  description: Copy of the config file before it was rewritten.
  returned: when the file was rewritten
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.apply import node_base
from ansible_collections.tactician.nosql.plugins.module_utils.apply import node_step as reconfigure
from ansible_collections.tactician.nosql.plugins.module_utils.apply import nodes as reconfigure_stores
from ansible_collections.tactician.nosql.plugins.module_utils.core import errors
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog import Catalog
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog_files import CatalogError
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import ApplyError, TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import (
    any_store_argument_spec,
    fail_imports,
    with_diff,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            **any_store_argument_spec(),
            store=dict(type="str", choices=["cassandra", "redis", "mongodb"], required=True),
            address=dict(type="str", required=True),
            settings=dict(type="dict", default={}),
            config_file=dict(type="path"),
            catalog_version=dict(type="str"),
            catalog=dict(type="dict"),
            allow_restart=dict(type="bool", default=True),
            force_restart=dict(type="bool", default=False),
            verify=dict(type="bool", default=True),
            rollback=dict(type="bool", default=True),
            memory_mb=dict(type="int"),
            heap_mb=dict(type="int"),
            daemon=dict(type="dict"),
            service=dict(type="str"),
            service_manager=dict(type="str", choices=list(node_base.SERVICE_MANAGERS), default="auto"),
            stop_command=dict(type="list", elements="str"),
            start_command=dict(type="list", elements="str"),
            status_command=dict(type="list", elements="str"),
            peers=dict(type="list", elements="raw", default=[]),
            batch=dict(type="list", elements="str", default=[]),
            rejoin_timeout=dict(type="int", default=600),
            cassandra_home=dict(type="path"),
            java=dict(type="str", default="java"),
            jmx_host=dict(type="str", default="127.0.0.1"),
            jmx_port=dict(type="int", default=7199),
            jmx_user=dict(type="str"),
            jmx_password=dict(type="str", no_log=True),
            failover=dict(type="str", choices=["auto", "never"], default="auto"),
            guard=dict(type="dict"),
            guard_prometheus=dict(
                type="dict",
                options=dict(url=dict(type="str", required=True), cluster=dict(type="str", required=True)),
            ),
        ),
        required_together=[["stop_command", "start_command"]],
        mutually_exclusive=[
            ["daemon", "service", "stop_command"],
            ["daemon", "service", "start_command"],
            ["daemon", "service", "status_command"],
        ],
        supports_check_mode=True,
    )
    params = module.params
    if params["service"]:
        try:
            params["stop_command"], params["start_command"] = node_base.service_commands(
                params["service"], params["service_manager"]
            )
            params["status_command"] = node_base.status_command(params["service"], params["service_manager"])
        except ValueError as exc:
            module.fail_json(msg=str(exc))
    fail_imports(module, reconfigure_stores.missing_libraries(params["store"]))
    node = None
    try:
        # An error of the catalog, and one on the node other than the step machine's own (which carries the steps
        # done), names what it concerns: the store's catalog, or the store and the node's address.
        with errors.reported_as(CatalogError, "catalog of %s" % params["store"], passing=()):
            catalog = (
                Catalog(params["catalog"])
                if params["catalog"]
                else Catalog.for_store(params["store"], params["catalog_version"])
            )
        if catalog.store != params["store"]:
            module.fail_json(msg="catalog is for %s, not %s" % (catalog.store, params["store"]))
        heap_mb = params["heap_mb"]
        if heap_mb is None and params["store"] == "cassandra" and params["daemon"]:
            heap_mb = node_base.size_mb(params["daemon"].get("heap_size") or "512M")
        node = reconfigure_stores.node_for(params["store"], params, catalog)
        with errors.reported_as(
            ApplyError, "%s %s" % (params["store"], params["address"]), passing=reconfigure.ReconfigureError
        ):
            result = reconfigure.reconfigure(
                node,
                catalog,
                params["settings"],
                allow_restart=params["allow_restart"],
                force_restart=params["force_restart"],
                check_mode=module.check_mode,
                verify=params["verify"],
                rollback=params["rollback"],
                memory_mb=params["memory_mb"] or node_base.memory_mb(),
                heap_mb=heap_mb,
            )
    except TacticianError as exc:
        module.fail_json(msg=str(exc), **_public(exc.report(), module))
    finally:
        if node is not None:
            node.close()
    for warning in result.pop("warnings", []):
        module.warn(warning)
    module.exit_json(**_public(result, module))


def _public(result, module):
    result = dict(result)
    result.pop("warnings", None)
    with_diff(module, result)
    return result


if __name__ == "__main__":
    main()
