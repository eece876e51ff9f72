# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The plan file's API as playbooks reach it: the module plan_approval, the lookup plan_file, the filters
plan_gate and plan_applied."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from test_plan_file import CURRENT, _plan

from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, ".collections")


@pytest.fixture
def plan_path(tmp_path):
    path = str(tmp_path / "plan.yml")
    planfile.save_plan(path, _plan())
    return path


# ---------------------------------------------------------------- the module plan_approval
MODULE = os.path.join(ROOT, "plugins", "modules", "plan_approval.py")


def run_module(tmp_path, args):
    """Run the module as Ansible does (a JSON file of arguments) and return its JSON result."""
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    process = subprocess.run(
        [sys.executable, MODULE, str(args_file)], capture_output=True, text=True, env=env, check=False
    )
    return json.loads(process.stdout)


def test_module_check_mode_diff_then_approve_then_nothing(tmp_path, plan_path):
    text = open(plan_path).read()
    check = run_module(tmp_path, dict(path=plan_path, by="jane", _ansible_check_mode=True, _ansible_diff=True))
    assert check["changed"] is True and check["approval"]["approved"] is True
    assert check["diff"] == {"before": {"approved": False, "by": None, "at": None}, "after": check["approval"]}
    assert open(plan_path).read() == text
    done = run_module(tmp_path, dict(path=plan_path, by="jane", at="2026-11-22T10:20:00Z"))
    assert done["changed"] is True and "diff" not in done and done["summary"][0].startswith("dynamic plan")
    assert done["approval"]["digest"] == done["digest"] == planfile.digest(_plan())
    assert planfile.check_approved(planfile.load_plan(plan_path), CURRENT)
    assert run_module(tmp_path, dict(path=plan_path, by="jane"))["changed"] is False
    revoked = run_module(tmp_path, dict(path=plan_path, state="revoked", _ansible_diff=True))
    assert revoked["changed"] is True and revoked["diff"]["before"]["by"] == "jane"
    assert revoked["approval"] == {"approved": False, "by": None, "at": None}


def test_module_fails_naming_the_field_and_changes_nothing(tmp_path, plan_path):
    text = open(plan_path).read()
    missing = run_module(tmp_path, dict(path=plan_path))
    assert missing["failed"] and "by" in missing["msg"]
    bad_time = run_module(tmp_path, dict(path=plan_path, by="jane", at="soon"))
    assert bad_time["failed"] and bad_time["msg"].startswith("at: 'soon' is not a time")
    bad_state = run_module(tmp_path, dict(path=plan_path, by="jane", state="maybe"))
    assert bad_state["failed"] and "approved, revoked" in bad_state["msg"]
    absent = run_module(tmp_path, dict(path=str(tmp_path / "none.yml"), by="jane"))
    assert absent["failed"] and absent["msg"].startswith("plan_file: cannot read")
    assert open(plan_path).read() == text
