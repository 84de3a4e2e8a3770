"""Steps 3(b)–(c) of Algorithm 1 (002 §6): a negated hypothesis refuted or moved to evidence."""
from __future__ import annotations

from reasoning.semantics.patterns import LitPattern
from reasoning.columnar.fallback import refine_rows
from reasoning.columnar.finish import finish
from reasoning.columnar.layout import BOOL, INT, OBJ, vcol
from reasoning.columnar.state import Pattern
from reasoning.columnar.unify import cover_spec


def refine(eng, k: int, j: int, P: Pattern, R, L: list, tau: int):
    """Steps 3(b)-(c) for negated literal j of template k on the refs R (partition P, ¬h
    open at this wave): (unchanged refs, [(pattern, new pieces)])."""
    B = eng.B
    tp = eng.templates[k]
    lp = tp.lits[j]
    sch = list(eng._schema(k, P))
    hvars = {x for isvar, x in lp.args if isvar}
    h_bound = Pattern(hvars & P)
    unb = sorted(hvars - P)
    R = B.with_row_id(R, "_rid")
    R = B.with_columns(R, {"_ht": eng._texpr(lp)})
    complex_ = []
    if len(unb) >= 2:
        complex_.append(R)
        R = None
    elif unb and eng.multi_possible:  # a nogood on several variables (`*`)
        mflag = B.list_any_prefix(B.col("ng"), "*")
        mx = B.filter(R, mflag)
        if not B.is_empty(mx):
            complex_.append(mx)
            R = B.filter(R, ~mflag)
    kept = None
    out: list = []
    if R is not None and not B.is_empty(R):
        kept, out = refine_simple(eng, k, j, P, R, L, tau, h_bound, unb, complex_)
    if complex_:
        Cx = B.concat([eng._sel(f, sch) for f in complex_])
        kept_c, new_c = refine_rows(eng, k, j, P, Cx, tau)
        if kept_c is not None:
            kept = kept_c if kept is None else B.concat([kept, kept_c])
        out.extend(new_c)
    return kept, out


def refine_simple(eng, k, j, P, R, L, tau, h_bound, unb, complex_):
    """Steps 3(b)-(c) on the refs R whose ¬h has at most one unbound variable, by joins
    with the covers; refs the covers cannot decide (a cover through an answer with
    nogoods, or approximate) go to complex_ for the row engine's algebra."""
    B = eng.B
    tp = eng.templates[k]
    lp = tp.lits[j]
    sch = list(eng._schema(k, P))
    bit = 1 << j
    Fl, Tr = B.lit(False, BOOL), B.lit(True, BOOL)
    parts, approx = covers(eng, R, lp, h_bound, L)
    C = B.concat(parts) if parts else None
    maybe = any(ng for _, _, _, ng in L) or approx
    if C is not None and not B.is_empty(C):
        if maybe and any_flag(eng, C):
            bad = B.filter(C, B.col("lng") | B.col("approx"))
            ids = B.unique(eng._sel(bad, ["_rid"]))
            complex_.append(B.join(R, ids, ["_rid"], ["_rid"], how="semi"))
            R = B.join(R, ids, ["_rid"], ["_rid"], how="anti")
            C = B.join(C, ids, ["_rid"], ["_rid"], how="anti")
            if B.is_empty(R):
                return None, []
    else:
        C = None
    future = B.col("_ht") > B.lit(tau, INT)
    out: list = []
    if not unb:
        # h is ground: every cover is all of h
        if C is None or B.is_empty(C):
            R = B.with_columns(R, {"_dt": Fl, "_at": Fl})
        else:
            mark = getattr(B, "mark_rids", None)  # (the arrays backend: no group-by)
            marked = mark(R, C, {"_dt": "ldef", "_at": None}) if mark else None
            if marked is not None:
                R = marked
            else:
                agg = B.group_agg(C, ["_rid"], {"_dt": B.agg_any(B.col("ldef")),
                                                "_at": B.agg_any(Tr)}, scalar=True)
                R = B.join(R, agg, ["_rid"], ["_rid"], how="left")
                R = B.with_columns(R, {"_dt": B.coalesce([B.col("_dt"), Fl]),
                                       "_at": B.coalesce([B.col("_at"), Fl])})
        kept = eng._sel(B.filter(R, (~B.col("_dt")) & (future | B.col("_at"))), sch)
        go = B.filter(R, (~B.col("_dt")) & (~future) & (~B.col("_at")))
        if not B.is_empty(go):
            # 3(c): no answer of p_t unifies: ¬h moves to E (binding unchanged)
            out.append((P, B.select(go, [B.alias(B.bit_or(B.col("ev"), B.lit(bit, INT)),
                                                 "ev") if c == "ev" else
                                         (B.alias(B.lit(tau, INT), "born") if c == "born"
                                          else B.col(c)) for c in sch])))
        return kept, out
    x = unb[0]
    pref = f"{x}:"
    if C is not None and not B.is_empty(C):
        agg = B.group_agg(C, ["_rid"], {
            "_dt": B.agg_any(B.col("ldef") & B.is_null(B.col("eqv"))),
            "_at": B.agg_any(B.is_null(B.col("eqv"))),
            "_dv": B.agg_distinct(B.when(B.col("ldef"), B.col("eqv"), B.null(OBJ))),
            "_av": B.agg_distinct(B.col("eqv")),
        })
        R = B.join(R, agg, ["_rid"], ["_rid"], how="left")
        R = B.with_columns(R, {
            "_dt": B.coalesce([B.col("_dt"), Fl]), "_at": B.coalesce([B.col("_at"), Fl]),
            "_dv": B.coalesce([B.col("_dv"), B.empty_list()]),
            "_av": B.coalesce([B.col("_av"), B.empty_list()])})
    else:
        R = B.with_columns(R, {"_dt": Fl, "_at": Fl, "_dv": B.empty_list(),
                               "_av": B.empty_list()})
    nodef = B.list_len(B.col("_dv")) == B.lit(0, INT)
    same = (~B.col("_dt")) & nodef & (future | B.col("_at"))
    R = B.with_columns(R, {"_same": same})
    kept = eng._sel(B.filter(R, B.col("_same")), sch)
    ch = B.filter(R, (~B.col("_same")) & (~B.col("_dt")))
    if B.is_empty(ch):
        return kept, out
    pieces = []
    stay = B.filter(ch, future | B.col("_at"))
    if not B.is_empty(stay):  # 3(b) only (t > τ), or every instance still provable:
        # the instances a definite answer proves are refuted, X ∉ def values
        # (an answer whose X ∉ … holds them all already is unchanged: it keeps its
        # birth tick, as the row engine keeps the answer itself — exact.py reads it)
        stay = B.with_columns(stay, {"_ng1": union_prefixed(eng, B.col("ng"), B.col("_dv"),
                                                            pref)})
        ng1 = B.col("_ng1")  # (a column: the expression is not evaluated twice)
        born = B.when(B.list_len(ng1) == B.list_len(B.col("ng")), B.col("born"),
                      B.lit(tau, INT))
        pieces.append(B.select(stay, [B.alias(ng1, "ng") if c == "ng" else
                                      (B.alias(born, "born") if c == "born"
                                       else B.col(c)) for c in sch]))
    go = B.filter(ch, (~future) & (~B.col("_at")))
    if not B.is_empty(go):
        # 3(c): outside every cover ¬h moves to E; inside, X is bound to each value.
        # _dv ⊆ _av, so ng ∪ X:_av is _ng1 ∪ X:_av without sorting _ng1's values twice
        # (the schematic answer of a 10⁶-fact tick has 6 · 10⁵ of them)
        pieces.append(B.select(go, [
            B.alias(union_prefixed(eng, B.col("ng"), B.col("_av"), pref), "ng")
            if c == "ng" else
            (B.alias(B.bit_or(B.col("ev"), B.lit(bit, INT)), "ev") if c == "ev" else
             (B.alias(B.lit(tau, INT), "born") if c == "born" else B.col(c)))
            for c in sch]))
        G = B.filter(go, B.list_len(B.col("_av")) > B.lit(0, INT))
        if not B.is_empty(G):
            # X bound to each value of its covers (_av) that is neither a definite
            # answer's (_dv) nor excluded by the row's nogoods — taken from the covers'
            # rows, not by exploding the lists (_av holds 10⁴-10⁵ devices' names)
            base = eng._keys(P)
            rid = ["_rid"]
            CG = B.join(B.filter(C, B.not_null(B.col("eqv"))), B.select(G, [B.col("_rid")]),
                        rid, rid, how="semi")
            vals = B.unique(B.select(CG, [B.col("_rid"), B.alias(B.col("eqv"), "_c")]))
            exc = [B.select(B.filter(CG, B.col("ldef")),
                            [B.col("_rid"), B.alias(B.col("eqv"), "_c")])]
            if not B.cheap_checks or B.any_nonempty_list(G, "ng"):
                mine = B.explode(B.select(G, [B.col("_rid"), B.alias(
                    B.list_strip_prefix(B.col("ng"), pref), "_c")]), "_c")
                exc.append(B.filter(mine, B.not_null(B.col("_c"))))
            exc = B.concat(exc)
            if not B.is_empty(exc):
                vals = B.join(vals, exc, ["_rid", "_c"], ["_rid", "_c"], how="anti")
            ngk = B.list_norm(B.list_drop_prefix(B.col("ng"), pref))  # other variables'
            ins = B.join(vals, B.select(G, [B.col(c) for c in ["_rid"] + base
                                            if c != "ng"] + [B.alias(ngk, "ng")]),
                         rid, rid, how="inner")
            P2 = P | {x}
            ins = B.select(ins, [B.alias(B.col("_c"), vcol(c_)) if c_ == x else
                                 B.col(vcol(c_)) for c_ in sorted(P2)] +
                           [B.col("ev"), B.col("ng")])
            out.append((P2, finish(eng, k, P2, ins, tau)))
    if pieces:
        out.append((P, B.concat(pieces)))
    return kept, out


def head_time(eng, k: int, l_bound) -> "tuple | None":
    """Where the time of p's answer (template k, head variables l_bound bound) is read
    from by a cover: a constant, the `lt` column, or nowhere (None: unbound)."""
    head = eng.templates[k].head
    if head.tvar is None:
        return ("C", head.toff)
    return ("L", "lt") if head.tvar in l_bound else None


def cover_join(eng, spec, R, L) -> tuple:
    """A cover's conditions (unify.cover_spec) between answers R and p's answers L, as
    (R filtered, L filtered, R's join keys, L's join keys): an equality across the two
    sides is a key pair, one within a side a filter of that side."""
    B = eng.B
    Rf, Lf = R, L
    lkeys, rkeys = [], []
    for a, b in spec.conds:
        if a[0] == "L" and b[0] == "R":
            a, b = b, a
        if a[0] == "R" and b[0] == "L":
            lkeys.append(a[1])
            rkeys.append(b[1])
        elif a[0] == "R" or b[0] == "R":
            Rf = B.filter(Rf, eng._side_expr(a) == eng._side_expr(b))
        else:
            Lf = B.filter(Lf, eng._side_expr(a) == eng._side_expr(b))
    return Rf, Lf, lkeys, rkeys


def covers(eng, R, lp: LitPattern, h_bound: Pattern, L: list):
    """The covers (regions.cover_of) of each ref's negated literal by the answers of L,
    as rows (_rid, ldef, lng, approx, eqv); eqv is the value the single unbound variable
    must take (null: every instance is covered); and whether any cover is approximate."""
    B = eng.B
    parts = []
    approx = False
    unb = sorted({x for isvar, x in lp.args if isvar} - h_bound)
    for k2, l_bound, F, _ in L:
        head = eng.templates[k2].head
        l_time = head_time(eng, k2, l_bound)
        spec = cover_spec(lp, h_bound, head, l_bound, ("R", "_ht"), l_time)
        if spec is None:
            continue
        approx = approx or spec.approx
        Rf, Lf, lkeys, rkeys = cover_join(eng, spec, R, F)
        if B.is_empty(Rf) or B.is_empty(Lf):
            continue
        side = spec.eqs.get(unb[0]) if unb else None
        floor = l_time is None and "lmin" in B.columns(Lf)  # "past" (exact.py)
        lcols = sorted(set(rkeys) | ({side[1]} if side and side[0] == "L" else set())
                       | {"ldef", "lng"} | ({"lmin"} if floor else set()))
        Lsel = B.select(Lf, [B.alias(B.col(c), "_L_" + c) for c in lcols])
        rcols = sorted({"_rid"} | set(lkeys) | ({side[1]} if side and side[0] == "R"
                                                else set()) | ({"_ht"} if floor else set()))
        J = B.join(eng._sel(Rf, rcols), Lsel, lkeys, ["_L_" + c for c in rkeys],
                   how="inner")
        if floor:
            J = B.filter(J, B.is_null(B.col("_L_lmin")) |
                         (B.col("_ht") >= B.col("_L_lmin")))
        if side is None:
            eqv = B.null(OBJ)
        elif side[0] == "L":
            eqv = B.col("_L_" + side[1])
        else:
            eqv = eng._side_expr(side)
        J = B.select(J, [B.col("_rid"), B.alias(B.col("_L_ldef"), "ldef"),
                         B.alias(B.col("_L_lng"), "lng"),
                         B.alias(B.lit(spec.approx, BOOL), "approx"),
                         B.alias(eqv, "eqv")])
        parts.append(J)
    return parts, approx


def union_prefixed(eng, ng, vals, prefix: str):
    """ng ∪ {prefix + v : v ∈ vals}, normalised (step 3(b)-(c)'s new nogoods X:c)."""
    B = eng.B
    fused = getattr(B, "list_union_prefixed", None)
    if fused is not None:
        return fused(ng, vals, prefix)
    return B.list_norm(B.list_concat(ng, B.list_prefix(vals, prefix)))


def any_flag(eng, C) -> bool:
    """Whether a cover goes through an answer with nogoods, or is approximate."""
    B = eng.B
    return bool(B.col_max(B.select(C, [B.alias(B.col("lng") | B.col("approx"), "_f")]),
                          "_f"))
