# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Input checks the engines share: one wording for a bad number, whichever engine refuses it."""

from __future__ import annotations

import dataclasses
import math


def number(field, value, error=ValueError, minimum=None, above=None, integer=False):
    """value as a float (an int with integer) when it is a finite number (not a bool) within the bounds; else
    error(message) naming field, the value and the bound."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise error("%s: %r is not a finite number" % (field, value))
    if integer and int(value) != value:
        raise error("%s: %r is not a whole number" % (field, value))
    if minimum is not None and value < minimum:
        raise error("%s: %r is below the minimum %s" % (field, value, minimum))
    if above is not None and value <= above:
        raise error("%s: %r must be greater than %s" % (field, value, above))
    return int(value) if integer else float(value)


def whole(field, value, error=ValueError, minimum=1):
    """value as an int >= minimum, from an int or a string of digits (not a bool); else error(message) naming
    field, the value and the minimum."""
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    else:
        number = None
    if number is None or number < minimum:
        raise error("%s: %r is not a whole number >= %d" % (field, value, minimum))
    return number


def options(cls, data, error=ValueError, name="options"):
    """cls(**data) for a dataclass of settings (None or {}: its defaults): a key that is no field of cls is refused
    by name (name.key: not an option; allowed: ...), and a whole float given to an int field becomes an int (JSON
    and YAML templating give 8.0 for 8)."""
    data = dict(data or {})
    known = dataclasses.fields(cls)
    allowed = [f.name for f in known]
    unknown = sorted(set(data) - set(allowed), key=str)
    if unknown:
        raise error("%s.%s: not an option; allowed: %s" % (name, unknown[0], ", ".join(allowed)))
    for f in known:
        value = data.get(f.name)
        if f.type in (int, "int") and isinstance(value, float) and value.is_integer():
            data[f.name] = int(value)
    return cls(**data)
