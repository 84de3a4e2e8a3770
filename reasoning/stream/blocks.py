"""Stream lines parsed into facts, one at a time (parse_line) or a block at once (parse_block)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Optional

from reasoning.language.compiler import CompiledProgram
from reasoning.language.declared import IGNORED
from reasoning.language.errors import ProgramError
from reasoning.semantics.patterns import Fact
from reasoning.stream.facts import (_ARG, MAX_DIGITS, MAX_TIME, Rejection, parse_fact_text,
                                    structured_fact, validate)
from reasoning.stream.scanned import Scanned

MAX_LINE = 1 << 16
JSON_SPACE = " \t\r\n"  # the whitespace JSON allows around a value
_WS = r"[ \t\r\n]*"
# the canonical line (as json.dumps writes it, any JSON whitespace): parsed without json.loads;
# its groups: tick, predicate, arguments
_LINE_HEAD = (_WS + r'\{' + _WS + r'"tick"' + _WS + ":" + _WS + r"(0|[1-9][0-9]{0,17})" + _WS
              + "," + _WS + r'"fact"' + _WS + ":" + _WS + r'"([A-Za-z][A-Za-z0-9_]*)\(')
_LINE_TAIL = r'\)"' + _WS + r"\}" + _WS
_FAST = re.compile(_LINE_HEAD + r'([^()"\\\x00-\x1f]*)' + _LINE_TAIL + r"\Z")


@dataclass(frozen=True)
class Ignored:
    """A fact of a predicate that `#delay` declares and no rule uses: counted, not used."""

    pred: str
    tick: int
    line: int


@dataclass(frozen=True)
class Heartbeat:
    """A line `{"tick": N}` without a fact: the stream has reached tick N — every slice
    before N is complete (facts of tick N may still follow), so a live run can answer those
    ticks without waiting for the next fact."""

    tick: int
    line: int


_ID = r"(?:[a-z][A-Za-z0-9_]*|[0-9]+)"
# the canonical line with plain constants (the common case), matched a block at a time (Rust
# regex: `$` is the end of the text)
_BLOCK = "^" + _LINE_HEAD + r"( *" + _ID + r"(?: *, *" + _ID + r")* *)" + _LINE_TAIL + "$"
# ... and as producers write it, `{"tick": 3, "fact": "Hot(wt1, 3)"}` (json.dumps' spacing):
# a third of _BLOCK's cost, and its arguments split at ", " need no strip; a block tries it
# first (its matches are _BLOCK's, with the same groups)
_BLOCK_EXACT = (r'^\{"tick": (0|[1-9][0-9]{0,17}), "fact": "([A-Za-z][A-Za-z0-9_]*)\((' + _ID
                + r'(?:, ' + _ID + r')*)\)"\}\n?$')
BLOCK_LINES = 4096  # lines read and parsed at once ...
BLOCK_CHARS = 1 << 22  # ... or fewer, if they are this long together


class EdbMeta:
    """edb_meta's result: by_pred {pred: (arity, δ, inst, wild)} and exact {`p(c1,…,cn`: δ}
    for the C scanner's path (_scan_block), and the same as frames for parse_block's
    general path (frames(), built at its first use: a run whose blocks all scan never
    imports Polars for them)."""

    def __init__(self, rows: list, exact_rows: list):
        self.by_pred = {r[0]: r[1:] for r in rows}
        self.exact = dict(exact_rows)
        self._rows, self._exact_rows, self._frames = rows, exact_rows, None

    def frames(self) -> tuple:
        """(meta: pred, arity, d, inst, wild; exact: key, dx) as Polars frames."""
        if self._frames is None:
            import polars as pl

            meta = pl.DataFrame(self._rows, orient="row", schema={
                "pred": pl.String, "arity": pl.UInt32, "d": pl.Int64, "inst": pl.Boolean,
                "wild": pl.Boolean})
            exact = pl.DataFrame(self._exact_rows, orient="row",
                                 schema={"key": pl.String, "dx": pl.Int64})
            self._frames = (meta, exact)
        return self._frames


def edb_meta(cp: CompiledProgram) -> EdbMeta:
    """The streamed predicates for parse_block: arity, default δ, and whether a `#delay`
    instance pattern may give some instance another δ (`inst`: looked up among the exact
    instances, or in Python when a pattern has wildcards, `wild`); and the fully constant
    patterns (Delays.exact) keyed `p(c1,…,cn`."""
    an = cp.analysis
    dl = cp.delays
    rows = [(p, n, dl.default.get(p, 0), p in dl.patterns, p in dl.wild)
            for p, n in an.edb.items() if p not in an.rigid and p not in an.idb]
    exact_rows = [(f"{p}({','.join(a)}", d) for (p, a), d in dl.exact.items()
                  if p not in dl.wild]
    return EdbMeta(rows, exact_rows)


def _scanner():
    """The C scanner of exactly written fact lines (_ck_scan.c scan_facts), or None (the
    kernels are numpy's: blocks are parsed by Polars' regex only)."""
    from reasoning.native import kernels

    return kernels.c_only("scan_facts")


def _scan_block(lines: list, first: int, cp: CompiledProgram, after: int,
                max_gap: Optional[int], meta: EdbMeta):
    """parse_block's rows of a block whose every line is written exactly as json.dumps
    writes a canonical fact line (_BLOCK_EXACT) of a fact validate() accepts, in order:
    scanned in C and checked on numpy arrays (~6× cheaper than the regex and the Polars
    checks), as a Scanned block (its to_frame() is the general reader's frame); None when
    any line is not (parse_block decides the general way)."""
    import numpy as np

    scan = _scanner()
    if scan is None:
        return None
    got = scan(lines, MAX_LINE, meta.exact)
    if got is None:
        return None
    ticks, ts, pid, preds, nargs, flat, dx = got
    info = [meta.by_pred.get(p) for p in preds]
    if None in info:  # a predicate not streamed (unknown, derived, rigid): rejected or ignored
        return None
    arity, d, inst, wild = (np.array(c)[pid] for c in zip(*info))
    if not ((ts >= 0) & (ts <= ticks) & (nargs + 1 == arity)).all():
        return None
    check = inst & (ts < ticks)
    if not (check | (ticks <= ts + d)).all():
        return None  # late for its predicate's δ, no instance pattern: rejected
    if check.any():
        if (check & ~wild & (ticks > ts + np.where(dx >= 0, dx, d))).any():
            return None  # late for its instance's δ
        rows = np.flatnonzero(check & wild)
        if rows.size:
            ground = cp.delays.ground
            offs = np.concatenate(([0], np.cumsum(nargs)))
            for i in rows.tolist():
                a = tuple(flat[offs[i]:offs[i + 1]])
                if ticks[i] > ts[i] + ground(preds[pid[i]], a):
                    return None
    prev = np.concatenate(([after], ticks[:-1]))
    if not (ticks >= prev).all():
        return None  # out of order
    if max_gap is not None and not (ticks <= np.maximum(prev, 0) + max_gap).all():
        return None
    return Scanned.of(first, ticks, ts, pid, preds, nargs, flat)


def parse_block(lines: list, first: int, cp: CompiledProgram, source: str, after: int,
                max_gap: Optional[int], meta=None, counts: Optional[dict] = None):
    """A block of lines numbered from `first`, read set-at-a-time: when every line is a
    canonical line (`_BLOCK`) of a fact that validate() accepts, in arrival order after tick
    `after` and within `max_gap`, a frame (no, tick, pred, args, t) of them — a Scanned
    block when the C scanner read it, whose to_frame() is that frame; otherwise the
    parse_line result of every line (the same results, line by line).  `meta`: edb_meta(cp),
    computed once by the caller."""
    def by_line(fast=None):
        return [fast[i] if fast is not None and fast[i] is not None
                else parse_line(raw, first + i, cp, source) for i, raw in enumerate(lines)]

    if len(lines) < 64:
        return by_line()
    meta = edb_meta(cp) if meta is None else meta
    scanned = _scan_block(lines, first, cp, after, max_gap, meta)
    if counts is not None:
        key = "general" if scanned is None else "scanned"
        counts[key] = counts.get(key, 0) + 1
    if scanned is not None:
        return scanned
    import polars as pl

    meta, exact = meta.frames()
    try:
        raw = pl.DataFrame({"l": pl.Series(lines, dtype=pl.String)})
        for pattern in (_BLOCK_EXACT, _BLOCK):
            df = raw.select(pl.col("l").str.extract_groups(pattern).alias("g"),
                            (pl.col("l").str.len_chars() <= MAX_LINE).alias("ok")).unnest("g")
            as_dumped = pattern is _BLOCK_EXACT
            if not (as_dumped and df.get_column(df.columns[0]).null_count()):
                break  # (some line spaced otherwise: the general pattern)
    except Exception:  # e.g. a lone surrogate in a line given in memory: line by line
        return by_line()
    tick_c, pred_c, args_c = df.columns[:3]
    split = pl.col(args_c).str.split(", ") if as_dumped else pl.col(args_c).str.split(",").list.eval(
        pl.element().str.strip_chars(" "))
    df = df.with_row_index("i").with_columns(
        split.alias("a"),
        pl.col(tick_c).cast(pl.Int64, strict=False).alias("tick")).with_columns(
        pl.col("a").list.last().alias("ts"), pl.col("a").list.len().alias("n")).join(
        meta, left_on=pred_c, right_on="pred", how="left", maintain_order="left")
    df = df.with_columns(pl.when(pl.col("ts").str.contains("^[0-9]{1,18}$"))
                         .then(pl.col("ts").cast(pl.Int64, strict=False)).alias("t"))
    fast = (pl.col("ok") & pl.col("t").is_not_null() & (pl.col("n") == pl.col("arity"))
            & (pl.col("t") <= pl.col("tick")))
    df = df.with_columns(fast.fill_null(False).alias("fast"),
                         (pl.col("inst") & (pl.col("t") < pl.col("tick"))).fill_null(False)
                         .alias("check"),
                         (pl.col("tick") <= pl.col("t") + pl.col("d")).alias("ontime"))
    good = df.filter(pl.col("fast") & (pl.col("check") | pl.col("ontime")))
    if good.height and good.get_column("check").any():
        # a fact later than its predicate's default δ: its instance's δ (Delays.ground) from
        # the exact patterns by a join; a predicate with wildcard patterns in Python
        chk = good.filter(pl.col("check"))
        key = pl.concat_str([pl.col(pred_c), pl.lit("("),
                             pl.col("a").list.slice(0, pl.col("n") - 1).list.join(",")])
        chk = chk.with_columns(key.alias("key")).join(exact, on="key", how="left")
        late = chk.filter(~pl.col("wild") & (pl.col("tick") > pl.col("t") + pl.coalesce(
            pl.col("dx"), pl.col("d")))).get_column("i").to_list()
        wild = chk.filter(pl.col("wild"))
        if wild.height:
            ground = cp.delays.ground
            late += [i for i, p, a, t, k in zip(*(wild.get_column(c).to_list() for c in
                                                  ("i", pred_c, "a", "t", "tick")))
                     if k > t + ground(p, tuple(a[:-1]))]
        if late:
            good = good.filter(~pl.col("i").is_in(late))
    good = good.select((pl.col("i") + first).cast(pl.Int64).alias("no"), "tick",
                       pl.col(pred_c).alias("pred"),
                       pl.col("a").list.slice(0, pl.col("n") - 1).alias("args"), "t")
    if good.height == len(lines):
        ticks = good.get_column("tick")
        prev = ticks.shift(1, fill_value=after)
        in_order = bool((ticks >= prev).all())
        if in_order and max_gap is not None:
            in_order = bool((ticks <= prev.clip(lower_bound=0) + max_gap).all())
        if in_order:
            return good
    fast_rows: list = [None] * len(lines)
    for no, tick, pred, args, t in good.iter_rows():
        fast_rows[no - first] = (tick, Fact(pred, tuple(args), t))
    return by_line(fast_rows)


def parse_line(raw: str, no: int, cp: CompiledProgram, source: str):
    """One stream line → (tick, Fact), None (blank), Ignored, or a Rejection with its
    reason."""
    m = _FAST.match(raw) if len(raw) <= MAX_LINE else None
    if m is not None:  # ~4 µs instead of ~20 µs through json.loads and the general path
        parts = [p.strip() for p in m.group(3).split(",")]
        if all(_ARG.match(p) for p in parts) and parts[-1].isdigit() \
                and len(parts[-1]) <= MAX_DIGITS:
            tick = int(m.group(1))
            f = Fact(m.group(2), tuple(parts[:-1]), int(parts[-1]))
            why = validate(cp, f, tick)
            if why is not None:
                if why == IGNORED:
                    return Ignored(f.pred, tick, no)
                return Rejection(why, f"{m.group(2)}({m.group(3)})", tick, no, source)
            return tick, f
    if len(raw) > MAX_LINE:
        return Rejection(f"line longer than {MAX_LINE} bytes", raw[:80] + "…", None, no, source)
    line = raw.strip(JSON_SPACE)  # not str.strip(): \x1c..\x1f are not blank in JSON
    if not line:
        return None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        msg = e.msg.removesuffix(" at")  # json's "Invalid control character at"
        return Rejection(f"invalid JSON ({msg} at column {e.colno})", line, None, no, source)
    except RecursionError:
        return Rejection("invalid JSON (nested too deeply)", line[:80] + "…", None, no, source)
    except ValueError:  # an integer past Python's 4 300 digits
        return Rejection("invalid JSON (an integer of more than 4 300 digits)", line[:80] + "…",
                         None, no, source)
    beat = isinstance(obj, dict) and len(obj) == 1 and "tick" in obj
    if not beat and (not isinstance(obj, dict) or "tick" not in obj or (
            "fact" not in obj and "pred" not in obj)):
        return Rejection('expected an object with "tick" and "fact" (or "pred", "args", '
                         '"time"), or a heartbeat {"tick": N}', line, None, no, source)
    tick, text = obj["tick"], obj.get("fact")
    if isinstance(tick, bool) or not isinstance(tick, int) or tick < 0:
        return Rejection('"tick" must be a natural number', line, None, no, source)
    if tick >= MAX_TIME:
        return Rejection(f'"tick" out of range (ticks and times are natural numbers below '
                         f'2^{MAX_TIME.bit_length() - 1})', line[:80], None, no, source)
    if beat:
        return Heartbeat(tick, no)
    if "fact" not in obj:  # a structured row
        f, bad = structured_fact(obj)
        if bad is not None:
            return Rejection(bad, line, tick, no, source)
        text = str(f)
    elif not isinstance(text, str):
        return Rejection('"fact" must be a string', line, tick, no, source)
    else:
        try:
            f = parse_fact_text(text, cp)
        except ProgramError as e:
            col = f" at column {e.span.column}" if e.span.column else ""
            return Rejection(f"{e.message}{col}", text, tick, no, source)
    why = validate(cp, f, tick)
    if why is not None:
        if why == IGNORED:
            return Ignored(f.pred, tick, no)
        return Rejection(why, text, tick, no, source)
    return tick, f
