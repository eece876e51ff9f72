"""Shared test setup: make the collection importable as ansible_collections.tactician.nosql."""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, ".collections")
_link = os.path.join(COLLECTIONS, "ansible_collections", "tactician", "nosql")
if not os.path.exists(_link):
    os.makedirs(os.path.dirname(_link), exist_ok=True)
    os.symlink(os.path.join("..", "..", ".."), _link)
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
