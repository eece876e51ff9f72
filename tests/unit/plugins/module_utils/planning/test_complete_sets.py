# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Heterogeneous clusters of seed 002: complete-sets, the VM catalog, perf/$ under a budget, set-level rolls."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
from testlib import ROOT

from ansible_collections.tactician.nosql.plugins.module_utils.planning import complete_sets as hetero
from ansible_collections.tactician.nosql.plugins.module_utils.planning import cost_benefit as planner
from ansible_collections.tactician.nosql.plugins.module_utils.planning import vm_types


def _covers(sets, replicas):
    return all(all(any(n in holders for n in s) for _t, holders in replicas) for s in sets)


def test_single_token_ring_gives_rf_sets():
    tokens = {name: [i * 100] for i, name in enumerate("ABCDEF")}
    replicas = hetero.cassandra_replicas(tokens, 3)
    assert replicas[0] == (0, frozenset("ABC"))
    sets = hetero.complete_sets(replicas)
    assert sets == [["A", "D"], ["B", "E"], ["C", "F"]]
    assert _covers(sets, replicas)


@pytest.mark.parametrize("nodes", [6, 9, 12, 24])
def test_balanced_vnode_rings_give_rf_sets_whatever_the_size(nodes):
    # Tokens interleaved evenly, as Cassandra's allocation for a replication factor places them.
    tokens = {"n%d" % i: [(j * nodes + i) * 1000 for j in range(16)] for i in range(nodes)}
    replicas = hetero.cassandra_replicas(tokens, 3)
    sets = hetero.complete_sets(replicas)
    assert len(sets) == 3 and _covers(sets, replicas)
    assert sorted(n for s in sets for n in s) == sorted(tokens)


@pytest.mark.parametrize("nodes", [6, 12])
def test_random_vnode_rings_still_partition_into_covers(nodes):
    rng = random.Random(nodes)
    tokens = {"n%d" % i: [rng.randrange(-(2**63), 2**63) for _j in range(16)] for i in range(nodes)}
    replicas = hetero.cassandra_replicas(tokens, 3)
    sets = hetero.complete_sets(replicas)
    assert 1 <= len(sets) <= 3 and _covers(sets, replicas)
    assert sorted(n for s in sets for n in s) == sorted(tokens)


def test_redis_sets_and_bad_input():
    shards = [{"master": "m1", "replicas": ["r1a", "r1b"]}, {"master": "m2", "replicas": ["r2a"]}]
    assert hetero.redis_complete_sets(shards) == [["m1", "m2"], ["r1a", "r2a"]]
    with pytest.raises(hetero.HeteroError, match="rf"):
        hetero.cassandra_replicas({"a": [1]}, 2)
    with pytest.raises(hetero.HeteroError, match=r"tokens.a: 'x'"):
        hetero.cassandra_replicas({"a": ["x"]}, 1)


def test_vm_catalog_sample_and_errors():
    vms = vm_types.load_vms(os.path.join(ROOT, "catalog", "vms", "aws-us-east-1.yml"))
    assert len(vms) >= 10 and all(vm["price_per_h"] > 0 for vm in vms)
    with pytest.raises(vm_types.HeteroError, match=r"vms\[0\].price_per_h: required"):
        vm_types.check_vms([{"name": "x", "vcpu": 1, "ram_gb": 1}])
    with pytest.raises(vm_types.HeteroError, match=r"vms\[0\].gpu: unknown key"):
        vm_types.check_vms([{"name": "x", "vcpu": 1, "ram_gb": 1, "price_per_h": 1, "gpu": 1}])


def test_cluster_throughput_reads_spread_writes_hit_every_set():
    assert vm_types.cluster_throughput([100, 100, 100], 1.0) == pytest.approx(300)
    assert vm_types.cluster_throughput([100, 50, 100], 0.0) == pytest.approx(50)
    mixed = vm_types.cluster_throughput([100, 100, 100], 0.5)
    assert 100 < mixed < 300


VMS = vm_types.check_vms(
    [
        {"name": "small", "vcpu": 2, "ram_gb": 4, "price_per_h": 0.1},
        {"name": "memory", "vcpu": 2, "ram_gb": 16, "price_per_h": 0.2},
    ]
)


def test_best_assignment_is_heterogeneous_for_reads_and_honours_the_budget():
    # Reads: the memory VM is 4x faster (data fits), writes: the same on both.
    reads = [[100.0, 90.0], [400.0, 380.0]]
    best = vm_types.best_assignment(reads, [2, 2, 2], VMS, read_ratio=0.95)
    assert best["method"] == "exhaustive" and best["evaluated"] == 8
    assert "memory" in best["vms"] and best["assignment"][0][1] == 0
    cheap = vm_types.best_assignment(reads, [2, 2, 2], VMS, read_ratio=0.95, budget_per_h=0.65)
    assert cheap["cost_per_h"] <= 0.65 and cheap["vms"].count("memory") <= 1
    with pytest.raises(vm_types.HeteroError, match="budget_per_h / min_ops"):
        vm_types.best_assignment(reads, [2, 2, 2], VMS, read_ratio=0.95, budget_per_h=0.5, min_ops=10_000)
    writes = vm_types.best_assignment([[100.0], [100.0]], [2, 2, 2], VMS, read_ratio=0.0)
    assert writes["vms"] == ["small", "small", "small"]


def test_only_changed_sets_roll_and_vm_changes_take_longer():
    assignments = [[(0, 0), (0, 0), (0, 0)], [(1, 0), (0, 0), (0, 0)], [(0, 1), (0, 1), (0, 0)]]
    layouts = hetero.set_layouts(assignments, [2, 2, 2], batch_sets=2)
    layout, duration = layouts(0, 1)
    assert duration == 90.0 and layout == [(0.0, 90.0, 4 / 6, 0.0)]
    layout, duration = layouts(0, 2)
    assert duration == 30.0 and layout == [(0.0, 30.0, 2 / 6, 0.0)]
    F = np.array([[100.0, 150.0, 120.0]] * 20)
    line = planner.Timeline(F, planner.Roll(nodes=6, batch=2, restart_s=30), step_s=30, layouts=layouts)
    plan = planner.best_plan(line, 0)
    assert plan["switches"] and plan["switches"][0][2] == 1
    assert line.value([(0, 2)], 0) == pytest.approx(30 * 100 * 2 / 6 + 30 * 120 + 18 * 30 * 120)
