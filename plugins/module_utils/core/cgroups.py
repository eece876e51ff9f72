# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Memory control groups of server processes: one group per node, whose limit caps the node's memory and the page
cache its file reads use, as the memory of a real machine does.

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


def version(root=ROOT):
    """1 or 2: the cgroup version whose memory controller this machine offers; None when it offers none."""
    if os.path.isfile(os.path.join(root, "memory", "memory.limit_in_bytes")):
        return 1
    try:
        with open(os.path.join(root, "cgroup.controllers")) as handle:
            if "memory" in handle.read().split():
                return 2
    except OSError:
        pass
    return None


class MemoryGroup:
    """The memory control group of one server process, named after the node."""

    def __init__(self, name, root=ROOT):
        if not _NAME.match(str(name)):
            raise CgroupError("memory group name %r: use letters, digits, '.', '_' or '-' (up to 64)" % (name,))
        self.name = name
        self.version = version(root)
        if self.version is None:
            raise CgroupError(
                "memory_limit: this machine offers no memory cgroup controller under %s (cgroup v1 'memory' or "
                "v2 with memory in cgroup.controllers); unset memory_limit to run the node without one" % root
            )
        base = os.path.join(root, "memory") if self.version == 1 else root
        self.parent = os.path.join(base, PARENT)
        self.path = os.path.join(self.parent, name)

    # -- files -------------------------------------------------------------------------------------------------
    def _file(self, key):
        names = {
            1: {"limit": "memory.limit_in_bytes", "usage": "memory.usage_in_bytes", "swap": None},
            2: {"limit": "memory.max", "usage": "memory.current", "swap": "memory.swap.max"},
        }
        name = names[self.version][key]
        return os.path.join(self.path, name) if name else None

    def _write(self, path, value):
        try:
            with open(path, "w") as handle:
                handle.write(str(value))
        except OSError as exc:
            raise CgroupError("cannot write %s to %s: %s" % (value, path, exc)) from exc

    def exists(self):
        return os.path.isdir(self.path)

    def ensure(self, limit):
        """Make the group (and its parent) when missing and set its limit in bytes. Returns True when something
        changed. Lowering a limit below what the group uses makes the kernel reclaim its page cache first."""
        changed = False
        for path in (self.parent, self.path):
            if not os.path.isdir(path):
                try:
                    os.mkdir(path)
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise CgroupError("cannot make memory group %s: %s (needs root)" % (path, exc)) from exc
                changed = True
                if self.version == 2 and path == self.parent:
                    self._write(os.path.join(path, "cgroup.subtree_control"), "+memory")
        if self.limit() != limit:
            self._write(self._file("limit"), limit)
            changed = True
        swap = self._file("swap")
        if swap and os.path.exists(swap):
            self._write(swap, 0)  # v2: no swap, so a node over its limit reclaims cache as a machine would
        return changed

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

    def remove(self, timeout=10.0):
        """Remove the group once no process is left in it (and the parent when it is empty). Returns True when a
        group was removed; raises CgroupError when a process still runs in it after timeout."""
        if not self.exists():
            return False
        deadline = time.monotonic() + timeout
        while self.pids():
            if time.monotonic() > deadline:
                raise CgroupError(
                    "memory group %s still holds processes %s; stop them first"
                    % (self.path, ", ".join(str(p) for p in sorted(self.pids())))
                )
            time.sleep(0.2)
        try:
            os.rmdir(self.path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise CgroupError("cannot remove memory group %s: %s" % (self.path, exc)) from exc
        try:
            os.rmdir(self.parent)
        except OSError:
            pass  # other nodes' groups are still in it
        return True


def _read(path):
    if not path:
        return None
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None
