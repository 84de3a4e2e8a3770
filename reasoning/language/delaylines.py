"""Per-instance `#delay` lines read without lark (002 §3, δ per instance).

A program may declare a delay bound for every device — `#delay Hot(wt17, T) = 2.` — and a
generated program with 10⁵ such lines took 22 s to parse, ~200 µs a line in lark's
pure-Python LALR parser.  Lines of exactly the canonical shape below are tokenised here
instead (~10 µs a line) and blanked out of the text lark parses, so every other statement
keeps its line and column; the builder then adds them through the same checks as lark's
`delay_pattern` statements, in source order.  The result is the same Program and the same
spans (tests/test_parser.py compares both ways on random programs).  Anything else — a
comment on the line, a string, an offset, other whitespace, a keyword as a name, two
statements on one line — is left to lark.

    [ \\t]* #delay NAME ( ARG , … , VAR ) = INT . [ \\t\\r]*     ARG: NAME | INT
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from reasoning.language.syntax import NAME

MIN_LINES = 200  # fewer canonical lines: lark reads them with the rest (a few ms)

_LINE = re.compile(rf"[ \t]*#delay[ \t]+({NAME})[ \t]*\(([^()\"%]*)\)[ \t]*=[ \t]*([0-9]+)"
                   rf"[ \t]*\.[ \t\r]*")
_ARG = re.compile(rf"[ \t]*({NAME}|[0-9]+)[ \t]*")
# names the lexer reads as keywords (grammar.lark: UNARY_OP, SINCE, _UNTIL, _NOT)
_KEYWORDS = frozenset({"not", "until", "Since", "Boxminus", "Diamondminus", "Boxplus",
                       "Diamondplus"})


@dataclass(frozen=True)
class DelayLine:
    """One canonical `#delay` line: 1-based columns, end columns exclusive (as lark's)."""

    line: int
    pred: str
    pred_col: int
    args: tuple[tuple[str, str, int, int], ...]  # (kind "name" | "int", text, col, end col)
    end_col: int  # after the `)`
    k: str
    k_col: int


def _scan_line(text: str, no: int):
    """The DelayLine of one line, or None when it is not of the canonical shape."""
    m = _LINE.fullmatch(text)
    if m is None or m.group(1) in _KEYWORDS:
        return None
    inner, base = m.group(2), m.start(2)
    args = []
    pos = 0
    parts = inner.split(",")
    for i, part in enumerate(parts):
        a = _ARG.fullmatch(part)
        if a is None or a.group(1) in _KEYWORDS:
            return None
        tok = a.group(1)
        col = base + pos + a.start(1) + 1
        args.append(("int" if tok[0].isdigit() else "name", tok, col, col + len(tok)))
        pos += len(part) + 1
    last = args[-1][1]
    if not (last[0].isupper() or last[0] == "_"):
        return None  # a constant time argument: lark's builder gives the error
    return DelayLine(no, m.group(1), m.start(1) + 1, tuple(args), m.end(2) + 2, m.group(3),
                     m.start(3) + 1)


def scan(text: str) -> list[DelayLine]:
    """The canonical `#delay` lines of a program text (lines counted on `\\n`, as lark)."""
    if text.count("#delay") < MIN_LINES:
        return []
    out = []
    for i, line in enumerate(text.split("\n")):
        if "#delay" in line:
            d = _scan_line(line, i + 1)
            if d is not None:
                out.append(d)
    return out if len(out) >= MIN_LINES else []


def blank(text: str, lines: list[DelayLine]) -> str:
    """The text with those lines' characters replaced by spaces (positions kept)."""
    rows = text.split("\n")
    for d in lines:
        rows[d.line - 1] = " " * len(rows[d.line - 1])
    return "\n".join(rows)


def spanned(tree, lines: list[DelayLine]) -> bool:
    """Some statement of lark's tree of the blanked text runs across a blanked line: in the
    text as written, that `#delay` stood inside a statement (a syntax error lark must
    report, e.g. after a rule without its final `.`)."""
    nos = [d.line for d in lines]
    for stmt in tree.children:
        m = stmt.meta
        i = bisect.bisect_right(nos, m.line)
        if i < len(nos) and nos[i] < m.end_line:
            return True
    return False
