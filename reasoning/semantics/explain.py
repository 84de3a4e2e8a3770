"""Answers for people and programs: status, substitution, evidence, hypotheses, exclusions,
and the deadline — the last tick at which an answer's outcome can still change (none of the
papers reports it; derived from the hypotheses' timestamps and δ, 002 Def. 5)."""
from __future__ import annotations

import functools
import itertools
import json
from typing import TYPE_CHECKING, Any, Optional

from reasoning.semantics.answer import Answer
from reasoning.semantics.exact import printed_floors, time_floors
from reasoning.semantics.patterns import window_ranges
from reasoning.language.metric import lifted_window, window_bounds, window_prefix
from reasoning.language.periodic import TimeDomain
from reasoning.language.syntax import Const
from reasoning.semantics.regions import cover_of

if TYPE_CHECKING:  # the executor whose state is explained (a type only: no import edge up)
    from reasoning.row.engine import Engine

DEFINITE, HYPOTHETICAL, PENDING = "definite", "hypothetical", "pending"


def status(eng: Engine, a: Answer) -> str:
    """definite (H = ∅), hypothetical (E ≠ ∅, a supported answer) or pending (E = ∅)."""
    if eng.is_definite(a):
        return DEFINITE
    return HYPOTHETICAL if a.ev else PENDING


def static_horizons(eng: Engine) -> dict[str, Optional[int]]:
    """rel(p): an answer of p_t is decided by tick t + rel(p) at the latest (None: unbounded)."""
    rel: dict[str, Optional[int]] = {}
    preds = {tp.head.pred for tp in eng.templates}
    for p in preds:
        rel[p] = 0
    for _ in range(64):
        changed = False
        for tp in eng.templates:
            p = tp.head.pred
            if rel[p] is None:
                continue
            h = tp.head
            best: Optional[int] = rel[p]
            for lp in tp.lits:
                if h.tvar is None or lp.tvar != h.tvar:
                    best = None
                    break
                off = lp.toff - h.toff
                if lp.positive and not lp.derived:
                    cand = off + eng.delays.max(lp.pred)
                else:
                    r = rel.get(lp.pred, 0)
                    if r is None:
                        best = None
                        break
                    cand = off + r
                best = max(best, cand)  # type: ignore[arg-type]
            if best != rel[p]:
                rel[p] = best
                changed = True
        if not changed:
            return rel
    return {p: (v if v is not None and v < 10 ** 6 else None) for p, v in rel.items()}


class Explainer:
    """Renders answers of an engine at its current tick."""

    narrow = True  # a lifted diamond's ways as one narrowed window (_ways_of)

    def __init__(self, eng: Engine):
        self.eng = eng
        self.rel = static_horizons(eng)
        self._memo: dict[Answer, Optional[int]] = {}
        self._ways: dict = {}  # (pred, ground args, t) -> (the atom, its ways) this tick
        self._windows: dict = {}  # (lifted diamond, head time) -> its open ticks (_window)
        self._shared_memo: dict = {}  # (lifted diamond, head time) -> _shared
        self._narrowed_memo: dict = {}  # (lifted diamond, head time) -> _narrowed
        self._lifted_memo: dict = {}  # pred -> metric.lifted_window(pred)
        # a ground derived atom -> its text, this tick's and the previous tick's (as _lits)
        self._atoms: dict = {}
        self._atoms_before: dict = {}
        self._way: dict[Answer, tuple] = {}  # an answer of a derived predicate -> (ev, hy)
        # (template, bindings, E) -> its printed evidence and hypotheses, this tick's and
        # the previous tick's: most answers are printed again unchanged at the next tick
        self._lits: dict = {}
        self._lits_before: dict = {}

    def reset(self) -> None:
        self._memo = {}
        self._ways = {}
        self._windows = {}
        self._shared_memo = {}
        self._narrowed_memo = {}
        self._way = {}
        self._lits_before, self._lits = self._lits, {}
        self._atoms_before, self._atoms = self._atoms, {}

    def deadline(self, a: Answer, depth: int = 0) -> Optional[int]:
        """Last tick at which a's outcome can change; None if definite or unbounded."""
        eng = self.eng
        if eng.is_definite(a):
            return None
        if a in self._memo:
            return self._memo[a]
        tau = eng.tau
        tp = eng.templates[a.tid]
        best = tau
        for i, lp in enumerate(tp.lits):
            if i in a.ev:
                continue
            args, t = lp.instantiate(a.b)
            if t is None and tp.windows and lp.positive and not lp.derived:
                r = (window_ranges(tp, a.b) or {}).get(lp.tvar)
                if r is not None:  # a window's operand: its last instance (issue 45.2)
                    t = r[1] + lp.toff
            if t is None:
                self._memo[a] = None
                return None
            if lp.positive and not lp.derived:
                best = max(best, t + eng.delta(lp.pred, args))
                continue
            if t > tau or depth > 200:  # (the key order bounds the recursion; a guard)
                r = self.rel.get(lp.pred, 0)
                if r is None:
                    self._memo[a] = None
                    return None
                best = max(best, t + r)
                continue
            for l in eng._L_for(lp.pred, t, args):
                lt = eng.templates[l.tid]
                if cover_of(lp, a.b, lt.head, l.b, l.ng, approx_full=True) is None:
                    continue
                d = self.deadline(l, depth + 1)
                if d is None and not eng.is_definite(l):
                    self._memo[a] = None
                    return None
                if d is not None:
                    best = max(best, d)
        self._memo[a] = best
        return best

    def render(self, a: Answer, tick: int, ground: Optional[dict] = None) -> dict[str, Any]:
        """The `hypo run --format jsonl` object of one schematic answer."""
        eng = self.eng
        tp = eng.templates[a.tid]
        b = a.b
        if ground:
            b = tuple(ground.get(i, v) for i, v in enumerate(b))
        st = status(eng, a)
        ng = a.ng if not ground else frozenset(n for n in a.ng if all(v not in ground for v, _ in n))
        key = (a.tid, b, a.ev)
        lits = self._lits.get(key)
        if lits is None:
            lits = self._lits_before.get(key)
            if lits is None:
                lits = printed_literals(tp, a, b)
            self._lits[key] = lits
        out = answer_object(tp, a, b, ng, tick, st, None if st == DEFINITE else self.deadline(a),
                            lits=lits)
        if tp.der and st != DEFINITE:
            waits = self.derived_waits(tp, a, b)
            if waits:
                out["derived"] = waits
        return out

    def derived_waits(self, tp, a: Answer, b: tuple) -> dict[str, list]:
        """What each derived hypothesis (modular evaluation) still waits for: the evidence
        and hypotheses of the answers of its predicate that may prove it, so that a reader
        sees the stream facts that decide it (one level down)."""
        eng = self.eng
        out: dict[str, list] = {}
        for i in tp.der:
            if i in a.ev:
                continue
            lp = tp.lits[i]
            args, t = lp.instantiate(b)
            if t is None:
                continue
            # a ground atom's ways depend on the atom only: computed once a tick (every
            # answer waiting on it shares them — thousands in window programs)
            key = (lp.pred, args, t) if None not in args else None
            got = self._ways.get(key) if key is not None else None
            if got is None:
                text = self._atoms.get(key) if key is not None else None
                if text is None:
                    text = self._atoms_before.get(key) if key is not None else None
                    if text is None:
                        text = lp.render(b, tp.names)
                    if key is not None:
                        self._atoms[key] = text
                ways = self._ways_of(lp, b, args, t, text)
                got = (text, [{"evidence": list(ev), "hypotheses": list(hy)}
                              for ev, hy in (sorted(ways) if len(ways) > 1 else ways)])
                if key is not None:
                    self._ways[key] = got
            out[got[0]] = got[1]  # (shared: readers only serialise it)
        return out

    def _ways_of(self, lp, b: tuple, args: tuple, t: int, text: str) -> set:
        """The (evidence, hypotheses) of the answers of a derived atom's predicate that may
        prove it, and for an atom read ahead of its answers' creation those step 2 will
        make (Engine.future_ways).  A lifted diamond's ways that each wait for the operand
        at one tick, with no evidence, print as one when the ticks are a run: the window
        narrowed to them (`Diamondminus[0,15] E1(c16, 125)`)."""
        eng = self.eng
        ground = None not in args
        win = self._lifted(lp.pred) if self.narrow and ground else None
        if win is not None and t > eng.tau and (lp.pred, args, t) not in eng.head_ground:
            nw = self._narrowed(lp.pred, t)
            if nw is not None:  # (the usual case: the same window for every atom at t)
                return {_window_way(text, nw)}
        ways, ticks, singles = set(), set(), []

        def take(l: Answer) -> None:
            s = _operand_tick(eng.templates[l.tid], l.b, t) if win and not l.ev else None
            if s is None:
                ways.add(self._way_of(l, args, t))
            else:
                ticks.add(s)
                singles.append(l)

        shared = self._shared(lp.pred, t) if win else None
        if shared is None:
            L = eng._L_for(lp.pred, t, args)
        else:  # the answers with an open head, once per (predicate, head time); then the
            # atom's own (ground heads)
            ticks.update(shared[0])
            singles.extend(shared[1])
            ways.update(self._way_of(l, args, t) for l in shared[2])
            L = eng.head_ground.get((lp.pred, args, t), ())
        for l in L:
            lt = eng.templates[l.tid]
            if cover_of(lp, b, lt.head, l.b, l.ng, approx_full=True) is not None:
                take(l)
        w = None
        if ground and t > eng.tau:  # read ahead of its answers' creation
            w = self._window(lp.pred, t) if win else None
            if w is not None:
                ticks.update(w)
            else:
                for l in eng.future_ways(lp.pred, args, t):
                    take(l)
        if ticks:
            nw = _narrowing(win, t, ticks)
            if nw is not None:
                ways.add(_window_way(text, nw))
            else:  # (not one run: each tick its way)
                if w:
                    singles.extend(eng.future_ways(lp.pred, args, t))
                ways.update(self._way_of(l, args, t) for l in singles)
        return ways

    def _shared(self, pred: str, t: int) -> Optional[tuple]:
        """_ways_of's part that is the same for every ground atom of a lifted diamond at
        head time t, once a tick: (operand ticks, their answers, the other answers) of the
        answers at t whose head arguments are distinct unbound variables without nogoods —
        each covers every atom; None where an answer's head is not so (its time unbound, a
        constant, a nogood): then each atom looks at every answer (_L_for)."""
        key = (pred, t)
        got = self._shared_memo.get(key, False)
        if got is not False:
            return got
        eng = self.eng
        got = None
        if (pred, None) not in eng.head_schematic:
            ticks: set = set()
            singles: list = []
            others: list = []
            for l in eng.head_schematic.get((pred, t), ()):
                lt = eng.templates[l.tid]
                if l.ng or not _open_head(lt.head, l.b):
                    break
                s = _operand_tick(lt, l.b, t) if not l.ev else None
                if s is None:
                    others.append(l)
                else:
                    ticks.add(s)
                    singles.append(l)
            else:
                got = (ticks, singles, others)
        self._shared_memo[key] = got
        return got

    def _narrowed(self, pred: str, t: int) -> Optional[tuple]:
        """For a lifted diamond read ahead at head time t whose answers at t all cover every
        atom and wait for nothing but the operand (_shared) — as when step 2 has not
        created them —: (the length of its printed operator, the operator narrowed to the
        open ticks) — every ground atom's one way, its text with that operator; None
        where _ways_of must look (no run of ticks, other ways)."""
        key = (pred, t)
        got = self._narrowed_memo.get(key, False)
        if got is not False:
            return got
        got = None
        shared = self._shared(pred, t)
        w = self._window(pred, t)
        if shared is not None and not shared[2] and w is not None:
            got = _narrowing(self._lifted(pred), t, shared[0] | w)
        self._narrowed_memo[key] = got
        return got

    def _lifted(self, pred: str):
        """metric.lifted_window(pred), once per predicate."""
        w = self._lifted_memo.get(pred, False)
        if w is False:
            w = self._lifted_memo[pred] = lifted_window(pred)
        return w

    def _window(self, pred: str, t: int) -> Optional[set]:
        """For a lifted diamond (metric.py) read ahead at head time t: the ticks of its
        window step 2 will still wait on, for every argument alike (empty if none) —
        _ways_of narrows the window to them instead of one way per tick
        (Engine.future_ways); None where they may differ by the arguments (per-instance
        delays) or the templates are not one operand each: then future_ways, answer by
        answer.  (A fact arrived in the window makes the atom definite: it is evidence
        then, not a hypothesis whose ways are printed.)"""
        key = (pred, t)
        if key in self._windows:
            return self._windows[key]
        ticks: Optional[set] = set() if self._lifted(pred) is not None else None
        for tp, _, per_instance in self.eng.future_templates(pred, t) if ticks is not None \
                else ():
            o = tp.lits[0]
            if per_instance or len(tp.lits) != 1 or tp.der or not tp.pos or \
                    tp.nogoods or o.tvar != tp.head.tvar or o.tvar is None:
                ticks = None
                break
            ticks.add(t - tp.head.toff + o.toff)
        self._windows[key] = ticks
        return ticks

    def _way_of(self, l: Answer, args: Optional[tuple] = None, t: Optional[int] = None
                ) -> tuple:
        """(evidence, hypotheses) of an answer of a derived predicate, rendered once; with
        the derived atom's args and t, its head variables bound to them (`E1(a, 3)`, not
        `E1(X, 3)` under the atom `P2(a, 3)`: an answer with an unbound head covers it)."""
        b = l.b
        if args is not None and None in b:
            b = self.eng.templates[l.tid].head.match(b, args, t) or b
        key = l if b is l.b else (l, b)
        w = self._way.get(key)
        if w is None:
            ev, hy = printed_literals(self.eng.templates[l.tid], l, b)
            w = self._way[key] = (tuple(ev), tuple(hy))
        return w

    def groundings(self, a: Answer, domain: tuple[str, ...]):
        """Assignments of a's unbound object *query* variables over the domain, minus its
        nogoods (variables not in the query are existential: they stay as they are)."""
        tp = self.eng.templates[a.tid]
        qidx = {x for _, isvar, x, _ in tp.qvars if isvar}
        free = [i for i, v in enumerate(a.b)
                if v is None and i in qidx and i not in tp.time_vars]
        if not free:
            yield {}
            return
        for values in itertools.product(domain, repeat=len(free)):
            g = dict(zip(free, values))
            if any(all(g.get(v) == c for v, c in n) for n in a.ng):
                continue
            yield g


def _operand_tick(lt, lb: tuple, t: int) -> Optional[int]:
    """The tick of the one positive literal of an answer of a lifted diamond's template
    (lb its binding, t its head time), None for any other template."""
    if len(lt.lits) != 1 or lt.der or not lt.pos:
        return None
    o = lt.lits[0]
    if o.tvar is None:
        return o.toff
    v = lb[o.tvar]
    if v is None:
        if o.tvar != lt.head.tvar:
            return None
        v = t - lt.head.toff
    return v + o.toff


def _open_head(head, b: tuple) -> bool:
    """Every argument of the head is a variable unbound in b, no two the same."""
    xs = [x for isvar, x in head.args if isvar and b[x] is None]
    return len(xs) == len(head.args) and len(set(xs)) == len(xs)


def _narrowing(win: tuple, t: int, ticks: set) -> Optional[tuple]:
    """A lifted diamond (win: its operator, lo, hi) at head time t narrowed to the open
    ticks when they are one run: (the length of its printed operator, the narrowed
    operator as printed); None when they are not (or none)."""
    if not ticks:
        return None
    first, last = min(ticks), max(ticks)
    if last - first + 1 != len(ticks):
        return None
    op, lo, hi = win
    return len(window_prefix(op, lo, hi)), window_prefix(op, *window_bounds(op, t, first, last))


def _window_way(text: str, nw: tuple) -> tuple:
    """A lifted diamond's atom (`text`, as printed) with its operator narrowed (nw:
    _narrowing's): the (evidence, hypotheses) of `Diamondminus[0,15] E1(c16, 125)`."""
    return (), (nw[1] + text[nw[0]:],)


def identity_exclusions(excluded: dict) -> list:
    """The exclusions that are part of an answer's identity, sorted: those of object
    variables.  A time variable's (integers: a head definite at that time, an instance
    refuted there) are time constraints like its `time_from` floor, which drops them once
    it passes them: as identity they made an answer whose instances did not change look
    refuted (`P3(a, T) for T ∉ {0}` at tick 0, `for T ≥ 1` at tick 1)."""
    return sorted((k, v) for k, v in excluded.items()
                  if not (v and all(type(c) is int for c in v)))


def answer_key(obj: dict) -> tuple:
    """Identity of an answer for lifecycle tracking: query, bound substitution and the
    exclusions of its object variables (identity_exclusions), and the time constraints of
    periodic facts, when it has some."""
    key = (obj["query"], tuple(sorted(obj["substitution"].items())),
           tuple((k, tuple(v)) for k, v in identity_exclusions(obj["excluded"])))
    if obj.get("periodic"):
        key += (json.dumps(obj["periodic"], sort_keys=True),)
    return key


@functools.lru_cache(maxsize=64)
def _query_atom(query: str):
    from reasoning.language.parser import parse_atom

    return parse_atom(query)


def _term(value) -> str:
    """A value of an answer as the program syntax writes it: a constant quoted where it must
    be (`"wt1, 0"`, `"X"`: else it would read as two arguments or a variable), a time bare."""
    return str(Const(value)) if isinstance(value, str) else str(value)


def format_atom_answer(obj: dict) -> str:
    """`OK(wt2, 1)` or `OK(X, 1) for X ∉ {wt1}` for the text output."""
    q = _query_atom(obj["query"])
    parts = []
    for t in q.args:
        name = getattr(t, "name", None)
        if name is not None and name in obj["substitution"]:
            parts.append(_term(obj["substitution"][name]))
        else:
            parts.append(str(t))
    if q.time is not None:
        tv = q.time.var
        parts.append(str(obj["substitution"].get(tv, tv)) if tv else str(q.time.offset))
    s = f"{q.pred}({', '.join(parts)})"
    to = obj.get("time_to", {})
    conds = [f"{v} ≥ {f}" if v not in to else f"{v} = {f}" if f == to[v] else
             f"{f} ≤ {v} ≤ {to[v]}"
             for v, f in obj.get("time_from", {}).items()]
    conds += [f"{v} ∉ {{{', '.join(map(_term, cs))}}}" for v, cs in obj["excluded"].items()]
    conds += [TimeDomain.from_json(j).text(v) for v, j in sorted(obj.get("periodic", {}).items())]
    if conds:
        s += " for " + ", ".join(conds)
    return s


def printed_name(tp):
    """The name an answer's variable prints under (in `excluded`, `periodic`): the query
    variable it is, where it is one, else its own name."""
    qname: dict = {}
    for name, isvar, x, off in tp.qvars:
        if isvar and off == 0:
            qname.setdefault(x, name)
    return lambda v: qname.get(v, tp.names[v])


def exclusions(tp, ng) -> tuple[dict, list]:
    """An answer's nogoods as printed: the single-variable ones as `excluded` ({name: sorted
    constants}), the others as `excluded_combinations`; a variable is named after the query
    variable it is, where it is one."""
    by_var: dict[int, list] = {}
    combos = []
    for n in ng:
        if len(n) == 1:
            v, c = n[0]
            got = by_var.get(v)
            if got is None:
                got = by_var[v] = []
            got.append(c)
        else:
            combos.append(n)
    return exclusions_of(tp, by_var, combos)


def exclusions_of(tp, by_var: dict, combos: list) -> tuple[dict, list]:
    """`exclusions` from the nogoods split already: {variable: [constants]} of the
    single-variable ones (in the order of the nogoods), the others as tuples."""
    name_of = printed_name(tp)
    combos = [{name_of(v): c for v, c in n} for n in combos]
    excluded: dict[str, list] = {}
    for v, cs in by_var.items():
        excluded.setdefault(name_of(v), []).extend(cs)

    def order(cs: list) -> list:  # by their text; strings (the usual case) sort as they are
        return sorted(cs) if all(type(c) is str for c in cs) else sorted(cs, key=str)

    return ({k: order(v) for k, v in sorted(excluded.items())},
            sorted(combos, key=lambda d: sorted(d.items())))


def printed_literals(tp, a: Answer, b: tuple) -> tuple[list, list]:
    """The printed evidence and hypotheses of answer `a` under bindings `b`."""
    ev = sorted({tp.lits[i].render(b, tp.names) for i in a.ev})
    hy = sorted({tp.lits[i].render(b, tp.names) for i in range(len(tp.lits))
                 if i not in a.ev} - set(ev))
    return ev, hy


def answer_object(tp, a: Answer, b: tuple, ng, tick: int, st: str,
                  deadline: Optional[int], split: Optional[tuple] = None,
                  lits: Optional[tuple] = None) -> dict[str, Any]:
    """The printed object of answer `a` of template `tp` under bindings `b` (its own, or
    grounded) with nogoods `ng`, status `st` and deadline (Explainer.render, and the columnar
    renderer's rows with nogoods; split: the nogoods as exclusions_of takes them, instead
    of ng; lits: printed_literals, if known)."""
    ev, hy = printed_literals(tp, a, b) if lits is None else lits
    if split is None:
        excluded, combos = exclusions(tp, ng) if ng else ({}, [])
    else:
        excluded, combos = exclusions_of(tp, *split)
    out: dict[str, Any] = {
        "tick": tick,
        "query": _query_text(tp),
        "status": st,
        "substitution": tp.answer(b),
        "excluded": excluded,
        "evidence": ev,
        "hypotheses": hy,
        "deadline": deadline,
    }
    if combos:
        out["excluded_combinations"] = combos
    if st == HYPOTHETICAL and tp.time_vars:
        fl = printed_floors(tp, b, a.ev, tick)
        to = {}
        if tp.windows:  # a window's operand: its time variable between two bounds
            fl = dict(fl)
            floors = time_floors(tp, b, a.ev, tick)  # (printed_floors' values, unfiltered)
            for v, (lo, hi) in (window_ranges(tp, b) or {}).items():
                if b[v] is None:
                    fl[v] = max(lo, floors.get(v, lo))
                    to[v] = hi
        if fl:
            name_of = printed_name(tp)
            out["time_from"] = {name_of(v): f for v, f in sorted(fl.items())}
            if to:
                out["time_to"] = {name_of(v): f for v, f in sorted(to.items())}
    per = periodic_constraints(tp, b) if tp.periodic else None
    if per:
        out["periodic"] = per
    return out


_QUERY_TEXT: dict = {}


def _query_text(tp) -> str:
    """str(tp.query.atom), once per template."""
    got = _QUERY_TEXT.get(id(tp))
    if got is None or got[0] is not tp:
        if len(_QUERY_TEXT) > 4096:  # (templates of programs compiled before)
            _QUERY_TEXT.clear()
        got = _QUERY_TEXT[id(tp)] = (tp, str(tp.query.atom))
    return got[1]


def periodic_constraints(tp, b: tuple) -> dict:
    """The time domains (periodic facts, periodic.py) of the answer's unbound variables, named
    like `exclusions`: {"T": {"period": 7, "offset": 3}}."""
    name_of = printed_name(tp)
    return {name_of(v): d.to_json() for v, d in tp.periodic if b[v] is None}


def key_of(tp, a: Answer) -> tuple:
    """explain.answer_key of an Answer without rendering it (its query, bound substitution
    and single-variable exclusions of object variables)."""
    return answer_key({"query": str(tp.query.atom), "substitution": tp.answer(a.b),
                       "excluded": exclusions(tp, a.ng)[0],
                       "periodic": periodic_constraints(tp, a.b)})


def answer_key_text(obj: dict) -> str:
    """The identity of an answer across ticks (explain.answer_key) as text."""
    key = [obj["query"], sorted(obj["substitution"].items()),
           identity_exclusions(obj["excluded"])]
    if obj.get("periodic"):
        key.append(json.dumps(obj["periodic"], sort_keys=True))
    return json.dumps(key, ensure_ascii=False)
