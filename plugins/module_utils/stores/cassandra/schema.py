# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Cassandra table tactics: table options and secondary indexes changed on a live cluster.

Reads system_schema.tables / system_schema.indexes, normalizes what is asked (short class names, numbers)
to the form the schema tables store (full class names, strings), and computes the one ALTER TABLE, or the
CREATE / DROP statements, that bring the schema to what is asked. Plain Python: the session comes from
cassandra.connect(); nothing here imports the driver.
"""

from __future__ import annotations

import math
import re
import time

from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.client import CassandraError

_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,47}$")
# Tables and indexes may have longer names than keyspaces (Cassandra 5.0: 222 characters).
_LONG_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,221}$")
_COLUMN = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")
_CLASS = re.compile(r"^[A-Za-z_$][A-Za-z0-9_.$]*$")
_CQL_TYPE = re.compile(r"^[A-Za-z][A-Za-z0-9_<>, ]*$")
_OPTION_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_TARGET = re.compile(r"^(keys|values|entries|full)\(\s*([A-Za-z][A-Za-z0-9_]*)\s*\)$", re.IGNORECASE)

COMPACTION_PACKAGE = "org.apache.cassandra.db.compaction."
COMPACTION_CLASSES = {
    "SizeTieredCompactionStrategy": "SizeTieredCompactionStrategy",
    "STCS": "SizeTieredCompactionStrategy",
    "LeveledCompactionStrategy": "LeveledCompactionStrategy",
    "LCS": "LeveledCompactionStrategy",
    "UnifiedCompactionStrategy": "UnifiedCompactionStrategy",
    "UCS": "UnifiedCompactionStrategy",
    "TimeWindowCompactionStrategy": "TimeWindowCompactionStrategy",
    "TWCS": "TimeWindowCompactionStrategy",
}
# Compaction options whose values are Java enum constants (upper case): TimeWindowCompactionStrategy's.
_COMPACTION_ENUMS = ("compaction_window_unit", "timestamp_resolution")
COMPRESSION_PACKAGE = "org.apache.cassandra.io.compress."
COMPRESSION_CLASSES = ["LZ4Compressor", "ZstdCompressor", "SnappyCompressor", "DeflateCompressor", "NoopCompressor"]
CACHING_KEYS = ["ALL", "NONE"]

# The options cassandra_table manages, in the order they are written.
TABLE_OPTIONS = (
    "compaction",
    "compression",
    "caching",
    "default_time_to_live",
    "gc_grace_seconds",
    "bloom_filter_fp_chance",
    "comment",
)
_MAP_OPTIONS = ("compaction", "compression", "caching")

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

DDL_TIMEOUT = 60


# ---------------------------------------------------------------- names and CQL literals


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


def _options_map(value, field):
    if value is None:
        return None
    if not isinstance(value, dict):
        raise CassandraError("%s: give a dict of options, not %r" % (field, value))
    result = {}
    for key, item in value.items():
        if not isinstance(key, str) or not _OPTION_KEY.match(key):
            raise CassandraError("%s: %r is not an option name (letters, digits, _)" % (field, key))
        if item is None or isinstance(item, (dict, list)):
            raise CassandraError("%s.%s: give a string, number or boolean, not %r" % (field, key, item))
        result[key] = as_text(item)
    return result


# ---------------------------------------------------------------- wanted table options


def compaction_class(name):
    """The full class name of a compaction strategy given by its short name, alias or full name."""
    if isinstance(name, str):
        if name in COMPACTION_CLASSES:
            return COMPACTION_PACKAGE + COMPACTION_CLASSES[name]
        if name.startswith(COMPACTION_PACKAGE) and name[len(COMPACTION_PACKAGE) :] in COMPACTION_CLASSES:
            return name
        upper = name.upper()
        for short, full in COMPACTION_CLASSES.items():
            if short.upper() == upper:
                return COMPACTION_PACKAGE + full
        if "." in name and _CLASS.match(name):
            return name
    raise CassandraError(
        "compaction.class: %r is not allowed; choose one of %s, or a fully qualified class name"
        % (name, ", ".join(COMPACTION_CLASSES))
    )


def normalize_compaction(value):
    """compaction as system_schema.tables stores it: {'class': full name, option: 'string', ...}."""
    options = _options_map(value, "compaction")
    if options is None:
        return None
    if "class" not in value:
        raise CassandraError("compaction.class: required (e.g. LeveledCompactionStrategy or LCS)")
    options["class"] = compaction_class(value["class"])
    for key in _COMPACTION_ENUMS:
        if key in options:
            options[key] = options[key].upper()
    return options


def compression_class(name):
    if isinstance(name, str):
        if name in COMPRESSION_CLASSES:
            return COMPRESSION_PACKAGE + name
        for short in COMPRESSION_CLASSES:
            if name.lower() in (short.lower(), (COMPRESSION_PACKAGE + short).lower()):
                return COMPRESSION_PACKAGE + short
        if "." in name and _CLASS.match(name):
            return name
    raise CassandraError(
        "compression.class: %r is not allowed; choose one of %s, none, or a fully qualified class name"
        % (name, ", ".join(COMPRESSION_CLASSES))
    )


def normalize_compression(value):
    """compression as system_schema.tables stores it; class none means {'enabled': 'false'}."""
    options = _options_map(value, "compression")
    if options is None:
        return None
    if "class" not in value:
        raise CassandraError("compression.class: required (e.g. LZ4Compressor, ZstdCompressor or none)")
    if isinstance(value["class"], str) and value["class"].lower() in ("none", ""):
        if set(options) - {"class", "enabled"}:
            raise CassandraError("compression: class none takes no other option")
        return {"enabled": "false"}
    options["class"] = compression_class(value["class"])
    options.pop("enabled", None)
    if "chunk_length_in_kb" in options:
        chunk = options["chunk_length_in_kb"]
        if not chunk.isdigit() or int(chunk) < 1 or int(chunk) & (int(chunk) - 1):
            raise CassandraError("compression.chunk_length_in_kb: %r is not a power of 2 (4, 16, 64 ...)" % chunk)
    return options


def normalize_caching(value):
    """caching as system_schema.tables stores it: keys ALL|NONE, rows_per_partition ALL|NONE|number."""
    options = _options_map(value, "caching")
    if options is None:
        return None
    unknown = set(options) - {"keys", "rows_per_partition"}
    if unknown:
        raise CassandraError("caching: %s not allowed; the keys are keys and rows_per_partition" % sorted(unknown))
    if "keys" in options:
        options["keys"] = options["keys"].upper()
        if options["keys"] not in CACHING_KEYS:
            raise CassandraError("caching.keys: %r is not allowed; choose ALL or NONE" % value["keys"])
    if "rows_per_partition" in options:
        rows = options["rows_per_partition"].upper()
        if rows not in CACHING_KEYS and not (rows.isdigit() and int(rows) > 0):
            raise CassandraError(
                "caching.rows_per_partition: %r is not allowed; choose ALL, NONE or a number > 0"
                % value["rows_per_partition"]
            )
        options["rows_per_partition"] = rows
    return options


def _int_option(value, field, minimum=0):
    if value is None:
        return None
    if isinstance(value, bool):
        raise CassandraError("%s: %r is not an integer" % (field, value))
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise CassandraError("%s: %r is not an integer" % (field, value)) from None
    if number != float(value) or number < minimum:
        raise CassandraError("%s: %r is not an integer >= %d" % (field, value, minimum))
    return number


def wanted_table_options(
    compaction=None,
    compression=None,
    caching=None,
    default_time_to_live=None,
    gc_grace_seconds=None,
    bloom_filter_fp_chance=None,
    comment=None,
):
    """The options asked for (None: leave as is), normalized; CassandraError names a bad field."""
    wanted = dict(
        compaction=normalize_compaction(compaction),
        compression=normalize_compression(compression),
        caching=normalize_caching(caching),
        default_time_to_live=_int_option(default_time_to_live, "default_time_to_live"),
        gc_grace_seconds=_int_option(gc_grace_seconds, "gc_grace_seconds"),
    )
    if bloom_filter_fp_chance is not None:
        try:
            chance = float(bloom_filter_fp_chance)
        except (TypeError, ValueError):
            chance = -1.0
        if not 0.0 < chance <= 1.0:
            raise CassandraError("bloom_filter_fp_chance: %r is not a number in (0, 1]" % bloom_filter_fp_chance)
        wanted["bloom_filter_fp_chance"] = chance
    if comment is not None:
        wanted["comment"] = str(comment)
    return {key: value for key, value in wanted.items() if value is not None}


# ---------------------------------------------------------------- current schema


def keyspace_exists(session, keyspace):
    row = session.execute(
        "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s", (keyspace,)
    ).one()
    return row is not None


def read_table_options(session, keyspace, table):
    """The managed options of keyspace.table from system_schema.tables (maps of strings), None when absent."""
    row = session.execute(
        "SELECT %s FROM system_schema.tables WHERE keyspace_name = %%s AND table_name = %%s" % ", ".join(TABLE_OPTIONS),
        (keyspace, table),
    ).one()
    if row is None:
        return None
    options = {}
    for key in TABLE_OPTIONS:
        value = getattr(row, key)
        if key in _MAP_OPTIONS:
            value = {str(k): str(v) for k, v in dict(value or {}).items()}
        elif key == "comment":
            value = value or ""
        options[key] = value
    return options


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


# ---------------------------------------------------------------- table: compare and build statements


def _enabled(compression):
    return str(compression.get("enabled", "true")).lower() != "false"


def _map_differs(current, wanted):
    """True when one of the wanted entries differs from the current map (entries not asked for are ignored)."""
    for key, value in wanted.items():
        if key not in current or not same_text(current[key], value):
            return True
    return False


def option_change(option, current, wanted):
    """The value to write for option, or None when the current value already is what is asked.

    Maps (compaction, compression, caching): entries not asked for keep their current value while the class
    stays the same; with another class, only the entries asked for are written."""
    if option == "compaction":
        if current.get("class") != wanted["class"]:
            return dict(wanted)
        return dict(current, **wanted) if _map_differs(current, wanted) else None
    if option == "compression":
        if not _enabled(wanted):
            return None if not _enabled(current) else dict(wanted)
        if not _enabled(current) or current.get("class") != wanted["class"]:
            return dict(wanted)
        return dict(current, **wanted) if _map_differs(current, wanted) else None
    if option == "caching":
        return dict(current, **wanted) if _map_differs(current, wanted) else None
    if option == "comment":
        return None if (current or "") == wanted else wanted
    if option == "bloom_filter_fp_chance":
        return None if current is not None and math.isclose(float(current), wanted, rel_tol=1e-9) else wanted
    return None if current is not None and int(current) == int(wanted) else wanted


def render_option(option, value):
    """option = value as in CREATE TABLE ... WITH / ALTER TABLE ... WITH."""
    if option in _MAP_OPTIONS:
        return "%s = %s" % (option, cql_map(value))
    if option == "comment":
        return "%s = %s" % (option, cql_string(value))
    return "%s = %s" % (option, repr(float(value)) if option == "bloom_filter_fp_chance" else int(value))


def _short_class(name):
    for package in (COMPACTION_PACKAGE, COMPRESSION_PACKAGE):
        if name and name.startswith(package):
            return name[len(package) :]
    return name


def compaction_warning(keyspace, table):
    return "changing the compaction strategy of %s.%s rewrites all its SSTables (compaction load for a while)" % (
        keyspace,
        table,
    )


def wanted_columns(columns, primary_key, clustering_order=None):
    """Validated ({column: type}, [partition columns], [clustering columns], {column: ASC|DESC})."""
    if not isinstance(columns, dict) or not columns:
        raise CassandraError("columns: give a dict {column name: CQL type}, e.g. {y_id: text, field0: blob}")
    checked = {}
    for name, cql_type in columns.items():
        column = check_name(name, "columns", _COLUMN)
        if not isinstance(cql_type, str) or not _CQL_TYPE.match(cql_type.strip()):
            raise CassandraError(
                "columns.%s: %r is not a CQL type (e.g. text, blob, map<text, int>)" % (name, cql_type)
            )
        checked[column] = " ".join(cql_type.split()).lower()
    if not isinstance(primary_key, list) or not primary_key:
        raise CassandraError("primary_key: give a list of columns, the first (or a list of columns) the partition key")
    first = primary_key[0] if isinstance(primary_key[0], list) else [primary_key[0]]
    partition = [check_name(name, "primary_key", _COLUMN) for name in first]
    clustering = []
    for name in primary_key[1:]:
        if isinstance(name, list):
            raise CassandraError("primary_key: only the first entry (the partition key) may be a list of columns")
        clustering.append(check_name(name, "primary_key", _COLUMN))
    if not partition:
        raise CassandraError("primary_key: the partition key needs at least one column")
    for name in partition + clustering:
        if name not in checked:
            raise CassandraError("primary_key: %s is not one of the columns (%s)" % (name, ", ".join(checked)))
    if len(set(partition + clustering)) != len(partition + clustering):
        raise CassandraError("primary_key: a column appears twice")
    order = {}
    for name, direction in (clustering_order or {}).items():
        column = check_name(name, "clustering_order", _COLUMN)
        if column not in clustering:
            raise CassandraError("clustering_order: %s is not a clustering column (%s)" % (name, ", ".join(clustering)))
        if not isinstance(direction, str) or direction.upper() not in ("ASC", "DESC"):
            raise CassandraError("clustering_order.%s: %r is not allowed; choose ASC or DESC" % (name, direction))
        order[column] = direction.upper()
    return checked, partition, clustering, order


def create_table_statement(keyspace, table, columns, partition, clustering, order, options):
    """CREATE TABLE IF NOT EXISTS with the columns, the primary key and the options asked for."""
    key = ", ".join(partition)
    if len(partition) > 1:
        key = "(%s)" % key
    key = ", ".join([key] + clustering)
    body = ", ".join("%s %s" % (name, cql_type) for name, cql_type in columns.items())
    statement = "CREATE TABLE IF NOT EXISTS %s.%s (%s, PRIMARY KEY (%s))" % (keyspace, table, body, key)
    clauses = []
    if order:
        clauses.append(
            "CLUSTERING ORDER BY (%s)" % ", ".join("%s %s" % (name, order.get(name, "ASC")) for name in clustering)
        )
    clauses.extend(render_option(option, options[option]) for option in TABLE_OPTIONS if option in options)
    if clauses:
        statement += " WITH " + " AND ".join(clauses)
    return statement


_TYPE_ALIASES = {"varchar": "text"}


def _same_type(stored, given):
    def canonical(cql_type):
        words = re.split(r"([<>, ]+)", " ".join(cql_type.split()).lower())
        return "".join(_TYPE_ALIASES.get(word, word) for word in words).replace(" ", "")

    return canonical(stored) == canonical(given)


def _column_warning(keyspace, table, wanted, current, current_key, wanted_key):
    problems = []
    for name, cql_type in wanted.items():
        if name not in current:
            problems.append("%s is missing" % name)
        elif not _same_type(current[name], cql_type):
            problems.append("%s is %s, not %s" % (name, current[name], cql_type))
    if current_key != wanted_key:
        problems.append("the primary key is (%s), not (%s)" % (_key_text(*current_key), _key_text(*wanted_key)))
    if not problems:
        return None
    return "%s.%s exists and differs from the columns given (cassandra_table does not alter columns): %s" % (
        keyspace,
        table,
        "; ".join(problems),
    )


def _key_text(partition, clustering):
    head = "(%s)" % ", ".join(partition) if len(partition) > 1 else ", ".join(partition)
    return ", ".join([head] + list(clustering))


def _execute(session, queries):
    for query in queries:
        session.execute(query, timeout=DDL_TIMEOUT)


def ensure_table(
    session,
    keyspace,
    table,
    state="present",
    options=None,
    columns=None,
    primary_key=None,
    clustering_order=None,
    check_mode=False,
):
    """Bring keyspace.table to what is asked: create it (with columns and primary_key), alter its options with
    one ALTER TABLE, or drop it (state absent).

    options: from wanted_table_options(). Returns dict(changed, queries, warnings, diff, options, exists) where
    options are the managed options after the run (predicted in check mode)."""
    keyspace = check_name(keyspace, "keyspace")
    table = check_table_name(table, "name")
    options = dict(options or {})
    if state not in ("present", "absent"):
        raise CassandraError("state: %r is not allowed; choose present or absent" % state)
    layout = None
    if state == "present" and (columns is not None or primary_key is not None):
        if columns is None or primary_key is None:
            raise CassandraError("columns: give both columns and primary_key to create a table")
        layout = wanted_columns(columns, primary_key, clustering_order)
    if not keyspace_exists(session, keyspace):
        if state == "absent":
            return dict(
                changed=False, queries=[], warnings=[], diff=dict(before={}, after={}), options={}, exists=False
            )
        raise CassandraError("keyspace: %s does not exist (create it first, e.g. with cassandra_keyspace)" % keyspace)
    current = read_table_options(session, keyspace, table)
    queries, warnings = [], []
    if state == "absent":
        if current is not None:
            queries.append("DROP TABLE IF EXISTS %s.%s" % (keyspace, table))
        _execute(session, [] if check_mode else queries)
        return dict(
            changed=bool(queries),
            queries=queries,
            warnings=warnings,
            diff=dict(before=current or {}, after={}),
            options={},
            exists=False,
        )
    if current is None:
        if layout is None:
            raise CassandraError(
                "name: table %s.%s does not exist; give columns and primary_key to create it" % (keyspace, table)
            )
        queries.append(create_table_statement(keyspace, table, *layout, options=options))
        _execute(session, [] if check_mode else queries)
        after = read_table_options(session, keyspace, table) if not check_mode else None
        return dict(
            changed=True,
            queries=queries,
            warnings=warnings,
            diff=dict(before={}, after=after or options),
            options=after or options,
            exists=not check_mode,
        )
    if layout is not None:
        existing, existing_key = read_columns(session, keyspace, table)
        warning = _column_warning(keyspace, table, layout[0], existing, existing_key, (layout[1], layout[2]))
        if warning:
            warnings.append(warning)
    changes = {}
    for option in TABLE_OPTIONS:
        if option in options:
            value = option_change(option, current[option], options[option])
            if value is not None:
                changes[option] = value
    after = dict(current, **changes)
    if "compaction" in changes and current["compaction"].get("class") != changes["compaction"].get("class"):
        warnings.append(compaction_warning(keyspace, table))
    if changes:
        queries.append(
            "ALTER TABLE %s.%s WITH %s"
            % (
                keyspace,
                table,
                " AND ".join(render_option(option, changes[option]) for option in TABLE_OPTIONS if option in changes),
            )
        )
    _execute(session, [] if check_mode else queries)
    if queries and not check_mode:
        after = read_table_options(session, keyspace, table) or after
    return dict(
        changed=bool(queries),
        queries=queries,
        warnings=warnings,
        diff=dict(before=current, after=after),
        options=after,
        exists=True,
    )


# ---------------------------------------------------------------- indexes


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
    if isinstance(using, str) and "." in using and _CLASS.match(using):
        return canonical_index_class(using), using
    raise CassandraError("using: %r is not allowed; choose one of %s" % (using, ", ".join(INDEX_USING)))


def index_target(column=None, target=None):
    """The target as system_schema.indexes stores it: a column, or keys(c) / values(c) / entries(c) / full(c)."""
    if (column is None) == (target is None):
        raise CassandraError("column: give either column or target (keys(c), values(c), entries(c), full(c))")
    if column is not None:
        return check_name(column, "column", _COLUMN)
    match = _TARGET.match(target.strip()) if isinstance(target, str) else None
    if not match:
        raise CassandraError("target: %r is not allowed; write keys(c), values(c), entries(c) or full(c)" % target)
    return "%s(%s)" % (match.group(1).lower(), check_name(match.group(2), "target", _COLUMN))


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
        index_options = _options_map(options, "options") or {}
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
    _execute(session, [] if check_mode else queries)
    after = {}
    if state == "present":
        after = dict(wanted)
        if current is not None and not created:
            after = current
    return dict(changed=bool(queries), queries=queries, diff=dict(before=current or {}, after=after), created=created)


# ---------------------------------------------------------------- index build status


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
