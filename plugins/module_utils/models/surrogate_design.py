# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Which configurations to measure to train a surrogate (seed 002): designs over a feature space.

``design()``: ``lhs`` decodes a Latin hypercube; ``d_optimal`` picks, from a Latin-hypercube candidate set without
the infeasible combinations, the points that maximize log det(X'X) of a model with an intercept, linear and
pairwise interaction terms (Fedorov exchange). ``feasible_by_catalog`` builds the feasibility rule from the
catalog's memory budget (the paper's "sum of memory parameters <= RAM"). scipy draws the Latin hypercube; every
random choice comes from the seed given, so the same inputs give the same design.
"""

from __future__ import annotations

import json
import math

from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog import Catalog
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog_files import CatalogError
from ansible_collections.tactician.nosql.plugins.module_utils.models.surrogate_features import (
    FeatureSpace,
    SurrogateError,
    check_choice,
    check_number,
    import_library,
    numpy_library,
)

METHODS = ("d_optimal", "lhs")
TERMS = ("linear", "interactions", "quadratic")
RIDGE = 1e-6
CANDIDATES_PER_POINT = 20


_SWAP_GAIN = 1e-9
_MAX_PASSES = 100


# ------------------------------------------------------------------------------------------------ design
def feasible_by_catalog(catalog, memory_mb=None, heap_mb=None, in_place=None):
    """feasible(config) -> (bool, reason): the catalog's validate() with the memory budget of this machine
    (heap-drawing sizes within the catalog's share of heap_mb, memory sizes plus the heap within memory_mb).

    in_place: the node's settings in place (name -> value); of them, the values the catalog's when/needs rules read
    and config leaves out are checked with config (a switch to sstable_format bti passes on a node that runs
    storage_compatibility_mode NONE already), instead of their defaults."""
    if isinstance(catalog, FeatureSpace):
        catalog = catalog.catalog
    if not isinstance(catalog, Catalog):
        raise SurrogateError("catalog: expected a Catalog, got %s" % type(catalog).__name__)
    if memory_mb is not None:
        memory_mb = check_number("memory_mb", memory_mb, above=0)
    if heap_mb is not None:
        heap_mb = check_number("heap_mb", heap_mb, above=0)
    read = set(catalog.constraint_fields())
    kept = {}
    for name, value in (in_place or {}).items():
        try:
            canonical = catalog.canonical(name)
        except CatalogError:
            continue
        if canonical in read:
            kept[canonical] = value

    def feasible(config):
        settings = dict(config)
        given = set()
        for name in settings:
            try:
                given.add(catalog.canonical(name))
            except CatalogError:
                continue  # validate() names it
        settings.update({name: value for name, value in kept.items() if name not in given})
        try:
            catalog.validate(settings, memory_mb=memory_mb, heap_mb=heap_mb)
        except CatalogError as exc:
            return False, str(exc)
        return True, ""

    feasible.heap_mb = heap_mb
    feasible.memory_mb = memory_mb
    feasible.rule = "catalog %s %s budget (memory_mb=%s, heap_mb=%s)" % (
        catalog.store,
        catalog.version,
        memory_mb,
        heap_mb,
    )
    return feasible


def check_feasible(feasible, config):
    answer = feasible(dict(config))
    if isinstance(answer, tuple):
        ok = bool(answer[0])
        reason = str(answer[1]) if len(answer) > 1 and answer[1] else ""
    else:
        ok, reason = bool(answer), ""
    return ok, reason or ("" if ok else "rejected by the feasibility rule")


def model_matrix(space, configs, terms="interactions", hardware=None):
    """(F, names): the design model matrix of configurations: an intercept, the coded linear columns, and with
    terms "interactions" the products of columns of different parameters, with "quadratic" also the squares of
    the numeric columns."""
    np = numpy_library()
    check_choice("terms", terms, TERMS)
    names = space.coded_names()
    rows = [space.coded(config, hardware)[0] for config in configs]
    linear = np.array(rows, dtype=float).reshape(len(rows), len(names))
    owners = [name.split("=", 1)[0] for name in names]
    columns = [np.ones(len(rows))]
    labels = ["(intercept)"]
    for i, name in enumerate(names):
        columns.append(linear[:, i])
        labels.append(name)
    if terms != "linear":
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                if owners[i] != owners[j]:
                    columns.append(linear[:, i] * linear[:, j])
                    labels.append("%s*%s" % (names[i], names[j]))
    if terms == "quadratic":
        for i, name in enumerate(names):
            if space.kind(owners[i]) not in ("bool", "enum"):
                columns.append(linear[:, i] ** 2)
                labels.append("%s^2" % name)
    return np.column_stack(columns), labels


def _log_det(np, matrix, ridge):
    gram = matrix.T @ matrix
    if ridge:
        gram = gram + ridge * np.eye(gram.shape[0])
    sign, value = np.linalg.slogdet(gram)
    return float(value) if sign > 0 else float("-inf")


def log_det(space, configs, terms="interactions", hardware=None):
    """The D-criterion of a set of configurations: (log det, ridge). log det(X'X) when the points are at least as
    many as the model terms and X'X is regular, else log det(X'X + 1e-6 I) with ridge 1e-6."""
    np = numpy_library()
    matrix, _names = model_matrix(space, configs, terms, hardware)
    if matrix.shape[0] >= matrix.shape[1]:
        value = _log_det(np, matrix, 0.0)
        if math.isfinite(value):
            return value, 0.0
    return _log_det(np, matrix, RIDGE), RIDGE


def _lhs(space, count, seed):
    qmc = import_library("scipy")
    try:
        sampler = qmc.LatinHypercube(d=space.dimension, rng=seed)
    except TypeError:  # scipy before 1.15 names it seed
        sampler = qmc.LatinHypercube(d=space.dimension, seed=seed)
    return sampler.random(n=count)


def _config_key(config):
    return json.dumps(config, sort_keys=True)


def design(
    space,
    n,
    method="d_optimal",
    seed=0,
    feasible=None,
    candidates=None,
    include_default=True,
    terms="interactions",
    hardware=None,
):
    """n configurations to measure, as {"points", "infeasible", "method", "seed", "criterion", ...}.

    method "lhs": a Latin hypercube of n points (scipy.stats.qmc.LatinHypercube(d, seed)) decoded; points that
    `feasible` rejects are dropped (so fewer than n may remain, counted in "infeasible" and said in "notes").
    method "d_optimal": from a candidate set (candidates: a list of configurations, or a count of Latin-hypercube
    points, by default CANDIDATES_PER_POINT * n), without the infeasible and duplicate ones, the n points that
    maximize log det(X'X) of model_matrix(terms) (intercept, linear and pairwise terms coded to [-1, 1]): a greedy
    start, then Fedorov exchange passes (swap a design point for the candidate that raises the determinant most)
    until a pass improves nothing. When n is below the number of model terms, the criterion is log det(X'X +
    1e-6 I) ("ridge" in the result, and a note). feasible(config) -> (bool, reason), e.g. feasible_by_catalog().
    include_default: the default configuration is the first point and counts in n; it is left out, with a note,
    when `feasible` rejects it. Defaults computed from the heap or the RAM use `hardware`, else the heap_mb and
    memory_mb of a feasible_by_catalog() rule. Deterministic given the seed.

    The result: points (config dicts of the tuned parameters, canonical values), infeasible (candidates
    rejected), infeasible_reasons ({label: {"count", "example"}}, label = the reason's text before ": ", e.g.
    "heap budget"), candidates (how many were drawn or given), criterion (log det of the chosen points, None if
    -inf), ridge (0 or 1e-6), model_terms, default_included, notes, and feasibility_rule when the rule says.
    With terms "linear" or "interactions" the criterion favours the ends of each numeric range; "quadratic" adds
    squared terms, which also asks for points inside the ranges.
    """
    np = numpy_library()
    n = check_number("n", n, minimum=1, integer=True)
    check_choice("method", method, METHODS)
    check_choice("terms", terms, TERMS)
    seed = check_number("seed", seed, minimum=0, integer=True)
    if not isinstance(space, FeatureSpace):
        raise SurrogateError("space: expected a FeatureSpace, got %s" % type(space).__name__)
    notes = []
    reasons = {}
    fixed = []
    memory = {}
    if hardware is None and feasible is not None:
        memory = {"heap_mb": getattr(feasible, "heap_mb", None), "memory_mb": getattr(feasible, "memory_mb", None)}
    if include_default:
        default = space.default_config(hardware, **memory)
        ok, reason = (True, "") if feasible is None else check_feasible(feasible, default)
        if ok:
            fixed.append(default)
        else:
            notes.append("the default configuration is infeasible and is not in the design: %s" % reason)
    wanted = n - len(fixed)
    result = {"method": method, "seed": seed, "terms": terms}

    def screen(configs):
        kept, seen, infeasible = [], {_config_key(config) for config in fixed}, 0
        for config in configs:
            key = _config_key(config)
            if key in seen:
                continue
            seen.add(key)
            if feasible is not None:
                ok, reason = check_feasible(feasible, config)
                if not ok:
                    infeasible += 1
                    _tally(reasons, reason)
                    continue
            kept.append(config)
        return kept, infeasible

    if method == "lhs":
        points = [space.decode_unit(u) for u in _lhs(space, wanted, seed)] if wanted else []
        kept, infeasible = [], 0
        for config in points:
            ok, reason = (True, "") if feasible is None else check_feasible(feasible, config)
            if ok:
                kept.append(config)
            else:
                infeasible += 1
                _tally(reasons, reason)
        if infeasible:
            notes.append("%d of %d Latin-hypercube points are infeasible and were dropped" % (infeasible, wanted))
        chosen = fixed + kept
        result["candidates"] = wanted
    else:
        if candidates is None or isinstance(candidates, int) and not isinstance(candidates, bool):
            count = (
                CANDIDATES_PER_POINT * n if candidates is None else check_number("candidates", candidates, minimum=1)
            )
            pool = [space.decode_unit(u) for u in _lhs(space, count, seed)]
        elif isinstance(candidates, (list, tuple)):
            pool = []
            for index, config in enumerate(candidates):
                try:
                    pool.append(space.complete(config, hardware, **memory))
                except SurrogateError as exc:
                    raise SurrogateError("candidates[%d].%s" % (index, exc)) from None
        else:
            raise SurrogateError("candidates: expected a list of configurations or a number of points")
        kept, infeasible = screen(pool)
        result["candidates"] = len(pool)
        if len(kept) < wanted:
            raise SurrogateError(
                "n: %d points asked but only %d distinct feasible candidates (of %d, %d infeasible); lower n, give "
                "more candidates or widen the ranges" % (n, len(kept), len(pool), infeasible)
            )
        chosen = fixed + [kept[i] for i in _fedorov(np, space, fixed, kept, wanted, terms, hardware)]
    value, ridge = log_det(space, chosen, terms, hardware) if chosen else (float("-inf"), 0.0)
    p = model_matrix(space, [], terms)[0].shape[1]
    if ridge:
        notes.append(
            "%d points for %d model terms: the criterion is log det(X'X + %g I) (ridge), X'X alone is singular"
            % (len(chosen), p, RIDGE)
        )
    result.update(
        points=chosen,
        infeasible=infeasible,
        infeasible_reasons=reasons,
        criterion=value if math.isfinite(value) else None,
        ridge=ridge,
        model_terms=p,
        default_included=bool(fixed),
        notes=notes,
    )
    if feasible is not None and getattr(feasible, "rule", None):
        result["feasibility_rule"] = feasible.rule
    return result


def _tally(reasons, reason):
    """Count a rejection under its label (the text before the first ": "), keeping the first full reason."""
    for part in reason.split("; "):
        label = part.split(": ", 1)[0] if ": " in part else part
        found = reasons.setdefault(label, {"count": 0, "example": part})
        found["count"] += 1


def _fedorov(np, space, fixed, pool, wanted, terms, hardware):
    """Indexes into pool of the `wanted` points that, with the fixed rows, maximize log det(X'X + ridge I)."""
    if wanted == 0:
        return []
    cand, _names = model_matrix(space, pool, terms, hardware)
    p = cand.shape[1]
    base = np.eye(p) * RIDGE
    if fixed:
        rows, _names = model_matrix(space, fixed, terms, hardware)
        base = base + rows.T @ rows
    # Greedy start: add the candidate with the largest prediction variance f'M^-1 f, one at a time.
    inverse = np.linalg.inv(base)
    var = ((cand @ inverse) * cand).sum(axis=1)
    chosen = []
    taken = np.zeros(len(pool), dtype=bool)
    for _i in range(wanted):
        score = np.where(taken, -np.inf, var)
        j = int(np.argmax(score))
        chosen.append(j)
        taken[j] = True
        u = inverse @ cand[j]
        c = 1.0 + cand[j] @ u
        inverse -= np.outer(u, u) / c
        var -= (cand @ u) ** 2 / c
    best = _log_det_rows(np, base, cand[chosen])
    for _pass in range(_MAX_PASSES):
        moment = base + cand[chosen].T @ cand[chosen]
        inverse = np.linalg.inv(moment)
        var = ((cand @ inverse) * cand).sum(axis=1)
        before = list(chosen)
        swapped = False
        for position in range(len(chosen)):
            i = chosen[position]
            u_i = inverse @ cand[i]
            d_i = float(cand[i] @ u_i)
            cross = cand @ u_i
            ratio = (1.0 - d_i) * (1.0 + var) + cross**2
            ratio = np.where(taken, -np.inf, ratio)
            j = int(np.argmax(ratio))
            if not ratio[j] > 1.0 + _SWAP_GAIN or 1.0 - d_i <= 0:
                continue
            # Remove point i, then add candidate j (Sherman-Morrison, both on the inverse and on the variances).
            inverse += np.outer(u_i, u_i) / (1.0 - d_i)
            var += cross**2 / (1.0 - d_i)
            u_j = inverse @ cand[j]
            c = 1.0 + cand[j] @ u_j
            inverse -= np.outer(u_j, u_j) / c
            var -= (cand @ u_j) ** 2 / c
            taken[i], taken[j] = False, True
            chosen[position] = j
            swapped = True
        if not swapped:
            break
        value = _log_det_rows(np, base, cand[chosen])
        if value <= best:
            # Rounding in the updates: keep the last design that really improved, and stop.
            for index in chosen:
                taken[index] = False
            chosen = before
            for index in chosen:
                taken[index] = True
            break
        best = value
    return chosen


def _log_det_rows(np, base, rows):
    sign, value = np.linalg.slogdet(base + rows.T @ rows)
    return float(value) if sign > 0 else float("-inf")
