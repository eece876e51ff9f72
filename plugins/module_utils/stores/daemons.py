# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Desired-state logic of the server daemons (started, stopped, restarted) for lab and test nodes.

Cassandra is always drained before it is stopped. Each function returns the module result
(changed, pid, actions, timings) and touches nothing in check mode.
"""

from __future__ import annotations

import os

from ansible_collections.tactician.nosql.plugins.module_utils.core import process
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import StoreError
from ansible_collections.tactician.nosql.plugins.module_utils.core.files import config_digest
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import Stopwatch
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.server import (
    CassandraServerError,
    run_nodetool,
    server_argv,
)
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter

STATES = ["started", "stopped", "restarted"]


class DaemonError(StoreError):
    """A daemon could not be brought to the wanted state."""


def _result(changed, pid, actions, watch, warnings=None):
    return dict(changed=changed, pid=pid, actions=actions, timings=watch.steps, warnings=warnings or [])


def config_newer_than_process(pid_file, files):
    """True when one of files was modified after the process recorded in pid_file was started."""
    try:
        started = os.path.getmtime(pid_file)
    except OSError:
        return False
    return any(os.path.exists(path) and os.path.getmtime(path) > started for path in files if path)


def digest_file(pid_file):
    """Where the digest of the configuration the running process reflects is kept."""
    return pid_file + ".config-sha256"


def record_config_live(pid_file, files):
    """Record that the running process reflects files as they are now (after a start, or after settings
    were changed live and written to the file, e.g. CONFIG SET + CONFIG REWRITE)."""
    with open(digest_file(pid_file), "w") as handle:
        handle.write(config_digest([path for path in files if path]) + "\n")


def config_changed_since_start(pid_file, files):
    """True when the files differ from what the running process reflects: by digest when one was recorded,
    else by modification time."""
    try:
        with open(digest_file(pid_file)) as handle:
            recorded = handle.read().strip()
    except OSError:
        return config_newer_than_process(pid_file, files)
    return recorded != config_digest([path for path in files if path])


def _wanted_state(params, pid, files):
    state = params["state"]
    if (
        state == "started"
        and pid
        and params.get("restart_on_change")
        and config_changed_since_start(params["pid_file"], files)
    ):
        return "restarted"
    return state


def cassandra_daemon(params, check_mode=False):
    marker = os.path.abspath(params["config_file"])
    pid = process.running_pid(params["pid_file"], marker)
    watch = Stopwatch()
    actions = []
    warnings = []
    state = _wanted_state(params, pid, [params["config_file"], params["logback_file"]])
    if state == "started" and pid:
        return _result(False, pid, actions, watch)
    if state == "stopped" and not pid:
        process.remove_pid_file(params["pid_file"])
        return _result(False, None, actions, watch)
    if check_mode:
        planned = (["drain", "stop"] if pid else []) + (["start"] if state != "stopped" else [])
        return _result(True, pid, planned, watch)
    if pid:
        _stop_cassandra(params, pid, watch, actions, warnings)
        pid = None
    if state in ("started", "restarted"):
        pid = _start_cassandra(params, watch, actions)
    return _result(True, pid, actions, watch, warnings)


def _stop_cassandra(params, pid, watch, actions, warnings):
    if params.get("drain", True):
        try:
            with watch.step("drain"):
                run_nodetool(
                    params["cassandra_home"],
                    params.get("jmx_host") or "127.0.0.1",
                    params["jmx_port"],
                    ["drain"],
                    java=params.get("java") or "java",
                    jmx_user=params.get("jmx_user"),
                    jmx_password=params.get("jmx_password"),
                    timeout=params.get("stop_timeout") or 90,
                )
            actions.append("drain")
        except CassandraServerError as exc:
            if not params.get("force"):
                raise DaemonError("drain failed, node left running (set force to stop it anyway): %s" % exc) from exc
            warnings.append("drain failed, stopping anyway (force): %s" % exc)
    with watch.step("stop"):
        how = process.terminate(pid, timeout=params.get("stop_timeout") or 90)
    actions.append("stop (%s)" % how)
    process.remove_pid_file(params["pid_file"])
    process.remove_pid_file(digest_file(params["pid_file"]))


def _start_cassandra(params, watch, actions):
    for key in ("storage_dir", "log_dir"):
        os.makedirs(params[key], exist_ok=True)
    argv = server_argv(
        params["cassandra_home"],
        params["config_file"],
        params["storage_dir"],
        params["log_dir"],
        params["logback_file"],
        params["jmx_port"],
        heap_size=params.get("heap_size") or "512M",
        java=params.get("java") or "java",
        extra_options=params.get("jvm_options") or [],
        fast_start=params.get("fast_start", True),
    )
    log_file = os.path.join(params["log_dir"], "stdout.log")
    with watch.step("start"):
        pid = process.spawn(argv, params["pid_file"], log_file, cwd=params["storage_dir"])
        process.wait_until(
            lambda: process.port_open(params["rpc_address"], params["native_port"]),
            params.get("start_timeout") or 240,
            interval=1.0,
            alive_pid=pid,
            log_file=os.path.join(params["log_dir"], "system.log"),
            what="CQL on %s:%s" % (params["rpc_address"], params["native_port"]),
        )
    record_config_live(params["pid_file"], [params["config_file"], params["logback_file"]])
    actions.append("start")
    return pid


def redis_daemon(params, check_mode=False):
    host = params.get("login_host") or "127.0.0.1"
    port = int(params.get("login_port") or 6379)
    marker = "%s:%d" % (host, port)
    pid = process.running_pid(params["pid_file"], marker)
    watch = Stopwatch()
    actions = []
    state = _wanted_state(params, pid, [params["config_file"]])
    if state == "started" and pid:
        return _result(False, pid, actions, watch)
    if state == "stopped" and not pid:
        process.remove_pid_file(params["pid_file"])
        return _result(False, None, actions, watch)
    if check_mode:
        planned = (["stop"] if pid else []) + (["start"] if state != "stopped" else [])
        return _result(True, pid, planned, watch)
    if pid:
        with watch.step("stop"):
            try:
                redis_adapter.shutdown(params, host, port, save=params.get("save_on_stop", True))
            except redis_adapter.RedisError:
                pass
            if not process.wait_exit(pid, params.get("stop_timeout") or 30):
                process.terminate(pid, timeout=10)
        actions.append("stop")
        process.remove_pid_file(params["pid_file"])
        pid = None
    if state in ("started", "restarted"):
        log_file = params.get("log_file") or (params["pid_file"] + ".out")
        argv = [params.get("redis_server") or "redis-server", params["config_file"], "--daemonize", "no"]
        with watch.step("start"):
            pid = process.spawn(argv, params["pid_file"], log_file, cwd=os.path.dirname(params["config_file"]))
            conn = redis_adapter.client(params, host, port, retries=False)
            try:
                process.wait_until(
                    lambda: redis_adapter.ping(conn),
                    params.get("start_timeout") or 60,
                    interval=0.1,
                    alive_pid=pid,
                    log_file=log_file,
                    what="Redis on %s" % marker,
                )
            finally:
                conn.close()
        record_config_live(params["pid_file"], [params["config_file"]])
        actions.append("start")
    return _result(True, pid, actions, watch)
