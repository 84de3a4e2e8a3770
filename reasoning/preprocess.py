"""Pre-processing into P_Q (002_…txt §2 "Computing hypothetical answers", Example 4; 000 §4-5).

SLD-resolution with future premises from ¬P until goals hold only EDB atoms and negated
atoms; one template ⟨θ, H⟩ per successful derivation, minimal hypothesis sets only
(000 Example 6); a fresh auxiliary query per negated predicate, iterated to a fixpoint.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Mapping, Optional, Union

from .errors import ProgramError
from .syntax import Atom, Const, Literal, Program, Rule, Span, Time, Var

Term = Union[Var, Const, Time]
Subst = dict[str, Term]

MAX_TEMPLATES = 20000
MAX_DEPTH = 200


@dataclass(frozen=True)
class Template:
    """One element ⟨θ, H⟩ of P_Q, stored as the instantiated head Pθ and the literals H.

    `nogoods` are forbidden partial assignments (from negated rigid atoms), each a tuple of
    (variable, constant) pairs.
    """

    head: Atom
    theta: tuple[tuple[str, str], ...]  # query variable -> rendered term (for display)
    literals: tuple[Literal, ...]
    nogoods: tuple[tuple[tuple[str, str], ...], ...] = ()
    # lower bounds var >= k from resolved (intermediate) atoms, whose times must be natural
    time_min: tuple[tuple[str, int], ...] = ()

    def variables(self) -> tuple[str, ...]:
        out: set[str] = set(self.head.variables())
        for l in self.literals:
            out.update(l.atom.variables())
        out.update(v for v, _ in self.time_min)
        return tuple(sorted(out))

    def __str__(self) -> str:
        th = ", ".join(f"{v} := {t}" for v, t in self.theta)
        hs = ", ".join(str(l).replace("not ", "¬") for l in self.literals)
        ng = "".join(
            " | " + " ∧ ".join(f"{v}={c}" for v, c in n) + " excluded" for n in self.nogoods
        )
        ng += "".join(f" | {v} ≥ {k}" for v, k in self.time_min)
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
    def ren(a: Atom) -> Atom:
        args = tuple(Var(f"{t.name}#{n}") if isinstance(t, Var) else t for t in a.args)
        tm = a.time
        if tm is not None and tm.var is not None:
            tm = Time(f"{tm.var}#{n}", tm.offset)
        return Atom(a.pred, args, tm)
    return Rule(ren(r.head), tuple(Literal(ren(l.atom), l.positive) for l in r.body), r.span)


# ---------------------------------------------------------------- templates

def _negative_time(a: Atom) -> bool:
    return a.time is not None and a.time.var is None and a.time.offset < 0


def _subsumes(a: Template, b: Template) -> bool:
    """∃ρ: head_a ρ = head_b and H_a ρ ⊆ H_b (one-way matching, 000 Example 6).  A template
    restricted by nogoods or time bounds covers fewer instances: it subsumes nothing."""
    if a.nogoods or a.time_min:
        return False
    s = _match_atom(a.head, b.head, {})
    if s is None:
        return False

    def go(i: int, s: Subst) -> bool:
        if i == len(a.literals):
            return True
        la = a.literals[i]
        for lb in b.literals:
            if la.positive != lb.positive:
                continue
            s2 = _match_atom(la.atom, lb.atom, s)
            if s2 is not None and go(i + 1, s2):
                return True
        return False

    return go(0, s)


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
    names: list[str] = []
    for a in [head] + [l.atom for l in lits] + [probe]:
        for v in a.variables():
            if v not in names:
                names.append(v)
    used = set(n for n in names if n in keep)
    ren: dict[str, str] = {}
    for v in names:
        if v in keep:
            continue
        base = v.split("#")[0]
        cand, i = base, 1
        while cand in used:
            cand = f"{base}{i}"
            i += 1
        used.add(cand)
        ren[v] = cand

    def r_atom(a: Atom) -> Atom:
        args = tuple(Var(ren.get(t.name, t.name)) if isinstance(t, Var) else t for t in a.args)
        tm = a.time
        if tm is not None and tm.var is not None:
            tm = Time(ren.get(tm.var, tm.var), tm.offset)
        return Atom(a.pred, args, tm)

    ng = [tuple(sorted((ren.get(v, v), c) for v, c in n)) for n in nogoods]
    return (r_atom(head), [Literal(r_atom(l.atom), l.positive) for l in lits], ng,
            r_atom(probe))


def _lit_sort_key(l: Literal):
    t = l.atom.time
    return (not l.positive, t.var or "" if t else "", t.offset if t else 0, str(l.atom))


class Preprocessor:
    """Computes 𝐐 and P_Q for every query (002 §2 and Example 4)."""

    def __init__(self, prog: Program, idb: set[str], rigid: Mapping[str, int]):
        self.prog = prog
        self.idb = idb
        self.rigid = dict(rigid)
        self.rules_by_pred: dict[str, list[Rule]] = {}
        for r in prog.rules:
            if r.body:
                self.rules_by_pred.setdefault(r.head.pred, []).append(r)
        self.rigid_facts: dict[str, list[Atom]] = {}
        for f in prog.facts:
            self.rigid_facts.setdefault(f.head.pred, []).append(f.head)
        self.counter = itertools.count(1)

    def templates(self, query: Atom, span: Span) -> tuple[Template, ...]:
        """P_Q: all minimal ⟨θ, H⟩ of SLD-derivations from ¬query (Algorithm: pre-processing)."""
        qvars = set(query.variables())
        done: list[Template] = []
        stack: list[tuple[tuple[Literal, ...], Subst, int, tuple]] = [
            ((Literal(query),), {}, 0, ())]
        while stack:
            goal, s, depth, resolved = stack.pop()
            if depth > MAX_DEPTH or len(done) > MAX_TEMPLATES:
                raise ProgramError(
                    f"pre-processing of {query} does not terminate (more than "
                    f"{MAX_DEPTH} resolution steps or {MAX_TEMPLATES} templates)",
                    span, self.prog.source,
                )
            idx = next(
                (i for i, l in enumerate(goal)
                 if l.positive and (l.atom.pred in self.idb or l.atom.pred in self.rigid)),
                None,
            )
            if idx is None:
                t = self._finish(query, qvars, goal, s, resolved)
                if t is not None:
                    done.append(t)
                continue
            sel = apply_atom(goal[idx].atom, s)
            rest_before, rest_after = goal[:idx], goal[idx + 1:]
            if sel.time is not None:
                resolved = resolved + (sel.time,)
            if sel.pred in self.rigid:
                for fact in self.rigid_facts.get(sel.pred, []):
                    s2 = unify_atoms(sel, fact, s, set())
                    if s2 is not None:
                        stack.append((rest_before + rest_after, s2, depth + 1, resolved))
                continue
            for rule in reversed(self.rules_by_pred.get(sel.pred, [])):
                rr = rename_rule(rule, next(self.counter))
                prefer = rr.variables()
                s2 = unify_atoms(sel, rr.head, s, prefer)
                if s2 is None:
                    continue
                stack.append((rest_before + rr.body + rest_after, s2, depth + 1, resolved))
        return self._minimal(done)

    def _finish(self, query: Atom, qvars: set[str], goal, s: Subst,
                resolved: tuple = ()) -> Optional[Template]:
        head = apply_atom(query, s)
        if _negative_time(head):
            return None
        bounds: dict[str, int] = {}
        for tm in resolved:  # intermediate atoms of the derivation need natural timestamps
            t = walk_time(tm, s)
            if t.var is None:
                if t.offset < 0:
                    return None
            else:
                bounds[t.var] = max(bounds.get(t.var, -t.offset), -t.offset)
        lits: list[Literal] = []
        nogoods: list[tuple[tuple[str, str], ...]] = []
        for l in goal:
            a = apply_atom(l.atom, s)
            if _negative_time(a):
                return None
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
            lit = Literal(a, l.positive)
            if lit not in lits:
                lits.append(lit)
        pos = {l.atom for l in lits if l.positive}
        if any((not l.positive) and l.atom in pos for l in lits):
            return None  # inconsistent hypotheses
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
        ren_probe = Atom("_", tuple(Var(v) for v in sorted(extra)), None)
        head, lits, nogoods, probe = _readable(head, lits, nogoods, qvars, ren_probe)
        time_min = tuple(sorted((t.name, extra[v]) for t, v in zip(probe.args, sorted(extra))))
        lits.sort(key=_lit_sort_key)
        theta = []
        for v in sorted(qvars):
            t = _term_of(query, head, v)
            if t is not None and t != v:
                theta.append((v, t))
        return Template(head, tuple(theta), tuple(lits), tuple(sorted(set(nogoods))), time_min)

    def _minimal(self, ts: list[Template]) -> tuple[Template, ...]:
        uniq: list[Template] = []
        for t in ts:
            if t not in uniq:
                uniq.append(t)
        out = []
        for i, t in enumerate(uniq):
            dominated = False
            for j, u in enumerate(uniq):
                if i == j or not _subsumes(u, t):
                    continue
                if not _subsumes(t, u) or j < i:  # strictly smaller, or an equivalent earlier one
                    dominated = True
                    break
            if not dominated:
                out.append(t)
        return tuple(out)


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
                  span: Span) -> tuple[Query, ...]:
    """The set 𝐐 (main query first) with P_Q for each, iterated until no fresh query (Ex. 4)."""
    pre = Preprocessor(prog, idb, prog.rigid)
    queries: list[Query] = [Query(0, main, True, pre.templates(main, span))]
    by_pred: dict[str, int] = {}
    if _is_general(main):
        by_pred[main.pred] = 0
    i = 0
    while i < len(queries):
        for t in queries[i].templates:
            for l in t.literals:
                if l.positive or l.atom.pred in by_pred:
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
