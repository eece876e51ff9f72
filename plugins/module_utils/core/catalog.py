# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The parameter catalog of each store: what a setting is, which values it may take, how it changes.

The catalog files live in the collection's ``catalog/`` folder (one YAML file per store and version, checked
against ``catalog/schema.json``; docs/catalog.md explains the fields). This engine loads them and answers, for
one setting:
- normalize(): the canonical value from what a user wrote or what the server reports
  ("64MiB", "1GiB", "10s", "yes", Redis "100mb" or a byte count, an enum in any case);
- validate(): a whole set of settings at once, every problem in one error (unknown names with close matches,
  wrong types, ranges with their unit, choices, the catalog's constraints between parameters, the memory budget);
- apply_kind() / split(): live, restart or table (a schema change, not a node setting); rewrite(): whether a switch
  only pays once the data is rewritten (a new SSTable format, a new compression chunk);
- config_key() / config_text(): where and how the value is written in the config file;
- live_action(): the nodetool arguments, CONFIG SET or setParameter that changes it on a running node.

Pure standard library, except load_catalog_file() (PyYAML, imported when called) and validate_catalog_schema()
(jsonschema, imported when called), so the module runs on nodes where only the catalog's dict is passed in.
"""

from __future__ import annotations

import copy
import difflib
import math
import re

from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog_files import (
    MEMORY_RESOURCES,
    NUMERIC_TYPES,
    RATE_UNITS,
    SIZE_UNITS,
    TIME_UNITS,
    UNIT_TYPES,
    CatalogError,
    check_structure,
    find_catalog,
    is_number,
    load_catalog_file,
)

DOC_HINT = "see docs/catalog.md or lookup('tactician.nosql.catalog', store='%s')"


_SIZE_SUFFIXES = {
    "b": 1,
    "byte": 1,
    "bytes": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
    "t": 1024**4,
    "tb": 1024**4,
    "tib": 1024**4,
}
# Redis: k/m/g count in thousands, kb/mb/gb in 1024s (the server's memtoull()).
_REDIS_SIZE_SUFFIXES = dict(_SIZE_SUFFIXES, k=1000, m=1000**2, g=1000**3)
_TIME_SUFFIXES = {
    "ns": 1e-6,
    "us": 1e-3,
    "µs": 1e-3,
    "ms": 1,
    "s": 1000,
    "sec": 1000,
    "m": 60000,
    "min": 60000,
    "h": 3600000,
    "d": 86400000,
}
_MEGABIT = 125000  # bytes per second in one megabit per second
_RATE_SPECIAL = {"mbps": _MEGABIT, "mbit/s": _MEGABIT, "mbits/s": _MEGABIT, "megabits/s": _MEGABIT}

_NUMBER = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-zµ/%]*)\s*$")
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")
_EXAMPLES = {
    "size": "e.g. 256MiB, 1GiB",
    "duration": "e.g. 500ms, 10s, 1h",
    "rate": "e.g. 64MiB/s",
}


# ------------------------------------------------------------------------------------------------ values
def _format_number(value):
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return "%s" % float("%.12g" % value)
    return str(value)


def _unit_label(unit):
    return "" if unit in ("count", "none", "ratio") else ("%" if unit == "percent" else " " + unit)


def _with_unit(value, unit):
    return "%s%s" % (_format_number(value), _unit_label(unit))


def _unit_factor(kind, unit):
    table = {"size": SIZE_UNITS, "duration": TIME_UNITS, "rate": RATE_UNITS}[kind]
    return table[unit]


def _suffix_factor(kind, suffix, store):
    """Factor of a written suffix, in the base of kind (bytes, ms, bytes/s); None if unknown."""
    text = suffix.lower()
    if kind == "size":
        return (_REDIS_SIZE_SUFFIXES if store == "redis" else _SIZE_SUFFIXES).get(text)
    if kind == "duration":
        return _TIME_SUFFIXES.get(suffix) or _TIME_SUFFIXES.get(text)
    if text in _RATE_SPECIAL:
        return _RATE_SPECIAL[text]
    for tail in ("/s", "ps"):
        if text.endswith(tail) and len(text) > len(tail):
            return _SIZE_SUFFIXES.get(text[: -len(tail)])
    return None


def _whole(value):
    nearest = round(value)
    return abs(value - nearest) <= 1e-9 * max(1.0, abs(value)), int(nearest)


def _clean_float(value):
    return float("%.12g" % value)


class Catalog:
    """One store's catalog: the parsed file {store, version, parameters: [entries]}."""

    def __init__(self, data):
        check_structure(data)
        self._data = copy.deepcopy(data)
        self.store = self._data["store"]
        self.version = self._data["version"]
        self._entries = {}
        self._alias = {}
        self._renamed = {}
        for entry in self._data["parameters"]:
            self._entries[entry["name"]] = entry
            for other in entry.get("other_names") or []:
                self._alias[other] = entry["name"]
            if entry.get("renamed_from"):
                self._renamed[entry["renamed_from"]] = entry
        self._conditions = self._read_conditions()

    @classmethod
    def for_store(cls, store, version=None):
        """The catalog of store (newest version, or the one matching the version prefix)."""
        return cls(load_catalog_file(find_catalog(store, version)))

    # -------------------------------------------------------------------------------- lookups
    def names(self):
        return [entry["name"] for entry in self._data["parameters"]]

    def entries(self):
        return [copy.deepcopy(entry) for entry in self._data["parameters"]]

    def _entry(self, name):
        if name in self._entries:
            return self._entries[name]
        if name in self._alias:
            return self._entries[self._alias[name]]
        raise CatalogError(self._unknown(name))

    def entry(self, name):
        """The entry of a name (or of one of its other_names); CatalogError with close matches otherwise."""
        return copy.deepcopy(self._entry(name))

    def canonical(self, name):
        return self._entry(name)["name"]

    def _unknown(self, name):
        text = str(name)
        renamed = self._renamed.get(text)
        if renamed is not None:
            return "%s: renamed %s in %s %s (write the value with its unit, e.g. %s)" % (
                text,
                renamed["name"],
                self.store.capitalize(),
                renamed.get("renamed_in") or renamed.get("since") or self.version,
                self._example(renamed),
            )
        known = self.names() + sorted(self._alias)
        lowered = {candidate.lower(): candidate for candidate in known}
        close = [lowered[c] for c in difflib.get_close_matches(text.lower(), list(lowered), n=3, cutoff=0.6)]
        close += [c for c in known if text.lower() in c.lower() and c not in close][: max(0, 3 - len(close))]
        hint = "; did you mean %s?" % ", ".join(close) if close else ""
        return "%s: unknown %s parameter%s (%s)" % (text, self.store, hint, DOC_HINT % self.store)

    def _example(self, entry):
        if entry["type"] in UNIT_TYPES:
            sample = entry.get("default")
            if not is_number(sample):
                sample = entry.get("max") if is_number(entry.get("max")) and entry["max"] < 1000 else 256
            return "%s%s" % (_format_number(sample), entry["unit"])
        return _format_number(entry.get("default"))

    # -------------------------------------------------------------------------------- normalize
    def normalize(self, name, raw, unit=None):
        """Canonical value of raw in the entry's unit: int, float, bool or str.

        raw is what a user wrote or what the server reports. A bare number counts in unit (default: the entry's
        unit); for an entry with setting_unit, a bare number above the entry's max is the server's reading in
        setting_unit (e.g. bytes where the entry counts GiB).
        """
        entry = self._entry(name)
        return self._normalize(entry, raw, unit)

    def _normalize(self, entry, raw, unit=None):
        name = entry["name"]
        kind = entry["type"]
        if raw is None:
            raise CatalogError("%s: no value" % name)
        if isinstance(raw, (list, tuple)) and kind == "string":
            raw = " ".join(str(item) for item in raw)
        if isinstance(raw, (dict, list, tuple)):
            raise CatalogError("%s: %r is not a single value" % (name, raw))
        if kind == "bool":
            return self._bool(entry, raw)
        if kind == "enum":
            return self._choice(entry, raw)
        if kind == "string":
            return " ".join(str(raw).split())
        if kind in ("int", "float"):
            return self._plain_number(entry, raw)
        return self._quantity(entry, raw, unit)

    def _bool(self, entry, raw):
        if isinstance(raw, bool):
            return raw
        if is_number(raw) and raw in (0, 1):
            return bool(raw)
        text = str(raw).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise CatalogError("%s: %r is not a boolean (true/false, yes/no)" % (entry["name"], raw))

    def _choice(self, entry, raw):
        text = str(raw).strip()
        candidates = [text, text.rsplit(".", 1)[-1]]
        if isinstance(raw, bool):  # YAML 1.1 reads a bare no/off/yes/on as a boolean
            candidates = ["yes", "on", "true"] if raw else ["no", "off", "false"]
        choices = {choice.lower(): choice for choice in entry["choices"]}
        aliases = {alias.lower(): choice for alias, choice in (entry.get("aliases") or {}).items()}
        for candidate in candidates:
            key = candidate.lower()
            if key in choices:
                return choices[key]
            if key in aliases:
                return aliases[key]
        raise CatalogError(
            "%s: %r is not allowed; allowed: %s" % (entry["name"], raw, ", ".join(entry["choices"])),
        )

    def _plain_number(self, entry, raw):
        name = entry["name"]
        if isinstance(raw, bool):
            raise CatalogError("%s: %r is not a number" % (name, raw))
        if is_number(raw):
            value = float(raw)
        else:
            match = _NUMBER.match(str(raw))
            suffix = match.group(2) if match else None
            if not match or suffix not in ("", "%") or (suffix == "%" and entry["unit"] != "percent"):
                raise CatalogError("%s: %r is not %s" % (name, raw, "an int" if entry["type"] == "int" else "a number"))
            value = float(match.group(1))
        if math.isnan(value) or math.isinf(value):
            raise CatalogError("%s: %r is not a finite number" % (name, raw))
        if entry["type"] == "int":
            whole, number = _whole(value)
            if not whole:
                raise CatalogError("%s: %r is not a whole number" % (name, raw))
            return number
        return _clean_float(value)

    def _quantity(self, entry, raw, unit=None):
        """size, duration or rate -> number in the entry's unit."""
        name, kind = entry["name"], entry["type"]
        target = _unit_factor(kind, entry["unit"])
        if isinstance(raw, bool):
            raise CatalogError("%s: %r is not a %s (%s)" % (name, raw, kind, _EXAMPLES[kind]))
        if is_number(raw):
            number, suffix = float(raw), ""
        else:
            match = _NUMBER.match(str(raw))
            if not match:
                raise CatalogError("%s: %r is not a %s (%s)" % (name, raw, kind, _EXAMPLES[kind]))
            number, suffix = float(match.group(1)), match.group(2)
        if suffix:
            factor = _suffix_factor(kind, suffix, self.store)
            if factor is None:
                raise CatalogError(
                    "%s: unit %r of %r is not a %s unit (%s)" % (name, suffix, raw, kind, _EXAMPLES[kind])
                )
        else:
            bare = unit or entry["unit"]
            if unit is None and entry.get("setting_unit") and is_number(entry.get("max")) and number > entry["max"]:
                bare = entry["setting_unit"]
            if bare not in {"size": SIZE_UNITS, "duration": TIME_UNITS, "rate": RATE_UNITS}[kind]:
                raise CatalogError("%s: unit %r does not fit a %s" % (name, bare, kind))
            factor = _unit_factor(kind, bare)
        value = number * factor / target
        if math.isnan(value) or math.isinf(value):
            raise CatalogError("%s: %r is not a finite number" % (name, raw))
        if entry.get("integer", True):
            whole, count = _whole(value)
            if not whole:
                raise CatalogError(
                    "%s: %r is not a whole number of %s" % (name, raw, entry["unit"]),
                )
            return count
        return _clean_float(value)

    # -------------------------------------------------------------------------------- validate
    def validate(self, settings, memory_mb=None, heap_mb=None):
        """Normalized settings by canonical name; CatalogError listing every problem at once."""
        if settings is None:
            settings = {}
        if not isinstance(settings, dict):
            raise CatalogError(
                "settings must be a mapping of parameter name to value, not %s" % type(settings).__name__
            )
        problems = []
        values = {}
        given_as = {}
        for name, raw in settings.items():
            try:
                entry = self._entry(name)
            except CatalogError as exc:
                problems.append(str(exc))
                continue
            canonical = entry["name"]
            if canonical in given_as:
                problems.append("%s: given twice (as %s and %s)" % (canonical, given_as[canonical], name))
                continue
            given_as[canonical] = name
            try:
                value = self._normalize(entry, raw)
            except CatalogError as exc:
                problems.append(str(exc))
                continue
            problem = self._check(entry, value)
            if problem:
                problems.append(problem)
                continue
            values[canonical] = value
        if not problems:
            problems.extend(self._constraint_problems(values, heap_mb, memory_mb))
            problems.extend(self._budget_problems(values, memory_mb, heap_mb))
        if problems:
            raise CatalogError("; ".join(problems), problems)
        return values

    def _check(self, entry, value):
        name, unit = entry["name"], entry["unit"]
        if entry["type"] in NUMERIC_TYPES:
            low, high = entry["min"], entry["max"]
            if value < low or value > high:
                return "%s: %s is out of range [%s, %s]%s" % (
                    name,
                    _with_unit(value, unit),
                    _format_number(low),
                    _format_number(high),
                    _unit_label(unit),
                )
        if entry["type"] == "string" and entry.get("pattern") and not re.match(entry["pattern"], value):
            return "%s: %r does not have the expected form (%s)" % (name, value, entry.get("description", ""))
        return None

    def _read_conditions(self):
        """The constraints of kind when/needs as (when, needs), each {name: [normalized values]}; CatalogError
        naming the rule's field when a listed value is not one the parameter takes."""
        conditions = []
        problems = []
        for rule in self._data.get("constraints") or []:
            if "when" not in rule:
                continue
            parts = []
            for key in ("when", "needs"):
                part = {}
                for name, allowed in rule[key].items():
                    entry = self._entry(name)
                    listed = part.setdefault(entry["name"], [])
                    for value in allowed:
                        try:
                            listed.append(self._normalize(entry, value))
                        except CatalogError as exc:
                            problems.append("constraints: %s %s" % (key, exc))
                parts.append(part)
            conditions.append(tuple(parts))
        if problems:
            raise CatalogError("catalog: %s" % "; ".join(problems), problems)
        return conditions

    def constraint_fields(self):
        """The names the when/needs constraints read: a check of a configuration that leaves one of them out
        takes its default, so a caller that knows the value in place passes it along."""
        return sorted({name for when, needs in self._conditions for name in list(when) + list(needs)})

    def _constraint_problems(self, values, heap_mb, memory_mb):
        problems = self._condition_problems(values)
        for rule in self._data.get("constraints") or []:
            if "when" in rule:
                continue
            small, large = rule["smaller"], rule["larger"]
            if small not in values and large not in values:
                continue
            a = values.get(small, self._default(self._entries[small], heap_mb, memory_mb))
            b = values.get(large, self._default(self._entries[large], heap_mb, memory_mb))
            if is_number(a) and is_number(b) and a > b:
                problems.append(
                    "%s (%s) must not be larger than %s (%s)" % (small, _format_number(a), large, _format_number(b))
                )
        return problems

    def _condition_problems(self, values):
        """when/needs rules: when every when-parameter has one of its listed values, every needs-parameter must
        have one of its own. A parameter not given counts with its default (storage_compatibility_mode's is
        CASSANDRA_4), as in the smaller/larger rules; a rule none of whose parameters is given is not checked."""
        problems = []
        for when, needs in self._conditions:
            if not any(name in values for name in list(when) + list(needs)):
                continue
            current = {name: values.get(name, self._entries[name].get("default")) for name in list(when) + list(needs)}
            if not all(current[name] in allowed for name, allowed in when.items()):
                continue
            missing = [name for name, allowed in needs.items() if current[name] not in allowed]
            if not missing:
                continue
            condition = " and ".join("%s: %s" % (name, _format_number(current[name])) for name in when)
            for name in missing:
                given = (
                    "given: %s" % _format_number(current[name])
                    if name in values
                    else "not given, its default is %s" % _format_number(current[name])
                )
                problems.append(
                    "%s needs %s %s (%s)"
                    % (condition, name, " or ".join(_format_number(v) for v in needs[name]), given)
                )
        return problems

    # -------------------------------------------------------------------------------- memory budget
    def _default(self, entry, heap_mb=None, memory_mb=None):
        if entry.get("default") is not None or not entry.get("auto_default"):
            return entry.get("default")
        rule = entry["auto_default"]
        basis = heap_mb if rule["basis"] == "heap" else memory_mb
        if basis is None:
            return None
        mb = (float(basis) - float(rule.get("minus_mb", 0))) * float(rule["fraction"])
        if "min_mb" in rule:
            mb = max(mb, float(rule["min_mb"]))
        if "max_mb" in rule:
            mb = min(mb, float(rule["max_mb"]))
        value = mb * SIZE_UNITS["MiB"] / SIZE_UNITS[entry["unit"]]
        if entry.get("integer", True):
            return int(math.floor(value + 1e-9))
        return _clean_float(value)

    def defaults(self, heap_mb=None, memory_mb=None):
        """{name: default} of every entry; computed defaults need heap_mb / memory_mb, else None."""
        return {entry["name"]: self._default(entry, heap_mb, memory_mb) for entry in self._data["parameters"]}

    def _memory_items(self, values, heap_mb, memory_mb):
        full = {}
        for entry in self._data["parameters"]:
            name = entry["name"]
            full[name] = values[name] if name in values else self._default(entry, heap_mb, memory_mb)
        items = []
        for entry in self._data["parameters"]:
            name = entry["name"]
            if entry["type"] != "size" or entry["resource"] not in MEMORY_RESOURCES or entry["scope"] != "node":
                continue
            value = full.get(name)
            if not is_number(value) or value <= 0:
                continue
            conditions = entry.get("budget_when") or {}
            if any(full.get(other) not in allowed for other, allowed in conditions.items()):
                continue
            mb = value * SIZE_UNITS[entry["unit"]] / SIZE_UNITS["MiB"]
            items.append((entry["resource"], name, mb, name not in values))
        return items

    def _budget_problems(self, values, memory_mb, heap_mb):
        if memory_mb is None and heap_mb is None:
            return []
        problems = []
        items = self._memory_items(values, heap_mb, memory_mb)

        def listing(selected):
            return " + ".join(
                "%s %s MiB%s" % (name, _format_number(round(mb, 1)), " (default)" if is_default else "")
                for _resource, name, mb, is_default in selected
            )

        heap_items = [item for item in items if item[0] == "heap"]
        other_items = [item for item in items if item[0] != "heap"]
        heap_sum = sum(item[2] for item in heap_items)
        share = float((self._data.get("budget") or {}).get("heap_share", 1.0))
        if heap_mb is not None and heap_items and heap_sum > float(heap_mb) * share + 1e-6:
            problems.append(
                "heap budget: %s = %s MiB is more than %s%% of heap_mb %s MiB (%s MiB)"
                % (
                    listing(heap_items),
                    _format_number(round(heap_sum, 1)),
                    _format_number(round(share * 100, 1)),
                    _format_number(heap_mb),
                    _format_number(round(float(heap_mb) * share, 1)),
                )
            )
        if memory_mb is not None:
            parts = []
            total = sum(item[2] for item in other_items)
            if heap_mb is not None:
                parts.append("heap_mb %s MiB" % _format_number(heap_mb))
                total += float(heap_mb)
            elif heap_items:
                parts.append(listing(heap_items))
                total += heap_sum
            if other_items:
                parts.append(listing(other_items))
            if total > float(memory_mb) + 1e-6:
                problems.append(
                    "memory budget: %s = %s MiB is more than memory_mb %s MiB"
                    % (" + ".join(parts), _format_number(round(total, 1)), _format_number(memory_mb))
                )
        return problems

    # -------------------------------------------------------------------------------- comparisons and kinds
    def equal(self, name, a, b):
        """Whether two values of name are the same setting (after normalize)."""
        entry = self._entry(name)
        if a is None or b is None:
            return a is None and b is None
        left, right = self._normalize(entry, a), self._normalize(entry, b)
        if isinstance(left, float) or isinstance(right, float):
            live = entry.get("live") or {}
            if live.get("unit") and live["unit"] != entry["unit"] and entry["type"] in UNIT_TYPES:
                return round(self._convert(entry, left, live["unit"])) == round(
                    self._convert(entry, right, live["unit"])
                )
            return math.isclose(float(left), float(right), rel_tol=1e-6, abs_tol=1e-9)
        return left == right

    def restarting(self, names, before):
        """Those of names whose change restarts the nodes (apply_kind restart from their value in before, a
        mapping): a live change or a table option (ALTER TABLE) restarts none."""
        return [name for name in names if self.apply_kind(name, before.get(name)) == "restart"]

    def apply_kind(self, name, before=None):
        """live, restart or table. A live setting whose running value is one of its live.restart_from values (a
        row cache started at 0 is a no-op cache whose capacity cannot be set) needs a restart to change."""
        entry = self._entry(name)
        if entry["apply"] == "live" and before is not None:
            for value in (entry.get("live") or {}).get("restart_from") or []:
                if self.equal(name, before, value):
                    return "restart"
        return entry["apply"]

    def rewrite(self, name):
        """What a switch of name makes the node rewrite before it pays (catalog_files.REWRITE_KINDS: sstables), or
        None when its new value takes effect on the data already there."""
        return self._entry(name).get("rewrite")

    def split(self, changes):
        """(live, restart, table) dicts of changes by canonical name."""
        parts = {"live": {}, "restart": {}, "table": {}}
        unknown = []
        for name, value in (changes or {}).items():
            try:
                entry = self._entry(name)
            except CatalogError as exc:
                unknown.append(str(exc))
                continue
            parts[entry["apply"]][entry["name"]] = value
        if unknown:
            raise CatalogError("; ".join(unknown), unknown)
        return parts["live"], parts["restart"], parts["table"]

    def setting_name(self, name):
        return self._entry(name)["setting_name"]

    def requires(self, name):
        """Other parameters whose current values live_action(name) needs."""
        return list((self._entry(name).get("live") or {}).get("requires") or [])

    def read_from(self, name):
        """Where the running value is read when setting_name keeps the start-up value, or None."""
        found = self._entry(name).get("read_from")
        return dict(found) if found else None

    # -------------------------------------------------------------------------------- config file
    def config_key(self, name):
        return self._entry(name)["config_key"]

    def config_text(self, name, value):
        """The value as written in the config file: typed for YAML when config_format is {value}, else text."""
        entry = self._entry(name)
        normalized = self._normalize(entry, value)
        fmt = entry["config_format"]
        if self.store == "redis":
            if isinstance(normalized, bool):
                return "yes" if normalized else "no"
            return fmt.replace("{value}", _format_number(normalized))
        if fmt == "{value}":
            return normalized
        return fmt.replace("{value}", _format_number(normalized))

    # -------------------------------------------------------------------------------- live changes
    def _convert(self, entry, value, unit):
        if entry["type"] not in UNIT_TYPES or unit == entry["unit"]:
            return value
        return value * _unit_factor(entry["type"], entry["unit"]) / _unit_factor(entry["type"], unit)

    def _live_text(self, entry, value):
        live = entry.get("live") or {}
        converted = self._convert(entry, value, live.get("unit") or entry["unit"])
        if isinstance(converted, float) and entry["type"] in UNIT_TYPES and live.get("unit"):
            converted = int(round(converted))
        return converted

    def live_action(self, name, value, current=None):
        """What changes name to value on a running node.

        Cassandra {"nodetool": [argv...]}, Redis {"config_set": [directive, text]}, MongoDB {"set_parameter":
        {parameter: value}}. current holds the node's current settings by name, for commands that set several
        parameters at once (setcachecapacity); CatalogError when one they need is missing.
        """
        entry = self._entry(name)
        if entry["apply"] != "live":
            raise CatalogError(
                "%s cannot change on a running node (apply %s)%s"
                % (
                    entry["name"],
                    entry["apply"],
                    ": it needs a restart" if entry["apply"] == "restart" else ": it is a table or keyspace option",
                )
            )
        live = entry["live"]
        normalized = self._normalize(entry, value)
        live_value = self._live_text(entry, normalized)
        method = live["method"]
        if method == "nodetool":
            return {"nodetool": self._nodetool_argv(entry, live, live_value, current or {})}
        if method == "config_set":
            directive = entry["setting_name"] or entry["config_key"]
            if isinstance(live_value, bool):
                text = "yes" if live_value else "no"
            else:
                text = _format_number(live_value)
            return {"config_set": [directive, text]}
        parameter = live["parameter"]
        if live.get("format"):
            return {"set_parameter": {parameter: live["format"].replace("{value}", _format_number(live_value))}}
        return {"set_parameter": {parameter: live_value}}

    def _nodetool_argv(self, entry, live, live_value, current):
        argv = []
        missing = []
        for arg in live["argv"]:
            if arg == "{value}":
                argv.append(_format_number(live_value))
                continue
            match = re.fullmatch(r"\{([A-Za-z0-9_.-]+)\}", arg)
            if not match:
                argv.append(arg)
                continue
            other = self._entry(match.group(1))
            found = current.get(other["name"])
            if found is None:
                missing.append(other["name"])
                continue
            other_live = other.get("live") or {}
            converted = self._convert(other, self._normalize(other, found), other_live.get("unit") or other["unit"])
            if isinstance(converted, float):
                converted = int(round(converted))
            argv.append(_format_number(converted))
        if missing:
            raise CatalogError(
                "%s: nodetool %s sets %s at once; the current value of %s is needed (pass it in current)"
                % (
                    entry["name"],
                    live["argv"][0],
                    ", ".join([entry["name"]] + self.requires(entry["name"])),
                    ", ".join(missing),
                )
            )
        return argv

    # -------------------------------------------------------------------------------- export
    def to_dict(self):
        """The catalog as plain data (for passing it to a module as an argument)."""
        return copy.deepcopy(self._data)
