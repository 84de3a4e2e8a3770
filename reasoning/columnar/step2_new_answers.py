"""Step 2 of Algorithm 1 (002 §6): the answers at T := τ, one row per template of P_Q."""
from __future__ import annotations

from typing import Optional

from reasoning.columnar.fallback import answer_rows
from reasoning.columnar.layout import INT, OBJ, acol
from reasoning.columnar.state import Pattern, add


def step2(eng, tau: int, present: dict) -> None:
    """Step 2 for every template (`present` = D|τ ∪ W, by predicate); a derived
    predicate's template read ahead (Engine._ahead: modular evaluation) also at the head
    times up to τ + ahead(p) not created before (Engine._step2)."""
    for k, tp in enumerate(eng.templates):
        if eng.step2_dead[k]:
            continue
        for ht in eng.tool.step2_times(tp, tau):  # (the row engine's record of them)
            new_answer(eng, k, tau, present, ht)


def new_answer(eng, k: int, tau: int, present: Optional[dict] = None,
               ht: Optional[int] = None) -> None:
    """Step 2 for template k: ⟨P, θσ, ∅, Hσ⟩ with σ = [T := τ] (or the head time ht, read
    ahead) if Hσ's positive part is potentially future (one row: built by the row engine's
    own `_finish`)."""
    B = eng.B
    tp = eng.templates[k]
    h = tp.head
    ht = tau if ht is None else ht
    b = [None] * len(tp.names)
    if h.tvar is None:
        if h.toff != ht:
            return
    else:
        b[h.tvar] = ht - h.toff
    if present is not None and eng.exact.arrived_ground(
            tp, tuple(b), lambda p, args, t: present_has(eng, present, p, args, t)):
        return
    a = eng.tool._finish(tp, tuple(b), frozenset(), tp.nogoods, tau)
    eng.tool._info.clear()
    if a is None:
        return
    P = Pattern(i for i, v in enumerate(a.b) if v is not None)
    add(eng, k, P, B.from_rows(answer_rows(eng, k, P, [a], tau, tau), eng._schema(k, P)))


def present_has(eng, present: dict, pred: str, args: tuple, t: int) -> bool:
    """p(args, t) ∈ W ∪ D|τ (a few look-ups per template and tick, for step 2)."""
    B = eng.B
    F = present.get(pred)
    if F is None or B.is_empty(F):
        return False
    cond = B.col("t") == B.lit(t, INT)
    for i, a in enumerate(args):
        cond = cond & (B.col(acol(i)) == B.lit(a, OBJ))
    return B.exists(B.filter(F, cond))


def dead_at_birth(eng, tp) -> bool:
    """Step 2's answer of the template dies at every τ (static): read at τ only (not ahead),
    it has a positive literal on the head's time variable whose deadline is at most τ
    (t + δ ≤ τ for t = τ − the head's offset + the literal's: toff − head toff + δ ≤ 0, δ
    the same for every instance) — as the row engine's _finish finds it, tick by tick."""
    h = tp.head
    if h.tvar is None or eng.tool.ahead_of(tp) > 0:
        return False
    for j in tp.pos:
        lp = tp.lits[j]
        plan = eng.dplans.get(lp.pred)
        if lp.derived or lp.tvar != h.tvar or plan is None or plan.constant is None:
            continue
        if lp.toff - h.toff + plan.constant <= 0:
            return True
    return False
