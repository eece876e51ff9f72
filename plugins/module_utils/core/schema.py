# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""A JSON Schema subset checked without the jsonschema library, with messages that name the field.

Standard library only: this file is shipped to managed nodes. Schedules and plan files are checked with it: the
first field that breaks the schema is named by its path (``phases[2].mix``), with what was expected and, for a
choice, the allowed values. Supported keywords: type, enum, const, required, properties, additionalProperties,
propertyNames, minProperties, items, minItems, minimum, maximum, exclusiveMinimum, exclusiveMaximum.
"""

from __future__ import annotations

import math

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import CoreError


class SchemaError(CoreError, ValueError):
    """A document breaks its schema; the message starts with the field's path."""


_TYPE_NAMES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


def _type_name(value):
    for kind, name in _TYPE_NAMES.items():
        if type(value) is kind:  # pylint: disable=unidiomatic-typecheck  # bool must not pass as int
            return name
    return type(value).__name__


def _is_type(value, name):
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list | tuple)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if isinstance(value, bool):
        return False
    if name == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, int | float) and math.isfinite(value)
    raise ValueError("schema: unknown type %r" % name)


def _short(value, limit=60):
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def show(value):
    return "null" if value is None else str(value)


def choices(values):
    return ", ".join(show(v) for v in values)


def validate(data, schema, path="", error=SchemaError, document="document"):
    """Check data against the JSON Schema subset of this file; raise error(message) naming the first bad field
    (its path, or `document` for the whole of it).

    Supported keywords: type, enum, const, required, properties, additionalProperties, propertyNames,
    minProperties, items, minItems, minimum, maximum, exclusiveMinimum, exclusiveMaximum.
    """
    where = path or document
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is_type(data, name) for name in types):
            raise error("%s: expected %s, got %s %s" % (where, " or ".join(types), _type_name(data), _short(data)))
    if "const" in schema and not (data == schema["const"] and not isinstance(data, bool)):
        raise error("%s: %r is not allowed; choose one of %s" % (where, data, show(schema["const"])))
    if "enum" in schema and not any(data == v and type(data) is type(v) for v in schema["enum"]):
        raise error("%s: %r is not allowed; choose one of %s" % (where, data, choices(schema["enum"])))
    if isinstance(data, int | float) and not isinstance(data, bool):
        if "minimum" in schema and data < schema["minimum"]:
            raise error("%s: %r is below the minimum; choose a value >= %s" % (where, data, schema["minimum"]))
        if "maximum" in schema and data > schema["maximum"]:
            raise error("%s: %r is above the maximum; choose a value <= %s" % (where, data, schema["maximum"]))
        if "exclusiveMinimum" in schema and data <= schema["exclusiveMinimum"]:
            raise error("%s: %r is too small; choose a value > %s" % (where, data, schema["exclusiveMinimum"]))
        if "exclusiveMaximum" in schema and data >= schema["exclusiveMaximum"]:
            raise error("%s: %r is too large; choose a value < %s" % (where, data, schema["exclusiveMaximum"]))
    if isinstance(data, dict):
        _validate_object(data, schema, path, where, error, document)
    if isinstance(data, list | tuple):
        if len(data) < schema.get("minItems", 0):
            raise error("%s: needs at least %d item(s), got %d" % (where, schema["minItems"], len(data)))
        if "items" in schema:
            for index, item in enumerate(data):
                validate(item, schema["items"], "%s[%d]" % (path or document, index), error, document)


def _validate_object(data, schema, path, where, error, document):
    prefix = path + "." if path else ""
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    names = schema.get("propertyNames", {}).get("enum")
    for name in data:
        if not isinstance(name, str):
            raise error("%s: key %r is not a string" % (where, name))
        if names is not None and name not in names:
            raise error("%s: %r is not allowed; choose one of %s" % (where, name, choices(names)))
        if extra is False and name not in properties:  # before "required": a misspelt field explains a missing one
            raise error("%s%s: unknown field; choose one of %s" % (prefix, name, ", ".join(sorted(properties))))
    for name in schema.get("required", ()):
        if name not in data:
            raise error("%s%s: is required" % (prefix, name))
    if len(data) < schema.get("minProperties", 0):
        raise error("%s: needs at least %d entry(ies)" % (where, schema["minProperties"]))
    for name, value in data.items():
        if name in properties:
            validate(value, properties[name], prefix + name, error, document)
        elif isinstance(extra, dict):
            validate(value, extra, prefix + name, error, document)
