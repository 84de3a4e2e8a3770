"""Templates of P_Q compiled to index-based patterns for the online engine (Algorithm 1).

A schematic answer's substitution is a tuple of values aligned with its template's
variables (None = unbound); literals are instantiated against it without building atoms.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional, Union

from reasoning.language.metric import AUX_PREFIX, render_aux
from reasoning.language.periodic import TimeDomain
from reasoning.language.preprocess import Query, Template
from reasoning.language.syntax import Atom, Const, Time, Var

Value = Union[str, int]
Binding = tuple  # tuple[Optional[Value], ...]


class Fact(NamedTuple):
    """A ground EDB fact p(c̄, t) of the stream."""

    pred: str
    args: tuple
    time: int

    def __str__(self) -> str:
        parts = [str(Const(a)) for a in self.args] + [str(self.time)]
        return f"{self.pred}({', '.join(parts)})"


@dataclass(frozen=True)
class LitPattern:
    """A template literal: args are (is_var, var index or constant), time (var index|None, k)."""

    pred: str
    positive: bool
    args: tuple[tuple[bool, Union[int, str]], ...]
    tvar: Optional[int]
    toff: int
    # a positive IDB literal kept by modular evaluation (issue 45): decided at step 3 by the
    # answers of its auxiliary query, as a negated one is, never matched against facts
    derived: bool = False

    def instantiate(self, b: Binding) -> tuple[tuple, Optional[int]]:
        """Arguments (constant or None) and time (int or None) under binding b."""
        args = tuple([b[x] if v else x for v, x in self.args])
        if self.tvar is None:
            return args, self.toff
        tv = b[self.tvar]
        return args, (None if tv is None else tv + self.toff)

    def match(self, b: Binding, args: tuple, t: int) -> Optional[Binding]:
        """Extend b so that this literal equals the ground atom p(args, t), or None."""
        nb = None
        for (isvar, x), c in zip(self.args, args):
            if isvar:
                cur = b[x] if nb is None else nb[x]
                if cur is None:
                    if nb is None:
                        nb = list(b)
                    nb[x] = c
                elif cur != c:
                    return None
            elif x != c:
                return None
        if self.tvar is None:
            if self.toff != t:
                return None
        else:
            val = t - self.toff  # may be negative: only time terms must be natural
            cur = b[self.tvar] if nb is None else nb[self.tvar]
            if cur is None:
                if nb is None:
                    nb = list(b)
                nb[self.tvar] = val
            elif cur != val:
                return None
        return b if nb is None else tuple(nb)

    def render(self, b: Binding, names: tuple[str, ...]) -> str:
        """Program syntax of the instantiated literal (variables keep their names)."""
        parts = []
        for isvar, x in self.args:
            if isvar:
                v = b[x]
                parts.append(names[x] if v is None else str(Const(v)))
            else:
                parts.append(str(Const(x)))
        if self.tvar is None:
            time = lambda d: str(self.toff + d)  # noqa: E731
        else:
            tv = b[self.tvar]
            time = lambda d: (str(Time(names[self.tvar], self.toff + d)) if tv is None  # noqa: E731
                              else str(tv + self.toff + d))
        s = None
        if self.pred.startswith(AUX_PREFIX):  # `not A(…) Since[a,b] B(…)` as written
            s = render_aux(self.pred, parts, time)
        if s is None:
            s = f"{self.pred}({', '.join([*parts, time(0)])})"
        return s if self.positive else f"not {s}"


@dataclass(frozen=True)
class ETemplate:
    """One element of P_Q ready for Algorithm 1."""

    tid: int
    qid: int
    query: Query
    template: Template
    names: tuple[str, ...]  # template variables (index -> name)
    head: LitPattern
    lits: tuple[LitPattern, ...]
    pos: tuple[int, ...]  # positive literals over stream facts
    neg: tuple[int, ...]
    nogoods: frozenset  # frozenset of tuples of (var index, value)
    qvars: tuple[tuple[str, bool, Union[int, str], int], ...]  # (name, is_var, idx|const, off)
    time_vars: frozenset  # indices of temporal variables
    time_min: tuple[tuple[int, int], ...] = ()  # (var index, lower bound) from pre-processing
    periodic: tuple[tuple[int, TimeDomain], ...] = ()  # (var index, domain): periodic facts
    der: tuple[int, ...] = ()  # positive derived literals (modular evaluation, step 3)
    # windows as one literal (issue 45.2): (V, U|None, lo, hi) for lo ≤ V − U ≤ hi
    windows: tuple[tuple[int, Optional[int], int, int], ...] = ()

    @property
    def full_mask(self) -> frozenset:
        return frozenset(range(len(self.lits)))

    def seeds_all(self, i: int) -> bool:
        """Literal i binds every variable of the template (a fact of it seeds a ground
        answer)."""
        lp = self.lits[i]
        return {x for isvar, x in lp.args if isvar} | (
            {lp.tvar} if lp.tvar is not None else set()) >= set(range(len(self.names)))

    @property
    def full_seed(self) -> bool:
        """Every positive literal binds every variable (step 1's full-seed templates)."""
        return bool(self.pos) and all(self.seeds_all(i) for i in self.pos)

    def empty_binding(self) -> Binding:
        return (None,) * len(self.names)

    def answer(self, b: Binding) -> dict[str, Value]:
        """The bound query variables of this schematic answer (θ restricted to P)."""
        out: dict[str, Value] = {}
        for name, isvar, x, off in self.qvars:
            if not isvar:
                out[name] = x
            else:
                v = b[x]
                if v is not None:
                    out[name] = v + off if x in self.time_vars else v
        return out


def _pattern(a: Atom, positive: bool, idx: dict[str, int], derived: bool = False) -> LitPattern:
    args = tuple((True, idx[t.name]) if isinstance(t, Var) else (False, t.value) for t in a.args)
    tm = a.time if a.time is not None else Time(None, 0)
    return LitPattern(a.pred, positive, args, None if tm.var is None else idx[tm.var], tm.offset,
                      derived)


def compile_template(tid: int, q: Query, t: Template) -> ETemplate:
    """Index-based form of one template (variables numbered in sorted order)."""
    names = t.variables()
    idx = {n: i for i, n in enumerate(names)}
    head = _pattern(t.head, True, idx)
    lits = tuple(_pattern(l.atom, l.positive, idx, i in t.derived)
                 for i, l in enumerate(t.literals))
    tvars = set()
    for a in [t.head] + [l.atom for l in t.literals]:
        if a.time is not None and a.time.var is not None:
            tvars.add(idx[a.time.var])
    qvars = []
    for qa, ha in zip(q.atom.args, t.head.args):
        if isinstance(qa, Var):
            if isinstance(ha, Var):
                qvars.append((qa.name, True, idx[ha.name], 0))
            else:
                qvars.append((qa.name, False, ha.value, 0))
    if q.atom.time is not None and q.atom.time.var is not None and t.head.time is not None:
        ht = t.head.time
        if ht.var is None:
            qvars.append((q.atom.time.var, False, ht.offset, 0))
        else:
            qvars.append((q.atom.time.var, True, idx[ht.var], ht.offset))
    nogoods = frozenset(tuple(sorted((idx[v], c) for v, c in n)) for n in t.nogoods)
    tvars.update(idx[v] for v, _ in t.time_min)
    tvars.update(idx[v] for v, _ in t.periodic)
    windows = tuple((idx[v], None if u is None else idx[u], lo, hi) for v, u, lo, hi in t.windows)
    tvars.update(x for v, u, _, _ in windows for x in (v, u) if x is not None)
    return ETemplate(
        tid=tid, qid=q.qid, query=q, template=t, names=names, head=head, lits=lits,
        pos=tuple(i for i, l in enumerate(lits) if l.positive and not l.derived),
        neg=tuple(i for i, l in enumerate(lits) if not l.positive),
        der=tuple(i for i, l in enumerate(lits) if l.derived),
        nogoods=nogoods, qvars=tuple(qvars), time_vars=frozenset(tvars),
        time_min=tuple((idx[v], k) for v, k in t.time_min),
        periodic=tuple((idx[v], d) for v, d in t.periodic),
        windows=windows,
    )


def compile_templates(queries: tuple[Query, ...]) -> tuple[ETemplate, ...]:
    """All templates of all queries, numbered globally (the `template` column of state rows)."""
    out = []
    for q in queries:
        for t in q.templates:
            out.append(compile_template(len(out), q, t))
    return tuple(out)


def reduce_nogoods(ng: frozenset, b: Binding) -> Optional[frozenset]:
    """Specialise nogoods to binding b; None if b violates one (the instance set is empty)."""
    if not ng:
        return ng
    out = []
    for n in ng:
        rest = []
        satisfied = False
        for v, c in n:
            cur = b[v]
            if cur is None:
                rest.append((v, c))
            elif cur != c:
                satisfied = True
                break
        if satisfied:
            continue
        if not rest:
            return None
        out.append(tuple(rest))
    return frozenset(out)


def window_ranges(tp: ETemplate, b: Binding) -> Optional[dict[int, tuple[int, int]]]:
    """Per unbound time variable a window constrains through a bound one (issue 45.2), its
    range [lo, hi] under b; None if b violates a window (the instance set is empty)."""
    out: dict[int, tuple[int, int]] = {}
    for v, u, lo, hi in tp.windows:
        bv = b[v]
        bu = 0 if u is None else b[u]
        if bv is not None:
            if bu is not None:
                if not lo <= bv - bu <= hi:
                    return None
                continue
            v, lo, hi = u, bv - hi, bv - lo  # lo ≤ V − U ≤ hi: U ∈ [V − hi, V − lo]
        elif bu is None:
            continue  # both unbound: decided once one is bound
        else:
            lo, hi = bu + lo, bu + hi
        cur = out.get(v)
        if cur is not None:
            lo, hi = max(lo, cur[0]), min(hi, cur[1])
        if lo > hi:
            return None
        out[v] = (lo, hi)
    return out


def window_heads(tp: ETemplate, b: Binding) -> list:
    """b with its head's time bound to each value a window leaves it (issue 45.2): a
    fact of a window's operand makes one answer per head time, as the unfolded rules do;
    the operands' times of the other windows stay variables."""
    v = tp.head.tvar
    if v is None or b[v] is not None:
        return [b]
    rng = window_ranges(tp, b)
    if rng is None:
        return []
    r = rng.get(v)
    if r is None:
        return [b]
    out = []
    for c in range(max(r[0], -tp.head.toff), r[1] + 1):
        nb = list(b)
        nb[v] = c
        out.append(tuple(nb))
    return out
