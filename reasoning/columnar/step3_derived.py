"""Derived literals on the columnar executor (modular evaluation, issue 45): step 3 over the
nodes p_t of negated and derived literals alike, in the T-stratification's order, node by
node as they become decidable; a derived literal's dual of 3(b)-(c) (a definite answer of p_t
moves it to evidence, once p_t is closed an instance no answer can prove is refuted); the
seeding of callers by each ground answer of p definite at τ (step 1(a) for a derived atom).
The decisions are the row engine's own functions (Engine._step3_derived, seeded_by,
_proven_derived) on just the rows of the answers concerned — fallback.py's way — so both
executors give the same S_τ; negated literals keep step3_refine's joins."""
from __future__ import annotations

import heapq
from collections import defaultdict

from reasoning.columnar.fallback import (L_at, L_answers, answer_rows, ref_answers,
                                         replace_rows)
from reasoning.columnar.layout import INT, acol, row_to_answer
from reasoning.columnar.state import add
from reasoning.columnar.step3_negation import L_frames
from reasoning.columnar.step3_refine import refine


def step3_modular(eng, tau: int, present: dict) -> None:
    """Step 3 for a program with derived literals, in Engine._step3's order: the answers
    definite at τ seed their callers; the nodes p_t of the open negated and derived
    literals — at t ≤ τ, or once p_t has a definite answer — go on a heap by strat key and
    are decided one by one, each once a tick; the answers a node makes definite push
    their own head's node (if a literal waits on it) and seed their callers."""
    ctx = _Tick(eng, tau, present)
    heap: list = []
    queued: set = set()

    def push(pred: str, t) -> None:
        if (pred, t) in queued or not ctx.has_refs(pred, t):
            return
        queued.add((pred, t))
        heapq.heappush(heap, (eng.strat.key(pred, t), pred, t))

    def became_definite(answers: list) -> None:
        for a in ctx.seed(answers):
            _, ht = eng.templates[a.tid].head.instantiate(a.b)
            if ht is not None:
                push(eng.templates[a.tid].head.pred, ht)

    became_definite(ctx.new_definite(range(len(eng.templates))))
    defs = ctx.definite_times()
    for (pred, t) in sorted(ctx.nodes(), key=lambda n: (eng.strat.key(*n), n)):
        got = defs.get(pred, ())
        if t <= tau or t in got or None in got:
            push(pred, t)
    while heap:
        _, pred, t = heapq.heappop(heap)
        ctx.L = {}
        touched = []
        for k, j in ctx.refs_of.get(pred, ()):
            touched.extend(ctx.decide(k, j, t))
        became_definite(ctx.new_definite(touched))


class _Tick:
    """One tick's step 3 state: W ∪ D|τ as look-ups, the definite answers made at τ seen
    so far, the index of definite ground heads of derived predicates (Engine.proven)."""

    def __init__(self, eng, tau: int, present: dict):
        self.eng, self.tau = eng, tau
        B = eng.B
        idx: dict = defaultdict(set)
        for p, F in present.items():
            if F is None or B.is_empty(F):
                continue
            n = eng.edb[p] - 1
            for r in B.rows(F):
                idx[(p, r["t"])].add(tuple(r[acol(i)] for i in range(n)))
        self.idx = idx
        self.seen: set = set()  # definite answers made at τ, seen (and seeded) already
        self.derived = {tp.lits[i].pred for tp in eng.templates for i in tp.der}
        # pred -> [(template, literal)] of the negated and derived literals on it
        self.refs_of: dict = defaultdict(list)
        for k, tp in enumerate(eng.templates):
            for j in tp.neg + tp.der:
                self.refs_of[tp.lits[j].pred].append((k, j))
        self.L: dict = {}  # the node's answers of p_t (fallback.L_answers), while it runs
        self.answers: dict = {}  # pred -> (its templates' versions, L_answers by time)
        self.version: dict = defaultdict(int)  # template -> rows changed this many times
        self._proven: dict = None  # Engine.proven, built when first read (proven)

    # ---------------------------------------------------------------- look-ups
    def look_both(self, pred: str, t):
        if t is None:
            return [(a, tt) for (p, tt), s in self.idx.items() if p == pred for a in s]
        return [(a, t) for a in self.idx.get((pred, t), ())]

    def in_both(self, pred: str, args: tuple, t: int) -> bool:
        return args in self.idx.get((pred, t), ())

    def _definite(self, templates, born_now: bool = False) -> list:
        """The definite answers of these templates in S_τ (born_now: made at τ; templates
        may also be (template, pattern) pairs: those partitions only)."""
        eng, B = self.eng, self.eng.B
        out = []
        for k in templates:
            k, parts = (k if isinstance(k, tuple) else (k, None))
            lay = eng.layouts[k]
            cond = B.col("ev") == B.lit(lay.full_mask, INT)
            if born_now:
                cond = cond & (B.col("born") == B.lit(self.tau, INT))
            for P, A in eng.S[k].items():
                if parts is not None and P != parts:
                    continue
                D = B.filter(A, cond)
                if not B.is_empty(D):
                    out.extend(row_to_answer(lay, r) for r in B.rows(D))
        return out

    @property
    def proven(self) -> dict:
        """Engine.proven: (pred, args, t) -> the definite answers of a derived predicate
        with that ground head in S_τ now."""
        if self._proven is None:
            eng = self.eng
            self._proven = defaultdict(set)
            for a in self._definite(k for p in self.derived for k in eng.by_head.get(p, ())):
                self._prove(a)
        return self._proven

    def _prove(self, a) -> None:
        """Engine.add's `proven` entry for a definite answer of a derived predicate (once
        the index is built: until then it is built from S_τ)."""
        if self._proven is None:
            return
        tp = self.eng.templates[a.tid]
        if tp.head.pred in self.derived:
            hargs, ht = tp.head.instantiate(a.b)
            if ht is not None and None not in hargs:
                self._proven[(tp.head.pred, hargs, ht)].add(a)

    def new_definite(self, templates) -> list:
        """The definite answers made at τ in these templates (or (template, pattern)
        partitions) not seen yet (Engine's fresh_definite as it grows), in a fixed order;
        indexed as proven."""
        out = []
        for a in self._definite(sorted(set(templates), key=repr), born_now=True):
            if a not in self.seen:
                self.seen.add(a)
                self._prove(a)
                out.append(a)
        return out

    def definite_times(self) -> dict:
        """pred -> the head times of its definite answers in S_τ (None: unbound)."""
        eng, B = self.eng, self.eng.B
        out: dict = defaultdict(set)
        for p in self.refs_of:
            for k in eng.by_head.get(p, ()):
                head = eng.templates[k].head
                full = B.col("ev") == B.lit(eng.layouts[k].full_mask, INT)
                for P, A in eng.S[k].items():
                    D = B.filter(A, full)
                    if B.is_empty(D):
                        continue
                    if head.tvar is not None and head.tvar not in P:
                        out[p].add(None)
                    else:
                        out[p].update(B.values(B.select(D, [B.alias(eng._texpr(head),
                                                                    "_t")]), "_t"))
        return out

    # ---------------------------------------------------------------- nodes
    def _open(self, k: int, j: int, P, A, t=None):
        """The rows of partition P of template k with literal j open (at time t)."""
        eng, B = self.eng, self.eng.B
        lp = eng.templates[k].lits[j]
        cond = ~B.has_bit(B.col("ev"), j)
        if t is not None and lp.tvar is not None:
            cond = cond & (eng._texpr(lp) == B.lit(t, INT))
        return B.filter(A, cond)

    def nodes(self) -> set:
        """The nodes (pred, t) an open negated or derived literal waits on
        (Engine.neg_index's keys)."""
        eng, B = self.eng, self.eng.B
        out: set = set()
        for pred, lits in self.refs_of.items():
            for k, j in lits:
                lp = eng.templates[k].lits[j]
                for P, A in eng.S[k].items():
                    if lp.tvar is not None and lp.tvar not in P:
                        continue
                    open_ = self._open(k, j, P, A)
                    if B.is_empty(open_):
                        continue
                    if lp.tvar is None:
                        out.add((pred, lp.toff))
                    else:
                        out.update((pred, t) for t in B.values(
                            B.select(open_, [B.alias(eng._texpr(lp), "_t")]), "_t"))
        return out

    def has_refs(self, pred: str, t) -> bool:
        """Does an open negated or derived literal wait on p_t?"""
        eng, B = self.eng, self.eng.B
        for k, j in self.refs_of.get(pred, ()):
            lp = eng.templates[k].lits[j]
            if lp.tvar is None and lp.toff != t:
                continue
            for P, A in eng.S[k].items():
                if lp.tvar is not None and lp.tvar not in P:
                    continue
                if not B.is_empty(self._open(k, j, P, A, t)):
                    return True
        return False

    # ---------------------------------------------------------------- step 3 on one node
    def decide(self, k: int, j: int, t: int) -> list:
        """Steps 3(a)-(c) of literal j of template k at node time t: the partitions
        (template, pattern) pieces went to."""
        eng, B = self.eng, self.eng.B
        tp = eng.templates[k]
        lp = tp.lits[j]
        if lp.tvar is None and lp.toff != t:
            return False
        changed = []
        for P in list(eng.S[k]):
            if lp.tvar is not None and lp.tvar not in P:
                continue
            A = eng.S[k][P]
            cond = ~B.has_bit(B.col("ev"), j)
            if lp.tvar is not None:
                cond = cond & (eng._texpr(lp) == B.lit(t, INT))
            R = B.materialize(B.filter(A, cond))
            if B.is_empty(R):
                continue
            if lp.derived:
                kept, pieces = self._derived(k, j, P, R, t)
            else:
                kept, pieces = refine(eng, k, j, P, R, L_frames(eng, lp.pred, self.tau),
                                      self.tau)
            if kept is not None and not pieces and B.height(kept) == B.height(R):
                continue  # every ref unchanged
            rest = B.filter(A, ~cond)
            eng.S[k][P] = B.materialize(B.concat([rest, kept]) if kept is not None else rest)
            for P2, df in pieces:
                add(eng, k, P2, df)
                changed.append((k, P2))
        if changed:
            self.version[k] += 1
        return changed

    def _derived(self, k: int, j: int, P, rows, t: int):
        """Engine._step3_derived on the refs `rows` (partition P), the pieces' proven
        derived literals moved to evidence (_proven_derived): (unchanged rows, [(pattern,
        rows of the pieces that replace the others)])."""
        eng, tau = self.eng, self.tau
        tool = eng.tool
        tp = eng.templates[k]
        lp = tp.lits[j]
        L = self.L.get((lp.pred, t))
        if L is None:
            L = self.L[(lp.pred, t)] = L_at(eng, self._answers_of(lp.pred), t, tau)

        def pieces_of(a) -> list:
            pieces = tool._step3_derived(tp, j, a.b, a.ng, a.ev, L, t <= tau)
            if len(pieces) == 1 and pieces[0] == (a.b, a.ng, a.ev):
                return pieces
            return [p for p in (tool._proven_derived(tp, *pc) for pc in pieces)
                    if p is not None]

        tool.proven = self.proven
        try:
            return replace_rows(eng, k, P, ref_answers(eng, k, rows), tau, pieces_of)
        finally:
            tool.proven = defaultdict(set)

    def _answers_of(self, pred: str) -> dict:
        """fallback.L_answers of pred at every head time, kept while none of its
        templates changed (most derived predicates' answers do not change at step 3)."""
        eng = self.eng
        ks = eng.by_head.get(pred, ())
        ver = tuple(self.version[k] for k in ks)
        got = self.answers.get(pred)
        if got is None or got[0] != ver:
            got = self.answers[pred] = (ver, L_answers(eng, pred, None))
        return got[1]

    # ---------------------------------------------------------------- seeding
    def seed(self, answers: list) -> list:
        """Engine._seed_derived for each answer of a derived predicate among these
        (definite at τ, seen for the first time), and again for the definite answers the
        seeding makes: all of them (the given ones first)."""
        eng, tau = self.eng, self.tau
        out = list(answers)
        todo = [a for a in answers if eng.templates[a.tid].head.pred in self.derived]
        tool = eng.tool
        while todo:
            new: dict = {}
            tool.proven = self.proven
            try:
                for d in todo:
                    for na in tool.seeded_by(d, tau, self.look_both, self.in_both):
                        P2 = frozenset(i for i, v in enumerate(na.b) if v is not None)
                        new.setdefault((na.tid, P2), []).append(na)
            finally:
                tool._info.clear()
                tool.proven = defaultdict(set)
            for (k, P2), lst in new.items():
                add(eng, k, P2, eng.B.from_rows(answer_rows(eng, k, P2, lst, tau, tau),
                                                eng._schema(k, P2)))
                self.version[k] += 1
            made = self.new_definite(set(new))
            out.extend(made)
            todo = [a for a in made if eng.templates[a.tid].head.pred in self.derived]
        return out
