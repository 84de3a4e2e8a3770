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
        import polars as pl

        prefix = f'{{"tick": {tau}, '
        if cur is None:
            cur = pl.DataFrame(schema={"grp": pl.Int64, "skey": pl.String, "line": pl.String,
                                       "akey": pl.String, "status": pl.String})
        # answers and lines are compared by 128-bit hashes (two seeds) of their text: joins on
        # integers instead of ~200-byte strings (a collision has probability ~n²/2¹²⁸)
        body = pl.col("line").str.slice(len(prefix))
        cur = cur.with_columns(body=body)
        # the compared text: time_from relative to τ (only lines with a floor go through Python)
        bodies = cur.get_column("body")
        idx = bodies.str.contains('"time_from": {', literal=True).arg_true()
        cmp = bodies.clone().alias("cmp")
        if len(idx):
            cmp.scatter(idx, [relative_time_from(b, tau) for b in bodies.gather(idx).to_list()])
        cur = cur.with_columns(cmp)
        # an answer: 2 hashes of its key; a line: those and 2 of its compared text
        hs = cur.select(*[pl.col(c).hash(seed).alias(f"h{seed}") for c, seed in
                          (("akey", 11), ("akey", 12), ("cmp", 13), ("cmp", 14))])
        lines = np.ascontiguousarray(hs.to_numpy().view(np.int64))
        answers = np.ascontiguousarray(lines[:, :2])
        prev = self.prev
        self.prev = (cur.select("skey", "body", "status"), lines)
        if prev is None:
            changed = cur.with_columns(upd=pl.lit(False))
            gone = None
        else:
            pdf, plines = prev
            panswers = np.ascontiguousarray(plines[:, :2])
            added = ~_member(lines, plines)
            dropped = ~_member(plines, lines)
            touched = np.concatenate([answers[added], panswers[dropped]])
            sel = _member(answers, touched)
            changed = cur.filter(pl.Series(sel)).with_columns(
                upd=pl.Series(_member(answers[sel], panswers)))
            gone = pdf.filter(pl.Series(dropped & ~_member(panswers, answers))).filter(
                pl.col("status") != "definite").sort("skey")
        change = (pl.when(pl.col("status") == "definite").then(pl.lit("decided"))
                  .when(pl.col("upd")).then(pl.lit("updated")).otherwise(pl.lit("new")))
        out = changed.sort(["grp", "skey"]).select(pl.concat_str(
            [pl.lit(prefix + '"change": "'), change, pl.lit('", '), pl.col("body")]))
        out = out.to_series().to_list()
        if gone is not None and gone.height:
            out.extend(gone.select(pl.concat_str(
                [pl.lit(prefix + '"change": "refuted", '), pl.col("body")])).to_series().to_list())
        return out
