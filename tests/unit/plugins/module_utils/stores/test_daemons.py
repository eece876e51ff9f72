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


def test_a_running_node_off_its_cpus_is_moved_live_not_restarted(tmp_path):
    import sys

    from ansible_collections.tactician.nosql.plugins.module_utils.core import process

    mine = sorted(os.sched_getaffinity(0))
    config = tmp_path / "cassandra.yaml"
    config.write_text("a: 1\n")
    (tmp_path / "logback.xml").write_text("<x/>\n")
    pid_file = str(tmp_path / "node.pid")
    # A stand-in for the node's JVM: its command line names the config file, as the real one does.
    pid = process.spawn(
        [sys.executable, "-c", "import time; time.sleep(60)", str(config)], pid_file, str(tmp_path / "out.log")
    )
    try:
        time.sleep(0.2)
        params = _params(tmp_path, restart_on_change=False, cpus=str(mine[-1]))
        planned = cassandra_daemon(params, check_mode=True)
        if len(mine) > 1:
            assert planned["changed"] and planned["actions"] == ["pin to CPUs %d" % mine[-1]]
            assert os.sched_getaffinity(pid) == set(mine)
        done = cassandra_daemon(params)
        assert done["pid"] == pid and os.sched_getaffinity(pid) == {mine[-1]}
        assert cassandra_daemon(params)["changed"] is False
    finally:
        process.terminate(pid, timeout=10)


def test_a_new_heap_restarts_a_running_node_as_a_changed_file_does(tmp_path):
    config = tmp_path / "cassandra.yaml"
    config.write_text("cluster_name: x\n")
    pid_file = str(tmp_path / "cassandra.pid")
    started = {"state": "started", "restart_on_change": True, "pid_file": pid_file, "heap_size": "1G", "java": "java"}
    daemons.record_config_live(pid_file, [str(config)], started)
    assert daemons.wanted_state(started, 4242, [str(config)]) == "started"
    # The same files with another heap, or other JVM options: restarted.
    assert daemons.wanted_state(dict(started, heap_size="512M"), 4242, [str(config)]) == "restarted"
    assert daemons.wanted_state(dict(started, jvm_options=["-XX:+AlwaysPreTouch"]), 4242, [str(config)]) == "restarted"
    # A changed file, whatever the parameters.
    config.write_text("cluster_name: y\n")
    assert daemons.wanted_state(started, 4242, [str(config)]) == "restarted"
    # A digest recorded before start parameters were (files only) compares the files only: no surprise restart.
    with open(daemons.digest_file(pid_file), "w") as handle:
        handle.write(daemons._digest([str(config)], None) + "\n")
    assert daemons.wanted_state(dict(started, heap_size="512M"), 4242, [str(config)]) == "started"
    # Parameters that are not start parameters (the state, the pid file) do not count.
    assert daemons.start_signature({"state": "started", "pid_file": pid_file}) == ""


def test_a_running_node_gets_its_disk_read_limit_live_and_bad_limits_name_the_field(tmp_path, monkeypatch):
    import sys

    import pytest

    from ansible_collections.tactician.nosql.plugins.module_utils.core import cgroups, process
    from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import daemon as cdaemon

    root = tmp_path / "cgroup"
    (root / "blkio").mkdir(parents=True)
    (root / "blkio" / "blkio.throttle.read_bps_device").write_text("")
    real = cgroups.IoGroup
    monkeypatch.setattr(cdaemon.cgroups, "IoGroup", lambda name: real(name, root=str(root)))
    monkeypatch.setattr(cdaemon.cgroups, "disk_of", lambda path: "254:0")
    monkeypatch.setattr(cdaemon.cgroups, "io_version", lambda root=None: 1)  # the fake hierarchy's, on any machine
    config = tmp_path / "cassandra.yaml"
    config.write_text("a: 1\n")
    (tmp_path / "logback.xml").write_text("<x/>\n")
    with pytest.raises(cgroups.CgroupError, match="disk_read_limit: 'fast' is not a rate"):
        cassandra_daemon(_params(tmp_path, disk_read_limit="fast"), check_mode=True)
    pid = process.spawn(
        [sys.executable, "-c", "import time; time.sleep(60)", str(config)],
        str(tmp_path / "node.pid"),
        str(tmp_path / "o"),
    )
    try:
        time.sleep(0.2)
        params = _params(tmp_path, restart_on_change=False, disk_read_limit="80M", disk_read_iops=0)
        planned = cassandra_daemon(params, check_mode=True)
        assert planned["changed"] and planned["actions"] == ["disk read limit 80 MiB/s on 254:0"]
        assert not (root / "blkio" / "tactician").exists()
        done = cassandra_daemon(params)
        assert done["pid"] == pid and done["disk"]["read_bps"] == 80 << 20 and done["disk"]["read_iops"] is None
        group = root / "blkio" / "tactician" / "cassandra-127.0.0.1-9042"
        assert (group / "cgroup.procs").read_text() == str(pid)
        assert cassandra_daemon(params)["changed"] is False
        tighter = cassandra_daemon(dict(params, disk_read_iops=2000))
        assert tighter["actions"] == ["disk read limit 80 MiB/s and 2000 reads/s on 254:0"]
        # Unset again: lifted live, the node left running.
        plain = _params(tmp_path, restart_on_change=False)
        assert cassandra_daemon(plain, check_mode=True)["actions"] == ["lift disk read limits"]
        assert (group / "blkio.throttle.read_bps_device").read_text() != "254:0 0"
        lifted = cassandra_daemon(plain)
        assert lifted["actions"] == ["lift disk read limits"] and lifted["pid"] == pid
        assert (group / "blkio.throttle.read_bps_device").read_text() == "254:0 0"
        assert cassandra_daemon(plain)["changed"] is False
    finally:
        process.terminate(pid, timeout=10)


def test_jemalloc_is_found_named_or_refused_by_name(tmp_path):
    import pytest

    from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import daemon as cassandra

    assert cassandra.jemalloc_library("off") is None and cassandra.jemalloc_library(None) is None
    # auto: nothing installed -> glibc; the versioned name Debian's libjemalloc2 installs is found.
    assert cassandra.jemalloc_library("auto", dirs=[str(tmp_path)]) is None
    (tmp_path / "libjemalloc.so.2").write_bytes(b"")
    assert cassandra.jemalloc_library("auto", dirs=[str(tmp_path)]) == str(tmp_path / "libjemalloc.so.2")
    assert cassandra.jemalloc_library(str(tmp_path / "libjemalloc.so.2")) == str(tmp_path / "libjemalloc.so.2")
    for bad in ("yes", "libjemalloc.so.2", str(tmp_path / "missing.so")):
        with pytest.raises(daemons.DaemonError, match="jemalloc: .* choose off, auto"):
            cassandra.jemalloc_library(bad)


def test_a_bad_jemalloc_changes_nothing_and_a_new_one_restarts_the_node(tmp_path, monkeypatch):
    import pytest

    from ansible_collections.tactician.nosql.plugins.module_utils.core import process

    with pytest.raises(daemons.DaemonError, match="jemalloc"):
        cassandra_daemon(_params(tmp_path, jemalloc="/no/such/libjemalloc.so"))
    assert not os.path.exists(tmp_path / "data")
    library = tmp_path / "libjemalloc.so.2"
    library.write_bytes(b"")
    (tmp_path / "cassandra.yaml").write_text("cluster_name: x\n")
    started = _params(tmp_path, heap_size="1G")
    daemons.record_config_live(started["pid_file"], [started["config_file"], started["logback_file"]], started)
    monkeypatch.setattr(process, "running_pid", lambda *_a: 4242)
    # The node runs on glibc as recorded: nothing to do (check mode plans nothing), with jemalloc: a restart.
    assert cassandra_daemon(started, check_mode=True)["actions"] == []
    planned = cassandra_daemon(dict(started, jemalloc=str(library)), check_mode=True)
    assert planned["changed"] and planned["actions"] == ["drain", "stop", "start"]


def test_jemalloc_is_preloaded_into_the_started_node(tmp_path, monkeypatch):
    from ansible_collections.tactician.nosql.plugins.module_utils.core import process
    from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import daemon as cassandra

    library = tmp_path / "libjemalloc.so"
    library.write_bytes(b"")
    spawned = {}

    def spawn(argv, pid_file, log_file, env=None, **_kw):
        spawned["env"] = env
        return 4242

    monkeypatch.setattr(cassandra, "server_argv", lambda *a, **k: ["java"])
    monkeypatch.setattr(process, "running_pid", lambda *_a: None)
    monkeypatch.setattr(process, "spawn", spawn)
    monkeypatch.setattr(process, "wait_until", lambda *a, **k: None)
    (tmp_path / "cassandra.yaml").write_text("cluster_name: x\n")
    result = cassandra_daemon(_params(tmp_path, jemalloc=str(library)))
    assert spawned["env"] == {"LD_PRELOAD": str(library)} and result["malloc"] == str(library)
    result = cassandra_daemon(_params(tmp_path, jemalloc="off"))
    assert spawned["env"] is None and result["malloc"] == "glibc"
