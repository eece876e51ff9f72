# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Desired state of a server daemon run from its own files (the lab's and the tests' nodes): what both stores share.

A daemon is started, stopped or restarted to match ``state``; a started daemon whose config files or start
parameters (its heap, JVM options, the java it runs on) changed since it started (by digest, else by the files'
modification time) is restarted. Each store's daemon function returns the module
result (changed, pid, actions, timings, warnings) and touches nothing in check mode: stores/cassandra/daemon.py
(always drained before it stops) and stores/redis/daemon.py.
"""

from __future__ import annotations

import hashlib
import json
import os

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import StoreError
from ansible_collections.tactician.nosql.plugins.module_utils.core.files import config_digest

STATES = ["started", "stopped", "restarted"]


class DaemonError(StoreError):
    """A daemon could not be brought to the wanted state."""


def daemon_result(changed, pid, actions, watch, warnings=None):
    return dict(changed=changed, pid=pid, actions=actions, timings=watch.steps, warnings=warnings or [])


def config_newer_than_process(pid_file, files):
    """True when one of files was modified after the process recorded in pid_file was started."""
    try:
        started = os.path.getmtime(pid_file)
    except OSError:
        return False
    return any(os.path.exists(path) and os.path.getmtime(path) > started for path in files if path)


# The daemon parameters that shape a process's command line (not its files): a change restarts it, as a file's does.
# argv and environment: a monitoring process's (stores/exporters.py).
START_KEYS = ("java", "heap_size", "jvm_options", "fast_start", "argv", "environment")


def start_signature(params):
    """sha256 (hex) of the start parameters among params, or "" when it has none of them."""
    picked = {key: params.get(key) for key in START_KEYS if params.get(key) not in (None, "", [])}
    if not picked:
        return ""
    return hashlib.sha256(json.dumps(picked, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def _digest(files, params):
    signature = start_signature(params or {})
    return config_digest([path for path in files if path]) + ("+" + signature if signature else "")


def digest_file(pid_file):
    """Where the digest of the configuration the running process reflects is kept."""
    return pid_file + ".config-sha256"


def record_config_live(pid_file, files, params=None):
    """Record that the running process reflects files as they are now, and the start parameters among params
    (after a start, or after settings were changed live and written to the file, e.g. CONFIG SET + CONFIG
    REWRITE)."""
    with open(digest_file(pid_file), "w") as handle:
        handle.write(_digest(files, params) + "\n")


def config_changed_since_start(pid_file, files, params=None):
    """True when the files, or the start parameters among params, differ from what the running process reflects:
    by digest when one was recorded, else by the files' modification time. A digest recorded without start
    parameters (an older record) compares the files only."""
    try:
        with open(digest_file(pid_file)) as handle:
            recorded = handle.read().strip()
    except OSError:
        return config_newer_than_process(pid_file, files)
    recorded_files, _sep, recorded_start = recorded.partition("+")
    now_files, _sep, now_start = _digest(files, params).partition("+")
    return recorded_files != now_files or bool(recorded_start and recorded_start != now_start)


def wanted_state(params, pid, files):
    state = params["state"]
    if (
        state == "started"
        and pid
        and params.get("restart_on_change")
        and config_changed_since_start(params["pid_file"], files, params)
    ):
        return "restarted"
    return state
