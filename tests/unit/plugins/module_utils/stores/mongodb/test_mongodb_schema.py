# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Unit tests of the index and sharding tactics (plugins/module_utils/stores/mongodb/schema.py) without a server.

A fake client plays a MongoDB 8.0 server: it answers from the recorded replies in tests/fixtures/mongodb/schema
(shaped after the manual, not captured) and keeps the indexes and the sharding catalog the commands change,
so that a second run can be checked to change nothing. The modules' argument specs are checked against their
documentation.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import re

import pytest
import yaml
from bson import json_util
from pymongo.errors import OperationFailure
from testlib import FIXTURES, ROOT

from ansible_collections.tactician.nosql.plugins.doc_fragments.mongodb import ModuleDocFragment
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import client as mongodb
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import schema

FIXTURES = os.path.join(FIXTURES, "mongodb")
SCHEMA_FIXTURES = os.path.join(FIXTURES, "schema")


def recorded(name):
    folder = FIXTURES if name.startswith(("hello_", "build_info_")) else SCHEMA_FIXTURES
    with open(os.path.join(folder, name), encoding="utf-8") as handle:
        return json_util.loads(handle.read())


def failure(name):
    reply = recorded(name)
    return OperationFailure(reply["errmsg"], code=reply["code"], details=reply)


def _stored(spec):
    """An index spec as the server stores and lists it (text fields become _fts/_ftsx with weights)."""
    stored = {"v": 2}
    key = {}
    weights = {}
    for field, direction in spec["key"].items():
        if direction == "text":
            weights[field] = 1
            if "_fts" not in key:
                key.update(_fts="text", _ftsx=1)
        else:
            key[field] = direction
    stored["key"] = key
    stored.update((option, value) for option, value in spec.items() if option != "key")
    if weights:
        stored.update(weights=dict(sorted(weights.items())), default_language="english", textIndexVersion=3)
    return stored


class FakeServer:
    """A MongoDB 8.0 server (mongod or mongos, by its hello reply) answering from the recordings."""

    def __init__(self, hello="hello_standalone.json", indexes=None):
        self.hello = recorded(hello)
        self.calls = []
        self.indexes = copy.deepcopy(indexes or {})
        self.collections = {}
        self.databases = {}
        self.fail = {}

    def command(self, database, command):
        name = next(iter(command))
        self.calls.append((database, copy.deepcopy(command)))
        if name in self.fail:
            raise self.fail.pop(name)
        handler = getattr(self, "_" + name, None)
        if handler is None:
            raise OperationFailure("no such command: '%s'" % name, code=59)
        return handler(database, command)

    def sent(self, *names):
        """The commands sent (without reads), as (database, command) pairs."""
        return [(db, cmd) for db, cmd in self.calls if next(iter(cmd)) in names]

    def _ping(self, _database, _command):
        return {"ok": 1.0}

    def _buildInfo(self, _database, _command):
        return recorded("build_info_8.0.json")

    def _hello(self, _database, _command):
        return self.hello

    def _listIndexes(self, database, command):
        namespace = "%s.%s" % (database, command["listIndexes"])
        if namespace not in self.indexes:
            raise failure("list_indexes_namespace_not_found_8.0.json")
        reply = recorded("list_indexes_orders_8.0.json")
        reply["cursor"]["ns"] = namespace
        reply["cursor"]["firstBatch"] = copy.deepcopy(self.indexes[namespace])
        return reply

    def _createIndexes(self, database, command):
        namespace = "%s.%s" % (database, command["createIndexes"])
        created = namespace not in self.indexes
        existing = self.indexes.setdefault(namespace, [{"v": 2, "key": {"_id": 1}, "name": "_id_"}])
        before = len(existing)
        for spec in command["indexes"]:
            if any(index["name"] == spec["name"] for index in existing):
                raise OperationFailure("Index with name: %s already exists with different options" % spec["name"], 86)
            existing.append(_stored(spec))
        reply = recorded("create_indexes_reply_8.0.json")
        reply.update(numIndexesBefore=before, numIndexesAfter=len(existing), createdCollectionAutomatically=created)
        return reply

    def _collMod(self, database, command):
        namespace = "%s.%s" % (database, command["collMod"])
        for index in self.indexes.get(namespace, []):
            if index["name"] == command["index"]["name"]:
                reply = recorded("coll_mod_expire_after_seconds_8.0.json")
                if "expireAfterSeconds" in index:
                    reply["expireAfterSeconds_old"] = index["expireAfterSeconds"]
                else:
                    del reply["expireAfterSeconds_old"]
                index["expireAfterSeconds"] = command["index"]["expireAfterSeconds"]
                reply["expireAfterSeconds_new"] = index["expireAfterSeconds"]
                return reply
        raise OperationFailure("cannot find index %s for ns %s" % (command["index"]["name"], namespace), code=27)

    def _dropIndexes(self, database, command):
        namespace = "%s.%s" % (database, command["dropIndexes"])
        existing = self.indexes.get(namespace, [])
        kept = [index for index in existing if index["name"] != command["index"]]
        if len(kept) == len(existing):
            raise OperationFailure("index not found with name [%s]" % command["index"], code=27)
        self.indexes[namespace] = kept
        reply = recorded("drop_indexes_reply_8.0.json")
        reply["nIndexesWas"] = len(existing)
        return reply

    def _find(self, database, command):
        assert database == "config"
        table = {"collections": self.collections, "databases": self.databases}[command["find"]]
        entry = table.get(command["filter"]["_id"])
        reply = recorded("find_config_%s_sharded_8.0.json" % "collections")
        reply["cursor"]["ns"] = "config.%s" % command["find"]
        reply["cursor"]["firstBatch"] = [copy.deepcopy(entry)] if entry else []
        return reply

    def _enableSharding(self, database, command):
        assert database == "admin"
        entry = recorded("find_config_databases_8.0.json")["cursor"]["firstBatch"][0]
        entry["_id"] = command["enableSharding"]
        self.databases.setdefault(command["enableSharding"], entry)
        return recorded("enable_sharding_reply_8.0.json")

    def _shardCollection(self, database, command):
        assert database == "admin"
        entry = recorded("find_config_collections_sharded_8.0.json")["cursor"]["firstBatch"][0]
        entry.update(_id=command["shardCollection"], key=command["key"], unique=command.get("unique", False))
        self.collections[command["shardCollection"]] = entry
        reply = recorded("shard_collection_reply_8.0.json")
        reply["collectionsharded"] = command["shardCollection"]
        return reply


class FakeDatabase:
    def __init__(self, server, name):
        self.server = server
        self.name = name

    def command(self, command, value=1, **kwargs):
        if isinstance(command, str):
            command = dict({command: value}, **kwargs)
        return self.server.command(self.name, dict(command))


class FakeClient:
    """Stands for MongoClient: client[db].command(...) and client.admin.command(...)."""

    def __init__(self, server):
        self.server = server

    def __getitem__(self, name):
        return FakeDatabase(self.server, name)

    @property
    def admin(self):
        return FakeDatabase(self.server, "admin")


def orders_server(hello="hello_primary.json"):
    """A server whose shop.orders holds the recorded listIndexes entries."""
    batch = recorded("list_indexes_orders_8.0.json")["cursor"]["firstBatch"]
    return FakeServer(hello, indexes={"shop.orders": batch})


def ensure(server, check_mode=False, **options):
    options.setdefault("database", "shop")
    options.setdefault("collection", "orders")
    database = options.pop("database")
    collection = options.pop("collection")
    return schema.ensure_index(FakeClient(server), database, collection, check_mode=check_mode, **options)


# --- the recordings of this folder ----------------------------------------------------------------------


def test_every_recording_is_documented_as_shaped_after_the_manual():
    with open(os.path.join(SCHEMA_FIXTURES, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    assert "shaped after the MongoDB 7.0 / 8.0 manual, not captured" in readme
    on_disk = sorted(name for name in os.listdir(SCHEMA_FIXTURES) if name.endswith(".json"))
    assert on_disk
    for name in on_disk:
        assert "`%s`" % name in readme, name
        reply = recorded(name)
        assert "ok" in reply and "$clusterTime" in reply, name


def test_recorded_list_indexes_has_the_documented_fields():
    reply = recorded("list_indexes_orders_8.0.json")
    assert isinstance(reply["cursor"]["id"], int) and reply["cursor"]["ns"] == "shop.orders"
    batch = reply["cursor"]["firstBatch"]
    assert all({"v", "key", "name"} <= set(entry) for entry in batch)
    text = next(entry for entry in batch if "_fts" in entry["key"])
    assert text["key"] == {"_fts": "text", "_ftsx": 1} and set(text["weights"]) == {"title", "body"}


# --- keys, names and the wanted index --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keys", "pairs"),
    [
        ([{"status": 1}], [("status", 1)]),
        ([["customer", 1], ["created", -1]], [("customer", 1), ("created", -1)]),
        ([{"customer": "1"}, ("created", "-1")], [("customer", 1), ("created", -1)]),
        ([{"total": -1.0}], [("total", -1)]),
        ([{"customer": "hashed"}], [("customer", "hashed")]),
        ([{"title": "text"}, {"body": "text"}], [("title", "text"), ("body", "text")]),
        ([{"location": "2dsphere"}, {"kind": 1}], [("location", "2dsphere"), ("kind", 1)]),
        ({"b": 1, "a": -1}, [("b", 1), ("a", -1)]),
    ],
)
def test_keys_in_every_accepted_form(keys, pairs):
    assert schema.normalize_keys(keys) == pairs


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (
            [{"status": "asc"}],
            r"keys: the direction of field 'status' is 'asc'; allowed: 1, -1, hashed, text, 2dsphere",
        ),
        ([{"status": True}], r"direction of field 'status' is True"),
        ([{"status": 0}], r"allowed: 1, -1, hashed"),
        ([{"a": 1, "b": 1}], r"item 1 is"),
        ([["a", 1, 2]], r"\[field, direction\]"),
        ([], r"at least one field"),
        ("status", r"a list of"),
        ([{"a": 1}, {"a": -1}], r"field 'a' appears twice"),
        ([{"a": "hashed"}, {"b": "hashed"}], r"at most one field can be hashed"),
        ([{"": 1}], r"non-empty strings"),
    ],
)
def test_bad_keys_name_the_option_and_the_allowed_values(keys, message):
    with pytest.raises(schema.SchemaError, match=message):
        schema.normalize_keys(keys)


@pytest.mark.parametrize(
    ("keys", "name"),
    [
        ([{"customer": 1}, {"created": -1}], "customer_1_created_-1"),
        ([{"customer": "hashed"}], "customer_hashed"),
        ([{"title": "text"}, {"body": "text"}], "title_text_body_text"),
        ([{"location": "2dsphere"}], "location_2dsphere"),
    ],
)
def test_generated_names_follow_mongodb(keys, name):
    assert schema.generated_index_name(schema.normalize_keys(keys)) == name
    assert schema.wanted_index(keys)["name"] == name


def test_wanted_index_holds_only_the_options_asked_for():
    assert schema.wanted_index([{"a": 1}]) == {"key": {"a": 1}, "name": "a_1"}
    spec = schema.wanted_index(
        [{"number": 1}], name="open_number", unique=True, partial_filter_expression={"status": "open"}
    )
    assert spec == {
        "key": {"number": 1},
        "name": "open_number",
        "unique": True,
        "partialFilterExpression": {"status": "open"},
    }
    assert schema.wanted_index([{"a": 1}], sparse=True)["sparse"] is True
    assert schema.wanted_index([{"at": -1}], expire_after_seconds=0)["expireAfterSeconds"] == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            dict(keys=[{"a": 1}, {"b": 1}], expire_after_seconds=60),
            r"expire_after_seconds: a TTL index has exactly one",
        ),
        (dict(keys=[{"a": "hashed"}], expire_after_seconds=60), r"must be ascending \(1\) or descending \(-1\)"),
        (dict(keys=[{"_id": 1}], expire_after_seconds=60), r"not allow a TTL index on _id"),
        (dict(keys=[{"a": 1}], expire_after_seconds=-1), r"outside 0\.\.2147483647"),
        (dict(keys=[{"a": 1}], expire_after_seconds=2**31), r"outside 0\.\.2147483647"),
        (dict(keys=[{"a": 1}], expire_after_seconds="60"), r"not a whole number"),
        (dict(keys=[{"a": "hashed"}], unique=True), r"unique: a hashed index cannot be unique"),
        (dict(keys=[{"a": 1}], sparse=True, partial_filter_expression={"a": 1}), r"together with sparse"),
        (dict(keys=[{"a": 1}], partial_filter_expression={}), r"partial_filter_expression: a non-empty"),
        (dict(keys=[{"a": 1}], name=""), r"name: an index name"),
    ],
)
def test_bad_index_options_fail_before_anything_runs(options, message):
    with pytest.raises(schema.SchemaError, match=message):
        schema.wanted_index(**options)
    server = orders_server()
    with pytest.raises(schema.SchemaError, match=message):
        ensure(server, **options)
    assert server.calls == []


@pytest.mark.parametrize(
    ("database", "collection", "message"),
    [
        ("sh.op", "orders", r"database: 'sh\.op' contains \['\.'\]"),
        ("", "orders", r"database: a database name is required"),
        ("x" * 64, "orders", r"longer than 63 bytes"),
        ("shop", "", r"collection: a collection name is required"),
        ("shop", "or$ders", r"contains \$"),
        ("shop", "system.profile", r"system collection"),
    ],
)
def test_bad_namespaces_are_refused(database, collection, message):
    server = orders_server()
    with pytest.raises(schema.SchemaError, match=message):
        ensure(server, database=database, collection=collection, keys=[{"a": 1}])
    assert server.calls == []


# --- indexes against the recorded listIndexes -------------------------------------------------------------

UNCHANGED = [
    dict(keys=[{"customer": 1}, {"created": -1}]),
    dict(
        keys=[{"number": 1}],
        name="open_order_number",
        unique=True,
        partial_filter_expression={"status": {"$eq": "open"}},
    ),
    dict(keys=[{"expiresAt": 1}], expire_after_seconds=3600),
    dict(keys=[{"coupon": 1}], sparse=True),
    dict(keys=[{"title": "text"}, {"body": "text"}]),
    dict(keys=[{"body": "text"}, {"title": "text"}], name="title_text_body_text"),
    dict(keys=[{"location": "2dsphere"}]),
    dict(keys=[{"customer": "hashed"}]),
    dict(keys=[{"_id": 1}]),
]


@pytest.mark.parametrize("options", UNCHANGED, ids=lambda options: str(options.get("name") or options["keys"]))
def test_every_recorded_index_asked_again_is_unchanged(options):
    server = orders_server()
    result = ensure(server, **options)
    assert result["changed"] is False
    assert result["commands"] == []
    assert [next(iter(cmd)) for _db, cmd in server.calls] == ["listIndexes"]
    assert result["diff"]["before"] == result["diff"]["after"] == result["index"]
    assert len(result["indexes"]) == 8


def test_recorded_indexes_are_read_as_created():
    server = orders_server()
    views = {view["name"]: view for view in ensure(server, keys=[{"_id": 1}])["indexes"]}
    assert views["title_text_body_text"]["key"] == {"body": "text", "title": "text"}
    assert views["expiresAt_1"]["expireAfterSeconds"] == 3600
    assert views["open_order_number"] == {
        "name": "open_order_number",
        "key": {"number": 1},
        "unique": True,
        "sparse": False,
        "expireAfterSeconds": None,
        "partialFilterExpression": {"status": {"$eq": "open"}},
    }
    assert views["customer_hashed"]["key"] == {"customer": "hashed"}


def test_create_a_compound_index_then_nothing_to_do():
    server = orders_server()
    first = ensure(server, keys=[["status", 1], ["created", -1]])
    wanted = {"key": {"status": 1, "created": -1}, "name": "status_1_created_-1"}
    assert first["changed"] is True
    assert first["name"] == "status_1_created_-1"
    assert first["commands"] == [{"createIndexes": "orders", "indexes": [wanted], "$db": "shop"}]
    assert server.sent("createIndexes") == [("shop", {"createIndexes": "orders", "indexes": [wanted]})]
    assert first["diff"] == {"before": {}, "after": first["index"]}
    assert first["index"]["key"] == {"status": 1, "created": -1}
    assert "status_1_created_-1" in [view["name"] for view in first["indexes"]]
    again = ensure(server, keys=[["status", 1], ["created", -1]])
    assert again["changed"] is False and again["commands"] == []
    assert len(server.sent("createIndexes")) == 1
    json.dumps(first)
    json.dumps(again)


def test_check_mode_reports_the_same_and_sends_nothing():
    server = orders_server()
    checked = ensure(server, check_mode=True, keys=[{"status": 1}], partial_filter_expression={"status": "open"})
    assert checked["changed"] is True
    assert checked["commands"] == [
        {
            "createIndexes": "orders",
            "indexes": [{"key": {"status": 1}, "name": "status_1", "partialFilterExpression": {"status": "open"}}],
            "$db": "shop",
        }
    ]
    assert checked["index"]["partialFilterExpression"] == {"status": "open"}
    assert [next(iter(cmd)) for _db, cmd in server.calls] == ["listIndexes"]
    real = ensure(server, keys=[{"status": 1}], partial_filter_expression={"status": "open"})
    assert real["changed"] is True and real["commands"] == checked["commands"]
    assert real["indexes"] == checked["indexes"]


def test_an_index_on_a_missing_collection_is_created():
    server = FakeServer("hello_standalone.json")
    checked = ensure(server, check_mode=True, collection="sessions", keys=[{"lastUsed": 1}], expire_after_seconds=1800)
    assert checked["changed"] is True
    assert checked["indexes"] == [checked["index"]]
    result = ensure(server, collection="sessions", keys=[{"lastUsed": 1}], expire_after_seconds=1800)
    assert result["commands"] == [
        {
            "createIndexes": "sessions",
            "indexes": [{"key": {"lastUsed": 1}, "name": "lastUsed_1", "expireAfterSeconds": 1800}],
            "$db": "shop",
        }
    ]
    assert [view["name"] for view in result["indexes"]] == ["_id_", "lastUsed_1"]


def test_other_list_indexes_errors_are_reported():
    server = orders_server()
    server.fail["listIndexes"] = OperationFailure("not authorized on shop to execute command", code=13)
    with pytest.raises(schema.SchemaError, match=r"listIndexes on shop\.orders failed: not authorized"):
        ensure(server, keys=[{"a": 1}])


# --- TTL in place, other changes only with recreate -------------------------------------------------------


def test_ttl_change_is_a_coll_mod_in_place():
    server = orders_server()
    checked = ensure(server, check_mode=True, keys=[{"expiresAt": 1}], expire_after_seconds=7200)
    command = {"collMod": "orders", "index": {"name": "expiresAt_1", "expireAfterSeconds": 7200}}
    assert checked["changed"] is True
    assert checked["commands"] == [dict(command, **{"$db": "shop"})]
    assert checked["diff"]["before"]["expireAfterSeconds"] == 3600
    assert checked["diff"]["after"]["expireAfterSeconds"] == 7200
    assert server.sent("collMod") == []
    result = ensure(server, keys=[{"expiresAt": 1}], expire_after_seconds=7200)
    assert server.sent("collMod") == [("shop", command)]
    assert server.sent("dropIndexes", "createIndexes") == []
    assert result["index"]["expireAfterSeconds"] == 7200
    assert ensure(server, keys=[{"expiresAt": 1}], expire_after_seconds=7200)["changed"] is False


def test_a_plain_single_field_index_becomes_ttl_in_place():
    server = orders_server()
    ensure(server, keys=[{"closedAt": 1}])
    result = ensure(server, keys=[{"closedAt": 1}], expire_after_seconds=86400)
    assert result["commands"] == [
        {"collMod": "orders", "index": {"name": "closedAt_1", "expireAfterSeconds": 86400}, "$db": "shop"}
    ]


def test_removing_ttl_needs_recreate():
    server = orders_server()
    with pytest.raises(schema.SchemaError) as refused:
        ensure(server, keys=[{"expiresAt": 1}])
    message = str(refused.value)
    assert "'expiresAt_1' of shop.orders differs in expireAfterSeconds (is 3600, wanted not set)" in message
    assert "recreate: true" in message
    assert server.sent("collMod", "dropIndexes", "createIndexes") == []
    result = ensure(server, keys=[{"expiresAt": 1}], recreate=True)
    assert [next(iter(cmd)) for cmd in result["commands"]] == ["dropIndexes", "createIndexes"]
    assert result["index"]["expireAfterSeconds"] is None


def test_unique_differs_fails_clearly_then_recreates():
    server = orders_server()
    with pytest.raises(schema.SchemaError, match=r"differs in unique \(is false, wanted true\)"):
        ensure(server, keys=[{"customer": 1}, {"created": -1}], unique=True)
    assert server.sent("dropIndexes", "createIndexes") == []
    result = ensure(server, keys=[{"customer": 1}, {"created": -1}], unique=True, recreate=True)
    assert result["commands"] == [
        {"dropIndexes": "orders", "index": "customer_1_created_-1", "$db": "shop"},
        {
            "createIndexes": "orders",
            "indexes": [{"key": {"customer": 1, "created": -1}, "name": "customer_1_created_-1", "unique": True}],
            "$db": "shop",
        },
    ]
    assert result["diff"]["before"]["unique"] is False and result["diff"]["after"]["unique"] is True
    assert ensure(server, keys=[{"customer": 1}, {"created": -1}], unique=True)["changed"] is False


def test_same_name_other_keys_names_both_key_patterns():
    server = orders_server()
    with pytest.raises(schema.SchemaError) as refused:
        ensure(server, name="coupon_1", keys=[{"coupon": 1}, {"created": 1}], sparse=True)
    assert "differs in key (is {'coupon': 1}, wanted {'coupon': 1, 'created': 1})" in str(refused.value)


def test_partial_filter_change_lists_every_difference():
    server = orders_server()
    with pytest.raises(schema.SchemaError) as refused:
        ensure(server, name="open_order_number", keys=[{"number": 1}], partial_filter_expression={"status": "paid"})
    message = str(refused.value)
    assert "unique (is true, wanted false)" in message
    assert "partialFilterExpression (is {'status': {'$eq': 'open'}}, wanted {'status': 'paid'})" in message


def test_the_id_index_is_never_dropped_or_recreated():
    server = orders_server()
    with pytest.raises(schema.SchemaError, match=r"the _id index of shop\.orders cannot be dropped"):
        ensure(server, state="absent", name="_id_")
    with pytest.raises(schema.SchemaError, match=r"cannot be changed or re-created"):
        ensure(server, keys=[{"_id": 1}], unique=True, recreate=True)
    assert server.sent("dropIndexes", "createIndexes") == []


def test_unnamed_index_adopts_the_same_keys_under_another_name():
    server = orders_server()
    result = ensure(server, keys=[{"number": 1}], unique=True, partial_filter_expression={"status": {"$eq": "open"}})
    assert result["changed"] is False
    assert result["name"] == "open_order_number"


def test_named_index_with_keys_taken_by_another_name_fails_unless_recreate():
    server = orders_server()
    with pytest.raises(schema.SchemaError) as refused:
        ensure(server, name="by_customer", keys=[{"customer": 1}, {"created": -1}])
    message = str(refused.value)
    assert "index 'customer_1_created_-1' of shop.orders already has keys" in message
    assert "Use name: customer_1_created_-1" in message
    assert server.sent("dropIndexes", "createIndexes") == []
    result = ensure(server, name="by_customer", keys=[{"customer": 1}, {"created": -1}], recreate=True)
    assert [(next(iter(cmd)), cmd.get("index")) for cmd in result["commands"]][0] == (
        "dropIndexes",
        "customer_1_created_-1",
    )
    assert result["name"] == "by_customer"
    assert "customer_1_created_-1" not in [view["name"] for view in result["indexes"]]


def test_server_error_is_reported_with_what_ran_before():
    server = orders_server()
    server.fail["createIndexes"] = failure("create_indexes_index_options_conflict_8.0.json")
    with pytest.raises(schema.SchemaError) as refused:
        ensure(server, keys=[{"coupon": 1}], recreate=True)
    message = str(refused.value)
    assert message.startswith("createIndexes on shop failed: Index already exists with a different name")
    assert "commands that ran before it" in message
    assert refused.value.executed == [{"dropIndexes": "orders", "index": "coupon_1", "$db": "shop"}]


# --- dropping ---------------------------------------------------------------------------------------------


def test_drop_by_name_then_nothing_to_do():
    server = orders_server()
    checked = ensure(server, check_mode=True, state="absent", name="coupon_1")
    assert checked["changed"] is True
    assert checked["commands"] == [{"dropIndexes": "orders", "index": "coupon_1", "$db": "shop"}]
    assert "coupon_1" not in [view["name"] for view in checked["indexes"]]
    assert server.sent("dropIndexes") == []
    result = ensure(server, state="absent", name="coupon_1")
    assert server.sent("dropIndexes") == [("shop", {"dropIndexes": "orders", "index": "coupon_1"})]
    assert result["diff"]["before"]["name"] == "coupon_1" and result["diff"]["after"] == {}
    again = ensure(server, state="absent", name="coupon_1")
    assert again["changed"] is False and again["commands"] == []


def test_drop_by_keys_finds_the_name():
    server = orders_server()
    result = ensure(server, state="absent", keys=[{"location": "2dsphere"}])
    assert result["commands"] == [{"dropIndexes": "orders", "index": "location_2dsphere", "$db": "shop"}]
    assert ensure(server, state="absent", keys=[{"title": "text"}, {"body": "text"}])["name"] == "title_text_body_text"


def test_drop_refuses_ambiguous_or_mismatched_requests():
    server = orders_server()
    ensure(server, name="customer_open", keys=[{"customer": 1}, {"created": -1}], partial_filter_expression={"o": 1})
    with pytest.raises(schema.SchemaError, match=r"2 indexes of shop\.orders have these keys"):
        ensure(server, state="absent", keys=[{"customer": 1}, {"created": -1}])
    with pytest.raises(schema.SchemaError, match=r"index 'coupon_1' of shop\.orders has keys \{'coupon': 1\}"):
        ensure(server, state="absent", name="coupon_1", keys=[{"other": 1}])
    with pytest.raises(schema.SchemaError, match=r"name: give the name or the keys"):
        ensure(server, state="absent")
    assert server.sent("dropIndexes") == []


def test_present_needs_keys_and_state_is_checked():
    with pytest.raises(schema.SchemaError, match=r"keys: required with state present"):
        ensure(orders_server(), name="x")
    with pytest.raises(schema.SchemaError, match=r"state: 'gone'; allowed: present, absent"):
        ensure(orders_server(), state="gone", keys=[{"a": 1}])


# --- sharding ---------------------------------------------------------------------------------------------


def shard(server, check_mode=False, database="shop", collection="orders", **options):
    return schema.ensure_sharded(FakeClient(server), database, collection, check_mode=check_mode, **options)


@pytest.mark.parametrize(
    ("hello", "kind"),
    [
        ("hello_standalone.json", "a standalone"),
        ("hello_primary.json", r"a replica set member \(primary of rs0\)"),
        ("hello_secondary.json", r"a replica set member \(secondary of rs0\)"),
    ],
)
def test_sharding_needs_a_mongos(hello, kind):
    server = FakeServer(hello)
    with pytest.raises(schema.SchemaError, match="^shard a collection needs a mongos; this server is %s$" % kind):
        shard(server, key={"customer": "hashed"})
    assert server.sent("find", "enableSharding", "shardCollection") == []


def test_shard_a_new_database_and_collection_then_nothing_to_do():
    server = FakeServer("hello_mongos.json")
    checked = shard(server, check_mode=True, key={"customer": "hashed"})
    commands = [
        {"enableSharding": "shop"},
        {"shardCollection": "shop.orders", "key": {"customer": "hashed"}, "unique": False},
    ]
    assert checked["changed"] is True
    assert checked["commands"] == [dict(command, **{"$db": "admin"}) for command in commands]
    assert server.sent("enableSharding", "shardCollection") == []
    result = shard(server, key={"customer": "hashed"})
    assert result["commands"] == checked["commands"]
    assert server.sent("enableSharding", "shardCollection") == [("admin", command) for command in commands]
    assert result["diff"] == {"before": {}, "after": {"key": {"customer": "hashed"}, "unique": False}}
    again = shard(server, key={"customer": "hashed"})
    assert again["changed"] is False and again["commands"] == []
    assert again["sharding"] == {"key": {"customer": "hashed"}, "unique": False}
    json.dumps(result)


def test_a_database_known_to_the_config_servers_is_not_enabled_again():
    server = FakeServer("hello_mongos.json")
    entry = recorded("find_config_databases_8.0.json")["cursor"]["firstBatch"][0]
    server.databases["shop"] = entry
    result = shard(server, key=[["tenant", 1], ["created", 1]], unique=True)
    assert result["commands"] == [
        {"shardCollection": "shop.orders", "key": {"tenant": 1, "created": 1}, "unique": True, "$db": "admin"}
    ]
    assert list(server.collections["shop.orders"]["key"]) == ["tenant", "created"]


def test_a_database_marked_not_partitioned_is_enabled_first():
    server = FakeServer("hello_mongos.json")
    server.databases["shop"] = {"_id": "shop", "primary": "shard01", "partitioned": False}
    result = shard(server, key={"customer": 1})
    assert [next(iter(cmd)) for cmd in result["commands"]] == ["enableSharding", "shardCollection"]


def test_recorded_sharded_collection_is_unchanged_or_refused():
    server = FakeServer("hello_mongos.json")
    entry = recorded("find_config_collections_sharded_8.0.json")["cursor"]["firstBatch"][0]
    server.collections["shop.orders"] = entry
    assert shard(server, key={"customer": "hashed"})["changed"] is False
    with pytest.raises(schema.SchemaError) as refused:
        shard(server, key={"customer": 1})
    message = str(refused.value)
    assert "shop.orders is already sharded on {'customer': 'hashed'} (unique: false), not {'customer': 1}" in message
    assert "reshardCollection" in message
    assert server.sent("enableSharding", "shardCollection") == []


def test_a_dropped_catalog_entry_is_not_sharded():
    server = FakeServer("hello_mongos.json")
    server.collections["shop.orders"] = {"_id": "shop.orders", "key": {"customer": 1}, "dropped": True}
    assert shard(server, key={"region": 1})["changed"] is True


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(key={"customer": -1}), r"key: the direction of field 'customer' is -1; allowed: 1, hashed"),
        (dict(key={"a": "hashed", "b": "hashed"}), r"key: at most one field can be hashed"),
        (dict(key={"customer": "hashed"}, unique=True), r"unique: a hashed shard key cannot be unique"),
        (dict(key={"a": 1}, database="config"), r"cannot be sharded here"),
        (dict(key="customer"), r"key: a list of"),
    ],
)
def test_bad_shard_requests_fail_before_anything_runs(options, message):
    server = FakeServer("hello_mongos.json")
    with pytest.raises(schema.SchemaError, match=message):
        shard(server, **options)
    assert server.calls == []


def test_shard_collection_failure_reports_enable_sharding_ran():
    server = FakeServer("hello_mongos.json")
    server.fail["shardCollection"] = OperationFailure(
        "Please create an index that starts with the proposed shard key before sharding the collection", code=72
    )
    with pytest.raises(schema.SchemaError) as refused:
        shard(server, key={"customer": 1})
    assert refused.value.executed == [{"enableSharding": "shop", "$db": "admin"}]
    assert "shardCollection on admin failed: Please create an index" in str(refused.value)


def test_not_mongos_message_of_a_connected_role():
    assert schema.not_mongos_message({"role": "standalone"}) == (
        "shard a collection needs a mongos; this server is a standalone"
    )


# --- the modules' documentation -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["mongodb_index", "mongodb_shard"])
def test_module_arguments_match_their_documentation(name, monkeypatch):
    module = importlib.import_module("ansible_collections.tactician.nosql.plugins.modules.%s" % name)
    documented = yaml.safe_load(module.DOCUMENTATION)
    options = dict(yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"])
    options.update(documented["options"])
    assert documented["extends_documentation_fragment"] == ["tactician.nosql.mongodb"]
    yaml.safe_load(module.EXAMPLES)
    yaml.safe_load(module.RETURN)

    captured = {}

    class Stop(Exception):
        pass

    def fake_module(argument_spec, **_kwargs):
        captured.update(argument_spec)
        raise Stop()

    monkeypatch.setattr(module, "AnsibleModule", fake_module)
    with pytest.raises(Stop):
        module.main()
    assert set(captured) == set(options)
    for option, spec in captured.items():
        doc = options[option]
        assert doc["type"] == spec["type"], option
        assert doc.get("default") == spec.get("default"), option
        assert doc.get("choices") == spec.get("choices"), option
        assert doc.get("elements") == spec.get("elements"), option
        assert bool(doc.get("required")) == bool(spec.get("required")), option
    assert captured["login_password"]["no_log"] is True
    assert mongodb.mongodb_argument_spec()["login_password"]["no_log"] is True


def test_the_engine_imports_no_driver_of_its_own():
    path = os.path.join(ROOT, "plugins", "module_utils")
    with open(os.path.join(path, "stores", "mongodb", "schema.py"), encoding="utf-8") as handle:
        source = handle.read()
    assert not re.search(r"^\s*(import|from)\s+(pymongo|bson)\b", source, re.MULTILINE)
