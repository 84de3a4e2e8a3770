"""The frame model: columns (Col; LazyCol, gathered on first read), frames (SplitPart: a
split's part, made on first read), kinds, null masks."""
from __future__ import annotations

from typing import Optional

import numpy as np

from reasoning.columnar.layout import BOOL, FLOAT, INT, INTLIST, OBJ, STRLIST

NULL = "null"  # the kind of an untyped null literal

_LISTS = (STRLIST, INTLIST)
_IDS = (OBJ, STRLIST, INTLIST)
_DT = {OBJ: np.int64, INT: np.int64, BOOL: np.bool_, FLOAT: np.float64, STRLIST: np.int64,
       INTLIST: np.int64, NULL: np.int64}


class Col:
    __slots__ = ("v", "m", "k", "_lz")

    def __init__(self, v: np.ndarray, m: Optional[np.ndarray], k: str):
        self.v, self.m, self.k = v, m, k

    def take(self, idx) -> "Col":
        # ndarray.take, not v[idx]: 40 % less on the gathers every join and filter makes
        return Col(self.v.take(idx), None if self.m is None else self.m.take(idx), self.k)

    def nulls(self) -> np.ndarray:
        return self.m if self.m is not None else np.zeros(self.v.size, bool)

    def __len__(self):
        return self.v.size

    def gather_later(self, idx) -> "Col":
        """take(idx), gathered when first read (LazyCol)."""
        c = Col.__new__(LazyCol)
        c.k = self.k
        c._lz = (self, idx)
        return c


_V, _M = Col.v, Col.m  # the slots' own descriptors


def _filled(slot) -> property:
    """A LazyCol's slot, gathered on first read."""
    def get(self):
        self._fill()
        return slot.__get__(self)
    return property(get, slot.__set__)


class LazyCol(Col):
    """A column gathered from another on first read of its values or nulls (a filter or a
    join gathers every column of a frame, and the plan reads only some of them): it then
    becomes a plain Col (same layout, so its class is swapped in place)."""

    __slots__ = ()

    def _fill(self):
        src, idx = self._lz
        _V.__set__(self, src.v.take(idx))
        m = src.m
        _M.__set__(self, None if m is None else m.take(idx))
        self._lz = None
        self.__class__ = Col

    v = _filled(_V)
    m = _filled(_M)

    def gather_later(self, idx) -> "Col":
        src, idx0 = self._lz
        return src.gather_later(idx0.take(idx))

    take = gather_later  # (a lazy column's take stays lazy)


def _m_or(a: Optional[np.ndarray], b: Optional[np.ndarray]) -> Optional[np.ndarray]:
    if a is None:
        return b
    if b is None:
        return a
    return a | b


_count = np.count_nonzero  # (a C function: m.any() goes through a Python wrapper, 2-4× it)


def _norm_mask(m: Optional[np.ndarray]) -> Optional[np.ndarray]:
    return m if m is not None and _count(m) else None


class Frame:
    """A table: named Cols of equal length."""

    __slots__ = ("cols", "n")

    def __init__(self, cols: dict, n: int):
        self.cols, self.n = cols, n

    @property
    def columns(self) -> list:
        return list(self.cols)

    @property
    def height(self) -> int:
        return self.n

    def take(self, idx, n: int) -> "Frame":
        """The rows idx, each column gathered on its first read (LazyCol)."""
        cols = {}
        composed: dict = {}  # one composition per source index the lazy columns share
        for k, c in self.cols.items():
            if type(c) is LazyCol:
                src, idx0 = c._lz
                got = composed.get(id(idx0))
                if got is None:
                    got = composed[id(idx0)] = idx0.take(idx)
                cols[k] = src.gather_later(got)
            else:
                cols[k] = c.gather_later(idx)
        return Frame(cols, n)

    def __repr__(self):
        return f"Frame({self.n} rows: {', '.join(f'{k}:{c.k}' for k, c in self.cols.items())})"


class _Gathered:
    """A frame's columns gathered in one order, once, on the first read of any split part
    made from it (SplitPart): (name, values, nulls, kind) each."""

    __slots__ = ("src", "order", "cols", "plain")

    def __init__(self, src: list, order: np.ndarray):
        self.src, self.order, self.cols = src, order, None
        self.plain = False  # src holds no LazyCol (materialize made it so)

    def get(self) -> list:
        if self.cols is None:
            o = self.order
            self.cols = [(k, c.v.take(o), None if c.m is None else c.m.take(o), c.k)
                         for k, c in self.src]
            self.src = self.order = None
        return self.cols


_FC = Frame.cols  # the slot's own descriptor


class SplitPart(Frame):
    """Rows a..b of a split (ArraysBackend.split_by): its columns are slices (views) of
    the source's columns gathered in the split's order, made on the first read of `cols` —
    a family's per-template frames are mostly kept without being read (step1_family)."""

    __slots__ = ("_sp",)

    def __init__(self, shared: _Gathered, a: int, b: int):
        self._sp = (shared, a, b)
        self.n = b - a

    def _cols(self) -> dict:
        try:
            return _FC.__get__(self)
        except AttributeError:
            shared, a, b = self._sp
            cols = {k: Col(v[a:b], None if m is None else m[a:b], kind)
                    for k, v, m, kind in shared.get()}
            _FC.__set__(self, cols)
            self._sp = None
            return cols

    cols = property(_cols, _FC.__set__)
