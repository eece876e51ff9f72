# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Throughput surrogates (seed 002): ops/s predicted from workload, configuration and hardware.

What this engine offers, as data in and data out:

- ``FeatureSpace``: the numeric encoding of (workload, configuration, hardware). The configuration part covers the
  catalog parameters chosen for tuning, each with a tuning range (given, else the paper's range, else the catalog's
  [min, max] when that is small enough). Numbers are in the catalog's canonical unit, booleans 0/1, enums one-hot.
- ``design()``: which configurations to measure. ``lhs`` decodes a Latin hypercube; ``d_optimal`` picks, from a
  Latin-hypercube candidate set without the infeasible combinations, the points that maximize log det(X'X) of a
  model with an intercept, linear and pairwise interaction terms (Fedorov exchange). ``feasible_by_catalog`` builds
  the feasibility rule from the catalog's memory budget (the paper's "sum of memory parameters <= RAM").
- ``Surrogate``: the single-node model, a random forest (20 trees of depth 5 by default, as in the paper), fitted
  with scikit-learn and then exported as plain arrays, so that a saved model is JSON and predicts with numpy only.
- ``ClusterModel``: the cluster model, a second forest over the per-node predictions and the topology (nodes,
  replication factor, replicas the consistency level waits for, complete sets, read ratio); ``naive_sum`` is the
  paper's strawman (cluster ops/s = sum of the nodes' ops/s).
- ``split``, ``metrics``, ``cross_validate``: held-out evaluation (by configuration when a group function is given).

numpy is needed to encode designs and to predict, scipy for the Latin hypercube, scikit-learn to fit; each is
imported when first needed, and a missing one raises SurrogateError naming it (``missing_libraries()`` lists them
for a module's fail_imports). Every random choice is drawn from the seed given, so the same inputs give the same
design, model and split.
"""

from __future__ import annotations

import json
import math
import random

from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog import Catalog, CatalogError
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import ModelError
from ansible_collections.tactician.nosql.plugins.module_utils.workload import ycsb

WORKLOAD_FEATURES = (
    "read",
    "update",
    "insert",
    "scan",
    "rmw",
    "read_ratio",
    "records",
    "record_bytes",
    "threads",
    "dist_uniform",
    "dist_zipfian",
    "dist_latest",
    "dist_hotspot",
)
"""Workload columns: operation shares (sum 1), server-side read ratio, data size, client threads, key distribution."""

HARDWARE_FEATURES = ("vcpu", "ram_gb", "disk_ssd", "heap_mb")
"""Hardware columns: the machine as numbers (the paper's "numerical representation" of the VM type)."""

WORKLOAD_KEYS = ("mix", "requestdistribution", "records", "record_bytes", "threads")
MIX_KEYS = {"read": "read", "update": "update", "insert": "insert", "scan": "scan", "readmodifywrite": "rmw"}
"""Client operations (ycsb.OPERATIONS) and their feature column; delete counts as an update (a single-row write)."""

_SPEC_DEFAULTS = ycsb.WorkloadSpec()
WORKLOAD_DEFAULTS = {
    "mix": {"read": _SPEC_DEFAULTS.readproportion, "update": _SPEC_DEFAULTS.updateproportion},
    "requestdistribution": _SPEC_DEFAULTS.requestdistribution,
    "records": _SPEC_DEFAULTS.recordcount,
    "record_bytes": _SPEC_DEFAULTS.fieldcount * _SPEC_DEFAULTS.fieldlength,
    "threads": _SPEC_DEFAULTS.threadcount,
}
"""What a workload key that is left out means: YCSB CoreWorkload's own defaults (95 % read, 5 % update, uniform
keys, 1000 records of 10 fields x 100 bytes, one client thread)."""

HARDWARE_DEFAULTS = {"disk_ssd": True}
"""vcpu and ram_gb are required; disk_ssd defaults to true; heap_mb defaults to the store's rule (Cassandra:
max(min(RAM/2, 1024 MiB), min(RAM/4, 8192 MiB)), as cassandra-env.sh sizes the heap; 0 for the other stores)."""

METHODS = ("d_optimal", "lhs")
TERMS = ("linear", "interactions", "quadratic")
RIDGE = 1e-6
CANDIDATES_PER_POINT = 20
MAX_IMPLICIT_SPAN = 4096
"""A catalog range wider than this (in the entry's unit) is not sampled without an explicit range."""

CONSISTENCY_LEVELS = ("ONE", "TWO", "THREE", "QUORUM", "LOCAL_ONE", "LOCAL_QUORUM", "ALL")
CLUSTER_FEATURES = ("sum", "mean", "min", "max", "nodes", "rf", "cl_replicas", "complete_sets", "read_ratio")
SPACE_FORMAT = "tactician.feature_space/v1"
SURROGATE_FORMAT = "tactician.surrogate/v1"
CLUSTER_FORMAT = "tactician.cluster_surrogate/v1"
_SWAP_GAIN = 1e-9
_MAX_PASSES = 100


class SurrogateError(ModelError, ValueError):
    """Bad input to a surrogate, a design or an evaluation. The message starts with the field at fault."""


# ------------------------------------------------------------------------------------------------ libraries
_LIBRARIES = {"numpy": "numpy", "scipy": "scipy", "sklearn": "scikit-learn"}


def _import(name):
    try:
        if name == "numpy":
            import numpy

            return numpy
        if name == "scipy":
            from scipy.stats import qmc

            return qmc
        from sklearn.ensemble import RandomForestRegressor

        return RandomForestRegressor
    except ImportError as exc:
        raise SurrogateError(
            "%s: the Python library %s is needed here and could not be imported (%s)" % (name, _LIBRARIES[name], exc)
        ) from exc


def _np():
    return _import("numpy")


def missing_libraries(fit=True, design=True):
    """[(library, error text)] of what is missing: numpy always, scikit-learn to fit, scipy to design."""
    missing = []
    wanted = ["numpy"] + (["sklearn"] if fit else []) + (["scipy"] if design else [])
    for name in wanted:
        try:
            _import(name)
        except SurrogateError as exc:
            missing.append((_LIBRARIES[name], str(exc)))
    return missing


# ------------------------------------------------------------------------------------------------ small checks
def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(field, value, minimum=None, integer=False, above=None):
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise SurrogateError("%s: %r is not a number" % (field, value)) from None
    if not _is_number(value) or not math.isfinite(float(value)):
        raise SurrogateError("%s: %r is not a finite number" % (field, value))
    if integer:
        if float(value) != int(value):
            raise SurrogateError("%s: %r is not a whole number" % (field, value))
        value = int(value)
    if minimum is not None and value < minimum:
        raise SurrogateError("%s: %r is below the minimum %s" % (field, value, minimum))
    if above is not None and not value > above:
        raise SurrogateError("%s: %r must be greater than %s" % (field, value, above))
    return value


def _choice(field, value, allowed):
    if value not in allowed:
        raise SurrogateError("%s: %r is not allowed; allowed: %s" % (field, value, ", ".join(map(str, allowed))))
    return value


def _clean(value, digits=12):
    return float("%.*g" % (digits, value))


def _mapping(field, value):
    if not isinstance(value, dict):
        raise SurrogateError("%s: expected a mapping, got %s" % (field, type(value).__name__))
    return value


# ------------------------------------------------------------------------------------------------ workload
def workload_values(workload):
    """Every WORKLOAD_FEATURES value of a workload, as {name: float}.

    workload: {"mix": {op: share}, "requestdistribution", "records", "record_bytes", "threads"} (missing keys take
    WORKLOAD_DEFAULTS; a "name" key is a label and is ignored), a ycsb.WorkloadSpec, or a core workload letter
    ("A" ... "F"). Shares need not sum to 1: they are divided by their sum. read_ratio is ycsb.read_ratio() (the
    share of reads a server sees, a read-modify-write counting one read and one write).
    """
    if isinstance(workload, str):
        try:
            workload = ycsb.workload(workload)
        except ycsb.WorkloadSpecError as exc:
            raise SurrogateError(str(exc)) from None
    if isinstance(workload, ycsb.WorkloadSpec):
        workload = {
            "mix": ycsb.op_mix(workload),
            "requestdistribution": workload.requestdistribution,
            "records": workload.recordcount,
            "record_bytes": workload.fieldcount * workload.fieldlength,
            "threads": workload.threadcount,
        }
    if workload is None:
        workload = {}
    _mapping("workload", workload)
    for key in workload:
        if key not in WORKLOAD_KEYS and key != "name":
            raise SurrogateError("workload.%s: unknown key; allowed: %s" % (key, ", ".join(WORKLOAD_KEYS)))
    merged = dict(WORKLOAD_DEFAULTS)
    merged.update({key: value for key, value in workload.items() if key != "name"})
    mix = _mapping("workload.mix", merged["mix"])
    shares = dict.fromkeys(("read", "update", "insert", "scan", "rmw"), 0.0)
    ops = {}
    for op, share in mix.items():
        key = "readmodifywrite" if op == "rmw" else op
        if key not in ycsb.OPERATIONS:
            raise SurrogateError(
                "workload.mix.%s: unknown operation; allowed: %s" % (op, ", ".join(ycsb.OPERATIONS + ("rmw",)))
            )
        value = float(_number("workload.mix.%s" % op, share, minimum=0))
        ops[key] = ops.get(key, 0.0) + value
        shares[MIX_KEYS.get(key, "update")] += value
    total = math.fsum(shares.values())
    if total <= 0:
        raise SurrogateError("workload.mix: has no operations; give at least one operation a share > 0")
    values = {name: share / total for name, share in shares.items()}
    values["read_ratio"] = ycsb.read_ratio(ops)
    values["records"] = float(_number("workload.records", merged["records"], minimum=0))
    values["record_bytes"] = float(_number("workload.record_bytes", merged["record_bytes"], minimum=0))
    values["threads"] = float(_number("workload.threads", merged["threads"], minimum=1))
    dist = str(merged["requestdistribution"]).strip().lower()
    _choice("workload.requestdistribution", dist, ycsb.REQUEST_DISTRIBUTIONS)
    for name in ycsb.REQUEST_DISTRIBUTIONS:
        values["dist_%s" % name] = 1.0 if name == dist else 0.0
    return values


# ------------------------------------------------------------------------------------------------ hardware
def default_heap_mb(store, ram_gb):
    """The heap a node gets when none is set: Cassandra's cassandra-env.sh rule, 0 for stores without a JVM."""
    if store != "cassandra":
        return 0.0
    ram_mb = float(ram_gb) * 1024.0
    return float(max(min(ram_mb / 2.0, 1024.0), min(ram_mb / 4.0, 8192.0)))


def hardware_values(hardware, store="cassandra"):
    """Every HARDWARE_FEATURES value of a machine, as {name: float}; other keys (name, price, ...) are ignored."""
    hardware = _mapping("hardware", {} if hardware is None else hardware)
    for key in ("vcpu", "ram_gb"):
        if hardware.get(key) is None:
            raise SurrogateError("hardware.%s: required (%s)" % (key, ", ".join(HARDWARE_FEATURES)))
    values = {
        "vcpu": float(_number("hardware.vcpu", hardware["vcpu"], above=0)),
        "ram_gb": float(_number("hardware.ram_gb", hardware["ram_gb"], above=0)),
    }
    ssd = hardware.get("disk_ssd", HARDWARE_DEFAULTS["disk_ssd"])
    if not isinstance(ssd, bool) and ssd not in (0, 1):
        raise SurrogateError("hardware.disk_ssd: %r is not a boolean (true/false)" % (ssd,))
    values["disk_ssd"] = 1.0 if ssd else 0.0
    heap = hardware.get("heap_mb")
    if heap is None:
        heap = default_heap_mb(store, values["ram_gb"])
    values["heap_mb"] = float(_number("hardware.heap_mb", heap, minimum=0))
    return values


def _memory(hardware, store):
    """(heap_mb, memory_mb) of a hardware mapping (None, None when there is none)."""
    if hardware is None:
        return None, None
    values = hardware_values(hardware, store)
    heap = values["heap_mb"] if store == "cassandra" else None
    return heap, values["ram_gb"] * 1024.0


# ------------------------------------------------------------------------------------------------ feature space
class FeatureSpace:
    """The numeric encoding of (workload, configuration, hardware) for one store's catalog.

    catalog: a Catalog (or its dict). parameters: the catalog names to tune (aliases accepted). ranges: optional
    {name: [low, high]} for numbers (written in any unit the catalog reads, "1GiB" included) or {name: [choice,
    ...]} for enums and booleans. Without one, a number takes the entry's paper_range, else the catalog's [min, max]
    when that span is at most MAX_IMPLICIT_SPAN units; wider ones must be given. defaults: optional {name: value}
    for the configuration a left-out value means, overriding the catalog default (needed for the entries whose
    default the catalog cannot compute, e.g. concurrent_compactors).

    encode() lays out the workload columns, then one column per tuned number or boolean (one per choice for an
    enum, named "name=choice"), then the hardware columns. An enum's columns are its tuning choices plus its
    catalog default, so the default configuration can always be encoded. Settings of catalog parameters that are
    not tuned are accepted in a configuration and ignored (the model does not see them).
    """

    def __init__(
        self,
        catalog,
        parameters,
        ranges=None,
        workload_features=WORKLOAD_FEATURES,
        hardware_features=HARDWARE_FEATURES,
        defaults=None,
    ):
        if isinstance(catalog, dict):
            try:
                catalog = Catalog(catalog)
            except CatalogError as exc:
                raise SurrogateError("catalog: %s" % exc) from None
        if not isinstance(catalog, Catalog):
            raise SurrogateError("catalog: expected a Catalog, got %s" % type(catalog).__name__)
        self.catalog = catalog
        self.store = catalog.store
        self.workload_features = self._subset("workload_features", workload_features, WORKLOAD_FEATURES)
        self.hardware_features = self._subset("hardware_features", hardware_features, HARDWARE_FEATURES)
        if isinstance(parameters, str) or not isinstance(parameters, (list, tuple)) or not parameters:
            raise SurrogateError("parameters: give a non-empty list of %s catalog names" % self.store)
        if ranges is not None and not isinstance(ranges, dict):
            raise SurrogateError("ranges: expected a mapping of parameter name to range")
        problems = []
        given_ranges = {}
        for key, value in (ranges or {}).items():
            try:
                given_ranges[catalog.canonical(key)] = value
            except CatalogError as exc:
                problems.append("ranges.%s" % exc)
        self.parameters = []
        self._entries = {}
        self._ranges = {}
        self._columns = {}
        for name in parameters:
            try:
                entry = catalog.entry(name)
            except CatalogError as exc:
                problems.append("parameters: %s" % exc)
                continue
            canonical = entry["name"]
            if canonical in self._entries:
                problems.append("parameters: %s is given twice" % canonical)
                continue
            given = given_ranges.pop(canonical, None)
            try:
                self._ranges[canonical] = self._range(entry, given)
            except (SurrogateError, CatalogError) as exc:
                problems.append(str(exc))
                continue
            self.parameters.append(canonical)
            self._entries[canonical] = entry
        for name in given_ranges:
            problems.append("ranges.%s: not one of the tuned parameters (%s)" % (name, ", ".join(parameters)))
        if problems:
            raise SurrogateError("; ".join(problems))
        self._defaults = {}
        for name, value in (defaults or {}).items():
            canonical = self._tuned_name("defaults", name)
            self._defaults[canonical] = self._value(canonical, value, "defaults")
        for name in self.parameters:
            entry = self._entries[name]
            if entry["type"] == "enum":
                allowed = list(self._ranges[name])
                default = self._defaults.get(name, entry.get("default"))
                if default in entry["choices"] and default not in allowed:
                    allowed.append(default)
                self._columns[name] = [choice for choice in entry["choices"] if choice in allowed]
        names = self.feature_names()
        clash = sorted({name for name in names if names.count(name) > 1})
        if clash:
            raise SurrogateError("parameters: %s clash with workload or hardware feature names" % ", ".join(clash))

    @staticmethod
    def _subset(field, given, allowed):
        given = tuple(given or ())
        for name in given:
            _choice(field, name, allowed)
        if len(set(given)) != len(given):
            raise SurrogateError("%s: a feature is listed twice" % field)
        return given

    # ---------------------------------------------------------------------------- ranges
    def _range(self, entry, given):
        name, kind = entry["name"], entry["type"]
        field = "ranges.%s" % name
        if kind == "string":
            raise SurrogateError("parameters: %s is free text (type string) and cannot be tuned" % name)
        if kind == "bool":
            values = [False, True] if given is None else given
            if not isinstance(values, (list, tuple)) or not values:
                raise SurrogateError("%s: give a list of booleans, e.g. [false, true]" % field)
            try:
                normalized = [self.catalog.normalize(name, value) for value in values]
            except CatalogError as exc:
                raise SurrogateError("ranges.%s" % exc) from None
            return [value for value in (False, True) if value in normalized]
        if kind == "enum":
            values = entry["choices"] if given is None else given
            if isinstance(values, str) or not isinstance(values, (list, tuple)) or not values:
                raise SurrogateError("%s: give a list of choices; allowed: %s" % (field, ", ".join(entry["choices"])))
            normalized = []
            for value in values:
                try:
                    normalized.append(self.catalog.normalize(name, value))
                except CatalogError as exc:
                    raise SurrogateError("ranges.%s" % exc) from None
            return [choice for choice in entry["choices"] if choice in normalized]
        low_limit, high_limit = entry["min"], entry["max"]
        if given is None:
            given = entry.get("paper_range")
            if given is None:
                if (
                    not _is_number(low_limit)
                    or not _is_number(high_limit)
                    or not math.isfinite(high_limit - low_limit)
                    or high_limit - low_limit > MAX_IMPLICIT_SPAN
                ):
                    raise SurrogateError(
                        "%s: the catalog range [%s, %s] %s is too wide to sample (more than %d units); "
                        "give ranges['%s'] = [low, high]"
                        % (field, low_limit, high_limit, entry["unit"], MAX_IMPLICIT_SPAN, name)
                    )
                given = [low_limit, high_limit]
        if not isinstance(given, (list, tuple)) or len(given) != 2:
            raise SurrogateError("%s: give [low, high], got %r" % (field, given))
        try:
            low, high = (self.catalog.normalize(name, value) for value in given)
        except CatalogError as exc:
            raise SurrogateError("ranges.%s" % exc) from None
        if low >= high:
            raise SurrogateError("%s: low %s must be below high %s" % (field, low, high))
        if low < low_limit or high > high_limit:
            raise SurrogateError(
                "%s: [%s, %s] is outside the catalog range [%s, %s] %s"
                % (field, low, high, low_limit, high_limit, entry["unit"])
            )
        return [low, high]

    def range(self, name):
        """The tuning range of a parameter: [low, high] for a number, the list of values for a bool or enum."""
        return list(self._ranges[self._tuned_name("parameters", name)])

    def _tuned_name(self, field, name):
        try:
            canonical = self.catalog.canonical(name)
        except CatalogError as exc:
            raise SurrogateError("%s: %s" % (field, exc)) from None
        if canonical not in self._entries:
            raise SurrogateError(
                "%s.%s: not one of the tuned parameters (%s)" % (field, name, ", ".join(self.parameters))
            )
        return canonical

    def kind(self, name):
        """The catalog type of a tuned parameter (int, float, size, duration, rate, bool, enum)."""
        return self._entries[self._tuned_name("parameters", name)]["type"]

    @property
    def dimension(self):
        """Dimension of the unit cube decode_unit() reads: one per tuned parameter (an enum is one)."""
        return len(self.parameters)

    # ---------------------------------------------------------------------------- values
    def _value(self, name, raw, field="config"):
        entry = self._entries[name]
        try:
            value = self.catalog.normalize(name, raw)
        except CatalogError as exc:
            raise SurrogateError("%s.%s" % (field, exc)) from None
        if entry["type"] in ("int", "float", "size", "duration", "rate"):
            if value < entry["min"] or value > entry["max"]:
                raise SurrogateError(
                    "%s.%s: %s is out of the catalog range [%s, %s] %s"
                    % (field, name, value, entry["min"], entry["max"], entry["unit"])
                )
        if entry["type"] == "enum" and name in self._columns and value not in self._columns[name]:
            raise SurrogateError(
                "%s.%s: %r is not allowed; allowed: %s" % (field, name, raw, ", ".join(self._columns[name]))
            )
        return value

    def default_value(self, name, hardware=None, heap_mb=None, memory_mb=None):
        """The value a left-out parameter takes: defaults[name], else the catalog default for this hardware (heap_mb
        and memory_mb, when given, take precedence over the hardware's for defaults computed from them)."""
        name = self._tuned_name("parameters", name)
        if name in self._defaults:
            return self._defaults[name]
        entry = self._entries[name]
        hw_heap, hw_memory = _memory(hardware, self.store)
        heap_mb = hw_heap if heap_mb is None else heap_mb
        memory_mb = hw_memory if memory_mb is None else memory_mb
        value = self.catalog.defaults(heap_mb=heap_mb, memory_mb=memory_mb).get(name)
        if value is None:
            note = entry.get("default_note") or "the catalog has no default"
            needs = ""
            if entry.get("auto_default") and hardware is None:
                needs = " (give hardware so it can be computed)"
            raise SurrogateError(
                "config.%s: missing and its default is not a fixed value (%s)%s; give it in the configuration or in "
                "FeatureSpace(defaults=...)" % (name, note, needs)
            )
        return self.catalog.normalize(name, value)

    def default_config(self, hardware=None, heap_mb=None, memory_mb=None):
        """The default configuration of the tuned parameters: {name: value}."""
        return {name: self.default_value(name, hardware, heap_mb, memory_mb) for name in self.parameters}

    def complete(self, config, hardware=None, heap_mb=None, memory_mb=None):
        """{name: canonical value} of every tuned parameter: config's values, defaults for the rest."""
        config = _mapping("config", {} if config is None else config)
        values = {}
        given_as = {}
        for raw_name, raw in config.items():
            try:
                canonical = self.catalog.canonical(raw_name)
            except CatalogError as exc:
                raise SurrogateError("config.%s" % exc) from None
            if canonical in given_as:
                raise SurrogateError(
                    "config.%s: given twice (as %s and %s)" % (canonical, given_as[canonical], raw_name)
                )
            given_as[canonical] = raw_name
            if canonical in self._entries:
                values[canonical] = self._value(canonical, raw)
        for name in self.parameters:
            if name not in values:
                values[name] = self.default_value(name, hardware, heap_mb, memory_mb)
        return {name: values[name] for name in self.parameters}

    # ---------------------------------------------------------------------------- encoding
    def feature_names(self):
        """Column names of encode(): workload features, configuration columns, hardware features."""
        names = list(self.workload_features)
        for name in self.parameters:
            if self._entries[name]["type"] == "enum":
                names.extend("%s=%s" % (name, choice) for choice in self._columns[name])
            else:
                names.append(name)
        names.extend(self.hardware_features)
        return names

    def parameter_of(self, feature):
        """The tuned parameter a configuration column belongs to (None for workload and hardware columns)."""
        head = feature.split("=", 1)[0]
        return head if head in self._entries else None

    def workload_vector(self, workload):
        values = workload_values(workload)
        return [values[name] for name in self.workload_features]

    def hardware_vector(self, hardware):
        if not self.hardware_features and hardware is None:
            return []
        values = hardware_values(hardware, self.store)
        return [values[name] for name in self.hardware_features]

    def config_vector(self, config, hardware=None):
        values = self.complete(config, hardware)
        vector = []
        for name in self.parameters:
            value = values[name]
            kind = self._entries[name]["type"]
            if kind == "enum":
                vector.extend(1.0 if value == choice else 0.0 for choice in self._columns[name])
            elif kind == "bool":
                vector.append(1.0 if value else 0.0)
            else:
                vector.append(float(value))
        return vector

    def encode(self, workload, config, hardware=None):
        """The feature vector (list of floats, feature_names() order) of one (workload, config, hardware)."""
        return self.workload_vector(workload) + self.config_vector(config, hardware) + self.hardware_vector(hardware)

    def encode_rows(self, rows):
        """Feature matrix (list of lists) of rows [{"workload", "config", "hardware"}]; errors name rows[i]."""
        matrix = []
        for index, row in enumerate(_row_list(rows)):
            try:
                _mapping("row", row)
                matrix.append(self.encode(row.get("workload"), row.get("config"), row.get("hardware")))
            except SurrogateError as exc:
                raise SurrogateError("rows[%d].%s" % (index, exc)) from None
        return matrix

    # ---------------------------------------------------------------------------- unit cube
    def decode_unit(self, u):
        """The configuration at a point of [0, 1]^dimension: numbers scaled into their range (ints and whole-unit
        sizes, durations and rates rounded; floats to 4 significant digits), booleans and enums by equal buckets."""
        try:
            point = [float(x) for x in u]
        except (TypeError, ValueError):
            raise SurrogateError("u: expected %d numbers in [0, 1]" % self.dimension) from None
        if len(point) != self.dimension:
            raise SurrogateError(
                "u: expected %d values (one per tuned parameter), got %d" % (self.dimension, len(point))
            )
        config = {}
        for name, x in zip(self.parameters, point, strict=True):
            if not math.isfinite(x):
                raise SurrogateError("u: %r is not a finite number" % x)
            x = min(1.0, max(0.0, x))
            entry = self._entries[name]
            allowed = self._ranges[name]
            if entry["type"] in ("enum", "bool"):
                config[name] = allowed[min(int(x * len(allowed)), len(allowed) - 1)]
                continue
            low, high = allowed
            value = low + x * (high - low)
            if entry["type"] == "float" or (entry["type"] != "int" and entry.get("integer", True) is False):
                value = min(high, max(low, _clean(value, 4)))
            else:
                value = int(min(high, max(low, math.floor(value + 0.5))))
            config[name] = value
        return config

    def coded(self, config, hardware=None):
        """Linear model columns of a configuration, coded to [-1, 1] over the tuning ranges: numbers scaled,
        booleans -1/+1, an enum of k tuning choices as k - 1 effect-coded columns. Returns (values, names)."""
        values = self.complete(config, hardware)
        row = []
        for name in self.parameters:
            entry, value, allowed = self._entries[name], values[name], self._ranges[name]
            if entry["type"] == "bool":
                if len(allowed) == 2:
                    row.append(1.0 if value else -1.0)
            elif entry["type"] == "enum":
                for choice in allowed[:-1]:
                    if value == allowed[-1]:
                        row.append(-1.0)
                    else:
                        row.append(1.0 if value == choice else 0.0)
            else:
                low, high = allowed
                row.append(2.0 * (float(value) - low) / (high - low) - 1.0)
        return row, self.coded_names()

    def coded_names(self):
        """Names of the coded() columns (a fixed boolean or a single enum choice has none)."""
        names = []
        for name in self.parameters:
            kind, allowed = self._entries[name]["type"], self._ranges[name]
            if kind == "bool":
                names.extend([name] if len(allowed) == 2 else [])
            elif kind == "enum":
                names.extend("%s=%s" % (name, choice) for choice in allowed[:-1])
            else:
                names.append(name)
        return names

    # ---------------------------------------------------------------------------- export
    def _catalog_subset(self):
        data = self.catalog.to_dict()
        wanted = set(self.parameters)
        by_name = {entry["name"]: entry for entry in data["parameters"]}
        todo = list(wanted)
        while todo:
            entry = by_name[todo.pop()]
            for other in (entry.get("live") or {}).get("requires") or []:
                if other not in wanted:
                    wanted.add(other)
                    todo.append(other)
        subset = {
            "store": data["store"],
            "version": data["version"],
            "parameters": [entry for entry in data["parameters"] if entry["name"] in wanted],
        }
        if data.get("budget") is not None:
            subset["budget"] = data["budget"]
        rules = [
            rule for rule in data.get("constraints") or [] if rule["smaller"] in wanted and rule["larger"] in wanted
        ]
        if rules:
            subset["constraints"] = rules
        return subset

    def to_dict(self):
        """Plain data (JSON) that from_dict() turns back into the same space, catalog entries included."""
        return {
            "format": SPACE_FORMAT,
            "store": self.store,
            "store_version": self.catalog.version,
            "parameters": list(self.parameters),
            "ranges": {name: list(self._ranges[name]) for name in self.parameters},
            "defaults": dict(self._defaults),
            "workload_features": list(self.workload_features),
            "hardware_features": list(self.hardware_features),
            "feature_names": self.feature_names(),
            "catalog": self._catalog_subset(),
        }

    @classmethod
    def from_dict(cls, data, catalog=None):
        """The space of to_dict(); catalog (optional) replaces the saved catalog entries."""
        _mapping("space", data)
        if data.get("format") != SPACE_FORMAT:
            raise SurrogateError("space.format: %r is not %s" % (data.get("format"), SPACE_FORMAT))
        for key in ("parameters", "ranges", "workload_features", "hardware_features", "feature_names", "catalog"):
            if key not in data:
                raise SurrogateError("space.%s: missing" % key)
        space = cls(
            catalog if catalog is not None else data["catalog"],
            data["parameters"],
            ranges=data["ranges"],
            workload_features=data["workload_features"],
            hardware_features=data["hardware_features"],
            defaults=data.get("defaults") or None,
        )
        if space.feature_names() != list(data["feature_names"]):
            raise SurrogateError(
                "space.feature_names: the saved columns %s differ from the rebuilt ones %s"
                % (data["feature_names"], space.feature_names())
            )
        return space


def _row_list(rows):
    if isinstance(rows, dict):
        return [rows]
    if not isinstance(rows, (list, tuple)):
        raise SurrogateError("rows: expected a list of mappings, got %s" % type(rows).__name__)
    return list(rows)


# ------------------------------------------------------------------------------------------------ design
def feasible_by_catalog(catalog, memory_mb=None, heap_mb=None):
    """feasible(config) -> (bool, reason): the catalog's validate() with the memory budget of this machine
    (heap-drawing sizes within the catalog's share of heap_mb, memory sizes plus the heap within memory_mb)."""
    if isinstance(catalog, FeatureSpace):
        catalog = catalog.catalog
    if not isinstance(catalog, Catalog):
        raise SurrogateError("catalog: expected a Catalog, got %s" % type(catalog).__name__)
    if memory_mb is not None:
        memory_mb = _number("memory_mb", memory_mb, above=0)
    if heap_mb is not None:
        heap_mb = _number("heap_mb", heap_mb, above=0)

    def feasible(config):
        try:
            catalog.validate(config, memory_mb=memory_mb, heap_mb=heap_mb)
        except CatalogError as exc:
            return False, str(exc)
        return True, ""

    feasible.heap_mb = heap_mb
    feasible.memory_mb = memory_mb
    feasible.rule = "catalog %s %s budget (memory_mb=%s, heap_mb=%s)" % (
        catalog.store,
        catalog.version,
        memory_mb,
        heap_mb,
    )
    return feasible


def _check_feasible(feasible, config):
    answer = feasible(dict(config))
    if isinstance(answer, tuple):
        ok = bool(answer[0])
        reason = str(answer[1]) if len(answer) > 1 and answer[1] else ""
    else:
        ok, reason = bool(answer), ""
    return ok, reason or ("" if ok else "rejected by the feasibility rule")


def model_matrix(space, configs, terms="interactions", hardware=None):
    """(F, names): the design model matrix of configurations: an intercept, the coded linear columns, and with
    terms "interactions" the products of columns of different parameters, with "quadratic" also the squares of
    the numeric columns."""
    np = _np()
    _choice("terms", terms, TERMS)
    names = space.coded_names()
    rows = [space.coded(config, hardware)[0] for config in configs]
    linear = np.array(rows, dtype=float).reshape(len(rows), len(names))
    owners = [name.split("=", 1)[0] for name in names]
    columns = [np.ones(len(rows))]
    labels = ["(intercept)"]
    for i, name in enumerate(names):
        columns.append(linear[:, i])
        labels.append(name)
    if terms != "linear":
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                if owners[i] != owners[j]:
                    columns.append(linear[:, i] * linear[:, j])
                    labels.append("%s*%s" % (names[i], names[j]))
    if terms == "quadratic":
        for i, name in enumerate(names):
            if space.kind(owners[i]) not in ("bool", "enum"):
                columns.append(linear[:, i] ** 2)
                labels.append("%s^2" % name)
    return np.column_stack(columns), labels


def _log_det(np, matrix, ridge):
    gram = matrix.T @ matrix
    if ridge:
        gram = gram + ridge * np.eye(gram.shape[0])
    sign, value = np.linalg.slogdet(gram)
    return float(value) if sign > 0 else float("-inf")


def log_det(space, configs, terms="interactions", hardware=None):
    """The D-criterion of a set of configurations: (log det, ridge). log det(X'X) when the points are at least as
    many as the model terms and X'X is regular, else log det(X'X + 1e-6 I) with ridge 1e-6."""
    np = _np()
    matrix, _names = model_matrix(space, configs, terms, hardware)
    if matrix.shape[0] >= matrix.shape[1]:
        value = _log_det(np, matrix, 0.0)
        if math.isfinite(value):
            return value, 0.0
    return _log_det(np, matrix, RIDGE), RIDGE


def _lhs(space, count, seed):
    qmc = _import("scipy")
    try:
        sampler = qmc.LatinHypercube(d=space.dimension, rng=seed)
    except TypeError:  # scipy before 1.15 names it seed
        sampler = qmc.LatinHypercube(d=space.dimension, seed=seed)
    return sampler.random(n=count)


def _config_key(config):
    return json.dumps(config, sort_keys=True)


def design(
    space,
    n,
    method="d_optimal",
    seed=0,
    feasible=None,
    candidates=None,
    include_default=True,
    terms="interactions",
    hardware=None,
):
    """n configurations to measure, as {"points", "infeasible", "method", "seed", "criterion", ...}.

    method "lhs": a Latin hypercube of n points (scipy.stats.qmc.LatinHypercube(d, seed)) decoded; points that
    `feasible` rejects are dropped (so fewer than n may remain, counted in "infeasible" and said in "notes").
    method "d_optimal": from a candidate set (candidates: a list of configurations, or a count of Latin-hypercube
    points, by default CANDIDATES_PER_POINT * n), without the infeasible and duplicate ones, the n points that
    maximize log det(X'X) of model_matrix(terms) (intercept, linear and pairwise terms coded to [-1, 1]): a greedy
    start, then Fedorov exchange passes (swap a design point for the candidate that raises the determinant most)
    until a pass improves nothing. When n is below the number of model terms, the criterion is log det(X'X +
    1e-6 I) ("ridge" in the result, and a note). feasible(config) -> (bool, reason), e.g. feasible_by_catalog().
    include_default: the default configuration is the first point and counts in n; it is left out, with a note,
    when `feasible` rejects it. Defaults computed from the heap or the RAM use `hardware`, else the heap_mb and
    memory_mb of a feasible_by_catalog() rule. Deterministic given the seed.

    The result: points (config dicts of the tuned parameters, canonical values), infeasible (candidates
    rejected), infeasible_reasons ({label: {"count", "example"}}, label = the reason's text before ": ", e.g.
    "heap budget"), candidates (how many were drawn or given), criterion (log det of the chosen points, None if
    -inf), ridge (0 or 1e-6), model_terms, default_included, notes, and feasibility_rule when the rule says.
    With terms "linear" or "interactions" the criterion favours the ends of each numeric range; "quadratic" adds
    squared terms, which also asks for points inside the ranges.
    """
    np = _np()
    n = _number("n", n, minimum=1, integer=True)
    _choice("method", method, METHODS)
    _choice("terms", terms, TERMS)
    seed = _number("seed", seed, minimum=0, integer=True)
    if not isinstance(space, FeatureSpace):
        raise SurrogateError("space: expected a FeatureSpace, got %s" % type(space).__name__)
    notes = []
    reasons = {}
    fixed = []
    memory = {}
    if hardware is None and feasible is not None:
        memory = {"heap_mb": getattr(feasible, "heap_mb", None), "memory_mb": getattr(feasible, "memory_mb", None)}
    if include_default:
        default = space.default_config(hardware, **memory)
        ok, reason = (True, "") if feasible is None else _check_feasible(feasible, default)
        if ok:
            fixed.append(default)
        else:
            notes.append("the default configuration is infeasible and is not in the design: %s" % reason)
    wanted = n - len(fixed)
    result = {"method": method, "seed": seed, "terms": terms}

    def screen(configs):
        kept, seen, infeasible = [], {_config_key(config) for config in fixed}, 0
        for config in configs:
            key = _config_key(config)
            if key in seen:
                continue
            seen.add(key)
            if feasible is not None:
                ok, reason = _check_feasible(feasible, config)
                if not ok:
                    infeasible += 1
                    _tally(reasons, reason)
                    continue
            kept.append(config)
        return kept, infeasible

    if method == "lhs":
        points = [space.decode_unit(u) for u in _lhs(space, wanted, seed)] if wanted else []
        kept, infeasible = [], 0
        for config in points:
            ok, reason = (True, "") if feasible is None else _check_feasible(feasible, config)
            if ok:
                kept.append(config)
            else:
                infeasible += 1
                _tally(reasons, reason)
        if infeasible:
            notes.append("%d of %d Latin-hypercube points are infeasible and were dropped" % (infeasible, wanted))
        chosen = fixed + kept
        result["candidates"] = wanted
    else:
        if candidates is None or isinstance(candidates, int) and not isinstance(candidates, bool):
            count = CANDIDATES_PER_POINT * n if candidates is None else _number("candidates", candidates, minimum=1)
            pool = [space.decode_unit(u) for u in _lhs(space, count, seed)]
        elif isinstance(candidates, (list, tuple)):
            pool = []
            for index, config in enumerate(candidates):
                try:
                    pool.append(space.complete(config, hardware, **memory))
                except SurrogateError as exc:
                    raise SurrogateError("candidates[%d].%s" % (index, exc)) from None
        else:
            raise SurrogateError("candidates: expected a list of configurations or a number of points")
        kept, infeasible = screen(pool)
        result["candidates"] = len(pool)
        if len(kept) < wanted:
            raise SurrogateError(
                "n: %d points asked but only %d distinct feasible candidates (of %d, %d infeasible); lower n, give "
                "more candidates or widen the ranges" % (n, len(kept), len(pool), infeasible)
            )
        chosen = fixed + [kept[i] for i in _fedorov(np, space, fixed, kept, wanted, terms, hardware)]
    value, ridge = log_det(space, chosen, terms, hardware) if chosen else (float("-inf"), 0.0)
    p = model_matrix(space, [], terms)[0].shape[1]
    if ridge:
        notes.append(
            "%d points for %d model terms: the criterion is log det(X'X + %g I) (ridge), X'X alone is singular"
            % (len(chosen), p, RIDGE)
        )
    result.update(
        points=chosen,
        infeasible=infeasible,
        infeasible_reasons=reasons,
        criterion=value if math.isfinite(value) else None,
        ridge=ridge,
        model_terms=p,
        default_included=bool(fixed),
        notes=notes,
    )
    if feasible is not None and getattr(feasible, "rule", None):
        result["feasibility_rule"] = feasible.rule
    return result


def _tally(reasons, reason):
    """Count a rejection under its label (the text before the first ": "), keeping the first full reason."""
    for part in reason.split("; "):
        label = part.split(": ", 1)[0] if ": " in part else part
        found = reasons.setdefault(label, {"count": 0, "example": part})
        found["count"] += 1


def _fedorov(np, space, fixed, pool, wanted, terms, hardware):
    """Indexes into pool of the `wanted` points that, with the fixed rows, maximize log det(X'X + ridge I)."""
    if wanted == 0:
        return []
    cand, _names = model_matrix(space, pool, terms, hardware)
    p = cand.shape[1]
    base = np.eye(p) * RIDGE
    if fixed:
        rows, _names = model_matrix(space, fixed, terms, hardware)
        base = base + rows.T @ rows
    # Greedy start: add the candidate with the largest prediction variance f'M^-1 f, one at a time.
    inverse = np.linalg.inv(base)
    var = ((cand @ inverse) * cand).sum(axis=1)
    chosen = []
    taken = np.zeros(len(pool), dtype=bool)
    for _i in range(wanted):
        score = np.where(taken, -np.inf, var)
        j = int(np.argmax(score))
        chosen.append(j)
        taken[j] = True
        u = inverse @ cand[j]
        c = 1.0 + cand[j] @ u
        inverse -= np.outer(u, u) / c
        var -= (cand @ u) ** 2 / c
    best = _log_det_rows(np, base, cand[chosen])
    for _pass in range(_MAX_PASSES):
        moment = base + cand[chosen].T @ cand[chosen]
        inverse = np.linalg.inv(moment)
        var = ((cand @ inverse) * cand).sum(axis=1)
        before = list(chosen)
        swapped = False
        for position in range(len(chosen)):
            i = chosen[position]
            u_i = inverse @ cand[i]
            d_i = float(cand[i] @ u_i)
            cross = cand @ u_i
            ratio = (1.0 - d_i) * (1.0 + var) + cross**2
            ratio = np.where(taken, -np.inf, ratio)
            j = int(np.argmax(ratio))
            if not ratio[j] > 1.0 + _SWAP_GAIN or 1.0 - d_i <= 0:
                continue
            # Remove point i, then add candidate j (Sherman-Morrison, both on the inverse and on the variances).
            inverse += np.outer(u_i, u_i) / (1.0 - d_i)
            var += cross**2 / (1.0 - d_i)
            u_j = inverse @ cand[j]
            c = 1.0 + cand[j] @ u_j
            inverse -= np.outer(u_j, u_j) / c
            var -= (cand @ u_j) ** 2 / c
            taken[i], taken[j] = False, True
            chosen[position] = j
            swapped = True
        if not swapped:
            break
        value = _log_det_rows(np, base, cand[chosen])
        if value <= best:
            # Rounding in the updates: keep the last design that really improved, and stop.
            for index in chosen:
                taken[index] = False
            chosen = before
            for index in chosen:
                taken[index] = True
            break
        best = value
    return chosen


def _log_det_rows(np, base, rows):
    sign, value = np.linalg.slogdet(base + rows.T @ rows)
    return float(value) if sign > 0 else float("-inf")


# ------------------------------------------------------------------------------------------------ forests
class _Forest:
    """Regression trees as arrays (sklearn's tree_ layout) predicting with numpy only."""

    KEYS = ("children_left", "children_right", "feature", "threshold", "value")

    def __init__(self, trees, n_features):
        np = _np()
        self.n_features = n_features
        self.trees = []
        for index, tree in enumerate(trees):
            field = "trees[%d]" % index
            _mapping(field, tree)
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
        np = _np()
        regressor_class = _import("sklearn")
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
        np = _np()
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
    n_estimators = _number("n_estimators", n_estimators, minimum=1, integer=True)
    if max_depth is not None:
        max_depth = _number("max_depth", max_depth, minimum=1, integer=True)
    seed = _number("seed", seed, minimum=0, integer=True)
    return n_estimators, max_depth, seed


def _targets(rows, target, log_target):
    values = []
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            raise SurrogateError("rows[%d]: expected a mapping, got %s" % (index, type(row).__name__))
        if row.get(target) is None:
            raise SurrogateError("rows[%d].%s: missing (the measured throughput to learn)" % (index, target))
        value = float(_number("rows[%d].%s" % (index, target), row[target], minimum=0))
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
        rows = _row_list(rows)
        if len(rows) < 2:
            raise SurrogateError("rows: at least 2 measured rows are needed to fit, got %d" % len(rows))
        target = _targets(rows, self.target, self.log_target)
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
        np = _np()
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
        _mapping("model", data)
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
    rf = _number("rf", rf, minimum=1, integer=True)
    if _is_number(cl):
        needed = _number("cl", cl, minimum=1, integer=True)
    else:
        name = _choice("cl", str(cl).strip().upper(), CONSISTENCY_LEVELS)
        needed = {"ONE": 1, "LOCAL_ONE": 1, "TWO": 2, "THREE": 3, "QUORUM": rf // 2 + 1, "LOCAL_QUORUM": rf // 2 + 1}
        needed = needed.get(name, rf)
    if needed > rf:
        raise SurrogateError("cl: %r waits for %d replicas but rf is %d" % (cl, needed, rf))
    return needed


def _node_predictions(row, field):
    values = row.get("node_predictions")
    if not isinstance(values, (list, tuple)) or not values:
        raise SurrogateError("%s.node_predictions: give the list of per-node predicted ops/s" % field)
    return [float(_number("%s.node_predictions[%d]" % (field, i), v, minimum=0)) for i, v in enumerate(values)]


def cluster_features(row, field="row"):
    """CLUSTER_FEATURES of one cluster row {"node_predictions", "nodes", "rf", "cl", "complete_sets",
    "read_ratio"}: nodes defaults to the number of predictions, cl to ONE, complete_sets to rf (the paper observes
    count(complete sets) close to RF)."""
    _mapping(field, row)
    values = _node_predictions(row, field)
    nodes = row.get("nodes", len(values))
    nodes = _number("%s.nodes" % field, nodes, minimum=1, integer=True)
    if nodes != len(values):
        raise SurrogateError("%s.nodes: %d but node_predictions has %d values" % (field, nodes, len(values)))
    if row.get("rf") is None:
        raise SurrogateError("%s.rf: missing (the replication factor)" % field)
    try:
        rf = _number("rf", row["rf"], minimum=1, integer=True)
        needed = replicas_needed(row.get("cl", "ONE"), rf)
    except SurrogateError as exc:
        raise SurrogateError("%s.%s" % (field, exc)) from None
    sets = _number("%s.complete_sets" % field, row.get("complete_sets", rf), minimum=1, integer=True)
    if row.get("read_ratio") is None:
        raise SurrogateError("%s.read_ratio: missing (share of reads among reads and writes)" % field)
    ratio = float(_number("%s.read_ratio" % field, row["read_ratio"], minimum=0))
    if ratio > 1:
        raise SurrogateError("%s.read_ratio: %r is above 1" % (field, ratio))
    total = math.fsum(values)
    return [total, total / len(values), min(values), max(values), nodes, rf, needed, sets, ratio]


def naive_sum(rows):
    """The strawman of seed 002: cluster ops/s = the sum of the per-node predictions (one float per row)."""
    single = isinstance(rows, dict)
    sums = []
    for index, row in enumerate(_row_list(rows)):
        _mapping("rows[%d]" % index, row)
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
        return [cluster_features(row, "rows[%d]" % i) for i, row in enumerate(_row_list(rows))]

    def fit(self, rows):
        rows = _row_list(rows)
        if len(rows) < 2:
            raise SurrogateError("rows: at least 2 measured clusters are needed to fit, got %d" % len(rows))
        target = _targets(rows, self.target, self.log_target)
        matrix = self.features(rows)
        self.forest, self.estimator_ = _Forest.fit(matrix, target, self.n_estimators, self.max_depth, self.seed)
        self.training_rows = len(rows)
        return self

    def predict(self, rows):
        """Predicted cluster ops/s of rows: a list of floats (a float for one row)."""
        if self.forest is None:
            raise SurrogateError("model: not fitted; call fit(rows) or load one with from_dict()")
        single = isinstance(rows, dict)
        rows = _row_list(rows)
        if not rows:
            return []
        values = _output(_np(), self.forest.predict(self.features(rows)), self.log_target)
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
        _mapping("model", data)
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
    rows = _row_list(rows)
    test_share = float(_number("test_share", test_share, above=0))
    if test_share >= 1:
        raise SurrogateError("test_share: %r must be below 1" % test_share)
    seed = _number("seed", seed, minimum=0, integer=True)
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
    truth = [float(_number("y_true[%d]" % i, v)) for i, v in enumerate(y_true)]
    guess = [float(_number("y_pred[%d]" % i, v)) for i, v in enumerate(y_pred)]
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
    rows = _row_list(rows)
    k = _number("k", k, minimum=2, integer=True)
    seed = _number("seed", seed, minimum=0, integer=True)
    if model is None:
        model = "cluster" if rows and isinstance(rows[0], dict) and "node_predictions" in rows[0] else "surrogate"
    _choice("model", model, ("surrogate", "cluster"))
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
        truth = _targets(test, target, False)
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
