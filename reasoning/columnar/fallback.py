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


def _L_answers(eng, pred: str, times: Optional[set]) -> dict:
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


def refine_rows(eng, k: int, j: int, P, rows, tau: int):
    """Steps 3(b)-(c) of negated literal j on these refs (partition P) with
    regions.partition: (unchanged rows, [(pattern, rows of the pieces that replace the
    others)])."""
    B = eng.B
    tool = eng.tool
    tp = eng.templates[k]
    lay = eng.layouts[k]
    lp = tp.lits[j]
    refs = [(r, row_to_answer(lay, r)) for r in B.rows(rows)]
    eng.stats["fallback_refs"] += len(refs)
    times = {lp.instantiate(a.b)[1] for _, a in refs}
    Ls = _L_answers(eng, lp.pred, times)
    kept, new = [], {}
    for r, a in refs:
        _, t = lp.instantiate(a.b)
        L = Ls.get(t, []) + [l for l, born in Ls.get(None, []) if not eng.exact.split_below(
            eng.templates[l.tid], l.b, l.ev, t, tau, born == tau)]
        parts = tool._step3b(lp, a.b, a.ng, a.ev, L)
        if t > tau:
            pieces = parts
        else:
            pieces = []
            for pb, png, pev in parts:
                pieces.extend(tool._step3c(lp, j, pb, png, pev, L))
        if len(pieces) == 1 and pieces[0] == (a.b, a.ng, a.ev):
            kept.append(r)
            continue
        for b, ng, ev in pieces:
            na = tool._finish(tp, b, ev, ng, tau)
            if na is not None:
                P2 = frozenset(i for i, v in enumerate(na.b) if v is not None)
                new.setdefault(P2, []).append(na)
    tool._info.clear()
    kept_f = B.from_rows(kept, eng._schema(k, P)) if kept else None
    out = [(P2, B.from_rows(answer_rows(eng, k, P2, lst, tau, tau), eng._schema(k, P2)))
           for P2, lst in new.items()]
    return kept_f, out
