# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Memory control groups of server processes: one group per node, whose limit caps the node's memory and the page
cache its file reads use, as the memory of a real machine does; and I/O groups, whose limits cap what a node reads
from its disk per second, as a cloud volume's do (IoGroup).

Plain Python, no Ansible. cgroup v1 (the memory controller mounted at ``<root>/memory``) and cgroup v2 (a unified
hierarchy whose ``cgroup.controllers`` lists ``memory``) are both handled; the groups live under one parent
(``tactician``) so that they are easy to find and none is left behind: a group is removed when its node stops,
and the parent when its last group goes. Needs root (or a delegated hierarchy).
"""

from __future__ import annotations

import os
import re
import time

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import CoreError

ROOT = "/sys/fs/cgroup"
PARENT = "tactician"
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20}
_UNITS.update({"G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40})
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class CgroupError(CoreError):
    """A memory control group could not be made, joined, read or removed."""


def parse_size(spec, field="memory_limit"):
    """Bytes of a size such as 2G, 1536M, 2GiB or 1073741824; None for None or "". Raises CgroupError naming field
    on anything else."""
    if spec is None or str(spec).strip() == "":
        return None
    match = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$", str(spec))
    unit = match.group(2).upper() if match else None
    if not match or unit not in _UNITS:
        raise CgroupError(
            "%s: %r is not a size (allowed: a number of bytes, or with a unit K, M, G, T, as 2G or 1536M)"
            % (field, spec)
        )
    size = int(float(match.group(1)) * _UNITS[unit])
    if size < (64 << 20):
        raise CgroupError("%s: %r is below 64M, too little for a server process" % (field, spec))
    return size


def format_size(size):
    """A byte count for people: 2.0 GiB, 512 MiB."""
    if size is None:
        return "unlimited"
    if size >= 1 << 30:
        return "%.1f GiB" % (size / float(1 << 30))
    return "%d MiB" % (size >> 20)


def _controller_version(root, v1_file, v2_name):
    """1 when the v1 hierarchy has v1_file (under root), 2 when the unified one offers v2_name, else None."""
    if os.path.isfile(os.path.join(root, v1_file)):
        return 1
    if v2_name in (_read(os.path.join(root, "cgroup.controllers")) or "").split():
        return 2
    return None


def version(root=ROOT):
    """1 or 2: the cgroup version whose memory controller this machine offers; None when it offers none."""
    return _controller_version(root, os.path.join("memory", "memory.limit_in_bytes"), "memory")


class _Group:
    """What a node's control groups share: a folder under the parent, joined by PID, removed when empty."""

    kind = "control"
    v1_dir = ""
    missing = "%s"

    def __init__(self, name, root=ROOT):
        if not _NAME.match(str(name)):
            raise CgroupError("%s group name %r: use letters, digits, '.', '_' or '-' (up to 64)" % (self.kind, name))
        self.name = name
        self.version = self.probe(root)
        if self.version is None:
            raise CgroupError(self.missing % root)
        base = os.path.join(root, self.v1_dir) if self.version == 1 else root
        self.parent = os.path.join(base, PARENT)
        self.path = os.path.join(self.parent, name)

    @staticmethod
    def probe(root):
        """The cgroup version whose controller the group needs (None: none)."""
        return None

    def exists(self):
        return os.path.isdir(self.path)

    def _make(self, controller):
        """Make the parent and the group when missing (v2: controller enabled for the parent's children).
        Returns True when a folder was made."""
        changed = False
        for path in (self.parent, self.path):
            if not os.path.isdir(path):
                try:
                    os.mkdir(path)
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise CgroupError("cannot make %s group %s: %s (needs root)" % (self.kind, path, exc)) from exc
                changed = True
            if self.version == 2 and path == self.parent:
                controls = (_read(os.path.join(path, "cgroup.subtree_control")) or "").split()
                if controller not in controls:
                    self._write(os.path.join(path, "cgroup.subtree_control"), "+" + controller)
        return changed

    def _write(self, path, value):
        try:
            with open(path, "w") as handle:
                handle.write(str(value))
        except OSError as exc:
            raise CgroupError("cannot write %s to %s: %s" % (value, path, exc)) from exc

    def join(self, pid):
        """Move process pid (all its threads) into the group. Returns True when it was elsewhere."""
        if pid in self.pids():
            return False
        self._write(os.path.join(self.path, "cgroup.procs"), pid)
        return True

    def pids(self):
        try:
            with open(os.path.join(self.path, "cgroup.procs")) as handle:
                return {int(line) for line in handle if line.strip().isdigit()}
        except OSError:
            return set()

    def remove(self, timeout=10.0):
        """Remove the group once no process is left in it (and the parent when it is empty). Returns True when a
        group was removed; raises CgroupError when a process still runs in it after timeout."""
        if not self.exists():
            return False
        deadline = time.monotonic() + timeout
        while self.pids():
            if time.monotonic() > deadline:
                raise CgroupError(
                    "%s group %s still holds processes %s; stop them first"
                    % (self.kind, self.path, ", ".join(str(p) for p in sorted(self.pids())))
                )
            time.sleep(0.2)
        try:
            os.rmdir(self.path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise CgroupError("cannot remove %s group %s: %s" % (self.kind, self.path, exc)) from exc
        try:
            os.rmdir(self.parent)
        except OSError:
            pass  # other nodes' groups are still in it
        return True


class MemoryGroup(_Group):
    """The memory control group of one server process, named after the node."""

    kind = "memory"

    v1_dir = "memory"
    missing = (
        "memory_limit: this machine offers no memory cgroup controller under %s (cgroup v1 'memory' or v2 with "
        "memory in cgroup.controllers); unset memory_limit to run the node without one"
    )

    @staticmethod
    def probe(root):
        return version(root)

    # -- files -------------------------------------------------------------------------------------------------
    def _file(self, key):
        names = {
            1: {"limit": "memory.limit_in_bytes", "usage": "memory.usage_in_bytes", "swap": None},
            2: {"limit": "memory.max", "usage": "memory.current", "swap": "memory.swap.max"},
        }
        name = names[self.version][key]
        return os.path.join(self.path, name) if name else None

    def ensure(self, limit):
        """Make the group (and its parent) when missing and set its limit in bytes. Returns True when something
        changed. Lowering a limit below what the group uses makes the kernel reclaim its page cache first."""
        changed = self._make("memory")
        if self.limit() != limit:
            self._write(self._file("limit"), limit)
            changed = True
        swap = self._file("swap")
        if swap and os.path.exists(swap):
            self._write(swap, 0)  # v2: no swap, so a node over its limit reclaims cache as a machine would
        return changed

    def limit(self):
        """The limit in bytes (None when the group does not exist or has none)."""
        text = _read(self._file("limit"))
        if text is None or text == "max":
            return None
        value = int(text)
        return None if value >= (1 << 62) else value

    def stats(self):
        """What the group holds: limit, usage, page cache and anonymous memory (bytes), and failcnt (v1: times
        the limit was hit)."""
        if not self.exists():
            return {"group": self.path, "exists": False}
        stat = {}
        for line in (_read(os.path.join(self.path, "memory.stat")) or "").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit():
                stat[parts[0]] = int(parts[1])
        usage = _read(self._file("usage"))
        out = {
            "group": self.path,
            "exists": True,
            "version": self.version,
            "limit": self.limit(),
            "usage": int(usage) if usage and usage.isdigit() else None,
            "cache": stat.get("total_cache", stat.get("cache")) if self.version == 1 else stat.get("file"),
            "anon": stat.get("total_rss", stat.get("rss")) if self.version == 1 else stat.get("anon"),
        }
        if self.version == 1:
            failcnt = _read(os.path.join(self.path, "memory.failcnt"))
            out["failcnt"] = int(failcnt) if failcnt and failcnt.isdigit() else None
        return out


def parse_rate(spec, field="disk_read_limit"):
    """Bytes per second of a rate such as 100M, 1.5G or 104857600 (per second implied); None for None, "" or 0.
    Raises CgroupError naming field on anything else."""
    if spec is None or str(spec).strip() in ("", "0"):
        return None
    match = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*?)(?:/S)?\s*$", str(spec).upper())
    unit = match.group(2) if match else None
    if not match or unit not in _UNITS:
        raise CgroupError(
            "%s: %r is not a rate (allowed: bytes per second, or with a unit K, M, G, as 100M or 1.5G)" % (field, spec)
        )
    rate = int(float(match.group(1)) * _UNITS[unit])
    if rate < (1 << 20):
        raise CgroupError("%s: %r is below 1M per second, too little for a server's disk" % (field, spec))
    return rate


def parse_iops(spec, field="disk_read_iops"):
    """Operations per second as an int; None for None, "" or 0. Raises CgroupError naming field otherwise."""
    if spec is None or str(spec).strip() in ("", "0"):
        return None
    text = str(spec).strip()
    if not text.isdigit() or int(text) < 10:
        raise CgroupError(
            "%s: %r is not allowed (a whole number of read operations per second, 10 or more)" % (field, spec)
        )
    return int(text)


def disk_of(path):
    """ "MAJOR:MINOR" of the whole disk that holds path (a partition's disk; throttles apply to disks)."""
    dev = os.stat(path).st_dev
    base = os.path.realpath("/sys/dev/block/%d:%d" % (os.major(dev), os.minor(dev)))
    if os.path.exists(os.path.join(base, "partition")):
        base = os.path.dirname(base)
    found = _read(os.path.join(base, "dev"))
    if not found or ":" not in found:
        raise CgroupError(
            "disk_read_limit: no block device holds %s (%d:%d); unset the disk limits"
            % (path, os.major(dev), os.minor(dev))
        )
    return found


def io_version(root=ROOT):
    """1 or 2: the cgroup version whose I/O controller (v1 blkio with throttling, v2 io) this machine offers."""
    return _controller_version(root, os.path.join("blkio", "blkio.throttle.read_bps_device"), "io")


class IoGroup(_Group):
    """The I/O control group of one server process, named after the node: caps on the bytes and the operations it
    reads per second from one disk (v1 blkio.throttle.*, v2 io.max). Reads only: v1 does not charge buffered writes
    to the writer, and a cloud volume's caps that matter to a node whose data is larger than its page cache are
    its reads'. In v2 it is the node's one group, the same as its MemoryGroup."""

    kind = "I/O"

    v1_dir = "blkio"
    missing = (
        "disk_read_limit: this machine offers no I/O cgroup controller under %s (cgroup v1 'blkio' with throttling, "
        "or v2 with io in cgroup.controllers); unset the disk limits to run the node without one"
    )

    @staticmethod
    def probe(root):
        return io_version(root)

    def _fields(self, name, device):
        """The fields after the device on each line of the group's file name that starts with device."""
        lines = (_read(os.path.join(self.path, name)) or "").splitlines()
        return [line.split()[1:] for line in lines if line.split()[:1] == [device]]

    def limits(self, device):
        """{"read_bps", "read_iops"} the group holds for device (None: no limit, or no group)."""
        out = {"read_bps": None, "read_iops": None}
        if not self.exists():
            return out
        if self.version == 1:
            for key, name in (
                ("read_bps", "blkio.throttle.read_bps_device"),
                ("read_iops", "blkio.throttle.read_iops_device"),
            ):
                for fields in self._fields(name, device):
                    if len(fields) == 1 and fields[0].isdigit() and int(fields[0]):
                        out[key] = int(fields[0])
            return out
        for fields in self._fields("io.max", device):
            for item in fields:
                key, _sep, value = item.partition("=")
                if key in ("rbps", "riops") and value.isdigit():
                    out["read_bps" if key == "rbps" else "read_iops"] = int(value)
        return out

    def ensure(self, device, read_bps=None, read_iops=None):
        """Make the group (and its parent) when missing and hold these read limits on device (None: no limit).
        Returns True when something changed."""
        changed = self._make("io")
        if self.limits(device) == {"read_bps": read_bps, "read_iops": read_iops}:
            return changed
        if self.version == 1:
            self._write(os.path.join(self.path, "blkio.throttle.read_bps_device"), "%s %d" % (device, read_bps or 0))
            self._write(os.path.join(self.path, "blkio.throttle.read_iops_device"), "%s %d" % (device, read_iops or 0))
        else:
            self._write(
                os.path.join(self.path, "io.max"),
                "%s rbps=%s riops=%s" % (device, read_bps or "max", read_iops or "max"),
            )
        return True

    def _limited(self):
        """[(file, device)] of every read limit the group holds, on any disk."""
        found = []
        if not self.exists():
            return found
        for name in ("blkio.throttle.read_bps_device", "blkio.throttle.read_iops_device", "io.max"):
            for line in (_read(os.path.join(self.path, name)) or "").splitlines():
                parts = line.split()
                limited = [p for p in parts[1:] if p not in ("0", "rbps=max", "riops=max", "wbps=max", "wiops=max")]
                if ":" in (parts or [""])[0] and limited:
                    found.append((name, parts[0]))
        return found

    def limited(self):
        """True when the group holds a read limit on some disk."""
        return bool(self._limited())

    def clear(self):
        """Lift every read limit the group holds (on any disk). Returns True when one was lifted."""
        found = self._limited()
        for name, device in found:
            self._write(os.path.join(self.path, name), device + (" 0" if self.version == 1 else " rbps=max riops=max"))
        return bool(found)

    def stats(self, device):
        """The limits and what the group's processes read from device so far (bytes and operations; v1 counts
        the throttled reads)."""
        out = dict(self.limits(device), group=self.path, device=device, exists=self.exists(), version=self.version)
        if not out["exists"]:
            return out
        if self.version == 1:
            for key, name in (
                ("read_bytes", "blkio.throttle.io_service_bytes"),
                ("read_ops", "blkio.throttle.io_serviced"),
            ):
                for fields in self._fields(name, device):
                    if len(fields) == 2 and fields[0] == "Read":
                        out[key] = int(fields[1])
        else:
            for fields in self._fields("io.stat", device):
                values = dict(item.partition("=")[::2] for item in fields)
                out["read_bytes"] = int(values.get("rbytes", 0))
                out["read_ops"] = int(values.get("rios", 0))
        return out


def _read(path):
    if not path:
        return None
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None
