# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The rolling lock kept in the cluster itself, so that every controller and every AWX job sees it.

Each class here is the ``records`` of an apply.lock.RollingLock: the holder's record (the same JSON as the lock
file's), written compare-and-set, so that of two controllers acting at the same moment one wins and the other is
told who holds the lock.

- ``RedisRecords``: the key ``tactician:lock:<name>``, created with SET NX and an expiry of the lock's ttl (a
  stopped roll's record has none: it holds until someone releases it), replaced and removed by a script that
  first compares the value with the record read. In a Redis Cluster the key lives on its slot's master; the call
  follows the MOVED reply there.
- ``CassandraRecords``: the row ``name`` of the table ``<keyspace>.rolling_locks`` (name text primary key, record
  text), created with INSERT ... IF NOT EXISTS USING TTL, replaced with UPDATE ... IF record = <the one read>,
  removed with DELETE ... IF record = ..., read at SERIAL: lightweight transactions, a Paxos round among the
  row's replicas. A keyspace that does not exist is made with NetworkTopologyStrategy and min(3, nodes) replicas
  in each data center (an operator may make it beforehand with the replication of their choice).
"""

from __future__ import annotations

import contextlib
import re

from ansible_collections.tactician.nosql.plugins.module_utils.apply.lock import (
    LockError,
    check_name,
    decode_record,
    encode_record,
)
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import StoreError
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter

KEY_PREFIX = "tactician:lock:"
KEYSPACE = "tactician"
TABLE = "rolling_locks"
IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]{0,47}$")

# KEYS[1] the lock's key; ARGV[1] the value expected, ARGV[2] the new one, ARGV[3] its expiry in seconds (0: none).
_REPLACE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[3] == '0' then redis.call('SET', KEYS[1], ARGV[2]) else redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3]) end
return 1
"""
_REMOVE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
"""


def _raced(where):
    return LockError(
        "name: the rolling lock %s changed while this run was taking or giving it back (another controller acted at"
        " the same moment); run again to see who holds it" % where
    )


class _Remembered:
    """The text each record was read as: a compare-and-set compares with what the store holds, byte for byte."""

    def __init__(self):
        self._texts = {}

    def keep(self, record, text):
        self._texts[id(record)] = (record, text)
        return record

    def text_of(self, record):
        found = self._texts.get(id(record))
        return found[1] if found is not None and found[0] is record else encode_record(record)


class RedisRecords(_Remembered):
    """The lock record as a Redis key (see the module's docstring). params: the Redis adapter's connection options;
    address: host:port of any node of the cluster."""

    def __init__(self, name, params, address):
        super().__init__()
        self.name = check_name(name)
        self.params = params
        self.host, self.port = redis_adapter.split_node(address)
        self.key = KEY_PREFIX + name
        self.where = "redis://%s:%d/%s" % (self.host, self.port, self.key)
        self.delete_hint = "the key %s on %s:%d (DEL; in a Redis Cluster on its slot's master)" % (
            self.key,
            self.host,
            self.port,
        )

    def guard(self, exclusive=True):
        return contextlib.nullcontext()

    def _call(self, call):
        try:
            return redis_adapter.on_key_owner(self.params, self.host, self.port, call)
        except (redis_adapter.RedisError, StoreError) as exc:
            raise LockError("lock_store: %s: %s" % (self.where, exc)) from exc

    def read(self):
        text = self._call(lambda conn: conn.get(self.key))
        return None if text is None else self.keep(decode_record(self.name, text), text)

    def create(self, record, ttl=None):
        done = self._call(lambda conn: conn.set(self.key, encode_record(record), nx=True, ex=int(ttl) if ttl else None))
        if not done:
            raise LockError(
                "name: the rolling lock %s was taken by another run at the same moment; try again" % self.where
            )

    def replace(self, old, record, ttl=None):
        expected = self.text_of(old)
        done = self._call(
            lambda conn: conn.eval(_REPLACE, 1, self.key, expected, encode_record(record), str(int(ttl or 0)))
        )
        if not done:
            raise _raced(self.where)

    take_over = replace

    def remove(self, old):
        expected = self.text_of(old)
        if not self._call(lambda conn: conn.eval(_REMOVE, 1, self.key, expected)):
            raise _raced(self.where)


class CassandraRecords(_Remembered):
    """The lock record as a Cassandra row (see the module's docstring). session: an open driver session; keyspace:
    where the table rolling_locks lives (made when missing); contact: the address the session reached (for
    messages)."""

    def __init__(self, name, session, keyspace=KEYSPACE, contact=None):
        super().__init__()
        self.name = check_name(name)
        if not isinstance(keyspace, str) or not IDENTIFIER.match(keyspace):
            raise LockError(
                "lock_keyspace: %r is not allowed; give a keyspace name of lower-case letters, digits and '_', "
                "starting with a letter, at most 48 characters" % (keyspace,)
            )
        self.session = session
        self.table = "%s.%s" % (keyspace, TABLE)
        self.keyspace = keyspace
        self.where = "cassandra://%s/%s/%s" % (contact or "cluster", self.table, name)
        self.delete_hint = "the row name = '%s' of %s" % (name, self.table)
        self._ready = False

    def guard(self, exclusive=True):
        return contextlib.nullcontext()

    def _fail(self, exc):
        return LockError("lock_store: %s: %s" % (self.where, exc))

    def ensure_table(self):
        """The keyspace (NetworkTopologyStrategy, min(3, nodes) per data center) and the table, when missing."""
        if self._ready:
            return
        try:
            if cql.keyspace_replication(self.session, self.keyspace) is None:
                centers = {}
                rows = list(self.session.execute("SELECT data_center FROM system.local")) + list(
                    self.session.execute("SELECT data_center FROM system.peers")
                )
                for row in rows:
                    centers[row.data_center] = centers.get(row.data_center, 0) + 1
                replication = dict({"class": "NetworkTopologyStrategy"}, **{dc: min(3, n) for dc, n in centers.items()})
                cql.ensure_keyspace(self.session, self.keyspace, "present", replication)
            self.session.execute("CREATE TABLE IF NOT EXISTS %s (name text PRIMARY KEY, record text)" % self.table)
        except Exception as exc:  # ours and the driver's (unavailable, timeouts, refused): no lock table
            raise self._fail(exc) from exc
        self._ready = True

    def read(self):
        if cql.keyspace_replication(self.session, self.keyspace) is None:
            return None  # never made: nobody ever held a lock here
        try:
            row = cql.read_serial(self.session, "SELECT record FROM %s WHERE name = %%s" % self.table, (self.name,))
        except cql.CassandraError as exc:
            if "unconfigured table" in str(exc).lower():
                return None
            raise self._fail(exc) from exc
        if row is None or row.get("record") is None:
            return None
        return self.keep(decode_record(self.name, row["record"]), row["record"])

    def _conditional(self, statement, values):
        self.ensure_table()
        try:
            applied, _row = cql.conditional(self.session, statement, values)
        except cql.CassandraError as exc:
            raise self._fail(exc) from exc
        return applied

    def create(self, record, ttl=None):
        statement = "INSERT INTO %s (name, record) VALUES (%%s, %%s) IF NOT EXISTS" % self.table
        if ttl:
            statement += " USING TTL %d" % int(ttl)
        if not self._conditional(statement, (self.name, encode_record(record))):
            raise LockError(
                "name: the rolling lock %s was taken by another run at the same moment; try again" % self.where
            )

    def replace(self, old, record, ttl=None):
        statement = "UPDATE %s USING TTL %d SET record = %%s WHERE name = %%s IF record = %%s" % (
            self.table,
            int(ttl or 0),
        )
        if not self._conditional(statement, (encode_record(record), self.name, self.text_of(old))):
            raise _raced(self.where)

    take_over = replace

    def remove(self, old):
        statement = "DELETE FROM %s WHERE name = %%s IF record = %%s" % self.table
        if not self._conditional(statement, (self.name, self.text_of(old))):
            raise _raced(self.where)
