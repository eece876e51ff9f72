# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Student t quantiles: scipy's, and without scipy a table and the Cornish-Fisher expansion close to them."""

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.core import errors, imports, stats

EXACT = {(0.9, 1): 3.0777, (0.9, 2): 1.8856, (0.9, 5): 1.4759, (0.9, 30): 1.3104, (0.95, 3): 2.3534}
EXACT_975 = {1: 12.7062, 2: 4.3027, 10: 2.2281, 45: 2.0141}


def test_with_scipy_the_quantiles_are_exact():
    for (p, df), value in EXACT.items():
        assert stats.t_quantile(p, df) == pytest.approx(value, abs=1e-3)
    assert stats.t_quantile(0.1, 2) == pytest.approx(-1.8856, abs=1e-3)


def test_without_scipy_the_quantiles_stay_close(monkeypatch):
    real = imports.optional
    monkeypatch.setattr(imports, "optional", lambda name: None if name.startswith("scipy") else real(name))
    for (p, df), value in EXACT.items():
        assert stats.t_quantile(p, df) == pytest.approx(value, abs=0.07 if df == 1 else 0.003)
    for df, value in EXACT_975.items():
        assert stats.t_quantile(0.975, df) == pytest.approx(value, abs=2e-3)


@pytest.mark.parametrize("df", [0, 0.5, None, True, "3"])
def test_too_few_degrees_of_freedom_name_the_field(df):
    with pytest.raises(errors.CoreError, match=r"^pairs: .*at least 1 degree of freedom"):
        stats.t_quantile(0.975, df, field="pairs")
