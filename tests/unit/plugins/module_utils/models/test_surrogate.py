# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The throughput surrogates of seed 002: encoding, designs of training points, forests, cluster model, evaluation."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest
from testlib import ROOT

from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog import Catalog
from ansible_collections.tactician.nosql.plugins.module_utils.models import surrogate as sur
from ansible_collections.tactician.nosql.plugins.module_utils.models import (
    surrogate_design,
    surrogate_features,
    surrogate_validation,
)
from ansible_collections.tactician.nosql.plugins.module_utils.models.surrogate import ClusterModel, Surrogate
from ansible_collections.tactician.nosql.plugins.module_utils.models.surrogate_features import (
    FeatureSpace,
    SurrogateError,
)

HW = {"vcpu": 8, "ram_gb": 16, "heap_mb": 4096}
SMALL_HW = {"vcpu": 2, "ram_gb": 4, "heap_mb": 1024}
TUNED = [
    "concurrent_writes",
    "memtable_heap_space",
    "memtable_allocation_type",
    "trickle_fsync",
    "memtable_cleanup_threshold",
]


@pytest.fixture(scope="module")
def cassandra():
    return Catalog.for_store("cassandra")


@pytest.fixture(scope="module")
def space(cassandra):
    return FeatureSpace(cassandra, TUNED, ranges={"memtable_allocation_type": ["heap_buffers", "offheap_objects"]})


# ------------------------------------------------------------------------------------------------ encoding
def test_feature_names_and_one_hot(space):
    names = space.feature_names()
    assert names[: len(surrogate_features.WORKLOAD_FEATURES)] == list(surrogate_features.WORKLOAD_FEATURES)
    assert names[-len(surrogate_features.HARDWARE_FEATURES) :] == list(surrogate_features.HARDWARE_FEATURES)
    assert "memtable_allocation_type=heap_buffers" in names
    assert "memtable_allocation_type=offheap_objects" in names
    assert "memtable_allocation_type=offheap_buffers" not in names  # restricted by the range
    assert space.dimension == len(TUNED)
    config = {
        "concurrent_writes": 48,
        "memtable_heap_space": "2GiB",
        "memtable_allocation_type": "OFFHEAP_OBJECTS",
        "trickle_fsync": "yes",
        "memtable_cleanup_threshold": 0.5,
    }
    row = dict(zip(names, space.encode("A", config, HW), strict=True))
    assert row["concurrent_writes"] == 48
    assert row["memtable_heap_space"] == 2048  # size in the entry's unit (MiB)
    assert row["memtable_allocation_type=offheap_objects"] == 1.0
    assert row["memtable_allocation_type=heap_buffers"] == 0.0
    assert row["trickle_fsync"] == 1.0
    assert row["memtable_cleanup_threshold"] == 0.5
    assert row["heap_mb"] == 4096 and row["vcpu"] == 8 and row["disk_ssd"] == 1.0


def test_workload_features():
    values = surrogate_features.workload_values(
        {"mix": {"read": 0.5, "readmodifywrite": 0.5}, "requestdistribution": "zipfian"}
    )
    assert values["read"] == 0.5 and values["rmw"] == 0.5
    assert values["read_ratio"] == pytest.approx(2 / 3)  # server side: an rmw is one read and one write
    assert values["dist_zipfian"] == 1.0 and values["dist_uniform"] == 0.0
    assert values["records"] == 1000 and values["record_bytes"] == 1000 and values["threads"] == 1
    letter = surrogate_features.workload_values("B")
    assert letter["read"] == pytest.approx(0.95) and letter["update"] == pytest.approx(0.05)
    defaults = surrogate_features.workload_values({})
    assert defaults["dist_uniform"] == 1.0 and defaults["read"] == pytest.approx(0.95)
    scaled = surrogate_features.workload_values({"mix": {"read": 3, "update": 1}})
    assert scaled["read"] == pytest.approx(0.75)


def test_defaults_fill_missing_values(space):
    names = space.feature_names()
    row = dict(zip(names, space.encode("C", {}, HW), strict=True))
    assert row["concurrent_writes"] == 32
    assert row["memtable_heap_space"] == 1024  # 1/4 of the 4096 MiB heap
    assert row["memtable_allocation_type=heap_buffers"] == 1.0
    assert row["trickle_fsync"] == 0.0
    default = space.default_config(HW)
    assert default["memtable_heap_space"] == 1024 and default["memtable_allocation_type"] == "heap_buffers"
    with pytest.raises(SurrogateError, match=r"^config\.memtable_heap_space: missing.*hardware"):
        space.default_config()


def test_enum_default_outside_the_tuning_choices_still_encodes(cassandra):
    space = FeatureSpace(
        cassandra, ["memtable_allocation_type"], ranges={"memtable_allocation_type": ["offheap_objects"]}
    )
    names = space.feature_names()
    assert "memtable_allocation_type=heap_buffers" in names  # the catalog default keeps a column
    assert space.decode_unit([0.2]) == {"memtable_allocation_type": "offheap_objects"}


def test_decode_unit(space, cassandra):
    low = space.decode_unit([0, 0, 0, 0, 0])
    high = space.decode_unit([1, 1, 1, 1, 1])
    assert low == {
        "concurrent_writes": 8,
        "memtable_heap_space": 1024,
        "memtable_allocation_type": "heap_buffers",
        "trickle_fsync": False,
        "memtable_cleanup_threshold": 0.1,
    }
    assert high["concurrent_writes"] == 64 and high["memtable_heap_space"] == 3072
    assert high["memtable_allocation_type"] == "offheap_objects" and high["trickle_fsync"] is True
    middle = space.decode_unit([0.5, 0.5, 0.4, 0.6, 0.123456])
    assert isinstance(middle["concurrent_writes"], int) and middle["concurrent_writes"] == 36
    assert isinstance(middle["memtable_heap_space"], int) and middle["memtable_heap_space"] == 2048
    assert middle["memtable_allocation_type"] == "heap_buffers" and middle["trickle_fsync"] is True
    assert middle["memtable_cleanup_threshold"] == pytest.approx(0.1988)
    cassandra.validate(middle)
    with pytest.raises(SurrogateError, match=r"^u: expected 5 values"):
        space.decode_unit([0.5])


def test_size_range_in_other_units(cassandra):
    space = FeatureSpace(cassandra, ["memtable_heap_space"], ranges={"memtable_heap_space": ["1GiB", "3GiB"]})
    assert space.range("memtable_heap_space") == [1024, 3072]
    assert space.decode_unit([0.25]) == {"memtable_heap_space": 1536}
    redis = FeatureSpace(
        Catalog.for_store("redis"),
        ["maxmemory", "maxmemory-policy"],
        ranges={"maxmemory": ["256mb", "1gb"]},
        hardware_features=("ram_gb",),
    )
    assert redis.range("maxmemory") == [256 * 1024**2, 1024**3]  # bytes, the entry's unit
    assert redis.decode_unit([0, 0.99]) == {"maxmemory": 256 * 1024**2, "maxmemory-policy": "volatile-ttl"}
    assert redis.feature_names()[-1] == "ram_gb"


def test_range_refusal(cassandra):
    with pytest.raises(SurrogateError, match=r"^ranges\.stream_throughput_outbound: .*too wide.*ranges\["):
        FeatureSpace(cassandra, ["stream_throughput_outbound"])
    FeatureSpace(cassandra, ["stream_throughput_outbound"], ranges={"stream_throughput_outbound": [12, 48]})
    with pytest.raises(SurrogateError, match=r"^ranges\.concurrent_writes: \[8, 2048\] is outside the catalog"):
        FeatureSpace(cassandra, ["concurrent_writes"], ranges={"concurrent_writes": [8, 2048]})
    with pytest.raises(SurrogateError, match=r"^ranges\.concurrent_writes: low 64 must be below high 8"):
        FeatureSpace(cassandra, ["concurrent_writes"], ranges={"concurrent_writes": [64, 8]})
    with pytest.raises(SurrogateError, match=r"ranges\.concurrent_reads: not one of the tuned parameters"):
        FeatureSpace(cassandra, ["concurrent_writes"], ranges={"concurrent_reads": [8, 16]})
    # a small catalog range needs no explicit one
    assert FeatureSpace(cassandra, ["concurrent_counter_writes"]).range("concurrent_counter_writes") == [1, 1024]


def test_errors_name_the_field(cassandra, space):
    with pytest.raises(SurrogateError) as caught:
        FeatureSpace(cassandra, ["concurrent_write", "memtable_heap_space"])
    assert str(caught.value).startswith("parameters: concurrent_write: unknown cassandra parameter")
    assert "did you mean" in str(caught.value) and "concurrent_writes" in str(caught.value)
    with pytest.raises(SurrogateError) as caught:
        space.encode("A", {"memtable_allocation_type": "offheap_buffers"}, HW)
    message = str(caught.value)
    assert message.startswith("config.memtable_allocation_type: 'offheap_buffers' is not allowed; allowed: ")
    assert "heap_buffers, offheap_objects" in message
    with pytest.raises(SurrogateError, match=r"^config\.memtable_allocation_type: 'fast' is not allowed; allowed"):
        space.encode("A", {"memtable_allocation_type": "fast"}, HW)
    with pytest.raises(SurrogateError, match=r"^config\.concurrent_write: unknown cassandra parameter; did you mean"):
        space.encode("A", {"concurrent_write": 8}, HW)
    with pytest.raises(SurrogateError, match=r"^config\.concurrent_writes: 4096 is out of the catalog range"):
        space.encode("A", {"concurrent_writes": 4096}, HW)
    with pytest.raises(SurrogateError, match=r"^workload\.requestdistribution: 'pareto' is not allowed; allowed: "):
        space.encode({"requestdistribution": "pareto"}, {}, HW)
    with pytest.raises(SurrogateError, match=r"^workload\.mix\.get: unknown operation; allowed: read"):
        space.encode({"mix": {"get": 1}}, {}, HW)
    with pytest.raises(SurrogateError, match=r"^workload\.size: unknown key; allowed: mix"):
        space.encode({"size": 1}, {}, HW)
    with pytest.raises(SurrogateError, match=r"^hardware\.vcpu: required"):
        space.encode("A", {}, {"ram_gb": 4})
    rows = [{"workload": "A", "config": {}, "hardware": HW, "ops_per_s": 10.0}, {"workload": "A", "hardware": HW}]
    with pytest.raises(SurrogateError, match=r"^rows\[1\]\.ops_per_s: missing"):
        Surrogate(space).fit(rows)
    with pytest.raises(SurrogateError, match=r"^rows\[0\]\.config\.trickle_fsync: 'maybe' is not a boolean"):
        Surrogate(space).fit(
            [{"workload": "A", "config": {"trickle_fsync": "maybe"}, "hardware": HW, "ops_per_s": 1}] * 2
        )
    with pytest.raises(SurrogateError, match=r"^parameters: save is free text"):
        FeatureSpace(Catalog.for_store("redis"), ["save"])
    with pytest.raises(SurrogateError, match=r"^method: 'grid' is not allowed; allowed: d_optimal, lhs"):
        surrogate_design.design(space, 4, method="grid")


def test_space_round_trip(space):
    data = json.loads(json.dumps(space.to_dict(), allow_nan=False))
    again = FeatureSpace.from_dict(data)
    assert again.feature_names() == space.feature_names()
    config = {"concurrent_writes": 20, "memtable_allocation_type": "offheap_objects"}
    assert again.encode("E", config, HW) == space.encode("E", config, HW)
    data["feature_names"] = data["feature_names"][:-1]
    with pytest.raises(SurrogateError, match=r"^space\.feature_names: "):
        FeatureSpace.from_dict(data)


# ------------------------------------------------------------------------------------------------ designs
def test_lhs_covers_each_dimension_evenly(space):
    n = 8
    result = surrogate_design.design(space, n, method="lhs", seed=3, include_default=False)
    points = result["points"]
    assert len(points) == n and result["infeasible"] == 0 and result["method"] == "lhs"
    for name in ("concurrent_writes", "memtable_heap_space", "memtable_cleanup_threshold"):
        low, high = space.range(name)
        width = (high - low) / n
        values = sorted(point[name] for point in points)
        for k, value in enumerate(values):  # one point in each of the n strata (up to rounding)
            assert low + (k - 0.01) * width <= value <= low + (k + 1.01) * width, (name, k, value)
    assert sorted(point["trickle_fsync"] for point in points).count(True) == n // 2
    choices = [point["memtable_allocation_type"] for point in points]
    assert choices.count("heap_buffers") == choices.count("offheap_objects") == n // 2
    again = surrogate_design.design(space, n, method="lhs", seed=3, include_default=False)
    assert again["points"] == points


def _numeric_space(cassandra):
    return FeatureSpace(
        cassandra, ["concurrent_writes", "concurrent_reads", "memtable_heap_space", "compaction_throughput"]
    )


def test_d_optimal_beats_random_selection(cassandra):
    space = _numeric_space(cassandra)
    pool = surrogate_design.design(space, 150, method="lhs", seed=1, include_default=False)["points"]
    n = 14  # 11 model terms: intercept, 4 linear, 6 pairwise
    result = surrogate_design.design(space, n, candidates=pool, seed=1, include_default=False)
    assert result["model_terms"] == 11 and result["ridge"] == 0.0 and len(result["points"]) == n
    assert len({json.dumps(p, sort_keys=True) for p in result["points"]}) == n
    assert all(point in pool for point in result["points"])
    best, ridge = surrogate_design.log_det(space, result["points"])
    assert ridge == 0.0 and best == pytest.approx(result["criterion"])
    rng = random.Random(0)
    random_values = [surrogate_design.log_det(space, rng.sample(pool, n))[0] for _i in range(30)]
    assert best > max(random_values)
    assert (
        surrogate_design.design(space, n, candidates=pool, seed=1, include_default=False)["points"] == result["points"]
    )


def test_d_optimal_with_fewer_points_than_terms_uses_a_ridge(space):
    result = surrogate_design.design(space, 6, seed=2, hardware=HW)
    assert result["ridge"] == surrogate_design.RIDGE and result["model_terms"] > 6
    assert any("ridge" in note for note in result["notes"])
    assert result["candidates"] == surrogate_design.CANDIDATES_PER_POINT * 6
    assert len(result["points"]) == 6


def test_design_respects_feasible_and_default(space):
    def budget(config):  # a fake resource rule: writers and memtable space share one budget
        if config["concurrent_writes"] * 40 + config["memtable_heap_space"] > 3000:
            return False, "budget: too much"
        return True, ""

    for method in ("d_optimal", "lhs"):
        result = surrogate_design.design(space, 10, method=method, feasible=budget, hardware=HW, seed=4)
        assert result["infeasible"] > 0
        assert result["infeasible_reasons"]["budget"]["count"] == result["infeasible"]
        assert all(budget(point)[0] for point in result["points"])
        assert result["points"][0] == space.default_config(HW)
        assert result["default_included"]
    assert len(surrogate_design.design(space, 10, feasible=budget, hardware=HW)["points"]) == 10
    without = surrogate_design.design(space, 10, include_default=False, hardware=HW)
    assert without["points"][0] != space.default_config(HW) and not without["default_included"]
    strict = surrogate_design.design(space, 5, feasible=lambda config: config["concurrent_writes"] > 40, hardware=HW)
    assert not strict["default_included"] and "default configuration is infeasible" in strict["notes"][0]
    assert all(point["concurrent_writes"] > 40 for point in strict["points"])


def test_feasible_by_catalog_memory_budget(cassandra):
    space = FeatureSpace(cassandra, ["memtable_heap_space", "key_cache_size", "file_cache_size"])
    feasible = surrogate_design.feasible_by_catalog(cassandra, memory_mb=4096, heap_mb=2048)
    ok, reason = feasible({"memtable_heap_space": 3072})
    assert not ok and reason.startswith("heap budget")
    result = surrogate_design.design(
        space, 8, feasible=feasible
    )  # defaults from the rule's heap_mb when no hardware is given
    assert result["points"][0] == {"memtable_heap_space": 512, "key_cache_size": 100, "file_cache_size": 512}
    assert result["infeasible"] > 0 and "heap budget" in result["infeasible_reasons"]
    assert result == surrogate_design.design(
        space, 8, feasible=feasible, hardware={"vcpu": 2, "ram_gb": 4, "heap_mb": 2048}
    )
    for point in result["points"]:
        cassandra.validate(point, memory_mb=4096, heap_mb=2048)
    with pytest.raises(SurrogateError, match=r"^n: 8 points asked but only"):
        surrogate_design.design(
            space, 8, feasible=surrogate_design.feasible_by_catalog(cassandra, heap_mb=1024), candidates=20, hardware=HW
        )


# ------------------------------------------------------------------------------------------------ surrogate
BASE = {"A": 30000.0, "B": 45000.0, "C": 55000.0}


def _throughput(workload, config, hardware):
    """A synthetic node: ops/s = base[workload] * g(config) * h(hardware)."""
    writes = 1.0 - surrogate_features.workload_values(workload)["read_ratio"]
    g = 0.6 + 0.4 * min(config["concurrent_writes"], 32) / 32
    g *= 1.25 if config["memtable_allocation_type"] == "offheap_objects" else 1.0
    g *= 1.0 - 0.3 * writes * (1.0 if config["trickle_fsync"] else 0.0)
    g *= 1.0 + 0.3 * writes * (config["memtable_heap_space"] - 1024) / 2048
    return BASE[workload] * g * (hardware["vcpu"] / 8) ** 0.5


def _rows(space, configs, noise=0.02, seed=0):
    rng = random.Random(seed)
    rows = []
    for config in configs:
        for workload in BASE:
            for hardware in (HW, SMALL_HW):
                ops = _throughput(workload, config, hardware) * (1 + rng.uniform(-noise, noise))
                rows.append({"workload": workload, "config": config, "hardware": hardware, "ops_per_s": ops})
    return rows


@pytest.fixture(scope="module")
def rows(space):
    configs = surrogate_design.design(space, 40, method="lhs", seed=5, include_default=False)["points"]
    return _rows(space, configs)


@pytest.fixture(scope="module")
def fitted(space, rows):
    train, test = surrogate_validation.split(rows, test_share=0.25, seed=0, group=surrogate_validation.config_group)
    return Surrogate(space).fit(train), train, test


def test_surrogate_fits_held_out_configurations(fitted):
    model, train, test = fitted
    train_configs = {surrogate_validation.config_group(row) for row in train}
    assert not train_configs & {surrogate_validation.config_group(row) for row in test}
    truth = [row["ops_per_s"] for row in test]
    scores = surrogate_validation.metrics(truth, model.predict(test))
    assert scores["r2"] > 0.8, scores
    assert scores["n"] == len(test)
    importances = model.feature_importances(by_parameter=True)
    assert "memtable_allocation_type" in importances and sum(importances.values()) == pytest.approx(1.0)
    assert isinstance(model.predict(test[0]), float)


def test_exported_trees_predict_like_sklearn(fitted, space):
    model, _train, test = fitted
    matrix = np.asarray(space.encode_rows(test), dtype=float)
    ours = np.asarray(model.predict(test))
    theirs = model.estimator_.predict(matrix)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9 * max(1.0, float(np.abs(theirs).max())))
    assert len(model.to_dict()["trees"]) == 20
    assert max(model.estimator_.estimators_[0].tree_.max_depth for _i in range(1)) <= 5


def test_surrogate_round_trip_through_json(fitted):
    model, _train, test = fitted
    text = json.dumps(model.to_dict(), allow_nan=False)
    loaded = Surrogate.from_dict(json.loads(text))
    assert loaded.estimator_ is None
    assert loaded.predict(test) == model.predict(test)
    assert loaded.feature_importances() == model.feature_importances()
    data = json.loads(text)
    assert data["hyper_parameters"] == {"n_estimators": 20, "max_depth": 5, "seed": 0}
    assert data["space"]["parameters"] == TUNED
    data["trees"][0]["children_left"][0] = 0
    with pytest.raises(SurrogateError, match=r"^model\.trees\[0\]: "):
        Surrogate.from_dict(data)


def test_loaded_model_predicts_without_sklearn(fitted, tmp_path):
    model, _train, test = fitted
    path = tmp_path / "model.json"
    path.write_text(json.dumps({"model": model.to_dict(), "rows": test[:5]}))
    script = (
        "import json, sys\n"
        "sys.modules['sklearn'] = None\n"
        "sys.modules['scipy'] = None\n"
        "sys.path.insert(0, %r)\n"
        "from ansible_collections.tactician.nosql.plugins.module_utils.models import surrogate\n"
        "data = json.load(open(%r))\n"
        "print(json.dumps(surrogate.Surrogate.from_dict(data['model']).predict(data['rows'])))\n"
    ) % (os.path.join(ROOT, ".collections"), str(path))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == model.predict(test[:5])


def test_log_target(space, rows):
    model = Surrogate(space, log_target=True, n_estimators=5, max_depth=3, seed=1).fit(rows)
    values = model.predict(rows[:3])
    assert all(value > 0 for value in values)
    again = Surrogate.from_dict(json.loads(json.dumps(model.to_dict())))
    assert again.predict(rows[:3]) == values


# ------------------------------------------------------------------------------------------------ cluster
def _cluster_rows(count, seed):
    rng = random.Random(seed)
    speeds = (10000.0, 20000.0, 40000.0)
    rows = []
    for _i in range(count):
        rf = rng.choice((2, 3))
        per_set = rng.choice((1, 2, 3))
        nodes = rf * per_set
        cl = rng.choice(("ONE", "QUORUM", "ALL"))
        read_ratio = rng.choice((0.05, 0.5, 0.95))
        set_speeds = [rng.choice(speeds) for _s in range(rf)]
        node_predictions = [speed for speed in set_speeds for _n in range(per_set)]
        capacities = [speed * per_set for speed in set_speeds]
        needed = sur.replicas_needed(cl, rf)
        read_cap = sum(capacities) / needed
        write_cap = min(capacities)
        truth = 1.0 / (read_ratio / read_cap + (1.0 - read_ratio) / write_cap)
        rows.append(
            {
                "node_predictions": node_predictions,
                "nodes": nodes,
                "rf": rf,
                "cl": cl,
                "complete_sets": rf,
                "read_ratio": read_ratio,
                "ops_per_s": truth * (1 + rng.uniform(-0.02, 0.02)),
            }
        )
    return rows


def test_cluster_model_beats_naive_sum():
    train, test = _cluster_rows(300, seed=1), _cluster_rows(100, seed=2)
    model = ClusterModel().fit(train)
    truth = [row["ops_per_s"] for row in test]
    ours = surrogate_validation.metrics(truth, model.predict(test))
    naive = surrogate_validation.metrics(truth, sur.naive_sum(test))
    assert ours["r2"] > 0.8 and ours["r2"] > naive["r2"] + 0.3, (ours, naive)
    assert ours["rmse"] < naive["rmse"]
    assert ClusterModel.naive_sum(test[0]) == sum(test[0]["node_predictions"])
    loaded = ClusterModel.from_dict(json.loads(json.dumps(model.to_dict(), allow_nan=False)))
    assert loaded.predict(test) == model.predict(test)
    assert set(model.feature_importances()) == set(sur.CLUSTER_FEATURES)


def test_cluster_features_and_errors():
    row = {"node_predictions": [1.0, 2.0, 3.0], "rf": 3, "cl": "quorum", "read_ratio": 0.5}
    assert sur.cluster_features(row) == [6.0, 2.0, 1.0, 3.0, 3, 3, 2, 3, 0.5]
    assert sur.replicas_needed("ALL", 5) == 5 and sur.replicas_needed("QUORUM", 4) == 3
    with pytest.raises(SurrogateError, match=r"^cl: 'SOME' is not allowed; allowed: ONE, TWO"):
        sur.replicas_needed("SOME", 3)
    with pytest.raises(SurrogateError, match=r"^row\.cl: 'THREE' waits for 3 replicas but rf is 2"):
        sur.cluster_features(dict(row, rf=2, cl="THREE"))
    with pytest.raises(SurrogateError, match=r"^row\.nodes: 4 but node_predictions has 3 values"):
        sur.cluster_features(dict(row, nodes=4))
    with pytest.raises(SurrogateError, match=r"^row\.read_ratio: missing"):
        sur.cluster_features({"node_predictions": [1.0], "rf": 1})
    with pytest.raises(SurrogateError, match=r"^rows\[1\]\.ops_per_s: missing"):
        ClusterModel().fit([dict(row, ops_per_s=5.0), row])


# ------------------------------------------------------------------------------------------------ evaluation
def test_metrics():
    scores = surrogate_validation.metrics([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 5.0])
    assert scores["r2"] == pytest.approx(1 - 1 / 5)  # 1 - SS_res / SS_tot
    assert scores["rmse"] == pytest.approx(0.5) and scores["mae"] == pytest.approx(0.25)
    assert scores["mape"] == pytest.approx(100 * 0.25 / 4) and scores["n"] == 4
    assert surrogate_validation.metrics([2.0, 2.0], [2.0, 3.0])["r2"] is None
    with pytest.raises(SurrogateError, match=r"^y_pred: 1 values for 2 true values"):
        surrogate_validation.metrics([1.0, 2.0], [1.0])


def test_split_keeps_groups_together(rows):
    train, test = surrogate_validation.split(rows, test_share=0.25, seed=7, group=surrogate_validation.config_group)
    assert len(train) + len(test) == len(rows)
    assert not {surrogate_validation.config_group(r) for r in train} & {
        surrogate_validation.config_group(r) for r in test
    }
    assert len({surrogate_validation.config_group(r) for r in test}) == 10  # 25 % of 40 configurations
    assert surrogate_validation.split(rows, seed=7, group=surrogate_validation.config_group) == (train, test)
    plain_train, plain_test = surrogate_validation.split(rows, test_share=0.5, seed=1)
    assert len(plain_test) == len(rows) // 2 and len(plain_train) == len(rows) - len(rows) // 2


def test_cross_validate(space, rows):
    result = surrogate_validation.cross_validate(
        rows, k=3, seed=0, group=surrogate_validation.config_group, space=space, n_estimators=10
    )
    assert result["model"] == "surrogate" and len(result["folds"]) == 3
    assert sum(fold["test"] for fold in result["folds"]) == len(rows)
    assert result["mean"]["r2"] > 0.8 and result["pooled"]["n"] == len(rows)
    cluster = surrogate_validation.cross_validate(_cluster_rows(120, seed=3), k=3)
    assert cluster["model"] == "cluster"
    assert cluster["mean"]["r2"] > cluster["naive_sum"]["mean"]["r2"]
    with pytest.raises(SurrogateError, match=r"^space: cross_validate of a surrogate needs space"):
        surrogate_validation.cross_validate(rows, k=3)
    with pytest.raises(SurrogateError, match=r"^k: 5 folds need at least 5 groups"):
        surrogate_validation.cross_validate(rows[:4], k=5, space=space)
