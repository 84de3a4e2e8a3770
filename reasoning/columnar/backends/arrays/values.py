"""Columns to and from Python values, and maps over a column's distinct values."""
from __future__ import annotations

from typing import Optional

import numpy as np

from reasoning.columnar.backends.arrays.frame import (NULL, _DT, _LISTS, Col, _m_or,
                                                      _norm_mask)
from reasoning.columnar.backends.arrays.intern import (_LST, _SYM, Symbols, _elem_ids,
                                                       _elem_vals, _tuple)
from reasoning.columnar.layout import BOOL, INT, OBJ, STRLIST


def _decode(c: Col) -> list:
    """Python values of a column (None for nulls; a list as a tuple of its values)."""
    if c.k == OBJ:
        out = _SYM.decode(c.v)
    elif c.k in _LISTS:
        out = _LST.decode(c.v)
        if c.k == STRLIST:
            out = [None if t is None else _elem_vals(t) for t in out]
        else:
            out = [None if t is None else _tuple(t) for t in out]
    elif c.k == NULL:
        return [None] * c.v.size
    else:
        out = c.v.tolist()
    if c.m is not None:
        out = [None if mm else x for x, mm in zip(out, c.m.tolist())]
    return out


def _encode(vals: list, kind: str) -> Col:
    """A Col of Python values (None for null)."""
    n = len(vals)
    if kind == OBJ:
        v = _SYM.encode(vals) if n else np.zeros(0, np.int64)
        m = v < 0
    elif kind in _LISTS:
        conv = _elem_ids if kind == STRLIST else tuple
        v = _LST.encode([None if x is None else conv(x) for x in vals]) if n \
            else np.zeros(0, np.int64)
        m = v < 0
    else:
        m = np.fromiter((x is None for x in vals), bool, n)
        dt = _DT[kind]
        if m.any():
            fill = False if kind == BOOL else 0
            v = np.array([fill if x is None else x for x in vals], dtype=dt)
        else:
            v = np.array(vals, dtype=dt) if n else np.zeros(0, dt)
    return Col(v, _norm_mask(m), kind)


def _map_distinct(c: Col, fn, kind: str, table: Optional[Symbols] = None,
                  put=None) -> Col:
    """fn once per distinct non-null id of c (a string of an OBJ column; with table=_LST and
    put=_internal, a list as the columns hold it), re-encoded as `kind` by put (default
    _encode, from Python values); nulls stay null."""
    if c.v.size == 0:
        return Col(np.zeros(0, _DT[kind]), None, kind)
    vals = (table or _SYM).vals
    u, inv = np.unique(c.v, return_inverse=True)
    got = (put or _encode)([fn(vals[i]) if i >= 0 else None for i in u.tolist()], kind)
    return _per_row(got, inv, c)


def _per_row(got: Col, inv: np.ndarray, c: Col) -> Col:
    """The values computed once per distinct id of c (got) spread back over c's rows
    (inv: each row's distinct index); c's nulls stay null."""
    m = None if got.m is None else got.m[inv]
    return Col(got.v[inv], _norm_mask(_m_or(m, c.m)), got.k)


def _elements(flat: list, kind: str) -> Col:
    """A column of list elements (string ids, -1 null; or ints, None null)."""
    if kind == OBJ:
        v = np.array(flat, dtype=np.int64) if flat else np.zeros(0, np.int64)
        return Col(v, _norm_mask(v < 0), OBJ)
    return _encode(flat, INT)


def _internal(vals: list, kind: str) -> Col:
    """A Col of values as the columns hold them (string ids, tuples of element ids or
    ints, ints, bools; None for null)."""
    if kind in _LISTS:
        v = _LST.encode(vals) if vals else np.zeros(0, np.int64)
        return Col(v, _norm_mask(v < 0), kind)
    if kind == OBJ:
        v = np.array([-1 if x is None else x for x in vals], dtype=np.int64)
        return Col(v, _norm_mask(v < 0), kind)
    return _encode(vals, kind)


def _map_lists(c: Col, fn, kind: str) -> Col:
    """fn over the distinct non-null lists of a list column (tuples of element ids or
    ints), its results in the columns' own form (`_internal`); nulls stay null."""
    return _map_distinct(c, fn, kind, _LST, _internal)
