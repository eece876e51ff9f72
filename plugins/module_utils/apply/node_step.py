# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The per-node step machine of a reconfiguration: compare, apply live or restart, rejoin, verify, roll back.

Store-specific work (reading settings, live commands, stopping and starting, what "back" means) is done by
a node object (see reconfigure_stores); this module only decides and sequences, so it runs on fakes in tests:

    validate -> read current -> diff -> (check mode: stop here)
    live only:  apply live -> persist to the config file -> mark the file as live -> verify
    restart:    check the cluster (every other node up as every node sees it, the clients served within the
                guard's thresholds: apply/guards.py) -> prepare (Redis: fail over a master to a replica in sync)
                -> stop (Cassandra: drain) -> write the file -> start -> wait until the cluster sees the node back
                -> verify
    the cluster not ready: stop the roll, the node untouched.
    another node down while this one comes back: stop at once; this node left running as it is (or started on
                its previous configuration when it does not run), never restarted a second time.
    failure after the node was stopped: restore the previous file, start, wait until back, then fail.
"""

from __future__ import annotations

import time

from ansible_collections.tactician.nosql.plugins.module_utils.apply import guards
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import ApplyError
from ansible_collections.tactician.nosql.plugins.module_utils.core.timing import Stopwatch


class ReconfigureError(ApplyError):
    """A step failed. result holds what was done so far (steps, timings, rollback) for the report."""

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result or {}

    def report(self):
        return self.result


def compare(catalog, wanted, current):
    """{name: {before, after, apply}} for every wanted setting whose live value differs."""
    changes = {}
    for name, value in wanted.items():
        before = current.get(name)
        if before is not None and catalog.equal(name, before, value):
            continue
        changes[name] = dict(before=before, after=value, apply=catalog.apply_kind(name, before))
    return changes


def validate(catalog, settings, memory_mb=None, heap_mb=None):
    """Normalized settings, or ReconfigureError naming every bad field; node settings only."""
    wanted = catalog.validate(settings, memory_mb=memory_mb, heap_mb=heap_mb)
    table = sorted(name for name in wanted if catalog.apply_kind(name) == "table")
    if table:
        raise ReconfigureError(
            "%s: table or keyspace options, not node settings; change them with the %s tactics "
            "(module %s)" % (", ".join(table), catalog.store, _TABLE_MODULES.get(catalog.store, "of the store"))
        )
    return wanted


_TABLE_MODULES = {"cassandra": "tactician.nosql.cassandra_table", "mongodb": "tactician.nosql.mongodb_index"}


def reconfigure(
    node,
    catalog,
    settings,
    allow_restart=True,
    check_mode=False,
    verify=True,
    rollback=True,
    memory_mb=None,
    heap_mb=None,
    force_restart=False,
):
    """Bring one node to settings. Returns the module result; raises ReconfigureError (with .result).

    force_restart restarts the node even when every change is live or there is none (a fresh process, e.g. before
    each run of a side-by-side comparison, so that no configuration is measured on a JVM the others did not get).
    """
    watch = Stopwatch()
    result = dict(changed=False, restart_required=False, commands=[], steps=[], timings=watch.steps, warnings=[])
    if force_restart and not allow_restart:
        raise ReconfigureError("force_restart and allow_restart=false contradict each other: choose one", result)
    wanted = validate(catalog, settings, memory_mb=memory_mb, heap_mb=heap_mb)
    needed = list(wanted)
    for name in wanted:
        needed.extend(other for other in catalog.requires(name) if other not in needed)
    with watch.step("read"):
        current = node.read_current(needed)
    changes = compare(catalog, wanted, current)
    file_changes = node.file_changes(wanted)
    live = {name: change for name, change in changes.items() if change["apply"] == "live"}
    restart = {name: change for name, change in changes.items() if change["apply"] == "restart"}
    result.update(
        changes=changes,
        file_changes=file_changes,
        restart_required=bool(restart),
        restart_forced=bool(force_restart and not restart),
        diff=dict(
            before={name: change["before"] for name, change in sorted(changes.items())},
            after={name: change["after"] for name, change in sorted(changes.items())},
            before_header="%s %s (running)" % (catalog.store, node.name),
            after_header="%s %s (wanted)" % (catalog.store, node.name),
        ),
    )
    if restart and not allow_restart:
        raise ReconfigureError(
            "%s: %s cannot change while the node runs (restart required) and allow_restart is false; apply them "
            "with playbooks/rolling_reconfigure.yml, which restarts one batch of nodes at a time"
            % (node.name, ", ".join(sorted(restart))),
            result,
        )
    result["changed"] = bool(changes or file_changes or force_restart)
    if check_mode or not result["changed"]:
        result["steps"] = _planned(live, restart or force_restart, file_changes)
        return result
    try:
        if restart or force_restart:
            _restart(node, wanted, result, watch, rollback)
        else:
            _live(node, wanted, current, live, result, watch)
        if verify:
            with watch.step("verify"):
                _verify(node, catalog, wanted, result)
            result["steps"].append("verify")
    except ReconfigureError as exc:
        exc.result = dict(result, **exc.result)
        raise
    node.record_tuned(wanted)
    return result


def _planned(live, restart, file_changes):
    if restart:
        return ["check cluster", "prepare", "stop", "write config", "start", "rejoin", "verify"]
    steps = ["set %s live" % name for name in sorted(live)]
    if file_changes:
        steps.append("write config")
    return steps


def _live(node, wanted, current, live, result, watch):
    with watch.step("apply_live"):
        state = dict(current)
        for name in sorted(live):
            result["commands"].append(node.apply_live(name, wanted[name], state))
            state[name] = wanted[name]
    result["steps"].extend("set %s live" % name for name in sorted(live))
    with watch.step("persist"):
        persisted = node.persist_live(wanted)
    if persisted:
        result["steps"].append("write config")
        result["config_backup"] = persisted.get("backup_file")


def _restart(node, wanted, result, watch, rollback):
    with watch.step("check_cluster"):
        try:
            result["guard"] = node.check_before_stop()
        except guards.ClusterNotReady as exc:
            _stop_untouched(node, result, exc, "was not touched")
    result["steps"].append("check cluster")
    with watch.step("prepare"):
        try:
            prepared = node.prepare_restart()
        except guards.ClusterNotReady as exc:
            _stop_untouched(node, result, exc, "was not stopped")
    if prepared:
        result["steps"].extend(prepared)
    stopped_at = time.monotonic()
    with watch.step("stop"):
        node.stop()
    result["steps"].append("stop")
    backup = None
    try:
        with watch.step("write_config"):
            written = node.write_config(wanted)
            backup = written.get("backup_file")
            result["config_backup"] = backup
        result["steps"].append("write config")
        with watch.step("start"):
            node.start()
        result["steps"].append("start")
        with watch.step("rejoin"):
            result["rejoin"] = node.wait_back()
        result["steps"].append("rejoin")
    except guards.PeerDownError as exc:
        result["downtime"] = round(time.monotonic() - stopped_at, 3)
        _stop_for_peer(node, result, exc, backup, watch)
    except Exception as exc:
        result["downtime"] = round(time.monotonic() - stopped_at, 3)
        message = "%s did not come back with the new configuration: %s" % (node.name, _short(exc))
        result.update(stopped="node not back", touched=True)
        if not rollback:
            result["cluster"] = node.cluster_state()
            raise ReconfigureError(message + "; rollback disabled, the node is left as it is", result) from exc
        result["rollback"] = _roll_back(node, backup, watch)
        result["cluster"] = node.cluster_state()
        if result["rollback"]["ok"]:
            message += "; rolled back: previous configuration restored and the node is back (%s)" % (
                ", ".join(result["rollback"]["steps"])
            )
        else:
            message += (
                "; ROLLBACK FAILED too: %s; the node is down, repair it before any other node is touched"
                % (result["rollback"]["error"])
            )
        raise ReconfigureError(message, result) from exc
    finally:
        if node.signal_log is not None:
            result["clients_while_down"] = node.signal_log.report()
    result["downtime"] = round(time.monotonic() - stopped_at, 3)
    warning = node.downtime_warning(result["downtime"])
    if warning:
        result["warnings"].append(warning)
    if node.signal_log is not None and node.signal_log.too_long():
        seen = node.signal_log.report()
        result.update(stopped="client guard", touched=True, cluster=node.cluster_state())
        raise ReconfigureError(
            "%s is back on the new configuration, but while it was down the clients saw %s for %.0f s, longer than "
            "the %.0f s allowed (guard.max_wait_s): the roll stops here"
            % (node.name, "; ".join(seen["breach"]), seen["longest_above_s"], node.signal_log.policy.max_wait_s),
            result,
        )


def _stop_untouched(node, result, exc, what):
    """The cluster is not ready for this node's stop: the roll stops, this node not stopped."""
    result.update(stopped=exc.kind, touched=False, cluster=node.cluster_state(), guard=exc.seen)
    raise ReconfigureError("%s; %s %s" % (exc, node.name, what), result) from exc


def _stop_for_peer(node, result, exc, backup, watch):
    """Another node went down during this node's step: stop at once. A node that runs is left running on the
    configuration it started with (never a second restart while a peer is down: that would take a second replica
    away); one that does not run is started on its previous configuration, since it is down either way."""
    result.update(stopped="peer down", touched=True, peer_down=exc.peers)
    if node.is_running():
        result["left"] = "running on the new configuration"
        what = "%s is left running on the new configuration (not restarted a second time while a peer is down)" % (
            node.name
        )
    else:
        # Not running: no stop (nothing to stop), no wait on the peer that is down.
        started = _roll_back(node, backup, watch, stop=False, wait=False, step="start_previous")
        result["left"] = "started on the previous configuration" if started["ok"] else "down: " + started["error"]
        what = "%s, which was not running, %s" % (
            node.name,
            "was started on its previous configuration"
            if started["ok"]
            else "could not be started on its previous configuration either (%s)" % started["error"],
        )
    result["cluster"] = node.cluster_state()
    raise ReconfigureError(
        "%s: the roll stops here; %s. Bring %s back, check the cluster, then run the roll again (nodes already on "
        "the settings are skipped)" % (exc, what, ", ".join(sorted(exc.peers))),
        result,
    ) from exc


def _short(exc, lines=3, limit=900):
    """The first line of an error and the last few of what follows (e.g. the log tail a start failure carries)."""
    text = str(exc).strip().splitlines() or [""]
    shown = text[:1] + (["..."] if len(text) > lines + 1 else []) + text[1:][-lines:]
    joined = " | ".join(line.strip() for line in shown if line.strip())
    return joined if len(joined) <= limit else joined[: limit - 3] + "..."


def _roll_back(node, backup, watch, stop=True, wait=True, step="rollback"):
    """Put the node back on its previous configuration: stop it (stop), restore the file, start it, and wait until
    the cluster sees it back (wait). Returns {ok, steps, error}; never raises."""
    report = dict(ok=False, steps=[], error=None)
    try:
        with watch.step(step):
            if stop:
                node.stop(force=True)
                report["steps"].append("stop")
            if backup:
                node.restore_config(backup)
                report["steps"].append("restore config")
            node.start()
            report["steps"].append("start")
            if wait:
                node.wait_back()
                report["steps"].append("rejoin")
        report["ok"] = True
    except Exception as exc:
        report["error"] = _short(exc)
    return report


def _verify(node, catalog, wanted, result):
    live = node.read_current(list(wanted))
    wrong = {
        name: dict(wanted=value, live=live.get(name))
        for name, value in wanted.items()
        if live.get(name) is not None and not catalog.equal(name, live[name], value)
    }
    result["verified"] = {name: live.get(name) for name in wanted}
    if wrong:
        raise ReconfigureError(
            "%s: after the change the node runs %s"
            % (
                node.name,
                "; ".join("%s=%s (wanted %s)" % (n, w["live"], w["wanted"]) for n, w in sorted(wrong.items())),
            ),
            result,
        )
