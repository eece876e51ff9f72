# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""One monitoring process (Prometheus, an exporter) kept started, stopped or restarted from its argument vector.

Plain Python, no Ansible: module exporter_daemon is a thin face over exporter_daemon() here. The process is
started detached by core/process.py (its own PID recorded, never a shell's), and a start returns only when
ready_url answers HTTP 200, or ready_tcp (host:port) accepts a connection (a server that speaks no HTTP: the
lab's FerretDB, role ferretdb_node). A running process whose config files, argument vector or environment changed
since it started is restarted, as the store daemons are (stores/daemons.py: digest of the files plus a start
signature). Secrets reach the process through its environment only, never its argument vector (which any user
of the machine can read in /proc).
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
import urllib.error
import urllib.parse
import urllib.request

from ansible_collections.tactician.nosql.plugins.module_utils.core import process
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import StoreError
from ansible_collections.tactician.nosql.plugins.module_utils.core.timing import Stopwatch
from ansible_collections.tactician.nosql.plugins.module_utils.stores.daemons import (
    STATES,
    daemon_result,
    digest_file,
    record_config_live,
    wanted_state,
)

__all__ = ["STATES", "MonitoringError", "check_params", "exporter_daemon", "http_ready", "tcp_address"]


class MonitoringError(StoreError, ValueError):
    """A monitoring process could not be brought to the wanted state, or its parameters are wrong."""


def _this_machine(host):
    """True for a loopback address, or an address of this machine (one a socket can bind)."""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if address.is_loopback:
        return True
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((host, 0))
        return True
    except OSError:
        return False


def check_params(params, check_mode=False):
    """Refuse bad parameters before anything runs; the message names the field. In check mode the config files
    may be missing still (a task before would write them)."""
    name = params.get("name")
    if not name or not str(name).strip():
        raise MonitoringError("name: give the process a name (it names it in messages and results)")
    argv = params.get("argv")
    if not argv or not isinstance(argv, (list, tuple)):
        raise MonitoringError("argv: give the program and its arguments as a non-empty list")
    if any(not isinstance(arg, str) or arg == "" for arg in argv):
        raise MonitoringError("argv: every item must be a non-empty string, got %r" % (list(argv),))
    if params["state"] != "stopped" and shutil.which(argv[0]) is None:
        raise MonitoringError("argv: %s is not an executable program (absolute path, or a name on PATH)" % argv[0])
    if not params.get("pid_file"):
        raise MonitoringError("pid_file: required")
    environment = params.get("environment") or {}
    if not isinstance(environment, dict):
        raise MonitoringError("environment: must be a dict of variable names to values")
    for key, value in environment.items():
        if not key or "=" in key or "\0" in key:
            raise MonitoringError("environment: %r is not a variable name" % key)
        if value is None or isinstance(value, (dict, list)):
            raise MonitoringError("environment: the value of %s must be a string" % key)
    url = params.get("ready_url")
    if url:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme != "http" or not parsed.hostname:
            raise MonitoringError("ready_url: %r is not an http:// URL" % url)
        if not _this_machine(parsed.hostname):
            raise MonitoringError(
                "ready_url: %r is not on this machine (a loopback address, or an IP address of its own)" % url
            )
    if params.get("ready_tcp"):
        if url:
            raise MonitoringError("ready_tcp: give ready_url or ready_tcp, not both")
        tcp_address(params["ready_tcp"])
    for field in ("start_timeout", "stop_timeout"):
        value = params.get(field)
        if value is not None and int(value) <= 0:
            raise MonitoringError("%s: must be a positive number of seconds, got %s" % (field, value))
    for path in params.get("config_files") or []:
        if params["state"] != "stopped" and not check_mode and not os.path.isfile(path):
            raise MonitoringError("config_files: %s does not exist" % path)


def tcp_address(value):
    """(host, port) of a ready_tcp "host:port" ("[v6]:port" for IPv6) on this machine; MonitoringError otherwise."""
    parsed = urllib.parse.urlsplit("//" + str(value))
    try:
        port = parsed.port
    except ValueError:
        port = None
    if not parsed.hostname or not port or parsed.path or parsed.query or parsed.username:
        raise MonitoringError("ready_tcp: %r is not host:port" % value)
    if not _this_machine(parsed.hostname):
        raise MonitoringError(
            "ready_tcp: %r is not on this machine (a loopback address, or an IP address of its own)" % value
        )
    return parsed.hostname, port


def _readiness(params, name):
    """The predicate a start waits for, and what it waits for in words (None: the process running is enough)."""
    url, tcp = params.get("ready_url"), params.get("ready_tcp")
    if url:
        return "ready_url", (lambda: http_ready(url)), "%s to answer 200 at %s" % (name, url)
    if tcp:
        host, port = tcp_address(tcp)
        return "ready_tcp", (lambda: process.port_open(host, port)), "%s to accept connections on %s" % (name, tcp)
    return None, None, "%s to run" % name


_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_ready(url, timeout=2.0):
    """True when an HTTP GET of url (no proxy) answers 200."""
    try:
        with _NO_PROXY.open(url, timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _start_params(params):
    """What restarts a running process when it changes: its files (by digest), its argv and its environment."""
    return dict(
        params,
        argv=list(params["argv"]),
        environment={str(k): str(v) for k, v in (params.get("environment") or {}).items()},
    )


def exporter_daemon(params, check_mode=False):
    """Bring one monitoring process to params["state"]; the module result (changed, pid, actions, timings)."""
    check_params(params, check_mode)
    params = _start_params(params)
    name, argv, pid_file = params["name"], params["argv"], params["pid_file"]
    files = list(params.get("config_files") or [])
    pid = process.running_pid(pid_file, argv[0])
    watch = Stopwatch()
    state = wanted_state(params, pid, files)
    if state == "started" and pid:
        return daemon_result(False, pid, [], watch)
    if state == "stopped" and not pid:
        if not check_mode:
            process.remove_pid_file(pid_file)
        return daemon_result(False, None, [], watch)
    if check_mode:
        planned = (["stop"] if pid else []) + (["start"] if state != "stopped" else [])
        return daemon_result(True, pid, planned, watch)
    actions = []
    if pid:
        with watch.step("stop"):
            process.terminate(pid, timeout=params.get("stop_timeout") or 30)
        process.remove_pid_file(pid_file)
        actions.append("stop")
        pid = None
    if state in ("started", "restarted"):
        log_file = params.get("log_file") or (pid_file + ".out")
        field, ready, what = _readiness(params, name)
        if field == "ready_tcp" and ready():
            # Another process holds the address: its answer would pass for ours while ours fails to listen.
            raise MonitoringError("ready_tcp: %s: %s already accepts connections" % (name, params["ready_tcp"]))
        with watch.step("start"):
            try:
                pid = process.spawn(argv, pid_file, log_file, env=params["environment"])
            except process.ProcessError as exc:
                raise MonitoringError("argv: %s: %s" % (name, exc)) from exc
            try:
                process.wait_until(
                    ready or (lambda: process.pid_alive(pid)),
                    params.get("start_timeout") or 60,
                    interval=0.2,
                    alive_pid=pid,
                    log_file=log_file,
                    what=what,
                )
            except process.ProcessError as exc:
                field = field if field and process.pid_alive(pid) else "argv"
                process.terminate(pid, timeout=10)
                process.remove_pid_file(pid_file)
                raise MonitoringError("%s: %s: %s" % (field, name, exc)) from exc
        record_config_live(pid_file, files, params)
        # The record holds a digest over the environment (secrets among it): readable by the owner only.
        os.chmod(digest_file(pid_file), 0o600)
        actions.append("start")
    return daemon_result(True, pid, actions, watch)
