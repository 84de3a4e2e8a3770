"""The set-at-a-time plan of Algorithm 1 (reasoning/columnar/) on Spark: the backend interface
of reasoning/columnar/backends/polars.py with every expression written as Spark SQL text and every
frame operation a DataFrame operation over it, so each join, filter, aggregate and list
operation of a tick runs in the JVM — no Python UDF sees a fact or state row.  The driver
only builds the plan and reads small results (the distinct times of a wave of step 3,
whether a template's answers carry nogoods, counts).

Expressions are SQL text (class X, with Python operators) rather than PySpark Column
objects: a Column is a JVM object and every operator on it a round trip to the JVM
(~29 000 per tick of Example 13, 30 s); SQL text crosses once per DataFrame operation.

One partition: a tick of few rows (jobs/tick/spark.py, `tick_partitions`) sets `single`: its
inputs are coalesced to one partition, and so is every join, aggregate and union, so Spark
plans no exchange at all — each job of the tick is one stage of one task, not ~25 stages.

Emptiness: `is_empty` is exact for frames built on the driver and answers "maybe not empty"
otherwise, which the plan treats as "do the work" (an empty input gives an empty output);
where the plan needs the truth it asks `exists`.
"""
from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

import pyarrow as pa

from reasoning.columnar.layout import BOOL, FLOAT, INT, INTLIST, OBJ, STRLIST

_TYPES = {OBJ: "STRING", INT: "BIGINT", BOOL: "BOOLEAN", STRLIST: "ARRAY<STRING>",
          INTLIST: "ARRAY<BIGINT>", FLOAT: "DOUBLE"}
_ARROW = {OBJ: pa.string(), INT: pa.int64(), BOOL: pa.bool_(), STRLIST: pa.list_(pa.string()),
          INTLIST: pa.list_(pa.int64()), FLOAT: pa.float64()}
_DDL = {OBJ: "string", INT: "bigint", BOOL: "boolean", STRLIST: "array<string>",
        INTLIST: "array<bigint>", FLOAT: "double"}


def sql_str(s: str) -> str:
    """A Spark SQL string literal for any text."""
    if all(c.isalnum() or c in " _-.:,()*[]{}/#@+=<>!?|&^%$~" for c in s) and s.isascii():
        return "'" + s + "'"
    return "CAST(X'" + s.encode("utf-8").hex() + "' AS STRING)"


def sql(o: Any) -> str:
    if isinstance(o, X):
        return o.s
    if o is None:
        return "NULL"
    if isinstance(o, bool):
        return "TRUE" if o else "FALSE"
    if isinstance(o, int):
        return f"{o}L"
    if isinstance(o, str):
        return sql_str(o)
    raise TypeError(f"no SQL literal for {o!r}")


class X:
    """A Spark SQL expression (text) with the operators the plan uses."""

    __slots__ = ("s", "name")

    def __init__(self, s: str, name: Optional[str] = None):
        self.s = s
        self.name = name

    def _b(self, op: str, o: Any) -> "X":
        return X(f"({self.s} {op} {sql(o)})")

    def __add__(self, o):
        return self._b("+", o)

    def __sub__(self, o):
        return self._b("-", o)

    def __mul__(self, o):
        return self._b("*", o)

    def __eq__(self, o):  # type: ignore[override]
        return self._b("=", o)

    def __ne__(self, o):  # type: ignore[override]
        return self._b("<>", o)

    def __lt__(self, o):
        return self._b("<", o)

    def __le__(self, o):
        return self._b("<=", o)

    def __gt__(self, o):
        return self._b(">", o)

    def __ge__(self, o):
        return self._b(">=", o)

    def __and__(self, o):
        return self._b("AND", o)

    def __or__(self, o):
        return self._b("OR", o)

    def __invert__(self):
        return X(f"(NOT {self.s})")

    __hash__ = object.__hash__

    def select_item(self) -> str:
        return f"{self.s} AS `{self.name}`" if self.name else self.s


def fn(name: str, *args: Any) -> X:
    return X(f"{name}({', '.join(sql(a) for a in args)})")


class SparkBackend:
    """Executor of the columnar plan as Spark SQL expressions over DataFrames."""

    name = "spark"
    cheap_checks = False  # every probe of the data is a Spark job: avoid the optional ones

    def __init__(self, spark, checkpoint: bool = True):
        from pyspark.sql import functions as F

        self.spark = spark
        self.F = F
        self.checkpoint = checkpoint
        self._sizes: dict = {}
        self._lam = 0
        self.actions = 0
        self.single = False
        self._site = "hypo tick"
        try:  # classic PySpark; a Spark Connect client has no SparkContext here
            self._sc = spark.sparkContext._jsc.sc()
        except Exception:  # noqa: BLE001
            self._sc = None

    def one(self, df):
        """In single-partition mode, the frame as one partition without a shuffle (a
        coalesce): Spark then plans no exchange for any later join, aggregate or sort."""
        return df.coalesce(1) if self.single else df

    def begin_tick(self) -> None:
        """Forget the sizes recorded during the previous tick (and the frames they pin)."""
        self._sizes = {}
        self.pin_call_site()

    def pin_call_site(self, label: Optional[str] = None) -> None:
        """Give the thread's Spark call site a fixed name ("hypo tick"): without one, Spark
        walks the JVM stack for every RDD a checkpoint or an action creates
        (Utils.getCallSite) — 40 % of the driver's work in a small tick.  PySpark's actions
        set and then clear the short form (their jobs keep their Python line as a name), so
        each action here pins it again; `release_call_site` clears both at the tick's end."""
        if label is not None:
            self._site = label
        if self._sc is None:
            return
        try:
            self._sc.setLocalProperty("callSite.short", self._site)
            self._sc.setLocalProperty("callSite.long", self._site)
        except Exception:  # noqa: BLE001 — only slower
            self._sc = None

    def _act(self, action):
        """Run one Spark action (a job) and pin the call site again after it."""
        self.actions += 1
        try:
            return action()
        finally:
            self.pin_call_site()

    def release_call_site(self) -> None:
        if self._sc is not None:
            self._sc.clearCallSite()

    # ------------------------------------------------------------ expressions
    def col(self, name: str) -> X:
        return X(f"`{name}`")

    def lit(self, value: Any, kind: Optional[str] = None) -> X:
        if kind is None or value is None and kind is not None:
            return X(sql(value)) if kind is None else self.null(kind)
        if kind == INT:
            return X(f"{int(value)}L")
        if kind == BOOL:
            return X("TRUE" if value else "FALSE")
        return X(sql(value))

    def null(self, kind: str) -> X:
        return X(f"CAST(NULL AS {_TYPES[kind]})")

    def empty_list(self) -> X:
        return X("CAST(ARRAY() AS ARRAY<STRING>)")

    def str_list(self, values: Sequence[str]) -> X:
        if not values:
            return self.empty_list()
        return X(f"CAST(ARRAY({', '.join(sql_str(v) for v in values)}) AS ARRAY<STRING>)")

    def when(self, cond, then, otherwise) -> X:
        return X(f"(CASE WHEN {sql(cond)} THEN {sql(then)} ELSE {sql(otherwise)} END)")

    def is_null(self, e) -> X:
        return X(f"({sql(e)} IS NULL)")

    def not_null(self, e) -> X:
        return X(f"({sql(e)} IS NOT NULL)")

    def has_bit(self, e, i: int) -> X:
        return X(f"(({sql(e)} & {1 << i}L) <> 0L)")

    def set_bit(self, e, i: int) -> X:
        return X(f"({sql(e)} | {1 << i}L)")

    def bit_or(self, e, mask) -> X:
        return X(f"({sql(e)} | {sql(mask)})")

    def bit_and(self, e, mask) -> X:
        return X(f"({sql(e)} & {sql(mask)})")

    def bit_not(self, e) -> X:
        return X(f"(~ {sql(e)})")

    def pmod(self, e, m: int) -> X:
        """e modulo m, non-negative for m > 0."""
        return fn("pmod", e, m)

    def least(self, exprs: list) -> X:
        if not exprs:
            return self.null(INT)
        return exprs[0] if len(exprs) == 1 else fn("least", *exprs)

    def greatest(self, exprs: list) -> X:
        if not exprs:
            return self.null(INT)
        return exprs[0] if len(exprs) == 1 else fn("greatest", *exprs)

    def coalesce(self, exprs: list) -> X:
        return fn("coalesce", *exprs)

    def any_of(self, exprs: list) -> X:
        if not exprs:
            return X("FALSE")
        return X("(" + " OR ".join(sql(e) for e in exprs) + ")")

    def all_of(self, exprs: list) -> X:
        if not exprs:
            return X("TRUE")
        return X("(" + " AND ".join(sql(e) for e in exprs) + ")")

    def concat_str(self, parts: list) -> X:
        return fn("concat", *parts)

    def to_str(self, e) -> X:
        return X(f"CAST({sql(e)} AS STRING)")

    def str_len(self, e) -> X:
        return fn("char_length", e)

    def str_replace(self, e, old: str, new: str) -> X:
        return fn("replace", e, old, new)

    def str_matches(self, e, pattern: str) -> X:
        if pattern == "[\u0000-\u001f]":
            pattern = "[\\x00-\\x1f]"
        return X(f"({sql(e)} RLIKE {sql_str(pattern)})")

    def str_starts(self, e, prefix: str) -> X:
        return fn("startswith", e, prefix)

    def json_str(self, e) -> X:
        """The JSON string literal of e as Python's json.dumps(ensure_ascii=False) writes it
        (Spark's Jackson writes \\uXXXX of control characters in upper case: lowered)."""
        j = f"to_json(named_struct('v', {sql(e)}))"
        body = f"substring({j}, 6, char_length({j}) - 6)"
        for code in (0x0B, 0x0E, 0x0F, 0x1A, 0x1B, 0x1C, 0x1D, 0x1E, 0x1F):
            up = f"\\u{code:04X}"
            body = f"replace({body}, {sql_str(up)}, {sql_str(up.lower())})"
        return X(body)

    def _lambda(self, body) -> tuple[str, str]:
        self._lam += 1
        v = f"x_{self._lam}"
        return v, sql(body(X(v)))

    def list_contains(self, lst, item) -> X:
        return fn("array_contains", lst, item)

    def list_len(self, lst) -> X:
        return fn("size", lst)

    def list_concat(self, a, b) -> X:
        return fn("concat", a, b)

    def list_of(self, items: list) -> X:
        return fn("array", *items)

    def typed_list(self, items: list, kind: str) -> X:
        if not items:
            return X(f"CAST(ARRAY() AS ARRAY<{_TYPES[kind]}>)")
        return X(f"ARRAY({', '.join(f'CAST({sql(i)} AS {_TYPES[kind]})' for i in items)})")

    def get_item(self, lst, i: int) -> X:
        return X(f"try_element_at({sql(lst)}, {i + 1})")

    def cast(self, e, kind: str) -> X:
        return X(f"CAST({sql(e)} AS {_TYPES[kind]})")

    def list_norm(self, lst) -> X:
        v, b = self._lambda(lambda x: self.not_null(x))
        return X(f"array_sort(array_distinct(filter({sql(lst)}, {v} -> {b})))")

    def list_drop_prefix(self, lst, prefix: str) -> X:
        v, b = self._lambda(lambda x: ~fn("startswith", x, prefix))
        return X(f"filter({sql(lst)}, {v} -> {b})")

    def list_any_prefix(self, lst, prefix: str) -> X:
        v, b = self._lambda(lambda x: fn("startswith", x, prefix))
        return X(f"exists({sql(lst)}, {v} -> {b})")

    def list_strip_prefix(self, lst, prefix: str) -> X:
        n = len(prefix)
        v, b = self._lambda(lambda x: fn("startswith", x, prefix))
        w, c = self._lambda(lambda x: X(f"substring({sql(x)}, {n + 1})"))
        return X(f"transform(filter({sql(lst)}, {v} -> {b}), {w} -> {c})")

    def list_prefix(self, lst, prefix: str) -> X:
        v, b = self._lambda(lambda x: fn("concat", prefix, x))
        return X(f"transform({sql(lst)}, {v} -> {b})")

    def list_minus(self, a, b) -> X:
        return fn("array_except", a, b)

    def list_join(self, lst, sep: str) -> X:
        return fn("array_join", lst, sep)

    def list_eval(self, lst, f) -> X:
        v, b = self._lambda(f)
        return X(f"transform({sql(lst)}, {v} -> {b})")

    def alias(self, e, name: str) -> X:
        return X(sql(e), name)

    # ------------------------------------------------------------ frames
    def _ddl(self, schema: dict[str, str]) -> str:
        return ", ".join(f"`{k}` {_DDL[v]}" for k, v in schema.items())

    def _known(self, df, n: int):
        self._sizes[id(df)] = (df, n)
        return df

    def _items(self, items: list) -> list[str]:
        out = []
        for it in items:
            if isinstance(it, str):
                out.append(f"`{it}`")
            elif it.name is None and it.s.startswith("`") and it.s.endswith("`"):
                out.append(it.s)
            else:
                out.append(it.select_item())
        return out

    def _local(self, cols: dict[str, list], schema: dict[str, str], n: int):
        """A frame of the driver's values, sent to the JVM as Arrow: built by the JVM alone
        (createDataFrame of Python rows would make every task that reads it start a Python
        worker to unpickle them, ~0.4 s a job)."""
        table = pa.table({k: pa.array(cols.get(k, [None] * n), type=_ARROW[v])
                          for k, v in schema.items()})
        df = self.from_arrow(table, self._ddl(schema))
        if n and self.single and self._sc is not None:  # (classic Spark only)
            # as an RDD's rows: a LocalRelation's estimate is its true size, and the product of
            # such estimates over a few joins exceeds spark.sql.maxSinglePartitionBytes, so
            # Spark would shuffle one partition into one again (an RDD's is 1 byte here)
            from pyspark.sql.classic.dataframe import DataFrame

            j = df._jdf
            df = DataFrame(self.spark._jsparkSession.createDataFrame(j.javaRDD(), j.schema()),
                           self.spark)
        return self._known(self.one(df), n)

    def empty(self, schema: dict[str, str]):
        return self._local({}, schema, 0)

    def from_arrow(self, table: "pa.Table", ddl: str):
        """An Arrow table of the driver's as a frame.  A Spark Connect client sends local
        rows as Arrow anyway (and cannot take an empty Arrow table: no schema to infer), so
        there it is given as rows with the schema."""
        if self._sc is None:
            rows = list(zip(*(c.to_pylist() for c in table.columns)))
            return self.spark.createDataFrame(rows, ddl)
        return self.spark.createDataFrame(table)

    def adopt(self, df):
        """The slice frames the tick job hands over are Spark DataFrames already."""
        return df

    def from_columns(self, cols: dict[str, list], schema: dict[str, str]):
        n = len(next(iter(cols.values()))) if cols else 0
        return self._local(cols, schema, n)

    def from_rows(self, rows: list[dict], schema: dict[str, str]):
        return self._local({k: [r.get(k) for r in rows] for k in schema}, schema, len(rows))

    def rows(self, df) -> list[dict]:
        if self.is_empty(df):
            return []
        return [r.asDict(recursive=True) for r in self._act(df.collect)]

    def rows_many(self, dfs: list) -> list[list[dict]]:
        """rows() of each frame, read in one job: each frame's rows as JSON text (nulls
        kept) tagged with its position, the tagged frames unioned and collected once."""
        import json

        out: list[list[dict]] = [[] for _ in dfs]
        tagged = [df.selectExpr(f"{i} AS _q", "to_json(struct(*), map('ignoreNullFields', "
                                "'false')) AS _j")
                  for i, df in enumerate(dfs) if not self.is_empty(df)]
        if not tagged:
            return out
        u = tagged[0]
        for t in tagged[1:]:
            u = u.union(t)
        for q, j in self._act(u.collect):
            out[q].append(json.loads(j))
        return out

    def height(self, df) -> int:
        got = self._sizes.get(id(df))
        if got is not None and got[0] is df:
            return got[1]
        n = self._act(df.count)
        self._sizes[id(df)] = (df, n)
        return n

    def is_empty(self, df) -> bool:
        got = self._sizes.get(id(df))
        if got is not None and got[0] is df:
            return got[1] == 0
        return False  # unknown: maybe not empty (see the module doc)

    def exists(self, df) -> bool:
        got = self._sizes.get(id(df))
        if got is not None and got[0] is df:
            return got[1] > 0
        return not self._act(df.isEmpty)

    def col_max(self, df, col: str):
        if self.is_empty(df):
            return None
        return self._act(df.selectExpr(f"max(`{col}`)").collect)[0][0]

    def any_nonempty_list(self, df, col: str) -> bool:
        if self.is_empty(df):
            return False
        return not self._act(df.where(f"size(`{col}`) > 0").isEmpty)

    def columns(self, df) -> list[str]:
        return df.columns

    def values(self, df, col: str) -> list:
        if self.is_empty(df):
            return []
        return [r[0] for r in self._act(df.select(col).distinct().collect)]

    def filter(self, df, cond):
        return df.where(sql(cond))

    def with_columns(self, df, exprs: dict):
        if not exprs:
            return df
        F = self.F
        return df.withColumns({k: F.expr(sql(v)) for k, v in exprs.items()})

    def select(self, df, items: list):
        return df.selectExpr(*self._items(items))

    def select_cols(self, df, cols: list):
        return self.select(df, list(cols))

    def drop(self, df, cols: Iterable[str]):
        # (a name the frame lacks is ignored by Spark: no schema asked for — on Spark
        # Connect each schema is a round trip to the server)
        cols = list(cols)
        return df.drop(*cols) if cols else df

    def join(self, left, right, left_on: list, right_on: list, how: str = "inner",
             nulls_equal: bool = False):
        F = self.F
        kind = {"inner": "inner", "left": "left", "semi": "left_semi", "anti": "left_anti"}
        if how == "cross" or (not left_on and how == "inner"):
            return self.one(left.crossJoin(right))
        if not left_on:
            if how == "left":  # zero keys: the condition is true for every pair (each left
                # row with every right row, or once with the right columns null if none)
                return self.one(left.join(right, on=F.lit(True), how="left"))
            if how == "semi":  # all or nothing of the left frame
                return left if self.exists(right) else left.limit(0)
            if how == "anti":
                return left.limit(0) if self.exists(right) else left
            raise ValueError(f"join type {how!r}")
        if all(isinstance(x, str) for x in left_on) and list(left_on) == list(right_on):
            return self.one(left.join(right, on=list(left_on), how=kind[how]))
        lt, rt = left.alias("_l"), right.alias("_r")
        conds = []
        for le, r in zip(left_on, right_on):
            ltxt = f"_l.`{le}`" if isinstance(le, str) else sql(le)
            conds.append(f"({ltxt} = _r.`{r}`)")
        return self.one(lt.join(rt, on=F.expr(" AND ".join(conds)), how=kind[how]))

    def concat(self, dfs: list, schema: Optional[dict] = None):
        dfs = [d for d in dfs if d is not None and not self.is_empty(d)]
        if not dfs:
            return self.empty(schema or {})
        out = dfs[0]
        for d in dfs[1:]:
            out = out.unionByName(d)
        return self.one(out) if len(dfs) > 1 else out

    def unique(self, df, subset: Optional[list] = None):
        return self.one(df.dropDuplicates(subset) if subset else df.dropDuplicates())

    def sort(self, df, cols: list):
        return df.orderBy(*cols)

    def column_list(self, df, col: str) -> list:
        return [r[0] for r in self._act(df.select(col).collect)]

    def explode(self, df, col: str):
        return df.withColumn(col, self.F.expr(f"explode(`{col}`)"))

    def group_agg(self, df, keys: list, aggs: dict, scalar: bool = False):
        F = self.F
        return self.one(df.groupBy(*keys).agg(*[F.expr(f"{sql(e)} AS `{n}`")
                                                for n, e in aggs.items()]))

    def agg_any(self, e) -> X:
        return fn("bool_or", e)

    def agg_list(self, e) -> X:
        return fn("collect_list", e)

    def agg_distinct(self, e) -> X:
        return fn("collect_set", e)

    def agg_sum(self, e) -> X:
        return fn("sum", e)

    def agg_max(self, e) -> X:
        return fn("max", e)

    def agg_min(self, e) -> X:
        return fn("min", e)

    def with_row_id(self, df, name: str):
        # the id must not change between the plan's uses of the frame: computed once
        return self.one(df.withColumn(name, self.F.monotonically_increasing_id())
                        ).localCheckpoint(eager=False)

    def ordered_row_id(self, df, cols: list, name: str):
        """A row id ordered as the columns are (ties: an arbitrary but fixed order), as
        with_row_id after sort gives on the in-process backends — here a struct of the
        columns and a unique number, compared field by field: a global sort would run a
        sampling job to choose its ranges."""
        items = ", ".join(f"'{c}', `{c}`" for c in cols)
        return self.one(df.withColumn(name, self.F.expr(
            f"named_struct({items}, '_n', monotonically_increasing_id())"))).localCheckpoint(
            eager=False)

    def materialize(self, df):
        """A lazy local checkpoint: the plan's lineage is cut here and the rows are computed
        once, by the first job that needs them (no job now, size unknown)."""
        if not self.checkpoint:
            return df
        got = self._sizes.get(id(df))
        if got is not None and got[0] is df:
            return df
        self.pin_call_site()  # an action outside this backend (GX's) may have cleared it
        return self.one(df).localCheckpoint(eager=False)
