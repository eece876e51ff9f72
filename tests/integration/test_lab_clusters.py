"""Integration tests against real servers: one Cassandra 5.0 node and a 3+3 Redis cluster, brought up and
torn down by the collection's own lab playbooks with the test inventory."""

from __future__ import annotations

import glob
import os

import pytest
from ansible_run import ROOT, run_playbook
from background_load import background_load

from ansible_collections.tactician.nosql.plugins.module_utils.apply import lock_stores
from ansible_collections.tactician.nosql.plugins.module_utils.apply.lock import LockError, RollingLock
from ansible_collections.tactician.nosql.plugins.module_utils.core import cgroups, process
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql

pytestmark = pytest.mark.integration

INVENTORY = os.path.join(ROOT, "tests", "integration", "inventory", "test_cluster")
LAB_DIR = os.path.join(ROOT, ".lab", "test")
CASSANDRA_HOME = os.path.join(ROOT, ".lab", "cassandra-5.0.9")
PLAYBOOKS = os.path.join(ROOT, "tests", "integration", "playbooks")
REDIS_NODES = ["127.0.0.1:%d" % port for port in range(6391, 6397)]
MEMORY_GROUP = "cassandra-127.0.0.11-9042"
# The test inventory's monitoring stack (group monitoring): Prometheus, node exporter, Redis exporter, and the
# Cassandra node's JMX exporter agent on the node's own address.
PROMETHEUS = "http://127.0.0.1:9391"
MONITORING_PORTS = [("127.0.0.1", 9391), ("127.0.0.1", 9401), ("127.0.0.1", 9122), ("127.0.0.11", 9501)]
MONGODB = ("127.0.0.1", 27037)  # the inventory's mongodb group: FerretDB (role ferretdb_node)
CASSANDRA_LOGIN = dict(login_hosts=["127.0.0.11"], login_user="cassandra", login_password="cassandra")


def _pid_files():
    return (
        glob.glob(os.path.join(LAB_DIR, "cassandra", "*", "cassandra.pid"))
        + glob.glob(os.path.join(LAB_DIR, "redis", "*", "redis.pid"))
        + _monitoring_pid_files()
    )


def _monitoring_pid_files():
    """Prometheus's and the exporters' PID files (roles prometheus_server, prometheus_*_exporter)."""
    return glob.glob(os.path.join(LAB_DIR, "monitoring", "*", "*.pid"))


def _running():
    return [path for path in _pid_files() if process.running_pid(path)]


def _redis_pid_files():
    return sorted(glob.glob(os.path.join(LAB_DIR, "redis", "*", "redis.pid")))


def _redis_password():
    with open(os.path.join(LAB_DIR, "secrets", "redis-password")) as handle:
        return handle.read().split()[0]


@pytest.fixture(scope="module")
def clusters():
    up = run_playbook("playbooks/lab_up.yml", INVENTORY)
    try:
        assert up.returncode == 0, up.stderr + str(up.data)[-4000:]
        yield up
    finally:
        down = run_playbook("playbooks/lab_down.yml", INVENTORY)
        assert down.returncode == 0, down.stderr + str(down.data)[-4000:]
        assert _running() == [], "processes left running after lab_down: %s" % _running()
        assert len(_monitoring_pid_files()) == 0, "lab_down left monitoring PID files: %s" % _monitoring_pid_files()
        listening = [port for host, port in MONITORING_PORTS if process.port_open(host, port)]
        assert listening == [], "monitoring ports still answer after lab_down: %s" % listening
        assert not process.port_open(*MONGODB), "FerretDB still answers after lab_down"
        assert not cgroups.MemoryGroup(MEMORY_GROUP).exists(), "the node's memory group is left after lab_down"


def test_lab_up_reports_healthy_clusters(clusters):
    cassandra = clusters.task("Ask every Cassandra node how it sees the ring")
    redis = clusters.task("Ask every Redis node how it sees the cluster")
    assert cassandra["healthy"], cassandra["problems"]
    assert cassandra["views"]["127.0.0.11"]["status"] == {"127.0.0.11": "UN"}
    assert redis["healthy"], redis["problems"]
    roles = sorted(view["role"] for view in redis["views"].values())
    assert roles == ["master"] * 3 + ["slave"] * 3
    assert all(view["cluster_state"] == "ok" for view in redis["views"].values())
    from pymongo import MongoClient

    client = MongoClient(*MONGODB, directConnection=True, serverSelectionTimeoutMS=10000)
    try:
        assert client.admin.command("hello")["isWritablePrimary"]
    finally:
        client.close()


def test_cassandra_node_runs_in_its_memory_group(clusters):
    pid = process.read_pid(os.path.join(LAB_DIR, "cassandra", "test-cassandra1", "cassandra.pid"))
    group = cgroups.MemoryGroup(MEMORY_GROUP)
    stats = group.stats()
    assert pid in group.pids()
    assert stats["limit"] == 1536 << 20
    # The JVM and its page cache are charged to the group, and stay under its limit.
    assert 0 < stats["usage"] <= stats["limit"]
    assert stats["anon"] > 256 << 20


def test_lab_up_check_mode_changes_nothing(clusters):
    check = run_playbook("playbooks/lab_up.yml", INVENTORY, check=True)
    assert check.returncode == 0, check.stderr
    assert check.changed() == 0, check.stats


def _prometheus(path, **query):
    """GET a Prometheus API path on the test inventory's server (no proxy); its data."""
    import json
    import urllib.parse
    import urllib.request

    url = PROMETHEUS + path + ("?" + urllib.parse.urlencode(query) if query else "")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]


def _eventually(probe, what, timeout=180):
    """probe()'s first truthy value; Prometheus scrapes every 5 s, so a new series shows after a scrape or two. The
    deadline only bounds the wait on a stuck stack: it is no assertion on how fast anything is."""
    import time

    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(2)
    raise AssertionError("%s: not seen within %d s; last answer: %r" % (what, timeout, last))


def test_prometheus_scrapes_every_node_with_its_labels(clusters):
    def all_up():
        targets = _prometheus("/api/v1/targets")["activeTargets"]
        return targets if len(targets) == 8 and all(t["health"] == "up" for t in targets) else None

    targets = _eventually(all_up, "every target up")
    labels = sorted(
        (
            t["labels"]["job"],
            t["labels"].get("cluster"),
            t["labels"].get("node") or t["labels"]["machine"],
            t["scrapeUrl"],
        )
        for t in targets
    )
    assert labels[0] == ("cassandra", "cassandra", "127.0.0.11:9042", "http://127.0.0.11:9501/metrics")
    assert labels[1] == ("node", None, "localhost", "http://127.0.0.1:9401/metrics")
    assert labels[2:] == [
        ("redis", "redis", node, "http://127.0.0.1:9122/scrape?target=redis%3A%2F%2F" + node.replace(":", "%3A"))
        for node in REDIS_NODES
    ]


def test_prometheus_holds_the_stores_and_the_machines_series(clusters):
    cluster, session = cql.connect(dict(CASSANDRA_LOGIN))
    try:
        session.execute(
            "CREATE KEYSPACE IF NOT EXISTS it_monitoring WITH replication = {'class': 'SimpleStrategy', "
            "'replication_factor': 1}"
        )
        session.execute("CREATE TABLE IF NOT EXISTS it_monitoring.t (k int PRIMARY KEY, v text)")
        for key in range(20):
            session.execute("INSERT INTO it_monitoring.t (k, v) VALUES (%s, 'v')", (key,))
            session.execute("SELECT v FROM it_monitoring.t WHERE k = %s", (key,))

        def series(query):
            return lambda: _prometheus("/api/v1/query", query=query)["result"]

        requests = _eventually(
            series('tactician_cassandra_coordinator_requests_total{keyspace="it_monitoring",table="t"}'),
            "Cassandra's coordinator requests",
        )
        by_op = {r["metric"]["op"]: r["metric"] for r in requests}
        assert {"read", "write"} <= set(by_op)
        assert by_op["read"]["node"] == "127.0.0.11:9042" and by_op["read"]["cluster"] == "cassandra"
        assert _eventually(series('process_cpu_seconds_total{job="cassandra"}'), "the Cassandra node's CPU")
        assert not _prometheus("/api/v1/query", query='jvm_threads_current{job="cassandra"}')["result"]

        commands = _eventually(series("redis_commands_total"), "Redis command counts")
        assert {r["metric"]["node"] for r in commands} == set(REDIS_NODES)
        assert all(r["metric"]["cluster"] == "redis" and r["metric"]["cmd"] for r in commands)

        cpu = _eventually(series('node_cpu_seconds_total{mode="idle"}'), "the machine's CPU")
        assert {r["metric"]["machine"] for r in cpu} == {"localhost"}
    finally:
        session.execute("DROP KEYSPACE IF EXISTS it_monitoring")
        cluster.shutdown()


def test_keyspace_check_run_again_then_server(clusters):
    name = "it_keyspace"
    params = dict(CASSANDRA_LOGIN)
    cluster, session = cql.connect(params)
    try:
        session.execute("DROP KEYSPACE IF EXISTS %s" % name)
        keyspace = os.path.join(PLAYBOOKS, "keyspace.yml")
        check = run_playbook(keyspace, INVENTORY, dict(ks_name=name, ks_rf=1), check=True, diff=True)
        assert check.returncode == 0, check.stderr
        result = check.task("Keyspace")
        assert result["changed"] and result["queries"][0].startswith("CREATE KEYSPACE it_keyspace")
        assert cql.keyspace_replication(session, name) is None, "check mode created the keyspace"

        real = run_playbook(keyspace, INVENTORY, dict(ks_name=name, ks_rf=1))
        assert real.task("Keyspace")["changed"]
        again = run_playbook(keyspace, INVENTORY, dict(ks_name=name, ks_rf=1))
        assert again.task("Keyspace")["changed"] is False
        stored = cql.keyspace_replication(session, name)
        assert stored["replication"]["replication_factor"] == "1"

        dropped = run_playbook(keyspace, INVENTORY, dict(ks_name=name, ks_state="absent"))
        assert dropped.task("Keyspace")["changed"]
        assert cql.keyspace_replication(session, name) is None
    finally:
        cluster.shutdown()


@pytest.mark.parametrize(
    "extra, field",
    [
        (dict(ks_name="bad-name"), "name"),
        (dict(ks_name="ok_name", ks_rf=0), "replication_factor"),
    ],
)
def test_keyspace_bad_input_names_the_field(clusters, extra, field):
    result = run_playbook(os.path.join(PLAYBOOKS, "keyspace.yml"), INVENTORY, extra)
    assert result.returncode != 0
    task = result.task("Keyspace")
    assert task["failed"] and task["msg"].startswith(field + ":"), task["msg"]


def test_cassandra_refuses_a_wrong_password(clusters):
    with pytest.raises(cql.CassandraError):
        cql.connect(dict(CASSANDRA_LOGIN, login_password="not-the-password"))
    result = run_playbook(
        os.path.join(PLAYBOOKS, "health.yml"),
        INVENTORY,
        dict(
            cassandra_home=CASSANDRA_HOME,
            cassandra_password="not-the-password",
            redis_user="tactician",
            redis_password=_redis_password(),
        ),
    )
    health = result.task("Cassandra health")
    assert health["healthy"] is False
    assert any("CQL not answering" in problem for problem in health["problems"])
    assert result.task("Redis health")["healthy"] is True


def test_redis_default_user_is_refused(clusters):
    result = run_playbook(os.path.join(PLAYBOOKS, "health.yml"), INVENTORY, dict(cassandra_home=CASSANDRA_HOME))
    health = result.task("Redis health")
    assert health["healthy"] is False
    assert all("unreachable" in problem for problem in health["problems"])


def test_redis_cluster_serves_reads_and_writes(clusters):
    import redis
    from redis.cluster import ClusterNode, RedisCluster

    client = RedisCluster(
        startup_nodes=[ClusterNode("127.0.0.1", 6391)],
        username="tactician",
        password=_redis_password(),
        decode_responses=True,
    )
    try:
        for index in range(300):
            client.set("it:key:%d" % index, "value-%d" % index)
        assert all(client.get("it:key:%d" % index) == "value-%d" % index for index in range(300))
        masters_with_keys = sum(1 for node in client.get_primaries() if client.dbsize(target_nodes=node) > 0)
        assert masters_with_keys == 3
    finally:
        client.close()
    with pytest.raises(redis.exceptions.AuthenticationError):
        redis.Redis(host="127.0.0.1", port=6391, username="tactician", password="wrong").ping()


def _two_controllers(records_for):
    """Two controllers' views of one lock kept in a store: their own owners and hosts, their processes alive."""
    return [
        RollingLock("it-shop", owner=owner, host=host, pid=os.getpid(), ttl=600, records=records_for())
        for owner, host in (("alice", "ctl-a"), ("bob", "ctl-b"))
    ]


def test_rolling_lock_in_cassandra_refuses_a_second_controller(clusters):
    cluster, session = cql.connect(dict(CASSANDRA_LOGIN))
    try:
        session.execute("DROP KEYSPACE IF EXISTS it_locks")
        first, second = _two_controllers(
            lambda: lock_stores.CassandraRecords("it-shop", session, "it_locks", contact="127.0.0.11")
        )
        assert second.status() is None  # no keyspace yet: nobody holds a lock
        assert first.acquire(run_id="roll-a")["changed"]
        stored = cql.keyspace_replication(session, "it_locks")["replication"]
        assert stored["class"].endswith("NetworkTopologyStrategy") and set(stored.values()) >= {"1"}
        ttl = session.execute("SELECT TTL(record) AS t FROM it_locks.rolling_locks WHERE name = 'it-shop'").one().t
        assert 0 < ttl <= 600
        with pytest.raises(LockError, match="^name: the rolling lock of cluster it-shop is held by alice"):
            second.acquire(run_id="roll-b")
        first.mark_stopped(run_id="roll-a", stopped={"reason": "node down", "node": "n1"})
        ttl = session.execute("SELECT TTL(record) AS t FROM it_locks.rolling_locks WHERE name = 'it-shop'").one().t
        assert ttl is None  # a stopped roll's lock holds until released
        with pytest.raises(LockError, match="stopped at n1"):
            second.acquire(run_id="roll-b")
        assert second.release(force=True)["released"]["owner"] == "alice"
        assert second.acquire(run_id="roll-b")["changed"] and first.status()["owner"] == "bob"
        second.release(run_id="roll-b")
        assert first.status() is None
    finally:
        session.execute("DROP KEYSPACE IF EXISTS it_locks")
        cluster.shutdown()


def test_rolling_lock_in_the_redis_cluster_follows_its_slot(clusters):
    params = dict(login_user="tactician", login_password=_redis_password())
    # Asked through every node in turn: each finds the key on its slot's master (MOVED).
    locks = [
        RollingLock(
            "it-cache",
            owner="ctl-%d" % index,
            host="ctl-%d" % index,
            pid=os.getpid(),
            records=lock_stores.RedisRecords("it-cache", params, node),
        )
        for index, node in enumerate(REDIS_NODES)
    ]
    assert locks[0].acquire(run_id="roll-0")["changed"]
    for other in locks[1:]:
        with pytest.raises(LockError, match="is held by ctl-0"):
            other.acquire(run_id="roll-x")
    locks[0].release(run_id="roll-0")
    assert all(lock.status() is None for lock in locks)


DRIVER_HOME = os.path.join(LAB_DIR, "load-driver")


def _load(store, hosts, user, password, workload, properties, **extra):
    return run_playbook(
        os.path.join(PLAYBOOKS, "load.yml"),
        INVENTORY,
        dict(
            load_store=store,
            driver_home=DRIVER_HOME,
            load_hosts=hosts,
            load_user=user,
            load_password=password,
            load_workload=workload,
            load_properties=properties,
            **extra,
        ),
    )


def test_load_driver_names_the_unreachable_host_and_writes_nothing(clusters):
    result = _load(
        "cassandra", ["127.0.0.99"], "cassandra", "cassandra", "c", {"recordcount": 10, "operationcount": 10}
    )
    assert result.returncode != 0
    task = result.task("Load")
    assert task["failed"] and task["msg"].startswith("hosts:") and "127.0.0.99" in task["msg"]


def _observe_while_loading(
    store, hosts, user, password, workload, rate, nodes, keyspaces, history_path, cpu_pid_files=(), **extra
):
    """Drive workload at a fixed rate in the background for 45 s and observe a 10 s window in the middle of it.
    cpu_pid_files: servers whose CPU seconds (/proc) are read right before and after the observation (the driver's
    result's cpu_by_proc: [(time, [seconds per server])])."""
    import threading
    import time

    from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run as loadrun

    params = dict(
        store=store,
        driver_home=DRIVER_HOME,
        hosts=hosts,
        login_user=user,
        login_password=password,
        threads=8,
        processes=1,
        workload=workload,
        phases=["run"],
        target=rate,
        keyspace="ycsb_it",
        status_interval=2,
        # The run outlasts the observe window whatever rate the busy machine allows: it stops on time, not on a
        # count of operations (a count ended it before a slow observe's window closed).
        max_seconds=45,
        properties={"recordcount": 2000, "operationcount": rate * 100},
    )
    done = {}
    worker = threading.Thread(target=lambda: done.update(result=loadrun.execute(params, loadrun.plan(params))[0]))
    worker.start()
    time.sleep(6)
    cpu = [(time.time(), [process.cpu_seconds(process.read_pid(f)) for f in cpu_pid_files])]
    observed = run_playbook(
        os.path.join(PLAYBOOKS, "observe.yml"),
        INVENTORY,
        dict(
            obs_store=store,
            obs_nodes=nodes,
            obs_user=user,
            obs_password=password,
            obs_keyspaces=keyspaces,
            obs_history=history_path,
            **extra,
        ),
    )
    cpu.append((time.time(), [process.cpu_seconds(process.read_pid(f)) for f in cpu_pid_files]))
    worker.join()
    done["result"]["cpu_by_proc"] = cpu
    return observed, done["result"]


def _driver_rate_in_window(driven, sample):
    """The driver's own ops/s over the observe window of sample (its end time and window_s), from its status lines:
    on a busy machine the driver falls short of its target rate, and observe must see what it did, not the target."""
    from ansible_collections.tactician.nosql.plugins.module_utils.workload import loaddriver

    status = (driven.get("status_by_process") or [[]])[0]
    end = float(sample["time"])
    return loaddriver.ops_between(status, end - float(sample["window_s"]), end)


def _assert_observed_rate(observed, driven):
    samples = observed.task("Observe")["samples"]
    aggregate = observed.task("Observe")["aggregate"]
    rate = _driver_rate_in_window(driven, samples[0])
    assert rate and rate > 0, "the driver recorded no status in the observe window"
    assert 0.85 * rate <= aggregate["throughput"] <= 1.15 * rate, (aggregate["throughput"], rate)


def _from_prometheus(store, cluster, end, duration):
    """The prometheus:// history's window of the test stack, once Prometheus has scraped past its end."""
    import time

    from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history

    time.sleep(max(0.0, end + 6.0 - time.time()))  # one scrape interval (5 s) past the window's end
    with history.open_history("prometheus://127.0.0.1:9391") as store_:
        return store_.window(store, cluster, duration, end=end)


def _assert_prometheus_agrees(store, cluster, observed, driven, servers):
    """Over the span of the observation (from right before the observe task to right after it, about 20 s: four
    scrapes and more), the Prometheus history's sample agrees with the driver's own count within 5 % and with the
    observe task's read ratio, and its CPU of the servers with their own /proc accounting within 25 %: Prometheus's
    rate reads the three or four scrapes inside the window (10-15 s of it) while /proc spans all of it, and a JVM's
    CPU at this load comes in bursts (flushes, collections) that fall on one side of a scrape or the other. The
    check is for the units and the sum over the nodes, which an error would put off by far more."""
    (start, before), (end, after) = driven["cpu_by_proc"]
    read = _from_prometheus(store, cluster, end, end - start)
    rate = _driver_rate_in_window(driven, dict(time=end, window_s=end - start))
    assert 0.95 * rate <= read["aggregate"]["throughput"] <= 1.05 * rate, (read["aggregate"]["throughput"], rate)
    assert abs(read["aggregate"]["read_ratio"] - observed.task("Observe")["aggregate"]["read_ratio"]) <= 0.05
    assert read["aggregate"]["extra"]["source"] == "prometheus"
    prometheus_cpu = sum(s["extra"]["process_cpu_pct"] for s in read["samples"] if s["node"] in servers) / 100.0
    own_cpu = sum(b - a for a, b in zip(before, after, strict=True)) / (end - start)
    print(
        "%s from Prometheus over %.1f s: %.1f ops/s against the driver's %.1f; servers' CPU %.3f against /proc's %.3f"
        % (store, end - start, read["aggregate"]["throughput"], rate, prometheus_cpu, own_cpu)
    )
    assert own_cpu > 0 and abs(prometheus_cpu - own_cpu) <= 0.25 * own_cpu, (prometheus_cpu, own_cpu)
    return read


def _assert_state_well_typed(store, state, required=()):
    """Every state field of the store is there, a whole number or a number >= 0 as its kind says, or null; the
    fields in required have a value."""
    from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import samples

    fields = samples.STATE_FIELDS[store]
    assert set(state) == set(fields), sorted(state)
    for name, value in state.items():
        if value is None:
            assert name not in required, "%s: no value" % name
            continue
        if fields[name].kind == "count":
            assert isinstance(value, int) and not isinstance(value, bool), (name, value)
        else:
            assert isinstance(value, (int, float)) and not isinstance(value, bool), (name, value)
        assert value >= 0, (name, value)


def test_observe_sees_the_drivers_rate_and_mix_on_cassandra(clusters, tmp_path):
    """First the load driver on Cassandra through load.yml (the former test_load_driver_on_cassandra_loads_and_runs
    _workload_a, folded in here: its load is the data this test observes): workload A loads 2000 rows (all in the
    table) and runs 4000 operations, about half reads, none failed, with latency percentiles. Then observe under
    the driver's fixed rate: its throughput and read ratio match what the driver did in the window, the test
    stack's Prometheus agrees with the driver and with the servers' /proc CPU, the node's state readings (CQL and
    nodetool) are well typed, and the history keeps the node's sample and the cluster's."""
    history_path = str(tmp_path / "history.sqlite3")
    load = _load(
        "cassandra", ["127.0.0.11"], "cassandra", "cassandra", "a", {"recordcount": 2000, "operationcount": 4000}
    )
    assert load.returncode == 0, load.stderr
    loaded, ran = load.task("Load")["results"]
    assert loaded["phase"] == "load" and loaded["operations"]["insert"]["count"] == 2000
    assert ran["failed_total"] == 0 and ran["throughput"] > 0
    assert ran["operations"]["read"]["count"] + ran["operations"]["update"]["count"] == 4000
    assert 0.4 < ran["operations"]["read"]["count"] / 4000 < 0.6
    assert ran["operations"]["read"]["p99_ms"] >= ran["operations"]["read"]["p50_ms"] > 0
    cluster, session = cql.connect(dict(CASSANDRA_LOGIN))
    try:
        assert session.execute("SELECT count(*) FROM ycsb_it.usertable").one()[0] == 2000
    finally:
        cluster.shutdown()
    pid_file = os.path.join(LAB_DIR, "cassandra", "test-cassandra1", "cassandra.pid")
    observed, driven = _observe_while_loading(
        "cassandra",
        ["127.0.0.11"],
        "cassandra",
        "cassandra",
        "a",
        800,
        [{"address": "127.0.0.11", "pid_file": pid_file, "jmx_port": 7499}],
        ["ycsb_it"],
        history_path,
        cpu_pid_files=[pid_file],
        obs_cassandra_home=CASSANDRA_HOME,
    )
    assert observed.returncode == 0, observed.stderr
    aggregate = observed.task("Observe")["aggregate"]
    assert driven["failed_total"] == 0
    assert abs(aggregate["read_ratio"] - 0.5) <= 0.05
    _assert_observed_rate(observed, driven)
    read = _assert_prometheus_agrees("cassandra", "cassandra", observed, driven, ["127.0.0.11:9042"])
    _assert_state_well_typed("cassandra", read["aggregate"]["state"], ("pending_compactions", "pending_flushes"))
    node = observed.task("Observe")["samples"][0]
    assert node["extra"]["process_cpu_pct"] > 0 and node["resources"]["cpu_pct"] > 0
    # The state: CQL readings always, nodetool's with cassandra_home; workload A reads, so SSTables per read is known.
    assert "state_error" not in node["extra"], node["extra"]["state_error"]
    required = (
        "pending_compactions",
        "pending_compaction_bytes",
        "pending_flushes",
        "key_cache_fill",
        "pending_compactions_estimated",
        "live_sstables",
        "sstables_per_read",
        "sstables_per_read_max",
    )
    _assert_state_well_typed("cassandra", node["state"], required)
    _assert_state_well_typed("cassandra", aggregate["state"], required)
    assert aggregate["state"]["live_sstables"] == node["state"]["live_sstables"]  # one node: its own sum
    assert node["state"]["sstables_per_read_max"] >= node["state"]["sstables_per_read"]
    from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history

    with history.open_history(history_path) as store:
        kept = store.samples(cluster="it")
        assert len(kept) == 2
        assert {sample["node"]: sample["state"] for sample in kept}["cluster"] == aggregate["state"]


def test_observe_sees_the_drivers_rate_and_mix_on_redis(clusters, tmp_path):
    """First the load driver on the Redis cluster with two client processes (the former test_load_driver_on_redis
    _cluster_with_two_processes, folded in here: its load is the data this test observes): workload B loads 2000
    keys and runs 6000 operations split over both processes, none failed. Then observe under the driver's fixed
    rate: throughput and read ratio as the driver did them, Prometheus in agreement, the masters only in the
    aggregate, every state well typed, the three shards with their replicas and all 16384 slots."""
    password = _redis_password()
    load = _load(
        "redis",
        REDIS_NODES[:3],
        "tactician",
        password,
        "b",
        {"recordcount": 2000, "operationcount": 6000},
        load_processes=2,
    )
    assert load.returncode == 0, load.stderr
    loaded, ran = load.task("Load")["results"]
    assert loaded["processes"] == 2 and loaded["operations"]["insert"]["count"] == 2000
    assert ran["failed_total"] == 0
    assert ran["operations"]["read"]["count"] + ran["operations"]["update"]["count"] == 6000
    observed, driven = _observe_while_loading(
        "redis",
        REDIS_NODES[:3],
        "tactician",
        password,
        "b",
        1500,
        [{"address": a} for a in REDIS_NODES],
        [],
        str(tmp_path / "history.sqlite3"),
        cpu_pid_files=_redis_pid_files(),
    )
    assert observed.returncode == 0, observed.stderr
    aggregate = observed.task("Observe")["aggregate"]
    assert abs(aggregate["read_ratio"] - 0.95) <= 0.05
    _assert_observed_rate(observed, driven)
    read = _assert_prometheus_agrees("redis", "redis", observed, driven, REDIS_NODES)
    assert len(read["aggregate"]["extra"]["nodes"]) == 3, "the masters only"
    assert len(aggregate["extra"]["nodes"]) == 3
    for sample in observed.task("Observe")["samples"] + [aggregate]:
        _assert_state_well_typed(
            "redis",
            sample["state"],
            ("rdb_bgsave_in_progress", "aof_rewrite_in_progress", "rdb_changes_since_last_save", "evictions_per_s"),
        )
    shards = observed.task("Observe")["samples"][0]["extra"]["shards"]
    assert len(shards) == 3 and all(len(shard["nodes"]) == 2 for shard in shards)
    assert sum(last - first + 1 for shard in shards for first, last in shard["slots"]) == 16384


def test_a_forecast_from_prometheus_has_a_sample_at_every_step(clusters):
    """The history as cron-mode autotune reads it from Prometheus: every step a real sample, none filled in (the
    Redis cluster is scraped every 5 s from lab_up on; the forecast's step is 15 s, and it waits until Prometheus
    holds the 12 steps it reads)."""

    def forecast():
        result = run_playbook(os.path.join(PLAYBOOKS, "forecast_prometheus.yml"), INVENTORY)
        task = result.task("Forecast the Redis cluster's workload from Prometheus")
        return task if result.returncode == 0 and task["series_points"] == 12 else None

    found = _eventually(forecast, "12 steps of the Redis cluster in Prometheus", timeout=400)
    assert found["filled_steps"] == 0, found


def test_observe_names_an_unreachable_node_and_writes_nothing(clusters, tmp_path):
    history_path = str(tmp_path / "history.sqlite3")
    result = run_playbook(
        os.path.join(PLAYBOOKS, "observe.yml"),
        INVENTORY,
        dict(
            obs_store="redis",
            obs_nodes=[{"address": "127.0.0.1:6391"}, {"address": "127.0.0.1:6999"}],
            obs_user="tactician",
            obs_password=_redis_password(),
            obs_history=history_path,
        ),
    )
    task = result.task("Observe")
    assert task["failed"] and task["msg"].startswith("127.0.0.1:6999:")
    from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history

    with history.open_history(history_path) as store:
        assert store.samples() == []


def test_load_driver_replays_a_schedule_of_phases(clusters, tmp_path):
    from ansible_collections.tactician.nosql.plugins.module_utils.workload import schedules

    path = str(tmp_path / "two-phases.yml")
    schedules.save_schedule(
        schedules.Schedule(
            [
                schedules.Phase(8, {"read": 1.0}, rate=400, label="read"),
                schedules.Phase(8, {"update": 1.0}, rate=400, label="write"),
            ],
            seed=1,
        ),
        path,
    )
    result = _load(
        "redis", REDIS_NODES[:3], "tactician", _redis_password(), "a", {"recordcount": 1000}, load_schedule=path
    )
    assert result.returncode == 0, result.stderr
    load, read, write = result.task("Load")["results"]
    assert load["phase"] == "load" and load["operations"]["insert"]["count"] == 1000
    assert set(read["operations"]) == {"read"} and set(write["operations"]) == {"update"}
    assert read["failed_total"] == write["failed_total"] == 0
    assert 6.0 <= write["ended"] - write["started"] <= 20.0
    assert read["operations"]["read"]["count"] > 1000


# ---------------------------------------------------------------- tactics and rolling reconfiguration (last:
# these restart nodes)
ROLLING = "playbooks/rolling_reconfigure.yml"
AUTOTUNE = "playbooks/autotune.yml"


def _redis_config(name):
    from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter

    values = {}
    for address in REDIS_NODES:
        conn = redis_adapter.client(
            dict(login_user="tactician", login_password=_redis_password()), *redis_adapter.split_node(address)
        )
        try:
            values[address] = conn.config_get(name)[name]
        finally:
            conn.close()
    return values


def _reconfigured(result):
    """The results of every node's reconfigure step in a playbook run."""
    return [res for task, _host, res in result.results if task and task.startswith("Reconfigure the node")]


def _cassandra_setting(name):
    cluster, session = cql.connect(dict(CASSANDRA_LOGIN))
    try:
        return session.execute("SELECT value FROM system_views.settings WHERE name = %s", [name]).one().value
    finally:
        cluster.shutdown()


def test_table_and_index_tactics_on_the_test_node(clusters):
    result = run_playbook(os.path.join(PLAYBOOKS, "cassandra_table.yml"), INVENTORY)
    assert result.returncode == 0, result.stderr


def test_rolling_refuses_a_batch_below_one_before_touching_anything(clusters):
    pids = {path: process.read_pid(path) for path in _pid_files()}
    for level in ("ALL", "ONE"):  # the test keyspace has RF 1: R = 1 - 1 = 0 already at ONE
        result = run_playbook(
            ROLLING,
            INVENTORY,
            dict(
                tactician_store="cassandra",
                tactician_consistency_level=level,
                tactician_settings={"concurrent_compactors": 3},
            ),
        )
        assert result.returncode != 0
        assert "R = RF - CL" in result.stderr and "aggressive" in result.stderr, result.stderr
    assert {path: process.read_pid(path) for path in _pid_files()} == pids
    assert _cassandra_setting("concurrent_compactors") != "3"


def test_rolling_rejects_bad_settings_naming_the_field(clusters):
    # What the nodes run before: a lab dir kept from an earlier run holds the live changes a later test makes.
    before = _redis_config("maxmemory-policy")
    result = run_playbook(
        ROLLING,
        INVENTORY,
        dict(tactician_store="redis", tactician_settings={"maxmemory-policy": "sometimes", "io_thread": 2}),
    )
    assert result.returncode != 0
    assert "maxmemory-policy" in result.stderr and "allkeys-lru" in result.stderr, result.stderr
    assert "io_thread" in result.stderr and "io-threads" in result.stderr, result.stderr
    assert _redis_config("maxmemory-policy") == before  # refused before touching any node


def test_rolling_restart_of_the_redis_cluster_check_real_again(clusters):
    before = _redis_config("io-threads")
    wanted = "2" if set(before.values()) == {"1"} else "1"
    extra = dict(tactician_store="redis", tactician_settings={"io-threads": int(wanted)})
    check = run_playbook(ROLLING, INVENTORY, extra, check=True, diff=True)
    assert check.returncode == 0, check.stderr
    assert check.changed() == len(REDIS_NODES), check.stats
    assert _redis_config("io-threads") == before
    # The guard reads the clients' signals from the test stack's Prometheus (one query for the cluster).
    real = run_playbook(ROLLING, INVENTORY, dict(extra, tactician_prometheus_url="prometheus://127.0.0.1:9391"))
    assert real.returncode == 0, real.stderr
    assert real.changed() == len(REDIS_NODES), real.stats
    assert set(_redis_config("io-threads").values()) == {wanted}
    steps = _reconfigured(real)
    assert all(res["restart_required"] and "verify" in res["steps"] for res in steps)
    signals = [res["guard"]["clients"]["signals"] for res in steps]
    assert all(seen["via"] == "prometheus" and len(seen["nodes"]) == len(REDIS_NODES) for seen in signals), signals
    assert sum(1 for res in steps if any(step.startswith("failover") for step in res["steps"])) >= 3
    health = run_playbook("playbooks/lab_status.yml", INVENTORY)
    assert health.returncode == 0, health.stderr
    again = run_playbook(ROLLING, INVENTORY, extra)
    assert again.returncode == 0 and again.changed() == 0, again.stats


def test_live_redis_change_survives_a_lab_up_without_restart(clusters):
    """A live Redis change (maxmemory, maxmemory-policy) rolled with no restart and written to each node's
    redis.conf; lab_up run again on the running lab then changes nothing (changed=0) and restarts nothing (every
    PID file names the same process). This lab_up is also the suite's check that lab_up run again on a running lab
    changes nothing (the former test_lab_up_again_changes_nothing ran the same playbook on the same lab)."""
    pids = {path: process.read_pid(path) for path in _pid_files()}
    extra = dict(tactician_store="redis", tactician_settings={"maxmemory": "64mb", "maxmemory-policy": "allkeys-lru"})
    real = run_playbook(ROLLING, INVENTORY, extra)
    assert real.returncode == 0, real.stderr
    assert set(_redis_config("maxmemory").values()) == {str(64 * 1024 * 1024)}
    with open(os.path.join(LAB_DIR, "redis", "6391", "redis.conf")) as handle:
        text = handle.read()
    assert "maxmemory 64mb" in text and "masterauth" not in text
    up = run_playbook("playbooks/lab_up.yml", INVENTORY)
    assert up.returncode == 0 and up.changed() == 0, up.stats
    assert {path: process.read_pid(path) for path in _pid_files()} == pids


def test_aggressive_restart_of_the_single_cassandra_node(clusters):
    before = _cassandra_setting("memtable_flush_writers")
    wanted = 4 if before == "2" else 2
    extra = dict(
        tactician_store="cassandra",
        tactician_settings={"memtable_flush_writers": wanted},
        tactician_aggressive=True,
    )
    real = run_playbook(ROLLING, INVENTORY, extra)
    assert real.returncode == 0, real.stderr
    step = real.task(
        "Reconfigure the node (live where possible, else drain, stop, rewrite, start, rejoin, verify)",
        "test-cassandra1",
    )
    assert step["restart_required"] and step["downtime"] > 0
    assert step["steps"] == ["check cluster", "stop", "write config", "start", "rejoin", "verify"]
    assert _cassandra_setting("memtable_flush_writers") == str(wanted)
    again = run_playbook(ROLLING, INVENTORY, extra)
    assert again.returncode == 0 and again.changed() == 0, again.stats
    # The roll's restart recorded the node's start parameters as the lab role passes them: the lab brought up
    # again leaves the node running (the setting the roll wrote is one the role leaves alone).
    up = run_playbook("playbooks/lab_up.yml", INVENTORY)
    assert up.returncode == 0 and up.changed() == 0, up.stats


def _history_with_a_daily_cycle(path, steps=240):
    """A history of aggregate samples, 30 s apart, whose read ratio and throughput follow a slow cycle."""
    import math

    from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.history import SQLiteHistory
    from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.samples import new_sample

    with SQLiteHistory(path) as store:
        samples = []
        for k in range(steps):
            total = 1000.0 + 400.0 * math.sin(2 * math.pi * k / 120.0)
            reads = 0.5 + 0.3 * math.sin(2 * math.pi * k / 120.0)
            ops = {"read": total * reads, "update": total * (1 - reads)}
            samples.append(new_sample("cassandra", "it", "cluster", 1_700_000_000 + 30.0 * k, 30.0, ops))
        store.add_samples(samples)


def test_calibrate_model_and_predict_on_a_real_node(clusters, tmp_path):
    _history_with_a_daily_cycle(str(tmp_path / "history.sqlite3"))
    result = run_playbook(
        os.path.join(PLAYBOOKS, "predict.yml"), INVENTORY, dict(lab_dir=LAB_DIR, work_dir=str(tmp_path))
    )
    assert result.returncode == 0, result.stderr[-4000:]
    idle = result.task("Idle usage")["usage"]
    update = result.task("Update points")["points"]
    assert 0 <= idle < 50
    assert [p["target"] for p in update] == [400, 800]
    # No bound on the rate either way: on a busy machine the driver reaches less than its target, and its throttle
    # catches up on a slow warmup by running above the target inside the window (1,141 writes/s at 800 seen here).
    assert all(p["writes_per_s"] > 0 and p["usage"] > 0 for p in update)
    read = result.task("Read levels")
    assert 0 < read["hit_ratio"] <= 1 and read["max"]["throughput"] > 0
    assert len(read["levels"]) == 2 and any(row["converged"] for row in read["levels"]), read["levels"]
    assert result.task("Key cache size")["cache"]["capacity_bytes"] > 0
    fit = result.task("Fit the resource model")
    assert fit["metadata"]["hardware_profile"]["name"] == "it-profile" and fit["metadata"]["store"] == "cassandra"
    usage = result.task("Predict usage with the model")
    assert usage["usage"] > 0 and usage["max_throughput"] is None or usage["max_throughput"] >= 0
    refused = result.task("A model of another hardware profile is refused")
    assert refused["failed"] and refused["msg"].startswith("metadata.hardware_profile:")
    design = result.task("A design over the catalog (loaded by the action plugin)")
    assert design["changed"] and len(design["design"]["points"]) == 6
    assert not result.task("The same design again")["changed"]
    records = result.task("Record a measured point twice")["results"]
    assert [r["changed"] for r in records] == [True, False]
    forecasts = result.task("Forecast the workload from the history")["results"]
    assert [f["method"] for f in forecasts] == ["arima", "markov", "last_value"]
    for item in forecasts:
        assert item["series_points"] == 240
        assert {row["horizon_s"] for row in item["accuracy"]} == {60, 120}
        assert item["forecast"]["fields"]["read_ratio"] and item["lookahead"]["lookahead_s"] >= 0


def test_plan_from_a_recorded_race_then_roll_the_plan_on_a_real_node(clusters, load_driver_home, tmp_path):
    """A surrogate from a race's recorded runs (tests/integration/data: a race of tune.yml on this test node; the
    foreign-cluster test runs tune.yml itself), static and dynamic plans, and the plan file applied by the rolling
    playbook; then autotune under a load, plan_only on the test stack's Prometheus and auto applying the plan's
    first step (mode approve's refusal of an unapproved plan is the MongoDB autotune test's)."""
    import json
    import shutil

    import yaml

    history = str(tmp_path / "race.jsonl")
    shutil.copy(os.path.join(ROOT, "tests", "integration", "data", "race-cassandra-ycsb-a.jsonl"), history)
    lines = [json.loads(line) for line in open(history)]
    trials = lines[1:]
    default_config = dict(lines[0]["initial"][0])
    assert load_driver_home == DRIVER_HOME  # autotune's load below runs the driver the session installed

    raced = [t for t in trials if t.get("config")]
    slowest = min(raced, key=lambda t: t["value"])["config"] if raced else {}
    planned = run_playbook(
        os.path.join(PLAYBOOKS, "plan.yml"),
        INVENTORY,
        dict(work_dir=str(tmp_path), race_history=history, slowest_config=slowest),
    )
    assert planned.returncode == 0, planned.stderr[-4000:]
    assert planned.task("Fit a surrogate on the race's runs")["metadata"]["training_points"] == len(trials)
    static = planned.task("Static plan for YCSB A")
    assert static["plan"]["kind"] == "static" and static["summary"]
    check = planned.task("Dynamic plan in check mode")
    assert check["changed"] and "diff" in check and not planned.task("No plan file after check mode")["stat"]["exists"]
    dynamic = planned.task("Dynamic plan")
    assert dynamic["changed"] and dynamic["plan"]["lookahead"]["steps"] == 40
    assert set(dynamic["plan"]["baselines"]) >= {"default", "static_optimized", "naive", "theoretical_best"}
    assert not planned.task("Dynamic plan again")["changed"]
    assert "solver" in planned.task("A bad solver is refused")["msg"]
    refused = planned.task("A cluster that cannot be rolled is refused")
    assert refused["failed"] and "cluster.cl" in refused["msg"] and "aggressive" in refused["msg"]
    assert not os.path.exists(tmp_path / "refused.yml")
    ring = planned.task("The test node's token ring and complete-sets")
    # Ansible masks the test node's password ("cassandra") wherever it appears in results, host names included.
    assert len(ring["nodes"]) == 1 and ring["rf"] == 1 and ring["complete_sets"] == [ring["nodes"]]
    assert len(ring["tokens"]) == 1 and len(next(iter(ring["tokens"].values()))) >= 1
    hetero = planned.task("Heterogeneous plan over the ring's complete-sets")
    assert hetero["plan"]["kind"] == "heterogeneous" and hetero["plan"]["predicted"]["cost_per_h"] <= 1.0
    assert [len(s["nodes"]) for s in hetero["plan"]["sets"]] == [1] and hetero["summary"][0].startswith("heterog")
    assert not planned.task("Heterogeneous plan again")["changed"]
    refused = planned.task("One complete-set cannot be rolled without downtime")
    assert refused["failed"] and "cluster.cl" in refused["msg"]
    check = planned.task("Tactic plan in check mode")
    assert check["changed"] and check["plan"]["steps"][0]["tactic"] == "add_replica"
    tactic = planned.task("Tactic plan")
    assert tactic["changed"] and tactic["plan"]["timing"]["learned_now"] == 400
    assert not planned.task("Tactic plan again")["changed"]
    assert os.path.exists(tmp_path / "tactic.yml") and os.path.exists(tmp_path / "advisor.jsonl")
    # The rolling playbook applies neither a VM type change nor a tactic; it says who does, and touches nothing.
    # A step that changes a VM type (the test node's name written out: results mask it).
    vm_step = {
        "at": "2027-01-15T08:00:00Z",
        "offset_s": 0.0,
        "nodes": ["test-cassandra1"],
        "configuration": {},
        "vm_type": {"from": "m5.2xlarge", "to": "t3.large"},
        "predicted": {"ops_per_s_before": 1.0, "ops_per_s_after": 1.0, "cost_ops": 0.0, "break_even_s": None},
        "reason": "test",
    }
    for step, words in ((vm_step, "tactician_vm_resized"), (tactic["plan"]["steps"][0], "cassandra_tactics")):
        path = tmp_path / "refused-step.yml"
        path.write_text(yaml.safe_dump(dict(hetero["plan"], steps=[step])))
        refused = run_playbook(ROLLING, INVENTORY, dict(tactician_plan_file=str(path), tactician_aggressive=True))
        assert refused.returncode != 0 and words in refused.stderr, refused.stderr[-3000:]

    # A plan with a switch, applied by the rolling playbook (live settings: no restart).
    doc = yaml.safe_load(open(tmp_path / "dynamic.yml"))
    for fallback in ("static.yml", "static-slowest.yml"):
        if not doc["steps"] and os.path.exists(tmp_path / fallback):
            doc = yaml.safe_load(open(tmp_path / fallback))
    assert doc["steps"], "no plan switches: %s" % doc["reasons"]
    wanted = doc["steps"][0]["configuration"]
    path = tmp_path / "apply.yml"
    path.write_text(yaml.safe_dump(doc))
    rolled = run_playbook(ROLLING, INVENTORY, dict(tactician_plan_file=str(path), tactician_aggressive=True))
    assert rolled.returncode == 0, rolled.stderr[-4000:]
    for name, value in wanted.items():
        assert _cassandra_setting(name) == str(value)
    reset = run_playbook(
        ROLLING,
        INVENTORY,
        dict(tactician_store="cassandra", tactician_aggressive=True, tactician_settings=default_config),
    )
    assert reset.returncode == 0, reset.stderr[-4000:]

    # Autotune on the test node under a real load: plan_only writes a plan and changes nothing; auto (with any
    # predicted gain accepted, and closed-loop demand) rolls the plan's first step, observes again, records the
    # realized effect in the history and writes the report.
    _autotune_under_load(tmp_path, default_config, slowest or {"concurrent_reads": 8, "concurrent_writes": 8})


def _stop_own_load_clients():
    """SIGTERM to the load driver's client JVMs this test process started (its children), by their PIDs."""
    import signal

    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid() and any(arg.endswith("ycsb.Client") for arg in process.pid_cmdline(int(entry))):
            os.kill(int(entry), signal.SIGTERM)


def _autotune_under_load(tmp_path, default_config, claimed):
    import urllib.parse

    import yaml

    from ansible_collections.tactician.nosql.plugins.module_utils.planning import effects
    from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history as history_store

    params = dict(
        store="cassandra",
        driver_home=DRIVER_HOME,
        hosts=["127.0.0.11"],
        login_user="cassandra",
        login_password="cassandra",
        threads=4,
        processes=1,
        workload="a",
        phases=["load", "run"],
        target=300,
        max_seconds=200,
        keyspace="ycsb_autotune_it",
        replication_factor=1,
        properties={"recordcount": 2000, "operationcount": 10**8},
    )
    common = dict(
        tactician_model_file=str(tmp_path / "surrogate.json"),
        tactician_hardware_profile="it-profile",
        tactician_history=str(tmp_path / "autotune.sqlite3"),
        tactician_plans_dir=str(tmp_path / "plans"),
        tactician_reports_dir=str(tmp_path / "reports"),
        tactician_aggressive=True,
        tactician_autotune_observe_s=10,
        tactician_autotune_settle_s=5,
        tactician_autotune_keyspaces=["ycsb_autotune_it"],
        tactician_autotune_workload_base={"requestdistribution": "zipfian", "records": 2000, "threads": 4},
    )
    # A stopped client ends the run with an error; the thread is joined when the block ends.
    with background_load(params, join_s=600):
        try:
            import time

            time.sleep(15)  # the load phase, then the run
            # plan_only on a Prometheus history (the test stack's; records in the test's file): nothing polls the node,
            # every sub-window is read from Prometheus, and the forecast reads a sample at each of its steps.
            prometheus = "prometheus://127.0.0.1:9391?records=" + urllib.parse.quote(common["tactician_history"])
            only = run_playbook(AUTOTUNE, INVENTORY, dict(common, tactician_history=prometheus))
            assert only.returncode == 0, only.stderr[-4000:]
            ran = [(task, res) for task, _host, res in only.results if task and not res.get("skipped")]
            read = [res for task, res in ran if task.startswith("Read from Prometheus the sub-window")]
            assert len(read) == 3 and all(res["source"] == "prometheus" for res in read)
            assert not [task for task, _res in ran if task.startswith("Observe the workload in this sub-window")]
            forecast = only.task("Forecast the workload over the lookahead")
            assert forecast["series_points"] > 0
            print(
                "autotune on Prometheus: %d steps of 30 s, %d filled"
                % (forecast["series_points"], forecast["filled_steps"])
            )
            plans = sorted(glob.glob(str(tmp_path / "plans" / "cassandra-2*.yml")))
            assert len(plans) == 1 and not os.path.exists(tmp_path / "plans" / "cassandra-applied.yml")
            assert os.path.exists(tmp_path / "reports" / "cassandra" / "report.html")
            # (Mode approve refusing a plan nobody approved is test_autotune_plans_mongodb_knobs_on_a_known_schedule's:
            # the same check of autotune.yml, before anything is observed, whatever the store.)
            auto = run_playbook(
                AUTOTUNE,
                INVENTORY,
                dict(
                    common,
                    tactician_autotune_mode="auto",
                    tactician_autotune_min_gain=-1,
                    tactician_autotune_demand="unbounded",
                    # This test exercises the apply path; the guard (unit-tested, and in benchmarks/plan_safety.py)
                    # would rightly refuse a switch on a minute of history.
                    tactician_autotune_safety={"enabled": False},
                    # The race's slowest configuration claimed as the one in place: the plan's best switch away from
                    # it is the largest gain the surrogate knows.
                    tactician_current_configuration=claimed,
                ),
            )
            assert auto.returncode == 0, auto.stderr[-4000:]
        finally:
            # The load's run phase is sized to outlast the three autotune runs on a slow machine; end it now.
            _stop_own_load_clients()
    plan_files = sorted(glob.glob(str(tmp_path / "plans" / "cassandra-2*.yml")))
    steps = yaml.safe_load(open(plan_files[-1]))["steps"]
    if not steps or steps[0]["offset_s"] >= 30:
        # A noisy race can leave the surrogate with no switch that pays off: then auto applies nothing, and says so.
        assert not os.path.exists(tmp_path / "plans" / "cassandra-applied.yml")
        assert os.path.exists(tmp_path / "reports" / "cassandra" / "report.html")
        return
    applied = yaml.safe_load(open(tmp_path / "plans" / "cassandra-applied.yml"))
    assert applied["configuration"] and applied["plan"].startswith(str(tmp_path / "plans"))
    # The record keeps the configuration the switch left (the next run's plan option previous: the way back).
    assert applied["previous"] == claimed
    store = history_store.open_history(str(tmp_path / "autotune.sqlite3"), create=False, readonly=True)
    try:
        records = effects.effects(store, "cassandra")
    finally:
        store.close()
    assert len(records) == 1 and records[0]["applied"] and records[0]["predicted"]["after"] is not None
    assert records[0]["measured"]["before"] > 0
    report = open(tmp_path / "reports" / "cassandra" / "report.md").read()
    assert "Realized effect against the prediction" in report and "break-even" in report
    reset = run_playbook(
        ROLLING,
        INVENTORY,
        dict(tactician_store="cassandra", tactician_aggressive=True, tactician_settings=default_config),
    )
    assert reset.returncode == 0, reset.stderr[-4000:]


# ---------------------------------------------------------------- the very last test: it leaves the node on a
# setting the inventory does not have, for the module's lab_down to stop


def test_cassandra_setting_change_restarts_the_node_and_is_live(clusters):
    """lab_up with a changed cassandra.yaml setting (cassandra_node_settings key_cache_size): the role's daemon step
    drains the node, restarts it, and the value is live in system_views.settings. Last in the module, so the
    setting is not put back with a second restart: the module's lab_down stops the node, and the next lab_up
    writes the inventory's cassandra.yaml again."""
    extra = dict(cassandra_node_settings=dict(key_cache_size="24MiB"))
    changed = run_playbook("playbooks/lab_up.yml", INVENTORY, extra)
    assert changed.returncode == 0, changed.stderr
    daemon = changed.task("Run the node (drained before any stop)", host="test-cassandra1")
    assert daemon["changed"] and daemon["actions"][0] == "drain" and "start" in daemon["actions"]
    cluster, session = cql.connect(dict(CASSANDRA_LOGIN))
    try:
        row = session.execute("SELECT value FROM system_views.settings WHERE name = 'key_cache_size'").one()
        assert row.value in ("24MiB", "24")
    finally:
        cluster.shutdown()
