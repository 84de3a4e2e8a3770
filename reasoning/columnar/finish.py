"""Steps 1–3 of Algorithm 1 (002 §6): rows for S_τ completed (times, exp/dlp/unb, nogoods)."""
from __future__ import annotations

from typing import Optional

from reasoning.language.periodic import TimeDomain
from reasoning.language.syntax import Lrp
from reasoning.semantics import patterns
from reasoning.columnar.delays import COL, CONST
from reasoning.columnar.layout import (BOOL, INT, META_KINDS, OBJ, Layout, encode_nogoods,
                                       row_to_answer, vcol)
from reasoning.columnar.state import Pattern


def finish(eng, k: int, P: Pattern, df, tau: int, ng_empty: bool = False):
    """Rows of template k with pattern P from (binding, ev, ng): drop invalid timestamps
    (negative, or below a pre-processing bound), compute exp/dlp/unb, keep those whose
    positive hypotheses are all potentially future w.r.t. τ (step 1), reduce nogoods."""
    B = eng.B
    tp = eng.templates[k]
    sch = eng._schema(k, P)
    if df is None or B.is_empty(df):
        return None
    if tp.head.tvar is None and tp.head.toff < 0:
        return None
    if any(lp.tvar is None and lp.toff < 0 for lp in tp.lits):
        return None
    # every bound time term must be natural: per time variable v >= max(-offset), and
    # the pre-processing lower bounds (002 Example 13's "invalid timestamps")
    conds = [B.col(vcol(v)) >= B.lit(lo, INT) for v, lo in sorted(time_lows(tp).items())
             if v in P]
    conds += [domain_cond(B, B.col(vcol(v)), d) for v, d in tp.periodic if v in P]
    # δ of each positive literal with a bound time, under the pattern
    got = fused_deadlines(eng, tp, P, df)
    dexprs: dict = {}
    tmp: list = []
    exps = []
    for j in (tp.pos if got is None else ()):
        lp = tp.lits[j]
        if lp.tvar is not None and lp.tvar not in P:
            continue
        sides = []
        for isvar, x in lp.args:
            if not isvar:
                sides.append((CONST, x))
            elif x in P:
                sides.append((COL, vcol(x)))
            else:
                sides.append((CONST, None))
        key = (lp.pred, tuple(sides))
        dexpr = dexprs.get(key)
        if dexpr is None:
            df, dexpr, t2 = eng.dplans[lp.pred].expr_static(B, df, sides, str(len(dexprs)))
            dexprs[key] = dexpr
            tmp.extend(t2)
        e = eng._texpr(lp) + dexpr
        exps.append(B.when(B.has_bit(B.col("ev"), j), B.null(INT), e))
    unbs = [~B.has_bit(B.col("ev"), j) for j, lp in enumerate(tp.lits)
            if lp.tvar is not None and lp.tvar not in P]
    xs = [f"_x{i}" for i in range(len(exps))] if len(exps) > 1 else []
    if xs:  # each literal's deadline once (exp and dlp both read them)
        df = B.with_columns(df, dict(zip(xs, exps)))
        exps = [B.col(x) for x in xs]
    more = {"unb": B.any_of(unbs) if unbs else B.lit(False, BOOL), "born": B.lit(tau, INT)}
    if got is None:
        df = B.with_columns(df, {"exp": B.least(exps), "dlp": B.greatest(exps), **more})
    else:
        df, exps = B.with_columns(got[0], more), got[1]
    if xs:  # before reduce_nogoods, whose Python rows are typed by column name
        df = B.drop(df, xs)
    if exps:
        conds.append(B.is_null(B.col("exp")) | (B.col("exp") > B.lit(tau, INT)))
    if conds:
        df = B.filter(df, B.all_of(conds))
    if not ng_empty:
        df = reduce_nogoods(eng, k, P, df)
    if df is None or B.is_empty(df):
        return None
    return eng._sel(df, list(sch))


def time_lows(tp) -> dict:
    """Each time variable's least value in a template's answers: at least minus every
    offset it appears with (natural times), and the pre-processing lower bounds."""
    lows: dict = {}
    for t in [tp.head] + list(tp.lits):
        if t.tvar is not None:
            lows[t.tvar] = max(lows.get(t.tvar, -t.toff), -t.toff)
    for v, kmin in tp.time_min:
        lows[v] = max(lows.get(v, kmin), kmin)
    return lows


def fused_deadlines(eng, tp, P: Pattern, df):
    """(df with exp and dlp, whether any literal has one) from the backend's fused
    kernel (ArraysBackend.deadlines), or None: finish then builds them as
    expressions, the same values."""
    fused = getattr(eng.B, "deadlines", None)
    if fused is None:
        return None
    lits = []
    for j in tp.pos:
        lp = tp.lits[j]
        if lp.tvar is not None and lp.tvar not in P:
            continue
        sides = [(CONST, x) if not isvar else ((COL, vcol(x)) if x in P else (CONST, None))
                 for isvar, x in lp.args]
        spec = eng.dplans[lp.pred].lookup_spec(eng.B, sides)
        if spec is None:
            return None
        lits.append((j, None if lp.tvar is None else vcol(lp.tvar), lp.toff, spec))
    out = fused(df, lits)
    return None if out is None else (out, bool(lits))


def reduce_nogoods(eng, k: int, P: Pattern, df):
    """patterns.reduce_nogoods on every row: a nogood satisfied by the binding is dropped,
    one violated by it drops the row, the rest keep their unbound variables."""
    B = eng.B
    lay = eng.layouts[k]
    objs = [x for x in sorted(P) if lay.kinds[x] == OBJ]
    # a time value's nogood is always of the `*` form (layout.encode_nogood)
    times = eng.multi_possible and any(lay.kinds[x] == INT for x in P)
    if not (objs or times) or (B.cheap_checks and not B.any_nonempty_list(df, "ng")):
        return df
    has = B.list_len(B.col("ng")) > B.lit(0, INT)
    rest = B.filter(df, has)
    plain = B.filter(df, ~has)
    if eng.multi_possible:
        multi_flag = B.list_any_prefix(B.col("ng"), "*")
        multi = B.filter(rest, multi_flag)
        rest = B.filter(rest, ~multi_flag)
    else:
        multi = None
    out = [plain]
    if not objs:
        out.append(rest)
    elif not B.is_empty(rest):
        viol = []
        ng = B.col("ng")
        for x in objs:
            v = B.col(vcol(x))
            viol.append(B.list_contains(ng, B.concat_str([B.lit(f"{x}:", OBJ), v])))
            ng = B.list_drop_prefix(ng, f"{x}:")
        rest = B.with_columns(rest, {"_viol": B.any_of(viol), "ng": ng})
        out.append(B.drop(B.filter(rest, ~B.col("_viol")), ["_viol"]))
    if multi is not None and B.exists(multi):
        rows = []
        for r in B.rows(multi):
            a = row_to_answer(lay, r)
            red = patterns.reduce_nogoods(a.ng, a.b)
            if red is None:
                continue
            r["ng"] = encode_nogoods(red)
            rows.append(r)
        if rows:
            out.append(B.from_rows(rows, {c: _kind(lay, c, rows)
                                          for c in B.columns(multi)}))
    return B.concat(out)


def _kind(lay: Layout, c: str, rows: Optional[list] = None) -> str:
    """The kind of column c of a template's table; a working column (an expiry term, a
    delay) by its values in rows (an int column typed as an object one made its numbers
    strings, or on the arrays backend interned them as strings)."""
    if c.startswith("v") and c[1:].isdigit():
        return lay.kinds[int(c[1:])]
    if c in META_KINDS or rows is None:
        return META_KINDS.get(c, OBJ)
    v = next((r[c] for r in rows if r.get(c) is not None), None)
    return BOOL if isinstance(v, bool) else INT if isinstance(v, int) else OBJ


# above every value a time variable takes (times below 2^60, stream.MAX_TIME, plus program
# offsets of at most 18 digits): an lrp's numbers past it (an offset, period or until made
# by the CRT from two large periods) do not fit the plans' 64-bit integers, nor matter
BEYOND = 1 << 62


def lrp_cond(B, e, a: Lrp):
    """e ∈ a as a backend condition (003 §2's lrp with its constraints)."""
    if a.offset >= BEYOND:
        return B.lit(False, BOOL)
    cond = e >= B.lit(a.offset, INT)
    if a.until is not None and a.until < BEYOND:
        cond = cond & (e <= B.lit(a.until, INT))
    if a.period == 0 or a.period >= BEYOND:  # only its first time is reachable
        return cond & (e == B.lit(a.offset, INT))
    if a.period > 1:
        cond = cond & (B.pmod(e - B.lit(a.offset, INT), a.period) == B.lit(0, INT))
    return cond


def domain_cond(B, e, d: TimeDomain):
    """e in the time domain d (periodic.py): in its allowed lrp and in none excluded."""
    conds = [] if d.allowed is None else [lrp_cond(B, e, d.allowed)]
    conds += [~lrp_cond(B, e, x) for x in d.excluded]
    return B.all_of(conds) if conds else B.lit(True, BOOL)
