"""A Redis Cluster the collection did not build, rolled through the operator's own inventory.

Six hosts on loopback addresses of their own, each reached by Ansible over SSH (foreign.py): Debian's redis-server
package on each, its /etc/redis/redis.conf edited the way an operator edits it (the host's address, TLS only, a
CA made here, client certificates required, a password, cluster mode), started and stopped by the package's
service script, the cluster formed with redis-cli. The inventory holds only what an operator's would: addresses,
the service's name, its config file, the password and the TLS files. No lab role, lab path or runner of the
collection's own is involved.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time

import foreign
import pytest
from ansible_run import ROOT, held_lock, run_playbook

from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter

pytestmark = pytest.mark.integration

pytest.importorskip("cryptography")
from pki import Authority  # noqa: E402

yaml = pytest.importorskip("yaml")

PASSWORD = "foreign-redis-password"  # a throwaway cluster of this test only
HOSTS = [("redis-%s" % letter, "127.0.0.%d" % (61 + i)) for i, letter in enumerate("abcdef")]
DIRS = ["/etc/redis", "/var/lib/redis", "/var/log/redis", "/run/redis"]
CONF = "/etc/redis/redis.conf"
PIDFILE = "/run/redis/redis-server.pid"


def _operator_edits(text, address):
    """What an operator changes in Debian's redis.conf: the address, TLS only with client certificates, a
    password, cluster mode. Each directive replaces its line where the file has one, else is appended."""
    wanted = {
        "bind": address,
        "bind-source-addr": address,  # several addresses on one interface: the peers see this one
        "port": "0",
        "tls-port": "6379",
        "tls-cert-file": "/etc/redis/tls/redis.pem",
        "tls-key-file": "/etc/redis/tls/redis-key.pem",
        "tls-ca-cert-file": "/etc/redis/tls/ca.pem",
        "tls-auth-clients": "yes",
        "tls-replication": "yes",
        "tls-cluster": "yes",
        "requirepass": PASSWORD,
        "masterauth": PASSWORD,
        "cluster-enabled": "yes",
        "cluster-config-file": "nodes-6379.conf",
        "cluster-node-timeout": "5000",
    }
    lines = text.splitlines()
    for key, value in wanted.items():
        line = "%s %s" % (key, value)
        active = [i for i, old in enumerate(lines) if re.match(r"^%s\s" % re.escape(key), old)]
        commented = [i for i, old in enumerate(lines) if re.match(r"^#\s*%s\s" % re.escape(key), old)]
        if active or commented:
            lines[(active or commented)[0]] = line
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def _redis_ids():
    import pwd

    entry = pwd.getpwnam("redis")
    return entry.pw_uid, entry.pw_gid


def _cli(cluster, address, *args, check=True, timeout=120):
    env = dict(os.environ, REDISCLI_AUTH=PASSWORD)  # the password off the command line
    proc = subprocess.run(
        ["redis-cli", "--tls", "--cacert", cluster.tls["ca"], "--cert", cluster.tls["client_cert"]]
        + ["--key", cluster.tls["client_key"], "-h", address, "-p", "6379"]
        + list(args),
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check and proc.returncode != 0:
        raise RuntimeError("redis-cli %s: %s" % (" ".join(args), proc.stderr + proc.stdout))
    return proc.stdout


def _wait_cluster_ok(cluster, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = [_cli(cluster, host.address, "CLUSTER", "INFO", check=False) for host in cluster.hosts]
        if all("cluster_state:ok" in state for state in states):
            return
        time.sleep(0.5)
    raise RuntimeError("the foreign Redis Cluster did not reach cluster_state ok")


def _server_pid(host):
    with open(host.path(PIDFILE), encoding="utf-8") as handle:
        return int(handle.read().strip())


def _servers_of(host):
    """PIDs of redis-server processes listening on the host's address (one, when no second server started)."""
    out = subprocess.run(
        ["pgrep", "-f", "redis-server %s:6379" % host.address], capture_output=True, text=True, check=False
    )
    return sorted(int(pid) for pid in out.stdout.split())


@pytest.fixture(scope="module")
def foreign_redis(tmp_path_factory):
    lacks = foreign.missing() + ([] if shutil.which("redis-server") else ["redis-server (make bootstrap)"])
    if not os.path.exists(CONF):
        lacks.append("Debian's %s (the redis-server package)" % CONF)
    if lacks:
        pytest.skip("a foreign cluster needs " + ", ".join(lacks))
    folder = str(tmp_path_factory.mktemp("foreign-redis"))
    cluster = foreign.ForeignCluster(os.path.join(folder, "hosts"), HOSTS, DIRS, seed=["/etc/redis"])
    cluster.stoppers = ["service redis-server stop >/dev/null 2>&1 || true"]
    cluster.pidfiles = [PIDFILE]
    pki = os.path.join(folder, "pki")
    os.makedirs(pki)
    authority = Authority(pki)
    client_cert, client_key = authority.issue("controller", server=False, client=True)
    cluster.tls = dict(ca=authority.ca_file, client_cert=client_cert, client_key=client_key)
    uid, gid = _redis_ids()
    try:
        cluster.start()
        for host in cluster.hosts:
            tls_dir = host.path("/etc/redis/tls")
            os.makedirs(tls_dir)
            cert, key = authority.issue(host.name, names=[host.address], server=True, client=True)
            for source, name in ((authority.ca_file, "ca.pem"), (cert, "redis.pem"), (key, "redis-key.pem")):
                target = os.path.join(tls_dir, name)
                shutil.copyfile(source, target)
                os.chown(target, uid, gid)
                os.chmod(target, 0o600 if name.endswith("key.pem") else 0o644)
            os.chown(tls_dir, uid, gid)
            conf = host.path(CONF)
            with open(conf, encoding="utf-8") as handle:
                text = _operator_edits(handle.read(), host.address)
            with open(conf, "w", encoding="utf-8") as handle:
                handle.write(text)
            host.ssh("service redis-server start")
        _cli(
            cluster,
            cluster.hosts[0].address,
            "--cluster",
            "create",
            *["%s:6379" % host.address for host in cluster.hosts],
            "--cluster-replicas",
            "1",
            "--cluster-yes",
        )
        _wait_cluster_ok(cluster)
        cluster.inventory = _write_inventory(cluster, folder)
        yield cluster
    finally:
        left = cluster.stop()
        assert not left, "left running by the foreign fixture: %s" % left


def _write_inventory(cluster, folder):
    """The operator's inventory: hosts by address, the service and its config file, the password and TLS files,
    and the rolling lock kept in the cluster being rolled (its key on the master of the key's slot)."""
    group = dict(
        tactician_service_name="redis-server",
        tactician_config_file=CONF,
        tactician_redis_password=PASSWORD,
        **cluster.tls_vars(),
        tactician_redis_replicas=1,
    )
    return cluster.write_inventory(
        os.path.join(folder, "inventory"), "redis", group, all_vars={"tactician_lock_store": _lock_store(cluster)}
    )


def _lock_store(cluster):
    """The inventory's tactician_lock_store: the rolling lock kept in the cluster (its key on the slot's master),
    reached over TLS through the first host."""
    return dict(
        type="redis",
        address="%s:6379" % cluster.hosts[0].address,
        login_password=PASSWORD,
        tls=True,
        ca_file=cluster.tls["ca"],
        client_cert_file=cluster.tls["client_cert"],
        client_key_file=cluster.tls["client_key"],
    )


def _config_get(cluster, key):
    params = redis_adapter.params_from_any(
        dict(
            login_password=PASSWORD,
            tls=True,
            ca_file=cluster.tls["ca"],
            client_cert_file=cluster.tls["client_cert"],
            client_key_file=cluster.tls["client_key"],
        )
    )
    values = {}
    for host in cluster.hosts:
        conn = redis_adapter.client(params, host.address, 6379, retries=False)
        try:
            values[host.name] = conn.config_get(key)[key]
        finally:
            conn.close()
    return values


def test_a_live_setting_rolls_over_ssh_and_lands_in_the_packaged_config_file(foreign_redis):
    pids = {host.name: _server_pid(host) for host in foreign_redis.hosts}
    result = foreign_redis.roll("redis", {"maxmemory-policy": "allkeys-lfu"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert PASSWORD not in result.stderr
    assert set(_config_get(foreign_redis, "maxmemory-policy").values()) == {"allkeys-lfu"}
    lock_step = result.task("Take the cluster's rolling lock (one roll per cluster at a time)")
    assert "tactician:lock:redis" in str(lock_step), lock_step  # the lock was kept in the cluster, then released
    assert _cli(foreign_redis, foreign_redis.hosts[0].address, "-c", "EXISTS", "tactician:lock:redis").strip() == "0"
    for host in foreign_redis.hosts:
        assert _server_pid(host) == pids[host.name], "a live change restarted %s" % host.name
        with open(host.path(CONF), encoding="utf-8") as handle:
            assert re.search(r"^maxmemory-policy allkeys-lfu$", handle.read(), re.M), host.name
        stat = os.stat(host.path(CONF))
        assert (stat.st_uid, stat.st_gid) == _redis_ids(), "the config file changed hands on %s" % host.name
    again = foreign_redis.roll("redis", {"maxmemory-policy": "allkeys-lfu"})
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.changed() == 0 or not any(
        res.get("changed") for task, _host, res in again.results if task.startswith("Reconfigure the node")
    )


def test_the_redis_tactic_role_finds_its_login_in_the_inventory(foreign_redis):
    playbook = os.path.join(ROOT, "tests", "integration", "playbooks", "redis_memory_tactic.yml")
    settings = {"tactic_settings": {"maxmemory": "64mb"}}
    check = run_playbook(playbook, foreign_redis.inventory, extra_vars=settings, check=True)
    assert check.returncode == 0, check.stderr[-3000:]
    assert set(_config_get(foreign_redis, "maxmemory").values()) == {"0"}
    result = run_playbook(playbook, foreign_redis.inventory, extra_vars=settings)
    assert result.returncode == 0, result.stderr[-3000:]
    assert PASSWORD not in result.stderr
    assert set(_config_get(foreign_redis, "maxmemory").values()) == {str(64 * 1024 * 1024)}
    for host in foreign_redis.hosts:  # CONFIG REWRITE by the server itself, into its packaged file
        with open(host.path(CONF), encoding="utf-8") as handle:
            assert re.search(r"^maxmemory 64mb$", handle.read(), re.M), host.name
    again = run_playbook(playbook, foreign_redis.inventory, extra_vars=settings)
    assert again.returncode == 0 and again.changed() == 0, again.stderr[-3000:]


def test_the_installed_tarball_rolls_the_cluster_by_its_playbook_name(foreign_redis, tmp_path):
    """As an operator runs it: the collection built and installed from its tarball, nothing else on the
    collections path, the playbook called by its fully qualified name from a directory outside the checkout."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections"), ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_CONFIG", None)
    bin_dir = os.path.dirname(sys.executable)
    build = subprocess.run(
        [os.path.join(bin_dir, "ansible-galaxy"), "collection", "build", "--force", "--output-path", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    tarball = [name for name in os.listdir(tmp_path) if name.endswith(".tar.gz")]
    install = subprocess.run(
        [os.path.join(bin_dir, "ansible-galaxy"), "collection", "install", "--offline", "--no-deps"]
        + ["-p", str(tmp_path / "collections"), str(tmp_path / tarball[0])],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert install.returncode == 0, install.stderr
    roll = subprocess.run(
        [
            os.path.join(bin_dir, "ansible-playbook"),
            "-i",
            foreign_redis.inventory,
            "tactician.nosql.rolling_reconfigure",
        ]
        + ["-e", "tactician_store=redis", "-e", '{"tactician_settings": {"maxmemory-samples": 7}}'],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert roll.returncode == 0, roll.stdout[-4000:] + roll.stderr[-2000:]
    assert PASSWORD not in roll.stdout + roll.stderr
    assert set(_config_get(foreign_redis, "maxmemory-samples").values()) == {"7"}


class _Load:
    """A client of the cluster over TLS (hostname verified, the client certificate presented) writing a new key
    and reading an older one, one after the other, until stopped: every error is counted, every write the
    cluster acknowledged is kept to be read back."""

    def __init__(self, cluster):
        from redis.backoff import ExponentialBackoff
        from redis.cluster import ClusterNode, RedisCluster
        from redis.retry import Retry

        self.client = RedisCluster(
            startup_nodes=[ClusterNode(host.address, 6379) for host in cluster.hosts],
            password=PASSWORD,
            ssl=True,
            ssl_ca_certs=cluster.tls["ca"],
            ssl_certfile=cluster.tls["client_cert"],
            ssl_keyfile=cluster.tls["client_key"],
            ssl_check_hostname=True,
            decode_responses=True,
            retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), 10),
            socket_timeout=5,
        )
        self.acknowledged, self.failed, self.reads = [], [], 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        i = 0
        while not self.stop.is_set():
            key = "foreign:load:%d" % i
            try:
                self.client.set(key, "v%d" % i)
                self.acknowledged.append(key)
                if i > 10:
                    self.client.get("foreign:load:%d" % (i // 2))
                    self.reads += 1
            except Exception as exc:  # every kind of failure a client sees counts
                self.failed.append("%s: %s" % (type(exc).__name__, exc))
            i += 1
            time.sleep(0.005)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=30)

    def missing(self):
        """The acknowledged keys the cluster no longer has."""
        lost = [key for key in self.acknowledged if self.client.get(key) is None]
        self.client.close()
        return lost


def _other_rdbchecksum(cluster):
    """A restart setting that changes something: rdbchecksum flipped from what the cluster runs."""
    return {"rdbchecksum": "yes" if set(_config_get(cluster, "rdbchecksum").values()) == {"no"} else "no"}


def test_a_restart_roll_under_load_fails_no_operation_and_keeps_every_acknowledged_write(
    foreign_redis, record_property
):
    """A restart setting (rdbchecksum) rolled through the package's service script under a client's load: check mode
    restarts nothing; the roll restarts every node (a new PID each, one server per host as its PID file says, the
    value in its packaged redis.conf, restart_required and the downtime in each step) and leaves the cluster at
    cluster_state ok; no operation of the client fails, every acknowledged write reads back; a second run changes
    nothing. (This test also holds what the former test of a restart setting through the service script asserted:
    both rolled the same restart setting over the same six nodes.)"""
    wanted = _other_rdbchecksum(foreign_redis)
    pids = {host.name: _server_pid(host) for host in foreign_redis.hosts}
    running = _config_get(foreign_redis, "rdbchecksum")
    check = foreign_redis.roll("redis", wanted, check=True)
    assert check.returncode == 0, check.stderr[-3000:]
    assert {host.name: _server_pid(host) for host in foreign_redis.hosts} == pids, "check mode restarted a node"
    assert _config_get(foreign_redis, "rdbchecksum") == running, "check mode changed a node"
    with _Load(foreign_redis) as load:
        time.sleep(2)
        result = foreign_redis.roll("redis", wanted)
        time.sleep(2)
    assert result.returncode == 0, result.stderr[-3000:]
    record_property("acknowledged_writes", len(load.acknowledged))
    record_property("reads", load.reads)
    record_property("failed_operations", len(load.failed))
    assert load.failed == [], load.failed[:5]
    assert len(load.acknowledged) > 100 and load.reads > 50
    assert load.missing() == []
    assert set(_config_get(foreign_redis, "rdbchecksum").values()) == {wanted["rdbchecksum"]}
    for host in foreign_redis.hosts:
        servers = _servers_of(host)
        assert servers == [_server_pid(host)], "%s runs %s, its PID file says %s" % (
            host.name,
            servers,
            _server_pid(host),
        )
        assert servers[0] != pids[host.name], "%s was not restarted" % host.name
        with open(host.path(CONF), encoding="utf-8") as handle:
            assert re.search(r"^rdbchecksum %s$" % wanted["rdbchecksum"], handle.read(), re.M), host.name
    _wait_cluster_ok(foreign_redis)  # every slot served again, every replica link up
    steps = [res for task, _host, res in result.results if task.startswith("Reconfigure the node, restarted")]
    assert len(steps) == len(foreign_redis.hosts)
    assert all(res.get("restart_required") and res.get("downtime") is not None for res in steps), steps
    again = foreign_redis.roll("redis", wanted)
    assert again.returncode == 0, again.stderr[-3000:]
    assert not any(res.get("changed") for task, _host, res in again.results if task.startswith("Reconfigure the node"))


def test_the_load_driver_reaches_the_cluster_over_tls_with_its_client_certificate(foreign_redis):
    """YCSB through the collection's Jedis binding, as the measuring playbooks run it: TLS with the client
    certificate the nodes require and each node's certificate checked against the address the cluster reports for
    it; without the certificate the nodes refuse the driver and the run says so."""
    from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
    from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run

    params = load_run.with_defaults(
        store="redis",
        driver_home=foreign.install_load_driver(),
        hosts=["%s:6379" % foreign_redis.hosts[0].address],
        login_password=PASSWORD,
        tls=True,
        ca_file=foreign_redis.tls["ca"],
        client_cert_file=foreign_redis.tls["client_cert"],
        client_key_file=foreign_redis.tls["client_key"],
        validate_certs=True,
        check_hostname=True,
        workload="a",
        phases=["load", "run"],
        properties={"recordcount": 1000, "operationcount": 1000000000},
        max_seconds=3,
        threads=4,
    )
    results = load_run.execute(params, load_run.plan(params))
    run = results[-1]
    assert results[0]["failed_total"] == 0 and run["failed_total"] == 0, results
    assert run["throughput"] > 0 and run["operations"], run
    bare = dict(params, client_cert_file=None, client_key_file=None, phases=["run"])
    with pytest.raises(TacticianError, match="served nothing: cannot connect to the Redis cluster"):
        load_run.execute(bare, load_run.plan(bare))


def _lock_value(cluster):
    """The record of the cluster's rolling lock (its key, read through the slot's master), or '' when none."""
    return _cli(cluster, cluster.hosts[0].address, "-c", "GET", "tactician:lock:redis").strip()


def test_two_controllers_at_once_the_second_is_refused_by_the_lock_in_the_cluster(foreign_redis, tmp_path):
    """Two controllers, each its own ansible-playbook process: the first takes the cluster's rolling lock (the key
    tactician:lock:redis in the cluster, through the inventory's tactician_lock_store over TLS) and holds it, as a
    roll does between its first and its last play; a roll started meanwhile is refused by it (is held by), touches
    no node and leaves the holder's record as it was; the holder then gives the lock back. (The first controller
    holds the lock with tests/integration/playbooks/store_lock.yml rather than a second restart roll of the six
    nodes: the refusal is the same task of rolling_reconfigure.yml against the same record, and every other roll of
    this module takes and gives back the lock in the cluster.)"""
    wanted = _other_rdbchecksum(foreign_redis)
    running = _config_get(foreign_redis, "rdbchecksum")
    pids = {host.name: _server_pid(host) for host in foreign_redis.hosts}
    with held_lock("redis", "other-controller", _lock_store(foreign_redis), str(tmp_path / "release")) as first:
        assert '"run_id": "other-controller"' in _lock_value(foreign_redis)
        # A second controller: its own run (its own process and run id), the same cluster.
        second = foreign_redis.roll("redis", wanted)
        assert second.returncode != 0
        assert "is held by" in second.stderr, second.stderr[-3000:]
        assert PASSWORD not in second.stderr
        assert not any(task.startswith("Reconfigure the node") for task, _host, _res in second.results)
        assert '"run_id": "other-controller"' in _lock_value(foreign_redis), "the refused roll changed the lock"
    assert first.run.returncode == 0, first.run.stderr[-3000:]
    assert _lock_value(foreign_redis) == ""
    assert _config_get(foreign_redis, "rdbchecksum") == running
    assert {host.name: _server_pid(host) for host in foreign_redis.hosts} == pids


def test_a_node_killed_as_it_restarts_is_rolled_back_and_the_roll_stops(foreign_redis):
    """The last test of the module: it leaves the cluster whole, on its previous configuration."""
    wanted = _other_rdbchecksum(foreign_redis)
    old = "no" if wanted["rdbchecksum"] == "yes" else "yes"
    result, killed = foreign_redis.roll_killing_the_first_restart("redis", wanted, _server_pid, 30)
    assert killed, "no node was restarted: %s" % result.stderr[-2000:]
    assert result.returncode != 0
    steps = [res for task, host, res in result.results if task.startswith("Reconfigure the node, restarted")]
    failed = [res for res in steps if res.get("failed")]
    assert len(failed) == 1 and failed[0]["rollback"]["ok"], failed
    assert "rolled back" in failed[0]["msg"]
    assert len(steps) == 1, "the roll went on after the failed node: %d steps" % len(steps)
    host = killed["host"]
    with open(host.path(CONF), encoding="utf-8") as handle:
        assert re.search(r"^rdbchecksum %s$" % old, handle.read(), re.M), "not restored on %s" % host.name
    assert _servers_of(host) == [_server_pid(host)] and _server_pid(host) != killed["pid"]
    _wait_cluster_ok(foreign_redis)
    assert set(_config_get(foreign_redis, "rdbchecksum").values()) == {old}
    # The rollback succeeded, so the lock was given back: the next roll may start.
    assert _cli(foreign_redis, foreign_redis.hosts[0].address, "-c", "EXISTS", "tactician:lock:redis").strip() == "0"
