# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Plan mode heterogeneous (seed 002, OptimusCloud): a VM type and a configuration per complete-set.

The cluster's complete-sets (given, or from the token ring and RF, or from the Redis shards) each take one VM type
and one configuration; the assignment with the best predicted perf/$ under a budget and a minimum throughput is
found (vm_types.best_assignment); sets whose change does not pay off keep what they have; the changed sets are
rolled at most count(sets) - CL at a time, one plan step per set.

A node's ops/s on a VM type comes from the surrogate. ``vm_scaling: model`` gives the surrogate the VM's hardware
features (meaningful when it was trained on several machine types, as OptimusCloud's was); ``vcpu`` predicts on
the machine the model was trained on and scales by the VM's vCPUs over that machine's (the assumption to use with a
model trained on one machine type). Either way a configuration whose memory does not fit a VM type's RAM is not
run on it.

plan() is what modes.MODES runs; hetero_plan() makes the plan body from a loaded surrogate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ansible_collections.tactician.nosql.plugins.module_utils.core import replication
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError
from ansible_collections.tactician.nosql.plugins.module_utils.models import surrogate_design, surrogate_features
from ansible_collections.tactician.nosql.plugins.module_utils.planning import complete_sets, tuner, vm_types
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile

VM_SCALINGS = ("vcpu", "model")


@dataclass
class HeterogeneousOptions:
    """What mode heterogeneous needs besides the context: the workload, the VM types (vm_types.check_vms), the
    budget in the catalog's price unit per hour, the least cluster ops/s, how long the assignment is kept, how a
    node's ops/s on a VM type is predicted, the least perf/$ gain a set's change needs, and parameters kept as
    they are (name to value)."""

    workload: dict | None = None
    vms: list | None = None
    budget_per_h: float | None = None
    min_ops: float = 0.0
    horizon_s: float = 3600.0
    vm_scaling: str = "vcpu"
    min_gain: float = 0.0
    fixed: dict | None = None

    @classmethod
    def from_params(cls, params):
        """The options from the plan module's parameters."""
        return cls(
            workload=params["workload"],
            vms=params["vms"],
            budget_per_h=params["budget"],
            min_ops=params["min_ops"],
            horizon_s=params["horizon"],
            vm_scaling=params["vm_scaling"],
            min_gain=params["min_gain"],
            fixed=params["fixed"],
        )


def plan(context, options):
    """The plan document of mode heterogeneous (context: a modes.PlanContext with its surrogate loaded)."""
    surrogate = context.surrogate
    if not options.workload:
        raise PlanningError("workload: mode heterogeneous needs the workload to plan for")
    vms = vm_types.check_vms(options.vms, "vms")
    sets, hosts = cluster_sets(context.cluster, context.store)
    cluster = context.cluster
    cl = str(cluster.get("cl", "ONE")).upper()
    try:
        rule = replication.batch_rule(
            len(sets),
            cl,
            hosts,
            sets=len(sets),
            nodes_per_set=max(len(s) for s in sets),
            aggressive=bool(cluster.get("aggressive", False)),
        )
    except replication.ReplicationError as exc:
        raise PlanningError("cluster.%s" % exc) from None
    current = context.current_configuration()
    # Parameters whose change rewrites the data stay as they are (as in the dynamic plan): table options, and the
    # knobs that pay only once every SSTable is rewritten (the catalog's rewrite).
    kept = {
        n: current[n]
        for n in surrogate.model.space.parameters
        if context.catalog.apply_kind(n) == "table" or context.catalog.rewrite(n)
    }
    kept.update(options.fixed or {})
    body = hetero_plan(
        surrogate.model,
        context.catalog,
        surrogate.hardware,
        options.workload,
        vms,
        cluster,
        current,
        context.default_configuration(),
        rule["batch_sets"] or 1,
        store=context.store,
        budget_per_h=options.budget_per_h,
        min_ops=options.min_ops or 0.0,
        horizon_s=options.horizon_s,
        vm_scaling=options.vm_scaling,
        min_gain=options.min_gain,
        fixed=kept or None,
        seed=context.seed,
        in_place=context.current,
    )
    facts = {
        "nodes": len(hosts),
        "hosts": hosts,
        "rf": cluster.get("rf", len(sets)),
        "cl": rule["cl"],
        "complete_sets": len(sets),
        "batch_sets": rule["batch_sets"] or 1,
        "rule": rule["rule"],
        "available": rule["available"],
    }
    if cluster.get("name"):
        facts["name"] = cluster["name"]
    return planfile.build(
        body, context.store, context.start, context.store_version, facts, surrogate.facts, current, kind="heterogeneous"
    )


def cluster_sets(cluster, store="cassandra"):
    """(sets, hosts): the complete-sets of the cluster option - C(sets) as lists of hosts, else C(tokens) with C(rf)
    (Cassandra), else C(shards) (Redis)."""
    cluster = dict(cluster or {})
    given = cluster.get("sets")
    try:
        if isinstance(given, list) and given:
            sets = []
            for index, members in enumerate(given):
                if not isinstance(members, list) or not members:
                    raise PlanningError("cluster.sets[%d]: expected a non-empty list of hosts" % index)
                sets.append([str(m) for m in members])
        elif cluster.get("tokens"):
            rf = cluster.get("rf")
            rf = int(rf) if isinstance(rf, str) and rf.isdigit() else rf
            sets = complete_sets.complete_sets(complete_sets.cassandra_replicas(cluster["tokens"], rf))
        elif cluster.get("shards"):
            shards = cluster["shards"]
            if isinstance(shards, dict):  # redis_cluster's layout: {master: [replica, ...]}
                shards = [{"master": m, "replicas": list(r or [])} for m, r in sorted(shards.items())]
            sets = complete_sets.redis_complete_sets(shards)
        else:
            raise PlanningError(
                "cluster: mode heterogeneous needs the complete-sets - sets (lists of hosts, e.g. from "
                "cassandra_ring_info), tokens with rf (%s), or shards (Redis masters and replicas)" % store
            )
    except complete_sets.HeteroError as exc:
        raise PlanningError("cluster.%s" % exc) from None
    hosts = [h for members in sets for h in members]
    if len(set(hosts)) != len(hosts):
        raise PlanningError("cluster.sets: a node is in two complete-sets; each node belongs to one")
    return sets, hosts


def _vm_index(vms, name, field):
    names = [vm["name"] for vm in vms]
    if name not in names:
        raise PlanningError("%s: %r is not in the VM catalog; choose one of %s" % (field, name, ", ".join(names)))
    return names.index(name)


def current_vms(cluster, sets, vms):
    """The VM type index in place per set (cluster.vm_type for every node, or cluster.vm_types per host)."""
    cluster = dict(cluster or {})
    per_host = cluster.get("vm_types") or {}
    default = cluster.get("vm_type")
    out = []
    for index, members in enumerate(sets):
        names = {per_host.get(h, default) for h in members}
        if None in names:
            raise PlanningError(
                "cluster.vm_type: name the VM type the nodes run on (cluster.vm_type, or cluster.vm_types per host; "
                "%s has none); one of %s" % (sorted(members)[0], ", ".join(vm["name"] for vm in vms))
            )
        if len(names) > 1:
            raise PlanningError(
                "cluster.vm_types: the nodes of complete-set %d run %s; a set shares one VM type"
                % (index, ", ".join(sorted(names)))
            )
        out.append(_vm_index(vms, names.pop(), "cluster.vm_types" if per_host else "cluster.vm_type"))
    return out


def _hardware(vm, profile):
    hardware = {"vcpu": vm["vcpu"], "ram_gb": vm["ram_gb"], "disk_ssd": vm["disk_ssd"]}
    if profile and profile.get("ram_gb") == vm["ram_gb"] and profile.get("heap_mb"):
        hardware["heap_mb"] = profile["heap_mb"]
    return hardware


def hetero_plan(
    model,
    catalog,
    profile,
    workload,
    vms,
    cluster,
    current,
    default,
    batch_sets,
    store="cassandra",
    budget_per_h=None,
    min_ops=0.0,
    horizon_s=3600.0,
    vm_scaling="vcpu",
    min_gain=0.0,
    fixed=None,
    seed=0,
    t_config_s=complete_sets.DEFAULT_T_DOWN_CONFIG_S,
    t_vm_s=complete_sets.DEFAULT_T_DOWN_VM_S,
    generations=30,
    in_place=None,
):
    """The body of a heterogeneous plan (planfile.build): VM type and configuration per complete-set. in_place:
    the settings in place as given, for the catalog's when/needs rules (surrogate_design.feasible_by_catalog)."""
    if vm_scaling not in VM_SCALINGS:
        raise PlanningError("vm_scaling: %r is not allowed; choose one of %s" % (vm_scaling, ", ".join(VM_SCALINGS)))
    if not isinstance(workload, dict):
        raise PlanningError("workload: mode heterogeneous needs the workload to plan for")
    for field, value in (("budget", budget_per_h), ("min_ops", min_ops), ("horizon", horizon_s)):
        if value is not None and (not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0):
            raise PlanningError("%s: %r is not a number >= 0" % (field, value))
    sets, hosts = cluster_sets(cluster, store)
    sizes = [len(s) for s in sets]
    in_place_vm = current_vms(cluster, sets, vms)
    if vm_scaling == "vcpu" and not (profile or {}).get("vcpu"):
        raise PlanningError("vm_scaling: vcpu needs the model's hardware profile (its vcpu); use vm_scaling model")
    base_throughput = tuner.Throughput(model, hardware=profile or None)
    configs = [dict(current)]
    keys = {tuner.config_key(current)}
    tuned_for = {}
    evaluations = 0
    # Per VM type, once: its feasibility rule (memory), its throughput function, and what a tuning is keyed by.
    machines = []
    for vm in vms:
        hardware = _hardware(vm, profile)
        values = surrogate_features.hardware_values(hardware, store)
        memory_mb = values["ram_gb"] * 1024.0
        heap_mb = values["heap_mb"] if store == "cassandra" else None
        machines.append(
            {
                "key": (memory_mb, heap_mb) if vm_scaling == "vcpu" else tuple(sorted(values.items())),
                "feasible": surrogate_design.feasible_by_catalog(
                    catalog, memory_mb=memory_mb, heap_mb=heap_mb, in_place=in_place
                ),
                "throughput": base_throughput if vm_scaling == "vcpu" else tuner.Throughput(model, hardware=hardware),
            }
        )
    for machine in machines:
        if machine["key"] in tuned_for:
            continue
        try:
            found = tuner.tune(
                machine["throughput"],
                [workload],
                feasible=machine["feasible"],
                fixed=fixed or None,
                include=[current, default],
                seed=seed,
                generations=generations,
            )
        except tuner.TuneError:
            tuned_for[machine["key"]] = None  # nothing fits this VM type's memory
            continue
        evaluations += found["evaluations"]
        tuned_for[machine["key"]] = found["config"]
        if tuner.config_key(found["config"]) not in keys:
            keys.add(tuner.config_key(found["config"]))
            configs.append(found["config"])
    # node_ops[v][c]: one node's ops/s of configuration c on VM type v (0 when c does not fit v's memory).
    node_ops = []
    base_row = base_throughput.node_matrix([workload], configs)[0] if vm_scaling == "vcpu" else None
    for vm, machine in zip(vms, machines, strict=True):
        if vm_scaling == "vcpu":
            ops = base_row * (vm["vcpu"] / float(profile["vcpu"]))
        else:
            ops = machine["throughput"].node_matrix([workload], configs)[0]
        feasible = machine["feasible"]
        node_ops.append(
            [
                float(o) if surrogate_design.check_feasible(feasible, c)[0] else 0.0
                for o, c in zip(ops, configs, strict=True)
            ]
        )
    read_ratio = surrogate_features.workload_values(workload)["read_ratio"]
    best = vm_types.best_assignment(
        node_ops, sizes, vms, read_ratio, budget_per_h=budget_per_h, min_ops=min_ops or 0.0, seed=seed
    )

    def evaluate(assignment):
        return vm_types.evaluate_assignment(assignment, node_ops, sizes, vms, read_ratio, budget_per_h, min_ops)

    in_place = [(v, 0) for v in in_place_vm]
    ops0, cost0, ok0 = evaluate(in_place)
    target = [tuple(a) for a in best["assignment"]]
    ops1, cost1, _ok1 = evaluate(target)
    value1 = ops1 / cost1
    reasons = []
    kept = []
    # Sets whose change does not pay off keep what they have: revert one at a time while perf/$ stays within
    # min_gain of the best and the constraints hold.
    for p in sorted(range(len(sets)), key=lambda i: sizes[i]):
        if target[p] == in_place[p]:
            continue
        trial = list(target)
        trial[p] = in_place[p]
        ops_t, cost_t, ok_t = evaluate(trial)
        if ok_t and cost_t > 0 and ops_t / cost_t >= value1 * (1.0 - min_gain) - 1e-9:
            target = trial
            kept.append(p)
    ops1, cost1, _ok1 = evaluate(target)
    value0 = ops0 / cost0 if cost0 > 0 else 0.0
    value1 = ops1 / cost1
    homogeneous = {}
    for v, vm in enumerate(vms):
        c = max(range(len(configs)), key=lambda i: (node_ops[v][i], -i))
        ops_h, cost_h, ok_h = evaluate([(v, c)] * len(sets))
        if ok_h:
            homogeneous[vm["name"]] = (ops_h / cost_h, ops_h, cost_h)
    best_homogeneous = max(homogeneous.items(), key=lambda item: item[1][0]) if homogeneous else None
    steps = []
    changed = [p for p in range(len(sets)) if target[p] != in_place[p]]
    pays = ok0 is False or value1 > value0 * (1.0 + min_gain)
    if changed and not pays:
        reasons.append(
            "the assignment in place gives %s ops/s per $/h, within min_gain %.3f of the best found (%s): no change"
            % (f"{value0:,.0f}", min_gain, f"{value1:,.0f}")
        )
        changed = []
        target = list(in_place)
    t = 0.0
    step_assignment = list(in_place)
    for batch_number, start in enumerate(range(0, len(changed), batch_sets)):
        batch = changed[start : start + batch_sets]
        vm_change = any(target[p][0] != in_place[p][0] for p in batch)
        length = t_vm_s if vm_change else t_config_s
        down = sum(sizes[p] for p in batch)
        ops_before, _c, _k = evaluate(step_assignment)
        for p in batch:
            step_assignment[p] = target[p]
        ops_after, cost_after, _k = evaluate(step_assignment)
        cost_ops = ops_before * down / float(sum(sizes)) * length
        gain = ops_after - ops_before
        for p in batch:
            v, c = target[p]
            setting = {k: val for k, val in configs[c].items() if configs[0].get(k) != val}
            vm_change = target[p][0] != in_place[p][0]
            steps.append(
                planfile.new_step(
                    step=len(steps),
                    offset_s=round(t, 3),
                    set=p,
                    batch=batch_number,
                    nodes=list(sets[p]),
                    configuration=setting,
                    full_configuration=configs[c],
                    restart=bool(setting) or vm_change,
                    roll_s=length,
                    workload=workload,
                    predicted={
                        "ops_per_s_before": round(ops_before, 1),
                        "ops_per_s_after": round(ops_after, 1),
                        "cost_ops": round(cost_ops / len(batch), 1),
                        "gain_ops": round(gain * max(0.0, horizon_s - t - length), 1),
                        "break_even_s": round(cost_ops / gain, 1) if gain > 0 else None,
                        "kept_s": round(max(0.0, horizon_s - t - length), 1),
                    },
                    reason="complete-set %d (%d node(s)) to %s with %s: its nodes' predicted ops/s %s -> %s; the "
                    "cluster's perf/$ goes from %s to %s ops/s per $/h"
                    % (
                        p,
                        sizes[p],
                        vms[v]["name"],
                        "the configuration in place" if not setting else "%d changed parameter(s)" % len(setting),
                        f"{node_ops[in_place[p][0]][in_place[p][1]]:,.0f}",
                        f"{node_ops[v][c]:,.0f}",
                        f"{value0:,.0f}",
                        f"{value1:,.0f}",
                    ),
                    vm_type={"from": vms[in_place[p][0]]["name"], "to": vms[v]["name"]} if vm_change else None,
                )
            )
        t += length
    for p in kept:
        reasons.append(
            "complete-set %d keeps %s and its configuration: changing it would not raise perf/$ by more than "
            "min_gain %.3f" % (p, vms[in_place[p][0]]["name"], min_gain)
        )
    if not ok0:
        reasons.append(
            "the assignment in place misses a constraint (%s ops/s, %.3f $/h; min_ops %s, budget %s)"
            % (f"{ops0:,.0f}", cost0, min_ops, budget_per_h)
        )
    if not steps and not reasons:
        reasons.append("the assignment in place is the best found")
    body = {
        "steps": steps,
        "predicted": {
            "ops": round(ops1 * horizon_s, 1),
            "ops_per_s": round(ops1, 1),
            "cost_per_h": round(cost1, 4),
            "perf_per_dollar": round(value1, 2),
            "in_place_ops_per_s": round(ops0, 1),
            "in_place_cost_per_h": round(cost0, 4),
            "in_place_perf_per_dollar": round(value0, 2),
            "gain_share": round((value1 - value0) / value0, 5) if value0 else None,
        },
        "baselines": {
            "in_place": {
                "ops_per_s": round(ops0, 1),
                "cost_per_h": round(cost0, 4),
                "perf_per_dollar": round(value0, 2),
            },
            "best_homogeneous": (
                {
                    "vm_type": best_homogeneous[0],
                    "ops_per_s": round(best_homogeneous[1][1], 1),
                    "cost_per_h": round(best_homogeneous[1][2], 4),
                    "perf_per_dollar": round(best_homogeneous[1][0], 2),
                }
                if best_homogeneous
                else None
            ),
            "heterogeneous": {
                "ops_per_s": round(best["ops_per_s"], 1),
                "cost_per_h": round(best["cost_per_h"], 4),
                "perf_per_dollar": round(best["perf_per_dollar"], 2),
            },
        },
        "sets": [
            {
                "nodes": list(sets[p]),
                "vm_type": vms[target[p][0]]["name"],
                "configuration": target[p][1],
                "node_ops_per_s": round(node_ops[target[p][0]][target[p][1]], 1),
            }
            for p in range(len(sets))
        ],
        "candidates": configs,
        "reasons": reasons,
        "timing": {"evaluations": evaluations + best["evaluated"], "assignment_search": best["method"]},
        "solver": best["method"],
        "lookahead": {"seconds": float(horizon_s), "vm_scaling": vm_scaling, "budget_per_h": budget_per_h},
        "fixed": dict(fixed or {}),
    }
    return body
