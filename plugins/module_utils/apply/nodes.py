# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The node objects of the reconfiguration step machine, one per store.

Each one reads the node's live settings, applies live-changeable ones, writes the config file (keeping its
comments and order), stops and starts the node, and says when the cluster sees it back:
- Cassandra: system_views.settings; nodetool set*; drain before stop; back = UN as seen by every peer and
  no hints pending for it on any peer, within max_hint_window.
- Redis: CONFIG GET / CONFIG SET + CONFIG REWRITE; a master is failed over to an up-to-date replica before
  it stops; back = replica link up and every peer sees cluster_state ok.
- MongoDB: getParameter / setParameter; a primary steps down before it stops; back = the member answers
  hello as primary or secondary.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

from ansible_collections.tactician.nosql.plugins.module_utils.apply import config_base, configfile
from ansible_collections.tactician.nosql.plugins.module_utils.core import process
from ansible_collections.tactician.nosql.plugins.module_utils.stores import daemons
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import health as cassandra_cluster
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.server import run_nodetool
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import client as mongo
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import resources

_FORMATS = {"cassandra": "yaml", "redis": "redis", "mongodb": "yaml"}


def missing_libraries(store):
    modules = {"cassandra": cql, "redis": redis_adapter, "mongodb": mongo}
    return modules[store].missing_libraries() + config_base.missing_libraries()


def memory_mb():
    """MemTotal of this host in MiB (the default memory budget of a node)."""
    try:
        return resources.read_meminfo().get("MemTotal", 0) // (1024 * 1024) or None
    except OSError:
        return None


def size_mb(text):
    """'512M', '2G', '1024m' (JVM heap notation) -> MiB."""
    if text is None:
        return None
    text = str(text).strip().upper()
    factor = {"K": 1.0 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
    if text and text[-1] in factor:
        return int(float(text[:-1]) * factor[text[-1]])
    return int(text) // (1024 * 1024)


class _Node:
    """Shared parts: the config file and the external process commands."""

    store = None

    def __init__(self, params, catalog):
        self.params = params
        self.catalog = catalog
        self.config_file = params.get("config_file")
        self.name = params["address"]

    # The config file ---------------------------------------------------------------------------
    def _file_settings(self, wanted):
        return {self.catalog.config_key(name): self.catalog.config_text(name, value) for name, value in wanted.items()}

    def _equal(self):
        by_key = {self.catalog.config_key(name): name for name in self.catalog.names()}

        def equal(key, old, new):
            name = by_key.get(key)
            if name is None or old is None or new is None:
                return old == new
            try:
                return self.catalog.equal(name, self.catalog.normalize(name, old), self.catalog.normalize(name, new))
            except Exception:  # an unparsable old value differs
                return False

        return equal

    def file_changes(self, wanted):
        if not self.config_file:
            return {}
        text = configfile.read_text(self.config_file)
        if text is None:
            raise RuntimeError("config_file %s does not exist" % self.config_file)
        result = configfile.edit(text, _FORMATS[self.store], self._file_settings(wanted), equal=self._equal())
        return result.changes

    def write_config(self, wanted):
        if not self.config_file:
            return {}
        _prune_backups(self.config_file, keep=3)
        return configfile.edit_file(
            self.config_file,
            _FORMATS[self.store],
            self._file_settings(wanted),
            equal=self._equal(),
            create=False,
            backup=True,
        )

    def restore_config(self, backup):
        shutil.copy2(backup, self.config_file)

    def record_tuned(self, wanted):
        if self.config_file:
            configfile.write_tuned_state(
                self.config_file,
                {self.catalog.config_key(n): self.catalog.config_text(n, v) for n, v in wanted.items()},
            )

    def _mark_live(self):
        daemon = self.params.get("daemon") or {}
        if daemon.get("pid_file") and self.config_file:
            files = [self.config_file] + ([daemon["logback_file"]] if daemon.get("logback_file") else [])
            daemons.record_config_live(daemon["pid_file"], files)

    # Processes managed by someone else (systemd, a supervisor) ----------------------------------
    def _run(self, argv, what):
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RuntimeError("%s (%s) failed: %s" % (what, argv[0], exc)) from exc
        if proc.returncode != 0:
            raise RuntimeError(
                "%s (%s) exited %d: %s" % (what, argv[0], proc.returncode, (proc.stderr or proc.stdout).strip()[-300:])
            )

    def downtime_warning(self, seconds):
        return None

    def close(self):
        pass


class CassandraNode(_Node):
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
            daemons.cassandra_daemon(dict(daemon, state="stopped", force=force))
        else:
            if not force:
                self._nodetool(["drain"], timeout=600)
            self._run(self.params["stop_command"], "stop_command")

    def start(self):
        daemon = self.params.get("daemon")
        if daemon:
            daemons.cassandra_daemon(dict(daemon, state="started", restart_on_change=False))
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


def _prune_backups(config_file, keep=3):
    """Keep the newest `keep` - 1 backups of config_file (<file>.<timestamp>~); a new one is about to be made."""
    folder = os.path.dirname(os.path.abspath(config_file))
    prefix = os.path.basename(config_file) + "."
    backups = sorted(name for name in os.listdir(folder) if name.startswith(prefix) and name.endswith("~"))
    for name in backups[: max(0, len(backups) - (keep - 1))]:
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass


class RedisNode(_Node):
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
            daemons.redis_daemon(dict(daemon, state="stopped", **self._daemon_login()))
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
            daemons.redis_daemon(dict(daemon, state="started", restart_on_change=False, **self._daemon_login()))
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


class MongoNode(_Node):
    store = "mongodb"

    def __init__(self, params, catalog):
        super().__init__(params, catalog)
        self.conn_params = mongo.params_from_any(params, params["address"])
        self.name = "%s:%d" % (self.conn_params["login_host"], self.conn_params["login_port"])
        self.client_factory = params.get("client_factory") or mongo.connect

    def _admin(self):
        return self.client_factory(self.conn_params)

    def read_current(self, names):
        client = self._admin()
        try:
            current = {}
            for name in names:
                setting = self.catalog.setting_name(name)
                if not setting:
                    current[name] = None
                    continue
                if setting.startswith("serverStatus."):
                    value = _dig(client.admin.command("serverStatus"), setting[len("serverStatus.") :])
                else:
                    value = client.admin.command("getParameter", 1, **{setting: 1}).get(setting)
                current[name] = None if value is None else self.catalog.normalize(name, value)
            return current
        finally:
            client.close()

    def apply_live(self, name, value, state):
        parameters = self.catalog.live_action(name, value, state)["set_parameter"]
        client = self._admin()
        try:
            client.admin.command("setParameter", 1, **parameters)
        finally:
            client.close()
        return "setParameter %s" % ", ".join("%s=%s" % item for item in sorted(parameters.items()))

    def persist_live(self, wanted):
        if not self.config_file:
            return None
        written = self.write_config(wanted)
        return written if written.get("changed") else None

    def prepare_restart(self):
        if not self.params.get("stop_command") or not self.params.get("start_command"):
            raise RuntimeError("a restart of mongod needs stop_command and start_command (e.g. systemctl argv)")
        client = self._admin()
        try:
            hello = client.admin.command("hello")
            if hello.get("isWritablePrimary") and hello.get("setName"):
                client.admin.command("replSetStepDown", int(self.params.get("step_down_seconds") or 60))
                return ["step down"]
        except Exception as exc:
            if "not primary" not in str(exc).lower() and "connection" not in str(exc).lower():
                raise
        finally:
            client.close()
        return []

    def stop(self, force=False):
        self._run(self.params["stop_command"], "stop_command")

    def start(self):
        self._run(self.params["start_command"], "start_command")

    def wait_back(self):
        timeout = float(self.params.get("rejoin_timeout") or 600)
        started = time.monotonic()
        state = {}

        def back():
            client = None
            try:
                client = self._admin()
                hello = client.admin.command("hello")
                state.update(hello)
                if hello.get("setName"):
                    return bool(hello.get("isWritablePrimary") or hello.get("secondary"))
                return True
            except Exception:
                return False
            finally:
                if client is not None:
                    client.close()

        process.wait_until(back, timeout, 1.0, what="%s to answer as primary or secondary" % self.name)
        return dict(seconds=round(time.monotonic() - started, 3), secondary=bool(state.get("secondary")))


def _dig(document, path):
    for part in path.split("."):
        if not isinstance(document, dict):
            return None
        document = document.get(part)
    return document


NODES = {"cassandra": CassandraNode, "redis": RedisNode, "mongodb": MongoNode}


def node_for(store, params, catalog):
    return NODES[store](params, catalog)
