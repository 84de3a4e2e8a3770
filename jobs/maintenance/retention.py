"""`hypo lake vacuum`: bounded storage for a lake that runs for ever.

Each tick writes a whole S_τ partition of the state table, so the state table grows with
the ticks; re-runs, quiet stretches and the ticks' quarantine partitions leave replaced
files behind in every table (Delta keeps them for time travel).  Two operations:

- keep_state=N: the state partitions of all but the last N completed ticks are removed
  (one commit, conditional on the version read, like a tick's).  S_τ is only read to start
  tick τ+1 and by the report's arrival model; the answers table (every tick's answers,
  pending ones included), the facts and the quarantine are kept, so `answers`, `history`
  and `report` still cover every tick.  A tick whose S_{τ-1} was removed can no longer be
  re-run by itself, only within a re-run from tick 0, which computes every S_τ again from
  the facts (jobs.tick.job.preflight says so; store.rerunnable).  The cut is recorded first, as
  a `vacuum` row of the ticks log (Lake.state_from, Lake.vacuumed_at), so a crash between
  the two commits leaves a lake that refuses those re-runs while it could still do them,
  never one that tries to read a removed partition; the next vacuum removes what it left.
- keep_answers=N: the same for the answers table; `answers --tick τ`, `history` and `report`
  then cover the ticks from the cut on, and say so for earlier ones.
- retain_hours=H: Delta VACUUM of every data table: files no version since H hours ago
  needs are deleted from disk (the removed state partitions, files replaced by re-runs).
  Reading an older version of a table than H hours (a tick's answers as a run that did
  not finish replaced them) may then fail.  Files younger than H hours are never deleted,
  so with H ≥ 1 a tick or ingest running meanwhile keeps the files it has not committed yet.
"""
from __future__ import annotations

import os
import time
import uuid
from typing import Optional

from jobs.table import delta
from jobs.errors import LakeError
from jobs.table.store import DATA_TABLES, Lake

RETAIN_HOURS = 168  # Delta's default retention: a week of time travel
MIN_RETAIN_HOURS = 1  # below it a running tick's or ingest's files, written but not yet
# committed, could be deleted under it (`force` when nothing runs)


KEPT = {"state": "state_from", "answers": "answers_from"}  # table -> its cut in a vacuum row


def vacuum(lake: str, keep_state: Optional[int] = None, retain_hours: int = RETAIN_HOURS,
           dry_run: bool = False, force: bool = False,
           keep_answers: Optional[int] = None) -> dict:
    """Remove the state (answers) of all but the last keep_state (keep_answers) completed
    ticks, then delete the files no table version of the last retain_hours needs; with
    dry_run, only say what would go."""
    for name, n in (("--keep-state", keep_state), ("--keep-answers", keep_answers)):
        if n is not None and n < 1:
            raise LakeError(f"{name} must be at least 1 (the last completed tick's are read "
                            f"by the next), not {n}")
    if retain_hours < 0:
        raise LakeError(f"--retain-hours must be ≥ 0, not {retain_hours}")
    if retain_hours < MIN_RETAIN_HOURS and not force:
        raise LakeError(f"--retain-hours {retain_hours} is below {MIN_RETAIN_HOURS}: the "
                        f"files of a tick or ingest still running (written, not yet committed) "
                        f"would be deleted; add --force if nothing is running on the lake")
    L = Lake(lake).require()
    log = L.ticks_log()
    last = L.last_tick(L.done(log))
    out = {"lake": L.root, "dry_run": dry_run, "last_tick": last,
           "deleted_files": {}, "deleted_bytes": 0}
    cuts, plans, advanced = {}, {}, False
    for kind, keep in (("state", keep_state), ("answers", keep_answers)):
        before = L.kept_from(kind, log)
        cut = before if keep is None or last < 0 else max(before, last - keep + 1)
        cuts[kind] = cut
        out[kind] = {"from": cut, "removed_partitions": 0, "removed_rows": 0}
        if cut == 0:
            continue
        # below the cut: the partitions a new cut removes, or those an interrupted vacuum
        # (its log row written, its commit not) left behind
        dt = L.table(kind)
        old = delta.add_actions(dt, 0, cut - 1)
        ticks = sorted({int(a["partition.tick"]) for a in old})
        advanced = advanced or cut > before
        if ticks:
            plans[kind] = (dt, ticks)
            out[kind].update(removed_partitions=len(ticks),
                             removed_rows=sum(a.get("num_records") or 0 for a in old))
    if not dry_run and (plans or advanced):
        run = uuid.uuid4().hex[:12]
        # the cut (and the time, Lake.vacuumed_at) first: a crash after it leaves
        # partitions that nothing reads, never a tick that reads a removed one
        L.log(max(cuts.values()), run, "vacuum", counts={
            **{KEPT[k]: c for k, c in cuts.items()},
            **{f"{k}_removed": out[k] for k in plans}})
        for kind, (dt, ticks) in plans.items():
            delta.commit(dt, kind, [], mode="overwrite",
                         partition_filters=[("tick", "in", [str(t) for t in ticks])],
                         metadata={"phase": "vacuum", KEPT[kind]: str(cuts[kind]),
                                   "run": run},
                         what=f"vacuum of the {kind} before tick {cuts[kind]}")
    # (`current`, the change feed's table, once a tick has made it: issue 43)
    extra = ("current",) if delta.is_table(L.path("current")) else ()
    for kind in DATA_TABLES + extra:
        dt = L.table(kind)
        try:
            gone = dt.vacuum(retention_hours=retain_hours, dry_run=True,
                             enforce_retention_duration=False)
        except Exception as e:  # noqa: BLE001 - one line naming the table
            raise LakeError(f"vacuum of the {kind} table failed: {e}") from None
        size = 0
        for rel in gone:
            try:
                size += os.path.getsize(os.path.join(L.path(kind), rel))
            except OSError:
                pass
        if gone and not dry_run:
            dt.vacuum(retention_hours=retain_hours, dry_run=False,
                      enforce_retention_duration=False)
            _drop_empty_dirs(L.path(kind), gone, retain_hours)
        out["deleted_files"][kind] = len(gone)
        out["deleted_bytes"] += size
    return out


def _drop_empty_dirs(table_dir: str, gone: list[str], retain_hours: int) -> None:
    """The partition directories VACUUM emptied (never `_delta_log`): those that held a file
    it deleted, or only directories dropped here, or unchanged for retain_hours — a
    directory a writer has just made for its file is none of these and is kept."""
    limit = time.time() - retain_hours * 3600
    emptied = {os.path.dirname(os.path.join(table_dir, g)) for g in gone}
    for root, dirs, files in os.walk(table_dir, topdown=False):
        if root == table_dir or os.path.basename(root).startswith(("_", ".")):
            continue
        try:
            if not os.listdir(root) and (root in emptied or os.stat(root).st_mtime <= limit):
                os.rmdir(root)
                emptied.add(os.path.dirname(root))
        except OSError:
            pass  # not empty any more, or gone: leave it


__all__ = ["vacuum", "RETAIN_HOURS"]
