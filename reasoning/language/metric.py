"""Metric temporal operators of datalogMTL (004_…txt §2) on the integer timeline, translated
into plain Temporal Datalog before analysis (issue 12).

With a reference time term R (the operand's time term, `T`, `T+k` or `T-k`):

* `Boxminus[a,b] A(R)` (⊟): A at every tick of [R−b, R−a]; `Diamondminus[a,b] A(R)` (⟐):
  at some tick of it; `Boxplus` / `Diamondplus`: the same over [R+a, R+b];
* `A(R) Since[a,b] B(R)`: B at some s in [R−b, R−a] and A at every tick of (s, R].

A positive box is a conjunction (inlined), a positive diamond a disjunction (one rule per
case), `not` of a diamond a conjunction of negated atoms (inlined), `not` of a box one rule
per case, a positive Since one rule per s; `not Since` negates a disjunction of
conjunctions, so it becomes `not Aux(vars, R)` with Aux defined by one rule per s.  A rule
instance is valid only when every tick of the translation is a natural number (002 Def. 1),
exactly as if the rules had been written out by hand.  An unbounded interval would need a
recursive definition, on which pre-processing does not terminate (000 Example 7): refused.
"""
from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass, replace
from typing import Callable, Optional, Union

from reasoning.language.errors import ProgramError
from reasoning.language.syntax import NAME, Atom, Literal, Span, Time, Var

OPERATORS = {"Boxminus": "Boxminus", "⊟": "Boxminus", "Diamondminus": "Diamondminus",
             "⟐": "Diamondminus", "Boxplus": "Boxplus", "Diamondplus": "Diamondplus"}
AUX_PREFIX = "__"  # predicates named __… are generated; the parser refuses them in programs
MAX_RULES = 4096  # rules generated from one user rule (diamonds multiply)
MAX_LITERALS = 4096  # body literals of one generated rule (boxes add up)
# body literals of all the rules generated from one user rule: `Since[0,b]` is b+1 rules of
# up to b+1 literals, (b+1)(b+2)/2 in all — [0,2000] was 2 million and pre-processing ran for
# many minutes in silence (issue 44.4); checked before anything is generated
MAX_TRANSLATED = 65536


@dataclass(frozen=True)
class Operand:
    """An atom as written inside an operator (or a plain body literal), with its spans."""

    atom: Atom
    span: Span
    arg_spans: tuple[Span, ...] = ()


@dataclass(frozen=True)
class MetricLiteral:
    """`[not] Op[a,b] A` or `[not] A Since[a,b] B` as written (004 §2, integer points)."""

    op: str  # Boxminus, Diamondminus, Boxplus, Diamondplus or Since
    lo: int
    hi: int
    operands: tuple[Operand, ...]  # (A,) or (A, B) for Since
    positive: bool
    span: Span  # the whole operator expression
    text: str  # the expression as written (without `not`)

    @property
    def reference(self) -> Time:
        """R, the time term the window is relative to."""
        return self.operands[0].atom.time  # type: ignore[return-value]


@dataclass(frozen=True)
class PlainLiteral:
    """A body literal without operator."""

    literal: Literal
    operand: Operand


BodyItem = Union[PlainLiteral, MetricLiteral]


@dataclass(frozen=True)
class GenLiteral:
    """A literal of a generated rule and the user's text it comes from."""

    literal: Literal
    span: Span
    arg_spans: tuple[Span, ...] = ()


@dataclass(frozen=True)
class GenRule:
    """A generated rule: head, body, and the spans its literals point at."""

    head: Atom
    body: tuple[GenLiteral, ...]
    aux: bool = False  # defines an auxiliary predicate (not Since)


# --------------------------------------------------------------------------- rendering

Piece = Union[str, tuple[str, int]]  # text, ("a", i): object argument i, ("t", d): time + d
_TEMPLATES: dict[str, tuple[Piece, ...]] = {}  # aux name -> how to print it (content-addressed)
_NAMES: dict[str, tuple[str, ...]] = {}  # aux name -> its variables as written, time last


def render_aux(pred: str, args: list[str], time: Callable[[int], str]) -> Optional[str]:
    """`A(wt1, 5) Since[1,2] B(wt1, 5)` for an instance of an auxiliary predicate (None: not one)."""
    pieces = _TEMPLATES.get(pred)
    if pieces is None:
        return None
    return "".join(p if isinstance(p, str) else (args[p[1]] if p[0] == "a" else time(p[1]))
                   for p in pieces)


_PARSE: dict[str, "re.Pattern[str]"] = {}
_TERM = r'("(?:[^"\\]|\\.)*"|[^,()" ]+)'
_TIME = rf"(-?[0-9]+|{NAME}(?:[+-][0-9]+)?)"


def parse_aux(text: str) -> Optional[tuple[str, tuple[str, ...], str]]:
    """The inverse of render_aux: (auxiliary predicate, its argument terms as printed, its
    time term as printed) of `A(wt1, 5) Since[1,2] B(wt1, 5)`, None if no auxiliary
    predicate prints so (consumers of printed hypotheses, e.g. confidence.py)."""
    for name, pieces in _TEMPLATES.items():
        rx = _PARSE.get(name)
        if rx is None:
            parts = []
            for p in pieces:
                parts.append(re.escape(p) if isinstance(p, str) else (_TERM if p[0] == "a"
                                                                        else _TIME))
            rx = _PARSE[name] = re.compile("".join(parts))
        m = rx.fullmatch(text)
        if m is None:
            continue
        args: dict[int, str] = {}
        times: set[str] = set()
        for p, got in zip([p for p in pieces if not isinstance(p, str)], m.groups()):
            if p[0] == "a":
                if args.setdefault(p[1], got) != got:
                    break
            else:
                times.add(_shift_text(got, -p[1]))
        else:
            if len(times) == 1:
                n = len(_NAMES.get(name, ())) - 1
                if sorted(args) == list(range(n)):
                    return name, tuple(args[i] for i in range(n)), times.pop()
    return None


WINDOW_OPS = "Diamondminus|Diamondplus"  # the diamonds a rule's window may be lifted from
_WINDOW = re.compile(rf"({WINDOW_OPS})\[([0-9]+),([0-9]+)\] ")


def window_prefix(op: str, lo: int, hi: int) -> str:
    """A diamond as printed before its operand: `Diamondminus[0,30] `."""
    return f"{op}[{lo},{hi}] "


def parse_window(text: str) -> Optional[tuple[str, int, int, str]]:
    """(operator, lo, hi, the operand's text) of a text that starts with a diamond as
    window_prefix prints it, None for any other text."""
    m = _WINDOW.match(text)
    return None if m is None else (m.group(1), int(m.group(2)), int(m.group(3)),
                                   text[m.end():])


def lifted_window(pred: str) -> Optional[tuple[str, int, int]]:
    """(operator, lo, hi) of an auxiliary predicate that holds a positive diamond lifted
    out of its rule (Translator._aux_window), None for any other predicate."""
    pieces = _TEMPLATES.get(pred)
    if not pieces or not isinstance(pieces[0], str):
        return None
    w = parse_window(pieces[0])
    return None if w is None else w[:3]


def window_ticks(op: str, lo: int, hi: int, t: int) -> range:
    """The ticks a diamond `op[lo,hi]` at reference time t looks at: [t−hi, t−lo] back,
    [t+lo, t+hi] forward."""
    return range(t - hi, t - lo + 1) if op == "Diamondminus" else range(t + lo, t + hi + 1)


def window_bounds(op: str, t: int, first: int, last: int) -> tuple[int, int]:
    """The inverse of window_ticks: (lo, hi) of the diamond at t looking at first..last."""
    return (t - last, t - first) if op == "Diamondminus" else (first - t, last - t)


def aux_names(pred: str) -> Optional[tuple[str, ...]]:
    """The variable names of an auxiliary predicate's arguments (time last)."""
    return _NAMES.get(pred)


def readable(text: str) -> str:
    """`text` with each auxiliary predicate (name, or atom `name(args, time)`) replaced by the
    operator it stands for (messages of the analysis and of pre-processing)."""
    def sub(m: "re.Match[str]") -> str:
        name = m.group(1)
        names = _NAMES.get(name)
        if names is None:
            return m.group(0)
        args = m.group(2).split(", ") if m.group(2) is not None else list(names)
        if len(args) != len(names):
            return m.group(0)
        shown = render_aux(name, args[:-1], lambda d: _shift_text(args[-1], d))
        return f"({shown})"
    return _AUX_ATOM.sub(sub, text)


_AUX_ATOM = re.compile("(" + re.escape(AUX_PREFIX) + r"[A-Za-z0-9_]+)(?:\(([^()]*)\))?")
_TIME_TEXT = re.compile(rf"^({NAME})?([+-]?[0-9]+)?$")


def _shift_text(time: str, d: int) -> str:
    """A printed time term plus d (`T+1` + 1 = `T+2`, `5` + 1 = `6`)."""
    m = _TIME_TEXT.match(time.replace(" ", ""))
    if m is None:
        return f"{time}{d:+d}" if d else time
    return str(Time(m.group(1), int(m.group(2) or 0) + d))


def aux_template(pred: str) -> Optional[tuple[Piece, ...]]:
    """The printing template of an auxiliary predicate (columnar/render/)."""
    return _TEMPLATES.get(pred)


def _atom_pieces(atom: Atom, index: dict[str, int]) -> list[Piece]:
    out: list[Piece] = [atom.pred + "("]
    for t in atom.args:
        out.append(("a", index[t.name]) if isinstance(t, Var) else str(t))
        out.append(", ")
    out.append(("t", atom.time.offset))  # type: ignore[union-attr]
    out.append(")")
    return out


# --------------------------------------------------------------------------- translation


def _window(m: MetricLiteral, atom: Atom) -> list[Atom]:
    """The operand at each tick of the window, nearest first."""
    sign = 1 if m.op.endswith("plus") else -1
    return [replace(atom, time=atom.time.shift(sign * d)) for d in range(m.lo, m.hi + 1)]  # type: ignore[union-attr]


def _since_cases(m: MetricLiteral, a: Operand, b: Operand) -> list[list[GenLiteral]]:
    """One conjunction per s: B(R−s), A(R−s+1), …, A(R)."""
    out = []
    for s in range(m.lo, m.hi + 1):
        case = [_gen(replace(b.atom, time=b.atom.time.shift(-s)), True, b)]  # type: ignore[union-attr]
        case += [_gen(replace(a.atom, time=a.atom.time.shift(-j)), True, a)  # type: ignore[union-attr]
                 for j in range(s - 1, -1, -1)]
        out.append(case)
    return out


def _gen(atom: Atom, positive: bool, o: Operand) -> GenLiteral:
    return GenLiteral(Literal(atom, positive), o.span, o.arg_spans)


class Translator:
    """Translates the rules of one program; remembers the auxiliary predicates it made."""

    def __init__(self, source: str, windows: bool = False):
        self.source = source
        # windows as one literal (issue 45.2): every positive diamond is lifted, and
        # pre-processing resolves its auxiliary atom as the operand at a time variable
        # constrained to the window (preprocess.Preprocessor._window)
        self.windows = windows
        self.aux_rules: dict[str, list[GenRule]] = {}
        self.aux_spans: dict[str, Span] = {}  # where each was first written

    def cases(self, item: BodyItem) -> list[list[GenLiteral]]:
        """The disjunction of conjunctions a body literal stands for."""
        if isinstance(item, PlainLiteral):
            o = item.operand
            return [[GenLiteral(item.literal, o.span, o.arg_spans)]]
        m = item
        if m.hi - m.lo + 1 > MAX_LITERALS:
            raise ProgramError(f"the window of {m.op}[{m.lo},{m.hi}] has {m.hi - m.lo + 1} ticks; "
                               f"at most {MAX_LITERALS} are translated (one atom or rule "
                               f"each): narrow the interval", m.span, self.source)
        if m.op == "Since":
            size = (m.hi + 1) * (m.hi + 2) // 2 - m.lo * (m.lo + 1) // 2
            if size > MAX_TRANSLATED:
                raise ProgramError(
                    f"{m.op}[{m.lo},{m.hi}] translates into {m.hi - m.lo + 1} rules of up to "
                    f"{m.hi + 1} literals, {size} in all; at most {MAX_TRANSLATED} are "
                    f"translated (the window grows as its square): narrow the interval",
                    m.span, self.source)
            if m.positive:
                return _since_cases(m, *m.operands)
            return [[GenLiteral(Literal(self._aux(m), False), m.span)]]
        o = m.operands[0]
        atoms = _window(m, o.atom)
        box = m.op.startswith("Box")
        if box == m.positive:  # a conjunction: Box, or not Diamond
            return [[_gen(x, m.positive, o) for x in atoms]]
        return [[_gen(x, m.positive, o)] for x in atoms]  # Diamond, or not Box

    def _aux(self, m: MetricLiteral) -> Atom:
        """`Aux(vars, R)` for `A Since B` (negated, or lifted: _lift), defined by one rule
        per s."""
        a, b = m.operands
        names = list(dict.fromkeys([*a.atom.object_variables(), *b.atom.object_variables()]))
        index = {v: i for i, v in enumerate(names)}
        base = Time(m.reference.var, 0)
        ua = replace(a.atom, time=base)
        ub = replace(b.atom, time=base)
        pieces = (*_atom_pieces(ua, index), f" Since[{m.lo},{m.hi}] ", *_atom_pieces(ub, index))
        sm = replace(m, positive=True, operands=(replace(a, atom=ua), replace(b, atom=ub)))
        return self._define(f"{a.atom.pred}_Since{m.lo}_{m.hi}_{b.atom.pred}", pieces, names,
                            m, lambda head: [GenRule(head, tuple(c), aux=True)
                                             for c in _since_cases(sm, *sm.operands)])

    def _aux_window(self, m: MetricLiteral) -> Atom:
        """`Aux(vars, R)` for a positive diamond lifted out of its rule (_lift), defined by
        one rule per tick of the window."""
        o = m.operands[0]
        names = list(dict.fromkeys(o.atom.object_variables()))
        ua = replace(o.atom, time=Time(m.reference.var, 0))
        pieces = (window_prefix(m.op, m.lo, m.hi), *_atom_pieces(ua, {v: i for i, v in
                                                                enumerate(names)}))
        return self._define(f"{m.op}{m.lo}_{m.hi}_{o.atom.pred}", pieces, names, m,
                            lambda head: [GenRule(head, (_gen(x, True, o),), aux=True)
                                          for x in _window(m, ua)])

    def _define(self, stem: str, pieces: tuple, names: list, m: MetricLiteral,
                rules: Callable[[Atom], list]) -> Atom:
        """The auxiliary predicate `__<stem>_<hash>(names, T)` printed as `pieces`, defined
        by rules(head) once; its atom at the operator's reference time."""
        digest = hashlib.sha256(repr((pieces, len(names))).encode()).hexdigest()[:8]
        name = f"{AUX_PREFIX}{stem}_{digest}"
        _TEMPLATES[name] = tuple(_merge(pieces))
        _NAMES[name] = (*names, m.reference.var)  # type: ignore[arg-type]
        head = Atom(name, tuple(Var(v) for v in names), Time(m.reference.var, 0))
        if name not in self.aux_rules:
            self.aux_spans[name] = m.span
            self.aux_rules[name] = rules(head)
        return replace(head, time=m.reference)

    def _lift(self, item: BodyItem) -> BodyItem:
        """A disjunctive operator whose every case binds all its variables (a positive
        diamond; a positive Since whose left side's variables its right side binds, or
        whose window starts at 1 or later) as one literal on an auxiliary predicate; any
        other item as it is."""
        if not isinstance(item, MetricLiteral) or not item.positive or item.hi == item.lo:
            return item
        m = item
        if m.op.startswith("Diamond"):
            atom = self._aux_window(m)
        elif m.op == "Since" and (m.lo >= 1 or set(m.operands[0].atom.object_variables())
                                  <= set(m.operands[1].atom.object_variables())):
            atom = self._aux(m)
        else:
            return item
        return PlainLiteral(Literal(atom, True), Operand(atom, m.span))

    def _size(self, items: list[BodyItem]):
        """(cases per item, rules, body literals in all, the item that passes MAX_RULES)."""
        alts = []
        total = 1
        over = None
        for item in items:
            c = self.cases(item)
            total *= len(c)
            if total > MAX_RULES and over is None:
                over = item
            alts.append(c)
        # the literals of every combination, counted before any is made: each case of item
        # i occurs in (the product of the other items' case counts) combinations
        lits = sum(sum(len(c) for c in a) * (total // len(a)) for a in alts if a) \
            if over is None else 0
        return alts, total, lits, over

    def rule(self, head: Atom, items: list[BodyItem], span: Span) -> list[GenRule]:
        """The plain rules of `head :- items` (one per combination of cases).  A rule whose
        combinations would pass the budgets (diamonds multiply) keeps each disjunctive
        operator it can as one literal on an auxiliary predicate (_lift, issue 45), which
        modular evaluation keeps as a derived literal (modular.py); other rules are
        translated as written, unchanged."""
        if self.windows:
            items = [self._lift(it) if isinstance(it, MetricLiteral) and
                     it.op.startswith("Diamond") else it for it in items]
        alts, total, lits, over = self._size(items)
        if over is not None or lits > MAX_TRANSLATED:
            lifted = [self._lift(it) for it in items]
            if any(a is not b for a, b in zip(lifted, items)):
                items = lifted
                alts, total, lits, over = self._size(items)
        if over is not None:
            where = over.span if isinstance(over, MetricLiteral) else span
            raise ProgramError(
                f"this rule translates into more than {MAX_RULES} rules (each diamond, "
                f"Since and negated box is a disjunction, and several multiply): "
                f"narrow the intervals or split the rule", where, self.source)
        if lits > MAX_TRANSLATED:
            where = next((it.span for it in items if isinstance(it, MetricLiteral)), span)
            raise ProgramError(
                f"this rule translates into {total} rules with {lits} body literals in all; at "
                f"most {MAX_TRANSLATED} are translated: narrow the intervals or split the rule",
                where, self.source)
        out = []
        for combo in itertools.product(*alts):
            body = list({g.literal: g for case in combo for g in case}.values())
            if len(body) > MAX_LITERALS:
                raise ProgramError(f"this rule translates into a rule with more than "
                                   f"{MAX_LITERALS} body literals: narrow the intervals",
                                   span, self.source)
            self._check_bound(head, body, items)
            out.append(GenRule(head, tuple(body)))
        return out

    def _check_bound(self, head: Atom, body: list[GenLiteral], items: list[BodyItem]) -> None:
        """A head variable written in the body but missing from one case: it occurs only in
        the left side of a `Since[0,b]`, whose case s = R checks the right side alone."""
        have = {v for g in body for v in g.literal.atom.variables()}
        for v in head.variables():
            if v in have:
                continue
            for m in items:
                if isinstance(m, MetricLiteral) and m.op == "Since" and m.lo == 0 and \
                        v in set(m.operands[0].atom.variables()):
                    raise ProgramError(
                        f"variable {v} of the head is bound only by the left side of "
                        f"Since[0,{m.hi}], which the case s = {m.reference} does not check "
                        f"({m.operands[1].atom.pred} alone makes it true there): bind {v} "
                        f"elsewhere in the body or use a lower bound of at least 1",
                        m.span, self.source)


def _merge(pieces) -> list[Piece]:
    """Adjacent texts joined."""
    out: list[Piece] = []
    for p in pieces:
        if isinstance(p, str) and out and isinstance(out[-1], str):
            out[-1] += p
        else:
            out.append(p)
    return out


def check_operand(o: Operand, op: str, rigid, source: str) -> None:
    """An operand must be a temporal atom whose time term contains a variable."""
    a = o.atom
    if a.pred in rigid or a.time is None:
        raise ProgramError(f"{op} applies to temporal predicates, but {a.pred} is #rigid "
                           f"(it has no time argument)", o.span, source)
    if a.time.var is None:
        span = o.arg_spans[-1] if o.arg_spans else o.span
        raise ProgramError(f"the time argument under {op} must be a variable or T+k / T-k "
                           f"(the window is relative to it), not a timestamp", span, source)

