# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Building models: designs of training points, datasets of measured points, fitting and saving model files.

The engine behind module ``tactician.nosql.model``:
- ``make_design``: training configurations over the parameter catalog (D-optimal or Latin hypercube), infeasible
  ones filtered by the catalog's memory budget, written as a design file (schema ``tactician.design/v1``);
- a dataset is a JSON-lines file, one measured point per line with a unique ``key``; ``append_row`` adds one
  (refusing secrets), ``read_dataset`` reads them back, so a collection can resume;
- ``fit_resource`` and ``fit_surrogate`` train, evaluate on held-out points and save a model file with its
  metadata (modelstore).
"""

from __future__ import annotations

import hashlib
import json
import os

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import ModelError
from ansible_collections.tactician.nosql.plugins.module_utils.core.secrets import check_no_secrets
from ansible_collections.tactician.nosql.plugins.module_utils.models import model_files as modelstore

DESIGN_SCHEMA = "tactician.design/v1"
DATASET_SCHEMA = "tactician.dataset_row/v1"


class ModelingError(ModelError, ValueError):
    """Bad input to a model-building step. The message starts with the field at fault."""


# ---------------------------------------------------------------------------------------------------------------
# Designs
# ---------------------------------------------------------------------------------------------------------------


def _catalog(store, store_version, data=None):
    """The store's Catalog: from data (what an action plugin loaded on the controller) or the catalog files."""
    from ansible_collections.tactician.nosql.plugins.module_utils.core import catalog as catalog_mod
    from ansible_collections.tactician.nosql.plugins.module_utils.core import catalog_files

    try:
        cat = catalog_mod.Catalog(data) if data else catalog_mod.Catalog.for_store(store, store_version)
    except catalog_files.CatalogError as exc:
        raise ModelingError("store_version: %s" % exc) from None
    if cat.store != store:
        raise ModelingError("catalog: it is the catalog of %s, not of %s" % (cat.store, store))
    return cat


def make_design(
    store,
    store_version,
    parameters,
    n,
    method="d_optimal",
    ranges=None,
    seed=0,
    memory_mb=None,
    heap_mb=None,
    include_default=True,
    defaults=None,
    catalog=None,
):
    """A design document: {schema, store, store_version, parameters, ranges, method, seed, points: [{id, config}],
    infeasible, criterion}."""
    from ansible_collections.tactician.nosql.plugins.module_utils.models import (
        surrogate_design,
        surrogate_features,
    )

    if method not in ("d_optimal", "lhs"):
        raise ModelingError("method: %r is not allowed; choose one of d_optimal, lhs" % (method,))
    if not isinstance(n, int) or n < 2:
        raise ModelingError("n: %r is not allowed; choose a number of points >= 2" % (n,))
    cat = _catalog(store, store_version, catalog)
    space = surrogate_features.FeatureSpace(cat, parameters, ranges=ranges, defaults=defaults)
    feasible = surrogate_design.feasible_by_catalog(cat, memory_mb=memory_mb, heap_mb=heap_mb)
    result = surrogate_design.design(
        space, n, method=method, seed=seed, feasible=feasible, include_default=include_default
    )
    points = [{"id": "p%02d" % index, "config": config} for index, config in enumerate(result["points"])]
    return {
        "schema": DESIGN_SCHEMA,
        "store": store,
        "store_version": str(store_version),
        "parameters": list(parameters),
        "ranges": ranges or {},
        "method": method,
        "seed": seed,
        "memory_mb": memory_mb,
        "heap_mb": heap_mb,
        "defaults": defaults or {},
        "points": points,
        "infeasible": result.get("infeasible", 0),
        "criterion": result.get("criterion"),
    }


# ---------------------------------------------------------------------------------------------------------------
# Datasets
# ---------------------------------------------------------------------------------------------------------------


RACE_SCHEMA = "tactician.race/v1"


def _race_row(item):
    """A training row from a racing trial: the instance's workload, the configuration, the measured ops/s."""
    spec = item.get("instance_spec") or {}
    run = dict(item.get("run") or {})
    workload = spec.get("workload")
    if run.get("mix"):
        # What the run executed (recorded by playbooks/tune.yml), rather than the letter's YCSB defaults.
        workload = {key: run.pop(key) for key in ("mix", "requestdistribution", "records", "threads") if key in run}
        if isinstance(spec.get("workload"), str):
            workload["name"] = spec["workload"].lower()
    run["elapsed_s"] = item.get("elapsed_s")
    return {
        "key": "race/%s/%s" % (hashlib.sha1(item["config_key"].encode()).hexdigest()[:10], item["instance"]),
        "workload": workload if workload is not None else {},
        "config": item["config"],
        "ops_per_s": item["value"],
        "run": run,
    }


def read_dataset(path):
    """Rows of a dataset file, in order (a missing file is an empty dataset). A racing trial history
    (racing.TrialHistory) is read as a dataset too: one row per run, so racing results can train a surrogate."""
    rows = []
    race = False
    try:
        with open(path) as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                except ValueError as exc:
                    raise ModelingError("dataset: %s line %d is not JSON: %s" % (path, number, exc)) from None
                if number == 1 and isinstance(item, dict) and item.get("schema") == RACE_SCHEMA:
                    race = True
                    continue
                rows.append(_race_row(item) if race else item)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ModelingError("dataset: cannot read %s: %s" % (path, exc)) from None
    return rows


def append_row(path, key, row):
    """Append one row under key; returns False (nothing written) when the key is already there."""
    if not key:
        raise ModelingError("key: give each row a non-empty key (for example <point id>/<workload>)")
    if not isinstance(row, dict):
        raise ModelingError("row: %r is not a mapping" % (row,))
    check_no_secrets(row, "row", ModelingError, "a dataset never holds")
    if any(existing.get("key") == key for existing in read_dataset(path)):
        return False
    line = json.dumps(dict(row, key=key, schema=DATASET_SCHEMA), sort_keys=True, allow_nan=False)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "a") as handle:
        handle.write(line + "\n")
    return True


# ---------------------------------------------------------------------------------------------------------------
# Fitting
# ---------------------------------------------------------------------------------------------------------------


def _number(field, value):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ModelingError("%s: %r is not a number" % (field, value)) from None


def fit_resource(data, store, store_version, hardware, model_file=None):
    """Fit the resource model from calibration data and save it.

    data: {"read": [{level, throughput, usage, hit_ratio, converged, records}], "update": [{throughput or
    writes_per_s, usage}], "idle_usage", "cache_items"}. Returns (document, summary lines)."""
    from ansible_collections.tactician.nosql.plugins.module_utils.models import resource_model as rm

    if not isinstance(data, dict) or not data.get("read"):
        raise ModelingError("data.read: give the calibration's read-level points (calibrate action=read_levels)")
    idle = _number("data.idle_usage", data.get("idle_usage") or 0.0)
    read_rows = []
    for index, row in enumerate(data["read"]):
        if row.get("hit_ratio") is None or row.get("throughput") is None:
            continue
        read_rows.append(
            {
                "hit_ratio": _number("data.read[%d].hit_ratio" % index, row["hit_ratio"]),
                "level": _number("data.read[%d].level" % index, row["level"]),
                "throughput": _number("data.read[%d].throughput" % index, row["throughput"]),
                "converged": bool(row.get("converged")),
            }
        )
    update_points = []
    for index, row in enumerate(data.get("update") or []):
        tput = row.get("writes_per_s", row.get("throughput"))
        update_points.append(
            (
                _number("data.update[%d].throughput" % index, tput),
                _number("data.update[%d].usage" % index, row["usage"]),
            )
        )
    read = rm.fit_read_model(read_rows, idle_usage=idle)
    update = rm.UpdateModel.fit(update_points) if update_points else None
    model = rm.ResourceModel(read, update, hardware)
    rows = {"read": read_rows, "update": update_points, "idle_usage": idle, "cache_items": data.get("cache_items")}
    metrics = {"levels": sorted({r["level"] for r in read_rows if r["converged"]})}
    if update is not None:
        metrics["update_r2"] = getattr(update, "r2", None)
    metadata = modelstore.new_metadata(
        store,
        store_version,
        hardware,
        ["hit_ratio", "read_throughput", "update_throughput"],
        [rows],
        target="usage_pct",
        metrics=metrics,
        cache_items=data.get("cache_items"),
    )
    doc = {"schema": modelstore.MODEL_SCHEMA, "kind": "resource", "metadata": metadata, "model": model.to_dict()}
    if model_file:
        modelstore.save_model(model_file, "resource", doc["model"], metadata)
    summary = [
        "read model: %d points at levels %s %% over hit ratios %s"
        % (
            len([r for r in read_rows if r["converged"]]),
            ", ".join("%g" % v for v in metrics["levels"]),
            ", ".join(sorted({"%.2f" % r["hit_ratio"] for r in read_rows})),
        ),
        "update model: %s"
        % (
            "usage = %.3f + %.5f x update ops/s (R2 %.3f)" % (update.intercept, update.slope, update.r2)
            if update is not None
            else "none (no update points)"
        ),
        "idle usage: %.2f %%" % idle,
    ]
    return doc, summary


DEFAULT_MAX_OTHER_CPU_SHARE = 0.10


def other_cpu_share(row, cpus=None):
    """Share of the machine's CPU that other work used during a measured run (None when not recorded)."""
    run = row.get("run") or {}
    other, wall = run.get("other_cpu_s"), run.get("wall_s")
    if other in (None, "", "None") or not wall:
        return None
    return float(other) / (float(wall) * float(cpus or os.cpu_count() or 1))


def drop_contended(rows, max_share=DEFAULT_MAX_OTHER_CPU_SHARE, cpus=None):
    """(rows measured on a quiet machine, number dropped): a run during which other work took more than max_share
    of the machine's CPU measured that work as much as the store. Rows that did not record it are kept."""
    if max_share is None:
        return list(rows), 0
    kept = [row for row in rows if (other_cpu_share(row, cpus) or 0.0) <= max_share]
    return kept, len(rows) - len(kept)


def _config_group(row):
    return json.dumps(row.get("config") or {}, sort_keys=True)


def r2_text(value):
    """R2 for a summary line; surrogate.metrics gives None when the held-out rows all measured the same value (a
    race on a machine too busy to serve anything records zeros), where R2 is undefined."""
    return "n/a (the held-out rows all measured the same)" if value is None else "%.3f" % value


def fit_surrogate(
    rows,
    store,
    store_version,
    hardware,
    parameters=None,
    ranges=None,
    test_share=0.25,
    seed=0,
    n_estimators=20,
    max_depth=5,
    model_file=None,
    defaults=None,
    catalog=None,
    max_other_cpu_share=DEFAULT_MAX_OTHER_CPU_SHARE,
):
    """Fit the single-node surrogate on a dataset, report held-out metrics (whole configurations held out), then
    refit on every row and save. Returns (document, evaluation, summary lines)."""
    from ansible_collections.tactician.nosql.plugins.module_utils.models import (
        surrogate,
        surrogate_features,
        surrogate_validation,
    )

    rows, contended = drop_contended(rows, max_other_cpu_share, cpus=hardware.get("vcpu"))
    # Each row's hardware: the profile's numbers, overridden by what the row recorded.
    numbers = {k: v for k, v in hardware.items() if k in ("vcpu", "ram_gb", "disk_ssd", "heap_mb") and v is not None}
    rows = [
        dict(row, hardware=dict(numbers, **(row.get("hardware") or {})))
        for row in rows
        if row.get("ops_per_s") is not None
    ]
    if len(rows) < 4:
        raise ModelingError("dataset: %d measured rows; a surrogate needs at least 4" % len(rows))
    if parameters is None:
        parameters = sorted({name for row in rows for name in (row.get("config") or {})})
    cat = _catalog(store, store_version, catalog)
    space = surrogate_features.FeatureSpace(cat, parameters, ranges=ranges, defaults=defaults)
    train, test = surrogate_validation.split(rows, test_share=test_share, seed=seed, group=_config_group)
    held = surrogate.Surrogate(space, n_estimators=n_estimators, max_depth=max_depth, seed=seed).fit(train)
    predicted = held.predict(test)
    evaluation = surrogate_validation.metrics([r["ops_per_s"] for r in test], predicted)
    evaluation["train_rows"] = len(train)
    evaluation["test_rows"] = len(test)
    evaluation["test_configurations"] = len({_config_group(r) for r in test})
    model = surrogate.Surrogate(space, n_estimators=n_estimators, max_depth=max_depth, seed=seed).fit(rows)
    evaluation["dropped_contended"] = contended
    evaluation["held_out"] = [
        {"key": r.get("key"), "measured": r["ops_per_s"], "predicted": round(float(p), 2)}
        for r, p in zip(test, predicted, strict=True)
    ]
    metadata = modelstore.new_metadata(
        store,
        store_version,
        hardware,
        space.feature_names(),
        rows,
        target="ops_per_s",
        metrics={k: evaluation[k] for k in ("r2", "rmse", "mae", "mape", "n") if k in evaluation},
        parameters=list(parameters),
    )
    doc = {"schema": modelstore.MODEL_SCHEMA, "kind": "surrogate", "metadata": metadata, "model": model.to_dict()}
    if model_file:
        modelstore.save_model(model_file, "surrogate", doc["model"], metadata)
    summary = [
        "surrogate: random forest of %d trees, depth %d, on %d rows (%d parameters)"
        % (n_estimators, max_depth, len(rows), len(parameters)),
        "held out %d rows of %d configurations: R2 %s, RMSE %.1f ops/s, MAE %.1f ops/s (%d contended runs left out)"
        % (
            evaluation["test_rows"],
            evaluation["test_configurations"],
            r2_text(evaluation["r2"]),
            evaluation["rmse"],
            evaluation["mae"],
            contended,
        ),
    ]
    return doc, evaluation, summary


def fit_cluster(
    rows, store, store_version, hardware, test_share=0.25, seed=0, n_estimators=20, max_depth=5, model_file=None
):
    """Fit the cluster model (per-node predictions + RF + CL + complete-sets -> cluster ops/s) on measured
    clusters, report held-out metrics next to the naive sum of the nodes, refit on every row and save."""
    from ansible_collections.tactician.nosql.plugins.module_utils.models import (
        surrogate,
        surrogate_validation,
    )

    rows = [row for row in rows if row.get("ops_per_s") is not None]
    if len(rows) < 4:
        raise ModelingError("dataset: %d measured clusters; a cluster model needs at least 4" % len(rows))
    train, test = surrogate_validation.split(rows, test_share=test_share, seed=seed)
    held = surrogate.ClusterModel(n_estimators=n_estimators, max_depth=max_depth, seed=seed).fit(train)
    truth = [r["ops_per_s"] for r in test]
    evaluation = surrogate_validation.metrics(truth, held.predict(test))
    evaluation["naive_sum"] = surrogate_validation.metrics(truth, surrogate.naive_sum(test))
    evaluation["train_rows"], evaluation["test_rows"] = len(train), len(test)
    model = surrogate.ClusterModel(n_estimators=n_estimators, max_depth=max_depth, seed=seed).fit(rows)
    metadata = modelstore.new_metadata(
        store,
        store_version,
        hardware,
        list(surrogate.CLUSTER_FEATURES),
        rows,
        target="ops_per_s",
        metrics={k: evaluation[k] for k in ("r2", "rmse", "mae", "n")},
    )
    doc = {
        "schema": modelstore.MODEL_SCHEMA,
        "kind": "cluster_surrogate",
        "metadata": metadata,
        "model": model.to_dict(),
    }
    if model_file:
        modelstore.save_model(model_file, "cluster_surrogate", doc["model"], metadata)
    summary = [
        "cluster model: random forest of %d trees, depth %d, on %d measured clusters"
        % (n_estimators, max_depth, len(rows)),
        "held out %d: R2 %s, RMSE %.1f ops/s; naive sum of the nodes: R2 %s, RMSE %.1f ops/s"
        % (
            len(test),
            r2_text(evaluation["r2"]),
            evaluation["rmse"],
            r2_text(evaluation["naive_sum"]["r2"]),
            evaluation["naive_sum"]["rmse"],
        ),
    ]
    return doc, evaluation, summary
