# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

import math

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.trials import designs


def test_abba_order_balances_every_pair_and_the_drift():
    labels = designs.window_order(4)
    assert labels == ["A", "B", "B", "A", "A", "B", "B", "A"]
    # A linear drift weighs on both arms alike: the mean position of each arm is the same.
    positions = {arm: [i for i, label in enumerate(labels) if label == arm] for arm in "AB"}
    assert sum(positions["A"]) == sum(positions["B"])


def test_random_order_is_seeded_and_pairs_stay_whole():
    one, two = designs.window_order(6, "random", seed=3), designs.window_order(6, "random", seed=3)
    assert one == two
    assert all(sorted(one[i : i + 2]) == ["A", "B"] for i in range(0, 12, 2))


@pytest.mark.parametrize("pairs", [0, -1, 1.5, True])
def test_bad_pairs_name_the_field(pairs):
    with pytest.raises(designs.DesignError, match="pairs: "):
        designs.window_order(pairs)


def test_bad_order_names_the_choices():
    with pytest.raises(designs.DesignError, match="order: 'abab' is not allowed; choose one of abba, random"):
        designs.window_order(2, "abab")


def test_pair_ratios_are_b_over_a_whatever_the_order():
    labels = ["A", "B", "B", "A"]
    assert designs.pair_ratios(labels, [100.0, 110.0, 121.0, 110.0]) == pytest.approx([1.1, 1.1])


def test_a_window_without_a_value_drops_its_pair():
    assert designs.pair_ratios(["A", "B", "B", "A"], [100.0, None, 120.0, 100.0]) == pytest.approx([1.2])


def test_windows_that_do_not_make_pairs_are_refused():
    with pytest.raises(designs.DesignError, match="whole pairs"):
        designs.pair_ratios(["A", "B", "A"], [1, 2, 3])
    with pytest.raises(designs.DesignError, match="one A and one B"):
        designs.pair_ratios(["A", "A"], [1, 2])


def test_block_ratios_cancel_a_linear_drift_that_pairs_carry():
    labels = designs.window_order(4)
    # B is 10 % better; the node warms up by 5 % per window.
    values = [100.0 * 1.05**i * (1.1 if label == "B" else 1.0) for i, label in enumerate(labels)]
    assert designs.block_ratios(labels, values) == pytest.approx([1.1, 1.1])
    pairs = designs.pair_ratios(labels, values)
    assert pairs[0] == pytest.approx(1.155) and pairs[1] == pytest.approx(1.1 / 1.05)


def test_block_ratios_refuse_blocks_that_do_not_cancel_a_drift():
    with pytest.raises(designs.DesignError, match="windows 0-3: ABAB is not an ABBA or BAAB block"):
        designs.block_ratios(["A", "B", "A", "B"], [1, 2, 3, 4])
    with pytest.raises(designs.DesignError, match="whole blocks of 4"):
        designs.block_ratios(["A", "B"], [1, 2])
    assert designs.block_ratios(["A", "B", "B", "A"], [1.0, None, 2.0, 1.0]) == []


def test_summary_of_a_clear_gain():
    summary = designs.summarize([1.20, 1.22, 1.19, 1.21, 1.18, 1.20])
    assert summary["ratio"] == pytest.approx(1.20, abs=0.005)
    assert 1.18 < summary["t_interval"][0] < 1.2 < summary["t_interval"][1] < 1.22
    assert summary["b_won"] == 6 and summary["a_won"] == 0
    assert summary["bootstrap_interval"][0] <= summary["ratio"] <= summary["bootstrap_interval"][1]


def test_summary_of_one_ratio_has_no_interval():
    summary = designs.summarize([1.1])
    assert summary["n"] == 1 and summary["t_interval"] is None and summary["ratio"] == pytest.approx(1.1)


def test_noise_floor_and_verdicts():
    aa = designs.summarize([1.01, 0.99, 1.02, 0.98, 1.0, 1.01])
    floor = designs.noise_floor(aa)
    assert 0 < floor < 0.03
    assert designs.verdict(designs.summarize([1.2, 1.22, 1.19, 1.21]), floor) == "B better"
    assert designs.verdict(designs.summarize([0.8, 0.82, 0.79, 0.81]), floor) == "B worse"
    assert designs.verdict(designs.summarize([1.01, 1.0, 1.02, 0.99]), floor) == "inside the noise floor"
    assert designs.verdict(designs.summarize([1.2]), floor) == "not measured"
    assert designs.verdict(designs.summarize([1.2, 1.3]), None) == "not measured"


def test_a_gain_inside_a_wide_floor_is_not_claimed():
    wide = designs.noise_floor(designs.summarize([1.2, 0.8, 1.15, 0.85]))
    assert designs.verdict(designs.summarize([1.08, 1.09, 1.1, 1.07]), wide) == "inside the noise floor"


def test_skewed_ratios_read_the_bootstrap_interval():
    ratios = [1.0, 1.0, 1.01, 0.99, 1.0, 1.0, 2.5]
    summary = designs.summarize(ratios)
    assert summary["skewed"] is True
    assert designs.interval_of(summary) == summary["bootstrap_interval"]
    assert math.isclose(
        designs.interval_of(designs.summarize([1.0, 1.1, 1.05]))[0],
        designs.summarize([1.0, 1.1, 1.05])["t_interval"][0],
    )


def test_the_narrowest_floor_is_chosen_on_the_aa_design_alone():
    wide, narrow = designs.summarize([1.2, 0.8, 1.1, 0.9]), designs.summarize([1.01, 0.99, 1.0, 1.0])
    name, floor = designs.narrowest_floor({"pairs, raw": wide, "blocks, raw": narrow, "one": designs.summarize([1.0])})
    assert name == "blocks, raw" and floor == designs.noise_floor(narrow)
    assert designs.narrowest_floor({}) == (None, None)


def test_ratio_of_ratios_takes_the_nodes_own_difference_out():
    # B's node is 5 % faster whatever it runs (the node A/A); on its candidate it measured 1.26 over A's node.
    reference = [1.04, 1.06, 1.05, 1.05]
    ratios = [1.25, 1.27, 1.26, 1.26]
    found = designs.ratio_of_ratios(ratios, reference)
    assert found["n"] == 4 and found["n_reference"] == 4
    assert found["ratio"] == pytest.approx(1.2, rel=2e-3)
    interval = found["t_interval"]
    assert interval[0] < found["ratio"] < interval[1] and interval[1] / interval[0] < 1.05


def test_ratio_of_ratios_widens_with_the_reference_spread():
    ratios = [1.2, 1.22, 1.18, 1.21]
    narrow = designs.ratio_of_ratios(ratios, [1.0, 1.01, 0.99, 1.0])["t_interval"]
    wide = designs.ratio_of_ratios(ratios, [0.9, 1.1, 0.95, 1.05])["t_interval"]
    assert wide[1] / wide[0] > narrow[1] / narrow[0]


def test_ratio_of_ratios_without_enough_ratios_has_no_interval():
    found = designs.ratio_of_ratios([1.1], [1.0, 1.02])
    assert found["ratio"] == pytest.approx(1.1 / math.sqrt(1.02), rel=1e-9) and found["t_interval"] is None
    assert designs.ratio_of_ratios([], [1.0])["ratio"] is None
    with pytest.raises(designs.DesignError, match="^confidence: "):
        designs.ratio_of_ratios([1.0, 1.1], [1.0, 1.1], confidence=0.2)


def test_the_spread_of_an_aa_is_its_noise_around_its_own_ratio():
    # Two nodes whose tables differ: the same configuration reads 12 % faster on one, steadily.
    biased = designs.summarize([1.11, 1.13, 1.12, 1.12, 1.125, 1.115])
    assert designs.noise_floor(biased) > 0.12
    assert 0 < designs.noise_spread(biased) < 0.01
    assert designs.noise_spread(designs.summarize([1.1])) is None
    # Chosen by spread, the steady biased estimator wins over a noisy unbiased one.
    noisy = designs.summarize([1.05, 0.95, 1.04, 0.96, 1.0, 1.0])
    assert designs.narrowest_floor({"noisy": noisy, "biased": biased})[0] == "noisy"
    assert designs.narrowest_floor({"noisy": noisy, "biased": biased}, designs.noise_spread)[0] == "biased"
