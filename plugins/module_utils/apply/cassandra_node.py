# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""A Cassandra node for the step machine: system_views.settings; nodetool set*; drain before stop; back = UN as
seen by every peer and no hints pending for it on any peer, within max_hint_window.
"""

from __future__ import annotations

import time

from ansible_collections.tactician.nosql.plugins.module_utils.apply.node_base import BaseNode
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
            daemon_mod.cassandra_daemon(dict(daemon, state="started", restart_on_change=False))
        else:
            self._run(self.params["start_command"], "start_command")

    def _peer_nodes(self):
        me = dict(address=self.params["address"], jmx_port=self.params.get("jmx_port") or 7199, native_port=self.port)
        peers = [dict(p) for p in (self.params.get("peers") or []) if p.get("address") != me["address"]]
        return [me] + peers

    def wait_back(self):
        timeout = float(self.params.get("rejoin_timeout") or 600)
        started = time.monotonic()
        nodes = self._peer_nodes()
        health_params = dict(
            self._conn_params(),
            cassandra_home=self.params["cassandra_home"],
            java=self.params.get("java") or "java",
            jmx_user=self.params.get("jmx_user"),
            jmx_password=self.params.get("jmx_password"),
            expected_nodes=[n["address"] for n in nodes],
        )
        report = cassandra_cluster.wait_healthy(health_params, nodes, timeout, interval=2.0)
        if not report["healthy"]:
            raise RuntimeError(
                "not UN as seen by every peer after %ss: %s" % (report["waited"], "; ".join(report["problems"]))
            )
        hints = self._wait_hints(nodes[1:], max(10.0, timeout - (time.monotonic() - started)))
        return dict(un_after=report["waited"], hints_after=hints, seconds=round(time.monotonic() - started, 3))

    def _wait_hints(self, peers, timeout):
        """Seconds until no peer holds hints for this node (system_views.pending_hints)."""
        if not peers or self.host_id is None:
            return 0.0
        started = time.monotonic()
        pending = {}
        while True:
            pending = {}
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
                finally:
                    if cluster is not None:
                        cluster.shutdown()
            waited = time.monotonic() - started
            if not pending:
                return round(waited, 3)
            if waited > timeout:
                raise RuntimeError("hints for %s still pending after %ds: %s" % (self.name, timeout, pending))
            time.sleep(2.0)

    def downtime_warning(self, seconds):
        if self.max_hint_window and seconds > self.max_hint_window:
            return (
                "%s was down %.0f s, longer than max_hint_window (%.0f s): hints were dropped; run nodetool repair"
                % (self.name, seconds, self.max_hint_window)
            )
        return None
