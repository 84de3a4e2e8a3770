"""Windows as one literal (issue 45.2, `--windows literal`): a positive diamond is its
operand at a time variable bound to the window, not one rule per tick — the same definite
answers at every tick as unfolding, on programs with delays and negation."""
from __future__ import annotations

import importlib.util
import json
import random

import pytest

from reasoning.cli.main import main
from reasoning.language.compiler import compile_program
from reasoning.language.errors import HypoError, ProgramError
from reasoning.run.session import Session
from reasoning.semantics.patterns import Fact
from tests.helpers import ROOT

WIDE = "#query P(X, T).\nP(X, T) :- Diamondminus[0,30] A(X, T), B(X, T).\n"


def _family():
    """bench/windows.py's generator of issue 45's family (2–4 levels of window rules)."""
    spec = importlib.util.spec_from_file_location("bench_windows", ROOT / "bench" / "windows.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.family


def test_a_window_is_one_literal_on_a_time_variable():
    lit = compile_program(WIDE, "w.tdl", windows="literal")
    (tp,) = lit.main.templates
    assert [str(l) for l in tp.literals] == ["A(X, S)", "B(X, T)"]
    assert tp.windows == (("S", "T", -30, 0),)
    assert len(compile_program(WIDE, "w.tdl", windows="unfold").main.templates) == 31


def test_windows_over_windows_are_closed_and_the_inner_time_projected():
    text = ("#query Q(X, T).\nQ(X, T) :- Diamondminus[0,2] P(X, T), C(X, T).\n"
            "P(X, T) :- Diamondplus[1,3] E(X, T).\n")
    (tp,) = compile_program(text, "w.tdl", windows="literal").main.templates
    # E at S with S − R ∈ [1, 3] and R − T ∈ [−2, 0]: S − T ∈ [−1, 3]; R occurs nowhere
    assert tp.windows == (("S", "T", -1, 3),)
    assert tp.variables() == ("S", "T", "X")


def test_an_unknown_window_mode_is_one_clear_error():
    with pytest.raises(HypoError, match="unknown window mode 'wide'"):
        compile_program(WIDE, "w.tdl", windows="wide")


def test_literal_windows_print_their_bounds_and_deadlines(tmp_path, capsys):
    prog = tmp_path / "w.tdl"
    prog.write_text("#query P(X, T).\n#delay B = 1.\n"
                    "P(X, T) :- Diamondplus[0,2] B(X, T), A(X, T).\n")
    stream = tmp_path / "s.jsonl"
    stream.write_text("".join(json.dumps({"tick": t, "fact": f}) + "\n" for t, f in
                              [(0, "A(c, 0)"), (2, "A(d, 2)"), (3, "B(d, 3)")]))
    assert main(["run", str(prog), "--stream", str(stream), "--until", "4", "--format", "text",
                 "--windows", "literal"]) == 0
    out = capsys.readouterr().out
    assert ("P(c, 0) for 1 ≤ S ≤ 2  if B(c, S)  [decided by tick 3; evidence: A(c, 0)]"
            in out)
    assert "P(c, 0) for S = 2  if B(c, S)" in out
    assert "definite        P(d, 2)  because A(d, 2); B(d, 3)" in out
    assert "refuted         P(c, 0)  (was: if B(c, 2))" in out
    assert "S ≥" not in out  # every window's variable has its end


def test_the_columnar_executor_hands_literal_windows_to_the_row_engine():
    sess = Session(compile_program(WIDE, "w.tdl", windows="literal"), engine="columnar")
    sess.step([Fact("A", ("c",), 0)], 0)
    assert "one literal" in sess.why()
    assert sess.executor == "row"


def _heads(sess: Session) -> tuple[set, set]:
    definite, hypothetical = set(), set()
    for o in sess.objects():
        k = json.dumps(o["substitution"], sort_keys=True)
        (definite if o["status"] == "definite" else hypothetical).add(k)
    return definite, hypothetical


@pytest.mark.slow
@pytest.mark.parametrize("delays_and_negation", [False, True], ids=["plain", "delays-negation"])
def test_literal_windows_give_the_unfolded_definite_answers_at_every_tick(delays_and_negation):
    """Issue 45's family (unfolding within its budgets): at every tick the same definite
    answers, and every head hypothetical when unfolded is hypothetical with literal windows
    (which may also print an answer with evidence whose unfolded template a smaller one
    subsumed: its hypotheses are then those of that template's pending answer)."""
    rnd = random.Random(7 + delays_and_negation)
    compared = 0
    for text, _, _ in _family()(24, 3 + delays_and_negation, 4):
        delays = {}
        if delays_and_negation:
            for e in ("E1", "E2"):
                delays[e] = rnd.randint(0, 2)
                text = f"#delay {e} = {delays[e]}.\n" + text
            lines = text.splitlines()
            i = rnd.randrange(2, len(lines))
            lines[i] = lines[i][:-1] + ", not E2(X, T)."
            text = "\n".join(lines) + "\n"
        try:
            unfolded = compile_program(text, "f.tdl", modular="never", windows="unfold")
        except ProgramError:
            continue  # over the budgets when unfolded
        literal = compile_program(text, "f.tdl", modular="never", windows="literal")
        stream: dict = {}
        for t in range(10):
            for e in ("E1", "E2"):
                for c in ("c0", "c1", "c2"):
                    if rnd.random() < 0.5:
                        at = t + rnd.randint(0, delays.get(e, 0))
                        stream.setdefault(at, []).append(Fact(e, (c,), t))
        a, b = Session(unfolded, engine="row"), Session(literal, engine="row")
        for tau in range(30):
            a.step(stream.get(tau, []), tau)
            b.step(stream.get(tau, []), tau)
            (da, ha), (db, hb) = _heads(a), _heads(b)
            assert da == db, (text, tau)
            assert ha <= hb, (text, tau, sorted(ha - hb))
        compared += 1
    assert compared >= 8


def test_the_lake_unfolds_its_windows_whatever_hypo_windows_says(tmp_path, monkeypatch):
    from jobs.lake import init
    from jobs.table.store import Lake

    prog = tmp_path / "w.tdl"
    prog.write_text(WIDE)
    monkeypatch.setenv("HYPO_WINDOWS", "literal")
    init(str(tmp_path / "lake"), str(prog))
    cp = Lake(str(tmp_path / "lake")).program
    assert not cp.windows and len(cp.main.templates) == 31
