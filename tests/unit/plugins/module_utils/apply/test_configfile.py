"""Config-file engine: in-place edits of cassandra.yaml, mongod.conf and redis.conf that keep comments and order."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys

import pytest
from testlib import FIXTURES, ROOT

from ansible_collections.tactician.nosql.plugins.module_utils.apply import config_base, config_redis, config_yaml
from ansible_collections.tactician.nosql.plugins.module_utils.apply import configfile as cf
from ansible_collections.tactician.nosql.plugins.module_utils.core.files import config_digest

FIXTURES = os.path.join(FIXTURES, "configfile")


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8", newline="") as handle:
        return handle.read()


def changed_lines(before, after):
    """(lines only in before, lines only in after), in order."""
    old, new = before.splitlines(), after.splitlines()
    return [line for line in old if line not in new], [line for line in new if line not in old]


# YAML: round trip ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cassandra.yaml", "mongod.conf"])
def test_yaml_fixture_load_and_dump_is_byte_identical(name):
    text = fixture(name)
    assert config_yaml._yaml_roundtrip(text) == text


@pytest.mark.parametrize("name", ["cassandra.yaml", "mongod.conf"])
def test_yaml_edit_with_nothing_to_do_returns_the_same_text(name):
    text = fixture(name)
    result = cf.edit(text, "yaml", {})
    assert result.text is text or result.text == text
    assert result.changed is False
    assert result.changes == {}


def test_role_generated_yaml_indentless_sequences_round_trip():
    text = (
        "# Ansible managed\n"
        "cluster_name: tactician-lab\n"
        "data_file_directories:\n"
        "- /data/data\n"
        "seed_provider:\n"
        "- class_name: org.apache.cassandra.locator.SimpleSeedProvider\n"
        "  parameters:\n"
        "  - seeds: 127.0.0.1:7000\n"
        "num_tokens: 16\n"
    )
    assert config_yaml._yaml_roundtrip(text) == text
    result = cf.edit(text, "yaml", {"data_file_directories": ["/data/data", "/data2/data"], "hints": ["a"]})
    assert "- /data/data\n- /data2/data\nseed_provider:" in result.text
    assert result.text.endswith("num_tokens: 16\nhints:\n- a\n")


def test_yaml_same_value_is_no_change():
    text = fixture("cassandra.yaml")
    result = cf.edit(text, "yaml", {"num_tokens": 16, "cluster_name": "Tactician Lab", "key_cache_size": None})
    assert not result.changed
    assert result.text == text


def test_yaml_equal_values_of_the_same_shape_are_no_change():
    text = fixture("cassandra.yaml")
    seeds = [
        {
            "class_name": "org.apache.cassandra.locator.SimpleSeedProvider",
            "parameters": [{"seeds": "127.0.0.1:7000,127.0.0.2:7000"}],
        }
    ]
    assert not cf.edit(text, "yaml", {"seed_provider": seeds}).changed


# YAML: replace ---------------------------------------------------------------------------------------------


def test_yaml_replace_in_place_keeps_comments_above_and_on_the_line():
    text = fixture("cassandra.yaml")
    result = cf.edit(text, "yaml", {"num_tokens": 8, "concurrent_reads": 64})
    assert result.changed
    assert changed_lines(text, result.text) == (
        ["num_tokens: 16", "concurrent_reads: 32   # 16 x number of data drives"],
        ["num_tokens: 8", "concurrent_reads: 64   # 16 x number of data drives"],
    )
    assert result.changes == {
        "num_tokens": {"before": 16, "after": 8},
        "concurrent_reads": {"before": 32, "after": 64},
    }
    lines = result.text.splitlines()
    assert lines.index("num_tokens: 8") == text.splitlines().index("num_tokens: 16")


def test_yaml_replace_keeps_quote_style():
    text = fixture("cassandra.yaml")
    result = cf.edit(text, "yaml", {"cluster_name": "Other Lab"})
    assert "cluster_name: 'Other Lab'\n" in result.text


def test_yaml_replace_empty_value():
    text = fixture("cassandra.yaml")
    result = cf.edit(text, "yaml", {"key_cache_size": "64MiB"})
    assert changed_lines(text, result.text) == (["key_cache_size:"], ["key_cache_size: 64MiB"])
    assert result.changes == {"key_cache_size": {"before": None, "after": "64MiB"}}


def test_yaml_replace_nested_path_keeps_comment_on_the_line():
    text = fixture("mongod.conf")
    result = cf.edit(text, "yaml", {"storage.wiredTiger.engineConfig.cacheSizeGB": 4})
    assert changed_lines(text, result.text) == (
        ["      cacheSizeGB: 2   # leave the rest of the RAM to the file system cache"],
        ["      cacheSizeGB: 4   # leave the rest of the RAM to the file system cache"],
    )


def test_yaml_keeps_types_16_and_text_16_differ():
    text = "num_tokens: 16\n"
    result = cf.edit(text, "yaml", {"num_tokens": "16"})
    assert result.changed
    assert result.text == "num_tokens: '16'\n"
    assert not cf.edit(text, "yaml", {"num_tokens": 16}).changed
    assert cf.edit("flag: true\n", "yaml", {"flag": 1}).changed


def test_yaml_caller_equality_decides():
    text = "compaction_throughput: 64MiB/s\n"

    def equal(key, old, new):
        return str(old).replace("MiB/s", "") == str(new)

    assert not cf.edit(text, "yaml", {"compaction_throughput": 64}, equal=equal).changed
    result = cf.edit(text, "yaml", {"compaction_throughput": "128MiB/s"}, equal=equal)
    assert result.text == "compaction_throughput: 128MiB/s\n"


def test_yaml_strings_yaml11_reads_as_booleans_are_quoted():
    result = cf.edit("a: 1\n", "yaml", {"b": "on", "c": "yes", "d": "16", "e": "plain"})
    assert result.text == "a: 1\nb: 'on'\nc: 'yes'\nd: '16'\ne: plain\n"


def test_yaml_replace_list_of_maps_in_place_keeps_inner_comments_and_quotes():
    text = fixture("cassandra.yaml")
    seeds = [
        {
            "class_name": "org.apache.cassandra.locator.SimpleSeedProvider",
            "parameters": [{"seeds": "127.0.0.1:7000"}],
        }
    ]
    result = cf.edit(text, "yaml", {"seed_provider": seeds})
    assert changed_lines(text, result.text) == (
        ['      - seeds: "127.0.0.1:7000,127.0.0.2:7000"'],
        ['      - seeds: "127.0.0.1:7000"'],
    )
    assert result.changes["seed_provider"]["after"] == seeds


def test_yaml_replace_with_other_shape_writes_the_same_shape():
    text = fixture("cassandra.yaml")
    value = [{"class_name": "com.example.Seeds", "parameters": [{"seeds": "a,b", "port": 7000}]}, {"x": [1, 2]}]
    result = cf.edit(text, "yaml", {"seed_provider": value})
    assert cf.current_values(result.text, "yaml")["seed_provider"] == value
    # the comment of the next key stays in front of it
    assert "\n# Size of the key cache; empty means min(5% of heap, 100MiB).\nkey_cache_size:\n" in result.text
    assert "# Where new nodes find the ring.\nseed_provider:\n" in result.text


def test_yaml_scalar_to_mapping_and_back():
    text = "# head\na: 1  # one\nb: 2\n"
    result = cf.edit(text, "yaml", {"a": {"x": 1, "y": [1, 2]}})
    assert cf.current_values(result.text, "yaml")["a"] == {"x": 1, "y": [1, 2]}
    assert result.text.startswith("# head\na:")
    assert result.text.endswith("b: 2\n")
    back = cf.edit(result.text, "yaml", {"a": 3})
    assert cf.current_values(back.text, "yaml") == {"a": 3, "b": 2}


def test_yaml_untouched_lines_keep_their_spelling():
    text = "# c\nflag: True\nnothing: ~\nspaced :   value\nnum: 1  # n\nlast: yes\n"
    result = cf.edit(text, "yaml", {"num": 2, "new": "x"}, remove=["last"])
    assert result.text == "# c\nflag: True\nnothing: ~\nspaced :   value\nnum: 2  # n\nnew: x\n"


def test_yaml_dotted_path_through_a_scalar_fails_clearly():
    with pytest.raises(config_base.ConfigFileError, match=r"cluster_name.x: cluster_name is a str, not a mapping"):
        cf.edit(fixture("cassandra.yaml"), "yaml", {"cluster_name.x": 1})


# YAML: add -------------------------------------------------------------------------------------------------


def test_yaml_append_absent_top_level_key_at_the_end():
    text = fixture("cassandra.yaml")
    result = cf.edit(text, "yaml", {"hinted_handoff_enabled": False})
    assert result.text == text + "hinted_handoff_enabled: false\n"
    assert result.changes == {"hinted_handoff_enabled": {"before": None, "after": False}}


def test_yaml_nested_create_goes_inside_its_parent_before_the_next_section_comment():
    text = fixture("mongod.conf")
    result = cf.edit(text, "yaml", {"storage.journal.commitIntervalMs": 100, "net.maxIncomingConnections": 500})
    assert (
        "    collectionConfig:\n      blockCompressor: snappy\n  journal:\n    commitIntervalMs: 100\n\n"
        "# Where to write logging data.\n" in result.text
    )
    assert "  bindIp: 127.0.0.1,mongo-a.example.net\n  maxIncomingConnections: 500\n\n# How" in result.text
    values = cf.current_values(result.text, "yaml")
    assert values["storage.journal.commitIntervalMs"] == 100
    assert values["storage.journal"] == {"commitIntervalMs": 100}


def test_yaml_nested_create_of_a_new_section():
    text = fixture("mongod.conf")
    result = cf.edit(text, "yaml", {"security.authorization": "enabled"})
    assert result.text == text + "security:\n  authorization: enabled\n"


def test_yaml_nested_create_uses_the_file_indentation():
    text = "top:\n    inner: 1\nlist:\n  -   a\n"
    result = cf.edit(text, "yaml", {"top.other.deep": [1]})
    assert result.text == "top:\n    inner: 1\n    other:\n        deep:\n          -   1\nlist:\n  -   a\n"


def test_yaml_in_a_nested_map_of_cassandra():
    text = fixture("cassandra.yaml")
    result = cf.edit(text, "yaml", {"memtable.configurations.trie.class_name": "TrieMemtable"})
    assert (
        "    default:\n      inherits: skiplist\n    trie:\n      class_name: TrieMemtable\n\n# Compaction"
        in result.text
    )


def test_yaml_comment_only_and_empty_files():
    result = cf.edit("# only a comment\n", "yaml", {"a.b": 1})
    assert result.text == "# only a comment\na:\n  b: 1\n"
    assert cf.edit("", "yaml", {"a": 1}).text == "a: 1\n"


def test_yaml_new_file_starts_with_header():
    result = cf.edit(None, "yaml", {"net.port": 27017}, header="Managed by tactician.nosql\nsecond line")
    assert result.changed
    assert result.text == "# Managed by tactician.nosql\n# second line\nnet:\n  port: 27017\n"
    assert result.changes == {"net.port": {"before": None, "after": 27017}}


# YAML: remove and keep -------------------------------------------------------------------------------------


def test_yaml_remove_keeps_the_comments_of_the_next_key():
    text = fixture("cassandra.yaml")
    result = cf.edit(text, "yaml", {}, remove=["commitlog_sync_period", "user_defined_functions_enabled", "absent"])
    assert changed_lines(text, result.text) == (
        ["commitlog_sync_period: 10000ms", "user_defined_functions_enabled: false"],
        [],
    )
    assert result.changes == {
        "commitlog_sync_period": {"before": "10000ms", "after": None},
        "user_defined_functions_enabled": {"before": False, "after": None},
    }
    assert result.text.endswith("# Checks of user-defined functions.\n\n# end of excerpt\n")


def test_yaml_remove_nested_keys_and_whole_sections():
    text = fixture("mongod.conf")
    result = cf.edit(text, "yaml", {}, remove=["operationProfiling.slowOpThresholdMs", "storage.wiredTiger"])
    removed, added = changed_lines(text, result.text)
    assert added == []
    assert removed == [
        "  wiredTiger:",
        "    engineConfig:",
        "      cacheSizeGB: 2   # leave the rest of the RAM to the file system cache",
        "      journalCompressor: snappy",
        "    collectionConfig:",
        "      blockCompressor: snappy",
        "  slowOpThresholdMs: 100",
    ]
    assert "  dbPath: /var/lib/mongodb\n\n# Where to write logging data.\n" in result.text


def test_yaml_keep_leaves_keys_and_paths_below_and_above_alone():
    text = fixture("mongod.conf")
    result = cf.edit(
        text,
        "yaml",
        {"net.port": 27018, "storage": {"dbPath": "/x"}, "storage.wiredTiger.engineConfig.cacheSizeGB": 8},
        remove=["storage.dbPath"],
        keep=["storage.wiredTiger"],
    )
    # storage (above the kept path) and storage.wiredTiger... (below it) are left alone; the sibling is not
    assert list(result.changes) == ["storage.dbPath", "net.port"]
    assert cf.current_values(result.text, "yaml")["storage.wiredTiger.engineConfig.cacheSizeGB"] == 2


def test_set_and_remove_the_same_key_or_overlapping_paths_is_refused():
    with pytest.raises(config_base.ConfigFileError, match="both set and removed: a"):
        cf.edit("a: 1\n", "yaml", {"a": 2}, remove=["a"])
    with pytest.raises(config_base.ConfigFileError, match="memtable and memtable.configurations overlap"):
        cf.edit(fixture("cassandra.yaml"), "yaml", {"memtable": None, "memtable.configurations": "x"})
    with pytest.raises(config_base.ConfigFileError, match="storage and storage.dbPath overlap"):
        cf.edit(fixture("mongod.conf"), "yaml", {"storage.dbPath": "/x"}, remove=["storage"])


def test_bad_yaml_and_bad_format_fail_clearly():
    with pytest.raises(config_base.ConfigFileError, match="not valid YAML"):
        cf.edit("a: [1\n", "yaml", {"a": 1})
    with pytest.raises(config_base.ConfigFileError, match="not valid YAML"):
        cf.edit("a: 1\na: 2\n", "yaml", {"a": 1})
    with pytest.raises(config_base.ConfigFileError, match="top level of the file must be a mapping"):
        cf.edit("- a\n", "yaml", {"a": 1})
    with pytest.raises(config_base.ConfigFileError, match=r"format must be one of yaml, redis, got 'ini'"):
        cf.edit("a=1\n", "ini", {})


def test_yaml_crlf_file_keeps_crlf():
    text = "a: 1\r\n# c\r\nb: 2\r\n"
    result = cf.edit(text, "yaml", {"b": 3, "c": 4})
    assert result.text == "a: 1\r\n# c\r\nb: 3\r\nc: 4\r\n"


def test_yaml_current_values_has_top_level_and_dotted_paths():
    values = cf.current_values(fixture("mongod.conf"), "yaml")
    assert values["net.port"] == 27017
    assert values["storage.wiredTiger.engineConfig"] == {"cacheSizeGB": 2, "journalCompressor": "snappy"}
    assert values["storage.wiredTiger.engineConfig.cacheSizeGB"] == 2
    assert values["setParameter"] == {"enableLocalhostAuthBypass": False}
    assert "security" not in values
    cassandra = cf.current_values(fixture("cassandra.yaml"), "yaml")
    assert cassandra["key_cache_size"] is None
    assert cassandra["seed_provider"][0]["parameters"] == [{"seeds": "127.0.0.1:7000,127.0.0.2:7000"}]
    json.dumps(cassandra)  # plain values only
    assert cf.current_values("", "yaml") == {}


# Redis -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "args"),
    [
        ("maxmemory 100mb", ["maxmemory", "100mb"]),
        ('logfile ""', ["logfile", ""]),
        ("dbfilename 'dump.rdb'", ["dbfilename", "dump.rdb"]),
        ('masterauth "a b\\"c"', ["masterauth", 'a b"c']),
        ('x "\\x41\\n\\t\\\\"', ["x", "A\n\t\\"]),
        ("x 'it\\'s'", ["x", "it's"]),
        ('x foo"bar baz"', ["x", "foobar baz"]),
        ("  save   900 1  ", ["save", "900", "1"]),
        ("bind 127.0.0.1 -::1", ["bind", "127.0.0.1", "-::1"]),
        ("", []),
    ],
)
def test_parse_redis_args(line, args):
    assert config_redis.parse_redis_args(line) == args


@pytest.mark.parametrize("line", ['x "open', "x 'open", 'x "a"b', "x 'a'b"])
def test_parse_redis_args_refuses_broken_quotes(line):
    with pytest.raises(config_base.ConfigFileError):
        config_redis.parse_redis_args(line)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("100mb", "100mb"),
        ("", '""'),
        (None, '""'),
        (True, "yes"),
        (False, "no"),
        (16, "16"),
        ("a b", '"a b"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("it's", '"it\'s"'),
        ("tab\there\n", '"tab\\there\\n"'),
        ("bell\x01", '"bell\\x01"'),
        ("back\\slash", "back\\slash"),
        (["FLUSHALL", ""], 'FLUSHALL ""'),
        ([900, 1, 300, 10], "900 1 300 10"),
    ],
)
def test_render_redis_value(value, text):
    assert config_redis.render_redis_value(value) == text


@pytest.mark.parametrize("word", ["", "a b", 'q"uote', "it's", "x\\y", "\n\r\t\x00\x7f", "é ü", "#hash"])
def test_redis_quoting_round_trip(word):
    assert config_redis.parse_redis_args("k " + config_redis.render_redis_value(word)) == ["k", word]


def test_redis_current_values():
    values = cf.current_values(fixture("redis.conf"), "redis")
    assert values["maxmemory"] == "256mb"
    assert values["maxmemory-policy"] == "allkeys-lru"  # the last occurrence counts
    assert values["save"] == ["3600 1", "300 100", "60 10000"]
    assert values["include"] == ["/etc/redis/common.conf"]
    assert values["rename-command"] == ['FLUSHALL ""', "CONFIG CONFIG-b4c1"]
    assert values["client-output-buffer-limit"][1] == "replica 256mb 64mb 60"
    assert values["masterauth"] == "secret with spaces"
    assert values["logfile"] == ""
    assert values["dbfilename"] == "dump.rdb"
    assert values["bind"] == "127.0.0.1 -::1"
    assert values["proc-title-template"] == "{title} {listen-addr} {server-mode}"


def test_redis_no_change_keeps_text():
    text = fixture("redis.conf")
    result = cf.edit(
        text,
        "redis",
        {
            "maxmemory": "256mb",
            "maxmemory-policy": "allkeys-lru",
            "save": ["3600 1", "300 100", "60 10000"],
            "logfile": "",
            "dbfilename": "dump.rdb",
            "masterauth": "secret with spaces",
            "rename-command": [["FLUSHALL", ""], "CONFIG CONFIG-b4c1"],
            "bind": "127.0.0.1 -::1",
            "protected-mode": True,
            "port": 6379,
        },
    )
    assert not result.changed
    assert result.text == text


def test_redis_replace_in_place():
    text = fixture("redis.conf")
    result = cf.edit(text, "redis", {"maxmemory": "512mb", "timeout": 300})
    assert changed_lines(text, result.text) == (["timeout 0", "maxmemory 256mb"], ["timeout 300", "maxmemory 512mb"])
    assert result.text.splitlines().index("maxmemory 512mb") == text.splitlines().index("maxmemory 256mb")
    assert result.changes == {
        "maxmemory": {"before": "256mb", "after": "512mb"},
        "timeout": {"before": "0", "after": "300"},
    }


def test_redis_last_occurrence_is_replaced_and_earlier_duplicates_go():
    text = fixture("redis.conf")
    result = cf.edit(text, "redis", {"maxmemory-policy": "allkeys-lfu"})
    assert changed_lines(text, result.text) == (
        ["maxmemory-policy volatile-lru", "maxmemory-policy allkeys-lru"],
        ["maxmemory-policy allkeys-lfu"],
    )
    assert "# maxmemory-policy noeviction\n" in result.text
    assert "the last maxmemory-policy line counts.\nmaxmemory-policy allkeys-lfu\n" in result.text
    assert result.changes == {"maxmemory-policy": {"before": "allkeys-lru", "after": "allkeys-lfu"}}


def test_redis_repeated_directive_list_replaces_all_at_the_first_place():
    text = fixture("redis.conf")
    result = cf.edit(text, "redis", {"save": ["900 1", ["300", "10"]]})
    assert "# save <seconds> <changes> [<seconds> <changes> ...]\nsave 900 1\nsave 300 10\ndbfilename" in result.text
    assert cf.current_values(result.text, "redis")["save"] == ["900 1", "300 10"]
    assert result.changes == {"save": {"before": ["3600 1", "300 100", "60 10000"], "after": ["900 1", "300 10"]}}
    # the occurrences of save add up: one line with the same pairs is no change
    assert not cf.edit(text, "redis", {"save": "3600 1 300 100 60 10000"}).changed


def test_redis_string_of_a_directive_with_several_arguments_is_its_argument_text():
    result = cf.edit(
        "port 1\n",
        "redis",
        {
            "replicaof": "10.0.0.1 6379",
            "rename-command": ['CONFIG ""', "DEBUG 'DEBUG-x y'"],
            "user": "app on >pass ~app:* +@read",
            "bind": "127.0.0.1 -::1",
            "proc-title-template": "{title} {listen-addr}",
        },
    )
    assert result.text == (
        "port 1\n"
        "replicaof 10.0.0.1 6379\n"
        'rename-command CONFIG ""\n'
        'rename-command DEBUG "DEBUG-x y"\n'
        "user app on >pass ~app:* +@read\n"
        "bind 127.0.0.1 -::1\n"
        'proc-title-template "{title} {listen-addr}"\n'
    )
    values = cf.current_values(result.text, "redis")
    assert values["rename-command"] == ['CONFIG ""', 'DEBUG "DEBUG-x y"']
    # what current_values gives back is no change
    assert not cf.edit(result.text, "redis", values).changed
    with pytest.raises(config_base.ConfigFileError, match="replicaof: unbalanced quotes"):
        cf.edit("port 1\n", "redis", {"replicaof": '"open 1'})


def test_redis_save_disabled_and_rename_command():
    text = fixture("redis.conf")
    result = cf.edit(text, "redis", {"save": "", "rename-command": [["FLUSHALL", ""], ["FLUSHDB", ""]]})
    values = cf.current_values(result.text, "redis")
    assert values["save"] == [""]
    assert 'save ""\ndbfilename' in result.text
    assert values["rename-command"] == ['FLUSHALL ""', 'FLUSHDB ""']


def test_redis_quoting_of_new_values():
    text = "port 6379\n"
    result = cf.edit(text, "redis", {"requirepass": 'p a"ss', "logfile": "", "appendonly": True})
    assert result.text == 'port 6379\nrequirepass "p a\\"ss"\nlogfile ""\nappendonly yes\n'
    assert cf.current_values(result.text, "redis")["requirepass"] == 'p a"ss'


def test_redis_append_remove_keep_and_aliases():
    text = fixture("redis.conf")
    result = cf.edit(
        text,
        "redis",
        {"appendonly": "yes", "slave-serve-stale-data": "no", "maxmemory": "1gb", "hash-max-ziplist-entries": 256},
        remove=["notify-keyspace-events", "include", "absent-directive"],
        keep=["MAXMEMORY"],
    )
    removed, added = changed_lines(text, result.text)
    assert removed == [
        "include /etc/redis/common.conf",
        "replica-serve-stale-data yes",
        'notify-keyspace-events "Ex"',
    ]
    assert added == ["slave-serve-stale-data no", "appendonly yes", "hash-max-ziplist-entries 256"]
    assert result.changes["slave-serve-stale-data"] == {"before": "yes", "after": "no"}
    assert result.text.endswith("maxmemory-policy allkeys-lru\nappendonly yes\nhash-max-ziplist-entries 256\n")
    assert "maxmemory" not in result.changes
    assert result.changes["include"] == {"before": ["/etc/redis/common.conf"], "after": None}


def test_redis_config_rewrite_file_is_parsed_and_edited():
    text = fixture("redis-rewrite.conf")
    values = cf.current_values(text, "redis")
    assert values["maxmemory"] == "100mb"
    assert values["save"] == ["900 1", "300 10"]
    assert values["user"] == ["default on nopass ~* &* +@all"]
    assert values["latency-tracking-info-percentiles"] == "50 99 99.9"
    assert not cf.edit(text, "redis", {"maxmemory": "100mb", "save": "900 1 300 10"}).changed
    result = cf.edit(text, "redis", {"maxmemory": "200mb", "maxmemory-policy": "allkeys-lfu", "hz": 20})
    assert changed_lines(text, result.text) == (
        ["maxmemory-policy allkeys-lru", "maxmemory 100mb"],
        ["maxmemory-policy allkeys-lfu", "maxmemory 200mb", "hz 20"],
    )
    tail = result.text[result.text.index("# Generated by CONFIG REWRITE") :]
    assert tail.splitlines()[-1] == "hz 20"
    assert "maxmemory 200mb" in tail


def test_redis_new_file_with_header_and_file_without_final_newline():
    result = cf.edit(None, "redis", {"port": 6390}, header="Redis node")
    assert result.text == "# Redis node\nport 6390\n"
    assert cf.edit("port 1", "redis", {"port": 1}).text == "port 1"
    assert cf.edit("port 1", "redis", {"hz": 10}).text == "port 1\nhz 10\n"


def test_redis_broken_line_names_the_line():
    with pytest.raises(config_base.ConfigFileError, match=r"line 2: unbalanced quotes"):
        cf.current_values('port 1\nrequirepass "open\n', "redis")


def test_redis_caller_equality():
    def equal(key, old, new):
        return old.lower() == str(new).lower()

    assert not cf.edit("maxmemory 100MB\n", "redis", {"maxmemory": "100mb"}, equal=equal).changed
    assert cf.edit("maxmemory 100MB\n", "redis", {"maxmemory": "100mb"}).changed


# Files -----------------------------------------------------------------------------------------------------


def test_read_text_missing_is_none(tmp_path):
    assert cf.read_text(str(tmp_path / "absent.conf")) is None


def test_write_atomic_keeps_mode_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "redis.conf"
    path.write_text("port 1\n")
    os.chmod(path, 0o640)
    assert cf.write_atomic(str(path), "port 2\n") is None
    assert path.read_text() == "port 2\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["redis.conf"]


def test_write_atomic_new_file_mode(tmp_path):
    path = tmp_path / "new.conf"
    cf.write_atomic(str(path), "x\n", mode="0600")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with pytest.raises(config_base.ConfigFileError, match="mode must be an octal number"):
        cf.write_atomic(str(tmp_path / "other.conf"), "x\n", mode="rw-r--r--")


def test_write_atomic_follows_a_symlink(tmp_path):
    target = tmp_path / "real.yaml"
    target.write_text("a: 1\n")
    link = tmp_path / "link.yaml"
    os.symlink(target, link)
    cf.write_atomic(str(link), "a: 2\n")
    assert os.path.islink(link)
    assert target.read_text() == "a: 2\n"


def test_write_atomic_backup(tmp_path):
    path = tmp_path / "cassandra.yaml"
    path.write_text("a: 1\n")
    first = cf.write_atomic(str(path), "a: 2\n", backup=True)
    second = cf.write_atomic(str(path), "a: 3\n", backup=True)
    assert re.match(re.escape(str(path)) + r"\.\d{8}T\d{6}~$", first)
    assert first != second
    assert open(first).read() == "a: 1\n"
    assert open(second).read() == "a: 2\n"
    assert path.read_text() == "a: 3\n"
    assert cf.write_atomic(str(tmp_path / "fresh.yaml"), "a: 1\n", backup=True) is None


def test_edit_file_writes_and_reports(tmp_path):
    path = tmp_path / "mongod.conf"
    path.write_text(fixture("mongod.conf"))
    os.chmod(path, 0o600)
    result = cf.edit_file(str(path), "yaml", {"net.port": 27018}, backup=True)
    assert result["changed"]
    assert result["changes"] == {"net.port": {"before": 27017, "after": 27018}}
    assert open(result["backup_file"]).read() == fixture("mongod.conf")
    assert result["diff"]["before"] == fixture("mongod.conf")
    assert result["diff"]["after"] == path.read_text()
    assert result["diff"]["before_header"] == str(path)
    assert "  port: 27018\n" in path.read_text()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = cf.edit_file(str(path), "yaml", {"net.port": 27018}, backup=True)
    assert not again["changed"]
    assert again["backup_file"] is None


def test_edit_file_check_mode_touches_nothing(tmp_path):
    path = tmp_path / "redis.conf"
    path.write_text(fixture("redis.conf"))
    before = os.stat(path)
    result = cf.edit_file(str(path), "redis", {"maxmemory": "1gb"}, check_mode=True, backup=True)
    assert result["changed"]
    assert result["backup_file"] is None
    assert "maxmemory 1gb" in result["diff"]["after"]
    assert path.read_text() == fixture("redis.conf")
    assert os.stat(path).st_mtime_ns == before.st_mtime_ns
    assert os.listdir(tmp_path) == ["redis.conf"]
    new = cf.edit_file(str(tmp_path / "new.conf"), "redis", {"port": 1}, check_mode=True)
    assert new["changed"]
    assert not os.path.exists(tmp_path / "new.conf")


def test_edit_file_creates_or_refuses(tmp_path):
    path = tmp_path / "sub.yaml"
    with pytest.raises(config_base.ConfigFileError, match="does not exist"):
        cf.edit_file(str(path), "yaml", {"a": 1}, create=False)
    assert not path.exists()
    result = cf.edit_file(str(path), "yaml", {"a": 1}, header="Managed", mode="0640")
    assert result["changed"]
    assert result["diff"]["before"] == ""
    assert path.read_text() == "# Managed\na: 1\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


def test_config_digest(tmp_path):
    one = tmp_path / "one"
    one.write_bytes(b"abc")
    missing = str(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    digest = config_digest([str(one), missing])
    assert re.match(r"^[0-9a-f]{64}$", digest)
    assert digest == config_digest([str(one), str(empty)])
    assert digest != config_digest([missing, str(one)])
    one.write_bytes(b"abd")
    assert digest != config_digest([str(one), missing])


# Tuned state -----------------------------------------------------------------------------------------------


def test_tuned_state_merge(tmp_path):
    config = tmp_path / "cassandra.yaml"
    config.write_text("a: 1\n")
    os.chmod(config, 0o640)
    path = str(config)
    assert cf.tuned_state_path(path) == path + ".tuned.json"
    assert cf.read_tuned_state(path) == {}
    assert cf.write_tuned_state(path, {"concurrent_reads": 64}, check_mode=True)
    assert not os.path.exists(cf.tuned_state_path(path))
    assert cf.write_tuned_state(path, {"concurrent_reads": 64})
    state = cf.read_tuned_state(path)
    assert state["settings"] == {"concurrent_reads": 64}
    assert re.match(r"^\d{4}-\d\d-\d\dT", state["updated"])
    assert stat.S_IMODE(os.stat(cf.tuned_state_path(path)).st_mode) == 0o640
    assert not cf.write_tuned_state(path, {"concurrent_reads": 64})
    assert cf.read_tuned_state(path)["updated"] == state["updated"]
    assert cf.write_tuned_state(path, {"compaction_throughput": "64MiB/s"})
    assert cf.read_tuned_state(path)["settings"] == {"concurrent_reads": 64, "compaction_throughput": "64MiB/s"}
    assert cf.write_tuned_state(path, {"concurrent_reads": None})
    assert cf.read_tuned_state(path)["settings"] == {"compaction_throughput": "64MiB/s"}
    assert not cf.write_tuned_state(str(tmp_path / "other.yaml"), {})


def test_tuned_state_broken_file_fails_clearly(tmp_path):
    config = str(tmp_path / "redis.conf")
    with open(cf.tuned_state_path(config), "w") as handle:
        handle.write("{not json")
    with pytest.raises(config_base.ConfigFileError, match="not valid JSON"):
        cf.read_tuned_state(config)


def test_missing_libraries_is_a_list():
    assert config_base.missing_libraries() == []


# Kept keys and the module --------------------------------------------------------------------------------


def test_kept_report_names_the_conflicts():
    text = fixture("cassandra.yaml")
    tuned = {"concurrent_reads": 64, "memtable.configurations": {"x": 1}}
    report = cf.kept_report(
        text,
        "yaml",
        {"concurrent_reads": 32, "num_tokens": 8, "memtable.configurations.skiplist.class_name": "X"},
        ["cluster_name"],
        ["cluster_name"],
        tuned,
    )
    assert report == {
        "concurrent_reads": {"requested": 32, "kept": 32, "reason": "tuned", "tuned": {"concurrent_reads": 64}},
        "memtable.configurations.skiplist.class_name": {
            "requested": "X",
            "kept": "SkipListMemtable",
            "reason": "tuned",
            "tuned": {"memtable.configurations": {"x": 1}},
        },
        "cluster_name": {"requested": None, "kept": "Tactician Lab", "reason": "keep"},
    }
    redis = cf.kept_report(fixture("redis.conf"), "redis", {"MaxMemory": "1gb"}, [], [], {"maxmemory": "2gb"})
    assert redis == {
        "MaxMemory": {"requested": "1gb", "kept": "256mb", "reason": "tuned", "tuned": {"maxmemory": "2gb"}}
    }
    assert cf.kept_report(None, "redis", {"port": 1}, [], ["port"], {}) == {
        "port": {"requested": 1, "kept": None, "reason": "keep"}
    }


MODULE = os.path.join(ROOT, "plugins", "modules", "config_file.py")


def run_module(tmp_path, args):
    """Run the module as Ansible does (a JSON file of arguments) and return its JSON result."""
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    collections = os.path.join(ROOT, ".collections")
    env = dict(os.environ, PYTHONPATH=collections)
    process = subprocess.run(
        [sys.executable, MODULE, str(args_file)], capture_output=True, text=True, env=env, check=False
    )
    return json.loads(process.stdout)


def test_module_check_mode_diff_and_tuned_keys(tmp_path):
    path = tmp_path / "cassandra.yaml"
    path.write_text(fixture("cassandra.yaml"))
    cf.write_tuned_state(str(path), {"concurrent_reads": 64})
    args = dict(
        path=str(path),
        format="yaml",
        settings={"concurrent_reads": 16, "num_tokens": 8},
        _ansible_check_mode=True,
        _ansible_diff=True,
    )
    result = run_module(tmp_path, args)
    assert result["changed"] is True
    assert result["changes"] == {"num_tokens": {"before": 16, "after": 8}}
    assert result["kept"]["concurrent_reads"]["reason"] == "tuned"
    assert result["diff"]["before"] == fixture("cassandra.yaml")
    assert "num_tokens: 8\n" in result["diff"]["after"]
    assert path.read_text() == fixture("cassandra.yaml")
    args.update(_ansible_check_mode=False, _ansible_diff=False, keep_tuned=False, backup=True)
    result = run_module(tmp_path, args)
    assert result["changed"] is True
    assert set(result["changes"]) == {"num_tokens", "concurrent_reads"}
    assert result["kept"] == {}
    assert "diff" not in result
    assert os.path.exists(result["backup_file"])
    assert "concurrent_reads: 16   # 16 x number of data drives\n" in path.read_text()
    assert run_module(tmp_path, args)["changed"] is False


def test_module_fails_clearly(tmp_path):
    result = run_module(tmp_path, dict(path=str(tmp_path / "absent.conf"), format="redis", create=False))
    assert result["failed"] is True
    assert result["msg"] == "%s does not exist (and create is false)" % (tmp_path / "absent.conf")
    result = run_module(tmp_path, dict(path=str(tmp_path / "x.conf"), format="ini"))
    assert result["failed"] is True
    assert "format" in result["msg"] and "yaml, redis" in result["msg"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1\n")
    result = run_module(tmp_path, dict(path=str(bad), format="yaml", settings={"a": 1}))
    assert result["msg"].startswith("%s: not valid YAML" % bad)
    assert bad.read_text() == "a: [1\n"


def test_owned_keys_no_longer_set_are_found_stale(tmp_path):
    owned = str(tmp_path / "c.yaml.role.json")
    assert cf.stale_owned_keys(owned, {"a": 1}) == []
    assert cf.write_owned_keys(owned, {"a": 1, "b": 2}) is True
    assert cf.write_owned_keys(owned, {"b": 2, "a": 1}) is False
    assert cf.stale_owned_keys(owned, {"a": 1}) == ["b"]
    assert cf.stale_owned_keys(owned, {"a": 1}, keep=["b"]) == []
    assert cf.write_owned_keys(owned, {"a": 1}, check_mode=True) is True
    assert cf.read_owned_keys(owned) == ["a", "b"]
