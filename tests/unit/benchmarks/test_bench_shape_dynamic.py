# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""benchmarks/shape_dynamic.py without a server: the arms' effect with the node's part fitted out of turns that swap
nodes, the A/A beside it, the table, and the command line."""

from __future__ import annotations

import json
import math
import os
import sys

import pytest
from testlib import ROOT

BENCHMARKS = os.path.join(ROOT, "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)

import shape_dynamic as bench

NOISE = (0.004, -0.006, 0.003, -0.002, 0.005, -0.004)


def _turns(effect, node, turns=4, phases=("read-heavy", "update-heavy")):
    """Turns whose autotune arm does effect times as well as none, on a bench node that does node times as well as
    the other whatever it runs, the arms swapping nodes every turn."""
    out = []
    for index in range(turns):
        on_bench = index % 2 == 0
        placement = {
            "autotune": bench.NODES[0].name if on_bench else bench.NODES[1].name,
            "none": bench.NODES[1].name if on_bench else bench.NODES[0].name,
        }
        records = {}
        for arm, name in placement.items():
            factor = (node if name == bench.NODES[0].name else 1.0) * math.exp(NOISE[index % len(NOISE)])
            records[arm] = [
                {
                    "phase": label,
                    "ops": int(100000 * factor * (effect if arm == "autotune" and label != "warm-up" else 1.0)),
                    "ops_s": 1000.0 * factor,
                    "p99_ms": 40.0,
                    "failed": 0,
                    "node_cpu": 0.4,
                    "client_side_cpu": 0.6,
                    "seconds": 100.0,
                }
                for label in ("warm-up",) + phases
            ]
        out.append({"turn": index + 1, "placement": placement, "records": records, "decisions": []})
    return out


def test_the_node_is_fitted_out_of_turns_that_swap_nodes():
    turns = _turns(1.05, 1.12)
    ratio, low, high = bench.compare(turns, "autotune", "none", bench.trace_ops)
    assert ratio == pytest.approx(1.05, rel=0.01)
    assert low < 1.05 < high
    # Raw, the node's 12 % would swing every turn's ratio far more than the effect.
    raw = [t["records"]["autotune"][1]["ops"] / t["records"]["none"][1]["ops"] for t in turns]
    assert max(raw) > 1.15 and min(raw) < 0.95


def test_the_warm_up_is_the_a_a_floor():
    turns = _turns(1.05, 1.12)
    ratio, low, high = bench.compare(turns, "autotune", "none", bench._phase_pick("warm-up"))
    assert low < 1.0 < high
    assert ratio == pytest.approx(1.0, abs=0.01)


def test_a_node_part_that_drifts_between_turns_is_taken_out_by_each_turns_warm_up():
    turns = _turns(1.05, 1.0)
    drift = (1.3, 0.9, 1.1, 0.8, 1.2, 1.0)
    for index, turn in enumerate(turns):
        # The bench node drifts from turn to turn, in the warm-up as in the trace.
        for name_arm, name in turn["placement"].items():
            if name == bench.NODES[0].name:
                for record in turn["records"][name_arm]:
                    record["ops"] = int(record["ops"] * drift[index])
    plain = bench.compare(turns, "autotune", "none", bench.trace_ops)
    warmed = bench.compare_warmed(turns, "autotune", "none", bench.trace_ops)
    assert warmed[0] == pytest.approx(1.05, rel=0.01)
    assert warmed[2] - warmed[1] < 0.2 * (plain[2] - plain[1])
    assert bench.turn_ratios(turns, "autotune", "none", bench.trace_ops)[0] == pytest.approx(1.05 * 1.3, rel=0.02)


def test_the_covariate_fit_has_its_own_a_a_in_the_warm_up_halves():
    assert bench.halves({"status_by_process": [[[0.0, 0], [1.0, 100], [2.0, 200], [3.0, 300], [5.0, 500]]]}) == [
        200,
        200,
    ]
    assert bench.halves({"status_by_process": [[[0.0, 0]]]}) is None and bench.halves(None) is None
    turns = _turns(1.05, 1.12, turns=6)
    assert bench.warm_up_a_a(turns, "autotune", "none") is None
    for index, turn in enumerate(turns):
        for arm in ("autotune", "none"):
            warm = turn["records"][arm][0]
            wobble = 1.0 + (NOISE[index] if arm == "autotune" else -NOISE[index])
            warm["halves"] = [warm["ops"] // 2, int(warm["ops"] // 2 * wobble)]
    ratio, low, high = bench.warm_up_a_a(turns, "autotune", "none")
    assert low < 1.0 < high and ratio == pytest.approx(1.0, abs=0.01)


def test_too_few_turns_give_no_interval():
    ratio, low, high = bench.compare(_turns(1.0, 1.1, turns=2), "autotune", "none", bench.trace_ops)
    assert ratio == pytest.approx(1.0, abs=0.01)
    assert low is None and high is None
    assert bench.effect_interval([], []) == (None, None, None)


def test_the_table_gives_every_turn_the_ratio_and_the_floor():
    args = bench.parse_args(["--trace", "mixed", "--turns", "4"])
    doc = {"args": dict(vars(args), phases=None), "phases": args.phases, "turns": _turns(1.05, 1.12)}
    text = bench.render(json.loads(json.dumps(doc)))
    assert text.count("| autotune |") == 4 and text.count("| none |") == 4
    assert "the A/A floor" in text
    assert "**1.05" in text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--arms", "none"], "--arms"),
        (["--arms", "none,none"], "--arms"),
        (["--arms", "autotune,best"], "--arms"),
        (["--trace", "storm"], "--trace"),
        (["--phase-s", "100,200"], "--phase-s"),
        (["--phase-s", "100,200,30,100"], "--phase-s"),
        (["--turns", "0"], "--turns"),
    ],
)
def test_bad_input_names_the_option(argv, message, capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(argv)
    assert message in capsys.readouterr().err


def test_a_trace_has_its_phases_with_their_lengths():
    args = bench.parse_args(["--trace", "quiet", "--phase-s", "120,240,180,120"])
    assert [p[3] for p in args.phases] == [120, 240, 180, 120]
    assert args.phases[2][2] == bench.QUIET_RATE
    assert all(spec in bench.MIXES for _label, spec, _rate, _s in args.phases)


def test_a_run_without_a_history_says_so(tmp_path):
    assert bench.decision_of(str(tmp_path), 1.0, 2.0, 0.05) == ["no history written (see the log)"]
    assert bench.decision_of(str(tmp_path), None, None, 0.05) == ["no history written (see the log)"]
