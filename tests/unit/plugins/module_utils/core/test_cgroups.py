# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.core import cgroups, process


@pytest.mark.parametrize(
    "spec,size",
    [("2G", 2 << 30), ("1536M", 1536 << 20), ("2GiB", 2 << 30), ("1.5g", 3 << 29), (str(1 << 30), 1 << 30)],
)
def test_parse_size(spec, size):
    assert cgroups.parse_size(spec) == size


@pytest.mark.parametrize("spec", ["two", "2X", "-1G", "1G2"])
def test_parse_size_refuses_and_names_the_field(spec):
    with pytest.raises(cgroups.CgroupError, match="memory_limit: .* is not a size"):
        cgroups.parse_size(spec)


def test_parse_size_refuses_too_little():
    with pytest.raises(cgroups.CgroupError, match="below 64M"):
        cgroups.parse_size("10M")


def test_unset_is_none():
    assert cgroups.parse_size("") is None
    assert cgroups.parse_size(None) is None


def test_version_detection(tmp_path):
    assert cgroups.version(str(tmp_path)) is None
    (tmp_path / "cgroup.controllers").write_text("cpu io memory pids\n")
    assert cgroups.version(str(tmp_path)) == 2
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert cgroups.version(str(tmp_path)) == 1


def test_no_controller_is_a_clear_error(tmp_path):
    with pytest.raises(cgroups.CgroupError, match="memory_limit: this machine offers no memory cgroup"):
        cgroups.MemoryGroup("node1", root=str(tmp_path))


def test_bad_name_is_refused(tmp_path):
    with pytest.raises(cgroups.CgroupError, match="memory group name"):
        cgroups.MemoryGroup("a/b", root=str(tmp_path))


def test_v1_group_on_a_fake_hierarchy(tmp_path):
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    group = cgroups.MemoryGroup("node1", root=str(tmp_path))
    assert group.path == str(tmp_path / "memory" / "tactician" / "node1")
    assert not group.exists()
    assert group.ensure(1 << 30) is True
    assert group.limit() == 1 << 30
    assert group.ensure(1 << 30) is False
    (tmp_path / "memory" / "tactician" / "node1" / "memory.stat").write_text("total_cache 4096\ntotal_rss 8192\n")
    stats = group.stats()
    assert stats["cache"] == 4096 and stats["anon"] == 8192 and stats["limit"] == 1 << 30


def test_v2_group_on_a_fake_hierarchy(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("memory\n")
    group = cgroups.MemoryGroup("node1", root=str(tmp_path))
    group.ensure(512 << 20)
    assert (tmp_path / "tactician" / "cgroup.subtree_control").read_text() == "+memory"
    assert (tmp_path / "tactician" / "node1" / "memory.max").read_text() == str(512 << 20)
    assert (tmp_path / "tactician" / "node1" / "memory.swap.max").exists() is False
    (tmp_path / "tactician" / "node1" / "memory.max").write_text("max\n")
    assert group.limit() is None


def _real_controller():
    if os.geteuid() != 0 or cgroups.version() is None:
        return False
    base = os.path.join(cgroups.ROOT, "memory") if cgroups.version() == 1 else cgroups.ROOT
    return os.access(base, os.W_OK)


@pytest.mark.skipif(not _real_controller(), reason="needs root and a writable memory cgroup controller")
def test_real_group_caps_a_process_and_is_removed(tmp_path):
    group = cgroups.MemoryGroup("unit-test-%d" % os.getpid())
    try:
        group.ensure(128 << 20)
        pid = process.spawn(
            [sys.executable, "-c", "import time; time.sleep(30)"],
            str(tmp_path / "p.pid"),
            str(tmp_path / "p.log"),
            memory_group=group,
        )
        assert pid in group.pids()
        assert group.stats()["limit"] == 128 << 20
        process.terminate(pid, timeout=5)
        assert group.remove() is True
        assert not group.exists()
    finally:
        if group.exists():
            for stray in group.pids():
                os.kill(stray, 9)
            group.remove()


@pytest.mark.parametrize(
    "spec,rate", [("100M", 100 << 20), ("1.5G", 3 << 29), ("80MB/s", 80 << 20), ("2097152", 2 << 20)]
)
def test_parse_rate(spec, rate):
    assert cgroups.parse_rate(spec) == rate


@pytest.mark.parametrize("spec", ["fast", "100X", "-5M", "512K"])
def test_parse_rate_refuses_and_names_the_field(spec):
    with pytest.raises(cgroups.CgroupError, match="disk_read_limit: "):
        cgroups.parse_rate(spec)


def test_parse_iops():
    assert cgroups.parse_iops("3000") == 3000 and cgroups.parse_iops(0) is None and cgroups.parse_iops("") is None
    for spec in ("many", "5", "1.5"):
        with pytest.raises(cgroups.CgroupError, match="disk_read_iops: .* 10 or more"):
            cgroups.parse_iops(spec)


def test_the_disk_of_a_path_is_a_whole_disk():
    if not os.path.isdir("/sys/dev/block"):
        pytest.skip("no /sys/dev/block here")
    try:
        found = cgroups.disk_of(os.getcwd())
    except cgroups.CgroupError:
        pytest.skip("the working folder is on no block device here (an overlay or tmpfs)")
    major, minor = found.split(":")
    assert major.isdigit() and minor.isdigit()
    assert not os.path.exists("/sys/dev/block/%s/partition" % found)


def test_no_io_controller_is_a_clear_error(tmp_path):
    assert cgroups.io_version(str(tmp_path)) is None
    with pytest.raises(cgroups.CgroupError, match="disk_read_limit: this machine offers no I/O cgroup"):
        cgroups.IoGroup("node1", root=str(tmp_path))


def test_v1_io_group_holds_read_limits_on_a_fake_hierarchy(tmp_path):
    (tmp_path / "blkio").mkdir()
    (tmp_path / "blkio" / "blkio.throttle.read_bps_device").write_text("")
    assert cgroups.io_version(str(tmp_path)) == 1
    group = cgroups.IoGroup("node1", root=str(tmp_path))
    assert group.path == str(tmp_path / "blkio" / "tactician" / "node1")
    assert group.limits("254:0") == {"read_bps": None, "read_iops": None}
    assert group.ensure("254:0", read_bps=80 << 20, read_iops=None) is True
    folder = tmp_path / "blkio" / "tactician" / "node1"
    assert (folder / "blkio.throttle.read_bps_device").read_text() == "254:0 %d" % (80 << 20)
    assert (folder / "blkio.throttle.read_iops_device").read_text() == "254:0 0"  # 0: no limit
    assert group.limits("254:0") == {"read_bps": 80 << 20, "read_iops": None}
    assert group.ensure("254:0", read_bps=80 << 20) is False
    (folder / "blkio.throttle.io_service_bytes").write_text("254:0 Read 4096\n254:0 Write 8192\nTotal 12288\n")
    (folder / "blkio.throttle.io_serviced").write_text("254:0 Read 1\n254:0 Write 2\n")
    stats = group.stats("254:0")
    assert stats["read_bytes"] == 4096 and stats["read_ops"] == 1 and stats["read_bps"] == 80 << 20


def test_v2_io_group_writes_io_max(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpu io memory\n")
    group = cgroups.IoGroup("node1", root=str(tmp_path))
    assert group.path == str(tmp_path / "tactician" / "node1")  # the node's one group, its memory group too
    group.ensure("254:0", read_iops=3000)
    assert (tmp_path / "tactician" / "cgroup.subtree_control").read_text() == "+io"
    assert (tmp_path / "tactician" / "node1" / "io.max").read_text() == "254:0 rbps=max riops=3000"
    assert group.limits("254:0") == {"read_bps": None, "read_iops": 3000}


def test_clear_lifts_the_read_limits_only_where_there_are_some(tmp_path):
    (tmp_path / "blkio").mkdir()
    (tmp_path / "blkio" / "blkio.throttle.read_bps_device").write_text("")
    group = cgroups.IoGroup("node1", root=str(tmp_path))
    assert group.clear() is False  # no group yet
    group.ensure("254:0", read_bps=80 << 20)
    assert group.clear() is True
    assert group.limits("254:0") == {"read_bps": None, "read_iops": None}
    assert group.clear() is False
