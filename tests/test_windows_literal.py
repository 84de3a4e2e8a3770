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
    """(the definite ground answers of this tick, the heads of its hypothetical answers)."""
    definite = {json.dumps(o["substitution"], sort_keys=True)
                for o in sess.objects(False, False, True) if o["status"] == "definite"}
    hypothetical = {json.dumps(o["substitution"], sort_keys=True)
                    for o in sess.objects() if o["status"] != "definite"}
    return definite, hypothetical


def _same_answers(text: str, stream: dict, ticks: int) -> None:
    """Unfolded and literal windows (modular evaluation off): at every tick the definite
    answers known so far are equal (a definite head a second derivation makes again is
    printed once: test_modular's criterion), and every head hypothetical when unfolded is
    hypothetical with literal windows (which may also print an answer with evidence whose
    unfolded template a smaller one subsumed: its hypotheses are then those of that
    template's pending answer)."""
    a = Session(compile_program(text, "f.tdl", modular="never", windows="unfold"), engine="row")
    b = Session(compile_program(text, "f.tdl", modular="never", windows="literal"),
                engine="row")
    known_a: set = set()
    known_b: set = set()
    for tau in range(ticks):
        a.step(stream.get(tau, []), tau)
        b.step(stream.get(tau, []), tau)
        (da, ha), (db, hb) = _heads(a), _heads(b)
        known_a |= da
        known_b |= db
        assert known_a == known_b, (text, tau)
        assert ha <= hb, (text, tau, sorted(ha - hb))


def _stream(rnd: random.Random, delays: dict, ticks: int = 10) -> dict:
    stream: dict = {}
    for t in range(ticks):
        for e in ("E1", "E2"):
            for c in ("c0", "c1", "c2"):
                if rnd.random() < 0.5:
                    stream.setdefault(t + rnd.randint(0, delays.get(e, 0)), []).append(
                        Fact(e, (c,), t))
    return stream


@pytest.mark.slow
@pytest.mark.parametrize("delays_and_negation", [False, True], ids=["plain", "delays-negation"])
def test_literal_windows_give_the_unfolded_definite_answers_at_every_tick(delays_and_negation):
    """Issue 45's family (2–4 levels of windows over windows), within unfolding's budgets."""
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
            compile_program(text, "f.tdl", modular="never", windows="unfold")
        except ProgramError:
            continue  # over the budgets when unfolded
        _same_answers(text, _stream(rnd, delays), 30)
        compared += 1
    assert compared >= 8


@pytest.mark.slow
def test_literal_windows_with_a_time_variable_of_their_own():
    """Rules of two time variables: a window on the head's time is one literal, one on a
    time variable of its own stays unfolded — the same answers (delays, negation)."""
    rnd = random.Random(11)

    def item(var: str) -> str:
        op = rnd.choice(["Diamondminus", "Diamondplus", "Boxminus", None])
        p = rnd.choice(["E1", "E2"])
        lo = rnd.randint(0, 2)
        return f"{p}(X, {var})" if op is None else \
            f"{op}[{lo},{lo + rnd.randint(0, 3)}] {p}(X, {var})"

    for _ in range(16):
        delays = {e: rnd.randint(0, 2) for e in ("E1", "E2") if rnd.random() < 0.5}
        body = [item("T"), item("S")] + ([item("S")] if rnd.random() < 0.5 else []) + (
            ["not E2(X, T)"] if rnd.random() < 0.3 else [])
        text = "".join(f"#delay {e} = {d}.\n" for e, d in delays.items()) + \
            f"#query P(X, T).\nP(X, T) :- {', '.join(body)}.\n"
        _same_answers(text, _stream(rnd, delays), 24)


def test_the_lake_unfolds_its_windows_whatever_hypo_windows_says(tmp_path, monkeypatch):
    from jobs.lake import init
    from jobs.table.store import Lake

    prog = tmp_path / "w.tdl"
    prog.write_text(WIDE)
    monkeypatch.setenv("HYPO_WINDOWS", "literal")
    init(str(tmp_path / "lake"), str(prog))
    cp = Lake(str(tmp_path / "lake")).program
    assert not cp.windows and len(cp.main.templates) == 31
