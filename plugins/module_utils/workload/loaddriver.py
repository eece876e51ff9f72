# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The YCSB-compatible load driver: runs YCSB's client (site.ycsb.Client, a JVM) with the collection's
bindings against Cassandra, a Redis Cluster or MongoDB, in one or several processes, and reads back
throughput, latency percentiles and failed operations.

A JVM client costs far less CPU per operation than a Python one, so it can saturate a lab node
(a Python client is bound by its own CPU at ~3.8K reads/s on two cores). Credentials travel in a
properties file written with mode 0600 and removed afterwards, never on a command line.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import tempfile
import threading
import time

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import WorkloadError
from ansible_collections.tactician.nosql.plugins.module_utils.core.process import cpu_seconds

STORES = {
    "cassandra": "tactician.ycsb.CassandraCqlDB",
    "redis": "tactician.ycsb.RedisClusterDB",
    "mongodb": "tactician.ycsb.MongoDbDB",
}
PHASES = ["load", "run"]
PERCENTILES = (50, 95, 99, 99.9)
_SECRET_PROPERTIES = ("cassandra.password", "redis.password", "mongodb.password")


class LoadDriverError(WorkloadError):
    """The load driver could not run as asked."""


def classpath(home):
    lib = os.path.join(home, "lib")
    classes = os.path.join(home, "classes")
    if not os.path.isdir(lib) or not os.path.isdir(os.path.join(classes, "tactician", "ycsb")):
        raise LoadDriverError(
            "driver_home: %s has no lib/ and compiled classes/; install it with role tactician.nosql.load_driver" % home
        )
    return os.path.join(lib, "*") + os.pathsep + classes


def base_properties(workload_properties, threads, target, status_interval=None):
    """YCSB properties of a run: the workload's, plus client threads, target and HDR percentiles."""
    props = {key: to_text(value) for key, value in workload_properties.items() if value is not None}
    props.update(
        {
            "workload": props.get("workload", "site.ycsb.workloads.CoreWorkload"),
            "threadcount": str(int(threads)),
            "measurementtype": "hdrhistogram",
            "hdrhistogram.percentiles": ",".join(_fmt(p) for p in PERCENTILES),
        }
    )
    if target:
        props["target"] = str(int(target))
    if status_interval:
        props["status.interval"] = str(int(status_interval))
    return props


JAVA_INT_MAX = 2**31 - 1


def key_space_bound(recordcount, insertproportion):
    """The largest operationcount whose key space fits YCSB's Java int: with inserts, its key chooser spans
    recordcount plus 2 * operationcount * insertproportion keys, and a larger count (a run bounded only by time)
    overflows it, sending the run's reads and updates to keys never written (rows not found, updates that add
    rows). Without inserts, JAVA_INT_MAX; a run reaches the bound only after hundreds of millions of inserts."""
    share = float(insertproportion or 0.0)
    if share <= 0.0:
        return JAVA_INT_MAX
    room = JAVA_INT_MAX - int(recordcount or 0) - 1
    return max(1, min(JAVA_INT_MAX, int(room / (2.0 * share))))


def split_for_processes(props, phase, processes):
    """One property set per client process: the load phase splits the key range (insertstart/insertcount),
    the run phase splits the operation count (at most key_space_bound) and the target rate."""
    processes = max(1, int(processes))
    out = []
    records = int(props.get("recordcount", 1000))
    operations = int(props.get("operationcount", 1000))
    operations = min(operations, key_space_bound(records, props.get("insertproportion", 0.0)))
    target = int(props.get("target", 0) or 0)
    threads = int(props.get("threadcount", 1))
    start = int(props.get("insertstart", 0))
    for index in range(processes):
        part = dict(props)
        part["threadcount"] = str(max(1, threads // processes + (1 if index < threads % processes else 0)))
        if target:
            part["target"] = str(max(1, target // processes))
        if phase == "load":
            first = start + records * index // processes
            last = start + records * (index + 1) // processes
            part["insertstart"] = str(first)
            part["insertcount"] = str(last - first)
        else:
            part["operationcount"] = str(operations // processes + (1 if index < operations % processes else 0))
        out.append(part)
    return out


def write_properties(path, props):
    """Write a Java properties file readable by its owner only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        for key in sorted(props):
            handle.write("%s=%s\n" % (_escape(key), _escape(props[key])))


def client_argv(java, home, store, phase, props_file, heap="512m"):
    if store not in STORES:
        raise LoadDriverError("store: %r is not allowed; choose one of %s" % (store, ", ".join(STORES)))
    if phase not in PHASES:
        raise LoadDriverError("phase: %r is not allowed; choose one of %s" % (phase, ", ".join(PHASES)))
    return [
        java,
        "-Xmx" + heap,
        "-XX:+UseParallelGC",
        "-cp",
        classpath(home),
        "site.ycsb.Client",
        "-load" if phase == "load" else "-t",
        "-db",
        STORES[store],
        "-P",
        props_file,
        "-s",
    ]


_LINE = re.compile(r"^\[([A-Z0-9_-]+)\], ([^,]+), ([-0-9.eE]+|NaN)\s*$")
_PCT = re.compile(r"^([0-9.]+)(?:th)?PercentileLatency\(us\)$")


def parse_output(text):
    """YCSB's summary lines -> {'runtime_ms', 'throughput', 'operations': {op: {...}}, 'failed': {op: n}}."""
    result = {"runtime_ms": None, "throughput": None, "operations": {}, "failed": {}, "not_found": {}}
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if not match:
            continue
        section, metric, raw = match.groups()
        value = float(raw) if raw != "NaN" else None
        if section == "OVERALL":
            if metric == "RunTime(ms)":
                result["runtime_ms"] = value
            elif metric == "Throughput(ops/sec)":
                result["throughput"] = value
            continue
        if section == "SERVER-COMMANDS":
            result["server_commands"] = int(value or 0)
            continue
        if section.endswith("-FAILED"):
            name = section[: -len("-FAILED")].lower()
            if metric == "Operations":
                result["failed"][name] = int(value or 0)
            elif metric == "Return=NOT_FOUND":
                # The store answered, without the row: a read at CL ONE that met a replica the row has not
                # reached yet (stale, not unavailable). Counted apart from the operations that failed.
                result["not_found"][name] = int(value or 0)
            continue
        if section in ("CLEANUP", "TOTAL_GCS", "TOTAL_GC_TIME", "TOTAL_GC_TIME_%") or section.startswith("TOTAL_GC"):
            continue
        op = result["operations"].setdefault(section.lower(), {"count": 0, "returns": {}})
        pct = _PCT.match(metric)
        if metric == "Operations":
            op["count"] = int(value or 0)
        elif metric == "AverageLatency(us)":
            op["avg_ms"] = _ms(value)
        elif metric == "MaxLatency(us)":
            op["max_ms"] = _ms(value)
        elif pct:
            op["p%s_ms" % _label(float(pct.group(1)))] = _ms(value)
        elif metric.startswith("Return="):
            op["returns"][metric[len("Return=") :]] = int(value or 0)
    for name, op in result["operations"].items():
        # YCSB reports a read's status under the operation ("[READ], Return=NOT_FOUND, n") and its latency under
        # "[READ-FAILED]": both forms count as the rows not found.
        if op["returns"].get("NOT_FOUND"):
            result["not_found"][name] = max(result["not_found"].get(name, 0), op["returns"]["NOT_FOUND"])
    for name, missing in result["not_found"].items():
        left = result["failed"].get(name, 0) - missing
        if left > 0:
            result["failed"][name] = left
        else:
            result["failed"].pop(name, None)
    for name, op in result["operations"].items():
        bad = sum(count for status, count in op["returns"].items() if status not in ("OK", "NOT_FOUND"))
        if bad:
            result["failed"][name] = max(result["failed"].get(name, 0), bad)
    return result


_STATUS = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d):(\d{3}) \d+ sec: (\d+) operations;")


def _status_lines(text):
    """(unix time in the client's local time, operations done so far, line) of each periodic status line (-s)."""
    for line in text.splitlines():
        match = _STATUS.match(line.strip())
        if match:
            stamp = time.mktime(time.strptime(match.group(1), "%Y-%m-%d %H:%M:%S")) + int(match.group(2)) / 1000.0
            yield stamp, int(match.group(3)), line


def parse_status(text):
    """YCSB's periodic status lines (-s) -> [(unix time, operations done so far)], in the client's local time."""
    return [(stamp, done) for stamp, done, _line in _status_lines(text)]


_FAILED_COUNT = re.compile(r"\[([A-Z0-9_]+)-FAILED: Count=(\d+)")


def parse_failures(text):
    """YCSB's periodic status lines (-s) -> [(unix time, operations of the -FAILED series in the interval that
    ends then)], only the intervals with some. The series holds the failed operations and the reads that found no
    row alike (the summary at the end tells them apart)."""
    points = []
    for stamp, _done, line in _status_lines(text):
        count = sum(int(n) for _op, n in _FAILED_COUNT.findall(line))
        if count:
            points.append((stamp, count))
    return points


_SERIES_P99 = re.compile(r"\[([A-Z0-9_]+): Count=(\d+)[^\]]*?, 99=([0-9.]+)")


def parse_p99(text):
    """YCSB's periodic status lines (-s) -> [(unix time, {op: 99th percentile latency in ms})] of the interval that
    ends then (the operations that succeeded; HdrHistogram's interval counts)."""
    points = []
    for stamp, _done, line in _status_lines(text):
        latency = {
            op.lower(): _ms(float(p99))
            for op, count, p99 in _SERIES_P99.findall(line)
            if int(count) > 0 and op != "CLEANUP"
        }
        if latency:
            points.append((stamp, latency))
    return points


def worst_p99(points, start, end):
    """The worst 10 s p99 (ms) of any operation among the status intervals that end in (start, end]; None without
    any."""
    values = [max(latency.values()) for at, latency in points if start < at <= end and latency]
    return max(values) if values else None


def ops_between(status, start, end):
    """Operations per second a client did between start and end, interpolated from its status points."""

    def done_at(moment):
        before = [p for p in status if p[0] <= moment]
        after = [p for p in status if p[0] >= moment]
        if not before or not after:
            return None
        (t0, n0), (t1, n1) = before[-1], after[0]
        return n0 if t1 == t0 else n0 + (n1 - n0) * (moment - t0) / (t1 - t0)

    first, last = done_at(start), done_at(end)
    if first is None or last is None or end <= start:
        return None
    return (last - first) / (end - start)


def merge(parts):
    """Combine the results of parallel client processes: counts and throughputs add up; a latency percentile
    is the worst of the processes' (an upper bound of the combined one)."""
    if len(parts) == 1:
        return parts[0]
    merged = {"runtime_ms": 0.0, "throughput": 0.0, "operations": {}, "failed": {}, "not_found": {}}
    for part in parts:
        merged["runtime_ms"] = max(merged["runtime_ms"], part["runtime_ms"] or 0.0)
        merged["throughput"] += part["throughput"] or 0.0
        if part.get("server_commands") is not None:
            merged["server_commands"] = merged.get("server_commands", 0) + part["server_commands"]
        for name, count in part["failed"].items():
            merged["failed"][name] = merged["failed"].get(name, 0) + count
        for name, count in part.get("not_found", {}).items():
            merged["not_found"][name] = merged["not_found"].get(name, 0) + count
        for name, op in part["operations"].items():
            into = merged["operations"].setdefault(name, {"count": 0, "returns": {}})
            weight_before = into["count"]
            into["count"] += op["count"]
            for status, count in op["returns"].items():
                into["returns"][status] = into["returns"].get(status, 0) + count
            for key, value in op.items():
                if key.endswith("_ms") and value is not None:
                    if key == "avg_ms":
                        total = into["count"] or 1
                        into[key] = ((into.get(key) or 0.0) * weight_before + value * op["count"]) / total
                    else:
                        into[key] = max(into.get(key) or 0.0, value)
    return merged


def machine_busy_seconds(path="/proc/stat"):
    """CPU seconds the whole machine has been busy (user, nice, system, irq, softirq; all CPUs), or None."""
    try:
        with open(path) as handle:
            fields = handle.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(value) for value in fields[1:8]]
    busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]
    return busy / float(os.sysconf("SC_CLK_TCK"))


# The client processes of the runs in progress, so that a caller that interrupts a run waiting in another thread
# can end them (stop_clients) rather than leave them running after it exits.
_RUNNING = set()
_RUNNING_LOCK = threading.Lock()


def stop_clients():
    """Kill the client processes of every run in progress; returns how many were still running. Each such run then
    fails with a LoadDriverError (its client exited without a summary)."""
    with _RUNNING_LOCK:
        procs = list(_RUNNING)
    killed = 0
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            killed += 1
    return killed


def _end(procs):
    """Kill and reap the clients of a run that did not run to its end, and forget them."""
    for proc, _out in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with _RUNNING_LOCK:
        _RUNNING.difference_update(proc for proc, _out in procs)


def run(java, home, store, phase, props, processes=1, heap="512m", timeout=3600, workdir=None, server_pids=()):
    """Run one phase with `processes` client JVMs; returns the merged result plus the driver's CPU seconds and,
    for the server processes given by PID, theirs (the CPU split between driver and server)."""
    parts = split_for_processes(props, phase, processes)
    servers_before = {pid: cpu_seconds(pid) for pid in server_pids}
    machine_before = machine_busy_seconds()
    tmp = tempfile.mkdtemp(prefix="tactician-load-", dir=workdir)
    procs = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    try:
        for index, part in enumerate(parts):
            path = os.path.join(tmp, "client-%d.properties" % index)
            write_properties(path, part)
            out = open(os.path.join(tmp, "client-%d.out" % index), "w+")
            argv = client_argv(java, home, store, phase, path, heap)
            procs.append((subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, text=True), out))
            with _RUNNING_LOCK:
                _RUNNING.add(procs[-1][0])
        results = []
        deadline = started + timeout
        for proc, out in procs:
            try:
                proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired as exc:
                # The clients still running are killed on the way out (_end).
                raise LoadDriverError("the %s phase did not finish within %ss" % (phase, timeout)) from exc
            out.seek(0)
            text = out.read()
            if proc.returncode != 0 or "[OVERALL]" not in text:
                raise LoadDriverError("YCSB client failed (exit %s): %s" % (proc.returncode, _tail(_redact(text))))
            refused = init_failure(text)
            if refused:
                # YCSB ends a client thread whose binding could not connect and still reports an empty run.
                raise LoadDriverError("the %s phase served nothing: %s" % (phase, _redact(refused)))
            results.append(parse_output(text))
            results[-1]["status"] = parse_status(text)
            results[-1]["failures"] = parse_failures(text)
            results[-1]["p99"] = parse_p99(text)
            results[-1]["errors"] = [
                _redact(line.strip())[len("[tactician] ") :]
                for line in text.splitlines()
                if line.startswith("[tactician] ")
            ]
    finally:
        # An error or an interrupt (KeyboardInterrupt, SIGTERM) leaves no client behind.
        _end(procs)
        for _proc, out in procs:
            out.close()
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    status = [part.pop("status", []) for part in results]
    failed_at = sorted(point for part in results for point in part.pop("failures", []))
    p99_at = sorted((point for part in results for point in part.pop("p99", [])), key=lambda point: point[0])
    errors = [line for part in results for line in part.pop("errors", [])]
    merged = merge(results)
    merged["client_errors"] = errors[:10]
    merged["status_by_process"] = status
    merged["failed_at"] = [list(point) for point in failed_at]
    merged["p99_at"] = [list(point) for point in p99_at]
    merged["wall_s"] = round(time.monotonic() - started, 3)
    merged["client_cpu_s"] = round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 3)
    servers_after = {pid: cpu_seconds(pid) for pid in servers_before}
    server_cpu = [
        servers_after[pid] - start
        for pid, start in servers_before.items()
        if start is not None and servers_after[pid] is not None
    ]
    merged["server_cpu_s"] = round(sum(server_cpu), 3) if server_cpu else None
    # CPU the rest of the machine used meanwhile: a throughput measured while other work ran is not comparable.
    machine_after = machine_busy_seconds()
    if machine_before is not None and machine_after is not None and server_cpu:
        merged["other_cpu_s"] = round(
            max(0.0, machine_after - machine_before - merged["client_cpu_s"] - merged["server_cpu_s"]), 3
        )
        merged["machine_cpu_s"] = round(machine_after - machine_before, 3)
    merged["processes"] = len(parts)
    merged["phase"] = phase
    merged["store"] = store
    merged["failed_total"] = sum(merged["failed"].values())
    merged["not_found_total"] = sum(merged.get("not_found", {}).values())
    return merged


def init_failure(text):
    """The first line of a client's output in which a binding says it could not connect (a refused login, a TLS
    handshake that failed, no node reachable), or None."""
    for line in text.splitlines():
        at = line.find("cannot connect to ")
        if at >= 0:
            return line[at:].strip()
    return None


def _redact(text):
    for prop in _SECRET_PROPERTIES:
        text = re.sub(r"(%s\s*=\s*)\S+" % re.escape(prop), r"\1********", text)
    return text


def _tail(text, lines=15):
    return " | ".join(text.strip().splitlines()[-lines:])


def _ms(value):
    return None if value is None else round(value / 1000.0, 3)


def _label(pct):
    return ("%g" % pct).replace(".", "")


def _fmt(pct):
    return "%g" % pct


def to_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _escape(text):
    return str(text).replace("\\", "\\\\").replace("\n", "\\n").replace("=", "\\=").replace(":", "\\:")
