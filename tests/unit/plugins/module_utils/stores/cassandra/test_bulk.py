# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import bulk


def test_dataset_name_carries_what_makes_it():
    assert (
        bulk.dataset_name("tactician", "usertable", 4000000, 10, 100, 1)
        == "tactician.usertable-4000000x10x100-seed1-nb"
    )
    assert bulk.dataset_name("ks", "t", 10, 1, 1, 2, "NONE").endswith("-oa")
    assert bulk.dataset_name("ks", "t", 10, 1, 1, 2, "NONE", sstable_format="bti").endswith("-da")
    assert bulk.dataset_name("ks", "t", 10, 1, 1, 2, "UPGRADING", sstable_format="bti").endswith("-da")
    with_options = bulk.dataset_name("ks", "t", 10, 1, 1, 2, options="compression = {'chunk_length_in_kb': 4}")
    assert with_options.startswith("ks.t-10x1x1-seed2-nb-") and with_options != bulk.dataset_name(
        "ks", "t", 10, 1, 1, 2
    )


@pytest.mark.parametrize(
    "args,field",
    [
        (("bad-name", "t", 1, 1, 1, 1), "keyspace"),
        (("ks", "t;drop", 1, 1, 1, 1), "table"),
        (("ks", "t", 0, 1, 1, 1), "recordcount"),
        (("ks", "t", 1, "10", 1, 1), "fieldcount"),
        (("ks", "t", 1, 1, 1, 1, "CASSANDRA_3"), "storage_compatibility_mode"),
        (("ks", "t", 1, 1, 1, 1, "NONE", "x = 1; DROP TABLE t"), "table_options"),
        (("ks", "t", 1, 1, 1, 1, "NONE", "", 0, "trie"), "sstable_format"),
        (("ks", "t", 1, 1, 1, 1, "CASSANDRA_4", "", 0, "bti"), "sstable_format"),
    ],
)
def test_bad_input_names_the_field(args, field):
    with pytest.raises(bulk.BulkLoadError, match="^%s: " % field):
        bulk.dataset_name(*args)


def _fake_dataset(tmp_path):
    kept = tmp_path / "datasets" / "ks.t-2x1x1-seed1-nb"
    kept.mkdir(parents=True)
    for name in ("nb-1-big-Data.db", "nb-1-big-Index.db", "nb-1-big-Statistics.db", "nb-1-big-TOC.txt"):
        (kept / name).write_bytes(b"x" * 10)
    (kept / "dataset.json").write_text(json.dumps({"keyspace": "ks", "table": "t"}))
    return {"name": kept.name, "dir": str(kept), "keyspace": "ks", "table": "t"}


def test_link_into_an_empty_table_links_the_large_files_and_copies_the_small(tmp_path):
    dataset = _fake_dataset(tmp_path)
    data = tmp_path / "data"
    table = data / "ks" / "t-0123abcd"
    table.mkdir(parents=True)
    assert bulk.is_loaded(dataset, str(data)) is False
    placed = bulk.link_into_table(dataset, str(data))
    assert placed["table_dir"] == str(table)
    assert sorted(os.listdir(table)) == [
        "nb-1-big-Data.db",
        "nb-1-big-Index.db",
        "nb-1-big-Statistics.db",
        "nb-1-big-TOC.txt",
    ]
    kept = os.path.join(dataset["dir"], "nb-1-big-Data.db")
    assert os.stat(table / "nb-1-big-Data.db").st_ino == os.stat(kept).st_ino
    assert (
        os.stat(table / "nb-1-big-Statistics.db").st_ino
        != os.stat(os.path.join(dataset["dir"], "nb-1-big-Statistics.db")).st_ino
    )
    assert bulk.is_loaded(dataset, str(data)) is True
    assert bulk.is_loaded(dataset, str(data), copy=True) is False  # linked where a copy is wanted
    # Writes flushed beside the data set: still its files, but not only them.
    (table / "nb-9-big-Data.db").write_bytes(b"w")
    assert bulk.is_loaded(dataset, str(data)) is True
    assert bulk.is_loaded(dataset, str(data), exact=True) is False
    os.unlink(table / "nb-9-big-Data.db")
    assert bulk.is_loaded(dataset, str(data), exact=True) is True
    # A compaction that rewrote the data: no longer the data set.
    os.unlink(table / "nb-1-big-Data.db")
    (table / "nb-2-big-Data.db").write_bytes(b"y")
    assert bulk.is_loaded(dataset, str(data)) is False


def test_copy_into_a_table_shares_no_inode_and_is_recognized_by_name_and_size(tmp_path, monkeypatch):
    dataset = _fake_dataset(tmp_path)
    data = tmp_path / "data"
    table = data / "ks" / "t-0123abcd"
    table.mkdir(parents=True)
    dropped = []
    monkeypatch.setattr(bulk, "drop_cached", lambda directory: dropped.append(directory) or 0)
    bulk.link_into_table(dataset, str(data), copy=True)
    # The copy read the data set's files: their cached pages are dropped as well as the copy's, so that no node
    # linking the data set reads pages cached outside its memory group.
    assert sorted(dropped) == sorted([str(table), dataset["dir"]])
    for name in os.listdir(table):
        assert os.stat(table / name).st_ino != os.stat(os.path.join(dataset["dir"], name)).st_ino
    # Copied files are not the data set's inodes, so only the copy rule recognizes them.
    assert bulk.is_loaded(dataset, str(data)) is False
    assert bulk.is_loaded(dataset, str(data), copy=True) is True
    os.unlink(table / "nb-1-big-Data.db")
    (table / "nb-2-big-Data.db").write_bytes(b"x" * 10)
    assert bulk.is_loaded(dataset, str(data), copy=True) is False


def test_link_refuses_a_table_that_still_has_sstables(tmp_path):
    dataset = _fake_dataset(tmp_path)
    table = tmp_path / "data" / "ks" / "t-0123abcd"
    table.mkdir(parents=True)
    (table / "nb-7-big-Data.db").write_bytes(b"old")
    with pytest.raises(bulk.BulkLoadError, match="still has 1 SSTables"):
        bulk.link_into_table(dataset, str(tmp_path / "data"))


def test_link_needs_the_table(tmp_path):
    dataset = _fake_dataset(tmp_path)
    with pytest.raises(bulk.BulkLoadError, match="no directory of table ks.t"):
        bulk.link_into_table(dataset, str(tmp_path / "data"))


def test_a_kept_data_set_is_not_written_again(tmp_path):
    cache = tmp_path / "cache"
    name = bulk.dataset_name("ks", "t", 5, 1, 1, 1)
    (cache / name).mkdir(parents=True)
    (cache / name / "dataset.json").write_text(json.dumps({"name": name, "records": 5}))
    meta = bulk.build_dataset(str(cache), "/nonexistent", "/nonexistent", "ks", "t", 5, 1, 1, 1)
    assert meta["built"] is False and meta["records"] == 5 and meta["dir"] == str(cache / name)


def test_drop_cached_covers_every_file(tmp_path):
    (tmp_path / "a").write_bytes(b"1" * 100)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_bytes(b"2" * 50)
    assert bulk.drop_cached(str(tmp_path)) == 150
