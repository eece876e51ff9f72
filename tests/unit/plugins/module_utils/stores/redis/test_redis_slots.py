# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The Redis cluster tactics' engine: slot planner, the migration of one slot, and whole runs against a fake
cluster (a few Redis commands kept in memory)."""

from __future__ import annotations

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as adapter
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import members
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import slots as rs

THREE = {"a": list(range(5461)), "b": list(range(5461, 10923)), "c": list(range(10923, 16384))}


# -- parsing ---------------------------------------------------------------------------------------------------------


def test_parse_slot_fields_reads_ranges_single_slots_and_marks():
    owned, migrating, importing = rs.parse_slot_fields(["0-2", "7", "[5->-abc]", "[9-<-def]"])
    assert owned == [0, 1, 2, 7]
    assert migrating == {5: "abc"} and importing == {9: "def"}


def test_ranges_and_their_text():
    assert rs.ranges_of([5, 1, 2, 3, 9]) == [(1, 3), (5, 5), (9, 9)]
    assert rs.format_ranges([1, 2, 3, 5]) == ["1-3", "5"]
    assert rs.format_ranges([]) == []


def test_topology_roles_replicas_and_shape(monkeypatch):
    text = (
        "r1 127.0.0.1:6414@16414 slave m1 0 1 4 connected\n"
        "m1 127.0.0.1:6411@16411 myself,master - 0 0 1 connected 0-5460 [100->-m2]\n"
        "m2 127.0.0.1:6412@16412 master - 0 1 2 connected 5461-16383\n"
        "hs 127.0.0.1:6417@16417 handshake - 0 1 0 connected\n"
    )
    monkeypatch.setattr(adapter, "raw_command", lambda conn, *args: text)
    topo = rs.topology(adapter.cluster_nodes(object()))
    assert set(topo) == {"r1", "m1", "m2"}, "a node in handshake has no stable id yet"
    assert topo["r1"]["role"] == "replica" and topo["r1"]["master_id"] == "m1"
    assert topo["m1"]["myself"] and topo["m1"]["migrating"] == {100: "m2"}
    shape = rs.shape(topo)
    assert shape["masters"]["127.0.0.1:6411"] == {"slots": 5461, "ranges": "0-5460"}
    assert shape["replicas"] == {"127.0.0.1:6414": "127.0.0.1:6411"}
    assert rs.masters_without_replicas(topo) == ["127.0.0.1:6412"]


# -- planner ---------------------------------------------------------------------------------------------------------


def test_a_new_master_gets_an_even_share_and_only_the_excess_moves():
    slot_map = dict(THREE, d=[])
    moves = rs.plan_moves(slot_map, threshold=2)
    after = rs.apply_moves(slot_map, moves)
    assert sorted(len(slots) for slots in after.values()) == [4096] * 4
    assert sum(len(m["slots"]) for m in moves) == 4096, "the fewest slots that reach the shares"
    assert {m["target"] for m in moves} == {"d"} and {m["source"] for m in moves} == {"a", "b", "c"}
    # every donor gives one contiguous range from the top of what it holds
    assert all(len(rs.ranges_of(m["slots"])) == 1 for m in moves)
    assert sorted(s for slots in after.values() for s in slots) == list(range(16384))


def test_balanced_within_threshold_plans_nothing():
    counts = {"a": 4096 + 80, "b": 4096 - 80, "c": 4096, "d": 4096}
    slot_map = {}
    start = 0
    for key, count in counts.items():
        slot_map[key] = list(range(start, start + count))
        start += count
    assert rs.plan_moves(slot_map, threshold=2) == []
    assert rs.plan_moves(slot_map, threshold=1) != []
    moved = rs.apply_moves(slot_map, rs.plan_moves(slot_map, threshold=1))
    assert sorted(len(s) for s in moved.values()) == [4096] * 4
    assert sum(len(m["slots"]) for m in rs.plan_moves(slot_map, threshold=1)) == 80


def test_planning_again_after_the_moves_finds_nothing():
    slot_map = dict(THREE, d=[], e=[])
    after = rs.apply_moves(slot_map, rs.plan_moves(slot_map, 0))
    assert rs.plan_moves(after, 0) == []
    assert sorted(len(s) for s in after.values()) == [3276, 3277, 3277, 3277, 3277]


def test_remainder_stays_with_the_masters_holding_most():
    targets = rs.even_targets({"a": 5461, "b": 5462, "c": 5461})
    assert targets == {"a": 5461, "b": 5462, "c": 5461}
    assert rs.plan_moves(THREE, threshold=0) == []


def test_a_leaving_master_gives_everything_to_the_others():
    slot_map = rs.apply_moves(dict(THREE, d=[]), rs.plan_moves(dict(THREE, d=[]), 2))
    moves = rs.plan_moves(slot_map, threshold=2, leaving=["d"])
    after = rs.apply_moves(slot_map, moves)
    assert after["d"] == []
    assert sorted(len(after[k]) for k in "abc") == [5461, 5461, 5462]
    assert {m["source"] for m in moves} == {"d"}
    assert not rs.is_balanced({"a": 1, "b": 0}, 50, leaving=["a"])


def test_no_master_left_is_refused():
    with pytest.raises(rs.TacticError, match="no master would be left"):
        rs.even_targets({"a": 3}, leaving=["a"])


# -- one slot's migration ---------------------------------------------------------------------------------------------


class RecordingNode:
    def __init__(self, name, log, keys=(), fail_on=None):
        self.id = name + "-id"
        self.host, self.port = "127.0.0.1", 7000 + len(name)
        self.name = name
        self.log = log
        self.keys = list(keys)
        self.fail_on = fail_on

    def command(self, *args):
        self.log.append((self.name, args))
        if self.fail_on and args[: len(self.fail_on)] == self.fail_on:
            raise adapter.RedisError("refused")
        if args[0] == "MIGRATE":
            moved = args[args.index("KEYS") + 1 :]
            self.keys = [k for k in self.keys if k not in moved]
        return "OK"

    def command_bytes(self, *args):
        self.log.append((self.name, args))
        return self.keys[: args[-1]]


def test_migrate_slot_sends_the_documented_sequence():
    log = []
    keys = [b"k1", b"k2", b"\xff-not-utf8", b"k4", b"k5"]
    source = RecordingNode("src", log, keys)
    target = RecordingNode("dst", log)
    other = RecordingNode("other", log, fail_on=("CLUSTER", "SETSLOT"))
    moved = rs.migrate_slot(source, target, 42, ["AUTH2", "u", "p"], pipeline=2, timeout_ms=900, others=[other])
    assert moved == 5
    steps = [(who, args[:3]) for who, args in log]
    assert steps[0] == ("dst", ("CLUSTER", "SETSLOT", 42)) and log[0][1][3:] == ("IMPORTING", "src-id")
    assert steps[1] == ("src", ("CLUSTER", "SETSLOT", 42)) and log[1][1][3:] == ("MIGRATING", "dst-id")
    migrates = [args for who, args in log if args[0] == "MIGRATE"]
    assert len(migrates) == 3
    assert migrates[0] == ("MIGRATE", "127.0.0.1", 7003, "", 0, 900, "AUTH2", "u", "p", "KEYS", b"k1", b"k2")
    assert migrates[1][-2:] == (b"\xff-not-utf8", b"k4"), "keys go back as the bytes the server gave"
    asked = [args for who, args in log if args[1:2] == ("GETKEYSINSLOT",)]
    assert asked == [("CLUSTER", "GETKEYSINSLOT", 42, 2)] * 4, "until the slot is empty"
    tail = [(who, args[3:]) for who, args in log[-3:]]
    assert tail == [("dst", ("NODE", "dst-id")), ("src", ("NODE", "dst-id")), ("other", ("NODE", "dst-id"))]


def test_migrate_slot_stops_at_a_refused_migrate():
    log = []
    source = RecordingNode("src", log, [b"k"], fail_on=("MIGRATE",))
    with pytest.raises(adapter.RedisError):
        rs.migrate_slot(source, RecordingNode("dst", log), 7)
    assert not any(args[3:4] == ("NODE",) for who, args in log), "the slot keeps its owner"


def test_a_source_demoted_after_its_last_slot_is_no_error():
    log = []
    source = RecordingNode("src", log, [b"k"])
    calls = []

    def demoted(*args):
        calls.append(args)
        if args[3:4] == ("NODE",):
            raise adapter.RedisError("Please use SETSLOT only with masters.")
        return RecordingNode.command(source, *args)

    source.command = demoted
    assert rs.migrate_slot(source, RecordingNode("dst", log), 7) == 1
    assert calls[-1][3:] == ("NODE", "dst-id")


@pytest.mark.parametrize(
    "params, auth",
    [
        (dict(login_user="u", login_password="p"), ["AUTH2", "u", "p"]),
        (dict(login_password="p"), ["AUTH", "p"]),
        (dict(login_user="u"), []),
    ],
)
def test_migrate_auth(params, auth):
    assert rs.migrate_auth(params) == auth


def test_open_slots_from_both_sides():
    views = {"a": dict(migrating={5: "b"}, importing={}), "b": dict(migrating={}, importing={5: "a", 9: "c"})}
    assert rs.open_slots(views) == [(5, "a", "b"), (9, "c", "b")]


@pytest.mark.parametrize(
    "change, field",
    [
        (dict(node="nohost"), "node"),
        (dict(node="h:0"), "node"),
        (dict(role="arbiter"), "role"),
        (dict(state="gone"), "state"),
        (dict(master="h:1"), "master"),
        (dict(threshold=100), "threshold"),
        (dict(pipeline=0), "pipeline"),
        (dict(timeout=0), "timeout"),
    ],
)
def test_bad_input_names_the_field(change, field):
    params = dict(node="127.0.0.1:6417", role="master", state="present", threshold=2.0, pipeline=100, timeout=5)
    params.update(change)
    with pytest.raises(rs.TacticError) as err:
        members.check_params(params)
    assert str(err.value).startswith(field + ":")


# -- whole runs against a fake cluster ------------------------------------------------------------------------------


class FakeCluster:
    """Nodes that answer the commands the engine sends; gossip is instant (every member sees the same state).
    Keys are named key:<slot>:<n> so that their slot is plain to see."""

    def __init__(self, masters=3, replicas=1, spares=2):
        self.nodes = {}
        self.sent = []
        ports = iter(range(6411, 6430))
        master_ids = []
        for index, (first, last) in enumerate(adapter.slot_ranges(masters)):
            node = self.add_node(next(ports), member=True)
            node["slots"] = set(range(first, last + 1))
            master_ids.append(node["id"])
            for slot in range(first, last + 1, 97):
                node["keys"].add("key:%d:%d" % (slot, index))
        for index in range(masters * replicas):
            node = self.add_node(next(ports), member=True)
            node["master"] = master_ids[index % masters]
        for _i in range(spares):
            self.add_node(next(ports), member=False)

    def add_node(self, port, member):
        node_id = "%040d" % port
        self.nodes[node_id] = dict(
            id=node_id,
            port=port,
            member=member,
            master=None,
            slots=set(),
            keys=set(),
            migrating={},
            importing={},
        )
        return self.nodes[node_id]

    def by_port(self, port):
        return next(n for n in self.nodes.values() if n["port"] == int(port))

    def members(self):
        return [n for n in self.nodes.values() if n["member"]]

    def all_keys(self):
        return sorted(k for n in self.nodes.values() if n["master"] is None for k in n["keys"])

    def nodes_text(self, me):
        listed = self.members() if me["member"] else [me]
        lines = []
        for node in listed:
            flags = ("myself," if node is me else "") + ("slave" if node["master"] else "master")
            fields = [
                node["id"],
                "127.0.0.1:%d@%d" % (node["port"], node["port"] + 10000),
                flags,
                node["master"] or "-",
                "0",
                "0",
                "1",
                "connected",
            ]
            fields += rs.format_ranges(node["slots"])
            if node is me:
                fields += ["[%d->-%s]" % item for item in node["migrating"].items()]
                fields += ["[%d-<-%s]" % item for item in node["importing"].items()]
            lines.append(" ".join(fields))
        return "\n".join(lines) + "\n"

    def execute(self, me, *args):
        self.sent.append((me["port"], args))
        words = [a.upper() if isinstance(a, str) else a for a in args[:2]]
        if words == ["CLUSTER", "NODES"]:
            return self.nodes_text(me)
        if words == ["CLUSTER", "INFO"]:
            known = len(self.members()) if me["member"] else 1
            assigned = sum(len(n["slots"]) for n in self.members()) if me["member"] else len(me["slots"])
            return (
                "cluster_state:%s\r\ncluster_slots_assigned:%d\r\ncluster_slots_ok:%d\r\ncluster_known_nodes:%d\r\n"
                % (
                    "ok" if assigned == 16384 else "fail",
                    assigned,
                    assigned,
                    known,
                )
            )
        if words == ["DBSIZE"]:
            return len(me["keys"])
        if words[0] == "MIGRATE":
            target = self.by_port(args[2])
            moved = args[args.index("KEYS") + 1 :]
            assert "AUTH2" in args
            for key in moved:
                key = key.decode() if isinstance(key, bytes) else key
                me["keys"].discard(key)
                target["keys"].add(key)
            return "OK"
        sub = str(args[1]).upper()
        if sub == "MEET":
            self.by_port(args[3])["member"] = True
            return "OK"
        if sub == "REPLICATE":
            assert not me["slots"] and not me["keys"]
            me["master"] = args[2]
            return "OK"
        if sub == "GETKEYSINSLOT":
            slot, count = args[2], args[3]
            return sorted(k.encode() for k in me["keys"] if int(k.split(":")[1]) == slot)[:count]
        if sub == "SETSLOT":
            slot, verb = args[2], args[3]
            if verb == "IMPORTING":
                me["importing"][slot] = args[4]
            elif verb == "MIGRATING":
                me["migrating"][slot] = args[4]
            elif verb == "NODE":
                for node in self.nodes.values():
                    node["slots"].discard(slot)
                self.nodes[args[4]]["slots"].add(slot)
                me["migrating"].pop(slot, None)
                me["importing"].pop(slot, None)
            elif verb == "STABLE":
                me["migrating"].pop(slot, None)
                me["importing"].pop(slot, None)
            return "OK"
        if sub == "FORGET":
            return "OK"
        if sub == "RESET":
            me["member"] = False
            me["master"] = None
            me["keys"] = set()
            return "OK"
        raise AssertionError("unexpected command %r" % (args,))


class FakeConn:
    def __init__(self, cluster, port):
        self.cluster = cluster
        self.node = cluster.by_port(port)

    def execute(self, *args):
        return self.cluster.execute(self.node, *args)

    def info(self, section):
        replica = bool(self.node["master"])
        return dict(role="slave" if replica else "master", master_link_status="up" if replica else None)

    def close(self):
        pass


@pytest.fixture
def cluster(monkeypatch):
    fake = FakeCluster()
    monkeypatch.setattr(adapter, "client", lambda params, host=None, port=None, retries=True: FakeConn(fake, port))
    monkeypatch.setattr(adapter, "raw_command", lambda conn, *args: conn.execute(*args))
    monkeypatch.setattr(adapter, "raw_command_bytes", lambda conn, *args: conn.execute(*args))
    return fake


def run(node, check=False, **options):
    params = dict(
        login_host="127.0.0.1",
        login_port=6411,
        login_user="tactician",
        login_password="secret",
        node=node,
        role="master",
        master=None,
        rebalance=True,
        threshold=2.0,
        pipeline=3,
        timeout=2,
        state="present",
    )
    params.update(options)
    return members.ensure_member(params, check_mode=check)


def mutations(fake):
    readers = {("CLUSTER", "NODES"), ("CLUSTER", "INFO"), ("DBSIZE",)}
    return [args for _port, args in fake.sent if tuple(args[:2]) not in readers and tuple(args[:1]) not in readers]


def test_check_mode_plans_the_moves_and_touches_nothing(cluster):
    keys = cluster.all_keys()
    result = run("127.0.0.1:6417", check=True)
    assert result["changed"] and result["predicted"]
    assert mutations(cluster) == []
    assert sum(m["count"] for m in result["moves"]) == 4096
    assert result["slots_after"]["127.0.0.1:6417"] == 4096
    assert result["diff"]["before"] != result["diff"]["after"]
    assert cluster.all_keys() == keys


def test_add_a_master_then_its_replica_then_again(cluster):
    keys = cluster.all_keys()
    added = run("127.0.0.1:6417")
    assert added["changed"] and added["role"] == "master"
    assert sorted(added["slots_after"].values()) == [4096] * 4
    assert added["keys_migrated"] > 0 and added["keys_migrated"] == sum(m["keys"] for m in added["moves"])
    assert cluster.all_keys() == keys, "every key still on a master"
    for node in cluster.members():
        for key in node["keys"]:
            assert int(key.split(":")[1]) in node["slots"], "each key lives with its slot"
    assert all(not n["migrating"] and not n["importing"] for n in cluster.nodes.values())
    secret_in_result = "secret" in repr(added)
    assert not secret_in_result

    replica = run("127.0.0.1:6418", role="replica", master="127.0.0.1:6417")
    assert replica["changed"] and replica["role"] == "replica" and replica["master"] == "127.0.0.1:6417"
    assert replica["moves"] == []

    del cluster.sent[:]
    assert run("127.0.0.1:6417")["changed"] is False
    assert run("127.0.0.1:6418", role="replica", master="127.0.0.1:6417")["changed"] is False
    assert run("127.0.0.1:6418", role="replica")["changed"] is False, "any master is right when none is named"
    assert mutations(cluster) == []


def test_default_master_is_the_one_with_fewest_replicas(cluster):
    run("127.0.0.1:6417")
    result = run("127.0.0.1:6418", role="replica", check=True)
    assert result["master"] == "127.0.0.1:6417"


def test_check_mode_takes_a_master_added_earlier_in_the_play(cluster):
    result = run("127.0.0.1:6418", role="replica", master="127.0.0.1:6417", check=True)
    assert result["changed"] and result["role"] == "replica" and result["master"] == "127.0.0.1:6417"
    assert mutations(cluster) == []
    with pytest.raises(rs.TacticError, match="^master: 127.0.0.1:6417 is not a live master"):
        run("127.0.0.1:6418", role="replica", master="127.0.0.1:6417")


def test_a_non_empty_node_is_refused(cluster):
    cluster.by_port(6417)["keys"].add("key:1:x")
    with pytest.raises(rs.TacticError, match="^node: 127.0.0.1:6417 is not empty"):
        run("127.0.0.1:6417")
    assert mutations(cluster) == []


def test_a_replica_cannot_become_a_master(cluster):
    with pytest.raises(rs.TacticError, match="^role: 127.0.0.1:6414 is a replica"):
        run("127.0.0.1:6414")


def test_remove_a_master_moves_its_slots_and_replicas_away(cluster):
    run("127.0.0.1:6417")
    run("127.0.0.1:6418", role="replica", master="127.0.0.1:6417")
    keys = cluster.all_keys()
    check = run("127.0.0.1:6417", state="absent", check=True)
    assert check["changed"] and check["role"] == "absent" and sum(m["count"] for m in check["moves"]) == 4096
    assert "127.0.0.1:6418" in check["diff"]["after"]["replicas"]
    removed = run("127.0.0.1:6417", state="absent")
    assert removed["changed"] and "127.0.0.1:6417" not in removed["slots_after"]
    assert sorted(removed["slots_after"].values()) == [5461, 5461, 5462]
    assert cluster.by_port(6418)["master"] != cluster.by_port(6417)["id"]
    assert not cluster.by_port(6417)["member"]
    assert cluster.all_keys() == keys
    assert run("127.0.0.1:6417", state="absent")["changed"] is False


def test_removing_below_three_masters_is_refused(cluster):
    with pytest.raises(rs.TacticError, match="^node: taking master 127.0.0.1:6412 out would leave 2 masters"):
        run("127.0.0.1:6412", state="absent", login_port=6411)


def test_a_half_moved_slot_is_finished_first(cluster):
    source = cluster.by_port(6411)
    target = cluster.by_port(6412)
    source["migrating"][0] = target["id"]
    target["importing"][0] = source["id"]
    result = run("127.0.0.1:6417", rebalance=False)
    assert result["resumed"] == [dict(slot=0, source="127.0.0.1:6411", target="127.0.0.1:6412")]
    assert 0 in target["slots"] and "key:0:0" in target["keys"]
    assert not source["migrating"] and not target["importing"]
