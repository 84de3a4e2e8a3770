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
from typing import Iterable, Iterator, Optional

from .compiler import CompiledProgram
from .declared import IGNORED, declared_unused, did_you_mean
from .errors import ProgramError
from .patterns import Fact

MAX_LINE = 1 << 16
JSON_SPACE = " \t\r\n"  # the whitespace JSON allows around a value
MAX_TIME = 1 << 60  # ticks and times: natural numbers below 2^60 (offsets and δ fit in int64)
MAX_DIGITS = 18  # every natural number of at most 18 digits is below MAX_TIME
_WS = r"[ \t\r\n]*"
# the canonical line (as json.dumps writes it, any JSON whitespace): parsed without json.loads
_FAST = re.compile(_WS + r'\{' + _WS + r'"tick"' + _WS + ":" + _WS + r"(0|[1-9][0-9]{0,17})" + _WS
                   + "," + _WS + r'"fact"' + _WS + ":" + _WS
                   + r'"([A-Za-z][A-Za-z0-9_]*)\(([^()"\\\x00-\x1f]*)\)"' + _WS + r"\}" + _WS + r"\Z")
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
    from .parser import parse_fact

    try:
        atom = parse_fact(text, "<fact>", cp.program.rigid)
    except (ValueError, RecursionError):  # an integer past Python's 4 300 digits
        raise ProgramError("timestamp out of range (ticks and times are natural numbers "
                           f"below 2^{MAX_TIME.bit_length() - 1})") from None
    if atom.time is None:
        raise ProgramError(f"{atom.pred} is rigid: its facts belong in the program, not the stream")
    return Fact(atom.pred, tuple(a.value for a in atom.args), atom.time.offset)  # type: ignore[union-attr]


def validate(cp: CompiledProgram, f: Fact, tick: int) -> Optional[str]:
    """Why fact f cannot be in D|tick (None if it can): unknown/IDB/rigid predicate, arity,
    time after arrival, or arrival later than its delay bound δ (no longer future-possible)."""
    an = cp.analysis
    if f.pred in an.rigid:
        return f"{f.pred} is a rigid predicate: its facts belong in the program"
    if f.pred in an.idb:
        return f"{f.pred} is defined by rules (IDB); only EDB facts may arrive"
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
        return Rejection(f"invalid JSON ({e.msg} at column {e.colno})", line, None, no, source)
    except RecursionError:
        return Rejection("invalid JSON (nested too deeply)", line[:80] + "…", None, no, source)
    except ValueError:  # an integer past Python's 4 300 digits
        return Rejection("invalid JSON (an integer of more than 4 300 digits)", line[:80] + "…",
                         None, no, source)
    if not isinstance(obj, dict) or "tick" not in obj or "fact" not in obj:
        return Rejection('expected an object with "tick" and "fact"', line, None, no, source)
    tick, text = obj["tick"], obj["fact"]
    if isinstance(tick, bool) or not isinstance(tick, int) or tick < 0:
        return Rejection('"tick" must be a natural number', line, None, no, source)
    if tick >= MAX_TIME:
        return Rejection(f'"tick" out of range (ticks and times are natural numbers below '
                         f'2^{MAX_TIME.bit_length() - 1})', line[:80], None, no, source)
    if not isinstance(text, str):
        return Rejection('"fact" must be a string', line, tick, no, source)
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
    """A JSON-lines stream read slice by slice, in arrival order: memory is one slice (plus
    the rejections not yet reported), not the whole stream.  An otherwise valid line whose
    tick is before a tick already seen is rejected ("out of order")."""

    def __init__(self, lines: Iterable[str], cp: CompiledProgram, source: str = "<stream>",
                 max_gap: Optional[int] = None):
        self.max_gap = max_gap
        self.lines = iter(lines)
        self.cp = cp
        self.source = source
        self.rejected: list[Rejection] = []  # all, in line order
        self.ignored: dict[str, int] = {}  # declared-but-unused predicate -> facts
        self._unreported = 0
        self.last_tick = -1  # of the accepted facts
        self.done = False
        self._no = 0
        self._ahead: Optional[tuple[int, Fact, int]] = None

    def take_rejected(self) -> list[Rejection]:
        """The rejections found since the last call."""
        got = self.rejected[self._unreported:]
        self._unreported = len(self.rejected)
        return got

    def _next(self) -> Optional[tuple[int, Fact, int]]:
        if self._ahead is not None:
            got, self._ahead = self._ahead, None
            return got
        for raw in self.lines:
            self._no += 1
            r = parse_line(raw, self._no, self.cp, self.source)
            if r is None:
                continue
            if isinstance(r, Rejection):
                self.rejected.append(r)
                continue
            if isinstance(r, Ignored):
                self.ignored[r.pred] = self.ignored.get(r.pred, 0) + 1
                continue
            tick, f = r
            if tick < self.last_tick:
                self.rejected.append(Rejection(
                    f"out of order: tick {tick} after tick {self.last_tick} (a stream is read "
                    f"in arrival order)", str(f), tick, self._no, self.source))
                continue
            if self.max_gap is not None and tick > max(self.last_tick, 0) + self.max_gap:
                self.rejected.append(Rejection(
                    f"tick {tick} is more than {self.max_gap} ticks after tick "
                    f"{max(self.last_tick, 0)}: a likely wrong tick (raise --max-gap if the "
                    f"gap is real)", str(f), tick, self._no,
                    self.source))
                continue
            self.last_tick = tick
            return tick, f, self._no
        self.done = True
        return None

    def slices(self) -> Iterator[tuple[int, list[tuple[Fact, int]]]]:
        """(τ, [(fact, line)]) for every tick with accepted facts, in increasing τ."""
        while True:
            first = self._next()
            if first is None:
                return
            tick, f, no = first
            entries = [(f, no)]
            while True:
                nxt = self._next()
                if nxt is None:
                    break
                if nxt[0] != tick:
                    self._ahead = nxt
                    break
                entries.append((nxt[1], nxt[2]))
            yield tick, entries


def open_stream(path: str):
    """A stream file's lines (undecodable bytes are replaced, and so rejected by parsing)."""
    return open(path, encoding="utf-8", errors="replace")


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
