# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Start, find and stop long-running server processes by PID file.

Plain Python, no Ansible: the daemon modules of the collection are thin faces over this.
The PID written is the server's own (the process is exec'd directly, never through a shell),
so a stop reaches the server and not a wrapper.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import time

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import CoreError


class ProcessError(CoreError):
    """A server process could not be started or stopped as asked."""


def read_pid(pid_file):
    """The PID recorded in pid_file, or None when the file is missing or unreadable."""
    try:
        with open(pid_file) as handle:
            text = handle.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def pid_alive(pid):
    """True when a process with this PID exists and is not a zombie."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except OSError as exc:
        if exc.errno == errno.EPERM:
            return True
        return False
    try:
        with open("/proc/%d/stat" % pid) as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return fields[0] != "Z"
    except (OSError, IndexError):
        return True


def pid_cmdline(pid):
    """The argument vector of a running process (empty when it cannot be read)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            raw = handle.read()
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def running_pid(pid_file, marker=None):
    """The PID from pid_file if that process runs (and its command line holds marker), else None."""
    pid = read_pid(pid_file)
    if not pid_alive(pid):
        return None
    if marker and not any(marker in arg for arg in pid_cmdline(pid)):
        return None
    return pid


def cpu_seconds(pid):
    """User + system CPU seconds a process has used so far (None when it cannot be read)."""
    try:
        with open("/proc/%d/stat" % int(pid)) as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, ValueError, IndexError, TypeError):
        return None
    return (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))


def port_open(host, port, timeout=1.0):
    """True when a TCP connection to host:port is accepted."""
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except OSError:
        return False


def tail(path, lines=30):
    """The last lines of a text file, for error messages."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 16384))
            data = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])


SPLIT = "upper-half"


def parse_cpus(spec, field="cpus"):
    """The CPU set a CPU list names: taskset's syntax ("1", "0-1", "2,3,6-7"), or "upper-half" (the upper half of
    the machine's CPUs, the lower half left to the clients and the controller of a one-machine lab; nothing on a
    machine of one CPU). None or "" is no pinning (None). Raises CoreError naming field on anything else."""
    if spec is None or str(spec).strip() == "":
        return None
    text = str(spec).strip()
    total = os.cpu_count() or 1
    if text == SPLIT:
        return cpu_split()[1]
    cpus = set()
    for part in text.split(","):
        bounds = part.strip().split("-")
        if len(bounds) > 2 or not all(b.strip().isdigit() for b in bounds):
            raise CoreError(
                "%s: %r is not a CPU list (allowed: CPU numbers and ranges such as 1, 0-1, 2,3; or %s)"
                % (field, spec, SPLIT)
            )
        low, high = int(bounds[0]), int(bounds[-1])
        if low > high or high >= total:
            raise CoreError("%s: %r names CPUs outside 0-%d (this machine's)" % (field, spec, total - 1))
        cpus.update(range(low, high + 1))
    return cpus


def cpu_split():
    """(client CPUs, server CPUs) of a one-machine lab: the lower half of the CPUs for the load driver and the
    controller, the upper half for the servers; (None, None) on a machine of one CPU (no split possible)."""
    total = os.cpu_count() or 1
    if total < 2:
        return None, None
    return set(range(total // 2)), set(range(total // 2, total))


def format_cpus(cpus):
    """A CPU set in taskset's list syntax (ranges joined), "all" for None."""
    if not cpus:
        return "all"
    ordered, parts = sorted(cpus), []
    start = prev = ordered[0]
    for cpu in ordered[1:] + [None]:
        if cpu is not None and cpu == prev + 1:
            prev = cpu
            continue
        parts.append(str(start) if start == prev else "%d-%d" % (start, prev))
        start = prev = cpu
    return ",".join(parts)


def _threads(pid):
    """The thread ids of process pid (just pid when /proc cannot list them)."""
    try:
        return [int(t) for t in os.listdir("/proc/%d/task" % pid)]
    except OSError:
        return [pid]


def off_cpus(pid, cpus):
    """True when a thread of process pid may run outside cpus (or its affinity cannot be read)."""
    try:
        return any(os.sched_getaffinity(tid) != set(cpus) for tid in _threads(pid))
    except OSError:
        return True


def pin(pid, cpus):
    """Run every thread of process pid on cpus (threads it starts later inherit it). Returns True when a thread
    was moved, False when all were already there; raises ProcessError when the affinity cannot be set."""
    changed = False
    for tid in _threads(pid):
        try:
            if os.sched_getaffinity(tid) != set(cpus):
                os.sched_setaffinity(tid, cpus)
                changed = True
        except ProcessLookupError:
            continue  # a thread that ended meanwhile
        except OSError as exc:
            raise ProcessError("cannot pin process %d to CPUs %s: %s" % (pid, format_cpus(cpus), exc)) from exc
    return changed


def spawn(argv, pid_file, log_file, cwd=None, env=None, cpus=None, memory_group=None, io_group=None):
    """Start argv detached from the caller (own session, stdin from /dev/null, output to log_file), on cpus when
    given (a CPU set; every thread it starts inherits it), and inside memory_group when given (a made
    cgroups.MemoryGroup, joined before exec: no page the server touches is charged elsewhere), and io_group (a
    made cgroups.IoGroup: its disk reads are capped from the first).

    Returns the PID, which is also written to pid_file.
    """
    for path in (pid_file, log_file):
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    procs_files = []
    for group in (memory_group, io_group):
        if group is not None and os.path.join(group.path, "cgroup.procs") not in procs_files:
            procs_files.append(os.path.join(group.path, "cgroup.procs"))

    def before_exec():
        if cpus:
            os.sched_setaffinity(0, cpus)
        for procs_file in procs_files:
            with open(procs_file, "w") as handle:
                handle.write(str(os.getpid()))

    with open(log_file, "ab") as log, open(os.devnull, "rb") as devnull:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=full_env,
                stdin=devnull,
                stdout=log,
                stderr=subprocess.STDOUT,
                close_fds=True,
                start_new_session=True,
                preexec_fn=before_exec if (cpus or procs_files) else None,
            )
        except OSError as exc:
            raise ProcessError("cannot start %s: %s" % (argv[0], exc)) from exc
    tmp = pid_file + ".tmp"
    with open(tmp, "w") as handle:
        handle.write("%d\n" % proc.pid)
    os.replace(tmp, pid_file)
    return proc.pid


def wait_until(predicate, timeout, interval=0.5, alive_pid=None, log_file=None, what="condition"):
    """Poll predicate() until it is true; fail early when alive_pid dies. Returns seconds waited."""
    start = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - start
        if alive_pid is not None and not pid_alive(alive_pid):
            raise ProcessError(
                "process %d exited while waiting for %s; last log lines:\n%s"
                % (alive_pid, what, tail(log_file) if log_file else "")
            )
        if time.monotonic() - start > timeout:
            raise ProcessError(
                "timed out after %ds waiting for %s%s"
                % (timeout, what, ("; last log lines:\n" + tail(log_file)) if log_file else "")
            )
        time.sleep(interval)


def terminate(pid, timeout=60.0, kill_after=True):
    """SIGTERM pid and wait for it to exit; SIGKILL when it outlives timeout. Returns how it ended."""
    if not pid_alive(pid):
        return "not running"
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return "exited"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return "terminated"
        time.sleep(0.2)
    if not kill_after:
        raise ProcessError("process %d still runs %ds after SIGTERM" % (pid, timeout))
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return "terminated"
    wait_until(lambda: not pid_alive(pid), 15, 0.2, what="process %d to die after SIGKILL" % pid)
    return "killed"


def wait_exit(pid, timeout):
    """Wait for pid to exit on its own; True when it did within timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.1)
    return not pid_alive(pid)


def remove_pid_file(pid_file):
    try:
        os.unlink(pid_file)
    except FileNotFoundError:
        pass
