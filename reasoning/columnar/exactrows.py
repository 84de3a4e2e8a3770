"""Exact instances of the waiting answers (reasoning/semantics/exact.py) on the columnar executor: the
partitions whose pattern leaves a positive hypothesis or the head non-ground are known
statically; their rows with evidence and not definite (few: the survivors of local mgus)
are refined by exact.py itself, so both executors give the same S_τ."""
from __future__ import annotations

from reasoning.semantics.exact import heads_of
from reasoning.columnar.fallback import answer_rows
from reasoning.columnar.layout import INT, OBJ, acol, row_to_answer, vcol


class ExactPass:
    """One tick's refinement: lookups of W ∪ D|τ, D|τ and definite heads, cached."""

    def __init__(self, eng, tau: int, D: dict, present: dict, fresh: dict):
        self.eng, self.tau, self.D, self.present, self.fresh = eng, tau, D, present, fresh
        self._facts: dict = {}
        self._heads: dict = {}

    def facts(self, only_new: bool, pred: str, t: int) -> list:
        """Argument tuples of the facts p(…, t) of D|τ (only_new) or W ∪ D|τ."""
        key = (only_new, pred, t)
        got = self._facts.get(key)
        if got is None:
            B = self.eng.B
            F = (self.D if only_new else self.present).get(pred)
            got = []
            if F is not None and not B.is_empty(F):
                n = self.eng.edb[pred] - 1
                for r in B.rows(B.filter(F, B.col("t") == B.lit(t, INT))):
                    got.append(tuple(r[acol(i)] for i in range(n)))
            self._facts[key] = got
        return got

    def remember(self, add: bool = True) -> None:
        """The ground heads definite at τ, of the predicates refinement reads (add: and
        remember them, Answered)."""
        eng = self.eng
        B = eng.B
        ans = eng.answered
        if add:
            ans.expire(self.tau)
        for (k, P), f in self.fresh.items():
            tp = eng.templates[k]
            h = tp.head
            if h.pred not in ans.horizons or B.is_empty(f):
                continue
            ground = all(x in P for isvar, x in h.args if isvar) and (
                h.tvar is None or h.tvar in P)
            if ground and getattr(B, "cheap_checks", False):
                # a ground head in every row: read from the columns (in process)
                n = B.height(f)
                cols = [B.column_list(f, vcol(x)) if isvar else [x] * n for isvar, x in h.args]
                hts = [h.toff] * n if h.tvar is None else [
                    t + h.toff for t in B.column_list(f, vcol(h.tvar))]
                heads = zip(zip(*cols) if cols else [()] * n, hts)
            else:
                heads = (h.instantiate(row_to_answer(eng.layouts[k], r).b) for r in B.rows(f))
            for hargs, ht in heads:
                if ht is not None and None not in hargs:
                    self._heads.setdefault((h.pred, ht), []).append(hargs)
                    if add:
                        ans.add(h.pred, hargs, ht)

    def fact_set(self, only_new: bool, pred: str, t: int) -> set:
        key = ("set", only_new, pred, t)
        got = self._facts.get(key)
        if got is None:
            got = self._facts[key] = set(self.facts(only_new, pred, t))
        return got

    def drop_answered(self) -> None:
        """Answers with evidence, not definite, whose ground head is a remembered definite
        head (minimality of H): an anti-join with the remembered heads (one frame per head
        predicate, built only when some partition has such answers) of the rows whose head
        time is within the remembered heads' times (most often none: `w1` never had one)."""
        eng = self.eng
        B = eng.B
        ans = eng.answered
        frames: dict = {}
        mems: dict = {}
        for k, tp in enumerate(eng.templates):
            h = tp.head
            if h.pred not in ans.horizons or len(tp.lits) < 2:
                continue
            if len(eng.S[k]) == 1 and eng.tail_done(k, eng.S[k].get(eng.all_vars[k])):
                continue  # (step1_family's tail checked them)
            mem = mems.get(h.pred)
            if mem is None:
                mem = ans.of(h.pred)
                mem = mems[h.pred] = (mem, min(t for _, t in mem), max(t for _, t in mem)) \
                    if mem else None
            if not mem:
                continue  # nothing remembered of this predicate
            mem, lo, hi = mem
            need = {x for isvar, x in h.args if isvar} | (
                {h.tvar} if h.tvar is not None else set())
            full = eng.layouts[k].full_mask
            n = len(h.args)
            sch = {f"_h{i}": OBJ for i in range(n)}
            sch["_ht"] = INT
            ht = eng._texpr(h)
            for P, A in list(eng.S[k].items()):
                if not need <= P or B.is_empty(A) or eng.tail_done(k, A):
                    continue  # (step1_family's tail checked them)
                cand = (B.col("ev") != B.lit(0, INT)) & (B.col("ev") != B.lit(full, INT)) & \
                    (ht >= B.lit(lo, INT)) & (ht <= B.lit(hi, INT))
                C = B.filter(A, cand)
                if B.is_empty(C):
                    continue
                M = frames.get(h.pred)
                if M is None:
                    M = frames[h.pred] = B.from_rows(
                        [{**{f"_h{i}": a[i] for i in range(n)}, "_ht": t} for a, t in mem],
                        sch)
                items = {f"_h{i}": (B.col(vcol(x)) if isvar else B.lit(x, OBJ))
                         for i, (isvar, x) in enumerate(h.args)}
                items["_ht"] = ht
                rest = B.join(B.with_columns(C, items), M, list(sch), list(sch), how="anti")
                eng.S[k][P] = B.materialize(B.concat([B.filter(A, ~cand),
                                                      B.drop(rest, list(sch))]))

    def drop_arrived(self) -> None:
        """Ground answers new at τ, with evidence and not definite, that wait for a fact
        of W ∪ D|τ (a piece of step 3 bound a variable of an answer of step 2): dropped,
        as exact.refine drops them on the row engine — a semi-join per literal."""
        eng = self.eng
        B = eng.B
        ex = eng.exact
        tau = self.tau
        for k, tp in enumerate(eng.templates):
            if not ((tp.neg or tp.der) and eng.tool._born_check[k]):
                continue  # without negated or derived literals no piece of step 3 binds
                # a hypothesis
            full = eng.layouts[k].full_mask
            for P, A in list(eng.S[k].items()):
                if ex.partition_watched(k, P) or B.is_empty(A):
                    continue
                lits = [i for i in tp.pos if tp.lits[i].pred in self.present
                        and all(x in P for isvar, x in tp.lits[i].args if isvar)
                        and (tp.lits[i].tvar is None or tp.lits[i].tvar in P)]
                if not lits:
                    continue
                cand = (B.col("born") == B.lit(tau, INT)) & (B.col("ev") != B.lit(0, INT)) & (
                    B.col("ev") != B.lit(full, INT))
                C = B.filter(A, cand)
                if B.is_empty(C):
                    continue
                keep = B.filter(A, ~cand)
                for i in lits:
                    lp = tp.lits[i]
                    F = self.present[lp.pred]
                    n = len(lp.args)
                    keys = {f"_a{j}": (B.col(vcol(x)) if isvar else B.lit(x, OBJ))
                            for j, (isvar, x) in enumerate(lp.args)}
                    keys["_at"] = eng._texpr(lp)
                    X = B.with_columns(C, keys)
                    open_ = ~B.has_bit(B.col("ev"), i)
                    hit = B.join(B.filter(X, open_), B.select(
                        F, [B.alias(B.col(acol(j)), f"_a{j}") for j in range(n)]
                        + [B.alias(B.col("t"), "_at")]), list(keys), list(keys), how="semi")
                    if B.is_empty(hit):
                        continue
                    C = B.drop(B.join(X, B.select(hit, [B.col(c) for c in eng._keys(P)]),
                                      eng._keys(P), eng._keys(P), how="anti",
                                      nulls_equal=True), list(keys))
                eng.S[k][P] = B.materialize(B.concat([keep, C]))

    def heads(self, only_fresh: bool, pred: str, t: int):
        """Ground heads p(…, t) of definite answers: new at τ, or all remembered."""
        if only_fresh:
            return self._heads.get((pred, t), ())
        return self.eng.answered.get(pred, t)

    def heads_any(self, pred: str) -> list:
        """(args, t) of the remembered definite heads of a predicate, at any time."""
        return self.eng.answered.of(pred)

    def fresh_heads_any(self, pred: str) -> list:
        """(args, t) of the heads of a predicate definite at τ, at any time."""
        return heads_of(self._heads, pred)

    def run(self) -> None:
        """After step 3: drop answered and arrived answers, refine the watched rows."""
        eng = self.eng
        if eng.answered.horizons:
            self.remember()
            self.drop_answered()
        self.drop_arrived()
        self._refine_watched(first=False)

    def split_first(self) -> None:
        """Before step 3: split the watched rows whose evidence holds a fact and whose time
        variable is unbound, so step 3 decides their past negated instances at τ and reads
        their floors at τ (exact.py, Exactness.splits_first)."""
        eng = self.eng
        ex = eng.exact
        if not any(ex.flits[k] and ex.may_ng[k] and ex.partition_watched(k, P)
                   and not all(tp.lits[i].tvar in P for i in ex.flits[k])
                   for k, tp in enumerate(eng.templates) for P in eng.S[k]):
            return  # no partition leaves a time variable unbound (static: no Spark job)
        self.fresh = eng._fresh(self.tau)
        self.remember(add=False)  # the definite heads of step 1
        self._refine_watched(first=True)

    def _refine_watched(self, first: bool) -> None:
        """exact.refine on the watched rows (with evidence, not definite) of the partitions
        that may need it; first: only the rows split before step 3, else the rest are
        split and those are only checked."""
        eng = self.eng
        B = eng.B
        ex = eng.exact
        tau = self.tau
        for k, tp in enumerate(eng.templates):
            if not ex.may_ng[k] or (first and not ex.flits[k]):
                continue
            lay = eng.layouts[k]
            full = lay.full_mask
            new: dict = {}
            for P, A in list(eng.S[k].items()):
                if not ex.partition_watched(k, P) or B.is_empty(A):
                    continue
                if first and all(tp.lits[i].tvar in P for i in ex.flits[k]):
                    continue  # every time variable bound: no floor
                Wd = B.filter(A, (B.col("ev") != B.lit(0, INT)) & (B.col("ev") != B.lit(full, INT)))
                if B.is_empty(Wd):
                    continue
                changed = []
                for r in B.rows(Wd):
                    a = row_to_answer(lay, r)
                    early = ex.splits_first(tp, a.ev)
                    if first and not early:
                        continue  # made watched by step 3 only: split after it
                    fresh = r["born"] == tau
                    pieces = ex.refine(
                        tp, a.b, a.ev, a.ng, tau,
                        lambda p, t, fresh=fresh: self.facts(not fresh, p, t),
                        lambda p, t, fresh=fresh: self.heads(not fresh, p, t),
                        lambda p, args, t, fresh=fresh: args in self.fact_set(not fresh, p, t),
                        fresh, self.heads_any if fresh else self.fresh_heads_any,
                        first or not early, first and a in eng.seeded)
                    if pieces is None:
                        continue
                    changed.append(r)
                    for b, ng in pieces:
                        na = eng.tool._finish(tp, b, a.ev, ng, tau)
                        if na is not None:
                            P2 = frozenset(i for i, v in enumerate(na.b) if v is not None)
                            new.setdefault(P2, []).append(na)
                eng.tool._info.clear()
                if changed:
                    sch = eng._schema(k, P)
                    gone = B.from_rows([{c: r[c] for c in sch} for r in changed], sch)
                    keys = eng._keys(P)
                    eng.S[k][P] = B.materialize(
                        B.join(A, B.select(gone, [B.col(c) for c in keys]), keys, keys,
                               how="anti", nulls_equal=True))
            for P2, lst in new.items():
                eng._add(k, P2, B.from_rows(answer_rows(eng, k, P2, lst, tau, tau),
                                            eng._schema(k, P2)))
