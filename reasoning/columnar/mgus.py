"""Local mgus (002 Def. 16) as joins of S_τ's rows with facts: steps 1(a)–(b) of Algorithm 1."""
from __future__ import annotations

from typing import Optional

from reasoning.semantics.patterns import LitPattern
from reasoning.columnar.layout import BOOL, INT, OBJ, acol, vcol
from reasoning.columnar.state import Pattern
from reasoning.columnar.unify import ground_under, literal_vars, match_spec


def fact_filter(eng, lp: LitPattern, F, spec):
    """The facts F that can match lp: its constants, and its repeated variables equal."""
    B = eng.B
    for fc, c in spec.fact_eq_const:
        F = B.filter(F, B.col(fc) == (B.lit(c, INT) if fc == "t" else B.lit(c, OBJ)))
    for a, b in spec.fact_eq_cols:
        F = B.filter(F, B.col(a) == B.col(b))
    return F


def match(eng, df, lp: LitPattern, P: Pattern, F):
    """Local-mgu extension (LitPattern.match) of every row by the facts F of lp's
    predicate: an inner join on the bound arguments, binding the unbound ones."""
    B = eng.B
    spec = match_spec(lp, P)
    F = fact_filter(eng, lp, F, spec)
    if B.is_empty(F):
        return None
    lkeys = [B.col(vc) for vc, _ in spec.keys]
    src = [fc for _, fc in spec.keys]
    if spec.frame_time_key is not None:
        x, off = spec.frame_time_key
        lkeys.append(B.col(vcol(x)) + B.lit(off, INT))
        src.append("t")
    names = [f"_mk{i}" for i in range(len(src))]
    binds = sorted(spec.binds.items())
    items = [B.alias(B.col(c), n) for c, n in zip(src, names)]
    items += [B.alias(B.col(fc) + B.lit(off, INT) if fc == "t" else B.col(fc), vcol(x))
              for x, (fc, off) in binds]
    F = B.select(F, items)
    J = B.join(df, F, lkeys, names, how="inner")
    return B.drop(J, names)


def prep(eng, cache: dict, lp: LitPattern, F, tag: str):
    """The facts F restricted to lp's constants, keyed for an equi-join: (frame with key
    columns _k<tag>_<i> and a marker _m<tag>, left key expressions)."""
    B = eng.B
    lkeys, src = [], []
    sig = []
    for i, (isvar, x) in enumerate(lp.args):
        if isvar:
            lkeys.append(B.col(vcol(x)))
            src.append(acol(i))
        else:
            sig.append((acol(i), x))
    if lp.tvar is None:
        sig.append(("t", lp.toff))
    else:
        lkeys.append(eng._texpr(lp))
        src.append("t")
    base_key = (id(F), tuple(sig))
    Fc = cache.get(base_key)
    if Fc is None:
        Fc = F
        for c, v in sig:
            Fc = B.filter(Fc, B.col(c) == (B.lit(v, INT) if c == "t" else B.lit(v, OBJ)))
        cache[base_key] = Fc
    names = [f"_k{tag}_{i}" for i in range(len(src))]
    R = B.select(Fc, [B.alias(B.col(c), n) for c, n in zip(src, names)] +
                 [B.alias(B.lit(True, BOOL), f"_m{tag}")])
    return R, lkeys, names


def present_all(eng, df, k: int, P: Pattern, present: dict, skip: Optional[int] = None,
                cache: Optional[dict] = None):
    """E' = Hσ ∩ (D|τ ∪ W): set the bit of every positive literal that is ground under P
    and present (one left join per literal — on the arrays backend a membership mark —,
    one projection for all)."""
    B = eng.B
    tp = eng.templates[k]
    if B.is_empty(df):
        return df
    cache = {} if cache is None else cache
    cols = B.columns(df)
    ev = B.col("ev")
    for j in tp.pos:
        lp = tp.lits[j]
        if j == skip or not ground_under(lp, P):
            continue
        F = present.get(lp.pred)
        if F is None or B.is_empty(F):
            continue
        R, lkeys, names = prep(eng, cache, lp, F, str(j))
        if not lkeys:
            if B.exists(R):
                ev = B.set_bit(ev, j)
            continue
        if B.cheap_checks and B.is_empty(R):
            continue  # no fact with the literal's constants: nothing to mark
        df, hit = marked(eng, df, R, lkeys, names, str(j))
        # one OR per literal: `when(m, ev | bit, ev)` nested would repeat ev in both
        # branches, an expression (and Spark SQL text) of 2^m nodes — 8 ms a select at m = 8
        ev = B.bit_or(ev, B.when(hit, B.lit(1 << j, INT), B.lit(0, INT)))
    return B.select(df, [B.alias(ev, "ev") if c == "ev" else B.col(c) for c in cols])


def marked(eng, df, R, lkeys: list, names: list, tag: str):
    """(df with a column telling whether its row's instance is among prep's facts R of
    `tag`, that condition): the backend's mark where it has one (R's keys are unique —
    facts —: no gather), else a left join with R's marker column."""
    B = eng.B
    mark = getattr(B, "mark_matches", None)
    if mark is not None:
        return mark(df, R, lkeys, names, f"_m{tag}"), B.col(f"_m{tag}")
    return B.join(df, R, lkeys, names, how="left"), B.not_null(B.col(f"_m{tag}"))


def local_mgus(eng, k: int, df, P: Pattern, skip: Optional[int], lookup: dict,
               present: dict) -> list:
    """Local mgus (Def. 16) of every row's positive hypotheses against `lookup` (each
    unmatched literal either joins a fact or stays open), then E' = Hσ ∩ present:
    [(pattern, rows)]."""
    B = eng.B
    tp = eng.templates[k]
    frames = [(df, P)]
    for j in tp.pos:
        if j == skip:
            continue
        lp = tp.lits[j]
        nxt = []
        for G, bs in frames:
            if ground_under(lp, bs):
                nxt.append((G, bs))
                continue
            F = lookup.get(lp.pred)
            if F is not None and not B.is_empty(F) and not B.is_empty(G):
                M = match(eng, G, lp, bs, F)
                if M is not None and not B.is_empty(M):
                    nxt.append((M, bs | literal_vars(lp)))
            nxt.append((G, bs))
        frames = by_pattern(eng, nxt)
    cache: dict = {}
    return [(bs, present_all(eng, G, k, bs, present, skip, cache)) for G, bs in frames]


def by_pattern(eng, frames: list) -> list:
    """Frames of the same pattern of bound variables as one (their union): different
    subsets of matched literals often bind the same variables, and each frame costs the
    joins of every later literal — without this a template of m positive literals
    carries up to 2^m frames through the local mgus (a 1.8× faster tick on a small
    program with many templates, where the row engine was still 50× faster)."""
    B = eng.B
    groups: dict = {}
    for G, bs in frames:
        groups.setdefault(bs, []).append(G)
    return [(Gs[0] if len(Gs) == 1 else B.concat(Gs), bs) for bs, Gs in groups.items()]


def seed(eng, k: int, i: int, F, extra: Optional[dict] = None):
    """Bindings of template k from the facts F matching literal i: (pattern, rows with
    the pattern's columns, ev = {i}, ng = the template's nogoods)."""
    P, V = seed_bindings(eng, eng.templates[k].lits[i], F)
    if P is None:
        return None, None
    B = eng.B
    V = B.with_columns(V, {"ev": B.lit(1 << i, INT), "ng": B.str_list(eng.tpl_ng[k])})
    return P, B.select_cols(V, [vcol(x) for x in sorted(P)] + ["ev", "ng"])


def seed_bindings(eng, lp: LitPattern, F):
    """The bindings the facts F give literal lp's variables: (pattern, rows of the
    pattern's columns — and of a marker `_seed` when it binds none: a Polars frame of no
    column has no row) or (None, None) — once a tick per literal shape (the unfolded
    templates of a window program share most of their literals)."""
    B = eng.B
    key = (id(F), lp.pred, lp.args, lp.tvar, lp.toff)
    got = eng.seed_cache.get(key)
    if got is None:
        spec = match_spec(lp, Pattern())
        Ff = fact_filter(eng, lp, F, spec)
        if B.is_empty(Ff):
            got = (None, None, F)
        else:
            items = []
            for x in sorted(spec.binds):
                fc, off = spec.binds[x]
                e = B.col(fc) + B.lit(off, INT) if fc == "t" else B.col(fc)
                items.append(B.alias(e, vcol(x)))
            if not items:
                items.append(B.alias(B.lit(True, BOOL), "_seed"))
            got = (Pattern(spec.binds), B.select(Ff, items), F)
        eng.seed_cache[key] = got  # (F kept: its id stays its own this tick)
    return got[0], got[1]
