"""ArraysBackend's fused operations for the engine's steps: deadlines, row formatting, marks,
a family's look-ups by template and mask."""
from __future__ import annotations

from typing import Optional

import numpy as np

from reasoning.native import kernels
from reasoning.columnar.backends.arrays.expr import _truth
from reasoning.columnar.backends.arrays.frame import NULL, Col, Frame, _norm_mask
from reasoning.columnar.backends.arrays.intern import _LST, _SYM
from reasoning.columnar.backends.arrays.keys import _keymats, _member_mask
from reasoning.columnar.layout import BOOL, INT, OBJ, STRLIST


class DomainOps:
    """ArraysBackend's operations beyond the relational interface, for the engine's own
    steps (mixed into it)."""

    def format_rows(self, df, spec: tuple, scols: list, icols: list, tick: int):
        """The C row formatter (rowformat.compile_row_program's spec) over a frame's own
        columns — string ids, times, evidence masks, deadlines — without decoding them:
        (skeys, lines, akeys, statuses) of tick `tick`, or None (no C kernels; a null
        binding; a value that is not bare; exclusions it does not print)."""
        fmt = kernels.c_only("format_rows")
        if fmt is None or df.n == 0:
            return None
        cols = df.cols
        sc, ic = [], []
        for names, kind, out in ((scols, OBJ, sc), (icols, INT, ic)):
            for x in names:
                c = cols[x]
                if c.k != kind or (c.m is not None and c.m.any()):
                    return None
                out.append(c.v)
        ev = cols["ev"]
        dl = cols["dl"]
        if ev.k != INT or (ev.m is not None and ev.m.any()) or dl.k not in (INT, NULL):
            return None
        if dl.k == NULL:
            dlv, dln = np.zeros(df.n, np.int64), np.ones(df.n, bool)
        else:
            dlv, dln = dl.v, (dl.m if dl.m is not None else np.zeros(df.n, bool))
        ng = None
        if spec[3] is not None:  # the exclusions: the rows' nogood lists (ids into _LST)
            c = cols["ng"]
            if c.k != STRLIST:
                return None
            ng = c.v if c.m is None else np.where(c.m, -1, c.v)
        return fmt(spec, tuple(sc), tuple(ic), _SYM.vals, ev.v, dlv, dln, tick, ng, _LST.vals)

    def render_deadlines(self, df, full: int, tau: int, lits: list):
        """render.Renderer.deadlines' first pass over one frame by the C kernel: (the rows
        done, with `dl`; the rows needing a negated predicate's deadline, or None), or None
        (no C kernels, a null where the expressions would read one).  lits: [(bit, time
        column or None, time offset, static horizon or -1 for none)]."""
        fused = kernels.c_only("render_deadlines")
        if fused is None or df.n == 0:
            return None
        ev, dlp, unb = df.cols["ev"], df.cols["dlp"], df.cols["unb"]
        if ev.k != INT or _norm_mask(ev.m) is not None or unb.k != BOOL or \
                _norm_mask(unb.m) is not None or dlp.k not in (INT, NULL):
            return None  # (a mask of no null is no null)
        ts = []
        for bit, tcol, toff, r in lits:
            if tcol is None:
                ts.append((bit, None, toff, r))
                continue
            c = df.cols[tcol]
            if c.k != INT or _norm_mask(c.m) is not None or r < -1:
                return None
            ts.append((bit, c.v, toff, r))
        dv = dlp.v if dlp.k == INT else np.zeros(df.n, np.int64)
        dn = dlp.m if dlp.k == INT and dlp.m is not None else np.full(df.n, dlp.k == NULL)
        dl, null, bad, needs = fused(ev.v, dv, dn, unb.v, full, tau, ts)
        cols = dict(df.cols)
        cols["dl"] = Col(dl, _norm_mask(null), INT)
        out = Frame(cols, df.n)
        pend = needs & ~bad  # (no literal: nothing needs a negated predicate's deadline)
        waiting = np.flatnonzero(pend)
        if not waiting.size:
            return out, None
        done = np.flatnonzero(~pend)
        return out.take(done, done.size), out.take(waiting, waiting.size)

    def mark_rids(self, R, C, marks: dict):
        """R with a boolean column per mark: whether some row of C with R's `_rid` has the
        flag column true (None: any row at all) — the group-by `any` and left join of step
        3(b) as two scatters (R's `_rid` increasing, as with_row_id and filters leave it);
        None when a column is not as expected (the caller takes the group-by)."""
        r, c = R.cols.get("_rid"), C.cols.get("_rid")
        if r is None or c is None or r.m is not None or c.m is not None or r.k != INT:
            return None
        rv, cv = r.v, c.v
        if R.n and rv[0] == 0 and rv[-1] == R.n - 1:  # (increasing: every rid, in order)
            pos = cv
        else:
            pos = np.searchsorted(rv, cv)
            if pos.size and (pos.max() >= R.n or (rv[pos] != cv).any()):
                return None
        cols = dict(R.cols)
        for name, flag in marks.items():
            out = np.zeros(R.n, bool)
            if flag is None:
                out[pos] = True
            else:
                f = C.cols[flag]
                if f.k != BOOL:
                    return None
                out[pos[_truth(f)]] = True
            cols[name] = Col(out, None, BOOL)
        return Frame(cols, R.n)

    def deadlines(self, df, lits: list, names: tuple = ("exp", "dlp")):
        """df with step 1's exp and dlp columns (`names`; None: not added) computed by the
        fused C kernel, or None (no C kernels, a null or non-string look-up column, a
        look-up by two arguments): the engine then builds them as expressions.  lits:
        [(bit, time column or None, time offset, DelayPlan.lookup_spec)] of the positive
        literals with a bound time; a frame without `ev` (facts) has no bit set."""
        fused = kernels.c_only("deadlines")
        if fused is None or df.n == 0:
            return None
        ev = df.cols.get("ev")
        if ev is None:
            evv = np.zeros(df.n, np.int64)
        elif ev.k != INT:
            return None
        else:  # null: no bit set (as _truth reads it)
            evv = ev.v if ev.m is None else np.where(ev.m, 0, ev.v)
        items = []
        for bit, tcol, toff, spec in lits:
            if spec is None:
                return None
            ground, const, d0, looks = spec
            t = None
            if tcol is not None:
                c = df.cols[tcol]
                if c.m is not None or c.k != INT:
                    return None
                t = c.v
            groups = []
            for col, table, key, val in looks:
                c = df.cols[col]
                if c.m is not None or c.k != OBJ:
                    return None
                dense = self._dense_delays(table, key, val)
                if dense is None:
                    return None
                groups.append((c.v, dense))
            if (const is not None and const < 0) or d0 < 0:
                return None
            items.append((bit, t, toff, -1 if const is None else const, ground, d0, groups))
        exp, dlp, null, any_null = fused(evv, items)
        m = null if any_null else None
        cols = dict(df.cols)
        cols[names[0]] = Col(exp, m, INT)
        if names[1] is not None:
            cols[names[1]] = Col(dlp, None if m is None else m.copy(), INT)
        return Frame(cols, df.n)

    def _dense_delays(self, table, key: str, val: str) -> Optional[np.ndarray]:
        """A δ look-up table as an array indexed by string id (-1: no pattern), or None;
        the tables live as long as their DelayPlan, and so do their ids."""
        memo = self._dense_memo
        got = memo.get(id(table))
        if got is None or got[0] is not table:
            ids, ds = table.cols[key].v, table.cols[val].v
            if table.cols[key].k != OBJ or table.cols[val].m is not None or (ds < 0).any():
                return None
            dense = np.full(int(ids.max()) + 1 if ids.size else 0, -1, np.int64)
            np.maximum.at(dense, ids[ids >= 0], ds[ids >= 0])
            got = memo[id(table)] = (table, dense)
        return got[1]

    def mark_matches(self, left, right, left_on: list, right_on: list, name: str):
        """left with a boolean column `name`: whether some row of right has its key (a
        left join on a right side of unique keys, marked, without gathering any column)."""
        lcols = [left.cols[x] if isinstance(x, str) else self._eval(left, x) for x in left_on]
        hit = _member_mask(lcols, [right.cols[x] for x in right_on], False)
        cols = dict(left.cols)
        cols[name] = Col(hit, None, BOOL)
        return Frame(cols, left.n)

    def member_rows(self, left, right, keys: list) -> np.ndarray:
        """Whether each row of left equals some row of right on the key columns (nulls
        equal): a mask, for callers that keep frames of their own aligned with these."""
        return _member_mask([left.cols[k] for k in keys], [right.cols[k] for k in keys], True)

    def span_by_key(self, df, key: str, keys: tuple, offs: tuple, lows: tuple, ev: str,
                    names: list):
        """df with INT columns names = (the least and the greatest c over the pairs (j, c)
        of offs[i] whose bit j is not in the row's `ev` — null if none —, lows[i]), i the
        row's key's place in keys: finish's deadline offsets of a family's woken rows,
        looked up a byte of ev at a time in tables made once per `offs`."""
        big = np.iinfo(np.int64).max
        index, tmin = self._byte_table(keys, offs, big, np.minimum)
        _, tmax = self._byte_table(keys, offs, -big, np.maximum)
        at0 = index.take(df.cols[key].v)
        open_ = ~df.cols[ev].v
        lo = _by_bytes(tmin, at0, open_, np.minimum)
        hi = _by_bytes(tmax, at0, open_, np.maximum)
        none = lo == big
        m = none if none.any() else None
        if m is not None:
            lo[none] = 0
            hi[none] = 0
        cols = dict(df.cols)
        cols[names[0]] = Col(lo, m, INT)
        cols[names[1]] = Col(hi, None if m is None else m.copy(), INT)
        cols[names[2]] = Col(np.asarray(lows, np.int64).take(at0), None, INT)
        return Frame(cols, df.n)

    def _byte_table(self, keys: tuple, entries: tuple, fill: int, red) -> tuple:
        """(key → its row, [row, chunk c, byte v] → red over the values at the bits 8c + i
        of v among entries[row] (pairs (bit, value), or a dict of them; fill if none)),
        kept while `entries` lives: a look-up per set of bits, a byte of the set at a time
        (_by_bytes)."""
        memo = self._dense_memo
        got = memo.get((id(entries), fill))
        if got is None or got[0] is not entries:
            pairs = [list(e.items()) if isinstance(e, dict) else list(e) for e in entries]
            width = max((j for e in pairs for j, _ in e), default=0) + 1
            nchunks = (width + 7) // 8
            base = np.full((len(keys), nchunks * 8), fill, np.int64)
            for n, e in enumerate(pairs):
                for j, x in e:
                    base[n, j] = x
            sel = ((np.arange(256)[:, None] >> np.arange(8)) & 1) == 1  # [byte, bit]
            table = np.empty((len(keys), nchunks, 256), np.int64)
            for c in range(nchunks):
                part = base[:, 8 * c:8 * c + 8]  # [row, bit]
                table[:, c, :] = red.reduce(np.where(sel[None, :, :], part[:, None, :], fill),
                                            axis=2)
            index = np.full(max(keys) + 1, -1, np.int64)
            index[list(keys)] = np.arange(len(keys))
            got = memo[(id(entries), fill)] = (entries, (index, table))
        return got[1]

    def wake_family(self, A, U, keys: list, tids: tuple, masks: tuple, tau: int, cols: list):
        """step1_family's wake-up of the family's table A (`_tid`, keys, ev, ng, exp, …)
        by D|τ's bindings U (keys, distinct; `_pd`, `_pw`: the seeding and the present
        shapes) in one pass: (kept — the rows no seeding shape hits with a bit they lack,
        whose open literals may still arrive (exp null or > τ), columns `cols` —, woken —
        the hit rows that are not pristine (no evidence, no nogood), columns `_tid`, keys,
        ev with the present shapes' bits, ng); the bits of a template's shapes by a byte
        table (_byte_table).  The left join, look-ups and filters step1_family makes as
        separate operations on other backends."""
        n = A.n
        (L, okl), (R, okr) = _keymats([[A.cols[k] for k in keys], [U.cols[k] for k in keys]])
        li, ri = kernels.join_rows(L, okl, R, okr, True)
        if li.size != n:
            raise ValueError("wake_family: the bindings' keys are not distinct")
        if n and not (li == np.arange(n)).all():  # (rows in A's order)
            ri = ri[np.argsort(li, kind="stable")]
        miss = ri < 0
        rs = np.where(miss, 0, ri)
        if U.n:
            pd = U.cols["_pd"].v.take(rs)
            pd[miss] = 0
        else:
            pd = np.zeros(n, np.int64)
        index, table = self._byte_table(tids, masks, 0, np.bitwise_or)
        row = index.take(A.cols["_tid"].v)
        ev = A.cols["ev"].v
        hit = (_by_bytes(table, row, pd, np.bitwise_or) & ~ev) != 0
        exp = A.cols["exp"]
        live = exp.v > tau if exp.m is None else exp.m | (exp.v > tau)
        pri = (ev == 0) & (self._eval(A, self.list_len(self.col("ng"))).v == 0)
        keep = np.flatnonzero(~hit & live)
        woke = np.flatnonzero(hit & ~pri)
        kept = A.take(keep, keep.size)
        kept = Frame({c: kept.cols[c] for c in cols}, keep.size)
        m = pd.take(woke)
        pw = U.cols["_pw"]
        if pw.v.any():
            w = pw.v.take(rs.take(woke))
            m = m | (w if pw.m is None else np.where(pw.m.take(rs.take(woke)), 0, w))
        wcols = {c: A.cols[c].gather_later(woke) for c in ["_tid"] + list(keys)}
        wcols["ev"] = Col(ev.take(woke) | _by_bytes(table, row.take(woke), m, np.bitwise_or),
                          None, INT)
        wcols["ng"] = A.cols["ng"].gather_later(woke)
        return kept, Frame(wcols, woke.size)

    def shifted(self, dfs: list, tv: str, shapes: list, cols: list):
        """dfs one under another, each row once per (offset, bit) of shapes[i] (dfs[i]'s),
        with tv less the offset and `_pd` the bit — columns cols and `_pd`: a family's seed
        bindings at offset 0 moved to each shape of their atom."""
        parts = []
        for df, sh in zip(dfs, shapes):
            k, n = len(sh), df.n
            out = {}
            for c in cols:
                col = df.cols[c]
                v = np.repeat(col.v, k)
                if c == tv:
                    v = v - np.tile(np.fromiter((o for o, _ in sh), np.int64, k), n)
                out[c] = Col(v, None if col.m is None else np.repeat(col.m, k), col.k)
            out["_pd"] = Col(np.tile(np.fromiter((b for _, b in sh), np.int64, k), n), None,
                             INT)
            parts.append(Frame(out, n * k))
        return self.concat(parts)

def _by_bytes(table: np.ndarray, row: np.ndarray, m: np.ndarray, red) -> np.ndarray:
    """red over the byte chunks c of m of table[row, c, byte c of m] (_byte_table's)."""
    nchunks = table.shape[1]
    flat = table.reshape(-1)
    at = row * (nchunks * 256)
    out = flat.take(at + (m & 255))
    for c in range(1, nchunks):
        red(out, flat.take(at + (c * 256 + ((m >> (8 * c)) & 255))), out=out)
    return out
