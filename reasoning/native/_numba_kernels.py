"""The numba implementation of the row kernels (kernels.py; the C one is _ckernels.c, the
same algorithms): used where the C kernels cannot be built."""
from __future__ import annotations

import types

import numba
import numpy as np

# the GIL is kept: released, a reader thread (cli Prefetched) takes it for its whole switch
# interval (5 ms) at every kernel call
_jit = numba.njit(cache=True)


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


KERNELS = types.SimpleNamespace(takes_columns=False, join_rows=_join_rows,
                                member_rows=_member_rows, factorize_rows=_factorize_rows,
                                hash_lookup=_hash_lookup, hash_insert=_hash_insert)
