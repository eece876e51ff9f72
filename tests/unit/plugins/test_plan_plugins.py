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
from ansible.errors import AnsibleFilterError, AnsibleLookupError
from testlib import CURRENT, ROOT
from testlib import example_plan as _plan

from ansible_collections.tactician.nosql.plugins.filter.history_shared import history_shared
from ansible_collections.tactician.nosql.plugins.filter.plan_applied import plan_applied
from ansible_collections.tactician.nosql.plugins.filter.plan_gate import plan_gate
from ansible_collections.tactician.nosql.plugins.lookup.plan_file import read_plan
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile
from ansible_collections.tactician.nosql.plugins.plugin_utils.plain import plain

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
    assert done["approval"]["digest"] == done["digest"] == planfile.digest(planfile.load_plan(plan_path))
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


# ---------------------------------------------------------------- the lookup plan_file
def test_lookup_reads_a_valid_plan_and_checks_what_is_asked(plan_path):
    doc = read_plan(plan_path)
    assert doc == planfile.load_plan(plan_path)
    assert read_plan(plan_path, step=0, digest=planfile.digest(doc)) == doc
    approved = planfile.approve(doc, "jane")
    planfile.save_plan(plan_path, approved)
    assert read_plan(plan_path, approved=True, current=CURRENT) == approved


def test_lookup_fails_naming_the_file_and_the_field(tmp_path, plan_path):
    with pytest.raises(AnsibleLookupError, match=r"^plan_file: .*plan\.yml: approval\.approved is not true"):
        read_plan(plan_path, approved=True, current=CURRENT)
    with pytest.raises(AnsibleLookupError, match=r"^plan_file: .*plan\.yml: step: 3 is not a step of the plan"):
        read_plan(plan_path, step=3)
    with pytest.raises(AnsibleLookupError, match=r"plan\.yml: the plan changed since it was decided on"):
        read_plan(plan_path, digest="sha256:0")
    planfile.save_plan(plan_path, planfile.approve(_plan(), "jane"))
    with pytest.raises(AnsibleLookupError, match=r"plan\.yml: current\.configuration: the plan was made for"):
        read_plan(plan_path, approved=True, current={"concurrent_reads": 8}, current_source="lab-applied.yml")
    bad = tmp_path / "bad.yml"
    bad.write_text(open(plan_path).read().replace("offset_s: 0.0", "offset_s: soon"))
    with pytest.raises(AnsibleLookupError, match=r"^plan_file: .*bad\.yml: steps\[0\]\.offset_s: expected number"):
        read_plan(str(bad))
    with pytest.raises(AnsibleLookupError, match=r"^plan_file: .*none\.yml: no such file"):
        read_plan(str(tmp_path / "none.yml"))
    garbage = tmp_path / "garbage.yml"
    garbage.write_text("steps: [unclosed\n")
    with pytest.raises(AnsibleLookupError, match=r"^plan_file: .*garbage\.yml is not YAML"):
        read_plan(str(garbage))


# ---------------------------------------------------------------- the filters plan_gate and plan_applied
def test_filters_call_the_engine_and_fail_naming_the_field():
    doc = _plan()
    assert plan_gate(doc, "auto", 0.05, 30) == planfile.gate(doc, "auto", 0.05, 30)
    assert plan_gate(doc, "approve", current=CURRENT)["reason"].startswith("not applied: approval.approved")
    with pytest.raises(AnsibleFilterError, match=r"^plan_gate: mode: 'often' is not allowed"):
        plan_gate(doc, "often")
    record = plan_applied(doc, 0, {"concurrent_reads": 1}, plan="p.yml")
    assert record["configuration"] == {"concurrent_reads": 64, "concurrent_writes": 32} and record["plan"] == "p.yml"
    assert record["previous"] == {"concurrent_reads": 1}
    assert plan_applied(doc, 0, {"concurrent_reads": 1}, previous={"concurrent_reads": 2})["previous"] == {
        "concurrent_reads": 2
    }
    with pytest.raises(AnsibleFilterError, match=r"^plan_applied: step: 4 is not a step of the plan"):
        plan_applied(doc, 4)


@pytest.mark.parametrize(
    "history, shared",
    [
        ("postgresql://tactician@db.example:5432/tactician?sslmode=verify-full", True),
        ("postgres://tactician@db.example/tactician", True),
        ("PostgreSQL+psycopg://tactician@db.example/tactician", True),
        ("sqlite:///var/lib/tactician/history.sqlite3", False),
        ("/var/lib/tactician/history.sqlite3", False),
        ("prometheus://127.0.0.1:9090?records=/var/lib/tactician/history.sqlite3", False),
        ("", False),
        (None, False),
    ],
)
def test_history_shared_is_true_for_a_database_only(history, shared):
    assert history_shared(history) is shared


def test_plain_gives_plain_python_data():
    class Tagged(str):
        pass

    value = plain({"store": Tagged("cassandra"), 1: (1.5, None, True)})
    assert value == {"store": "cassandra", "1": [1.5, None, True]} and not isinstance(value["store"], Tagged)


_PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  vars:
    current: {concurrent_reads: 32, concurrent_writes: 32}
  tasks:
    - name: The plan through the lookup, relative to the current directory
      ansible.builtin.set_fact:
        plan: "{{ lookup('tactician.nosql.plan_file', 'plan.yml', step=0) }}"
    - name: A plan that passed through JSON, as a module's result does
      ansible.builtin.set_fact:
        plan_json: "{{ plan | to_json | from_json }}"
    - name: Decisions and the record
      ansible.builtin.set_fact:
        out:
          store: "{{ plan.store }}"
          auto: "{{ plan_json | tactician.nosql.plan_gate('auto', 0.05, 30) }}"
          high: "{{ plan | tactician.nosql.plan_gate('auto', 0.5, 30) }}"
          approve: "{{ plan | tactician.nosql.plan_gate('approve', current=current, current_source='x.yml') }}"
          record: "{{ plan_json | tactician.nosql.plan_applied(0, current, plan='plan.yml') }}"
          digest_ok: >-
            {{ lookup('tactician.nosql.plan_file', 'plan.yml',
                      digest=(plan_json | tactician.nosql.plan_gate('auto')).digest) is mapping }}
    - name: Keep them
      ansible.builtin.copy:
        content: "{{ out | to_json }}"
        dest: out.json
        mode: "0644"
    - name: An unapproved plan where an approved one is needed fails, naming the field
      ansible.builtin.set_fact:
        refused: "{{ lookup('tactician.nosql.plan_file', 'plan.yml', approved=true, current=current) }}"
"""


def test_plugins_in_a_playbook(tmp_path, plan_path):
    """Through ansible-playbook: the loader finds the plugins, templates hand them their own types."""
    (tmp_path / "play.yml").write_text(_PLAYBOOK)
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
    )
    done = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            "ansible_python_interpreter=%s" % sys.executable,
            "play.yml",
        ],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "approval.approved is not true" in done.stdout + done.stderr, done.stdout[-3000:]
    out = json.loads((tmp_path / "out.json").read_text())
    doc = planfile.load_plan(plan_path)
    assert out["store"] == "cassandra"
    assert out["auto"] == planfile.gate(doc, "auto", 0.05, 30) and out["auto"]["apply"] is True
    assert out["high"]["apply"] is False and out["high"]["reason"].startswith("gain under the threshold: +11.1 %")
    assert out["approve"]["apply"] is False and "approval.approved is not true" in out["approve"]["reason"]
    assert out["record"]["configuration"] == {"concurrent_reads": 64, "concurrent_writes": 32}
    assert out["record"]["cluster"] == "lab" and out["record"]["plan"] == "plan.yml"
    assert out["digest_ok"] is True


# ---------------------------------------------------------------- the playbooks refuse a bad plan, touching nothing
INVENTORY = os.path.join(ROOT, "tests", "integration", "inventory", "test_cluster")


def _playbook(tmp_path, playbook, extra):
    """ansible-playbook on the integration tests' inventory (no server needed: these runs stop in play 1)."""
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
    )
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY]
    argv += [os.path.join(ROOT, "playbooks", playbook), "-e", json.dumps(extra)]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout + done.stderr


def test_rolling_reconfigure_stops_on_a_malformed_plan_before_any_health_check(tmp_path, plan_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(open(plan_path).read().replace("offset_s: 0.0", "offset_s: soon"))
    rc, out = _playbook(tmp_path, "rolling_reconfigure.yml", dict(tactician_plan_file=str(bad)))
    assert rc != 0 and "bad.yml: steps[0].offset_s: expected number, got string 'soon'" in out, out[-3000:]
    assert "TASK [Check what to roll]" not in out and "Every Cassandra node" not in out
    rc, out = _playbook(tmp_path, "rolling_reconfigure.yml", dict(tactician_plan_file=plan_path, tactician_plan_step=1))
    assert rc != 0 and "step: 1 is not a step of the plan; allowed: 0 to 0" in out, out[-3000:]
    assert "Every Cassandra node" not in out


def test_autotune_approve_refuses_a_plan_before_observing(tmp_path, plan_path):
    common = dict(
        tactician_autotune_mode="approve",
        tactician_plans_dir=str(tmp_path / "plans"),
        tactician_history=str(tmp_path / "history.sqlite3"),
        tactician_plan_file=plan_path,
    )
    rc, out = _playbook(tmp_path, "autotune.yml", common)
    assert rc != 0 and "approval.approved is not true" in out, out[-3000:]
    assert "TASK [Observe the workload" not in out
    approved = planfile.approve(planfile.load_plan(plan_path), "jane")
    approved["steps"][0]["configuration"]["concurrent_reads"] = 128  # changed after the approval
    planfile.save_plan(plan_path, approved)
    rc, out = _playbook(tmp_path, "autotune.yml", common)
    assert rc != 0 and "approval.digest: the plan changed after it was approved by jane" in out, out[-3000:]
    planfile.set_approval(plan_path, "approved", by="jane")
    rc, out = _playbook(tmp_path, "autotune.yml", dict(common, tactician_current_configuration={"concurrent_reads": 8}))
    assert rc != 0 and "current.configuration: the plan was made for" in out, out[-3000:]
    assert "(tactician_current_configuration) is" in out
    assert "TASK [Observe the workload" not in out and not os.path.exists(tmp_path / "history.sqlite3")
