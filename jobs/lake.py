"""The jobs API (jobs/README.md): the only functions the `hypo lake` CLI and the DAG call."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import uuid
from collections import Counter
from typing import Any, Iterator, Optional

import pyarrow as pa

from reasoning.util.atomic import write_json
from reasoning.language.compiler import (compile_file, modular_mode, read_program_text,
                                         shown_preds)

from jobs.table import delta
from jobs.errors import InputError, LakeError, ProgramMismatch
from jobs.ingest.files import (check_files, far_ticks, file_sha256, is_data_file, read_files,
                     rename_sources, spool_streams, clean_spool)
from jobs.table.store import DATA_TABLES, Lake, fact_files, now, rerun_from, stretch_of
from schemas.lake import STATE_FORMAT

# the API's queries and migration live in their layers; callers keep calling lake.X
from jobs.table.current import changes  # noqa: F401  (the API: the change feed)
from jobs.audit.queries import (STATUSES, history, lake_status, late_facts,  # noqa: F401
                                late_rerun_from, late_ticks, read_answers)
from jobs.maintenance.migrate import migrate  # noqa: F401


# ---------------------------------------------------------------------- init
def init(lake: str, program_path: str, query: Optional[str] = None,
         confidence: bool = False, modular: Optional[str] = None) -> dict:
    """Create the tables and store the program (text + sha256 + main query; confidence: each
    answer's confidence in the answers table, jobs/tick/confidence.py; modular: the modular
    evaluation mode, default $HYPO_MODULAR or auto — the lake keeps the predicates it chose,
    reasoning/language/modular.py).  Idempotent for the same program and options; refused
    for others."""
    L = Lake(lake)
    asked = modular or os.environ.get("HYPO_MODULAR")
    if not asked and L.exists():  # init again: the mode the lake was made with
        asked = L.program_info.get("modular", "never")
    mode = modular_mode(asked)
    # windows unfolded: the state table's layout (a literal window runs on the row engine)
    cp = compile_file(program_path, query, mode, "unfold")  # ProgramError: with its location
    from reasoning.columnar.engine import too_long

    why = too_long(cp)
    if why is not None:  # the state table's layout cannot hold its answers
        raise LakeError(f"{program_path}: {why}; `hypo run` answers this program (on the row "
                        f"engine), the lake cannot")
    text = read_program_text(program_path)
    h = hashlib.sha256(text.encode()).hexdigest()
    if L.exists():
        info = L.program_info
        if h != info["hash"] or (query or None) != (info.get("query") or None):
            raise ProgramMismatch(
                f"program mismatch: the lake at {L.root} was initialised with {info.get('file')} "
                f"(sha256 {info['hash'][:12]}, query {info.get('main')}), not {program_path} "
                f"(sha256 {h[:12]}, query {cp.main.atom}); use a new lake for another program")
        if bool(info.get("confidence")) != confidence:
            had = "with" if info.get("confidence") else "without"
            raise ProgramMismatch(
                f"the lake at {L.root} was initialised {had} --confidence; the arrival model "
                f"learns from tick 0, so it cannot be switched afterwards: use a new lake")
        if sorted(cp.modular) != info.get("derived", []):
            raise ProgramMismatch(
                f"the lake at {L.root} was initialised with modular evaluation "
                f"{info.get('modular', 'never')} ({_kept(info.get('derived', []))}); --modular "
                f"{mode} keeps {_kept(sorted(cp.modular))}, and S_τ is held in the templates "
                f"of the first: use a new lake")
        return {"lake": L.root, "created": False, "hash": h, "query": str(cp.main.atom),
                "confidence": confidence}
    if os.path.isdir(L.root) and any(delta.is_table(L.path(t)) for t in DATA_TABLES):
        return _restore_program_info(L, program_path, text, h, cp, query, confidence, mode)
    if os.path.exists(L.root) and os.listdir(L.root) and any(
            os.path.exists(os.path.join(L.root, t)) for t in DATA_TABLES + ("_hypo",)):
        raise LakeError(f"{L.root} holds a partial lake (no _hypo/program.json, no table "
                        f"holds data): remove it first")
    other = sorted(e for e in os.listdir(L.root) if e not in ("landing", "lost+found")
                   ) if os.path.isdir(L.root) else []
    if other:  # a mistyped --lake (a home directory, a repository) would get tables mixed in
        shown = ", ".join(other[:3]) + (", …" if len(other) > 3 else "")
        raise LakeError(f"{L.root} is not empty ({shown}): a lake is created in a new or empty "
                        f"directory, or one holding only landing/ (the producers' slices)")
    os.makedirs(L.meta_dir, exist_ok=True)
    for t in DATA_TABLES + ("ticks",):
        if not delta.is_table(L.path(t)):
            delta.create_table(L.path(t), t, {"program": h})
    with open(os.path.join(L.meta_dir, "program.tdl"), "w", encoding="utf-8") as fh:
        fh.write(text)
    info = {"format": "hypo-lake/1", "hash": h, "file": os.path.basename(program_path),
            "query": query, "main": str(cp.main.atom), "created": now(),
            "state_format": STATE_FORMAT, "confidence": confidence, "compiled": cp.to_json(),
            "modular": mode, "derived": sorted(cp.modular)}
    # the lake exists from here on
    write_json(os.path.join(L.meta_dir, "program.json"), info, indent=2, ensure_ascii=False)
    return {"lake": L.root, "created": True, "hash": h, "query": str(cp.main.atom),
            "confidence": confidence}


def _kept(preds: list) -> str:
    return f"derived literals {shown_preds(preds)}" if preds else "every predicate unfolded"


def _restore_program_info(L: Lake, program_path: str, text: str, h: str, cp, query,
                          confidence: bool, mode: str) -> dict:
    """init over a lake whose tables are here but whose _hypo/program.json is gone (issue
    44.11: it said "remove it first", the facts with it): rewritten when the program is the
    one the tables were made for (the sha256 their first commit records), the main query the
    one its answers name, and --confidence as its answers have it; refused otherwise, with
    what was recorded."""
    import pyarrow.compute as pc

    made = None
    for t in DATA_TABLES:
        if delta.is_table(L.path(t)):
            first = [c for c in delta.history(L.path(t)) if c.get("version") == 0]
            made = (first[0].get("program") if first else None) or made
            if made:
                break
    if made != h:
        raise ProgramMismatch(
            f"{L.root} holds a lake whose _hypo/program.json is missing; its tables were made "
            f"for the program of sha256 {str(made)[:12]} (_hypo/program.tdl, if it is there), "
            f"not {program_path} (sha256 {h[:12]}): restore program.json from a backup, or "
            f"run this init again with that program — nothing was changed")
    if delta.is_table(L.path("answers")):
        ans = delta.read_arrow(L.path("answers"), "answers", columns=["query", "confidence"])
        if ans.num_rows:
            had = ans.column("query")[0].as_py()
            if had != str(cp.main.atom):
                raise ProgramMismatch(
                    f"{L.root}: the lake's answers are of the query {had}, not {cp.main.atom}: "
                    f"run this init again with the query it had (--query) — nothing was changed")
            conf = pc.any(pc.is_valid(ans.column("confidence"))).as_py()
            if bool(conf) != confidence:
                raise ProgramMismatch(
                    f"{L.root}: the lake's answers were made {'with' if conf else 'without'} "
                    f"--confidence: run this init again {'with' if conf else 'without'} it — "
                    f"nothing was changed")
    os.makedirs(L.meta_dir, exist_ok=True)
    if not os.path.exists(os.path.join(L.meta_dir, "program.tdl")):
        with open(os.path.join(L.meta_dir, "program.tdl"), "w", encoding="utf-8") as fh:
            fh.write(text)
    info = {"format": "hypo-lake/1", "hash": h, "file": os.path.basename(program_path),
            "query": query, "main": str(cp.main.atom), "created": now(),
            "state_format": STATE_FORMAT, "confidence": confidence, "compiled": cp.to_json(),
            "modular": mode, "derived": sorted(cp.modular),
            "restored": True}
    write_json(os.path.join(L.meta_dir, "program.json"), info, indent=2, ensure_ascii=False)
    return {"lake": L.root, "created": False, "restored": True, "hash": h,
            "query": str(cp.main.atom), "confidence": confidence}


# ---------------------------------------------------------------------- ingest
def _batches_in(path: str) -> set:
    out = set()
    for h in delta.history(path):
        b = h.get("batch")
        if b:
            out.add(b)
    return out


MAX_GAP = 100_000  # ticks; as `hypo run --max-gap`


def ingest(lake: str, tick: Optional[int], files: list[str], master: Optional[str] = None,
           max_gap: Optional[int] = MAX_GAP) -> dict:
    """Load producer files of a slice (tick None: every row says its tick) into `facts`;
    every row that cannot be read goes to `quarantine` (stage ingest).  Re-ingesting the
    same files for the same tick is a no-op (the batch id is in the commit metadata)."""
    L = Lake(lake).require()
    cp = L.program
    if tick is not None and tick < 0:
        raise InputError(f"tick {tick} is negative")
    if max_gap is not None and max_gap < 0:
        raise InputError(f"--max-gap {max_gap} is negative")
    if not files:
        if tick is None:
            raise InputError("no files given (pass FILE…, or --tick τ to ingest "
                             "<lake>/landing/tick=τ/)")
        land = os.path.join(L.root, "landing", f"tick={tick}")
        if not os.path.isdir(land):
            raise InputError(f"no files given and no landing directory {land}")
        files = sorted(os.path.join(land, f) for f in os.listdir(land) if is_data_file(f))
    check_files(files)
    files = list(files)
    spool = os.path.join(L.meta_dir, "spool")
    for name, size in clean_spool(spool):
        print(f"hypo lake: removed {name} ({size} bytes), the spool file of an ingest that "
              f"did not finish (killed)", file=sys.stderr)
    spooled = spool_streams(files, spool)
    try:
        return _ingest_files(L, cp, files, spooled, tick, master, max_gap)
    finally:
        for f in spooled:
            os.unlink(f)


def _ingest_files(L: Lake, cp, files: list[str], spooled: dict, tick: Optional[int],
                  master: Optional[str], max_gap: Optional[int] = MAX_GAP) -> dict:
    """ingest() of regular files (spooled: {copy: the name given} of pipes read once)."""
    shas = [file_sha256(f) for f in files]
    batch = hashlib.sha256(json.dumps({"tick": tick, "files": sorted(shas)}).encode()
                           ).hexdigest()[:24]
    fact_batches = _batches_in(L.path("facts"))
    facts_done = batch in fact_batches
    quar_done = batch in _batches_in(L.path("quarantine"))
    result: dict[str, Any] = {"batch": batch, "files": [spooled.get(f, os.path.abspath(f))
                                                        for f in files],
                              "tick": tick, "skipped": False}
    already = dict(skipped=True, accepted=0, rejected=0, by_tick={}, reasons={},
                   message=f"already ingested (batch {batch}), nothing to do")
    refused = set()
    if facts_done and quar_done and not any(b.startswith(f"{batch}-gap") for b in
                                            fact_batches):
        refused = _far_refused(L, batch)  # admitted by a later --max-gap at most once
    if facts_done and quar_done and not refused:
        result.update(already)
        return result
    parsed, unreadable = read_files([os.path.abspath(f) for f in files], cp, tick)
    rename_sources(parsed, spooled)
    # rows that give their own tick (a slice named by --tick, e.g. the DAG's, is not judged);
    # the completed ticks count as known: a tick right after a long quiet run is not far
    far = {} if tick is not None else far_ticks(_fact_ticks(L) | {L.last_tick()},
                                                set(parsed.tick), max_gap)
    if refused:  # the same files again, with a larger --max-gap: the rows refused before
        admit = refused - set(far)
        if not admit:
            result.update(already)
            return result
        parsed.keep_ticks(admit)
        parsed.rejected, unreadable = [], []  # quarantined by the first ingest of the batch
        batch = result["batch"] = f"{batch}-gap{max_gap}"
        facts_done, quar_done = batch in fact_batches, True
    parsed.reject_ticks(far)
    if (facts_done or quar_done) and (facts_done or not len(parsed)) and \
            (quar_done or not parsed.rejected):
        result.update(already)  # a clean (or all-bad) slice writes to one table only
        return result
    for f, sha in zip(files, shas):
        if os.path.abspath(f) in unreadable:
            d = os.path.join(L.meta_dir, "rejected")
            os.makedirs(d, exist_ok=True)
            dst = os.path.join(d, f"{sha[:16]}-{os.path.basename(spooled.get(f, f))}")
            if not os.path.exists(dst):
                shutil.copyfile(f, dst)
    for r in parsed.rejected:
        r["batch"] = batch
    if parsed.rejected and not quar_done:
        acts = []
        by: dict[int, list] = {}
        for r in parsed.rejected:
            by.setdefault(r["tick"], []).append(r)
        for t, rows in sorted(by.items()):
            data = pa.Table.from_pylist(rows, schema=delta.arrow_schema("quarantine"))
            acts.append(delta.write_file(L.path("quarantine"), "quarantine", data,
                                         f"tick={t}/stage=ingest", {"tick": str(t),
                                                                    "stage": "ingest"},
                                         name=f"ingest-{batch}-{uuid.uuid4().hex[:12]}.parquet"))
        _append_once(L, "quarantine", acts, batch,
                     {"batch": batch, "stage": "ingest", "tick": "" if tick is None else str(tick)})
    by_tick = Counter(parsed.tick)
    if len(parsed) and not facts_done:
        if not _write_facts_pandas(L, batch, parsed, master, tick):
            result.update(skipped=True, message="another ingest of these files for this tick "
                                                "committed first; nothing was added")
    done = L.done()
    late = sorted(t for t in by_tick if t in done or stretch_of(done, t) is not None)
    result.update(accepted=len(parsed), rejected=len(parsed.rejected),
                  by_tick={int(k): v for k, v in sorted(by_tick.items())},
                  reasons=dict(Counter(r["reason_code"] for r in parsed.rejected)),
                  unreadable_files=[spooled.get(u, u) for u in unreadable])
    if parsed.heartbeats:
        result["heartbeats"] = parsed.heartbeats
    if late:
        result["warning"] = (f"tick(s) {', '.join(map(str, late))} were already processed; re-run "
                             f"`hypo lake run --from {rerun_from(done, late)} --to "
                             f"{L.last_tick(done)}` to "
                             f"include these facts")
    return result


def _write_facts_pandas(L: Lake, batch: str, parsed, master: Optional[str],
                        tick: Optional[int]) -> bool:
    """The parsed rows of a batch as one Parquet file per tick (pyarrow, on the driver that
    parsed them), committed as one append.  File names are unique per writer, so a writer
    never replaces files another may commit."""
    import uuid

    rows: dict[int, list] = {}
    for i in range(len(parsed)):
        rows.setdefault(parsed.tick[i], []).append(i)
    schema = delta.arrow_schema("facts")
    acts = []
    for t, idx in sorted(rows.items()):
        data = pa.Table.from_pydict({
            "tick": [t] * len(idx), "pred": [parsed.pred[i] for i in idx],
            "args": [list(parsed.args[i]) for i in idx], "time": [parsed.time[i] for i in idx],
            "source": [parsed.source[i] for i in idx], "line": [parsed.line[i] for i in idx],
            "batch": [batch] * len(idx)}, schema=schema)
        acts.append(delta.write_file(L.path("facts"), "facts", data, f"tick={t}",
                                     {"tick": str(t)},
                                     name=f"ingest-{batch}-{uuid.uuid4().hex[:12]}.parquet"))
    return _append_once(L, "facts", acts, batch,
                        {"batch": batch, "tick": "" if tick is None else str(tick)})


def _append_once(L: Lake, kind: str, acts: list, batch: str, metadata: dict) -> bool:
    """Commit a batch's files as one append unless the batch is already in the table: two
    ingests of the same files (started together or seconds apart) give exactly one commit.
    The check and the commit are one optimistic transaction (version read + 1); on a
    conflict the check is repeated.  The loser removes its own files (unique names: no
    writer ever touches another's).  False: another writer committed the batch."""
    import random
    import time as _time

    for attempt in range(40):
        dt = L.table(kind)
        if any(h.get("batch") == batch for h in delta.commits(dt, L.path(kind))):
            for a in acts:
                try:
                    os.remove(os.path.join(L.path(kind), a.path))
                except OSError:
                    pass
            return False
        try:
            delta.commit(dt, kind, acts, mode="append", exclusive=True, metadata=metadata)
            return True
        except delta.CommitConflict:
            _time.sleep(random.uniform(0.01, 0.05) * (1 + attempt))
    raise LakeError(f"{kind}: could not append batch {batch} after 40 attempts (too many "
                    f"concurrent writers); run the ingest again")


def _commit_facts_df(L: Lake, df, batch: str, metadata: dict) -> int:
    """Spark writes the rows (partitioned by tick) into the facts table directory; delta-rs
    commits them as one append."""
    import uuid

    rel = f"ingest-{batch}-{uuid.uuid4().hex[:12]}"  # never another writer's directory
    target = os.path.join(L.path("facts"), rel)
    df.select("tick", "pred", "args", "time", "source", "line", "batch") \
        .write.mode("overwrite").partitionBy("tick").parquet(target)
    acts = []
    for d in sorted(os.listdir(target)):
        if d.startswith("tick="):
            acts.extend(delta.dir_actions(L.path("facts"), f"{rel}/{d}", {"tick": d[5:]}))
    if not acts:
        return -1
    if not _append_once(L, "facts", acts, batch, metadata):
        shutil.rmtree(target, ignore_errors=True)
        return 0
    return len(acts)


def append_facts(lake: str, tick: int, df, batch: Optional[str] = None) -> dict:
    """For producers on Spark: append a DataFrame (pred, args, time[, source, line]) as
    slice `tick` of the facts table (validated by the tick job like any other rows)."""
    import uuid

    from pyspark.sql import functions as F

    L = Lake(lake).require()
    batch = batch or uuid.uuid4().hex[:24]
    for c, t in (("source", "string"), ("line", "long")):
        if c not in df.columns:
            df = df.withColumn(c, F.lit(None).cast(t))
    df = df.withColumn("tick", F.lit(tick).cast("long")).withColumn("batch", F.lit(batch))
    n = _commit_facts_df(L, df, batch, {"batch": batch, "tick": str(tick)})
    return {"batch": batch, "files": n}


# ---------------------------------------------------------------------- ticks
def _executor(executor: Optional[str]) -> str:
    return executor or os.environ.get("HYPO_LAKE_EXECUTOR") or "auto"


def run_tick(lake: str, tick: int, master: Optional[str] = None, *, program: Optional[str] = None,
             executor: Optional[str] = None) -> dict:
    """S_{τ-1} + D|τ → S_τ and the tick's answers: Algorithm 1 as one relational plan, on
    Spark or on the driver (executor auto | spark | local), or the row engine on the driver
    (row, the reference); commits via delta-rs (jobs/tick/job.py)."""
    from jobs.tick import job as tickjob
    from jobs.tick.spark import planned_master, session

    L = Lake(lake).require()
    L.check_program(program)
    _ = L.program
    log = L.ticks_log()
    tickjob.preflight(L, tick, L.done(log), log)
    return tickjob.run_tick(L, tick, lambda: session(master), _executor(executor),
                            master=planned_master(master), log=log)


def run_range(lake: str, start: int, end: int, master: Optional[str] = None, *,
              program: Optional[str] = None, executor: Optional[str] = None,
              skip: bool = False) -> list[dict]:
    """run_ticks() to the end (every tick computed unless skip)."""
    return list(run_ticks(lake, start, end, master, program=program, executor=executor,
                          skip=skip))


def run_ticks(lake: str, start: int, end: int, master: Optional[str] = None, *,
              program: Optional[str] = None, executor: Optional[str] = None,
              skip: bool = True) -> Iterator[dict]:
    """Ticks start..end, one summary each as it completes; like `hypo run`, a quiet stretch
    (no facts, nothing to report: reasoning.run.session.quiet_stretch) is skipped in O(margin)
    and yields one summary whose counts carry `quiet_from` (not with --confidence: the
    arrival model is continued tick by tick)."""
    from reasoning.row.engine import Engine
    from reasoning.run.session import quiet_margin, quiet_stretch

    from jobs.tick import confidence
    from jobs.tick import job as tickjob

    from reasoning.stream.facts import MAX_TIME

    if end < start:
        raise LakeError(f"empty range: --from {start} is after --to {end}")
    if start < 0 or end >= MAX_TIME:
        raise LakeError(f"ticks are natural numbers below 2^60, not {start}..{end}")
    L = Lake(lake).require()
    L.check_program(program)
    log = L.ticks_log()
    done = L.done(log)
    tickjob.preflight(L, start, done, log)
    margin = None
    if skip and not confidence.enabled(L.program_info):
        margin = quiet_margin(Engine(L.program))
    quiet = 0  # completed ticks in a row before `t` without facts that reported nothing
    while margin is not None and quiet < margin and start - quiet - 1 in done \
            and _quiet(done[start - quiet - 1]):
        quiet += 1
    t = start
    while t <= end:
        if margin is not None and quiet >= margin:
            nxt = min([u for u in _fact_ticks(L) if u >= t] + [end + 1])
            q = quiet_stretch(margin, quiet, t, nxt)
            if q is not None:
                yield tickjob.run_quiet_stretch(L, t, q[1], q[0])
                t, quiet = q[1] + 1, 0
                continue
        s = run_tick(lake, t, master, program=program, executor=executor)
        quiet = quiet + 1 if _quiet(s) else 0
        yield s
        t += 1


def _quiet(row: dict) -> bool:
    """A completed tick (summary or `done` row) that had no facts and no hypothetical or
    definite answer (`hypo run` prints nothing for it)."""
    c = row["counts"]
    c = json.loads(c or "{}") if not isinstance(c, dict) else c
    return (not c.get("facts") and not c.get("definite") and not c.get("hypothetical")
            and "quiet_from" not in c)


def _far_refused(L: Lake, batch: str) -> set[int]:
    """The ticks of rows an ingest of `batch` quarantined as `far_tick`."""
    q = delta.read_arrow(L.path("quarantine"), "quarantine",
                         columns=["tick", "reason_code", "batch"])
    return {r["tick"] for r in q.to_pylist()
            if r["batch"] == batch and r["reason_code"] == "far_tick"}


def _fact_ticks(L: Lake) -> set[int]:
    """The ticks the facts table has rows for (its partitions)."""
    return {int(a["partition.tick"]) for a in fact_files(L)
            if a.get("partition.tick") is not None}


def default_range(lake: str) -> tuple[int, int]:
    """From the first tick not completed to the last tick with facts plus the program's
    horizon (when every hypothesis is decided), as `hypo run` does."""
    from reasoning.run.session import default_until
    from reasoning.row.engine import Engine

    L = Lake(lake).require()
    done = L.done()
    start = L.last_tick(done) + 1
    class _S:
        last_tick = max(_fact_ticks(L), default=-1)

    return start, default_until(Engine(L.program), _S())
