"""List and string operations on a column's distinct values (flattened lists, per-id memos)."""
from __future__ import annotations

from itertools import chain

import numpy as np

from reasoning.columnar.backends.arrays.frame import Col, _m_or, _norm_mask
from reasoning.columnar.backends.arrays.intern import LONG_LIST, _LST, _SYM, _tuple
from reasoning.columnar.backends.arrays.values import _internal, _per_row
from reasoning.columnar.layout import BOOL, INT

_PREFIXED: dict = {}  # (op, prefix) -> _PrefixOp: list elements' string operations
_UNKNOWN = -2  # a _PrefixOp entry not computed yet


def _cover_strings(table: np.ndarray, fill: int, symbols=None) -> np.ndarray:
    """table (indexed by string id — or by id of `symbols`) with an entry for every id of
    the table: grown to at least twice its size, the new entries `fill`."""
    n = len((symbols or _SYM).vals)
    if table.size >= n:
        return table
    grown = np.full(max(n, 2 * table.size), fill, np.int64)
    grown[:table.size] = table
    return grown


class _ListLens:
    """The length of each interned list, memoised in an array indexed by list id: list_len
    of a column is a gather (np.unique's sort of 10⁵ rows' list ids cost ~1.5 ms a turbine
    tick at 10⁵ devices, where nearly every row holds the same empty list).  Cleared by a
    list sweep (ids are reused)."""

    __slots__ = ("table",)

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        self.table = np.full(0, -1, np.int64)

    def __call__(self, c: "Col") -> "Col":
        ids = c.v
        self.table = _cover_strings(self.table, -1, _LST)
        safe = np.maximum(ids, 0)
        got = self.table[safe]
        todo = (got < 0) & (ids >= 0)
        if todo.any():
            new = np.unique(ids[todo]).tolist()
            vals = _LST.vals
            self.table[new] = [len(vals[i]) for i in new]
            got = self.table[safe]
        return Col(got, _norm_mask(_m_or(c.m, ids < 0)), INT)


_LIST_LENS = _ListLens()


class _PrefixOp:
    """One string operation on string ids, memoised in an array indexed by id: `starts`
    (1 if the string starts with prefix, else 0), `add` (the id of prefix + s) or `strip`
    (the id of s without prefix, -1 if s does not start with it).  A null element (-1) gives
    0, -1 and -1 respectively.  Cleared by a string sweep (ids are reused)."""

    __slots__ = ("op", "prefix", "table")

    def __init__(self, op: str, prefix: str):
        self.op, self.prefix = op, prefix
        self.table = np.full(0, _UNKNOWN, np.int64)

    def clear(self) -> None:
        self.table = np.full(0, _UNKNOWN, np.int64)

    def __call__(self, ids: np.ndarray) -> np.ndarray:
        self.table = _cover_strings(self.table, _UNKNOWN)
        safe = np.maximum(ids, 0)
        got = self.table[safe]
        todo = (got == _UNKNOWN) & (ids >= 0)
        if todo.any():
            vals, prefix, op = _SYM.vals, self.prefix, self.op
            k = len(prefix)
            new = np.unique(ids[todo]).tolist()
            if op == "starts":
                res = [int(vals[i].startswith(prefix)) for i in new]
            elif op == "add":
                res = _SYM.encode([prefix + vals[i] for i in new])
                # what `strip` and `starts` give on the strings made (the schematic
                # answers' nogoods X:c strip them again a tick later)
                self._tell("strip", res, new)
                self._tell("starts", res, 1)
            else:
                res = [-1] * len(new)
                hit = [j for j, i in enumerate(new) if vals[i].startswith(prefix)]
                for j, x in zip(hit, _SYM.encode([vals[new[j]][k:] for j in hit]).tolist()):
                    res[j] = x
            self.table = _cover_strings(self.table, _UNKNOWN)  # `add`/`strip` made strings
            self.table[new] = res
            got = self.table[safe]
        return np.where(ids >= 0, got, 0 if self.op == "starts" else -1)

    def _tell(self, op: str, ids: list, res) -> None:
        """Record op's results res on ids in op's memo for the same prefix."""
        memo = _by_prefix(op, self.prefix)
        memo.table = _cover_strings(memo.table, _UNKNOWN)
        memo.table[ids] = res


def _by_prefix(op: str, prefix: str) -> _PrefixOp:
    memo = _PREFIXED.get((op, prefix))
    if memo is None:
        memo = _PREFIXED[(op, prefix)] = _PrefixOp(op, prefix)
    return memo


class _TextRank:
    """The strings' order by text (Polars' sort of a string list): a rank per string id,
    kept for the ids list normalisation has met; ids met for the first time are merged in
    by a binary search over the ranked texts.  The texts are a fixed-width bytes array of
    their UTF-8 (whose byte order is the code-point order) while they are short
    (RANK_WIDTH bytes, no NUL, which that dtype would strip): its search compares in place,
    where an object array's chases every string through memory (10× slower for 10⁵
    devices' names), and merging new ids copies a byte a character, not 4 (a
    unicode array of 2·10⁵ names is 19 MB).  Cleared by a string sweep."""

    __slots__ = ("texts", "ids", "rank")

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        self.texts = np.zeros(0, "S1")  # ranked texts, sorted (or an object array)
        self.ids = np.zeros(0, np.int64)  # their ids, in the same order
        self.rank = np.full(0, -1, np.int64)

    def __call__(self, ids: np.ndarray) -> np.ndarray:
        """The rank of each (non-null) id."""
        self.rank = _cover_strings(self.rank, -1)
        r = self.rank[ids]
        if (r < 0).any():
            new = np.unique(ids[r < 0])
            vals = _SYM.vals
            got = [vals[i] for i in new.tolist()]
            if self.texts.dtype != object:
                enc = [x.encode("utf-8", "surrogatepass") for x in got]
                width = max(map(len, enc))
                if width > RANK_WIDTH or b"\x00" in b"".join(enc):
                    self.texts = np.array([vals[i] for i in self.ids.tolist()], object)
                else:
                    if width > self.texts.dtype.itemsize:
                        self.texts = self.texts.astype(f"S{width}")
                    got = enc
            texts = np.array(got, dtype=self.texts.dtype)
            order = np.argsort(texts, kind="stable")
            new, texts = new[order], texts[order]
            at = np.searchsorted(self.texts, texts)
            self.texts = _insert_sorted(self.texts, at, texts)
            self.ids = _insert_sorted(self.ids, at, new)
            lo = int(at[0])  # the ranks before the first new text stay
            self.rank[self.ids[lo:]] = np.arange(lo, self.ids.size)
            r = self.rank[ids]
        return r


def _insert_sorted(a: np.ndarray, at: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """np.insert(a, at, vals) for non-decreasing `at`: a few new values are joined to the
    slices between them (np.insert's general path costs 0.3 ms on 2·10⁵ elements)."""
    if at.size > 64:
        return np.insert(a, at, vals)
    cuts = at.tolist()
    parts = []
    prev = 0
    for j, c in enumerate(cuts):
        parts.append(a[prev:c])
        parts.append(vals[j:j + 1])
        prev = c
    parts.append(a[prev:])
    return np.concatenate(parts)


RANK_WIDTH = 32  # the longest UTF-8 text (bytes) _TextRank keeps in its fixed-width array
_RANK = _TextRank()


_NO_ELEMENTS = np.zeros(0, np.int64)


def _segments(c: Col):
    """The distinct lists of a list column, flattened: (distinct list ids, each row's index
    into them, the elements, the index of the list each element belongs to).  A null list
    (-1) has no elements."""
    u, inv = np.unique(c.v, return_inverse=True)
    lists = _LST.vals
    ul = u.tolist()
    ts = [lists[i] if i >= 0 else () for i in ul]
    lens = np.fromiter(map(len, ts), np.int64, len(ts))
    if any(isinstance(t, np.ndarray) for t in ts):  # long lists: concatenated as arrays
        flat = np.concatenate([t if isinstance(t, np.ndarray) else
                               np.fromiter(t, np.int64, len(t)) for t in ts])
    else:
        flat = np.fromiter(chain.from_iterable(ts), np.int64, int(lens.sum()))
    return u, inv.ravel(), flat, np.repeat(np.arange(len(ul)), lens)


def _split(flat: np.ndarray, cuts: list) -> list:
    """flat[cuts[j]:cuts[j+1]] for each j, as list values (_LST: a long one stays an
    array, a short one becomes a tuple)."""
    out = []
    short = None
    for a, b in zip(cuts, cuts[1:]):
        if b - a >= LONG_LIST:
            out.append(flat[a:b])
        else:
            if short is None:
                short = flat.tolist()
            out.append(tuple(short[a:b]))
    return out


def _map_segments(c: Col, fn) -> Col:
    """fn(elements, owners) -> (elements', owners') over every distinct list of a string
    list column at once (owners' non-decreasing: each list's elements in their new order);
    nulls stay null."""
    if c.v.size == 0:
        return Col(np.zeros(0, np.int64), None, c.k)
    u, inv, flat, owner = _segments(c)
    f2, o2 = fn(flat, owner)
    cuts = [0] + np.searchsorted(o2, np.arange(1, u.size)).tolist() + [o2.size]
    got = _internal([None if li < 0 else x for li, x in zip(u.tolist(), _split(f2, cuts))],
                    c.k)
    return _per_row(got, inv, c)


def _norm_segments(flat: np.ndarray, owner: np.ndarray):
    """Each string list without nulls and duplicates, sorted by text (list_norm)."""
    keep = flat >= 0
    flat, owner = flat[keep], owner[keep]
    if flat.size == 0:
        return flat, owner
    r = _RANK(flat)
    n_ranked = np.int64(_RANK.ids.size)
    key = owner * n_ranked + r
    span = (int(owner.max()) + 1) * int(n_ranked)
    if span <= 8 * key.size + 65536:
        # a counting sort: the distinct keys in order are the set positions of a bitmap
        # over the key space, O(span) — a long list (a schematic answer's 10⁴-10⁵
        # excluded constants) costs no comparison sort
        seen = np.zeros(span, bool)
        seen[key] = True
        k = np.flatnonzero(seen)
        return _RANK.ids[k % n_ranked], k // n_ranked
    order = np.argsort(key, kind="stable")
    k = key[order]
    first = np.ones(k.size, bool)
    first[1:] = k[1:] != k[:-1]
    sel = order[first]
    return flat[sel], owner[sel]


def _concat_lists(xs: list):
    """The lists one after the other (arrays when one is held as an array, _LST)."""
    if any(isinstance(x, np.ndarray) for x in xs):
        try:
            return np.concatenate([x if isinstance(x, np.ndarray) else
                                   np.array(x, dtype=np.int64).reshape(-1) for x in xs])
        except (TypeError, OverflowError):  # a null element: tuples
            pass
    return tuple(chain.from_iterable(_tuple(x) for x in xs))


def _any_segments(c: Col, flags_of) -> Col:
    """Whether any element of each list has flags_of(elements) true (a boolean column;
    nulls stay null)."""
    if c.v.size == 0:
        return Col(np.zeros(0, bool), None, BOOL)
    u, inv, flat, owner = _segments(c)
    hit = np.zeros(u.size, bool)
    hit[owner[flags_of(flat).astype(bool)]] = True
    return Col(hit[inv], _norm_mask(_m_or(None, c.m)), BOOL)
