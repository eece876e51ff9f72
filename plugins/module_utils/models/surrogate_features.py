# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The surrogate's input (seed 002): workload, configuration and hardware as numbers, and the error of every
surrogate part.

- ``workload_values`` and ``hardware_values``: a workload (YCSB mix, key distribution, data size, threads) and a
  machine (vCPUs, RAM, disk, heap) as feature columns, with YCSB CoreWorkload's defaults for what is left out.
- ``FeatureSpace``: the numeric encoding of (workload, configuration, hardware). The configuration part covers the
  catalog parameters chosen for tuning, each with a tuning range (given, else the paper's range, else the catalog's
  [min, max] when that is small enough). Numbers are in the catalog's canonical unit, booleans 0/1, enums one-hot.

numpy is needed to encode; a missing library raises SurrogateError naming it (``missing_libraries()`` lists them
for a module's fail_imports).
"""

from __future__ import annotations

import math

from ansible_collections.tactician.nosql.plugins.module_utils.core import imports
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog import Catalog
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog_files import CatalogError
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


MAX_IMPLICIT_SPAN = 4096
"""A catalog range wider than this (in the entry's unit) is not sampled without an explicit range."""


SPACE_FORMAT = "tactician.feature_space/v1"


class SurrogateError(ModelError, ValueError):
    """Bad input to a surrogate, a design or an evaluation. The message starts with the field at fault."""


# ------------------------------------------------------------------------------------------------ libraries
_LIBRARIES = {"numpy": "numpy", "scipy": "scipy.stats.qmc", "sklearn": "sklearn.ensemble"}
"""What each part needs: numpy to encode and predict, scipy's Latin hypercube to design, scikit-learn to fit."""


def import_library(name):
    """numpy, scipy's qmc module, or scikit-learn's RandomForestRegressor; SurrogateError naming it when missing."""
    module = imports.require(_LIBRARIES[name], SurrogateError, name)
    return module.RandomForestRegressor if name == "sklearn" else module


def numpy_library():
    return import_library("numpy")


def missing_libraries(fit=True, design=True):
    """[(library, error text)] of what is missing: numpy always, scikit-learn to fit, scipy to design."""
    wanted = ["numpy"] + (["sklearn"] if fit else []) + (["scipy"] if design else [])
    return imports.missing(*(_LIBRARIES[name] for name in wanted))


# ------------------------------------------------------------------------------------------------ small checks
def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_number(field, value, minimum=None, integer=False, above=None):
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise SurrogateError("%s: %r is not a number" % (field, value)) from None
    if not is_number(value) or not math.isfinite(float(value)):
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


def check_choice(field, value, allowed):
    if value not in allowed:
        raise SurrogateError("%s: %r is not allowed; allowed: %s" % (field, value, ", ".join(map(str, allowed))))
    return value


def _clean(value, digits=12):
    return float("%.*g" % (digits, value))


def check_mapping(field, value):
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
        workload = ycsb.workload(workload)
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
    check_mapping("workload", workload)
    for key in workload:
        if key not in WORKLOAD_KEYS and key != "name":
            raise SurrogateError("workload.%s: unknown key; allowed: %s" % (key, ", ".join(WORKLOAD_KEYS)))
    merged = dict(WORKLOAD_DEFAULTS)
    merged.update({key: value for key, value in workload.items() if key != "name"})
    mix = check_mapping("workload.mix", merged["mix"])
    shares = dict.fromkeys(("read", "update", "insert", "scan", "rmw"), 0.0)
    ops = {}
    for op, share in mix.items():
        key = "readmodifywrite" if op == "rmw" else op
        if key not in ycsb.OPERATIONS:
            raise SurrogateError(
                "workload.mix.%s: unknown operation; allowed: %s" % (op, ", ".join(ycsb.OPERATIONS + ("rmw",)))
            )
        value = float(check_number("workload.mix.%s" % op, share, minimum=0))
        ops[key] = ops.get(key, 0.0) + value
        shares[MIX_KEYS.get(key, "update")] += value
    total = math.fsum(shares.values())
    if total <= 0:
        raise SurrogateError("workload.mix: has no operations; give at least one operation a share > 0")
    values = {name: share / total for name, share in shares.items()}
    values["read_ratio"] = ycsb.read_ratio(ops)
    values["records"] = float(check_number("workload.records", merged["records"], minimum=0))
    values["record_bytes"] = float(check_number("workload.record_bytes", merged["record_bytes"], minimum=0))
    values["threads"] = float(check_number("workload.threads", merged["threads"], minimum=1))
    dist = str(merged["requestdistribution"]).strip().lower()
    check_choice("workload.requestdistribution", dist, ycsb.REQUEST_DISTRIBUTIONS)
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
    hardware = check_mapping("hardware", {} if hardware is None else hardware)
    for key in ("vcpu", "ram_gb"):
        if hardware.get(key) is None:
            raise SurrogateError("hardware.%s: required (%s)" % (key, ", ".join(HARDWARE_FEATURES)))
    values = {
        "vcpu": float(check_number("hardware.vcpu", hardware["vcpu"], above=0)),
        "ram_gb": float(check_number("hardware.ram_gb", hardware["ram_gb"], above=0)),
    }
    ssd = hardware.get("disk_ssd", HARDWARE_DEFAULTS["disk_ssd"])
    if not isinstance(ssd, bool) and ssd not in (0, 1):
        raise SurrogateError("hardware.disk_ssd: %r is not a boolean (true/false)" % (ssd,))
    values["disk_ssd"] = 1.0 if ssd else 0.0
    heap = hardware.get("heap_mb")
    if heap is None:
        heap = default_heap_mb(store, values["ram_gb"])
    values["heap_mb"] = float(check_number("hardware.heap_mb", heap, minimum=0))
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
            check_choice(field, name, allowed)
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
                    not is_number(low_limit)
                    or not is_number(high_limit)
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
        config = check_mapping("config", {} if config is None else config)
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
        for index, row in enumerate(row_list(rows)):
            try:
                check_mapping("row", row)
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
        # A when/needs rule on a tuned parameter comes along with the entries it needs (as live.requires' do), so
        # that the space's own catalog refuses what the store's refuses.
        conditions = [rule for rule in data.get("constraints") or [] if "when" in rule and wanted & set(rule["when"])]
        for rule in conditions:
            wanted.update(rule["when"])
            wanted.update(rule["needs"])
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
            rule
            for rule in data.get("constraints") or []
            if rule in conditions or ("when" not in rule and rule["smaller"] in wanted and rule["larger"] in wanted)
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
        check_mapping("space", data)
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


def row_list(rows):
    if isinstance(rows, dict):
        return [rows]
    if not isinstance(rows, (list, tuple)):
        raise SurrogateError("rows: expected a list of mappings, got %s" % type(rows).__name__)
    return list(rows)
