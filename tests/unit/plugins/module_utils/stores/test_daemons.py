from __future__ import annotations

import os
import time

from ansible_collections.tactician.nosql.plugins.module_utils.stores import daemons
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.daemon import cassandra_daemon
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis.daemon import redis_daemon


def _params(tmp_path, **extra):
    params = dict(
        state="started",
        config_file=str(tmp_path / "cassandra.yaml"),
        logback_file=str(tmp_path / "logback.xml"),
        pid_file=str(tmp_path / "node.pid"),
        cassandra_home=str(tmp_path),
        storage_dir=str(tmp_path / "data"),
        log_dir=str(tmp_path / "logs"),
        rpc_address="127.0.0.1",
        native_port=9042,
        jmx_port=7199,
        restart_on_change=True,
    )
    params.update(extra)
    return params


def test_check_mode_start_plans_a_start_and_touches_nothing(tmp_path):
    result = cassandra_daemon(_params(tmp_path), check_mode=True)
    assert result["changed"] and result["actions"] == ["start"]
    assert not os.path.exists(tmp_path / "data")


def test_stopping_a_stopped_node_changes_nothing(tmp_path):
    (tmp_path / "node.pid").write_text("999999999\n")
    result = cassandra_daemon(_params(tmp_path, state="stopped"))
    assert result["changed"] is False
    assert not os.path.exists(tmp_path / "node.pid")


def test_config_newer_than_process(tmp_path):
    pid_file = tmp_path / "node.pid"
    config = tmp_path / "cassandra.yaml"
    config.write_text("a: 1\n")
    pid_file.write_text("1\n")
    old = time.time() - 100
    os.utime(config, (old, old))
    assert daemons.config_newer_than_process(str(pid_file), [str(config)]) is False
    os.utime(config, None)
    os.utime(pid_file, (old, old))
    assert daemons.config_newer_than_process(str(pid_file), [str(config)]) is True
    assert daemons.config_newer_than_process(str(tmp_path / "missing.pid"), [str(config)]) is False


def test_redis_check_mode_plans_start(tmp_path):
    params = dict(
        state="started",
        config_file=str(tmp_path / "redis.conf"),
        pid_file=str(tmp_path / "r.pid"),
        login_host="127.0.0.1",
        login_port=6399,
    )
    assert redis_daemon(params, check_mode=True)["actions"] == ["start"]
