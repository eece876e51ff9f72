# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Loads the store's parameter catalog on the controller for module plan (the search honours its types, ranges
and memory budget)."""

from __future__ import annotations

from ansible_collections.tactician.nosql.plugins.action.reconfigure_node import CatalogAction


class ActionModule(CatalogAction):
    module = "tactician.nosql.plan"
    version_arg = "store_version"
