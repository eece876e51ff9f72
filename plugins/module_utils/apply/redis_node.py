# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""A Redis node for the step machine: CONFIG GET / CONFIG SET + CONFIG REWRITE; a master is failed over to an
up-to-date replica before it stops; back = replica link up and every peer sees cluster_state ok.
"""

from __future__ import annotations

import time

from ansible_collections.tactician.nosql.plugins.module_utils.apply import configfile
from ansible_collections.tactician.nosql.plugins.module_utils.apply.node_base import BaseNode
from ansible_collections.tactician.nosql.plugins.module_utils.core import process
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import daemon as daemon_mod


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

    def prepare_restart(self):
        if not self.params.get("daemon") and not self.params.get("stop_command"):
            raise RuntimeError("a restart needs either daemon (the collection's runner) or stop_command/start_command")
        if self._role() != "master" or self.params.get("failover", "auto") == "never":
            return []
        return ["failover to %s" % self._failover()]

    def _replicas(self):
        conn = self._client()
        try:
            info = conn.info("replication")
        finally:
            conn.close()
        replicas = []
        for key, value in info.items():
            if key.startswith("slave") and isinstance(value, dict) and value.get("state") == "online":
                replicas.append(("%s:%s" % (value["ip"], value["port"]), int(value.get("offset", 0))))
        return info.get("master_repl_offset", 0), replicas

    def _failover(self):
        """CLUSTER FAILOVER on the most up-to-date online replica, with retries; waits for the swap."""
        timeout = float(self.params.get("failover_timeout") or 60)
        deadline = time.monotonic() + timeout
        attempt = 0
        last = None
        while time.monotonic() < deadline:
            attempt += 1
            _offset, replicas = self._replicas()
            if not replicas:
                last = "no online replica to fail over to"
            else:
                replica = max(replicas, key=lambda item: item[1])[0]
                try:
                    self._swap_with(replica)
                    return replica
                except (redis_adapter.RedisError, process.ProcessError) as exc:
                    last = str(exc)
            time.sleep(min(5.0, 0.5 * attempt))
        raise RuntimeError("CLUSTER FAILOVER of %s failed after %d attempts: %s" % (self.name, attempt, last))

    def _swap_with(self, replica):
        conn = self._client(replica)
        try:
            conn.execute_command("CLUSTER", "FAILOVER")
            process.wait_until(lambda: self._role() == "slave", 10, 0.1, what="%s to become a replica" % self.name)
            process.wait_until(lambda: self._role(conn) == "master", 10, 0.1, what="%s to become master" % replica)
        finally:
            conn.close()

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
        timeout = float(self.params.get("rejoin_timeout") or 600)
        nodes = [self.name] + [p for p in (self.params.get("peers") or []) if p != self.name]
        started = time.monotonic()
        report = redis_adapter.wait_healthy(self.conn_params, nodes, timeout, expected_nodes=None)
        if not report["healthy"]:
            raise RuntimeError("cluster not healthy after %ss: %s" % (report["waited"], "; ".join(report["problems"])))
        conn = self._client()
        try:
            repl = redis_adapter.replication_info(conn)
        finally:
            conn.close()
        return dict(role=repl["role"], link=repl["master_link_status"], seconds=round(time.monotonic() - started, 3))
