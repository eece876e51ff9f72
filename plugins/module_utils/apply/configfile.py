# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Edit server config files in place, keeping their comments, key order and layout.

Two formats: ``yaml`` (cassandra.yaml, mongod.conf; nested keys are addressed with dotted paths such as
``storage.wiredTiger.engineConfig.cacheSizeGB``) and ``redis`` (redis.conf: one directive a line, arguments
split with Redis' own quoting rules).

YAML goes through ruamel.yaml's round-trip mode with the file's own indentation. The edited document is then
merged back into the original text line by line, so lines the edit did not touch stay exactly as they were
(even where ruamel would normalise them, such as ``True`` or ``key :  value``), and comment lines that followed a
removed or replaced key stay in place. The merge is checked by loading it again; when it does not load to the
edited document the plain ruamel output is used instead.

The tuned-state file next to a config file (``<config>.tuned.json``) lists the keys a tuner set on this node, so
that the node roles leave them alone.
"""

from __future__ import annotations

import copy
import datetime
import difflib
import hashlib
import io
import json
import os
import re
import shutil
import stat
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import ApplyError

try:
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.error import YAMLError
    from ruamel.yaml.nodes import MappingNode, ScalarNode
    from ruamel.yaml.scalarbool import ScalarBoolean
    from ruamel.yaml.scalarstring import ScalarString, SingleQuotedScalarString

    HAS_RUAMEL = True
    RUAMEL_IMPORT_ERROR = None
except ImportError:
    HAS_RUAMEL = False
    RUAMEL_IMPORT_ERROR = traceback.format_exc()

    class YAMLError(Exception):
        pass


FORMATS = ("yaml", "redis")

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
# Words YAML 1.1 readers (SnakeYAML in Cassandra) take as booleans: new string values equal to one are quoted.
_YAML11_BOOL = re.compile(r"^(y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF)$")
_WIDTH = 1 << 30


class ConfigFileError(ApplyError):
    """A config file could not be read, parsed, edited or written."""


@dataclass
class EditResult:
    """Outcome of edit(): the new text, whether it differs, and key -> {before, after} of every change."""

    text: str
    changed: bool
    changes: dict = field(default_factory=dict)


def missing_libraries():
    return [] if HAS_RUAMEL else [("ruamel.yaml", RUAMEL_IMPORT_ERROR)]


def _require_ruamel():
    if not HAS_RUAMEL:
        raise ConfigFileError("the yaml format needs the Python library ruamel.yaml")


# Files -----------------------------------------------------------------------------------------------------


def read_text(path):
    """The file's text (line endings and undecodable bytes kept as they are), None when it does not exist."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigFileError("cannot read %s: %s" % (path, exc)) from exc


def _parse_mode(mode):
    if mode is None:
        return None
    if isinstance(mode, int) and not isinstance(mode, bool):
        value = mode
    elif isinstance(mode, str) and re.match(r"^0?o?[0-7]{3,4}$", mode.strip()):
        value = int(mode.strip().replace("o", ""), 8)
    else:
        raise ConfigFileError("mode must be an octal number such as '0644', got %r" % (mode,))
    if value > 0o7777:
        raise ConfigFileError("mode must be an octal number such as '0644', got %r" % (mode,))
    return value


def _default_mode():
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _backup_name(path):
    stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime())
    name = "%s.%s~" % (path, stamp)
    counter = 0
    while os.path.lexists(name):
        counter += 1
        name = "%s.%s-%d~" % (path, stamp, counter)
    return name


def write_atomic(path, text, mode=None, backup=False):
    """Write text to path through a temporary file in the same directory and os.replace.

    An existing file keeps its mode (and owner when allowed); a new one gets `mode` (octal string or int) or the
    umask default. A symbolic link is followed, so the link stays and its target is rewritten. With backup=True
    an existing file is first copied to "<path>.<YYYYmmddTHHMMSS>~" ("-N" is added before "~" when that name is
    taken); returns the backup's path, else None."""
    wanted_mode = _parse_mode(mode)
    target = os.path.realpath(path)
    directory = os.path.dirname(target) or "."
    try:
        current = os.stat(target)
    except FileNotFoundError:
        current = None
    except OSError as exc:
        raise ConfigFileError("cannot stat %s: %s" % (path, exc)) from exc
    if current is not None and not stat.S_ISREG(current.st_mode):
        raise ConfigFileError("%s is not a regular file" % path)
    backup_file = None
    tmp = None
    try:
        if backup and current is not None:
            backup_file = _backup_name(target)
            shutil.copy2(target, backup_file)
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(target) + ".", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if current is not None:
            os.chmod(tmp, stat.S_IMODE(current.st_mode))
            try:
                os.chown(tmp, current.st_uid, current.st_gid)
            except OSError:
                pass  # not allowed to give the file away: it stays ours
        else:
            os.chmod(tmp, wanted_mode if wanted_mode is not None else _default_mode())
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise ConfigFileError("cannot write %s: %s" % (path, exc)) from exc
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    return backup_file


def edit_file(
    path,
    fmt,
    settings,
    remove=(),
    keep=(),
    equal=None,
    header=None,
    create=True,
    check_mode=False,
    backup=False,
    mode=None,
):
    """Edit the file at path (see edit()) and write it when it changes; nothing is touched in check mode.

    Returns dict(changed, changes, backup_file, diff=dict(before, after, before_header, after_header)).
    A missing file is created (starting with `header`) unless create is False, which fails."""
    _parse_mode(mode)
    text = read_text(path)
    if text is None and not create:
        raise ConfigFileError("%s does not exist (and create is false)" % path)
    result = edit(text, fmt, settings, remove=remove, keep=keep, equal=equal, header=header)
    backup_file = None
    if result.changed and not check_mode:
        backup_file = write_atomic(path, result.text, mode=mode, backup=backup)
    return dict(
        changed=result.changed,
        changes=result.changes,
        backup_file=backup_file,
        diff=dict(before=text or "", after=result.text, before_header=path, after_header=path),
    )


def config_digest(paths):
    """sha256 (hex) over the files' bytes, in the given order; a missing file counts as an empty one.

    Each file's content is preceded by its length, so bytes moving from one file to the next change the digest."""
    digest = hashlib.sha256()
    for path in paths:
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            data = b""
        except OSError as exc:
            raise ConfigFileError("cannot read %s: %s" % (path, exc)) from exc
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


# Tuned state -----------------------------------------------------------------------------------------------


def tuned_state_path(config_path):
    return "%s.tuned.json" % config_path


def read_tuned_state(config_path):
    """{} when there is no tuned-state file, else {"settings": {key: value}, "updated": ISO time}."""
    path = tuned_state_path(config_path)
    text = read_text(path)
    if text is None:
        return {}
    try:
        state = json.loads(text)
    except ValueError as exc:
        raise ConfigFileError("%s is not valid JSON: %s" % (path, exc)) from exc
    if not isinstance(state, dict) or not isinstance(state.get("settings", {}), dict):
        raise ConfigFileError('%s must hold an object with a "settings" object' % path)
    state.setdefault("settings", {})
    return state


def write_tuned_state(config_path, settings, check_mode=False):
    """Merge settings (key -> value; None drops the key) into the tuned-state file. True when it changed.

    The file is written atomically with the config file's mode; "updated" moves only when something changed."""
    if not isinstance(settings, dict):
        raise ConfigFileError("tuned settings must be a mapping of key to value")
    state = read_tuned_state(config_path)
    current = dict(state.get("settings", {}))
    merged = dict(current)
    for key, value in settings.items():
        if value is None:
            merged.pop(str(key), None)
        else:
            merged[str(key)] = value
    if merged == current and state:
        return False
    if not state and not merged:
        return False
    if check_mode:
        return True
    state = dict(state, settings=merged, updated=datetime.datetime.now(datetime.UTC).isoformat())
    mode = None
    try:
        mode = stat.S_IMODE(os.stat(config_path).st_mode)
    except OSError:
        pass
    write_atomic(tuned_state_path(config_path), json.dumps(state, indent=2, sort_keys=True) + "\n", mode=mode)
    return True


# Redis -----------------------------------------------------------------------------------------------------


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


def _redis_canonical(name):
    """Directive name as Redis resolves it: case-insensitive, old aliases (slave, ziplist) folded."""
    return name.lower().replace("slave", "replica").replace("ziplist", "listpack")


def _split_lines(text):
    """Lines with their "\\n" (only "\\n" ends a line, as for Redis and YAML)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _redis_lines(text):
    """[(line index, directive as written (lowercase), canonical name, args)] of the directive lines."""
    entries = []
    for index, line in enumerate(_split_lines(text)):
        stripped = line.strip(" \t\r\n")
        if not stripped or stripped.startswith("#"):
            continue
        try:
            args = parse_redis_args(stripped)
        except ConfigFileError as exc:
            raise ConfigFileError("line %d: %s" % (index + 1, exc)) from exc
        if args:
            entries.append((index, args[0].lower(), _redis_canonical(args[0]), args[1:]))
    return entries


def _redis_current(text):
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
    canonical = _redis_canonical(key)
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
    if _redis_canonical(key) in _REDIS_ADDITIVE and isinstance(old, list) and isinstance(new, list):
        return " ".join(old) == " ".join(new)
    return old == new


def _comment_header(header):
    if not header:
        return ""
    lines = []
    for line in str(header).splitlines():
        lines.append(line if line.startswith("#") else ("# " + line).rstrip())
    return "\n".join(lines) + "\n"


def _kept(key, keep):
    for kept in keep:
        if key == kept or key.startswith(kept + ".") or kept.startswith(key + "."):
            return True
    return False


def _edit_redis(text, settings, remove, keep, equal):
    lines = _split_lines(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"  # only written when something changes
    by_name = {}
    for index, _name, canonical, args in _redis_lines(text):
        by_name.setdefault(canonical, []).append((index, args))
    keep = {_redis_canonical(key) for key in keep}
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
        canonical = _redis_canonical(key)
        if canonical in keep or canonical not in by_name:
            continue
        changes[key] = {"before": current(canonical), "after": None}
        for index, _args in by_name[canonical]:
            replaced[index] = ""
    for key, value in settings.items():
        canonical = _redis_canonical(key)
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


# YAML ------------------------------------------------------------------------------------------------------


def _plain(value):
    """A ruamel value as plain Python (dict, list, str, int, float, bool, None); dates become ISO text."""
    if isinstance(value, dict):
        return {_plain(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, bool) or (HAS_RUAMEL and isinstance(value, ScalarBoolean)):
        return bool(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return value


def _same(left, right):
    """Equality that keeps YAML types apart: 16 and "16" differ, so do 1 and true; 1 and 1.0 are equal."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[key], right[key]) for key in left)
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right, strict=True))
    if left is None or right is None:
        return left is None and right is None
    return isinstance(left, type(right)) and isinstance(right, type(left)) and left == right


def _yaml_equal(_key, old, new):
    return _same(_plain(old), _plain(new))


def _redis_equal(key, old, new):
    return _redis_same(key, old, new)


def _detect_indent(root):
    """(mapping, sequence, offset) indentation most used by the block collections of a loaded document."""
    maps = Counter()
    seqs = Counter()
    stack = [root]
    while stack:
        current = stack.pop()
        if isinstance(current, CommentedMap):
            for key, value in current.items():
                key_line, key_column = current.lc.key(key)
                if isinstance(value, CommentedMap) and value and not value.fa.flow_style():
                    if value.lc.line > key_line:
                        maps[value.lc.col - key_column] += 1
                elif isinstance(value, CommentedSeq) and value and not value.fa.flow_style():
                    if value.lc.line > key_line:
                        dash = value.lc.col - key_column
                        content = value.lc.item(0)[1] - key_column
                        if dash >= 0 and content >= dash + 2:
                            seqs[(content, dash)] += 1
                stack.append(value)
        elif isinstance(current, CommentedSeq):
            stack.extend(current)
    mapping = maps.most_common(1)[0][0] if maps else 2
    mapping = mapping if mapping >= 1 else 2
    sequence, offset = seqs.most_common(1)[0][0] if seqs else (max(mapping, 2), 0)
    return mapping, sequence, offset


def _new_yaml():
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = _WIDTH
    return yaml


def _yaml_load(yaml, text):
    try:
        return yaml.load(text)
    except YAMLError as exc:
        raise ConfigFileError("not valid YAML: %s" % exc) from exc


def _yaml_setup(yaml, text, root):
    """Give yaml the indentation and document start of text (whose document is root)."""
    if isinstance(root, (CommentedMap, CommentedSeq)):
        mapping, sequence, offset = _detect_indent(root)
        yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    for line in _split_lines(text):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            yaml.explicit_start = stripped == "---" or stripped.startswith("--- ")
            break
    return yaml


def _yaml_parse(text):
    """(configured YAML object, document root) for text, with the file's indentation and document start."""
    _require_ruamel()
    yaml = _new_yaml()
    root = _yaml_load(yaml, text)
    return _yaml_setup(yaml, text, root), root


def _yaml_dump(yaml, data):
    buffer = io.StringIO()
    yaml.dump(data, buffer)
    return buffer.getvalue()


def _yaml_roundtrip(text):
    """Load and dump text with the engine's settings and no change (what an edit starts from)."""
    yaml, root = _yaml_parse(text)
    return _yaml_dump(yaml, root)


def _flatten(mapping, prefix, out):
    for key, value in mapping.items():
        path = "%s%s" % (prefix, key)
        out[path] = _plain(value)
        if isinstance(value, dict):
            _flatten(value, path + ".", out)


def _to_yaml(value, old=None):
    """A value from the caller as ruamel data of the same shape, keeping the old scalar's quoting style."""
    if isinstance(value, dict):
        converted = CommentedMap()
        for key, item in value.items():
            converted[key] = _to_yaml(item)
        return converted
    if isinstance(value, (list, tuple)):
        return CommentedSeq(_to_yaml(item) for item in value)
    if isinstance(value, str) and not isinstance(value, ScalarString):
        if isinstance(old, ScalarString):
            return type(old)(value)
        if _YAML11_BOOL.match(value):
            return SingleQuotedScalarString(value)
    return value


def _assign(container, key, value):
    """container[key] = value, changing a mapping or sequence in place where old and new have the same shape,
    so the comments and quoting inside it stay with the entries that do not change."""
    old = container[key]
    if isinstance(old, dict) and isinstance(value, dict):
        for name in [name for name in old if name not in value]:
            del old[name]
        for name, item in value.items():
            if name in old:
                _assign(old, name, item)
            else:
                old[name] = _to_yaml(item)
    elif isinstance(old, list) and isinstance(value, (list, tuple)):
        while len(old) > len(value):
            del old[len(old) - 1]
        for index, item in enumerate(value):
            if index < len(old):
                _assign(old, index, item)
            else:
                old.append(_to_yaml(item))
    elif not _same(_plain(old), _plain(value)):
        container[key] = _to_yaml(value, old)


def _locate(root, key):
    """(parent mapping, last key) of a dotted path, or (None, None) when some part of it is absent.

    A top-level key that contains dots itself is taken literally."""
    if key in root:
        return root, key
    parts = key.split(".")
    node = root
    for depth, part in enumerate(parts[:-1]):
        if part not in node:
            return None, None
        child = node[part]
        if child is None:
            return None, None
        if not isinstance(child, dict):
            raise ConfigFileError(
                "%s: %s is a %s, not a mapping" % (key, ".".join(parts[: depth + 1]), type(_plain(child)).__name__)
            )
        node = child
    return (node, parts[-1]) if parts[-1] in node else (None, None)


def _create_path(root, key):
    parts = key.split(".")
    node = root
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = CommentedMap()
            node[part] = child
        node = child
    return node, parts[-1]


def _is_note(line):
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _indent_of(line):
    return len(line) - len(line.lstrip(" ")) if line.strip() else 0


_KEY_LINE = re.compile(r"^(\s*(?:-\s+)*)([^\s#][^#]*?)\s*:(?:\s|$)")


def _key_prefix(line):
    """Indentation, dashes and key of a "key: value" line, None for other lines."""
    match = _KEY_LINE.match(line)
    return (match.group(1), match.group(2)) if match else None


def _notes_blocks(removed):
    """[(notes before a content line, that content line)] and the notes after the last content line."""
    blocks = []
    notes = []
    for line in removed:
        if _is_note(line):
            notes.append(line)
        else:
            blocks.append((notes, line))
            notes = []
    return blocks, notes


def _contains(lines, block):
    size = len(block)
    return any(lines[start : start + size] == block for start in range(len(lines) - size + 1))


def _tidy_removal(removed, replacement):
    """Deleted keys: comment lines before another deleted key of the same level, and those after the last deleted
    line, stay (they describe what follows); comments inside a deleted value go with it."""
    blocks, tail = _notes_blocks(removed)
    if not blocks:
        return replacement
    level = min(_indent_of(line) for _notes, line in blocks)
    kept = []
    for notes, line in blocks:
        if notes and _indent_of(line) <= level:
            kept.extend(notes)
    return replacement + kept + tail


def _tidy_replacement(removed, replacement):
    """Replaced values: a comment block before a key that the new value has too goes before that key again; the
    comment lines after the old value stay after the new one."""
    blocks, tail = _notes_blocks(removed)
    if not blocks:
        return replacement
    before = {}
    pointer = 0
    for notes, line in blocks:
        prefix = _key_prefix(line)
        if prefix is None:
            continue
        for index in range(pointer, len(replacement)):
            if _key_prefix(replacement[index]) == prefix:
                if notes and not _contains(replacement, notes):
                    before.setdefault(index, []).extend(notes)
                pointer = index + 1
                break
    out = []
    for index, line in enumerate(replacement):
        out.extend(before.get(index, []))
        out.append(line)
    if tail and not _contains(replacement, tail):
        out.extend(tail)
    return out


def _sink_notes(lines):
    """Comment blocks go below the lines indented deeper than them that follow: ruamel writes entries added to
    a mapping after the comments that describe the next key of an outer level."""
    out = []
    index = 0
    while index < len(lines):
        if not _is_note(lines[index]):
            out.append(lines[index])
            index += 1
            continue
        end = index
        while end < len(lines) and _is_note(lines[end]):
            end += 1
        block = lines[index:end]
        comments = [line for line in block if line.strip()]
        deeper = end
        if comments:
            level = min(_indent_of(line) for line in comments)
            while deeper < len(lines) and not _is_note(lines[deeper]) and _indent_of(lines[deeper]) > level:
                deeper += 1
        out.extend(lines[end:deeper])
        out.extend(block)
        index = deeper
    return out


def _coalesce(opcodes, base):
    """The changed ranges (i1, i2, j1, j2) of difflib opcodes, where changes separated only by blank and comment
    lines count as one (ruamel moves comments, which splits one change in two)."""
    ranges = []
    gap = None
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            gap = (i1, i2) if ranges and all(_is_note(line) for line in base[i1:i2]) else None
            continue
        if gap is not None and ranges and ranges[-1][1] == gap[0]:
            ranges[-1] = (ranges[-1][0], i2, ranges[-1][2], j2)
        else:
            ranges.append((i1, i2, j1, j2))
        gap = None
    return ranges


def _hunks(base, new, kind):
    """Changes from the unedited dump to the edited one: [(start, end, replacement lines)] over base lines.

    kind (remove, replace, add) picks how comment lines ruamel moved or dropped are put back; None keeps the
    plain difference."""
    hunks = []
    previous_end = 0
    for i1, i2, j1, j2 in _coalesce(difflib.SequenceMatcher(None, base, new, autojunk=False).get_opcodes(), base):
        removed = base[i1:i2]
        replacement = list(new[j1:j2])
        if kind == "remove":
            replacement = _tidy_removal(removed, replacement)
        elif kind == "replace":
            replacement = _sink_notes(_tidy_replacement(removed, replacement))
        elif kind == "add" and i1 == i2:
            # lines added to a nested mapping go above the comments of the outer level that follow it
            indents = [_indent_of(line) for line in replacement if not _is_note(line)]
            depth = min(indents) if indents else 0
            while depth and i1 > previous_end and _is_note(base[i1 - 1]) and _indent_of(base[i1 - 1]) < depth:
                i1 -= 1
            i2 = i1
        elif kind == "add":
            replacement = _sink_notes(_tidy_replacement(removed, replacement))
        hunks.append((i1, i2, replacement))
        previous_end = i2
    return hunks


def _merge(text_lines, base, hunks):
    """Apply hunks (over base lines) to text lines, where base is ruamel's rendering of text."""
    covered = set()
    starts = {}
    for number, (i1, i2, _replacement) in enumerate(hunks):
        covered.update(range(i1, i2))
        starts.setdefault(i1, []).append(number)
    inner = {i1 for i1, i2, _replacement in hunks if i1 == i2}
    done = set()
    out = []

    def emit_at(position):
        for number in starts.get(position, []):
            if number not in done:
                done.add(number)
                out.extend(hunks[number][2])

    for tag, a1, a2, b1, b2 in difflib.SequenceMatcher(None, base, text_lines, autojunk=False).get_opcodes():
        if tag == "equal":
            for step in range(a2 - a1):
                emit_at(a1 + step)
                if a1 + step not in covered:
                    out.append(text_lines[b1 + step])
        elif a1 == a2:
            out.extend(text_lines[b1:b2])
        elif any(a in covered for a in range(a1, a2)) or any(a1 < a < a2 for a in inner):
            for a in range(a1, a2):
                emit_at(a)
                if a not in covered:
                    out.append(base[a])
        else:
            emit_at(a1)
            out.extend(text_lines[b1:b2])
    emit_at(len(base))
    for index in range(len(out) - 1):
        if not out[index].endswith("\n"):
            out[index] += "\n"
    return "".join(out)


def _load_checked(text, expected):
    """The document of text when it loads to `expected` (plain values), else None."""
    try:
        root = _new_yaml().load(text)
    except YAMLError:
        return None
    return root if _same(_plain(root), expected) else None


def _yaml_phase(text, root, kind, mutate):
    """One kind of change to root, the document of text: mutate(root) edits it and returns the changes made.

    The edited document is merged into text (see _merge) with the comment rules of `kind`; when the merge
    does not load to the edited document, it is tried without them, then ruamel's own output is taken.
    Returns (text, its document, changes)."""
    # ruamel marks comments as written while it dumps: the unedited rendering is made from a copy
    unedited = copy.deepcopy(root)
    changes = mutate(root)
    if not changes:
        return text, root, changes
    yaml = _yaml_setup(_new_yaml(), text, unedited)
    base_lines = _split_lines(_yaml_dump(yaml, unedited))
    expected = _plain(root)
    edited = _yaml_dump(yaml, root)
    edited_lines = _split_lines(edited)
    text_lines = _split_lines(text)
    for rules in (kind, None):
        merged = _merge(text_lines, base_lines, _hunks(base_lines, edited_lines, rules))
        loaded = _load_checked(merged, expected)
        if loaded is not None:
            return merged, loaded, changes
    return edited, _yaml_load(_new_yaml(), edited), changes


def _find_node(document, key):
    """(key node, value node) of a key path in a composed document, None when absent."""
    if not isinstance(document, MappingNode):
        return None
    for key_node, value_node in document.value:
        if isinstance(key_node, ScalarNode) and key_node.value == key:
            return key_node, value_node
    node = document
    parts = key.split(".")
    for depth, part in enumerate(parts):
        if not isinstance(node, MappingNode):
            return None
        found = None
        for key_node, value_node in node.value:
            if isinstance(key_node, ScalarNode) and key_node.value == part:
                found = key_node, value_node
        if found is None or depth == len(parts) - 1:
            return found
        node = found[1]
    return None


def _render_scalar(value, old):
    """value as the text of a one-line YAML scalar (old's quoting kept), None when it is not one."""
    if value is None or isinstance(value, (dict, list, tuple)) or isinstance(old, (dict, list)):
        return None
    data = CommentedMap()
    data["k"] = _to_yaml(value, old)
    text = _yaml_dump(_new_yaml(), data)
    if not text.startswith("k: ") or text.count("\n") != 1:
        return None
    return text[3:-1]


def _scalar_span(text, document, key):
    """(start, end, prefix) of the text to replace for the one-line scalar value of key, None if it is not one.

    An empty value ("key:") gives the position after the colon and prefix " "."""
    found = _find_node(document, key)
    if found is None:
        return None
    key_node, value_node = found
    if not isinstance(value_node, ScalarNode) or value_node.style in ("|", ">"):
        return None
    start, end = value_node.start_mark.index, value_node.end_mark.index
    if start == end:
        position = key_node.end_mark.index
        while position < len(text) and text[position] in " \t":
            position += 1
        if position >= len(text) or text[position] != ":":
            return None
        return position + 1, position + 1, " "
    if value_node.start_mark.line != value_node.end_mark.line:
        return None
    return start, end, ""


def _replacements(text, root, settings, equal):
    """Replace the values of the present keys. One-line scalars are spliced into the text where the old value
    was (same line, same comment); the others go through ruamel (see _yaml_phase), changed in place.
    Returns (text, its document, changes)."""
    changes = {}
    wanted = {}
    for key, value in settings.items():
        parent, name = _locate(root, key)
        if parent is not None and not equal(key, _plain(parent[name]), value):
            changes[key] = {"before": _plain(parent[name]), "after": _plain(value)}
            wanted[key] = value
    if not wanted:
        return text, root, {}
    document = _new_yaml().compose(text)
    spans = []
    for key, value in wanted.items():
        parent, name = _locate(root, key)
        rendered = _render_scalar(value, parent[name])
        span = _scalar_span(text, document, key) if rendered is not None else None
        if span is not None:
            spans.append((span[0], span[1], span[2] + rendered, key))
    spliced_keys = set()
    if spans:
        spliced = text
        for start, end, rendered, _key in sorted(spans, reverse=True):
            spliced = spliced[:start] + rendered + spliced[end:]
        for _start, _end, _rendered, key in spans:
            parent, name = _locate(root, key)
            _assign(parent, name, wanted[key])
        loaded = _load_checked(spliced, _plain(root))
        if loaded is not None:
            text, root = spliced, loaded
            spliced_keys = {key for _start, _end, _rendered, key in spans}
        else:  # the splice did not give the edited document: all of them through ruamel
            root = _yaml_load(_new_yaml(), text)
    rest = {key: value for key, value in wanted.items() if key not in spliced_keys}
    if not rest:
        return text, root, changes

    def replace(root):
        for key, value in rest.items():
            parent, name = _locate(root, key)
            _assign(parent, name, value)
        return {key: changes[key] for key in rest}

    text, root, _done = _yaml_phase(text, root, "replace", replace)
    return text, root, changes


def _edit_yaml(text, settings, remove, keep, equal, header):
    source = text if text is not None else _comment_header(header)
    yaml, root = _yaml_parse(source)
    if root is not None and not isinstance(root, dict):
        raise ConfigFileError("the top level of the file must be a mapping, not a %s" % type(_plain(root)).__name__)
    settings = {key: value for key, value in settings.items() if not _kept(key, keep)}
    remove = [key for key in remove if not _kept(key, keep)]
    paths = sorted(set(settings) | set(remove))
    for index, path in enumerate(paths):
        for other in paths[index + 1 :]:
            if other.startswith(path + "."):
                raise ConfigFileError("%s and %s overlap: give one or the other" % (path, other))
    if root is None:
        # nothing but comments (or nothing): the new keys follow them
        root = CommentedMap()
        for key, value in settings.items():
            parent, name = _create_path(root, key)
            parent[name] = _to_yaml(value)
        if not root:
            return source, {}
        separator = "" if not source or source.endswith("\n") else "\n"
        changes = {key: {"before": None, "after": _plain(value)} for key, value in settings.items()}
        return source + separator + _yaml_dump(yaml, root), changes

    def removals(root):
        changes = {}
        for key in remove:
            parent, name = _locate(root, key)
            if parent is not None:
                changes[key] = {"before": _plain(parent[name]), "after": None}
                del parent[name]
        return changes

    def additions(root):
        changes = {}
        for key, value in settings.items():
            parent, name = _locate(root, key)
            if parent is None:
                parent, name = _create_path(root, key)
                parent[name] = _to_yaml(value)
                changes[key] = {"before": None, "after": _plain(value)}
        return changes

    changes = {}
    if any(_locate(root, key)[0] is not None for key in remove):
        source, root, changes = _yaml_phase(source, root, "remove", removals)
    source, root, replaced = _replacements(source, root, settings, equal)
    changes.update(replaced)
    if any(_locate(root, key)[0] is None for key in settings):
        source, root, added = _yaml_phase(source, root, "add", additions)
        changes.update(added)
    return source, changes


# Both formats ----------------------------------------------------------------------------------------------


def is_kept(fmt, key, keep):
    """Whether edit() leaves key alone because of `keep` (yaml: the path, one above or below it; redis: the
    directive, case and old aliases ignored)."""
    if fmt == "redis":
        canonical = _redis_canonical(key)
        return any(_redis_canonical(kept) == canonical for kept in keep)
    return _kept(key, keep)


def kept_report(text, fmt, settings, remove, keep, tuned):
    """The keys of settings and remove that edit() leaves alone, so the conflict can be shown:
    key -> {requested (None: removal), kept (the value in the file), reason (tuned or keep), tuned (the
    value the tuned-state file records, when the reason is tuned)}. tuned: the tuned-state settings."""
    _check_format(fmt)
    report = {}
    wanted = [(key, settings[key]) for key in settings] + [(key, None) for key in remove]
    current = None
    for key, requested in wanted:
        if is_kept(fmt, key, keep):
            reason = "keep"
        elif is_kept(fmt, key, list(tuned)):
            reason = "tuned"
        else:
            continue
        if current is None:
            current = current_values(text, fmt) if text else {}
        entry = {"requested": requested, "kept": current.get(key.lower() if fmt == "redis" else key), "reason": reason}
        if reason == "tuned":
            owners = [name for name in tuned if is_kept(fmt, key, [name])]
            entry["tuned"] = {name: tuned[name] for name in owners}
        report[key] = entry
    return report


def _check_format(fmt):
    if fmt not in FORMATS:
        raise ConfigFileError("format must be one of %s, got %r" % (", ".join(FORMATS), fmt))


def current_values(text, fmt):
    """Every key of the file and its value.

    yaml: top-level keys and the dotted path of every key of a nested mapping (plain Python values);
    redis: directive (lowercase) -> value text of its last occurrence, or the list of the values of every
    occurrence for directives that repeat (save, include, rename-command, user, loadmodule, ...)."""
    _check_format(fmt)
    if not text:
        return {}
    text = text.replace("\r\n", "\n")
    if fmt == "redis":
        return _redis_current(text)
    _yaml, root = _yaml_parse(text)
    if root is None:
        return {}
    if not isinstance(root, dict):
        raise ConfigFileError("the top level of the file must be a mapping, not a %s" % type(_plain(root)).__name__)
    values = {}
    _flatten(root, "", values)
    return values


def edit(text, fmt, settings, remove=(), keep=(), equal=None, header=None):
    """Set, add and remove keys of a config file's text, keeping everything else as it is.

    settings: key (yaml dotted path, redis directive) -> value; a present key is replaced where it is (comments
    around it and, for yaml, on its line kept), an absent one is added at the end (yaml: inside its parent
    mapping, created when missing). remove: keys to delete. keep: keys never touched (for yaml a kept path also
    protects the paths below and above it). equal(key, old, new) -> True when the current value `old` already
    is `new` (default: yaml compares values with their types, 16 differs from "16"; redis compares the value
    text, so 100mb equals "100mb"). text None: a new file starting with `header` as comment lines.

    Redis: the last occurrence of a directive counts; when it changes it is rewritten there and earlier
    duplicates are dropped. Directives that repeat (save, include, ...) take a list, one line per item,
    replacing all their lines at the place of the first. Values are written with render_redis_value(), except
    that a string given to a directive of several arguments (REDIS_ARGUMENT_TEXT: save, bind, replicaof,
    rename-command, user, ...) is its argument text, split like a redis.conf line ("CONFIG CONFIG-b4c1").
    """
    _check_format(fmt)
    if not isinstance(settings, dict):
        raise ConfigFileError("settings must be a mapping of key to value")
    for key in list(settings) + list(remove) + list(keep):
        if not isinstance(key, str) or not key.strip():
            raise ConfigFileError("keys must be non-empty strings, got %r" % (key,))
    both = set(settings) & set(remove)
    if both:
        raise ConfigFileError("keys both set and removed: %s" % ", ".join(sorted(both)))
    if equal is None:
        equal = _yaml_equal if fmt == "yaml" else _redis_equal
    crlf = text is not None and "\r\n" in text
    work = text.replace("\r\n", "\n") if crlf else text
    if fmt == "yaml":
        new_text, changes = _edit_yaml(work, settings, tuple(remove), tuple(keep), equal, header)
    else:
        source = work if work is not None else _comment_header(header)
        new_text, changes = _edit_redis(source, settings, tuple(remove), tuple(keep), equal)
    if crlf:
        new_text = new_text.replace("\n", "\r\n")
    if text is not None and new_text == text:
        return EditResult(text=text, changed=False, changes={})
    return EditResult(text=new_text, changed=True, changes=changes)


# The owned-keys file: keys a caller (a node role) set in a config file, so that a key it no longer sets is taken
# out of the file again instead of staying behind.
def read_owned_keys(owned_path):
    """Keys recorded in owned_path; [] when it does not exist."""
    text = read_text(owned_path)
    if not text:
        return []
    try:
        keys = json.loads(text).get("keys", [])
    except (ValueError, AttributeError) as exc:
        raise ConfigFileError("%s: not an owned-keys file: %s" % (owned_path, exc)) from exc
    return [str(key) for key in keys]


def stale_owned_keys(owned_path, settings, keep=()):
    """Keys set by the caller last time that it no longer sets (and that are not kept)."""
    return [key for key in read_owned_keys(owned_path) if key not in settings and key not in keep]


def write_owned_keys(owned_path, settings, check_mode=False):
    """Record the keys of settings; True when the record changed."""
    keys = sorted(str(key) for key in settings)
    if read_owned_keys(owned_path) == keys:
        return False
    if not check_mode:
        write_atomic(owned_path, json.dumps({"keys": keys}, indent=2) + "\n", mode=0o600)
    return True
