# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""redis.conf edited in place: one directive a line, arguments split and quoted with Redis' own rules.

Repeated directives (save, rename-command, ...) are kept together, untouched lines stay exactly as they were, and a
changed directive replaces its line where it was; new ones are appended under a comment header.
"""

from __future__ import annotations

import re

from ansible_collections.tactician.nosql.plugins.module_utils.apply.config_base import ConfigFileError, split_lines

# Redis directives that may appear several times, each occurrence adding to the others.
REDIS_REPEATED = frozenset(
    ("save", "include", "rename-command", "user", "loadmodule", "client-output-buffer-limit", "sentinel")
)
# Directives whose occurrences are one list of arguments spread over several lines (save 900 1 / save 300 10).
_REDIS_ADDITIVE = frozenset(("save",))
# Directives that take several arguments: a string value is their argument text ("900 1", "CONFIG CONFIG-b4c1"),
# split like a redis.conf line, not one quoted word (which Redis would refuse for replicaof or rename-command).
REDIS_ARGUMENT_TEXT = frozenset(
    (
        "save",
        "bind",
        "replicaof",
        "rename-command",
        "user",
        "loadmodule",
        "client-output-buffer-limit",
        "oom-score-adj-values",
        "latency-tracking-info-percentiles",
        "sentinel",
    )
)
_REDIS_SPACE = " \t\n\r\v\f"
_REDIS_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "a": "\a"}
_REDIS_RENDER_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\a": "\\a"}
_HEX = "0123456789abcdefABCDEF"


def parse_redis_args(line):
    """Split a redis.conf line into arguments the way Redis does.

    Bare words end at white space; "double quotes" understand \\n \\r \\t \\b \\a \\xHH and \\<any>; 'single
    quotes' understand only \\'. A closing quote must be followed by white space or the end of the line.
    Raises ConfigFileError on unbalanced quotes."""
    args = []
    i = 0
    n = len(line)
    while True:
        while i < n and line[i] in _REDIS_SPACE:
            i += 1
        if i >= n:
            return args
        current = []
        in_double = in_single = False
        while True:
            if in_double:
                if i >= n:
                    raise ConfigFileError("unbalanced quotes in: %s" % line.strip())
                char = line[i]
                if char == "\\" and i + 3 < n and line[i + 1] == "x" and line[i + 2] in _HEX and line[i + 3] in _HEX:
                    current.append(chr(int(line[i + 2 : i + 4], 16)))
                    i += 3
                elif char == "\\" and i + 1 < n:
                    i += 1
                    current.append(_REDIS_ESCAPES.get(line[i], line[i]))
                elif char == '"':
                    if i + 1 < n and line[i + 1] not in _REDIS_SPACE:
                        raise ConfigFileError("closing quote must be followed by a space in: %s" % line.strip())
                    i += 1
                    break
                else:
                    current.append(char)
            elif in_single:
                if i >= n:
                    raise ConfigFileError("unbalanced quotes in: %s" % line.strip())
                char = line[i]
                if char == "\\" and i + 1 < n and line[i + 1] == "'":
                    i += 1
                    current.append("'")
                elif char == "'":
                    if i + 1 < n and line[i + 1] not in _REDIS_SPACE:
                        raise ConfigFileError("closing quote must be followed by a space in: %s" % line.strip())
                    i += 1
                    break
                else:
                    current.append(char)
            else:
                if i >= n or line[i] in _REDIS_SPACE:
                    break
                char = line[i]
                if char == '"':
                    in_double = True
                elif char == "'":
                    in_single = True
                else:
                    current.append(char)
            i += 1
        args.append("".join(current))


def _render_redis_word(word):
    if word == "":
        return '""'
    if not any(char in _REDIS_SPACE or char in "\"'" or ord(char) < 32 or ord(char) == 127 for char in word):
        return word
    out = []
    for char in word:
        if char in _REDIS_RENDER_ESCAPES:
            out.append(_REDIS_RENDER_ESCAPES[char])
        elif ord(char) < 32 or ord(char) == 127:
            out.append("\\x%02x" % ord(char))
        else:
            out.append(char)
    return '"%s"' % "".join(out)


def render_redis_value(value):
    """One directive value as redis.conf text: bool -> yes/no, None or "" -> "", a list -> its items rendered
    and joined with spaces; a string with white space, quotes or control characters is double-quoted with
    escapes, so parse_redis_args() gives it back unchanged."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return '""'
    if isinstance(value, (list, tuple)):
        return " ".join(render_redis_value(item) for item in value)
    if isinstance(value, (int, float)):
        return str(value)
    return _render_redis_word(str(value))


def _redis_value_string(args):
    """The value of one directive line: its only argument as is, several arguments as redis.conf text."""
    if len(args) == 1:
        return args[0]
    return " ".join(_render_redis_word(arg) for arg in args)


def redis_canonical(name):
    """Directive name as Redis resolves it: case-insensitive, old aliases (slave, ziplist) folded."""
    return name.lower().replace("slave", "replica").replace("ziplist", "listpack")


def _redis_lines(text):
    """[(line index, directive as written (lowercase), canonical name, args)] of the directive lines."""
    entries = []
    for index, line in enumerate(split_lines(text)):
        stripped = line.strip(" \t\r\n")
        if not stripped or stripped.startswith("#"):
            continue
        try:
            args = parse_redis_args(stripped)
        except ConfigFileError as exc:
            raise ConfigFileError("line %d: %s" % (index + 1, exc)) from exc
        if args:
            entries.append((index, args[0].lower(), redis_canonical(args[0]), args[1:]))
    return entries


def redis_current(text):
    values = {}
    for _index, name, canonical, args in _redis_lines(text):
        if canonical in REDIS_REPEATED:
            values.setdefault(name, []).append(_redis_value_string(args))
        else:
            values[name] = _redis_value_string(args)
    return values


def _redis_new_values(key, value):
    """(list of line values, rendered texts) for a directive: a list on a repeated directive is one line per
    item; anything else is one line."""
    canonical = redis_canonical(key)
    if canonical in REDIS_REPEATED:
        items = list(value) if isinstance(value, (list, tuple)) else [value]
    else:
        items = [value]
    rendered = []
    for item in items:
        if isinstance(item, str) and canonical in REDIS_ARGUMENT_TEXT:
            try:
                args = parse_redis_args(item)
            except ConfigFileError as exc:
                raise ConfigFileError("%s: %s" % (key, exc)) from exc
            rendered.append(" ".join(_render_redis_word(arg) for arg in args) if args else '""')
        else:
            rendered.append(render_redis_value(item))
    return [_redis_value_string(parse_redis_args(text)) for text in rendered], rendered


def _redis_same(key, old, new):
    if redis_canonical(key) in _REDIS_ADDITIVE and isinstance(old, list) and isinstance(new, list):
        return " ".join(old) == " ".join(new)
    return old == new


def edit_redis(text, settings, remove, keep, equal):
    lines = split_lines(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"  # only written when something changes
    by_name = {}
    for index, _name, canonical, args in _redis_lines(text):
        by_name.setdefault(canonical, []).append((index, args))
    keep = {redis_canonical(key) for key in keep}
    replaced = {}  # line index -> replacement text ("" removes the line)
    appended = []
    changes = {}

    def current(canonical):
        occurrences = by_name.get(canonical, [])
        if not occurrences:
            return None
        if canonical in REDIS_REPEATED:
            return [_redis_value_string(args) for _index, args in occurrences]
        return _redis_value_string(occurrences[-1][1])

    for key in remove:
        canonical = redis_canonical(key)
        if canonical in keep or canonical not in by_name:
            continue
        changes[key] = {"before": current(canonical), "after": None}
        for index, _args in by_name[canonical]:
            replaced[index] = ""
    for key, value in settings.items():
        canonical = redis_canonical(key)
        if canonical in keep:
            continue
        values, rendered = _redis_new_values(key, value)
        repeated = canonical in REDIS_REPEATED
        old = current(canonical)
        new = values if repeated else values[0]
        if old is not None and equal(key, old, new):
            continue
        if old is None and repeated and not values:
            continue
        new_lines = ["%s %s\n" % (key, text_value) for text_value in rendered]
        occurrences = by_name.get(canonical, [])
        if occurrences:
            # single-valued: the last occurrence counts, earlier duplicates go; repeated: all at the first's place
            at = occurrences[0][0] if repeated else occurrences[-1][0]
            indent = re.match(r"[ \t]*", lines[at]).group(0)
            for index, _args in occurrences:
                replaced[index] = ""
            replaced[at] = "".join(indent + line for line in new_lines)
        else:
            appended.extend(new_lines)
        changes[key] = {"before": old, "after": new}
    if not changes:
        return text, {}
    out = [replaced.get(index, line) for index, line in enumerate(lines)]
    out.extend(appended)
    return "".join(out), changes


def redis_equal(key, old, new):
    return _redis_same(key, old, new)
