# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Machine resource readings on Linux: CPU split from /proc/stat, memory from /proc/meminfo, disk from statvfs.

Standard library only: this file is shipped to managed nodes. Unreadable input raises ``ReadingError`` (a
ValueError) naming the field.
"""

from __future__ import annotations

import os

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TelemetryError
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.samples import RESOURCES, check_number

CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


class ReadingError(TelemetryError, ValueError):
    """A /proc file or a CPU reading that cannot be parsed; the message names the field."""


def parse_cpu_line(line):
    """One 'cpu' line of /proc/stat -> {user, nice, system, idle, iowait, irq, softirq, steal} in ticks.
    Fields a kernel does not report count as 0; guest time is already inside user and nice."""
    parts = line.split()
    if not parts or not parts[0].startswith("cpu"):
        raise ReadingError("cpu: %r is not a cpu line of /proc/stat" % (line,))
    try:
        numbers = [int(part) for part in parts[1 : 1 + len(CPU_FIELDS)]]
    except ValueError:
        raise ReadingError("cpu: %r has a field that is not a number" % (line,)) from None
    numbers += [0] * (len(CPU_FIELDS) - len(numbers))
    return dict(zip(CPU_FIELDS, numbers, strict=True))


def parse_proc_stat(text):
    """The cpu lines of /proc/stat: {'cpu': {...}, 'cpu0': {...}, ...}."""
    return {line.split()[0]: parse_cpu_line(line) for line in text.splitlines() if line.startswith("cpu")}


def read_proc_stat(path="/proc/stat"):
    """parse_proc_stat of the file at path."""
    with open(path) as handle:
        return parse_proc_stat(handle.read())


def cpu_split(prev, cur):
    """CPU use between two snapshots of the same cpu line (dicts from parse_cpu_line, or the lines themselves).

    Percentages of all time elapsed: cpu_user_pct = user + nice, cpu_system_pct = system + irq + softirq,
    cpu_iowait_pct = iowait, plus cpu_idle_pct and cpu_steal_pct; cpu_pct = user + system + iowait, the
    server usage of the resource model. All None when no tick elapsed. A field that went down (iowait can on
    some kernels) counts as 0."""
    if isinstance(prev, str):
        prev = parse_cpu_line(prev)
    if isinstance(cur, str):
        cur = parse_cpu_line(cur)
    delta = {}
    for field in CPU_FIELDS:
        before, after = prev.get(field, 0), cur.get(field, 0)
        check_number("cpu.%s" % field, before, minimum=0, error=ReadingError)
        check_number("cpu.%s" % field, after, minimum=0, error=ReadingError)
        delta[field] = max(after - before, 0)
    user = delta["user"] + delta["nice"]
    system = delta["system"] + delta["irq"] + delta["softirq"]
    iowait = delta["iowait"]
    total = sum(delta.values())
    keys = ("cpu_pct", "cpu_user_pct", "cpu_system_pct", "cpu_iowait_pct", "cpu_idle_pct", "cpu_steal_pct")
    if total <= 0:
        return dict.fromkeys(keys)
    parts = (user + system + iowait, user, system, iowait, delta["idle"], delta["steal"])
    return {key: 100.0 * part / total for key, part in zip(keys, parts, strict=True)}


def parse_meminfo(text):
    """/proc/meminfo -> {name: bytes} (kB values times 1024; unitless values as they are)."""
    info = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        name, rest = line.split(":", 1)
        fields = rest.split()
        if not fields or not fields[0].isdigit():
            continue
        value = int(fields[0])
        if len(fields) > 1 and fields[1].lower() == "kb":
            value *= 1024
        info[name.strip()] = value
    return info


def read_meminfo(path="/proc/meminfo"):
    """parse_meminfo of the file at path."""
    with open(path) as handle:
        return parse_meminfo(handle.read())


def memory_usage(meminfo):
    """{mem_bytes, mem_pct, mem_total_bytes} from parse_meminfo output: used = MemTotal - MemAvailable
    (MemFree + Buffers + Cached on kernels without MemAvailable)."""
    if "MemTotal" not in meminfo:
        raise ReadingError("meminfo.MemTotal: missing; is this /proc/meminfo?")
    total = meminfo["MemTotal"]
    available = meminfo.get("MemAvailable")
    if available is None:
        available = meminfo.get("MemFree", 0) + meminfo.get("Buffers", 0) + meminfo.get("Cached", 0)
    used = max(total - available, 0)
    return {"mem_bytes": used, "mem_pct": 100.0 * used / total if total else None, "mem_total_bytes": total}


def disk_usage(path):
    """{disk_bytes, disk_pct, disk_total_bytes} of the file system holding path, as df counts them: used =
    blocks - free, percent of what non-root users can fill (used + available)."""
    stat = os.statvfs(path)
    used = (stat.f_blocks - stat.f_bfree) * stat.f_frsize
    usable = used + stat.f_bavail * stat.f_frsize
    return {
        "disk_bytes": used,
        "disk_pct": 100.0 * used / usable if usable else None,
        "disk_total_bytes": stat.f_blocks * stat.f_frsize,
    }


def sample_resources(cpu=None, memory=None, disk=None):
    """The resources part of a sample from cpu_split, memory_usage and disk_usage results (any may be None)."""
    resources = dict.fromkeys(RESOURCES)
    for part in (cpu, memory, disk):
        for key, value in (part or {}).items():
            if key in resources:
                resources[key] = value
    return resources
