"""The set-at-a-time executor against the row engine (the reference executor), which the
property tests of test_engine_properties.py check against the reference evaluator: on random
programs — positive, with negation, per-instance delays, existential variables, several
temporal variables, rigid predicates, constants — S_τ and every printed line are the same at
every tick; the rare shapes of step 3 (fallback.py), the `auto` hand-over and `--changes`."""
from __future__ import annotations

import io
import contextlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasoning.cli.main import main
from reasoning.columnar import ColumnarEngine
from reasoning.language.compiler import compile_file, compile_program
from reasoning.row.engine import Engine
from reasoning.semantics.explain import answer_key, static_horizons
from reasoning.run.session import Session
from reasoning.stream.reader import read_stream_file
from tests.gen import cases
from tests.helpers import EXAMPLES, budget, facts


def _until(cp, case) -> int:
    rel = static_horizons(Engine(cp))
    return case.horizon + 2 + max([v for v in rel.values() if v is not None] + [3]) + 3


def _key(a) -> tuple:
    return (a.tid, str(a.b), tuple(sorted(a.ev)), tuple(sorted(map(str, a.ng))))


def assert_same_run(cp, stream: dict, until: int, forget: bool = True) -> dict:
    """Row engine and columnar executor tick by tick: the same S_τ (as Answers), the same
    new definite answers and duplicates, and the same lines for every printing option."""
    row = Session(cp, engine="row", forget=forget)
    col = Session(cp, engine="columnar", forget=forget)
    for tau in range(until + 1):
        fs = stream.get(tau, [])
        r1, r2 = row.step(fs, tau), col.step(fs, tau)
        assert r1.duplicates == r2.duplicates, tau
        a1 = sorted(map(_key, row.answers()))
        a2 = sorted(map(_key, col.answers()))
        assert a1 == a2, (tau, sorted(set(a1) ^ set(a2)))
        assert row.new_definite_keys() == col.new_definite_keys(), tau
        for aq in (False, True):
            for pend in (False, True):
                assert row.lines(aq, pend) == col.lines(aq, pend), (tau, aq, pend)
        assert r1.state_size == r2.state_size, tau
    return col.col.stats


PROPS = settings(max_examples=budget(120), deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@PROPS
@given(cases(negation=True, multi_time=True), st.booleans(), st.booleans(), st.booleans())
def test_random_programs_same_state_and_lines_every_tick(case, forget, plan_only, flips):
    """plan_only: every new row rendered by the string plan (objects.PYTHON_NEW_ROWS = 0),
    else a tick's few new rows by the object builder, as `hypo run` does.  flips: the render
    cache left off after one look-up without a hit and tried again every third tick (by
    default after 8, every 16th)."""
    from reasoning.columnar.render import cache, objects

    old = objects.PYTHON_NEW_ROWS, cache.RENDER_CACHE_MISSES, cache.RENDER_CACHE_PROBE
    objects.PYTHON_NEW_ROWS = 0 if plan_only else old[0]
    if flips:
        cache.RENDER_CACHE_MISSES, cache.RENDER_CACHE_PROBE = 1, 3
    try:
        cp = compile_program(case.text, "<gen>")
        assert_same_run(cp, case.stream, _until(cp, case), forget)
    finally:
        objects.PYTHON_NEW_ROWS, cache.RENDER_CACHE_MISSES, cache.RENDER_CACHE_PROBE = old


@settings(max_examples=budget(60, "columnar"), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(cases(negation=False, multi_time=True))
def test_random_positive_programs(case):
    cp = compile_program(case.text, "<gen>")
    assert_same_run(cp, case.stream, _until(cp, case))


@settings(max_examples=budget(60, "columnar"), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(cases(negation=True, multi_time=True))
def test_streaming_group_by_gives_the_same_run(case):
    """Large scalar group-bys run on Polars' streaming engine (backend.STREAM_GROUP_ROWS):
    with the threshold at 0 every one of them does, and the run is the same."""
    from reasoning.columnar.backends import polars as backend

    old = backend.STREAM_GROUP_ROWS
    backend.STREAM_GROUP_ROWS = 0
    try:
        cp = compile_program(case.text, "<gen>")
        assert_same_run(cp, case.stream, _until(cp, case))
    finally:
        backend.STREAM_GROUP_ROWS = old


@pytest.mark.parametrize("forget", [True, False])
def test_example13(forget):
    cp = compile_file(str(EXAMPLES / "wind_turbines.tdl"))
    st_ = read_stream_file(str(EXAMPLES / "wind_turbines.jsonl"), cp)
    stream = {t: [f for f, _ in v] for t, v in st_.slices.items()}
    assert_same_run(cp, stream, 8, forget)


@pytest.mark.parametrize("few", [0, 64])
def test_exclusions_render_as_columns(few, monkeypatch):
    """An answer with single-variable exclusions (Example 13's `OK(X, T)` for X ∉ {…}) is
    rendered by the string plan or (arrays) the compiled row formatter, not the Python
    object builder: same lines, no Python row (few: a tick's at most `few` new rows may go
    to the object builder, as `hypo run` does: the formatter takes them first)."""
    from reasoning.columnar.render import objects

    monkeypatch.setattr(objects, "PYTHON_NEW_ROWS", few)
    cp = compile_file(str(EXAMPLES / "wind_turbines.tdl"))
    st_ = read_stream_file(str(EXAMPLES / "wind_turbines.jsonl"), cp)
    stream = {t: [f for f, _ in v] for t, v in st_.slices.items()}
    row, col = Session(cp, engine="row"), Session(cp, engine="columnar")
    seen = 0
    for tau in range(9):
        row.step(stream.get(tau, []), tau)
        col.step(stream.get(tau, []), tau)
        lines = col.lines(True, True)
        assert lines == row.lines(True, True), tau
        seen += sum('"excluded": {"' in x for x in lines)
    assert seen > 0 and col.renderer.stats["python_rows"] == 0
    if col.col.B.name == "arrays":
        assert col.renderer.stats["formatted"] > 0 and col.renderer.stats["python_few"] == 0


RARE = """#query A(X, T).
#delay E = 1.
#delay F = 1.
B(X, Y, T) :- F(X, Y, T).
A(X, T) :- E(X, T), not B(X, Y, T).
C(X, Y, T) :- E(X, T), E(Y, T), not B(X, Y, T).
D(X, T) :- E(X, T), not C(X, Y, T).
"""


def test_rare_step3_shapes_take_the_region_algebra_and_agree():
    """A negated hypothesis with two unbound variables (¬B(X, Y, T) with Y existential, and
    ¬C(X, Y, T)) is refined by regions.partition on those rows: same result."""
    cp = compile_program(RARE, "<rare>")
    s = facts((0, "E(a, 0)"), (0, "F(a, b, 0)"), (1, "E(b, 0)"), (1, "E(b, 1)"),
              (1, "F(b, a, 1)"), (2, "E(c, 2)"), (2, "F(c, c, 1)"), (3, "E(a, 3)"))
    stats = assert_same_run(cp, s, 6)
    stats2 = assert_same_run(compile_program(RARE.replace("A(X, T).", "D(X, T)."), "<r>"), s, 6)
    assert stats["fallback_refs"] + stats2["fallback_refs"] > 0


SEEDS = """
#query Q(X, T).
#delay p = 2.
Q(X, T) :- p(X, T), p(X, T+1), p(X, T+2).
"""


def test_seeds_merge_only_when_two_literals_seed_one_binding():
    """Step 1(a) of a full-seed template: a slice on time (one timestamp) seeds each binding
    from one literal, so the seed masks need no group-by; a slice with late facts seeds
    Q(a, 0) from p(a, 0) and p(a, 1) at once (both bits in one mask).  Same S_τ, lines
    and definite answers as the row engine, and both paths are taken."""
    cp = compile_program(SEEDS, "<seeds>")
    eng = ColumnarEngine(cp)
    taken = []
    orig = eng._seeds_disjoint
    eng._seeds_disjoint = lambda tp, fs: taken.append(orig(tp, fs)) or taken[-1]
    s = facts((0, "p(b, 0)"), (1, "p(b, 1)"), (1, "p(c, 1)"), (2, "p(a, 0)"), (2, "p(a, 1)"),
              (2, "p(b, 2)"), (2, "p(c, 2)"), (3, "p(a, 2)"), (3, "p(c, 3)"), (4, "p(c, 4)"))
    for tau in range(6):
        eng.step(s.get(tau, []), tau, snapshot=False)
    assert True in taken and False in taken
    assert_same_run(cp, s, 6)


def test_auto_hands_the_state_over_mid_run():
    """`auto` starts on the row engine and hands S_τ and W to the columnar executor at the
    first large slice: the run is the row engine's."""
    cp = compile_file(str(EXAMPLES / "wind_turbines.tdl"))
    st_ = read_stream_file(str(EXAMPLES / "wind_turbines.jsonl"), cp)
    stream = {t: [f for f, _ in v] for t, v in st_.slices.items()}
    row = Session(cp, engine="row")
    auto = Session(cp, engine="auto", threshold=2)
    seen = []
    for tau in range(9):
        row.step(stream.get(tau, []), tau)
        auto.step(stream.get(tau, []), tau)
        seen.append(auto.executor)
        assert row.lines(True, True) == auto.lines(True, True), tau
    assert seen[0] == "row" and seen[-1] == "columnar"


def _cli(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(list(argv))
    return out.getvalue()


@pytest.mark.parametrize("query", ["OK(X, T)", "Shdn(X, T)"])
def test_changes_are_the_same_with_both_executors(query):
    args = ["run", str(EXAMPLES / "wind_turbines.tdl"), "--stream",
            str(EXAMPLES / "wind_turbines.jsonl"), "--format", "jsonl", "--changes",
            "--query", query, "--all"]
    row = _cli(*args, "--engine", "row")
    assert row == _cli(*args, "--engine", "columnar")
    objs = [json.loads(l) for l in row.splitlines()]
    assert {o["change"] for o in objs} <= {"new", "updated", "decided", "refuted"}
    if query == "Shdn(X, T)":
        assert {"new", "decided", "refuted"} <= {o["change"] for o in objs}


@pytest.mark.parametrize("query", ["OK(X, T)", "Shdn(X, T)"])
def test_changes_replay_to_the_full_sets(query):
    """Replaying each tick's changes (an answer's lines replaced by the printed ones, refuted
    answers dropped) gives every tick's full answer set (--no-forget: definite answers stay
    in both)."""
    args = ["run", str(EXAMPLES / "wind_turbines.tdl"), "--stream",
            str(EXAMPLES / "wind_turbines.jsonl"), "--format", "jsonl", "--all",
            "--query", query, "--no-forget", "--engine", "columnar"]

    def akey(o):
        return answer_key(o)  # the identity --changes keys an answer's lines by

    full: dict = {}
    for l in _cli(*args).splitlines():
        o = json.loads(l)
        t = o.pop("tick")
        full.setdefault(t, set())
        if o.get("status") != "none":
            full[t].add(json.dumps(o, sort_keys=True))
    state: dict = {}
    by_tick: dict = {}
    for l in _cli(*args, "--changes").splitlines():
        o = json.loads(l)
        by_tick.setdefault(o.pop("tick"), []).append(o)
    for t in sorted(full):
        printed: dict = {}
        for o in by_tick.get(t, []):
            change = o.pop("change")
            if change == "refuted":
                state.pop(akey(o), None)
            else:
                printed.setdefault(akey(o), set()).add(json.dumps(o, sort_keys=True))
        state.update(printed)
        assert set().union(*state.values()) == full[t], t


@pytest.mark.parametrize("backend", ["arrays", "polars"])
def test_a_bound_time_variable_drops_its_vacuous_nogood(backend, monkeypatch):
    """A nogood on a time variable (`*[[1, 3]]`: S ≠ 3) is reduced when a join binds that
    variable (to 2: the nogood holds, so it goes), as patterns.reduce_nogoods does; the
    columnar executor reduced only rows with a bound object variable and kept it, a second
    copy of the answer (found by the random programs under the arrays backend)."""
    monkeypatch.setenv("HYPO_BACKEND", backend)
    cp = compile_program(
        "#query P3(X, T).\n#delay E1 = 0.\n#delay E2 = 0.\n#domain a, b, c.\n"
        "P1(X, T) :- E1(X, T-1), E2(X, S).\nP2(X, T+1) :- E1(X, T-1).\n"
        "P2(X, T) :- not P1(X, T), J(X, Y, T), R(X).\nP3(X, T+1) :- P2(X, T).\n"
        "P3(X, T) :- P1(X, T), J(X, Y, T), R(X).\n#rigid R/1.\nR(a). R(c).\n#delay J = 0.\n",
        "<gen>")
    stream = facts(*[(0, f) for f in ("E1(c, 0)", "E2(b, 0)", "E2(c, 0)", "J(a, a, 0)",
                                      "J(a, b, 0)", "J(a, c, 0)")],
                   *[(1, f) for f in ("E1(b, 1)", "E1(c, 1)", "E2(a, 1)", "E2(b, 1)",
                                      "J(a, a, 1)", "J(a, b, 1)", "J(a, c, 1)", "J(b, a, 1)",
                                      "J(b, b, 1)", "J(b, c, 1)", "J(c, a, 1)")])
    assert_same_run(cp, stream, 6)


def test_working_columns_of_python_rows_keep_their_kind():
    """Rows that went through Python (patterns.reduce_nogoods on `*` nogoods) come back with
    their working columns typed by value: an int column typed as an object one made its
    numbers strings (on the arrays backend, numbers in the string table, which broke the
    renderer's copy of it; found by the random programs in a long test process)."""
    from reasoning.columnar.finish import _kind
    from reasoning.columnar.layout import BOOL, INT, OBJ, Layout

    cp = compile_file(str(EXAMPLES / "wind_turbines.tdl"))
    lay = Layout.of(ColumnarEngine(cp).templates[0])
    rows = [{"_x0": None, "_f": None, "_s": None}, {"_x0": 3, "_f": True, "_s": "a"}]
    assert [_kind(lay, c, rows) for c in ("_x0", "_f", "_s", "ev", "ng")] == \
        [INT, BOOL, OBJ, INT, "strlist"]


@pytest.mark.parametrize("backend", ["arrays", "polars"])
def test_constants_that_need_quoting_and_escapes(backend, monkeypatch):
    """Constants printed in program syntax with quotes, and with characters JSON escapes
    (quote, backslash, newline, a control character, non-ASCII), beside bare ones in the
    same frames: every line, and every tick's --changes, equal to the row engine's (the
    column renderer quotes without the JSON encoder only when no constant needs it)."""
    from reasoning.run.changes import Changes
    from reasoning.semantics.patterns import Fact

    monkeypatch.setenv("HYPO_BACKEND", backend)
    cp = compile_program("#query Malf(X, T).\n#delay Temp = 1.\n"
                         "Flag(X, T) :- Temp(X, high, T).\n"
                         "Cool(X, T+1) :- Flag(X, T), Flag(X, T+1).\n"
                         "Malf(X, T) :- Cool(X, T+1), not Off(X, T).\n", "<t>")
    names = ["wt1", "Wind A", 'say "hi"', "back\\slash", "new\nline", "bell\x07", "é1", "wt2"]
    stream = {t: [Fact("Temp", (x, "high"), t) for i, x in enumerate(names) if (i + t) % 3]
              + ([Fact("Off", (names[t % len(names)],), t)] if t % 2 else []) for t in range(9)}
    row, col = Session(cp, engine="row"), Session(cp, engine="columnar")
    ch_row, ch_col = Changes(), Changes()
    for tau in range(11):
        fs = stream.get(tau, [])
        row.step(fs, tau)
        col.step(fs, tau)
        for aq in (False, True):
            for pend in (False, True):
                assert row.lines(aq, pend) == col.lines(aq, pend), (tau, aq, pend)
        assert ch_row.update(tau, row.keyed()) == ch_col.update(tau, col.keyed()), tau


def test_hypotheses_stay_sorted_when_a_duplicate_is_in_evidence():
    """Found by the property test above: a template of five literals (the list path of the
    column renderer) where a hypothesis has the text of an evidence literal.  Removing it by
    Polars' set difference reordered the rest ("not E1(X, 2)" before "not E1(X, 1)")."""
    from reasoning.semantics.patterns import Fact as F

    cp = compile_program(
        "#query P3(X, T).\n#delay E1 = 0.\n#delay E2 = 2.\n#delay E1(a, T) = 0.\n"
        "#domain a, b, c.\n"
        "P1(X, T) :- not E1(X, T), not E1(X, T), E2(X, S).\nP1(X, T) :- not E1(X, T).\n"
        "P2(X, T+1) :- P1(X, T), E2(X, S), not E1(X, S).\nP3(X, T) :- E1(X, T).\n"
        "P3(X, T-1) :- not E1(X, T), P2(X, T), not E1(X, T+1).\n", "<t>")
    stream = {0: [F("E1", ("b",), 0)],
              1: [F("E1", ("a",), 1), F("E1", ("c",), 1), F("E2", ("a",), 1),
                  F("E2", ("b",), 1), F("E2", ("c",), 1)],
              2: [F("E1", ("a",), 2), F("E2", ("c",), 2)], 3: [F("E1", ("c",), 3)],
              4: [F("E1", ("b",), 4), F("E2", ("b",), 4), F("E2", ("c",), 4)]}
    assert_same_run(cp, stream, 11, forget=False)


def test_exact_pass_does_not_resplit_a_decided_instance():
    """Found by the property test (test_random_programs_same_state_and_lines_every_tick):
    step 3(b) left an answer whose X ∉ {a, b, c} already held every definite value unchanged
    but marked it born at τ, so the exact pass checked it against W ∪ D|τ and re-added the
    instance S = 1, T = 0 beside the row step 3 had decided."""
    from reasoning.semantics.patterns import Fact as F

    cp = compile_program(
        "#query P3(X, T).\n#delay E1 = 0.\n#delay E2 = 2.\n#domain a, b, c.\n"
        "P1(X, T) :- not E1(X, T), E2(X, S).\nP1(X, T) :- not E2(X, T), E2(X, S).\n"
        "P2(X, T) :- P1(X, T), E2(X, S), not E1(X, S).\nP3(X, T) :- E1(X, T).\n"
        "P3(X, T) :- not E1(X, T), not P2(X, T), P2(X, T+1).\n", "<t>")
    stream = {t: [F(p, (x,), t) for p in ("E1", "E2") for x in "abc"] for t in (0, 1)}
    assert_same_run(cp, stream, 12, forget=False)


# a variable's values have one kind: variables 0-5 hold strings, 6-11 time values
_VALUE = st.integers(0, 11).flatmap(lambda v: st.tuples(
    st.just(v), st.text(max_size=4) if v < 6 else st.integers(-3, 30)))
_NOGOOD = st.lists(_VALUE, min_size=1, max_size=3, unique_by=lambda x: x[0]).map(tuple)


@settings(max_examples=budget(300), deadline=None)
@given(st.lists(_NOGOOD, max_size=12), st.data())
def test_split_nogood_list_prints_as_the_nogoods(ng, data):
    """The renderer's object builder reads an `ng` list split by layout.split_nogood_list;
    the exclusions it prints equal those of the decoded nogoods (explain.exclusions), for
    single-variable nogoods of strings and of time values (`*[[v, t]]`), combinations, and
    constants holding `:` — on a sorted list and on any other order (sorted first)."""
    from reasoning.columnar.layout import decode_nogood, encode_nogoods, split_nogood_list
    from reasoning.semantics.explain import exclusions, exclusions_of

    class Tp:  # what exclusions read of a template: printed_name's inputs
        names = [f"V{i}" for i in range(12)]
        qvars = (("X", True, 0, 0), ("Y", True, 7, 0))  # variables 0 and 7 print as X, Y

    items = encode_nogoods(ng)  # sorted, as an `ng` list is (the runs of one variable)
    want = exclusions(Tp, [decode_nogood(s) for s in items])
    assert exclusions_of(Tp, *split_nogood_list(items)) == want
    # in any other order, and with repeats
    shuffled = data.draw(st.permutations(items + items[:2]))
    assert exclusions_of(Tp, *split_nogood_list(shuffled)) == want


def test_a_touched_row_with_an_unbound_time_variable_is_not_split_again():
    """Found by the random property test above: without forgetting, a row whose time
    variable S is unbound but whose arguments are bound (E2(a, S)) was woken by any fact of
    E2, came back from step 1(b) born at τ, and the exact pass split its past instance
    S = 3 a second time.  Step 1(b) now wakes it only for a fact with its arguments, as
    the row engine's (pred, args) index does."""
    from reasoning.semantics.patterns import Fact

    text = ("#query P3(X, T).\n#delay E1 = 0.\n#delay E2 = 2.\n#domain a, b, c.\n"
            "P1(X, T) :- not E1(X, T), not E1(X, T), E1(X, T).\n"
            "P1(X, T) :- not E1(X, T+1), E2(X, S), not E1(X, S).\n"
            "P2(X, T) :- not E1(X, T), not E1(X, T), E1(X, T).\n"
            "P2(X, T) :- P1(X, T).\n"
            "P3(X, T) :- P2(X, T+1), not P1(X, T), E2(X, S).\n")
    stream = {0: [Fact(p, (x,), 0) for p in ("E1", "E2") for x in "abc"]}
    for tau, fs in {1: "E1a E2a E2c", 2: "E1a E1c E2b", 3: "E1b E2b E2c", 4: "E1b E2c"}.items():
        stream[tau] = [Fact(f[:2], (f[2],), tau) for f in fs.split()]
    assert_same_run(compile_program(text, "<gen>"), stream, 12, False)
