"""`hypo check` on programs of every shape and size (issue 11, item 7): pre-processing into
P_Q (002 §2, Example 4) stops exploding searches with a located error, reaches no recursion
limit, accepts long nonrecursive chains and still refuses non-terminating recursion
(000 Example 7).  No timing is asserted here: bench/check.py prints the figures."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reasoning.language.compiler import compile_program
from reasoning.language.errors import ProgramError
from reasoning.language.parser import parse_program_with_spans
from reasoning.language.preprocess import MAX_TEMPLATES, Preprocessor
from reasoning.language.wellformed import idb_predicates

ROOT = Path(__file__).resolve().parent.parent
FILE = "scale.tdl"


def exploding(k: int) -> str:
    """P(T) :- A0(T), …, Ak(T) with two rules per Ai over delayed streams: 2^(k+1) templates."""
    lines = ["#query P(T)."]
    lines += [f"#delay B{i} = 1.\n#delay C{i} = 2." for i in range(k + 1)]
    lines.append("P(T) :- " + ", ".join(f"A{i}(T)" for i in range(k + 1)) + ".")
    for i in range(k + 1):
        lines += [f"A{i}(T) :- B{i}(T).", f"A{i}(T) :- C{i}(T)."]
    return "\n".join(lines) + "\n"


def chain(n: int, offset: int = 0) -> str:
    """A1(T) :- A0(T-offset). … An(T) :- An-1(T-offset)., query on An."""
    body = "T" if offset == 0 else f"T-{offset}"
    lines = [f"#query A{n}(T).", "#delay A0 = 1."]
    lines += [f"A{i}(T) :- A{i - 1}({body})." for i in range(1, n + 1)]
    return "\n".join(lines) + "\n"


def error_of(text: str, modular: str = "auto") -> ProgramError:
    """The ProgramError of compiling `text` (fails if none)."""
    with pytest.raises(ProgramError) as exc:
        compile_program(text, FILE, modular=modular)
    return exc.value


def hypo_check(tmp_path: Path, text: str, *opts: str) -> subprocess.CompletedProcess:
    """`hypo check FILE` in a subprocess."""
    prog = tmp_path / FILE
    prog.write_text(text, encoding="utf-8")
    hypo = ROOT / ".venv" / "bin" / "hypo"
    cmd = [str(hypo)] if hypo.exists() else [sys.executable, "-m", "reasoning.cli.main"]
    return subprocess.run([*cmd, "check", str(prog), *opts], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


# --------------------------------------------------------------------------- (a) explosion


@pytest.mark.timeout(60)
@pytest.mark.parametrize("k", [12, 20])
def test_exploding_program_names_the_rule_and_the_count(k):
    """Unfolded (--modular never) the budget's error names the rule; by default modular
    evaluation keeps the A_i out of P's templates and the program is answered
    (tests/test_modular.py)."""
    assert compile_program(exploding(k), FILE).modular
    err = error_of(exploding(k), "never")
    line = 1 + 2 * (k + 1) + 1  # the #query, two #delay lines per i, then the rule
    assert (err.span.file, err.span.line, err.span.column) == (FILE, line, 1), err.format()
    assert f"exceeds the budget of {MAX_TEMPLATES} templates" in err.message
    assert f"this rule alone has {2 ** (k + 1)} derivations" in err.message
    rendered = err.format().splitlines()
    assert rendered[0].startswith(f"{FILE}:{line}:1: error: pre-processing of P(T)")
    from reasoning.language.errors import excerpt  # a line past EXCERPT_COLUMNS: a window of it

    assert rendered[1] == "    " + excerpt(exploding(k).splitlines()[line - 1], 1)[0]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("k", [12, 20])
def test_exploding_program_cli_exits_2_without_traceback(tmp_path, k):
    p = hypo_check(tmp_path, exploding(k), "--modular", "never")
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr
    assert f"{FILE}:{1 + 2 * (k + 1) + 1}:1: error:" in p.stderr
    assert f"{2 ** (k + 1)} derivations" in p.stderr and str(MAX_TEMPLATES) in p.stderr


@pytest.mark.timeout(60)
def test_program_below_the_budget_keeps_every_template():
    cp = compile_program(exploding(9), FILE)
    assert len(cp.main.templates) == 2 ** 10
    assert all(len(t.literals) == 10 for t in cp.main.templates)


@pytest.mark.timeout(60)
def test_alternatives_of_one_predicate_blame_the_rule_crossing_the_budget():
    n = MAX_TEMPLATES + 10
    text = "#query P(T).\n" + "".join(f"P(T) :- B{i}(T).\n" for i in range(n))
    err = error_of(text)
    assert err.span.line == 1 + MAX_TEMPLATES + 1, err.format()
    assert f"P has {n} derivations through its {n} rules" in err.message


@pytest.mark.timeout(60)
def test_exponential_failing_search_stops_at_the_step_budget():
    k = 24  # 2^25 partial derivations, none of which survives Z(b, T) against Z(a, T)
    lines = ["#query P(X, T).",
             "P(X, T) :- " + ", ".join(f"A{i}(X, T)" for i in range(k + 1)) + ", Z(X, T).",
             "Z(a, T) :- W(T)."]
    for i in range(k + 1):
        lines += [f"A{i}(b, T) :- B{i}(T).", f"A{i}(b, T) :- C{i}(T)."]
    err = error_of("\n".join(lines) + "\n", "never")
    assert err.span.line == 2, err.format()
    assert "resolution steps" in err.message and "this rule alone" in err.message
    assert compile_program("\n".join(lines) + "\n", FILE).modular  # (by default: kept)


# --------------------------------------------------------------------------- (b) long bodies


def two_long_rules(n: int) -> str:
    """Two rules of n body literals; the first one's hypotheses are a subset of the second's."""
    body = ", ".join(f"B{i}(X, T)" for i in range(n))
    return f"#query P(X, T).\nP(X, T) :- {body}.\nP(X, T) :- {body}, C(X, T-1).\n"


def two_long_rules_sharing_predicates(n: int) -> str:
    """Two rules of n+1 literals over one predicate B: only the second is minimal."""
    b1 = ", ".join(f"B(X, Y{i}, T)" for i in range(n))
    b2 = ", ".join(f"B(X, Z{i}, T)" for i in range(n))
    return f"#query P(X, T).\nP(X, T) :- {b1}, C(X, T).\nP(X, T) :- {b2}, C(Y, T).\n"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("n", [1000, 2500])
def test_long_bodies_reach_no_recursion_limit(n):
    cp = compile_program(two_long_rules(n), FILE)
    (t,) = cp.main.templates  # the second rule's template is subsumed (000 Example 6)
    assert [str(l) for l in t.literals] == [f"B{i}(X, T)" for i in sorted(range(n), key=str)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("n", [1000, 2500])
def test_long_bodies_over_one_predicate_are_matched_without_backtracking_blowup(n):
    """The second rule's template is kept, and its n literals B(X, Zi, T), equal but for a
    variable of their own, are one (preprocess.core_literals)."""
    cp = compile_program(two_long_rules_sharing_predicates(n), FILE)
    (t,) = cp.main.templates
    assert [str(l) for l in t.literals] == ["B(X, Z0, T)", "C(Y, T)"]
    assert sum(1 for l in t.literals if l.atom.pred == "C") == 1
    c = next(l for l in t.literals if l.atom.pred == "C")
    assert str(c.atom.args[0]) != "X"  # C(Y, T): the more general template is kept


@pytest.mark.timeout(60)
def test_long_body_of_idb_atoms():
    n = 3000
    text = ("#query P(T).\nP(T) :- " + ", ".join(f"A{i}(T)" for i in range(n)) + ".\n"
            + "".join(f"A{i}(T) :- B{i}(T-{i % 3}).\n" for i in range(n)))
    (t,) = compile_program(text, FILE).main.templates
    assert len(t.literals) == n
    assert {str(l) for l in t.literals} == {f"B{i}(T{'' if i % 3 == 0 else f'-{i % 3}'})"
                                            for i in range(n)}


# --------------------------------------------------------------------------- (c) long chains


@pytest.mark.timeout(60)
@pytest.mark.parametrize("n", [300, 2000])
def test_long_nonrecursive_chain_is_accepted(n):
    cp = compile_program(chain(n), FILE)
    assert cp.analysis.nonrecursive
    assert [str(t) for t in cp.main.templates] == ["⟨∅, {A0(T)}⟩"]
    assert len(cp.queries) == 1


@pytest.mark.timeout(60)
def test_long_chain_with_offsets_keeps_its_time_arithmetic():
    cp = compile_program(chain(300, offset=1), FILE)
    assert [str(t) for t in cp.main.templates] == ["⟨∅, {A0(T-300)}⟩"]


@pytest.mark.timeout(60)
def test_long_chain_cli(tmp_path):
    p = hypo_check(tmp_path, chain(2000))
    assert p.returncode == 0, p.stderr
    assert "P_Q0 = {⟨∅, {A0(T)}⟩}" in p.stdout


# --------------------------------------------------------------------------- (d) recursion


NONTERMINATING = "#query S(X, T).\nS(X, T+1) :- S(X, T).\nS(X, T) :- R(X, T).\n"


def test_recursive_program_still_does_not_terminate():
    err = error_of(NONTERMINATING)
    assert "would not terminate" in err.message and "S -> S" in err.message
    assert (err.span.line, err.span.column) == (2, 1)


def test_preprocessing_a_recursive_program_directly_does_not_terminate():
    prog, _ = parse_program_with_spans(NONTERMINATING, FILE)
    pre = Preprocessor(prog, idb_predicates(prog), prog.rigid)
    with pytest.raises(ProgramError) as exc:
        pre.templates(prog.query, prog.query_span)
    assert "does not terminate" in exc.value.message
    assert exc.value.span.line == 2  # the recursive rule


def test_recursive_program_cli(tmp_path):
    p = hypo_check(tmp_path, NONTERMINATING)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "not terminate" in p.stderr
