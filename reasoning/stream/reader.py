"""Stream input: JSON-lines slices D|τ and fact validation (issue: stream validation).

A stream line is `{"tick": 3, "fact": "Hot(wt1, 1)"}`: the fact arrives in slice D|3.
Bad lines and invalid facts are rejected with a reason and counted, never dropped
silently and never fatal.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Optional

from reasoning.language.compiler import CompiledProgram
from reasoning.language.declared import IGNORED, declared_unused
from reasoning.language.errors import did_you_mean
from reasoning.language.errors import HypoError, ProgramError
from reasoning.semantics.patterns import Fact
from reasoning.stream.scanned import Scanned, entry_columns, merged_columns
from reasoning.language.syntax import NAME

MAX_LINE = 1 << 16
JSON_SPACE = " \t\r\n"  # the whitespace JSON allows around a value
MAX_TIME = 1 << 60  # ticks and times: natural numbers below 2^60 (offsets and δ fit in int64)
MAX_DIGITS = 18  # every natural number of at most 18 digits is below MAX_TIME
_WS = r"[ \t\r\n]*"
# the canonical line (as json.dumps writes it, any JSON whitespace): parsed without json.loads;
# its groups: tick, predicate, arguments
_LINE_HEAD = (_WS + r'\{' + _WS + r'"tick"' + _WS + ":" + _WS + r"(0|[1-9][0-9]{0,17})" + _WS
              + "," + _WS + r'"fact"' + _WS + ":" + _WS + r'"([A-Za-z][A-Za-z0-9_]*)\(')
_LINE_TAIL = r'\)"' + _WS + r"\}" + _WS
_FAST = re.compile(_LINE_HEAD + r'([^()"\\\x00-\x1f]*)' + _LINE_TAIL + r"\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Control characters of input escaped (\\x1b), so a rejected line cannot drive the
    terminal it is reported on."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
_SIMPLE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s*\(([^()\"]*)\)\s*$")
_ARG = re.compile(r"^(?:[a-z][A-Za-z0-9_]*|[0-9]+)$")


@dataclass
class Rejection:
    """A refused input line or fact, with its reason."""

    reason: str
    text: str
    tick: Optional[int] = None
    line: int = 0
    source: str = "<stream>"

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}: " if self.line else ""
        at = f" (tick {self.tick})" if self.tick is not None else ""
        text = self.text if len(self.text) <= 200 else self.text[:200] + "…"
        return f"{where}rejected{at}: {printable(self.reason)}: {printable(text)}"


@dataclass
class Stream:
    """Accepted facts per arrival tick, plus the rejected lines."""

    slices: dict[int, list[tuple[Fact, int]]] = field(default_factory=lambda: defaultdict(list))
    rejected: list[Rejection] = field(default_factory=list)

    @property
    def last_tick(self) -> int:
        return max(self.slices, default=-1)


def parse_fact_text(text: str, cp: CompiledProgram) -> Fact:
    """Parse `Pred(c1, ..., t)` into a Fact (fast path for plain constants; raises
    ProgramError with a column for anything malformed)."""
    m = _SIMPLE.match(text)
    if m:
        parts = [p.strip() for p in m.group(2).split(",")] if m.group(2).strip() else []
        if parts and all(_ARG.match(p) for p in parts) and parts[-1].isdigit() \
                and len(parts[-1]) <= MAX_DIGITS:
            return Fact(m.group(1), tuple(parts[:-1]), int(parts[-1]))
    from reasoning.language.parser import parse_fact

    try:
        atom = parse_fact(text, "<fact>", cp.program.rigid)
    except (ValueError, RecursionError):  # an integer past Python's 4 300 digits
        raise ProgramError("timestamp out of range (ticks and times are natural numbers "
                           f"below 2^{MAX_TIME.bit_length() - 1})") from None
    if atom.time is None:
        raise ProgramError(f"{atom.pred} is rigid: its facts belong in the program, not the stream")
    return Fact(atom.pred, tuple(a.value for a in atom.args), atom.time.offset)  # type: ignore[union-attr]


# why a fact of a predicate that never arrives on the stream is refused, after its name (the
# lake's quarantine gives the same reasons: jobs/ingest/validate.py)
NOT_STREAMED = {
    "rigid": " is a rigid predicate: its facts belong in the program",
    "periodic": " is a periodic predicate: its facts are given in the program (known in "
                "advance, never streamed)",
    "idb": " is defined by rules (IDB); only EDB facts may arrive",
}


def not_streamed(an) -> list[tuple]:
    """(kind, predicates) of the predicates whose facts never arrive on a stream, in the
    order their reasons are checked (NOT_STREAMED[kind])."""
    return [("rigid", an.rigid), ("periodic", an.periodic), ("idb", an.idb)]


def validate(cp: CompiledProgram, f: Fact, tick: int) -> Optional[str]:
    """Why fact f cannot be in D|tick (None if it can): unknown/IDB/rigid/periodic predicate, arity,
    time after arrival, or arrival later than its delay bound δ (no longer future-possible)."""
    an = cp.analysis
    for kind, preds in not_streamed(an):
        if f.pred in preds:
            return f.pred + NOT_STREAMED[kind]
    if f.pred not in an.edb:
        unused = declared_unused(cp)
        if f.pred in unused:
            n = unused[f.pred]
            if n is not None and len(f.args) + 1 != n:
                return f"{f.pred} takes {n} arguments, got {len(f.args) + 1}"
            return IGNORED
        known = ", ".join(sorted(an.edb)) or "none"
        return (f"unknown predicate {f.pred} (EDB predicates: {known})"
                f"{did_you_mean(f.pred, set(an.edb) | set(unused))}")
    arity = an.edb[f.pred]
    if len(f.args) + 1 != arity:
        return f"{f.pred} takes {arity} arguments, got {len(f.args) + 1}"
    if f.time < 0:
        return "negative timestamp"
    if f.time >= MAX_TIME:
        return f"timestamp out of range (ticks and times are natural numbers below 2^{MAX_TIME.bit_length() - 1})"
    if f.time > tick:
        return f"timestamp {f.time} is after its arrival tick {tick}"
    d = cp.delays.ground(f.pred, f.args)
    if tick > f.time + d:
        return (f"late: arrived at tick {tick} but δ({f.pred}(…)) = {d} requires arrival by "
                f"tick {f.time + d}")
    return None


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
    """The C scanner of exactly written fact lines (_ckernels.c scan_facts), or None (the
    kernels are numba's or numpy's: blocks are parsed by Polars' regex only)."""
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


class Slice:
    """D|τ as read, in line order: chunks that are either frames (no, tick, pred, args, t)
    of canonical lines read set-at-a-time, Scanned rows of blocks the C scanner read, or
    lists of (Fact, line)."""

    def __init__(self, tick: int):
        self.tick = tick
        self.chunks: list = []
        self.n = 0
        self._entries: Optional[list] = None
        self._frames: Optional[dict] = None
        self._cols: Optional[dict] | bool = False  # columns(): not yet computed
        # (backend name, its input frames): the columnar executor's conversion of frames()
        # done ahead by the reading thread (Session.prepare_slice), or None
        self.ready: Optional[tuple] = None

    def add_frame(self, df) -> None:
        self.chunks.append(df)
        self.n += df.height
        self._changed()

    def add_entry(self, f: Fact, no: int) -> None:
        self._changed()
        if not self.chunks or not isinstance(self.chunks[-1], list):
            self.chunks.append([])
        self.chunks[-1].append((f, no))
        self.n += 1

    def _changed(self) -> None:
        """Forget the forms built from the chunks (a chunk was added)."""
        self._entries = self._frames = self.ready = None
        self._cols = False  # columns(): not yet computed

    def __len__(self) -> int:
        return self.n

    def entries(self) -> list[tuple[Fact, int]]:
        """[(fact, line)] in line order."""
        if self._entries is None:
            out: list = []
            for c in self.chunks:
                if isinstance(c, list):
                    out.extend(c)
                elif isinstance(c, Scanned):
                    out.extend(c.entries())
                else:  # the columns as lists (a select costs ~0.1 ms: small slices)
                    out.extend((Fact(p, tuple(a), t), no) for no, p, a, t in
                               zip(*(c.get_column(x).to_list()
                                     for x in ("no", "pred", "args", "t"))))
            self._entries = out
        return self._entries

    def facts(self) -> list[Fact]:
        return [f for f, _ in self.entries()]

    def columns(self) -> Optional[dict]:
        """{pred: {"a0": [...], …, "t": int64 array}} when every chunk is Scanned or read
        line by line (the engine's from_columns input, built without a frame), else
        None."""
        if self._cols is False:
            self._cols = None
            parts = [c.columns() if isinstance(c, Scanned) else
                     entry_columns(c) if isinstance(c, list) else None for c in self.chunks]
            if all(p is not None for p in parts):  # (no chunk: no fact, {})
                self._cols = parts[0] if len(parts) == 1 else merged_columns(parts)
        return self._cols

    def frames(self) -> dict:
        """{pred: frame (a0.., t)}: the columnar executor's D|τ, built without Fact objects
        (once: a reading thread may have built them ahead)."""
        if self._frames is None:
            self._frames = self._build_frames()
        return self._frames

    def _build_frames(self) -> dict:
        import polars as pl

        from reasoning.columnar.layout import acol, facts_by_pred

        parts: dict = {}
        runs: list = []  # the chunks, consecutive frames concatenated (one partition each)
        for c in self.chunks:
            if isinstance(c, Scanned):
                c = c.to_frame()
            if not isinstance(c, list) and runs and not isinstance(runs[-1], list):
                runs[-1] = pl.concat([runs[-1], c], rechunk=False)
            else:
                runs.append(c)
        for c in runs:
            if isinstance(c, list):
                for p, cols in facts_by_pred(f for f, _ in c).items():
                    sch = {k: (pl.Int64 if k == "t" else pl.String) for k in cols}
                    parts.setdefault(p, []).append(pl.DataFrame(cols, schema=sch))
                continue
            preds = c.get_column("pred")
            if c.height and preds.n_unique() == 1:  # one predicate (0.2 ms less a tick)
                groups = [(preds[0], c)]
            else:
                groups = [(p, g) for (p,), g in c.partition_by(
                    "pred", maintain_order=True, as_dict=True).items()]
            for p, g in groups:
                args = g.get_column("args")
                n = len(args[0]) if g.height else 0
                flat = args.explode() if n else None  # (a third of list.get's select)
                if flat is not None and flat.len() == g.height * n:  # n arguments a fact
                    cols = [flat.alias(acol(0))] if n == 1 else [
                        flat.gather_every(n, i).alias(acol(i)) for i in range(n)]
                    parts.setdefault(p, []).append(pl.DataFrame(cols + [g.get_column("t")]))
                    continue
                parts.setdefault(p, []).append(g.select(
                    *[pl.col("args").list.get(i).alias(acol(i)) for i in range(n)],
                    pl.col("t")))
        return {p: (fs[0] if len(fs) == 1 else pl.concat(fs)) for p, fs in parts.items()}


_NAME = re.compile(rf"^{NAME}$")


def structured_fact(obj: dict) -> tuple[Optional[Fact], Optional[str]]:
    """The fact of a structured row {"pred": "Hot", "args": ["wt1"], "time": 1} — the form
    producers write to the lake (`args` may be one string of `;`-separated values, as in a
    CSV column) — or why its types are wrong."""
    pred, args, t = obj.get("pred"), obj.get("args", []), obj.get("time")
    if not isinstance(pred, str) or not _NAME.match(pred):
        return None, '"pred" must be a predicate name (a string)'
    if isinstance(args, str):
        args = [a.strip() for a in args.split(";")] if args.strip() else []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return None, '"args" must be a list of strings'
    if isinstance(t, bool) or not isinstance(t, int):
        return None, '"time" must be an integer'
    if abs(t) >= MAX_TIME:
        return None, (f'"time" out of range (ticks and times are natural numbers below '
                      f'2^{MAX_TIME.bit_length() - 1})')
    return Fact(pred, tuple(args), t), None


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


class StreamReader:
    """A JSON-lines stream read slice by slice, in arrival order: memory is one slice and one
    block of lines (BLOCK_LINES, BLOCK_CHARS; plus the rejections not yet reported), not the
    whole stream.  An otherwise valid line whose
    tick is before a tick already seen is rejected ("out of order")."""

    def __init__(self, lines: Iterable[str], cp: CompiledProgram, source: str = "<stream>",
                 max_gap: Optional[int] = None):
        self.max_gap = max_gap
        self._live = lines if isinstance(lines, LiveLines) else None
        # a file: read in chunks, split in C (BoundedBlocks); other sources line by line
        self._blocks = BoundedBlocks(lines) if hasattr(lines, "read") and hasattr(
            lines, "readline") and self._live is None else None
        self.lines = None if self._blocks is not None else (
            bounded_lines(lines) if hasattr(lines, "readline") else iter(lines))
        self.cp = cp
        self.source = source
        self.rejected: list[Rejection] = []  # all, in line order
        self.ignored: dict[str, int] = {}  # declared-but-unused predicate -> facts
        self._unreported = 0
        self.last_tick = -1  # of the accepted facts
        self.done = False
        self._no = 0
        self._eof = False
        self._meta = None  # edb_meta(cp), at the first block
        self.block_counts: dict = {}  # parse_block's counts: blocks scanned in C or not
        self.heartbeats = 0  # accepted {"tick": N} lines

    @property
    def live(self) -> bool:
        """Read from a live source (LiveLines): lines are parsed as they come."""
        return self._live is not None

    def take_rejected(self) -> list[Rejection]:
        """The rejections found since the last call."""
        got = self.rejected[self._unreported:]
        self._unreported = len(self.rejected)
        return got

    def _read_block(self) -> list[str]:
        """The next BLOCK_LINES lines, fewer if they exceed BLOCK_CHARS characters; from a
        live source (LiveLines: a pipe, a FIFO, a terminal) only the lines already there
        (waiting for one at least), so a slice is answered as soon as it is complete."""
        if self._live is not None:
            return self._live.available(BLOCK_LINES)
        if self._blocks is not None:
            block = self._blocks.take(BLOCK_LINES, BLOCK_CHARS)
            if not block:
                self._eof = True
            return block
        block: list[str] = []
        size = 0
        for raw in self.lines:
            block.append(raw)
            size += len(raw)
            if len(block) >= BLOCK_LINES or size >= BLOCK_CHARS:
                return block
        self._eof = True
        return block

    def _items(self):
        """Accepted input in line order: frames of whole clean blocks, or (tick, fact,
        line) one by one (rejections are recorded as their lines are reached)."""
        while not self._eof:
            block = self._read_block()
            if not block:
                break
            if self._meta is None:
                self._meta = edb_meta(self.cp)
            got = parse_block(block, self._no + 1, self.cp, self.source, self.last_tick,
                              self.max_gap, self._meta, self.block_counts)
            if not isinstance(got, list):
                self._no += len(block)
                self.last_tick = got.last_tick if isinstance(got, Scanned) else \
                    got.get_column("tick")[-1]
                yield got
                continue
            for r in got:
                self._no += 1
                if r is None:
                    continue
                if isinstance(r, Rejection):
                    self.rejected.append(r)
                    continue
                if isinstance(r, Ignored):
                    self.ignored[r.pred] = self.ignored.get(r.pred, 0) + 1
                    continue
                beat = isinstance(r, Heartbeat)
                tick, f = (r.tick, f'{{"tick": {r.tick}}}') if beat else r
                if tick < self.last_tick:
                    self.rejected.append(Rejection(
                        f"out of order: tick {tick} after tick {self.last_tick} (a stream is "
                        f"read in arrival order)", str(f), tick, self._no, self.source))
                    continue
                if self.max_gap is not None and tick > max(self.last_tick, 0) + self.max_gap:
                    self.rejected.append(Rejection(
                        f"tick {tick} is more than {self.max_gap} ticks after tick "
                        f"{max(self.last_tick, 0)}: a likely wrong tick (raise --max-gap if "
                        f"the gap is real)", str(f), tick, self._no, self.source))
                    continue
                self.last_tick = tick
                if beat:
                    self.heartbeats += 1
                    yield r
                    continue
                yield tick, f, self._no
        self.done = True

    def column_slices(self) -> Iterator:
        """Every tick's accepted facts as a Slice, in increasing τ (memory: one block and
        one slice); a heartbeat line {"tick": N} as a Heartbeat, after the slices before N
        (which it completes) — from a live source also the first fact of each slice, as
        the Heartbeat of its tick."""
        cur: Optional[Slice] = None
        for item in self._items():
            if isinstance(item, Heartbeat):
                if cur is not None and cur.tick < item.tick:
                    yield cur
                    cur = None
                yield item
                continue
            parts = [(item[0], item)] if isinstance(item, tuple) else (
                item.tick_parts() if isinstance(item, Scanned) else [
                    (tick, part) for (tick,), part in
                    item.partition_by("tick", maintain_order=True, as_dict=True).items()])
            for tick, part in parts:
                if cur is None or cur.tick != tick:
                    if cur is not None:
                        yield cur
                    if self._live is not None:  # the ticks before it are complete: a live
                        yield Heartbeat(tick, self._no)  # run answers them now
                    cur = Slice(tick)
                if isinstance(part, tuple):
                    cur.add_entry(part[1], part[2])
                else:
                    cur.add_frame(part)
        if cur is not None:
            yield cur

    def slices(self) -> Iterator[tuple[int, list[tuple[Fact, int]]]]:
        """(τ, [(fact, line)]) for every tick with accepted facts, in increasing τ."""
        for sl in self.column_slices():
            if not isinstance(sl, Heartbeat):
                yield sl.tick, sl.entries()


STDIN = "-"  # --stream -: standard input
GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: str) -> bool:
    """A regular file named `….gz` that starts with gzip's magic bytes (a pipe cannot be
    peeked at; a damaged text file that happens to start with them is still text)."""
    import os
    import stat

    if not path.lower().endswith(".gz"):
        return False
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as fh:
            return fh.read(2) == GZIP_MAGIC
    except OSError:
        return False


class DamagedArchive(HypoError):
    """A gzip stream that ends early or whose data is corrupt."""


class _GzipLines:
    """A gzip-compressed stream file's lines (as open_stream's), the archive's damage a
    one-line DamagedArchive naming the last line read."""

    def __init__(self, path: str, fileobj=None):
        import gzip

        self.path = path
        self.fh = gzip.open(fileobj if fileobj is not None else path, "rt",
                            encoding="utf-8-sig", errors="replace")

    def __enter__(self) -> "_GzipLines":
        return self

    def __exit__(self, *exc) -> None:
        self.fh.close()

    def close(self) -> None:
        self.fh.close()

    def __iter__(self):
        import zlib

        no = 0
        try:
            for line in bounded_lines(self.fh):
                no += 1
                yield line
        except (OSError, EOFError, zlib.error) as e:
            raise DamagedArchive(f"{self.path}: damaged gzip data after line {no}: {e}") from None


class BoundedBlocks:
    """bounded_lines a block at a time: the file is read in chunks of `chunk` characters and
    split into lines in C — one Python step per line (readline, the block loop) cost ~2 µs,
    0.2 s of a 10⁵-line stream, all of it holding the interpreter lock that the prefetching
    thread shares with the engine.  The same lines, each with its newline: one longer than
    MAX_LINE + 1 characters (newline included) keeps its first MAX_LINE + 1, and the rest of
    it is skipped as it is read (memory stays one chunk and one line)."""

    def __init__(self, fh, chunk: int = 1 << 20):
        self._read = fh.read
        self.chunk = chunk
        self._lines: list[str] = []
        self._pos = 0
        self._carry = ""  # the start of a line whose newline is not read yet
        self._skipping = False  # inside a line already cut at MAX_LINE + 1 characters
        self.eof = False

    def _fill(self, want: int) -> None:
        """Read until `want` complete lines are buffered or the file has ended."""
        cap = MAX_LINE + 1
        while len(self._lines) - self._pos < want and not self.eof:
            text = self._read(self.chunk)
            if not text:
                self.eof = True
                if self._carry:  # a last line without newline
                    self._lines.append(self._carry)
                    self._carry = ""
                return
            if self._skipping:
                nl = text.find("\n")
                if nl < 0:
                    continue
                text = text[nl + 1:]
                self._skipping = False
            parts = text.split("\n")
            parts[0] = self._carry + parts[0]
            carry = parts.pop()
            if parts:
                if max(map(len, parts)) >= cap:  # readline(cap) gives a long line's start
                    got = [p[:cap] if len(p) >= cap else p + "\n" for p in parts]
                else:
                    got = [p + "\n" for p in parts]
                if self._pos:
                    del self._lines[:self._pos]
                    self._pos = 0
                self._lines.extend(got)
            if len(carry) > cap:  # a line past the bound before its newline: cut it here
                self._lines.append(carry[:cap])
                carry = ""
                self._skipping = True
            self._carry = carry

    def take(self, max_lines: int, max_chars: int) -> list[str]:
        """The next `max_lines` lines, fewer if they exceed `max_chars` characters together
        (at least one), fewer at the end of the file; [] once it has ended."""
        self._fill(max_lines)
        start = self._pos
        end = min(start + max_lines, len(self._lines))
        block = self._lines[start:end]
        if len(block) > 1 and sum(map(len, block)) >= max_chars:
            size = 0
            for i, line in enumerate(block):
                size += len(line)
                if size >= max_chars:
                    block = block[:i + 1]
                    break
        self._pos = start + len(block)
        return block


def bounded_lines(fh) -> Iterator[str]:
    """A text file's lines, memory bounded on a line without end: one past MAX_LINE keeps its
    first MAX_LINE + 1 characters (parse_line rejects it as too long) and the rest of it is
    skipped a block at a time (iterating the file held the whole line: a 200 MB one-line
    file took 420 MB)."""
    read = fh.readline
    while True:
        line = read(MAX_LINE + 1)
        if not line:
            return
        if len(line) > MAX_LINE and not line.endswith("\n"):
            while True:
                rest = read(1 << 20)
                if not rest or rest.endswith("\n"):
                    break
        yield line


class LiveLines:
    """The lines of a live source (a pipe, a FIFO, a terminal) as they come: available()
    returns the complete lines read so far, waiting only while there is none — a block read
    would wait for thousands of lines, and a live run would answer nothing until then.
    Decoded as open() decodes text: UTF-8 (a leading byte-order mark dropped, undecodable
    bytes replaced), universal newlines.  `first`: bytes already taken from the source (a
    peek at gzip's magic); `owner`: the file object closed with it."""

    WAIT = 0.25  # s: a wait for data wakes this often, so Ctrl-C is handled

    def __init__(self, fd: int, first: bytes = b"", owner=None, chunk: int = 1 << 16):
        import codecs
        import io

        self.fd = fd
        self.owner = owner
        self.chunk = chunk
        self._first = first
        self._dec = io.IncrementalNewlineDecoder(
            codecs.getincrementaldecoder("utf-8-sig")(errors="replace"), translate=True)
        self._tail = ""
        self._long = False  # inside a line past MAX_LINE: its rest is not kept
        self._eof = False

    def available(self, most: int) -> list[str]:
        """The complete lines there are (at least one, waiting for it; more than `most` only
        from one read), each with its "\n" — the stream's last line may lack it; [] at the
        end of the stream."""
        out: list[str] = []
        while not self._eof and (not out or (len(out) < most and self._ready(0))):
            data = self._read()
            self._eof = not data
            text = self._dec.decode(data, final=self._eof)
            if text:
                self._split(text, out)
        if self._eof and (self._tail or self._long):
            out.append(self._tail)
            self._tail, self._long = "", False
        return out

    def _split(self, text: str, out: list) -> None:
        """Append the complete lines of tail + text to out; keep the rest.  Memory stays
        bounded on a line without end: past MAX_LINE only its first MAX_LINE + 1 characters
        are kept (parse_line rejects it as too long, like a file's)."""
        parts = text.split("\n")
        last = parts.pop()
        for p in parts:
            out.append(self._keep(p) + "\n")
            self._tail, self._long = "", False
        self._tail = self._keep(last)

    def _keep(self, piece: str) -> str:
        if self._long:
            return self._tail
        line = self._tail + piece
        if len(line) > MAX_LINE:
            self._long = True
            return line[:MAX_LINE + 1]
        return line

    def _read(self) -> bytes:
        import os

        if self._first:
            data, self._first = self._first, b""
            return data
        # a read blocked in the kernel is not interrupted by a signal that another thread
        # (Polars' pool) receives: wait in short selects, so Python runs its handlers
        while not self._ready(self.WAIT):
            pass
        return os.read(self.fd, self.chunk)

    def _ready(self, wait: float) -> bool:
        """Bytes can be read without blocking (or the source cannot be polled)."""
        import select

        if self._first:
            return True
        try:
            return bool(select.select([self.fd], [], [], wait)[0])
        except (OSError, ValueError):
            return True

    def __iter__(self):
        while True:
            got = self.available(BLOCK_LINES)
            if not got:
                return
            yield from got

    def __enter__(self) -> "LiveLines":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.owner is not None:
            self.owner.close()


def open_stream(path: str):
    """A stream file's lines (undecodable bytes are replaced, and so rejected by parsing; a
    leading byte-order mark is dropped; a gzip file is decompressed); `-` is standard
    input.  A source that is not a regular file is read as its lines come (LiveLines)."""
    import os
    import stat

    if path == STDIN:
        import sys

        raw = open(sys.stdin.fileno(), "rb", closefd=False)
    elif is_gzip(path):
        return _GzipLines(path)
    elif not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO, a terminal: lines as they come
        raw = open(path, "rb")
        if not unnamed_stream(path):
            return LiveLines(raw.fileno(), owner=raw)
    else:
        return open(path, encoding="utf-8-sig", errors="replace")
    # a pipe without a data file's name (`-`, `<(gzip -c …)`): gzip if it starts with gzip's
    # magic bytes (no text does: 0x8b is not UTF-8), peeked at without consuming them
    if raw.peek(2)[:2] == GZIP_MAGIC:
        return _GzipLines(stream_name(path), raw)
    # what the peek buffered (one read of the source's, so no waiting), then the source
    return LiveLines(raw.fileno(), first=raw.read1(1 << 20), owner=raw)


def unnamed_stream(path: str) -> bool:
    """A name that says nothing of the format (`/dev/fd/63`, `/dev/stdin`) or ends .gz."""
    low = path.lower()
    return low.endswith(".gz") or not low.endswith((".jsonl", ".ndjson", ".json", ".csv",
                                                    ".txt", ".parquet", ".pq"))


def stream_name(path: str) -> str:
    """The name a stream's lines are reported under (file:line)."""
    return "<stdin>" if path == STDIN else path


def read_stream(lines: Iterable[str], cp: CompiledProgram, source: str = "<stream>") -> Stream:
    """Parse and validate a whole JSON-lines stream; every bad line becomes a Rejection."""
    st = Stream()
    rd = StreamReader(lines, cp, source)
    for tick, entries in rd.slices():
        st.slices[tick].extend(entries)
    st.rejected = rd.rejected
    return st


def read_stream_file(path: str, cp: CompiledProgram) -> Stream:
    """Read a whole stream file (see open_stream)."""
    with open_stream(path) as fh:
        return read_stream(fh, cp, path)


def iter_ticks(st: Stream, until: int) -> Iterator[tuple[int, list[Fact]]]:
    for t in range(until + 1):
        yield t, [f for f, _ in st.slices.get(t, ())]


class Prefetched:
    """StreamReader.column_slices() read up to `depth` slices ahead of the engine by a
    thread, so parsing the next slices overlaps the current tick (Polars releases the GIL
    while it parses) — once a block has been read the general way: while every block is
    scanned in C (parse_block's counts) reading costs less than what a second thread costs
    the tick loop on a 2-core machine (GIL hand-overs; measured 3–8 % of `hypo run`), so
    the caller reads them itself.  Each slice carries the rejections found while reading
    it: take_rejected() returns those of the slices handed out so far — what
    StreamReader.take_rejected() gives when the caller reads the same slices itself.  The
    reader's other state (rejected, ignored, last_tick) is read once iteration has ended.
    An error of the reader is raised where the slice it prevented would have been handed
    out.  threaded=False never starts the thread (a FIFO or a terminal: a read may block
    for ever, and a file cannot be closed while another thread is blocked reading it)."""

    def __init__(self, reader: "StreamReader", depth: int = 2, threaded: bool = True):
        self.reader = reader
        # called on each slice by the reading thread before it is handed out (work done
        # ahead of the tick, Session.prepare_slice); set once the consumer exists
        self.prepare: Optional[Callable[[Slice], None]] = None
        self._rej: list = []
        self._done = False
        self._slices = reader.column_slices()
        self._direct = True  # read in the caller's thread (until the thread starts)
        self._may_thread = threaded
        self._depth = depth
        self._thread = None

    def _start(self) -> None:
        """Hand the rest of the slices over to a reading thread."""
        import queue
        import threading

        self._direct = False
        self._q: "queue.Queue" = queue.Queue(self._depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, name="hypo-stream", daemon=True)
        try:  # json.loads of a deeply nested line recurses: a main thread's stack
            old = threading.stack_size(64 << 20)
        except (ValueError, RuntimeError):
            old = None
        try:
            self._thread.start()
        finally:
            if old is not None:
                threading.stack_size(old)

    def _put(self, item) -> bool:
        import queue

        while not self._stop.is_set():
            try:
                self._q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self) -> None:
        r = self.reader
        try:
            for sl in self._slices:
                prepare = self.prepare
                if prepare is not None and isinstance(sl, Slice):
                    prepare(sl)
                if not self._put((sl, r.take_rejected(), None)):
                    return
            self._put((None, r.take_rejected(), None))
        except BaseException as e:  # noqa: BLE001 — raised again in the reading thread
            self._put((None, r.take_rejected(), e))

    def __iter__(self) -> "Prefetched":
        return self

    def __next__(self) -> Slice:
        if self._done:
            raise StopIteration
        if self._direct:  # read here
            try:
                sl = next(self._slices)
            except StopIteration:
                self._done = True
                raise
            finally:
                self._rej.extend(self.reader.take_rejected())
            if self._may_thread and self.reader.block_counts.get("general"):
                self._start()
            return sl
        sl, rej, exc = self._q.get()
        self._rej.extend(rej)
        if exc is not None or sl is None:
            self._done = True
            self._thread.join()
            if exc is not None:
                raise exc
            raise StopIteration
        return sl

    def take_rejected(self) -> list:
        got, self._rej = self._rej, []
        return got

    def close(self) -> None:
        """Stop the thread: at once if it waits to hand a slice over, else once its current
        block is parsed (a regular file's read does not block for long)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=1.0)
