"""A rolling change of a MongoDB replica set without a server (plugins/module_utils/stores/mongodb/replset.py and
plugins/module_utils/apply/mongodb_roll.py, and the replica set parts of apply/mongodb_node.py).

The fakes replay replies written from the MongoDB manual's documented output fields: replSetGetStatus
(tests/fixtures/mongodb/repl_set_get_status_8.0.json: `set`, `votingMembersCount`, `members[]` with `name`,
`health`, `stateStr`, `optimeDate`, `optime.ts`, `self`) and hello (hello_primary.json, hello_secondary.json,
hello_standalone.json, hello_mongos.json); each test changes only the fields its case is about (a member's state,
its optimeDate, the votes). No reply here was captured from a live replica set: FerretDB, the MongoDB-compatible
server of the integration tests, has none (docs/testing-mongodb.md).
"""

from __future__ import annotations

import copy
import datetime
import os

import pytest
from bson import json_util
from testlib import FIXTURES, ROOT, Clock

from ansible_collections.tactician.nosql.plugins.module_utils.apply import guards, mongodb_roll
from ansible_collections.tactician.nosql.plugins.module_utils.apply.mongodb_node import MongoNode
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import replset
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb.client import MongoAdminError

A, B, C = ("mongo-%s.example.net:27017" % name for name in "abc")


def load(name):
    with open(os.path.join(FIXTURES, "mongodb", name), encoding="utf-8") as handle:
        return json_util.loads(handle.read())


def status(**changes):
    """The recorded replSetGetStatus with members changed: {name: {field: value}}; lag={name: seconds} sets that
    member's optimeDate that far behind the primary's."""
    reply = copy.deepcopy(load("repl_set_get_status_8.0.json"))
    lag = changes.pop("lag", {})
    by_name = {m["name"]: m for m in reply["members"]}
    primary_date = by_name[A]["optimeDate"]
    for name, seconds in lag.items():
        by_name[name]["optimeDate"] = primary_date - datetime.timedelta(seconds=seconds)
    for name, fields in changes.pop("members", {}).items():
        by_name[name].update(fields)
    reply.update(changes)
    return reply


def view(hello="hello_primary.json", **changes):
    return replset.view_from_replies(load(hello), status(**changes))


# --- reading the set ---------------------------------------------------------------------------------------


def test_view_of_the_recorded_set():
    seen = view()
    assert seen["kind"] == "replica_set" and seen["set_name"] == "rs0"
    assert seen["primary"] == A
    assert seen["voting_members"] == 3 and seen["majority"] == 2
    assert seen["voting_source"] == "replSetGetStatus.votingMembersCount"
    lags = {m["name"]: m["lag_s"] for m in seen["members"]}
    assert lags == {A: 0.0, B: 1.0, C: 2.0}
    assert [m["self"] for m in seen["members"]] == [True, False, False]
    assert replset.set_problems(seen, 10.0) == []


def test_lag_from_optime_ts_when_optime_date_is_absent():
    reply = status()
    for member in reply["members"]:
        del member["optimeDate"]
    seen = replset.view_from_replies(load("hello_primary.json"), reply)
    assert {m["name"]: m["lag_s"] for m in seen["members"]} == {A: 0.0, B: 1.0, C: 2.0}


def test_votes_from_the_config_before_4_4():
    reply = status()
    del reply["votingMembersCount"]
    config = {"config": {"members": [{"host": A, "votes": 1}, {"host": B, "votes": 1}, {"host": C, "votes": 0}]}}
    seen = replset.view_from_replies(load("hello_primary.json"), reply, config)
    assert seen["voting_members"] == 2
    assert seen["voting_source"] == "replSetGetConfig.members[].votes"


def test_standalone_and_mongos_have_no_members():
    assert replset.view_from_replies(load("hello_standalone.json"))["kind"] == "standalone"
    assert replset.view_from_replies(load("hello_mongos.json"))["kind"] == "mongos"
    assert replset.set_problems(replset.view_from_replies(load("hello_standalone.json")), 10.0) == []


def test_a_member_without_status_reply_is_an_error_naming_the_set():
    with pytest.raises(MongoAdminError, match="rs0"):
        replset.view_from_replies(load("hello_primary.json"), None)


@pytest.mark.parametrize(
    "changes, expected",
    [
        ({"members": {B: {"stateStr": "RECOVERING", "state": 3}}}, "%s is RECOVERING" % B),
        (
            {"members": {C: {"health": 0.0, "stateStr": "(not reachable/healthy)", "state": 8}}},
            "%s is not reachable" % C,
        ),
        ({"members": {A: {"stateStr": "SECONDARY", "state": 2}}}, "rs0 has no primary"),
        ({"members": {B: {"stateStr": "PRIMARY", "state": 1}}}, "rs0 reports 2 primaries"),
        ({"lag": {C: 42}}, "%s is 42.0 s behind the primary" % C),
    ],
)
def test_set_problems(changes, expected):
    problems = replset.set_problems(view(**changes), 10.0)
    assert any(expected in problem for problem in problems), problems


def test_no_lag_without_a_primary():
    seen = view(members={A: {"stateStr": "SECONDARY", "state": 2}}, lag={C: 600})
    assert all(m["lag_s"] is None for m in seen["members"])


# --- the order and the refusals ----------------------------------------------------------------------------


def test_order_secondaries_first_primary_last_one_at_a_time():
    plan = mongodb_roll.roll_plan(view(), [A, B, C])
    assert plan["order"] == [B, C, A]
    assert plan["serial"] == plan["batch"] == 1 and plan["batches"] == 3
    assert plan["plan"] == [[B], [C], [A]]
    assert plan["available"] is True and plan["aggressive"] is False
    assert plan["rf"] == 3 and plan["replicas_needed"] == 2
    assert "primary %s last" % A in plan["rule"]


def test_order_keeps_the_inventory_order_of_the_secondaries():
    assert mongodb_roll.roll_plan(view(), [C, A, B])["order"] == [C, B, A]
    # a port left out is 27017
    assert mongodb_roll.roll_plan(view(), ["mongo-a.example.net", B])["order"] == [B, A]


def test_the_primary_moves_and_the_order_follows():
    moved = view(members={A: {"stateStr": "SECONDARY", "state": 2}, B: {"stateStr": "PRIMARY", "state": 1}})
    assert mongodb_roll.roll_plan(moved, [A, B, C])["order"] == [A, C, B]


def test_a_roll_of_secondaries_only_says_the_primary_is_not_rolled():
    plan = mongodb_roll.roll_plan(view(), [B, C])
    assert plan["order"] == [B, C]
    assert "not rolled" in plan["rule"]


def test_fewer_than_three_voting_members_refused_naming_aggressive():
    two = view(votingMembersCount=2)
    with pytest.raises(mongodb_roll.MongoRollError) as caught:
        mongodb_roll.roll_plan(two, [A, B])
    message = str(caught.value)
    assert message.startswith("aggressive:")
    assert "2 voting members" in message and "at least 3" in message and "tactician_aggressive" in message
    plan = mongodb_roll.roll_plan(two, [A, B], aggressive=True)
    assert plan["available"] is False and plan["aggressive"] is True
    assert plan["order"] == [B, A]


def test_standalone_refused_unless_aggressive():
    standalone = replset.view_from_replies(load("hello_standalone.json"))
    with pytest.raises(mongodb_roll.MongoRollError) as caught:
        mongodb_roll.roll_plan(standalone, ["127.0.0.1:27217"])
    message = str(caught.value)
    assert message.startswith("aggressive:")
    assert "standalone" in message and "no redundancy" in message and "1 - 1 = 0" in message
    plan = mongodb_roll.roll_plan(standalone, ["127.0.0.1:27217"], aggressive=True)
    assert plan["available"] is False and plan["order"] == ["127.0.0.1:27217"] and plan["serial"] == 1


def test_mongos_refused():
    with pytest.raises(mongodb_roll.MongoRollError, match="mongos"):
        mongodb_roll.roll_plan(replset.view_from_replies(load("hello_mongos.json")), ["r:27017"], aggressive=True)


def test_no_primary_refused_for_the_order():
    with pytest.raises(mongodb_roll.MongoRollError, match="no primary"):
        mongodb_roll.roll_plan(view(members={A: {"stateStr": "SECONDARY", "state": 2}}), [A, B, C])


def test_an_arbiter_is_rolled_with_the_secondaries_and_warned_of():
    plan = mongodb_roll.roll_plan(view(members={C: {"stateStr": "ARBITER", "state": 7}}), [A, B, C])
    assert plan["order"] == [B, C, A]
    assert any("arbiter" in warning for warning in plan["warnings"])


@pytest.mark.parametrize(
    "nodes, field, allowed",
    [
        ([], "nodes:", "non-empty list"),
        ("mongo-a", "nodes:", "non-empty list"),
        ([A, 7], "nodes:", "'host:port'"),
        ([A, "mongo-b:http"], "nodes:", "'host:port'"),
        ([A, "mongo-x.example.net:27017"], "nodes: mongo-x.example.net:27017 is not a member", A),
    ],
)
def test_bad_nodes_named(nodes, field, allowed):
    with pytest.raises(mongodb_roll.MongoRollError) as caught:
        mongodb_roll.roll_plan(view(), nodes)
    assert str(caught.value).startswith(field) and allowed in str(caught.value)


@pytest.mark.parametrize(
    "args, field",
    [
        ((0, 10), "max_lag_s"),
        ((-1, 10), "max_lag_s"),
        (("ten", 10), "max_lag_s"),
        ((10, -1), "max_wait_s"),
        ((10, True), "max_wait_s"),
    ],
)
def test_bad_limits_named(args, field):
    with pytest.raises(mongodb_roll.MongoRollError, match="^%s:" % field):
        mongodb_roll.check_limits(*args)


# --- waiting for health and lag ----------------------------------------------------------------------------


def test_wait_healthy_returns_at_once_when_healthy():
    clock = Clock()
    seen = mongodb_roll.wait_healthy(view, 10, 60, "before x stops", clock=clock, sleep=clock.sleep)
    assert seen["waited_s"] == 0 and seen["summary"]["primary"] == A
    assert seen["summary"]["members"][C] == "SECONDARY, lag 2.0 s"


def test_wait_healthy_waits_for_the_lag_to_come_down():
    clock = Clock()
    lags = iter([30, 20, 12, 4])
    seen = mongodb_roll.wait_healthy(
        lambda: view(lag={C: next(lags)}), 10, 60, "before x stops", interval_s=5, clock=clock, sleep=clock.sleep
    )
    assert seen["waited_s"] == 15
    assert len(seen["problems_seen"]) == 3 and "30.0 s behind" in seen["problems_seen"][0][0]


def test_lag_that_stays_stops_the_roll_naming_member_and_limit():
    clock = Clock()
    with pytest.raises(guards.ClusterNotReady) as caught:
        mongodb_roll.wait_healthy(
            lambda: view(lag={B: 45}), 10, 30, "before b stops", interval_s=5, clock=clock, sleep=clock.sleep
        )
    message = str(caught.value)
    assert message.startswith("before b stops: the replica set is not healthy after 30 s (max_wait_s 30)")
    assert "%s is 45.0 s behind the primary (replication lag above 10.0 s)" % B in message
    assert caught.value.kind == "cluster not ready"
    assert caught.value.seen["replica_set"]["members"][B] == "SECONDARY, lag 45.0 s"


def test_no_primary_is_waited_for_then_stops():
    clock = Clock()
    with pytest.raises(guards.ClusterNotReady, match="has no primary"):
        mongodb_roll.wait_healthy(
            lambda: view(members={A: {"stateStr": "SECONDARY", "state": 2}}),
            10,
            10,
            "x",
            clock=clock,
            sleep=clock.sleep,
        )


def test_an_unreadable_member_is_waited_for():
    clock = Clock()
    replies = iter([MongoAdminError("connection refused"), None])

    def read():
        reply = next(replies)
        if reply is not None:
            raise reply
        return view()

    seen = mongodb_roll.wait_healthy(read, 10, 10, "x", clock=clock, sleep=clock.sleep)
    assert seen["waited_s"] == 1 and "could not be read: connection refused" in seen["problems_seen"][0][0]


def test_check_replica_set_reads_the_first_member_that_answers():
    asked = []

    class Client:
        def __init__(self, params):
            self.params = params
            self.admin = self

        def command(self, name, *args):
            asked.append((self.params["login_host"], name))
            if self.params["login_host"] == "down":
                raise MongoAdminError("connection refused")
            return {"hello": load("hello_secondary.json"), "replSetGetStatus": status()}[name]

        def close(self):
            pass

    result = mongodb_roll.check_replica_set(
        [{"login_host": "down", "login_port": 27017}, {"login_host": "mongo-b.example.net", "login_port": 27017}],
        Client,
        [A, B, C],
        10,
        0,
    )
    assert result["healthy"] and result["order"] == [B, C, A] and result["rule"]["batches"] == 3
    assert asked == [("down", "hello"), ("mongo-b.example.net", "hello"), ("mongo-b.example.net", "replSetGetStatus")]


# --- the node's step: the set checked right before its stop, a primary stepped down first -------------------


class FakeMongo:
    """A member's connection: hello and replSetGetStatus from the recorded replies; replSetStepDown makes another
    member primary after `elect_after` further reads."""

    def __init__(self, me=A, elect_after=1, elect=B):
        self.me = me
        self.elect_after = elect_after
        self.elect = elect
        self.primary = A
        self.stepped = None
        self.commands = []
        self.admin = self

    def __call__(self, params):
        return self

    def command(self, name, *args, **kwargs):
        self.commands.append(name)
        if name == "replSetStepDown":
            self.stepped = args[0]
            self.primary = None
            return {"ok": 1.0}
        if name == "hello":
            return load("hello_primary.json") if self.me == self.primary else load("hello_secondary.json")
        if name == "replSetGetStatus":
            if self.stepped is not None and self.primary is None:
                if self.elect_after <= 0:
                    self.primary = self.elect
                self.elect_after -= 1
            members = {}
            for name_ in (A, B, C):
                members[name_] = {
                    "stateStr": "PRIMARY" if name_ == self.primary else "SECONDARY",
                    "self": name_ == self.me,
                }
            return status(members=members)
        raise AssertionError(name)

    def close(self):
        pass


def node(fake, **params):
    values = dict(
        address=fake.me,
        client_factory=fake,
        stop_command=["true"],
        start_command=["true"],
        poll_interval=0.01,
        guard={"max_wait_s": 2, "interval_s": 0.01},
    )
    values.update(params)
    return MongoNode(values, catalog=None)


def test_primary_steps_down_and_waits_for_a_new_primary_before_it_stops():
    fake = FakeMongo(me=A, elect_after=2)
    member = node(fake)
    checked = member.check_before_stop()
    assert checked["replica_set"]["primary"] == A
    steps = member.prepare_restart()
    assert steps == ["step down", "new primary %s" % B]
    assert fake.stepped == 60
    assert fake.commands.count("replSetStepDown") == 1


def test_a_secondary_is_not_stepped_down():
    fake = FakeMongo(me=B)
    member = node(fake)
    member.check_before_stop()
    assert member.prepare_restart() == []
    assert "replSetStepDown" not in fake.commands


def test_no_new_primary_after_step_down_stops_before_the_stop():
    fake = FakeMongo(me=A, elect_after=10**6)
    member = node(fake, guard={"max_wait_s": 0.05, "interval_s": 0.01})
    member.check_before_stop()
    with pytest.raises(guards.ClusterNotReady) as caught:
        member.prepare_restart()
    assert caught.value.kind == "failover"
    assert "stepped down but no other member was elected primary" in str(caught.value)


def test_lagging_set_stops_before_the_member_is_touched():
    fake = FakeMongo(me=B)
    original = fake.command

    def lagging(name, *args, **kwargs):
        reply = original(name, *args, **kwargs)
        if name == "replSetGetStatus":
            reply["members"][2]["optimeDate"] = reply["members"][0]["optimeDate"] - datetime.timedelta(seconds=99)
        return reply

    fake.command = lagging
    member = node(fake, guard={"max_wait_s": 0.05, "interval_s": 0.01, "max_lag_s": 5})
    with pytest.raises(guards.ClusterNotReady, match="99.0 s behind the primary"):
        member.check_before_stop()


def test_guard_max_lag_s_checked():
    with pytest.raises(guards.GuardError, match="^guard.max_lag_s:"):
        guards.GuardPolicy.from_dict({"max_lag_s": 0})


# --- a live setting through the step machine: getParameter, setParameter, read back ---------------------------


class FakeParameters:
    """A mongod's parameters: getParameter answers as the recorded reply (get_parameter.json) with the values
    held, setParameter as set_parameter_wiredtiger_cache.json (`was`: the value before)."""

    def __init__(self):
        self.values = {k: v for k, v in load("get_parameter.json").items() if k[0] != "$" and k != "ok"}
        self.commands = []
        self.admin = self

    def __call__(self, params):
        return self

    def command(self, name, *args, **kwargs):
        self.commands.append((name, dict(kwargs)))
        if name == "getParameter":
            wanted = next(iter(kwargs))
            reply = dict(load("get_parameter.json"))
            for key in self.values:
                reply.pop(key, None)
            if wanted in self.values:
                reply[wanted] = self.values[wanted]
            return reply
        if name == "setParameter":
            key, value = next(iter(kwargs.items()))
            reply = dict(load("set_parameter_wiredtiger_cache.json"), was=self.values.get(key))
            self.values[key] = value
            return reply
        raise AssertionError(name)

    def close(self):
        pass


def _mongodb_catalog():
    from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog import Catalog
    from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog_files import load_catalog_file

    return Catalog(load_catalog_file(os.path.join(ROOT, "catalog", "mongodb-7.0.yml")))


def test_a_live_setting_is_set_read_back_and_unchanged_the_second_time():
    from ansible_collections.tactician.nosql.plugins.module_utils.apply import node_step

    fake = FakeParameters()
    catalog = _mongodb_catalog()
    member = MongoNode(dict(address=A, client_factory=fake), catalog)

    planned = node_step.reconfigure(member, catalog, {"ttlMonitorSleepSecs": 30}, check_mode=True)
    assert planned["changed"] and planned["steps"] == ["set ttlMonitorSleepSecs live"]
    assert planned["diff"]["before"] == {"ttlMonitorSleepSecs": 60} and not planned["restart_required"]
    assert not [name for name, _args in fake.commands if name == "setParameter"]

    done = node_step.reconfigure(member, catalog, {"ttlMonitorSleepSecs": 30})
    assert done["changed"] and done["steps"] == ["set ttlMonitorSleepSecs live", "verify"]
    assert done["commands"] == ["setParameter ttlMonitorSleepSecs=30"]
    assert ("setParameter", {"ttlMonitorSleepSecs": 30}) in fake.commands and fake.values["ttlMonitorSleepSecs"] == 30

    again = node_step.reconfigure(member, catalog, {"ttlMonitorSleepSecs": 30})
    assert not again["changed"] and again["steps"] == []


# --- while a member is away: the other members watched --------------------------------------------------------


class FakeSet:
    """Three members on one fake network: `away` answers no connection (the member being restarted), `lost` neither
    and is reported by the others with health 0 once `lose_after` status reads have passed."""

    def __init__(self, away=B, lost=None, lose_after=0, back_after=10**6):
        self.away, self.lost, self.lose_after, self.back_after = away, lost, lose_after, back_after
        self.reads = 0
        self.hellos_of_away = 0

    def __call__(self, params):
        return FakeMember(self, "%s:%d" % (params["login_host"], params["login_port"]))


class FakeMember:
    def __init__(self, network, name):
        self.network, self.name = network, name
        self.admin = self

    def command(self, name, *args, **kwargs):
        net = self.network
        lost_now = net.lost is not None and net.reads >= net.lose_after
        if self.name == net.away:
            net.hellos_of_away += 1
            if net.hellos_of_away <= net.back_after:
                raise MongoAdminError("connection refused")
        if self.name == net.lost and lost_now:
            raise MongoAdminError("connection refused")
        if name == "hello":
            return load("hello_primary.json") if self.name == A else load("hello_secondary.json")
        if name == "replSetGetStatus":
            net.reads += 1
            members = {}
            for member in (A, B, C):
                gone = member == net.away or (member == net.lost and lost_now)
                members[member] = {
                    "stateStr": "(not reachable/healthy)" if gone else ("PRIMARY" if member == A else "SECONDARY"),
                    "health": 0.0 if gone else 1.0,
                    "self": member == self.name,
                }
            return status(members=members)
        raise AssertionError(name)

    def close(self):
        pass


def _away_member(network, **guard):
    member = MongoNode(
        dict(
            address=network.away,
            client_factory=network,
            poll_interval=0.01,
            rejoin_timeout=5,
            guard=dict({"max_wait_s": 1, "interval_s": 0.01}, **guard),
        ),
        catalog=None,
    )
    # the set as the away member saw it right before its stop (it is the member marked self)
    member.last_view = view(hello="hello_secondary.json", members={m: {"self": m == network.away} for m in (A, B, C)})
    return member


def test_a_member_lost_while_another_is_away_stops_the_wait():
    network = FakeSet(away=B, lost=C, lose_after=2)
    member = _away_member(network, peer_down_polls=2)
    with pytest.raises(guards.PeerDownError) as caught:
        member.wait_back()
    assert set(caught.value.peers) == {C} and "while %s was away" % B in str(caught.value)
    assert "health 0" in caught.value.peers[C]  # reported by A, which still answers


def test_the_away_member_itself_is_no_peer_and_its_return_ends_the_wait():
    network = FakeSet(away=B, back_after=3)
    member = _away_member(network, peer_down_polls=1)
    back = member.wait_back()
    assert back["secondary"] and network.reads >= 1


def test_a_peer_seen_down_once_is_not_yet_down():
    network = FakeSet(away=B, lost=C, lose_after=0, back_after=0)
    member = _away_member(network, peer_down_polls=2)
    # the one poll before B answers sees C down: once is not yet down, and the step goes on
    assert member.wait_back()["secondary"]
