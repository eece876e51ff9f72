# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Values from templates as plain Python data, for the engine's functions (controller side only)."""

from __future__ import annotations

import json


def plain(value):
    """value as plain dicts, lists, strings, numbers, booleans and None.

    Templates hand plugins their own subclasses (tagged strings, lazy containers); the engine's checks compare
    exact types (a schema's enum, a bool that must not pass as an int), so plugins give it plain data. Values JSON
    cannot hold (a date YAML read) become their text."""
    return json.loads(json.dumps(value, default=str))
