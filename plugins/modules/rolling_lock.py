#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: rolling_lock
short_description: Take or give back a cluster's rolling lock, so two rolls never touch one cluster at once
description:
  - The lock is the file C(<lock_dir>/<name>.lock), created with O_CREAT|O_EXCL, or with O(lock_store) a record
    in the cluster itself (a Redis key set with NX and an expiry, or a Cassandra row written by lightweight
    transactions with a TTL), which every controller and AWX job sees. It holds a JSON record of its holder,
    C(name), C(owner), C(host), C(pid), C(acquired), C(expires) and C(run_id).
  - O(state=acquired) takes the lock. A lock held by the same O(owner) and O(run_id) is left as it is. A stale
    lock (its O(ttl) is over, or the process that took it on this host is gone) is replaced and returned in
    RV(stale_replaced). A lock held by anyone else fails the task, naming the holder, since when, and how to
    clear it.
  - O(state=stopped) keeps the lock of a roll that stopped for the cluster's sake (a node down, a peer lost during a
    step) and writes O(stopped) into its record - the node it stopped at, the reason, every node's state and how
    to continue. Only the holder may. Such a lock is never stale (its process is gone by design) - the next roll
    is refused with the reason and how to continue until someone releases it with O(force=true).
  - O(state=released) gives the lock back. Only its holder (the same O(owner) and O(run_id)) may, unless
    O(force=true). A lock nobody holds is nothing to do.
  - Run it on the controller (C(hosts=localhost) or C(delegate_to=localhost)). There the recorded process is
    the C(ansible-playbook) run itself, so the lock becomes stale as soon as that run ends without releasing it.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  name:
    description: The cluster's name (letters, digits, C(-), C(_) and C(.), starting with a letter or digit).
    type: str
    required: true
  state:
    description: Whether this run holds the lock.
    type: str
    choices: [acquired, stopped, released]
    required: true
  stopped:
    description:
      - With O(state=stopped), what to record - C(reason) (required), C(node), C(nodes) (each node's state) and
        C(continue) (how to go on).
    type: dict
  lock_store:
    description:
      - Keep the lock in a store instead of a file on the host the module runs on. The store may be the cluster
        being rolled or any other; its connection options are the ones the collection's modules take.
      - Redis - the key C(tactician:lock:<name>), on the master of its slot in a Redis Cluster; its expiry is
        O(ttl) (none for a stopped roll's lock).
      - Cassandra - the row O(name) of C(<keyspace>.rolling_locks), written with lightweight transactions (Paxos
        among its replicas, so a quorum of them must be up) and a TTL of O(ttl). A keyspace that does not exist
        is made with NetworkTopologyStrategy and min(3, nodes) replicas in each data center.
    type: dict
    suboptions:
      type:
        description: Which store holds the lock.
        type: str
        choices: [cassandra, redis]
        required: true
      address:
        description: A node of that store (Cassandra C(host), Redis C(host:port)).
        type: str
        required: true
      port:
        description: Cassandra's CQL port.
        type: int
        default: 9042
      keyspace:
        description: Cassandra's keyspace of the table C(rolling_locks).
        type: str
        default: tactician
      login_user:
        description: Cassandra role or Redis ACL user.
        type: str
      login_password:
        description: Its password. Never logged.
        type: str
      tls:
        description: Connect with TLS.
        type: bool
        default: false
      ca_file:
        description: CA bundle that signs the servers' certificates.
        type: path
      client_cert_file:
        description: Client certificate, when the servers require one.
        type: path
      client_key_file:
        description: Private key of O(lock_store.client_cert_file).
        type: path
      validate_certs:
        description: Verify the servers' certificates.
        type: bool
        default: true
      check_hostname:
        description: With O(lock_store.validate_certs), also check that the certificate names the node as addressed.
        type: bool
        default: true
      connect_timeout:
        description: Seconds to wait for a connection.
        type: float
        default: 10.0
  lock_dir:
    description:
      - Directory of the lock files (without O(lock_store)).
      - Defaults to C($XDG_STATE_HOME/tactician-nosql/locks), or C(~/.local/state/tactician-nosql/locks) when
        E(XDG_STATE_HOME) is not set.
    type: path
  owner:
    description:
      - Who holds the lock. Defaults to C(<user>@<hostname>:<pid>) with the process id of the Ansible run (or
        C(<user>@<hostname>) when no Ansible process is found on the host).
    type: str
  run_id:
    description: Identifies one roll; acquire and release with the same value.
    type: str
  ttl:
    description:
      - Seconds the lock holds before it is stale. Make it longer than the longest roll.
    type: int
    default: 7200
  force:
    description:
      - With O(state=released), remove the lock whoever holds it. With O(state=acquired), take it over from its
        holder (reported in RV(stale_replaced)).
      - Only when the holder's roll is known to be gone.
    type: bool
    default: false
attributes:
  check_mode:
    description: Reports what would happen (the same C(changed) and records) and touches no file.
    support: full
  diff_mode:
    description: Returns the lock record before and after when run with C(--diff).
    support: full
notes:
  - With the lock in a file, two controllers on different hosts do not see each other's lock; give them a
    O(lock_store).
  - A roll that was stopped leaves its lock on purpose. Once the cluster is repaired, clear it with
    O(state=released) and O(force=true), or delete the file named in the error.
"""

EXAMPLES = r"""
- name: Take the lock of the cluster lab for this roll
  tactician.nosql.rolling_lock:
    name: lab
    state: acquired
    run_id: "{{ roll_id }}"

- name: Give it back
  tactician.nosql.rolling_lock:
    name: lab
    state: released
    run_id: "{{ roll_id }}"

- name: The same lock, kept in the Redis cluster so that every controller sees it
  tactician.nosql.rolling_lock:
    name: shop-cache
    state: acquired
    run_id: "{{ roll_id }}"
    lock_store:
      type: redis
      address: 10.0.0.11:6379
      login_user: tactician
      login_password: "{{ vault_redis_password }}"
      tls: true
      ca_file: /etc/tactician/ca.pem
      client_cert_file: /etc/tactician/client.pem
      client_key_file: /etc/tactician/client-key.pem

- name: Clear a lock left by a roll that was stopped
  tactician.nosql.rolling_lock:
    name: lab
    state: released
    force: true
"""

RETURN = r"""
lock:
  description: The lock record after the task (null once released).
  returned: always
  type: dict
  sample:
    name: lab
    owner: tactician@controller:41213
    host: controller
    pid: 41213
    acquired: "2026-05-09T09:00:00Z"
    expires: "2026-05-09T11:00:00Z"
    run_id: 20260509T090000-1234
stale_replaced:
  description: The stale (or, with O(force), taken over) record that O(state=acquired) replaced, else null.
  returned: always
  type: dict
stale_reason:
  description: Why RV(stale_replaced) was replaced, else null.
  returned: always
  type: str
  sample: its process 41213 on controller is gone
released:
  description: The record that O(state=released) removed, else null.
  returned: always
  type: dict
path:
  description: The lock file, or where in the store the lock is kept.
  returned: always
  type: str
  sample: /home/tactician/.local/state/tactician-nosql/locks/lab.lock
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.apply.lock import DEFAULT_TTL, RollingLock, controller_pid
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import (
    any_store_argument_spec,
    fail,
    fail_imports,
)

# The store-neutral connection options of the modules that take any store (MongoDB's auth_source aside: no lock
# lives there), and what says which store and node.
LOCK_STORE_SPEC = {k: v for k, v in any_store_argument_spec().items() if k != "auth_source"}
LOCK_STORE_SPEC.update(
    type=dict(type="str", choices=["cassandra", "redis"], required=True),
    address=dict(type="str", required=True),
    keyspace=dict(type="str", default="tactician", no_log=False),
    connect_timeout=dict(type="float", default=10.0),
)


def _records(module, name, spec, closers):
    """The records of a lock kept in a store, or None for the lock file."""
    if not spec:
        return None
    from ansible_collections.tactician.nosql.plugins.module_utils.apply import lock_stores
    from ansible_collections.tactician.nosql.plugins.module_utils.stores import probes

    fail_imports(module, probes.missing_libraries(spec["type"]))
    if spec["type"] == "redis":
        params = lock_stores.redis_adapter.params_from_any(spec)
        return lock_stores.RedisRecords(name, params, spec["address"])
    cql = lock_stores.cql
    params = dict(cql.params_from_any(spec, spec["port"]), login_hosts=[spec["address"]])
    try:
        cluster, session = cql.connect(params)
    except cql.CassandraError as exc:
        module.fail_json(msg="lock_store: %s" % exc)
    closers.append(cluster.shutdown)
    return lock_stores.CassandraRecords(name, session, spec["keyspace"], contact=spec["address"])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            state=dict(type="str", choices=["acquired", "stopped", "released"], required=True),
            stopped=dict(type="dict"),
            lock_dir=dict(type="path"),
            owner=dict(type="str"),
            run_id=dict(type="str"),
            ttl=dict(type="int", default=DEFAULT_TTL),
            force=dict(type="bool", default=False),
            lock_store=dict(type="dict", options=LOCK_STORE_SPEC),
        ),
        mutually_exclusive=[["lock_store", "lock_dir"]],
        supports_check_mode=True,
    )
    # The result's path names the lock file: leave out the file's stat (owner, mode, ...) that exit_json would
    # add, its owner would read as the lock's holder.
    module.add_path_info = lambda kwargs: kwargs
    params = module.params
    closers = []
    try:
        lock = RollingLock(
            params["name"],
            lock_dir=params["lock_dir"],
            owner=params["owner"],
            ttl=params["ttl"],
            pid=controller_pid(),
            records=_records(module, params["name"], params["lock_store"], closers),
        )
        before = lock.status()
        if params["state"] == "acquired":
            result = lock.acquire(run_id=params["run_id"], check_mode=module.check_mode, force=params["force"])
        elif params["state"] == "stopped":
            result = lock.mark_stopped(run_id=params["run_id"], stopped=params["stopped"], check_mode=module.check_mode)
        else:
            result = lock.release(run_id=params["run_id"], force=params["force"], check_mode=module.check_mode)
    except TacticianError as exc:
        fail(module, exc)
    finally:
        for close in closers:
            close()
    if module._diff:
        result["diff"] = dict(before=before or {}, after=result["lock"] or {})
    module.exit_json(**result)


if __name__ == "__main__":
    main()
