# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The error root (core/errors.py) and how a module reports an engine error (core/module_support.fail)."""

from __future__ import annotations

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.core import errors
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import (
    CoreError,
    StoreError,
    TacticianError,
    reported_as,
)
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail


class _Own(StoreError):
    def report(self):
        return {"commands": ["a"], "changed": True}


def test_every_layer_has_its_class_under_the_root():
    assert sorted(errors.LAYERS) == ["apply", "core", "models", "planning", "stores", "telemetry", "trials", "workload"]
    assert all(issubclass(cls, TacticianError) and cls is not TacticianError for cls in errors.LAYERS.values())
    assert TacticianError("x").report() == {}


def test_a_foreign_exception_becomes_the_layer_error_with_its_context():
    with pytest.raises(StoreError, match="^CQL error on keyspace ks: no host$") as info:
        with reported_as(StoreError, "CQL error on keyspace ks"):
            raise OSError("no host")
    assert isinstance(info.value.__cause__, OSError)
    with pytest.raises(StoreError, match="^CQL error on index i: KeyError: 'x'$"):
        with reported_as(StoreError, "CQL error on index i", with_type=True):
            raise KeyError("x")
    with pytest.raises(StoreError, match="^invalid literal$"):
        with reported_as(StoreError, None):
            raise ValueError("invalid literal")


def test_engine_errors_pass_as_they_are_unless_told_otherwise():
    with pytest.raises(CoreError, match="^catalog: bad$"):
        with reported_as(StoreError, "node 1"):
            raise CoreError("catalog: bad")
    with pytest.raises(StoreError, match="^node 1: catalog: bad$"):
        with reported_as(StoreError, "node 1", passing=_Own):
            raise CoreError("catalog: bad")
    with pytest.raises(_Own, match="^mine$"):
        with reported_as(StoreError, "node 1", passing=_Own):
            raise _Own("mine")
    with pytest.raises(StoreError, match="^node 1: mine$"):
        with reported_as(StoreError, "node 1", passing=()):
            raise _Own("mine")


def test_nothing_happens_without_an_error():
    with reported_as(StoreError, "x"):
        value = 1
    assert value == 1


class _Module:
    def __init__(self):
        self.failed = None

    def fail_json(self, **result):
        self.failed = result


def test_fail_reports_the_message_as_it_is_with_what_the_error_carries():
    module = _Module()
    fail(module, _Own("index i: refused"), path="/x")
    assert module.failed == {"msg": "index i: refused", "path": "/x", "commands": ["a"], "changed": True}
    fail(module, CoreError("catalog: bad"))
    assert module.failed == {"msg": "catalog: bad"}
