"""The audit in SQL (issue 43): a plain Spark SQL session with delta-spark (the jars
scripts/setup.sh fetched from Maven Central) reads the lake delta-rs wrote — the answers and
S_τ of a tick by partition, by `VERSION AS OF` and by `TIMESTAMP AS OF`; `DESCRIBE HISTORY`
shows one commit per tick with its tick in `userMetadata`; the current-state view of
docs/lake.md works as written.  Both directions between the two Delta libraries: delta-spark
appends to a table delta-rs wrote, delta-rs reads that version and writes the next."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jobs import lake as api
from jobs.table.store import Lake
from lakehelp import api_lines, reference, until_of

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
TURBINES = str(ROOT / "examples/wind_turbines.tdl")
STREAM = str(ROOT / "examples/wind_turbines.jsonl")


@pytest.fixture(scope="module")
def spark():
    from jobs.tick.spark import session

    s = session("local[2]")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory):
    """Example 13's lake, ticks 0..8 (on the driver: the SQL reads what any executor wrote),
    then a backfill of tick 3: the latest version of `state` is tick 3's, the current tick 8."""
    d = str(tmp_path_factory.mktemp("sql") / "lake")
    until = until_of(TURBINES, STREAM)
    api.init(d, TURBINES)
    api.ingest(d, None, [STREAM])
    api.run_range(d, 0, until, executor="local")
    return d


def _rows(df) -> list:
    return [r.asDict() for r in df.collect()]


def _answer_lines(rows) -> list[str]:
    """The jsonl lines `hypo lake answers --status all` prints, from rows (sort_key, json)."""
    return [json.dumps(json.loads(r["json"]), ensure_ascii=False)
            for r in sorted(rows, key=lambda r: r["sort_key"])]


def test_answers_of_a_tick_by_partition_version_and_timestamp(spark, lake):
    ref = reference(TURBINES, STREAM, 8, all_=True)
    log = Lake(lake).done()
    for tau in (2, 5, 8):
        want = ref[tau]
        by_part = _rows(spark.sql(f"SELECT sort_key, json FROM delta.`{lake}/answers` "
                                  f"WHERE tick = {tau}"))
        assert _answer_lines(by_part) == want == api_lines(lake, tau, "all")
        v = log[tau]["answers_version"]
        by_version = _rows(spark.sql(f"SELECT sort_key, json FROM delta.`{lake}/answers` "
                                     f"VERSION AS OF {v} WHERE tick = {tau}"))
        assert _answer_lines(by_version) == want
        # what the table held at tick τ's commit: no later tick's partition yet
        ticks = {r["tick"] for r in _rows(spark.sql(
            f"SELECT DISTINCT tick FROM delta.`{lake}/answers` VERSION AS OF {v}"))}
        assert max(ticks) == tau
        ts = _rows(spark.sql(f"DESCRIBE HISTORY delta.`{lake}/answers`")
                   .where(f"version = {v}").select("timestamp"))[0]["timestamp"]
        by_time = _rows(spark.sql(f"SELECT sort_key, json FROM delta.`{lake}/answers` "
                                  f"TIMESTAMP AS OF '{ts}' WHERE tick = {tau}"))
        assert _answer_lines(by_time) == want


def test_state_of_a_tick_by_partition_and_version(spark, lake):
    log = Lake(lake).done()
    for tau in (3, 8):
        v = log[tau]["state_version"]
        part = spark.sql(f"SELECT * FROM delta.`{lake}/state` WHERE tick = {tau}")
        at_v = spark.sql(f"SELECT * FROM delta.`{lake}/state` VERSION AS OF {v} "
                         f"WHERE tick = {tau}")
        assert part.count() == at_v.count() > 0
        assert part.exceptAll(at_v).count() == 0 and at_v.exceptAll(part).count() == 0
        kinds = {r["kind"] for r in _rows(part.select("kind").distinct())}
        assert "meta" in kinds, kinds


def test_describe_history_one_commit_per_tick_with_its_tick(spark, lake):
    for table in ("state", "answers"):
        h = _rows(spark.sql(f"DESCRIBE HISTORY delta.`{lake}/{table}`")
                  .selectExpr("version", "userMetadata",
                              "get_json_object(userMetadata, '$.tick') AS tick"))
        ticks = sorted(int(r["tick"]) for r in h if r["tick"] is not None)
        assert ticks == list(range(9)), (table, h)
        created = [r for r in h if r["version"] == 0]
        assert json.loads(created[0]["userMetadata"])["hypo"] == "create"


def test_the_current_state_view_of_docs_lake_md_works_as_written(spark, lake, tmp_path):
    """The SQL of docs/lake.md, its `lake/` replaced by the lake's path, after a backfill of
    tick 3 (the newest version of `state` is then tick 3's): the view gives S_8."""
    api.run_range(lake, 3, 3, executor="local")
    doc = (ROOT / "docs/lake.md").read_text()
    sql = re.search(r"```sql\n(.*?)```", doc, re.S)[1]
    stmt = "\n".join(line for line in sql.splitlines() if not line.startswith("--"))
    spark.sql(stmt.replace("`lake/", f"`{lake}/"))
    got = spark.sql("SELECT DISTINCT tick FROM state_current").collect()
    assert [r["tick"] for r in got] == [8]
    n = spark.sql(f"SELECT count(*) AS n FROM delta.`{lake}/state` WHERE tick = 8").collect()
    assert spark.sql("SELECT count(*) AS n FROM state_current").collect()[0]["n"] == n[0]["n"]


def test_the_change_feed_read_by_spark_is_hypo_run_changes(spark, lake):
    """`readChangeFeed` of the `current` table (delta-rs MERGEs with the change data feed
    on): its inserts and post-images, in (tick, seq) order, are `hypo run --changes`."""
    from lakehelp import run_changes

    feed = (spark.read.format("delta").option("readChangeFeed", "true")
            .option("startingVersion", 1).load(f"{lake}/current")
            .where("_change_type IN ('insert', 'update_postimage')")
            .orderBy("tick", "seq").select("lines").collect())
    lines = [x for r in feed for x in r["lines"]]
    assert lines == run_changes(TURBINES, STREAM, 8)
    dels = spark.read.format("delta").option("readChangeFeed", "true") \
        .option("startingVersion", 1).load(f"{lake}/current") \
        .where("_change_type = 'delete'").count()
    assert dels > 0


def test_delta_spark_and_delta_rs_write_the_same_table_both_ways(spark, tmp_path):
    """delta-rs creates and writes a table (the lake's protocol: reader 1, writer 2);
    delta-spark appends with a transaction id and userMetadata and keeps the protocol;
    delta-rs reads that version and appends the next; Spark reads all three."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"tick": [0, 0], "x": ["a", "b"]}), partition_by=["tick"])
    (spark.createDataFrame([(1, "c")], "tick long, x string").write.format("delta")
     .mode("append").option("txnAppId", "hypo-test").option("txnVersion", 1)
     .option("userMetadata", json.dumps({"tick": 1})).save(path))
    # the same transaction again: Delta skips it (a re-run after a crash commits once)
    (spark.createDataFrame([(1, "c")], "tick long, x string").write.format("delta")
     .mode("append").option("txnAppId", "hypo-test").option("txnVersion", 1).save(path))
    dt = DeltaTable(path)
    assert dt.version() == 1
    assert (dt.protocol().min_reader_version, dt.protocol().min_writer_version) == (1, 2)
    assert sorted(dt.to_pyarrow_table().column("x").to_pylist()) == ["a", "b", "c"]
    write_deltalake(path, pa.table({"tick": [2], "x": ["d"]}), mode="append")
    got = spark.read.format("delta").load(path)
    assert sorted(r["x"] for r in got.collect()) == ["a", "b", "c", "d"]
    h = _rows(spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("version", "userMetadata"))
    assert {r["version"]: r["userMetadata"] for r in h}[1] == '{"tick": 1}'
