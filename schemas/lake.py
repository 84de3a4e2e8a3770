"""Schemas of the lake tables (single source: schemas/lake.json), as pyarrow schemas and
Spark DDL strings."""
from __future__ import annotations

import importlib.resources
import json
from functools import lru_cache

import pyarrow as pa

STATE_FORMAT = "hypo-state/2"

TABLES = ("facts", "quarantine", "state", "answers", "dq", "ticks")
# the columns a Delta writer collects file statistics for (`delta.dataSkippingStatsColumns`):
# the flat integer and short string columns.  delta-spark's default — the first 32 columns,
# the answers' JSON lines among them — copies every long string of every row: writing 42 366
# answers took 10.6 s with it, 1.6 s with these (issue 43)
STATS_COLUMNS = {
    "state": ("kind", "template", "pattern", "ev", "exp", "dlp", "born", "status", "time",
              "wexp"),
    "answers": ("query", "status", "deadline"),
}

_ARROW = {
    "string": pa.string(),
    "long": pa.int64(),
    "boolean": pa.bool_(),
    "double": pa.float64(),
    "array<string>": pa.list_(pa.field("element", pa.string())),
    "array<long>": pa.list_(pa.field("element", pa.int64())),
}


@lru_cache(maxsize=None)
def spec() -> dict:
    # importlib.resources: Spark executors import this package from a zip
    return json.loads(importlib.resources.files("schemas").joinpath("lake.json")
                      .read_text(encoding="utf-8"))


def columns(table: str) -> list[tuple[str, str]]:
    """(name, type) of every column of `table`, partition columns included."""
    return [(c[0], c[1]) for c in spec()["tables"][table]["columns"]]


def required(table: str) -> list[str]:
    """The columns every row of the table must fill (null: a damaged file): what its readers
    cannot do without."""
    return list(spec()["tables"].get(table, {}).get("required", []))


def partition_by(table: str) -> list[str]:
    return list(spec()["tables"][table]["partition_by"])


def arrow_schema(table: str, with_partitions: bool = True) -> pa.Schema:
    parts = set(partition_by(table))
    return pa.schema([pa.field(n, _ARROW[t]) for n, t in columns(table)
                      if with_partitions or n not in parts])


def spark_ddl(table: str, with_partitions: bool = True) -> str:
    """`name type, ...` for spark.read.schema / createDataFrame (partition columns are not
    stored in the data files of a partitioned Delta table)."""
    parts = set(partition_by(table))
    return ", ".join(f"`{n}` {t}" for n, t in columns(table) if with_partitions or n not in parts)


def column_names(table: str, with_partitions: bool = True) -> list[str]:
    parts = set(partition_by(table))
    return [n for n, _ in columns(table) if with_partitions or n not in parts]


def table_properties(table: str) -> dict[str, str]:
    """The Delta table properties a table is created with (none change its protocol)."""
    cols = STATS_COLUMNS.get(table)
    return {"delta.dataSkippingStatsColumns": ",".join(cols)} if cols else {}
