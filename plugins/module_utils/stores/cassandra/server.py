# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Apache Cassandra server processes run from Maven Central jars, and nodetool.

Builds the java argument vectors for the server (CassandraDaemon) and for nodetool with the
Java 17 module flags that upstream ships in conf/jvm17-server.options and jvm17-clients.options,
runs nodetool with argument lists only (a JMX password goes through a 0600 password file, never
the command line), and parses `nodetool status`.
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import tempfile

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import StoreError

_SERVER_EXPORTS = (
    "java.base/jdk.internal.misc",
    "java.management.rmi/com.sun.jmx.remote.internal.rmi",
    "java.rmi/sun.rmi.registry",
    "java.rmi/sun.rmi.server",
    "java.sql/java.sql",
    "java.base/java.lang.ref",
    "jdk.unsupported/sun.misc",
    "jdk.compiler/com.sun.tools.javac.file",
    "jdk.attach/sun.tools.attach",
)
_SERVER_OPENS = (
    "java.base/java.lang.module",
    "java.base/jdk.internal.loader",
    "java.base/jdk.internal.ref",
    "java.base/jdk.internal.reflect",
    "java.base/jdk.internal.math",
    "java.base/jdk.internal.module",
    "java.base/jdk.internal.util.jar",
    "jdk.management/com.sun.management.internal",
    "java.base/sun.nio.ch",
    "java.base/java.io",
    "java.base/java.lang.reflect",
    "jdk.compiler/com.sun.tools.javac",
    "java.base/java.lang",
    "java.base/java.util",
    "java.base/java.nio",
)
_CLIENT_EXPORTS = (
    "java.base/jdk.internal.misc",
    "java.base/jdk.internal.ref",
    "java.base/sun.nio.ch",
    "java.management.rmi/com.sun.jmx.remote.internal.rmi",
    "java.rmi/sun.rmi.registry",
    "java.rmi/sun.rmi.server",
    "java.sql/java.sql",
    "jdk.unsupported/sun.misc",
    "jdk.compiler/com.sun.tools.javac.file",
    "jdk.attach/sun.tools.attach",
)
_CLIENT_OPENS = (
    "java.base/java.lang.module",
    "java.base/jdk.internal.loader",
    "java.base/jdk.internal.ref",
    "java.base/jdk.internal.reflect",
    "java.base/jdk.internal.math",
    "java.base/jdk.internal.module",
    "java.base/jdk.internal.util.jar",
    "jdk.management/com.sun.management.internal",
    "java.base/sun.nio.ch",
    "java.base/java.io",
    "java.base/java.util.concurrent",
    "java.base/java.util",
    "java.base/java.util.concurrent.atomic",
    "java.base/java.lang",
    "java.base/java.math",
    "jdk.compiler/com.sun.tools.javac",
    "java.base/java.lang.reflect",
    "java.base/java.net",
)
_G1 = (
    "-XX:+UseG1GC",
    "-XX:+ParallelRefProcEnabled",
    "-XX:MaxTenuringThreshold=1",
    "-XX:G1RSetUpdatingPauseTimePercent=5",
    "-XX:MaxGCPauseMillis=300",
    "-XX:InitiatingHeapOccupancyPercent=70",
)

DAEMON_CLASS = "org.apache.cassandra.service.CassandraDaemon"
NODETOOL_CLASS = "org.apache.cassandra.tools.NodeTool"


class CassandraServerError(StoreError):
    """A server or nodetool invocation failed."""


def _module_flags(exports, opens):
    flags = ["-Djdk.attach.allowAttachSelf=true"]
    for item in exports:
        flags += ["--add-exports", item + "=ALL-UNNAMED"]
    for item in opens:
        flags += ["--add-opens", item + "=ALL-UNNAMED"]
    return flags


def lib_dir(cassandra_home):
    return os.path.join(cassandra_home, "lib")


def jamm_agent(cassandra_home):
    """Path of the jamm agent jar in lib/ (Cassandra measures object sizes with it)."""
    found = sorted(glob.glob(os.path.join(lib_dir(cassandra_home), "jamm-*.jar")))
    if not found:
        raise CassandraServerError(
            "no jamm-*.jar in %s: is Cassandra installed there (cassandra_home)?" % lib_dir(cassandra_home)
        )
    return found[-1]


def server_argv(
    cassandra_home,
    config_file,
    storage_dir,
    log_dir,
    logback_file,
    jmx_port,
    heap_size="512M",
    java="java",
    extra_options=(),
    fast_start=True,
):
    """The java argument vector that runs one Cassandra node in the foreground."""
    # The whole heap faulted in at start, as Cassandra's own conf/jvm-server.options does: the node's resident
    # memory is then fixed from its first request, and so is the page cache a memory limit leaves it. Without it
    # the heap's pages were touched as garbage collection reached them, so a node's page cache shrank as it ran,
    # by more on a node that had compacted: a drift within a run, and a difference between two nodes of the same
    # configuration (docs/benchmarks.md, 2026-12-07).
    argv = [java, "-Xms" + heap_size, "-Xmx" + heap_size, "-Xss256k", "-XX:+AlwaysPreTouch"]
    argv += list(_G1)
    argv += ["-XX:+HeapDumpOnOutOfMemoryError", "-XX:HeapDumpPath=" + storage_dir]
    argv += _module_flags(_SERVER_EXPORTS, _SERVER_OPENS)
    argv += [
        "-Dio.netty.tryReflectionSetAccessible=true",
        "-Dio.netty.allocator.useCacheForAllThreads=true",
        "-Dio.netty.allocator.maxOrder=11",
        "-Dcassandra.config=file://" + os.path.abspath(config_file),
        "-Dcassandra.storagedir=" + storage_dir,
        "-Dcassandra.logdir=" + log_dir,
        "-Dcassandra-foreground=yes",
        "-Dlogback.configurationFile=file://" + os.path.abspath(logback_file),
        "-Dcassandra.jmx.local.port=%d" % int(jmx_port),
        "-javaagent:" + jamm_agent(cassandra_home),
    ]
    if fast_start:
        argv += [
            "-Dcassandra.skip_wait_for_gossip_to_settle=0",
            "-Dcassandra.ring_delay_ms=5000",
            "-Dcassandra.superuser_setup_delay_ms=0",
        ]
    argv += list(extra_options)
    argv += ["-cp", os.path.join(lib_dir(cassandra_home), "*"), DAEMON_CLASS]
    return argv


# nodetool's logging when the installation has no logback-tools.xml of its own: warnings to stderr, never to stdout,
# which the callers parse (logback's own default logs DEBUG lines to stdout, in front of `tablestats -F json`).
NODETOOL_LOGBACK = """<configuration scan="false">
  <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%-5level %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="STDERR" /></root>
</configuration>
"""

# Where an installation keeps nodetool's logging: the tarball's conf/, the packages' /etc/cassandra.
PACKAGED_CONF_DIRS = ("/etc/cassandra",)


def tools_logback(cassandra_home):
    """The installation's logback-tools.xml (its conf/, else the packages' /etc/cassandra), or None."""
    for folder in (os.path.join(cassandra_home, "conf"),) + PACKAGED_CONF_DIRS:
        path = os.path.join(folder, "logback-tools.xml")
        if os.path.exists(path):
            return path
    return None


def nodetool_argv(
    cassandra_home, host, jmx_port, args, java="java", jmx_user=None, password_file=None, logback_file=None
):
    """The java argument vector of one nodetool call (JMX password only through password_file). logback_file:
    nodetool's logging configuration when the installation has none (tools_logback)."""
    argv = [java, "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
    argv += _module_flags(_CLIENT_EXPORTS, _CLIENT_OPENS)
    logback = tools_logback(cassandra_home) or logback_file
    if logback:
        argv += ["-Dlogback.configurationFile=file://" + logback]
    argv += ["-cp", os.path.join(lib_dir(cassandra_home), "*"), NODETOOL_CLASS]
    argv += ["-h", host, "-p", str(int(jmx_port))]
    if jmx_user:
        argv += ["-u", jmx_user]
    if password_file:
        argv += ["-pwf", password_file]
    argv += list(args)
    return argv


def run_nodetool(cassandra_home, host, jmx_port, args, java="java", jmx_user=None, jmx_password=None, timeout=120):
    """Run nodetool; returns stdout. Raises CassandraServerError on a non-zero exit or a timeout."""
    password_file = logback_file = None
    try:
        if jmx_password:
            fd, password_file = tempfile.mkstemp(prefix="tactician-jmx-")
            with os.fdopen(fd, "w") as handle:
                handle.write("%s %s\n" % (jmx_user or "", jmx_password))
        if tools_logback(cassandra_home) is None:
            fd, logback_file = tempfile.mkstemp(prefix="tactician-nodetool-", suffix=".xml")
            with os.fdopen(fd, "w") as handle:
                handle.write(NODETOOL_LOGBACK)
        argv = nodetool_argv(cassandra_home, host, jmx_port, args, java, jmx_user, password_file, logback_file)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise CassandraServerError(
                "nodetool %s on %s:%s timed out after %ss" % (" ".join(args), host, jmx_port, timeout)
            ) from exc
        except OSError as exc:
            raise CassandraServerError("cannot run java for nodetool: %s" % exc) from exc
    finally:
        for path in (password_file, logback_file):
            if path:
                os.unlink(path)
    if proc.returncode != 0:
        message = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise CassandraServerError(
            "nodetool %s on %s:%s failed (exit %d): %s"
            % (" ".join(args), host, jmx_port, proc.returncode, " | ".join(message[-5:]))
        )
    return proc.stdout


_STATUS_LINE = re.compile(r"^([UD])([NLJM])\s+(\S+)\s+")


def parse_status(text):
    """Parse `nodetool status`: {address: 'UN' | 'DN' | ...} for every node of every datacenter."""
    nodes = {}
    for line in text.splitlines():
        match = _STATUS_LINE.match(line.strip())
        if match:
            address = match.group(3)
            if address.count(":") == 1:
                address = address.split(":")[0]
            nodes[address] = match.group(1) + match.group(2)
    return nodes
