# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Iterated racing against real benchmark runs (seed 004, after irace): model-free static tuning.

Each iteration samples configurations (the first uniformly, with the given initial ones such as the default
seeded in; later ones around the elites, closer each iteration), then races them: every configuration still in
the race is evaluated on the next instance (a workload and a seed; each evaluation cold, the data destroyed and
loaded again by whoever evaluates); from ``first_test`` instances on, every ``each_test`` instances, the Friedman
test over the results so far and, when it rejects equality, its post-hoc comparison (Conover, as irace) drop the
configurations that are significantly worse than the best. A race ends when few configurations survive, its share
of the budget is spent or the instances run out; its survivors (the elites) carry their results into the next
race, so they are never re-evaluated on an instance they have run.

The racing is deterministic and resumable: the algorithm is replayed from the trial history (a JSON-lines file,
one evaluation per line) with the same seed, so ``ask()`` returns the evaluations the race needs next, and
``tell()`` appends their results. A playbook loops ask -> evaluate -> tell; a simulation passes a function to
``run()``. The budget is a number of evaluations, seconds of evaluation time (the sum recorded in the history, so
the replay stays deterministic), or both.

The statistics use scipy (the chi-square and t distributions); sampling uses Python's random with the seed.
"""

from __future__ import annotations

import json
import math
import os
import random
import time

from ansible_collections.tactician.nosql.plugins.module_utils.core import checks, imports
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError
from ansible_collections.tactician.nosql.plugins.module_utils.models import surrogate_design, surrogate_features
from ansible_collections.tactician.nosql.plugins.module_utils.planning import tuner

DEFAULT_FIRST_TEST = 5
DEFAULT_EACH_TEST = 1
DEFAULT_CONFIDENCE = 0.95
ESTIMATE_S = 60.0
"""Seconds an evaluation is assumed to take before any has run (a time budget's first iteration)."""
HISTORY_SCHEMA = "tactician.race/v1"


class RaceError(PlanningError, ValueError):
    """Bad input to the racing; the message names the field and what is allowed."""


class Pending(Exception):
    """Raised inside a replay when an evaluation has no result yet."""


def _stats():
    return imports.require("scipy.stats", RaceError, "the racing statistics")


# ------------------------------------------------------------------------------------------------ statistics
def _ranks(values):
    """Ranks of values, 1 = best (highest), ties averaged."""
    order = sorted(range(len(values)), key=lambda i: -values[i])
    ranks = [0.0] * len(values)
    position = 0
    while position < len(order):
        end = position
        while end + 1 < len(order) and values[order[end + 1]] == values[order[position]]:
            end += 1
        rank = (position + end) / 2.0 + 1.0
        for slot in range(position, end + 1):
            ranks[order[slot]] = rank
        position = end + 1
    return ranks


def friedman(matrix, confidence=DEFAULT_CONFIDENCE):
    """The Friedman test over results[instance][configuration] (higher is better) and its post-hoc comparison.

    Returns {"statistic", "p_value", "rank_sums", "best", "keep": [indexes not significantly worse than the
    best]}: with p >= 1 - confidence every configuration is kept; else those whose rank sum differs from the best's
    by less than the Conover critical difference t(1 - alpha/2, (n-1)(k-1)) sqrt(2 (n A - sum R^2) / ((n-1)(k-1)))."""
    n = len(matrix)
    k = len(matrix[0]) if n else 0
    if n < 2 or k < 2:
        return {"statistic": 0.0, "p_value": 1.0, "rank_sums": [0.0] * k, "best": 0, "keep": list(range(k))}
    ranks = [_ranks(row) for row in matrix]
    sums = [math.fsum(r[j] for r in ranks) for j in range(k)]
    a = math.fsum(x * x for r in ranks for x in r)
    c = n * k * (k + 1) ** 2 / 4.0
    best = min(range(k), key=lambda j: (sums[j], j))
    if a - c <= 1e-12:
        return {"statistic": 0.0, "p_value": 1.0, "rank_sums": sums, "best": best, "keep": list(range(k))}
    statistic = (k - 1) * math.fsum((s - n * (k + 1) / 2.0) ** 2 for s in sums) / (a - c)
    stats = _stats()
    p_value = float(stats.chi2.sf(statistic, k - 1))
    alpha = 1.0 - confidence
    keep = list(range(k))
    if p_value < alpha:
        df = (n - 1) * (k - 1)
        spread = 2.0 * (n * a - math.fsum(s * s for s in sums)) / df
        critical = float(stats.t.ppf(1.0 - alpha / 2.0, df)) * math.sqrt(max(spread, 0.0))
        keep = [j for j in range(k) if sums[j] - sums[best] < critical]
    return {"statistic": statistic, "p_value": p_value, "rank_sums": sums, "best": best, "keep": keep}


# ------------------------------------------------------------------------------------------------ history
class TrialHistory:
    """The trial history file: a header line, then one JSON line per evaluation."""

    def __init__(self, path):
        self.path = path
        self.trials = []
        self.header = None
        if path and os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                for number, line in enumerate(handle, start=1):
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        item = json.loads(line)
                    except ValueError:
                        raise RaceError("history: %s line %d is not JSON" % (path, number)) from None
                    if item.get("schema") == HISTORY_SCHEMA:
                        self.header = item
                    elif "config_key" in item and "instance" in item and "value" in item:
                        self.trials.append(item)
                    else:
                        raise RaceError(
                            "history: %s line %d is not a trial (config_key, instance, value)" % (path, number)
                        )

    def results(self):
        return {(t["config_key"], int(t["instance"])): t for t in self.trials}

    def start(self, header):
        """Write the header of a new history, or check that an existing one is for the same race."""
        if self.header is not None:
            for key in ("seed", "parameters", "ranges", "instances"):
                if self.header.get(key) != header.get(key):
                    raise RaceError(
                        "history: %s was written for another race (its %s differs); give a new history file"
                        % (self.path, key)
                    )
            return
        self.header = dict(header, schema=HISTORY_SCHEMA)
        self._header_written = False

    def append(self, trial):
        """Add a trial (the header goes first into a new file, so asking alone never writes anything)."""
        self.trials.append(trial)
        if self.path:
            directory = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(directory, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as handle:
                if not getattr(self, "_header_written", True):
                    handle.write(json.dumps(self.header, sort_keys=True) + "\n")
                    self._header_written = True
                handle.write(json.dumps(trial, sort_keys=True, default=str) + "\n")


# ------------------------------------------------------------------------------------------------ the race
def _number(field, value, minimum=None, integer=False):
    return checks.number(field, value, RaceError, minimum=minimum, integer=integer)


def check_results(results):
    """The runs a caller measured, as Race.tell takes them: [{config, index, value, elapsed_s, extra}].

    Each item needs config (the mapping ask gave), index (the instance's) and value (ops/s); numbers given as text
    (what a templated playbook passes) are read as numbers; any other key is kept as the run's extra record.
    RaceError names the item and field."""
    if not isinstance(results, list):
        raise RaceError("results: expected a list of {config, index, value[, elapsed_s]}")
    out = []
    for position, item in enumerate(results):
        field = "results[%d]" % position
        if not isinstance(item, dict):
            raise RaceError("%s: expected a mapping {config, index, value[, elapsed_s]}" % field)
        missing = [key for key in ("config", "index", "value") if key not in item]
        if missing:
            raise RaceError("%s: %s required (config, index, value)" % (field, ", ".join(missing)))
        if not isinstance(item["config"], dict):
            raise RaceError("%s.config: expected the configuration mapping ask returned" % field)
        numbers = {}
        for key in ("index", "value", "elapsed_s"):
            value = item.get(key)
            if value is None:
                continue
            if isinstance(value, str):
                try:
                    value = float(value)
                except ValueError:
                    raise RaceError("%s.%s: %r is not a number" % (field, key, value)) from None
            numbers[key] = _number("%s.%s" % (field, key), value, 0, integer=key == "index")
        extra = {k: v for k, v in item.items() if k not in ("config", "index", "value", "elapsed_s")}
        out.append(
            {
                "config": item["config"],
                "index": numbers["index"],
                "value": numbers["value"],
                "elapsed_s": numbers.get("elapsed_s", 0.0),
                "extra": {"run": extra} if extra else None,
            }
        )
    return out


class Race:
    """An iterated race over the tuned parameters of a feature space (only its configuration part is used).

    instances: [{"workload": ..., "seed": ...}] in the order they are run (cycled with seed + 1000 * round when a
    race needs more). budget_evaluations / budget_s: at least one. initial: configurations seeded into the first
    iteration (the default). feasible: surrogate.feasible_by_catalog's rule; fixed: {parameter: value} kept out."""

    def __init__(
        self,
        space,
        instances,
        budget_evaluations=None,
        budget_s=None,
        seed=0,
        initial=None,
        feasible=None,
        fixed=None,
        first_test=DEFAULT_FIRST_TEST,
        each_test=DEFAULT_EACH_TEST,
        confidence=DEFAULT_CONFIDENCE,
        min_survivors=None,
        iterations=None,
        max_iterations=100,
        heap_mb=None,
        memory_mb=None,
        estimate_s=ESTIMATE_S,
    ):
        if not isinstance(space, surrogate_features.FeatureSpace):
            raise RaceError("space: expected a surrogate.FeatureSpace")
        self.space = space
        if not isinstance(instances, (list, tuple)) or not instances:
            raise RaceError("instances: give a non-empty list of {workload, seed}")
        for index, item in enumerate(instances):
            if not isinstance(item, dict) or "workload" not in item:
                raise RaceError("instances[%d]: expected a mapping with workload (and seed)" % index)
        self.instances = [dict(item, seed=item.get("seed", index)) for index, item in enumerate(instances)]
        if budget_evaluations is None and budget_s is None:
            raise RaceError("budget: give budget_evaluations, budget_s or both")
        self.budget_evaluations = (
            None if budget_evaluations is None else _number("budget_evaluations", budget_evaluations, 1, integer=True)
        )
        self.budget_s = None if budget_s is None else _number("budget_s", budget_s, 1)
        self.seed = _number("seed", seed, 0, integer=True)
        self.heap_mb = None if heap_mb is None else _number("heap_mb", heap_mb, 1)
        self.memory_mb = None if memory_mb is None else _number("memory_mb", memory_mb, 1)
        self.fixed = tuner._check_fixed(space, fixed)
        self.free = [name for name in space.parameters if name not in self.fixed]
        if not self.free:
            raise RaceError("fixed: every tuned parameter is fixed; nothing is left to race")
        self.initial = []
        for index, config in enumerate(initial or []):
            try:
                complete = space.complete(config, heap_mb=self.heap_mb, memory_mb=self.memory_mb)
            except surrogate_features.SurrogateError as exc:
                raise RaceError("initial[%d].%s" % (index, exc)) from None
            complete.update(self.fixed)
            self.initial.append(complete)
        self.feasible = feasible
        self.first_test = _number("first_test", first_test, 1, integer=True)
        self.each_test = _number("each_test", each_test, 1, integer=True)
        confidence = _number("confidence", confidence)
        if not 0.5 <= confidence < 1:
            raise RaceError("confidence: %r is not in [0.5, 1)" % confidence)
        self.confidence = confidence
        n_param = len(self.free)
        self.iterations = iterations or int(math.floor(2 + math.log2(n_param)))
        self.min_survivors = min_survivors or int(math.floor(2 + math.log2(n_param)))
        self.max_iterations = _number("max_iterations", max_iterations, 1, integer=True)
        self.estimate_s = _number("estimate_s", estimate_s, 0.001)

    # -------------------------------------------------------------------------------------------- sampling
    def _instance(self, index):
        base = self.instances[index % len(self.instances)]
        rounds = index // len(self.instances)
        return dict(base, seed=int(base["seed"]) + 1000 * rounds)

    def _ok(self, config):
        if self.feasible is None:
            return True
        return surrogate_design.check_feasible(self.feasible, config)[0]

    def _uniform(self, rng):
        unit = [rng.random() for _name in self.space.parameters]
        config = self.space.decode_unit(unit)
        config.update(self.fixed)
        return config

    def _around(self, rng, parent, iteration, count):
        """A configuration near parent: numbers from a normal truncated to the range, with a spread that shrinks
        with the iterations; a choice kept with a probability that grows with them."""
        unit = tuner.to_unit(self.space, parent)
        spread = 0.5 * (1.0 / max(count, 2)) ** ((iteration - 1) / max(len(self.free), 1))
        keep = (iteration - 1) / self.iterations
        for position, name in enumerate(self.space.parameters):
            if name in self.fixed:
                continue
            if self.space.kind(name) in ("enum", "bool"):
                choices = len(self.space.range(name))
                if rng.random() >= keep + (1 - keep) / choices:
                    unit[position] = (rng.randrange(choices) + 0.5) / choices
            else:
                for _try in range(20):
                    value = rng.gauss(unit[position], spread)
                    if 0.0 <= value <= 1.0:
                        break
                unit[position] = min(1.0, max(0.0, value))
        config = self.space.decode_unit(unit)
        config.update(self.fixed)
        return config

    def _sample(self, rng, iteration, count, elites, known):
        out = []
        if iteration == 1:
            for config in self.initial:
                if len(out) < count and tuner.config_key(config) not in known and self._ok(config):
                    out.append(config)
                    known.add(tuner.config_key(config))
        tries = 0
        weights = [len(elites) - z for z in range(len(elites))]
        while len(out) < count and tries < 200 * max(count, 1):
            tries += 1
            if iteration == 1 or not elites:
                config = self._uniform(rng)
            else:
                parent = rng.choices(elites, weights=weights)[0]
                config = self._around(rng, parent["config"], iteration, count)
            key = tuner.config_key(config)
            if key in known or not self._ok(config):
                continue
            known.add(key)
            out.append(config)
        return out

    # -------------------------------------------------------------------------------------------- replay
    def replay(self, evaluate):
        """Run the race, asking evaluate(config, instance_index, instance) -> (value or None, seconds) for every
        result it needs. A None (no result yet) is collected; at the next point where the race would decide
        something from the results (a statistical test, the end of a race) Pending(collected) is raised, so a
        caller learns every evaluation it can run before the next decision. Returns the result dict."""
        rng = random.Random(self.seed)
        state = {"used": 0, "seconds": 0.0}
        configs = {}
        known = set()
        elites = []
        log = []
        pending = []

        def spent():
            if self.budget_evaluations is not None and state["used"] >= self.budget_evaluations:
                return True
            return self.budget_s is not None and state["seconds"] >= self.budget_s

        def run_round(alive, index):
            for record in alive:
                key = (record["key"], index)
                if key in record["results"]:
                    continue
                if self.budget_evaluations is not None and state["used"] >= self.budget_evaluations:
                    return  # the budget ends mid-round: only complete rounds are compared
                value, seconds = evaluate(record["config"], index, self._instance(index))
                state["used"] += 1
                state["seconds"] += seconds
                if value is None:
                    pending.append((record["config"], index, self._instance(index)))
                    record["results"][key] = None
                else:
                    record["results"][key] = float(value)

        def decide():
            if pending:
                raise Pending(list(pending))

        for iteration in range(1, self.max_iterations + 1):
            if spent():
                break
            j = min(iteration, self.iterations)
            # The budget in evaluations; a budget in seconds is turned into one from the mean time per evaluation
            # so far (ESTIMATE_S per evaluation before any ran), as irace does with a time budget.
            total = self.budget_evaluations
            if self.budget_s is not None:
                per = state["seconds"] / state["used"] if state["used"] and state["seconds"] > 0 else self.estimate_s
                by_time = int(self.budget_s / per)
                total = by_time if total is None else min(total, by_time)
            remaining = max(0, total - state["used"])
            share = remaining / max(1, self.iterations - iteration + 1)
            count = int(share // (self.first_test + min(5, iteration)))
            wanted = max(0, count - len(elites))
            if iteration > 1 and wanted < 1:
                # A small budget leaves no room for irace's share: race one new configuration sampled around the
                # elites while the rest of the budget can take it to its first test, instead of leaving it unused.
                if remaining < self.first_test:
                    break
                wanted = 1
            if iteration == 1:
                wanted = max(wanted, min(len(self.initial) + 2, self.min_survivors + 2))
            fresh = self._sample(rng, j, wanted, elites, known)
            if not fresh and iteration > 1:
                break
            alive = list(elites)
            for config in fresh:
                record = {
                    "id": len(configs) + 1,
                    "config": config,
                    "key": tuner.config_key(config),
                    "results": {},
                    "iteration": iteration,
                }
                configs[record["key"]] = record
                alive.append(record)
            raced = len(alive)
            # A race runs at least until its first statistical test (first_test instances each; elites keep theirs).
            to_first_test = sum(
                max(0, self.first_test - sum(1 for value in r["results"].values() if value is not None)) for r in alive
            )
            race_budget = state["used"] + max(len(alive), to_first_test, share)
            eliminated = []
            done = 0
            while True:
                if spent() or (race_budget is not None and state["used"] >= race_budget):
                    break
                if done >= 10 * len(self.instances):
                    break
                run_round(alive, done)
                done += 1
                if spent():
                    break
                if len(alive) > 1 and done >= self.first_test and (done - self.first_test) % self.each_test == 0:
                    decide()
                    matrix = [[r["results"][(r["key"], i)] for r in alive] for i in range(done)]
                    test = friedman(matrix, self.confidence)
                    eliminated.extend(
                        {"id": alive[j]["id"], "after_instances": done, "p_value": round(test["p_value"], 6)}
                        for j in range(len(alive))
                        if j not in test["keep"]
                    )
                    alive = [alive[j] for j in test["keep"]]
                if len(alive) <= self.min_survivors and done >= self.first_test:
                    break
            decide()
            # Only instances every survivor has run are compared (a race cut by the budget may end mid-round).
            complete = [i for i in range(done) if all((r["key"], i) in r["results"] for r in alive)]
            if complete:
                ranks = [_ranks([r["results"][(r["key"], i)] for r in alive]) for i in complete]
                sums = [math.fsum(rk[j] for rk in ranks) for j in range(len(alive))]
            else:
                sums = [0.0] * len(alive)
            means = [_mean([v for v in r["results"].values() if v is not None]) for r in alive]
            order = sorted(range(len(alive)), key=lambda j: (sums[j], -means[j], alive[j]["id"]))
            elites = [alive[j] for j in order[: self.min_survivors]]
            log.append(
                {
                    "iteration": iteration,
                    "new": len(fresh),
                    "raced": raced,
                    "instances": done,
                    "eliminated": eliminated,
                    "elites": [r["id"] for r in elites],
                    "evaluations_used": state["used"],
                }
            )
            if spent():
                break
        return self._result(configs, elites, log, state)

    def _result(self, configs, elites, log, state):
        def summary(record):
            values = list(record["results"].values())
            return {
                "id": record["id"],
                "config": record["config"],
                "instances": len(values),
                "mean": round(_mean(values), 3),
                "iteration": record["iteration"],
            }

        return {
            "best": summary(elites[0]) if elites else None,
            "elites": [summary(r) for r in elites],
            "configurations": len(configs),
            "evaluations": state["used"],
            "evaluation_s": round(state["seconds"], 3),
            "iterations": log,
        }

    def header(self):
        space = self.space.to_dict()
        return {
            "seed": self.seed,
            "parameters": list(self.space.parameters),
            "ranges": space["ranges"],
            "fixed": self.fixed,
            "instances": self.instances,
            "budget_evaluations": self.budget_evaluations,
            "budget_s": self.budget_s,
            "initial": self.initial,
            "first_test": self.first_test,
            "each_test": self.each_test,
            "confidence": self.confidence,
            "memory_mb": self.memory_mb,
            "heap_mb": self.heap_mb,
            "estimate_s": self.estimate_s,
            "space": space,
        }

    def default_config(self):
        """The default configuration of the raced parameters (the fixed ones at their value)."""
        config = self.space.complete({}, heap_mb=self.heap_mb, memory_mb=self.memory_mb)
        config.update(self.fixed)
        return config

    @classmethod
    def from_history(cls, path):
        """The race a history file was written for (its header holds the space and the settings)."""
        history = TrialHistory(path)
        header = history.header
        if not header:
            raise RaceError("history: %s has no race header (is it a trial history?)" % path)
        try:
            space = surrogate_features.FeatureSpace.from_dict(header["space"])
        except (KeyError, surrogate_features.SurrogateError) as exc:
            raise RaceError("history: %s header: %s" % (path, exc)) from None
        feasible = None
        if header.get("memory_mb") or header.get("heap_mb"):
            feasible = surrogate_design.feasible_by_catalog(
                space.catalog, memory_mb=header.get("memory_mb"), heap_mb=header.get("heap_mb")
            )
        return cls(
            space,
            header["instances"],
            feasible=feasible,
            budget_evaluations=header.get("budget_evaluations"),
            budget_s=header.get("budget_s"),
            seed=header.get("seed", 0),
            initial=header.get("initial"),
            heap_mb=header.get("heap_mb"),
            memory_mb=header.get("memory_mb"),
            fixed=header.get("fixed"),
            first_test=header.get("first_test", DEFAULT_FIRST_TEST),
            each_test=header.get("each_test", DEFAULT_EACH_TEST),
            confidence=header.get("confidence", DEFAULT_CONFIDENCE),
        )

    # -------------------------------------------------------------------------------------------- ask / tell
    def ask(self, history):
        """(pending, result): the evaluations the race needs before its next decision, grouped by configuration
        as [{"config_key", "config", "instances": [{"index", "workload", "seed", ...}]}], and the result; pending
        is empty when the race has finished (result["finished"] is then true)."""
        if not isinstance(history, TrialHistory):
            history = TrialHistory(history)
        history.start(self.header())
        known = history.results()

        def evaluate(config, index, instance):
            trial = known.get((tuner.config_key(config), index))
            if trial is None:
                return None, 0.0
            return float(trial["value"]), float(trial.get("elapsed_s") or 0.0)

        try:
            result = self.replay(evaluate)
        except Pending as exc:
            grouped = {}
            for config, index, instance in exc.args[0]:
                key = tuner.config_key(config)
                entry = grouped.setdefault(key, {"config_key": key, "config": config, "instances": []})
                entry["instances"].append(dict(instance, index=index))
            count = sum(len(entry["instances"]) for entry in grouped.values())
            return list(grouped.values()), {
                "finished": False,
                "pending": count,
                "evaluations": len(known),
                "leader": _leader(known.values()),
            }
        return [], dict(result, finished=True)

    def tell(self, history, config, index, value, elapsed_s=0.0, extra=None):
        """Append one result to the history (value: ops/s, higher is better)."""
        if not isinstance(history, TrialHistory):
            history = TrialHistory(history)
        history.start(self.header())
        value = _number("value", value)
        index = _number("index", index, 0, integer=True)
        complete = self.space.complete(config, heap_mb=self.heap_mb, memory_mb=self.memory_mb)
        complete.update(self.fixed)
        key = tuner.config_key(complete)
        if (key, index) in history.results():
            raise RaceError("index: configuration already has a result on instance %d" % index)
        trial = {
            "config_key": key,
            "config": complete,
            "instance": index,
            "instance_spec": self._instance(index),
            "value": value,
            "elapsed_s": round(float(elapsed_s), 3),
            "at": round(time.time(), 3),
        }
        trial.update(extra or {})
        history.append(trial)
        return trial

    def run(self, evaluate, history=None):
        """Race with a function evaluate(config, instance) -> value (a simulation or a local benchmark); the
        results are appended to history (a path or None for memory only). Returns the result."""
        history = history if isinstance(history, TrialHistory) else TrialHistory(history)
        history.start(self.header())
        known = history.results()

        def call(config, index, instance):
            key = (tuner.config_key(config), index)
            if key not in known:
                started = time.monotonic()
                value = float(evaluate(config, instance))
                known[key] = self.tell(history, config, index, value, time.monotonic() - started)
            trial = known[key]
            return float(trial["value"]), float(trial.get("elapsed_s") or 0.0)

        return dict(self.replay(call), finished=True)


def _leader(trials):
    """The configuration with the most runs so far, then the best mean (None without runs)."""
    by_config = {}
    for trial in trials:
        entry = by_config.setdefault(trial["config_key"], {"config": trial["config"], "values": []})
        entry["values"].append(float(trial["value"]))
    if not by_config:
        return None
    entry = max(by_config.values(), key=lambda e: (len(e["values"]), _mean(e["values"])))
    return {"config": entry["config"], "instances": len(entry["values"]), "mean": round(_mean(entry["values"]), 3)}


def _mean(values):
    values = [v for v in values if math.isfinite(v)]
    return math.fsum(values) / len(values) if values else float("-inf")


# ------------------------------------------------------------------------------------------------ entry point
def race_from_spec(catalog_data, spec):
    """A Race from the race module's options: parameters, ranges, defaults, fixed, instances, budget_evaluations,
    budget_s, seed, initial, first_test, each_test, confidence, memory_mb, heap_mb."""
    from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog import Catalog
    from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog_files import CatalogError

    try:
        catalog = Catalog(catalog_data) if isinstance(catalog_data, dict) else catalog_data
    except CatalogError as exc:
        raise RaceError("catalog: %s" % exc) from None
    space = surrogate_features.FeatureSpace(
        catalog,
        spec.get("parameters") or [],
        ranges=spec.get("ranges"),
        defaults=spec.get("defaults"),
        hardware_features=(),
    )
    feasible = None
    if spec.get("memory_mb") or spec.get("heap_mb"):
        feasible = surrogate_design.feasible_by_catalog(
            catalog, memory_mb=spec.get("memory_mb"), heap_mb=spec.get("heap_mb")
        )
    initial = spec.get("initial")
    if initial is None:
        initial = [{}]
    return Race(
        space,
        spec.get("instances") or [],
        budget_evaluations=spec.get("budget_evaluations"),
        budget_s=spec.get("budget_s"),
        seed=spec.get("seed") or 0,
        initial=initial,
        feasible=feasible,
        fixed=spec.get("fixed"),
        first_test=spec.get("first_test") or DEFAULT_FIRST_TEST,
        each_test=spec.get("each_test") or DEFAULT_EACH_TEST,
        confidence=spec.get("confidence") or DEFAULT_CONFIDENCE,
        heap_mb=spec.get("heap_mb"),
        memory_mb=spec.get("memory_mb"),
        estimate_s=spec.get("estimate_s") or ESTIMATE_S,
    )
