# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Cassandra secondary indexes (SAI by default): created, checked and dropped on a live cluster, and their build
followed on every node. Reads system_schema.indexes and computes the CREATE / DROP statements that bring the
indexes to what is asked. Plain Python: the session comes from client.connect(); nothing here imports the driver.
"""

from __future__ import annotations

import re
import time

from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.client import CassandraError
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.schema import (
    CLASS_NAME,
    COLUMN_NAME,
    check_name,
    check_table_name,
    cql_map,
    cql_string,
    execute,
    options_map,
    same_text,
)
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.tables import read_table_options

_TARGET = re.compile(r"^(keys|values|entries|full)\(\s*([A-Za-z][A-Za-z0-9_]*)\s*\)$", re.IGNORECASE)


SAI_CLASS = "org.apache.cassandra.index.sai.StorageAttachedIndex"
SASI_CLASS = "org.apache.cassandra.index.sasi.SASIIndex"
# using: (the class system_schema.indexes names, compared without case; None for the legacy index,
# the string written after USING).
INDEX_CLASSES = {
    "sai": (SAI_CLASS, "sai"),
    "sasi": (SASI_CLASS, SASI_CLASS),
    "legacy_local_table": (None, "legacy_local_table"),
}
# Other names the server accepts and stores as they were written.
_CLASS_ALIASES = {"sai": SAI_CLASS, "storageattachedindex": SAI_CLASS}
INDEX_USING = ["sai", "legacy_local_table", "sasi", "<a fully qualified index class>"]
# Keys of system_schema.indexes.options that describe the index rather than tune it.
_INDEX_META = ("target", "class_name")


def canonical_index_class(name):
    """The full class name of an index class as system_schema.indexes stores it (sai, SAI, the full name ...)."""
    if not name:
        return None
    lower = name.lower()
    if lower in _CLASS_ALIASES:
        return _CLASS_ALIASES[lower]
    for full in (SAI_CLASS, SASI_CLASS):
        if lower == full.lower():
            return full
    return name


def index_class(using):
    """(full class name, or None for the legacy index; the string written after USING) of an implementation."""
    if isinstance(using, str) and using.lower() in INDEX_CLASSES:
        return INDEX_CLASSES[using.lower()]
    if isinstance(using, str) and using.lower() in _CLASS_ALIASES:
        return _CLASS_ALIASES[using.lower()], using
    if isinstance(using, str) and "." in using and CLASS_NAME.match(using):
        return canonical_index_class(using), using
    raise CassandraError("using: %r is not allowed; choose one of %s" % (using, ", ".join(INDEX_USING)))


def index_target(column=None, target=None):
    """The target as system_schema.indexes stores it: a column, or keys(c) / values(c) / entries(c) / full(c)."""
    if (column is None) == (target is None):
        raise CassandraError("column: give either column or target (keys(c), values(c), entries(c), full(c))")
    if column is not None:
        return check_name(column, "column", COLUMN_NAME)
    match = _TARGET.match(target.strip()) if isinstance(target, str) else None
    if not match:
        raise CassandraError("target: %r is not allowed; write keys(c), values(c), entries(c) or full(c)" % target)
    return "%s(%s)" % (match.group(1).lower(), check_name(match.group(2), "target", COLUMN_NAME))


def _same_target(stored, wanted):
    # CREATE INDEX ON t (c) on a collection c is stored as values(c).
    return stored == wanted or stored == "values(%s)" % wanted or wanted == "values(%s)" % stored


def read_index(session, keyspace, name):
    """dict(table, kind, target, class_name, options) of index keyspace.name, None when absent."""
    # Index names are unique in a keyspace, but the table is part of the key before the name.
    rows = session.execute(
        "SELECT table_name, index_name, kind, options FROM system_schema.indexes WHERE keyspace_name = %s",
        (keyspace,),
    )
    row = next((row for row in rows if row.index_name == name), None)
    if row is None:
        return None
    options = {str(k): str(v) for k, v in dict(row.options or {}).items()}
    return dict(
        table=row.table_name,
        kind=str(row.kind),
        target=options.get("target"),
        class_name=canonical_index_class(options.get("class_name")),
        options={k: v for k, v in options.items() if k not in _INDEX_META},
    )


def describe_index(index):
    using = index.get("class_name")
    for short, (full, _text) in INDEX_CLASSES.items():
        if full and full == using:
            using = short
            break
    return "%s(%s) using %s" % (index["table"], index["target"], using or "legacy_local_table")


def _index_matches(current, wanted):
    if current["table"] != wanted["table"] or not _same_target(current["target"], wanted["target"]):
        return False
    if (current["class_name"] or "").lower() != (wanted["class_name"] or "").lower():
        return False
    if set(current["options"]) != set(wanted["options"]):
        return False
    return all(same_text(current["options"][key], value) for key, value in wanted["options"].items())


def create_index_statement(keyspace, table, name, target, using, options):
    statement = "CREATE INDEX IF NOT EXISTS %s ON %s.%s (%s) USING %s" % (
        name,
        keyspace,
        table,
        target,
        cql_string(using),
    )
    if options:
        statement += " WITH OPTIONS = %s" % cql_map(options)
    return statement


def ensure_index(
    session,
    keyspace,
    table,
    name,
    state="present",
    column=None,
    target=None,
    using="sai",
    options=None,
    recreate=False,
    check_mode=False,
):
    """Create or drop the secondary index keyspace.name on keyspace.table.

    An index of that name with another table, target, implementation or options fails, unless recreate
    (then it is dropped and created again). Returns dict(changed, queries, diff, created)."""
    keyspace = check_name(keyspace, "keyspace")
    name = check_table_name(name, "name")
    if state not in ("present", "absent"):
        raise CassandraError("state: %r is not allowed; choose present or absent" % state)
    wanted = None
    if state == "present":
        table = check_table_name(table, "table")
        class_name, using_text = index_class(using)
        index_options = options_map(options, "options") or {}
        for key in _INDEX_META:
            if key in index_options:
                raise CassandraError("options.%s: set by the module (use column/target and using)" % key)
        wanted = dict(
            table=table,
            kind="CUSTOM" if class_name else "COMPOSITES",
            target=index_target(column, target),
            class_name=class_name,
            options=index_options,
        )
    elif table is not None:
        table = check_table_name(table, "table")
    current = read_index(session, keyspace, name)
    queries = []
    created = False
    if state == "absent":
        if current is not None:
            if table is not None and current["table"] != table:
                raise CassandraError(
                    "name: index %s.%s belongs to table %s, not %s; nothing dropped"
                    % (keyspace, name, current["table"], table)
                )
            queries.append("DROP INDEX IF EXISTS %s.%s" % (keyspace, name))
    else:
        if current is None and read_table_options(session, keyspace, table) is None:
            raise CassandraError("table: %s.%s does not exist" % (keyspace, table))
        create = create_index_statement(keyspace, table, name, wanted["target"], using_text, wanted["options"])
        if current is None:
            queries.append(create)
            created = True
        elif not _index_matches(current, wanted):
            if not recreate:
                raise CassandraError(
                    "name: index %s.%s exists as %s, not %s; set recreate to drop it and create it again"
                    % (keyspace, name, describe_index(current), describe_index(wanted))
                )
            queries.extend(["DROP INDEX IF EXISTS %s.%s" % (keyspace, name), create])
            created = True
    execute(session, [] if check_mode else queries)
    after = {}
    if state == "present":
        after = dict(wanted)
        if current is not None and not created:
            after = current
    return dict(changed=bool(queries), queries=queries, diff=dict(before=current or {}, after=after), created=created)


def _up_hosts(session):
    cluster = getattr(session, "cluster", None)
    metadata = getattr(cluster, "metadata", None)
    if metadata is None:
        return [None]
    hosts = [host for host in metadata.all_hosts() if getattr(host, "is_up", True) is not False]
    return hosts or [None]


def _host_name(host):
    return "local" if host is None else str(getattr(host, "address", host))


def _on_host(session, query, params, host):
    if host is None:
        return session.execute(query, params)
    return session.execute(query, params, host=host)


def index_build_status(session, keyspace, name, sai=True):
    """{node: built?} of index keyspace.name on every node that is up (each node answers for itself).

    SAI: system_views.sai_column_indexes (is_queryable and not is_building); other indexes: the node's
    system."IndexInfo" (the built secondary indexes)."""
    status = {}
    for host in _up_hosts(session):
        if sai:
            row = _on_host(
                session,
                "SELECT is_queryable, is_building FROM system_views.sai_column_indexes "
                "WHERE keyspace_name = %s AND index_name = %s",
                (keyspace, name),
                host,
            ).one()
            built = row is not None and bool(row.is_queryable) and not bool(row.is_building)
        else:
            row = _on_host(
                session,
                'SELECT index_name FROM system."IndexInfo" WHERE table_name = %s AND index_name = %s',
                (keyspace, name),
                host,
            ).one()
            built = row is not None
        status[_host_name(host)] = built
    return status


def wait_index_built(
    session, keyspace, name, sai=True, timeout=300, interval=2.0, clock=time.monotonic, sleep=time.sleep
):
    """Poll index_build_status until every node has built the index. Returns dict(built, nodes, waited)."""
    start = clock()
    while True:
        status = index_build_status(session, keyspace, name, sai)
        waited = clock() - start
        if all(status.values()) or waited >= timeout:
            return dict(built=all(status.values()), nodes=status, waited=round(waited, 3))
        sleep(interval)
