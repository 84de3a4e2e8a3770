"""D|τ and the window W of Algorithm 1 (002 §6, Def. 17): what steps 1(a)–(b) match against."""
from __future__ import annotations

from typing import Iterable

from reasoning.semantics.patterns import Fact
from reasoning.columnar.delays import COL, DelayPlan
from reasoning.columnar.layout import INT, acol, fact_schema, facts_by_pred


def arrive(eng, facts, tau: int, clean: bool, rep) -> tuple[dict, dict, dict]:
    """D|τ from the slice `facts` (a list of Fact or {pred: {column: values} | frame (a0..,
    t)}; clean: the frames hold no duplicate — the caller removed them) less its
    duplicates, which rep counts; W's expiry.  Returns (D|τ, W without wexp,
    present = D|τ ∪ W), by predicate."""
    B = eng.B
    cols = facts if isinstance(facts, dict) else facts_by_pred(facts)
    cols = {p: c if isinstance(c, dict) else B.adopt(c) for p, c in cols.items()}
    D: dict = {}
    dup_frames = []
    for p, c in cols.items():
        if p not in eng.edb:  # a predicate no rule uses: kept in W like the row engine
            eng.edb[p] = len([x for x in (c if isinstance(c, dict) else B.columns(c))
                              if x != "t"]) + 1
            eng.dplans[p] = DelayPlan(eng.delays, p)
            eng.W[p] = B.empty(fact_schema(eng.edb[p] - 1, window=True))
        n = eng.edb[p] - 1
        df = B.from_columns(c, fact_schema(n)) if isinstance(c, dict) else c
        if clean:
            D[p] = B.materialize(df)
            continue
        total = B.height(df)
        if total == 0:
            continue
        u = B.unique(df)
        keys = [acol(i) for i in range(n)] + ["t"]
        w = eng.W[p]
        if not B.is_empty(w):
            wk = eng._sel(w, keys)
            rest = B.join(u, wk, keys, keys, how="anti")
            if B.height(rest) != B.height(u):  # (facts already in W: reported)
                dup_frames.append((p, B.join(u, wk, keys, keys, how="semi")))
                u = rest
        u = B.materialize(u)
        rep.duplicates += total - B.height(u)
        if not B.is_empty(u):
            D[p] = u
    # window expiry, after the duplicate check (a fact with t + δ = τ may arrive again at
    # τ: a duplicate): W keeps facts with t + δ > τ (002 Def. 17, potentially future)
    for p in eng.W:
        w = eng.W[p]
        if not B.is_empty(w):
            eng.W[p] = B.filter(w, B.col("wexp") > B.lit(tau, INT))
    rep.accepted = sum(B.height(d) for d in D.values()) if B.cheap_checks else -1
    if rep.duplicates:
        rep.duplicate_facts = duplicate_facts(eng, cols, dup_frames)
    # W's facts by predicate, and present = D|τ ∪ W (disjoint: duplicates are gone)
    window = {p: B.drop(w, ["wexp"]) for p, w in eng.W.items() if not B.is_empty(w)}
    present = Present(window)
    for p, d in D.items():
        w = eng.W[p]
        if B.is_empty(w):
            present[p] = d
        else:
            present.later(p, lambda d=d, w=w: B.materialize(
                B.concat([d, eng._sel(w, B.columns(d))])))
    return D, window, present


class Present(dict):
    """present = D|τ ∪ W by predicate, each union made when first read (a family's step 1
    reads D|τ and W apart, and most ticks read no other)."""

    _PENDING = object()

    def __init__(self, *args):
        super().__init__(*args)
        self._make: dict = {}

    def later(self, key, make) -> None:
        dict.__setitem__(self, key, Present._PENDING)
        self._make[key] = make

    def __getitem__(self, key):
        v = dict.__getitem__(self, key)
        if v is Present._PENDING:
            v = self._make.pop(key)()
            dict.__setitem__(self, key, v)
        return v

    def get(self, key, default=None):
        return self[key] if key in self else default

    def items(self):
        return [(k, self[k]) for k in self]

    def values(self):
        return [self[k] for k in self]


def admit(eng, D: dict, tau: int) -> None:
    """W ∪= the facts of D|τ that may still be matched as hypotheses (t + δ > τ)."""
    B = eng.B
    for p, d in D.items():
        if eng.dplans[p].constant == 0 and B.cheap_checks:
            top = B.col_max(d, "t")
            if top is None or top <= tau:
                continue  # δ = 0 for every instance and no fact after τ: none is admitted
        n = eng.edb[p] - 1
        # a fact's arguments are all bound: δ by the static plan (no per-row pattern);
        # t + δ by the fused kernel when the backend has it (ArraysBackend.deadlines)
        sides = [(COL, acol(i)) for i in range(n)]
        fused = getattr(B, "deadlines", None)
        spec = eng.dplans[p].lookup_spec(B, sides) if fused is not None else None
        dd = fused(d, [(0, "t", 0, spec)], ("wexp", None)) if spec is not None else None
        if dd is None:
            dd, dexpr, tmp = eng.dplans[p].expr_static(B, d, sides, "_d")
            dd = B.with_columns(dd, {"wexp": B.col("t") + dexpr})
            if tmp:
                dd = B.drop(dd, tmp)
        dd = B.filter(dd, B.col("wexp") > B.lit(tau, INT))
        if not B.is_empty(dd):
            eng.W[p] = B.materialize(B.concat([eng.W[p], dd]))


def duplicate_facts(eng, cols: dict, dup_frames: list) -> list:
    """The duplicate facts of D|τ (repeats inside the slice, and facts already in W)."""
    B = eng.B
    out: list = []
    for p, seen in dup_frames:
        out.extend(_facts(eng, p, seen))
    for p, c in cols.items():
        n = eng.edb[p] - 1
        if not isinstance(c, dict):  # a frame as read (stream.Slice): rare, so by rows
            rows = B.rows(c)
            c = {k: [r[k] for r in rows] for k in [acol(i) for i in range(n)] + ["t"]}
        ts = c["t"]
        if len(ts) <= 1:
            continue
        seen_keys: set = set()
        for j in range(len(ts)):
            key = (tuple(c[acol(i)][j] for i in range(n)), int(ts[j]))
            if key in seen_keys:
                out.append(Fact(p, key[0], key[1]))
            seen_keys.add(key)
    return out


def window_facts(eng) -> list:
    """The facts of W (arrived, still future-possible by timestamp)."""
    out = []
    for p, w in eng.W.items():
        out.extend(_facts(eng, p, w))
    return out


def _facts(eng, p: str, frame) -> list:
    """The rows of a frame of p's facts (a0.., t) as Facts."""
    n = eng.edb[p] - 1
    return [Fact(p, tuple(r[acol(i)] for i in range(n)), r["t"]) for r in eng.B.rows(frame)]


def load_window(eng, facts: Iterable) -> None:
    """Replace W (facts with their δ recomputed)."""
    B = eng.B
    by: dict = {}
    for f in facts:
        by.setdefault(f.pred, []).append(f)
    for p in list(eng.W):
        eng.W[p] = B.empty(fact_schema(eng.edb[p] - 1, window=True))
    for p, fs in by.items():
        if p not in eng.edb:
            eng.edb[p] = len(fs[0].args) + 1
            eng.dplans[p] = DelayPlan(eng.delays, p)
        n = eng.edb[p] - 1
        rows = [{**{acol(i): f.args[i] for i in range(n)}, "t": f.time,
                 "wexp": f.time + eng.delays.ground(p, f.args)} for f in fs]
        eng.W[p] = B.from_rows(rows, fact_schema(n, window=True))
