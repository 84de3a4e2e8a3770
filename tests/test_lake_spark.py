"""The lakehouse tick job end to end on Spark (one local[2] session for the module):
equality with `hypo run` at every tick (Example 13, a generated 20-turbine stream, random
programs), time travel, answer lifecycles, backfill, crash injection, concurrent commits and
bad input files."""
from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from jobs.table import delta
from jobs import lake as api
from jobs.tick import job as tickjob
from jobs.errors import ConcurrentTickError, InjectedFault, TickOrderError
from jobs.ingest.generate import random_case, turbine_program, turbine_stream, write_jsonl
from jobs.table.store import Lake
from lakehelp import (api_lines, check_lake_equals_run, copy_lake, hypo, lake_lines,
                      reference, until_of, write_program)
from reasoning.language.compiler import compile_file
from reasoning.row.engine import Engine
from reasoning.semantics.patterns import Fact
from reasoning.stream.reader import read_stream_file

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TURBINES = "examples/wind_turbines.tdl"
STREAM = "examples/wind_turbines.jsonl"
MAIN = "OK(X, T)"


@pytest.fixture(scope="module")
def spark():
    from jobs.tick.spark import session

    s = session("local[2]")
    yield s
    s.stop()


def _cli(*argv: str) -> str:
    rc, out, err = hypo("lake", *argv)
    assert rc == 0, err
    return out


@pytest.fixture(scope="module")
def turbine(spark, tmp_path_factory):
    """Example 13 through `hypo lake`: init, ingest the stream, run ticks 0..8 with the plan
    on Spark (the executor of large ticks; the other tests use the default, which runs the
    same plan on the driver for ticks this small)."""
    d = tmp_path_factory.mktemp("turbine")
    lake = str(d / "lake")
    until = until_of(TURBINES, STREAM)
    assert until == 8
    _cli("--lake", lake, "init", "--program", TURBINES)
    out = _cli("--lake", lake, "ingest", STREAM)
    assert "5 fact row(s)" in out
    out = _cli("--lake", lake, "run", "--from", "0", "--to", str(until), "--executor", "spark")
    assert out.count("\n") == until + 1 and out.count("spark executor") == until + 1
    return {"lake": lake, "until": until, "ref": reference(TURBINES, STREAM, until),
            "jobs": [int(n) for n in re.findall(r"(\d+) Spark job", out)],
            "ref_all": reference(TURBINES, STREAM, until, all_=True), "dir": d}


@pytest.fixture(scope="module")
def base(turbine):
    """Example 13 with ticks 0..2 done (for crash and concurrency tests)."""
    lake = str(turbine["dir"] / "base")
    api.init(lake, TURBINES)
    api.ingest(lake, None, [STREAM])
    api.run_range(lake, 0, 2)
    return lake


def _answers_rows(lake: str) -> list:
    t = delta.read_arrow(os.path.join(lake, "answers"), "answers", columns=["tick", "json"])
    return sorted((r["tick"], r["json"]) for r in t.to_pylist())


# ------------------------------------------------------------------ equality with hypo run
def test_example13_through_the_cli_equals_hypo_run(turbine):
    lake = turbine["lake"]
    for t in range(turbine["until"] + 1):
        assert lake_lines(lake, t) == turbine["ref"][t], f"tick {t}"
        assert api_lines(lake, t, "all", MAIN) == turbine["ref_all"][t], f"tick {t} (--all)"
    st = api.lake_status(lake)
    assert st["last_tick"] == 8 and st["incomplete_ticks"] == []


# issue 42: Spark pays per job, not per row: reading, validation, GX, the plan and the
# writes of one tick in at most this many jobs
JOBS_A_TICK = 12


def test_example13_runs_in_a_few_spark_jobs_a_tick(turbine):
    assert len(turbine["jobs"]) == turbine["until"] + 1
    assert max(turbine["jobs"]) <= JOBS_A_TICK, turbine["jobs"]


def test_spark_jobs_a_tick_do_not_grow_with_the_data(spark, tmp_path):
    """The same program on 20 and on 600 turbines (30× the facts and the state): tick for
    tick the same number of Spark jobs, within the goal — the driver never decides the next
    operation from a count that grows with the data."""
    jobs = {}
    for n in (20, 600):
        delays, rows = turbine_stream(n, 2, max_delay=1, seed=5)
        prog = write_program(tmp_path, turbine_program(delays), f"p{n}.tdl")
        stream = str(tmp_path / f"s{n}.jsonl")
        write_jsonl(rows, stream)
        lake = str(tmp_path / f"lake{n}")
        api.init(lake, prog)
        api.ingest(lake, None, [stream])
        jobs[n] = [api.run_tick(lake, t, executor="spark")["counts"]["spark_jobs"]
                   for t in range(2)]
    assert jobs[20] == jobs[600], jobs
    assert max(jobs[600]) <= JOBS_A_TICK, jobs


def test_a_tick_of_up_to_half_a_million_input_rows_is_one_partition_with_codegen_by_size(
        spark):
    """One partition up to ROWS_PER_PARTITION input rows (10⁵ facts a tick: 2 · 10⁵), code
    generation from CODEGEN_MIN_ROWS on (compiling costs more than it saves below)."""
    from jobs.tick import spark as spark_mod

    got = {}
    for rows in (10, 200_000, 10 ** 7):
        n = spark_mod.tick_partitions(spark, rows)
        got[rows] = (n, spark.conf.get("spark.sql.codegen.wholeStage"))
    assert got[10] == (1, "false")
    assert got[200_000] == (1, "true")
    assert got[10 ** 7][0] > 1 and got[10 ** 7][1] == "true"


def test_the_drivers_frames_need_no_python_worker_and_the_call_site_is_released(spark):
    """A frame of the driver's values is built by the JVM (Arrow), not from pickled Python
    rows that each task reading it would need a Python worker to decode (~0.4 s a job); in
    one-partition mode it is one partition with a 1-byte estimate (no exchange after joins);
    the tick's fixed call site is released after it."""
    from jobs.tick.spark_plan import SparkBackend
    from reasoning.columnar.layout import INT, OBJ, STRLIST

    from jobs.tick.spark import tick_partitions

    for rows in (10 ** 7, 10):  # a tick of several partitions, then one of one partition
        B = SparkBackend(spark)
        B.single = single = tick_partitions(spark, rows) == 1
        B.pin_call_site("hypo tick test")
        df = B.from_rows([{"a": 1, "b": "x", "c": ["p", "q"]}, {"a": 2, "b": None, "c": []}],
                         {"a": INT, "b": OBJ, "c": STRLIST})
        lineage = df._jdf.queryExecution().toRdd().toDebugString()
        assert "PythonRDD" not in lineage and "ParallelCollectionRDD" in lineage, lineage
        j = B.join(df, B.select(df, [B.col("a"), B.alias(B.col("b"), "d")]), ["a"], ["a"])
        assert sorted((r["a"], r["b"], r["c"], r["d"]) for r in B.rows(j)) == [
            (1, "x", ["p", "q"], "x"), (2, None, [], None)]
        if single:
            assert "Exchange" not in j._jdf.queryExecution().executedPlan().toString()
        assert B.rows(B.empty({"a": INT})) == []
        sc = spark.sparkContext._jsc.sc()
        assert sc.getLocalProperty("callSite.long") == "hypo tick test"
        B.release_call_site()
        assert sc.getLocalProperty("callSite.short") is None
        assert sc.getLocalProperty("callSite.long") is None
    tick_partitions(spark, 10 ** 7)  # the session's settings for a large tick again


def test_answers_at_tick_2_after_tick_8_by_time_travel(turbine):
    lake = turbine["lake"]
    L = Lake(lake)
    v2 = L.done()[2]["answers_version"]
    assert v2 < L.table("answers").version()
    assert lake_lines(lake, 2) == turbine["ref"][2]
    assert lake_lines(lake, 2, "all") == turbine["ref_all"][2]
    out = _cli("--lake", lake, "answers", "--tick", "3", "--format", "text", "--status", "all")
    assert "OK(X, 1) for X ∉ {wt1, wt2}" in out and "pending       OK(wt2, 1)" in out


def test_tables_are_standard_delta_read_by_another_engine(turbine):
    """delta-rs' own SQL engine (DataFusion) reads every table, with time travel."""
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    lake = turbine["lake"]
    for t in ("facts", "state", "answers", "quarantine", "dq", "_hypo/ticks"):
        dt = DeltaTable(os.path.join(lake, t))
        assert dt.protocol().min_reader_version == 1
        n = pa.table(QueryBuilder().register("t", dt).execute("select count(*) as n from t")
                     .read_all()).column("n")[0].as_py()
        assert n == sum(a["num_records"] for a in pa.table(dt.get_add_actions(True)).to_pylist())
    v2 = Lake(lake).done()[2]["answers_version"]
    got = pa.table(QueryBuilder().register("a", DeltaTable(os.path.join(lake, "answers"), v2))
                   .execute("select json, sort_key from a where tick = 2").read_all())
    lines = [j for _, j in sorted(zip(got.column("sort_key").to_pylist(),
                                      got.column("json").to_pylist()))]
    assert lines == turbine["ref_all"][2]
    facts = pa.table(QueryBuilder().register("f", DeltaTable(os.path.join(lake, "facts")))
                     .execute("select tick, pred, args, time from f order by tick, time")
                     .read_all()).to_pylist()
    assert [(r["tick"], r["args"][0], r["time"]) for r in facts][:3] == [
        (0, "wt1", 0), (2, "wt2", 0), (2, "wt1", 2)]


def test_history_of_ok_wt2_1(turbine):
    ev = api.history(turbine["lake"], "OK(wt2, 1)")
    by = {e["tick"]: e for e in ev}
    assert by[1]["status"] == "pending" and not by[1]["exact"]  # OK(X, 1) covers it
    assert by[3]["status"] == "pending" and by[3]["exact"] and by[3]["answer"] == "OK(wt2, 1)"
    assert by[4]["status"] == "definite" and by[4]["event"] == "confirmed (definite)"
    assert by[4]["evidence"] == ["not Shdn(wt2, 2)"] and max(by) == 4
    ev = api.history(turbine["lake"], "OK(wt1, 1)")
    assert ev[-1]["tick"] == 3 and ev[-1]["status"] == "refuted"  # Shdn(wt1, 2) is definite
    out = _cli("--lake", turbine["lake"], "history", "OK(wt2, 1)")
    assert "tick 4    definite      confirmed (definite)" in out


def test_lifecycle_hypothetical_to_definite_and_refuted(spark, tmp_path):
    """A positive query has real hypothetical answers: Shdn(wt1, 2) is confirmed at tick 3,
    Shdn(wt2, 2) is refuted at tick 4 (Hot(wt2, 1) never arrived within δ = 3)."""
    q = "Shdn(X, T)"
    lake = str(tmp_path / "lake")
    until = 4  # enough for both outcomes
    _cli("--lake", lake, "init", "--program", TURBINES, "--query", q)
    _cli("--lake", lake, "ingest", STREAM)
    api.run_range(lake, 0, until)
    ref = reference(TURBINES, STREAM, until, q, all_=True)
    for t in range(until + 1):
        assert api_lines(lake, t, "all", q) == ref[t], f"tick {t}"
    ev = api.history(lake, "Shdn(wt1, 2)")
    assert [(e["tick"], e["status"]) for e in ev] == [
        (0, "hypothetical"), (1, "hypothetical"), (2, "hypothetical"), (3, "definite")]
    assert ev[0]["event"] == "first seen (hypothetical)" and ev[0]["evidence"] == ["Hot(wt1, 0)"]
    assert ev[3]["evidence"] == ["Hot(wt1, 0)", "Hot(wt1, 1)", "Hot(wt1, 2)"]
    ev = api.history(lake, "Shdn(wt2, 2)")
    assert [(e["tick"], e["status"]) for e in ev] == [
        (2, "hypothetical"), (3, "hypothetical"), (4, "refuted")]
    assert ev[0]["deadline"] == 5 and ev[0]["hypotheses"] == ["Hot(wt2, 1)", "Hot(wt2, 2)"]
    # a program mismatch: same text, another query
    rc, _, err = hypo("lake", "--lake", lake, "init", "--program", TURBINES)
    assert rc == 2 and "program mismatch" in err


def _state_rows(lake: str, tick: int) -> list:
    """S_tick as the lake stores it (partition tick of the version tick committed)."""
    v = Lake(lake).done()[tick]["state_version"]
    t = delta.read_arrow(os.path.join(lake, "state"), "state", version=v,
                         partitions={"tick": tick})
    return sorted(json.dumps(r, sort_keys=True) for r in t.to_pylist())


def _state_answers(lake: str, tick: int, cp) -> tuple:
    """S_tick of the lake as row-engine Answers and window facts (canonical order)."""
    from jobs.table.state import rows_to_answers

    v = Lake(lake).done()[tick]["state_version"]
    t = delta.read_arrow(os.path.join(lake, "state"), "state", version=v,
                         partitions={"tick": tick})
    answers, window = rows_to_answers(cp, t.to_pylist())
    return _canon(answers), sorted(map(str, window))


def _canon(answers) -> list:
    return sorted((a.tid, str(a.b), sorted(a.ev), sorted(map(str, a.ng))) for a in answers)


def test_generated_turbines_20_devices_equal_hypo_run_and_engine_state(spark, tmp_path):
    """20 devices with their own δ: every tick's answers are `hypo run`'s and S_τ (answers
    and window) is the row engine's, tick by tick."""
    delays, rows = turbine_stream(20, 5, max_delay=3, seed=11)
    prog = write_program(tmp_path, turbine_program(delays))
    stream = str(tmp_path / "s.jsonl")
    write_jsonl(rows, stream)
    until = until_of(prog, stream)
    lake = str(tmp_path / "lake")
    api.init(lake, prog)
    api.ingest(lake, None, [stream])
    ref = reference(prog, stream, until)
    ref_all = reference(prog, stream, until, all_=True)
    cp = compile_file(prog)
    st = read_stream_file(stream, cp)
    eng = Engine(cp)
    for t in range(until + 1):
        api.run_tick(lake, t)
        assert api_lines(lake, t, None, MAIN) == ref[t], f"tick {t}"
        assert api_lines(lake, t, "all", MAIN) == ref_all[t], f"tick {t} (--all)"
        eng.step([f for f, _ in st.slices.get(t, ())], t)
        window = sorted(str(f) for (p, tt), s_ in eng.window.items() for f in
                        (Fact(p, a, tt) for a in s_))
        assert _state_answers(lake, t, cp) == (_canon(eng.answers), window), f"S_{t}"


@pytest.mark.parametrize("seed,executor", [(1, "spark"), (2, "local"), (3, "row"),
                                           (4, "local")])
def test_random_programs_equal_hypo_run(spark, tmp_path, seed, executor):
    """Differential: small random programs with negation, every executor of the tick job
    (the plan on Spark, the plan on the driver, the row engine)."""
    text, rows = random_case(seed, n_devices=4, n_times=4)
    prog = write_program(tmp_path, text)
    stream = str(tmp_path / "s.jsonl")
    write_jsonl(rows, stream)
    check_lake_equals_run(str(tmp_path / "lake"), prog, stream, "B(X, T)", executor,
                          what=f"seed {seed}")


@pytest.mark.parametrize("seed", [1, 5])
def test_the_plan_over_several_partitions_equals_hypo_run(spark, tmp_path, monkeypatch, seed):
    """A tick of more rows than one partition holds runs the plan with shuffles (no
    one-partition mode, code generation on): here a partition holds 4 rows, so every tick of
    these small streams takes that path — the same answers as `hypo run`."""
    from jobs.tick import spark as spark_mod

    monkeypatch.setattr(spark_mod, "ROWS_PER_PARTITION", 4)
    text, rows = random_case(seed, n_devices=4, n_times=4)
    prog = write_program(tmp_path, text)
    stream = str(tmp_path / "s.jsonl")
    write_jsonl(rows, stream)
    check_lake_equals_run(str(tmp_path / "lake"), prog, stream, "B(X, T)", "spark",
                          what=f"seed {seed}, several partitions")
    assert spark_mod.tick_partitions(spark, 9) > 1  # the path taken: more than one


@pytest.mark.parametrize("seed", [1, 2, 4, 5])
def test_a_tick_split_by_the_programs_key_equals_hypo_run(spark, tmp_path, monkeypatch, seed):
    """Programs with a partition key (reasoning/columnar/partitioning.py) run each tick as
    three partitions, each the columnar plan over its devices' facts and state rows
    (jobs/tick/spark_partitioned.py): the same answers and S_τ as `hypo run` at every tick."""
    from jobs.tick import spark_partitioned
    from reasoning.language.compiler import compile_program

    monkeypatch.setenv("HYPO_SPARK_PARTS", "3")
    text, rows = random_case(seed, n_devices=8, n_times=4)
    text = text.replace("not ", "")  # (negation: no key, see partition_key)
    assert spark_partitioned.key_of(compile_program(text, query="B(X, T)")) is not None
    prog = write_program(tmp_path, text)
    stream = str(tmp_path / "s.jsonl")
    write_jsonl(rows, stream)
    check_lake_equals_run(str(tmp_path / "lake"), prog, stream, "B(X, T)", "spark",
                          what=f"seed {seed}, split in three")


def test_a_program_under_modular_evaluation_runs_in_the_spark_jobs_one_task(spark, tmp_path):
    """Issue 45: a program kept modular (derived literals: only the row engine decides
    them) on `--executor spark` runs the row engine in the one task of the tick's Spark job
    — S_τ is held on the cluster, not on the driver — one Spark job a tick; every tick's
    answers, derived hypotheses included, equal `hypo run`'s."""
    from tests.test_lake_modular import _write_stream
    from tests.test_modular import _branching, _branching_stream

    prog = write_program(tmp_path, _branching(12), "b.tdl")
    stream = _write_stream(str(tmp_path / "s.jsonl"), _branching_stream(12))
    lake = str(tmp_path / "lake")
    api.init(lake, prog)
    assert Lake(lake).program_info["derived"]  # kept modular: refused unfolded
    api.ingest(lake, None, [stream])
    until = until_of(prog, stream)
    got = api.run_range(lake, 0, until - 2, executor="spark")
    assert [s["counts"]["executor"] for s in got] == ["spark"] * (until - 1)
    assert all(s["counts"].get("executor_why") for s in got)
    assert all(s["counts"]["spark_jobs"] == 1 and s["counts"]["spark_tasks"] == 1
               for s in got), [s["counts"] for s in got]
    out = _cli("--lake", lake, "run", "--from", str(until - 1), "--to", str(until),
               "--executor", "spark")
    assert out.count("spark executor") == 2 and out.count("(derived literals)") == 2, out
    ref = reference(prog, stream, until)
    for t in range(until + 1):
        assert lake_lines(lake, t) == ref[t], f"tick {t}"
    assert any('"derived"' in x for t in range(until + 1) for x in lake_lines(lake, t))


# ------------------------------------------------------------------ reliability
def test_backfill_gives_the_same_answers_and_tables(turbine, tmp_path):
    lake = copy_lake(turbine["lake"], str(tmp_path / "lake"))
    L = Lake(lake)
    before = _answers_rows(lake)
    done = L.done()
    s = api.run_tick(lake, 3)  # recomputes S_3 from S_2 (time travel)
    assert s["prev_state_version"] == done[2]["state_version"]
    assert s["answers_digest"] == done[3]["answers_digest"]
    assert s["state_digest"] == done[3]["state_digest"]
    assert lake_lines(lake, 3) == turbine["ref"][3]
    assert _answers_rows(lake) == before  # tick 3's rows replaced, not duplicated
    api.run_range(lake, 6, 8)
    assert _answers_rows(lake) == before
    assert _state_rows(lake, 8) == _state_rows(turbine["lake"], 8)
    assert Lake(lake).done()[8]["state_digest"] == done[8]["state_digest"]
    with pytest.raises(TickOrderError, match="tick 10 cannot run before tick 9"):
        api.run_tick(lake, 10)
    # late data for slice 3: re-running 3 makes tick 4 stale until the range is re-run
    late = tmp_path / "late.jsonl"
    late.write_text('{"tick": 3, "fact": "Hot(wt3, 3)"}\n')
    r = api.ingest(lake, 3, [str(late)])
    assert r["accepted"] == 1 and "already processed" in r["warning"]
    api.run_tick(lake, 3)
    assert api.lake_status(lake)["stale_ticks"] == [4]
    api.run_range(lake, 4, 8)
    assert api.lake_status(lake)["stale_ticks"] == []
    both = tmp_path / "both.jsonl"
    both.write_text(open(STREAM).read() + late.read_text())
    ref = reference(TURBINES, str(both), 8, all_=True)
    for t in range(9):
        assert api_lines(lake, t, "all", MAIN) == ref[t], f"tick {t}"


@pytest.mark.parametrize("phase", ["after_state_commit", "after_answers_commit", "before_done"])
def test_crash_leaves_previous_tick_readable_and_rerun_completes(base, turbine, tmp_path,
                                                                 monkeypatch, phase):
    lake = copy_lake(base, str(tmp_path / "lake"))
    monkeypatch.setenv("HYPO_LAKE_FAULT", f"{phase}@3")
    with pytest.raises(InjectedFault):
        api.run_tick(lake, 3)
    monkeypatch.delenv("HYPO_LAKE_FAULT")
    st = api.lake_status(lake)
    assert st["last_tick"] == 2 and st["incomplete_ticks"] == [3]
    assert api_lines(lake, None, "all", MAIN) == turbine["ref_all"][2]  # readable at tick 2
    with pytest.raises(TickOrderError):
        api.run_tick(lake, 4)
    s = api.run_tick(lake, 3)
    ref_done = Lake(turbine["lake"]).done()[3]
    assert s["state_digest"] == ref_done["state_digest"]
    assert s["answers_digest"] == ref_done["answers_digest"]
    rows = [r for r in _answers_rows(lake) if r[0] == 3]
    assert len(rows) == len(turbine["ref_all"][3])  # no duplicate, no lost row
    assert api_lines(lake, 3, "all", MAIN) == turbine["ref_all"][3]
    assert api.lake_status(lake)["incomplete_ticks"] == []


def test_killed_process_then_rerun(base, turbine, tmp_path):
    """A real crash: the CLI process dies right after the state commit of tick 3."""
    lake = copy_lake(base, str(tmp_path / "lake"))
    env = dict(os.environ, HYPO_LAKE_FAULT="after_state_commit@3", HYPO_LAKE_FAULT_MODE="exit")
    p = subprocess.run([sys.executable, "-m", "hypo_cli", "lake", "--lake", lake, "tick",
                        "3"], env=env, capture_output=True, text=True, timeout=240)
    assert p.returncode == 75, p.stderr
    L = Lake(lake)
    assert 3 not in L.done() and L.table("state").version() > L.done()[2]["state_version"]
    s = api.run_tick(lake, 3)
    assert s["answers_digest"] == Lake(turbine["lake"]).done()[3]["answers_digest"]
    assert api_lines(lake, 3, "all", MAIN) == turbine["ref_all"][3]


def test_concurrent_runs_of_a_tick_cannot_both_commit(base, turbine, tmp_path):
    lake = copy_lake(base, str(tmp_path / "lake"))
    other: dict = {}

    def race(phase: str, tau: int) -> None:
        if phase == "after_compute" and not other:
            other["started"] = True
            other["summary"] = api.run_tick(lake, 3)  # the other run wins the commits

    tickjob.HOOKS.append(race)
    try:
        with pytest.raises(ConcurrentTickError, match="tick 3 is being written by another run"):
            api.run_tick(lake, 3)
    finally:
        tickjob.HOOKS.remove(race)
    L = Lake(lake)
    assert [r["run"] for r in L.ticks_log() if r["tick"] == 3 and r["phase"] == "done"] == \
        [other["summary"]["run"]]
    ticks = Counter(h.get("tick") for h in L.table("state").history())
    assert ticks["3"] == 1  # one state commit for tick 3
    assert api_lines(lake, 3, "all", MAIN) == turbine["ref_all"][3]


def test_bad_input_files_go_to_quarantine(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    lake = str(tmp_path / "lake")
    api.init(lake, TURBINES)
    bad_lines = [
        '{"tick": 2, "fact": "Foo(wt1, 1)"}',  # unknown predicate
        '{"tick": 2, "fact": "Shdn(wt1, 2)"}',  # IDB predicate
        '{"tick": 2, "fact": "Hot(wt1, wt2, 2)"}',  # arity
        '{"tick": 2, "fact": "Hot(wt2, 5)"}',  # after its arrival tick
        '{"tick": 2, "fact": "Hot(wt3, 0)"}',  # late: δ(Hot(wt3, T)) = 1
        '{"tick": 2, "fact": "Hot(wt1, 2)"}',  # duplicate (also in the stream's slice 2)
        '{"tick": 2, "fact": "Hot(wt1, 2)"',  # truncated JSON
        '{"tick": 2, "fact": ["Hot(wt1, 2)"]}',  # wrong type
        '{"tick": 2, "fact": "' + "Hot" * 30000 + '"}',  # over-long line
    ]
    combined = str(tmp_path / "combined.jsonl")  # for `hypo run` on the same input
    with open(STREAM) as fh, open(combined, "w") as out:
        out.write(fh.read() + "\n".join(bad_lines) + "\n")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes("\n".join(bad_lines).encode() + b"\n\x00\x9f\x92garbage\xff\n")
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"PAR1" + os.urandom(200))
    (tmp_path / "bad.csv").write_text("pred,args,time\nHot,wt2,two\nHot,wt2\n")
    api.ingest(lake, None, [STREAM])
    rc, out, err = hypo("lake", "--lake", lake, "ingest", "--tick", "2", str(bad), str(junk),
                        str(tmp_path / "bad.csv"))
    assert rc == 0, err
    assert "6 fact row(s)" in out and "bad_json 1" in out and "unreadable_file 1" in out
    assert os.listdir(os.path.join(lake, "_hypo", "rejected"))  # a copy of the junk file
    # a producer appends a facts file with wrong column types straight into the table
    path = os.path.join(lake, "facts")
    t = pa.table({"pred": ["Hot"], "args": [["wt1"]], "time": ["4"]})
    os.makedirs(os.path.join(path, "tick=4"))
    pq.write_table(t, os.path.join(path, "tick=4", "producer.parquet"))
    delta.commit(delta.open_table(path), "facts",
                 [delta.file_action(path, "tick=4/producer.parquet", {"tick": "4"})],
                 exclusive=False)
    sums = api.run_range(lake, 0, 4)
    c2 = sums[2]["counts"]
    assert c2["rejected"] == 5 and c2["duplicates"] == 1 and c2["accepted"] == 2
    assert sums[4]["counts"]["rejected"] == 1
    st = api.lake_status(lake)
    q = st["quarantine"]["by_reason"]
    for code in ("unknown_predicate", "idb_predicate", "arity", "future_time", "late",
                 "duplicate", "bad_json", "wrong_type", "too_long", "bad_encoding",
                 "unreadable_file", "wrong_schema"):
        assert q.get(code), code
    # every line of the bad files is a fact row or a quarantine row
    n_lines = len(bad_lines) + 1 + 2 + 1  # + garbage line, 2 csv rows, the junk file
    assert st["rows"]["facts"] == 5 + 6 + 1 and st["quarantine"]["by_stage"]["ingest"] == \
        n_lines - 6
    # and the answers are those of `hypo run` on the same lines (which refuses the same)
    ref = reference(TURBINES, combined, 4)
    for t in range(5):
        assert api_lines(lake, t, None, MAIN) == ref[t], f"tick {t}"
    rc, _, err = hypo("run", TURBINES, "--stream", combined, "--until", "4")
    reasons = set(delta.read_arrow(os.path.join(lake, "quarantine"), "quarantine",
                                   columns=["reason"]).column("reason").to_pylist())
    for why in ("unknown predicate Foo (EDB predicates: Hot)",
                "timestamp 5 is after its arrival tick 2", "Hot takes 2 arguments, got 3",
                "Shdn is defined by rules (IDB); only EDB facts may arrive"):
        assert why in err and why in reasons


@pytest.mark.slow
@pytest.mark.spark
def test_the_jvm_incubator_warning_is_not_printed():
    """Issue 14.5: Spark's launcher adds --add-modules=jdk.incubator.vector and the JVM warns
    about it at every start (Airflow logs it as an error); the session filters that one line
    and leaves the rest of the JVM's stderr and Python's own stderr alone."""
    code = ("import sys; from jobs.tick.spark import session; s = session('local[1]'); "
            "print(s.range(3).count()); print('python stderr', file=sys.stderr)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                       timeout=300, env={**os.environ, "PYTHONPATH": root})
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip().endswith("3")
    assert "incubator" not in p.stderr and "python stderr" in p.stderr


@pytest.mark.parametrize("damage", ["nulls", "pages"])
def test_a_damaged_state_on_spark_is_one_line_and_no_worker_traceback(base, tmp_path, damage):
    """An error inside the Spark task — of the tick itself (a state file with nulls where
    its rows need values: LakeDamaged) or of a reader inside a file (its data pages
    overwritten, the footer intact: Polars' error) — is the part's result, raised on the
    driver: `hypo lake tick` says it in one line naming the file, exit code 2 — before, the
    failed task had Spark log the Python worker's traceback above it."""
    from lakehelp import null_state_column

    lake = copy_lake(base, str(tmp_path / "lake"))
    if damage == "nulls":
        null_state_column(lake, 2, "ev")
        want = "hypo lake: error: the state of tick 2 has"
    else:
        f = sorted(glob.glob(os.path.join(lake, "state", "tick=2", "**", "*.parquet"),
                             recursive=True))[0]
        data = bytearray(open(f, "rb").read())
        data[4:len(data) // 3] = b"\xff" * (len(data) // 3 - 4)
        with open(f, "wb") as fh:
            fh.write(data)
        want = "the file's data cannot be decoded"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.run([sys.executable, "-m", "hypo_cli", "lake", "--lake", lake, "tick",
                        "3", "--executor", "spark", "--master", "local[1]"], cwd=root,
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": root})
    assert p.returncode == 2, p.stderr[-2000:]
    assert want in p.stderr, p.stderr[-2000:]
    assert "Traceback" not in p.stderr and "ERROR" not in p.stderr, p.stderr[-3000:]


def test_confidence_with_the_spark_plan_equals_hypo_run(spark, tmp_path):
    """A lake made with --confidence, its last 3 ticks on Spark (the first on the driver):
    every answer's confidence is the one `hypo run --confidence` gives (the other
    executors: tests/test_lake_confidence.py)."""
    from test_lake_confidence import _check_equal, lossy

    delays, rows = turbine_stream(6, 5, max_delay=3, seed=4)
    prog = write_program(tmp_path, turbine_program(delays))
    stream = str(tmp_path / "s.jsonl")
    write_jsonl(lossy(rows, 0.25, 4), stream)
    assert _check_equal(tmp_path, prog, stream, "spark", last=3) > 0


def test_periodic_calendar_with_the_spark_plan_equals_hypo_run(spark, tmp_path):
    """examples/calendar.tdl (metric windows and periodic facts: the time domains as Spark
    SQL, pmod), its last 3 ticks on Spark after the first on the driver."""
    check_lake_equals_run(str(tmp_path / "lake"), "examples/calendar.tdl",
                          "examples/calendar.jsonl", "Alarm(X, T)", "spark", last=3)


def test_negated_unbound_time_with_the_spark_plan_equals_hypo_run(spark, tmp_path):
    """Negated hypotheses on a time variable no fact binds (tests/test_exact.py FLOOR_READ):
    their past instances split off before step 3, and the floors step 3 reads (`lmin`) as
    Spark SQL; its last 2 ticks on Spark (Q(b, 4) waits on the floors then)."""
    from test_exact import FLOOR_READ, FLOOR_STREAM

    prog = write_program(tmp_path, FLOOR_READ)
    rows = [{"tick": t, "fact": str(f)} for t, fs in sorted(FLOOR_STREAM.items()) for f in fs]
    stream = str(tmp_path / "s.jsonl")
    write_jsonl(rows, stream)
    check_lake_equals_run(str(tmp_path / "lake"), prog, stream, "Q(X, T)", "spark", last=2)


# ------------------------------------------------- issue 43.1: the tick's commits by delta-spark
def _commits_of(lake: str, kind: str, tick: int) -> list[dict]:
    return [h for h in delta.history(os.path.join(lake, kind)) if h.get("tick") == str(tick)]


def test_a_spark_tick_is_committed_once_by_delta_spark_and_delta_rs_goes_on(
        base, turbine, tmp_path, monkeypatch):
    """The Spark executor's S_τ and answers are delta-spark transactions: partition tick=τ
    replaced (`replaceWhere`), the tick in `userMetadata`, an idempotent transaction.  A run
    that crashed after its state commit is retried: the retry adopts that commit (Delta
    skips the write) and commits the answers; one commit each.  delta-rs (the local
    executor) then runs the next tick from the state delta-spark wrote, and Spark the one
    after; a late fact makes a re-run commit again (newer inputs)."""
    from deltalake import DeltaTable
    from jobs.table import spark_delta

    monkeypatch.setattr(tickjob, "SPARK_WRITER", "delta-spark")
    lake = copy_lake(base, str(tmp_path / "lake"))
    monkeypatch.setenv("HYPO_LAKE_FAULT", "after_state_commit@3")
    with pytest.raises(InjectedFault):
        api.run_tick(lake, 3, executor="spark")
    monkeypatch.delenv("HYPO_LAKE_FAULT")
    s = api.run_tick(lake, 3, executor="spark")
    assert [a.split("@")[0] for a in s["counts"]["adopted"]] == ["state"]
    (st,), (an,) = _commits_of(lake, "state", 3), _commits_of(lake, "answers", 3)
    for c in (st, an):
        assert c["engineInfo"].startswith("Apache-Spark/")
        assert c["operationParameters"]["predicate"] == "tick = 3"
        assert json.loads(c["userMetadata"])["tick"] == "3"
    assert (st["version"], an["version"]) == (s["state_version"], s["answers_version"])
    app = spark_delta.app_id(3, Lake(lake).program.text_hash)
    txn = spark_delta.txn_version(s["facts_version"], s["prev_state_version"])
    assert DeltaTable(os.path.join(lake, "state")).transaction_version(app) == txn
    assert s["state_digest"] == Lake(turbine["lake"]).done()[3]["state_digest"]
    assert api_lines(lake, 3, "all", MAIN) == turbine["ref_all"][3]
    # the digests the tasks computed are those of the files delta-spark wrote; the tasks'
    # own files are removed once Spark has copied them (the crashed run's answers excepted)
    for kind in ("state", "answers"):
        live = [os.path.join(lake, kind, a["path"]) for a in delta.add_actions(
            DeltaTable(os.path.join(lake, kind)), 3, 3)]
        assert tickjob.digest_files(live, ["json"] if kind == "answers" else
                                    tickjob.STATE_FILE_COLS)[1] == s[f"{kind}_digest"]
        if kind == "state":
            assert sorted(glob.glob(os.path.join(lake, kind, "tick=3", "**", "*.parquet"),
                                    recursive=True)) == sorted(live)
    # the same inputs again: nothing new is committed
    again = api.run_tick(lake, 3, executor="spark")
    assert sorted(again["counts"]["adopted"]) == [f"answers@{an['version']}",
                                                   f"state@{st['version']}"]
    assert len(_commits_of(lake, "state", 3)) == 1
    # delta-rs reads what delta-spark wrote and writes the next tick, then Spark again
    s4 = api.run_tick(lake, 4, executor="local")
    # delta-rs records the same transaction: Spark on the same inputs adopts its commits
    assert api.run_tick(lake, 4, executor="spark")["counts"]["adopted"] == [
        f"state@{s4['state_version']}", f"answers@{s4['answers_version']}"]
    # `verify` knows the adopted commits' files for the adopting run's (they name the run
    # that wrote them): no damage
    from jobs.maintenance.verify import verify

    r = verify(lake)
    assert r["ok"], r["lines"]
    s5 = api.run_tick(lake, 5, executor="spark")
    assert "adopted" not in s5["counts"]
    for t in (4, 5):
        assert api_lines(lake, t, "all", MAIN) == turbine["ref_all"][t], f"tick {t}"
    dt = DeltaTable(os.path.join(lake, "state"))
    assert (dt.protocol().min_reader_version, dt.protocol().min_writer_version) == (1, 2)
    # a late fact of slice 3: newer inputs, a new commit of tick 3 (and only of tick 3)
    def files(t: int) -> list:
        return sorted(a["path"] for a in delta.add_actions(
            DeltaTable(os.path.join(lake, "state")), t, t))

    f4 = files(4)
    late = tmp_path / "late.jsonl"
    late.write_text('{"tick": 3, "fact": "Hot(wt3, 3)"}\n')
    api.ingest(lake, 3, [str(late)])
    s3 = api.run_tick(lake, 3, executor="spark")
    assert "adopted" not in s3["counts"] and len(_commits_of(lake, "state", 3)) == 2
    assert files(4) == f4  # replaceWhere: the other partitions stay as they are
    both = tmp_path / "both.jsonl"
    both.write_text(open(STREAM).read() + late.read_text())
    ref = reference(TURBINES, str(both), 3, all_=True)
    assert api_lines(lake, 3, "all", MAIN) == ref[3]


def test_a_lake_created_before_the_stats_columns_gets_them_at_its_first_delta_spark_tick(
        turbine, tmp_path, monkeypatch):
    """A lake whose state and answers tables lack `delta.dataSkippingStatsColumns` (created
    before it): the first delta-spark tick adds it in one commit of its own (no tick in it),
    the tick's answers are right, and later ticks add nothing more."""
    from deltalake import DeltaTable

    from schemas.lake import table_properties

    monkeypatch.setattr(delta, "table_properties", lambda kind: {})
    lake = str(tmp_path / "old")
    api.init(lake, TURBINES)
    api.ingest(lake, None, [STREAM])
    api.run_range(lake, 0, 1)
    monkeypatch.undo()
    for k in ("state", "answers"):
        assert "delta.dataSkippingStatsColumns" not in \
            DeltaTable(os.path.join(lake, k)).metadata().configuration
    monkeypatch.setattr(tickjob, "SPARK_WRITER", "delta-spark")
    for t in (2, 3):
        api.run_tick(lake, t, executor="spark")
        assert api_lines(lake, t, "all", MAIN) == turbine["ref_all"][t], f"tick {t}"
    for k in ("state", "answers"):
        dt = DeltaTable(os.path.join(lake, k))
        assert dt.metadata().configuration["delta.dataSkippingStatsColumns"] == \
            table_properties(k)["delta.dataSkippingStatsColumns"]
        hist = delta.history(os.path.join(lake, k))
        assert sum(h.get("hypo") == "properties" for h in hist) == 1, k
        assert (dt.protocol().min_reader_version, dt.protocol().min_writer_version) == (1, 2)
