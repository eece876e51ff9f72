"""MongoDB code paths against the in-memory stand-in (mongo-java-server on 127.0.0.1:27117).

What the stand-in can and cannot stand in for is in docs/testing-mongodb.md; the last test pins those limits,
so a stand-in upgrade that lifts one of them shows up here.
"""

from __future__ import annotations

import datetime
import importlib.util
import os
import socket
import sys

import pytest
from ansible_run import ROOT, run_playbook
from pymongo import ASCENDING, DESCENDING
from pymongo.errors import OperationFailure

from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import client as mongodb

pytestmark = pytest.mark.integration

PLAYBOOK = os.path.join(ROOT, "tests", "integration", "playbooks", "mongodb_health.yml")
INVENTORY = os.path.join(ROOT, "tests", "integration", "inventory", "localhost.yml")
TASK = "MongoDB health"
INDEX_STATS_FIELDS = {"name", "key", "host", "accesses", "spec"}


def _load_standin():
    path = os.path.join(ROOT, "tests", "mongodb_standin", "standin.py")
    spec = importlib.util.spec_from_file_location("tactician_mongodb_standin", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


standin = _load_standin()
mongodb_standin = standin.pytest_fixture(scope="module")


@pytest.fixture
def client(mongodb_standin):
    client = mongodb.connect(mongodb_standin.params())
    try:
        yield client
    finally:
        client.close()


def _closed_port():
    """A loopback port nobody listens on: the kernel hands out a free one, and it is closed again at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _health(mongodb_standin, **extra_vars):
    extra = {"mongodb_host": mongodb_standin.host, "mongodb_port": mongodb_standin.port}
    extra.update(extra_vars)
    return run_playbook(PLAYBOOK, INVENTORY, extra)


def test_server_facts_through_connect(mongodb_standin, client):
    facts = mongodb.server_facts(client)
    assert facts["role"] == "standalone"
    assert facts["set_name"] is None
    assert facts["version"].startswith(mongodb_standin.version + ".")
    assert isinstance(facts["max_wire_version"], int) and facts["max_wire_version"] >= 6


def test_module_reports_the_standin_healthy(mongodb_standin):
    result = _health(mongodb_standin)
    assert result.returncode == 0, result.stderr + str(result.data)[-3000:]
    task = result.task(TASK)
    assert task["healthy"] is True
    assert task["changed"] is False
    assert task["server"]["role"] == "standalone"
    assert task["server"]["version"].startswith(mongodb_standin.version + ".")


def test_module_runs_in_check_mode(mongodb_standin):
    result = run_playbook(
        PLAYBOOK, INVENTORY, {"mongodb_host": mongodb_standin.host, "mongodb_port": mongodb_standin.port}, check=True
    )
    assert result.returncode == 0, result.stderr + str(result.data)[-3000:]
    task = result.task(TASK)
    assert task["healthy"] is True
    assert task["changed"] is False


def test_module_rejects_an_unsupported_auth_mechanism(mongodb_standin):
    result = _health(
        mongodb_standin, mongodb_user="tactician", mongodb_password="unused", mongodb_auth_mechanism="PLAIN"
    )
    assert result.returncode != 0
    task = result.task(TASK)
    assert task.get("failed") is True
    message = task["msg"]
    assert "auth_mechanism" in message
    assert "SCRAM-SHA-256" in message and "SCRAM-SHA-1" in message
    assert "PLAIN" in message
    assert "unused" not in str(task)


def test_module_reports_an_unreachable_server_unhealthy(mongodb_standin):
    result = _health(
        mongodb_standin,
        mongodb_port=_closed_port(),
        mongodb_connect_timeout=1.0,
        mongodb_fail_when_unhealthy=False,
    )
    assert result.returncode == 0, result.stderr + str(result.data)[-3000:]
    task = result.task(TASK)
    assert task["healthy"] is False
    assert not task.get("failed")
    assert task["error"]
    assert "server" not in task


def test_create_indexes_and_index_stats(client):
    db = client["tactician_index_tactics"]
    try:
        orders = db["orders"]
        orders.insert_many(
            [
                {"customer": f"c{i % 7:02d}", "status": "open" if i % 3 else "done", "total": i, "expiresAt": None}
                for i in range(50)
            ]
        )
        reply = db.command(
            "createIndexes",
            "orders",
            indexes=[
                {"key": {"customer": ASCENDING, "total": DESCENDING}, "name": "customer_1_total_-1"},
                {"key": {"status": ASCENDING}, "name": "status_1"},
            ],
        )
        assert reply["ok"] == 1.0
        assert reply["numIndexesAfter"] == reply["numIndexesBefore"] + 2
        assert (
            orders.create_index([("expiresAt", ASCENDING)], name="expiresAt_1", expireAfterSeconds=3600)
            == "expiresAt_1"
        )

        info = orders.index_information()
        assert info["customer_1_total_-1"]["key"] == [("customer", 1), ("total", -1)]
        assert info["expiresAt_1"]["expireAfterSeconds"] == 3600

        assert orders.count_documents({"customer": "c03", "total": {"$gt": 10}}) > 0

        stats = {entry["name"]: entry for entry in orders.aggregate([{"$indexStats": {}}])}
        assert set(stats) == {"_id_", "customer_1_total_-1", "status_1", "expiresAt_1"}
        for entry in stats.values():
            assert INDEX_STATS_FIELDS <= set(entry), entry
            assert entry["key"] == entry["spec"]["key"]
            assert entry["accesses"]["ops"] >= 0
            assert isinstance(entry["accesses"]["since"], datetime.datetime)
        assert dict(stats["customer_1_total_-1"]["key"]) == {"customer": 1, "total": -1}

        orders.drop_index("status_1")
        remaining = {entry["name"] for entry in orders.aggregate([{"$indexStats": {}}])}
        assert remaining == {"_id_", "customer_1_total_-1", "expiresAt_1"}
    finally:
        client.drop_database("tactician_index_tactics")


def test_standin_limits_are_as_documented(client):
    """docs/testing-mongodb.md lists these as served by recorded replies only; fail loudly if that changes."""
    admin = client.admin
    with pytest.raises(OperationFailure) as no_hello:
        admin.command("hello")
    assert no_hello.value.code == 59  # CommandNotFound: server_facts falls back to isMaster here
    status = admin.command("serverStatus")
    assert "opcounters" not in status
    assert "wiredTiger" not in status
    with pytest.raises(OperationFailure):
        admin.command("getParameter", 1, internalQueryMaxBlockingSortMemoryUsageBytes=1)
    with pytest.raises(OperationFailure):
        admin.command("replSetGetStatus")
    db = client["tactician_limits"]
    try:
        with pytest.raises(OperationFailure):
            list(db["probe"].aggregate([{"$collStats": {"storageStats": {}}}]))
    finally:
        client.drop_database("tactician_limits")


def test_standin_has_no_authentication(mongodb_standin):
    """SCRAM is only checked as client options (unit tests); the stand-in knows no saslStart."""
    client = mongodb.connect(
        mongodb_standin.params(login_user="tactician", login_password="unused", connect_timeout=2.0)
    )
    try:
        with pytest.raises(mongodb.MongoAdminError, match="saslStart"):
            mongodb.server_facts(client)
    finally:
        client.close()


def test_load_driver_runs_workload_a_against_the_standin(mongodb_standin):
    """The MongoDB binding of the load driver (Java sync driver) loads and runs YCSB workload A on the stand-in."""
    lab_dir = os.path.join(ROOT, ".lab", "test")
    install = run_playbook(
        os.path.join(ROOT, "tests", "integration", "playbooks", "load_driver.yml"),
        os.path.join(ROOT, "tests", "integration", "inventory", "localhost.yml"),
        {"lab_dir": lab_dir},
    )
    assert install.returncode == 0, install.stderr
    from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run as loadrun

    params = dict(
        store="mongodb",
        hosts=["%s:%d" % (mongodb_standin.host, mongodb_standin.port)],
        driver_home=os.path.join(lab_dir, "load-driver"),
        threads=8,
        processes=1,
        target=0,
        workload="a",
        phases=["load", "run"],
        reload=True,
        database="ycsb_it",
        properties={"recordcount": 1000, "operationcount": 2000},
    )
    load, run = loadrun.execute(params, loadrun.plan(params))
    assert load["operations"]["insert"]["count"] == 1000 and load["failed_total"] == 0
    assert run["operations"]["read"]["count"] + run["operations"]["update"]["count"] == 2000
    assert run["failed_total"] == 0


def test_observe_runs_on_the_standin_and_lists_collections_and_indexes(mongodb_standin, client):
    """observe end to end on the stand-in: it has no opcounters (rates are 0) but dbStats, listIndexes and
    $indexStats answer, so the collection and index facts are real."""
    from ansible_collections.tactician.nosql.plugins.module_utils.stores import probes as observe_stores
    from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import observer as observe

    client.obs_it.orders.insert_many([{"i": i} for i in range(50)])
    client.obs_it.orders.create_index("i")
    params = dict(
        store="mongodb",
        nodes=[{"address": "%s:%d" % (mongodb_standin.host, mongodb_standin.port)}],
        auth_source="admin",
        connect_timeout=5.0,
    )
    with observe_stores.Probes(params) as probes:
        result = observe.observe(probes, "mongodb", "it", duration=2, interval=1)
    sample = result["samples"][0]
    assert sample["store"] == "mongodb" and sample["throughput"] == 0.0
    assert set(sample["extra"]["collections"]["obs_it.orders"]["indexes"]) == {"_id_", "i_1"}


def test_index_tactics_against_the_standin(mongodb_standin):
    playbook = os.path.join(ROOT, "tests", "integration", "playbooks", "mongodb_index.yml")
    extra = {"mongodb_host": mongodb_standin.host, "mongodb_port": mongodb_standin.port}
    first = run_playbook(playbook, INVENTORY, extra)
    assert first.returncode == 0, first.stderr
    again = run_playbook(playbook, INVENTORY, extra)
    assert again.returncode == 0, again.stderr
