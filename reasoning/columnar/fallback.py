"""The rare shapes of step 3 on the row engine's region algebra (regions.py), on just the
rows concerned: a negated hypothesis with two or more unbound variables, a ref carrying a
nogood on several variables, or covers through answers that carry nogoods themselves or
link two variables of the hypothesis (Algorithm 1, steps 3(b)-(c); see engine.py)."""
from __future__ import annotations

from typing import Optional

from reasoning.columnar.layout import INT, answer_to_row, row_to_answer


def row_meta(eng, k: int, a) -> tuple:
    """(exp, dlp, unb) of an Answer, as the relational `_finish` computes them."""
    tp = eng.templates[k]
    exp = dlp = None
    unb = False
    for i, lp in enumerate(tp.lits):
        if i in a.ev:
            continue
        args, t = lp.instantiate(a.b)
        if t is None:
            unb = True
            continue
        if lp.positive and not lp.derived:  # (a derived literal: decided at step 3)
            e = t + eng.tool.delta(lp.pred, args)
            exp = e if exp is None else min(exp, e)
            dlp = e if dlp is None else max(dlp, e)
    return exp, dlp, unb


def answer_rows(eng, k: int, P, answers: list, tau: int, born: int) -> list[dict]:
    """Rows of partition (k, P) for these Answers (their bound variables are P)."""
    lay = eng.layouts[k]
    cols = eng._schema(k, P)
    out = []
    for a in answers:
        exp, dlp, unb = row_meta(eng, k, a)
        r = answer_to_row(lay, a, exp, dlp, unb, born)
        out.append({c: r[c] for c in cols})
    return out


def L_answers(eng, pred: str, times: Optional[set]) -> dict:
    """Answers of pred by head time (None: unbound head time, as (answer, born at τ)), of
    the given head times (None: all)."""
    B = eng.B
    out: dict = {}
    for k2 in eng.by_head.get(pred, ()):
        tp2 = eng.templates[k2]
        lay2 = eng.layouts[k2]
        for P2, A in eng.S[k2].items():
            if B.is_empty(A):
                continue
            if times is not None and (tp2.head.tvar is not None and tp2.head.tvar in P2
                                      or tp2.head.tvar is None):
                ht = eng._texpr(tp2.head)
                A = B.filter(A, B.any_of([ht == B.lit(t, INT) for t in times]))
            for r in B.rows(A):
                a = row_to_answer(lay2, r)
                _, t = tp2.head.instantiate(a.b)
                out.setdefault(t, []).append(a if t is not None else (a, r["born"]))
    return out


def L_at(eng, Ls: dict, t: int, tau: int) -> list:
    """Step 3(a)'s answers of p_t from L_answers' (Engine._L_for): those with head time
    t, and those with their head time unbound that prove it (above its floor:
    exact.split_below)."""
    return Ls.get(t, []) + [l for l, born in Ls.get(None, []) if not eng.exact.split_below(
        eng.templates[l.tid], l.b, l.ev, t, tau, born == tau)]


def refine_rows(eng, k: int, j: int, P, rows, tau: int):
    """Steps 3(b)-(c) of negated literal j on these refs (partition P) with
    regions.partition: (unchanged rows, [(pattern, rows of the pieces that replace the
    others)])."""
    tool = eng.tool
    lp = eng.templates[k].lits[j]
    refs = ref_answers(eng, k, rows)
    Ls = L_answers(eng, lp.pred, {lp.instantiate(a.b)[1] for _, a in refs})

    def pieces_of(a) -> list:
        _, t = lp.instantiate(a.b)
        L = L_at(eng, Ls, t, tau)
        parts = tool._step3b(lp, a.b, a.ng, a.ev, L)
        if t > tau:
            return parts
        out = []
        for pb, png, pev in parts:
            out.extend(tool._step3c(lp, j, pb, png, pev, L))
        return out

    return replace_rows(eng, k, P, refs, tau, pieces_of)


def ref_answers(eng, k: int, rows) -> list:
    """The refs `rows` of template k as (row, Answer) (counted in stats)."""
    lay = eng.layouts[k]
    refs = [(r, row_to_answer(lay, r)) for r in eng.B.rows(rows)]
    eng.stats["fallback_refs"] += len(refs)
    return refs


def replace_rows(eng, k: int, P, refs: list, tau: int, pieces_of):
    """Each ref (row, Answer) of partition P replaced by pieces_of(answer) — [(binding,
    nogoods, evidence)], itself alone when unchanged — each piece finished (the row
    engine's _finish): (the unchanged rows, [(pattern, the pieces' rows)])."""
    B = eng.B
    tool = eng.tool
    tp = eng.templates[k]
    kept, new = [], {}
    try:
        for r, a in refs:
            pieces = pieces_of(a)
            if len(pieces) == 1 and pieces[0] == (a.b, a.ng, a.ev):
                kept.append(r)
                continue
            for b, ng, ev in pieces:
                na = tool._finish(tp, b, ev, ng, tau)
                if na is not None:
                    P2 = frozenset(i for i, v in enumerate(na.b) if v is not None)
                    new.setdefault(P2, []).append(na)
    finally:
        tool._info.clear()
    kept_f = B.from_rows(kept, eng._schema(k, P)) if kept else None
    out = [(P2, B.from_rows(answer_rows(eng, k, P2, lst, tau, tau), eng._schema(k, P2)))
           for P2, lst in new.items()]
    return kept_f, out
