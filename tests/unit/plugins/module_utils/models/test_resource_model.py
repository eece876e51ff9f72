# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Unit tests of the resource-usage model engine (seed 003): pure computation, no server."""

from __future__ import annotations

import json
import math
from collections import OrderedDict

import numpy as np
import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.models import hit_ratio
from ansible_collections.tactician.nosql.plugins.module_utils.models import resource_model as rm
from ansible_collections.tactician.nosql.plugins.module_utils.models.hit_ratio import ResourceModelError
from ansible_collections.tactician.nosql.plugins.module_utils.models.resource_model import (
    ReadModel,
    ResourceModel,
    UpdateModel,
)

# Synthetic ground truth: a cache hit costs HIT_COST % per op/s, a miss MISS_COST (usage linear in throughput).
HIT_COST = 0.004
MISS_COST = 0.04


def truth(hit, tput):
    return tput * (HIT_COST * hit + MISS_COST * (1.0 - hit))


def lru_hit_ratio(popularities, cache_items, requests, seed, warmup):
    """Hit ratio of a plain LRU cache fed a seeded stream of keys drawn with the given popularities."""
    rng = np.random.default_rng(seed)
    stream = rng.choice(len(popularities), size=requests, p=popularities)
    cache = OrderedDict()
    hits = counted = 0
    for index, key in enumerate(stream.tolist()):
        hit = key in cache
        if hit:
            cache.move_to_end(key)
        else:
            cache[key] = True
            if len(cache) > cache_items:
                cache.popitem(last=False)
        if index >= warmup:
            counted += 1
            hits += hit
    return hits / counted


# Che's approximation ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("cache_items", [20, 100, 400])
def test_che_matches_simulated_lru_on_zipfian_keys(cache_items):
    q = hit_ratio.zipfian_popularities(2000)
    simulated = lru_hit_ratio(q, cache_items, requests=150_000, seed=7, warmup=10_000)
    assert abs(hit_ratio.che_hit_ratio(q, cache_items) - simulated) < 0.02


def test_che_matches_simulated_lru_on_hotspot_keys():
    q = hit_ratio.hotspot_popularities(2000, hot_fraction=0.2, hot_ops=0.8)
    simulated = lru_hit_ratio(q, 300, requests=150_000, seed=11, warmup=10_000)
    assert abs(hit_ratio.hit_ratio("hotspot", 2000, 300) - simulated) < 0.02
    assert hit_ratio.hit_ratio("hotspot", 2000, 300) == pytest.approx(hit_ratio.che_hit_ratio(q, 300), abs=1e-9)


def test_uniform_closed_form_and_che_agree():
    assert hit_ratio.uniform_hit_ratio(1000, 250) == 0.25
    assert hit_ratio.uniform_hit_ratio(1000, 5000) == 1.0
    assert hit_ratio.hit_ratio("uniform", 4000, 1000) == 0.25
    assert hit_ratio.che_hit_ratio(np.ones(4000), 1000) == pytest.approx(0.25, abs=1e-9)


def test_che_edges():
    q = hit_ratio.zipfian_popularities(100)
    assert hit_ratio.che_hit_ratio(q, 0) == 0.0
    assert hit_ratio.che_hit_ratio(q, 100) == 1.0
    assert hit_ratio.che_hit_ratio([0.5, 0.5, 0.0], 2) == 1.0  # the never-requested key does not matter
    assert math.isinf(hit_ratio.che_characteristic_time(q, 100))
    assert hit_ratio.che_characteristic_time(q, 10) > 10


def test_popularities():
    q = hit_ratio.zipfian_popularities(1000)
    assert q.sum() == pytest.approx(1.0)
    assert np.all(np.diff(q) < 0)
    assert q[0] / q[9] == pytest.approx(10**0.99)
    h = hit_ratio.hotspot_popularities(1000, hot_fraction=0.2, hot_ops=0.8)
    assert h[:200].sum() == pytest.approx(0.8)
    assert h.sum() == pytest.approx(1.0)


def test_zipfian_million_keys():
    hit = hit_ratio.hit_ratio("zipfian", 10**6, 10**5)
    assert 0.5 < hit < 1.0
    assert hit_ratio.hit_ratio("zipfian", 10**6, 10**5, theta=0.5) < hit


@pytest.mark.parametrize("distribution", ["uniform", "zipfian", "hotspot"])
@pytest.mark.parametrize("hit", [0.95, 0.7, 0.4])
def test_records_for_hit_ratio_round_trip(distribution, hit):
    cache = 500
    records = hit_ratio.records_for_hit_ratio(hit, cache, distribution)
    assert records > cache
    assert hit_ratio.hit_ratio(distribution, records, cache) == pytest.approx(hit, abs=2e-3)


def test_records_for_hit_ratio_boundary_and_limits():
    assert hit_ratio.records_for_hit_ratio(1.0, 2_000_000) == 2_000_000
    assert hit_ratio.records_for_hit_ratio(0.25, 2_000_000) == 8_000_000
    with pytest.raises(ResourceModelError, match="^hit_ratio: .*not reachable"):
        hit_ratio.records_for_hit_ratio(0.05, 1000, "zipfian", max_records=20_000)
    with pytest.raises(ResourceModelError, match=r"^hit_ratio: 0 is outside \(0, 1\]"):
        hit_ratio.records_for_hit_ratio(0, 1000)


def test_calibration_plan():
    plan = hit_ratio.calibration_plan(cache_items=2_000_000)
    assert [row["hit_ratio"] for row in plan] == list(hit_ratio.DEFAULT_HIT_RATIOS)
    assert plan[0]["records"] == 2_000_000
    assert plan[-2] == {"hit_ratio": 0.25, "records": 8_000_000}
    assert hit_ratio.calibration_plan((1.0, 0.5), cache_items=100) == [
        {"hit_ratio": 1.0, "records": 100},
        {"hit_ratio": 0.5, "records": 200},
    ]
    with pytest.raises(ResourceModelError, match="^cache_items: required"):
        hit_ratio.calibration_plan()
    with pytest.raises(ResourceModelError, match=r"^hit_ratios\[1\]: 0.5 appears twice"):
        hit_ratio.calibration_plan((0.5, 0.5), cache_items=100)


# Binary search ---------------------------------------------------------------------------------------------


def noisy_measure(per_op=0.01, sd=1.0, seed=3, cap=None):
    rng = np.random.default_rng(seed)
    calls = []

    def measure(tput):
        calls.append(tput)
        usage = per_op * tput + rng.normal(0.0, sd)
        return min(usage, cap) if cap is not None else usage

    measure.calls = calls
    return measure


def test_binary_search_converges_on_noisy_measure():
    measure = noisy_measure()
    found = rm.binary_search_throughput(measure, 40, 0, 10_000, known=[(10_000, 100.0)])
    assert found["converged"] is True
    assert found["reason"] in ("within tolerance", "bracket narrow")
    assert found["throughput"] == pytest.approx(4000, rel=0.1)
    assert 1 <= len(found["probes"]) <= 6
    assert [t for t, _u in found["probes"]] == measure.calls
    assert found["probes"][0][0] == 5000  # arithmetic midpoint from 0
    json.dumps(found)


def test_binary_search_uses_known_points():
    measure = noisy_measure()
    found = rm.binary_search_throughput(measure, 40, 0, 10_000, known=[(10_000, 100.0), (3950, 39.2)])
    assert found["probes"] == [] and found["converged"] is True
    assert found["nearest"] == (3950, 39.2)
    measure = noisy_measure()
    found = rm.binary_search_throughput(measure, 40, 0, 10_000, known=[(10_000, 100.0), (3000, 30.0), (6000, 60.0)])
    assert 3000 < measure.calls[0] < 6000
    assert found["converged"] is True


def test_binary_search_noisy_known_points_do_not_cross():
    measure = noisy_measure(sd=0.0)
    known = [(10_000, 100.0), (4200, 39.0), (3800, 41.0)]  # noise: the lower rate showed more usage
    found = rm.binary_search_throughput(measure, 40, 0, 10_000, tolerance=0.5, known=known)
    assert 3800 <= found["throughput"] <= 4200


def test_binary_search_geometric_midpoint_and_probing_high():
    measure = noisy_measure(sd=0.0)
    found = rm.binary_search_throughput(measure, 20, 100, 10_000, tolerance=0.1, known=[(100, 1.0)])
    assert measure.calls[0] == 10_000  # usage at high is not known: measured first
    assert measure.calls[1] == pytest.approx(1000)  # geometric midpoint of 100 and 10000
    assert found["throughput"] == pytest.approx(2000, rel=0.05)


def test_binary_search_stops_after_max_probes():
    measure = noisy_measure(sd=0.0)
    found = rm.binary_search_throughput(measure, 40, 0, 10_000, tolerance=0.0, max_probes=2, known=[(10_000, 100.0)])
    assert found["converged"] is False and found["reason"] == "max probes"
    assert len(found["probes"]) == 2
    assert found["throughput"] == pytest.approx(4000, rel=0.01)  # the interpolation is still the best answer


def test_binary_search_level_not_reachable():
    measure = noisy_measure(sd=0.0, cap=60.0)
    found = rm.binary_search_throughput(measure, 80, 0, 10_000)
    assert found["converged"] is False
    assert found["reason"] == "level not reachable"
    assert found["throughput"] == 10_000 and found["usage"] == 60.0
    assert len(found["probes"]) == 1


def test_binary_search_errors():
    with pytest.raises(ResourceModelError, match=r"^level: 120 is outside \(0, 100\]"):
        rm.binary_search_throughput(noisy_measure(), 120, 0, 10)
    with pytest.raises(ResourceModelError, match="^high: "):
        rm.binary_search_throughput(noisy_measure(), 20, 10, 5)
    with pytest.raises(ResourceModelError, match="^measure: "):
        rm.binary_search_throughput(lambda t: None, 20, 0, 10)
    with pytest.raises(ResourceModelError, match=r"^known\[0\]: "):
        rm.binary_search_throughput(noisy_measure(), 20, 0, 10, known=[5])


# Read model ------------------------------------------------------------------------------------------------


def recording_measure(hit, known, rng, noise):
    """Noisy ground-truth usage at one hit ratio; every probe is added to `known` like the lab's calibration."""

    def measure(tput):
        usage = truth(hit, tput) * (1.0 + rng.normal(0.0, noise))
        known.append((tput, usage))
        return usage

    return measure


def calibrate_synthetic(hit_ratios=hit_ratio.DEFAULT_HIT_RATIOS, levels=rm.DEFAULT_LEVELS, noise=0.01, seed=5):
    """Calibration results of the synthetic ground truth through the same binary search as the lab's."""
    rng = np.random.default_rng(seed)
    results = []
    for hit in hit_ratios:
        high = 100.0 / (HIT_COST * hit + MISS_COST * (1.0 - hit))  # the unthrottled maximum: 100 % usage
        known = [(high, 100.0)]
        measure = recording_measure(hit, known, rng, noise)
        for level in levels:
            found = rm.binary_search_throughput(measure, level, 0.0, high, known=list(known))
            results.append(dict(hit_ratio=hit, level=level, **{k: found[k] for k in ("throughput", "converged")}))
    return results


@pytest.fixture(scope="module")
def synthetic_model():
    return rm.fit_read_model(calibrate_synthetic())


def test_read_model_predicts_held_out_points(synthetic_model):
    for hit in (0.97, 0.85, 0.55, 0.33, 0.2):
        for usage in (3.0, 12.0, 30.0, 50.0, 70.0):
            tput = usage / (HIT_COST * hit + MISS_COST * (1.0 - hit))
            predicted = synthetic_model.usage(hit, tput)
            assert rm.accuracy(predicted, usage) > 0.95, (hit, usage, predicted)


def test_read_model_usage_grows_with_throughput_and_falls_with_hit_ratio(synthetic_model):
    tputs = np.linspace(0, 20_000, 41)
    usage, _flags = synthetic_model.usage_many(np.full(tputs.shape, 0.9), tputs)
    assert np.all(np.diff(usage) > 0)
    assert synthetic_model.usage(0.9, 1000) < synthetic_model.usage(0.5, 1000)
    assert synthetic_model.usage(0.5, 0) == 0.0


def test_read_model_flags_extrapolation_and_clamping(synthetic_model):
    hit = 0.5
    top = synthetic_model.max_throughput(hit, 80.0)
    assert synthetic_model.usage_detail(hit, top * 0.9)["extrapolated"] is False
    detail = synthetic_model.usage_detail(hit, top * 1.1)
    assert detail["extrapolated"] is True and detail["usage"] > 80.0
    assert synthetic_model.usage_detail(0.05, 100)["hit_clamped"] is True
    assert synthetic_model.usage(0.05, 100) == synthetic_model.usage(0.15, 100)


def test_max_throughput_inverts_usage(synthetic_model):
    for hit in (1.0, 0.9, 0.45, 0.15):
        for cap in (2.0, 5.0, 30.0, 50.0, 80.0, 95.0):
            tput = synthetic_model.max_throughput(hit, cap)
            assert synthetic_model.usage(hit, tput) == pytest.approx(cap, rel=1e-9)
    assert synthetic_model.max_throughput_detail(0.5, 95.0)["extrapolated"] is True
    assert synthetic_model.max_throughput(0.5, 0.0) == 0.0
    many, _flags = synthetic_model.max_throughput_many([0.9, 0.5], 40.0)
    assert many.tolist() == [synthetic_model.max_throughput(0.9, 40.0), synthetic_model.max_throughput(0.5, 40.0)]


def test_single_point_level_is_constant_and_idle_usage_is_the_floor():
    model = ReadModel({20: [(0.5, 1000)], 40: [(1.0, 4000), (0.5, 2000)]}, idle_usage=4.0)
    assert model.level_throughputs([0.2, 0.9])[0].tolist() == [1000, 1000]
    assert model.usage(0.5, 0) == 4.0
    assert model.usage(0.5, 500) == pytest.approx(12.0)
    assert model.usage(0.5, 1500) == pytest.approx(30.0)
    assert model.max_throughput(0.5, 3.0) == 0.0


def test_crossing_levels_are_repaired_with_a_warning():
    points = {
        20: [(1.0, 2000), (0.5, 1000)],
        40: [(1.0, 4000), (0.5, 2000)],
        60: [(1.0, 6000), (0.5, 3000)],
        80: [(1.0, 8000), (0.5, 2900)],  # noise: 80 % reached with less throughput than 60 %
    }
    model = ReadModel(points)
    assert any("levels 60 and 80" in text for text in model.warnings)
    assert [c[:2] for c in model.crossings] == [(60.0, 80.0)]
    table = model.level_throughputs([0.5, 0.75, 1.0])
    assert np.all(np.diff(table, axis=0) > 0)
    assert table[2, 0] == pytest.approx(2950, rel=1e-5)  # pooled: the mean of 3000 and 2900
    usage, _flags = model.usage_many(np.full(200, 0.5), np.linspace(0, 4000, 200))
    assert np.all(np.isfinite(usage)) and np.all(np.diff(usage) >= 0)
    assert model.usage(1.0, 7000) == pytest.approx(70.0)  # untouched where the levels do not cross
    assert ReadModel(points, warnings=model.warnings).warnings == model.warnings


def test_fit_read_model_drops_unusable_points():
    results = [
        {"hit_ratio": 1.0, "level": 20, "throughput": 2000, "converged": True},
        {"hit_ratio": 0.5, "level": 20, "throughput": 1000, "converged": True},
        {"hit_ratio": 0.5, "level": 80, "throughput": 3000, "converged": False, "reason": "level not reachable"},
        {"hit_ratio": None, "level": 40, "throughput": 3000, "converged": True},
        {"hit_ratio": 1.0, "level": 5, "throughput": 400, "converged": True},
    ]
    model = rm.fit_read_model(results, idle_usage=6.0)
    assert model.levels == [20.0]
    assert len(model.warnings) == 3
    assert any("level not reachable" in text for text in model.warnings)
    with pytest.raises(ResourceModelError, match="^results: none"):
        rm.fit_read_model(results[2:3])
    with pytest.raises(ResourceModelError, match=r"^results\[0\].hit_ratio: 1.5 is outside \[0, 1\]"):
        rm.fit_read_model([{"hit_ratio": 1.5, "level": 20, "throughput": 1, "converged": True}])


# Update model and whole model -------------------------------------------------------------------------------


def test_update_model_fit():
    rng = np.random.default_rng(1)
    xs = [5, 50, 100, 500, 1000, 2000, 4000, 8000]
    model = UpdateModel.fit([(x, 2.0 + 0.008 * x + rng.normal(0, 0.3)) for x in xs])
    assert model.slope == pytest.approx(0.008, rel=0.05)
    assert model.intercept == pytest.approx(2.0, abs=0.5)
    assert model.r2 > 0.99 and model.n == len(xs)
    assert model.usage(1000) == pytest.approx(model.intercept + 1000 * model.slope)
    assert model.usage(model.max_throughput(60.0)) == pytest.approx(60.0)
    assert model.max_throughput(0.5) == 0.0


def test_update_model_slope_is_never_negative():
    model = UpdateModel.fit([(100, 10.0), (200, 9.0), (300, 8.0)])
    assert model.slope == 0.0 and model.intercept == pytest.approx(9.0)
    assert model.warnings and model.max_throughput(50.0) is None
    with pytest.raises(ResourceModelError, match="^points: .*two different"):
        UpdateModel.fit([(100, 10.0), (100, 11.0)])
    with pytest.raises(ResourceModelError, match="^slope: "):
        UpdateModel(1.0, -0.1)


def whole_model(synthetic_model):
    return ResourceModel(synthetic_model, UpdateModel(1.5, 0.01, r2=0.99, n=8), {"name": "2cpu-8g", "vcpu": 2})


def test_resource_model_adds_update_slope_once(synthetic_model):
    model = whole_model(synthetic_model)
    read = synthetic_model.usage(0.8, 1000)
    assert model.usage(0.8, 1000, 500) == pytest.approx(read + 0.01 * 500)
    assert model.usage(0.8, 1000) == pytest.approx(read)
    assert model.usage_of_workload(0.8, 2000, 0.75) == pytest.approx(model.usage(0.8, 1500, 500))
    detail = model.usage_detail(0.8, 1000, 500)
    assert detail["update_usage"] == pytest.approx(5.0) and detail["read_usage"] == pytest.approx(read)


def test_resource_model_max_throughput(synthetic_model):
    model = whole_model(synthetic_model)
    for ratio in (1.0, 0.9, 0.5, 0.0):
        total = model.max_throughput(0.7, ratio, 60.0)
        assert model.usage_of_workload(0.7, total, ratio) <= 60.0
        assert model.usage_of_workload(0.7, total, ratio) == pytest.approx(60.0, rel=1e-6)
    assert model.max_throughput(0.7, 1.0, 60.0) == pytest.approx(synthetic_model.max_throughput(0.7, 60.0), rel=1e-8)
    # Updates only: the update model alone, its intercept (the fixed cost of serving) counted once.
    assert model.max_throughput(0.7, 0.0, 60.0) == pytest.approx((60.0 - 1.5) / 0.01, rel=1e-8)
    flat = ResourceModel(synthetic_model, UpdateModel(1.0, 0.0))
    assert flat.max_throughput(0.7, 0.0, 60.0) is None
    reads_only = ResourceModel(synthetic_model)
    with pytest.raises(ResourceModelError, match="^update_throughput: .*no update model"):
        reads_only.usage(0.7, 100, 10)
    with pytest.raises(ResourceModelError, match="^read_ratio: 0.5 leaves updates"):
        reads_only.max_throughput(0.7, 0.5, 60.0)
    assert reads_only.max_throughput(0.7, 1.0, 60.0) == pytest.approx(synthetic_model.max_throughput(0.7, 60.0))


def test_to_dict_round_trip(synthetic_model):
    model = ResourceModel(
        synthetic_model, UpdateModel.fit([(0, 1.0), (1000, 9.0), (2000, 17.5)]), {"vcpu": np.int64(2)}
    )
    data = model.to_dict()
    text = json.dumps(data, allow_nan=False, sort_keys=True)
    assert set(data) >= {"levels", "points", "idle_usage", "update", "warnings"}
    assert data["profile"] == {"vcpu": 2} and isinstance(data["profile"]["vcpu"], int)
    assert not isinstance(data["profile"]["vcpu"], np.generic)
    again = ResourceModel.from_dict(json.loads(text))
    assert again.to_dict() == data
    assert json.dumps(again.to_dict(), allow_nan=False, sort_keys=True) == text
    for hit, reads, updates in ((0.9, 1000, 0), (0.4, 300, 200), (0.15, 50, 1000)):
        assert again.usage(hit, reads, updates) == model.usage(hit, reads, updates)
    crossing = ReadModel({20: [(1.0, 2000), (0.5, 1000)], 40: [(1.0, 4000), (0.5, 900)]}, warnings=["noted"])
    data = ResourceModel(crossing).to_dict()
    assert data["update"] is None and len(data["warnings"]) == 2
    assert ResourceModel.from_dict(json.loads(json.dumps(data))).to_dict() == data


def test_from_dict_errors():
    with pytest.raises(ResourceModelError, match="^levels: missing"):
        ResourceModel.from_dict({"points": []})
    with pytest.raises(ResourceModelError, match="^levels: "):
        ResourceModel.from_dict({"levels": [20.0, 40.0], "points": [{"level": 20, "hit_ratio": 1, "throughput": 5}]})


# Errors and accuracy ----------------------------------------------------------------------------------------


def test_errors_name_the_field(synthetic_model):
    model = whole_model(synthetic_model)
    with pytest.raises(ResourceModelError, match=r"^hit_ratio: 1.2 is outside \[0, 1\]"):
        model.usage(1.2, 100)
    with pytest.raises(ResourceModelError, match=r"^hit_ratio: -0.1 is outside \[0, 1\]"):
        synthetic_model.usage_many([0.5, -0.1], [1, 1])
    with pytest.raises(ResourceModelError, match="^read_throughput: -5 is outside"):
        model.usage(0.5, -5)
    with pytest.raises(ResourceModelError, match="^throughput: -5 is outside"):
        synthetic_model.usage(0.5, -5)
    with pytest.raises(ResourceModelError, match="^update_throughput: "):
        model.usage(0.5, 5, float("nan"))
    with pytest.raises(ResourceModelError, match="^read_ratio: 2 is outside"):
        model.max_throughput(0.5, 2, 50)
    with pytest.raises(
        ResourceModelError, match="^distribution: 'latest' is not supported; allowed: uniform, zipfian, hotspot"
    ):
        hit_ratio.hit_ratio("latest", 100, 10)
    with pytest.raises(ResourceModelError, match="^theta: not an option of the uniform distribution"):
        hit_ratio.hit_ratio("uniform", 100, 10, theta=0.9)
    with pytest.raises(ResourceModelError, match="^records: "):
        hit_ratio.hit_ratio("zipfian", 0, 10)
    with pytest.raises(ResourceModelError, match="^idle_usage: 30 is not below level 20"):
        ReadModel({20: [(1.0, 100)]}, idle_usage=30)
    assert issubclass(ResourceModelError, ValueError)
    assert hit_ratio.missing_libraries() == []


def test_accuracy_and_summary():
    assert rm.accuracy(19.15, 19.28) == pytest.approx(1 - 0.13 / 19.28)
    assert rm.accuracy(300, 100) == 0.0
    assert rm.accuracy(0, 0) == 1.0 and rm.accuracy(1, 0) == 0.0
    with pytest.raises(ResourceModelError, match="^observed: "):
        rm.accuracy(1, -1)
    summary = rm.summarize([0.9, 1.0, {"accuracy": 0.95}, {"predicted": 45.87, "observed": 46.19}])
    assert summary["n"] == 4 and summary["min"] == 0.9
    assert summary["mean"] == pytest.approx((0.9 + 1.0 + 0.95 + rm.accuracy(45.87, 46.19)) / 4)
    assert summary["sd"] == pytest.approx(float(np.std([0.9, 1.0, 0.95, rm.accuracy(45.87, 46.19)], ddof=1)))
    assert rm.summarize([])["n"] == 0
