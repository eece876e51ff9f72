# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The one way the engine imports an optional third-party library.

Nothing here imports a library when this file loads. ``optional(name)`` gives the module or None and keeps why it
failed; ``require(name, error, purpose)`` gives the module or raises ``error`` naming the library and what needed
it; ``missing(*names)`` lists [(package, reason)] of the absent ones, what a module passes to
core.module_support.fail_imports so that one message names every library to install.
"""

from __future__ import annotations

import importlib
import traceback

PACKAGES = {
    "numpy": "numpy",
    "scipy": "scipy",
    "sklearn": "scikit-learn",
    "statsmodels": "statsmodels",
    "pygad": "pygad",
    "river": "river",
    "matplotlib": "matplotlib",
    "yaml": "PyYAML",
    "ruamel": "ruamel.yaml",
    "jsonschema": "jsonschema",
    "cassandra": "cassandra-driver",
    "redis": "redis",
    "pymongo": "pymongo",
    "bson": "pymongo",
    "psycopg": "psycopg[binary]",
}
"""The package to install for each top-level module name (what pip and requirements.txt call it)."""

_FAILED = {}


def package_of(name):
    """The package that provides module `name` (dotted names count by their top level)."""
    top = name.split(".", 1)[0]
    return PACKAGES.get(top, top)


def optional(name):
    """The module `name` (a dotted name), or None when it cannot be imported; the reason is kept for missing()."""
    try:
        return importlib.import_module(name)
    except ImportError:
        _FAILED[name] = traceback.format_exc()
        return None


def missing(*names):
    """[(package, reason)] of the modules among names that cannot be imported, in order, each package once."""
    found = []
    for name in names:
        if optional(name) is None and package_of(name) not in [package for package, _reason in found]:
            found.append((package_of(name), _FAILED.get(name)))
    return found


def require(name, error, purpose):
    """The module `name`, or error("<purpose> needs the Python library <package> (pip install <package>)")."""
    module = optional(name)
    if module is None:
        package = package_of(name)
        raise error("%s needs the Python library %s (pip install %s)" % (purpose, package, package))
    return module
