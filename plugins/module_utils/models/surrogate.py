# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Throughput surrogates (seed 002): ops/s predicted from workload, configuration and hardware.

- ``Surrogate``: the single-node model, a random forest (20 trees of depth 5 by default, as in the paper), fitted
  with scikit-learn and then exported as plain arrays, so that a saved model is JSON and predicts with numpy only.
- ``ClusterModel``: the cluster model, a second forest over the per-node predictions and the topology (nodes,
  replication factor, replicas the consistency level waits for, complete sets, read ratio); ``naive_sum`` is the
  paper's strawman (cluster ops/s = sum of the nodes' ops/s).

Its input is a surrogate_features.FeatureSpace; which configurations to measure is surrogate_design's, held-out
evaluation surrogate_validation's. numpy is needed to predict and scikit-learn to fit; each is imported when first
needed, and a missing one raises SurrogateError naming it. Every random choice is drawn from the seed given.
"""

from __future__ import annotations

import math

from ansible_collections.tactician.nosql.plugins.module_utils.models.surrogate_features import (
    FeatureSpace,
    SurrogateError,
    check_choice,
    check_mapping,
    check_number,
    import_library,
    is_number,
    numpy_library,
    row_list,
)

CONSISTENCY_LEVELS = ("ONE", "TWO", "THREE", "QUORUM", "LOCAL_ONE", "LOCAL_QUORUM", "ALL")
CLUSTER_FEATURES = ("sum", "mean", "min", "max", "nodes", "rf", "cl_replicas", "complete_sets", "read_ratio")


SURROGATE_FORMAT = "tactician.surrogate/v1"
CLUSTER_FORMAT = "tactician.cluster_surrogate/v1"


# ------------------------------------------------------------------------------------------------ forests
class _Forest:
    """Regression trees as arrays (sklearn's tree_ layout) predicting with numpy only."""

    KEYS = ("children_left", "children_right", "feature", "threshold", "value")

    def __init__(self, trees, n_features):
        np = numpy_library()
        self.n_features = n_features
        self.trees = []
        for index, tree in enumerate(trees):
            field = "trees[%d]" % index
            check_mapping(field, tree)
            for key in self.KEYS:
                if key not in tree:
                    raise SurrogateError("%s.%s: missing" % (field, key))
            left = np.asarray(tree["children_left"], dtype=np.int64)
            right = np.asarray(tree["children_right"], dtype=np.int64)
            feature = np.asarray(tree["feature"], dtype=np.int64)
            threshold = np.asarray(tree["threshold"], dtype=np.float64)
            value = np.asarray(tree["value"], dtype=np.float64)
            count = len(left)
            if not count or any(len(arr) != count for arr in (right, feature, threshold, value)):
                raise SurrogateError("%s: the arrays %s must have one equal, non-zero length" % (field, self.KEYS))
            nodes = np.arange(count)
            split = left != -1
            if np.any((right != -1) != split):
                raise SurrogateError("%s: a node has one child only" % field)
            if np.any(split & ((left <= nodes) | (right <= nodes) | (left >= count) | (right >= count))):
                raise SurrogateError("%s: children must point forward to nodes of the tree" % field)
            if np.any(split & ((feature < 0) | (feature >= n_features))):
                raise SurrogateError("%s.feature: outside the %d features" % (field, n_features))
            if not np.all(np.isfinite(value)) or not np.all(np.isfinite(threshold[split])):
                raise SurrogateError("%s: thresholds and values must be finite" % field)
            self.trees.append((left, right, np.where(split, feature, -2), threshold, value))

    @classmethod
    def fit(cls, matrix, target, n_estimators, max_depth, seed):
        np = numpy_library()
        regressor_class = import_library("sklearn")
        regressor = regressor_class(n_estimators=n_estimators, max_depth=max_depth, random_state=seed, n_jobs=None)
        regressor.fit(np.asarray(matrix, dtype=float), np.asarray(target, dtype=float))
        trees = []
        for estimator in regressor.estimators_:
            tree = estimator.tree_
            trees.append(
                {
                    "children_left": tree.children_left.tolist(),
                    "children_right": tree.children_right.tolist(),
                    "feature": tree.feature.tolist(),
                    "threshold": tree.threshold.tolist(),
                    "value": tree.value[:, 0, 0].tolist(),
                }
            )
        forest = cls(trees, regressor.n_features_in_)
        forest.importances = [float(x) for x in regressor.feature_importances_]
        return forest, regressor

    def predict(self, matrix):
        np = numpy_library()
        data = np.asarray(matrix, dtype=np.float64)
        if data.ndim != 2 or data.shape[1] != self.n_features:
            raise SurrogateError("features: expected rows of %d values, got shape %s" % (self.n_features, data.shape))
        # Trees compare the features as float32, as scikit-learn does when it predicts.
        data = data.astype(np.float32).astype(np.float64)
        rows = np.arange(data.shape[0])
        total = np.zeros(data.shape[0])
        for left, right, feature, threshold, value in self.trees:
            node = np.zeros(data.shape[0], dtype=np.int64)
            for _depth in range(len(left)):
                inner = left[node] != -1
                if not inner.any():
                    break
                go_left = data[rows, np.maximum(feature[node], 0)] <= threshold[node]
                node = np.where(inner, np.where(go_left, left[node], right[node]), node)
            total += value[node]
        return total / len(self.trees)

    def to_list(self):
        return [
            {
                "children_left": left.tolist(),
                "children_right": right.tolist(),
                "feature": feature.tolist(),
                "threshold": threshold.tolist(),
                "value": value.tolist(),
            }
            for left, right, feature, threshold, value in self.trees
        ]


def _hyper(n_estimators, max_depth, seed):
    n_estimators = check_number("n_estimators", n_estimators, minimum=1, integer=True)
    if max_depth is not None:
        max_depth = check_number("max_depth", max_depth, minimum=1, integer=True)
    seed = check_number("seed", seed, minimum=0, integer=True)
    return n_estimators, max_depth, seed


def targets_of(rows, target, log_target):
    values = []
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            raise SurrogateError("rows[%d]: expected a mapping, got %s" % (index, type(row).__name__))
        if row.get(target) is None:
            raise SurrogateError("rows[%d].%s: missing (the measured throughput to learn)" % (index, target))
        value = float(check_number("rows[%d].%s" % (index, target), row[target], minimum=0))
        if log_target and value <= 0:
            raise SurrogateError("rows[%d].%s: %r must be > 0 with log_target" % (index, target, value))
        values.append(math.log(value) if log_target else value)
    return values


def _output(np, values, log_target):
    values = np.exp(values) if log_target else values
    return [float(x) for x in values]


def _forest_from(data, n_features, field):
    try:
        forest = _Forest(data.get("trees") or [], n_features)
    except SurrogateError as exc:
        raise SurrogateError("%s.%s" % (field, exc)) from None
    if not forest.trees:
        raise SurrogateError("%s.trees: missing or empty" % field)
    importances = data.get("feature_importances") or [0.0] * n_features
    if len(importances) != n_features:
        raise SurrogateError("%s.feature_importances: expected %d values" % (field, n_features))
    forest.importances = [float(x) for x in importances]
    return forest


# ------------------------------------------------------------------------------------------------ single node
class Surrogate:
    """Single-node throughput model: target (ops/s) = forest(encode(workload, config, hardware)).

    Fitted with scikit-learn's RandomForestRegressor (bootstrap samples, random_state=seed), then exported: the
    fitted estimator stays in .estimator_ for comparison, while predict() and a model loaded by from_dict() use
    only the exported trees and numpy. log_target fits log(ops/s) and predicts exp of the forest's mean.
    """

    def __init__(self, space, n_estimators=20, max_depth=5, seed=0, target="ops_per_s", log_target=False):
        if not isinstance(space, FeatureSpace):
            raise SurrogateError("space: expected a FeatureSpace, got %s" % type(space).__name__)
        self.space = space
        self.n_estimators, self.max_depth, self.seed = _hyper(n_estimators, max_depth, seed)
        if not isinstance(target, str) or not target:
            raise SurrogateError("target: give the row key of the measured value, e.g. ops_per_s")
        self.target = target
        self.log_target = bool(log_target)
        self.forest = None
        self.estimator_ = None
        self.training_rows = 0

    def fit(self, rows):
        rows = row_list(rows)
        if len(rows) < 2:
            raise SurrogateError("rows: at least 2 measured rows are needed to fit, got %d" % len(rows))
        target = targets_of(rows, self.target, self.log_target)
        matrix = self.space.encode_rows(rows)
        self.forest, self.estimator_ = _Forest.fit(matrix, target, self.n_estimators, self.max_depth, self.seed)
        self.training_rows = len(rows)
        return self

    def _fitted(self):
        if self.forest is None:
            raise SurrogateError("model: not fitted; call fit(rows) or load one with from_dict()")
        return self.forest

    def predict(self, rows):
        """Predicted target of rows [{"workload", "config", "hardware"}]: a list of floats (a float for one row)."""
        self._fitted()
        single = isinstance(rows, dict)
        matrix = self.space.encode_rows(rows)
        if not matrix:
            return []
        values = self.predict_features(matrix)
        return values[0] if single else values

    def predict_features(self, matrix):
        """Predictions for already encoded rows (feature_names() order)."""
        np = numpy_library()
        return _output(np, self._fitted().predict(matrix), self.log_target)

    def feature_importances(self, by_parameter=False):
        """{feature: impurity importance} from the fit; by_parameter sums an enum's columns under its name."""
        importances = dict(zip(self.space.feature_names(), self._fitted().importances, strict=True))
        if not by_parameter:
            return importances
        merged = {}
        for name, value in importances.items():
            key = self.space.parameter_of(name) or name
            merged[key] = merged.get(key, 0.0) + value
        return merged

    def to_dict(self):
        forest = self._fitted()
        return {
            "format": SURROGATE_FORMAT,
            "kind": "surrogate",
            "space": self.space.to_dict(),
            "hyper_parameters": {"n_estimators": self.n_estimators, "max_depth": self.max_depth, "seed": self.seed},
            "target": self.target,
            "log_target": self.log_target,
            "training_rows": self.training_rows,
            "feature_importances": list(forest.importances),
            "trees": forest.to_list(),
        }

    @classmethod
    def from_dict(cls, data, catalog=None):
        """A model from to_dict() data: predicts with numpy only (no scikit-learn, no pickle)."""
        check_mapping("model", data)
        if data.get("format") != SURROGATE_FORMAT:
            raise SurrogateError("model.format: %r is not %s" % (data.get("format"), SURROGATE_FORMAT))
        space = FeatureSpace.from_dict(data.get("space") or {}, catalog=catalog)
        hyper = data.get("hyper_parameters") or {}
        model = cls(
            space,
            n_estimators=hyper.get("n_estimators", 20),
            max_depth=hyper.get("max_depth", 5),
            seed=hyper.get("seed", 0),
            target=data.get("target", "ops_per_s"),
            log_target=data.get("log_target", False),
        )
        model.forest = _forest_from(data, len(space.feature_names()), "model")
        model.training_rows = int(data.get("training_rows") or 0)
        return model


# ------------------------------------------------------------------------------------------------ cluster
def replicas_needed(cl, rf):
    """Replicas a consistency level waits for: ONE 1, TWO 2, THREE 3, QUORUM and LOCAL_QUORUM rf // 2 + 1, ALL rf
    (a number is taken as is)."""
    rf = check_number("rf", rf, minimum=1, integer=True)
    if is_number(cl):
        needed = check_number("cl", cl, minimum=1, integer=True)
    else:
        name = check_choice("cl", str(cl).strip().upper(), CONSISTENCY_LEVELS)
        needed = {"ONE": 1, "LOCAL_ONE": 1, "TWO": 2, "THREE": 3, "QUORUM": rf // 2 + 1, "LOCAL_QUORUM": rf // 2 + 1}
        needed = needed.get(name, rf)
    if needed > rf:
        raise SurrogateError("cl: %r waits for %d replicas but rf is %d" % (cl, needed, rf))
    return needed


def _node_predictions(row, field):
    values = row.get("node_predictions")
    if not isinstance(values, (list, tuple)) or not values:
        raise SurrogateError("%s.node_predictions: give the list of per-node predicted ops/s" % field)
    return [float(check_number("%s.node_predictions[%d]" % (field, i), v, minimum=0)) for i, v in enumerate(values)]


def cluster_features(row, field="row"):
    """CLUSTER_FEATURES of one cluster row {"node_predictions", "nodes", "rf", "cl", "complete_sets",
    "read_ratio"}: nodes defaults to the number of predictions, cl to ONE, complete_sets to rf (the paper observes
    count(complete sets) close to RF)."""
    check_mapping(field, row)
    values = _node_predictions(row, field)
    nodes = row.get("nodes", len(values))
    nodes = check_number("%s.nodes" % field, nodes, minimum=1, integer=True)
    if nodes != len(values):
        raise SurrogateError("%s.nodes: %d but node_predictions has %d values" % (field, nodes, len(values)))
    if row.get("rf") is None:
        raise SurrogateError("%s.rf: missing (the replication factor)" % field)
    try:
        rf = check_number("rf", row["rf"], minimum=1, integer=True)
        needed = replicas_needed(row.get("cl", "ONE"), rf)
    except SurrogateError as exc:
        raise SurrogateError("%s.%s" % (field, exc)) from None
    sets = check_number("%s.complete_sets" % field, row.get("complete_sets", rf), minimum=1, integer=True)
    if row.get("read_ratio") is None:
        raise SurrogateError("%s.read_ratio: missing (share of reads among reads and writes)" % field)
    ratio = float(check_number("%s.read_ratio" % field, row["read_ratio"], minimum=0))
    if ratio > 1:
        raise SurrogateError("%s.read_ratio: %r is above 1" % (field, ratio))
    total = math.fsum(values)
    return [total, total / len(values), min(values), max(values), nodes, rf, needed, sets, ratio]


def naive_sum(rows):
    """The strawman of seed 002: cluster ops/s = the sum of the per-node predictions (one float per row)."""
    single = isinstance(rows, dict)
    sums = []
    for index, row in enumerate(row_list(rows)):
        check_mapping("rows[%d]" % index, row)
        sums.append(math.fsum(_node_predictions(row, "rows[%d]" % index)))
    return sums[0] if single else sums


class ClusterModel:
    """Cluster throughput from per-node predictions and topology: a second exported random forest over
    CLUSTER_FEATURES (sum, mean, min, max of the node predictions, nodes, rf, replicas the CL waits for, complete
    sets, read ratio)."""

    naive_sum = staticmethod(naive_sum)

    def __init__(self, n_estimators=20, max_depth=5, seed=0, target="ops_per_s", log_target=False):
        self.n_estimators, self.max_depth, self.seed = _hyper(n_estimators, max_depth, seed)
        if not isinstance(target, str) or not target:
            raise SurrogateError("target: give the row key of the measured value, e.g. ops_per_s")
        self.target = target
        self.log_target = bool(log_target)
        self.forest = None
        self.estimator_ = None
        self.training_rows = 0

    @staticmethod
    def features(rows):
        return [cluster_features(row, "rows[%d]" % i) for i, row in enumerate(row_list(rows))]

    def fit(self, rows):
        rows = row_list(rows)
        if len(rows) < 2:
            raise SurrogateError("rows: at least 2 measured clusters are needed to fit, got %d" % len(rows))
        target = targets_of(rows, self.target, self.log_target)
        matrix = self.features(rows)
        self.forest, self.estimator_ = _Forest.fit(matrix, target, self.n_estimators, self.max_depth, self.seed)
        self.training_rows = len(rows)
        return self

    def predict(self, rows):
        """Predicted cluster ops/s of rows: a list of floats (a float for one row)."""
        if self.forest is None:
            raise SurrogateError("model: not fitted; call fit(rows) or load one with from_dict()")
        single = isinstance(rows, dict)
        rows = row_list(rows)
        if not rows:
            return []
        values = _output(numpy_library(), self.forest.predict(self.features(rows)), self.log_target)
        return values[0] if single else values

    def feature_importances(self):
        if self.forest is None:
            raise SurrogateError("model: not fitted; call fit(rows) or load one with from_dict()")
        return dict(zip(CLUSTER_FEATURES, self.forest.importances, strict=True))

    def to_dict(self):
        if self.forest is None:
            raise SurrogateError("model: not fitted; call fit(rows) or load one with from_dict()")
        return {
            "format": CLUSTER_FORMAT,
            "kind": "cluster_surrogate",
            "features": list(CLUSTER_FEATURES),
            "hyper_parameters": {"n_estimators": self.n_estimators, "max_depth": self.max_depth, "seed": self.seed},
            "target": self.target,
            "log_target": self.log_target,
            "training_rows": self.training_rows,
            "feature_importances": list(self.forest.importances),
            "trees": self.forest.to_list(),
        }

    @classmethod
    def from_dict(cls, data):
        check_mapping("model", data)
        if data.get("format") != CLUSTER_FORMAT:
            raise SurrogateError("model.format: %r is not %s" % (data.get("format"), CLUSTER_FORMAT))
        if list(data.get("features") or []) != list(CLUSTER_FEATURES):
            raise SurrogateError("model.features: %r differ from %s" % (data.get("features"), list(CLUSTER_FEATURES)))
        hyper = data.get("hyper_parameters") or {}
        model = cls(
            n_estimators=hyper.get("n_estimators", 20),
            max_depth=hyper.get("max_depth", 5),
            seed=hyper.get("seed", 0),
            target=data.get("target", "ops_per_s"),
            log_target=data.get("log_target", False),
        )
        model.forest = _forest_from(data, len(CLUSTER_FEATURES), "model")
        model.training_rows = int(data.get("training_rows") or 0)
        return model
