# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The plan modes' one interface (planning/modes.py): the context built from the plan module's parameters, the
registry of modes, the options of each, and the plan step constructor every mode uses."""

from __future__ import annotations

import os

import pytest
import yaml
from testlib import ROOT

from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog import Catalog
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError
from ansible_collections.tactician.nosql.plugins.module_utils.planning import (
    dynamic,
    heterogeneous,
    modes,
    static,
    tactic,
)
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile

MODEL = os.path.join(ROOT, "catalog", "models", "cassandra-bench.json")
CATALOG = Catalog.for_store("cassandra").to_dict()
BASE = {"requestdistribution": "zipfian", "records": 20000, "threads": 32}
READS = dict(BASE, mix={"read": 0.95, "update": 0.05})
CLUSTER = {"nodes": 3, "rf": 3, "cl": "ONE", "restart_s": 70}
FORECAST = {"fields": {"read_ratio": [0.9] * 6 + [0.1] * 14}}
VMS = [
    {"name": "small", "vcpu": 2, "ram_gb": 8, "disk_ssd": True, "price_per_h": 0.10},
    {"name": "large", "vcpu": 4, "ram_gb": 16, "disk_ssd": True, "price_per_h": 0.25},
]
RING = {"n%d" % i: [i * 100] for i in range(6)}
HOT = {"cpu": 96.0, "read_share": 0.95, "write_share": 0.05, "hit_ratio": 0.95, "p999_ms": 20.0, "sla_p999_ms": 10.0}
START = 1_800_000_000
ALLOWED = "choose one of dynamic, static, heterogeneous, tactic"

PARAMS = {
    "dynamic": {"forecast": FORECAST, "workload_base": BASE, "cluster": CLUSTER},
    "static": {"workload": READS, "cluster": CLUSTER},
    "heterogeneous": {"workload": READS, "vms": VMS, "cluster": {"tokens": RING, "rf": 3, "vm_type": "large"}},
    "tactic": {"sample": HOT},
}


def _params(mode, **extra):
    params = {"mode": mode, "start": START, "catalog": CATALOG, "model_file": MODEL}
    if mode == "tactic":
        params = {"mode": mode, "start": START}
    params.update(PARAMS[mode])
    params.update(extra)
    return params


def _decisions(doc):
    return {k: v for k, v in doc.items() if k not in ("created", "timing")}


# ------------------------------------------------------------------------------------------------ the context
def test_a_context_from_params_holds_the_catalog_the_surrogate_and_the_roll():
    context, options = modes.from_params(_params("static", current={"concurrent_reads": 16}, seed=4))
    assert isinstance(context, modes.PlanContext) and context.mode == "static"
    assert isinstance(context.catalog, Catalog) and context.catalog.store == "cassandra"
    assert context.start == START and context.seed == 4 and context.step_s == 30.0 and not context.check_mode
    assert context.current == {"concurrent_reads": 16} and context.cluster == CLUSTER
    assert (context.roll.nodes, context.roll.batch, context.roll.restart_s) == (3, 2, 70.0)
    assert context.cluster_facts["rf"] == 3 and context.cluster_facts["cl"] == "ONE"
    surrogate = context.surrogate
    assert surrogate.facts["file"] == MODEL and surrogate.facts["training_points"] == 54
    assert surrogate.hardware["vcpu"] == 2 and None not in surrogate.hardware.values()
    assert context.current_configuration()["concurrent_reads"] == 16
    assert set(context.default_configuration()) == set(surrogate.model.space.parameters)
    assert context.throughput().nodes == 3 and context.cluster_model is None
    assert options == static.StaticOptions(workload=READS)


def test_each_mode_loads_only_what_it_needs():
    tactic_context, tactic_options = modes.from_params(_params("tactic"))
    assert tactic_context.catalog is None and tactic_context.surrogate is None and tactic_context.roll is None
    assert tactic_options.sample == HOT and tactic_options.knowledge_base is True
    # Heterogeneous rolls complete-sets its own way: cluster.sets as lists of hosts would not make a node roll.
    sets = {"sets": [["a", "b"], ["c", "d"]], "vm_type": "large"}
    hetero_context, hetero_options = modes.from_params(_params("heterogeneous", cluster=sets, horizon=600))
    assert hetero_context.surrogate is not None and hetero_context.roll is None
    assert hetero_options.horizon_s == 600.0 and hetero_options.vms == VMS


def test_the_context_refuses_what_the_plan_module_refused_with_the_same_messages(tmp_path):
    with pytest.raises(PlanningError, match=r"^step: 0\.0 is not allowed; choose seconds > 0$"):
        modes.from_params({"step": 0.0})  # before the catalog, as the module checks them
    with pytest.raises(PlanningError, match=r"^catalog: missing; run the module through its action plugin"):
        modes.from_params({"model_file": MODEL})  # before the forecast
    with pytest.raises(PlanningError, match=r"^forecast: mode dynamic needs forecast \(from predict mode forecast\)"):
        modes.from_params({"catalog": CATALOG, "model_file": str(tmp_path / "none.json")})  # before the model
    with pytest.raises(PlanningError, match=r"^catalog: "):
        modes.from_params(_params("dynamic", catalog={"store": "cassandra"}))
    with pytest.raises(PlanningError, match=r"^cluster.nodes: 0 is not a number of nodes >= 1 or a list of hosts$"):
        modes.from_params(_params("static", cluster={"nodes": 0}))
    with pytest.raises(PlanningError, match=r"^cluster.restart_s and cluster.live_s: give seconds as numbers$"):
        modes.cluster_roll({"nodes": 3, "restart_s": "soon"})
    context, _options = modes.from_params(_params("static", current={"concurrent_reads": "many"}))
    with pytest.raises(PlanningError, match=r"^current.concurrent_reads: 'many' is not an int$"):
        context.current_configuration()


def test_a_schedule_file_is_the_forecast_of_mode_dynamic(tmp_path):
    path = tmp_path / "schedule.yml"
    phases = [{"duration_s": 300, "mix": {"read": 0.95, "update": 0.05}}, {"duration_s": 600, "mix": {"read": 1.0}}]
    path.write_text(yaml.safe_dump({"version": 1, "seed": 0, "phases": phases}))
    params = dict(_params("dynamic", schedule_file=str(path), horizon=600, step=60.0), forecast=None)
    _context, options = modes.from_params(params)
    assert isinstance(options, dynamic.DynamicOptions) and options.forecast["method"] == "schedule"
    assert len(options.forecast["forecast"]["fields"]["read_ratio"]) == 10


def test_the_defaults_of_from_params_are_the_plan_modules():
    from ansible_collections.tactician.nosql.plugins.modules import plan

    documented = yaml.safe_load(plan.DOCUMENTATION)["options"]
    assert set(modes.PARAM_DEFAULTS) == set(documented) - {"plan_file"}
    for name, spec in documented.items():
        if name != "plan_file":
            assert modes.PARAM_DEFAULTS[name] == spec.get("default"), name
    assert documented["mode"]["choices"] == list(modes.MODES)


# ------------------------------------------------------------------------------------------------ the modes
def test_the_registry_names_each_mode_with_its_options():
    assert list(modes.MODES) == ["dynamic", "static", "heterogeneous", "tactic"]
    assert modes.MODES["dynamic"].options is dynamic.DynamicOptions
    assert modes.MODES["static"].plan is static.plan
    assert modes.MODES["heterogeneous"].options is heterogeneous.HeterogeneousOptions
    assert not modes.MODES["tactic"].needs_model and modes.MODES["tactic"].plan is tactic.plan


@pytest.mark.parametrize("mode", list(modes.MODES))
def test_each_mode_plans_through_the_registry(mode):
    context, options = modes.from_params(_params(mode), check_mode=True)
    assert isinstance(options, modes.MODES[mode].options)
    doc = modes.make_plan_document(context, options)
    assert doc["kind"] == mode and doc["store"] == "cassandra" and doc["lookahead"]["start"] == "2027-01-15T08:00:00Z"
    assert planfile.validate(doc) is doc
    assert planfile.summary(doc)
    # The same inputs, the same plan: the seed makes every search repeatable.
    again = modes.make_plan_document(*modes.from_params(_params(mode), check_mode=True))
    assert _decisions(again) == _decisions(doc)


def test_a_context_built_by_hand_plans_as_the_one_from_params():
    context, options = modes.from_params(_params("static"))
    by_hand = modes.build_context("static", Catalog(CATALOG), MODEL, cluster=CLUSTER, start=START, check_mode=False)
    doc = modes.make_plan_document(by_hand, {"workload": READS})
    assert _decisions(doc) == _decisions(modes.make_plan_document(context, options))


@pytest.mark.parametrize(
    "call",
    [
        lambda: modes.build_context("magic"),
        lambda: modes.from_params({"mode": "magic"}),
        lambda: modes.make_plan_document(modes.PlanContext(mode="magic", start=0.0)),
        lambda: modes.mode_named(["dynamic"]),
    ],
)
def test_a_bad_mode_is_refused_naming_the_allowed_ones(call):
    with pytest.raises(PlanningError, match=r"^mode: .* is not allowed; %s$" % ALLOWED):
        call()


def test_options_are_the_modes_dataclass_a_mapping_of_its_fields_or_its_defaults():
    mode = modes.MODES["heterogeneous"]
    assert mode.options_of(None) == heterogeneous.HeterogeneousOptions()
    assert mode.options_of({"budget_per_h": 2.0}).budget_per_h == 2.0
    given = heterogeneous.HeterogeneousOptions(min_ops=10.0)
    assert mode.options_of(given) is given
    with pytest.raises(PlanningError, match=r"^options.budget: not an option of mode heterogeneous; allowed: "):
        mode.options_of({"budget": 2.0})
    with pytest.raises(PlanningError, match=r"^options: expected HeterogeneousOptions or a mapping"):
        mode.options_of(static.StaticOptions())


def test_each_mode_names_what_it_misses():
    context = modes.build_context("tactic", start=0)
    with pytest.raises(PlanningError, match=r"^sample: mode tactic needs the monitoring sample"):
        modes.make_plan_document(context)
    context, _options = modes.from_params(_params("static"))
    with pytest.raises(PlanningError, match=r"^workload: mode static needs the workload to tune for$"):
        modes.make_plan_document(context, {"workload": None})
    with pytest.raises(PlanningError, match=r"^forecast: mode dynamic needs a forecast \(predict mode forecast\)"):
        modes.make_plan_document(modes.build_context("dynamic", CATALOG, MODEL, cluster=CLUSTER))
    context = modes.build_context("heterogeneous", CATALOG, MODEL, cluster=PARAMS["heterogeneous"]["cluster"])
    with pytest.raises(PlanningError, match=r"^workload: mode heterogeneous needs the workload to plan for$"):
        modes.make_plan_document(context, {"vms": VMS})
    with pytest.raises(PlanningError, match=r"^vms: expected a non-empty list of VM types"):
        modes.make_plan_document(context, {"workload": READS})


# ------------------------------------------------------------------------------------------------ plan steps
def test_new_step_puts_the_keys_in_one_order_and_leaves_out_none():
    step = planfile.new_step(reason="r", configuration={}, offset_s=0.0, step=0, tactic="add_node", vm_type=None)
    assert list(step) == ["step", "offset_s", "configuration", "tactic", "reason"]
    full = planfile.new_step(
        step=1,
        offset_s=30.0,
        from_candidate=0,
        candidate=2,
        set=0,
        batch=0,
        nodes=["a"],
        configuration={"concurrent_reads": 16},
        full_configuration={"concurrent_reads": 16},
        restart=False,
        roll_s=0.0,
        workload={"mix": {"read": 1.0}},
        tactic="none",
        tactic_probability=0.5,
        triggers=["cpu"],
        predicted={"ops_per_s_before": 1.0, "ops_per_s_after": 2.0, "cost_ops": 0.0, "break_even_s": None},
        gain_curve=[[0.0, 0.0]],
        reason="why",
        vm_type={"from": "small", "to": "large"},
    )
    assert set(full) | {"at"} == set(planfile.STEP_SCHEMA["properties"])
    assert full["restart"] is False and full["from_candidate"] == 0  # falsy values are kept, only None is left out
    doc = planfile.build({"steps": [full], "predicted": {"ops": 1.0}, "baselines": {}}, "cassandra", START)
    assert doc["steps"][0]["at"] == "2027-01-15T08:00:30Z" and "from_candidate" not in doc["steps"][0]


def test_a_configuration_in_place_the_catalog_refuses_is_named_not_planned_from():
    # A node on BTI files gives its storage compatibility mode too: without it the default (CASSANDRA_4) would make
    # the configuration in place infeasible, and any switch would look like a gain over it.
    context, options = modes.from_params(_params("static", current={"sstable_format": "bti"}))
    with pytest.raises(
        PlanningError,
        match=r"^current: the configuration in place does not pass the catalog \(.*"
        r"sstable_format: bti needs storage_compatibility_mode UPGRADING or NONE",
    ):
        modes.make_plan_document(context, options)
    context, options = modes.from_params(
        _params("static", current={"sstable_format": "bti", "storage_compatibility_mode": "NONE"})
    )
    assert modes.make_plan_document(context, options)["kind"] == "static"
