# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Redis Cluster membership tactics: add a master and move hash slots to it until every master holds an even share,
add a replica to a master, or remove a member (its slots moved away first). ``ensure_member`` is the module's
entry point; the slot arithmetic and the migration of one slot are in slots.py.
"""

from __future__ import annotations

import socket
import time

from ansible_collections.tactician.nosql.plugins.module_utils.core.timing import Stopwatch
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as adapter
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis.slots import (
    MIGRATE_TIMEOUT_MS,
    MIN_MASTERS,
    ROLES,
    STATES,
    TacticError,
    format_ranges,
    masters_of,
    masters_without_replicas,
    migrate_auth,
    migrate_slot,
    open_slots,
    plan_moves,
    predict,
    replica_counts,
    shape,
    slot_counts,
    topology,
)


class NodeLink:
    """One node of the cluster: address, id, and a lazily opened connection with the module's credentials."""

    def __init__(self, params, address, node_id=None):
        self.params = params
        self.address = address
        self.id = node_id
        self.host, self.port = adapter.split_node(address)
        self._conn = None

    @property
    def conn(self):
        if self._conn is None:
            self._conn = adapter.client(self.params, self.host, self.port)
        return self._conn

    def command(self, *args):
        return adapter.raw_command(self.conn, *args)

    def command_bytes(self, *args):
        return adapter.raw_command_bytes(self.conn, *args)

    def view(self):
        return topology(adapter.cluster_nodes(self.conn))

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def canonical(address):
    """'host:port' as given, with the port checked; TacticError naming the field otherwise."""
    text = str(address or "").strip()
    if not text or (":" not in text):
        raise TacticError("node: expected host:port, got %r" % address)
    try:
        host, port = adapter.split_node(text)
    except ValueError as exc:
        raise TacticError("node: expected host:port, got %r" % address) from exc
    if not host or not 0 < port < 65536:
        raise TacticError("node: expected host:port, got %r" % address)
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


def _resolve(host):
    try:
        return socket.getaddrinfo(host, None)[0][4][0]
    except (OSError, IndexError):
        return host


def same_address(first, second):
    """Whether two 'host:port' name the same node (host names resolved)."""
    try:
        host_a, port_a = adapter.split_node(first)
        host_b, port_b = adapter.split_node(second)
    except ValueError:
        return False
    return port_a == port_b and (host_a == host_b or _resolve(host_a) == _resolve(host_b))


def find_node(topo, wanted):
    """The topology entry named by a node id or a 'host:port', or None."""
    if wanted in topo:
        return topo[wanted]
    for node in topo.values():
        if node["address"] and same_address(node["address"], wanted):
            return node
    return None


def check_params(params):
    """Refuse bad input before touching anything; every message starts with the field's name."""
    if params.get("state", "present") not in STATES:
        raise TacticError("state: must be one of %s, got %r" % (", ".join(STATES), params.get("state")))
    if params.get("role", "master") not in ROLES:
        raise TacticError("role: must be one of %s, got %r" % (", ".join(ROLES), params.get("role")))
    canonical(params.get("node"))
    if params.get("master") and params.get("role", "master") != "replica":
        raise TacticError("master: only with role=replica (the master a replica follows)")
    threshold = float(params.get("threshold", 2.0))
    if not 0 <= threshold < 100:
        raise TacticError("threshold: must be a percentage from 0 to below 100, got %s" % params.get("threshold"))
    if int(params.get("pipeline", 100)) < 1:
        raise TacticError("pipeline: must be at least 1 key per MIGRATE, got %s" % params.get("pipeline"))
    if int(params.get("timeout", 300)) < 1:
        raise TacticError("timeout: must be at least 1 second, got %s" % params.get("timeout"))


def ensure_member(params, check_mode=False):
    """The module's whole job: params are the module's (connection options, node, role, master, rebalance,
    threshold, pipeline, timeout, state). Returns the result dict (changed, moves, ..., diff)."""
    check_params(params)
    tactic = MemberTactic(params, check_mode)
    try:
        return tactic.run()
    except adapter.RedisError as exc:
        raise TacticError("Redis refused or failed: %s" % exc) from exc
    finally:
        tactic.close()


class MemberTactic:
    """One run of redis_cluster_member: read the cluster, plan, then (unless check mode) change and wait."""

    def __init__(self, params, check_mode):
        self.params = params
        self.check_mode = check_mode
        self.node = canonical(params["node"])
        self.role = params.get("role") or "master"
        self.threshold = float(params.get("threshold", 2.0))
        self.pipeline = int(params.get("pipeline", 100))
        self.timeout = float(params.get("timeout", 300))
        self.auth = migrate_auth(params)
        self.watch = Stopwatch()
        self.links = {}
        self.seed = self.link(
            "%s:%d" % (params.get("login_host") or "127.0.0.1", int(params.get("login_port") or 6379))
        )
        self.keys_migrated = 0
        self.done = []
        self.addresses = {}
        self.pending = None

    # -- plumbing ------------------------------------------------------------------------------------------------

    def link(self, address, node_id=None):
        if address not in self.links:
            self.links[address] = NodeLink(self.params, address, node_id)
        if node_id:
            self.links[address].id = node_id
        return self.links[address]

    def close(self):
        for link in self.links.values():
            link.close()

    def member_links(self, topo, exclude=()):
        return [self.link(n["address"], n["id"]) for n in topo.values() if n["id"] not in exclude]

    def wait(self, predicate, what):
        """Poll predicate() (a Redis error counts as not yet) until true or the timeout; TacticError then."""
        start = time.monotonic()
        last_error = None
        while True:
            try:
                if predicate():
                    return round(time.monotonic() - start, 3)
            except adapter.RedisError as exc:
                last_error = exc
            if time.monotonic() - start > self.timeout:
                raise TacticError(
                    "timed out after %ds waiting for %s%s"
                    % (self.timeout, what, "; last error: %s" % last_error if last_error else "")
                )
            time.sleep(0.2)

    def retry(self, call, what):
        start = time.monotonic()
        while True:
            try:
                return call()
            except adapter.RedisError as exc:
                if time.monotonic() - start > self.timeout:
                    raise TacticError("gave up on %s after %ds: %s" % (what, self.timeout, exc)) from exc
                time.sleep(0.3)

    def wait_healthy(self, topo, exclude=(), when="after the change"):
        """Every node of topo (but those excluded) healthy and knowing every node of topo, within the timeout."""
        addresses = [n["address"] for n in topo.values() if n["id"] not in exclude]
        report = adapter.wait_healthy(self.params, addresses, self.timeout, expected_nodes=len(topo))
        if not report["healthy"]:
            raise TacticError(
                "cluster not healthy %s: %s" % (when, "; ".join(report["problems"])),
                views=report["views"],
            )
        return report

    def node_id(self):
        """The id of the node to add or remove as it reports it, or None when it does not answer."""
        link = self.link(self.node)
        try:
            link.id = adapter.node_ids(link.conn)
        except adapter.RedisError:
            return None
        return link.id

    def own_views(self, topo):
        """{master id: its own entry (with the migrating/importing marks only a node shows of itself)}."""
        views = {}
        for node in masters_of(topo):
            if node["failed"]:
                continue
            mine = [entry for entry in self.link(node["address"], node["id"]).view().values() if entry["myself"]]
            if mine:
                views[node["id"]] = mine[0]
        return views

    # -- the run -------------------------------------------------------------------------------------------------

    def run(self):
        with self.watch.step("read"):
            topo = self.seed.view()
            if not any(n["slots"] for n in topo.values()):
                raise TacticError(
                    "login_host: %s is not in a cluster that serves slots; connect to a node of the cluster"
                    % self.seed.address
                )
            node_id = self.node_id()
            member = topo.get(node_id) if node_id else find_node(topo, self.node)
            half_moved = open_slots(self.own_views(topo))
        before = shape(topo)
        self.addresses = {n["id"]: n["address"] for n in topo.values()}
        if self.params.get("state", "present") == "absent":
            return self.remove(topo, member, before, half_moved)
        return self.add(topo, node_id, member, before, half_moved)

    def result(self, changed, topo_after, before, member_id, moves, half_moved, predicted=False):
        after = shape(topo_after)
        node = topo_after.get(member_id) if member_id else None
        master = topo_after.get(node["master_id"]) if node and node["master_id"] else None
        addresses = dict(self.addresses, **{n["id"]: n["address"] for n in topo_after.values()})
        return dict(
            changed=changed,
            node=self.node,
            node_id=member_id,
            role=node["role"] if node else "absent",
            master=master["address"] if master else None,
            moves=[self.describe(move, addresses) for move in moves],
            resumed=[
                dict(slot=slot, source=addresses.get(s, s), target=addresses.get(t, t)) for slot, s, t in half_moved
            ],
            slots_before={address: value["slots"] for address, value in before["masters"].items()},
            slots_after={address: value["slots"] for address, value in after["masters"].items()},
            keys_migrated=self.keys_migrated,
            masters_without_replicas=masters_without_replicas(topo_after),
            timings=dict(self.watch.steps),
            predicted=predicted,
            diff=dict(before=before, after=after),
        )

    def describe(self, move, addresses):
        described = {
            "from": addresses.get(move["source"], move["source"]),
            "to": addresses.get(move["target"], move["target"]),
            "count": len(move["slots"]),
            "ranges": format_ranges(move["slots"]),
        }
        if "keys" in move:
            described["keys"] = move["keys"]
        return described

    def slot_map(self, topo):
        return {n["id"]: list(n["slots"]) for n in masters_of(topo)}

    # -- present -------------------------------------------------------------------------------------------------

    def add(self, topo, node_id, member, before, half_moved):
        if node_id is None:
            raise TacticError("node: %s does not answer; start it (cluster-enabled, empty) first" % self.node)
        join = member is None
        if join:
            self.check_empty(node_id, topo)
        replicate_to = None
        if self.role == "replica":
            wanted = self.wanted_master(topo, node_id, member)
            if member and member["role"] == "master":
                if member["slots"]:
                    raise TacticError(
                        "role: %s is a master holding %d slots; take it out first (state=absent moves its slots "
                        "away) and add it again as a replica" % (self.node, len(member["slots"]))
                    )
                if any(n["master_id"] == member["id"] for n in topo.values()):
                    raise TacticError("role: %s is a master with replicas of its own" % self.node)
            if join or member["master_id"] != wanted:
                replicate_to = wanted
        elif member and member["role"] == "replica":
            raise TacticError(
                "role: %s is a replica of %s; fail it over (CLUSTER FAILOVER) or take it out (state=absent) and add "
                "it again as a master" % (self.node, topo.get(member["master_id"], {}).get("address"))
            )
        rebalance = self.role == "master" and self.params.get("rebalance", True)
        follow = {node_id: replicate_to} if replicate_to else None
        planned = predict(topo, join=self.pending) if self.pending else topo
        planned = predict(planned, join=dict(id=node_id, address=self.node) if join else None, follow=follow)
        moves = plan_moves(self.slot_map(planned), self.threshold) if rebalance else []
        planned = predict(planned, moves=moves)
        if not (join or replicate_to or moves or half_moved):
            if not self.check_mode:
                with self.watch.step("health"):
                    self.wait_healthy(topo, when="(nothing to change)")
            return self.result(False, topo, before, node_id, [], [])
        if self.check_mode:
            return self.result(True, planned, before, node_id, moves, half_moved, predicted=True)

        with self.watch.step("health_before"):
            self.wait_healthy(topo, when="before the change; nothing was changed")
        if half_moved:
            with self.watch.step("resume"):
                self.finish_open_slots(half_moved, topo)
        if join:
            with self.watch.step("join"):
                self.join(node_id, topo)
        topo = self.seed.view()
        if replicate_to:
            with self.watch.step("replicate"):
                link = self.link(self.node, node_id)
                self.retry(
                    lambda: link.command("CLUSTER", "REPLICATE", replicate_to),
                    "%s to replicate %s" % (self.node, topo[replicate_to]["address"]),
                )
        moves = plan_moves(self.slot_map(topo), self.threshold) if rebalance else []
        if moves:
            with self.watch.step("migrate"):
                self.execute(moves, topo)
        expected = predict(topo, follow=follow, moves=moves)
        with self.watch.step("converge"):
            self.converge(expected, node_id)
        with self.watch.step("health"):
            self.wait_healthy(expected)
        final = self.seed.view()
        changed = shape(final) != before or bool(half_moved) or self.keys_migrated > 0
        return self.result(changed, final, before, node_id, self.done, half_moved)

    def wanted_master(self, topo, node_id, member):
        """The master the replica should follow: the one named by the master option, else its current master, else
        the master (holding slots) with the fewest replicas."""
        wanted = self.params.get("master")
        if wanted:
            match = find_node(topo, wanted)
            if match is None and self.check_mode and self.pending_master(wanted):
                return self.pending["id"]
            if not match or match["role"] != "master" or match["failed"]:
                raise TacticError(
                    "master: %s is not a live master of the cluster; masters: %s"
                    % (wanted, ", ".join(sorted(n["address"] for n in masters_of(topo))))
                )
            if match["id"] == node_id:
                raise TacticError("master: %s cannot replicate itself" % wanted)
            return match["id"]
        if member and member["role"] == "replica" and member["master_id"] in topo:
            return member["master_id"]
        counts = replica_counts(topo)
        candidates = [n for n in masters_of(topo) if n["id"] != node_id and not n["failed"] and n["slots"]]
        if not candidates:
            raise TacticError("master: the cluster has no live master holding slots to replicate")
        return min(candidates, key=lambda n: (counts[n["id"]], n["address"]))["id"]

    def pending_master(self, wanted):
        """Check mode only: a master named for the replica that is not in the cluster yet but answers as an empty
        node is taken to join earlier in the same play (as the role adds masters before replicas)."""
        try:
            address = canonical(wanted)
            link = self.link(address)
            node_id = adapter.node_ids(link.conn)
            empty = not adapter.cluster_info(link.conn).get("cluster_slots_assigned") and not link.command("DBSIZE")
        except (adapter.RedisError, TacticError):
            return False
        if node_id and empty:
            self.pending = dict(id=node_id, address=address)
        return bool(self.pending)

    def check_empty(self, node_id, topo):
        link = self.link(self.node, node_id)
        try:
            info = adapter.cluster_info(link.conn)
        except adapter.RedisError as exc:
            raise TacticError(
                "node: %s does not run in cluster mode (cluster-enabled yes): %s" % (self.node, exc)
            ) from exc
        keys = int(link.command("DBSIZE") or 0)
        if info.get("cluster_slots_assigned", 0) or keys:
            raise TacticError(
                "node: %s is not empty (%s slots assigned, %d keys); only an empty cluster-mode node can join "
                "(FLUSHALL and CLUSTER RESET it first)" % (self.node, info.get("cluster_slots_assigned", 0), keys)
            )
        strangers = [n["address"] for n in link.view().values() if not n["myself"] and n["id"] not in topo]
        if strangers:
            raise TacticError(
                "node: %s already knows nodes outside this cluster (%s); CLUSTER RESET it first"
                % (self.node, ", ".join(sorted(strangers)))
            )

    def join(self, node_id, topo):
        host, port = adapter.split_node(self.node)
        self.seed.command("CLUSTER", "MEET", _resolve(host), port)
        members = [n for n in topo.values() if not n["failed"]]
        newcomer = self.link(self.node, node_id)

        def everyone_knows():
            for node in members:
                if node_id not in self.link(node["address"], node["id"]).view():
                    return False
            known = newcomer.view()
            if not all(node["id"] in known for node in members):
                return False
            # A node that has just joined answers CLUSTERDOWN (also to MIGRATE) until it sees every slot served.
            return adapter.cluster_info(newcomer.conn).get("cluster_state") == "ok"

        self.wait(
            everyone_knows,
            "every node to know %s, and %s to know them and report cluster_state ok" % (self.node, self.node),
        )

    def execute(self, moves, topo):
        """Run the moves slot by slot; self.done collects what was moved (with keys), for the result or the error."""
        masters = {n["id"]: self.link(n["address"], n["id"]) for n in masters_of(topo)}
        for move in moves:
            source, target = masters[move["source"]], masters[move["target"]]
            others = [link for key, link in masters.items() if key not in (move["source"], move["target"])]
            record = dict(source=move["source"], target=move["target"], slots=[], keys=0)
            self.done.append(record)
            for slot in move["slots"]:
                try:
                    moved = migrate_slot(source, target, slot, self.auth, self.pipeline, MIGRATE_TIMEOUT_MS, others)
                except adapter.RedisError as exc:
                    addresses = {n["id"]: n["address"] for n in topo.values()}
                    raise TacticError(
                        "moving slot %d from %s to %s failed: %s; %d keys in %d slots were moved before it. Run "
                        "again to finish (the half-moved slot is resumed first)."
                        % (
                            slot,
                            source.address,
                            target.address,
                            exc,
                            self.keys_migrated,
                            sum(len(r["slots"]) for r in self.done),
                        ),
                        moves=[self.describe(r, addresses) for r in self.done if r["slots"]],
                        keys_migrated=self.keys_migrated,
                        changed=True,
                    ) from exc
                record["slots"].append(slot)
                record["keys"] += moved
                self.keys_migrated += moved

    def finish_open_slots(self, half_moved, topo):
        """Finish the slots an interrupted run left MIGRATING/IMPORTING (or clear marks that lead nowhere)."""
        owners = {slot: n["id"] for n in masters_of(topo) for slot in n["slots"]}
        masters = {n["id"]: self.link(n["address"], n["id"]) for n in masters_of(topo) if not n["failed"]}
        for slot, source_id, target_id in half_moved:
            source, target = masters.get(source_id), masters.get(target_id)
            if source is None or target is None:
                for link in (source, target):
                    if link is not None:
                        link.command("CLUSTER", "SETSLOT", slot, "STABLE")
                continue
            others = [link for key, link in masters.items() if key not in (source_id, target_id)]
            if owners.get(slot) == source_id:
                self.keys_migrated += migrate_slot(
                    source, target, slot, self.auth, self.pipeline, MIGRATE_TIMEOUT_MS, others
                )
            elif owners.get(slot) == target_id:
                target.command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
                for link in (source, *others):
                    try:
                        link.command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
                    except adapter.RedisError:
                        pass  # gossip tells them the owner anyway; this only clears the source's mark sooner
            else:
                source.command("CLUSTER", "SETSLOT", slot, "STABLE")
                target.command("CLUSTER", "SETSLOT", slot, "STABLE")

    def converge(self, expected, node_id, removed=None):
        """Wait until every node's own view shows the expected slot owners and the node's expected role (or, for a
        removal, no trace of the node)."""
        counts = slot_counts(expected)
        wanted = expected.get(node_id) if node_id else None
        links = self.member_links(expected)

        def agreed():
            for link in links:
                view = link.view()
                if slot_counts(view) != counts:
                    return False
                if removed and (removed in view or any(n["master_id"] == removed for n in view.values())):
                    return False
                if wanted:
                    mine = view.get(node_id)
                    if not mine or mine["role"] != wanted["role"] or mine["master_id"] != wanted["master_id"]:
                        return False
            return True

        self.wait(agreed, "every node to agree on the slot owners and the roles")

    # -- absent --------------------------------------------------------------------------------------------------

    def remove(self, topo, member, before, half_moved):
        if member is None:
            return self.result(False, topo, before, None, [], [])
        node_id = member["id"]
        if member["myself"] or same_address(self.seed.address, member["address"]):
            raise TacticError(
                "login_host: %s is the node to take out; connect through another node of the cluster" % self.node
            )
        moves, reassign = [], {}
        if member["role"] == "master":
            staying = [n for n in masters_of(topo) if n["id"] != node_id]
            if len(staying) < MIN_MASTERS:
                raise TacticError(
                    "node: taking master %s out would leave %d masters; a cluster keeps at least %d"
                    % (self.node, len(staying), MIN_MASTERS)
                )
            moves = plan_moves(self.slot_map(topo), self.threshold, leaving=[node_id])
            reassign = self.reassign(predict(topo, moves=moves), node_id)
        planned = predict(topo, follow=reassign, moves=moves, remove=node_id)
        if self.check_mode:
            return self.result(True, planned, before, node_id, moves, half_moved, predicted=True)

        # A node that holds no slots may be taken out while it is down (that is often why it goes).
        with self.watch.step("health_before"):
            self.wait_healthy(
                topo, exclude=[] if member["slots"] else [node_id], when="before the change; nothing was changed"
            )
        if half_moved:
            with self.watch.step("resume"):
                self.finish_open_slots(half_moved, topo)
                topo = self.seed.view()
        if member["role"] == "master":
            moves = plan_moves(self.slot_map(topo), self.threshold, leaving=[node_id])
            if moves:
                with self.watch.step("migrate"):
                    self.execute(moves, topo)
            with self.watch.step("replicas"):
                self.move_replicas(node_id)
        with self.watch.step("forget"):
            self.forget(node_id)
        expected = self.seed.view()
        with self.watch.step("converge"):
            self.converge(expected, None, removed=node_id)
        with self.watch.step("health"):
            self.wait_healthy(expected)
        final = self.seed.view()
        return self.result(True, final, before, node_id, self.done, half_moved)

    def reassign(self, topo, leaving):
        """{replica id: new master id} for the replicas of a leaving master: each to the staying master holding slots
        with the fewest replicas."""
        counts = {key: value for key, value in replica_counts(topo).items() if key != leaving}
        serving = {n["id"]: n for n in masters_of(topo) if n["id"] != leaving and n["slots"] and not n["failed"]}
        plan = {}
        for replica in sorted((n for n in topo.values() if n["master_id"] == leaving), key=lambda n: n["address"]):
            choice = min(serving, key=lambda key: (counts[key], serving[key]["address"]))
            plan[replica["id"]] = choice
            counts[choice] += 1
        return plan

    def move_replicas(self, leaving):
        """Point the leaving master's replicas elsewhere (Redis may have moved them already when the master lost its
        last slot) and wait until every node sees them there."""
        topo = self.seed.view()
        for replica_id, master_id in self.reassign(topo, leaving).items():
            link = self.link(topo[replica_id]["address"], replica_id)
            self.retry(
                lambda link=link, master_id=master_id: link.command("CLUSTER", "REPLICATE", master_id),
                "%s to replicate %s" % (link.address, topo[master_id]["address"]),
            )

        def nobody_follows():
            for link in self.member_links(topo, exclude=[leaving]):
                if any(n["master_id"] == leaving for n in link.view().values()):
                    return False
            return True

        self.wait(nobody_follows, "the replicas of the leaving master to follow other masters")

    def forget(self, node_id):
        """CLUSTER FORGET on every other node (quickly: within the minute Redis bans the id from gossip), then
        CLUSTER RESET HARD on the node itself so that it stops gossiping and can join again later (under a new id:
        Redis refuses the old one for a minute)."""
        topo = self.seed.view()
        leaving = topo.get(node_id)
        for link in self.member_links(topo, exclude=[node_id]):
            if topo[link.id]["failed"]:
                continue
            try:
                link.command("CLUSTER", "FORGET", node_id)
            except adapter.RedisError as exc:
                if "unknown node" not in str(exc).lower():
                    raise
        if leaving:
            try:
                self.link(leaving["address"], node_id).command("CLUSTER", "RESET", "HARD")
            except adapter.RedisError:
                pass  # stopped already: the others have forgotten it, which is what counts
