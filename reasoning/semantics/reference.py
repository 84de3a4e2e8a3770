"""Reference evaluator for Temporal Datalog with stratified negation: a TEST ORACLE.

This module deliberately shares no code with the online engine (it only reads the IR of
`reasoning.language.syntax`).  It favours clarity over speed and computes, over a finite window of
time 0..horizon, the unique stratified model of a T-stratified program (002_…txt, "Temporal
Datalog with negation"):

* Object variables range over the *active domain*: the `domain` argument, the `#domain`
  directive, and every object constant of the program (rules, facts, query) and of the facts.
* Time variables range over the natural numbers.  A rule instance in which some time term
  evaluates to a negative number is discarded (the semantics only has natural timestamps).
* Truncation at `horizon`: atoms whose timestamp exceeds `horizon` are FALSE.  Precisely, the
  result is the stratified model of the ground program whose instances have head time
  <= horizon (input facts beyond the horizon are dropped), restricted to 0..horizon.  It is
  enumerated finitely: a time variable of a rule ranges over 0..horizon + m + 1, where m is
  the largest negative offset -k of the rule's time terms (T-k); larger values only produce
  heads beyond the horizon or body atoms beyond it, all alike.
  For programs whose bodies never look past their head's time the result coincides with the
  infinite model on 0..horizon; otherwise atoms near the horizon may differ (e.g. with
  `OK(X, T-1) :- not Shdn(X, T)`, `OK(x, horizon)` holds because `Shdn(x, horizon+1)` is
  false here).  Callers must choose a horizon comfortably larger than the timestamps they
  compare.  For positive programs the result is always a subset of the infinite model.
* Stratification is computed on the ground level: nodes are `(pred, t)` for t in 0..horizon
  (one node `(pred, None)` per rigid predicate) and every time-instance of every rule adds
  edges body-node -> head-node.  A strongly connected component containing a negative edge
  makes the program not stratified (`NotStratified`).  Otherwise components are evaluated in
  dependency order, each by a naive fixpoint; negative literals only ever look at nodes of
  lower, already final components.
"""
from __future__ import annotations

import itertools
from typing import Iterable, Iterator, Optional

from reasoning.language.syntax import Atom, Const, Program, Rule, Time, Var

# A node of the ground dependency graph: (predicate, timestamp), timestamp None if rigid.
Node = tuple[str, Optional[int]]
# A "time instance" of a rule: every time term replaced by its integer value.
# head: (pred, args, t); body: tuple of (pred, args, t, positive).
TimeLit = tuple[str, tuple, Optional[int], bool]


class NotStratified(Exception):
    """The program has a cycle through negation at the ground (pred, t) level."""


# --------------------------------------------------------------------------------------
# Active domain
# --------------------------------------------------------------------------------------


def _atom_consts(atom: Atom) -> set[str]:
    return {t.value for t in atom.args if isinstance(t, Const)}


def active_domain(program: Program, facts: Iterable[Atom] = (), domain: Iterable[str] = ()) -> frozenset[str]:
    """The active domain: `domain` ∪ #domain ∪ constants of the program and of the facts."""
    out: set[str] = set(domain) | set(program.domain)
    for rule in tuple(program.rules) + tuple(program.facts):
        out |= _atom_consts(rule.head)
        for lit in rule.body:
            out |= _atom_consts(lit.atom)
    if program.query is not None:
        out |= _atom_consts(program.query)
    for a in facts:
        out |= _atom_consts(a)
    return frozenset(out)


# --------------------------------------------------------------------------------------
# Time instantiation of rules
# --------------------------------------------------------------------------------------


def _time_vars(rule: Rule) -> list[str]:
    names: set[str] = set()
    for atom in [rule.head] + [lit.atom for lit in rule.body]:
        if atom.time is not None and atom.time.var is not None:
            names.add(atom.time.var)
    return sorted(names)


def _eval_time(time: Optional[Time], env: dict[str, int]) -> Optional[int]:
    if time is None:
        return None
    if time.var is None:
        return time.offset
    return env[time.var] + time.offset


def _time_instances(rule: Rule, horizon: int) -> Iterator[tuple[tuple, tuple[TimeLit, ...]]]:
    """All instances of `rule`'s time variables that survive the window 0..horizon.

    Every time variable ranges over -n..horizon + m + 1 (m: largest `k` of a term `T-k`, n:
    largest `k` of a term `T+k` of the rule); any larger value only yields time terms beyond
    the horizon, like the last value.

    Instances with a negative time term are discarded; instances whose head lies beyond the
    horizon, or with a positive body atom beyond the horizon (false), are dropped; negative
    body atoms beyond the horizon are true and are removed from the instance.
    """
    tvars = _time_vars(rule)
    atoms = [rule.head] + [lit.atom for lit in rule.body]
    lookback = max([0] + [-a.time.offset for a in atoms if a.time is not None and a.time.var is not None])
    top = horizon + lookback + 1
    # A variable itself may be negative as long as every time term is a natural number
    # (`P(X, T+1) :- E(X, T+1)` derives P(a, 0) from E(a, 0)): semantics invariant under
    # shifting a time variable, as pre-processing assumes (000 Lemma 5).
    lookahead = max([0] + [a.time.offset for a in atoms if a.time is not None and a.time.var is not None])
    for values in itertools.product(range(-lookahead, top + 1), repeat=len(tvars)):
        env = dict(zip(tvars, values))
        head_t = _eval_time(rule.head.time, env)
        body_ts = [_eval_time(lit.atom.time, env) for lit in rule.body]
        if any(t is not None and t < 0 for t in [head_t] + body_ts):
            continue
        if head_t is not None and head_t > horizon:
            continue
        body: list[TimeLit] = []
        fires = True
        for lit, t in zip(rule.body, body_ts):
            if t is not None and t > horizon:
                if lit.positive:
                    fires = False
                    break
                continue  # `not A` with A beyond the horizon: A is false, literal true
            body.append((lit.atom.pred, lit.atom.args, t, lit.positive))
        if fires:
            yield (rule.head.pred, rule.head.args, head_t), tuple(body)


# --------------------------------------------------------------------------------------
# Strongly connected components (iterative Kosaraju: SCCs come out in topological order)
# --------------------------------------------------------------------------------------


def _sccs(nodes: list[Node], succ: dict[Node, set[Node]]) -> list[list[Node]]:
    """SCCs of the graph, listed so that every edge goes to the same or a later SCC."""
    # Pass 1: iterative DFS on the graph, recording nodes in order of finishing.
    visited: set[Node] = set()
    finished: list[Node] = []
    for root in nodes:
        if root in visited:
            continue
        visited.add(root)
        stack = [(root, iter(sorted(succ.get(root, ()), key=repr)))]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                finished.append(node)
            elif nxt not in visited:
                visited.add(nxt)
                stack.append((nxt, iter(sorted(succ.get(nxt, ()), key=repr))))
    # Pass 2: DFS on the reversed graph in decreasing finishing time.
    pred: dict[Node, set[Node]] = {n: set() for n in nodes}
    for a, bs in succ.items():
        for b in bs:
            pred[b].add(a)
    assigned: set[Node] = set()
    out: list[list[Node]] = []
    for root in reversed(finished):
        if root in assigned:
            continue
        comp: list[Node] = []
        assigned.add(root)
        todo = [root]
        while todo:
            n = todo.pop()
            comp.append(n)
            for m in pred[n]:
                if m not in assigned:
                    assigned.add(m)
                    todo.append(m)
        out.append(comp)
    return out


# --------------------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------------------


def _match(args: tuple, values: tuple[str, ...], binding: dict[str, str]) -> Optional[dict[str, str]]:
    """Extend `binding` so that `args` (Vars/Consts) equal `values`, or None."""
    if len(args) != len(values):
        return None
    out = dict(binding)
    for term, value in zip(args, values):
        if isinstance(term, Const):
            if term.value != value:
                return None
        elif term.name in out:
            if out[term.name] != value:
                return None
        else:
            out[term.name] = value
    return out


def _ground(args: tuple, binding: dict[str, str]) -> tuple[str, ...]:
    return tuple(t.value if isinstance(t, Const) else binding[t.name] for t in args)


def _obj_vars(args: tuple) -> list[str]:
    return [t.name for t in args if isinstance(t, Var)]


def _fire(head, body: tuple[TimeLit, ...], model: dict[Node, set], dom: list[str]) -> set[tuple[Node, tuple]]:
    """All ground head facts produced by one time instance of a rule against `model`."""
    positives = [lit for lit in body if lit[3]]
    negatives = [lit for lit in body if not lit[3]]
    # 1. bind variables left to right through the positive literals
    bindings: list[dict[str, str]] = [{}]
    for pred, args, t, _ in positives:
        stored = model.get((pred, t), set())
        new: list[dict[str, str]] = []
        for b in bindings:
            for values in stored:
                m = _match(args, values, b)
                if m is not None:
                    new.append(m)
        bindings = new
        if not bindings:
            return set()
    # 2. enumerate variables still unbound (only in negative literals / the head) over dom
    h_pred, h_args, h_t = head
    out: set[tuple[Node, tuple]] = set()
    for b in bindings:
        free = sorted(
            {v for _, args, _, _ in negatives for v in _obj_vars(args)}.union(_obj_vars(h_args)) - b.keys()
        )
        for values in itertools.product(dom, repeat=len(free)):
            full = {**b, **dict(zip(free, values))}
            # 3. check negative literals against the (final) lower strata
            if any(_ground(args, full) in model.get((pred, t), set()) for pred, args, t, _ in negatives):
                continue
            out.add(((h_pred, h_t), _ground(h_args, full)))
    return out


# --------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------


def _check_fact(a: Atom) -> None:
    if not a.is_ground:
        raise ValueError(f"fact is not ground: {a}")


def _program_facts(program: Program, horizon: int) -> tuple[Rule, ...]:
    """The facts of the program, a periodic one (time b + a·n up to `until`, 003 §2) listed
    once per time in 0..horizon."""
    out: list[Rule] = []
    for i, rule in enumerate(program.facts):
        lrp = program.fact_times.get(i)
        if lrp is None:
            out.append(rule)
            continue
        top = horizon if lrp.until is None else min(horizon, lrp.until)
        t = lrp.offset
        while t <= top:
            out.append(Rule(Atom(rule.head.pred, rule.head.args, Time(None, t))))
            if lrp.period == 0:
                break
            t += lrp.period
    return tuple(out)


def evaluate(program: Program, facts: Iterable[Atom], horizon: int, domain: Iterable[str] = ()) -> frozenset[Atom]:
    """The stratified model (002_…txt, Temporal Datalog with negation) restricted to times 0..horizon."""
    if horizon < 0:
        raise ValueError("horizon must be >= 0")
    facts = list(facts)
    for a in facts:
        _check_fact(a)
    dom = sorted(active_domain(program, facts, domain))

    # Model: node -> set of argument tuples (strings).
    model: dict[Node, set] = {}
    for a in facts:
        t = None if a.time is None else a.time.offset
        if t is not None and not (0 <= t <= horizon):
            continue
        model.setdefault((a.pred, t), set()).add(tuple(c.value for c in a.args))

    # Time instances of all rules (program facts are rules with an empty body).
    instances: list[tuple[tuple, tuple[TimeLit, ...]]] = []
    for rule in tuple(program.rules) + _program_facts(program, horizon):
        instances.extend(_time_instances(rule, horizon))

    # Ground dependency graph with signed edges.
    nodes: set[Node] = set(model)
    succ: dict[Node, set[Node]] = {}
    negative_edges: set[tuple[Node, Node]] = set()
    by_head: dict[Node, list] = {}
    for head, body in instances:
        h = (head[0], head[2])
        nodes.add(h)
        by_head.setdefault(h, []).append((head, body))
        for pred, _, t, positive in body:
            b = (pred, t)
            nodes.add(b)
            succ.setdefault(b, set()).add(h)
            if not positive:
                negative_edges.add((b, h))

    components = _sccs(sorted(nodes, key=repr), succ)
    comp_of = {n: i for i, comp in enumerate(components) for n in comp}
    for b, h in sorted(negative_edges, key=repr):
        if comp_of[b] == comp_of[h]:
            preds = sorted({p for p, _ in components[comp_of[b]]})
            raise NotStratified(
                f"program is not stratified: {_show(h)} depends negatively on {_show(b)} "
                f"within a cycle through predicates {', '.join(preds)}"
            )

    # Evaluate components bottom-up, each by a naive fixpoint.
    for comp in components:
        rules = [inst for n in comp for inst in by_head.get(n, [])]
        changed = True
        while changed:
            changed = False
            derived: set = set()
            for head, body in rules:
                derived |= _fire(head, body, model, dom)
            for node, values in derived:
                bucket = model.setdefault(node, set())
                if values not in bucket:
                    bucket.add(values)
                    changed = True

    return frozenset(
        Atom(pred, tuple(Const(v) for v in values), None if t is None else Time(None, t))
        for (pred, t), tuples in model.items()
        for values in tuples
    )


def _show(node: Node) -> str:
    pred, t = node
    return pred if t is None else f"{pred}@{t}"


def answers(
    program: Program,
    query: Optional[Atom],
    facts: Iterable[Atom],
    horizon: int,
    domain: Iterable[str] = (),
) -> frozenset[tuple[tuple[str, object], ...]]:
    """A(Q, D, τ) (002_…txt): substitutions of the query's variables whose query atom is in the model."""
    if query is None:
        query = program.query
    if query is None:
        raise ValueError("no query given and the program has none")
    model = evaluate(program, facts, horizon, domain)
    out: set[tuple[tuple[str, object], ...]] = set()
    for a in model:
        if a.pred != query.pred or (a.time is None) != (query.time is None):
            continue
        binding: Optional[dict[str, object]] = _match(query.args, tuple(c.value for c in a.args), {})
        if binding is None:
            continue
        if query.time is not None:
            t = a.time.offset
            if query.time.var is None:
                if query.time.offset != t:
                    continue
            else:
                value = t - query.time.offset
                if value < 0:
                    continue
                if query.time.var in binding and binding[query.time.var] != value:
                    continue
                binding[query.time.var] = value
        out.add(tuple(sorted(binding.items())))
    return frozenset(out)


def history(stream: Iterable[tuple[int, Atom]], tau: int) -> list[Atom]:
    """D_τ (002_…txt §3): the facts of the stream whose arrival tick is <= τ, in stream order."""
    return [atom for tick, atom in stream if tick <= tau]
