"""Steps 1(a)–(b) of Algorithm 1 (002 §6) for the ground answers of several full-seed
templates at once, one table with a template column `_tid`: the unfolded templates of a
window program share most of their literals, and step 1 template by template was ~30
table operations on a few dozen rows each — a fixed cost per template and tick.  D|τ's
bindings are made once (with the literal shapes seeding them and those present in W); the
new rows that survive finish (exp > τ, the least times) are read from a small table per
(seeding shapes, present shapes, T − τ) — most seeded rows of such a program miss a past
literal and die there; the waiting rows are woken in one join.  The rows, conditions and
deadlines are step1_full's and finish's (step1_evidence.py, finish.py)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from reasoning.columnar.finish import time_lows
from reasoning.columnar.layout import BOOL, INT, META_KINDS, OBJ, vcol
from reasoning.columnar.mgus import marked, prep, seed_bindings

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
    lits: tuple  # a literal of each shape s (pred, arguments, time variable and offset)
    masks: tuple  # per template: {shape: the bits of its literals of that shape}
    offs: tuple  # per template: ((literal index, toff + δ), ...) of its positive literals
    lows: tuple  # per template: tv's least value (finish.py's time_lows)
    head: object = None  # the templates' one head when the tick's tail is done here (_tail)
    # per atom of the shapes: ((pred, args), its literal at offset 0, its shapes' (time
    # offset, bit))
    by_atom: tuple = field(default=(), compare=False)
    memo: dict = field(default_factory=dict, compare=False)  # the small tables' rows


def groups(templates, constant=lambda pred: True) -> list:
    """The templates step 1 evaluates together, as lists of indexes: full-seed templates
    of one variable layout with one time variable, on which every positive literal's time
    is, whose finish needs no per-template case (no template nogoods, periodic domains,
    derived literals, negative constant times or delays by instance: `constant(pred)`),
    two or more of them over at most 62 literal shapes (static: `auto` reads it too)."""
    by: dict = {}
    for k, tp in enumerate(templates):
        if not tp.full_seed or tp.nogoods or tp.periodic or tp.der:
            continue
        if tp.head.tvar is None and tp.head.toff < 0:
            continue
        if any(lp.tvar is None and lp.toff < 0 for lp in tp.lits):
            continue
        tvs = {tp.lits[j].tvar for j in tp.pos}
        if len(tvs) != 1 or None in tvs or len(tp.time_vars) != 1:
            continue  # (one time variable: T − τ and T's least value key the seeds)
        if not all(constant(tp.lits[j].pred) for j in tp.pos):
            continue
        kinds = tuple(i in tp.time_vars for i in range(len(tp.names)))
        by.setdefault((kinds, tvs.pop()), []).append(k)
    out = []
    for ks in by.values():
        shapes = {(lp.pred, lp.args, lp.tvar, lp.toff) for k in ks
                  for lp in (templates[k].lits[j] for j in templates[k].pos)}
        if len(ks) > 1 and len(shapes) <= 62:  # (a shape set per row is an int64 mask)
            out.append(ks)
    return out


def families(eng) -> list:
    """The engine's families (groups) with their shapes, masks and offsets."""
    return [_family(eng, ks) for ks in
            groups(eng.templates, lambda p: eng.dplans[p].constant is not None)]


def _family(eng, ks: list) -> Family:
    shapes: dict = {}
    masks, offs = [], []
    for k in ks:
        tp = eng.templates[k]
        m: dict = {}
        for j in tp.pos:
            lp = tp.lits[j]
            s = shapes.setdefault((lp.pred, lp.args, lp.tvar, lp.toff), (len(shapes), lp))[0]
            m[s] = m.get(s, 0) | (1 << j)
        masks.append(m)
        offs.append(tuple((j, tp.lits[j].toff + eng.dplans[tp.lits[j].pred].constant)
                          for j in tp.pos))
    tp = eng.templates[ks[0]]
    tv = tp.lits[tp.pos[0]].tvar
    return Family(tuple(ks), tuple(vcol(v) for v in range(len(tp.names))), tv,
                  tuple(lp for _, lp in shapes.values()), tuple(masks), tuple(offs),
                  tuple(time_lows(eng.templates[k])[tv] for k in ks), _tail_head(eng, ks),
                  _by_atom([lp for _, lp in shapes.values()]))


@dataclass(frozen=True)
class TailDone:
    """What step1_family's tail left for one template at τ (engine.fam_done): its ground
    frame, its definite rows new at τ and that frame after forgetting (None: no such
    row), and its family."""

    frame: object
    fresh: object
    after: object
    family: Family


def _by_atom(lits: list) -> tuple:
    """The shapes grouped by predicate and arguments: per atom, its literal at time offset
    0 and the shapes' (time offset, bit) (every shape's time is on the family's one time
    variable: the atom's seed bindings at offset 0 shifted to each)."""
    by: dict = {}
    for s, lp in enumerate(lits):
        by.setdefault((lp.pred, lp.args), []).append((s, lp))
    return tuple((key, replace(v[0][1], toff=0), [(lp.toff, 1 << s) for s, lp in v])
                 for key, v in by.items())


def _tail_head(eng, ks: list):
    """The family's one head if the tick's tail of its ground rows (_tail) is done in step
    1: forgetting on, one head for every template, no negated literal (definite: exp is
    null), and no step 3 reading the head (no negated or derived literal of its predicate
    anywhere: the rows dropped early are read by no other step) — else None."""
    heads = {eng.templates[k].head for k in ks}
    if not eng.forget or eng.derived or len(heads) != 1 or \
            any(eng.templates[k].neg for k in ks):
        return None
    head = heads.pop()
    return None if head.pred in eng.retention else head


def step1_family(eng, fam: Family, D: dict, window: dict, tau: int, put) -> None:
    """step1_full's ground partition for every template of the family: D|τ's bindings;
    the waiting rows they hit woken and finished; the seeded rows that survive; S_τ's kept
    rows and the new ones split per template (`put` collects those another partition's
    step 1(b) may add to)."""
    B = eng.B
    vcols = list(fam.vcols)
    meta = list(META_KINDS)
    # the bindings D|τ seeds, once each: `_pd` the shapes whose facts seed it, `_pw` the
    # shapes whose instance is in W (E' = Hσ ∩ (D|τ ∪ W) of every template, by shape)
    U = _bindings(eng, fam, D, window)
    # the ground partitions' rows, one table
    A, ptids = _table(eng, fam)
    E = kept = None
    if A is not None:
        if U is not None:
            kept, E = _wake(eng, fam, A, U, tau)
            if B.is_empty(E):
                E = None
        else:
            kept = B.filter(A, B.is_null(B.col("exp")) | (B.col("exp") > B.lit(tau, INT)))
    rows = [] if E is None else [_finish(eng, fam, E, tau)]
    if U is not None:
        rows.append(_seeded(eng, fam, U, tau))
    rows = [r for r in rows if r is not None]
    new = (B.concat(rows) if len(rows) > 1 else rows[0]) if rows else None
    if new is not None:  # state.add's set semantics (fresh_only: none equals a kept row)
        ng = ["ng"] if any(eng.may_ng[k] for k in fam.tids) else []
        new = B.unique(new, ["_tid"] + vcols + ["ev"] + ng)
    # S_τ's ground rows of each template: the kept and the new ones (step 1(b) of another
    # partition of a template may add to its ground one: then its new rows are collected)
    shared = [k for k in fam.tids
              if any(P != eng.all_vars[k] and not B.is_empty(A) for P, A in eng.S[k].items())]
    tail = fam.head is not None and eng.continued and not shared
    F = None
    if tail:
        kept, new, F = _tail(eng, fam, kept, new)
    if shared and new is not None:
        got = _split(B, new, shared)
        for k in shared:
            if not B.is_empty(got[k]):
                put(eng, k, eng.all_vars[k], B.select_cols(got[k], vcols + meta))
        new = B.join(new, B.from_columns({"_tid": shared}, {"_tid": INT}), ["_tid"], ["_tid"],
                     how="anti")
    both = [f for f in (kept, new) if f is not None]
    if not both:
        return
    T = B.concat(both) if len(both) > 1 else both[0]
    got = _split(B, T, list(fam.tids), vcols + meta)
    fresh = after = {}
    if F is not None:
        # the templates with definite rows new at τ: those rows, and their frames after
        # forgetting (the table less F), which forget_definite takes instead of a filter
        ftids = sorted(set(B.column_list(F, "_tid")))
        fresh = _split(B, F, ftids, vcols + meta)
        T = B.filter(T, B.not_null(B.col("exp")))
        after = _split(B, T, ftids, vcols + meta)
    frames = {}
    for k in fam.tids:
        G = eng.all_vars[k]
        if k in ptids or not B.is_empty(got[k]):
            eng.S[k][G] = frames[k] = B.materialize(got[k])
            if tail:
                f = fresh.get(k)
                eng.fam_done[k] = TailDone(
                    frames[k], None if f is None else B.materialize(f),
                    None if f is None else B.materialize(after[k]), fam)
    if tail:  # the table after forgetting (its definite rows, all new: F), for the next tick
        eng.fam_tables[fam.tids] = (B.materialize(B.select_cols(T, vcols + meta + ["_tid"])),
                                    frames)


def _wake(eng, fam: Family, A, U, tau: int):
    """step1_full's wake-up of the family's table A by D|τ's bindings U: (kept — the rows
    no seeding shape hits with a bit they lack, whose open literals may still arrive —,
    woken — the hit rows that are not pristine, ev with the present shapes' bits, to be
    finished): a left join and a row's template bits of the seeded shapes (smask) and of
    the present ones (pbits) — on the arrays backend in one pass (wake_family)."""
    B = eng.B
    vcols = list(fam.vcols)
    cols = ["_tid"] + vcols + list(META_KINDS)
    own = getattr(B, "wake_family", None)
    if own is not None:
        return own(A, U, vcols, fam.tids, fam.masks, tau, cols)
    J = _by_pair(eng, fam, B.join(A, U, vcols, vcols, how="left"))
    hit = B.not_null(B.col("smask")) & (
        B.bit_and(B.col("smask"), B.bit_not(B.col("ev"))) != B.lit(0, INT))
    pri = (B.col("ev") == B.lit(0, INT)) & (B.list_len(B.col("ng")) == B.lit(0, INT))
    live = B.is_null(B.col("exp")) | (B.col("exp") > B.lit(tau, INT))
    J = B.materialize(B.with_columns(J, {"_hit": hit, "_pri": pri}))
    kept = B.select_cols(B.filter(J, (~B.col("_hit")) & live), cols)
    E = B.filter(J, B.col("_hit") & (~B.col("_pri")))
    return kept, B.select(E, [B.col(c) for c in ["_tid"] + vcols] + [
        B.alias(B.bit_or(B.col("ev"), B.col("pbits")), "ev"), B.col("ng")])


def _table(eng, fam: Family):
    """The family's ground rows as one table (with `_tid`) and the templates that have
    some: the table the last tick left (engine.fam_tables) while every template's ground
    frame is the one it left there (forget_definite keeps the record), else gathered."""
    B = eng.B
    prev = eng.fam_tables.pop(fam.tids, None)
    if prev is not None and eng.continued and all(
            eng.S[k].get(eng.all_vars[k]) is prev[1].get(k) for k in fam.tids):
        ptids = [k for k in fam.tids if k in prev[1]]
        return (prev[0] if ptids else None), ptids
    cols = list(fam.vcols) + list(META_KINDS)
    parts, ptids = [], []
    for k in fam.tids:
        A = eng.S[k].get(eng.all_vars[k])
        if A is not None and not B.is_empty(A):
            parts.append(B.select_cols(A, cols))
            ptids.append(k)
    return (tagged(B, parts, {"_tid": ptids}) if parts else None), ptids


def _tail(eng, fam: Family, kept, new):
    """The rest of the tick for the family's ground rows, done on its one table: the
    definite rows new at τ (F: fresh_rows'), the other rows with F's heads dropped
    (forgetting.drop_redundant's), and the new rows with a remembered definite head
    (exactrows.drop_answered's: the kept rows were checked when they were made, every
    head remembered since came with drop_redundant).  (kept, new, F); the later phases
    skip the partitions left as they are here (engine.fam_done)."""
    B = eng.B
    h = fam.head
    n = len(h.args)
    kinds = eng.layouts[fam.tids[0]].kinds
    rcols = [f"_rla{p}" for p in range(n)] + ["_rlt", "_rnd"]
    sch = {c: (kinds[x] if isvar else OBJ) for c, (isvar, x) in zip(rcols, h.args)}
    sch.update(_rlt=INT, _rnd=BOOL)
    lkeys = [B.col(vcol(x)) if isvar else B.lit(x, OBJ) for isvar, x in h.args]
    lkeys += [eng._texpr(h), B.not_null(B.col("exp"))]  # (not definite: an open literal)
    heads = []
    mem = eng.answered.of(h.pred) if h.pred in eng.answered.horizons else ()
    if mem and new is not None:
        heads.append(B.from_rows([{**{f"_rla{i}": a[i] for i in range(n)}, "_rlt": t,
                                   "_rnd": True} for a, t in mem], sch))
    F = None if new is None else B.materialize(B.filter(new, B.is_null(B.col("exp"))))
    if F is not None and B.is_empty(F):
        F = None
    if F is not None:
        H = B.unique(B.select(F, [B.alias(x, c) for x, c in zip(lkeys[:-1], rcols)] +
                              [B.alias(B.lit(True, BOOL), "_rnd")]))
        heads.append(H)
        if kept is not None:
            kept = B.join(kept, H, lkeys, rcols, how="anti")
    if heads:
        new = B.join(new, B.concat(heads) if len(heads) > 1 else heads[0], lkeys, rcols,
                     how="anti")
    return kept, new, F


def _bindings(eng, fam: Family, D: dict, window: dict):
    """The distinct bindings the facts of D|τ give the family's literals (their shapes'
    seed bindings, mgus.seed_bindings), with `_pd`: the shapes seeding each, and `_pw`: the
    shapes whose instance under it is in W (present_all's look-up, once a binding) — or
    None (no seed)."""
    B = eng.B
    vcols = list(fam.vcols)
    tv = vcol(fam.tv)
    seeds, atoms = [], []
    for a, ((pred, _), lp, _) in enumerate(fam.by_atom):
        F = D.get(pred)
        if F is None:
            continue
        # the shapes of one atom differ by their time offset only: the facts' bindings at
        # offset 0, shifted to each shape's
        _, V = seed_bindings(eng, lp, F)
        if V is None or B.is_empty(V):
            continue
        seeds.append(B.select_cols(V, vcols))
        atoms.append(a)
    if not seeds:
        return None
    # every atom's bindings once per shape of it (its offset _o and bit _pd: one expansion
    # for all atoms); a shape's facts give a binding once: the sum of the bits is their union
    own = getattr(B, "shifted", None)
    if own is not None:  # (the arrays backend: repeated and shifted in one step)
        V = own(seeds, tv, [fam.by_atom[a][2] for a in atoms], vcols)
    else:
        V = _expand(B, tagged(B, seeds, {"_atom": atoms}), ["_atom"], ["_o", "_pd"],
                    lambda a: fam.by_atom[a][2])
        V = B.select(V, [B.col(c) for c in vcols if c != tv] +
                     [B.alias(B.col(tv) - B.col("_o"), tv), B.col("_pd")])
    U = B.group_agg(V, vcols, {"_pd": B.agg_sum(B.col("_pd"))}, scalar=True)
    cache: dict = {}
    pw = B.lit(0, INT)
    for s, lp in enumerate(fam.lits):
        F = window.get(lp.pred)
        if F is None or B.is_empty(F):
            continue
        R, lkeys, names = prep(eng, cache, lp, F, f"s{s}")
        if B.cheap_checks and B.is_empty(R):
            continue
        U, hit = marked(eng, U, R, lkeys, names, f"s{s}")
        pw = B.bit_or(pw, B.when(hit, B.lit(1 << s, INT), B.lit(0, INT)))
    return B.materialize(B.select(U, [B.col(c) for c in vcols + ["_pd"]] +
                                  [B.alias(pw, "_pw")]))


def _bits(fam: Family, n: int, shapes: int) -> int:
    """Template n's literal bits of a set of shapes."""
    return sum(b for s, b in fam.masks[n].items() if shapes >> s & 1)


def _by_pair(eng, fam: Family, J):
    """Rows of the ground partitions joined with the seeded bindings (`_pd`, `_pw`; null:
    not seeded) with their template's `smask` (the seeding literals, E' ∩ D|τ) and
    `pbits` (E' ∩ (D|τ ∪ W)), as step1_full's join with its seeded rows gives them."""
    B = eng.B
    memo = _memo(fam, "pair")
    pos = {k: n for n, k in enumerate(fam.tids)}

    def fn(tid, pd, pw):
        got = memo.get((tid, pd, pw))
        if got is None:
            n = pos[tid]
            got = memo[(tid, pd, pw)] = (None, None) if pd is None else (
                _bits(fam, n, pd), _bits(fam, n, pd | pw))
        return got
    return _by_table(B, J, ["_tid", "_pd", "_pw"], ["smask", "pbits"], fn)


def _seeded(eng, fam: Family, U, tau: int):
    """Step 1(a)'s new rows of every template of the family that survive finish: per
    binding, the templates its seeding shapes seed, with E = their bits of the shapes
    present, kept if every positive literal left open may still arrive (exp > τ) and the
    times are at least the template's lows — decided once per (seeding shapes, present
    shapes, T − τ, T below the lows' largest) and joined back to the bindings."""
    B = eng.B
    vcols = list(fam.vcols)
    t = B.col(vcol(fam.tv))
    cap = max(list(fam.lows) + [0]) + 1
    U = B.with_columns(U, {"_rel": t - B.lit(tau, INT),
                           "_tc": B.least([t, B.lit(cap, INT)])})
    keys = ["_pd", "_pw", "_rel", "_tc"]
    memo = _memo(fam, "seed")

    def rows(pd, pw, rel, tc):
        got = memo.get((pd, pw, rel, tc))
        if got is None:
            got = memo[(pd, pw, rel, tc)] = _seed_rows(fam, pd, pw, rel, tc)
        return got
    S = _expand(B, U, keys, ["_tid", "ev", "_dmin", "_dmax"], rows)
    if S is None:
        return None
    return B.select(S, [B.col(c) for c in ["_tid"] + vcols + ["ev"]] + [
        B.alias(B.str_list(()), "ng"), B.alias(t + B.col("_dmin"), "exp"),
        B.alias(t + B.col("_dmax"), "dlp"), B.alias(B.lit(False, BOOL), "unb"),
        B.alias(B.lit(tau, INT), "born")])


def _seed_rows(fam: Family, pd: int, pw: int, rel: int, tc: int) -> list:
    """[(template, E, least and greatest open offset)] a binding seeded by the shapes pd,
    with the shapes pw present in W, at T = τ + rel (tc: T, or the cap past every low)."""
    out = []
    for n, k in enumerate(fam.tids):
        smask = _bits(fam, n, pd)
        if not smask:
            continue
        if tc < fam.lows[n]:
            continue
        ev = smask | _bits(fam, n, pw)
        cs = [c for j, c in fam.offs[n] if not ev >> j & 1]
        if cs and rel + min(cs) <= 0:  # an open literal past its deadline: exp ≤ τ
            continue
        out.append((k, ev) + ((min(cs), max(cs)) if cs else (None, None)))
    return out


def _memo(fam: Family, name: str) -> dict:
    """One of the family's memos of (template, mask) rows, bounded: a long stream meets
    more masks than a tick does."""
    memo = fam.memo.setdefault(name, {})
    if len(memo) > MEMO_ROWS:
        memo.clear()
    return memo


def _expand(B, df, keys: list, names: list, fn):
    """Each row of df once per tuple of fn(*its key values) (a list), with columns `names`
    (an inner join with the table of those tuples, the backend's own kernel where it has
    one), or None if no row has one."""
    own = getattr(B, "expand_keys", None)
    if own is not None:
        out = own(df, keys, names, fn)
        return None if B.is_empty(out) else out
    K = B.unique(B.select_cols(df, keys))
    cols: dict = {c: [] for c in keys + names}
    for kv in zip(*(B.column_list(K, c) for c in keys)):
        for tup in fn(*kv):
            for c, v in zip(keys + names, kv + tuple(tup)):
                cols[c].append(v)
    if not cols[names[0]]:
        return None
    return B.join(df, B.from_columns(cols, {c: INT for c in cols}), keys, keys, how="inner",
                  nulls_equal=True)


def _by_table(B, df, keys, names: list, fn):
    """df with columns `names` = fn(*key values) (a tuple; None: null), looked up in a
    table of df's distinct key tuples (hundreds where df has thousands of rows; the arrays
    backend has fused operations instead: wake_family, span_by_key)."""
    U = B.unique(B.select_cols(df, keys))
    kv = [B.column_list(U, c) for c in keys]
    vals = list(zip(*map(fn, *kv))) or [() for _ in names]
    cols = {**dict(zip(keys, kv)), **dict(zip(names, map(list, vals)))}
    T = B.from_columns(cols, {c: INT for c in cols})
    return B.join(df, T, keys, keys, how="inner", nulls_equal=True)


def _finish(eng, fam: Family, df, tau: int):
    """finish.py's finish for the family's woken rows: tv at least its template's low,
    exp/dlp the least/greatest t + δ over the open positive literals (t = tv + an offset: tv
    plus a per-(template, ev) least and greatest offset), exp > τ."""
    B = eng.B
    own = getattr(B, "span_by_key", None)
    if own is not None:  # (the arrays backend: a byte of ev at a time)
        df = own(df, "_tid", fam.tids, fam.offs, fam.lows, "ev", ["_dmin", "_dmax", "_lo"])
    else:
        df = _by_table(B, df, ["_tid", "ev"], ["_dmin", "_dmax", "_lo"], _span(fam))
    t = B.col(vcol(fam.tv))
    exp = t + B.col("_dmin")
    df = B.with_columns(df, {"exp": exp, "dlp": t + B.col("_dmax"),
                             "unb": B.lit(False, BOOL), "born": B.lit(tau, INT)})
    df = B.filter(df, (t >= B.col("_lo")) & (
        B.is_null(B.col("exp")) | (B.col("exp") > B.lit(tau, INT))))
    if B.is_empty(df):
        return None
    return B.select_cols(df, ["_tid"] + list(fam.vcols) + list(META_KINDS))


def _span(fam: Family):
    """(template, ev) → (least and greatest offset of its open positive literals — None,
    None if none —, its low), memoised: _finish's look-up per distinct key."""
    memo = _memo(fam, "dl")
    pos = {k: n for n, k in enumerate(fam.tids)}

    def span(tid, ev):
        got = memo.get((tid, ev))
        if got is None:
            n = pos[tid]
            cs = [c for j, c in fam.offs[n] if not ev >> j & 1]
            got = memo[(tid, ev)] = ((min(cs), max(cs)) if cs else (None, None)) + (
                fam.lows[n],)
        return got
    return span


def tagged(B, dfs: list, tags: dict):
    """dfs one under another with INT columns name = values[i] on the rows of dfs[i], for
    each name: values of `tags` (the backend's own kernel where it has one)."""
    own = getattr(B, "concat_tagged", None)
    if own is not None:
        return own(dfs, tags)
    return B.concat([B.with_columns(df, {c: B.lit(v[i], INT) for c, v in tags.items()})
                     for i, df in enumerate(dfs)])


def _split(B, df, tids: list, cols: Optional[list] = None) -> dict:
    """{tid: its rows of df} (cols: only those columns; the backend's own split where it
    has one)."""
    own = getattr(B, "split_by", None)
    if own is not None:
        return own(df, "_tid", tids, cols)
    got = {t: B.filter(df, B.col("_tid") == B.lit(t, INT)) for t in tids}
    return got if cols is None else {t: B.select_cols(f, cols) for t, f in got.items()}
