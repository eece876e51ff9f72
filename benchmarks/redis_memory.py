# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Redis maxmemory and maxmemory-policy under memory pressure: a cache-aside client on a working set several times
larger than the memory, the hit ratio and the throughput of each configuration, with the A/A noise floor beside them.

The server: Debian's redis-server, started and stopped by the collection's own daemon code (stores/redis/daemon.py)
from a redis.conf and an ACL file of its own (the password generated once into .lab/bench/secrets/redis-password,
mode 0600; the ACL file holds only its SHA-256, and no command line holds it), on 127.0.0.32:6421: clear of the lab
(127.0.0.1-3, Redis 6381-6386), the test clusters (6391-6396, 127.0.0.11), the molecule scenarios (6401-6418) and
the Cassandra bench (127.0.0.31). It runs on the server CPUs of process.cpu_split() (this script and its clients on
the others; --server-cpus chooses others) with no persistence, and is stopped by its PID at the end, also after an
error.

The client: cache-aside, as an application's cache is used: GET a key; on a miss, SET its value (V bytes). Keys
are drawn from a zipfian distribution (YCSB's generator, theta 0.99) over N keys, by seeded streams, in batches of
D concurrent requests (their GETs in one round trip, then the SETs of those that missed in another), one process
per client CPU; the client side's CPU and the server's are given next to every throughput.

The designs (trials/designs.py): the reference configuration (maxmemory 128mb, allkeys-lru) against itself in ABBA
windows, the A/A noise floor; then against each candidate, in ABBA windows too: maxmemory-policy allkeys-lfu and
allkeys-random (and noeviction when asked for: once the memory is full its SETs are refused, counted as errors),
maxmemory half and twice the reference. Both change live (CONFIG SET), so every window runs on the same warm
server. Before every window the cache is warmed with that window's configuration, not measured: at least the
settle time, and until the cache is full (keys evicted, or SETs refused, since the warm-up began). Every window
gives the requests served per second, the hit ratio as the client counted it and as the server did (INFO stats
keyspace_hits and keyspace_misses; both are read while the clients wait between two batches, so they must agree
exactly), the keys evicted, used_memory and the keys held. Throughput is compared by the ratios of adjacent
windows, their 95 % interval and verdict against the A/A floor; the hit ratio of a seeded key stream is far less
noisy, and is given per arm with its spread across the windows (and B / A by pairs).

    .venv/bin/python benchmarks/redis_memory.py              # A/A and 4 candidates, 4 pairs of 30 s windows: ~30 min
    .venv/bin/python benchmarks/redis_memory.py --short      # 2 pairs of 10 s windows: about 6 minutes
    .venv/bin/python benchmarks/redis_memory.py --policies allkeys-lfu,noeviction --maxmemory-values none

Needs redis-server (Debian's package; scripts/bootstrap.sh installs it) and the pinned redis-py; not the lab.
Writes redis-memory-<UTC time>.{json,md,log} under .lab/bench/redis-memory.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import hashlib
import json
import math
import multiprocessing
import os
import random
import re
import secrets
import signal
import statistics
import string
import sys
import threading
import time
import traceback

from _common import ROOT, stamped_log, use_collection

use_collection()

from ansible_collections.tactician.nosql.plugins.module_utils.apply import configfile
from ansible_collections.tactician.nosql.plugins.module_utils.core import process
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import CoreError
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis.daemon import redis_daemon
from ansible_collections.tactician.nosql.plugins.module_utils.trials import designs

BENCH = os.path.join(ROOT, ".lab", "bench")
OUT = os.path.join(BENCH, "redis-memory")
SECRET = os.path.join(BENCH, "secrets", "redis-password")
HOST, PORT, USER = "127.0.0.32", 6421, "tactician"
REDIS_SERVER = "/usr/bin/redis-server"
# Eviction policies that make sense for keys without a TTL (the volatile-* ones would evict nothing).
POLICIES = ("allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction")
MIB = 1024.0 * 1024.0
BARRIER_S = 60.0  # the longest a client or this script waits for the others at a window's edge
POLL_S = 0.5  # how often a warm-up looks at the server
# What every window measures, summed up per arm and written to the CSV.
MEASURES = (
    "ops_s",
    "hit_ratio",
    "server_hit_ratio",
    "evicted_s",
    "used_mib",
    "keys",
    "set_errors_s",
    "node_cpu",
    "client_cpu",
)
# What each client process counts, summed over the processes at every window edge (cpu_s: its user + system CPU).
FIELDS = ("gets", "hits", "misses", "sets", "set_errors", "get_errors", "cpu_s")
RESPONSE_ERROR = redis_adapter.redis_lib.exceptions.ResponseError if redis_adapter.HAS_REDIS else Exception


# ----------------------------------------------------------------------------------------------- the workload
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000**2, "mb": 1024**2, "g": 1000**3, "gb": 1024**3}


def memory_bytes(text):
    """Bytes of a memory size written as Redis reads one (1k = 1000, 1kb = 1024, 1mb = 1024 * 1024; no unit:
    bytes). Raises ValueError on anything else."""
    match = re.fullmatch(r"\s*(\d+)\s*(kb|mb|gb|k|m|g|b)?\s*", str(text).lower())
    if not match:
        raise ValueError("%r is not a memory size (a whole number, optionally with k, kb, m, mb, g or gb)" % (text,))
    return int(match.group(1)) * _UNITS[match.group(2) or ""]


def memory_text(size):
    """A size in bytes as CONFIG SET takes it, in mb when it is a whole number of MiB."""
    return "%dmb" % (size // 1048576) if size and size % 1048576 == 0 else str(size)


def zeta(n, theta):
    """The sum over i = 1..n of 1 / i^theta (the zipfian distribution's normalizer)."""
    return math.fsum(1.0 / (i**theta) for i in range(1, int(n) + 1))


def top_share(k, n, theta, zetan=None):
    """The share of the requests that go to the k most popular of n zipfian keys: what a cache holding exactly
    those keys would hit (a bound for a cache of k keys under a stationary workload)."""
    k = max(0, min(int(k), int(n)))
    return zeta(k, theta) / (zetan if zetan is not None else zeta(n, theta)) if k else 0.0


class Zipfian:
    """YCSB's zipfian generator (Gray et al., SIGMOD 1994): ranks 0..n-1, rank 0 the most popular, rank i drawn with
    probability proportional to 1 / (i + 1)^theta (ranks 0 and 1 exactly, the others by the generator's
    approximation, within about 0.01 of the share of the top k ranks). The same seed gives the same stream."""

    def __init__(self, n, theta=0.99, seed=0, zetan=None):
        if not isinstance(n, int) or n < 2:
            raise ValueError("n: %r must be a whole number of at least 2" % (n,))
        if not 0.0 < theta < 1.0:
            raise ValueError("theta: %r must lie in (0, 1)" % (theta,))
        self.n, self.theta = n, theta
        self.zetan = zetan if zetan is not None else zeta(n, theta)
        self.alpha = 1.0 / (1.0 - theta)
        self.second = 1.0 + 0.5**theta
        self.eta = (1.0 - (2.0 / n) ** (1.0 - theta)) / (1.0 - self.second / self.zetan)
        self.rng = random.Random(seed)

    def draw(self, count):
        """The next count ranks of the stream."""
        rand, zetan, second, n = self.rng.random, self.zetan, self.second, self.n
        eta, alpha, last = self.eta, self.alpha, self.n - 1
        out = []
        for _draw in range(count):
            u = rand()
            uz = u * zetan
            if uz < 1.0:
                out.append(0)
            elif uz < second:
                out.append(1)
            else:
                out.append(min(last, int(n * (eta * u - eta + 1.0) ** alpha)))
        return out


def key_name(rank):
    return b"key:%d" % rank


def cache_aside_batch(connection, keys, value):
    """One batch of cache-aside requests on one redis-py connection: the GETs of keys in one round trip, then a SET
    of value for every key that missed, in another. Returns (hits, misses, SETs refused, GETs refused): a command the
    server refuses with an error reply (noeviction's OOM) is counted, not raised; a lost connection raises."""
    connection.send_packed_command(connection.pack_commands([("GET", key) for key in keys]))
    missed, get_errors = [], 0
    for key in keys:
        try:
            if connection.read_response(disable_decoding=True) is None:
                missed.append(key)
        except RESPONSE_ERROR:
            get_errors += 1
    set_errors = 0
    if missed:
        connection.send_packed_command(connection.pack_commands([("SET", key, value) for key in missed]))
        for _key in missed:
            try:
                connection.read_response(disable_decoding=True)
            except RESPONSE_ERROR:
                set_errors += 1
    return len(keys) - len(missed) - get_errors, len(missed), set_errors, get_errors


class Clients:
    """The cache-aside client: count processes, each with its own connection and seeded key stream, running batches
    until stopped. snapshot() makes them all wait between two batches, sums their counts, reads the server's
    through take() and lets them go on: both sides are read at the same point of the request stream."""

    def __init__(self, count, params, keys, theta, value_bytes, depth, seed):
        ctx = multiprocessing.get_context("fork")
        self.count = count
        self._hold, self._stop, self._failed = ctx.Event(), ctx.Event(), ctx.Event()
        self._barrier = ctx.Barrier(count + 1)
        self._counts = ctx.Array("d", count * len(FIELDS), lock=False)
        zetan = zeta(keys, theta)
        self._procs = [
            ctx.Process(
                target=self._run,
                args=(index, params, keys, theta, zetan, value_bytes, depth, seed),
                name="cache-aside-%d" % index,
                daemon=True,
            )
            for index in range(count)
        ]

    def start(self):
        for proc in self._procs:
            proc.start()

    def pids(self):
        return [proc.pid for proc in self._procs]

    def _run(self, index, params, keys, theta, zetan, value_bytes, depth, seed):
        base = index * len(FIELDS)
        try:
            conn = redis_adapter.client(params, retries=False)
            connection = conn.connection_pool.get_connection()
            stream = Zipfian(keys, theta, seed=seed * 1000 + index, zetan=zetan)
            value = random.Random(seed).randbytes(value_bytes)
            totals = [0] * (len(FIELDS) - 1)
            while not self._stop.is_set():
                if self._hold.is_set():
                    self._counts[base : base + len(totals)] = totals
                    self._counts[base + len(totals)] = sum(os.times()[:2])
                    self._barrier.wait(BARRIER_S)  # counted: this script reads the server now
                    self._barrier.wait(BARRIER_S)  # read: go on
                    continue
                hits, misses, set_errors, get_errors = cache_aside_batch(
                    connection, [key_name(rank) for rank in stream.draw(depth)], value
                )
                totals[0] += depth
                totals[1] += hits
                totals[2] += misses
                totals[3] += misses
                totals[4] += set_errors
                totals[5] += get_errors
        except threading.BrokenBarrierError:
            return  # this script gave up on a window edge and says why
        except Exception:
            sys.stderr.write("cache-aside client %d failed:\n%s" % (index, traceback.format_exc()))
            self._failed.set()
            self._barrier.abort()

    def check(self):
        if self._failed.is_set() or not all(proc.is_alive() for proc in self._procs):
            raise SystemExit("a cache-aside client process failed (its error is above)")

    def snapshot(self, take):
        """The clients' summed counts and take()'s reading of the server, at one point of the request stream; "t_held"
        is when the last client stopped, "t_released" when they go on."""
        self.check()
        self._hold.set()
        try:
            self._barrier.wait(BARRIER_S)
        except threading.BrokenBarrierError as exc:
            self.check()
            raise SystemExit(
                "the cache-aside clients did not stop within %d s for a window's edge" % BARRIER_S
            ) from exc
        try:
            held = time.monotonic()
            width = len(FIELDS)
            summed = [sum(self._counts[i * width + f] for i in range(self.count)) for f in range(width)]
            seen = take()
        finally:
            self._hold.clear()
            released = time.monotonic()
            self._barrier.wait(BARRIER_S)
        client = {name: (value if name == "cpu_s" else int(value)) for name, value in zip(FIELDS, summed, strict=True)}
        return dict(seen, client=client, t_held=held, t_released=released)

    def stop(self):
        """Stop every client process: asked first, then SIGTERM by its PID."""
        self._stop.set()
        for proc in self._procs:
            if proc.pid is None:
                continue
            proc.join(10)
            if proc.is_alive():
                proc.terminate()
                proc.join(10)


# ----------------------------------------------------------------------------------------------- the server
def bench_password(path=SECRET):
    """The bench's Redis password: generated once (24 letters and digits, as the lab's), kept in a 0600 file."""
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        alphabet = string.ascii_letters + string.digits
        configfile.write_atomic(path, "".join(secrets.choice(alphabet) for _i in range(24)) + "\n", mode="0600")
    with open(path) as handle:
        return handle.read().split()[0]


def server_settings(node_dir, host, port, maxmemory, policy):
    """The redis.conf directives of the bench's server: the lab role's (roles/redis_node) without the cluster, no
    persistence, and the configuration to start with."""
    return {
        "bind": host,
        "port": str(port),
        "protected-mode": "yes",
        "daemonize": "no",
        "dir": os.path.join(node_dir, "data"),
        "logfile": os.path.join(node_dir, "redis.log"),
        "appendonly": "no",
        "save": "",
        "maxmemory": maxmemory,
        "maxmemory-policy": policy,
        "aclfile": os.path.join(node_dir, "users.acl"),
    }


def acl_text(user, password):
    """users.acl as roles/redis_node writes it: the default user off, user with the SHA-256 of its password."""
    return "user default off\nuser %s on #%s ~* &* +@all\n" % (user, hashlib.sha256(password.encode()).hexdigest())


class Server:
    """The bench's own redis-server: its files under <out>/server-<port>, run by stores/redis/daemon.py, pinned to
    cpus, stopped by its PID."""

    def __init__(self, out, host, port, password, cpus, redis_server):
        self.dir = os.path.join(out, "server-%d" % port)
        self.host, self.port, self.cpus = host, port, cpus
        self.marker = "%s:%d" % (host, port)
        self.params = dict(
            config_file=os.path.join(self.dir, "redis.conf"),
            pid_file=os.path.join(self.dir, "redis.pid"),
            log_file=os.path.join(self.dir, "redis.out"),
            redis_server=redis_server,
            login_host=host,
            login_port=port,
            login_user=USER,
            login_password=password,
            start_timeout=60,
            stop_timeout=30,
            save_on_stop=False,
            restart_on_change=True,
        )
        self.pid, self.conn = None, None

    def start(self, maxmemory, policy, log):
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        os.makedirs(os.path.join(self.dir, "data"), mode=0o700, exist_ok=True)
        configfile.write_atomic(
            os.path.join(self.dir, "users.acl"), acl_text(USER, self.params["login_password"]), mode="0600"
        )
        configfile.edit_file(
            self.params["config_file"],
            "redis",
            server_settings(self.dir, self.host, self.port, maxmemory, policy),
            header="Redis of benchmarks/redis_memory.py on %s (started and stopped by the script)." % self.marker,
            mode="0600",
        )
        left = process.running_pid(self.params["pid_file"], self.marker)
        if left:
            log("a server of an earlier run is still up (PID %d): stopping it" % left)
            self.pid = left
            self.stop()
        elif process.port_open(self.host, self.port):
            raise SystemExit(
                "something else listens on %s already: choose another address with --host or --port" % self.marker
            )
        self.pid = redis_daemon(dict(self.params, state="started"))["pid"]
        if self.cpus:
            process.pin(self.pid, self.cpus)
        self.conn = redis_adapter.client(self.params)
        self.conn.execute_command("FLUSHALL")
        return self.pid

    def stop(self):
        """SHUTDOWN NOSAVE through the daemon code, then SIGTERM (SIGKILL) by PID when the server still runs.
        Returns how it ended."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        pid = self.pid or process.running_pid(self.params["pid_file"], self.marker)
        if not pid:
            return "not running"
        how = "stopped"
        try:
            redis_daemon(dict(self.params, state="stopped"))
        except Exception as exc:  # the PID below is what counts
            how = "stop failed (%s)" % exc
        if process.pid_alive(pid):
            how = process.terminate(pid, timeout=15)
        process.remove_pid_file(self.params["pid_file"])
        self.pid = None
        return how

    def configure(self, config):
        for name in ("maxmemory", "maxmemory-policy"):
            self.conn.config_set(name, config[name])

    def info(self):
        """Server version, the configuration in place and the settings the policies depend on."""
        wanted = ("maxmemory", "maxmemory-policy", "maxmemory-samples", "lfu-log-factor", "lfu-decay-time", "hz")
        config = {}
        for name in wanted:
            config.update(self.conn.config_get(name))
        return {"version": self.conn.info("server").get("redis_version"), "config": config}

    def fill_state(self):
        """The counters that tell a full cache: keys evicted, SETs refused for memory (noeviction)."""
        stats = self.conn.info("stats")
        oom = self.conn.info("errorstats").get("errorstat_OOM") or {}
        return {"evicted_keys": int(stats.get("evicted_keys", 0)), "oom_errors": int(oom.get("count", 0))}

    def take(self):
        """What a window's edge reads of the server (redis_adapter.workload_counters, the keys held, its CPU)."""
        seen = redis_adapter.workload_counters(self.conn)
        counters, gauges = seen["counters"], seen["gauges"]
        return dict(
            self.fill_state(),
            keyspace_hits=counters["keyspace_hits"],
            keyspace_misses=counters["keyspace_requests"] - counters["keyspace_hits"],
            server_gets=counters["read"],
            server_sets=counters["update"],
            used_memory=gauges["used_memory"],
            maxmemory=gauges["maxmemory"],
            keys=int(self.conn.dbsize()),
            server_cpu=process.cpu_seconds(self.pid),
            main_cpu=sum(os.times()[:2]),
        )

    def warm(self, clients, min_s, max_s):
        """Let the clients run until the cache is full with the configuration in place (cache_full) and at least
        min_s seconds have passed; at most max(min_s, max_s). Returns (seconds, full)."""
        first = self.fill_state()
        began = time.monotonic()
        while True:
            time.sleep(POLL_S)
            clients.check()
            spent = time.monotonic() - began
            full = cache_full(first, self.fill_state())
            if (full and spent >= min_s) or spent >= max(min_s, max_s):
                return round(spent, 1), full


def cache_full(before, now):
    """True when the cache filled up between two fill_state() readings: keys were evicted, or SETs were refused
    for memory (noeviction)."""
    return now["evicted_keys"] > before["evicted_keys"] or now["oom_errors"] > before["oom_errors"]


def cpu_sets(server_spec, allowed=None):
    """(client CPUs, server CPUs): by default the lower and upper halves of process.cpu_split(); with server_spec
    (taskset's syntax), those CPUs for the server and the others this process may use for the clients, or all of
    those when none is left (then both share). (allowed, None) on a machine of one CPU: nothing is pinned."""
    allowed = set(allowed if allowed is not None else os.sched_getaffinity(0))
    if server_spec is None:
        lower, server = process.cpu_split()
    else:
        lower, server = None, process.parse_cpus(server_spec, field="--server-cpus")
    if not server:
        return allowed, None
    client = (allowed - server) or set(allowed)
    if lower:
        client = (client & lower) or client
    return client, server


# ----------------------------------------------------------------------------------------------- the designs
def plan(args):
    """The designs in the order run: the A/A floor first, then each candidate policy and maxmemory against the
    reference. Each: knob, A and B (the knob's values), configs {"A": ..., "B": ...}."""
    reference = {"maxmemory": args.maxmemory, "maxmemory-policy": args.policy}
    out = [
        {
            "knob": "A/A",
            "A": "%s %s" % (args.maxmemory, args.policy),
            "B": "%s %s" % (args.maxmemory, args.policy),
            "configs": {"A": reference, "B": reference},
        }
    ]
    for policy in args.policies:
        out.append(
            {
                "knob": "maxmemory-policy",
                "A": args.policy,
                "B": policy,
                "configs": {"A": reference, "B": dict(reference, **{"maxmemory-policy": policy})},
            }
        )
    for size in args.maxmemory_values:
        out.append(
            {
                "knob": "maxmemory",
                "A": args.maxmemory,
                "B": size,
                "configs": {"A": reference, "B": dict(reference, maxmemory=size)},
            }
        )
    return out


def window_record(label, start, end):
    """One window from the snapshots at its edges: requests/s, hit ratio by the client's and by the server's counts
    (and whether they agree), SETs and SETs refused, keys evicted per second, used_memory and keys held at its
    end, the node's CPU and the client side's (its processes and this script), in CPUs."""
    span = end["t_held"] - start["t_released"]
    client = {name: end["client"][name] - start["client"][name] for name in FIELDS}
    server_hits = end["keyspace_hits"] - start["keyspace_hits"]
    server_misses = end["keyspace_misses"] - start["keyspace_misses"]
    looked = client["hits"] + client["misses"]
    server_cpu = (
        (end["server_cpu"] - start["server_cpu"]) / span
        if end.get("server_cpu") is not None and start.get("server_cpu") is not None
        else None
    )
    return {
        "arm": label,
        "seconds": round(span, 2),
        "ops_s": client["gets"] / span if span > 0 else None,
        "hit_ratio": client["hits"] / looked if looked else None,
        "server_hit_ratio": server_hits / (server_hits + server_misses) if server_hits + server_misses else None,
        "counts_agree": client["hits"] == server_hits and client["misses"] == server_misses,
        "client_hits": client["hits"],
        "client_misses": client["misses"],
        "server_hits": server_hits,
        "server_misses": server_misses,
        "server_gets": end["server_gets"] - start["server_gets"],
        "sets_s": client["sets"] / span,
        "set_errors_s": client["set_errors"] / span,
        "get_errors": client["get_errors"],
        "evicted_s": (end["evicted_keys"] - start["evicted_keys"]) / span,
        "used_mib": end["used_memory"] / MIB,
        "maxmemory_mib": end["maxmemory"] / MIB,
        "keys": end["keys"],
        "node_cpu": round(server_cpu, 3) if server_cpu is not None else None,
        "client_cpu": round((client["cpu_s"] + end["main_cpu"] - start["main_cpu"]) / span, 3),
    }


def spread(values):
    """mean, sd, min and max of the values that are there (None when none is)."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {
        "mean": statistics.mean(values),
        "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
        "n": len(values),
    }


def arm_stats(records, label, keys=None, theta=None, zetan=None):
    """One arm's windows summed up: every measured quantity's spread, and the share of the requests its mean
    number of keys held would hit if they were the most popular ones (top_share)."""
    mine = [r for r in records if r["arm"] == label]
    out = {name: spread([r[name] for r in mine]) for name in MEASURES}
    if keys and out["keys"]:
        out["top_share"] = top_share(round(out["keys"]["mean"]), keys, theta, zetan)
    return out


def summarize_design(records, keys=None, theta=None, zetan=None):
    """Throughput B / A by adjacent pairs and by ABBA blocks of four (whole blocks only), hit ratio B / A by pairs,
    each arm's spreads."""
    labels = [r["arm"] for r in records]
    ops = [r["ops_s"] for r in records]
    hits = [r["hit_ratio"] for r in records]
    whole = len(labels) - len(labels) % 4
    return {
        "summary": designs.summarize(designs.pair_ratios(labels, ops)),
        "summary_blocks": designs.summarize(designs.block_ratios(labels[:whole], ops[:whole])),
        "hit_summary": designs.summarize(designs.pair_ratios(labels, hits)),
        "arms": {label: arm_stats(records, label, keys, theta, zetan) for label in ("A", "B")},
    }


def run_design(design, labels, server, clients, args, log):
    """The windows of one design, in the order of labels: its configuration set live before each, warmed, then
    measured between two snapshots."""
    records = []
    for index, label in enumerate(labels):
        server.configure(design["configs"][label])
        warmed, full = server.warm(clients, args.settle_s, args.warm_max_s)
        start = clients.snapshot(server.take)
        time.sleep(args.window_s)
        end = clients.snapshot(server.take)
        record = dict(window_record(label, start, end), warm_s=warmed, warm_full=full)
        records.append(record)
        log(
            "  %s window %d/%d (%s = %s): %.0f requests/s, hit ratio %.4f (server %s), evicted %.0f/s, %.1f MiB, "
            "%d keys, node CPU %s, client CPU %s%s"
            % (
                design["knob"],
                index + 1,
                len(labels),
                label,
                design[label],
                record["ops_s"] or 0,
                record["hit_ratio"] or 0,
                _fmt(record["server_hit_ratio"], "%.4f"),
                record["evicted_s"],
                record["used_mib"],
                record["keys"],
                _fmt(record["node_cpu"]),
                _fmt(record["client_cpu"]),
                "" if full else " (the cache did not fill in %.0f s of warm-up)" % warmed,
            )
        )
    return records


# ----------------------------------------------------------------------------------------------- report
def _fmt(value, pattern="%.2f"):
    return pattern % value if value is not None else "-"


def _both(arms, name, pattern="%.2f"):
    values = [(arms[label].get(name) or {}).get("mean") for label in ("A", "B")]
    return "%s / %s" % (_fmt(values[0], pattern), _fmt(values[1], pattern))


def _hit_cell(arm):
    stats = arm.get("hit_ratio")
    if not stats:
        return "-"
    return "%.4f (%.4f-%.4f)" % (stats["mean"], stats["min"], stats["max"])


def _interval_cell(summary):
    bounds = designs.interval_of(summary) if summary else None
    if not bounds:
        return "-"
    return "[%.3f, %.3f]%s" % (bounds[0], bounds[1], " (bootstrap)" if summary.get("skewed") else "")


def bottleneck(records, client_cpus, shared=False):
    """Which side ran out of CPU, from every window: the server (one thread: node CPU >= 0.9), the client side (its
    CPU >= 0.9 of the CPUs it had), both, or neither; with shared CPUs, whether the two together filled them."""
    node = [r["node_cpu"] for r in records if r.get("node_cpu") is not None]
    client = [r["client_cpu"] for r in records if r.get("client_cpu") is not None]
    if not node or not client:
        return "not measured"
    if shared:
        full = statistics.mean(node) + statistics.mean(client) >= 0.9 * max(1, client_cpus)
        return "the CPUs the server and the client side share" if full else "neither side (on shared CPUs)"
    node_busy = statistics.mean(node) >= 0.9
    client_busy = statistics.mean(client) >= 0.9 * max(1, client_cpus)
    return {
        (True, True): "both sides",
        (True, False): "the server",
        (False, True): "the client side",
        (False, False): "neither side",
    }[(node_busy, client_busy)]


def markdown(results, meta):
    """The results as a Markdown table (one row per design, the A/A floor first) and the windows in the order run."""
    floor = block_floor = None
    for row in results:
        if row["knob"] == "A/A":
            floor = designs.noise_floor(row["summary"])
            block_floor = designs.noise_floor(row["summary_blocks"])
    lines = list(meta.get("lines", [])) + [
        "",
        "| workload | knob | A | B | windows | B / A requests/s | 95 % interval | B won | noise floor (A/A) | verdict"
        " | ABBA blocks: B / A [95 %] | blocks verdict | hit ratio A (min-max) | hit ratio B (min-max)"
        " | hit ratio B / A [95 %] | requests/s A / B | evicted keys/s A / B | used_memory MiB A / B | keys held A / B"
        " | SETs refused/s A / B | node CPU A / B | client CPU A / B | client and server counts |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results:
        summary, blocks, hits, arms = row["summary"], row["summary_blocks"], row["hit_summary"], row["arms"]
        block_bounds = designs.interval_of(blocks) if blocks else None
        agree = sum(1 for w in row["windows"] if w["counts_agree"])
        lines.append(
            "| %s | %s | %s | %s | %d x %s s | %s | %s | %d of %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s"
            " | %s | %s | %s | %s | %s |"
            % (
                meta.get("workload", "-"),
                row["knob"],
                row["A"],
                row["B"],
                len(row["windows"]),
                _fmt(row["window_s"], "%g"),
                _fmt(summary["ratio"], "%.3f"),
                _interval_cell(summary),
                summary["b_won"],
                summary["n"],
                "+-%.1f %%" % (100 * floor) if floor is not None else "-",
                "(the floor)" if row["knob"] == "A/A" else designs.verdict(summary, floor),
                "%.3f [%.3f, %.3f] (%d)" % (blocks["ratio"], block_bounds[0], block_bounds[1], blocks["n"])
                if block_bounds
                else "-",
                "(the floor)" if row["knob"] == "A/A" else (designs.verdict(blocks, block_floor) if blocks else "-"),
                _hit_cell(arms["A"]),
                _hit_cell(arms["B"]),
                "%s %s" % (_fmt(hits["ratio"], "%.4f"), _interval_cell(hits)),
                _both(arms, "ops_s", "%.0f"),
                _both(arms, "evicted_s", "%.0f"),
                _both(arms, "used_mib", "%.1f"),
                _both(arms, "keys", "%.0f"),
                _both(arms, "set_errors_s", "%.0f"),
                _both(arms, "node_cpu"),
                _both(arms, "client_cpu"),
                "agree in %d of %d windows" % (agree, len(row["windows"])),
            )
        )
    every = [w for row in results for w in row["windows"]]
    lines += [
        "",
        "Saturated: %s (the server is one thread; the client side had %s process(es) on %s CPU(s)). The hit ratio"
        " a cache of as many keys as each arm held would reach holding the most popular ones (a bound for a"
        " stationary workload): %s."
        % (
            bottleneck(every, meta.get("client_cpu_count", 1), meta.get("shared", False)),
            meta.get("clients", "-"),
            meta.get("client_cpu_count", "-"),
            "; ".join(
                "%s %s %.4f" % (row["knob"], label, row["arms"][label]["top_share"])
                for row in results
                for label in ("A", "B")
                if row["arms"][label].get("top_share") is not None and (row["knob"] != "A/A" or label == "A")
            )
            or "-",
        ),
        "",
        "Windows in the order run (requests/s, hit ratio):",
        "",
    ]
    for row in results:
        lines.append(
            "- %s %s vs %s: %s"
            % (
                row["knob"],
                row["A"],
                row["B"],
                " ".join("%s %.0f/%.4f" % (w["arm"], w["ops_s"] or 0, w["hit_ratio"] or 0) for w in row["windows"]),
            )
        )
    return "\n".join(lines) + "\n"


def write_csv(path, results):
    names = ["knob", "A", "B", "window", "arm", "seconds", *MEASURES[:3], "counts_agree", *MEASURES[3:]]
    names += ["warm_s", "warm_full"]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=names, extrasaction="ignore")
        writer.writeheader()
        for row in results:
            for index, window in enumerate(row["windows"]):
                writer.writerow(dict(window, knob=row["knob"], A=row["A"], B=row["B"], window=index + 1))


# ----------------------------------------------------------------------------------------------- command line
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--short", action="store_true", help="2 pairs of 10 s windows, 5 s settle: about 6 minutes")
    parser.add_argument("--pairs", type=int, default=None, help="pairs of windows per design, ABBA (default 4)")
    parser.add_argument("--window-s", type=float, default=None, help="a measured window, seconds (default 30)")
    parser.add_argument("--settle-s", type=float, default=None, help="warm-up before every window (default 10)")
    parser.add_argument(
        "--warm-max-s", type=float, default=None, help="longest warm-up waiting for the cache to fill (default 120)"
    )
    parser.add_argument("--keys", type=int, default=400000, help="keys in the working set")
    parser.add_argument("--value-bytes", type=int, default=1024, help="bytes of each value")
    parser.add_argument("--zipf-theta", type=float, default=0.99, help="the zipfian constant, in (0, 1)")
    parser.add_argument("--maxmemory", default="128mb", help="the reference maxmemory (Redis units: 64mb, 1gb)")
    parser.add_argument("--policy", default="allkeys-lru", help="the reference policy, of %s" % ", ".join(POLICIES))
    parser.add_argument(
        "--maxmemory-values", default=None, help="candidates, separated by commas (default half and twice --maxmemory)"
    )
    parser.add_argument(
        "--policies",
        default=None,
        help="candidates, separated by commas, of %s (default the allkeys ones but --policy); none: no design"
        % ", ".join(POLICIES),
    )
    parser.add_argument("--pipeline", type=int, default=32, help="requests per batch of a client process")
    parser.add_argument("--clients", type=int, default=None, help="client processes (default one per client CPU)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the key streams")
    parser.add_argument(
        "--server-cpus", default=None, help="the server's CPUs, taskset's syntax (default the upper half)"
    )
    parser.add_argument("--host", default=HOST, help="the server's loopback address")
    parser.add_argument("--port", type=int, default=PORT)
    parser.add_argument("--redis-server", default=REDIS_SERVER)
    parser.add_argument("--out", default=OUT, help="where the JSON, Markdown and log files go")
    parser.add_argument("--markdown", default=None, help="also write the table here")
    parser.add_argument("--csv", default=None, help="also write every window here")
    args = parser.parse_args(argv)
    short = args.short
    args.pairs = args.pairs if args.pairs is not None else (2 if short else 4)
    args.window_s = args.window_s if args.window_s is not None else (10.0 if short else 30.0)
    args.settle_s = args.settle_s if args.settle_s is not None else (5.0 if short else 10.0)
    args.warm_max_s = args.warm_max_s if args.warm_max_s is not None else (60.0 if short else 120.0)
    for name, value, low in (
        ("--pairs", args.pairs, 1),
        ("--keys", args.keys, 2),
        ("--value-bytes", args.value_bytes, 1),
        ("--pipeline", args.pipeline, 1),
        ("--port", args.port, 1),
    ):
        if value < low:
            parser.error("%s: %r is not allowed; it must be a whole number of at least %d" % (name, value, low))
    if args.clients is not None and args.clients < 1:
        parser.error("--clients: %r is not allowed; it must be a whole number of at least 1" % args.clients)
    for name, value in (
        ("--window-s", args.window_s),
        ("--settle-s", args.settle_s),
        ("--warm-max-s", args.warm_max_s),
    ):
        if not value > 0:
            parser.error("%s: %r is not allowed; it must be a number of seconds above 0" % (name, value))
    if not 0.0 < args.zipf_theta < 1.0:
        parser.error("--zipf-theta: %r is not allowed; it must lie between 0 and 1 (exclusive)" % args.zipf_theta)
    if args.policy not in POLICIES:
        parser.error("--policy: %r is not allowed; choose one of %s" % (args.policy, ", ".join(POLICIES)))
    try:
        reference = memory_bytes(args.maxmemory)
    except ValueError as exc:
        parser.error("--maxmemory: %s" % exc)
    if reference < 1048576:
        parser.error("--maxmemory: %r is not allowed; it must be at least 1mb (0 would be no limit)" % args.maxmemory)
    args.maxmemory = memory_text(reference)
    if args.policies is None:
        args.policies = [p for p in POLICIES if p.startswith("allkeys-") and p != args.policy]
    else:
        args.policies = [] if args.policies == "none" else [p.strip() for p in args.policies.split(",") if p.strip()]
    for policy in args.policies:
        if policy not in POLICIES:
            parser.error(
                "--policies: %r is not allowed; choose from %s, or none (keys here have no TTL, so the volatile-*"
                " policies would evict nothing)" % (policy, ", ".join(POLICIES))
            )
        if policy == args.policy:
            parser.error(
                "--policies: %r is the reference (--policy); the A/A design measures it against itself" % policy
            )
    if args.maxmemory_values is None:
        sizes = [reference // 2, reference * 2]
    elif args.maxmemory_values == "none":
        sizes = []
    else:
        sizes = []
        for text in (t.strip() for t in args.maxmemory_values.split(",") if t.strip()):
            try:
                sizes.append(memory_bytes(text))
            except ValueError as exc:
                parser.error("--maxmemory-values: %s" % exc)
    for size in sizes:
        if size < 1048576 or size == reference:
            parser.error(
                "--maxmemory-values: %r is not allowed; each must be at least 1mb and differ from the reference %s"
                % (memory_text(size), args.maxmemory)
            )
    args.maxmemory_values = [memory_text(size) for size in sizes]
    if args.server_cpus is not None:
        try:
            process.parse_cpus(args.server_cpus, field="--server-cpus")
        except CoreError as exc:
            parser.error(str(exc))
    return args


def _exit_on_signal(signum, _frame):
    raise SystemExit(128 + signum)  # the finally blocks stop the clients and the server


def main(argv=None):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_signal)
    client_cpus, server_cpus = cpu_sets(args.server_cpus)
    if client_cpus != os.sched_getaffinity(0):
        os.sched_setaffinity(0, client_cpus)  # this script and the clients it forks stay off the server's CPUs
    clients_count = args.clients or len(client_cpus)
    os.makedirs(args.out, exist_ok=True)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    base = os.path.join(args.out, "redis-memory-%s" % stamp)

    log = stamped_log(base + ".log")

    designs_run = plan(args)
    labels = designs.window_order(args.pairs, "abba")
    zetan = zeta(args.keys, args.zipf_theta)
    raw_mib = args.keys * (args.value_bytes + len(key_name(args.keys - 1))) / MIB
    workload = "cache-aside, zipfian %g, %s keys x %d B" % (args.zipf_theta, format(args.keys, ","), args.value_bytes)
    planned = len(designs_run) * len(labels) * (args.settle_s + args.window_s) + args.warm_max_s
    log(
        "%s: %d designs of %d windows (%g s warm-up + %g s measured each), about %.0f min or more"
        % (workload, len(designs_run), len(labels), args.settle_s, args.window_s, planned / 60.0)
    )
    server = Server(args.out, args.host, args.port, bench_password(), server_cpus, args.redis_server)
    results, meta = [], {}
    began = time.monotonic()
    try:
        pid = server.start(args.maxmemory, args.policy, log)
        shared = bool(server_cpus and client_cpus & server_cpus)
        log(
            "redis-server PID %d on %s, CPUs %s; clients: %d process(es) on CPUs %s%s"
            % (
                pid,
                server.marker,
                process.format_cpus(server_cpus),
                clients_count,
                process.format_cpus(client_cpus),
                " (shared with the server)" if shared else "",
            )
        )
        info = server.info()
        meta = {
            "workload": workload,
            "clients": clients_count,
            "client_cpu_count": len(client_cpus),
            "shared": shared,
            "lines": [
                "Redis %s on %s (PID %d, CPUs %s; no persistence), %s; settings %s."
                % (
                    info["version"],
                    server.marker,
                    pid,
                    process.format_cpus(server_cpus),
                    "its CPUs shared with the client side" if shared else "alone on them",
                    ", ".join("%s %s" % item for item in sorted(info["config"].items())),
                ),
                "Client side: %d process(es) on CPUs %s, %d requests per batch (GETs in one round trip, the misses'"
                " SETs in another), seed %d. Data set: %s keys x %d B = %.0f MiB of keys and values, %.1f times the"
                " reference maxmemory %s."
                % (
                    clients_count,
                    process.format_cpus(client_cpus),
                    args.pipeline,
                    args.seed,
                    format(args.keys, ","),
                    args.value_bytes,
                    raw_mib,
                    raw_mib * MIB / memory_bytes(args.maxmemory),
                    args.maxmemory,
                ),
                "Windows: %d pairs (ABBA) of %g s per design, each after a warm-up of at least %g s with its"
                " configuration, until the cache was full (at most %g s)."
                % (args.pairs, args.window_s, args.settle_s, args.warm_max_s),
            ],
            "server": dict(info, pid=pid, cpus=sorted(server_cpus or []), address=server.marker),
            "client_cpus": sorted(client_cpus),
        }
        params = dict(server.params)
        clients = Clients(clients_count, params, args.keys, args.zipf_theta, args.value_bytes, args.pipeline, args.seed)
        clients.start()
        log("cache-aside client PIDs: %s" % ", ".join(str(p) for p in clients.pids()))
        try:
            server.configure(designs_run[0]["configs"]["A"])
            warmed, full = server.warm(clients, args.settle_s, args.warm_max_s)
            log("filled the cache: %.0f s%s" % (warmed, "" if full else " (not full yet)"))
            for design in designs_run:
                records = run_design(design, labels, server, clients, args, log)
                row = dict(
                    {k: design[k] for k in ("knob", "A", "B", "configs")},
                    window_s=args.window_s,
                    windows=records,
                    **summarize_design(records, args.keys, args.zipf_theta, zetan),
                )
                results.append(row)
                with open(base + ".json", "w", encoding="utf-8") as handle:
                    json.dump({"args": vars(args), "meta": meta, "results": results}, handle, indent=1, default=str)
        finally:
            clients.stop()
    finally:
        how = server.stop()
        log("redis-server stopped: %s" % how)
    text = markdown(results, meta)
    text += "\nWall time: %.1f min.\n" % ((time.monotonic() - began) / 60.0)
    with open(base + ".md", "w", encoding="utf-8") as handle:
        handle.write(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write(text)
    if args.csv:
        write_csv(args.csv, results)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
