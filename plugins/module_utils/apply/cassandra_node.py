# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""A Cassandra node for the step machine: system_views.settings; nodetool set*; drain before stop; back = UN as
seen by every peer and no hints pending for it on any peer, within max_hint_window.
"""

from __future__ import annotations

import time

from ansible_collections.tactician.nosql.plugins.module_utils.apply import guards
from ansible_collections.tactician.nosql.plugins.module_utils.apply.node_base import BaseNode
from ansible_collections.tactician.nosql.plugins.module_utils.core import process
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import daemon as daemon_mod
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import health as cassandra_cluster
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.server import run_nodetool


class CassandraNode(BaseNode):
    store = "cassandra"

    def __init__(self, params, catalog):
        super().__init__(params, catalog)
        self.port = int(params.get("port") or 9042)
        self.name = "%s:%d" % (params["address"], self.port)
        self.cluster = None
        self.session = None
        self.max_hint_window = None
        self.host_id = None

    def _conn_params(self, port=None):
        return cql.params_from_any(self.params, port or self.port)

    def _session(self):
        if self.session is None:
            self.cluster, self.session = cql.connect(
                self._conn_params(), hosts=[self.params["address"]], only_these_hosts=True
            )
        return self.session

    def close(self):
        if self.cluster is not None:
            self.cluster.shutdown()
        self.cluster = self.session = None

    def _settings_rows(self, names):
        # The virtual table is small (some 600 rows) and takes no IN on its key: read it whole.
        wanted = set(names)
        rows = self._session().execute("SELECT name, value FROM system_views.settings")
        return {row.name: row.value for row in rows if row.name in wanted}

    def read_current(self, names):
        names = list(names)
        by_setting = {}
        from_tables = {}
        for name in names:
            source = self.catalog.read_from(name)
            if source and source.get("source") == "system_views.caches":
                from_tables[name] = source
            elif self.catalog.setting_name(name):
                by_setting[self.catalog.setting_name(name)] = name
        raw = self._settings_rows(list(by_setting) + ["max_hint_window"])
        if self.max_hint_window is None and raw.get("max_hint_window"):
            self.max_hint_window = self.catalog.normalize("max_hint_window", raw["max_hint_window"]) / 1000.0
        current = dict.fromkeys(names)
        for setting, name in by_setting.items():
            value = raw.get(setting)
            current[name] = None if value in (None, "null") else self.catalog.normalize(name, value)
        if from_tables:
            caches = {row.name: row for row in self._session().execute("SELECT * FROM system_views.caches")}
            for name, source in from_tables.items():
                row = caches.get(source["key"])
                value = getattr(row, source["field"], None) if row is not None else None
                current[name] = None if value is None else self.catalog.normalize(name, value, unit=source.get("unit"))
        if self.host_id is None:
            self.host_id = self._session().execute("SELECT host_id FROM system.local").one().host_id
        return current

    def _nodetool(self, args, timeout=120):
        return run_nodetool(
            self.params["cassandra_home"],
            self.params.get("jmx_host") or "127.0.0.1",
            self.params.get("jmx_port") or 7199,
            args,
            java=self.params.get("java") or "java",
            jmx_user=self.params.get("jmx_user"),
            jmx_password=self.params.get("jmx_password"),
            timeout=timeout,
        )

    def apply_live(self, name, value, state):
        action = self.catalog.live_action(name, value, state)
        argv = [str(arg) for arg in action["nodetool"]]
        self._nodetool(argv)
        return "nodetool " + " ".join(argv)

    def persist_live(self, wanted):
        if not self.config_file:
            return None
        written = self.write_config(wanted)
        self._mark_live()
        return written if written.get("changed") else None

    def prepare_restart(self):
        if not self.params.get("daemon") and not self.params.get("stop_command"):
            raise RuntimeError("a restart needs either daemon (the collection's runner) or stop_command/start_command")
        self.close()
        return []

    def stop(self, force=False):
        self.close()
        daemon = self.params.get("daemon")
        if daemon:
            daemon_mod.cassandra_daemon(dict(daemon, state="stopped", force=force))
        else:
            if not force:
                self._nodetool(["drain"], timeout=600)
            self._run(self.params["stop_command"], "stop_command")

    def start(self):
        daemon = self.params.get("daemon")
        if daemon:
            try:
                daemon_mod.cassandra_daemon(
                    dict(daemon, state="started", restart_on_change=False, while_starting=self._peer_ports_watch())
                )
            except guards.PeerDownError:
                self._mark_live()  # the process runs on the file just written
                raise
        else:
            self._run(self.params["start_command"], "start_command")

    def _peer_ports_watch(self):
        """A check for the start's polls: a peer whose CQL and JMX ports both refuse connections (its process is
        gone) in guard.peer_down_polls polls in a row (2 s apart) raises guards.PeerDownError."""
        peers = self._peer_nodes()[1:]
        watch = guards.PeerWatch(self.guard.peer_down_polls)
        last = [None]

        def check():
            if not peers or not guards.time_to_poll(last[0], 2.0):
                return
            last[0] = time.monotonic()
            down = {}
            for peer in peers:
                native = peer.get("native_port") or self.port
                if process.port_open(peer["address"], native):
                    continue
                if peer.get("jmx_local"):  # its JMX answers on its own host only: CQL is all there is to try
                    down[peer["address"]] = "CQL (%s:%s) accepts no connections" % (peer["address"], native)
                    continue
                jmx_host, jmx_port = peer.get("jmx_host") or "127.0.0.1", peer.get("jmx_port") or 7199
                if not process.port_open(jmx_host, jmx_port):
                    down[peer["address"]] = "neither CQL (%s:%s) nor JMX (%s:%s) accepts connections" % (
                        peer["address"],
                        native,
                        jmx_host,
                        jmx_port,
                    )
            confirmed = watch.update(down)
            if confirmed:
                raise guards.PeerDownError(confirmed, "while %s was starting" % self.name)

        return check

    def _peer_nodes(self):
        me = dict(address=self.params["address"], jmx_port=self.params.get("jmx_port") or 7199, native_port=self.port)
        if self.params.get("jmx_host"):
            me["jmx_host"] = self.params["jmx_host"]
        # The other nodes of this node's batch may be down all through its step (R = RF - CL counts them): they are
        # neither checked before the stop nor watched while the node is away; every node outside the batch is.
        skip = {me["address"]} | set(self.params.get("batch") or [])
        peers = [dict(p) for p in (self.params.get("peers") or []) if p.get("address") not in skip]
        return [me] + peers

    def _health_params(self, nodes):
        return dict(
            self._conn_params(),
            cassandra_home=self.params["cassandra_home"],
            java=self.params.get("java") or "java",
            jmx_user=self.params.get("jmx_user"),
            jmx_password=self.params.get("jmx_password"),
            expected_nodes=[n["address"] for n in nodes],
            here=self.params["address"],  # this node's JMX is asked here; a peer's local-only JMX is not
        )

    def _signals(self, params, nodes):
        if self.params.get("guard_prometheus"):
            return self.prometheus_signals([node["address"] for node in nodes])
        return guards.combine(cassandra_cluster.client_signals(params, nodes), self.guard.min_ops_per_s)

    def check_before_stop(self):
        """Right before the stop: every node up as every node sees it (UN, CQL answering), no hints pending on any
        node (waited for up to guard.max_wait_s), the client-visible signals within the thresholds (waited for as
        long). Raises guards.ClusterNotReady, naming what is wrong; touches nothing."""
        nodes = self._peer_nodes()
        params = self._health_params(nodes)
        views = cassandra_cluster.node_views(params, nodes)
        self.last_views = views
        problems = cassandra_cluster.problems_of(views, params["expected_nodes"])
        if problems:
            raise guards.ClusterNotReady(
                "before stopping %s: the cluster is not whole: %s" % (self.name, "; ".join(problems)),
                dict(views=views),
            )
        hints = self._wait_no_hints(params, nodes)
        clients = guards.wait_calm(lambda: self._signals(params, nodes), self.guard, "stopping %s" % self.name)
        return dict(nodes="every node UN in every view", hints_after=hints, clients=clients)

    def _wait_no_hints(self, params, nodes):
        """Seconds until no node holds hints for any other (a replica behind would be left alone by the stop)."""
        started = time.monotonic()
        while True:
            held, errors = cassandra_cluster.pending_hints(params, nodes)
            waited = time.monotonic() - started
            if not held and not errors:
                return round(waited, 3)
            if waited >= self.guard.max_wait_s:
                found = [
                    "%s holds %s"
                    % (holder, ", ".join("%d hint files for %s" % (n, t) for t, n in sorted(targets.items())))
                    for holder, targets in sorted(held.items())
                ]
                found += ["%s cannot be asked: %s" % item for item in sorted(errors.items())]
                raise guards.ClusterNotReady(
                    "before stopping %s: hints still pending after %.0f s (guard.max_wait_s): %s"
                    % (self.name, waited, "; ".join(found)),
                    dict(hints=held, errors=errors),
                )
            time.sleep(min(5.0, self.guard.interval_s))

    def wait_back(self):
        """Until every node sees this one UN and no peer holds hints for it. A peer seen down in
        guard.peer_down_polls polls in a row ends the wait at once (guards.PeerDownError), and so does this node's
        process found gone by its service manager (BaseNode.exit_watch: the step rolls back at once instead of
        waiting out rejoin_timeout); the client signals the live peers report meanwhile are kept for the report
        (self.signal_log)."""
        timeout = float(self.params.get("rejoin_timeout") or 600)
        started = time.monotonic()
        nodes = self._peer_nodes()
        params = self._health_params(nodes)
        me = nodes[0]["address"]
        watch = guards.PeerWatch(self.guard.peer_down_polls)
        exited = self.exit_watch()
        self.signal_log = log = guards.SignalLog(self.guard)
        sampled = None
        while True:
            exited.check(self.name)
            views = cassandra_cluster.node_views(params, nodes)
            self.last_views = views
            confirmed = watch.update(cassandra_cluster.down_peers(views, me))
            if confirmed:
                raise guards.PeerDownError(confirmed, "while %s was coming back" % self.name)
            problems = cassandra_cluster.problems_of(views, params["expected_nodes"])
            waited = time.monotonic() - started
            if not problems:
                break
            if waited >= timeout:
                raise RuntimeError("not UN as seen by every peer after %.0fs: %s" % (waited, "; ".join(problems)))
            if len(nodes) > 1 and guards.time_to_poll(sampled, self.guard.interval_s):
                sampled = time.monotonic()
                log.add(self._signals(params, nodes[1:]))
            time.sleep(2.0)
        un_after = round(waited, 3)
        hints = self._wait_hints(nodes[1:], max(10.0, timeout - (time.monotonic() - started)), watch)
        return dict(un_after=un_after, hints_after=hints, seconds=round(time.monotonic() - started, 3))

    def _wait_hints(self, peers, timeout, watch=None):
        """Seconds until no peer holds hints for this node (system_views.pending_hints). A peer that cannot be
        asked in watch's polls in a row is down (guards.PeerDownError)."""
        if not peers or self.host_id is None:
            return 0.0
        started = time.monotonic()
        pending = {}
        while True:
            pending, unreachable = {}, {}
            for peer in peers:
                cluster = None
                try:
                    cluster, session = cql.connect(
                        self._conn_params(port=peer.get("native_port")), hosts=[peer["address"]], only_these_hosts=True
                    )
                    rows = session.execute("SELECT * FROM system_views.pending_hints")
                    files = sum(int(getattr(r, "files", 0) or 0) for r in rows if r.host_id == self.host_id)
                    if files:
                        pending[peer["address"]] = files
                except Exception as exc:  # a peer that cannot answer counts as pending
                    pending[peer["address"]] = str(exc)
                    unreachable[peer["address"]] = "CQL not answering (%s)" % str(exc).splitlines()[0][:200]
                finally:
                    if cluster is not None:
                        cluster.shutdown()
            if watch is not None:
                confirmed = watch.update(unreachable)
                if confirmed:
                    raise guards.PeerDownError(confirmed, "while its hints for %s were delivered" % self.name)
            waited = time.monotonic() - started
            if not pending:
                return round(waited, 3)
            if waited > timeout:
                raise RuntimeError("hints for %s still pending after %ds: %s" % (self.name, timeout, pending))
            time.sleep(2.0)

    def is_running(self):
        """Whether the node's process runs (its PID, with the collection's runner; else its JMX port answers)."""
        daemon = self.params.get("daemon")
        if daemon and daemon.get("pid_file"):
            return process.running_pid(daemon["pid_file"]) is not None
        return process.port_open(self.params.get("jmx_host") or "127.0.0.1", self.params.get("jmx_port") or 7199)

    def cluster_state(self):
        """{address: state} of every node as the cluster sees it now (cassandra_cluster.node_states); the last
        poll's when the nodes cannot be asked."""
        nodes = self._peer_nodes()
        try:
            self.last_views = cassandra_cluster.node_views(self._health_params(nodes), nodes)
        except Exception:  # a report must not hide the failure it reports
            pass
        return cassandra_cluster.node_states(getattr(self, "last_views", None) or {})

    def downtime_warning(self, seconds):
        if self.max_hint_window and seconds > self.max_hint_window:
            return (
                "%s was down %.0f s, longer than max_hint_window (%.0f s): hints were dropped; run nodetool repair"
                % (self.name, seconds, self.max_hint_window)
            )
        return None
