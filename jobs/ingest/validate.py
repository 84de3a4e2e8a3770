"""Validation of a slice D|τ as relational operations (the backend interface of
reasoning/columnar/backends/polars.py: Spark SQL in the JVM, or Polars on the driver — no Python
touches a row): the reason of every refused row — the same text `hypo run` prints
(reasoning.stream.facts.validate), in the same order of checks — and the duplicates.  Great
Expectations then checks the slice on the same frame (its Spark execution engine, or pandas
on the driver) for the tick's data-quality record.

  wrong_type          pred, args and time are required
  rigid_predicate     a rigid predicate's facts belong in the program
  periodic_predicate  a periodic predicate's facts are given in the program (never streamed)
  idb_predicate       only EDB facts may arrive
  ignored             a predicate `#delay` declares and no rule uses (counted; not
                      quarantined: a stream is often shared by several programs)
  unknown_predicate   not a predicate of the program ("did you mean" a close name)
  arity               len(args) + 1 ≠ arity(pred)
  negative_time       time < 0
  future_time         time > τ
  late                τ > time + δ(fact): no longer future-possible (δ as joins, delays.py)
  duplicate           a repeat inside the slice (all but the first by source, line), or a
                      fact still in the window W
"""
from __future__ import annotations

import os
from typing import Any

from reasoning.columnar.delays import COL, DelayPlan
from reasoning.columnar.layout import BOOL, INT, OBJ
from reasoning.language.compiler import CompiledProgram
from reasoning.language.declared import IGNORED, declared_unused
from reasoning.language.errors import did_you_mean
from reasoning.stream.facts import NOT_STREAMED, not_streamed

from jobs.ingest.dq import GX_COLUMNS, _label, expectations

_SUITES: dict[str, Any] = {}
COLS = ["tick", "pred", "args", "time", "source", "line", "batch"]


def with_reasons(B, df, cp: CompiledProgram, tau: int):
    """df (tick, pred, args, time, source, line, batch) with _rid (order of source, line,
    batch), n_args, arity, latest and reason_code / reason (null: accepted)."""
    an = cp.analysis
    edb = dict(an.edb)
    unused = declared_unused(cp)
    ordered = getattr(B, "ordered_row_id", None)  # Spark: without a sort's sampling job
    df = ordered(df, ["source", "line", "batch"], "_rid") if ordered is not None else \
        B.with_row_id(B.sort(df, ["source", "line", "batch"]), "_rid")
    ar = B.from_rows([{"_ap": p, "arity": n} for p, n in sorted(edb.items())]
                     + [{"_ap": p, "arity": n} for p, n in sorted(unused.items())
                        if n is not None],
                     {"_ap": OBJ, "arity": INT})
    df = B.join(df, ar, [B.col("pred")], ["_ap"], how="left")
    df = B.with_columns(df, {"n_args": B.when(B.is_null(B.col("args")), B.null(INT),
                                              B.list_len(B.col("args")) + B.lit(1, INT))})
    deltas = []
    for p, n in sorted(edb.items()):
        sub = B.filter(df, (B.col("pred") == B.lit(p, OBJ)) & (B.col("n_args") == B.lit(n, INT))
                       & B.not_null(B.col("time")))
        sub = B.select(sub, [B.col("_rid")] + [B.alias(B.get_item(B.col("args"), i), f"a{i}")
                                               for i in range(n - 1)])
        plan = DelayPlan(cp.delays, p)
        sub = plan.column_static(B, sub, [(COL, f"a{i}") for i in range(n - 1)], "_delta")
        deltas.append(B.select(sub, [B.alias(B.col("_rid"), "_drid"), B.col("_delta")]))
    if deltas:
        df = B.join(df, B.concat(deltas), [B.col("_rid")], ["_drid"], how="left")
    else:
        df = B.with_columns(df, {"_delta": B.null(INT)})
    df = B.with_columns(df, {"latest": B.col("time") + B.col("_delta")})
    known = ", ".join(sorted(edb)) or "none"
    pred, t, tick = B.col("pred"), B.col("time"), B.col("tick")
    s = B.to_str
    lit = lambda x: B.lit(x, OBJ)  # noqa: E731

    def member(values) -> Any:
        values = sorted(values)
        return B.any_of([pred == lit(v) for v in values]) if values else B.lit(False, BOOL)

    checks = [
        (B.is_null(pred) | B.is_null(B.col("args")) | B.is_null(t), "wrong_type",
         lit("pred, args and time are required")),
        *[(member(preds), f"{kind}_predicate", B.concat_str([pred, lit(NOT_STREAMED[kind])]))
          for kind, preds in not_streamed(an)],
        (member(unused) & (B.is_null(B.col("arity")) | (B.col("n_args") == B.col("arity"))),
         "ignored", lit(IGNORED)),
        (~member(set(edb) | set(unused)), "unknown_predicate",
         B.concat_str([lit("unknown predicate "), pred, lit(f" (EDB predicates: {known})")])),
        (B.col("n_args") != B.col("arity"), "arity",
         B.concat_str([pred, lit(" takes "), s(B.col("arity")), lit(" arguments, got "),
                       s(B.col("n_args"))])),
        (t < B.lit(0, INT), "negative_time", lit("negative timestamp")),
        (t > tick, "future_time",
         B.concat_str([lit("timestamp "), s(t), lit(" is after its arrival tick "), s(tick)])),
        (tick > B.col("latest"), "late",
         B.concat_str([lit("late: arrived at tick "), s(tick), lit(" but δ("), pred,
                       lit("(…)) = "), s(B.col("_delta")), lit(" requires arrival by tick "),
                       s(B.col("latest"))])),
    ]
    code, reason = B.null(OBJ), B.null(OBJ)
    for cond, c, why in reversed(checks):
        hit = B.coalesce([cond, B.lit(False, BOOL)])
        code = B.when(hit, lit(c), code)
        reason = B.when(hit, why, reason)
    df = B.with_columns(df, {"reason_code": code, "reason": reason})
    return B.drop(df, ["_delta", "_drid", "_ap"])


def with_hints(B, df, cp: CompiledProgram):
    """"did you mean" for the unknown predicates of the slice (as `hypo run` says it): the
    few distinct names are looked up on the driver and joined back (called only when the
    slice has unknown predicates)."""
    names = {r["pred"] for r in B.rows(B.unique(B.select(
        B.filter(df, B.col("reason_code") == B.lit("unknown_predicate", OBJ)),
        [B.col("pred")])))}
    known = set(cp.analysis.edb) | set(declared_unused(cp))
    hints = [{"_hp": n, "_hint": did_you_mean(n, known)} for n in sorted(names)
             if n is not None and did_you_mean(n, known)]
    if not hints:
        return df
    h = B.from_rows(hints, {"_hp": OBJ, "_hint": OBJ})
    df = B.join(df, h, [B.col("pred")], ["_hp"], how="left")
    unk = B.coalesce([B.col("reason_code") == B.lit("unknown_predicate", OBJ),
                      B.lit(False, BOOL)]) & B.not_null(B.col("_hint"))
    df = B.with_columns(df, {"reason": B.when(unk, B.concat_str([B.col("reason"),
                                                                  B.col("_hint")]),
                                              B.col("reason"))})
    return B.drop(df, ["_hp", "_hint"])


def with_duplicates(B, df, window, tau: int):
    """Accepted rows that repeat a fact of the slice (all but the first by source, line) or
    a fact still in the window W get reason_code `duplicate` (the engine never sees them)."""
    ok = B.is_null(B.col("reason_code"))
    first = B.group_agg(B.filter(df, ok), ["pred", "args", "time"],
                        {"_first": B.agg_min(B.col("_rid"))})
    first = B.select(first, [B.alias(B.col("pred"), "_fp"), B.alias(B.col("args"), "_fa"),
                             B.alias(B.col("time"), "_ft"), B.col("_first")])
    df = B.join(df, first, [B.col("pred"), B.col("args"), B.col("time")],
                ["_fp", "_fa", "_ft"], how="left")
    in_slice = ok & B.not_null(B.col("_first")) & (B.col("_rid") != B.col("_first"))
    if window is not None:
        wk = B.unique(B.select(window, [B.alias(B.col("pred"), "_wp"),
                                        B.alias(B.col("args"), "_wa"),
                                        B.alias(B.col("time"), "_wt")]))
        wk = B.with_columns(wk, {"_inw": B.lit(True, BOOL)})
        df = B.join(df, wk, [B.col("pred"), B.col("args"), B.col("time")],
                    ["_wp", "_wa", "_wt"], how="left")
        in_w = ok & B.not_null(B.col("_inw"))
    else:
        in_w = B.lit(False, BOOL)
    df = B.with_columns(df, {
        "reason": B.when(in_slice, B.lit(f"duplicate of a fact already in slice {tau}", OBJ),
                         B.when(in_w, B.lit("duplicate: this fact already arrived at an earlier "
                                            "tick", OBJ), B.col("reason"))),
        "reason_code": B.when(in_slice | in_w, B.lit("duplicate", OBJ), B.col("reason_code"))})
    return B.drop(df, ["_fp", "_fa", "_ft", "_first", "_wp", "_wa", "_wt", "_inw"])


def _suite(cp: CompiledProgram, key: str, kind: str):
    k = (key, kind)
    got = _SUITES.get(k)
    if got is not None:
        return got
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import logging

    import great_expectations as gx

    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    ctx = gx.get_context(mode="ephemeral")
    try:
        from great_expectations.data_context.types.base import ProgressBarsConfig

        ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    except Exception:  # noqa: BLE001 - cosmetic only
        pass
    src = ctx.data_sources.add_spark("slice") if kind == "spark" else \
        ctx.data_sources.add_pandas("slice")
    bd = src.add_dataframe_asset("facts").add_batch_definition_whole_dataframe("whole")
    suite = ctx.suites.add(gx.ExpectationSuite(f"slice-{key[:12]}", expectations=expectations(cp)))
    _SUITES[k] = (bd, suite)
    return bd, suite


GX_LOCAL_MAX = int(os.environ.get("HYPO_LAKE_GX_LOCAL_MAX", "10000000"))
GX_CHUNK_ROWS = int(os.environ.get("HYPO_LAKE_GX_CHUNK_ROWS", "2000000"))


def gx_summary(B, df, cp: CompiledProgram, key: str, rows: int = 0) -> list[dict]:
    """The expectation suite of jobs/ingest/dq.py run by Great Expectations on the frame's
    GX_COLUMNS: with pandas on the driver, GX_CHUNK_ROWS rows at a time (GX's pandas engine
    holds several copies of what it checks: ~0.9 GB per 10⁶ rows at once) — on the Spark
    executor the six columns reach the driver as Arrow in one job — or, for a slice of more
    than GX_LOCAL_MAX rows on the Spark executor, by GX's Spark execution engine (~24 jobs
    of its own at 10⁶ rows: the jobs of a tick would grow with the slice)."""
    frame = B.select(df, [B.col(c) for c in GX_COLUMNS])
    if B.name == "spark" and rows > GX_LOCAL_MAX:
        bd, suite = _suite(cp, key, "spark")
        return _summary([_validate(bd, suite, frame)])
    bd, suite = _suite(cp, key, "pandas")
    if B.name == "spark":
        import polars as pl

        frame = pl.from_arrow(frame.toArrow())
    step = max(1, GX_CHUNK_ROWS)
    return _summary([_validate(bd, suite, _int64(frame.slice(i, step).to_pandas()))
                     for i in range(0, max(frame.height, 1), step)])


def _int64(pdf):
    """Integer columns as numpy int64 where they have no null: GX's pandas engine compares
    those vectorised, but calls a Python function per row on the nullable Int64
    (ExpectColumnValuesToBeBetween: ~0.9 s per 10⁶ rows)."""
    for c in ("time", "tick", "n_args", "arity", "latest"):
        col = pdf[c]
        pdf[c] = col.astype("int64") if not col.isna().any() else col.astype("Int64")
    return pdf


def _validate(bd, suite, frame):
    """One GX validation, its console output swallowed: on the main thread by redirecting
    sys.stdout/stderr; on a GXBeside thread by the router GXBeside installed (a redirect there
    would also swallow what the main thread prints meanwhile)."""
    import contextlib
    import io
    import threading

    def run():
        return bd.get_batch(batch_parameters={"dataframe": frame}).validate(
            suite, result_format={"result_format": "BASIC"})

    if threading.get_ident() in _MUTED:
        return run()
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        return run()


_MUTED: set = set()  # idents of GXBeside threads, whose writes to sys.stdout/stderr are dropped


class _Router:
    """sys.stdout/sys.stderr while a GXBeside thread runs: a write from that thread is
    dropped, any other goes to the stream that was in place."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, s):
        import threading

        if threading.get_ident() in _MUTED:
            return len(s)
        return self._stream.write(s)

    def __getattr__(self, name):
        return getattr(self._stream, name)


class GXBeside:
    """gx_summary on a thread while the tick's engine runs on the main one (the local
    executor: the engine's Polars operations release the GIL and leave a core idle part of
    the time, which GX's pandas checks fill).  result() waits for it and returns the summary
    or raises what it raised; close() gives sys.stdout/stderr back without waiting (a tick
    that failed first: the daemon thread may still finish, unrouted — GX prints nothing with
    its progress bars off; the routing is a guard)."""

    def __init__(self, fn):
        import sys
        import threading

        self._out, self._err = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _Router(self._out), _Router(self._err)
        # GX's pandas code holds the GIL for long stretches; the engine's thread needs it
        # for a moment at each Polars operation and, at the default 5 ms switch interval,
        # waited up to that long each time
        self._interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._interval, SWITCH_INTERVAL))
        self._got: list = []
        self._thread = threading.Thread(target=self._run, args=(fn,), name="hypo-gx",
                                        daemon=True)
        self._thread.start()

    def _run(self, fn) -> None:
        import threading

        me = threading.get_ident()
        _MUTED.add(me)
        try:
            self._got.append(("ok", fn()))
        except BaseException as e:  # noqa: BLE001 — raised again by result()
            self._got.append(("error", e))
        finally:
            _MUTED.discard(me)

    def result(self) -> list[dict]:
        self._thread.join()
        self.close()
        kind, value = self._got[0]
        if kind == "error":
            raise value
        return value

    def close(self) -> None:
        import sys

        if self._interval is not None:
            sys.setswitchinterval(self._interval)
            self._interval = None
        if isinstance(sys.stdout, _Router) and sys.stdout._stream is self._out:
            sys.stdout = self._out
        if isinstance(sys.stderr, _Router) and sys.stderr._stream is self._err:
            sys.stderr = self._err


GX_BESIDE = os.environ.get("HYPO_LAKE_GX_BESIDE", "1") != "0"
SWITCH_INTERVAL = float(os.environ.get("HYPO_LAKE_GX_SWITCH", "0.0005"))


def _summary(results: list) -> list[dict]:
    """One summary row per expectation, summed over the chunks validated (an expectation
    without `mostly` succeeds when no row of any chunk is unexpected)."""
    acc: dict = {}
    for res in results:
        for r in res.results:
            typ, kw = _label(r.expectation_config)
            rr = r.result or {}
            got = acc.setdefault((typ, kw), {"expectation": typ, "kwargs": kw,
                                             "element_count": 0, "unexpected_count": 0,
                                             "success": True})
            got["element_count"] += rr.get("element_count", 0) or 0
            got["unexpected_count"] += rr.get("unexpected_count", 0) or 0
            got["success"] = got["success"] and bool(r.success)
    out = list(acc.values())
    return sorted(out, key=lambda s: (s["expectation"], s["kwargs"]))
