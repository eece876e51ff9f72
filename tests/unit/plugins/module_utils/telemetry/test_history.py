from __future__ import annotations

import multiprocessing
import os
import sqlite3

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.core.secrets import looks_like_secret
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.history import (
    HISTORY_ENV,
    SCHEMA_VERSION,
    HistoryError,
    HistoryStore,
    SecretError,
    SQLiteHistory,
    config_id,
    default_history_path,
    open_history,
    parse_time,
)
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.rates import RateTracker
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.samples import SampleError, new_sample

A = {"concurrent_reads": 32, "key_cache_size": "100MiB", "compaction": {"class": "LeveledCompactionStrategy"}}
B = {"concurrent_reads": 64, "key_cache_size": "100MiB", "compaction": {"class": "LeveledCompactionStrategy"}}


def sample(time, node="127.0.0.1:9042", cluster="lab", store="cassandra", read=100.0, window_s=30):
    return new_sample(store, cluster, node, time, window_s, {"read": read, "update": 50.0})


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "history.sqlite3")


@pytest.fixture
def history(path):
    with SQLiteHistory(path) as store:
        yield store


def count(path, table):
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM %s" % table).fetchone()[0]


# ---------------------------------------------------------------------------------------------------------------
# Samples
# ---------------------------------------------------------------------------------------------------------------


def test_add_and_read_back_with_filters(history):
    for time in range(100, 160, 10):
        history.add_sample(sample(time, read=float(time)))
        history.add_sample(sample(time, node="127.0.0.2:9042"))
    history.add_sample(sample(105, store="redis", cluster="cache", node="127.0.0.1:6381"))
    history.add_sample(sample(155, node="cluster", read=1.0))

    everything = history.samples()
    assert len(everything) == 14
    assert [s["time"] for s in everything] == sorted(s["time"] for s in everything)

    one_node = history.samples(cluster="lab", node="127.0.0.1:9042")
    assert [s["ops_per_s"]["read"] for s in one_node] == [100.0, 110.0, 120.0, 130.0, 140.0, 150.0]
    assert [s["time"] for s in history.samples(store="redis")] == [105.0]
    assert [s["node"] for s in history.samples(cluster="lab", node="cluster")] == ["cluster"]
    assert [s["time"] for s in history.samples(node="127.0.0.1:9042", since=120, until=140)] == [120.0, 130.0, 140.0]

    last = history.samples(cluster="lab", node="127.0.0.1:9042", last=2)
    assert [s["time"] for s in last] == [140.0, 150.0]  # the newest two, oldest first
    assert len(history.samples(cluster="lab", last=0)) == 13
    assert history.samples(cluster="nowhere") == []


def test_since_until_take_iso_8601_and_window_filter(history):
    base = parse_time("2026-05-09T10:00:00Z")
    for offset in (0, 30, 60):
        history.add_sample(sample(base + offset))
        history.add_sample(sample(base + offset, window_s=5))
    assert len(history.samples(since="2026-05-09T10:00:30Z")) == 4
    assert len(history.samples(since="2026-05-09T12:00:30+02:00", window_s=30)) == 2
    assert [s["window_s"] for s in history.samples(until="2026-05-09T10:00:00", window_s=5)] == [5.0]
    with pytest.raises(HistoryError, match=r"^since: 'yesterday' is not unix seconds or ISO 8601"):
        history.samples(since="yesterday")
    with pytest.raises(HistoryError, match=r"^last: -1 is not a whole number"):
        history.samples(last=-1)


def test_the_same_sample_twice_is_stored_once(history, path):
    assert history.add_sample(sample(100)) is True
    assert history.add_sample(sample(100)) is False
    assert count(path, "samples") == 1
    with pytest.raises(HistoryError, match=r"^time: a different sample for cassandra lab 127.0.0.1:9042 at 100.0"):
        history.add_sample(sample(100, read=5.0))
    assert history.samples()[0]["ops_per_s"]["read"] == 100.0


def test_invalid_sample_writes_nothing(history, path):
    bad = sample(110)
    bad["throughput"] = 1.0
    with pytest.raises(SampleError, match=r"^samples\[1\].throughput: 1.0 is not the sum of ops_per_s"):
        history.add_samples([sample(100), bad, sample(120)])
    with pytest.raises(SampleError, match=r"^store: 'scylla' is not known"):
        history.add_sample(dict(sample(100), store="scylla"))
    assert history.samples() == []
    assert count(path, "samples") == 0


def test_a_failure_inside_the_transaction_rolls_back(history, path):
    history.add_sample(sample(100))
    with pytest.raises(HistoryError, match=r"^samples\[2\].time: a different sample"):
        history.add_samples([sample(110), sample(120), sample(100, read=1.0)])
    assert [s["time"] for s in history.samples()] == [100.0]


def test_secrets_in_sample_extra_are_refused(history, path):
    leaky = new_sample("redis", "cache", "127.0.0.1:6381", 1, 30, {"read": 1.0}, extra={"conn": {"password": "x"}})
    with pytest.raises(SecretError, match=r"^extra.conn.password: looks like a secret"):
        history.add_sample(leaky)
    assert count(path, "samples") == 0


def test_history_persists_across_reopening(path):
    with SQLiteHistory(path) as first:
        first.add_sample(sample(100))
        first.record_config("lab", "127.0.0.1:9042", A, time=90, source="observed")
        first.save_state("tracker", {"n": 1})
    with SQLiteHistory(path) as second:
        assert second.schema_version == SCHEMA_VERSION == 1
        assert [s["time"] for s in second.samples()] == [100.0]
        assert second.config_at("lab", "127.0.0.1:9042", 95)["config"] == A
        assert second.load_state("tracker") == {"n": 1}
        second.add_sample(sample(130))
    with open_history("sqlite://" + path) as third:
        assert len(third.samples()) == 2


def test_sqlite_schema(path):
    SQLiteHistory(path).close()
    with sqlite3.connect(path) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        indexes = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("SELECT version FROM schema_version").fetchall() == [(1,)]
        columns = [row[1] for row in db.execute("PRAGMA table_info(samples)")]
    assert {"schema_version", "samples", "configurations", "config_log", "state"} <= tables
    assert {"samples_cluster_node_time", "samples_cluster_time", "samples_store_time"} <= indexes
    assert columns == ["id", "schema", "store", "cluster", "node", "time", "window_s", "config_id", "json"]
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"


def test_newer_schema_is_refused(path):
    SQLiteHistory(path).close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO schema_version (version, applied) VALUES (99, 0)")
    with pytest.raises(HistoryError, match=r"^schema_version: .* is at version 99; this collection knows up to 1"):
        SQLiteHistory(path)
    with pytest.raises(HistoryError, match=r"^schema_version: .* is at version 99"):
        SQLiteHistory(path, readonly=True)


def test_not_a_database(tmp_path):
    junk = tmp_path / "junk.sqlite3"
    junk.write_text("this is not sqlite" * 100)
    with pytest.raises(HistoryError, match=r"^path: .*junk.sqlite3 is not a usable history file"):
        SQLiteHistory(str(junk))


def test_missing_file_is_not_created_when_asked(path):
    with pytest.raises(HistoryError, match=r"^path: history file .*history.sqlite3 does not exist"):
        SQLiteHistory(path, create=False)
    with pytest.raises(HistoryError, match=r"does not exist"):
        SQLiteHistory(path, readonly=True)
    assert not os.path.exists(path)


def test_readonly_reads_and_refuses_writes(path):
    with SQLiteHistory(path) as history:
        history.add_sample(sample(100))
    with SQLiteHistory(path, readonly=True) as readonly:
        assert len(readonly.samples()) == 1
        with pytest.raises(HistoryError, match=r"^path: .* was opened read-only"):
            readonly.add_sample(sample(110))


def _writer(path, node, rows, barrier):
    barrier.wait()
    with SQLiteHistory(path, timeout=20) as history:
        for index in range(rows):
            history.add_sample(sample(1000 + index, node=node))
            if index % 10 == 0:
                history.record_config("lab", node, {"batch": index // 10}, time=1000 + index)


def test_two_processes_write_without_losing_rows(path):
    SQLiteHistory(path).close()
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(2)
    workers = [
        context.Process(target=_writer, args=(path, node, 150, barrier))
        for node in ("127.0.0.1:9042", "127.0.0.2:9042")
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert [worker.exitcode for worker in workers] == [0, 0]
    with SQLiteHistory(path) as history:
        assert len(history.samples()) == 300
        assert len(history.samples(node="127.0.0.2:9042")) == 150
        assert len(history.config_log("lab")) == 30


# ---------------------------------------------------------------------------------------------------------------
# Configurations
# ---------------------------------------------------------------------------------------------------------------


def test_config_ids_are_content_addressed(history):
    first = history.record_config("lab", "127.0.0.1:9042", A, time=100)
    reordered = {
        "compaction": {"class": "LeveledCompactionStrategy"},
        "key_cache_size": "100MiB",
        "concurrent_reads": 32,
    }
    second = history.record_config("lab", "127.0.0.2:9042", reordered, time=100)
    assert first == second == config_id(A)
    assert len(first) == 64
    assert history.get_config(first) == A
    assert history.get_config("0" * 64) is None
    assert config_id(B) != first


def test_transitions_a_b_a(history):
    node = "127.0.0.1:9042"
    id_a = history.record_config("lab", node, A, time=100, source="observed")
    id_b = history.record_config("lab", node, B, time=200, source="plan", note="more reads")
    again = history.record_config("lab", node, A, time=300, source="plan")
    history.record_config("lab", node, A, time=350, source="observed")  # no change
    history.record_config("other", node, B, time=250)  # another cluster
    assert again == id_a

    assert history.transitions("lab") == [
        {"time": 200.0, "node": node, "from_config_id": id_a, "to_config_id": id_b},
        {"time": 300.0, "node": node, "from_config_id": id_b, "to_config_id": id_a},
    ]
    with_initial = history.transitions("lab", include_initial=True)
    assert with_initial[0] == {"time": 100.0, "node": node, "from_config_id": None, "to_config_id": id_a}
    # since/until cut by time but the from side still comes from before the cut
    assert history.transitions("lab", since=250) == [
        {"time": 300.0, "node": node, "from_config_id": id_b, "to_config_id": id_a}
    ]
    assert [t["time"] for t in history.transitions("lab", until=250)] == [200.0]
    assert history.transitions("nowhere") == []

    log = history.config_log("lab")
    assert [(e["time"], e["config_id"], e["source"]) for e in log] == [
        (100.0, id_a, "observed"),
        (200.0, id_b, "plan"),
        (300.0, id_a, "plan"),
        (350.0, id_a, "observed"),
    ]
    assert log[1]["note"] == "more reads"
    assert [e["time"] for e in history.config_log("lab", last=2)] == [300.0, 350.0]


def test_transitions_per_node_and_for_a_set(history):
    id_a = history.record_config("lab", ["127.0.0.1:9042", "127.0.0.2:9042"], A, time=100)
    id_b = history.record_config("lab", ["127.0.0.1:9042"], B, time=200)
    history.record_config("lab", "127.0.0.2:9042", B, time=260)
    assert [(t["time"], t["node"], t["to_config_id"]) for t in history.transitions("lab")] == [
        (200.0, "127.0.0.1:9042", id_b),
        (260.0, "127.0.0.2:9042", id_b),
    ]
    assert len(history.transitions("lab", node="127.0.0.2:9042")) == 1
    assert id_a != id_b


def test_config_at(history):
    node = "127.0.0.1:9042"
    history.record_config("lab", node, A, time=100)
    history.record_config("lab", node, B, time=200, source="plan", note="switch")
    assert history.config_at("lab", node, 50) is None
    assert history.config_at("lab", node, 100)["config"] == A
    at = history.config_at("lab", node, 250)
    assert at == {
        "time": 200.0,
        "cluster": "lab",
        "node": node,
        "config_id": config_id(B),
        "source": "plan",
        "note": "switch",
        "config": B,
    }
    assert history.config_at("lab", node)["config"] == B  # now
    # A cluster-wide entry applies to every node, until a newer node entry.
    history.record_config("lab", "cluster", {"concurrent_reads": 16}, time=300)
    assert history.config_at("lab", "127.0.0.9:9042", 310)["config"] == {"concurrent_reads": 16}
    assert history.config_at("lab", node, 310)["node"] == "cluster"
    assert history.config_at("lab", node, 250)["config"] == B


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"requirepass": "x"}, "config.requirepass"),
        ({"masterauth": "x"}, "config.masterauth"),
        (
            {"server_encryption_options": {"keystore_password": "x"}},
            "config.server_encryption_options.keystore_password",
        ),
        ({"net": {"tls": {"certificateKeyFilePassword": "x"}}}, "config.net.tls.certificateKeyFilePassword"),
        ({"key_password": "x"}, "config.key_password"),
        ({"passwd": "x"}, "config.passwd"),
        ({"client_secret": "x"}, "config.client_secret"),
        ({"api_token": "x"}, "config.api_token"),
        ({"auth": True}, "config.auth"),
        ({"users": [{"name": "a", "password": "x"}]}, r"config.users\[0\].password"),
    ],
)
def test_secrets_are_refused_and_nothing_is_written(history, path, config, field):
    with pytest.raises(SecretError, match=r"^%s: looks like a secret .* password, passwd, secret, token" % field):
        history.record_config("lab", "127.0.0.1:9042", dict(config, concurrent_reads=32), time=100)
    assert count(path, "configurations") == 0
    assert count(path, "config_log") == 0
    assert history.config_log("lab") == []


def test_settings_that_only_resemble_secrets_are_kept(history):
    config = {
        "num_tokens": 16,
        "initial_token": None,
        "authenticator": "PasswordAuthenticator",
        "authorizer": "AllowAllAuthorizer",
        "auth_cache_warming_enabled": False,
        "key_cache_size": "100MiB",
        "maxmemory-policy": "allkeys-lru",
    }
    ident = history.record_config("lab", "127.0.0.1:9042", config, time=1)
    assert history.get_config(ident) == config
    assert looks_like_secret("requirePass")
    assert not looks_like_secret("bypass_cache")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda h: h.record_config("", "n", {}), r"^cluster: '' is not a non-empty string"),
        (lambda h: h.record_config("lab", [], {}), r"^node_or_set: \[\] is not a node"),
        (lambda h: h.record_config("lab", "n", [1]), r"^config: \[1\] is not a mapping"),
        (lambda h: h.record_config("lab", "n", {"x": float("nan")}), r"^config: not JSON-serialisable"),
        (lambda h: h.record_config("lab", "n", {}, source=""), r"^source: '' is not a non-empty string"),
        (lambda h: h.save_state("k", [1]), r"^value: \[1\] is not a mapping"),
    ],
)
def test_bad_arguments_name_the_field(history, call, message):
    with pytest.raises(HistoryError, match=message):
        call(history)


# ---------------------------------------------------------------------------------------------------------------
# Saved state, opening, defaults
# ---------------------------------------------------------------------------------------------------------------


def test_rate_tracker_kept_between_runs(path):
    tracker = RateTracker()
    for time in range(31):
        tracker.add(time, {"reads": 4 * time})
    with SQLiteHistory(path) as history:
        assert history.load_state("rates/lab/127.0.0.1:9042") is None
        history.save_state("rates/lab/127.0.0.1:9042", tracker.to_dict())
    with SQLiteHistory(path) as history:
        again = RateTracker.from_dict(history.load_state("rates/lab/127.0.0.1:9042"))
        again.add(31, {"reads": 124})
        history.save_state("rates/lab/127.0.0.1:9042", again.to_dict())
        assert history.load_state("rates/lab/127.0.0.1:9042")["snapshots"][-1] == [31, {"reads": 124}]
    assert again.rate(30)["rates"] == {"reads": 4.0}


def test_open_history_by_url_or_path(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    with open_history("~/h.sqlite3") as by_path:
        assert isinstance(by_path, SQLiteHistory)
        assert isinstance(by_path, HistoryStore)
    assert (tmp_path / "h.sqlite3").exists()
    with open_history("sqlite:///%s/u.sqlite3" % tmp_path) as by_url:
        assert by_url.path == "%s/u.sqlite3" % tmp_path
    with open_history("sqlite:////%s/u.sqlite3" % str(tmp_path).lstrip("/")) as four_slashes:
        assert four_slashes.path == "%s/u.sqlite3" % tmp_path
    with open_history("prometheus://localhost:9090?records=%s/r.sqlite3&step=15" % tmp_path) as prometheus:
        assert isinstance(prometheus, HistoryStore)
        assert prometheus.step == 15.0 and prometheus.records.path == "%s/r.sqlite3" % tmp_path
    with pytest.raises(HistoryError, match=r"^path: scheme 'mysql' is not supported; allowed: sqlite"):
        open_history("mysql://db/x")
    # a PostgreSQL URL is the shared backend's: one with a password is refused before any connection
    with pytest.raises(HistoryError, match=r"^history: postgresql://tactician@\.\.\. carries a password"):
        open_history("postgresql://tactician:secret@db/x")
    with pytest.raises(HistoryError, match=r"^history: the URL's query carries password="):
        open_history("postgres://tactician@db/x?password=secret")
    with pytest.raises(HistoryError, match=r"^history: 'postgresql://' names no server nor database"):
        open_history("postgresql://")
    with pytest.raises(HistoryError, match=r"^path: 'sqlite://relative' is not sqlite:///absolute/path"):
        open_history("sqlite://relative")


def test_default_path(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv(HISTORY_ENV, raising=False)
    assert default_history_path() == str(tmp_path / ".local" / "share" / "tactician" / "history.sqlite3")
    assert default_history_path({HISTORY_ENV: "~/elsewhere.sqlite3"}) == str(tmp_path / "elsewhere.sqlite3")
    monkeypatch.setenv(HISTORY_ENV, str(tmp_path / "env.sqlite3"))
    with open_history() as history:
        assert history.path == str(tmp_path / "env.sqlite3")


def test_parse_time():
    assert parse_time(None) is None
    assert parse_time(12) == 12.0
    assert parse_time("12.5") == 12.5
    assert parse_time("1970-01-01T00:01:00Z") == 60.0
    assert parse_time("1970-01-01T01:01:00+01:00") == 60.0
    assert parse_time("1970-01-01 00:01:00") == 60.0
    with pytest.raises(HistoryError, match=r"^until: True is not a time"):
        parse_time(True, "until")
