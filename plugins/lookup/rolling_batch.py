# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
name: rolling_batch
short_description: How many nodes a rolling reconfiguration may restart at once
description:
  - Applies the batch rule R = RF - CL. A request at consistency level CL needs CL replicas of its record; with
    replication factor RF the data stays available at CL while at most RF - CL nodes are down, so a roll
    restarts R nodes per batch.
  - With complete-sets (O(sets) groups of nodes, each holding every record once, for example one rack per
    replica) whole sets restart together, R = count(sets) - CL sets per batch.
  - When R is below 1 (for example RF 3 with CL V(ALL)) the lookup fails with the reason, unless O(aggressive)
    is set, which restarts O(aggressive_batch) nodes (all by default) per batch and accepts that CL is
    unavailable during the roll.
  - Without O(rf), O(store) names the store and the replication factor comes from the inventory, by one
    precedence every playbook shares - C(tactician_replication_factor) (the explicit override, a number or a
    dictionary of replicas per data center); then for Cassandra C(tactician_cassandra_replication_factor), for Redis 1 +
    C(tactician_redis_replicas); then the default, 3 (Redis 2, one replica per master). Each variable is looked
    for in the variables of the first host of O(nodes) (when it is an inventory host), then in the play's.
    RV(_raw.rf_source) names where the value came from.
  - Returns one element, the rule as a dictionary. C(lookup) gives the dictionary itself; C(query) or
    C(wantlist=true) a list holding it. Use its C(serial) as the C(serial) of the rolling play.
  - Takes no terms.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  rf:
    description:
      - "The replication factor, a number, or the replicas per data center as a dictionary such as
        C({dc1: 3, dc2: 3})."
      - With a dictionary, V(QUORUM), V(ALL) and the numbered levels count every replica; V(LOCAL_QUORUM),
        V(LOCAL_ONE), V(LOCAL_SERIAL) and V(EACH_QUORUM) count the replicas of O(local_dc).
      - With O(sets) it may be left out (it equals O(sets)).
      - Left out, O(store) derives it from the inventory.
    type: raw
  store:
    description:
      - The store of the cluster; without O(rf), its replication factor is read from the inventory variables
        (see the description).
    type: str
    choices: [cassandra, redis, mongodb]
  cl:
    description:
      - The consistency level the clients use, any case, or a number of replicas.
      - V(ONE), V(TWO), V(THREE), V(QUORUM), V(LOCAL_QUORUM), V(EACH_QUORUM), V(ALL); also V(LOCAL_ONE),
        V(SERIAL) (as V(QUORUM)) and V(LOCAL_SERIAL) (as V(LOCAL_QUORUM)).
      - V(ANY) is refused, it only applies to writes and gives no bound on how many nodes may be down.
    type: str
    required: true
  nodes:
    description: The nodes to roll, a number or the list of their host names.
    type: raw
    required: true
  sets:
    description: The number of complete-sets; it must equal the replication factor.
    type: int
  nodes_per_set:
    description:
      - Nodes in each complete-set. Defaults to the number of nodes divided by O(sets), which must divide evenly.
      - The hosts must be ordered set by set for the batches to follow the sets.
    type: int
  aggressive:
    description:
      - Accept unavailability. When R is below 1 the batch becomes O(aggressive_batch) nodes, all by default,
        instead of a failure; with O(aggressive_batch) larger than the safe batch that batch is used.
      - The result then has C(aggressive=true) and C(available=false).
    type: bool
    default: false
  aggressive_batch:
    description: Nodes per batch of the aggressive variant, from 1 to the number of nodes. Needs O(aggressive).
    type: int
  local_dc:
    description:
      - The local data center when O(rf) is a dictionary; defaults to the one with the fewest replicas (the
        strictest).
    type: str
"""

EXAMPLES = r"""
- name: Batch for RF 3 at QUORUM (one node at a time)
  ansible.builtin.set_fact:
    roll: "{{ lookup('tactician.nosql.rolling_batch', rf=3, cl='QUORUM', nodes=groups['cassandra']) }}"

- name: Three complete-sets of two nodes at ONE (two sets, four nodes at a time)
  ansible.builtin.debug:
    msg: "{{ lookup('tactician.nosql.rolling_batch', rf=3, cl='ONE', nodes=6, sets=3) }}"

- name: Two data centers, LOCAL_QUORUM in dc1
  ansible.builtin.debug:
    msg: >-
      {{ lookup('tactician.nosql.rolling_batch', rf={'dc1': 3, 'dc2': 5}, cl='LOCAL_QUORUM', local_dc='dc1',
                nodes=8) }}

- name: RF from the inventory (tactician_cassandra_replication_factor of the first host, or the override)
  ansible.builtin.set_fact:
    roll: "{{ lookup('tactician.nosql.rolling_batch', store='cassandra', cl='QUORUM', nodes=groups['cassandra']) }}"

- name: The list form
  ansible.builtin.debug:
    msg: "{{ query('tactician.nosql.rolling_batch', rf=3, cl='ALL', nodes=3, aggressive=true)[0].rule }}"
"""

RETURN = r"""
_raw:
  description: One element, the batch rule.
  type: list
  elements: dict
  contains:
    batch:
      description: Nodes restarted per batch (1 or more).
      type: int
    serial:
      description: The value for C(serial) of the rolling play (equal to RV(_raw.batch), from 1 to the nodes).
      type: int
    batches:
      description: Number of batches.
      type: int
    rule:
      description: The rule with its numbers.
      type: str
      sample: R = RF - CL = 3 - 1 = 2
    rf:
      description: The replication factor given, or derived from the inventory with O(store).
      type: raw
    rf_source:
      description: Where RV(_raw.rf) came from, C(rf) when given, else the variable (or the default).
      type: str
      sample: tactician_cassandra_replication_factor
    cl:
      description: The consistency level, upper case (or the number as text).
      type: str
    replicas_needed:
      description: Replicas the consistency level needs.
      type: int
    nodes:
      description: Number of nodes to roll.
      type: int
    sets:
      description: Complete-sets, or null.
      type: int
    nodes_per_set:
      description: Nodes per complete-set, or null.
      type: int
    batch_sets:
      description: Complete-sets per batch, or null.
      type: int
    local_dc:
      description: The data center whose replication factor was used, or null.
      type: str
    aggressive:
      description: Whether the aggressive variant set the batch.
      type: bool
    available:
      description: Whether the data stays available at the consistency level during the roll.
      type: bool
    plan:
      description: The host names per batch when O(nodes) is a list, else null.
      type: list
      elements: list
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.tactician.nosql.plugins.module_utils.core.replication import (
    ReplicationError,
    batch_rule,
    cluster_replication,
)

OPTIONS = ("rf", "cl", "nodes", "sets", "nodes_per_set", "aggressive", "aggressive_batch", "local_dc")


def rolling_batch(rf=None, cl=None, nodes=None, store=None, facts=None, **options):
    """The batch rule as the lookup returns it: a list of one dict; errors as AnsibleLookupError.

    Without rf, store and facts (the inventory variables, see cluster_replication) give it."""
    if cl is None or nodes is None:
        raise AnsibleLookupError("rolling_batch: cl and nodes are required")
    source = "rf"
    try:
        if rf is None and store is not None and options.get("sets") is None:
            derived = cluster_replication(store, facts or [])
            rf, source = derived["rf"], derived["source"]
        if rf is None and options.get("sets") is None:
            raise AnsibleLookupError(
                "rolling_batch: rf: give the replication factor (a number or {dc: replicas}), or store to read it"
                " from the inventory"
            )
        rule = batch_rule(rf, cl, nodes, **options)
    except ReplicationError as exc:
        raise AnsibleLookupError("rolling_batch: %s" % exc) from None
    rule["rf_source"] = source if rf is not None else "sets"
    return [rule]


class _Variables:
    """Variables as the playbook sees them: get() templates the value (None when not defined)."""

    def __init__(self, variables, templar):
        self.variables = variables
        self.templar = templar

    def get(self, name):
        if name not in self.variables:
            return None
        value = self.variables[name]
        return self.templar.template(value) if self.templar is not None else value


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        if terms:
            raise AnsibleLookupError("rolling_batch: takes no terms, only options (rf, cl, nodes, ...)")
        self.set_options(var_options=variables, direct=kwargs)
        options = {name: self.get_option(name) for name in OPTIONS}
        options["aggressive"] = bool(options["aggressive"])
        store = self.get_option("store")
        facts = []
        if store is not None and options["rf"] is None:
            variables = variables or {}
            nodes = options["nodes"]
            hostvars = variables.get("hostvars") or {}
            if isinstance(nodes, (list, tuple)) and nodes and isinstance(nodes[0], str) and nodes[0] in hostvars:
                facts.append(_Variables(hostvars[nodes[0]], self._templar))
            facts.append(_Variables(variables, self._templar))
        return rolling_batch(store=store, facts=facts, **options)
