# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""What the config-file editors share: their error, the optional ruamel.yaml import, and small helpers."""

from __future__ import annotations

from ansible_collections.tactician.nosql.plugins.module_utils.core import imports
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import ApplyError


class ConfigFileError(ApplyError):
    """A config file could not be read, parsed, edited or written."""


def missing_libraries():
    """[(package, reason)] when ruamel.yaml (the yaml format's editor) cannot be imported."""
    return imports.missing("ruamel.yaml")


def require_ruamel():
    imports.require("ruamel.yaml", ConfigFileError, "the yaml format")


def split_lines(text):
    """Lines with their "\\n" (only "\\n" ends a line, as for Redis and YAML)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def comment_header(header):
    if not header:
        return ""
    lines = []
    for line in str(header).splitlines():
        lines.append(line if line.startswith("#") else ("# " + line).rstrip())
    return "\n".join(lines) + "\n"


def is_kept_key(key, keep):
    for kept in keep:
        if key == kept or key.startswith(kept + ".") or kept.startswith(key + "."):
            return True
    return False


def same_value(left, right):
    """Equality that keeps YAML types apart: 16 and "16" differ, so do 1 and true; 1 and 1.0 are equal."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same_value(left[key], right[key]) for key in left)
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(same_value(a, b) for a, b in zip(left, right, strict=True))
    if left is None or right is None:
        return left is None and right is None
    return isinstance(left, type(right)) and isinstance(right, type(left)) and left == right
