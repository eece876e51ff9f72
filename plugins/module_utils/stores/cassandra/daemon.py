# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""One Cassandra node run from the Maven Central jars as a daemon: started, stopped (always drained first) or
restarted, and restarted when its config files changed since it started.
"""

from __future__ import annotations

import os

from ansible_collections.tactician.nosql.plugins.module_utils.core import cgroups, process
from ansible_collections.tactician.nosql.plugins.module_utils.core.timing import Stopwatch
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.server import (
    CassandraServerError,
    run_nodetool,
    server_argv,
)
from ansible_collections.tactician.nosql.plugins.module_utils.stores.daemons import (
    DaemonError,
    daemon_result,
    digest_file,
    record_config_live,
    wanted_state,
)


def cassandra_daemon(params, check_mode=False):
    marker = os.path.abspath(params["config_file"])
    pid = process.running_pid(params["pid_file"], marker)
    watch = Stopwatch()
    actions = []
    warnings = []
    state = wanted_state(params, pid, [params["config_file"], params["logback_file"]])
    cpus = process.parse_cpus(params.get("cpus"))
    limit = cgroups.parse_size(params.get("memory_limit"))
    group = memory_group(params) if limit else None
    if state == "started" and pid:
        # A running node is moved onto its CPUs and into its memory group live (every thread), no restart.
        if cpus and process.off_cpus(pid, cpus):
            if not check_mode:
                process.pin(pid, cpus)
            actions.append("pin to CPUs %s" % process.format_cpus(cpus))
        if group and (group.limit() != limit or pid not in group.pids()):
            if not check_mode:
                group.ensure(limit)
                group.join(pid)
            actions.append("memory limit %s" % cgroups.format_size(limit))
        return _result(bool(actions), pid, actions, watch, warnings, group)
    if state == "stopped" and not pid:
        process.remove_pid_file(params["pid_file"])
        if not check_mode:
            _remove_group(params, actions)
        return daemon_result(bool(actions), None, actions, watch)
    if check_mode:
        planned = (["drain", "stop"] if pid else []) + (["start"] if state != "stopped" else [])
        return daemon_result(True, pid, planned, watch)
    if pid:
        _stop_cassandra(params, pid, watch, actions, warnings)
        pid = None
    if state in ("started", "restarted"):
        if group:
            group.ensure(limit)
        elif limit is None:
            _remove_group(params, actions)
        pid = _start_cassandra(params, watch, actions, cpus, group)
    else:
        _remove_group(params, actions)
    return _result(True, pid, actions, watch, warnings, group)


def memory_group(params):
    """The node's memory control group (named by memory_group, else after its CQL address and port)."""
    name = params.get("memory_group") or "cassandra-%s-%s" % (params["rpc_address"], params["native_port"])
    return cgroups.MemoryGroup(name)


def _remove_group(params, actions):
    """Remove the node's memory group when one was left (the node stopped, or runs without a limit now)."""
    if cgroups.version() is None:
        return
    group = memory_group(params)
    if group.exists() and group.remove():
        actions.append("remove memory group")


def _result(changed, pid, actions, watch, warnings, group):
    result = daemon_result(changed, pid, actions, watch, warnings)
    if group is not None:
        result["memory"] = group.stats()
    return result


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


def _start_cassandra(params, watch, actions, cpus=None, group=None):
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
    # A caller's check run at every poll while the node starts (the roll watches the peers meanwhile); what it
    # raises ends the wait and leaves the new process running.
    while_starting = params.get("while_starting") or (lambda: None)

    def answering():
        while_starting()
        return process.port_open(params["rpc_address"], params["native_port"])

    with watch.step("start"):
        pid = process.spawn(
            argv, params["pid_file"], log_file, cwd=params["storage_dir"], cpus=cpus, memory_group=group
        )
        process.wait_until(
            answering,
            params.get("start_timeout") or 240,
            interval=1.0,
            alive_pid=pid,
            log_file=os.path.join(params["log_dir"], "system.log"),
            what="CQL on %s:%s" % (params["rpc_address"], params["native_port"]),
        )
    record_config_live(params["pid_file"], [params["config_file"], params["logback_file"]], params)
    actions.append("start")
    return pid
