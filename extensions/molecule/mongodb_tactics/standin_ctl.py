# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Start and stop the MongoDB stand-in of the mongodb_tactics scenario as a detached process.

    python standin_ctl.py start --host 127.0.0.1 --port 27118 --dir .lab/molecule-mongodb-tactics
    python standin_ctl.py stop --dir .lab/molecule-mongodb-tactics

The integration tests start the stand-in for the length of one test module and stop it when the module ends
(tests/mongodb_standin/standin.py). A Molecule scenario needs it across several playbooks, so this script
starts the same server (same jars, resolved with Maven from Maven Central, same StandIn.java and JVM options)
detached, records its PID in <dir>/standin.pid and its output in <dir>/standin.log; stop ends that PID only.
Both print one JSON line ({"changed": ..., "pid": ..., "msg": ...}) and exit 1 on failure.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# The integration tests' launcher (jars, Java, the source file) and the collection's process helpers (through the
# checkout's collection link, which scripts/bootstrap.sh makes).
standin = _load("tactician_mongodb_standin", os.path.join(ROOT, "tests", "mongodb_standin", "standin.py"))
sys.path.insert(0, os.path.join(ROOT, ".collections"))
from ansible_collections.tactician.nosql.plugins.module_utils.core import process  # noqa: E402


def _paths(directory):
    directory = os.path.abspath(directory)
    return directory, os.path.join(directory, "standin.pid"), os.path.join(directory, "standin.log")


def _running(pid_file):
    return process.running_pid(pid_file, marker=standin.SOURCE)


def start(host, port, directory, version, timeout):
    directory, pid_file, log_file = _paths(directory)
    pid = _running(pid_file)
    if pid:
        if not process.port_open(host, port):
            raise RuntimeError("the stand-in %d runs but %s:%d does not answer; stop it first" % (pid, host, port))
        return dict(changed=False, pid=pid, msg="the stand-in already runs on %s:%d" % (host, port))
    if process.port_open(host, port):
        raise RuntimeError("%s:%d is in use by another process; the scenario needs it free" % (host, port))
    lib = standin.ensure_jars()
    argv = [
        standin._tool("java"),
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-Dslf4j.internal.verbosity=ERROR",
        "-cp",
        os.path.join(lib, "*"),
        standin.SOURCE,
        host,
        str(port),
        version,
    ]
    os.makedirs(directory, exist_ok=True)
    if os.path.exists(log_file):
        os.unlink(log_file)
    pid = process.spawn(argv, pid_file, log_file, cwd=directory)

    def ready():
        with open(log_file, encoding="utf-8", errors="replace") as handle:
            return standin.READY_MARK in handle.read() and process.port_open(host, port)

    try:
        waited = process.wait_until(ready, timeout, 0.2, alive_pid=pid, log_file=log_file, what="the stand-in")
    except process.ProcessError:
        process.terminate(pid, timeout=10)
        process.remove_pid_file(pid_file)
        raise
    return dict(changed=True, pid=pid, msg="the stand-in listens on %s:%d (%.1f s)" % (host, port, waited))


def stop(directory, timeout):
    _directory, pid_file, _log = _paths(directory)
    pid = _running(pid_file)
    if not pid:
        process.remove_pid_file(pid_file)
        return dict(changed=False, pid=None, msg="no stand-in of this scenario runs")
    how = process.terminate(pid, timeout=timeout)
    process.remove_pid_file(pid_file)
    return dict(changed=True, pid=pid, msg="stand-in %d %s" % (pid, how))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=27118)
    parser.add_argument("--dir", required=True, help="the scenario's directory (PID file and log)")
    parser.add_argument("--version", default=standin.DEFAULT_VERSION, choices=["3.6", "4.0", "5.0"])
    parser.add_argument("--timeout", type=float, default=90.0)
    args = parser.parse_args(argv)
    try:
        if args.action == "start":
            result = start(args.host, args.port, args.dir, args.version, args.timeout)
        else:
            result = stop(args.dir, args.timeout)
    except (RuntimeError, OSError, standin.StandInError, process.ProcessError) as exc:
        print(json.dumps(dict(changed=False, failed=True, msg=str(exc))))
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
