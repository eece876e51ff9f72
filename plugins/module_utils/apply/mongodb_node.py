# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""A MongoDB node for the step machine: getParameter / setParameter; a primary steps down before it stops; back =
the member answers hello as primary or secondary.
"""

from __future__ import annotations

import time

from ansible_collections.tactician.nosql.plugins.module_utils.apply.node_base import BaseNode, dig
from ansible_collections.tactician.nosql.plugins.module_utils.core import process
from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import client as mongo


class MongoNode(BaseNode):
    store = "mongodb"

    def __init__(self, params, catalog):
        super().__init__(params, catalog)
        self.conn_params = mongo.params_from_any(params, params["address"])
        self.name = "%s:%d" % (self.conn_params["login_host"], self.conn_params["login_port"])
        self.client_factory = params.get("client_factory") or mongo.connect

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

    def prepare_restart(self):
        if not self.params.get("stop_command") or not self.params.get("start_command"):
            raise RuntimeError("a restart of mongod needs stop_command and start_command (e.g. systemctl argv)")
        client = self._admin()
        try:
            hello = client.admin.command("hello")
            if hello.get("isWritablePrimary") and hello.get("setName"):
                client.admin.command("replSetStepDown", int(self.params.get("step_down_seconds") or 60))
                return ["step down"]
        except Exception as exc:
            if "not primary" not in str(exc).lower() and "connection" not in str(exc).lower():
                raise
        finally:
            client.close()
        return []

    def stop(self, force=False):
        self._run(self.params["stop_command"], "stop_command")

    def start(self):
        self._run(self.params["start_command"], "start_command")

    def wait_back(self):
        timeout = float(self.params.get("rejoin_timeout") or 600)
        started = time.monotonic()
        state = {}
        exited = self.exit_watch()

        def back():
            exited.check(self.name)  # a process gone ends the wait (BaseNode.exit_watch)
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

        process.wait_until(back, timeout, 1.0, what="%s to answer as primary or secondary" % self.name)
        return dict(seconds=round(time.monotonic() - started, 3), secondary=bool(state.get("secondary")))
