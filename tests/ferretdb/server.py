# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Start and stop the lab's FerretDB (a MongoDB-compatible server; main.go next to this file) for the tests.

    reason = missing()                          # None when the binary is there or can be built
    server = FerretDB(state_dir).start()        # a free loopback port unless one is given; waits for `hello`
    client = mongodb.connect(server.params())
    left = server.stop()                        # [] when the process is gone

The binary is built by scripts/build-ferretdb.sh into <repo>/.lab/ferretdb/bin (bootstrap builds it; it is built
here when its sources changed since). A server started here is the child of the Python process: it is stopped by
its own PID, and it also exits by itself when that process goes away (its standard input closes).

For a server that has to outlive one process (trying a command by hand), the command line starts it detached,
records its PID in <dir>/ferretdb.pid and stops that PID only; each call prints one JSON line ({"changed": ...,
"pid": ..., "msg": ...}) and exits 1 on failure. The lab, the lab tests and the Molecule scenario use role
ferretdb_node instead.

    python tests/ferretdb/server.py start --port 27118 --dir .lab/ferretdb-try
    python tests/ferretdb/server.py stop --dir .lab/ferretdb-try

See docs/testing-mongodb.md for which MongoDB code paths run against FerretDB and which do not.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(ROOT, "scripts", "build-ferretdb.sh")
BINARY = os.path.join(ROOT, ".lab", "ferretdb", "bin", "ferretdb-lab")
HOST = "127.0.0.1"
READY = re.compile(r"FERRETDB READY mongodb://([^/]+)/")
PID_FILE = "ferretdb.pid"
LOG_FILE = "ferretdb.log"


class FerretDBError(RuntimeError):
    """FerretDB could not be built, started or stopped."""


def _build(check=False, timeout=900):
    argv = [BUILD, "--check"] if check else [BUILD]
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise FerretDBError("scripts/build-ferretdb.sh did not finish within %ds" % timeout) from exc


def missing():
    """Why FerretDB cannot run on this machine (a skip reason), or None. Builds the binary when it is stale."""
    check = _build(check=True, timeout=60)
    if check.returncode == 0:
        return None
    if check.returncode == 2:
        return check.stderr.strip().replace("build-ferretdb: ", "") or "Go is not installed"
    built = _build()
    if built.returncode == 2:
        return built.stderr.strip().replace("build-ferretdb: ", "")
    if built.returncode != 0:
        raise FerretDBError("scripts/build-ferretdb.sh failed:\n" + "\n".join(built.stderr.splitlines()[-20:]))
    return None


def free_port(host=HOST):
    """A loopback port nobody listens on now (the kernel's choice, closed again at once)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_open(host, port, timeout=0.5):
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


def _argv(host, port, state_dir, log_file, exit_on_stdin_eof, tls=None):
    argv = [BINARY, "-listen", "%s:%d" % (host, port), "-state-dir", state_dir, "-log-file", log_file]
    if tls:
        argv += ["-tls-listen", "%s:%d" % (host, tls["port"]), "-tls-cert", tls["cert"], "-tls-key", tls["key"]]
        argv += ["-tls-ca", tls["ca"]] if tls.get("ca") else []
    return argv + (["-exit-on-stdin-eof"] if exit_on_stdin_eof else [])


def hello(host, port, timeout=5.0):
    """The server's `hello` reply (pymongo, a direct connection)."""
    from pymongo import MongoClient

    client = MongoClient(host, port, directConnection=True, serverSelectionTimeoutMS=int(timeout * 1000))
    try:
        return client.admin.command("hello")
    finally:
        client.close()


def server_facts(params):
    """The collection's view of a server (version, role, wire version) reached with its MongoDB connection
    options (mongodb_argument_spec), as its modules connect."""
    from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import client as mongodb

    client = mongodb.connect(params)
    try:
        return mongodb.server_facts(client)
    finally:
        client.close()


def _wait_ready(host, port, log_file, alive, timeout):
    """Wait until the log says READY and `hello` answers; fail early when the process ends."""
    from pymongo.errors import PyMongoError

    deadline = time.monotonic() + timeout
    while True:
        if not alive():
            raise FerretDBError("FerretDB exited before it was ready:\n%s" % _log_text(log_file)[-3000:])
        if READY.search(_log_text(log_file)):
            with contextlib.suppress(PyMongoError):
                return hello(host, port, timeout=2.0)
        if time.monotonic() > deadline:
            raise FerretDBError(
                "FerretDB did not answer hello within %ss:\n%s" % (timeout, _log_text(log_file)[-3000:])
            )
        time.sleep(0.1)


def _pid_alive(pid):
    """True when pid runs and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid, encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class FerretDB:
    """One FerretDB server of the caller's, on its own state directory (SQLite files) and log.

    tls: {"cert": PEM, "key": PEM, "ca": PEM or None} adds a TLS listener on a free port (self.tls_port) beside the
    plain one; with "ca", every TLS client must present a certificate that CA signed."""

    def __init__(self, state_dir, host=HOST, port=None, tls=None):
        self.folder = os.path.abspath(state_dir)
        self.state_dir = os.path.join(self.folder, "state")
        self.log_file = os.path.join(self.folder, LOG_FILE)
        self.host = host
        self.port = port
        self.process = None
        self.hello = None
        self.tls = dict(tls) if tls else None
        self.tls_port = None

    @property
    def pid(self):
        return self.process.pid if self.process else None

    @property
    def address(self):
        return "%s:%d" % (self.host, self.port)

    def params(self, **overrides):
        """Connection options of the collection's MongoDB modules (mongodb_argument_spec) for this server."""
        params = {"login_host": self.host, "login_port": self.port, "direct_connection": True, "connect_timeout": 5.0}
        params.update(overrides)
        return params

    def start(self, timeout=60.0):
        if not os.access(BINARY, os.X_OK):
            raise FerretDBError("no FerretDB binary at %s: run scripts/build-ferretdb.sh" % BINARY)
        if self.port is None:
            self.port = free_port(self.host)
        elif port_open(self.host, self.port):
            raise FerretDBError("%s is in use by another process" % self.address)
        if self.tls:
            self.tls_port = free_port(self.host)
            while self.tls_port == self.port:
                self.tls_port = free_port(self.host)
            self.tls["port"] = self.tls_port
        os.makedirs(self.folder, exist_ok=True)
        with open(self.log_file, "w", encoding="utf-8") as log:
            self.process = subprocess.Popen(
                _argv(self.host, self.port, self.state_dir, self.log_file, exit_on_stdin_eof=True, tls=self.tls),
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.folder,
                start_new_session=True,
            )
        try:
            self.hello = _wait_ready(self.host, self.port, self.log_file, lambda: self.process.poll() is None, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, grace=10.0):
        """Stop the server by its own PID (SIGTERM, then SIGKILL after grace). Returns what is left running: []."""
        proc = self.process
        if proc is None:
            return []
        with contextlib.suppress(OSError):
            proc.stdin.close()
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=grace)
        left = ["FerretDB pid %d" % proc.pid] if _pid_alive(proc.pid) else []
        for port in (self.port, self.tls_port):
            if port and port_open(self.host, port):
                left.append("something still listens on %s:%d" % (self.host, port))
        return left

    def __repr__(self):
        return "FerretDB(%s, pid=%s)" % (self.address, self.pid)


# A detached server, started and stopped from the command line.


def _read_pid(pid_file):
    try:
        with open(pid_file, encoding="ascii") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def _ours(pid):
    """True when pid runs this checkout's FerretDB binary."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            first = handle.read().split(b"\0")[0].decode("utf-8", "replace")
    except OSError:
        return False
    return first == BINARY and _pid_alive(pid)


def start_detached(host, port, directory, timeout=60.0):
    directory = os.path.abspath(directory)
    pid_file = os.path.join(directory, PID_FILE)
    log_file = os.path.join(directory, LOG_FILE)
    pid = _read_pid(pid_file)
    if pid and _ours(pid):
        if not port_open(host, port):
            raise FerretDBError("FerretDB %d runs but %s:%d does not answer; stop it first" % (pid, host, port))
        return dict(changed=False, pid=pid, msg="FerretDB already runs on %s:%d" % (host, port))
    if port_open(host, port):
        raise FerretDBError("%s:%d is in use by another process; the scenario needs it free" % (host, port))
    reason = missing()
    if reason:
        raise FerretDBError("FerretDB cannot run here: " + reason)
    os.makedirs(directory, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(log_file)
    with open(os.devnull, "rb") as devnull, open(log_file, "ab") as log:
        proc = subprocess.Popen(
            _argv(host, port, os.path.join(directory, "state"), log_file, exit_on_stdin_eof=False),
            stdin=devnull,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=directory,
            start_new_session=True,
        )
    with open(pid_file + ".tmp", "w", encoding="ascii") as handle:
        handle.write("%d\n" % proc.pid)
    os.replace(pid_file + ".tmp", pid_file)
    started = time.monotonic()
    try:
        _wait_ready(host, port, log_file, lambda: proc.poll() is None, timeout)
    except BaseException:
        stop_detached(directory)
        raise
    waited = time.monotonic() - started
    return dict(changed=True, pid=proc.pid, msg="FerretDB listens on %s:%d (%.1f s)" % (host, port, waited))


def stop_detached(directory, timeout=30.0):
    pid_file = os.path.join(os.path.abspath(directory), PID_FILE)
    pid = _read_pid(pid_file)
    if not pid or not _ours(pid):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(pid_file)
        return dict(changed=False, pid=None, msg="no FerretDB of this directory runs")
    os.kill(pid, signal.SIGTERM)
    how = "stopped"
    deadline = time.monotonic() + timeout
    while _pid_alive(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            how = "killed after %ss" % timeout
            break
        time.sleep(0.1)
    os.unlink(pid_file)
    return dict(changed=True, pid=pid, msg="FerretDB %d %s" % (pid, how))


def main(argv=None):
    parser = argparse.ArgumentParser(description="Start or stop a detached FerretDB of this checkout.")
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("--host", default=HOST)
    parser.add_argument("--port", type=int, default=27118)
    parser.add_argument("--dir", required=True, help="its directory: state, PID file and log")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    try:
        if args.action == "start":
            result = start_detached(args.host, args.port, args.dir, args.timeout)
        else:
            result = stop_detached(args.dir, args.timeout)
    except (FerretDBError, OSError) as exc:
        print(json.dumps(dict(changed=False, failed=True, msg=str(exc))))
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
