# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Table tactics engine: normalization, comparison, statements, check mode, indexes and their build."""

from __future__ import annotations

import pytest
from testlib import Clock

from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import indexes as indexes_mod
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import tables as tables_mod
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.client import CassandraError

STCS = "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy"
LCS = "org.apache.cassandra.db.compaction.LeveledCompactionStrategy"
UCS = "org.apache.cassandra.db.compaction.UnifiedCompactionStrategy"
LZ4 = "org.apache.cassandra.io.compress.LZ4Compressor"
ZSTD = "org.apache.cassandra.io.compress.ZstdCompressor"


class Row:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class Result:
    def __init__(self, rows):
        self.rows = list(rows)

    def one(self):
        return self.rows[0] if self.rows else None

    def __iter__(self):
        return iter(self.rows)


def default_options():
    """A new table's options as Cassandra 5.0 stores them."""
    return dict(
        compaction={"class": STCS, "max_threshold": "32", "min_threshold": "4"},
        compression={"chunk_length_in_kb": "16", "class": LZ4},
        caching={"keys": "ALL", "rows_per_partition": "NONE"},
        default_time_to_live=0,
        gc_grace_seconds=864000,
        bloom_filter_fp_chance=0.01,
        comment="",
    )


class FakeSession:
    """Answers the schema queries of the engine from dicts; records every other statement."""

    def __init__(self, keyspaces=("ks",), tables=None, columns=None, indexes=None, sai=None, hosts=None):
        self.keyspaces = set(keyspaces)
        self.tables = dict(tables or {})
        self.columns = dict(columns or {})
        self.indexes = dict(indexes or {})
        self.sai = sai or {}
        self.executed = []
        self.reads = []
        if hosts is not None:
            self.cluster = Row(metadata=Row(all_hosts=lambda: hosts))

    def execute(self, query, params=None, timeout=None, host=None):
        if not query.startswith("SELECT"):
            self.executed.append(query)
            return Result([])
        self.reads.append((query, params, host))
        if "system_schema.keyspaces" in query:
            return Result([Row(keyspace_name=params[0])] if params[0] in self.keyspaces else [])
        if "system_schema.tables" in query:
            options = self.tables.get(params)
            return Result([Row(**options)] if options is not None else [])
        if "system_schema.columns" in query:
            return Result(
                Row(column_name=c[0], kind=c[1], position=c[2], type=c[3]) for c in self.columns.get(params, [])
            )
        if "system_schema.indexes" in query:
            return Result(
                Row(index_name=name, **vars(row))
                for (keyspace, name), row in self.indexes.items()
                if keyspace == params[0]
            )
        if "sai_column_indexes" in query:
            states = self.sai.get(getattr(host, "address", None), [])
            state = states.pop(0) if len(states) > 1 else (states[0] if states else None)
            return Result([] if state is None else [Row(is_queryable=state[0], is_building=state[1])])
        if "IndexInfo" in query:
            return Result([Row(index_name=params[1])] if self.sai.get("legacy") else [])
        raise AssertionError("unexpected query " + query)


def session_with_table(**changes):
    return FakeSession(tables={("ks", "t"): dict(default_options(), **changes)})


# ---------------------------------------------------------------- normalization


@pytest.mark.parametrize(
    "given, full",
    [
        ("LCS", LCS),
        ("LeveledCompactionStrategy", LCS),
        ("lcs", LCS),
        (LCS, LCS),
        ("STCS", STCS),
        ("UCS", UCS),
        ("TWCS", "org.apache.cassandra.db.compaction.TimeWindowCompactionStrategy"),
        ("com.example.MyStrategy", "com.example.MyStrategy"),
    ],
)
def test_compaction_class_short_names_and_aliases(given, full):
    assert tables_mod.compaction_class(given) == full


def test_compaction_options_become_strings_and_enums_upper_case():
    wanted = tables_mod.normalize_compaction(
        {
            "class": "TWCS",
            "compaction_window_unit": "days",
            "compaction_window_size": 1,
            "unchecked_tombstone_compaction": True,
        }
    )
    assert wanted == {
        "class": "org.apache.cassandra.db.compaction.TimeWindowCompactionStrategy",
        "compaction_window_unit": "DAYS",
        "compaction_window_size": "1",
        "unchecked_tombstone_compaction": "true",
    }


def test_compression_none_and_classes():
    assert tables_mod.normalize_compression({"class": "none"}) == {"enabled": "false"}
    assert tables_mod.normalize_compression({"class": "ZstdCompressor", "chunk_length_in_kb": 64}) == {
        "class": ZSTD,
        "chunk_length_in_kb": "64",
    }
    assert tables_mod.normalize_compression({"class": "lz4compressor"})["class"] == LZ4


def test_caching_upper_case_and_row_counts():
    assert tables_mod.normalize_caching({"keys": "all", "rows_per_partition": 100}) == {
        "keys": "ALL",
        "rows_per_partition": "100",
    }


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(compaction={"class": "FastCompaction"}), "compaction.class"),
        (dict(compaction={"sstable_size_in_mb": 160}), "compaction.class"),
        (dict(compaction={"class": "LCS", "bad-key": 1}), "compaction"),
        (dict(compression={"class": "gzip"}), "compression.class"),
        (dict(compression={"class": "LZ4Compressor", "chunk_length_in_kb": 10}), "compression.chunk_length_in_kb"),
        (dict(compression={"class": "none", "chunk_length_in_kb": 16}), "compression"),
        (dict(caching={"keys": "SOME"}), "caching.keys"),
        (dict(caching={"rows_per_partition": -3}), "caching.rows_per_partition"),
        (dict(caching={"rows": "ALL"}), "caching"),
        (dict(default_time_to_live=-1), "default_time_to_live"),
        (dict(gc_grace_seconds="ten"), "gc_grace_seconds"),
        (dict(bloom_filter_fp_chance=0), "bloom_filter_fp_chance"),
        (dict(bloom_filter_fp_chance=1.5), "bloom_filter_fp_chance"),
    ],
)
def test_bad_options_name_the_field(kwargs, field):
    with pytest.raises(CassandraError) as err:
        tables_mod.wanted_table_options(**kwargs)
    assert str(err.value).startswith(field + ":"), str(err.value)


def test_compaction_class_error_lists_the_allowed_names():
    with pytest.raises(CassandraError) as err:
        tables_mod.compaction_class("Fast")
    assert "LeveledCompactionStrategy" in str(err.value) and "TWCS" in str(err.value)


def test_only_given_options_are_wanted():
    assert tables_mod.wanted_table_options(default_time_to_live=86400, comment="") == {
        "default_time_to_live": 86400,
        "comment": "",
    }


# ---------------------------------------------------------------- comparison and ALTER


def test_lcs_change_is_one_alter_with_a_warning():
    session = session_with_table()
    options = tables_mod.wanted_table_options(
        compaction={"class": "LCS", "sstable_size_in_mb": 160},
        compression={"class": "LZ4Compressor", "chunk_length_in_kb": 16},
        default_time_to_live=86400,
        caching={"keys": "ALL"},
    )
    result = tables_mod.ensure_table(session, "ks", "t", options=options)
    assert result["changed"]
    assert result["queries"] == [
        "ALTER TABLE ks.t WITH compaction = {'class': '%s', 'sstable_size_in_mb': '160'} "
        "AND default_time_to_live = 86400" % LCS
    ]
    assert session.executed == result["queries"]
    assert result["warnings"] == [
        "changing the compaction strategy of ks.t rewrites all its SSTables (compaction load for a while)"
    ]
    # After a real run the options are read back from the server; check mode predicts them.
    check = tables_mod.ensure_table(session_with_table(), "ks", "t", options=options, check_mode=True)
    assert check["diff"]["before"]["compaction"]["class"] == STCS
    assert check["diff"]["after"]["compaction"] == {"class": LCS, "sstable_size_in_mb": "160"}
    assert check["diff"]["after"]["default_time_to_live"] == 86400
    assert check["options"] == check["diff"]["after"]


def test_check_mode_reports_the_same_and_executes_nothing():
    options = tables_mod.wanted_table_options(compaction={"class": "LCS"}, default_time_to_live=3600)
    real = tables_mod.ensure_table(session_with_table(), "ks", "t", options=options)
    session = session_with_table()
    check = tables_mod.ensure_table(session, "ks", "t", options=options, check_mode=True)
    assert session.executed == []
    assert check["changed"] == real["changed"] and check["queries"] == real["queries"]
    assert check["warnings"] == real["warnings"]


def test_stored_strings_equal_given_numbers_nothing_to_do():
    session = session_with_table(
        compaction={"class": LCS, "max_threshold": "32", "min_threshold": "4", "sstable_size_in_mb": "160"},
        default_time_to_live=86400,
    )
    options = tables_mod.wanted_table_options(
        compaction={"class": "LeveledCompactionStrategy", "sstable_size_in_mb": 160},
        compression={"class": "LZ4Compressor", "chunk_length_in_kb": 16},
        caching={"keys": "all", "rows_per_partition": "none"},
        default_time_to_live=86400,
        gc_grace_seconds=864000,
        bloom_filter_fp_chance=0.01,
        comment="",
    )
    result = tables_mod.ensure_table(session, "ks", "t", options=options)
    assert not result["changed"] and result["queries"] == [] and result["warnings"] == []
    assert session.executed == []
    assert result["diff"]["before"] == result["diff"]["after"]


def test_same_class_keeps_the_options_not_given():
    session = session_with_table(
        compaction={"class": LCS, "max_threshold": "32", "min_threshold": "4", "sstable_size_in_mb": "160"}
    )
    options = tables_mod.wanted_table_options(compaction={"class": "LCS", "fanout_size": 8})
    result = tables_mod.ensure_table(session, "ks", "t", options=options)
    assert result["warnings"] == []
    assert result["queries"] == [
        "ALTER TABLE ks.t WITH compaction = {'class': '%s', 'fanout_size': '8', 'max_threshold': '32', "
        "'min_threshold': '4', 'sstable_size_in_mb': '160'}" % LCS
    ]


def test_another_class_writes_only_the_options_given():
    session = session_with_table()
    result = tables_mod.ensure_table(
        session, "ks", "t", options=tables_mod.wanted_table_options(compaction={"class": "UCS"})
    )
    assert result["queries"] == ["ALTER TABLE ks.t WITH compaction = {'class': '%s'}" % UCS]


def test_compression_disable_and_enable_again():
    disable = tables_mod.ensure_table(
        session_with_table(), "ks", "t", options=tables_mod.wanted_table_options(compression={"class": "none"})
    )
    assert disable["queries"] == ["ALTER TABLE ks.t WITH compression = {'enabled': 'false'}"]
    already = tables_mod.ensure_table(
        session_with_table(compression={"enabled": "false"}),
        "ks",
        "t",
        options=tables_mod.wanted_table_options(compression={"class": "none"}),
    )
    assert already["queries"] == []
    enable = tables_mod.ensure_table(
        session_with_table(compression={"enabled": "false"}),
        "ks",
        "t",
        options=tables_mod.wanted_table_options(compression={"class": "LZ4Compressor"}),
    )
    assert enable["queries"] == ["ALTER TABLE ks.t WITH compression = {'class': '%s'}" % LZ4]


def test_caching_merges_and_scalars_render():
    session = session_with_table()
    options = tables_mod.wanted_table_options(
        caching={"rows_per_partition": 100}, gc_grace_seconds=3600, bloom_filter_fp_chance=0.1, comment="it's hot"
    )
    result = tables_mod.ensure_table(session, "ks", "t", options=options)
    assert result["queries"] == [
        "ALTER TABLE ks.t WITH caching = {'keys': 'ALL', 'rows_per_partition': '100'} AND gc_grace_seconds = 3600 "
        "AND bloom_filter_fp_chance = 0.1 AND comment = 'it''s hot'"
    ]


def test_a_caching_change_alone_makes_the_clients_re_prepare():
    # A statement prepared before keeps the old caching, and only some changes (gc_grace_seconds among them)
    # invalidate it: the grace is held one second longer with the caching, then set back.
    session = session_with_table()
    options = tables_mod.wanted_table_options(caching={"rows_per_partition": "ALL"})
    result = tables_mod.ensure_table(session, "ks", "t", options=options)
    assert result["queries"] == [
        "ALTER TABLE ks.t WITH caching = {'keys': 'ALL', 'rows_per_partition': 'ALL'} AND gc_grace_seconds = 864001",
        "ALTER TABLE ks.t WITH gc_grace_seconds = 864000",
    ]
    assert session.executed == result["queries"]
    assert len(result["warnings"]) == 1 and "re-prepare" in result["warnings"][0]
    assert result["diff"]["after"]["gc_grace_seconds"] == 864000
    check = tables_mod.ensure_table(session_with_table(), "ks", "t", options=options, check_mode=True)
    assert check["queries"] == result["queries"] and check["diff"]["after"]["gc_grace_seconds"] == 864000
    # Already cached that way: nothing to do, nothing re-prepared.
    again = tables_mod.ensure_table(
        session_with_table(caching={"keys": "ALL", "rows_per_partition": "ALL"}), "ks", "t", options=options
    )
    assert again["queries"] == [] and again["warnings"] == []


def test_bloom_filter_chance_compared_as_a_number():
    result = tables_mod.ensure_table(
        session_with_table(bloom_filter_fp_chance=0.1), "ks", "t", options={"bloom_filter_fp_chance": 0.1000000000001}
    )
    assert not result["changed"]


# ---------------------------------------------------------------- create, drop, errors


YCSB = {"y_id": "text", "field0": "text", "field1": "text"}


def test_missing_table_is_created_with_its_options():
    session = FakeSession()
    options = tables_mod.wanted_table_options(compaction={"class": "LCS"}, default_time_to_live=86400)
    result = tables_mod.ensure_table(session, "ks", "usertable", options=options, columns=YCSB, primary_key=["y_id"])
    assert result["changed"]
    assert result["queries"] == [
        "CREATE TABLE IF NOT EXISTS ks.usertable (y_id text, field0 text, field1 text, PRIMARY KEY (y_id)) "
        "WITH compaction = {'class': '%s'} AND default_time_to_live = 86400" % LCS
    ]
    assert result["warnings"] == []


def test_create_in_check_mode_touches_nothing():
    session = FakeSession()
    result = tables_mod.ensure_table(session, "ks", "usertable", columns=YCSB, primary_key=["y_id"], check_mode=True)
    assert result["changed"] and result["queries"][0].startswith("CREATE TABLE IF NOT EXISTS ks.usertable")
    assert session.executed == [] and result["exists"] is False


def test_composite_key_and_clustering_order():
    session = FakeSession()
    result = tables_mod.ensure_table(
        session,
        "ks",
        "events",
        columns={"sensor": "text", "day": "date", "ts": "timestamp", "value": "double"},
        primary_key=[["sensor", "day"], "ts"],
        clustering_order={"ts": "desc"},
        check_mode=True,
    )
    assert result["queries"] == [
        "CREATE TABLE IF NOT EXISTS ks.events (sensor text, day date, ts timestamp, value double, "
        "PRIMARY KEY ((sensor, day), ts)) WITH CLUSTERING ORDER BY (ts DESC)"
    ]


@pytest.mark.parametrize(
    "columns, primary_key, order, field",
    [
        ({}, ["a"], None, "columns"),
        ({"a": "text; DROP"}, ["a"], None, "columns.a"),
        ({"a-b": "text"}, ["a-b"], None, "columns"),
        ({"a": "text"}, [], None, "primary_key"),
        ({"a": "text"}, ["b"], None, "primary_key"),
        ({"a": "text", "b": "int"}, ["a", ["b"]], None, "primary_key"),
        ({"a": "text", "b": "int"}, ["a", "b"], {"a": "ASC"}, "clustering_order"),
        ({"a": "text", "b": "int"}, ["a", "b"], {"b": "UP"}, "clustering_order.b"),
    ],
)
def test_bad_layout_names_the_field(columns, primary_key, order, field):
    session = FakeSession()
    with pytest.raises(CassandraError) as err:
        tables_mod.ensure_table(session, "ks", "t", columns=columns, primary_key=primary_key, clustering_order=order)
    assert str(err.value).startswith(field + ":"), str(err.value)
    assert session.executed == []


def test_missing_table_without_columns_fails_clearly():
    with pytest.raises(CassandraError, match=r"^name: table ks.t does not exist; give columns and primary_key"):
        tables_mod.ensure_table(FakeSession(), "ks", "t", options={"default_time_to_live": 1})


def test_missing_keyspace_fails_and_absent_is_fine():
    with pytest.raises(CassandraError, match="^keyspace: nope does not exist"):
        tables_mod.ensure_table(FakeSession(), "nope", "t")
    assert tables_mod.ensure_table(FakeSession(), "nope", "t", state="absent")["changed"] is False


@pytest.mark.parametrize(
    "keyspace, table, field", [("ks;", "t", "keyspace"), ("ks", "t t", "name"), ("1ks", "t", "keyspace")]
)
def test_bad_names_fail_before_any_query(keyspace, table, field):
    session = FakeSession()
    with pytest.raises(CassandraError, match="^%s:" % field):
        tables_mod.ensure_table(session, keyspace, table)
    assert session.reads == [] and session.executed == []


def test_names_are_lower_case_as_cassandra_stores_them():
    session = session_with_table()
    result = tables_mod.ensure_table(session, "KS", "T", options={"default_time_to_live": 5})
    assert result["queries"] == ["ALTER TABLE ks.t WITH default_time_to_live = 5"]


def test_existing_table_with_other_columns_warns_and_is_not_altered_in_its_columns():
    session = FakeSession(
        tables={("ks", "usertable"): default_options()},
        columns={("ks", "usertable"): [("y_id", "partition_key", 0, "text"), ("field0", "regular", -1, "blob")]},
    )
    result = tables_mod.ensure_table(session, "ks", "usertable", columns=YCSB, primary_key=["y_id"])
    assert not result["changed"]
    assert result["warnings"] == [
        "ks.usertable exists and differs from the columns given (cassandra_table does not alter columns): "
        "field0 is blob, not text; field1 is missing"
    ]


def test_same_columns_no_warning():
    session = FakeSession(
        tables={("ks", "usertable"): default_options()},
        columns={
            ("ks", "usertable"): [
                ("y_id", "partition_key", 0, "text"),
                ("field0", "regular", -1, "text"),
                ("field1", "regular", -1, "text"),
            ]
        },
    )
    assert tables_mod.ensure_table(session, "ks", "usertable", columns=YCSB, primary_key=["y_id"])["warnings"] == []
    aliases = {"y_id": "varchar", "field0": "TEXT", "field1": "text"}
    assert tables_mod.ensure_table(session, "ks", "usertable", columns=aliases, primary_key=["y_id"])["warnings"] == []


def test_absent_drops_existing_table_only():
    session = session_with_table()
    result = tables_mod.ensure_table(session, "ks", "t", state="absent")
    assert result["queries"] == ["DROP TABLE IF EXISTS ks.t"] and session.executed == result["queries"]
    again = tables_mod.ensure_table(FakeSession(), "ks", "t", state="absent")
    assert not again["changed"]


# ---------------------------------------------------------------- indexes


def sai_row(table="usertable", target="field0", class_name="sai", **options):
    return Row(table_name=table, kind="CUSTOM", options=dict(options, target=target, class_name=class_name))


def index_session(**indexes):
    return FakeSession(
        tables={("ks", "usertable"): default_options()}, indexes={("ks", key): row for key, row in indexes.items()}
    )


def test_sai_index_is_created_then_unchanged():
    session = index_session()
    result = indexes_mod.ensure_index(session, "ks", "usertable", "field0_idx", column="field0")
    assert result["changed"] and result["created"]
    assert result["queries"] == ["CREATE INDEX IF NOT EXISTS field0_idx ON ks.usertable (field0) USING 'sai'"]
    assert session.executed == result["queries"]
    assert result["diff"]["before"] == {}
    again = indexes_mod.ensure_index(
        index_session(field0_idx=sai_row()), "ks", "usertable", "field0_idx", column="field0"
    )
    assert not again["changed"] and again["queries"] == []


@pytest.mark.parametrize("stored", ["sai", "SAI", "StorageAttachedIndex", indexes_mod.SAI_CLASS])
def test_every_spelling_of_sai_is_the_same_index(stored):
    session = index_session(field0_idx=sai_row(class_name=stored))
    assert not indexes_mod.ensure_index(session, "ks", "usertable", "field0_idx", column="field0", using="SAI")[
        "changed"
    ]


def test_index_check_mode_touches_nothing():
    session = index_session()
    result = indexes_mod.ensure_index(session, "ks", "usertable", "field0_idx", column="field0", check_mode=True)
    assert result["changed"] and session.executed == []


def test_index_options_rendered_and_compared_as_strings():
    session = index_session()
    result = indexes_mod.ensure_index(
        session, "ks", "usertable", "f1_idx", column="field1", options={"case_sensitive": False, "normalize": True}
    )
    assert result["queries"] == [
        "CREATE INDEX IF NOT EXISTS f1_idx ON ks.usertable (field1) USING 'sai' "
        "WITH OPTIONS = {'case_sensitive': 'false', 'normalize': 'true'}"
    ]
    stored = sai_row(target="field1", case_sensitive="false", normalize="true")
    same = indexes_mod.ensure_index(
        index_session(f1_idx=stored),
        "ks",
        "usertable",
        "f1_idx",
        column="field1",
        options={"case_sensitive": False, "normalize": True},
    )
    assert not same["changed"]


def test_other_target_fails_clearly_unless_recreate():
    session = index_session(field0_idx=sai_row(target="field1"))
    with pytest.raises(CassandraError) as err:
        indexes_mod.ensure_index(session, "ks", "usertable", "field0_idx", column="field0")
    assert str(err.value) == (
        "name: index ks.field0_idx exists as usertable(field1) using sai, not usertable(field0) using sai; "
        "set recreate to drop it and create it again"
    )
    assert session.executed == []
    result = indexes_mod.ensure_index(session, "ks", "usertable", "field0_idx", column="field0", recreate=True)
    assert result["queries"] == [
        "DROP INDEX IF EXISTS ks.field0_idx",
        "CREATE INDEX IF NOT EXISTS field0_idx ON ks.usertable (field0) USING 'sai'",
    ]


def test_other_implementation_fails():
    legacy = Row(table_name="usertable", kind="COMPOSITES", options={"target": "field0"})
    with pytest.raises(CassandraError, match="exists as usertable.field0. using legacy_local_table, not"):
        indexes_mod.ensure_index(index_session(field0_idx=legacy), "ks", "usertable", "field0_idx", column="field0")
    same = indexes_mod.ensure_index(
        index_session(field0_idx=legacy), "ks", "usertable", "field0_idx", column="field0", using="legacy_local_table"
    )
    assert not same["changed"]


def test_collection_targets():
    assert indexes_mod.index_target(target="KEYS(m)") == "keys(m)"
    assert indexes_mod.index_target(target="entries( m )") == "entries(m)"
    stored_values = sai_row(target="values(m)")
    assert not indexes_mod.ensure_index(index_session(m_idx=stored_values), "ks", "usertable", "m_idx", column="m")[
        "changed"
    ]
    result = indexes_mod.ensure_index(index_session(), "ks", "usertable", "mk_idx", target="keys(m)", check_mode=True)
    assert result["queries"] == ["CREATE INDEX IF NOT EXISTS mk_idx ON ks.usertable (keys(m)) USING 'sai'"]


def test_sasi_and_custom_classes_are_written_in_full():
    result = indexes_mod.ensure_index(index_session(), "ks", "usertable", "s_idx", column="field0", using="sasi")
    assert result["queries"][0].endswith("USING 'org.apache.cassandra.index.sasi.SASIIndex'")
    result = indexes_mod.ensure_index(
        index_session(), "ks", "usertable", "c_idx", column="field0", using="com.example.Idx"
    )
    assert result["queries"][0].endswith("USING 'com.example.Idx'")


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(column=None), "column"),
        (dict(column="a", target="keys(a)"), "column"),
        (dict(column=None, target="lower(a)"), "target"),
        (dict(column="a b"), "column"),
        (dict(column="a", using="fast"), "using"),
        (dict(column="a", options={"target": "b"}), "options.target"),
        (dict(column="a", table="x;y"), "table"),
    ],
)
def test_bad_index_input_names_the_field(kwargs, field):
    session = index_session()
    args = dict(dict(table="usertable", column="a"), **kwargs)
    with pytest.raises(CassandraError) as err:
        indexes_mod.ensure_index(session, "ks", args.pop("table"), "idx", **args)
    assert str(err.value).startswith(field + ":"), str(err.value)
    assert session.executed == []


def test_index_on_a_missing_table_fails():
    with pytest.raises(CassandraError, match="^table: ks.nope does not exist"):
        indexes_mod.ensure_index(index_session(), "ks", "nope", "idx", column="a")


def test_absent_index_dropped_once_and_table_checked():
    session = index_session(field0_idx=sai_row())
    result = indexes_mod.ensure_index(session, "ks", None, "field0_idx", state="absent")
    assert result["queries"] == ["DROP INDEX IF EXISTS ks.field0_idx"] and result["diff"]["after"] == {}
    assert not indexes_mod.ensure_index(index_session(), "ks", None, "field0_idx", state="absent")["changed"]
    with pytest.raises(CassandraError, match="belongs to table usertable, not other"):
        indexes_mod.ensure_index(index_session(field0_idx=sai_row()), "ks", "other", "field0_idx", state="absent")


# ---------------------------------------------------------------- build status


def test_wait_until_every_node_has_built_the_sai_index():
    hosts = [Row(address="10.0.0.1", is_up=True), Row(address="10.0.0.2", is_up=True)]
    session = FakeSession(
        hosts=hosts,
        sai={"10.0.0.1": [(True, False)], "10.0.0.2": [None, (False, True), (True, False)]},
    )
    clock = Clock()
    result = indexes_mod.wait_index_built(session, "ks", "idx", timeout=60, interval=2, clock=clock, sleep=clock.sleep)
    assert result == dict(built=True, nodes={"10.0.0.1": True, "10.0.0.2": True}, waited=4.0)
    assert {read[2].address for read in session.reads} == {"10.0.0.1", "10.0.0.2"}


def test_wait_gives_up_after_the_timeout_and_skips_down_nodes():
    hosts = [Row(address="10.0.0.1", is_up=True), Row(address="10.0.0.9", is_up=False)]
    session = FakeSession(hosts=hosts, sai={"10.0.0.1": [(False, True)]})
    clock = Clock()
    result = indexes_mod.wait_index_built(session, "ks", "idx", timeout=5, interval=2, clock=clock, sleep=clock.sleep)
    assert result["built"] is False and result["nodes"] == {"10.0.0.1": False} and result["waited"] >= 5


def test_legacy_index_built_from_index_info():
    session = FakeSession(sai={"legacy": True})
    assert indexes_mod.index_build_status(session, "ks", "idx", sai=False) == {"local": True}
