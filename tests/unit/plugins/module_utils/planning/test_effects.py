# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The realized effect of a plan step next to its prediction, kept in the history store: the verdict on the
measurement, the interval of the realized gain, the lower bound and the revert."""

from __future__ import annotations

import copy
import math
import os
import statistics

import pytest
from testlib import CURRENT, example_plan, plan_body

from ansible_collections.tactician.nosql.plugins.module_utils.planning import effects
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile
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


def sample(throughput, read_ratio=0.1, time=0.0, window_s=30.0):
    return {"throughput": throughput, "read_ratio": read_ratio, "time": time, "window_s": window_s}


def side(*throughputs, read_ratio=0.95, start=0.0, window_s=10.0):
    """Sub-window samples of one side, one after the other."""
    return [
        sample(value, read_ratio, start + window_s * (index + 1), window_s) for index, value in enumerate(throughputs)
    ]


def dynamic_plan(gain_low_share=None, workload=True, steps=1):
    """A dynamic plan made for CURRENT whose step may carry predicted.gain_low_share and a workload."""
    body = plan_body(steps=steps)
    for step in body["steps"]:
        if gain_low_share is not None:
            step["predicted"]["gain_low_share"] = gain_low_share
        if workload:
            step["workload"] = {"mix": {"read": 0.95, "update": 0.05}, "records": 20000, "threads": 32}
    return planfile.build(
        body,
        "cassandra",
        1_800_000_000,
        "5.0.9",
        {"name": "lab", "cl": "ONE", "nodes": 3, "hosts": ["a", "b", "c"], "rf": 3},
        {"file": "m.json"},
        CURRENT,
        lookahead={"step_s": 30, "seconds": 1800},
    )


# ------------------------------------------------------------------------------------------- the record itself
def test_record_puts_prediction_and_measurement_side_by_side():
    record = effects.realized(PLAN, sample(900.0), sample(1170.0))
    assert record["predicted"] == {"before": 1000.0, "after": 1200.0, "gain": 0.2, "gain_low": None}
    assert record["measured"]["gain"] == pytest.approx(0.3) and record["gain_error"] == pytest.approx(0.1)
    assert record["same_workload"] and record["notes"] == [] and record["cluster"] == "lab"
    assert record["verdict"] == "valid" and record["measurement_error"] is False
    assert effects.summary(record).startswith("concurrent_writes=64: predicted +20.0 %, measured +30.0 % (900 -> 1,170")


def test_one_window_a_side_has_no_interval_and_no_judgement():
    record = effects.realized(PLAN, sample(900.0), sample(600.0))
    assert record["verdict"] == "valid" and record["measured"]["gain_ci95"] is None
    assert record["below_lower_bound"] is None and record["revert"] is None
    assert "at least 2 sub-windows a side (got 1 before, 1 after)" in record["decision"]


def test_a_changed_workload_or_a_step_not_applied_is_said():
    record = effects.realized(PLAN, sample(900.0, 0.1), sample(2000.0, 0.9), applied=False)
    assert not record["same_workload"] and len(record["notes"]) == 2
    assert "read ratio 0.10 -> 0.90" in record["notes"][1]
    assert record["verdict"] == "mixed_phases" and record["below_lower_bound"] is None
    assert record["decision"] == "no judgement: the step was not applied"


def test_bad_input_names_the_field():
    with pytest.raises(effects.EffectError, match=r"after.throughput: missing"):
        effects.realized(PLAN, sample(1.0), {"read_ratio": 0.5})
    with pytest.raises(effects.EffectError, match=r"before.throughput: -1.0 is below the minimum 0"):
        effects.realized(PLAN, sample(-1.0), sample(1.0))
    with pytest.raises(effects.EffectError, match=r"before\[1\].read_ratio: 'x' is not a finite number"):
        effects.realized(PLAN, [sample(1.0), sample(1.0, "x")], sample(1.0))
    with pytest.raises(effects.EffectError, match=r"after: expected the cluster's workload sample or a non-empty"):
        effects.realized(PLAN, sample(1.0), [])
    with pytest.raises(effects.EffectError, match=r"step: 3 is not a step of this plan \(it has 1\)"):
        effects.realized(PLAN, sample(1.0), sample(1.0), step=3)
    with pytest.raises(effects.EffectError, match="plan: expected a plan document"):
        effects.realized({"x": 1}, sample(1.0), sample(1.0))
    with pytest.raises(effects.EffectError, match=r"plausible_ratio: 1.0 must be greater than 1"):
        effects.realized(PLAN, sample(1.0), sample(1.0), plausible_ratio=1.0)


# ------------------------------------------------------------------------------------------- the verdicts
def test_valid_windows_give_the_gain_with_its_interval_and_the_spread():
    record = effects.realized(PLAN, side(4000, 4100, 3950), side(4400, 4500, 4450))
    measured = record["measured"]
    assert record["verdict"] == "valid"
    assert measured["before"] == pytest.approx(4016.7, abs=0.1) and measured["after"] == pytest.approx(4450.0)
    assert measured["subwindows_before"] == [4000.0, 4100.0, 3950.0]
    assert measured["cv_before"] == pytest.approx(statistics.stdev([4000, 4100, 3950]) / 4016.6667, abs=1e-4)
    low, high = measured["gain_ci95"]
    assert low < measured["gain"] < high and measured["ci_method"].startswith("95 % t interval of log(after/before)")
    assert measured["windows"][0] == {"time": 30.0, "window_s": 30.0}


def test_the_interval_is_a_welch_t_interval_of_the_log_ratio():
    stats = pytest.importorskip("scipy.stats")
    before, after = [4000.0, 4100.0, 3950.0, 4050.0], [4400.0, 4600.0, 4450.0]
    record = effects.realized(PLAN, side(*before), side(*after))
    v0 = statistics.variance(before) / (len(before) * statistics.fmean(before) ** 2)
    v1 = statistics.variance(after) / (len(after) * statistics.fmean(after) ** 2)
    df = (v0 + v1) ** 2 / (v0 * v0 / 3 + v1 * v1 / 2)
    half = stats.t.ppf(0.975, math.floor(df)) * math.sqrt(v0 + v1)
    centre = math.log(statistics.fmean(after) / statistics.fmean(before))
    expected = [math.exp(centre - half) - 1.0, math.exp(centre + half) - 1.0]
    assert record["measured"]["gain_ci95"] == pytest.approx(expected, abs=2e-5)


@pytest.mark.parametrize("df", [1, 2, 3, 7, 29, 30, 31, 45, 75, 200, 10_000])
def test_the_t_table_is_the_t_distribution(df):
    stats = pytest.importorskip("scipy.stats")
    assert effects.t975(df) == pytest.approx(float(stats.t.ppf(0.975, df)), abs=1.5e-3)
    assert effects.t975(df + 0.7) >= float(stats.t.ppf(0.975, df + 0.7)) - 1.5e-3  # rounded down: conservative


def test_the_plus_2887_percent_of_the_demo_is_a_measurement_error():
    """The demo's switch back recorded +2887.0 %: the before window (one of 30 s) caught the read phase's
    compaction-debt collapse, 162 ops/s where ~4,000 was normal."""
    plan = dynamic_plan()
    record = effects.realized(plan, sample(162.0, 0.95), sample(162.0 * 29.87, 0.95), current=CURRENT)
    assert record["verdict"] == "implausible" and record["measurement_error"] is True
    assert record["measured"]["gain"] is None and record["measured"]["gain_ci95"] is None
    assert record["measured"]["raw_gain"] == pytest.approx(28.87) and record["gain_error"] is None
    assert record["below_lower_bound"] is None and record["revert"] is None
    assert "a realized change of +2887.0 % (after/before 29.87) is outside the plausible [1/3, 3]" in record["notes"][0]
    assert (
        "the before window served 162 ops/s, far below the after window's sub-window median of 4,839"
        in (record["notes"][1])
    )
    text = effects.summary(record)
    assert "MEASUREMENT ERROR, not a result (162 -> 4,839 ops/s)" in text and "measured +2887" not in text
    assert effects.training_rows(record, plan, 0, CURRENT) == []


def test_a_side_far_below_the_other_sides_median_is_implausible_even_within_the_ratio():
    # before: collapsed all along (1,227 ops/s); after: 4,000 with one transient that pulls its mean down to 2,800,
    # within 3x of the before side's, but the before side is far below the after side's sub-window median
    record = effects.realized(PLAN, side(1200, 1250, 1230), side(4000, 4100, 300))
    assert record["measured"]["raw_gain"] < 2.0 and record["verdict"] == "implausible"
    assert any(
        "before window served 1,227 ops/s, far below the after window's sub-window median of 4,000" in n
        for n in record["notes"]
    )


def test_a_collapse_inside_one_window_makes_it_unstable():
    record = effects.realized(PLAN, side(4000, 162, 3950), side(4100, 4050, 4150))
    assert record["verdict"] == "unstable" and record["below_lower_bound"] is None
    assert any("before: sub-window 1 served 162 ops/s against a median of 3,950" in n for n in record["notes"])
    assert record["measured"]["cv_before"] > 0.5


def test_a_window_that_spans_two_phases_is_unstable():
    before = side(4000, 4100, 3950)
    before[2]["read_ratio"] = 0.6  # the upload began during the last sub-window
    record = effects.realized(PLAN, before, side(4100, 4050, 4150, read_ratio=0.9))
    assert record["verdict"] == "unstable"
    assert any("before: sub-window 2 has read ratio 0.60 against 0.84" in n for n in record["notes"])


def test_windows_of_two_phases_are_mixed_phases():
    record = effects.realized(PLAN, side(4000, 4100, 3950, read_ratio=0.95), side(3000, 3100, 3050, read_ratio=0.0))
    assert record["verdict"] == "mixed_phases" and not record["same_workload"]
    assert record["measured"]["gain_ci95"] is not None  # reported, not judged
    assert record["below_lower_bound"] is None


def test_a_side_that_served_the_offered_load_is_throttled():
    record = effects.realized(PLAN, side(600, 598, 601), side(600, 599, 600), offered=600.0)
    assert record["verdict"] == "throttled" and record["below_lower_bound"] is None
    assert any("served 600 of the 600 ops/s the clients offer" in note for note in record["notes"])
    assert effects.realized(PLAN, side(400, 410, 405), side(420, 415, 410), offered=600.0)["verdict"] == "valid"


def test_implausible_comes_first():
    record = effects.realized(PLAN, side(100, 101, read_ratio=0.9), side(4000, 4010, read_ratio=0.1), offered=50.0)
    assert record["verdict"] == "implausible" and not record["same_workload"]


# ------------------------------------------------------------------------------------------- the lower bound
def test_without_gain_low_share_the_bound_is_zero():
    plan = dynamic_plan()
    worse = effects.realized(plan, side(4000, 4100, 3950), side(3500, 3600, 3550), current=CURRENT)
    assert worse["lower_bound"] == {"gain": 0.0, "source": effects.LOWER_BOUND_DEFAULT}
    assert worse["measured"]["gain_ci95"][1] < 0 and worse["below_lower_bound"] is True
    assert worse["decision"].startswith("revert: even the upper end of the interval is below the lower bound")
    flat = effects.realized(plan, side(4000, 4100, 3950), side(4050, 4000, 4020), current=CURRENT)
    assert flat["measured"]["gain_ci95"][0] < 0 < flat["measured"]["gain_ci95"][1]
    assert flat["below_lower_bound"] is False and flat["revert"] is None and flat["decision"].startswith("keep")


def test_gain_low_share_is_the_bound_the_upper_end_is_compared_with():
    before, after = side(4000, 4010, 3990), side(4080, 4090, 4070)  # +2 %, interval about [+1.5 %, +2.5 %]
    low = effects.realized(dynamic_plan(gain_low_share=0.05), before, after, current=CURRENT)
    assert low["predicted"]["gain_low"] == 0.05 and low["lower_bound"]["source"] == "predicted.gain_low_share"
    assert low["measured"]["gain_ci95"][1] < 0.05 and low["below_lower_bound"] is True and low["revert"]
    assert effects.realized(dynamic_plan(), before, after, current=CURRENT)["below_lower_bound"] is False
    # a wide interval reaches the bound: no revert although the point value is below it
    wide = effects.realized(dynamic_plan(gain_low_share=0.05), side(3000, 5000, 4000), side(4500, 3600, 4200))
    assert wide["measured"]["gain"] < 0.05 < wide["measured"]["gain_ci95"][1] and wide["below_lower_bound"] is False


# ------------------------------------------------------------------------------------------- the revert
def test_revert_goes_back_to_the_configuration_before_the_step():
    plan = dynamic_plan()
    record = effects.realized(plan, side(4000, 4100, 3950), side(3500, 3600, 3550), current=CURRENT)
    assert record["revert"]["configuration"] == {"concurrent_reads": 32}
    assert record["revert"]["full_configuration"] == CURRENT and record["revert"]["undo"] == {"concurrent_reads": 64}


def test_revert_of_a_later_step_goes_back_to_the_step_before_it():
    plan = dynamic_plan(steps=2)
    target, why_not = effects.revert_target(plan, 1, {})
    assert why_not is None and target["configuration"] == {"concurrent_writes": 32}
    assert target["full_configuration"] == {"concurrent_reads": 64, "concurrent_writes": 32}


def test_no_revert_when_the_value_before_is_unknown_or_the_step_is_a_tactic():
    plan = copy.deepcopy(PLAN)
    target, why_not = effects.revert_target(plan, 0, {})
    assert target is None and "the value before the switch of concurrent_writes is not known" in why_not
    record = effects.realized(plan, side(4000, 4100, 3950), side(3500, 3600, 3550))
    assert record["below_lower_bound"] is True and record["revert"] is None
    assert record["decision"].startswith("below the lower bound, but no revert: the value before the switch")
    target, _why = effects.revert_target(plan, 0, {"concurrent_writes": 32})
    assert target["configuration"] == {"concurrent_writes": 32}
    plan["steps"][0]["tactic"] = "add_index"
    assert "inverse tactic" in effects.revert_target(plan, 0, {"concurrent_writes": 32})[1]


def _below(plan=None, **kwargs):
    plan = plan or dynamic_plan()
    return plan, effects.realized(plan, side(4000, 4100, 3950), side(3500, 3600, 3550), current=CURRENT, **kwargs)


def test_the_revert_plan_is_one_step_back_naming_the_effect_record():
    plan, record = _below()
    revert = effects.revert_plan(plan, 0, record, current=CURRENT, plan="plans/lab-1.yml", start=1_800_000_600)
    assert planfile.validate(revert) is revert and revert["approval"]["approved"] is False
    assert len(revert["steps"]) == 1 and revert["kind"] == "dynamic" and revert["consistency_level"] == "ONE"
    step = revert["steps"][0]
    assert step["configuration"] == {"concurrent_reads": 32} and step["full_configuration"] == CURRENT
    assert step["offset_s"] == 0.0 and step["restart"] is False and step["roll_s"] == 12.5
    assert step["predicted"]["ops_per_s_before"] == 3550.0 and step["predicted"]["ops_per_s_after"] == 4016.7
    assert "effect record effect/lab/%s/0" % plan["created"] in step["reason"]
    assert revert["current"]["configuration"] == {"concurrent_reads": 64, "concurrent_writes": 32}
    assert revert["revert_of"]["effect"] == effects.state_key(record)
    assert revert["revert_of"]["plan"] == "plans/lab-1.yml"
    assert revert["predicted"]["ops"] == pytest.approx(4016.7 * 30) and revert["predicted"]["gain_share"] > 0
    assert planfile.summary(revert)[0].startswith("dynamic plan for cassandra, lookahead 30.0 s from")
    # approved, it passes the checks of mode approve against the configuration the forward step left in place
    approved = planfile.approve(revert, "autotune")
    assert planfile.check_approved(approved, {"concurrent_reads": 64, "concurrent_writes": 32}) is approved
    assert planfile.applied_record(approved, 0, {})["configuration"] == CURRENT
    decision = planfile.gate(approved, "auto", 0.05, 30)
    assert decision["apply"] is True and decision["step"] == 0


def test_no_revert_plan_without_a_revert_and_no_revert_of_a_revert():
    plan, record = _below()
    flat = effects.realized(plan, side(4000, 4100, 3950), side(4050, 4000, 4020), current=CURRENT)
    with pytest.raises(effects.EffectError, match=r"revert: the effect record asks for no revert \(verdict valid"):
        effects.revert_plan(plan, 0, flat)
    revert = effects.revert_plan(plan, 0, record, current=CURRENT)
    again = effects.realized(revert, side(3500, 3600, 3550), side(3000, 3100, 3050), current=CURRENT)
    assert again["below_lower_bound"] is True and again["revert"] is None
    assert again["plan"]["revert_of"] == effects.state_key(record)
    assert "a revert is not reverted again" in again["decision"]


def test_prepare_revert_writes_approves_and_keeps_it_once(tmp_path):
    store = history.open_history(str(tmp_path / "h.sqlite3"))
    plan, record = _below()
    path = str(tmp_path / "lab-revert.yml")
    changed, info = effects.prepare_revert(store, plan, 0, record, path, current=CURRENT, approve_by="autotune")
    assert changed and info["due"] and info["approved"] and info["status"] == "planned" and info["roll"] is True
    assert info["next"] == "the revert plan %s is approved by autotune: it is rolled now" % path
    on_disk = planfile.load_plan(path)
    assert planfile.approval_state(on_disk)["digest_ok"] and info["digest"] == planfile.digest(on_disk)
    state = store.load_state(effects.revert_key(record))
    assert state["status"] == "planned" and state["plan_file"] == path and state["effect"] == effects.state_key(record)
    assert effects.revert_key(record) == "revert/lab/%s/0" % plan["created"]
    text = open(path).read()
    changed, again = effects.prepare_revert(store, plan, 0, record, path, current=CURRENT, approve_by="autotune")
    assert not changed and again["digest"] == info["digest"] and open(path).read() == text
    assert effects.mark_rolled(store, plan, 0) is True and effects.mark_rolled(store, plan, 0) is False
    changed, done = effects.prepare_revert(store, plan, 0, record, path, current=CURRENT, approve_by="autotune")
    assert not changed and done["due"] is False and done["status"] == "rolled" and done["roll"] is False
    assert done["next"].startswith("the step was rolled back already (%s, " % path)
    assert [r["status"] for r in effects.reverts(store, "lab")] == ["rolled"] and len(effects.effects(store)) == 0
    store.close()


def test_prepare_revert_in_check_mode_writes_and_approves_nothing(tmp_path):
    store = history.open_history(str(tmp_path / "h.sqlite3"))
    plan, record = _below()
    path = str(tmp_path / "lab-revert.yml")
    changed, info = effects.prepare_revert(store, plan, 0, record, path, approve_by="autotune", check_mode=True)
    assert changed and info["due"] and info["approved"] is False and not os.path.exists(path)
    assert info["roll"] is False and info["next"].startswith("check mode: the revert plan")
    assert store.load_state(effects.revert_key(record)) is None
    _changed, mine = effects.prepare_revert(store, plan, 0, record, path, approve_by=None)
    assert mine["approved"] is False and planfile.load_plan(path)["approval"]["approved"] is False
    assert mine["roll"] is False and "waits for a person" in mine["next"]
    other_plan, other = _below(dynamic_plan(gain_low_share=0.0))
    other_plan["created"] = "2030-01-01T00:00:00Z"
    other = effects.realized(other_plan, side(4000, 4100, 3950), side(3500, 3600, 3550), current=CURRENT)
    with pytest.raises(effects.EffectError, match=r"revert_plan_file: .* holds another plan"):
        effects.prepare_revert(store, other_plan, 0, other, path)
    with pytest.raises(effects.EffectError, match=r"revert_rolled: no revert of step 0 of the plan created 2030"):
        effects.mark_rolled(store, other_plan, 0)
    flat = effects.realized(plan, side(4000, 4100, 3950), side(4050, 4000, 4020), current=CURRENT)
    assert effects.prepare_revert(store, plan, 0, flat, path) == (False, None)
    store.close()


# ------------------------------------------------------------------------------------------- the models
def test_a_valid_record_keeps_both_measured_points_for_the_models():
    plan, record = _below()
    rows = effects.training_rows(record, plan, 0, CURRENT, hardware={"vcpu": 2})
    assert [row["key"] for row in rows] == [
        "%s/before" % effects.state_key(record),
        "%s/after" % effects.state_key(record),
    ]
    before, after = rows[0]["row"], rows[1]["row"]
    assert before["config"] == CURRENT and after["config"] == {"concurrent_reads": 64, "concurrent_writes": 32}
    assert before["ops_per_s"] == pytest.approx(4016.7 / 3, abs=0.1) and after["run"]["cluster_ops_per_s"] == 3550.0
    assert before["workload"]["mix"] == {"read": 0.95, "update": 0.05} and after["hardware"] == {"vcpu": 2}
    assert after["run"]["nodes"] == 3 and after["run"]["design"] == "effect" and after["run"]["cv"] is not None
    unstable = effects.realized(plan, side(4000, 162, 3950), side(4100, 4050, 4150), current=CURRENT)
    assert effects.training_rows(unstable, plan, 0, CURRENT) == []
    assert effects.training_rows(record, dynamic_plan(workload=False), 0, CURRENT) == []


def test_records_are_kept_once_and_listed_per_cluster(tmp_path):
    store = history.open_history(str(tmp_path / "h.sqlite3"))
    record = effects.realized(PLAN, sample(900.0), sample(1170.0))
    assert effects.save(store, record) is True
    assert effects.save(store, record) is False
    other = effects.realized(dict(PLAN, cluster={"name": "other"}), sample(1.0), sample(1.0))
    effects.save(store, other)
    assert effects.effects(store, "lab") == [record] and len(effects.effects(store)) == 2
    store.close()


def test_example_plan_of_the_helpers_has_no_gain_low_share():
    assert "gain_low_share" not in example_plan()["steps"][0]["predicted"]
