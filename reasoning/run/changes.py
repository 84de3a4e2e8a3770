"""`hypo run --changes`: per tick only the answers whose printed lines changed (issue 9)."""
from __future__ import annotations

import re

import numpy as np

from reasoning.language.metric import WINDOW_OPS, window_ticks
from reasoning.native import kernels
from reasoning.semantics.explain import DEFINITE
from reasoning.semantics.keyed import KeyedLines

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


# a lifted diamond's way narrowed to its open ticks (explain.py _window_way), in `derived`
_NARROWED = re.compile(r'(\{"evidence": \[\], "hypotheses": \["(' + WINDOW_OPS + r')\[)'
                       r'(\d+),(\d+)(\] [^"]*, )(-?\d+)(\)"\]\})')


def relative_narrowed(body: str, tau: int) -> str:
    """The line with each narrowed window of its `derived` ways whose first open tick L
    is at most τ + 1 — the window has started: L moves on with the tick — written with L
    relative to τ: a window that only narrowed by the ticks elapsed compares equal."""
    at = body.find('"derived": {')
    if at < 0:
        return body

    def rel(m) -> str:
        a, b, t = int(m[3]), int(m[4]), int(m[6])
        first = window_ticks(m[2], a, b, t).start
        if first - tau > 1:
            return m[0]
        pair = f"{a},~{first - tau}" if m[2] == "Diamondminus" else f"~{first - tau},{b}"
        return f"{m[1]}{pair}{m[5]}{m[6]}{m[7]}"

    return body[:at] + _NARROWED.sub(rel, body[at:])


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
    a line printed at tick t0 stands at tick τ with each `time_from` value plus τ − t0.
    Likewise a lifted diamond's narrowed window in `derived` whose first open tick moves on
    with the tick (relative_narrowed): in a replay its first open tick is τ − t0 later."""

    def __init__(self):
        self.prev = None

    def update(self, tau: int, cur) -> list[str]:
        """The lines to print at tick τ, given the current answer set as KeyedLines (or a
        frame of its columns, or None: no line)."""
        out: list = []
        for texts, rows, heads, which, skip in self._changed(tau, cur):
            out.extend([heads[w] + texts[r][skip:] for r, w in zip(rows, which)])
        return out

    def update_text(self, tau: int, cur) -> str:
        """update()'s lines as one text, each ended by a newline ("" when none): what
        `hypo run` writes, joined by the C kernel join_lines without a str a line."""
        join = kernels.c_only("join_lines")
        out = []
        for texts, rows, heads, which, skip in self._changed(tau, cur):
            got = join(texts, rows, heads, which, skip) if join is not None else None
            out.append(got if got is not None else "".join(
                [heads[w] + texts[r][skip:] + "\n" for r, w in zip(rows, which)]))
        return "".join(out)

    def _changed(self, tau: int, cur) -> list:
        """The changed lines of tick τ as parts (texts, rows, heads, which, skip): line k of
        a part is heads[which[k]] followed by texts[rows[k]] after its `skip`-character
        `{"tick": …, ` prefix.  Answers and lines are compared by hashes (_signatures)."""
        prefix = f'{{"tick": {tau}, '
        cur = KeyedLines.of(cur)
        n = len(prefix)
        lines, still_open = _signatures(cur, n, tau)
        answers = np.ascontiguousarray(lines[:, :2])
        prev = self.prev
        self.prev = (cur, n, lines, still_open)
        if prev is None:
            if not cur.height:
                return []
            return [_changed_rows(cur, np.ones(cur.height, bool), np.zeros(cur.height, bool),
                                  prefix)]
        out = []
        pdf, pn, plines, popen = prev
        panswers = np.ascontiguousarray(plines[:, :2])
        added = ~_member(lines, plines)
        dropped = ~_member(plines, lines)
        touched = np.concatenate([answers[added], panswers[dropped]])
        sel = _member(answers, touched)
        if sel.any():
            out.append(_changed_rows(cur, sel, _member(answers, panswers), prefix))
        refuted = dropped & popen
        if refuted.any():
            refuted &= ~_member(panswers, answers)
            if refuted.any():
                rows = np.flatnonzero(refuted).tolist()
                rows.sort(key=pdf.skey.__getitem__)
                out.append((pdf.line, rows, [prefix + '"change": "refuted", '],
                            [0] * len(rows), pn))
        return out


def _signatures(cur: KeyedLines, n: int, tau: int):
    """(a 128-bit hash of each row's answer key and of its line's body — the line after its
    n-character prefix, `time_from` relative to τ — as an int64 matrix of 4 columns,
    whether each row is still open): answers and lines are compared by these, joins on
    integers instead of ~200-byte strings (a collision has probability ~n²/2¹²⁸).  The C
    kernel str_sigs hashes the strings; without it, Polars' hash."""
    still_open = np.array([s != DEFINITE for s in cur.status], bool)
    if not cur.height:
        return np.zeros((0, 4), np.int64), still_open
    lines = cur.line
    # lines with a floor go through Python (a str search: ~0.1 ms where Polars' costs 0.2)
    idx = [i for i, x in enumerate(lines) if '"time_from": {' in x or '"hypotheses": ["Diamond'
           in x] if cur.floors else []
    sigs = kernels.c_only("str_sigs")
    if sigs is not None:
        a, b = sigs(cur.akey), sigs(lines, n)
        c = sigs([_relative(lines[i][n:], tau) for i in idx]) if idx else ((), ())
        if a is not None and b is not None and c is not None:
            h = [a[0], a[1], b[0], b[1]]
            if idx:
                h[2][idx], h[3][idx] = c
            return np.column_stack(h), still_open
    import polars as pl

    body = pl.Series([x[n:] for x in lines], dtype=pl.String)
    if idx:
        body = body.scatter(idx, [_relative(lines[i][n:], tau) for i in idx])
    akey = pl.Series(cur.akey, dtype=pl.String)
    # (the columns one by one: no Polars operation)
    return np.column_stack([akey.hash(11).to_numpy(), akey.hash(12).to_numpy(),
                            body.hash(13).to_numpy(), body.hash(14).to_numpy()]
                           ).view(np.int64), still_open


def _relative(body: str, tau: int) -> str:
    """A line's body as compared from tick to tick (time_from floors, narrowed windows)."""
    return relative_narrowed(relative_time_from(body, tau), tau)


def _changed_rows(cur: KeyedLines, sel: np.ndarray, upd: np.ndarray, prefix: str) -> tuple:
    """The selected rows as a part of Changes._changed: `decided` if definite, `updated` if
    printed before, else `new`, by (grp, skey) — sorted in Python: Polars' sort of the
    string keys alone cost ~0.5 ms a tick for ~10³ rows, Python's ~0.1."""
    st = cur.status
    rows = cur.order(np.flatnonzero(sel).tolist())
    heads = [f'{prefix}"change": "{k}", ' for k in ("decided", "updated", "new")]
    u = upd.tolist()
    return (cur.line, rows, heads,
            [0 if st[i] == DEFINITE else 1 if u[i] else 2 for i in rows], len(prefix))
