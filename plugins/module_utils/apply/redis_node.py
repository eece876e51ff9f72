# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""A Redis node for the step machine: CONFIG GET / CONFIG SET + CONFIG REWRITE; before a stop every node must
answer with cluster_state ok and every replica link up; a master is failed over to a replica in sync before it
stops (none in sync, or the replica lost during the failover: the roll stops); back = replica link up and every
peer sees cluster_state ok, a peer unreachable meanwhile stopping the step at once.
"""

from __future__ import annotations

import time

from ansible_collections.tactician.nosql.plugins.module_utils.apply import configfile, guards
from ansible_collections.tactician.nosql.plugins.module_utils.apply.node_base import BaseNode
from ansible_collections.tactician.nosql.plugins.module_utils.core import process
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import daemon as daemon_mod

REPLICA_LAG_S = 2
"""A replica is in sync when its master sees it online and its last acknowledgement is at most this old (replicas
acknowledge every second)."""


class RedisNode(BaseNode):
    store = "redis"

    def __init__(self, params, catalog):
        super().__init__(params, catalog)
        self.host, self.port = redis_adapter.split_node(params["address"])
        self.name = "%s:%d" % (self.host, self.port)
        self.conn_params = redis_adapter.params_from_any(params)

    def _client(self, address=None):
        host, port = redis_adapter.split_node(address) if address else (self.host, self.port)
        return redis_adapter.client(self.conn_params, host, port, retries=False)

    def read_current(self, names):
        conn = self._client()
        try:
            current = {}
            for name in names:
                setting = self.catalog.setting_name(name)
                if not setting:
                    current[name] = None
                    continue
                reply = conn.config_get(setting)
                value = reply.get(setting)
                current[name] = None if value is None else self.catalog.normalize(name, value)
            return current
        finally:
            conn.close()

    def apply_live(self, name, value, state):
        directive, text = self.catalog.live_action(name, value, state)["config_set"]
        conn = self._client()
        try:
            conn.config_set(directive, text)
        finally:
            conn.close()
        return "CONFIG SET %s %s" % (directive, text)

    def persist_live(self, wanted):
        """CONFIG REWRITE: Redis writes its running values into the file it started from, comments kept."""
        before = configfile.read_text(self.config_file) if self.config_file else None
        conn = self._client()
        try:
            conn.config_rewrite()
        finally:
            conn.close()
        self._drop_included_directives()
        self._mark_live()
        after = configfile.read_text(self.config_file) if self.config_file else None
        return dict(changed=before != after, backup_file=None)

    def _drop_included_directives(self):
        """CONFIG REWRITE copies what include files set (masteruser, masterauth) into the main file; take those
        lines out again so that credentials stay in their own file only."""
        if not self.config_file:
            return
        text = configfile.read_text(self.config_file)
        includes = configfile.current_values(text, "redis").get("include") or []
        if isinstance(includes, str):
            includes = [includes]
        included = set()
        for path in includes:
            other = configfile.read_text(path)
            if other:
                included.update(configfile.current_values(other, "redis"))
        included.discard("include")
        present = [key for key in included if key in configfile.current_values(text, "redis")]
        if present:
            configfile.edit_file(self.config_file, "redis", {}, remove=present, create=False)

    def _role(self, conn=None):
        own = conn is None
        conn = conn or self._client()
        try:
            return redis_adapter.replication_info(conn)["role"]
        finally:
            if own:
                conn.close()

    def _all_nodes(self):
        return [self.name] + [p for p in (self.params.get("peers") or []) if p != self.name]

    def check_before_stop(self):
        """Right before the stop (and before any failover): every node answers with cluster_state ok and every
        replica link up, and the client signals are within the guard's thresholds (waited for up to
        guard.max_wait_s). Raises guards.ClusterNotReady naming what is wrong; touches nothing."""
        nodes = self._all_nodes()
        views = redis_adapter.cluster_views(self.conn_params, nodes)
        self.last_views = views
        problems = redis_adapter.problems_of(views)
        if problems:
            raise guards.ClusterNotReady(
                "before stopping %s: the cluster is not whole: %s" % (self.name, "; ".join(problems)), dict(views=views)
            )
        before, conns = {}, {}

        def read():
            if self.params.get("guard_prometheus"):
                return self.prometheus_signals(nodes)
            now, per_node = {}, {}
            for address in nodes:
                try:
                    # One connection per node for the whole wait: a new one per read would be traffic of its own.
                    conn = conns.get(address) or conns.setdefault(address, self._client(address))
                    now[address] = redis_adapter.client_counters(conn)
                except redis_adapter.RedisError as exc:
                    per_node[address] = dict(error=str(exc))
                    conns.pop(address, None)
            known = bool(before)
            for address, counters in now.items():
                between = redis_adapter.signals_between(before[address], counters) if address in before else None
                per_node[address] = between if between is not None else dict(error="no interval yet")
            before.clear()
            before.update(now)
            return guards.combine(per_node, self.guard.min_ops_per_s) if known else None

        try:
            clients = guards.wait_calm(read, self.guard, "stopping %s" % self.name)
        finally:
            for conn in conns.values():
                conn.close()
        return dict(nodes="every node cluster_state ok, every replica link up", clients=clients)

    def prepare_restart(self):
        if not self.params.get("daemon") and not self.params.get("stop_command"):
            raise RuntimeError("a restart needs either daemon (the collection's runner) or stop_command/start_command")
        if self._role() != "master" or self.params.get("failover", "auto") == "never":
            return []
        return ["failover to %s" % self._failover()]

    def _replicas(self):
        """[(address, offset, in_sync, what the master says of it)] of the master's replicas."""
        conn = self._client()
        try:
            info = conn.info("replication")
        finally:
            conn.close()
        replicas = []
        for key, value in info.items():
            if key.startswith("slave") and isinstance(value, dict) and "ip" in value:
                state, lag = value.get("state"), int(value.get("lag", 0) or 0)
                in_sync = state == "online" and lag <= REPLICA_LAG_S
                replicas.append(
                    (
                        "%s:%s" % (value["ip"], value["port"]),
                        int(value.get("offset", 0)),
                        in_sync,
                        "state %s, last acknowledgement %d s ago" % (state, lag),
                    )
                )
        return replicas

    def _failover(self):
        """CLUSTER FAILOVER on the most up-to-date replica in sync, with retries; waits for the swap. No replica in
        sync, or the replica lost during the failover: guards.ClusterNotReady (the master is not stopped)."""
        timeout = float(self.params.get("failover_timeout") or 60)
        deadline = time.monotonic() + timeout
        attempt = 0
        last = None
        while time.monotonic() < deadline:
            attempt += 1
            replicas = self._replicas()
            ready = [item for item in replicas if item[2]]
            if not ready:
                last = "no replica in sync to fail over to (%s)" % (
                    "; ".join("%s: %s" % (item[0], item[3]) for item in replicas) or "it has no replica"
                )
            else:
                replica = max(ready, key=lambda item: item[1])[0]
                try:
                    self._swap_with(replica)
                    return replica
                except (redis_adapter.RedisError, process.ProcessError) as exc:
                    if not self._answers(replica):
                        self.last_views = redis_adapter.cluster_views(self.conn_params, self._all_nodes())
                        raise guards.ClusterNotReady(
                            "replica %s was lost during the failover of %s (%s): the roll stops; %s is %s"
                            % (replica, self.name, str(exc).splitlines()[0][:200], self.name, self._role_text()),
                            kind="failover",
                        ) from exc
                    last = str(exc)
            time.sleep(min(5.0, 0.5 * attempt))
        raise guards.ClusterNotReady(
            "master %s was not failed over after %d attempts in %.0f s: %s" % (self.name, attempt, timeout, last),
            kind="failover",
        )

    def _swap_with(self, replica):
        conn = self._client(replica)
        try:
            conn.execute_command("CLUSTER", "FAILOVER")
            process.wait_until(lambda: self._role() == "slave", 10, 0.1, what="%s to become a replica" % self.name)
            process.wait_until(lambda: self._role(conn) == "master", 10, 0.1, what="%s to become master" % replica)
        finally:
            conn.close()

    def _answers(self, address):
        try:
            conn = self._client(address)
            try:
                return bool(conn.ping())
            finally:
                conn.close()
        except redis_adapter.RedisError:
            return False

    def _role_text(self):
        try:
            return "still a master" if self._role() == "master" else "now a replica"
        except redis_adapter.RedisError as exc:
            return "not answering (%s)" % exc

    def stop(self, force=False):
        daemon = self.params.get("daemon")
        if daemon:
            daemon_mod.redis_daemon(dict(daemon, state="stopped", **self._daemon_login()))
        else:
            self._run(self.params["stop_command"], "stop_command")

    def _daemon_login(self):
        return dict(
            login_host=self.host,
            login_port=self.port,
            login_user=self.conn_params["login_user"],
            login_password=self.conn_params["login_password"],
            tls=self.conn_params["tls"],
            ca_certs=self.conn_params["ca_certs"],
        )

    def start(self):
        daemon = self.params.get("daemon")
        if daemon:
            daemon_mod.redis_daemon(dict(daemon, state="started", restart_on_change=False, **self._daemon_login()))
        else:
            self._run(self.params["start_command"], "start_command")

    def wait_back(self):
        """Until every node answers with cluster_state ok and this node's replica link is up. A peer unreachable in
        guard.peer_down_polls polls in a row ends the wait at once (guards.PeerDownError), and so does this node's
        process found gone by its service manager (BaseNode.exit_watch)."""
        timeout = float(self.params.get("rejoin_timeout") or 600)
        nodes = self._all_nodes()
        watch = guards.PeerWatch(self.guard.peer_down_polls)
        exited = self.exit_watch()
        started = time.monotonic()
        while True:
            exited.check(self.name)
            views = redis_adapter.cluster_views(self.conn_params, nodes)
            self.last_views = views
            confirmed = watch.update(
                {a: "unreachable: %s" % v["error"] for a, v in views.items() if a != self.name and "error" in v}
            )
            if confirmed:
                raise guards.PeerDownError(confirmed, "while %s was coming back" % self.name)
            problems = redis_adapter.problems_of(views)
            waited = time.monotonic() - started
            if not problems:
                break
            if waited >= timeout:
                raise RuntimeError("cluster not healthy after %.0fs: %s" % (waited, "; ".join(problems)))
            time.sleep(1.0)
        conn = self._client()
        try:
            repl = redis_adapter.replication_info(conn)
        finally:
            conn.close()
        return dict(role=repl["role"], link=repl["master_link_status"], seconds=round(time.monotonic() - started, 3))

    def is_running(self):
        daemon = self.params.get("daemon")
        if daemon and daemon.get("pid_file"):
            return process.running_pid(daemon["pid_file"]) is not None
        return self._answers(self.name)

    def cluster_state(self):
        """{address: state} of every node now: its role and cluster_state, or why it did not answer."""
        try:
            self.last_views = redis_adapter.cluster_views(self.conn_params, self._all_nodes())
        except Exception:  # a report must not hide the failure it reports
            pass
        states = {}
        for address, view in (getattr(self, "last_views", None) or {}).items():
            if "error" in view:
                states[address] = "unreachable: %s" % view["error"]
            else:
                problems = redis_adapter.view_problems(address, view)
                role = "replica" if view.get("role") == "slave" else "master"
                states[address] = "%s, cluster_state %s%s" % (
                    role,
                    view.get("cluster_state"),
                    "" if not problems else " (%s)" % "; ".join(p.split(": ", 1)[-1] for p in problems),
                )
        return states
