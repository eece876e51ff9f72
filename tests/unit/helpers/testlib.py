# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""What the unit tests share, importable from any of their folders (pytest.ini puts this folder on the path):
the checkout's root, and a small valid plan document to test the plan file's rules with."""

from __future__ import annotations

import os

from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
"""The checkout (the collection's root)."""

FIXTURES = os.path.join(ROOT, "tests", "fixtures")

CURRENT = {"concurrent_reads": 32, "concurrent_writes": 32}


class Clock:
    """A clock for the engine's waits: calling it reads the time, sleep() advances it (no real waiting)."""

    def __init__(self, start=0.0):
        self.now = float(start)

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def plan_body(offset_s=0.0, gain_share=0.111, steps=1):
    step = {
        "offset_s": offset_s,
        "configuration": {"concurrent_reads": 64},
        "full_configuration": {"concurrent_reads": 64, "concurrent_writes": 32},
        "restart": False,
        "roll_s": 12.5,
        "predicted": {
            "ops_per_s_before": 1000.0,
            "ops_per_s_after": 1200.0,
            "cost_ops": 0.0,
            "gain_ops": 1.5e5,
            "break_even_s": 0.0,
            "kept_s": 600.0,
        },
        "reason": "from +0 s: the reads gain from more concurrent reads",
    }
    second = dict(step, offset_s=offset_s + 600.0, configuration={"concurrent_writes": 64}, full_configuration=None)
    second.pop("full_configuration")
    return {
        "steps": [step, second][:steps],
        "predicted": {"ops": 2.0e6, "in_place_ops": 1.8e6, "gain_ops": 2.0e5, "gain_share": gain_share},
        "baselines": {"default": 1.7e6, "in_place": 1.8e6},
        "reasons": ["a read-heavy phase comes"],
    }


def example_plan(**kwargs):
    """A valid dynamic plan made for CURRENT: one step due now (offset_s 0) unless told otherwise."""
    return planfile.build(
        plan_body(**kwargs),
        "cassandra",
        1_800_000_000,
        "5.0.9",
        {"name": "lab", "cl": "ONE", "nodes": ["a", "b", "c"], "rf": 3},
        {"file": "m.json"},
        CURRENT,
        lookahead={"step_s": 30, "seconds": 1800},
    )
