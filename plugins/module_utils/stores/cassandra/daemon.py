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

# Where an installed jemalloc is looked for (jemalloc: auto), the linker's usual library folders; the versioned
# names too, unlike Cassandra's bin/cassandra, whose pattern (libjemalloc.so, libjemalloc.so.1) misses the only
# file Debian's libjemalloc2 installs (libjemalloc.so.2).
JEMALLOC_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib64",
    "/lib",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
)
JEMALLOC_NAMES = ("libjemalloc.so", "libjemalloc.so.2", "libjemalloc.so.1")


def jemalloc_library(value, dirs=None):
    """The jemalloc library the node preloads, or None (glibc's malloc): value off (or unset) for none, auto for the
    first installed one in dirs (none found: None), or the library's path, which must exist."""
    if value in (None, "", "off", False):
        return None
    if value == "auto":
        for folder in JEMALLOC_DIRS if dirs is None else dirs:
            for name in JEMALLOC_NAMES:
                path = os.path.join(folder, name)
                if os.path.isfile(path):
                    return path
        return None
    if not isinstance(value, str) or not os.path.isabs(value) or not os.path.isfile(value):
        raise DaemonError(
            "jemalloc: %r is not allowed; choose off, auto (an installed libjemalloc, as Cassandra's bin/cassandra "
            "preloads) or the absolute path of a libjemalloc.so file that exists" % (value,)
        )
    return value


def cassandra_daemon(params, check_mode=False):
    library = jemalloc_library(params.get("jemalloc"))
    # The preload is part of the start parameters: a node started with another allocator is restarted by
    # restart_on_change, as one with another heap is.
    params = dict(params, environment={"LD_PRELOAD": library} if library else None)
    marker = os.path.abspath(params["config_file"])
    pid = process.running_pid(params["pid_file"], marker)
    watch = Stopwatch()
    actions = []
    warnings = []
    state = wanted_state(params, pid, [params["config_file"], params["logback_file"]])
    cpus = process.parse_cpus(params.get("cpus"))
    limit = cgroups.parse_size(params.get("memory_limit"))
    group = memory_group(params) if limit else None
    disk = disk_limits(params)
    io = io_group(params) if disk else None
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
        if io and (io.limits(disk["device"]) != _io_limits(disk) or pid not in io.pids()):
            if not check_mode:
                io.ensure(**disk)
                io.join(pid)
            actions.append("disk read limit %s" % format_disk(disk))
        elif io is None and cgroups.io_version() is not None:
            # Limits unset on a node that still runs under some: lifted live, as they were set.
            left = io_group(params)
            if pid in left.pids() and left.limited():
                if not check_mode:
                    left.clear()
                actions.append("lift disk read limits")
        return _result(bool(actions), pid, actions, watch, warnings, group, io, disk)
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
            _remove_group(params, actions, io=False)
        if io:
            io.ensure(**disk)
        else:
            _remove_io_group(params, actions)
        pid = _start_cassandra(params, watch, actions, cpus, group, io)
    else:
        _remove_group(params, actions)
    result = _result(True, pid, actions, watch, warnings, group, io, disk)
    if pid:
        result["malloc"] = library or "glibc"
    return result


def _group_name(params):
    return params.get("memory_group") or "cassandra-%s-%s" % (params["rpc_address"], params["native_port"])


def memory_group(params):
    """The node's memory control group (named by memory_group, else after its CQL address and port)."""
    return cgroups.MemoryGroup(_group_name(params))


def io_group(params):
    """The node's I/O control group (the same name as its memory group)."""
    return cgroups.IoGroup(_group_name(params))


def disk_limits(params):
    """{"device", "read_bps", "read_iops"} of the node's disk read limits (the disk that holds its storage_dir),
    or None when neither disk_read_limit nor disk_read_iops is set."""
    read_bps = cgroups.parse_rate(params.get("disk_read_limit"))
    read_iops = cgroups.parse_iops(params.get("disk_read_iops"))
    if read_bps is None and read_iops is None:
        return None
    path = os.path.abspath(params["storage_dir"])
    while not os.path.exists(path):  # before the first start: the folder it will be made in
        path = os.path.dirname(path)
    return {"device": cgroups.disk_of(path), "read_bps": read_bps, "read_iops": read_iops}


def _io_limits(disk):
    return {"read_bps": disk["read_bps"], "read_iops": disk["read_iops"]}


def format_disk(disk):
    """The disk read limits for people: 80 MiB/s and 2000 reads/s on 254:0."""
    parts = []
    if disk["read_bps"]:
        parts.append("%d MiB/s" % (disk["read_bps"] >> 20))
    if disk["read_iops"]:
        parts.append("%d reads/s" % disk["read_iops"])
    return "%s on %s" % (" and ".join(parts), disk["device"])


def _remove_group(params, actions, io=True):
    """Remove the node's memory group (and with io its I/O group) when left (the node stopped, or runs without a
    limit now)."""
    if cgroups.version() is not None:
        group = memory_group(params)
        if group.exists() and group.remove():
            actions.append("remove memory group")
    if io:
        _remove_io_group(params, actions)


def _remove_io_group(params, actions):
    version = cgroups.io_version()
    if version is None:
        return
    group = io_group(params)
    if version == 2 and cgroups.parse_size(params.get("memory_limit")):
        # v2: the node's one group is its memory group too, which stays: its read limits are lifted instead.
        if group.clear():
            actions.append("lift disk read limits")
    elif group.exists() and group.remove():
        actions.append("remove I/O group")


def _result(changed, pid, actions, watch, warnings, group, io=None, disk=None):
    result = daemon_result(changed, pid, actions, watch, warnings)
    if group is not None:
        result["memory"] = group.stats()
    if io is not None:
        result["disk"] = io.stats(disk["device"])
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


def _start_cassandra(params, watch, actions, cpus=None, group=None, io=None):
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
            argv,
            params["pid_file"],
            log_file,
            cwd=params["storage_dir"],
            env=params.get("environment"),
            cpus=cpus,
            memory_group=group,
            io_group=io,
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
