# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The VM catalog of heterogeneous clusters and the perf/$ search over assignments (seed 002, OptimusCloud).

- VM catalog: a YAML file of machine types (name, vcpu, ram_gb, disk_ssd, price_per_h); ``catalog/vms/`` holds
  samples.
- Cluster throughput of an assignment (one VM type and one DB configuration per complete-set; nodes inside a set
  share them, since a set is as fast as its slowest node): each set's capacity is its nodes x one node's ops/s;
  a read is served by one replica (load spread in proportion to capacity), a write is applied by every set, so
  T = min over sets of cap_p / (r cap_p / sum(cap) + (1 - r)) for read share r. A cluster model can replace it.
- ``best_assignment``: maximize perf/$ = T / cost per hour subject to T >= min_ops and cost <= budget: exhaustive
  over the I^S assignments when there are few (S = 3 sets, I = 15 VM types: 3,375), else a genetic algorithm.

The complete-sets themselves, and the roll of a switch between assignments, are in complete_sets.py.
"""

from __future__ import annotations

import itertools
import math
import os

from ansible_collections.tactician.nosql.plugins.module_utils.core import checks, imports
from ansible_collections.tactician.nosql.plugins.module_utils.planning.complete_sets import HeteroError

yaml = imports.optional("yaml")  # a requirement; load_vms says so when a file is read without it

VM_KEYS = ("name", "vcpu", "ram_gb", "disk_ssd", "price_per_h")
EXHAUSTIVE_LIMIT = 50_000


# ------------------------------------------------------------------------------------------------ VM catalog
def _number(field, value, minimum=None, above=None):
    return checks.number(field, value, HeteroError, minimum=minimum, above=above)


def check_vms(data, where="vms"):
    """A validated list of VM types from data ({"vms": [...]} or the list)."""
    vms = data.get("vms") if isinstance(data, dict) else data
    if not isinstance(vms, list) or not vms:
        raise HeteroError("%s: expected a non-empty list of VM types (%s)" % (where, ", ".join(VM_KEYS)))
    out = []
    names = set()
    for index, vm in enumerate(vms):
        field = "%s[%d]" % (where, index)
        if not isinstance(vm, dict):
            raise HeteroError("%s: expected a mapping with %s" % (field, ", ".join(VM_KEYS)))
        unknown = sorted(set(vm) - set(VM_KEYS) - {"family", "note"})
        if unknown:
            raise HeteroError(
                "%s.%s: unknown key; allowed: %s" % (field, unknown[0], ", ".join(VM_KEYS + ("family", "note")))
            )
        for key in ("name", "vcpu", "ram_gb", "price_per_h"):
            if key not in vm:
                raise HeteroError("%s.%s: required" % (field, key))
        name = str(vm["name"])
        if name in names:
            raise HeteroError("%s.name: %s is listed twice" % (field, name))
        names.add(name)
        ssd = vm.get("disk_ssd", True)
        if not isinstance(ssd, bool):
            raise HeteroError("%s.disk_ssd: %r is not a boolean" % (field, ssd))
        out.append(
            {
                "name": name,
                "vcpu": _number(field + ".vcpu", vm["vcpu"], above=0),
                "ram_gb": _number(field + ".ram_gb", vm["ram_gb"], above=0),
                "disk_ssd": ssd,
                "price_per_h": _number(field + ".price_per_h", vm["price_per_h"], above=0),
            }
        )
    return out


def load_vms(path):
    if yaml is None:
        raise HeteroError("reading a VM catalog needs the Python library PyYAML")
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except OSError as exc:
        raise HeteroError("vm_catalog: cannot read %s: %s" % (path, exc)) from None
    except yaml.YAMLError as exc:
        raise HeteroError("vm_catalog: %s is not YAML: %s" % (path, exc)) from None
    return check_vms(data, os.path.basename(path))


# ------------------------------------------------------------------------------------------------ throughput
def cluster_throughput(capacities, read_ratio):
    """Cluster ops/s of sets with these capacities (ops/s of the set's nodes on the workload): reads go to one
    replica, spread in proportion to capacity; writes load every set."""
    caps = [max(0.0, float(c)) for c in capacities]
    total = math.fsum(caps)
    if total <= 0:
        return 0.0
    r = min(1.0, max(0.0, float(read_ratio)))
    limits = []
    for cap in caps:
        per_op = r * cap / total + (1.0 - r)
        limits.append(cap / per_op if per_op > 0 else float("inf"))
    return min(limits)


def assignment_cost(assignment, sizes, vms):
    """$/h of an assignment (a VM index per set)."""
    return math.fsum(sizes[p] * vms[v]["price_per_h"] for p, (v, _c) in enumerate(assignment))


def evaluate_assignment(assignment, node_ops, sizes, vms, read_ratio, budget_per_h=None, min_ops=0.0):
    """(ops/s, $/h, feasible) of an assignment [(VM index, config index)] per set: the cluster's ops/s from its
    sets' capacities, the price of its nodes, and whether it meets min_ops and the budget."""
    caps = [sizes[p] * node_ops[v][c] for p, (v, c) in enumerate(assignment)]
    ops = cluster_throughput(caps, read_ratio)
    cost = assignment_cost(assignment, sizes, vms)
    feasible = ops >= (min_ops or 0.0) and (budget_per_h is None or cost <= budget_per_h + 1e-9)
    return ops, cost, feasible


def best_assignment(node_ops, sizes, vms, read_ratio, budget_per_h=None, min_ops=0.0, seed=0):
    """The assignment (VM index, config index) per set with the best perf/$ under the constraints.

    node_ops[v][c]: one node's ops/s on VM type v with DB configuration c for the workload (from the surrogate
    with v's hardware features); sizes: nodes per complete-set. Each set takes, per VM type, the configuration
    best for it. Returns {"assignment", "ops_per_s", "cost_per_h", "perf_per_dollar", "evaluated", "method"} or
    raises HeteroError when no assignment meets the constraints."""
    if not sizes:
        raise HeteroError("sizes: no complete-sets")
    best_config = []
    for v, row in enumerate(node_ops):
        if not len(row):
            raise HeteroError("node_ops[%d]: no configuration for %s" % (v, vms[v]["name"]))
        c = max(range(len(row)), key=lambda i: (row[i], -i))
        best_config.append((c, float(row[c])))
    S, types = len(sizes), len(vms)

    def score(choice):
        return evaluate_assignment(
            [(v, best_config[v][0]) for v in choice], node_ops, sizes, vms, read_ratio, budget_per_h, min_ops
        )

    best = None
    evaluated = 0
    if types**S <= EXHAUSTIVE_LIMIT:
        method = "exhaustive"
        for choice in itertools.product(range(types), repeat=S):
            evaluated += 1
            ops, cost, ok = score(choice)
            if ok and (best is None or ops / cost > best[0] + 1e-12):
                best = (ops / cost, choice, ops, cost)
    else:
        method = "ga"
        pygad = imports.require("pygad", HeteroError, "a search over %d assignments" % (types**S))

        def fitness(_ga, solution, _index):
            ops, cost, ok = score([int(v) for v in solution])
            return ops / cost if ok else -1.0

        ga = pygad.GA(
            num_generations=200,
            num_parents_mating=25,
            sol_per_pop=50,
            num_genes=S,
            gene_type=int,
            gene_space=list(range(types)),
            fitness_func=fitness,
            crossover_probability=0.8,
            random_seed=seed,
            stop_criteria="saturate_20",
            suppress_warnings=True,
        )
        ga.run()
        solution, value, _i = ga.best_solution(pop_fitness=ga.last_generation_fitness)
        evaluated = int(ga.generations_completed) * 50
        choice = [int(v) for v in solution]
        ops, cost, ok = score(choice)
        if ok and value > 0:
            best = (ops / cost, tuple(choice), ops, cost)
    if best is None:
        raise HeteroError(
            "budget_per_h / min_ops: no assignment of %s to %d sets reaches %.0f ops/s within %s $/h"
            % (", ".join(vm["name"] for vm in vms), S, min_ops, budget_per_h)
        )
    _value, choice, ops, cost = best
    return {
        "assignment": [(v, best_config[v][0]) for v in choice],
        "vms": [vms[v]["name"] for v in choice],
        "ops_per_s": ops,
        "cost_per_h": cost,
        "perf_per_dollar": ops / cost,
        "evaluated": evaluated,
        "method": method,
    }
