# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Replicas a consistency level needs, and the batch rule of a rolling change: how many nodes may be down at once.

Standard library only: this file is shipped to managed nodes. Planning (what a roll costs) and applying (the roll
itself) both read the rule here, so they cannot disagree.

A request at consistency level CL needs CL replicas of its record. With replication factor RF, every record keeps
at least RF - R replicas while any R nodes are down, so the data stays available at CL as long as R = RF - CL
nodes (or fewer) restart together. When the cluster is split into complete-sets (each set holds every record
exactly once, for example one rack per replica), a whole set may go down at once and R = count(sets) - CL sets
restart together. R < 1 means no node can restart without making CL unavailable: the rule refuses, unless the
aggressive variant is asked for, which restarts a larger batch (all nodes by default) and accepts the
unavailability. Bad input raises ReplicationError naming the field.
"""

from __future__ import annotations

import math

from ansible_collections.tactician.nosql.plugins.module_utils.core import checks
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import CoreError


class ReplicationError(CoreError, ValueError):
    """Bad input for the batch rule or the lock, or a lock held by someone else. The message names the field."""


CONSISTENCY_LEVELS = ("ONE", "TWO", "THREE", "QUORUM", "LOCAL_QUORUM", "EACH_QUORUM", "ALL")
# Other names clients use, and the level whose replica count they need.
CONSISTENCY_ALIASES = {
    "LOCAL_ONE": "ONE",  # one replica, of the local data center
    "SERIAL": "QUORUM",  # Paxos needs a quorum of all replicas
    "LOCAL_SERIAL": "LOCAL_QUORUM",  # Paxos within the local data center
}
# Levels counted against the replication factor of one data center rather than all replicas.
LOCAL_LEVELS = ("LOCAL_ONE", "LOCAL_QUORUM", "LOCAL_SERIAL", "EACH_QUORUM")
ALLOWED_LEVELS = CONSISTENCY_LEVELS + tuple(CONSISTENCY_ALIASES)

_ANY_REFUSED = (
    "cl: ANY is refused for a rolling reconfiguration: ANY only applies to writes and accepts a write that no"
    " replica has stored (a hint kept by the coordinator), so it bounds neither how many nodes may be down nor"
    " whether reads find the data; give the consistency level the clients read and write with, one of %s or a"
    " number of replicas" % ", ".join(ALLOWED_LEVELS)
)


def _whole(value, field, minimum=1):
    """value as an int >= minimum (ints and digit strings); ReplicationError naming field otherwise."""
    return checks.whole(field, value, ReplicationError, minimum)


def _replication(rf):
    """rf as (total, {dc: n} or None)."""
    if isinstance(rf, dict):
        if not rf:
            raise ReplicationError("rf: the map of replicas per data center is empty; give {dc: replicas, ...}")
        per_dc = {str(dc): _whole(count, "rf[%s]" % dc) for dc, count in rf.items()}
        return sum(per_dc.values()), per_dc
    return _whole(rf, "rf"), None


def _local_rf(per_dc, total, local_dc):
    """The replication factor of the local data center and its name (None for a single number)."""
    if per_dc is None:
        return total, None
    if local_dc is None:
        dc = min(sorted(per_dc), key=lambda name: per_dc[name])
        return per_dc[dc], dc
    if str(local_dc) not in per_dc:
        raise ReplicationError(
            "local_dc: %r is not a data center of rf; allowed: %s" % (local_dc, ", ".join(sorted(per_dc)))
        )
    return per_dc[str(local_dc)], str(local_dc)


def _level(cl):
    """cl as (name, explicit replica count or None): a known name (case-insensitive) or a positive number."""
    if isinstance(cl, bool) or cl is None:
        raise ReplicationError(
            "cl: %r is not a consistency level; allowed: %s or a number" % (cl, ", ".join(ALLOWED_LEVELS))
        )
    if isinstance(cl, int) or (isinstance(cl, str) and cl.strip().isdigit()):
        count = _whole(cl, "cl")
        return str(count), count
    if not isinstance(cl, str):
        raise ReplicationError(
            "cl: %r is not a consistency level; allowed: %s or a number" % (cl, ", ".join(ALLOWED_LEVELS))
        )
    name = cl.strip().upper()
    if name == "ANY":
        raise ReplicationError(_ANY_REFUSED)
    if name not in ALLOWED_LEVELS:
        raise ReplicationError(
            "cl: %r is not a consistency level; allowed: %s or a number" % (cl, ", ".join(ALLOWED_LEVELS))
        )
    return name, None


def _requirement(cl, rf, local_dc=None):
    """What cl needs of rf: dict(cl, needed, rf_used, dc, rf_total)."""
    name, count = _level(cl)
    total, per_dc = _replication(rf)
    dc = None
    if name in LOCAL_LEVELS:
        rf_used, dc = _local_rf(per_dc, total, local_dc)
    else:
        rf_used = total
    base = CONSISTENCY_ALIASES.get(name, name)
    if count is not None:
        needed = count
    elif base in ("ONE", "TWO", "THREE"):
        needed = CONSISTENCY_LEVELS.index(base) + 1
    elif base in ("QUORUM", "LOCAL_QUORUM", "EACH_QUORUM"):
        needed = rf_used // 2 + 1
    else:  # ALL
        needed = rf_used
    if needed > rf_used:
        where = " in data center %s" % dc if dc else ""
        raise ReplicationError(
            "cl: %s needs %d replicas but the replication factor%s is %d; lower the consistency level (allowed: %s"
            " or a number up to %d) or raise the replication factor"
            % (name, needed, where, rf_used, ", ".join(ALLOWED_LEVELS), rf_used)
        )
    return dict(cl=name, needed=needed, rf_used=rf_used, dc=dc, rf_total=total)


def replicas_needed(cl, rf, local_dc=None):
    """How many replicas of a record a request at consistency level cl needs, with replication factor rf.

    cl: a name of ALLOWED_LEVELS (any case) or a positive number (int or digit string). rf: an int, or a dict
    {dc: replicas}; QUORUM and ALL count every replica, the LOCAL_* levels and EACH_QUORUM the replicas of
    local_dc (default: the data center with the fewest replicas, the one that keeps a quorum the hardest).
    ANY is refused. More replicas than rf -> ReplicationError."""
    return _requirement(cl, rf, local_dc)["needed"]


def _node_count(nodes):
    if isinstance(nodes, (list, tuple)):
        if not nodes:
            raise ReplicationError("nodes: the list of hosts to roll is empty; give at least one host")
        return len(nodes), list(nodes)
    return _whole(nodes, "nodes"), None


def batch_rule(
    rf,
    cl,
    nodes,
    sets=None,
    nodes_per_set=None,
    aggressive=False,
    aggressive_batch=None,
    local_dc=None,
):
    """How many nodes to restart at once so the data stays available at consistency level cl.

    nodes: the number of nodes to roll, or the list of their host names. sets: the number of complete-sets (each
    holds every record exactly once), nodes_per_set their size (default nodes // sets). R < 1 raises ReplicationError
    unless aggressive, which takes aggressive_batch nodes (default all) per batch and reports available=False.
    aggressive with aggressive_batch larger than the safe batch also takes aggressive_batch.

    Returns dict(batch, batches, rule, rf, cl, replicas_needed, nodes, sets, nodes_per_set, batch_sets,
    aggressive, available, serial, plan): batch and serial are the nodes per batch, plan the host names per
    batch when nodes is a list (else None)."""
    count, hosts = _node_count(nodes)
    aggressive = bool(aggressive)
    if aggressive_batch is not None:
        aggressive_batch = _whole(aggressive_batch, "aggressive_batch")
        if not aggressive:
            raise ReplicationError("aggressive_batch: only used with aggressive: true (it accepts unavailability)")
        if aggressive_batch > count:
            raise ReplicationError(
                "aggressive_batch: %d is more than the %d nodes to roll; allowed: 1 to %d"
                % (aggressive_batch, count, count)
            )
    if sets is not None:
        sets = _whole(sets, "sets")
        if rf is None:
            rf = sets
        if isinstance(rf, dict):
            raise ReplicationError("rf: with complete-sets give the replication factor as one number (it equals sets)")
    req = _requirement(cl, rf, local_dc)
    rf_name = "RF(%s)" % req["dc"] if req["dc"] else "RF"

    batch_sets = None
    if sets is None:
        safe = req["rf_used"] - req["needed"]
        rule = "R = %s - CL = %d - %d = %d" % (rf_name, req["rf_used"], req["needed"], safe)
        safe_batch = min(safe, count) if safe >= 1 else 0
    else:
        if req["rf_used"] != sets:
            raise ReplicationError(
                "sets: %d complete-sets but the replication factor is %d; each complete-set holds every record once,"
                " so sets must equal the replication factor" % (sets, req["rf_used"])
            )
        if nodes_per_set is None:
            if count % sets:
                raise ReplicationError(
                    "nodes_per_set: %d nodes do not split into %d complete-sets of equal size; give nodes_per_set"
                    % (count, sets)
                )
            nodes_per_set = count // sets
        else:
            nodes_per_set = _whole(nodes_per_set, "nodes_per_set")
        safe = sets - req["needed"]
        if safe >= 1:
            batch_sets = safe
            safe_batch = min(safe * nodes_per_set, count)
            rule = "R = count(sets) - CL = %d - %d = %d %s of %d %s = %d nodes" % (
                sets,
                req["needed"],
                safe,
                "set" if safe == 1 else "sets",
                nodes_per_set,
                "node" if nodes_per_set == 1 else "nodes",
                safe * nodes_per_set,
            )
        else:
            safe_batch = 0
            rule = "R = count(sets) - CL = %d - %d = %d" % (sets, req["needed"], safe)

    if safe_batch < 1 and not aggressive:
        raise ReplicationError(
            "cl: %s: restarting any node would make CL %s unavailable (it needs %d of %d replicas); lower the"
            " consistency level, raise the replication factor, or set aggressive: true to accept unavailability"
            % (rule, req["cl"], req["needed"], req["rf_used"])
        )
    used_aggressive = False
    batch = safe_batch
    if aggressive and (safe_batch < 1 or (aggressive_batch is not None and aggressive_batch > safe_batch)):
        used_aggressive = True
        batch = aggressive_batch or count
        batch_sets = None
        rule += "; aggressive: %d of %d nodes at a time, CL %s unavailable during the roll" % (batch, count, req["cl"])
    return dict(
        batch=batch,
        batches=int(math.ceil(count / batch)),
        rule=rule,
        rf=rf,
        cl=req["cl"],
        replicas_needed=req["needed"],
        nodes=count,
        sets=sets,
        nodes_per_set=nodes_per_set,
        batch_sets=batch_sets,
        local_dc=req["dc"],
        aggressive=used_aggressive,
        available=not used_aggressive,
        serial=batch,
        plan=batches(hosts, batch) if hosts is not None else None,
    )


def batches(hosts, batch):
    """hosts in their order, in chunks of batch (the last one may be shorter)."""
    batch = _whole(batch, "batch")
    hosts = list(hosts)
    return [hosts[start : start + batch] for start in range(0, len(hosts), batch)]


def redis_replication_factor(shards):
    """The replication factor of a Redis cluster: 1 + the fewest replicas any shard has.

    shards: a list of {master, replicas: [...]}."""
    if not shards:
        raise ReplicationError("shards: no shard given; give a list of {master, replicas: [...]}")
    fewest = None
    for index, shard in enumerate(shards):
        if not isinstance(shard, dict):
            raise ReplicationError("shards[%d]: %r is not a mapping {master, replicas: [...]}" % (index, shard))
        replicas = shard.get("replicas") or []
        if not isinstance(replicas, (list, tuple)):
            raise ReplicationError("shards[%d].replicas: %r is not a list" % (index, replicas))
        fewest = len(replicas) if fewest is None else min(fewest, len(replicas))
    return 1 + fewest


REPLICATION_STORES = ("cassandra", "redis", "mongodb")
REPLICATION_VARIABLES = (
    "tactician_replication_factor",
    "tactician_cassandra_replication_factor",
    "tactician_redis_replicas",
)
"""The inventory variables cluster_replication reads, in its order of precedence."""
DEFAULT_REPLICATION_FACTOR = 3
DEFAULT_REDIS_REPLICAS = 1


def _lookup_variable(facts, name):
    """The first value of name in facts (a list of mappings searched in order), or None."""
    for mapping in facts:
        value = mapping.get(name)
        if value is not None:
            return value
    return None


def cluster_replication(store, facts):
    """The replication factor of a cluster from its inventory variables: dict(rf, source).

    facts: the variables, a mapping or a list of mappings searched in order (for example the first node's
    variables, then the play's); the first that gives a variable (not null) wins. One precedence for every
    playbook:

    1. ``tactician_replication_factor`` - the explicit override, any store: a number or {dc: replicas};
    2. Cassandra: ``tactician_cassandra_replication_factor`` (the keyspace the clients use);
       Redis: 1 + ``tactician_redis_replicas`` (replicas per master);
    3. the default: 3 for Cassandra and MongoDB; Redis 1 + 1 replica per master = 2.

    source names the variable the value came from (or the default). A value that is no whole number >= 1
    (replicas >= 0) raises ReplicationError naming the variable."""
    if store not in REPLICATION_STORES:
        raise ReplicationError("store: %r is not allowed; choose one of %s" % (store, ", ".join(REPLICATION_STORES)))
    facts = [facts] if hasattr(facts, "get") or facts is None else list(facts)
    facts = [mapping for mapping in facts if mapping is not None]
    for index, mapping in enumerate(facts):
        if not hasattr(mapping, "get"):
            raise ReplicationError("facts[%d]: %r is not a mapping of variables" % (index, mapping))
    override = _lookup_variable(facts, "tactician_replication_factor")
    if override is not None:
        if isinstance(override, dict):
            if not override:
                raise ReplicationError(
                    "tactician_replication_factor: the map of replicas per data center is empty; give a number or"
                    " {dc: replicas, ...}"
                )
            rf = {str(dc): _whole(n, "tactician_replication_factor[%s]" % dc) for dc, n in override.items()}
        else:
            rf = _whole(override, "tactician_replication_factor")
        return dict(rf=rf, source="tactician_replication_factor")
    if store == "cassandra":
        value = _lookup_variable(facts, "tactician_cassandra_replication_factor")
        if value is not None:
            return dict(
                rf=_whole(value, "tactician_cassandra_replication_factor"),
                source="tactician_cassandra_replication_factor",
            )
    if store == "redis":
        value = _lookup_variable(facts, "tactician_redis_replicas")
        if value is not None:
            return dict(
                rf=_whole(value, "tactician_redis_replicas", minimum=0) + 1, source="tactician_redis_replicas + 1"
            )
        return dict(
            rf=DEFAULT_REDIS_REPLICAS + 1,
            source="default: 1 + %d replica per master (tactician_redis_replicas not set)" % DEFAULT_REDIS_REPLICAS,
        )
    return dict(
        rf=DEFAULT_REPLICATION_FACTOR,
        source="default %d (tactician_replication_factor%s not set)"
        % (DEFAULT_REPLICATION_FACTOR, ", tactician_cassandra_replication_factor" if store == "cassandra" else ""),
    )
