# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""autotune.yml's closed loop after a roll, through ansible-playbook with no server: the task files it includes
(tasks/autotune_effect.yml, tasks/autotune_reverted.yml) run on observe results made up here. Mode auto approves
and rolls a revert when the effect is below the lower bound, once; check mode and mode approve roll nothing; a
measurement error keeps nothing; a valid effect's measured points reach the dataset once."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml
from testlib import CURRENT, ROOT, plan_body

from ansible_collections.tactician.nosql.plugins.lookup.plan_file import read_plan
from ansible_collections.tactician.nosql.plugins.module_utils.planning import effects
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history

COLLECTIONS = os.path.join(ROOT, ".collections")
FORWARD = {"concurrent_reads": 64, "concurrent_writes": 32}

_PLAYBOOK = """
- name: The effect and the revert of autotune.yml on made-up observations
  hosts: localhost
  gather_facts: false
  vars_files:
    - {root}/playbooks/vars/autotune.yml
  tasks:
    - name: Record the realized effect and decide whether to take the step back
      ansible.builtin.include_tasks: {root}/playbooks/tasks/autotune_effect.yml

    - name: Record the revert (the roll itself needs servers; here it is taken as done)
      ansible.builtin.include_tasks: {root}/playbooks/tasks/autotune_reverted.yml
      when: autotune_revert | bool

    - name: What the run decided
      ansible.builtin.copy:
        content: >-
          {{{{ {{'revert': autotune_revert,
                'plan': autotune_revert_plan | dict2items | rejectattr('key', 'equalto', 'plan') | items2dict,
                'effect': autotune_effect.effect, 'rows': autotune_effect.training_rows}} | to_json }}}}
        dest: "{{{{ out_file }}}}"
        mode: "0644"
      check_mode: false
"""


def _plan():
    body = plan_body()
    body["steps"][0]["workload"] = {"mix": {"read": 0.95, "update": 0.05}, "records": 20000, "threads": 32}
    return planfile.build(
        body, "cassandra", 1_800_000_000, "5.0.9", {"name": "lab", "cl": "ONE", "nodes": 3, "rf": 3}, {}, CURRENT
    )


def _results(*throughputs, start=0.0):
    return {
        "results": [
            {"aggregate": {"throughput": t, "read_ratio": 0.95, "time": start + 10.0 * (i + 1), "window_s": 10.0}}
            for i, t in enumerate(throughputs)
        ]
    }


def run(tmp_path, mode, before, after, plan, check=False, name="out"):
    (tmp_path / "play.yml").write_text(_PLAYBOOK.format(root=ROOT))
    extra = dict(
        tactician_autotune_mode=mode,
        tactician_cluster_name="lab",
        tactician_plans_dir=str(tmp_path / "plans"),
        tactician_history=str(tmp_path / "history.sqlite3"),
        tactician_dataset_file=str(tmp_path / "datasets" / "cassandra-surrogate.jsonl"),
        autotune_plan_doc=plan,
        autotune_decision={"step": 0},
        autotune_current=CURRENT,
        autotune_before=before,
        autotune_after=after,
        out_file=str(tmp_path / ("%s.json" % name)),
    )
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
    )
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local"]
    argv += ["-e", "ansible_python_interpreter=%s" % sys.executable, "-e", json.dumps(extra), "play.yml"]
    if check:
        argv.append("--check")
    done = subprocess.run(argv, cwd=str(tmp_path), env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return json.loads((tmp_path / ("%s.json" % name)).read_text()), done.stdout


def _rows(tmp_path):
    path = tmp_path / "datasets" / "cassandra-surrogate.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_mode_auto_reverts_once_and_keeps_the_measured_points(tmp_path):
    plan = _plan()
    before, after = _results(4000, 4100, 3950), _results(3500, 3600, 3550, start=100.0)

    checked, _log = run(tmp_path, "auto", before, after, plan, check=True)
    assert checked["effect"]["below_lower_bound"] is True and checked["revert"] is False
    assert checked["plan"]["approved"] is False and checked["plan"]["next"].startswith("check mode")
    assert not (tmp_path / "plans").exists() and not (tmp_path / "history.sqlite3").exists() and not _rows(tmp_path)

    out, log = run(tmp_path, "auto", before, after, plan)
    assert out["revert"] is True and out["plan"]["approved"] is True and out["plan"]["due"] is True
    path = out["plan"]["path"]
    stamp = plan["created"].replace("-", "").replace(":", "").rstrip("Z")
    assert path == str(tmp_path / "plans" / ("lab-revert-%s-0.yml" % stamp))
    # what rolling_reconfigure.yml's first task reads: the plan file at step 0 with the digest the effect gave
    revert = read_plan(path, step=0, digest=out["plan"]["digest"])
    assert revert["steps"][0]["configuration"] == {"concurrent_reads": 32}
    assert revert["approval"]["by"] == "tactician autotune (mode auto)"
    assert revert["revert_of"]["effect"] == effects.state_key(out["effect"])
    applied = yaml.safe_load((tmp_path / "plans" / "lab-applied.yml").read_text())
    assert applied["configuration"] == CURRENT and applied["plan"] == path
    store = history.open_history(str(tmp_path / "history.sqlite3"), readonly=True)
    try:
        assert [r["status"] for r in effects.reverts(store, "lab")] == ["rolled"]
        assert [r["below_lower_bound"] for r in effects.effects(store, "lab")] == [True]
    finally:
        store.close()
    rows = _rows(tmp_path)
    assert [row["run"]["side"] for row in rows] == ["before", "after"] and rows[1]["config"] == FORWARD
    assert "Record in the history that the revert was rolled" in log

    again, log = run(tmp_path, "auto", before, after, plan, name="again")
    assert again["revert"] is False and again["plan"]["status"] == "rolled"
    assert "rolled back already" in again["plan"]["next"] and "Record in the history that the revert" not in log
    assert len(_rows(tmp_path)) == 2


def test_mode_approve_writes_the_revert_plan_for_a_person(tmp_path):
    out, _log = run(tmp_path, "approve", _results(4000, 4100, 3950), _results(3500, 3600, 3550), _plan())
    assert out["revert"] is False and out["plan"]["approved"] is False and "waits for a person" in out["plan"]["next"]
    assert planfile.load_plan(out["plan"]["path"])["approval"]["approved"] is False
    assert not (tmp_path / "plans" / "lab-applied.yml").exists()


def test_a_measurement_error_reverts_nothing_and_keeps_no_point(tmp_path):
    out, log = run(tmp_path, "auto", _results(162.0), _results(4838.9), _plan())
    assert out["effect"]["verdict"] == "implausible" and out["revert"] is False and out["plan"] == {}
    assert out["rows"] == [] and not _rows(tmp_path) and "MEASUREMENT ERROR" in log
