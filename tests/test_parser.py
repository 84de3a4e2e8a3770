"""Tests of reasoning/language/parser.py: the surface syntax of hypo programs."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning.language.compiler import compile_program
from reasoning.language.errors import ProgramError
from reasoning.language.parser import parse_atom, parse_fact, parse_program, parse_program_with_spans
from reasoning.language.syntax import Atom, Const, DelayDecl, Literal, Rule, Span, Time, Var
from reasoning.language.wellformed import check_program, edb_predicates, idb_predicates, predicate_arities

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

WIND = """\
% wind turbines (Example 1 and Example 13 of the main paper)
#query OK(X, T).
#domain wt1, wt2, wt3.
#delay Hot = 0.
#delay Hot(wt1, T) = 2.
#delay Hot(wt2, T) = 3.
#delay Hot(wt3, T) = 1.
Flag(X, T) :- Hot(X, T).
Cool(X, T+1) :- Flag(X, T), Flag(X, T+1).
Shdn(X, T+1) :- Cool(X, T), Flag(X, T+1).
OK(X, T-1) :- not Shdn(X, T).
"""


def atom(pred, *args, time=None):
    """Atom with object args given as strings: upper-case/_ -> Var, else Const."""
    terms = tuple(Var(a) if a[0].isupper() or a[0] == "_" else Const(a) for a in args)
    return Atom(pred, terms, time)


def T(var=None, k=0):
    return Time(var, k)


# --------------------------------------------------------------------------- the contract example


def test_wind_turbines_program():
    prog = parse_program(WIND, "wt.tdl")
    assert prog.file == "wt.tdl" and prog.source == WIND
    assert prog.query == atom("OK", "X", time=T("T"))
    assert prog.query_span.line == 2 and prog.query_span.column == 8
    assert prog.domain == ("wt1", "wt2", "wt3")
    assert prog.delays == (
        DelayDecl("Hot", 0, None),
        DelayDecl("Hot", 2, ("wt1",)),
        DelayDecl("Hot", 3, ("wt2",)),
        DelayDecl("Hot", 1, ("wt3",)),
    )
    assert prog.rules == (
        Rule(atom("Flag", "X", time=T("T")), (Literal(atom("Hot", "X", time=T("T"))),)),
        Rule(
            atom("Cool", "X", time=T("T", 1)),
            (Literal(atom("Flag", "X", time=T("T"))), Literal(atom("Flag", "X", time=T("T", 1)))),
        ),
        Rule(
            atom("Shdn", "X", time=T("T", 1)),
            (Literal(atom("Cool", "X", time=T("T"))), Literal(atom("Flag", "X", time=T("T", 1)))),
        ),
        Rule(atom("OK", "X", time=T("T", -1)), (Literal(atom("Shdn", "X", time=T("T")), False),)),
    )
    assert prog.facts == () and dict(prog.rigid) == {}
    check_program(prog)


def test_rule_spans_start_at_head_and_cover_rule():
    prog = parse_program(WIND)
    assert prog.rules[0].span == Span("<input>", 8, 1, 8, 25)
    assert prog.rules[3].span.line == 11 and prog.rules[3].span.column == 1


def test_span_table_points_at_atoms_and_terms():
    prog, spans = parse_program_with_spans(WIND)
    # rule 1 = "Cool(X, T+1) :- Flag(X, T), Flag(X, T+1)." on line 9
    assert spans[("rule", 1, -1, -1)] == Span("<input>", 9, 1, 9, 13)
    assert spans[("rule", 1, -1, 1)] == Span("<input>", 9, 9, 9, 12)  # T+1
    assert spans[("rule", 1, 1, -1)].column == 29  # second body literal
    assert spans[("query", 0, -1, 0)] == Span("<input>", 2, 11, 2, 12)
    assert spans[("delay", 1, -1, -1)].line == 5


def test_predicate_sets():
    prog = parse_program(WIND)
    assert idb_predicates(prog) == {"Flag", "Cool", "Shdn", "OK"}
    assert edb_predicates(prog) == {"Hot": 2}
    assert predicate_arities(prog) == {"Flag": 2, "Hot": 2, "Cool": 2, "Shdn": 2, "OK": 2}


# --------------------------------------------------------------------------- examples


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.tdl")), ids=lambda p: p.name)
def test_every_example_parses_and_is_wellformed(path):
    prog, spans = parse_program_with_spans(path.read_text(encoding="utf-8"), str(path))
    check_program(prog, spans)
    assert prog.query is not None and prog.rules
    assert path.read_text(encoding="utf-8").lstrip().startswith("%")


def test_expected_examples_exist():
    names = {p.name for p in EXAMPLES.glob("*.tdl")}
    assert names >= {
        "wind_turbines.tdl", "malfunction.tdl", "malfunction_na.tdl", "redundant.tdl",
        "nonterminating.tdl", "defective.tdl", "inconsistent.tdl", "local_mgu.tdl",
        "not_stratified.tdl",
    }


def test_wind_turbines_example_is_the_contract_program():
    assert (EXAMPLES / "wind_turbines.tdl").read_text(encoding="utf-8") == WIND


def test_inconsistent_example_query_has_constants():
    prog = parse_program((EXAMPLES / "inconsistent.tdl").read_text(encoding="utf-8"))
    assert prog.query == Atom("p", (Const("a"),), Time(None, 1))
    assert prog.delays == (DelayDecl("r", 1, None),)


def test_malfunction_na_uses_constant_na():
    prog = parse_program((EXAMPLES / "malfunction_na.tdl").read_text(encoding="utf-8"))
    last = prog.rules[-1]
    assert last.head == atom("Malf", "X", time=T("T"))
    assert last.body == (Literal(atom("Temp", "X", "na", time=T("T"))),)


def test_defective_rule():
    prog = parse_program((EXAMPLES / "defective.tdl").read_text(encoding="utf-8"))
    rule = prog.rules[-1]
    assert rule.head == atom("Defective", "X", time=T(None, 0))
    assert [lit.atom.time for lit in rule.body] == [T("T1"), T("T2")]


# --------------------------------------------------------------------------- papers' notation


ARROW_FORMS = [
    "Flag(X, T), Flag(X, T+1) -> Cool(X, T+1).",
    "Flag(X, T) ∧ Flag(X, T+1) → Cool(X, T+1).",
    "Flag(X, T) & Flag(X, T+1) -> Cool(X, T+1).",
    "Flag(X,T)&Flag(X,T+1)→Cool(X,T+1).",
]


@pytest.mark.parametrize("text", ARROW_FORMS)
def test_papers_notation_equals_colon_dash(text):
    expected = parse_program("Cool(X, T+1) :- Flag(X, T), Flag(X, T+1).").rules
    assert parse_program(text).rules == expected


def test_conjunction_separators_are_interchangeable():
    a = parse_program("P(X, T) :- Q(X, T), R(X, T) & S(X, T) ∧ U(X, T).").rules
    b = parse_program("P(X, T) :- Q(X, T), R(X, T), S(X, T), U(X, T).").rules
    assert a == b


def test_negation_symbols():
    a = parse_program("¬ Shdn(X, T) → OK(X, T-1).").rules
    b = parse_program("not Shdn(X, T) -> OK(X, T-1).").rules
    c = parse_program("OK(X, T-1) :- not Shdn(X, T).").rules
    assert a == b == c
    assert a[0].body[0].positive is False


def test_arrow_rule_span_starts_at_first_literal():
    prog = parse_program("\n  Hot(X, T) -> Flag(X, T).")
    assert (prog.rules[0].span.line, prog.rules[0].span.column) == (2, 3)


def test_comments_and_free_whitespace():
    text = "% header\nFlag(\n  X, % object\n  T\n) :-\n\n Hot(X,T)  % body\n.\n"
    assert parse_program(text).rules == parse_program("Flag(X, T) :- Hot(X, T).").rules


def test_lowercase_predicates():
    prog = parse_program("p(X, T) :- not q(X, T), r(X, T).")
    assert [lit.atom.pred for lit in prog.rules[0].body] == ["q", "r"]


def test_not_is_still_usable_as_a_constant():
    prog = parse_program("P(X, T) :- Q(X, not, T).")
    assert prog.rules[0].body[0].atom.args[1] == Const("not")


# --------------------------------------------------------------------------- terms


def test_anonymous_variables_get_fresh_names():
    rule = parse_program("P(X, T) :- Q(X, _, T), R(_, _, T), S(X, _).").rules[0]
    names = [a.name for lit in rule.body for a in lit.atom.args if a.name.startswith("_")]
    times = [lit.atom.time.var for lit in rule.body]
    assert names == ["_1", "_2", "_3"]
    assert times == ["T", "T", "_4"]


def test_anonymous_names_avoid_user_variables():
    rule = parse_program("P(X, T) :- Q(_1, _, T).").rules[0]
    assert rule.body[0].atom.args == (Var("_1"), Var("_2"))


def test_object_term_kinds():
    a = parse_atom('Q(X, _Y, abc, 42, -7, "Hello, \\"world\\" \\\\", 3)')
    assert a.args == (
        Var("X"), Var("_Y"), Const("abc"), Const("42"), Const("-7"), Const('Hello, "world" \\'),
    )
    assert a.time == Time(None, 3)


def test_time_terms():
    assert parse_atom("Q(a, T)").time == Time("T", 0)
    assert parse_atom("Q(a, T+3)").time == Time("T", 3)
    assert parse_atom("Q(a, T - 2)").time == Time("T", -2)
    assert parse_atom("Q(a, 0)").time == Time(None, 0)
    assert parse_atom("Q(17)") == Atom("Q", (), Time(None, 17))


def test_parse_atom_accepts_trailing_dot_and_reports_errors():
    assert parse_atom("Hot(wt1, 1).") == parse_atom("Hot(wt1, 1)") == atom("Hot", "wt1", time=T(None, 1))
    with pytest.raises(ProgramError) as exc:
        parse_atom("Hot(wt1, 1", "stream.txt")
    assert exc.value.span.file == "stream.txt"
    assert "unexpected end of input" in exc.value.message


def test_parse_fact_ground_and_rigid():
    assert parse_fact("Hot(wt1, 4)") == atom("Hot", "wt1", time=T(None, 4))
    assert parse_fact("Near(wt1, wt2)", rigid={"Near": 2}) == atom("Near", "wt1", "wt2")
    assert parse_atom("Near(X, 3)", rigid={"Near": 2}) == Atom("Near", (Var("X"), Const("3")))


def test_parse_fact_rejects_variables():
    with pytest.raises(ProgramError) as exc:
        parse_fact("Hot(wt1, T)", "stream.txt")
    err = exc.value
    assert (err.span.line, err.span.column) == (1, 10)
    assert "a fact must be ground" in err.message


# --------------------------------------------------------------------------- rigid, delay, domain


def test_rigid_declarations_anywhere_and_facts():
    text = (
        "Alarm(X, T) :- Hot(X, T), Near(X, Y), not Off(Y), Sunny.\n"
        "Near(wt1, wt2).\n"
        'Near(wt2, "wt 3").\n'
        "#rigid Near/2, Off/1.\n"
        "#rigid Sunny.\n"
        "#rigid Near/2.\n"
        "Sunny().\n"
    )
    prog = parse_program(text)
    assert dict(prog.rigid) == {"Near": 2, "Off": 1, "Sunny": 0}
    assert prog.rigid_spans["Near"].line == 4
    body = prog.rules[0].body
    assert body[1] == Literal(atom("Near", "X", "Y"))
    assert body[2] == Literal(atom("Off", "Y"), False)
    assert body[3] == Literal(Atom("Sunny"))
    assert [f.head for f in prog.facts] == [
        atom("Near", "wt1", "wt2"),
        Atom("Near", (Const("wt2"), Const("wt 3"))),
        Atom("Sunny"),
    ]
    check_program(prog)
    assert "Near" not in edb_predicates(prog)
    assert predicate_arities(prog)["Sunny"] == 0


def test_delay_patterns():
    text = "#delay Temp(wt1, _, T) = 4.\n#delay Temp(X, high, _) = 5.\nP(X, T) :- Temp(X, Y, T)."
    prog = parse_program(text)
    assert prog.delays == (DelayDecl("Temp", 4, ("wt1", None)), DelayDecl("Temp", 5, (None, "high")))
    assert prog.delays[1].span.line == 2
    check_program(prog)


def test_domain_accumulates():
    prog = parse_program('#domain wt1, wt2.\n#domain 7, "x y", wt1.')
    assert prog.domain == ("wt1", "wt2", "7", "x y")


def test_domain_rejects_variables():
    with pytest.raises(ProgramError) as exc:
        parse_program("#domain a, X.")
    assert (exc.value.span.line, exc.value.span.column) == (1, 12)
    assert "X is a variable" in exc.value.message


def test_empty_program():
    prog = parse_program("% nothing here\n")
    assert prog.rules == () and prog.query is None


# --------------------------------------------------------------------------- round trip

_OBJ_VARS = st.sampled_from(["X", "Y", "Zed", "_a", "_1"])
_TIME_VARS = st.sampled_from(["T", "T1", "S"])
_PREDS = st.from_regex(r"\A[A-Za-z][A-Za-z0-9_]{0,6}\Z").filter(lambda s: s != "not")
_CONSTS = st.one_of(
    st.from_regex(r"\A[a-z][A-Za-z0-9_]{0,5}\Z"),
    st.integers(-50, 5000).map(str),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=8),
)
_TIMES = st.one_of(
    st.builds(Time, st.none(), st.integers(0, 100)),
    st.builds(Time, _TIME_VARS, st.integers(-5, 5)),
)


def _atoms():
    args = st.lists(st.one_of(st.builds(Var, _OBJ_VARS), st.builds(Const, _CONSTS)), max_size=3)
    return st.builds(lambda p, a, t: Atom(p, tuple(a), t), _PREDS, args, _TIMES)


_RULES = st.builds(
    lambda h, b: Rule(h, tuple(b)),
    _atoms(),
    st.lists(st.builds(Literal, _atoms(), st.booleans()), min_size=1, max_size=4),
)


@settings(max_examples=150, deadline=None)
@given(_RULES)
def test_round_trip_str_rule(rule):
    prog = parse_program(str(rule))
    assert prog.rules == (rule,)


@settings(max_examples=60, deadline=None)
@given(_atoms())
def test_round_trip_str_atom(a):
    assert parse_atom(str(a)) == a


def test_round_trip_examples():
    for path in sorted(EXAMPLES.glob("*.tdl")):
        prog = parse_program(path.read_text(encoding="utf-8"))
        # a rule written with metric operators prints as itself (its translation has
        # reserved __ names): it round-trips through its text
        made = {i for t in prog.translations for i in t.rules}
        again = parse_program("\n".join([str(r) for i, r in enumerate(prog.rules) if i not in made]
                                        + [t.text for t in prog.translations]))
        assert sorted(map(str, again.rules)) == sorted(map(str, prog.rules)), path.name


def test_round_trip_rigid_rule():
    text = "#rigid Near/2, Sunny/0.\nP(X, T) :- Q(X, T), Near(X, b), not Sunny."
    prog = parse_program(text)
    again = parse_program("#rigid Near/2, Sunny/0.\n" + str(prog.rules[0]))
    assert again.rules == prog.rules


@pytest.mark.parametrize("text,col,what", [
    ("#query P(X, T).\n#delay E = 1" + "0" * 5000 + ".\nP(X, T) :- E(X, T).\n", 12, "delay"),
    ("#query P(X, T).\n#rigid R/1" + "0" * 5000 + ".\nP(X, T) :- E(X, T).\n", 8, "arity"),
    ("#query P(X, T).\nP(X, T) :- E(X, T+1" + "0" * 5000 + ").\n", 17, "time offset"),
    ("#query P(X, T).\nP(X, 1" + "0" * 30 + ") :- E(X, 3).\n", 6, "timestamp"),
])
def test_numbers_past_the_machine_range_are_errors_at_their_token(text, col, what):
    """Issue 11.1, program side: FILE:LINE:COL, never Python's 4 300-digit ValueError."""
    with pytest.raises(ProgramError) as e:
        compile_program(text, "big.tdl")
    assert (e.value.span.line, e.value.span.column) == (2, col)
    assert e.value.message.startswith(what) and "out of range" in e.value.message


# --------------------------------------------------------------------------- #delay lines
# reasoning/language/delaylines.py reads canonical per-instance `#delay` lines without lark when a
# program has many; the result must be what lark's path gives, errors included.

_DELAY_LINES = st.sampled_from([
    "#delay Hot(wt1, T) = 2.", "  #delay   Hot( wt2 ,T )=0 .", "\t#delay Hot(7, _) = 1.\r",
    "#delay Hot(wt1, T) = 2. % a comment", '#delay Hot("w t", T) = 2.',
    "#delay Pair(a, b, T) = 3.", "#delay Hot(wt1, 3) = 2.", "#delay Hot(wt1, T+1) = 2.",
    "#delay Hot(wt1, T) = " + "9" * 30 + ".", "#delay Since(wt1, T) = 1.",
    "#delay Hot(not, T) = 1.", "#delay __aux(a, T) = 1.", "#delay Hot() = 1.",
    "#delay Hot(wt1, T) = 2. #delay Hot(wt2, T) = 1.", "#delay Hot = 4.", "#delay Base(a) = 1.",
    "#delay Hot(wt1, T) = 2", "#delay Hot(wt1,, T) = 2.", "#delay Hot(wt1 T) = 2."])
_OTHER_LINES = st.sampled_from([
    "#query OK(X, T).", "OK(X, T) :- Hot(X, T), not Pair(X, X, T).", "Flag(X, T) :- Hot(X, T).",
    "#rigid Base/1.", "Flag(X, T) :- Hot(X, T)", "% comment", "", "#delay Hot = 1.",
    "Pair(X, Y, T) :- Hot(X, T), Hot(Y, T), Base(X).", ".", ", Hot(X, T)."])  # the last
# two finish a statement begun before a #delay line: lark must see that #delay


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_DELAY_LINES, _DELAY_LINES, _OTHER_LINES), max_size=14))
def test_delay_lines_read_without_lark_parse_as_lark_does(lines):
    import reasoning.language.delaylines as dl

    text = "\n".join(lines) + "\n"

    def parse(min_lines):
        old, dl.MIN_LINES = dl.MIN_LINES, min_lines
        try:
            return ("ok", parse_program_with_spans(text, "p.tdl"))
        except ProgramError as e:
            return ("error", e.format())
        finally:
            dl.MIN_LINES = old

    fast, slow = parse(1), parse(10 ** 9)
    assert fast == slow, text


def test_many_delay_lines_skip_lark_and_keep_every_span():
    import reasoning.language.delaylines as dl

    lines = ["#query OK(X, T).", "#delay Hot = 3."]
    lines += [f"#delay Hot(wt{i}, T) = {i % 3}." for i in range(dl.MIN_LINES + 5)]
    lines += ["OK(X, T) :- Hot(X, T).", "#delay Hot(last, T) = 1."]
    text = "\n".join(lines) + "\n"
    assert len(dl.scan(text)) == dl.MIN_LINES + 6
    prog, spans = parse_program_with_spans(text, "p.tdl")
    assert [d.pattern for d in prog.delays][:3] == [None, ("wt0",), ("wt1",)]
    assert prog.delays[-1].pattern == ("last",) and len(prog.rules) == 1
    last = len(prog.delays) - 1
    assert spans[("delay", last, -1, 0)] == Span("p.tdl", len(lines), 12, len(lines), 16)


def test_a_delay_line_inside_an_unfinished_statement_is_still_an_error():
    """Blanking `#delay` lines must not glue a statement together across them."""
    import reasoning.language.delaylines as dl

    text = "#query OK(X, T).\nOK(X, T) :- Hot(X, T)\n#delay Hot(a, T) = 1.\n.\n"
    old, dl.MIN_LINES = dl.MIN_LINES, 1
    try:
        with pytest.raises(ProgramError) as e:
            parse_program_with_spans(text, "p.tdl")
    finally:
        dl.MIN_LINES = old
    assert (e.value.span.line, e.value.span.column) == (3, 1) and "#delay" in e.value.message


def test_the_grammar_and_the_fast_readers_agree_on_identifiers():
    """grammar.lark's NAME is syntax.NAME, which the stream reader, the #delay line reader
    and the metric rewriting use (one definition of an identifier)."""
    import os
    import re

    from reasoning.language.syntax import NAME

    here = os.path.join(os.path.dirname(__file__), "..", "reasoning", "language", "grammar.lark")
    m = re.search(r"^NAME: /(.*)/$", open(here, encoding="utf-8").read(), re.M)
    assert m and m.group(1) == NAME
