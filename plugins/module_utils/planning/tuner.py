# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Static tuning: the configuration a throughput model predicts best for a workload (seed 001 Eq. 5, seed 002).

- ``Throughput``: f_ops(W, C) as a matrix over workloads x configurations, from a single-node surrogate times the
  node count (seed 001 Eq. 4) or a cluster model over the per-node predictions; ``FunctionThroughput`` wraps any
  function (simulated stores in tests and benchmarks).
- ``tune()``: a genetic algorithm (pygad) over the tuned parameters of the surrogate's feature space, on the unit
  cube decoded by the catalog's types and ranges. Every candidate goes through the catalog's feasibility rule
  (types, dependencies, the node's memory budget); an infeasible one never wins. The objective is the weighted
  sum of f_ops over the workloads given, so one call gives the optimum of one workload (Eq. 5) or the
  static-optimized configuration of a whole known future. Configurations given in ``include`` (the default, the
  current one) are evaluated too and win when the search finds nothing better, so the answer is never predicted
  worse than them.

Plain Python with numpy; pygad is imported when a search runs and a missing one raises TuneError naming it.
"""

from __future__ import annotations

import json
import math
import time

from ansible_collections.tactician.nosql.plugins.module_utils.core import imports
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError
from ansible_collections.tactician.nosql.plugins.module_utils.models import surrogate as sg
from ansible_collections.tactician.nosql.plugins.module_utils.models import surrogate_design, surrogate_features

DEFAULT_POPULATION = 50
DEFAULT_GENERATIONS = 60
DEFAULT_CROSSOVER = 0.8
DEFAULT_STOP_AFTER = 10
"""Generations without improvement before the search stops (the IRIS plan search stopped after 3)."""
SIMPLIFY_TOLERANCE = 0.001
"""simplify keeps a change only when reverting it would lower the predicted score by more than this share."""


class TuneError(PlanningError, ValueError):
    """Bad input to a tuning call; the message names the field and what is allowed."""


def _np():
    return surrogate_features.numpy_library()


def _pygad():
    return imports.require("pygad", TuneError, "the configuration search")


def config_key(config):
    """A stable text key of a configuration (for caches and de-duplication)."""
    return json.dumps(config, sort_keys=True, default=str)


# ------------------------------------------------------------------------------------------------ f_ops
class Throughput:
    """f_ops(W, C) from a single-node surrogate: nodes x the node's prediction (seed 001 Eq. 4), or the cluster
    model's answer over the per-node predictions when one is given (seed 002).

    model: a surrogate.Surrogate; hardware: the node's hardware mapping (the model's own profile by default);
    cluster: {nodes, rf, cl, complete_sets} for a cluster model."""

    def __init__(self, model, hardware=None, nodes=1, cluster_model=None, cluster=None):
        if not isinstance(model, sg.Surrogate):
            raise TuneError("model: expected a fitted surrogate.Surrogate, got %s" % type(model).__name__)
        self.model = model
        self.space = model.space
        # A profile's unknown numbers (None) take the model's defaults, as when it was fitted.
        self.hardware = {k: v for k, v in (hardware or {}).items() if v is not None} or None
        if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
            raise TuneError("nodes: %r is not a whole number >= 1" % (nodes,))
        self.nodes = nodes
        self.cluster_model = cluster_model
        self.cluster = dict(cluster or {})
        self._workloads = {}
        self._configs = {}

    def _workload_vector(self, workload):
        key = config_key(workload)
        if key not in self._workloads:
            self._workloads[key] = self.space.workload_vector(workload)
        return self._workloads[key]

    def _config_vector(self, config):
        key = config_key(config)
        if key not in self._configs:
            self._configs[key] = self.space.config_vector(config, self.hardware) + self.space.hardware_vector(
                self.hardware
            )
        return self._configs[key]

    def node_matrix(self, workloads, configs):
        """Per-node ops/s: array [len(workloads), len(configs)]."""
        np = _np()
        w = np.asarray([self._workload_vector(x) for x in workloads], dtype=float)
        c = np.asarray([self._config_vector(x) for x in configs], dtype=float)
        if not len(w) or not len(c):
            return np.zeros((len(w), len(c)))
        rows = np.concatenate([np.repeat(w, len(c), axis=0), np.tile(c, (len(w), 1))], axis=1)
        return np.asarray(self.model.predict_features(rows), dtype=float).reshape(len(w), len(c))

    def matrix(self, workloads, configs):
        """f_ops of the whole cluster: array [len(workloads), len(configs)]."""
        np = _np()
        node = self.node_matrix(workloads, configs)
        if self.cluster_model is None or self.nodes == 1:
            return node * self.nodes
        rows = []
        for i, workload in enumerate(workloads):
            ratio = surrogate_features.workload_values(workload)["read_ratio"]
            for j in range(len(configs)):
                rows.append(
                    {
                        "node_predictions": [float(node[i, j])] * self.nodes,
                        "nodes": self.nodes,
                        "rf": int(self.cluster.get("rf") or 1),
                        "cl": self.cluster.get("cl") or "ONE",
                        "complete_sets": int(self.cluster.get("complete_sets") or self.cluster.get("rf") or 1),
                        "read_ratio": ratio,
                    }
                )
        return np.asarray(self.cluster_model.predict(rows), dtype=float).reshape(node.shape)


class FunctionThroughput:
    """f_ops from a function fn(workload, config) -> cluster ops/s (simulated stores, tests)."""

    def __init__(self, fn, space=None):
        if not callable(fn):
            raise TuneError("fn: expected a function of (workload, config)")
        self.fn = fn
        self.space = space

    def matrix(self, workloads, configs):
        np = _np()
        return np.asarray([[float(self.fn(w, c)) for c in configs] for w in workloads], dtype=float).reshape(
            len(workloads), len(configs)
        )


# ------------------------------------------------------------------------------------------------ unit cube
def to_unit(space, config):
    """The point of [0, 1]^dimension that decode_unit() maps to this configuration (values outside the tuning
    range are clipped to it; an enum value outside the tuning choices maps to the first choice)."""
    values = space.complete(config)
    point = []
    for name in space.parameters:
        allowed = space.range(name)
        kind = space.kind(name)
        value = values[name]
        if kind in ("enum", "bool"):
            index = allowed.index(value) if value in allowed else 0
            point.append((index + 0.5) / len(allowed))
        else:
            low, high = allowed
            point.append(0.5 if high == low else min(1.0, max(0.0, (float(value) - low) / (high - low))))
    return point


def _check_fixed(space, fixed):
    if fixed is None:
        return {}
    if not isinstance(fixed, dict):
        raise TuneError("fixed: expected a mapping of parameter name to value")
    out = {}
    for name, value in fixed.items():
        try:
            canonical = space.catalog.canonical(name)
        except Exception as exc:  # CatalogError names the allowed parameters
            raise TuneError("fixed.%s" % exc) from None
        if canonical not in space.parameters:
            raise TuneError(
                "fixed.%s: not a tuned parameter of this model; tuned: %s" % (name, ", ".join(space.parameters))
            )
        out[canonical] = space._value(canonical, value, "fixed")
    return out


def _weights(workloads, weights):
    if not isinstance(workloads, (list, tuple)) or not workloads:
        raise TuneError("workloads: give a non-empty list of workloads")
    if weights is None:
        return [1.0 / len(workloads)] * len(workloads)
    if not isinstance(weights, (list, tuple)) or len(weights) != len(workloads):
        raise TuneError("weights: give one weight per workload (%d)" % len(workloads))
    out = []
    for index, weight in enumerate(weights):
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight < 0:
            raise TuneError("weights[%d]: %r is not a number >= 0" % (index, weight))
        out.append(float(weight))
    total = math.fsum(out)
    if total <= 0:
        raise TuneError("weights: at least one weight must be > 0")
    return [w / total for w in out]


def _positive_int(field, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise TuneError("%s: %r is not a whole number >= %d" % (field, value, minimum))
    return value


def tune(
    throughput,
    workloads,
    weights=None,
    feasible=None,
    fixed=None,
    include=None,
    seed=0,
    population=DEFAULT_POPULATION,
    generations=DEFAULT_GENERATIONS,
    crossover=DEFAULT_CROSSOVER,
    stop_after=DEFAULT_STOP_AFTER,
):
    """The configuration with the highest predicted weighted throughput over workloads.

    throughput: a Throughput (its surrogate's feature space is what is searched). feasible: feasible(config) ->
    (ok, reason), e.g. surrogate.feasible_by_catalog(catalog, memory_mb, heap_mb); fixed: {parameter: value} kept
    out of the search (e.g. the compaction strategy, which IRIS does not switch online); include: configurations
    evaluated as they are (the default, the current one).

    Returns {"config", "score", "predicted": [ops/s per workload], "included": [{"config", "score", "feasible"}],
    "evaluations", "generations", "infeasible", "elapsed_s"}.
    """
    started = time.monotonic()
    space = getattr(throughput, "space", None)
    if not isinstance(space, surrogate_features.FeatureSpace):
        raise TuneError("throughput: needs a model with a feature space (a Throughput over a surrogate)")
    weights = _weights(workloads, weights)
    fixed = _check_fixed(space, fixed)
    population = _positive_int("population", population, 4)
    generations = _positive_int("generations", generations, 1)
    stop_after = _positive_int("stop_after", stop_after, 1)
    if isinstance(crossover, bool) or not isinstance(crossover, (int, float)) or not 0 <= crossover <= 1:
        raise TuneError("crossover: %r is not a probability in [0, 1]" % (crossover,))
    np = _np()
    weight_vector = np.asarray(weights, dtype=float)
    free = [i for i, name in enumerate(space.parameters) if name not in fixed]
    cache = {}
    stats = {"evaluations": 0, "infeasible": 0}

    def decode(genes):
        unit = [0.5] * space.dimension
        for position, value in zip(free, genes, strict=True):
            unit[position] = float(value)
        config = space.decode_unit(unit)
        config.update(fixed)
        return config

    def score_configs(configs):
        """Weighted predicted ops/s of each configuration, -1 for an infeasible one (cached by configuration)."""
        fresh = []
        fresh_keys = set()
        for config in configs:
            key = config_key(config)
            if key in cache or key in fresh_keys:
                continue
            fresh_keys.add(key)
            fresh.append(config)
        if fresh:
            ok = []
            for config in fresh:
                good = True
                if feasible is not None:
                    good, _reason = surrogate_design.check_feasible(feasible, config)
                ok.append(good)
            usable = [c for c, good in zip(fresh, ok, strict=True) if good]
            values = throughput.matrix(list(workloads), usable) if usable else np.zeros((len(workloads), 0))
            column = 0
            for config, good in zip(fresh, ok, strict=True):
                key = config_key(config)
                stats["evaluations"] += 1
                if good:
                    per = values[:, column]
                    cache[key] = (float(weight_vector @ per), [float(x) for x in per])
                    column += 1
                else:
                    stats["infeasible"] += 1
                    cache[key] = (-1.0, None)
        return [cache[config_key(c)][0] for c in configs]

    included = []
    for index, config in enumerate(include or []):
        if not isinstance(config, dict):
            raise TuneError("include[%d]: expected a configuration mapping" % index)
        try:
            complete = space.complete(config)
        except surrogate_features.SurrogateError as exc:
            raise TuneError("include[%d].%s" % (index, exc)) from None
        complete.update(fixed)
        score = score_configs([complete])[0]
        included.append({"config": complete, "score": score, "feasible": score >= 0})

    generations_run = 0
    if free:
        pygad = _pygad()
        initial = np.random.default_rng(seed).random((population, len(free)))
        for slot, entry in enumerate(included[: population // 2]):
            unit = to_unit(space, entry["config"])
            initial[slot] = [unit[i] for i in free]

        def fitness(_ga, solutions, _index):
            solutions = np.atleast_2d(solutions)
            return score_configs([decode(row) for row in solutions])

        counter = {"n": 0}

        def on_generation(_ga):
            counter["n"] += 1

        ga = pygad.GA(
            num_generations=generations,
            num_parents_mating=max(2, population // 2),
            fitness_func=fitness,
            fitness_batch_size=population,
            initial_population=initial,
            gene_space={"low": 0.0, "high": 1.0},
            crossover_probability=crossover,
            mutation_probability=0.15,
            parent_selection_type="tournament",
            keep_elitism=2,
            random_seed=seed,
            stop_criteria="saturate_%d" % stop_after,
            on_generation=on_generation,
            suppress_warnings=True,
        )
        ga.run()
        generations_run = counter["n"]
    else:
        score_configs([decode([])])
    best_key, (best_score, best_per) = max(cache.items(), key=lambda item: (item[1][0], item[0]))
    if best_score < 0:
        raise TuneError(
            "feasible: no configuration tried passes the feasibility rule (%d tried); widen the ranges or the "
            "memory budget" % stats["evaluations"]
        )
    return {
        "config": json.loads(best_key),
        "score": best_score,
        "predicted": best_per,
        "included": included,
        "evaluations": stats["evaluations"],
        "generations": generations_run,
        "infeasible": stats["infeasible"],
        "elapsed_s": round(time.monotonic() - started, 4),
    }


def simplify(throughput, workloads, config, reference, weights=None, feasible=None, tolerance=SIMPLIFY_TOLERANCE):
    """config with every parameter the model does not reward changing put back to reference's value.

    A surrogate is flat where it has no data: a search lands anywhere on a plateau, and a plan would change
    parameters on no evidence. Greedily, the change whose reversal costs least is reverted while the weighted score
    stays within tolerance (a share) of config's and the result stays feasible. Returns {"config", "score",
    "predicted", "reverted": [names], "evaluations"}."""
    np = _np()
    weights = _weights(workloads, weights)
    space = throughput.space
    hardware = getattr(throughput, "hardware", None)
    current = space.complete(config, hardware)
    base = space.complete(reference or {}, hardware)
    evaluations = 0

    def scores(configs):
        nonlocal evaluations
        evaluations += len(configs)
        return np.asarray(weights) @ throughput.matrix(workloads, configs)

    best = float(scores([current])[0])
    floor = best - abs(best) * float(tolerance)
    reverted = []
    while True:
        names = [n for n in space.parameters if current.get(n) != base.get(n)]
        trials = []
        for name in names:
            trial = dict(current, **{name: base.get(name)})
            if feasible is None or surrogate_design.check_feasible(feasible, trial)[0]:
                trials.append((name, trial))
        if not trials:
            break
        values = scores([trial for _name, trial in trials])
        pick = int(np.argmax(values))
        if values[pick] < floor:
            break
        current = trials[pick][1]
        reverted.append(trials[pick][0])
    predicted = throughput.matrix(workloads, [current])[:, 0]
    return {
        "config": current,
        "score": float(np.asarray(weights) @ predicted),
        "predicted": [float(x) for x in predicted],
        "reverted": reverted,
        "evaluations": evaluations + 1,
    }


def tune_many(
    throughput,
    groups,
    feasible=None,
    fixed=None,
    include=None,
    seed=0,
    pool_size=400,
    refine_generations=8,
    refine_population=20,
    reference=None,
):
    """The best configuration of several objectives at once: groups = [(workloads, weights)] (weights None =
    equal). A shared pool (a Latin hypercube of pool_size feasible configurations plus include) is scored for
    every workload in one pass; each group takes the pool's best for its weighted objective, then a short genetic
    search seeded with the pool's three best refines it. With reference (the configuration in place), each result
    is then simplified against it (simplify): a parameter whose change the model does not reward is left as it is.
    Returns one tune()-like result per group."""
    np = _np()
    started = time.monotonic()
    space = getattr(throughput, "space", None)
    if not isinstance(space, surrogate_features.FeatureSpace):
        raise TuneError("throughput: needs a model with a feature space (a Throughput over a surrogate)")
    fixed = _check_fixed(space, fixed)
    configs = []
    seen = set()
    for config in include or []:
        complete = space.complete(config, getattr(throughput, "hardware", None))
        complete.update(fixed)
        key = config_key(complete)
        if key not in seen and (feasible is None or surrogate_design.check_feasible(feasible, complete)[0]):
            seen.add(key)
            configs.append(complete)
    try:
        from scipy.stats import qmc

        points = qmc.LatinHypercube(d=space.dimension, seed=seed).random(pool_size)
    except ImportError:  # scipy is a requirement; plain uniform points otherwise
        points = np.random.default_rng(seed).random((pool_size, space.dimension))
    for point in points:
        config = space.decode_unit(point)
        config.update(fixed)
        key = config_key(config)
        if key in seen or (feasible is not None and not surrogate_design.check_feasible(feasible, config)[0]):
            continue
        seen.add(key)
        configs.append(config)
    if not configs:
        raise TuneError("feasible: no configuration of the pool passes the feasibility rule; widen the ranges")
    index = {}
    workloads = []
    for members, _given in groups:
        for workload in members:
            key = config_key(workload)
            if key not in index:
                index[key] = len(workloads)
                workloads.append(workload)
    matrix = throughput.matrix(workloads, configs)
    out = []
    for number, (members, weights) in enumerate(groups):
        weights = _weights(members, weights)
        rows = [index[config_key(w)] for w in members]
        scores = np.asarray(weights) @ matrix[rows]
        top = [configs[i] for i in np.argsort(-scores)[:3]]
        best = {
            "config": top[0],
            "score": float(scores.max()),
            "predicted": [float(x) for x in matrix[rows, int(np.argmax(scores))]],
            "evaluations": len(configs),
        }
        if refine_generations:
            refined = tune(
                throughput,
                members,
                weights=weights,
                feasible=feasible,
                fixed=fixed or None,
                include=top,
                seed=seed + number,
                population=refine_population,
                generations=refine_generations,
                stop_after=max(2, refine_generations // 2),
            )
            if refined["score"] > best["score"]:
                best.update(config=refined["config"], score=refined["score"], predicted=refined["predicted"])
            best["evaluations"] += refined["evaluations"]
        if reference is not None:
            simple = simplify(throughput, members, best["config"], reference, weights=weights, feasible=feasible)
            best.update(
                config=simple["config"],
                score=simple["score"],
                predicted=simple["predicted"],
                kept_as_reference=simple["reverted"],
            )
            best["evaluations"] += simple["evaluations"]
        out.append(best)
    for item in out:
        item["elapsed_s"] = round(time.monotonic() - started, 4)
        item["pool"] = len(configs)
    return out
