"""Delta transaction-log helpers on delta-rs: create tables, commit Parquet files written by
Spark or pyarrow (with the tick in the commit metadata and optimistic concurrency), read
small tables or one version of a table.

Tables stay standard Delta: the files are plain Parquet (partition columns not stored in
them), every commit is a delta-rs transaction, so Spark+Delta, Trino or delta-rs read them.
Small tables are read here with pyarrow file by file (DeltaTable.to_pyarrow_dataset can
abort the interpreter at exit in this deltalake build).
"""
from __future__ import annotations

import hashlib
import json
import os
import uuid
from typing import Any, Iterable, Optional
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from deltalake import DeltaTable, Schema
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError
from deltalake.transaction import (AddAction, CommitProperties, Transaction,
                                  create_table_with_add_actions)

from schemas.lake import arrow_schema, partition_by, required, table_properties

from jobs.table import damage
from jobs.errors import ConcurrentTickError, LakeDamaged, LakeMissing


class CommitConflict(ConcurrentTickError):
    """The table moved past the version this transaction read (another writer won)."""


def is_table(path: str) -> bool:
    return os.path.isdir(os.path.join(path, "_delta_log"))


def open_table(path: str, version: Optional[int] = None) -> DeltaTable:
    if not is_table(path):
        raise LakeMissing(f"no Delta table at {path}")
    try:
        return DeltaTable(path, version=version)
    except TableNotFoundError as e:
        raise LakeMissing(f"cannot open {path}" + (f" at version {version}" if version is not None
                                                   else "") + f": {e}") from None
    except (DeltaError, OSError, ValueError) as e:
        raise damaged_log(path, version, e) from None


def damaged_log(path: str, version: Optional[int], e: BaseException) -> LakeDamaged:
    """The error of a table whose Delta log cannot be read: its first damaged commit file,
    else delta-rs's own first line."""
    why = damage.first_log_problem(path)
    if why is None:
        at = f" version {version}" if version is not None else ""
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        why = f"{damage.label(path)}{at}: its Delta log cannot be read ({first})"
    return LakeDamaged(f"{why}; {damage.VERIFY_HINT}")


def damaged_file(path: str, version: Optional[int], full: str, why: str,
                 hint: str = damage.VERIFY_HINT) -> LakeDamaged:
    """The error of a data file a table refers to that is missing or unreadable."""
    at = f" version {version}" if version is not None else ""
    return LakeDamaged(f"{damage.label(path)}{at}: {damage.rel(full, path)}: {why}; {hint}")


def create_table(path: str, kind: str, metadata: Optional[dict] = None,
                 configuration: Optional[dict] = None) -> None:
    """An empty Delta table with the schema `kind` of schemas/lake.json (version 0), with
    the table's properties (schemas/lake.py `table_properties`)."""
    os.makedirs(path, exist_ok=True)
    configuration = {**table_properties(kind), **(configuration or {})} or None
    create_table_with_add_actions(
        path, Schema.from_arrow(arrow_schema(kind)), [], mode="error",
        partition_by=partition_by(kind) or None, name=kind, configuration=configuration,
        commit_properties=CommitProperties(
            custom_metadata=with_user_metadata({"hypo": "create", **(metadata or {})})),
    )


def ensure_properties(dt: DeltaTable, kind: str) -> bool:
    """Give a table created before them its properties (schemas/lake.py `table_properties`):
    one commit of table metadata, once (True: committed, dt is then behind); a table that
    has them is not touched."""
    have = dt.metadata().configuration
    missing = {k: v for k, v in table_properties(kind).items() if have.get(k) != v}
    if missing:
        dt.alter.set_table_properties(missing, commit_properties=CommitProperties(
            custom_metadata=with_user_metadata({"hypo": "properties"})))
    return bool(missing)


def with_user_metadata(md: dict) -> dict:
    """The commit's hypo keys also as Delta's `userMetadata` (compact JSON, the tick first):
    the column `DESCRIBE HISTORY` shows in Spark SQL and delta-spark's writers set (issue 43)
    — one commit per tick, found by `get_json_object(userMetadata, '$.tick')`."""
    if not md:
        return md
    keys = sorted(md, key=lambda k: (k != "tick", k != "run", k))
    um = {k: md[k] for k in keys if k != "userMetadata"}
    return {**md, "userMetadata": json.dumps(um, separators=(",", ":"))}


def commit_metadata(metadata: Optional[dict]) -> dict:
    """A commit's hypo keys as strings (JSON for other values), with `userMetadata`."""
    return with_user_metadata({k: (v if isinstance(v, str) else json.dumps(v))
                               for k, v in (metadata or {}).items()})


def _jsonable(v: Any) -> Any:
    if hasattr(v, "item"):
        v = v.item()
    return v


def file_action(table_dir: str, rel: str, partition_values: dict[str, Optional[str]]) -> AddAction:
    """An add action for one Parquet file under the table, with statistics read from its
    footer (numRecords, nullCount, and min/max of integer columns)."""
    full = os.path.join(table_dir, rel)
    st = os.stat(full)
    md = pq.ParquetFile(full).metadata
    stats: dict[str, Any] = {"numRecords": md.num_rows, "nullCount": {}, "minValues": {},
                             "maxValues": {}}
    ncols = md.num_columns
    for c in range(ncols):
        col = md.schema.column(c)
        name = col.path.split(".")[0]
        if "." in col.path:  # nested (lists): no stats
            continue
        nulls, lo, hi, ok = 0, None, None, True
        for g in range(md.num_row_groups):
            s = md.row_group(g).column(c).statistics
            if s is None:
                ok = False
                break
            if s.has_null_count:
                nulls += s.null_count
            else:
                ok = False
            if col.physical_type == "INT64" and col.logical_type.type in ("NONE", "INT") \
                    and s.has_min_max:
                lo = s.min if lo is None else min(lo, s.min)
                hi = s.max if hi is None else max(hi, s.max)
        if not ok:
            continue
        stats["nullCount"][name] = nulls
        if lo is not None:
            stats["minValues"][name] = _jsonable(lo)
            stats["maxValues"][name] = _jsonable(hi)
    return AddAction(rel, st.st_size, dict(partition_values), int(st.st_mtime * 1000), True,
                     json.dumps(stats))


def dir_actions(table_dir: str, rel_dir: str,
                partition_values: dict[str, Optional[str]]) -> list[AddAction]:
    """Add actions for every Parquet part file Spark wrote into table_dir/rel_dir."""
    full = os.path.join(table_dir, rel_dir)
    if not os.path.isdir(full):
        return []
    out = []
    for f in sorted(os.listdir(full)):
        if f.endswith(".parquet") and not f.startswith((".", "_")):
            out.append(file_action(table_dir, os.path.join(rel_dir, f), partition_values))
    return out


def write_file(table_dir: str, kind: str, data: pa.Table, rel_dir: str,
               partition_values: dict[str, Optional[str]], name: Optional[str] = None) -> AddAction:
    """Write a pyarrow table (partition columns dropped) as one Parquet file of a table."""
    parts = set(partition_by(kind))
    schema = arrow_schema(kind, with_partitions=False)
    cols = [c for c in data.column_names if c not in parts]
    data = data.select(cols).cast(schema) if cols == schema.names else _conform(data, schema)
    rel = os.path.join(rel_dir, name or f"part-{uuid.uuid4().hex}.parquet")
    os.makedirs(os.path.join(table_dir, rel_dir), exist_ok=True)
    pq.write_table(data, os.path.join(table_dir, rel), compression="snappy")
    return file_action(table_dir, rel, partition_values)


def _conform(data: pa.Table, schema: pa.Schema) -> pa.Table:
    arrays = []
    for f in schema:
        if f.name in data.column_names:
            arrays.append(data.column(f.name).cast(f.type))
        else:
            arrays.append(pa.nulls(data.num_rows, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def commit(dt: DeltaTable, kind: str, actions: list, mode: str = "append",
           partition_filters: Optional[list] = None, metadata: Optional[dict] = None,
           exclusive: bool = True, what: str = "", txn: Optional[tuple[str, int]] = None) -> int:
    """Commit file actions as one transaction.  exclusive: only as version read+1 (the
    version `dt` was loaded at), else CommitConflict; returns the version committed
    (-1 when not exclusive: appends retried by delta-rs).  txn: (app id, version) recorded
    as Delta's application transaction (jobs/table/spark_delta.py)."""
    read = dt.version()
    md = commit_metadata(metadata)
    try:
        dt.create_write_transaction(
            actions, mode=mode, schema=arrow_schema(kind), partition_by=partition_by(kind) or None,
            partition_filters=partition_filters,
            commit_properties=CommitProperties(
                custom_metadata=md, max_commit_retries=0 if exclusive else 15,
                app_transactions=[Transaction(app_id=txn[0], version=txn[1])] if txn else None),
        )
    except CommitFailedError:
        now = DeltaTable(dt.table_uri).version()
        raise CommitConflict(
            f"{what or kind}: the {kind} table moved from version {read} to {now} while this "
            f"run was working") from None
    return read + 1 if exclusive else -1


def table_columns(dt: DeltaTable) -> list[str]:
    """The column names of a table's current schema."""
    return [f.name for f in dt.schema().fields]


def history(path: str) -> list[dict]:
    """Commit infos, newest first, each with its `version`."""
    return commits(open_table(path), path)


def commits(dt: DeltaTable, path: str, limit: Optional[int] = None) -> list[dict]:
    """dt.history(limit) with the hypo keys of each commit (hypo_keys), or LakeDamaged naming
    the damaged commit file."""
    try:
        return [hypo_keys(h) for h in dt.history(limit)]
    except (DeltaError, OSError, ValueError) as e:
        raise damaged_log(path, dt.version(), e) from None


def hypo_keys(h: dict) -> dict:
    """A commit info with the keys of its `userMetadata` JSON object at top level where it
    lacks them: delta-rs commits carry the hypo keys both ways, delta-spark's only there."""
    um = h.get("userMetadata")
    if isinstance(um, str) and um.startswith("{"):
        try:
            obj = json.loads(um)
        except ValueError:
            return h
        if isinstance(obj, dict):
            for k, v in obj.items():
                h.setdefault(k, v if isinstance(v, str) else json.dumps(v))
    return h


def add_actions(dt: DeltaTable, lo: Optional[int] = None, hi: Optional[int] = None,
                columns: Optional[list[str]] = None) -> list[dict]:
    """The table's add actions (flattened) as dicts; with lo (and hi), only those of
    partitions tick=lo..hi, chosen in Arrow, and with columns only those of them the table
    has: a table of 10⁵ ticks has 10⁵ files, and building every action as a dict to keep
    one tick's cost ~0.3 s at every tick."""
    t = pa.table(dt.get_add_actions(flatten=True))
    if lo is not None and "partition.tick" in t.column_names:
        col = pc.cast(t["partition.tick"], pa.int64())
        keep = pc.greater_equal(col, lo)
        if hi is not None:
            keep = pc.and_(keep, pc.less_equal(col, hi))
        t = t.filter(pc.fill_null(keep, False))
    if columns is not None:
        t = t.select([c for c in columns if c in t.column_names])
    return t.to_pylist()


def read_arrow(path: str, kind: str, version: Optional[int] = None,
               partitions: Optional[dict[str, Any]] = None,
               columns: Optional[list[str]] = None, dt: Optional[DeltaTable] = None) -> pa.Table:
    """Rows of a (small) table at a version, partition values filled in, file by file."""
    dt = dt or open_table(path, version)
    full = arrow_schema(kind)
    parts = partition_by(kind)
    want = columns or full.names
    out_schema = pa.schema([full.field(c) for c in want])
    t = (partitions or {}).get("tick")
    adds = add_actions(dt, int(t), int(t)) if t is not None and parts == ["tick"] else \
        add_actions(dt)
    if not parts and len(adds) > 1:  # one scan of many small files (the ticks log): 2-3x
        files = [os.path.join(path, a["path"]) for a in adds]
        try:
            return ds.dataset(files, schema=out_schema, format="parquet").to_table()
        except (OSError, pa.ArrowException):
            pass  # file by file below: the damaged file named
    return _read_adds(path, dt, adds, parts, out_schema, partitions, required(kind))


class TickFiles:
    """One tick's rows at a time of a table partitioned by tick (its add actions listed
    once): a reader that walks many ticks holds one partition, not the table."""

    def __init__(self, path: str, kind: str, version: Optional[int] = None):
        self.path, self.kind = path, kind
        self.dt = open_table(path, version)
        self.by_tick: dict[int, list] = {}
        for a in add_actions(self.dt, columns=["path", "partition.tick"]):
            if a.get("partition.tick") is not None:
                self.by_tick.setdefault(int(a["partition.tick"]), []).append(a)

    def read(self, tick: int, columns: list[str]) -> pa.Table:
        full = arrow_schema(self.kind)
        out_schema = pa.schema([full.field(c) for c in columns])
        return _read_adds(self.path, self.dt, self.by_tick.get(tick, []),
                          partition_by(self.kind), out_schema, None, required(self.kind))


def _read_adds(path: str, dt: DeltaTable, adds: list, parts: list, out_schema: pa.Schema,
               partitions: Optional[dict], needed: Iterable[str] = ()) -> pa.Table:
    """The rows of these add actions' files, file by file (a missing or unreadable file, or
    one with a null in a column of `needed` that is read, is named in a DamagedTable error),
    with partition values filled in."""
    want = out_schema.names
    needed = [c for c in needed if c in want and c not in parts]
    tables = []
    for a in adds:
        pv = {p: a.get(f"partition.{p}") for p in parts}
        if partitions and any(str(pv[k]) != str(v) for k, v in partitions.items()):
            continue
        fpath = os.path.join(path, a["path"])
        if not os.path.exists(fpath):
            fpath = os.path.join(path, unquote(a["path"]))
        try:
            pf = pq.ParquetFile(fpath)
            present = set(pf.schema_arrow.names)
            t = pf.read(columns=[c for c in want if c not in parts and c in present])
        except FileNotFoundError:
            raise damaged_file(path, dt.version(), fpath, "the file is missing") from None
        except (OSError, pa.ArrowException) as e:
            raise damaged_file(path, dt.version(), fpath, "the file is not readable Parquet ("
                               + (str(e).splitlines() or [""])[0][:160] + ")") from None
        for c in needed:  # (a column the file lacks altogether: an older layout, read as null)
            nulls = t.column(c).null_count if c in present else 0
            if nulls:
                raise damaged_file(path, dt.version(), fpath,
                                   f"{nulls} row(s) without a {c} (a required column)")
        arrays = []
        for f in out_schema:
            if f.name in parts:
                arrays.append(pa.array([pv[f.name]] * t.num_rows).cast(f.type))
            elif f.name in present:
                arrays.append(t.column(f.name).cast(f.type))
            else:
                arrays.append(pa.nulls(t.num_rows, f.type))
        tables.append(pa.Table.from_arrays(arrays, schema=out_schema))
    if not tables:
        return out_schema.empty_table()
    return pa.concat_tables(tables)


def digest_add(acc: int, text: str) -> int:
    """Order-independent digest of a multiset of rows: the sum of 64-bit row hashes."""
    h = int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"),
                                       digest_size=8).digest(), "big")
    return (acc + h) & 0xFFFFFFFFFFFFFFFF


def digest_hex(acc: int) -> str:
    return f"{acc:016x}"


def batched(it: Iterable, n: int):
    buf = []
    for x in it:
        buf.append(x)
        if len(buf) >= n:
            yield buf
            buf = []
    if buf:
        yield buf
