# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""benchmarks/shape_tuning.py without a server: the rotation of the arms, the ratios to the defaults of the same
round with the A/A floor beside them, the table, and the command line."""

from __future__ import annotations

import os
import sys

import pytest
from testlib import ROOT

BENCHMARKS = os.path.join(ROOT, "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)

import shape_tuning as bench


def _windows(rounds, gain, noise=(1.0, 1.02, 0.99, 1.01, 0.98, 1.0)):
    out = []
    for index, order in enumerate(bench.rotation(rounds)):
        for arm in order:
            ops = 4000.0 * noise[index % len(noise)]
            if arm == "tuned":
                ops *= gain * noise[(index + 2) % len(noise)]
            if arm == "defaults again":
                ops *= noise[(index + 1) % len(noise)]
            out.append(
                {"arm": arm, "round": index, "ops_s": ops, "server_cpu": 0.97, "client_side_cpu": 0.25, "read_mb_s": 50}
            )
    return out


def test_every_arm_takes_every_place_in_the_order():
    orders = bench.rotation(6)
    for place in range(3):
        assert sorted(order[place] for order in orders) == sorted(bench.ARMS * 2)


def test_four_arms_rotate_in_a_williams_square():
    orders = bench.rotation(8, bench.ARMS_LATEST)
    for place in range(4):
        assert sorted(order[place] for order in orders) == sorted(bench.ARMS_LATEST * 2)
    # Every arm follows every other arm equally often: no carry-over of one arm falls on another more than the rest.
    follows = {}
    for order in orders[:4]:
        for before, after in zip(order, order[1:], strict=False):
            follows[(before, after)] = follows.get((before, after), 0) + 1
    assert len(follows) == 12 and set(follows.values()) == {1}


def test_the_latest_arm_is_summarized_and_printed_beside_the_others():
    windows = []
    for index, order in enumerate(bench.rotation(4, bench.ARMS_LATEST)):
        for arm in order:
            ops = {"defaults": 4000.0, "tuned": 5000.0, bench.LATEST: 4400.0}.get(arm, 4000.0 + 10 * index)
            windows.append({"arm": arm, "round": index, "ops_s": ops, "server_cpu": 0.97, "idle_node_cpu": 0.01})
    summary = bench.summarize(windows, bench.ARMS_LATEST)
    assert summary[bench.LATEST]["ratio"] == pytest.approx(1.1)
    configs = {arm: {"concurrent_reads": 32} for arm in bench.ARMS_LATEST}
    configs[bench.LATEST] = {"node": bench.LATEST, "compression_chunk_kb": 16}
    text = bench.markdown(
        [
            {
                "workload": "b",
                "arms": list(bench.ARMS_LATEST),
                "configs": configs,
                "predicted": {},
                "windows": windows,
            }
        ]
    )
    assert "| B | cassandra_latest |" in text and "(idle node 0.01)" in text


def test_a_gain_beyond_the_floor_is_called_better():
    summary = bench.summarize(_windows(6, 1.25))
    assert summary["tuned"]["ratio"] == pytest.approx(1.25, rel=0.02)
    assert summary["tuned"]["won"] == 6 and summary["tuned"]["n"] == 6
    assert summary["defaults again"]["low"] < 1.0 < summary["defaults again"]["high"]
    text = bench.markdown(
        [
            {
                "workload": "b",
                "configs": {arm: {"concurrent_reads": 32} for arm in bench.ARMS},
                "predicted": {"tuned": 5000.0, "defaults": 4000.0},
                "windows": _windows(6, 1.25),
            }
        ]
    )
    assert "**better**, outside the floor" in text and "the floor: +-" in text


def test_a_gain_inside_the_floor_is_not_claimed():
    summary = bench.summarize(_windows(6, 1.0))
    text = bench.markdown(
        [{"workload": "b", "configs": {arm: {} for arm in bench.ARMS}, "predicted": {}, "windows": _windows(6, 1.0)}]
    )
    assert summary["tuned"]["low"] < 1.0 < summary["tuned"]["high"] and "inside the floor" in text


def test_the_command_line_names_what_is_allowed():
    assert bench.parse_args([]).workloads == ["b"]
    for bad in (["--workloads", "z"], ["--rounds", "1"]):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)
