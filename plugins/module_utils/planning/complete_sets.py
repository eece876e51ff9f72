# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Complete-sets of a cluster (seed 002, OptimusCloud) and the roll of a switch between set assignments.

- Complete-sets: the minimal sets of nodes whose data covers every record once. Cassandra: from the token ring
  and the replication factor (each range is held by its owner and the next RF - 1 distinct nodes clockwise), the
  nodes are partitioned greedily into disjoint covers; Redis: one member of every shard per set (the masters,
  then the first replicas, ...). Their count is about RF, whatever the cluster's size, so rolling at most
  count(sets) - CL sets at a time takes constant time.
- ``set_layouts``: the roll of a switch between two assignments (a VM type and a configuration per set), for
  planner.Timeline: only the sets that change go down, count(sets) - CL at a time, each batch t_down seconds (30 s
  for a DB configuration, 90 s for a VM type, the paper's measured averages, unless given).

The VM catalog and the perf/$ search over assignments are in vm_types.py.
"""

from __future__ import annotations

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError

DEFAULT_T_DOWN_CONFIG_S = 30.0
DEFAULT_T_DOWN_VM_S = 90.0


class HeteroError(PlanningError, ValueError):
    """Bad input to the heterogeneous planner (complete-sets, VM catalog, assignments); the message names the field
    and what is allowed."""


# ------------------------------------------------------------------------------------------------ complete-sets
def cassandra_replicas(tokens, rf):
    """[(range end token, frozenset of replica nodes)] of a ring: tokens = {node: [token, ...]}, SimpleStrategy
    (or one data centre of NetworkTopologyStrategy) with replication factor rf."""
    if not isinstance(tokens, dict) or not tokens:
        raise HeteroError("tokens: expected {node: [token, ...]} with at least one node")
    ring = []
    for node, values in tokens.items():
        if isinstance(values, (int, str)):
            values = [values]
        for value in values:
            try:
                ring.append((int(value), node))
            except (TypeError, ValueError):
                raise HeteroError("tokens.%s: %r is not a token (an integer)" % (node, value)) from None
    ring.sort()
    nodes = len(tokens)
    if isinstance(rf, bool) or not isinstance(rf, int) or not 1 <= rf <= nodes:
        raise HeteroError("rf: %r is not allowed; choose 1 to %d (the number of nodes)" % (rf, nodes))
    out = []
    for index, (token, owner) in enumerate(ring):
        replicas = [owner]
        step = 1
        while len(replicas) < rf:
            candidate = ring[(index + step) % len(ring)][1]
            if candidate not in replicas:
                replicas.append(candidate)
            step += 1
        out.append((token, frozenset(replicas)))
    return out


def complete_sets(replicas, nodes=None, max_steps=200_000):
    """Partition nodes into the most disjoint complete-sets: k groups such that every range has a replica in each
    group (a colouring of the replica sets with every colour in each), searched by backtracking for k = the
    largest replica count down to 2; when no such k exists (random vnodes may allow none), the whole cluster is
    one set. Returns [[node, ...], ...] sorted."""
    ranges = [sorted(holders) for _token, holders in replicas]
    if not ranges:
        raise HeteroError("replicas: the ring has no ranges")
    everyone = sorted(set(nodes) if nodes is not None else set().union(*map(set, ranges)))
    for k in range(max(len(r) for r in ranges), 1, -1):
        colouring = _colour(everyone, ranges, k, max_steps)
        if colouring is not None:
            sets = [sorted(n for n in everyone if colouring[n] == c) for c in range(k)]
            return sorted(s for s in sets if s)
    return [everyone]


def _colour(nodes, ranges, k, max_steps):
    """A colouring of nodes with k colours where each range holds every colour, or None."""
    if any(len(r) < k for r in ranges):
        return None
    holders = {n: [i for i, r in enumerate(ranges) if n in r] for n in nodes}
    order = sorted(nodes, key=lambda n: -len(holders[n]))
    colour = {}
    steps = [0]

    def feasible(node):
        for i in holders[node]:
            members = ranges[i]
            seen = {colour[m] for m in members if m in colour}
            unassigned = sum(1 for m in members if m not in colour)
            if k - len(seen) > unassigned:
                return False
        return True

    def search(position):
        steps[0] += 1
        if steps[0] > max_steps:
            return False
        if position == len(order):
            return True
        node = order[position]
        # Symmetry: the first node takes colour 0; a node never opens a colour beyond the next unused one.
        used = max(colour.values(), default=-1)
        for c in range(min(k, used + 2)):
            colour[node] = c
            if feasible(node) and search(position + 1):
                return True
            del colour[node]
        return False

    return dict(colour) if search(0) else None


def redis_complete_sets(shards):
    """Complete-sets of a Redis cluster: shards = [{"master": node, "replicas": [node, ...]}, ...]; set i holds
    member i of every shard (the masters first). Their count is the smallest shard's size (1 + replicas)."""
    if not isinstance(shards, (list, tuple)) or not shards:
        raise HeteroError("shards: expected a list of {master, replicas}")
    members = []
    for index, shard in enumerate(shards):
        if not isinstance(shard, dict) or not shard.get("master"):
            raise HeteroError("shards[%d]: expected {master, replicas}" % index)
        members.append([shard["master"], *sorted(shard.get("replicas") or [])])
    count = min(len(m) for m in members)
    return [[m[i] for m in members] for i in range(count)]


# ------------------------------------------------------------------------------------------------ rolls
def set_layouts(assignments, sizes, batch_sets, t_config_s=DEFAULT_T_DOWN_CONFIG_S, t_vm_s=DEFAULT_T_DOWN_VM_S):
    """layouts(a, b) for planner.Timeline over candidate assignments: the sets whose VM type or configuration
    differ go down batch_sets at a time (t_vm_s when a VM type changes in the batch, else t_config_s); the node
    shares online on the old and the new assignment during each batch."""
    total = float(sum(sizes))

    def layouts(a, b):
        changed = [p for p in range(len(sizes)) if tuple(assignments[a][p]) != tuple(assignments[b][p])]
        layout = []
        t = 0.0
        done = 0
        for start in range(0, len(changed), batch_sets):
            batch = changed[start : start + batch_sets]
            down = sum(sizes[p] for p in batch)
            vm_change = any(assignments[a][p][0] != assignments[b][p][0] for p in batch)
            length = t_vm_s if vm_change else t_config_s
            old = total - done - down
            layout.append((t, t + length, old / total, done / total))
            done += down
            t += length
        return layout, t

    return layouts
