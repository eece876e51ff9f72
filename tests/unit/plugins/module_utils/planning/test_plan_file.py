# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The plan file's approval and decision rules (planning/plan_file.py): digest, approve, revoke, check_approved,
step_due_now, gate, applied_record, set_approval (the module plan_approval)."""

from __future__ import annotations

import copy
import json
import os

import pytest
import yaml
from testlib import CURRENT
from testlib import example_plan as _plan

from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile
from ansible_collections.tactician.nosql.plugins.module_utils.planning.plan_file import PlanFileError


@pytest.fixture
def plan():
    return _plan()


# ---------------------------------------------------------------- digest
def test_digest_is_over_the_content_without_the_approval(plan):
    value = planfile.digest(plan)
    assert value.startswith("sha256:") and len(value) == len("sha256:") + 64
    approved = dict(plan, approval={"approved": True, "by": "jane", "at": "2026-01-01T00:00:00Z"})
    assert planfile.digest(approved) == value
    assert planfile.digest(dict(plan, reasons=["another reason"])) != value
    changed = copy.deepcopy(plan)
    changed["steps"][0]["configuration"]["concurrent_reads"] = 65
    assert planfile.digest(changed) != value


def test_digest_is_the_same_from_yaml_json_and_any_key_order(plan, tmp_path):
    path = tmp_path / "plan.yml"
    planfile.save_plan(str(path), plan)
    reordered = {key: plan[key] for key in reversed(list(plan))}
    assert (
        planfile.digest(planfile.load_plan(str(path)))
        == planfile.digest(json.loads(json.dumps(plan)))
        == planfile.digest(reordered)
        == planfile.digest(plan)
    )


def test_digest_of_a_non_mapping_names_the_plan():
    with pytest.raises(PlanFileError, match=r"^plan: \[\] is not a mapping"):
        planfile.digest([])


# ---------------------------------------------------------------- approve, revoke
def test_approve_records_who_when_and_the_digest(plan):
    approved = planfile.approve(plan, " jane.doe ", at="2026-11-22T10:20:00+01:00")
    assert approved["approval"] == {
        "approved": True,
        "by": "jane.doe",
        "at": "2026-11-22T09:20:00Z",
        "digest": planfile.digest(plan),
    }
    assert plan["approval"]["approved"] is False  # a copy: the plan given is left as it is
    planfile.validate(approved)
    assert planfile.approve(plan, "jane", at=1_800_000_000)["approval"]["at"] == "2027-01-15T08:00:00Z"
    assert planfile.approve(plan, "jane", at="2026-11-22T10:20:00")["approval"]["at"] == "2026-11-22T10:20:00Z"
    assert planfile.approve(plan, "jane")["approval"]["at"].endswith("Z")


@pytest.mark.parametrize(
    "by, at, message",
    [
        ("", None, r"^by: '': give who approves"),
        (None, None, r"^by: None: give who approves"),
        ("jane", "yesterday", r"^at: 'yesterday' is not a time; give ISO 8601"),
        ("jane", True, r"^at: True is not a time"),
    ],
)
def test_approve_refuses_bad_input_naming_the_field(plan, by, at, message):
    with pytest.raises(PlanFileError, match=message):
        planfile.approve(plan, by, at)


def test_approve_refuses_a_malformed_plan_or_one_without_steps(plan):
    with pytest.raises(PlanFileError, match=r"^steps\[0\]\.offset_s"):
        planfile.approve(dict(plan, steps=[dict(plan["steps"][0], offset_s="soon")]), "jane")
    with pytest.raises(PlanFileError, match="^steps: the plan has none .*nothing to approve"):
        planfile.approve(dict(plan, steps=[]), "jane")


def test_revoke_and_approval_state(plan):
    approved = planfile.approve(plan, "jane")
    state = planfile.approval_state(approved)
    assert state["approved"] and state["by"] == "jane" and state["digest_ok"] is True
    assert state["digest"] == state["content_digest"] == planfile.digest(plan)
    revoked = planfile.revoke(approved)
    assert revoked["approval"] == {"approved": False, "by": None, "at": None}
    assert planfile.approval_state(revoked)["digest_ok"] is None
    assert planfile.approval_state(dict(approved, reasons=[]))["digest_ok"] is False


# ---------------------------------------------------------------- check_approved
def test_check_approved_passes_an_approved_plan_made_for_the_configuration_in_place(plan):
    approved = planfile.approve(plan, "jane")
    assert planfile.check_approved(approved, CURRENT) is approved
    assert planfile.check_approved(approved, {"concurrent_reads": 32}) is approved  # restricted to its keys
    assert planfile.check_approved(approved, {}) is approved
    assert planfile.check_approved(approved, None) is approved


def test_check_approved_names_what_is_wrong_in_order(plan):
    with pytest.raises(PlanFileError, match=r"^approval\.approved is not true: .*plan_approval"):
        planfile.check_approved(plan, CURRENT)
    by_hand = dict(plan, approval={"approved": True, "by": "jane", "at": "2026-11-22T10:20:00Z"})
    with pytest.raises(PlanFileError, match=r"^approval\.digest: missing: the approval \(by jane at 2026"):
        planfile.check_approved(by_hand, CURRENT)
    approved = planfile.approve(plan, "jane")
    changed = copy.deepcopy(approved)
    changed["steps"][0]["configuration"]["concurrent_reads"] = 128
    with pytest.raises(PlanFileError, match=r"^approval\.digest: the plan changed after it was approved by jane"):
        planfile.check_approved(changed, CURRENT)
    empty = dict(approved, steps=[])
    empty["approval"] = dict(approved["approval"], digest=planfile.digest(empty))
    with pytest.raises(PlanFileError, match=r"^steps: the plan has none .*nothing to apply"):
        planfile.check_approved(empty, CURRENT)
    with pytest.raises(PlanFileError) as info:
        planfile.check_approved(approved, {"concurrent_reads": 16}, "plans/lab-applied.yml")
    assert str(info.value) == (
        'current.configuration: the plan was made for {"concurrent_reads": 32} but the configuration in place'
        ' (plans/lab-applied.yml) is {"concurrent_reads": 16}: plan again'
    )
    with pytest.raises(PlanFileError, match=r"made for \{\} but the configuration in place is \{\"heap\": 1\}"):
        planfile.check_approved(approved, {"heap": 1})
    with pytest.raises(PlanFileError, match="^current_configuration: .* is not a mapping"):
        planfile.check_approved(approved, ["concurrent_reads"])
    with pytest.raises(PlanFileError, match="^store: "):
        planfile.check_approved(dict(approved, store="mysql"), CURRENT)


def test_made_for_restricts_the_plans_configuration_to_the_keys_in_place(plan):
    assert planfile.made_for(plan, {"concurrent_reads": 1, "other": 2}) == {"concurrent_reads": 32}


# ---------------------------------------------------------------- step_due_now, check_step
def test_step_due_now_is_the_first_step_within_one_decision_step():
    assert planfile.step_due_now(_plan(offset_s=0.0), 30) == 0
    assert planfile.step_due_now(_plan(offset_s=29.0), 30) == 0
    assert planfile.step_due_now(_plan(offset_s=30.0), 30) is None
    assert planfile.step_due_now(_plan(offset_s=30.0), "60") == 0
    assert planfile.step_due_now(_plan(steps=0), 30) is None


@pytest.mark.parametrize("step_s", [0, -1, "soon", None, True, float("nan"), float("inf")])
def test_step_due_now_refuses_a_bad_decision_step(plan, step_s):
    with pytest.raises(PlanFileError, match="^step_s: .* is not a number of seconds > 0"):
        planfile.step_due_now(plan, step_s)


def test_check_step_names_the_allowed_range():
    two = _plan(steps=2)
    assert planfile.check_step(two, 1) == 1 and planfile.check_step(two, "0") == 0 and planfile.check_step(two, 1.0)
    with pytest.raises(PlanFileError, match=r"^step: 2 is not a step of the plan; allowed: 0 to 1 \(it has 2\)"):
        planfile.check_step(two, 2)
    with pytest.raises(PlanFileError, match=r"^step: -1 is not a step"):
        planfile.check_step(two, -1)
    with pytest.raises(PlanFileError, match=r"^step: 'last' is not the index of a step"):
        planfile.check_step(two, "last")
    with pytest.raises(PlanFileError, match=r"^step: True is not the index"):
        planfile.check_step(two, True)
    with pytest.raises(PlanFileError, match=r"^step: 0: the plan has no steps"):
        planfile.check_step(_plan(steps=0), 0)


# ---------------------------------------------------------------- gate
def test_gate_auto_applies_a_due_step_with_enough_gain(plan):
    decision = planfile.gate(plan, "auto", 0.05, 30)
    assert decision["apply"] is True and decision["step"] == 0 and decision["digest"] == planfile.digest(plan)
    assert decision["reason"] == (
        "step 0 is due now (+0 s, within the decision step of 30 s) and the predicted gain over the lookahead is"
        " +11.1 % >= 5.0 %"
    )
    assert planfile.gate(plan, "auto", "0.111", "30")["apply"] is True  # at the threshold: applied


def test_gate_auto_says_why_not():
    later = planfile.gate(_plan(offset_s=90.0), "auto", 0.05, 30)
    assert later["apply"] is False and later["step"] is None
    assert later["reason"].startswith("not due yet: the first switch is in 90 s (at 2027-01-15T08:01:30Z)")
    small = planfile.gate(_plan(gain_share=0.032), "auto", 0.05, 30)
    assert small["apply"] is False and small["reason"].startswith("gain under the threshold: +3.2 % < 5.0 %")
    negative = planfile.gate(_plan(gain_share=-0.01), "auto", -1, 30)
    assert negative["apply"] is True  # min_gain -1 accepts any gain (as the integration test runs it)
    nothing = planfile.gate(_plan(steps=0), "auto", 0.05, 30)
    assert nothing == dict(nothing, apply=False, step=None)
    assert nothing["reason"] == "nothing to apply: the plan keeps the configuration in place"


def test_gate_plan_only_never_applies(plan):
    decision = planfile.gate(plan, "plan_only", 0.05, 30)
    assert decision["apply"] is False and decision["step"] is None
    assert decision["reason"].startswith("mode plan_only: the plan (1 switch(es)) is for a person to read")


def test_gate_approve_applies_step_zero_of_an_approved_plan_only(plan):
    refused = planfile.gate(plan, "approve", 0.05, 30, CURRENT)
    assert refused["apply"] is False and refused["reason"].startswith("not applied: approval.approved is not true")
    approved = planfile.approve(_plan(offset_s=600.0, gain_share=0.0), "jane", at="2026-11-22T10:20:00Z")
    decision = planfile.gate(approved, "approve", 0.05, 30, CURRENT)
    assert decision["apply"] is True and decision["step"] == 0  # whatever its offset and gain: a person decided
    assert decision["reason"] == (
        "approved by jane at 2026-11-22T10:20:00Z: step 0 (planned for 2027-01-15T08:10:00Z, +600 s) is applied now"
    )
    other = planfile.gate(approved, "approve", 0.05, 30, {"concurrent_reads": 8}, "lab-applied.yml")
    assert other["apply"] is False and '(lab-applied.yml) is {"concurrent_reads": 8}: plan again' in other["reason"]


@pytest.mark.parametrize(
    "mode, min_gain, step_s, message",
    [
        ("sometimes", 0.05, 30, r"^mode: 'sometimes' is not allowed; choose one of plan_only, approve, auto"),
        ("auto", "much", 30, r"^min_gain: 'much' is not a number"),
        ("auto", None, 30, r"^min_gain: None is not a number"),
        ("auto", float("nan"), 30, r"^min_gain: nan is not a number"),
        ("auto", 0.05, 0, r"^step_s: 0 is not a number of seconds > 0"),
    ],
)
def test_gate_refuses_bad_input_naming_the_field(plan, mode, min_gain, step_s, message):
    with pytest.raises(PlanFileError, match=message):
        planfile.gate(plan, mode, min_gain, step_s)


def test_gate_refuses_a_malformed_plan(plan):
    with pytest.raises(PlanFileError, match=r"^predicted: is required"):
        planfile.gate({k: v for k, v in plan.items() if k != "predicted"}, "auto", 0.05, 30)


# ---------------------------------------------------------------- applied_record
def test_applied_record_takes_the_full_configuration_or_combines(plan):
    record = planfile.applied_record(plan, 0, CURRENT, plan="plans/lab-1.yml", at="2026-11-22T10:25:00Z")
    assert record == {
        "cluster": "lab",
        "plan": "plans/lab-1.yml",
        "applied": "2026-11-22T10:25:00Z",
        "configuration": {"concurrent_reads": 64, "concurrent_writes": 32},
        "previous": dict(CURRENT),
    }
    assert list(record) == ["cluster", "plan", "applied", "configuration", "previous"]
    back = planfile.applied_record(plan, 0, CURRENT, previous={"concurrent_reads": 8})
    assert back["previous"] == {"concurrent_reads": 8}  # a revert keeps the configuration it rolled back from
    two = _plan(steps=2)  # the second step has no full_configuration
    combined = planfile.applied_record(two, 1, {"concurrent_reads": 64, "heap": 1}, cluster="other")
    assert combined["cluster"] == "other" and combined["plan"] is None
    assert combined["configuration"] == {"concurrent_reads": 64, "heap": 1, "concurrent_writes": 64}
    assert planfile.applied_configuration(two, 1, None) == {"concurrent_writes": 64}
    with pytest.raises(PlanFileError, match=r"^step: 1 is not a step of the plan; allowed: 0 to 0"):
        planfile.applied_record(plan, 1, CURRENT)
    with pytest.raises(PlanFileError, match=r"^current_configuration: 'x' is not a mapping"):
        planfile.applied_record(two, 1, "x")


# ---------------------------------------------------------------- set_approval (the module plan_approval)
def test_set_approval_approves_once_then_changes_nothing(plan, tmp_path):
    path = str(tmp_path / "plan.yml")
    planfile.save_plan(path, plan)
    text = open(path).read()
    check = planfile.set_approval(path, "approved", by="jane", check_mode=True)
    assert check["changed"] and check["approval"]["approved"] and check["before"]["approved"] is False
    assert open(path).read() == text  # check mode writes nothing
    done = planfile.set_approval(path, "approved", by="jane", at="2026-11-22T10:20:00Z")
    assert done["changed"] and done["digest"] == planfile.digest(plan) and done["summary"][0].startswith("dynamic")
    written = planfile.load_plan(path)
    assert written["approval"] == {
        "approved": True,
        "by": "jane",
        "at": "2026-11-22T10:20:00Z",
        "digest": planfile.digest(plan),
    }
    assert planfile.check_approved(written, CURRENT)
    again = planfile.set_approval(path, "approved", by="jane")
    assert not again["changed"] and again["approval"]["at"] == "2026-11-22T10:20:00Z"
    other = planfile.set_approval(path, "approved", by="john", check_mode=True)
    assert other["changed"] and other["approval"]["by"] == "john"


def test_set_approval_approves_again_a_plan_changed_after_approval(plan, tmp_path):
    path = str(tmp_path / "plan.yml")
    planfile.save_plan(path, planfile.approve(plan, "jane"))
    doc = yaml.safe_load(open(path))
    doc["steps"][0]["configuration"]["concurrent_reads"] = 128
    open(path, "w").write(yaml.safe_dump(doc))
    with pytest.raises(PlanFileError, match=r"^approval\.digest: the plan changed"):
        planfile.check_approved(planfile.load_plan(path), CURRENT)
    again = planfile.set_approval(path, "approved", by="jane")
    assert again["changed"] and planfile.check_approved(planfile.load_plan(path), CURRENT)


def test_set_approval_revokes(plan, tmp_path):
    path = str(tmp_path / "plan.yml")
    planfile.save_plan(path, planfile.approve(plan, "jane"))
    revoked = planfile.set_approval(path, "revoked")
    assert revoked["changed"] and revoked["approval"] == {"approved": False, "by": None, "at": None}
    assert not planfile.set_approval(path, "revoked")["changed"]
    with pytest.raises(PlanFileError, match=r"^approval\.approved is not true"):
        planfile.check_approved(planfile.load_plan(path), CURRENT)


def test_set_approval_refuses_bad_input_and_changes_nothing(plan, tmp_path):
    path = str(tmp_path / "plan.yml")
    planfile.save_plan(path, dict(plan, steps=[]))
    text = open(path).read()
    with pytest.raises(PlanFileError, match="^steps: the plan has none"):
        planfile.set_approval(path, "approved", by="jane")
    with pytest.raises(PlanFileError, match="^by: required with state approved"):
        planfile.set_approval(path, "approved")
    with pytest.raises(PlanFileError, match="^state: 'maybe' is not allowed; choose one of approved, revoked"):
        planfile.set_approval(path, "maybe", by="jane")
    with pytest.raises(PlanFileError, match="^plan_file: cannot read"):
        planfile.set_approval(str(tmp_path / "none.yml"), "approved", by="jane")
    bad = str(tmp_path / "bad.yml")
    open(bad, "w").write(yaml.safe_dump(dict(plan, store="mysql")))
    with pytest.raises(PlanFileError, match="^store: "):
        planfile.set_approval(bad, "approved", by="jane")
    assert open(path).read() == text
    assert sorted(os.listdir(tmp_path)) == ["bad.yml", "plan.yml"]
