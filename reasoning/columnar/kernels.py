"""Compiled kernels of the arrays executor (arrays.py): hash join, membership and
factorisation over one packed int64 key per row.

With numba installed (requirements.txt) they are compiled once and cached next to this file
(or under NUMBA_CACHE_DIR); without it the same functions run as numpy sort-based code, ~10×
slower on 10³–10⁴ rows but identical in result.  bench/kernels.py times both.

Keys are non-negative int64 codes (arrays._pack); a negative key never matches (a null).
"""
from __future__ import annotations

import os

import numpy as np

try:  # pragma: no cover - exercised through whichever is installed
    if os.environ.get("HYPO_NO_NUMBA"):
        raise ImportError("HYPO_NO_NUMBA is set")
    import numba

    _jit = numba.njit(cache=True, nogil=True)
    COMPILED = True
except ImportError:  # pragma: no cover
    numba = None
    COMPILED = False

    def _jit(f):
        return f

_MULT = -7046029254386353131  # 0x9E3779B97F4A7C15 as int64 (Fibonacci hashing)


def _table_bits(n: int) -> int:
    bits = 1
    while (1 << bits) < 2 * n:
        bits += 1
    return bits


if COMPILED:
    @_jit
    def _build(rk, bits):
        """Open-addressing table over rk: slot -> first row; nxt chains equal keys."""
        cap = 1 << bits
        mask = cap - 1
        head = np.full(cap, -1, np.int64)
        keys = np.empty(cap, np.int64)
        nxt = np.full(rk.size, -1, np.int64)
        for j in range(rk.size - 1, -1, -1):  # chains in row order
            k = rk[j]
            if k < 0:
                continue
            h = ((k * _MULT) >> (64 - bits)) & mask
            while head[h] != -1 and keys[h] != k:
                h = (h + 1) & mask
            if head[h] == -1:
                keys[h] = k
            nxt[j] = head[h]
            head[h] = j
        return head, keys, nxt

    @_jit
    def _probe(head, keys, bits, k):
        mask = (1 << bits) - 1
        h = ((k * _MULT) >> (64 - bits)) & mask
        while head[h] != -1 and keys[h] != k:
            h = (h + 1) & mask
        return head[h]

    @_jit
    def _join(lk, rk, bits, left_outer):
        head, keys, nxt = _build(rk, bits)
        size = lk.size + 16
        li = np.empty(size, np.int64)
        ri = np.empty(size, np.int64)
        m = 0
        for i in range(lk.size):
            k = lk[i]
            j = -1
            if k >= 0:
                j = _probe(head, keys, bits, k)
            if j == -1:
                if left_outer:
                    if m >= li.size:
                        li = np.concatenate((li, np.empty(li.size, np.int64)))
                        ri = np.concatenate((ri, np.empty(ri.size, np.int64)))
                    li[m] = i
                    ri[m] = -1
                    m += 1
                continue
            while j != -1:
                if m >= li.size:
                    li = np.concatenate((li, np.empty(li.size, np.int64)))
                    ri = np.concatenate((ri, np.empty(ri.size, np.int64)))
                li[m] = i
                ri[m] = j
                m += 1
                j = nxt[j]
        return li[:m], ri[:m]

    @_jit
    def _member(lk, rk, bits):
        head, keys, nxt = _build(rk, bits)
        out = np.zeros(lk.size, np.bool_)
        for i in range(lk.size):
            k = lk[i]
            if k >= 0 and _probe(head, keys, bits, k) != -1:
                out[i] = True
        return out

    @_jit
    def _factorize(k, bits):
        cap = 1 << bits
        mask = cap - 1
        slot = np.full(cap, -1, np.int64)
        keys = np.empty(cap, np.int64)
        gid = np.empty(k.size, np.int64)
        first = np.empty(k.size, np.int64)
        g = 0
        for i in range(k.size):
            x = k[i]
            h = ((x * _MULT) >> (64 - bits)) & mask
            while slot[h] != -1 and keys[h] != x:
                h = (h + 1) & mask
            if slot[h] == -1:
                keys[h] = x
                slot[h] = g
                first[g] = i
                g += 1
            gid[i] = slot[h]
        return gid, first[:g]


def join_index(lk: np.ndarray, rk: np.ndarray, left_outer: bool = False):
    """Row pairs (li, ri) with lk[li] == rk[ri] ≥ 0, left rows in order (with left_outer,
    an unmatched left row once with ri = -1)."""
    if COMPILED:
        return _join(lk, rk, _table_bits(max(rk.size, 1)), left_outer)
    order = np.argsort(rk, kind="stable")
    srk = rk[order]
    ok = lk >= 0
    lo = np.searchsorted(srk, lk, "left")
    hi = np.searchsorted(srk, lk, "right")
    cnt = np.where(ok, hi - lo, 0)
    if left_outer:
        cnt1 = np.maximum(cnt, 1)
        li = np.repeat(np.arange(lk.size), cnt1)
        starts = np.cumsum(cnt1) - cnt1
        off = np.arange(li.size) - np.repeat(starts, cnt1)
        pos = np.repeat(lo, cnt1) + off
        hit = np.repeat(cnt > 0, cnt1)
        ri = np.where(hit, order[np.minimum(pos, max(order.size - 1, 0))] if order.size
                      else -1, -1)
        return li, ri.astype(np.int64)
    li = np.repeat(np.arange(lk.size), cnt)
    starts = np.cumsum(cnt) - cnt
    off = np.arange(li.size) - np.repeat(starts, cnt)
    ri = order[np.repeat(lo, cnt) + off]
    return li, ri


def member(lk: np.ndarray, rk: np.ndarray) -> np.ndarray:
    """lk[i] ∈ rk (and lk[i] ≥ 0), for each i."""
    if COMPILED:
        return _member(lk, rk, _table_bits(max(rk.size, 1)))
    if rk.size == 0:
        return np.zeros(lk.size, bool)
    s = np.sort(rk)
    pos = np.minimum(np.searchsorted(s, lk), s.size - 1)
    return (s[pos] == lk) & (lk >= 0)


def factorize(k: np.ndarray):
    """(group id per row, first row of each group), groups numbered in order of first
    appearance."""
    if COMPILED:
        return _factorize(k, _table_bits(max(k.size, 1)))
    uniq, first, inv = np.unique(k, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inv.ravel()], first[order]
