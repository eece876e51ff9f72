# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Cassandra table tactics: table options (compaction, compression, caching, TTL, ...) changed on a live cluster.

Reads system_schema.tables, normalizes what is asked (short class names, numbers) to the form the schema tables
store (full class names, strings), and computes the one ALTER TABLE (or the CREATE TABLE) that brings the table
to what is asked. Plain Python: the session comes from client.connect(); nothing here imports the driver.
"""

from __future__ import annotations

import math
import re

from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.client import CassandraError
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.schema import (
    CLASS_NAME,
    COLUMN_NAME,
    check_name,
    check_table_name,
    cql_map,
    cql_string,
    execute,
    keyspace_exists,
    options_map,
    read_columns,
    same_text,
)

_CQL_TYPE = re.compile(r"^[A-Za-z][A-Za-z0-9_<>, ]*$")


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
        if "." in name and CLASS_NAME.match(name):
            return name
    raise CassandraError(
        "compaction.class: %r is not allowed; choose one of %s, or a fully qualified class name"
        % (name, ", ".join(COMPACTION_CLASSES))
    )


def normalize_compaction(value):
    """compaction as system_schema.tables stores it: {'class': full name, option: 'string', ...}."""
    options = options_map(value, "compaction")
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
        if "." in name and CLASS_NAME.match(name):
            return name
    raise CassandraError(
        "compression.class: %r is not allowed; choose one of %s, none, or a fully qualified class name"
        % (name, ", ".join(COMPRESSION_CLASSES))
    )


def normalize_compression(value):
    """compression as system_schema.tables stores it; class none means {'enabled': 'false'}."""
    options = options_map(value, "compression")
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
    options = options_map(value, "caching")
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


def reprepare_note(keyspace, table):
    """Why a caching change comes with a gc_grace_seconds change and back."""
    return (
        "caching of %s.%s changed: a statement prepared before keeps the caching of the moment it was prepared (a "
        "change of caching alone does not invalidate it, so reads prepared earlier would never fill a row cache), "
        "so gc_grace_seconds was raised by one second and set back, which makes every client re-prepare its "
        "statements on the table on their next execution" % (keyspace, table)
    )


def wanted_columns(columns, primary_key, clustering_order=None):
    """Validated ({column: type}, [partition columns], [clustering columns], {column: ASC|DESC})."""
    if not isinstance(columns, dict) or not columns:
        raise CassandraError("columns: give a dict {column name: CQL type}, e.g. {y_id: text, field0: blob}")
    checked = {}
    for name, cql_type in columns.items():
        column = check_name(name, "columns", COLUMN_NAME)
        if not isinstance(cql_type, str) or not _CQL_TYPE.match(cql_type.strip()):
            raise CassandraError(
                "columns.%s: %r is not a CQL type (e.g. text, blob, map<text, int>)" % (name, cql_type)
            )
        checked[column] = " ".join(cql_type.split()).lower()
    if not isinstance(primary_key, list) or not primary_key:
        raise CassandraError("primary_key: give a list of columns, the first (or a list of columns) the partition key")
    first = primary_key[0] if isinstance(primary_key[0], list) else [primary_key[0]]
    partition = [check_name(name, "primary_key", COLUMN_NAME) for name in first]
    clustering = []
    for name in primary_key[1:]:
        if isinstance(name, list):
            raise CassandraError("primary_key: only the first entry (the partition key) may be a list of columns")
        clustering.append(check_name(name, "primary_key", COLUMN_NAME))
    if not partition:
        raise CassandraError("primary_key: the partition key needs at least one column")
    for name in partition + clustering:
        if name not in checked:
            raise CassandraError("primary_key: %s is not one of the columns (%s)" % (name, ", ".join(checked)))
    if len(set(partition + clustering)) != len(partition + clustering):
        raise CassandraError("primary_key: a column appears twice")
    order = {}
    for name, direction in (clustering_order or {}).items():
        column = check_name(name, "clustering_order", COLUMN_NAME)
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
        execute(session, [] if check_mode else queries)
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
        execute(session, [] if check_mode else queries)
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
        written = dict(changes)
        reprepare = "caching" in changes and "gc_grace_seconds" not in changes
        if reprepare:
            # Held one second longer for the moment between the two statements: a longer grace is never less safe.
            written["gc_grace_seconds"] = int(current["gc_grace_seconds"]) + 1
        queries.append(
            "ALTER TABLE %s.%s WITH %s"
            % (
                keyspace,
                table,
                " AND ".join(render_option(option, written[option]) for option in TABLE_OPTIONS if option in written),
            )
        )
        if reprepare:
            queries.append(
                "ALTER TABLE %s.%s WITH %s"
                % (keyspace, table, render_option("gc_grace_seconds", current["gc_grace_seconds"]))
            )
            warnings.append(reprepare_note(keyspace, table))
    execute(session, [] if check_mode else queries)
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
