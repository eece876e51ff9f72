"""Rolls that watch the whole cluster, against three real Cassandra 5.0 nodes at RF 3 (docs/rolling.md, "Guards"):
a peer killed while a node restarts, a batch of two nodes restarted at once then a node down before the next batch,
a latency threshold the cluster cannot meet.
A client writes at QUORUM throughout; every write it saw acknowledged must read back at the end.

Where a test kills a node on purpose while another is down for its restart, a write acknowledged by the killed node
and the third may be gone from the killed node: Cassandra's periodic commit log (commitlog_sync_period, 10 s) syncs
after it answers. The write is then on one replica only, which a read at QUORUM may not consult; a read at ALL with
the cluster whole does, and so tells a write lost from the cluster from one that waits for repair."""

from __future__ import annotations

import glob
import json
import os
import signal
import threading
import time

import pytest
from ansible_run import ROOT, run_playbook

from ansible_collections.tactician.nosql.plugins.module_utils.core import process

pytestmark = pytest.mark.integration

INVENTORY = os.path.join(ROOT, "tests", "integration", "inventory", "quorum_cluster")
LAB_DIR = os.path.join(ROOT, ".lab", "test-quorum")
ROLLING = "playbooks/rolling_reconfigure.yml"
NODES = {"quorum-cassandra%d" % n: "127.0.0.%d" % (40 + n) for n in (1, 2, 3)}
KEYSPACE = "tactician_quorum"
STEP = "Reconfigure the node (live where possible, else drain, stop, rewrite, start, rejoin, verify)"


def _node_dir(host):
    return os.path.join(LAB_DIR, "cassandra", host)


def _pid(host):
    return process.read_pid(os.path.join(_node_dir(host), "cassandra.pid"))


def _starts(host):
    """How many times the node's JVM started (one line per start in its system.log)."""
    count = 0
    for path in glob.glob(os.path.join(_node_dir(host), "logs", "system*.log")):
        with open(path, errors="replace") as handle:
            count += sum(1 for line in handle if "JVM vendor/version" in line)
    return count


def _password():
    with open(os.path.join(LAB_DIR, "secrets", "cassandra-password")) as handle:
        return handle.read().split()[0]


def _config(host, key):
    with open(os.path.join(_node_dir(host), "conf", "cassandra.yaml")) as handle:
        for line in handle:
            if line.startswith(key + ":"):
                return line.split(":", 1)[1].strip()
    return None


def _lock_file():
    return os.path.join(LAB_DIR, "locks", "cassandra.lock")


def _release_lock():
    if os.path.exists(_lock_file()):
        os.unlink(_lock_file())


def _session():
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import Cluster

    cluster = Cluster(
        list(NODES.values()), auth_provider=PlainTextAuthProvider("tactician", _password()), connect_timeout=10
    )
    return cluster, cluster.connect()


class QuorumWriter:
    """Writes k = v at QUORUM, one row at a time, until stopped; keeps the keys it saw acknowledged."""

    def __init__(self, table):
        self.table = table
        self.acked, self.failed = {}, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        from cassandra import ConsistencyLevel
        from cassandra.query import SimpleStatement

        self.cluster, self.session = _session()
        self.session.execute(
            "CREATE TABLE IF NOT EXISTS %s.%s (k int PRIMARY KEY, v int)" % (KEYSPACE, self.table), timeout=60
        )
        self.insert = SimpleStatement(
            "INSERT INTO %s.%s (k, v) VALUES (%%s, %%s)" % (KEYSPACE, self.table),
            consistency_level=ConsistencyLevel.QUORUM,
        )
        self.thread.start()
        return self

    def _run(self):
        key = 0
        while not self.stop.is_set():
            key += 1
            try:
                self.session.execute(self.insert, (key, key * 7), timeout=5)
                self.acked[key] = key * 7
            except Exception:  # unavailable, timeout: not acknowledged, so not promised
                self.failed += 1
            time.sleep(0.02)

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=30)
        self.cluster.shutdown()
        return False

    def missing(self, consistency="QUORUM"):
        """The acknowledged keys that do not read back at `consistency` (with the cluster whole again)."""
        from cassandra import ConsistencyLevel
        from cassandra.query import SimpleStatement

        cluster, session = _session()
        try:
            select = SimpleStatement(
                "SELECT k, v FROM %s.%s" % (KEYSPACE, self.table),
                consistency_level=getattr(ConsistencyLevel, consistency),
            )
            found = {row.k: row.v for row in session.execute(select, timeout=60)}
        finally:
            cluster.shutdown()
        return {k: v for k, v in self.acked.items() if found.get(k) != v}


def _bring_back():
    """Start whatever node is down (the lab role starts a stopped node and leaves running ones alone)."""
    up = run_playbook(os.path.join(ROOT, "tests", "integration", "playbooks", "cassandra_nodes_up.yml"), INVENTORY)
    assert up.returncode == 0, up.stderr
    return up


@pytest.fixture(scope="module")
def quorum():
    _release_lock()
    up = run_playbook("playbooks/lab_up.yml", INVENTORY)
    try:
        assert up.returncode == 0, up.stderr
        yield up
    finally:
        down = run_playbook("playbooks/lab_down.yml", INVENTORY)
        _release_lock()
        assert down.returncode == 0, down.stderr
        assert all(_pid(host) is None or not process.pid_alive(_pid(host)) for host in NODES)


@pytest.fixture(autouse=True)
def _lock_given_back(quorum):
    """Each test starts on a whole cluster with no lock, whatever the test before it left behind."""
    _release_lock()
    if not all(_pid(host) and process.pid_alive(_pid(host)) for host in NODES):
        _bring_back()
    yield
    _release_lock()


def _flush_writers():
    """A memtable_flush_writers (a setting that needs a restart) no node has yet: every node's step restarts it."""
    current = {_config(host, "memtable_flush_writers") for host in NODES}
    return next(value for value in (3, 4, 5, 6) if str(value) not in current)


def test_a_peer_killed_during_a_restart_stops_the_roll_at_once_and_loses_nothing(quorum, record_property):
    first, peer = "quorum-cassandra1", "quorum-cassandra2"
    wanted = _flush_writers()
    starts = {host: _starts(host) for host in NODES}
    old_pid = _pid(first)
    killed = {}

    def kill_the_peer_while_the_first_restarts():
        deadline = time.monotonic() + 600
        while process.pid_alive(old_pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(3.0)  # the first node is down (drained, stopped) and about to start
        os.kill(_pid(peer), signal.SIGKILL)
        killed["at"] = time.monotonic()

    with QuorumWriter("acked_peer_down") as writer:
        killer = threading.Thread(target=kill_the_peer_while_the_first_restarts, daemon=True)
        killer.start()
        roll = run_playbook(
            ROLLING,
            INVENTORY,
            dict(
                tactician_store="cassandra",
                tactician_consistency_level="QUORUM",
                tactician_settings={"memtable_flush_writers": wanted},
            ),
        )
        ended = time.monotonic()
        killer.join(timeout=60)
        assert "at" in killed, "the first node was never stopped: %s" % roll.stderr
        record_property("seconds_from_kill_to_stop", round(ended - killed["at"], 1))
        assert roll.returncode != 0
        assert "127.0.0.42 went down" in roll.stderr and "no further node is touched" in roll.stderr, roll.stderr
        step = roll.task(STEP, first)
        # Stopped for the peer, not at the rejoin timeout; the node left running, never restarted a second time.
        assert step["stopped"] == "peer down" and "127.0.0.42" in step["peer_down"], step
        assert "rollback" not in step and step["left"] == "running on the new configuration"
        assert _starts(first) == starts[first] + 1 and _starts("quorum-cassandra3") == starts["quorum-cassandra3"]
        assert process.pid_alive(_pid(first)) and _config(first, "memtable_flush_writers") == str(wanted)
        with open(_lock_file()) as handle:
            record = json.load(handle)["stopped"]
        assert record["node"] == first and "127.0.0.42 went down" in record["reason"]
        assert record["nodes"][peer]["seen"] != "UN" and record["nodes"][first]["step"].startswith("stopped here")
        assert "rolling_lock" in record["continue"]
        _bring_back()
    # Read at ALL: the peer was killed, so its unsynced commit log tail is gone (see the module's docstring).
    assert writer.acked and writer.missing("ALL") == {}
    record_property("writes_acknowledged", len(writer.acked))
    record_property("writes_refused", writer.failed)


def test_a_latency_threshold_the_cluster_cannot_meet_waits_then_stops(quorum):
    """A p99 threshold no cluster meets: the first node's step waits guard.max_wait_s (10 s, polled every 5 s),
    then stops the roll naming the latency, the node untouched; nothing restarts, the lock is given back, every
    acknowledged write reads back."""
    pids = {host: _pid(host) for host in NODES}
    wanted = _flush_writers()
    with QuorumWriter("acked_guard") as writer:
        time.sleep(5.0)  # requests for the coordinators' latency to show
        roll = run_playbook(
            ROLLING,
            INVENTORY,
            dict(
                tactician_store="cassandra",
                tactician_consistency_level="QUORUM",
                tactician_rolling_p99_ms=0.001,
                tactician_rolling_guard_wait_s=10,
                tactician_rolling_guard_interval_s=5,
                tactician_rolling_min_ops_per_s=1,  # the test client's few requests per second are judged
                tactician_settings={"memtable_flush_writers": wanted},
            ),
        )
    assert roll.returncode != 0
    assert "p99 latency" in roll.stderr and "above 0.0 ms" in roll.stderr, roll.stderr
    assert "longer than the 10 s allowed (guard.max_wait_s)" in roll.stderr
    step = roll.task(STEP, "quorum-cassandra1")
    assert step["stopped"] == "client guard" and step["touched"] is False
    assert step["guard"]["signals"]["p99_ms"] > 0.001 and step["guard"]["waited"] >= 10
    assert {host: _pid(host) for host in NODES} == pids  # nothing restarted
    assert not os.path.exists(_lock_file())  # the cluster is whole: the lock is given back
    assert writer.acked and writer.missing() == {}


def test_a_batch_of_two_restarts_together_then_a_node_down_stops_the_next_batch(quorum):
    """At CL ONE on RF 3 the batch rule takes R = 3 - 1 = 2 nodes at a time: the first batch restarts two nodes at
    once, each step leaving the other node of its batch out of its watch (the rule lets it be down), and both come
    back on the setting. Then a node of that batch is killed in the pause before the second batch (after the roll's
    first health check): the third node's check before its stop sees the cluster not whole and stops the roll, that
    node untouched, naming the node down. The test runs last: the node it kills is started again by the next
    test's fixture, or stopped with the rest by the module's lab_down, not by this test."""
    first, second, third = "quorum-cassandra1", "quorum-cassandra2", "quorum-cassandra3"
    wanted = _flush_writers()
    pids = {host: _pid(host) for host in NODES}
    before = _config(third, "memtable_flush_writers")
    settles = []

    def on_event(event):
        # The pause before the second batch: the first batch is done, the roll's first health check long past.
        data = event.get("event_data", {})
        if event.get("event") == "playbook_on_task_start" and data.get("task", "").startswith("Let the cluster"):
            settles.append(time.monotonic())
            if len(settles) == 2:
                os.kill(_pid(first), signal.SIGKILL)

    roll = run_playbook(
        ROLLING,
        INVENTORY,
        dict(
            tactician_store="cassandra",
            tactician_consistency_level="ONE",
            tactician_rolling_pause_s=15,
            tactician_settings={"memtable_flush_writers": wanted},
        ),
        on_event=on_event,
    )
    assert len(settles) == 2 and roll.returncode != 0, (settles, roll.returncode, roll.stderr)
    # The first batch: both nodes restarted on the setting, neither stopped for the other.
    for host in (first, second):
        done = roll.task(STEP, host)
        assert not done.get("failed") and "stopped" not in done, done
        assert done["changed"] and done["steps"][-1] == "verify", done
        assert _config(host, "memtable_flush_writers") == str(wanted)
    assert _pid(second) != pids[second]
    # The second batch: stopped before its stop, for the node killed outside it.
    assert "before stopping 127.0.0.43:9042: the cluster is not whole" in roll.stderr, roll.stderr
    assert "127.0.0.41" in roll.stderr and "127.0.0.43:9042 was not touched" in roll.stderr
    step = roll.task(STEP, third)
    assert step["stopped"] == "cluster not ready" and step["touched"] is False
    assert _pid(third) == pids[third] and _config(third, "memtable_flush_writers") == before
    _release_lock()
