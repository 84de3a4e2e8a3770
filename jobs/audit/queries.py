"""Answering users from the tables: a tick's answers, an answer's history, the lake's status."""
from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any, Optional

import pyarrow as pa
import pyarrow.compute as pc

from reasoning.language.errors import ProgramError

from jobs.table import delta
from jobs.errors import LakeError
from jobs.table.store import (DATA_TABLES, Done, Lake, TicksLog, fact_files, rerun_from,
                              stretch_of, stretches)

STATUSES = ("definite", "hypothetical", "pending")


def _done_row(L: Lake, tick: Optional[int], done: Optional[dict] = None) -> tuple[int, dict]:
    done = L.done() if done is None else done
    if tick is None:
        tick = L.last_tick(done)
        if tick < 0:
            raise LakeError(f"no tick of the lake at {L.root} has completed yet "
                            f"(run `hypo lake tick 0`)")
    row = done.get(tick)
    if row is None:
        last = L.last_tick(done)
        raise LakeError(f"tick {tick} has not been computed (completed ticks: "
                        f"{'0..' + str(last) if last >= 0 else 'none'})")
    return tick, row


def read_answers(lake: str, tick: Optional[int] = None, status: Optional[str] = None) -> list[dict]:
    """The main query's answers at a tick (default: the last), as `hypo run --format jsonl`
    prints them, read from the answers version that tick committed (time travel).  status:
    None = hypothetical and definite (`hypo run`'s default), 'pending' / 'hypothetical' /
    'definite' = only those, 'all' = all."""
    if status not in (None, "all") + STATUSES:
        raise LakeError(f"unknown status {status!r} (one of {', '.join(STATUSES)}, all)")
    L = Lake(lake).require()
    log = L.ticks_log()
    done = L.done(log)
    cut = L.answers_from(log)
    if tick is not None and tick < cut:
        raise LakeError(f"the answers of tick {tick} were removed by `hypo lake vacuum "
                        f"--keep-answers` (the lake keeps them from tick {cut} on)")
    q = stretch_of(done, tick) if tick is not None and tick not in done else None
    if q is not None:  # skipped: nothing to report there (reasoning.run.session.quiet_stretch)
        if status in (None, "hypothetical", "definite"):
            return []
        raise LakeError(f"tick {tick} is in the quiet stretch {q[0]}..{q[1]} that `hypo lake "
                        f"run` skipped (no facts, no hypothetical or definite answer): its "
                        f"pending answers were not computed; those of tick {q[1]} were "
                        f"(`--tick {q[1]}`), or re-run with `hypo lake run --from {q[0]} "
                        f"--to {q[1]} --no-skip`")
    tick, row = _done_row(L, tick, done)
    t = delta.read_arrow(L.path("answers"), "answers", version=row["answers_version"],
                         partitions={"tick": tick}, columns=["sort_key", "json", "status"])
    rows = sorted(t.to_pylist(), key=lambda r: r["sort_key"])
    out = []
    for r in rows:
        if status is None and r["status"] == "pending":
            continue
        if status not in (None, "all") and r["status"] != status:
            continue
        out.append(json.loads(r["json"]))
    return out


def _atom_binding(L: Lake, atom: str) -> dict:
    from reasoning.language.parser import parse_atom
    from reasoning.language.syntax import Var

    cp = L.program
    try:
        a = parse_atom(atom, "<atom>", cp.program.rigid)
    except ProgramError as e:
        raise LakeError(f"cannot parse {atom!r}: {e.message}") from None
    q = cp.main.atom
    if a.pred != q.pred or len(a.args) != len(q.args) or (a.time is None) != (q.time is None):
        raise LakeError(f"{atom} is not an instance of the lake's query {q}")
    want: dict[str, Any] = {}
    for qa, aa in zip(q.args, a.args):
        if isinstance(aa, Var):
            raise LakeError(f"{atom} is not ground: give a value for {aa.name}")
        if isinstance(qa, Var):
            if want.setdefault(qa.name, aa.value) != aa.value:
                raise LakeError(f"{atom} is not an instance of the lake's query {q}")
        elif qa.value != aa.value:
            raise LakeError(f"{atom} is not an instance of the lake's query {q}")
    if q.time is not None:
        if a.time.var is not None:
            raise LakeError(f"{atom} is not ground: give a timestamp")
        if q.time.var is None:
            if q.time.offset != a.time.offset:
                raise LakeError(f"{atom} is not an instance of the lake's query {q}")
        else:
            want[q.time.var] = a.time.offset
    return want


def _covers(obj: dict, want: dict) -> bool:
    sub, exc = obj["substitution"], obj["excluded"]
    floor = obj.get("time_from", {})
    for v, val in want.items():
        if v in sub:
            if sub[v] != val:
                return False
        elif val in exc.get(v, []) or (v in floor and val < floor[v]):
            return False
    for combo in obj.get("excluded_combinations", []):
        if all(v in want and want[v] == c for v, c in combo.items()):
            return False
    return True


def _may_cover(subs: pa.ChunkedArray, want: dict) -> pa.Array:
    """Which answers can cover the ground answer `want` by their substitution alone (the
    `substitution` column's JSON objects parsed by Arrow, not one json.loads a row): every
    wanted variable unbound or bound to its value.  A superset of `_covers`, which decides
    on the rows kept; a variable whose column Arrow typed otherwise than its value keeps
    every row, and text Arrow cannot parse keeps them all."""
    n = len(subs)
    keep = pa.array([True] * n)
    if n == 0 or not want:
        return keep
    import io

    from pyarrow import json as pj

    text = "\n".join(s if s else "{}" for s in subs.to_pylist()).encode("utf-8", "surrogatepass")
    try:
        parsed = pj.read_json(io.BytesIO(text), parse_options=pj.ParseOptions(
            newlines_in_values=False))
    except (pa.ArrowException, ValueError):
        return keep
    if parsed.num_rows != n:
        return keep
    for v, val in want.items():
        if v not in parsed.column_names:
            continue  # unbound in every answer
        col = parsed.column(v)
        if pa.types.is_string(col.type) and isinstance(val, str):
            same = pc.equal(col, val)
        elif pa.types.is_integer(col.type) and type(val) is int and -2**63 <= val < 2**63:
            same = pc.equal(col, pa.scalar(val, pa.int64()))
        else:
            continue  # typed otherwise (e.g. a string Arrow read as a timestamp): keep
        keep = pc.and_(keep, pc.or_(pc.is_null(col), pc.fill_null(same, False)))
    return keep.combine_chunks() if isinstance(keep, pa.ChunkedArray) else keep


def history(lake: str, atom: str) -> list[dict]:
    """The lifecycle of one ground answer across the completed ticks: per tick the answer
    covering it (exact = the answer is about exactly this instance, else a schematic answer
    covers it) and the event: first seen, status changes, confirmed (definite), refuted
    (no answer covers it any more before it became definite)."""
    L = Lake(lake).require()
    want = _atom_binding(L, atom)
    log = L.ticks_log()
    cut = L.answers_from(log)  # earlier answers removed by `hypo lake vacuum --keep-answers`
    done = {t: r for t, r in L.done(log).items() if t >= cut}
    if not done:
        return []
    answers = delta.TickFiles(L.path("answers"), "answers")
    out: list[dict] = []
    prev: Optional[dict] = None
    for tick in sorted(done):
        t = answers.read(tick, ["sort_key", "substitution", "json"])
        t = t.filter(_may_cover(t.column("substitution"), want))
        rows = sorted(zip(t.column("sort_key").to_pylist(), t.column("json").to_pylist()))
        objs = [json.loads(j) for _, j in rows]
        hits = [o for o in objs if _covers(o, want)]
        if not hits:
            if prev is not None and prev["status"] != "definite":
                out.append({"tick": tick, "status": "refuted", "event": "refuted", "answer": atom,
                            "exact": False, "evidence": [], "hypotheses": [], "deadline": None})
                prev = None
            continue
        order = {"definite": 0, "hypothetical": 1, "pending": 2}
        hits.sort(key=lambda o: (order[o["status"]],
                                 -sum(1 for v in want if v in o["substitution"])))
        o = hits[0]
        from jobs.tick.job import format_atom

        exact = all(v in o["substitution"] for v in want)
        if prev is None:
            event = f"first seen ({o['status']})" if not out else f"seen again ({o['status']})"
        elif o["status"] != prev["status"]:
            event = "confirmed (definite)" if o["status"] == "definite" else \
                f"became {o['status']}"
        else:
            event = "unchanged"
        entry = {"tick": tick, "status": o["status"], "event": event, "answer": format_atom(o),
                 "exact": exact, "evidence": o["evidence"], "hypotheses": o["hypotheses"],
                 "deadline": o["deadline"]}
        out.append(entry)
        prev = entry
        if o["status"] == "definite":
            break  # definite answers are final (and forgotten afterwards)
    return out


def late_facts(fact_adds: list, done: dict) -> dict[int, int]:
    """{τ: rows} of completed ticks whose facts partition holds more rows now than the tick
    read (its counts' `facts`): facts ingested after — or while — it ran, which its answers
    do not include (an ingest that finds its tick done says so; one racing the tick cannot).
    Partitions with a file without row statistics are not judged."""
    rows: Counter = Counter()
    unknown = set()
    for a in fact_adds:
        t = a.get("partition.tick")
        if t is None:
            continue
        n = a.get("num_records")
        if n is None:
            unknown.add(int(t))
        else:
            rows[int(t)] += int(n)
    out = {}
    counts = done.column("counts") if isinstance(done, Done) else [r.get("counts") for r in
                                                                   done.values()]
    for t, c in zip(list(done), counts):
        if t not in rows and t not in unknown:
            continue  # no facts for the tick: none came late
        read = json.loads(c or "{}").get("facts")
        if t not in unknown and read is not None and rows.get(t, 0) > int(read):
            out[t] = rows[t] - int(read)
    for a, b in stretches(done).items():  # a skipped quiet stretch read no facts at all
        for t in set(rows) | unknown:
            if a <= t < b and t not in done and rows.get(t, 0) + (t in unknown) > 0:
                out[t] = rows.get(t, 0) or 1
    return dict(sorted(out.items()))


def late_rerun_from(lake: str, ticks) -> int:
    """store.rerun_from() of a lake: where a re-run including facts of `ticks` starts."""
    return rerun_from(Lake(lake).require().done(), ticks)


def late_ticks(lake: str) -> dict[int, int]:
    """late_facts() of a lake: {τ: rows ingested for completed tick τ after it read them}."""
    L = Lake(lake).require()
    return late_facts(fact_files(L), L.done())


def _stale(L: Lake, log: TicksLog, done: Done) -> list[int]:
    """Completed ticks τ whose S_{τ-1} (the state version it read, by digest) is not the one
    tick τ-1 now has.  The digests of the state versions come from the ticks log (the
    `state` and `done` rows of every run), the table's commit history only for a version the
    log lacks: reading the whole history took ~0.4 ms a commit (40 s at 10⁵ ticks)."""
    ticks = list(done)
    prev_v, sdig = done.column("prev_state_version"), done.column("state_digest")
    table = log.table
    rows = table.filter(pc.is_in(table["phase"], pa.array(["state", "done"]))).select(
        ["state_version", "state_digest"]).to_pylist()
    digests = {r["state_version"]: r["state_digest"] for r in rows
               if r["state_version"] is not None}
    cur = dict(zip(ticks, sdig))
    if any(v is not None and v >= 0 and v not in digests for v in prev_v):
        for h in delta.history(L.path("state")):
            digests.setdefault(h["version"], h.get("digest"))
    out = []
    for t, v in zip(ticks, prev_v):
        p = cur.get(t - 1)
        used = digests.get(v)
        if t > 0 and p is not None and used is not None and used != p:
            out.append(t)
    return sorted(out)


def lake_status(lake: str) -> dict:
    L = Lake(lake).require()
    info = L.program_info
    log = L.ticks_log()
    done = L.done(log)
    last = L.last_tick(done)
    versions, rows, missing = {}, {}, {}
    for t in DATA_TABLES + ("ticks",):
        dt = L.table(t)
        versions[t] = dt.version()
        acts = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
        rows[t] = sum(a.get("num_records") or 0 for a in acts)
        gone = sum(not os.path.exists(os.path.join(L.path(t), a["path"])) for a in acts)
        if gone:
            missing[t] = gone
    q = delta.read_arrow(L.path("quarantine"), "quarantine", columns=["stage", "reason_code"])
    by_reason = Counter(r["reason_code"] for r in q.to_pylist())
    by_stage = Counter(r["stage"] for r in q.to_pylist())
    incomplete = sorted(t for t, p in log.latest_phases().items() if p != "done")
    # a tick is stale if the S_{τ-1} it read is not (by digest) the one tick τ-1 now has
    # (tick τ-1 was re-run over different facts): re-run from it
    stale = _stale(L, log, done)
    ft = fact_files(L)
    fticks = sorted({a.get("partition.tick") for a in ft if a.get("partition.tick") is not None})
    late = late_facts(ft, done)
    last_row = done.get(last)
    return {
        "lake": L.root,
        "program": {"file": info.get("file"), "hash": info["hash"], "query": info.get("main"),
                    "confidence": bool(info.get("confidence"))},
        "last_tick": last,
        "completed_ticks": sorted(done),
        "incomplete_ticks": incomplete,
        "stale_ticks": stale,
        "late_facts": late,
        "late_rerun_from": rerun_from(done, late) if late else None,
        "quiet_stretches": sorted([a, b] for a, b in stretches(done).items()),
        "state_from": L.state_from(log),
        "answers_from": L.answers_from(log),
        "fact_ticks": fticks[:1] + fticks[-1:] if fticks else [],
        "versions": versions,
        "rows": rows,
        "missing_files": missing,
        "last": None if last_row is None else {
            "state_version": last_row["state_version"],
            "answers_version": last_row["answers_version"],
            "state_digest": last_row["state_digest"],
            "answers_digest": last_row["answers_digest"],
            "counts": json.loads(last_row["counts"] or "{}")},
        "quarantine": {"total": sum(by_reason.values()), "by_reason": dict(sorted(by_reason.items())),
                       "by_stage": dict(sorted(by_stage.items()))},
    }
