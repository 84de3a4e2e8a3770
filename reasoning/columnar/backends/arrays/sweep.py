"""Freeing the interned ids that no live frame holds, and the memos that hold ids."""
from __future__ import annotations

import weakref

import numpy as np

import reasoning.columnar.backends.arrays.signatures as _signatures
from reasoning.columnar.backends.arrays.frame import _LISTS
from reasoning.columnar.backends.arrays.intern import _LST, _SYM
from reasoning.columnar.backends.arrays.polars_io import _SYM_POLARS
from reasoning.columnar.backends.arrays.segments import _LIST_LENS, _PREFIXED, _RANK
from reasoning.columnar.layout import OBJ

_OWNERS: "weakref.WeakSet" = weakref.WeakSet()  # engines whose frames hold ids


class Sweeping:
    """ArraysBackend's sweeps of the interned tables (mixed into it)."""

    def collect(self, owner) -> int:
        """Free the interned strings and lists that no live frame holds, once the tables
        doubled since the last sweep.  The live frames are those every engine on this
        process's tables keeps across ticks (`owner.live_frames()`: S_τ, W, the delay tables,
        the last report); the tables are shared, so every owner still alive is asked.  The
        string ids a live list holds stay.  Returns how many were freed."""
        _OWNERS.add(owner)
        lists, strings = _LST.due(), _SYM.due()
        if not (lists or strings):
            return 0
        frames = [f for o in list(_OWNERS) for f in o.live_frames()]
        # the lists first: a string sweep keeps the elements of the lists that stay
        lst_live = [c.v for f in frames for c in f.cols.values() if c.k in _LISTS]
        freed = _LST.sweep(np.concatenate(lst_live) if lst_live else np.zeros(0, np.int64))
        if freed:
            _LIST_LENS.clear()
        if not strings:  # the string ids stay: so do their memos and copies
            return freed
        obj_live = [c.v for f in frames for c in f.cols.values() if c.k == OBJ]
        # a string list holds string ids (an int list's values are kept too: harmless)
        obj_live.append(np.fromiter((x for t in _LST.vals if type(t) is tuple for x in t
                                     if isinstance(x, int) and x >= 0), np.int64))
        obj_live.extend(t for t in _LST.vals if isinstance(t, np.ndarray))
        for memo in _PREFIXED.values():  # they may hold ids freed now
            memo.clear()
        _RANK.clear()
        if _signatures._BY_HASH is not None:
            _signatures._BY_HASH.clear()
        if _signatures._BY_STR is not None:
            _signatures._BY_STR.clear()
        _SYM_POLARS[0] = None
        freed += _SYM.sweep(np.concatenate(obj_live) if obj_live else np.zeros(0, np.int64))
        return freed

    def generation(self) -> tuple:
        """Changes when a sweep may have given an id another value."""
        return _SYM.generation, _LST.generation
