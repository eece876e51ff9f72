# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

import json
import math

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.workload import schedules, ycsb

# ------------------------------------------------------------------------------------------------ HPC job queue


@pytest.mark.parametrize("jobs", [1, 5, 10])
def test_hpc_queue_is_reproducible(jobs):
    first = schedules.hpc_job_queue(42, jobs, duration_s=1800, rate=1000)
    assert first.to_dict() == schedules.hpc_job_queue(42, jobs, duration_s=1800, rate=1000).to_dict()
    assert first.to_dict() != schedules.hpc_job_queue(43, jobs, duration_s=1800, rate=1000).to_dict()
    assert first.seed == 42 and first.metadata["arguments"]["concurrent_jobs"] == jobs


@pytest.mark.parametrize("jobs", [1, 5, 10])
def test_hpc_queue_jobs_follow_the_paper(jobs):
    rate, duration = 1000.0, 3600.0
    schedule = schedules.hpc_job_queue(7, jobs, duration_s=duration, rate=rate)
    assert schedule.duration_s == pytest.approx(duration)
    assert all(phase.duration_s == 30.0 and phase.rate == rate for phase in schedule.phases)
    job_list = schedule.metadata["jobs"]
    assert {job["type"] for job in job_list} == {"full", "recurring"}
    share = rate / jobs
    for job in job_list:
        kinds = [phase["kind"] for phase in job["phases"]]
        assert kinds == (["upload", "analysis", "commit"] if job["type"] == "full" else ["analysis", "commit"])
        for phase in job["phases"]:
            assert 200 <= phase["ops"] <= 100_000
            if phase["end_s"] is not None:  # a finished phase took its ops at the job's share of the rate
                assert phase["end_s"] - phase["start_s"] == pytest.approx(phase["ops"] / share, abs=0.01)
    for t in (0.0, 123.4, 1000.0, 3599.0):  # always exactly `jobs` jobs running
        running = [j for j in job_list if j["start_s"] <= t and (j["end_s"] is None or t < j["end_s"])]
        assert len(running) == jobs


def test_hpc_queue_types_are_an_equal_mix():
    schedule = schedules.hpc_job_queue(3, 10, duration_s=20 * 3600, rate=2000, step_s=300)
    types = [job["type"] for job in schedule.metadata["jobs"]]
    assert len(types) > 100
    assert abs(types.count("recurring") / len(types) - 0.5) < 0.1


def test_hpc_read_ratio_switches_between_read_and_write_heavy():
    one = [step.read_ratio for step in schedules.expand(schedules.hpc_job_queue(7, 1, duration_s=3600))]
    assert max(one) == pytest.approx(0.95) and min(one) == pytest.approx(0.05)
    crossings = sum((a - 0.5) * (b - 0.5) < 0 for a, b in zip(one, one[1:], strict=False))
    assert crossings >= 10
    five = [step.read_ratio for step in schedules.expand(schedules.hpc_job_queue(7, 5, duration_s=3600))]
    assert max(five) > 0.7 and min(five) < 0.3
    ten = [step.read_ratio for step in schedules.expand(schedules.hpc_job_queue(7, 10, duration_s=3600))]
    assert max(ten) - min(ten) > 0.2
    spread = [max(series) - min(series) for series in (one, five, ten)]
    assert spread == sorted(spread, reverse=True)  # more concurrent jobs blend into a flatter series


def test_hpc_step_mix_is_the_op_weighted_blend():
    schedule = schedules.hpc_job_queue(7, 1, duration_s=3600)
    mixes = schedules.HPC_PHASE_MIXES
    for phase, step in zip(schedule.phases, schedules.expand(schedule), strict=True):
        assert phase.mix == step.mix
        assert math.fsum(phase.mix.values()) == pytest.approx(1.0, abs=1e-12)
    pure = [phase for phase in schedule.phases if phase.mix == mixes["analysis"]]
    assert pure and all(phase.label == "jobs=1 analysis=1" for phase in pure)
    # A step where one phase gives way to another is a blend: its read ratio lies strictly between.
    assert any(0.06 < phase.read_ratio < 0.94 for phase in schedule.phases)


def test_hpc_arguments_are_checked():
    with pytest.raises(ValueError, match=r"^concurrent_jobs: 0 is below the minimum"):
        schedules.hpc_job_queue(1, 0)
    with pytest.raises(ValueError, match=r"^rate: "):
        schedules.hpc_job_queue(1, 1, rate=0)
    with pytest.raises(ValueError, match=r"^phase_mixes: 'backup' is not allowed; choose one of upload, analysis"):
        schedules.hpc_job_queue(1, 1, phase_mixes={"backup": {"read": 1}})
    with pytest.raises(ValueError, match=r"^phase_mixes.upload: proportions sum to 0.5"):
        schedules.hpc_job_queue(1, 1, phase_mixes={"upload": {"insert": 0.5}})
    custom = schedules.hpc_job_queue(1, 1, duration_s=300, phase_mixes={"upload": {"insert": 1}})
    assert custom.metadata["phase_mixes"]["upload"] == {"insert": 1.0}


# ------------------------------------------------------------------------------------------------ abrupt switching


def test_abrupt_switching_reads_only_0_or_1_within_bounds():
    schedule = schedules.abrupt_switching(5, duration_s=7200, min_interval_s=20, max_interval_s=200, rate=500)
    ratios = [phase.read_ratio for phase in schedule.phases]
    assert set(ratios) == {0.0, 1.0}
    assert all(a != b for a, b in zip(ratios, ratios[1:], strict=False))
    assert all(20 <= phase.duration_s <= 200 for phase in schedule.phases[:-1])
    assert 0 < schedule.phases[-1].duration_s <= 200
    assert schedule.duration_s == pytest.approx(7200)
    assert len(schedule.phases) > 30
    assert schedule.to_dict() == schedules.abrupt_switching(5, 7200, 20, 200, 500).to_dict()
    assert schedule.to_dict() != schedules.abrupt_switching(6, 7200, 20, 200, 500).to_dict()
    assert schedules.abrupt_switching(5, 600, 20, 200, start="write").phases[0].read_ratio == 0.0


def test_abrupt_switching_arguments_are_checked():
    with pytest.raises(ValueError, match=r"^max_interval_s: 10 is below the minimum"):
        schedules.abrupt_switching(1, 600, min_interval_s=30, max_interval_s=10)
    with pytest.raises(ValueError, match=r"^write_mix: .* has reads"):
        schedules.abrupt_switching(1, 600, write_mix={"update": 0.5, "read": 0.5})
    with pytest.raises(ValueError, match=r"^start: 'both' is not allowed; choose one of read, write"):
        schedules.abrupt_switching(1, 600, start="both")


# ------------------------------------------------------------------------------------------------ daily pattern


def test_daily_pattern_has_the_exact_bus_tracking_mix():
    schedule = schedules.daily_pattern(9, duration_s=1200, rate=2000, step_s=10)
    expected = {"update": 0.422, "scan": 0.548, "insert": 0.0282, "read": 0.0018}
    assert all(phase.mix == expected for phase in schedule.phases)
    assert schedule.phases[0].read_ratio == pytest.approx(0.5498)
    assert all(0 < phase.rate <= 2000 * 1.05 for phase in schedule.phases)
    assert schedule.to_dict() == schedules.daily_pattern(9, duration_s=1200, rate=2000, step_s=10).to_dict()


@pytest.mark.parametrize("shape", ["sine", "piecewise"])
def test_daily_pattern_compresses_a_day(shape):
    schedule = schedules.daily_pattern(1, duration_s=480, rate=1000, day_s=240, step_s=10, shape=shape, noise=0)
    rates = [phase.rate for phase in schedule.phases]
    assert len(rates) == 48 and rates[:24] == rates[24:]  # two compressed days, identical
    night, afternoon = rates[1], rates[15]  # hour ~1 and ~15
    assert afternoon > 3 * night
    if shape == "sine":
        assert max(rates) == pytest.approx(1000, abs=5) and min(rates) == pytest.approx(200, abs=5)


def test_daily_pattern_arguments_are_checked():
    with pytest.raises(ValueError, match=r"^shape: 'square' is not allowed; choose one of sine, piecewise$"):
        schedules.daily_pattern(1, shape="square")
    with pytest.raises(ValueError, match=r"^noise: "):
        schedules.daily_pattern(1, noise=1.5)


# ------------------------------------------------------------------------------------------------ expand


def test_expand_blends_by_operations_across_phases():
    schedule = schedules.Schedule(
        [schedules.Phase(20, {"read": 1}, 100), schedules.Phase(20, {"insert": 1}, 300)], seed=1
    )
    first, second = schedules.expand(schedule, 30)
    assert first.t == 0 and first.duration_s == 30
    assert first.mix == pytest.approx({"read": 0.4, "insert": 0.6})  # 2000 reads, 3000 inserts
    assert first.rate == pytest.approx(5000 / 30) and first.read_ratio == pytest.approx(0.4)
    assert (second.t, second.duration_s, second.rate, second.read_ratio) == (30, 10, 300, 0.0)
    unthrottled = schedules.Schedule(
        [schedules.Phase(10, {"read": 1}), schedules.Phase(20, {"update": 0.5, "readmodifywrite": 0.5}, 50)]
    )
    (step,) = schedules.expand(unthrottled, 30)
    assert step.rate == 0 and step.mix == pytest.approx({"read": 1 / 3, "update": 1 / 3, "readmodifywrite": 1 / 3})
    assert step.read_ratio == pytest.approx(0.5)  # rmw: one read and one write
    with pytest.raises(ValueError, match=r"^step_s: "):
        schedules.expand(schedule, 0)


def test_phase_gives_the_workload_a_driver_runs():
    phase = schedules.Phase(60, {"read": 0.5, "readmodifywrite": 0.5}, 200, requestdistribution="latest")
    spec = phase.workload(ycsb.workload("A", recordcount=5000))
    assert (spec.readproportion, spec.updateproportion, spec.readmodifywriteproportion) == (0.5, 0.0, 0.5)
    assert (spec.requestdistribution, spec.target, spec.operationcount, spec.recordcount) == (
        "latest",
        200,
        12000,
        5000,
    )


# ------------------------------------------------------------------------------------------------ files


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".json"])
def test_schedule_round_trips_through_a_file(tmp_path, suffix):
    original = schedules.hpc_job_queue(11, 5, duration_s=900)
    path = tmp_path / ("queue" + suffix)
    schedules.save_schedule(original, str(path))
    loaded = schedules.load_schedule(str(path))
    assert loaded.to_dict() == original.to_dict()
    assert loaded.phases == original.phases and loaded.seed == 11
    if suffix == ".json":
        json.loads(path.read_text())
    else:
        assert path.read_text().startswith("version: 1\n")


def test_yaml_files_fall_back_to_json_without_pyyaml(tmp_path, monkeypatch):
    monkeypatch.setattr(schedules, "yaml", None)
    original = schedules.abrupt_switching(2, 600)
    path = tmp_path / "switch.yaml"
    schedules.save_schedule(original, str(path))
    assert json.loads(path.read_text())["version"] == 1
    assert schedules.load_schedule(str(path)).to_dict() == original.to_dict()


GOOD_PHASE = "  - {duration_s: 30, mix: {read: 0.9, update: 0.1}, rate: 100}\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("seed: 1\nphases:\n" + GOOD_PHASE, "version: is required"),
        ("version: 2\nseed: 1\nphases:\n" + GOOD_PHASE, "version: 2 is not allowed; choose one of 1"),
        ("version: 1\nseed: abc\nphases:\n" + GOOD_PHASE, "seed: expected integer, got string 'abc'"),
        ("version: 1\nseed: 1\nphases: []\n", "phases: needs at least 1 item(s)"),
        ("version: 1\nseed: 1\nphase: []\nphases:\n" + GOOD_PHASE, "phase: unknown field; choose one of metadata"),
        (
            "version: 1\nseed: 1\nphases:\n" + GOOD_PHASE + "  - {duration_s: -5, mix: {read: 1}}\n",
            "phases[1].duration_s: -5 is too small; choose a value > 0",
        ),
        (
            "version: 1\nseed: 1\nphases:\n" + GOOD_PHASE + "  - {duration_s: 5, mix: {reed: 1}}\n",
            "phases[1].mix: 'reed' is not allowed; choose one of read, update, insert, scan, readmodifywrite, delete",
        ),
        (
            "version: 1\nseed: 1\nphases:\n  - {duration_s: 5, mix: {read: 0.5, update: 0.4}}\n",
            "phases[0].mix: proportions sum to 0.9; they must sum to 1",
        ),
        (
            "version: 1\nseed: 1\nphases:\n  - {duration_s: 5, mix: {read: 1.5}}\n",
            "phases[0].mix.read: 1.5 is above the maximum; choose a value <= 1",
        ),
        (
            "version: 1\nseed: 1\nphases:\n  - {duration_s: 5, mix: {read: 1}, rate: -1}\n",
            "phases[0].rate: -1 is below the minimum; choose a value >= 0",
        ),
        (
            "version: 1\nseed: 1\nphases:\n  - {duration_s: 5, mix: {read: 1}, requestdistribution: foo}\n",
            "phases[0].requestdistribution: 'foo' is not allowed; choose one of uniform, zipfian, latest, hotspot",
        ),
        ("version: 1\nseed: 1\nphases:\n  - {mix: {read: 1}}\n", "phases[0].duration_s: is required"),
        ("version: 1\nseed: 1\nphases:\n  - {duration: 5, mix: {read: 1}}\n", "phases[0].duration: unknown field"),
        ("- just\n- a list\n", "schedule: expected object, got array"),
        ("version: [1\n", "schedule: bad.yaml is not valid YAML"),
    ],
)
def test_bad_schedule_files_name_the_field(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as error:
        schedules.load_schedule(str(path))
    assert isinstance(error.value, schedules.ScheduleError)
    assert str(error.value).startswith(message), str(error.value)
    assert str(error.value).endswith("(in bad.yaml)")


def test_missing_file_and_bad_json(tmp_path):
    with pytest.raises(schedules.ScheduleError, match=r"^schedule: cannot read"):
        schedules.load_schedule(str(tmp_path / "missing.json"))
    path = tmp_path / "bad.json"
    path.write_text("{version: 1}")
    with pytest.raises(schedules.ScheduleError, match=r"^schedule: bad.json is not valid JSON"):
        schedules.load_schedule(str(path))


def test_phase_errors_name_the_field():
    with pytest.raises(ValueError, match=r"^duration_s: expected number, got string"):
        schedules.Phase("long", {"read": 1})
    with pytest.raises(ValueError, match=r"^mix: proportions sum to 2"):
        schedules.Phase(10, {"read": 1, "update": 1})
    with pytest.raises(ValueError, match=r"^label: expected string or null, got integer"):
        schedules.Phase(10, {"read": 1}, label=3)


def test_schema_is_a_json_schema_document():
    schema = json.loads(json.dumps(schedules.SCHEDULE_SCHEMA))
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert schema["properties"]["phases"]["items"]["required"] == ["duration_s", "mix"]


def test_schema_agrees_with_a_full_json_schema_validator():
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(schedules.SCHEDULE_SCHEMA)
    validator.check_schema(schedules.SCHEDULE_SCHEMA)
    good = schedules.hpc_job_queue(1, 5, duration_s=300).to_dict()
    assert not list(validator.iter_errors(good))
    bad = [
        dict(good, version=2),
        dict(good, phases=[]),
        dict(good, extra=1),
        dict(good, phases=[{"duration_s": 0, "mix": {"read": 1}}]),
        dict(good, phases=[{"duration_s": 5, "mix": {"reed": 1}}]),
        dict(good, phases=[{"duration_s": 5, "mix": {"read": 1}, "requestdistribution": "foo"}]),
    ]
    for data in bad:
        assert list(validator.iter_errors(data))
        with pytest.raises(schedules.ScheduleError):
            schedules.validate_schedule(data)
