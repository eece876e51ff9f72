# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Start and stop the in-memory MongoDB stand-in (mongo-java-server) for the tests.

    with running_standin() as server:          # 127.0.0.1:27117 unless told otherwise
        client = mongodb.connect(server.params())

    mongodb_standin = pytest_fixture()          # in a test module: a module-scoped fixture

The jars are resolved once with Maven from pom.xml next to this file into <repo>/.lab/mongodb-standin/lib
(Maven's own repository: <repo>/.lab/m2), and resolved again only when pom.xml changes. The stand-in runs as
a subprocess (argument list, no shell) and is stopped by its own PID; it also exits by itself when the
Python process that started it goes away (its standard input closes).

Run this file directly to keep a stand-in in the foreground for manual tries (Ctrl-C stops it).
See docs/testing-mongodb.md for what the stand-in can and cannot stand in for.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
POM = os.path.join(HERE, "pom.xml")
SOURCE = os.path.join(HERE, "StandIn.java")
LAB = os.path.join(ROOT, ".lab", "mongodb-standin")
LIB = os.path.join(LAB, "lib")
M2 = os.path.join(ROOT, ".lab", "m2")
STAMP = ".pom.sha256"

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 27117
DEFAULT_VERSION = "5.0"
READY_MARK = "STANDIN READY"


class StandInError(RuntimeError):
    """The stand-in could not be resolved, started or stopped."""


class StandIn:
    """A running stand-in: where it listens and how to reach it."""

    def __init__(self, host, port, pid, version, log_path):
        self.host = host
        self.port = port
        self.pid = pid
        self.version = version
        self.log_path = log_path

    def params(self, **overrides):
        """Connection options of the collection's MongoDB modules (mongodb_argument_spec) for this server."""
        params = {"login_host": self.host, "login_port": self.port, "direct_connection": True, "connect_timeout": 5.0}
        params.update(overrides)
        return params

    def __repr__(self):
        return f"StandIn({self.host}:{self.port}, pid={self.pid}, version={self.version})"


def _pom_digest():
    with open(POM, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def _jars_current(digest):
    try:
        with open(os.path.join(LIB, STAMP), encoding="utf-8") as handle:
            stamped = handle.read().strip()
    except OSError:
        return False
    return stamped == digest and any(name.endswith(".jar") for name in os.listdir(LIB))


def _tool(name):
    found = shutil.which(name)
    if name == "java" and not found and os.environ.get("JAVA_HOME"):
        candidate = os.path.join(os.environ["JAVA_HOME"], "bin", "java")
        found = candidate if os.access(candidate, os.X_OK) else None
    if not found:
        raise StandInError(f"{name} is not installed; scripts/bootstrap.sh installs Java 17 and Maven")
    return found


def ensure_jars(timeout=900):
    """Resolve mongo-java-server and its dependencies into LIB unless they are there for this pom.xml."""
    digest = _pom_digest()
    if _jars_current(digest):
        return LIB
    os.makedirs(LAB, exist_ok=True)
    with open(os.path.join(LAB, ".lock"), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _jars_current(digest):
            return LIB
        staging = LIB + ".partial"
        shutil.rmtree(staging, ignore_errors=True)
        argv = [
            _tool("mvn"),
            "-q",
            "-B",
            "-f",
            POM,
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            "-DoutputDirectory=" + staging,
            "-Dmaven.repo.local=" + M2,
        ]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise StandInError(f"mvn did not resolve the stand-in jars within {timeout}s") from exc
        if proc.returncode != 0 or not os.path.isdir(staging):
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-20:]
            raise StandInError("mvn could not resolve the stand-in jars:\n" + "\n".join(tail))
        with open(os.path.join(staging, STAMP), "w", encoding="utf-8") as handle:
            handle.write(digest + "\n")
        shutil.rmtree(LIB, ignore_errors=True)
        os.rename(staging, LIB)
    return LIB


def port_open(host, port, timeout=0.5):
    """True when something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _log_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _stop(proc, grace=10.0):
    """Stop the stand-in started as proc (its own PID only): close stdin, then SIGTERM, then SIGKILL."""
    with contextlib.suppress(OSError):
        proc.stdin.close()
    if proc.poll() is not None:
        return
    try:
        proc.wait(timeout=grace)
        return
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=grace)


@contextlib.contextmanager
def running_standin(host=DEFAULT_HOST, port=DEFAULT_PORT, version=DEFAULT_VERSION, timeout=60.0):
    """Start the stand-in on host:port, yield a StandIn once it accepts connections, stop it on exit."""
    if port_open(host, port):
        raise StandInError(
            f"{host}:{port} is already in use; stop whatever listens there (a stand-in left from an earlier run "
            "exits when its parent does)"
        )
    lib = ensure_jars()
    java = _tool("java")
    os.makedirs(LAB, exist_ok=True)
    log_path = os.path.join(LAB, f"standin-{port}.log")
    argv = [
        java,
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-Dslf4j.internal.verbosity=ERROR",
        "-cp",
        os.path.join(lib, "*"),
        SOURCE,
        host,
        str(port),
        version,
        "--exit-on-stdin-eof",
    ]
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=LAB,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise StandInError(
                    f"the stand-in exited with {proc.returncode} before it was ready:\n{_log_text(log_path)}"
                )
            if READY_MARK in _log_text(log_path) and port_open(host, port):
                break
            if time.monotonic() > deadline:
                raise StandInError(f"the stand-in was not ready within {timeout}s:\n{_log_text(log_path)}")
            time.sleep(0.1)
        yield StandIn(host, port, proc.pid, version, log_path)
    finally:
        _stop(proc)


def pytest_fixture(scope="module", **options):
    """A pytest fixture (default: one stand-in per test module) yielding the running StandIn."""
    import pytest

    @pytest.fixture(scope=scope)
    def mongodb_standin():
        with running_standin(**options) as server:
            yield server

    return mongodb_standin


def main(argv=None):
    parser = argparse.ArgumentParser(description="Run the in-memory MongoDB stand-in in the foreground.")
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--version", default=DEFAULT_VERSION, choices=["3.6", "4.0", "5.0"])
    args = parser.parse_args(argv)
    with running_standin(args.host, args.port, args.version) as server:
        print(
            f"stand-in listening on {args.host}:{args.port} (pid {server.pid}, log {server.log_path}); Ctrl-C stops it"
        )
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)


if __name__ == "__main__":
    main()
