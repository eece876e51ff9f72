# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Helpers shared by every module: one report of all missing libraries, timings."""

from __future__ import annotations

import time

from ansible.module_utils.basic import missing_required_lib


def fail_imports(module, missing):
    """Fail once, naming every missing library. missing: list of (library, traceback or None)."""
    if not missing:
        return
    names = ", ".join(name for name, _tb in missing)
    module.fail_json(
        msg=missing_required_lib(names),
        exception="\n".join(tb for _name, tb in missing if tb),
    )


class Stopwatch:
    """Records how long each named step took (seconds, rounded to ms)."""

    def __init__(self):
        self.steps = {}

    def step(self, name):
        return _Step(self, name)


class _Step:
    def __init__(self, watch, name):
        self.watch = watch
        self.name = name
        self.start = 0.0

    def __enter__(self):
        self.start = time.monotonic()
        return self

    def __exit__(self, *exc):
        self.watch.steps[self.name] = round(time.monotonic() - self.start, 3)
        return False
