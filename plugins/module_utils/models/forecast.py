# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Workload forecasting: the workload vector on a regular T_d grid, forecasters, and their accuracy.

The workload W(t) of IRIS (seed 001, section 4.1) is a vector of features observed every T_d = 30 s. Here it is
WORKLOAD_FIELDS: the read ratio, the total operations per second, and the share of each operation in the mix.
``series_from_samples`` puts observed workload samples (tactician.workload_sample/v1) on that grid and
``series_from_schedule`` does the same for a schedule (a replayed workload, or a job queue whose future is known).

Forecasters share one interface: ``fit(values) -> self``, ``predict(steps) -> [float]``, ``name`` and
``describe() -> dict``; ``make_forecaster(method, **options)`` builds one by name:

- ``last_value``: persistence, the baseline every other method must beat;
- ``arima``: ARIMA(p, d, q) with the order chosen by BIC (IRIS section 6.2), refit on every new origin;
- ``markov``: a Markov chain over discretized states (the workload predictor of OptimusCloud, seed 002);
- ``schedule``: a known future (job queue, schedule file) read back as a perfect forecast (the oracle of IRIS).

Accuracy follows IRIS Table 1: the share of predictions within 10 % of the actual value, at several horizons
(1, 2, 5 and 15 minutes = 2, 4, 10 and 30 steps of 30 s), by rolling-origin backtest on 500 points of history.
``choose_lookahead`` turns that into the lookahead T_L: the longest horizon up to which accuracy stays >= 70 %.

Only ``Arima`` needs third-party libraries (statsmodels and numpy). They are imported when an ARIMA model is first
fitted, never at import time; ``missing_libraries()`` lists what is absent for common.fail_imports. Everything
else is standard library. Errors are ForecastError (a ValueError) whose message starts with the field at fault
and, for a choice, lists the allowed values. Every result is deterministic for the same input.
"""

from __future__ import annotations

import inspect
import math
import traceback
import warnings

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import ModelError
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.samples import OPS, READ_OPS, WRITE_OPS
from ansible_collections.tactician.nosql.plugins.module_utils.workload import schedules, ycsb

SHARE_FIELDS = ("read", "update", "insert", "scan", "delete")
WORKLOAD_FIELDS = ("read_ratio", "throughput", *SHARE_FIELDS)
"""The workload vector: read ratio, total ops/s, and each operation's share of the total (ops_per_s / throughput)."""

RATIO_FIELDS = ("read_ratio", *SHARE_FIELDS)
FIELD_BOUNDS = dict.fromkeys(RATIO_FIELDS, (0.0, 1.0)) | {"throughput": (0.0, None)}
"""Valid range of every field: forecasts are clipped to it (None = unbounded)."""

METHODS = ("arima", "markov", "last_value", "schedule")
DEFAULT_STEP_S = 30.0
DEFAULT_HORIZONS_STEPS = (2, 4, 10, 30)
"""1, 2, 5 and 15 minutes at T_d = 30 s: the columns of IRIS Table 1."""
DEFAULT_HISTORY = 500
"""IRIS initializes its predictor with 500 samples of history."""
DEFAULT_TOLERANCE = 0.10
DEFAULT_THRESHOLD = 0.70
"""IRIS sets T_L to the horizon up to which the forecast stays at least 70 % accurate."""

RATIO_FLOOR = 0.1
"""Tolerance floor of ratio fields: a prediction is right when |p - a| <= 10 % of max(|a|, 0.1), so near a read
ratio of 0 the band is +-0.01 instead of shrinking to nothing."""
THROUGHPUT_FLOOR_FRACTION = 0.01
"""Tolerance floor of throughput: 1 % of the series' mean |value|, so an idle step (0 ops/s) needs a forecast within
0.1 % of the mean rate rather than an exact 0."""

MIN_HISTORY = 20
"""Fewer points than this and Arima falls back to the last value: BIC over the grid is meaningless on them."""

_CONSTANT_TOLERANCE = 1e-12


class ForecastError(ModelError, ValueError):
    """Bad input to a forecast. The message starts with the field at fault (and lists allowed values for a choice)."""


def missing_libraries():
    """[(library, traceback)] of what the ARIMA forecaster needs and cannot import; [] when all are there."""
    missing = []
    for name, module in (("numpy", "numpy"), ("statsmodels", "statsmodels.tsa.arima.model")):
        try:
            __import__(module)
        except ImportError:
            missing.append((name, traceback.format_exc()))
    return missing


# ---------------------------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------------------------


def _is_number(value):
    return isinstance(value, int | float) and not isinstance(value, bool)


def _finite(name, value):
    if not _is_number(value) or not math.isfinite(value):
        raise ForecastError("%s: %r is not a finite number" % (name, value))
    return float(value)


def _integer(name, value, minimum, maximum=None):
    if isinstance(value, bool) or not isinstance(value, int):
        raise ForecastError("%s: %r is not an integer" % (name, value))
    if value < minimum:
        raise ForecastError("%s: %r is below the minimum; choose a value >= %d" % (name, value, minimum))
    if maximum is not None and value > maximum:
        raise ForecastError("%s: %r is above the maximum; choose a value <= %d" % (name, value, maximum))
    return value


def _positive(name, value):
    value = _finite(name, value)
    if value <= 0:
        raise ForecastError("%s: %r is not allowed; choose a number > 0" % (name, value))
    return value


def _choice(name, value, allowed):
    if not isinstance(value, str) or value not in allowed:
        raise ForecastError("%s: %r is not allowed; choose one of %s" % (name, value, ", ".join(allowed)))
    return value


def _values(values, name="values", minimum=1):
    if isinstance(values, str | bytes | dict) or not hasattr(values, "__iter__"):
        raise ForecastError("%s: %r is not a list of numbers" % (name, values))
    out = [_finite("%s[%d]" % (name, index), value) for index, value in enumerate(values)]
    if len(out) < minimum:
        raise ForecastError("%s: needs at least %d value(s), got %d" % (name, minimum, len(out)))
    return out


def _bounds(bounds):
    if bounds is None:
        return (None, None)
    if isinstance(bounds, str | bytes | dict) or not hasattr(bounds, "__len__") or len(bounds) != 2:
        raise ForecastError("bounds: %r is not allowed; give (low, high) with None for no limit" % (bounds,))
    low, high = (None if value is None else _finite("bounds", value) for value in bounds)
    if low is not None and high is not None and low > high:
        raise ForecastError("bounds: low %r is above high %r" % (low, high))
    return (low, high)


def _clip(value, bounds):
    low, high = bounds
    if low is not None and value < low:
        return low
    if high is not None and value > high:
        return high
    return value


def _fields(fields, allowed=WORKLOAD_FIELDS, name="fields"):
    if isinstance(fields, str):
        fields = (fields,)
    if fields is None or not hasattr(fields, "__iter__"):
        raise ForecastError("%s: %r is not a list of fields; choose from %s" % (name, fields, ", ".join(allowed)))
    fields = tuple(fields)
    if not fields:
        raise ForecastError("%s: is empty; choose from %s" % (name, ", ".join(allowed)))
    for field in fields:
        _choice(name, field, allowed)
    return fields


# ---------------------------------------------------------------------------------------------------------------
# Series
# ---------------------------------------------------------------------------------------------------------------


def _vector(ops):
    """The workload vector of averaged ops/s: read ratio (None when idle), throughput, each op's share."""
    throughput = math.fsum(ops[op] for op in OPS)
    reads = math.fsum(ops[op] for op in READ_OPS)
    writes = math.fsum(ops[op] for op in WRITE_OPS)
    row = {
        "read_ratio": reads / (reads + writes) if reads + writes > 0 else None,
        "throughput": throughput,
    }
    for op in SHARE_FIELDS:
        row[op] = ops[op] / throughput if throughput > 0 else None
    return row


def _check_sample(index, sample):
    where = "samples[%d]" % index
    if not isinstance(sample, dict):
        raise ForecastError("%s: %r is not a workload sample (a mapping)" % (where, sample))
    for key in ("time", "window_s", "ops_per_s"):
        if key not in sample:
            raise ForecastError("%s.%s: is required" % (where, key))
    time = _finite(where + ".time", sample["time"])
    window = _positive(where + ".window_s", sample["window_s"])
    ops = sample["ops_per_s"]
    if not isinstance(ops, dict):
        raise ForecastError("%s.ops_per_s: %r is not a mapping of operation to ops/s" % (where, ops))
    rates = {}
    for op in OPS:
        rate = _finite("%s.ops_per_s.%s" % (where, op), ops.get(op, 0.0))
        if rate < 0:
            raise ForecastError("%s.ops_per_s.%s: %r is below 0" % (where, op, rate))
        rates[op] = rate
    return time, window, rates


def series_from_samples(samples, step_s=DEFAULT_STEP_S, fields=WORKLOAD_FIELDS):
    """Put workload samples on a regular grid of step_s (T_d) seconds: {"t", field: [...], "step_s", "filled"}.

    samples: workload sample dicts (telemetry schema v1) in any order, of whatever node the caller picked (pass
    the aggregate node "cluster" for the cluster's workload; samples of several nodes would be averaged). A sample
    covers [time - window_s, time]; it belongs to the step holding the middle of its window (of its last step_s
    seconds when the window is longer than a step), which tolerates clock jitter of up to half a step. The grid
    starts where the earliest sample does; t[k] is the start of step k, which covers [t[k], t[k] + step_s).

    Samples in the same step are averaged, weighted by their window (ops/s averaged over time); the vector is
    then computed from the averaged rates: throughput = sum of ops/s, share of op = ops_per_s[op] / throughput,
    read_ratio = (read + scan) / (read + scan + update + insert + delete), as in the sample itself. A step with no
    sample takes the previous step's values and is counted in "filled". An idle step keeps throughput 0 and takes
    the previous read ratio and shares (0 when the series starts idle).
    """
    step_s = _positive("step_s", step_s)
    fields = _fields(fields)
    if isinstance(samples, str | bytes | dict) or not hasattr(samples, "__iter__"):
        raise ForecastError("samples: %r is not a list of workload samples" % (samples,))
    checked = [_check_sample(index, sample) for index, sample in enumerate(samples)]
    if not checked:
        raise ForecastError("samples: is empty; give at least one workload sample")
    checked = [(time, min(window, step_s), rates) for time, window, rates in checked]
    origin = min(time - span for time, span, _rates in checked)
    buckets = {}
    for time, span, rates in checked:
        index = int(math.floor((time - span / 2.0 - origin) / step_s + 1e-9))
        weight, sums = buckets.get(index, (0.0, dict.fromkeys(OPS, 0.0)))
        buckets[index] = (weight + span, {op: sums[op] + span * rates[op] for op in OPS})
    last_index = max(buckets)
    series = {"t": []} | {field: [] for field in fields}
    previous = dict.fromkeys(WORKLOAD_FIELDS, 0.0)
    filled = 0
    for index in range(last_index + 1):
        if index in buckets:
            weight, sums = buckets[index]
            row = _vector({op: sums[op] / weight for op in OPS})
            row = {field: previous[field] if value is None else value for field, value in row.items()}
        else:
            row = dict(previous)
            filled += 1
        series["t"].append(origin + index * step_s)
        for field in fields:
            series[field].append(row[field])
        previous = row
    series["step_s"] = step_s
    series["filled"] = filled
    return series


def series_from_schedule(schedule, step_s=DEFAULT_STEP_S, fields=WORKLOAD_FIELDS):
    """The workload vector of a schedule (Schedule, its dict, or a schedule file path) per step of step_s seconds.

    Same shape as series_from_samples (t = seconds from the schedule's start, "filled" = 0), from
    schedules.expand(), counted as a monitor on the servers would count: a readmodifywrite is one read and one
    update, so throughput = rate x server operations per client operation (= rate for every other mix) and the
    shares are those of server operations. An unthrottled step (rate 0) has throughput 0: its rate is unknown.
    """
    step_s = _positive("step_s", step_s)
    fields = _fields(fields)
    if isinstance(schedule, str) or hasattr(schedule, "__fspath__"):
        schedule = schedules.load_schedule(schedule)
    series = {"t": []} | {field: [] for field in fields}
    for step in schedules.expand(schedule, step_s):
        reads, writes = ycsb.server_operations(step.mix)
        total = reads + writes
        rmw = step.mix.get("readmodifywrite", 0.0)
        server = {op: step.mix.get(op, 0.0) for op in SHARE_FIELDS}
        server["read"] += rmw
        server["update"] += rmw
        row = {"read_ratio": step.read_ratio, "throughput": step.rate * total}
        row.update({op: server[op] / total for op in SHARE_FIELDS})
        series["t"].append(step.t)
        for field in fields:
            series[field].append(row[field])
    series["step_s"] = step_s
    series["filled"] = 0
    return series


def _series_field(series, field, name="series"):
    if not isinstance(series, dict):
        raise ForecastError("%s: %r is not a series (a mapping with t and field lists)" % (name, series))
    if field not in series:
        present = [f for f in WORKLOAD_FIELDS if f in series]
        raise ForecastError(
            "%s.%s: not in the series; choose one of %s" % (name, field, ", ".join(present) or "(no field)")
        )
    return _values(series[field], "%s.%s" % (name, field))


def _series_step(series, name="series"):
    if "step_s" in series:
        return _positive("%s.step_s" % name, series["step_s"])
    times = series.get("t") or []
    if len(times) >= 2:
        return _positive("%s.t" % name, float(times[1]) - float(times[0]))
    return DEFAULT_STEP_S


# ---------------------------------------------------------------------------------------------------------------
# Forecasters
# ---------------------------------------------------------------------------------------------------------------


class Forecaster:
    """Common interface: fit(values) -> self, predict(steps) -> [float] clipped to bounds, describe() -> dict."""

    name = "forecaster"

    def __init__(self, bounds=None):
        self.bounds = _bounds(bounds)
        self._last = None

    def fit(self, values):
        raise NotImplementedError

    def predict(self, steps):
        raise NotImplementedError

    def describe(self):
        return {"name": self.name, "bounds": list(self.bounds)}

    def _steps(self, steps):
        steps = _integer("steps", steps, 0)
        if self._last is None:
            raise ForecastError("values: nothing fitted yet; call fit() before predict()")
        return steps

    def _clipped(self, values):
        return [_clip(float(value), self.bounds) for value in values]


class LastValue(Forecaster):
    """Persistence: every future step equals the last observed value (clipped to bounds)."""

    name = "last_value"

    def fit(self, values):
        self._last = _values(values)[-1]
        return self

    def predict(self, steps):
        steps = self._steps(steps)
        return self._clipped([self._last] * steps)


class Arima(Forecaster):
    """ARIMA(p, d, q) forecaster (statsmodels), the order picked by an information criterion over a small grid.

    Order selection: d = 1 by default (min_d = max_d = 1), as IRIS' (20, 1, 20): workloads here jump between levels
    and stay there, and a stationary model (d = 0) forecasts a drift back to the long-run mean that such a series
    never sits at (measured in benchmarks/forecast_accuracy.py: 0-8 % within 10 % on the fast-switching workloads
    against 70-85 % with d = 1). With min_d = 0, d is chosen first by KPSS unit-root tests (d_selection="kpss", as
    auto.arima does: a criterion cannot compare models of different d, whose likelihoods are of different data;
    "criterion" lets the criterion pick d too). Then every (p, q) with p <= max_p and q <= max_q (and, for d = 1,
    with and without a drift term) is estimated by Hannan-Rissanen (regressions: milliseconds per order) and scored
    by criterion ("bic" as in IRIS, or "aic", "hqic"); the best is then fitted by exact maximum likelihood (state
    space). With estimator="statespace" every grid order is fitted by maximum likelihood instead: exact, 10-20 times
    slower.
    d = 0 models carry a constant (the mean).

    Why a small grid (3, 1, 3) when IRIS picked (20, 1, 20): IRIS chose its order once, offline, on 122,018
    samples of 60 days; here the order is chosen online on the same 500 points the model is fitted on, where BIC's
    log(n) penalty per parameter rules out 41-parameter models anyway, and a grid of 32-48 orders must fit in a few
    seconds. The workloads here are piecewise constant or smooth, which low orders describe.

    Refit: the grid is searched at the first fit and again every reselect_every fits; the fits in between keep the
    order and re-estimate its parameters by maximum likelihood starting from the previous estimate (refit="warm"),
    or keep the parameters too and only run the filter over the new data (refit="apply": cheapest). Only point
    forecasts are used, so no covariance of the parameters is computed.

    Fallback to the last value, named in describe()["fallback"]: fewer than min_history points, a constant series,
    a fit that fails, or a forecast that is not finite. statsmodels warnings are silenced inside fit and predict
    only (warnings.catch_warnings), never globally.
    """

    name = "arima"
    CRITERIA = ("bic", "aic", "hqic")
    ESTIMATORS = ("hannan_rissanen", "statespace")
    REFITS = ("warm", "apply")
    D_SELECTIONS = ("kpss", "criterion")

    def __init__(
        self,
        max_p=3,
        max_d=1,
        max_q=3,
        min_d=None,
        criterion="bic",
        order=None,
        reselect_every=20,
        refit="warm",
        estimator="hannan_rissanen",
        min_history=MIN_HISTORY,
        bounds=None,
        d_selection="kpss",
    ):
        super().__init__(bounds)
        self.d_selection = _choice("d_selection", d_selection, self.D_SELECTIONS)
        self.max_p = _integer("max_p", max_p, 0, 30)
        self.max_d = _integer("max_d", max_d, 0, 2)
        self.max_q = _integer("max_q", max_q, 0, 30)
        # None: d = 1 (as IRIS), or 0 when max_d is 0.
        self.min_d = min(1, self.max_d) if min_d is None else _integer("min_d", min_d, 0, self.max_d)
        self.criterion = _choice("criterion", criterion, self.CRITERIA)
        self.estimator = _choice("estimator", estimator, self.ESTIMATORS)
        self.refit = _choice("refit", refit, self.REFITS)
        self.reselect_every = _integer("reselect_every", reselect_every, 1)
        self.min_history = _integer("min_history", min_history, 3)
        if order is not None:
            if isinstance(order, str | bytes | dict) or not hasattr(order, "__len__") or len(order) != 3:
                raise ForecastError(
                    "order: %r is not allowed; give (p, d, q) or null to choose by %s" % (order, criterion)
                )
            order = (
                _integer("order.p", order[0], 0, 60),
                _integer("order.d", order[1], 0, 2),
                _integer("order.q", order[2], 0, 60),
            )
        self.fixed_order = order
        self._order = order
        self._trend = None if order is None else self._default_trend(order[1])
        self._selection_score = None
        self._result = None
        self._mle = None
        self._since_selection = 0
        self._fits = 0
        self._selections = 0
        self._fallback = None
        self._error = None

    @staticmethod
    def _default_trend(d):
        return "c" if d == 0 else "n"

    def _differences(self, y):
        """d by KPSS tests as in Hyndman-Khandakar's auto.arima: difference while the series is not stationary
        at the 5 % level (criteria such as BIC cannot compare orders of different d: the likelihood of a differenced
        model is of other data)."""
        import numpy
        from statsmodels.tsa.stattools import kpss

        d = self.min_d
        series = numpy.diff(y, n=d) if d else y
        while d < self.max_d:
            if len(series) < 8 or numpy.ptp(series) <= _CONSTANT_TOLERANCE:
                break
            try:
                p_value = kpss(series, regression="c", nlags="auto")[1]
            except Exception:  # a test that cannot run: keep this d
                break
            if p_value >= 0.05:
                break
            d += 1
            series = numpy.diff(series)
        return d

    def _grid(self, only_d=None):
        for d in range(self.min_d, self.max_d + 1):
            if only_d is not None and d != only_d:
                continue
            trends = ("c",) if d == 0 else ("n", "t") if d == 1 else ("n",)
            for p in range(self.max_p + 1):
                for q in range(self.max_q + 1):
                    for trend in trends:
                        yield (p, d, q), trend

    def _select(self, y, arima):
        best = None
        only_d = self._differences(y) if self.d_selection == "kpss" and self.min_d < self.max_d else None
        for order, trend in self._grid(only_d):
            try:
                if self.estimator == "statespace":
                    result = arima(y, order=order, trend=trend).fit(cov_type="none")
                else:
                    result = arima(y, order=order, trend=trend).fit(method="hannan_rissanen")
                score = float(getattr(result, self.criterion))
            except Exception:  # an order that cannot be estimated is left out of the grid
                continue
            if not math.isfinite(score):
                continue
            key = (round(score, 9), sum(order) + (trend == "t"), order, trend)
            if best is None or key < best[0]:
                best = (key, order, trend, score)
        if best is None:
            raise ForecastError("values: no ARIMA order of the grid could be estimated")
        self._order, self._trend, self._selection_score = best[1], best[2], best[3]
        self._selections += 1
        self._since_selection = 0
        self._mle = None

    def _estimate(self, y, arima):
        if self.fixed_order is None and (self._mle is None or self._since_selection >= self.reselect_every):
            self._select(y, arima)
        if self.refit == "apply" and self._mle is not None and self._since_selection > 0:
            result = self._mle.apply(y)
        else:
            model = arima(y, order=self._order, trend=self._trend)
            result = None
            if self._mle is not None:
                try:
                    result = model.fit(start_params=self._mle.params, cov_type="none")
                except Exception:  # a bad warm start: fit from statsmodels' own start
                    result = None
            if result is None:
                result = model.fit(cov_type="none")
            self._mle = result
        if not math.isfinite(float(result.llf)):
            raise ForecastError("values: the ARIMA likelihood is not finite")
        self._since_selection += 1
        return result

    def fit(self, values):
        values = _values(values)
        self._last = values[-1]
        self._fallback = None
        self._error = None
        self._result = None
        self._fits += 1
        spread = max(values) - min(values)
        if len(values) < self.min_history:
            self._fallback = "history of %d point(s) is shorter than min_history %d" % (len(values), self.min_history)
            return self
        if spread <= _CONSTANT_TOLERANCE * max(1.0, abs(values[-1])):
            self._fallback = "constant series"
            return self
        missing = missing_libraries()
        if missing:
            self._fallback = "missing library: %s" % ", ".join(name for name, _tb in missing)
            return self
        import numpy
        from statsmodels.tsa.arima.model import ARIMA

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._result = self._estimate(numpy.asarray(values, dtype=float), ARIMA)
        except Exception as exc:  # any statsmodels failure falls back to the last value
            self._result = None
            self._mle = None
            self._fallback = "fit failed"
            self._error = "%s: %s" % (type(exc).__name__, exc)
        return self

    def predict(self, steps):
        steps = self._steps(steps)
        if steps == 0:
            return []
        if self._result is not None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    values = [float(value) for value in self._result.forecast(steps)]
                if all(math.isfinite(value) for value in values):
                    return self._clipped(values)
                self._fallback = "forecast not finite"
            except Exception as exc:
                self._fallback = "forecast failed"
                self._error = "%s: %s" % (type(exc).__name__, exc)
        return self._clipped([self._last] * steps)

    def describe(self):
        info = super().describe()
        info.update(
            order=list(self._order) if self._order is not None else None,
            trend={"c": "constant", "t": "drift", "n": "none"}.get(self._trend),
            criterion=self.criterion,
            d_selection=self.d_selection,
            grid=None if self.fixed_order is not None else [self.max_p, self.max_d, self.max_q],
            estimator=self.estimator,
            refit=self.refit,
            reselect_every=self.reselect_every,
            fits=self._fits,
            selections=self._selections,
            fallback=self._fallback,
        )
        info["selection_" + self.criterion] = self._selection_score
        if self._result is not None:
            info[self.criterion] = float(getattr(self._result, self.criterion))
            info["params"] = [float(value) for value in self._result.params]
        if self._error:
            info["error"] = self._error
        return info


class Markov(Forecaster):
    """Markov chain over discretized states (OptimusCloud's workload predictor).

    States: bins equal-width bins over [low, high]: the forecaster's bounds when both are finite (the fixed range
    of a ratio), else the range of the training data (clamped to a bound given on one side). Only states that occur
    in the training data take part, so nothing is forecast where the series never went. Transitions between
    consecutive points are counted and Laplace-smoothed (alpha added to every count between occurring states).
    h steps ahead the distribution is the last point's state times the h-step transition matrix P^h.
    predict="mode": the centroid (mean of the training values in it) of the most likely state (ties: the state
    whose centroid is closest to the last value, then the lowest); predict="mean": the expectation of the
    centroids under that distribution.
    """

    name = "markov"
    PREDICTIONS = ("mode", "mean")

    def __init__(self, bins=10, predict="mode", alpha=1.0, bounds=None):
        super().__init__(bounds)
        self.bins = _integer("bins", bins, 1, 1000)
        self.prediction = _choice("predict", predict, self.PREDICTIONS)
        self.alpha = _finite("alpha", alpha)
        if self.alpha < 0:
            raise ForecastError("alpha: %r is below the minimum; choose a value >= 0" % (alpha,))
        self._states = []
        self._centroids = []
        self._matrix = []
        self._start = 0
        self._range = (None, None)
        self._fixed = False

    def _bin(self, value):
        low, high = self._range
        if high <= low:
            return 0
        index = int((min(max(value, low), high) - low) / (high - low) * self.bins)
        return min(index, self.bins - 1)

    def fit(self, values):
        values = _values(values)
        low, high = self.bounds
        self._fixed = low is not None and high is not None
        if not self._fixed:
            low = min(values) if low is None else max(low, min(values))
            high = max(values) if high is None else min(high, max(values))
            high = max(high, low)
        self._range = (low, high)
        bins = [self._bin(value) for value in values]
        self._states = sorted(set(bins))
        position = {state: index for index, state in enumerate(self._states)}
        size = len(self._states)
        sums = [0.0] * size
        counts = [0] * size
        for value, state in zip(values, bins, strict=True):
            sums[position[state]] += value
            counts[position[state]] += 1
        self._centroids = [sums[i] / counts[i] for i in range(size)]
        transitions = [[0.0] * size for _i in range(size)]
        for a, b in zip(bins, bins[1:], strict=False):
            transitions[position[a]][position[b]] += 1.0
        matrix = []
        for row in transitions:
            total = math.fsum(row) + self.alpha * size
            if total > 0:
                matrix.append([(count + self.alpha) / total for count in row])
            else:  # a state left only at the end of the series, with alpha = 0: assume it stays
                matrix.append([0.0] * size)
        for index, row in enumerate(matrix):
            if not any(row):
                row[index] = 1.0
        self._matrix = matrix
        self._start = position[bins[-1]]
        self._last = values[-1]
        return self

    def distributions(self, steps):
        """The state distribution 1..steps ahead: [[P(state) for state in states]]."""
        steps = self._steps(steps)
        size = len(self._states)
        current = [0.0] * size
        current[self._start] = 1.0
        out = []
        for _i in range(steps):
            current = [math.fsum(current[i] * self._matrix[i][j] for i in range(size)) for j in range(size)]
            out.append(current)
        return out

    def predict(self, steps):
        values = []
        for dist in self.distributions(steps):
            if self.prediction == "mean":
                values.append(math.fsum(p * c for p, c in zip(dist, self._centroids, strict=True)))
            else:
                top = max(dist)
                best = min(
                    (abs(self._centroids[i] - self._last), i)
                    for i, p in enumerate(dist)
                    if p >= top - 1e-12 * max(1.0, top)
                )
                values.append(self._centroids[best[1]])
        return self._clipped(values)

    def describe(self):
        info = super().describe()
        info.update(
            bins=self.bins,
            predict=self.prediction,
            alpha=self.alpha,
            range=list(self._range),
            fixed_range=self._fixed,
            states=len(self._states),
        )
        return info


class ScheduleForecast(Forecaster):
    """A known future (a job queue, a schedule file) read back: the perfect forecast ("oracle") of IRIS.

    series: the known values of one field, one per step; start_index: the index in series of the first value
    given to fit(). After fit(values) the current position is start_index + len(values) - 1, and predict(steps)
    returns the known values after it. Past the end of what is known, the last known value is repeated (counted in
    describe()["beyond_known"]). fit(values, start_index=k) moves the start, for rolling-origin backtests.
    """

    name = "schedule"

    def __init__(self, series, start_index=0, bounds=None):
        super().__init__(bounds)
        self.series = _values(series, "series")
        self.start_index = _integer("start_index", start_index, 0)
        self._position = None
        self._beyond = 0

    def fit(self, values, start_index=None):
        values = _values(values)
        if start_index is not None:
            self.start_index = _integer("start_index", start_index, 0)
        position = self.start_index + len(values) - 1
        if position >= len(self.series):
            raise ForecastError(
                "start_index: %d + %d fitted values run past the %d known values"
                % (self.start_index, len(values), len(self.series))
            )
        self._position = position
        self._last = values[-1]
        return self

    def seek(self, index):
        """Forecast from series[index] on, without fitting: the current position becomes index - 1."""
        index = _integer("start_index", index, 0)
        self._position = index - 1
        self._last = self.series[min(max(index - 1, 0), len(self.series) - 1)]
        return self

    def predict(self, steps):
        steps = self._steps(steps)
        known = self.series[self._position + 1 : self._position + 1 + steps]
        missing = steps - len(known)
        if missing:
            self._beyond += missing
            known = known + [self.series[-1]] * missing
        return self._clipped(known)

    def describe(self):
        info = super().describe()
        info.update(known=len(self.series), position=self._position, beyond_known=self._beyond)
        return info


FORECASTERS = {"arima": Arima, "markov": Markov, "last_value": LastValue, "schedule": ScheduleForecast}


def method_options(method):
    """The option names make_forecaster(method, ...) accepts."""
    _choice("method", method, METHODS)
    init = FORECASTERS[method].__init__
    return tuple(name for name in inspect.signature(init).parameters if name != "self")


def make_forecaster(method, **options):
    """A new forecaster by method name (arima, markov, last_value, schedule) with its options."""
    _choice("method", method, METHODS)
    allowed = method_options(method)
    for name in options:
        if name not in allowed:
            raise ForecastError(
                "%s: is not an option of method %s; choose from %s" % (name, method, ", ".join(allowed))
            )
    if method == "schedule" and "series" not in options:
        raise ForecastError("series: method schedule needs the known future values (series=...)")
    return FORECASTERS[method](**options)


# ---------------------------------------------------------------------------------------------------------------
# Accuracy
# ---------------------------------------------------------------------------------------------------------------


def within_tolerance(predicted, actual, tolerance=DEFAULT_TOLERANCE, floor=0.0):
    """True when |predicted - actual| <= tolerance * max(|actual|, floor): IRIS' "within 10 % of the actual".

    floor keeps an actual of 0 from making every forecast wrong: use RATIO_FLOOR (0.1) for the read ratio and the
    shares, and THROUGHPUT_FLOOR_FRACTION (1 %) of the series' mean for throughput (see default_floor()).
    """
    predicted = _finite("predicted", predicted)
    actual = _finite("actual", actual)
    tolerance = _finite("tolerance", tolerance)
    floor = _finite("floor", floor)
    if tolerance < 0:
        raise ForecastError("tolerance: %r is below the minimum; choose a value >= 0" % (tolerance,))
    if floor < 0:
        raise ForecastError("floor: %r is below the minimum; choose a value >= 0" % (floor,))
    return abs(predicted - actual) <= tolerance * max(abs(actual), floor) + 1e-12 * max(1.0, abs(actual))


def default_floor(values, field=None, bounds=None):
    """The tolerance floor of a series: RATIO_FLOOR for a ratio field (or bounds (0, 1)), else 1 % of mean |value|."""
    if field is not None:
        _choice("field", field, WORKLOAD_FIELDS)
    if field in RATIO_FIELDS or (field is None and _bounds(bounds) == (0.0, 1.0)):
        return RATIO_FLOOR
    values = _values(values)
    return THROUGHPUT_FLOOR_FRACTION * math.fsum(abs(value) for value in values) / len(values)


def _horizons(horizons_steps):
    if isinstance(horizons_steps, int):
        horizons_steps = (horizons_steps,)
    if isinstance(horizons_steps, str | bytes) or not hasattr(horizons_steps, "__iter__"):
        raise ForecastError("horizons_steps: %r is not a list of step counts" % (horizons_steps,))
    out = sorted({_integer("horizons_steps", h, 1) for h in horizons_steps})
    if not out:
        raise ForecastError("horizons_steps: is empty; give at least one horizon >= 1 step")
    return tuple(out)


def backtest(
    values,
    method,
    horizons_steps=DEFAULT_HORIZONS_STEPS,
    history=DEFAULT_HISTORY,
    origins=None,
    stride=5,
    tolerance=DEFAULT_TOLERANCE,
    floor=None,
    field=None,
    **options,
):
    """Rolling-origin accuracy of a method on one series.

    An origin o is the index of the last observed point: the forecaster is fitted on values[o - history + 1 .. o]
    and predicts max(horizons) steps; the prediction h steps ahead is scored against values[o + h] with
    within_tolerance(). Default origins: every stride-th index from history - 1 while o + max(horizons) stays in the
    series. Explicit origins may have less history; a horizon past the end is not scored at that origin.

    field (optional) names the workload field: it sets bounds (FIELD_BOUNDS) and the floor (default_floor) unless
    given. method "schedule" reads the known future from series= (default: values themselves, a perfect forecast).
    One forecaster serves every origin, so ARIMA re-selects its order only every reselect_every origins.

    Returns {"method", "field", "horizons": {h: {"accuracy", "n", "mape"}}, "origins", "history", "stride",
    "tolerance", "floor", "fallbacks", "describe"}; accuracy is None where n = 0; mape is the mean of
    |p - a| / max(|a|, floor).
    """
    values = _values(values)
    _choice("method", method, METHODS)
    horizons = _horizons(horizons_steps)
    history = _integer("history", history, 1)
    stride = _integer("stride", stride, 1)
    tolerance = _finite("tolerance", tolerance)
    if field is not None:
        _choice("field", field, WORKLOAD_FIELDS)
        options.setdefault("bounds", FIELD_BOUNDS[field])
    if floor is None:
        floor = default_floor(values, field, options.get("bounds"))
    floor = _finite("floor", floor)
    longest = horizons[-1]
    n = len(values)
    if origins is None:
        if n < history + longest:
            raise ForecastError(
                "history: %d point(s) of history and %d step(s) ahead need %d points; the series has %d"
                % (history, longest, history + longest, n)
            )
        origins = range(history - 1, n - longest, stride)
    else:
        origins = [_integer("origins", o, 0, n - 2) for o in origins]
    if method == "schedule":
        options.setdefault("series", values)
    forecaster = make_forecaster(method, **options)
    hits = dict.fromkeys(horizons, 0)
    counts = dict.fromkeys(horizons, 0)
    errors = dict.fromkeys(horizons, 0.0)
    used = 0
    fallbacks = 0
    for origin in origins:
        start = max(0, origin - history + 1)
        window = values[start : origin + 1]
        if method == "schedule":
            forecaster.fit(window, start_index=start)
        else:
            forecaster.fit(window)
        predicted = forecaster.predict(longest)
        if forecaster.describe().get("fallback"):
            fallbacks += 1
        used += 1
        for h in horizons:
            if origin + h >= n:
                continue
            actual = values[origin + h]
            counts[h] += 1
            hits[h] += within_tolerance(predicted[h - 1], actual, tolerance, floor)
            errors[h] += abs(predicted[h - 1] - actual) / max(abs(actual), floor, 1e-12)
    result = {
        h: {
            "accuracy": hits[h] / counts[h] if counts[h] else None,
            "n": counts[h],
            "mape": errors[h] / counts[h] if counts[h] else None,
        }
        for h in horizons
    }
    return {
        "method": method,
        "field": field,
        "horizons": result,
        "origins": used,
        "history": history,
        "stride": stride,
        "tolerance": tolerance,
        "floor": floor,
        "fallbacks": fallbacks,
        "describe": forecaster.describe(),
    }


def choose_lookahead(horizons_result, threshold=DEFAULT_THRESHOLD, step_s=DEFAULT_STEP_S):
    """The lookahead T_L from backtest accuracies: the longest horizon up to which accuracy stays >= threshold.

    horizons_result: backtest()'s result or its "horizons" {h: {"accuracy", ...}}. Horizons are taken shortest
    first and the first one below the threshold (or not scored) ends the search: a longer horizon that happens
    to score better after a worse one is not trusted. When even the shortest misses, the lookahead is 0 and the
    reason says so: the planner then does not plan ahead.

    Returns {"lookahead_steps", "lookahead_s", "horizon", "accuracy", "threshold", "reason"}.
    """
    threshold = _finite("threshold", threshold)
    step_s = _positive("step_s", step_s)
    if isinstance(horizons_result, dict) and "horizons" in horizons_result:
        horizons_result = horizons_result["horizons"]
    if not isinstance(horizons_result, dict) or not horizons_result:
        raise ForecastError("horizons_result: %r is not a mapping of horizon to accuracy" % (horizons_result,))
    table = {}
    for h, entry in horizons_result.items():
        steps = _integer("horizons_result", int(h) if isinstance(h, str) and h.isdigit() else h, 1)
        accuracy = entry.get("accuracy") if isinstance(entry, dict) else entry
        table[steps] = None if accuracy is None else _finite("horizons_result[%d].accuracy" % steps, accuracy)
    chosen = None
    failed = None
    for steps in sorted(table):
        accuracy = table[steps]
        if accuracy is None or accuracy < threshold:
            failed = (steps, accuracy)
            break
        chosen = (steps, accuracy)

    def show(steps, accuracy):
        score = "not scored" if accuracy is None else "%.1f %%" % (100.0 * accuracy)
        return "%g s (%d steps): %s" % (steps * step_s, steps, score)

    if chosen is None:
        reason = "no horizon reaches %.0f %% accuracy (shortest %s); do not plan ahead" % (
            100.0 * threshold,
            show(*failed),
        )
        return {
            "lookahead_steps": 0,
            "lookahead_s": 0.0,
            "horizon": None,
            "accuracy": None,
            "threshold": threshold,
            "reason": reason,
        }
    reason = "accuracy stays >= %.0f %% up to %s" % (100.0 * threshold, show(*chosen))
    if failed is not None:
        reason += "; next horizon %s" % show(*failed)
    else:
        reason += ", the longest horizon tested"
    return {
        "lookahead_steps": chosen[0],
        "lookahead_s": chosen[0] * step_s,
        "horizon": chosen[0],
        "accuracy": chosen[1],
        "threshold": threshold,
        "reason": reason,
    }


# ---------------------------------------------------------------------------------------------------------------
# Forecast and evaluation of a workload series
# ---------------------------------------------------------------------------------------------------------------


def _known_values(known, field):
    if isinstance(known, dict):
        return _series_field(known, field, "known")
    if known is None:
        raise ForecastError("known: method schedule needs the known series (a series dict from series_from_schedule)")
    return _values(known, "known")


def forecast(series, steps, method="arima", fields=None, **options):
    """Forecast the workload vector steps steps ahead: fit each field on all of the series, predict, make consistent.

    series: from series_from_samples / series_from_schedule. fields: default every WORKLOAD_FIELDS field present.
    Each field is forecast on its own (univariate), clipped to its FIELD_BOUNDS. Then, when all five shares are
    forecast, they are re-normalized to sum to 1 (a mix; "other" operations are not part of the vector) and, if
    read_ratio is forecast too, it is recomputed from them as read + scan so that the vector is consistent (the
    read ratio's own forecast is replaced).

    method "schedule" reads the future from known= (a series dict such as series_from_schedule's, or one list for a
    single field; default: the series itself, when the series is the schedule) and start_index= (the index in
    known of the first step to forecast; default len(series): known starts with the series and the forecast
    follows its last step). So forecast(series_from_schedule(queue), 20, method="schedule", start_index=k) returns
    the queue's steps k .. k + 19. Future times are t[0] + index * step_s.

    Returns {"method", "steps", "step_s", "t": future step times, "fields": {field: [values]},
    "describe": {field: forecaster.describe()}}.
    """
    _choice("method", method, METHODS)
    if not isinstance(series, dict):
        raise ForecastError("series: %r is not a series (a mapping with t and field lists)" % (series,))
    steps = _integer("steps", steps, 0)
    if fields is None:
        fields = tuple(field for field in WORKLOAD_FIELDS if field in series)
    fields = _fields(fields)
    if "bounds" in options:
        raise ForecastError("bounds: set per field by forecast() (FIELD_BOUNDS); not an option here")
    step_s = _series_step(series)
    known = options.pop("known", None)
    start_index = options.pop("start_index", None)
    if method != "schedule" and (known is not None or start_index is not None):
        raise ForecastError(
            "%s: only method schedule reads a known future; method is %s"
            % ("known" if known is not None else "start_index", method)
        )
    times = series.get("t") or []
    out = {"method": method, "steps": steps, "step_s": step_s, "t": [], "fields": {}, "describe": {}}
    columns = {field: _series_field(series, field) for field in fields}
    length = len(columns[fields[0]])
    for field, values in columns.items():
        if len(values) != length:
            raise ForecastError("series.%s: has %d values, %s has %d" % (field, len(values), fields[0], length))
    first = length if start_index is None else _integer("start_index", start_index, 0)
    for field, values in columns.items():
        field_options = dict(options, bounds=FIELD_BOUNDS[field])
        if method == "schedule":
            field_options["series"] = _known_values(series if known is None else known, field)
            forecaster = make_forecaster(method, **field_options).seek(first)
        else:
            forecaster = make_forecaster(method, **field_options).fit(values)
        out["fields"][field] = forecaster.predict(steps)
        out["describe"][field] = forecaster.describe()
    first_t = float(times[0]) if times else 0.0
    out["t"] = [first_t + (first + i) * step_s for i in range(steps)]
    _make_consistent(out["fields"], steps)
    return out


def _make_consistent(predicted, steps):
    if not all(op in predicted for op in SHARE_FIELDS):
        return
    for i in range(steps):
        total = math.fsum(predicted[op][i] for op in SHARE_FIELDS)
        if total <= 0:
            continue
        for op in SHARE_FIELDS:
            predicted[op][i] = predicted[op][i] / total
        if "read_ratio" in predicted:
            predicted["read_ratio"][i] = min(1.0, math.fsum(predicted[op][i] for op in READ_OPS))


def evaluate(
    series,
    methods=("arima", "markov", "last_value"),
    horizons_steps=DEFAULT_HORIZONS_STEPS,
    fields=("read_ratio", "throughput"),
    history=DEFAULT_HISTORY,
    stride=5,
    tolerance=DEFAULT_TOLERANCE,
    known=None,
    options=None,
    origins=None,
):
    """The accuracy table of methods on a workload series: rows {field, method, horizon_steps, horizon_s,
    accuracy, n, mape}, field by field, methods in the order given, horizons ascending.

    known: the series whose values the "schedule" method reads as the known future (default: series itself, a
    perfect forecast; pass the noise-free schedule series when series is observed with noise). options: per-method
    options {method: {option: value}}. Every method is scored at the same origins (see backtest()).
    """
    if isinstance(methods, str):
        methods = (methods,)
    methods = tuple(_choice("methods", method, METHODS) for method in methods)
    if not methods:
        raise ForecastError("methods: is empty; choose from %s" % ", ".join(METHODS))
    fields = _fields(fields)
    options = options or {}
    if not isinstance(options, dict):
        raise ForecastError("options: %r is not a mapping of method to its options" % (options,))
    for method in options:
        _choice("options", method, METHODS)
    step_s = _series_step(series)
    rows = []
    for field in fields:
        values = _series_field(series, field)
        for method in methods:
            method_options = dict(options.get(method) or {})
            if method == "schedule":
                method_options["series"] = _known_values(known if known is not None else series, field)
            result = backtest(
                values,
                method,
                horizons_steps,
                history=history,
                origins=origins,
                stride=stride,
                tolerance=tolerance,
                field=field,
                **method_options,
            )
            for h, entry in result["horizons"].items():
                rows.append(
                    {
                        "field": field,
                        "method": method,
                        "horizon_steps": h,
                        "horizon_s": h * step_s,
                        "accuracy": entry["accuracy"],
                        "n": entry["n"],
                        "mape": entry["mape"],
                    }
                )
    return rows


def lookaheads(rows, threshold=DEFAULT_THRESHOLD, step_s=DEFAULT_STEP_S):
    """choose_lookahead() for every (field, method) of evaluate()'s rows: [{field, method, lookahead_s, ...}]."""
    groups = {}
    for row in rows:
        groups.setdefault((row["field"], row["method"]), {})[row["horizon_steps"]] = {"accuracy": row["accuracy"]}
    out = []
    for (field, method), horizons in groups.items():
        choice = choose_lookahead(horizons, threshold, step_s)
        out.append({"field": field, "method": method} | choice)
    return out
