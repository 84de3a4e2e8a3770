"""Unification decided per *pattern* (which variables are bound), so that it runs as an
equi-join: the row engine's `LitPattern.match` (local mgus, Def. 16) and `regions.cover_of`
(step 3) evaluated symbolically once per combination of null-patterns, yielding the join
keys, the filters and the new bindings as column expressions.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from reasoning.semantics.patterns import LitPattern
from reasoning.columnar.layout import acol, vcol

# a side expression: ("C", constant) | ("R", column of the left frame) | ("L", column of the
# right frame)
Side = tuple


@dataclass
class MatchSpec:
    """Joining a frame whose bound variables are `bound` with the facts of a literal's
    predicate (LitPattern.match on every row at once)."""

    fact_eq_const: list = field(default_factory=list)  # (fact col, constant)
    fact_eq_cols: list = field(default_factory=list)  # (fact col, fact col)
    keys: list = field(default_factory=list)  # (frame column, fact column)
    frame_time_key: Optional[tuple] = None  # (var index, offset): v + off joins t
    binds: dict = field(default_factory=dict)  # var index -> (fact column, offset)


def match_spec(lp: LitPattern, bound: frozenset) -> MatchSpec:
    """The join that extends bindings (with variables `bound`) by the facts matching lp."""
    spec = MatchSpec()
    first: dict[int, str] = {}
    for i, (isvar, x) in enumerate(lp.args):
        fc = acol(i)
        if not isvar:
            spec.fact_eq_const.append((fc, x))
        elif x in bound:
            spec.keys.append((vcol(x), fc))
        elif x in first:
            spec.fact_eq_cols.append((fc, first[x]))
        else:
            first[x] = fc
            spec.binds[x] = (fc, 0)
    if lp.tvar is None:
        spec.fact_eq_const.append(("t", lp.toff))
    elif lp.tvar in bound:
        spec.frame_time_key = (lp.tvar, lp.toff)
    else:
        spec.binds[lp.tvar] = ("t", -lp.toff)
    return spec


def literal_vars(lp: LitPattern) -> frozenset:
    out = {x for isvar, x in lp.args if isvar}
    if lp.tvar is not None:
        out.add(lp.tvar)
    return frozenset(out)


def ground_under(lp: LitPattern, bound: frozenset) -> bool:
    return literal_vars(lp) <= bound


@dataclass
class CoverSpec:
    """cover_of(h, head) for one combination of patterns: None-able pieces as sides."""

    conds: list  # (Side, Side) equalities
    eqs: dict  # h var index -> Side
    approx: bool


def cover_spec(h: LitPattern, h_bound: frozenset, head: LitPattern, l_bound: frozenset,
               h_time: Side, l_time: Optional[Side]) -> Optional[CoverSpec]:
    """Symbolic `regions.cover_of` (without the answer's nogoods): h under a binding with the
    variables `h_bound`, against a head under one with `l_bound`.  Sides ("R", column) refer
    to the refs' frame (v<i> of h's template), ("L", column) to the answers' frame (la<i>:
    the instantiated head arguments; lt its time).  None if never unifiable."""
    conds: list = []
    eqs: dict = {}
    lmap: dict = {}
    approx = False

    def bind_h(x: int, side: Side) -> None:
        cur = eqs.get(x)
        if cur is None:
            eqs[x] = side
        else:
            conds.append((cur, side))

    for pos, ((hv, hx), (lv, lx)) in enumerate(zip(h.args, head.args)):
        if hv and hx not in h_bound:
            hside = None
            hvar = hx
        else:
            hside = ("R", vcol(hx)) if hv else ("C", hx)
            hvar = None
        if lv and lx not in l_bound:
            lside = None
            lvar = lx
        else:
            lside = ("L", f"la{pos}") if lv else ("C", lx)
            lvar = None
        if hvar is None and lvar is None:
            conds.append((hside, lside))
        elif hvar is None:  # bound in h, variable in l
            got = lmap.get(lvar)
            if got is None:
                lmap[lvar] = ("c", hside)
            elif got[0] == "c":
                conds.append((got[1], hside))
            else:
                bind_h(got[1], hside)
        elif lvar is None:  # variable in h, bound in l
            bind_h(hvar, lside)
        else:
            got = lmap.get(lvar)
            if got is None:
                lmap[lvar] = ("h", hvar)
            elif got[0] == "c":
                bind_h(hvar, got[1])
            elif got[1] != hvar:
                approx = True
    if l_time is not None:
        conds.append((h_time, l_time))
    # constant-only conditions decide statically
    out = []
    for a, b in conds:
        if a[0] == "C" and b[0] == "C":
            if a[1] != b[1]:
                return None
            continue
        out.append((a, b))
    return CoverSpec(out, eqs, approx)
