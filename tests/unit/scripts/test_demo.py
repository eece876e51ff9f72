# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""scripts/tactician_demo.py explains autotune's decisions with the plan file's own rules (plan_file.gate and
step_due_now), not rules of its own."""

from __future__ import annotations

import importlib.util
import os

import pytest
from testlib import ROOT
from testlib import example_plan as _plan

from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile

_PATH = os.path.join(ROOT, "scripts", "tactician_demo.py")
_SPEC = importlib.util.spec_from_file_location("tactician_demo", _PATH)
demo = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(demo)


def test_decision_in_the_gates_words():
    due = _plan()
    assert demo.decision(due, True, 0.05) == 'switch now to {"concurrent_reads": 64}; applied'
    small = _plan(gain_share=0.01)
    assert demo.decision(small, False, 0.05) == (
        'switch now to {"concurrent_reads": 64}; not applied: %s' % planfile.gate(small, "auto", 0.05, 30)["reason"]
    )
    assert "gain under the threshold: +1.0 % < 5.0 %" in demo.decision(small, False, 0.05)
    later = demo.decision(_plan(offset_s=120.0), False, 0.05)
    assert later.startswith("switch in 120 s; not applied: not due yet: the first switch is in 120 s")
    assert demo.decision(_plan(steps=0), False, 0.05) == (
        "keep the configuration in place; not applied: nothing to apply: the plan keeps the configuration in place"
    )
    assert "not applied although the gate decided to" in demo.decision(due, False, 0.05)
    assert demo.STEP_S == 30


def test_plans_are_read_through_the_plan_file_api(tmp_path):
    path = str(tmp_path / "cassandra-20270115T080000.yml")
    planfile.save_plan(path, _plan())
    assert demo._plan(path) == planfile.load_plan(path)


def test_arms_run_in_turns_and_static_waits_for_a_plan():
    assert demo.arm_turns(["none", "autotune"], 2) == [(0, "none"), (0, "autotune"), (1, "autotune"), (1, "none")]
    turns = demo.arm_turns(["static", "none", "autotune"], 1, static_known=False)
    assert [arm for _rep, arm in turns] == ["autotune", "static", "none"]


def test_bad_arguments_name_the_option():
    with pytest.raises(SystemExit):
        demo.parse_args(["--arms", "none,fastest"])
    with pytest.raises(SystemExit):
        demo.parse_args(["--trace", "quiet", "--phase-s", "100,200"])
    with pytest.raises(SystemExit):
        demo.parse_args(["--arms", "static,none"])
    args = demo.parse_args(["--trace", "quiet", "--phase-s", "90"])
    assert args.phase_s == (90.0,) * 4 and len(args.phases) == 4


def _outcome(arm, rep, ops, warm):
    def phase(count):
        return {
            "throughput": count / 100.0,
            "operations": {"read": {"count": count, "p99_ms": 12.0}},
            "failed_total": 0,
            "wall_s": 100.0,
            "client_cpu_s": 50.0,
            "server_cpu_s": 120.0,
            "other_cpu_s": 10.0,
        }

    return {"arm": arm, "rep": rep, "warmup": phase(warm), "results": [phase(n) for n in ops], "ok": True}


def test_the_comparison_pairs_turns_with_an_interval_and_the_warm_up_as_noise_floor():
    args = demo.parse_args(["--arms", "none,autotune", "--repeats", "3"])
    outcomes = []
    for rep, (gain, warm) in enumerate(((1.10, 1.01), (1.12, 0.99), (1.08, 1.00))):
        outcomes.append(_outcome("none", rep, [1000, 1000, 1000], 500))
        outcomes.append(_outcome("autotune", rep, [1000, 1000 * gain, 1000], 500 * warm))
    text = demo.compare(args, outcomes, None)
    mean, low, high = demo.ratio_interval([(1.1, 1.0), (1.0, 1.0), (1.05, 1.0)])
    assert low < mean < high
    row = next(line for line in text.splitlines() if line.startswith("| autotune | none"))
    assert "| 3 | 1.033 [" in row
    assert row.endswith("| 1.000 [0.975, 1.025] | 1.000 | 1.100 | 1.000 |")
    assert "0.50 | 1.20 | 0.10 |" in text
    assert demo.ratio_interval([(2.0, 1.0)]) == (2.0, None, None)
