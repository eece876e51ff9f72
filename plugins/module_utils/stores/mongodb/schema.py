# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""MongoDB schema tactics: secondary, compound and TTL indexes, and sharding a collection.

Plain Python over the client that mongodb.connect() returns; every server call is a database command
(listIndexes, createIndexes, collMod, dropIndexes, find on config.collections / config.databases,
enableSharding, shardCollection) so that what runs is exactly what is reported. Written against the MongoDB
7.0 / 8.0 server API; docs/testing-mongodb.md says what ran against FerretDB and what only against
recorded replies.

    result = ensure_index(client, "shop", "orders", keys=[{"customer": 1}, {"total": -1}])
    result = ensure_sharded(client, "shop", "orders", key={"customer": "hashed"})

Each returns dict(changed, commands, diff, ...) and touches nothing in check mode. Bad input and changes the
server cannot make in place raise SchemaError before anything runs.
"""

from __future__ import annotations

import datetime

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import StoreError
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import client as mongodb

INDEX_DIRECTIONS = (1, -1, "hashed", "text", "2dsphere")
SHARD_KEY_DIRECTIONS = (1, "hashed")
# TTL values the server accepts (a 32-bit signed integer, not negative).
TTL_MAX = 2147483647
NAMESPACE_NOT_FOUND = 26
_DATABASE_FORBIDDEN = '/\\. "$\0'
_SYSTEM_DATABASES = ("admin", "local", "config")


class SchemaError(StoreError):
    """Bad input, or a change MongoDB cannot make as asked. executed: the commands that ran before it."""

    def __init__(self, message, executed=None):
        super().__init__(message)
        self.executed = list(executed or [])

    def report(self):
        return {"commands": self.executed, "changed": bool(self.executed)}


def _allowed(values):
    return ", ".join(str(value) for value in values)


def check_namespace(database, collection):
    """Raise SchemaError unless database and collection are names MongoDB accepts."""
    if not isinstance(database, str) or not database:
        raise SchemaError("database: a database name is required")
    bad = sorted({char for char in database if char in _DATABASE_FORBIDDEN})
    if bad:
        raise SchemaError("database: %r contains %s, which MongoDB does not allow in a database name" % (database, bad))
    if len(database.encode("utf-8")) >= 64:
        raise SchemaError("database: %r is longer than 63 bytes" % database)
    if not isinstance(collection, str) or not collection:
        raise SchemaError("collection: a collection name is required")
    if "$" in collection or "\0" in collection:
        raise SchemaError("collection: %r contains $ or a NUL character" % collection)
    if collection.startswith("system."):
        raise SchemaError("collection: %r is a system collection; indexes of it are not managed here" % collection)


def _direction(field, value, allowed, option):
    """One key direction as MongoDB stores it (1, -1 or a type name); SchemaError names the allowed values."""
    if isinstance(value, bool):
        direction = None
    elif isinstance(value, int):
        direction = value
    elif isinstance(value, float) and value in (1.0, -1.0):
        direction = int(value)
    elif isinstance(value, str) and value.strip() in ("1", "-1"):
        direction = int(value.strip())
    else:
        direction = value
    if direction not in allowed:
        raise SchemaError(
            "%s: the direction of field %r is %r; allowed: %s" % (option, field, value, _allowed(allowed))
        )
    return direction


def normalize_keys(keys, allowed=INDEX_DIRECTIONS, option="keys"):
    """Key pairs [(field, direction), ...] in order from a list of {field: direction} or [field, direction]
    items (a mapping of several fields is taken in its own order)."""
    if isinstance(keys, dict):
        items = list(keys.items())
    elif isinstance(keys, (list, tuple)):
        items = []
        for position, entry in enumerate(keys):
            if isinstance(entry, dict) and len(entry) == 1:
                items.extend(entry.items())
            elif isinstance(entry, (list, tuple)) and len(entry) == 2:
                items.append((entry[0], entry[1]))
            else:
                raise SchemaError(
                    "%s: item %d is %r; each item is {field: direction} or [field, direction]"
                    % (option, position + 1, entry)
                )
    else:
        raise SchemaError("%s: a list of {field: direction} or [field, direction] items is required" % option)
    if not items:
        raise SchemaError("%s: at least one field is required" % option)
    pairs = []
    seen = set()
    for field, value in items:
        if not isinstance(field, str) or not field.strip():
            raise SchemaError("%s: field names are non-empty strings, not %r" % (option, field))
        if field in seen:
            raise SchemaError("%s: field %r appears twice" % (option, field))
        seen.add(field)
        pairs.append((field, _direction(field, value, allowed, option)))
    if sum(1 for _field, direction in pairs if direction == "hashed") > 1:
        raise SchemaError("%s: at most one field can be hashed" % option)
    return pairs


def generated_index_name(pairs):
    """The name MongoDB gives an index created without one: field_direction joined by _."""
    return "_".join("%s_%s" % (field, direction) for field, direction in pairs)


def _plain(value):
    """Server values as plain JSON-able Python (nested documents as dicts, dates as ISO text)."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    return str(value)


def _canonical_key(pairs):
    """Key pairs for comparison: the text fields of a text index as one sorted group where the first stood."""
    text = sorted(field for field, direction in pairs if direction == "text")
    out = []
    for field, direction in pairs:
        if direction != "text":
            out.append((field, direction))
        elif field == text[0]:
            out.extend((name, "text") for name in text)
    return out


def _existing_pairs(spec):
    """Key pairs of an index as listIndexes reports it; a text index's {_fts: text, _ftsx: 1} becomes its fields
    (from weights) with direction text, as it was created."""
    pairs = []
    for field, value in dict(spec.get("key") or {}).items():
        if field == "_fts":
            pairs.extend((name, "text") for name in sorted(dict(spec.get("weights") or {})))
        elif field == "_ftsx":
            continue
        else:
            direction = _plain(value)
            pairs.append((field, direction))
    return pairs


def index_view(spec):
    """The options of an index this code manages, from a listIndexes entry or a createIndexes spec."""
    ttl = spec.get("expireAfterSeconds")
    partial = spec.get("partialFilterExpression")
    return {
        "name": spec.get("name"),
        "key": dict(_existing_pairs(spec)),
        "unique": bool(spec.get("unique", False)),
        "sparse": bool(spec.get("sparse", False)),
        "expireAfterSeconds": None if ttl is None else _plain(ttl),
        "partialFilterExpression": None if partial is None else _plain(partial),
    }


def _same_keys(view_a, view_b):
    return _canonical_key(list(view_a["key"].items())) == _canonical_key(list(view_b["key"].items()))


def _differences(current, wanted):
    """Managed options (besides the name) in which the existing index differs from the wanted one."""
    fields = []
    if not _same_keys(current, wanted):
        fields.append("key")
    for option in ("unique", "sparse", "expireAfterSeconds", "partialFilterExpression"):
        if current[option] != wanted[option]:
            fields.append(option)
    return fields


def wanted_index(
    keys, name=None, unique=False, sparse=False, expire_after_seconds=None, partial_filter_expression=None
):
    """The createIndexes spec of an index, validated; SchemaError names the option at fault."""
    pairs = normalize_keys(keys)
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise SchemaError("name: an index name is a non-empty string")
    spec = {"key": dict(pairs), "name": name or generated_index_name(pairs)}
    directions = [direction for _field, direction in pairs]
    if unique:
        if "hashed" in directions:
            raise SchemaError("unique: a hashed index cannot be unique")
        spec["unique"] = True
    if sparse:
        spec["sparse"] = True
    if expire_after_seconds is not None:
        if isinstance(expire_after_seconds, bool) or not isinstance(expire_after_seconds, int):
            raise SchemaError("expire_after_seconds: %r is not a whole number of seconds" % (expire_after_seconds,))
        if not 0 <= expire_after_seconds <= TTL_MAX:
            raise SchemaError("expire_after_seconds: %d is outside 0..%d" % (expire_after_seconds, TTL_MAX))
        if len(pairs) != 1:
            raise SchemaError(
                "expire_after_seconds: a TTL index has exactly one field; keys has %d (%s)"
                % (len(pairs), ", ".join(field for field, _d in pairs))
            )
        field, direction = pairs[0]
        if direction not in (1, -1):
            raise SchemaError("expire_after_seconds: the TTL field %r must be ascending (1) or descending (-1)" % field)
        if field == "_id":
            raise SchemaError("expire_after_seconds: MongoDB does not allow a TTL index on _id")
        spec["expireAfterSeconds"] = expire_after_seconds
    if partial_filter_expression is not None:
        if not isinstance(partial_filter_expression, dict) or not partial_filter_expression:
            raise SchemaError("partial_filter_expression: a non-empty filter document is required")
        if sparse:
            raise SchemaError("partial_filter_expression: MongoDB does not allow it together with sparse")
        spec["partialFilterExpression"] = partial_filter_expression
    return spec


def _run(client, database, command, executed):
    """Run one command on database; record it (with $db) in executed, or raise SchemaError naming it."""
    record = dict(command)
    record["$db"] = database
    try:
        client[database].command(command)
    except mongodb.PyMongoError as exc:
        already = "; commands that ran before it: %s" % executed if executed else ""
        raise SchemaError(
            "%s on %s failed: %s%s" % (next(iter(command)), database, exc, already), executed=executed
        ) from exc
    executed.append(record)


def list_indexes(client, database, collection):
    """The collection's indexes as listIndexes returns them ([] when the collection does not exist)."""
    try:
        reply = client[database].command({"listIndexes": collection})
    except mongodb.PyMongoError as exc:
        if getattr(exc, "code", None) == NAMESPACE_NOT_FOUND:
            return []
        raise SchemaError("listIndexes on %s.%s failed: %s" % (database, collection, exc)) from exc
    return list(reply.get("cursor", {}).get("firstBatch", []))


def _describe(current, wanted, fields):
    parts = []
    for option in fields:
        if option == "key":
            parts.append("key (is %s, wanted %s)" % (current["key"], wanted["key"]))
        else:
            parts.append("%s (is %s, wanted %s)" % (option, _show(current[option]), _show(wanted[option])))
    return ", ".join(parts)


def _show(value):
    if value is None:
        return "not set"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def plan_index(existing, collection, state, wanted=None, name=None, keys=None, recreate=False, namespace=None):
    """Commands (without $db) that bring the collection's indexes to the wanted state, and the index views
    before and after. existing: listIndexes entries; wanted: a wanted_index() spec (state present); name/keys:
    what to drop (state absent). Returns dict(commands, before, after, name)."""
    namespace = namespace or collection
    views = [index_view(spec) for spec in existing]
    by_name = {view["name"]: view for view in views}
    if state == "absent":
        return _plan_drop(views, by_name, collection, name, keys, namespace)
    want = index_view(wanted)
    explicit_name = name is not None
    current = by_name.get(want["name"])
    if current is None:
        twins = [
            view
            for view in views
            if _same_keys(view, want) and view["partialFilterExpression"] == want["partialFilterExpression"]
        ]
        if twins and not explicit_name:
            # Created earlier under another name: that index is the one asked for.
            current = twins[0]
            want = dict(want, name=current["name"])
            wanted = dict(wanted, name=current["name"])
        elif twins:
            other = twins[0]
            if not recreate:
                raise SchemaError(
                    "name: index %r of %s already has keys %s; MongoDB refuses a second index with the same keys "
                    "(and the same partial filter). Use name: %s, drop it, or set recreate: true to replace it"
                    % (other["name"], namespace, other["key"], other["name"])
                )
            return dict(
                commands=[
                    {"dropIndexes": collection, "index": other["name"]},
                    {"createIndexes": collection, "indexes": [wanted]},
                ],
                before=other,
                after=want,
                name=want["name"],
            )
    if current is None:
        return dict(
            commands=[{"createIndexes": collection, "indexes": [wanted]}], before={}, after=want, name=want["name"]
        )
    fields = _differences(current, want)
    if not fields:
        return dict(commands=[], before=current, after=current, name=current["name"])
    if fields == ["expireAfterSeconds"] and want["expireAfterSeconds"] is not None:
        command = {
            "collMod": collection,
            "index": {"name": current["name"], "expireAfterSeconds": want["expireAfterSeconds"]},
        }
        return dict(commands=[command], before=current, after=want, name=current["name"])
    if current["name"] == "_id_":
        raise SchemaError("name: the _id index of %s cannot be changed or re-created" % namespace)
    if not recreate:
        raise SchemaError(
            "index %r of %s differs in %s; MongoDB cannot change that in place. Set recreate: true to drop and "
            "re-create it (queries lose the index while it is built again)"
            % (current["name"], namespace, _describe(current, want, fields))
        )
    return dict(
        commands=[
            {"dropIndexes": collection, "index": current["name"]},
            {"createIndexes": collection, "indexes": [wanted]},
        ],
        before=current,
        after=want,
        name=want["name"],
    )


def _plan_drop(views, by_name, collection, name, keys, namespace):
    if name is not None:
        target = by_name.get(name)
        if target is not None and keys is not None:
            pairs = normalize_keys(keys)
            if _canonical_key(list(target["key"].items())) != _canonical_key(pairs):
                raise SchemaError(
                    "keys: index %r of %s has keys %s, not %s; nothing was dropped"
                    % (name, namespace, target["key"], dict(pairs))
                )
    elif keys is not None:
        pairs = _canonical_key(normalize_keys(keys))
        matches = [view for view in views if _canonical_key(list(view["key"].items())) == pairs]
        if len(matches) > 1:
            raise SchemaError(
                "keys: %d indexes of %s have these keys (%s); give the name of the one to drop"
                % (len(matches), namespace, ", ".join(view["name"] for view in matches))
            )
        target = matches[0] if matches else None
    else:
        raise SchemaError("name: give the name or the keys of the index to drop")
    if target is None:
        return dict(commands=[], before={}, after={}, name=name)
    if target["name"] == "_id_":
        raise SchemaError("name: the _id index of %s cannot be dropped" % namespace)
    return dict(
        commands=[{"dropIndexes": collection, "index": target["name"]}], before=target, after={}, name=target["name"]
    )


def _simulate(views, plan):
    """The index views after plan's commands, without running them (check mode)."""
    after = list(views)
    for command in plan["commands"]:
        if "dropIndexes" in command:
            after = [view for view in after if view["name"] != command["index"]]
        elif "createIndexes" in command:
            after.extend(index_view(spec) for spec in command["indexes"])
        elif "collMod" in command:
            index = command["index"]
            after = [
                dict(view, expireAfterSeconds=index["expireAfterSeconds"]) if view["name"] == index["name"] else view
                for view in after
            ]
    return after


def ensure_index(
    client,
    database,
    collection,
    state="present",
    keys=None,
    name=None,
    unique=False,
    sparse=False,
    expire_after_seconds=None,
    partial_filter_expression=None,
    recreate=False,
    check_mode=False,
):
    """Create, change (TTL in place with collMod, otherwise only with recreate) or drop one index.

    Returns dict(changed, name, commands, diff, index, indexes): commands as run (each with its $db), the index's
    managed options before and after, the index after (None when absent) and every index of the collection after.
    """
    check_namespace(database, collection)
    namespace = "%s.%s" % (database, collection)
    if state not in ("present", "absent"):
        raise SchemaError("state: %r; allowed: present, absent" % (state,))
    wanted = None
    if state == "present":
        if keys is None:
            raise SchemaError("keys: required with state present")
        wanted = wanted_index(keys, name, unique, sparse, expire_after_seconds, partial_filter_expression)
    existing = list_indexes(client, database, collection)
    plan = plan_index(existing, collection, state, wanted, name, keys, recreate, namespace)
    executed = []
    if check_mode:
        executed = [dict(command, **{"$db": database}) for command in plan["commands"]]
        indexes = _simulate([index_view(spec) for spec in existing], plan)
    else:
        for command in plan["commands"]:
            _run(client, database, command, executed)
        if executed:
            existing = list_indexes(client, database, collection)
        indexes = [index_view(spec) for spec in existing]
    final = next((view for view in indexes if view["name"] == plan["name"]), None) if state == "present" else None
    return dict(
        changed=bool(plan["commands"]),
        name=plan["name"],
        commands=executed,
        diff=dict(before=plan["before"], after=plan["after"]),
        index=final,
        indexes=indexes,
    )


def normalize_shard_key(key):
    """Shard key pairs in order: ranged fields are 1, at most one field is hashed."""
    return normalize_keys(key, allowed=SHARD_KEY_DIRECTIONS, option="key")


def not_mongos_message(facts):
    """The error of a sharding request sent to a server that is not a mongos."""
    role = facts.get("role")
    if role == "standalone":
        kind = "a standalone"
    elif role in ("primary", "secondary", "arbiter", "other"):
        kind = "a replica set member (%s of %s)" % (role, facts.get("set_name"))
    else:
        kind = "a %s" % role
    return "shard a collection needs a mongos; this server is %s" % kind


def _find_one(client, database, collection, query):
    try:
        reply = client[database].command({"find": collection, "filter": query, "limit": 1, "singleBatch": True})
    except mongodb.PyMongoError as exc:
        raise SchemaError("find on %s.%s failed: %s" % (database, collection, exc)) from exc
    batch = reply.get("cursor", {}).get("firstBatch", [])
    return batch[0] if batch else None


def sharding_view(entry):
    """Shard key and uniqueness of a config.collections entry (None when the collection is not sharded)."""
    if not entry or entry.get("dropped"):
        return None
    return {
        "key": {field: _plain(value) for field, value in dict(entry.get("key") or {}).items()},
        "unique": bool(entry.get("unique", False)),
    }


def ensure_sharded(client, database, collection, key, unique=False, check_mode=False, facts=None):
    """Shard database.collection on key through a mongos: enableSharding when config.databases has no entry
    (or marks it not partitioned, before 7.0), then shardCollection; unchanged when config.collections already
    holds the same key. A different existing key is an error (resharding is not done here).

    Returns dict(changed, commands, diff, sharding)."""
    check_namespace(database, collection)
    if database in _SYSTEM_DATABASES:
        raise SchemaError("database: collections of %r cannot be sharded here" % database)
    pairs = normalize_shard_key(key)
    if unique and any(direction == "hashed" for _field, direction in pairs):
        raise SchemaError("unique: a hashed shard key cannot be unique")
    wanted = {"key": dict(pairs), "unique": bool(unique)}
    facts = facts or mongodb.server_facts(client)
    if facts.get("role") != "mongos":
        raise SchemaError(not_mongos_message(facts))
    namespace = "%s.%s" % (database, collection)
    current = sharding_view(_find_one(client, "config", "collections", {"_id": namespace}))
    if current is not None:
        if list(current["key"].items()) == list(wanted["key"].items()) and current["unique"] == wanted["unique"]:
            return dict(changed=False, commands=[], diff=dict(before=current, after=current), sharding=current)
        raise SchemaError(
            "key: %s is already sharded on %s (unique: %s), not %s (unique: %s); changing a shard key needs "
            "reshardCollection or refineCollectionShardKey, which are not run here"
            % (namespace, current["key"], _show(current["unique"]), wanted["key"], _show(wanted["unique"]))
        )
    commands = []
    database_entry = _find_one(client, "config", "databases", {"_id": database})
    if database_entry is None or database_entry.get("partitioned") is False:
        commands.append({"enableSharding": database})
    commands.append({"shardCollection": namespace, "key": wanted["key"], "unique": wanted["unique"]})
    executed = []
    if check_mode:
        executed = [dict(command, **{"$db": "admin"}) for command in commands]
    else:
        for command in commands:
            _run(client, "admin", command, executed)
    return dict(changed=True, commands=executed, diff=dict(before={}, after=wanted), sharding=wanted)
