# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Student t quantiles, the one place the engine takes them from.

``t_quantile(p, df)``: scipy's when scipy is there; else the exact table for p = 0.975 (1 to 30 degrees of
freedom, interpolated in 1/df above) and the Cornish-Fisher expansion around the normal quantile for any other
p (within 0.003 of the exact value from 2 degrees of freedom on; 0.07 at 1), so that a guard without scipy is as
strict as one with it, not laxer.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from ansible_collections.tactician.nosql.plugins.module_utils.core import imports
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import CoreError

_T975 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.306, 2.2622, 2.2281,
    2.201, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.093, 2.086,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)  # fmt: skip
"""The 97.5 % quantile of Student's t for 1 to 30 degrees of freedom."""
_T975_TAIL = ((30, 2.0423), (40, 2.0211), (60, 2.0003), (120, 1.9799), (math.inf, 1.95996))


def t_quantile(p, df, field="df"):
    """The p quantile of Student's t with df degrees of freedom (df may be fractional, as Welch's). Raises
    CoreError naming field when df < 1, and naming p outside (0, 1)."""
    if df is None or isinstance(df, bool) or not isinstance(df, int | float) or df < 1:
        raise CoreError("%s: %r: a t quantile needs at least 1 degree of freedom" % (field, df))
    if not 0.0 < p < 1.0:
        raise CoreError("p: %r: a quantile's probability lies strictly between 0 and 1" % (p,))
    if p < 0.5:
        return -t_quantile(1.0 - p, df, field)
    stats = imports.optional("scipy.stats")
    if stats is not None:
        return float(stats.t.ppf(p, df))
    if abs(p - 0.975) < 1e-12:
        return _t975_table(df)
    return _cornish_fisher(p, df)


def _t975_table(df):
    if df <= 30:
        return _T975[int(math.floor(df)) - 1]
    for (lo, t_lo), (hi, t_hi) in zip(_T975_TAIL, _T975_TAIL[1:], strict=False):
        if df <= hi:
            x, x_lo, x_hi = 1.0 / df, 1.0 / lo, (0.0 if math.isinf(hi) else 1.0 / hi)
            return t_hi + (t_lo - t_hi) * (x - x_hi) / (x_lo - x_hi)
    return _T975_TAIL[-1][1]


def _cornish_fisher(p, df):
    """The t quantile from the normal one, four terms of the Cornish-Fisher expansion in 1/df."""
    z = NormalDist().inv_cdf(p)
    z2 = z * z
    terms = (
        z * (z2 + 1) / 4,
        z * ((5 * z2 + 16) * z2 + 3) / 96,
        z * (((3 * z2 + 19) * z2 + 17) * z2 - 15) / 384,
        z * ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) / 92160,
    )
    return z + sum(term / df ** (i + 1) for i, term in enumerate(terms))
