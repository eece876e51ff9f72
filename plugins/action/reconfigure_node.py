# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Loads the store's parameter catalog on the controller and passes it to the module reconfigure_node."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.tactician.nosql.plugins.module_utils.catalog import Catalog, CatalogError


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        if not args.get("catalog"):
            try:
                args["catalog"] = Catalog.for_store(args.get("store"), args.get("catalog_version")).to_dict()
            except (CatalogError, OSError, KeyError, ValueError) as exc:
                result.update(failed=True, msg="catalog of %s: %s" % (args.get("store"), exc))
                return result
        result.update(
            self._execute_module(module_name="tactician.nosql.reconfigure_node", module_args=args, task_vars=task_vars)
        )
        return result
