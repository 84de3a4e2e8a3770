"""Table files as the tick plan's frames and back: LocalIO (Polars, the driver), SparkIO."""
from __future__ import annotations

import os

from schemas.lake import arrow_schema, spark_ddl

from jobs.table import delta

LOCAL_FILE_ROWS = 250_000  # the local executor splits a table's file above twice this


class LocalIO:
    """The plan's frames in the driver's memory (Polars on Arrow); pyarrow writes them.
    cpus: how many a large frame's write may use (jobs.tick.resources.usable_cpus)."""

    name = "local"

    def __init__(self, cpus: int = 1, share=None):
        from reasoning.columnar.backends.polars import PolarsBackend

        self.B = PolarsBackend()
        self.cpus = cpus
        # a part of a tick split by the program's key (jobs/tick/spark_partitioned.py's
        # Share): the rows it reads, the names of the files it writes
        self.share = share

    def read(self, files: list[str], kind: str):
        """Polars' own Parquet reader, conformed to the table's schema (a column missing from
        older files reads as nulls): half the time and memory of pyarrow + from_arrow, which
        holds the Arrow table and its Polars copy at once."""
        import polars as pl

        target = _polars_schema(kind)
        if not files:
            return pl.DataFrame(schema=target)

        def one(f: str):  # files may differ (a producer's extra or missing columns)
            df = pl.read_parquet(f, hive_partitioning=False)
            have = set(df.columns)
            return df.select([pl.col(c).cast(t) if c in have else pl.lit(None, t).alias(c)
                              for c, t in target.items()])

        df = pl.concat([one(f) for f in files], how="vertical", rechunk=False)
        return df if self.share is None else self.share.keep(df, kind)

    def checkpoint(self, df):
        return df

    def write(self, df, table_dir: str, rel_dir: str, kind: str, pv: dict, name: str) -> list:
        """One Parquet file written by Polars (no Arrow copy of the frame), or for a large
        frame one per CPU written by parallel threads."""
        from concurrent.futures import ThreadPoolExecutor

        target = _polars_schema(kind)
        if self.share is not None:
            name = f"{name}-p{self.share.i:04d}"
        df = df[list(target)]  # getitem: an eager select would align the columns' chunks
        if df.schema != target:  # (a copy of the whole frame)
            df = df.cast(target)
        n = df.height
        k = max(1, min(self.cpus, n // LOCAL_FILE_ROWS))
        step = -(-n // k) if n else 0

        def one(i: int):
            fname = f"{name}.parquet" if k == 1 else f"{name}-{i:03d}.parquet"
            rel = os.path.join(rel_dir, fname)
            os.makedirs(os.path.join(table_dir, rel_dir), exist_ok=True)
            part = df if k == 1 else df.slice(i * step, step)
            part.write_parquet(os.path.join(table_dir, rel), compression="snappy",
                               statistics=True)
            return delta.file_action(table_dir, rel, pv)

        if k == 1:
            return [one(0)]
        with ThreadPoolExecutor(k) as ex:
            return list(ex.map(one, range(k)))


def _polars_schema(kind: str) -> dict:
    """The Polars dtypes of a table's file columns (partition columns excluded)."""
    import polars as pl

    return dict(pl.from_arrow(arrow_schema(kind, with_partitions=False).empty_table()).schema)


class SparkIO:
    """The plan as Spark SQL over DataFrames (B: jobs/tick/spark_plan.py's SparkBackend);
    Spark writes them."""

    name = "spark"

    def __init__(self, B):
        self.spark = B.spark
        self.B = B

    def read(self, files: list[str], kind: str):
        ddl = spark_ddl(kind, with_partitions=False)
        if not files:  # built by the JVM alone (see SparkBackend._local)
            return self.B.one(self.B.from_arrow(
                arrow_schema(kind, with_partitions=False).empty_table(), ddl))
        return self.B.one(self.spark.read.schema(ddl).parquet(*files))

    def checkpoint(self, df):
        """Lazy: the first job that reads the frame computes it once (no job of its own)."""
        return self.B.materialize(df)

    def write(self, df, table_dir: str, rel_dir: str, kind: str, pv: dict, name: str) -> list:
        df.write.mode("overwrite").parquet(os.path.join(table_dir, rel_dir))
        return delta.dir_actions(table_dir, rel_dir, pv)
