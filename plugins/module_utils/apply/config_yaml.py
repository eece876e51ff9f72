# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""YAML config files (cassandra.yaml, mongod.conf) edited in place with ruamel.yaml's round-trip mode.

The file keeps its own indentation. The edited document is merged back into the original text line by line, so
lines the edit did not touch stay exactly as they were (even where ruamel would normalise them, such as ``True``
or ``key :  value``), and comment lines that followed a removed or replaced key stay in place. The merge is
checked by loading it again; when it does not load to the edited document the plain ruamel output is used instead.
"""

from __future__ import annotations

import copy
import datetime
import difflib
import io
import re
from collections import Counter

try:
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.error import YAMLError
    from ruamel.yaml.nodes import MappingNode, ScalarNode
    from ruamel.yaml.scalarbool import ScalarBoolean
    from ruamel.yaml.scalarstring import ScalarString, SingleQuotedScalarString

    HAS_RUAMEL = True
except ImportError:  # reported by config_base.missing_libraries(); every edit calls require_ruamel() first
    HAS_RUAMEL = False

    class YAMLError(Exception):
        pass


from ansible_collections.tactician.nosql.plugins.module_utils.apply.config_base import (
    ConfigFileError,
    comment_header,
    is_kept_key,
    require_ruamel,
    same_value,
    split_lines,
)

# Words YAML 1.1 readers (SnakeYAML in Cassandra) take as booleans: new string values equal to one are quoted.
_YAML11_BOOL = re.compile(r"^(y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF)$")
_WIDTH = 1 << 30


def plain_value(value):
    """A ruamel value as plain Python (dict, list, str, int, float, bool, None); dates become ISO text."""
    if isinstance(value, dict):
        return {plain_value(key): plain_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_value(item) for item in value]
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


def yaml_equal(_key, old, new):
    return same_value(plain_value(old), plain_value(new))


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
    for line in split_lines(text):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            yaml.explicit_start = stripped == "---" or stripped.startswith("--- ")
            break
    return yaml


def yaml_parse(text):
    """(configured YAML object, document root) for text, with the file's indentation and document start."""
    require_ruamel()
    yaml = _new_yaml()
    root = _yaml_load(yaml, text)
    return _yaml_setup(yaml, text, root), root


def _yaml_dump(yaml, data):
    buffer = io.StringIO()
    yaml.dump(data, buffer)
    return buffer.getvalue()


def _yaml_roundtrip(text):
    """Load and dump text with the engine's settings and no change (what an edit starts from)."""
    yaml, root = yaml_parse(text)
    return _yaml_dump(yaml, root)


def flatten(mapping, prefix, out):
    for key, value in mapping.items():
        path = "%s%s" % (prefix, key)
        out[path] = plain_value(value)
        if isinstance(value, dict):
            flatten(value, path + ".", out)


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
    elif not same_value(plain_value(old), plain_value(value)):
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
                "%s: %s is a %s, not a mapping" % (key, ".".join(parts[: depth + 1]), type(plain_value(child)).__name__)
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
    return root if same_value(plain_value(root), expected) else None


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
    base_lines = split_lines(_yaml_dump(yaml, unedited))
    expected = plain_value(root)
    edited = _yaml_dump(yaml, root)
    edited_lines = split_lines(edited)
    text_lines = split_lines(text)
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
        if parent is not None and not equal(key, plain_value(parent[name]), value):
            changes[key] = {"before": plain_value(parent[name]), "after": plain_value(value)}
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
        loaded = _load_checked(spliced, plain_value(root))
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


def edit_yaml(text, settings, remove, keep, equal, header):
    source = text if text is not None else comment_header(header)
    yaml, root = yaml_parse(source)
    if root is not None and not isinstance(root, dict):
        raise ConfigFileError(
            "the top level of the file must be a mapping, not a %s" % type(plain_value(root)).__name__
        )
    settings = {key: value for key, value in settings.items() if not is_kept_key(key, keep)}
    remove = [key for key in remove if not is_kept_key(key, keep)]
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
        changes = {key: {"before": None, "after": plain_value(value)} for key, value in settings.items()}
        return source + separator + _yaml_dump(yaml, root), changes

    def removals(root):
        changes = {}
        for key in remove:
            parent, name = _locate(root, key)
            if parent is not None:
                changes[key] = {"before": plain_value(parent[name]), "after": None}
                del parent[name]
        return changes

    def additions(root):
        changes = {}
        for key, value in settings.items():
            parent, name = _locate(root, key)
            if parent is None:
                parent, name = _create_path(root, key)
                parent[name] = _to_yaml(value)
                changes[key] = {"before": None, "after": plain_value(value)}
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
