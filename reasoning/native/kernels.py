"""Compiled kernels of the arrays executor (reasoning/columnar/backends/arrays/): hash join, membership and
factorisation over key matrices (one int64 row of key values per table row, arrays._keymats),
and a persistent 128-bit-hash -> id index (HashIndex).

Two implementations, the same results (tests/test_arrays_backend.py compares them with a
nested loop):
- **C** (`_ckernels.c`, the extension `reasoning.native._ckernels` that setup.py builds at
  install time — never at import or run time): the default.  It loads in ~1 ms;
- **numpy** sort-based code on one dense code a row, where the extension was not built (no C
  compiler at install time): 8–14× slower a columnar tick at 10⁴ devices (docs/performance.md).
HYPO_KERNELS=c|numpy picks one (the default: C where it was built).  A numba copy of the C
kernels stood between the two until issue 41: 0.72–0.83× C's throughput for 0.7–1 s of
start-up and llvmlite; with the C kernels built by every install that has a compiler, it
was dropped.
"""
from __future__ import annotations

import os

import numpy as np


def _table_bits(n: int) -> int:
    """The hash table's size 2^bits: the least with 2^bits ≥ 2n (bits ≥ 1)."""
    return max(1, (2 * n - 1).bit_length())


last_error = None  # why the C kernels are not in use (None: they are)


def implementation(name: str):
    """The kernels of one implementation ("c"), or None if it is not available here."""
    global last_error
    if name == "c":
        try:
            from reasoning.native import _ckernels
        except ImportError as e:
            last_error = (f"the C kernels were not built at install time ({e}); "
                          "the numpy kernels stand in")
            return None
        return _ckernels
    return None


def _choose():
    want = os.environ.get("HYPO_KERNELS", "").strip().lower()
    if want != "numpy":
        impl = implementation("c")
        if impl is not None:
            return "c", impl
    return "numpy", None


IMPL, _impl = _choose()
COMPILED = _impl is not None


def c_only(name: str):
    """A function the C kernels alone have (the stream scanner, the row formatter), or None
    when the kernels in use are numpy's: its caller then takes its Python path."""
    return getattr(_impl, name, None) if IMPL == "c" else None


def _rows(K) -> int:
    return K.shape[0] if isinstance(K, np.ndarray) else K[0].size


MAX_KEYS = 64  # the C kernels' key columns (_ck_join.c); wider keys take the numpy path


def _c_keys(*Ks) -> bool:
    """Whether the C kernels take these keys (at most MAX_KEYS columns: a head of 2 000
    variables is a join on 2 000, issue 44.3)."""
    def keys(K) -> int:
        if isinstance(K, np.ndarray):
            return K.shape[1] if K.ndim == 2 else 1
        return len(K)

    return COMPILED and all(keys(K) <= MAX_KEYS for K in Ks)


def _matrix(K, ok):
    """Keys and mask as the numpy code takes them: a key matrix, a bool a row."""
    if not isinstance(K, np.ndarray):
        K = K[0].reshape(-1, 1) if len(K) == 1 else np.column_stack(K)
    return np.ascontiguousarray(K), np.ones(K.shape[0], bool) if ok is None else ok


def join_rows(L, okl, R, okr, left_outer: bool = False):
    """join_index on keys: a key matrix (one row of int64 per table row) or a list of key
    columns (int64, at least one) a side; ok: None (every row) or whether the row's key has
    no null that prevents a match."""
    bits = _table_bits(max(_rows(R), 1))
    if _c_keys(L, R):  # the C kernels take a key matrix or the key columns
        return _impl.join_rows(L, okl, R, okr, bits, left_outer)
    (L, okl), (R, okr) = _matrix(L, okl), _matrix(R, okr)
    lk, rk = _dense(L, okl, R, okr)
    return join_index(lk, rk, left_outer)


def member_rows(L, okl, R, okr):
    """Whether each row of L has an equal row in R (keys as join_rows)."""
    bits = _table_bits(max(_rows(R), 1))
    if _c_keys(L, R):  # the C kernels take a key matrix or the key columns
        return _impl.member_rows(L, okl, R, okr, bits)
    (L, okl), (R, okr) = _matrix(L, okl), _matrix(R, okr)
    lk, rk = _dense(L, okl, R, okr)
    return member(lk, rk)


def factorize_rows(M):
    """(group id per row, first row of each group) of the keys M (as join_rows), groups
    numbered in order of first appearance."""
    bits = _table_bits(max(_rows(M), 1))
    if _c_keys(M):  # the C kernels take a key matrix or the key columns
        return _impl.factorize_rows(M, bits)
    M, _ = _matrix(M, None)
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
        return _impl.hash_lookup(k1, k2, self.t1, self.t2, self.tv, self.bits)

    def insert(self, k1: np.ndarray, k2: np.ndarray, v: np.ndarray) -> None:
        if 2 * (self.n + k1.size) > (1 << self.bits):
            live = self.tv != -1
            o1, o2, ov = self.t1[live], self.t2[live], self.tv[live]
            while 2 * (self.n + k1.size) > (1 << self.bits):
                self.bits += 1
            self._alloc()
            _impl.hash_insert(o1, o2, ov, self.t1, self.t2, self.tv, self.bits)
        self.n += _impl.hash_insert(k1, k2, v, self.t1, self.t2, self.tv, self.bits)


_WARM = False


def warm() -> None:
    """Load every kernel once, on tiny inputs: a process pays it at start-up,
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
