# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""What the node objects of every store share: the config file (edited in place, backed up, restored), the
tuned-state record, and stop/start through the operator's own commands.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from ansible_collections.tactician.nosql.plugins.module_utils.apply import configfile, guards
from ansible_collections.tactician.nosql.plugins.module_utils.stores import daemons
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import prometheus, resources

_FORMATS = {"cassandra": "yaml", "redis": "redis", "mongodb": "yaml"}


SERVICE_MANAGERS = ("auto", "systemd", "sysv")


def service_manager(wanted="auto"):
    """The service manager that runs this host's services: systemd when it is the running init (the directory
    /run/systemd/system exists), else the SysV scripts through `service`."""
    if wanted not in SERVICE_MANAGERS:
        raise ValueError("service_manager must be one of %s, not %r" % (", ".join(SERVICE_MANAGERS), wanted))
    if wanted != "auto":
        return wanted
    return "systemd" if os.path.isdir("/run/systemd/system") else "sysv"


def service_commands(name, manager="auto"):
    """(stop argv, start argv) of the service name under its manager: `systemctl stop|start name`, or
    `service name stop|start` (Debian's SysV scripts; start-stop-daemon starts no second server)."""
    if not name or "/" in name or name.startswith("-"):
        raise ValueError("service must be a service name such as redis-server or cassandra, not %r" % (name,))
    if service_manager(manager) == "systemd":
        return ["systemctl", "stop", name], ["systemctl", "start", name]
    return ["service", name, "stop"], ["service", name, "start"]


# What `systemctl is-active` prints: the states in which the unit's process may still be (or become) a server.
_SYSTEMD_ALIVE = ("active", "activating", "reloading", "deactivating", "refreshing")
_SYSTEMD_DEAD = ("inactive", "failed")


def status_command(name, manager="auto"):
    """The argv that tells whether the service runs: `systemctl is-active name` (its printed state), or
    `service name status` (its exit code, as LSB defines it)."""
    service_commands(name, manager)  # the same checks of the name
    if service_manager(manager) == "systemd":
        return ["systemctl", "is-active", name]
    return ["service", name, "status"]


def service_state(argv, timeout=30):
    """'running', 'stopped' or 'unknown' of a service, from its status command: a state systemctl prints
    (active, activating, ... / inactive, failed), else the exit code (LSB - 0 running; 1, 2, 3 not running, with a
    stale PID file, a stale lock file or none; anything else unknown)."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    words = (proc.stdout or "").split()
    word = words[-1] if words else ""
    if word in _SYSTEMD_ALIVE:
        return "running"
    if word in _SYSTEMD_DEAD:
        return "stopped"
    if proc.returncode == 0:
        return "running"
    return "stopped" if proc.returncode in (1, 2, 3) else "unknown"


class ExitWatch:
    """While a step waits for a node its service manager started: whether the node's process has died meanwhile.
    Its status command says "not running" in `polls` polls in a row (a dead process stays dead, while one poll
    may meet a start script between its PID file and its process); "unknown" never counts. Without a status
    command it watches nothing."""

    def __init__(self, argv, polls=3, state=service_state):
        self.argv = list(argv) if argv else None
        self.polls = max(1, int(polls))
        self.state = state
        self.seen = 0

    def check(self, name):
        """Raise RuntimeError naming the node when its process is gone."""
        if not self.argv:
            return
        now = self.state(self.argv)
        self.seen = self.seen + 1 if now == "stopped" else 0
        if self.seen >= self.polls:
            raise RuntimeError(
                "%s exited while coming back: its service manager says it is not running (%s, %d polls in a row)"
                % (name, " ".join(self.argv), self.seen)
            )


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


class BaseNode:
    """Shared parts: the config file and the external process commands."""

    store = None

    def __init__(self, params, catalog):
        self.params = params
        self.catalog = catalog
        self.config_file = params.get("config_file")
        self.name = params["address"]
        self.guard = guards.GuardPolicy.from_dict(params.get("guard"))
        self.signal_log = None

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
        prune_backups(self.config_file, keep=3)
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
            daemons.record_config_live(daemon["pid_file"], files, daemon)

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

    def exit_watch(self):
        """An ExitWatch on the node's status command (a node its service manager runs), else one that watches
        nothing."""
        return ExitWatch(self.params.get("status_command"))

    def downtime_warning(self, seconds):
        return None

    # What the roll watches besides this node (apply/guards.py) ---------------------------------
    def prometheus_signals(self, hosts):
        """The client signals of the nodes among hosts (addresses, or host:port) read from the Prometheus server of
        option guard_prometheus ({url, cluster}), combined for the guard: None when that option is not given, or
        while Prometheus does not answer (the guard then waits, and stops the roll after guard.max_wait_s)."""
        spec = self.params.get("guard_prometheus")
        if not spec:
            return None
        if getattr(self, "_prometheus_client", None) is None:
            self._prometheus_client = prometheus.client_from_url(spec["url"])
        wanted = set(hosts)
        try:
            found = prometheus.client_signals(self._prometheus_client, self.store, spec["cluster"])
        except prometheus.PrometheusError:
            return None
        mine = {node: value for node, value in found.items() if node in wanted or node.rsplit(":", 1)[0] in wanted}
        return dict(guards.combine(mine, self.guard.min_ops_per_s), via="prometheus")

    def check_before_stop(self):
        """Right before the node stops: the rest of the cluster is whole and the clients are served within the
        guard's thresholds; raises guards.ClusterNotReady (nothing touched). Stores without a cluster-wide view
        check nothing."""
        return {}

    def is_running(self):
        """Whether the node's process runs (a step that stops for another node leaves a running node alone)."""
        return True

    def cluster_state(self):
        """{node: state} of every node as last seen, for the report and the lock of a stopped roll."""
        return {}

    def close(self):
        pass


def prune_backups(config_file, keep=3):
    """Keep the newest `keep` - 1 backups of config_file (<file>.<timestamp>~); a new one is about to be made."""
    folder = os.path.dirname(os.path.abspath(config_file))
    prefix = os.path.basename(config_file) + "."
    backups = sorted(name for name in os.listdir(folder) if name.startswith(prefix) and name.endswith("~"))
    for name in backups[: max(0, len(backups) - (keep - 1))]:
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass


def dig(document, path):
    for part in path.split("."):
        if not isinstance(document, dict):
            return None
        document = document.get(part)
    return document
