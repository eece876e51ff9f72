#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: race
short_description: Iterated racing of configurations against real benchmark runs (irace's method), step by step
description:
  - Tunes a store model-free (seed 004) - configurations are sampled within the parameter catalog's types, ranges
    and the node's memory budget, raced on instances (a workload and a seed) and dropped when the Friedman test
    and its post-hoc comparison find them worse than the best; survivors seed the next iteration.
  - The race is a trial history file (JSON lines), replayed with the same seed, so it is resumable and a playbook
    drives it - O(action=ask) returns the runs the race needs before its next decision, grouped by configuration
    (so a node restarts once per configuration), O(action=tell) records their results, O(action=result) reports
    the elites. C(playbooks/tune.yml) loops ask, evaluate (cold - the data destroyed and loaded again) and tell.
  - O(action=irace) runs the same scenario (parameters, ranges, instances, budget, first_test, each_test, seed, the
    default seeded in) on the original irace (the R package; Debian r-cran-irace) - each evaluation through
    O(evaluate_command), which records its result in the same trial history - and returns irace's elites.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  action:
    description: What to do.
    type: str
    choices: [ask, tell, result, irace]
    required: true
  evaluate_command:
    description:
      - O(action=irace) - the command (argument list) that evaluates one configuration on one instance - it gets
        the path of a request file (JSON - C(config), C(index), C(instance)) in place of C({request}), or as its
        last argument, and appends the result to O(history) (as O(action=tell) does).
    type: list
    elements: str
  irace_dir:
    description: O(action=irace) - directory of irace's scenario, state and log; default O(history) with C(.irace).
    type: path
  history:
    description: The trial history file (created by the first O(action=ask)).
    type: path
    required: true
  store:
    description: Store whose catalog the parameters come from.
    type: str
    choices: [cassandra, redis, mongodb]
    default: cassandra
  store_version:
    description: Catalog version.
    type: str
  parameters:
    description: Catalog names of the parameters to tune.
    type: list
    elements: str
    required: true
  ranges:
    description: Tuning range per parameter (C([low, high]) or the list of choices).
    type: dict
  defaults:
    description: Values of parameters whose catalog default depends on the machine (e.g. concurrent_compactors).
    type: dict
  fixed:
    description: Parameters kept at a value (name to value).
    type: dict
  instances:
    description:
      - The instances, raced in this order - each C(workload) (a YCSB letter or a workload mapping) and C(seed).
      - Without it, O(workloads) x O(repetitions) in the order seed 0 of each workload, then seed 1, ...
    type: list
    elements: dict
  workloads:
    description: Workloads (YCSB letters or mappings) the instances are made of when O(instances) is not given.
    type: list
    elements: raw
  repetitions:
    description: Seeds per workload when O(instances) is not given.
    type: int
    default: 10
  budget_evaluations:
    description: Most evaluations in all.
    type: int
  budget_s:
    description: Most seconds of evaluation time in all (the sum recorded in the history).
    type: float
  seed:
    description: Seed of the sampling.
    type: int
    default: 0
  initial:
    description: Configurations seeded into the first iteration; C([{}]) is the default configuration.
    type: list
    elements: dict
  first_test:
    description: Instances run before the first statistical test.
    type: int
    default: 5
  each_test:
    description: Instances between two tests.
    type: int
    default: 1
  confidence:
    description: Confidence of the Friedman test.
    type: float
    default: 0.95
  memory_mb:
    description: Memory of the node, for the catalog's budget check.
    type: float
  heap_mb:
    description: Heap of the node, for the catalog's budget check.
    type: float
  results:
    description:
      - O(action=tell) - the runs measured, each C(config) (as O(action=ask) gave it), C(index) (the instance's),
        C(value) (ops/s, higher is better) and optionally C(elapsed_s).
    type: list
    elements: dict
  catalog:
    description: The store's catalog as data; filled in by the action plugin.
    type: dict
attributes:
  check_mode:
    description: O(action=tell) records nothing in check mode.
    support: full
  diff_mode:
    description: Returns no diff.
    support: none
"""

EXAMPLES = r"""
- name: What the race needs next
  tactician.nosql.race:
    action: ask
    history: .lab/bench/races/ycsb-a.jsonl
    parameters: [concurrent_reads, concurrent_writes, memtable_heap_space, file_cache_size]
    ranges:
      concurrent_reads: [8, 64]
      concurrent_writes: [8, 64]
      memtable_heap_space: [32, 384]
      file_cache_size: [32, 512]
    instances: [{workload: a, seed: 0}, {workload: a, seed: 1}, {workload: a, seed: 2}]
    budget_s: 3600
  register: next_runs

- name: Record a run
  tactician.nosql.race:
    action: tell
    history: .lab/bench/races/ycsb-a.jsonl
    parameters: [concurrent_reads, concurrent_writes, memtable_heap_space, file_cache_size]
    instances: [{workload: a, seed: 0}, {workload: a, seed: 1}, {workload: a, seed: 2}]
    budget_s: 3600
    results:
      - {config: "{{ next_runs.pending[0].config }}", index: 0, value: 10500.0, elapsed_s: 61}
"""

RETURN = r"""
done:
  description: Whether the race has finished (its budget spent or no configuration left to sample).
  returned: always
  type: bool
pending:
  description: O(action=ask) - the runs to do, grouped by configuration (config, config_key, instances with index).
  returned: action is ask
  type: list
  elements: dict
result:
  description:
    - The race so far - best, elites (id, config, instances, mean), evaluations, iterations, and default_config
      (the default of the raced parameters); while it runs, the leader (most runs, then best mean).
    - O(action=irace) - irace's elites (id, config) best first, best (with its mean and instances from the
      history), evaluations, configurations, irace_version, log (irace's output file).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail
from ansible_collections.tactician.nosql.plugins.module_utils.planning import irace, racing


def main():
    module = AnsibleModule(
        argument_spec=dict(
            action=dict(type="str", choices=["ask", "tell", "result", "irace"], required=True),
            evaluate_command=dict(type="list", elements="str"),
            irace_dir=dict(type="path"),
            history=dict(type="path", required=True),
            store=dict(type="str", choices=["cassandra", "redis", "mongodb"], default="cassandra"),
            store_version=dict(type="str"),
            parameters=dict(type="list", elements="str", required=True),
            ranges=dict(type="dict"),
            defaults=dict(type="dict"),
            fixed=dict(type="dict"),
            instances=dict(type="list", elements="dict"),
            workloads=dict(type="list", elements="raw"),
            repetitions=dict(type="int", default=10),
            budget_evaluations=dict(type="int"),
            budget_s=dict(type="float"),
            seed=dict(type="int", default=0),
            initial=dict(type="list", elements="dict"),
            first_test=dict(type="int", default=5),
            each_test=dict(type="int", default=1),
            confidence=dict(type="float", default=0.95),
            memory_mb=dict(type="float"),
            heap_mb=dict(type="float"),
            results=dict(type="list", elements="dict"),
            catalog=dict(type="dict"),
        ),
        required_one_of=[["budget_evaluations", "budget_s"], ["instances", "workloads"]],
        required_if=[["action", "tell", ["results"]], ["action", "irace", ["evaluate_command"]]],
        supports_check_mode=True,
    )
    p = module.params
    if not p["catalog"]:
        module.fail_json(msg="catalog: missing; run the module through its action plugin (tactician.nosql.race)")
    spec = dict(p)
    if not spec["instances"]:
        if spec["repetitions"] < 1:
            module.fail_json(msg="repetitions: %r is not allowed; choose a whole number >= 1" % spec["repetitions"])
        spec["instances"] = [
            {"workload": workload, "seed": seed}
            for seed in range(spec["repetitions"])
            for workload in spec["workloads"]
        ]
    try:
        race = racing.race_from_spec(p["catalog"], spec)
        history = racing.TrialHistory(p["history"])
        if p["action"] == "tell":
            results = racing.check_results(p["results"])
            recorded = []
            if not module.check_mode:
                for item in results:
                    recorded.append(
                        race.tell(
                            history,
                            item["config"],
                            item["index"],
                            item["value"],
                            elapsed_s=item["elapsed_s"],
                            extra=item["extra"],
                        )
                    )
            pending, result = race.ask(history)
            module.exit_json(changed=bool(p["results"]), done=not pending, recorded=len(recorded), result=result)
        if p["action"] == "irace":
            if module.check_mode:
                module.exit_json(changed=True, done=False, result={"note": "check mode: irace not run"})
            result = irace.run(
                race,
                p["irace_dir"] or p["history"] + ".irace",
                p["evaluate_command"],
                p["history"],
                budget_evaluations=p["budget_evaluations"],
                budget_s=p["budget_s"] if p["budget_evaluations"] is None else None,
            )
            result["default_config"] = race.default_config()
            result["finished"] = True
            module.exit_json(changed=True, done=True, result=result)
        pending, result = race.ask(history)
        result["default_config"] = race.default_config()
        if p["action"] == "result" and pending:
            result = dict(result, note="the race has not finished; %d runs are pending" % result.get("pending", 0))
        module.exit_json(changed=False, done=not pending, pending=pending, result=result)
    except TacticianError as exc:
        fail(module, exc)


if __name__ == "__main__":
    main()
