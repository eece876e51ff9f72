# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Loads the store's parameter catalog on the controller and passes it to the module reconfigure_node.

The catalog files are data of the collection, not shipped with a module's payload: modules that need them get
the catalog as an argument from an action plugin built on CatalogAction."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog import Catalog
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog_files import CatalogError


class CatalogAction(ActionBase):
    """Runs `module` with args["catalog"] filled from the collection's catalog files when wants_catalog(args)."""

    _supports_check_mode = True
    _supports_async = False
    module = "tactician.nosql.reconfigure_node"
    version_arg = "catalog_version"

    def wants_catalog(self, args):
        return True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        if not args.get("catalog") and self.wants_catalog(args):
            store = args.get("store", "cassandra")
            try:
                args["catalog"] = Catalog.for_store(store, args.get(self.version_arg)).to_dict()
            except (CatalogError, OSError, KeyError, ValueError) as exc:
                result.update(failed=True, msg="catalog of %s: %s" % (store, exc))
                return result
        result.update(self._execute_module(module_name=self.module, module_args=args, task_vars=task_vars))
        return result


class ActionModule(CatalogAction):
    pass
