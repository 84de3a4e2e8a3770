"""ArraysBackend's expression constructors: the interface's functions on columns, as Ex."""
from __future__ import annotations

import json
import re
from typing import Any, Optional, Sequence

import numpy as np

from reasoning.columnar.backends.arrays.expr import Ex, _ex, _lit_ex, _truth
from reasoning.columnar.backends.arrays.frame import (NULL, _DT, _IDS, _LISTS, Col, Frame, _m_or,
                                                      _norm_mask)
from reasoning.columnar.backends.arrays.intern import _LST, _SYM
from reasoning.columnar.backends.arrays.keys import _group_ids
from reasoning.columnar.backends.arrays.segments import (_LIST_LENS, _any_segments, _by_prefix,
                                                         _concat_lists, _map_segments,
                                                         _norm_segments, _split)
from reasoning.columnar.backends.arrays.values import (_decode, _elements, _encode, _internal,
                                                       _map_distinct, _map_lists)
from reasoning.columnar.layout import BOOL, FLOAT, INT, INTLIST, OBJ, STRLIST

_LITS: dict = {}  # ArraysBackend.lit's literals, least recently used first
# literals kept: a tick number is a new literal every tick, and each keeps the column of its
# last use — 4 096 of them (cleared only when full) grew a long run's memory by 17 % from
# tick 1 000 to 10 000 (bench/memory.py, issue 44)
LIT_CACHE = 256


class Expressions:
    """ArraysBackend's expressions (mixed into it)."""

    def col(self, name: str):
        def f(fr, name=name):
            try:
                return fr.cols[name]
            except KeyError:
                raise KeyError(f"no column {name!r} in {fr!r}") from None
        return Ex(f, name)

    def lit(self, value: Any, kind: Optional[str] = None):
        # the same literal is asked for ~100 times a tick: one Ex each (its column is
        # memoised by height; the memo is bounded, a tick number being a new literal)
        if value is None or type(value) in (int, bool, str, float):
            key = (type(value), value, kind)
            got = _LITS.pop(key, None)
            if got is None:
                if len(_LITS) >= LIT_CACHE:
                    del _LITS[next(iter(_LITS))]
                got = _lit_ex(value, kind)
            _LITS[key] = got  # (the most recently used last)
            return got
        return _lit_ex(value, kind)

    def null(self, kind: str):
        return _lit_ex(None, kind)

    def empty_list(self):
        return _lit_ex((), STRLIST)

    def str_list(self, values: Sequence[str]):
        return _lit_ex(tuple(values), STRLIST)

    def when(self, cond, then, otherwise):
        cond, then, otherwise = _ex(cond), _ex(then), _ex(otherwise)

        def f(fr):
            c = _truth(cond(fr))
            a, b = then(fr), otherwise(fr)
            k = a.k if a.k != NULL else b.k
            av, bv = a.v, b.v
            if a.k == NULL:
                av = np.zeros(c.size, _DT[k])
            if b.k == NULL:
                bv = np.zeros(c.size, _DT[k])
            v = np.where(c, av, bv)
            if a.k == NULL:  # (a deadline: null where the literal is evidence)
                m = c if b.m is None else c | b.m
            elif b.k == NULL:
                m = ~c if a.m is None else ~c | a.m
            elif a.m is not None or b.m is not None:
                m = np.where(c, a.nulls(), b.nulls())
            else:
                m = None
            return Col(v, _norm_mask(m), k)
        return Ex(f, then.name)

    def is_null(self, e):
        return Ex(lambda fr, e=e: Col(e(fr).nulls().copy(), None, BOOL), e.name)

    def not_null(self, e):
        return Ex(lambda fr, e=e: Col(~e(fr).nulls(), None, BOOL), e.name)

    def has_bit(self, e, i: int):
        return Ex(lambda fr, e=e: (lambda c: Col((c.v & (1 << i)) != 0, c.m, BOOL))(e(fr)),
                  e.name)

    def set_bit(self, e, i: int):
        return Ex(lambda fr, e=e: (lambda c: Col(c.v | (1 << i), c.m, INT))(e(fr)), e.name)

    def bit_or(self, e, mask):
        return e._bin(mask, lambda x, y: Col(x.v | y.v, _m_or(x.m, y.m), INT))

    def bit_and(self, e, mask):
        return e._bin(mask, lambda x, y: Col(x.v & y.v, _m_or(x.m, y.m), INT))

    def bit_not(self, e):
        return Ex(lambda fr, e=e: (lambda c: Col(~c.v, c.m, INT))(e(fr)), e.name)

    def pmod(self, e, m: int):
        return Ex(lambda fr, e=e: (lambda c: Col(np.mod(c.v, m), c.m, c.k))(e(fr)), e.name)

    def _horizontal(self, exprs: list, pick, name=None):
        def f(fr):
            cs = [x(fr) for x in exprs]
            k = next((c.k for c in cs if c.k != NULL), INT)
            n = fr.n
            fill = {np.minimum: np.iinfo(np.int64).max, np.maximum: np.iinfo(np.int64).min}
            v = None
            allnull = np.ones(n, bool)
            for c in cs:
                if c.k == NULL:
                    continue
                cv = c.v if c.m is None else np.where(c.m, fill[pick], c.v)
                v = cv if v is None else pick(v, cv)
                allnull &= c.nulls()
            if v is None:
                return Col(np.zeros(n, np.int64), np.ones(n, bool), k)
            return Col(np.where(allnull, 0, v), _norm_mask(allnull), k)
        return Ex(f, exprs[0].name if exprs else "literal")

    def least(self, exprs: list):
        return self._horizontal(exprs, np.minimum) if exprs else self.null(INT)

    def greatest(self, exprs: list):
        return self._horizontal(exprs, np.maximum) if exprs else self.null(INT)

    def coalesce(self, exprs: list):
        def f(fr):
            cs = [c for c in (x(fr) for x in exprs) if c.k != NULL]
            if not cs:
                return Col(np.zeros(fr.n, np.int64), np.ones(fr.n, bool), NULL)
            v, m = cs[0].v, cs[0].m
            for c in cs[1:]:  # m: still null
                if m is None:
                    break
                v = np.where(m, c.v, v)
                m = None if c.m is None else m & c.m
            m = _norm_mask(m)
            return Col(v if m is None else np.where(m, np.zeros(1, v.dtype), v), m, cs[0].k)
        return Ex(f, exprs[0].name)

    def any_of(self, exprs: list):
        if not exprs:
            return self.lit(False)
        out = exprs[0]
        for e in exprs[1:]:
            out = out | e
        return out

    def all_of(self, exprs: list):
        if not exprs:
            return self.lit(True)
        out = exprs[0]
        for e in exprs[1:]:
            out = out & e
        return out

    def concat_str(self, parts: list):
        def f(fr):
            cs = [_ex(p)(fr) for p in parts]
            cols = [_decode(c) if c.k in (OBJ, NULL) else
                    [None if x is None else str(x) for x in _decode(c)] for c in cs]
            vals = [None if any(x is None for x in row) else "".join(row)
                    for row in zip(*cols)] if cols else []
            return _encode(vals, OBJ)
        return Ex(f, _ex(parts[0]).name if parts else "literal")

    def to_str(self, e):
        def f(fr):
            c = e(fr)
            if c.k == OBJ:
                return c
            vals = _decode(c)
            if c.k == BOOL:
                return _encode([None if x is None else ("true" if x else "false")
                                for x in vals], OBJ)
            return _encode([None if x is None else str(x) for x in vals], OBJ)
        return Ex(f, e.name)

    def _str_map(self, e, fn, kind: str = OBJ):
        return Ex(lambda fr: _map_distinct(e(fr), fn, kind), e.name)

    def str_len(self, e):
        return self._str_map(e, len, INT)

    def str_replace(self, e, old: str, new: str):
        return self._str_map(e, lambda s: s.replace(old, new))

    def str_matches(self, e, pattern: str):
        rx = re.compile(pattern)
        return self._str_map(e, lambda s: rx.search(s) is not None, BOOL)

    def json_str(self, e):
        return self._str_map(e, lambda s: json.dumps(s, ensure_ascii=False))

    def str_starts(self, e, prefix: str):
        return self._str_map(e, lambda s: s.startswith(prefix), BOOL)

    def list_contains(self, lst, item):
        def f(fr):
            lc, ic = lst(fr), _ex(item)(fr)
            items = ic.v.tolist() if ic.m is None else [
                None if m else x for x, m in zip(ic.v.tolist(), ic.m.tolist())]
            lists = _LST.vals
            memo: dict = {}
            out = np.zeros(fr.n, bool)
            lv = lc.v.tolist()
            for r in range(fr.n):
                li, x = lv[r], items[r]
                if li < 0:
                    continue
                key = (li, x)
                got = memo.get(key)
                if got is None:
                    got = memo[key] = x in lists[li]
                out[r] = got
            return Col(out, lc.m, BOOL)
        return Ex(f, lst.name)

    def list_len(self, lst):
        def f(fr):
            c = lst(fr)
            return _LIST_LENS(c) if c.k in _LISTS else _map_lists(c, len, INT)
        return Ex(f, lst.name)

    def list_concat(self, a, b):
        return self._list_zip([a, b], _concat_lists)

    def _list_zip(self, exprs: list, fn, kind: str = STRLIST):
        """fn over the rows' tuples of list values (null if any is null)."""
        def f(fr):
            cs = [x(fr) for x in exprs]
            k = next((c.k for c in cs if c.k in _LISTS), kind)
            if len(cs) == 1:
                return _map_lists(cs[0], lambda t: fn([t]), k)
            gid, first = _group_ids(cs)
            vals = []
            lists = _LST.vals
            for r in first.tolist():
                parts = []
                for c in cs:
                    if c.m is not None and c.m[r]:
                        parts = None
                        break
                    parts.append(lists[int(c.v[r])])
                vals.append(None if parts is None else fn(parts))
            got = _internal(vals, k)
            return Col(got.v[gid], None if got.m is None else _norm_mask(got.m[gid]), k)
        return Ex(f, exprs[0].name)

    def list_of(self, items: list):
        return self._typed(items, None)

    def typed_list(self, items: list, kind: str):
        return self._typed(items, kind)

    def _typed(self, items: list, kind: Optional[str]):
        def f(fr):
            cs = [_ex(i)(fr) for i in items]
            ek = kind or next((c.k for c in cs if c.k != NULL), OBJ)
            lk = INTLIST if ek == INT else STRLIST
            if not cs:
                return Col(np.full(fr.n, _LST.id(()), np.int64), None, lk)
            gid, first = _group_ids(cs)
            null = -1 if lk == STRLIST else None
            cols = []
            for c in cs:
                t = c.take(first)
                v = t.v.tolist() if c.k != NULL else [null] * first.size
                if t.m is not None:
                    v = [null if m else x for x, m in zip(v, t.m.tolist())]
                cols.append(v)
            got = _internal([tuple(row) for row in zip(*cols)], lk)
            return Col(got.v[gid], None, lk)
        return Ex(f, _ex(items[0]).name if items else "literal")

    def get_item(self, lst, i: int):
        def f(fr):
            c = lst(fr)
            kind = INT if c.k == INTLIST else OBJ

            def item(t):
                x = t[i] if -len(t) <= i < len(t) else None
                return None if x is None or (kind == OBJ and x < 0) else x
            return _map_lists(c, item, kind)
        return Ex(f, lst.name)

    def cast(self, e, kind: str):
        def f(fr):
            c = e(fr)
            if c.k == kind:
                return c
            if c.k == NULL:
                return Col(np.zeros(fr.n, _DT[kind]), np.ones(fr.n, bool), kind)
            if kind in _IDS or c.k in _IDS:
                conv = {OBJ: str, INT: int, FLOAT: float, BOOL: bool}.get(kind, lambda x: x)
                return _encode([None if x is None else conv(x) for x in _decode(c)], kind)
            return Col(c.v.astype(_DT[kind]), c.m, kind)
        return Ex(f, e.name)

    def _list_map(self, lst, fn, kind: Optional[str] = None):
        """fn over each distinct list (a tuple of element ids of a string list)."""
        return Ex(lambda fr: (lambda c: _map_lists(c, fn, kind or c.k))(lst(fr)), lst.name)

    def list_norm(self, lst):
        """Drop nulls, deduplicate, sort (strings by their text, as Polars)."""
        def f(fr):
            c = lst(fr)
            if c.k == STRLIST:
                return _map_segments(c, _norm_segments)
            return _map_lists(c, lambda t: tuple(sorted({x for x in t if x is not None})),
                              c.k)
        return Ex(f, lst.name)

    def _seg_map(self, lst, fn, slow):
        """fn over the segments of a string list (_map_segments); slow(t) on the tuples of
        any other list."""
        def f(fr):
            c = lst(fr)
            if c.k == STRLIST:
                return _map_segments(c, fn)
            return _map_lists(c, slow, c.k)
        return Ex(f, lst.name)

    def list_union_prefixed(self, a, b, prefix: str):
        """list_norm(list_concat(a, list_prefix(b, prefix))) in one pass over each distinct
        pair of lists: no intermediate list is built and interned (a schematic answer's
        nogoods X:c for 10⁵ devices cost 4.8 → ~1 ms a tick through the three)."""
        add = _by_prefix("add", prefix)
        composed = self.list_norm(self.list_concat(a, self.list_prefix(b, prefix)))

        def f(fr):
            ca, cb = a(fr), b(fr)
            if ca.k != STRLIST or cb.k != STRLIST:  # (an empty list's kind, say)
                return composed(fr)
            if ca.v.size == 0:
                return Col(np.zeros(0, np.int64), None, STRLIST)
            gid, first = _group_ids([ca, cb])
            lists = _LST.vals
            parts, owners, null = [], [], []
            for g, r in enumerate(first.tolist()):
                if (ca.m is not None and ca.m[r]) or (cb.m is not None and cb.m[r]):
                    null.append(g)
                    continue
                la, lb = lists[int(ca.v[r])], lists[int(cb.v[r])]
                xa = la if isinstance(la, np.ndarray) else np.fromiter(la, np.int64, len(la))
                xb = lb if isinstance(lb, np.ndarray) else np.fromiter(lb, np.int64, len(lb))
                if xb.size:
                    xb = add(xb)
                parts += [xa, xb]
                owners.append(np.full(xa.size + xb.size, g, np.int64))
            flat = np.concatenate(parts) if parts else np.zeros(0, np.int64)
            owner = np.concatenate(owners) if owners else np.zeros(0, np.int64)
            f2, o2 = _norm_segments(flat, owner)
            cuts = np.searchsorted(o2, np.arange(first.size + 1)).tolist()
            vals = _split(f2, cuts)
            for g in null:
                vals[g] = None
            got = _internal(vals, STRLIST)
            return Col(got.v[gid], None if got.m is None else _norm_mask(got.m[gid]), STRLIST)
        return Ex(f, a.name)

    def list_drop_prefix(self, lst, prefix: str):
        starts = _by_prefix("starts", prefix)

        def fn(flat, owner):
            keep = starts(flat) == 0
            return flat[keep], owner[keep]
        return self._seg_map(lst, fn, lambda t: t)

    def list_any_prefix(self, lst, prefix: str):
        starts = _by_prefix("starts", prefix)

        def f(fr):
            c = lst(fr)
            if c.k == STRLIST:
                return _any_segments(c, starts)
            return _map_lists(c, lambda t: False, BOOL)
        return Ex(f, lst.name)

    def list_prefix(self, lst, prefix: str):
        add = _by_prefix("add", prefix)
        return self._seg_map(lst, lambda flat, owner: (add(flat), owner),
                             lambda t: t)

    def list_strip_prefix(self, lst, prefix: str):
        strip = _by_prefix("strip", prefix)

        def fn(flat, owner):
            got = strip(flat)
            keep = got >= 0
            return got[keep], owner[keep]
        return self._seg_map(lst, fn, lambda t: ())

    def list_minus(self, a, b):
        def fn(parts):
            x, y = parts
            ys = set(y)
            return tuple(dict.fromkeys(v for v in x if v not in ys))
        return self._list_zip([a, b], fn)

    def list_join(self, lst, sep: str):
        vals = _SYM.vals
        return self._list_map(lst, lambda t: _SYM.id(sep.join(vals[x] for x in t if x >= 0)),
                              OBJ)

    def list_eval(self, lst, fn):
        """Map every element through fn(element expression)."""
        def f(fr):
            c = lst(fr)
            ek = INT if c.k == INTLIST else OBJ
            u, inv = np.unique(c.v, return_inverse=True) if c.v.size else (c.v, c.v)
            lists = _LST.vals
            flat, owner = [], []
            for gi, li in enumerate(u.tolist()):
                if li >= 0:
                    t = lists[li]
                    flat.extend(t)
                    owner.extend([gi] * len(t))
            el = _elements(flat, ek)
            rc = fn(Ex(lambda _fr: el, ""))(Frame({"": el}, len(flat)))
            rk = INTLIST if rc.k == INT else STRLIST
            null = -1 if rk == STRLIST else None
            res = rc.v.tolist()
            if rc.m is not None:
                res = [null if m else x for x, m in zip(res, rc.m.tolist())]
            per: list = [[] for _ in range(u.size)]
            for o, x in zip(owner, res):
                per[o].append(x)
            got = _internal([tuple(p) if li >= 0 else None for p, li in zip(per, u.tolist())],
                            rk)
            return Col(got.v[inv], _norm_mask(_m_or(None if got.m is None else got.m[inv],
                                                    c.m)), rk)
        return Ex(f, lst.name)

    def alias(self, e, name: str):
        e = _ex(e)
        return Ex(e.f, name, e.agg)

    # aggregation expressions for group_agg: the expression, marked with its aggregate
    def _agg(how: str):
        return lambda self, e: Ex(e.f, e.name, how)

    agg_any, agg_list, agg_distinct = _agg("any"), _agg("list"), _agg("distinct")
    agg_sum, agg_max, agg_min = _agg("sum"), _agg("max"), _agg("min")
    del _agg
