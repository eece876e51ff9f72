# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Cassandra schema objects: names and CQL literals checked and written the way Cassandra stores them, and the
schema reads the table and index tactics share (keyspaces, columns). Plain Python: the session comes from
client.connect(); nothing here imports the driver.
"""

from __future__ import annotations

import math
import re

from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.client import CassandraError

_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,47}$")
# Tables and indexes may have longer names than keyspaces (Cassandra 5.0: 222 characters).
_LONG_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,221}$")
COLUMN_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")
CLASS_NAME = re.compile(r"^[A-Za-z_$][A-Za-z0-9_.$]*$")


OPTION_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


DDL_TIMEOUT = 60


def check_name(value, field, pattern=_IDENTIFIER):
    """A CQL identifier as Cassandra stores it unquoted (lower case), or CassandraError naming the field."""
    if not isinstance(value, str) or not pattern.match(value):
        raise CassandraError(
            "%s: %r is not a CQL name (a letter, then letters, digits or _; unquoted names only)" % (field, value)
        )
    return value.lower()


def check_table_name(value, field="name"):
    """A table or index name (longer than a keyspace name may be), lower case; CassandraError names the field."""
    return check_name(value, field, _LONG_IDENTIFIER)


def cql_string(value):
    """A CQL string literal."""
    return "'%s'" % str(value).replace("'", "''")


def cql_map(mapping):
    """A CQL map literal of strings, keys in a stable order (class first)."""
    keys = sorted(mapping, key=lambda key: (key != "class", key))
    return "{" + ", ".join("%s: %s" % (cql_string(key), cql_string(mapping[key])) for key in keys) + "}"


def as_text(value):
    """An option value as the schema tables store it: a string (true/false for booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def same_text(stored, wanted):
    """Equal as the server would store them: same string, same number, or same word in another case."""
    stored, wanted = as_text(stored), as_text(wanted)
    if stored == wanted or stored.lower() == wanted.lower():
        return True
    try:
        return math.isclose(float(stored), float(wanted), rel_tol=1e-9, abs_tol=1e-12)
    except ValueError:
        return False


def options_map(value, field):
    if value is None:
        return None
    if not isinstance(value, dict):
        raise CassandraError("%s: give a dict of options, not %r" % (field, value))
    result = {}
    for key, item in value.items():
        if not isinstance(key, str) or not OPTION_KEY.match(key):
            raise CassandraError("%s: %r is not an option name (letters, digits, _)" % (field, key))
        if item is None or isinstance(item, (dict, list)):
            raise CassandraError("%s.%s: give a string, number or boolean, not %r" % (field, key, item))
        result[key] = as_text(item)
    return result


def keyspace_exists(session, keyspace):
    row = session.execute(
        "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s", (keyspace,)
    ).one()
    return row is not None


def read_columns(session, keyspace, table):
    """{column: cql type} and the primary key ([partition columns], [clustering columns]) of keyspace.table."""
    rows = session.execute(
        "SELECT column_name, kind, position, type FROM system_schema.columns "
        "WHERE keyspace_name = %s AND table_name = %s",
        (keyspace, table),
    )
    columns = {}
    keys = {"partition_key": [], "clustering": []}
    for row in rows:
        columns[row.column_name] = row.type
        if row.kind in keys:
            keys[row.kind].append((row.position, row.column_name))
    return columns, (
        [name for _p, name in sorted(keys["partition_key"])],
        [name for _p, name in sorted(keys["clustering"])],
    )


def execute(session, queries):
    for query in queries:
        session.execute(query, timeout=DDL_TIMEOUT)
