# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Redis Cluster hash slots: who holds which (CLUSTER NODES / SHARDS read into a topology), the moves that give every
master an even share, and one slot's migration.

Slots move one at a time the way Redis documents it: the target is told it is IMPORTING the slot, the source that
it is MIGRATING it, the keys go over in batches (CLUSTER GETKEYSINSLOT + MIGRATE ... KEYS, authenticated with the
connection's ACL user), then both sides and the other masters learn the new owner (CLUSTER SETSLOT ... NODE).
Clients keep working meanwhile: they follow the ASK and MOVED redirections. A run that stops half way through a
slot leaves it MIGRATING/IMPORTING; the next run finishes it before doing anything else.

Plain Python over the adapter (client.py); the planner and the migration take any objects with the attributes they
use, so that they can be tested with fakes. TacticError is the error of the membership tactics too (members.py).
"""

from __future__ import annotations

import copy

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import StoreError
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as adapter

ROLES = ("master", "replica")
STATES = ("present", "absent")
# A cluster formed by this collection has at least this many masters; removing a master never goes below it.
MIN_MASTERS = 3
# MIGRATE's own timeout: the longest the source waits on the target during one batch of keys (milliseconds).
MIGRATE_TIMEOUT_MS = 5000
_FAILED_FLAGS = ("fail", "fail?", "noaddr")


class TacticError(StoreError):
    """The tactic was refused (bad input, unsafe change) or failed; details go into the module's result."""

    def __init__(self, msg, **details):
        super().__init__(msg)
        self.details = details

    def report(self):
        return self.details


def parse_slot_fields(fields):
    """The slot fields of one CLUSTER NODES line -> (owned slots sorted, {slot: node id it is migrating to},
    {slot: node id it is importing from}). The bracketed fields appear only on the line of the node asked."""
    owned, migrating, importing = [], {}, {}
    for field in fields:
        if field.startswith("["):
            body = field.strip("[]")
            if "->-" in body:
                slot, peer = body.split("->-", 1)
                migrating[int(slot)] = peer
            elif "-<-" in body:
                slot, peer = body.split("-<-", 1)
                importing[int(slot)] = peer
            continue
        first, _sep, last = field.partition("-")
        owned.extend(range(int(first), int(last or first) + 1))
    return sorted(owned), migrating, importing


def topology(listed):
    """adapter.cluster_nodes() -> {node id: dict(id, address, role, master_id, slots, migrating, importing, failed,
    myself)}; nodes still in handshake are left out (they have no stable id yet)."""
    topo = {}
    for node in listed:
        flags = node["flags"]
        if "handshake" in flags:
            continue
        owned, migrating, importing = parse_slot_fields(node["slots"])
        replica = "slave" in flags
        topo[node["id"]] = dict(
            id=node["id"],
            address=node["address"],
            role="replica" if replica else "master",
            master_id=node["master_id"] if replica else None,
            slots=owned,
            migrating=migrating,
            importing=importing,
            failed=any(flag in flags for flag in _FAILED_FLAGS),
            myself="myself" in flags,
        )
    return topo


def ranges_of(slots):
    """Sorted slots -> contiguous (first, last) ranges."""
    ranges = []
    for slot in sorted(slots):
        if ranges and slot == ranges[-1][1] + 1:
            ranges[-1][1] = slot
        else:
            ranges.append([slot, slot])
    return [tuple(pair) for pair in ranges]


def format_ranges(slots):
    """Slots as text ranges: ['0-1364', '5461']."""
    return ["%d-%d" % (first, last) if first != last else "%d" % first for first, last in ranges_of(slots)]


def masters_of(topo):
    """The masters that can hold slots: failed masters only when they still hold some (the cluster is then broken
    and the health check before any change refuses to go on)."""
    return [n for n in topo.values() if n["role"] == "master" and (not n["failed"] or n["slots"])]


def replica_counts(topo):
    counts = {n["id"]: 0 for n in masters_of(topo)}
    for node in topo.values():
        if node["role"] == "replica" and node["master_id"] in counts:
            counts[node["master_id"]] += 1
    return counts


def shape(topo):
    """What the diff shows: every master's slots (count and ranges) and every replica's master, by address."""
    masters = {
        n["address"]: dict(slots=len(n["slots"]), ranges=",".join(format_ranges(n["slots"]))) for n in masters_of(topo)
    }
    replicas = {}
    for node in topo.values():
        if node["role"] == "replica":
            master = topo.get(node["master_id"])
            replicas[node["address"]] = master["address"] if master else node["master_id"]
    return dict(masters=dict(sorted(masters.items())), replicas=dict(sorted(replicas.items())))


def slot_counts(topo):
    """{master id: slots held} for the masters that hold any."""
    return {n["id"]: len(n["slots"]) for n in masters_of(topo) if n["slots"]}


def masters_without_replicas(topo):
    """Addresses of the masters holding slots with no replica, when other masters have one (an uneven layout)."""
    counts = replica_counts(topo)
    serving = [n for n in masters_of(topo) if n["slots"]]
    if not any(counts[n["id"]] for n in serving):
        return []
    return sorted(n["address"] for n in serving if counts[n["id"]] == 0)


def even_targets(counts, leaving=()):
    """{master: slots held} -> {master: slots it should hold}: the slots split evenly over the masters that stay;
    the remainder goes to those that hold the most already (fewer moves); masters leaving get 0."""
    staying = sorted((key for key in counts if key not in leaving), key=lambda key: (-counts[key], str(key)))
    if not staying:
        raise TacticError("no master would be left to hold the slots")
    base, extra = divmod(sum(counts.values()), len(staying))
    targets = dict.fromkeys(counts, 0)
    for index, key in enumerate(staying):
        targets[key] = base + (1 if index < extra else 0)
    return targets


def is_balanced(counts, threshold, leaving=()):
    """Every staying master holds the even share within threshold percent of it, and the leaving ones hold none."""
    if any(counts.get(key) for key in leaving):
        return False
    staying = [key for key in counts if key not in leaving]
    if not staying:
        return True
    share = sum(counts.values()) / len(staying)
    allowed = share * float(threshold) / 100.0
    return all(abs(counts[key] - share) <= allowed for key in staying)


def plan_moves(slot_map, threshold, leaving=()):
    """{master: slots it holds} -> the moves to even shares, [dict(source, target, slots)], or [] when every master
    is already within threshold percent of its share (and the masters in leaving hold nothing).

    Moves the fewest slots that reach the exact shares: a master gives only what it holds above its share (its
    highest slots, so that ranges stay contiguous) and a master receives only what it lacks."""
    counts = {key: len(slots) for key, slots in slot_map.items()}
    if is_balanced(counts, threshold, leaving):
        return []
    targets = even_targets(counts, leaving)
    given = []
    for key in sorted(slot_map, key=lambda key: (targets[key] - counts[key], str(key))):
        excess = counts[key] - targets[key]
        if excess > 0:
            given.extend((key, slot) for slot in sorted(slot_map[key])[-excess:])
    moves = []
    position = 0
    for key in sorted(slot_map, key=lambda key: (counts[key] - targets[key], str(key))):
        deficit = targets[key] - counts[key]
        if deficit <= 0:
            continue
        for source, slot in given[position : position + deficit]:
            if moves and moves[-1]["source"] == source and moves[-1]["target"] == key:
                moves[-1]["slots"].append(slot)
            else:
                moves.append(dict(source=source, target=key, slots=[slot]))
        position += deficit
    return moves


def apply_moves(slot_map, moves):
    """The slot map after the moves (a new dict)."""
    after = {key: set(slots) for key, slots in slot_map.items()}
    for move in moves:
        after[move["source"]].difference_update(move["slots"])
        after.setdefault(move["target"], set()).update(move["slots"])
    return {key: sorted(slots) for key, slots in after.items()}


def predict(topo, join=None, follow=None, moves=(), remove=None):
    """The topology a real run should end with (a new dict): join = dict(id, address) added as an empty master,
    follow = {node id: master id} made replicas of those masters, the moves applied, node id remove gone."""
    after = copy.deepcopy(topo)
    if join:
        after[join["id"]] = dict(
            id=join["id"],
            address=join["address"],
            role="master",
            master_id=None,
            slots=[],
            migrating={},
            importing={},
            failed=False,
            myself=False,
        )
    for node_id, master_id in (follow or {}).items():
        after[node_id].update(role="replica", master_id=master_id, slots=[])
    for move in moves:
        after[move["source"]]["slots"] = sorted(set(after[move["source"]]["slots"]) - set(move["slots"]))
        after[move["target"]]["slots"] = sorted(set(after[move["target"]]["slots"]) | set(move["slots"]))
    if remove:
        after.pop(remove, None)
    return after


def migrate_auth(params):
    """The AUTH part of MIGRATE for the connection's credentials: AUTH2 user password, AUTH password, or nothing."""
    password = params.get("login_password")
    if not password:
        return []
    user = params.get("login_user")
    return ["AUTH2", user, password] if user else ["AUTH", password]


def migrate_slot(source, target, slot, auth=(), pipeline=100, timeout_ms=MIGRATE_TIMEOUT_MS, others=()):
    """Move one slot with its keys from source to target; returns the number of keys moved.

    source, target and others have id, host, port, command(*argv) and command_bytes(*argv) (a reply whose strings
    stay bytes, so that keys of any encoding go back to MIGRATE unchanged). others: the other masters, told the new
    owner too (best effort: gossip tells them anyway)."""
    target.command("CLUSTER", "SETSLOT", slot, "IMPORTING", source.id)
    source.command("CLUSTER", "SETSLOT", slot, "MIGRATING", target.id)
    moved = 0
    while True:
        keys = source.command_bytes("CLUSTER", "GETKEYSINSLOT", slot, pipeline)
        if not keys:
            break
        source.command("MIGRATE", target.host, target.port, "", 0, timeout_ms, *auth, "KEYS", *keys)
        moved += len(keys)
    target.command("CLUSTER", "SETSLOT", slot, "NODE", target.id)
    try:
        source.command("CLUSTER", "SETSLOT", slot, "NODE", target.id)
    except adapter.RedisError as exc:
        # A master that gave away its last slot turns itself into a replica of the target (Redis 7,
        # cluster-allow-replica-migration) as soon as gossip tells it, which may be before this command arrives.
        if "only with masters" not in str(exc):
            raise
    for other in others:
        try:
            other.command("CLUSTER", "SETSLOT", slot, "NODE", target.id)
        except adapter.RedisError:
            pass
    return moved


def open_slots(own_views):
    """Slots an interrupted run left half-moved, from each master's view of itself ({id: entry with migrating and
    importing}): [(slot, source id, target id)], sorted."""
    found = {}
    for node_id, entry in own_views.items():
        for slot, peer in entry.get("migrating", {}).items():
            found[slot] = (node_id, peer)
        for slot, peer in entry.get("importing", {}).items():
            found.setdefault(slot, (peer, node_id))
    return sorted((slot, source, target) for slot, (source, target) in found.items())
