# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The workload sample (schema ``tactician.workload_sample/v1``): the data contract between observing a store and
everything after it (history, forecasts, models, plans).

Standard library only: this file is shipped to managed nodes. ``new_sample`` builds one, ``validate_sample``
checks one; both raise ``SampleError`` (a ValueError) whose message starts with the field at fault.
"""

from __future__ import annotations

import json
import math

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TelemetryError

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


OPTIONAL_KEYS = ("config_id", "extra", "state")


class StateField:
    """One field of a sample's ``state``: its kind, how observe reduces a node's readings over the window, and
    how the cluster's sample combines the nodes.

    kind: ``count`` (a whole number >= 0) or ``number`` (a number >= 0; fills are size / capacity and may pass 1
    when a store runs over its limit). window: ``peak`` (the highest reading of the window: a backlog that builds
    and drains between two readings still shows), ``last`` (the reading at the end of the window) or ``rate``
    (per second over the window, from a counter). cluster: ``sum`` (None unless every node reports it: a partial
    total would be a wrong total), ``max`` or ``mean`` (over the nodes that report it)."""

    __slots__ = ("kind", "window", "cluster")

    def __init__(self, kind, window, cluster):
        self.kind = kind
        self.window = window
        self.cluster = cluster

    def __repr__(self):
        return "StateField(%r, %r, %r)" % (self.kind, self.window, self.cluster)


STATE_FIELDS = {
    "cassandra": {
        "pending_compactions": StateField("count", "peak", "sum"),
        "pending_compaction_bytes": StateField("count", "peak", "sum"),
        "pending_compactions_estimated": StateField("count", "last", "sum"),
        "pending_flushes": StateField("count", "peak", "sum"),
        "live_sstables": StateField("count", "last", "sum"),
        "sstables_per_read": StateField("number", "last", "max"),
        "sstables_per_read_max": StateField("number", "last", "max"),
        "key_cache_fill": StateField("number", "last", "mean"),
        "row_cache_fill": StateField("number", "last", "mean"),
        "chunk_cache_fill": StateField("number", "last", "mean"),
    },
    "redis": {
        "rdb_bgsave_in_progress": StateField("count", "peak", "sum"),
        "aof_rewrite_in_progress": StateField("count", "peak", "sum"),
        "rdb_changes_since_last_save": StateField("count", "peak", "sum"),
        "evictions_per_s": StateField("number", "rate", "sum"),
        "mem_fragmentation_ratio": StateField("number", "last", "max"),
        "memory_fill": StateField("number", "last", "mean"),
    },
    "mongodb": {
        "wiredtiger_cache_fill": StateField("number", "last", "mean"),
        "wiredtiger_dirty_fill": StateField("number", "last", "mean"),
    },
}
"""The fields of the optional ``state`` mapping, per store: what a configuration leaves behind (backlogs, SSTables
per read, cache fill). A value the store did not give is None, never a guess. Where each comes from:
docs/observe.md. Cluster aggregation, per field: sum for backlogs, pending work and evictions; max for SSTables
per read and Redis fragmentation; mean for the fill of caches and memory."""


# T_d: the decision step of the control loop, and the window a sample normally covers.
DEFAULT_T_D = 30.0


_REL = 1e-9


class SampleError(TelemetryError, ValueError):
    """A workload sample does not follow its schema."""


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_number(field, value, minimum=None, maximum=None, allow_none=False, error=SampleError):
    if value is None and allow_none:
        return
    if not is_number(value):
        raise error("%s: %r is not a number%s" % (field, value, " or null" if allow_none else ""))
    if not math.isfinite(value):
        raise error("%s: %r is not a finite number" % (field, value))
    if minimum is not None and value < minimum:
        raise error("%s: %r is below %s" % (field, value, minimum))
    if maximum is not None and value > maximum:
        raise error("%s: %r is above %s" % (field, value, maximum))


def check_name(field, value, error=SampleError):
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
    check_name("cluster", sample["cluster"])
    if not valid_node(sample["node"]):
        raise SampleError("node: %r is not address:port or %r" % (sample["node"], AGGREGATE_NODE))
    check_number("time", sample["time"], minimum=0)
    check_number("window_s", sample["window_s"], minimum=0)
    if sample["window_s"] <= 0:
        raise SampleError("window_s: %r must be above 0" % (sample["window_s"],))

    ops = sample["ops_per_s"]
    _keys("ops_per_s", ops, OPS)
    for op in OPS:
        check_number("ops_per_s.%s" % op, ops[op], minimum=0)
    check_number("throughput", sample["throughput"], minimum=0)
    expected = compute_throughput(ops)
    if not _close(sample["throughput"], expected):
        raise SampleError("throughput: %r is not the sum of ops_per_s (%r)" % (sample["throughput"], expected))
    ratio = compute_read_ratio(ops)
    if ratio is None:
        if sample["read_ratio"] is not None:
            raise SampleError("read_ratio: %r must be null when there are no reads or writes" % (sample["read_ratio"],))
    else:
        check_number("read_ratio", sample["read_ratio"], minimum=0, maximum=1)
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
        check_name("hit_ratio key", name)
        check_number("hit_ratio.%s" % name, value, minimum=0, maximum=1, allow_none=True)

    if sample["data_bytes"] is not None and (
        not isinstance(sample["data_bytes"], int) or isinstance(sample["data_bytes"], bool)
    ):
        raise SampleError("data_bytes: %r is not an integer or null" % (sample["data_bytes"],))
    check_number("data_bytes", sample["data_bytes"], minimum=0, allow_none=True)

    latency = sample["latency_ms"]
    _keys("latency_ms", latency, OPS, required=False)
    for op, points in latency.items():
        _keys("latency_ms.%s" % op, points, PERCENTILES)
        for point in PERCENTILES:
            check_number("latency_ms.%s.%s" % (op, point), points[point], minimum=0, allow_none=True)

    resources = sample["resources"]
    _keys("resources", resources, RESOURCES)
    for name in RESOURCES:
        check_number(
            "resources.%s" % name,
            resources[name],
            minimum=0,
            maximum=100 if name.endswith("_pct") else None,
            allow_none=True,
        )

    if "config_id" in sample:
        check_name("config_id", sample["config_id"])
    if "state" in sample:
        validate_state(sample["store"], sample["state"])
    if "extra" in sample:
        if not isinstance(sample["extra"], dict):
            raise SampleError("extra: %r is not a mapping" % (sample["extra"],))
        try:
            json.dumps(sample["extra"], allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise SampleError("extra: not JSON-serialisable (%s)" % exc) from None
    return sample


def validate_state(store, state, field="state"):
    """Check a ``state`` mapping of store's fields (STATE_FIELDS); every value a number of its kind or null.
    Fields may be left out (unknown); unknown names are refused with the allowed ones."""
    allowed = tuple(STATE_FIELDS.get(store, {}))
    if not isinstance(state, dict):
        raise SampleError("%s: %r is not a mapping; keys for %s: %s" % (field, state, store, ", ".join(allowed)))
    unknown = sorted(str(key) for key in state if key not in allowed)
    if unknown:
        raise SampleError(
            "%s: unknown key %s; allowed for %s: %s" % (field, ", ".join(unknown), store, ", ".join(allowed))
        )
    for name, value in state.items():
        where = "%s.%s" % (field, name)
        if value is None:
            continue
        if STATE_FIELDS[store][name].kind == "count" and (not isinstance(value, int) or isinstance(value, bool)):
            raise SampleError("%s: %r is not a whole number >= 0 or null" % (where, value))
        check_number(where, value, minimum=0, allow_none=True)
    return state


def empty_state(store):
    """Every state field of store, all None (nothing observed)."""
    return dict.fromkeys(STATE_FIELDS[store])


def aggregate_state(store, states):
    """The cluster's state from the nodes' state mappings (a node without a mapping reports nothing), field by
    field as STATE_FIELDS says: ``sum`` of every node (None when any node lacks the value: a partial total would be
    a wrong total), ``max`` and ``mean`` over the nodes that report it (None when none does). Sums of counts stay
    whole numbers."""
    out = {}
    for name, spec in STATE_FIELDS[store].items():
        values = [(state or {}).get(name) for state in states]
        known = [value for value in values if value is not None]
        if not known or (spec.cluster == "sum" and len(known) != len(values)):
            out[name] = None
        elif spec.cluster == "sum":
            out[name] = sum(known) if spec.kind == "count" else math.fsum(known)
        elif spec.cluster == "max":
            out[name] = max(known)
        else:
            out[name] = math.fsum(known) / len(known)
    return out


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
    state=None,
):
    """A validated schema v1 sample. Operations left out of ops_per_s count as 0; throughput and read_ratio
    are computed; resources and latency percentiles left out are null. state (optional): the store's
    STATE_FIELDS, those left out null."""
    ops = dict.fromkeys(OPS, 0.0)
    if not isinstance(ops_per_s, dict):
        raise SampleError("ops_per_s: %r is not a mapping; keys: %s" % (ops_per_s, ", ".join(OPS)))
    for op, value in ops_per_s.items():
        if op not in OPS:
            raise SampleError("ops_per_s: unknown key %s; allowed: %s" % (op, ", ".join(OPS)))
        check_number("ops_per_s.%s" % op, value, minimum=0)
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
        "time": float(time) if is_number(time) else time,
        "window_s": float(window_s) if is_number(window_s) else window_s,
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
    if state is not None:
        sample["state"] = (
            dict(empty_state(store), **state) if isinstance(state, dict) and store in STATE_FIELDS else state
        )
    return validate_sample(sample)


def cluster_sample(store, cluster, time, window_s, samples, counted, hit_ratio, extra=None):
    """The cluster's sample from its nodes' samples, whoever read them (observe polling, or Prometheus): the
    operations and data of the counted nodes summed (Redis: masters only), their worst latency per operation and
    percentile, the mean of every node's resources, every node's state combined (aggregate_state); hit_ratio as
    the caller computed it over every node's hits and requests."""
    ops = {op: sum(s["ops_per_s"][op] for s in counted) for op in OPS}
    data = [s["data_bytes"] for s in counted if s["data_bytes"] is not None]
    latency = {}
    for sample in counted:
        for op, points in sample["latency_ms"].items():
            into = latency.setdefault(op, {})
            for key, value in points.items():
                if value is not None and (into.get(key) is None or value > into[key]):
                    into[key] = value
    resources = {}
    for key in RESOURCES:
        values = [s["resources"][key] for s in samples if s["resources"].get(key) is not None]
        resources[key] = sum(values) / len(values) if values else None
    return new_sample(
        store,
        cluster,
        AGGREGATE_NODE,
        time,
        window_s,
        ops,
        hit_ratio=hit_ratio,
        data_bytes=sum(data) if data else None,
        latency_ms=latency,
        resources=resources,
        extra=dict(extra or {}, nodes=[s["node"] for s in counted]),
        state=aggregate_state(store, [s.get("state") for s in samples]),
    )
