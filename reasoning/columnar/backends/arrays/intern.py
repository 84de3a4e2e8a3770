"""The interned tables: string and list values as int64 ids, one table of each a process."""
from __future__ import annotations

from operator import itemgetter
from typing import Iterable

import numpy as np

SWEEP_FLOOR = 65536  # interned entries below which no sweep runs (Symbols.due)
# the string table's floor is this many times larger: a sweep clears every per-string memo
# (prefix operations, text ranks, the ingest hash index), and strings freed while their
# devices are quiet come back a few ticks later (10⁵ devices freed and re-interned ~60 000
# strings every 5 ticks at a floor of 65 536); 2²⁰ strings are a few tens of MB
STRING_SWEEP_SCALE = 16


class Symbols:
    """Interned values: id -> value and value -> id (strings, or tuples for lists).  Ids of
    values no live frame holds are reused after `sweep` (bounded memory over a long run);
    pinned ids (the plan's literals) are never freed."""

    __slots__ = ("ids", "vals", "free", "pinned", "swept_at", "reused", "strings",
                 "generation")

    def __init__(self, strings: bool = False):
        self.strings = strings  # the string table (its floor is STRING_SWEEP_SCALE larger)
        self.ids: dict = {}
        self.vals: list = []
        self.free: list = []
        self.pinned: set = set()
        self.swept_at = 0  # live entries after the last sweep
        self.reused: list = []  # ids given a new value since a copy (_sym_series) was made
        self.generation = 0  # sweeps that freed ids (an id kept across one may mean another)

    plain = True  # every value is its own key (ListTable: short tuples only)

    def id(self, x) -> int:
        return self._put(x, x)

    def _put(self, key, val) -> int:
        i = self.ids.get(key)
        if i is None:
            if self.free:
                i = self.free.pop()
                self.vals[i] = val
                self.reused.append(i)
            else:
                i = len(self.vals)
                self.vals.append(val)
            self.ids[key] = i
        return i

    def due(self) -> bool:
        """Enough new entries since the last sweep to look for dead ones."""
        n = len(self.ids)
        floor = SWEEP_FLOOR * (STRING_SWEEP_SCALE if self.strings else 1)
        return n >= floor and n >= 2 * self.swept_at

    def sweep(self, live: np.ndarray) -> int:
        """Free every id not in `live` (ids any live frame holds) nor pinned; returns how
        many were freed."""
        keep = np.zeros(len(self.vals), bool)
        live = live[(live >= 0) & (live < keep.size)]
        keep[live] = True
        if self.pinned:
            keep[np.fromiter(self.pinned, np.int64, len(self.pinned))] = True
        dead = np.flatnonzero(~keep).tolist()
        freed = 0
        free = set(self.free)
        for i in dead:
            if i in free:
                continue
            x = self._key(self.vals[i])
            if self.ids.get(x) == i:
                del self.ids[x]
            self.vals[i] = None
            self.free.append(i)
            freed += 1
        self.swept_at = len(self.ids)
        self.generation += freed > 0
        return freed

    @staticmethod
    def _key(x):
        return x

    def encode(self, xs: Iterable) -> np.ndarray:
        """The ids of values xs (None: -1), entering the new ones.  On a table of plain keys
        they are entered in one go — freed ids first, in the order `id` takes them, then
        appended (a tick's new strings: ~3× cheaper than one by one)."""
        get = self.ids.get
        if not self.plain:  # (lists: a long one's key is its bytes, see ListTable)
            out = []
            for x in xs:
                i = -1 if x is None else (
                    get(x) if type(x) is tuple and len(x) < LONG_LIST else None)
                out.append(self.id(x) if i is None else i)
            return np.array(out, dtype=np.int64)
        xs = xs if isinstance(xs, list) else list(xs)
        out = [-1 if x is None else get(x) for x in xs]
        if None in out:
            new = list(dict.fromkeys(x for i, x in zip(out, xs) if i is None))
            nf = min(len(self.free), len(new))
            if nf:
                reuse = self.free[-nf:][::-1]  # free.pop() order
                del self.free[-nf:]
                vals = self.vals
                for i, x in zip(reuse, new):
                    vals[i] = x
                self.reused.extend(reuse)
                self.ids.update(zip(new, reuse))
                new = new[nf:]
            n0 = len(self.vals)
            self.vals.extend(new)
            self.ids.update(zip(new, range(n0, n0 + len(new))))
            out = [get(x) if i is None else i for i, x in zip(out, xs)]
        return np.array(out, dtype=np.int64)

    def decode(self, ids: np.ndarray) -> list:
        vals = self.vals
        return [vals[i] if i >= 0 else None for i in ids.tolist()]


LONG_LIST = 64  # a list at least this long is held as a read-only int64 array (ListTable)


class ListTable(Symbols):
    """Interned lists.  A short list is a tuple (its own key).  A list of LONG_LIST elements
    or more whose elements are all int64 (string ids, ints without nulls) is held as a
    read-only int64 array keyed by its bytes: a schematic answer's exclusions (10⁴–10⁵
    devices) are built, compared and interned without a Python object per element (hashing
    the bytes is ~10× cheaper than hashing the tuple).  Every list goes through `_canon`, so
    equal lists get one id whichever form they arrive in."""

    __slots__ = ()

    @staticmethod
    def _key(x):
        return x.tobytes() if isinstance(x, np.ndarray) else x

    @staticmethod
    def _canon(x):
        """(key, value) of a list given as a tuple or an array."""
        if isinstance(x, np.ndarray):
            if x.size < LONG_LIST or x.dtype.kind != "i":
                return (t := tuple(x.tolist())), t
            a = x if x.dtype == np.int64 else x.astype(np.int64)
        elif len(x) < LONG_LIST:
            return (t := _py_ints(x)), t
        else:
            a = np.array(x)
            if a.dtype.kind != "i" or a.ndim != 1:  # a null, a bool, a float, a huge int
                return (t := _py_ints(x)), t
            a = a.astype(np.int64, copy=False)
        if a.flags.writeable:
            a = a.copy() if a.base is not None else a
            a.flags.writeable = False
        return a.tobytes(), a

    plain = False

    def id(self, x) -> int:
        return self._put(*self._canon(x))


def _py_ints(t: tuple) -> tuple:
    """t with its numpy integers as Python ints (elements read from an array-held list)."""
    if any(isinstance(e, np.integer) for e in t):
        return tuple(int(e) if isinstance(e, np.integer) else e for e in t)
    return t


def _tuple(t) -> tuple:
    """A list value as a tuple of Python values."""
    return tuple(t.tolist()) if isinstance(t, np.ndarray) else t

_SYM = Symbols(strings=True)  # one table a process, shared by every engine: ids are comparable
_LST = ListTable()
_LST.pinned.add(_LST.id(()))


def _elem_ids(t) -> tuple:
    """A list of strings as the list table holds it: a tuple of string ids (null: -1)."""
    return tuple(-1 if x is None else _SYM.id(x) for x in t)


def _elem_vals(t) -> tuple:
    vals = _SYM.vals
    if isinstance(t, np.ndarray):  # a long list: its ids as Python ints, looked up in C
        t = t.tolist()
    if len(t) > 1 and min(t) >= 0:
        return itemgetter(*t)(vals)
    return tuple(None if i < 0 else vals[i] for i in t)
