# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Unit tests of the workload forecasting engine (plugins/module_utils/models/forecast.py)."""

from __future__ import annotations

import math
import random
import warnings

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.models import forecast, forecast_series, forecasters
from ansible_collections.tactician.nosql.plugins.module_utils.models.forecast_series import ForecastError
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import samples as telemetry
from ansible_collections.tactician.nosql.plugins.module_utils.workload import schedules

# ---------------------------------------------------------------------------------------------------------------
# Synthetic series
# ---------------------------------------------------------------------------------------------------------------


def ar1(n, phi=0.7, mean=0.5, sigma=0.02, seed=1):
    rng = random.Random(seed)
    values = [mean]
    for _i in range(n - 1):
        values.append(mean + phi * (values[-1] - mean) + rng.gauss(0.0, sigma))
    return values


def ar2(n, phi1=0.6, phi2=-0.3, seed=3):
    rng = random.Random(seed)
    values = [0.0, 0.0]
    for _i in range(n + 48):
        values.append(phi1 * values[-1] + phi2 * values[-2] + rng.gauss(0.0, 1.0))
    return values[50:]


def trend(n, start=0.2, slope=0.002, sigma=0.0005, seed=2):
    rng = random.Random(seed)
    return [start + slope * i + rng.gauss(0.0, sigma) for i in range(n)]


def sample(time, ops, window=30.0, node="cluster", state=None):
    return telemetry.new_sample("cassandra", "c1", node, time, window, ops, state=state)


# ---------------------------------------------------------------------------------------------------------------
# LastValue
# ---------------------------------------------------------------------------------------------------------------


def test_last_value_repeats_the_last_point_and_clips():
    model = forecasters.LastValue().fit([1.0, 2.0, 3.0])
    assert model.predict(3) == [3.0, 3.0, 3.0]
    assert model.predict(0) == []
    assert forecasters.LastValue(bounds=(0.0, 1.0)).fit([0.5, 1.5]).predict(2) == [1.0, 1.0]
    assert model.describe()["name"] == "last_value"


def test_predict_before_fit_and_bad_steps():
    with pytest.raises(ForecastError, match=r"^values: nothing fitted yet"):
        forecasters.LastValue().predict(2)
    model = forecasters.LastValue().fit([1.0])
    with pytest.raises(ForecastError, match=r"^steps: -1 is below the minimum"):
        model.predict(-1)
    with pytest.raises(ForecastError, match=r"^values\[1\]: nan is not a finite number"):
        forecasters.LastValue().fit([1.0, float("nan")])
    with pytest.raises(ForecastError, match=r"^values: needs at least 1 value"):
        forecasters.LastValue().fit([])


def test_bounds_are_checked():
    with pytest.raises(ForecastError, match=r"^bounds: low 1.0 is above high 0.0"):
        forecasters.LastValue(bounds=(1.0, 0.0))
    with pytest.raises(ForecastError, match=r"^bounds: "):
        forecasters.LastValue(bounds=(0.0,))


# ---------------------------------------------------------------------------------------------------------------
# Arima
# ---------------------------------------------------------------------------------------------------------------


def test_arima_constant_series_falls_back_to_last_value():
    model = forecasters.Arima().fit([0.4] * 50)
    assert model.predict(3) == [0.4, 0.4, 0.4]
    info = model.describe()
    assert info["fallback"] == "constant series"
    assert info["order"] is None


def test_arima_short_history_falls_back():
    model = forecasters.Arima().fit([0.1, 0.2, 0.3, 0.25])
    assert model.predict(2) == [0.25, 0.25]
    assert "shorter than min_history 20" in model.describe()["fallback"]


def test_arima_bic_picks_ar2_on_an_ar2_series():
    model = forecasters.Arima(max_p=3, max_d=1, max_q=2, min_d=0).fit(ar2(300))  # d by KPSS: 0 here
    info = model.describe()
    assert info["order"] == [2, 0, 0]
    assert info["fallback"] is None
    assert info["criterion"] == "bic" and math.isfinite(info["bic"])
    assert info["selections"] == 1


def test_arima_ar1_forecast_moves_toward_the_mean():
    values = ar1(200)
    values[-1] = 0.6  # well above the mean of 0.5
    model = forecasters.Arima(max_p=2, max_d=1, max_q=1, min_d=0).fit(values)
    predicted = model.predict(20)
    assert model.describe()["order"][1] == 0
    assert 0.5 < predicted[0] < 0.6
    assert abs(predicted[-1] - 0.5) < abs(predicted[0] - 0.5)


def test_arima_follows_a_linear_trend_with_drift():
    values = trend(120)
    model = forecasters.Arima(max_p=1, max_d=1, max_q=1).fit(values)
    info = model.describe()
    assert info["order"][1] == 1 and info["trend"] == "drift"
    predicted = model.predict(10)
    expected = [0.2 + 0.002 * (120 + i) for i in range(10)]
    assert all(abs(p - e) < 0.005 for p, e in zip(predicted, expected, strict=True))


def test_arima_clips_to_bounds():
    values = trend(120, start=0.7, slope=0.0025)  # ends near 1.0 and keeps rising
    model = forecasters.Arima(max_p=1, max_d=1, max_q=0, bounds=(0.0, 1.0)).fit(values)
    predicted = model.predict(60)
    assert max(predicted) == 1.0
    assert min(predicted) >= 0.0


def test_arima_fixed_order_and_reselection_schedule():
    values = ar1(120, seed=5)
    model = forecasters.Arima(order=(1, 0, 0))
    for end in (100, 105, 110):
        model.fit(values[:end])
    info = model.describe()
    assert info["order"] == [1, 0, 0] and info["selections"] == 0 and info["grid"] is None
    model = forecasters.Arima(max_p=1, max_d=0, max_q=1, reselect_every=2, refit="apply")
    for end in (100, 105, 110, 115, 120):
        model.fit(values[:end])
    info = model.describe()
    assert info["fits"] == 5
    assert info["selections"] == 3  # at fits 1, 3 and 5


def test_arima_fit_failure_falls_back_and_says_why(monkeypatch):
    def broken(self, y, arima):
        raise RuntimeError("singular matrix")

    monkeypatch.setattr(forecasters.Arima, "_estimate", broken)
    model = forecasters.Arima().fit(ar1(60))
    assert model.predict(2) == [model._last] * 2
    info = model.describe()
    assert info["fallback"] == "fit failed"
    assert "singular matrix" in info["error"]


def test_arima_leaves_the_global_warnings_filter_alone():
    before = list(warnings.filters)
    forecasters.Arima(max_p=1, max_d=1, max_q=1).fit(ar1(80)).predict(5)
    assert warnings.filters == before


def test_arima_options_are_checked():
    with pytest.raises(ForecastError, match=r"^criterion: 'mse' is not allowed; choose one of bic, aic, hqic"):
        forecasters.Arima(criterion="mse")
    with pytest.raises(ForecastError, match=r"^max_d: 3 is above the maximum"):
        forecasters.Arima(max_d=3)
    with pytest.raises(ForecastError, match=r"^order: "):
        forecasters.Arima(order=(1, 0))
    with pytest.raises(ForecastError, match=r"^refit: 'cold' is not allowed; choose one of warm, apply"):
        forecasters.Arima(refit="cold")


# ---------------------------------------------------------------------------------------------------------------
# Markov
# ---------------------------------------------------------------------------------------------------------------


def test_markov_periodic_switching():
    values = [0.0, 1.0] * 40  # ends on 1.0
    model = forecasters.Markov(bounds=(0.0, 1.0)).fit(values)
    assert model.predict(4) == [0.0, 1.0, 0.0, 1.0]
    info = model.describe()
    assert info["states"] == 2 and info["fixed_range"] is True and info["range"] == [0.0, 1.0]
    mean = forecasters.Markov(predict="mean", bounds=(0.0, 1.0)).fit(values).predict(2)
    assert mean[0] < 0.05 and mean[1] > 0.95
    for dist in model.distributions(3):
        assert math.isclose(sum(dist), 1.0)


def test_markov_stays_in_a_sticky_state_and_uses_centroids():
    values = [0.05] * 30 + [0.93, 0.95, 0.97] * 10
    model = forecasters.Markov(bounds=(0.0, 1.0)).fit(values)
    assert model.predict(3) == pytest.approx([0.95, 0.95, 0.95])


def test_markov_constant_and_trend_and_ar1():
    assert forecasters.Markov().fit([3.0] * 10).predict(2) == [3.0, 3.0]
    values = trend(100)
    predicted = forecasters.Markov(bins=10).fit(values).predict(3)
    top_bin = [v for v in values if v >= min(values) + 0.9 * (max(values) - min(values))]
    assert predicted[0] == pytest.approx(sum(top_bin) / len(top_bin))
    values = ar1(300)
    predicted = forecasters.Markov(predict="mean").fit(values).predict(50)
    assert min(values) <= min(predicted) and max(predicted) <= max(values)
    assert abs(predicted[-1] - sum(values) / len(values)) < 0.02


def test_markov_options_are_checked():
    with pytest.raises(ForecastError, match=r"^predict: 'median' is not allowed; choose one of mode, mean"):
        forecasters.Markov(predict="median")
    with pytest.raises(ForecastError, match=r"^bins: 0 is below the minimum"):
        forecasters.Markov(bins=0)


# ---------------------------------------------------------------------------------------------------------------
# ScheduleForecast and make_forecaster
# ---------------------------------------------------------------------------------------------------------------


def test_schedule_forecast_reads_the_known_future():
    known = [float(i) for i in range(10)]
    model = forecasters.ScheduleForecast(known, start_index=2).fit([2.0, 3.0, 4.0])
    assert model.predict(3) == [5.0, 6.0, 7.0]
    assert model.fit([0.0], start_index=8).predict(3) == [9.0, 9.0, 9.0]
    assert model.describe()["beyond_known"] == 2
    with pytest.raises(ForecastError, match=r"^start_index: "):
        model.fit([1.0, 2.0, 3.0], start_index=9)


def test_make_forecaster_by_name_and_errors():
    assert isinstance(forecasters.make_forecaster("markov", bins=4), forecasters.Markov)
    assert forecasters.make_forecaster("last_value").name == "last_value"
    with pytest.raises(ForecastError, match=r"^method: 'prophet' is not allowed; choose one of arima, markov"):
        forecasters.make_forecaster("prophet")
    with pytest.raises(ForecastError, match=r"^bins: is not an option of method arima; choose from max_p, "):
        forecasters.make_forecaster("arima", bins=3)
    with pytest.raises(ForecastError, match=r"^series: method schedule needs"):
        forecasters.make_forecaster("schedule")
    assert issubclass(ForecastError, ValueError)


# ---------------------------------------------------------------------------------------------------------------
# Tolerance and backtest
# ---------------------------------------------------------------------------------------------------------------


def test_within_tolerance_and_zero_actual():
    assert forecast.within_tolerance(110.0, 100.0)
    assert not forecast.within_tolerance(110.5, 100.0)
    assert forecast.within_tolerance(0.0, 0.0)
    assert not forecast.within_tolerance(0.005, 0.0)  # no floor: only an exact zero is right
    assert forecast.within_tolerance(0.01, 0.0, floor=forecast.RATIO_FLOOR)
    assert not forecast.within_tolerance(0.02, 0.0, floor=forecast.RATIO_FLOOR)
    with pytest.raises(ForecastError, match=r"^floor: -1.0 is below the minimum"):
        forecast.within_tolerance(1.0, 1.0, floor=-1.0)


def test_default_floor():
    assert forecast.default_floor([0.0, 1.0], "read_ratio") == 0.1
    assert forecast.default_floor([100.0, 300.0], "throughput") == pytest.approx(2.0)
    assert forecast.default_floor([0.0, 1.0], bounds=(0, 1)) == 0.1
    with pytest.raises(ForecastError, match=r"^field: 'latency' is not allowed; choose one of read_ratio, throughput"):
        forecast.default_floor([1.0], "latency")


def test_backtest_last_value_on_a_step_counts_the_misses():
    values = [0.0] * 50 + [1.0] * 50
    result = forecast.backtest(values, "last_value", horizons_steps=(1, 5), history=10, stride=1, field="read_ratio")
    origins = len(range(9, 95))
    assert result["origins"] == origins
    assert result["horizons"][1] == {"accuracy": (origins - 1) / origins, "n": origins, "mape": pytest.approx(1 / 86)}
    assert result["horizons"][5]["accuracy"] == (origins - 5) / origins
    assert result["floor"] == 0.1


def test_backtest_schedule_oracle_is_perfect_and_reads_the_known_series():
    values = [0.0] * 30 + [1.0] * 30 + [0.0] * 30
    result = forecast.backtest(values, "schedule", horizons_steps=(1, 10), history=20, stride=3)
    assert all(entry["accuracy"] == 1.0 for entry in result["horizons"].values())
    wrong = [1.0 - v for v in values]
    result = forecast.backtest(values, "schedule", horizons_steps=(1,), history=20, series=wrong)
    assert result["horizons"][1]["accuracy"] == 0.0


def test_backtest_errors():
    with pytest.raises(ForecastError, match=r"^history: 500 point\(s\) of history and 30 step\(s\) ahead need 530"):
        forecast.backtest([1.0] * 100, "last_value")
    with pytest.raises(ForecastError, match=r"^method: 'naive' is not allowed; choose one of arima, markov, "):
        forecast.backtest([1.0] * 100, "naive")
    with pytest.raises(ForecastError, match=r"^field: 'cpu' is not allowed; choose one of read_ratio"):
        forecast.backtest([1.0] * 100, "last_value", history=10, field="cpu")
    result = forecast.backtest([1.0] * 20, "last_value", horizons_steps=(1, 30), origins=[5, 15])
    assert result["horizons"][1]["n"] == 2
    assert result["horizons"][30] == {"accuracy": None, "n": 0, "mape": None}


def test_backtest_is_deterministic():
    values = ar1(160, seed=7)
    options = dict(horizons_steps=(1, 4), history=120, stride=20, field="read_ratio", max_p=1, max_q=1)
    first = forecast.backtest(values, "arima", **options)
    second = forecast.backtest(values, "arima", **options)
    assert first == second
    markov = forecast.backtest(values, "markov", horizons_steps=(1, 4), history=120, stride=5)
    assert markov == forecast.backtest(values, "markov", horizons_steps=(1, 4), history=120, stride=5)


# ---------------------------------------------------------------------------------------------------------------
# Lookahead
# ---------------------------------------------------------------------------------------------------------------


def test_choose_lookahead_takes_the_horizon_up_to_which_accuracy_stays_above_threshold():
    horizons = {2: {"accuracy": 0.9}, 4: {"accuracy": 0.8}, 10: {"accuracy": 0.6}, 30: {"accuracy": 0.75}}
    choice = forecast.choose_lookahead(horizons)
    assert choice["lookahead_steps"] == 4 and choice["lookahead_s"] == 120.0 and choice["accuracy"] == 0.8
    assert "up to 120 s (4 steps): 80.0 %" in choice["reason"]
    everything = forecast.choose_lookahead({2: {"accuracy": 0.95}, 30: {"accuracy": 0.7}}, step_s=60.0)
    assert everything["lookahead_s"] == 1800.0 and "longest horizon tested" in everything["reason"]


def test_choose_lookahead_when_none_reaches_the_threshold():
    choice = forecast.choose_lookahead({"horizons": {2: {"accuracy": 0.44}, 4: {"accuracy": 0.39}}})
    assert choice["lookahead_steps"] == 0 and choice["lookahead_s"] == 0.0 and choice["horizon"] is None
    assert choice["reason"].startswith("no horizon reaches 70 % accuracy (shortest 60 s (2 steps): 44.0 %)")
    with pytest.raises(ForecastError, match=r"^horizons_result: "):
        forecast.choose_lookahead({})


# ---------------------------------------------------------------------------------------------------------------
# Series
# ---------------------------------------------------------------------------------------------------------------


def test_series_from_samples_averages_and_fills_gaps():
    samples = [
        sample(1030.0, {"read": 80.0, "update": 20.0}),  # covers [1000, 1030]: the grid starts at 1000
        sample(1015.0, {"read": 40.0, "insert": 60.0}, window=5.0),  # same step, out of order
        sample(1010.0, {"read": 60.0, "insert": 40.0}, window=5.0),
        # nothing in [1030, 1060)
        sample(1090.0, {}),  # idle
        sample(1120.0, {"scan": 50.0, "delete": 50.0}),
    ]
    series = forecast_series.series_from_samples(samples)
    assert series["t"] == [1000.0, 1030.0, 1060.0, 1090.0]
    assert series["filled"] == 1
    assert series["step_s"] == 30.0
    # step 0 averages the 30 s sample and the two 5 s ones, weighted by their windows
    assert series["throughput"][0] == pytest.approx(100.0)
    assert series["read"][0] == pytest.approx((30 * 80 + 5 * 40 + 5 * 60) / 40 / 100)
    assert series["read_ratio"][0] == pytest.approx(series["read"][0])
    assert series["insert"][0] == pytest.approx((5 * 60 + 5 * 40) / 40 / 100)
    # step 1 is filled with step 0's values
    assert all(series[field][1] == series[field][0] for field in forecast_series.WORKLOAD_FIELDS)
    # step 2 is idle: throughput 0, read ratio and shares kept from the step before
    assert series["throughput"][2] == 0.0
    assert series["read_ratio"][2] == series["read_ratio"][1] and series["read"][2] == series["read"][1]
    assert series["read_ratio"][3] == 0.5 and series["scan"][3] == 0.5 and series["delete"][3] == 0.5
    assert all(len(series[field]) == 4 for field in forecast_series.WORKLOAD_FIELDS)


def test_series_from_samples_tolerates_jitter_and_long_windows():
    jittered = [sample(t, {"read": 10.0}) for t in (1030.0, 1060.4, 1089.7, 1120.0)]
    series = forecast_series.series_from_samples(jittered)
    assert series["t"] == [1000.0, 1030.0, 1060.0, 1090.0] and series["filled"] == 0
    sliding = [sample(300.0 + 30.0 * k, {"read": float(k)}, window=300.0) for k in range(4)]
    series = forecast_series.series_from_samples(sliding, fields=["throughput"])
    assert series["t"] == [270.0, 300.0, 330.0, 360.0] and series["throughput"] == [0.0, 1.0, 2.0, 3.0]


def test_series_from_samples_start_idle_and_errors():
    series = forecast_series.series_from_samples(
        [sample(30.0, {}), sample(60.0, {"read": 10.0})], fields=["read_ratio"]
    )
    assert series["read_ratio"] == [0.0, 1.0]
    assert set(series) == {"t", "read_ratio", "step_s", "filled"}
    with pytest.raises(ForecastError, match=r"^samples\[1\]\.time: is required"):
        forecast_series.series_from_samples([sample(30.0, {}), {"window_s": 30.0, "ops_per_s": {}}])
    with pytest.raises(ForecastError, match=r"^fields: 'latency' is not allowed; choose one of read_ratio, "):
        forecast_series.series_from_samples([sample(30.0, {})], fields=["latency"])
    with pytest.raises(ForecastError, match=r"^samples: is empty"):
        forecast_series.series_from_samples([])


def test_series_from_samples_carries_state_fields_when_asked():
    samples = [
        sample(1030.0, {"read": 10.0}, state={"pending_compactions": 4, "sstables_per_read": 2.0}),
        sample(1015.0, {"read": 10.0}, window=5.0, state={"pending_compactions": 10, "sstables_per_read": None}),
        sample(1060.0, {"read": 10.0}, state={"pending_compactions": 0}),  # no SSTables per read
        # nothing in [1060, 1090)
        sample(1120.0, {"read": 10.0}, state={"pending_compactions": 2, "sstables_per_read": 1.0}),
    ]
    fields = ("read_ratio", "pending_compactions", "sstables_per_read")
    series = forecast_series.series_from_samples(samples, fields=fields)
    assert series["t"] == [1000.0, 1030.0, 1060.0, 1090.0]
    # step 0: window-weighted mean of the samples that give a value
    assert series["pending_compactions"] == [pytest.approx((30 * 4 + 5 * 10) / 35), 0.0, 0.0, 2.0]
    assert series["sstables_per_read"] == [2.0, 2.0, 2.0, 1.0]
    assert series["filled"] == 1 and series["filled_state"] == {"pending_compactions": 1, "sstables_per_read": 2}
    assert series["read_ratio"] == [1.0, 1.0, 1.0, 1.0]
    # before its first value a field takes that first value
    late = forecast_series.series_from_samples(
        [sample(30.0, {"read": 1.0}), sample(60.0, {"read": 1.0}, state={"sstables_per_read": 3.0})],
        fields=["sstables_per_read"],
    )
    assert late["sstables_per_read"] == [3.0, 3.0] and late["filled_state"] == {"sstables_per_read": 1}
    # the default vector is the workload alone, as before
    assert "pending_compactions" not in forecast_series.series_from_samples(samples)
    assert "filled_state" not in forecast_series.series_from_samples(samples)


def test_state_fields_that_no_sample_gives_or_a_schedule_are_refused():
    with pytest.raises(ForecastError, match=r"^fields: sstables_per_read is in no sample's state; observe it first"):
        forecast_series.series_from_samples([sample(30.0, {"read": 1.0})], fields=["sstables_per_read"])
    bad = sample(30.0, {"read": 1.0})
    bad["state"] = {"pending_compactions": -2}
    with pytest.raises(ForecastError, match=r"^samples\[0\]\.state\.pending_compactions: -2.0 is below 0"):
        forecast_series.series_from_samples([bad], fields=["pending_compactions"])
    schedule = schedules.Schedule([schedules.Phase(60.0, {"read": 1.0}, 100.0)])
    with pytest.raises(ForecastError, match=r"^fields: pending_compactions is observed state, which a schedule"):
        forecast_series.series_from_schedule(schedule, fields=["throughput", "pending_compactions"])
    with pytest.raises(ForecastError, match=r"^fields: 'live_sstables' is not allowed; choose one of read_ratio, "):
        forecast_series.series_from_samples([sample(30.0, {})], fields=["live_sstables"])


def test_state_fields_are_forecast_within_their_bounds():
    assert forecast_series.FIELD_BOUNDS["pending_compactions"] == (0.0, None)
    assert forecast_series.FIELD_BOUNDS["sstables_per_read"] == (0.0, None)
    draining = [float(v) for v in (40, 32, 24, 16, 8, 4, 2, 1, 0, 0, 0, 0)]
    series = {"t": [30.0 * i for i in range(12)], "step_s": 30.0, "pending_compactions": draining}
    series["sstables_per_read"] = [1.0 + (i % 3) for i in range(12)]
    result = forecast.forecast(series, 5, method="arima")
    assert set(result["fields"]) == {"pending_compactions", "sstables_per_read"}  # every field present
    assert all(value >= 0.0 for value in result["fields"]["pending_compactions"])
    assert result["describe"]["pending_compactions"]["bounds"] == [0.0, None]
    backtested = forecast.backtest(draining, "last_value", (1,), history=4, field="pending_compactions")
    assert backtested["field"] == "pending_compactions" and backtested["horizons"][1]["n"] > 0


def test_series_from_schedule():
    schedule = schedules.Schedule(
        [
            schedules.Phase(60.0, {"read": 0.5, "update": 0.5}, 100.0),
            schedules.Phase(30.0, {"read": 0.5, "readmodifywrite": 0.5}, 100.0),
        ]
    )
    series = forecast_series.series_from_schedule(schedule)
    assert series["t"] == [0.0, 30.0, 60.0]
    assert series["read_ratio"] == [0.5, 0.5, pytest.approx(2 / 3)]
    assert series["throughput"] == [100.0, 100.0, 150.0]  # a readmodifywrite is two server operations
    assert series["read"][2] == pytest.approx(2 / 3) and series["update"][2] == pytest.approx(1 / 3)
    assert series["filled"] == 0


# ---------------------------------------------------------------------------------------------------------------
# forecast() and evaluate()
# ---------------------------------------------------------------------------------------------------------------


def test_forecast_makes_the_vector_consistent():
    series = {
        "t": [0.0, 30.0, 60.0],
        "step_s": 30.0,
        "read_ratio": [0.1, 0.2, 0.9],  # inconsistent with the shares on purpose
        "throughput": [10.0, 20.0, 30.0],
        "read": [0.5, 0.5, 0.6],
        "update": [0.2, 0.2, 0.2],
        "insert": [0.1, 0.1, 0.1],
        "scan": [0.1, 0.1, 0.1],
        "delete": [0.1, 0.1, 0.2],  # shares of the last step sum to 1.2
    }
    result = forecast.forecast(series, 2, method="last_value")
    assert result["t"] == [90.0, 120.0] and result["step_s"] == 30.0 and result["steps"] == 2
    fields = result["fields"]
    assert sum(fields[op][0] for op in forecast_series.SHARE_FIELDS) == pytest.approx(1.0)
    assert fields["read"][0] == pytest.approx(0.5)
    assert fields["read_ratio"][0] == pytest.approx(fields["read"][0] + fields["scan"][0])
    assert fields["throughput"] == [30.0, 30.0]
    assert result["describe"]["throughput"]["bounds"] == [0.0, None]


def test_forecast_schedule_and_errors():
    known = forecast_series.series_from_schedule(
        schedules.abrupt_switching(1, 1800.0, 300.0, 300.0, 100.0, start="read")
    )
    observed = {"t": known["t"][:8], "step_s": 30.0, "read_ratio": known["read_ratio"][:8]}
    result = forecast.forecast(observed, 4, method="schedule", fields=["read_ratio"], known=known)
    assert result["fields"]["read_ratio"] == known["read_ratio"][8:12]
    with pytest.raises(ForecastError, match=r"^series\.throughput: not in the series; choose one of read_ratio"):
        forecast.forecast(observed, 2, method="last_value", fields=["throughput"])
    with pytest.raises(ForecastError, match=r"^method: 'magic' is not allowed"):
        forecast.forecast(observed, 2, method="magic")
    with pytest.raises(ForecastError, match=r"^known: only method schedule"):
        forecast.forecast(observed, 2, method="last_value", known=known)
    with pytest.raises(ForecastError, match=r"^start_index: only method schedule"):
        forecast.forecast(observed, 2, method="last_value", start_index=3)


def test_forecast_schedule_from_a_position_in_the_schedule_itself():
    queue = forecast_series.series_from_schedule(schedules.hpc_job_queue(4, 2, 1800.0, 200.0))
    result = forecast.forecast(queue, 5, method="schedule", start_index=3)
    for field in ("throughput", "update", "insert"):
        assert result["fields"][field] == pytest.approx(queue[field][3:8])
    assert result["t"] == queue["t"][3:8]
    assert result["describe"]["read_ratio"]["position"] == 2
    start = forecast.forecast(queue, 2, method="schedule", start_index=0)
    assert start["fields"]["throughput"] == queue["throughput"][:2] and start["t"] == [0.0, 30.0]


def test_evaluate_rows_and_lookaheads():
    series = forecast_series.series_from_schedule(schedules.abrupt_switching(2, 6000.0, 600.0, 1200.0, 100.0))
    rows = forecast.evaluate(
        series, methods=("last_value", "markov", "schedule"), horizons_steps=(2, 10), history=100, stride=5
    )
    assert [(r["field"], r["method"], r["horizon_s"]) for r in rows[:6]] == [
        ("read_ratio", "last_value", 60.0),
        ("read_ratio", "last_value", 300.0),
        ("read_ratio", "markov", 60.0),
        ("read_ratio", "markov", 300.0),
        ("read_ratio", "schedule", 60.0),
        ("read_ratio", "schedule", 300.0),
    ]
    assert len(rows) == 12 and all(r["n"] == rows[0]["n"] > 0 for r in rows)
    assert all(r["accuracy"] == 1.0 for r in rows if r["method"] == "schedule" or r["field"] == "throughput")
    chosen = {(c["field"], c["method"]): c for c in forecast.lookaheads(rows)}
    assert chosen[("read_ratio", "schedule")]["lookahead_s"] == 300.0
    with pytest.raises(ForecastError, match=r"^methods: 'oracle' is not allowed; choose one of arima, markov"):
        forecast.evaluate(series, methods=("oracle",))


def test_missing_libraries_is_empty_here():
    assert forecasters.missing_libraries() == []


def test_arima_default_is_d1_and_follows_a_level_switch():
    values = [0.0] * 60 + [1.0] * 60
    model = forecasters.Arima().fit(values)
    assert model.describe()["order"][1] == 1
    assert all(abs(v - 1.0) <= 0.1 for v in model.predict(4))


def test_arima_kpss_keeps_a_random_walk_differenced():
    rng = random.Random(7)
    walk = [0.0]
    for _i in range(299):
        walk.append(walk[-1] + rng.gauss(0, 1))
    model = forecasters.Arima(min_d=0, max_p=1, max_q=1).fit(walk)
    assert model.describe()["order"][1] == 1 and model.describe()["d_selection"] == "kpss"


def test_error_paths_keep_how_long_each_origins_regime_had_lasted():
    age = forecast_series.AGE
    values = [0.9] * 30 + [0.1] * 30
    series = {"t": [30.0 * i for i in range(60)], "read_ratio": values, "step_s": 30.0}
    out = forecast.error_paths(series, 5, method="last_value", max_origins=60)
    assert out["now"] == {"read_ratio": 0.1, age: 29}
    for origin, state in zip(out["origins"], out["states"], strict=True):
        assert state[age] == (origin if origin < 30 else origin - 30)
