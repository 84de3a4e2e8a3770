"""`hypo run --changes`: per tick only the answers whose printed lines changed (issue 9)."""
from __future__ import annotations

import re

_TIME_FROM = re.compile(r'"time_from": \{[^{}]*\}')
_NUMBER = re.compile(r'(": )(-?\d+)')


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
        cur = cur.with_columns(a1=pl.col("akey").hash(11), a2=pl.col("akey").hash(12),
                               l1=pl.col("cmp").hash(13), l2=pl.col("cmp").hash(14))
        prev = self.prev
        self.prev = cur.select("skey", "a1", "a2", "l1", "l2", "body", "status")
        if prev is None:
            changed = cur.with_columns(upd=pl.lit(False))
            gone = None
        else:
            key, line = ["a1", "a2"], ["a1", "a2", "l1", "l2"]
            added = cur.select(line).join(prev.select(line), on=line, how="anti")
            dropped = prev.join(cur.select(line), on=line, how="anti")
            keys = pl.concat([added.select(key), dropped.select(key)]).unique()
            changed = cur.join(keys, on=key, how="semi").join(
                prev.select(key).unique().with_columns(upd=pl.lit(True)), on=key, how="left",
                maintain_order="left").with_columns(pl.col("upd").fill_null(False))
            gone = dropped.join(cur.select(key), on=key, how="anti").filter(
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
