# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Edit server config files in place, keeping their comments, key order and layout: the entry points.

Two formats: ``yaml`` (cassandra.yaml, mongod.conf; nested keys are addressed with dotted paths such as
``storage.wiredTiger.engineConfig.cacheSizeGB``; the editing is in config_yaml.py) and ``redis`` (redis.conf: one
directive a line, arguments split with Redis' own quoting rules; in config_redis.py). ``edit`` edits a text,
``edit_file`` a file (atomically, with a backup on request), ``current_values`` reads the values in place.

The tuned-state file next to a config file (``<config>.tuned.json``) lists the keys a tuner set on this node, so
that the node roles leave them alone; the owned-keys file lists the keys a role set.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass, field

from ansible_collections.tactician.nosql.plugins.module_utils.apply.config_base import (
    ConfigFileError,
    comment_header,
    is_kept_key,
)
from ansible_collections.tactician.nosql.plugins.module_utils.apply.config_redis import (
    edit_redis,
    redis_canonical,
    redis_current,
    redis_equal,
)
from ansible_collections.tactician.nosql.plugins.module_utils.apply.config_yaml import (
    edit_yaml,
    flatten,
    plain_value,
    yaml_equal,
    yaml_parse,
)

FORMATS = ("yaml", "redis")


@dataclass
class EditResult:
    """Outcome of edit(): the new text, whether it differs, and key -> {before, after} of every change."""

    text: str
    changed: bool
    changes: dict = field(default_factory=dict)


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


def is_kept(fmt, key, keep):
    """Whether edit() leaves key alone because of `keep` (yaml: the path, one above or below it; redis: the
    directive, case and old aliases ignored)."""
    if fmt == "redis":
        canonical = redis_canonical(key)
        return any(redis_canonical(kept) == canonical for kept in keep)
    return is_kept_key(key, keep)


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
        return redis_current(text)
    _yaml, root = yaml_parse(text)
    if root is None:
        return {}
    if not isinstance(root, dict):
        raise ConfigFileError(
            "the top level of the file must be a mapping, not a %s" % type(plain_value(root)).__name__
        )
    values = {}
    flatten(root, "", values)
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
        equal = yaml_equal if fmt == "yaml" else redis_equal
    crlf = text is not None and "\r\n" in text
    work = text.replace("\r\n", "\n") if crlf else text
    if fmt == "yaml":
        new_text, changes = edit_yaml(work, settings, tuple(remove), tuple(keep), equal, header)
    else:
        source = work if work is not None else comment_header(header)
        new_text, changes = edit_redis(source, settings, tuple(remove), tuple(keep), equal)
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
