"""autotune.yml on MongoDB, against FerretDB 1.24 (the session's `ferretdb` fixture) under a load driver's load.

What runs here: the checks before anything is observed (a store autotune does not know, no surrogate or none at
the path given); mode plan_only under YCSB workload A - observe polls the server in two sub-windows into the
history, the forecast reads them back, the plan is written, the gate decides, the report is written, nothing is
rolled; plan_only on the forecast of a known schedule, where the planner searches the surrogate's MongoDB knobs
and writes a switch; mode approve refusing that plan, which nobody approved.

What FerretDB cannot show: it has no opcounters in serverStatus, so every sample counts 0 ops/s whatever the load
(the data size and the collections are the server's own) and the plan on the observed forecast keeps the
configuration; it refuses setParameter, so no surrogate can be trained on it and no step applied to it. The
surrogate is fitted here on made-up points (the catalog's knobs, a made-up response): it exercises the planning
path and predicts nothing about a real mongod.
"""

from __future__ import annotations

import glob
import os
import time

import pytest
import yaml
from ansible_run import ROOT, run_playbook
from background_load import background_load

pytestmark = pytest.mark.integration

AUTOTUNE = os.path.join(ROOT, "playbooks", "autotune.yml")
DATABASE = "ycsb_autotune_it"
COMMIT_MS = "storage.journal.commitIntervalMs"
PLAN_LIMIT = "internalQueryPlanEvaluationMaxResults"


def _inventory(tmp_path, ferretdb):
    """One standalone MongoDB node (FerretDB) reached from here: replication factor 1, so rolling it needs
    tactician_aggressive."""
    path = tmp_path / "inventory.yml"
    here = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    node = dict(here, tactician_node_address=ferretdb.host, tactician_node_port=ferretdb.port)
    doc = {
        "all": {
            "hosts": {"localhost": here},
            "children": {"mongodb": {"hosts": {"ferret1": node}, "vars": {"tactician_replication_factor": 1}}},
        }
    }
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _made_up_rows():
    """Dataset rows over two live knobs of the MongoDB 7.0 catalog with a made-up response: a longer journal
    commit interval serves writes faster, the plan-evaluation limit does nothing."""
    rows = []
    for index, (commit_ms, limit) in enumerate([(c, p) for c in (10, 50, 100, 200, 300, 500) for p in (50, 101, 500)]):
        for name, mix in (("b", {"read": 0.95, "update": 0.05}), ("a", {"read": 0.5, "update": 0.5})):
            writes = mix["update"]
            ops = 4000.0 * (1.0 + 0.6 * writes * commit_ms / 500.0)
            rows.append(
                {
                    "schema": "tactician.dataset_row/v1",
                    "key": "made-up/%d/%s" % (index, name),
                    "config": {COMMIT_MS: commit_ms, PLAN_LIMIT: limit},
                    "workload": {"name": name, "mix": mix, "requestdistribution": "zipfian", "records": 1000},
                    "ops_per_s": round(ops, 1),
                }
            )
    return rows


@pytest.fixture(scope="module")
def surrogate(tmp_path_factory):
    """A MongoDB surrogate fitted on made-up points (FerretDB cannot be trained on: it refuses setParameter)."""
    from ansible_collections.tactician.nosql.plugins.module_utils.models import training

    path = str(tmp_path_factory.mktemp("mongodb-model") / "mongodb-surrogate.json")
    training.fit_surrogate(
        _made_up_rows(),
        "mongodb",
        "7.0",
        {"name": "it-profile", "vcpu": 2, "ram_gb": 4},
        parameters=[COMMIT_MS, PLAN_LIMIT],
        ranges={COMMIT_MS: [10, 500], PLAN_LIMIT: [50, 500]},
        model_file=path,
    )
    return path


def _common(tmp_path, surrogate):
    return dict(
        tactician_store="mongodb",
        tactician_model_file=surrogate,
        tactician_hardware_profile="it-profile",
        tactician_history=str(tmp_path / "autotune.sqlite3"),
        tactician_plans_dir=str(tmp_path / "plans"),
        tactician_reports_dir=str(tmp_path / "reports"),
        # a standalone node: the plan's roll takes it down (as rolling_reconfigure.yml would refuse it otherwise)
        tactician_aggressive=True,
        tactician_autotune_observe_s=4,
        tactician_autotune_effect_windows=2,
        tactician_autotune_workload_base={"requestdistribution": "zipfian", "records": 1000},
    )


def test_autotune_names_the_store_and_the_missing_surrogate(tmp_path, ferretdb, surrogate):
    """Refused before anything is observed: a store autotune does not know (the field and the allowed values); no
    surrogate given, or none at the path given (none ships for MongoDB, and FerretDB cannot be trained on)."""
    inventory = _inventory(tmp_path, ferretdb)
    common = _common(tmp_path, surrogate)
    bad = run_playbook(AUTOTUNE, inventory, dict(common, tactician_store="mongo"))
    assert bad.returncode != 0
    assert (
        "tactician_store cassandra, redis or mongodb (got 'mongo')" in bad.task("Check the mode and the cluster")["msg"]
    )
    for model in ("", str(tmp_path / "absent.json")):
        refused = run_playbook(AUTOTUNE, inventory, dict(common, tactician_model_file=model))
        assert refused.returncode != 0
        message = refused.task("Check what the mode needs")["msg"]
        assert message.startswith(
            "tactician_model_file: planning needs the throughput surrogate"
            if not model
            else "tactician_model_file: no MongoDB surrogate at " + model
        ), message
        assert "none ships for MongoDB" in message and "setParameter" in message
        assert "nothing was observed or changed" in message
    assert not os.path.exists(common["tactician_history"]) and not os.path.exists(common["tactician_plans_dir"])


def test_autotune_plan_only_under_load(tmp_path, ferretdb, surrogate, load_driver_home):
    """plan_only under a YCSB workload A of the load driver: the history gets the samples, the forecast reads them,
    the plan and the decision are written, the report too, and nothing is rolled or recorded as applied."""
    from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history as history_store

    params = dict(
        store="mongodb",
        hosts=[ferretdb.address],
        driver_home=load_driver_home,
        threads=2,
        processes=1,
        target=200,
        workload="a",
        phases=["load", "run"],
        reload=True,
        database=DATABASE,
        # the run stops after max_seconds: about when autotune has observed
        max_seconds=30,
        properties={"recordcount": 500, "operationcount": 10**6},
    )
    common = _common(tmp_path, surrogate)
    with background_load(params) as done:
        result = run_playbook(AUTOTUNE, _inventory(tmp_path, ferretdb), common)
    assert not done["alive"], "the load driver's run did not end"
    assert result.returncode == 0, result.stderr[-4000:]
    assert "error" not in done, done.get("error")
    load, run = done["result"]
    assert load["failed_total"] == 0 and run["failed_total"] == 0

    observed = [res for task, _host, res in result.results if task and task.startswith("Observe the workload in this")]
    assert len(observed) == 2 and not any(res.get("skipped") for res in observed)
    for res in observed:
        sample = res["aggregate"]
        assert sample["store"] == "mongodb"
        # FerretDB has no opcounters: 0 ops/s whatever the load; the data the load wrote is the server's own.
        assert sample["throughput"] == 0.0
        assert DATABASE + ".usertable" in res["samples"][0]["extra"]["collections"]
    with history_store.open_history(common["tactician_history"]) as history:
        samples = history.samples(cluster="mongodb", node="cluster")
    assert len(samples) >= 2 and {s["store"] for s in samples} == {"mongodb"}

    forecast = result.task("Forecast the workload over the lookahead")
    assert forecast["series_points"] > 0 and forecast["forecast"]["fields"]

    # No operation counted: the plan has no workload to plan for and keeps the configuration (it would otherwise
    # read the idle series' read ratio 0 as a write-only workload).
    plan = result.task("Plan over the lookahead")
    assert plan["plan"]["store"] == "mongodb" and plan["plan"]["steps"] == []
    assert any("counts no operation at any step" in reason for reason in plan["plan"]["reasons"])
    plans = sorted(glob.glob(str(tmp_path / "plans" / "mongodb-2*.yml")))
    assert plans == [plan["plan_file"]]
    _decided_nothing_applied(result, tmp_path)
    assert os.path.exists(tmp_path / "reports" / "mongodb" / "report.html")


def _decided_nothing_applied(result, tmp_path):
    """The gate decided not to apply, with its reason; nothing rolled, nothing recorded as applied."""
    decided = result.task("Decide whether to apply (the plan's gate)")["ansible_facts"]
    assert decided["autotune_apply"] is False and decided["autotune_decision"]["reason"].startswith("mode plan_only")
    assert not [task for task, _host, _res in result.results if task and task.startswith("Roll ")]
    assert not os.path.exists(tmp_path / "plans" / "mongodb-applied.yml")
    return decided


def test_autotune_plans_mongodb_knobs_on_a_known_schedule(tmp_path, ferretdb, surrogate):
    """plan_only with the forecast of a known schedule (a write-heavy upload after a read-heavy phase): the planner
    searches the MongoDB surrogate's knobs and writes a switch for a person to approve; nothing is applied. Mode
    approve then refuses that plan, as nobody approved it, before anything is observed."""
    schedule = tmp_path / "schedule.yml"
    schedule.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "seed": 0,
                "phases": [
                    {"duration_s": 120, "mix": {"read": 0.95, "update": 0.05}},
                    {"duration_s": 1800, "mix": {"read": 0.5, "update": 0.5}},
                ],
            }
        )
    )
    inventory = _inventory(tmp_path, ferretdb)
    common = dict(
        _common(tmp_path, surrogate),
        tactician_autotune_forecast="schedule",
        tactician_autotune_schedule_file=str(schedule),
        tactician_autotune_schedule_start=time.time(),
        tactician_autotune_effect_windows=1,
        tactician_autotune_observe_s=1,
    )
    result = run_playbook(AUTOTUNE, inventory, common)
    assert result.returncode == 0, result.stderr[-4000:]
    plan = result.task("Plan over the lookahead")["plan"]
    assert plan["store"] == "mongodb" and plan["model"]["file"] == surrogate
    assert plan["steps"], plan["reasons"]
    assert set(plan["steps"][0]["configuration"]) <= {COMMIT_MS, PLAN_LIMIT}
    assert plan["steps"][0]["configuration"].get(COMMIT_MS, 100) > 100  # the made-up response rewards it
    _decided_nothing_applied(result, tmp_path)

    refused = run_playbook(
        AUTOTUNE,
        inventory,
        dict(
            common,
            tactician_autotune_mode="approve",
            tactician_plan_file=result.task("Plan over the lookahead")["plan_file"],
        ),
    )
    assert refused.returncode != 0 and "approval.approved is not true" in refused.stderr, refused.stderr[-3000:]
    assert not [task for task, _host, _res in refused.results if task and task.startswith("Observe the workload")]
