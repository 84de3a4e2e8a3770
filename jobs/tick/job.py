"""The tick job: S_{τ-1} (partition τ-1 of the state table) × D|τ (partition τ of the facts
table) → S_τ and the main query's answers, as one Spark plan with no Python on the rows.

 1. D|τ is read from the facts files of partition τ and validated in Spark SQL
    (jobs/ingest/validate.py: the reasons `hypo run` gives, duplicates against the slice and the
    window W); Great Expectations checks the same slice on the Spark DataFrame.
 2. S_{τ-1} is read from partition τ-1 of the state table (jobs/table/state.py) into the
    tables of the set-at-a-time plan, one per (template, pattern).
 3. Algorithm 1 runs as that plan (reasoning/columnar/) on the Spark backend
    (jobs/tick/spark_plan.py): every step a join, filter or aggregate in the JVM, the driver only
    sequencing the waves of step 3.  The main query's answers are rendered by the same plan
    (reasoning/columnar/render/answers.py) into the answers table's columns.
 4. Spark writes S_τ, the answers and the quarantine rows as Parquet; delta-rs commits them
    (state: replace partition τ; answers and quarantine: replace partition τ), each
    conditional on the version read at the start of the run — or, with
    HYPO_SPARK_WRITER=delta-spark, Spark copies S_τ's and the answers' files into their
    tables with delta-spark's commits (jobs/table/spark_delta.py).  Digests are
    order-independent XORs of 64-bit row hashes of the committed files, the same whichever
    executor wrote them.

Executors (`hypo lake tick --executor`, `HYPO_LAKE_EXECUTOR`): `spark` runs the plan above;
`local` runs the same plan on Polars in the driver (Spark's fixed cost per stage makes a
small tick take seconds there, milliseconds here); `auto` (default) picks `local` while the
tick fits the driver's memory, on a local and on a cluster master (Spark never overtook the
driver where measured: 15× slower at 10⁶ facts on local[2], 31-34× at 10⁴-10⁵ on the
2-worker cluster), `spark` beyond (choose_executor); `row` runs step 3 with the row engine on the
driver (the reference, for comparison).  The tables are the same.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import uuid
from dataclasses import dataclass, field
from typing import Callable, Optional

import pyarrow as pa
import pyarrow.parquet as pq

from reasoning.util.atomic import write_json
from reasoning.columnar.layout import FLOAT, INT, OBJ, STRLIST
from reasoning.language.compiler import CompiledProgram
from schemas.lake import arrow_schema

from jobs.table import current, damage, delta, spark_delta
from jobs.table.adapters import LocalIO, SparkIO
from jobs.ingest.dq import empty_summary
from jobs.errors import (ConcurrentTickError, InjectedFault, LakeDamaged, LakeError,
                         TickOrderError, library_error)
from jobs.table.store import Lake, rerun_advice, rerunnable, stretch_of
from jobs.tick import resources

HOOKS: list[Callable[[str, int], None]] = []  # test hooks: called with (phase, tick)
PHASE_POINTS = ("after_validate", "after_compute", "after_state_commit", "after_answers_commit",
                "after_quarantine_commit", "before_done")
EXECUTORS = ("auto", "spark", "local", "row")
# who commits S_τ and the answers of a tick on the Spark executor (HYPO_SPARK_WRITER):
# "delta-rs" (default): the files the tick wrote, each commit conditional on the versions
# the run read, as the in-process executors do; "delta-spark" (issue 43.1): Spark reads
# those files and writes them again with delta-spark — replaceWhere on the tick and an
# idempotent transaction (jobs/table/spark_delta.py) — at +6 Spark jobs, ~+2 s a small tick
# and ~+3 s at 10⁵ facts (the copy, Delta's snapshot jobs: docs/performance.md)
SPARK_WRITERS = ("delta-spark", "delta-rs")
# how the Spark executor runs a tick (HYPO_SPARK_PLAN): "partitioned" — one Spark job whose
# tasks, split by the program's partition key, each run the columnar plan on Polars
# (jobs/tick/spark_partitioned.py); "relational" — every join, filter and aggregate of the
# plan a DataFrame operation (jobs/tick/spark_plan.py), built again each tick
SPARK_PLANS = ("partitioned", "relational")
SPARK_PLAN = os.environ.get("HYPO_SPARK_PLAN", "partitioned")
SPARK_WRITER = os.environ.get("HYPO_SPARK_WRITER", "delta-rs")
ANSWER_FILE_COLS = [n for n in arrow_schema("answers", with_partitions=False).names]
QUAR_FILE_COLS = [n for n in arrow_schema("quarantine", with_partitions=False).names]
STATE_FILE_COLS = [n for n in arrow_schema("state", with_partitions=False).names]


def format_atom(obj: dict) -> str:
    """The answer as an atom for people (reasoning.semantics.explain.format_atom_answer)."""
    from reasoning.semantics.explain import format_atom_answer

    return format_atom_answer(obj)


@dataclass
class TickContext:
    lake: Lake
    tau: int
    run: str
    cp: CompiledProgram
    executor: str = "auto"
    master: str = ""  # the Spark master a Spark executor would run on (choose_executor)
    used: str = ""
    input_rows: int = 0  # rows of S_{τ-1} and D|τ (their Parquet footers)
    versions: dict = field(default_factory=dict)  # table -> version read at start
    tables: dict = field(default_factory=dict)  # table -> DeltaTable at that version


def fault(phase: str, tau: int) -> None:
    """Fault injection: HYPO_LAKE_FAULT=<phase>[@<tick>] raises InjectedFault there
    (HYPO_LAKE_FAULT_MODE=exit: the process dies with exit code 75 instead)."""
    for h in list(HOOKS):
        h(phase, tau)
    spec = os.environ.get("HYPO_LAKE_FAULT")
    if not spec:
        return
    name, _, at = spec.partition("@")
    if name != phase or (at and int(at) != tau):
        return
    if os.environ.get("HYPO_LAKE_FAULT_MODE") == "exit":
        os._exit(75)
    raise InjectedFault(f"injected fault at {phase} of tick {tau}")


def preflight(lake: Lake, tau: int, done: Optional[dict] = None, log=None,
              needs_state: bool = True) -> None:
    """Refuse a tick whose predecessor has not completed, or whose S_{τ-1} `hypo lake vacuum`
    removed and no run has computed again since (before any Spark work).  log: the ticks
    log if the caller has it; needs_state=False: the tick does not read S_{τ-1} (a quiet
    stretch's replay)."""
    from reasoning.stream.facts import MAX_TIME

    if tau < 0:
        raise TickOrderError(f"tick {tau} is negative")
    if tau >= MAX_TIME:
        raise TickOrderError(f"tick {tau} is not below 2^60 (ticks and times are)")
    if done is None or (needs_state and log is None):
        log = lake.ticks_log() if log is None else log
        done = lake.done(log) if done is None else done
    if needs_state and tau > 0 and tau - 1 in done:
        cut = lake.state_from(log)
        if not rerunnable(tau, cut) and done[tau - 1]["ts"] <= lake.vacuumed_at(log):
            raise TickOrderError(
                f"tick {tau} cannot run now: S_{tau - 1}, which it starts from, was removed by "
                f"`hypo lake vacuum --keep-state` (the lake keeps S_τ from tick {cut} on); "
                f"{rerun_advice(tau, cut)}")
    if tau > 0 and tau - 1 not in done:
        last = lake.last_tick(done)
        q = stretch_of(done, tau - 1)
        if q is not None:
            raise TickOrderError(
                f"tick {tau} cannot run after tick {tau - 1}: ticks {q[0]}..{q[1]} are a quiet "
                f"stretch `hypo lake run` skipped (no facts, nothing to report), whose state "
                f"was only rebuilt at tick {q[1]}; run `hypo lake run --from {q[0]} --to "
                f"{max(tau, q[1] + 1)}`")
        raise TickOrderError(
            f"tick {tau} cannot run before tick {tau - 1} has completed (last completed tick: "
            f"{last}); run `hypo lake run --from {last + 1} --to {tau}`")


def state_layout_ok(lake: Lake, dt=None) -> None:
    """Refuse a state table written by an earlier layout, naming the command that migrates."""
    if "vals" not in delta.table_columns(dt if dt is not None else lake.table("state")):
        raise LakeError(f"the state table of {lake.root} has the layout of an earlier version "
                        f"(hypo-state/1); run `hypo lake migrate --lake {lake.root}` once, then "
                        f"the tick again")


def tables_reach_the_log(lake: Lake, tables: dict, done, tau: int) -> None:
    """Refuse to write when a table ends before a version the ticks log records as another
    tick's (issue 44.5: its last commit file is gone): committing now would reuse that
    version number for this tick and lose the recorded tick's rows for good.  Re-running
    the tick whose commit is missing is the repair `hypo lake verify` advises: allowed."""
    for kind in ("state", "answers", "quarantine", "facts"):
        if kind not in tables:
            continue
        cur = tables[kind].version()
        # facts: the version a tick read — a commit lost below it lost facts, whichever tick
        # runs now (issue 44.11)
        lost = [(t, v) for t, v in done.beyond(f"{kind}_version", cur)
                if t != tau or kind == "facts"]
        if lost:
            t, v = max(lost, key=lambda tv: tv[1])
            what = "read by" if kind == "facts" else "written by"
            raise LakeDamaged(
                f"{kind}: the ticks log records version {v} {what} tick {t}, but the table "
                f"ends at version {cur} (a commit file is missing); tick {tau} was not run; "
                f"{damage.VERIFY_HINT}")


def _prev_state(ctx: TickContext, done: dict, log) -> tuple[int, list[str]]:
    """(state version of S_{τ-1} or -1, the Parquet files of its partition)."""
    tau = ctx.tau
    if tau == 0:
        return -1, []
    preflight(ctx.lake, tau, done, log)
    v = done[tau - 1]["state_version"]
    path = ctx.lake.path("state")
    dt = delta.open_table(path, v)
    hist_tick = _commit_tick(path, v)
    if hist_tick is not None and hist_tick != tau - 1:
        raise LakeError(f"state version {v} is tick {hist_tick}, not {tau - 1}: the ticks log "
                        f"and the state table disagree")
    files = []
    for a in delta.add_actions(dt, tau - 1, tau - 1):
        if a.get("partition.tick") == tau - 1:
            full = os.path.join(path, a["path"])
            broken = damage.data_file_problem(full, a.get("size_bytes"), a.get("num_records"))
            if broken:
                raise delta.damaged_file(path, v, full, broken + f" (S_{tau - 1}, which tick "
                                         f"{tau} starts from)")
            files.append(full)
    if not files:
        raise LakeError(f"state version {v} has no partition tick={tau - 1}")
    return v, files


def _commit_tick(path: str, version: int) -> Optional[int]:
    f = os.path.join(path, "_delta_log", f"{version:020d}.json")
    if not os.path.exists(f):
        return None
    try:
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                obj = json.loads(line)
                if isinstance(obj, dict) and "commitInfo" in obj:
                    t = delta.hypo_keys(obj["commitInfo"]).get("tick")
                    return None if t is None else int(t)
    except (OSError, ValueError):  # damaged: delta-rs (open_table) reports it with its file
        return None
    return None


_FACT_TYPES = {"pred": pa.string(), "args": pa.list_(pa.string()), "time": pa.int64(),
               "source": pa.string(), "line": pa.int64(), "batch": pa.string()}


def _facts_files(ctx: TickContext) -> tuple[list[str], list[dict]]:
    """Files of partition τ of the facts table, and quarantine rows for files whose Parquet
    schema cannot be read as facts (checked from the footers only)."""
    dt = ctx.tables["facts"]
    path = ctx.lake.path("facts")
    good, bad = [], []
    for a in delta.add_actions(dt, ctx.tau, ctx.tau):
        if a.get("partition.tick") != ctx.tau:
            continue
        full = os.path.join(path, a["path"])
        broken = damage.data_file_problem(full, a.get("size_bytes"), a.get("num_records"))
        if broken:  # a file the table refers to: the lake is damaged, not the producer's data
            raise delta.damaged_file(path, dt.version(), full, broken)
        why = None
        try:
            sch = pq.read_schema(full)
            for name in ("pred", "args", "time"):
                if name not in sch.names:
                    why = f"facts file has no `{name}` column"
                    break
            if why is None:
                for name, typ in _FACT_TYPES.items():
                    if name in sch.names:
                        got = sch.field(name).type
                        if (got != typ and not (pa.types.is_list(got) and pa.types.is_list(typ)
                                                and got.value_type == typ.value_type)):
                            why = f"facts file column `{name}` is {got}, expected {typ}"
                            break
        except Exception as e:  # noqa: BLE001 - a damaged file of a producer
            why = f"facts file is not readable Parquet ({type(e).__name__}: {str(e)[:200]})"
        if why:
            bad.append({"reason_code": "wrong_schema", "reason": why, "source": full, "line": 0,
                        "raw": "", "raw_bytes": os.path.getsize(full) if os.path.exists(full)
                        else None, "batch": ctx.run})
        else:
            good.append(full)
    return good, bad


def digest_files(paths: list[str], cols: list[str]) -> tuple[int, str, dict]:
    """(rows, order-independent digest: XOR of the 64-bit hashes of the rows, status counts)
    of Parquet files — computed the same way whichever executor wrote them."""
    import polars as pl

    if not paths:
        return 0, delta.digest_hex(0), {}
    df = pl.read_parquet(paths, columns=cols + (["status"] if "status" not in cols else []))
    if df.height == 0:
        return 0, delta.digest_hex(0), {}
    import numpy as np

    # XOR-reduced in numpy: the same bits as a Python loop over the rows (2.8 · 10⁶ state
    # rows at 10⁶ facts a tick took ~0.5 s that way)
    acc = int(np.bitwise_xor.reduce(df.select(cols).hash_rows(seed=7).to_numpy()))
    st = df.get_column("status").value_counts()
    return df.height, delta.digest_hex(acc), dict(zip(st.get_column("status").to_list(),
                                                      st.get_column("count").to_list()))


# the local executor's peak driver memory per row of S_{τ-1} + D|τ: measured 410 B at 10⁶
# facts a tick (3.8 · 10⁶ rows, 1.55 GB over the process's 0.6 GB), 280 B at 10⁷ (3.8 · 10⁷
# rows, 10.7 GB) with bench/pipeline.py
LOCAL_BYTES_PER_ROW = 400
# the row executor's (a program under modular evaluation): measured 8.2 KB a row of S_{τ-1}
# (9.2 · 10⁴ rows, 0.75 GB over the process's start: bench/windows.py's w3, 1 000 constants)
ROW_BYTES_PER_ROW = 8_000
LOCAL_MEMORY_SHARE = 0.8  # of the memory available when the tick starts
CLUSTER_LOCAL_MAX = 500_000  # rows on the driver where its memory is unknown


def choose_executor(ctx: "TickContext", prev_rows: int, fact_rows: int) -> str:
    """auto: the plan on the driver (Polars) or on Spark.  HYPO_LAKE_LOCAL_MAX, if set: the
    driver up to that many rows of S_{τ-1} + D|τ.  Otherwise the driver while the tick's
    estimated peak (LOCAL_BYTES_PER_ROW) fits LOCAL_MEMORY_SHARE of the memory available,
    Spark beyond — on a local master and on a cluster alike: Spark never overtook the driver
    where measured (31-34× slower at 10⁴-10⁵ facts a tick on the 2-worker cluster, 15× at
    10⁶ on local[2]: docs/performance.md); where the memory is unknown, the driver up to
    CLUSTER_LOCAL_MAX rows.  A program under modular evaluation runs on the row engine,
    whatever was asked (the columnar executor decides derived literals row by row:
    columnar/engine.py row_by_row; `hypo run --engine auto` keeps it too): on the driver
    (`row`), or — `spark`, or `auto` beyond the driver's memory at ROW_BYTES_PER_ROW — in the
    one task of the partitioned plan's Spark job (spark_partitioned.py: no partition key
    with derived literals), so that S_τ is held on the cluster, not the driver; the
    relational plan has no such task: `row`."""
    if ctx.cp.modular:
        if SPARK_PLAN != "partitioned" or ctx.executor in ("row", "local"):
            return "row"
        if ctx.executor == "spark":
            return "spark"
        return "row" if _fits_driver(prev_rows + fact_rows, ROW_BYTES_PER_ROW) else "spark"
    if ctx.executor != "auto":
        return ctx.executor
    return "local" if _fits_driver(prev_rows + fact_rows, LOCAL_BYTES_PER_ROW) else "spark"


def _fits_driver(rows: int, per_row: int) -> bool:
    """auto's test: HYPO_LAKE_LOCAL_MAX rows if set, else the estimated peak within
    LOCAL_MEMORY_SHARE of the memory available, else CLUSTER_LOCAL_MAX rows."""
    env = os.environ.get("HYPO_LAKE_LOCAL_MAX")
    if env:
        return rows <= int(env)
    avail = resources.available_memory()
    if avail is not None:
        return rows * per_row <= LOCAL_MEMORY_SHARE * avail
    return rows <= CLUSTER_LOCAL_MAX


def compute(spark: Callable, ctx: TickContext, prev_files: list[str], facts_files: list[str],
            bad_files: list[dict], tm: "resources.Timer", share=None) -> dict:
    """Steps 1-4 up to (not including) the commits; returns what the commits need.
    share: this is one part of a tick split by the program's key, run in a Spark task
    (jobs/tick/spark_partitioned.py): its rows only, its own files."""
    if ctx.used == "spark" and SPARK_PLAN == "partitioned":
        return _compute_in_tasks(spark, ctx, prev_files, facts_files, bad_files, tm)
    from reasoning.util.gcpause import frozen_survivors
    from reasoning.semantics.patterns import Fact

    from jobs.tick import confidence
    from jobs.table.state import STATE_KINDS, load_state, state_frame
    from jobs.ingest.dq import GX_COLUMNS
    from jobs.ingest.validate import (GX_BESIDE, GX_CHUNK_ROWS, GXBeside, gx_summary,
                                      with_duplicates, with_hints, with_reasons)

    lake, tau, run, cp = ctx.lake, ctx.tau, ctx.run, ctx.cp
    if ctx.used == "spark":
        from jobs.tick.spark_plan import SparkBackend
        from jobs.tick.sparkjobs import JobCount

        from jobs.tick.spark import tick_partitions

        io = SparkIO(SparkBackend(spark()))
        io.B.single = tick_partitions(io.spark, ctx.input_rows) == 1
        io.B.pin_call_site(f"hypo tick {tau}")  # the tick's RDDs, named without stack walks
        jobs = JobCount(io.B.spark)
    else:
        io = LocalIO(resources.usable_cpus(), share=share)
    B = io.B
    prev = io.read(prev_files, "state") if prev_files else None
    # ---- 1. D|τ, validated
    raw = io.read(facts_files, "facts")
    raw = B.select(raw, [B.alias(B.lit(tau, INT), "tick")] +
                   [B.col(c) for c in ("pred", "args", "time", "source", "line", "batch")])
    v = with_reasons(B, raw, cp, tau)
    window = B.filter(prev, (B.col("kind") == B.lit("fact", OBJ)) &
                      (B.col("wexp") > B.lit(tau, INT))) if prev is not None else None
    v = io.checkpoint(with_duplicates(B, v, window, tau))
    del raw, window  # frames are released as soon as they are used: the driver's peak memory
    code = B.col("reason_code")
    cnt = B.rows(B.group_agg(B.select(v, [B.alias(B.coalesce([code, B.lit("", OBJ)]), "_code"),
                                          B.alias(B.lit(1, INT), "_one")]),
                             ["_code"], {"n": B.agg_sum(B.col("_one"))}))
    by = {r["_code"]: int(r["n"]) for r in cnt}
    if by.get("unknown_predicate"):
        v = io.checkpoint(with_hints(B, v, cp))
    n_slice = sum(by.values())
    n_dup = by.get("duplicate", 0)
    n_ign = by.get("ignored", 0)
    n_rej = n_slice - n_dup - n_ign - by.get("", 0)
    beside = None  # GX checks the slice on a thread while the engine runs (the local
    # executor's, or the Spark job of the partitioned plan: GX's job runs beside it)
    if not n_slice:
        dq = empty_summary(cp) if os.environ.get("HYPO_LAKE_DQ_EMPTY") else []
    elif (GX_BESIDE and n_slice <= GX_CHUNK_ROWS and resources.usable_cpus() > 1 and
          (io.name == "local" or (io.name == "spark" and SPARK_PLAN == "partitioned"))):
        # (on one CPU the two threads would only take turns; the thread holds the six checked
        # columns only; above one chunk of rows the checks' pandas copies would add to the
        # engine's peak memory: GX then runs first, as it does on the Spark executor)
        gx_cols = B.select(v, [B.col(c) for c in GX_COLUMNS])
        beside = GXBeside(functools.partial(gx_summary, B, gx_cols, cp, lake.program_id(),
                                            n_slice))
        del gx_cols
    else:
        dq = gx_summary(B, v, cp, lake.program_id(), n_slice)
    try:
        q = _quarantine_frame(B, v) if n_rej + n_dup else None
        tm.lap(f"validate ({io.name}{' + GX' if beside is None else ''})")
        fault("after_validate", tau)
        good = B.filter(v, B.is_null(code))
        del v
        # ---- 2./3. Algorithm 1
        conf_on = confidence.enabled(lake.program_info)
        has_prev = prev is not None
        prev_model = confidence.previous_model(B, prev) if conf_on else None
        answers_df = None
        if ctx.used == "row":  # objs: the main query's answers (every query's with confidence)
            # (S_{τ-1}'s Answers, the tick's and S_τ's rows are many small acyclic objects:
            # the cyclic collector paused, as in Engine.step — 4 000 collections took 3.5 s
            # of a 12 s tick at 9 · 10⁴ state rows)
            with frozen_survivors():
                state_df, objs = _row_executor(B, ctx, prev, good, conf_on)
                if not conf_on:
                    answers_df = _answers_frame(B, objs)
        else:
            from reasoning.columnar import ColumnarEngine
            from reasoning.columnar.render.answers import Renderer

            eng = ColumnarEngine(cp, backend=B)
            if prev is not None:
                load_state(B, eng, prev, tau - 1, cp)
            del prev
            D = {p: B.select(B.filter(good, B.col("pred") == B.lit(p, OBJ)),
                             [B.alias(B.get_item(B.col("args"), i), f"a{i}")
                              for i in range(arity - 1)] + [B.alias(B.col("time"), "t")])
                 for p, arity in sorted(eng.edb.items())}
            if not conf_on:
                del good
            rep = eng.step(D, tau, snapshot=False, clean=True)
            del D
            ren = Renderer(eng)
            frames = rep.frames if share is None else share.own_frames(rep.frames)
            if conf_on:  # every query's answers, for the model; the main ones get confidences
                lines = ren.lines(frames, tau, True, True)
                with frozen_survivors():
                    objs = [json.loads(x) for x in lines]
            else:
                answers_df = ren.lines(frames, tau, False, True, table=True)
            state_df = state_frame(B, eng, cp)
            if share is not None:
                state_df = share.own_state(state_df, share.key.var)
            del eng, rep, ren
        tm.lap(f"engine ({ctx.used})")
        if beside is not None:
            dq = beside.result()
            tm.lap("GX (the wait for it after the engine)")
        if conf_on:  # 002 §8: the arrival model continued from S_{τ-1} (jobs/tick/confidence.py)
            with frozen_survivors():
                facts = [Fact(r["pred"], tuple(r["args"]), int(r["time"])) for r in
                         B.rows(B.select(good, [B.col("pred"), B.col("args"), B.col("time")]))]
                conf = confidence.tick_confidence(cp, prev_model, tau, facts, objs,
                                                  has_prev=has_prev)
                main_q = str(cp.main.atom)
                answers_df = _answers_frame(B, [o for o in objs if o["query"] == main_q], conf)
                model = B.from_rows([confidence.model_row(conf)],
                                    {c: STATE_KINDS[c] for c in STATE_FILE_COLS})
            state_df = B.concat([state_df, model])
            tm.lap("confidence (driver)")
        # ---- 4. the files (uncommitted until the commits)
        tag = f"{tau:08d}-{run}"
        state_dir, ans_dir = f"tick={tau}/v-{tag}", f"tick={tau}/r-{run}"
        q_dir = f"tick={tau}/stage=tick/r-{run}"
        state_frame_ = B.select_cols(state_df, list(STATE_FILE_COLS))
        state_actions = io.write(state_frame_, lake.path("state"), state_dir, "state",
                                 {"tick": str(tau)}, f"state-{tag}")
        tm.lap("write state")
        answer_actions = _write_answers(io, answers_df, lake, tau, ans_dir, tag)
        tm.lap("write answers")
        del state_df, answers_df, state_frame_
        q_actions = []
        if q is not None:
            q_actions = io.write(q, lake.path("quarantine"), q_dir, "quarantine",
                                 {"tick": str(tau), "stage": "tick"}, f"quarantine-{tag}")
        if bad_files:
            qt = pa.Table.from_pylist([{k: r.get(k) for k in QUAR_FILE_COLS} for r in bad_files],
                                      schema=arrow_schema("quarantine", with_partitions=False))
            q_actions.append(delta.write_file(lake.path("quarantine"), "quarantine", qt, q_dir,
                                              {"tick": str(tau), "stage": "tick"},
                                              name=f"files-{tag}.parquet"))
        tm.lap("write quarantine")
        counts = {"facts": n_slice, "rejected": n_rej + len(bad_files), "duplicates": n_dup,
                  "ignored": n_ign, "accepted": n_slice - n_rej - n_dup - n_ign,
                  "quarantined": n_rej + n_dup + len(bad_files), "executor": ctx.used}
        if cp.modular:  # (choose_executor)
            from reasoning.columnar.engine import row_by_row

            counts["executor_why"] = row_by_row(cp)
        out = {"state_actions": state_actions, "answer_actions": answer_actions,
               "quarantine_actions": q_actions, "dq": dq, "counts": counts,
               "jobs": jobs if io.name == "spark" else None}
        out["state_digest"] = _digest_into(counts, "state", [
            os.path.join(lake.path("state"), a.path) for a in state_actions])
        out["answers_digest"] = _digest_into(counts, "answers", [
            os.path.join(lake.path("answers"), a.path) for a in answer_actions])
        tm.lap("digests")
        if io.name == "spark":
            counts["spark_jobs_on_driver"] = B.actions  # the plan's own probes of the data
        return out
    except BaseException:
        if beside is not None:
            beside.close()  # sys.stdout/stderr back; the thread's output stays dropped
        raise
    finally:
        if io.name == "spark":
            io.B.release_call_site()


def _compute_in_tasks(spark: Callable, ctx: TickContext, prev_files: list[str],
                      facts_files: list[str], bad_files: list[dict], tm) -> dict:
    """compute() as the tasks of one Spark job (jobs/tick/spark_partitioned.py)."""
    from jobs.tick.spark_partitioned import compute_in_tasks
    from jobs.tick.sparkjobs import JobCount

    s = spark()
    jobs = JobCount(s)
    out = compute_in_tasks(s, ctx, prev_files, facts_files, bad_files, tm, compute,
                           TickContext)
    out.pop("phases", None)  # (part 0's own phases: spark_partitioned.TASK_PHASES)
    fault("after_validate", ctx.tau)
    out["jobs"] = jobs
    return out


def _write_answers(io, answers_df, lake: Lake, tau: int, ans_dir: str, tag: str) -> list:
    """The answers table's files of one tick (uncommitted add actions; none if no answers)."""
    if answers_df is None:
        return []
    return io.write(_answers_select(io.B, answers_df), lake.path("answers"), ans_dir, "answers",
                    {"tick": str(tau)}, f"answers-{tag}")


def _answers_select(B, answers_df):
    """The rendered answers as the answers table's file columns."""
    ren = {"json": "line", "sort_key": "skey", "answer_key": "akey"}
    have = set(B.columns(answers_df))
    items = [B.alias(B.null(OBJ), "key") if c_ == "key" else
             B.alias(B.null(FLOAT), c_) if c_ == "confidence" and c_ not in have else
             B.alias(B.col(ren.get(c_, c_)), c_) for c_ in ANSWER_FILE_COLS]
    return B.select(answers_df, items)


def _digest_into(counts: dict, kind: str, files: list[str]) -> str:
    """Digest the files of S_τ or of the answers; their row and status counts into counts."""
    if kind == "state":
        counts["state_rows"], dig, _ = digest_files(files, STATE_FILE_COLS)
        return dig
    counts["answers"], dig, st = digest_files(files, ["json"])
    for s_ in ("definite", "hypothetical", "pending"):
        counts[s_] = st.get(s_, 0)
    return dig


def _spark_commit(spark: Callable, ctx: "TickContext", kind: str, actions: list, md: dict,
                  txn: tuple[str, int], counts: dict, what: str) -> int:
    """S_τ or the answers committed by delta-spark (jobs/table/spark_delta.py): the files the
    tick's tasks wrote, read by Spark and written again as partition τ (`replaceWhere`, the
    tick's idempotent transaction); the version that holds them.  The tasks' files, never
    committed, are removed.  A repeated run on the same inputs adopts the commit an earlier
    run made (Delta skipped the write: `counts["adopted"]`)."""
    from schemas.lake import spark_ddl

    tau, path = ctx.tau, ctx.lake.path(kind)
    (app, version) = txn
    s = spark()
    files = [os.path.join(path, a.path) for a in actions]
    ddl = spark_ddl(kind, with_partitions=False)
    df = s.read.schema(ddl).parquet(*files) if files else s.createDataFrame([], ddl)
    spark_delta.write(df, path, kind, tau, {**md, "txn": str(version)}, app, version, what)
    v, by = spark_delta.committed(path, kind, tau, app, version, what)
    if by != ctx.run:  # (its files name that run: `hypo lake verify` reads adopted_from)
        counts.setdefault("adopted", []).append(f"{kind}@{v}")
        counts.setdefault("adopted_from", {})[kind] = by
    for f in files:
        with contextlib.suppress(OSError):
            os.remove(f)
    for d in sorted({os.path.dirname(f) for f in files}, reverse=True):
        with contextlib.suppress(OSError):
            os.rmdir(d)
    return v


def _quarantine_frame(B, v):
    """The slice's rejected and duplicate rows (not `ignored`) as quarantine rows, with the
    fact's text rebuilt from its columns."""
    from reasoning.columnar.render.plan import BARE

    def cfmt(e):
        return B.when(B.str_matches(e, BARE), e, B.concat_str(
            [B.lit('"', OBJ), B.str_replace(B.str_replace(e, "\\", "\\\\"), '"', '\\"'),
             B.lit('"', OBJ)]))

    code = B.col("reason_code")
    raw_txt = B.concat_str([B.col("pred"), B.lit("(", OBJ), B.list_join(B.list_concat(
        B.list_eval(B.coalesce([B.col("args"), B.empty_list()]), cfmt),
        B.typed_list([B.coalesce([B.to_str(B.col("time")), B.lit("?", OBJ)])], OBJ)), ", "),
        B.lit(")", OBJ)])
    return B.select(B.filter(v, B.not_null(code) & (code != B.lit("ignored", OBJ))), [
        B.col("reason_code"), B.col("reason"), B.col("source"), B.col("line"),
        B.alias(B.coalesce([raw_txt, B.lit("", OBJ)]), "raw"),
        B.alias(B.null(INT), "raw_bytes"), B.col("pred"), B.col("args"), B.col("time"),
        B.col("batch")])


def _row_executor(B, ctx: TickContext, prev, good, all_queries: bool = False):
    """Step 3 with the row engine on the driver (the reference): S_{τ-1} and D|τ collected,
    Engine.step; S_τ as a frame with the same columns, and the answer objects of the main
    query (of every query with all_queries), pending included."""
    from reasoning.row.engine import Engine
    from reasoning.semantics.explain import Explainer
    from reasoning.semantics.patterns import Fact
    from reasoning.run.session import answers_at

    from jobs.table.state import (bad_rows, check_meta, damaged_state, rows_to_answered,
                                  rows_to_answers)

    cp, tau = ctx.cp, ctx.tau
    eng = Engine(cp)
    eng.tau = tau - 1
    if prev is not None:
        bad = bad_rows(B, prev)  # (load_state's test)
        if B.height(bad):
            raise damaged_state(tau - 1, B.height(bad), B.values(bad, "kind")[0])
        rows = B.rows(prev)
        check_meta([r["info"] for r in rows if r["kind"] == "meta"], tau - 1, cp)
        answers, window = rows_to_answers(cp, rows)
        for f in window:
            eng.window[(f.pred, f.time)].add(f.args)
            eng.window_expiry[f.time + cp.delays.ground(f.pred, f.args)].add(f)
        for a in answers:
            eng.add(a, tau - 1)
        eng.answered.load(rows_to_answered(rows))
        eng._info.clear()
        eng.fresh_definite = set()
        for a in [a for a in eng.answers if eng.is_definite(a)]:
            lag = eng.retention.get(eng.templates[a.tid].head.pred)
            _, ht = eng.templates[a.tid].head.instantiate(a.b)
            if lag is not None and ht is not None:
                eng.retire[max(ht + lag, tau)].add(a)
        eng.resume_ahead(tau - 1)
    facts = [Fact(r["pred"], tuple(r["args"]), int(r["time"])) for r in B.rows(good)]
    rep = eng.step(facts, tau)
    objs = answers_at(Explainer(eng), tau, rep.snapshot, all_queries, True, False)
    return _row_state(B, eng, cp), objs


def _row_state(B, eng, cp: CompiledProgram):
    """S_τ of the row engine `eng` (answers, window W, remembered definite heads) as a frame
    with the state table's columns."""
    from reasoning.semantics.patterns import Fact

    from jobs.table.state import STATE_KINDS, answer_state_columns, row_layouts

    window = [Fact(p, args, t) for (p, t), s_ in eng.window.items() for args in s_]
    cols = answer_state_columns(row_layouts(eng), list(eng.answers), window, cp,
                                eng.answered.items())
    return B.from_columns(cols, {c: STATE_KINDS[c] for c in STATE_FILE_COLS})


def _answers_frame(B, objs: list[dict], conf=None):
    """The answers table's columns (before renaming: akey, skey, line) of answer objects
    (None if there are none), with their confidences when `conf` (reasoning/insight/confidence.py
    Confidence) is given: the row executor's, and any executor's in a lake made with
    --confidence."""
    from reasoning.semantics.explain import answer_key_text
    from reasoning.insight.confidence import line_with_confidence
    from reasoning.semantics.explain import format_atom_answer

    enc = json.JSONEncoder(ensure_ascii=False).encode  # (json.dumps' output: one encoder,
    srt = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode  # not one an object)
    if not objs:
        return None
    cols: dict[str, list] = {c: [] for c in ANSWER_KINDS}
    (query, status, subst, excl, combos, evid, hypo, deadline, atom, akey, skey, line,
     confidence) = (cols[c] for c in ANSWER_KINDS)
    for o in objs:
        c = None if conf is None else conf.of(o)
        query.append(o["query"])
        status.append(o["status"])
        subst.append(srt(o["substitution"]))
        excl.append(srt(o["excluded"]))
        combos.append(srt(o["excluded_combinations"]) if "excluded_combinations" in o
                      else None)
        evid.append(o["evidence"])
        hypo.append(o["hypotheses"])
        deadline.append(o["deadline"])
        atom.append(format_atom_answer(o))
        akey.append(answer_key_text(o))
        skey.append(srt(o))
        line.append(enc(o) if c is None else line_with_confidence(o, c))
        confidence.append(None if c is None else round(c, 3))
    return B.from_columns(cols, ANSWER_KINDS)


# the answers table's columns before renaming (akey, skey, line), as _answers_frame makes them
ANSWER_KINDS = {"query": OBJ, "status": OBJ, "substitution": OBJ, "excluded": OBJ,
                "excluded_combinations": OBJ, "evidence": STRLIST, "hypotheses": STRLIST,
                "deadline": INT, "atom": OBJ, "akey": OBJ, "skey": OBJ, "line": OBJ,
                "confidence": FLOAT}


def run_tick(lake: Lake, tau: int, spark: Callable, executor: str = "auto",
             master: str = "", log: Optional[list[dict]] = None) -> dict:
    """One tick, committed phase by phase (see module doc); returns the tick's summary.
    spark: returns the Spark session (called only if the tick runs on Spark); master: the
    master it runs on (for `auto`); log: the ticks log if the caller just read it."""
    lake.require()
    if executor not in EXECUTORS:
        raise LakeError(f"unknown executor {executor!r} ({' or '.join(EXECUTORS)})")
    if SPARK_WRITER not in SPARK_WRITERS:
        raise LakeError(f"HYPO_SPARK_WRITER={SPARK_WRITER!r}: use {' or '.join(SPARK_WRITERS)}")
    if SPARK_PLAN not in SPARK_PLANS:
        raise LakeError(f"HYPO_SPARK_PLAN={SPARK_PLAN!r}: use {' or '.join(SPARK_PLANS)}")
    cp = lake.program
    tm = resources.Timer()
    run = uuid.uuid4().hex[:12]
    ctx = TickContext(lake, tau, run, cp, executor, master)
    # versions read at the start: every commit of this run is conditional on them
    for k in ("facts", "state", "answers", "quarantine", "dq"):
        ctx.tables[k] = lake.table(k)
        if SPARK_WRITER == "delta-spark" and k in ("state", "answers") and \
                delta.ensure_properties(ctx.tables[k], k):  # (a lake created before them)
            ctx.tables[k] = lake.table(k)
        ctx.versions[k] = ctx.tables[k].version()
    state_layout_ok(lake, ctx.tables["state"])
    log = lake.ticks_log() if log is None else log
    done = lake.done(log)
    tables_reach_the_log(lake, ctx.tables, done, tau)
    current.readable(lake)
    prev_v, prev_files = _prev_state(ctx, done, log)
    facts_files, bad_files = _facts_files(ctx)
    prev_rows, fact_rows = _rows_of(prev_files), _rows_of(facts_files)
    ctx.input_rows = prev_rows + fact_rows
    ctx.used = choose_executor(ctx, prev_rows, fact_rows)
    lake.log(tau, run, "start", facts_version=ctx.versions["facts"], prev_state_version=prev_v)
    tm.lap("plan (delta logs)")
    try:
        r = compute(spark, ctx, prev_files, facts_files, bad_files, tm)
    except Exception as e:  # a reader failed inside a file: name the file, not the library
        if library_error(e):
            _damaged_input(ctx, prev_v, prev_files, facts_files)
        raise
    fault("after_compute", tau)
    md = {"tick": str(tau), "run": run, "program": cp.text_hash}
    what = f"tick {tau} is being written by another run"
    # the tick's Delta application transaction, whichever library commits (spark_delta.py):
    # a delta-spark run on the same inputs later adopts this run's commits
    txn = (spark_delta.app_id(tau, cp.text_hash),
           spark_delta.txn_version(ctx.versions["facts"], prev_v))
    smd = {**md, "prev_state_version": str(prev_v), "facts_version": str(ctx.versions["facts"])}
    by_spark = ctx.used == "spark" and SPARK_WRITER == "delta-spark"

    def commit(kind: str, meta: dict) -> int:
        meta = {**meta, "digest": r[f"{kind}_digest"]}
        acts = r["answer_actions" if kind == "answers" else "state_actions"]
        if by_spark:
            return _spark_commit(spark, ctx, kind, acts, meta, txn, r["counts"], what)
        return delta.commit(ctx.tables[kind], kind, acts, mode="overwrite",
                            partition_filters=[("tick", "=", str(tau))],
                            metadata={**meta, "txn": str(txn[1])}, what=what, txn=txn)

    try:
        sv = commit("state", smd)
    except ConcurrentTickError as e:
        raise ConcurrentTickError(f"{e}; nothing of this run was committed") from None
    lake.log(tau, run, "state", facts_version=ctx.versions["facts"], prev_state_version=prev_v,
             state_version=sv, state_digest=r["state_digest"])
    fault("after_state_commit", tau)
    av = commit("answers", md)
    if by_spark:
        tm.lap("commits (delta-spark)")
    lake.log(tau, run, "answers", state_version=sv, answers_version=av,
             answers_digest=r["answers_digest"])
    fault("after_answers_commit", tau)
    qv = -1
    qt = lake.table("quarantine")
    if r["quarantine_actions"] or _has_partition(qt, tau, "tick"):
        delta.commit(qt, "quarantine", r["quarantine_actions"], mode="overwrite",
                     partition_filters=[("tick", "=", str(tau)), ("stage", "=", "tick")],
                     metadata=md, exclusive=False, what=what)
        qv = lake.table("quarantine").version()
    fault("after_quarantine_commit", tau)
    _write_dq(lake, tau, run, r["dq"], r["counts"], ctx.tables["dq"])
    fault("before_done", tau)
    tm.lap("commits")
    if r["jobs"] is not None:  # every job of the tick: reading, checks, plan, writes
        r["counts"].update(r["jobs"].counts())
    summary = {"tick": tau, "run": run, "facts_version": ctx.versions["facts"],
               "prev_state_version": prev_v, "state_version": sv, "answers_version": av,
               "quarantine_version": qv, "state_digest": r["state_digest"],
               "answers_digest": r["answers_digest"], "counts": r["counts"]}
    lake.log(tau, run, "done", **{k: v for k, v in summary.items() if k not in ("tick", "run")})
    tm.lap("commits")
    # after `done`: the next tick catches up if this one fails
    current.catch_up(lake, tau, done, {tau: av})
    tm.lap("change feed (current)")
    summary["seconds"] = tm.phases
    summary["driver_peak_gb"] = tm.peaks
    return summary


def run_quiet_stretch(lake: Lake, first: int, last: int, start: int) -> dict:
    """Skip the quiet stretch first..last (reasoning.run.session.quiet_stretch): no tick of it is
    computed; S_last is rebuilt by the row engine from ∅ over the ticks start..last without
    facts and committed as partition tick=last of state (with its main-query answers, all
    pending) in one run, which clears any older partition of the stretch; the ticks log
    gets one `done` row at `last` whose counts carry `quiet_from`.  The caller checked that
    the facts table has no row in first..last and that ticks first-margin..first-1 were
    quiet."""
    from reasoning.row.engine import Engine
    from reasoning.semantics.explain import Explainer
    from reasoning.run.session import answers_at

    lake.require()
    cp = lake.program
    tm = resources.Timer()
    run = uuid.uuid4().hex[:12]
    tables = {k: lake.table(k) for k in ("facts", "state", "answers")}
    versions = {k: t.version() for k, t in tables.items()}
    state_layout_ok(lake, tables["state"])
    done = lake.done()
    preflight(lake, first, done, needs_state=False)  # replayed from ∅
    tables_reach_the_log(lake, tables, done, last)
    current.readable(lake)
    lake.log(last, run, "start", facts_version=versions["facts"], prev_state_version=-1)
    eng = Engine(cp)
    eng.tau = start - 1
    rep = None
    for t in range(start, last + 1):
        rep = eng.step([], t)
    objs = answers_at(Explainer(eng), last, rep.snapshot, False, True, False)
    shown = [o for o in objs if o["status"] != "pending"]
    if shown:  # cannot happen (quiet_margin); refuse rather than commit a wrong stretch
        raise LakeError(f"internal error: the replay of the quiet stretch {first}..{last} "
                        f"ends with {len(shown)} non-pending answer(s); run the ticks one by "
                        f"one (`hypo lake tick`)")
    io = LocalIO(resources.usable_cpus())
    B = io.B
    state_df = _row_state(B, eng, cp)
    tm.lap(f"replay of ticks {start}..{last} (row engine, no facts)")
    tag = f"{last:08d}-{run}"
    state_actions = io.write(state_df, lake.path("state"), f"tick={last}/v-{tag}", "state",
                             {"tick": str(last)}, f"state-{tag}")
    answer_actions = _write_answers(io, _answers_frame(B, objs) if objs else None, lake, last,
                                    f"tick={last}/r-{run}", tag)
    n_state, sdig, _ = digest_files([os.path.join(lake.path("state"), a.path)
                                     for a in state_actions], STATE_FILE_COLS)
    n_ans, adig, st = digest_files([os.path.join(lake.path("answers"), a.path)
                                    for a in answer_actions], ["json"])
    tm.lap("write state and answers")
    md = {"tick": str(last), "run": run, "program": cp.text_hash, "quiet_from": str(first)}
    what = f"tick {last} is being written by another run"
    commits = {}
    for kind, acts in (("state", state_actions), ("answers", answer_actions)):
        old = sorted({int(a["partition.tick"])
                      for a in delta.add_actions(tables[kind], first, last)} | {last})
        try:
            commits[kind] = delta.commit(
                tables[kind], kind, acts, mode="overwrite",
                partition_filters=[("tick", "in", [str(x) for x in old])],
                metadata={**md, "prev_state_version": "-1",
                          "facts_version": str(versions["facts"])}, what=what)
        except ConcurrentTickError as e:
            raise ConcurrentTickError(f"{e}; the quiet stretch {first}..{last} is not "
                                      f"complete (run it again)") from None
    tm.lap("commits")
    counts = {"facts": 0, "rejected": 0, "duplicates": 0, "ignored": 0, "accepted": 0,
              "quarantined": 0, "state_rows": n_state, "answers": n_ans,
              "definite": st.get("definite", 0), "hypothetical": st.get("hypothetical", 0),
              "pending": st.get("pending", 0), "executor": "row", "quiet_from": first,
              "replayed_from": start}
    summary = {"tick": last, "run": run, "facts_version": versions["facts"],
               "prev_state_version": -1, "state_version": commits["state"],
               "answers_version": commits["answers"], "quarantine_version": -1,
               "state_digest": sdig, "answers_digest": adig, "counts": counts}
    lake.log(last, run, "done", **{k: v for k, v in summary.items() if k not in ("tick", "run")})
    current.catch_up(lake, last, done, {last: commits["answers"]})
    tm.lap("change feed (current)")
    summary["seconds"] = tm.phases
    summary["driver_peak_gb"] = tm.peaks
    return summary


def _damaged_input(ctx: TickContext, prev_v: int, prev_files: list[str],
                   facts_files: list[str]) -> None:
    """After a failed compute: raise LakeDamaged naming the first input file whose data does
    not decode (its size and footer were checked before the tick started), if any."""
    for kind, version, files in (("state", prev_v, prev_files),
                                 ("facts", ctx.versions.get("facts"), facts_files)):
        for full in files:
            why = damage.data_file_problem(full, deep=True)
            if why:
                where = (f"S_{ctx.tau - 1}, which tick {ctx.tau} starts from" if kind == "state"
                         else f"slice {ctx.tau}")
                raise delta.damaged_file(ctx.lake.path(kind), version, full,
                                         f"{why} ({where})", damage.VERIFY_DEEP_HINT)


def _rows_of(files: list[str]) -> int:
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def _has_partition(dt, tau: int, stage: str) -> bool:
    return bool(dt.file_uris(file_pruning_predicate=[("tick", "=", str(tau)),
                                                     ("stage", "=", stage)]))


def _write_dq(lake: Lake, tau: int, run: str, summary: list[dict], counts: dict,
              dq=None) -> None:
    """The tick's data-quality record (dq: the table as read at the tick's start; the
    commit is not conditional on its version)."""
    d = os.path.join(lake.meta_dir, "dq")
    os.makedirs(d, exist_ok=True)
    doc = {"tick": tau, "run": run, "success": all(s["success"] for s in summary),
           "rows": counts.get("facts", 0), "rejected": counts.get("rejected", 0),
           "expectations": summary}
    write_json(os.path.join(d, f"tick={tau}.json"), doc, indent=2, sort_keys=True)
    rows = [{"tick": tau, "run": run, **s} for s in summary]
    dq = lake.table("dq") if dq is None else dq
    acts = []
    if rows:
        t = pa.Table.from_pylist(rows, schema=arrow_schema("dq"))
        acts.append(delta.write_file(lake.path("dq"), "dq", t, f"tick={tau}", {"tick": str(tau)},
                                     name=f"dq-{run}.parquet"))
    delta.commit(dq, "dq", acts, mode="overwrite", partition_filters=[("tick", "=", str(tau))],
                 metadata={"tick": str(tau), "run": run}, exclusive=False)
