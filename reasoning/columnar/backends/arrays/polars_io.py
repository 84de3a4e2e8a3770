"""Frames from and to Polars: slices adopted (converted ahead) and frames seen as Polars."""
from __future__ import annotations

import numpy as np

from reasoning.native import kernels
from reasoning.columnar.backends.arrays.frame import NULL, _DT, _LISTS, Col, Frame
from reasoning.columnar.backends.arrays.intern import _LST, _SYM
from reasoning.columnar.backends.arrays.segments import _segments
from reasoning.columnar.backends.arrays.signatures import _intern_series, _signature
from reasoning.columnar.backends.arrays.values import _decode, _encode
from reasoning.columnar.layout import BOOL, FLOAT, INT, INTLIST, OBJ, STRLIST


class Prepared:
    """A Polars frame with some of its columns converted ahead (prepare_input): a Col, or
    a string column's _signature."""

    __slots__ = ("df", "cols")

    def __init__(self, df, cols: dict):
        self.df = df
        self.cols = cols


def _convert(s, ahead: bool):
    """A Polars column as a Col, or a string column as its _signature for _intern_series;
    ahead: only what touches no interned state (else None: adopt converts it)."""
    import polars as pl

    dt = s.dtype
    if dt == pl.String:
        kind = OBJ
    elif dt == pl.Boolean:
        kind = BOOL
    elif dt.is_float():
        kind = FLOAT
    elif isinstance(dt, pl.List):
        kind = INTLIST if dt.inner.is_integer() else STRLIST
    else:
        kind = INT
    if kind in (INT, BOOL, FLOAT):
        m = s.is_null().to_numpy() if s.null_count() else None
        if m is not None:  # fill_null costs ~0.2 ms even with no null to fill
            s = s.fill_null(0 if kind != BOOL else False)
        v = s.to_numpy().astype(_DT[kind])  # a copy: Polars' view is read-only
        return Col(v, m, kind)
    if kind == OBJ and kernels.COMPILED:
        return _signature(s) if s.len() else None
    return None if ahead else _encode(s.to_list(), kind)

_SYM_POLARS: list = [None, 0]  # a Polars copy of _SYM.vals and how many entries it has


def _sym_series():
    """_SYM.vals as a Polars string Series (extended as the table grows; rebuilt after a
    sweep, which reuses ids)."""
    import polars as pl

    s, n = _SYM_POLARS
    vals = _SYM.vals
    if s is None:
        s, n = pl.Series(vals, dtype=pl.String), len(vals)
        _SYM.reused.clear()
    else:
        if _SYM.reused:  # freed ids given new strings since the copy
            idx = sorted({i for i in _SYM.reused if i < n})
            _SYM.reused.clear()
            if idx:
                s = s.scatter(idx, [vals[i] for i in idx])
        if n < len(vals):
            s = pl.concat([s, pl.Series(vals[n:], dtype=pl.String)], rechunk=True)
            n = len(vals)
    _SYM_POLARS[0], _SYM_POLARS[1] = s, n
    return s


def _long_strlists(c: Col, name: str):
    """A string-list column of a few distinct lists, some long (ListTable's arrays), as
    Polars: each list's elements gathered from the string table's Polars copy and imploded —
    no Python string per element (a 10⁴-element list: 1.9 → 0.7 ms; Arrow offsets would
    do as well but importing pyarrow costs a short `hypo run` 0.2 s)."""
    import polars as pl

    u, inv, flat, owner = _segments(c)
    el = _null_at(_sym_series().gather(np.maximum(flat, 0)), flat < 0 if flat.size and
                  flat.min() < 0 else None)
    bounds = np.searchsorted(owner, np.arange(u.size + 1)).tolist()
    dt = pl.List(pl.String)
    parts = [pl.Series(name, [None], dtype=dt) if li < 0 else
             el.slice(bounds[j], bounds[j + 1] - bounds[j]).implode().alias(name)
             for j, li in enumerate(u.tolist())]
    s = parts[0] if len(parts) == 1 else pl.concat(parts)
    return s.gather(_null_at(pl.Series(inv.ravel()), c.m))


LONG_LISTS_FEW = 16  # distinct lists a column may hold for _long_strlists


def _null_at(s, m):
    """Series s with nulls where the mask is true."""
    if m is None:
        return s
    return s.scatter(np.flatnonzero(m), None)


class PolarsFrames:
    """ArraysBackend's conversions from and to Polars frames."""

    def from_arrow(self, table):
        import polars as pl

        return self.adopt(pl.from_arrow(table))

    def adopt(self, df):
        """A frame of this backend from a Polars frame (a slice as the stream reader read
        it) or from its Prepared form; a Frame passes through."""
        if isinstance(df, Frame):
            return df
        ahead = None
        if isinstance(df, Prepared):
            df, ahead = df.df, df.cols
        cols = {}
        for name, s in zip(df.columns, df.get_columns()):
            got = ahead.get(name) if ahead is not None else None
            if got is None:
                got = _convert(s, False)
            cols[name] = got if isinstance(got, Col) else _intern_series(s, got)
        return Frame(cols, df.height)

    def prepare_input(self, frames: dict) -> dict:
        """{pred: Prepared}: the part of adopt() that touches no interned state (numbers as
        arrays, strings' hash signatures), done by the thread that reads the stream ahead of
        the tick (stream.Prefetched, Session.prepare_slice)."""
        return {p: Prepared(df, {name: got for name, s in zip(df.columns, df.get_columns())
                                 if (got := _convert(s, True)) is not None})
                for p, df in frames.items()}

    def to_polars(self, fr: Frame):
        """The frame as Polars: strings gathered from a Polars copy of the string table,
        each distinct list decoded once, numbers as they are (for the renderer)."""
        import polars as pl

        from reasoning.columnar.backends.polars import dtypes

        out = []
        for k, c in fr.cols.items():
            dt = dtypes().get(c.k, pl.Null)
            if c.k == NULL or fr.n == 0:
                out.append(pl.Series(k, [None] * fr.n, dtype=dt))
                continue
            if c.k == OBJ:
                s = _sym_series().gather(_null_at(pl.Series(k, c.v), c.m)).alias(k)
            elif c.k in _LISTS:
                u, inv = np.unique(c.v, return_inverse=True)
                lists = _LST.vals
                if c.k == STRLIST and u.size <= LONG_LISTS_FEW and any(
                        isinstance(lists[i], np.ndarray) for i in u.tolist() if i >= 0):
                    s = _long_strlists(c, k)
                else:
                    dec = _decode(Col(u, None, c.k))
                    s = pl.Series(k, [None if x is None else list(x) for x in dec],
                                  dtype=dt).gather(_null_at(pl.Series(inv.ravel()), c.m))
            else:
                s = _null_at(pl.Series(k, c.v, dtype=dt), c.m)
            out.append(s.alias(k))
        return pl.DataFrame(out)
