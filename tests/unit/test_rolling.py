# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The batch rule, its lookup, and the rolling lock (in temporary directories)."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys

import pytest
from ansible.errors import AnsibleLookupError

from ansible_collections.tactician.nosql.plugins.lookup.rolling_batch import rolling_batch
from ansible_collections.tactician.nosql.plugins.module_utils.apply import rolling
from ansible_collections.tactician.nosql.plugins.module_utils.apply.rolling import (
    CONSISTENCY_LEVELS,
    RollingError,
    RollingLock,
    batch_rule,
    batches,
    default_lock_dir,
    redis_replication_factor,
    replicas_needed,
)

# ---------------------------------------------------------------------------------------------------------------
# replicas_needed
# ---------------------------------------------------------------------------------------------------------------

# Replicas each level needs at RF 1, 2, 3, 5; None = more than RF (refused).
NEEDED = {
    "ONE": {1: 1, 2: 1, 3: 1, 5: 1},
    "TWO": {1: None, 2: 2, 3: 2, 5: 2},
    "THREE": {1: None, 2: None, 3: 3, 5: 3},
    "QUORUM": {1: 1, 2: 2, 3: 2, 5: 3},
    "LOCAL_QUORUM": {1: 1, 2: 2, 3: 2, 5: 3},
    "EACH_QUORUM": {1: 1, 2: 2, 3: 2, 5: 3},
    "ALL": {1: 1, 2: 2, 3: 3, 5: 5},
    "LOCAL_ONE": {1: 1, 2: 1, 3: 1, 5: 1},
    "SERIAL": {1: 1, 2: 2, 3: 2, 5: 3},
    "LOCAL_SERIAL": {1: 1, 2: 2, 3: 2, 5: 3},
}


def test_every_level_is_in_the_table():
    assert set(CONSISTENCY_LEVELS) <= set(NEEDED)


@pytest.mark.parametrize("cl", sorted(NEEDED))
@pytest.mark.parametrize("rf", [1, 2, 3, 5])
def test_replicas_needed_every_level(cl, rf):
    expected = NEEDED[cl][rf]
    for spelling in (cl, cl.lower()):
        if expected is None:
            with pytest.raises(
                RollingError, match=r"^cl: %s needs \d replicas but the replication factor is %d" % (cl, rf)
            ):
                replicas_needed(spelling, rf)
        else:
            assert replicas_needed(spelling, rf) == expected


@pytest.mark.parametrize("cl", sorted(NEEDED))
@pytest.mark.parametrize("rf", [1, 2, 3, 5])
def test_batch_every_level(cl, rf):
    expected = NEEDED[cl][rf]
    if expected is None:
        with pytest.raises(RollingError, match="needs"):
            batch_rule(rf, cl, 10)
    elif rf - expected < 1:
        with pytest.raises(
            RollingError, match=r"R = RF - CL = %d - %d = %d: restarting any node" % (rf, expected, rf - expected)
        ):
            batch_rule(rf, cl, 10)
    else:
        rule = batch_rule(rf, cl, 10)
        assert rule["batch"] == rule["serial"] == rf - expected
        assert rule["replicas_needed"] == expected
        assert rule["available"] is True and rule["aggressive"] is False


def test_numbers():
    assert replicas_needed(2, 3) == 2
    assert replicas_needed("2", 3) == 2
    assert replicas_needed(" 1 ", 5) == 1
    assert batch_rule(5, 2, 5)["rule"] == "R = RF - CL = 5 - 2 = 3"
    assert batch_rule("3", "1", "3")["batch"] == 2
    with pytest.raises(RollingError, match="^cl: 4 needs 4 replicas but the replication factor is 3"):
        replicas_needed(4, 3)
    for bad in (0, "0", -1, True, None, 1.5, "lots"):
        with pytest.raises(RollingError, match="^cl: "):
            replicas_needed(bad, 3)


def test_unknown_level_names_the_allowed_ones():
    with pytest.raises(RollingError, match="^cl: 'MOST' is not a consistency level; allowed: ONE, TWO, THREE, QUORUM"):
        replicas_needed("MOST", 3)


def test_any_is_refused_with_the_reason():
    for spelling in ("ANY", "any"):
        with pytest.raises(RollingError, match="^cl: ANY is refused .* only applies to writes"):
            replicas_needed(spelling, 3)


def test_bad_replication_factor():
    for bad in (0, -2, "x", None, True, {}, {"dc1": 0}):
        with pytest.raises(RollingError, match=r"^rf"):
            replicas_needed("ONE", bad)


def test_dict_rf():
    rf = {"dc1": 3, "dc2": 5}
    # LOCAL_QUORUM and EACH_QUORUM: the local data center, by default the one with the fewest replicas.
    assert replicas_needed("LOCAL_QUORUM", rf) == 2
    assert replicas_needed("LOCAL_QUORUM", rf, local_dc="dc2") == 3
    assert replicas_needed("EACH_QUORUM", rf) == 2
    assert replicas_needed("LOCAL_ONE", rf) == 1
    assert replicas_needed("LOCAL_SERIAL", rf, local_dc="dc2") == 3
    # The other levels count every replica.
    assert replicas_needed("QUORUM", rf) == 5
    assert replicas_needed("ALL", rf) == 8
    rule = batch_rule(rf, "LOCAL_QUORUM", 8)
    assert rule["rule"] == "R = RF(dc1) - CL = 3 - 2 = 1" and rule["batch"] == 1 and rule["local_dc"] == "dc1"
    rule = batch_rule(rf, "local_quorum", 8, local_dc="dc2")
    assert rule["rule"] == "R = RF(dc2) - CL = 5 - 3 = 2" and rule["batch"] == 2
    assert batch_rule(rf, "QUORUM", 8)["batch"] == 3
    assert batch_rule(rf, "ONE", 8)["batch"] == 7
    with pytest.raises(RollingError, match="^local_dc: 'dc9' is not a data center of rf; allowed: dc1, dc2"):
        replicas_needed("LOCAL_QUORUM", rf, local_dc="dc9")


# ---------------------------------------------------------------------------------------------------------------
# batch_rule
# ---------------------------------------------------------------------------------------------------------------


def test_worked_examples_rf3():
    one = batch_rule(3, "ONE", 3)
    assert (one["batch"], one["batches"], one["rule"], one["serial"]) == (2, 2, "R = RF - CL = 3 - 1 = 2", 2)
    quorum = batch_rule(3, "QUORUM", 3)
    assert (quorum["batch"], quorum["batches"], quorum["rule"]) == (1, 3, "R = RF - CL = 3 - 2 = 1")
    with pytest.raises(RollingError) as refused:
        batch_rule(3, "ALL", 3)
    message = str(refused.value)
    assert "R = RF - CL = 3 - 3 = 0: restarting any node would make CL ALL unavailable" in message
    assert "lower the consistency level, raise the replication factor, or set aggressive: true" in message


def test_result_keys():
    rule = batch_rule(3, "QUORUM", ["a", "b", "c"])
    assert rule == dict(
        batch=1,
        batches=3,
        rule="R = RF - CL = 3 - 2 = 1",
        rf=3,
        cl="QUORUM",
        replicas_needed=2,
        nodes=3,
        sets=None,
        nodes_per_set=None,
        batch_sets=None,
        local_dc=None,
        aggressive=False,
        available=True,
        serial=1,
        plan=[["a"], ["b"], ["c"]],
    )


def test_batch_never_exceeds_the_nodes():
    rule = batch_rule(5, "ONE", 2)
    assert rule["rule"] == "R = RF - CL = 5 - 1 = 4"
    assert rule["batch"] == rule["serial"] == 2 and rule["batches"] == 1


def test_bad_nodes():
    for bad in (0, [], "", None, "x", -3):
        with pytest.raises(RollingError, match="^nodes: "):
            batch_rule(3, "ONE", bad)


def test_complete_sets():
    hosts = ["a1", "a2", "b1", "b2", "c1", "c2"]
    one = batch_rule(3, "ONE", hosts, sets=3)
    assert one["batch_sets"] == 2 and one["nodes_per_set"] == 2
    assert one["batch"] == one["serial"] == 4 and one["batches"] == 2
    assert one["rule"] == "R = count(sets) - CL = 3 - 1 = 2 sets of 2 nodes = 4 nodes"
    assert one["plan"] == [["a1", "a2", "b1", "b2"], ["c1", "c2"]]
    quorum = batch_rule(3, "QUORUM", 6, sets=3)
    assert quorum["batch_sets"] == 1 and quorum["batch"] == 2 and quorum["batches"] == 3
    assert quorum["rule"] == "R = count(sets) - CL = 3 - 2 = 1 set of 2 nodes = 2 nodes"
    # rf may be left out: it equals the number of sets.
    assert batch_rule(None, "ONE", 6, sets=3)["batch"] == 4
    assert batch_rule(3, "ONE", 7, sets=3, nodes_per_set=3)["batch"] == 6


def test_complete_sets_refusals():
    with pytest.raises(RollingError, match="^cl: R = count\\(sets\\) - CL = 3 - 3 = 0: restarting any node"):
        batch_rule(3, "ALL", 6, sets=3)
    with pytest.raises(RollingError, match="^sets: 2 complete-sets but the replication factor is 3"):
        batch_rule(3, "ONE", 6, sets=2)
    with pytest.raises(RollingError, match="^nodes_per_set: 7 nodes do not split into 3 complete-sets"):
        batch_rule(3, "ONE", 7, sets=3)
    with pytest.raises(RollingError, match="^rf: with complete-sets"):
        batch_rule({"dc1": 3}, "ONE", 6, sets=3)
    with pytest.raises(RollingError, match="^sets: "):
        batch_rule(3, "ONE", 6, sets=0)


def test_aggressive():
    rule = batch_rule(3, "ALL", ["a", "b", "c"], aggressive=True)
    assert rule["aggressive"] is True and rule["available"] is False
    assert rule["batch"] == rule["serial"] == 3 and rule["batches"] == 1
    assert rule["rule"].startswith("R = RF - CL = 3 - 3 = 0; aggressive: 3 of 3 nodes at a time")
    rule = batch_rule(3, "ALL", 6, aggressive=True, aggressive_batch=2)
    assert (rule["batch"], rule["batches"], rule["available"]) == (2, 3, False)
    # aggressive only permits: with R >= 1 the safe batch stays, unless a larger aggressive_batch is asked for.
    rule = batch_rule(3, "QUORUM", 6, aggressive=True)
    assert (rule["batch"], rule["aggressive"], rule["available"]) == (1, False, True)
    rule = batch_rule(3, "QUORUM", 6, aggressive=True, aggressive_batch=3)
    assert (rule["batch"], rule["aggressive"], rule["available"]) == (3, True, False)
    rule = batch_rule(3, "ONE", 6, sets=3, aggressive=True)
    assert rule["batch"] == 4 and rule["available"] is True
    rule = batch_rule(3, "ALL", 6, sets=3, aggressive=True)
    assert rule["batch"] == 6 and rule["batch_sets"] is None and rule["available"] is False


def test_aggressive_batch_checks():
    with pytest.raises(RollingError, match="^aggressive_batch: only used with aggressive: true"):
        batch_rule(3, "ALL", 3, aggressive_batch=1)
    with pytest.raises(RollingError, match="^aggressive_batch: 4 is more than the 3 nodes to roll; allowed: 1 to 3"):
        batch_rule(3, "ALL", 3, aggressive=True, aggressive_batch=4)
    with pytest.raises(RollingError, match="^aggressive_batch: "):
        batch_rule(3, "ALL", 3, aggressive=True, aggressive_batch=0)


def test_batches():
    assert batches(["a", "b", "c", "d", "e"], 2) == [["a", "b"], ["c", "d"], ["e"]]
    assert batches(["a", "b"], 5) == [["a", "b"]]
    assert batches(("a", "b", "c"), 1) == [["a"], ["b"], ["c"]]
    assert batches([], 3) == []
    with pytest.raises(RollingError, match="^batch: "):
        batches(["a"], 0)


def test_redis_replication_factor():
    shards = [
        {"master": "127.0.0.1:6381", "replicas": ["127.0.0.1:6384"]},
        {"master": "127.0.0.1:6382", "replicas": ["127.0.0.1:6385", "127.0.0.1:6386"]},
    ]
    assert redis_replication_factor(shards) == 2
    assert redis_replication_factor([{"master": "m"}]) == 1
    with pytest.raises(RollingError, match="^shards: "):
        redis_replication_factor([])
    with pytest.raises(RollingError, match=r"^shards\[0\]: "):
        redis_replication_factor(["m"])


# ---------------------------------------------------------------------------------------------------------------
# The lookup
# ---------------------------------------------------------------------------------------------------------------


def test_lookup_function():
    assert rolling_batch(rf=3, cl="QUORUM", nodes=3)[0]["batch"] == 1
    with pytest.raises(AnsibleLookupError, match="^rolling_batch: cl: R = RF - CL = 3 - 3 = 0"):
        rolling_batch(rf=3, cl="ALL", nodes=3)
    with pytest.raises(AnsibleLookupError, match="^rolling_batch: rf: "):
        rolling_batch(cl="ONE", nodes=3)


_LOOKUP_SCRIPT = """
import json, sys
from ansible.plugins.loader import init_plugin_loader, lookup_loader
init_plugin_loader([sys.argv[1]])
lookup = lookup_loader.get("tactician.nosql.rolling_batch")
out = []
for kwargs in json.loads(sys.argv[2]):
    try:
        out.append(lookup.run([], variables={}, **kwargs))
    except Exception as exc:
        out.append("%s: %s" % (type(exc).__name__, exc))
print(json.dumps(out))
"""


def test_lookup_plugin_through_the_loader():
    # In a process of its own: the collection loader is global and would change how the other tests import.
    calls = [
        dict(rf=3, cl="QUORUM", nodes=["a", "b", "c"]),
        dict(rf={"dc1": 3, "dc2": 5}, cl="LOCAL_QUORUM", nodes=8, local_dc="dc2"),
        dict(rf=3, cl="ALL", nodes=3, aggressive=True),
        dict(rf=3, cl="ONE", nodes=6, sets=3),
        dict(rf=3, cl="ANY", nodes=3),
        dict(rf=3, cl="ALL", nodes=3),
    ]
    collections = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), ".collections")
    done = subprocess.run(
        [sys.executable, "-c", _LOOKUP_SCRIPT, collections, json.dumps(calls)],
        capture_output=True,
        text=True,
        check=True,
    )
    quorum, local, aggressive, sets, refused_any, refused_all = json.loads(done.stdout)
    assert len(quorum) == 1 and quorum[0]["serial"] == 1 and quorum[0]["plan"] == [["a"], ["b"], ["c"]]
    assert local[0]["batch"] == 2 and local[0]["rule"] == "R = RF(dc2) - CL = 5 - 3 = 2"
    assert aggressive[0]["aggressive"] is True and aggressive[0]["batch"] == 3
    assert sets[0]["batch"] == 4
    assert "Error: rolling_batch: cl: ANY is refused" in refused_any
    assert "Error: rolling_batch: cl: R = RF - CL = 3 - 3 = 0: restarting any node" in refused_all


# ---------------------------------------------------------------------------------------------------------------
# The lock
# ---------------------------------------------------------------------------------------------------------------

T0 = datetime.datetime(2026, 5, 9, 9, 0, 0, tzinfo=datetime.UTC)


@pytest.fixture
def clock(monkeypatch):
    now = {"t": T0}
    monkeypatch.setattr(rolling, "_now", lambda: now["t"])
    return now


def _dead_pid():
    """The id of a process that has exited."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def lock_for(tmp_path, owner="alice@ctl:100", pid=None, **kwargs):
    return RollingLock("lab", lock_dir=str(tmp_path / "locks"), owner=owner, pid=pid, host="ctl", **kwargs)


def test_default_lock_dir(monkeypatch, tmp_path):
    assert default_lock_dir({"XDG_STATE_HOME": "/srv/state"}) == "/srv/state/tactician-nosql/locks"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_lock_dir({}) == str(tmp_path / ".local" / "state" / "tactician-nosql" / "locks")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    lock = RollingLock("lab")
    assert lock.path == str(tmp_path / "state" / "tactician-nosql" / "locks" / "lab.lock")
    assert lock.pid == os.getpid() and lock.owner.endswith(":%d" % os.getpid()) and "@" in lock.owner


def test_names_and_ttl_are_checked(tmp_path):
    for bad in ("", "../etc", "a/b", ".hidden", "lab cluster", None, "x" * 129):
        with pytest.raises(RollingError, match="^name: .* allowed: letters, digits"):
            RollingLock(bad, lock_dir=str(tmp_path))
    for name in ("lab", "prod-eu_1.cassandra"):
        RollingLock(name, lock_dir=str(tmp_path))
    with pytest.raises(RollingError, match="^ttl: "):
        RollingLock("lab", lock_dir=str(tmp_path), ttl=0)
    with pytest.raises(RollingError, match="^owner: "):
        RollingLock("lab", lock_dir=str(tmp_path), owner=" ")


def test_acquire_writes_the_record(tmp_path, clock):
    lock = lock_for(tmp_path, pid=os.getpid(), ttl=600)
    assert lock.status() is None
    result = lock.acquire(run_id="r1")
    record = dict(
        name="lab",
        owner="alice@ctl:100",
        host="ctl",
        pid=os.getpid(),
        acquired="2026-05-09T09:00:00Z",
        expires="2026-05-09T09:10:00Z",
        run_id="r1",
    )
    assert result == dict(
        changed=True, lock=record, stale_replaced=None, stale_reason=None, released=None, path=lock.path
    )
    with open(lock.path) as handle:
        assert json.load(handle) == record
    assert lock.status() == record
    assert lock.is_stale(record) is False


def test_idempotent_reacquire(tmp_path, clock):
    lock = lock_for(tmp_path, pid=os.getpid())
    first = lock.acquire(run_id="r1")
    clock["t"] = T0 + datetime.timedelta(minutes=5)
    again = lock.acquire(run_id="r1")
    assert again["changed"] is False and again["lock"] == first["lock"]


def test_contended(tmp_path, clock):
    lock_for(tmp_path, pid=os.getpid()).acquire(run_id="r1")
    other = lock_for(tmp_path, owner="bob@ctl:200", pid=os.getpid())
    with pytest.raises(RollingError) as held:
        other.acquire(run_id="r2")
    message = str(held.value)
    assert "held by alice@ctl:100 (run r1, host ctl, pid %d) since 2026-05-09T09:00:00Z" % os.getpid() in message
    assert "state=released force=true" in message and lock_for(tmp_path).path in message
    # Same owner, another run: also refused.
    with pytest.raises(RollingError, match="held by alice"):
        lock_for(tmp_path, pid=os.getpid()).acquire(run_id="r2")
    # Check mode says the same.
    with pytest.raises(RollingError, match="held by alice"):
        other.acquire(run_id="r2", check_mode=True)


def test_stale_dead_pid(tmp_path, clock):
    dead = _dead_pid()
    old = lock_for(tmp_path, pid=dead).acquire(run_id="r1")["lock"]
    newcomer = lock_for(tmp_path, owner="bob@ctl:200", pid=os.getpid())
    assert newcomer.is_stale(old) is True
    result = newcomer.acquire(run_id="r2")
    assert result["changed"] is True and result["stale_replaced"] == old
    assert result["stale_reason"] == "its process %d on ctl is gone" % dead
    assert newcomer.status()["owner"] == "bob@ctl:200"


def test_dead_pid_of_another_host_is_not_stale(tmp_path, clock):
    old = RollingLock("lab", lock_dir=str(tmp_path), owner="alice", pid=_dead_pid(), host="elsewhere")
    record = old.acquire(run_id="r1")["lock"]
    here = RollingLock("lab", lock_dir=str(tmp_path), owner="bob", pid=os.getpid(), host="ctl")
    assert here.is_stale(record) is False
    with pytest.raises(RollingError, match="held by alice"):
        here.acquire(run_id="r2")


def test_stale_expired(tmp_path, clock):
    old = lock_for(tmp_path, pid=os.getpid(), ttl=60).acquire(run_id="r1")["lock"]
    newcomer = lock_for(tmp_path, owner="bob@ctl:200", pid=os.getpid())
    clock["t"] = T0 + datetime.timedelta(seconds=59)
    assert newcomer.is_stale(old) is False
    clock["t"] = T0 + datetime.timedelta(seconds=60)
    assert newcomer.is_stale(old) is True
    result = newcomer.acquire(run_id="r2")
    assert result["stale_replaced"] == old and result["stale_reason"] == "it expired at 2026-05-09T09:01:00Z"


def test_broken_lock_file_is_stale(tmp_path, clock):
    lock = lock_for(tmp_path)
    os.makedirs(lock.lock_dir)
    with open(lock.path, "w") as handle:
        handle.write("")
    result = lock.acquire(run_id="r1")
    assert result["changed"] is True and result["stale_reason"] == "the lock file holds no valid record"


def test_release(tmp_path, clock):
    lock = lock_for(tmp_path, pid=os.getpid())
    record = lock.acquire(run_id="r1")["lock"]
    other = lock_for(tmp_path, owner="bob@ctl:200", pid=os.getpid())
    with pytest.raises(RollingError, match="^run_id: .* held by alice@ctl:100 .* not by bob@ctl:200 \\(run r1\\)"):
        other.release(run_id="r1")
    with pytest.raises(RollingError, match="only the holder releases it, force=true removes it anyway"):
        lock.release(run_id="r2")
    assert os.path.exists(lock.path)
    result = lock.release(run_id="r1")
    assert result["changed"] is True and result["released"] == record and result["lock"] is None
    assert not os.path.exists(lock.path) and lock.status() is None
    # Nothing left to release.
    assert lock.release(run_id="r1")["changed"] is False


def test_release_of_a_missing_directory_creates_nothing(tmp_path):
    lock = lock_for(tmp_path)
    assert lock.release(run_id="r1")["changed"] is False
    assert lock.status() is None
    assert not os.path.exists(lock.lock_dir)


def test_force(tmp_path, clock):
    lock_for(tmp_path, pid=os.getpid()).acquire(run_id="r1")
    other = lock_for(tmp_path, owner="bob@ctl:200", pid=os.getpid())
    result = other.release(force=True)
    assert result["changed"] is True and result["released"]["owner"] == "alice@ctl:100"
    lock_for(tmp_path, pid=os.getpid()).acquire(run_id="r1")
    result = other.acquire(run_id="r2", force=True)
    assert result["stale_reason"] == "taken over with force" and result["stale_replaced"]["run_id"] == "r1"
    assert other.status()["owner"] == "bob@ctl:200"


def test_check_mode_touches_nothing(tmp_path, clock):
    lock = lock_for(tmp_path, pid=os.getpid())
    result = lock.acquire(run_id="r1", check_mode=True)
    assert result["changed"] is True and result["lock"]["run_id"] == "r1"
    assert not os.path.exists(lock.lock_dir)
    lock.acquire(run_id="r1")
    with open(lock.path) as handle:
        before = handle.read()
    assert lock.acquire(run_id="r1", check_mode=True)["changed"] is False
    result = lock.release(run_id="r1", check_mode=True)
    assert result["changed"] is True and result["released"]["run_id"] == "r1"
    with open(lock.path) as handle:
        assert handle.read() == before
    # A stale lock in check mode: reported, not replaced.
    clock["t"] = T0 + datetime.timedelta(days=1)
    other = lock_for(tmp_path, owner="bob@ctl:200", pid=os.getpid())
    result = other.acquire(run_id="r2", check_mode=True)
    assert result["changed"] is True and result["stale_replaced"]["owner"] == "alice@ctl:100"
    with open(lock.path) as handle:
        assert handle.read() == before


def test_no_pid_means_ttl_only(tmp_path, clock):
    lock = RollingLock("lab", lock_dir=str(tmp_path), pid=None, host="ctl")
    assert ":" not in lock.owner
    record = lock.acquire(run_id="r1")["lock"]
    assert record["pid"] is None and lock.is_stale(record) is False


def test_controller_pid_walks_up_to_the_outermost_ansible_process(monkeypatch):
    # 50 (module) -> 40 (sh) -> 30 (worker fork) -> 20 (ansible-playbook) -> 10 (bash) -> 1
    parents = {50: 40, 40: 30, 30: 20, 20: 10, 10: 1}
    controllers = {30, 20}
    monkeypatch.setattr(rolling, "_proc_parent", parents.__getitem__)
    monkeypatch.setattr(rolling, "_proc_is_controller", controllers.__contains__)
    assert rolling.controller_pid(50) == 20
    controllers.clear()
    assert rolling.controller_pid(50) is None


def test_controller_pid_reads_proc():
    # This test process is no Ansible run.
    assert rolling.controller_pid() is None or rolling.pid_alive(rolling.controller_pid())
