# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The batch rule of core/replication.py, and the lookup rolling_batch that applies it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from ansible.errors import AnsibleLookupError
from testlib import ROOT

from ansible_collections.tactician.nosql.plugins.lookup.rolling_batch import rolling_batch
from ansible_collections.tactician.nosql.plugins.module_utils.core.replication import (
    CONSISTENCY_LEVELS,
    ReplicationError,
    batch_rule,
    batches,
    cluster_replication,
    redis_replication_factor,
    replicas_needed,
)

# ---------------------------------------------------------------------------------------------------------------
# replicas_needed
# ---------------------------------------------------------------------------------------------------------------

# Replicas each level needs at RF 1, 2, 3, 5; None = more than RF (refused).
NEEDED = {
    "ONE": {1: 1, 2: 1, 3: 1, 5: 1},
    "TWO": {1: None, 2: 2, 3: 2, 5: 2},
    "THREE": {1: None, 2: None, 3: 3, 5: 3},
    "QUORUM": {1: 1, 2: 2, 3: 2, 5: 3},
    "LOCAL_QUORUM": {1: 1, 2: 2, 3: 2, 5: 3},
    "EACH_QUORUM": {1: 1, 2: 2, 3: 2, 5: 3},
    "ALL": {1: 1, 2: 2, 3: 3, 5: 5},
    "LOCAL_ONE": {1: 1, 2: 1, 3: 1, 5: 1},
    "SERIAL": {1: 1, 2: 2, 3: 2, 5: 3},
    "LOCAL_SERIAL": {1: 1, 2: 2, 3: 2, 5: 3},
}


def test_every_level_is_in_the_table():
    assert set(CONSISTENCY_LEVELS) <= set(NEEDED)


@pytest.mark.parametrize("cl", sorted(NEEDED))
@pytest.mark.parametrize("rf", [1, 2, 3, 5])
def test_replicas_needed_every_level(cl, rf):
    expected = NEEDED[cl][rf]
    for spelling in (cl, cl.lower()):
        if expected is None:
            with pytest.raises(
                ReplicationError, match=r"^cl: %s needs \d replicas but the replication factor is %d" % (cl, rf)
            ):
                replicas_needed(spelling, rf)
        else:
            assert replicas_needed(spelling, rf) == expected


@pytest.mark.parametrize("cl", sorted(NEEDED))
@pytest.mark.parametrize("rf", [1, 2, 3, 5])
def test_batch_every_level(cl, rf):
    expected = NEEDED[cl][rf]
    if expected is None:
        with pytest.raises(ReplicationError, match="needs"):
            batch_rule(rf, cl, 10)
    elif rf - expected < 1:
        with pytest.raises(
            ReplicationError, match=r"R = RF - CL = %d - %d = %d: restarting any node" % (rf, expected, rf - expected)
        ):
            batch_rule(rf, cl, 10)
    else:
        rule = batch_rule(rf, cl, 10)
        assert rule["batch"] == rule["serial"] == rf - expected
        assert rule["replicas_needed"] == expected
        assert rule["available"] is True and rule["aggressive"] is False


def test_numbers():
    assert replicas_needed(2, 3) == 2
    assert replicas_needed("2", 3) == 2
    assert replicas_needed(" 1 ", 5) == 1
    assert batch_rule(5, 2, 5)["rule"] == "R = RF - CL = 5 - 2 = 3"
    assert batch_rule("3", "1", "3")["batch"] == 2
    with pytest.raises(ReplicationError, match="^cl: 4 needs 4 replicas but the replication factor is 3"):
        replicas_needed(4, 3)
    for bad in (0, "0", -1, True, None, 1.5, "lots"):
        with pytest.raises(ReplicationError, match="^cl: "):
            replicas_needed(bad, 3)


def test_unknown_level_names_the_allowed_ones():
    with pytest.raises(
        ReplicationError, match="^cl: 'MOST' is not a consistency level; allowed: ONE, TWO, THREE, QUORUM"
    ):
        replicas_needed("MOST", 3)


def test_any_is_refused_with_the_reason():
    for spelling in ("ANY", "any"):
        with pytest.raises(ReplicationError, match="^cl: ANY is refused .* only applies to writes"):
            replicas_needed(spelling, 3)


def test_bad_replication_factor():
    for bad in (0, -2, "x", None, True, {}, {"dc1": 0}):
        with pytest.raises(ReplicationError, match=r"^rf"):
            replicas_needed("ONE", bad)


def test_dict_rf():
    rf = {"dc1": 3, "dc2": 5}
    # LOCAL_QUORUM and EACH_QUORUM: the local data center, by default the one with the fewest replicas.
    assert replicas_needed("LOCAL_QUORUM", rf) == 2
    assert replicas_needed("LOCAL_QUORUM", rf, local_dc="dc2") == 3
    assert replicas_needed("EACH_QUORUM", rf) == 2
    assert replicas_needed("LOCAL_ONE", rf) == 1
    assert replicas_needed("LOCAL_SERIAL", rf, local_dc="dc2") == 3
    # The other levels count every replica.
    assert replicas_needed("QUORUM", rf) == 5
    assert replicas_needed("ALL", rf) == 8
    rule = batch_rule(rf, "LOCAL_QUORUM", 8)
    assert rule["rule"] == "R = RF(dc1) - CL = 3 - 2 = 1" and rule["batch"] == 1 and rule["local_dc"] == "dc1"
    rule = batch_rule(rf, "local_quorum", 8, local_dc="dc2")
    assert rule["rule"] == "R = RF(dc2) - CL = 5 - 3 = 2" and rule["batch"] == 2
    assert batch_rule(rf, "QUORUM", 8)["batch"] == 3
    assert batch_rule(rf, "ONE", 8)["batch"] == 7
    with pytest.raises(ReplicationError, match="^local_dc: 'dc9' is not a data center of rf; allowed: dc1, dc2"):
        replicas_needed("LOCAL_QUORUM", rf, local_dc="dc9")


# ---------------------------------------------------------------------------------------------------------------
# batch_rule
# ---------------------------------------------------------------------------------------------------------------


def test_worked_examples_rf3():
    one = batch_rule(3, "ONE", 3)
    assert (one["batch"], one["batches"], one["rule"], one["serial"]) == (2, 2, "R = RF - CL = 3 - 1 = 2", 2)
    quorum = batch_rule(3, "QUORUM", 3)
    assert (quorum["batch"], quorum["batches"], quorum["rule"]) == (1, 3, "R = RF - CL = 3 - 2 = 1")
    with pytest.raises(ReplicationError) as refused:
        batch_rule(3, "ALL", 3)
    message = str(refused.value)
    assert "R = RF - CL = 3 - 3 = 0: restarting any node would make CL ALL unavailable" in message
    assert "lower the consistency level, raise the replication factor, or set aggressive: true" in message


def test_result_keys():
    rule = batch_rule(3, "QUORUM", ["a", "b", "c"])
    assert rule == dict(
        batch=1,
        batches=3,
        rule="R = RF - CL = 3 - 2 = 1",
        rf=3,
        cl="QUORUM",
        replicas_needed=2,
        nodes=3,
        sets=None,
        nodes_per_set=None,
        batch_sets=None,
        local_dc=None,
        aggressive=False,
        available=True,
        serial=1,
        plan=[["a"], ["b"], ["c"]],
    )


def test_batch_never_exceeds_the_nodes():
    rule = batch_rule(5, "ONE", 2)
    assert rule["rule"] == "R = RF - CL = 5 - 1 = 4"
    assert rule["batch"] == rule["serial"] == 2 and rule["batches"] == 1


def test_bad_nodes():
    for bad in (0, [], "", None, "x", -3):
        with pytest.raises(ReplicationError, match="^nodes: "):
            batch_rule(3, "ONE", bad)


def test_complete_sets():
    hosts = ["a1", "a2", "b1", "b2", "c1", "c2"]
    one = batch_rule(3, "ONE", hosts, sets=3)
    assert one["batch_sets"] == 2 and one["nodes_per_set"] == 2
    assert one["batch"] == one["serial"] == 4 and one["batches"] == 2
    assert one["rule"] == "R = count(sets) - CL = 3 - 1 = 2 sets of 2 nodes = 4 nodes"
    assert one["plan"] == [["a1", "a2", "b1", "b2"], ["c1", "c2"]]
    quorum = batch_rule(3, "QUORUM", 6, sets=3)
    assert quorum["batch_sets"] == 1 and quorum["batch"] == 2 and quorum["batches"] == 3
    assert quorum["rule"] == "R = count(sets) - CL = 3 - 2 = 1 set of 2 nodes = 2 nodes"
    # rf may be left out: it equals the number of sets.
    assert batch_rule(None, "ONE", 6, sets=3)["batch"] == 4
    assert batch_rule(3, "ONE", 7, sets=3, nodes_per_set=3)["batch"] == 6


def test_complete_sets_refusals():
    with pytest.raises(ReplicationError, match="^cl: R = count\\(sets\\) - CL = 3 - 3 = 0: restarting any node"):
        batch_rule(3, "ALL", 6, sets=3)
    with pytest.raises(ReplicationError, match="^sets: 2 complete-sets but the replication factor is 3"):
        batch_rule(3, "ONE", 6, sets=2)
    with pytest.raises(ReplicationError, match="^nodes_per_set: 7 nodes do not split into 3 complete-sets"):
        batch_rule(3, "ONE", 7, sets=3)
    with pytest.raises(ReplicationError, match="^rf: with complete-sets"):
        batch_rule({"dc1": 3}, "ONE", 6, sets=3)
    with pytest.raises(ReplicationError, match="^sets: "):
        batch_rule(3, "ONE", 6, sets=0)


def test_aggressive():
    rule = batch_rule(3, "ALL", ["a", "b", "c"], aggressive=True)
    assert rule["aggressive"] is True and rule["available"] is False
    assert rule["batch"] == rule["serial"] == 3 and rule["batches"] == 1
    assert rule["rule"].startswith("R = RF - CL = 3 - 3 = 0; aggressive: 3 of 3 nodes at a time")
    rule = batch_rule(3, "ALL", 6, aggressive=True, aggressive_batch=2)
    assert (rule["batch"], rule["batches"], rule["available"]) == (2, 3, False)
    # aggressive only permits: with R >= 1 the safe batch stays, unless a larger aggressive_batch is asked for.
    rule = batch_rule(3, "QUORUM", 6, aggressive=True)
    assert (rule["batch"], rule["aggressive"], rule["available"]) == (1, False, True)
    rule = batch_rule(3, "QUORUM", 6, aggressive=True, aggressive_batch=3)
    assert (rule["batch"], rule["aggressive"], rule["available"]) == (3, True, False)
    rule = batch_rule(3, "ONE", 6, sets=3, aggressive=True)
    assert rule["batch"] == 4 and rule["available"] is True
    rule = batch_rule(3, "ALL", 6, sets=3, aggressive=True)
    assert rule["batch"] == 6 and rule["batch_sets"] is None and rule["available"] is False


def test_aggressive_batch_checks():
    with pytest.raises(ReplicationError, match="^aggressive_batch: only used with aggressive: true"):
        batch_rule(3, "ALL", 3, aggressive_batch=1)
    with pytest.raises(
        ReplicationError, match="^aggressive_batch: 4 is more than the 3 nodes to roll; allowed: 1 to 3"
    ):
        batch_rule(3, "ALL", 3, aggressive=True, aggressive_batch=4)
    with pytest.raises(ReplicationError, match="^aggressive_batch: "):
        batch_rule(3, "ALL", 3, aggressive=True, aggressive_batch=0)


def test_batches():
    assert batches(["a", "b", "c", "d", "e"], 2) == [["a", "b"], ["c", "d"], ["e"]]
    assert batches(["a", "b"], 5) == [["a", "b"]]
    assert batches(("a", "b", "c"), 1) == [["a"], ["b"], ["c"]]
    assert batches([], 3) == []
    with pytest.raises(ReplicationError, match="^batch: "):
        batches(["a"], 0)


def test_redis_replication_factor():
    shards = [
        {"master": "127.0.0.1:6381", "replicas": ["127.0.0.1:6384"]},
        {"master": "127.0.0.1:6382", "replicas": ["127.0.0.1:6385", "127.0.0.1:6386"]},
    ]
    assert redis_replication_factor(shards) == 2
    assert redis_replication_factor([{"master": "m"}]) == 1
    with pytest.raises(ReplicationError, match="^shards: "):
        redis_replication_factor([])
    with pytest.raises(ReplicationError, match=r"^shards\[0\]: "):
        redis_replication_factor(["m"])


# ---------------------------------------------------------------------------------------------------------------
# cluster_replication: one precedence of the inventory's variables for every playbook
# ---------------------------------------------------------------------------------------------------------------


def test_cluster_replication_precedence():
    node = {"tactician_cassandra_replication_factor": 2, "tactician_redis_replicas": 2}
    play = {"tactician_cassandra_replication_factor": 5}
    assert cluster_replication("cassandra", [node, play]) == dict(rf=2, source="tactician_cassandra_replication_factor")
    assert cluster_replication("cassandra", [{}, play])["rf"] == 5  # the play's when the node has none
    assert cluster_replication("cassandra", [{"tactician_cassandra_replication_factor": None}, play])["rf"] == 5
    override = {"tactician_replication_factor": "4"}  # -e gives text
    assert cluster_replication("cassandra", [node, override]) == dict(rf=4, source="tactician_replication_factor")
    assert cluster_replication("redis", [override, node])["rf"] == 4
    assert cluster_replication("redis", node) == dict(rf=3, source="tactician_redis_replicas + 1")
    assert cluster_replication("redis", {"tactician_redis_replicas": 0})["rf"] == 1
    assert cluster_replication("redis", {"tactician_cassandra_replication_factor": 5})["rf"] == 2  # not Redis's
    assert cluster_replication("cassandra", {"tactician_redis_replicas": 4})["rf"] == 3  # not Cassandra's
    assert cluster_replication("cassandra", [])["source"].startswith("default 3")
    assert cluster_replication("mongodb", None)["rf"] == 3
    assert cluster_replication("cassandra", {"tactician_replication_factor": {"dc1": 3, "dc2": "2"}})["rf"] == {
        "dc1": 3,
        "dc2": 2,
    }


@pytest.mark.parametrize(
    "store, facts, message",
    [
        ("mysql", {}, r"^store: 'mysql' is not allowed; choose one of cassandra, redis, mongodb"),
        ("cassandra", {"tactician_replication_factor": "three"}, r"^tactician_replication_factor: 'three' is not"),
        ("cassandra", {"tactician_replication_factor": 0}, r"^tactician_replication_factor: 0 is not a whole number"),
        ("cassandra", {"tactician_replication_factor": {}}, r"^tactician_replication_factor: the map .* is empty"),
        ("cassandra", {"tactician_replication_factor": {"dc1": "x"}}, r"^tactician_replication_factor\[dc1\]: "),
        ("cassandra", {"tactician_cassandra_replication_factor": True}, r"^tactician_cassandra_replication_factor: "),
        ("redis", {"tactician_redis_replicas": -1}, r"^tactician_redis_replicas: -1 is not a whole number >= 0"),
        ("redis", ["x"], r"^facts\[0\]: 'x' is not a mapping"),
    ],
)
def test_cluster_replication_names_the_bad_variable(store, facts, message):
    with pytest.raises(ReplicationError, match=message):
        cluster_replication(store, facts)


# ---------------------------------------------------------------------------------------------------------------
# The lookup
# ---------------------------------------------------------------------------------------------------------------


def test_lookup_function():
    assert rolling_batch(rf=3, cl="QUORUM", nodes=3)[0]["batch"] == 1
    with pytest.raises(AnsibleLookupError, match="^rolling_batch: cl: R = RF - CL = 3 - 3 = 0"):
        rolling_batch(rf=3, cl="ALL", nodes=3)
    with pytest.raises(AnsibleLookupError, match="^rolling_batch: rf: "):
        rolling_batch(cl="ONE", nodes=3)
    assert rolling_batch(rf=3, cl="ONE", nodes=3)[0]["rf_source"] == "rf"


def test_lookup_function_derives_rf_from_the_store_and_the_inventory():
    facts = [{"tactician_cassandra_replication_factor": 5}, {"tactician_replication_factor": None}]
    rule = rolling_batch(cl="QUORUM", nodes=["a", "b", "c", "d", "e"], store="cassandra", facts=facts)[0]
    assert rule["rf"] == 5 and rule["batch"] == 2 and rule["rf_source"] == "tactician_cassandra_replication_factor"
    assert rolling_batch(rf=3, cl="ONE", nodes=3, store="cassandra", facts=facts)[0]["rf"] == 3  # rf given wins
    redis = rolling_batch(cl="ONE", nodes=6, store="redis", facts=[])[0]
    assert redis["rf"] == 2 and redis["batch"] == 1 and redis["rf_source"].startswith("default")
    with pytest.raises(AnsibleLookupError, match="^rolling_batch: tactician_redis_replicas: 'one' is not"):
        rolling_batch(cl="ONE", nodes=6, store="redis", facts=[{"tactician_redis_replicas": "one"}])
    with pytest.raises(AnsibleLookupError, match="^rolling_batch: cl: R = RF - CL = 1 - 1 = 0"):
        rolling_batch(cl="ONE", nodes=1, store="cassandra", facts=[{"tactician_cassandra_replication_factor": 1}])


_LOOKUP_SCRIPT = """
import json, sys
from ansible.plugins.loader import init_plugin_loader, lookup_loader
init_plugin_loader([sys.argv[1]])
lookup = lookup_loader.get("tactician.nosql.rolling_batch")
out = []
for kwargs in json.loads(sys.argv[2]):
    variables = kwargs.pop("_variables", {})
    try:
        out.append(lookup.run([], variables=variables, **kwargs))
    except Exception as exc:
        out.append("%s: %s" % (type(exc).__name__, exc))
print(json.dumps(out))
"""


def test_lookup_plugin_through_the_loader():
    # In a process of its own: the collection loader is global and would change how the other tests import.
    calls = [
        dict(rf=3, cl="QUORUM", nodes=["a", "b", "c"]),
        dict(rf={"dc1": 3, "dc2": 5}, cl="LOCAL_QUORUM", nodes=8, local_dc="dc2"),
        dict(rf=3, cl="ALL", nodes=3, aggressive=True),
        dict(rf=3, cl="ONE", nodes=6, sets=3),
        dict(rf=3, cl="ANY", nodes=3),
        dict(rf=3, cl="ALL", nodes=3),
        dict(
            store="cassandra",
            cl="ONE",
            nodes=["c1", "c2", "c3"],
            _variables={
                "hostvars": {"c1": {"tactician_cassandra_replication_factor": 2}},
                "tactician_cassandra_replication_factor": 3,
            },
        ),
        dict(
            store="redis",
            cl="ONE",
            nodes=["r1", "r2"],
            _variables={"hostvars": {"r1": {"tactician_redis_replicas": 1}}, "tactician_replication_factor": "3"},
        ),
    ]
    collections = os.path.join(ROOT, ".collections")
    done = subprocess.run(
        [sys.executable, "-c", _LOOKUP_SCRIPT, collections, json.dumps(calls)],
        capture_output=True,
        text=True,
        check=True,
    )
    quorum, local, aggressive, sets, refused_any, refused_all, from_node, override = json.loads(done.stdout)
    assert len(quorum) == 1 and quorum[0]["serial"] == 1 and quorum[0]["plan"] == [["a"], ["b"], ["c"]]
    assert local[0]["batch"] == 2 and local[0]["rule"] == "R = RF(dc2) - CL = 5 - 3 = 2"
    assert aggressive[0]["aggressive"] is True and aggressive[0]["batch"] == 3
    assert sets[0]["batch"] == 4
    assert "Error: rolling_batch: cl: ANY is refused" in refused_any
    assert "Error: rolling_batch: cl: R = RF - CL = 3 - 3 = 0: restarting any node" in refused_all
    assert from_node[0]["rf"] == 2, from_node and from_node[0]["rf_source"] == "tactician_cassandra_replication_factor"
    assert (
        override[0]["rf"] == 3
        and override[0]["batch"] == 2
        and override[0]["rf_source"] == "tactician_replication_factor"
    )
