"""Availability during a rolling reconfiguration, on the lab: while the load driver reads and writes at the consistency
level the roll protects (--cl, ONE by default; YCSB workload A, fixed rate) and a probe writes numbered keys and
records every acknowledged one, run playbooks/rolling_reconfigure.yml with a change that needs a restart; then read
every acknowledged key back. Prints, side by side, the roll (batches from RF - CL) and, with --naive, the naive
switch of the papers (every node at once, aggressive): failed client operations, acknowledged writes lost,
throughput before and during, and T_r per node and for the whole roll.

    .venv/bin/python benchmarks/rolling_availability.py                       # Cassandra and Redis, the roll only
    .venv/bin/python benchmarks/rolling_availability.py --stores cassandra --naive
    .venv/bin/python benchmarks/rolling_availability.py --scenario kill       # kill a node mid-restart
    .venv/bin/python benchmarks/rolling_availability.py --scenario peer --stores cassandra --cl QUORUM
                                              # kill another node while the first one restarts

With --scenario peer the killed node is started again afterwards (playbooks/lab_up.yml) and the roll's lock
released, so the lab is whole for the next run; the row says how long after the kill the roll stopped.

The lab must be up (make lab). Each run toggles the setting between two values, so it can be repeated.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time

from _common import ROOT, use_collection

use_collection(integration=True)

import yaml
from ansible_run import run_playbook

from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.client import connect
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter
from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run as loadrun
from ansible_collections.tactician.nosql.plugins.module_utils.workload import loaddriver

PLAYBOOK = "playbooks/rolling_reconfigure.yml"
ROLL_CL = ["ONE"]  # the consistency level the roll protects (--cl)
# Settings that need a restart, toggled between two values on every run.
TOGGLES = {
    "cassandra": ("memtable_flush_writers", 2, 4),
    "redis": ("io-threads", 1, 2),
}


def inventory_facts(inventory):
    hosts = yaml.safe_load(open(os.path.join(inventory, "hosts.yml")))["all"]["children"]
    lab_dir = os.path.join(ROOT, ".lab")
    cassandra = [
        dict(name=k, address=v["cassandra_node_listen_address"]) for k, v in hosts["cassandra"]["hosts"].items()
    ]
    redis = [dict(name=k, address="127.0.0.1:%d" % v["redis_node_port"]) for k, v in hosts["redis"]["hosts"].items()]
    return lab_dir, cassandra, redis


class Probe(threading.Thread):
    """Writes numbered keys one after another (sync; Cassandra at the consistency level the roll protects, --cl)
    and records which ones the store acknowledged; reads them all back afterwards."""

    def __init__(self, store, conn, rate=100):
        super().__init__(daemon=True)
        self.store = store
        self.conn = conn
        self.rate = rate
        self.acked = []
        self.failed = 0
        self.errors = []
        self.stop_event = threading.Event()

    def run(self):
        write = self._writer()
        index = 0
        interval = 1.0 / self.rate
        while not self.stop_event.is_set():
            index += 1
            started = time.monotonic()
            try:
                write(index)
                self.acked.append(index)
            except Exception as exc:  # every failure counts, whatever the driver raises
                self.failed += 1
                if len(self.errors) < 5:
                    self.errors.append("%s: %s" % (type(exc).__name__, str(exc)[:200]))
            time.sleep(max(0.0, interval - (time.monotonic() - started)))

    def _writer(self):
        if self.store == "cassandra":
            cluster, session = connect(self.conn["cql"], hosts=self.conn["hosts"])
            self.cluster = cluster
            session.execute("CREATE TABLE IF NOT EXISTS tactician.ack_probe (id int PRIMARY KEY, run text)", timeout=60)
            session.execute("TRUNCATE tactician.ack_probe", timeout=120)
            statement = session.prepare("INSERT INTO tactician.ack_probe (id, run) VALUES (?, ?)")
            from cassandra import ConsistencyLevel

            statement.consistency_level = getattr(ConsistencyLevel, ROLL_CL[0])
            self.session = session
            return lambda i: session.execute(statement, (i, "probe"), timeout=10)
        import redis as redis_lib

        host, port = redis_adapter.split_node(self.conn["hosts"][0])
        client = redis_lib.RedisCluster(
            host=host, port=port, username=self.conn["user"], password=self.conn["password"], decode_responses=True
        )
        self.client = client
        return lambda i: client.set("ack_probe:%d" % i, "probe")

    def missing(self):
        """Acknowledged keys that do not read back (Cassandra at CL ALL)."""
        if self.store == "cassandra":
            from cassandra import ConsistencyLevel
            from cassandra.query import SimpleStatement

            found = set()
            query = SimpleStatement("SELECT id FROM tactician.ack_probe", consistency_level=ConsistencyLevel.ALL)
            for row in self.session.execute(query, timeout=120):
                found.add(row.id)
            self.cluster.shutdown()
            return [i for i in self.acked if i not in found]
        missing = []
        for start in range(0, len(self.acked), 500):
            chunk = self.acked[start : start + 500]
            values = self.client.mget_nonatomic(["ack_probe:%d" % i for i in chunk])
            missing.extend(i for i, v in zip(chunk, values, strict=True) if v != "probe")
        self.client.delete(*["ack_probe:%d" % i for i in self.acked[:1]])
        self.client.close()
        return missing


class DownWatcher(threading.Thread):
    """Polls every node's client port; records the most nodes down at once."""

    def __init__(self, addresses):
        super().__init__(daemon=True)
        self.addresses = addresses
        self.max_down = 0
        self.down_sets = []
        self.stop_event = threading.Event()

    def run(self):
        while not self.stop_event.is_set():
            down = [a for a in self.addresses if not _port_open(*a)]
            if len(down) > self.max_down:
                self.max_down = len(down)
            if down and (not self.down_sets or self.down_sets[-1] != down):
                self.down_sets.append(down)
            time.sleep(0.25)


def _port_open(host, port):
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def current_value(store, nodes, conn, name):
    if store == "cassandra":
        cluster, session = connect(conn["cql"], hosts=[nodes[0]["address"]], only_these_hosts=True)
        try:
            row = session.execute("SELECT value FROM system_views.settings WHERE name = %s", [name]).one()
            return int(row.value)
        finally:
            cluster.shutdown()
    client = redis_adapter.client(
        dict(login_user=conn["user"], login_password=conn["password"]), *redis_adapter.split_node(nodes[0]["address"])
    )
    try:
        return int(client.config_get(name)[name])
    finally:
        client.close()


def roll(store, inventory, settings, extra=None):
    extra_vars = dict(tactician_store=store, tactician_settings=settings, **(extra or {}))
    extra_vars.setdefault("tactician_consistency_level", ROLL_CL[0])
    started = time.monotonic()
    result = run_playbook(PLAYBOOK, inventory, extra_vars)
    wall = time.monotonic() - started
    per_node = {}
    for task, host, res in result.results:
        if task and task.startswith("Reconfigure the node") and not res.get("skipped"):
            per_node[host] = dict(
                T_r=res.get("downtime"),
                steps=res.get("steps"),
                timings=res.get("timings"),
                failed=bool(res.get("failed")),
                msg=res.get("msg"),
            )
    return result, wall, per_node


def run_case(args, store, nodes, conn, label, extra=None, kill_node=None, kill_peer=None):
    name, low, high = TOGGLES[store]
    before = current_value(store, nodes, conn, name)
    wanted = high if before == low else low
    driver_out = {}
    driver_params = dict(
        store=store,
        driver_home=os.path.join(ROOT, ".lab", "load-driver"),
        hosts=conn["hosts"],
        login_user=conn["user"],
        login_password=conn["password"],
        keyspace="tactician",
        workload="a",
        phases=["run"],
        threads=8,
        processes=1,
        target=args.rate[store],
        status_interval=2,
        consistency=ROLL_CL[0],
        max_seconds=args.duration[store],
        properties={"recordcount": args.records, "operationcount": args.rate[store] * args.duration[store]},
    )
    driver = threading.Thread(
        target=lambda: driver_out.update(result=loadrun.execute(driver_params, loadrun.plan(driver_params))[0])
    )
    probe = Probe(store, conn)
    watcher = DownWatcher(
        [(n["address"].split(":")[0], int(n["address"].split(":")[1]) if ":" in n["address"] else 9042) for n in nodes]
    )
    driver.start()
    probe.start()
    watcher.start()
    time.sleep(args.warmup)
    roll_start = time.time()
    killer = None
    if kill_node:
        killer = threading.Thread(target=kill_mid_restart, args=(kill_node,), daemon=True)
        killer.start()
    if kill_peer:
        killer = threading.Thread(target=kill_peer_during_restart, args=kill_peer, daemon=True)
        killer.start()
    result, wall, per_node = roll(store, args.inventory, {name: wanted}, extra)
    roll_end = time.time()
    if kill_peer:
        # The node killed must be back before the acknowledged keys are read; the lock of the stopped roll goes.
        killer.join(timeout=60)
        up = run_playbook("playbooks/lab_up.yml", args.inventory)
        if up.returncode != 0:
            print("lab_up did not bring the killed node back:\n" + up.stderr[-1500:], file=sys.stderr)
        run_playbook(
            os.path.join(ROOT, "tests", "integration", "playbooks", "release_lock.yml"),
            args.inventory,
            dict(lock_name=store),
        )
    time.sleep(args.cooldown)
    probe.stop_event.set()
    probe.join()
    watcher.stop_event.set()
    watcher.join()
    missing = probe.missing()
    driver.join()
    load = driver_out.get("result") or {}
    status = (load.get("status_by_process") or [[]])[0]
    before_rate = during_rate = None
    covered = 0.0
    if status:
        # The driver may stop before a slow roll ends (a busy machine): measure the part of the roll it covered.
        driven_to = min(roll_end, status[-1][0])
        covered = max(0.0, driven_to - roll_start) / max(roll_end - roll_start, 1e-9)
        # Before: the last 15 s of the warm-up, after the client's first status line (its JVM's own warm-up).
        before_rate = loaddriver.ops_between(status, max(roll_start - BEFORE_S, status[0][0]), roll_start)
        during_rate = loaddriver.ops_between(status, roll_start, driven_to)
    p99_points = load.get("p99_at") or []
    # The worst 10 s p99 of the intervals that end in the window (status lines every 10 s).
    p99_before = loaddriver.worst_p99(p99_points, roll_start - BEFORE_S - 5, roll_start)
    p99_during = loaddriver.worst_p99(p99_points, roll_start, roll_end + 10)
    after = current_value(store, nodes, conn, name)
    row = dict(
        store=store,
        case=label,
        cl=ROLL_CL[0],
        setting="%s %s -> %s" % (name, before, wanted),
        now=after,
        rc=result.returncode,
        roll_s=round(wall, 1),
        per_node=per_node,
        driver_ops=round((load.get("throughput") or 0) * (load.get("runtime_ms") or 0) / 1000.0),
        driver_failed=load.get("failed_total"),
        driver_failed_by_op=load.get("failed"),
        driver_errors=load.get("client_errors"),
        driver_ends_after_roll=(load.get("runtime_ms") or 0) / 1000.0 > args.warmup + wall,
        rate_before=before_rate,
        rate_during=during_rate,
        p99_before_ms=p99_before,
        p99_during_ms=p99_during,
        driver_covered=covered,
        probe_acked=len(probe.acked),
        probe_failed=probe.failed,
        probe_errors=probe.errors,
        probe_missing=len(missing),
        max_nodes_down=watcher.max_down,
        down_sets=watcher.down_sets[:12],
    )
    if result.returncode != 0:
        row["playbook_tail"] = result.stderr[-1500:]
    if kill_peer:
        row["killed_pid"] = kill_peer[1].get("killed")
        row["seconds_kill_to_stop"] = (
            round(roll_end - kill_peer[1]["killed_at"], 1) if kill_peer[1].get("killed_at") else None
        )
    return row


BEFORE_S = 15.0
"""The window before the roll that rates and latencies are compared with."""


def kill_mid_restart(node):
    """Wait until the node's process is replaced (the restart started a new one), let it boot a few seconds,
    then SIGKILL it: a node that dies in the middle of its restart."""
    pid_file = node["pid_file"]
    first = _read_pid(pid_file)
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        pid = _read_pid(pid_file)
        if pid and pid != first:
            time.sleep(4)
            try:
                os.kill(pid, signal.SIGKILL)
                node["killed"] = pid
            except ProcessLookupError:
                pass
            return
        time.sleep(0.2)


def kill_peer_during_restart(first, peer):
    """Wait until the first node's process is gone (the roll drained and stopped it), then SIGKILL another node:
    a peer that fails while the roll has one node down."""
    old = _read_pid(first["pid_file"])
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        if old is None or not _pid_alive(old):
            time.sleep(3)
            pid = _read_pid(peer["pid_file"])
            try:
                os.kill(pid, signal.SIGKILL)
                peer.update(killed=pid, killed_at=time.time())
            except (ProcessLookupError, TypeError):
                pass
            return
        time.sleep(0.2)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_pid(path):
    try:
        with open(path) as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--inventory", default=os.path.join(ROOT, "inventories", "lab"))
    parser.add_argument("--stores", nargs="+", default=["cassandra", "redis"], choices=["cassandra", "redis"])
    parser.add_argument("--scenario", choices=["roll", "kill", "peer"], default="roll")
    parser.add_argument("--naive", action="store_true", help="also run the naive switch (all nodes at once)")
    parser.add_argument(
        "--cl",
        default="ONE",
        type=str.upper,
        choices=["ONE", "TWO", "QUORUM", "LOCAL_QUORUM"],
        help="consistency level of the clients, which the roll must keep available (its batch size)",
    )
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--warmup", type=float, default=30.0, help="seconds of load before the roll starts")
    parser.add_argument("--cooldown", type=float, default=5.0)
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument(
        "--seconds",
        type=int,
        nargs=2,
        default=[420, 75],
        metavar=("CASSANDRA", "REDIS"),
        help="how long the load driver runs (it must outlast the roll)",
    )
    args = parser.parse_args()
    args.rate = {"cassandra": 1000, "redis": 2000}
    args.duration = {"cassandra": args.seconds[0], "redis": args.seconds[1]}
    args.inventory = os.path.abspath(args.inventory)
    ROLL_CL[0] = args.cl
    lab_dir, cassandra_nodes, redis_nodes = inventory_facts(args.inventory)
    with open(os.path.join(lab_dir, "secrets", "redis-password")) as handle:
        redis_password = handle.read().split()[0]
    rows = []
    for store in args.stores:
        if store == "cassandra":
            nodes = cassandra_nodes
            with open(os.path.join(lab_dir, "secrets", "cassandra-password")) as handle:
                cassandra_password = handle.read().split()[0]
            cql = dict(login_user="tactician", login_password=cassandra_password, login_port=9042)
            conn = dict(hosts=[n["address"] for n in nodes], user="tactician", password=cassandra_password, cql=cql)
        else:
            nodes = redis_nodes
            conn = dict(hosts=[n["address"] for n in nodes[:3]], user="tactician", password=redis_password)
        load = dict(
            store=store,
            driver_home=os.path.join(lab_dir, "load-driver"),
            hosts=conn["hosts"],
            login_user=conn["user"],
            login_password=conn["password"],
            keyspace="tactician",
            workload="a",
            phases=["load"],
            reload=True,
            threads=8,
            processes=1,
            properties={"recordcount": args.records},
        )
        loadrun.execute(load, loadrun.plan(load))

        def with_pid_file(node, store=store):
            return dict(
                node,
                pid_file=os.path.join(
                    lab_dir,
                    store,
                    node["name"] if store == "cassandra" else node["address"].split(":")[1],
                    "cassandra.pid" if store == "cassandra" else "redis.pid",
                ),
            )

        if args.scenario == "kill":
            victim = with_pid_file(nodes[1])
            rows.append(run_case(args, store, nodes, conn, "kill %s mid-restart" % victim["name"], kill_node=victim))
            rows[-1]["killed_pid"] = victim.get("killed")
        elif args.scenario == "peer":
            first, peer = with_pid_file(nodes[0]), with_pid_file(nodes[1])
            label = "kill %s while %s restarts" % (peer["name"], first["name"])
            rows.append(run_case(args, store, nodes, conn, label, kill_peer=(first, peer)))
        else:
            rows.append(run_case(args, store, nodes, conn, "rolling (R = RF - CL)"))
            if args.naive:
                extra = dict(tactician_aggressive=True, tactician_aggressive_batch=len(nodes))
                rows.append(run_case(args, store, nodes, conn, "naive (all at once)", extra))
        print(json.dumps(rows[-1], indent=1, default=str))
        sys.stdout.flush()
    print()
    print(
        "| store | case | setting | playbook rc | roll s | T_r per node s | driver ops | driver failed | "
        "ops/s before | ops/s during | ratio | p99 ms before / during (worst 10 s) | roll under load | probe acked | "
        "probe failed | acked lost | max nodes down |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        t_r = ", ".join(
            "%s %s" % (h, "-" if v["T_r"] is None else "%.1f" % v["T_r"]) for h, v in row["per_node"].items()
        )
        ratio = (row["rate_during"] / row["rate_before"]) if row["rate_before"] and row["rate_during"] else None
        print(
            "| %s | %s | %s | %s | %.1f | %s | %d | %s | %s | %s | %s | %s / %s | %.0f %% | %d | %d | %d | %d |"
            % (
                row["store"],
                row["case"],
                row["setting"],
                row["rc"],
                row["roll_s"],
                t_r,
                row["driver_ops"],
                row["driver_failed"],
                _f(row["rate_before"]),
                _f(row["rate_during"]),
                _f(ratio, 3),
                _f(row.get("p99_before_ms")),
                _f(row.get("p99_during_ms")),
                100.0 * row.get("driver_covered", 0.0),
                row["probe_acked"],
                row["probe_failed"],
                row["probe_missing"],
                row["max_nodes_down"],
            )
        )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1, default=str)
    return verdict(rows)


def verdict(rows):
    """The exit code: 1 when the roll of a plain case failed (a killed node or peer is meant to stop the roll) or
    an acknowledged write was lost in any case, with what went wrong on stderr; else 0."""
    problems = []
    for row in rows:
        if row["case"].startswith("rolling") and row["rc"] != 0:
            tail = (row.get("playbook_tail") or "").strip().splitlines()[-3:]
            problems.append("%s %s: the roll failed (rc %s): %s" % (row["store"], row["case"], row["rc"], tail))
        if row.get("probe_missing"):
            problems.append("%s %s: %d acknowledged writes lost" % (row["store"], row["case"], row["probe_missing"]))
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


def _f(value, digits=1):
    return "n/a" if value is None else ("%." + str(digits) + "f") % value


if __name__ == "__main__":
    sys.exit(main())
