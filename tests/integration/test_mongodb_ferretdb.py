"""MongoDB code paths against FerretDB 1.24 (a MongoDB-compatible server; tests/ferretdb), started once per run by
the `ferretdb` fixture (tests/integration/conftest.py) on a free loopback port.

What FerretDB implements and what it lacks is in docs/testing-mongodb.md; the last tests pin what it lacks, so a
FerretDB upgrade that adds one of those commands shows up here (and the code path can move off recorded replies).
"""

from __future__ import annotations

import os
import socket
import uuid

import pytest
from ansible_run import ROOT, run_playbook
from pymongo import ASCENDING, DESCENDING
from pymongo.errors import OperationFailure

from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import client as mongodb

pytestmark = pytest.mark.integration

PLAYBOOK = os.path.join(ROOT, "tests", "integration", "playbooks", "mongodb_health.yml")
INDEX_PLAYBOOK = os.path.join(ROOT, "tests", "integration", "playbooks", "mongodb_index.yml")
INVENTORY = os.path.join(ROOT, "tests", "integration", "inventory", "localhost.yml")
TASK = "MongoDB health"


@pytest.fixture
def client(ferretdb):
    client = mongodb.connect(ferretdb.params())
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def database(client):
    """A database of this test's own (FerretDB runs once for the whole session), dropped at the end."""
    name = "it_%s" % uuid.uuid4().hex[:10]
    try:
        yield client[name]
    finally:
        client.drop_database(name)


def _closed_port():
    """A loopback port nobody listens on: the kernel hands out a free one, and it is closed again at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _health(ferretdb, check=False, **extra_vars):
    extra = {"mongodb_host": ferretdb.host, "mongodb_port": ferretdb.port}
    extra.update(extra_vars)
    return run_playbook(PLAYBOOK, INVENTORY, extra, check=check)


# --- connection and server facts ---------------------------------------------------------------------------


def test_server_facts_through_connect_use_hello(ferretdb, client):
    facts = mongodb.server_facts(client)
    assert facts["role"] == "standalone"
    assert facts["set_name"] is None
    assert facts["version"].startswith("7.0.")
    assert facts["max_wire_version"] == 21
    # hello itself answers (no isMaster fallback on this server)
    assert client.admin.command("hello")["isWritablePrimary"] is True


def test_module_reports_the_server_healthy(ferretdb):
    result = _health(ferretdb)
    assert result.returncode == 0, result.stderr + str(result.data)[-3000:]
    task = result.task(TASK)
    assert task["healthy"] is True
    assert task["changed"] is False
    assert task["server"]["role"] == "standalone"
    assert task["server"]["version"].startswith("7.0.")
    assert task["server"]["max_wire_version"] == 21


def test_module_runs_in_check_mode(ferretdb):
    result = _health(ferretdb, check=True)
    assert result.returncode == 0, result.stderr + str(result.data)[-3000:]
    task = result.task(TASK)
    assert task["healthy"] is True
    assert task["changed"] is False


def test_module_rejects_an_unsupported_auth_mechanism(ferretdb):
    result = _health(ferretdb, mongodb_user="tactician", mongodb_password="unused", mongodb_auth_mechanism="PLAIN")
    assert result.returncode != 0
    task = result.task(TASK)
    assert task.get("failed") is True
    message = task["msg"]
    assert "auth_mechanism" in message
    assert "SCRAM-SHA-256" in message and "SCRAM-SHA-1" in message
    assert "PLAIN" in message
    assert "unused" not in str(task)


def test_module_reports_an_unreachable_server_unhealthy(ferretdb):
    result = _health(
        ferretdb,
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


# --- indexes and statistics --------------------------------------------------------------------------------


def test_create_list_use_and_drop_indexes(database):
    orders = database["orders"]
    orders.insert_many(
        [{"customer": f"c{i % 7:02d}", "status": "open" if i % 3 else "done", "total": i} for i in range(50)]
    )
    reply = database.command(
        "createIndexes",
        "orders",
        indexes=[
            {"key": {"customer": ASCENDING, "total": DESCENDING}, "name": "customer_1_total_-1"},
            {"key": {"status": ASCENDING}, "name": "status_1"},
        ],
    )
    assert reply["ok"] == 1.0
    assert reply["numIndexesAfter"] == reply["numIndexesBefore"] + 2

    info = orders.index_information()
    assert set(info) == {"_id_", "customer_1_total_-1", "status_1"}
    assert info["customer_1_total_-1"]["key"] == [("customer", 1), ("total", -1)]
    assert orders.count_documents({"customer": "c03", "total": {"$gt": 10}}) == 5

    orders.drop_index("status_1")
    assert {spec["name"] for spec in orders.list_indexes()} == {"_id_", "customer_1_total_-1"}


def test_the_server_refuses_conflicting_indexes_as_mongodb_does(database):
    """A real server's refusals (the test double accepted both): the same keys under another name, IndexOptionsConflict
    (85); another index under a name in use, IndexKeySpecsConflict (86). mongodb_index compares listIndexes first
    and refuses these itself, so they reach a server only from other clients."""
    orders = database["orders"]
    orders.create_index([("customer", ASCENDING)], name="by_customer")
    assert _refused(lambda: orders.create_index([("customer", ASCENDING)], name="customer_again")).code == 85
    assert _refused(lambda: orders.create_index([("status", ASCENDING)], name="by_customer")).code == 86


def test_db_stats_and_coll_stats_have_the_fields_the_code_reads(database):
    database["orders"].insert_many([{"i": i, "pad": "x" * 100} for i in range(40)])
    db_stats = database.command("dbStats")
    assert db_stats["objects"] == 40 and db_stats["dataSize"] > 0
    (coll_stats,) = database["orders"].aggregate([{"$collStats": {"storageStats": {}, "count": {}}}])
    storage = coll_stats["storageStats"]
    assert storage["count"] == 40
    assert storage["size"] > 0 and storage["storageSize"] > 0
    assert coll_stats["count"] == 40
    facts = mongodb.collection_facts(coll_stats, [])
    assert facts["documents"] == 40 and facts["data_bytes"] == storage["size"]


def test_observe_runs_and_reads_collections_and_indexes(ferretdb, client, database):
    """observe end to end: no opcounters here (rates are 0), but dbStats, $collStats and listIndexes answer, so
    the data size, document counts and indexes are the server's own ($indexStats is missing: accesses None)."""
    from ansible_collections.tactician.nosql.plugins.module_utils.stores import probes as observe_stores
    from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import observer as observe

    database.orders.insert_many([{"i": i} for i in range(50)])
    database.orders.create_index("i")
    params = dict(
        store="mongodb",
        nodes=[{"address": ferretdb.address}],
        auth_source="admin",
        connect_timeout=5.0,
    )
    with observe_stores.Probes(params) as probes:
        result = observe.observe(probes, "mongodb", "it", duration=2, interval=1)
    sample = result["samples"][0]
    assert sample["store"] == "mongodb" and sample["throughput"] == 0.0
    facts = sample["extra"]["collections"]["%s.orders" % database.name]
    assert facts["documents"] == 50
    assert facts["data_bytes"] > 0
    assert set(facts["indexes"]) == {"_id_", "i_1"}
    assert facts["indexes"]["i_1"]["key"] == {"i": 1} and facts["indexes"]["i_1"]["accesses"] is None


def test_index_tactics_playbook_twice(ferretdb):
    """mongodb_index end to end (check mode, create, unchanged, diff, unique partial, recreate, drop) without the
    TTL steps, which FerretDB refuses: the playbook then checks that refusal instead."""
    extra = {
        "mongodb_host": ferretdb.host,
        "mongodb_port": ferretdb.port,
        "mongodb_database": "it_index_tactics",
        "mongodb_ttl": False,
        "mongodb_partial": False,
    }
    for _run in range(2):
        result = run_playbook(INDEX_PLAYBOOK, INVENTORY, extra)
        assert result.returncode == 0, result.stderr[-5000:]
    assert result.task("Created once, found again")["msg"] == "All assertions passed"


def _ycsb(driver_home, address, workload, database, threads, records, operations, **options):
    """YCSB workload (load, then run) through the load driver's MongoDB binding against address; (load, run)."""
    from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run as loadrun

    params = dict(
        store="mongodb",
        hosts=[address],
        driver_home=driver_home,
        threads=threads,
        processes=1,
        target=0,
        workload=workload,
        phases=["load", "run"],
        reload=True,
        database=database,
        properties={"recordcount": records, "operationcount": operations},
        **options,
    )
    load, run = loadrun.execute(params, loadrun.plan(params))
    assert load["operations"]["insert"]["count"] == records and load["failed_total"] == 0
    assert run["failed_total"] == 0
    return load, run


def test_load_driver_runs_workload_a(ferretdb, load_driver_home):
    """The MongoDB binding of the load driver (Java sync driver) loads and runs YCSB workload A."""
    _load, run = _ycsb(load_driver_home, ferretdb.address, "a", "ycsb_it", threads=8, records=1000, operations=2000)
    assert run["operations"]["read"]["count"] + run["operations"]["update"]["count"] == 2000


def test_load_driver_scans_workload_e(ferretdb, load_driver_home):
    """The binding's scans ($gte on _id, sorted, limited) on YCSB workload E, 0 failures."""
    _load, run = _ycsb(load_driver_home, ferretdb.address, "e", "ycsb_it_e", threads=4, records=300, operations=200)
    assert run["operations"]["scan"]["count"] > 0
    assert run["operations"]["scan"]["count"] + run["operations"].get("insert", {}).get("count", 0) == 200


# --- TLS: a FerretDB of this module's own with a TLS listener that requires a client certificate --------------


@pytest.fixture(scope="module")
def ferretdb_tls(tmp_path_factory):
    """FerretDB with a TLS listener (server certificate naming 127.0.0.1 only, client certificates of the CA
    required) beside its plain one; yields (server, files), stops it by its PID at the end."""
    pytest.importorskip("cryptography")
    from conftest import _ferretdb_module
    from pki import Authority

    server_module = _ferretdb_module()
    reason = server_module.missing()
    if reason:
        pytest.skip("FerretDB cannot run here: " + reason)
    folder = tmp_path_factory.mktemp("ferretdb-tls")
    authority = Authority(str(folder))
    cert, key = authority.issue("ferretdb", names=["127.0.0.1"], server=True)
    client_cert, client_key = authority.issue("mongodb-client", server=False, client=True)
    combined = os.path.join(str(folder), "client-combined.pem")
    with open(combined, "w", encoding="utf-8") as out:
        for part in (client_cert, client_key):
            with open(part, encoding="utf-8") as handle:
                out.write(handle.read())
    other = Authority(str(tmp_path_factory.mktemp("other-ca")), name="another CA")
    files = {
        "ca": authority.ca_file,
        "client": combined,
        "other_ca": other.ca_file,
    }
    server = server_module.FerretDB(str(folder / "server"), tls={"cert": cert, "key": key, "ca": authority.ca_file})
    try:
        server.start()
        yield server, files
    finally:
        left = server.stop()
        assert not left, "left running by the FerretDB TLS fixture: %s" % left


def _tls_facts(server, host="127.0.0.1", **options):
    from conftest import _ferretdb_module

    params = server.params(login_host=host, login_port=server.tls_port, tls=True, connect_timeout=3.0)
    return _ferretdb_module().server_facts(dict(params, **options))


def test_tls_with_a_client_certificate_verified_both_ways(ferretdb_tls):
    server, files = ferretdb_tls
    facts = _tls_facts(server, tls_ca_file=files["ca"], tls_certificate_key_file=files["client"])
    assert facts["role"] == "standalone" and facts["max_wire_version"] == 21


def test_tls_refusals(ferretdb_tls):
    """No client certificate, a server certificate of another CA, and a name the certificate does not hold are
    each refused; the hostname check alone is turned off by tls_allow_invalid_hostnames."""
    server, files = ferretdb_tls
    with pytest.raises(mongodb.MongoAdminError):
        _tls_facts(server, tls_ca_file=files["ca"])
    with pytest.raises(mongodb.MongoAdminError, match="(?i)certificate"):
        _tls_facts(server, tls_ca_file=files["other_ca"], tls_certificate_key_file=files["client"])
    with pytest.raises(mongodb.MongoAdminError, match="(?i)hostname|match|certificate"):
        _tls_facts(server, host="localhost", tls_ca_file=files["ca"], tls_certificate_key_file=files["client"])
    facts = _tls_facts(
        server,
        host="localhost",
        tls_ca_file=files["ca"],
        tls_certificate_key_file=files["client"],
        tls_allow_invalid_hostnames=True,
    )
    assert facts["role"] == "standalone"


def test_observe_over_tls_with_the_store_neutral_options(ferretdb_tls):
    """observe's probes reach MongoDB over TLS with ca_file and client_cert_file (params_from_any)."""
    from ansible_collections.tactician.nosql.plugins.module_utils.stores import probes as observe_stores
    from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import observer as observe

    server, files = ferretdb_tls
    params = dict(
        store="mongodb",
        nodes=[{"address": "127.0.0.1:%d" % server.tls_port}],
        tls=True,
        ca_file=files["ca"],
        client_cert_file=files["client"],
        connect_timeout=5.0,
    )
    with observe_stores.Probes(params) as probes:
        result = observe.observe(probes, "mongodb", "it", duration=1, interval=1)
    sample = result["samples"][0]
    assert sample["store"] == "mongodb" and sample["throughput"] == 0.0
    assert isinstance(sample["extra"]["collections"], dict)


def test_load_driver_over_tls_with_a_client_certificate(ferretdb_tls, load_driver_home):
    """The binding's TLS (the load driver's Tls class: the CA, the client certificate and its key from one PEM
    file, the hostname checked) on YCSB workload A."""
    server, files = ferretdb_tls
    _load, run = _ycsb(
        load_driver_home,
        "127.0.0.1:%d" % server.tls_port,
        "a",
        "ycsb_it_tls",
        threads=2,
        records=200,
        operations=200,
        tls=True,
        ca_file=files["ca"],
        # one PEM file with the certificate and its key, as the MongoDB adapter takes it
        client_cert_file=files["client"],
    )
    assert run["operations"]["read"]["count"] + run["operations"]["update"]["count"] == 200


# --- what FerretDB 1.24 lacks (these paths run against recorded replies) -----------------------------------


def _refused(call):
    with pytest.raises(OperationFailure) as refused:
        call()
    return refused.value


def test_ferretdb_lacks_what_docs_list_as_recorded_only(client, database):
    """docs/testing-mongodb.md lists these as served by recorded replies only; fail loudly if that changes."""
    admin = client.admin
    status = admin.command("serverStatus")
    assert "opcounters" not in status
    assert "wiredTiger" not in status
    assert "repl" not in status
    coll = database["probe"]
    coll.insert_one({"expiresAt": None})
    assert "expireAfterSeconds" in str(_refused(lambda: coll.create_index("expiresAt", expireAfterSeconds=60)))
    assert "$indexStats" in str(_refused(lambda: list(coll.aggregate([{"$indexStats": {}}]))))
    assert "partialFilterExpression" in str(
        _refused(lambda: coll.create_index("a", partialFilterExpression={"a": {"$exists": True}}))
    )
    # sparse is taken but not kept: listIndexes shows no sparse field (a second mongodb_index run would see a change)
    coll.create_index("b", sparse=True)
    assert "sparse" not in coll.index_information()["b_1"]
    assert _refused(lambda: database.command("collMod", "probe")).code == 238  # NotImplemented
    assert _refused(lambda: admin.command("setParameter", 1, ttlMonitorSleepSecs=5)).code == 59  # CommandNotFound
    for name in (
        "internalQueryMaxBlockingSortMemoryUsageBytes",
        "ttlMonitorSleepSecs",
        "wiredTigerEngineRuntimeConfig",
    ):
        assert _refused(lambda name=name: admin.command("getParameter", 1, **{name: 1})).code == 72  # InvalidOptions
    assert _refused(lambda: database.command("profile", -1)).code == 59
    assert _refused(lambda: admin.command("createUser", "u", pwd="p", roles=[])).code == 59
    assert _refused(lambda: admin.command("replSetGetStatus")).code == 59


def test_ferretdb_offers_no_scram(ferretdb):
    """SCRAM is checked only as client options (unit tests): FerretDB 1.24 on SQLite offers PLAIN only, which the
    collection does not allow."""
    assert admin_mechanisms(ferretdb) == ["PLAIN"]
    client = mongodb.connect(ferretdb.params(login_user="tactician", login_password="unused", connect_timeout=2.0))
    try:
        with pytest.raises(mongodb.MongoAdminError, match="SCRAM"):
            mongodb.server_facts(client)
    finally:
        client.close()


def admin_mechanisms(ferretdb):
    client = mongodb.connect(ferretdb.params())
    try:
        return client.admin.command("getParameter", "*")["authenticationMechanisms"]
    finally:
        client.close()
