# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Cache hit ratios from key popularity (seed 003): Che's approximation, and the data size that gives a hit ratio.

For a cache of C items and keys drawn with known popularities (uniform, YCSB's zipfian, hotspot), Che's
characteristic time gives the hit ratio in closed form for uniform keys and by a root search otherwise;
``records_for_hit_ratio`` inverts it (the data size a calibration run loads to reach a hit ratio) and
``calibration_plan`` lists those sizes for the read model's calibration. scipy finds the roots; errors are
ResourceModelError naming the field.
"""

from __future__ import annotations

import math

from ansible_collections.tactician.nosql.plugins.module_utils.core import imports
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import ModelError

np = imports.optional("numpy")
_optimize = imports.optional("scipy.optimize")


DISTRIBUTIONS = ("uniform", "zipfian", "hotspot")
DISTRIBUTION_OPTIONS = {"uniform": (), "zipfian": ("theta",), "hotspot": ("hot_fraction", "hot_ops")}
DEFAULT_HIT_RATIOS = (1.0, 0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.25, 0.15)


YCSB_ZIPFIAN_CONSTANT = 0.99
MAX_RECORDS = 10**7


class ResourceModelError(ModelError, ValueError):
    """Bad input or an unusable model. The message starts with the field at fault."""


def missing_libraries():
    """[(package, reason)] of the libraries this engine needs and cannot import (for a module's fail_imports)."""
    return imports.missing("numpy", "scipy.interpolate", "scipy.optimize")


def require_libraries():
    missing = missing_libraries()
    if missing:
        raise ResourceModelError(
            "%s: required by the resource model but not importable" % ", ".join(n for n, _tb in missing)
        )


def check_number(field, value, low=None, high=None, low_open=False, high_open=False):
    """value as a finite float within the bounds, or ResourceModelError naming the field."""
    if isinstance(value, bool) or value is None:
        raise ResourceModelError("%s: %r is not a number" % (field, value))
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ResourceModelError("%s: %r is not a number" % (field, value)) from None
    if not math.isfinite(number):
        raise ResourceModelError("%s: %r is not a finite number" % (field, value))
    too_low = low is not None and (number <= low if low_open else number < low)
    too_high = high is not None and (number >= high if high_open else number > high)
    if too_low or too_high:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        span = "%s%s, %s%s" % (
            left,
            "-inf" if low is None else "%g" % low,
            "inf" if high is None else "%g" % high,
            right,
        )
        raise ResourceModelError("%s: %g is outside %s" % (field, number, span))
    return number


def check_hit_ratio(field, value):
    return check_number(field, value, 0.0, 1.0)


def check_throughput(field, value):
    return check_number(field, value, 0.0)


def check_count(field, value, minimum=1):
    if isinstance(value, bool):
        raise ResourceModelError("%s: %r is not a whole number" % (field, value))
    number = check_number(field, value, minimum)
    if number != int(number):
        raise ResourceModelError("%s: %r is not a whole number" % (field, value))
    return int(number)


def _distribution(value):
    if value not in DISTRIBUTIONS:
        raise ResourceModelError("distribution: %r is not supported; allowed: %s" % (value, ", ".join(DISTRIBUTIONS)))
    return value


def _options(distribution, options):
    allowed = DISTRIBUTION_OPTIONS[distribution]
    for name in options:
        if name not in allowed:
            raise ResourceModelError(
                "%s: not an option of the %s distribution; allowed: %s"
                % (name, distribution, ", ".join(allowed) if allowed else "none")
            )
    return options


def plain(value):
    """value with numpy scalars and arrays turned into plain JSON types (tuples become lists)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if np is not None and isinstance(value, np.ndarray):
        return plain(value.tolist())
    if np is not None and isinstance(value, np.generic):
        return value.item()
    return value


def _che(values, counts, cache_items):
    """(hit ratio, characteristic time) of an LRU cache of cache_items over keys of popularity `values`.

    counts[i] keys share popularity values[i] (None: one key each); popularities are normalised here."""
    values = np.asarray(values, dtype=float)
    counts = np.ones_like(values) if counts is None else np.asarray(counts, dtype=float)
    total = float(np.dot(values, counts))
    keys = float(counts.sum())
    if cache_items <= 0:
        return 0.0, 0.0
    if cache_items >= keys:
        return 1.0, math.inf
    q = values / total
    positive = q > 0
    if cache_items >= float(counts[positive].sum()):
        # every key that is ever requested fits: LRU keeps all of them.
        return 1.0, math.inf

    def filled(t):
        return float(np.dot(counts, -np.expm1(-q * t))) - cache_items

    # sum_i (1 - exp(-q_i T)) <= T sum_i q_i = T, so T >= C; double the upper end until it brackets the root.
    low = float(cache_items)
    high = 2.0 * low
    for _i in range(2000):
        if filled(high) > 0:
            break
        low, high = high, high * 2.0
    t = _optimize.brentq(filled, low, high, xtol=1e-12 * high, rtol=1e-12, maxiter=500)
    hit = float(np.dot(counts * q, -np.expm1(-q * t)))
    return min(1.0, max(0.0, hit)), float(t)


def che_hit_ratio(popularities, cache_items):
    """Hit ratio of an LRU cache of cache_items items over keys requested with the given popularities.

    Che, Tung & Wang (2002): the characteristic time T solves sum_i (1 - exp(-q_i T)) = C and the hit ratio is
    sum_i q_i (1 - exp(-q_i T)), q normalised to sum 1. Vectorised; fine for a million keys."""
    require_libraries()
    cache = check_number("cache_items", cache_items, 0.0)
    q = np.asarray(popularities, dtype=float).ravel()
    if q.size == 0:
        raise ResourceModelError("popularities: empty; give one popularity per key")
    if not np.all(np.isfinite(q)) or np.any(q < 0) or q.sum() <= 0:
        raise ResourceModelError("popularities: must be finite, >= 0 and not all 0")
    return _che(q, None, cache)[0]


def che_characteristic_time(popularities, cache_items):
    """The characteristic time T of Che's approximation (inf when every requested key fits in the cache)."""
    require_libraries()
    cache = check_number("cache_items", cache_items, 0.0)
    q = np.asarray(popularities, dtype=float).ravel()
    if q.size == 0 or not np.all(np.isfinite(q)) or np.any(q < 0) or q.sum() <= 0:
        raise ResourceModelError("popularities: must be a non-empty list of finite numbers >= 0, not all 0")
    return _che(q, None, cache)[1]


def uniform_hit_ratio(records, cache_items):
    """Hit ratio of an LRU cache over uniformly requested keys: min(1, C / N) (Che's approximation is exact here)."""
    n = check_count("records", records)
    cache = check_number("cache_items", cache_items, 0.0)
    return min(1.0, cache / n)


def zipfian_popularities(n, theta=YCSB_ZIPFIAN_CONSTANT):
    """Popularity of each of n keys under a zipfian law, q_i proportional to 1 / i^theta (YCSB's 0.99)."""
    require_libraries()
    n = check_count("records", n)
    theta = check_number("theta", theta, 0.0)
    ranks = np.arange(1, n + 1, dtype=float)
    q = ranks**-theta
    return q / q.sum()


def _hotspot_groups(n, hot_fraction, hot_ops):
    """(values, counts): the hot keys share hot_ops of the requests, the others the rest (YCSB's hotspot)."""
    hot = int(n * hot_fraction)
    if hot <= 0 or hot >= n:
        return np.array([1.0 / n]), np.array([float(n)])
    return np.array([hot_ops / hot, (1.0 - hot_ops) / (n - hot)]), np.array([float(hot), float(n - hot)])


def hotspot_popularities(n, hot_fraction=0.2, hot_ops=0.8):
    """Popularity of each of n keys when hot_ops of the requests go to the first hot_fraction of the keys."""
    require_libraries()
    n = check_count("records", n)
    hot_fraction = check_number("hot_fraction", hot_fraction, 0.0, 1.0)
    hot_ops = check_number("hot_ops", hot_ops, 0.0, 1.0)
    values, counts = _hotspot_groups(n, hot_fraction, hot_ops)
    return np.repeat(values, counts.astype(int))


def hit_ratio(distribution, records, cache_items, **options):
    """Hit ratio of an LRU cache of cache_items items over `records` keys requested with `distribution`.

    distribution: uniform (closed form), zipfian (option theta) or hotspot (options hot_fraction, hot_ops)."""
    _distribution(distribution)
    _options(distribution, options)
    n = check_count("records", records)
    cache = check_number("cache_items", cache_items, 0.0)
    if distribution == "uniform":
        return uniform_hit_ratio(n, cache)
    require_libraries()
    if cache >= n:
        return 1.0
    if distribution == "zipfian":
        return _che(zipfian_popularities(n, options.get("theta", YCSB_ZIPFIAN_CONSTANT)), None, cache)[0]
    hot_fraction = check_number("hot_fraction", options.get("hot_fraction", 0.2), 0.0, 1.0)
    hot_ops = check_number("hot_ops", options.get("hot_ops", 0.8), 0.0, 1.0)
    values, counts = _hotspot_groups(n, hot_fraction, hot_ops)
    return _che(values, counts, cache)[0]


def records_for_hit_ratio(hit, cache_items, distribution="uniform", max_records=MAX_RECORDS, **options):
    """Number of keys that gives an LRU cache of cache_items items the hit ratio `hit` (inverse of hit_ratio).

    hit 1.0 gives cache_items (the boundary point: the largest data size that still fits). Uniform keys use the
    closed form C / hit; the other distributions a bisection on the number of keys (up to max_records)."""
    _distribution(distribution)
    _options(distribution, options)
    hit = check_number("hit_ratio", hit, 0.0, 1.0, low_open=True)
    cache = check_count("cache_items", cache_items)
    if hit >= 1.0:
        return cache
    if distribution == "uniform":
        return max(cache, int(round(cache / hit)))
    limit = check_count("max_records", max_records)

    def at(n):
        return hit_ratio(distribution, n, cache, **options)

    low, high = cache, min(limit, 2 * cache)
    while at(high) > hit:
        if high >= limit:
            raise ResourceModelError(
                "hit_ratio: %g is not reachable with %s keys and a cache of %d items within max_records=%d"
                % (hit, distribution, cache, limit)
            )
        low, high = high, min(limit, 2 * high)
    # at(low) > hit >= at(high): halve until the bracket is one key wide or 0.01 % of its size.
    while high - low > max(1, int(1e-4 * low)):
        middle = (low + high) // 2
        if at(middle) > hit:
            low = middle
        else:
            high = middle
    return low if abs(at(low) - hit) <= abs(at(high) - hit) else high


def calibration_plan(hit_ratios=DEFAULT_HIT_RATIOS, cache_items=None, distribution="uniform", **options):
    """Data sizes of the read-model calibration: [{"hit_ratio", "records"}] in the order of hit_ratios.

    The paper's defaults are 100, 95, 90, 80, 70, 60, 50, 40, 25 and 15 % (dense right after the boundary point,
    sparse in the flat tail); the caller may pass fewer. cache_items is the cache capacity in records."""
    if cache_items is None:
        raise ResourceModelError("cache_items: required (the cache capacity in records)")
    if isinstance(hit_ratios, (str, bytes)) or not hasattr(hit_ratios, "__iter__"):
        raise ResourceModelError("hit_ratios: %r is not a list of hit ratios" % (hit_ratios,))
    plan, seen = [], set()
    for index, value in enumerate(hit_ratios):
        hit = check_number("hit_ratios[%d]" % index, value, 0.0, 1.0, low_open=True)
        if hit in seen:
            raise ResourceModelError("hit_ratios[%d]: %g appears twice" % (index, hit))
        seen.add(hit)
        plan.append({"hit_ratio": hit, "records": records_for_hit_ratio(hit, cache_items, distribution, **options)})
    if not plan:
        raise ResourceModelError("hit_ratios: empty; give at least one hit ratio in (0, 1]")
    return plan
