"""Strings interned in bulk through their 128-bit hash signatures and a compiled index."""
from __future__ import annotations

from typing import Optional

import numpy as np

from reasoning.native import kernels
from reasoning.columnar.backends.arrays.frame import Col, _norm_mask
from reasoning.columnar.backends.arrays.intern import _SYM
from reasoning.columnar.layout import OBJ

_BY_HASH = None  # kernels.HashIndex over _SYM (built on first use; cleared by a sweep)


def _signature(s) -> tuple:
    """A Polars string column's 128-bit hash signatures (two 64-bit halves) and null mask:
    what _intern_series looks up (pure: a reading thread computes it ahead)."""
    k1 = s.hash(0x5EED1).to_numpy().view(np.int64).copy()  # writable: one signature
    k2 = s.hash(0x5EED2).to_numpy().view(np.int64).copy()
    m = s.is_null().to_numpy() if s.null_count() else None
    return k1, k2, m


_BY_STR = None  # the same over str_sigs's signatures of Python strings (_intern_strs)


def _intern_strs(xs: list) -> Optional[Col]:
    """A list of Python strings as string ids through their signatures (the C kernel
    str_sigs) and a compiled index — no dict look-up per string — or None (no C kernels,
    a short list, an item not a str): the caller encodes them one by one."""
    global _BY_STR
    if len(xs) < 64:
        return None
    sigs = kernels.c_only("str_sigs")
    got = None if sigs is None else sigs(xs)
    if got is None:
        return None
    if _BY_STR is None:
        _BY_STR = kernels.HashIndex()
    ids = _ids_by_signature(_BY_STR, *got, None, lambda pos: [xs[i] for i in pos.tolist()])
    return Col(ids, None, OBJ)


def _ids_by_signature(index, k1: np.ndarray, k2: np.ndarray, m: Optional[np.ndarray],
                      strings_at) -> np.ndarray:
    """The string ids of signatures (k1, k2) in `index` (a kernels.HashIndex; -1 where m, a
    null mask, is set); the strings it has not seen, strings_at(their positions), are
    entered in _SYM and in the index."""
    ids = index.lookup(k1, k2)
    miss = ids < 0 if m is None else (ids < 0) & ~m
    if miss.any():
        pos = np.flatnonzero(miss)
        new = _SYM.encode(strings_at(pos))
        ids[pos] = new
        index.insert(k1[pos], k2[pos], new)
    if m is not None:
        ids[m] = -1
    return ids


def _intern_series(s, sig: Optional[tuple] = None) -> Col:
    """A Polars string column as string ids: hashed in Polars (or `sig`, its _signature
    computed ahead), looked up in the compiled index; only strings it has not seen go
    through Python."""
    global _BY_HASH
    if _BY_HASH is None:
        _BY_HASH = kernels.HashIndex()
    n = s.len()
    if n == 0:
        return Col(np.zeros(0, np.int64), None, OBJ)
    k1, k2, m = _signature(s) if sig is None else sig
    ids = _ids_by_signature(_BY_HASH, k1, k2, m, lambda pos: s.gather(pos).to_list())
    return Col(ids, _norm_mask(m), OBJ)
