# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The three predictions of module ``tactician.nosql.predict``, as plain functions of plain data.

- ``forecast_workload``: the workload vector ahead, from the history store (or a known schedule), with the
  accuracy of the method on that same history at 1, 2, 5 and 15 minutes and the lookahead it supports;
- ``predict_resource``: a node's usage from cache hit ratio and throughput, and the largest throughput under a
  usage cap, from a calibrated resource model file;
- ``predict_performance``: ops/s of configurations for a workload from a surrogate model file, and of a cluster
  from its per-node predictions.
"""

from __future__ import annotations

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import ModelError
from ansible_collections.tactician.nosql.plugins.module_utils.models import model_files as modelstore

DEFAULT_HORIZONS_S = (60.0, 120.0, 300.0, 900.0)
FORECAST_METHODS = ("auto", "arima", "markov", "last_value", "schedule")
AUTO_METHODS = ("arima", "markov", "last_value")
MIN_BACKTEST_HISTORY = 20


class PredictError(ModelError, ValueError):
    """Bad input to a prediction. The message starts with the field at fault."""


def _steps(seconds, step_s):
    return max(1, int(round(float(seconds) / float(step_s))))


def forecast_workload(
    samples=None,
    schedule=None,
    schedule_position=0,
    method="auto",
    step_s=30.0,
    horizon_s=None,
    horizons_s=DEFAULT_HORIZONS_S,
    threshold=0.70,
    backtest=True,
    history_points=500,
    fields=("read_ratio", "throughput"),
):
    """Forecast the workload; returns {method, step_s, series_points, forecast, accuracy, lookahead}.

    samples: workload samples of one node (oldest first; the aggregate "cluster" node for a cluster);
    schedule: a Schedule for method "schedule" (a perfect forecast from the schedule's own steps, starting at
    schedule_position steps into it). horizon_s: how far to forecast; None = the lookahead the backtest supports
    (or the longest of horizons_s without a backtest)."""
    from ansible_collections.tactician.nosql.plugins.module_utils.models import forecast as fc
    from ansible_collections.tactician.nosql.plugins.module_utils.models import forecast_series

    if method not in FORECAST_METHODS:
        raise PredictError("method: %r is not allowed; choose one of %s" % (method, ", ".join(FORECAST_METHODS)))
    if method == "schedule":
        if schedule is None:
            raise PredictError("schedule_file: method schedule needs the schedule (a job queue or schedule file)")
        series = forecast_series.series_from_schedule(schedule, step_s=step_s)
    else:
        if not samples:
            raise PredictError("history: no workload samples for this cluster and node; run observe first")
        series = forecast_series.series_from_samples(samples, step_s=step_s)
    length = len(series["t"])
    horizons = [_steps(h, step_s) for h in horizons_s]
    options = {"start_index": int(schedule_position)} if method == "schedule" else {}
    accuracy = []
    lookahead = None
    if method == "auto" and not backtest:
        raise PredictError("method: auto chooses by backtest; set backtest to true or name a method")
    if backtest and method != "schedule":
        # Fit windows of up to history_points, leaving at least as many points again for the rolling origins.
        history = min(history_points, (length - max(horizons)) // 2)
        if history < MIN_BACKTEST_HISTORY:
            lookahead = {
                "lookahead_steps": 0,
                "lookahead_s": 0.0,
                "reason": "the history has %d steps: too short to measure accuracy %d steps ahead (needs %d)"
                % (length, max(horizons), 2 * MIN_BACKTEST_HISTORY + max(horizons)),
            }
            if method == "auto":  # nothing to choose by yet: the workload stays as it is now
                method = "last_value"
                lookahead["reason"] += "; auto forecasts the last value until the history is long enough"
        else:
            candidates = AUTO_METHODS if method == "auto" else (method,)
            accuracy = fc.evaluate(series, list(candidates), horizons, fields=list(fields), history=history)
            scored = []
            for name in candidates:
                rows = [row for row in accuracy if row["method"] == name]
                ahead = _lookahead(rows, horizons, step_s, threshold)
                mean = sum(row["accuracy"] or 0.0 for row in rows) / max(len(rows), 1)
                scored.append((ahead["lookahead_steps"], mean, -candidates.index(name), name, ahead))
            _steps_ahead, _mean, _order, chosen, lookahead = max(scored)
            if method == "auto":
                lookahead = dict(
                    lookahead,
                    reason="%s (auto: the longest lookahead, then the best mean accuracy, of %s)"
                    % (lookahead["reason"], ", ".join(candidates)),
                )
                method = chosen
    elif method == "schedule":
        lookahead = {
            "lookahead_steps": max(horizons),
            "lookahead_s": max(horizons) * step_s,
            "reason": "a known schedule is a perfect forecast",
        }
    if horizon_s is not None:
        steps = _steps(horizon_s, step_s)
    elif lookahead is not None and lookahead["lookahead_steps"]:
        steps = lookahead["lookahead_steps"]
    else:
        steps = max(horizons)
    if method == "schedule":
        remaining = length - int(schedule_position)
        if remaining <= 0:
            raise PredictError(
                "schedule_position: %s is past the end of the schedule (%d steps)" % (schedule_position, length)
            )
        steps = min(steps, remaining)
    future = fc.forecast(series, steps, method=method, **options)
    if backtest and method != "schedule" and accuracy:
        # What this forecast has been worth here, step by step: the error paths the safety rule plans with.
        error_fields = [f for f in ("read_ratio",) if f in fields] or list(fields)[:1]
        future["errors"] = fc.error_paths(
            series,
            steps,
            method=method,
            fields=error_fields,
            history=history_points,
            max_origins=20 if method == "arima" else 60,
        )
    return {
        "method": method,
        "step_s": step_s,
        "series_points": length,
        "filled_steps": series.get("filled", 0),
        "forecast": future,
        "accuracy": accuracy,
        "lookahead": lookahead,
    }


def _lookahead(rows, horizons, step_s, threshold):
    """Lookahead from the evaluate() rows: the longest horizon where every forecast field reaches threshold."""
    from ansible_collections.tactician.nosql.plugins.module_utils.models import forecast as fc

    worst = {}
    for row in rows:
        steps = _steps(row["horizon_s"], step_s)
        worst[steps] = min(worst.get(steps, 1.0), row["accuracy"] if row["accuracy"] is not None else 0.0)
    table = {h: {"accuracy": worst.get(h, 0.0)} for h in horizons}
    return fc.choose_lookahead(table, threshold=threshold, step_s=step_s)


# ---------------------------------------------------------------------------------------------------------------
# Resource usage
# ---------------------------------------------------------------------------------------------------------------


def _check_ratio(field, value):
    if value is None:
        return None
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise PredictError("%s: %r is not allowed; choose a ratio in [0, 1]" % (field, value))
    return value


def _check_rate(field, value):
    if value is None:
        return None
    value = float(value)
    if value < 0:
        raise PredictError("%s: %r is not allowed; choose ops/s >= 0" % (field, value))
    return value


def predict_resource(
    model_file,
    hit_ratio,
    throughput=None,
    read_ratio=None,
    read_throughput=None,
    update_throughput=None,
    cap=None,
    store=None,
    hardware_profile=None,
):
    """Usage (% of the node) of a workload and, with cap, the largest throughput that keeps the node under it."""
    from ansible_collections.tactician.nosql.plugins.module_utils.models import resource_model as rm

    data, metadata = modelstore.load_model(model_file, kind="resource", store=store, hardware_profile=hardware_profile)
    model = rm.ResourceModel.from_dict(data)
    hit = _check_ratio("hit_ratio", hit_ratio)
    if hit is None:
        raise PredictError("hit_ratio: give the cache hit ratio of the workload (observe reports it)")
    read_ratio = _check_ratio("read_ratio", read_ratio)
    throughput = _check_rate("throughput", throughput)
    read_throughput = _check_rate("read_throughput", read_throughput)
    update_throughput = _check_rate("update_throughput", update_throughput)
    if read_throughput is None and throughput is not None:
        share = 1.0 if read_ratio is None else read_ratio
        read_throughput, update_throughput = throughput * share, throughput * (1.0 - share)
    result = {"hit_ratio": hit, "hardware_profile": metadata["hardware_profile"].get("name")}
    if read_throughput is not None:
        result["usage"] = round(float(model.usage(hit, read_throughput, update_throughput or 0.0)), 3)
        result["read_throughput"] = read_throughput
        result["update_throughput"] = update_throughput or 0.0
    if cap is not None:
        cap = float(cap)
        if not 0 < cap <= 100:
            raise PredictError("cap: %r is not allowed; choose a usage in (0, 100] percent" % cap)
        share = 1.0 if read_ratio is None else read_ratio
        result["cap"] = cap
        best = model.max_throughput(hit, share, cap)
        # None: this workload never reaches the cap by the model (no reads and updates cost nothing).
        result["max_throughput"] = None if best is None else round(float(best), 2)
    if "usage" not in result and "max_throughput" not in result:
        raise PredictError("throughput, cap: give a throughput to predict usage, or a cap for the largest throughput")
    return result


# ---------------------------------------------------------------------------------------------------------------
# Throughput (surrogate)
# ---------------------------------------------------------------------------------------------------------------


def predict_performance(
    model_file,
    workload,
    configs,
    hardware=None,
    store=None,
    store_version=None,
    hardware_profile=None,
    cluster=None,
    cluster_model_file=None,
):
    """Predicted ops/s of each configuration for the workload on one node; with cluster = {nodes, rf, cl,
    complete_sets}, also the cluster's ops/s (the cluster model when given, else the naive sum of the nodes)."""
    from ansible_collections.tactician.nosql.plugins.module_utils.models import surrogate, surrogate_features

    data, metadata = modelstore.load_model(
        model_file, kind="surrogate", store=store, store_version=store_version, hardware_profile=hardware_profile
    )
    model = surrogate.Surrogate.from_dict(data)
    if not configs:
        configs = [{}]
    hardware = dict(metadata["hardware_profile"] or {}, **(hardware or {}))
    rows = [{"workload": workload, "config": config, "hardware": hardware} for config in configs]
    values = [float(v) for v in model.predict(rows)]
    result = {"ops_per_s": [round(v, 2) for v in values], "model_metrics": metadata.get("metrics", {})}
    if cluster:
        nodes = int(cluster.get("nodes") or 1)
        result["cluster"] = []
        cluster_model = None
        if cluster_model_file:
            cdata, _cmeta = modelstore.load_model(cluster_model_file, kind="cluster_surrogate", store=store)
            cluster_model = surrogate.ClusterModel.from_dict(cdata)
        for value in values:
            row = {
                "node_predictions": [value] * nodes,
                "nodes": nodes,
                "rf": int(cluster.get("rf") or 1),
                "cl": cluster.get("cl") or "ONE",
                "complete_sets": int(cluster.get("complete_sets") or cluster.get("rf") or 1),
                "read_ratio": surrogate_features.workload_values(workload)["read_ratio"],
            }
            if cluster_model is not None:
                result["cluster"].append(
                    {"ops_per_s": round(float(cluster_model.predict([row])[0]), 2), "model": "cluster_surrogate"}
                )
            else:
                result["cluster"].append(
                    {
                        "ops_per_s": round(float(surrogate.naive_sum([row])[0]), 2),
                        "model": "naive sum of the nodes (no cluster model given)",
                    }
                )
    return result
