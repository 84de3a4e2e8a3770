"""Periodic background facts (issue 12, second half; reasoning/language/periodic.py): the syntax of
linear repeating points b + a·n (003_…txt §2) and its errors, the lrp algebra, stream and
lake rejection, the calendar example, and on random programs: periodic facts mean the same
facts listed one by one (both executors, every tick), and both executors agree with the
reference evaluator."""
from __future__ import annotations

import contextlib
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasoning.cli.main import main
from reasoning.language.compiler import compile_program, describe_text
from reasoning.row.engine import Engine
from reasoning.language.errors import ProgramError
from reasoning.semantics.explain import static_horizons
from reasoning.language.parser import parse_program
from reasoning.semantics.patterns import Fact
from reasoning.language.periodic import TimeDomain, first, intersect
from reasoning.semantics.reference import answers as ref_answers
from reasoning.run.session import Session
from reasoning.stream.facts import validate
from reasoning.language.syntax import Atom, Const, Lrp, Time
from tests.helpers import ENGINES, ROOT, budget

# --------------------------------------------------------------------------- syntax


def test_lrp_forms():
    prog = parse_program("Maint(wt1, 3 + 7n).\nShift(a, 8n).\nM(b, 7n + 2) until 30.\n"
                         "M(c, 5).\nM(d, n).\nA(X, T) :- E(X, T), M(X, T).")
    assert [(str(f.head), prog.fact_times[i]) for i, f in enumerate(prog.facts)] == [
        ("Maint(wt1, 3)", Lrp(3, 7)), ("Shift(a, 0)", Lrp(0, 8)), ("M(b, 2)", Lrp(2, 7, 30)),
        ("M(c, 5)", Lrp(5)), ("M(d, 0)", Lrp(0, 1))]
    assert str(Lrp(3, 7, 31)) == "3 + 7n until 31" and str(Lrp(0, 8)) == "8n"


def _error(text: str) -> ProgramError:
    with pytest.raises(ProgramError) as e:
        compile_program(text, "p.tdl")
    return e.value


@pytest.mark.parametrize("text, line, col, message", [
    ("M(a, 3 + 0n).\nA(X, T) :- E(X, T), M(X, T).", 1, 6, "the period of a periodic time must be positive"),
    ("M(a, 3 + 7k).\nA(X, T) :- E(X, T), M(X, T).", 1, 6, "written b + a n (with the letter n)"),
    ("M(a, 9 + 7n) until 5.\nA(X, T) :- E(X, T), M(X, T).", 1, 20, "until 5 is before the first time 9"),
    ("M(a, 5) until 9.\nA(X, T) :- E(X, T), M(X, T).", 1, 15, "the single time 5"),
    ("M(X, 3 + 7n).\nA(X, T) :- E(X, T), M(X, T).", 1, 3, "a fact must be ground, but X is a variable"),
    ("M(a, T).\nA(X, T) :- E(X, T), M(X, T).", 1, 6, "a fact must be ground, but T is a variable"),
    ("M(a, 7n).\n#delay M = 1.\nA(X, T) :- E(X, T), M(X, T).", 2, 8, "M is periodic"),
    ("M(a, 7n).\nM(X, T) :- E(X, T).\n#query M(X, T).", 2, 1,
     "M is a periodic predicate (given by facts of the program, the first at line 1)"),
    ("A(X, T) :- E(X, T), M(X, 3 + 7n).", 1, 26, "may only be written in a fact"),
    ("M(a, 7n).\nA(X, T) :- E(X, T), M(3).", 2, 21, "predicate M is used with arity 1 here"),
    ("#rigid Near/1.\nNear(a, 7n).", 2, 9, "a periodic time (b + a n) is the time argument of a fact"),
    ("#rigid Near/1.\nNear(a) until 3.", 2, 15, "`until` bounds the periodic time"),
])
def test_errors_point_at_the_mistake(text, line, col, message):
    if "#query" not in text:
        text += "\n#query A(X, T)."
    err = _error(text)
    assert (err.span.line, err.span.column) == (line, col), err.format()
    assert message in err.message, err.format()


def test_check_lists_periodic_predicates():
    cp = compile_program("Maint(wt1, 3 + 7n).\nMaint(wt2, 5 + 7n) until 40.\n"
                         "Free(X, T) :- Up(X, T), not Maint(X, T).\n#query Free(X, T).", "p.tdl")
    text = describe_text(cp)
    assert "Maint/2  periodic (background facts: Maint(wt1, 3 + 7n), Maint(wt2, 5 + 7n) until 40)" in text
    # ¬Maint(X, T): X is neither, or X is one of them and T outside its slots (disjoint cases)
    assert ("P_Q0 = {⟨∅, {Up(X, T)} | X=wt1 excluded | X=wt2 excluded⟩, ⟨[X := wt1], "
            "{Up(wt1, T)} | T ≠ 3 + 7n, n ≥ 0⟩, ⟨[X := wt2], {Up(wt2, T)} | "
            "T ≠ 5 + 7n, 0 ≤ n ≤ 5⟩}") in text
    js = cp.to_json()
    maint = next(p for p in js["predicates"] if p["name"] == "Maint")
    assert maint == {"name": "Maint", "kind": "periodic", "arity": 2,
                     "facts": ["Maint(wt1, 3 + 7n)", "Maint(wt2, 5 + 7n) until 40"]}
    assert js["queries"][0]["templates"][1]["periodic"] == {
        "T": {"excluded": [{"period": 7, "offset": 3}]}}
    assert "Up" in cp.analysis.edb and "Maint" not in cp.analysis.edb


# --------------------------------------------------------------------------- lrp algebra


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 9), st.integers(0, 6), st.one_of(st.none(), st.integers(0, 40)),
       st.integers(0, 9), st.integers(0, 6), st.one_of(st.none(), st.integers(0, 40)))
def test_intersection_is_the_set_intersection(b1, a1, u1, b2, a2, u2):
    x, y = Lrp(b1, a1, u1), Lrp(b2, a2, u2)
    got = intersect(x, y)
    want = [t for t in range(120) if t in x and t in y]
    assert [t for t in range(120) if got is not None and t in got] == want
    d = TimeDomain(Lrp(b1, a1, u1), (Lrp(b2, a2, u2),))
    brute = [t for t in range(400) if d.admits(t)]
    f = first(d)
    assert (f is None and not brute) or (brute and f == brute[0])


# --------------------------------------------------------------------------- stream, lake

CAL = "Maint(wt1, 3 + 7n).\nFree(X, T) :- Up(X, T), not Maint(X, T).\n#query Free(X, T)."


def test_stream_facts_of_periodic_predicates_are_rejected():
    cp = compile_program(CAL, "p.tdl")
    assert validate(cp, Fact("Maint", ("wt1",), 3), 3) == (
        "Maint is a periodic predicate: its facts are given in the program (known in advance, "
        "never streamed)")
    assert validate(cp, Fact("Up", ("wt1",), 3), 3) is None


def test_the_lake_quarantines_them_with_the_same_reason():
    import polars as pl

    from jobs.ingest.validate import with_reasons
    from reasoning.columnar.backends.polars import PolarsBackend

    cp = compile_program(CAL, "p.tdl")
    df = pl.DataFrame({"tick": [3, 3], "pred": ["Maint", "Up"], "args": [["wt1"], ["wt1"]],
                       "time": [3, 3], "source": ["s", "s"], "line": [1, 2],
                       "batch": ["b", "b"]})
    out = with_reasons(PolarsBackend(), df, cp, 3).sort("line").to_dicts()
    assert out[0]["reason_code"] == "periodic_predicate"
    assert out[0]["reason"] == validate(cp, Fact("Maint", ("wt1",), 3), 3)
    assert out[1]["reason"] is None


# --------------------------------------------------------------------------- the example


@pytest.mark.parametrize("engine", ENGINES)
def test_calendar_example_golden(engine, monkeypatch):
    """examples/calendar.tdl over its stream: tests/golden/calendar_run.jsonl (reviewed by
    hand: Alarm(wt1, 3) never comes — tick 3 is a maintenance slot of wt1 —; Alarm(wt2, 3) is
    hypothetical at tick 3 on the services at 3 and 4 only, as Maint(wt2, 5) is known, and
    refuted by Service(wt2, 3); the streamed Maint(wt2, 3) is rejected)."""
    monkeypatch.chdir(ROOT)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["run", "examples/calendar.tdl", "--stream", "examples/calendar.jsonl",
                     "--format", "jsonl", "--engine", engine]) == 1  # a line rejected
    assert out.getvalue() == (ROOT / "tests/golden/calendar_run.jsonl").read_text(encoding="utf-8")
    assert "Maint is a periodic predicate" in err.getvalue()


@pytest.mark.parametrize("engine", ENGINES)
def test_an_unbound_time_prints_its_congruence(engine, tmp_path):
    (tmp_path / "p.tdl").write_text("Maint(wt1, 3 + 7n).\nMaint(wt2, 5 + 7n) until 20.\n"
                                    "Plan(X, T) :- Req(X, S), Maint(X, T), not Busy(X, T).\n"
                                    "#query Plan(X, T).\n")
    (tmp_path / "s.jsonl").write_text('{"tick": 1, "fact": "Req(wt1, 1)"}\n'
                                      '{"tick": 2, "fact": "Req(wt2, 2)"}\n')
    for fmt in ("jsonl", "text"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert main(["run", str(tmp_path / "p.tdl"), "--stream", str(tmp_path / "s.jsonl"),
                         "--format", fmt, "--engine", engine, "--until", "2"]) == 0
        if fmt == "jsonl":
            last = [json.loads(l) for l in out.getvalue().splitlines()][-2:]
            assert [o["periodic"] for o in last] == [
                {"T": {"period": 7, "offset": 3}}, {"T": {"period": 7, "offset": 5, "until": 19}}]
        else:
            assert "Plan(wt1, T) for T = 3 + 7n, n ≥ 0  if not Busy(wt1, T)" in out.getvalue()
            assert "Plan(wt2, T) for T = 5 + 7n, 0 ≤ n ≤ 2" in out.getvalue()


@pytest.mark.parametrize("engine", ENGINES)
def test_answers_differing_only_in_their_congruence_are_distinct(engine):
    """Two facts for wt1 give two answers with the same substitution: their identity
    (lifecycles, --changes) includes the time constraint."""
    from reasoning.semantics.explain import answer_key

    cp = compile_program("Maint(wt1, 3 + 7n).\nMaint(wt1, 5 + 7n).\n"
                         "Plan(X, T) :- Req(X, S), Maint(X, T), not Busy(X, T).\n"
                         "#query Plan(X, T).", "p.tdl")
    sess = Session(cp, engine=engine)
    sess.step([], 0)
    sess.step([Fact("Req", ("wt1",), 1)], 1)
    objs = sess.objects(False, False, False)
    assert sorted(o["periodic"]["T"]["offset"] for o in objs) == [3, 5]
    assert len({answer_key(o) for o in objs}) == 2


# --------------------------------------------------------------------------- random programs

EDB = ("E1", "E2")
OBJS = ("a", "b")


def _t(k: int) -> str:
    return "T" if k == 0 else (f"T+{k}" if k > 0 else f"T-{-k}")


@st.composite
def periodic_programs(draw, m_literals: int = 1):
    """(rules text, periodic facts [(object, lrp)], delays): P1 over E1, E2, M; P2 (the
    query) over E1, E2, M, P1.  Each rule starts with a positive stream literal over X and
    its time T+k (so every answer's time is bound); up to `m_literals` M literals per rule,
    positive or negated, on X or a constant, with an offset in -1..1."""
    facts = []
    for i in range(draw(st.integers(1, 3))):
        c = OBJS[0] if i == 0 else draw(st.sampled_from(OBJS))
        b, a = draw(st.integers(0, 3)), draw(st.sampled_from((0, 2, 3, 5)))
        until = draw(st.one_of(st.none(), st.integers(b, b + 12))) if a else None
        facts.append((c, Lrp(b, a, until)))
    rules = []
    for level, lower in ((1, EDB), (2, EDB + ("P1",))):
        for _ in range(draw(st.integers(1, 2))):
            lits = [f"{draw(st.sampled_from(EDB))}(X, {_t(draw(st.integers(-1, 1)))})"]
            m = draw(st.integers(0, 2))  # where an M literal goes (the explicit program
            n_m = 0  # has a template per listed fact)
            for i in range(draw(st.integers(1, 1 + m_literals))):
                neg = "not " if draw(st.booleans()) else ""
                k = draw(st.integers(-1, 1))
                if n_m < m_literals and (i == m or draw(st.integers(0, 2)) == 0):
                    n_m += 1
                    obj = draw(st.sampled_from(("X",) + OBJS))
                    lits.append(f"{neg}M({obj}, {_t(k)})")
                else:
                    lits.append(f"{neg}{draw(st.sampled_from(lower))}(X, {_t(k)})")
            h = draw(st.integers(-1, 1))
            rules.append(f"P{level}(X, {_t(h)}) :- {', '.join(dict.fromkeys(lits))}.")
    delays = {e: draw(st.integers(0, 1)) for e in EDB}
    header = "#query P2(X, T).\n" + "".join(f"#delay {e} = {d}.\n" for e, d in delays.items())
    return header + "\n".join(rules) + "\n", facts, delays


def _periodic_text(facts) -> str:
    out = []
    for c, lrp in facts:
        bound = "" if lrp.until is None else f" until {lrp.until}"
        out.append(f"M({c}, {Lrp(lrp.offset, lrp.period)}){bound}.")
    return "\n".join(out) + "\n"


def _explicit_text(facts, horizon: int) -> str:
    """The same facts listed one by one, each time up to `horizon`."""
    out = []
    for c, lrp in facts:
        out += [f"M({c}, {t})." for t in range(horizon + 1) if t in lrp]
    return "\n".join(dict.fromkeys(out)) + "\n"


def _stream(draw, delays, horizon=4):
    stream: dict = {}
    for t in range(horizon):
        for e in EDB:
            for c in OBJS:
                if draw(st.integers(0, 9)) < 5:
                    stream.setdefault(t + draw(st.integers(0, delays[e])), []).append(
                        Fact(e, (c,), t))
    return stream


def _until(cp, horizon: int = 4) -> int:
    rel = static_horizons(Engine(cp))
    return horizon + 2 + max([v for v in rel.values() if v is not None] + [3]) + 3


def _hypo(n: int):
    return settings(max_examples=n, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# An answer about time T depends on M at times up to T + 3 at most: a P2 rule reads P1 at
# T+k (k ≤ 1), whose rule has head offset h ≥ -1 and reads M at its own T+k' (k' ≤ 1); an
# auxiliary query's answer about P1 at T reads M up to T + 2.  Listing the facts up to H
# therefore decides every answer about a time ≤ H - LOOKAHEAD exactly as the periodic facts
# do; beyond that the explicit program lacks the facts after H.  H is chosen past the last
# tick run, so the comparison drops nothing in practice; the filter states the guarantee.
LOOKAHEAD = 4


def _outcome(objs, bound: int) -> tuple[set, set]:
    """The ground instances (substitutions) answered definitely, and those with a live
    hypothetical or pending answer and no definite one, up to time `bound`.  (Not the
    printed lines: listing the facts makes other templates — M(a, T) with every T listed is
    one template per time, which subsumes nothing, where `M(a, n)` constrains nothing and
    subsumes the templates that need more — so the same instances may be printed with
    other evidence; which instances are answered, and how, is the same.)"""
    definite, possible = set(), set()
    for o in objs:
        sub = tuple(sorted(o["substitution"].items()))
        if o["substitution"]["T"] > bound:
            continue
        (definite if o["status"] == "definite" else possible).add(sub)
    return definite, possible - definite


@pytest.mark.parametrize("engine", ENGINES)
def test_periodic_facts_mean_the_facts_listed_explicitly(engine):
    """Every tick, a program with periodic facts answers exactly as the same program with
    the facts listed one by one up to a horizon H (with both executors): the same ground
    instances definite, and the same still possible (hypothetical or pending)."""

    @_hypo(budget(100, engine))
    @given(st.data())
    def check(data):
        rules, facts, delays = data.draw(periodic_programs())
        stream = _stream(data.draw, delays)
        text = rules + _periodic_text(facts)
        try:
            cp = compile_program(text, "<periodic>")
        except ProgramError as e:  # P_Q over the budget: the explicit one is larger still
            assert "exceeds the budget" in e.message, e.format()
            return
        until = _until(cp)
        horizon = until + LOOKAHEAD + 1
        explicit = rules + _explicit_text(facts, horizon)
        try:
            hp = compile_program(explicit, "<explicit>")
        except ProgramError as e:
            assert "exceeds the budget" in e.message, e.format()
            return
        a, b = Session(cp, engine=engine), Session(hp, engine=engine)
        bound = horizon - LOOKAHEAD
        for tau in range(until + 1):
            a.step(stream.get(tau, []), tau)
            b.step(stream.get(tau, []), tau)
            got = _outcome(a.objects(False, True, True), bound)
            want = _outcome(b.objects(False, True, True), bound)
            assert got == want, (tau, text, explicit)

    check()


def _atom(f: Fact) -> Atom:
    return Atom(f.pred, tuple(Const(x) for x in f.args), Time(None, f.time))


def test_both_executors_agree_with_the_reference():
    """On random programs with periodic facts, every definite (ground) answer of each
    executor is an answer of the reference evaluator over the complete stream, and after the
    last deadline all of them (up to the compared time) have been reported, by both."""

    @_hypo(budget(60, "columnar"))
    @given(st.data())
    def check(data):
        rules, facts, delays = data.draw(periodic_programs(m_literals=2))
        stream = _stream(data.draw, delays, horizon=5)
        try:
            cp = compile_program(rules + _periodic_text(facts), "<periodic>")
        except ProgramError as e:
            assert "exceeds the budget" in e.message, e.format()
            return
        t_cmp = 6
        history = [f for t in sorted(stream) for f in stream[t]]
        full = ref_answers(cp.program, cp.main.atom, [_atom(f) for f in history], t_cmp + 14,
                           cp.domain)
        full = {a for a in full if dict(a)["T"] <= t_cmp}
        until = _until(cp, 5)
        for engine in ENGINES:
            sess = Session(cp, engine=engine)
            seen: set = set()
            for tau in range(until + 1):
                sess.step(stream.get(tau, []), tau)
                new = {tuple(sorted(o["substitution"].items()))
                       for o in sess.objects(False, False, True) if o["status"] == "definite"}
                new = {a for a in new if dict(a)["T"] <= t_cmp}
                assert new <= full, (engine, tau, sorted(new - full))
                seen |= new
            assert seen == full, (engine, sorted(seen ^ full))

    check()


@pytest.mark.parametrize("executor", ["local", "row"])
def test_the_lake_equals_hypo_run_on_the_calendar(tmp_path, executor):
    """The calendar example through the lake (the plan on the driver, the row engine): every
    tick's answers, pending included, are `hypo run --all`'s; the streamed Maint fact is
    quarantined (the Spark plan: tests/test_lake_spark.py)."""
    from jobs.table import delta
    from tests.lakehelp import check_lake_equals_run

    lake = str(tmp_path / "lake")
    check_lake_equals_run(lake, str(ROOT / "examples/calendar.tdl"),
                          str(ROOT / "examples/calendar.jsonl"), "Alarm(X, T)", executor)
    q = delta.read_arrow(f"{lake}/quarantine", "quarantine", columns=["reason_code", "raw"])
    assert [r["reason_code"] for r in q.to_pylist()] == ["periodic_predicate"]


@pytest.mark.parametrize("second,a_holds", [(5, True), (6, False), (999999999999999972, False)])
def test_periods_whose_lcm_passes_64_bits_agree_on_both_executors(tmp_path, second, a_holds):
    """Two 18-digit periods on one time variable: the CRT gives an lrp of 36 digits (period,
    and offset when the congruences differ), past the columnar plans' 64-bit integers — the
    executors still agree (only the first time of such an lrp is a reachable time)."""
    (tmp_path / "p.tdl").write_text(
        "Maint(wt1, 5 + 999999999999999989n).\n"
        f"Crew(wt1, {second} + 999999999999999967n).\n#delay Hot = 1.\n"
        "A(X, T) :- Hot(X, T), Maint(X, T), Crew(X, T).\n"
        "B(X, T) :- Hot(X, T), Maint(X, T), not Crew(X, T).\n#query A(X, T).\n")
    (tmp_path / "s.jsonl").write_text('{"tick": 5, "fact": "Hot(wt1, 5)"}\n')
    outs = []
    for engine in ENGINES:
        for q in ("A(X, T)", "B(X, T)"):
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                assert main(["run", str(tmp_path / "p.tdl"), "--stream", str(tmp_path / "s.jsonl"),
                             "--query", q, "--engine", engine, "--format", "jsonl"]) == 0
            outs.append(out.getvalue())
    assert outs[:2] == outs[2:]
    a_definite = '"status": "definite"' in outs[0]
    b_definite = '"status": "definite"' in outs[1]
    assert a_definite == a_holds and b_definite == (not a_holds)


_NUM = st.one_of(st.integers(0, 12), st.integers(10 ** 17, 10 ** 18 - 1))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(facts=st.lists(st.tuples(st.sampled_from(["wt1", "wt2"]), _NUM,
                                st.one_of(st.just(0), st.integers(1, 9), _NUM),
                                st.one_of(st.none(), _NUM)), min_size=1, max_size=4),
       k=st.integers(-2, 2), neg=st.booleans(), hot=st.sets(st.tuples(
           st.sampled_from(["wt1", "wt2", "wt3"]), st.integers(0, 6)), max_size=8))
def test_hostile_lrp_numbers_no_traceback_and_the_executors_agree(facts, k, neg, hot):
    """Periodic facts with offsets, periods and bounds up to 18 digits (their CRT up to 36):
    the program compiles or is refused with a location, and both executors print the same."""
    lines = []
    for c, b, a, until in facts:
        time = str(b) if a == 0 else f"{b} + {a}n"
        lines.append(f"Maint({c}, {time})" + (f" until {until}" if until is not None else "") + ".")
    term = "T" if k == 0 else (f"T+{k}" if k > 0 else f"T-{-k}")
    lines += ["#delay Hot = 1.", f"A(X, T) :- Hot(X, T), {'not ' if neg else ''}Maint(X, {term}).",
              "#query A(X, T)."]
    text = "\n".join(lines) + "\n"
    try:
        compile_program(text, "fuzz.tdl")
    except ProgramError as e:
        assert "fuzz.tdl:" in e.format()
        return
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "p.tdl").write_text(text)
        (Path(d) / "s.jsonl").write_text("".join(
            f'{{"tick": {t}, "fact": "Hot({c}, {t})"}}\n' for c, t in sorted(hot, key=lambda x: x[1])))
        outs = []
        for engine in ENGINES:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main(["run", str(Path(d) / "p.tdl"), "--stream", str(Path(d) / "s.jsonl"),
                           "--engine", engine, "--format", "jsonl", "--all", "--until", "8"])
            assert rc == 0 and "Traceback" not in err.getvalue(), err.getvalue()
            outs.append(out.getvalue())
        assert outs[0] == outs[1]
