"""S_τ as tables (Algorithm 1 set-at-a-time): one table per template of P_Q, one per EDB
predicate for D|τ and the window W, and the conversions to and from the row engine's
`Answer` (reasoning/row/engine.py), which stays the reference executor.

A schematic answer ⟨P, θ, E, H⟩ (002 Def. 15) of template k is one row of table k:

  v0 … v{n-1}  the template's variables (object variables: string; temporal: int64);
               null = unbound
  ev           E as a bit mask over the template's literals (bit i set: literal i ∈ E)
  ng           the disequality constraints ("nogoods", regions.py) as a sorted list of
               strings: `x:c` for the single-variable nogood X ≠ c (x the variable index),
               `*[[x, c], [y, d]]` for a nogood on several variables
  exp          expiry: the least t + δ over the positive hypotheses with a bound time (the
               answer leaves S at that tick unless a fact updates it; step 1(b))
  dlp          the greatest such t + δ (the positive part of the deadline, explain.py)
  unb          some hypothesis has an unbound time (the deadline is unbounded)
  born         the tick the row was created (definite rows born at τ are new at τ)

exp, dlp and unb are functions of (binding, ev), so they are computed once per row.
A fact table has columns a0 … a{k-1} (object arguments) and t; the window adds wexp = t + δ.
"""
from __future__ import annotations

import bisect
import json
from dataclasses import dataclass
from typing import Iterable, Optional

from reasoning.semantics.answer import Answer
from reasoning.semantics.patterns import ETemplate, Fact

OBJ, INT, BOOL, STRLIST, INTLIST = "obj", "int", "bool", "strlist", "intlist"
FLOAT = "float"  # the answers table's confidence only
META = ("ev", "ng", "exp", "dlp", "unb", "born")
META_KINDS = {"ev": INT, "ng": STRLIST, "exp": INT, "dlp": INT, "unb": BOOL, "born": INT}
MAX_LITERALS = 62  # ev is an int64 bit mask


def vcol(i: int) -> str:
    return f"v{i}"


def acol(i: int) -> str:
    return f"a{i}"


@dataclass(frozen=True)
class Layout:
    """The columns of one template's table."""

    tp: ETemplate
    kinds: tuple  # OBJ or INT per variable

    @staticmethod
    def of(tp: ETemplate) -> "Layout":
        return Layout(tp, tuple(INT if i in tp.time_vars else OBJ for i in range(len(tp.names))))

    @property
    def vcols(self) -> list[str]:
        return [vcol(i) for i in range(len(self.kinds))]

    @property
    def schema(self) -> dict[str, str]:
        out = {vcol(i): k for i, k in enumerate(self.kinds)}
        out.update(META_KINDS)
        return out

    @property
    def key_cols(self) -> list[str]:
        """The identity of an answer: binding, E and nogoods (Answer equality)."""
        return self.vcols + ["ev", "ng"]

    @property
    def full_mask(self) -> int:
        return (1 << len(self.tp.lits)) - 1


def fact_schema(n_args: int, window: bool = False) -> dict[str, str]:
    out = {acol(i): OBJ for i in range(n_args)}
    out["t"] = INT
    if window:
        out["wexp"] = INT
    return out


# ---------------------------------------------------------------- nogoods

def encode_nogood(n: tuple) -> str:
    """One nogood (tuple of (var index, value)) as a list element of the `ng` column: `v:c`
    for one string constant, else `*` and JSON (a time value stays an integer)."""
    if len(n) == 1 and type(n[0][1]) is str:
        v, c = n[0]
        return f"{v}:{c}"
    return "*" + json.dumps([[v, c] for v, c in sorted(n)], ensure_ascii=False)


def decode_nogood(s: str) -> tuple:
    if s.startswith("*"):
        return tuple((int(v), c) for v, c in json.loads(s[1:]))
    v, _, c = s.partition(":")
    return ((int(v), c),)


def encode_nogoods(ng: Iterable) -> list[str]:
    return sorted({encode_nogood(tuple(sorted(n))) for n in ng})


def decode_nogoods(items: Optional[Iterable[str]]) -> frozenset:
    return frozenset(decode_nogood(s) for s in (items or ()))


def split_nogood_list(items: Optional[Iterable[str]]) -> tuple[dict, list]:
    """The distinct nogoods of an `ng` list as explain.exclusions_of takes them: {variable:
    [constants]} of the single-variable ones and the others as tuples, in the list's sorted
    order (exclusions_of sorts what it prints) — one variable's `v:c` texts are then a run
    [`v:`, `v;`), whose constants are sliced out of their texts (5x cheaper than a tuple
    per nogood: an answer may exclude 10⁴–10⁶ constants)."""
    by_var: dict[int, list] = {}
    combos = []
    items = sorted(dict.fromkeys(items or ()))  # (an `ng` list is sorted: one linear run)
    i, n = 0, len(items)
    while i < n:
        s = items[i]
        if s.startswith("*"):  # (a time value's nogood is single-variable: `*[[v, t]]`)
            nogood = decode_nogood(s)
            if len(nogood) == 1:
                by_var.setdefault(nogood[0][0], []).append(nogood[0][1])
            else:
                combos.append(nogood)
            i += 1
            continue
        v = s.partition(":")[0]
        hi = bisect.bisect_left(items, v + ";", i)
        k = len(v) + 1
        by_var.setdefault(int(v), []).extend([x[k:] for x in items[i:hi]])
        i = hi
    return by_var, combos


# ---------------------------------------------------------------- rows <-> Answers

def answer_to_row(lay: Layout, a: Answer, exp, dlp, unb: bool, born: int) -> dict:
    row = {vcol(i): v for i, v in enumerate(a.b)}
    ev = 0
    for i in a.ev:
        ev |= 1 << i
    row.update(ev=ev, ng=encode_nogoods(a.ng), exp=exp, dlp=dlp, unb=unb, born=born)
    return row


def row_to_answer(lay: Layout, row: dict, nogoods: bool = True) -> Answer:
    """The row as an Answer (without its nogoods if not asked: a renderer decodes them in
    order with split_nogood_list)."""
    n = len(lay.kinds)
    b = tuple(row.get(vcol(i)) for i in range(n))
    ev = row["ev"]
    evs = frozenset(i for i in range(len(lay.tp.lits)) if ev >> i & 1)
    return Answer(lay.tp.tid, b, evs, decode_nogoods(row["ng"]) if nogoods else frozenset())


def facts_by_pred(facts: Iterable[Fact]) -> dict[str, dict[str, list]]:
    """Column lists per predicate (the D|τ tables): each predicate's argument tuples
    transposed at once (a predicate has one arity: the facts are validated)."""
    by: dict[str, tuple] = {}
    for f in facts:
        got = by.get(f.pred)
        if got is None:
            got = by[f.pred] = ([], [], len(f.args))
        got[0].append(f.args)
        got[1].append(f.time)
    out: dict[str, dict[str, list]] = {}
    for pred, (args, times, n) in by.items():
        cols = out[pred] = {acol(i): list(c) for i, c in enumerate(zip(*args))} if n else {}
        cols["t"] = times
    return out
