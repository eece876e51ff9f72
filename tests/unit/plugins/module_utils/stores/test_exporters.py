from __future__ import annotations

import os
import socket
import stat
import sys

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.core import process
from ansible_collections.tactician.nosql.plugins.module_utils.stores import exporters as monitoring
from ansible_collections.tactician.nosql.plugins.module_utils.stores.daemons import digest_file
from ansible_collections.tactician.nosql.plugins.module_utils.stores.exporters import (
    MonitoringError,
    exporter_daemon,
)


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def web(tmp_path):
    """Parameters of a small HTTP server (Python's http.server) run as the monitoring process; stopped after."""
    port = _free_port()
    config = tmp_path / "server.yml"
    config.write_text("a: 1\n")
    params = dict(
        name="web",
        state="started",
        argv=[sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
        pid_file=str(tmp_path / "run" / "web.pid"),
        log_file=None,
        environment={"WEB_SECRET": "s3cret-value"},
        config_files=[str(config)],
        ready_url="http://127.0.0.1:%d/" % port,
        start_timeout=30,
        stop_timeout=10,
        restart_on_change=True,
    )
    yield params
    pid = process.read_pid(params["pid_file"])
    if pid and process.pid_alive(pid):
        process.terminate(pid, timeout=10)


@pytest.mark.parametrize(
    "change, field",
    [
        (dict(name=""), "name"),
        (dict(argv=[]), "argv"),
        (dict(argv=["/nonexistent/exporter"]), "argv"),
        (dict(argv=["true", ""]), "argv"),
        (dict(ready_url="https://127.0.0.1:9/"), "ready_url"),
        (dict(ready_url="http://203.0.113.7:9100/"), "ready_url"),
        (dict(ready_url=None, ready_tcp="127.0.0.1"), "ready_tcp"),
        (dict(ready_url=None, ready_tcp="127.0.0.1:99999"), "ready_tcp"),
        (dict(ready_url=None, ready_tcp="127.0.0.1:27027/x"), "ready_tcp"),
        (dict(ready_url=None, ready_tcp="203.0.113.7:27027"), "ready_tcp"),
        (dict(ready_tcp="127.0.0.1:27027"), "ready_tcp"),
        (dict(environment={"A=B": "x"}), "environment"),
        (dict(environment={"A": ["x"]}), "environment"),
        (dict(start_timeout=0), "start_timeout"),
        (dict(config_files=["/nonexistent/prometheus.yml"]), "config_files"),
    ],
)
def test_bad_parameters_name_the_field(web, change, field):
    with pytest.raises(MonitoringError, match="^%s: " % field):
        exporter_daemon(dict(web, **change))


def test_check_mode_plans_a_start_and_starts_nothing(web):
    result = exporter_daemon(dict(web, config_files=["/not/written/yet.yml"]), check_mode=True)
    assert result["changed"] and result["actions"] == ["start"]
    assert not os.path.exists(web["pid_file"])


def test_start_is_ready_idempotent_and_keeps_secrets_out_of_argv(web):
    started = exporter_daemon(web)
    assert started["changed"] and started["actions"] == ["start"]
    pid = started["pid"]
    assert monitoring.http_ready(web["ready_url"])
    assert not any("s3cret" in arg for arg in process.pid_cmdline(pid))
    with open("/proc/%d/environ" % pid, "rb") as handle:
        assert b"WEB_SECRET=s3cret-value" in handle.read().split(b"\0")
    assert stat.S_IMODE(os.stat(digest_file(web["pid_file"])).st_mode) == 0o600

    again = exporter_daemon(web)
    assert again["changed"] is False and again["pid"] == pid
    assert exporter_daemon(web, check_mode=True)["changed"] is False


def test_a_changed_config_file_or_environment_restarts(web):
    first = exporter_daemon(web)["pid"]
    with open(web["config_files"][0], "w") as handle:
        handle.write("a: 2\n")
    planned = exporter_daemon(web, check_mode=True)
    assert planned["changed"] and planned["actions"] == ["stop", "start"]
    second = exporter_daemon(web)
    assert second["actions"] == ["stop", "start"] and second["pid"] != first and not process.pid_alive(first)
    third = exporter_daemon(dict(web, environment={"WEB_SECRET": "other"}))
    assert third["actions"] == ["stop", "start"]
    kept = exporter_daemon(dict(web, environment={"WEB_SECRET": "changed-again"}, restart_on_change=False))
    assert kept["changed"] is False and kept["pid"] == third["pid"]


def test_stop_then_stop_again(web):
    pid = exporter_daemon(web)["pid"]
    stopped = exporter_daemon(dict(web, state="stopped"))
    assert stopped["changed"] and stopped["actions"] == ["stop"] and stopped["pid"] is None
    assert not process.pid_alive(pid) and not os.path.exists(web["pid_file"])
    assert exporter_daemon(dict(web, state="stopped"))["changed"] is False


def test_restarted_always_restarts(web):
    pid = exporter_daemon(web)["pid"]
    result = exporter_daemon(dict(web, state="restarted"))
    assert result["actions"] == ["stop", "start"] and result["pid"] != pid


def test_a_process_that_exits_at_once_fails_naming_argv(web, tmp_path):
    params = dict(web, argv=[sys.executable, "-c", "import sys; print('no port for me'); sys.exit(3)"])
    with pytest.raises(MonitoringError, match="^argv: web: process .* exited") as info:
        exporter_daemon(params)
    assert "no port for me" in str(info.value)
    assert not os.path.exists(web["pid_file"])


def test_a_process_that_never_answers_fails_naming_ready_url(web):
    params = dict(web, argv=[sys.executable, "-c", "import time; time.sleep(60)"], start_timeout=1)
    with pytest.raises(MonitoringError, match="^ready_url: web: timed out"):
        exporter_daemon(params)
    assert not os.path.exists(web["pid_file"])


def test_ready_tcp_waits_for_the_port_and_refuses_a_port_someone_holds(web):
    """A server that speaks no HTTP: ready once its port accepts a connection; a port held by another process is
    refused before anything starts (its answer would pass for ours)."""
    host, port = monitoring.tcp_address(web["ready_url"].split("//")[1].rstrip("/"))
    assert (host, port) == ("127.0.0.1", int(web["argv"][-1]))
    params = dict(web, ready_url=None, ready_tcp="%s:%d" % (host, port))
    started = exporter_daemon(params)
    assert started["actions"] == ["start"] and process.port_open(host, port)
    assert exporter_daemon(params)["changed"] is False

    other = dict(params, name="other", pid_file=params["pid_file"] + ".other")
    with pytest.raises(MonitoringError, match="^ready_tcp: other: 127.0.0.1:%d already accepts connections" % port):
        exporter_daemon(other)
    assert not os.path.exists(other["pid_file"])
    assert exporter_daemon(dict(params, state="stopped"))["actions"] == ["stop"]


def test_a_process_that_never_listens_fails_naming_ready_tcp(web):
    params = dict(
        web,
        argv=[sys.executable, "-c", "import time; time.sleep(60)"],
        ready_url=None,
        ready_tcp="127.0.0.1:%d" % _free_port(),
        start_timeout=1,
    )
    with pytest.raises(MonitoringError, match="^ready_tcp: web: timed out .* to accept connections on 127.0.0.1:"):
        exporter_daemon(params)
    assert not os.path.exists(web["pid_file"])
