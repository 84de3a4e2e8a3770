"""A tick of Algorithm 1 as one Spark job (issue 42), split by the program's partition key
(reasoning/columnar/partitioning.py): each part runs the columnar plan on Polars over the
facts and state rows of its key values.  The program reaches each Python worker once and is
compiled there once per program and process (`_program`), not rebuilt as ~600 DataFrame
operations a tick.  Two forms:

* `compute_in_tasks` (the default, the delta-rs writer): the job's n tasks each read their
  share of D|τ and S_{τ-1} from the Parquet files and run the local executor's whole tick
  on it (validation, GX, steps 1-3, the uncommitted files); the driver merges and commits.
* `run` (with HYPO_SPARK_WRITER=delta-spark, which writes DataFrames): Spark reads the
  tables, routes their rows by the key and each partition runs steps 1-3 (`mapInArrow`);
  S_τ and the answers come back as DataFrames.

A program without a partition key (a template without positive literals, as Example 13's
`OK(X, T-1) :- not Shdn(X, T)`: one answer row collects exclusions of every device) runs in
one part: one task, as the local executor runs it on the driver.
"""
from __future__ import annotations

import os
import pickle
from typing import Optional

from reasoning.columnar.partitioning import PartitionKey, partition_key
from reasoning.language.compiler import CompiledProgram
from schemas.lake import arrow_schema, spark_ddl

# rows a partition should at least hold before a tick is split (a part's plan costs ~50 ms of
# Polars set-up whatever its size); HYPO_SPARK_PARTS forces a count
MIN_ROWS_A_PART = 100_000
_ERR = "HYPO-ERROR"  # marks an error of the plan in a worker, re-raised as itself on the driver

_KEYS: dict[str, Optional[PartitionKey]] = {}
_BLOBS: dict[str, bytes] = {}  # (driver) the program as it travels in the tick's job
_PROGRAMS: dict[str, CompiledProgram] = {}  # (in a Python worker) the programs it has run


def key_of(cp: CompiledProgram) -> Optional[PartitionKey]:
    """The program's partition key, computed once per program (driver side)."""
    if cp.text_hash not in _KEYS:
        from reasoning.semantics.patterns import compile_templates

        _KEYS[cp.text_hash] = partition_key(compile_templates(cp.queries))
    return _KEYS[cp.text_hash]


def blob_of(cp: CompiledProgram) -> bytes:
    """The program pickled for the tasks, once per program (driver side)."""
    if cp.text_hash not in _BLOBS:
        _BLOBS[cp.text_hash] = pickle.dumps(cp)
    return _BLOBS[cp.text_hash]


def parts_for(spark, key: Optional[PartitionKey], rows: int, conf_on: bool) -> int:
    """How many partitions run the tick: 1 without a key (or with confidence, whose model
    reads every answer in order), else one per MIN_ROWS_A_PART input rows up to the
    cluster's cores."""
    forced = os.environ.get("HYPO_SPARK_PARTS")
    if key is None or conf_on:
        return 1
    if forced:
        if not forced.strip().isdigit() or int(forced) < 1:
            from jobs.errors import LakeError

            raise LakeError(f"HYPO_SPARK_PARTS={forced!r}: a whole number of tasks, 1 or more")
        return int(forced)
    return max(1, min(task_slots(spark), rows // MIN_ROWS_A_PART))


def task_slots(spark) -> int:
    """The tasks the session runs at once: N on local[N], else its default parallelism
    (a cluster's: HYPO_SPARK_SHUFFLE_PARTITIONS, docs/spark.md)."""
    import re

    try:
        sc = spark.sparkContext
    except Exception:  # Spark Connect: no SparkContext on the client
        return int(spark.conf.get("spark.sql.shuffle.partitions", "2") or 2)
    m = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\s*\d+)?\])?", sc.master or "")
    if m:
        n = m.group(1)
        return 1 if n is None else (os.cpu_count() or 1) if n == "*" else int(n)
    return int(sc.defaultParallelism)


def _key_expr(key: PartitionKey) -> str:
    """The routing key of a row of the union (a slice fact, a state row), Spark SQL."""
    pos = key.positions()
    pmap = "map(" + ", ".join(f"'{p}', {i}" for p, i in sorted(pos.items())) + ")" \
        if pos else "map()"
    args_key = f"get(`args`, try_element_at({pmap}, `pred`))"
    vars_ = "array(" + ", ".join(str(v) for v in key.var) + ")"
    ans_key = f"get(`vals`, get({vars_}, CAST(`template` AS INT)))"
    return (f"CASE WHEN `_src` = 'slice' OR `kind` IN ('fact', 'answered') THEN {args_key} "
            f"WHEN `kind` = 'answer' THEN {ans_key} END")


OUT_STATE = arrow_schema("state", with_partitions=False)
OUT_ANSWERS = arrow_schema("answers", with_partitions=False)


def out_schema():
    import pyarrow as pa

    fields = [pa.field("_out", pa.string())]
    fields += list(OUT_STATE)
    fields += [pa.field("a_" + f.name, f.type) for f in OUT_ANSWERS]
    fields += [pa.field("_line", pa.string())]
    return pa.schema(fields)


def _cols_ddl(table: str) -> list[tuple[str, str]]:
    """(name, Spark SQL type) of a table's file columns."""
    out = []
    for part in spark_ddl(table, with_partitions=False).split(", `"):
        name, typ = part.lstrip("`").split("` ", 1)
        out.append((name, typ))
    return out


def _out_ddl() -> str:
    items = ["`_out` string"] + [f"`{c}` {t}" for c, t in _cols_ddl("state")]
    items += [f"`a_{c}` {t}" for c, t in _cols_ddl("answers")] + ["`_line` string"]
    return ", ".join(items)


def run(io, cp: CompiledProgram, prev, good, tau: int, meta: Optional[str], conf_on: bool,
        rows: int, answers_select):
    """(state_df without its meta row, answers_df or None, lines or None): the tick's engine
    on Spark.  prev: S_{τ-1}'s rows (a DataFrame) or None; good: the accepted slice."""
    B, spark = io.B, io.spark
    key = key_of(cp)
    n = parts_for(spark, key, rows, conf_on)
    cols = [c.name for c in OUT_STATE]
    sl = good.selectExpr("'slice' AS `_src`", *[
        f"`{c}`" if c in ("pred", "args", "time") else f"CAST(NULL AS {t}) AS `{c}`"
        for c, t in _cols_ddl("state")])
    parts = [sl]
    if prev is not None:
        st = prev.where("`kind` IS NULL OR `kind` <> 'meta'").selectExpr(
            "'state' AS `_src`", *[f"`{c}`" for c in cols])
        parts.append(st)
    # one row that makes a partition's task run on an empty tick (answers born of no fact)
    parts.append(spark.range(1).selectExpr("'tick' AS `_src`", *[
        f"CAST(NULL AS {t}) AS `{c}`" for c, t in _cols_ddl("state")]))
    u = parts[0]
    for p in parts[1:]:
        u = u.unionByName(p)
    if n == 1:
        u = u.coalesce(1)
    else:
        u = u.withColumn("_key", B.F.expr(_key_expr(key))).repartition(n, "_key").drop("_key")
    blob = blob_of(cp)
    h = cp.text_hash
    key_var = key.var if key is not None else ()

    def tick_part(batches):
        yield from _part(batches, h, blob, tau, meta, conf_on, n, key_var, answers_select)

    out = u.mapInArrow(tick_part, _out_ddl())
    out = _computed(out)
    state_df = out.where("`_out` = 'state'").select(*cols)
    # (named as the renderer names them: job.py's _answers_select makes them file columns)
    ren = {"json": "line", "sort_key": "skey", "answer_key": "akey"}
    a_items = [f"`a_{f.name}` AS `{ren.get(f.name, f.name)}`" for f in OUT_ANSWERS]
    answers_df = None if conf_on else out.where("`_out` = 'answers'").selectExpr(*a_items)
    if n > 1:  # one copy of the rows born alike in every part
        state_df = state_df.unionByName(
            out.where("`_out` = 'state_g'").select(*cols).dropDuplicates())
        answers_df = answers_df.unionByName(
            out.where("`_out` = 'answers_g'").selectExpr(*a_items).dropDuplicates())
    lines = None
    if conf_on:
        lines = [r[0] for r in out.where("`_out` = 'line'").select("_line").collect()]
    return state_df, answers_df, lines


def _computed(out):
    """The tick's rows computed once (one job, the plan's errors raised here as themselves)."""
    try:
        return out.localCheckpoint(eager=True)
    except Exception as e:
        _reraise(e)
        raise


def _mark(e: Exception) -> None:
    """In a task: a LakeError becomes an error whose text carries its class and first line
    (what reaches the driver of a failed Spark task is its text)."""
    from jobs.errors import LakeError

    if isinstance(e, LakeError):
        raise RuntimeError(f"{_ERR}:{type(e).__name__}:{str(e).splitlines()[0]}") from None


def _program(h: str, blob: bytes) -> CompiledProgram:
    cp = _PROGRAMS.get(h)
    if cp is None:
        cp = _PROGRAMS[h] = pickle.loads(blob)
    return cp


def _part(batches, h: str, blob: bytes, tau: int, meta: Optional[str], conf_on: bool,
          n: int, key_var: tuple, answers_select):
    """One partition's tick (in a Python worker): its slice facts and state rows in, its
    rows of S_τ, answers (or answer lines, with confidence) out, as Arrow batches."""
    import pyarrow as pa

    try:
        tables = [pa.Table.from_batches([b]) for b in batches]
        yield from _part_tables(tables, _program(h, blob), tau, meta, conf_on, n, key_var,
                                answers_select)
    except Exception as e:  # (the driver re-raises it as its class: _computed)
        _mark(e)
        raise


def _part_tables(tables, cp, tau, meta, conf_on, n, key_var, _answers_select):
    import polars as pl
    import pyarrow as pa

    from reasoning.columnar import ColumnarEngine
    from reasoning.columnar.backends.polars import PolarsBackend
    from reasoning.columnar.render.answers import Renderer
    from reasoning.columnar.layout import OBJ
    from jobs.table.adapters import _polars_schema
    from jobs.table.state import load_state, state_frame

    B = PolarsBackend()
    target = _polars_schema("state")
    if tables:
        df = pl.from_arrow(pa.concat_tables(tables))
    else:
        df = pl.DataFrame(schema={"_src": pl.String, **target})
    src = pl.col("_src")
    eng = ColumnarEngine(cp, backend=B)
    if meta is not None:
        st = df.filter(src == "state").select(list(target)).cast(target)
        st = pl.concat([st, pl.DataFrame([{"kind": "meta", "info": meta}],
                                         schema=target)], how="vertical")
        load_state(B, eng, st, tau - 1, cp)
    good = df.filter(src == "slice").select("pred", "args", "time")
    D = {p: B.select(B.filter(good, B.col("pred") == B.lit(p, OBJ)),
                     [B.alias(B.get_item(B.col("args"), i), f"a{i}") for i in range(arity - 1)]
                     + [B.alias(B.col("time"), "t")])
         for p, arity in sorted(eng.edb.items())}
    del df, good
    rep = eng.step(D, tau, snapshot=False, clean=True)
    schema = out_schema()
    state = state_frame(B, eng, cp).filter(pl.col("kind") != "meta")
    if conf_on:  # (one part: see parts_for)
        yield from _tagged(state, "state", "", schema)
        lines = Renderer(eng).lines(rep.frames, tau, True, True)
        yield from _tagged(pl.DataFrame({"_line": lines}, schema={"_line": pl.String}), "line",
                           "", schema)
        return
    # rows whose key is unbound (answers pending on every device, `B(X, 5)` before any fact
    # of X) are born alike in every part: the driver keeps one copy of each ("…_g")
    split = n > 1
    glob = _unkeyed(state, key_var) if split else pl.lit(False)
    if split:
        _check_global(state.filter(glob))
    yield from _tagged(state.filter(~glob), "state", "", schema)
    yield from _tagged(state.filter(glob), "state_g", "", schema)
    frames = {"": rep.frames} if not split else {
        "": {kp: f for kp, f in rep.frames.items() if key_var[kp[0]] in kp[1]},
        "_g": {kp: f for kp, f in rep.frames.items() if key_var[kp[0]] not in kp[1]}}
    for tag, fr in frames.items():
        a = Renderer(eng).lines(fr, tau, False, True, table=True) if fr else None
        if a is not None:
            yield from _tagged(_answers_select(B, a), "answers" + tag, "a_", schema)


def _unkeyed(st, key_var: tuple):
    """The answer rows of S_τ whose key variable is unbound (not in their pattern)."""
    import polars as pl

    kv = pl.lit(pl.Series(list(key_var), dtype=pl.Int64)).get(
        pl.col("template").clip(0, len(key_var) - 1))
    return (pl.col("kind") == "answer") & ((pl.col("pattern").cast(pl.Int64) //
                                            (pl.lit(2, pl.Int64) ** kv).cast(pl.Int64)) % 2 == 0)


def _check_global(g) -> None:
    """A row with its key unbound must not depend on any part's facts (no exclusions), or
    the copies of the parts would differ — a loud error, never a wrong answer."""
    import polars as pl

    bad = g.filter(pl.col("ng").list.len() > 0)
    if bad.height:
        from jobs.errors import LakeError

        raise LakeError(f"{bad.height} answer row(s) of template {bad['template'][0]} leave "
                        f"the partition key unbound and carry exclusions: run this program "
                        f"with HYPO_SPARK_PARTS=1 and report it")


def _tagged(df, tag: str, prefix: str, schema) -> list:
    """A frame's rows as record batches of the output schema (the other columns null)."""
    import pyarrow as pa

    t = df.to_arrow()
    n = t.num_rows
    if not n:
        return []
    cols = []
    for f in schema:
        if f.name == "_out":
            cols.append(pa.array([tag] * n, pa.string()))
            continue
        name = None
        if tag.startswith("answers") and f.name.startswith(prefix):
            name = f.name[len(prefix):]
        elif tag.startswith("state") and not f.name.startswith("a_") and f.name != "_line":
            name = f.name
        elif tag == "line" and f.name == "_line":
            name = f.name
        if name is not None and name in t.column_names:
            cols.append(t.column(name).cast(f.type))
        else:
            cols.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(cols, schema=schema).to_batches()


# ------------------------------------------------------------------ the tick as tasks
# With the delta-rs writer (the default), the tick's job reads no table through the JVM:
# its n tasks each read the slice's and S_{τ-1}'s Parquet files with Polars, keep their
# share of the key's values (`Share`), and run the local executor's whole tick on it —
# validation, GX, steps 1-3, the answers, the uncommitted files of S_τ, the answers and the
# quarantine — returning the file actions, counts and checks to the driver, which commits.
# (Spark's Arrow transfer of table rows to a Python worker cost ~10 µs a row, the arrays'
# nulls most of it: 2 · 10⁵ state rows took 3 s, the plan itself 0.2 s.)


class Share:
    """Part i of n of a tick split by the program's partition key: which rows of the slice
    and of S_{τ-1} it keeps (a row without its key value: part 0, as are rows of no key)."""

    def __init__(self, i: int, n: int, key: PartitionKey):
        self.i, self.n, self.key = i, n, key

    def _bucket(self, k):
        import polars as pl

        return pl.when(k.is_null()).then(pl.lit(0, pl.UInt64)).otherwise(
            k.hash(seed=42) % self.n)

    def _args_key(self):
        import polars as pl

        pos = self.key.positions()
        idx = pl.col("pred").replace_strict(list(pos), list(pos.values()), default=None,
                                            return_dtype=pl.Int64)
        return pl.col("args").list.get(idx, null_on_oob=True)

    def keep(self, df, kind: str):
        import polars as pl

        if kind == "facts":
            return df.filter(self._bucket(self._args_key()) == self.i)
        if kind != "state":
            return df
        kv = pl.lit(pl.Series(list(self.key.var), dtype=pl.Int64)).get(
            pl.col("template").clip(0, len(self.key.var) - 1))
        k = (pl.when(pl.col("kind") == "answer").then(
                pl.col("vals").list.get(kv, null_on_oob=True))
             .when(pl.col("kind").is_in(["fact", "answered"])).then(self._args_key())
             .otherwise(pl.lit(None, pl.String)))
        return df.filter((pl.col("kind") == "meta") | (self._bucket(k) == self.i))

    def own_state(self, state, key_var: tuple):
        """The rows of S_τ this part writes: its keyed rows; the meta row and the rows born
        alike in every part (key unbound) from part 0 only."""
        import polars as pl

        glob = _unkeyed(state, key_var)
        _check_global(state.filter(glob))
        if self.i == 0:
            return state
        return state.filter(~glob & (pl.col("kind") != "meta"))

    def own_frames(self, frames: dict) -> dict:
        """The frames (template, pattern) whose answers this part renders."""
        if self.i == 0:
            return frames
        return {kp: f for kp, f in frames.items() if self.key.var[kp[0]] in kp[1]}


def compute_in_tasks(spark, ctx, prev_files: list, facts_files: list, bad_files: list,
                     tm, compute, context) -> dict:
    """The tick's compute() (jobs/tick/job.py's, given with its TickContext class: this
    module does not import the job) as one Spark job of n tasks (see above); returns what
    the commits need, the parts' results merged."""
    from jobs.tick import confidence

    cp = ctx.cp
    key = key_of(cp)
    conf_on = confidence.enabled(ctx.lake.program_info)
    n = parts_for(spark, key, ctx.input_rows, conf_on)
    spec = {"lake": ctx.lake.root, "tau": ctx.tau, "run": ctx.run, "h": cp.text_hash,
            "blob": blob_of(cp), "prev": prev_files, "facts": facts_files,
            "bad": bad_files, "n": n, "rows": ctx.input_rows,
            "key": key if n > 1 else None, "compute": compute, "context": context}

    def tasks(batches):
        import pyarrow as pa

        for b in batches:
            for i in b.column(0).to_pylist():
                yield pa.RecordBatch.from_pylist(
                    [{"part": i, "out": _task(int(i), spec)}],
                    schema=pa.schema([("part", pa.int64()), ("out", pa.binary())]))

    job = spark.range(0, n, 1, n).mapInArrow(tasks, "part long, out binary")
    try:
        got = sorted(job.collect(), key=lambda r: r[0])
    except Exception as e:
        _reraise(e)
        raise
    outs = [pickle.loads(r[1]) for r in got]
    TASK_PHASES.clear()
    TASK_PHASES.update(outs[0].get("phases", {}))
    tm.lap(f"the tick's job ({n} task{'s' if n > 1 else ''}: validation, engine, files)")
    return merge(outs)


def _reraise(e: Exception) -> None:
    """A task's LakeError (marked by _ERR in the Spark error's text) raised as its class."""
    from jobs import errors

    text = str(e)
    i = text.find(_ERR + ":")
    if i < 0:
        return
    name, msg = text[i + len(_ERR) + 1:].split(":", 1)
    msg = msg.split("\n", 1)[0].strip()
    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = errors.LakeError
    raise cls(msg) from None


def _task(i: int, spec: dict) -> bytes:
    """One part's tick in a Python worker: the local executor's compute() on its share."""
    try:
        from jobs.table.store import Lake
        from jobs.tick import resources

        os.environ.pop("HYPO_LAKE_FAULT", None)  # (the driver injects the tick's faults)
        cp = _program(spec["h"], spec["blob"])
        ctx = spec["context"](Lake(spec["lake"]), spec["tau"], spec["run"], cp, "local")
        ctx.used, ctx.input_rows = "local", spec["rows"]
        share = Share(i, spec["n"], spec["key"]) if spec["key"] is not None else None
        tm = resources.Timer()
        out = spec["compute"](lambda: None, ctx, spec["prev"], spec["facts"],
                          spec["bad"] if i == 0 else [], tm, share=share)
        out["phases"] = dict(tm.phases)
        return pickle.dumps(out)
    except Exception as e:  # (the driver re-raises it as its class: _reraise)
        _mark(e)
        raise


# where part 0's task of the last tick spent its time (bench/pipeline.py prints it)
TASK_PHASES: dict[str, float] = {}

_SUMMED = ("facts", "rejected", "duplicates", "ignored", "accepted", "quarantined",
           "state_rows", "answers", "definite", "hypothetical", "pending")


def merge(outs: list[dict]) -> dict:
    """The parts' results as one tick's: file actions joined, counts summed, digests XORed
    (order-independent by construction), the data-quality rows summed per expectation."""
    from jobs.table.delta import digest_hex

    if len(outs) == 1:
        out = outs[0]
    else:
        out = dict(outs[0])
        for k in ("state_actions", "answer_actions", "quarantine_actions"):
            out[k] = [a for o in outs for a in o[k]]
        counts = dict(outs[0]["counts"])
        for c in _SUMMED:
            if c in counts:
                counts[c] = sum(o["counts"].get(c, 0) for o in outs)
        out["counts"] = counts
        for d in ("state_digest", "answers_digest"):
            acc = 0
            for o in outs:
                acc ^= int(o[d], 16)
            out[d] = digest_hex(acc)
        out["dq"] = _merge_dq([o["dq"] for o in outs])
    out["counts"] = dict(out["counts"], executor="spark")
    out["jobs"] = None
    return out


def _merge_dq(parts: list[list[dict]]) -> list[dict]:
    """One summary row per expectation over the parts (element and unexpected counts
    summed; a success only if every part's)."""
    acc: dict = {}
    order = []
    for rows in parts:
        for r in rows:
            k = (r.get("expectation"), repr(r.get("kwargs")))
            if k not in acc:
                acc[k] = dict(r)
                order.append(k)
                continue
            got = acc[k]
            for c in ("element_count", "unexpected_count"):
                if c in r:
                    got[c] = (got.get(c) or 0) + (r[c] or 0)
            if "success" in r:
                got["success"] = bool(got.get("success")) and bool(r["success"])
            if "unexpected_percent" in got and got.get("element_count"):
                got["unexpected_percent"] = 100.0 * got["unexpected_count"] / got["element_count"]
    return sorted((acc[k] for k in order), key=lambda s: (s.get("expectation") or "",
                                                           str(s.get("kwargs"))))
