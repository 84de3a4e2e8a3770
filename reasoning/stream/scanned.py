"""A block of canonical fact lines as the C stream scanner returns it (stream._scan_block):
numpy columns and the arguments' strings, kept so until a consumer needs another form.

`hypo run` hands D|τ to the set-at-a-time executor as per-predicate columns straight from
here (`columns`): no Polars frame is built, partitioned by tick and by predicate, exploded
and converted again (~0.7 ms of a 10⁴-device turbine tick).  `to_frame` gives the frame
(no, tick, pred, args, t) of the general reader, for every other consumer.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from reasoning.semantics.patterns import Fact


class Scanned:
    """Rows [a, b) of a scanned block: line numbers first+i, ticks, times, predicate ids
    into `preds`, and each row's arguments flat[offs[i]:offs[i+1]] (offsets into the
    block's shared list); k: the number of arguments of every row, or -1."""

    __slots__ = ("first", "ticks", "ts", "pid", "preds", "offs", "flat", "k")

    def __init__(self, first: int, ticks: np.ndarray, ts: np.ndarray, pid: np.ndarray,
                 preds: list, offs: np.ndarray, flat: list, k: int):
        self.first, self.ticks, self.ts, self.pid = first, ticks, ts, pid
        self.preds, self.offs, self.flat, self.k = preds, offs, flat, k

    @classmethod
    def of(cls, first: int, ticks: np.ndarray, ts: np.ndarray, pid: np.ndarray, preds: list,
           nargs: np.ndarray, flat: list) -> "Scanned":
        """A whole block from each row's number of arguments (the C scanner's fields)."""
        k = int(nargs[0]) if nargs.size else 0
        return cls(first, ticks, ts, pid, list(preds), np.concatenate(([0], np.cumsum(nargs))),
                   flat, k if (nargs == k).all() else -1)

    @property
    def height(self) -> int:
        return self.ticks.size

    def __len__(self) -> int:
        return self.ticks.size

    @property
    def last_tick(self) -> int:
        return int(self.ticks[-1])

    def rows(self, a: int, b: int) -> "Scanned":
        """Rows [a, b) (views: nothing is copied)."""
        return Scanned(self.first + a, self.ticks[a:b], self.ts[a:b], self.pid[a:b],
                       self.preds, self.offs[a:b + 1], self.flat, self.k)

    def tick_parts(self) -> list:
        """[(tick, rows of that tick)] in order (the ticks never decrease)."""
        t = self.ticks
        if t.size == 0:
            return []
        cuts = (np.flatnonzero(t[1:] != t[:-1]) + 1).tolist()
        bounds = [0] + cuts + [t.size]
        return [(int(t[a]), self.rows(a, b)) for a, b in zip(bounds, bounds[1:])]

    def _args(self) -> list:
        """Each row's arguments as a list."""
        flat, o = self.flat, self.offs.tolist()
        return [flat[o[i]:o[i + 1]] for i in range(len(o) - 1)]

    def entries(self) -> list:
        """[(fact, line)] in line order."""
        preds, first = self.preds, self.first
        return [(Fact(preds[p], tuple(a), t), first + i) for i, (p, a, t) in enumerate(
            zip(self.pid.tolist(), self._args(), self.ts.tolist()))]

    def columns(self) -> dict:
        """{pred: {"a0": [...], …, "t": int64 array}}: D|τ's columns by predicate, in line
        order (stream.Slice.columns; the engine's `from_columns` input)."""
        from reasoning.columnar.layout import acol

        out: dict = {}
        pid = self.pid
        if pid.size == 0:
            return out
        one = bool((pid == pid[0]).all())
        groups = [(int(pid[0]), None)] if one else [
            (int(p), np.flatnonzero(pid == p)) for p in np.unique(pid).tolist()]
        o0, o1 = int(self.offs[0]), int(self.offs[-1])
        args = None  # each row's arguments, when some group needs them
        for p, rows in groups:
            k = self.k
            if rows is None and k >= 0:  # every row: its arguments are every k-th string
                part = self.flat[o0:o1]
                cols = {acol(i): part[i::k] for i in range(k)}
                cols["t"] = self.ts
            else:
                args = self._args() if args is None else args
                rs = range(len(args)) if rows is None else rows.tolist()
                n = len(args[rs[0]]) if len(rs) else 0
                cols = {acol(i): [args[r][i] for r in rs] for i in range(n)}
                cols["t"] = self.ts if rows is None else self.ts[rows]
            out[self.preds[p]] = cols
        return out

    def to_frame(self):
        """The frame (no, tick, pred, args, t) the general block reader gives."""
        import polars as pl

        n = self.height
        k = self.k
        o0, o1 = (int(self.offs[0]), int(self.offs[-1])) if n else (0, 0)
        if k > 0:
            args = pl.Series("args", self.flat[o0:o1], dtype=pl.String).reshape(
                (n, k)).arr.to_list()
        elif k == 0:
            args = pl.Series("args", [[]] * n, dtype=pl.List(pl.String))
        else:
            args = pl.Series("args", self._args(), dtype=pl.List(pl.String))
        return pl.DataFrame([pl.Series("no", np.arange(self.first, self.first + n,
                                                       dtype=np.int64)),
                             pl.Series("tick", self.ticks),
                             pl.Series("pred", self.preds, dtype=pl.String).gather(self.pid),
                             args, pl.Series("t", self.ts)])


def entry_columns(entries: list) -> Optional[dict]:
    """Slice.columns of a chunk read line by line ((Fact, line) pairs): None if a time does
    not fit an int64 (the frames take it)."""
    from reasoning.columnar.layout import facts_by_pred

    out = facts_by_pred(f for f, _ in entries)
    try:
        for cols in out.values():
            cols["t"] = np.array(cols["t"], dtype=np.int64)
    except OverflowError:
        return None
    return out


def merged_columns(parts: list) -> Optional[dict]:
    """Slice.columns over several chunks' columns (a tick spread over blocks): each
    predicate's columns concatenated in line order."""
    out: dict = {}
    for part in parts:
        for p, cols in part.items():
            have = out.get(p)
            if have is None:
                out[p] = {k: (v if isinstance(v, np.ndarray) else list(v))
                          for k, v in cols.items()}
                continue
            if have.keys() != cols.keys():  # one predicate streamed with two arities
                return None
            for k, v in cols.items():
                have[k] = np.concatenate([have[k], v]) if isinstance(v, np.ndarray) \
                    else have[k] + v
    return out
