"""Immutable IR of Temporal Datalog with negation (002_…txt §2 "Syntax").

Terms, atoms, literals, rules and programs are frozen dataclasses.  The last argument of
every temporal predicate is its time term (`Time`); rigid predicates have `time=None`.
Object constants are strings (`Const`), object/time variables are `Var`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping, Optional, Union

NAME = r"[A-Za-z_][A-Za-z0-9_]*"  # an identifier: the grammar's NAME (grammar.lark)
BARE_CONST = r"^(?:[a-z][A-Za-z0-9_]*|-?[0-9]+)$"  # a constant that reads back as itself unquoted
_BARE_CONST = re.compile(BARE_CONST)


@dataclass(frozen=True, order=True)
class Span:
    """Source position (1-based line and column) for error messages."""

    file: str = "<input>"
    line: int = 0
    column: int = 0
    end_line: int = 0
    end_column: int = 0


@dataclass(frozen=True, order=True)
class Var:
    """An object or temporal variable (sort is given by its position)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, order=True)
class Const:
    """An object constant: lower-case identifier, integer or quoted string."""

    value: str

    def __str__(self) -> str:
        if _BARE_CONST.match(self.value):
            return self.value
        escaped = self.value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'


ObjTerm = Union[Var, Const]


@dataclass(frozen=True, order=True)
class Time:
    """A time term: a timestamp `offset` (var=None) or `var+offset` (002_…txt §2)."""

    var: Optional[str] = None
    offset: int = 0

    @property
    def is_ground(self) -> bool:
        return self.var is None

    def shift(self, k: int) -> "Time":
        return Time(self.var, self.offset + k)

    def __str__(self) -> str:
        if self.var is None:
            return str(self.offset)
        if self.offset == 0:
            return self.var
        sign = "+" if self.offset > 0 else "-"
        return f"{self.var}{sign}{abs(self.offset)}"


@dataclass(frozen=True, order=True)
class Lrp:
    """The times offset + period·n (n ≥ 0) up to `until`: a linear repeating point an+b of
    003_…txt §2 ("Definition (Linear Repeating Point)") with the constraints T ≥ b and
    T ≤ until of a generalized tuple; period 0 is the single time `offset`."""

    offset: int
    period: int = 0
    until: Optional[int] = None

    def __contains__(self, t: int) -> bool:
        if t < self.offset or (self.until is not None and t > self.until):
            return False
        return t == self.offset if self.period == 0 else (t - self.offset) % self.period == 0

    def shift(self, k: int) -> "Lrp":
        """The lrp of the values t + k for t in this one."""
        return Lrp(self.offset + k, self.period, None if self.until is None else self.until + k)

    def __str__(self) -> str:
        if self.period == 0:
            return str(self.offset)
        s = f"{self.period}n" if self.offset == 0 else f"{self.offset} + {self.period}n"
        return s if self.until is None else f"{s} until {self.until}"


@dataclass(frozen=True, order=True)
class Atom:
    """`pred(args..., time)`; `time` is None for rigid predicates."""

    pred: str
    args: tuple[ObjTerm, ...] = ()
    time: Optional[Time] = None

    @property
    def arity(self) -> int:
        """Full arity, counting the time argument."""
        return len(self.args) + (0 if self.time is None else 1)

    @property
    def is_ground(self) -> bool:
        return all(isinstance(a, Const) for a in self.args) and (
            self.time is None or self.time.is_ground
        )

    def variables(self) -> Iterator[str]:
        for a in self.args:
            if isinstance(a, Var):
                yield a.name
        if self.time is not None and self.time.var is not None:
            yield self.time.var

    def object_variables(self) -> Iterator[str]:
        for a in self.args:
            if isinstance(a, Var):
                yield a.name

    def __str__(self) -> str:
        parts = [str(a) for a in self.args]
        if self.time is not None:
            parts.append(str(self.time))
        return f"{self.pred}({', '.join(parts)})" if parts else f"{self.pred}"


@dataclass(frozen=True, order=True)
class Literal:
    """An atom or its negation (`not A`)."""

    atom: Atom
    positive: bool = True

    def __str__(self) -> str:
        return str(self.atom) if self.positive else f"not {self.atom}"


@dataclass(frozen=True)
class Within:
    """A window as one literal's time constraint (issue 45.2): lo ≤ var − ref ≤ hi."""

    var: Time
    ref: Time
    lo: int
    hi: int

    def __str__(self) -> str:
        return f"{self.var} − {self.ref} ∈ [{self.lo},{self.hi}]"


@dataclass(frozen=True)
class Rule:
    """`head :- body.`; facts are rules with an empty body."""

    head: Atom
    body: tuple[Literal, ...] = ()
    span: Span = field(default=Span(), compare=False)

    def variables(self) -> set[str]:
        out = set(self.head.variables())
        for lit in self.body:
            out.update(lit.atom.variables())
        return out

    def __str__(self) -> str:
        if not self.body:
            return f"{self.head}."
        return f"{self.head} :- {', '.join(str(b) for b in self.body)}."


@dataclass(frozen=True)
class DelayDecl:
    """`#delay Pred = k.` (pattern None) or `#delay Pred(c1, _, T) = k.` (002_…txt §3, δ)."""

    pred: str
    delay: int
    pattern: Optional[tuple[Optional[str], ...]] = None  # object args: constant or None (any)
    span: Span = field(default=Span(), compare=False)

    def matches(self, args: tuple[str, ...]) -> bool:
        if self.pattern is None:
            return True
        return len(args) == len(self.pattern) and all(
            p is None or p == a for p, a in zip(self.pattern, args)
        )


@dataclass(frozen=True)
class Translation:
    """A rule written with metric operators and the plain rules it became (metric.py)."""

    text: str  # the rule as written
    span: Span
    rules: tuple[int, ...]  # indices into Program.rules (auxiliary definitions included)


@dataclass(frozen=True)
class Program:
    """A parsed program: rules, rigid facts, directives (before analysis)."""

    rules: tuple[Rule, ...] = ()
    facts: tuple[Rule, ...] = ()  # rigid and periodic (temporal) facts of the program
    query: Optional[Atom] = None
    query_span: Span = field(default=Span(), compare=False)
    delays: tuple[DelayDecl, ...] = ()
    domain: tuple[str, ...] = ()
    rigid: Mapping[str, int] = field(default_factory=dict)  # name -> arity
    rigid_spans: Mapping[str, Span] = field(default_factory=dict, compare=False)
    source: str = ""
    file: str = "<input>"
    translations: tuple[Translation, ...] = ()  # rules written with metric operators
    # the times of the temporal (periodic background) facts: index into `facts` -> lrp; the
    # fact's head has the lrp's first time as its time term
    fact_times: Mapping[int, Lrp] = field(default_factory=dict)

    def periodic_facts(self) -> dict[str, list[tuple[Atom, Lrp]]]:
        """The periodic background facts by predicate: (atom, lrp)."""
        out: dict[str, list[tuple[Atom, Lrp]]] = {}
        for i, lrp in self.fact_times.items():
            a = self.facts[i].head
            out.setdefault(a.pred, []).append((a, lrp))
        return out

    def written(self, index: int) -> str:
        """The rule at `index` as the user wrote it (a generated rule: its origin's text)."""
        for t in self.translations:
            if index in t.rules:
                return t.text
        return str(self.rules[index])


def atom_constants(atoms: Iterable[Atom]) -> set[str]:
    """Object constants occurring in the given atoms."""
    out: set[str] = set()
    for a in atoms:
        for t in a.args:
            if isinstance(t, Const):
                out.add(t.value)
    return out
