"""Compiled kernels of the arrays executor (arrays.py): hash join, membership and
factorisation over key matrices (one int64 row of key values per table row, arrays._keymats).

With numba installed (requirements.txt) they are compiled once and cached next to this file
(or under NUMBA_CACHE_DIR); without it (or with HYPO_NO_NUMBA=1) the same functions run as
numpy sort-based code on one dense code a row: identical results, several times slower on
10³–10⁴ rows (bench/kernels.py).
"""
from __future__ import annotations

import os

import numpy as np

try:  # pragma: no cover - exercised through whichever is installed
    if os.environ.get("HYPO_NO_NUMBA"):
        raise ImportError("HYPO_NO_NUMBA is set")
    import numba

    # the GIL is kept: released, a reader thread (cli Prefetched) takes it for its whole
    # switch interval (5 ms) at every kernel call
    _jit = numba.njit(cache=True)
    COMPILED = True
except ImportError:  # pragma: no cover
    numba = None
    COMPILED = False

    def _jit(f):
        return f



def _table_bits(n: int) -> int:
    bits = 1
    while (1 << bits) < 2 * n:
        bits += 1
    return bits


if COMPILED:
    # The kernels compare rows inline: a call to a helper taking the key matrix costs ~30 ns
    # a row (the array's reference count), 5× a probe.  Each row's home slot is hashed once.
    @_jit
    def _row_slots(M, bits):
        """Each row's home slot: its values mixed, then splitmix64's finaliser (high bits)."""
        out = np.empty(M.shape[0], np.int64)
        for i in range(M.shape[0]):
            h = np.uint64(0x9E3779B97F4A7C15)
            for c in range(M.shape[1]):
                h = (h ^ np.uint64(M[i, c])) * np.uint64(0xBF58476D1CE4E5B9)
                h ^= h >> np.uint64(31)
            h ^= h >> np.uint64(30)
            h *= np.uint64(0x94D049BB133111EB)
            h ^= h >> np.uint64(31)
            out[i] = np.int64(h >> np.uint64(64 - bits))
        return out

    @_jit
    def _build_rows(R, ok, bits):
        """Open-addressing table over R's rows: slot -> first row; nxt chains equal rows."""
        cap = 1 << bits
        mask = cap - 1
        k = R.shape[1]
        slots = _row_slots(R, bits)
        head = np.full(cap, -1, np.int64)
        nxt = np.full(R.shape[0], -1, np.int64)
        for j in range(R.shape[0] - 1, -1, -1):  # chains in row order
            if not ok[j]:
                continue
            s = slots[j]
            while head[s] != -1:
                r = head[s]
                eq = True
                for c in range(k):
                    if R[r, c] != R[j, c]:
                        eq = False
                        break
                if eq:
                    break
                s = (s + 1) & mask
            nxt[j] = head[s]
            head[s] = j
        return head, nxt

    @_jit
    def _probe_rows(L, okl, R, head, bits):
        """Per row of L: the first row of R equal to it (-1: none)."""
        mask = (1 << bits) - 1
        k = L.shape[1]
        slots = _row_slots(L, bits)
        out = np.full(L.shape[0], -1, np.int64)
        for i in range(L.shape[0]):
            if not okl[i]:
                continue
            s = slots[i]
            while head[s] != -1:
                r = head[s]
                eq = True
                for c in range(k):
                    if R[r, c] != L[i, c]:
                        eq = False
                        break
                if eq:
                    out[i] = r
                    break
                s = (s + 1) & mask
        return out

    @_jit
    def _expand(first, nxt, left_outer):
        """The (li, ri) pairs from each left row's first match and the chains."""
        m = 0
        for i in range(first.size):
            j = first[i]
            if j == -1:
                if left_outer:
                    m += 1
                continue
            while j != -1:
                m += 1
                j = nxt[j]
        li = np.empty(m, np.int64)
        ri = np.empty(m, np.int64)
        m = 0
        for i in range(first.size):
            j = first[i]
            if j == -1:
                if left_outer:
                    li[m] = i
                    ri[m] = -1
                    m += 1
                continue
            while j != -1:
                li[m] = i
                ri[m] = j
                m += 1
                j = nxt[j]
        return li, ri

    @_jit
    def _join_rows(L, okl, R, okr, bits, left_outer):
        head, nxt = _build_rows(R, okr, bits)
        return _expand(_probe_rows(L, okl, R, head, bits), nxt, left_outer)

    @_jit
    def _member_rows(L, okl, R, okr, bits):
        head, nxt = _build_rows(R, okr, bits)
        return _probe_rows(L, okl, R, head, bits) != -1

    @_jit
    def _factorize_rows(M, bits):
        cap = 1 << bits
        mask = cap - 1
        k = M.shape[1]
        slots = _row_slots(M, bits)
        table = np.full(cap, -1, np.int64)  # slot -> group id
        rep = np.empty(cap, np.int64)
        gid = np.empty(M.shape[0], np.int64)
        first = np.empty(M.shape[0], np.int64)
        g = 0
        for i in range(M.shape[0]):
            s = slots[i]
            while table[s] != -1:
                r = rep[s]
                eq = True
                for c in range(k):
                    if M[r, c] != M[i, c]:
                        eq = False
                        break
                if eq:
                    break
                s = (s + 1) & mask
            if table[s] == -1:
                table[s] = g
                rep[s] = i
                first[g] = i
                g += 1
            gid[i] = table[s]
        return gid, first[:g]


def join_rows(L: np.ndarray, okl: np.ndarray, R: np.ndarray, okr: np.ndarray,
              left_outer: bool = False):
    """join_index on key matrices (one row of int64 per table row; ok: the row's key has no
    null that prevents a match)."""
    if COMPILED:
        return _join_rows(L, okl, R, okr, _table_bits(max(R.shape[0], 1)), left_outer)
    lk, rk = _dense(L, okl, R, okr)
    return join_index(lk, rk, left_outer)


def member_rows(L: np.ndarray, okl: np.ndarray, R: np.ndarray, okr: np.ndarray):
    if COMPILED:
        return _member_rows(L, okl, R, okr, _table_bits(max(R.shape[0], 1)))
    lk, rk = _dense(L, okl, R, okr)
    return member(lk, rk)


def factorize_rows(M: np.ndarray):
    if COMPILED:
        return _factorize_rows(M, _table_bits(max(M.shape[0], 1)))
    k, _ = _dense(M, np.ones(M.shape[0], bool), M[:0], np.ones(0, bool))
    return factorize(k)


def _dense(L, okl, R, okr):
    """One non-negative code per row of L and R (equal rows, equal codes; -1 where not ok)."""
    both = np.concatenate([L, R]) if R.shape[0] else L
    if both.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    _, inv = np.unique(both, axis=0, return_inverse=True)
    inv = inv.ravel().astype(np.int64)
    lk, rk = inv[:L.shape[0]], inv[L.shape[0]:]
    return np.where(okl, lk, -1), np.where(okr, rk, -1)


# ------------------------------------------------ numpy fallbacks (on one dense code a row)

def join_index(lk: np.ndarray, rk: np.ndarray, left_outer: bool = False):
    """Row pairs (li, ri) with lk[li] == rk[ri] ≥ 0, left rows in order (with left_outer,
    an unmatched left row once with ri = -1)."""
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
    if rk.size == 0:
        return np.zeros(lk.size, bool)
    s = np.sort(rk)
    pos = np.minimum(np.searchsorted(s, lk), s.size - 1)
    return (s[pos] == lk) & (lk >= 0)


def factorize(k: np.ndarray):
    """(group id per row, first row of each group), groups numbered in order of first
    appearance."""
    uniq, first, inv = np.unique(k, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inv.ravel()], first[order]


# ------------------------------------------------ a persistent index: 128-bit hash -> id

if COMPILED:
    @_jit
    def _hash_lookup(k1, k2, t1, t2, tv, bits):
        mask = (1 << bits) - 1
        out = np.full(k1.size, -1, np.int64)
        for i in range(k1.size):
            s = np.int64(np.uint64(k1[i]) >> np.uint64(64 - bits))
            while tv[s] != -1:
                if t1[s] == k1[i] and t2[s] == k2[i]:
                    out[i] = tv[s]
                    break
                s = (s + 1) & mask
        return out

    @_jit
    def _hash_insert(k1, k2, v, t1, t2, tv, bits):
        mask = (1 << bits) - 1
        added = 0
        for i in range(k1.size):
            s = np.int64(np.uint64(k1[i]) >> np.uint64(64 - bits))
            while tv[s] != -1 and not (t1[s] == k1[i] and t2[s] == k2[i]):
                s = (s + 1) & mask
            if tv[s] == -1:
                added += 1
            t1[s] = k1[i]
            t2[s] = k2[i]
            tv[s] = v[i]
        return added


class HashIndex:
    """value id by a 128-bit hash of the value (two 64-bit hashes, e.g. Polars' hash with two
    seeds): interning a column of strings without a Python call per row.  A cache — a miss
    is interned by the caller and inserted; `clear` after ids are freed or reused.  Two
    distinct strings colliding on 128 bits has probability ~n²/2¹²⁸."""

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        self.bits = 10
        self.n = 0
        self._alloc()

    def _alloc(self) -> None:
        cap = 1 << self.bits
        self.t1 = np.zeros(cap, np.int64)
        self.t2 = np.zeros(cap, np.int64)
        self.tv = np.full(cap, -1, np.int64)

    def lookup(self, k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
        return _hash_lookup(k1, k2, self.t1, self.t2, self.tv, self.bits)

    def insert(self, k1: np.ndarray, k2: np.ndarray, v: np.ndarray) -> None:
        if 2 * (self.n + k1.size) > (1 << self.bits):
            live = self.tv != -1
            o1, o2, ov = self.t1[live], self.t2[live], self.tv[live]
            while 2 * (self.n + k1.size) > (1 << self.bits):
                self.bits += 1
            self._alloc()
            _hash_insert(o1, o2, ov, self.t1, self.t2, self.tv, self.bits)
        self.n += _hash_insert(k1, k2, v, self.t1, self.t2, self.tv, self.bits)


_WARM = False


def warm() -> None:
    """Load (or compile) every kernel once, on tiny inputs: a process pays it at start-up,
    not inside its first tick."""
    global _WARM
    if _WARM or not COMPILED:
        return
    M = np.zeros((2, 1), np.int64)
    ok = np.ones(2, bool)
    join_rows(M, ok, M, ok, True)
    member_rows(M, ok, M, ok)
    factorize_rows(M)
    idx = HashIndex()
    k = np.arange(2, dtype=np.int64)
    idx.insert(k, k, k)
    idx.lookup(k, k)
    _WARM = True
