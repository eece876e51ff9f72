"""Client TLS against a real server: a Redis started by this fixture as an operator runs one with TLS (its own
configuration file, a CA made here, client certificates required, a password), not by the lab roles.

What it shows: the collection's Redis connections verify the server's certificate and that it names the node as
addressed, present a client certificate, and say plainly when one of these fails.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest
from ansible_run import ROOT, held_lock, run_playbook

from ansible_collections.tactician.nosql.plugins.module_utils.stores import probes
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter

pytestmark = pytest.mark.integration

pytest.importorskip("cryptography")
from pki import make_pki  # noqa: E402

PASSWORD = "tls-fixture-password"  # a throwaway server of this test only
PLAYBOOKS = os.path.join(ROOT, "tests", "integration", "playbooks")
INVENTORY = os.path.join(ROOT, "tests", "integration", "inventory", "localhost.yml")


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def tls_redis(tmp_path_factory):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (make bootstrap installs it)")
    folder = str(tmp_path_factory.mktemp("tls-redis"))
    files = make_pki(folder)
    port = _free_port()
    conf = os.path.join(folder, "redis.conf")
    with open(conf, "w", encoding="utf-8") as handle:
        handle.write(
            "\n".join(
                [
                    "bind 127.0.0.1 127.0.0.2",
                    "port 0",
                    "tls-port %d" % port,
                    "tls-cert-file %s" % files["server_cert"],
                    "tls-key-file %s" % files["server_key"],
                    "tls-ca-cert-file %s" % files["ca"],
                    "tls-auth-clients yes",
                    "requirepass %s" % PASSWORD,
                    "dir %s" % folder,
                    "save ''",
                    "appendonly no",
                    "logfile %s" % os.path.join(folder, "redis.log"),
                    "",
                ]
            )
        )
    os.chmod(conf, 0o600)
    server = subprocess.Popen(["redis-server", conf])  # the password stays in the file, off the command line
    try:
        base = dict(
            login_password=PASSWORD,
            tls=True,
            ca_file=files["ca"],
            client_cert_file=files["client_cert"],
            client_key_file=files["client_key"],
        )
        for _attempt in range(100):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                time.sleep(0.1)
        yield dict(port=port, files=files, params=base)
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _ping(params, host, port):
    conn = redis_adapter.client(redis_adapter.params_from_any(params), host, port, retries=False)
    try:
        return conn.ping()
    finally:
        conn.close()


def test_verified_hostname_and_client_certificate_connect(tls_redis):
    assert _ping(tls_redis["params"], "127.0.0.1", tls_redis["port"]) is True


def test_a_certificate_that_does_not_name_the_node_is_refused(tls_redis):
    with pytest.raises(redis_adapter.RedisConnectionError, match="(?i)hostname|IP address mismatch|doesn't match"):
        _ping(tls_redis["params"], "127.0.0.2", tls_redis["port"])
    # Turned off by name, the same certificate is accepted (its signature is still verified).
    assert _ping(dict(tls_redis["params"], check_hostname=False), "127.0.0.2", tls_redis["port"]) is True


def test_without_a_client_certificate_the_server_refuses(tls_redis):
    params = {k: v for k, v in tls_redis["params"].items() if not k.startswith("client_")}
    with pytest.raises(redis_adapter.RedisError):
        _ping(params, "127.0.0.1", tls_redis["port"])


def test_a_server_signed_by_another_ca_is_refused(tls_redis, tmp_path):
    other = make_pki(str(tmp_path))
    with pytest.raises(redis_adapter.RedisConnectionError, match="(?i)certificate verify failed"):
        _ping(dict(tls_redis["params"], ca_file=other["ca"]), "127.0.0.1", tls_redis["port"])


def test_observe_reads_the_node_over_tls(tls_redis):
    params = dict(tls_redis["params"], store="redis", nodes=[{"address": "127.0.0.1:%d" % tls_redis["port"]}])
    with probes.Probes(params) as found:
        snap = found[0].snapshot()
    assert "counters" in snap and found[0].counted
    wrong = dict(params, nodes=[{"address": "127.0.0.2:%d" % tls_redis["port"]}])
    with pytest.raises(probes.ObserveError, match="^127.0.0.2:%d: cannot be observed" % tls_redis["port"]):
        with probes.Probes(wrong):
            pass


# ---------------------------------------------------------------------------------------------------------------
# The rolling lock kept in the store, over the same TLS connection
# ---------------------------------------------------------------------------------------------------------------


def _lock_store(tls_redis):
    files = tls_redis["files"]
    return dict(
        type="redis",
        address="127.0.0.1:%d" % tls_redis["port"],
        login_password=PASSWORD,
        tls=True,
        ca_file=files["ca"],
        client_cert_file=files["client_cert"],
        client_key_file=files["client_key"],
    )


def _lock_value(tls_redis, name):
    conn = redis_adapter.client(redis_adapter.params_from_any(tls_redis["params"]), "127.0.0.1", tls_redis["port"])
    try:
        return conn.get("tactician:lock:" + name), conn.ttl("tactician:lock:" + name)
    finally:
        conn.close()


def test_two_controllers_at_once_the_second_is_refused_by_the_lock_in_redis(tls_redis, tmp_path):
    """Two ansible-playbook runs, each its own controller process: the first holds the lock while the second
    tries; the second fails naming the holder and changes nothing; the first gives the lock back."""
    store = _lock_store(tls_redis)
    with held_lock("shop", "roll-a", store, str(tmp_path / "release"), inventory=INVENTORY) as first:
        value, ttl = _lock_value(tls_redis, "shop")
        assert '"run_id": "roll-a"' in value and 0 < ttl <= 7200
        second = run_playbook(
            os.path.join(PLAYBOOKS, "store_lock.yml"),
            INVENTORY,
            dict(lock_name="shop", run_id="roll-b", lock_store=store),
        )
        assert second.returncode != 0
        refused = second.task("Take the lock")
        assert refused["failed"] and "the rolling lock of cluster shop is held by" in refused["msg"], refused
        assert "the key tactician:lock:shop on 127.0.0.1:%d" % tls_redis["port"] in refused["msg"]
        assert PASSWORD not in second.stderr and PASSWORD not in str(refused)
        assert '"run_id": "roll-a"' in _lock_value(tls_redis, "shop")[0]
    assert first.run.returncode == 0, first.run.stderr
    assert PASSWORD not in first.run.stderr
    assert _lock_value(tls_redis, "shop")[0] is None


def test_check_mode_takes_no_lock_in_the_store(tls_redis):
    result = run_playbook(
        os.path.join(PLAYBOOKS, "store_lock.yml"),
        INVENTORY,
        dict(lock_name="shop-check", run_id="roll-c", lock_store=_lock_store(tls_redis)),
        check=True,
        diff=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.task("Take the lock")["changed"] is True
    assert _lock_value(tls_redis, "shop-check")[0] is None
