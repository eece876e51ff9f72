# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Machine resource readings on Linux: CPU split from /proc/stat, memory from /proc/meminfo, disk from statvfs;
and the same taken on a node over a window (measure_node, module node_usage) for observe to put in its samples.

Standard library only: this file is shipped to managed nodes. Unreadable input raises ``ReadingError`` (a
ValueError) naming the field.
"""

from __future__ import annotations

import os
import time

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TelemetryError
from ansible_collections.tactician.nosql.plugins.module_utils.core.process import cpu_seconds, read_pid
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


# ------------------------------------------------------------------------------------------------ on the node
def node_snapshot(clock, pid=None):
    """One reading of this machine at clock(): {"t", "cpu" (the /proc/stat cpu line's ticks), "mem" (memory_usage),
    "process_cpu_s" (the process pid's CPU seconds, or None)}."""
    return {
        "t": float(clock()),
        "cpu": read_proc_stat()["cpu"],
        "mem": memory_usage(read_meminfo()),
        "process_cpu_s": cpu_seconds(pid) if pid else None,
    }


def measure_node(duration, interval=1.0, pid_file=None, data_dir=None, clock=None, sleep=None):
    """Readings of this machine every interval seconds for duration seconds (node_snapshot each, oldest first),
    taken where the module runs: on the node. Returns {"snapshots", "disk" (disk_usage of data_dir, or None),
    "cpus", "pid" (read from pid_file, or None)}; window_usage() turns them into a sample's resources over any
    window inside them."""
    clock = clock or time.time
    sleep = sleep or time.sleep
    check_number("duration", duration, minimum=0, error=ReadingError)
    check_number("interval", interval, minimum=0.1, error=ReadingError)
    if data_dir is not None and not os.path.isdir(data_dir):
        raise ReadingError("data_dir: %s is not a directory on this node" % data_dir)
    pid = read_pid(pid_file) if pid_file else None
    if pid_file and pid is None:
        raise ReadingError("pid_file: %s holds no process ID on this node" % pid_file)
    start = clock()
    snapshots = [node_snapshot(clock, pid)]
    while clock() - start < duration - 1e-6:
        sleep(max(0.0, min(interval, duration - (clock() - start))))
        snapshots.append(node_snapshot(clock, pid))
    return {
        "snapshots": snapshots,
        "disk": disk_usage(data_dir) if data_dir else None,
        "cpus": os.cpu_count(),
        "pid": pid,
    }


def window_usage(measured, start, end, min_cover=0.75, min_share=0.5):
    """A sample's resources over [start, end] from measure_node()'s readings, and the server process's CPU:
    (resources, process_cpu_pct or None, None) or (None, None, why) when the readings do not cover at least
    min_cover of the window (clocks apart, or a measurement that began late or ended early).

    The readings nearest the window's edges are used. When those leave too much of the window out (a node too busy
    to read on time: gaps of seconds between readings) but readings lie on both sides of the window, the node was
    measuring all through it: the readings inside are used if they span at least min_share of the window, else
    the span between the last reading before it and the first after it, if the window is at least min_share of
    that span (it covers the whole window, with a little of its edges)."""
    snapshots = sorted(measured.get("snapshots") or [], key=lambda s: s["t"])
    if end <= start:
        return None, None, "the window is empty (%r to %r)" % (start, end)
    inside = [s for s in snapshots if start - 1e-6 <= s["t"] <= end + 1e-6]
    before = [s for s in snapshots if s["t"] < start]
    after = [s for s in snapshots if s["t"] > end]
    # The readings nearest the window's edges: the last before it may stand for its start (and the first after
    # it for its end) when it lies within a reading interval of the edge.
    first = inside[0] if inside else None
    last = inside[-1] if inside else None
    if before and (first is None or start - before[-1]["t"] < first["t"] - start):
        first = before[-1]
    if after and (last is None or after[0]["t"] - end < end - last["t"]):
        last = after[0]
    if first is None or last is None or last["t"] <= first["t"]:
        return None, None, "no readings on the node between %.1f and %.1f" % (start, end)
    overlap = min(end, last["t"]) - max(start, first["t"])
    if overlap < min_cover * (end - start) and before and after:
        # The node read before and after the window, so it was measuring all through it: only its readings were
        # late. The readings inside stand for the window when they span at least min_share of it; else the span
        # around it does, when the window is at least min_share of that span.
        outer_first, outer_last = before[-1], after[0]
        if overlap >= min_share * (end - start):
            overlap = end - start
        elif (end - start) >= min_share * (outer_last["t"] - outer_first["t"]):
            first, last, overlap = outer_first, outer_last, end - start
    if overlap < min_cover * (end - start):
        return (
            None,
            None,
            "the node's readings (%.1f to %.1f) cover %.0f %% of the window (%.1f to %.1f); are the clocks in sync?"
            % (first["t"], last["t"], 100.0 * max(overlap, 0.0) / (end - start), start, end),
        )
    cpu = cpu_split(first["cpu"], last["cpu"])
    used = [s for s in snapshots if first["t"] <= s["t"] <= last["t"]]
    memory = dict(used[-1]["mem"])
    memory["mem_bytes"] = int(round(sum(s["mem"]["mem_bytes"] for s in used) / len(used)))
    total = memory.get("mem_total_bytes")
    memory["mem_pct"] = 100.0 * memory["mem_bytes"] / total if total else None
    process = None
    if first.get("process_cpu_s") is not None and last.get("process_cpu_s") is not None:
        process = 100.0 * max(last["process_cpu_s"] - first["process_cpu_s"], 0.0) / (last["t"] - first["t"])
    return sample_resources(cpu, memory, measured.get("disk")), process, None
