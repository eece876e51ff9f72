# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""scripts/tactician_demo.py explains autotune's decisions with the plan file's own rules (plan_file.gate and
step_due_now), not rules of its own."""

from __future__ import annotations

import importlib.util
import os

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
