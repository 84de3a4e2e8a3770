"""Issue 44: (1) a join with zero keys — the left join of a fully ground template's answers
with its seeded bindings (columnar/engine.py _step1_full) — crashed every in-process backend
("join without keys: left") on a valid late fact; (2) the row engine froze one reference
cycle per local-mgu search (engine.py local_mgus) into the collector's permanent generation,
so a flat state's run grew without bound, and gcpause.frozen_survivors now bounds whatever a
block or its caller leaves there."""
from __future__ import annotations

import contextlib
import gc
import io
import json

import pytest

from bench.memory import MALFUNCTION, slices
from reasoning.util import gcpause
from reasoning.cli.main import main
from reasoning.columnar.backends.arrays import ArraysBackend, functions
from reasoning.columnar.backends.polars import PolarsBackend
from reasoning.columnar.layout import INT, OBJ
from reasoning.language.compiler import compile_program
from reasoning.run.session import Session
from tests.helpers import EXAMPLES

ENGINES = [("row",), ("columnar", "--backend", "arrays"), ("columnar", "--backend", "polars"),
           ("auto",), ("auto", "--backend", "polars")]


def _cli(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(list(argv))
    return out.getvalue()


def _write(tmp_path, rows: list, program: str = None) -> tuple[str, str]:
    stream = tmp_path / "s.jsonl"
    stream.write_text("".join(json.dumps(r) + "\n" for r in rows))
    prog = str(EXAMPLES / "inconsistent.tdl")
    if program is not None:
        (tmp_path / "p.tdl").write_text(program)
        prog = str(tmp_path / "p.tdl")
    return prog, str(stream)


def _same_everywhere(prog: str, stream: str) -> str:
    """Every executor prints the row engine's bytes, in text and jsonl, with and without the
    pending answers and the auxiliary queries."""
    for fmt in ("text", "jsonl"):
        for opts in ((), ("--all",), ("--all", "--all-queries")):
            args = ["run", prog, "--stream", stream, "--format", fmt, *opts]
            ref = _cli(*args, "--engine", "row")
            for eng in ENGINES[1:]:
                assert _cli(*args, "--engine", *eng) == ref, (fmt, opts, eng)
    return ref


# ------------------------------------------------------------------ 1. zero-key joins
def test_late_fact_of_a_ground_query_is_the_row_engines(tmp_path):
    """examples/inconsistent.tdl (#query p(a, 1), δ = 1) with r(a, 1) arriving at tick 2."""
    prog, stream = _write(tmp_path, [{"tick": 2, "fact": "r(a, 1)"}])
    out = _same_everywhere(prog, stream)
    assert '"query": "p(a, 1)"' in out  # (the last run: jsonl --all --all-queries)


def test_late_fact_after_a_large_first_slice_under_auto(tmp_path):
    """A first slice of ≥ 300 facts (past any program's hand-over point) hands `auto` over to
    the columnar executor, which then meets the same late fact."""
    rows = [{"tick": 0, "fact": f"r(b{i}, 0)"} for i in range(320)]
    rows.append({"tick": 2, "fact": "r(a, 1)"})
    prog, stream = _write(tmp_path, rows)
    args = ["run", prog, "--stream", stream, "--format", "jsonl", "--all"]
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        main(args + ["--engine", "auto"])
    assert "columnar" in err.getvalue()  # (the run ended on the columnar executor)
    _same_everywhere(prog, stream)


ZERO_ARG = """#query ok(3).
#delay a = 1.
#delay b = 1.
ok(T) :- a(T), not b(T).
"""
RIGID0 = """#query go(5).
#delay a = 1.
#rigid on/0.
on.
go(T) :- a(T), on, not stop(T).
stop(T) :- b(T).
"""
GROUND2 = """#query alarm(d1, 5).
#delay m = 2.
#delay h = 1.
alarm(X, T) :- m(X, T), h(X, T), not ok(X, T).
ok(X, T) :- m(X, T), cal(X).
#rigid cal/1.
cal(d2).
"""


@pytest.mark.parametrize("program,rows", [
    (ZERO_ARG, [{"tick": 4, "fact": "a(3)"}]),
    (ZERO_ARG, [{"tick": 3, "fact": "a(3)"}, {"tick": 4, "fact": "b(3)"}]),
    (RIGID0, [{"tick": 6, "fact": "a(5)"}, {"tick": 7, "fact": "b(4)"}]),
    (GROUND2, [{"tick": 5, "fact": "h(d1, 5)"}, {"tick": 6, "fact": "m(d1, 5)"}]),
    (GROUND2, [{"tick": 0, "fact": f"h(e{i}, 0)"} for i in range(310)]
     + [{"tick": 5, "fact": "h(d1, 5)"}, {"tick": 7, "fact": "m(d1, 5)"}]),
], ids=["zero-arg-late", "zero-arg", "rigid-zero-arity", "ground-two-literals",
        "ground-after-large-slice"])
def test_ground_templates_with_late_facts(tmp_path, program, rows):
    """Zero-argument and fully ground literals: ground templates whose seeded bindings are
    joined on no column."""
    _same_everywhere(*_write(tmp_path, rows, program))


@pytest.mark.parametrize("B", [PolarsBackend(), ArraysBackend()], ids=["polars", "arrays"])
@pytest.mark.parametrize("n_right", [0, 1, 2])
def test_join_with_zero_keys(B, n_right):
    """A join on no column is the cross product (the condition holds for every pair): a left
    join keeps each left row once with null right columns when the right side is empty, a
    semi-join all the left rows or none."""
    L = B.from_rows([{"x": "a", "y": 1}, {"x": "b", "y": 2}], {"x": OBJ, "y": INT})
    R = B.from_rows([{"z": 10 + i, "y": -i} for i in range(n_right)], {"z": INT, "y": INT})
    rows = [(r["x"], r["y"], r["z"], r["y_right"]) for r in B.rows(B.join(L, R, [], [],
                                                                          how="left"))]
    if n_right:
        assert rows == [(x, y, 10 + i, -i) for x, y in (("a", 1), ("b", 2))
                        for i in range(n_right)]
    else:
        assert rows == [("a", 1, None, None), ("b", 2, None, None)]
    inner = [(r["x"], r["z"]) for r in B.rows(B.join(L, R, [], [], how="inner"))]
    assert inner == [(x, 10 + i) for x in "ab" for i in range(n_right)]
    assert B.height(B.join(L, R, [], [], how="semi")) == (2 if n_right else 0)
    assert B.height(B.join(L, R, [], [], how="anti")) == (0 if n_right else 2)


# ------------------------------------------------------------------ 2. bounded memory
def _retained() -> int:
    """The objects the collector tracks, frozen ones included, without collecting (so frozen
    garbage counts); the arrays backend's literal memo (bounded: 4096 entries, a tick number
    being a new literal) emptied first."""
    functions._LITS.clear()
    return len(gc.get_objects()) + gc.get_freeze_count()


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["row", "columnar", "auto"])
def test_memory_of_a_flat_state_is_flat(engine):
    """The malfunction program, 100 devices a tick (a flat state; ~50 facts a slice, so `auto`
    stays on the row engine, whose hand-over point for this program is 80): from tick 300 to
    tick 1 500 the retained objects grow by less than 10 %, and the ticks leave no cyclic
    garbage behind."""
    sess = Session(compile_program(MALFUNCTION, "<t>"), engine=engine)
    it = enumerate(slices(100, 1500, 7))
    for tau, sl in it:
        sess.step_slice(sl, tau)
        if tau == 299:
            break
    gcpause.collect_frozen()  # the run's start: nothing frozen is garbage
    before = _retained()
    for tau, sl in it:
        rep = sess.step_slice(sl, tau)
    after = _retained()
    assert 50 <= rep.state_size <= 150 and sess.executor == ("row" if engine == "auto"
                                                            else engine)
    assert after <= 1.1 * before, (before, after)
    gc.unfreeze()
    try:
        garbage = gc.collect()
    finally:
        gc.freeze()
    assert garbage < 1000, garbage  # was ~570 objects a tick on the row engine


_FROZEN_CYCLES = """
import gc
from reasoning.util import gcpause

gcpause.collect_frozen()
base = gc.get_freeze_count()
n0 = gcpause.stats["collections"]
most = 0
for _ in range((2 * base + 2 * gcpause.FLOOR) // 2000 + 20):
    with gcpause.frozen_survivors():
        for _ in range(1000):
            a = []
            a.append([a])  # two lists, each the other's only referrer
        del a
    most = max(most, gc.get_freeze_count())
assert gcpause.stats["collections"] > n0
bound = 2 * base + gcpause.FLOOR
assert most <= bound + (bound + gcpause.FLOOR) // 4 + 4000, (base, most)
gcpause.collect_frozen()
assert gc.get_freeze_count() <= base + 10_000
print("ok", base, most)
"""


def test_frozen_survivors_collects_frozen_cycles_when_the_frozen_heap_doubles():
    """Blocks that each leave 2 000 objects in reference cycles: the permanent generation is
    collected once it has doubled, and never holds more than about twice what survives.  In
    a fresh interpreter: its heap, not a test worker's millions of objects, sets how many
    blocks it takes (a worker's made this test minutes long)."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _FROZEN_CYCLES], capture_output=True, text=True,
                       timeout=600, cwd=str(EXAMPLES.parent))
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stdout + r.stderr


_THREAD = """
import threading
stop = threading.Event()
threading.Thread(target=stop.wait).start()
"""


def test_frozen_survivors_with_another_thread_alive_is_bounded_and_cheap():
    """With another thread alive (`hypo run`'s reader, Great Expectations beside a lake tick,
    a test worker's Spark threads) the frozen heap's growth is estimated from the young
    generation's counter, and counted at least every BLIND_MAX freezes: frozen cycles are
    still collected when it doubles, and a heap of millions of objects is walked once per
    BLIND_MAX freezes, not once per 4 (a row-engine loop was 17× slower)."""
    import subprocess
    import sys

    code = _THREAD + _FROZEN_CYCLES + "\nstop.set()\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=600, cwd=str(EXAMPLES.parent))
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stdout + r.stderr
    walks = _THREAD + """
import gc
from reasoning.util import gcpause
junk = [[i] for i in range(1_000_000)]
gcpause.collect_frozen()
n0 = gcpause.stats["counts"]
for _ in range(640):
    with gcpause.frozen_survivors():
        x = [[i] for i in range(50)]
print("walks", gcpause.stats["counts"] - n0)
stop.set()
"""
    r = subprocess.run([sys.executable, "-c", walks], capture_output=True, text=True,
                       timeout=600, cwd=str(EXAMPLES.parent))
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.split()[1]) <= 640 // gcpause.BLIND_MAX + 2, r.stdout


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("n_right", [0, 2])
def test_join_with_zero_keys_on_spark(n_right):
    """The Spark executor (jobs/tick/spark_plan.py) runs the same plan: its zero-key left join
    (Spark SQL's outer join on TRUE) gives the in-process backends' rows."""
    from jobs.tick.spark import session
    from jobs.tick.spark_plan import SparkBackend

    spark = session()  # (the running one, if another test started it)
    rows = []
    for B in (SparkBackend(spark), ArraysBackend()):
        L = B.from_rows([{"x": "a", "y": 1}, {"x": "b", "y": 2}], {"x": OBJ, "y": INT})
        R = B.from_rows([{"z": 10 + i} for i in range(n_right)], {"z": INT})
        rows.append(sorted(((r["x"], r["y"], r["z"]) for r in B.rows(B.join(
            L, R, [], [], how="left"))), key=repr))
    assert rows[0] == rows[1] and len(rows[0]) == 2 * max(n_right, 1)


# ------------------------------------------------------------------ 44.8: lone surrogates
def test_a_lone_surrogate_is_rejected_with_its_line_on_every_executor(tmp_path):
    """A JSON-escaped lone surrogate (\\ud800) decodes to no character: a fact holding one —
    in its text or a structured row's args — is rejected with its line and column, never
    accepted and then fatal to the printer; the good lines around it are kept."""
    lines = ['{"tick": 0, "fact": "Hot(wt1, 0)"}', '{"tick": 1, "fact": "Hot(\\ud800, 1)"}',
             '{"tick": 1, "pred": "Hot", "args": ["x\\udc00"], "time": 1}',
             '{"tick": 2, "fact": "Hot(\\"a\\ud800b\\", 2)"}', '{"tick": 2, "fact": "Hot(wt2, 2)"}']
    stream = tmp_path / "s.jsonl"
    stream.write_text("\n".join(lines) + "\n")
    prog = str(EXAMPLES / "wind_turbines.tdl")
    seen = set()
    for eng in ENGINES:
        for fmt in ("text", "jsonl"):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main(["run", prog, "--stream", str(stream), "--format", fmt, "--engine",
                           *eng])
            e = err.getvalue()
            assert rc == 1 and "Traceback" not in e, e
            assert [x.split(": rejected")[0].rsplit(":", 1)[1] for x in e.splitlines()
                    if "rejected (tick" in x] == ["2", "3", "4"], e
            assert e.count("lone surrogate (\\ud800)") == 2 and "(\\udc00)" in e
            assert "2 facts accepted" in e
            seen.add((fmt, out.getvalue()))
    assert len(seen) == 2  # one output per format, whichever executor


def test_the_api_refuses_a_lone_surrogate():
    from reasoning import Reasoner, compile_file

    r = Reasoner(compile_file(str(EXAMPLES / "wind_turbines.tdl")))
    t = r.feed(["Hot(wt1, 0)", "Hot(\ud800, 0)", ("Hot", ["\udfff"], 0)])
    assert t.accepted == 1 and [("surrogate" in x.reason) for x in t.rejected] == [True, True]


# ------------------------------------------------------------------ 44.8: quoted constants
def test_the_text_view_quotes_constants_that_need_it(tmp_path):
    """A stream constant `wt1, 0` or `X` prints in the text view as the program syntax writes
    it ("wt1, 0", "X"), not as two arguments or a variable; plain constants stay bare."""
    rows = [{"tick": 0, "pred": "Hot", "args": ["wt1, 0"], "time": 0},
            {"tick": 0, "pred": "Hot", "args": ["X"], "time": 0},
            {"tick": 0, "pred": "Hot", "args": ["wt2"], "time": 0}]
    prog, stream = _write(tmp_path, rows, (EXAMPLES / "wind_turbines.tdl").read_text())
    for eng in ENGINES:
        out = _cli("run", prog, "--stream", stream, "--query", "Shdn(X, T)", "--engine", *eng)
        assert 'Shdn("wt1, 0", 2)  if Hot("wt1, 0", 1)' in out, out
        assert 'Shdn("X", 2)  if Hot("X", 1)' in out and "Shdn(wt2, 2)  if Hot(wt2, 1)" in out
        assert "Shdn(wt1, 0, 2)" not in out and "Shdn(X, 2)  if" not in out


# ---------------------------------------------------------------- 44.4: wide windows


def _error(text: str):
    from reasoning.language.errors import ProgramError

    with pytest.raises(ProgramError) as e:
        compile_program(text, "w.tdl")
    return e.value


@pytest.mark.timeout(120)
def test_a_wide_diamond_compiles_without_trying_every_pair():
    """`Diamondminus[0,4095]` is 4096 templates of one literal each; minimality tried every
    pair of them (16 million subsumption tests, ~10 minutes) — the candidates index tries
    none (its pivot literal is its own).  Two diamonds of [0,63] in one rule likewise."""
    cp = compile_program("#query P(X, T).\nP(X,T) :- Diamondminus[0,4095] E(X,T).\n", "w.tdl")
    assert len(cp.main.templates) == 4096
    cp = compile_program("#query P(X, T).\n"
                         "P(X,T) :- Diamondminus[0,63] E(X,T), Diamondminus[0,63] F(X,T).\n",
                         "w.tdl")
    assert len(cp.main.templates) == 64 * 64


def test_minimal_keeps_the_subsumption_it_had():
    """The candidates index still finds a more general template with the same head (fixed
    literals a subset), through a variable of its own (Y ↦ c), and with another head."""
    cp = compile_program("""#query P(X, T).
P(X,T) :- A(X,T).
P(X,T) :- A(X,T), B(X,T).
P(X,T) :- A(X,T-1), C(X,Y,S).
P(X,T) :- A(X,T-1), C(X,c,S).
P(c,T) :- A(c,T), D(T).
""", "m.tdl")
    assert sorted(str(t) for t in cp.main.templates) == [
        "⟨∅, {A(X, T)}⟩", "⟨∅, {C(X, Y, S), A(X, T-1)}⟩"], [str(t) for t in cp.main.templates]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lit,col", [("A(X,T) Since[0,2000] B(X,T)", 11),
                                     ("not A(X,T) Since[0,2000] B(X,T)", 15)])
def test_a_since_too_wide_to_translate_is_refused_at_the_operator(lit, col):
    """`Since[0,b]` is b+1 rules of up to b+1 literals: [0,2000] was 2 million literals and
    `hypo check` ran out of time and memory (killed at 900 s, 3.3 GB) — now refused before
    anything is generated, at the operator (negated: the auxiliary predicate's rules)."""
    err = _error(f"#query P(X, T).\nP(X,T) :- {lit}.\n")
    assert (err.span.line, err.span.column) == (2, col), err.format()
    assert "Since[0,2000] translates into 2001 rules" in err.message
    assert "2003001 in all" in err.message and "narrow the interval" in err.message


@pytest.mark.timeout(60)
def test_a_box_repeated_for_each_case_of_a_diamond_is_refused():
    """In one rule: 301 rules each with the box's 301 literals, counted before any is made
    — refused where the disjunction is a negated box; a diamond is lifted into an
    auxiliary predicate instead (issue 45) and the rule answered; through two rules: P_Q's
    hypotheses budget names the box's rule."""
    err = _error("#query P(X, T).\nP(X,T) :- Boxminus[0,300] E(X,T), not Boxminus[0,300] "
                 "F(X,T).\n")
    assert "translates into 301 rules with 90902 body literals" in err.message, err.message
    assert (err.span.line, err.span.column) == (2, 11)
    from reasoning.language.compiler import compile_program

    cp = compile_program("#query P(X, T).\nP(X,T) :- Boxminus[0,300] E(X,T), "
                         "Diamondminus[0,300] F(X,T).\n", "w.tdl")
    assert [p.startswith("__Diamondminus0_300_F_") for p in cp.modular] == [True]
    err = _error("#query P(X, T).\nQ(X,T) :- Boxminus[0,250] B(X,T).\n"
                 "R(X,T) :- Diamondminus[0,4000] Q(X,T).\nP(X,T) :- R(X,T).\n")
    assert "exceeds the budget of 65536 hypothesis literals" in err.message, err.message
    assert "this rule's body has 251 literals" in err.message
    assert err.span.line == 2


def test_hypo_check_of_a_too_wide_since_is_one_error_line(tmp_path):
    """The CLI: exit 2, file:line:column, no traceback."""
    import subprocess
    import sys

    p = tmp_path / "w.tdl"
    p.write_text("#query P(X, T).\nP(X,T) :- not A(X,T) Since[0,2000] B(X,T).\n")
    r = subprocess.run([sys.executable, "-m", "reasoning.cli.main", "check", str(p)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert f"{p}:2:15: error: Since[0,2000] translates into" in r.stderr
    assert "Traceback" not in r.stderr


# ---------------------------------------------------------------- 44.3: executor limits


def _wide(n: int, head: bool) -> tuple[str, dict]:
    vs = ", ".join(f"X{i}" for i in range(n))
    hv = vs if head else "X0"
    program = f"#query P({hv}, T).\nP({hv}, T) :- E({vs}, T), not F(X0, T-1).\n"
    return program, [{"tick": 1, "fact": "F(c1, 0)"},
                     {"tick": 2, "fact": "E(" + ", ".join(f"c{i % 7}" for i in range(n)) + ", 2)"}]


@pytest.mark.parametrize("n,head", [(40, False), (70, True), (2000, True)])
def test_wide_atoms_answer_alike_on_every_executor(tmp_path, n, head):
    """A body atom of 40 arguments overflowed the C row formatter's 32 columns ("format_rows:
    bad spec or too many columns"), a head of 70 or 2 000 variables the C join's 64 key
    columns ("1 to 64 key columns, got 2002"): both now take their numpy / Python paths, and
    every executor prints the row engine's bytes."""
    program, rows = _wide(n, head)
    prog, stream = _write(tmp_path, rows, program)
    if n <= 70:
        _same_everywhere(prog, stream)
    else:  # (2 000 columns: one view, three executors — every view took 50 s)
        args = ["run", prog, "--stream", stream, "--format", "jsonl", "--all"]
        ref = _cli(*args, "--engine", "row")
        for eng in (("columnar", "--backend", "arrays"), ("columnar", "--backend", "polars")):
            assert _cli(*args, "--engine", *eng) == ref, eng
    out = _cli("run", prog, "--stream", stream, "--format", "jsonl", "--engine", "columnar")
    assert '"status": "definite"' in out and "c6" in out, out[:300]


def test_c_joins_past_64_key_columns_equal_the_numpy_path():
    import numpy as np

    from reasoning.native import kernels

    rng = np.random.default_rng(3)
    L = rng.integers(0, 2, size=(50, 70)).astype(np.int64)
    R = np.concatenate([L[::3], rng.integers(0, 2, size=(10, 70)).astype(np.int64)])
    li, ri = kernels.join_rows(L, None, R, None)
    want = sorted((i, j) for i in range(len(L)) for j in range(len(R))
                  if (L[i] == R[j]).all())
    assert sorted(zip(li.tolist(), ri.tolist())) == want
    assert kernels.member_rows(L, None, R, None).tolist() == [
        any((L[i] == R[j]).all() for j in range(len(R))) for i in range(len(L))]
    g, first = kernels.factorize_rows(L)
    assert [tuple(L[f]) for f in first] == list(dict.fromkeys(tuple(r) for r in L))
    assert all(tuple(L[first[g[i]]]) == tuple(L[i]) for i in range(len(L)))


def test_offsets_adding_up_past_2_60_are_refused_by_every_command(tmp_path):
    """Twelve rules of T+999999999999999999 unfold into an offset of 1.2·10^19: the columnar
    executor overflowed int64 (OverflowError / a Polars cast error), the row engine ran
    towards tick 10^19 — pre-processing refuses it, so every executor and the lake do."""
    from reasoning.language.errors import ProgramError

    k = 999999999999999999
    for sign in ("+", "-"):
        rules = [f"A0(X, T) :- E(X, T{sign}{k})."] + [
            f"A{i}(X, T) :- A{i - 1}(X, T{sign}{k})." for i in range(1, 12)]
        text = "#query A11(X, T).\n" + "\n".join(rules) + "\n"
        with pytest.raises(ProgramError) as e:
            compile_program(text, "o.tdl")
        assert (e.value.span.line, e.value.span.column) == (1, 8)
        assert f"T{sign}11999999999999999988" in e.value.message
        assert "offsets add up along the rules" in e.value.message
    # one such offset is fine (below 2^60)
    compile_program(f"#query A(X, T).\nA(X, T) :- E(X, T+{k}).\n", "o.tdl")


def test_a_template_of_more_than_62_literals_answers_alike_and_the_lake_refuses_it(tmp_path):
    """Evidence is one int64 mask in the columnar executor and the lake's state table: a
    template of 63 literals answered on the row engine and was refused by `--engine
    columnar`.  Now every `hypo run` executor prints the row engine's bytes (the summary line
    of `columnar`, and of `auto` past its hand-over point, says why it ran on the row
    engine), `hypo check` notes it, and `hypo lake init` refuses
    it in one line naming the rule and the limit; 62 literals run on every executor."""
    from hypo_cli import main as hypo_main

    body = lambda k: ", ".join(f"E{i}(X, T)" for i in range(k))  # noqa: E731

    def hypo(*argv):
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()) as out, \
                contextlib.redirect_stderr(err), pytest.raises(SystemExit) as ex:
            raise SystemExit(hypo_main(list(argv)) or 0)
        assert "Traceback" not in err.getvalue()
        return ex.value.code, out.getvalue(), err.getvalue()

    for k in (62, 63):
        prog = tmp_path / f"p{k}.tdl"
        prog.write_text(f"#query P(X, T).\nP(X, T) :- {body(k)}.\n")
        lines = [json.dumps({"tick": 0, "fact": f"E{i}(a, 0)"}) for i in range(k)]
        (tmp_path / "s.jsonl").write_text("\n".join(lines + ['{"tick": 1, "fact": "E0(b, 1)"}'])
                                          + "\n")
        stream = str(tmp_path / "s.jsonl")
        why = (f"a template of P(X, T) has 63 literals (the rule at {prog}:2:1, 63 literals, "
               f"is in each template through it); the columnar executor and the lake's state "
               f"table take at most 62")
        code, _, err = hypo("check", str(prog))
        assert code == 0 and (why in err) == (k == 63), err
        for fmt in ("text", "jsonl"):
            runs = [hypo("run", str(prog), "--stream", stream, "--all", "--format", fmt,
                         "--engine", *e) for e in ENGINES]
            assert {(code, out) for code, out, _ in runs} == {(0, runs[0][1])}
            assert ("P(a, 0)" if fmt == "text" else '"status": "definite"') in runs[0][1]
            assert all(("(row engine: " + why in err) == (k == 63 and eng[0] != "row")
                       for (_, _, err), eng in zip(runs, ENGINES))
        code, _, err = hypo("lake", "--lake", str(tmp_path / f"lake{k}"), "init",
                            "--program", str(prog))
        if k == 63:
            assert code == 2 and why in err and len(err.strip().splitlines()) == 1, err
            assert not (tmp_path / f"lake{k}").exists()
        else:
            assert code == 0, err


# ---------------------------------------------------------------- 44.10: the spool


def test_a_pipe_or_device_spools_at_most_the_limit_and_leaves_nothing(tmp_path, monkeypatch):
    """`hypo lake ingest /dev/zero` wrote 14 GB into the lake's spool in a minute: past
    HYPO_SPOOL_MAX_BYTES the copy is removed and the ingest refused, naming the file."""
    from jobs import lake as api
    from jobs.errors import InputError

    lake = str(tmp_path / "lake")
    api.init(lake, str(EXAMPLES / "wind_turbines.tdl"))
    monkeypatch.setenv("HYPO_SPOOL_MAX_BYTES", str(3 << 20))
    with pytest.raises(InputError, match=r"/dev/zero: more than 3145728 bytes from a pipe"):
        api.ingest(lake, None, ["/dev/zero"])
    spool = tmp_path / "lake" / "_hypo" / "spool"
    assert not spool.exists() or list(spool.iterdir()) == []
    for bad in ("abc", "0", "-5", "1e9"):
        monkeypatch.setenv("HYPO_SPOOL_MAX_BYTES", bad)
        with pytest.raises(InputError, match="HYPO_SPOOL_MAX_BYTES"):
            api.ingest(lake, None, ["/dev/zero"])


def test_a_killed_ingests_spool_file_is_removed_and_reported(tmp_path, capsys):
    """A spool file of an ingest whose process is gone (kill -9), or named before spool
    files carried a process id, is removed by the next ingest, which says so; a running
    ingest's is left alone."""
    import subprocess
    import sys

    from jobs import lake as api

    lake = str(tmp_path / "lake")
    api.init(lake, str(EXAMPLES / "wind_turbines.tdl"))
    spool = tmp_path / "lake" / "_hypo" / "spool"
    spool.mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    (spool / f"spool-{dead}-x1.jsonl").write_bytes(b"x" * 1000)
    (spool / "spool-22idqqd2").write_bytes(b"y" * 10)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (spool / f"spool-{live.pid}-x2").write_bytes(b"z")
        api.ingest(lake, None, [str(EXAMPLES / "wind_turbines.jsonl")])
        err = capsys.readouterr().err
        assert f"removed spool-{dead}-x1.jsonl (1000 bytes)" in err
        assert "removed spool-22idqqd2 (10 bytes)" in err
        assert sorted(p.name for p in spool.iterdir()) == [f"spool-{live.pid}-x2"]
    finally:
        live.kill()
        live.wait()


# ---------------------------------------------------------------- 44.12: one rule for both


def test_a_time_just_under_2_60_is_valid_in_fact_text_as_in_a_structured_row():
    """Fact text took at most 18 digits (the program parser's numbers) where a structured
    row took every time below 2^60: both now take times below 2^60 and refuse the rest
    with the same range reason."""
    from reasoning.stream.facts import MAX_TIME, parse_fact_text, structured_fact, validate

    cp = compile_program((EXAMPLES / "wind_turbines.tdl").read_text(), "w.tdl")
    t = MAX_TIME - 1
    for text in (f"Hot(wt1, {t})", f'Hot("w t", {t})', f"Hot(wt1,{t} )"):
        f = parse_fact_text(text, cp)
        assert f.time == t and f.pred == "Hot", text
    s, bad = structured_fact({"pred": "Hot", "args": ["wt1"], "time": t})
    assert bad is None and s == parse_fact_text(f"Hot(wt1, {t})", cp)
    assert validate(cp, s, t) is None  # valid at its own tick
    for text in (f"Hot(wt1, {MAX_TIME})", f"Hot(wt1, {MAX_TIME}{MAX_TIME})",
                 f'Hot("w t", {MAX_TIME})'):
        assert "out of range" in validate(cp, parse_fact_text(text, cp), 0), text
    assert "out of range" in structured_fact({"pred": "Hot", "args": ["wt1"],
                                              "time": MAX_TIME})[1]


def test_a_line_of_an_earlier_tick_is_refused_by_run_and_by_the_lake_alike(tmp_path):
    """`hypo run` refused a line whose tick comes before an earlier line's; the lake filed
    it under its own tick, so the two disagreed — the lake now refuses it too (JSONL, the
    format both read; a row refused for another reason does not move the order on)."""
    from jobs import lake as api
    from jobs.table import delta

    rows = [(0, "Hot(wt1, 0)"), (3, "Hot(wt1, x)"), (2, "Hot(wt1, 2)"), (1, "Hot(wt2, 1)"),
            (2, "Hot(wt3, 2)"), (4, None), (3, "Hot(wt3, 3)")]
    stream = tmp_path / "s.jsonl"
    stream.write_text("".join(json.dumps({"tick": t, **({"fact": f} if f else {})}) + "\n"
                              for t, f in rows))
    prog = str(EXAMPLES / "wind_turbines.tdl")
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        main(["run", prog, "--stream", str(stream)])
    run_out = sorted(int(x.split(":")[1]) for x in err.getvalue().splitlines()
                     if "out of order" in x)
    lake = str(tmp_path / "lake")
    api.init(lake, prog)
    api.ingest(lake, None, [str(stream)])
    q = delta.read_arrow(str(tmp_path / "lake" / "quarantine"), "quarantine").to_pylist()
    lake_out = sorted(r["line"] for r in q if r["reason_code"] == "out_of_order")
    assert run_out == lake_out == [4, 7]
    assert all("out of order: tick" in r["reason"] for r in q if r["reason_code"] == "out_of_order")


# ------------------------------------------------- 44.3: a differential test at the limits


@pytest.mark.timeout(900)
def test_row_and_columnar_agree_at_the_limits(tmp_path_factory):
    """Random programs at the executors' limits — wide atoms and heads (past the C join's
    64 key columns and the C formatter's 32), offsets up to 10^18 along chains of rules,
    templates of up to 63 literals — print the same bytes on every executor, or are refused
    alike (by pre-processing)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from reasoning.language.errors import ProgramError

    offsets = st.sampled_from([0, 1, -1, 3, 10 ** 17, 10 ** 18 - 1, -(10 ** 18 - 1)])

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck),
              derandomize=True)
    @given(st.sampled_from([1, 2, 33, 40, 65, 70]), st.booleans(), offsets, offsets,
           st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=4),
           st.sampled_from([0, 0, 2, 60, 61]))
    def check(n, wide_head, o1, o2, facts, box):
        vs = ", ".join(f"X{i}" for i in range(n))
        hv = vs if wide_head else "X0"
        off = lambda o: "" if o == 0 else (f"+{o}" if o > 0 else str(o))  # noqa: E731
        # a box of `box` + 1 literals and the negated F: 63 literals at box = 61, past the
        # columnar executor's evidence mask (the row engine runs it whatever --engine says)
        e = f"Boxminus[0,{box}] E({vs}, T{off(o1)})" if box else f"E({vs}, T{off(o1)})"
        program = (f"#query P({hv}, T).\nQ({vs}, T) :- {e}.\n"
                   f"P({hv}, T) :- Q({vs}, T{off(o2)}), not F(X0, T).\n")
        try:
            compile_program(program, "l.tdl")
        except ProgramError as e:  # refused alike: every executor compiles the same way
            assert "offsets add up" in e.message, e.message
            return
        tmp = tmp_path_factory.mktemp("lim")
        rows = [{"tick": t, "fact": "E(" + ", ".join(f"c{(i + k) % 3}" for i in range(n)) +
                 f", {t})"} for t, k in sorted(facts)]
        rows += [{"tick": 2, "fact": "F(c0, 2)"}]
        prog, stream = _write(tmp, rows, program)
        # (--until: a horizon of 10^18 ticks is run to its end otherwise, tick by tick)
        args = ["run", prog, "--stream", stream, "--format", "jsonl", "--all", "--all-queries",
                "--until", "5"]
        ref = _cli(*args, "--engine", "row")
        for eng in (("columnar", "--backend", "arrays"), ("columnar", "--backend", "polars")):
            assert _cli(*args, "--engine", *eng) == ref, (program, eng)

    check()
