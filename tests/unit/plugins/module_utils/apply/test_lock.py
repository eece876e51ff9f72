# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The rolling lock of apply/lock.py (in temporary directories)."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.apply import lock as lock_mod
from ansible_collections.tactician.nosql.plugins.module_utils.apply.lock import LockError, RollingLock, default_lock_dir

# ---------------------------------------------------------------------------------------------------------------
# The lock
# ---------------------------------------------------------------------------------------------------------------

T0 = datetime.datetime(2026, 5, 9, 9, 0, 0, tzinfo=datetime.UTC)


@pytest.fixture
def clock(monkeypatch):
    now = {"t": T0}
    monkeypatch.setattr(lock_mod, "_now", lambda: now["t"])
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
        with pytest.raises(LockError, match="^name: .* allowed: letters, digits"):
            RollingLock(bad, lock_dir=str(tmp_path))
    for name in ("lab", "prod-eu_1.cassandra"):
        RollingLock(name, lock_dir=str(tmp_path))
    with pytest.raises(LockError, match="^ttl: "):
        RollingLock("lab", lock_dir=str(tmp_path), ttl=0)
    with pytest.raises(LockError, match="^owner: "):
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
    with pytest.raises(LockError) as held:
        other.acquire(run_id="r2")
    message = str(held.value)
    assert "held by alice@ctl:100 (run r1, host ctl, pid %d) since 2026-05-09T09:00:00Z" % os.getpid() in message
    assert "state=released force=true" in message and lock_for(tmp_path).path in message
    # Same owner, another run: also refused.
    with pytest.raises(LockError, match="held by alice"):
        lock_for(tmp_path, pid=os.getpid()).acquire(run_id="r2")
    # Check mode says the same.
    with pytest.raises(LockError, match="held by alice"):
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
    with pytest.raises(LockError, match="held by alice"):
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
    assert result["changed"] is True and result["stale_reason"] == "the lock holds no valid record"


def test_release(tmp_path, clock):
    lock = lock_for(tmp_path, pid=os.getpid())
    record = lock.acquire(run_id="r1")["lock"]
    other = lock_for(tmp_path, owner="bob@ctl:200", pid=os.getpid())
    with pytest.raises(LockError, match="^run_id: .* held by alice@ctl:100 .* not by bob@ctl:200 \\(run r1\\)"):
        other.release(run_id="r1")
    with pytest.raises(LockError, match="only the holder releases it, force=true removes it anyway"):
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
    monkeypatch.setattr(lock_mod, "_proc_parent", parents.__getitem__)
    monkeypatch.setattr(lock_mod, "_proc_is_controller", controllers.__contains__)
    assert lock_mod.controller_pid(50) == 20
    controllers.clear()
    assert lock_mod.controller_pid(50) is None


def test_controller_pid_reads_proc():
    # This test process is no Ansible run.
    assert lock_mod.controller_pid() is None or lock_mod.pid_alive(lock_mod.controller_pid())


def test_a_stopped_roll_keeps_its_lock_until_released_with_force(tmp_path, clock):
    dead = _dead_pid()
    holder = lock_for(tmp_path, pid=dead)
    holder.acquire(run_id="r1")
    stopped = {
        "node": "cassandra1",
        "reason": "127.0.0.2 went down while 127.0.0.1:9042 was coming back",
        "nodes": {"cassandra2": {"address": "127.0.0.2", "seen": "DN as seen by 127.0.0.3", "step": "not reached"}},
        "continue": "bring 127.0.0.2 back, then release with force=true and run the roll again",
    }
    with pytest.raises(LockError, match="stopped: give a mapping"):
        holder.mark_stopped(run_id="r1", stopped={"node": "x"})
    with pytest.raises(LockError, match="run_id: only the holder marks its roll stopped"):
        holder.mark_stopped(run_id="other", stopped=stopped)
    result = holder.mark_stopped(run_id="r1", stopped=stopped)
    assert result["lock"]["stopped"]["at"] == "2026-05-09T09:00:00Z"
    on_disk = json.loads((tmp_path / "locks" / "lab.lock").read_text())
    assert on_disk["stopped"]["nodes"]["cassandra2"]["seen"].startswith("DN")
    # Its process is gone and its time is up: still held, the next roll is told why and how to go on.
    clock["t"] = T0 + datetime.timedelta(days=2)
    other = lock_for(tmp_path, owner="bob@ctl:200", pid=None)
    with pytest.raises(LockError) as info:
        other.acquire(run_id="r2")
    message = str(info.value)
    assert "stopped at cassandra1" in message and "127.0.0.2 went down" in message
    assert "To continue: bring 127.0.0.2 back" in message
    assert other.release(run_id="r2", force=True)["released"]["stopped"]["node"] == "cassandra1"
    assert other.acquire(run_id="r2")["changed"]


def test_marking_stopped_in_check_mode_writes_nothing(tmp_path, clock):
    holder = lock_for(tmp_path)
    holder.acquire(run_id="r1")
    before = (tmp_path / "locks" / "lab.lock").read_text()
    result = holder.mark_stopped(run_id="r1", stopped={"reason": "x"}, check_mode=True)
    assert result["lock"]["stopped"]["reason"] == "x"
    assert (tmp_path / "locks" / "lab.lock").read_text() == before
