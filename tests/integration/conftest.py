"""Fixtures the integration modules share."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def postgres(tmp_path_factory):
    """A PostgreSQL server of the run's own (postgres_server.py), started once for every module that needs it."""
    pytest.importorskip("cryptography")
    pytest.importorskip("psycopg")
    import postgres_server
    from pki import Authority

    lacks = postgres_server.missing()
    if lacks:
        pytest.skip("a PostgreSQL server needs " + ", ".join(lacks))
    authority = Authority(str(tmp_path_factory.mktemp("pg-pki")))
    server = postgres_server.PostgresServer(authority)
    try:
        server.start()
        yield server
    finally:
        left = server.stop()
        assert not left, "left running by the PostgreSQL fixture: %s" % left


@pytest.fixture()
def pgpass(postgres, monkeypatch):
    """The server, with its password file in this test's environment (libpq reads PGPASSFILE)."""
    for name, value in postgres.environ().items():
        monkeypatch.setenv(name, value)
    return postgres
