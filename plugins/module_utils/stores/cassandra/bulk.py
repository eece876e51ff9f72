# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Data sets of millions of YCSB rows, loaded in seconds: written once as SSTables offline (CQLSSTableWriter, from
the node's own jars), kept, and imported into a node with ``nodetool import`` from hard links, so that the kept
copy survives the node's compactions and the next reload costs no copy.

A node whose data is much larger than its memory reads from the disk only when the data's pages are not in the
page cache already: after an import, the imported files' cached pages are dropped (posix_fadvise DONTNEED), so the
node starts cold, as a node restarted on a real machine does. Lab and bench only: the node's data directory must be
on the machine (and file system) this runs on.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import time

from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.client import CassandraError
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.schema import (
    check_name,
    check_table_name,
)
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.server import (
    _SERVER_EXPORTS,
    _SERVER_OPENS,
    CassandraServerError,
    _module_flags,
    jamm_agent,
    lib_dir,
)

SOURCE = os.path.join("src", "tactician", "bulk", "SSTableDataset.java")
MAIN_CLASS = "tactician.bulk.SSTableDataset"
_LOGBACK = """<configuration>
  <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%-5level %logger{20} %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="STDERR"/></root>
</configuration>
"""


# The large files, which a node never rewrites in place, are hard-linked; the small ones (statistics, summary,
# filter...) are copied, so that nothing the node writes can reach the kept data set.
_LINKED = ("-Data.db", "-Index.db", "-Partitions.db", "-Rows.db")


# The writer runs as a Cassandra tool, which reads a configuration: the node's storage_compatibility_mode fixes
# the SSTable version it writes; its directories are the writer's own scratch space.
_CONFIG = """cluster_name: tactician-dataset
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
storage_compatibility_mode: %(mode)s
sstable:
  selected_format: %(format)s
data_file_directories: [%(work)s/data]
commitlog_directory: %(work)s/commitlog
saved_caches_directory: %(work)s/saved_caches
hints_directory: %(work)s/hints
commitlog_sync: periodic
commitlog_sync_period: 10000ms
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: 127.0.0.1
"""


class BulkLoadError(CassandraServerError):
    """A data set could not be written or imported."""


COMPATIBILITY_MODES = ("CASSANDRA_4", "UPGRADING", "NONE")
SSTABLE_FORMATS = ("big", "bti")


def sstable_version(compatibility="CASSANDRA_4", sstable_format="big"):
    """The SSTable version Cassandra 5.0 writes in a storage compatibility mode and format: nb (4.x's), oa (5.0's
    BIG) or da (the trie-indexed BTI format, which the CASSANDRA_4 mode refuses)."""
    if compatibility not in COMPATIBILITY_MODES:
        raise BulkLoadError(
            "storage_compatibility_mode: %r is not allowed; choose one of %s (the node's cassandra.yaml value)"
            % (compatibility, ", ".join(COMPATIBILITY_MODES))
        )
    if sstable_format not in SSTABLE_FORMATS:
        raise BulkLoadError(
            "sstable_format: %r is not allowed; choose one of %s (the node's sstable.selected_format)"
            % (sstable_format, ", ".join(SSTABLE_FORMATS))
        )
    if compatibility == "CASSANDRA_4":
        if sstable_format == "bti":
            raise BulkLoadError(
                "sstable_format: bti is not available in storage_compatibility_mode CASSANDRA_4; choose big, or the"
                " mode UPGRADING or NONE"
            )
        return "nb"
    return "oa" if sstable_format == "big" else "da"


def dataset_name(
    keyspace,
    table,
    records,
    fieldcount,
    fieldlength,
    seed,
    compatibility="CASSANDRA_4",
    options="",
    max_sstable_mib=0,
    sstable_format="big",
):
    try:
        check_name(keyspace, "keyspace")
        check_table_name(table, "table")
    except CassandraError as exc:
        raise BulkLoadError(str(exc)) from exc
    for value, field in ((records, "recordcount"), (fieldcount, "fieldcount"), (fieldlength, "fieldlength")):
        if not isinstance(value, int) or value < 1:
            raise BulkLoadError("%s: %r must be a whole number of at least 1" % (field, value))
    version = sstable_version(compatibility, sstable_format)
    if ";" in (options or ""):
        raise BulkLoadError("table_options: %r: one WITH clause, no ';'" % (options,))
    name = "%s.%s-%dx%dx%d-seed%d-%s" % (keyspace, table, records, fieldcount, fieldlength, int(seed), version)
    if max_sstable_mib:
        name += "-s%d" % int(max_sstable_mib)
    if options:
        name += "-" + hashlib.sha256(options.encode("utf-8")).hexdigest()[:10]
    return name


def _compile(java, cassandra_home, driver_home):
    """Compile the data set writer against the node's jars (once; kept under driver_home/classes-bulk)."""
    source = os.path.join(driver_home, SOURCE)
    if not os.path.isfile(source):
        raise BulkLoadError(
            "driver_home: %s has no %s; install the load driver (role tactician.nosql.load_driver)"
            % (driver_home, SOURCE)
        )
    classes = os.path.join(driver_home, "classes-bulk")
    target = os.path.join(classes, "tactician", "bulk", "SSTableDataset.class")
    if os.path.isfile(target) and os.path.getmtime(target) >= os.path.getmtime(source):
        return classes
    javac = os.path.join(os.path.dirname(os.path.realpath(shutil.which(java) or java)), "javac")
    os.makedirs(classes, exist_ok=True)
    cp = os.pathsep.join([os.path.join(lib_dir(cassandra_home), "*"), _ycsb_core(driver_home)])
    proc = subprocess.run(
        [javac, "-nowarn", "-cp", cp, "-d", classes, source], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise BulkLoadError("cannot compile the data set writer: %s" % proc.stderr.strip()[-800:])
    return classes


def _ycsb_core(driver_home):
    found = sorted(glob.glob(os.path.join(driver_home, "lib", "core-*.jar")))
    if not found:
        raise BulkLoadError("driver_home: %s/lib has no YCSB core jar; install the load driver" % driver_home)
    return found[-1]


def build_dataset(
    cache_dir,
    cassandra_home,
    driver_home,
    keyspace="tactician",
    table="usertable",
    records=1000000,
    fieldcount=10,
    fieldlength=100,
    seed=1,
    max_sstable_mib=0,
    java="java",
    heap="1g",
    compatibility="CASSANDRA_4",
    table_options="",
    sstable_format="big",
):
    """The data set's directory under cache_dir, written when missing. Returns its description (dir, rows,
    bytes, files, seconds it took to write, built: True when written now). table_options: the text after WITH
    of the table's CREATE TABLE (its compression fixes the SSTables' chunk length); the live table must have the
    same. max_sstable_mib 0 writes one SSTable (as a table after a major compaction: a size-tiered table leaves it
    alone, where many SSTables of one size would start a compaction of the whole data set at once); else SSTables
    of at most that size. compatibility and sstable_format: the node's storage_compatibility_mode and
    sstable.selected_format, which fix the files' version (nb, oa or da: sstable_version)."""
    name = dataset_name(
        keyspace,
        table,
        records,
        fieldcount,
        fieldlength,
        seed,
        compatibility,
        table_options,
        max_sstable_mib,
        sstable_format,
    )
    final = os.path.join(cache_dir, name)
    meta_file = os.path.join(final, "dataset.json")
    if os.path.isfile(meta_file):
        with open(meta_file, encoding="utf-8") as handle:
            meta = json.load(handle)
        meta.update(dir=final, built=False)
        return meta
    classes = _compile(java, cassandra_home, driver_home)
    partial = final + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    logback = os.path.join(cache_dir, "logback-bulk.xml")
    with open(logback, "w", encoding="utf-8") as handle:
        handle.write(_LOGBACK)
    work = os.path.join(partial, ".work")
    config = os.path.join(cache_dir, "bulk-cassandra.yaml")
    with open(config, "w", encoding="utf-8") as handle:
        handle.write(_CONFIG % {"work": work, "mode": compatibility, "format": sstable_format})
    argv = [java, "-Xms" + heap, "-Xmx" + heap] + _module_flags(_SERVER_EXPORTS, _SERVER_OPENS)
    argv += [
        "-Dio.netty.tryReflectionSetAccessible=true",
        "-Dlogback.configurationFile=file://" + os.path.abspath(logback),
        "-Dcassandra.storagedir=" + work,
        "-Dcassandra.config=file://" + os.path.abspath(config),
        "-javaagent:" + jamm_agent(cassandra_home),
        "-cp",
        os.pathsep.join([classes, os.path.join(lib_dir(cassandra_home), "*"), _ycsb_core(driver_home)]),
        MAIN_CLASS,
        partial,
        keyspace,
        table,
        str(records),
        str(fieldcount),
        str(fieldlength),
        str(int(seed)),
        str(int(max_sstable_mib)),
        compatibility,
        table_options or "",
    ]
    began = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise BulkLoadError("the data set writer failed: %s" % (proc.stderr.strip() or proc.stdout.strip())[-1200:])
    shutil.rmtree(os.path.join(partial, ".work"), ignore_errors=True)
    files = sorted(os.listdir(partial))
    version = sstable_version(compatibility, sstable_format)
    wrong = [f for f in files if f.endswith("-Data.db") and not f.startswith(version + "-")]
    if wrong or not any(f.endswith("-Data.db") for f in files):
        shutil.rmtree(partial, ignore_errors=True)
        raise BulkLoadError(
            "the data set writer wrote %s, not SSTables of version %s: check the tool configuration"
            % (", ".join(wrong) or "no Data.db file", version)
        )
    meta = {
        "name": name,
        "keyspace": keyspace,
        "table": table,
        "records": records,
        "fieldcount": fieldcount,
        "fieldlength": fieldlength,
        "seed": int(seed),
        "storage_compatibility_mode": compatibility,
        "sstable_format": sstable_format,
        "table_options": table_options or "",
        "files": len(files),
        "bytes": sum(os.path.getsize(os.path.join(partial, f)) for f in files),
        "seconds": round(time.monotonic() - began, 1),
    }
    with open(os.path.join(partial, "dataset.json"), "w", encoding="utf-8") as handle:
        json.dump(meta, handle, indent=1)
    drop_cached(partial)
    os.replace(partial, final)
    meta.update(dir=final, built=True)
    return meta


def drop_cached(directory):
    """Drop the page cache of every file under directory (posix_fadvise DONTNEED). Returns the bytes covered."""
    total = 0
    for root, _dirs, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                total += os.fstat(fd).st_size
            except OSError:
                pass
            finally:
                os.close(fd)
    return total


def table_dir(data_dir, keyspace, table):
    """The table's directory under the node's data directory (the one with the newest id when it was dropped and
    made again)."""
    found = sorted(glob.glob(os.path.join(data_dir, keyspace, table + "-*")), key=os.path.getmtime)
    if not found:
        raise BulkLoadError(
            "no directory of table %s.%s under %s: create the table first" % (keyspace, table, data_dir)
        )
    return found[-1]


def link_into_table(dataset, data_dir, copy=False):
    """Put a built data set into a stopped node's empty table (TRUNCATE it first, with auto_snapshot off): the
    large files hard-linked, the small ones copied, then the files' cached pages dropped. The node loads them when
    it starts. Returns the seconds it took, the bytes placed and the table's directory.

    With copy, every file is copied: the node's table then shares no inode, and so no cached page, with any other
    node that holds the same data set (two nodes of one machine measured side by side on the same rows). The copy
    reads the data set's files through the page cache of the process that copies, outside any node's memory group,
    and another node that links those files would then read them from pages its group's limit does not count; so
    the data set's cached pages are dropped too.

    (``nodetool import`` of these files into a running node was tried first: Cassandra 5.0.9 reported "No new
    SSTables were found" for them whatever the source directory was named; a start loads them.)"""
    began = time.monotonic()
    target = table_dir(data_dir, dataset["keyspace"], dataset["table"])
    present = glob.glob(os.path.join(target, "*-Data.db"))
    if present:
        raise BulkLoadError(
            "table %s.%s still has %d SSTables in %s: truncate it (with auto_snapshot off) and stop the node first"
            % (dataset["keyspace"], dataset["table"], len(present), target)
        )
    for name in os.listdir(dataset["dir"]):
        if name.endswith(".json"):
            continue
        source, dest = os.path.join(dataset["dir"], name), os.path.join(target, name)
        if name.endswith(_LINKED) and not copy:
            try:
                os.link(source, dest)
                continue
            except OSError:
                pass  # another file system: copied
        shutil.copy2(source, dest)
    size = drop_cached(target)
    if copy:
        drop_cached(dataset["dir"])
    return {"seconds": round(time.monotonic() - began, 1), "bytes": size, "table_dir": target}


def is_loaded(dataset, data_dir, copy=False, exact=False):
    """True when the node's table holds the data set's files as they were linked in (same inodes): no compaction
    has rewritten them since. With copy (the files were copied in), the same names and sizes stand for the same
    files (a compaction writes files of new names), and a hard link to them does not count. With exact, the table
    holds nothing else either: no SSTable that later writes flushed beside them. False when the table or the files
    are missing."""
    try:
        target = table_dir(data_dir, dataset["keyspace"], dataset["table"])
    except BulkLoadError:
        return False

    def identity(path):
        found = os.stat(path)
        return (os.path.basename(path), found.st_size) if copy else found.st_ino

    kept_paths = [
        os.path.join(dataset["dir"], name) for name in os.listdir(dataset["dir"]) if name.endswith("-Data.db")
    ]
    live_paths = glob.glob(os.path.join(target, "*-Data.db"))
    if copy and {os.stat(p).st_ino for p in kept_paths} & {os.stat(p).st_ino for p in live_paths}:
        return False  # linked, not copied: it shares its cached pages
    kept = {identity(path) for path in kept_paths}
    live = {identity(path) for path in live_paths}
    return bool(kept) and (kept == live if exact else kept <= live)
