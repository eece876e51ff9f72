# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The layers of plugins/module_utils as they are on disk: every file in a package, imports only downwards.

The rules (docs/architecture.md): models and planning never import stores (they run offline, with no driver);
stores never import planning, models, apply or trials; only stores import a database driver; nothing in
module_utils imports the collection's modules or other plugins; every error the engine raises is a TacticianError
of its own layer.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.core import errors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
COLLECTION = "ansible_collections.tactician.nosql"
BASE = COLLECTION + ".plugins.module_utils"

ALLOWED = {
    "core": set(),
    "workload": {"core"},
    "telemetry": {"core", "workload"},
    "stores": {"core", "workload", "telemetry"},
    "models": {"core", "workload", "telemetry"},
    "planning": {"core", "workload", "telemetry", "models"},
    "apply": {"core", "workload", "telemetry", "stores"},
    "trials": {"core", "workload", "telemetry", "stores", "models"},
}
"""Which other packages each package may import (its own always)."""

DRIVERS = ("cassandra", "redis", "pymongo", "bson")


def _files():
    for folder, _dirs, names in os.walk(MODULE_UTILS):
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, MODULE_UTILS), path


FILES = sorted(_files())


def _imports(path):
    """(line, module name) of every import in the file, function-level ones included."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module
            if node.module == BASE:  # from ...module_utils import <package>
                for alias in node.names:
                    yield node.lineno, BASE + "." + alias.name


def _dotted(rel):
    return BASE + "." + rel[: -len(".py")].replace(os.sep, ".")


def test_every_file_is_in_a_layer_package():
    loose = [rel for rel, _path in FILES if os.sep not in rel]
    assert not loose, "files directly under plugins/module_utils (put each in its layer's package): %s" % loose
    layers = sorted({rel.split(os.sep)[0] for rel, _path in FILES})
    assert layers == sorted(ALLOWED), "the packages on disk and the layers of this test differ"


def test_every_package_has_an_empty_init_and_a_readme():
    for folder, dirs, _names in os.walk(MODULE_UTILS):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        if folder == MODULE_UTILS:
            continue
        init = os.path.join(folder, "__init__.py")
        assert os.path.isfile(init), "%s has no __init__.py" % folder
        assert os.path.getsize(init) == 0, "%s is not empty (ansible-test's empty-init rule)" % init
        readme = os.path.join(folder, "README.md")
        assert os.path.isfile(readme), "%s has no README.md saying what belongs there" % folder
        with open(readme, encoding="utf-8") as handle:
            text = " ".join(handle.read().split())
        assert "May import" in text, "%s does not say what the package may import" % readme


@pytest.mark.parametrize("rel", [rel for rel, _path in FILES])
def test_imports_go_only_downwards(rel):
    layer = rel.split(os.sep)[0]
    bad = []
    for line, module in _imports(os.path.join(MODULE_UTILS, rel)):
        if module.startswith(COLLECTION) and not module.startswith(BASE + "."):
            if module != BASE:
                bad.append("line %d imports %s: module_utils never imports modules or other plugins" % (line, module))
            continue
        if module.startswith(BASE + "."):
            target = module[len(BASE) + 1 :].split(".")[0]
            if target != layer and target not in ALLOWED[layer]:
                bad.append(
                    "line %d imports %s: %s may import only %s"
                    % (line, module, layer, ", ".join(sorted(ALLOWED[layer])) or "core itself")
                )
        elif module.split(".")[0] in DRIVERS and layer != "stores":
            bad.append("line %d imports the driver %s: only stores/ imports a database driver" % (line, module))
    assert not bad, "%s:\n  %s" % (rel, "\n  ".join(bad))


def test_the_import_rules_hold_as_the_architecture_says():
    for layer in ("models", "planning"):
        assert "stores" not in ALLOWED[layer]
    for layer in ("planning", "models", "apply", "trials"):
        assert layer not in ALLOWED["stores"]
    assert not any("trials" in allowed for allowed in ALLOWED.values())


def test_models_and_planning_load_with_no_driver_and_no_store_module():
    """Transitively too: importing every models/ and planning/ file with the drivers blocked loads no stores/ file."""
    modules = [_dotted(rel) for rel, _path in FILES if rel.split(os.sep)[0] in ("models", "planning")]
    script = (
        "import json, sys\n"
        "for name in %r: sys.modules[name] = None\n"
        "sys.path.insert(0, %r)\n"
        "import importlib\n"
        "for name in %r: importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(%r))))\n"
    ) % (DRIVERS, os.path.join(ROOT, ".collections"), modules, BASE + ".stores")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def _error_classes():
    for rel, _path in FILES:
        if rel == os.path.join("core", "errors.py"):
            continue
        module = importlib.import_module(_dotted(rel))
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and name != "Pending"  # racing's signal that results are missing, not an error
            ):
                yield rel.split(os.sep)[0], module.__name__ + "." + name, value


def test_every_error_is_a_tactician_error_of_its_layer():
    wrong = [
        "%s subclasses %s" % (name, [base.__name__ for base in cls.__mro__[1:]])
        for layer, name, cls in _error_classes()
        if not issubclass(cls, errors.LAYERS[layer])
    ]
    assert not wrong, "errors outside their layer's class (core/errors.py):\n  " + "\n  ".join(wrong)
    assert all(issubclass(cls, errors.TacticianError) for cls in errors.LAYERS.values())
