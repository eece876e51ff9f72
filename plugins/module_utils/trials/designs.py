# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Measurement designs that beat run-to-run noise: two configurations measured in interleaved windows on one warm
node (ABBA order, so that a drift over time weighs on both arms alike), paired by adjacent window (or by ABBA
block of four windows, which cancels a drift linear within the block), and the ratios summarized with a 95 %
interval; an A/A design (the same configuration in both arms) gives the noise
floor, and an effect is only called one when its interval lies wholly outside that floor.

What the design takes from the literature: TUNA (EuroSys 2025, MLOS) and Abedi & Brecht (ICPE 2017) both find
that on shared or cloud machines a single before/after window says little, that back-to-back repeated trials
(interleaved, "randomized multiple interleaved trials") cancel slow drift, and that the spread of a
configuration against itself must be measured, not assumed. Ratios of adjacent windows are summarized on their
logarithms (a slow window of either arm weighs the same), with Student's t and, where the ratios are skewed or
few, a bootstrap percentile interval and the count of pairs each arm won (a sign test), which assume no normality.

Pure Python; the scipy-free t quantile of core.stats.
"""

from __future__ import annotations

import math
import random
import statistics

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TrialError
from ansible_collections.tactician.nosql.plugins.module_utils.core.stats import t_quantile

ORDERS = ("abba", "random")


class DesignError(TrialError):
    """A design asked for with bad parameters, or windows that do not make pairs."""


def window_order(pairs, order="abba", seed=None):
    """Arm labels ("A" the reference, "B" the candidate) of 2 x pairs windows: ABBA ABBA ... (order "abba"), or
    each pair in a random order (order "random", seeded). Every pair holds one window of each arm."""
    if not isinstance(pairs, int) or isinstance(pairs, bool) or pairs < 1:
        raise DesignError("pairs: %r must be a whole number of at least 1" % (pairs,))
    if order not in ORDERS:
        raise DesignError("order: %r is not allowed; choose one of %s" % (order, ", ".join(ORDERS)))
    rng = random.Random(seed)
    labels = []
    for index in range(pairs):
        if order == "abba":
            labels += ["A", "B"] if index % 2 == 0 else ["B", "A"]
        else:
            labels += ["A", "B"] if rng.random() < 0.5 else ["B", "A"]
    return labels


def pair_ratios(labels, values):
    """B / A of each pair of adjacent windows (windows 0-1, 2-3, ...). A window without a value (None) drops its
    pair."""
    if len(labels) != len(values) or len(labels) % 2:
        raise DesignError("windows: %d labels and %d values do not make whole pairs" % (len(labels), len(values)))
    ratios = []
    for index in range(0, len(labels), 2):
        pair = dict(zip(labels[index : index + 2], values[index : index + 2], strict=True))
        if set(pair) != {"A", "B"}:
            raise DesignError("windows %d-%d: a pair needs one A and one B window" % (index, index + 1))
        if pair["A"] and pair["B"] and pair["A"] > 0 and pair["B"] > 0:
            ratios.append(pair["B"] / pair["A"])
    return ratios


def block_ratios(labels, values):
    """B / A of each block of four windows in ABBA or BAAB order: the geometric mean of its two B windows over
    that of its two A windows. A drift that is linear within the block (a node warming up, a page cache filling)
    cancels exactly, where the ratio of one adjacent pair carries it. A block with a window without a value is
    dropped; a block whose arms are not placed symmetrically (ABAB) is refused, as it would not cancel a drift."""
    if len(labels) != len(values) or len(labels) % 4:
        raise DesignError("windows: %d labels and %d values do not make whole blocks of 4" % (len(labels), len(values)))
    ratios = []
    for index in range(0, len(labels), 4):
        block = labels[index : index + 4]
        if block not in (["A", "B", "B", "A"], ["B", "A", "A", "B"]):
            raise DesignError(
                "windows %d-%d: %s is not an ABBA or BAAB block" % (index, index + 3, "".join(map(str, block)))
            )
        found = values[index : index + 4]
        if not all(value and value > 0 for value in found):
            continue
        arms = {"A": 1.0, "B": 1.0}
        for label, value in zip(block, found, strict=True):
            arms[label] *= value
        ratios.append(math.sqrt(arms["B"] / arms["A"]))
    return ratios


def summarize(ratios, confidence=0.95, resamples=4000, seed=1):
    """The geometric mean of the ratios with its t interval (on the logarithms), a bootstrap percentile interval
    of the same, the pairs B won and lost, and n. Intervals are None with fewer than 2 ratios."""
    if not 0.5 <= confidence < 1.0:
        raise DesignError("confidence: %r must lie in [0.5, 1)" % (confidence,))
    logs = [math.log(r) for r in ratios if r and r > 0]
    out = {
        "n": len(logs),
        "ratio": math.exp(statistics.mean(logs)) if logs else None,
        "t_interval": None,
        "bootstrap_interval": None,
        "b_won": sum(1 for x in logs if x > 0),
        "a_won": sum(1 for x in logs if x < 0),
    }
    if len(logs) < 2:
        return out
    mean = statistics.mean(logs)
    half = t_quantile(0.5 + confidence / 2.0, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    out["t_interval"] = [math.exp(mean - half), math.exp(mean + half)]
    rng = random.Random(seed)
    means = sorted(statistics.mean(rng.choices(logs, k=len(logs))) for _resample in range(int(resamples)))
    low = means[int(math.floor((1.0 - confidence) / 2.0 * (len(means) - 1)))]
    high = means[int(math.ceil((1.0 + confidence) / 2.0 * (len(means) - 1)))]
    out["bootstrap_interval"] = [math.exp(low), math.exp(high)]
    out["skewed"] = _skewed(logs)
    return out


def ratio_of_ratios(ratios, reference, confidence=0.95):
    """{"ratio", "t_interval", "n", "n_reference"}: the geometric mean of ratios over that of reference, with a
    Welch t interval on the logarithms (two independent samples, unequal spreads). The design of two nodes side by
    side: reference holds the node A/A's ratios (both nodes on the same configuration), ratios the comparison's
    (B's node on its candidate), so that what one node does better than the other whatever it runs is taken out.
    The interval is None with fewer than 2 ratios on either side."""
    if not 0.5 <= confidence < 1.0:
        raise DesignError("confidence: %r must lie in [0.5, 1)" % (confidence,))
    logs = [math.log(r) for r in ratios if r and r > 0]
    ref = [math.log(r) for r in reference if r and r > 0]
    out = {"n": len(logs), "n_reference": len(ref), "ratio": None, "t_interval": None}
    if not logs or not ref:
        return out
    diff = statistics.mean(logs) - statistics.mean(ref)
    out["ratio"] = math.exp(diff)
    if len(logs) < 2 or len(ref) < 2:
        return out
    var_a = statistics.variance(logs) / len(logs)
    var_b = statistics.variance(ref) / len(ref)
    if var_a + var_b == 0:
        out["t_interval"] = [out["ratio"], out["ratio"]]
        return out
    df = (var_a + var_b) ** 2 / (var_a**2 / (len(logs) - 1) + var_b**2 / (len(ref) - 1))
    half = t_quantile(0.5 + confidence / 2.0, max(1.0, df)) * math.sqrt(var_a + var_b)
    out["t_interval"] = [math.exp(diff - half), math.exp(diff + half)]
    return out


def _skewed(logs):
    """True when the log ratios look far from normal (|sample skewness| > 1 with 5 or more): then the
    nonparametric interval is the one to read."""
    if len(logs) < 5:
        return False
    mean, sd = statistics.mean(logs), statistics.pstdev(logs)
    if sd == 0:
        return False
    return abs(sum(((x - mean) / sd) ** 3 for x in logs) / len(logs)) > 1.0


def interval_of(summary):
    """The interval to read: the bootstrap one when the ratios are skewed, else the t one."""
    if summary.get("skewed") and summary.get("bootstrap_interval"):
        return summary["bootstrap_interval"]
    return summary.get("t_interval")


def noise_floor(aa_summary):
    """Half-width of the A/A design's interval around 1, as a fraction (0.03 = +-3 %): the widest distance of the
    interval's ends from 1. None without an interval."""
    bounds = interval_of(aa_summary)
    if not bounds:
        return None
    return max(abs(bounds[0] - 1.0), abs(bounds[1] - 1.0))


def noise_spread(aa_summary):
    """Half-width of the A/A design's interval around its own ratio, as a fraction: the noise alone, where
    noise_floor also holds what one side does better than the other whatever it runs (two nodes whose tables
    differ, say). The floor of a comparison whose A/A ratio is taken out (ratio_of_ratios). None without an
    interval."""
    bounds = interval_of(aa_summary)
    ratio = aa_summary.get("ratio")
    if not bounds or not ratio or ratio <= 0:
        return None
    return max(bounds[1] / ratio - 1.0, 1.0 - bounds[0] / ratio)


def narrowest_floor(aa_summaries, measure=None):
    """(name, floor) of the estimator whose A/A design gives the narrowest floor, of {name: A/A summary}; (None,
    None) when none has one. Chosen on the A/A windows alone, before any effect is looked at, and then applied to
    every comparison of the same run: which way of pairing windows (adjacent pairs or ABBA blocks) and which
    throughput (raw or per unit of CPU speed) is least noisy depends on the machine's day (a CPU speed that jumps
    favours the speed; a steady one with a drifting node favours blocks of raw throughput). measure: the floor of
    an A/A summary (noise_floor, the default, or noise_spread)."""
    measure = measure or noise_floor
    best = (None, None)
    for name, summary in aa_summaries.items():
        floor = measure(summary)
        if floor is not None and (best[1] is None or floor < best[1]):
            best = (name, floor)
    return best


def verdict(summary, floor):
    """ "B better" / "B worse" when the effect's interval lies wholly above 1 + floor / below 1 - floor; "inside the
    noise floor" when the interval touches the floor band; "not measured" without an interval or a floor."""
    bounds = interval_of(summary)
    if not bounds or floor is None:
        return "not measured"
    if bounds[0] > 1.0 + floor:
        return "B better"
    if bounds[1] < 1.0 - floor:
        return "B worse"
    return "inside the noise floor"
