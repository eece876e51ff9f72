# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The rolling lock kept in a store (apply/lock_stores.py), against stand-ins of the store connections: the
compare-and-set contract and how two controllers see one lock. tests/integration/test_tls_connections.py runs
the Redis records against a real server, test_lab_clusters.py the Cassandra records against a real node."""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.apply import lock_stores
from ansible_collections.tactician.nosql.plugins.module_utils.apply.lock import LockError, RollingLock


class FakeRedis:
    """GET, SET NX EX and the two compare-and-set scripts of lock_stores, on a dict shared by every 'controller'."""

    def __init__(self, data):
        self.data = data

    def get(self, key):
        return self.data.get(key, (None, None))[0]

    def set(self, key, value, nx=False, ex=None):
        if nx and key in self.data:
            return None
        self.data[key] = (value, ex)
        return True

    def eval(self, script, _numkeys, key, expected, *rest):
        if self.get(key) != expected:
            return 0
        if script == lock_stores._REMOVE:
            del self.data[key]
        else:
            value, ttl = rest
            self.data[key] = (value, None if ttl == "0" else int(ttl))
        return 1

    def close(self):
        pass


@pytest.fixture
def store(monkeypatch):
    data = {}
    monkeypatch.setattr(
        lock_stores.redis_adapter, "on_key_owner", lambda _params, _host, _port, call, hops=3: call(FakeRedis(data))
    )
    return data


def controller(name, host, ttl=600):
    """A lock as one controller sees it: its own owner and host, its process alive."""
    records = lock_stores.RedisRecords("shop", {}, "10.0.0.11:6379")
    return RollingLock("shop", owner=name, host=host, pid=os.getpid(), ttl=ttl, records=records)


def test_a_second_controller_is_refused_by_the_lock_in_the_store(store):
    first, second = controller("alice", "ctl-a"), controller("bob", "ctl-b")
    taken = first.acquire(run_id="r1")
    assert taken["changed"] and taken["path"] == "redis://10.0.0.11:6379/tactician:lock:shop"
    assert store["tactician:lock:shop"][1] == 600  # the key expires with the lock
    with pytest.raises(LockError, match="^name: the rolling lock of cluster shop is held by alice"):
        second.acquire(run_id="r2")
    assert second.status()["owner"] == "alice"
    assert first.acquire(run_id="r1")["changed"] is False  # the holder's own run again
    with pytest.raises(LockError, match="^run_id: .* only the holder releases it"):
        second.release(run_id="r2")
    first.release(run_id="r1")
    assert store == {} and second.acquire(run_id="r2")["changed"]


def test_a_stopped_roll_keeps_its_lock_without_an_expiry(store):
    first = controller("alice", "ctl-a")
    first.acquire(run_id="r1")
    first.mark_stopped(run_id="r1", stopped={"reason": "node 2 down", "node": "n2"})
    assert store["tactician:lock:shop"][1] is None
    with pytest.raises(LockError, match="stopped at n2"):
        controller("bob", "ctl-b").acquire(run_id="r2")
    assert controller("bob", "ctl-b").release(force=True)["released"]["stopped"]["reason"] == "node 2 down"


def test_a_record_changed_between_read_and_write_is_not_overwritten(store, monkeypatch):
    first, second = controller("alice", "ctl-a"), controller("bob", "ctl-b")
    first.acquire(run_id="r1")
    real_read = lock_stores.RedisRecords.read

    def read_then_someone_else_writes(self):
        record = real_read(self)
        value, ttl = store["tactician:lock:shop"]
        store["tactician:lock:shop"] = (value.replace('"r1"', '"r1-renewed"'), ttl)
        return record

    monkeypatch.setattr(lock_stores.RedisRecords, "read", read_then_someone_else_writes)
    with pytest.raises(LockError, match="changed while this run was taking or giving it back"):
        second.acquire(run_id="r2", force=True)
    assert '"r1-renewed"' in store["tactician:lock:shop"][0]


def test_an_expired_record_is_taken_over_in_one_compare_and_set(store):
    old = controller("alice", "ctl-a", ttl=1)
    old.acquire(run_id="r1")
    value, ttl = store["tactician:lock:shop"]
    store["tactician:lock:shop"] = (re.sub(r'"expires": "[^"]+"', '"expires": "2000-01-01T00:00:00Z"', value), ttl)
    taken = controller("bob", "ctl-b").acquire(run_id="r2")
    assert taken["stale_replaced"]["owner"] == "alice" and "expired" in taken["stale_reason"]
    assert '"owner": "bob"' in store["tactician:lock:shop"][0]


def test_cassandra_keyspace_names_are_checked_by_name():
    with pytest.raises(LockError, match="^lock_keyspace: 'Bad-Name' is not allowed"):
        lock_stores.CassandraRecords("shop", session=None, keyspace="Bad-Name")
    records = lock_stores.CassandraRecords("shop", session=None, contact="10.0.0.21")
    assert records.where == "cassandra://10.0.0.21/tactician.rolling_locks/shop"
