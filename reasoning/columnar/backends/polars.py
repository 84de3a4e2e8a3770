"""The relational operations the set-at-a-time plan of Algorithm 1 is written in, and their
in-process executor on Polars (Arrow memory, one process).

The plan (reasoning/columnar/steps.py) never touches rows: it composes these operations —
filter, project, join (inner, left, semi, anti, cross), union, distinct, explode, group-by —
over expressions built here (column, literal, case-when, bit tests, least/greatest, string
concatenation, list membership).  jobs/tick/spark_plan.py implements the same interface on Spark
DataFrames, so the same plan runs as Spark joins in the JVM.  Control flow between
operations (the waves of step 3) reads only small results (`values`, `height`).

Why Polars (single operations timed in isolation; bench/engine.py for whole ticks): on
this machine's kind, with one thread, its eager joins and filters on 10⁴–10⁵-row frames
cost 0.1–5 ms with ~0.1 ms fixed overhead per operation (~0.05 ms since each operation's
plan is collected directly, below); DuckDB's per-query overhead was ~2 ms (20×) and
pyarrow's Acero join plus group-by 3–10× slower on the same frames.  Deferring whole chains
of operations into one lazy query per materialisation point (the Spark executor's
discipline) was slower, not faster: 38 instead of ~180 collections a tick, but 38 500
against 60 600 facts/s on the turbines at 10⁴ devices (the lazy optimiser's passes cost
more than the calls they save; 22 000 with its common-subplan elimination on).
"""
from __future__ import annotations

import os
from typing import Any, Iterable, Optional, Sequence

from reasoning.columnar.layout import BOOL, FLOAT, INT, INTLIST, OBJ, STRLIST


class _Polars:
    """The polars module, imported at its first use: a run on the arrays executor may
    never need it, and importing it costs ~0.2 s of `hypo run`'s start."""

    def __getattr__(self, name: str):
        import polars

        globals()["pl"] = polars
        return getattr(polars, name)


pl: Any = _Polars()
_DTYPES_MEMO: dict = {}


def dtypes() -> dict:
    """Each column kind's Polars dtype."""
    if not _DTYPES_MEMO:
        _DTYPES_MEMO.update({OBJ: pl.String, INT: pl.Int64, BOOL: pl.Boolean,
                             STRLIST: pl.List(pl.String), INTLIST: pl.List(pl.Int64),
                             FLOAT: pl.Float64})
    return _DTYPES_MEMO


_ARROW_MEMO: dict = {}


def arrow_types() -> dict:
    """Each column kind's Arrow type (the one Polars reads as dtypes()')."""
    if not _ARROW_MEMO:
        import pyarrow as pa

        _ARROW_MEMO.update({OBJ: pa.large_string(), INT: pa.int64(), BOOL: pa.bool_(),
                            STRLIST: pa.large_list(pa.large_string()),
                            INTLIST: pa.large_list(pa.int64()), FLOAT: pa.float64()})
    return _ARROW_MEMO


class InProcessFrames:
    """What the in-process backends share: their frames know their height exactly (a
    Polars DataFrame, arrays.Frame), and nothing is set up per tick."""

    def is_empty(self, df) -> bool:
        """A hint: True only if the frame is known to be empty (in process, always known)."""
        return df.height == 0

    def exists(self, df) -> bool:
        """Exactly: the frame has a row."""
        return df.height > 0

    def begin_tick(self) -> None:
        pass


class PolarsBackend(InProcessFrames):
    """The in-process executor: eager Polars DataFrames."""

    name = "polars"
    cheap_checks = True  # looking at the data costs microseconds: prune empty work

    def __init__(self, threads: Optional[int] = None):
        if threads is not None:
            os.environ.setdefault("POLARS_MAX_THREADS", str(threads))
        self._lits: dict = {}

    # ------------------------------------------------------------ expressions
    def col(self, name: str):
        return pl.col(name)

    def lit(self, value: Any, kind: Optional[str] = None):
        key = (value, kind, type(value))
        got = self._lits.get(key)
        if got is None:
            got = pl.lit(value) if kind is None else pl.lit(value, dtype=dtypes()[kind])
            if len(self._lits) < 100000:
                self._lits[key] = got
        return got

    def null(self, kind: str):
        return self.lit(None, kind)

    def empty_list(self):
        return self.str_list(())

    def str_list(self, values: Sequence[str]):
        key = ("list", tuple(values))
        got = self._lits.get(key)
        if got is None:
            got = self._lits[key] = pl.lit(list(values), dtype=pl.List(pl.String))
        return got

    def when(self, cond, then, otherwise):
        return pl.when(cond).then(then).otherwise(otherwise)

    def is_null(self, e):
        return e.is_null()

    def not_null(self, e):
        return e.is_not_null()

    def has_bit(self, e, i: int):
        return (e & (1 << i)) != 0

    def set_bit(self, e, i: int):
        return e | (1 << i)

    def bit_or(self, e, mask):
        return e | mask

    def bit_and(self, e, mask):
        return e & mask

    def bit_not(self, e):
        return ~e

    def pmod(self, e, m: int):
        """e modulo m, non-negative for m > 0 (Spark SQL's pmod)."""
        return e.mod(m) if hasattr(e, "mod") else e % m

    def least(self, exprs: list):
        return pl.min_horizontal(exprs) if exprs else pl.lit(None, dtype=pl.Int64)

    def greatest(self, exprs: list):
        return pl.max_horizontal(exprs) if exprs else pl.lit(None, dtype=pl.Int64)

    def coalesce(self, exprs: list):
        return pl.coalesce(exprs)

    def any_of(self, exprs: list):
        return pl.any_horizontal(exprs) if exprs else pl.lit(False)

    def all_of(self, exprs: list):
        return pl.all_horizontal(exprs) if exprs else pl.lit(True)

    def concat_str(self, parts: list):
        return pl.concat_str(parts)

    def to_str(self, e):
        return e.cast(pl.String)

    def str_len(self, e):
        return e.str.len_chars()

    def str_replace(self, e, old: str, new: str):
        return e.str.replace_all(old, new, literal=True)

    def str_matches(self, e, pattern: str):
        return e.str.contains(pattern)

    def json_str(self, e):
        """The JSON string literal of e exactly as Python's json.dumps(ensure_ascii=False)
        writes it (Polars' JSON encoder escapes the same characters the same way)."""
        return (pl.struct(e.alias("v")).struct.json_encode()
                .str.strip_prefix('{"v":').str.strip_suffix("}"))

    def str_starts(self, e, prefix: str):
        return e.str.starts_with(prefix)

    def list_contains(self, lst, item):
        return lst.list.contains(item)

    def list_len(self, lst):
        return lst.list.len()

    def list_concat(self, a, b):
        return pl.concat_list([a, b])

    def list_of(self, items: list):
        return pl.concat_list(items)

    def typed_list(self, items: list, kind: str):
        """A list column of the given element kind (OBJ or INT) from item expressions."""
        if not items:
            return pl.lit([], dtype=pl.List(dtypes()[kind]))
        return pl.concat_list([i.cast(dtypes()[kind]) for i in items])

    def get_item(self, lst, i: int):
        return lst.list.get(i, null_on_oob=True)

    def cast(self, e, kind: str):
        return e.cast(dtypes()[kind])

    def list_norm(self, lst):
        """Drop nulls, deduplicate and sort (the canonical form of `ng` and of E/H)."""
        # one list.eval: Polars' list.sort() on strings costs ~10 µs a row (17× this)
        return lst.list.eval(pl.element().drop_nulls().unique().sort())

    def list_drop_prefix(self, lst, prefix: str):
        return lst.list.eval(pl.element().filter(~pl.element().str.starts_with(prefix)))

    def list_any_prefix(self, lst, prefix: str):
        return lst.list.eval(pl.element().str.starts_with(prefix)).list.any()

    def list_prefix(self, lst, prefix: str):
        """Every element with `prefix` prepended."""
        return lst.list.eval(pl.lit(prefix) + pl.element())

    def list_strip_prefix(self, lst, prefix: str):
        """The elements that start with `prefix`, without it."""
        n = len(prefix)
        return lst.list.eval(pl.element().filter(pl.element().str.starts_with(prefix))
                             .str.slice(n))

    def list_minus(self, a, b):
        return a.list.set_difference(b)

    def list_join(self, lst, sep: str):
        return lst.list.join(sep)

    def list_eval(self, lst, fn):
        """Map every element through fn(element expression)."""
        return lst.list.eval(fn(pl.element()))

    def alias(self, e, name: str):
        return e.alias(name)

    # ------------------------------------------------------------ frames
    def empty(self, schema: dict[str, str]):
        return pl.DataFrame(schema={k: dtypes()[v] for k, v in schema.items()})

    def from_columns(self, cols: dict[str, list], schema: dict[str, str]):
        """A frame of Python lists, through Arrow arrays (3.5× Polars' own conversion of
        list columns: 9 · 10⁴ state rows, 0.26 s instead of 0.92 s); Polars' where Arrow
        refuses a value (an integer past 64 bits: Polars' error then says which)."""
        import pyarrow as pa

        n = _n(cols)
        try:
            t = pa.table({k: pa.array(cols[k] if k in cols else [None] * n,
                                      type=arrow_types()[v]) for k, v in schema.items()})
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return pl.DataFrame({k: cols.get(k, [None] * n) for k in schema},
                                schema={k: dtypes()[v] for k, v in schema.items()})
        return pl.from_arrow(t)

    def from_rows(self, rows: list[dict], schema: dict[str, str]):
        return pl.DataFrame(rows, schema={k: dtypes()[v] for k, v in schema.items()},
                            orient="row") if rows else self.empty(schema)

    def from_arrow(self, table):
        return pl.from_arrow(table)

    def keep_rows(self, df, mask: list):
        """The rows whose entry in mask (a list of booleans, one per row) is true."""
        return df.filter(pl.Series(mask, dtype=pl.Boolean))

    def adopt(self, df):
        """A frame of this backend from a Polars frame (the stream reader's slices)."""
        return df

    def rows(self, df) -> list[dict]:
        return df.to_dicts()

    def height(self, df) -> int:
        return df.height

    def col_max(self, df, col: str):
        """The greatest value of a column (a scalar read by the driver)."""
        return df.get_column(col).max()

    def any_nonempty_list(self, df, col: str) -> bool:
        return df.height > 0 and (df.get_column(col).list.len().max() or 0) > 0

    def columns(self, df) -> list[str]:
        return df.columns

    def values(self, df, col: str) -> list:
        """Distinct values of one column (a small result read by the driver)."""
        return df.get_column(col).unique().to_list()

    def filter(self, df, cond):
        if _fast():
            return _run(df._df.lazy().filter(cond._pyexpr))
        return df.filter(cond)

    def with_columns(self, df, exprs: dict):
        if not exprs:
            return df
        if _fast():
            return _run(df._df.lazy().with_columns([e.alias(k)._pyexpr
                                                    for k, e in exprs.items()]))
        return df.with_columns(**exprs)

    def select(self, df, items: list):
        if _fast():
            return _run(df._df.lazy().select([e._pyexpr for e in items]))
        return df.select(items)

    def select_cols(self, df, cols: list):
        """A projection on column names (no expression: no plan to run)."""
        if df.columns == cols:
            return df
        return _wrap_df(df._df.select(cols)) if _fast() else df[cols]

    def drop(self, df, cols: Iterable[str]):
        drop = set(cols)
        keep = [c for c in df.columns if c not in drop]
        if len(keep) == df.width:
            return df
        return _wrap_df(df._df.select(keep)) if _fast() else df[keep]

    def join(self, left, right, left_on: list, right_on: list, how: str = "inner",
             nulls_equal: bool = False):
        """Equi-join; keys are column names or expressions (left) and column names
        (right)."""
        if not left_on and how == "left" and right.height == 0:
            # zero keys: every left row matches every right row; none, so each left row
            # once with the right columns null (what the keyed left join gives)
            taken = set(left.columns)
            return left.with_columns([
                pl.lit(None, dtype=dt).alias(c if c not in taken else c + "_right")
                for c, dt in right.schema.items()])
        if how == "cross" or (not left_on and how in ("inner", "left")):
            # the cross product (zero keys: the condition is true for every pair)
            return _eager(left.lazy().join(right.lazy(), how="cross"))
        if not left_on:  # zero keys: a semi-join keeps all or nothing of the left frame
            if how == "semi":
                return left if right.height else left.head(0)
            if how == "anti":
                return left.head(0) if right.height else left
            raise ValueError(f"join type {how!r}")
        return _eager(left.lazy().join(right.lazy(), left_on=left_on, right_on=right_on,
                                       how=how, nulls_equal=nulls_equal))

    def concat(self, dfs: list, schema: Optional[dict] = None):
        dfs = [d for d in dfs if d is not None]
        if not dfs:
            return self.empty(schema or {})
        if len(dfs) == 1:
            return dfs[0]
        cols = dfs[0].columns
        dfs = [d if d.columns == cols else self.select_cols(d, cols) for d in dfs]
        try:  # the same dtypes (the usual case): a plain vertical concat, 3× cheaper
            return pl.concat(dfs, how="vertical")
        except (pl.exceptions.SchemaError, pl.exceptions.InvalidOperationError):
            return pl.concat(dfs, how="vertical_relaxed")

    def split_by(self, df, col: str, values: list, cols: Optional[list] = None) -> dict:
        """{v: the rows of df whose column `col` is v, in their order} for v in values
        (cols: only those columns, in that order)."""
        parts = df.partition_by(col, maintain_order=True, as_dict=True)
        empty = df.clear()
        out = {v: parts.get((v,), empty) for v in values}
        return out if cols is None else {v: p.select(cols) for v, p in out.items()}

    def unique(self, df, subset: Optional[list] = None):
        return _eager(df.lazy().unique(subset=subset))

    def sort(self, df, cols: list):
        return df.sort(cols)

    def column_list(self, df, col: str) -> list:
        return df.get_column(col).to_list()

    def explode(self, df, col: str):
        return _eager(df.lazy().explode(col))

    def group_agg(self, df, keys: list, aggs: dict, scalar: bool = False):
        """One row per distinct key with the aggregations.  scalar: every aggregation is a
        sum, max or any (one scalar per group); such a group-by of STREAM_GROUP_ROWS rows or more
        runs on Polars' streaming engine: 1.7-3x faster than the in-memory one from ~3 · 10⁴
        rows (10⁶ rows: 1.24 s -> 0.57 s on two keys, 0.51 s -> 0.15 s on one; slower
        below ~10⁴ and for list aggregations)."""
        lf = df.lazy().group_by(keys).agg(**aggs)
        if scalar and df.height >= STREAM_GROUP_ROWS:
            return lf.collect(engine="streaming")
        return _eager(lf)

    # aggregation expressions for group_agg
    def agg_any(self, e):
        return e.any()

    def agg_list(self, e):
        return e.drop_nulls()

    def agg_distinct(self, e):
        """The distinct non-null values of a group (a list column, in no particular order:
        its users normalise; sorting here tripled the cost of step 3's cover aggregate)."""
        return e.drop_nulls().unique(maintain_order=True)

    def agg_sum(self, e):
        return e.sum()

    def agg_max(self, e):
        return e.max()

    def agg_min(self, e):
        return e.min()

    def with_row_id(self, df, name: str):
        return df.with_row_index(name)

    def materialize(self, df):
        """A point where the executor may cache (Polars frames are always materialized)."""
        return df


STREAM_GROUP_ROWS = 30_000

# An eager Polars operation is its lazy plan collected with the eager flags
# (DataFrame.filter is `self.lazy().filter(…)._collect_eager(…)`); half of its ~100 µs on a
# small frame is Python around the Rust call (argument parsing, the engine object, query
# monitoring).  The backend builds the same plan and collects it directly — the same result,
# 30–60 µs less per operation, ~180 operations a tick (bench/engine.py's turbines at 10⁴
# devices).  _FAST is checked once, at the first operation, against the public API; any
# other Polars version falls back to it.
_FAST: list = []  # [whether the direct collection holds], once probed
_wrap_df: Any = None
_EAGER_FLAGS: Any = None


def _run(ldf):
    """A PyLazyFrame collected as DataFrame's eager methods collect it."""
    return _wrap_df(ldf.with_optimizations(_EAGER_FLAGS).collect("in-memory", None))


def _probe() -> bool:
    """Does _run give what the public API gives, on this Polars?"""
    global _wrap_df, _EAGER_FLAGS
    from polars._utils.wrap import wrap_df

    _wrap_df, _EAGER_FLAGS = wrap_df, pl.QueryOptFlags._eager()._pyoptflags
    df = pl.DataFrame({"a": [3, 1, 2, 1], "b": ["x", "y", None, "y"]})
    e = pl.col("a") > 1
    return (_run(df._df.lazy().filter(e._pyexpr)).equals(df.filter(e))
            and _run(df._df.lazy().with_columns([(pl.col("a") + 1).alias("c")._pyexpr]))
            .equals(df.with_columns(c=pl.col("a") + 1))
            and _run(df._df.lazy().select([pl.col("b")._pyexpr])).equals(df.select("b"))
            and wrap_df(df._df.select(["b", "a"])).equals(df[["b", "a"]]))


def _fast() -> bool:
    """_probe's answer, asked once."""
    if not _FAST:
        try:
            ok = _probe()
        except Exception:  # noqa: BLE001 — another Polars: the public API
            ok = False
        _FAST.append(ok)
    return _FAST[0]


def _eager(lf):
    """A LazyFrame of one operation, collected as the eager API does."""
    return _run(lf._ldf) if _fast() else lf.collect(optimizations=pl.QueryOptFlags._eager())


def _n(cols: dict) -> int:
    for v in cols.values():
        return len(v)
    return 0
