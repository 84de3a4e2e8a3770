"""ArraysBackend: the relational operations of backends/polars.py's interface on numpy frames."""
from __future__ import annotations

from typing import Iterable, Optional

import numpy as np

from reasoning.native import kernels
from reasoning.columnar.backends.arrays.domain import DomainOps
from reasoning.columnar.backends.arrays.expr import Ex, _ex, _truth
from reasoning.columnar.backends.arrays.frame import (NULL, _DT, _IDS, _LISTS, Col, Frame,
                                                      LazyCol, SplitPart, _Gathered, _m_or,
                                                      _norm_mask)
from reasoning.columnar.backends.arrays.functions import Expressions
from reasoning.columnar.backends.arrays.intern import _LST, _SYM
from reasoning.columnar.backends.arrays.keys import (_distinct_ints, _group_ids, _keymats,
                                                     _member_mask)
from reasoning.columnar.backends.arrays.polars_io import PolarsFrames
from reasoning.columnar.backends.arrays.segments import _split
from reasoning.columnar.backends.arrays.signatures import _intern_strs
from reasoning.columnar.backends.arrays.sweep import Sweeping
from reasoning.columnar.backends.arrays.values import _decode, _elements, _encode, _internal
from reasoning.columnar.backends.polars import InProcessFrames
from reasoning.columnar.layout import BOOL, FLOAT, INT, INTLIST, OBJ, STRLIST


class ArraysBackend(Expressions, DomainOps, Sweeping, PolarsFrames, InProcessFrames):
    """The in-process executor on numpy columns with compiled joins (see the package
    docstring); the same interface as backend.PolarsBackend."""

    name = "arrays"
    cheap_checks = True
    python_objects = True  # interned tuples and lists: the engine pauses the cyclic GC

    def __init__(self, threads: Optional[int] = None):
        self.sym, self.lst = _SYM, _LST
        # id(δ table) -> (table, its dense array): _dense_delays; (id(entries), fill) ->
        # (entries, index and byte table): domain.py's _byte_table
        self._dense_memo: dict = {}
        kernels.warm()

    def empty(self, schema: dict[str, str]):
        return Frame({k: Col(np.zeros(0, _DT[v]), None, v) for k, v in schema.items()}, 0)

    def from_columns(self, cols: dict[str, list], schema: dict[str, str]):
        n = next((len(v) for v in cols.values()), 0)
        out = {}
        for k, kind in schema.items():
            v = cols.get(k)
            if isinstance(v, np.ndarray) and kind == INT and v.dtype.kind == "i":
                out[k] = Col(v.astype(np.int64), None, INT)  # (a copy: the caller's stays)
            elif kind == OBJ and isinstance(v, list) and (got := _intern_strs(v)) is not None:
                out[k] = got
            else:
                out[k] = _encode([None] * n if v is None else
                                 (v if isinstance(v, list) else list(v)), kind)
        return Frame(out, n)

    def from_rows(self, rows: list[dict], schema: dict[str, str]):
        if not rows:
            return self.empty(schema)
        return Frame({k: _encode([r.get(k) for r in rows], v) for k, v in schema.items()},
                     len(rows))

    def keep_rows(self, df, mask: list):
        """The rows whose entry in mask (a list of booleans, one per row) is true."""
        idx = np.flatnonzero(np.array(mask, dtype=bool))
        return df.take(idx, idx.size)

    def rows(self, df) -> list[dict]:
        names = list(df.cols)
        cols = [_decode(c) for c in df.cols.values()]
        kinds = [c.k for c in df.cols.values()]
        cols = [[None if x is None else list(x) for x in col] if k in _LISTS else col
                for col, k in zip(cols, kinds)]
        return [dict(zip(names, row)) for row in zip(*cols)] if cols else [{}] * df.n

    def height(self, df) -> int:
        return df.n

    def col_max(self, df, col: str):
        c = df.cols[col]
        v = c.v if c.m is None else c.v[~c.m]
        if not v.size:
            return None
        if c.k == OBJ:
            return max(_SYM.vals[i] for i in np.unique(v).tolist())
        return v.max().item()

    def any_nonempty_list(self, df, col: str) -> bool:
        c = df.cols[col]
        if df.n == 0:
            return False
        empty = _LST.id(())
        return bool(((c.v != empty) & (c.v >= 0)).any())

    def columns(self, df) -> list[str]:
        return list(df.cols)

    def values(self, df, col: str) -> list:
        c = df.cols[col]
        v = c.v if c.m is None else c.v[~c.m]
        u = _distinct_ints(v) if c.k == INT else np.unique(v)
        out = _decode(Col(u, None, c.k))
        if c.k in _LISTS:
            out = [list(x) for x in out]
        if c.m is not None and c.m.any():
            out.append(None)
        return out

    def _eval(self, df, e) -> Col:
        c = _ex(e)(df)
        if c.v.size != df.n:  # a scalar aggregate broadcast
            c = Col(np.resize(c.v, df.n), None if c.m is None else np.resize(c.m, df.n), c.k)
        return c

    def filter(self, df, cond):
        keep = _truth(self._eval(df, cond))
        idx = keep.nonzero()[0]  # (not keep.all() then np.flatnonzero: three Python wrappers)
        return df if idx.size == df.n else df.take(idx, idx.size)

    def with_columns(self, df, exprs: dict):
        if not exprs:
            return df
        new = {k: self._eval(df, e) for k, e in exprs.items()}
        cols = dict(df.cols)
        cols.update(new)
        return Frame(cols, df.n)

    def select(self, df, items: list):
        cols = {}
        for e in items:
            e = _ex(e)
            cols[e.name] = self._eval(df, e)
        return Frame(cols, df.n)

    def select_cols(self, df, cols: list):
        if list(df.cols) == cols:
            return df
        return Frame({c: df.cols[c] for c in cols}, df.n)

    def drop(self, df, cols: Iterable[str]):
        drop = set(cols)
        if not drop & df.cols.keys():
            return df
        return Frame({k: c for k, c in df.cols.items() if k not in drop}, df.n)

    def join(self, left, right, left_on: list, right_on: list, how: str = "inner",
             nulls_equal: bool = False):
        """Equi-join; keys are column names or expressions (left) and column names (right);
        the right key columns are dropped (Polars' coalescing)."""
        if not left_on and how == "left" and right.n == 0:
            # zero keys: every left row matches every right row; none, so each left row
            # once with the right columns null (what the keyed left join gives)
            return self._combine(left, right, np.arange(left.n),
                                 np.full(left.n, -1, np.int64), set(), True)
        if how == "cross" or (not left_on and how in ("inner", "left")):
            # the cross product (zero keys: the condition is true for every pair)
            li = np.repeat(np.arange(left.n), right.n)
            ri = np.tile(np.arange(right.n), left.n)
            return self._combine(left, right, li, ri, set())
        if not left_on:  # zero keys: a semi-join keeps all or nothing of the left frame
            if how == "semi":
                return left if right.n else left.take(np.zeros(0, np.int64), 0)
            if how == "anti":
                return left.take(np.zeros(0, np.int64), 0) if right.n else left
            raise ValueError(f"join type {how!r}")
        lcols = [left.cols[x] if isinstance(x, str) else self._eval(left, x) for x in left_on]
        rcols = [right.cols[x] for x in right_on]
        if how in ("semi", "anti"):
            hit = _member_mask(lcols, rcols, nulls_equal)
            keep = hit if how == "semi" else ~hit
            idx = keep.nonzero()[0]
            return left if idx.size == left.n else left.take(idx, idx.size)
        if how not in ("inner", "left"):
            raise ValueError(f"join type {how!r}")
        (L, okl), (R, okr) = _keymats([lcols, rcols], nulls_equal)
        li, ri = kernels.join_rows(L, okl, R, okr, how == "left")
        # Polars coalesces the key columns only when every key is a column name
        coalesce = all(isinstance(x, str) for x in left_on)
        # a left join keeps every left row, in order: as many pairs as rows means each row
        # once, and its left columns are the left frame's (a lookup: no gather)
        same = how == "left" and li.size == left.n
        return self._combine(left, right, li, ri, set(right_on) if coalesce else set(), same)

    def _combine(self, left, right, li, ri, drop: set, same_left: bool = False):
        n = li.size
        cols = dict(left.cols) if same_left else {k: c.take(li) for k, c in left.cols.items()}
        miss = ri < 0
        any_miss = bool(miss.any())
        rsafe = np.where(miss, 0, ri) if any_miss else ri
        for k, c in right.cols.items():
            if k in drop:
                continue
            name = k if k not in cols else k + "_right"
            if right.n == 0:
                cols[name] = Col(np.zeros(n, _DT[c.k]), np.ones(n, bool) if n else None, c.k)
                continue
            t = c.take(rsafe)
            if any_miss:
                t = Col(t.v, _m_or(t.m, miss), t.k)
            cols[name] = t
        return Frame(cols, n)

    def concat(self, dfs: list, schema: Optional[dict] = None):
        dfs = [d for d in dfs if d is not None]
        if not dfs:
            return self.empty(schema or {})
        if len(dfs) == 1:
            return dfs[0]
        full = [d for d in dfs if d.n]
        if len(full) == 1 and all(  # the others empty, of the same columns: no copy
                [(k, c.k) for k, c in d.cols.items()] == [(k, c.k) for k, c in
                                                          full[0].cols.items()] for d in dfs):
            return full[0]
        names = list(dfs[0].cols)
        cols = {}
        for k in names:
            parts = [d.cols[k] for d in dfs]
            kind = parts[0].k
            same = plain = True
            for c in parts:  # (a loop, not all() over generators: most calls are this)
                if c.k != kind:
                    same = plain = False
                    break
                if c.m is not None:
                    plain = False
            if plain and kind != NULL:  # (the common case: one kind, no nulls)
                cols[k] = Col(np.concatenate([c.v for c in parts]), None, kind)
                continue
            if not same:
                kind = next((c.k for c in parts if c.k != NULL), NULL)
            vs = []
            for c in parts:
                v = c.v
                if c.k != kind:
                    if c.k == NULL:
                        v = np.zeros(c.v.size, _DT[kind])
                    elif kind == FLOAT:
                        v = v.astype(np.float64)
                vs.append(v)
            m = None
            if any(c.m is not None for c in parts):
                m = np.concatenate([c.nulls() for c in parts])
            cols[k] = Col(np.concatenate(vs), m, kind)
        return Frame(cols, sum(d.n for d in dfs))

    def concat_tagged(self, dfs: list, tags: dict):
        """concat(dfs) with INT columns name = values[i] on dfs[i]'s rows, for each
        name: values of `tags`."""
        out = self.concat(dfs) if len(dfs) > 1 else dfs[0]
        sizes = [d.n for d in dfs]
        cols = dict(out.cols)
        for name, values in tags.items():
            cols[name] = Col(np.repeat(np.asarray(values, np.int64), sizes), None, INT)
        return Frame(cols, out.n)

    def split_by(self, df, col: str, values: list, cols: Optional[list] = None) -> dict:
        """{v: the rows of df whose INT column `col` is v, in their order} for v in values
        (one stable sort for all the parts; cols: only those columns, in that order)."""
        v = df.cols[col].v
        order = np.argsort(v, kind="stable")
        sv = v[order]
        want = np.asarray(values, np.int64)
        lo = np.searchsorted(sv, want, "left")
        hi = np.searchsorted(sv, want, "right")
        # every column gathered once in that order, when a part is first read; the parts
        # are slices of it (views)
        src = df.cols
        shared = _Gathered([(k, src[k]) for k in (src if cols is None else cols)], order)
        return {t: SplitPart(shared, a, b) for t, a, b in zip(values, lo.tolist(), hi.tolist())}

    def expand_keys(self, df, keys: list, names: list, fn):
        """Each row of df once per tuple of fn(*its key values) (a list of tuples; None:
        null), with INT columns `names` = the tuple, in df's order (an inner join with the
        table of every distinct key's tuples, made without building and joining it)."""
        if df.n == 0:
            vals, gid = [], np.zeros(0, np.int64)
        else:
            gid, first = self._groups(df, keys)
            vals = list(map(fn, *(_decode(df.cols[k].take(first)) for k in keys)))
        counts = np.fromiter(map(len, vals), np.int64, len(vals))
        rep = counts.take(gid)
        idx = np.repeat(np.arange(df.n), rep)
        starts = np.cumsum(counts) - counts
        pos = np.arange(idx.size) - np.repeat(np.cumsum(rep) - rep, rep)
        eidx = starts.take(gid.take(idx)) + pos
        out = df.take(idx, idx.size)
        cols = dict(out.cols)
        flat = [t for v in vals for t in v]
        for i, c in enumerate(names):
            v, nulls = _int_values([t[i] for t in flat])
            cols[c] = Col(v.take(eidx), None if nulls is None else nulls.take(eidx), INT)
        return Frame(cols, idx.size)

    def _groups(self, df, keys: list):
        return _group_ids([df.cols[k] for k in keys])

    def unique(self, df, subset: Optional[list] = None):
        if df.n <= 1:
            return df
        gid, first = self._groups(df, subset or list(df.cols))
        if first.size == df.n:
            return df
        return df.take(first, first.size)

    def sort(self, df, cols: list):
        if df.n <= 1:
            return df
        keys = []
        for c in reversed(cols):
            col = df.cols[c]
            if col.k in _IDS:
                dec = _decode(col)
                order = sorted(range(len(dec)), key=lambda i: (dec[i] is not None, dec[i]
                                                               if dec[i] is not None else ""))
                rank = np.empty(len(dec), np.int64)
                rank[order] = np.arange(len(dec))
                keys.append(rank)
            else:
                v = col.v
                if col.m is not None:
                    keys.append(v)
                    keys.append(~col.m)  # nulls first
                    continue
                keys.append(v)
        idx = np.lexsort(keys)
        return df.take(idx, df.n)

    def column_list(self, df, col: str) -> list:
        c = df.cols[col]
        out = _decode(c)
        return [None if x is None else list(x) for x in out] if c.k in _LISTS else out

    def explode(self, df, col: str):
        c = df.cols[col]
        ek = INT if c.k == INTLIST else OBJ
        lists = _LST.vals
        # as Polars: an empty list gives no row, a null list one null
        ids = c.v.tolist() if c.m is None else [-1 if m else i for i, m in
                                                zip(c.v.tolist(), c.m.tolist())]
        lens = np.array([len(lists[i]) if i >= 0 else 1 for i in ids], np.int64)
        idx = np.repeat(np.arange(df.n), lens)
        null = (-1 if ek == OBJ else None,)
        flat = []
        for i in ids:
            flat.extend(lists[i] if i >= 0 else null)
        out = df.take(idx, idx.size)
        out.cols[col] = _elements(flat, ek)
        return out

    def group_agg(self, df, keys: list, aggs: dict, scalar: bool = False):
        if df.n == 0:
            cols = {k: Col(np.zeros(0, _DT[df.cols[k].k]), None, df.cols[k].k) for k in keys}
            for name, a in aggs.items():
                kind = {"any": BOOL, "sum": INT}.get(a.agg, INT)
                if a.agg in ("list", "distinct"):
                    kind = STRLIST
                cols[name] = Col(np.zeros(0, _DT[kind]), None, kind)
            return Frame(cols, 0)
        gid, first = self._groups(df, keys)
        g = first.size
        cols = {k: df.cols[k].take(first) for k in keys}
        for name, a in aggs.items():
            c = self._eval(df, Ex(a.f, a.name))
            cols[name] = _aggregate(a.agg, c, gid, g)
        return Frame(cols, g)

    def with_row_id(self, df, name: str):
        cols = {name: Col(np.arange(df.n, dtype=np.int64), None, INT)}
        cols.update(df.cols)
        return Frame(cols, df.n)

    def materialize(self, df):
        if type(df) is SplitPart and df._sp is not None:
            shared = df._sp[0]  # not read yet: it stays so, on plain source columns
            if not shared.plain:
                for _, c in shared.src or ():
                    if type(c) is LazyCol:
                        c._fill()
                shared.plain = True
            return df
        for c in df.cols.values():  # a frame kept across ticks holds no source frame
            if type(c) is LazyCol:
                c._fill()
        return df


def _int_values(got: list):
    """(int64 array, null mask or None) of a list of ints and Nones."""
    if None not in got:
        return np.array(got, np.int64), None
    nulls = np.array([x is None for x in got], bool)
    return np.array([0 if x is None else x for x in got], np.int64), nulls


def _aggregate(kind: str, c: Col, gid: np.ndarray, g: int) -> Col:
    valid = ~c.nulls()
    if kind == "any":
        out = np.zeros(g, bool)
        out[gid[valid & c.v.astype(bool)]] = True
        return Col(out, None, BOOL)
    if kind == "sum":
        out = np.zeros(g, c.v.dtype if c.k == FLOAT else np.int64)
        np.add.at(out, gid[valid], c.v[valid])
        return Col(out, None, c.k if c.k != NULL else INT)
    if kind in ("max", "min"):
        big = np.iinfo(np.int64).max if c.v.dtype != np.float64 else np.inf
        fill = -big if kind == "max" else big
        out = np.full(g, fill, dtype=c.v.dtype if c.k != BOOL else np.int64)
        (np.maximum if kind == "max" else np.minimum).at(out, gid[valid], c.v[valid])
        has = np.zeros(g, bool)
        has[gid[valid]] = True
        out = np.where(has, out, 0)
        return Col(out.astype(c.v.dtype), _norm_mask(~has), c.k if c.k != NULL else INT)
    # list / distinct: the non-null values of each group in row order, as an interned list
    lk = INTLIST if c.k == INT else STRLIST
    rows = np.flatnonzero(valid)
    if kind == "distinct" and c.k == OBJ and rows.size > 64:
        # string ids span the string table: a bitmap over (group, id) gives each group's
        # distinct values (by id: the order is free, every use normalises) without hashing
        # the rows (step 3's cover values, 10⁴-10⁵ devices' names a tick)
        width = len(_SYM.vals)
        if g * width <= 16 * rows.size + (1 << 20):
            seen = np.zeros(g * width, bool)
            seen[gid[rows] * width + c.v[rows]] = True
            k = np.flatnonzero(seen)
            owner = k // width
            bounds = np.searchsorted(owner, np.arange(g + 1)).tolist()
            return _internal(_split(k - owner * width, bounds), lk)
    if kind == "distinct" and rows.size > 1:  # each (group, value) at its first row
        v = c.v[rows]
        key = [gid[rows], (v + 0.0).view(np.int64)  # -0.0 as 0.0
               if v.dtype == np.float64 else v.astype(np.int64, copy=False)]
        rows = rows[kernels.factorize_rows(key)[1]]  # first rows, in row order
    order = rows[np.argsort(gid[rows], kind="stable")]
    vals = c.v[order]  # string ids or ints: the lists' own elements
    bounds = np.searchsorted(gid[order], np.arange(g + 1)).tolist()
    if vals.dtype != np.int64:  # a float or bool column's list: Python values
        vl = vals.tolist()
        return _internal([tuple(vl[a:b]) for a, b in zip(bounds, bounds[1:])], lk)
    return _internal(_split(vals, bounds), lk)
