"""The history in a PostgreSQL database that several controllers share, against a real server (Debian's package,
started by postgres_server.py): TLS with the server's certificate verified and a client certificate, a password
from libpq's password file. What one controller writes, another process sees; two controllers opening a new
database at once migrate it once; what the SQLite file refuses, the database refuses alike.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from ansible_run import ROOT

from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history as history_store
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.samples import new_sample

pytestmark = pytest.mark.integration

pytest.importorskip("psycopg")


def _samples(cluster, count, start=1_700_000_000.0, read=100.0):
    return [
        new_sample("cassandra", cluster, "cluster", start + 30.0 * k, 30.0, {"read": read + k, "update": 50.0})
        for k in range(count)
    ]


SECOND_CONTROLLER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history
store = history.open_history(sys.argv[2], create=False, readonly=True)
try:
    print(json.dumps({"samples": len(store.samples(cluster=sys.argv[3])),
                      "config": store.config_at(sys.argv[3], "n1")["config"],
                      "effect": store.load_state("effect/" + sys.argv[3]),
                      "version": store.schema_version}))
finally:
    store.close()
"""


def test_two_controllers_share_one_history_over_tls(pgpass):
    url = pgpass.url()
    with history_store.open_history(url) as store:
        assert isinstance(store, history_store.PostgresHistory)
        assert store.add_samples(_samples("shared", 12)) == 12
        assert store.add_samples(_samples("shared", 12)) == 0, "the very same samples are not stored twice"
        first = store.record_config("shared", ["n1", "n2"], {"concurrent_reads": 32}, time=1_700_000_000.0)
        second = store.record_config("shared", "n1", {"concurrent_reads": 64}, time=1_700_000_200.0)
        store.save_state("effect/shared", {"verdict": "gain", "gain": 0.12})
        assert store.transitions("shared") == [
            {"time": 1_700_000_200.0, "node": "n1", "from_config_id": first, "to_config_id": second}
        ]
        assert [s["time"] for s in store.samples(cluster="shared", last=3)] == [
            1_700_000_000.0 + 30.0 * k for k in (9, 10, 11)
        ]
        assert store.states("effect/") == [("effect/shared", {"verdict": "gain", "gain": 0.12})]
    # another process, as a second controller or the next AWX job: it sees what the first wrote
    out = subprocess.run(
        [sys.executable, "-c", SECOND_CONTROLLER, os.path.join(ROOT, ".collections"), url, "shared"],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout)
    assert seen == {
        "samples": 12,
        "config": {"concurrent_reads": 64},
        "effect": {"verdict": "gain", "gain": 0.12},
        "version": history_store.SCHEMA_VERSION,
    }


def test_refusals_are_the_sqlite_files_and_name_the_field(pgpass):
    url = pgpass.url()
    with history_store.open_history(url) as store:
        store.add_samples(_samples("refusals", 1))
        with pytest.raises(history_store.HistoryError, match="^time: a different sample"):
            store.add_samples(_samples("refusals", 1, read=5.0))
        with pytest.raises(history_store.SecretError):
            store.record_config("refusals", "n1", {"admin_password": "x"})
    with history_store.open_history(url, readonly=True) as reader:
        with pytest.raises(history_store.HistoryError, match="read-only"):
            reader.save_state("k", {"a": 1})


def test_a_password_in_the_url_and_a_missing_client_certificate_are_refused(pgpass):
    with pytest.raises(history_store.HistoryError, match="^history: .*carries a password"):
        history_store.open_history(pgpass.url().replace("tactician@", "tactician:secret@"))
    with pytest.raises(history_store.HistoryError, match="^history: cannot connect to postgresql://tactician@"):
        history_store.open_history(pgpass.url(client_certificate=False))


OPEN_ONCE = r"""
import sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history
history.open_history(sys.argv[2]).close()
"""


def test_controllers_opening_a_new_database_at_once_migrate_it_once(pgpass, monkeypatch):
    import psycopg

    url = pgpass.url()
    # a fresh schema of its own: the tables of the other tests are not there yet
    admin = psycopg.connect(history_store._pg_url(url), autocommit=True)
    try:
        admin.execute("CREATE SCHEMA IF NOT EXISTS race")
    finally:
        admin.close()
    raced = url + "&options=-csearch_path%3Drace"
    procs = [
        subprocess.Popen([sys.executable, "-c", OPEN_ONCE, os.path.join(ROOT, ".collections"), raced])
        for _controller in range(4)
    ]
    assert [proc.wait(timeout=120) for proc in procs] == [0, 0, 0, 0]
    with history_store.open_history(raced, readonly=True) as store:
        rows = store._execute("SELECT version FROM schema_version").fetchall()
        assert [row[0] for row in rows] == [history_store.SCHEMA_VERSION]


SHARED_PLAYBOOK = """
- name: One controller's view of the shared history, through autotune's own variables
  hosts: localhost
  gather_facts: false
  vars_files:
    - {root}/playbooks/vars/autotune.yml
  tasks:
    - name: Keep the plan in the history the controllers share
      tactician.nosql.plan_record:
        history: "{{{{ _at_history }}}}"
        cluster: "{{{{ _at_cluster }}}}"
        plan_file: "{{{{ plan_to_keep }}}}"
      when: plan_to_keep is defined

    - name: Keep the configuration applied in the history the controllers share
      tactician.nosql.plan_record:
        history: "{{{{ _at_history }}}}"
        cluster: "{{{{ _at_cluster }}}}"
        applied: >-
          {{{{ lookup('tactician.nosql.plan_file', plan_to_keep) | tactician.nosql.plan_applied(0, {{}},
               cluster=_at_cluster, plan=plan_to_keep) }}}}
      when: plan_to_keep is defined

    - name: What this controller sees
      ansible.builtin.set_fact:
        seen:
          share: "{{{{ _at_share }}}}"
          current: "{{{{ _at_applied.configuration if _at_applied else {{}} }}}}"
          source: "{{{{ _at_current_source }}}}"
          plans: >-
            {{{{ query('tactician.nosql.history', _at_cluster, path=_at_history, kind='plans', field='plan_file') }}}}
          effects: "{{{{ query('tactician.nosql.history', _at_cluster, path=_at_history, kind='effects') | length }}}}"
"""


def test_two_controllers_in_two_directories_see_each_others_plans_effects_and_applied_configuration(pgpass, tmp_path):
    """Two controllers with their own plans directories and one PostgreSQL history: what the first plans and
    applies, the second plans from (autotune's _at_applied), without a file of the first."""
    from ansible_run import run_playbook
    from testlib import example_plan

    from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile

    url = pgpass.url()
    playbook = tmp_path / "shared.yml"
    playbook.write_text(SHARED_PLAYBOOK.format(root=ROOT))
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
        "      ansible_python_interpreter: %s\n" % sys.executable
    )
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    (first_dir / "plans").mkdir(parents=True)
    (second_dir / "plans").mkdir(parents=True)
    plan = example_plan()
    plan_path = str(first_dir / "plans" / "orders-20261205T101500.yml")
    planfile.save_plan(plan_path, plan)
    with history_store.open_history(url) as store:
        store.save_state("effect/orders/%s/0" % plan["created"], {"verdict": "valid", "cluster": "orders"})
    common = {"tactician_history": url, "tactician_cluster_name": "orders", "tactician_store": "cassandra"}

    first = run_playbook(
        str(playbook),
        str(inventory),
        dict(common, tactician_plans_dir=str(first_dir / "plans"), plan_to_keep=plan_path),
    )
    assert first.returncode == 0, first.stderr
    assert first.task("Keep the plan in the history the controllers share")["changed"]
    second = run_playbook(str(playbook), str(inventory), dict(common, tactician_plans_dir=str(second_dir / "plans")))
    assert second.returncode == 0, second.stderr
    seen = second.task("What this controller sees")["ansible_facts"]["seen"]
    expected = planfile.applied_configuration(plan, 0, {})
    assert seen["share"] is True and seen["current"] == expected
    assert seen["source"].startswith("the history postgresql://") and "password" not in seen["source"]
    assert seen["plans"] == ["orders-20261205T101500.yml"] and int(seen["effects"]) == 1
    assert not os.listdir(second_dir / "plans"), "the second controller needed no file of the first"
    again = run_playbook(
        str(playbook),
        str(inventory),
        dict(common, tactician_plans_dir=str(first_dir / "plans"), plan_to_keep=plan_path),
    )
    assert again.returncode == 0, again.stderr
    assert not again.task("Keep the plan in the history the controllers share")["changed"], "kept once"
    # A person approves the plan on the first controller: the approval reaches the shared history.
    approved = run_playbook(
        "playbooks/approve_plan.yml",
        str(inventory),
        dict(common, tactician_plan_file=plan_path, tactician_approved_by="jane.doe"),
    )
    assert approved.returncode == 0, approved.stderr
    from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_history

    with history_store.open_history(url, readonly=True) as store:
        kept = plan_history.plans(store, "orders")
    assert (
        len(kept) == 1 and kept[0]["plan"]["approval"]["approved"] and kept[0]["plan"]["approval"]["by"] == "jane.doe"
    )
