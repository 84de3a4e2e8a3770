"""What users would otherwise run: the program and D_τ translated to clingo (issue 6).

Translation (stratified, nonrecursive fragment; recursion is accepted by clingo but the
look-ahead/look-back bounds below are then unknown):

* predicates: temporal `P` -> `t_P` with the time as last argument, rigid `R` -> `r_R`
  (prefixes keep case-distinct names apart and make them valid clingo identifiers);
* constants: every object constant `c` -> the clingo string `"c"` (backslash, quote and
  newline escaped); answers map `Symbol.string` back.  Times are clingo integers;
* variables: `X` -> `VX` (`_1` -> `V_1`); time terms `T+k` -> `VT+k`;
* `not` -> `not`.  A variable that occurs in no positive body literal (like X and T in
  `OK(X, T-1) :- not Shdn(X, T).`) gets a domain literal: `dom(VX)` for object variables,
  `time(VT+m)` for time variables (m: the smallest offset of T in the rule).  `dom` is the active domain: the program's constants and
  `#domain`, caller-supplied extra constants, and -- by rules `dom(V) :- t_E(.., V, .., _).`
  -- every constant of the facts given to clingo.  `time` is `lo..hi` (chosen per call);
* time terms range over the natural numbers (a time variable itself may be negative:
  `P(T+1) :- E(T+1)` derives P(0) from E(0), as in the engine and the reference evaluator):
  a time variable bound by a positive literal gets a guard `VT+m >= 0` (m: its smallest
  offset in the rule) unless a positive literal implies it; `time(VT+m)` ensures it for
  the others (time/1 starts at >= 0); a rule with a negative constant time is dropped.

Domain.  clingo's natural reading (`dom/1`) is the active domain.  The engine's is the open
domain (README): a variable only under negation and in no head is existential over
infinitely many constants (`P(T) :- not E(X, T).` holds at every T).  `open_domain=True`
emulates it with k fresh constants in `dom/1` (k = the most object variables of a rule,
enough for every pattern of equalities among unseen constants of one rule instance); answers
mentioning them are not listed (as `--ground` lists #domain only).

Horizon and truncation.  `time(lo..hi)` is finite, so instances of the rules with a time
variable outside it are missing, and a negated atom beyond `hi` is (wrongly) false.  We
never report answers in that zone: `need(p)` ("look-ahead") bounds how far into the future
of t the truth of p(c, t) depends on facts and on `time` values; `back(p)` ("look-back")
how far into its past.  For a rule `p(.., T+oh) :- .., [not] q(.., T+oq), ..` (one time
variable, used by the head):  need(p) = max(0, oq - oh + need(q)) and
back(p) = max(0, oh - oq + back(q)) over its rules and literals, 0 for EDB and rigid
predicates (a `time(VT+m)` literal lies between the rule's smallest and largest time
term, so it adds nothing).  Rules with a ground head time or several time variables make the bound
unknown (None).  Hence:

* `closed_world(facts, horizon)`: the stratified model of Π ∪ facts (closed world: no other
  facts, ever) restricted to query answers with time <= horizon, computed with
  `time(0..horizon + need(Q))` -- exact, not just truncated.  For positive programs no
  domain predicate is needed at all and every answer is reported (horizon None).
* baseline (a) `Recompute`: each tick, ground and solve over D_τ from scratch with horizon τ.
  Positive programs are monotone, so every answer over D_τ is final and reported.  With
  negation an answer at time t is only final once every fact with time <= t + need(Q) has
  arrived, i.e. τ >= t + need(Q) + max δ: (a) reports those (reporting the others would
  mean retracting later: e.g. OK(x, t) needs Shdn(x, t+1) to be known false).
* baseline (b) `Watermark`: each tick releases the facts with time <= w = τ - max δ (all of
  them have arrived by then) and reports the answers with time <= w - need(Q) (the issue's
  "time <= τ - max δ" for Shdn, where need = 0; OK needs one tick of look-ahead, so OK(x, t)
  is released at w = t + 1: releasing it at w = t would be unsound).  Like a windowed stream
  processor it only evaluates the facts with time in [w - need - back, w] when both bounds
  are known (exact for the answers at t = w - need, the only new ones).
"""
from __future__ import annotations

import itertools
import time as clock
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

import clingo

from reasoning.language.compiler import CompiledProgram
from reasoning.semantics.patterns import Fact
from reasoning.language.syntax import Atom, Const, Program, Rule, Time, Var

AnswerKey = tuple  # tuple(sorted((query variable, value))) -- like reference.answers


# ------------------------------------------------------------------------------ naming


def quote(value: str) -> str:
    """A constant as a clingo string term."""
    esc = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{esc}"'


def pred_name(pred: str, rigid: bool) -> str:
    return ("r_" if rigid else "t_") + pred


def _var(name: str) -> str:
    return "V" + name


def _time(tm: Time) -> str:
    if tm.var is None:
        return str(tm.offset)
    if tm.offset == 0:
        return _var(tm.var)
    return f"{_var(tm.var)}{tm.offset:+d}"


def _atom(a: Atom) -> str:
    parts = [_var(t.name) if isinstance(t, Var) else quote(t.value) for t in a.args]
    if a.time is not None:
        parts.append(_time(a.time))
    name = pred_name(a.pred, a.time is None)
    return f"{name}({','.join(parts)})" if parts else name


def fact_text(f: Fact) -> str:
    """A stream fact as a clingo fact."""
    args = ",".join([quote(c) for c in f.args] + [str(f.time)])
    return f"{pred_name(f.pred, False)}({args})."


# ------------------------------------------------------------------------------ analysis


def _time_terms(rule: Rule) -> list[Time]:
    return [a.time for a in [rule.head] + [l.atom for l in rule.body] if a.time is not None]


def _shape(rule: Rule) -> Optional[tuple[int, list[tuple[str, int]]]]:
    """(head offset, [(body predicate, offset)]) if one time variable, used by the head,
    is the time of every temporal atom of the rule; None otherwise."""
    h = rule.head.time
    if h is None or h.var is None:
        return None
    body = []
    for lit in rule.body:
        t = lit.atom.time
        if t is None:
            continue  # rigid
        if t.var != h.var:
            return None
        body.append((lit.atom.pred, t.offset))
    return h.offset, body


def reach(rules: Iterable[Rule], direction: int) -> dict[str, Optional[int]]:
    """need (direction +1) or back (direction -1) of every IDB predicate (see module doc)."""
    rules = [r for r in rules if r.body]
    by_head: dict[str, list[Rule]] = defaultdict(list)
    for r in rules:
        by_head[r.head.pred].append(r)
    memo: dict[str, Optional[int]] = {}

    def go(p: str, stack: frozenset) -> Optional[int]:
        if p not in by_head:
            return 0
        if p in memo:
            return memo[p]
        if p in stack:
            return None  # recursive: no bound
        best: Optional[int] = 0
        for r in by_head[p]:
            shape = _shape(r)
            if shape is None:
                best = None
                break
            oh, body = shape
            for q, oq in body:
                sub = go(q, stack | {p})
                if sub is None:
                    best = None
                    break
                best = max(best, direction * (oq - oh) + sub)
            if best is None:
                break
        memo[p] = best
        return best

    return {p: go(p, frozenset()) for p in by_head}


# ------------------------------------------------------------------------------ translation


def _rule_text(rule: Rule) -> Optional[str]:
    if any(t.var is None and t.offset < 0 for t in _time_terms(rule)):
        return None  # an instance with a negative timestamp: dropped
    pos_vars: set[str] = set()
    for lit in rule.body:
        if lit.positive:
            pos_vars.update(lit.atom.variables())
    parts = [_atom(l.atom) for l in rule.body if l.positive]
    free_obj: list[str] = []
    free_time: list[str] = []
    for a in [rule.head] + [l.atom for l in rule.body]:
        for v in a.object_variables():
            if v not in pos_vars and v not in free_obj:
                free_obj.append(v)
        if a.time is not None and a.time.var is not None:
            v = a.time.var
            if v not in pos_vars and v not in free_time:
                free_time.append(v)
    parts += [f"dom({_var(v)})" for v in free_obj]
    # Time terms range over the natural numbers (a variable itself may be negative:
    # `P(T+1) :- E(T+1)` derives P(0) from E(0), as in the engine and reference evaluator).
    # With m the smallest offset of T in the rule: `time(VT+m)` for a variable in no
    # positive literal; a guard `VT+m >= 0` for one whose positive literals don't imply it.
    guards = []
    for v in sorted({t.var for t in _time_terms(rule) if t.var is not None}):
        m = min(t.offset for t in _time_terms(rule) if t.var == v)
        if v in free_time:
            parts.append(f"time({_time(Time(v, m))})")
            continue
        pos = [l.atom.time.offset for l in rule.body if l.positive and l.atom.time is not None
               and l.atom.time.var == v]
        if m < min(pos):
            guards.append(f"{_time(Time(v, m))} >= 0")
    parts += guards
    parts += ["not " + _atom(l.atom) for l in rule.body if not l.positive]
    if not parts:
        return f"{_atom(rule.head)}."
    return f"{_atom(rule.head)} :- {', '.join(parts)}."


def _program_constants(program: Program) -> set[str]:
    out = set(program.domain)
    for r in tuple(program.rules) + tuple(program.facts):
        for a in [r.head] + [l.atom for l in r.body]:
            out.update(t.value for t in a.args if isinstance(t, Const))
    if program.query is not None:
        out.update(t.value for t in program.query.args if isinstance(t, Const))
    return out


def _relevant(rules: Iterable[Rule], pred: str) -> list[Rule]:
    """The rules the query predicate depends on (the rest cannot change its answers)."""
    rules = list(rules)
    seen, todo = set(), [pred]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        for r in rules:
            if r.head.pred == p:
                todo.extend(l.atom.pred for l in r.body)
    return [r for r in rules if r.head.pred in seen]


@dataclass
class Stats:
    """One clingo call: answers (key -> time) and where the time went."""

    answers: dict
    seconds: float
    n_facts: int
    text_chars: int = 0


class ClingoProgram:
    """A program (and its query) translated once; `solve` adds facts and a time domain."""

    def __init__(self, program: Program | CompiledProgram, query: Optional[Atom] = None,
                 open_domain: bool = False):
        if isinstance(program, CompiledProgram):
            query = query or program.main.atom
            program = program.program
        self.program = program
        self.query = query or program.query
        if self.query is None:
            raise ValueError("no query")
        rules = _relevant(program.rules, self.query.pred)
        self.positive = all(l.positive for r in rules for l in r.body)
        self.rules_text = [t for t in (_rule_text(r) for r in rules) if t is not None]
        self.rules_text += [_rule_text(f) for f in program.facts]  # rigid facts
        self.needs_dom = any("dom(" in t for t in self.rules_text)
        self.needs_time = any("time(" in t for t in self.rules_text)
        # dom/1: the constants of every fact of the stream, also of the predicates the
        # query does not depend on (the active domain is that of D_τ)
        idb = {r.head.pred for r in program.rules if r.body}
        edb: dict[str, int] = {}
        for r in program.rules:
            for l in r.body:
                if l.atom.pred not in idb:
                    edb[l.atom.pred] = len(l.atom.args)
        self.dom_rules = []
        for p, n in sorted(edb.items()):
            rigid = p in program.rigid
            for i in range(n):
                args = ["_"] * n + ([] if rigid else ["_"])
                args[i] = "V"
                self.dom_rules.append(f"dom(V) :- {pred_name(p, rigid)}({','.join(args)}).")
        self.constants = sorted(_program_constants(program))
        # open domain: k fresh constants stand for all the unseen ones (k = most object
        # variables of a rule, so every pattern of equalities among unseen constants exists)
        self.fresh: tuple[str, ...] = ()
        if open_domain:
            k = max([len({v for a in [r.head] + [l.atom for l in r.body]
                          for v in a.object_variables()}) for r in rules] + [1])
            self.fresh = tuple(f"#fresh{i}" for i in range(1, k + 1))
        self.need = reach(rules, +1).get(self.query.pred, 0)
        self.back = reach(rules, -1).get(self.query.pred, 0)
        if self.need is None:
            offs = [t.offset for r in rules for t in _time_terms(r)] or [0]
            spans = sum(max(o) - min(o) for o in
                        ([t.offset for t in _time_terms(r)] or [0] for r in rules))
            self.margin = spans + max(abs(o) for o in offs) + 1  # heuristic, see doc
        else:
            self.margin = self.need
        q = self.query
        arity = len(q.args) + (0 if q.time is None else 1)
        self.show = f"#show {pred_name(q.pred, q.time is None)}/{arity}."

    # -------------------------------------------------------------- text and solving

    def show_text(self, show: Optional[tuple[Optional[int], Optional[int]]]) -> str:
        """`#show` of the query predicate, restricted to times in `show` = (lo, hi)."""
        q = self.query
        if show is None or q.time is None:
            return self.show
        n = len(q.args)
        vs = [f"V{i}" for i in range(n)] + ["VT"]
        atom = f"{pred_name(q.pred, False)}({','.join(vs)})"
        cond = [atom] + ([f"VT >= {show[0]}"] if show[0] is not None else []) + \
            ([f"VT <= {show[1]}"] if show[1] is not None else [])
        return f"#show.\n#show {atom} : {', '.join(cond)}."

    def text(self, facts_text: Iterable[str], time_lo: int, time_hi: int,
             domain: Iterable[str] = (), show=None) -> str:
        """The complete clingo program."""
        out = list(self.rules_text)
        if self.needs_dom:
            consts = sorted(set(self.constants) | set(domain) | set(self.fresh))
            out += [f"dom({quote(c)})." for c in consts] + self.dom_rules
        if self.needs_time and time_hi >= time_lo:
            out.append(f"time({time_lo}..{time_hi}).")
        out.append(self.show_text(show))
        out.extend(facts_text)
        return "\n".join(out) + "\n"

    def _match(self, sym: clingo.Symbol) -> Optional[tuple[AnswerKey, Optional[int]]]:
        q = self.query
        args = sym.arguments
        t = None
        if q.time is not None:
            t = args[-1].number
            args = args[:-1]
        b: dict[str, object] = {}
        for term, s in zip(q.args, args):
            v = s.string
            if v in self.fresh:
                return None  # an answer about an unseen constant: not listed
            if isinstance(term, Const):
                if term.value != v:
                    return None
            elif b.setdefault(term.name, v) != v:
                return None
        if q.time is not None:
            if q.time.var is None:
                if q.time.offset != t:
                    return None
            else:
                b[q.time.var] = t - q.time.offset
        return tuple(sorted(b.items())), t

    def solve(self, facts_text: list[str], time_lo: int = 0, time_hi: int = -1,
              domain: Iterable[str] = (), show=None) -> Stats:
        """Ground and solve; the query answers (key -> time) of the unique stable model
        (only those with time in `show` = (lo, hi) if given: converting every symbol to
        Python would dominate the baselines' time)."""
        t0 = clock.perf_counter()
        text = self.text(facts_text, time_lo, time_hi, domain, show)
        ctl = clingo.Control(["--warn=none"])
        ctl.add("base", [], text)
        ctl.ground([("base", [])])
        found: dict = {}
        models = 0
        with ctl.solve(yield_=True) as handle:
            for m in handle:
                models += 1
                for sym in m.symbols(shown=True):
                    got = self._match(sym)
                    if got is not None:
                        found[got[0]] = got[1]
        if models != 1:
            raise RuntimeError(f"expected one stable model (stratified program), got {models}")
        return Stats(found, clock.perf_counter() - t0, len(facts_text), len(text))

    def closed_world(self, facts: Iterable[Fact], horizon: Optional[int],
                     domain: Iterable[str] = ()) -> Stats:
        """Answers of Π ∪ facts (closed world) with time <= horizon, exactly (see doc)."""
        facts = list(facts)
        return self.closed_world_text([fact_text(f) for f in facts], horizon, domain)

    def closed_world_text(self, facts_text: list[str], horizon: Optional[int],
                          domain: Iterable[str] = ()) -> Stats:
        if horizon is None:
            if not self.positive:
                raise ValueError("with negation a horizon is needed")
            return self.solve(facts_text, 0, -1, domain)
        st = self.solve(facts_text, 0, horizon + self.margin, domain)
        st.answers = {k: t for k, t in st.answers.items() if t is None or t <= horizon}
        return st


def keys(answers: Mapping) -> frozenset:
    return frozenset(answers)


# ------------------------------------------------------------------------------ baselines


def max_delay(cp: CompiledProgram) -> int:
    return max([cp.delays.max(p) for p in cp.analysis.edb] or [0])


class Recompute:
    """Baseline (a): every tick, ground and solve over D_τ from scratch."""

    def __init__(self, cl: ClingoProgram, maxd: int, domain: Iterable[str] = ()):
        self.cl = cl
        self.maxd = maxd
        self.domain = tuple(domain)
        self.facts: list[str] = []
        self.reported: set = set()
        self.done = -1  # with negation: answers with time <= done are reported
        if not cl.positive and cl.need is None:
            raise ValueError("recompute baseline with negation needs a bounded look-ahead")

    def step(self, facts: Iterable[Fact], tau: int) -> tuple[frozenset, Stats]:
        """(answers newly reported as final at τ, clingo statistics).

        The whole model over D_τ is computed; only the answers that can be new are
        converted to Python: a fact arriving at τ has time >= τ - max δ, so it changes no
        answer with time < τ - max δ - need(Q)."""
        self.facts.extend(fact_text(f) for f in facts)
        cl = self.cl
        if cl.positive:
            lo = None if cl.need is None else tau - self.maxd - cl.need
            st = cl.solve(self.facts, 0, -1, self.domain, show=(lo, None))
        else:
            stable = tau - self.maxd - cl.need
            st = cl.solve(self.facts, 0, tau + cl.margin, self.domain,
                          show=(self.done + 1, stable))
            self.done = max(self.done, stable)
        new = frozenset(k for k in st.answers if k not in self.reported)
        self.reported |= new
        return new, st


class Watermark:
    """Baseline (b): each tick evaluate the facts with time <= τ - max δ; report answers
    with time <= τ - max δ - need(Q) (the new ones only)."""

    def __init__(self, cl: ClingoProgram, maxd: int, domain: Iterable[str] = (),
                 window: bool = True):
        self.cl = cl
        self.maxd = maxd
        self.domain = tuple(domain)
        self.by_time: dict[int, list[str]] = defaultdict(list)
        self.reported: set = set()
        bounded = cl.need is not None and cl.back is not None
        self.window = window and bounded
        if not cl.positive and cl.need is None:
            raise ValueError("watermark baseline with negation needs a bounded look-ahead")

    def step(self, facts: Iterable[Fact], tau: int) -> tuple[frozenset, Optional[Stats]]:
        """(answers released at τ, clingo statistics or None if nothing was evaluated)."""
        for f in facts:
            self.by_time[f.time].append(fact_text(f))
        w = tau - self.maxd
        if w < 0:
            return frozenset(), None
        need = self.cl.need
        cut = None if need is None else w - need  # report answers with time <= cut
        if cut is not None and cut < 0:
            return frozenset(), None
        lo = max(0, cut - self.cl.back) if self.window else 0
        released = [s for t in range(lo, w + 1) for s in self.by_time.get(t, ())]
        st = self.cl.solve(released, lo, w, self.domain,
                           show=None if cut is None else (None, cut))
        out = set()
        for k, t in st.answers.items():
            if k in self.reported:
                continue
            if cut is not None and t is not None:
                if t > cut or (self.window and lo > 0 and t < lo + self.cl.back):
                    continue  # not final yet / not exact in this window
            out.add(k)
        self.reported |= out
        return frozenset(out), st


# ------------------------------------------------------------------------------ ours


class Ours:
    """The online engine, with its main-query answers grounded over a domain."""

    def __init__(self, cp: CompiledProgram, domain: Optional[Iterable[str]] = None,
                 forget: bool = True):
        from reasoning.row.engine import Engine
        from reasoning.semantics.explain import Explainer

        self.eng = Engine(cp, forget=forget)
        self.ex = Explainer(self.eng)
        self.domain = tuple(cp.domain if domain is None else domain)

    def ground(self, a) -> list[AnswerKey]:
        """The ground answers of a schematic one: its unbound *query* variables over the
        domain, minus its nogoods.  Other unbound variables are existential: over the open
        domain some unseen constant always avoids the (finitely many) nogoods that mention
        them, so those nogoods exclude nothing.  (`Explainer.groundings`, used by `hypo run
        --ground`, expands them too and so drops such answers: see the report of issue 6.)"""
        tp = self.eng.templates[a.tid]
        qfree = sorted({x for _, isvar, x, _ in tp.qvars
                        if isvar and a.b[x] is None and x not in tp.time_vars})
        out = []
        for values in itertools.product(self.domain, repeat=len(qfree)):
            g = dict(zip(qfree, values))
            if any(all(v in g and g[v] == c for v, c in n) for n in a.ng):
                continue
            b = tuple(g.get(i, v) for i, v in enumerate(a.b))
            sub = tp.answer(b)
            if len(sub) != len(set(tp.query.atom.variables())):
                raise ValueError(f"answer with an unbound variable: {sub}")
            out.append(tuple(sorted(sub.items())))
        return out

    def step(self, facts: list[Fact], tau: int) -> tuple[set, set, float]:
        """(hypothetical answers with evidence, definite answers, wall seconds of `step`);
        its CPU seconds are in `last_cpu`."""
        t0, c0 = clock.perf_counter(), clock.process_time()
        rep = self.eng.step(facts, tau)
        dt = clock.perf_counter() - t0
        self.last_cpu = clock.process_time() - c0
        hyp: set = set()
        dfn: set = set()
        for a in rep.snapshot:
            if self.eng.templates[a.tid].qid != self.eng.main_qid:
                continue
            if self.eng.is_definite(a):
                dfn.update(self.ground(a))
            elif a.ev:
                hyp.update(self.ground(a))
        return hyp, dfn, dt
