# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Rolling reconfiguration: how many nodes may restart at once, and one roll per cluster at a time.

Standard library only: this file is shipped to managed nodes.

The batch rule. A request at consistency level CL needs CL replicas of its record. With replication factor RF,
every record keeps at least RF - R replicas while any R nodes are down, so the data stays available at CL as
long as R = RF - CL nodes (or fewer) restart together. When the cluster is split into complete-sets (each set
holds every record exactly once, for example one rack per replica), a whole set may go down at once and
R = count(sets) - CL sets restart together. R < 1 means no node can restart without making CL unavailable: the
rule refuses, unless the aggressive variant is asked for, which restarts a larger batch (all nodes by default)
and accepts the unavailability.

The lock. ``RollingLock`` is a JSON file ``<lock_dir>/<name>.lock`` created with O_CREAT|O_EXCL, so two rolls
never hold the same cluster at once. The record names its holder (owner and run id), the host and process that
took it, and when it expires. A lock whose time is up, or whose process is gone on this host, is stale and the
next acquire replaces it (and reports what it replaced).
"""

from __future__ import annotations

import datetime
import errno
import getpass
import json
import math
import os
import re
import socket

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import ApplyError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None


class RollingError(ApplyError, ValueError):
    """Bad input for the batch rule or the lock, or a lock held by someone else. The message names the field."""


CONSISTENCY_LEVELS = ("ONE", "TWO", "THREE", "QUORUM", "LOCAL_QUORUM", "EACH_QUORUM", "ALL")
# Other names clients use, and the level whose replica count they need.
CONSISTENCY_ALIASES = {
    "LOCAL_ONE": "ONE",  # one replica, of the local data center
    "SERIAL": "QUORUM",  # Paxos needs a quorum of all replicas
    "LOCAL_SERIAL": "LOCAL_QUORUM",  # Paxos within the local data center
}
# Levels counted against the replication factor of one data center rather than all replicas.
LOCAL_LEVELS = ("LOCAL_ONE", "LOCAL_QUORUM", "LOCAL_SERIAL", "EACH_QUORUM")
ALLOWED_LEVELS = CONSISTENCY_LEVELS + tuple(CONSISTENCY_ALIASES)

_ANY_REFUSED = (
    "cl: ANY is refused for a rolling reconfiguration: ANY only applies to writes and accepts a write that no"
    " replica has stored (a hint kept by the coordinator), so it bounds neither how many nodes may be down nor"
    " whether reads find the data; give the consistency level the clients read and write with, one of %s or a"
    " number of replicas" % ", ".join(ALLOWED_LEVELS)
)


# ---------------------------------------------------------------------------------------------------------------
# The batch rule
# ---------------------------------------------------------------------------------------------------------------


def _whole(value, field, minimum=1):
    """value as an int >= minimum (ints and digit strings); RollingError naming field otherwise."""
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    else:
        number = None
    if number is None or number < minimum:
        raise RollingError("%s: %r is not a whole number >= %d" % (field, value, minimum))
    return number


def _replication(rf):
    """rf as (total, {dc: n} or None)."""
    if isinstance(rf, dict):
        if not rf:
            raise RollingError("rf: the map of replicas per data center is empty; give {dc: replicas, ...}")
        per_dc = {str(dc): _whole(count, "rf[%s]" % dc) for dc, count in rf.items()}
        return sum(per_dc.values()), per_dc
    return _whole(rf, "rf"), None


def _local_rf(per_dc, total, local_dc):
    """The replication factor of the local data center and its name (None for a single number)."""
    if per_dc is None:
        return total, None
    if local_dc is None:
        dc = min(sorted(per_dc), key=lambda name: per_dc[name])
        return per_dc[dc], dc
    if str(local_dc) not in per_dc:
        raise RollingError(
            "local_dc: %r is not a data center of rf; allowed: %s" % (local_dc, ", ".join(sorted(per_dc)))
        )
    return per_dc[str(local_dc)], str(local_dc)


def _level(cl):
    """cl as (name, explicit replica count or None): a known name (case-insensitive) or a positive number."""
    if isinstance(cl, bool) or cl is None:
        raise RollingError(
            "cl: %r is not a consistency level; allowed: %s or a number" % (cl, ", ".join(ALLOWED_LEVELS))
        )
    if isinstance(cl, int) or (isinstance(cl, str) and cl.strip().isdigit()):
        count = _whole(cl, "cl")
        return str(count), count
    if not isinstance(cl, str):
        raise RollingError(
            "cl: %r is not a consistency level; allowed: %s or a number" % (cl, ", ".join(ALLOWED_LEVELS))
        )
    name = cl.strip().upper()
    if name == "ANY":
        raise RollingError(_ANY_REFUSED)
    if name not in ALLOWED_LEVELS:
        raise RollingError(
            "cl: %r is not a consistency level; allowed: %s or a number" % (cl, ", ".join(ALLOWED_LEVELS))
        )
    return name, None


def _requirement(cl, rf, local_dc=None):
    """What cl needs of rf: dict(cl, needed, rf_used, dc, rf_total)."""
    name, count = _level(cl)
    total, per_dc = _replication(rf)
    dc = None
    if name in LOCAL_LEVELS:
        rf_used, dc = _local_rf(per_dc, total, local_dc)
    else:
        rf_used = total
    base = CONSISTENCY_ALIASES.get(name, name)
    if count is not None:
        needed = count
    elif base in ("ONE", "TWO", "THREE"):
        needed = CONSISTENCY_LEVELS.index(base) + 1
    elif base in ("QUORUM", "LOCAL_QUORUM", "EACH_QUORUM"):
        needed = rf_used // 2 + 1
    else:  # ALL
        needed = rf_used
    if needed > rf_used:
        where = " in data center %s" % dc if dc else ""
        raise RollingError(
            "cl: %s needs %d replicas but the replication factor%s is %d; lower the consistency level (allowed: %s"
            " or a number up to %d) or raise the replication factor"
            % (name, needed, where, rf_used, ", ".join(ALLOWED_LEVELS), rf_used)
        )
    return dict(cl=name, needed=needed, rf_used=rf_used, dc=dc, rf_total=total)


def replicas_needed(cl, rf, local_dc=None):
    """How many replicas of a record a request at consistency level cl needs, with replication factor rf.

    cl: a name of ALLOWED_LEVELS (any case) or a positive number (int or digit string). rf: an int, or a dict
    {dc: replicas}; QUORUM and ALL count every replica, the LOCAL_* levels and EACH_QUORUM the replicas of
    local_dc (default: the data center with the fewest replicas, the one that keeps a quorum the hardest).
    ANY is refused. More replicas than rf -> RollingError."""
    return _requirement(cl, rf, local_dc)["needed"]


def _node_count(nodes):
    if isinstance(nodes, (list, tuple)):
        if not nodes:
            raise RollingError("nodes: the list of hosts to roll is empty; give at least one host")
        return len(nodes), list(nodes)
    return _whole(nodes, "nodes"), None


def batch_rule(
    rf,
    cl,
    nodes,
    sets=None,
    nodes_per_set=None,
    aggressive=False,
    aggressive_batch=None,
    local_dc=None,
):
    """How many nodes to restart at once so the data stays available at consistency level cl.

    nodes: the number of nodes to roll, or the list of their host names. sets: the number of complete-sets (each
    holds every record exactly once), nodes_per_set their size (default nodes // sets). R < 1 raises RollingError
    unless aggressive, which takes aggressive_batch nodes (default all) per batch and reports available=False.
    aggressive with aggressive_batch larger than the safe batch also takes aggressive_batch.

    Returns dict(batch, batches, rule, rf, cl, replicas_needed, nodes, sets, nodes_per_set, batch_sets,
    aggressive, available, serial, plan): batch and serial are the nodes per batch, plan the host names per
    batch when nodes is a list (else None)."""
    count, hosts = _node_count(nodes)
    aggressive = bool(aggressive)
    if aggressive_batch is not None:
        aggressive_batch = _whole(aggressive_batch, "aggressive_batch")
        if not aggressive:
            raise RollingError("aggressive_batch: only used with aggressive: true (it accepts unavailability)")
        if aggressive_batch > count:
            raise RollingError(
                "aggressive_batch: %d is more than the %d nodes to roll; allowed: 1 to %d"
                % (aggressive_batch, count, count)
            )
    if sets is not None:
        sets = _whole(sets, "sets")
        if rf is None:
            rf = sets
        if isinstance(rf, dict):
            raise RollingError("rf: with complete-sets give the replication factor as one number (it equals sets)")
    req = _requirement(cl, rf, local_dc)
    rf_name = "RF(%s)" % req["dc"] if req["dc"] else "RF"

    batch_sets = None
    if sets is None:
        safe = req["rf_used"] - req["needed"]
        rule = "R = %s - CL = %d - %d = %d" % (rf_name, req["rf_used"], req["needed"], safe)
        safe_batch = min(safe, count) if safe >= 1 else 0
    else:
        if req["rf_used"] != sets:
            raise RollingError(
                "sets: %d complete-sets but the replication factor is %d; each complete-set holds every record once,"
                " so sets must equal the replication factor" % (sets, req["rf_used"])
            )
        if nodes_per_set is None:
            if count % sets:
                raise RollingError(
                    "nodes_per_set: %d nodes do not split into %d complete-sets of equal size; give nodes_per_set"
                    % (count, sets)
                )
            nodes_per_set = count // sets
        else:
            nodes_per_set = _whole(nodes_per_set, "nodes_per_set")
        safe = sets - req["needed"]
        if safe >= 1:
            batch_sets = safe
            safe_batch = min(safe * nodes_per_set, count)
            rule = "R = count(sets) - CL = %d - %d = %d %s of %d %s = %d nodes" % (
                sets,
                req["needed"],
                safe,
                "set" if safe == 1 else "sets",
                nodes_per_set,
                "node" if nodes_per_set == 1 else "nodes",
                safe * nodes_per_set,
            )
        else:
            safe_batch = 0
            rule = "R = count(sets) - CL = %d - %d = %d" % (sets, req["needed"], safe)

    if safe_batch < 1 and not aggressive:
        raise RollingError(
            "cl: %s: restarting any node would make CL %s unavailable (it needs %d of %d replicas); lower the"
            " consistency level, raise the replication factor, or set aggressive: true to accept unavailability"
            % (rule, req["cl"], req["needed"], req["rf_used"])
        )
    used_aggressive = False
    batch = safe_batch
    if aggressive and (safe_batch < 1 or (aggressive_batch is not None and aggressive_batch > safe_batch)):
        used_aggressive = True
        batch = aggressive_batch or count
        batch_sets = None
        rule += "; aggressive: %d of %d nodes at a time, CL %s unavailable during the roll" % (batch, count, req["cl"])
    return dict(
        batch=batch,
        batches=int(math.ceil(count / batch)),
        rule=rule,
        rf=rf,
        cl=req["cl"],
        replicas_needed=req["needed"],
        nodes=count,
        sets=sets,
        nodes_per_set=nodes_per_set,
        batch_sets=batch_sets,
        local_dc=req["dc"],
        aggressive=used_aggressive,
        available=not used_aggressive,
        serial=batch,
        plan=batches(hosts, batch) if hosts is not None else None,
    )


def batches(hosts, batch):
    """hosts in their order, in chunks of batch (the last one may be shorter)."""
    batch = _whole(batch, "batch")
    hosts = list(hosts)
    return [hosts[start : start + batch] for start in range(0, len(hosts), batch)]


def redis_replication_factor(shards):
    """The replication factor of a Redis cluster: 1 + the fewest replicas any shard has.

    shards: a list of {master, replicas: [...]}."""
    if not shards:
        raise RollingError("shards: no shard given; give a list of {master, replicas: [...]}")
    fewest = None
    for index, shard in enumerate(shards):
        if not isinstance(shard, dict):
            raise RollingError("shards[%d]: %r is not a mapping {master, replicas: [...]}" % (index, shard))
        replicas = shard.get("replicas") or []
        if not isinstance(replicas, (list, tuple)):
            raise RollingError("shards[%d].replicas: %r is not a list" % (index, replicas))
        fewest = len(replicas) if fewest is None else min(fewest, len(replicas))
    return 1 + fewest


# ---------------------------------------------------------------------------------------------------------------
# The lock
# ---------------------------------------------------------------------------------------------------------------

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


class RollingLock:
    """One cluster's rolling lock: the file <lock_dir>/<name>.lock holding a JSON record of its holder."""

    def __init__(self, name, lock_dir=None, owner=None, ttl=DEFAULT_TTL, pid=_OWN_PID, host=None):
        if not isinstance(name, str) or not LOCK_NAME.match(name):
            raise RollingError(
                "name: %r is not a cluster name; allowed: letters, digits, '-', '_' and '.', starting with a letter"
                " or digit, at most 128 characters" % (name,)
            )
        self.name = name
        self.lock_dir = os.path.abspath(os.path.expanduser(lock_dir)) if lock_dir else default_lock_dir()
        self.path = os.path.join(self.lock_dir, name + ".lock")
        self.ttl = _whole(ttl, "ttl")
        self.host = host or socket.gethostname()
        self.pid = os.getpid() if pid is _OWN_PID else (None if pid is None else _whole(pid, "pid"))
        if owner is None:
            owner = "%s@%s" % (_user(), self.host) + (":%d" % self.pid if self.pid is not None else "")
        elif not isinstance(owner, str) or not owner.strip():
            raise RollingError("owner: %r is empty; give a name for who holds the lock" % (owner,))
        self.owner = owner

    # -- reading -------------------------------------------------------------------------------------------------

    def _read(self):
        try:
            with open(self.path, encoding="utf-8") as handle:
                text = handle.read()
        except FileNotFoundError:
            return None
        try:
            record = json.loads(text)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            # A lock file that is not a record (its writer died half way): stale by is_stale.
            return dict(name=self.name, owner=None, host=None, pid=None, acquired=None, expires=None, run_id=None)
        return record

    def status(self):
        """The holder's record {name, owner, host, pid, acquired, expires, run_id}, or None when nobody holds it."""
        with self._guard(exclusive=False):
            return self._read()

    def is_stale(self, record):
        """Whether a record no longer holds: its time is up, or it was taken on this host by a process now gone."""
        return self._stale_reason(record) is not None

    def _stale_reason(self, record):
        expires = _parse_stamp(record.get("expires"))
        if expires is None:
            return "the lock file holds no valid record"
        if expires <= _now():
            return "it expired at %s" % record.get("expires")
        pid = record.get("pid")
        if record.get("host") == self.host and pid is not None and not pid_alive(pid):
            return "its process %s on %s is gone" % (pid, self.host)
        return None

    def _holds(self, record, run_id):
        return record.get("owner") == self.owner and record.get("run_id") == run_id

    # -- helpers -------------------------------------------------------------------------------------------------

    def _guard(self, exclusive=True, create=False):
        return _DirGuard(self.lock_dir, exclusive, create)

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

    def _create(self, record):
        try:
            os.makedirs(self.lock_dir, mode=0o700, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise RollingError(
                "name: the rolling lock %s was taken by another run at the same moment; try again" % self.path
            ) from None
        except OSError as exc:
            raise RollingError("lock_dir: cannot write %s: %s" % (self.path, exc.strerror or exc)) from None
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(record, handle, indent=2, sort_keys=True)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())

    def _result(self, changed, lock, stale=None, reason=None, released=None):
        return dict(
            changed=changed, lock=lock, stale_replaced=stale, stale_reason=reason, released=released, path=self.path
        )

    # -- acquire and release -------------------------------------------------------------------------------------

    def acquire(self, run_id=None, check_mode=False, force=False):
        """Take the lock for (owner, run_id).

        Free -> created. Stale -> replaced, the old record in stale_replaced. Held by this owner and run_id ->
        unchanged. Held by anyone else -> RollingError naming the holder and how to clear it (force takes it
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
                if reason is None:
                    raise RollingError(
                        "name: the rolling lock of cluster %s is held by %s; wait for that roll to end. If it is gone,"
                        " clear the lock with tactician.nosql.rolling_lock name=%s state=released force=true, or"
                        " delete %s" % (self.name, self._describe(current), self.name, self.path)
                    )
                stale = current
            record = self._new_record(run_id)
            if not check_mode:
                if stale is not None:
                    _remove(self.path)
                self._create(record)
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
                raise RollingError(
                    "run_id: the rolling lock of cluster %s is held by %s%s, not by %s (run %s); only the holder"
                    " releases it, force=true removes it anyway"
                    % (self.name, self._describe(current), note, self.owner, run_id)
                )
            if not check_mode:
                _remove(self.path)
            return self._result(True, None, released=current)


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise RollingError("lock_dir: cannot remove %s: %s" % (path, exc.strerror or exc)) from None


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
            raise RollingError("lock_dir: cannot use %s: %s" % (self.directory, exc.strerror or exc)) from None
        fcntl.flock(self.fd, fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH)
        return self

    def __exit__(self, *exc_info):
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
        return False
