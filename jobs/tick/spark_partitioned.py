"""A tick of Algorithm 1 as one Spark job (issue 42), split by the program's partition key
(reasoning/columnar/partitioning.py): each part runs the columnar plan on Polars over the
facts and state rows of its key values.  The program reaches each Python worker once and is
compiled there once per program and process (`_program`), not rebuilt as ~600 DataFrame
operations a tick.  The job's n tasks each read their share of D|τ and S_{τ-1} from the
Parquet files and run the local executor's whole tick on it (validation, GX, steps 1-3, the
uncommitted files); the driver merges their results and commits — with delta-spark (the
files copied into the tables by Spark: jobs/tick/job.py `_spark_commit`) or delta-rs.

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

# rows a partition should at least hold before a tick is split (a part's plan costs ~50 ms of
# Polars set-up whatever its size); HYPO_SPARK_PARTS forces a count
MIN_ROWS_A_PART = 100_000

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


def _program(h: str, blob: bytes) -> CompiledProgram:
    cp = _PROGRAMS.get(h)
    if cp is None:
        cp = _PROGRAMS[h] = pickle.loads(blob)
    return cp


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


# ------------------------------------------------------------------ the tick as tasks
# The tick's job reads no table through the JVM: its n tasks each read the slice's and
# S_{τ-1}'s Parquet files with Polars, keep their share of the key's values (`Share`), and
# run the local executor's whole tick on it — validation, GX, steps 1-3, the answers, the
# uncommitted files of S_τ, the answers and the quarantine — returning the file actions,
# counts and checks to the driver, which commits.  (Spark's Arrow transfer of table rows to
# a Python worker cost ~10 µs a row, the arrays' nulls most of it: 2 · 10⁵ state rows took
# 3 s, the plan itself 0.2 s.)


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
    got = sorted(job.collect(), key=lambda r: r[0])
    outs = [pickle.loads(r[1]) for r in got]
    for o in outs:
        if "error" in o:  # a part's LakeError, raised as itself on the driver
            _raise_as(*o["error"])
        if "library_error" in o:  # (run_tick then names the damaged input file)
            from jobs.errors import TaskLibraryError

            raise TaskLibraryError(o["library_error"])
    TASK_PHASES.clear()
    TASK_PHASES.update(outs[0].get("phases", {}))
    tm.lap(f"the tick's job ({n} task{'s' if n > 1 else ''}: validation, engine, files)")
    return merge(outs)


def _raise_as(name: str, msg: str) -> None:
    """A task's LakeError (its class's name and text) raised on the driver as its class."""
    from jobs import errors

    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, errors.LakeError)):
        cls = errors.LakeError
    raise cls(msg)


def _task(i: int, spec: dict) -> bytes:
    """One part's tick in a Python worker: the local executor's compute() on its share."""
    try:
        from jobs.table.store import Lake
        from jobs.tick import resources

        os.environ.pop("HYPO_LAKE_FAULT", None)  # (the driver injects the tick's faults)
        cp = _program(spec["h"], spec["blob"])
        # (a program under modular evaluation: the row engine — it has no partition key, so
        # its tick is this one task)
        used = "row" if cp.modular else "local"
        ctx = spec["context"](Lake(spec["lake"]), spec["tau"], spec["run"], cp, used)
        ctx.used, ctx.input_rows = used, spec["rows"]
        share = Share(i, spec["n"], spec["key"]) if spec["key"] is not None else None
        tm = resources.Timer()
        out = spec["compute"](lambda: None, ctx, spec["prev"], spec["facts"],
                              spec["bad"] if i == 0 else [], tm, share=share)
        out["phases"] = dict(tm.phases)
        return pickle.dumps(out)
    except Exception as e:
        from jobs.errors import LakeError, library_error

        # an error of the tick itself (a damaged file, a program mismatch) or a reader's
        # inside a file: the part's result, raised on the driver — a failed task would have
        # Spark log the worker's traceback above hypo's one-line error
        if isinstance(e, LakeError):
            return pickle.dumps({"error": (type(e).__name__, str(e))})
        if library_error(e):
            return pickle.dumps({"library_error": f"{type(e).__module__}."
                                                  f"{type(e).__name__}: {e}"})
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
