"""Role ferretdb_node against the real FerretDB program (tests/ferretdb), on a free loopback port and pytest's
temporary directory: check mode, a start, the same run again, a restart on changed TLS options, stop and absent,
each run's `changed` checked against what the process did; then playbooks/lab_up.yml and lab_down.yml with an
inventory that has only a mongodb group. Nothing is left running."""

from __future__ import annotations

import os

import pytest
import yaml
from ansible_run import ROOT, run_playbook

from ansible_collections.tactician.nosql.plugins.module_utils.core import process
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import client as mongodb

pytestmark = pytest.mark.integration

PLAYBOOK = os.path.join(ROOT, "tests", "integration", "playbooks", "ferretdb_node.yml")
INVENTORY = os.path.join(ROOT, "tests", "integration", "inventory", "localhost.yml")
DAEMON = "Run FerretDB and wait until its port accepts connections"
HELLO = "Wait until FerretDB answers hello"
REFUSE = "Refuse a missing program or incomplete TLS options"
HOST = "127.0.0.1"


@pytest.fixture(scope="module")
def built():
    """Skip when FerretDB cannot run here (no Go); build the program when its sources changed."""
    pytest.importorskip("pymongo")
    from conftest import _ferretdb_module

    server_module = _ferretdb_module()
    reason = server_module.missing()
    if reason:
        pytest.skip("FerretDB cannot run here: " + reason)
    return server_module


@pytest.fixture
def node(built, tmp_path):
    """The role's variables for a server of this test's own; whatever runs from its PID file is stopped after."""
    port = built.free_port()
    folder = tmp_path / "node"
    extra = {
        "ferretdb_node_dir": str(folder),
        "ferretdb_node_port": port,
        "ferretdb_node_start_timeout": 30,
    }
    yield extra
    _stop_left(os.path.join(str(folder), "ferretdb.pid"), [port])


def _stop_left(pid_file, ports):
    pid = process.read_pid(pid_file)
    left = pid if pid and process.pid_alive(pid) else None
    if left:
        process.terminate(left, timeout=10)
    listening = [port for port in ports if process.port_open(HOST, port)]
    assert left is None and listening == [], "left running: pid %s, ports %s" % (left, listening)


def _run(extra, check=False, **more):
    result = run_playbook(PLAYBOOK, INVENTORY, dict(extra, **more), check=check)
    assert result.returncode == 0, result.stderr[-5000:]
    return result


def _hello(server_module, port, **options):
    params = dict(login_host=HOST, login_port=port, direct_connection=True, connect_timeout=3.0)
    return server_module.server_facts(dict(params, **options))


def test_start_again_stop_absent_each_reporting_what_it_did(node, built):
    pid_file = os.path.join(node["ferretdb_node_dir"], "ferretdb.pid")
    port = node["ferretdb_node_port"]

    planned = _run(node, check=True)
    assert planned.task(DAEMON)["changed"] is True and planned.task(DAEMON)["actions"] == ["start"]
    assert planned.task(HELLO).get("skipped") is True
    assert not os.path.exists(pid_file) and not process.port_open(HOST, port)

    started = _run(node)
    daemon = started.task(DAEMON)
    assert daemon["changed"] is True and daemon["actions"] == ["start"]
    pid = daemon["pid"]
    assert process.running_pid(pid_file) == pid
    assert started.task(HELLO)["server"]["role"] == "standalone"
    facts = _hello(built, port)
    assert facts["role"] == "standalone" and facts["max_wire_version"] == 21
    assert os.path.isdir(os.path.join(node["ferretdb_node_dir"], "state"))

    again = _run(node)
    assert again.changed("localhost") == 0, again.stats
    assert again.task(DAEMON)["pid"] == pid
    assert _run(node, check=True).changed("localhost") == 0

    planned_stop = _run(node, check=True, ferretdb_node_state="stopped")
    assert planned_stop.task(DAEMON)["changed"] is True and process.pid_alive(pid)

    stopped = _run(node, ferretdb_node_state="stopped")
    assert stopped.task(DAEMON)["actions"] == ["stop"]
    assert not process.pid_alive(pid) and not process.port_open(HOST, port)
    assert not os.path.exists(pid_file)
    assert _run(node, ferretdb_node_state="stopped").changed("localhost") == 0

    # the data stays over a stop; absent deletes it
    assert os.path.isdir(os.path.join(node["ferretdb_node_dir"], "state"))
    assert _run(node, ferretdb_node_state="absent").changed("localhost") == 1
    assert not os.path.exists(node["ferretdb_node_dir"])
    assert _run(node, ferretdb_node_state="absent").changed("localhost") == 0


def test_tls_listener_restarts_on_change_and_requires_a_client_certificate(node, built, tmp_path):
    pytest.importorskip("cryptography")
    from pki import Authority

    (tmp_path / "pki").mkdir()
    authority = Authority(str(tmp_path / "pki"))
    cert, key = authority.issue("ferretdb", names=[HOST], server=True)
    client_cert, client_key = authority.issue("mongodb-client", server=False, client=True)
    combined = str(tmp_path / "client-combined.pem")
    with open(combined, "w", encoding="utf-8") as out:
        for part in (client_cert, client_key):
            with open(part, encoding="utf-8") as handle:
                out.write(handle.read())

    first = _run(node).task(DAEMON)["pid"]
    tls_port = built.free_port()
    tls = dict(
        node,
        ferretdb_node_tls_port=tls_port,
        ferretdb_node_tls_cert_file=cert,
        ferretdb_node_tls_key_file=key,
        ferretdb_node_tls_ca_file=authority.ca_file,
    )
    try:
        restarted = _run(tls).task(DAEMON)
        assert restarted["actions"] == ["stop", "start"] and restarted["pid"] != first
        assert not process.pid_alive(first)
        argv = process.pid_cmdline(restarted["pid"])
        assert key in argv and not any("PRIVATE KEY" in arg for arg in argv)
        facts = _hello(built, tls_port, tls=True, tls_ca_file=authority.ca_file, tls_certificate_key_file=combined)
        assert facts["role"] == "standalone"
        with pytest.raises(mongodb.MongoAdminError):
            _hello(built, tls_port, tls=True, tls_ca_file=authority.ca_file)
        assert _run(tls).changed("localhost") == 0

        # a renewed certificate (same file name, new content) restarts the server too
        assert authority.issue("ferretdb", names=[HOST], server=True) == (cert, key)
        renewed = _run(tls).task(DAEMON)
        assert renewed["actions"] == ["stop", "start"]
    finally:
        _run(tls, ferretdb_node_state="stopped")
        _stop_left(os.path.join(node["ferretdb_node_dir"], "ferretdb.pid"), [node["ferretdb_node_port"], tls_port])


def test_refusals_name_the_variable(node, tmp_path):
    missing = run_playbook(PLAYBOOK, INVENTORY, dict(node, ferretdb_node_binary=str(tmp_path / "no-such-program")))
    assert missing.returncode != 0
    assert missing.task(REFUSE)["msg"].startswith("ferretdb_node_binary: no FerretDB program at ")
    no_key = run_playbook(PLAYBOOK, INVENTORY, dict(node, ferretdb_node_tls_port=node["ferretdb_node_port"] + 1))
    assert no_key.returncode != 0
    assert no_key.task(REFUSE)["msg"].startswith("ferretdb_node_tls_port: a TLS listener needs ")
    assert not process.port_open(HOST, node["ferretdb_node_port"])


def test_lab_up_and_down_with_only_a_mongodb_group(built, load_driver_home, tmp_path):
    """The lab playbooks start the mongodb group's server, report it healthy, change nothing the second time, and
    lab_down stops it (the load driver play finds the run's install in place)."""
    port = built.free_port()
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        yaml.safe_dump(
            {
                "all": {
                    "vars": {
                        "ansible_connection": "local",
                        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                        "tactician_lab_dir": os.path.dirname(load_driver_home),
                        "tactician_load_driver_home": load_driver_home,
                        "ferretdb_node_base_dir": str(tmp_path / "lab"),
                    },
                    "children": {
                        "controller": {"hosts": {"localhost": None}},
                        "mongodb": {
                            "hosts": {"it-mongodb1": {"ferretdb_node_listen_address": HOST, "ferretdb_node_port": port}}
                        },
                    },
                }
            }
        )
    )
    pid_file = str(tmp_path / "lab" / "mongodb" / str(port) / "ferretdb.pid")
    try:
        up = run_playbook("playbooks/lab_up.yml", str(inventory))
        assert up.returncode == 0, up.stderr[-5000:]
        assert process.running_pid(pid_file)
        report = up.task("Report")["msg"]
        assert "MongoDB: healthy (1 server)" in report
        assert any(line.startswith("  127.0.0.1:%d standalone" % port) for line in report), report
        again = run_playbook("playbooks/lab_up.yml", str(inventory))
        assert again.returncode == 0 and again.changed("it-mongodb1") == 0, again.stats
    finally:
        down = run_playbook("playbooks/lab_down.yml", str(inventory))
        assert down.returncode == 0, down.stderr[-5000:]
        _stop_left(pid_file, [port])
    assert not os.path.exists(pid_file)
