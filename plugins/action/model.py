# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Loads the store's parameter catalog on the controller for module model (designs and surrogates need it)."""

from __future__ import annotations

from ansible_collections.tactician.nosql.plugins.action.reconfigure_node import CatalogAction


class ActionModule(CatalogAction):
    module = "tactician.nosql.model"
    version_arg = "store_version"

    def wants_catalog(self, args):
        return args.get("action") == "design" or (args.get("action") == "fit" and args.get("kind") == "surrogate")
