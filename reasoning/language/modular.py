"""Modular evaluation (issue 45): which IDB predicates pre-processing does not unfold.

Pre-processing (002 §2) unfolds every positive IDB literal into its rules, so k literals of
predicates with w rules each give w^k templates.  A predicate of the modular set stays a
literal of its callers' templates instead — a *derived hypothesis*, decided at step 3 by the
answers of its auxiliary query exactly as a negated literal is: a definite answer makes it
evidence, and once no answer of the predicate at that time can prove it, the caller's
answer is refuted.

`auto` unfolds every program whose P_Q fits pre-processing's budgets (its output is
unchanged) and, for the others, keeps out of its callers the predicates whose unfolding
takes a caller's derivations past MODULAR_WAYS, bottom-up, the largest first, and every
window metric.py lifted out of a rule its diamonds made too large;
`always` keeps every eligible predicate (property tests: both must give the same definite
answers); `never` none.  Eligible: a predicate neither rigid nor periodic, in a
nonrecursive program, that no rule of two time variables reaches (step 3 keys a derived
literal by its time, which the head's time variable then binds: multi_temporal).
"""
from __future__ import annotations

from typing import Iterable

from reasoning.language.analysis import Analysis
from reasoning.language.metric import AUX_PREFIX
from reasoning.language.syntax import Program, Var

MODES = ("auto", "never", "always")
MODULAR_WAYS = 64  # derivations of a predicate, its IDB literals unfolded, before auto keeps some


def eligible(prog: Program, an: Analysis) -> set[str]:
    """IDB predicates that may be derived literals (see the module's docstring)."""
    if not an.nonrecursive:
        return set()
    return _positive_idb(prog, an) - multi_temporal(prog, an)


def _positive_idb(prog: Program, an: Analysis) -> set[str]:
    """The IDB predicates of positive body literals, neither periodic nor rigid."""
    return {l.atom.pred for r in prog.rules for l in r.body
            if l.positive and l.atom.pred in an.idb and l.atom.pred not in an.periodic
            and l.atom.pred not in prog.rigid}


def blocked_note(prog: Program, an: Analysis) -> str:
    """Why modular evaluation keeps nothing of a program over the budgets although it has
    IDB literals, where rules of two time variables are the reason ("" otherwise)."""
    if not an.nonrecursive or not an.multi_temporal_rules:
        return ""
    would = _positive_idb(prog, an)
    if not would or eligible(prog, an):
        return ""
    r = prog.rules[an.multi_temporal_rules[0]]
    at = f" at line {r.span.line}" if r.span.line else ""
    return (f"; modular evaluation cannot keep {', '.join(sorted(would))} out of the "
            f"templates: the rule{at} has two time variables (a derived literal must take "
            f"its time from its template's head)")


def multi_temporal(prog: Program, an: Analysis) -> set[str]:
    """IDB predicates whose literal may sit in a template with a second time variable, and
    those whose own templates may have one: a kept predicate's literal must have its time
    from its caller's head time (in `P3(X, T) :- P2(X, T), E2(X, S).` the fact E2(a, 0)
    would seed an answer whose T is unbound).  A rule's template has a second time variable
    if the rule has one, or a literal of its body on a predicate defined through such a rule
    (unfolded into it), or its head is unfolded into such a template; the predicates of
    those rules' bodies, and the predicates defined through rules of two time variables,
    are unfolded as before; the others may be kept."""
    if not an.multi_temporal_rules:
        return set()
    below: dict[str, set[str]] = {}
    for r in prog.rules:
        below.setdefault(r.head.pred, set()).update(
            l.atom.pred for l in r.body if l.atom.pred in an.idb)
    heads = {prog.rules[i].head.pred for i in an.multi_temporal_rules}
    above = {p for p in below if _reaches(p, heads, below)}
    bad = set(an.multi_temporal_rules) | {
        i for i, r in enumerate(prog.rules) if any(l.atom.pred in above for l in r.body)}
    while True:
        inside = {l.atom.pred for i in bad for l in prog.rules[i].body if l.atom.pred in an.idb}
        more = {i for i, r in enumerate(prog.rules) if i not in bad and r.head.pred in inside}
        if not more:
            return above | inside
        bad |= more


def _reaches(p: str, targets: set[str], below: dict) -> bool:
    """Does p depend on one of targets (p itself included)?"""
    seen, todo = set(), [p]
    while todo:
        q = todo.pop()
        if q in targets:
            return True
        if q not in seen:
            seen.add(q)
            todo.extend(below.get(q, ()))
    return False


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
    # a window lifted out of a rule that its diamonds made too large (metric.py) is kept:
    # unfolded, it would multiply its caller's templates by its width again (3 ×
    # `Diamondminus[0,30]` over 10 constants and 200 ticks: 3.8 s with one of them
    # unfolded, 0.5 s with all three kept)
    keep: set[str] = {p for p in ok if p.startswith(AUX_PREFIX)}

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


def certainly_over(prog: Program, an: Analysis, pred: str, budget: int) -> bool:
    """Unfolding `pred` makes more than `budget` derivations for sure, so that `auto` need
    not try it (an attempt that fails at the budget took ~1 s on window programs): the
    static count is exact when every rule `pred` reaches through positive IDB literals
    has a head of distinct variables and a time variable (resolving with it never fails)
    and no positive rigid or periodic literal, and no reached predicate has a fact."""
    by_head: dict[str, list] = {}
    for r in list(prog.rules) + list(prog.facts):
        by_head.setdefault(r.head.pred, []).append(r)
    if not an.nonrecursive:
        return False
    ways: dict[str, int] = {}
    exact = True
    stack = [(pred, False)]  # post-order without recursion (chains of 10⁴ predicates)
    while stack:
        p, ready = stack.pop()
        if p in ways or p not in an.idb:
            continue
        rules = by_head.get(p, ())
        if not ready:
            stack.append((p, True))
            stack.extend((l.atom.pred, False) for r in rules for l in r.body
                         if l.positive and l.atom.pred in an.idb)
            continue
        bodies = []
        for r in rules:
            h = r.head
            names = [a.name for a in h.args if isinstance(a, Var)]
            if (not r.body or len(names) != len(h.args) or len(set(names)) != len(names)
                    or h.time is None or h.time.var is None
                    or any(l.positive and (l.atom.pred in prog.rigid or
                                           l.atom.pred in an.periodic) for l in r.body)):
                exact = False
            bodies.append([l.atom.pred for l in r.body
                           if l.positive and l.atom.pred in an.idb])
        ways[p] = _total(bodies, lambda q: ways.get(q, 1))
    return exact and ways.get(pred, 1) > budget
