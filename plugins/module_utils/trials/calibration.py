# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Calibration runs of the resource-usage model on a live node (seed 003), and measurements to check it.

One measurement drives the load driver at a target rate and, after a warm-up, reads over a window what the
server did: its CPU (user + system of the server process, plus its block-I/O wait when the kernel accounts it),
the operations it served and its cache hit ratio, from the server's own counters. Usage is a percentage of the
whole machine (all its CPUs), so 100 % means every core busy.

``calibrate_hit_ratio`` runs the read-model calibration for one data size: the unthrottled maximum first, then,
for each target usage level, the binary search of resource_model.binary_search_throughput over target rates,
reusing every point measured before. ``measure_rates`` measures given rates (the update model, and held-out
workloads to check the model). The store specifics are in a Meter (Cassandra here: row cache counters over CQL);
the load runs through loadrun, so the driver, its bindings and the connection options are the load module's.
"""

from __future__ import annotations

import os
import threading
import time

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError, TrialError
from ansible_collections.tactician.nosql.plugins.module_utils.core.process import read_pid
from ansible_collections.tactician.nosql.plugins.module_utils.models import resource_model
from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run as loadrun

DEFAULT_LEVELS = (5.0, 20.0, 40.0, 60.0, 80.0)
NEVER_ENDING = 10**9


class CalibrationError(TrialError):
    """A calibration run could not measure what it needs."""


def process_cpu_seconds(pid):
    """User + system CPU seconds of a process plus its accounted block-I/O wait (0 when not accounted)."""
    try:
        with open("/proc/%d/stat" % int(pid)) as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, ValueError, IndexError, TypeError) as exc:
        raise CalibrationError("server process %s: cannot read its CPU time: %s" % (pid, exc)) from exc
    ticks = float(os.sysconf("SC_CLK_TCK"))
    blkio = int(fields[39]) if len(fields) > 39 else 0
    return (int(fields[11]) + int(fields[12]) + blkio) / ticks


def _wait_for_operations(meter, worker, timeout):
    """Return once the server counts operations again (the client is connected and running), or at timeout."""
    start = meter.counters()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and worker.is_alive():
        time.sleep(0.5)
        now = meter.counters()
        if now["reads"] + now["writes"] > start["reads"] + start["writes"]:
            return


def measure(
    load_params,
    meter,
    pid,
    target,
    warmup_s=4.0,
    window_s=8.0,
    cpus=None,
    run=None,
    clock=time.monotonic,
    start_timeout=30.0,
):
    """Drive the load at target ops/s (0 = unthrottled) and read the server over window_s, starting warmup_s after
    the server sees the client's first operations (so the client's start-up is never measured).

    Returns {target, throughput (server ops/s: reads + writes it served), reads_per_s, writes_per_s, usage (% of
    the machine), hit_ratio (None when no cache request), client (the driver's own result)}."""
    cpus = cpus or os.cpu_count() or 1
    run = run or _run_load
    params = dict(load_params, target=int(target), max_seconds=int(warmup_s + window_s + 2), phases=["run"])
    params["properties"] = dict(load_params.get("properties") or {}, operationcount=NEVER_ENDING)
    outcome = {}
    worker = threading.Thread(target=lambda: outcome.update(run(params)), daemon=True)
    # The run's clock starts once the client is connected; a few seconds of margin keep it running to the end of
    # the window (the window starts warmup_s after the server sees the first operations).
    params["max_seconds"] += 5
    worker.start()
    _wait_for_operations(meter, worker, start_timeout)
    time.sleep(warmup_s)
    t0, cpu0, c0 = clock(), process_cpu_seconds(pid), meter.counters()
    time.sleep(window_s)
    t1, cpu1, c1 = clock(), process_cpu_seconds(pid), meter.counters()
    worker.join(timeout=warmup_s + window_s + 120)
    if "error" in outcome:
        raise CalibrationError("load at %s ops/s failed: %s" % (target, outcome["error"]))
    span = max(t1 - t0, 1e-6)
    reads = (c1["reads"] - c0["reads"]) / span
    writes = (c1["writes"] - c0["writes"]) / span
    requests = c1["requests"] - c0["requests"]
    return {
        "target": int(target),
        "throughput": round(reads + writes, 2),
        "reads_per_s": round(reads, 2),
        "writes_per_s": round(writes, 2),
        "usage": round(100.0 * (cpu1 - cpu0) / span / cpus, 3),
        "hit_ratio": round((c1["hits"] - c0["hits"]) / requests, 5) if requests > 0 else None,
        "window_s": round(span, 3),
        "client": outcome.get("result"),
    }


def measure_idle(pid, window_s=8.0, cpus=None, clock=time.monotonic):
    """Usage (% of the machine) of the server process over window_s with no load from the driver."""
    cpus = cpus or os.cpu_count() or 1
    t0, cpu0 = clock(), process_cpu_seconds(pid)
    time.sleep(window_s)
    t1, cpu1 = clock(), process_cpu_seconds(pid)
    return round(100.0 * (cpu1 - cpu0) / max(t1 - t0, 1e-6) / cpus, 3)


def _run_load(params):
    try:
        result = loadrun.execute(params, loadrun.plan(params))[-1]
    except TacticianError as exc:  # the load run's, the driver's or the workload's
        return {"error": str(exc)}
    summary = {key: result.get(key) for key in ("throughput", "failed_total", "client_cpu_s", "wall_s")}
    return {"result": summary}


def load_records(load_params, records):
    """Destroy the data and load `records` rows (the data size that gives a hit ratio)."""
    params = dict(load_params, phases=["load"], reload=True)
    params["properties"] = dict(load_params.get("properties") or {}, recordcount=int(records))
    try:
        return loadrun.execute(params, loadrun.plan(params))[-1]
    except TacticianError as exc:  # the load run's, the driver's or the workload's
        raise CalibrationError("loading %d records failed: %s" % (records, exc)) from exc


def calibrate_hit_ratio(
    load_params,
    meter,
    pid,
    records,
    levels=DEFAULT_LEVELS,
    warmup_s=4.0,
    window_s=8.0,
    tolerance=2.5,
    max_probes=5,
    progress=None,
    measure_fn=None,
):
    """Read-model points of one data size: [{level, throughput, usage, hit_ratio, converged, reason}].

    The data is reloaded first, then read unthrottled once to warm the cache and find the maximum; each level is
    searched between 0 and that maximum. The hit ratio reported for every point is the one the server measured
    over all probes of this data size."""
    measure_fn = measure_fn or measure
    params = dict(load_params)
    params["properties"] = dict(load_params.get("properties") or {}, recordcount=int(records))
    probes = []

    def probe(target):
        point = measure_fn(params, meter, pid, target, warmup_s, window_s)
        probes.append(point)
        if progress:
            progress(
                "records=%d target=%s -> %.1f ops/s, usage %.1f %%, hit %s"
                % (records, target, point["throughput"], point["usage"], point["hit_ratio"])
            )
        return point

    top = probe(0)
    if not top["throughput"] > 0:
        raise CalibrationError(
            "records=%d: the unthrottled run served no operations in its %g s window, so there is no range of rates "
            "to search; is the machine too busy for the server, or the server not answering?" % (records, window_s)
        )
    known = [(top["throughput"], top["usage"])]
    results = []
    for level in sorted(levels):

        def usage_at(tput):
            point = probe(max(1, int(round(tput))))
            known.append((point["throughput"], point["usage"]))
            return point["usage"]

        found = resource_model.binary_search_throughput(
            usage_at, level, 0.0, top["throughput"], tolerance=tolerance, max_probes=max_probes, known=list(known)
        )
        results.append(dict(level=level, **{k: found.get(k) for k in ("throughput", "usage", "converged", "reason")}))
    hits = [p["hit_ratio"] for p in probes if p["hit_ratio"] is not None]
    hit = round(sum(hits) / len(hits), 5) if hits else None
    for row in results:
        row["hit_ratio"] = hit
        row["records"] = int(records)
    return {"records": int(records), "hit_ratio": hit, "max": top, "levels": results, "probes": probes}


def measure_rates(load_params, meter, pid, rates, warmup_s=4.0, window_s=8.0, progress=None, measure_fn=None):
    """Measure each target rate (update model points, or held-out workloads): list of measure() results."""
    measure_fn = measure_fn or measure
    points = []
    for rate in rates:
        point = measure_fn(load_params, meter, pid, rate, warmup_s, window_s)
        points.append(point)
        if progress:
            progress(
                "target=%s -> %.1f ops/s, usage %.1f %%, hit %s"
                % (rate, point["throughput"], point["usage"], point["hit_ratio"])
            )
    return points


def server_pid(pid_file):
    pid = read_pid(pid_file)
    if not pid:
        raise CalibrationError("pid_file: no running server PID in %s" % pid_file)
    return pid
