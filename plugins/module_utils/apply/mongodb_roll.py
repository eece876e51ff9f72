# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""A rolling change of a MongoDB replica set: the order and the batch, and the checks before and after each member.

- ``roll_plan``: one member at a time (a set of N voting members keeps its majority N // 2 + 1, so a primary,
  while one member is down only when N >= 3), the secondaries (and arbiters) first in the inventory's order, the
  primary last. A set of fewer than 3 voting members, a standalone mongod (no redundancy: R = 1 - 1 = 0, as for
  the other stores) and a mongos are refused unless aggressive.
- ``wait_healthy``: every member PRIMARY, SECONDARY or ARBITER, one primary, every secondary's replication lag at
  most max_lag_s; waited for up to max_wait_s, then guards.ClusterNotReady (the roll stops, the set untouched by
  this step and available).
- ``wait_new_primary``: after the primary stepped down, another member elected before the old one is touched.

The replies are read by stores/mongodb/replset.py; this module only judges, orders and waits, so it runs on fakes.
"""

from __future__ import annotations

import time

from ansible_collections.tactician.nosql.plugins.module_utils.apply.guards import ClusterNotReady
from ansible_collections.tactician.nosql.plugins.module_utils.core import checks
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import ApplyError
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import replset

DEFAULT_MAX_LAG_S = 10.0
MIN_VOTING_MEMBERS = 3
_AGGRESSIVE = "set aggressive: true (tactician_aggressive=true for playbooks/rolling_reconfigure.yml) to accept it"


class MongoRollError(ApplyError, ValueError):
    """The roll is refused or its input is wrong; the message names the field and the allowed values."""


def check_limits(max_lag_s, max_wait_s, interval_s=1.0):
    """The roll's limits as floats, or MongoRollError naming the field and what is allowed."""
    return (
        checks.number("max_lag_s", max_lag_s, MongoRollError, above=0.0),
        checks.number("max_wait_s", max_wait_s, MongoRollError, minimum=0.0),
        checks.number("interval_s", interval_s, MongoRollError, above=0.0),
    )


def _address(node):
    """'host:port' of a node given as 'host[:port]' (27017 by default); MongoRollError for anything else."""
    if not isinstance(node, str) or not node.strip():
        raise MongoRollError("nodes: %r is not a host:port string (allowed: 'host' or 'host:port')" % (node,))
    host, _sep, port = node.strip().rpartition(":") if ":" in node else (node.strip(), "", "27017")
    if not port.isdigit():
        raise MongoRollError("nodes: %r has no numeric port (allowed: 'host' or 'host:port')" % (node,))
    return "%s:%d" % (host, int(port))


def roll_plan(view, nodes, aggressive=False):
    """The order and the batch rule of a roll of nodes (the inventory's members, 'host:port') over the deployment
    view (replset.view_from_replies). Returns dict(order, kind, rule, batch, serial, batches, rf, rf_source, cl,
    replicas_needed, nodes, available, aggressive, plan, warnings) in the shape of the rolling_batch lookup's rule.
    Refusals raise MongoRollError naming the field (aggressive, nodes)."""
    if not isinstance(nodes, (list, tuple)) or not nodes:
        raise MongoRollError("nodes: give the members to roll as a non-empty list of 'host:port'")
    addresses = [_address(node) for node in nodes]
    aggressive = bool(aggressive)
    kind = view["kind"]
    warnings = []
    if kind == "mongos":
        raise MongoRollError(
            "nodes: %s is a mongos (a router holding no data); roll each shard's replica set as its own inventory"
            " group, and the mongos routers with a service restart of their own" % addresses[0]
        )
    if kind == "standalone":
        if not aggressive:
            raise MongoRollError(
                "aggressive: %s is a standalone mongod (hello has no setName): it has no redundancy, R = RF - CL ="
                " 1 - 1 = 0 as for the other stores, and a change that restarts it makes its data unavailable until"
                " it is back. Make it a replica set of at least %d voting members, or %s"
                % (", ".join(addresses), MIN_VOTING_MEMBERS, _AGGRESSIVE)
            )
        order = addresses
        rule = (
            "standalone mongod: no redundancy, R = 1 - 1 = 0; aggressive: 1 node at a time, unavailable while it"
            " restarts"
        )
        return _rule(order, kind, rule, 1, "standalone", 1, available=False, aggressive=True, warnings=warnings)
    members = [m["name"] for m in view["members"]]
    strangers = [a for a in addresses if a not in members]
    if strangers:
        raise MongoRollError(
            "nodes: %s %s not a member of replica set %s (its members, as replSetGetStatus names them: %s); give the"
            " inventory's address as the set's configuration names it (tactician_node_address, tactician_node_port)"
            % (", ".join(strangers), "is" if len(strangers) == 1 else "are", view["set_name"], ", ".join(members))
        )
    voting = int(view["voting_members"])
    majority = voting // 2 + 1
    available = voting - 1 >= majority
    if not available and not aggressive:
        raise MongoRollError(
            "aggressive: replica set %s has %d voting member%s (%s); with one member down a majority of %d cannot"
            " remain, so the set would lose its primary (no writes) during the roll. A rolling change needs at least"
            " %d voting members; add members, or %s"
            % (
                view["set_name"],
                voting,
                "" if voting == 1 else "s",
                view["voting_source"],
                majority,
                MIN_VOTING_MEMBERS,
                _AGGRESSIVE,
            )
        )
    if view["primary"] is None:
        raise MongoRollError(
            "nodes: replica set %s has no primary (%s) to order the roll by; wait for an election, or repair the set"
            % (view["set_name"], ", ".join("%s %s" % (m["name"], m["state"]) for m in view["members"]))
        )
    states = {m["name"]: m["state"] for m in view["members"]}
    if any(state == "ARBITER" for state in states.values()):
        warnings.append(
            "replica set %s has an arbiter: while a data-bearing member restarts, writes with w: majority may wait"
            " until it is back (an arbiter votes but acknowledges no write)" % view["set_name"]
        )
    order = [a for a in addresses if a != view["primary"]] + [a for a in addresses if a == view["primary"]]
    rule = (
        "one member at a time: %d voting members keep a majority of %d with one down; secondaries first, the"
        " primary %s last (stepped down first)" % (voting, majority, view["primary"])
        if view["primary"] in addresses
        else "one member at a time: %d voting members keep a majority of %d with one down; the primary %s is not"
        " rolled" % (voting, majority, view["primary"])
    )
    if not available:
        rule += "; aggressive: the set has no majority while a member is down"
    return _rule(order, kind, rule, voting, view["voting_source"], majority, available, aggressive, warnings)


def _rule(order, kind, rule, rf, source, needed, available, aggressive, warnings):
    return dict(
        order=order,
        kind=kind,
        rule=rule,
        batch=1,
        serial=1,
        batches=len(order),
        rf=rf,
        rf_source=source,
        cl="MAJORITY",
        replicas_needed=needed,
        nodes=len(order),
        available=available,
        aggressive=aggressive,
        plan=[[node] for node in order],
        warnings=warnings,
    )


def summary(view):
    """The view as a report: {set_name, kind, primary, voting_members, members: {name: "STATE lag N s"}}."""
    members = {}
    for member in view.get("members") or []:
        text = member["state"] if member["health"] >= 1 else "%s (unreachable)" % member["state"]
        if member["lag_s"] is not None and member["state"] == "SECONDARY":
            text += ", lag %.1f s" % member["lag_s"]
        members[member["name"]] = text
    return dict(
        kind=view["kind"],
        set_name=view.get("set_name"),
        primary=view.get("primary"),
        voting_members=view.get("voting_members"),
        members=members,
    )


def wait_healthy(read_view, max_lag_s, max_wait_s, what, interval_s=1.0, clock=time.monotonic, sleep=time.sleep):
    """Wait until the replica set is healthy (replset.set_problems is empty) for at most max_wait_s.

    read_view() -> a view (replset.view_from_replies); an exception while reading counts as a problem (the member
    asked is restarting, or unreachable). Returns dict(view, summary, waited_s, problems_seen); raises
    ClusterNotReady (kind "cluster not ready") naming the problems when they remain after max_wait_s."""
    max_lag_s, max_wait_s, interval_s = check_limits(max_lag_s, max_wait_s, interval_s)
    start = clock()
    seen = []
    while True:
        view = None
        try:
            view = read_view()
            problems = replset.set_problems(view, max_lag_s)
        except Exception as exc:  # a member restarting refuses connections; waited for like any other problem
            problems = ["the replica set's status could not be read: %s" % str(exc).splitlines()[0][:300]]
        waited = round(clock() - start, 3)
        if not problems:
            return dict(view=view, summary=summary(view), waited_s=waited, problems_seen=seen)
        if not seen or seen[-1] != problems:
            seen.append(problems)
        if waited >= max_wait_s:
            raise ClusterNotReady(
                "%s: the replica set is not healthy after %.0f s (max_wait_s %.0f): %s"
                % (what, waited, max_wait_s, "; ".join(problems)),
                dict(replica_set=summary(view) if view else None, problems=problems, waited_s=waited),
            )
        sleep(interval_s)


def wait_new_primary(read_view, old_primary, max_wait_s, interval_s=1.0, clock=time.monotonic, sleep=time.sleep):
    """After old_primary stepped down: wait until another member is the set's one primary. Returns its name;
    raises ClusterNotReady (kind "failover") when none is elected within max_wait_s."""
    start = clock()
    last = None
    while True:
        try:
            view = read_view()
            last = view
            primaries = view.get("primaries") or []
            if len(primaries) == 1 and primaries[0] != old_primary:
                return primaries[0]
        except Exception:
            pass
        if clock() - start >= max_wait_s:
            raise ClusterNotReady(
                "%s stepped down but no other member was elected primary within %.0f s (%s); it is not stopped"
                % (old_primary, max_wait_s, summary(last)["members"] if last else "the set's status could not be read"),
                dict(replica_set=summary(last) if last else None),
                kind="failover",
            )
        sleep(interval_s)


def check_replica_set(
    connections,
    connect,
    nodes,
    max_lag_s,
    wait_s,
    interval_s=1.0,
    plan=True,
    aggressive=False,
    clock=time.monotonic,
    sleep=time.sleep,
):
    """What module mongodb_replica_set returns: the set healthy (wait_healthy, reading the first of connections
    that answers), then with plan the roll's order and rule (roll_plan). Raises ClusterNotReady when not healthy
    after wait_s, MongoRollError for a refused roll or bad input."""

    def read():
        return replset.read_first(connections, connect)

    seen = wait_healthy(read, max_lag_s, wait_s, "the check", interval_s=interval_s, clock=clock, sleep=sleep)
    result = dict(healthy=True, problems=[], replica_set=seen["summary"], waited_s=seen["waited_s"], warnings=[])
    if plan:
        rule = roll_plan(seen["view"], nodes, aggressive)
        result["order"] = rule.pop("order")
        result["warnings"] = rule.pop("warnings")
        result["rule"] = rule
    return result
