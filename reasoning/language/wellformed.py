"""Well-formedness of parsed programs: arities, safety, rigid predicates, directives.

`check_program` reports the first error in source order as a `ProgramError`.  With the
`SpanTable` of `parser.parse_program_with_spans` the error points at the offending atom
or term; without it, at the enclosing rule (or directive).  T-stratification and
termination are checked elsewhere.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from reasoning.language.errors import ProgramError, did_you_mean
from reasoning.language.syntax import Atom, Program, Span, Var

SpanTable = dict[tuple[str, int, int, int], Span]


# --------------------------------------------------------------------------- predicate sets


def idb_predicates(prog: Program) -> set[str]:
    """Predicates in the head of a rule with a non-empty body."""
    return {r.head.pred for r in prog.rules if r.body}


def periodic_predicates(prog: Program) -> dict[str, int]:
    """Temporal predicates given by facts of the program (periodic background predicates,
    003 §2's generalized relations): name -> arity (incl. time)."""
    out: dict[str, int] = {}
    for i in sorted(prog.fact_times):
        a = prog.facts[i].head
        if a.pred not in prog.rigid:
            out.setdefault(a.pred, a.arity)
    return out


def edb_predicates(prog: Program) -> dict[str, int]:
    """Temporal predicates that occur only in rule bodies and have no program facts (the
    stream's): name -> arity (incl. time)."""
    idb = idb_predicates(prog)
    periodic = periodic_predicates(prog)
    out: dict[str, int] = {}
    for rule in prog.rules:
        for lit in rule.body:
            a = lit.atom
            if a.pred not in idb and a.pred not in prog.rigid and a.pred not in periodic:
                out.setdefault(a.pred, a.arity)
    return out


def predicate_arities(prog: Program) -> dict[str, int]:
    """Arity (incl. time argument) of every predicate; the first occurrence wins."""
    out: dict[str, int] = dict(prog.rigid)
    for rule in (*prog.rules, *prog.facts):
        for atom in (rule.head, *(lit.atom for lit in rule.body)):
            out.setdefault(atom.pred, atom.arity)
    return out


# --------------------------------------------------------------------------- locations


@dataclass(frozen=True)
class _Occurrence:
    """One atom occurrence in a rule or fact, with its span-table key."""

    atom: Atom
    kind: str  # "rule" or "fact"
    index: int
    literal: int  # -1 = head


class _Locator:
    """Finds the span of an atom or term, falling back to the enclosing statement."""

    def __init__(self, prog: Program, spans: Optional[SpanTable]):
        self.prog = prog
        self.spans = spans or {}

    def statement(self, kind: str, index: int) -> Span:
        """Span of the whole rule, fact, query or delay."""
        if kind == "rule":
            return self.prog.rules[index].span
        if kind == "fact":
            return self.prog.facts[index].span
        if kind == "query":
            return self.prog.query_span
        return self.prog.delays[index].span

    def at(self, kind: str, index: int, literal: int = -1, arg: int = -1) -> Span:
        """Span of an atom (arg -1) or one of its arguments."""
        span = self.spans.get((kind, index, literal, arg))
        if span is None and arg != -1:
            span = self.spans.get((kind, index, literal, -1))
        if span is None:
            span = self.statement(kind, index)
        if span.line == 0:
            span = Span(self.prog.file)
        return span

    def occ(self, o: _Occurrence, arg: int = -1) -> Span:
        """Span of an occurrence (or one of its arguments)."""
        return self.at(o.kind, o.index, o.literal, arg)


def _occurrences(prog: Program) -> list[_Occurrence]:
    """All atom occurrences in rules and facts, in source order when spans are known."""
    out = []
    for kind, stmts in (("rule", prog.rules), ("fact", prog.facts)):
        for i, rule in enumerate(stmts):
            out.append(_Occurrence(rule.head, kind, i, -1))
            out.extend(_Occurrence(lit.atom, kind, i, j) for j, lit in enumerate(rule.body))
    return out


def _position(span: Span) -> tuple[int, int]:
    """Sort key of a span."""
    return (span.line, span.column)


def _line_ref(span: Span) -> str:
    """'line N' (or 'an earlier line' when unknown)."""
    return f"line {span.line}" if span.line else "an earlier line"


# --------------------------------------------------------------------------- checks


def check_program(prog: Program, spans: Optional[SpanTable] = None) -> None:
    """Raise `ProgramError` for the first (in source order) semantic error of `prog`."""
    loc = _Locator(prog, spans)
    occs = sorted(_occurrences(prog), key=lambda o: _position(loc.occ(o)))
    found: list[tuple[Span, str]] = [
        *_arity_errors(prog, occs, loc),
        *_rigid_errors(prog, occs, loc),
        *_safety_errors(prog, loc),
        *_fact_errors(prog, loc),
        *_periodic_errors(prog, occs, loc),
        *_query_errors(prog, occs, loc),
        *_delay_errors(prog, loc),
    ]
    if found:
        span, message = min(found, key=lambda e: _position(e[0]))
        raise ProgramError(message, span, prog.source)


def _arity_errors(prog: Program, occs: list[_Occurrence], loc: _Locator) -> Iterator[tuple[Span, str]]:
    """A non-rigid predicate used with two different arities (reported at the later use)."""
    first: dict[str, _Occurrence] = {}
    for o in occs:
        pred = o.atom.pred
        if pred in prog.rigid:
            continue
        f = first.setdefault(pred, o)
        if f.atom.arity != o.atom.arity:
            where = loc.occ(f)
            yield loc.occ(o), (
                f"predicate {pred} is used with arity {o.atom.arity} here, "
                f"but with arity {f.atom.arity} at {_line_ref(where)}, column {where.column}"
            )


def _rigid_errors(prog: Program, occs: list[_Occurrence], loc: _Locator) -> Iterator[tuple[Span, str]]:
    """Rigid predicates defined by rules, used with a time argument, or with a wrong arity."""
    for o in occs:
        pred = o.atom.pred
        if pred not in prog.rigid:
            continue
        declared = prog.rigid[pred]
        decl_at = _line_ref(prog.rigid_spans.get(pred, Span()))
        if o.kind == "rule" and o.literal == -1 and prog.rules[o.index].body:
            yield loc.occ(o), (
                f"{pred} is declared #rigid (at {decl_at}), so it cannot be defined by a rule; "
                "rigid predicates are given by facts"
            )
        elif o.atom.time is not None:
            yield loc.occ(o, len(o.atom.args)), (
                f"rigid predicate {pred}/{declared} is used with a time argument "
                f"(rigid predicates have none; declared at {decl_at})"
            )
        elif o.atom.arity != declared:
            yield loc.occ(o), (
                f"rigid predicate {pred}/{declared} is used with {_n_args(o.atom.arity)} "
                f"(declared at {decl_at})"
            )


def _n_args(n: int) -> str:
    """'1 argument' / 'n arguments'."""
    return f"{n} argument" if n == 1 else f"{n} arguments"


def _safety_errors(prog: Program, loc: _Locator) -> Iterator[tuple[Span, str]]:
    """A head variable that occurs in no body literal (positive or negative)."""
    for i, rule in enumerate(prog.rules):
        if not rule.body:
            continue
        body_vars = {v for lit in rule.body for v in lit.atom.variables()}
        for j, name in _head_variables(rule.head):
            if name not in body_vars:
                span = loc.at("rule", i, -1, j)
                yield span, _unsafe_message(name, span, prog.source)
                break


def _head_variables(head: Atom) -> Iterator[tuple[int, str]]:
    """(argument position, variable name) of each variable in the head."""
    for j, a in enumerate(head.args):
        if isinstance(a, Var):
            yield j, a.name
    if head.time is not None and head.time.var is not None:
        yield len(head.args), head.time.var


def _unsafe_message(name: str, span: Span, source: str) -> str:
    """Message for an unsafe head variable (mentions `_` for anonymous ones)."""
    what = "the anonymous variable _" if _span_text(span, source) == "_" else f"variable {name}"
    return f"{what} in the head does not occur in the body of the rule"


def _span_text(span: Span, source: str) -> str:
    """The source text covered by a one-line span ('' if unknown)."""
    lines = source.splitlines()
    if span.line < 1 or span.line > len(lines) or span.end_line != span.line:
        return ""
    return lines[span.line - 1][span.column - 1 : span.end_column - 1]


def _fact_errors(prog: Program, loc: _Locator) -> Iterator[tuple[Span, str]]:
    """Temporal facts in the program, and non-ground rigid facts."""
    stmts = [("fact", i, r) for i, r in enumerate(prog.facts)]
    stmts += [("rule", i, r) for i, r in enumerate(prog.rules) if not r.body]
    for kind, i, rule in stmts:
        head = rule.head
        if head.pred not in prog.rigid and kind == "fact" and head.time is not None and (
                head.time.var is not None or i in prog.fact_times):
            pass  # a periodic background fact (its time is an lrp; variables: below)
        elif head.pred not in prog.rigid:
            yield loc.at(kind, i), (
                f"facts of temporal predicates arrive on the stream, not in the program "
                f"({head.pred} is not declared #rigid)"
            )
            continue
        for j, name in _head_variables(head):
            yield loc.at(kind, i, -1, j), f"a fact must be ground, but {name} is a variable"
            break


def _periodic_errors(prog: Program, occs: list[_Occurrence],
                     loc: _Locator) -> Iterator[tuple[Span, str]]:
    """A periodic predicate (temporal, with program facts) that a rule also defines."""
    periodic = periodic_predicates(prog)
    for o in occs:
        if o.kind == "rule" and o.literal == -1 and o.atom.pred in periodic \
                and prog.rules[o.index].body:
            first = next(i for i in sorted(prog.fact_times)
                         if prog.facts[i].head.pred == o.atom.pred)
            yield loc.occ(o), (
                f"{o.atom.pred} is a periodic predicate (given by facts of the program, the "
                f"first at {_line_ref(prog.facts[first].span)}), so it cannot also be defined "
                f"by a rule")


def _query_errors(prog: Program, occs: list[_Occurrence], loc: _Locator) -> Iterator[tuple[Span, str]]:
    """`#query` on a predicate that is not IDB, or with the wrong arity."""
    q = prog.query
    if q is None:
        return
    qs = prog.query_span
    span = qs if qs is not None and qs.file == "--query" else loc.at("query", 0)
    if q.pred not in idb_predicates(prog):
        known = q.pred in prog.rigid or any(o.atom.pred == q.pred for o in occs)
        if known:
            yield span, (
                f"#query must name a predicate defined by rules (IDB); {q.pred} is only given by facts"
            )
        else:
            yield span, f"#query names {q.pred}, which no rule defines"
        return
    first = next(o for o in occs if o.atom.pred == q.pred)
    if first.atom.arity != q.arity:
        where = loc.occ(first)
        yield span, (
            f"#query uses {q.pred} with arity {q.arity}, "
            f"but {q.pred} has arity {first.atom.arity} (as first used at {_line_ref(where)})"
        )


def _delay_errors(prog: Program, loc: _Locator) -> Iterator[tuple[Span, str]]:
    """`#delay` on a rigid, IDB or unknown predicate, or with a wrong-size pattern."""
    idb = idb_predicates(prog)
    edb = edb_predicates(prog)
    for i, d in enumerate(prog.delays):
        span = loc.at("delay", i)
        if d.pred in prog.rigid:
            yield span, f"#delay applies to stream (EDB) predicates, but {d.pred} is #rigid"
        elif d.pred in periodic_predicates(prog):
            yield span, (f"#delay applies to stream (EDB) predicates, but {d.pred} is periodic "
                         f"(given by facts of the program, known in advance: never delayed)")
        elif d.pred in idb:
            yield span, f"#delay applies to stream (EDB) predicates, but {d.pred} is defined by rules (IDB)"
        elif d.pred not in edb:
            continue  # declared but unused: a warning (delay_warnings), its facts ignored
        elif d.pattern is not None and len(d.pattern) + 1 != edb[d.pred]:
            yield span, (
                f"#delay pattern for {d.pred} has {_n_args(len(d.pattern) + 1)}, "
                f"but {d.pred} has arity {edb[d.pred]}"
            )



def delay_warnings(prog: Program, spans: Optional[SpanTable] = None) -> list[tuple[Span, str]]:
    """`#delay` for a predicate no rule uses: allowed (a stream is often shared by several
    programs; its facts are accepted and ignored), but said, with a close name if any."""

    loc = _Locator(prog, spans)
    idb = idb_predicates(prog)
    edb = edb_predicates(prog)
    out = []
    seen: set[str] = set()
    for i, d in enumerate(prog.delays):
        if d.pred in edb or d.pred in idb or d.pred in prog.rigid or d.pred in seen:
            continue
        seen.add(d.pred)
        out.append((loc.at("delay", i),
                    f"#delay names {d.pred}, which no rule uses: its facts will be accepted "
                    f"and ignored{did_you_mean(d.pred, set(edb))}"))
    return out
