"""Model files (modelstore), designs, datasets and fitting (modeling), predictions (predict), calibration (fakes)."""

from __future__ import annotations

import json
import os
import random

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.models import model_files as modelstore
from ansible_collections.tactician.nosql.plugins.module_utils.models import predict
from ansible_collections.tactician.nosql.plugins.module_utils.models import training as modeling
from ansible_collections.tactician.nosql.plugins.module_utils.trials import calibration as calibrate

PARAMETERS = ["concurrent_reads", "concurrent_writes", "memtable_heap_space", "compaction"]
RANGES = {"memtable_heap_space": [32, 384], "compaction": ["SizeTieredCompactionStrategy", "LeveledCompactionStrategy"]}
HARDWARE = {"name": "test-2cpu", "vcpu": 2, "ram_gb": 8.0, "disk_ssd": True, "heap_mb": 1024}


# --------------------------------------------------------------------------------------------- modelstore


def _save(tmp_path, **meta):
    metadata = modelstore.new_metadata("cassandra", "5.0", HARDWARE, ["a", "b"], [{"x": 1}], target="ops_per_s")
    metadata.update(meta)
    path = str(tmp_path / "m.json")
    modelstore.save_model(path, "surrogate", {"trees": []}, metadata)
    return path


def test_model_file_round_trip_and_metadata(tmp_path):
    path = _save(tmp_path)
    model, meta = modelstore.load_model(
        path,
        kind="surrogate",
        store="cassandra",
        store_version="5.0.9",
        hardware_profile="test-2cpu",
        features=["a", "b"],
    )
    assert model == {"trees": []}
    assert meta["training_data_sha256"] == modelstore.data_hash([{"x": 1}])
    assert meta["training_points"] == 1
    assert "python" in meta["libraries"]
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"


@pytest.mark.parametrize(
    "asked, field",
    [
        (dict(store="redis"), "metadata.store"),
        (dict(store_version="4.1"), "metadata.store_version"),
        (dict(hardware_profile="big-16cpu"), "metadata.hardware_profile"),
        (dict(features=["a", "c"]), "metadata.features"),
        (dict(kind="resource"), "kind"),
    ],
)
def test_model_refused_when_it_does_not_match(tmp_path, asked, field):
    path = _save(tmp_path)
    with pytest.raises(modelstore.ModelFileError) as err:
        modelstore.load_model(path, **asked)
    assert str(err.value).startswith(field + ":")


def test_model_file_errors(tmp_path):
    with pytest.raises(modelstore.ModelFileError, match="^model_file: .* does not exist"):
        modelstore.load_model(str(tmp_path / "none.json"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "other"}))
    with pytest.raises(modelstore.ModelFileError, match="^schema:"):
        modelstore.load_model(str(bad))
    meta = modelstore.new_metadata("cassandra", "5.0", HARDWARE, [], [], login_password="x")
    with pytest.raises(modelstore.ModelFileError, match="password"):
        modelstore.save_model(str(tmp_path / "s.json"), "surrogate", {}, meta)
    assert not (tmp_path / "s.json").exists()


def test_hardware_profile_defaults_from_machine():
    profile = modelstore.hardware_profile(heap_mb=512)
    assert profile["vcpu"] >= 1 and profile["heap_mb"] == 512
    assert profile["name"].startswith("%dcpu-" % profile["vcpu"])
    assert modelstore.hardware_profile(name="x", vcpu=4, ram_gb=16)["name"] == "x"


# --------------------------------------------------------------------------------------------- designs and data


def test_design_includes_default_and_is_deterministic():
    one = modeling.make_design("cassandra", "5.0", PARAMETERS, 8, ranges=RANGES, seed=3, heap_mb=1024)
    two = modeling.make_design("cassandra", "5.0", PARAMETERS, 8, ranges=RANGES, seed=3, heap_mb=1024)
    assert one == two
    assert one["schema"] == modeling.DESIGN_SCHEMA
    assert [p["id"] for p in one["points"]] == ["p%02d" % i for i in range(8)]
    assert one["points"][0]["config"]["concurrent_reads"] == 32  # the catalog default comes first
    for point in one["points"]:
        assert 32 <= point["config"]["memtable_heap_space"] <= 384


def test_design_bad_input():
    with pytest.raises(modeling.ModelingError, match="^method: .*d_optimal, lhs"):
        modeling.make_design("cassandra", "5.0", PARAMETERS, 8, method="grid")
    with pytest.raises(TacticianError, match="concurrent_read"):  # the catalog's error, as it is
        modeling.make_design("cassandra", "5.0", ["concurrent_read"], 8)


def test_dataset_append_skips_existing_keys_and_refuses_secrets(tmp_path):
    path = str(tmp_path / "d" / "data.jsonl")
    assert modeling.append_row(path, "p00/a", {"ops_per_s": 1.0})
    assert not modeling.append_row(path, "p00/a", {"ops_per_s": 2.0})
    assert [r["key"] for r in modeling.read_dataset(path)] == ["p00/a"]
    with pytest.raises(modeling.ModelingError, match="password"):
        modeling.append_row(path, "p01/a", {"run": {"login_password": "x"}})
    assert modeling.read_dataset(str(tmp_path / "missing.jsonl")) == []


def _synthetic_rows(seed=0):
    design = modeling.make_design("cassandra", "5.0", PARAMETERS, 12, ranges=RANGES, seed=seed, heap_mb=1024)
    rng = random.Random(seed)
    base = {"a": 6000.0, "b": 9000.0, "e": 900.0}
    mixes = {
        "a": {"read": 0.5, "update": 0.5},
        "b": {"read": 0.95, "update": 0.05},
        "e": {"scan": 0.95, "insert": 0.05},
    }
    rows = []
    for point in design["points"]:
        c = point["config"]
        gain = 1.0 + 0.002 * (c["concurrent_writes"] - 32) + 0.0005 * (c["memtable_heap_space"] - 128)
        gain *= 1.1 if c["compaction"] == "LeveledCompactionStrategy" else 1.0
        for name, ops in base.items():
            rows.append(
                {
                    "key": "%s/%s" % (point["id"], name),
                    "workload": {"name": name, "mix": mixes[name], "requestdistribution": "zipfian", "records": 20000},
                    "config": c,
                    "hardware": {"heap_mb": 1024},
                    "ops_per_s": ops * gain * (1 + rng.uniform(-0.02, 0.02)),
                }
            )
    return rows


def test_fit_surrogate_saves_model_and_reports_held_out(tmp_path):
    path = str(tmp_path / "s.json")
    doc, evaluation, summary = modeling.fit_surrogate(_synthetic_rows(), "cassandra", "5.0", HARDWARE, model_file=path)
    assert evaluation["r2"] > 0.8
    assert evaluation["test_configurations"] >= 1
    assert "R2" in summary[1]
    model, meta = modelstore.load_model(path, kind="surrogate", store="cassandra")
    assert meta["parameters"] == sorted(PARAMETERS)
    result = predict.predict_performance(
        path,
        {"mix": {"read": 0.5, "update": 0.5}, "records": 20000},
        [{}, {"concurrent_writes": 64}],
        cluster={"nodes": 3, "rf": 3, "cl": "ONE"},
    )
    assert len(result["ops_per_s"]) == 2 and all(v > 0 for v in result["ops_per_s"])
    assert result["cluster"][0]["model"].startswith("naive sum")


def test_fit_surrogate_when_every_run_measured_zero():
    # A race on a machine too busy to serve anything in its short runs records 0 ops/s: R2 is undefined, the fit
    # still reports (and the planner can still use) the model.
    rows = [dict(r, ops_per_s=0.0) for r in _synthetic_rows()]
    _doc, evaluation, summary = modeling.fit_surrogate(rows, "cassandra", "5.0", HARDWARE)
    assert evaluation["r2"] is None
    assert "R2 n/a (the held-out rows all measured the same)" in summary[1]


def test_fit_surrogate_needs_rows():
    with pytest.raises(modeling.ModelingError, match="^dataset: 1 measured rows"):
        modeling.fit_surrogate(_synthetic_rows()[:1], "cassandra", "5.0", HARDWARE)


# --------------------------------------------------------------------------------------------- resource model


def _calibration_data():
    """Synthetic calibration: usage = idle + T * (0.004 h + 0.03 (1 - h)); throughput per level from the truth."""
    idle = 2.0
    read = []
    for hit in (1.0, 0.9, 0.7, 0.5, 0.3):
        for level in (5.0, 20.0, 40.0, 60.0):
            tput = (level - idle) / (0.004 * hit + 0.03 * (1 - hit))
            read.append({"level": level, "throughput": tput, "usage": level, "converged": True, "hit_ratio": hit})
    update = [{"writes_per_s": t, "usage": idle + 0.01 * t} for t in (500, 1000, 2000, 4000)]
    return {"read": read, "update": update, "idle_usage": idle, "cache_items": 12000}


def test_fit_resource_and_predict_usage_and_cap(tmp_path):
    path = str(tmp_path / "r.json")
    doc, summary = modeling.fit_resource(_calibration_data(), "cassandra", "5.0", HARDWARE, model_file=path)
    assert doc["metadata"]["cache_items"] == 12000
    assert "update model" in summary[1]
    hit = 0.8
    truth = 2.0 + 3000 * (0.004 * hit + 0.03 * (1 - hit))
    result = predict.predict_resource(path, hit, throughput=3000, read_ratio=1.0, cap=40, store="cassandra")
    assert abs(result["usage"] - truth) / truth < 0.08
    assert result["max_throughput"] > 3000 if truth < 40 else result["max_throughput"] <= 3000
    mixed = predict.predict_resource(path, hit, throughput=3000, read_ratio=0.5)
    assert mixed["update_throughput"] == 1500
    with pytest.raises(predict.PredictError, match="^hit_ratio: 1.5"):
        predict.predict_resource(path, 1.5, throughput=10)
    with pytest.raises(predict.PredictError, match="^throughput, cap:"):
        predict.predict_resource(path, 0.5)
    with pytest.raises(modelstore.ModelFileError, match="^metadata.hardware_profile"):
        predict.predict_resource(path, 0.5, throughput=10, hardware_profile="other")


def test_fit_resource_needs_read_points():
    with pytest.raises(modeling.ModelingError, match="^data.read"):
        modeling.fit_resource({}, "cassandra", "5.0", HARDWARE)


# --------------------------------------------------------------------------------------------- calibrate (fakes)


class FakeMeter:
    def __init__(self):
        self.calls = 0

    def counters(self):
        self.calls += 1
        return {"reads": 1000 * self.calls, "writes": 0, "hits": 700 * self.calls, "requests": 1000 * self.calls}


def test_calibrate_hit_ratio_searches_each_level_with_known_points():
    def fake_measure(params, meter, pid, target, warmup_s, window_s):
        tput = 5000.0 if target == 0 else float(target)
        return {
            "target": target,
            "throughput": tput,
            "usage": tput / 100.0,
            "hit_ratio": 0.7,
            "reads_per_s": tput,
            "writes_per_s": 0.0,
        }

    lines = []
    result = calibrate.calibrate_hit_ratio(
        {"properties": {}}, None, 1, 20000, levels=(5, 20, 40, 80), measure_fn=fake_measure, progress=lines.append
    )
    by_level = {row["level"]: row for row in result["levels"]}
    assert by_level[20]["converged"] and abs(by_level[20]["throughput"] - 2000) < 150
    assert not by_level[80]["converged"]  # the unthrottled maximum only reaches 50 %
    assert result["hit_ratio"] == 0.7 and all(row["records"] == 20000 for row in result["levels"])
    assert lines and lines[0].startswith("records=20000 target=0")


def test_calibrate_hit_ratio_says_so_when_the_unthrottled_run_served_nothing():
    def idle_measure(params, meter, pid, target, warmup_s, window_s):
        return {"target": target, "throughput": 0.0, "usage": 1.0, "hit_ratio": None}

    with pytest.raises(calibrate.CalibrationError, match="records=2000: the unthrottled run served no operations"):
        calibrate.calibrate_hit_ratio({"properties": {}}, None, 1, 2000, levels=(30,), measure_fn=idle_measure)


def test_measure_reads_server_counters_and_cpu(monkeypatch):
    cpu = iter([10.0, 13.0])
    clock = iter([100.0, 110.0])
    monkeypatch.setattr(calibrate, "process_cpu_seconds", lambda pid: next(cpu))
    monkeypatch.setattr(calibrate.time, "sleep", lambda s: None)
    point = calibrate.measure(
        {"properties": {}}, FakeMeter(), 1, 500, cpus=2, run=lambda p: {"result": {}}, clock=lambda: next(clock)
    )
    assert point["usage"] == 15.0  # 3 CPU seconds over 10 s on 2 CPUs
    assert point["reads_per_s"] == 100.0 and point["hit_ratio"] == 0.7


def test_measure_reports_a_failed_load(monkeypatch):
    monkeypatch.setattr(calibrate, "process_cpu_seconds", lambda pid: 1.0)
    monkeypatch.setattr(calibrate.time, "sleep", lambda s: None)
    with pytest.raises(calibrate.CalibrationError, match="load at 500 ops/s failed: boom"):
        calibrate.measure({"properties": {}}, FakeMeter(), 1, 500, run=lambda p: {"error": "boom"})


def test_process_cpu_seconds_of_this_process():
    assert calibrate.process_cpu_seconds(os.getpid()) > 0
    with pytest.raises(calibrate.CalibrationError, match="^server process"):
        calibrate.process_cpu_seconds(2**31)


def test_fit_cluster_beats_the_naive_sum_on_replicated_clusters(tmp_path):
    rng = random.Random(1)
    rows = []
    for _i in range(40):
        nodes = rng.choice([3, 4, 6])
        rf = rng.choice([1, 2, 3])
        node = rng.uniform(4000, 9000)
        read_ratio = rng.random()
        # Writes go to every replica: the cluster serves nodes * node / (rf on the write share).
        ops = nodes * node / (read_ratio + (1 - read_ratio) * rf)
        rows.append(
            {
                "node_predictions": [node] * nodes,
                "nodes": nodes,
                "rf": rf,
                "cl": "ONE",
                "read_ratio": read_ratio,
                "ops_per_s": ops,
            }
        )
    doc, evaluation, summary = modeling.fit_cluster(
        rows, "cassandra", "5.0", HARDWARE, model_file=str(tmp_path / "c.json")
    )
    assert evaluation["rmse"] < evaluation["naive_sum"]["rmse"]
    assert doc["kind"] == "cluster_surrogate" and "naive sum" in summary[1]
    modelstore.load_model(str(tmp_path / "c.json"), kind="cluster_surrogate")


# --------------------------------------------------------------------------------------------- forecasts


def _samples(steps=120):
    import math

    from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.samples import new_sample

    out = []
    for k in range(steps):
        reads = 0.8 if (k // 30) % 2 == 0 else 0.2
        total = 1000.0 + 10.0 * math.sin(k / 5.0)
        out.append(
            new_sample(
                "cassandra",
                "c",
                "cluster",
                1_700_000_000 + 30.0 * k,
                30.0,
                {"read": total * reads, "update": total * (1 - reads)},
            )
        )
    return out


def test_forecast_workload_backtests_and_picks_the_lookahead():
    result = predict.forecast_workload(samples=_samples(), method="last_value", horizons_s=(60, 300))
    assert result["series_points"] == 120 and result["method"] == "last_value"
    assert {row["horizon_s"] for row in result["accuracy"]} == {60, 300}
    assert result["lookahead"]["lookahead_s"] in (0, 60, 300)
    steps = result["lookahead"]["lookahead_steps"] or 10
    assert len(result["forecast"]["fields"]["read_ratio"]) == steps


def test_forecast_from_a_schedule_is_the_schedule():
    from ansible_collections.tactician.nosql.plugins.module_utils.workload import schedules

    schedule = schedules.abrupt_switching(1, duration_s=1800, min_interval_s=60, max_interval_s=120, rate=500)
    truth = schedules.expand(schedule)
    result = predict.forecast_workload(schedule=schedule, schedule_position=10, method="schedule", horizon_s=300)
    assert result["forecast"]["fields"]["read_ratio"] == [step.read_ratio for step in truth[10:20]]
    with pytest.raises(predict.PredictError, match="^schedule_position"):
        predict.forecast_workload(schedule=schedule, schedule_position=len(truth), method="schedule")


def test_forecast_bad_input():
    with pytest.raises(predict.PredictError, match="^method: .prophet. .*auto, arima, markov, last_value, schedule"):
        predict.forecast_workload(samples=_samples(), method="prophet")
    with pytest.raises(predict.PredictError, match="^history: no workload samples"):
        predict.forecast_workload(samples=[], method="arima")
    with pytest.raises(predict.PredictError, match="^schedule_file"):
        predict.forecast_workload(method="schedule")


def test_forecast_auto_picks_a_method_by_backtest():
    result = predict.forecast_workload(samples=_samples(), method="auto", horizons_s=(60, 300))
    assert result["method"] in ("arima", "markov", "last_value")
    assert {row["method"] for row in result["accuracy"]} == {"arima", "markov", "last_value"}
    assert "auto:" in result["lookahead"]["reason"]
    with pytest.raises(predict.PredictError, match="^method: auto chooses by backtest"):
        predict.forecast_workload(samples=_samples(), method="auto", backtest=False)


def test_contended_runs_are_left_out_of_training():
    quiet = {"ops_per_s": 1.0, "run": {"other_cpu_s": 1.0, "wall_s": 20.0}}
    busy = {"ops_per_s": 1.0, "run": {"other_cpu_s": 12.0, "wall_s": 20.0}}
    unknown = {"ops_per_s": 1.0, "run": {}}
    assert modeling.other_cpu_share(quiet, cpus=2) == 0.025
    assert modeling.other_cpu_share(unknown, cpus=2) is None
    kept, dropped = modeling.drop_contended([quiet, busy, unknown], 0.1, cpus=2)
    assert kept == [quiet, unknown] and dropped == 1
    assert modeling.drop_contended([busy], None) == ([busy], 0)


def test_machine_busy_seconds_reads_proc_stat(tmp_path):
    from ansible_collections.tactician.nosql.plugins.module_utils.workload import loaddriver

    stat = tmp_path / "stat"
    stat.write_text("cpu  100 5 50 1000 20 3 2 0 0 0\ncpu0 50 2 25 500 10 1 1 0 0 0\n")
    ticks = os.sysconf("SC_CLK_TCK")
    assert loaddriver.machine_busy_seconds(str(stat)) == (100 + 5 + 50 + 3 + 2) / ticks
    assert loaddriver.machine_busy_seconds(str(tmp_path / "none")) is None
    assert loaddriver.machine_busy_seconds() > 0


def test_forecast_auto_on_a_short_history_keeps_the_last_value_and_says_so():
    result = predict.forecast_workload(samples=_samples(steps=4), method="auto", step_s=30.0, horizon_s=120)
    assert result["method"] == "last_value" and result["lookahead"]["lookahead_steps"] == 0
    assert "auto forecasts the last value until the history is long enough" in result["lookahead"]["reason"]
    assert len(result["forecast"]["fields"]["read_ratio"]) == 4
