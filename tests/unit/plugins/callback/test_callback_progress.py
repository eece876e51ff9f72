# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The progress callback: batches, long steps, heartbeats and the summary, from fake plays and results."""

from __future__ import annotations

import json

from ansible_collections.tactician.nosql.plugins.callback.progress import CallbackModule, batch_count, clock


class Display:
    verbosity = 0

    def __init__(self):
        self.lines = []

    def display(self, msg, **kwargs):
        self.lines.append(msg)


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Named:
    def __init__(self, name):
        self.name = name

    def get_name(self):
        return self.name


class Inventory:
    def __init__(self, batch, everyone):
        self.batch, self.everyone = batch, everyone

    def get_hosts(self, pattern, ignore_restrictions=False):
        return [Named(name) for name in (self.everyone if ignore_restrictions else self.batch)]


class Manager:
    def __init__(self, inventory):
        self._inventory = inventory


class Play(Named):
    def __init__(self, name, serial, batch, everyone):
        super().__init__(name)
        self.serial = serial
        self.hosts = "cassandra"
        self._variable_manager = Manager(Inventory(batch, everyone))


class Result:
    def __init__(self, host, task, changed=False):
        self._host, self._task, self._result = Named(host), Named(task), {"changed": changed}


def make(tmp_path, **options):
    display, now = Display(), Clock()
    plugin = CallbackModule(display=display, now=now)
    direct = {"min_seconds": 5, "heartbeat_seconds": 0, "path": str(tmp_path / "progress.jsonl"), "slowest": 2}
    direct.update(options)
    plugin.configure(**direct)
    return plugin, display, now


def test_clock_and_batch_count():
    assert clock(5) == "00:05"
    assert clock(3725) == "1:02:05"
    assert batch_count(5, [2]) == 3
    assert batch_count(3, ["50%"]) == 2
    assert batch_count(6, [1, 2]) == 4
    assert batch_count(0, [1]) is None
    assert batch_count(4, []) is None
    assert batch_count(4, ["x"]) is None


def test_batches_long_steps_and_summary(tmp_path):
    plugin, display, now = make(tmp_path)
    everyone = ["cassandra1", "cassandra2", "cassandra3"]
    plugin.v2_playbook_on_play_start(Play("Reconfigure", [2], everyone[:2], everyone))
    plugin.v2_playbook_on_task_start(Named("Restart"), False)
    for host in everyone[:2]:
        plugin.v2_runner_on_start(Named(host), None)
    now.now += 2
    plugin.v2_runner_on_ok(Result("cassandra1", "Restart"))
    now.now += 40
    plugin.v2_runner_on_ok(Result("cassandra2", "Restart", changed=True))
    plugin.v2_playbook_on_play_start(Play("Reconfigure", [2], everyone[2:], everyone))
    plugin.v2_playbook_on_task_start(Named("Restart"), False)
    plugin.v2_runner_on_start(Named("cassandra3"), None)
    now.now += 1
    plugin.v2_runner_on_failed(Result("cassandra3", "Restart"))
    plugin.v2_playbook_on_stats(None)
    text = "\n".join(display.lines)
    assert "Reconfigure · batch 1/2: cassandra1, cassandra2" in text
    assert "batch 2/2: cassandra3" in text
    assert "cassandra2 · Restart · changed in 42.0 s" in text
    assert "cassandra1 · Restart · ok" not in text  # under min_seconds
    assert "cassandra3 · Restart · failed in 1.0 s" in text  # failures are always shown
    assert "done in 00:43" in text
    events = [json.loads(line) for line in (tmp_path / "progress.jsonl").read_text().splitlines()]
    assert [event["event"] for event in events] == ["batch", "step", "batch", "step", "summary", "done"]
    assert events[0]["hosts"] == ["cassandra1", "cassandra2"] and events[0]["batches"] == 2
    assert events[1]["host"] == "cassandra2" and events[1]["batch"] == "batch 1/2"


def test_heartbeat_names_the_hosts_still_waited_for(tmp_path):
    plugin, display, now = make(tmp_path, heartbeat_seconds=1000)
    plugin.v2_playbook_on_play_start(Play("Observe", [], [], []))
    plugin.v2_playbook_on_task_start(Named("Wait for the ring"), False)
    plugin.v2_runner_on_start(Named("cassandra1"), None)
    plugin.v2_runner_on_start(Named("cassandra2"), None)
    plugin.v2_runner_on_skipped(Result("cassandra2", "Wait for the ring"))
    now.now += 65
    plugin._beat()
    plugin._disarm()
    assert display.lines[-1].endswith("Observe · still running: Wait for the ring on cassandra1 for 01:05")


def test_a_batch_whose_tasks_are_all_skipped_is_not_announced(tmp_path):
    plugin, display, now = make(tmp_path)
    plugin.v2_playbook_on_play_start(Play("Reconfigure", [1], ["cassandra1"], ["cassandra1", "cassandra2"]))
    plugin.v2_playbook_on_task_start(Named("Node step"), False)
    plugin.v2_runner_on_start(Named("cassandra1"), None)
    plugin.v2_runner_on_skipped(Result("cassandra1", "Node step"))
    plugin.v2_playbook_on_stats(None)
    assert not any("batch" in line for line in display.lines)
