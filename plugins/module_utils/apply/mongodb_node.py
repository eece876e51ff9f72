# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""A MongoDB node for the step machine: getParameter / setParameter; right before a stop the whole replica set
healthy and caught up (apply/mongodb_roll.py); a primary steps down and another member is elected before it stops;
back = the member answers hello as primary or secondary (the whole set afterwards: the roll's check after each
member, module mongodb_replica_set).
"""

from __future__ import annotations

import time

from ansible_collections.tactician.nosql.plugins.module_utils.apply import guards, mongodb_roll
from ansible_collections.tactician.nosql.plugins.module_utils.apply.node_base import BaseNode, dig
from ansible_collections.tactician.nosql.plugins.module_utils.core import process
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import client as mongo
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import replset


class MongoNode(BaseNode):
    store = "mongodb"

    def __init__(self, params, catalog):
        super().__init__(params, catalog)
        self.conn_params = mongo.params_from_any(params, params["address"])
        self.name = "%s:%d" % (self.conn_params["login_host"], self.conn_params["login_port"])
        self.client_factory = params.get("client_factory") or mongo.connect
        self.poll_interval = float(params.get("poll_interval") or 1.0)
        self.last_view = None

    def _admin(self):
        return self.client_factory(self.conn_params)

    def read_current(self, names):
        client = self._admin()
        try:
            current = {}
            for name in names:
                setting = self.catalog.setting_name(name)
                if not setting:
                    current[name] = None
                    continue
                if setting.startswith("serverStatus."):
                    value = dig(client.admin.command("serverStatus"), setting[len("serverStatus.") :])
                else:
                    value = client.admin.command("getParameter", 1, **{setting: 1}).get(setting)
                current[name] = None if value is None else self.catalog.normalize(name, value)
            return current
        finally:
            client.close()

    def apply_live(self, name, value, state):
        parameters = self.catalog.live_action(name, value, state)["set_parameter"]
        client = self._admin()
        try:
            client.admin.command("setParameter", 1, **parameters)
        finally:
            client.close()
        return "setParameter %s" % ", ".join("%s=%s" % item for item in sorted(parameters.items()))

    def persist_live(self, wanted):
        if not self.config_file:
            return None
        written = self.write_config(wanted)
        return written if written.get("changed") else None

    def _view(self):
        client = self._admin()
        try:
            return replset.read_view(client)
        finally:
            client.close()

    def check_before_stop(self):
        """Right before the member stops: the whole replica set healthy (every member PRIMARY, SECONDARY or
        ARBITER, one primary, every secondary within guard.max_lag_s of it), waited for up to guard.max_wait_s;
        a standalone has no set to check. Raises guards.ClusterNotReady (nothing touched)."""
        seen = mongodb_roll.wait_healthy(
            self._view,
            self.guard.max_lag_s,
            self.guard.max_wait_s,
            "before %s stops" % self.name,
            interval_s=self.poll_interval,
        )
        self.last_view = seen["view"]
        return dict(replica_set=seen["summary"], waited_s=seen["waited_s"])

    def prepare_restart(self):
        """A primary steps down (replSetStepDown) and the step waits until another member is elected before it
        is stopped; a secondary, an arbiter or a standalone needs nothing."""
        if not self.params.get("stop_command") or not self.params.get("start_command"):
            raise RuntimeError("a restart of mongod needs stop_command and start_command (e.g. systemctl argv)")
        view = self.last_view or self._view()
        if view["kind"] != "replica_set" or view["primary"] is None or not self._is_me(view, view["primary"]):
            return []
        client = self._admin()
        try:
            replset.step_down(client, int(self.params.get("step_down_seconds") or 60))
        finally:
            client.close()
        elected = mongodb_roll.wait_new_primary(
            self._view, view["primary"], self.guard.max_wait_s, interval_s=self.poll_interval
        )
        return ["step down", "new primary %s" % elected]

    def _is_me(self, view, name):
        """Whether the member name of the view is this node (the member asked is marked self)."""
        return any(m["self"] and m["name"] == name for m in view["members"]) or name == self.name

    def stop(self, force=False):
        self._run(self.params["stop_command"], "stop_command")

    def start(self):
        self._run(self.params["start_command"], "start_command")

    def _peers(self):
        """The other members of the set as seen right before the stop (none for a standalone)."""
        view = self.last_view
        if not view or view["kind"] != "replica_set":
            return []
        return [m["name"] for m in view["members"] if not self._is_me(view, m["name"])]

    def _peer_watch(self):
        """A check for the rejoin's polls: while this member is away, the first other member that answers reports
        the set; a member other than this one unreachable from it (health 0), or no other member answering at all,
        in guard.peer_down_polls polls in a row raises guards.PeerDownError (the step then stops: never a second
        member down at once)."""
        peers = self._peers()
        watch = guards.PeerWatch(self.guard.peer_down_polls)

        def check():
            if not peers:
                return
            connections = [mongo.params_from_any(self.params, name) for name in peers]
            try:
                view = replset.read_first(connections, self.client_factory)
            except mongo.MongoAdminError as exc:
                seen = {name: "answers no connection (%s)" % str(exc).splitlines()[0][:200] for name in peers}
            else:
                seen = {
                    m["name"]: "unreachable from the member asked (health 0, %s)" % m["state"]
                    for m in view["members"]
                    if m["name"] in peers and m["health"] < 1
                }
            confirmed = watch.update(seen)
            if confirmed:
                raise guards.PeerDownError(confirmed, "while %s was away" % self.name)

        return check

    def wait_back(self):
        timeout = float(self.params.get("rejoin_timeout") or 600)
        started = time.monotonic()
        state = {}
        exited = self.exit_watch()
        peers_down = self._peer_watch()

        def back():
            exited.check(self.name)  # a process gone ends the wait (BaseNode.exit_watch)
            peers_down()  # another member gone ends it too, with the roll stopped (node_step._stop_for_peer)
            client = None
            try:
                client = self._admin()
                hello = client.admin.command("hello")
                state.update(hello)
                if hello.get("setName"):
                    return bool(hello.get("isWritablePrimary") or hello.get("secondary"))
                return True
            except Exception:
                return False
            finally:
                if client is not None:
                    client.close()

        process.wait_until(back, timeout, self.poll_interval, what="%s to answer as primary or secondary" % self.name)
        # The whole set afterwards (caught up, one primary) is the roll's check after each member (module
        # mongodb_replica_set): a set slow to catch up stops the roll there, without restarting this member again.
        return dict(seconds=round(time.monotonic() - started, 3), secondary=bool(state.get("secondary")))
