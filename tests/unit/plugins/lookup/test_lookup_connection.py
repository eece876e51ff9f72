from __future__ import annotations

import pytest
from ansible.errors import AnsibleLookupError

from ansible_collections.tactician.nosql.plugins.lookup.connection import connection


def _vars(**hosts):
    return {"hostvars": hosts}


def test_an_operators_inventory_gives_the_password_and_tls_files():
    variables = _vars(
        cache1={
            "tactician_redis_password": "secret",
            "tactician_tls": True,
            "tactician_ca_file": "/etc/pki/ca.pem",
            "tactician_client_cert_file": "/etc/pki/me.pem",
            "tactician_client_key_file": "/etc/pki/me-key.pem",
        }
    )
    assert connection("cache1", variables, "redis") == {
        "login_password": "secret",
        "tls": True,
        "ca_file": "/etc/pki/ca.pem",
        "client_cert_file": "/etc/pki/me.pem",
        "client_key_file": "/etc/pki/me-key.pem",
    }
    assert connection("cache1", variables, "redis", style="redis")["ca_certs"] == "/etc/pki/ca.pem"


def test_a_store_s_own_variable_wins_over_the_shared_one():
    variables = _vars(
        db1={
            "tactician_cassandra_user": "ops",
            "tactician_cassandra_password": "pw",
            "tactician_tls": False,
            "tactician_cassandra_tls": True,
            "tactician_check_hostname": True,
            "tactician_cassandra_check_hostname": False,
        }
    )
    assert connection("db1", variables, "cassandra") == {
        "login_user": "ops",
        "login_password": "pw",
        "tls": True,
        "check_hostname": False,
    }
    assert connection("db1", variables, "cassandra", style="cassandra") == {
        "login_user": "ops",
        "login_password": "pw",
        "ssl": True,
        "ssl_check_hostname": False,
    }


def test_the_lab_roles_variables_are_the_fallback_and_a_user_needs_a_password():
    lab = _vars(
        redis1={"redis_node_user": "tactician", "redis_node_password": "labpw"}, redis2={"redis_node_user": "x"}
    )
    assert connection("redis1", lab, "redis") == {"login_user": "tactician", "login_password": "labpw"}
    assert connection("redis2", lab, "redis") == {}


def test_an_unknown_host_is_named():
    with pytest.raises(AnsibleLookupError, match="host 'nope' is not in the inventory"):
        connection("nope", _vars(a={}), "redis")
