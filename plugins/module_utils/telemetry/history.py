# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The history store: workload samples, the configurations each node ran, and small saved state.

Standard library only for SQLite: this file is shipped to managed nodes; the PostgreSQL backend imports psycopg
when it is opened.

``HistoryStore`` is the interface the rest of the collection codes against. ``SQLiteHistory`` implements it in one
SQLite file (the embedded default); ``PostgresHistory`` in a PostgreSQL database that several controllers and AWX
jobs share, with the same tables and migrations (``SQLHistory`` holds the SQL both run). ``open_history`` picks
the backend from a URL without touching the callers; ``PrometheusHistory`` reads the samples from a Prometheus
server (telemetry/prometheus.py) and keeps configurations and state in a SQL history beside it.

Configurations are content-addressed: a configuration's id is the sha256 of its canonical JSON, so the same
settings always get the same id and A -> B -> A shows as two transitions back to the first id. The history
never holds secrets: a configuration (or a sample's ``extra``) with a key that looks like one is refused.
"""

from __future__ import annotations

import abc
import datetime
import hashlib
import json
import math
import os
import re
import sqlite3
import time as _time
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

from ansible_collections.tactician.nosql.plugins.module_utils.core import imports, secrets
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TelemetryError
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import prometheus
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.samples import AGGREGATE_NODE, validate_sample

HISTORY_ENV = "TACTICIAN_HISTORY"
DEFAULT_HISTORY_PATH = os.path.join("~", ".local", "share", "tactician", "history.sqlite3")
DEFAULT_BUSY_TIMEOUT = 30.0

# Keys that look like secrets. Strong words match anywhere in a key, weak ones only as its last word
# (so num_tokens, authenticator and auth_cache_* stay allowed).


class HistoryError(TelemetryError, ValueError):
    """Bad input for, or a problem with, the history store. The message starts with the field at fault."""


class EmptyHistoryError(HistoryError):
    """A history opened read-only that nothing has written yet (no tables: schema version 0)."""


class SecretError(HistoryError, secrets.SecretError):
    """A value refused because its key looks like a secret (the history never stores one)."""


# ---------------------------------------------------------------------------------------------------------------
# Helpers shared by every backend
# ---------------------------------------------------------------------------------------------------------------


def default_history_path(environ=None):
    """$TACTICIAN_HISTORY when set, else ~/.local/share/tactician/history.sqlite3 (user expanded)."""
    environ = os.environ if environ is None else environ
    return os.path.expanduser(environ.get(HISTORY_ENV) or DEFAULT_HISTORY_PATH)


def canonical_json(value):
    """The one JSON text of a value: sorted keys, no spaces, no NaN."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise HistoryError("config: not JSON-serialisable with string keys (%s)" % exc) from None


def config_id(config):
    """Content address of a configuration: sha256 hex of its canonical JSON."""
    return hashlib.sha256(canonical_json(config).encode("utf-8")).hexdigest()


def parse_time(value, field="time"):
    """Unix seconds from a number, a numeric string or an ISO 8601 date/time (no zone = UTC); None stays None."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise HistoryError("%s: %r is not a time; give unix seconds or ISO 8601" % (field, value))
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            number = float(text)
        except ValueError:
            if text.endswith(("Z", "z")):
                text = text[:-1] + "+00:00"
            try:
                moment = datetime.datetime.fromisoformat(text)
            except ValueError:
                raise HistoryError(
                    "%s: %r is not unix seconds or ISO 8601 (e.g. 2026-05-09T10:00:00Z)" % (field, value)
                ) from None
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=datetime.UTC)
            number = moment.timestamp()
    else:
        raise HistoryError("%s: %r is not a time; give unix seconds or ISO 8601" % (field, value))
    if not math.isfinite(number):
        raise HistoryError("%s: %r is not a finite time" % (field, value))
    return number


def _text(field, value):
    if not isinstance(value, str) or not value:
        raise HistoryError("%s: %r is not a non-empty string" % (field, value))
    return value


def _nodes(node_or_set):
    if isinstance(node_or_set, str):
        return [_text("node_or_set", node_or_set)]
    if isinstance(node_or_set, (list, tuple)) and node_or_set:
        return [_text("node_or_set[%d]" % index, node) for index, node in enumerate(node_or_set)]
    raise HistoryError(
        "node_or_set: %r is not a node (address:port, a set name, or %r) or a non-empty list of them"
        % (node_or_set, AGGREGATE_NODE)
    )


def _last(last):
    if last is None:
        return None
    if not isinstance(last, int) or isinstance(last, bool) or last < 0:
        raise HistoryError("last: %r is not a whole number >= 0 (0 means all)" % (last,))
    return last or None


# ---------------------------------------------------------------------------------------------------------------
# The interface
# ---------------------------------------------------------------------------------------------------------------


class HistoryStore(abc.ABC):
    """Where samples, configurations and saved state live between runs.

    Times are unix seconds (float). Lists come oldest first. A configuration entry for node ``cluster``
    applies to every node of the cluster. Every write is all or nothing.
    """

    # -- samples ---------------------------------------------------------------------------------------------

    def add_sample(self, sample):
        """Validate and store one workload sample; True when written, False when the very same sample was
        already there (a different sample for the same store, cluster, node, time and window is an error)."""
        return self.add_samples([sample]) == 1

    @abc.abstractmethod
    def add_samples(self, samples):
        """Validate and store samples in one transaction; returns how many were new. With several samples an
        error names the one at fault first (samples[2].throughput: ...)."""

    @abc.abstractmethod
    def samples(self, store=None, cluster=None, node=None, since=None, until=None, last=None, window_s=None):
        """Samples matching every filter given (since/until inclusive), oldest first; last=N keeps the newest N."""

    # -- configurations --------------------------------------------------------------------------------------

    @abc.abstractmethod
    def record_config(self, cluster, node_or_set, config, time=None, source="observed", note=None):
        """Log that node_or_set (a node, a set name, ``cluster``, or a list of nodes) runs config from time on.
        Refuses keys that look like secrets. Returns the config_id."""

    @abc.abstractmethod
    def get_config(self, config_id):
        """The configuration dict stored under config_id, or None."""

    @abc.abstractmethod
    def config_at(self, cluster, node, time=None):
        """The configuration in force on node at time (default now): {time, cluster, node, config_id, config,
        source, note} from the newest entry for the node or for the whole cluster, or None."""

    @abc.abstractmethod
    def config_log(self, cluster, node=None, since=None, until=None, last=None):
        """The configuration entries as logged: {time, cluster, node, config_id, source, note}, oldest first."""

    @abc.abstractmethod
    def transitions(self, cluster, since=None, until=None, node=None, include_initial=False):
        """Changes of configuration: {time, node, from_config_id, to_config_id}, oldest first. An entry that
        repeats the node's previous configuration is no transition; a node's first entry counts only with
        include_initial (from_config_id None)."""

    # -- saved state -----------------------------------------------------------------------------------------

    @abc.abstractmethod
    def save_state(self, key, value):
        """Keep a JSON-serialisable dict under key (e.g. a RateTracker.to_dict()), replacing what was there."""

    @abc.abstractmethod
    def load_state(self, key):
        """The dict saved under key, or None."""

    @abc.abstractmethod
    def states(self, prefix):
        """[(key, dict)] of the state saved under keys that start with prefix, by key."""

    @abc.abstractmethod
    def close(self):
        """Release the connection."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


# ---------------------------------------------------------------------------------------------------------------
# SQLite
# ---------------------------------------------------------------------------------------------------------------

# Each migration brings the file from the version before it to its own. Append, never edit.
MIGRATIONS = (
    (
        1,
        (
            """CREATE TABLE samples (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                schema TEXT NOT NULL,
                store TEXT NOT NULL,
                cluster TEXT NOT NULL,
                node TEXT NOT NULL,
                time REAL NOT NULL,
                window_s REAL NOT NULL,
                config_id TEXT,
                json TEXT NOT NULL,
                UNIQUE (store, cluster, node, time, window_s)
            )""",
            "CREATE INDEX samples_cluster_node_time ON samples (cluster, node, time)",
            "CREATE INDEX samples_cluster_time ON samples (cluster, time)",
            "CREATE INDEX samples_store_time ON samples (store, time)",
            """CREATE TABLE configurations (
                id TEXT PRIMARY KEY,
                json TEXT NOT NULL,
                first_seen REAL NOT NULL
            )""",
            """CREATE TABLE config_log (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                time REAL NOT NULL,
                cluster TEXT NOT NULL,
                node TEXT NOT NULL,
                config_id TEXT NOT NULL REFERENCES configurations (id),
                source TEXT NOT NULL,
                note TEXT
            )""",
            "CREATE INDEX config_log_cluster_node_time ON config_log (cluster, node, time)",
            """CREATE TABLE state (
                key TEXT PRIMARY KEY,
                json TEXT NOT NULL,
                updated REAL NOT NULL
            )""",
        ),
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]


class SQLHistory(HistoryStore):
    """The history in SQL tables: what SQLite and PostgreSQL run alike. A backend gives the connection (``_db``,
    whose ``execute`` returns a cursor, in autocommit), its placeholder (``_sql``), how a write transaction starts
    (``_begin``), its schema version and migrations; queries here are written with ``?`` placeholders."""

    name = "history"
    readonly = False
    _db = None

    def _sql(self, query):
        return query

    def _execute(self, query, params=()):
        return self._db.execute(self._sql(query), params)

    def _begin(self):
        self._execute("BEGIN")

    def _transaction(self, work):
        """Run work() inside one transaction: all of it or nothing."""
        self._begin()
        try:
            result = work()
        except BaseException:
            self._execute("ROLLBACK")
            raise
        self._execute("COMMIT")
        return result

    def _write(self, work):
        """Run work() inside one write transaction; a store opened read-only refuses."""
        if self.readonly:
            raise HistoryError("path: %s was opened read-only" % self.name)
        return self._transaction(work)

    def _version(self):
        raise NotImplementedError

    def _check_version(self):
        version = self._version()
        if version > SCHEMA_VERSION:
            raise HistoryError(
                "schema_version: %s is at version %d; this collection knows up to %d, upgrade it"
                % (self.name, version, SCHEMA_VERSION)
            )
        if version == 0:
            raise EmptyHistoryError(
                "schema_version: %s holds no history yet (nothing has written to it); open it once for writing"
                % self.name
            )
        if version < SCHEMA_VERSION:
            raise HistoryError(
                "schema_version: %s is at version %d and needs version %d; open it once for writing to migrate"
                % (self.name, version, SCHEMA_VERSION)
            )

    def _apply_migrations(self, migrations):
        """Inside the caller's transaction: the schema_version table, then every migration past its version."""
        self._execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied %s NOT NULL)" % self._float
        )
        version = self._version()
        if version > SCHEMA_VERSION:
            raise HistoryError(
                "schema_version: %s is at version %d; this collection knows up to %d, upgrade it"
                % (self.name, version, SCHEMA_VERSION)
            )
        for target, statements in migrations:
            if target <= version:
                continue
            for statement in statements:
                self._execute(statement)
            self._execute("INSERT INTO schema_version (version, applied) VALUES (?, ?)", (target, _time.time()))

    @property
    def schema_version(self):
        """The schema version of the open history."""
        return self._version()

    def close(self):
        if self._db is not None:
            self._db.close()
            self._db = None

    # -- samples ---------------------------------------------------------------------------------------------

    def add_samples(self, samples):
        samples = list(samples)
        rows = []
        for index, sample in enumerate(samples):
            prefix = "samples[%d]." % index if len(samples) > 1 else ""
            try:
                validate_sample(sample)
            except ValueError as exc:
                raise type(exc)(prefix + str(exc)) from None
            secrets.check_no_secrets(sample.get("extra", {}), prefix + "extra", SecretError)
            rows.append(
                (
                    sample["schema"],
                    sample["store"],
                    sample["cluster"],
                    sample["node"],
                    float(sample["time"]),
                    float(sample["window_s"]),
                    sample.get("config_id"),
                    canonical_json(sample),
                )
            )

        def work():
            added = 0
            for index, row in enumerate(rows):
                cursor = self._execute(
                    "INSERT INTO samples (schema, store, cluster, node, time, window_s, config_id, json)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (store, cluster, node, time, window_s) DO NOTHING",
                    row,
                )
                if cursor.rowcount == 1:
                    added += 1
                    continue
                existing = self._execute(
                    "SELECT json FROM samples WHERE store = ? AND cluster = ? AND node = ? AND time = ?"
                    " AND window_s = ?",
                    row[1:6],
                ).fetchone()
                if existing[0] != row[7]:
                    raise HistoryError(
                        "%stime: a different sample for %s %s %s at %r (window %gs) is already stored"
                        % ("samples[%d]." % index if len(rows) > 1 else "", row[1], row[2], row[3], row[4], row[5])
                    )
            return added

        return self._write(work)

    def samples(self, store=None, cluster=None, node=None, since=None, until=None, last=None, window_s=None):
        where, params = [], []
        for column, value in (("store", store), ("cluster", cluster), ("node", node)):
            if value is not None:
                where.append("%s = ?" % column)
                params.append(_text(column, value))
        if window_s is not None:
            if isinstance(window_s, bool) or not isinstance(window_s, (int, float)):
                raise HistoryError("window_s: %r is not a number of seconds" % (window_s,))
            where.append("window_s = ?")
            params.append(float(window_s))
        if since is not None:
            where.append("time >= ?")
            params.append(parse_time(since, "since"))
        if until is not None:
            where.append("time <= ?")
            params.append(parse_time(until, "until"))
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        last = _last(last)
        if last:
            query = (
                "SELECT json FROM (SELECT id, time, json FROM samples%s ORDER BY time DESC, id DESC LIMIT ?) AS recent"
                " ORDER BY time, id" % clause
            )
            params.append(last)
        else:
            query = "SELECT json FROM samples%s ORDER BY time, id" % clause
        return [json.loads(row[0]) for row in self._execute(query, params)]

    # -- configurations --------------------------------------------------------------------------------------

    def record_config(self, cluster, node_or_set, config, time=None, source="observed", note=None):
        _text("cluster", cluster)
        nodes = _nodes(node_or_set)
        if not isinstance(config, dict):
            raise HistoryError("config: %r is not a mapping of setting to value" % (config,))
        secrets.check_no_secrets(config, "config", SecretError)
        text = canonical_json(config)
        ident = hashlib.sha256(text.encode("utf-8")).hexdigest()
        when = _time.time() if time is None else parse_time(time)
        _text("source", source)
        if note is not None and not isinstance(note, str):
            raise HistoryError("note: %r is not a string" % (note,))

        def work():
            self._execute(
                "INSERT INTO configurations (id, json, first_seen) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
                (ident, text, when),
            )
            for node in nodes:
                self._execute(
                    "INSERT INTO config_log (time, cluster, node, config_id, source, note) VALUES (?, ?, ?, ?, ?, ?)",
                    (when, cluster, node, ident, source, note),
                )
            return ident

        return self._write(work)

    def get_config(self, config_id):
        row = self._execute("SELECT json FROM configurations WHERE id = ?", (config_id,)).fetchone()
        return json.loads(row[0]) if row else None

    _LOG_COLUMNS = ("time", "cluster", "node", "config_id", "source", "note")

    def config_at(self, cluster, node, time=None):
        when = _time.time() if time is None else parse_time(time)
        row = self._execute(
            "SELECT l.time, l.cluster, l.node, l.config_id, l.source, l.note, c.json FROM config_log l"
            " JOIN configurations c ON c.id = l.config_id"
            " WHERE l.cluster = ? AND l.node IN (?, ?) AND l.time <= ? ORDER BY l.time DESC, l.seq DESC LIMIT 1",
            (_text("cluster", cluster), _text("node", node), AGGREGATE_NODE, when),
        ).fetchone()
        if not row:
            return None
        entry = dict(zip(self._LOG_COLUMNS, row[:6], strict=True))
        entry["config"] = json.loads(row[6])
        return entry

    def config_log(self, cluster, node=None, since=None, until=None, last=None):
        where, params = ["cluster = ?"], [_text("cluster", cluster)]
        if node is not None:
            where.append("node = ?")
            params.append(_text("node", node))
        if since is not None:
            where.append("time >= ?")
            params.append(parse_time(since, "since"))
        if until is not None:
            where.append("time <= ?")
            params.append(parse_time(until, "until"))
        query = "SELECT seq, %s FROM config_log WHERE %s" % (", ".join(self._LOG_COLUMNS), " AND ".join(where))
        last = _last(last)
        if last:
            query = "SELECT * FROM (%s ORDER BY time DESC, seq DESC LIMIT ?) AS recent ORDER BY time, seq" % query
            params.append(last)
        else:
            query += " ORDER BY time, seq"
        return [dict(zip(self._LOG_COLUMNS, row[1:], strict=True)) for row in self._execute(query, params)]

    def transitions(self, cluster, since=None, until=None, node=None, include_initial=False):
        since = parse_time(since, "since")
        entries = self.config_log(cluster, node=node, until=until)
        previous = {}
        changes = []
        for entry in entries:
            before = previous.get(entry["node"])
            previous[entry["node"]] = entry["config_id"]
            if before == entry["config_id"] or (before is None and not include_initial):
                continue
            if since is not None and entry["time"] < since:
                continue
            changes.append(
                {
                    "time": entry["time"],
                    "node": entry["node"],
                    "from_config_id": before,
                    "to_config_id": entry["config_id"],
                }
            )
        return changes

    # -- saved state -----------------------------------------------------------------------------------------

    def save_state(self, key, value):
        _text("key", key)
        if not isinstance(value, dict):
            raise HistoryError("value: %r is not a mapping" % (value,))
        try:
            text = json.dumps(value, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise HistoryError("value: not JSON-serialisable (%s)" % exc) from None

        def work():
            self._execute(
                "INSERT INTO state (key, json, updated) VALUES (?, ?, ?)"
                " ON CONFLICT (key) DO UPDATE SET json = excluded.json, updated = excluded.updated",
                (key, text, _time.time()),
            )

        self._write(work)

    def load_state(self, key):
        row = self._execute("SELECT json FROM state WHERE key = ?", (_text("key", key),)).fetchone()
        return json.loads(row[0]) if row else None

    def states(self, prefix):
        _text("prefix", prefix)
        rows = self._execute(
            "SELECT key, json FROM state WHERE substr(key, 1, CAST(? AS INTEGER)) = ? ORDER BY key",
            (len(prefix), prefix),
        ).fetchall()
        return [(key, json.loads(text)) for key, text in rows]


class SQLiteHistory(SQLHistory):
    """The history in one SQLite file (WAL mode, busy timeout, so several processes can write at once).

    create=False refuses a missing file instead of creating it; readonly=True opens it for reading only
    (no migration: an older file must be opened once for writing first)."""

    _float = "REAL"

    def __init__(self, path, create=True, readonly=False, timeout=DEFAULT_BUSY_TIMEOUT):
        self.path = os.path.expanduser(_text("path", path))
        self.name = self.path
        exists = os.path.exists(self.path)
        if not exists and (readonly or not create):
            raise HistoryError("path: history file %s does not exist" % self.path)
        if not exists:
            directory = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(directory, mode=0o700, exist_ok=True)
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        mode = "ro" if readonly else "rw"
        uri = "file:%s?mode=%s" % (quote(os.path.abspath(self.path)), mode)
        try:
            self._db = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise HistoryError("path: cannot open history file %s (%s)" % (self.path, exc)) from None
        self.readonly = readonly
        try:
            self._db.execute("PRAGMA busy_timeout = %d" % int(timeout * 1000))
            if readonly:
                self._check_version()
            else:
                self._db.execute("PRAGMA journal_mode = WAL")
                self._db.execute("PRAGMA synchronous = NORMAL")
                self._migrate()
            self._db.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise HistoryError("path: %s is not a usable history file (%s)" % (self.path, exc)) from None
        except HistoryError:
            self._db.close()
            raise

    def _version(self):
        table = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
        ).fetchone()
        if not table:
            return 0
        return self._db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0]

    def _migrate(self):
        self._transaction(lambda: self._apply_migrations(MIGRATIONS))

    def _begin(self):
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise HistoryError("path: %s stayed locked by another writer (%s)" % (self.path, exc)) from None


# ---------------------------------------------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------------------------------------------


def _pg_ddl(statement):
    """A statement of MIGRATIONS in PostgreSQL's types: the same tables, made from the one list."""
    statement = re.sub(r"\bINTEGER PRIMARY KEY AUTOINCREMENT\b", "BIGSERIAL PRIMARY KEY", statement)
    return re.sub(r"\bREAL\b", "DOUBLE PRECISION", statement)


PG_MIGRATIONS = tuple((version, tuple(_pg_ddl(s) for s in statements)) for version, statements in MIGRATIONS)

# Taken by every writer that migrates, so two controllers opening a new database at once migrate it once.
_PG_MIGRATION_LOCK = 0x7461637469636E  # "tactician"


def _pg_url(url):
    """The URL as libpq takes it, refused when it carries a password (which would reach module arguments, logs
    and process lists): the password comes from libpq's password file (~/.pgpass, PGPASSFILE) or PGPASSWORD."""
    parts = urlsplit(url)
    if parts.password is not None:
        raise HistoryError(
            "history: %s://%s@... carries a password; put it in a libpq password file (~/.pgpass or PGPASSFILE) "
            "or PGPASSWORD instead" % (parts.scheme, parts.username or "")
        )
    if any(key.lower() == "password" for key, _value in parse_qsl(parts.query)):
        raise HistoryError("history: the URL's query carries password=; use a libpq password file or PGPASSWORD")
    if not parts.hostname and not parts.path.strip("/"):
        raise HistoryError("history: %r names no server nor database (postgresql://user@host:5432/db)" % url)
    return urlunsplit(("postgresql",) + tuple(parts)[1:])


class PostgresHistory(SQLHistory):
    """The history in a PostgreSQL database, which several controllers (and every AWX job) share: the same tables
    and migrations as the SQLite file. The URL is libpq's (postgresql://user@host:port/database?sslmode=verify-full
    &sslrootcert=...&sslcert=...&sslkey=...), without a password. create=False refuses a database whose tables
    were never made; readonly=True reads only (every transaction read-only, no migration)."""

    _float = "DOUBLE PRECISION"

    def __init__(self, url, create=True, readonly=False, timeout=DEFAULT_BUSY_TIMEOUT):
        conninfo = _pg_url(_text("history", url))
        parts = urlsplit(conninfo)
        self.name = "postgresql://%s%s%s" % (
            (parts.username + "@") if parts.username else "",
            parts.netloc.rsplit("@", 1)[-1],
            parts.path,
        )
        psycopg = imports.require("psycopg", HistoryError, "history: a PostgreSQL history")
        self._errors = psycopg.Error
        try:
            self._db = psycopg.connect(conninfo, autocommit=True, connect_timeout=max(1, int(timeout)))
        except psycopg.Error as exc:
            raise HistoryError("history: cannot connect to %s (%s)" % (self.name, str(exc).strip())) from None
        self.readonly = readonly
        try:
            if readonly:
                self._execute("SET default_transaction_read_only = on")
                self._check_version()
            elif not create and self._version() == 0:
                raise HistoryError("history: %s holds no history yet (create it by writing to it once)" % self.name)
            else:
                self._migrate()
        except psycopg.Error as exc:
            self.close()
            raise HistoryError("history: %s is not a usable history (%s)" % (self.name, str(exc).strip())) from None
        except HistoryError:
            self.close()
            raise

    def _sql(self, query):
        return query.replace("?", "%s")

    def _version(self):
        if self._execute("SELECT to_regclass('schema_version')").fetchone()[0] is None:
            return 0
        return self._execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0]

    def _migrate(self):
        def locked():
            self._execute("SELECT pg_advisory_xact_lock(?)", (_PG_MIGRATION_LOCK,))
            self._apply_migrations(PG_MIGRATIONS)

        self._transaction(locked)

    def _write(self, work):
        try:
            return super()._write(work)
        except self._errors as exc:
            raise HistoryError("history: writing to %s failed (%s)" % (self.name, str(exc).strip())) from None


# ---------------------------------------------------------------------------------------------------------------
# Opening by URL
# ---------------------------------------------------------------------------------------------------------------

# ---------------------------------------------------------------------------------------------------------------
# Prometheus: samples from a Prometheus server, the rest in a SQL history beside it
# ---------------------------------------------------------------------------------------------------------------


class _NoRecords:
    """The records of a Prometheus history whose file does not exist yet, opened read-only: empty; a write says why."""

    def __init__(self, path):
        self.path = path

    def _refuse(self, *args, **kwargs):
        raise HistoryError("path: the records history %s does not exist and was opened read-only" % self.path)

    add_samples = record_config = save_state = _refuse

    def samples(self, *args, **kwargs):
        return []

    def get_config(self, config_id):
        return None

    def config_at(self, *args, **kwargs):
        return None

    def load_state(self, key):
        return None

    def config_log(self, *args, **kwargs):
        return []

    def transitions(self, *args, **kwargs):
        return []

    def states(self, prefix):
        return []

    def close(self):
        pass


class PrometheusHistory(HistoryStore):
    """Samples read from a Prometheus server (telemetry/prometheus.py), at every step of ``step`` seconds over any
    window; configurations, transitions, saved state and the samples observe writes go to ``records``, a SQL
    history (a path or URL; the default file when not given).

    samples() needs the cluster (the series are selected by it); a ``store`` left out is read for each store the
    reader knows. A ``window_s`` given is the step. ``last`` without ``since`` reads the newest steps up to now."""

    def __init__(self, url, create=True, readonly=False, timeout=DEFAULT_BUSY_TIMEOUT, client=None, clock=_time.time):
        try:
            _base, options = prometheus.parse_url(url, "path")
            self.client = client or prometheus.client_from_url(url, "path")
        except prometheus.PrometheusError as exc:
            raise HistoryError(str(exc)) from None
        self.url = url
        self.clock = clock
        self.step = options.get("step", prometheus.DEFAULT_STEP_S)
        self.rate_window = options.get("rate_window")
        records = options.get("records")
        if records and records.split("://", 1)[0].split("+", 1)[0].lower() == "prometheus":
            raise HistoryError(
                "path: option records=%r must be a SQL history (a file path, sqlite:// or postgresql://)" % records
            )
        self._records_at = (records or None, dict(create=create, readonly=readonly, timeout=timeout))
        self._records = None

    @property
    def records(self):
        """The SQL history beside the samples, opened when first needed (a reader of samples alone needs none). A
        records file that does not exist yet, opened read-only, reads as empty (nothing was recorded yet)."""
        if self._records is None:
            where, options = self._records_at
            local = local_file(where) if where else default_history_path()
            if local is not None and not os.path.exists(local) and (options["readonly"] or not options["create"]):
                self._records = _NoRecords(local)
            else:
                self._records = open_history(where, **options)
        return self._records

    # samples: read from Prometheus; those written go to the records
    def add_samples(self, samples):
        return self.records.add_samples(samples)

    def samples(self, store=None, cluster=None, node=None, since=None, until=None, last=None, window_s=None):
        if cluster is None:
            raise HistoryError("cluster: a Prometheus history reads one cluster at a time; give its name")
        _text("cluster", cluster)
        step = self.step
        if window_s is not None:
            if isinstance(window_s, bool) or not isinstance(window_s, (int, float)) or window_s <= 0:
                raise HistoryError("window_s: %r is not a number of seconds above 0" % (window_s,))
            step = float(window_s)
        until = parse_time(until, "until") if until is not None else self.clock()
        last = _last(last)
        if since is not None:
            since = parse_time(since, "since")
        elif last:
            since = until - (last + 3) * step  # a step or two at the edges may not be scraped yet
        else:
            since = until - prometheus.DEFAULT_SPAN_S
        stores = [store] if store is not None else list(prometheus.STORES)
        reader = prometheus.PrometheusSamples(self.client, step, self.rate_window, clock=self.clock)
        found = []
        try:
            for name in stores:
                found.extend(reader.read(name, cluster, since, until))
        except prometheus.PrometheusError as exc:
            raise HistoryError("path: %s" % exc) from None
        if node is not None:
            found = [s for s in found if s["node"] == node]
        found.sort(key=lambda s: s["time"])
        return found[-last:] if last else found

    def window(self, store, cluster, duration, end=None):
        """observe's result for the window of duration seconds that ends at end (default now), read from
        Prometheus: {"samples": [per node], "aggregate": the cluster's sample}. HistoryError when no node of the
        cluster has a series in that window."""
        _text("cluster", cluster)
        if isinstance(duration, bool) or not isinstance(duration, (int, float)) or duration <= 0:
            raise HistoryError("duration: %r is not a number of seconds above 0" % (duration,))
        end = self.clock() if end is None else parse_time(end, "end")
        try:
            # A rate needs two scrapes in its window: a window shorter than two scrape intervals (and a bit) is
            # read over that much instead, and the samples say so (extra.window_s).
            interval = self.client.scrape_interval(cluster) or 0.0
            rate_window = max(self.rate_window or duration, duration, 2.0 * interval + 1.0 if interval else 0.0)
            reader = prometheus.PrometheusSamples(self.client, duration, rate_window)
            found = reader.read(store, cluster, end - duration, end, exact=True)
        except prometheus.PrometheusError as exc:
            raise HistoryError("path: %s" % exc) from None
        if not found:
            raise HistoryError(
                "cluster: %s holds no %s series of cluster %r over the %g s up to %s; check that its scrape targets"
                " are up and carry the label cluster=%r (docs/monitoring.md)"
                % (
                    self.client.base_url,
                    store,
                    cluster,
                    duration,
                    _time.strftime("%H:%M:%S", _time.gmtime(end)),
                    cluster,
                )
            )
        return {"samples": [s for s in found if s["node"] != AGGREGATE_NODE], "aggregate": found[-1]}

    # everything else: the records
    def record_config(self, cluster, node_or_set, config, time=None, source="observed", note=None):
        return self.records.record_config(cluster, node_or_set, config, time=time, source=source, note=note)

    def get_config(self, config_id):
        return self.records.get_config(config_id)

    def config_at(self, cluster, node, time=None):
        return self.records.config_at(cluster, node, time=time)

    def config_log(self, cluster, node=None, since=None, until=None, last=None):
        return self.records.config_log(cluster, node=node, since=since, until=until, last=last)

    def transitions(self, cluster, since=None, until=None, node=None, include_initial=False):
        return self.records.transitions(cluster, since=since, until=until, node=node, include_initial=include_initial)

    def save_state(self, key, value):
        return self.records.save_state(key, value)

    def load_state(self, key):
        return self.records.load_state(key)

    def states(self, prefix):
        return self.records.states(prefix)

    def close(self):
        if self._records is not None:
            self._records.close()


def local_file(url_or_path):
    """The file a path or sqlite:// URL names (user expanded), or None for a history on a server."""
    if "://" not in url_or_path:
        return os.path.expanduser(url_or_path)
    if url_or_path.startswith("sqlite://"):
        return "/" + url_or_path[len("sqlite://") :].lstrip("/")
    return None


SHARED_SCHEMES = ("postgresql", "postgres")
"""The histories several controllers reach (a database server), as against a file on one machine."""


def is_shared(url_or_path):
    """Whether the history at url_or_path is one several controllers share (a PostgreSQL database, whatever the
    driver suffix: postgresql+psycopg://...), rather than a file of one machine or a Prometheus server."""
    if not isinstance(url_or_path, str):
        return False
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", url_or_path)
    return bool(match) and match.group(1).lower().split("+", 1)[0] in SHARED_SCHEMES


def open_history(url_or_path=None, **options):
    """A HistoryStore for a URL or a path: ``sqlite:///absolute/path``, a bare path (``~`` expanded), None for the
    default path, or ``postgresql://user@host:port/database?...`` (libpq's URL, no password in it).
    or ``prometheus://host:port?records=...`` (``prometheus+https://`` with TLS): samples from a Prometheus server,
    the rest in the ``records`` history (PrometheusHistory). options go to the backend (create, readonly,
    timeout)."""
    if url_or_path is None:
        return SQLiteHistory(default_history_path(), **options)
    _text("path", url_or_path)
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", url_or_path)
    if not match:
        return SQLiteHistory(url_or_path, **options)
    scheme, rest = match.group(1).lower(), match.group(2)
    base = scheme.split("+", 1)[0]
    if base == "sqlite":
        if not rest.startswith("/"):
            raise HistoryError("path: %r is not sqlite:///absolute/path" % (url_or_path,))
        return SQLiteHistory(re.sub(r"^/+", "/", rest), **options)
    if base in SHARED_SCHEMES:
        return PostgresHistory(url_or_path, **options)
    if base == "prometheus" and scheme in ("prometheus", "prometheus+http", "prometheus+https"):
        return PrometheusHistory(url_or_path, **options)
    raise HistoryError(
        "path: scheme %r is not supported; allowed: sqlite:///path, a file path, postgresql://user@host/database,"
        " prometheus://host:port (prometheus+https:// with TLS)" % scheme
    )
