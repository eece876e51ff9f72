#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: plan
short_description: Plan whether, when and to what a cluster's configuration should switch, and write the plan file
description:
  - O(mode=dynamic) takes the workload forecast over the lookahead (O(forecast) from M(tactician.nosql.predict)
    mode forecast, or a known schedule in O(schedule_file)), the throughput surrogate, the cluster's roll (nodes,
    R = RF - CL nodes at a time, T_r seconds per batch) and finds the switches that maximize the ops served over the
    lookahead, benefit minus the throughput lost while nodes restart (IRIS, seed 001 Eq. 7-9). Each switch comes
    with the predicted ops/s before and after, its cost, its break-even time and the reason; each change of the
    optimum the plan does not follow says why; the default, static-optimized, naive and theoretical-best baselines
    are computed on the same forecast.
  - O(mode=static) finds the best configuration for one O(workload) (surrogate + genetic algorithm over the
    parameter catalog, honouring types, ranges and the node's memory budget) and plans one switch to it when it is
    predicted better than the configuration in place.
  - O(mode=heterogeneous) (OptimusCloud, seed 002) gives each complete-set of the cluster (O(cluster) C(sets), or
    C(tokens) with C(rf) from M(tactician.nosql.cassandra_ring_info), or Redis C(shards)) one VM type of O(vms) and
    one configuration, maximizing predicted ops/s per $/h under O(budget) and O(min_ops); sets whose change does
    not pay off keep what they have; the changed sets roll at most count(sets) - CL at a time, one plan step per
    set (its nodes, VM type change and settings). A VM type change is made with the cloud's own tooling;
    C(rolling_reconfigure.yml) applies the settings.
  - O(mode=tactic) (PaSTA, seed 000) asks the tactic advisor (an adaptive Hoeffding tree) which tactic the
    monitoring O(sample) calls for - add or drop an index, add a shard, node or replica, resize caches, change
    compaction, or none - only when an SLA is breached or a resource saturated, with a cost against undoing a recent
    tactic. O(advisor_state) keeps what it learned (bootstrapped from the knowledge base when empty); O(outcome)
    teaches it the observed effect of the last tactic first. The tactic roles apply a tactic plan's step.
  - The plan file (YAML, schema C(tactician.plan/v1)) is what C(playbooks/rolling_reconfigure.yml) applies with
    C(tactician_plan_file); a person can read and approve it. Check mode computes and shows the plan and writes
    nothing; O(plan_file) is left unchanged when the new plan decides the same as the one in it.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  mode:
    description: Dynamic plan over a forecast, the static optimum of one workload, VM types and configurations per
      complete-set, or the tactic a monitoring sample calls for.
    type: str
    choices: [dynamic, static, heterogeneous, tactic]
    default: dynamic
  model_file:
    description: Throughput surrogate (M(tactician.nosql.model) kind surrogate); required but in O(mode=tactic).
    type: path
  cluster_model_file:
    description: Cluster model; without it the cluster's ops/s is the node count times one node's.
    type: path
  store:
    description: Store of the cluster.
    type: str
    choices: [cassandra, redis, mongodb]
    default: cassandra
  store_version:
    description: Version the model must be for (and the catalog's version).
    type: str
  hardware_profile:
    description: When set, the model must have been built on the hardware profile of this name.
    type: str
  forecast:
    description:
      - The workload over the lookahead, as M(tactician.nosql.predict) mode forecast returns it (the registered
        result or its C(forecast) key) - C(fields) with C(read_ratio) or the share of each operation, and
        optionally C(throughput), the offered load per step.
    type: dict
  schedule_file:
    description: A schedule or job queue whose steps are the forecast (a perfect forecast), instead of O(forecast).
    type: path
  schedule_position:
    description: Step of O(schedule_file) the lookahead starts at.
    type: int
    default: 0
  horizon:
    description:
      - Seconds of O(schedule_file) to plan over; in O(mode=heterogeneous), how long the assignment is kept; in
        O(mode=static), how long the configuration is kept - a switch that restarts nodes or rewrites the data
        (O(rewrite)) is planned only when the ops its roll and rewrite lose are won back within it.
    type: float
    default: 1800
  workload:
    description: The workload of O(mode=static) and O(mode=heterogeneous) (mix, requestdistribution, records,
      record_bytes, threads); in O(mode=static) it may carry an observed sample's C(data_bytes) (the data the
      cluster holds), which prices a switch that rewrites the data.
    type: dict
  workload_base:
    description: Workload keys the forecast does not give (requestdistribution, records, record_bytes, threads).
    type: dict
  current:
    description: The configuration in place (catalog names to values); missing tuned parameters are at default.
    type: dict
  fixed:
    description: Parameters kept out of the search in O(mode=static) (name to value).
    type: dict
  cluster:
    description:
      - The cluster - C(nodes) (a count or the list of hosts), C(rf), C(cl), C(restart_s) (T_r, seconds a batch
        is offline, as C(rolling_reconfigure.yml) reports it), C(live_s) (a change of live parameters only),
        C(sets) (complete-sets - their count, or in O(mode=heterogeneous) the lists of their hosts), C(tokens)
        (node to tokens, with C(rf)), C(shards) (Redis - a list of C(master) and C(replicas), or the C(layout)
        that M(tactician.nosql.redis_cluster) returns), C(vm_type) or C(vm_types) (host to VM type, for
        O(mode=heterogeneous)), C(aggressive), C(name).
    type: dict
  step:
    description: Decision step T_d in seconds.
    type: float
    default: 30
  quantum:
    description: Read ratios and shares are rounded to this grid, so near-equal steps share one static optimum.
    type: float
    default: 0.05
  solver:
    description: C(exact) (dynamic programming over the candidate configurations) or C(ga) (the paper's genetic search).
    type: str
    choices: [exact, ga]
    default: exact
  min_gain:
    description:
      - Least predicted gain a plan with switches needs - a share of the ops over the lookahead, or in
        O(mode=heterogeneous) of the perf/$ (a set's change that gains less is not made).
    type: float
    default: 0.0
  tail:
    description:
      - Seconds after the lookahead during which each configuration is valued as if the last forecast step's
        workload went on; 0 counts nothing after the lookahead (a switch must pay off inside it).
    type: float
    default: 0
  safety:
    description:
      - The guard in front of the first switch of O(mode=dynamic) (docs/plan.md, "Safe switching"). A switch
        starts only when its gain stays positive under what the forecast has been worth (the error paths
        M(tactician.nosql.predict) mode forecast returns with the forecast); a forecast no better than "the
        workload stays as it is" never triggers one; a minimum dwell and hysteresis stop back-and-forth.
      - Keys (all optional) C(enabled) (default true), C(confidence) (0.9), C(margin) (0.005), C(back_margin) (0.02),
        C(min_dwell_s) (600), C(min_paths) (8), C(max_paths) (60), C(min_independent) (3), C(skill_margin) (0.05),
        C(model_error) (the throughput model's relative error a candidate must beat; default the surrogate's
        held-out mean absolute percentage error when its model file records one, else 0), C(analog_radius) (0.15),
        C(horizon) (C(commitment), a switch valued over its roll and the minimum dwell as well as over the lookahead,
        the better bound counting; C(lookahead), over the lookahead only), C(cold_regimes) (false; true lets a cold
        start switch for its commitment when the switch gains in the worst of the history's regimes that lasted
        longer than now's, with enough of them for that worst to be a bound at C(confidence), docs/plan.md rule 2).
    type: dict
    default: {}
  debt:
    description:
      - The compaction debt a throttle leaves behind, priced in O(mode=dynamic) (docs/plan.md, "Compaction debt").
        Where writes outpace the compaction throughput, pending bytes grow; the reads after them, and every
        operation while the debt is paid off, lose throughput; a debt left at the end of the lookahead is charged
        as what paying it off will cost. So throttling compaction in an upload is priced with the read phase that
        follows. Only when the tuned parameters include C(parameter).
      - Keys (all optional) C(enabled) (default true), C(parameter) (compaction_throughput, MiB/s, 0 unthrottled),
        C(bytes_per_write) (4096, bytes a node compacts per client write), C(capacity_mib_s) (16, what a node
        compacts unthrottled), C(pay_penalty) (0.45, the share of throughput lost while paying off),
        C(penalty_per_gib) (0.05, the share lost per GiB a node and read share), C(max_penalty) (0.6),
        C(pending_bytes) (0, the debt a node carries now).
    type: dict
    default: {}
  rewrite:
    description:
      - The price of a switch that rewrites the data (docs/plan.md, "A switch that rewrites the data"). A knob the
        catalog marks C(rewrite) (sstable_format, compression.chunk_length_in_kb) pays only once every SSTable is
        rewritten. O(mode=static) gives the switch's rewrite time, the ops it loses (while its restart roll takes
        nodes down and while the nodes rewrite) and its break-even, and plans it only when it pays back within
        O(horizon) (else it keeps those knobs and says why); O(mode=dynamic) keeps
        them as they are and gives their price in its reasons.
      - Keys (all optional) C(enabled) (default true; false plans such a switch unpriced in O(mode=static)),
        C(data_bytes) (bytes a node holds; default the O(workload)'s C(data_bytes) over the nodes, else its records
        times record_bytes times the replicas a node holds), C(rate_mib_s) (9.25, what a node rewrites per second
        while it serves; the compaction throughput in place caps it), C(loss) (0.31, the share of a node's
        throughput lost while it rewrites), C(order) (C(node_by_node) or C(all_at_once)), C(throttle)
        (compaction_throughput, the parameter that caps the rate).
    type: dict
    default: {}
  since_switch:
    description: Seconds since the last switch on this cluster ended (the dwell); omit when none is known.
    type: float
  previous:
    description:
      - The configuration the last switch on this cluster left (C(previous) in C(<plans>/<cluster>-applied.yml)), in
        O(mode=dynamic) a candidate of its own. Going back to it needs the guard's C(back_margin) (hysteresis), and
        with nothing known of the forecast's errors it is the fallback the guard may return to when the workload
        turned against the switch (docs/plan.md, "Safe switching"). Omit when none is known.
    type: dict
  seed:
    description: Seed of the searches (same inputs, same plan).
    type: int
    default: 0
  start:
    description: Epoch seconds the lookahead starts at; default now.
    type: float
  vms:
    description:
      - VM types for O(mode=heterogeneous) (name, vcpu, ram_gb, disk_ssd, price_per_h); filled in by the action
        plugin from O(vm_catalog) when not given.
    type: list
    elements: dict
  vm_catalog:
    description: VM catalog file (YAML, key C(vms)); default the collection's sample C(catalog/vms/aws-us-east-1.yml).
    type: path
  budget:
    description: Most the cluster may cost, in the VM catalog's price unit per hour (O(mode=heterogeneous)).
    type: float
  min_ops:
    description: Least predicted cluster ops/s an assignment must reach (O(mode=heterogeneous)).
    type: float
    default: 0
  vm_scaling:
    description:
      - How a node's ops/s on a VM type is predicted. C(vcpu) predicts on the machine the surrogate was trained on
        and scales by vCPUs (for a model trained on one machine type); C(model) gives the surrogate the VM's
        hardware features (for a model trained on several).
    type: str
    choices: [vcpu, model]
    default: vcpu
  sample:
    description:
      - Monitoring features for O(mode=tactic) (cpu, memory, disk, network in percent; read_share, write_share,
        scan_share; throughput; p999_ms with sla_p999_ms and sla_min_throughput; hit_ratio;
        unindexed_query_share; indexes; index_write_share; nodes; replicas; data_gb; change_in_progress;
        since_change_s). Unknown keys are refused by name.
    type: dict
  advisor_state:
    description: JSON-lines file of what the tactic advisor learned (replayed on load, appended to; not in check mode).
    type: path
  advisor_bootstrap:
    description:
      - JSON-lines file (on the controller) of labelled tactic runs (features, tactic) that an empty advisor learns
        after the knowledge base, weighted as measured examples - the runs C(benchmarks/tactic_bootstrap.py)
        measures on a lab node, or another cluster's O(advisor_state). The name of a sample of the collection
        works too - C(cassandra-bench), measured on the bench Cassandra node (C(catalog/advisor/cassandra-bench.jsonl)).
        Used only while O(advisor_state) is empty or absent.
    type: path
  advisor_runs:
    description: The labelled runs of O(advisor_bootstrap); filled in by the action plugin.
    type: list
    elements: dict
  advisor_knowledge_base:
    description:
      - Whether an empty advisor learns the knowledge base (PaSTA's findings as rules) before O(advisor_bootstrap).
    type: bool
    default: true
  outcome:
    description:
      - The observed effect of the tactic last applied, learned before deciding - C(sample) (the features it was
        chosen for), C(tactic), C(improved) (true when the KPI that triggered it recovered), C(at) (epoch seconds it
        was applied; given, the same outcome passed again is not learned twice).
    type: dict
  saturation:
    description: Percent of CPU, memory, disk or network at which O(mode=tactic) is triggered.
    type: float
    default: 90
  oscillation_window:
    description: Seconds during which undoing a tactic (dropping an index just added) carries O(oscillation_penalty).
    type: float
    default: 3600
  oscillation_penalty:
    description: Taken off the probability of a tactic that undoes a recent one (1 forbids it inside the window).
    type: float
    default: 0.5
  plan_file:
    description: Where to write the plan (YAML); not written in check mode.
    type: path
  catalog:
    description: The store's catalog as data; filled in by the action plugin from the collection's catalog files.
    type: dict
attributes:
  check_mode:
    description: Computes and returns the plan; writes no file.
    support: full
  diff_mode:
    description: Shows the plan's summary before and after.
    support: full
"""

EXAMPLES = r"""
- name: Forecast the next 30 minutes
  tactician.nosql.predict:
    mode: forecast
    history: "{{ tactician_lab_dir }}/history.sqlite3"
    store: cassandra
    cluster: tactician-lab
    horizon: 1800
  register: ahead

- name: Plan the switches that pay off over it (3 nodes, RF 3, CL ONE, 70 s per batch)
  tactician.nosql.plan:
    model_file: .lab/bench/models/cassandra-surrogate.json
    forecast: "{{ ahead }}"
    workload_base: {requestdistribution: zipfian, records: 20000, threads: 32}
    current: "{{ observed_settings }}"
    cluster: {nodes: "{{ groups['cassandra'] }}", rf: 3, cl: ONE, restart_s: 70}
    plan_file: plans/next.yml
  register: next_plan

- name: The best configuration for YCSB A on this hardware
  tactician.nosql.plan:
    mode: static
    model_file: .lab/bench/models/cassandra-surrogate.json
    workload: {mix: {read: 0.5, update: 0.5}, requestdistribution: zipfian, records: 20000, threads: 32}
    fixed: {compaction: SizeTieredCompactionStrategy}
    plan_file: plans/static-a.yml

- name: VM types and configurations per complete-set, at most 3 $/h and 40,000 ops/s at least
  tactician.nosql.plan:
    mode: heterogeneous
    model_file: .lab/bench/models/cassandra-surrogate.json
    workload: {mix: {read: 0.95, update: 0.05}, requestdistribution: zipfian, records: 20000, threads: 32}
    cluster:
      nodes: "{{ ring.nodes }}"
      rf: "{{ ring.rf }}"
      cl: ONE
      sets: "{{ ring.complete_sets }}"
      vm_type: m5.xlarge
    budget: 3.0
    min_ops: 40000
    plan_file: plans/hetero.yml

- name: Which tactic the last monitoring window calls for
  tactician.nosql.plan:
    mode: tactic
    sample: {cpu: 96, read_share: 0.9, write_share: 0.1, hit_ratio: 0.95, p999_ms: 22, sla_p999_ms: 10}
    advisor_state: "{{ tactician_lab_dir }}/advisor.jsonl"
    plan_file: plans/tactic.yml
"""

RETURN = r"""
plan:
  description: The plan document (the plan file's content).
  returned: always
  type: dict
summary:
  description: Lines a person reads before approving - the switches with their reasons, the skipped changes, totals.
  returned: always
  type: list
  elements: str
plan_file:
  description: The file written (or that would be written in check mode).
  returned: when plan_file is given
  type: str
elapsed_s:
  description: Seconds the planning took.
  returned: always
  type: float
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core import errors
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError, TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail
from ansible_collections.tactician.nosql.plugins.module_utils.planning import modes
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile

_VOLATILE = ("created", "timing")


def _decisions(doc):
    """What a plan decides, without its creation time and timings (equal decisions leave the file alone)."""
    if not isinstance(doc, dict):
        return None
    out = {k: v for k, v in doc.items() if k not in _VOLATILE}
    look = dict(out.get("lookahead") or {})
    look.pop("start", None)
    out["lookahead"] = look
    out["steps"] = [{k: v for k, v in step.items() if k != "at"} for step in out.get("steps", [])]
    out["skipped"] = [{k: v for k, v in item.items() if k != "at"} for item in out.get("skipped", [])]
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", choices=list(modes.MODES), default="dynamic"),
            model_file=dict(type="path"),
            cluster_model_file=dict(type="path"),
            store=dict(type="str", choices=["cassandra", "redis", "mongodb"], default="cassandra"),
            store_version=dict(type="str"),
            hardware_profile=dict(type="str"),
            forecast=dict(type="dict"),
            schedule_file=dict(type="path"),
            schedule_position=dict(type="int", default=0),
            horizon=dict(type="float", default=1800),
            workload=dict(type="dict"),
            workload_base=dict(type="dict"),
            current=dict(type="dict"),
            fixed=dict(type="dict"),
            cluster=dict(type="dict"),
            step=dict(type="float", default=30),
            quantum=dict(type="float", default=0.05),
            solver=dict(type="str", choices=["exact", "ga"], default="exact"),
            min_gain=dict(type="float", default=0.0),
            tail=dict(type="float", default=0.0),
            safety=dict(type="dict", default={}),
            debt=dict(type="dict", default={}),
            rewrite=dict(type="dict", default={}),
            since_switch=dict(type="float"),
            previous=dict(type="dict"),
            seed=dict(type="int", default=0),
            start=dict(type="float"),
            plan_file=dict(type="path"),
            catalog=dict(type="dict"),
            vms=dict(type="list", elements="dict"),
            vm_catalog=dict(type="path"),
            budget=dict(type="float"),
            min_ops=dict(type="float", default=0.0),
            vm_scaling=dict(type="str", choices=["vcpu", "model"], default="vcpu"),
            sample=dict(type="dict"),
            advisor_state=dict(type="path"),
            advisor_bootstrap=dict(type="path"),
            advisor_runs=dict(type="list", elements="dict"),
            advisor_knowledge_base=dict(type="bool", default=True),
            outcome=dict(type="dict"),
            saturation=dict(type="float", default=90.0),
            oscillation_window=dict(type="float", default=3600.0),
            oscillation_penalty=dict(type="float", default=0.5),
        ),
        mutually_exclusive=[["forecast", "schedule_file"]],
        required_if=[
            ["mode", "static", ["workload", "model_file"]],
            ["mode", "dynamic", ["model_file"]],
            ["mode", "heterogeneous", ["workload", "model_file", "cluster"]],
            ["mode", "tactic", ["sample"]],
        ],
        supports_check_mode=True,
    )
    p = module.params
    started = time.monotonic()
    try:
        # A value the engine converts without checking it first (a number given as text) raises a plain
        # ValueError: its text alone, as always.
        with errors.reported_as(PlanningError, None):
            context, options = modes.from_params(p, check_mode=module.check_mode)
            doc = modes.make_plan_document(context, options)
            summary = planfile.summary(doc)
            learned = doc.get("timing", {}).get("learned_now", 0) if p["mode"] == "tactic" else 0
            result = dict(
                changed=bool(learned and p["advisor_state"]),
                plan=doc,
                summary=summary,
                elapsed_s=round(time.monotonic() - started, 3),
            )
            if p["plan_file"]:
                result["plan_file"] = p["plan_file"]
                old = None
                if os.path.exists(p["plan_file"]):
                    try:
                        old = planfile.load_plan(p["plan_file"])
                    except planfile.PlanFileError:
                        old = None
                if _decisions(old) != _decisions(doc):
                    result["changed"] = True
                    if module._diff:
                        result["diff"] = {
                            "before": "\n".join(planfile.summary(old)) + "\n" if old else "",
                            "after": "\n".join(summary) + "\n",
                            "before_header": p["plan_file"],
                            "after_header": p["plan_file"],
                        }
                    if not module.check_mode:
                        planfile.save_plan(p["plan_file"], doc)
            module.exit_json(**result)
    except TacticianError as exc:
        fail(module, exc)


if __name__ == "__main__":
    main()
