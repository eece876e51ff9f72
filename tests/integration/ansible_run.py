"""Run a playbook of the collection for real through ansible-runner and return its per-task results."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading

import ansible_runner

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


class PlaybookResult:
    def __init__(self, returncode, stats, results, stdout):
        self.returncode = returncode
        self._stats = stats or {}
        self.results = results
        self.stderr = stdout

    def changed(self, host=None):
        """Number of changed tasks on host (or summed over all hosts)."""
        per_host = self._stats.get("changed", {}) or {}
        return per_host.get(host, 0) if host else sum(per_host.values())

    @property
    def stats(self):
        return self._stats

    def task(self, name, host="localhost"):
        """The result of the last task named name on host (loops: the task's final result)."""
        found = [res for (task, where, res) in self.results if task == name and where == host]
        if not found:
            raise KeyError("no task %r ran on %s; ran: %s" % (name, host, sorted({t for t, _h, _r in self.results})))
        return found[-1]


def run_playbook(playbook, inventory, extra_vars=None, check=False, diff=False, on_event=None):
    """ansible-playbook with ansible-runner; never raises on a failed play (assert on returncode).

    on_event(event): called with every event of the run as it happens (a test acts at a given task)."""
    private = tempfile.mkdtemp(prefix="tactician-runner-")
    cmdline = " ".join(flag for flag, on in (("--check", check), ("--diff", diff)) if on)
    envvars = dict(
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"),
        ANSIBLE_NOCOLOR="1",
        PATH=BIN + os.pathsep + os.environ.get("PATH", ""),
    )
    results = []

    def handle(event):
        if on_event is not None:
            on_event(event)
        data = event.get("event_data", {})
        if event.get("event") in ("runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable"):
            res = dict(data.get("res") or {})
            if event["event"] == "runner_on_failed":
                res["failed"] = True
            if event["event"] == "runner_on_skipped":
                res["skipped"] = True
            results.append((data.get("task"), data.get("host"), res))
        return True

    # ansible-runner replaces the SIGINT and SIGTERM handlers of the main thread (a signal then only cancels the
    # playbook) and leaves them so: the caller's are put back after the run, so that it can still be stopped.
    caught = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.getsignal(s) for s in caught} if threading.current_thread() is threading.main_thread() else {}
    try:
        runner = ansible_runner.run(
            private_data_dir=private,
            project_dir=ROOT,
            playbook=os.path.join(ROOT, playbook) if not os.path.isabs(playbook) else playbook,
            inventory=inventory,
            extravars=extra_vars or {},
            cmdline=cmdline or None,
            envvars=envvars,
            quiet=True,
            event_handler=handle,
        )
        stdout = runner.stdout.read() if runner.stdout else ""
        return PlaybookResult(runner.rc, runner.stats, results, stdout[-6000:])
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        shutil.rmtree(private, ignore_errors=True)


STORE_LOCK = os.path.join(ROOT, "tests", "integration", "playbooks", "store_lock.yml")
LOCALHOST = os.path.join(ROOT, "tests", "integration", "inventory", "localhost.yml")


class _Holder:
    """The first controller of a two-controllers test; its run (a PlaybookResult) once the block has ended."""

    run = None


@contextlib.contextmanager
def held_lock(lock_name, run_id, lock_store, release, inventory=LOCALHOST):
    """A controller of its own (store_lock.yml in an ansible-playbook run on a thread) that takes the rolling lock
    lock_name in lock_store and holds it while the block runs; the block starts once the lock is taken. On leaving
    the block the file release is written, the holder gives the lock back and its run ends: assert on holder.run
    after the block."""
    taken = threading.Event()
    holder = _Holder()

    def on_event(event):
        if event.get("event") == "runner_on_ok" and (event.get("event_data") or {}).get("task") == "Take the lock":
            taken.set()

    def hold():
        holder.run = run_playbook(
            STORE_LOCK,
            inventory,
            dict(lock_name=lock_name, run_id=run_id, lock_store=lock_store, hold_until=release),
            on_event=on_event,
        )

    worker = threading.Thread(target=hold)
    worker.start()
    try:
        if not taken.wait(120):
            raise AssertionError("the first controller never took the lock %s" % lock_name)
        yield holder
    finally:
        open(release, "w").close()
        worker.join(timeout=180)
