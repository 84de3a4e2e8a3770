"""Parser of the surface syntax of hypo programs (Temporal Datalog with negation).

Parsing happens in two steps: lark (grammar.lark, LALR) turns the text into a tree, then
the tree is turned into the IR of `syntax.py`.  The second step sorts every argument: the
last argument of a temporal predicate is a time term, all others (and all arguments of
`#rigid` predicates) are object terms.  `#rigid` declarations are collected first, so they
may appear anywhere in the file.

Every error is a `ProgramError` pointing at the offending token.  Spans of atoms and
terms are returned in a `SpanTable` by `parse_program_with_spans`, keyed by
`(kind, index, literal, arg)`:

* kind ``"rule"`` (index into `Program.rules`), ``"fact"`` (index into `Program.facts`),
  ``"query"`` (index 0) or ``"delay"`` (index into `Program.delays`);
* literal: -1 for the head (facts, query and delays use -1), else the body position;
* arg: -1 for the whole atom, else the argument position (the time term is last, at
  position `len(atom.args)`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Mapping, Optional

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from reasoning.language import delaylines
from reasoning.language.errors import ProgramError
from reasoning.language.grammar_tables import load_parser
from reasoning.language.metric import (AUX_PREFIX, OPERATORS, BodyItem, GenRule, MetricLiteral, Operand,
                     PlainLiteral, Translator, check_operand)
from reasoning.language.syntax import (Atom, Const, DelayDecl, Literal, Lrp, Program, Rule, Span, Time, Translation,
                     Var)

SpanTable = dict[tuple[str, int, int, int], Span]


# How terminals are named in "expected ..." messages; None hides a synonym.
_TERMINAL_NAMES = {
    "NAME": "identifier",
    "INT": "natural number",
    "STRING": "string",
    "$END": "end of input",
    "_ARROW": '"->"',
    "_AND": None,  # shown as ","
    "_NEG": None,  # shown as "not"
    "UNARY_OP": None,  # metric operators are not suggested where an atom is expected
    "SINCE": None,
    "INFINITY": '"inf"',
}
_DIRECTIVES = ("#query", "#domain", "#delay", "#rigid")


@functools.lru_cache(maxsize=1)
def _lark() -> Lark:
    """The (immutable, cached) LALR parser of grammar.lark (from its tables generated ahead
    when they are current: grammar_tables.py)."""
    return load_parser()


# --------------------------------------------------------------------------- public API


def parse_program(text: str, file: str = "<input>") -> Program:
    """Parse a program text into a `Program` (raises `ProgramError`)."""
    return parse_program_with_spans(text, file)[0]


def parse_program_with_spans(text: str, file: str = "<input>",
                             windows: bool = False) -> tuple[Program, SpanTable]:
    """Parse a program text; also return the spans of its atoms and terms.  windows: every
    positive diamond lifted to one literal on an auxiliary predicate (issue 45.2)."""
    fast = delaylines.scan(text)  # many per-instance #delay lines: read without lark
    if fast:
        try:
            tree = _lark().parse(delaylines.blank(text, fast), start="start")
        except UnexpectedInput:
            tree = None  # the error is reported from the text as written, below
        if tree is not None and not delaylines.spanned(tree, fast):
            return _ProgramBuilder(text, file, windows).build(tree, fast)
    tree = _parse_tree(text, file, "start")
    return _ProgramBuilder(text, file, windows).build(tree)


def parse_atom(text: str, file: str = "<arg>", rigid: Optional[Mapping[str, int]] = None) -> Atom:
    """Parse one atom such as `Hot(wt1, 1)` or `OK(X, T)` (a trailing `.` is allowed)."""
    return _parse_single_atom(text, file, rigid)[0]


def parse_fact(text: str, file: str = "<arg>", rigid: Optional[Mapping[str, int]] = None) -> Atom:
    """Parse one ground atom (a stream fact); variables are an error."""
    atom, spans = _parse_single_atom(text, file, rigid)
    for term, span in zip(_atom_terms(atom), spans):
        if isinstance(term, Var) or (isinstance(term, Time) and term.var is not None):
            raise ProgramError(f"a fact must be ground, but {_term_text(term)} is a variable", span, text)
    return atom


# --------------------------------------------------------------------------- lark step


def _parse_tree(text: str, file: str, start: str) -> Tree:
    """Run lark, translating its exceptions into `ProgramError`."""
    try:
        return _lark().parse(text, start=start)
    except UnexpectedInput as err:
        raise _syntax_error(err, text, file) from None


def _syntax_error(err: UnexpectedInput, text: str, file: str) -> ProgramError:
    """A readable `ProgramError` for a lark parse error."""
    if isinstance(err, UnexpectedToken):
        return _unexpected_token_error(err, text, file)
    if isinstance(err, UnexpectedCharacters):
        return _unexpected_char_error(err, text, file)
    span = Span(file, err.line or 1, err.column or 1, err.line or 1, (err.column or 1) + 1)
    return ProgramError("syntax error", span, text)


def _unexpected_token_error(err: UnexpectedToken, text: str, file: str) -> ProgramError:
    """Error for a token (or the end of input) that the grammar does not allow here."""
    tok = err.token
    expected = _expected_names(err)
    if tok.type == "$END":
        line, col = _end_position(tok)
        span = Span(file, line, col, line, col + 1)
        return ProgramError(f"unexpected end of input; {expected}", span, text)
    span = _token_span(tok, file)
    return ProgramError(f'unexpected "{tok.value}"; {expected}{_metric_hint(err)}', span, text)


def _metric_hint(err: UnexpectedToken) -> str:
    """Why a metric operator was not accepted: nested, or `not` inside it."""
    history = getattr(err, "token_history", None) or []
    prev = str(history[-1]) if history else ""
    if err.token.value == "[" and (prev in OPERATORS or prev == "Since"):
        return (f" ({prev} cannot be used here: metric operators apply to an atom and cannot "
                f"be nested; define the inner window by a rule of its own)")
    if prev == "not" and err.token.type == "NAME":
        return " (`not` goes in front of a metric operator: not Boxminus[a,b] A(X, T))"
    return ""


def _unexpected_char_error(err: UnexpectedCharacters, text: str, file: str) -> ProgramError:
    """Error for text that no terminal matches: bad character, string or directive."""
    char = err.char
    span = Span(file, err.line, err.column, err.line, err.column + 1)
    if char == '"':
        return ProgramError("unterminated string (missing closing \")", span, text)
    if char == "#":
        word = _word_at(text, err.pos_in_stream)
        span = Span(file, err.line, err.column, err.line, err.column + len(word))
        known = ", ".join(_DIRECTIVES)
        return ProgramError(f"unknown directive {word} (expected one of: {known})", span, text)
    return ProgramError(f"invalid character {char!r}; {_expected_names(err)}", span, text)


def _expected_names(err: UnexpectedInput) -> str:
    """`expected one of: ...` in the language's own spelling."""
    names = _accepted_terminals(err)
    shown = sorted({_terminal_display(n) for n in names} - {None})
    if not shown:
        return "expected nothing more here"
    if len(shown) == 1:
        return f"expected {shown[0]}"
    return "expected one of: " + ", ".join(shown)


def _accepted_terminals(err: UnexpectedInput) -> set[str]:
    """Terminals the parser really accepts at the error (LALR lookaheads over-approximate)."""
    ip = getattr(err, "interactive_parser", None)
    if ip is not None:
        try:
            return set(ip.accepts())
        except Exception:  # pragma: no cover - best effort only
            pass
    return set(getattr(err, "expected", None) or getattr(err, "allowed", None) or ())


@functools.lru_cache(maxsize=None)
def _terminal_display(name: str) -> Optional[str]:
    """Human spelling of a lark terminal name, e.g. `_IF` -> `":-"`."""
    if name in _TERMINAL_NAMES:
        return _TERMINAL_NAMES[name]
    for term in _lark().terminals:
        if term.name == name and term.pattern.type == "str":
            return f'"{term.pattern.value}"'
    return name


def _end_position(tok: Token) -> tuple[int, int]:
    """Line and column just after the last token (where the input ended)."""
    if tok.end_line is not None and tok.end_column is not None and tok.end_line > 0:
        return tok.end_line, tok.end_column
    return max(tok.line or 1, 1), max(tok.column or 1, 1)


def _word_at(text: str, pos: int) -> str:
    """The `#word` starting at `pos`."""
    end = pos + 1
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    return text[pos:end]


def _token_span(tok: Token, file: str) -> Span:
    """The span of one token."""
    return Span(file, tok.line, tok.column, tok.end_line, tok.end_column)


def _meta_span(tree: Tree, file: str) -> Span:
    """The span of a tree node (propagate_positions)."""
    m = tree.meta
    return Span(file, m.line, m.column, m.end_line, m.end_column)


# --------------------------------------------------------------------------- raw atoms


@dataclass(frozen=True)
class _RawTerm:
    """An unsorted argument: kind is name, plus, minus, int, negint or string."""

    kind: str  # (or lrp: `b + a n`, text is the name written for n)
    text: str  # identifier, digits, or the unescaped string content
    offset: int
    span: Span
    period: int = 0  # of an lrp


@dataclass(frozen=True)
class _RawAtom:
    """An atom as written, before argument sorting."""

    pred: str
    terms: tuple[_RawTerm, ...]
    span: Span


def _raw_atom(tree: Tree, file: str, source: str) -> _RawAtom:
    """Turn an `atom` / `bare_atom` tree into a `_RawAtom`."""
    name = tree.children[0]
    terms = tuple(_raw_term(t, file, source) for t in tree.children[1:])
    return _RawAtom(str(name), terms, _meta_span(tree, file))


MAX_DIGITS = 18  # every number of a program (timestamp, offset, δ, arity) is below 10^18


def _number(text: str, span: Span, source: str, what: str) -> int:
    """A natural number of the program text, refused past MAX_DIGITS digits (times, offsets
    and delays are added in int64 columns; Python refuses int() past 4 300 digits)."""
    digits = str(text).lstrip("0")
    if len(digits) > MAX_DIGITS:
        shown = digits[:12] + "…" if len(digits) > 12 else digits
        raise ProgramError(f"{what} {shown} is out of range ({len(digits)} digits; numbers in a "
                           f"program have at most {MAX_DIGITS})", span, source)
    return int(text)


def _raw_term(tree: Tree, file: str, source: str) -> _RawTerm:
    """Turn a `*_term` tree into a `_RawTerm`."""
    kind = tree.data.removesuffix("_term")
    toks = tree.children
    span = _meta_span(tree, file)
    if kind in ("plus", "minus"):
        k = _number(toks[1], span, source, "time offset")
        return _RawTerm(kind, str(toks[0]), k if kind == "plus" else -k, span)
    if kind == "string":
        return _RawTerm(kind, _unescape(toks[0], file, source), 0, span)
    if kind == "lrp":  # `a n`, `b + a n` or `a n + b`
        names = [t for t in toks if t.type == "NAME"]
        ints = [_number(t, span, source, "time") for t in toks if t.type == "INT"]
        if toks[1].type == "NAME":  # a n [+ b]
            period, offset = ints[0], (ints[1] if len(ints) > 1 else 0)
        else:  # b + a n
            offset, period = ints
        return _RawTerm(kind, str(names[0]), offset, span, period)
    return _RawTerm(kind, str(toks[0]), 0, span)


def _unescape(tok: Token, file: str, source: str) -> str:
    """The content of a double-quoted string token (escapes `\\"` and `\\\\`)."""
    body = str(tok)[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            nxt = body[i + 1]
            if nxt not in ('"', "\\"):
                col = tok.column + 1 + i
                span = Span(file, tok.line, col, tok.line, col + 2)
                msg = f'unknown escape sequence \\{nxt} in string (only \\" and \\\\ are allowed)'
                raise ProgramError(msg, span, source)
            out.append(nxt)
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _is_variable_name(name: str) -> bool:
    """Variables start with an upper-case letter or `_`."""
    return name[0].isupper() or name[0] == "_"


# --------------------------------------------------------------------------- sorting


class _Scope:
    """Variable sorts and anonymous-variable names within one rule, query or delay."""

    def __init__(self, source: str, reserved: set[str]):
        self.source = source
        self.reserved = reserved
        self.sorts: dict[str, tuple[str, Span]] = {}
        self.counter = 0

    def fresh(self) -> str:
        """A new name `_1`, `_2`, ... for an anonymous variable."""
        while True:
            self.counter += 1
            name = f"_{self.counter}"
            if name not in self.reserved:
                return name

    def use(self, name: str, sort: str, span: Span) -> None:
        """Record that variable `name` is used with `sort` ("object" or "time")."""
        first = self.sorts.setdefault(name, (sort, span))
        if first[0] != sort:
            where = f"line {first[1].line}, column {first[1].column}"
            msg = (
                f"variable {name} is used both as an object and as a time variable "
                f"(here as {_sort_phrase(sort)}, first as {_sort_phrase(first[0])} at {where})"
            )
            raise ProgramError(msg, span, self.source)


def _sort_phrase(sort: str) -> str:
    """'an object' / 'a time variable'."""
    return "an object" if sort == "object" else "a time variable"


def _reserved_names(atoms: list[_RawAtom]) -> set[str]:
    """Variable names written in the atoms (anonymous names must avoid them)."""
    return {t.text for a in atoms for t in a.terms if t.kind in ("name", "plus", "minus")}


def _object_term(term: _RawTerm, scope: _Scope) -> Var | Const:
    """Sort a term in an object position."""
    if term.kind in ("plus", "minus"):
        raise ProgramError("time term in an object position", term.span, scope.source)
    if term.kind == "lrp":
        raise ProgramError("a periodic time (b + a n) is the time argument of a fact, not an "
                           "object", term.span, scope.source)
    if term.kind == "negint":
        return Const("-" + term.text)
    if term.kind == "name" and _is_variable_name(term.text):
        name = scope.fresh() if term.text == "_" else term.text
        scope.use(name, "object", term.span)
        return Var(name)
    return Const(term.text)


def _time_term(term: _RawTerm, pred: str, arity: int, scope: _Scope) -> Time:
    """Sort the last argument of a temporal predicate."""
    if term.kind == "lrp":
        raise ProgramError(f"a periodic time ({term.offset} + {term.period}n) may only be "
                           f"written in a fact of the program (not in a rule, query, "
                           f"directive or stream)", term.span, scope.source)
    if term.kind == "int":
        return Time(None, _number(term.text, term.span, scope.source, "timestamp"))
    if term.kind == "negint":
        msg = f"negative timestamp -{term.text}: timestamps are natural numbers"
        raise ProgramError(msg, term.span, scope.source)
    if term.kind in ("name", "plus", "minus") and _is_variable_name(term.text):
        name = scope.fresh() if term.text == "_" else term.text
        scope.use(name, "time", term.span)
        return Time(name, term.offset)
    msg = (
        "expected a time term (natural number, variable, or T+k) as the last argument "
        f"of temporal predicate {pred}/{arity}"
    )
    raise ProgramError(msg, term.span, scope.source)


def _is_rigid_use(raw: _RawAtom, rigid: Mapping[str, int]) -> bool:
    """Whether the atom's arguments are all object terms (a use of a `#rigid` predicate).

    A rigid atom with one argument too many whose last argument looks like a time
    term is sorted as temporal, so that the well-formedness check can report
    "rigid predicate used with a time argument".
    """
    if raw.pred not in rigid:
        return False
    n = len(raw.terms)
    if n == rigid[raw.pred] + 1 and raw.terms[-1].kind in ("int", "negint", "plus", "minus"):
        return False
    if n == rigid[raw.pred] + 1 and raw.terms[-1].kind == "name":
        return not _is_variable_name(raw.terms[-1].text)
    return True


def _sort_atom(raw: _RawAtom, rigid: Mapping[str, int], scope: _Scope) -> Atom:
    """Sort the arguments of a raw atom into object terms and a time term."""
    if _is_rigid_use(raw, rigid):
        return Atom(raw.pred, tuple(_object_term(t, scope) for t in raw.terms), None)
    if not raw.terms:
        msg = f"temporal predicate {raw.pred} has no arguments: its last argument must be a time term"
        raise ProgramError(msg, raw.span, scope.source)
    args = tuple(_object_term(t, scope) for t in raw.terms[:-1])
    time = _time_term(raw.terms[-1], raw.pred, len(raw.terms), scope)
    return Atom(raw.pred, args, time)


def _record_spans(spans: SpanTable, key: tuple[str, int, int], raw: _RawAtom) -> None:
    """Store the spans of an atom and of each of its arguments."""
    kind, index, lit = key
    spans[(kind, index, lit, -1)] = raw.span
    for j, term in enumerate(raw.terms):
        spans[(kind, index, lit, j)] = term.span


def _atom_terms(atom: Atom) -> list[Var | Const | Time]:
    """The arguments of an atom in written order, time term last."""
    return [*atom.args, *([atom.time] if atom.time is not None else [])]


def _term_text(term: Var | Const | Time) -> str:
    """The variable name of a Var or a non-ground Time, else how the term is written."""
    if isinstance(term, Time) and term.var is not None:
        return term.var
    return str(term)


def _parse_single_atom(
    text: str, file: str, rigid: Optional[Mapping[str, int]]
) -> tuple[Atom, list[Span]]:
    """Parse and sort one atom; return it with the spans of its arguments."""
    tree = _parse_tree(text, file, "single_atom")
    raw = _raw_atom(tree.children[0], file, text)
    scope = _Scope(text, _reserved_names([raw]))
    atom = _sort_atom(raw, rigid or {}, scope)
    return atom, [t.span for t in raw.terms]


# --------------------------------------------------------------------------- program


class _ProgramBuilder:
    """Builds a `Program` and its `SpanTable` from a lark tree (one use per parse)."""

    def __init__(self, source: str, file: str, windows: bool = False):
        self.source = source
        self.file = file
        self.rigid: dict[str, int] = {}
        self.rigid_spans: dict[str, Span] = {}
        self.rules: list[Rule] = []
        self.facts: list[Rule] = []
        self.delays: list[DelayDecl] = []
        self.domain: list[str] = []
        self.query: Optional[Atom] = None
        self.query_span = Span(file)
        self.query_stmt_span: Optional[Span] = None
        self.spans: SpanTable = {}
        self.translator = Translator(source, windows)
        self.aux_done: set[str] = set()
        self.translations: list[Translation] = []
        self.fact_times: dict[int, Lrp] = {}

    def build(self, tree: Tree, fast: list = ()) -> tuple[Program, SpanTable]:
        """Two passes: `#rigid` declarations first, then everything else — with the `#delay`
        lines read without lark (delaylines.py) in their place in the source order."""
        for stmt in tree.children:
            if stmt.data == "rigid_dir":
                self._rigid(stmt)
        i = 0
        for stmt in tree.children:
            if stmt.data != "rigid_dir":
                while i < len(fast) and fast[i].line < stmt.meta.line:
                    self._delay_line(fast[i])
                    i += 1
                getattr(self, "_" + stmt.data)(stmt)
        for d in fast[i:]:
            self._delay_line(d)
        return self._program(), self.spans

    def _program(self) -> Program:
        """The collected `Program`."""
        return Program(
            rules=tuple(self.rules),
            facts=tuple(self.facts),
            query=self.query,
            query_span=self.query_span,
            delays=tuple(self.delays),
            domain=tuple(dict.fromkeys(self.domain)),
            rigid=dict(self.rigid),
            rigid_spans=dict(self.rigid_spans),
            source=self.source,
            file=self.file,
            translations=tuple(self.translations),
            fact_times=dict(self.fact_times),
        )

    def _raw(self, tree: Tree) -> _RawAtom:
        """Raw atom of an `atom`/`bare_atom` tree (names `__…` are reserved: metric.py)."""
        return self._unreserved(_raw_atom(tree, self.file, self.source))

    def _unreserved(self, raw: _RawAtom) -> _RawAtom:
        if raw.pred.startswith(AUX_PREFIX):
            name = raw.span
            span = Span(name.file, name.line, name.column, name.line, name.column + len(raw.pred))
            raise ProgramError(f"predicate names starting with {AUX_PREFIX} are reserved for the "
                               f"auxiliary predicates of metric operators", span, self.source)
        return raw

    # -- rules and facts

    def _fact(self, stmt: Tree) -> None:
        """`H.`, or `H until K.`; the time of a temporal fact may be an lrp `b + a n`."""
        raw = self._raw(stmt.children[0])
        until = stmt.children[1] if len(stmt.children) > 1 else None
        scope = _Scope(self.source, _reserved_names([raw]))
        lrp = None
        if raw.terms and not _is_rigid_use(raw, self.rigid):
            lrp = self._fact_lrp(raw, until)
            if lrp is not None:
                raw = _RawAtom(raw.pred, raw.terms[:-1] + (
                    _RawTerm("int", str(lrp.offset), 0, raw.terms[-1].span),), raw.span)
        elif until is not None:
            raise ProgramError("`until` bounds the periodic time of a temporal fact; this fact "
                               "has none", _token_span(until, self.file), self.source)
        head = _sort_atom(raw, self.rigid, scope)
        index = len(self.facts)
        _record_spans(self.spans, ("fact", index, -1), raw)
        self.facts.append(Rule(head, (), _meta_span(stmt, self.file)))
        if lrp is not None:
            self.fact_times[index] = lrp

    def _fact_lrp(self, raw: _RawAtom, until: Optional[Token]) -> Optional[Lrp]:
        """The lrp of a temporal fact's time (`5`, `7n`, `3 + 7n`; 003 §2), with `until K`;
        None if the time is not a natural number or an lrp (sorting reports it)."""
        last = raw.terms[-1]
        if last.kind == "name" and last.text == "n":
            last = _RawTerm("lrp", "n", 0, last.span, 1)
        if last.kind == "int":
            if until is not None:
                raise ProgramError(f"`until` bounds a periodic time (b + a n), but the time of "
                                   f"this fact is the single time {last.text}",
                                   _token_span(until, self.file), self.source)
            return Lrp(_number(last.text, last.span, self.source, "timestamp"))
        if last.kind != "lrp":
            return None
        if last.text != "n":
            raise ProgramError(f"a periodic time is written b + a n (with the letter n), "
                               f"not with {last.text}", last.span, self.source)
        if last.period == 0:
            raise ProgramError("the period of a periodic time must be positive (0n is not a "
                               "period; write the single time instead)", last.span, self.source)
        bound = None
        if until is not None:
            bound = _number(until, _token_span(until, self.file), self.source, "time")
            if bound < last.offset:
                raise ProgramError(f"until {bound} is before the first time {last.offset} of "
                                   f"{last.offset} + {last.period}n: the fact would hold at no "
                                   f"time", _token_span(until, self.file), self.source)
        return Lrp(last.offset, last.period, bound)

    def _rule(self, stmt: Tree) -> None:
        """`H :- L1, ..., Ln.`"""
        head_tree, body_tree = stmt.children
        self._add_rule(stmt, head_tree, body_tree, head_first=True)

    def _arrow_rule(self, stmt: Tree) -> None:
        """`L1, ..., Ln -> H.`"""
        body_tree, head_tree = stmt.children
        self._add_rule(stmt, head_tree, body_tree, head_first=False)

    def _add_rule(self, stmt: Tree, head_tree: Tree, body_tree: Tree, head_first: bool) -> None:
        """Sort a rule's atoms in source order and append it (translated, if it has metric
        operators: metric.py)."""
        head = self._raw(head_tree)
        entries = []  # (positive, raw atom) or (positive, metric tree, raw operands)
        for lit in body_tree.children:
            positive = lit.data.startswith("pos_")
            if lit.data.endswith("_literal"):
                entries.append((positive, self._raw(lit.children[0])))
            else:
                m = lit.children[0]
                atoms = [c for c in m.children if isinstance(c, Tree) and c.data != "interval"]
                entries.append((positive, m, [self._raw(a) for a in atoms]))
        body_raws = [r for e in entries for r in (e[2] if len(e) == 3 else [e[1]])]
        scope = _Scope(self.source, _reserved_names([head, *body_raws]))
        head_atom = _sort_atom(head, self.rigid, scope) if head_first else None
        sorted_entries = []
        for e in entries:
            if len(e) == 2:
                sorted_entries.append((e[0], e[1], _sort_atom(e[1], self.rigid, scope)))
            else:
                sorted_entries.append((e[0], e[1], [_sort_atom(r, self.rigid, scope) for r in e[2]],
                                       e[2]))
        if head_atom is None:
            head_atom = _sort_atom(head, self.rigid, scope)
        span = _meta_span(stmt, self.file)
        if all(len(e) == 3 for e in sorted_entries):
            literals = tuple(Literal(atom, pos) for pos, _, atom in sorted_entries)
            index = len(self.rules)
            _record_spans(self.spans, ("rule", index, -1), head)
            for i, (_, raw, _) in enumerate(sorted_entries):
                _record_spans(self.spans, ("rule", index, i), raw)
            self.rules.append(Rule(head_atom, literals, span))
            return
        items = [self._body_item(e) for e in sorted_entries]
        first = len(self.rules)
        for g in self.translator.rule(head_atom, items, span):
            _record_spans(self.spans, ("rule", len(self.rules), -1), head)
            self._add_generated(g, span)
        for name, rules in self.translator.aux_rules.items():
            if name in self.aux_done:
                continue
            self.aux_done.add(name)
            for g in rules:
                self.spans[("rule", len(self.rules), -1, -1)] = self.translator.aux_spans[name]
                self._add_generated(g, span)
        text = self.source[stmt.meta.start_pos:stmt.meta.end_pos]
        self.translations.append(Translation(text, span, tuple(range(first, len(self.rules)))))

    def _add_generated(self, g: GenRule, span: Span) -> None:
        """Append a rule made by metric.py; its literals point at the user's text."""
        index = len(self.rules)
        for i, gl in enumerate(g.body):
            self.spans[("rule", index, i, -1)] = gl.span
            for j, sp in enumerate(gl.arg_spans):
                self.spans[("rule", index, i, j)] = sp
        self.rules.append(Rule(g.head, tuple(gl.literal for gl in g.body), span))

    def _body_item(self, entry) -> BodyItem:
        """A sorted body entry as metric.py's PlainLiteral or MetricLiteral."""
        if len(entry) == 3:
            pos, raw, atom = entry
            return PlainLiteral(Literal(atom, pos), _operand(raw, atom))
        pos, m, atoms, raws = entry
        ops = tuple(_operand(r, a) for r, a in zip(raws, atoms))
        optok = next(c for c in m.children if isinstance(c, Token))
        itv = next(c for c in m.children if isinstance(c, Tree) and c.data == "interval")
        op = "Since" if m.data == "since_metric" else OPERATORS[str(optok)]
        op_span = Span(self.file, optok.line, optok.column, itv.meta.end_line, itv.meta.end_column)
        lo, hi = self._interval(itv, op, op_span)
        for o in ops:
            check_operand(o, op, self.rigid, self.source)
        if op == "Since" and ops[0].atom.time != ops[1].atom.time:
            a, b = ops[0].atom, ops[1].atom
            raise ProgramError(f"both sides of Since must have the same time term (the left "
                               f"one has {a.time}, the right one {b.time})",
                               ops[1].arg_spans[-1], self.source)
        text = self.source[m.meta.start_pos:m.meta.end_pos]
        return MetricLiteral(op, lo, hi, ops, pos, _meta_span(m, self.file), text)

    def _interval(self, itv: Tree, op: str, span: Span) -> tuple[int, int]:
        """`[a,b]` with natural numbers a ≤ b (unbounded and open intervals are refused)."""
        closing = self.source[itv.meta.end_pos - 1]
        bounds = []
        for b in itv.children:
            text = "".join(str(t) for t in b.children)
            if b.data == "inf_bound" or (b.data == "name_bound" and text.lower() in _INFINITE):
                bounds.append(None)
            elif b.data == "name_bound":
                raise ProgramError(f"expected a natural number or inf as a bound of {op}, "
                                   f"not {text}", _meta_span(b, self.file), self.source)
            elif b.data == "neg_bound":
                raise ProgramError(f"negative bound -{text}: the interval of {op} is [a,b] "
                                   f"with natural numbers 0 ≤ a ≤ b", _meta_span(b, self.file),
                                   self.source)
            else:
                bounds.append(_number(text, _meta_span(b, self.file), self.source, "bound"))
        lo, hi = bounds
        if lo is None or hi is None:
            shown = "∞" if lo is None else str(lo)
            raise ProgramError(
                f"unbounded interval [{shown},∞) in {op}: it would need a recursive definition "
                f"(a window that extends one tick at a time), on which pre-processing does not "
                f"terminate (000 Example 7); give a finite upper bound, [a,b]", span, self.source)
        if closing != "]":
            raise ProgramError(f"the interval of {op} is closed, [{lo},{hi}]: bounds are ticks "
                               f"(write [{lo},{hi - 1}] for [{lo},{hi}) )", span, self.source)
        if lo > hi:
            raise ProgramError(f"empty interval [{lo},{hi}] in {op}: the lower bound must not "
                               f"exceed the upper one (0 ≤ a ≤ b)", span, self.source)
        return lo, hi

    # -- directives

    def _query_dir(self, stmt: Tree) -> None:
        """`#query A.` (at most one)."""
        if self.query_stmt_span is not None:
            first = self.query_stmt_span
            msg = f"only one #query is allowed (the first one is at line {first.line})"
            raise ProgramError(msg, _meta_span(stmt, self.file), self.source)
        raw = self._raw(stmt.children[0])
        scope = _Scope(self.source, _reserved_names([raw]))
        self.query = _sort_atom(raw, self.rigid, scope)
        self.query_span = raw.span
        self.query_stmt_span = _meta_span(stmt, self.file)
        _record_spans(self.spans, ("query", 0, -1), raw)

    def _domain_dir(self, stmt: Tree) -> None:
        """`#domain c1, ..., cn.` (accumulates)."""
        for tree in stmt.children:
            term = _raw_term(tree, self.file, self.source)
            if term.kind == "name" and _is_variable_name(term.text):
                msg = f"#domain lists object constants, but {term.text} is a variable"
                raise ProgramError(msg, term.span, self.source)
            scope = _Scope(self.source, set())
            self.domain.append(_object_term(term, scope).value)  # type: ignore[union-attr]

    def _delay_all(self, stmt: Tree) -> None:
        """`#delay Pred = k.`"""
        name, k = stmt.children
        span = _token_span(name, self.file)
        self.spans[("delay", len(self.delays), -1, -1)] = span
        k = _number(k, _token_span(k, self.file), self.source, "delay")
        self.delays.append(DelayDecl(str(name), k, None, span))

    def _delay_pattern(self, stmt: Tree) -> None:
        """`#delay Pred(c1, _, T) = k.`"""
        atom_tree, k = stmt.children
        self._add_delay_pattern(self._raw(atom_tree), str(k), _token_span(k, self.file))

    def _delay_line(self, d: "delaylines.DelayLine") -> None:
        """A `#delay Pred(c1, …, T) = k.` line read by delaylines.py: the same checks."""
        f, n = self.file, d.line
        terms = tuple(_RawTerm(kind, text, 0, Span(f, n, col, n, end))
                      for kind, text, col, end in d.args)
        raw = self._unreserved(_RawAtom(d.pred, terms, Span(f, n, d.pred_col, n, d.end_col)))
        self._add_delay_pattern(raw, d.k, Span(f, n, d.k_col, n, d.k_col + len(d.k)))

    def _add_delay_pattern(self, raw: _RawAtom, k: str, k_span: Span) -> None:
        pattern = self._delay_pattern_args(raw)
        _record_spans(self.spans, ("delay", len(self.delays), -1), raw)
        k = _number(k, k_span, self.source, "delay")
        self.delays.append(DelayDecl(raw.pred, k, pattern, raw.span))

    def _delay_pattern_args(self, raw: _RawAtom) -> tuple[Optional[str], ...]:
        """Object-argument pattern of a `#delay` atom (the time position must be open)."""
        scope = _Scope(self.source, _reserved_names([raw]))
        if raw.pred in self.rigid:  # an error reported by check_program; keep all args
            return tuple(_pattern_entry(_object_term(t, scope)) for t in raw.terms)
        if not raw.terms:
            msg = f"temporal predicate {raw.pred} has no arguments: its last argument must be a time term"
            raise ProgramError(msg, raw.span, self.source)
        last = raw.terms[-1]
        if not (last.kind == "name" and _is_variable_name(last.text)):
            msg = "the delay bound may not depend on the time argument: use a variable or _ here"
            raise ProgramError(msg, last.span, self.source)
        return tuple(_pattern_entry(_object_term(t, scope)) for t in raw.terms[:-1])

    def _rigid(self, stmt: Tree) -> None:
        """`#rigid Name/arity, ... .` (collected in the first pass)."""
        for spec in stmt.children:
            name = spec.children[0]
            span = _meta_span(spec, self.file)
            arity = (_number(spec.children[1], span, self.source, "arity")
                     if len(spec.children) > 1 else 0)
            if name in self.rigid and self.rigid[name] != arity:
                first = self.rigid_spans[name]
                msg = (
                    f"{name} is declared #rigid with arity {arity} here, "
                    f"but with arity {self.rigid[name]} at line {first.line}"
                )
                raise ProgramError(msg, span, self.source)
            self.rigid.setdefault(str(name), arity)
            self.rigid_spans.setdefault(str(name), span)


def _operand(raw: _RawAtom, atom: Atom) -> Operand:
    """A sorted atom with the spans of its text."""
    return Operand(atom, raw.span, tuple(t.span for t in raw.terms))


_INFINITE = ("inf", "infinity")


def _pattern_entry(term: Var | Const) -> Optional[str]:
    """A `#delay` pattern entry: the constant's value, or None for a variable / `_`."""
    return term.value if isinstance(term, Const) else None
