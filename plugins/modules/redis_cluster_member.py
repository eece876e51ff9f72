#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: redis_cluster_member
short_description: Add a master (moving slots to even shares) or a replica to a live Redis Cluster, or take one out
description:
  - Scales a running Redis Cluster while clients keep working (they follow C(MOVED) and C(ASK) redirections).
  - O(role=master) joins an empty cluster-mode node (C(CLUSTER MEET)) and, with O(rebalance), moves hash slots from
    the other masters until every master holds an even share of the 16384 slots within O(threshold) percent. Each
    slot moves with its keys - C(CLUSTER SETSLOT IMPORTING) on the target, C(MIGRATING) on the source, batches of
    O(pipeline) keys with C(CLUSTER GETKEYSINSLOT) and C(MIGRATE ... KEYS) authenticated as O(login_user), then
    C(CLUSTER SETSLOT NODE) on both sides and on the other masters. Only the slots above a master's share move.
  - O(role=replica) joins the node and makes it a replica (C(CLUSTER REPLICATE)) of O(master), or of the master with
    the fewest replicas.
  - O(state=absent) takes the node out - a master's slots go to the other masters first and its replicas follow
    other masters; then every other node forgets it (C(CLUSTER FORGET)) and the node itself is reset
    (C(CLUSTER RESET HARD), which flushes a replica's copy of the data) so that it can join again later, under a
    new node id.
  - Waits until every node agrees on the slot owners and roles, reports C(cluster_state:ok), and every replica's
    link to its master is up.
  - Idempotent - a node that already is a master with its share (within O(threshold)), or already a replica of the
    right master, or already gone, reports no change. A slot left half-moved by an interrupted run is finished
    first.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
extends_documentation_fragment:
  - tactician.nosql.redis
options:
  node:
    description:
      - The node to add or take out, as C(host:port). To be added it must run with C(cluster-enabled yes), hold no
        key and no slot, and know no node outside this cluster.
      - O(login_host) and O(login_port) name any other node already in the cluster.
    type: str
    required: true
  role:
    description: What the node becomes.
    type: str
    choices: [master, replica]
    default: master
  master:
    description:
      - With O(role=replica), the master to follow, as C(host:port) or node id.
      - Default - the node's current master when it already is a replica, else the master holding slots with the
        fewest replicas.
      - In check mode a master that is not in the cluster yet but answers as an empty node is taken to join earlier
        in the same play (the role M(tactician.nosql.redis_tactics) adds the masters before the replicas).
    type: str
  rebalance:
    description:
      - With O(role=master), move slots so that every master holds an even share within O(threshold).
      - Without it a new master joins with no slot (add several masters that way, then rebalance once with the last).
    type: bool
    default: true
  threshold:
    description:
      - How far, in percent of the even share, a master may be from it before slots move. With 4 masters the share
        is 4096 slots and the default 2 allows 4015 to 4177.
      - When slots move, they move to the exact shares.
    type: float
    default: 2.0
  pipeline:
    description: Keys per C(MIGRATE) command.
    type: int
    default: 100
  timeout:
    description:
      - Seconds to wait for each stage - health before the change, the node joining, a replica's link, every node
        agreeing after the change, health after it. Moving the slots itself is not bounded by it.
    type: int
    default: 300
  state:
    description:
      - present adds the node (or fixes its role and the shares), absent takes it out.
      - A master is taken out only when at least 3 masters stay; its slots go to the others first.
    type: str
    choices: [present, absent]
    default: present
attributes:
  check_mode:
    description: Can run in check mode; returns the planned moves and the changed status a real run would report.
    support: full
  diff_mode:
    description: Returns the slot map (each master's slots and each replica's master) before and after.
    support: full
notes:
  - The same ACL user and password are used on every node and to authenticate C(MIGRATE) (C(AUTH2)); they are never
    logged nor returned.
  - Taking out a replica may leave its master without one while other masters have some; the module warns then
    (the masters are in RV(masters_without_replicas)). Add a replica to such a master, or take out the others' too.
  - Memory limits of the new node (C(maxmemory), C(maxmemory-policy)) are not this module's business.
seealso:
  - module: tactician.nosql.redis_cluster
  - module: tactician.nosql.redis_health
"""

EXAMPLES = r"""
- name: Add 127.0.0.1:6417 as a master and move slots to it
  tactician.nosql.redis_cluster_member:
    node: 127.0.0.1:6417
    role: master
    login_host: 127.0.0.1
    login_port: 6411
    login_user: tactician
    login_password: "{{ redis_password }}"

- name: Add 127.0.0.1:6418 as a replica of 127.0.0.1:6417
  tactician.nosql.redis_cluster_member:
    node: 127.0.0.1:6418
    role: replica
    master: 127.0.0.1:6417
    login_port: 6411
    login_user: tactician
    login_password: "{{ redis_password }}"

- name: Take the master out again (its slots go back to the others)
  tactician.nosql.redis_cluster_member:
    node: 127.0.0.1:6417
    state: absent
    login_port: 6411
    login_user: tactician
    login_password: "{{ redis_password }}"
"""

RETURN = r"""
node:
  description: The node, as C(host:port).
  returned: always
  type: str
  sample: 127.0.0.1:6417
node_id:
  description: Its cluster node id (for a node taken out, the id it had; null when it does not answer and is not in
    the cluster).
  returned: always
  type: str
role:
  description: What the node is afterwards (in check mode, would be) - master, replica or absent.
  returned: always
  type: str
  sample: master
master:
  description: The master of the node when it is a replica.
  returned: always
  type: str
moves:
  description:
    - The slot moves, one per source and target - C(from), C(to), C(count) and C(ranges); after a real run also
      C(keys) (keys moved). In check mode, the planned moves.
  returned: always
  type: list
  elements: dict
  sample: [{"from": "127.0.0.1:6411", "to": "127.0.0.1:6417", "count": 1366, "ranges": ["4095-5460"], "keys": 166}]
resumed:
  description: Slots an interrupted run had left half-moved, finished first (C(slot), C(source), C(target)).
  returned: always
  type: list
  elements: dict
slots_before:
  description: Slots held by each master before the run.
  returned: always
  type: dict
  sample: {"127.0.0.1:6411": 5461, "127.0.0.1:6412": 5462, "127.0.0.1:6413": 5461}
slots_after:
  description: Slots held by each master after the run (in check mode, as planned).
  returned: always
  type: dict
  sample: {"127.0.0.1:6411": 4096, "127.0.0.1:6412": 4096, "127.0.0.1:6413": 4096, "127.0.0.1:6417": 4096}
keys_migrated:
  description: Keys moved by C(MIGRATE) during the run.
  returned: always
  type: int
masters_without_replicas:
  description: Masters holding slots without a replica while other masters have one (after the run).
  returned: always
  type: list
  elements: str
timings:
  description: Seconds spent in each stage (read, health_before, resume, join, replicate, migrate, replicas, forget,
    converge, health).
  returned: always
  type: dict
predicted:
  description: True when the result is a plan (check mode), not what was read back from the cluster.
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core import errors
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail, fail_imports, with_diff
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import members
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import slots as redis_slots


def main():
    argument_spec = redis_adapter.redis_argument_spec()
    argument_spec.update(
        node=dict(type="str", required=True),
        role=dict(type="str", choices=list(redis_slots.ROLES), default="master"),
        master=dict(type="str"),
        rebalance=dict(type="bool", default=True),
        threshold=dict(type="float", default=2.0),
        pipeline=dict(type="int", default=100),
        timeout=dict(type="int", default=300),
        state=dict(type="str", choices=list(redis_slots.STATES), default="present"),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    fail_imports(module, redis_adapter.missing_libraries())
    try:
        with errors.reported_as(redis_slots.TacticError, "redis_cluster_member on %s" % module.params["node"]):
            result = members.ensure_member(module.params, check_mode=module.check_mode)
    except TacticianError as exc:
        fail(module, exc)
    with_diff(module, result)
    if result["masters_without_replicas"] and module.params["state"] == "absent":
        module.warn(
            "masters without a replica while others have one: %s" % ", ".join(result["masters_without_replicas"])
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
