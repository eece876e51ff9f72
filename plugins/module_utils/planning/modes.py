# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The plan module's four modes behind one interface.

    context, options = modes.from_params(module.params, check_mode=module.check_mode)
    document = modes.make_plan_document(context, options)

- PlanContext: what every mode shares - the mode's name, the store and its version, when the plan starts, the
  seed, check mode, the decision step T_d, the configuration in place and the cluster option as given - and what
  build_context() loads for the modes that need it: the catalog and the surrogate (LoadedModel: the model, the
  hardware profile it was fitted on, its facts for the plan file) for every mode but tactic; the roll, the
  cluster's facts and the cluster model for dynamic and static (heterogeneous rolls complete-sets, its own way).
- Each mode lives in its own module - dynamic.py, static.py, heterogeneous.py, tactic.py - with a small dataclass
  of its own options and plan(context, options) -> the plan document (plan_file.build).
- MODES: name -> Mode (its plan function, its options class, what its context needs loaded).
- build_context() is the one place a context is made; from_params() reads the plan module's parameters in the
  order the module has always checked them (the mode, step, the catalog, the mode's options, then what is loaded).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ansible_collections.tactician.nosql.plugins.module_utils.core import replication
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog import Catalog
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog_files import CatalogError
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError
from ansible_collections.tactician.nosql.plugins.module_utils.models import (
    model_files,
    surrogate_design,
    surrogate_features,
)
from ansible_collections.tactician.nosql.plugins.module_utils.models import surrogate as sg
from ansible_collections.tactician.nosql.plugins.module_utils.planning import cost_benefit as planner
from ansible_collections.tactician.nosql.plugins.module_utils.planning import (
    dynamic,
    heterogeneous,
    static,
    tactic,
    tuner,
)


# ------------------------------------------------------------------------------------------------ the context
@dataclass
class LoadedModel:
    """A surrogate loaded for planning: the model, the hardware profile it was fitted on (its unknown numbers
    left out, so they take the model's defaults as when it was fitted) and its facts for the plan file."""

    model: sg.Surrogate
    hardware: dict
    facts: dict


@dataclass
class PlanContext:
    """What every mode plans with (build_context() makes one). catalog and surrogate are None in mode tactic;
    roll, cluster_facts and cluster_model are set for the modes that roll nodes (dynamic, static)."""

    mode: str
    start: float
    store: str = "cassandra"
    store_version: str | None = None
    seed: int = 0
    check_mode: bool = False
    step_s: float = 30.0
    current: dict = field(default_factory=dict)
    cluster: dict = field(default_factory=dict)
    catalog: Catalog | None = None
    surrogate: LoadedModel | None = None
    roll: planner.Roll | None = None
    cluster_facts: dict | None = None
    cluster_model: sg.ClusterModel | None = None

    def current_configuration(self):
        """The configuration in place with the surrogate's defaults for its missing tuned parameters."""
        try:
            return self.surrogate.model.space.complete(self.current, self.surrogate.hardware or None)
        except surrogate_features.SurrogateError as exc:
            raise PlanningError("current.%s" % str(exc).split(".", 1)[-1]) from None

    def default_configuration(self):
        """The surrogate's default configuration on its hardware."""
        return self.surrogate.model.space.default_config(self.surrogate.hardware or None)

    def throughput(self):
        """f_ops of the cluster (tuner.Throughput): the surrogate on its hardware, times the roll's nodes or
        through the cluster model."""
        return tuner.Throughput(
            self.surrogate.model,
            hardware=self.surrogate.hardware or None,
            nodes=self.roll.nodes,
            cluster_model=self.cluster_model,
            cluster={
                "rf": self.cluster_facts["rf"],
                "cl": self.cluster_facts["cl"],
                "complete_sets": self.cluster.get("sets"),
            },
        )

    def feasible(self):
        """The catalog's feasibility rule on the surrogate's hardware (its memory and heap, when known), with the
        settings in place that the catalog's when/needs rules read (storage_compatibility_mode for a switch to
        sstable_format bti)."""
        hardware = self.surrogate.hardware
        try:
            heap_mb = (
                surrogate_features.hardware_values(hardware, self.store).get("heap_mb")
                if hardware.get("vcpu")
                else None
            )
            memory_mb = float(hardware["ram_gb"]) * 1024.0 if hardware.get("ram_gb") else None
        except surrogate_features.SurrogateError:
            heap_mb = memory_mb = None
        rule = surrogate_design.feasible_by_catalog(
            self.catalog, memory_mb=memory_mb, heap_mb=heap_mb or None, in_place=self.current
        )
        # A configuration in place that the rule refuses would be scored as infeasible, and any switch would look
        # like a gain over it: refuse the plan and say what to give instead.
        ok, reason = rule(self.current_configuration())
        if not ok:
            raise PlanningError(
                "current: the configuration in place does not pass the catalog (%s); give the settings the nodes "
                "run in current" % reason
            )
        return rule


# ------------------------------------------------------------------------------------------------ the modes
@dataclass(frozen=True)
class Mode:
    """A plan mode: plan(context, options) -> the plan document; options: the dataclass of its options (with
    from_params(params), reading the plan module's parameters); what build_context() loads for it."""

    name: str
    plan: Callable
    options: type
    needs_model: bool = True
    needs_roll: bool = True

    def options_of(self, value):
        """value as this mode's options: its dataclass as is, a mapping of its fields, or None (the defaults)."""
        if value is None:
            return self.options()
        if isinstance(value, self.options):  # pylint: disable=isinstance-second-argument-not-valid-type  # a class
            return value
        if isinstance(value, dict):
            allowed = [f.name for f in dataclasses.fields(self.options)]
            unknown = sorted(set(value) - set(allowed))
            if unknown:
                raise PlanningError(
                    "options.%s: not an option of mode %s; allowed: %s" % (unknown[0], self.name, ", ".join(allowed))
                )
            return self.options(**value)
        raise PlanningError(
            "options: expected %s or a mapping of its fields, got %s" % (self.options.__name__, type(value).__name__)
        )


MODES = {
    mode.name: mode
    for mode in (
        Mode("dynamic", dynamic.plan, dynamic.DynamicOptions),
        Mode("static", static.plan, static.StaticOptions),
        Mode("heterogeneous", heterogeneous.plan, heterogeneous.HeterogeneousOptions, needs_roll=False),
        Mode("tactic", tactic.plan, tactic.TacticOptions, needs_model=False, needs_roll=False),
    )
}


def mode_named(name):
    """The Mode of this name; refused naming the allowed ones."""
    if not isinstance(name, str) or name not in MODES:
        raise PlanningError("mode: %r is not allowed; choose one of %s" % (name, ", ".join(MODES)))
    return MODES[name]


def make_plan_document(context, options=None):
    """The plan document of the context's mode (plan_file.build's result, validated). options: the mode's options
    (its dataclass, a mapping of its fields, or None for the defaults)."""
    mode = mode_named(context.mode)
    return mode.plan(context, mode.options_of(options))


# ------------------------------------------------------------------------------------------------ building it
def build_context(
    mode,
    catalog=None,
    model_file=None,
    *,
    store="cassandra",
    store_version=None,
    hardware_profile=None,
    cluster_model_file=None,
    cluster=None,
    current=None,
    start=None,
    seed=0,
    step_s=30.0,
    check_mode=False,
):
    """The PlanContext of a mode: for every mode but tactic the catalog (its data or a Catalog) and the surrogate
    of model_file (checked against the store, its version and the hardware profile when given); for dynamic and
    static the roll from the cluster option and the cluster model of cluster_model_file when given. start: epoch
    seconds the plan starts at (default now)."""
    mode = mode_named(mode)
    context = PlanContext(
        mode=mode.name,
        start=time.time() if start is None else float(start),
        store=store,
        store_version=store_version,
        seed=seed,
        check_mode=check_mode,
        step_s=step_s,
        current=dict(current or {}),
        cluster=dict(cluster or {}),
    )
    if not mode.needs_model:
        return context
    try:
        context.catalog = Catalog(catalog) if isinstance(catalog, dict) else catalog
    except CatalogError as exc:
        raise PlanningError("catalog: %s" % exc) from None
    data, metadata = model_files.load_model(
        model_file, kind="surrogate", store=store, store_version=store_version, hardware_profile=hardware_profile
    )
    context.surrogate = LoadedModel(
        model=sg.Surrogate.from_dict(data, catalog=context.catalog),
        hardware={k: v for k, v in (metadata.get("hardware_profile") or {}).items() if v is not None},
        facts={
            "file": str(model_file),
            "hardware_profile": (metadata.get("hardware_profile") or {}).get("name"),
            "training_data_sha256": metadata.get("training_data_sha256"),
            "training_points": metadata.get("training_points"),
            "metrics": metadata.get("metrics", {}),
        },
    )
    if mode.needs_roll:
        context.roll, context.cluster_facts = cluster_roll(context.cluster)
        if cluster_model_file:
            data, _metadata = model_files.load_model(cluster_model_file, kind="cluster_surrogate", store=store)
            context.cluster_model = sg.ClusterModel.from_dict(data)
    return context


def cluster_roll(cluster):
    """(Roll, cluster facts) from the plan module's cluster option: nodes (a count or the hosts), rf, cl, sets,
    aggressive, aggressive_batch, restart_s, live_s, name."""
    cluster = dict(cluster or {})
    nodes = cluster.get("nodes", 1)
    hosts = list(nodes) if isinstance(nodes, (list, tuple)) else None
    count = len(hosts) if hosts is not None else nodes
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise PlanningError("cluster.nodes: %r is not a number of nodes >= 1 or a list of hosts" % (nodes,))
    rf = cluster.get("rf", min(3, count))
    cl = str(cluster.get("cl", "ONE")).upper()
    try:
        rule = replication.batch_rule(
            rf,
            cl,
            hosts if hosts is not None else count,
            sets=cluster.get("sets"),
            aggressive=bool(cluster.get("aggressive", False)),
            aggressive_batch=cluster.get("aggressive_batch"),
        )
    except replication.ReplicationError as exc:
        raise PlanningError("cluster.%s" % exc) from None
    try:
        restart_s = float(cluster.get("restart_s", 60.0))
        live_s = float(cluster.get("live_s", 15.0))
    except (TypeError, ValueError):
        raise PlanningError("cluster.restart_s and cluster.live_s: give seconds as numbers") from None
    try:
        roll = planner.Roll(nodes=count, batch=rule["batch"], restart_s=restart_s, live_s=live_s)
    except planner.PlanError as exc:
        raise PlanningError("cluster.%s" % exc) from None
    facts = dict(roll.to_dict(), rf=rf, cl=rule["cl"], rule=rule["rule"], available=rule["available"])
    if hosts is not None:
        facts["hosts"] = hosts
        facts["plan"] = rule["plan"]
    if cluster.get("name"):
        facts["name"] = cluster["name"]
    return roll, facts


PARAM_DEFAULTS = {
    "mode": "dynamic",
    "model_file": None,
    "cluster_model_file": None,
    "store": "cassandra",
    "store_version": None,
    "hardware_profile": None,
    "forecast": None,
    "schedule_file": None,
    "schedule_position": 0,
    "horizon": 1800.0,
    "workload": None,
    "workload_base": None,
    "current": None,
    "fixed": None,
    "cluster": None,
    "step": 30.0,
    "quantum": 0.05,
    "solver": "exact",
    "min_gain": 0.0,
    "tail": 0.0,
    "safety": {},
    "debt": {},
    "rewrite": {},
    "since_switch": None,
    "previous": None,
    "seed": 0,
    "start": None,
    "catalog": None,
    "vms": None,
    "vm_catalog": None,
    "budget": None,
    "min_ops": 0.0,
    "vm_scaling": "vcpu",
    "sample": None,
    "advisor_state": None,
    "advisor_bootstrap": None,
    "advisor_runs": None,
    "advisor_knowledge_base": True,
    "outcome": None,
    "saturation": 90.0,
    "oscillation_window": 3600.0,
    "oscillation_penalty": 0.5,
}
"""The plan module's parameters (but plan_file) and their defaults: what from_params() reads."""


def from_params(params, check_mode=False):
    """(context, options) from the plan module's parameters (a missing one takes the module's default), checked in
    the order the module always has: the mode, step, that the catalog is there, the mode's options (dynamic reads
    schedule_file here), then what build_context() loads."""
    p = dict(PARAM_DEFAULTS, **params)
    mode = mode_named(p["mode"])
    if p["step"] <= 0:
        raise PlanningError("step: %r is not allowed; choose seconds > 0" % p["step"])
    if not p["catalog"] and mode.needs_model:
        raise PlanningError("catalog: missing; run the module through its action plugin (tactician.nosql.plan)")
    options = mode.options.from_params(p)
    context = build_context(
        mode.name,
        p["catalog"],
        p["model_file"],
        store=p["store"],
        store_version=p["store_version"],
        hardware_profile=p["hardware_profile"],
        cluster_model_file=p["cluster_model_file"],
        cluster=p["cluster"],
        current=p["current"],
        start=p["start"],
        seed=p["seed"],
        step_s=p["step"],
        check_mode=check_mode,
    )
    return context, options
