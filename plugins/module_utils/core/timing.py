# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Timings and waits: how long each named step took, and a health check polled until it passes or times out.

Standard library only: this file is shipped to managed nodes.
"""

from __future__ import annotations

import time


def poll_health(check, timeout, interval):
    """Call check() -> (problems, views) until it finds no problem or timeout seconds have passed.

    Returns dict(healthy, problems, views, waited): the report every health check of the collection gives."""
    start = time.monotonic()
    while True:
        problems, views = check()
        waited = time.monotonic() - start
        if not problems or waited >= timeout:
            return dict(healthy=not problems, problems=problems, views=views, waited=round(waited, 3))
        time.sleep(interval)


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
