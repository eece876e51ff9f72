from __future__ import annotations

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.apply import guards
from ansible_collections.tactician.nosql.plugins.module_utils.apply import node_step as rc
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog_files import CatalogError
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError


class FakeCatalog:
    store = "cassandra"
    kinds = {"concurrent_compactors": "live", "memtable_heap_space": "restart", "compaction": "table"}

    def validate(self, settings, memory_mb=None, heap_mb=None):
        bad = [name for name in settings if name not in self.kinds]
        if bad:
            raise CatalogError("%s: unknown parameter" % ", ".join(bad))
        if settings.get("memtable_heap_space", 0) > 4096:
            raise CatalogError("memtable_heap_space: 99999 MiB is out of range [16, 4096] MiB")
        return {name: int(value) if name != "compaction" else value for name, value in settings.items()}

    def apply_kind(self, name, before=None):
        return self.kinds[name]

    def requires(self, name):
        return []

    def equal(self, name, a, b):
        return a == b


class FakeNode:
    name = "127.0.0.9:9042"

    def __init__(self, live=None, fail_start=0, file_diff=None):
        self.live = dict(live or {"concurrent_compactors": 2, "memtable_heap_space": 128})
        self.file = dict(self.live)
        self.events = []
        self.fail_start = fail_start
        self.file_diff = file_diff
        self.tuned = None
        self.running = True
        self.pending = {}
        self.guard = guards.GuardPolicy()
        self.signal_log = None
        self.not_ready = None
        self.peer_down_on_rejoin = None

    def check_before_stop(self):
        self.events.append("check")
        if self.not_ready:
            raise guards.ClusterNotReady(self.not_ready, {"seen": "fake"})
        return {"nodes": "ok"}

    def is_running(self):
        return self.running

    def cluster_state(self):
        return {"127.0.0.9": "UN" if self.running else "down", "127.0.0.8": "DN as seen by 127.0.0.7"}

    def read_current(self, names):
        self.events.append("read")
        return {name: self.live.get(name) for name in names}

    def file_changes(self, wanted):
        if self.file_diff is not None:
            return self.file_diff
        return {k: {"before": self.file.get(k), "after": v} for k, v in wanted.items() if self.file.get(k) != v}

    def apply_live(self, name, value, state):
        self.events.append("live %s" % name)
        self.live[name] = value
        return "nodetool set %s %s" % (name, value)

    def persist_live(self, wanted):
        self.events.append("persist")
        self.file.update(wanted)
        return {"changed": True, "backup_file": None}

    def prepare_restart(self):
        self.events.append("prepare")
        return []

    def stop(self, force=False):
        self.events.append("stop")
        self.running = False

    def write_config(self, wanted):
        self.events.append("write")
        self.previous = dict(self.file)
        self.file.update(wanted)
        return {"backup_file": "backup"}

    def restore_config(self, backup):
        self.events.append("restore")
        self.file = dict(self.previous)

    def start(self):
        self.events.append("start")
        if self.fail_start > 0:
            self.fail_start -= 1
            raise RuntimeError("process 123 exited while waiting for CQL")
        self.running = True
        self.live = dict(self.file)

    def wait_back(self):
        self.events.append("rejoin")
        if self.peer_down_on_rejoin:
            raise guards.PeerDownError(self.peer_down_on_rejoin, "while %s was coming back" % self.name)
        return {"un_after": 1.0}

    def downtime_warning(self, seconds):
        return None

    def record_tuned(self, wanted):
        self.tuned = dict(wanted)


def test_nothing_to_change_is_not_changed():
    node = FakeNode()
    result = rc.reconfigure(node, FakeCatalog(), {"concurrent_compactors": 2})
    assert result["changed"] is False and result["restart_required"] is False
    assert node.events == ["read"]


def test_live_change_is_applied_live_and_persisted_then_verified():
    node = FakeNode()
    result = rc.reconfigure(node, FakeCatalog(), {"concurrent_compactors": 4})
    assert result["changed"] and not result["restart_required"]
    assert node.events == ["read", "live concurrent_compactors", "persist", "read"]
    assert result["commands"] == ["nodetool set concurrent_compactors 4"]
    assert result["diff"]["before"] == {"concurrent_compactors": 2}
    assert node.tuned == {"concurrent_compactors": 4}
    again = rc.reconfigure(node, FakeCatalog(), {"concurrent_compactors": 4})
    assert again["changed"] is False


def test_check_mode_reports_the_same_change_and_touches_nothing():
    node = FakeNode()
    result = rc.reconfigure(node, FakeCatalog(), {"memtable_heap_space": 256}, check_mode=True)
    assert result["changed"] and result["restart_required"]
    assert result["steps"][:4] == ["check cluster", "prepare", "stop", "write config"]
    assert node.events == ["read"] and node.live["memtable_heap_space"] == 128


def test_restart_change_goes_through_every_step():
    node = FakeNode()
    result = rc.reconfigure(node, FakeCatalog(), {"memtable_heap_space": 256})
    assert node.events == ["read", "check", "prepare", "stop", "write", "start", "rejoin", "read"]
    assert result["steps"] == ["check cluster", "stop", "write config", "start", "rejoin", "verify"]
    assert result["downtime"] >= 0 and set(result["timings"]) >= {"stop", "start", "rejoin", "verify"}


def test_restart_refused_when_not_allowed_touches_nothing():
    node = FakeNode()
    with pytest.raises(rc.ReconfigureError, match="memtable_heap_space cannot change while the node runs"):
        rc.reconfigure(node, FakeCatalog(), {"memtable_heap_space": 256}, allow_restart=False)
    assert node.events == ["read"]


def test_forced_restart_restarts_a_node_with_nothing_to_change():
    node = FakeNode()
    planned = rc.reconfigure(node, FakeCatalog(), {"concurrent_compactors": 2}, force_restart=True, check_mode=True)
    assert planned["changed"] and planned["restart_forced"] and not planned["restart_required"]
    assert planned["steps"][:4] == ["check cluster", "prepare", "stop", "write config"] and node.events == ["read"]
    result = rc.reconfigure(node, FakeCatalog(), {"concurrent_compactors": 2}, force_restart=True)
    assert node.events[1:] == ["read", "check", "prepare", "stop", "write", "start", "rejoin", "read"]
    assert result["changed"] and result["downtime"] >= 0


def test_forced_restart_takes_live_changes_through_the_file():
    node = FakeNode()
    rc.reconfigure(node, FakeCatalog(), {"concurrent_compactors": 4}, force_restart=True)
    assert "live concurrent_compactors" not in node.events and "start" in node.events
    assert node.live["concurrent_compactors"] == 4 and node.tuned == {"concurrent_compactors": 4}


def test_forced_restart_and_no_restart_contradict():
    node = FakeNode()
    with pytest.raises(rc.ReconfigureError, match="force_restart and allow_restart=false"):
        rc.reconfigure(node, FakeCatalog(), {"concurrent_compactors": 4}, force_restart=True, allow_restart=False)
    assert node.events == []


def test_bad_input_fails_before_reading_the_node():
    node = FakeNode()
    with pytest.raises(TacticianError, match="out of range"):  # the catalog's error, as it is
        rc.reconfigure(node, FakeCatalog(), {"memtable_heap_space": 99999})
    with pytest.raises(rc.ReconfigureError, match="table or keyspace options"):
        rc.reconfigure(node, FakeCatalog(), {"compaction": "LeveledCompactionStrategy"})
    assert node.events == []


def test_node_that_does_not_come_back_is_rolled_back():
    node = FakeNode(fail_start=1)
    with pytest.raises(rc.ReconfigureError) as info:
        rc.reconfigure(node, FakeCatalog(), {"memtable_heap_space": 256})
    message = str(info.value)
    assert "did not come back" in message and "rolled back" in message
    assert info.value.result["rollback"]["ok"] is True
    assert node.events[-4:] == ["stop", "restore", "start", "rejoin"]
    assert node.live["memtable_heap_space"] == 128 and node.running


def test_failed_rollback_says_so():
    node = FakeNode(fail_start=2)
    with pytest.raises(rc.ReconfigureError, match="ROLLBACK FAILED") as info:
        rc.reconfigure(node, FakeCatalog(), {"memtable_heap_space": 256})
    assert info.value.result["rollback"]["ok"] is False


def test_verify_catches_a_value_that_did_not_take():
    class Stubborn(FakeNode):
        def apply_live(self, name, value, state):
            return "ignored"

    with pytest.raises(rc.ReconfigureError, match="after the change the node runs concurrent_compactors=2"):
        rc.reconfigure(Stubborn(), FakeCatalog(), {"concurrent_compactors": 4})


def test_file_only_difference_is_written_without_restart():
    node = FakeNode(file_diff={"concurrent_compactors": {"before": 8, "after": 2}})
    result = rc.reconfigure(node, FakeCatalog(), {"concurrent_compactors": 2})
    assert result["changed"] and not result["restart_required"]
    assert "stop" not in node.events and "persist" in node.events


def test_a_cluster_not_ready_stops_the_roll_before_the_node_is_touched():
    node = FakeNode()
    node.not_ready = "before stopping 127.0.0.9:9042: the cluster is not whole: 127.0.0.7 sees 127.0.0.8 as DN"
    with pytest.raises(rc.ReconfigureError) as info:
        rc.reconfigure(node, FakeCatalog(), {"memtable_heap_space": 256})
    message = str(info.value)
    assert "127.0.0.8 as DN" in message and "127.0.0.9:9042 was not touched" in message
    assert node.events == ["read", "check"] and node.live["memtable_heap_space"] == 128
    result = info.value.result
    assert result["stopped"] == "cluster not ready" and result["touched"] is False
    assert result["cluster"]["127.0.0.8"].startswith("DN")


def test_a_peer_down_during_the_rejoin_leaves_the_running_node_alone():
    node = FakeNode()
    node.peer_down_on_rejoin = {"127.0.0.8": "answers neither JMX nor CQL"}
    with pytest.raises(rc.ReconfigureError) as info:
        rc.reconfigure(node, FakeCatalog(), {"memtable_heap_space": 256})
    message = str(info.value)
    assert "127.0.0.8 went down while 127.0.0.9:9042 was coming back" in message
    assert "left running on the new configuration" in message and "Bring 127.0.0.8 back" in message
    # One stop and one start: never a second restart, no rollback while a peer is down.
    assert node.events.count("stop") == 1 and node.events.count("start") == 1 and "restore" not in node.events
    result = info.value.result
    assert result["stopped"] == "peer down" and result["peer_down"] == node.peer_down_on_rejoin
    assert "rollback" not in result and result["left"] == "running on the new configuration"


def test_a_peer_down_while_the_node_is_not_running_starts_it_on_its_previous_configuration():
    class Dead(FakeNode):
        def start(self):
            super().start()
            self.running = self.events.count("start") > 1  # the new configuration does not run

    node = Dead()
    node.peer_down_on_rejoin = {"127.0.0.8": "seen DN by 127.0.0.7"}
    with pytest.raises(rc.ReconfigureError, match="was started on its previous configuration") as info:
        rc.reconfigure(node, FakeCatalog(), {"memtable_heap_space": 256})
    assert node.events[-2:] == ["restore", "start"] and node.events.count("stop") == 1
    assert info.value.result["left"] == "started on the previous configuration"


def test_clients_above_the_thresholds_while_the_node_was_down_stop_the_roll_after_it_is_back():
    clock = iter(range(0, 1000, 100))

    class Slow(FakeNode):
        def wait_back(self):
            self.signal_log = guards.SignalLog(
                guards.GuardPolicy(p99_ms=10.0, max_wait_s=150.0), clock=lambda: next(clock)
            )
            for _sample in range(3):
                self.signal_log.add({"p99_ms": 80.0, "error_rate": 0.0})
            return super().wait_back()

    node = Slow()
    with pytest.raises(rc.ReconfigureError, match="p99 latency 80.0 ms above 10.0 ms for 200 s") as info:
        rc.reconfigure(node, FakeCatalog(), {"memtable_heap_space": 256})
    result = info.value.result
    assert result["stopped"] == "client guard" and "rollback" not in result
    assert result["clients_while_down"]["worst_p99_ms"] == 80.0 and node.live["memtable_heap_space"] == 256
