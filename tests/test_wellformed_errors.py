"""Every error a user can make in a program: FILE:LINE:COL, message and caret."""
from __future__ import annotations

import pytest

from reasoning.language.errors import ProgramError
from reasoning.language.parser import parse_atom, parse_fact, parse_program, parse_program_with_spans
from reasoning.language.wellformed import check_program

FILE = "prog.tdl"


def error_of(text: str) -> ProgramError:
    """The ProgramError raised by parsing + checking `text` (fails if none)."""
    with pytest.raises(ProgramError) as exc:
        prog, spans = parse_program_with_spans(text, FILE)
        check_program(prog, spans)
    return exc.value


def assert_error(text: str, line: int, column: int, message: str) -> ProgramError:
    """Check position, message, and the `FILE:LINE:COL: error:` + caret rendering."""
    err = error_of(text)
    assert (err.span.line, err.span.column) == (line, column), err.format()
    assert message in err.message, err.format()
    rendered = err.format()
    assert rendered.startswith(f"{FILE}:{line}:{column}: error: ")
    lines = rendered.splitlines()
    assert len(lines) == 3
    assert lines[1] == "    " + text.splitlines()[line - 1]
    assert lines[2].startswith("    " + " " * (column - 1) + "^")
    return err


# --------------------------------------------------------------------------- syntax errors


def test_unexpected_token_names_expected_tokens():
    err = assert_error("Flag(X, T) :- Hot(X, T).\nHot(X, T) Foo(X, T).", 2, 11, 'unexpected "Foo"')
    assert 'expected one of: ",", "->", ".", ":-"' in err.message


def test_unexpected_token_in_body():
    err = assert_error("Flag(X, T) :- Hot(X, T) Cold(X, T).", 1, 25, 'unexpected "Cold"')
    assert 'expected one of: ",", "."' in err.message


def test_unexpected_end_of_input():
    err = assert_error("Flag(X, T) :- Hot(X, T)\n% forgot the dot\n", 1, 24, "unexpected end of input")
    assert 'expected one of: ",", "."' in err.message


def test_unexpected_end_of_input_inside_atom():
    err = assert_error("Flag(X, T) :- Hot(X,", 1, 21, "unexpected end of input")
    assert "identifier" in err.message and "natural number" in err.message


def test_missing_atom_after_not():
    assert_error("OK(X, T) :- not.", 1, 16, 'unexpected "."; expected identifier')


def test_unterminated_string():
    assert_error('P(X, T) :- Q(X, T).\nP(X, T) :- Q("abc, T).', 2, 14, "unterminated string")


def test_invalid_character():
    assert_error("P(X, T) :- Q(X, T) @ R(X, T).", 1, 20, "invalid character '@'")


def test_unknown_directive():
    assert_error("#qeury OK(X, T).", 1, 1, "unknown directive #qeury")


def test_unknown_escape_in_string():
    assert_error('P(X, T) :- Q("a\\tb", T).', 1, 16, "unknown escape sequence \\t")


def test_negative_delay_is_a_syntax_error():
    assert_error("#delay Hot = -1.", 1, 14, 'unexpected "-"; expected natural number')


def test_parse_atom_syntax_error_position():
    with pytest.raises(ProgramError) as exc:
        parse_atom("Hot(wt1 1)", "<query>")
    err = exc.value
    assert (err.span.file, err.span.line, err.span.column) == ("<query>", 1, 9)
    assert 'expected one of: ")", "+", ",", "-"' in err.message


# --------------------------------------------------------------------------- sort errors


def test_time_term_in_object_position():
    assert_error("P(X, T) :- Q(X, T),\n  R(T+1, X, T).", 2, 5, "time term in an object position")


def test_object_constant_in_time_position():
    assert_error(
        "P(X, T) :- Hot(X, high).",
        1, 19,
        "expected a time term (natural number, variable, or T+k) as the last argument "
        "of temporal predicate Hot/2",
    )


def test_string_in_time_position():
    assert_error('P(X, T) :- Q(X, T), Hot(X, "5").', 1, 28, "temporal predicate Hot/2")


def test_negative_timestamp():
    assert_error("P(a, 0) :- Hot(a, -1).", 1, 19, "negative timestamp -1")


def test_negative_timestamp_in_stream_fact():
    with pytest.raises(ProgramError) as exc:
        parse_fact("Hot(a, -1)", "stream.txt")
    assert (exc.value.span.line, exc.value.span.column) == (1, 8)
    assert "negative timestamp" in exc.value.message


def test_variable_used_as_object_and_time():
    err = assert_error("P(X, T) :- Q(X, T), R(T, X, T).", 1, 23, "variable T is used both as an object and as a time variable")
    assert "line 1, column 6" in err.message


def test_variable_used_as_time_after_object_in_arrow_rule():
    assert_error("Q(X, T), R(X, X) -> P(X, T).", 1, 15, "variable X is used both as an object and as a time variable")


def test_temporal_predicate_without_arguments():
    assert_error("P(X, T) :- Q(X, T), R().", 1, 21, "temporal predicate R has no arguments")


def test_bare_temporal_predicate_in_body():
    assert_error("P(X, T) :- Q(X, T), Sunny.", 1, 21, "temporal predicate Sunny has no arguments")


def test_delay_pattern_constant_time():
    assert_error(
        "P(X, T) :- Hot(X, T).\n#delay Hot(wt1, 3) = 2.",
        2, 17,
        "the delay bound may not depend on the time argument: use a variable or _ here",
    )


def test_second_query():
    assert_error("#query P(X, T).\nP(X, T) :- Q(X, T).\n#query Q(X, T).", 3, 1, "only one #query is allowed (the first one is at line 1)")


def test_conflicting_rigid_declarations():
    assert_error("#rigid Near/2.\n#rigid Near/3.", 2, 8, "Near is declared #rigid with arity 3 here, but with arity 2 at line 1")


# --------------------------------------------------------------------------- semantic errors


def test_arity_clash_reports_later_use_and_first_line():
    err = assert_error(
        "Flag(X, T) :- Hot(X, T).\nCool(X, T) :- Flag(X, T), Hot(X, Y, T).",
        2, 27,
        "predicate Hot is used with arity 3 here, but with arity 2 at line 1",
    )
    assert err.span.end_column == 39


def test_arity_clash_in_arrow_rule_uses_source_order():
    # the head P(X, T) is written after Q(X, Y, T): Q's first use is on line 1
    assert_error("Q(X, Y, T) -> P(X, T).\nP(X, T) :- Q(X, T).", 2, 12, "arity 2 here, but with arity 3 at line 1")


def test_unsafe_head_variable():
    assert_error("Flag(X, T) :- Hot(X, T).\nAlarm(X, Y, T) :- Flag(X, T).", 2, 10, "variable Y in the head does not occur in the body")


def test_unsafe_head_time_variable():
    assert_error("Alarm(X, S) :- Flag(X, T).", 1, 10, "variable S in the head does not occur in the body")


def test_unsafe_anonymous_head_variable():
    assert_error("Alarm(_, T) :- Flag(T).", 1, 7, "anonymous variable _ in the head")


def test_head_variable_in_negative_literal_only_is_safe():
    prog, spans = parse_program_with_spans("OK(X, T-1) :- not Shdn(X, T).\nShdn(X, T) :- Hot(X, T).", FILE)
    check_program(prog, spans)


def test_rigid_predicate_defined_by_rule():
    assert_error("#rigid Near/2.\nNear(X, Y) :- Link(X, Y, T).", 2, 1, "Near is declared #rigid (at line 1), so it cannot be defined by a rule")


def test_rigid_predicate_with_time_argument():
    assert_error(
        "#rigid Near/2.\nP(X, T) :- Hot(X, T), Near(X, b, T).",
        2, 34,
        "rigid predicate Near/2 is used with a time argument",
    )


def test_rigid_predicate_wrong_arity():
    assert_error("#rigid Near/2.\nP(X, T) :- Hot(X, T), Near(X).", 2, 23, "rigid predicate Near/2 is used with 1 argument")


def test_rigid_fact_wrong_arity():
    assert_error("Near(a, b, c).\n#rigid Near/2.", 1, 1, "rigid predicate Near/2 is used with 3 arguments")


def test_temporal_fact_in_program_is_periodic():
    """A temporal fact of the program makes its predicate periodic (period 0: one time);
    a rule may then not define it too."""
    prog, spans = parse_program_with_spans("Flag(X, T) :- Hot(X, T).\nHot(wt1, 0).", FILE)
    check_program(prog, spans)
    assert_error(
        "Hot(X, T) :- Warm(X, T).\nHot(wt1, 0).",
        1, 1,
        "Hot is a periodic predicate (given by facts of the program, the first at line 2), "
        "so it cannot also be defined by a rule",
    )


def test_non_ground_rigid_fact():
    assert_error("#rigid Near/2.\nNear(wt1, X).", 2, 11, "a fact must be ground")


def test_query_on_edb_predicate():
    assert_error(
        "#query Hot(X, T).\nFlag(X, T) :- Hot(X, T).",
        1, 8,
        "#query must name a predicate defined by rules (IDB); Hot is only given by facts",
    )


def test_query_on_rigid_predicate():
    assert_error("#rigid Near/2.\n#query Near(X, Y).\nP(X, T) :- Q(X, T), Near(X, Y).", 2, 8, "Near is only given by facts")


def test_query_on_unknown_predicate():
    assert_error("Flag(X, T) :- Hot(X, T).\n#query Flg(X, T).", 2, 8, "#query names Flg, which no rule defines")


def test_query_arity_mismatch():
    assert_error("Flag(X, T) :- Hot(X, T).\n#query Flag(X, Y, T).", 2, 8, "#query uses Flag with arity 3, but Flag has arity 2")


def test_delay_on_idb_predicate():
    assert_error("Flag(X, T) :- Hot(X, T).\n#delay Flag = 2.", 2, 8, "#delay applies to stream (EDB) predicates, but Flag is defined by rules (IDB)")


def test_delay_on_unused_predicate_is_a_warning_with_a_hint():
    """Issue 10: a stream shared by several programs declares predicates this one does not
    use; a warning at the declaration (with a close name), not an error."""
    from reasoning.language.wellformed import delay_warnings

    text = "Flag(X, T) :- Hot(X, T).\n#delay Hto(wt1, T) = 2.\n#delay Other = 1."
    prog, spans = parse_program_with_spans(text, FILE)
    check_program(prog, spans)  # no error
    (s1, m1), (s2, m2) = delay_warnings(prog, spans)
    assert (s1.line, s1.column) == (2, 8) and "Hto, which no rule uses" in m1
    assert "did you mean Hot?" in m1 and "did you mean" not in m2 and s2.line == 3


def test_delay_on_rigid_predicate():
    assert_error("#rigid Near/2.\nP(X, T) :- Q(X, T), Near(X, Y).\n#delay Near = 1.", 3, 8, "Near is #rigid")


def test_delay_pattern_wrong_number_of_arguments():
    assert_error("Flag(X, T) :- Hot(X, T).\n#delay Hot(wt1, _, T) = 2.", 2, 8, "#delay pattern for Hot has 3 arguments, but Hot has arity 2")


# --------------------------------------------------------------------------- ordering and fallbacks


def test_first_error_in_source_order_wins():
    text = (
        "#query Hot(X, T).\n"           # query on EDB (line 1)
        "Flag(X, Y, T) :- Hot(X, T).\n"  # unsafe Y (line 2)
    )
    assert_error(text, 1, 8, "#query must name")
    text2 = "Flag(X, Y, T) :- Hot(X, T).\n#query Hot(X, T).\n"
    assert_error(text2, 1, 9, "variable Y")


def test_check_without_spans_falls_back_to_statement_span():
    prog = parse_program("Flag(X, T) :- Hot(X, T).\n  Alarm(X, Y, T) :- Flag(X, T).", FILE)
    with pytest.raises(ProgramError) as exc:
        check_program(prog)
    assert (exc.value.span.line, exc.value.span.column) == (2, 3)
    assert "variable Y" in exc.value.message


def test_errors_are_never_lark_exceptions():
    for text in ["(", ")", "P(X, T) :-", "#", "\"", "P(X, T) :- Q(X, T) ->", "#rigid Near/x.", "P(X,T+)."]:
        with pytest.raises(ProgramError) as exc:
            parse_program(text, FILE)
        assert exc.value.span.line >= 1 and exc.value.span.column >= 1
        assert exc.value.format().startswith(f"{FILE}:")


# --------------------------------------------------------------------------- long lines


@pytest.mark.parametrize("before,after", [(5000, 10), (10, 5000), (3000, 3000), (40, 40)])
def test_a_long_source_line_is_shown_as_a_window_around_the_error(before, after):
    """A generated program's very long line: the excerpt is at most EXCERPT_COLUMNS wide, cut with
    `…`, and the caret still points at the offending character."""
    from reasoning.language.errors import EXCERPT_COLUMNS

    body = ", ".join(f"A{i}(X, T)" for i in range(before // 10))
    tail = ", ".join(f"C{i}(X, T)" for i in range(after // 10))
    text = f"#query Q(X, T).\nQ(X, T) :- {body}, B(X, T) $ {tail}."
    err = error_of(text)
    line = text.splitlines()[1]
    assert err.span.column == line.index("$") + 1
    shown, caret = err.format().splitlines()[1:]
    assert len(shown) <= 4 + EXCERPT_COLUMNS + 2
    assert shown[4:].strip("…") in line
    assert shown[caret.index("^")] == "$"
    assert shown.startswith("    …") == (len(line) > EXCERPT_COLUMNS
                                        and line.index("$") > EXCERPT_COLUMNS // 3)


def test_a_long_token_is_underlined_only_within_the_window():
    text = "#query Q(X, T).\n#delay A = " + "9" * 5000 + ".\nQ(X, T) :- A(X, T)."
    shown, caret = error_of(text).format().splitlines()[1:]
    assert shown.endswith("…") and len(caret) <= len(shown)
    assert set(caret.strip()) == {"^", "~"}
