"""`hypo lake verify`: the stored program, every table's Delta log and data files, and the
ticks log against the tables, each problem with what to do (issue 11.6).

Read-only. Problems are listed in the order to fix them: the program, then each table's
log (a table whose log cannot be read is not checked further), then its files, then the
ticks log's consistency with the state and answers tables.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from typing import Optional

import pyarrow as pa

from jobs.table import damage, delta
from jobs.table.damage import Problem
from jobs.errors import LakeDamaged, LakeError
from schemas.lake import required
from jobs.table.store import DATA_TABLES, Lake, read_program_info, rerun_advice, rerunnable

TABLES = DATA_TABLES + ("ticks",)


def _program_problems(L: Lake) -> list[Problem]:
    """_hypo/program.json and program.tdl: readable, the hash matches, it compiles."""
    try:
        info = read_program_info(L.meta_dir)
    except LakeDamaged as e:
        if not os.path.exists(os.path.join(L.meta_dir, "program.json")):
            return [Problem("_hypo", None, "_hypo/program.json", "the file is missing",
                            f"restore it from a backup, or run `hypo lake init --program "
                            f"<its program> --lake {L.root}` again: it rewrites the file for "
                            f"the program the tables were made for (_hypo/program.tdl)")]
        return [_as_problem(str(e), "_hypo/program.json")]
    try:
        text = L.program_text
    except LakeDamaged as e:
        return [_as_problem(str(e), "_hypo/program.tdl")]
    h = hashlib.sha256(text.encode()).hexdigest()
    if h != info["hash"]:
        return [Problem("_hypo", None, "_hypo/program.tdl",
                        f"the stored program was modified (sha256 {h[:12]}, recorded "
                        f"{info['hash'][:12]})", "restore it from a backup; a lake computes "
                        "with one program only")]
    try:
        L.program  # noqa: B018 - compiles it
    except LakeError as e:
        return [Problem("_hypo", None, "_hypo/program.tdl", str(e),
                        "restore the program from a backup")]
    return []


def _as_problem(msg: str, file: str) -> Problem:
    what, _, todo = msg.partition("; ")
    what = what.split(": ", 1)[-1]
    return Problem("_hypo", None, file, what, todo or "restore it from a backup")


def _file_todo(kind: str, pv: dict) -> str:
    """What to do about a missing or unreadable data file of table `kind`."""
    t = pv.get("tick")
    if kind in ("state", "answers", "dq") or (kind == "quarantine" and pv.get("stage") == "tick"):
        return (f"restore it from a backup, or re-run the tick (`hypo lake run --from {t} --to "
                f"{t}`; it rewrites partition tick={t}, and `hypo lake status` then names any "
                f"later tick to re-run)")
    if kind == "facts":
        return (f"restore it from a backup: these facts of slice {t} are lost from the lake "
                f"(ticks computed before the loss keep their results; a re-run of tick {t} "
                f"would not see them)")
    if kind == "quarantine":
        return "restore it from a backup: these quarantined rows are lost"
    if kind == "current":
        return ("restore it from a backup, or remove the `current` table: the next tick starts "
                "a new one (the change feed restarts there; the answers table keeps every tick)")
    return "restore it from a backup (the ticks log records which ticks completed)"


def _file_problems(L: Lake, kind: str, dt, deep: bool = False) -> tuple[list[Problem], int]:
    """Every data file of the table's current version: present, the recorded size, a
    readable Parquet footer with the recorded row count (deep: and data that decodes)."""
    path = L.path(kind)
    out = []
    adds = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    parts = [c[len("partition."):] for c in (adds[0] if adds else {}) if
             c.startswith("partition.")]
    for a in adds:
        full = os.path.join(path, a["path"])
        why = damage.data_file_problem(full, a.get("size_bytes"), a.get("num_records"), deep,
                                       tuple(required(kind)))
        if why is None and deep and kind == "state":  # columns each kind of row needs
            import pyarrow.parquet as pq

            from jobs.table.state import state_rows_problem

            bad = state_rows_problem(pq.read_table(full))
            why = f"{bad} (a damaged file)" if bad else None
        if why:
            pv = {p: a.get(f"partition.{p}") for p in parts}
            out.append(Problem(damage.label(path), dt.version(), damage.rel(full, path), why,
                               _file_todo(kind, pv)))
    return out, len(adds)


def _change_data_problems(path: str, deep: bool) -> list[Problem]:
    """The change data files the kept commits of the `current` table name (its feed, which
    `hypo lake changes` reads): present, the recorded size, readable Parquet."""
    out = []
    logdir = os.path.join(path, "_delta_log")
    for name in sorted(os.listdir(logdir)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(logdir, name), encoding="utf-8") as fh:
            for line in fh:
                cdc = json.loads(line).get("cdc") if line.strip() else None
                if not cdc:
                    continue
                full = os.path.join(path, cdc["path"])
                why = damage.data_file_problem(full, cdc.get("size"), None, deep)
                if why:
                    out.append(Problem(
                        damage.label(path), int(name[:-5]), damage.rel(full, path),
                        why + " (a change data file: `hypo lake changes` across this version "
                        "fails)", _file_todo("current", {})))
    return out


def _run_of(path: str) -> Optional[str]:
    m = re.search(r"-([0-9a-f]{12})(?:/|\.parquet$)", path)
    return m.group(1) if m else None


def _counts(row: dict) -> dict:
    """A `done` row's counts (a JSON object; {} if unreadable)."""
    try:
        c = json.loads(row.get("counts") or "{}")
    except ValueError:
        return {}
    return c if isinstance(c, dict) else {}


def _no_answers(row: dict) -> bool:
    """A `done` row of a tick that wrote no answers (its counts say 0)."""
    return _counts(row).get("answers") == 0


def _writers(row: dict, kind: str) -> set:
    """The runs whose files a completed tick's partition may hold: the run that completed
    it, and the run whose commit it adopted (a delta-spark run on the same inputs as an
    earlier run keeps that run's commit: jobs/table/spark_delta.py)."""
    adopted = _counts(row).get("adopted_from")
    return {row["run"]} | ({adopted[kind]} if isinstance(adopted, dict) and
                           adopted.get(kind) else set())


def _tick_problems(L: Lake, heads: dict) -> list[Problem]:
    """The ticks log against the tables: each completed tick's versions exist, and the
    head's partition tick=τ of state and answers is the one the completing run wrote."""
    log = L.ticks_log()
    done = L.done(log)
    latest = log.latest_phases()
    cut = L.state_from(log)
    acut = L.answers_from(log)
    out = []
    parts: dict[str, dict[int, set]] = {}
    for kind in ("state", "answers"):
        by: dict[int, set] = {}
        if kind in heads:
            for a in pa.table(heads[kind].get_add_actions(flatten=True)).to_pylist():
                t = a.get("partition.tick")
                if t is not None:
                    by.setdefault(int(t), set()).add(_run_of(a["path"]))
        parts[kind] = by
    last = L.last_tick(done)
    for t, r in sorted(done.items()):
        if latest[t] != "done":
            continue  # a later run of τ did not finish: `status` lists it as incomplete
        for kind, vkey in (("state", "state_version"), ("answers", "answers_version")):
            if kind not in heads:
                continue
            head_v = heads[kind].version()
            v = r.get(vkey)
            redo = (f"re-run the tick (`hypo lake run --from {t} --to {max(t, last)}`)"
                    if rerunnable(t, cut) else
                    f"S_{t - 1} was removed by `hypo lake vacuum`: "
                    + rerun_advice(t, cut, last))
            if v is not None and v > head_v:
                out.append(Problem(kind, v, f"{kind}/tick={t}",
                                   f"tick {t} completed at version {v}, but the table ends at "
                                   f"version {head_v}", redo))
                continue
            runs = parts[kind].get(t)
            if not runs and kind == "answers" and _no_answers(r):
                continue  # a tick without answers writes no answers partition
            if not runs and t < (cut if kind == "state" else acut):
                continue  # removed by `hypo lake vacuum --keep-state/--keep-answers`
            if not runs:
                out.append(Problem(kind, head_v, f"{kind}/tick={t}",
                                   f"tick {t} completed (run {r['run']}) but the table has no "
                                   f"partition tick={t}", redo))
            elif not runs & _writers(r, kind) and runs != {None}:
                out.append(Problem(kind, head_v, f"{kind}/tick={t}",
                                   f"partition tick={t} was written by run "
                                   f"{', '.join(sorted(x for x in runs if x))}, but the ticks "
                                   f"log says run {r['run']} completed tick {t}", redo))
    return out + _lost_commits(L, heads, done, latest)


def _lost_commits(L: Lake, heads: dict, done, latest: dict) -> list[Problem]:
    """A table whose last commits are gone looks whole (issue 44.11): the facts a tick read,
    the quarantine rows a tick wrote (versions in the ticks log), and each completed tick's
    data-quality rows (its record _hypo/dq/tick=τ.json) must still be there."""
    out = []
    for kind, col, todo in (
            ("facts", "facts_version",
             "restore the commit file from a backup: the slices it added are lost from the "
             "lake (`hypo lake ingest` of the same files adds them again), then re-run the "
             "ticks from the first one that read them"),
            ("quarantine", "quarantine_version",
             "restore the commit file from a backup, or re-run the tick: it writes its "
             "quarantine rows again")):
        if kind not in heads:
            continue
        head_v = heads[kind].version()
        lost = done.beyond(col, head_v)
        if lost:
            t, v = max(lost, key=lambda tv: tv[1])
            what = "read" if kind == "facts" else "wrote"
            out.append(Problem(kind, v, f"{kind}/_delta_log",
                               f"tick {t} {what} version {v}, but the table ends at version "
                               f"{head_v} (a commit file is missing)", todo))
    if "dq" in heads:
        have = {int(a["partition.tick"]) for a in
                pa.table(heads["dq"].get_add_actions(flatten=True)).to_pylist()
                if a.get("partition.tick") is not None}
        d = os.path.join(L.meta_dir, "dq")
        for t in sorted(done):
            if latest.get(t) != "done" or t in have:
                continue
            try:
                with open(os.path.join(d, f"tick={t}.json"), encoding="utf-8") as fh:
                    rows = json.load(fh).get("expectations")
            except (OSError, ValueError):
                continue  # no record to compare with (a tick of an older version)
            if rows:
                out.append(Problem("dq", heads["dq"].version(), f"dq/tick={t}",
                                   f"tick {t} recorded {len(rows)} data-quality rows "
                                   f"(_hypo/dq/tick={t}.json), but the table has no partition "
                                   f"tick={t} (a commit file is missing)",
                                   f"re-run the tick (`hypo lake run --from {t} --to {t}`), "
                                   f"or restore the commit file from a backup"))
                break  # the first one: the others follow from the same loss
    return out


def verify(lake: str, deep: bool = False) -> dict:
    """Every problem of the lake (empty list: nothing damaged) and what was checked (deep:
    every data file of the tables' current versions is decoded, not only its footer)."""
    L = Lake(lake)
    if not os.path.isdir(L.meta_dir) and not any(os.path.isdir(L.path(t)) for t in TABLES):
        L.require()  # LakeMissing: no lake here at all
    problems: list[Problem] = []
    problems += _program_problems(L)
    heads = {}
    checked = {}
    # with the change feed's table (issue 43.3) when the lake has one: derived from the
    # answers, so its damage loses no answer, but `hypo lake changes` and every tick's
    # catch-up read it
    feed = ("current",) if delta.is_table(L.path("current")) else ()
    for kind in TABLES + feed:
        path = L.path(kind)
        if not os.path.isdir(path):
            problems.append(Problem(damage.label(path), None, damage.rel(path, path),
                                    "the table is missing", "restore it from a backup"))
            continue
        logp = damage.log_problems(path)
        if kind == "current":  # derived: removing it is a way out too
            logp = [dataclasses.replace(p, todo=_file_todo(kind, {})) for p in logp]
        problems += logp
        if logp:
            continue
        try:
            dt = delta.open_table(path)
        except LakeError as e:
            problems.append(Problem(damage.label(path), None, damage.rel(path, path), str(e),
                                    _file_todo(kind, {}) if kind == "current" else
                                    "restore the table's _delta_log from a backup"))
            continue
        heads[kind] = dt
        fp, n = _file_problems(L, kind, dt, deep)
        problems += fp + (_change_data_problems(path, deep) if kind == "current" else [])
        checked[damage.label(path)] = {"version": dt.version(), "files": n}
    if "ticks" in heads and not any(p.table == "_hypo/ticks" for p in problems):
        try:
            problems += _tick_problems(L, heads)
        except LakeError as e:
            problems.append(Problem("_hypo/ticks", None, "_hypo/ticks", str(e),
                                    "restore it from a backup"))
    return {"lake": L.root, "ok": not problems, "checked": checked,
            "problems": [p.as_dict() for p in problems], "lines": [p.line() for p in problems]}


__all__ = ["verify"]
