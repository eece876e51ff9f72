# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
name: progress
type: notification
short_description: Progress of long steps (batch, node, step, elapsed) and a summary of the slowest ones
description:
  - Adds progress lines next to the normal output. A play run in batches (C(serial), as the rolling
    reconfiguration does) announces each batch with its number, the batch count and its hosts.
  - A step that takes at least O(min_seconds) on a host is reported when it ends, with the play's batch, the host,
    the step, its status and its duration; every line starts with the time elapsed since the playbook started.
  - While a step runs longer than O(heartbeat_seconds), a line says which step still runs, on which hosts, and for
    how long, so a wait for a node to rejoin its ring does not look like a hang.
  - At the end, the slowest steps and the whole wall time are listed.
  - With O(file), each event is also appended as one JSON line, for AWX, cron logs or a dashboard to follow.
  - Enable it with C(callbacks_enabled = tactician.nosql.progress) in C(ansible.cfg) or
    C(ANSIBLE_CALLBACKS_ENABLED=tactician.nosql.progress).
requirements: []
options:
  min_seconds:
    description: A step that ends after at least this many seconds on a host is reported.
    type: float
    default: 5
    env:
      - name: TACTICIAN_PROGRESS_MIN_SECONDS
    ini:
      - section: tactician_progress
        key: min_seconds
  heartbeat_seconds:
    description: While a step runs, a line every this many seconds names it and the hosts it waits for; 0 turns it off.
    type: float
    default: 30
    env:
      - name: TACTICIAN_PROGRESS_HEARTBEAT_SECONDS
    ini:
      - section: tactician_progress
        key: heartbeat_seconds
  file:
    description: A file to which every progress event is appended as a JSON line.
    type: path
    env:
      - name: TACTICIAN_PROGRESS_FILE
    ini:
      - section: tactician_progress
        key: file
  slowest:
    description: How many of the slowest steps the summary lists.
    type: int
    default: 5
    env:
      - name: TACTICIAN_PROGRESS_SLOWEST
    ini:
      - section: tactician_progress
        key: slowest
"""

import json
import math
import threading
import time

from ansible.plugins.callback import CallbackBase


def clock(seconds):
    """Elapsed seconds as [h:]mm:ss."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return "%d:%02d:%02d" % (hours, minutes, secs) if hours else "%02d:%02d" % (minutes, secs)


def batch_count(total, serial):
    """Number of batches Ansible makes of total hosts with a play's (resolved) serial list, or None."""
    if not total or not serial:
        return None
    sizes = []
    for item in serial:
        text = str(item).strip()
        try:
            size = int(math.ceil(total * float(text[:-1]) / 100.0)) if text.endswith("%") else int(text)
        except ValueError:
            return None
        sizes.append(max(1, size) if size > 0 else total)
    count, left, index = 0, total, 0
    while left > 0:
        left -= sizes[min(index, len(sizes) - 1)]
        index += 1
        count += 1
    return count


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "tactician.nosql.progress"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None, now=time.monotonic):
        super().__init__(display=display)
        self._now = now
        self._lock = threading.Lock()
        self._start = now()
        self._play = None
        self._batch = None
        self._announce = None
        self._batches = {}
        self._task = None
        self._task_start = None
        self._pending = set()
        self._host_start = {}
        self._durations = []
        self._timer = None
        self._min_seconds = 5.0
        self._heartbeat = 30.0
        self._file = None
        self._slowest = 5

    def set_options(self, task_keys=None, var_options=None, direct=None):
        super().set_options(task_keys=task_keys, var_options=var_options, direct=direct)
        self.configure(
            self.get_option("min_seconds"),
            self.get_option("heartbeat_seconds"),
            self.get_option("file"),
            self.get_option("slowest"),
        )

    def configure(self, min_seconds, heartbeat_seconds, path, slowest):
        """Applies the options (set_options reads them from the configuration)."""
        self._min_seconds = float(min_seconds)
        self._heartbeat = float(heartbeat_seconds)
        self._file = path
        self._slowest = int(slowest)

    # -- output -------------------------------------------------------------------------------------------------
    def _emit(self, text, **event):
        line = "[tactician +%s] %s" % (clock(self._now() - self._start), text)
        self._display.display(line)
        if self._file:
            event.update(elapsed_s=round(self._now() - self._start, 1), time=time.time(), text=text)
            with open(self._file, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(event, sort_keys=True, default=str) + "\n")

    def _where(self):
        parts = [self._play] if self._play else []
        if self._batch:
            parts.append(self._batch)
        return " · ".join(parts)

    # -- heartbeat ----------------------------------------------------------------------------------------------
    def _arm(self):
        self._disarm()
        if self._heartbeat > 0:
            self._timer = threading.Timer(self._heartbeat, self._beat)
            self._timer.daemon = True
            self._timer.start()

    def _disarm(self):
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _beat(self):
        with self._lock:
            if self._task is None or not self._pending:
                return
            hosts = ", ".join(sorted(self._pending))
            waited = self._now() - self._task_start
            self._emit(
                "%s · still running: %s on %s for %s" % (self._where(), self._task, hosts, clock(waited)),
                event="running",
                play=self._play,
                batch=self._batch,
                task=self._task,
                hosts=sorted(self._pending),
                running_s=round(waited, 1),
            )
            self._arm()

    # -- plays and batches --------------------------------------------------------------------------------------
    def v2_playbook_on_play_start(self, play):
        with self._lock:
            self._play = play.get_name().strip() or None
            self._batch = None
            self._announce = None
            serial = list(getattr(play, "serial", None) or [])
            if not serial:
                return
            hosts, total = self._play_hosts(play)
            key = id(play) if self._play is None else self._play
            number = self._batches.get(key, 0) + 1
            self._batches[key] = number
            count = batch_count(total, serial)
            self._batch = "batch %d/%s" % (number, count if count else "?")
            # Announced with the batch's first result that is not a skip: a play whose every task is skipped
            # (a roll the approval gate did not open) shows no batches.
            self._announce = dict(
                text="%s · %s: %s" % (self._play, self._batch, ", ".join(hosts) if hosts else "(hosts unknown)"),
                event="batch",
                play=self._play,
                batch=number,
                batches=count,
                hosts=hosts,
            )

    @staticmethod
    def _play_hosts(play):
        """The batch's hosts (the inventory is restricted to them) and the play's host count."""
        manager = getattr(play, "_variable_manager", None)
        inventory = getattr(manager, "_inventory", None)
        if inventory is None:
            return [], None
        try:
            batch = [host.name for host in inventory.get_hosts(play.hosts)]
            total = len(inventory.get_hosts(play.hosts, ignore_restrictions=True))
        except Exception:  # pylint: disable=broad-except  # progress output never fails a run
            return [], None
        return batch, total

    # -- steps --------------------------------------------------------------------------------------------------
    def _task_begins(self, task):
        with self._lock:
            self._task = task.get_name().strip()
            self._task_start = self._now()
            self._pending = set()
            self._host_start = {}
            self._arm()

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._task_begins(task)

    def v2_playbook_on_handler_task_start(self, task):
        self._task_begins(task)

    def v2_runner_on_start(self, host, task):
        with self._lock:
            self._pending.add(host.get_name())
            self._host_start[host.get_name()] = self._now()

    def _ended(self, result, status):
        with self._lock:
            if self._announce:
                announce, self._announce = self._announce, None
                self._emit(announce.pop("text"), **announce)
            host = result._host.get_name()
            self._pending.discard(host)
            began = self._host_start.pop(host, self._task_start)
            if began is None:
                return
            took = self._now() - began
            name = result._task.get_name().strip() or self._task
            self._durations.append((took, name, host, self._batch))
            if took >= self._min_seconds or status in ("failed", "unreachable"):
                self._emit(
                    "%s · %s · %s · %s in %.1f s" % (self._where(), host, name, status, took),
                    event="step",
                    play=self._play,
                    batch=self._batch,
                    host=host,
                    task=name,
                    status=status,
                    took_s=round(took, 1),
                )
            if not self._pending:
                self._disarm()

    def v2_runner_on_ok(self, result):
        self._ended(result, "changed" if result._result.get("changed") else "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._ended(result, "failed (ignored)" if ignore_errors else "failed")

    def v2_runner_on_unreachable(self, result):
        self._ended(result, "unreachable")

    def v2_runner_on_skipped(self, result):
        with self._lock:
            self._pending.discard(result._host.get_name())
            self._host_start.pop(result._host.get_name(), None)
            if not self._pending:
                self._disarm()

    # -- the end ------------------------------------------------------------------------------------------------
    def v2_playbook_on_stats(self, stats):
        with self._lock:
            self._disarm()
            wall = self._now() - self._start
            slowest = sorted(self._durations, key=lambda item: item[0], reverse=True)[: self._slowest]
            if slowest:
                self._emit("slowest steps:", event="summary", wall_s=round(wall, 1))
                for took, name, host, batch in slowest:
                    where = "%s, %s" % (host, batch) if batch else host
                    self._display.display("    %8s  %s (%s)" % (clock(took), name, where))
            self._emit("done in %s" % clock(wall), event="done", wall_s=round(wall, 1))
