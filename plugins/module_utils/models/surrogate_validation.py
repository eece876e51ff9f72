# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Held-out evaluation of a surrogate: splits (by configuration when a group function is given), error metrics,
and k-fold cross-validation; every random choice comes from the seed given.
"""

from __future__ import annotations

import json
import math
import random

from ansible_collections.tactician.nosql.plugins.module_utils.models.surrogate import (
    ClusterModel,
    Surrogate,
    naive_sum,
    targets_of,
)
from ansible_collections.tactician.nosql.plugins.module_utils.models.surrogate_features import (
    SurrogateError,
    check_choice,
    check_number,
    row_list,
)


# ------------------------------------------------------------------------------------------------ evaluation
def config_group(row):
    """A group function for split()/cross_validate(): every run of one configuration has the same key."""
    return json.dumps((row or {}).get("config") or {}, sort_keys=True, default=str)


def _group_keys(rows, group):
    keys = []
    for index, row in enumerate(rows):
        if group is None:
            keys.append(index)
            continue
        key = group(row)
        try:
            hash(key)
        except TypeError:
            key = json.dumps(key, sort_keys=True, default=str)
        keys.append(key)
    order = list(dict.fromkeys(keys))
    return keys, order


def split(rows, test_share=0.25, seed=0, group=None):
    """(train, test) rows. group(row) -> key keeps every row of one key on one side (held-out configurations with
    config_group); without it each row is its own group. round(test_share * groups) groups, at least one and at
    most all but one, go to test; rows keep their order."""
    rows = row_list(rows)
    test_share = float(check_number("test_share", test_share, above=0))
    if test_share >= 1:
        raise SurrogateError("test_share: %r must be below 1" % test_share)
    seed = check_number("seed", seed, minimum=0, integer=True)
    keys, order = _group_keys(rows, group)
    if len(order) < 2:
        raise SurrogateError("rows: at least 2 groups are needed to split, got %d" % len(order))
    shuffled = list(order)
    random.Random(seed).shuffle(shuffled)
    count = min(len(order) - 1, max(1, int(round(test_share * len(order)))))
    held = set(shuffled[:count])
    train = [row for row, key in zip(rows, keys, strict=True) if key not in held]
    test = [row for row, key in zip(rows, keys, strict=True) if key in held]
    return train, test


def metrics(y_true, y_pred):
    """{"r2", "rmse", "mae", "mape", "n"}: r2 = 1 - SS_res / SS_tot with SS_tot around the mean of y_true (None
    when y_true is constant); mape in percent over the points whose true value is not 0 (None if there is none)."""
    truth = [float(check_number("y_true[%d]" % i, v)) for i, v in enumerate(y_true)]
    guess = [float(check_number("y_pred[%d]" % i, v)) for i, v in enumerate(y_pred)]
    if len(truth) != len(guess):
        raise SurrogateError("y_pred: %d values for %d true values" % (len(guess), len(truth)))
    if not truth:
        raise SurrogateError("y_true: no values")
    count = len(truth)
    mean = math.fsum(truth) / count
    errors = [g - t for t, g in zip(truth, guess, strict=True)]
    ss_res = math.fsum(e * e for e in errors)
    ss_tot = math.fsum((t - mean) ** 2 for t in truth)
    relative = [abs(e) / abs(t) for e, t in zip(errors, truth, strict=True) if t != 0]
    return {
        "r2": (1.0 - ss_res / ss_tot) if ss_tot > 0 else None,
        "rmse": math.sqrt(ss_res / count),
        "mae": math.fsum(abs(e) for e in errors) / count,
        "mape": 100.0 * math.fsum(relative) / len(relative) if relative else None,
        "n": count,
    }


def _mean_metrics(items):
    merged = {}
    for key in ("r2", "rmse", "mae", "mape"):
        values = [item[key] for item in items if item.get(key) is not None]
        merged[key] = math.fsum(values) / len(values) if values else None
    merged["n"] = sum(item["n"] for item in items)
    return merged


def cross_validate(rows, k=5, seed=0, group=None, model=None, **options):
    """k-fold cross-validation: {"model", "k", "seed", "folds": [{"fold", "train", "test", "metrics"}], "mean",
    "pooled"}. Groups (see split) are shuffled with the seed and dealt to the folds in turn. model "surrogate"
    (options: space=FeatureSpace plus Surrogate's options) or "cluster" (ClusterModel's options, and the
    naive_sum strawman is scored on the same folds); by default "cluster" when the rows carry node_predictions.
    The models take the seed unless options give one."""
    rows = row_list(rows)
    k = check_number("k", k, minimum=2, integer=True)
    seed = check_number("seed", seed, minimum=0, integer=True)
    if model is None:
        model = "cluster" if rows and isinstance(rows[0], dict) and "node_predictions" in rows[0] else "surrogate"
    check_choice("model", model, ("surrogate", "cluster"))
    options.setdefault("seed", seed)
    if model == "surrogate" and "space" not in options:
        raise SurrogateError("space: cross_validate of a surrogate needs space=FeatureSpace(...)")
    try:
        Surrogate(**options) if model == "surrogate" else ClusterModel(**options)
    except TypeError as exc:
        raise SurrogateError("options: %s" % exc) from None
    keys, order = _group_keys(rows, group)
    if len(order) < k:
        raise SurrogateError("k: %d folds need at least %d groups, got %d" % (k, k, len(order)))
    shuffled = list(order)
    random.Random(seed).shuffle(shuffled)
    fold_of = {key: index % k for index, key in enumerate(shuffled)}
    folds, truth_all, pred_all, naive_all, naive_folds = [], [], [], [], []
    target = options.get("target", "ops_per_s")
    for fold in range(k):
        train = [row for row, key in zip(rows, keys, strict=True) if fold_of[key] != fold]
        test = [row for row, key in zip(rows, keys, strict=True) if fold_of[key] == fold]
        if model == "surrogate":
            fitted = Surrogate(**options).fit(train)
        else:
            fitted = ClusterModel(**options).fit(train)
        truth = targets_of(test, target, False)
        predicted = fitted.predict(test)
        entry = {"fold": fold, "train": len(train), "test": len(test), "metrics": metrics(truth, predicted)}
        if model == "cluster":
            naive = naive_sum(test)
            entry["naive_sum"] = metrics(truth, naive)
            naive_folds.append(entry["naive_sum"])
            naive_all.extend(naive)
        folds.append(entry)
        truth_all.extend(truth)
        pred_all.extend(predicted)
    result = {
        "model": model,
        "k": k,
        "seed": seed,
        "folds": folds,
        "mean": _mean_metrics([entry["metrics"] for entry in folds]),
        "pooled": metrics(truth_all, pred_all),
    }
    if model == "cluster":
        result["naive_sum"] = {"mean": _mean_metrics(naive_folds), "pooled": metrics(truth_all, naive_all)}
    return result
