"""A Cassandra cluster the collection did not build, rolled through the operator's own inventory.

Two hosts on loopback addresses of their own, reached by Ansible over SSH (foreign.py), each laid out as the
Debian package of Apache Cassandra lays a node out: the installation in /usr/share/cassandra (its lib/ of jars,
the Cassandra 5.0 jars from Maven Central), the configuration in /etc/cassandra (cassandra.yaml,
cassandra-env.sh, the JVM options, logback.xml), the data in /var/lib/cassandra, the logs in /var/log/cassandra,
and a SysV script /etc/init.d/cassandra that `service cassandra start|stop` drives (start-stop-daemon and a PID
file in /run/cassandra). Password authentication, and client TLS with client certificates required (a CA made
here, a certificate per node naming its address). The keyspace is made at RF 2 with cqlsh's statements, the way
an operator would. No lab role, lab path or runner of the collection's own is involved.

Two departures from a real host, both for the machine the tests share: the server runs as root (no `cassandra`
system user is added to this machine), and the hosts share one network namespace, so each node's JMX, bound to
loopback as the package binds it, has a port of its own (the inventory's tactician_jmx_port).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import threading
import time

import foreign
import pytest
from ansible_run import ROOT, held_lock, run_playbook

from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import health as cassandra_cluster
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import server

pytestmark = pytest.mark.integration

pytest.importorskip("cryptography")
from pki import Authority  # noqa: E402

yaml = pytest.importorskip("yaml")

VERSION = "5.0.9"
HOSTS = [("cass-a", "127.0.0.71"), ("cass-b", "127.0.0.72")]
JMX = {"cass-a": 7671, "cass-b": 7672}
DIRS = ["/etc/cassandra", "/var/lib/cassandra", "/var/log/cassandra", "/run/cassandra", "/etc/init.d"]
HOME = "/usr/share/cassandra"
CONF = "/etc/cassandra/cassandra.yaml"
PIDFILE = "/run/cassandra/cassandra.pid"
# The package's first superuser, used once to make the operator's own role: a login as "cassandra" reads its role
# at QUORUM, so it fails whenever a replica of system_auth is down, as in every restart of a roll.
FIRST_USER, FIRST_PASSWORD = "cassandra", "cassandra"
USER, PASSWORD = "tactician_ops", "foreign-ops-" + secrets.token_hex(8)  # a throwaway cluster of this test only
# The application's own role, no superuser, with the grants it needs on its keyspace only.
APP_USER, APP_PASSWORD = "foreign_app", "foreign-app-" + secrets.token_hex(8)
KEYSPACE = "foreign_it"

INIT_SCRIPT = r"""#!/bin/sh
### BEGIN INIT INFO
# Provides:          cassandra
# Required-Start:    $remote_fs $network $named $time
# Required-Stop:     $remote_fs $network $named $time
# Should-Start:      ntp mdadm
# Should-Stop:       ntp mdadm
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: distributed storage system for structured data
### END INIT INFO
NAME=cassandra
DESC="Cassandra"
PIDFILE=/run/cassandra/cassandra.pid
CONFDIR=/etc/cassandra
CASSANDRA_HOME=/usr/share/cassandra
JAVA=$(readlink -f "$(command -v java)")
MAX_HEAP_SIZE=512M
JMX_PORT=7199
JVM_EXTRA_OPTS=
[ -r /lib/lsb/init-functions ] && . /lib/lsb/init-functions
[ -r $CONFDIR/cassandra-env.sh ] && . $CONFDIR/cassandra-env.sh

do_start() {
    mkdir -p /run/cassandra
    start-stop-daemon --start --quiet --oknodo --background --make-pidfile --pidfile $PIDFILE \
        --output /var/log/cassandra/output.log --exec "$JAVA" -- \
        -Xms$MAX_HEAP_SIZE -Xmx$MAX_HEAP_SIZE $(grep -v '^[[:space:]]*#' $CONFDIR/jvm-server.options) \
        -Dcassandra.config=file://$CONFDIR/cassandra.yaml -Dcassandra.storagedir=/var/lib/cassandra \
        -Dcassandra.logdir=/var/log/cassandra -Dlogback.configurationFile=file://$CONFDIR/logback.xml \
        -Dcassandra.jmx.local.port=$JMX_PORT -Dcassandra-foreground=yes \
        -javaagent:$(ls $CASSANDRA_HOME/lib/jamm-*.jar | tail -n 1) $JVM_EXTRA_OPTS \
        -cp "$CASSANDRA_HOME/lib/*" org.apache.cassandra.service.CassandraDaemon
}

do_stop() {
    start-stop-daemon --stop --quiet --oknodo --pidfile $PIDFILE --exec "$JAVA" --retry TERM/180/KILL/5
    status=$?
    rm -f $PIDFILE
    return $status
}

case "$1" in
    start)
        echo -n "Starting $DESC: "
        do_start && echo "$NAME." ;;
    stop)
        echo -n "Stopping $DESC: "
        do_stop && echo "$NAME." ;;
    restart|force-reload)
        do_stop
        do_start ;;
    status)
        status_of_proc -p $PIDFILE "$JAVA" $NAME ;;
    *)
        echo "Usage: /etc/init.d/$NAME {start|stop|restart|force-reload|status}" >&2
        exit 3 ;;
esac
"""

LOGBACK = """<configuration scan="false">
  <appender name="SYSTEMLOG" class="ch.qos.logback.core.FileAppender">
    <file>/var/log/cassandra/system.log</file>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="SYSTEMLOG" /></root>
</configuration>
"""


def _jars():
    """The Cassandra jars from Maven Central, in the checkout's shared folder (the lab's and the tests' own):
    what the package's /usr/share/cassandra holds. Resolved with Maven when no earlier run did."""
    home = os.path.join(ROOT, ".lab", "cassandra-%s" % VERSION)
    marker = os.path.join(home, "lib", "cassandra-all-%s.jar" % VERSION)
    if os.path.exists(marker):
        return home
    if shutil.which("mvn") is None:
        pytest.skip("the Cassandra jars are not resolved and Maven is missing (make bootstrap)")
    os.makedirs(home, exist_ok=True)
    pom = os.path.join(home, "pom.xml")
    if not os.path.exists(pom):
        with open(pom, "w", encoding="utf-8") as handle:
            handle.write(
                '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
                "<groupId>tactician.nosql.lab</groupId><artifactId>cassandra-runtime</artifactId>"
                "<version>%s</version><packaging>pom</packaging><dependencies><dependency>"
                "<groupId>org.apache.cassandra</groupId><artifactId>cassandra-all</artifactId>"
                "<version>%s</version></dependency></dependencies></project>\n" % (VERSION, VERSION)
            )
    subprocess.run(
        ["mvn", "-q", "-B", "-f", pom, "dependency:copy-dependencies", "-DincludeScope=runtime"]
        + ["-DoutputDirectory=%s" % os.path.join(home, "lib.partial")]
        + ["-Dmaven.repo.local=%s" % os.path.join(ROOT, ".lab", "m2")],
        check=True,
    )
    os.rename(os.path.join(home, "lib.partial"), os.path.join(home, "lib"))
    return home


def _jvm_options(jars):
    """The JVM options file of the package (upstream's jvm17-server.options): every flag of the server's java
    command line but the heap, the paths and the class path, which the init script adds."""
    argv = server.server_argv(jars, "/x.yaml", "/x", "/x", "/x.xml", 7199, java="java", fast_start=False)
    keep = []
    skip_next = False
    for arg in argv[1:]:
        if skip_next:
            skip_next = False
            continue
        if arg == "-cp":
            skip_next = True
            continue
        if arg.startswith(("-Xms", "-Xmx", "-Dcassandra.", "-Dlogback.", "-javaagent:", "-XX:HeapDumpPath")):
            continue
        if arg.startswith("org.apache."):
            continue
        keep.append(arg)
    lines, i = [], 0
    while i < len(keep):  # --add-exports X=ALL-UNNAMED stays one line
        if keep[i] in ("--add-exports", "--add-opens"):
            lines.append("%s %s" % (keep[i], keep[i + 1]))
            i += 2
        else:
            lines.append(keep[i])
            i += 1
    return "# JVM options of the server (upstream's jvm17-server.options)\n" + "\n".join(lines) + "\n"


def _cassandra_yaml(address, seed):
    return dict(
        cluster_name="foreign",
        num_tokens=16,
        allocate_tokens_for_local_replication_factor=2,
        partitioner="org.apache.cassandra.dht.Murmur3Partitioner",
        data_file_directories=["/var/lib/cassandra/data"],
        commitlog_directory="/var/lib/cassandra/commitlog",
        saved_caches_directory="/var/lib/cassandra/saved_caches",
        hints_directory="/var/lib/cassandra/hints",
        cdc_raw_directory="/var/lib/cassandra/cdc_raw",
        commitlog_sync="periodic",
        commitlog_sync_period="10000ms",
        seed_provider=[
            dict(
                class_name="org.apache.cassandra.locator.SimpleSeedProvider",
                parameters=[dict(seeds="%s:7000" % seed)],
            )
        ],
        listen_address=address,
        rpc_address=address,
        endpoint_snitch="SimpleSnitch",
        authenticator="PasswordAuthenticator",
        authorizer="CassandraAuthorizer",
        role_manager="CassandraRoleManager",
        auto_snapshot=False,
        # Two nodes, system_auth at RF 2: the default LOCAL_QUORUM of role reads needs both, so a login that misses
        # the auth caches while one node restarts would be refused; the operator of such a cluster reads at ONE.
        auth_read_consistency_level="LOCAL_ONE",
        client_encryption_options=dict(
            enabled=True,
            optional=False,
            require_client_auth=True,
            ssl_context_factory=dict(class_name="org.apache.cassandra.security.PEMBasedSslContextFactory"),
            keystore="/etc/cassandra/tls/node.pem",
            truststore="/etc/cassandra/tls/ca.pem",
        ),
    )


def _login(cluster, host=None, first=False, app=False):
    hosts = [host.address] if host else [h.address for h in cluster.hosts]
    user, password = (FIRST_USER, FIRST_PASSWORD) if first else (APP_USER, APP_PASSWORD) if app else (USER, PASSWORD)
    return dict(
        login_hosts=hosts,
        login_user=user,
        login_password=password,
        ssl=True,
        ssl_ca_file=cluster.tls["ca"],
        ssl_cert_file=cluster.tls["client_cert"],
        ssl_key_file=cluster.tls["client_key"],
    )


def _wait_cql(cluster, host, timeout=300, first=False):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            session_cluster, session = cql.connect(_login(cluster, host, first=first))
            try:
                peers = list(session.execute("SELECT peer FROM system.peers_v2"))
                return len(peers)
            finally:
                session_cluster.shutdown()
        except cql.CassandraError as exc:
            last = exc
            time.sleep(2)
    log = host.path("/var/log/cassandra/system.log")
    tail = open(log, encoding="utf-8", errors="replace").read()[-3000:] if os.path.exists(log) else "(no log)"
    raise RuntimeError("%s did not answer CQL over TLS: %s\n%s" % (host.name, last, tail))


def _server_pid(host):
    with open(host.path(PIDFILE), encoding="utf-8") as handle:
        return int(handle.read().strip())


def _javas_of(host):
    out = subprocess.run(
        ["pgrep", "-f", "file:///etc/cassandra/cassandra.yaml"], capture_output=True, text=True, check=False
    )
    pids = []
    for pid in out.stdout.split():
        try:  # a server of this host: its mount namespace's /etc/cassandra is this host's
            with open("/proc/%s/root%s" % (pid, "/etc/cassandra/tls/owner"), encoding="utf-8") as handle:
                if handle.read().strip() == host.name:
                    pids.append(int(pid))
        except OSError:
            continue
    return sorted(pids)


@pytest.fixture(scope="module")
def foreign_cassandra(tmp_path_factory):
    lacks = foreign.missing() + ([] if shutil.which("java") else ["java (make bootstrap)"])
    if lacks:
        pytest.skip("a foreign cluster needs " + ", ".join(lacks))
    jars = _jars()
    folder = str(tmp_path_factory.mktemp("foreign-cassandra"))
    cluster = foreign.ForeignCluster(
        os.path.join(folder, "hosts"),
        HOSTS,
        DIRS,
        seed=["/etc/init.d"],
        # the jars only, as the package installs them: no conf/ beside them (the lab's own home has one)
        shared={HOME + "/lib": os.path.join(jars, "lib")},
    )
    cluster.stoppers = ["service cassandra stop >/dev/null 2>&1 || true"]
    cluster.pidfiles = [PIDFILE]
    pki = os.path.join(folder, "pki")
    os.makedirs(pki)
    authority = Authority(pki)
    client_cert, client_key = authority.issue("controller", server=False, client=True)
    cluster.tls = dict(ca=authority.ca_file, client_cert=client_cert, client_key=client_key)
    options = _jvm_options(jars)
    try:
        cluster.start()
        seed = cluster.hosts[0].address
        for host in cluster.hosts:
            script = host.path("/etc/init.d/cassandra")
            with open(script, "w", encoding="utf-8") as handle:
                handle.write(INIT_SCRIPT)
            os.chmod(script, 0o755)
            tls_dir = host.path("/etc/cassandra/tls")
            os.makedirs(tls_dir)
            cert, key = authority.issue(host.name, names=[host.address], server=True, client=True)
            with open(os.path.join(tls_dir, "node.pem"), "w", encoding="utf-8") as handle:
                handle.write(open(key, encoding="utf-8").read() + open(cert, encoding="utf-8").read())
            os.chmod(os.path.join(tls_dir, "node.pem"), 0o600)
            shutil.copyfile(authority.ca_file, os.path.join(tls_dir, "ca.pem"))
            with open(os.path.join(tls_dir, "owner"), "w", encoding="utf-8") as handle:
                handle.write(host.name + "\n")
            with open(host.path(CONF), "w", encoding="utf-8") as handle:
                handle.write("# Cassandra configuration of %s\n" % host.name)
                yaml.safe_dump(_cassandra_yaml(host.address, seed), handle, sort_keys=False)
            with open(host.path("/etc/cassandra/jvm-server.options"), "w", encoding="utf-8") as handle:
                handle.write(options)
            with open(host.path("/etc/cassandra/logback.xml"), "w", encoding="utf-8") as handle:
                handle.write(LOGBACK)
            with open(host.path("/etc/cassandra/cassandra-env.sh"), "w", encoding="utf-8") as handle:
                handle.write(
                    "# Sourced by /etc/init.d/cassandra\nMAX_HEAP_SIZE=512M\nJMX_PORT=%d\n"
                    "# A test cluster: the first superuser without the 10 s wait, no wait for gossip to settle\n"
                    'JVM_EXTRA_OPTS="-Dcassandra.superuser_setup_delay_ms=0 -Dcassandra.ring_delay_ms=5000'
                    ' -Dcassandra.skip_wait_for_gossip_to_settle=0"\n' % JMX[host.name]
                )
        for host in cluster.hosts:  # one node at a time, as a cluster is started
            host.ssh("service cassandra start")
            _wait_cql(cluster, host, first=True)
        session_cluster, session = cql.connect(_login(cluster, first=True))
        try:
            # what an operator does first: system_auth on every node, a role of their own (read at LOCAL_ONE)
            session.execute(
                "ALTER KEYSPACE system_auth WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}"
            )
            session.execute(
                "CREATE ROLE IF NOT EXISTS %s WITH PASSWORD = %%s AND LOGIN = true AND SUPERUSER = true" % USER,
                [PASSWORD],
            )
            session.execute(
                "CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {'class': 'SimpleStrategy', "
                "'replication_factor': 2}" % KEYSPACE
            )
            session.execute(
                "CREATE ROLE IF NOT EXISTS %s WITH PASSWORD = %%s AND LOGIN = true AND SUPERUSER = false" % APP_USER,
                [APP_PASSWORD],
            )
            session.execute("GRANT SELECT ON KEYSPACE %s TO %s" % (KEYSPACE, APP_USER))
            session.execute("GRANT MODIFY ON KEYSPACE %s TO %s" % (KEYSPACE, APP_USER))
        finally:
            session_cluster.shutdown()
        cluster.load_driver_home = foreign.install_load_driver()
        cluster.inventory = _write_inventory(cluster, folder)
        yield cluster
    finally:
        left = cluster.stop()
        assert not left, "left running by the foreign fixture: %s" % left


def _write_inventory(cluster, folder):
    """The operator's inventory: hosts by address, the service and its files, the login and the TLS files."""
    group = dict(
        tactician_service_name="cassandra",
        tactician_config_file=CONF,
        tactician_cassandra_home=HOME,
        tactician_jmx_host="127.0.0.1",
        tactician_cassandra_user=USER,
        tactician_cassandra_password=PASSWORD,
        **cluster.tls_vars(),
        tactician_cassandra_replication_factor=2,
        # where observe's readings on each node find the server's process and its data
        tactician_pid_file=PIDFILE,
        # where the operator installed the load driver, for the measuring playbooks on a bench host
        tactician_load_driver_home=cluster.load_driver_home,
        tactician_data_dir="/var/lib/cassandra",
    )
    return cluster.write_inventory(
        os.path.join(folder, "inventory"),
        "cassandra",
        group,
        all_vars={"tactician_lock_store": _lock_store(cluster)},
        host_vars={host.name: {"tactician_jmx_port": JMX[host.name]} for host in cluster.hosts},
    )


def _lock_store(cluster):
    """The inventory's tactician_lock_store: the rolling lock in the cluster itself, a row written by lightweight
    transactions, which every controller sees."""
    return dict(
        type="cassandra",
        address=cluster.hosts[0].address,
        login_user=USER,
        login_password=PASSWORD,
        tls=True,
        ca_file=cluster.tls["ca"],
        client_cert_file=cluster.tls["client_cert"],
        client_key_file=cluster.tls["client_key"],
    )


def _lock_row(cluster):
    """The record of the cluster's rolling lock (read at SERIAL), or None when nobody holds it."""
    session_cluster, session = cql.connect(_login(cluster))
    try:
        if cql.keyspace_replication(session, "tactician") is None:
            return None
        return cql.read_serial(session, "SELECT record FROM tactician.rolling_locks WHERE name = %s", ["cassandra"])
    finally:
        session_cluster.shutdown()


def _settings(cluster, name):
    values = {}
    for host in cluster.hosts:
        session_cluster, session = cql.connect(_login(cluster, host))
        try:
            row = session.execute("SELECT value FROM system_views.settings WHERE name = %s", [name]).one()
            values[host.name] = row.value
        finally:
            session_cluster.shutdown()
    return values


def test_a_live_setting_rolls_over_ssh_into_the_packaged_cassandra_yaml(foreign_cassandra):
    pids = {host.name: _server_pid(host) for host in foreign_cassandra.hosts}
    result = foreign_cassandra.roll("cassandra", {"compaction_throughput": 32})
    assert result.returncode == 0, result.stderr[-4000:]
    assert set(_settings(foreign_cassandra, "compaction_throughput").values()) == {"32MiB/s"}
    for host in foreign_cassandra.hosts:
        assert _server_pid(host) == pids[host.name], "a live change restarted %s" % host.name
        with open(host.path(CONF), encoding="utf-8") as handle:
            assert re.search(r"^compaction_throughput: 32MiB/s$", handle.read(), re.M), host.name


def test_a_restart_roll_that_would_refuse_logins_stops_before_any_node(foreign_cassandra):
    """system_auth at RF 1 (its one replica on one node): a restart of that node refuses every login that misses
    the auth caches, whatever level the clients use; the roll says so before it touches anything."""
    pids = {host.name: _server_pid(host) for host in foreign_cassandra.hosts}
    wanted = _other_max_threads(foreign_cassandra)
    session_cluster, session = cql.connect(_login(foreign_cassandra))
    alter = "ALTER KEYSPACE system_auth WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}"
    try:
        session.execute(alter % 1)
        try:
            result = foreign_cassandra.roll("cassandra", wanted)
        finally:
            session.execute(alter % 2)  # both nodes still hold every role: nothing was written meanwhile
    finally:
        session_cluster.shutdown()
    assert result.returncode != 0
    assert "system_auth" in result.stderr and "LOCAL_ONE" in result.stderr, result.stderr[-3000:]
    assert "Nothing was touched" in result.stderr
    assert not any(task.startswith("Reconfigure the node") for task, _host, _res in result.results)
    assert {host.name: _server_pid(host) for host in foreign_cassandra.hosts} == pids
    assert _lock_row(foreign_cassandra) is None


class _CqlLoad:
    """A client of the cluster over TLS (hostname verified, the client certificate presented) that writes a new row
    and reads an older one at ONE under its own role, one after the other, until stopped, as an application at RF 2
    does: its statements idempotent, so the driver may retry them on the other node. Every error is counted; every
    write the cluster acknowledged is kept to be read back."""

    def __init__(self, cluster, table):
        self.cluster_, self.table = cluster, table
        self.acknowledged, self.failed, self.reads = [], [], 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        owner_cluster, owner = cql.connect(_login(self.cluster_))
        try:
            owner.execute("CREATE TABLE IF NOT EXISTS %s.%s (k int PRIMARY KEY, v text)" % (KEYSPACE, self.table))
        finally:
            owner_cluster.shutdown()
        self.session_cluster, self.session = cql.connect(_login(self.cluster_, app=True))
        self.write = self.session.prepare("INSERT INTO %s.%s (k, v) VALUES (?, ?)" % (KEYSPACE, self.table))
        self.read = self.session.prepare("SELECT v FROM %s.%s WHERE k = ?" % (KEYSPACE, self.table))
        self.write.is_idempotent = self.read.is_idempotent = True
        self.thread.start()
        return self

    def _run(self):
        i = 0
        while not self.stop.is_set():
            try:
                self.session.execute(self.write, (i, "v%d" % i), timeout=10)
                self.acknowledged.append(i)
                if i > 10:
                    self.session.execute(self.read, (i // 2,), timeout=10)
                    self.reads += 1
            except Exception as exc:  # every kind of failure a client sees counts
                self.failed.append("%s: %s" % (type(exc).__name__, exc))
            i += 1
            time.sleep(0.005)

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=30)
        self.session_cluster.shutdown()

    def missing(self):
        """The acknowledged rows the cluster does not return, read at ALL (every replica asked) with both nodes up."""
        from cassandra import ConsistencyLevel
        from cassandra.query import SimpleStatement

        session_cluster, session = cql.connect(_login(self.cluster_))
        try:
            select = SimpleStatement(
                "SELECT k FROM %s.%s" % (KEYSPACE, self.table), consistency_level=ConsistencyLevel.ALL, fetch_size=5000
            )
            found = {row.k for row in session.execute(select, timeout=60)}
        finally:
            session_cluster.shutdown()
        return [k for k in self.acknowledged if k not in found]


def _other_max_threads(cluster):
    """A restart setting that changes something: native_transport_max_threads other than what the nodes run."""
    running = set(_settings(cluster, "native_transport_max_threads").values())
    return {"native_transport_max_threads": 96 if running == {"64"} else 64}


def test_a_restart_roll_under_load_drains_and_restarts_through_the_service_script(foreign_cassandra, record_property):
    pids = {host.name: _server_pid(host) for host in foreign_cassandra.hosts}
    wanted = _other_max_threads(foreign_cassandra)
    value = str(wanted["native_transport_max_threads"])
    check = foreign_cassandra.roll("cassandra", wanted, check=True)
    assert check.returncode == 0, check.stderr[-4000:]
    assert check.changed() == len(foreign_cassandra.hosts), check.stats
    assert {host.name: _server_pid(host) for host in foreign_cassandra.hosts} == pids, "check mode restarted a node"
    assert value not in set(_settings(foreign_cassandra, "native_transport_max_threads").values())
    with _CqlLoad(foreign_cassandra, "roll_load") as load:
        time.sleep(2)
        result = foreign_cassandra.roll("cassandra", wanted)
        time.sleep(2)
    assert result.returncode == 0, result.stderr[-4000:]
    record_property("acknowledged_writes", len(load.acknowledged))
    record_property("reads", load.reads)
    record_property("failed_operations", len(load.failed))
    assert load.failed == [], load.failed[:5]
    assert len(load.acknowledged) > 100 and load.reads > 50
    assert load.missing() == []
    assert set(_settings(foreign_cassandra, "native_transport_max_threads").values()) == {value}
    for host in foreign_cassandra.hosts:
        servers = _javas_of(host)
        assert servers == [_server_pid(host)], "%s runs %s, its PID file says %s" % (host.name, servers, pids)
        assert servers[0] != pids[host.name], "%s was not restarted" % host.name
    steps = [res for task, _host, res in result.results if task.startswith("Reconfigure the node, restarted")]
    assert len(steps) == 2 and all(res.get("restart_required") and res.get("downtime") for res in steps), steps
    assert _lock_row(foreign_cassandra) is None, "the lock was not given back"
    again = foreign_cassandra.roll("cassandra", wanted)
    assert again.returncode == 0, again.stderr[-4000:]
    assert again.changed() == 0, again.stats
    assert {host.name: _javas_of(host) for host in foreign_cassandra.hosts} == {
        host.name: [_server_pid(host)] for host in foreign_cassandra.hosts
    }


def test_a_peer_with_local_only_jmx_is_read_by_its_gossip_state_and_coordinator_latency(foreign_cassandra):
    """What a roll step reads of a peer whose JMX it cannot reach: its view of the ring and its client signals."""
    addresses = sorted(host.address for host in foreign_cassandra.hosts)
    for host in foreign_cassandra.hosts:
        params, node = _login(foreign_cassandra, host), dict(address=host.address, jmx_local=True)
        view = cassandra_cluster.node_views(dict(params, here=None), [node])[host.address]
        assert view.get("via") == "gossip" and view.get("cql", "").startswith("5.0"), view
        assert sorted(view["status"]) == addresses and set(view["status"].values()) == {"UN"}, view
        signals = cassandra_cluster.client_signals(dict(params, here=None), [node])[host.address]
        assert signals.get("via") == "cql" and "error" not in signals, signals
        assert signals["ops_per_s"] >= 0 and signals["errors_per_s"] is None, signals


def _small_load(cluster, stop):
    """Reads and writes over TLS until stop is set, so there is a workload to observe."""
    session_cluster, session = cql.connect(_login(cluster))
    try:
        session.execute("CREATE TABLE IF NOT EXISTS %s.kv (k int PRIMARY KEY, v text)" % KEYSPACE)
        write = session.prepare("INSERT INTO %s.kv (k, v) VALUES (?, ?)" % KEYSPACE)
        read = session.prepare("SELECT v FROM %s.kv WHERE k = ?" % KEYSPACE)
        i = 0
        while not stop.is_set():
            session.execute(write, (i % 500, "value %d" % i))
            session.execute(read, ((i * 7) % 500,))
            i += 1
    finally:
        session_cluster.shutdown()


def test_autotune_plans_from_cpu_memory_and_disk_read_on_each_node(foreign_cassandra, tmp_path, pgpass):
    """autotune on the operator's cluster, its history in a shared PostgreSQL database (TLS with the server's
    certificate verified and a client certificate; the password from libpq's password file, not the URL)."""
    from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history as history_store

    history = pgpass.url()

    stop = threading.Event()
    load = threading.Thread(target=_small_load, args=(foreign_cassandra, stop))
    load.start()
    try:
        time.sleep(3)
        result = run_playbook(
            os.path.join(ROOT, "playbooks", "autotune.yml"),
            foreign_cassandra.inventory,
            dict(
                tactician_store="cassandra",
                tactician_model_file=os.path.join(ROOT, "catalog", "models", "cassandra-lab.json"),
                tactician_history=history,
                tactician_plans_dir=str(tmp_path / "plans"),
                tactician_reports_dir=str(tmp_path / "reports"),
                tactician_autotune_observe_s=12,
                tactician_autotune_keyspaces=[KEYSPACE],
            ),
        )
    finally:
        stop.set()
        load.join()
    assert result.returncode == 0, result.stderr[-4000:]
    launched = [
        item
        for task, _host, res in result.results
        if task.startswith("Read CPU, memory and disk")
        for item in res.get("results", [res])
    ]
    # started on both nodes, over SSH, in the background of every window
    assert {item["item"] for item in launched} == {"cass-a", "cass-b"}
    assert all(item.get("ansible_job_id") for item in launched), launched
    store = history_store.open_history(history, create=False, readonly=True)
    try:
        samples = store.samples(cluster="cassandra")
    finally:
        store.close()
    nodes = [s for s in samples if s["node"] != "cluster"]
    assert len(nodes) == 3 * len(foreign_cassandra.hosts), [s["node"] for s in samples]
    # A node too busy to read on time may leave a 4 s window without readings enough: that sample says why and
    # keeps no resources; the others of the node carry the node's own.
    read = [s for s in nodes if s["extra"].get("resources_from")]
    for sample in nodes:
        if sample not in read:
            assert sample["extra"].get("resources_error"), sample["extra"]
    for host in foreign_cassandra.hosts:
        mine = [s for s in read if s["extra"]["resources_from"] == "node " + host.name]
        assert len(mine) >= 2, [s["extra"].get("resources_error") for s in nodes]
    for sample in nodes:
        extra = sample["extra"]
        if sample in read:
            assert extra["resources_from"] in ("node cass-a", "node cass-b"), extra
            assert sample["resources"]["cpu_pct"] is not None and sample["resources"]["disk_bytes"] > 0
            # the server's own CPU, from the PID file the inventory names, read on its host
            assert extra.get("process_cpu_pct") is not None and extra["process_cpu_pct"] > 0
        # nodetool on the node against its own loopback JMX, after the window: what only JMX gives
        assert "state_error" not in extra, extra["state_error"]
        assert sample["state"]["live_sstables"] is not None, sample["state"]
        assert sample["state"]["pending_compactions_estimated"] is not None, sample["state"]
    assert {s["extra"]["resources_from"] for s in read} == {"node cass-a", "node cass-b"}
    assert sum(s["throughput"] for s in samples if s["node"] == "cluster") > 0
    assert len(list((tmp_path / "plans").glob("cassandra-2*.yml"))) == 1


def _table_options(cluster, table):
    session_cluster, session = cql.connect(_login(cluster))
    try:
        return session.execute(
            "SELECT compaction, default_time_to_live FROM system_schema.tables "
            "WHERE keyspace_name = %s AND table_name = %s",
            [KEYSPACE, table],
        ).one()
    finally:
        session_cluster.shutdown()


def test_the_cassandra_tactic_role_finds_its_login_and_each_nodes_jmx_in_the_inventory(foreign_cassandra):
    playbook = os.path.join(ROOT, "tests", "integration", "playbooks", "cassandra_tactics.yml")
    running = _settings(foreign_cassandra, "concurrent_compactors")
    compactors = 3 if set(running.values()) != {"3"} else 2
    tactics = dict(
        tactic_tables=[
            dict(
                keyspace=KEYSPACE,
                name="tactic_events",
                columns={"k": "int", "v": "text"},
                primary_key=["k"],
                compaction={"class": "UnifiedCompactionStrategy", "scaling_parameters": "T4"},
                default_time_to_live=86400,
            )
        ],
        tactic_settings={"concurrent_compactors": compactors},
    )
    check = run_playbook(playbook, foreign_cassandra.inventory, extra_vars=tactics, check=True)
    assert check.returncode == 0, check.stderr[-3000:]
    assert _table_options(foreign_cassandra, "tactic_events") is None
    assert _settings(foreign_cassandra, "concurrent_compactors") == running
    result = run_playbook(playbook, foreign_cassandra.inventory, extra_vars=tactics)
    assert result.returncode == 0, result.stderr[-3000:]
    assert PASSWORD not in result.stderr and APP_PASSWORD not in result.stderr
    options = _table_options(foreign_cassandra, "tactic_events")
    assert options.default_time_to_live == 86400
    assert options.compaction["class"].endswith("UnifiedCompactionStrategy")
    assert options.compaction["scaling_parameters"] == "T4"
    # set live on each node by nodetool against its own JMX, and written to its packaged cassandra.yaml
    assert set(_settings(foreign_cassandra, "concurrent_compactors").values()) == {str(compactors)}
    for host in foreign_cassandra.hosts:
        with open(host.path(CONF), encoding="utf-8") as handle:
            assert re.search(r"^concurrent_compactors: %d$" % compactors, handle.read(), re.M), host.name
    again = run_playbook(playbook, foreign_cassandra.inventory, extra_vars=tactics)
    assert again.returncode == 0 and again.changed() == 0, again.stderr[-3000:]


def _compare(cluster, tmp_path, name, configs, **extra):
    """playbooks/compare.yml on the first host as the bench node: one round of short runs of YCSB A."""
    dataset = str(tmp_path / ("%s.jsonl" % name))
    result = run_playbook(
        os.path.join(ROOT, "playbooks", "compare.yml"),
        cluster.inventory,
        dict(
            tactician_compare_host=cluster.hosts[0].name,
            tactician_compare_workload="a",
            tactician_compare_rounds=1,
            tactician_compare_run_s=3,
            tactician_compare_warmup_s=0,
            tactician_compare_records=2000,
            tactician_compare_threads=4,
            tactician_compare_keyspace="tactician_compare_it",
            tactician_compare_configs=configs,
            tactician_compare_dataset=dataset,
            **extra,
        ),
    )
    return result, dataset


def _runs(result):
    """The last phase of every measured run of a compare.yml run."""
    return [res["results"][-1] for task, _host, res in result.results if task and task.startswith("Run the workload")]


def test_compare_measures_a_bench_host_through_its_service_and_tls(foreign_cassandra, tmp_path):
    """The measuring playbooks on a node the collection did not build, from its inventory alone: the load driver
    runs on the bench host and reaches the node over TLS with the client certificate and the hostname checked;
    a run of the restart design starts on a JVM its service script restarted (also when its configuration is the
    one the node runs), and no second server is ever started; a run already in the dataset is skipped (the
    comparison resumes: the restart design's first run is in the dataset beforehand, so one restart is measured,
    not two); the live design restarts nothing, runs on the rows in place (tactician_compare_load_rows false) and
    puts the default back; a setting that needs a restart is refused there before any run; the dataset is written
    on the controller."""
    import json

    from ansible_collections.tactician.nosql.plugins.module_utils.models import training

    host = foreign_cassandra.hosts[0]
    before = _server_pid(host)
    cold_dataset = str(tmp_path / "cold.jsonl")
    # The run of "one" in round 0, measured by an earlier, interrupted comparison: compare.yml skips it.
    seeded = dict(name="one", round=0, config={}, restarted=True, reloaded=True, ops_per_s=1.0, run={})
    assert training.append_row(cold_dataset, "a/one/0", seeded)
    seeded_line = open(cold_dataset, encoding="utf-8").read()
    cold, dataset = _compare(foreign_cassandra, tmp_path, "cold", {"one": {}, "same": {}})
    assert cold.returncode == 0, cold.stderr[-4000:]
    assert dataset == cold_dataset
    steps = [res for task, _host, res in cold.results if task and task.startswith("Reconfigure the node")]
    assert len(steps) == 1 and all(s["restart_forced"] and "start" in s["steps"] for s in steps), steps
    assert _server_pid(host) != before and len(_javas_of(host)) == 1
    runs = _runs(cold)
    assert len(runs) == 1, cold.results
    # the client's and the server's CPU beside the throughput: the server's read on its host from its PID file
    assert all(r["throughput"] > 0 and r["failed_total"] == 0 and r["server_cpu_s"] > 0 for r in runs), runs
    text = open(dataset, encoding="utf-8").read()
    assert text.startswith(seeded_line), "the run already in the dataset was changed"
    rows = [json.loads(line) for line in text.splitlines()]
    assert [r["key"] for r in rows] == ["a/one/0", "a/same/0"], rows
    assert rows[1].get("row", rows[1])["restarted"] is True, rows

    pid = _server_pid(host)
    live, _dataset = _compare(
        foreign_cassandra,
        tmp_path,
        "live",
        {"default": {}, "reads": {"concurrent_reads": 16}},
        tactician_compare_restart=False,
        tactician_compare_reload=False,
        tactician_compare_load_rows=False,  # the rows the restart design left
        tactician_compare_defaults={"concurrent_reads": 32},
    )
    assert live.returncode == 0, live.stderr[-4000:]
    assert _server_pid(host) == pid, "a live comparison restarted the bench node"
    assert len(_runs(live)) == 2
    assert all(r["throughput"] > 0 and r["failed_total"] == 0 for r in _runs(live)), _runs(live)
    assert _settings(foreign_cassandra, "concurrent_reads")[host.name] == "32"

    # The configuration that needs a restart first: refused before any run (nothing loaded, nothing measured).
    refused, _dataset = _compare(
        foreign_cassandra,
        tmp_path,
        "refused",
        {"big": {"memtable_heap_space": 64}, "default": {}},
        tactician_compare_restart=False,
        tactician_compare_load_rows=False,
    )
    assert refused.returncode != 0
    failed = [res.get("msg", "") for _task, _host, res in refused.results if res.get("failed")]
    assert any("memtable_heap_space" in msg and "allow_restart is false" in msg for msg in failed), failed
    assert _runs(refused) == []
    assert _server_pid(host) == pid


def test_a_race_and_training_points_on_the_bench_host_land_on_the_controller(foreign_cassandra, tmp_path):
    """tune.yml (iterated racing on live settings) and collect_training.yml (a design's points) on the operator's
    bench host: the runs go over TLS with the client certificate, the race history, the design and the dataset are
    written under the controller's tactician_lab_dir, and the node ends on its default configuration. The
    collection resumes: the design's first point (the default configuration) is in the dataset beforehand, so
    only its second point is measured (a live change from the default, and back). Then calibrate.yml stops on a
    node without a row cache."""
    import json

    from ansible_collections.tactician.nosql.plugins.module_utils.models import training

    host = foreign_cassandra.hosts[0]
    pid = _server_pid(host)
    common = dict(tactician_lab_dir=str(tmp_path / "state"))
    race = run_playbook(
        os.path.join(ROOT, "playbooks", "tune.yml"),
        foreign_cassandra.inventory,
        dict(
            common,
            tactician_tune_host=host.name,
            tactician_race={
                "parameters": ["concurrent_reads", "concurrent_writes"],
                "ranges": {"concurrent_reads": [8, 64], "concurrent_writes": [8, 64]},
            },
            tactician_race_budget_evaluations=4,
            tactician_race_repetitions=2,
            tactician_race_first_test=2,
            tactician_race_each_test=1,
            tactician_race_run_s=3,
            tactician_race_warmup_s=0,
            tactician_race_records=2000,
            tactician_race_threads=4,
            tactician_race_keyspace="tactician_race_it",
            tactician_race_restart=False,
        ),
    )
    assert race.returncode == 0, race.stderr[-4000:]
    history = tmp_path / "state" / "races" / "cassandra-ycsb-a.jsonl"
    lines = [json.loads(line) for line in history.read_text(encoding="utf-8").splitlines()]
    trials = lines[1:]
    assert lines[0]["schema"] == "tactician.race/v1" and 2 <= len(trials) <= 4, lines
    # a 3 s run on a busy machine may serve little yet: the race records what was measured
    assert all(t["run"]["failed_total"] == 0 for t in trials) and any(t["value"] > 0 for t in trials), trials
    assert race.task("The race's result", host.name)["result"]["finished"]

    # The default configuration's point, measured by an earlier, interrupted collection: collect_training.yml skips it.
    dataset = tmp_path / "state" / "datasets" / "cassandra-surrogate.jsonl"
    seeded = dict(workload={"name": "a"}, config={}, ops_per_s=1.0, run={"failed_total": 0, "server_cpu_s": 1.0})
    assert training.append_row(str(dataset), "p00/a", seeded)
    seeded_line = dataset.read_text(encoding="utf-8")
    collect = run_playbook(
        os.path.join(ROOT, "playbooks", "collect_training.yml"),
        foreign_cassandra.inventory,
        dict(
            common,
            tactician_collect_host=host.name,
            tactician_design={
                "parameters": ["concurrent_reads"],
                "ranges": {"concurrent_reads": [8, 64]},
                "points": 2,
                "method": "lhs",
            },
            tactician_collect_workloads=["a"],
            tactician_collect_records=2000,
            tactician_collect_threads=4,
            tactician_collect_warmup_s=2,
            tactician_collect_run_s=3,
            tactician_collect_keyspace="tactician_train_it",
        ),
    )
    assert collect.returncode == 0, collect.stderr[-4000:]
    assert (tmp_path / "state" / "designs" / "cassandra.yml").exists()
    text = dataset.read_text(encoding="utf-8")
    assert text.startswith(seeded_line), "the point already in the dataset was changed"
    rows = [json.loads(line) for line in text.splitlines()]
    assert [r["key"] for r in rows] == ["p00/a", "p01/a"], rows
    measured = rows[1].get("row", rows[1])
    assert measured["ops_per_s"] > 0 and measured["run"]["server_cpu_s"] > 0, rows
    cold_runs = [task for task, _host, res in collect.results if task and task.startswith("Run each workload cold")]
    assert len(cold_runs) == 1, "the point already in the dataset was measured again: %s" % cold_runs
    assert _server_pid(host) == pid, "live settings only: the bench node was not to restart"
    assert _settings(foreign_cassandra, "concurrent_reads")[host.name] == "32"

    # The resource model needs a row cache; this node has none (row_cache_size 0): calibrate.yml fills its table
    # over TLS, reads the cache's size on the node and stops there, saying what to set, with no model written.
    calibrate = run_playbook(
        os.path.join(ROOT, "playbooks", "calibrate.yml"),
        foreign_cassandra.inventory,
        dict(
            common,
            tactician_calibrate_host=host.name,
            tactician_calibrate_fill_records=200,
            tactician_calibrate_model_file=str(tmp_path / "state" / "resource.json"),
        ),
    )
    assert calibrate.returncode != 0
    failed = [res.get("msg", "") for _task, _host, res in calibrate.results if res.get("failed")]
    assert any("holds no rows" in msg and "row_cache_size" in msg for msg in failed), failed
    cache = calibrate.task("Size of the row cache in rows", host.name)
    assert cache["cache"]["capacity_bytes"] == 0, cache
    assert not (tmp_path / "state" / "resource.json").exists()


def test_two_controllers_at_once_the_second_is_refused_by_the_lock_row_in_the_cluster(foreign_cassandra, tmp_path):
    """Two controllers, each its own ansible-playbook process: the first takes the cluster's rolling lock (the row
    of tactician.rolling_locks, through the inventory's tactician_lock_store over TLS) and holds it, as a roll does
    between its first and its last play; a roll started meanwhile is refused by it (is held by), touches no node and
    leaves the holder's row as it was; the holder then gives the row back. (The first controller holds the lock with
    tests/integration/playbooks/store_lock.yml rather than a roll kept going by a 60 s pause between the nodes: the
    refusal is the same task of rolling_reconfigure.yml against the same row, and every other roll of this module
    takes and gives back the row.)"""
    running = _settings(foreign_cassandra, "compaction_throughput")
    wanted = {"compaction_throughput": 48 if set(running.values()) != {"48MiB/s"} else 40}
    pids = {host.name: _server_pid(host) for host in foreign_cassandra.hosts}
    with held_lock("cassandra", "other-controller", _lock_store(foreign_cassandra), str(tmp_path / "release")) as first:
        held = _lock_row(foreign_cassandra)
        assert held is not None and '"run_id": "other-controller"' in held["record"], held
        # A second controller: its own run (its own process and run id), the same cluster.
        second = foreign_cassandra.roll("cassandra", wanted)
        assert second.returncode != 0
        assert "is held by" in second.stderr, second.stderr[-3000:]
        assert PASSWORD not in second.stderr
        assert not any(task.startswith("Reconfigure the node") for task, _host, _res in second.results)
        assert _lock_row(foreign_cassandra) == held, "the refused roll changed the lock row"
    assert first.run.returncode == 0, first.run.stderr[-3000:]
    assert _lock_row(foreign_cassandra) is None
    assert _settings(foreign_cassandra, "compaction_throughput") == running
    assert {host.name: _server_pid(host) for host in foreign_cassandra.hosts} == pids


def test_a_node_killed_as_it_restarts_is_rolled_back_and_the_roll_stops(foreign_cassandra):
    """The last test of the module: it leaves the cluster whole, on its previous configuration."""
    before = {host.name: _server_pid(host) for host in foreign_cassandra.hosts}
    old = set(_settings(foreign_cassandra, "native_transport_max_threads").values())
    wanted = _other_max_threads(foreign_cassandra)
    # A cap only: the step sees the process gone through the service's status, long before this.
    result, killed = foreign_cassandra.roll_killing_the_first_restart("cassandra", wanted, _server_pid, 300)
    assert killed, "no node was restarted: %s" % result.stderr[-2000:]
    assert result.returncode != 0
    steps = [res for task, _host, res in result.results if task.startswith("Reconfigure the node, restarted")]
    failed = [res for res in steps if res.get("failed")]
    assert len(failed) == 1 and failed[0]["rollback"]["ok"], failed
    assert "exited while coming back" in failed[0]["msg"] and "rolled back" in failed[0]["msg"], failed[0]["msg"]
    assert len(steps) == 1, "the roll went on after the failed node: %d steps" % len(steps)
    host = killed["host"]
    with open(host.path(CONF), encoding="utf-8") as handle:
        text = handle.read()
    assert not re.search(r"^native_transport_max_threads: %d$" % wanted["native_transport_max_threads"], text, re.M)
    assert _javas_of(host) == [_server_pid(host)] and _server_pid(host) != killed["pid"]
    other = [h for h in foreign_cassandra.hosts if h is not host][0]
    assert _server_pid(other) == before[other.name], "the roll touched %s after the failed node" % other.name
    assert set(_settings(foreign_cassandra, "native_transport_max_threads").values()) == old
    # The rollback succeeded, so the lock was given back: the next roll may start.
    assert _lock_row(foreign_cassandra) is None
