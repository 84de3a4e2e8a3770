"""Steps 1(a)–(b) of Algorithm 1 (002 §6): the facts of D|τ seed and wake answers; δ-expiry."""
from __future__ import annotations

from typing import Optional

from reasoning.semantics.patterns import ETemplate
from reasoning.columnar.finish import finish
from reasoning.columnar.layout import BOOL, INT, OBJ, acol, row_to_answer, vcol
from reasoning.columnar.mgus import local_mgus, prep, present_all, seed, seed_bindings
from reasoning.columnar.state import Pattern, add
from reasoning.columnar.step1_family import step1_family, tagged
from reasoning.columnar.unify import ground_under


def step1(eng, D: dict, present: dict, window: dict, tau: int) -> None:
    """Steps 1(b) and 1(a) for every template: the waiting answers and the slice's facts
    against D|τ (`D`), `present` = D|τ ∪ W and `window` = W, by predicate; the new rows
    go into S_τ once every template is done."""
    B = eng.B
    new: dict = {}
    eng.seed_cache = {}  # (mgus.seed_bindings: keyed by the slice's frames, this tick only)
    together = set()
    for fam in eng.families:  # full-seed templates of one layout: their ground rows at once
        step1_family(eng, fam, D, window, tau,
                     lambda eng, k, P, df: put(eng, new, k, P, df))
        together.update(fam.tids)
    for k in range(len(eng.templates)):
        if k in together:
            if len(eng.S[k]) > 1 or eng.all_vars[k] not in eng.S[k]:
                step1b(eng, k, D, present, tau, new, skip=eng.all_vars[k])
        elif eng.full_seeds[k]:
            step1_full(eng, k, D, present, window, tau, new)
        else:
            step1b(eng, k, D, present, tau, new)
            for i in eng.templates[k].pos:
                F = D.get(eng.templates[k].lits[i].pred)
                if F is not None:
                    step1a(eng, k, i, F, present, tau, new)
    eng.seed_cache = {}  # (the seeds are not kept past step 1: a slice's size each)
    for (k, P), frames in new.items():
        add(eng, k, P, B.concat(frames),
            fresh_only=eng.full_seeds[k] and P == eng.all_vars[k])


def put(eng, new: dict, k: int, P: Pattern, df) -> None:
    """Collect rows for partition (k, P) of S_τ, added after every template's step 1."""
    if df is not None and not eng.B.is_empty(df):
        new.setdefault((k, P), []).append(df)


def step1a(eng, k: int, i: int, F, present: dict, tau: int, new: dict) -> None:
    """Step 1(a): P_Q's template k seeded by the facts F of literal i's predicate."""
    P, S = seed(eng, k, i, F)
    if S is None:
        return
    for P2, G in local_mgus(eng, k, S, P, i, present, present):
        got = finish(eng, k, P2, G, tau)
        put(eng, new, k, P2, got)
        if eng.exact.nlits[k] and got is not None:
            # answers made from a fact of D|τ ("past": seeded, exact.py)
            lay = eng.layouts[k]
            eng.seeded.update(row_to_answer(lay, r) for r in eng.B.rows(got))


def flags(eng, k: int, P: Pattern, A, D: dict, cache: dict):
    """Step 1(b)'s wake-up of the rows of partition (k, P): hit (a ground positive
    hypothesis arrived) and touched (a non-ground one may match a fact of D|τ) as
    expressions over marker columns joined to A."""
    B = eng.B
    tp = eng.templates[k]
    hits, touches = [], []
    for j in tp.pos:
        lp = tp.lits[j]
        F = D.get(lp.pred)
        if F is None:
            continue
        notev = ~B.has_bit(B.col("ev"), j)
        if ground_under(lp, P):
            R, lkeys, names = prep(eng, cache, lp, F, f"h{j}")
            if lkeys:
                A = B.join(A, R, lkeys, names, how="left")
                hits.append(notev & B.not_null(B.col(f"_mh{j}")))
            elif B.exists(R):
                hits.append(notev)
        elif lp.tvar is None:
            if lp.toff in set(B.values(F, "t")):
                touches.append(notev)
        elif lp.tvar in P:
            key = ("times", id(F))
            Ft = cache.get(key)
            if Ft is None:
                Ft = cache[key] = B.unique(B.select(F, [B.alias(B.col("t"), "_kt")]))
            R = B.select(Ft, [B.alias(B.col("_kt"), f"_kt{j}"),
                              B.alias(B.lit(True, BOOL), f"_mw{j}")])
            A = B.join(A, R, [eng._texpr(lp)], [f"_kt{j}"], how="left")
            touches.append(notev & B.not_null(B.col(f"_mw{j}")))
        elif all(x in P for isvar, x in lp.args if isvar):
            # only the time variable unbound: touched by a fact with its arguments (the
            # row engine's (pred, args) index) — not by every fact of the predicate, or
            # an untouched row would come back new at τ
            A, met = _join_args(eng, cache, A, lp, F, j)
            touches.append(notev & met)
        else:
            touches.append(notev)
    return A, hits, touches


def _join_args(eng, cache: dict, A, lp, F, j: int):
    """(A, the condition that some fact of F has lp's arguments under the row's binding):
    lp's time variable unbound; a left join with F's distinct argument tuples (once a
    tick), or whether F has a fact of lp's constants when lp has no variable."""
    B = eng.B
    sig = tuple((i, x) for i, (isvar, x) in enumerate(lp.args) if not isvar)
    var = [(i, x) for i, (isvar, x) in enumerate(lp.args) if isvar]
    key = ("args", id(F), sig, tuple(i for i, _ in var))
    R = cache.get(key)
    if R is None:
        Fc = F
        for i, x in sig:
            Fc = B.filter(Fc, B.col(acol(i)) == B.lit(x, OBJ))
        if not var:
            R = cache[key] = B.exists(Fc)
        else:
            R = cache[key] = B.unique(B.select(Fc, [B.col(acol(i)) for i, _ in var]))
    if not var:
        return A, B.lit(bool(R), BOOL)
    R = B.select(R, [B.alias(B.col(acol(i)), f"_ka{j}_{i}") for i, _ in var] +
                 [B.alias(B.lit(True, BOOL), f"_ma{j}")])
    return B.join(A, R, [B.col(vcol(x)) for _, x in var], [f"_ka{j}_{i}" for i, _ in var],
                  how="left"), B.not_null(B.col(f"_ma{j}"))


def pristine(eng, k: int):
    """Rows as step 2 made them (no evidence, the template's own nogoods): a fact they
    meet seeds its own answer by step 1(a), so step 1(b) leaves them as they are."""
    B = eng.B
    if eng.tpl_ng[k]:
        return (B.col("ev") == B.lit(0, INT)) & (
            B.list_join(B.col("ng"), "\u0000") == B.lit("\u0000".join(eng.tpl_ng[k]), OBJ))
    return (B.col("ev") == B.lit(0, INT)) & (B.list_len(B.col("ng")) == B.lit(0, INT))


def step1b(eng, k: int, D: dict, present: dict, tau: int, new: dict,
           skip: Optional[Pattern] = None) -> None:
    """Step 1(b): answers of S_{τ-1} touched by D|τ evolve by local mgus against D|τ;
    untouched ones stay unless a positive hypothesis expired (`exp` ≤ τ)."""
    B = eng.B
    live = B.is_null(B.col("exp")) | (B.col("exp") > B.lit(tau, INT))
    cache: dict = {}
    for P in list(eng.S[k]):
        if P == skip:
            continue
        A = eng.S[k][P]
        if B.is_empty(A):
            continue
        if not eng.templates[k].pos:
            continue  # no positive hypothesis: nothing arrives, nothing expires
        A, hits, touches = flags(eng, k, P, A, D, cache)
        if not hits and not touches:
            eng.S[k][P] = B.filter(A, live)
            continue
        hit = B.any_of(hits) if hits else B.lit(False, BOOL)
        act = hit | (B.any_of(touches) if touches else B.lit(False, BOOL))
        A = B.with_columns(A, {"_hit": hit, "_act": act, "_pri": pristine(eng, k),
                               "_live": live})
        keep = ((~B.col("_act")) & B.col("_live")) | (
            B.col("_pri") & (~B.col("_hit")) & B.col("_live"))
        evolve = B.col("_act") & (~B.col("_pri"))
        A = B.materialize(A)
        E = B.materialize(B.filter(A, evolve))
        eng.S[k][P] = B.materialize(eng._sel(B.filter(A, keep), list(eng._schema(k, P))))
        if B.is_empty(E):
            continue
        E = eng._sel(E, eng._keys(P))
        for P2, M in local_mgus(eng, k, E, P, None, D, present):
            put(eng, new, k, P2, finish(eng, k, P2, M, tau))


def step1_full(eng, k: int, D: dict, present: dict, window: dict, tau: int,
               new: dict) -> None:
    """Steps 1(a) and 1(b) for a template whose every positive literal binds all its
    variables: the facts of D|τ give the seeded bindings (one table for the tick); the
    ground answers they hit are exactly those with a seeded binding and an open seeded
    literal.  Non-ground partitions (from steps 2 and 3) take the general 1(b)."""
    B = eng.B
    tp = eng.templates[k]
    G = eng.all_vars[k]
    seeds, bits, facts = [], [], []
    for i in tp.pos:
        F = D.get(tp.lits[i].pred)
        if F is None:
            continue
        _, V = seed_bindings(eng, tp.lits[i], F)  # (every variable: a full-seed template)
        if V is not None and not B.is_empty(V):
            seeds.append(V)
            bits.append(1 << i)
            facts.append((i, F))
    vcols = [vcol(x) for x in sorted(G)]
    if seeds:
        # each literal's bindings with its bit as ev (step 1(a)'s E = {i})
        S = tagged(B, [B.select_cols(V, vcols) for V in seeds], {"ev": bits})
        # a seeded binding grounds every positive literal, and literal j's instance is in
        # D|τ iff literal j seeded it: the seed mask is E' ∩ D|τ, so only the window W
        # (disjoint from D|τ: duplicates are gone) is joined for the rest of E'
        if eng._seeds_disjoint(tp, facts):  # (through the engine: a test wraps it)
            Sd = B.with_columns(S, {"smask": B.col("ev")})  # one literal a binding
        else:
            Sd = B.group_agg(S, vcols, {"smask": B.agg_sum(B.col("ev"))}, scalar=True)
            Sd = B.with_columns(Sd, {"ev": B.col("smask")})
        Sd = B.materialize(present_all(eng, Sd, k, G, window))
    else:
        Sd = None
    # the ground partition: hits join the seeded bindings
    woken = None
    A = eng.S[k].get(G)
    live = B.is_null(B.col("exp")) | (B.col("exp") > B.lit(tau, INT))
    if A is not None and not B.is_empty(A):
        if Sd is not None:
            J = B.join(A, B.select(Sd, [B.col(c) for c in vcols + ["smask"]] +
                                   [B.alias(B.col("ev"), "pbits")]), vcols, vcols,
                       how="left")
            hit = B.not_null(B.col("smask")) & (
                B.bit_and(B.col("smask"), B.bit_not(B.col("ev"))) != B.lit(0, INT))
            J = B.materialize(B.with_columns(J, {"_hit": hit, "_pri": pristine(eng, k)}))
            eng.S[k][G] = B.materialize(eng._sel(B.filter(J, (~B.col("_hit")) & live),
                                                 list(eng._schema(k, G))))
            E = B.materialize(B.filter(J, B.col("_hit") & (~B.col("_pri"))))
            if not B.is_empty(E):
                E = B.select(E, [B.col(c) for c in vcols] + [
                    B.alias(B.bit_or(B.col("ev"), B.col("pbits")), "ev"), B.col("ng")])
                if Sd is not None and not eng.tpl_ng[k]:
                    woken = E  # finished with the seeded rows below (one pass, same rows)
                else:
                    put(eng, new, k, G, finish(eng, k, G, E, tau, ng_empty=True))
        else:
            eng.S[k][G] = B.materialize(B.filter(A, live))
    if Sd is not None:
        Sd = B.select(Sd, [B.col(c) for c in vcols] + [
            B.col("ev"), B.alias(B.str_list(eng.tpl_ng[k]), "ng")])
        if woken is not None:
            Sd = B.concat([woken, Sd])
        put(eng, new, k, G, finish(eng, k, G, Sd, tau, ng_empty=not eng.tpl_ng[k]))
    # other partitions: the general step 1(b)
    step1b(eng, k, D, present, tau, new, skip=G)


def seeds_disjoint(eng, tp: ETemplate, facts: list) -> bool:
    """No binding is seeded by two literals: each literal's facts give its own binding
    once (validated facts, a full-seed template), and the bindings' times T = t − off of
    two literals never meet (e.g. every fact of the slice on time: then T differs by
    the literals' offsets).  Decided from the slice's distinct times (a few values),
    where looking at the data is cheap; otherwise the seeds are merged by a group-by."""
    B = eng.B
    if len(facts) < 2:
        return True
    lits = [tp.lits[i] for i, _ in facts]
    if not B.cheap_checks or any(lp.tvar is None or lp.tvar != lits[0].tvar
                                 for lp in lits):
        return False
    seen: set = set()
    times = eng.seed_cache  # (a slice's times, once a tick: every template reads them)
    for (i, F), lp in zip(facts, lits):
        got = times.get(("t", id(F)))
        if got is None:
            got = times[("t", id(F))] = (B.values(F, "t"), F)
        ts = got[0]
        mine = {t - lp.toff for t in ts}
        if seen & mine:
            return False
        seen |= mine
    return True
