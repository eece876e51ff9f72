# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Forecasters of one workload field: one interface, four methods.

Forecasters share one interface: ``fit(values) -> self``, ``predict(steps) -> [float]``, ``name`` and
``describe() -> dict``; ``make_forecaster(method, **options)`` builds one by name:

- ``last_value``: persistence, the baseline every other method must beat;
- ``arima``: ARIMA(p, d, q) with the order chosen by BIC (IRIS section 6.2), refit on every new origin;
- ``markov``: a Markov chain over discretized states (the workload predictor of OptimusCloud, seed 002);
- ``schedule``: a known future (job queue, schedule file) read back as a perfect forecast (the oracle of IRIS).

Only ``Arima`` needs third-party libraries (statsmodels and numpy). They are imported when an ARIMA model is first
fitted, never at import time; ``missing_libraries()`` lists what is absent for a module's fail_imports. Every
result is deterministic for the same input.
"""

from __future__ import annotations

import inspect
import math
import warnings

from ansible_collections.tactician.nosql.plugins.module_utils.core import imports
from ansible_collections.tactician.nosql.plugins.module_utils.models.forecast_series import (
    ForecastError,
    check_bounds,
    check_choice,
    check_finite,
    check_integer,
    check_values,
    clip,
)

METHODS = ("arima", "markov", "last_value", "schedule")


MIN_HISTORY = 20
"""Fewer points than this and Arima falls back to the last value: BIC over the grid is meaningless on them."""

_CONSTANT_TOLERANCE = 1e-12


def missing_libraries():
    """[(library, traceback)] of what the ARIMA forecaster needs and cannot import; [] when all are there."""
    return imports.missing("numpy", "statsmodels.tsa.arima.model")


class Forecaster:
    """Common interface: fit(values) -> self, predict(steps) -> [float] clipped to bounds, describe() -> dict."""

    name = "forecaster"

    def __init__(self, bounds=None):
        self.bounds = check_bounds(bounds)
        self._last = None

    def fit(self, values):
        raise NotImplementedError

    def predict(self, steps):
        raise NotImplementedError

    def describe(self):
        return {"name": self.name, "bounds": list(self.bounds)}

    def _steps(self, steps):
        steps = check_integer("steps", steps, 0)
        if self._last is None:
            raise ForecastError("values: nothing fitted yet; call fit() before predict()")
        return steps

    def _clipped(self, values):
        return [clip(float(value), self.bounds) for value in values]


class LastValue(Forecaster):
    """Persistence: every future step equals the last observed value (clipped to bounds)."""

    name = "last_value"

    def fit(self, values):
        self._last = check_values(values)[-1]
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
        self.d_selection = check_choice("d_selection", d_selection, self.D_SELECTIONS)
        self.max_p = check_integer("max_p", max_p, 0, 30)
        self.max_d = check_integer("max_d", max_d, 0, 2)
        self.max_q = check_integer("max_q", max_q, 0, 30)
        # None: d = 1 (as IRIS), or 0 when max_d is 0.
        self.min_d = min(1, self.max_d) if min_d is None else check_integer("min_d", min_d, 0, self.max_d)
        self.criterion = check_choice("criterion", criterion, self.CRITERIA)
        self.estimator = check_choice("estimator", estimator, self.ESTIMATORS)
        self.refit = check_choice("refit", refit, self.REFITS)
        self.reselect_every = check_integer("reselect_every", reselect_every, 1)
        self.min_history = check_integer("min_history", min_history, 3)
        if order is not None:
            if isinstance(order, str | bytes | dict) or not hasattr(order, "__len__") or len(order) != 3:
                raise ForecastError(
                    "order: %r is not allowed; give (p, d, q) or null to choose by %s" % (order, criterion)
                )
            order = (
                check_integer("order.p", order[0], 0, 60),
                check_integer("order.d", order[1], 0, 2),
                check_integer("order.q", order[2], 0, 60),
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
        values = check_values(values)
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
        self.bins = check_integer("bins", bins, 1, 1000)
        self.prediction = check_choice("predict", predict, self.PREDICTIONS)
        self.alpha = check_finite("alpha", alpha)
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
        values = check_values(values)
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
        self.series = check_values(series, "series")
        self.start_index = check_integer("start_index", start_index, 0)
        self._position = None
        self._beyond = 0

    def fit(self, values, start_index=None):
        values = check_values(values)
        if start_index is not None:
            self.start_index = check_integer("start_index", start_index, 0)
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
        index = check_integer("start_index", index, 0)
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
    check_choice("method", method, METHODS)
    init = FORECASTERS[method].__init__
    return tuple(name for name in inspect.signature(init).parameters if name != "self")


def make_forecaster(method, **options):
    """A new forecaster by method name (arima, markov, last_value, schedule) with its options."""
    check_choice("method", method, METHODS)
    allowed = method_options(method)
    for name in options:
        if name not in allowed:
            raise ForecastError(
                "%s: is not an option of method %s; choose from %s" % (name, method, ", ".join(allowed))
            )
    if method == "schedule" and "series" not in options:
        raise ForecastError("series: method schedule needs the known future values (series=...)")
    return FORECASTERS[method](**options)
