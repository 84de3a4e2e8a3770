"""Pre-processing into P_Q (002_…txt §2 "Computing hypothetical answers", Example 4; 000 §4-5).

SLD-resolution with future premises from ¬P until goals hold only EDB atoms and negated
atoms; one template ⟨θ, H⟩ per successful derivation, minimal hypothesis sets only
(000 Example 6); a fresh auxiliary query per negated predicate, iterated to a fixpoint.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterator, Mapping, Optional, Union

from reasoning.language.analysis import SEARCH_CAP, blowup, search_size
from reasoning.language.errors import ProgramError
from reasoning.language.metric import lifted_window
from reasoning.language.periodic import TimeDomain
from reasoning.language.syntax import (Atom, Const, Literal, Lrp, Program, Rule, Span, Time, Var,
                                      Within)

Term = Union[Var, Const, Time]
Subst = dict[str, Term]

# Budgets of the SLD search, checked while it runs (issue 11): P_Q has at most MAX_TEMPLATES
# templates; a query gets MAX_STEPS resolution steps plus STEPS_PER_LITERAL per body literal
# of the program (linear pre-processing of any program fits, exponential searches stop within
# seconds); a derivation is at most (number of IDB predicates + MAX_DEPTH) levels deep, which
# only a recursive program reaches (000 Example 7).
MAX_TEMPLATES = 4096
# the literals of all templates of one query (templates × their hypotheses): a box of 251
# ticks under a diamond of 4001 was a million, a minute of silence (issue 44.4)
MAX_TEMPLATE_LITERALS = 65536
MAX_OFFSET = 1 << 60  # |time offset| of a template's atom (stream.facts.MAX_TIME alike)
MAX_STEPS = 200_000
STEPS_PER_LITERAL = 8
MAX_DEPTH = 200


@dataclass(frozen=True)
class Template:
    """One element ⟨θ, H⟩ of P_Q, stored as the instantiated head Pθ and the literals H.

    `nogoods` are forbidden partial assignments (from negated rigid atoms), each a tuple of
    (variable, constant) pairs; `periodic` the time domains of variables constrained by
    periodic background facts (periodic.py).
    """

    head: Atom
    theta: tuple[tuple[str, str], ...]  # query variable -> rendered term (for display)
    literals: tuple[Literal, ...]
    nogoods: tuple[tuple[tuple[str, str], ...], ...] = ()
    # lower bounds var >= k from resolved (intermediate) atoms, whose times must be natural
    time_min: tuple[tuple[str, int], ...] = ()
    periodic: tuple[tuple[str, TimeDomain], ...] = ()
    # literals kept by modular evaluation (positive, of an IDB predicate): decided by the
    # answers of their auxiliary query at step 3, not unfolded (issue 45)
    derived: tuple[int, ...] = ()
    # windows as one literal (issue 45.2): (V, U, lo, hi) for lo ≤ V − U ≤ hi, or
    # (V, None, lo, hi) for lo ≤ V ≤ hi — a diamond's operand at a time variable V
    windows: tuple[tuple[str, Optional[str], int, int], ...] = ()

    def variables(self) -> tuple[str, ...]:
        out: set[str] = set(self.head.variables())
        for l in self.literals:
            out.update(l.atom.variables())
        out.update(v for v, _ in self.time_min)
        out.update(v for v, _ in self.periodic)
        out.update(x for v, u, _, _ in self.windows for x in (v, u) if x is not None)
        return tuple(sorted(out))

    def __str__(self) -> str:
        th = ", ".join(f"{v} := {t}" for v, t in self.theta)
        hs = ", ".join(str(l).replace("not ", "¬") for l in self.literals)
        ng = "".join(
            " | " + " ∧ ".join(f"{v}={c}" for v, c in n) + " excluded" for n in self.nogoods
        )
        ng += "".join(f" | {v} ≥ {k}" for v, k in self.time_min)
        ng += "".join(f" | {d.text(v)}" for v, d in self.periodic)
        ng += "".join(f" | {lo} ≤ {v}{'' if u is None else ' − ' + u} ≤ {hi}"
                      for v, u, lo, hi in self.windows)
        return f"⟨[{th}], {{{hs}}}{ng}⟩" if th else f"⟨∅, {{{hs}}}{ng}⟩"


@dataclass(frozen=True)
class Query:
    """A query ⟨P, Π⟩ of 𝐐 with its pre-processed P_Q."""

    qid: int
    atom: Atom
    main: bool
    templates: tuple[Template, ...] = ()

    @property
    def pred(self) -> str:
        return self.atom.pred

    def __str__(self) -> str:
        return str(self.atom)


# ---------------------------------------------------------------- unification (Lemma 5)

def walk_obj(t: Union[Var, Const], s: Subst) -> Union[Var, Const]:
    """Dereference an object term."""
    while isinstance(t, Var) and t.name in s:
        t = s[t.name]  # type: ignore[assignment]
    return t


def walk_time(tm: Time, s: Subst) -> Time:
    """Dereference a time term, adding offsets."""
    while tm.var is not None and tm.var in s:
        b = s[tm.var]
        assert isinstance(b, Time)
        tm = Time(b.var, b.offset + tm.offset)
    return tm


def unify_atoms(g: Atom, h: Atom, s: Subst, prefer: set[str]) -> Optional[Subst]:
    """mgu extending `s`; variable-variable pairs bind the variable in `prefer` (Lemma 5)."""
    if g.pred != h.pred or len(g.args) != len(h.args) or (g.time is None) != (h.time is None):
        return None
    s = dict(s)
    for a, b in zip(g.args, h.args):
        a, b = walk_obj(a, s), walk_obj(b, s)
        if a == b:
            continue
        if isinstance(a, Var) and isinstance(b, Var):
            if b.name in prefer:
                s[b.name] = a
            else:
                s[a.name] = b
        elif isinstance(a, Var):
            s[a.name] = b
        elif isinstance(b, Var):
            s[b.name] = a
        else:
            return None
    if g.time is not None and h.time is not None:
        x, y = walk_time(g.time, s), walk_time(h.time, s)
        if x.var is None and y.var is None:
            if x.offset != y.offset:
                return None
        elif x.var is not None and y.var is not None:
            if x.var == y.var:
                if x.offset != y.offset:
                    return None
            elif y.var in prefer:
                s[y.var] = Time(x.var, x.offset - y.offset)
            else:
                s[x.var] = Time(y.var, y.offset - x.offset)
        elif x.var is not None:
            # a variable may take a negative value; every time term must be natural, which
            # _finish checks on the instantiated literals and intermediate atoms
            s[x.var] = Time(None, y.offset - x.offset)
        else:
            s[y.var] = Time(None, x.offset - y.offset)  # type: ignore[index]
    return s


def apply_atom(a: Atom, s: Subst) -> Atom:
    """Apply a substitution to an atom."""
    args = tuple(walk_obj(t, s) for t in a.args)
    tm = walk_time(a.time, s) if a.time is not None else None
    return Atom(a.pred, args, tm)


def rename_rule(r: Rule, n: int) -> Rule:
    """α-rename a rule apart with suffix `#n`."""
    return Rule(_renamed(r.head, n), tuple(Literal(_renamed(l.atom, n), l.positive)
                                           for l in r.body), r.span)


# ---------------------------------------------------------------- templates

def _negative_time(a: Atom) -> bool:
    return a.time is not None and a.time.var is None and a.time.offset < 0


def _subsumes(a: Template, b: Template, index: Optional["_Index"] = None) -> bool:
    """∃ρ: head_a ρ = head_b and H_a ρ ⊆ H_b (one-way matching, 000 Example 6).  A template
    restricted by nogoods or time bounds covers fewer instances: it subsumes nothing.
    Literals sharing no variable unbound by the head are matched independently, each group
    by backtracking with an explicit stack (no recursion limit at any size)."""
    if a.nogoods or a.time_min or a.periodic or a.windows:
        return False
    s = _match_atom(a.head, b.head, {})
    if s is None:
        return False
    index = _Index.of(b) if index is None else index
    groups = _independent_groups(a.literals, s)
    return all(_match_all(group, index, s) for group in groups)


def _independent_groups(lits: tuple[Literal, ...], s: Subst) -> list[list[Literal]]:
    """Literals grouped by shared variables not bound in `s` (union-find), groups without
    such variables first (they are mere look-ups)."""
    parent: dict[str, str] = {}

    def find(v: str) -> str:
        while parent.setdefault(v, v) != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    free = [[v for v in l.atom.variables() if v not in s] for l in lits]
    for vs in free:
        for v in vs[1:]:
            parent[find(v)] = find(vs[0])
    lookups: list[list[Literal]] = []
    linked: dict[str, list[Literal]] = {}
    for l, vs in zip(lits, free):
        if vs:
            linked.setdefault(find(vs[0]), []).append(l)
        else:
            lookups.append([l])
    return lookups + list(linked.values())


def _match_all(lits: list[Literal], index: "_Index", s: Subst) -> bool:
    """∃ρ ⊇ s mapping every literal of `lits` onto an indexed atom (backtracking; a
    literal bound by `s` alone is looked up)."""
    if len(lits) == 1 and all(v in s for v in lits[0].atom.variables()):
        inst = _instance(lits[0].atom, s)
        return inst is not None and Literal(inst, lits[0].positive) in index.literals
    cands = [index.by_pred.get((l.positive, l.atom.pred), ()) for l in lits]
    if not all(cands):
        return False
    frames = [[s, 0]]  # per matched prefix: substitution, next candidate of the next literal
    while frames:
        i = len(frames) - 1
        if i == len(lits):
            return True
        frame = frames[-1]
        s2 = None
        while s2 is None and frame[1] < len(cands[i]):
            s2 = _match_atom(lits[i].atom, cands[i][frame[1]], frame[0])
            frame[1] += 1
        if s2 is None:
            frames.pop()
        else:
            frames.append([s2, 0])
    return False


@dataclass(frozen=True)
class _Index:
    """The hypotheses H of a template, by (polarity, predicate) and as a set: the
    candidates of one-way matching (000 Example 6)."""

    by_pred: Mapping[tuple[bool, str], list[Atom]]
    literals: frozenset[Literal]

    @staticmethod
    def of(t: Template) -> "_Index":
        by_pred: dict[tuple[bool, str], list[Atom]] = {}
        for l in t.literals:
            by_pred.setdefault((l.positive, l.atom.pred), []).append(l.atom)
        return _Index(by_pred, frozenset(t.literals))


def _instance(p: Atom, s: Subst) -> Optional[Atom]:
    """pρ for a pattern whose variables `s` binds: the one atom _match_atom(p, ·, s) accepts
    (None if `s` binds its time variable to an object term: it accepts none)."""
    args = tuple(s[t.name] if isinstance(t, Var) else t for t in p.args)
    tm = p.time
    if tm is not None and tm.var is not None:
        b = s[tm.var]
        if not isinstance(b, Time):
            return None
        tm = Time(b.var, b.offset + tm.offset)
    return Atom(p.pred, args, tm)  # type: ignore[arg-type]


def _signature(t: Template) -> frozenset:
    """The (polarity, predicate) pairs and the object constants of H: matching maps both
    to themselves, so u subsumes t only if sig(u) ⊆ sig(t)."""
    preds = ((l.positive, l.atom.pred) for l in t.literals)
    consts = (a for l in t.literals for a in l.atom.args if isinstance(a, Const))
    return frozenset((*preds, *consts))


def _match_atom(p: Atom, t: Atom, s: Subst) -> Optional[Subst]:
    """One-way matching p·ρ = t (variables of t are treated as constants)."""
    if p.pred != t.pred or len(p.args) != len(t.args) or (p.time is None) != (t.time is None):
        return None
    s = dict(s)
    for x, y in zip(p.args, t.args):
        if isinstance(x, Var):
            if x.name in s:
                if s[x.name] != y:
                    return None
            else:
                s[x.name] = y
        elif x != y:
            return None
    if p.time is not None and t.time is not None:
        x, y = p.time, t.time
        if x.var is None:
            if x != y:
                return None
        else:
            want = Time(y.var, y.offset - x.offset)
            if y.var is None and want.offset < 0:
                return None
            if x.var in s:
                if s[x.var] != want:
                    return None
            else:
                s[x.var] = want
    return s


def _readable(head: Atom, lits: list[Literal], nogoods: list, keep: set[str], probe: Atom):
    """Rename resolution variables (`X#3`) to short readable names; keep query variables."""
    names = list(dict.fromkeys(
        v for a in [head] + [l.atom for l in lits] + [probe] for v in a.variables()))
    used = set(n for n in names if n in keep)
    ren: dict[str, str] = {}
    tried: dict[str, int] = {}  # base -> last suffix tried (`used` only grows: linear)
    for v in names:
        if v in keep:
            continue
        base = v.split("#")[0]
        i = tried.get(base, 0)
        cand = f"{base}{i}" if i else base
        while cand in used:
            i += 1
            cand = f"{base}{i}"
        tried[base] = i
        used.add(cand)
        ren[v] = cand

    def r_atom(a: Atom) -> Atom:
        args = tuple(Var(ren.get(t.name, t.name)) if isinstance(t, Var) else t for t in a.args)
        tm = a.time
        if tm is not None and tm.var is not None:
            tm = Time(ren.get(tm.var, tm.var), tm.offset)
        return Atom(a.pred, args, tm)

    ng = [tuple(sorted((ren.get(v, v), c) for v, c in n)) for n in nogoods]
    if not ren:
        return head, lits, ng, probe
    return (r_atom(head), [Literal(r_atom(l.atom), l.positive) for l in lits], ng,
            r_atom(probe))


def _lit_sort_key(l: Literal):
    t = l.atom.time
    return (not l.positive, t.var or "" if t else "", t.offset if t else 0, str(l.atom))


def longest_rule(prog: Program, pred: str) -> Optional[Rule]:
    """The rule with the longest body among those a query on `pred` reaches: the one that
    makes its templates long (what an error about their length points at)."""
    by_pred: dict[str, list[Rule]] = {}
    for r in prog.rules:
        if r.body:
            by_pred.setdefault(r.head.pred, []).append(r)
    reach, todo = set(), [pred]
    while todo:
        p = todo.pop()
        if p not in reach:
            reach.add(p)
            todo.extend(l.atom.pred for r in by_pred.get(p, ()) for l in r.body)
    rules = [r for p in reach for r in by_pred.get(p, ())]
    return max(rules, key=lambda r: len(r.body)) if rules else None


class Preprocessor:
    """Computes 𝐐 and P_Q for every query (002 §2 and Example 4)."""

    def __init__(self, prog: Program, idb: set[str], rigid: Mapping[str, int],
                 modular: frozenset = frozenset(), windows: bool = False):
        self.prog = prog
        self.windows = windows  # a lifted diamond resolved as one literal (_window)
        self._reach: Optional[set] = None  # _reaches_modular
        self.idb = idb
        self.modular = modular  # IDB predicates kept as derived literals (modular.py)
        self.rigid = dict(rigid)
        self.rules_by_pred: dict[str, list[Rule]] = {}
        for r in prog.rules:
            if r.body:
                self.rules_by_pred.setdefault(r.head.pred, []).append(r)
        self.rigid_facts: dict[str, list[Atom]] = {}
        for i, f in enumerate(prog.facts):
            if i not in prog.fact_times:
                self.rigid_facts.setdefault(f.head.pred, []).append(f.head)
        self.periodic = {p: fs for p, fs in prog.periodic_facts().items() if p not in self.rigid}
        self.counter = itertools.count(1)
        self.max_steps = MAX_STEPS + STEPS_PER_LITERAL * sum(len(r.body) for r in prog.rules)
        self.max_height = len(self.rules_by_pred) + MAX_DEPTH

    def templates(self, query: Atom, span: Span) -> tuple[Template, ...]:
        """P_Q: all minimal ⟨θ, H⟩ of SLD-derivations from ¬query (Algorithm: pre-processing)."""
        qvars = set(query.variables())
        done: list[Template] = []
        seen: dict = {}  # _leaf_key -> templates its first derivation gave
        again = 0  # templates of derivations skipped as repeats (they count to the budget)
        for kept, s, resolved in self._derivations(query, span):
            goal, res = _unreverse(kept), _unreverse(resolved)
            key = self._leaf_key(query, qvars, goal, s, res)
            if key is not None and key in seen:
                again += seen[key]
                continue
            got = self._finish_cases(query, qvars, goal, s, res)
            if key is not None:
                seen[key] = len(got)
            done.extend(got)
        if len(done) + again > MAX_TEMPLATES:
            raise self._budget_error(query, span, "ways", MAX_TEMPLATES)
        for t in done:
            self._check_offsets(query, span, t)
        return self._minimal(done)

    def _leaf_key(self, query: Atom, qvars: set[str], goal: list, s: Subst,
                  resolved: list) -> Optional[tuple]:
        """What _finish makes of a derivation, when that is all it depends on: its head,
        literals and intermediate times under σ, if they have only the query's variables
        (no renaming, no existential left: the template is a function of these sets) and
        no periodic literal (cases); None otherwise.  Unfolding windows over windows
        repeats the same template from many derivations (3 942 derivations, 681 distinct
        templates, 7 minimal, for two diamonds over a predicate of boxes)."""
        if any(not isinstance(r, Time) for r in resolved) or \
                any(l.atom.pred in self.periodic for l in goal):
            return None
        head = apply_atom(query, s)
        lits = frozenset(Literal(apply_atom(l.atom, s), l.positive) for l in goal)
        if any(v not in qvars for v in head.variables()) or \
                any(v not in qvars for l in lits for v in l.atom.variables()):
            return None
        return head, lits, frozenset(walk_time(tm, s) for tm in resolved)

    def _check_offsets(self, query: Atom, span: Span, t: Template) -> None:
        """Offsets add up along the rules unfolded into a template: past 2^60 (stream times
        are below 2^60, so a time plus an offset stays in int64 on every executor) the
        program is refused here — a chain of T+10^18-1 wrapped int64 on the columnar
        executor and ran the row engine towards tick 10^19 (issue 44.3)."""
        bad = [(str(a), a.time.offset) for a in [t.head, *(l.atom for l in t.literals)]
               if a.time is not None and abs(a.time.offset) >= MAX_OFFSET]
        bad += [(f"{v} ≥ {k}", k) for v, k in t.time_min if abs(k) >= MAX_OFFSET]
        if bad:
            from reasoning.language.metric import readable

            what, off = bad[0]
            raise ProgramError(
                readable(f"pre-processing of {query} unfolds its rules into {what}, a time "
                         f"offset of {off} (offsets add up along the rules; times and offsets "
                         f"are below 2^{MAX_OFFSET.bit_length() - 1}): make the offsets "
                         f"smaller"), span, self.prog.source)

    def _derivations(self, query: Atom, span: Span) -> list[tuple]:
        """The successful SLD-derivations from ¬query (002 §2, Example 4) as (kept, θ,
        resolved times), depth first, within the budgets (checked at every step).

        A goal is split into `kept` (its literals before the selected one, none selectable:
        EDB or negated; a reversed cons list) and `todo` (a cons list of (literal, level,
        rule that introduced it)), so a resolution step costs the size of the rule's body,
        not of the goal."""
        leaves: list[tuple] = []
        stack: list[tuple] = [((Literal(query), 0, None, None), None, {}, None)]
        steps = lits = 0
        while stack:
            todo, kept, s, resolved = stack.pop()
            steps += 1
            if steps > self.max_steps:
                raise self._budget_error(query, span, "steps", self.max_steps)
            while todo is not None and not self._selectable(todo[0], todo[1]):
                # kept cells carry their list's length: the literals budget is checked as
                # a goal grows (one template of a box over a box can hold 10⁵ literals)
                kept, todo = (todo[0], kept, (kept[2] if kept else 0) + 1), todo[3]
            if kept is not None and lits + kept[2] > MAX_TEMPLATE_LITERALS:
                raise self._literals_error(query, span, len(leaves), lits + kept[2])
            if todo is not None:
                stack.extend(self._expand(query, span, todo, kept, s, resolved))
                continue
            leaves.append((kept, s, resolved))
            if len(leaves) > MAX_TEMPLATES:
                raise self._budget_error(query, span, "ways", MAX_TEMPLATES)
            lits += kept[2] if kept else 0
        return leaves

    def _expand(self, query: Atom, span: Span, todo: tuple, kept, s: Subst,
                resolved) -> list[tuple]:
        """The goals after resolving the selected literal with every fact or rule (in
        reverse, so the first rule is searched first)."""
        lit, level, origin, rest = todo
        sel = apply_atom(lit.atom, s)
        if sel.time is not None and not (self.windows and lifted_window(sel.pred)):
            # (a diamond lifted for --windows literal is no atom of the rules as written:
            # its reference time need not be natural, as unfolded)
            resolved = (sel.time, resolved)
        if sel.pred in self.rigid:
            unified = (unify_atoms(sel, f, s, set()) for f in self.rigid_facts.get(sel.pred, []))
            return [(rest, kept, s2, resolved) for s2 in unified if s2 is not None]
        if sel.pred in self.periodic:  # decided now: a time constraint, never a hypothesis
            out = []
            for f, lrp in reversed(self.periodic[sel.pred]):
                # the time stays a variable with a domain, also for a single time (a template
                # keeps its time variable: the executors' plans assume one)
                s2 = unify_atoms(sel, Atom(f.pred, f.args, sel.time), s, set())
                if s2 is not None:
                    out.append((rest, kept, s2, ((sel.time, lrp), resolved)))
            return out
        if level >= self.max_height:
            raise self._nontermination_error(query, span, origin)
        if self.windows and sel.pred in self.idb:
            w = lifted_window(sel.pred)
            got = None if w is None else self._window(query, sel, w, level, rest, kept, s,
                                                      resolved)
            if got is not None:
                return got
        out = []
        for rule in reversed(self.rules_by_pred.get(sel.pred, [])):
            step = _resolve(sel, rule, next(self.counter), s)
            if step is not None:
                out.append((_push(step[0], level + 1, rule, rest), kept, step[1], resolved))
        return out

    def _window(self, query: Atom, sel: Atom, w: tuple, level: int, rest, kept, s: Subst,
                resolved):
        """A lifted diamond `Op[a,b] A(x̄, R)` resolved once (issue 45.2): its operand at a
        fresh time variable V ∈ [R−b, R−a] (back) or [R+a, R+b] (forward), instead of one
        resolution per tick of the window; None (unfolded) where the operand reaches a
        derived literal (modular evaluation decides those at a tick), or where the window is
        not tied to the query's time — through its reference, or the windows it is in: a
        window on a time variable of its own (several temporal variables) is unfolded."""
        op, lo, hi = w
        rule = self.rules_by_pred[sel.pred][0]  # Aux(x̄, T) :- A(ȳ, T ± lo)
        n = next(self.counter)
        step = _resolve(sel, rule, n, s)
        if step is None:
            return []
        (lit,), s2 = step
        if lit.atom.pred in self._reaches_modular():
            return None
        ref = walk_time(sel.time, s2)  # type: ignore[arg-type]
        tied = {walk_time(query.time, s2).var} if query.time is not None else set()
        r = resolved
        while r is not None:
            if isinstance(r[0], Within):
                tied.add(walk_time(r[0].var, s2).var)
            r = r[1]
        if ref.var is None or ref.var not in tied:
            return None
        var = Time(f"S#{n}", 0)
        within = Within(var, ref, -hi, -lo) if op == "Diamondminus" else Within(var, ref, lo, hi)
        body = (Literal(Atom(lit.atom.pred, lit.atom.args, var), True),)
        return [(_push(body, level + 1, rule, rest), kept, s2, (within, resolved))]

    def _reaches_modular(self) -> set:
        """The predicates whose unfolding meets a derived literal (modular evaluation)."""
        got = self._reach
        if got is None:
            got = set(self.modular)
            changed = True
            while changed:
                changed = False
                for p, rules in self.rules_by_pred.items():
                    if p not in got and any(l.atom.pred in got for r in rules for l in r.body
                                            if l.positive):
                        got.add(p)
                        changed = True
            self._reach = got
        return got

    def _selectable(self, l: Literal, level: int = 1) -> bool:
        """Positive IDB, rigid or periodic literals are resolved; EDB and negated ones are
        hypotheses (negated periodic ones are decided by _finish_cases), and so are the
        derived literals of modular evaluation — below the query itself (level 0)."""
        return l.positive and (
            (l.atom.pred in self.idb and (level == 0 or l.atom.pred not in self.modular))
            or l.atom.pred in self.rigid or l.atom.pred in self.periodic)

    def _budget_error(self, query: Atom, span: Span, kind: str, limit: int) -> ProgramError:
        """The search exceeds a budget: blame the rule whose alternatives multiply (issue 11)."""
        b = blowup(self.prog, search_size(self.prog, self.idb), query.pred, limit, kind)
        if kind == "ways":
            what, unit, effect = "templates", "derivations", "P_Q would be too large"
        else:
            what, unit, effect = ("resolution steps", "resolution steps",
                                  "the search for P_Q would not end in reasonable time")
        if b.alternatives:
            why = (f"{b.pred} has {_count(b.size)} {unit} through its {b.n_rules} rules "
                   f"(the budget is crossed at this one)")
        else:
            why = (f"this rule alone has {_count(b.size)} {unit}, its body atoms' "
                   f"alternatives multiplied")
        rule = self.prog.rules[b.rule_index]
        from reasoning.language.metric import readable  # auxiliary predicates as the operators they stand for

        return ProgramError(
            readable(f"pre-processing of {query} exceeds the budget of {limit} {what} "
                     f"({effect}, 002 §2): {why}"),
            rule.span if rule.span.line else span, self.prog.source,
        )

    def _literals_error(self, query: Atom, span: Span, n: int, lits: int) -> ProgramError:
        """P_Q's hypotheses exceed MAX_TEMPLATE_LITERALS: blame the longest rule the query
        reaches (a box, or a Since, repeated for every case of a diamond over it) — unless
        the templates are too many already: that budget's error names the multiplying rule."""
        from reasoning.language.metric import readable

        if search_size(self.prog, self.idb).ways.get(query.pred, 0) > MAX_TEMPLATES:
            return self._budget_error(query, span, "ways", MAX_TEMPLATES)

        worst = longest_rule(self.prog, query.pred)
        where = worst.span if worst is not None and worst.span.line else span
        return ProgramError(
            readable(f"pre-processing of {query} exceeds the budget of "
                     f"{MAX_TEMPLATE_LITERALS} hypothesis literals in all its templates "
                     f"(P_Q would be too large, 002 §2): {n} templates and the goal of the "
                     f"next hold {lits} already; this rule's body has {len(worst.body) if worst else 0} literals, "
                     f"repeated in each template through it: narrow its window, or the "
                     f"windows over it"),
            where, self.prog.source)

    def _nontermination_error(self, query: Atom, span: Span,
                              origin: Optional[Rule]) -> ProgramError:
        """A derivation deeper than any nonrecursive program's: recursion (000 Example 7)."""
        from reasoning.language.metric import readable

        return ProgramError(
            f"pre-processing of {readable(str(query))} does not terminate (a derivation more than "
            f"{self.max_height} resolution levels deep, through this rule; 000 Example 7)",
            origin.span if origin is not None and origin.span.line else span,
            self.prog.source,
        )

    def _finish_cases(self, query: Atom, qvars: set[str], goal, s: Subst,
                      resolved: list) -> list[Template]:
        """The templates of one derivation: one per case of its negated periodic literals.
        ¬P(x̄, V+k) holds iff x̄ differs from every fact's objects c̄ (nogoods), or x̄ = c̄
        for one group of facts with the same objects and V+k lies outside their lrps: the
        cases are disjoint, one template each (a group whose objects are all constants
        leaves only the time condition, for every case)."""
        cases = [(s, [], [])]  # substitution, extra nogoods, exclusions (time term, lrp)
        for l in goal:
            if l.positive or l.atom.pred not in self.periodic:
                continue
            cases = [c for case in cases for c in self._periodic_cases(l.atom, *case)]
        out = []
        for s2, ngs, excl in cases:
            t = self._finish(query, qvars, goal, s2, resolved, ngs, excl)
            if t is not None:
                out.append(t)
        return out

    def _periodic_cases(self, atom: Atom, s: Subst, ngs: list, excl: list) -> list[tuple]:
        """The cases of one negated periodic literal (see _finish_cases)."""
        a = apply_atom(atom, s)
        groups: dict[tuple, list[Lrp]] = {}
        for f, lrp in self.periodic[a.pred]:
            m = unify_atoms(a, Atom(f.pred, f.args, a.time), {}, set())
            if m is None:
                continue
            key = tuple(sorted((v, walk_obj(Var(v), m).value)  # type: ignore[union-attr]
                               for v in set(a.object_variables())))
            groups.setdefault(key, []).append(lrp)
        always = [(a.time, lrp) for lrp in groups.pop((), [])]
        out = [(s, ngs + list(groups), excl + always)]
        for key, lrps in groups.items():
            s2 = dict(s)
            for v, c in key:
                s2[v] = Const(c)
            out.append((s2, ngs, excl + always + [(a.time, lrp) for lrp in lrps]))
        return out

    def _finish(self, query: Atom, qvars: set[str], goal, s: Subst,
                resolved: list = (), extra_nogoods: list = (),
                excluded: list = ()) -> Optional[Template]:
        head = apply_atom(query, s)
        if _negative_time(head):
            return None
        bounds: dict[str, int] = {}
        domains: dict[str, TimeDomain] = {}
        wins: list = []
        for r in resolved:
            if isinstance(r, Within):
                got = _within(r, s)
                if got is False:
                    return None
                if got is not True:
                    wins.append(got)
        for tm, lrp in [r for r in resolved if not isinstance(r, (Time, Within))]:
            t = walk_time(tm, s)  # a positive periodic literal: t ∈ lrp
            if t.var is None:
                if t.offset not in lrp:
                    return None
                continue
            d = domains.get(t.var, TimeDomain()).restrict(lrp.shift(-t.offset))
            if d is None:
                return None
            domains[t.var] = d
        for tm, lrp in excluded:  # a negated periodic literal: t ∉ lrp
            t = walk_time(tm, s)
            if t.var is None:
                if t.offset in lrp:
                    return None
                continue
            domains[t.var] = domains.get(t.var, TimeDomain()).exclude(lrp.shift(-t.offset))
        for tm in resolved:  # intermediate atoms of the derivation need natural timestamps
            if not isinstance(tm, Time):
                continue
            t = walk_time(tm, s)
            if t.var is None:
                if t.offset < 0:
                    return None
            else:
                bounds[t.var] = max(bounds.get(t.var, -t.offset), -t.offset)
        lits: list[Literal] = []
        nogoods: list[tuple[tuple[str, str], ...]] = []
        for n in extra_nogoods:  # of negated periodic literals, under the other cases' σ
            left = _open_nogood(n, s)
            if left == ():
                return None
            if left is not None:
                nogoods.append(left)
        for l in goal:
            a = apply_atom(l.atom, s)
            if _negative_time(a):
                return None
            if a.pred in self.periodic:  # negated (positive ones were resolved): decided,
                t = a.time  # but its time term must still be natural
                if t is not None and t.var is not None:
                    bounds[t.var] = max(bounds.get(t.var, -t.offset), -t.offset)
                continue
            if a.pred in self.rigid:  # negated rigid atom: closed world over program facts
                assert not l.positive
                for fact in self.rigid_facts.get(a.pred, []):
                    m = unify_atoms(a, fact, {}, set())
                    if m is None:
                        continue
                    pairs = tuple(sorted(
                        (v, str(walk_obj(Var(v), m))) for v in a.object_variables()
                    ))
                    if not pairs:
                        return None  # the negated rigid atom is a fact: derivation fails
                    nogoods.append(pairs)
                continue
            lits.append(Literal(a, l.positive))
        lits = list(dict.fromkeys(lits))
        pos = {l.atom for l in lits if l.positive}
        if any((not l.positive) and l.atom in pos for l in lits):
            return None  # inconsistent hypotheses
        fixed = set(head.variables()) | set(bounds) | set(domains)
        fixed.update(x for v, u, _, _ in wins for x in (v, u) if x is not None)
        fixed.update(v for n in nogoods for v, _ in n)
        fixed.update(v for l in lits if not l.positive for v in l.atom.variables())
        lits = core_literals(lits, fixed)
        occurring = set(head.variables())
        for l in lits:
            occurring.update(l.atom.variables())
        # a nogood on a variable occurring only in the negated rigid atom can always be
        # avoided in an open domain (∃X ¬R(X)): it constrains nothing
        nogoods = [n for n in nogoods if all(v in occurring for v, _ in n)]
        implied: dict[str, int] = {}
        for a in [head] + [l.atom for l in lits]:
            if a.time is not None and a.time.var is not None:
                implied[a.time.var] = max(implied.get(a.time.var, -a.time.offset), -a.time.offset)
        extra = {v: k for v, k in bounds.items() if k > implied.get(v, -10 ** 9)}
        if wins:  # over the variables left (a window's intermediate atom's time: projected)
            wins = _closed_windows(wins, bounds, set(occurring))
            if wins is None:
                return None
            extra = {v: k for v, k in extra.items() if v in occurring}
        for v in list(domains):  # natural time terms: v ≥ its lower bound
            lo = max(implied.get(v, -10 ** 9), bounds.get(v, -10 ** 9))
            d = domains[v].normal(lo if lo > -10 ** 9 else 0)
            if d is None:
                return None
            if v not in implied or d.trivial:  # existential (not empty): constrains nothing
                del domains[v]
            else:
                domains[v] = d
        probed = sorted(set(extra) | set(domains) |
                        {x for v, u, _, _ in wins for x in (v, u) if x is not None})
        ren_probe = Atom("_", tuple(Var(v) for v in probed), None)
        head, lits, nogoods, probe = _readable(head, lits, nogoods, qvars, ren_probe)
        names = {v: t.name for t, v in zip(probe.args, probed)}
        time_min = tuple(sorted((names[v], extra[v]) for v in extra))
        periodic = tuple(sorted((names[v], d) for v, d in domains.items()))
        windows = tuple(sorted(set((names[v], None if u is None else names[u], lo, hi)
                                   for v, u, lo, hi in wins), key=str))
        lits.sort(key=_lit_sort_key)
        theta = []
        for v in sorted(qvars):
            t = _term_of(query, head, v)
            if t is not None and t != v:
                theta.append((v, t))
        derived = tuple(i for i, l in enumerate(lits)
                        if l.positive and l.atom.pred in self.modular)
        return Template(head, tuple(theta), tuple(lits), tuple(sorted(set(nogoods))), time_min,
                        periodic, derived, windows)

    def _minimal(self, ts: list[Template]) -> tuple[Template, ...]:
        """Minimal hypothesis sets (000 Example 6): drop a template subsumed by a strictly
        more general one, or by an equivalent earlier one.  Only the templates that may
        subsume one are tried (_Candidates): a window of width w unfolds into w templates
        that share one signature, and trying every pair took minutes (issue 44.4)."""
        uniq = list(dict.fromkeys(ts))
        cands = _Candidates(uniq)
        indexes: dict[int, _Index] = {}
        return tuple(
            t for i, t in enumerate(uniq)
            if not any(self._dominated(uniq, indexes, j, i) for j in cands.of(i))
        )

    @staticmethod
    def _dominated(uniq: list[Template], indexes: dict[int, _Index], j: int, i: int) -> bool:
        """Template j subsumes template i, strictly or being an equivalent earlier one."""
        if i == j:
            return False
        t, u = uniq[i], uniq[j]
        if not _subsumes(u, t, _index_of(indexes, uniq, i)):
            return False
        return j < i or not _subsumes(t, u, _index_of(indexes, uniq, j))


def core_literals(lits: list[Literal], fixed: set[str]) -> list[Literal]:
    """H without the positive literals that repeat another up to a renaming of their own
    variables: a literal whose variables outside `fixed` (the head's, a negated literal's, a
    nogood's, a time bound's) occur in no other literal is entailed by a literal equal to
    it but for those (`E2(X, S1)` by `E2(X, S)`), so the conjunction keeps one.  Unfolding
    makes such copies (two rules each with `∃S E2(X, S)`), and each printed near-duplicate
    answers.  Linear (one key per literal); a copy that needs a larger renaming stays."""
    count: dict[str, int] = {}
    for l in lits:
        for v in set(l.atom.variables()):
            count[v] = count.get(v, 0) + 1

    def private(a: Atom) -> set:
        return {v for v in a.variables() if v not in fixed and count[v] == 1}

    seen: set = set()
    out = []
    for l in lits:
        if l.positive:
            key = _private_shape(l.atom, private(l.atom))
            if key in seen:
                continue
            seen.add(key)
        out.append(l)
    # then a literal that another one instantiates (E2(X, S) by E2(X, T-5)), among at most
    # CORE_CANDIDATES literals of its predicate
    by_pred: dict[str, list[Atom]] = {}
    for l in out:
        if l.positive:
            by_pred.setdefault(l.atom.pred, []).append(l.atom)
    drop: set = set()
    for l in out:
        own = private(l.atom) if l.positive else set()
        if not own:
            continue
        for m in by_pred[l.atom.pred][:CORE_CANDIDATES]:
            if m is not l.atom and m not in drop and _instance_of(l.atom, m, own):
                drop.add(l.atom)
                break
    return [l for l in out if not (l.positive and l.atom in drop)]


CORE_CANDIDATES = 64


def _instance_of(a: Atom, m: Atom, own: set[str]) -> bool:
    """m is a with its own variables `own` replaced (consistently; _match_atom with every
    other variable of a mapped to itself)."""
    fixed: Subst = {v: Var(v) for v in a.object_variables() if v not in own}
    if a.time is not None and a.time.var is not None and a.time.var not in own:
        fixed[a.time.var] = Time(a.time.var, 0)
    return _match_atom(a, m, fixed) is not None


def _private_shape(a: Atom, private: set[str]) -> tuple:
    """The atom with its private variables numbered by first occurrence (a time variable's
    offset dropped with it): equal shapes are the same atom up to renaming them."""
    num: dict[str, int] = {}

    def term(x):
        if isinstance(x, Var) and x.name in private:
            return ("*", num.setdefault(x.name, len(num)))
        return x

    t = a.time
    tk = None if t is None else (("*", num.setdefault(t.var, len(num)))
                                 if t.var in private else t)
    return (a.pred, tuple(term(x) for x in a.args), tk)


def _open_nogood(n: tuple, s: Subst) -> Optional[tuple]:
    """A nogood under σ: None if σ satisfies it (a variable bound to another constant), else
    its pairs on variables σ leaves open (() : σ violates it)."""
    out = []
    for v, c in n:
        t = walk_obj(Var(v), s)
        if isinstance(t, Const):
            if t.value != c:
                return None
        else:
            out.append((t.name, c))
    return tuple(sorted(out))


def _fixed_part(t: Template) -> frozenset:
    """The literals of H whose variables all occur in the head: a template with the same
    head maps them to themselves (matching the head is the identity on its variables), so
    u subsumes t only if fixed(u) ⊆ fixed(t)."""
    hv = set(t.head.variables())
    return frozenset(l for l in t.literals if set(l.atom.variables()) <= hv)


class _Candidates:
    """The templates that may subsume template i: their signature is i's or a strictly
    smaller one contained in it (_signature), and with i's very head their fixed literals
    are among i's (_fixed_part, found through the rarest literal of each, its pivot).  A template
    with nogoods, time bounds or periodic domains subsumes nothing (_subsumes): never one."""

    def __init__(self, uniq: list[Template]):
        self.sigs = [_signature(t) for t in uniq]
        self.heads = [t.head for t in uniq]
        self.fixed = [_fixed_part(t) for t in uniq]
        self.by_sig: dict[frozenset, dict[Atom, list[int]]] = {}
        self.pivots: dict[Atom, dict[Optional[Literal], list[int]]] = {}
        freq: dict[Literal, int] = {}
        for f in self.fixed:
            for l in f:
                freq[l] = freq.get(l, 0) + 1
        for j, t in enumerate(uniq):
            if t.nogoods or t.time_min or t.periodic:
                continue
            self.by_sig.setdefault(self.sigs[j], {}).setdefault(t.head, []).append(j)
            # the rarest literal: the fewest templates to try it against
            pivot = min(self.fixed[j], key=lambda l: (freq[l], str(l))) if self.fixed[j] else None
            self.pivots.setdefault(t.head, {}).setdefault(pivot, []).append(j)
        self.shorter = sorted(self.by_sig, key=len)

    def of(self, i: int) -> Iterator[int]:
        sig, head, fixed = self.sigs[i], self.heads[i], self.fixed[i]
        same = self.pivots.get(head, {})
        for key in (None, *fixed):
            for j in same.get(key, ()):
                if self.sigs[j] <= sig and self.fixed[j] <= fixed:
                    yield j
        for g in self.shorter:
            if len(g) > len(sig):
                break
            if g <= sig:
                for h, js in self.by_sig[g].items():
                    if h != head:
                        yield from js


def _index_of(indexes: dict[int, _Index], uniq: list[Template], i: int) -> _Index:
    """The literal index of template i, built once."""
    if i not in indexes:
        indexes[i] = _Index.of(uniq[i])
    return indexes[i]


def _resolve(sel: Atom, rule: Rule, n: int, s: Subst):
    """One SLD step: unify the selected atom with the head of `rule` renamed apart (suffix
    `#n`, Lemma 5) and return the rule's body instantiated, with the substitution rid of the
    head's variables (they occur nowhere else now), so it stays as small as the goal's."""
    head = _renamed(rule.head, n)
    fresh = set(head.variables())
    s2 = unify_atoms(sel, head, s, fresh)
    if s2 is None:
        return None
    body = tuple(Literal(apply_atom(_renamed(l.atom, n), s2), l.positive) for l in rule.body)
    for v in fresh:
        s2.pop(v, None)
    return body, s2


def _renamed(a: Atom, n: int) -> Atom:
    """An atom of a rule with its variables suffixed `#n`."""
    args = tuple(Var(f"{t.name}#{n}") if isinstance(t, Var) else t for t in a.args)
    tm = a.time
    if tm is not None and tm.var is not None:
        tm = Time(f"{tm.var}#{n}", tm.offset)
    return Atom(a.pred, args, tm)


def _within(w: Within, s: Subst):
    """A window constraint under σ: True (holds), False (fails), or (V, U|None, lo, hi)
    for lo ≤ V − U ≤ hi (U None: lo ≤ V ≤ hi) over time variables."""
    v, u = walk_time(w.var, s), walk_time(w.ref, s)
    d = v.offset - u.offset  # lo ≤ (V + vo) − (U + uo) ≤ hi
    lo, hi = w.lo - d, w.hi - d
    if v.var is None and u.var is None or v.var == u.var:
        return lo <= 0 <= hi
    if v.var is None:  # lo ≤ −U ≤ hi
        return (u.var, None, -hi, -lo)
    return (v.var, u.var, lo, hi)


def _closed_windows(wins: list, lower: dict, keep: set) -> Optional[list]:
    """Window constraints closed under implication (difference constraints: shortest paths)
    and projected on the variables `keep` (an intermediate atom's time occurs in no
    literal); `lower`: natural lower bounds V ≥ k; None if they admit no solution."""
    BIG = 1 << 62
    nodes = sorted({x for v, u, _, _ in wins for x in (v, u) if x is not None}) + [None]
    at = {x: i for i, x in enumerate(nodes)}
    n = len(nodes)
    d = [[0 if i == j else BIG for j in range(n)] for i in range(n)]  # d[i][j] ≥ x_j − x_i

    def edge(i: int, j: int, w: int) -> None:
        if w < d[i][j]:
            d[i][j] = w

    for v, u, lo, hi in wins:
        edge(at[u], at[v], hi)  # v − u ≤ hi
        edge(at[v], at[u], -lo)  # u − v ≤ −lo
    for v, k in lower.items():
        if v in at:
            edge(at[v], at[None], -k)  # 0 − v ≤ −k
    for k in range(n):
        dk = d[k]
        for i in range(n):
            dik = d[i][k]
            if dik >= BIG:
                continue
            di = d[i]
            for j in range(n):
                if dik + dk[j] < di[j]:
                    di[j] = dik + dk[j]
    if any(d[i][i] < 0 for i in range(n)):
        return None
    out = []
    kept = [x for x in nodes if x is None or x in keep]
    for a, v in enumerate(kept[:-1]):  # (None, the constant 0, is last)
        for u in kept[a + 1:]:
            hi, nlo = d[at[u]][at[v]], d[at[v]][at[u]]  # v − u ≤ hi, u − v ≤ nlo
            if hi < BIG and nlo < BIG:
                out.append((v, u, -nlo, hi))
            elif u is None and hi < BIG:
                out.append((v, None, -(BIG >> 2), hi))
    return out


def _push(body: tuple[Literal, ...], level: int, rule: Rule, rest):
    """Cons the body literals (in order) in front of `rest`."""
    for l in reversed(body):
        rest = (l, level, rule, rest)
    return rest


def _unreverse(cons) -> list:
    """The items of a reversed cons list (x, next), in the order they were consed."""
    out = []
    while cons is not None:
        out.append(cons[0])
        cons = cons[1]
    out.reverse()
    return out


def _count(n: int) -> str:
    """A search size for messages; saturated sizes read "at least 10^18"."""
    return "at least 10^18" if n >= SEARCH_CAP else str(n)


def _term_of(query: Atom, head: Atom, v: str) -> Optional[str]:
    """The rendered term that variable `v` of the query is bound to in the template head."""
    for qa, ha in zip(query.args, head.args):
        if isinstance(qa, Var) and qa.name == v:
            return str(ha)
    if query.time is not None and query.time.var == v and head.time is not None:
        off = query.time.offset
        return str(head.time.shift(-off))
    return None


def aux_query_atom(lit: Atom, arity_objs: int) -> Atom:
    """Fresh auxiliary query for a negated atom: every argument replaced by a variable."""
    names: list[str] = []
    for i, t in enumerate(lit.args):
        n = t.name if isinstance(t, Var) and not t.name.startswith("_") else f"X{i + 1}"
        while n in names:
            n = f"{n}{i + 1}"
        names.append(n)
    tv = lit.time.var if lit.time is not None and lit.time.var else "T"
    while tv in names:
        tv = tv + "1"
    return Atom(lit.pred, tuple(Var(n) for n in names), Time(tv, 0))


def _is_general(a: Atom) -> bool:
    vs = [t.name for t in a.args if isinstance(t, Var)]
    return (
        len(vs) == len(a.args) and len(set(vs)) == len(vs)
        and a.time is not None and a.time.var is not None and a.time.offset == 0
        and a.time.var not in vs
    )


def build_queries(prog: Program, main: Atom, idb: set[str], edb: Mapping[str, int],
                  span: Span, modular: frozenset = frozenset(),
                  windows: bool = False) -> tuple[Query, ...]:
    """The set 𝐐 (main query first) with P_Q for each, iterated until no fresh query (Ex. 4):
    one for each negated literal and each derived one (modular evaluation)."""
    pre = Preprocessor(prog, idb, prog.rigid, modular, windows)
    queries: list[Query] = [Query(0, main, True, pre.templates(main, span))]
    by_pred: dict[str, int] = {}
    if _is_general(main):
        by_pred[main.pred] = 0
    i = 0
    while i < len(queries):
        for t in queries[i].templates:
            for k, l in enumerate(t.literals):
                if (l.positive and k not in t.derived) or l.atom.pred in by_pred:
                    continue
                aux = aux_query_atom(l.atom, len(l.atom.args))
                qid = len(queries)
                by_pred[aux.pred] = qid
                if aux.pred in idb:
                    ts = pre.templates(aux, span)
                else:  # negated EDB atom: the query over the EDB predicate itself
                    ts = (Template(aux, (), (Literal(aux),), ()),)
                queries.append(Query(qid, aux, False, ts))
        i += 1
    return tuple(queries)
