"""Stream facts: their text and row forms, and validate(): may a fact be in D|τ (002 §2, §3)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from reasoning.language.compiler import CompiledProgram
from reasoning.language.declared import IGNORED, declared_unused
from reasoning.language.errors import ProgramError, did_you_mean
from reasoning.semantics.patterns import Fact
from reasoning.language.syntax import NAME, Span

MAX_TIME = 1 << 60  # ticks and times: natural numbers below 2^60 (offsets and δ fit in int64)
MAX_DIGITS = 18  # every natural number of at most 18 digits is below MAX_TIME
TIME_DIGITS = 4000  # a stream time's digits read as a number (validate refuses ≥ MAX_TIME)
_LAST_NUMBER = re.compile(r"^(.*[,(]\s*)(\d{19,4000})(\s*\)\s*)$", re.S)
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


def lone_surrogate(text: str) -> Optional[int]:
    """The 1-based column of the first lone surrogate in text (a JSON escape such as
    \\ud800 decodes to one: no character, so no output can print it), or None."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
        return None
    except UnicodeEncodeError as e:
        return e.start + 1


def _no_surrogate(text: str) -> None:
    col = lone_surrogate(text)
    if col is not None:
        raise ProgramError(f"a lone surrogate (\\u{ord(text[col - 1]):04x}) is not a character",
                           Span("<fact>", 1, col))


def parse_fact_text(text: str, cp: CompiledProgram) -> Fact:
    """Parse `Pred(c1, ..., t)` into a Fact (fast path for plain constants; raises
    ProgramError with a column for anything malformed)."""
    _no_surrogate(text)
    m = _SIMPLE.match(text)
    if m:
        parts = [p.strip() for p in m.group(2).split(",")] if m.group(2).strip() else []
        if parts and all(_ARG.match(p) for p in parts) and parts[-1].isdigit() \
                and len(parts[-1]) <= TIME_DIGITS:
            return Fact(m.group(1), tuple(parts[:-1]), int(parts[-1]))
    from reasoning.language.parser import parse_fact

    # a time of 19 digits or more: the program parser takes at most 18 (its numbers are
    # added up), the stream every natural number below 2^60 (validate says past it) — parse
    # the atom with a 0 there (columns before it unchanged), then put the time back
    big = _LAST_NUMBER.match(text)
    try:
        if big is not None:
            atom = parse_fact(big.group(1) + "0" + big.group(3), "<fact>", cp.program.rigid)
            if atom.time is not None:
                return Fact(atom.pred, tuple(a.value for a in atom.args),  # type: ignore[union-attr]
                            int(big.group(2)))
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
    for a in args:
        col = lone_surrogate(a)
        if col is not None:
            return None, (f'"args" holds a lone surrogate (\\u{ord(a[col - 1]):04x}), which '
                          f'is not a character')
    if isinstance(t, bool) or not isinstance(t, int):
        return None, '"time" must be an integer'
    if abs(t) >= MAX_TIME:
        return None, (f'"time" out of range (ticks and times are natural numbers below '
                      f'2^{MAX_TIME.bit_length() - 1})')
    return Fact(pred, tuple(args), t), None
