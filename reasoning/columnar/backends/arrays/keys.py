"""Key columns packed for the compiled kernels: joins, memberships, group ids, distinct ints."""
from __future__ import annotations

import numpy as np

from reasoning.native import kernels
from reasoning.columnar.backends.arrays.frame import Col


def _keymats(sides: list[list[Col]], nulls_equal: bool = False) -> list[tuple]:
    """Per side, (key columns, ok) for the compiled kernels (kernels.join_rows): each key
    column's int64 values, preceded by its null flag where any side's column has nulls (a
    null is equal only to a null); ok is False for a row with a null key unless nulls_equal
    (None: every row)."""
    n_keys = len(sides[0])
    nullable = [any(g[j].m is not None for g in sides) for j in range(n_keys)]
    out = []
    for g in sides:
        n = g[0].v.size if g else 0
        parts = []
        ok = None
        for j, c in enumerate(g):
            v = c.v
            if v.dtype == np.float64:
                v = (v + 0.0).view(np.int64)  # -0.0 as 0.0
            elif v.dtype != np.int64:
                v = v.astype(np.int64)
            if nullable[j]:
                if c.m is not None:
                    v = np.where(c.m, 0, v)
                    parts.append(c.m.astype(np.int64))
                    if not nulls_equal:
                        ok = ~c.m if ok is None else ok & ~c.m
                else:
                    parts.append(np.zeros(n, np.int64))
            parts.append(v)
        out.append((parts, ok))
    return out


def _member_mask(lcols: list[Col], rcols: list[Col], nulls_equal: bool) -> np.ndarray:
    """Whether each left row's key (the columns lcols) equals some right row's (rcols)."""
    (L, okl), (R, okr) = _keymats([lcols, rcols], nulls_equal)
    return kernels.member_rows(L, okl, R, okr)


def _distinct_ints(v: np.ndarray) -> np.ndarray:
    """np.unique(v) of an int64 array; a bitmap when the values span little more than
    there are of them (a slice's times: a few values, 10× cheaper than sorting 10⁴)."""
    if v.size < 64:
        return np.unique(v)
    lo, hi = int(v.min()), int(v.max())
    if hi - lo >= 4 * v.size:
        return np.unique(v)
    return np.flatnonzero(np.bincount(v - lo)) + lo


def _group_ids(cs: list[Col]):
    """(group id per row, first row of each group) over the columns (nulls equal)."""
    ((K, _),) = _keymats([cs], True)
    return kernels.factorize_rows(K)
