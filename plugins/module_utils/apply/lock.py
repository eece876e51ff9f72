# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""One rolling change per cluster at a time: the rolling lock.

Standard library only: this file is shipped to managed nodes. ``RollingLock`` is a JSON file
``<lock_dir>/<name>.lock`` created with O_CREAT|O_EXCL, so two rolls never hold the same cluster at once. The
record names its holder (owner and run id), the host and process that took it, and when it expires. A lock whose
time is up, or whose process is gone on this host, is stale and the next acquire replaces it (and reports what it
replaced). A roll that stops for the cluster's sake marks its lock stopped (``mark_stopped``): the record then
keeps every node's state and how to continue, and holds whatever happens to the process that took it, until it is
released with force. Bad input, or a lock held by someone else, raises LockError naming the field.

Where the record lives is a ``FileRecords`` (the default) or any object with the same five methods: apply.lock_stores
keeps it in the cluster itself (a Redis key, a Cassandra row), so that every controller sees it. A store's records
are written compare-and-set (replace and remove name the record they expect), so no flock is needed there.
"""

from __future__ import annotations

import datetime
import errno
import getpass
import json
import os
import re
import socket

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None
from ansible_collections.tactician.nosql.plugins.module_utils.core import checks
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import ApplyError


class LockError(ApplyError, ValueError):
    """Bad input for the lock, or a lock held by someone else; the message names the field or the holder."""


LOCK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
LOCK_SUBDIR = os.path.join("tactician-nosql", "locks")
DEFAULT_TTL = 7200
# Processes that run Ansible on the controller: their main process outlives every task of a run.
CONTROLLER_COMMANDS = ("ansible-playbook", "ansible", "ansible-console", "ansible-pull")
_OWN_PID = object()


def _now():
    """The current time (UTC); the tests replace it."""
    return datetime.datetime.now(datetime.UTC)


def _stamp(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_stamp(text):
    try:
        return datetime.datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        return None


def default_lock_dir(environ=None):
    """$XDG_STATE_HOME/tactician-nosql/locks, or ~/.local/state/tactician-nosql/locks."""
    environ = os.environ if environ is None else environ
    state = environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, LOCK_SUBDIR)


def _user():
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "uid%d" % os.getuid()


def pid_alive(pid):
    """Whether a process with this id exists on this host."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OSError, ValueError, OverflowError):
        return False
    return True


def _proc_parent(pid):
    with open("/proc/%d/stat" % pid) as handle:
        stat = handle.read()
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def _proc_is_controller(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as handle:
        argv = handle.read().split(b"\0")
    names = [os.path.basename(arg.decode("utf-8", "replace")) for arg in argv[:2]]
    return any(name in CONTROLLER_COMMANDS for name in names)


def controller_pid(start=None):
    """The process id of the ansible-playbook (or ansible) run this process belongs to, or None.

    A module is a short-lived process: the lock records the run's main process instead, found by walking up the
    parents (the outermost of the consecutive Ansible processes, as workers are forks of the main one). None when
    there is none on this host (the module runs on a remote host) or /proc cannot be read."""
    pid = os.getpid() if start is None else start
    found = None
    try:
        for _i in range(64):
            if pid <= 1:
                break
            if _proc_is_controller(pid):
                found = pid
            elif found is not None:
                break
            pid = _proc_parent(pid)
    except (OSError, ValueError, IndexError):
        pass
    return found


def check_name(name):
    if not isinstance(name, str) or not LOCK_NAME.match(name):
        raise LockError(
            "name: %r is not a cluster name; allowed: letters, digits, '-', '_' and '.', starting with a letter"
            " or digit, at most 128 characters" % (name,)
        )
    return name


def empty_record(name):
    """What an unreadable record stands for (its writer died half way): stale by RollingLock.is_stale."""
    return dict(name=name, owner=None, host=None, pid=None, acquired=None, expires=None, run_id=None)


def decode_record(name, text):
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    return record if isinstance(record, dict) else empty_record(name)


def encode_record(record):
    return json.dumps(record, indent=2, sort_keys=True) + "\n"


class FileRecords:
    """The lock record in the file <lock_dir>/<name>.lock on the host the module runs on."""

    def __init__(self, name, lock_dir=None):
        self.lock_dir = os.path.abspath(os.path.expanduser(lock_dir)) if lock_dir else default_lock_dir()
        self.path = os.path.join(self.lock_dir, name + ".lock")
        self.name = name
        self.where = self.delete_hint = self.path

    def guard(self, exclusive=True):
        return _DirGuard(self.lock_dir, exclusive, False)

    def read(self):
        try:
            with open(self.path, encoding="utf-8") as handle:
                text = handle.read()
        except FileNotFoundError:
            return None
        return decode_record(self.name, text)

    def create(self, record, ttl=None):
        try:
            os.makedirs(self.lock_dir, mode=0o700, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise LockError(
                "name: the rolling lock %s was taken by another run at the same moment; try again" % self.path
            ) from None
        except OSError as exc:
            raise LockError("lock_dir: cannot write %s: %s" % (self.path, exc.strerror or exc)) from None
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(encode_record(record))
            handle.flush()
            os.fsync(handle.fileno())

    def replace(self, old, record, ttl=None):
        """record in place of old (under the guard, old is what is there)."""
        _replace(self.path, record)

    def take_over(self, old, record, ttl=None):
        _remove(self.path)
        self.create(record, ttl)

    def remove(self, old):
        _remove(self.path)


class RollingLock:
    """One cluster's rolling lock: a JSON record of its holder, by default in the file <lock_dir>/<name>.lock
    (records: where else it is kept, see FileRecords)."""

    def __init__(self, name, lock_dir=None, owner=None, ttl=DEFAULT_TTL, pid=_OWN_PID, host=None, records=None):
        self.name = check_name(name)
        self.records = records if records is not None else FileRecords(name, lock_dir)
        self.lock_dir = getattr(self.records, "lock_dir", None)
        self.path = self.records.where
        self.ttl = checks.whole("ttl", ttl, LockError)
        self.host = host or socket.gethostname()
        self.pid = os.getpid() if pid is _OWN_PID else (None if pid is None else checks.whole("pid", pid, LockError))
        if owner is None:
            owner = "%s@%s" % (_user(), self.host) + (":%d" % self.pid if self.pid is not None else "")
        elif not isinstance(owner, str) or not owner.strip():
            raise LockError("owner: %r is empty; give a name for who holds the lock" % (owner,))
        self.owner = owner

    # -- reading -------------------------------------------------------------------------------------------------

    def _read(self):
        return self.records.read()

    def status(self):
        """The holder's record {name, owner, host, pid, acquired, expires, run_id}, or None when nobody holds it."""
        with self._guard(exclusive=False):
            return self._read()

    def is_stale(self, record):
        """Whether a record no longer holds: its time is up, or it was taken on this host by a process now gone."""
        return self._stale_reason(record) is not None

    def _stale_reason(self, record):
        if isinstance(record.get("stopped"), dict):
            return None  # a stopped roll's lock holds until a person releases it (force)
        expires = _parse_stamp(record.get("expires"))
        if expires is None:
            return "the lock holds no valid record"
        if expires <= _now():
            return "it expired at %s" % record.get("expires")
        pid = record.get("pid")
        if record.get("host") == self.host and pid is not None and not pid_alive(pid):
            return "its process %s on %s is gone" % (pid, self.host)
        return None

    def _holds(self, record, run_id):
        return record.get("owner") == self.owner and record.get("run_id") == run_id

    # -- helpers -------------------------------------------------------------------------------------------------

    def _guard(self, exclusive=True):
        return self.records.guard(exclusive)

    def _describe(self, record):
        return "%s (run %s, host %s, pid %s) since %s, until %s" % (
            record.get("owner"),
            record.get("run_id"),
            record.get("host"),
            record.get("pid"),
            record.get("acquired"),
            record.get("expires"),
        )

    def _new_record(self, run_id):
        now = _now().replace(microsecond=0)
        return dict(
            name=self.name,
            owner=self.owner,
            host=self.host,
            pid=self.pid,
            acquired=_stamp(now),
            expires=_stamp(now + datetime.timedelta(seconds=self.ttl)),
            run_id=run_id,
        )

    def _result(self, changed, lock, stale=None, reason=None, released=None):
        return dict(
            changed=changed, lock=lock, stale_replaced=stale, stale_reason=reason, released=released, path=self.path
        )

    # -- acquire and release -------------------------------------------------------------------------------------

    def acquire(self, run_id=None, check_mode=False, force=False):
        """Take the lock for (owner, run_id).

        Free -> created. Stale -> replaced, the old record in stale_replaced. Held by this owner and run_id ->
        unchanged. Held by anyone else -> LockError naming the holder and how to clear it (force takes it
        over, reported like a stale one). check_mode reports the same and writes nothing.
        Returns dict(changed, lock, stale_replaced, stale_reason, released, path)."""
        with self._guard(exclusive=not check_mode):
            current = self._read()
            stale = reason = None
            if current is not None:
                if self._holds(current, run_id):
                    return self._result(False, current)
                reason = self._stale_reason(current)
                if reason is None and force:
                    reason = "taken over with force"
                if reason is None and isinstance(current.get("stopped"), dict):
                    stopped = current["stopped"]
                    raise LockError(
                        "name: a roll of cluster %s stopped at %s on %s and keeps its lock: %s To continue: %s"
                        % (
                            self.name,
                            stopped.get("node"),
                            stopped.get("at"),
                            str(stopped.get("reason") or "").strip(),
                            stopped.get("continue") or "release it with force=true once the cluster is repaired",
                        )
                    )
                if reason is None:
                    raise LockError(
                        "name: the rolling lock of cluster %s is held by %s; wait for that roll to end. If it is gone,"
                        " clear the lock with tactician.nosql.rolling_lock name=%s state=released force=true, or"
                        " delete %s" % (self.name, self._describe(current), self.name, self.records.delete_hint)
                    )
                stale = current
            record = self._new_record(run_id)
            if not check_mode:
                if stale is not None:
                    self.records.take_over(stale, record, self.ttl)
                else:
                    self.records.create(record, self.ttl)
            return self._result(True, record, stale, reason)

    def release(self, run_id=None, force=False, check_mode=False):
        """Give the lock back: only its holder (this owner and run_id) may, or anyone with force.

        Nobody holds it -> unchanged. Returns dict(changed, lock=None, released=<the removed record>, ...)."""
        with self._guard(exclusive=not check_mode):
            current = self._read()
            if current is None:
                return self._result(False, None)
            if not force and not self._holds(current, run_id):
                reason = self._stale_reason(current)
                note = " (it is stale: %s)" % reason if reason else ""
                raise LockError(
                    "run_id: the rolling lock of cluster %s is held by %s%s, not by %s (run %s); only the holder"
                    " releases it, force=true removes it anyway"
                    % (self.name, self._describe(current), note, self.owner, run_id)
                )
            if not check_mode:
                self.records.remove(current)
            return self._result(True, None, released=current)

    def mark_stopped(self, run_id=None, stopped=None, check_mode=False):
        """Keep the lock held by (owner, run_id) as a stopped roll: stopped ({node, reason, nodes, continue}) is
        written into the record with the time, and the lock then holds until released with force. Returns the
        result of acquire."""
        if not isinstance(stopped, dict) or not stopped.get("reason"):
            raise LockError("stopped: give a mapping with at least the reason the roll stopped")
        with self._guard(exclusive=not check_mode):
            current = self._read()
            if current is None or not self._holds(current, run_id):
                raise LockError(
                    "run_id: only the holder marks its roll stopped; the lock of cluster %s is %s"
                    % (self.name, "free" if current is None else "held by " + self._describe(current))
                )
            record = dict(current, stopped=dict(stopped, at=_stamp(_now().replace(microsecond=0))))
            if not check_mode:
                self.records.replace(current, record, None)  # a stopped roll's lock holds until released
            return self._result(True, record)


def _replace(path, record):
    """Write record over the lock file at path in one step (a temporary file renamed over it)."""
    temporary = path + ".tmp"
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(encode_record(record))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        raise LockError("lock_dir: cannot write %s: %s" % (path, exc.strerror or exc)) from None


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise LockError("lock_dir: cannot remove %s: %s" % (path, exc.strerror or exc)) from None


class _DirGuard:
    """flock on the lock directory, so reading, judging and replacing a lock happen as one step.

    exclusive for changes, shared for reads; create makes the directory first. A directory that does not exist
    (and is not to be created) holds no lock: nothing to guard."""

    def __init__(self, directory, exclusive, create):
        self.directory = directory
        self.exclusive = exclusive
        self.create = create
        self.fd = None

    def __enter__(self):
        if fcntl is None:
            return self
        try:
            if self.create:
                os.makedirs(self.directory, mode=0o700, exist_ok=True)
            self.fd = os.open(self.directory, os.O_RDONLY)
        except OSError as exc:
            if exc.errno == errno.ENOENT and not self.create:
                return self
            raise LockError("lock_dir: cannot use %s: %s" % (self.directory, exc.strerror or exc)) from None
        fcntl.flock(self.fd, fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH)
        return self

    def __exit__(self, *exc_info):
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
        return False
