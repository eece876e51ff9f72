#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: mongodb_replica_set
short_description: A MongoDB replica set's health and replication lag, and the order a rolling change takes it in
description:
  - Reads C(hello) and C(replSetGetStatus) (and C(replSetGetConfig) before MongoDB 4.4, for the votes) from the
    first of O(nodes) that answers; every member of a replica set reports the whole set.
  - The set is healthy when every member is reachable and C(PRIMARY), C(SECONDARY) or C(ARBITER), there is exactly
    one primary, and every secondary's last applied operation is at most O(max_lag_s) seconds behind the primary's
    (C(optimeDate)). The module waits up to O(wait_timeout) seconds for that.
  - With O(plan), the order of a rolling change of O(nodes) - one member at a time, the secondaries (and arbiters)
    first in the order given, the primary last - and its rule in the shape of the C(tactician.nosql.rolling_batch)
    lookup's. A set of fewer than 3 voting members (no majority while one member is down), and a standalone
    mongod (no redundancy, as FerretDB), are refused unless O(aggressive); a C(mongos) is refused.
  - Reads only; used by C(playbooks/rolling_reconfigure.yml) before the roll and before and after each member.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
extends_documentation_fragment:
  - tactician.nosql.any_store
options:
  nodes:
    description:
      - The members to roll (or to ask), C(host:port) as the set's configuration names them (port 27017 when
        left out).
    type: list
    elements: str
    required: true
  max_lag_s:
    description: The most a secondary may be behind the primary, in seconds (above 0).
    type: float
    default: 10
  wait_timeout:
    description: Seconds to wait for the set to be healthy before the module reports it unhealthy (0 - check once).
    type: float
    default: 0
  interval:
    description: Seconds between two reads while waiting.
    type: float
    default: 1
  plan:
    description:
      - Also order O(nodes) for a rolling change and apply the refusals (fewer than 3 voting members, a
        standalone, a mongos).
    type: bool
    default: true
  aggressive:
    description:
      - Accept a roll without a majority while a member is down (fewer than 3 voting members), or of a
        standalone mongod.
    type: bool
    default: false
  after_change:
    description:
      - The check follows a change of a member (the roll's check after each member) - a failure then reports
        RV(touched=true), the member being on its new configuration.
    type: bool
    default: false
  fail_when_unhealthy:
    description: Fail when the set is not healthy after O(wait_timeout) (otherwise return RV(healthy=false)).
    type: bool
    default: true
attributes:
  check_mode:
    description: Reads only; runs the same in check mode.
    support: full
  diff_mode:
    description: Returns no diff.
    support: none
"""

EXAMPLES = r"""
- name: The set healthy within 30 s, secondaries at most 10 s behind; the order of the roll
  tactician.nosql.mongodb_replica_set:
    nodes: [mongo-a.example.net:27017, mongo-b.example.net:27017, mongo-c.example.net:27017]
    login_user: tactician
    login_password: "{{ mongodb_password }}"
    max_lag_s: 10
    wait_timeout: 30
  register: rs
# rs.order: the secondaries, then the primary
"""

RETURN = r"""
healthy:
  description:
    - Every member PRIMARY, SECONDARY or ARBITER, one primary, every secondary within O(max_lag_s); true for a
      standalone that answers.
  returned: always
  type: bool
problems:
  description: What keeps the set from being healthy (empty when healthy).
  returned: always
  type: list
  elements: str
replica_set:
  description:
    - What was read - kind (replica_set, standalone, mongos), set name, primary, voting members, each member's
      state and lag.
  returned: when a member answered
  type: dict
  sample: {kind: replica_set, set_name: rs0, primary: "mongo-a.example.net:27017", voting_members: 3,
           members: {"mongo-a.example.net:27017": PRIMARY, "mongo-b.example.net:27017": "SECONDARY, lag 0.0 s"}}
waited_s:
  description: Seconds waited until healthy (or until O(wait_timeout)).
  returned: always
  type: float
order:
  description: O(nodes) in the order of the roll (secondaries first, the primary last).
  returned: with O(plan), when healthy
  type: list
  elements: str
rule:
  description:
    - The batch rule (batch 1, batches, rule text, rf = voting members, available, aggressive, plan) as the
      rolling_batch lookup gives it.
  returned: with O(plan), when healthy
  type: dict
stopped:
  description: C(cluster not ready) when the set is not healthy.
  returned: when not healthy
  type: str
touched:
  description: Whether a member was changed before the set was found unhealthy (O(after_change)).
  returned: when not healthy
  type: bool
left:
  description: What the member changed last was left on (with O(after_change)).
  returned: when not healthy after a change
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.apply import guards, mongodb_roll
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import (
    any_store_argument_spec,
    fail_imports,
)
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import client as mongodb


def main():
    module = AnsibleModule(
        argument_spec=dict(
            **any_store_argument_spec(),
            nodes=dict(type="list", elements="str", required=True),
            max_lag_s=dict(type="float", default=10.0),
            wait_timeout=dict(type="float", default=0.0),
            interval=dict(type="float", default=1.0),
            plan=dict(type="bool", default=True),
            aggressive=dict(type="bool", default=False),
            after_change=dict(type="bool", default=False),
            fail_when_unhealthy=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    fail_imports(module, mongodb.missing_libraries())
    params = module.params
    try:
        check = mongodb_roll.check_replica_set(
            [mongodb.params_from_any(params, node) for node in params["nodes"]],
            mongodb.connect,
            params["nodes"],
            params["max_lag_s"],
            params["wait_timeout"],
            interval_s=params["interval"],
            plan=params["plan"],
            aggressive=params["aggressive"],
        )
    except guards.ClusterNotReady as exc:
        result = dict(changed=False, healthy=False, stopped=exc.kind, touched=params["after_change"], **exc.seen)
        if params["after_change"]:
            result["left"] = "on the new configuration; the replica set did not become healthy after it"
        if params["fail_when_unhealthy"]:
            module.fail_json(msg=str(exc), **result)
        module.exit_json(**result)
    except TacticianError as exc:
        module.fail_json(msg=str(exc), changed=False, healthy=False, **exc.report())
    for warning in check.pop("warnings", []):
        module.warn(warning)
    module.exit_json(changed=False, **check)


if __name__ == "__main__":
    main()
