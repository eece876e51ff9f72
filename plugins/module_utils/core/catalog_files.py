# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The parameter catalog's files: catalog/<store>-<version>.yml found by store and version, read, and checked
(its structure always, catalog/schema.json with jsonschema on request), every problem named at once; and the
vocabulary a catalog file is written in (stores, types, units, how a setting is applied).
"""

from __future__ import annotations

import glob
import json
import os

from ansible_collections.tactician.nosql.plugins.module_utils.core import imports
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import CoreError

STORES = ("cassandra", "redis", "mongodb")
TYPES = ("int", "float", "bool", "enum", "size", "duration", "rate", "string")
NUMERIC_TYPES = ("int", "float", "size", "duration", "rate")
UNIT_TYPES = ("size", "duration", "rate")
APPLY_KINDS = ("live", "restart", "table")
REWRITE_KINDS = ("sstables",)
"""What a switch of the parameter makes the node rewrite before it pays (entry key ``rewrite``): ``sstables``, every
SSTable of the tables it concerns (a new format or compression chunk reaches only files written afterwards)."""
SCOPES = ("node", "table", "keyspace")
RESOURCES = ("heap", "off_heap", "page_cache", "disk", "cpu", "network", "none")
MEMORY_RESOURCES = ("heap", "off_heap", "page_cache")
UNITS = ("bytes", "KiB", "MiB", "GiB", "ms", "s", "min", "MiB/s", "count", "ratio", "percent", "none")
LIVE_METHODS = {"cassandra": "nodetool", "redis": "config_set", "mongodb": "set_parameter"}
YAML_STORES = ("cassandra", "mongodb")


REQUIRED_KEYS = (
    "name",
    "description",
    "type",
    "unit",
    "default",
    "scope",
    "apply",
    "resource",
    "config_key",
    "config_format",
    "setting_name",
    "papers",
)

# Sizes in bytes, durations in milliseconds, rates in bytes per second.
SIZE_UNITS = {"bytes": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
TIME_UNITS = {"ms": 1, "s": 1000, "min": 60000}
RATE_UNITS = {"MiB/s": 1024**2}


class CatalogError(CoreError, ValueError):
    """A bad catalog, an unknown name or bad values. The message names every bad field at once."""

    def __init__(self, message, problems=None):
        super().__init__(message)
        self.problems = list(problems or [message])


# ------------------------------------------------------------------------------------------------ files
def catalog_dir():
    """The collection's catalog/ folder (four levels above this file: plugins/module_utils/core/)."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(here))), "catalog")


def _version_tuple(text):
    try:
        return tuple(int(part) for part in str(text).split("."))
    except ValueError:
        return ()


def _available(store):
    found = {}
    for path in glob.glob(os.path.join(catalog_dir(), "%s-*.yml" % store)):
        version = os.path.basename(path)[len(store) + 1 : -len(".yml")]
        if _version_tuple(version):
            found[version] = path
    return found


def find_catalog(store, version=None):
    """Path of the newest catalog file of store, or of the one matching the version prefix."""
    if store not in STORES:
        raise CatalogError("store: %r is not allowed; allowed: %s" % (store, ", ".join(STORES)))
    found = _available(store)
    if not found:
        raise CatalogError("no catalog file for %s in %s" % (store, catalog_dir()))
    candidates = found
    if version not in (None, ""):
        wanted = _version_tuple(version)
        if not wanted:
            raise CatalogError("version: %r is not a version such as 5.0 or 7.0.15" % (version,))
        candidates = {
            v: p
            for v, p in found.items()
            if wanted[: len(_version_tuple(v))] == _version_tuple(v) or _version_tuple(v)[: len(wanted)] == wanted
        }
        if not candidates:
            raise CatalogError(
                "no %s catalog for version %s; available: %s" % (store, version, ", ".join(sorted(found)))
            )
    best = max(candidates, key=_version_tuple)
    return candidates[best]


def load_catalog_file(path):
    """Parse one catalog file (YAML) and check its structure; returns the data dict."""
    yaml = imports.require("yaml", CatalogError, "reading %s" % path)
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except OSError as exc:
        raise CatalogError("cannot read catalog %s: %s" % (path, exc)) from exc
    except yaml.YAMLError as exc:
        raise CatalogError("catalog %s is not valid YAML: %s" % (path, exc)) from exc
    check_structure(data, where=os.path.basename(path))
    return data


def validate_catalog_schema(data, schema_path=None):
    """Check data against catalog/schema.json (JSON Schema 2020-12). Raises CatalogError listing every error."""
    jsonschema = imports.require("jsonschema", CatalogError, "the schema check")
    schema_path = schema_path or os.path.join(catalog_dir(), "schema.json")
    try:
        with open(schema_path, encoding="utf-8") as handle:
            schema = json.load(handle)
    except (OSError, ValueError) as exc:
        raise CatalogError("cannot read the catalog schema %s: %s" % (schema_path, exc)) from exc
    validator_class = jsonschema.Draft202012Validator
    validator_class.check_schema(schema)
    problems = []
    for error in sorted(validator_class(schema).iter_errors(data), key=lambda err: list(err.absolute_path)):
        problems.append("%s: %s" % (_json_path(data, error.absolute_path), error.message))
    if problems:
        raise CatalogError("catalog does not match the schema: " + "; ".join(problems), problems)


def _json_path(data, path):
    parts = []
    node = data
    for part in path:
        if isinstance(part, int) and isinstance(node, list) and part < len(node):
            node = node[part]
            label = node.get("name") if isinstance(node, dict) else None
            parts.append("[%s]" % (label or part))
        else:
            node = node.get(part) if isinstance(node, dict) else None
            parts.append(".%s" % part)
    return "$" + "".join(parts)


def check_structure(data, where="catalog"):
    """The checks the engine depends on, without jsonschema. Raises CatalogError listing every problem."""
    if not isinstance(data, dict):
        raise CatalogError("%s: a catalog is a mapping with store, version and parameters" % where)
    problems = []
    store = data.get("store")
    if store not in STORES:
        problems.append("store: %r is not allowed; allowed: %s" % (store, ", ".join(STORES)))
    if not isinstance(data.get("version"), str) or not _version_tuple(data.get("version")):
        problems.append('version: %r is not a version string such as "5.0"' % (data.get("version"),))
    parameters = data.get("parameters")
    if not isinstance(parameters, list) or not parameters:
        problems.append("parameters: must be a non-empty list")
        parameters = []
    seen = {}
    for index, entry in enumerate(parameters):
        label = entry.get("name") if isinstance(entry, dict) else None
        label = label or "parameters[%d]" % index
        if not isinstance(entry, dict):
            problems.append("%s: must be a mapping" % label)
            continue
        problems.extend("%s: %s" % (label, p) for p in _entry_problems(entry, store))
        for name in [entry.get("name")] + list(entry.get("other_names") or []):
            if name in seen:
                problems.append("%s: name %s is also used by %s" % (label, name, seen[name]))
            elif name:
                seen[name] = label
    for entry in parameters:
        live = entry.get("live") if isinstance(entry, dict) else None
        for other in (live or {}).get("requires") or []:
            if other not in seen:
                problems.append("%s: live.requires names unknown parameter %s" % (entry.get("name"), other))
        restart_from = (live or {}).get("restart_from")
        if restart_from is not None and not isinstance(restart_from, list):
            problems.append("%s: live.restart_from must be a list of values" % entry.get("name"))
    for rule in data.get("constraints") or []:
        problems.extend(_rule_problems(rule, seen))
    if problems:
        raise CatalogError("%s: %s" % (where, "; ".join(problems)), problems)


def _rule_problems(rule, seen):
    """What is wrong with one constraints rule: a pair (smaller, larger) or a condition (when, needs), each a
    mapping of parameter name to the list of its values."""
    if not isinstance(rule, dict):
        return ["constraints: %r is not a mapping" % (rule,)]
    if "when" in rule or "needs" in rule:
        problems = []
        for key in ("when", "needs"):
            part = rule.get(key)
            if not isinstance(part, dict) or not part:
                problems.append("constraints: %s must map parameter names to lists of values" % key)
                continue
            for name, allowed in part.items():
                if name not in seen:
                    problems.append("constraints: %s %r is not a parameter" % (key, name))
                if not isinstance(allowed, list) or not allowed:
                    problems.append("constraints: %s %s must be a non-empty list of values" % (key, name))
        return problems
    return [
        "constraints: %s %r is not a parameter" % (key, rule.get(key))
        for key in ("smaller", "larger")
        if rule.get(key) not in seen
    ]


def _entry_problems(entry, store):
    problems = ["missing %s" % key for key in REQUIRED_KEYS if key not in entry]
    kind = entry.get("type")
    if kind not in TYPES:
        problems.append("type %r is not one of %s" % (kind, ", ".join(TYPES)))
    if entry.get("unit") not in UNITS:
        problems.append("unit %r is not one of %s" % (entry.get("unit"), ", ".join(UNITS)))
    units = {"size": SIZE_UNITS, "duration": TIME_UNITS, "rate": RATE_UNITS}.get(kind)
    if units is not None and entry.get("unit") not in units:
        problems.append("unit %r does not fit type %s (use %s)" % (entry.get("unit"), kind, ", ".join(units)))
    if kind in NUMERIC_TYPES:
        for key in ("min", "max"):
            if not is_number(entry.get(key)):
                problems.append("%s must be a number for type %s" % (key, kind))
    if kind == "enum" and not (isinstance(entry.get("choices"), list) and entry.get("choices")):
        problems.append("choices must be a non-empty list for type enum")
    if entry.get("scope") not in SCOPES:
        problems.append("scope %r is not one of %s" % (entry.get("scope"), ", ".join(SCOPES)))
    apply = entry.get("apply")
    if apply not in APPLY_KINDS:
        problems.append("apply %r is not one of %s" % (apply, ", ".join(APPLY_KINDS)))
    if entry.get("resource") not in RESOURCES:
        problems.append("resource %r is not one of %s" % (entry.get("resource"), ", ".join(RESOURCES)))
    if "rewrite" in entry and entry["rewrite"] not in REWRITE_KINDS:
        problems.append("rewrite %r is not one of %s" % (entry["rewrite"], ", ".join(REWRITE_KINDS)))
    live = entry.get("live")
    if apply == "live":
        if not isinstance(live, dict):
            problems.append("apply live needs a live object saying how")
        elif store in LIVE_METHODS and live.get("method") != LIVE_METHODS[store]:
            problems.append(
                "live.method %r is not %s (the %s method)" % (live.get("method"), LIVE_METHODS[store], store)
            )
        elif live.get("method") == "nodetool" and not live.get("argv"):
            problems.append("live.argv is required for nodetool")
        elif live.get("method") == "set_parameter" and not live.get("parameter"):
            problems.append("live.parameter is required for set_parameter")
    elif live is not None:
        problems.append("live is only for apply live")
    if "{value}" not in str(entry.get("config_format", "")):
        problems.append("config_format must contain {value}")
    if not isinstance(entry.get("papers", []), list):
        problems.append("papers must be a list")
    return problems


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)
