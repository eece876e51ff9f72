from __future__ import annotations

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.apply import node_base


def test_systemd_and_sysv_commands():
    assert node_base.service_commands("redis-server", "systemd") == (
        ["systemctl", "stop", "redis-server"],
        ["systemctl", "start", "redis-server"],
    )
    assert node_base.service_commands("cassandra", "sysv") == (
        ["service", "cassandra", "stop"],
        ["service", "cassandra", "start"],
    )


def test_auto_picks_systemd_only_when_it_runs(monkeypatch):
    monkeypatch.setattr(node_base.os.path, "isdir", lambda path: path == "/run/systemd/system")
    assert node_base.service_manager("auto") == "systemd"
    monkeypatch.setattr(node_base.os.path, "isdir", lambda path: False)
    assert node_base.service_manager("auto") == "sysv"


@pytest.mark.parametrize("name", ["", "../redis", "-x", "/etc/init.d/redis-server"])
def test_a_service_name_that_is_a_path_or_an_option_is_refused(name):
    with pytest.raises(ValueError, match="service must be a service name"):
        node_base.service_commands(name, "sysv")


def test_an_unknown_manager_names_the_allowed_ones():
    with pytest.raises(ValueError, match="auto, systemd, sysv"):
        node_base.service_manager("upstart")


def test_the_status_command_of_each_manager():
    assert node_base.status_command("cassandra", "systemd") == ["systemctl", "is-active", "cassandra"]
    assert node_base.status_command("redis-server", "sysv") == ["service", "redis-server", "status"]
    with pytest.raises(ValueError, match="service must be a service name"):
        node_base.status_command("../cassandra", "sysv")


@pytest.mark.parametrize(
    "script, state",
    [
        ("exit 0", "running"),
        ("exit 1", "stopped"),  # LSB: dead, its PID file left behind
        ("exit 3", "stopped"),  # LSB: not running
        ("exit 4", "unknown"),
        ("echo activating; exit 3", "running"),  # systemctl is-active while a unit starts
        ("echo failed; exit 3", "stopped"),
        ("echo inactive; exit 3", "stopped"),
    ],
)
def test_service_state_reads_lsb_codes_and_systemd_states(script, state):
    assert node_base.service_state(["sh", "-c", script]) == state


def test_a_status_command_that_cannot_run_is_unknown():
    assert node_base.service_state(["/nonexistent/status"]) == "unknown"


def test_the_exit_watch_needs_polls_in_a_row_and_ignores_unknown():
    answers = iter(["stopped", "stopped", "running", "stopped", "unknown", "stopped", "stopped", "stopped"])
    watch = node_base.ExitWatch(["status"], polls=3, state=lambda argv: next(answers))
    for poll in range(7):
        assert watch.check("10.0.0.1") is None, poll
    with pytest.raises(RuntimeError, match="^10.0.0.1 exited while coming back: .*status, 3 polls in a row"):
        watch.check("10.0.0.1")


def test_without_a_status_command_the_exit_watch_watches_nothing():
    watch = node_base.ExitWatch(None, state=lambda argv: pytest.fail("asked"))
    watch.check("10.0.0.1")
