# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""core/checks.py: one wording for bad settings, whichever engine refuses them."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.core import checks


@dataclass(frozen=True)
class Settings:
    count: int = 3
    share: float = 0.5


def test_options_refuse_unknown_keys_by_name_and_take_whole_floats_as_ints():
    assert checks.options(Settings, None) == Settings()
    made = checks.options(Settings, {"count": 8.0, "share": 1.0})
    assert made == Settings(8, 1.0) and isinstance(made.count, int) and isinstance(made.share, float)
    assert isinstance(checks.options(Settings, {"count": 8.5}).count, float)  # the dataclass's own check decides
    with pytest.raises(KeyError, match=r"^'these.colour: not an option; allowed: count, share'$"):
        checks.options(Settings, {"colour": 1, "zeta": 2}, KeyError, "these")
