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
from .errors import ProgramError
from .patterns import Fact

MAX_LINE = 1 << 16
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
        return f"{where}rejected{at}: {self.reason}: {self.text}"


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
        if parts and all(_ARG.match(p) for p in parts) and parts[-1].isdigit():
            return Fact(m.group(1), tuple(parts[:-1]), int(parts[-1]))
    from .parser import parse_fact

    atom = parse_fact(text, "<fact>", cp.program.rigid)
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
        known = ", ".join(sorted(an.edb)) or "none"
        return f"unknown predicate {f.pred} (EDB predicates: {known})"
    arity = an.edb[f.pred]
    if len(f.args) + 1 != arity:
        return f"{f.pred} takes {arity} arguments, got {len(f.args) + 1}"
    if f.time < 0:
        return "negative timestamp"
    if f.time > tick:
        return f"timestamp {f.time} is after its arrival tick {tick}"
    d = cp.delays.ground(f.pred, f.args)
    if tick > f.time + d:
        return (f"late: arrived at tick {tick} but δ({f.pred}(…)) = {d} requires arrival by "
                f"tick {f.time + d}")
    return None


def read_stream(lines: Iterable[str], cp: CompiledProgram, source: str = "<stream>") -> Stream:
    """Parse and validate a JSON-lines stream; every bad line becomes a Rejection."""
    st = Stream()
    for no, raw in enumerate(lines, 1):
        if len(raw) > MAX_LINE:
            st.rejected.append(Rejection(f"line longer than {MAX_LINE} bytes", raw[:80] + "…",
                                         None, no, source))
            continue
        line = raw.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            st.rejected.append(Rejection(f"invalid JSON ({e.msg} at column {e.colno})", line,
                                         None, no, source))
            continue
        if not isinstance(obj, dict) or "tick" not in obj or "fact" not in obj:
            st.rejected.append(Rejection('expected an object with "tick" and "fact"', line,
                                         None, no, source))
            continue
        tick, text = obj["tick"], obj["fact"]
        if isinstance(tick, bool) or not isinstance(tick, int) or tick < 0:
            st.rejected.append(Rejection('"tick" must be a natural number', line, None, no, source))
            continue
        if not isinstance(text, str):
            st.rejected.append(Rejection('"fact" must be a string', line, tick, no, source))
            continue
        try:
            f = parse_fact_text(text, cp)
        except ProgramError as e:
            col = f" at column {e.span.column}" if e.span.column else ""
            st.rejected.append(Rejection(f"{e.message}{col}", text, tick, no, source))
            continue
        why = validate(cp, f, tick)
        if why is not None:
            st.rejected.append(Rejection(why, text, tick, no, source))
            continue
        st.slices[tick].append((f, no))
    return st


def read_stream_file(path: str, cp: CompiledProgram) -> Stream:
    """Read a stream file (undecodable bytes are replaced, and so rejected by parsing)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        return read_stream(fh, cp, path)


def iter_ticks(st: Stream, until: int) -> Iterator[tuple[int, list[Fact]]]:
    for t in range(until + 1):
        yield t, [f for f, _ in st.slices.get(t, ())]
