# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Resource-usage model of a key-value store node: usage from cache hit ratio and throughput (seed 003).

Server usage is I/O wait + user + system CPU, in % of the machine. For a given throughput, two workloads with the
same cache hit ratio use the same resources whatever their key distribution or data size, so the model has two
inputs only: the hit ratio and the throughput.

* Read model, trained once per hardware with uniform keys: for each target usage level (5, 20, 40, 60, 80 %) and
  each hit ratio (100 ... 15 %) a binary search finds the read throughput that reaches the level; the hit ratio is
  set through the data size (Che's approximation, closed form for uniform keys). Between the hit ratios of one
  level the throughput follows a monotone cubic spline (PCHIP); between levels usage is linear in throughput.
* Update model: usage linear in update throughput (least squares, slope >= 0).
* Overall usage = read usage + update usage; the machine's idle usage is counted once.
* Accuracy of one prediction = 1 - |predicted - observed| / observed (the paper reports a 94 % mean, sd 5.6).

Plain data in, plain data out: no database driver and no Ansible here. numpy and scipy are imported inside
try/except; ``missing_libraries()`` tells a module what is absent, and the functions that need them raise
ResourceModelError naming the library instead of an ImportError at import time.
"""

from __future__ import annotations

import math

from ansible_collections.tactician.nosql.plugins.module_utils.core import imports
from ansible_collections.tactician.nosql.plugins.module_utils.models.hit_ratio import (
    ResourceModelError,
    check_count,
    check_hit_ratio,
    check_number,
    check_throughput,
    plain,
    require_libraries,
)

np = imports.optional("numpy")
_interpolate = imports.optional("scipy.interpolate")

DEFAULT_LEVELS = (5.0, 20.0, 40.0, 60.0, 80.0)


MODEL_FORMAT = "tactician.resource/v1"
# Relative gap put between two levels that the monotone repair pooled to the same throughput.
_TIE_GAP = 1e-6


def _isotonic(values):
    """Non-decreasing least-squares fit of values (pool adjacent violators), equal weights."""
    blocks = []  # [sum, count]
    for value in values:
        blocks.append([value, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    fitted = []
    for total, count in blocks:
        fitted.extend([total / count] * count)
    return fitted


def _midpoint(low, high):
    if low > 0 and high / low > 4.0:
        return math.sqrt(low * high)
    return (low + high) / 2.0


def binary_search_throughput(measure, level, low, high, tolerance=2.5, max_probes=6, known=None, low_usage=None):
    """Throughput at which the server's usage reaches `level` %, by a binary search over target rates.

    measure(throughput) -> observed usage (%) runs the load at that rate; usage grows with throughput but is
    noisy. Every point already known (known=[(throughput, usage)], e.g. from the earlier levels of the same hit
    ratio) narrows the bracket [low, high] first; the points are smoothed by an isotonic (non-decreasing) fit so
    that noise cannot make the bracket cross. The search probes the midpoint of the bracket (geometric when
    high/low > 4), and stops when a measured usage is within tolerance of the level, when the bracket is
    narrower than 5 % of its upper end (converged), or after max_probes probes (not converged). The answer is
    the linear interpolation between the bracketing points.

    Usage at `low` is taken from known, or low_usage, or assumed 0 when low is 0 (pass known=[(0, idle)] to do
    better), or else measured. Usage at `high` (the unthrottled maximum) is taken from known or measured; when
    even it stays below the level by more than the tolerance the answer is that maximum point with converged
    False and reason "level not reachable", and the caller drops the level for this hit ratio.

    Returns {"level", "throughput", "usage" (at the answer by the same interpolation), "nearest" (the measured
    point closest to the level), "bracket", "probes" (this search's [(throughput, usage)]), "converged",
    "reason"}."""
    if not callable(measure):
        raise ResourceModelError("measure: %r is not callable" % (measure,))
    level = check_number("level", level, 0.0, 100.0, low_open=True)
    low = check_throughput("low", low)
    high = check_number("high", high, low, low_open=True)
    tolerance = check_number("tolerance", tolerance, 0.0)
    max_probes = check_count("max_probes", max_probes, 1)
    points = []
    for index, pair in enumerate(known or ()):
        try:
            tput, usage = pair
        except (TypeError, ValueError):
            raise ResourceModelError("known[%d]: %r is not a (throughput, usage) pair" % (index, pair)) from None
        points.append(
            (check_throughput("known[%d] throughput" % index, tput), check_number("known[%d] usage" % index, usage))
        )
    probes = []

    def probe(tput):
        usage = check_number("measure", measure(tput))
        probes.append((tput, usage))
        points.append((tput, usage))
        return usage

    def has(tput):
        return any(abs(t - tput) <= 1e-9 * max(1.0, tput) for t, _u in points)

    assumed = None
    if low_usage is not None:
        points.append((low, check_number("low_usage", low_usage)))
    elif not has(low) and low == 0:
        assumed = (0.0, 0.0)
        points.append(assumed)
    if not has(high):
        probe(high)
    if not has(low):
        probe(low)

    def result(tput, usage, converged, reason, nearest, bracket):
        return {
            "level": level,
            "throughput": float(tput),
            "usage": float(usage),
            "nearest": nearest,
            "bracket": bracket,
            "probes": list(probes),
            "converged": converged,
            "reason": reason,
        }

    while True:
        inside = sorted(p for p in points if low - 1e-9 <= p[0] <= high * (1 + 1e-9))
        fitted = _isotonic([u for _t, u in inside])
        measured = [p for p in inside if p is not assumed] or inside
        nearest = min(measured, key=lambda p: (abs(p[1] - level), -p[0]))
        close = nearest is not assumed and abs(nearest[1] - level) <= tolerance
        below = [i for i, f in enumerate(fitted) if f < level]
        above = [i for i, f in enumerate(fitted) if f >= level]
        if not above:
            top = inside[-1]
            if close:
                return result(nearest[0], nearest[1], True, "within tolerance", nearest, [top, None])
            return result(top[0], top[1], False, "level not reachable", nearest, [top, None])
        if not below:
            bottom = inside[0]
            if close:
                return result(nearest[0], nearest[1], True, "within tolerance", nearest, [None, bottom])
            return result(bottom[0], bottom[1], False, "level below the usage at low", nearest, [None, bottom])
        i, j = below[-1], above[0]
        (t_low, _u_low), (t_high, _u_high) = inside[i], inside[j]
        f_low, f_high = fitted[i], fitted[j]
        answer = t_low + (level - f_low) * (t_high - t_low) / (f_high - f_low)
        bracket = [inside[i], inside[j]]
        if close:
            return result(answer, level, True, "within tolerance", nearest, bracket)
        if t_high - t_low < 0.05 * t_high:
            return result(answer, level, True, "bracket narrow", nearest, bracket)
        if len(probes) >= max_probes:
            return result(answer, level, False, "max probes", nearest, bracket)
        probe(_midpoint(t_low, t_high))


def _isotonic_rows(matrix):
    """Column-wise non-decreasing least-squares fit over the rows of a (k, m) array (max-min formula)."""
    k = matrix.shape[0]
    sums = np.vstack([np.zeros((1, matrix.shape[1])), np.cumsum(matrix, axis=0)])
    fitted = np.empty_like(matrix)
    for i in range(k):
        best = None
        for a in range(i + 1):
            worst = None
            for b in range(i, k):
                mean = (sums[b + 1] - sums[a]) / (b - a + 1)
                worst = mean if worst is None else np.minimum(worst, mean)
            best = worst if best is None else np.maximum(best, worst)
        fitted[i] = best
    return fitted


class ReadModel:
    """Read usage of one hardware: for each usage level, the read throughput that reaches it against hit ratio.

    points: {level %: [(hit_ratio, throughput), ...]} from the calibration. For each level T_level(hit) is a
    monotone cubic spline (PCHIP) over the level's hit ratios (one point: a constant; hit ratios outside the
    level's calibrated range are clamped). At one hit ratio usage is linear in throughput between the two levels
    that bracket it, from (0, idle_usage) below the lowest level, and extrapolated from the last two levels above
    the highest one (flagged). T_level(hit) must grow with the level: where noise makes two levels cross the
    throughputs are repaired by an isotonic fit over the levels and a warning is recorded."""

    def __init__(self, points, idle_usage=0.0, warnings=None):
        require_libraries()
        if not isinstance(points, dict) or not points:
            raise ResourceModelError(
                "points: needs a mapping {level: [(hit_ratio, throughput), ...]} of at least one level"
            )
        self.idle_usage = check_number("idle_usage", idle_usage, 0.0, 100.0)
        table = {}
        for key, rows in points.items():
            level = check_number("points level", key, 0.0, 100.0, low_open=True)
            if level <= self.idle_usage:
                raise ResourceModelError(
                    "idle_usage: %g is not below level %g; drop the levels at or below the idle usage"
                    % (self.idle_usage, level)
                )
            if level in table:
                raise ResourceModelError("points: level %g appears twice" % level)
            if isinstance(rows, (str, bytes, dict)) or not hasattr(rows, "__iter__"):
                raise ResourceModelError("points[%g]: %r is not a list of (hit_ratio, throughput)" % (level, rows))
            clean = []
            for index, pair in enumerate(rows):
                try:
                    hit, tput = pair
                except (TypeError, ValueError):
                    raise ResourceModelError(
                        "points[%g][%d]: %r is not a (hit_ratio, throughput) pair" % (level, index, pair)
                    ) from None
                clean.append(
                    (
                        check_hit_ratio("points[%g][%d] hit_ratio" % (level, index), hit),
                        check_number("points[%g][%d] throughput" % (level, index), tput, 0.0, low_open=True),
                    )
                )
            if not clean:
                raise ResourceModelError("points[%g]: no calibration point" % level)
            table[level] = clean
        self.levels = sorted(table)
        self.points = {level: table[level] for level in self.levels}
        self._curves = [self._curve(self.points[level]) for level in self.levels]
        self.warnings = list(warnings or [])
        self.crossings = self._find_crossings()
        for low_level, high_level, start, end in self.crossings:
            text = (
                "levels %g and %g %%: calibrated throughputs cross at hit ratios %.3g-%.3g; "
                "repaired monotonically (isotonic fit over the levels)" % (low_level, high_level, start, end)
            )
            if text not in self.warnings:
                self.warnings.append(text)

    @staticmethod
    def _curve(rows):
        by_hit = {}
        for hit, tput in rows:
            by_hit.setdefault(hit, []).append(tput)
        hits = np.array(sorted(by_hit))
        tputs = np.array([sum(by_hit[h]) / len(by_hit[h]) for h in hits])
        spline = _interpolate.PchipInterpolator(hits, tputs, extrapolate=False) if len(hits) > 1 else None
        return hits, tputs, spline

    def _raw_throughputs(self, hits):
        """(k levels, m hits) array of T_level(hit) before the monotone repair; hits clamped per level."""
        rows = []
        for hits_known, tputs, spline in self._curves:
            clamped = np.clip(hits, hits_known[0], hits_known[-1])
            rows.append(np.full(hits.shape, tputs[0]) if spline is None else spline(clamped))
        return np.vstack(rows)

    def _find_crossings(self):
        hits = sorted({h for rows in self.points.values() for h, _t in rows})
        grid = np.unique(np.concatenate([np.array(hits), np.linspace(hits[0], hits[-1], 201)]))
        raw = self._raw_throughputs(grid)
        crossings = []
        for i in range(len(self.levels) - 1):
            bad = raw[i + 1] <= raw[i]
            if np.any(bad):
                crossings.append((self.levels[i], self.levels[i + 1], float(grid[bad].min()), float(grid[bad].max())))
        return crossings

    def level_throughputs(self, hits):
        """(k, m) array: throughput that reaches each level at each hit ratio, increasing with the level."""
        hits = np.atleast_1d(np.asarray(hits, dtype=float))
        raw = self._raw_throughputs(hits)
        if raw.shape[0] > 1 and not np.all(np.diff(raw, axis=0) > 0):
            raw = _isotonic_rows(raw)
            for i in range(1, raw.shape[0]):
                raw[i] = np.maximum(raw[i], raw[i - 1] * (1.0 + _TIE_GAP))
        return raw

    def _augmented(self, hits):
        tputs = self.level_throughputs(hits)
        tputs = np.vstack([np.zeros((1, tputs.shape[1])), tputs])
        usages = np.array([self.idle_usage] + list(self.levels))
        return tputs, usages

    def _check_hits(self, hits, field="hit_ratio"):
        hits = np.atleast_1d(np.asarray(hits, dtype=float))
        if not np.all(np.isfinite(hits)) or np.any(hits < 0) or np.any(hits > 1):
            bad = hits[~(np.isfinite(hits) & (hits >= 0) & (hits <= 1))][0]
            raise ResourceModelError("%s: %g is outside [0, 1]" % (field, bad))
        return hits

    def hit_range(self):
        """(lowest, highest) calibrated hit ratio over all levels."""
        hits = [h for rows in self.points.values() for h, _t in rows]
        return min(hits), max(hits)

    def usage_many(self, hits, throughputs):
        """Vectorised usage: (usage array, extrapolated bool array) for arrays of hit ratios and throughputs."""
        hits = self._check_hits(hits)
        tput = np.atleast_1d(np.asarray(throughputs, dtype=float))
        if not np.all(np.isfinite(tput)) or np.any(tput < 0):
            raise ResourceModelError("throughput: %g is outside [0, inf)" % tput[~(np.isfinite(tput) & (tput >= 0))][0])
        hits, tput = np.broadcast_arrays(hits, tput)
        table, usages = self._augmented(hits.ravel())
        x = tput.ravel()
        k = len(self.levels)
        above = np.sum(table[1:] < x, axis=0)
        seg = np.minimum(above, k - 1)
        cols = np.arange(x.size)
        t0, t1 = table[seg, cols], table[seg + 1, cols]
        u0, u1 = usages[seg], usages[seg + 1]
        usage = u0 + (u1 - u0) * (x - t0) / (t1 - t0)
        return usage.reshape(hits.shape), (x > table[k]).reshape(hits.shape)

    def usage_detail(self, hit, throughput):
        """{"usage", "extrapolated" (above the highest level), "hit_clamped" (outside the calibrated range)}."""
        hit = check_hit_ratio("hit_ratio", hit)
        throughput = check_throughput("throughput", throughput)
        usage, extrapolated = self.usage_many([hit], [throughput])
        low, high = self.hit_range()
        return {
            "usage": float(usage[0]),
            "extrapolated": bool(extrapolated[0]),
            "hit_clamped": not (low <= hit <= high),
        }

    def usage(self, hit, throughput):
        """Predicted usage (%) of a read throughput at a cache hit ratio."""
        return self.usage_detail(hit, throughput)["usage"]

    def max_throughput_many(self, hits, cap):
        """Vectorised max_throughput: (throughput array, extrapolated bool array) for an array of hit ratios."""
        hits = self._check_hits(hits)
        cap = check_number("cap", cap, 0.0)
        table, usages = self._augmented(hits)
        k = len(self.levels)
        if cap <= self.idle_usage:
            return np.zeros(hits.shape), np.zeros(hits.shape, dtype=bool)
        seg = min(int(np.sum(usages[1:] < cap)), k - 1)
        t0, t1 = table[seg], table[seg + 1]
        u0, u1 = usages[seg], usages[seg + 1]
        tput = t0 + (cap - u0) * (t1 - t0) / (u1 - u0)
        return tput, np.full(hits.shape, cap > usages[k])

    def max_throughput_detail(self, hit, cap):
        """{"throughput", "extrapolated"}: the largest read throughput whose predicted usage stays <= cap."""
        hit = check_hit_ratio("hit_ratio", hit)
        tput, extrapolated = self.max_throughput_many([hit], cap)
        return {"throughput": float(tput[0]), "extrapolated": bool(extrapolated[0])}

    def max_throughput(self, hit, cap):
        """Largest read throughput whose predicted usage at this hit ratio stays <= cap (%): 0 when cap <= idle."""
        return self.max_throughput_detail(hit, cap)["throughput"]

    def rows(self):
        """The calibration table as [{"level", "hit_ratio", "throughput"}], by level then as given."""
        return [
            {"level": float(level), "hit_ratio": float(hit), "throughput": float(tput)}
            for level in self.levels
            for hit, tput in self.points[level]
        ]


def fit_read_model(results, idle_usage=0.0):
    """ReadModel from calibration results [{"hit_ratio", "level", "throughput", "converged"}].

    Points that did not converge, have no hit ratio or no throughput, or whose level is not above the idle usage
    are dropped, each drop recorded in the model's warnings."""
    idle = check_number("idle_usage", idle_usage, 0.0, 100.0)
    if isinstance(results, (str, bytes, dict)) or not hasattr(results, "__iter__"):
        raise ResourceModelError("results: %r is not a list of calibration results" % (results,))
    points, dropped = {}, []
    count = 0
    for index, row in enumerate(results):
        count += 1
        if not isinstance(row, dict):
            raise ResourceModelError("results[%d]: %r is not a mapping" % (index, row))
        for key in ("hit_ratio", "level", "throughput"):
            if key not in row:
                raise ResourceModelError("results[%d].%s: missing" % (index, key))
        level = check_number("results[%d].level" % index, row["level"], 0.0, 100.0, low_open=True)
        label = "level %g at hit ratio %s" % (level, row["hit_ratio"])
        if not row.get("converged", True):
            dropped.append("%s (%s)" % (label, row.get("reason") or "not converged"))
            continue
        if row["hit_ratio"] is None or row["throughput"] is None:
            dropped.append("%s (no %s)" % (label, "hit ratio" if row["hit_ratio"] is None else "throughput"))
            continue
        hit = check_hit_ratio("results[%d].hit_ratio" % index, row["hit_ratio"])
        tput = check_throughput("results[%d].throughput" % index, row["throughput"])
        if tput <= 0:
            dropped.append("%s (throughput 0)" % label)
            continue
        if level <= idle:
            dropped.append("%s (not above the idle usage %g)" % (label, idle))
            continue
        points.setdefault(level, []).append((hit, tput))
    if not points:
        raise ResourceModelError(
            "results: none of the %d calibration results is usable%s"
            % (count, (": " + "; ".join(dropped)) if dropped else "")
        )
    warnings = ["dropped calibration point: %s" % text for text in dropped]
    return ReadModel(points, idle_usage=idle, warnings=warnings)


class UpdateModel:
    """Update usage linear in update throughput: usage = intercept + slope * throughput (slope >= 0)."""

    def __init__(self, intercept, slope, r2=None, n=0, warnings=None):
        self.intercept = check_number("intercept", intercept)
        self.slope = check_number("slope", slope, 0.0)
        self.r2 = None if r2 is None else check_number("r2", r2)
        self.n = check_count("n", n, 0)
        self.warnings = list(warnings or [])

    @classmethod
    def fit(cls, points):
        """Least-squares fit of [(update throughput, usage)]; a negative slope is replaced by 0 (with a warning)."""
        require_libraries()
        if isinstance(points, (str, bytes, dict)) or not hasattr(points, "__iter__"):
            raise ResourceModelError("points: %r is not a list of (throughput, usage)" % (points,))
        xs, ys = [], []
        for index, pair in enumerate(points):
            try:
                tput, usage = pair
            except (TypeError, ValueError):
                raise ResourceModelError("points[%d]: %r is not a (throughput, usage) pair" % (index, pair)) from None
            xs.append(check_throughput("points[%d] throughput" % index, tput))
            ys.append(check_number("points[%d] usage" % index, usage))
        if len(set(xs)) < 2:
            raise ResourceModelError("points: the update model needs at least two different update throughputs")
        x, y = np.array(xs), np.array(ys)
        slope, intercept = np.polyfit(x, y, 1)
        warnings = []
        if slope < 0:
            warnings.append("update usage fell with throughput (slope %.4g); slope set to 0" % slope)
            slope, intercept = 0.0, float(y.mean())
        residual = float(np.sum((y - (intercept + slope * x)) ** 2))
        total = float(np.sum((y - y.mean()) ** 2))
        r2 = (1.0 - residual / total) if total > 0 else (1.0 if residual == 0 else 0.0)
        return cls(float(intercept), float(slope), r2=float(r2), n=len(xs), warnings=warnings)

    def usage(self, throughput):
        """Predicted usage (%) of an update throughput, idle part (the intercept) included."""
        return self.intercept + self.slope * check_throughput("update_throughput", throughput)

    def max_throughput(self, cap):
        """Largest update throughput with usage <= cap; 0 when cap <= intercept, None when the slope is 0."""
        cap = check_number("cap", cap, 0.0)
        if cap <= self.intercept:
            return 0.0
        if self.slope == 0:
            return None
        return (cap - self.intercept) / self.slope

    def to_dict(self):
        return {
            "intercept": float(self.intercept),
            "slope": float(self.slope),
            "r2": None if self.r2 is None else float(self.r2),
            "n": int(self.n),
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_dict(cls, data):
        if not isinstance(data, dict):
            raise ResourceModelError("update: %r is not a mapping" % (data,))
        for key in ("intercept", "slope"):
            if key not in data:
                raise ResourceModelError("update.%s: missing" % key)
        return cls(data["intercept"], data["slope"], data.get("r2"), data.get("n", 0), data.get("warnings"))


class ResourceModel:
    """Usage of a node = read usage + update usage (the write and read paths are mostly separate).

    The fixed part is counted once. The update model's intercept is the usage of a server that serves any load at
    all: the machine's idle usage plus, for Cassandra, the cost of its request threads, which spin before they park
    (measured here: 1 % idle, 20 % at 200 reads/s, 38 % at 4,000). The read model holds the same fixed part in its
    levels. So usage = max(read.usage(hit, reads), update.intercept when there is any load) + update.slope *
    updates: with reads the read model carries the fixed part, with updates only the intercept does.

    profile: what the model is valid for (hardware, store, cache size, ...), kept as given."""

    def __init__(self, read, update=None, profile=None):
        if not isinstance(read, ReadModel):
            raise ResourceModelError("read: %r is not a ReadModel" % (read,))
        if update is not None and not isinstance(update, UpdateModel):
            raise ResourceModelError("update: %r is not an UpdateModel" % (update,))
        if profile is not None and not isinstance(profile, dict):
            raise ResourceModelError("profile: %r is not a mapping" % (profile,))
        self.read = read
        self.update = update
        self.profile = plain(dict(profile or {}))

    def _update_slope(self, update_throughput):
        if update_throughput > 0 and self.update is None:
            raise ResourceModelError("update_throughput: %g but the model has no update model" % update_throughput)
        return 0.0 if self.update is None else self.update.slope

    def usage_detail(self, hit_ratio, read_throughput, update_throughput=0.0):
        """{"usage", "read_usage", "update_usage", "extrapolated", "hit_clamped"} of a read + update load."""
        hit = check_hit_ratio("hit_ratio", hit_ratio)
        reads = check_throughput("read_throughput", read_throughput)
        updates = check_throughput("update_throughput", update_throughput)
        slope = self._update_slope(updates)
        read = self.read.usage_detail(hit, reads)
        update_usage = slope * updates
        base = read["usage"]
        if self.update is not None and reads + updates > 0:
            base = max(base, self.update.intercept)
        return {
            "usage": base + update_usage,
            "read_usage": read["usage"],
            "update_usage": update_usage,
            "extrapolated": read["extrapolated"],
            "hit_clamped": read["hit_clamped"],
        }

    def usage(self, hit_ratio, read_throughput, update_throughput=0.0):
        """Predicted usage (%) of read_throughput reads and update_throughput updates per second."""
        return self.usage_detail(hit_ratio, read_throughput, update_throughput)["usage"]

    def usage_of_workload(self, hit_ratio, throughput, read_ratio):
        """Predicted usage (%) of a total throughput of which read_ratio are reads and the rest updates."""
        total = check_throughput("throughput", throughput)
        ratio = check_number("read_ratio", read_ratio, 0.0, 1.0)
        return self.usage(hit_ratio, total * ratio, total * (1.0 - ratio))

    def max_throughput(self, hit_ratio, read_ratio, cap):
        """Largest total throughput (read_ratio reads, the rest updates) whose predicted usage stays <= cap (%).

        Bisection on the monotone usage; 0 when even no load exceeds the cap, None when usage never reaches the
        cap (no reads and an update slope of 0)."""
        hit = check_hit_ratio("hit_ratio", hit_ratio)
        ratio = check_number("read_ratio", read_ratio, 0.0, 1.0)
        cap = check_number("cap", cap, 0.0)
        if ratio < 1.0 and self.update is None:
            raise ResourceModelError("read_ratio: %g leaves updates, but the model has no update model" % ratio)
        slope = 0.0 if self.update is None else self.update.slope

        def over(total):
            return self.usage(hit, total * ratio, total * (1.0 - ratio)) > cap

        if over(0.0) or over(1e-9):
            return 0.0
        if ratio == 0.0 and slope == 0.0:
            return None
        low, high = 0.0, 1.0
        for _i in range(2000):
            if over(high):
                break
            low, high = high, high * 2.0
        else:
            return None
        for _i in range(200):
            if high - low <= 1e-9 * high:
                break
            middle = (low + high) / 2.0
            if over(middle):
                high = middle
            else:
                low = middle
        return low

    def to_dict(self):
        """Plain JSON types only; from_dict(to_dict()) gives the same model and the same dict."""
        return {
            "format": MODEL_FORMAT,
            "levels": [float(level) for level in self.read.levels],
            "points": self.read.rows(),
            "idle_usage": float(self.read.idle_usage),
            "update": None if self.update is None else self.update.to_dict(),
            "warnings": list(self.read.warnings),
            "profile": plain(self.profile),
        }

    @classmethod
    def from_dict(cls, data):
        if not isinstance(data, dict):
            raise ResourceModelError("model: %r is not a mapping" % (data,))
        if data.get("format", MODEL_FORMAT) != MODEL_FORMAT:
            raise ResourceModelError("format: %r is not %s" % (data.get("format"), MODEL_FORMAT))
        for key in ("levels", "points"):
            if key not in data:
                raise ResourceModelError("%s: missing in the model" % key)
        points = {}
        for index, row in enumerate(data["points"] or ()):
            if not isinstance(row, dict) or not all(k in row for k in ("level", "hit_ratio", "throughput")):
                raise ResourceModelError("points[%d]: %r needs level, hit_ratio and throughput" % (index, row))
            level = check_number("points[%d].level" % index, row["level"], 0.0, 100.0, low_open=True)
            points.setdefault(level, []).append((row["hit_ratio"], row["throughput"]))
        levels = sorted(check_number("levels", level) for level in data["levels"] or ())
        if levels != sorted(points):
            raise ResourceModelError("levels: %s do not match the levels of the points %s" % (levels, sorted(points)))
        read = ReadModel(points, idle_usage=data.get("idle_usage", 0.0), warnings=data.get("warnings"))
        update = None if data.get("update") is None else UpdateModel.from_dict(data["update"])
        return cls(read, update, data.get("profile"))


def accuracy(predicted, observed):
    """1 - |predicted - observed| / observed, clipped to [0, 1]; observed 0 gives 1 when predicted is 0, else 0."""
    predicted = check_number("predicted", predicted)
    observed = check_number("observed", observed, 0.0)
    if observed == 0:
        return 1.0 if predicted == 0 else 0.0
    return min(1.0, max(0.0, 1.0 - abs(predicted - observed) / observed))


def summarize(rows):
    """{"mean", "sd" (sample), "min", "max", "n"} of accuracies (fractions; x100 for the paper's %).

    rows: numbers (accuracies), or mappings with "accuracy", or mappings with "predicted" and "observed"."""
    values = []
    for index, row in enumerate(rows):
        if isinstance(row, dict):
            if "accuracy" in row:
                values.append(check_number("rows[%d].accuracy" % index, row["accuracy"], 0.0, 1.0))
            elif "predicted" in row and "observed" in row:
                values.append(accuracy(row["predicted"], row["observed"]))
            else:
                raise ResourceModelError("rows[%d]: needs accuracy, or predicted and observed" % index)
        else:
            values.append(check_number("rows[%d]" % index, row, 0.0, 1.0))
    n = len(values)
    if not n:
        return {"mean": None, "sd": None, "min": None, "max": None, "n": 0}
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return {"mean": mean, "sd": sd, "min": min(values), "max": max(values), "n": n}
