"""playbooks/rolling_reconfigure.yml with tactician_store=mongodb against FerretDB 1.24 (the session `ferretdb`
fixture, tests/integration/conftest.py), a MongoDB-compatible server that is a standalone: hello has no setName and
replSetGetStatus is not implemented.

What runs here for real: the roll's first play reads the server (module mongodb_replica_set: hello), finds a
standalone and refuses it (no redundancy) unless tactician_aggressive; with it, the whole roll runs - the check
right before and right after the node, the node's step (no settings: nothing to change), the lock taken and
released. What cannot run here - the replica set's members and lag, the order secondaries-first, the step down of
a primary, setParameter - runs on replies written from the MongoDB manual in
tests/unit/plugins/module_utils/apply/test_mongodb_roll.py (docs/testing-mongodb.md).
"""

from __future__ import annotations

import os
import socket

import pytest
import yaml
from ansible_run import ROOT, run_playbook

pytestmark = pytest.mark.integration

ROLL = os.path.join(ROOT, "playbooks", "rolling_reconfigure.yml")
CHECK = "Check the whole replica set before the roll"
LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}


def _inventory(tmp_path, port):
    """One inventory group `mongodb` whose one host is the FerretDB server (no service: live settings only)."""
    node = dict(LOCAL, tactician_node_address="127.0.0.1", tactician_node_port=port)
    inventory = {"all": {"hosts": {"localhost": LOCAL}, "children": {"mongodb": {"hosts": {"ferret1": node}}}}}
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(inventory))
    return str(path)


def _closed_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _roll(tmp_path, port, **extra):
    locks = tmp_path / "locks"
    variables = {"tactician_store": "mongodb", "tactician_lock_dir": str(locks), "tactician_settings": {}}
    variables.update(extra)
    return run_playbook(ROLL, _inventory(tmp_path, port), variables), locks


def test_a_standalone_is_refused_without_aggressive(ferretdb, tmp_path):
    result, locks = _roll(tmp_path, ferretdb.port)
    assert result.returncode != 0
    task = result.task(CHECK)
    assert task.get("failed") is True
    message = task["msg"]
    assert message.startswith("aggressive:")
    assert "127.0.0.1:%d is a standalone mongod" % ferretdb.port in message
    assert "no redundancy" in message and "R = RF - CL = 1 - 1 = 0" in message
    assert "tactician_aggressive=true" in message
    # refused before the lock: nothing taken, nothing touched
    assert not locks.exists() or not list(locks.iterdir())
    assert not any(host == "ferret1" for _task, host, _res in result.results)


def test_a_standalone_rolls_with_aggressive_checked_before_and_after(ferretdb, tmp_path):
    result, locks = _roll(tmp_path, ferretdb.port, tactician_aggressive=True)
    assert result.returncode == 0, result.stderr
    planned = result.task(CHECK)
    assert planned["healthy"] is True
    assert planned["replica_set"]["kind"] == "standalone"
    assert planned["order"] == ["127.0.0.1:%d" % ferretdb.port]
    assert planned["rule"]["available"] is False and planned["rule"]["serial"] == 1
    checks = [
        res
        for task, host, res in result.results
        if host == "ferret1" and task and task.startswith("Check the whole replica set ")
    ]
    assert len(checks) == 2, [t for t, _h, _r in result.results]
    assert all(res["healthy"] and res["replica_set"]["kind"] == "standalone" for res in checks)
    step = result.task(
        "Apply the live settings (setParameter), written to tactician_config_file when the inventory names it",
        host="ferret1",
    )
    assert step["changed"] is False
    shown = result.task("Show the plan of the roll")["msg"]
    assert "AGGRESSIVE: the cluster is not available at MAJORITY during the roll" in shown
    assert not list(locks.iterdir())  # released at the end


def test_an_unreachable_member_stops_the_roll_before_the_lock(ferretdb, tmp_path):
    result, locks = _roll(tmp_path, _closed_port(), tactician_aggressive=True, tactician_rolling_guard_wait_s=2)
    assert result.returncode != 0
    task = result.task(CHECK)
    assert task["stopped"] == "cluster not ready" and task["touched"] is False
    assert "not healthy after" in task["msg"] and "could not be read" in task["msg"]
    assert not locks.exists() or not list(locks.iterdir())
