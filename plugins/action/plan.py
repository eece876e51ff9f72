# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Loads, on the controller, what module plan needs from the collection's data: the store's parameter catalog (the
search honours its types, ranges and memory budget) and, for mode heterogeneous, the VM catalog (O(vm_catalog) or
the collection's sample, catalog/vms/aws-us-east-1.yml) unless O(vms) is given, and for mode tactic the labelled
runs of O(advisor_bootstrap) (a file on the controller, or the name of a sample under catalog/advisor)."""

from __future__ import annotations

import os

from ansible_collections.tactician.nosql.plugins.action.reconfigure_node import CatalogAction
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog_files import catalog_dir
from ansible_collections.tactician.nosql.plugins.module_utils.models import advisor
from ansible_collections.tactician.nosql.plugins.module_utils.planning import vm_types

DEFAULT_VM_CATALOG = "aws-us-east-1.yml"


class ActionModule(CatalogAction):
    module = "tactician.nosql.plan"
    version_arg = "store_version"

    def wants_catalog(self, args):
        return args.get("mode", "dynamic") != "tactic"

    def run(self, tmp=None, task_vars=None):
        args = self._task.args
        if args.get("mode") == "heterogeneous" and not args.get("vms"):
            path = args.get("vm_catalog") or os.path.join(catalog_dir(), "vms", DEFAULT_VM_CATALOG)
            try:
                vms = vm_types.load_vms(path)
            except vm_types.HeteroError as exc:
                return dict(failed=True, msg=str(exc))
            self._task.args = dict(args, vms=vms, vm_catalog=path)
        if args.get("mode") == "tactic" and args.get("advisor_bootstrap"):
            path = advisor_runs_path(args["advisor_bootstrap"])
            try:
                runs = advisor.read_runs(path)
                advisor.check_runs(runs, "advisor_bootstrap: %s" % path)
            except advisor.AdvisorError as exc:
                return dict(failed=True, msg=str(exc))
            self._task.args = dict(self._task.args, advisor_bootstrap=path, advisor_runs=runs)
        return super().run(tmp, task_vars)


def advisor_runs_path(value):
    """A controller file, else the collection's sample of that name (catalog/advisor/<name>.jsonl)."""
    value = os.path.expanduser(str(value))
    if os.path.exists(value):
        return value
    sample = os.path.join(catalog_dir(), "advisor", os.path.basename(value))
    if not sample.endswith(".jsonl"):
        sample += ".jsonl"
    return sample if os.path.exists(sample) else value
