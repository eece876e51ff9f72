# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""What the benchmark scripts share: the repository root, and the collection importable as
ansible_collections.tactician.nosql (scripts/bootstrap.sh links it; a fresh clone without the link still runs)."""

from __future__ import annotations

import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, ".collections")


def use_collection(integration=False):
    """Put the collection (and, with integration, the integration tests' playbook runner) on sys.path."""
    link = os.path.join(COLLECTIONS, "ansible_collections", "tactician", "nosql")
    if not os.path.exists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.join("..", "..", ".."), link)
    if COLLECTIONS not in sys.path:
        sys.path.insert(0, COLLECTIONS)
    if integration:
        sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))


def stamped_log(path):
    """A log function: each line printed with the time of day, and appended to path."""

    def log(text):
        line = "[%s] %s" % (time.strftime("%H:%M:%S"), text)
        print(line, flush=True)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    return log
