"""Unit tests of the MongoDB adapter (plugins/module_utils/stores/mongodb/client.py) without a server.

client_kwargs is checked against pymongo itself (MongoClient(connect=False) validates every option);
server_facts runs against a fake client that replays the recorded replies in tests/fixtures/mongodb.
"""

from __future__ import annotations

import os
import re

import pytest
import yaml
from bson import json_util
from pymongo import MongoClient
from pymongo.errors import OperationFailure, ServerSelectionTimeoutError
from testlib import FIXTURES

from ansible_collections.tactician.nosql.plugins.doc_fragments.mongodb import ModuleDocFragment
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import client as mongodb

FIXTURES = os.path.join(FIXTURES, "mongodb")

# Every recorded reply and the fields of it the collection relies on (dotted paths).
RECORDED = {
    "hello_standalone.json": ["isWritablePrimary", "maxWireVersion", "minWireVersion", "topologyVersion", "ok"],
    "hello_standalone_7.0.json": ["isWritablePrimary", "maxWireVersion", "ok"],
    "hello_primary.json": ["isWritablePrimary", "secondary", "setName", "hosts", "primary", "me", "electionId"],
    "hello_secondary.json": ["isWritablePrimary", "secondary", "setName", "hosts", "primary", "me"],
    "hello_mongos.json": ["isWritablePrimary", "msg", "maxWireVersion"],
    "repl_set_get_status_8.0.json": [
        "set",
        "votingMembersCount",
        "members.0.name",
        "members.0.health",
        "members.0.stateStr",
        "members.0.optimeDate",
        "members.0.optime.ts",
        "members.0.self",
        "members.1.stateStr",
        "members.1.optimeDate",
    ],
    "build_info_8.0.json": ["version", "versionArray", "gitVersion", "storageEngines", "ok"],
    "build_info_7.0.json": ["version", "versionArray", "gitVersion", "storageEngines", "ok"],
    "server_status_primary_8.0.json": [
        "uptime",
        "connections.current",
        "connections.available",
        "mem.resident",
        "mem.virtual",
        "opcounters.insert",
        "opcounters.query",
        "opcounters.update",
        "opcounters.delete",
        "opcounters.getmore",
        "opcounters.command",
        "metrics.ttl.deletedDocuments",
        "metrics.ttl.passes",
        "repl.setName",
        "storageEngine.name",
        "wiredTiger.cache.bytes currently in the cache",
        "wiredTiger.cache.maximum bytes configured",
        "wiredTiger.cache.pages read into cache",
        "wiredTiger.cache.pages requested from the cache",
        "wiredTiger.cache.tracked dirty bytes in the cache",
    ],
    "coll_stats_storage_stats.json": [
        "0.ns",
        "0.storageStats.size",
        "0.storageStats.count",
        "0.storageStats.storageSize",
        "0.storageStats.totalIndexSize",
        "0.storageStats.indexSizes",
        "0.storageStats.wiredTiger.cache.bytes currently in the cache",
    ],
    "index_stats.json": ["0.name", "0.key", "0.host", "0.accesses.ops", "0.accesses.since", "0.spec"],
    "get_parameter.json": [
        "internalQueryMaxBlockingSortMemoryUsageBytes",
        "wiredTigerEngineRuntimeConfig",
        "ttlMonitorSleepSecs",
        "ok",
    ],
    "set_parameter_wiredtiger_cache.json": ["was", "ok"],
}


def load_fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return json_util.loads(handle.read())


def dig(document, dotted):
    """The value at a dotted path (list items by index); WiredTiger statistic names contain spaces, no dots."""
    value = document
    for part in dotted.split("."):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def params(**overrides):
    """The module parameters as AnsibleModule hands them over: every option present, defaults filled in."""
    spec = mongodb.mongodb_argument_spec()
    values = {name: option.get("default") for name, option in spec.items()}
    values.update(overrides)
    return values


# --- client_kwargs ---------------------------------------------------------------------------------------


def test_defaults_talk_to_one_local_server_without_credentials():
    kwargs = mongodb.client_kwargs(params())
    assert kwargs == {
        "host": "127.0.0.1",
        "port": 27017,
        "connectTimeoutMS": 5000,
        "serverSelectionTimeoutMS": 5000,
        "directConnection": True,
        "appname": "tactician.nosql",
    }
    MongoClient(connect=False, **kwargs).close()


def test_credentials_are_arguments_never_part_of_a_uri():
    kwargs = mongodb.client_kwargs(
        params(login_host="db1.example.net", login_user="tactician", login_password="p@ss:/w")
    )
    assert kwargs["host"] == "db1.example.net"
    assert kwargs["username"] == "tactician"
    assert kwargs["password"] == "p@ss:/w"
    assert kwargs["authSource"] == "admin"
    for value in kwargs.values():
        if isinstance(value, str):
            assert not value.startswith("mongodb"), value
            assert "p@ss" not in value or value == kwargs["password"]
    client = MongoClient(connect=False, **kwargs)
    try:
        credentials = client.options.pool_options._credentials
        assert credentials.username == "tactician"
        assert credentials.source == "admin"
    finally:
        client.close()


def test_auth_source_follows_login_database():
    kwargs = mongodb.client_kwargs(params(login_user="app", login_password="x", login_database="shop"))
    assert kwargs["authSource"] == "shop"


def test_auth_mechanism_choices_are_the_scram_variants():
    assert mongodb.AUTH_MECHANISMS == ["SCRAM-SHA-256", "SCRAM-SHA-1"]
    assert mongodb.mongodb_argument_spec()["auth_mechanism"]["choices"] == mongodb.AUTH_MECHANISMS


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-1"])
def test_auth_mechanism_is_passed_with_credentials(mechanism):
    kwargs = mongodb.client_kwargs(params(login_user="tactician", login_password="pw", auth_mechanism=mechanism))
    assert kwargs["authMechanism"] == mechanism
    client = MongoClient(connect=False, **kwargs)
    try:
        assert client.options.pool_options._credentials.mechanism == mechanism
    finally:
        client.close()


def test_no_mechanism_means_negotiation():
    kwargs = mongodb.client_kwargs(params(login_user="tactician", login_password="pw"))
    assert "authMechanism" not in kwargs


def test_auth_mechanism_without_user_sends_no_credentials():
    kwargs = mongodb.client_kwargs(params(auth_mechanism="SCRAM-SHA-256"))
    assert not {"username", "password", "authSource", "authMechanism"} & set(kwargs)


def test_tls_options(tmp_path):
    ca = tmp_path / "ca.pem"
    cert = tmp_path / "client.pem"
    kwargs = mongodb.client_kwargs(
        params(tls=True, tls_ca_file=str(ca), tls_certificate_key_file=str(cert), tls_allow_invalid_certificates=True)
    )
    assert kwargs["tls"] is True
    assert kwargs["tlsCAFile"] == str(ca)
    assert kwargs["tlsCertificateKeyFile"] == str(cert)
    assert kwargs["tlsAllowInvalidCertificates"] is True


def test_tls_without_files_is_accepted_by_pymongo():
    kwargs = mongodb.client_kwargs(params(tls=True))
    assert kwargs["tls"] is True
    assert not {"tlsCAFile", "tlsCertificateKeyFile", "tlsAllowInvalidCertificates"} & set(kwargs)
    MongoClient(connect=False, **kwargs).close()


def test_hostname_check_stays_on_unless_turned_off():
    assert "tlsAllowInvalidHostnames" not in mongodb.client_kwargs(params(tls=True))
    kwargs = mongodb.client_kwargs(params(tls=True, tls_allow_invalid_hostnames=True))
    assert kwargs["tlsAllowInvalidHostnames"] is True
    MongoClient(connect=False, **kwargs).close()


def test_store_neutral_tls_options_reach_pymongo():
    conn = mongodb.params_from_any(
        dict(tls=True, ca_file="/ca.pem", client_cert_file="/client.pem", check_hostname=False), "h:27018"
    )
    assert conn["tls_ca_file"] == "/ca.pem" and conn["tls_certificate_key_file"] == "/client.pem"
    assert conn["tls_allow_invalid_hostnames"] is True and conn["tls_allow_invalid_certificates"] is False
    with pytest.raises(mongodb.MongoAdminError, match="^client_key_file: MongoDB reads"):
        mongodb.params_from_any(dict(tls=True, client_cert_file="/c.pem", client_key_file="/k.pem"), "h:27018")


def test_tls_file_options_are_ignored_without_tls():
    kwargs = mongodb.client_kwargs(params(tls=False, tls_ca_file="/x/ca.pem", tls_allow_invalid_certificates=True))
    assert not {"tls", "tlsCAFile", "tlsAllowInvalidCertificates"} & set(kwargs)


def test_replica_set_disables_direct_connection():
    kwargs = mongodb.client_kwargs(params(replica_set="rs0", direct_connection=True))
    assert kwargs["replicaSet"] == "rs0"
    assert kwargs["directConnection"] is False
    client = MongoClient(connect=False, **kwargs)
    try:
        assert client.options.replica_set_name == "rs0"
        assert client.options.direct_connection is False
    finally:
        client.close()


def test_direct_connection_can_be_turned_off_without_replica_set():
    kwargs = mongodb.client_kwargs(params(direct_connection=False))
    assert kwargs["directConnection"] is False
    assert "replicaSet" not in kwargs


def test_connect_timeout_is_milliseconds_for_both_timeouts():
    kwargs = mongodb.client_kwargs(params(connect_timeout=2.5))
    assert kwargs["connectTimeoutMS"] == 2500
    assert kwargs["serverSelectionTimeoutMS"] == 2500


def test_connect_builds_a_client_without_contacting_the_server():
    client = mongodb.connect(params(login_port=1, connect_timeout=0.2))
    try:
        assert client.options.server_selection_timeout == 0.2
    finally:
        client.close()


def test_argument_spec_matches_the_doc_fragment():
    documented = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    spec = mongodb.mongodb_argument_spec()
    assert set(documented) == set(spec)
    for name, option in spec.items():
        doc = documented[name]
        assert doc["type"] == option["type"], name
        assert doc.get("default") == option.get("default"), name
        assert doc.get("choices") == option.get("choices"), name
    assert spec["login_password"]["no_log"] is True


# --- server_facts against recorded replies ---------------------------------------------------------------


class FakeAdmin:
    def __init__(self, replies):
        self.replies = replies
        self.calls = []

    def command(self, command, *args, **kwargs):
        name = command if isinstance(command, str) else next(iter(command))
        self.calls.append(name)
        reply = self.replies.get(name)
        if isinstance(reply, Exception):
            raise reply
        if reply is None:
            raise OperationFailure(f"no such command: '{name}'", code=59)
        return reply


class FakeClient:
    """Stands for MongoClient: client.admin.command(name) replays a recorded reply."""

    def __init__(self, replies):
        self.admin = FakeAdmin(replies)


def as_legacy_is_master(hello):
    """The isMaster reply of the same server: the writable flag is called ismaster."""
    reply = dict(hello)
    reply["ismaster"] = reply.pop("isWritablePrimary")
    return reply


ROLES = [
    (
        "hello_standalone.json",
        "build_info_8.0.json",
        {"version": "8.0.4", "role": "standalone", "set_name": None, "max_wire_version": 25},
    ),
    (
        "hello_standalone_7.0.json",
        "build_info_7.0.json",
        {"version": "7.0.15", "role": "standalone", "set_name": None, "max_wire_version": 21},
    ),
    (
        "hello_primary.json",
        "build_info_8.0.json",
        {"version": "8.0.4", "role": "primary", "set_name": "rs0", "max_wire_version": 25},
    ),
    (
        "hello_secondary.json",
        "build_info_8.0.json",
        {"version": "8.0.4", "role": "secondary", "set_name": "rs0", "max_wire_version": 25},
    ),
    (
        "hello_mongos.json",
        "build_info_8.0.json",
        {"version": "8.0.4", "role": "mongos", "set_name": None, "max_wire_version": 25},
    ),
]


@pytest.mark.parametrize(("hello", "build", "expected"), ROLES, ids=[row[0][:-5] for row in ROLES])
def test_server_facts_from_hello(hello, build, expected):
    client = FakeClient({"ping": {"ok": 1.0}, "buildInfo": load_fixture(build), "hello": load_fixture(hello)})
    assert mongodb.server_facts(client) == expected
    assert client.admin.calls == ["ping", "buildInfo", "hello"]


@pytest.mark.parametrize(("hello", "build", "expected"), ROLES, ids=[row[0][:-5] for row in ROLES])
def test_server_facts_fall_back_to_is_master(hello, build, expected):
    client = FakeClient(
        {
            "ping": {"ok": 1.0},
            "buildInfo": load_fixture(build),
            "hello": OperationFailure("no such command: 'hello'", code=59),
            "isMaster": as_legacy_is_master(load_fixture(hello)),
        }
    )
    assert mongodb.server_facts(client) == expected
    assert client.admin.calls == ["ping", "buildInfo", "hello", "isMaster"]


def test_unreachable_server_is_an_admin_error():
    client = FakeClient({"ping": ServerSelectionTimeoutError("127.0.0.1:1: [Errno 111] Connection refused")})
    with pytest.raises(mongodb.MongoAdminError, match="Connection refused"):
        mongodb.server_facts(client)


def test_refused_command_is_an_admin_error():
    client = FakeClient(
        {"ping": {"ok": 1.0}, "buildInfo": OperationFailure("command buildInfo requires authentication", code=13)}
    )
    with pytest.raises(mongodb.MongoAdminError, match="requires authentication"):
        mongodb.server_facts(client)


# --- per-collection facts on a server without $indexStats -------------------------------------------------


class FakeCollection:
    """Answers $collStats as FerretDB 1.24 does and refuses $indexStats as it does (both seen there)."""

    def __init__(self, specs):
        self.specs = specs

    def aggregate(self, pipeline):
        stage = next(iter(pipeline[0]))
        if stage == "$collStats":
            return iter([{"ns": "it.orders", "storageStats": {"count": 50, "size": 1200, "storageSize": 4096}}])
        raise OperationFailure('`aggregate` stage "$indexStats" is not implemented yet', code=238)

    def list_indexes(self):
        return iter(self.specs)


def test_collection_facts_fall_back_to_list_indexes_without_index_stats():
    collection = FakeCollection(
        [
            {"v": 2, "key": {"_id": 1}, "name": "_id_"},
            {"v": 2, "key": {"customer": 1, "created": -1}, "name": "customer_1_created_-1"},
            {"v": 2, "key": {"expiresAt": 1}, "name": "expiresAt_1", "expireAfterSeconds": 3600, "hidden": True},
        ]
    )
    facts = mongodb._collection(collection)
    assert (facts["documents"], facts["data_bytes"], facts["storage_bytes"]) == (50, 1200, 4096)
    assert list(facts["indexes"]) == ["_id_", "customer_1_created_-1", "expiresAt_1"]
    assert facts["indexes"]["customer_1_created_-1"] == {
        "accesses": None,
        "key": {"customer": 1, "created": -1},
        "hidden": False,
        "ttl_seconds": None,
        "building": False,
    }
    assert facts["indexes"]["expiresAt_1"]["ttl_seconds"] == 3600 and facts["indexes"]["expiresAt_1"]["hidden"]


# --- the recorded replies themselves ---------------------------------------------------------------------


def test_every_recorded_reply_is_listed_and_documented():
    on_disk = {name for name in os.listdir(FIXTURES) if name.endswith(".json")}
    assert on_disk == set(RECORDED)
    with open(os.path.join(FIXTURES, "README.md"), encoding="utf-8") as handle:
        listed = set(re.findall(r"`([\w.-]+\.json)`", handle.read()))
    assert on_disk <= listed


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_recorded_reply_has_the_documented_fields(name):
    reply = load_fixture(name)
    for path in RECORDED[name]:
        dig(reply, path)  # KeyError / IndexError names the missing field


def test_recorded_wiredtiger_cache_is_consistent():
    cache = load_fixture("server_status_primary_8.0.json")["wiredTiger"]["cache"]
    assert 0 < cache["bytes currently in the cache"] <= cache["maximum bytes configured"]
    assert cache["tracked dirty bytes in the cache"] < cache["bytes currently in the cache"]
    assert 0 < cache["pages read into cache"] < cache["pages requested from the cache"]


def test_recorded_replies_use_bson_types():
    status = load_fixture("server_status_primary_8.0.json")
    assert type(status["opcounters"]["query"]).__name__ == "Int64"
    assert type(status["localTime"]).__name__ == "datetime"
    stats = load_fixture("index_stats.json")
    assert all(type(entry["accesses"]["since"]).__name__ == "datetime" for entry in stats)
