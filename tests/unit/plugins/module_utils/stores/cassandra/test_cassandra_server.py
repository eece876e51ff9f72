from __future__ import annotations

import os

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import server as cs

STATUS = """Datacenter: datacenter1
=======================
Status=Up/Down
|/ State=Normal/Leaving/Joining/Moving
--  Address    Load        Tokens  Owns (effective)  Host ID                               Rack
UN  127.0.0.1  104.36 KiB  16      100.0%            0b4bd3a3-0d0e-4a4f-9d42-7e8f3c6e2a11  rack1
DN  127.0.0.2  98.1 KiB    16      100.0%            1c5ce4b4-1e1f-5b5a-ae53-8f9a4d7f3b22  rack1
UJ  127.0.0.3:7000  ?      16      ?                 2d6df5c5-2f2a-6c6b-bf64-9a0b5e8a4c33  rack1

Datacenter: dc2
===============
--  Address    Load        Tokens  Owns (effective)  Host ID                               Rack
UL  10.0.0.9   1 GiB       16      33.3%             3e7ea6d6-3a3b-7d7c-c075-ab1c6f9b5d44  r2
"""


def test_parse_status_reads_every_datacenter_and_strips_ports():
    assert cs.parse_status(STATUS) == {
        "127.0.0.1": "UN",
        "127.0.0.2": "DN",
        "127.0.0.3": "UJ",
        "10.0.0.9": "UL",
    }


def test_parse_status_of_garbage_is_empty():
    assert cs.parse_status("nodetool: Failed to connect") == {}


@pytest.fixture
def home(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "jamm-0.4.0.jar").write_bytes(b"")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "logback-tools.xml").write_text("<configuration/>")
    return str(tmp_path)


def test_server_argv_has_java17_flags_agent_and_class(home):
    argv = cs.server_argv(home, "/n/conf/cassandra.yaml", "/n/data", "/n/logs", "/n/conf/logback.xml", 7299, "1G")
    assert argv[0] == "java" and argv[-1] == cs.DAEMON_CLASS
    assert "-Xmx1G" in argv and "-Xms1G" in argv
    assert "-XX:+AlwaysPreTouch" in argv  # as Cassandra's jvm-server.options: the heap resident from the start
    assert "-javaagent:" + os.path.join(home, "lib", "jamm-0.4.0.jar") in argv
    assert "-Dcassandra.jmx.local.port=7299" in argv
    assert "java.base/sun.nio.ch=ALL-UNNAMED" in argv
    assert "-Dcassandra.config=file:///n/conf/cassandra.yaml" in argv
    assert "-Dcassandra.ring_delay_ms=5000" in argv


def test_server_argv_without_fast_start_keeps_ring_delay(home):
    argv = cs.server_argv(home, "/c.yaml", "/d", "/l", "/lb.xml", 7199, fast_start=False)
    assert not any("ring_delay" in arg for arg in argv)


def test_server_argv_without_jamm_names_the_directory(tmp_path):
    with pytest.raises(cs.CassandraServerError, match="cassandra_home"):
        cs.server_argv(str(tmp_path), "/c.yaml", "/d", "/l", "/lb.xml", 7199)


def test_nodetool_argv_takes_a_password_file_never_the_password(home):
    argv = cs.nodetool_argv(home, "127.0.0.1", 7199, ["status"], jmx_user="ops", password_file="/tmp/pwf")
    assert argv[-1] == "status"
    assert argv[argv.index("-u") + 1] == "ops" and argv[argv.index("-pwf") + 1] == "/tmp/pwf"
    assert "--add-exports" in argv and "java.base/sun.nio.ch=ALL-UNNAMED" in argv
    assert any(arg.endswith("logback-tools.xml") for arg in argv)


def test_run_nodetool_reports_failure_and_removes_password_file(home, monkeypatch, tmp_path):
    seen = {}

    class Done:
        returncode = 1
        stdout = ""
        stderr = "nodetool: Failed to connect to '127.0.0.1:7199'"

    def fake_run(argv, **kwargs):
        path = argv[argv.index("-pwf") + 1]
        seen["path"] = path
        with open(path) as handle:
            seen["content"] = handle.read()
        seen["argv"] = argv
        return Done()

    monkeypatch.setattr(cs.subprocess, "run", fake_run)
    with pytest.raises(cs.CassandraServerError, match="Failed to connect"):
        cs.run_nodetool(home, "127.0.0.1", 7199, ["status"], jmx_user="ops", jmx_password="s3cret")
    assert seen["content"] == "ops s3cret\n"
    assert not any("s3cret" in arg for arg in seen["argv"])
    assert not os.path.exists(seen["path"])


def test_nodetool_of_an_installation_without_its_logging_logs_to_stderr_only(tmp_path, monkeypatch):
    """A packaged layout's /usr/share/cassandra has no conf/: logback's default would print DEBUG lines to the
    stdout that the callers parse."""
    (tmp_path / "lib").mkdir()
    monkeypatch.setattr(cs, "PACKAGED_CONF_DIRS", ())
    seen = {}

    class Done:
        returncode = 0
        stdout = "{}"
        stderr = ""

    def fake_run(argv, **kwargs):
        flag = [arg for arg in argv if arg.startswith("-Dlogback.configurationFile=file://")]
        seen["path"] = flag[0].split("file://", 1)[1]
        with open(seen["path"]) as handle:
            seen["content"] = handle.read()
        return Done()

    monkeypatch.setattr(cs.subprocess, "run", fake_run)
    assert cs.run_nodetool(str(tmp_path), "127.0.0.1", 7199, ["tablestats", "-F", "json"]) == "{}"
    assert "System.err" in seen["content"] and "System.out" not in seen["content"]
    assert not os.path.exists(seen["path"])
