# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The parameter catalog: files against the schema, values, validation, live actions, real server readings."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from ansible.errors import AnsibleLookupError
from testlib import ROOT

from ansible_collections.tactician.nosql.plugins.lookup import catalog as catalog_lookup_plugin
from ansible_collections.tactician.nosql.plugins.lookup.catalog import catalog_lookup
from ansible_collections.tactician.nosql.plugins.module_utils.core import catalog as cat
from ansible_collections.tactician.nosql.plugins.module_utils.core import catalog_files
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog import Catalog
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog_files import CatalogError

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "catalog")

# Table 1 of the irace study (Cassandra 3.6 names) -> the Cassandra 5.0 catalog names.
IRACE = {
    "concurrent_writes": "concurrent_writes",
    "file_cache_size_in_mb": "file_cache_size",
    "memtable_cleanup_threshold": "memtable_cleanup_threshold",
    "concurrent_compactors": "concurrent_compactors",
    "compaction_method": "compaction",
    "num_tokens": "num_tokens",
    "replication_factor": "replication_factor",
    "concurrent_reads": "concurrent_reads",
    "memtable_heap_space_in_mb": "memtable_heap_space",
    "memtable_allocation_type": "memtable_allocation_type",
    "row_cache_size_in_mb": "row_cache_size",
    "sstable_preemptive_open_interval_in_mb": "sstable_preemptive_open_interval",
    "trickle_fsync": "trickle_fsync",
    "inter_dc_stream_throughput_outbound_megabits_per_sec": "inter_dc_stream_throughput_outbound",
    "key_cache_size_in_mb": "key_cache_size",
    "stream_throughput_outbound_megabits_per_sec": "stream_throughput_outbound",
    "row_cache_save_period": "row_cache_save_period",
    "column_index_size_in_kb": "column_index_size",
    "compaction_throughput_mb_per_sec": "compaction_throughput",
    "memtable_offheap_space_in_mb": "memtable_offheap_space",
    "commitlog_segment_size_in_mb": "commitlog_segment_size",
    "memtable_flush_writers": "memtable_flush_writers",
    "index_summary_capacity_in_mb": "index_summary_capacity",  # the paper's "index summary [75, 150]"
}
# The seven parameters of IRIS -> the Cassandra 5.0 catalog names.
IRIS = {
    "compaction method": "compaction",
    "memtable_flush_writers": "memtable_flush_writers",
    "memtable_cleanup_threshold": "memtable_cleanup_threshold",
    "trickle_fsync": "trickle_fsync",
    "row_cache_size_in_mb": "row_cache_size",
    "concurrent_writes": "concurrent_writes",
    "memtable_heap_space_in_mb": "memtable_heap_space",
}


def _fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def cassandra():
    return Catalog.for_store("cassandra")


@pytest.fixture(scope="module")
def redis():
    return Catalog.for_store("redis")


@pytest.fixture(scope="module")
def mongodb():
    return Catalog.for_store("mongodb")


def _all():
    return [Catalog.for_store(store) for store in catalog_files.STORES]


def _sample(entry):
    """A value of the entry other than its default, inside its range."""
    kind = entry["type"]
    if kind == "bool":
        return not entry["default"]
    if kind == "enum":
        return entry["choices"][-1]
    if kind == "string":
        return "900 1"
    low, high = entry["min"], entry["max"]
    value = low + (high - low) / 3.0 if high - low < 100 else low + 3
    if kind == "float" or entry.get("integer") is False:
        return round(value, 3)
    return int(value)


# ------------------------------------------------------------------------------------------------ files
@pytest.mark.parametrize("store", catalog_files.STORES)
def test_every_file_matches_the_schema(store):
    for path in catalog_files._available(store).values():
        data = catalog_files.load_catalog_file(path)
        catalog_files.validate_catalog_schema(data)
        assert data["store"] == store
        assert os.path.basename(path) == "%s-%s.yml" % (store, data["version"])


def test_the_schema_catches_a_broken_entry():
    data = Catalog.for_store("redis").to_dict()
    broken = data["parameters"][0]
    broken["apply"] = "restart"  # keeps its live object
    broken["type"] = "size"
    broken.pop("min")
    with pytest.raises(CatalogError) as err:
        catalog_files.validate_catalog_schema(data)
    text = str(err.value)
    assert "[maxmemory]" in text and "min" in text
    with pytest.raises(CatalogError, match="maxmemory: missing min|maxmemory: min must be a number"):
        Catalog(data)


def test_structure_check_names_every_problem():
    data = {
        "store": "redis",
        "version": "7",
        "parameters": [
            {
                "name": "hz",
                "type": "int",
                "unit": "none",
                "min": 1,
                "max": 500,
                "default": 10,
                "scope": "node",
                "apply": "live",
                "resource": "cpu",
                "config_key": "hz",
                "config_format": "{value}",
                "setting_name": "hz",
                "papers": [],
            },
            {"name": "hz", "type": "integer"},
        ],
    }
    with pytest.raises(CatalogError) as err:
        Catalog(data)
    problems = err.value.problems
    assert "hz: apply live needs a live object saying how" in problems
    assert any("type 'integer' is not one of" in p for p in problems)
    assert any("name hz is also used by hz" in p for p in problems)
    assert any("missing description" in p for p in problems)


def test_the_engine_imports_neither_jsonschema_nor_yaml():
    code = (
        "import sys; sys.path.insert(0, %r); "
        "import ansible_collections.tactician.nosql.plugins.module_utils.core.catalog; "
        "print('jsonschema' in sys.modules, 'yaml' in sys.modules)" % os.path.join(ROOT, ".collections")
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_find_catalog_by_version_prefix():
    assert catalog_files.find_catalog("cassandra").endswith("cassandra-5.0.yml")
    assert catalog_files.find_catalog("cassandra", "5").endswith("cassandra-5.0.yml")
    assert catalog_files.find_catalog("cassandra", "5.0.9").endswith("cassandra-5.0.yml")
    assert catalog_files.find_catalog("redis", "7.0.15").endswith("redis-7.yml")
    assert catalog_files.find_catalog("mongodb", "7.0").endswith("mongodb-7.0.yml")
    with pytest.raises(CatalogError, match="no cassandra catalog for version 4.1; available: 5.0"):
        catalog_files.find_catalog("cassandra", "4.1")
    with pytest.raises(CatalogError, match="store: 'postgres' is not allowed; allowed: cassandra, redis, mongodb"):
        catalog_files.find_catalog("postgres")


def test_to_dict_round_trips_through_json():
    for catalog in _all():
        data = json.loads(json.dumps(catalog.to_dict()))
        again = Catalog(data)
        assert again.store == catalog.store and again.version == catalog.version
        assert again.names() == catalog.names()


# ------------------------------------------------------------------------------------------------ entries
@pytest.mark.parametrize("store", catalog_files.STORES)
def test_every_default_is_inside_its_range(store):
    catalog = Catalog.for_store(store)
    for entry in catalog.entries():
        default = entry["default"]
        if default is not None:
            assert catalog.validate({entry["name"]: default}) == {
                entry["name"]: catalog.normalize(entry["name"], default)
            }
        if entry["type"] == "enum" and default is not None:
            assert default in entry["choices"]
    for heap_mb, memory_mb in ((512, 2048), (8192, 32768), (31 * 1024, 256 * 1024)):
        for name, value in catalog.defaults(heap_mb=heap_mb, memory_mb=memory_mb).items():
            if value is not None:
                catalog.validate({name: value})


@pytest.mark.parametrize("store", catalog_files.STORES)
def test_paper_ranges_fit_the_catalog_ranges(store):
    catalog = Catalog.for_store(store)
    for entry in catalog.entries():
        if "paper_range" in entry and "paper_unit" not in entry:
            low, high = entry["paper_range"]
            assert entry["min"] <= low <= high <= entry["max"], entry["name"]
        for choice in entry.get("paper_choices", []):
            assert choice in entry["choices"], entry["name"]


@pytest.mark.parametrize("store", catalog_files.STORES)
def test_every_value_round_trips_through_the_config_file(store):
    catalog = Catalog.for_store(store)
    for entry in catalog.entries():
        name = entry["name"]
        for value in (entry["default"], _sample(entry)):
            if value is None:
                continue
            value = catalog.normalize(name, value)
            written = catalog.config_text(name, value)
            assert catalog.normalize(name, written) == value, (name, value, written)
            assert catalog.equal(name, written, value)
            if store == "redis":
                assert isinstance(written, str)
            elif entry["config_format"] == "{value}":
                assert written == value and isinstance(written, type(value))  # YAML keeps the type


@pytest.mark.parametrize("store", catalog_files.STORES)
def test_live_entries_and_live_actions_agree(store):
    catalog = Catalog.for_store(store)
    for entry in catalog.entries():
        name = entry["name"]
        if entry["apply"] != "live":
            with pytest.raises(CatalogError, match="cannot change on a running node"):
                catalog.live_action(name, entry["default"] if entry["default"] is not None else _sample(entry))
            continue
        value = catalog.normalize(name, _sample(entry))
        current = {other: catalog.defaults(heap_mb=1024)[other] for other in catalog.requires(name)}
        action = catalog.live_action(name, value, current)
        assert list(action) == [catalog_files.LIVE_METHODS[store]]


def test_the_irace_and_iris_parameters_are_all_there(cassandra):
    assert len(IRACE) == 23 and len(IRIS) == 7
    for paper_name, name in IRACE.items():
        entry = cassandra.entry(name)
        assert "irace" in entry["papers"], name
        assert entry.get("paper_name") == paper_name, name
    for name in IRIS.values():
        assert "iris" in cassandra.entry(name)["papers"], name
    tagged = {e["name"] for e in cassandra.entries() if "irace" in e["papers"]}
    assert tagged == set(IRACE.values())
    assert {e["name"] for e in cassandra.entries() if "iris" in e["papers"]} == set(IRIS.values())


def test_table_level_options_are_marked(cassandra):
    for name in ("compaction", "compression", "caching.keys", "default_time_to_live", "gc_grace_seconds"):
        assert cassandra.entry(name)["scope"] == "table"
        assert cassandra.apply_kind(name) == "table"
    assert cassandra.entry("replication_factor")["scope"] == "keyspace"
    assert "cannot change on a node that already has data" in cassandra.entry("num_tokens")["notes"]


# ------------------------------------------------------------------------------------------------ normalize
def test_normalize_reads_what_users_write_and_servers_report(cassandra, redis, mongodb):
    for raw in ("64MiB", "64", 64, 64.0, "65536KiB", " 64 MiB "):
        assert cassandra.normalize("memtable_heap_space", raw) == 64
    assert cassandra.normalize("memtable_heap_space", "1GiB") == 1024
    assert cassandra.normalize("commitlog_sync_period", "10000ms") == 10000
    assert cassandra.normalize("commitlog_sync_period", "10s") == 10000
    assert cassandra.normalize("max_hint_window", "3h") == 10800000
    assert cassandra.normalize("key_cache_save_period", "4h") == 14400
    assert cassandra.normalize("compaction_throughput", "64MiB/s") == 64
    with pytest.raises(CatalogError, match="is not a whole number of MiB/s"):  # 200 megabits/s = 23.84 MiB/s
        cassandra.normalize("inter_dc_stream_throughput_outbound", "200megabits/s")
    for raw in ("true", "yes", "True", True, 1):
        assert cassandra.normalize("trickle_fsync", raw) is True
    for raw in ("false", "no", False, 0):
        assert cassandra.normalize("trickle_fsync", raw) is False
    assert cassandra.normalize("memtable_allocation_type", "OFFHEAP_OBJECTS") == "offheap_objects"
    assert cassandra.normalize("compaction", "lcs") == "LeveledCompactionStrategy"
    assert cassandra.normalize("compaction", "org.apache.cassandra.db.compaction.UnifiedCompactionStrategy") == (
        "UnifiedCompactionStrategy"
    )
    assert cassandra.normalize("memtable_cleanup_threshold", "0.33333334") == 0.33333334
    assert redis.normalize("maxmemory", "100mb") == 104857600
    assert redis.normalize("maxmemory", "1gb") == 1073741824
    assert redis.normalize("maxmemory", "1g") == 1000000000
    assert redis.normalize("maxmemory", "104857600") == 104857600
    assert redis.normalize("appendfsync", False) == "no"  # a bare `no` in YAML
    assert redis.normalize("maxmemory-policy", "AllKeys-LRU") == "allkeys-lru"
    assert redis.normalize("save", ["3600 1", "300  100"]) == "3600 1 300 100"
    assert redis.normalize("active-defrag-threshold-lower", "10%") == 10
    assert mongodb.normalize("operationProfiling.mode", False) == "off"


def test_normalize_refuses_what_it_cannot_read(cassandra):
    cases = {
        ("memtable_heap_space", "1.5KiB"): "is not a whole number of MiB",
        ("memtable_heap_space", "64XB"): "unit 'XB' of '64XB' is not a size unit",
        ("memtable_heap_space", "lots"): "is not a size (e.g. 256MiB, 1GiB)",
        ("concurrent_writes", "3.5"): "is not a whole number",
        ("concurrent_writes", True): "is not a number",
        ("trickle_fsync", "maybe"): "is not a boolean",
        ("memtable_heap_space", None): "no value",
    }
    for (name, raw), message in cases.items():
        with pytest.raises(CatalogError, match=message.replace("(", r"\(").replace(")", r"\)")):
            cassandra.normalize(name, raw)


def test_setting_unit_reading_of_the_mongodb_cache(mongodb):
    name = "storage.wiredTiger.engineConfig.cacheSizeGB"
    assert mongodb.normalize(name, 8053063680) == 7.5  # serverStatus "maximum bytes configured"
    assert mongodb.normalize(name, "7.5") == 7.5
    assert mongodb.normalize(name, 7.5) == 7.5
    assert mongodb.equal(name, 8053063680, 7.5)
    assert mongodb.canonical("wiredTigerCacheSizeGB") == name
    assert mongodb.setting_name(name) == "serverStatus.wiredTiger.cache.maximum bytes configured"
    assert mongodb.defaults(memory_mb=16384)[name] == 7.5
    assert mongodb.defaults(memory_mb=1024)[name] == 0.25


def test_equal(cassandra, redis):
    assert cassandra.equal("memtable_heap_space", "2GiB", 2048)
    assert not cassandra.equal("memtable_heap_space", "2GiB", 2047)
    assert cassandra.equal("memtable_cleanup_threshold", 0.33333334, "0.3333333")
    assert cassandra.equal("compaction", "LCS", "LeveledCompactionStrategy")
    assert redis.equal("maxmemory", "1gb", 1073741824)
    assert redis.equal("maxmemory", None, None) and not redis.equal("maxmemory", None, 0)


# ------------------------------------------------------------------------------------------------ validate
def test_unknown_names_get_close_matches(cassandra):
    with pytest.raises(CatalogError) as err:
        cassandra.validate({"concurent_writes": 32})
    message = str(err.value)
    assert message.startswith("concurent_writes: unknown cassandra parameter; did you mean concurrent_writes")
    assert "docs/catalog.md" in message
    with pytest.raises(CatalogError, match="memtable_heap_space_in_mb: renamed memtable_heap_space in Cassandra 4.1"):
        cassandra.validate({"memtable_heap_space_in_mb": 2048})
    with pytest.raises(CatalogError, match="did you mean"):
        cassandra.entry("memtable_heap")


def test_out_of_range_names_the_range_and_unit(cassandra, redis, mongodb):
    with pytest.raises(CatalogError, match=r"^memtable_heap_space: 99999 MiB is out of range \[16, 65536\] MiB$"):
        cassandra.validate({"memtable_heap_space": 99999})
    with pytest.raises(CatalogError, match=r"^concurrent_writes: 2000 is out of range \[1, 1024\]$"):
        cassandra.validate({"concurrent_writes": 2000})
    with pytest.raises(CatalogError, match=r"compaction_throughput: 200000 MiB/s is out of range \[0, 100000\] MiB/s"):
        cassandra.validate({"compaction_throughput": "200000MiB/s"})
    with pytest.raises(CatalogError, match=r"maxmemory-samples: 65 is out of range \[1, 64\]"):
        redis.validate({"maxmemory-samples": 65})
    with pytest.raises(CatalogError, match=r"storage.journal.commitIntervalMs: 501 ms is out of range \[1, 500\] ms"):
        mongodb.validate({"journalCommitInterval": 501})


def test_validate_lists_every_problem_at_once(cassandra):
    with pytest.raises(CatalogError) as err:
        cassandra.validate(
            {
                "memtable_heap_space": "99999MiB",
                "memtable_allocation_type": "on_the_heap",
                "trickle_fsync": "sometimes",
                "concurent_reads": 8,
                "concurrent_writes": 64,
            }
        )
    problems = err.value.problems
    assert len(problems) == 4
    assert (
        "memtable_allocation_type: 'on_the_heap' is not allowed; allowed: heap_buffers, offheap_buffers, "
        "offheap_objects, unslabbed_heap_buffers" in problems
    )
    assert all(part in str(err.value) for part in ("memtable_heap_space", "trickle_fsync", "concurent_reads"))


def test_validate_returns_normalized_canonical_settings(cassandra, redis, mongodb):
    assert cassandra.validate({"memtable_heap_space": "2GiB", "trickle_fsync": "yes", "compaction": "lcs"}) == {
        "memtable_heap_space": 2048,
        "trickle_fsync": True,
        "compaction": "LeveledCompactionStrategy",
    }
    assert redis.validate({"maxmemory": "100mb", "appendfsync": "EVERYSEC"}) == {
        "maxmemory": 104857600,
        "appendfsync": "everysec",
    }
    assert mongodb.validate({"syncdelay": 60}) == {"storage.syncPeriodSecs": 60}
    with pytest.raises(CatalogError, match="given twice"):
        mongodb.validate({"syncdelay": 60, "storage.syncPeriodSecs": 30})
    assert cassandra.validate({}) == {} and cassandra.validate(None) == {}


def test_constraints(redis):
    with pytest.raises(CatalogError, match=r"active-defrag-threshold-lower \(150\) must not be larger than"):
        redis.validate({"active-defrag-threshold-lower": 150})
    assert redis.validate({"active-defrag-threshold-lower": 150, "active-defrag-threshold-upper": 200})


def test_bti_needs_a_storage_compatibility_mode_past_cassandra_4(cassandra):
    assert cassandra.validate({"sstable_format": "bti", "storage_compatibility_mode": "NONE"}) == {
        "sstable_format": "bti",
        "storage_compatibility_mode": "NONE",
    }
    # Cassandra's own check refuses only CASSANDRA_4: the interim UPGRADING mode writes BTI files too.
    assert cassandra.validate({"sstable_format": "BTI", "storage_compatibility_mode": "upgrading"})
    with pytest.raises(CatalogError) as err:
        cassandra.validate({"sstable_format": "bti", "storage_compatibility_mode": "CASSANDRA_4"})
    assert err.value.problems == [
        "sstable_format: bti needs storage_compatibility_mode UPGRADING or NONE (given: CASSANDRA_4)"
    ]
    # Not given, the mode is the default's, CASSANDRA_4: the settings must say it (as the bench-bti and the
    # cassandra_latest configurations do).
    with pytest.raises(CatalogError) as err:
        cassandra.validate({"sstable_format": "bti", "concurrent_reads": 32})
    assert err.value.problems == [
        "sstable_format: bti needs storage_compatibility_mode UPGRADING or NONE (not given, its default is CASSANDRA_4)"
    ]


@pytest.mark.parametrize("mode", [None, "CASSANDRA_4", "UPGRADING", "NONE"])
def test_the_big_format_runs_in_every_storage_compatibility_mode(cassandra, mode):
    settings = {"sstable_format": "big"}
    if mode:
        settings["storage_compatibility_mode"] = mode
    assert cassandra.validate(settings) == settings
    if mode:
        assert cassandra.validate({"storage_compatibility_mode": mode}) == {"storage_compatibility_mode": mode}


def test_a_bad_condition_in_the_catalog_names_the_rule(cassandra):
    data = cassandra.to_dict()
    data["constraints"] = [{"when": {"sstable_format": ["btree"]}, "needs": {"storage_compatibility_mode": ["NONE"]}}]
    with pytest.raises(CatalogError, match=r"constraints: when sstable_format: 'btree' is not allowed; allowed: big"):
        Catalog(data)
    data["constraints"] = [{"when": {"sstable_format": ["bti"]}, "needs": {"storage_mode": ["NONE"]}}]
    with pytest.raises(CatalogError, match=r"constraints: needs 'storage_mode' is not a parameter"):
        Catalog(data)
    data["constraints"] = [{"when": {"sstable_format": "bti"}, "needs": {"storage_compatibility_mode": ["NONE"]}}]
    with pytest.raises(CatalogError, match=r"constraints: when sstable_format must be a non-empty list of values"):
        Catalog(data)
    with pytest.raises(CatalogError, match=r"constraints"):
        catalog_files.validate_catalog_schema(data)
    assert cassandra.constraint_fields() == ["sstable_format", "storage_compatibility_mode"]


def test_string_pattern(redis):
    assert redis.validate({"save": ""}) == {"save": ""}
    with pytest.raises(CatalogError, match="save: '3600' does not have the expected form"):
        redis.validate({"save": "3600"})


def test_heap_budget(cassandra):
    with pytest.raises(CatalogError) as err:
        cassandra.validate({"memtable_heap_space": "3GiB", "key_cache_size": 200}, heap_mb=4096)
    assert str(err.value) == (
        "heap budget: memtable_heap_space 3072 MiB + key_cache_size 200 MiB + counter_cache_size 50 MiB (default) + "
        "prepared_statements_cache_size 16 MiB (default) = 3338 MiB is more than 75% of heap_mb 4096 MiB (3072 MiB)"
    )
    assert cassandra.validate({"memtable_heap_space": "2GiB"}, heap_mb=4096) == {"memtable_heap_space": 2048}


def test_memory_budget(cassandra, redis, mongodb):
    with pytest.raises(CatalogError) as err:
        cassandra.validate(
            {"memtable_allocation_type": "offheap_objects", "memtable_offheap_space": "4GiB", "file_cache_size": 2048},
            heap_mb=4096,
            memory_mb=8192,
        )
    assert str(err.value) == (
        "memory budget: heap_mb 4096 MiB + memtable_offheap_space 4096 MiB + file_cache_size 2048 MiB + "
        "networking_cache_size 128 MiB (default) + index_summary_capacity 204 MiB (default) = 10572 MiB is more "
        "than memory_mb 8192 MiB"
    )
    # memtable_offheap_space counts only when memtables are allocated off the heap
    assert cassandra.validate({"memtable_offheap_space": "4GiB"}, heap_mb=2048, memory_mb=4096)
    with pytest.raises(CatalogError, match=r"memory budget: maxmemory 3072 MiB \+ repl-backlog-size 1 MiB \(default\)"):
        redis.validate({"maxmemory": "3gb"}, memory_mb=2048)
    with pytest.raises(CatalogError, match=r"storage.wiredTiger.engineConfig.cacheSizeGB 8192 MiB = 8192 MiB is more"):
        mongodb.validate({"storage.wiredTiger.engineConfig.cacheSizeGB": 8}, memory_mb=4096)
    assert mongodb.validate({"storage.wiredTiger.engineConfig.cacheSizeGB": 2}, memory_mb=4096)


# ------------------------------------------------------------------------------------------------ kinds and actions
def test_split(cassandra):
    live, restart, table = cassandra.split(
        {"concurrent_writes": 64, "memtable_heap_space": 2048, "compaction": "LCS", "key_cache_size": 50}
    )
    assert live == {"concurrent_writes": 64, "key_cache_size": 50}
    assert restart == {"memtable_heap_space": 2048}
    assert table == {"compaction": "LCS"}
    with pytest.raises(CatalogError, match="bogus: unknown cassandra parameter"):
        cassandra.split({"bogus": 1})


def test_live_action_cassandra(cassandra):
    assert cassandra.live_action("concurrent_writes", "64") == {"nodetool": ["setconcurrency", "MutationStage", "64"]}
    assert cassandra.live_action("concurrent_reads", 48) == {"nodetool": ["setconcurrency", "ReadStage", "48"]}
    assert cassandra.live_action("compaction_throughput", "128MiB/s") == {
        "nodetool": ["setcompactionthroughput", "128"]
    }
    assert cassandra.live_action("stream_throughput_outbound", 48) == {"nodetool": ["setstreamthroughput", "-m", "48"]}
    assert cassandra.live_action("column_index_size", "16KiB") == {"nodetool": ["setcolumnindexsize", "16"]}
    assert cassandra.live_action("max_hint_window", "1h") == {"nodetool": ["setmaxhintwindow", "3600000"]}
    current = {"key_cache_size": "25MiB", "row_cache_size": "0MiB", "counter_cache_size": "12MiB"}
    assert cassandra.live_action("key_cache_size", "100MiB", current) == {
        "nodetool": ["setcachecapacity", "100", "0", "12"]
    }
    assert cassandra.live_action("row_cache_size", "1GiB", current) == {
        "nodetool": ["setcachecapacity", "25", "1024", "12"]
    }
    assert cassandra.requires("counter_cache_size") == ["key_cache_size", "row_cache_size"]
    with pytest.raises(CatalogError, match="the current value of counter_cache_size is needed"):
        cassandra.live_action("row_cache_size", 16, {"key_cache_size": 25})
    with pytest.raises(CatalogError, match="memtable_heap_space cannot change on a running node .apply restart."):
        cassandra.live_action("memtable_heap_space", 2048)
    with pytest.raises(CatalogError, match="it is a table or keyspace option"):
        cassandra.live_action("compaction", "LCS")


def test_row_cache_from_zero_needs_a_restart(cassandra):
    # A node started with row_cache_size 0 runs a no-op cache whose capacity nodetool cannot set.
    assert cassandra.apply_kind("row_cache_size") == "live"
    assert cassandra.apply_kind("row_cache_size", "0MiB") == "restart"
    assert cassandra.apply_kind("row_cache_size", 0) == "restart"
    assert cassandra.apply_kind("row_cache_size", "16MiB") == "live"
    assert cassandra.apply_kind("key_cache_size", 0) == "live"


def test_restart_from_must_be_a_list(tmp_path):
    import yaml

    from ansible_collections.tactician.nosql.plugins.module_utils.core import catalog_files

    data = cat.Catalog.for_store("cassandra", "5.0").to_dict()
    for entry in data["parameters"]:
        if entry["name"] == "row_cache_size":
            entry["live"]["restart_from"] = 0
    path = tmp_path / "bad.yml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(CatalogError, match="row_cache_size: live.restart_from must be a list of values"):
        catalog_files.load_catalog_file(str(path))


def test_live_action_redis(redis):
    assert redis.live_action("maxmemory", "100mb") == {"config_set": ["maxmemory", "104857600"]}
    assert redis.live_action("appendonly", True) == {"config_set": ["appendonly", "yes"]}
    assert redis.live_action("maxmemory-policy", "ALLKEYS-LFU") == {"config_set": ["maxmemory-policy", "allkeys-lfu"]}
    assert redis.live_action("save", "") == {"config_set": ["save", ""]}
    with pytest.raises(CatalogError, match="io-threads cannot change on a running node"):
        redis.live_action("io-threads", 4)


def test_live_action_mongodb(mongodb):
    assert mongodb.live_action("storage.wiredTiger.engineConfig.cacheSizeGB", 7.5) == {
        "set_parameter": {"wiredTigerEngineRuntimeConfig": "cache_size=7680M"}
    }
    assert mongodb.live_action("wiredTigerCacheSizeGB", "2") == {
        "set_parameter": {"wiredTigerEngineRuntimeConfig": "cache_size=2048M"}
    }
    assert mongodb.live_action("ttlMonitorSleepSecs", "120") == {"set_parameter": {"ttlMonitorSleepSecs": 120}}
    assert mongodb.live_action("ttlMonitorEnabled", "false") == {"set_parameter": {"ttlMonitorEnabled": False}}
    assert mongodb.live_action("journalCommitInterval", 50) == {"set_parameter": {"journalCommitInterval": 50}}
    with pytest.raises(CatalogError, match="wiredTigerConcurrentReadTransactions cannot change on a running node"):
        mongodb.live_action("wiredTigerConcurrentReadTransactions", 64)


def test_config_keys_and_text(cassandra, redis, mongodb):
    assert cassandra.config_key("memtable_heap_space") == "memtable_heap_space"
    assert cassandra.config_text("memtable_heap_space", "2GiB") == "2048MiB"
    assert cassandra.config_text("compaction_throughput", 64) == "64MiB/s"
    assert cassandra.config_text("trickle_fsync", "yes") is True
    assert cassandra.config_text("concurrent_writes", "64") == 64
    assert cassandra.config_text("key_cache_save_period", "4h") == "14400s"
    assert redis.config_text("appendonly", True) == "yes"
    assert redis.config_text("maxmemory", "1gb") == "1073741824"
    assert redis.config_text("save", "3600 1 300 100") == "3600 1 300 100"
    assert mongodb.config_key("cursorTimeoutMillis") == "setParameter.cursorTimeoutMillis"
    assert mongodb.config_text("storage.wiredTiger.engineConfig.cacheSizeGB", "7.5") == 7.5
    assert mongodb.config_text("storage.wiredTiger.indexConfig.prefixCompression", "no") is False


# ------------------------------------------------------------------------------------------------ real servers
def test_cassandra_readings_from_a_real_5_0_9_node(cassandra):
    capture = _fixture("cassandra-5.0.9-settings.json")
    rows = capture["settings"]
    defaults = cassandra.defaults(heap_mb=capture["heap_mb"])
    checked = 0
    for name in cassandra.names():
        setting = cassandra.setting_name(name)
        if not setting:
            continue
        assert setting in rows, "%s is not a setting of Cassandra 5.0.9" % setting
        reading = rows[setting]
        if reading is None:
            assert cassandra.entry(name)["default"] is None, name  # unset on the server, no fixed default
            continue
        value = cassandra.normalize(name, reading)
        assert cassandra.normalize(name, cassandra.config_text(name, value)) == value
        if defaults[name] is not None:
            assert cassandra.equal(name, reading, defaults[name]), (name, reading, defaults[name])
            checked += 1
    assert checked >= 30
    for name in ("key_cache_size", "row_cache_size", "counter_cache_size"):
        source = cassandra.read_from(name)
        assert source["source"] == "system_views.caches"
        reading = capture["caches"][source["key"]]
        assert cassandra.normalize(name, reading, unit=source["unit"]) == defaults[name]


def test_redis_readings_from_a_real_7_0_15_server(redis):
    capture = _fixture("redis-7.0.15-config.json")
    for name in redis.names():
        entry = redis.entry(name)
        reading = capture["config_get_defaults"][redis.setting_name(name)]
        if name != "save":  # the capture ran with --save ''
            assert redis.equal(name, reading, entry["default"]), (name, reading, entry["default"])
    live = {item["directive"]: item for item in capture["config_set"]}
    live.update({item["directive"]: item for item in capture["config_set_refused"]})
    for name in redis.names():
        entry = redis.entry(name)
        if entry["apply"] == "live":
            assert name in live, "%s was not set live on the server" % name
            item = live[name]
            if "reading" in item:
                value = redis.normalize(name, item["reading"])
                assert redis.live_action(name, value)["config_set"] == [name, item["written"]]
        else:
            assert "%s %s" % (name, capture["config_get_defaults"][name]) in capture["config_set_errors"], name
            assert "immutable" in capture["config_set_errors"]["%s %s" % (name, capture["config_get_defaults"][name])]
    for item in capture["config_set_suffixes"]:
        name = item["directive"]
        assert redis.normalize(name, item["written"]) == redis.normalize(name, item["reading"]), item
    written, readings = capture["config_file"]["written"], capture["config_file"]["readings"]
    for name in redis.names():
        if name not in written:
            continue
        value = redis.normalize(name, written[name])
        assert redis.config_text(name, value) == written[name]
        if name != "activedefrag":  # the build refuses it (see config_set_refused)
            assert redis.normalize(name, readings[name]) == value, name


def test_redis_errors_match_the_catalog(redis):
    errors = _fixture("redis-7.0.15-config.json")["config_set_errors"]
    assert "between 1 and 2147483647" in errors["maxmemory-samples 0"]
    entry = redis.entry("maxmemory-policy")
    listed = errors["maxmemory-policy bogus"].split(": ", 1)[1].split(", ")
    assert sorted(listed) == sorted(entry["choices"])
    assert sorted(errors["appendfsync bogus"].split(": ", 1)[1].split(", ")) == sorted(
        redis.entry("appendfsync")["choices"]
    )


def test_mongodb_get_parameter_fixture(mongodb):
    with open(os.path.join(ROOT, "tests", "fixtures", "mongodb", "get_parameter.json"), encoding="utf-8") as handle:
        reply = json.load(handle)
    for name in ("ttlMonitorEnabled", "ttlMonitorSleepSecs"):
        assert mongodb.equal(name, reply[mongodb.setting_name(name)], mongodb.entry(name)["default"])
    assert "not checked against a live mongod" in mongodb.to_dict()["provenance"].replace("NOT", "not")


# ------------------------------------------------------------------------------------------------ lookup
def test_lookup_whole_catalog_entries_and_validate():
    [whole] = catalog_lookup("redis")
    assert whole["store"] == "redis" and len(whole["parameters"]) > 40
    entries = catalog_lookup("cassandra", names=["concurrent_writes", "memtable_heap_space"])
    assert [e["name"] for e in entries] == ["concurrent_writes", "memtable_heap_space"]
    assert catalog_lookup("cassandra", version="5.0", validate={"memtable_heap_space": "1GiB"}) == [
        {"memtable_heap_space": 1024}
    ]
    with pytest.raises(CatalogError, match="concurent_writes: unknown cassandra parameter"):
        catalog_lookup("cassandra", names=["concurent_writes"])
    with pytest.raises(CatalogError, match="heap budget"):
        catalog_lookup("cassandra", validate={"memtable_heap_space": "3GiB"}, heap_mb=2048)


def test_lookup_plugin_raises_lookup_errors(monkeypatch):
    plugin = catalog_lookup_plugin.LookupModule()
    options = {"store": "cassandra", "version": None, "names": None, "validate": {"num_tokens": 0}}
    monkeypatch.setattr(plugin, "set_options", lambda **kwargs: None)
    monkeypatch.setattr(plugin, "get_option", options.get)
    with pytest.raises(AnsibleLookupError, match=r"catalog of cassandra: num_tokens: 0 is out of range \[1, 1536\]"):
        plugin.run([])
    with pytest.raises(AnsibleLookupError, match="takes no terms"):
        plugin.run(["cassandra"])
    options["validate"] = {"num_tokens": 32}
    assert plugin.run([]) == [{"num_tokens": 32}]
