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
