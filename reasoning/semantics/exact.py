"""Exact schematic answers: every instance of a waiting answer is a hypothetical answer in
002_…txt's sense (Def. 15, 17) — its positive hypotheses not yet arrived and still
future-possible, its head not already a definite answer.

Algorithm 1 keeps the unrefined answer of a local mgu next to its refinement (step 1), and
expires a hypothesis by the greatest δ over its instances (§3): some instances of a
schematic answer then wait for a fact that has arrived, or that can no longer arrive by its
own δ.  `refine` restricts a waiting answer to its exact instances with the disequality
constraints of step 3 (regions.py), in three ways:

  arrived   a fact of W ∪ D|τ matches a positive hypothesis: that instance is excluded
            (its refinement, with the fact as evidence, is another answer of S_τ);
  run out   the δ of some `#delay` instance patterns of a hypothesis has run out: those
            instances are excluded, and where the predicate's default δ has run out the
            answer is split into the patterns still open;
  answered  the head's instance is a definite answer, emitted now or earlier: excluded
            (minimality of H).  Definite answers leave S_τ once emitted (forgetting), so
            their heads are remembered (`Answered`) for as long as an answer with that head
            time can still be created — by step 2 or by a fact's arrival (step 1(a));
            answers created later from existing ones inherit their nogoods.

  past      a time variable V left unbound (several temporal variables, or evidence at a
            constant time) covers only the future: the answer keeps the instances whose
            hypotheses on V, positive or negated, are all later than τ (V ≥ `time_floors`,
            printed as `time_from`), and the instances whose hypothesis times reached τ are
            split off as answers with V bound, refined like any other (arrived, run out,
            answered), and printed with their own deadlines; a definite head at a future
            time is an exclusion of V, dropped once V's floor passes it.  An answer with a
            fact as evidence is split before step 3 (`splits_first`), so that step 3
            decides the negated hypotheses of its split instances in the same tick, and
            an answer with its head time unbound proves, at step 3, only the head times
            above its floor (`split_below`).  The values split off are those that can still
            matter: for an answer new at τ, those whose positive hypotheses on V can still
            arrive, or — V only under negation — every value, if step 1(a) made the answer
            from a fact of D|τ; else the one value the floor passed since τ - 1.

Only answers with evidence that are not definite are refined (`watched`): pending answers
of step 2 stay instances of their template (they are not printed unless --pending), and
definite answers have no hypotheses.
Every exclusion only removes instances that no fact can make true any more, so step 3(c),
which reads the covers of these answers, stays sound.  Both executors call this module.
"""
from __future__ import annotations

from itertools import combinations
from typing import Callable, Iterable, Optional

from reasoning.language.analysis import Delays
from reasoning.semantics.patterns import Binding, ETemplate, window_heads, window_ranges
from reasoning.semantics.regions import _bind

Lookup = Callable[[str, int], Iterable[tuple]]  # (pred, t) -> args tuples
HeadsLookup = Callable[[str], Iterable[tuple[tuple, int]]]  # pred -> (args, t) pairs


def _vars(lp) -> set:
    return {x for isvar, x in lp.args if isvar}


class Exactness:
    """The static facts of exact refinement for a program's templates, and `refine`."""

    def __init__(self, templates: tuple[ETemplate, ...], delays: Delays,
                 rigid: Iterable[str] = (), past: bool = True):
        self.templates = templates
        self.delays = delays
        self.rigid = frozenset(rigid)
        # positive literals with object variables, per template
        self.lits = [tuple(i for i in tp.pos if _vars(tp.lits[i])) for tp in templates]
        self.head_vars = [frozenset(_vars(tp.head)) for tp in templates]
        # positive literals whose time is a variable, per template ("past"; past=False:
        # Algorithm 1 without it, the baseline of tests/test_exact.py)
        self.tlits = [tuple(i for i in tp.pos if tp.lits[i].tvar is not None) if past else ()
                      for tp in templates]
        # negated literals whose time is a variable: their instances at times ≤ τ are split
        # off too, and step 3 decides them
        self.nlits = [tuple(j for j in tp.neg if tp.lits[j].tvar is not None) if past else ()
                      for tp in templates]
        # the literals whose time bounds a floor (time_floors), per template
        self.flits = [t + n for t, n in zip(self.tlits, self.nlits)]
        # an answer with evidence that is not definite needs two literals
        self.may_ng = [bool(self.lits[tp.tid] or self.head_vars[tp.tid] or self.flits[tp.tid])
                       and len(tp.lits) > 1 for tp in templates]
        # a nogood on several variables can arise (a literal or head with two variables)
        self.multi = [len(tp.lits) > 1 and (
            any(len(_vars(tp.lits[i])) > 1 for i in self.lits[tp.tid])
            or len(self.head_vars[tp.tid]) > 1) for tp in templates]
        # a nogood on a time variable can arise (an integer value, in a `*` nogood on the
        # columnar executor): the head's time is left unbound by some positive literal's
        # evidence (answered heads of "past"), or a negated literal's time may be unbound
        self.time_ng = [tp.head.tvar is not None and (
            any(tp.lits[i].tvar != tp.head.tvar for i in tp.pos
                if tp.lits[i].pred not in self.rigid)
            or any(tp.lits[j].tvar not in (None, tp.head.tvar) for j in tp.neg))
            for tp in templates]
        # per template: the variables whose being unbound makes a partition watched
        self._need = [frozenset().union(*[_vars(tp.lits[i]) for i in self.lits[tp.tid]],
                                        self.head_vars[tp.tid],
                                        {tp.lits[i].tvar for i in self.flits[tp.tid]})
                      for tp in templates]

    def horizons(self) -> dict[str, Optional[int]]:
        """H(p) per head predicate with answers that can wait (two literals or more): an answer
        of p with head time t is created (not derived from another) at tick t + H(p) at the
        latest — step 2 at t, step 1(a) by an arrival at the latest t + offset + δ, "past"
        by the same bound, step 3 when a negated literal on the head's time is decided, at
        t + offset + its lag (_lag: δ, or an auxiliary query's own).  None: unbounded (a head
        at a constant time)."""
        out: dict[str, Optional[int]] = {}
        by_head: dict[str, list] = {}
        for tp in self.templates:
            by_head.setdefault(tp.head.pred, []).append(tp)
        for tp in self.templates:
            if len(tp.lits) < 2 and not tp.der:
                # its answers are pending or definite: never printed as waiting (a derived
                # literal's answer may become definite again at step 3: remembered)
                continue
            if by_head[tp.head.pred] == [tp] and not tp.neg and not tp.der \
                    and self._all_in_head(tp):
                # one template, every variable in its head, no negation: an answer whose
                # head is already definite has a hypothesis that arrived ("arrived")
                continue
            p = tp.head.pred
            h: Optional[int] = 0
            for i in tp.pos:
                lp = tp.lits[i]
                if lp.pred in self.rigid:
                    continue
                if tp.head.tvar is None:
                    h = None
                    break
                off = lp.toff if lp.tvar == tp.head.tvar else _window_end(tp, lp)
                if off is None:
                    # its facts never bind the head's time: an answer they create has it
                    # unbound, and its instances at a time t are split off ("past") by
                    # t + (the head variable's literals' bound) at the latest
                    continue
                h = max(h, off - tp.head.toff + self.delays.max(lp.pred))
            for j in tp.neg + tp.der if h is not None else ():
                lp = tp.lits[j]
                if lp.pred in self.rigid or lp.tvar != tp.head.tvar:
                    continue
                # step 3 decides it at its time + its lag at the latest, and an answer
                # waiting on it is printed then for the first time
                lag = self._lag(lp.pred, by_head, {})
                h = None if lag is None else max(h, lp.toff - tp.head.toff + lag)
                if h is None:
                    break
            if p in out and (out[p] is None or h is None):
                out[p] = None
            else:
                out[p] = h if p not in out else max(out[p], h)
        return out

    def _lag(self, pred: str, by_head: dict, memo: dict) -> Optional[int]:
        """How long after its time an atom of `pred` can still be undecided: δ(pred), and for
        a predicate with templates (an auxiliary query's; an EDB predicate's is its own
        literal) the most over them of a literal on the head's time variable's offset plus
        that literal's lag (None: unbounded, a head at a constant time).  Programs are
        nonrecursive."""
        if pred not in memo:
            memo[pred] = self.delays.max(pred)
            for tp in by_head.get(pred, ()):
                if tp.head.tvar is None:
                    memo[pred] = None
                    break
                for lp in tp.lits:
                    off = lp.toff if lp.tvar == tp.head.tvar else _window_end(tp, lp)
                    if lp.pred in self.rigid or off is None:
                        continue
                    lag = self._lag(lp.pred, by_head, memo)
                    if lag is None:
                        memo[pred] = None
                        break
                    memo[pred] = max(memo[pred], off - tp.head.toff + lag)
                if memo[pred] is None:
                    break
        return memo[pred]

    @staticmethod
    def arrived_ground(tp: ETemplate, b: Binding, present: Callable[[str, tuple, int], bool]
                       ) -> bool:
        """Step 2's answer at T := τ has a ground positive hypothesis that has arrived
        (W ∪ D|τ): it is not created — the answer step 1(a) built from that fact when it
        arrived has it as evidence, and every instance of this one waits for it."""
        for i in tp.pos:
            args, t = tp.lits[i].instantiate(b)
            if t is not None and None not in args and present(tp.lits[i].pred, args, t):
                return True
        return False

    @staticmethod
    def _all_in_head(tp: ETemplate) -> bool:
        head = {x for isvar, x in tp.head.args if isvar} | (
            {tp.head.tvar} if tp.head.tvar is not None else set())
        return all(x in head for x in range(len(tp.names)))

    def partition_watched(self, tid: int, bound: frozenset) -> bool:
        """Can answers whose bound variables are `bound` need refinement (columnar)?"""
        return self.may_ng[tid] and not self._need[tid] <= bound

    def watched(self, tp: ETemplate, b: Binding, ev: frozenset) -> bool:
        """An answer with evidence, not definite, with a non-ground positive hypothesis
        or head (the answers `refine` may change)."""
        if not ev or len(ev) == len(tp.lits) or not self.may_ng[tp.tid]:
            return False
        return any(b[x] is None for x in self._need[tp.tid])

    def split_below(self, tp: ETemplate, b: Binding, ev: frozenset, t: int, tau: int,
                    born_now: bool) -> bool:
        """Is the instance at time t of an answer's head (time unbound) split off at step 3
        of τ — below the answer's floor ("past"), so the answer no longer proves it?  Floors
        at τ for an answer split before step 3 (`splits_first`), at τ - 1 for an older one
        split after it, none for one made at τ by step 3 and not yet split."""
        v = tp.head.tvar
        if v is None or b[v] is not None or not ev:
            return False
        if self.splits_first(tp, ev):
            at = tau
        elif born_now:
            return False
        else:
            at = tau - 1
        f = time_floors(tp, b, ev, at, self.flits[tp.tid]).get(v)
        return f is not None and t < f + tp.head.toff

    def splits_first(self, tp: ETemplate, ev: frozenset) -> bool:
        """Is an answer (evidence ev) split before step 3 — a fact among its evidence: it
        was watched before step 3, so step 3 decides the negations of its past instances
        and reads its floors at τ — rather than after it (made watched by step 3)?"""
        return bool(self.flits[tp.tid]) and any(tp.lits[i].positive for i in ev)

    def unbound_time(self, tp: ETemplate, b: Binding, ev: frozenset) -> bool:
        """Has an answer a hypothesis whose time variable is unbound (it may have floors)?"""
        return any(b[tp.lits[i].tvar] is None for i in self.flits[tp.tid] if i not in ev)

    # ------------------------------------------------------------------ refine

    def refine(self, tp: ETemplate, b: Binding, ev: frozenset, ng: frozenset, tau: int,
               arrived: Lookup, definite: Lookup, has: Callable[[str, tuple, int], bool],
               new: bool = True, heads: Optional[HeadsLookup] = None, split: bool = True,
               seeded: bool = False) -> Optional[list[tuple[Binding, frozenset]]]:
        """The exact pieces (binding, nogoods) of the answer (b, ev, ng) at τ, or None if it
        is exact already.  `arrived`: facts to check (W ∪ D|τ for an answer new at τ, D|τ
        for an older one); `has`: membership in the same set; `definite`: ground heads
        of definite answers (likewise); `heads`: the same heads of a predicate at any time
        (for a head whose time is unbound); `new`: the answer was created at τ; `seeded`:
        by step 1(a), from a fact of D|τ; `split`: split off the instances below the floors
        ("past"; False: done already at τ, before step 3)."""
        fl = self.flits[tp.tid]
        floors = time_floors(tp, b, ev, tau, fl) if fl else None
        add: set = set()
        for i in tp.pos:
            if i in ev:
                continue
            lp = tp.lits[i]
            args, t = lp.instantiate(b)
            if t is None:
                continue
            if None not in args:
                if has(lp.pred, args, t):
                    return []  # every instance waits for a fact that has arrived
                continue
            for fargs in arrived(lp.pred, t):
                n = _nogood(b, lp.match(b, fargs, t))
                if n is not None:
                    add.add(n)
        hargs, ht = tp.head.instantiate(b)
        if ht is not None and None not in hargs:
            if hargs in definite(tp.head.pred, ht):
                return []  # the head is already a definite answer
        elif ht is not None:
            for g in definite(tp.head.pred, ht):
                n = _nogood(b, tp.head.match(b, g, ht))
                if n is not None:
                    add.add(n)
        elif floors and heads is not None and (
                hf := floors[tp.head.tvar] if tp.head.tvar in floors else
                _window_floor(tp, floors) if tp.windows else None) is not None:
            # a head at a future time already definite (another rule): V ≠ its time (a
            # head's time that only a window ties to a literal: its floor through it)
            lo = hf + tp.head.toff
            for g, t in heads(tp.head.pred):
                if t >= lo:
                    n = _nogood(b, tp.head.match(b, g, t))
                    if n is not None:
                        add.add(n)
        png = _with(ng, add) if add else ng
        past: list = []
        if floors:  # split with the nogoods below the floors, then drop them
            if split:
                past = self._past(tp, b, ev, png, tau, floors, arrived, definite, has, new,
                                  heads, seeded)
            png = _past_pruned(png, floors)
        pieces = [(b, png)]
        if floors and tp.windows and _past_windows(tp, b, floors):
            pieces = []  # every instance left is past its window (issue 45.2)
        for i in self.lits[tp.tid]:
            if i not in ev and tp.lits[i].pred in self.delays.patterns:
                nxt = []
                for pb, pn in pieces:
                    nxt.extend(self._run_out(tp.lits[i], pb, pn, tau))
                pieces = nxt
        if not past and len(pieces) == 1 and pieces[0] == (b, ng):
            return None
        return pieces + past

    def _past(self, tp: ETemplate, b: Binding, ev: frozenset, ng: frozenset, tau: int,
              floors: dict, arrived: Lookup, definite: Lookup, has, new: bool,
              heads: Optional[HeadsLookup], seeded: bool) -> list:
        """The instances of an answer with unbound time variables that leave it at τ
        ("past"): per variable V, the values below its floor that are not yet split off —
        for an answer new at τ all that can still be live (a positive hypothesis on V still
        future-possible; with only negated ones on V, every value if step 1(a) made the
        answer from a fact of D|τ), else the one value the floor passed since τ - 1 — each
        refined as an answer of its own (exact pieces; step 3 decides their negations)."""
        out: list = []
        nat = natural_bounds(tp)
        for v, f in sorted(floors.items()):
            lo = f - 1
            if new:
                pos = [tau + 1 - self.delays.atom(tp.lits[i].pred, tp.lits[i].instantiate(b)[0])
                       - tp.lits[i].toff
                       for i in self.tlits[tp.tid] if i not in ev and tp.lits[i].tvar == v]
                if pos:
                    lo = max(pos)
                elif seeded:
                    lo = nat.get(v, 0)
            for c in range(max(lo, nat.get(v, 0)), f):
                if not new and self._expired_at(tp, b, ev, v, c, tau):
                    continue  # its own δ has passed: _finish would drop the instance
                got = _bind(b, ng, ((v, c),))
                if got is None:
                    continue
                for hb in (window_heads(tp, got[0]) if tp.windows else (got[0],)):
                    sub = self.refine(tp, hb, ev, got[1], tau, arrived, definite, has, new,
                                      heads, True, seeded)
                    out.extend([(hb, got[1])] if sub is None else sub)
        return out

    def _expired_at(self, tp: ETemplate, b: Binding, ev: frozenset, v: int, c: int,
                    tau: int) -> bool:
        """Is the instance V = c of an answer dead at τ — a positive hypothesis on V whose
        instance can no longer arrive (δ) — with no negated literal on V to decide?"""
        if any(tp.lits[j].tvar == v for j in self.nlits[tp.tid] if j not in ev):
            return False
        for i in self.tlits[tp.tid]:
            lp = tp.lits[i]
            if i in ev or lp.tvar != v:
                continue
            t = c + lp.toff
            if t + self.delays.atom(lp.pred, lp.instantiate(b)[0]) <= tau:
                return True
        return False

    def _run_out(self, lp, b: Binding, ng: frozenset, tau: int) -> list:
        """The instances of positive hypothesis lp (under b) still future-possible at τ by
        their own δ (§3: δ of a ground atom = greatest δ of the patterns it matches, else
        the predicate's default)."""
        args, t = lp.instantiate(b)
        if t is None or None not in args:
            return [(b, ng)]
        k = tau - t
        dead, live = [], []
        for d in self.delays.patterns.get(lp.pred, ()):
            eqs = _unify_pattern(lp, b, args, d.pattern)
            if eqs is not None:
                (dead if d.delay <= k else live).append(eqs)
        if any(not l for l in live):
            return [(b, ng)]  # an open pattern matches every instance: all are open
        default_open = self.delays.default.get(lp.pred, 0) > k
        if default_open and not dead:
            return [(b, ng)]
        out: list = []
        if default_open and all(dead):
            # instances matching no pattern are open: exclude each run-out pattern …
            out.append((b, _with(ng, {tuple(sorted(e.items())) for e in dead})))
            # … and give back its overlaps with open patterns (δ is the greatest match)
            opens = [m for e in dead for l in live for m in [_merge(e, l)] if m is not None]
        else:
            # the default has run out, or a run-out pattern matches every instance: only
            # instances of open patterns remain
            opens = live
        for m in opens:
            got = _bind(b, ng, tuple(sorted(m.items())))
            if got is not None and got not in out:
                out.append(got)
        return out


class Answered:
    """Ground heads p(c̄, t) of the definite answers emitted so far, each kept until tick
    t + H(p) (Exactness.horizons); for H(p) = None only those of the current tick."""

    def __init__(self, horizons: dict[str, Optional[int]]):
        self.horizons = horizons
        self.heads: dict = {}  # (pred, t) -> set of args

    def add(self, pred: str, args: tuple, t: int) -> None:
        if pred in self.horizons:
            self.heads.setdefault((pred, t), set()).add(args)

    def get(self, pred: str, t: int) -> Iterable[tuple]:
        return self.heads.get((pred, t), ())

    def until(self, pred: str, t: int) -> int:
        h = self.horizons.get(pred)
        return -1 if h is None else t + h

    def expire(self, tau: int) -> None:
        """Forget the heads no answer created at τ or later can have."""
        for key in [k for k in self.heads if self.until(*k) < tau]:
            del self.heads[key]

    def of(self, pred: str) -> list[tuple[tuple, int]]:
        """(args, t) of the remembered heads of a predicate, at any time."""
        return heads_of(self.heads, pred)

    def items(self) -> list[tuple]:
        """(pred, args, t, until) of every remembered head (the lake's state rows)."""
        return [(p, a, t, self.until(p, t)) for (p, t), s in sorted(self.heads.items())
                for a in sorted(s)]

    def load(self, items: Iterable[tuple]) -> None:
        self.heads = {}
        for p, a, t in items:
            self.add(p, tuple(a), t)


def heads_of(heads: dict, pred: str) -> list[tuple[tuple, int]]:
    """(args, t) of the heads of a predicate in a map {(pred, t): [args, …]}, at any time."""
    return [(a, t) for (p, t), s in heads.items() if p == pred for a in s]


def natural_bounds(tp: ETemplate) -> dict[int, int]:
    """Per time variable V of a template, the least value that keeps every time term V + k
    natural (and above pre-processing's bounds, 002 Example 13's "invalid timestamps")."""
    out: dict[int, int] = {}
    for lp in (tp.head,) + tp.lits:
        if lp.tvar is not None:
            out[lp.tvar] = max(out.get(lp.tvar, -lp.toff), -lp.toff)
    for v, k in tp.time_min:
        out[v] = max(out.get(v, k), k)
    return out


def time_floors(tp: ETemplate, b: Binding, ev: frozenset, tau: int,
                lits: Optional[Iterable[int]] = None) -> dict[int, int]:
    """Per unbound time variable V of a hypothesis, its floor at τ: the least value for
    which every hypothesis on V, positive or negated, is later than τ (max of τ + 1 - k
    over V + k); the instances below it are split off ("past"), so a watched answer covers
    V ≥ floor.  `lits`: the literals to read (default: all)."""
    out: dict[int, int] = {}
    for i in (range(len(tp.lits)) if lits is None else lits):
        lp = tp.lits[i]
        v = lp.tvar
        if v is None or i in ev or b[v] is not None:
            continue
        f = tau + 1 - lp.toff
        if out.get(v, f) <= f:
            out[v] = f
    return out


def printed_floors(tp: ETemplate, b: Binding, ev: frozenset, tau: int) -> dict[int, int]:
    """The floors of a hypothetical answer that remove instances (above the natural bound,
    and below the first time of a periodic domain): the `time_from` of its printed object."""
    fl = time_floors(tp, b, ev, tau)
    if not fl:
        return fl
    nat = natural_bounds(tp)
    # a periodic time domain that starts at the floor or later says more
    late = {v for v, d in tp.periodic if v in fl and d.allowed is not None
            and d.allowed.offset >= fl[v]}
    return {v: f for v, f in fl.items() if f > nat.get(v, 0) and v not in late}


def _window_end(tp: ETemplate, lp) -> Optional[int]:
    """The greatest offset from the head's time variable a literal on a window's variable
    takes (V − T ≤ hi: hi + its offset; issue 45.2), None if no window ties them."""
    t, v = tp.head.tvar, lp.tvar
    if t is None or v is None:
        return None
    for x, u, lo, hi in tp.windows:
        if (x, u) == (v, t):
            return hi + lp.toff
        if (x, u) == (t, v):
            return -lo + lp.toff
    return None


def _window_floor(tp: ETemplate, floors: dict) -> Optional[int]:
    """The least head time an answer's instances reach when its head's time variable is
    tied to literals only by windows whose variables have floors (issue 45.2)."""
    t = tp.head.tvar
    got = None
    for x, u, lo, hi in tp.windows:
        if u == t and x in floors:  # lo ≤ X − T ≤ hi: T ≥ X − hi
            f = floors[x] - hi
        elif x == t and u in floors:  # lo ≤ T − U ≤ hi: T ≥ U + lo
            f = floors[u] + lo
        else:
            continue
        got = f if got is None else max(got, f)
    return got


def _past_windows(tp: ETemplate, b: Binding, floors: dict) -> bool:
    """Has a time variable's floor passed the end of its window (issue 45.2)?"""
    rng = window_ranges(tp, b)
    return rng is None or any(v in rng and f > rng[v][1] for v, f in floors.items())


def _past_pruned(ng: frozenset, floors: dict) -> frozenset:
    """ng without the nogoods that exclude only values below a floor (already split off)."""
    if not ng:
        return ng
    drop = [n for n in ng if any(v in floors and type(c) is int and c < floors[v] for v, c in n)]
    return ng.difference(drop) if drop else ng


def _nogood(b: Binding, nb: Optional[Binding]) -> Optional[tuple]:
    """The bindings nb adds to b, as a nogood (None if nb is None or adds nothing)."""
    if nb is None or nb is b:
        return None
    n = tuple((v, nb[v]) for v in range(len(b)) if b[v] is None and nb[v] is not None)
    return n or None


def _with(ng: frozenset, add: Iterable[tuple]) -> frozenset:
    """ng ∪ add without subsumed nogoods (one whose proper subset is also a nogood), so
    that equal instance sets have equal nogoods whatever the order they were found in."""
    out = set(ng)
    out.update(add)
    if not any(len(n) > 1 for n in out):
        return frozenset(out)
    keep = set()
    for n in out:
        if len(n) > 1 and any(tuple(s) in out for r in range(1, len(n))
                              for s in combinations(n, r)):
            continue
        keep.add(n)
    return frozenset(keep)


def _unify_pattern(lp, b: Binding, args: tuple, pattern) -> Optional[dict]:
    """Bindings of lp's unbound variables under which lp's instances match a `#delay`
    pattern (constants or None), or None if no instance matches."""
    if pattern is None:
        return {}
    if len(pattern) != len(args):
        return None
    eqs: dict = {}
    for (isvar, x), a, p in zip(lp.args, args, pattern):
        if p is None:
            continue
        if a is not None:
            if a != p:
                return None
            continue
        cur = eqs.get(x)
        if cur is None:
            eqs[x] = p
        elif cur != p:
            return None
    return eqs


def _merge(e: dict, l: dict) -> Optional[dict]:
    out = dict(e)
    for x, c in l.items():
        if out.get(x, c) != c:
            return None
        out[x] = c
    return out
