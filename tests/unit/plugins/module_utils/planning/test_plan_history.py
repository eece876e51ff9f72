# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Plans and applied configurations kept in the history (planning/plan_history.py), read back by the lookup from
another controller's working directory."""

from __future__ import annotations

import pytest
from testlib import CURRENT
from testlib import example_plan as _plan

from ansible_collections.tactician.nosql.plugins.lookup.history import history_lookup
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_history
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.history import open_history


def test_plans_and_the_applied_configuration_are_shared_through_the_history(tmp_path):
    path = str(tmp_path / "shared.sqlite3")
    plan = _plan()
    record = planfile.applied_record(plan, 0, CURRENT, cluster="lab", plan="lab-1.yml", at="2026-12-05T10:00:00Z")
    with open_history(path) as first:
        assert plan_history.record_plan(first, "lab", plan, "/a/plans/lab-1.yml")
        assert not plan_history.record_plan(first, "lab", plan, "/a/plans/lab-1.yml")
        assert plan_history.record_applied(first, "lab", record)
        assert not plan_history.record_applied(first, "lab", record)
    # a second controller, elsewhere, reads what the first kept
    with open_history(path, readonly=True) as second:
        assert plan_history.plans(second, "lab") == [{"cluster": "lab", "plan_file": "lab-1.yml", "plan": plan}]
        assert plan_history.applied(second, "lab") == record
        logged = second.config_log("lab")
        assert logged[-1]["source"] == "applied" and logged[-1]["note"] == "lab-1.yml"
        assert second.get_config(logged[-1]["config_id"]) == record["configuration"]
    assert history_lookup(["lab"], path=path, kind="plans", field="plan_file") == ["lab-1.yml"]
    assert history_lookup(["lab"], path=path, kind="applied") == [record]
    assert history_lookup(["other"], path=path, kind="applied") == []
    assert history_lookup(["lab"], path=str(tmp_path / "none.sqlite3"), kind="applied", missing="empty") == []


def test_check_mode_writes_nothing_and_bad_input_is_named(tmp_path):
    with open_history(str(tmp_path / "h.sqlite3")) as history:
        assert plan_history.record_plan(history, "lab", _plan(), check_mode=True)
        assert plan_history.plans(history, "lab") == []
        with pytest.raises(plan_history.PlanHistoryError, match=r"^plan: the document has no created time"):
            plan_history.record_plan(history, "lab", {"steps": []})
        with pytest.raises(plan_history.PlanHistoryError, match=r"^cluster: 'a/b' is not a cluster name"):
            plan_history.plans(history, "a/b")
        with pytest.raises(plan_history.PlanHistoryError, match=r"^applied: not an applied record"):
            plan_history.record_applied(history, "lab", {"configuration": {}})


def test_a_history_nothing_wrote_to_yet_reads_empty_when_asked(tmp_path):
    """The first run on a new shared database: its tables are not made yet (as a file with no tables here)."""
    from ansible.errors import AnsibleLookupError

    empty = tmp_path / "empty.sqlite3"
    empty.write_bytes(b"")
    assert history_lookup(["lab"], path=str(empty), kind="applied", missing="empty") == []
    with pytest.raises(AnsibleLookupError, match=r"holds no history yet"):
        history_lookup(["lab"], path=str(empty), kind="applied")
