"""The expression language: Ex (f(frame) -> Col), literals, the operators' column operations."""
from __future__ import annotations

from typing import Optional

import numpy as np

from reasoning.columnar.backends.arrays.frame import (NULL, _DT, _IDS, _LISTS, Col, Frame, _m_or,
                                                      _norm_mask)
from reasoning.columnar.backends.arrays.intern import _LST, _SYM, _elem_ids
from reasoning.columnar.backends.arrays.values import _decode
from reasoning.columnar.layout import BOOL, FLOAT, INT, OBJ, STRLIST


class Ex:
    """An expression: f(frame) -> Col, with the name a select gives its column."""

    __slots__ = ("f", "name", "agg", "const")

    def __init__(self, f, name: Optional[str] = None, agg: Optional[str] = None):
        self.f, self.name, self.agg = f, name, agg
        self.const: Optional[Col] = None  # a non-null literal: its value as a 0-d column

    def __call__(self, fr: Frame) -> Col:
        return self.f(fr)

    # arithmetic and comparison (Polars semantics: null in, null out)
    def _bin(self, other, op, ordered: bool = False):
        """op on both sides' columns; a literal side is passed as a 0-d column (numpy
        broadcasts it: no column of the frame's height is made), except an interned value
        under an order comparison (_cmp decodes those)."""
        o = _ex(other)
        a, b = self, o
        ca, cb = a.const, b.const
        lit = cb if ca is None else ca
        if (ca is None) != (cb is None) and not (ordered and lit.k in _IDS):
            if cb is not None:
                def f(fr, a=a, c=cb):
                    return op(a(fr), c)
            else:
                def f(fr, b=b, c=ca):
                    return op(c, b(fr))
            return Ex(f, self.name)

        def f(fr, a=a, b=b):
            x, y = a(fr), b(fr)
            return op(x, y)
        return Ex(f, self.name)

    def __add__(self, o):
        return self._bin(o, lambda x, y: _arith(x, y, np.add))

    def __radd__(self, o):
        return _ex(o)._bin(self, lambda x, y: _arith(x, y, np.add))

    def __sub__(self, o):
        return self._bin(o, lambda x, y: _arith(x, y, np.subtract))

    def __rsub__(self, o):
        return _ex(o)._bin(self, lambda x, y: _arith(x, y, np.subtract))

    def __mul__(self, o):
        return self._bin(o, lambda x, y: _arith(x, y, np.multiply))

    def __floordiv__(self, o):
        return self._bin(o, lambda x, y: _arith(x, y, _floordiv))

    def __mod__(self, o):
        return self._bin(o, lambda x, y: _arith(x, y, _mod))

    def __neg__(self):
        return Ex(lambda fr, a=self: _neg(a(fr)), self.name)

    def __eq__(self, o):  # type: ignore[override]
        return self._bin(o, lambda x, y: _cmp(x, y, np.equal))

    def __ne__(self, o):  # type: ignore[override]
        return self._bin(o, lambda x, y: _cmp(x, y, np.not_equal))

    def __lt__(self, o):
        return self._bin(o, lambda x, y: _cmp(x, y, np.less), ordered=True)

    def __le__(self, o):
        return self._bin(o, lambda x, y: _cmp(x, y, np.less_equal), ordered=True)

    def __gt__(self, o):
        return self._bin(o, lambda x, y: _cmp(x, y, np.greater), ordered=True)

    def __ge__(self, o):
        return self._bin(o, lambda x, y: _cmp(x, y, np.greater_equal), ordered=True)

    def __and__(self, o):
        return self._bin(o, _and)

    def __rand__(self, o):
        return _ex(o)._bin(self, _and)

    def __or__(self, o):
        return self._bin(o, _or)

    def __ror__(self, o):
        return _ex(o)._bin(self, _or)

    def __invert__(self):
        return Ex(lambda fr, a=self: _not(a(fr)), self.name)

    __hash__ = object.__hash__


def _const(value, kind: Optional[str]) -> tuple:
    """(scalar for np.full, is null, kind) of a literal."""
    if value is None:
        return 0, True, kind or NULL
    if kind is None:
        kind = (BOOL if isinstance(value, bool) else INT if isinstance(value, int)
                else FLOAT if isinstance(value, float) else OBJ if isinstance(value, str)
                else STRLIST)
    if kind == OBJ:
        i = _SYM.id(str(value))
        _SYM.pinned.add(i)
        return i, False, kind
    if kind in _LISTS:
        t = _elem_ids(value) if kind == STRLIST else tuple(value)
        if kind == STRLIST:
            _SYM.pinned.update(x for x in t if x >= 0)
        i = _LST.id(t)
        _LST.pinned.add(i)
        return i, False, kind
    if kind == FLOAT:
        return float(value), False, kind
    if kind == BOOL:
        return bool(value), False, kind
    return int(value), False, kind


MEMO_ROWS = 4096  # a literal's column is memoised up to this height


def _lit_ex(value, kind: Optional[str] = None) -> Ex:
    s, isnull, k = _const(value, kind)
    dt = _DT[k]
    memo: list = [-1, None]  # the last height and its column (columns are never mutated)

    def f(fr):
        n = fr.n
        if memo[0] != n:
            col = Col(np.full(n, s, dtype=dt), np.ones(n, bool) if isnull else None, k)
            if n > MEMO_ROWS:
                return col  # (a cached literal keeps no tall column: ArraysBackend.lit)
            memo[0], memo[1] = n, col
        return memo[1]
    ex = Ex(f, "literal")
    if not isnull and k != NULL:
        ex.const = Col(np.array(s, dtype=dt), None, k)
    return ex


def _ex(x) -> Ex:
    return x if isinstance(x, Ex) else _lit_ex(x)


def _arith(x: Col, y: Col, op) -> Col:
    k = FLOAT if FLOAT in (x.k, y.k) else INT
    m = _m_or(x.m, y.m)
    return Col(op(x.v, y.v), m, k)


def _floordiv(a, b):
    with np.errstate(divide="ignore"):
        return np.floor_divide(a, np.where(b == 0, 1, b))


def _mod(a, b):
    return np.mod(a, np.where(b == 0, 1, b))


def _neg(x: Col) -> Col:
    return Col(-x.v, x.m, x.k)


def _cmp(x: Col, y: Col, op) -> Col:
    m = _m_or(x.m, y.m)
    if x.k == NULL or y.k == NULL:
        n = max(x.v.size, y.v.size)
        return Col(np.zeros(n, bool), np.ones(n, bool), BOOL)
    if x.k in _IDS and op not in (np.equal, np.not_equal):  # order of the values
        n = max(x.v.size, y.v.size)  # a literal side (0-d, Ex._bin) as a column
        x, y = (Col(np.full(n, c.v), c.m, c.k) if c.v.ndim == 0 else c for c in (x, y))
        xs, ys = _decode(x), _decode(y)
        v = np.array([a is not None and b is not None and bool(op(a, b))
                      for a, b in zip(xs, ys)], dtype=bool)
        return Col(v, m, BOOL)
    return Col(op(x.v, y.v), m, BOOL)


def _and(x: Col, y: Col) -> Col:
    xv = x.v if x.m is None else x.v & ~x.m
    yv = y.v if y.m is None else y.v & ~y.m
    v = xv & yv
    if x.m is None and y.m is None:
        return Col(v, None, BOOL)
    # null unless one side is a known False
    xf = ~x.v if x.m is None else ~x.v & ~x.m
    yf = ~y.v if y.m is None else ~y.v & ~y.m
    m = _m_or(x.m, y.m) & ~(xf | yf)
    return Col(v, _norm_mask(m), BOOL)


def _or(x: Col, y: Col) -> Col:
    xv = x.v if x.m is None else x.v & ~x.m
    yv = y.v if y.m is None else y.v & ~y.m
    v = xv | yv
    if x.m is None and y.m is None:
        return Col(v, None, BOOL)
    m = _m_or(x.m, y.m) & ~v
    return Col(v, _norm_mask(m), BOOL)


def _not(x: Col) -> Col:
    return Col(~x.v, x.m, x.k)


def _truth(c: Col) -> np.ndarray:
    """The rows where a condition is true (null: false)."""
    v = c.v.astype(bool, copy=False)
    return v if c.m is None else v & ~c.m
