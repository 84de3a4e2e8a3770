"""The `current` table and its change feed (issue 43): one row per answer `hypo run` shows at
the newest tick, kept by a Delta MERGE per tick with the change data feed on, so that the
feed between two versions is what `hypo run --changes` prints for those ticks."""
from __future__ import annotations

import os
import re
import uuid
from typing import Optional

import pyarrow as pa

from deltalake import CommitProperties, DeltaTable

from jobs.errors import LakeDamaged, LakeError
from jobs.table import delta
from jobs.table.store import Lake
from reasoning.run.changes import Changes
from reasoning.util.gcpause import frozen_survivors
from reasoning.semantics.keyed import KeyedLines

KIND = "current"
# delta-rs writes the change data files of a MERGE when the table has this property (writer
# version 4, which delta-spark reads and writes too: docs/lake.md#the-change-feed)
CDF = {"delta.enableChangeDataFeed": "true"}
REFUTED = "refuted"


# the lines of the tick the last catch_up ended at, per lake: the next tick's `prev`
# without reading that partition again (valid while its answers version is the same)
_LAST: dict = {}


def tick_lines(L: Lake, done, t: int, versions: Optional[dict] = None) -> KeyedLines:
    """The lines `hypo run` (no --all) prints at tick t, from the answers version tick t
    committed (versions: tick -> answers version, for ticks whose `done` is not in `done`
    yet); none for a tick inside a skipped quiet stretch."""
    v = (versions or {}).get(t)
    if v is None and t >= 0 and t in done:
        v = done[t]["answers_version"]
    if t < 0 or v is None:
        return KeyedLines.empty()
    try:  # (a lake made again at the same path has another first commit)
        born = os.stat(os.path.join(L.path("answers"), "_delta_log",
                                    f"{0:020d}.json")).st_mtime_ns
    except OSError:
        born = None
    got = _LAST.get(L.root)
    if got is not None and got[:3] == (t, v, born):
        return got[3]
    tab = delta.read_arrow(L.path("answers"), "answers", version=v, partitions={"tick": t},
                           columns=["sort_key", "json", "status", "answer_key"])
    rows = [r for r in tab.to_pylist() if r["status"] != "pending"]
    out = KeyedLines([0] * len(rows), [r["sort_key"] for r in rows],
                     [r["json"] for r in rows], [r["answer_key"] for r in rows],
                     [r["status"] for r in rows])
    _LAST[L.root] = (t, v, born, out)
    return out


def changed_rows(t: int, prev: Optional[KeyedLines], cur: KeyedLines) -> list[dict]:
    """The rows of `current` that tick t changes, one per answer key, in the order `hypo run
    --changes` prints their lines (reasoning/run/changes.py, the same comparison)."""
    import polars as pl

    ch = Changes()
    if prev is not None:
        ch.update(t - 1, prev)
    out: dict = {}
    seen = []  # (row, the changed line's text): its query and deadline read in bulk below
    for texts, rows, heads, which, skip in ch._changed(t, cur):
        src = cur if texts is cur.line else prev
        for r, w in zip(rows, which):
            head = heads[w]
            change = head[head.index('"change": "') + 11:].split('"', 1)[0]
            line = head + texts[r][skip:]
            key = src.akey[r]
            row = out.get(key)
            if row is None:
                row = out[key] = {"answer_key": key, "change": change, "tick": t,
                                  "seq": len(out), "sort_key": src.skey[r], "lines": [],
                                  "statuses": set(), "deadline": None, "query": None}
            row["lines"].append(line)
            row["statuses"].add(REFUTED if change == REFUTED else src.status[r])
            seen.append((row, texts[r]))
    # (json_path_match in Rust, not json.loads a line: 3.6 s of a 12.5 s tick at 2.3 · 10⁵
    # changed answers)
    got = pl.Series([x for _, x in seen], dtype=pl.String)
    queries = got.str.json_path_match("$.query").to_list()
    deadlines = got.str.json_path_match("$.deadline").cast(pl.Int64).to_list()
    for (row, _), q, d in zip(seen, queries, deadlines):
        if row["query"] is None:
            row["query"] = q
        if d is not None and (row["deadline"] is None or d < row["deadline"]):
            row["deadline"] = d
    for row in out.values():
        st = row.pop("statuses")
        row["status"] = (REFUTED if REFUTED in st else "definite" if st == {"definite"}
                         else "hypothetical")
    return list(out.values())


def _table(L: Lake) -> Optional[DeltaTable]:
    """The table, None if not created yet (lakes from before issue 43 too); a damaged log is
    LakeDamaged naming the table, version and file, not "not created yet"."""
    path = L.path(KIND)
    if not delta.is_table(path):
        return None
    return delta.open_table(path)


def readable(L: Lake) -> None:
    """Refuse a tick before it writes anything if the change feed's table cannot be read
    (LakeDamaged naming the table, version and file): its merge runs after the tick's `done`,
    where a damaged log would fail a command that had already committed the tick."""
    dt = _table(L)
    if dt is not None:
        last_tick(dt)


def last_tick(dt: DeltaTable) -> int:
    """The newest tick the table was brought up to (the `tick` of its newest commit that has
    one: a VACUUM commits too), -1: none."""
    for limit in (4, None):
        for h in dt.history(limit):
            if "tick" in h:
                return int(h["tick"])
    return -1


def catch_up(L: Lake, tau: int, done=None, versions: Optional[dict] = None) -> dict:
    """Bring `current` up to tick τ (called after τ's `done`): each tick after the one it
    holds, through τ, merged in order — a crash after `done` loses no tick's changes; a
    re-run of a tick it already holds (a backfill) leaves it as it is.  A table created now
    (a new lake, or one from before the table existed) starts at τ.  done: the ticks log's
    `done` rows if the caller has them (read otherwise); versions: tick -> answers version of
    ticks done since (the tick just committed)."""
    dt = _table(L)
    if dt is None:
        delta.create_table(L.path(KIND), KIND, {"tick": str(tau - 1)}, configuration=CDF)
        dt = DeltaTable(L.path(KIND))
    last = last_tick(dt)
    if last >= tau:
        return {"current_merged": 0}
    done = L.done() if done is None else done
    run = uuid.uuid4().hex[:12]
    # only ticks where something can change: those computed (in `done`, or just now), and
    # the tick after each (its answers may vanish into a quiet stretch); ticks inside a
    # stretch show nothing, and nothing changes from nothing (a gap of 10⁵ ticks is a few)
    shown = {t for t in done if last < t <= tau} | set(versions or ()) | {tau}
    todo = sorted({t for t in shown | {t + 1 for t in shown} | {last + 1}
                   if last < t <= tau})
    prev_t, prev = last, (tick_lines(L, done, last, versions) if last >= 0 else None)
    have = set(dt.to_pyarrow_table(columns=["answer_key"]).column("answer_key").to_pylist())
    merged = 0
    for t in todo:
        if prev_t != t - 1:
            prev = tick_lines(L, done, t - 1, versions)
        cur = tick_lines(L, done, t, versions)
        prev_t = t
        if (prev is None or not prev.height) and not cur.height and t < tau:
            prev = cur
            continue
        # (acyclic rows: the cyclic GC only walked them, ~1/3 of the change feed's time at
        # 2.3 · 10⁵ changed answers)
        with frozen_survivors():
            rows = changed_rows(t, prev, cur)
        keys = {r["answer_key"] for r in rows}
        gone = have - set(cur.akey) - keys
        if rows or gone:
            _merge(dt, rows, sorted(gone), t, run)
            merged += 1
            dt = DeltaTable(L.path(KIND))
            have = (have - gone) | keys  # the table's keys now, without reading them back
        elif t == tau:
            _mark(dt, t, run)
        prev = cur
    return {"current_merged": merged}


def _merge(dt: DeltaTable, rows: list[dict], gone: list[str], t: int, run: str) -> None:
    """One MERGE: the changed answers upserted, the ones no longer shown deleted."""
    schema = delta.arrow_schema(KIND)
    pad = [None] * len(gone)
    cols = {f.name: [r.get(f.name) for r in rows] + pad for f in schema}
    cols["answer_key"] = [r["answer_key"] for r in rows] + list(gone)
    src = pa.Table.from_pydict(cols, schema=schema).append_column(
        "op", pa.array(["set"] * len(rows) + ["del"] * len(gone), pa.string()))
    md = delta.with_user_metadata({"tick": str(t), "run": run})
    setters = {f.name: f"s.{f.name}" for f in schema}
    (dt.merge(src, "t.answer_key = s.answer_key", source_alias="s", target_alias="t",
              commit_properties=CommitProperties(custom_metadata=md, max_commit_retries=0))
     .when_matched_delete("s.op = 'del'")
     .when_matched_update(setters, "s.op = 'set'")
     .when_not_matched_insert(setters, "s.op = 'set'")
     .execute())


def _mark(dt: DeltaTable, t: int, run: str) -> None:
    """A commit without data: the table holds tick t (nothing changed there)."""
    dt.create_write_transaction(
        [], mode="append", schema=delta.arrow_schema(KIND),
        commit_properties=CommitProperties(
            custom_metadata=delta.with_user_metadata({"tick": str(t), "run": run}),
            max_commit_retries=0))


def changes(lake: str, start: int, end: int) -> list[str]:
    """What `hypo run --changes --format jsonl` prints for ticks start..end, read from the
    change feed of `current` (inserts and post-images of the versions of those ticks)."""
    L = Lake(lake).require()
    dt = _table(L)
    if dt is None:
        raise LakeError("this lake has no `current` table yet: it is written from the next "
                        "tick a run computes (`hypo lake tick` / `run`)")
    versions = {h["version"]: int(h["tick"]) for h in dt.history() if "tick" in h}
    first = versions.get(0, -1) + 1
    if start < first:
        raise LakeError(f"the change feed of this lake starts at tick {first} (the table was "
                        f"created then); ask --from {first} or later")
    vs = sorted(v for v, t in versions.items() if start <= t <= end and v > 0)
    if not vs:
        return []
    try:
        feed = pa.table(dt.load_cdf(starting_version=vs[0], ending_version=vs[-1]).read_all())
    except Exception as e:  # noqa: BLE001 - delta-rs raises a bare Exception for a bad file
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        m = re.search(r"_change_data/[\w.-]+|part-[\w.-]+\.parquet", first)
        raise LakeDamaged(f"current: the change feed of versions {vs[0]}..{vs[-1]} cannot be "
                          f"read ({m.group(0) if m else first[:200]} is damaged); run `hypo "
                          f"lake verify`") from None
    keep = [r for r in feed.select(["_change_type", "tick", "seq", "lines"]).to_pylist()
            if r["_change_type"] in ("insert", "update_postimage")
            and start <= r["tick"] <= end]
    keep.sort(key=lambda r: (r["tick"], r["seq"]))
    return [line for r in keep for line in r["lines"]]
