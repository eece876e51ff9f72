# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Telemetry: the workload sample contract, counters turned into rates, and machine resource readings.

Standard library only: this file is shipped to managed nodes.

The workload sample (schema ``tactician.workload_sample/v1``) is the data contract between observing a
store and everything after it (history, forecasts, models, plans). ``new_sample`` builds one,
``validate_sample`` checks one; both raise ``SampleError`` (a ValueError) whose message starts with the
field at fault.

Stores report monotonically increasing counters (operations served, cache hits, CPU ticks). A
``RateTracker`` holds successive snapshots of such counters and turns them into rates per second over
several windows (5 s, 30 s and 5 min by default). It survives a fresh process per call through
``to_dict``/``from_dict``.
"""

from __future__ import annotations

import json
import math
import os

SAMPLE_SCHEMA = "tactician.workload_sample/v1"
SAMPLE_SCHEMA_VERSION = 1

STORES = ("cassandra", "redis", "mongodb")
OPS = ("read", "update", "insert", "scan", "delete", "other")
READ_OPS = ("read", "scan")
WRITE_OPS = ("update", "insert", "delete")
PERCENTILES = ("p50", "p95", "p99", "p999")
RESOURCES = (
    "cpu_pct",
    "cpu_user_pct",
    "cpu_system_pct",
    "cpu_iowait_pct",
    "mem_bytes",
    "mem_pct",
    "disk_bytes",
    "disk_pct",
)
# Cache names the adapters report; hit_ratio accepts any name, these are the ones in use.
HIT_RATIOS = ("key_cache", "row_cache", "chunk_cache", "keyspace", "wiredtiger_cache")
AGGREGATE_NODE = "cluster"

REQUIRED_KEYS = (
    "schema",
    "store",
    "cluster",
    "node",
    "time",
    "window_s",
    "ops_per_s",
    "throughput",
    "read_ratio",
    "hit_ratio",
    "data_bytes",
    "latency_ms",
    "resources",
)
OPTIONAL_KEYS = ("config_id", "extra")

# T_d: the decision step of the control loop, and the window a sample normally covers.
DEFAULT_T_D = 30.0
DEFAULT_WINDOWS = (5.0, 30.0, 300.0)
DEFAULT_TOLERANCE = 0.2
DEFAULT_MAX_SNAPSHOTS = 4096
RATE_TRACKER_SCHEMA = "tactician.rate_tracker/v1"

CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")

_REL = 1e-9


class TelemetryError(ValueError):
    """Bad telemetry input. The message starts with the field at fault."""


class SampleError(TelemetryError):
    """A workload sample does not follow its schema."""


# ---------------------------------------------------------------------------------------------------------------
# The workload sample
# ---------------------------------------------------------------------------------------------------------------


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(field, value, minimum=None, maximum=None, allow_none=False, error=SampleError):
    if value is None and allow_none:
        return
    if not _is_number(value):
        raise error("%s: %r is not a number%s" % (field, value, " or null" if allow_none else ""))
    if not math.isfinite(value):
        raise error("%s: %r is not a finite number" % (field, value))
    if minimum is not None and value < minimum:
        raise error("%s: %r is below %s" % (field, value, minimum))
    if maximum is not None and value > maximum:
        raise error("%s: %r is above %s" % (field, value, maximum))


def _name(field, value, error=SampleError):
    if not isinstance(value, str) or not value:
        raise error("%s: %r is not a non-empty string" % (field, value))


def _keys(field, value, allowed, required=True):
    if not isinstance(value, dict):
        raise SampleError("%s: %r is not a mapping; keys: %s" % (field, value, ", ".join(allowed)))
    unknown = sorted(str(key) for key in value if key not in allowed)
    if unknown:
        raise SampleError("%s: unknown key %s; allowed: %s" % (field, ", ".join(unknown), ", ".join(allowed)))
    if required:
        missing = [key for key in allowed if key not in value]
        if missing:
            raise SampleError("%s.%s: missing; %s needs all of: %s" % (field, missing[0], field, ", ".join(allowed)))


def _close(a, b):
    return abs(a - b) <= _REL * max(1.0, abs(a), abs(b))


def valid_node(node):
    """True for ``address:port`` (IPv6 in brackets) or the aggregate node name ``cluster``."""
    if node == AGGREGATE_NODE:
        return True
    if not isinstance(node, str) or ":" not in node:
        return False
    host, port = node.rsplit(":", 1)
    return bool(host) and port.isdigit() and 0 < int(port) < 65536


def compute_throughput(ops_per_s):
    """Sum of every operation rate."""
    return float(sum(ops_per_s[op] for op in OPS))


def compute_read_ratio(ops_per_s):
    """reads / (reads + writes) with reads = read + scan and writes = update + insert + delete; None with no ops."""
    reads = sum(ops_per_s[op] for op in READ_OPS)
    writes = sum(ops_per_s[op] for op in WRITE_OPS)
    if reads + writes <= 0:
        return None
    return float(reads) / float(reads + writes)


def validate_sample(sample):
    """Check a workload sample against schema v1; returns it unchanged or raises SampleError naming the field."""
    if not isinstance(sample, dict):
        raise SampleError("sample: %r is not a mapping" % (sample,))
    allowed = REQUIRED_KEYS + OPTIONAL_KEYS
    unknown = sorted(str(key) for key in sample if key not in allowed)
    if unknown:
        raise SampleError("%s: unknown key; allowed: %s" % (unknown[0], ", ".join(allowed)))
    for key in REQUIRED_KEYS:
        if key not in sample:
            raise SampleError("%s: missing; a sample needs all of: %s" % (key, ", ".join(REQUIRED_KEYS)))
    if sample["schema"] != SAMPLE_SCHEMA:
        raise SampleError("schema: %r is not supported; allowed: %s" % (sample["schema"], SAMPLE_SCHEMA))
    if sample["store"] not in STORES:
        raise SampleError("store: %r is not known; allowed: %s" % (sample["store"], ", ".join(STORES)))
    _name("cluster", sample["cluster"])
    if not valid_node(sample["node"]):
        raise SampleError("node: %r is not address:port or %r" % (sample["node"], AGGREGATE_NODE))
    _number("time", sample["time"], minimum=0)
    _number("window_s", sample["window_s"], minimum=0)
    if sample["window_s"] <= 0:
        raise SampleError("window_s: %r must be above 0" % (sample["window_s"],))

    ops = sample["ops_per_s"]
    _keys("ops_per_s", ops, OPS)
    for op in OPS:
        _number("ops_per_s.%s" % op, ops[op], minimum=0)
    _number("throughput", sample["throughput"], minimum=0)
    expected = compute_throughput(ops)
    if not _close(sample["throughput"], expected):
        raise SampleError("throughput: %r is not the sum of ops_per_s (%r)" % (sample["throughput"], expected))
    ratio = compute_read_ratio(ops)
    if ratio is None:
        if sample["read_ratio"] is not None:
            raise SampleError("read_ratio: %r must be null when there are no reads or writes" % (sample["read_ratio"],))
    else:
        _number("read_ratio", sample["read_ratio"], minimum=0, maximum=1)
        if not _close(sample["read_ratio"], ratio):
            raise SampleError(
                "read_ratio: %r is not (read + scan) / (read + scan + update + insert + delete) = %r"
                % (sample["read_ratio"], ratio)
            )

    hits = sample["hit_ratio"]
    if not isinstance(hits, dict):
        raise SampleError(
            "hit_ratio: %r is not a mapping of cache name to ratio, e.g. %s" % (hits, ", ".join(HIT_RATIOS))
        )
    for name, value in hits.items():
        _name("hit_ratio key", name)
        _number("hit_ratio.%s" % name, value, minimum=0, maximum=1, allow_none=True)

    if sample["data_bytes"] is not None and (
        not isinstance(sample["data_bytes"], int) or isinstance(sample["data_bytes"], bool)
    ):
        raise SampleError("data_bytes: %r is not an integer or null" % (sample["data_bytes"],))
    _number("data_bytes", sample["data_bytes"], minimum=0, allow_none=True)

    latency = sample["latency_ms"]
    _keys("latency_ms", latency, OPS, required=False)
    for op, points in latency.items():
        _keys("latency_ms.%s" % op, points, PERCENTILES)
        for point in PERCENTILES:
            _number("latency_ms.%s.%s" % (op, point), points[point], minimum=0, allow_none=True)

    resources = sample["resources"]
    _keys("resources", resources, RESOURCES)
    for name in RESOURCES:
        _number(
            "resources.%s" % name,
            resources[name],
            minimum=0,
            maximum=100 if name.endswith("_pct") else None,
            allow_none=True,
        )

    if "config_id" in sample:
        _name("config_id", sample["config_id"])
    if "extra" in sample:
        if not isinstance(sample["extra"], dict):
            raise SampleError("extra: %r is not a mapping" % (sample["extra"],))
        try:
            json.dumps(sample["extra"], allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise SampleError("extra: not JSON-serialisable (%s)" % exc) from None
    return sample


def new_sample(
    store,
    cluster,
    node,
    time,
    window_s,
    ops_per_s,
    hit_ratio=None,
    data_bytes=None,
    latency_ms=None,
    resources=None,
    config_id=None,
    extra=None,
):
    """A validated schema v1 sample. Operations left out of ops_per_s count as 0; throughput and read_ratio
    are computed; resources and latency percentiles left out are null."""
    ops = dict.fromkeys(OPS, 0.0)
    if not isinstance(ops_per_s, dict):
        raise SampleError("ops_per_s: %r is not a mapping; keys: %s" % (ops_per_s, ", ".join(OPS)))
    for op, value in ops_per_s.items():
        if op not in OPS:
            raise SampleError("ops_per_s: unknown key %s; allowed: %s" % (op, ", ".join(OPS)))
        _number("ops_per_s.%s" % op, value, minimum=0)
        ops[op] = float(value)
    latency = {}
    for op, points in (latency_ms or {}).items():
        if not isinstance(points, dict):
            raise SampleError("latency_ms.%s: %r is not a mapping; keys: %s" % (op, points, ", ".join(PERCENTILES)))
        latency[op] = dict.fromkeys(PERCENTILES)
        latency[op].update(points)
    res = dict.fromkeys(RESOURCES)
    res.update(resources or {})
    sample = {
        "schema": SAMPLE_SCHEMA,
        "store": store,
        "cluster": cluster,
        "node": node,
        "time": float(time) if _is_number(time) else time,
        "window_s": float(window_s) if _is_number(window_s) else window_s,
        "ops_per_s": ops,
        "throughput": compute_throughput(ops),
        "read_ratio": compute_read_ratio(ops),
        "hit_ratio": dict(hit_ratio or {}),
        "data_bytes": data_bytes,
        "latency_ms": latency,
        "resources": res,
    }
    if config_id is not None:
        sample["config_id"] = config_id
    if extra is not None:
        sample["extra"] = extra
    return validate_sample(sample)


# ---------------------------------------------------------------------------------------------------------------
# Counters to rates
# ---------------------------------------------------------------------------------------------------------------


def window_label(seconds):
    """5 -> '5s', 30 -> '30s', 300 -> '5m', 3600 -> '1h'."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return "%dh" % (seconds // 3600)
    if seconds >= 60 and seconds % 60 == 0:
        return "%dm" % (seconds // 60)
    return "%gs" % seconds


class RateTracker:
    """Successive snapshots of monotonically increasing counters, turned into rates per second over windows.

    ``add(time, counters)`` records a snapshot. The rate over a window W is taken at the newest snapshot
    (time t): the start is the held snapshot nearest to t - W, at most ``tolerance`` * W away from it; the
    rate is the increase between the two divided by their actual distance in time (``span_s``).

    - A counter that goes down was reset (the server restarted): its new value is the increase since the
      restart. Increases lost between the last snapshot before a restart and the restart itself cannot be
      seen; the window lists the counters that reset in ``resets``.
    - When no snapshot lies near t - W the rate is None with a reason: ``too short`` when the history held
      does not reach back that far, ``gap`` when snapshots are missing around t - W.
    - Snapshots older than the longest window (plus tolerance) are dropped, and at most ``max_snapshots``
      are kept, so the serialised form stays small.
    """

    def __init__(self, windows=DEFAULT_WINDOWS, tolerance=DEFAULT_TOLERANCE, max_snapshots=DEFAULT_MAX_SNAPSHOTS):
        windows = list(windows)
        if not windows:
            raise TelemetryError("windows: give at least one window length in seconds, e.g. 5, 30, 300")
        for index, window in enumerate(windows):
            _number("windows[%d]" % index, window, error=TelemetryError)
            if window <= 0:
                raise TelemetryError("windows[%d]: %r must be above 0 seconds" % (index, window))
        labels = [window_label(window) for window in windows]
        if len(set(labels)) != len(labels):
            raise TelemetryError("windows: %r has the same window twice" % (windows,))
        _number("tolerance", tolerance, minimum=0, error=TelemetryError)
        if tolerance >= 1:
            raise TelemetryError("tolerance: %r must be below 1 (a fraction of the window)" % (tolerance,))
        if not isinstance(max_snapshots, int) or isinstance(max_snapshots, bool) or max_snapshots < 2:
            raise TelemetryError("max_snapshots: %r is not an integer of at least 2" % (max_snapshots,))
        self.windows = sorted(float(window) for window in windows)
        self.tolerance = float(tolerance)
        self.max_snapshots = max_snapshots
        self._snapshots = []

    # -- recording -------------------------------------------------------------------------------------------

    def add(self, time, counters):
        """Record the counters read at time (unix seconds). Times must increase."""
        _number("time", time, error=TelemetryError)
        if self._snapshots and time <= self._snapshots[-1][0]:
            raise TelemetryError(
                "time: %r is not after the last snapshot (%r); snapshots must come in time order"
                % (time, self._snapshots[-1][0])
            )
        if not isinstance(counters, dict):
            raise TelemetryError("counters: %r is not a mapping of counter name to value" % (counters,))
        values = {}
        for name, value in counters.items():
            _name("counters key", name, error=TelemetryError)
            _number("counters.%s" % name, value, minimum=0, error=TelemetryError)
            values[name] = value
        self._snapshots.append((time, values))
        self._prune()

    def _prune(self):
        horizon = self._snapshots[-1][0] - self.windows[-1] * (1 + self.tolerance)
        keep = [snap for snap in self._snapshots if snap[0] >= horizon]
        self._snapshots = keep[-self.max_snapshots :]

    @property
    def snapshots(self):
        """The snapshots held, oldest first, as (time, {name: value})."""
        return [(time, dict(values)) for time, values in self._snapshots]

    @property
    def latest(self):
        """Time of the newest snapshot, or None."""
        return self._snapshots[-1][0] if self._snapshots else None

    # -- rates -----------------------------------------------------------------------------------------------

    def _window(self, window):
        if isinstance(window, str):
            for known in self.windows:
                if window_label(known) == window:
                    return known
        elif _is_number(window) and float(window) in self.windows:
            return float(window)
        raise TelemetryError(
            "window: %r is not tracked; allowed: %s" % (window, ", ".join(window_label(w) for w in self.windows))
        )

    def rate(self, window):
        """Rates over one window (seconds or label such as '30s'): a dict with window_s, start, end, span_s,
        points (snapshots inside), rates {name: per second or None}, reason (None when computed), resets and
        missing (counters absent at the start)."""
        window = self._window(window)
        result = {
            "window_s": window,
            "start": None,
            "end": None,
            "span_s": None,
            "points": 0,
            "rates": {},
            "reason": None,
            "resets": [],
            "missing": [],
        }
        snaps = self._snapshots
        if not snaps:
            result["reason"] = "too short: no snapshot yet"
            return result
        end_time, end_values = snaps[-1]
        result["end"] = end_time
        result["rates"] = dict.fromkeys(sorted(end_values))
        if len(snaps) < 2:
            result["reason"] = "too short: 1 snapshot, a rate needs two about %gs apart" % window
            return result
        target = end_time - window
        slack = window * self.tolerance
        best = None
        for index in range(len(snaps) - 1):
            distance = abs(snaps[index][0] - target)
            if distance <= slack and (best is None or distance < abs(snaps[best][0] - target)):
                best = index
        if best is None:
            covered = end_time - snaps[0][0]
            if snaps[0][0] > target + slack:
                result["reason"] = "too short: the snapshots held cover %gs of the %gs window" % (covered, window)
            else:
                before = max(t for t, _v in snaps if t < target)
                after = min(t for t, _v in snaps if t > target)
                result["reason"] = "gap: no snapshot within %gs of t-%gs; nearest at t-%gs and t-%gs" % (
                    slack,
                    window,
                    end_time - before,
                    end_time - after,
                )
            return result
        start_time, start_values = snaps[best]
        span = end_time - start_time
        inside = snaps[best:]
        result.update(start=start_time, span_s=span, points=len(inside))
        for name in result["rates"]:
            if name not in start_values:
                result["missing"].append(name)
                continue
            increase, reset = _increase(name, inside)
            if reset:
                result["resets"].append(name)
            result["rates"][name] = increase / span
        return result

    def rates(self):
        """Rates over every window, keyed by window label ('5s', '30s', '5m')."""
        return {window_label(window): self.rate(window) for window in self.windows}

    # -- persistence -----------------------------------------------------------------------------------------

    def to_dict(self):
        """A JSON-serialisable form (schema tactician.rate_tracker/v1)."""
        return {
            "schema": RATE_TRACKER_SCHEMA,
            "windows": list(self.windows),
            "tolerance": self.tolerance,
            "max_snapshots": self.max_snapshots,
            "snapshots": [[time, dict(values)] for time, values in self._snapshots],
        }

    @classmethod
    def from_dict(cls, data):
        """Rebuild a tracker from to_dict() output; raises TelemetryError naming the bad field."""
        if not isinstance(data, dict):
            raise TelemetryError("tracker: %r is not a mapping" % (data,))
        if data.get("schema") != RATE_TRACKER_SCHEMA:
            raise TelemetryError("schema: %r is not supported; allowed: %s" % (data.get("schema"), RATE_TRACKER_SCHEMA))
        tracker = cls(
            windows=data.get("windows", DEFAULT_WINDOWS),
            tolerance=data.get("tolerance", DEFAULT_TOLERANCE),
            max_snapshots=data.get("max_snapshots", DEFAULT_MAX_SNAPSHOTS),
        )
        snapshots = data.get("snapshots", [])
        if not isinstance(snapshots, list):
            raise TelemetryError("snapshots: %r is not a list of [time, counters]" % (snapshots,))
        for index, snap in enumerate(snapshots):
            if not isinstance(snap, (list, tuple)) or len(snap) != 2:
                raise TelemetryError("snapshots[%d]: %r is not [time, counters]" % (index, snap))
            tracker.add(snap[0], snap[1])
        return tracker


def _increase(name, snapshots):
    """Increase of one counter over the snapshots (oldest first), and whether it reset on the way.

    Between resets the increase is last - first of the segment (exact for exact inputs); after a reset the
    segment starts from 0, since the value read is the increase since the restart."""
    base = prev = snapshots[0][1][name]
    increase = 0
    reset = False
    for _time, values in snapshots[1:]:
        value = values.get(name)
        if value is None:
            continue
        if value < prev:
            increase += prev - base
            base = 0
            reset = True
        prev = value
    return increase + (prev - base), reset


# ---------------------------------------------------------------------------------------------------------------
# Machine resources (Linux)
# ---------------------------------------------------------------------------------------------------------------


def parse_cpu_line(line):
    """One 'cpu' line of /proc/stat -> {user, nice, system, idle, iowait, irq, softirq, steal} in ticks.
    Fields a kernel does not report count as 0; guest time is already inside user and nice."""
    parts = line.split()
    if not parts or not parts[0].startswith("cpu"):
        raise TelemetryError("cpu: %r is not a cpu line of /proc/stat" % (line,))
    try:
        numbers = [int(part) for part in parts[1 : 1 + len(CPU_FIELDS)]]
    except ValueError:
        raise TelemetryError("cpu: %r has a field that is not a number" % (line,)) from None
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
        _number("cpu.%s" % field, before, minimum=0, error=TelemetryError)
        _number("cpu.%s" % field, after, minimum=0, error=TelemetryError)
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
        raise TelemetryError("meminfo.MemTotal: missing; is this /proc/meminfo?")
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
