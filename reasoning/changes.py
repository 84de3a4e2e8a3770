"""`hypo run --changes`: per tick only the answers whose printed lines changed (issue 9)."""
from __future__ import annotations

import re

import numpy as np

from .columnar import kernels

_TIME_FROM = re.compile(r'"time_from": \{[^{}]*\}')
_NUMBER = re.compile(r'(": )(-?\d+)')


def _member(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each row of hash matrix a: whether it is a row of b."""
    return kernels.member_rows(a, None, b, None)


def relative_time_from(body: str, tau: int) -> str:
    """The line with each `time_from` value v written as v − τ: a floor that advances with
    the tick (an unbound time variable's instances below τ are decided, exact.py) compares
    equal from tick to tick."""
    return _TIME_FROM.sub(lambda m: _NUMBER.sub(lambda n: f"{n[1]}{int(n[2]) - tau}", m[0]),
                          body)


class Changes:
    """`--changes`: per tick only the answers whose lines changed since the previous tick.
    An answer (its query, substitution and object exclusions: explain.answer_key) is printed with
    all its current lines when that set of lines changed — `new` (not printed before),
    `updated` (other evidence, hypotheses or deadline), `decided` (now definite) — and once
    as `refuted` when it is gone without having become definite.  Replaying the changes
    (replace an answer's lines by the printed ones, drop refuted answers) gives the full
    output of every tick; definite answers are final (forgetting drops them after the tick
    they are printed at, as in the full output).

    A line's `time_from` floors are compared relative to the tick: a floor that only moved
    on by the ticks elapsed is no change (an answer waiting for ever on an unbound time
    variable would otherwise be printed at every tick, a quadratic output).  So in a replay
    a line printed at tick t0 stands at tick τ with each `time_from` value plus τ − t0."""

    def __init__(self):
        self.prev = None

    def update(self, tau: int, cur) -> list[str]:
        """The lines to print at tick τ, given the current answer set as a frame (grp, skey,
        line, akey, status): ~5 Polars operations a tick (each costs ~0.1–0.2 ms whatever
        the height: a tick's ~10³ lines took ~15)."""
        import polars as pl

        prefix = f'{{"tick": {tau}, '
        if cur is None:
            cur = pl.DataFrame(schema={"grp": pl.Int64, "skey": pl.String, "line": pl.String,
                                       "akey": pl.String, "status": pl.String})
        n = len(prefix)
        body = pl.col("line").str.slice(n)
        # answers and lines are compared by 128-bit hashes (two seeds) of their text: joins on
        # integers instead of ~200-byte strings (a collision has probability ~n²/2¹²⁸); the
        # compared text is the line's body with `time_from` relative to τ
        hs = cur.select(pl.col("akey").hash(11).alias("h11"), pl.col("akey").hash(12).alias("h12"),
                        body.hash(13).alias("h13"), body.hash(14).alias("h14"),
                        body.str.contains('"time_from": {', literal=True).alias("tf"),
                        (pl.col("status") != "definite").alias("open"))
        tf = hs.get_column("tf")
        if tf.any():  # only lines with a floor go through Python
            idx = tf.arg_true()
            cmp = cur.select(body.alias("cmp")).to_series()
            cmp.scatter(idx, [relative_time_from(b, tau) for b in cmp.gather(idx).to_list()])
            hs = hs.with_columns(cmp.hash(13).alias("h13"), cmp.hash(14).alias("h14"))
        # (the columns one by one: no Polars operation)
        lines = np.column_stack([hs.get_column(c).to_numpy() for c in
                                 ("h11", "h12", "h13", "h14")]).view(np.int64)
        answers = np.ascontiguousarray(lines[:, :2])
        still_open = hs.get_column("open").to_numpy()
        prev = self.prev
        self.prev = (cur, n, lines, still_open)
        # (eager operations: a lazy query's planning cost more than its work at this height)
        out: list = []

        def change(upd) -> pl.Expr:
            return pl.concat_str([pl.lit(prefix + '"change": "'), pl.when(pl.col(
                "status") == "definite").then(pl.lit("decided")).when(upd).then(
                pl.lit("updated")).otherwise(pl.lit("new")), pl.lit('", '), body])

        if prev is None:
            if cur.height:
                out = cur.select(change(pl.lit(False)).sort_by(["grp", "skey"])
                                 ).to_series().to_list()
            return out
        pdf, pn, plines, popen = prev
        panswers = np.ascontiguousarray(plines[:, :2])
        added = ~_member(lines, plines)
        dropped = ~_member(plines, lines)
        touched = np.concatenate([answers[added], panswers[dropped]])
        sel = _member(answers, touched)
        if sel.any():
            upd = _member(answers, panswers)  # printed before
            got = cur
            if not sel.all():
                got = cur.filter(pl.Series(sel))
                upd = upd[sel]
            # (the mask as a column literal: one operation, not a with_columns and a select)
            out = got.select(change(pl.lit(pl.Series("upd", upd))).sort_by(["grp", "skey"])
                             ).to_series().to_list()
        refuted = dropped & popen
        if refuted.any():
            refuted &= ~_member(panswers, answers)
            if refuted.any():
                out.extend(pdf.filter(pl.Series(refuted)).select(pl.concat_str(
                    [pl.lit(prefix + '"change": "refuted", '), pl.col("line").str.slice(pn)])
                    .sort_by("skey")).to_series().to_list())
        return out
