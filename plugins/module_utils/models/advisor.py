# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The tactic advisor (seed 000, PaSTA): which performance or scalability tactic a store needs now.

An adaptive Hoeffding tree (river's HoeffdingAdaptiveTreeClassifier, the streaming tree PaSTA used from MOA) maps
monitoring features to a tactic. It is bootstrapped from labelled runs (benchmark runs where a tactic was applied
and its effect measured, or the knowledge base's examples) and learns online from the observed effect of each
tactic it recommended: an effect that helped confirms the tactic for those features, one that did not teaches
"none".

Decisions are triggered, as in PaSTA, only by an SLA breach (p99.9 latency above its bound, throughput below its
floor) or a saturation event (CPU, memory, disk or network at 90 % or more); otherwise the answer is "none". A
cost against oscillation keeps the advisor from undoing a recent tactic (an index dropped and re-created back and
forth): the inverse of a tactic applied within ``oscillation_window_s`` has ``oscillation_penalty`` taken off
its probability (1 forbids it inside the window).

The advisor's state is the stream it learned from (JSON lines: features, tactic, source), never a pickle: loading
replays it, so the same stream gives the same tree.
"""

from __future__ import annotations

import json
import math
import os
import random
import time

from ansible_collections.tactician.nosql.plugins.module_utils.core import imports
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import ModelError

TACTICS = (
    "none",
    "add_index",
    "drop_index",
    "add_shard",
    "add_node",
    "add_replica",
    "resize_cache",
    "change_compaction",
)
INVERSE = {"add_index": "drop_index", "drop_index": "add_index"}
"""Tactics that undo each other (the oscillation PaSTA warns about)."""

FEATURES = (
    "cpu",
    "memory",
    "disk",
    "network",
    "read_share",
    "write_share",
    "scan_share",
    "throughput",
    "p999_ms",
    "sla_p999_ms",
    "sla_min_throughput",
    "hit_ratio",
    "unindexed_query_share",
    "indexes",
    "index_write_share",
    "nodes",
    "replicas",
    "data_gb",
    "change_in_progress",
    "since_change_s",
)
"""Monitoring features per node or cluster window (PaSTA 4.1.3): resource usage in percent, the operation mix, the
KPIs and their SLA bounds, the cache hit ratio, how much of the query load filters on unindexed fields, the indexes
and the share of write work they cause, the topology, the data size, and whether a change runs and since when."""

SATURATION = 90.0
DEFAULT_OBSERVED_WEIGHT = 5.0
"""An example observed on this cluster (a tactic's measured effect) counts as this many bootstrap examples, so the
tree follows what this cluster does once the generic knowledge no longer holds."""
OBSERVED_SOURCES = ("observed", "outcome", "benchmark")
"""Sources of measured examples (a tactic's effect seen on this cluster, or measured in a benchmark run of it)."""
STATE_SCHEMA = "tactician.advisor/v1"


class AdvisorError(ModelError, ValueError):
    """Bad input to the advisor; the message names the field and what is allowed."""


def _river_tree():
    return imports.require("river.tree", AdvisorError, "the tactic advisor")


def features(sample):
    """The advisor's feature dict from a sample mapping: every FEATURES key as a float (missing ones 0), unknown
    keys refused by name."""
    if not isinstance(sample, dict):
        raise AdvisorError("features: expected a mapping of %s" % ", ".join(FEATURES))
    out = {}
    for key, value in sample.items():
        if key not in FEATURES:
            raise AdvisorError("features.%s: unknown feature; allowed: %s" % (key, ", ".join(FEATURES)))
        if isinstance(value, bool):
            value = 1.0 if value else 0.0
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise AdvisorError("features.%s: %r is not a finite number" % (key, value))
        out[key] = float(value)
    return {key: out.get(key, 0.0) for key in FEATURES}


def triggers(x, saturation=SATURATION):
    """Why a decision is due: SLA breaches and saturation events of the feature dict x (empty: none)."""
    reasons = []
    if x["sla_p999_ms"] > 0 and x["p999_ms"] > x["sla_p999_ms"]:
        reasons.append("p99.9 latency %.1f ms above the SLA's %.1f ms" % (x["p999_ms"], x["sla_p999_ms"]))
    if x["sla_min_throughput"] > 0 and x["throughput"] < x["sla_min_throughput"]:
        reasons.append("throughput %.0f ops/s below the SLA's %.0f" % (x["throughput"], x["sla_min_throughput"]))
    for resource in ("cpu", "memory", "disk", "network"):
        if x[resource] >= saturation:
            reasons.append("%s at %.0f %% (saturation at %.0f %%)" % (resource, x[resource], saturation))
    return reasons


def knowledge_base(count=400, seed=0):
    """Labelled examples from the tactic knowledge base (PaSTA section 5: YCSB runs showed which tactic helps where):

    - queries filtering on unindexed fields, read-heavy, latency breached -> add_index;
    - write-heavy with index maintenance a large share of the writes -> drop_index;
    - CPU saturated, read-heavy, cache hits high -> add_replica (reads spread over more copies);
    - CPU or disk saturated, write-heavy -> add_shard (writes spread over more masters / token ranges);
    - memory saturated or data far beyond memory with a low hit ratio and memory to spare -> resize_cache;
    - read latency breached with many SSTables' worth of write-heavy history (disk busy, reads slow) ->
      change_compaction;
    - nothing breached -> none.
    Returns [(features, tactic)]."""
    rng = random.Random(seed)
    out = []

    def base():
        return {
            "cpu": rng.uniform(10, 70),
            "memory": rng.uniform(20, 70),
            "disk": rng.uniform(5, 60),
            "network": rng.uniform(5, 50),
            "throughput": rng.uniform(500, 20000),
            "p999_ms": rng.uniform(1, 8),
            "sla_p999_ms": 10.0,
            "sla_min_throughput": 0.0,
            "hit_ratio": rng.uniform(0.6, 1.0),
            "unindexed_query_share": rng.uniform(0, 0.05),
            "indexes": float(rng.randint(0, 3)),
            "index_write_share": rng.uniform(0, 0.1),
            "nodes": float(rng.choice([1, 3, 6])),
            "replicas": float(rng.choice([1, 2, 3])),
            "data_gb": rng.uniform(1, 50),
            "change_in_progress": 0.0,
            "since_change_s": rng.uniform(600, 7200),
        }

    def mix(read):
        scan = rng.uniform(0, 0.1) * read
        return {"read_share": read - scan, "scan_share": scan, "write_share": 1 - read}

    makers = []

    def add_index():
        x = base() | mix(rng.uniform(0.7, 1.0))
        x.update(unindexed_query_share=rng.uniform(0.2, 0.8), p999_ms=rng.uniform(12, 60), cpu=rng.uniform(40, 95))
        return x, "add_index"

    def drop_index():
        x = base() | mix(rng.uniform(0.0, 0.3))
        x.update(indexes=float(rng.randint(2, 6)), index_write_share=rng.uniform(0.3, 0.7), p999_ms=rng.uniform(11, 40))
        return x, "drop_index"

    def add_replica():
        x = base() | mix(rng.uniform(0.75, 1.0))
        x.update(cpu=rng.uniform(90, 100), hit_ratio=rng.uniform(0.85, 1.0), p999_ms=rng.uniform(5, 30))
        return x, "add_replica"

    def add_shard():
        x = base() | mix(rng.uniform(0.0, 0.4))
        x.update(cpu=rng.uniform(90, 100), disk=rng.uniform(60, 100), p999_ms=rng.uniform(8, 40))
        return x, "add_shard"

    def resize_cache():
        x = base() | mix(rng.uniform(0.6, 1.0))
        x.update(hit_ratio=rng.uniform(0.1, 0.5), memory=rng.uniform(20, 60), p999_ms=rng.uniform(11, 30))
        x.update(cpu=rng.uniform(20, 70))
        return x, "resize_cache"

    def change_compaction():
        x = base() | mix(rng.uniform(0.5, 0.9))
        x.update(disk=rng.uniform(90, 100), cpu=rng.uniform(40, 80), hit_ratio=rng.uniform(0.6, 0.9))
        x.update(p999_ms=rng.uniform(15, 50))
        return x, "change_compaction"

    def none():
        x = base() | mix(rng.uniform(0, 1))
        return x, "none"

    makers = [add_index, drop_index, add_replica, add_shard, resize_cache, change_compaction, none, none]
    for index in range(count):
        x, label = makers[index % len(makers)]()
        out.append((features(x), label))
    rng.shuffle(out)
    return out


class TacticAdvisor:
    """Hoeffding adaptive tree over FEATURES -> TACTICS, with triggers and the cost against oscillation.

    state_file: JSON lines of what it learned (replayed on load, appended on learn); None keeps it in memory."""

    def __init__(
        self,
        state_file=None,
        saturation=SATURATION,
        oscillation_window_s=3600.0,
        oscillation_penalty=0.5,
        grace_period=50,
        seed=0,
        observed_weight=DEFAULT_OBSERVED_WEIGHT,
    ):
        tree = _river_tree()
        self.model = tree.HoeffdingAdaptiveTreeClassifier(grace_period=grace_period, seed=seed)
        self.state_file = state_file
        self.saturation = float(saturation)
        self.oscillation_window_s = float(oscillation_window_s)
        self.oscillation_penalty = float(oscillation_penalty)
        if isinstance(observed_weight, bool) or not isinstance(observed_weight, (int, float)) or observed_weight <= 0:
            raise AdvisorError("observed_weight: %r is not a number > 0" % (observed_weight,))
        self.observed_weight = float(observed_weight)
        self.learned = 0
        self.applied = []  # [(time, tactic)]
        if state_file and os.path.exists(state_file):
            with open(state_file, encoding="utf-8") as handle:
                for number, line in enumerate(handle, start=1):
                    if not line.strip():
                        continue
                    try:
                        item = json.loads(line)
                    except ValueError:
                        raise AdvisorError("state_file: %s line %d is not JSON" % (state_file, number)) from None
                    if item.get("schema") == STATE_SCHEMA:
                        continue
                    if "applied" in item:
                        self.applied.append((float(item["at"]), item["applied"]))
                        continue
                    self.model.learn_one(
                        features(item["features"]), _tactic(item["tactic"]), w=self._weight(item.get("source"))
                    )
                    self.learned += 1

    def _append(self, item):
        if not self.state_file:
            return
        directory = os.path.dirname(os.path.abspath(self.state_file))
        os.makedirs(directory, exist_ok=True)
        new = not os.path.exists(self.state_file)
        with open(self.state_file, "a", encoding="utf-8") as handle:
            if new:
                handle.write(json.dumps({"schema": STATE_SCHEMA}) + "\n")
            handle.write(json.dumps(item, sort_keys=True) + "\n")

    def _weight(self, source):
        """Measured examples (OBSERVED_SOURCES) weigh observed_weight; knowledge base examples weigh 1."""
        return self.observed_weight if source in OBSERVED_SOURCES else 1.0

    def learn(self, sample, tactic, source="observed"):
        """Learn one labelled example (and keep it in the state file)."""
        x = features(sample)
        label = _tactic(tactic)
        self.model.learn_one(x, label, w=self._weight(source))
        self.learned += 1
        self._append({"features": x, "tactic": label, "source": source})

    def bootstrap(self, examples, source="bootstrap"):
        """Learn a list of (features, tactic), e.g. knowledge_base() or labelled benchmark runs."""
        for sample, tactic in examples:
            self.learn(sample, tactic, source)

    def decide(self, sample, now=None):
        """The tactic for this sample: {"tactic", "triggered", "reasons", "probabilities", "suppressed",
        "elapsed_ms"}."""
        started = time.perf_counter()
        x = features(sample)
        now = time.time() if now is None else float(now)
        reasons = triggers(x, self.saturation)
        result = {"triggered": bool(reasons), "reasons": reasons, "suppressed": None}
        if not reasons:
            result.update(tactic="none", probabilities={})
        elif x["change_in_progress"] > 0:
            result.update(tactic="none", probabilities={}, reasons=reasons + ["a change is in progress"])
        else:
            probabilities = {t: float(p) for t, p in self.model.predict_proba_one(x).items()}
            ranked = sorted(probabilities.items(), key=lambda item: (-item[1], TACTICS.index(item[0])))
            raw = ranked[0][0] if ranked else "none"
            recent = {t: at for at, t in self.applied if now - at <= self.oscillation_window_s}
            scores = {
                t: p - (self.oscillation_penalty if INVERSE.get(t) in recent else 0.0) for t, p in probabilities.items()
            }
            scores.setdefault("none", 0.0)
            choice = max(scores, key=lambda t: (scores[t], -TACTICS.index(t)))
            if choice != raw:
                result["suppressed"] = "%s would undo %s applied %.0f s ago (oscillation cost %.2f)" % (
                    raw,
                    INVERSE[raw],
                    now - recent[INVERSE[raw]],
                    self.oscillation_penalty,
                )
            result.update(tactic=choice, probabilities={t: round(p, 4) for t, p in ranked})
        result["elapsed_ms"] = round(1000.0 * (time.perf_counter() - started), 3)
        return result

    def applied_tactic(self, tactic, at=None):
        """Record that a tactic was applied (for the oscillation cost)."""
        at = time.time() if at is None else float(at)
        self.applied.append((at, _tactic(tactic)))
        self._append({"applied": _tactic(tactic), "at": at})

    def outcome(self, sample, tactic, improved):
        """Learn from the observed effect of a tactic applied for sample: confirmed when it improved the KPI that
        triggered it, else "none" is what those features should have led to."""
        self.learn(sample, tactic if improved else "none", source="outcome")


def read_runs(path):
    """The items of a JSON-lines file of labelled runs (an advisor state file, or the runs that
    benchmarks/tactic_bootstrap.py measured), as check_runs takes them. AdvisorError names the line."""
    if not os.path.isfile(path):
        raise AdvisorError("advisor_bootstrap: %s is not a file" % path)
    items = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except ValueError:
                raise AdvisorError("advisor_bootstrap: %s line %d is not JSON" % (path, number)) from None
    return items


def check_runs(items, where="advisor_bootstrap"):
    """[(features, tactic)] of labelled runs [{features, tactic, ...}]: other keys (the measured before and after)
    are for people and ignored; "applied" records and the schema line are skipped. AdvisorError names the item."""
    if not isinstance(items, list):
        raise AdvisorError("%s: expected a list of labelled runs {features, tactic}" % where)
    runs = []
    for number, item in enumerate(items, start=1):
        if isinstance(item, dict) and (item.get("schema") == STATE_SCHEMA or "applied" in item):
            continue
        if not isinstance(item, dict) or "features" not in item or "tactic" not in item:
            raise AdvisorError("%s: run %d has no features and tactic" % (where, number))
        try:
            runs.append((features(item["features"]), _tactic(item["tactic"])))
        except AdvisorError as exc:
            raise AdvisorError("%s: run %d: %s" % (where, number, exc)) from None
    if not runs:
        raise AdvisorError("%s: no labelled runs" % where)
    return runs


def _tactic(value):
    if value not in TACTICS:
        raise AdvisorError("tactic: %r is not allowed; choose one of %s" % (value, ", ".join(TACTICS)))
    return value
