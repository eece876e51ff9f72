# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""One redis-server as a daemon: started, stopped (SHUTDOWN SAVE) or restarted, and restarted when its config file
changed since it started.
"""

from __future__ import annotations

import os

from ansible_collections.tactician.nosql.plugins.module_utils.core import process
from ansible_collections.tactician.nosql.plugins.module_utils.core.timing import Stopwatch
from ansible_collections.tactician.nosql.plugins.module_utils.stores.daemons import (
    daemon_result,
    record_config_live,
    wanted_state,
)
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter


def redis_daemon(params, check_mode=False):
    host = params.get("login_host") or "127.0.0.1"
    port = int(params.get("login_port") or 6379)
    marker = "%s:%d" % (host, port)
    pid = process.running_pid(params["pid_file"], marker)
    watch = Stopwatch()
    actions = []
    state = wanted_state(params, pid, [params["config_file"]])
    if state == "started" and pid:
        return daemon_result(False, pid, actions, watch)
    if state == "stopped" and not pid:
        process.remove_pid_file(params["pid_file"])
        return daemon_result(False, None, actions, watch)
    if check_mode:
        planned = (["stop"] if pid else []) + (["start"] if state != "stopped" else [])
        return daemon_result(True, pid, planned, watch)
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
        record_config_live(params["pid_file"], [params["config_file"]], params)
        actions.append("start")
    return daemon_result(True, pid, actions, watch)
