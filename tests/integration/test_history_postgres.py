"""The history in a PostgreSQL database that several controllers share, against a real server (Debian's package,
started by postgres_server.py): TLS with the server's certificate verified and a client certificate, a password
from libpq's password file. What one controller writes, another process sees; two controllers opening a new
database at once migrate it once; what the SQLite file refuses, the database refuses alike.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from ansible_run import ROOT

from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history as history_store
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.samples import new_sample

pytestmark = pytest.mark.integration

pytest.importorskip("psycopg")


def _samples(cluster, count, start=1_700_000_000.0, read=100.0):
    return [
        new_sample("cassandra", cluster, "cluster", start + 30.0 * k, 30.0, {"read": read + k, "update": 50.0})
        for k in range(count)
    ]


SECOND_CONTROLLER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history
store = history.open_history(sys.argv[2], create=False, readonly=True)
try:
    print(json.dumps({"samples": len(store.samples(cluster=sys.argv[3])),
                      "config": store.config_at(sys.argv[3], "n1")["config"],
                      "effect": store.load_state("effect/" + sys.argv[3]),
                      "version": store.schema_version}))
finally:
    store.close()
"""


def test_two_controllers_share_one_history_over_tls(pgpass):
    url = pgpass.url()
    with history_store.open_history(url) as store:
        assert isinstance(store, history_store.PostgresHistory)
        assert store.add_samples(_samples("shared", 12)) == 12
        assert store.add_samples(_samples("shared", 12)) == 0, "the very same samples are not stored twice"
        first = store.record_config("shared", ["n1", "n2"], {"concurrent_reads": 32}, time=1_700_000_000.0)
        second = store.record_config("shared", "n1", {"concurrent_reads": 64}, time=1_700_000_200.0)
        store.save_state("effect/shared", {"verdict": "gain", "gain": 0.12})
        assert store.transitions("shared") == [
            {"time": 1_700_000_200.0, "node": "n1", "from_config_id": first, "to_config_id": second}
        ]
        assert [s["time"] for s in store.samples(cluster="shared", last=3)] == [
            1_700_000_000.0 + 30.0 * k for k in (9, 10, 11)
        ]
        assert store.states("effect/") == [("effect/shared", {"verdict": "gain", "gain": 0.12})]
    # another process, as a second controller or the next AWX job: it sees what the first wrote
    out = subprocess.run(
        [sys.executable, "-c", SECOND_CONTROLLER, os.path.join(ROOT, ".collections"), url, "shared"],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout)
    assert seen == {
        "samples": 12,
        "config": {"concurrent_reads": 64},
        "effect": {"verdict": "gain", "gain": 0.12},
        "version": history_store.SCHEMA_VERSION,
    }


def test_refusals_are_the_sqlite_files_and_name_the_field(pgpass):
    url = pgpass.url()
    with history_store.open_history(url) as store:
        store.add_samples(_samples("refusals", 1))
        with pytest.raises(history_store.HistoryError, match="^time: a different sample"):
            store.add_samples(_samples("refusals", 1, read=5.0))
        with pytest.raises(history_store.SecretError):
            store.record_config("refusals", "n1", {"admin_password": "x"})
    with history_store.open_history(url, readonly=True) as reader:
        with pytest.raises(history_store.HistoryError, match="read-only"):
            reader.save_state("k", {"a": 1})


def test_a_password_in_the_url_and_a_missing_client_certificate_are_refused(pgpass):
    with pytest.raises(history_store.HistoryError, match="^history: .*carries a password"):
        history_store.open_history(pgpass.url().replace("tactician@", "tactician:secret@"))
    with pytest.raises(history_store.HistoryError, match="^history: cannot connect to postgresql://tactician@"):
        history_store.open_history(pgpass.url(client_certificate=False))


OPEN_ONCE = r"""
import sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history
history.open_history(sys.argv[2]).close()
"""


def test_controllers_opening_a_new_database_at_once_migrate_it_once(pgpass, monkeypatch):
    import psycopg

    url = pgpass.url()
    # a fresh schema of its own: the tables of the other tests are not there yet
    admin = psycopg.connect(history_store._pg_url(url), autocommit=True)
    try:
        admin.execute("CREATE SCHEMA IF NOT EXISTS race")
    finally:
        admin.close()
    raced = url + "&options=-csearch_path%3Drace"
    procs = [
        subprocess.Popen([sys.executable, "-c", OPEN_ONCE, os.path.join(ROOT, ".collections"), raced])
        for _controller in range(4)
    ]
    assert [proc.wait(timeout=120) for proc in procs] == [0, 0, 0, 0]
    with history_store.open_history(raced, readonly=True) as store:
        rows = store._execute("SELECT version FROM schema_version").fetchall()
        assert [row[0] for row in rows] == [history_store.SCHEMA_VERSION]
