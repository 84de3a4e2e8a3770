"""Step 3 of Algorithm 1 (002 §6): negated hypotheses in p_t order; 3(a), the answers of p_t."""
from __future__ import annotations

from reasoning.columnar.layout import INT, OBJ, vcol
from reasoning.columnar.state import add
from reasoning.columnar.step3_refine import refine
from reasoning.columnar.unify import literal_vars


def step3(eng, tau: int) -> None:
    """Step 3: negated hypotheses in the topological order of the p_t, one wave per
    order key (nodes with the same key never depend on each other); per wave, 3(a)'s
    answers of each negated predicate, then 3(b)-(c) on the refs open at that key."""
    B = eng.B
    keys: set = set()
    for k, tp in enumerate(eng.templates):
        for j in tp.neg:
            lp = tp.lits[j]
            lvl = eng.strat.level.get(lp.pred, 0)
            slope = eng.strat.slope.get(lp.pred, 0)
            phi = eng.strat.phi.get(lp.pred, 0)
            for P, A in eng.S[k].items():
                if lp.tvar is not None and lp.tvar not in P:
                    continue
                open_ = B.filter(A, ~B.has_bit(B.col("ev"), j))
                if B.is_empty(open_):
                    continue
                if slope == 0 or lp.tvar is None:
                    t0 = lp.toff if lp.tvar is None else 0
                    keys.add((lvl, slope * t0 + phi))
                else:
                    ts = B.values(B.select(open_, [B.alias(eng._texpr(lp), "_t")]), "_t")
                    keys.update((lvl, slope * t + phi) for t in ts)
    for key in sorted(keys):
        Lcache: dict = {}
        for k, tp in enumerate(eng.templates):
            for j in tp.neg:
                lp = tp.lits[j]
                if eng.strat.level.get(lp.pred, 0) != key[0]:
                    continue
                slope = eng.strat.slope.get(lp.pred, 0)
                phi = eng.strat.phi.get(lp.pred, 0)
                tcond = None
                if slope == 0 or lp.tvar is None:
                    t0 = lp.toff if lp.tvar is None else 0
                    if slope * t0 + phi != key[1]:
                        continue
                else:
                    if (key[1] - phi) % slope:
                        continue
                    tcond = eng._texpr(lp) == B.lit((key[1] - phi) // slope, INT)
                for P in list(eng.S[k]):
                    if lp.tvar is not None and lp.tvar not in P:
                        continue
                    A = eng.S[k][P]
                    cond = ~B.has_bit(B.col("ev"), j)
                    if tcond is not None:
                        cond = cond & tcond
                    R = B.materialize(B.filter(A, cond))
                    if B.is_empty(R):
                        continue
                    rest = B.filter(A, ~cond)
                    L = Lcache.get(lp.pred)  # noqa
                    if L is None:
                        L = Lcache[lp.pred] = L_frames(eng, lp.pred, tau)
                    kept, pieces = refine(eng, k, j, P, R, L, tau)
                    eng.S[k][P] = B.materialize(
                        B.concat([rest, kept]) if kept is not None else rest)
                    for P2, df in pieces:
                        add(eng, k, P2, df)


def L_frames(eng, pred: str, tau: int) -> list:
    """Step 3(a): the answers of pred (heads instantiated: la<i>, lt; definite: ldef;
    carries nogoods: lng; least head time not split off, for a head time unbound:
    lmin): [(template, bound head variables, frame, whether its rows can carry nogoods)]."""
    B = eng.B
    out = []
    for k2 in eng.by_head.get(pred, ()):
        tp2 = eng.templates[k2]
        head = tp2.head
        hv = literal_vars(head)
        for P2, A in eng.S[k2].items():
            if B.is_empty(A):
                continue
            items = l_items(eng, k2, P2)
            lmin = head_floor(eng, k2, tau) if head.tvar is not None and \
                head.tvar not in P2 else None
            if lmin is not None:
                items.append(B.alias(lmin, "lmin"))
            out.append((k2, P2 & hv, B.materialize(B.select(A, items)),
                        eng.part_may_ng(k2, P2)))
    return out


def l_items(eng, k: int, P: frozenset) -> list:
    """An answer of p's template k as step 3 reads it (partition P): the head's arguments
    (la0, la1, …), its time (lt, where bound), whether it is definite (ldef) and whether it
    has nogoods (lng)."""
    B = eng.B
    head = eng.templates[k].head
    items = []
    for pos, (isvar, x) in enumerate(head.args):
        if not isvar:
            items.append(B.alias(B.lit(x, OBJ), f"la{pos}"))
        elif x in P:
            items.append(B.alias(B.col(vcol(x)), f"la{pos}"))
    if head.tvar is None or head.tvar in P:
        items.append(B.alias(eng._texpr(head), "lt"))
    items.append(B.alias(B.col("ev") == B.lit(eng.layouts[k].full_mask, INT), "ldef"))
    items.append(B.alias(B.list_len(B.col("ng")) > B.lit(0, INT), "lng"))
    return items


def head_floor(eng, k: int, tau: int):
    """The least head time an answer with its head time unbound still proves at step 3
    of τ (exact.Exactness.split_below, as an expression; null: every time), or None."""
    B = eng.B
    tp = eng.templates[k]
    ex = eng.exact
    lits = [i for i in ex.flits[k] if tp.lits[i].tvar == tp.head.tvar]
    if not lits:
        return None
    pos = sum(1 << i for i in tp.pos)
    ev = B.col("ev")
    old = B.when(B.col("born") == B.lit(tau, INT), B.null(INT), B.lit(tau - 1, INT))
    at = B.when(B.bit_and(ev, pos) != B.lit(0, INT), B.lit(tau, INT), old)
    terms = [B.when(B.has_bit(ev, i), B.null(INT),
                    at + B.lit(1 - tp.lits[i].toff + tp.head.toff, INT)) for i in lits]
    return B.when(ev == B.lit(0, INT), B.null(INT), B.greatest(terms))
