"""Steps 1(a)–(b) of Algorithm 1 (002 §6) for the ground answers of several full-seed
templates at once: one table with a template column `_tid` (the unfolded templates of a
window program share most of their literals, and step 1 of one such template is ~30 table
operations on a few dozen rows: done template by template, the tick's cost was a fixed
cost per template).  The rows, conditions and deadlines are step1_full's and finish's
(step1_evidence.py, finish.py); each template's rows are split off at the end."""
from __future__ import annotations

from dataclasses import dataclass, field

from reasoning.columnar.layout import BOOL, INT, META_KINDS, vcol
from reasoning.columnar.mgus import prep, seed_bindings

LOW = -(1 << 62)  # a time variable with no lower bound in a template
MEMO_ROWS = 1 << 16  # the small tables' memo is emptied past this many (template, mask) rows


@dataclass(frozen=True)
class Family:
    """Full-seed templates of one variable layout whose positive literals' times are all
    on one time variable `tv` (t = tv + offset), with no template nogoods and constant
    delays.  What differs between the templates — which literal a shape is, its deadline
    offset, the least times — is looked up per (template, bit mask) in small tables."""

    tids: tuple
    vcols: tuple
    tv: int  # the time variable of every positive literal
    shapes: tuple  # (pred, args, tvar, toff) per shape s
    masks: tuple  # per template: {shape: the bits of its literals of that shape}
    offs: tuple  # per template: ((literal index, toff + δ), ...) of its positive literals
    lows: tuple  # per template: {time variable: least value} (finish.py's lows)
    ints: tuple  # the layout's time variables
    memo: dict = field(default_factory=dict, compare=False)  # the small tables' rows


def families(eng) -> list:
    """The templates step 1 evaluates together: full-seed templates of one variable
    layout and one time variable whose finish needs no per-template case (no template
    nogoods, periodic domains, derived literals or delays by instance)."""
    groups: dict = {}
    for k, tp in enumerate(eng.templates):
        if not eng.full_seeds[k] or eng.tpl_ng[k] or tp.periodic or tp.der:
            continue
        if tp.head.tvar is None and tp.head.toff < 0:
            continue
        if any(lp.tvar is None and lp.toff < 0 for lp in tp.lits):
            continue
        tvs = {tp.lits[j].tvar for j in tp.pos}
        if len(tvs) != 1 or None in tvs:
            continue
        if any(eng.dplans[tp.lits[j].pred].constant is None for j in tp.pos):
            continue
        groups.setdefault((eng.layouts[k].kinds, tvs.pop()), []).append(k)
    out = []
    for (kinds, tv), ks in groups.items():
        if len(ks) > 1:
            fam = _family(eng, kinds, tv, ks)
            if len(fam.shapes) <= 62:  # (a shape set per row is an int64 bit mask)
                out.append(fam)
    return out


def _family(eng, kinds: tuple, tv: int, ks: list) -> Family:
    shapes: dict = {}
    masks, offs = [], []
    for k in ks:
        tp = eng.templates[k]
        m: dict = {}
        for j in tp.pos:
            lp = tp.lits[j]
            s = shapes.setdefault((lp.pred, lp.args, lp.tvar, lp.toff), len(shapes))
            m[s] = m.get(s, 0) | (1 << j)
        masks.append(m)
        offs.append(tuple((j, tp.lits[j].toff + eng.dplans[tp.lits[j].pred].constant)
                          for j in tp.pos))
    ints = tuple(v for v, kind in enumerate(kinds) if kind == INT)
    return Family(tuple(ks), tuple(vcol(v) for v in range(len(kinds))), tv, tuple(shapes),
                  tuple(masks), tuple(offs), tuple(_lows(eng.templates[k]) for k in ks), ints)


def _lows(tp) -> dict:
    """Each time variable's least value in a template's answers (finish.py: natural
    times, the pre-processing bounds)."""
    lows: dict = {}
    for t in [tp.head] + list(tp.lits):
        if t.tvar is not None:
            lows[t.tvar] = max(lows.get(t.tvar, -t.toff), -t.toff)
    for v, kmin in tp.time_min:
        lows[v] = max(lows.get(v, kmin), kmin)
    return lows


def step1_family(eng, fam: Family, D: dict, window: dict, tau: int, put) -> None:
    """step1_full's ground partition for every template of the family: seeds from D|τ
    (one binding per literal and fact, with the literal's bit), merged per template and
    binding; the window's instances marked; the waiting rows they hit woken; the new rows
    finished; S_τ's kept rows and the new ones split per template (`put` collects the
    new)."""
    B = eng.B
    vcols = list(fam.vcols)
    meta = list(META_KINDS)
    seeds, tids, bits = [], [], []
    for k in fam.tids:
        tp = eng.templates[k]
        for j in tp.pos:
            F = D.get(tp.lits[j].pred)
            if F is None:
                continue
            _, V = seed_bindings(eng, tp.lits[j], F)
            if V is not None and not B.is_empty(V):
                seeds.append(B.select_cols(V, vcols))
                tids.append(k)
                bits.append(1 << j)
    Sd = None
    if seeds:
        S = _tag(B, seeds, {"_tid": tids, "ev": bits})
        # one row per template and binding: E' ∩ D|τ is the sum of its literals' bits
        # (each literal's facts give a binding once)
        Sd = B.group_agg(S, ["_tid"] + vcols, {"smask": B.agg_sum(B.col("ev"))}, scalar=True)
        Sd = B.materialize(_present(eng, fam, Sd, window))
    # the ground partitions' rows, one table
    parts, ptids = [], []
    for k in fam.tids:
        A = eng.S[k].get(eng.all_vars[k])
        if A is not None and not B.is_empty(A):
            parts.append(B.select_cols(A, vcols + meta))
            ptids.append(k)
    live = B.is_null(B.col("exp")) | (B.col("exp") > B.lit(tau, INT))
    E = None
    if parts:
        A = _tag(B, parts, {"_tid": ptids})
        if Sd is not None:
            J = B.join(A, B.select(Sd, [B.col(c) for c in ["_tid"] + vcols + ["smask"]] +
                                   [B.alias(B.col("ev"), "pbits")]),
                       ["_tid"] + vcols, ["_tid"] + vcols, how="left")
            hit = B.not_null(B.col("smask")) & (
                B.bit_and(B.col("smask"), B.bit_not(B.col("ev"))) != B.lit(0, INT))
            pri = (B.col("ev") == B.lit(0, INT)) & (B.list_len(B.col("ng")) == B.lit(0, INT))
            J = B.materialize(B.with_columns(J, {"_hit": hit, "_pri": pri}))
            kept = B.filter(J, (~B.col("_hit")) & live)
            E = B.filter(J, B.col("_hit") & (~B.col("_pri")))
            E = B.select(E, [B.col(c) for c in ["_tid"] + vcols] + [
                B.alias(B.bit_or(B.col("ev"), B.col("pbits")), "ev"), B.col("ng")])
            if B.is_empty(E):
                E = None
        else:
            kept = B.filter(A, live)
        kept = _split(B, kept, ptids)
        for k in ptids:
            eng.S[k][eng.all_vars[k]] = B.select_cols(kept[k], vcols + meta)
    rows = [] if E is None else [E]
    if Sd is not None:
        rows.append(B.select(Sd, [B.col(c) for c in ["_tid"] + vcols + ["ev"]] +
                             [B.alias(B.str_list(()), "ng")]))
    new = _finish(eng, fam, B.concat(rows) if len(rows) > 1 else rows[0], tau) \
        if rows else None
    if new is not None:  # state.add's set semantics (fresh_only: none equals a kept row)
        ng = ["ng"] if any(eng.may_ng[k] for k in fam.tids) else []
        new = _split(B, B.unique(new, ["_tid"] + vcols + ["ev"] + ng), list(fam.tids))
    for k in fam.tids:
        G = eng.all_vars[k]
        part = None if new is None else new.get(k)
        if part is not None and B.is_empty(part):
            part = None
        if part is not None:
            part = B.select_cols(part, vcols + meta)
            if any(P != G and not B.is_empty(A) for P, A in eng.S[k].items()):
                put(eng, k, G, part)  # (step 1(b) of another partition may add to G)
                part = None
            elif G in eng.S[k] and not B.is_empty(eng.S[k][G]):
                part = B.concat([eng.S[k][G], part])
        if part is not None:
            eng.S[k][G] = B.materialize(part)
        elif G in eng.S[k]:
            eng.S[k][G] = B.materialize(eng.S[k][G])


def _present(eng, fam: Family, Sd, window: dict):
    """present_all over the family: E' ∩ W.  Each shape's instance is looked up in W
    once per distinct binding (a shape set `_pm` per binding), and a template's bits of
    the shapes present set in ev (a small table per (template, shape set))."""
    B = eng.B
    vcols = list(fam.vcols)
    U = B.unique(B.select_cols(Sd, vcols))
    cache: dict = {}
    mark = getattr(B, "mark_matches", None)
    pm = B.lit(0, INT)
    marked = False
    for s, (pred, args, tvar, toff) in enumerate(fam.shapes):
        F = window.get(pred)
        if F is None or B.is_empty(F):
            continue
        R, lkeys, names = prep(eng, cache, _lit(eng, fam, s), F, f"s{s}")
        if not lkeys:  # (a ground literal: fam's literals bind the time variable)
            continue
        if B.cheap_checks and B.is_empty(R):
            continue
        if mark is not None:
            U = mark(U, R, lkeys, names, f"_p{s}")
            hit = B.col(f"_p{s}")
        else:
            U = B.join(U, R, lkeys, names, how="left")
            hit = B.not_null(B.col(f"_ms{s}"))
        pm = B.bit_or(pm, B.when(hit, B.lit(1 << s, INT), B.lit(0, INT)))
        marked = True
    if not marked:
        return B.with_columns(Sd, {"ev": B.col("smask")})
    U = B.select(U, [B.col(c) for c in vcols] + [B.alias(pm, "_pm")])
    Sd = B.join(Sd, U, vcols, vcols, how="left")
    memo = _memo(fam, "pm")
    pos = {k: n for n, k in enumerate(fam.tids)}

    def bits(tid, m):
        got = memo.get((tid, m))
        if got is None:
            got = memo[(tid, m)] = (sum(b for s, b in fam.masks[pos[tid]].items()
                                        if m >> s & 1),)
        return got
    Sd = _by_table(B, Sd, "_pm", ["_pb"], bits)
    return B.select(Sd, [B.col(c) for c in ["_tid"] + vcols + ["smask"]] +
                    [B.alias(B.bit_or(B.col("smask"), B.col("_pb")), "ev")])


def _memo(fam: Family, name: str) -> dict:
    """One of the family's memos of (template, mask) rows, bounded: a long stream meets
    more masks than a tick does."""
    memo = fam.memo.setdefault(name, {})
    if len(memo) > MEMO_ROWS:
        memo.clear()
    return memo


def _by_table(B, df, key: str, names: list, fn):
    """df with columns `names` = fn(_tid, key value) (a tuple; None: null), looked up in a
    table of df's distinct (_tid, key) pairs (hundreds where df has thousands of rows)."""
    U = B.unique(B.select_cols(df, ["_tid", key]))
    ts, ks = B.column_list(U, "_tid"), B.column_list(U, key)
    vals = list(zip(*map(fn, ts, ks))) or [() for _ in names]
    cols = {"_tid": ts, key: ks, **dict(zip(names, map(list, vals)))}
    T = B.from_columns(cols, {c: INT for c in cols})
    return B.join(df, T, ["_tid", key], ["_tid", key], how="inner")


def _lit(eng, fam: Family, s: int):
    """A literal of shape s (the first template's that has one)."""
    for k, m in zip(fam.tids, fam.masks):
        if s in m:
            j = (m[s] & -m[s]).bit_length() - 1
            return eng.templates[k].lits[j]
    raise KeyError(s)


def _finish(eng, fam: Family, df, tau: int):
    """finish.py's finish for the family's ground rows: times at least each template's
    lows, exp/dlp the least/greatest t + δ over the open positive literals (t = tv + an
    offset: tv plus a per-(template, ev) least and greatest offset), exp > τ."""
    B = eng.B
    memo = _memo(fam, "dl")
    pos = {k: n for n, k in enumerate(fam.tids)}

    def span(tid, ev):
        got = memo.get((tid, ev))
        if got is None:
            n = pos[tid]
            cs = [c for j, c in fam.offs[n] if not ev >> j & 1]
            got = memo[(tid, ev)] = ((min(cs), max(cs)) if cs else (None, None)) + tuple(
                fam.lows[n].get(v, LOW) for v in fam.ints)
        return got
    df = _by_table(B, df, "ev", ["_dmin", "_dmax"] + [f"_lo{v}" for v in fam.ints], span)
    t = B.col(vcol(fam.tv))
    exp = t + B.col("_dmin")
    df = B.with_columns(df, {"exp": exp, "dlp": t + B.col("_dmax"),
                             "unb": B.lit(False, BOOL), "born": B.lit(tau, INT)})
    conds = [B.col(vcol(v)) >= B.col(f"_lo{v}") for v in fam.ints]
    conds.append(B.is_null(B.col("exp")) | (B.col("exp") > B.lit(tau, INT)))
    df = B.filter(df, B.all_of(conds))
    if B.is_empty(df):
        return None
    return B.select_cols(df, ["_tid"] + list(fam.vcols) + list(META_KINDS))


def _tag(B, dfs: list, tags: dict):
    """dfs one under another with INT columns name = values[i] on the rows of dfs[i], for
    each name: values of `tags` (the backend's own kernel where it has one)."""
    own = getattr(B, "concat_tagged", None)
    if own is not None:
        return own(dfs, tags)
    return B.concat([B.with_columns(df, {c: B.lit(v[i], INT) for c, v in tags.items()})
                     for i, df in enumerate(dfs)])


def _split(B, df, tids: list) -> dict:
    """{tid: its rows of df} (the backend's own split where it has one)."""
    own = getattr(B, "split_by", None)
    if own is not None:
        return own(df, "_tid", tids)
    return {t: B.filter(df, B.col("_tid") == B.lit(t, INT)) for t in tids}
