# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Observe: snapshots of every node's counters taken `interval` seconds apart for `duration` seconds, turned
into workload samples (schema tactician.workload_sample/v1) with rates over the 5 s, 30 s and 5 min windows, plus
one aggregate sample for the cluster; optionally written to the history store with the rate trackers, so longer
windows build up across runs.

No database driver here: a probe is anything with `.node` (its name) and `.snapshot()` returning
{"counters": {...}, "gauges": {...}} and optionally {"state": {...}}, the state readings of that moment; the store
adapters make them. A probe's `.final_state()`, when it has one, adds readings taken once after the window (they
cost more: Cassandra's nodetool). Nothing is written unless every node answered.

Each sample's ``state`` (samples.STATE_FIELDS) reduces a node's readings over the window as the field says:
``peak`` the highest reading, ``last`` the newest reading that has a value, ``rate`` a counter's rate over the
window (STATE_RATES). The cluster's sample combines every node's state, replicas included (their backlogs are
real work too), with samples.aggregate_state.
"""

from __future__ import annotations

import base64
import json
import os
import time as _time
import zlib
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TelemetryError
from ansible_collections.tactician.nosql.plugins.module_utils.core.process import cpu_seconds, read_pid
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import rates as rates_mod
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import resources as resources_mod
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import samples as telemetry

# Counters of each store that are operations, by sample operation name.
OPERATION_COUNTERS = {
    "cassandra": {"read": "read", "update": "write", "scan": "scan"},
    "redis": {"read": "read", "update": "update", "scan": "scan", "delete": "delete", "other": "other"},
    "mongodb": {
        "read": "read",
        "insert": "insert",
        "update": "update",
        "delete": "delete",
        "scan": "scan",
        "other": "other",
    },
}
HIT_COUNTERS = {
    "cassandra": ("key_cache", "row_cache", "chunk_cache"),
    "redis": ("keyspace",),
    "mongodb": ("wiredtiger_cache",),
}
PROCESS_CPU = "_process_cpu_s"
STATE_RATES = {"redis": {"evictions_per_s": "evicted_keys"}}
"""State fields that are a counter's rate over the window, by the counter the snapshot gives."""
MAX_PARALLEL_FINAL_STATES = 4
"""Nodes whose final state readings run at once (for Cassandra each is a few nodetool JVMs of ~100 MiB)."""


class ObserveError(TelemetryError):
    """A node could not be observed; the message starts with the node."""


class Probe:
    """A node and the function that snapshots it; pid_file and data_dir add the server process's CPU and the
    data disk's usage when the node runs on this machine."""

    def __init__(self, node, snapshot, pid_file=None, data_dir=None, counted=True, final_state=None, host=None):
        self.node = node
        self.host = host
        self._snapshot = snapshot
        self.pid_file = pid_file
        self.data_dir = data_dir
        self.counted = counted
        self._final_state = final_state

    def snapshot(self):
        return self._snapshot()

    def final_state(self):
        """State readings taken once after the window ({} when the probe has none)."""
        return self._final_state() if self._final_state else {}


def _take(probe, clock):
    try:
        snap = probe.snapshot()
    except Exception as exc:  # each driver has its own errors; all mean this node could not be read
        raise ObserveError("%s: cannot be observed: %s" % (probe.node, exc)) from exc
    counters = dict(snap["counters"])
    if probe.pid_file:
        cpu = cpu_seconds(read_pid(probe.pid_file))
        if cpu is not None:
            counters[PROCESS_CPU] = cpu
    return clock(), counters, snap.get("gauges", {}), snap.get("state") or {}


def _final_states(probes):
    """{node: (readings, error text or None)} of every probe's final_state(), the nodes asked at the same time.
    A node whose readings fail keeps those fields None and says why: the workload sample stands without them."""

    def one(probe):
        try:
            return dict(probe.final_state() or {}), None
        except Exception as exc:  # nodetool, JMX or a parser: the state stays unknown, the sample stands
            return {}, "%s: %s" % (type(exc).__name__, exc)

    if len(probes) <= 1:
        return {probe.node: one(probe) for probe in probes}
    with ThreadPoolExecutor(max_workers=min(len(probes), MAX_PARALLEL_FINAL_STATES)) as pool:
        results = list(pool.map(one, probes))
    return {probe.node: result for probe, result in zip(probes, results, strict=True)}


def node_state(store, readings, final=None, rates=None):
    """A node's state over the window from its readings (oldest first), the final readings and the window's
    counter rates, each field reduced as samples.STATE_FIELDS says; a field nothing reported is None."""
    final = final or {}
    rates = rates or {}
    state = {}
    for name, spec in telemetry.STATE_FIELDS[store].items():
        if spec.window == "rate":
            counter = STATE_RATES.get(store, {}).get(name)
            value = rates.get(counter) if counter else None
            state[name] = max(float(value), 0.0) if value is not None else None
            continue
        values = [reading.get(name) for reading in readings] + [final.get(name)]
        values = [value for value in values if value is not None]
        if not values:
            state[name] = None
        elif spec.window == "peak":
            state[name] = max(values)
        else:
            state[name] = values[-1]
    return state


def _state_key(store, cluster, node):
    return "rate_tracker/%s/%s/%s" % (store, cluster, node)


def _ops(store, rates):
    out = {}
    for op, counter in OPERATION_COUNTERS[store].items():
        value = rates.get(counter)
        out[op] = max(float(value), 0.0) if value is not None else 0.0
    return out


def _hits(store, rates):
    out = {}
    for name in HIT_COUNTERS[store]:
        hits, requests = rates.get(name + "_hits"), rates.get(name + "_requests")
        out[name] = (min(max(hits / requests, 0.0), 1.0) if requests else None) if hits is not None else None
    return out


def _latency(gauges):
    latency = {}
    for op, points in (gauges.get("latency_ms") or {}).items():
        latency[op] = {key: points.get(key) for key in telemetry.PERCENTILES if key in points}
    return latency


def observe(
    probes,
    store,
    cluster,
    duration=telemetry.DEFAULT_T_D,
    interval=5.0,
    history=None,
    clock=_time.time,
    sleep=_time.sleep,
    machine=True,
    defer=False,
    node_usage=None,
):
    """Observe the probes for duration seconds; returns {"samples": [...per node], "aggregate": sample}.

    history: a HistoryStore (or None). Its saved rate trackers are resumed, and the samples and trackers are
    written back in one go once every node has answered. node_usage: readings taken on the nodes
    (apply_node_usage); each sample's resources are then its node's own, not this machine's. defer: write
    nothing and return, under "pending", what complete() needs to write the samples once the readings the nodes
    took over this same window are in."""
    if store not in OPERATION_COUNTERS:
        raise ObserveError("store: %r is not allowed; choose one of %s" % (store, ", ".join(OPERATION_COUNTERS)))
    if duration <= 0 or interval <= 0:
        raise ObserveError("duration, interval: must be above 0 seconds (got %r, %r)" % (duration, interval))
    if not probes:
        raise ObserveError("nodes: give at least one node to observe")
    windows = sorted({5.0, float(duration), 300.0})
    trackers = {}
    for probe in probes:
        state = history.load_state(_state_key(store, cluster, probe.node)) if history else None
        trackers[probe.node] = (
            rates_mod.RateTracker.from_dict(state) if state else rates_mod.RateTracker(windows=windows)
        )
        if tuple(trackers[probe.node].windows) != tuple(windows):
            trackers[probe.node] = rates_mod.RateTracker(windows=windows)
    cpu_first = resources_mod.read_proc_stat() if machine else None
    gauges = {}
    readings = {probe.node: [] for probe in probes}
    first = {}
    start = clock()
    while True:
        for probe in probes:
            at, counters, gauges[probe.node], state = _take(probe, clock)
            readings[probe.node].append(state)
            if trackers[probe.node].latest is None or at > trackers[probe.node].latest:
                trackers[probe.node].add(at, counters)
                first.setdefault(probe.node, at)
        if clock() - start >= duration - 1e-6:
            break
        sleep(max(0.0, min(interval, duration - (clock() - start))))
    end = clock()
    cpu_last = resources_mod.read_proc_stat() if machine else None
    machine_cpu = resources_mod.cpu_split(cpu_first["cpu"], cpu_last["cpu"]) if machine else {}
    memory = resources_mod.memory_usage(resources_mod.read_meminfo()) if machine else {}
    # After the window and its CPU reading: what these readings cost does not count in the sample.
    finals = _final_states(probes)
    samples = []
    for probe in probes:
        tracker = trackers[probe.node]
        # Over this observation's own snapshots: a node that answers late under load still has a rate (its span
        # is in extra.span_s).
        main = tracker.rate(duration, since=first.get(probe.node))
        rates = main["rates"]
        if main["reason"]:
            raise ObserveError("%s: no rate over %ss: %s" % (probe.node, duration, main["reason"]))
        disk = resources_mod.disk_usage(probe.data_dir) if probe.data_dir and os.path.exists(probe.data_dir) else None
        extra = {
            "counted_in_aggregate": probe.counted,
            "windows": {
                label: (None if window["reason"] else _ops(store, window["rates"]))
                for label, window in tracker.rates().items()
            },
            "span_s": main["span_s"],
        }
        if rates.get(PROCESS_CPU) is not None:
            extra["process_cpu_pct"] = 100.0 * rates[PROCESS_CPU]
        for key, value in gauges[probe.node].items():
            if key not in ("latency_ms", "data_bytes"):
                extra[key] = value
        final, state_error = finals[probe.node]
        if state_error:
            extra["state_error"] = state_error
        samples.append(
            telemetry.new_sample(
                store,
                cluster,
                probe.node,
                end,
                duration,
                _ops(store, rates),
                hit_ratio=_hits(store, rates),
                data_bytes=gauges[probe.node].get("data_bytes"),
                latency_ms=_latency(gauges[probe.node]),
                resources=resources_mod.sample_resources(machine_cpu, memory, disk),
                extra=extra,
                state=node_state(store, readings[probe.node], final, rates),
            )
        )
    hosts = {probe.node: probe.host for probe in probes if probe.host}
    if node_usage is not None:
        apply_node_usage(samples, hosts, node_usage)
    aggregate = _aggregate(store, cluster, end, duration, samples, probes, trackers, first)
    if defer:
        pending = {
            "store": store,
            "cluster": cluster,
            "samples": samples,
            "aggregate": aggregate,
            "hosts": hosts,
            "trackers": {probe.node: trackers[probe.node].to_dict() for probe in probes},
        }
        return {"samples": samples, "aggregate": aggregate, "pending": pending}
    if history is not None:
        _write(history, store, cluster, samples + [aggregate], {p.node: trackers[p.node] for p in probes})
    return {"samples": samples, "aggregate": aggregate}


def _write(history, store, cluster, samples, trackers):
    history.add_samples(samples)
    for node, tracker in trackers.items():
        history.save_state(_state_key(store, cluster, node), tracker.to_dict())


def _usage_entries(node_usage):
    """{node name: readings} of node_usage (the node_usage module's results, async_status's included); a result
    that failed maps to its message."""
    if not isinstance(node_usage, (list, tuple)):
        raise ObserveError("node_usage: %r is not a list of the node_usage module's results" % (node_usage,))
    out = {}
    for index, entry in enumerate(node_usage):
        field = "node_usage[%d]" % index
        if not isinstance(entry, dict) or not isinstance(entry.get("node") or entry.get("item"), str):
            raise ObserveError("%s: not a node_usage result (it needs node, the node's inventory name)" % field)
        name = entry.get("node") or entry["item"]
        # A reading that failed: its result as the module left it, or with failed_when false only its message.
        if entry.get("failed") or (not entry.get("snapshots") and entry.get("msg")):
            out[name] = "the reading on the node failed: %s" % (entry.get("msg") or "no message")
            continue
        snapshots = entry.get("snapshots")
        if not isinstance(snapshots, list) or not snapshots:
            raise ObserveError("%s.snapshots: missing or empty; give the node_usage module's result" % field)
        for k, snap in enumerate(snapshots):
            if not isinstance(snap, dict) or not all(key in snap for key in ("t", "cpu", "mem")):
                raise ObserveError("%s.snapshots[%d]: needs t, cpu and mem (a node_usage reading)" % (field, k))
            telemetry.check_number("%s.snapshots[%d].t" % (field, k), snap["t"], minimum=0, error=ObserveError)
        out[name] = entry
    return out


def _apply_node_state(sample, entry):
    """The state readings a node took of itself after the window (node_usage's state: nodetool on the node's own
    JMX) into its sample, over the fields nothing else reported; or why they are missing (extra.state_error)."""
    readings = entry.get("state")
    if entry.get("state_error"):
        sample.setdefault("extra", {})["state_error"] = str(entry["state_error"])
    if not isinstance(readings, dict):
        return
    state = sample.setdefault("state", {})
    for name, value in readings.items():
        if name in state and state[name] is None and value is not None:
            state[name] = value


def apply_node_usage(samples, hosts, node_usage):
    """Put each node's own resources, read on the node over the sample's window (resources.window_usage), into
    its sample: the machine's readings are replaced, and extra says where they came from (resources_from,
    node_cpus, process_cpu_pct) or why there are none (resources_error: a node whose readings failed or do not
    cover the window keeps null resources; the sample stands). hosts: {sample node: inventory name}. Readings
    of a name that matches no sample are refused."""
    entries = _usage_entries(node_usage)
    known = {hosts.get(sample["node"], sample["node"]) for sample in samples} | {s["node"] for s in samples}
    unknown = sorted(name for name in entries if name not in known)
    if unknown:
        raise ObserveError(
            "node_usage: %s is no node of this observation; its nodes: %s"
            % (", ".join(unknown), ", ".join(sorted(hosts.get(s["node"], s["node"]) for s in samples)))
        )
    for sample in samples:
        name = hosts.get(sample["node"], sample["node"])
        entry = entries.get(name, entries.get(sample["node"]))
        extra = sample.setdefault("extra", {})
        extra.pop("process_cpu_pct", None)
        if entry is None:
            found, process, why = None, None, "no readings from the node %s" % name
        elif isinstance(entry, str):
            found, process, why = None, None, entry
        else:
            end = float(sample["time"])
            found, process, why = resources_mod.window_usage(entry, end - float(sample["window_s"]), end)
        if isinstance(entry, dict):
            _apply_node_state(sample, entry)
        if why:
            # The sample stands, its resources unknown rather than the controller's.
            sample["resources"] = resources_mod.sample_resources()
            extra["resources_error"] = why
            continue
        sample["resources"] = found
        extra["resources_from"] = "node %s" % name
        if entry.get("cpus"):
            extra["node_cpus"] = int(entry["cpus"])
        if process is not None:
            extra["process_cpu_pct"] = process
        telemetry.validate_sample(sample)


PENDING_PREFIX = "tactician.pending/v1:"


def pack_pending(pending):
    """observe(defer=True)'s pending as one opaque line of text. It passes through Ansible, which masks every
    string equal to a value of a no_log option (a password that is also the cluster's name, say): a packed
    record keeps its fields out of reach of that."""
    raw = json.dumps(pending, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return PENDING_PREFIX + base64.b64encode(zlib.compress(raw, 6)).decode("ascii")


def unpack_pending(text):
    """pack_pending's record back; ObserveError when text is not one."""
    if not isinstance(text, str) or not text.startswith(PENDING_PREFIX):
        raise ObserveError("pending: not the pending result of a deferred observe (it starts with %s)" % PENDING_PREFIX)
    try:
        return json.loads(zlib.decompress(base64.b64decode(text[len(PENDING_PREFIX) :], validate=True)))
    except (ValueError, zlib.error) as exc:
        raise ObserveError(
            "pending: the record is damaged (%s); give the pending result as it was returned" % exc
        ) from None


def _mean_resources(samples):
    resources = {}
    for key in telemetry.RESOURCES:
        values = [s["resources"][key] for s in samples if s["resources"].get(key) is not None]
        resources[key] = sum(values) / len(values) if values else None
    return resources


def complete(pending, node_usage, history=None):
    """Write a deferred observation (observe(defer=True)'s "pending") with the resources the nodes read over its
    window (apply_node_usage); the cluster's sample takes their mean. Returns {"samples", "aggregate"}."""
    if not isinstance(pending, dict):
        raise ObserveError("pending: %r is not the pending result of a deferred observe" % (pending,))
    for key in ("store", "cluster", "samples", "aggregate", "trackers"):
        if key not in pending:
            raise ObserveError("pending.%s: missing; give the pending result of a deferred observe as it is" % key)
    store, cluster = pending["store"], pending["cluster"]
    samples = [dict(sample) for sample in pending["samples"]]
    for index, sample in enumerate(samples + [pending["aggregate"]]):
        try:
            telemetry.validate_sample(sample)
        except telemetry.SampleError as exc:
            raise ObserveError("pending.samples[%d].%s" % (index, exc)) from None
        if sample["store"] != store or sample["cluster"] != cluster:
            raise ObserveError(
                "pending.samples[%d]: of %s %s, not of the pending %s %s"
                % (index, sample["store"], sample["cluster"], store, cluster)
            )
    if node_usage is not None:
        apply_node_usage(samples, dict(pending.get("hosts") or {}), node_usage)
    aggregate = dict(pending["aggregate"])
    aggregate["resources"] = _mean_resources(samples)
    telemetry.validate_sample(aggregate)
    trackers = {}
    for node, data in pending["trackers"].items():
        try:
            trackers[node] = rates_mod.RateTracker.from_dict(data)
        except (TypeError, ValueError, KeyError) as exc:
            raise ObserveError("pending.trackers.%s: not a rate tracker: %s" % (node, exc)) from None
    if history is not None:
        _write(history, store, cluster, samples + [aggregate], trackers)
    return {"samples": samples, "aggregate": aggregate}


def _aggregate(store, cluster, end, duration, samples, probes, trackers, firsts=None):
    firsts = firsts or {}
    counted = [s for s, p in zip(samples, probes, strict=True) if p.counted]
    hits = {}
    for name in HIT_COUNTERS[store]:
        total_hits = total_requests = 0.0
        for probe in probes:
            rates = trackers[probe.node].rate(duration, since=firsts.get(probe.node))["rates"]
            if rates.get(name + "_hits") is not None and rates.get(name + "_requests"):
                total_hits += rates[name + "_hits"]
                total_requests += rates[name + "_requests"]
        hits[name] = min(total_hits / total_requests, 1.0) if total_requests else None
    return telemetry.cluster_sample(store, cluster, end, duration, samples, counted, hits)


def summary(result):
    """Lines a person reads: per node and for the cluster, throughput, read ratio, hit ratios, CPU (and the node it
    was read on) and the state fields that have a value."""
    lines = []
    for sample in result["samples"] + [result["aggregate"]]:
        hits = ", ".join("%s %.3f" % (k, v) for k, v in sample["hit_ratio"].items() if v is not None)
        state = ", ".join("%s %.4g" % (k, v) for k, v in (sample.get("state") or {}).items() if v is not None)
        extra = sample.get("extra", {})
        rr = sample["read_ratio"]
        cpu = sample["resources"]["cpu_pct"]
        notes = [("state not read", extra.get("state_error")), ("resources not read", extra.get("resources_error"))]
        lines.append(
            "%s %s: %.1f ops/s, read ratio %s%s; cpu %s%%%s%s%s"
            % (
                sample["store"],
                sample["node"],
                sample["throughput"],
                "n/a" if rr is None else "%.3f" % rr,
                ("; hit " + hits) if hits else "",
                "n/a" if cpu is None else "%.0f" % cpu,
                " (read on %s)" % extra["resources_from"] if extra.get("resources_from") else "",
                ("; state " + state) if state else "",
                "".join("; %s: %s" % (label, text) for label, text in notes if text),
            )
        )
    return lines
