# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The realized effect of a plan step next to its prediction, kept in the history store."""

from __future__ import annotations

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.planning import effects
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history

PLAN = {
    "schema": "tactician.plan/v1",
    "created": "2026-11-22T06:00:00Z",
    "store": "cassandra",
    "kind": "static",
    "cluster": {"name": "lab", "nodes": 3},
    "steps": [
        {
            "step": 0,
            "configuration": {"concurrent_writes": 64},
            "nodes": ["n1", "n2", "n3"],
            "predicted": {"ops_per_s_before": 1000.0, "ops_per_s_after": 1200.0},
        }
    ],
    "predicted": {"ops_per_s": 1200.0},
}


def sample(throughput, read_ratio=0.1):
    return {"throughput": throughput, "read_ratio": read_ratio, "time": 0.0, "window_s": 30.0}


def test_record_puts_prediction_and_measurement_side_by_side():
    record = effects.realized(PLAN, sample(900.0), sample(1170.0))
    assert record["predicted"] == {"before": 1000.0, "after": 1200.0, "gain": 0.2}
    assert record["measured"]["gain"] == pytest.approx(0.3) and record["gain_error"] == pytest.approx(0.1)
    assert record["same_workload"] and record["notes"] == [] and record["cluster"] == "lab"
    assert effects.summary(record).startswith("concurrent_writes=64: predicted +20.0 %, measured +30.0 % (900 -> 1,170")


def test_a_changed_workload_or_a_step_not_applied_is_said():
    record = effects.realized(PLAN, sample(900.0, 0.1), sample(2000.0, 0.9), applied=False)
    assert not record["same_workload"] and len(record["notes"]) == 2
    assert "read ratio 0.10 -> 0.90" in record["notes"][1]


def test_bad_input_names_the_field():
    with pytest.raises(effects.EffectError, match=r"after.throughput: missing"):
        effects.realized(PLAN, sample(1.0), {"read_ratio": 0.5})
    with pytest.raises(effects.EffectError, match=r"before.throughput: -1.0 is below the minimum 0"):
        effects.realized(PLAN, sample(-1.0), sample(1.0))
    with pytest.raises(effects.EffectError, match=r"step: 3 is not a step of this plan \(it has 1\)"):
        effects.realized(PLAN, sample(1.0), sample(1.0), step=3)
    with pytest.raises(effects.EffectError, match="plan: expected a plan document"):
        effects.realized({"x": 1}, sample(1.0), sample(1.0))


def test_records_are_kept_once_and_listed_per_cluster(tmp_path):
    store = history.open_history(str(tmp_path / "h.sqlite3"))
    record = effects.realized(PLAN, sample(900.0), sample(1170.0))
    assert effects.save(store, record) is True
    assert effects.save(store, record) is False
    other = effects.realized(dict(PLAN, cluster={"name": "other"}), sample(1.0), sample(1.0))
    effects.save(store, other)
    assert effects.effects(store, "lab") == [record] and len(effects.effects(store)) == 2
    store.close()
