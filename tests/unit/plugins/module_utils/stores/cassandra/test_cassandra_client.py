from __future__ import annotations

import ssl

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql


class Row:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class FakeResult:
    def __init__(self, row):
        self.row = row

    def one(self):
        return self.row


class FakeSession:
    def __init__(self, existing=None):
        self.existing = existing
        self.executed = []

    def execute(self, query, params=None, timeout=None):
        if query.startswith("SELECT"):
            if self.existing is None:
                return FakeResult(None)
            return FakeResult(Row(replication=self.existing[0], durable_writes=self.existing[1]))
        self.executed.append(query)
        return FakeResult(None)


SIMPLE3 = {"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "3"}


def test_wanted_replication_simple_and_nts():
    assert cql.wanted_replication("SimpleStrategy", 3) == SIMPLE3
    nts = cql.wanted_replication("NetworkTopologyStrategy", data_centers={"dc1": 3, "dc2": 2})
    assert nts == {"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc1": "3", "dc2": "2"}


@pytest.mark.parametrize(
    "args, field",
    [
        (("SimpleStrategy", 0, None), "replication_factor"),
        (("NetworkTopologyStrategy", None, None), "data_centers"),
        (("NetworkTopologyStrategy", None, {"dc1": -1}), "data_centers.dc1"),
        (("LocalStrategy", 1, None), "replication_class"),
    ],
)
def test_wanted_replication_errors_name_the_field(args, field):
    with pytest.raises(cql.CassandraError) as err:
        cql.wanted_replication(*args)
    assert str(err.value).startswith(field + ":")


def test_check_mode_reports_create_without_executing():
    session = FakeSession()
    result = cql.ensure_keyspace(session, "ks", "present", SIMPLE3, True, check_mode=True)
    assert result["changed"] and result["queries"][0].startswith("CREATE KEYSPACE ks WITH replication")
    assert session.executed == []


def test_existing_equal_keyspace_is_unchanged():
    session = FakeSession((SIMPLE3, True))
    result = cql.ensure_keyspace(session, "ks", "present", SIMPLE3, True)
    assert result == dict(
        changed=False,
        queries=[],
        diff=dict(
            before=dict(replication=SIMPLE3, durable_writes=True), after=dict(replication=SIMPLE3, durable_writes=True)
        ),
    )


def test_different_replication_is_altered_and_absent_dropped():
    session = FakeSession((dict(SIMPLE3, replication_factor="1"), True))
    result = cql.ensure_keyspace(session, "ks", "present", SIMPLE3, True)
    assert result["changed"] and session.executed[0].startswith("ALTER KEYSPACE ks")
    session = FakeSession((SIMPLE3, True))
    assert cql.ensure_keyspace(session, "ks", "absent")["queries"] == ["DROP KEYSPACE ks"]


def test_bad_keyspace_name_is_refused_before_any_query():
    session = FakeSession()
    with pytest.raises(cql.CassandraError, match="^name:"):
        cql.ensure_keyspace(session, "drop table x;", "present", SIMPLE3)
    assert session.executed == []


def test_ssl_context_from_options(tmp_path):
    assert cql.ssl_context(dict(ssl=False)) is None
    context = cql.ssl_context(dict(ssl=True, ssl_validate=False))
    assert context.verify_mode == ssl.CERT_NONE
    context = cql.ssl_context(dict(ssl=True, ssl_validate=True))
    assert context.verify_mode == ssl.CERT_REQUIRED


def test_ssl_context_checks_the_hostname_of_a_validated_certificate():
    assert cql.ssl_context(dict(ssl=True)).check_hostname is True
    assert cql.ssl_context(dict(ssl=True, ssl_validate=True, ssl_check_hostname=True)).check_hostname is True
    assert cql.ssl_context(dict(ssl=True, ssl_check_hostname=False)).check_hostname is False
    assert cql.ssl_context(dict(ssl=True, ssl_validate=False)).check_hostname is False


def test_store_neutral_tls_options_reach_the_driver_options():
    params = cql.params_from_any(
        dict(tls=True, ca_file="/ca.pem", client_cert_file="/c.pem", client_key_file="/k.pem", check_hostname=False)
    )
    assert params["ssl"] is True and params["ssl_ca_file"] == "/ca.pem"
    assert params["ssl_cert_file"] == "/c.pem" and params["ssl_key_file"] == "/k.pem"
    assert params["ssl_validate"] is True and params["ssl_check_hostname"] is False
