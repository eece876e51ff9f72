# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Forecasts of the workload over a lookahead, and their measured accuracy.

``forecast`` fits the chosen forecaster (models/forecasters.py) to a series (models/forecast_series.py) and
predicts every field over the lookahead. Accuracy follows IRIS Table 1: the share of predictions within 10 % of
the actual value, at several horizons (1, 2, 5 and 15 minutes = 2, 4, 10 and 30 steps of 30 s), by rolling-origin
backtest on 500 points of history. ``choose_lookahead`` turns that into the lookahead T_L: the longest horizon up
to which accuracy stays >= 70 %. Errors are ForecastError; every result is deterministic for the same input.
"""

from __future__ import annotations

import math

from ansible_collections.tactician.nosql.plugins.module_utils.models.forecast_series import (
    AGE,
    DEFAULT_STEP_S,
    FIELD_BOUNDS,
    RATIO_FIELDS,
    SERIES_FIELDS,
    SHARE_FIELDS,
    ForecastError,
    check_bounds,
    check_choice,
    check_fields,
    check_finite,
    check_integer,
    check_positive,
    check_values,
    regime_age,
    series_field,
    series_step,
)
from ansible_collections.tactician.nosql.plugins.module_utils.models.forecasters import METHODS, make_forecaster
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.samples import READ_OPS

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


def within_tolerance(predicted, actual, tolerance=DEFAULT_TOLERANCE, floor=0.0):
    """True when |predicted - actual| <= tolerance * max(|actual|, floor): IRIS' "within 10 % of the actual".

    floor keeps an actual of 0 from making every forecast wrong: use RATIO_FLOOR (0.1) for the read ratio and the
    shares, and THROUGHPUT_FLOOR_FRACTION (1 %) of the series' mean for throughput (see default_floor()).
    """
    predicted = check_finite("predicted", predicted)
    actual = check_finite("actual", actual)
    tolerance = check_finite("tolerance", tolerance)
    floor = check_finite("floor", floor)
    if tolerance < 0:
        raise ForecastError("tolerance: %r is below the minimum; choose a value >= 0" % (tolerance,))
    if floor < 0:
        raise ForecastError("floor: %r is below the minimum; choose a value >= 0" % (floor,))
    return abs(predicted - actual) <= tolerance * max(abs(actual), floor) + 1e-12 * max(1.0, abs(actual))


def default_floor(values, field=None, bounds=None):
    """The tolerance floor of a series: RATIO_FLOOR for a ratio field (or bounds (0, 1)), else 1 % of mean |value|."""
    if field is not None:
        check_choice("field", field, SERIES_FIELDS)
    if field in RATIO_FIELDS or (field is None and check_bounds(bounds) == (0.0, 1.0)):
        return RATIO_FLOOR
    values = check_values(values)
    return THROUGHPUT_FLOOR_FRACTION * math.fsum(abs(value) for value in values) / len(values)


def _horizons(horizons_steps):
    if isinstance(horizons_steps, int):
        horizons_steps = (horizons_steps,)
    if isinstance(horizons_steps, str | bytes) or not hasattr(horizons_steps, "__iter__"):
        raise ForecastError("horizons_steps: %r is not a list of step counts" % (horizons_steps,))
    out = sorted({check_integer("horizons_steps", h, 1) for h in horizons_steps})
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
    values = check_values(values)
    check_choice("method", method, METHODS)
    horizons = _horizons(horizons_steps)
    history = check_integer("history", history, 1)
    stride = check_integer("stride", stride, 1)
    tolerance = check_finite("tolerance", tolerance)
    if field is not None:
        check_choice("field", field, SERIES_FIELDS)
        options.setdefault("bounds", FIELD_BOUNDS[field])
    if floor is None:
        floor = default_floor(values, field, options.get("bounds"))
    floor = check_finite("floor", floor)
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
        origins = [check_integer("origins", o, 0, n - 2) for o in origins]
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
    threshold = check_finite("threshold", threshold)
    step_s = check_positive("step_s", step_s)
    if isinstance(horizons_result, dict) and "horizons" in horizons_result:
        horizons_result = horizons_result["horizons"]
    if not isinstance(horizons_result, dict) or not horizons_result:
        raise ForecastError("horizons_result: %r is not a mapping of horizon to accuracy" % (horizons_result,))
    table = {}
    for h, entry in horizons_result.items():
        steps = check_integer("horizons_result", int(h) if isinstance(h, str) and h.isdigit() else h, 1)
        accuracy = entry.get("accuracy") if isinstance(entry, dict) else entry
        table[steps] = None if accuracy is None else check_finite("horizons_result[%d].accuracy" % steps, accuracy)
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


def _known_values(known, field):
    if isinstance(known, dict):
        return series_field(known, field, "known")
    if known is None:
        raise ForecastError("known: method schedule needs the known series (a series dict from series_from_schedule)")
    return check_values(known, "known")


def forecast(series, steps, method="arima", fields=None, **options):
    """Forecast the workload vector steps steps ahead: fit each field on all of the series, predict, make consistent.

    series: from series_from_samples / series_from_schedule. fields: default every SERIES_FIELDS field present.
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
    check_choice("method", method, METHODS)
    if not isinstance(series, dict):
        raise ForecastError("series: %r is not a series (a mapping with t and field lists)" % (series,))
    steps = check_integer("steps", steps, 0)
    if fields is None:
        fields = tuple(field for field in SERIES_FIELDS if field in series)
    fields = check_fields(fields, SERIES_FIELDS)
    if "bounds" in options:
        raise ForecastError("bounds: set per field by forecast() (FIELD_BOUNDS); not an option here")
    step_s = series_step(series)
    known = options.pop("known", None)
    start_index = options.pop("start_index", None)
    if method != "schedule" and (known is not None or start_index is not None):
        raise ForecastError(
            "%s: only method schedule reads a known future; method is %s"
            % ("known" if known is not None else "start_index", method)
        )
    times = series.get("t") or []
    out = {"method": method, "steps": steps, "step_s": step_s, "t": [], "fields": {}, "describe": {}}
    columns = {field: series_field(series, field) for field in fields}
    length = len(columns[fields[0]])
    for field, values in columns.items():
        if len(values) != length:
            raise ForecastError("series.%s: has %d values, %s has %d" % (field, len(values), fields[0], length))
    first = length if start_index is None else check_integer("start_index", start_index, 0)
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
    methods = tuple(check_choice("methods", method, METHODS) for method in methods)
    if not methods:
        raise ForecastError("methods: is empty; choose from %s" % ", ".join(METHODS))
    fields = check_fields(fields, SERIES_FIELDS)
    options = options or {}
    if not isinstance(options, dict):
        raise ForecastError("options: %r is not a mapping of method to its options" % (options,))
    for method in options:
        check_choice("options", method, METHODS)
    step_s = series_step(series)
    rows = []
    for field in fields:
        values = series_field(series, field)
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


def error_paths(
    series, steps, method="markov", fields=("read_ratio",), history=DEFAULT_HISTORY, max_origins=60, **options
):
    """Error paths of a method and of persistence on a series, for the safety rule (planning/safety.py).

    At up to max_origins origins spread over the series (each with its whole horizon of steps known), the method is
    fitted on the history before the origin and predicts steps ahead; its errors (actual - predicted, per horizon)
    and persistence's (actual - the last observed value) are kept field by field, with the origin's step and its
    last observed workload. Returns {"method", "steps", "step_s", "origins", "states", "forecast",
    "persistence", "now", "history"} (now: each field's last observed value; history: each field's last history
    values): lists in origin order, each path a {field: [errors]} mapping; empty when the series is too short
    (fewer than steps + 2 points)."""
    fields = check_fields(fields)
    steps = check_integer("steps", steps, 1)
    max_origins = check_integer("max_origins", max_origins, 1)
    history = check_integer("history", history, 1)
    check_choice("method", method, METHODS)
    step_s = series_step(series)
    columns = {field: series_field(series, field) for field in fields}
    n = min(len(values) for values in columns.values())
    last = n - steps - 1
    first = 1
    out = {
        "method": method,
        "steps": steps,
        "step_s": step_s,
        "origins": [],
        "states": [],
        "forecast": [],
        "persistence": [],
        "now": {field: float(values[n - 1]) for field, values in columns.items()} if n else {},
        # now's age (AGE): how long its regime has lasted says how long it may go on (safety.same_age).
        # The workload observed so far (at most history steps), for the safety rule's long run.
        "history": {field: [float(v) for v in values[max(0, n - history) : n]] for field, values in columns.items()},
    }
    if n and "read_ratio" in columns:
        out["now"][AGE] = regime_age(columns["read_ratio"][max(0, n - history) : n])
    if last < first:
        return out
    stride = max(1, (last - first + 1 + max_origins - 1) // max_origins)
    origins = list(range(last, first - 1, -stride))[::-1]
    forecasters = {}
    for field in fields:
        forecasters[field] = make_forecaster(method, bounds=FIELD_BOUNDS.get(field), **options)
    for origin in origins:
        errors, persist, state = {}, {}, {}
        for field, values in columns.items():
            start = max(0, origin - history + 1)
            model = forecasters[field]
            model.fit(values[start : origin + 1])
            predicted = model.predict(steps)
            errors[field] = [float(values[origin + h]) - float(predicted[h - 1]) for h in range(1, steps + 1)]
            persist[field] = [float(values[origin + h]) - float(values[origin]) for h in range(1, steps + 1)]
            state[field] = float(values[origin])
        if "read_ratio" in columns:
            state[AGE] = regime_age(columns["read_ratio"][max(0, origin - history + 1) : origin + 1])
        out["origins"].append(origin)
        out["states"].append(state)
        out["forecast"].append(errors)
        out["persistence"].append(persist)
    return out
