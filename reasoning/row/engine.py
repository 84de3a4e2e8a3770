"""The online update S_{τ-1} × D|τ → S_τ: Algorithm 1 of 002_…txt (§6), with delays and negation.

A schematic hypothetical answer ⟨P, θ, E, H⟩ is an `Answer`: its template (which fixes P
and the literal set E ∪ H), a binding of the template's variables (θ plus the local mgus
applied so far), the indices of the literals already in E, and nogoods (disequality
constraints, see regions.py).  The state is indexed by what can change an answer — the
facts it waits for, the tick its positive hypotheses expire, the instantiated predicates
p_t of its negated hypotheses — so a tick costs time proportional to what arrives and what
it touches, not to |S_τ|.
"""
from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple, Optional

from reasoning.language.compiler import CompiledProgram
from reasoning.semantics.answer import Answer, TickReport
from reasoning.semantics.exact import Answered, Exactness, heads_of
from reasoning.semantics.explain import static_horizons
from reasoning.util.gcpause import frozen_survivors
from reasoning.semantics.patterns import (Binding, ETemplate, Fact, compile_templates,
                                         reduce_nogoods, window_heads,
                                         window_ranges)
from reasoning.semantics.regions import TRUE, cover_of, partition


class Engine:
    """Algorithm 1 over an in-memory indexed S_τ; `step` is the update for one tick."""

    def __init__(self, cp: CompiledProgram, forget: bool = True):
        self.cp = cp
        self.forget = forget
        self.templates: tuple[ETemplate, ...] = compile_templates(cp.queries)
        self.strat = cp.analysis.stratification
        self.delays = cp.delays
        self.main_qid = 0
        self.tau = -1
        self.answers: set[Answer] = set()
        # indexes
        self.wake_ground: dict = defaultdict(set)  # (pred, args, t) -> answers
        self.wake_pt: dict = defaultdict(set)  # (pred, t) -> answers (args not ground)
        self.wake_p: dict = defaultdict(set)  # pred -> answers (time not ground)
        self.wake_pa: dict = defaultdict(set)  # (pred, args) -> answers (only time unbound)
        self.expiry: dict = defaultdict(set)  # tick -> answers
        self.neg_index: dict = defaultdict(set)  # (pred, t) -> answers with ¬p(..., t) in H
        self.head_index: dict = defaultdict(set)  # (pred, t|None) -> answers of that p_t
        self.head_ground: dict = defaultdict(set)  # (pred, args, t) -> answers, ground heads
        self.head_schematic: dict = defaultdict(set)  # (pred, t|None) -> non-ground heads
        self.proven: dict = defaultdict(set)  # (pred, args, t) -> definite ground answers of
        # a derived predicate (modular evaluation: _proven_derived)
        # answers with a negated or derived literal on a derived predicate, by its instance:
        # ground (pred, args, t) / not ground (pred, t) — the refs of p_t a definite answer
        # can change before p_t closes (_process_node) —, and since p_t was last processed
        # the refs added and the heads of the definite answers added
        self.neg_ground: dict = defaultdict(set)
        self.neg_open: dict = defaultdict(set)
        self._new_refs: dict = defaultdict(set)
        self._new_proven: dict = defaultdict(list)
        self.retire: dict = defaultdict(set)  # tick -> definite answers to forget then
        self.fresh_definite: set[Answer] = set()  # answers that became definite this tick
        self._entries: dict[Answer, list] = {}  # answer -> the index sets it is in
        self._info: dict[Answer, tuple] = {}  # answers built this tick -> _inspect() result
        # the window W: arrived facts still future-possible by timestamp (t + δ > τ)
        self.window: dict = defaultdict(set)  # (pred, t) -> set of args
        self.window_expiry: dict = defaultdict(set)  # tick -> set of Fact
        self.by_pred: dict = defaultdict(list)  # pred -> [(tpl, lit index)] positive lits
        # per template: every positive literal binds all its variables (a fact seeds a ground
        # answer through any of them)
        self.full_seeds = []
        for tp in self.templates:
            for i in tp.pos:
                self.by_pred[tp.lits[i].pred].append((tp, i, tp.seeds_all(i)))
            self.full_seeds.append(tp.full_seed)
        # pred -> [(tpl, lit index)]: derived literals (modular evaluation, _seed_derived)
        self.by_der: dict = defaultdict(list)
        for tp in self.templates:
            for i in tp.der:
                self.by_der[tp.lits[i].pred].append((tp, i))
        self._lookups: Optional[tuple] = None  # (look_both, in_both) of the tick
        self.ahead = self._ahead()  # derived pred -> head times step 2 creates ahead of τ
        self._created_to: dict[int, int] = {}  # template -> last head time step 2 created
        self._by_head: Optional[dict] = None  # derived pred -> its templates (future_ways)
        self._fw: dict = {}  # (pred, head time) -> templates alive there, at tick _fw_tau
        self._fw_tau = -1
        self._fw_static: dict = {}  # template -> _future_static
        self.retention = self._retention()
        self._delay_cache: dict = {}
        self.exact = Exactness(self.templates, self.delays, cp.analysis.rigid)
        self.answered = Answered(self.exact.horizons())  # definite heads (exact.py)
        # watched answers (may_ng) and ground answers checked once when new: those of a
        # template with negation (a piece of step 3 may wait for an arrived fact) or whose
        # head predicate's definite heads are remembered
        self._born_check = [(len(tp.lits) > 1 or bool(tp.der)) and (
            bool(tp.neg or tp.der) or tp.head.pred in self.answered.horizons)
            for tp in self.templates]
        self._track = [m or c for m, c in zip(self.exact.may_ng, self._born_check)]
        self.watch: set[Answer] = set()  # answers exact refinement may change (exact.py)
        self._born: set[Answer] = set()  # watched answers added this tick
        self._seeded: set[Answer] = set()  # answers of step 1(a) this tick (exact.nlits)
        self._definite_added = 0  # definite answers added so far (_seed_derived's memo)
        self._seeds: dict = {}  # (template, binding, nogoods) -> _definite_added when seeded
        self.watch_t: set[Answer] = set()  # watched answers with an unbound time variable

    # ------------------------------------------------------------------ δ, future-possible

    def delta(self, pred: str, args: tuple) -> int:
        """δ of an atom with some arguments unknown (None): max over its instances (§3)."""
        key = (pred, args)
        d = self._delay_cache.get(key)
        if d is None:
            d = self.delays.atom(pred, args)
            self._delay_cache[key] = d
        return d

    # ------------------------------------------------------------------ state maintenance

    def add(self, a: Answer, tau: int) -> bool:
        """Insert an answer into S (with all its indexes); False if dead or already there."""
        info = self._info.pop(a, None)
        if a in self.answers:
            return False
        tp = self.templates[a.tid]
        if info is None:
            info = self._inspect(tp, a.b, a.ev)
            if info is None:
                return False
        exp, insts, hargs, ht = info
        if exp is not None and exp <= tau:
            return False  # a positive hypothesis can no longer arrive
        self.answers.add(a)
        if len(a.ev) == len(tp.lits):
            self.fresh_definite.add(a)
            self._definite_added += 1
        entries = []
        if exp is not None:
            entries.append((self.expiry, exp))
        for i, lp in enumerate(tp.lits):
            if i in a.ev:
                continue
            args, t = insts[i]
            if lp.positive and not lp.derived:
                if t is None:
                    entries.append((self.wake_p, lp.pred) if None in args else
                                   (self.wake_pa, (lp.pred, args)))
                elif None in args:
                    entries.append((self.wake_pt, (lp.pred, t)))
                else:
                    entries.append((self.wake_ground, (lp.pred, args, t)))
            elif t is not None:  # negated or derived: decided at step 3
                entries.append((self.neg_index, (lp.pred, t)))
                if lp.pred in self.by_der:  # (_process_node's refs a definite answer covers)
                    entries.append((self.neg_open, (lp.pred, t)) if None in args else
                                   (self.neg_ground, (lp.pred, args, t)))
                    self._new_refs[(lp.pred, t)].add(a)
        entries.append((self.head_index, (tp.head.pred, ht)))
        if ht is not None and None not in hargs:
            entries.append((self.head_ground, (tp.head.pred, hargs, ht)))
            if len(a.ev) == len(tp.lits) and tp.head.pred in self.by_der:
                entries.append((self.proven, (tp.head.pred, hargs, ht)))
                self._new_proven[(tp.head.pred, ht)].append(hargs)
        else:
            entries.append((self.head_schematic, (tp.head.pred, ht)))
        for index, key in entries:
            index[key].add(a)
        self._entries[a] = entries
        if self._track[a.tid] and a.ev and len(a.ev) < len(tp.lits):
            if self.exact.watched(tp, a.b, a.ev):
                self.watch.add(a)
                self._born.add(a)
                if self.exact.unbound_time(tp, a.b, a.ev):
                    self.watch_t.add(a)
            elif ht is not None and None not in hargs and self._born_check[a.tid]:
                self._born.add(a)  # checked once (exact.py): answered, or fact arrived
        return True

    def remove(self, a: Answer) -> None:
        """Delete an answer and its index entries."""
        if a not in self.answers:
            return
        self.answers.discard(a)
        self.fresh_definite.discard(a)
        self.watch.discard(a)
        self.watch_t.discard(a)
        self._born.discard(a)
        for index, key in self._entries.pop(a):
            s = index.get(key)
            if s is not None:
                s.discard(a)
                if not s and index is not self.expiry:
                    del index[key]

    def is_definite(self, a: Answer) -> bool:
        return len(a.ev) == len(self.templates[a.tid].lits)

    # ------------------------------------------------------------------ step 1: local mgus

    def local_mgus(self, tp: ETemplate, b: Binding, ev: frozenset, order: list[int],
                   lookup, present) -> list[tuple[Binding, frozenset]]:
        """Local mgus (Def. 16) of the positive hypotheses `order` against the facts given
        by `lookup`; E' = Hσ ∩ `present` for every σ (Algorithm 1, step 1)."""
        out: dict[Binding, frozenset] = {}

        def go(k: int, b: Binding) -> None:
            if k == len(order):
                for b in (window_heads(tp, b) if tp.windows else (b,)):
                    if b in out:
                        continue
                    got = set(ev)
                    for i in tp.pos:
                        if i in got:
                            continue
                        args, t = tp.lits[i].instantiate(b)
                        if t is not None and None not in args and \
                                present(tp.lits[i].pred, args, t):
                            got.add(i)
                    out[b] = frozenset(got)
                return
            i = order[k]
            lp = tp.lits[i]
            args, t = lp.instantiate(b)
            if t is not None and None not in args:
                go(k + 1, b)
                return
            found = lookup(lp.pred, t) if t is not None or None in args else \
                lookup(lp.pred, None, args)  # (a window's operand: its times only)
            for fargs, ft in found:
                nb = lp.match(b, fargs, ft)
                if nb is not None:
                    go(k + 1, nb)
            go(k + 1, b)

        try:
            go(0, b)
        finally:
            # go's closure holds its own cell: a reference cycle (go -> cell -> go) keeping
            # `out`, `lookup` and `present` — and through them the tick's slice — alive
            # until a full collection, which frozen_survivors defers (issue 44)
            del go
        return list(out.items())

    def _regenerated_by_1a(self, a: Answer, in_both) -> bool:
        """True if a's step-1(b) update equals a step-1(a) candidate seeded by a fact of D|τ:
        a is ground, every template seed binds all its variables, its evidence is positive
        and still in W ∪ D|τ, and it carries only the template's nogoods."""
        tp = self.templates[a.tid]
        if not self.full_seeds[a.tid] or a.ng != tp.nogoods or None in a.b:
            return False
        for i in a.ev:
            lp = tp.lits[i]
            if not lp.positive or lp.derived:
                return False
            args, t = lp.instantiate(a.b)
            if not in_both(lp.pred, args, t):
                return False
        return True

    def _pristine_survives(self, tp: ETemplate, a: Answer, tau: int, in_slice) -> bool:
        """Step 1(b) with σ = ∅ for a pristine answer: it stays unchanged unless one of its
        ground positive hypotheses arrived now (1(a) makes the evolved answer) or expired."""
        for i in tp.pos:
            args, t = tp.lits[i].instantiate(a.b)
            if t is None:
                continue
            if None not in args and in_slice(tp.lits[i].pred, args, t):
                return False
            if t + self.delta(tp.lits[i].pred, args) <= tau:
                return False
        return True

    def _inspect(self, tp: ETemplate, b: Binding, ev: frozenset, insts=None):
        """Instantiate every literal once: (expiry, literal instances, head args, head
        time), or None if some timestamp is invalid (negative, or below a pre-processing
        bound — 002 Example 13's "invalid timestamps")."""
        hargs, ht = tp.head.instantiate(b)
        if ht is not None and ht < 0:
            return None
        for v, k in tp.time_min:
            if b[v] is not None and b[v] < k:
                return None
        for v, d in tp.periodic:  # periodic background facts decide these literals
            if b[v] is not None and not d.admits(b[v]):
                return None
        rng = None
        if tp.windows:
            rng = window_ranges(tp, b)
            if rng is None:
                return None
        if insts is None:
            insts = [lp.instantiate(b) for lp in tp.lits]
        exp = None
        delta = self.delta
        lits = tp.lits
        for i, (args, t) in enumerate(insts):
            if t is None:
                if rng and i not in ev and lits[i].positive and not lits[i].derived:
                    r = rng.get(lits[i].tvar)
                    if r is not None:  # a window's operand: its last instance's expiry
                        if r[1] + lits[i].toff < 0:
                            return None
                        e = r[1] + lits[i].toff + delta(lits[i].pred, args)
                        if exp is None or e < exp:
                            exp = e
                continue
            if t < 0:
                return None
            if i in ev or not lits[i].positive or lits[i].derived:
                continue
            e = t + delta(lits[i].pred, args)
            if exp is None or e < exp:
                exp = e
        return exp, insts, hargs, ht

    def _finish(self, tp: ETemplate, b: Binding, ev: frozenset, ng: frozenset, tau: int,
                insts=None):
        """Build an answer from a local mgu if its remaining positive hypotheses are all
        potentially future w.r.t. τ (step 1) and its timestamps valid; else None."""
        info = self._inspect(tp, b, ev, insts)
        if info is None:
            return None
        if info[0] is not None and info[0] <= tau:
            return None
        ng2 = reduce_nogoods(ng, b) if ng else ng
        if ng2 is None:
            return None
        a = Answer(tp.tid, b, ev, ng2)
        self._info[a] = info
        return a

    # ------------------------------------------------------------------ the tick

    def step(self, facts: Iterable[Fact], tau: int, snapshot: bool = True) -> TickReport:
        """Algorithm 1 for tick τ: S_{τ-1} and D|τ give S_τ (facts must be validated).

        The cyclic garbage collector is paused during the update, and the tick's survivors
        are then moved to the collector's permanent generation (gc.freeze): the engine's
        structures are acyclic and freed by reference counting, so the collector need never
        scan them again.  Merely pausing it deferred the cost: the collections postponed
        during the tick fired at the caller's next allocation (25–35% of a `hypo run` loop
        at 10⁴ devices)."""
        with frozen_survivors():
            return self._step(facts, tau, snapshot)

    def _step(self, facts: Iterable[Fact], tau: int, snapshot: bool) -> TickReport:
        if tau != self.tau + 1:
            raise ValueError(f"tick {tau} follows tick {self.tau}: ticks must be consecutive")
        rep = TickReport(tau)
        self.fresh_definite = set()
        self._born = set()
        self._seeded = set()
        self._seeds = {}
        slice_: dict = defaultdict(set)  # (pred, t) -> args: D|τ
        slice_p: dict = defaultdict(list)  # pred -> [(args, t)]
        dt: list[Fact] = []
        for f in facts:
            if f.args in slice_[(f.pred, f.time)] or f.args in self.window.get((f.pred, f.time), ()):
                rep.duplicates += 1
                rep.duplicate_facts.append(f)
                continue
            slice_[(f.pred, f.time)].add(f.args)
            slice_p[f.pred].append((f.args, f.time))
            dt.append(f)
        rep.accepted = len(dt)
        # after the duplicate check: a fact with t + δ = τ may arrive again at τ (a duplicate)
        self._expire_window(tau)
        new: set[Answer] = set()

        slice_pa: dict = {}  # (pred, args) -> [(args, t)], built when first asked

        def look_slice(pred, t, args=None):
            if t is None:
                if args is None:
                    return slice_p.get(pred, ())
                if not slice_pa:
                    for f in dt:
                        slice_pa.setdefault((f.pred, f.args), []).append((f.args, f.time))
                    slice_pa[None] = ()
                return slice_pa.get((pred, args), ())
            return [(a, t) for a in slice_.get((pred, t), ())]

        def in_slice(pred, args, t):
            return args in slice_.get((pred, t), ())

        def look_both(pred, t, args=None):
            out = list(look_slice(pred, t, args))
            if t is None:
                for (p, tt), s in self.window.items():
                    if p == pred:
                        if args is None:
                            out.extend((a, tt) for a in s)
                        elif args in s:
                            out.append((args, tt))
            else:
                out.extend((a, t) for a in self.window.get((pred, t), ()))
            return out

        def in_both(pred, args, t):
            return args in slice_.get((pred, t), ()) or args in self.window.get((pred, t), ())

        # step 1(b): answers of S_{τ-1} touched by D|τ or whose hypotheses expire now
        touched: set[Answer] = set()
        hit_ground: set[Answer] = set()
        for f in dt:
            hit_ground |= self.wake_ground.get((f.pred, f.args, f.time), set())
            touched |= self.wake_pt.get((f.pred, f.time), set())
            touched |= self.wake_p.get(f.pred, set())
            touched |= self.wake_pa.get((f.pred, f.args), set())
        for a in self.expiry.pop(tau, set()):
            if a not in hit_ground and a not in touched:
                # a positive hypothesis is no longer potentially future and no fact of D|τ
                # matches any hypothesis: the only local mgu is ∅, and it fails step 1(b)
                self.remove(a)
        for a in list(hit_ground):
            if a not in touched and self._regenerated_by_1a(a, in_both):
                self.remove(a)  # step 1(a) below rebuilds its evolution from the new fact
            else:
                touched.add(a)
        for a in list(touched):
            if a not in self.answers:
                continue
            tp = self.templates[a.tid]
            if not a.ev and a.ng == tp.nogoods:
                # A pristine pending answer (e.g. from step 2) is an instance of its template:
                # its specialisations by D|τ are exactly local mgus that step 1(a) generates
                # below, so here it is only kept (σ = ∅) or dropped.
                if self._pristine_survives(tp, a, tau, in_slice):
                    continue
                self.remove(a)
                continue
            self.remove(a)
            order = [i for i in tp.pos if i not in a.ev]
            for b, ev in self.local_mgus(tp, a.b, a.ev, order, look_slice, in_both):
                na = self._finish(tp, b, ev, a.ng, tau)
                if na is not None:
                    new.add(na)
        # step 1(a): new answers from P_Q seeded by a fact of D|τ (with W for the rest)
        for f in dt:
            for tp, i, full in self.by_pred.get(f.pred, ()):
                b0 = tp.lits[i].match(tp.empty_binding(), f.args, f.time)
                if b0 is None:
                    continue
                if full:  # the seed binds every variable: the only local mgu is b0
                    insts = [lp.instantiate(b0) for lp in tp.lits]
                    ev = {i}
                    for j in tp.pos:
                        args, t = insts[j]
                        if j != i and in_both(tp.lits[j].pred, args, t):
                            ev.add(j)
                    na = self._finish(tp, b0, frozenset(ev), tp.nogoods, tau, insts)
                    if na is not None:
                        new.add(na)
                    continue
                order = [j for j in tp.pos if j != i]
                for b, ev in self.local_mgus(tp, b0, frozenset({i}), order, look_both, in_both):
                    na = self._finish(tp, b, ev, tp.nogoods, tau)
                    if na is not None:
                        new.add(na)
                        if self.exact.nlits[tp.tid]:
                            self._seeded.add(na)
        for a in new:
            self.add(a, tau)
        self._info.clear()
        # step 2: answers for every query at T := τ (so absence later means refutation)
        for tp in self.templates:
            self._step2(tp, tau, in_both)
        # exact instances: split off the past instances of unbound time variables (exact.py)
        self._split_first(tau, slice_)
        # step 3: negated hypotheses, in the topological order of the p_t
        self._lookups = (look_both, in_both)
        try:
            self._step3(tau)
        finally:
            self._lookups = None
        # exact instances of the waiting answers (exact.py)
        self._exact(tau, slice_)
        # window update: facts of D|τ that may still be matched as hypotheses
        for f in dt:
            d = self.delays.ground(f.pred, f.args)
            if f.time + d > tau:
                self.window[(f.pred, f.time)].add(f.args)
                self.window_expiry[f.time + d].add(f)
        if self.forget:
            self._drop_redundant()
        if snapshot:
            rep.snapshot = list(self.answers)
        rep.new_definite = [
            a for a in self.fresh_definite if self.templates[a.tid].qid == self.main_qid
        ]
        self.tau = tau
        if self.forget:
            self._forget(tau)
        rep.state_size = len(self.answers)
        return rep

    def _split_first(self, tau: int, slice_: dict) -> None:
        """"Past" before step 3 (exact.py): a watched answer with a fact as evidence and a
        hypothesis whose time variable is unbound is split at its floors now, so that step 3
        decides the negations of the instances whose time has come in this very tick, and
        reads the floors of the answers it consults at τ; the answers so made (and those
        step 3 derives from them) are not split again at τ."""
        if not self.watch_t:
            return
        ex = self.exact
        fresh = self._fresh_heads(remember=False)
        lk = _Lookups(slice_, self.window)
        for a in list(self.watch_t):
            if a not in self.answers:
                continue
            tp = self.templates[a.tid]
            if not ex.splits_first(tp, a.ev):
                continue  # made watched by step 3 only: split after it (`_exact`)
            self._refine(a, tau, lk, fresh, True, a in self._seeded)
        self._info.clear()

    def _refine(self, a: Answer, tau: int, lk: "_Lookups", fresh: dict, split: bool,
                seeded: bool) -> None:
        """exact.refine of one watched answer — new at τ: against W ∪ D|τ and every
        remembered definite head, else against D|τ and the heads `fresh` at τ — replaced by
        its pieces if it changes."""
        tp = self.templates[a.tid]
        new = a in self._born
        ans = self.answered
        pieces = self.exact.refine(tp, a.b, a.ev, a.ng, tau,
                                   lk.arrived_all if new else lk.arrived_new,
                                   ans.get if new else (lambda p, t: fresh.get((p, t), ())),
                                   lk.has_all if new else lk.has_new, new,
                                   ans.of if new else (lambda p: heads_of(fresh, p)),
                                   split, seeded)
        if pieces is None:
            return
        self.remove(a)
        for b, ng in pieces:
            na = self._finish(tp, b, a.ev, ng, tau)
            if na is not None:
                self.add(na, tau)

    def _fresh_heads(self, remember: bool) -> dict:
        """{(pred, t): [args]}: the ground heads of the answers definite at τ so far, of the
        predicates whose definite heads are remembered (Answered; remember: add them)."""
        ans = self.answered
        fresh: dict = defaultdict(list)
        for d in (self.fresh_definite if ans.horizons else ()):
            tp = self.templates[d.tid]
            if tp.head.pred not in ans.horizons:
                continue
            hargs, ht = tp.head.instantiate(d.b)
            if ht is not None and None not in hargs:
                fresh[(tp.head.pred, ht)].append(hargs)
                if remember:
                    ans.add(tp.head.pred, hargs, ht)
        return fresh

    def _exact(self, tau: int, slice_: dict) -> None:
        """Restrict every watched answer to its exact instances (exact.py): an answer new
        at τ is checked against W ∪ D|τ and every remembered definite head, an older one
        against D|τ and the heads definite at τ; both against the δ of their hypotheses'
        instances."""
        ans = self.answered
        if ans.horizons:
            ans.expire(tau)
        fresh = self._fresh_heads(remember=True)
        # answers with evidence whose ground head is already a definite answer (minimality)
        for (pred, ht), hs in fresh.items():
            for hargs in hs:
                for o in list(self.head_ground.get((pred, hargs, ht), ())):
                    if o.ev and not self.is_definite(o):
                        self.remove(o)
        lk = _Lookups(slice_, self.window)
        for a in self._born - self.watch:
            # a ground answer new at τ: already answered, or waiting for an arrived fact
            if self.exact.refine(self.templates[a.tid], a.b, a.ev, a.ng, tau, lk.arrived_all,
                                 ans.get, lk.has_all) == []:
                self.remove(a)
        if not self.watch:
            return

        for a in list(self.watch):
            if a not in self.answers:
                continue
            # split before step 3 already (`_split_first`): answers with a fact as evidence
            split = not self.exact.splits_first(self.templates[a.tid], a.ev)
            self._refine(a, tau, lk, fresh, split, False)
        self._info.clear()

    def _ahead(self) -> dict[str, int]:
        """Per derived predicate p (modular evaluation), how far ahead of τ its callers
        read it: a caller's answer at τ waits for p at τ + k, and step 3 can decide p(…,
        τ + k) at τ only if its answer exists — unfolded, the caller's own literals would be
        decided then.  Step 2 creates p's answers up to τ + ahead(p), each head time once."""
        ahead: dict[str, int] = {}
        for _ in range(len(self.templates) + 1):
            changed = False
            for tp in self.templates:
                base = ahead.get(tp.head.pred, 0) if tp.qid != self.main_qid else 0
                for i in tp.der:
                    lp = tp.lits[i]
                    if lp.tvar is None or lp.tvar != tp.head.tvar:
                        continue
                    k = base + lp.toff - tp.head.toff
                    if k > ahead.get(lp.pred, 0):
                        ahead[lp.pred] = k
                        changed = True
            if not changed:
                break
        return ahead

    def ahead_of(self, tp: ETemplate) -> int:
        """How far ahead of τ step 2 creates tp's answers (_ahead; 0: at τ only)."""
        return self.ahead.get(tp.head.pred, 0) if tp.qid != self.main_qid else 0

    def resume_ahead(self, tau: int) -> None:
        """After S_τ was loaded into a new engine (the lake's row executor, the columnar
        executor's load_answers): step 2 has created each derived predicate's answers up to
        τ + ahead(p) (step2_times)."""
        for tp in self.templates:
            k = self.ahead_of(tp)
            if k > 0:
                self._created_to[tp.tid] = tau + k

    def step2_times(self, tp: ETemplate, tau: int) -> range:
        """The head times of tp's step-2 answers at τ: τ, or for a derived predicate read
        ahead (_ahead) those up to τ + ahead(p) not created before (recorded as created;
        the columnar executor's step 2 reads them too)."""
        k = self.ahead_of(tp)
        if k <= 0:
            return range(tau, tau + 1)
        out = range(self._created_to.get(tp.tid, tau - 1) + 1, tau + k + 1)
        self._created_to[tp.tid] = tau + k
        return out

    def _step2(self, tp: ETemplate, tau: int, present=None) -> None:
        """Algorithm 1, step 2: ⟨P, θσ, ∅, Hσ⟩ with σ = [T := τ] if every positive
        element of Hσ is potentially future (w.r.t. τ) and none has arrived (exact.py);
        for a derived predicate read ahead (_ahead), the head times up to τ + ahead(p) not
        created before (step2_times)."""
        for ht in self.step2_times(tp, tau):
            self._step2_at(tp, ht, tau, present)

    def _step2_at(self, tp: ETemplate, ht: int, tau: int, present=None) -> None:
        """Step 2's answer of tp with head time ht (τ, or later for _ahead)."""
        h = tp.head
        b = list(tp.empty_binding())
        if h.tvar is None:
            if h.toff != ht:
                return
        else:
            b[h.tvar] = ht - h.toff  # the variable may be negative, the head time is ht
        b = tuple(b)
        if present is not None and self.exact.arrived_ground(tp, b, present):
            return
        a = self._finish(tp, b, frozenset(), tp.nogoods, tau)
        if a is not None:
            if a not in self.answers:
                self.add(a, tau)

    def future_ways(self, pred: str, args: tuple, t: int) -> list[Answer]:
        """The answers step 2 will create for a derived atom pred(args, t) read ahead of the
        head times it has created (τ, or τ + ahead(p)): each template's step-2 answer at
        head time t with the head's arguments bound, where every positive hypothesis is
        still potentially future and none has arrived — what the atom waits for before its
        answers exist (rendering: Explainer.derived_waits); nothing is added to S_τ."""
        tau = self.tau
        out = []
        heads: dict = {}  # (head, variables) -> the binding: templates mostly share it
        for tp, past, per_instance in self.future_templates(pred, t):
            hk = (tp.head, len(tp.names))
            b = heads.get(hk, False)
            if b is False:
                b = heads[hk] = tp.head.match(tp.empty_binding(), args, t)
            if b is None or (past and self.exact.arrived_ground(tp, b, self._in_window)):
                continue
            if per_instance:
                info = self._inspect(tp, b, frozenset())
                if info is None or (info[0] is not None and info[0] <= tau):
                    continue
            ng = reduce_nogoods(tp.nogoods, b) if tp.nogoods else tp.nogoods
            if ng is not None:
                out.append(Answer(tp.tid, b, frozenset(), ng))
        return out

    def _in_window(self, pred: str, args: tuple, t: int) -> bool:
        return args in self.window.get((pred, t), ())

    def future_templates(self, pred: str, t: int) -> list:
        """future_ways' templates of pred alive at head time t for some arguments, once a
        tick: [(template, a positive literal may be at or before τ — a fact may have
        arrived —, a literal's predicate has per-instance delays)]."""
        tau = self.tau
        if self._by_head is None:
            self._by_head = defaultdict(list)
            for tp in self.templates:
                if tp.qid != self.main_qid:
                    self._by_head[tp.head.pred].append(tp)
        if self._fw_tau != tau:
            self._fw, self._fw_tau = {}, tau
        cands = self._fw.get((pred, t))
        if cands is None:  # the templates alive at head time t for some arguments
            cands = []
            for tp in self._by_head.get(pred, ()):
                if t <= self._created_to.get(tp.tid, tau):
                    continue  # created: its answers are in L (_L_for)
                fast = self._fw_static.get(tp.tid, False)
                if fast is False:
                    fast = self._fw_static[tp.tid] = self._future_static(tp)
                if fast is not None:  # (_inspect's verdict from offsets, once per template)
                    lo_all, lo_pos, rel_exp, per_instance = fast
                    if t - tp.head.toff + lo_all >= 0 and t >= 0 and (
                            rel_exp is None or t + rel_exp > tau):
                        cands.append((tp, lo_pos is not None and t + lo_pos <= tau,
                                      per_instance))
                    continue
                h = tp.head
                if h.tvar is None and h.toff != t:
                    continue
                b = list(tp.empty_binding())
                if h.tvar is not None:
                    b[h.tvar] = t - h.toff
                info = self._inspect(tp, tuple(b), frozenset())
                if info is not None and (info[0] is None or info[0] > tau):
                    # (δ of unknown arguments is their instances' max: the same for every
                    # instance when no literal's predicate has per-instance delays)
                    # and no fact has arrived for a literal after τ (facts are not ahead)
                    past = any(i is None or i <= tau
                               for i in (info[1][j][1] for j in tp.pos))
                    cands.append((tp, past,
                                  any(lp.pred in self.delays.patterns for lp in tp.lits)))
            self._fw[(pred, t)] = cands
        return cands

    def _future_static(self, tp: ETemplate):
        """future_templates' test of a template by offsets from its head time, where every
        literal's time is the head's variable plus an offset and no time bound or periodic
        domain applies: (least literal offset from the head variable, least positive one
        from the head time or None, the least positive literal's expiry from the head time
        or None, per-instance delays); None where _inspect must decide."""
        h = tp.head
        if h.tvar is None or tp.time_min or tp.periodic or any(
                lp.tvar != h.tvar for lp in tp.lits):
            return None
        lo_all = min([lp.toff for lp in tp.lits], default=0)
        pos = [lp for lp in tp.lits if lp.positive and not lp.derived]
        lo_pos = min([lp.toff - h.toff for lp in pos], default=None)
        rel_exp = min([lp.toff - h.toff + self.delta(
            lp.pred, tuple(None if v else x for v, x in lp.args)) for lp in pos], default=None)
        return lo_all, lo_pos, rel_exp, any(lp.pred in self.delays.patterns for lp in tp.lits)

    def _step3(self, tau: int) -> None:
        """Algorithm 1, step 3: for each p_t in topological order, (b) refute negated
        hypotheses proven false by a definite answer, (c) move to evidence those no answer
        of p_t can prove any more (only for t ≤ τ)."""
        heap: list = []
        queued: set = set()

        def push(pred, t):
            if (pred, t) in queued or (pred, t) not in self.neg_index:
                return
            queued.add((pred, t))
            heapq.heappush(heap, (self.strat.key(pred, t), pred, t))

        def became_definite(answers) -> None:
            todo = list(answers)
            while todo:
                a = todo.pop()
                tp = self.templates[a.tid]
                hargs, ht = tp.head.instantiate(a.b)
                if ht is not None:
                    push(tp.head.pred, ht)
                if tp.head.pred in self.by_der:
                    todo.extend(n for n in self._seed_derived(a, tau) if self.is_definite(n))

        if self.by_der:
            became_definite([a for a in self.fresh_definite
                             if self.templates[a.tid].head.pred in self.by_der])
        for (pred, t) in list(self.neg_index):
            if t <= tau or any(self.is_definite(a) for a in self._L(pred, t)):
                push(pred, t)
        while heap:
            _, pred, t = heapq.heappop(heap)
            became_definite(self._process_node(pred, t, tau))
        for memo in (self._new_refs, self._new_proven):  # (nodes closed without refs left)
            for k in [k for k in memo if k[1] <= tau]:
                del memo[k]

    def _seed_derived(self, d: Answer, tau: int) -> list[Answer]:
        """Step 1(a) for a derived atom (modular evaluation, issue 45): the answers
        seeded_by(d) made, added (those not in S_τ yet)."""
        look_both, in_both = self._lookups
        return [na for na in self.seeded_by(d, tau, look_both, in_both, memo=True)
                if self.add(na, tau)]

    def seeded_by(self, d: Answer, tau: int, look_both, in_both, memo: bool = False):
        """The answers a ground answer d of p definite at τ seeds (yielded one by one, for
        the caller to add as they come): the templates with a derived literal on p whose
        head time is after τ, as the facts that made d definite would have seeded them
        unfolded (an answer with an earlier head exists since step 2, and step 3 decides
        it).  The facts of W ∪ D|τ (look_both, in_both) matching the new answers' positive
        literals are their evidence.  memo: an instance seeded earlier this tick by another
        literal is skipped while no answer became definite since (Engine's own tick)."""
        dt = self.templates[d.tid]
        hargs, ht = dt.head.instantiate(d.b)
        if ht is None or None in hargs:
            # a schematic head (exclusions) seeds nothing: step 2 creates its callers'
            # answers at their head time, as unfolded, and step 3 decides them then
            return
        for tp, i in self.by_der[dt.head.pred]:
            lp = tp.lits[i]
            if lp.tvar is None or lp.tvar != tp.head.tvar:
                continue
            b0 = list(tp.empty_binding())
            b0[lp.tvar] = ht - lp.toff
            if b0[lp.tvar] + tp.head.toff <= tau:
                continue
            b0 = tuple(b0)
            if not d.ng and not tp.nogoods:  # (the common case: the literal matches d's head)
                b1 = lp.match(b0, hargs, ht)
                ins = [] if b1 is None else [(b1, frozenset())]
            else:
                c = cover_of(lp, b0, dt.head, d.b, d.ng, approx_full=False)
                if c is None:
                    continue
                ins, _ = partition(b0, tp.nogoods, [c])
            for b, ng in ins:
                if memo:
                    key = (tp.tid, b, ng)
                    if self._seeds.get(key) == self._definite_added:
                        continue  # seeded by another literal, none became definite since
                    self._seeds[key] = self._definite_added
                if self._answered_before(tp, b):
                    continue
                for b2, ev in self.local_mgus(tp, b, frozenset({i}), list(tp.pos), look_both,
                                              in_both):
                    piece = self._proven_derived(tp, b2, ng, ev)
                    if piece is None:
                        continue
                    na = self._finish(tp, b2, piece[2], ng, tau)
                    if na is not None:
                        yield na

    def _L(self, pred: str, t: int) -> set:
        """Step 3(a): the answers of the instantiated predicate p_t."""
        out = set(self.head_index.get((pred, t), ()))
        out |= self.head_index.get((pred, None), set())
        return out

    def _L_for(self, pred: str, t: int, hargs: tuple) -> list:
        """Answers of p_t that may unify with p(hargs, t): schematic heads first, then (for
        a ground h) the answers with exactly that head, else all of L."""
        out = list(self.head_schematic.get((pred, t), ()))
        out.extend(self.head_schematic.get((pred, None), ()))
        if None not in hargs:
            out.extend(self.head_ground.get((pred, hargs, t), ()))
        else:
            out.extend(a for a in self.head_index.get((pred, t), ())
                       if a not in self.head_schematic.get((pred, t), ()))
        return out

    def _process_node(self, pred: str, t: int, tau: int) -> list[Answer]:
        """Steps 3(a)-(c) for one instantiated predicate p_t; returns answers that became
        definite."""
        became: list[Answer] = []
        refs = self.neg_index.get((pred, t), ())
        new_refs = self._new_refs.pop((pred, t), ())
        new_heads = self._new_proven.pop((pred, t), ())
        if t > tau and pred in self.by_der and not any(
                self.is_definite(a) for k in ((pred, t), (pred, None))
                for a in self.head_schematic.get(k, ())):
            # before p_t closes only a definite answer changes a ref — one whose literal
            # instance it covers: a ground head covers the refs of equal instance and those
            # not ground.  A ref processed before that no definite answer covered is
            # unchanged unless one has been added since: the refs added since the last
            # time, and those the new definite heads cover, are all that can change
            sel = set(new_refs)
            sel.update(self.neg_open.get((pred, t), ()))
            for hargs in new_heads:
                sel.update(self.neg_ground.get((pred, hargs, t), ()))
            refs = sel
        refs = list(refs)
        for r in refs:
            if r not in self.answers:
                continue
            tp = self.templates[r.tid]
            pieces = [(r.b, r.ng, r.ev)]
            for j in tp.neg + tp.der:
                lp = tp.lits[j]
                if lp.pred != pred:
                    continue
                nxt = []
                for b, ng, ev in pieces:
                    if j in ev:
                        nxt.append((b, ng, ev))
                        continue
                    hargs, ht = lp.instantiate(b)
                    if ht != t:
                        nxt.append((b, ng, ev))
                        continue
                    L = self._L_for(pred, t, hargs)
                    if (pred, None) in self.head_schematic:  # answers that may have a time floor
                        L = [l for l in L if not self.exact.split_below(
                            self.templates[l.tid], l.b, l.ev, t, tau, l in self._born)]
                    if lp.derived:
                        nxt.extend(self._step3_derived(tp, j, b, ng, ev, L, t <= tau))
                        continue
                    parts = self._step3b(lp, b, ng, ev, L)
                    if t > tau:
                        nxt.extend(parts)
                    else:
                        for pb, png, pev in parts:
                            nxt.extend(self._step3c(lp, j, pb, png, pev, L))
                pieces = nxt
            if len(pieces) == 1 and pieces[0] == (r.b, r.ng, r.ev):
                continue
            self.remove(r)
            if tp.der:
                pieces = [p for p in (self._proven_derived(tp, *pc) for pc in pieces)
                          if p is not None]
            for b, ng, ev in pieces:
                na = self._finish(tp, b, ev, ng, tau)
                if na is not None and self.add(na, tau) and self.is_definite(na):
                    became.append(na)
        return became

    def _proven_derived(self, tp: ETemplate, b: Binding, ng: frozenset, ev: frozenset):
        """A piece of step 3 with every ground derived literal that a definite answer
        with that very head proves moved to evidence now (3's derived case, the node of
        each literal comes later or came earlier in this tick: one replacement of the
        answer, not one per literal); None: its head was answered before (minimality)."""
        more = []
        for j in tp.der:
            if j in ev:
                continue
            lp = tp.lits[j]
            args, t = lp.instantiate(b)
            if t is None or None in args:
                continue
            for l in self.proven.get((lp.pred, args, t), ()):
                # (the same ground head: it proves the literal, unless nogoods say otherwise)
                if (not l.ng or cover_of(
                        lp, b, self.templates[l.tid].head, l.b, l.ng, False) == TRUE):
                    more.append(j)
                    break
        if not more:
            return b, ng, ev
        if self._answered_before(tp, b):
            return None
        return b, ng, ev | frozenset(more)

    def _covers(self, lp, b: Binding, answers, approx_full: bool) -> list:
        """The instances of ¬h (literal lp under b) that each answer can prove, as covers."""
        out = []
        for l in answers:
            c = cover_of(lp, b, self.templates[l.tid].head, l.b, l.ng, approx_full)
            if c is not None:
                out.append(c)
                if c == TRUE:
                    break  # this answer covers every instance
        return out

    def _step3b(self, lp, b: Binding, ng: frozenset, ev: frozenset, L) -> list:
        """Step 3(b): drop the instances of ¬h that a definite answer of p_t refutes."""
        covers = self._covers(lp, b, [a for a in L if self.is_definite(a)], approx_full=False)
        if not covers:
            return [(b, ng, ev)]
        _, outs = partition(b, ng, covers)
        return [(ob, ong, ev) for ob, ong in outs]

    def _step3c(self, lp, j: int, b: Binding, ng: frozenset, ev: frozenset, L) -> list:
        """Step 3(c): the instances of ¬h no answer of p_t can prove move ¬h to evidence."""
        ins, outs = partition(b, ng, self._covers(lp, b, L, approx_full=True))
        return [(ib, ing, ev) for ib, ing in ins] + [(ob, ong, ev | {j}) for ob, ong in outs]

    def _step3_derived(self, tp: ETemplate, j: int, b: Binding, ng: frozenset, ev: frozenset,
                       L, closed: bool) -> list:
        """Step 3 for a derived literal h (modular evaluation, issue 45), the dual of (b)
        and (c): the instances of h a definite answer of p_t proves move h to evidence; once
        every answer of p_t exists (closed: t ≤ τ), the instances no answer can prove are
        refuted; an instance whose head was answered before is dropped (minimality)."""
        lp = tp.lits[j]
        covers = self._covers(lp, b, [a for a in L if self.is_definite(a)], approx_full=False)
        ins, outs = partition(b, ng, covers) if covers else ([], [(b, ng)])
        out = [(ib, ing, ev | {j}) for ib, ing in ins if not self._answered_before(tp, ib)]
        for ob, ong in outs:
            if not closed:
                out.append((ob, ong, ev))
                continue
            kept, _ = partition(ob, ong, self._covers(lp, ob, L, approx_full=True))
            out.extend((kb, kng, ev) for kb, kng in kept)
        return out

    def _answered_before(self, tp: ETemplate, b: Binding) -> bool:
        """The ground head of tp under b is a definite answer of an earlier tick (Answered):
        a derived literal must not derive it again (minimality)."""
        hargs, ht = tp.head.instantiate(b)
        return ht is not None and None not in hargs and hargs in self.answered.get(
            tp.head.pred, ht)

    # ------------------------------------------------------------------ forgetting

    def _retention(self) -> dict[str, Optional[int]]:
        """Ticks after t during which a definite answer of p_t may still be needed by step
        3(b), for a negated hypothesis ¬p(…, t) created later (000 §7 "forgetting"):
        step 2 creates it at tick t - k, step 1(a) up to the last arrival of a positive
        literal of the same template — or, for a derived literal of modular evaluation, up to
        the last tick another derived literal's answer becomes definite (_seed_derived).
        None = forever (times not relative to the head)."""
        out: dict[str, Optional[int]] = {}
        rel = static_horizons(self) if any(tp.der for tp in self.templates) else {}
        for tp in self.templates:
            h = tp.head
            for j in tp.neg + tp.der:
                lp = tp.lits[j]
                lag: Optional[int] = None
                if h.tvar is not None and lp.tvar == h.tvar:
                    lag = h.toff - lp.toff
                    for i in tp.pos + tp.der:
                        pl = tp.lits[i]
                        d = self.delays.max(pl.pred) if not pl.derived else rel.get(pl.pred, 0)
                        if pl.tvar != h.tvar or d is None:
                            lag = None
                            break
                        lag = max(lag, pl.toff - lp.toff + d)
                if lp.pred in out and out[lp.pred] is None:
                    continue
                out[lp.pred] = None if lag is None else max(out.get(lp.pred, lag), lag)
        return out

    def _forget(self, tau: int) -> None:
        """Bounded state (000 §7): a definite answer is emitted once, then dropped as soon as
        no negated hypothesis created later can refer to it."""
        for a in self.retire.pop(tau, set()):
            self.remove(a)
        for a in list(self.fresh_definite):
            tp = self.templates[a.tid]
            pred = tp.head.pred
            _, ht = tp.head.instantiate(a.b)
            if pred not in self.retention:
                self.remove(a)  # nothing negates p: emitted, no longer needed
                continue
            lag = self.retention[pred]
            if lag is None or ht is None:
                continue
            if ht + lag <= tau:
                self.remove(a)
            else:
                self.retire[ht + lag].add(a)

    def _drop_redundant(self) -> None:
        """Non-definite derivations of a ground answer that just became definite can no longer
        change anything (3(b) refutes through the definite one): drop them (bounded state)."""
        for a in list(self.fresh_definite):
            tp = self.templates[a.tid]
            hargs, ht = tp.head.instantiate(a.b)
            if ht is None or None in hargs:
                continue
            for other in list(self.head_ground.get((tp.head.pred, hargs, ht), ())):
                if not self.is_definite(other):
                    self.remove(other)

    def _expire_window(self, tau: int) -> None:
        """Drop facts of W that are no longer future-possible by timestamp."""
        for f in self.window_expiry.pop(tau, set()):
            s = self.window.get((f.pred, f.time))
            if s is not None:
                s.discard(f.args)
                if not s:
                    del self.window[(f.pred, f.time)]


class _Lookups:
    """The facts exact refinement reads at τ: D|τ (`*_new`) or W ∪ D|τ (`*_all`)."""

    def __init__(self, slice_: dict, window: dict):
        self.slice, self.window = slice_, window

    def arrived_new(self, pred: str, t: int):
        return self.slice.get((pred, t), ())

    def arrived_all(self, pred: str, t: int) -> list:
        return list(self.slice.get((pred, t), ())) + list(self.window.get((pred, t), ()))

    def has_new(self, pred: str, args: tuple, t: int) -> bool:
        return args in self.slice.get((pred, t), ())

    def has_all(self, pred: str, args: tuple, t: int) -> bool:
        return args in self.slice.get((pred, t), ()) or args in self.window.get((pred, t), ())
