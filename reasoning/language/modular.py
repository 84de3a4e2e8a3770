"""Modular evaluation (issue 45): which IDB predicates pre-processing does not unfold.

Pre-processing (002 §2) unfolds every positive IDB literal into its rules, so k literals of
predicates with w rules each give w^k templates.  A predicate of the modular set stays a
literal of its callers' templates instead — a *derived hypothesis*, decided at step 3 by the
answers of its auxiliary query exactly as a negated literal is: a definite answer makes it
evidence, and once no answer of the predicate at that time can prove it, the caller's
answer is refuted.

`auto` unfolds every program whose P_Q fits pre-processing's budgets (its output is
unchanged) and, for the others, keeps out of its callers the predicates whose unfolding
takes a caller's derivations past MODULAR_WAYS, bottom-up, the largest first;
`always` keeps every eligible predicate (property tests: both must give the same definite
answers); `never` none.  Eligible: a predicate neither rigid nor periodic, in a program
with one time variable per rule (step 3 keys a derived literal by its time, which the
head's time variable then binds).
"""
from __future__ import annotations

from typing import Iterable

from reasoning.language.analysis import Analysis
from reasoning.language.syntax import Program

MODES = ("auto", "never", "always")
MODULAR_WAYS = 64  # derivations of a predicate, its IDB literals unfolded, before auto keeps some


def eligible(prog: Program, an: Analysis) -> set[str]:
    """IDB predicates that may be derived literals (see the module's docstring)."""
    if an.multi_temporal_rules or not an.nonrecursive:
        return set()
    return {l.atom.pred for r in prog.rules for l in r.body
            if l.positive and l.atom.pred in an.idb and l.atom.pred not in an.periodic
            and l.atom.pred not in prog.rigid}


def choose(prog: Program, an: Analysis, mode: str) -> frozenset:
    """The modular set for `mode` ("auto" here means: the program is over the budgets)."""
    ok = eligible(prog, an)
    if mode == "never" or not ok:
        return frozenset()
    if mode == "always":
        return frozenset(ok)
    by_head: dict[str, list] = {}
    for r in prog.rules:
        if r.body:
            by_head.setdefault(r.head.pred, []).append(r)
    ways: dict[str, int] = {}
    keep: set[str] = set()

    def w(p: str) -> int:
        """Derivations of p with the modular predicates kept (1 each)."""
        if p in keep or p not in an.idb:
            return 1
        if p not in ways:
            bodies = [[l.atom.pred for l in r.body if l.positive and l.atom.pred in an.idb]
                      for r in by_head.get(p, ())]
            total = _total(bodies, w)
            while total > MODULAR_WAYS:
                cands = {q for body in bodies for q in body
                         if q in ok and q not in keep and w(q) > 1}
                if not cands:
                    break
                keep.add(max(cands, key=lambda q: (w(q), q)))
                total = _total(bodies, w)
            ways[p] = total
        return ways[p]

    for p in sorted(an.idb):
        w(p)
    return frozenset(keep)


def _total(bodies: list[list[str]], w) -> int:
    """Derivations of a predicate: the sum over its rules of their body's product."""
    return min(sum(_product(w(q) for q in body) for body in bodies), 1 << 62)


def _product(xs: Iterable[int]) -> int:
    out = 1
    for x in xs:
        out = min(out * x, 1 << 62)
    return out
