"""Program analysis: EDB/IDB, dependency graph with time offsets, Ronca et al. properties,
T-stratification (000_…txt Def. 6 / Prop. 14; 002_…txt Def. 1) and the delay function δ (002 §3)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional

from reasoning.language.errors import ProgramError
from reasoning.language.syntax import Atom, Const, DelayDecl, Program, Rule
from reasoning.language.wellformed import periodic_predicates


@dataclass(frozen=True)
class Edge:
    """Dependency `head -> body` of one rule; `offset` = body time - head time (None: unrelated)."""

    head: str
    body: str
    offset: Optional[int]
    negative: bool
    rule_index: int


@dataclass(frozen=True)
class Stratification:
    """Finite representation of the strata of Π↓ (000 Prop. 14).

    The instantiated predicate p_t gets the order key `(level[p], slope[p] * t + phi[p])`;
    every p_t depends only on q_t' with a smaller-or-equal key, strictly smaller through a
    negation.  `level` numbers the SCCs of the predicate graph bottom-up; inside an SCC that
    contains a negation (time-stratified, e.g. `P(X,T+1) :- not P(X,T)`) `slope` > 0 orders
    instances by time.
    """

    level: Mapping[str, int]
    slope: Mapping[str, int]
    phi: Mapping[str, int]
    sccs: tuple[tuple[str, ...], ...]  # bottom-up

    def key(self, pred: str, t: int) -> tuple[int, int]:
        """Topological order key of the instantiated predicate p_t (Algorithm 1, step 3)."""
        return (self.level.get(pred, 0), self.slope.get(pred, 0) * t + self.phi.get(pred, 0))

    def describe(self) -> list[str]:
        """Human-readable strata, lowest first."""
        out = []
        for scc in self.sccs:
            preds = sorted(scc)
            lvl = self.level[preds[0]]
            if self.slope.get(preds[0], 0):
                order = ", ".join(
                    f"{p}_t@{self.slope[p]}t{self.phi[p]:+d}" for p in preds
                )
                out.append(f"stratum {lvl}: {{{', '.join(preds)}}} ordered by time ({order})")
            else:
                out.append(f"stratum {lvl}: {{{', '.join(preds)}}}")
        return out


@dataclass(frozen=True)
class Analysis:
    """Everything `hypo check` reports about a program besides pre-processing."""

    idb: frozenset[str]
    edb: Mapping[str, int]
    rigid: Mapping[str, int]
    arities: Mapping[str, int]
    edges: tuple[Edge, ...]
    nonrecursive: bool
    connected: bool
    multi_temporal_rules: tuple[int, ...]
    positive_cycles: tuple[tuple[str, ...], ...]
    stratification: Stratification
    periodic: Mapping[str, int] = field(default_factory=dict)  # periodic background preds


def dependency_edges(prog: Program, idb: Iterable[str]) -> list[Edge]:
    """Predicate dependency graph with time offsets on its edges."""
    idb = set(idb)
    edges = []
    for i, r in enumerate(prog.rules):
        if not r.body:
            continue
        for lit in r.body:
            a = lit.atom
            off: Optional[int] = None
            if r.head.time is not None and a.time is not None:
                if r.head.time.var == a.time.var:
                    off = a.time.offset - r.head.time.offset
            elif r.head.time is None and a.time is None:
                off = 0
            edges.append(Edge(r.head.pred, a.pred, off, not lit.positive, i))
    return edges


def _sccs(nodes: list[str], succ: Mapping[str, list[str]]) -> list[list[str]]:
    """Tarjan's SCCs (iterative), returned in reverse topological order (sinks first)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(succ.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(succ.get(w, ()))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def _not_stratified(prog: Program, edge: Edge, why: str) -> ProgramError:
    from reasoning.language.metric import readable

    rule = prog.rules[edge.rule_index]
    why = readable(why)
    return ProgramError(
        f"program is not T-stratified: {why} (rule `{prog.written(edge.rule_index)}`); Π↓ admits no stratification "
        f"(002 Def. 1)",
        rule.span,
        prog.source,
    )


def t_stratify(prog: Program, preds: Iterable[str], edges: list[Edge]) -> Stratification:
    """Decide T-stratification and return the strata's finite representation (000 Prop. 14)."""
    nodes = sorted(set(preds))
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    for e in edges:
        succ.setdefault(e.head, []).append(e.body)
        succ.setdefault(e.body, [])
    comps = _sccs(sorted(succ), succ)
    comp_of = {p: i for i, c in enumerate(comps) for p in c}
    level: dict[str, int] = {}
    slope: dict[str, int] = {}
    phi: dict[str, int] = {}
    by_comp: dict[int, list[Edge]] = {}
    for e in edges:  # each edge once, under its head's component (linear in the program)
        by_comp.setdefault(comp_of[e.head], []).append(e)
    for ci, comp in enumerate(comps):  # sinks first: dependencies already have levels
        inner = [e for e in by_comp.get(ci, ()) if comp_of[e.body] == ci]
        outer = [e for e in by_comp.get(ci, ()) if comp_of[e.body] != ci]
        lvl = max((level[e.body] + 1 for e in outer), default=0)
        for p in comp:
            level[p] = lvl
        negs = [e for e in inner if e.negative]
        if not negs:
            for p in comp:
                slope[p], phi[p] = 0, 0
            continue
        for e in inner:
            if e.offset is None:
                bad = negs[0] if e.negative else e
                raise _not_stratified(
                    prog, bad,
                    f"{e.head} depends on {e.body} at an unrelated time inside a cycle "
                    f"through negation",
                )
        # longest-path potentials with weight c = D*offset + [negative]; a positive-weight
        # cycle means some p_t depends (through negation) on itself or on an infinite
        # ascending chain of instances.
        d = len(comp) + 1
        pot = {p: 0 for p in comp}
        for _ in range(len(comp) + 1):
            changed = False
            for e in inner:
                c = d * e.offset + (1 if e.negative else 0)
                if pot[e.body] + c > pot[e.head]:
                    pot[e.head] = pot[e.body] + c
                    changed = True
            if not changed:
                break
        else:
            bad = negs[0]
            raise _not_stratified(
                prog, bad,
                f"{bad.head}_t depends negatively on {bad.body} at the same or a later time "
                f"through the cycle {' -> '.join(sorted(comp))}",
            )
        for p in comp:
            slope[p], phi[p] = d, pot[p]
    ordered = tuple(tuple(sorted(c)) for c in comps)
    ordered = tuple(sorted(ordered, key=lambda c: (level[c[0]], c)))
    return Stratification(level, slope, phi, ordered)


def positive_idb_cycles(idb: set[str], edges: list[Edge]) -> list[tuple[str, ...]]:
    """Cycles through positive IDB dependencies (pre-processing would not terminate)."""
    succ: dict[str, list[str]] = {p: [] for p in idb}
    for e in edges:
        if not e.negative and e.body in idb:
            succ[e.head].append(e.body)
    out = []
    for comp in _sccs(sorted(succ), succ):
        if len(comp) > 1 or comp[0] in succ[comp[0]]:
            out.append(tuple(sorted(comp)))
    return out


def is_connected_rule(r: Rule) -> bool:
    """Ronca et al.: at most one temporal variable, in the head whenever in the body."""
    tvars = {l.atom.time.var for l in r.body if l.atom.time is not None and l.atom.time.var}
    hv = r.head.time.var if r.head.time is not None else None
    if hv:
        tvars_all = tvars | {hv}
    else:
        tvars_all = tvars
    if len(tvars_all) > 1:
        return False
    return not tvars or hv in tvars


def analyse(prog: Program, idb: Iterable[str], edb: Mapping[str, int],
            arities: Mapping[str, int]) -> Analysis:
    """Classify predicates, build the dependency graph and T-stratify (issue: analysis)."""
    idb = frozenset(idb)
    edges = dependency_edges(prog, idb)
    preds = set(arities) | set(prog.rigid)
    strat = t_stratify(prog, preds, edges)
    idb_edges = [e for e in edges if e.body in idb]
    succ: dict[str, list[str]] = {p: [] for p in idb}
    for e in idb_edges:
        succ[e.head].append(e.body)
    recursive = any(len(c) > 1 or c[0] in succ[c[0]] for c in _sccs(sorted(succ), succ))
    multi = tuple(
        i for i, r in enumerate(prog.rules)
        if len({v for v in _time_vars(r)}) > 1
    )
    return Analysis(
        idb=idb,
        edb=dict(edb),
        rigid=dict(prog.rigid),
        periodic=periodic_predicates(prog),
        arities=dict(arities),
        edges=tuple(edges),
        nonrecursive=not recursive,
        connected=all(is_connected_rule(r) for r in prog.rules if r.body),
        multi_temporal_rules=multi,
        positive_cycles=tuple(positive_idb_cycles(set(idb), edges)),
        stratification=strat,
    )


def _time_vars(r: Rule) -> set[str]:
    out = set()
    for a in [r.head] + [l.atom for l in r.body]:
        if a.time is not None and a.time.var is not None:
            out.add(a.time.var)
    return out


SEARCH_CAP = 10 ** 18  # sizes of the SLD search saturate here ("at least 10^18")


@dataclass(frozen=True)
class SearchSize:
    """Static upper bounds of pre-processing's SLD search (002 §2, Example 4), unification
    ignored: per IDB predicate and per rule, `ways` = successful derivations (the templates
    before minimality) and `steps` = resolution steps to enumerate them; saturated at
    SEARCH_CAP, which recursive predicates get outright (000 Example 7)."""

    ways: Mapping[str, int]
    steps: Mapping[str, int]
    rule_ways: Mapping[int, int]
    rule_steps: Mapping[int, int]


@dataclass(frozen=True)
class Blowup:
    """Where a search size crosses a limit: the rule to blame and the size it stands for.
    `alternatives`: no single rule crosses it, the rules of `pred` together do (the span
    is the rule at which their running total crosses it)."""

    rule_index: int
    pred: str
    size: int
    alternatives: bool
    n_rules: int


def _sat(n: int) -> int:
    """A search size, saturated at SEARCH_CAP (products of sizes stay small integers)."""
    return min(n, SEARCH_CAP)


def search_size(prog: Program, idb: Iterable[str]) -> SearchSize:
    """Count derivations and resolution steps bottom-up over the positive IDB dependencies
    (linear in the program; the search of pre-processing is exponential in the worst case)."""
    idb = set(idb)
    by_pred = _rules_by_head(prog)
    n_facts: dict[str, int] = {}
    for f in prog.facts:
        n_facts[f.head.pred] = n_facts.get(f.head.pred, 0) + 1
    succ = {p: sorted({l.atom.pred for i in by_pred.get(p, ()) for l in prog.rules[i].body
                       if l.positive and l.atom.pred in idb}) for p in idb}
    ways: dict[str, int] = {}
    steps: dict[str, int] = {}
    rule_ways: dict[int, int] = {}
    rule_steps: dict[int, int] = {}
    for comp in _sccs(sorted(succ), succ):  # sinks first
        if len(comp) > 1 or comp[0] in succ[comp[0]]:  # positive recursion: unbounded
            for p in comp:
                ways[p] = steps[p] = SEARCH_CAP
                for i in by_pred.get(p, ()):
                    rule_ways[i] = rule_steps[i] = SEARCH_CAP
            continue
        p = comp[0]
        for i in by_pred.get(p, ()):
            rule_ways[i], rule_steps[i] = _rule_size(prog.rules[i], ways, steps, n_facts, prog)
        ways[p] = _sat(sum(rule_ways[i] for i in by_pred.get(p, ())))
        steps[p] = _sat(sum(rule_steps[i] for i in by_pred.get(p, ())))
    return SearchSize(ways, steps, rule_ways, rule_steps)


def _rules_by_head(prog: Program) -> dict[str, list[int]]:
    """Indices of the rules with a body, by head predicate."""
    out: dict[str, list[int]] = {}
    for i, r in enumerate(prog.rules):
        if r.body:
            out.setdefault(r.head.pred, []).append(i)
    return out


def _rule_size(r: Rule, ways: Mapping[str, int], steps: Mapping[str, int],
               n_facts: Mapping[str, int], prog: Program) -> tuple[int, int]:
    """(derivations, steps) of resolving an atom with `r`: the body's conjunction costs
    steps(L1) + ways(L1) · steps(L2 … Ln) (SLD, leftmost selection)."""
    w, st = 1, 0
    for lit in reversed(r.body):
        q = lit.atom.pred
        if not lit.positive:
            continue
        if q in ways:
            w, st = _sat(w * ways[q]), _sat(steps[q] + ways[q] * st)
        elif q in prog.rigid:
            k = n_facts.get(q, 0)
            w, st = _sat(w * k), _sat(1 + k * st)
    return w, _sat(1 + st)


def blowup(prog: Program, size: SearchSize, pred: str, limit: int, kind: str = "ways") -> Blowup:
    """The rule that makes the search from `pred` exceed `limit` (`kind`: ways or steps):
    follow the largest rule down while one of its body predicates alone exceeds the limit."""
    per_pred, per_rule = (size.ways, size.rule_ways) if kind == "ways" else \
        (size.steps, size.rule_steps)
    by_pred = _rules_by_head(prog)
    seen: set[str] = set()
    while pred not in seen and by_pred.get(pred):
        seen.add(pred)
        rules = by_pred[pred]
        worst = max(rules, key=lambda i: per_rule.get(i, 0))
        if per_rule.get(worst, 0) <= limit:
            return _crossing(rules, per_rule, pred, limit, per_pred.get(pred, 0))
        heavy = [l.atom.pred for l in prog.rules[worst].body
                 if l.positive and per_pred.get(l.atom.pred, 0) > limit]
        if not heavy or heavy[0] in seen:
            return Blowup(worst, pred, per_rule[worst], False, len(rules))
        pred = heavy[0]
    rules = by_pred.get(pred) or [0]
    return Blowup(rules[0], pred, per_pred.get(pred, 0), True, len(rules))


def _crossing(rules: list[int], per_rule: Mapping[int, int], pred: str, limit: int,
              total: int) -> Blowup:
    """The rule of `pred` at which the running total of its rules' sizes exceeds `limit`."""
    acc = 0
    for i in rules:
        acc += per_rule.get(i, 0)
        if acc > limit:
            return Blowup(i, pred, total, True, len(rules))
    return Blowup(rules[0], pred, total, True, len(rules))


@dataclass(frozen=True)
class Delays:
    """The delay function δ of 002 §3: per predicate default and per-instance patterns."""

    default: Mapping[str, int] = field(default_factory=dict)
    patterns: Mapping[str, tuple[DelayDecl, ...]] = field(default_factory=dict)
    # fully constant patterns, indexed: (pred, args) -> δ; and the predicates that also
    # have patterns with wildcards (which need a scan)
    exact: Mapping[tuple, int] = field(default_factory=dict)
    wild: frozenset = frozenset()

    @staticmethod
    def from_decls(decls: Iterable[DelayDecl]) -> "Delays":
        """Collect `#delay` directives (later defaults override earlier ones)."""
        default: dict[str, int] = {}
        pats: dict[str, list[DelayDecl]] = {}
        for d in decls:
            if d.pattern is None:
                default[d.pred] = d.delay
            else:
                pats.setdefault(d.pred, []).append(d)
        exact: dict[tuple, int] = {}
        wild = set()
        for p, ds in pats.items():
            for d in ds:
                if d.pattern is not None and all(x is not None for x in d.pattern):
                    key = (p, tuple(d.pattern))
                    exact[key] = max(exact.get(key, d.delay), d.delay)
                else:
                    wild.add(p)
        return Delays(default, {k: tuple(v) for k, v in pats.items()}, exact, frozenset(wild))

    def ground(self, pred: str, args: tuple[str, ...]) -> int:
        """δ(p(c̄, t)) for a ground instance: max of matching patterns, else the default."""
        best = self.exact.get((pred, args))
        if pred not in self.wild:
            return self.default.get(pred, 0) if best is None else best
        for d in self.patterns.get(pred, ()):
            if d.matches(args):
                best = d.delay if best is None else max(best, d.delay)
        return self.default.get(pred, 0) if best is None else best

    def governing(self, pred: str, args: tuple[str, ...]) -> int:
        """Which `#delay` gives δ(p(c̄, t)): the index in patterns[pred] of the first of the
        largest matching instance patterns, -1 for the predicate's default (the arrival
        model's pattern keys, confidence.py)."""
        best, idx = None, -1
        if (pred, args) not in self.exact and pred not in self.wild:
            return -1
        for i, d in enumerate(self.patterns.get(pred, ())):
            if d.matches(args) and (best is None or d.delay > best):
                best, idx = d.delay, i
        return idx

    def atom(self, pred: str, args: tuple[Optional[str], ...]) -> int:
        """δ of a possibly non-ground atom (None = variable): max over its instances."""
        if all(a is not None for a in args):
            return self.ground(pred, args)  # type: ignore[arg-type]
        best = self.default.get(pred, 0)
        for d in self.patterns.get(pred, ()):
            if d.pattern is None or all(
                p is None or a is None or p == a for p, a in zip(d.pattern, args)
            ):
                best = max(best, d.delay)
        return best

    def max(self, pred: str) -> int:
        """δ(p) = δ(p(X1..Xn)) (002 §3)."""
        return max([self.default.get(pred, 0)] + [d.delay for d in self.patterns.get(pred, ())])

    def describe(self, pred: str) -> str:
        parts = [f"default {self.default.get(pred, 0)}"]
        for d in self.patterns.get(pred, ()):
            pat = ", ".join("_" if p is None else p for p in (d.pattern or ()))
            parts.append(f"{pred}({pat}, T) = {d.delay}")
        return "; ".join(parts)


def atom_delay_args(a: Atom) -> tuple[Optional[str], ...]:
    """Object arguments as constants or None (variables), for δ look-ups."""
    return tuple(t.value if isinstance(t, Const) else None for t in a.args)
