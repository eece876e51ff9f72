# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The module effect as Ansible runs it: the record, the revert plan written and approved only when asked and not
in check mode, the revert kept once in the history, the measured points for the models."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from testlib import CURRENT, ROOT, plan_body

from ansible_collections.tactician.nosql.plugins.module_utils.planning import effects
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history

MODULE = os.path.join(ROOT, "plugins", "modules", "effect.py")
COLLECTIONS = os.path.join(ROOT, ".collections")
FORWARD = {"concurrent_reads": 64, "concurrent_writes": 32}


def run_module(tmp_path, args, check_mode=False):
    """Run the module as Ansible does (a JSON file of arguments) and return its JSON result."""
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    process = subprocess.run(
        [sys.executable, MODULE, str(args_file)], capture_output=True, text=True, env=env, check=False
    )
    return json.loads(process.stdout)


def windows(*throughputs, read_ratio=0.95, start=0.0):
    return [
        {"throughput": t, "read_ratio": read_ratio, "time": start + 10.0 * (i + 1), "window_s": 10.0}
        for i, t in enumerate(throughputs)
    ]


@pytest.fixture
def plan_path(tmp_path):
    body = plan_body()
    body["steps"][0]["workload"] = {"mix": {"read": 0.95, "update": 0.05}, "records": 20000}
    doc = planfile.build(
        body,
        "cassandra",
        1_800_000_000,
        "5.0.9",
        {"name": "lab", "cl": "ONE", "nodes": 3, "rf": 3},
        {"file": "m.json"},
        CURRENT,
    )
    path = str(tmp_path / "lab-plan.yml")
    planfile.save_plan(path, doc)
    return path


def _args(tmp_path, plan_path, before, after, **extra):
    return dict(
        plan_file=plan_path,
        before=before,
        after=after,
        current=CURRENT,
        history=str(tmp_path / "history.sqlite3"),
        revert_plan_file=str(tmp_path / "lab-revert.yml"),
        **extra,
    )


def test_check_mode_then_revert_then_nothing_then_rolled(tmp_path, plan_path):
    args = _args(
        tmp_path, plan_path, windows(4000, 4100, 3950), windows(3500, 3600, 3550), revert_approved_by="autotune"
    )
    checked = run_module(tmp_path, args, check_mode=True)
    assert checked["changed"] is True and checked["effect"]["below_lower_bound"] is True
    assert checked["revert_plan"]["due"] is True and checked["revert_plan"]["approved"] is False
    assert not os.path.exists(args["revert_plan_file"]) and not os.path.exists(args["history"])

    done = run_module(tmp_path, args)
    assert done["changed"] is True and done["effect"]["verdict"] == "valid"
    assert done["effect"]["revert"]["configuration"] == {"concurrent_reads": 32}
    revert = done["revert_plan"]
    assert revert["due"] is True and revert["approved"] is True and revert["status"] == "planned" and revert["roll"]
    on_disk = planfile.load_plan(args["revert_plan_file"])
    assert revert["digest"] == planfile.digest(on_disk) and on_disk["revert_of"]["plan"] == plan_path
    assert planfile.check_approved(on_disk, FORWARD) is not None
    assert [row["key"].rsplit("/", 1)[1] for row in done["training_rows"]] == ["before", "after"]
    assert done["training_rows"][1]["row"]["config"] == FORWARD

    again = run_module(tmp_path, args)
    assert again["changed"] is False and again["revert_plan"]["digest"] == revert["digest"]

    rolled = dict(plan_file=plan_path, revert_rolled=True, history=args["history"])
    assert run_module(tmp_path, rolled, check_mode=True)["changed"] is True
    assert run_module(tmp_path, rolled)["changed"] is True
    assert run_module(tmp_path, rolled)["changed"] is False
    after = run_module(tmp_path, args)
    assert after["changed"] is False and after["revert_plan"]["due"] is False
    assert after["revert_plan"]["status"] == "rolled"
    store = history.open_history(args["history"], readonly=True)
    try:
        assert [r["status"] for r in effects.reverts(store, "lab")] == ["rolled"]
        assert [r["verdict"] for r in effects.effects(store, "lab")] == ["valid"]
    finally:
        store.close()


def test_without_approver_the_revert_plan_waits_for_a_person(tmp_path, plan_path):
    args = _args(tmp_path, plan_path, windows(4000, 4100, 3950), windows(3500, 3600, 3550))
    done = run_module(tmp_path, args)
    assert done["revert_plan"]["due"] is True and done["revert_plan"]["approved"] is False
    assert planfile.load_plan(args["revert_plan_file"])["approval"]["approved"] is False


def test_the_measurement_error_is_recorded_and_nothing_else(tmp_path, plan_path):
    args = _args(tmp_path, plan_path, windows(162.0), windows(4838.9), revert_approved_by="autotune")
    done = run_module(tmp_path, args)
    assert done["effect"]["verdict"] == "implausible" and done["effect"]["measured"]["gain"] is None
    assert done["revert_plan"] is None and done["training_rows"] == []
    assert "MEASUREMENT ERROR" in done["summary"] and not os.path.exists(args["revert_plan_file"])


def test_failures_name_the_field(tmp_path, plan_path):
    bad = run_module(tmp_path, _args(tmp_path, plan_path, [{"throughput": 1.0}], windows(1.0)))
    assert bad["failed"] and bad["msg"] == "before[0].read_ratio: missing; give the cluster sample that observe returns"
    bad = run_module(tmp_path, dict(plan_file=plan_path, before=windows(1.0)))
    assert bad["failed"] and "revert_rolled is False but all of the following are missing: after" in bad["msg"]
    bad = run_module(tmp_path, dict(plan_file=plan_path, revert_rolled=True, history=str(tmp_path / "h.sqlite3")))
    assert bad["failed"] and bad["msg"].startswith("revert_rolled: no revert of step 0 of the plan created")


def test_a_revert_plan_applied_in_mode_approve_marks_its_revert_rolled(tmp_path, plan_path):
    args = _args(tmp_path, plan_path, windows(4000, 4100, 3950), windows(3500, 3600, 3550))
    first = run_module(tmp_path, args)
    assert first["revert_plan"]["approved"] is False
    planfile.set_approval(args["revert_plan_file"], "approved", by="jane")
    revert = dict(
        plan_file=args["revert_plan_file"],
        before=windows(3500, 3600, 3550),
        after=windows(3950, 4050, 4000),
        current=FORWARD,
        history=args["history"],
        revert_plan_file=str(tmp_path / "lab-revert-of-revert.yml"),
    )
    done = run_module(tmp_path, revert)
    assert done["changed"] is True and done["effect"]["plan"]["revert_of"] == effects.state_key(first["effect"])
    assert done["effect"]["below_lower_bound"] is False and done["revert_plan"] is None
    store = history.open_history(args["history"], readonly=True)
    try:
        assert [r["status"] for r in effects.reverts(store, "lab")] == ["rolled"]
    finally:
        store.close()
    assert run_module(tmp_path, args)["revert_plan"]["due"] is False
