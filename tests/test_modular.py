"""Modular evaluation (issue 45, reasoning/language/modular.py): an IDB literal kept out of
its callers' templates is a derived hypothesis that step 3 decides by its auxiliary query.
Random programs give the same definite answers at every tick with every IDB literal kept
(`always`) as unfolded (`never`); hypothetical answers stay supported; programs whose P_Q
was over pre-processing's budgets are answered, and equal the reference evaluator."""
from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasoning.language.compiler import compile_program
from reasoning.language.errors import ProgramError
from reasoning.language.parser import parse_fact
from reasoning.language.syntax import Atom, Const, Time, Var
from reasoning.row.engine import Engine
from reasoning.run.session import Session
from reasoning.semantics.explain import static_horizons
from reasoning.semantics.patterns import Fact
from reasoning.semantics.reference import answers as ref_answers
from tests.gen import cases
from tests.helpers import budget

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))
_VAR = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Za-z0-9_]*(?![A-Za-z0-9_(])")
# a printed literal whose time is a variable (a second time variable, unbound): not a
# premise the reference evaluator takes
_TIME_VAR = re.compile(r"[(,] ?[A-Z][A-Za-z0-9_]*(?:[+-][0-9]+)?\)$")


def _until(case) -> int:
    rel = static_horizons(Engine(compile_program(case.text, "<gen>", modular="never")))
    return case.horizon + 2 + max([v for v in rel.values() if v is not None] + [3]) + 3


def _definite_so_far(case, mode: str, engine: str = "row"):
    """(compiled program, per tick the definite ground answers of the query so far)."""
    cp = compile_program(case.text, "<gen>", modular=mode)
    sess = Session(cp, engine=engine)
    seen: set = set()
    out = []
    for tau in range(_until(case) + 1):
        sess.step(case.stream.get(tau, []), tau)
        seen |= {tuple(sorted(o["substitution"].items()))
                 for o in sess.objects(False, False, True) if o["status"] == "definite"}
        out.append(set(seen))
    return cp, out


@pytest.mark.parametrize("multi_time", [False, True], ids=["one_time", "multi_time"])
@pytest.mark.parametrize("negation", [False, True], ids=["positive", "negation"])
@pytest.mark.parametrize("engine", ["row", "columnar"])
def test_kept_and_unfolded_give_the_same_definite_answers_at_every_tick(negation, engine,
                                                                         multi_time):
    """Random nonrecursive programs (delays, per-instance δ, rigid atoms, negation): with
    every IDB literal kept as a derived hypothesis, the definite answers known at each tick
    are those of the unfolded program (an answer a second derivation makes definite again
    is printed once, not again).  On `columnar` the columnar executor decides them
    (columnar/step3_derived.py).

    With negation a kept literal can be decided later than unfolded, never earlier: where
    unfolding sees that the literal's rules contradict its caller's other literals (`P(X,
    T) :- not E(X, T), Q(X, T).` with `Q(X, T) :- E(X, T).` has no template at all), the
    derived hypothesis waits for Q's answers to be refuted (~1 program in 1 000 generated):
    then every answer comes no earlier, and the answers up to the compared time are the
    same once every deadline passed.

    multi_time: some rules have a second time variable; the predicates such a rule reaches
    are unfolded, the others kept (modular.multi_temporal)."""
    kept = [0]

    @settings(SETTINGS, max_examples=budget(60, engine))
    @given(cases(negation=negation, multi_time=multi_time))
    def check(case):
        _, unfolded = _definite_so_far(case, "never", engine)
        cp, modular = _definite_so_far(case, "always", engine)
        kept[0] += bool(cp.modular)
        for tau, (a, b) in enumerate(zip(unfolded, modular)):
            if negation:
                assert b <= a, (case.text, tau, sorted(b - a), sorted(cp.modular))
            else:
                assert a == b, (case.text, tau, sorted(a ^ b), sorted(cp.modular))
        t_cmp = case.horizon + 1
        last = [{x for x in s if dict(x)["T"] <= t_cmp} for s in (unfolded[-1], modular[-1])]
        assert last[0] == last[1], (case.text, sorted(last[0] ^ last[1]))

    check()
    # (most generated programs have a positive IDB literal; with two time variables in
    # some rules, about one in eight keeps one)
    assert kept[0] > (10 if not multi_time else 2), kept


@pytest.mark.parametrize("multi_time", [False, True], ids=["one_time", "multi_time"])
def test_the_columnar_executor_decides_derived_literals_as_the_row_engine_does(multi_time):
    """Random programs (negation, delays, per-instance δ, rigid atoms, two time variables)
    with every IDB literal it can keep kept derived: `--engine columnar` (step 3 node by
    node, derived literals decided on the row engine's functions, callers seeded by
    definite derived atoms, step 2 read ahead: columnar/step3_derived.py) prints at every
    tick what the row engine prints, every query's answers, pending included."""
    kept = [0]

    @settings(SETTINGS, max_examples=budget(450, "columnar"))
    @given(cases(negation=True, multi_time=multi_time))
    def check(case):
        cp = compile_program(case.text, "<gen>", modular="always")
        if not cp.modular:
            return
        kept[0] += 1
        row, col = Session(cp, engine="row"), Session(cp, engine="columnar")
        assert col.executor == "columnar"
        for tau in range(_until(case) + 1):
            facts = case.stream.get(tau, [])
            row.step(facts, tau)
            col.step(facts, tau)
            assert col.lines(True, True) == row.lines(True, True), (case.text, tau)

    check()
    assert kept[0] > (5 if not multi_time else 1), kept


@pytest.mark.parametrize("opts", [["--format", "jsonl"], ["--format", "text"],
                                  ["--format", "jsonl", "--changes", "--all"],
                                  ["--format", "jsonl", "--all", "--all-queries", "--ground"],
                                  ["--format", "jsonl", "--confidence", "--changes"]],
                         ids=["jsonl", "text", "changes", "all", "confidence"])
def test_hypo_run_prints_the_same_on_either_executor(tmp_path, opts):
    """`hypo run --engine columnar` of the branching program (kept modular) prints what
    `--engine row` prints, byte for byte: lines, the text view, --changes (keyed lines of
    derived ways), pending answers of every query grounded, confidences."""
    import contextlib
    import io

    from hypo_cli import main as hypo_main

    prog, stream = tmp_path / "b.tdl", tmp_path / "s.jsonl"
    prog.write_text(_branching(12))
    stream.write_text("".join(json.dumps({"tick": t, "fact": str(f)}) + "\n"
                              for t, fs in sorted(_branching_stream(12).items()) for f in fs))
    outs = []
    for engine in ("row", "columnar"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert hypo_main(["run", str(prog), "--stream", str(stream), "--engine", engine,
                              *opts]) == 0
        outs.append(out.getvalue())
    assert outs[0] == outs[1] and outs[0].count("\n") > 100


def test_a_piece_of_a_derived_literal_waiting_on_an_arrived_fact_is_dropped_on_columnar():
    """Found by the property test above: step 3 binds X = a in the pending answer of P3
    at T = 1 (P2(a, 0) definite) whose E1(a, 0) has arrived at this tick — the piece waits
    for a fact that is here, and its refinement with the fact as evidence is another
    answer (exact.py "arrived"); the columnar executor kept both until exactrows.py's
    drop_arrived looked at templates with derived literals too."""
    text = ("#query P3(X, T).\n#delay E1 = 2.\n#delay E1(a, T) = 3.\n"
            "P1(X, T) :- E1(X, T-2).\nP2(X, T-1) :- E1(X, T+1).\n"
            "P3(X, T+1) :- P2(X, T), P2(X, T+1), E1(X, T).\n")
    stream = {0: ["E1(b, 0)"], 2: ["E1(a, 0)", "E1(a, 2)"], 3: ["E1(a, 1)"], 6: ["E1(a, 3)"]}
    cp = compile_program(text, "<t>", modular="always")
    assert cp.modular == {"P2"}
    row, col = Session(cp, engine="row"), Session(cp, engine="columnar")
    for tau in range(10):
        facts = [Fact(a.pred, tuple(c.value for c in a.args), a.time.offset)
                 for a in map(parse_fact, stream.get(tau, []))]
        row.step(facts, tau)
        col.step(facts, tau)
        assert col.lines(True, True) == row.lines(True, True), tau


@pytest.mark.parametrize("multi_time", [False, True], ids=["one_time", "multi_time"])
def test_hypothetical_answers_with_derived_hypotheses_are_supported(multi_time):
    """A hypothetical answer's derived evidence is derived by the facts arrived so far, and
    its evidence and hypotheses together (derived atoms as premises) derive the answer."""

    checked = [0]

    @settings(SETTINGS, max_examples=budget(60))
    @given(cases(negation=True, multi_time=multi_time))
    def check(case):
        cp = compile_program(case.text, "<gen>", modular="always")
        sess = Session(cp, engine="row")
        arrived: list = []
        for tau in range(_until(case) + 1):
            sess.step(case.stream.get(tau, []), tau)
            arrived += case.stream.get(tau, [])
            facts = [Atom(f.pred, tuple(Const(a) for a in f.args), Time(None, f.time))
                     for f in arrived]
            for o in sess.objects(False, False, True):
                if o["status"] != "hypothetical" or any(
                        l.startswith("not ") or _TIME_VAR.search(l)
                        for l in o["evidence"] + o["hypotheses"]):
                    continue
                for l in o["evidence"]:
                    a = parse_fact(_VAR.sub("fresh", l))
                    if a.pred in cp.modular:
                        q = Atom(a.pred, tuple(Var(f"X{i}") for i in range(len(a.args))),
                                 Time("T", 0))
                        got = ref_answers(cp.program, q, facts, tau + 14, cp.domain)
                        want = tuple(sorted([*((f"X{i}", c.value) for i, c in enumerate(a.args)),
                                             ("T", a.time.offset)]))
                        assert want in set(got), (case.text, o, l)
                premises = [parse_fact(_VAR.sub("fresh", l))
                            for l in o["evidence"] + o["hypotheses"]]
                checked[0] += 1
                got = ref_answers(cp.program, cp.main.atom, premises, tau + 14, cp.domain)
                assert tuple(sorted(o["substitution"].items())) in set(got), (case.text, o)

    check()
    assert checked[0] > 20, checked


def _branching(k: int) -> str:
    """bench/check.py's `explode`: P(T) :- A0(T), …, Ak(T), two rules per Ai — 2^(k+1)
    templates unfolded, refused by pre-processing's budget of 4 096 from k = 12."""
    lines = ["#query P(T).", "#delay B = 1.", "#delay C = 1."]
    lines.append("P(T) :- " + ", ".join(f"A{i}(T)" for i in range(k + 1)) + ".")
    for i in range(k + 1):
        lines += [f"A{i}(T) :- B(i{i}, T).", f"A{i}(T) :- C(i{i}, T)."]
    return "\n".join(lines) + "\n"


def _branching_stream(k: int) -> dict:
    """tick -> [Fact]: B and C of each i_j at 8 times, 80 % of them, a tick late or not."""
    import random

    rnd = random.Random(k)
    stream: dict = {}
    for t in range(8):
        for i in range(k + 1):
            for p in ("B", "C"):
                if rnd.random() < 0.8:
                    stream.setdefault(t + rnd.randint(0, 1), []).append(Fact(p, (f"i{i}",), t))
    return stream


@pytest.mark.parametrize("k", [12, 20])
def test_a_program_over_the_budget_is_answered_and_equals_the_reference(k):
    """The branching program: refused unfolded (`never`), answered by default (`auto` keeps
    the A_i out of P's templates); at every tick its definite answers are exactly those
    the reference evaluator derives from the facts arrived so far (a positive program)."""
    text = _branching(k)
    with pytest.raises(ProgramError) as e:
        compile_program(text, "b.tdl", modular="never")
    assert "exceeds the budget of 4096 templates" in e.value.message
    cp = compile_program(text, "b.tdl")
    assert cp.modular and sum(len(q.templates) for q in cp.queries) < 300
    stream = _branching_stream(k)
    sess = Session(cp, engine="auto")
    seen: set = set()
    arrived: list = []
    for tau in range(11):
        sess.step(stream.get(tau, []), tau)
        arrived += stream.get(tau, [])
        seen |= {o["substitution"]["T"] for o in sess.objects(False, False, True)
                 if o["status"] == "definite"}
        want = ref_answers(cp.program, cp.main.atom,
                           [Atom(f.pred, tuple(Const(a) for a in f.args), Time(None, f.time))
                            for f in arrived], tau + 4, cp.domain)
        assert seen == {dict(w)["T"] for w in want}, tau
    assert seen  # (some tick had every A_i)


def test_a_rule_of_two_time_variables_keeps_what_it_reaches_unfolded():
    """A rule of two time variables blocks keeping the predicates its templates reach
    (modular.multi_temporal), not the whole program: beside it, others are kept; where it
    blocks everything a program over the budget needs, the budget error says why."""
    ok = _branching(12) + "Z(T) :- B(z, T), C(z, S).\nW(T) :- Z(T), B(w, T).\n"
    kept = compile_program(ok, "b.tdl").modular
    assert kept and kept <= {f"A{i}" for i in range(13)}, kept
    assert compile_program(ok, "b.tdl", modular="always").modular == {
        f"A{i}" for i in range(13)}  # (not Z, which W's template holds with S)
    blocked = _branching(12).replace("P(T) :- ", "P(T) :- Z(T), ") + \
        "Z(T) :- B(z, T), C(z, S).\n"
    with pytest.raises(ProgramError) as e:
        compile_program(blocked, "b.tdl")
    assert "exceeds the budget" in e.value.message
    assert e.value.message.endswith(
        "modular evaluation cannot keep A0, A1, A10, A11, A12, A2, A3, A4, A5, A6, A7, A8, A9, "
        "Z out of the templates: the rule at line 31 has two time variables (a derived "
        "literal must take its time from its template's head)")


def test_check_shows_it(tmp_path):
    """`hypo check` names the predicates kept (text and JSON), notes that `auto` and the
    lake run it on the row engine, and `--modular never` restores the budget's error at the
    rule (the lake: tests/test_lake_modular.py)."""
    from hypo_cli import main as hypo_main
    import contextlib
    import io

    prog = tmp_path / "b.tdl"
    prog.write_text(_branching(12))

    def hypo(*argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = hypo_main(list(argv))
            except SystemExit as e:
                code = e.code
        return code, out.getvalue(), err.getvalue()

    code, out, err = hypo("check", str(prog))
    assert code == 0 and "modular evaluation: A3, A4, A5, A6, A7, A8, A9 stay derived" in out
    assert "which the columnar executor decides row by row" in err and "the lake" in err
    code, out, _ = hypo("check", str(prog), "--format", "json")
    assert json.loads(out)["modular"] == [f"A{i}" for i in range(3, 10)]
    code, _, err = hypo("check", str(prog), "--modular", "never")
    assert code == 2 and err.startswith(f"{prog}:4:1: error: pre-processing of P(T) exceeds")
    stream = tmp_path / "s.jsonl"
    stream.write_text('{"tick": 0, "fact": "B(i0, 0)"}\n')
    code, _, err = hypo("run", str(prog), "--stream", str(stream), "-v")
    assert code == 0 and err.splitlines()[-1] == (
        "executor: row engine (auto: modular evaluation keeps A3, A4, A5, A6, A7, A8, A9 as "
        "derived literals, which the columnar executor decides row by row)"), err


@pytest.mark.slow
def test_window_programs_over_the_budget_agree_with_meteor():
    """Issue 45's family: 3–4 levels of IDB predicates over E1, E2, one or two rules each of
    1–3 past boxes and diamonds with bounds up to 5 — the programs pre-processing refused
    unfolded (over 4 096 templates) are answered, and their definite answers after the last
    deadline are MeTeoR's materialisation at the integer points (tests/test_metric.py)."""
    pytest.importorskip("meteor_reasoner", reason="MeTeoR is not installed: pip install "
                        "meteor-reasoner (requirements.txt)")
    from hypothesis import assume
    from hypothesis import strategies as st

    from tests.test_metric import _meteor_answers, _meteor_literal, _written

    refused = [0]

    @st.composite
    def family(draw):
        ours, theirs = [], []
        levels = draw(st.integers(3, 4))
        for level in range(1, levels + 1):
            lower = ("E1", "E2") + tuple(f"P{j}" for j in range(max(1, level - 2), level))
            for _ in range(draw(st.integers(1, 2))):
                items = []
                for _ in range(draw(st.integers(1, 3))):
                    kind = draw(st.sampled_from(("Boxminus", "Diamondminus")))
                    lo = draw(st.integers(0, 2))
                    hi = lo + draw(st.integers(0, 3))
                    p = draw(st.sampled_from(lower))
                    items.append((kind, False, 0, lo, hi, (p, p)))
                ours.append(f"P{level}(X, T) :- {', '.join(_written(i) for i in items)}.")
                theirs.append(f"P{level}(X):-" + ",".join(_meteor_literal(i) for i in items))
        facts = [(e, c, t) for t in range(8) for e in ("E1", "E2") for c in ("a", "b")
                 if draw(st.integers(0, 9)) < 7]
        return f"#query P{levels}(X, T).\n" + "\n".join(ours) + "\n", theirs, facts

    @settings(SETTINGS, max_examples=30)
    @given(family())
    def check(case):
        text, rules, facts = case
        try:
            compile_program(text, "<gen>", modular="never")
            assume(False)  # within the budget: tests/test_metric.py compares those
        except ProgramError as e:
            assert "exceeds the budget" in e.message, e.message
        cp = compile_program(text, "<gen>")  # auto: kept out of their callers
        assert cp.modular
        refused[0] += 1
        sess = Session(cp, engine="auto")
        stream: dict = {}
        for e, c, t in facts:
            stream.setdefault(t, []).append(Fact(e, (c,), t))
        until = 8 + 4 * 6 + 4
        ours = set()
        for tau in range(until + 1):
            sess.step(stream.get(tau, []), tau)
            ours |= {(o["substitution"]["X"], o["substitution"]["T"])
                     for o in sess.objects(False, False, True) if o["status"] == "definite"}
        assert ours == _meteor_answers(rules, facts, until, cp.main.atom.pred), (text, facts)

    check()
    assert refused[0] >= 5


def test_a_derived_hypothesis_shows_what_it_waits_for(tmp_path):
    """The JSONL of an answer waiting on a derived atom carries that atom's own evidence and
    hypotheses (`derived`), the text view a line under the answer, and its deadline is the
    derived atom's (E2(a, 1), δ 2: tick 3)."""
    from reasoning.cli.main import main
    import contextlib
    import io

    prog = tmp_path / "d.tdl"
    prog.write_text("#query P3(X, T).\n#delay E2 = 2.\nP1(X, T) :- E1(X, T), E2(X, T+1).\n"
                    "P3(X, T) :- P1(X, T-1), E3(X, T).\n")
    stream = tmp_path / "d.jsonl"
    stream.write_text('{"tick": 0, "fact": "E1(a, 0)"}\n{"tick": 1, "fact": "E3(a, 1)"}\n')
    outs = []
    for fmt in ("jsonl", "text"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert main(["run", str(prog), "--stream", str(stream), "--modular", "always",
                         "--until", "1", "--format", fmt]) == 0
        outs.append(out.getvalue())
    [o] = [json.loads(l) for l in outs[0].splitlines() if '"hypothetical"' in l]
    assert o["hypotheses"] == ["P1(a, 0)"] and o["evidence"] == ["E3(a, 1)"]
    assert o["deadline"] == 3
    assert o["derived"] == {"P1(a, 0)": [{"evidence": ["E1(a, 0)"], "hypotheses": ["E2(a, 1)"]}]}
    assert "    P1(a, 0) if E2(a, 1); evidence: E1(a, 0)\n" in outs[1]


_READ_AHEAD = ("#query P(X, T).\nQ(X, T) :- A(X, T-2).\nR(X, T) :- B(X, T), C(X, T+1).\n"
               "P(X, T) :- Q(X, T), R(X, T).\n")


def _run_jsonl(tmp_path, program: str, facts: list, until: int, *flags) -> list[dict]:
    """`hypo run --format jsonl` of a program and [(tick, fact text)]: the objects."""
    from reasoning.cli.main import main
    import contextlib
    import io

    prog, stream = tmp_path / "p.tdl", tmp_path / "s.jsonl"
    prog.write_text(program)
    stream.write_text("".join(json.dumps({"tick": k, "fact": f}) + "\n" for k, f in facts))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["run", str(prog), "--stream", str(stream), "--until", str(until),
                     "--format", "jsonl", *flags]) == 0
    return [json.loads(l) for l in out.getvalue().splitlines()]


def test_a_derived_atom_read_ahead_shows_the_ways_it_waits_for(tmp_path):
    """A caller's answer made ahead of τ by a definite derived atom (Q(a, 2) at tick 0)
    waits on another derived atom, R(a, 2), whose answers step 2 creates only at tick 2:
    its ways printed as [] — as if nothing could prove it — until then.  They are R's
    rules at that head time, as unfolding would print them."""
    objs = _run_jsonl(tmp_path, _READ_AHEAD, [(0, "A(a, 0)"), (2, "B(a, 2)")], 2,
                      "--modular", "always")
    assert [o["derived"] for o in objs] == [
        {"R(a, 2)": [{"evidence": [], "hypotheses": ["B(a, 2)", "C(a, 3)"]}]}] * 2 + [
        {"R(a, 2)": [{"evidence": ["B(a, 2)"], "hypotheses": ["C(a, 3)"]}]}]


def test_confidence_accounts_for_derived_hypotheses(tmp_path):
    """An answer waiting on a derived atom had confidence 1 (only EDB hypotheses counted):
    it is now P(some way of the atom holds) — R(a, 2) waits for B(a, 2) and C(a, 3), each
    at the model's prior 1/2 (0.25), then for C(a, 3) alone (0.5); a lifted diamond's
    narrowed window is P(some tick of it brings the operand): wider, likelier."""
    objs = _run_jsonl(tmp_path, _READ_AHEAD, [(0, "A(a, 0)"), (2, "B(a, 2)")], 2,
                      "--modular", "always", "--confidence")
    assert [o["confidence"] for o in objs] == [0.25, 0.25, 0.5]
    objs = _run_jsonl(tmp_path, "#query P(X, T).\nP(X, T) :- Diamondminus[0,30] A(X, T), "
                      "Diamondminus[0,30] B(X, T), Diamondminus[0,30] C(X, T).\n",
                      [(0, "A(a, 0)"), (3, "B(a, 3)")], 3, "--confidence")
    conf = {o["substitution"]["T"]: o["confidence"] for o in objs
            if o["tick"] == 3 and o["status"] == "hypothetical"}
    assert 0 < conf[4] < conf[5] < conf[10] < 1, conf  # (C's open ticks: 4..T)


def test_a_lifted_window_read_ahead_shows_its_open_ticks():
    """A lifted diamond's atom read ahead prints one way, its window narrowed to the ticks
    still open (`Diamondminus[0,6] C(a, 10)`: C(a, s) for s in 4..10 at tick 3), equal to
    the ways one by one (one per tick of the window, Engine.future_ways)."""
    text = ("#query P(X, T).\nP(X, T) :- Diamondminus[0,30] A(X, T), Diamondminus[0,30] "
            "B(X, T), Diamondminus[0,30] C(X, T).\n")
    cp = compile_program(text, "w.tdl")
    assert len(cp.modular) == 3
    stream = {0: [Fact("A", ("a",), 0)], 3: [Fact("B", ("a",), 3)]}

    def derived(tick_objs):
        return {o["substitution"]["T"]: o["derived"] for o in tick_objs
                if o["status"] == "hypothetical"}

    sess = Session(cp, engine="row")
    for tau in range(4):
        sess.step(stream.get(tau, []), tau)
    got = derived(sess.objects(False, False, True))
    assert sorted(got) == list(range(4, 34))  # (A(a, 0) reaches 30, a later A 33)
    assert got[10] == {"Diamondminus[0,30] C(a, 10)": [
        {"evidence": [], "hypotheses": ["Diamondminus[0,6] C(a, 10)"]}]}
    assert got[32]["Diamondminus[0,30] A(a, 32)"] == [
        {"evidence": [], "hypotheses": ["Diamondminus[0,28] A(a, 32)"]}]
    for cp, stream in _lifted_programs():
        _same_ways_narrowed_and_one_by_one(cp, stream, 45)


def _lifted_programs() -> list:
    """Six programs of three lifted diamonds (Diamondminus, Diamondplus; delays 0, 1, 2),
    each with a random stream of 40 ticks (late facts where there are delays)."""
    import random

    rnd = random.Random(4)
    out = []
    for delays in ("", "#delay C = 1.\n", "#delay A = 2.\n#delay C = 1.\n"):
        for op in ("Diamondminus", "Diamondplus"):
            text = (f"#query P(X, T).\n{delays}P(X, T) :- {op}[0,30] A(X, T), {op}[0,30] "
                    f"B(X, T), Diamondminus[1,30] C(X, T).\n")
            stream: dict = {}
            for t in range(40):
                for e in "ABC":
                    for c in "ab":
                        if rnd.random() < 0.06:
                            stream.setdefault(t + rnd.randint(0, 1 if delays else 0),
                                              []).append(Fact(e, (c,), t))
            out.append((compile_program(text, "w.tdl"), stream))
    return out


def test_a_lifted_windows_ways_computed_once_per_head_time_print_as_atom_by_atom():
    """Explainer._shared and _narrowed (what every ground atom of a lifted diamond at one
    head time shares, computed once a tick) print every tick's lines exactly as each atom
    looking at every answer (_L_for, Engine.future_ways) does."""
    for cp, stream in _lifted_programs():
        memo, each = Session(cp, engine="row"), Session(cp, engine="row")
        each.ex._shared = each.ex._narrowed = lambda pred, t: None
        for tau in range(45):
            got = []
            for sess in (memo, each):
                sess.step(stream.get(tau, []), tau)
                got.append(sess.lines(True, True))
            assert got[0] == got[1], tau


def _same_ways_narrowed_and_one_by_one(cp, stream: dict, until: int) -> None:
    """At every tick, every derived atom's ways printed with narrowed windows, expanded,
    equal those one by one (one per tick of the window: its answers, and for an atom read
    ahead Engine.future_ways)."""
    fast, slow = Session(cp, engine="row"), Session(cp, engine="row")
    slow.ex.narrow = False  # (the ways one by one)
    for tau in range(until):
        got = []
        for sess in (fast, slow):
            sess.step(stream.get(tau, []), tau)
            got.append({(o["substitution"]["X"], o["substitution"]["T"], atom):
                        sorted(x for w in ways for x in _expand(w))
                        for o in sess.objects(False, False, True)
                        for atom, ways in o.get("derived", {}).items()})
        assert got[0] == got[1], (tau, {k: (v, got[1].get(k)) for k, v in got[0].items()
                                        if got[1].get(k) != v})


def _expand(way: dict) -> list:
    """A way as the atoms it may be (a narrowed window: one per tick of it)."""
    [h] = way["hypotheses"]
    m = re.fullmatch(r"(Diamondminus|Diamondplus)\[(\d+),(\d+)\] (\w+)\((\w+), (\d+)\)", h)
    if m is None:
        return [(tuple(way["evidence"]), h)]
    op, lo, hi, pred, c, t = m.groups()
    ks = range(int(lo), int(hi) + 1)
    return [((), f"{pred}({c}, {int(t) - k if op == 'Diamondminus' else int(t) + k})")
            for k in ks]


@pytest.mark.parametrize("multi_time", [False, True], ids=["one_time", "multi_time"])
def test_printed_derived_ways_are_sound_and_none_is_missing(multi_time):
    """Random programs with every IDB literal kept: a derived atom an answer waits on is
    printed with no way only if the whole stream does not derive it, and each way printed
    for an atom read ahead (evidence and hypotheses as premises) derives it."""

    seen = [0, 0, 0]  # answers waiting on a derived atom, atoms with no way, ways checked

    @settings(SETTINGS, max_examples=budget(40))
    @given(cases(negation=True, multi_time=multi_time))
    def check(case):
        cp = compile_program(case.text, "<gen>", modular="always")
        sess = Session(cp, engine="row")
        until = _until(case)
        truth: dict = {}
        atoms = [Atom(f.pred, tuple(Const(a) for a in f.args), Time(None, f.time))
                 for f in case.facts_by_time]
        for tau in range(until + 1):
            sess.step(case.stream.get(tau, []), tau)
            for o in sess.objects(False, False, True):
                for text, ways in o.get("derived", {}).items():
                    a = parse_fact(text)
                    q = Atom(a.pred, tuple(Var(f"X{i}") for i in range(len(a.args))),
                             Time("T", 0))
                    want = tuple(sorted([*((f"X{i}", c.value) for i, c in enumerate(a.args)),
                                         ("T", a.time.offset)]))
                    if a.pred not in truth:
                        truth[a.pred] = set(ref_answers(cp.program, q, atoms, until + 14,
                                                        cp.domain))
                    seen[0] += 1
                    if not ways:
                        seen[1] += 1
                        assert want not in truth[a.pred], (case.text, tau, o)
                        continue
                    if a.time.offset <= tau:
                        continue
                    for w in ways:
                        lits = w["evidence"] + w["hypotheses"]
                        if any(l.startswith("not ") or _TIME_VAR.search(l) for l in lits):
                            continue
                        seen[2] += 1
                        premises = [parse_fact(_VAR.sub("fresh", l)) for l in lits]
                        assert want in set(ref_answers(cp.program, q, premises, until + 14,
                                                       cp.domain)), (case.text, tau, o, w)

    check()
    assert seen[0] > (100 if not multi_time else 10) and seen[2] > (20 if not multi_time else 2), seen


def test_a_bad_hypo_modular_is_one_error_line(monkeypatch, capsys):
    """$HYPO_MODULAR outside auto|always|never: one line naming it, exit 2, no traceback."""
    from reasoning.cli.main import main
    from tests.helpers import EXAMPLES

    monkeypatch.setenv("HYPO_MODULAR", "bogus")
    code = main(["check", str(EXAMPLES / "wind_turbines.tdl")])
    err = capsys.readouterr().err
    assert code == 2 and err == ("hypo: error: unknown modular evaluation 'bogus' "
                                         "($HYPO_MODULAR or --modular: auto, never, always)\n")


def test_auto_skips_an_unfolding_certain_to_exceed_the_budget_and_nothing_else():
    """certainly_over: exact only when no resolution step can fail (heads of distinct
    variables with a time variable, no rigid or periodic literal, no fact); the compiled
    program is the same as after a failed attempt."""
    from reasoning.language.analysis import analyse
    from reasoning.language.modular import certainly_over
    from reasoning.language.parser import parse_program
    from reasoning.language.preprocess import MAX_TEMPLATES
    from reasoning.language.wellformed import edb_predicates, idb_predicates, predicate_arities

    def over(text):
        prog = parse_program(text, "b.tdl")
        idb, edb = idb_predicates(prog), edb_predicates(prog)
        an = analyse(prog, idb, edb, predicate_arities(prog))
        return certainly_over(prog, an, prog.query.pred, MAX_TEMPLATES)

    assert over(_branching(12)) and not over(_branching(10))
    # a constant in a head: resolution may fail, the count is only an upper bound
    assert not over(_branching(12).replace("A0(T) :- B(i0, T).", "A0(T) :- B(i0, T).\n"
                                           "A0(T) :- A0c(k, T).\nA0c(j, T) :- C(i0, T)."))
    cp = compile_program(_branching(12), "b.tdl")
    assert sorted(cp.modular) == [f"A{i}" for i in range(3, 10)]


def test_repeated_derivations_make_their_template_once():
    """Pre-processing skips a derivation whose head, literals and intermediate times equal
    an earlier one's (only the query's variables): the templates are those of finishing
    every derivation (two diamonds over a predicate of boxes: 3 942 derivations)."""
    import reasoning.language.preprocess as P

    text = ("#query P3(X, T).\nP1(X, T) :- Boxminus[2,4] E1(X, T).\n"
            "P1(X, T) :- Boxminus[1,3] E2(X, T), Boxminus[1,3] E1(X, T).\n"
            "P2(X, T) :- Boxminus[0,8] E2(X, T), Boxminus[1,3] E2(X, T), Boxminus[1,8] E1(X, T).\n"
            "P2(X, T) :- Boxminus[0,0] P1(X, T), Diamondminus[2,5] E1(X, T).\n"
            "P3(X, T) :- Diamondminus[2,10] P2(X, T), Diamondminus[2,7] P2(X, T).\n")
    fast = compile_program(text, "w.tdl", modular="never")
    cls = [c for c in vars(P).values() if isinstance(c, type) and hasattr(c, "_leaf_key")][0]
    orig = cls._leaf_key
    cls._leaf_key = lambda *a: None
    try:
        slow = compile_program(text, "w.tdl", modular="never")
    finally:
        cls._leaf_key = orig
    assert [q.templates for q in fast.queries] == [q.templates for q in slow.queries]


@st.composite
def _over_the_rule_budget(draw):
    """A rule whose diamonds (and Since) multiply past metric.py's 4 096 rules, with a plain
    literal or a box beside them, over E1..E3 with δ 0 or 1, and the stream."""
    ops = []
    while True:
        op = draw(st.sampled_from(("Diamondminus", "Diamondminus", "Diamondplus", "Since")))
        lo = draw(st.integers(0, 2))
        hi = lo + draw(st.integers(9, 16))
        p, q = draw(st.sampled_from(("E1", "E2", "E3"))), draw(st.sampled_from(("E1", "E2", "E3")))
        ref = draw(st.sampled_from(("T", "T", "T-1", "T+1")))
        if op == "Since":
            lo = max(lo, 1)
            ops.append((f"{p}(X, {ref}) Since[{lo},{hi}] {q}(X, {ref})", hi - lo + 1))
        else:
            ops.append((f"{op}[{lo},{hi}] {p}(X, {ref})", hi - lo + 1))
        total = 1
        for _, n in ops:
            total *= n
        if total > 4096:
            break
    extra = draw(st.sampled_from(("E1(X, T)", "Boxminus[0,1] E2(X, T)", "E3(X, T-2)")))
    body = [o for o, _ in ops]
    body.insert(draw(st.integers(0, len(body))), extra)
    delays = [f"#delay {e} = 1.\n" for e in ("E1", "E2", "E3") if draw(st.booleans())]
    text = "#query P(X, T).\n" + "".join(delays) + f"P(X, T) :- {', '.join(body)}.\n"
    stream: dict = {}
    for t in range(30):
        for e in ("E1", "E2", "E3"):
            for c in ("a", "b"):
                if draw(st.integers(0, 9)) < 3:
                    late = 1 if f"#delay {e} = 1." in text and draw(st.booleans()) else 0
                    stream.setdefault(t + late, []).append(Fact(e, (c,), t))
    return text, stream


@pytest.mark.parametrize("engine", ["row", "columnar"])
def test_a_rule_whose_diamonds_multiply_past_the_budget_is_answered(engine):
    """Metric translation refused a rule whose diamonds multiply past 4 096 rules (issue 45:
    `Diamondminus[0,30]` three times is 29 791).  Each positive diamond — and Since whose
    every case binds its variables — now becomes one literal on an auxiliary predicate, and
    modular evaluation keeps those it must: at every tick the definite answers are exactly
    those the reference evaluator derives from the facts arrived so far (a positive
    program; δ 0 or 1, references T, T−1, T+1, forward windows included)."""
    from reasoning.language.compiler import shown_preds

    @settings(SETTINGS, max_examples=budget(20, engine))
    @given(_over_the_rule_budget())
    def check(case):
        text, stream = case
        cp = compile_program(text, "<gen>")
        lifted = {l.atom.pred for r in cp.program.rules for l in r.body
                  if l.positive and l.atom.pred.startswith("__")}
        # auto keeps every window lifted out (unless equal diamonds, one predicate, fit)
        assert cp.modular in (frozenset(), lifted), (text, sorted(cp.modular))
        assert "__" not in shown_preds(cp.modular)
        sess = Session(cp, engine=engine)
        seen: set = set()
        arrived: list = []
        for tau in range(48):
            sess.step(stream.get(tau, []), tau)
            arrived += stream.get(tau, [])
            objs = sess.objects(False, False, True)
            seen |= {(o["substitution"]["X"], o["substitution"]["T"]) for o in objs
                     if o["status"] == "definite"}
            if tau % 6 == 5 or tau == 47:
                want = ref_answers(cp.program, cp.main.atom,
                                   [Atom(f.pred, tuple(Const(a) for a in f.args),
                                         Time(None, f.time)) for f in arrived], tau + 24,
                                   cp.domain)
                assert seen == {(dict(w)["X"], dict(w)["T"]) for w in want}, (text, tau)
            # a derived hypothesis prints as the user's operator, never as `__…`
            assert not any("__" in h for o in objs for h in o["hypotheses"]), text

    check()


def test_a_derived_literal_s_nogoods_reach_a_negation_of_its_caller_on_the_columnar_executor():
    """Found by the property test above with HYPO_THOROUGH=1 (2026-11-30): P2's answer
    P2(X, 0), X ≠ a, got its nogood from the definite answer of the derived literal P1(X, 0)
    (not E1(a, 0) is false); the columnar executor took P2's template for one whose
    answers carry no nogood (it has no negated literal), read P2(X, 0) as covering P2(a, 0)
    and refuted P3(a, 0), which is definite."""
    text = ("#query P3(X, T).\n#delay E1 = 0.\n#domain a, b, c.\n"
            "P1(X, T) :- not E1(X, T).\nP2(X, T) :- P1(X, T).\n"
            "P3(X, T) :- E1(X, T), not P2(X, T).\n")
    cp = compile_program(text, "<gen>", modular="always")
    assert cp.modular
    row, col = Session(cp, engine="row"), Session(cp, engine="columnar")
    for tau in range(3):
        facts = [Fact("E1", ("a",), 0)] if tau == 0 else []
        row.step(facts, tau)
        col.step(facts, tau)
        lines = col.lines(True, True)
        assert lines == row.lines(True, True), tau
        if tau == 0:
            assert any('"query": "P3(X, T)", "status": "definite", "substitution": '
                       '{"X": "a", "T": 0}' in x for x in lines), lines
