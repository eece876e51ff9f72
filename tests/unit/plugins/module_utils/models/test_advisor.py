# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The tactic advisor of seed 000: features, triggers, the Hoeffding tree, oscillation cost, state replay."""

from __future__ import annotations

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.models import advisor


@pytest.fixture(scope="module")
def trained():
    model = advisor.TacticAdvisor()
    model.bootstrap(advisor.knowledge_base(1600, seed=0))
    return model


def test_features_name_unknown_and_bad_values():
    x = advisor.features({"cpu": 95, "change_in_progress": True})
    assert x["cpu"] == 95.0 and x["change_in_progress"] == 1.0 and x["memory"] == 0.0
    with pytest.raises(advisor.AdvisorError, match="features.cpu_load: unknown feature"):
        advisor.features({"cpu_load": 1})
    with pytest.raises(advisor.AdvisorError, match="features.cpu: 'high'"):
        advisor.features({"cpu": "high"})


def test_triggers_are_sla_breaches_and_saturation():
    quiet = advisor.features({"cpu": 50, "p999_ms": 5, "sla_p999_ms": 10})
    assert advisor.triggers(quiet) == []
    hot = advisor.features({"cpu": 93, "p999_ms": 12, "sla_p999_ms": 10, "throughput": 10, "sla_min_throughput": 100})
    reasons = advisor.triggers(hot)
    assert len(reasons) == 3 and any("cpu at 93" in r for r in reasons)


def test_tree_learns_the_knowledge_base(trained):
    held_out = advisor.knowledge_base(400, seed=1)
    triggered = [(x, t) for x, t in held_out if advisor.triggers(x)]
    hits = sum(trained.decide(x, now=0)["tactic"] == t for x, t in triggered)
    assert hits / len(triggered) > 0.7


def test_no_trigger_means_none_and_a_running_change_waits(trained):
    x = {"cpu": 40, "p999_ms": 3, "sla_p999_ms": 10, "read_share": 0.9, "unindexed_query_share": 0.6}
    assert trained.decide(x)["tactic"] == "none" and not trained.decide(x)["triggered"]
    busy = dict(x, p999_ms=30, change_in_progress=1)
    decision = trained.decide(busy)
    assert decision["tactic"] == "none" and "a change is in progress" in decision["reasons"]


def test_oscillation_cost_keeps_a_fresh_index(tmp_path):
    model = advisor.TacticAdvisor(state_file=str(tmp_path / "advisor.jsonl"), oscillation_penalty=1.0)
    examples = [ex for ex in advisor.knowledge_base(1600, seed=2) if ex[1] in ("drop_index", "none", "add_shard")]
    model.bootstrap(examples)
    x = {
        "write_share": 0.9,
        "read_share": 0.1,
        "indexes": 4,
        "index_write_share": 0.6,
        "p999_ms": 30,
        "sla_p999_ms": 10,
    }
    assert model.decide(x, now=1000)["tactic"] == "drop_index"
    model.applied_tactic("add_index", at=900)
    decision = model.decide(x, now=1000)
    assert decision["tactic"] != "drop_index" and "undo add_index" in decision["suppressed"]
    assert model.decide(x, now=900 + 7200)["tactic"] == "drop_index"  # outside the window
    again = advisor.TacticAdvisor(state_file=str(tmp_path / "advisor.jsonl"), oscillation_penalty=1.0)
    assert again.learned == model.learned and again.applied == model.applied
    replayed = again.decide(x, now=1000)
    assert dict(replayed, elapsed_ms=0) == dict(decision, elapsed_ms=0)


def test_outcomes_teach_the_tree(tmp_path):
    model = advisor.TacticAdvisor(grace_period=20)
    x = {"cpu": 95, "read_share": 0.95, "hit_ratio": 0.95, "p999_ms": 20, "sla_p999_ms": 10, "nodes": 3}
    for _round in range(300):
        model.outcome(x, "add_replica", improved=True)
    assert model.decide(x)["tactic"] == "add_replica"
    with pytest.raises(advisor.AdvisorError, match="tactic: 'teleport'"):
        model.learn(x, "teleport")


def test_observed_examples_outweigh_the_bootstrap_after_a_drift(tmp_path):
    """Once add_replica stops helping here (replicas at their maximum), what is observed on the cluster wins."""
    examples = advisor.knowledge_base(count=700, seed=3)
    hot = [x for x, label in advisor.knowledge_base(count=700, seed=4) if label == "add_replica"]
    state = tmp_path / "advisor.jsonl"
    tactics = advisor.TacticAdvisor(state_file=str(state), seed=0)
    tactics.bootstrap(examples)
    assert tactics.decide(hot[0], now=0.0)["tactic"] == "add_replica"
    for x in hot[:40]:
        tactics.learn(x, "add_node", source="observed")
    assert tactics.decide(hot[-1], now=0.0)["tactic"] == "add_node"
    # The weight is replayed from the state file: the same stream gives the same tree.
    assert advisor.TacticAdvisor(state_file=str(state), seed=0).decide(hot[-1], now=0.0)["tactic"] == "add_node"
    with pytest.raises(advisor.AdvisorError, match="observed_weight: 0 is not a number > 0"):
        advisor.TacticAdvisor(observed_weight=0)
