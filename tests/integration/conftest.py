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


def _ferretdb_module():
    """tests/ferretdb/server.py, loaded by its path (it is no package)."""
    import importlib.util
    import os
    import sys

    name = "tactician_ferretdb_server"
    if name not in sys.modules:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        spec = importlib.util.spec_from_file_location(name, os.path.join(root, "tests", "ferretdb", "server.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def ferretdb(tmp_path_factory):
    """FerretDB (tests/ferretdb) of the run's own on a free loopback port and a fresh state directory, started once
    for every module that needs it, answering `hello` before the first test; stopped by its PID at the end."""
    pytest.importorskip("pymongo")
    server_module = _ferretdb_module()
    reason = server_module.missing()
    if reason:
        pytest.skip("FerretDB cannot run here: " + reason)
    server = server_module.FerretDB(str(tmp_path_factory.mktemp("ferretdb")))
    try:
        server.start()
        yield server
    finally:
        left = server.stop()
        assert not left, "left running by the FerretDB fixture: %s" % left


@pytest.fixture(scope="session")
def load_driver_home():
    """The load driver (role load_driver) installed once per run under .lab/test, where the lab tests' lab_up puts
    it too; its home directory."""
    import os

    from ansible_run import ROOT, run_playbook

    lab_dir = os.path.join(ROOT, ".lab", "test")
    install = run_playbook(
        os.path.join(ROOT, "tests", "integration", "playbooks", "load_driver.yml"),
        os.path.join(ROOT, "tests", "integration", "inventory", "localhost.yml"),
        {"lab_dir": lab_dir},
    )
    assert install.returncode == 0, install.stderr
    return os.path.join(lab_dir, "load-driver")


@pytest.fixture()
def pgpass(postgres, monkeypatch):
    """The server, with its password file in this test's environment (libpq reads PGPASSFILE)."""
    for name, value in postgres.environ().items():
        monkeypatch.setenv(name, value)
    return postgres
