"""The Spark executor's commits of S_τ and the answers with delta-spark (issue 43.1): partition
tick=τ replaced by `replaceWhere`, the tick in the commit's `userMetadata`, and Delta's
idempotent transaction (`txnAppId` / `txnVersion`) so that a run repeated on the same inputs —
a retry after a crash between two commits — commits each table once.

The transaction: `txnAppId` is the tick and the program (`hypo:tick=τ:<program id>`),
`txnVersion` packs the versions of the tick's inputs, (facts version << 32) | (version of
S_{τ-1} + 1).  Both only grow as facts arrive and earlier ticks are re-run, so Delta skips a
write whose inputs are the same as (or older than) those of the last commit of that tick: the
same inputs give the same rows; older ones would put a stale partition over a newer one.
delta-rs (the in-process executors, the CLI) reads these commits like its own: the keys of
`userMetadata` are read as the commit's (jobs/table/delta.py `hypo_keys`).
"""
from __future__ import annotations

from deltalake import DeltaTable

from schemas.lake import column_names
from jobs.errors import LakeError
from jobs.table import delta

SHIFT = 32  # bits of the S_{τ-1} version in txnVersion
SCAN = (8, 64, None)  # commits read, newest first, to find the tick's commit


def app_id(tau: int, program: str) -> str:
    """txnAppId: one Delta application per (tick, program)."""
    return f"hypo:tick={tau}:{program[:16]}"


def txn_version(facts_version: int, prev_state_version: int) -> int:
    """txnVersion: the tick's inputs, ordered as they grow (facts first)."""
    if not 0 <= prev_state_version + 1 < 1 << SHIFT or facts_version < 0 \
            or facts_version >= 1 << (62 - SHIFT):
        raise LakeError(f"table versions beyond what a Delta transaction version holds "
                        f"(facts {facts_version}, state {prev_state_version})")
    return (facts_version << SHIFT) | (prev_state_version + 1)


def write(df, path: str, kind: str, tau: int, metadata: dict, app: str, txn: int,
          what: str = "") -> None:
    """df (the table's file columns, no `tick`) as partition tick=τ of the Delta table at
    path: one delta-spark transaction, skipped by Delta if `app` already committed `txn` or a
    later one.  A concurrent writer of the same partition: delta.CommitConflict."""
    from pyspark.sql import functions as F

    md = delta.commit_metadata(metadata)["userMetadata"]
    cols = [F.lit(tau).cast("long").alias("tick") if c == "tick" else F.col(c)
            for c in column_names(kind)]
    w = (df.select(cols).write.format("delta").mode("overwrite")
         .option("replaceWhere", f"tick = {int(tau)}")
         .option("txnAppId", app).option("txnVersion", str(txn))
         .option("userMetadata", md))
    try:
        w.save(path)
    except Exception as e:  # noqa: BLE001 - py4j / Spark Connect errors carry the Java class
        text = f"{type(e).__name__}: {e}"
        if "Concurrent" in text or "DELTA_CONCURRENT" in text:
            raise delta.CommitConflict(
                f"{what or kind}: another run committed partition tick={tau} of the {kind} "
                f"table while this one was writing it") from None
        raise


def committed(path: str, kind: str, tau: int, app: str, txn: int,
              what: str = "") -> tuple[int, str]:
    """After write(): (the version that holds this transaction, the run that made it — not
    this run's: Delta skipped the write, an earlier run committed the same inputs).  A later
    transaction of the tick (newer inputs) won: delta.CommitConflict."""
    dt = DeltaTable(path)
    have = dt.transaction_version(app)
    if have is None or have < txn:
        raise LakeError(f"the {kind} table has no commit of tick {tau} after delta-spark "
                        f"wrote it (transaction {app} at {have}, expected {txn})")
    if have > txn:
        raise delta.CommitConflict(
            f"{what or kind}: tick {tau} was committed by another run from newer inputs; this "
            f"run's inputs are older")
    for limit in SCAN:
        for h in delta.commits(dt, path, limit):
            if h.get("tick") == str(tau) and h.get("txn") == str(txn):
                return int(h["version"]), h.get("run", "")
    raise LakeError(f"the {kind} table holds transaction {app} = {txn}, but no commit of "
                    f"tick {tau} names it: run `hypo lake verify`")
