"""The lifecycle report of a range of completed ticks, read from the lake (no Spark): the
answers table tick by tick into reasoning.insight.lifecycle, the quarantine and dq tables, the
ticks log (the table versions each tick read and committed) and the stored program, drawn
by reasoning.insight.report.  `hypo lake report` and the DAG's publish task call it."""
from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from typing import Iterator, Optional

import pyarrow.parquet as pq

from reasoning.insight.lifecycle import Calibration, Lifecycles
from reasoning.insight.report import ReportData, render, write

from jobs.table import delta
from jobs.errors import LakeError
from jobs.table.store import DATA_TABLES, Lake, stretches


def _files_by_tick(L: Lake, kind: str, start: int, end: int) -> dict[int, list[str]]:
    dt = L.table(kind)
    out: dict[int, list[str]] = defaultdict(list)
    for a in delta.add_actions(dt, start, end):
        t = a.get("partition.tick")
        if t is None:
            continue
        t = int(t)
        if start <= t <= end:
            out[t].append(a["path"])
    return out


def _answers_by_tick(L: Lake, ticks: list[int], confidence: bool = False
                     ) -> Iterator[tuple[int, list[dict]]]:
    """(tick, the main query's answers in `hypo run` order) for each tick, reading one
    partition at a time (memory: one tick's answers): the columns the lifecycle needs (status,
    deadline, the answer_key and atom the tick wrote; query, substitution and confidence for
    the calibration), not the JSON lines."""
    if not ticks:
        return
    path = L.path("answers")
    files = _files_by_tick(L, "answers", ticks[0], ticks[-1])
    cols = ["sort_key", "status", "deadline", "answer_key", "atom"]
    if confidence:
        cols += ["query", "substitution", "confidence"]
    for t in ticks:
        rows: list[dict] = []
        for rel in files.get(t, ()):
            try:
                tb = pq.read_table(os.path.join(path, rel), columns=cols)
            except FileNotFoundError:
                raise delta.damaged_file(path, L.table("answers").version(),
                                         os.path.join(path, rel), "the file is missing") from None
            rows.extend(tb.to_pylist())
        rows.sort(key=lambda r: r["sort_key"])
        yield t, rows


def _quality(L: Lake, done: dict, ticks: list[int]) -> tuple[list[dict], dict]:
    """Per tick: facts, accepted, quarantined rows by reason (both stages; ingest rows land in
    the partition of their tick), and the Great Expectations results of the dq table."""
    lo, hi = (ticks[0], ticks[-1]) if ticks else (0, -1)
    q = delta.read_arrow(L.path("quarantine"), "quarantine", columns=["tick", "reason_code"])
    reasons: dict[int, Counter] = defaultdict(Counter)
    for r in q.to_pylist():
        if lo <= r["tick"] <= hi:
            reasons[r["tick"]][r["reason_code"] or "?"] += 1
    dq = delta.read_arrow(L.path("dq"), "dq", columns=["tick", "expectation", "kwargs",
                                                         "success", "element_count",
                                                         "unexpected_count"])
    checks: dict[int, list] = defaultdict(list)
    for r in dq.to_pylist():
        if lo <= r["tick"] <= hi:
            checks[r["tick"]].append(r)
    out, quarantined = [], {}
    for t in ticks:
        c = json.loads(done[t].get("counts") or "{}")
        n = sum(reasons[t].values())
        quarantined[t] = n
        failed = [f"{e['expectation']} {e.get('kwargs') or ''}: {e.get('unexpected_count')} of "
                  f"{e.get('element_count')} unexpected" for e in checks[t] if not e["success"]]
        out.append({"tick": t, "facts": c.get("facts", ""), "accepted": c.get("accepted", ""),
                    "quarantined": n, "reasons": dict(reasons[t]),
                    "dq_checked": len(checks[t]) if checks[t] else None, "dq_failed": failed})
    return out, quarantined


def _gaps(start: int, end: int, spans: list) -> tuple[int, Optional[int]]:
    """(number of ticks of start..end outside the spans, the first of them)."""
    n, first, at = 0, None, start
    for a, b in sorted(spans):
        if a > at:
            n += a - at
            first = at if first is None else first
        at = max(at, b + 1)
    if at <= end:
        n += end - at + 1
        first = at if first is None else first
    return n, first


def lake_report(lake: Optional[str], start: Optional[int] = None,
                end: Optional[int] = None) -> ReportData:
    """The report data of completed ticks start..end (default: 0, or the first tick whose
    answers `hypo lake vacuum` kept, .. the last completed)."""
    L = Lake(lake).require()
    log = L.ticks_log()
    done = L.done(log)
    last = L.last_tick(done)
    if last < 0:
        raise LakeError(f"no tick of the lake at {L.root} has completed yet (run `hypo lake "
                        f"tick 0`)")
    cut = L.answers_from(log)
    end = last if end is None else end
    if end < cut:
        raise LakeError(f"the answers of ticks {start or 0}..{end} were removed by `hypo lake "
                        f"vacuum --keep-answers` (the lake keeps them from tick {cut} on)")
    start = cut if start is None else start
    if start < 0 or end < start:
        raise LakeError(f"empty range: --from {start} --to {end}")
    cut_note = start < cut
    start = max(start, cut)
    ticks = sorted(t for t in done if start <= t <= end)  # not range(): --to may be 10¹¹
    if not ticks:
        raise LakeError(f"no completed tick in {start}..{end} (completed: 0..{last})")
    end = min(end, max(ticks))
    spans = [(max(a, start), min(b, end)) for a, b in stretches(done).items()
             if a <= end and b >= start]
    n_missing, first_missing = _gaps(start, end, [(t, t) for t in ticks] + spans)
    info = L.program_info
    conf = bool(info.get("confidence"))
    lcs = Lifecycles(label=lambda r: r["atom"], key=lambda r: r["answer_key"])
    cal = Calibration() if conf else None
    for t, objs in _answers_by_tick(L, ticks, conf):
        lcs.observe(t, objs)
        if cal is not None:
            for r in objs:
                if r["confidence"] is not None:
                    cal.observe(t, (r["query"], r["substitution"]), r["status"],
                                r["confidence"])
    quality, quarantined = _quality(L, done, ticks)
    notes = []
    if n_missing:
        notes.append(f"{n_missing} tick(s) of the range are not completed and are left out "
                     f"(first {first_missing})")
    if spans:
        notes.append("quiet stretches skipped by `hypo lake run` (no facts, nothing to "
                     "report): " + ", ".join(f"{a}..{b}" for a, b in sorted(spans)))
    if cut_note:
        notes.append(f"the answers of ticks before {start} were removed by `hypo lake vacuum "
                     f"--keep-answers`: the report starts at tick {start}")
    if start > 0:
        notes.append(f"answers announced before tick {start} count as announced at {start}")
    vcols = ("run", "facts_version", "prev_state_version", "state_version", "answers_version",
             "quarantine_version")
    d = ReportData(
        title=f"hypo lifecycle report: {info.get('main')}",
        source=f"lake {L.root}", start=start, end=end, lifecycles=lcs.finish(),
        quarantined=quarantined, quality=quality,
        quality_note="quarantined rows of each arrival tick (ingest and tick stages) by reason, "
                     "and the Great Expectations suite of the slice (the dq table)",
        program_text=L.program_text, program_hash=info["hash"],
        program_file=info.get("file") or "", query=info.get("main") or "",
        versions=[{"tick": t, **{k: done[t].get(k) for k in vcols}} for t in ticks],
        current_versions={k: L.table(k).version() for k in DATA_TABLES + ("ticks",)},
        notes=notes)
    if cal is not None:  # a lake made with --confidence (jobs/tick/confidence.py)
        d.calibration = cal.records(end)
        d.arrival_model = _arrival_model(L, done, end, L.state_from(log))
    return d


def _arrival_model(L: Lake, done: dict, tick: int, state_from: int) -> Optional[list]:
    """The arrival model's summary as S_tick's `model` row holds it."""
    from reasoning.insight.confidence import Confidence

    if tick < state_from:
        return None  # S_tick removed by `hypo lake vacuum --keep-state`
    v = done[tick].get("state_version")
    rows = delta.read_arrow(L.path("state"), "state", version=v, partitions={"tick": tick},
                            columns=["kind", "info"]).to_pylist()
    info = [r["info"] for r in rows if r["kind"] == "model"]
    if not info:
        return None
    c = Confidence(L.program)
    c.load(info[0])
    return c.model.summary()


def write_report(lake: Optional[str], out: str, start: Optional[int] = None,
                 end: Optional[int] = None) -> dict:
    """Render the report of start..end to `out` (atomically: a temporary name, then a rename)."""
    d = lake_report(lake, start, end)
    html = render(d)
    write(out, html)
    oc = d.lifecycles.outcomes()
    return {"path": os.path.abspath(out), "start": d.start, "end": d.end, "bytes": len(html),
            "answers": len(d.lifecycles.all), **oc,
            "pending_refuted": d.lifecycles.pending_refuted,
            "pending_open": d.lifecycles.pending_open}


REPORT_WINDOW = 500  # ticks in the DAG's report of a tick (HYPO_REPORT_TICKS)


def report_window() -> int:
    """HYPO_REPORT_TICKS (default 500): ticks in the DAG's report of a tick; 0: no report."""
    raw = os.environ.get("HYPO_REPORT_TICKS", "").strip()
    try:
        n = int(raw) if raw else REPORT_WINDOW
    except ValueError:
        raise LakeError(f"HYPO_REPORT_TICKS={raw!r} is not a number of ticks") from None
    if n < 0:
        raise LakeError(f"HYPO_REPORT_TICKS={raw!r} is negative")
    return n


def publish_report(lake: Optional[str], tick: int, window: Optional[int] = None) -> dict:
    """The DAG's report of tick τ: <lake>/reports/tick=τ.html over the last `window` ticks
    up to τ (default HYPO_REPORT_TICKS or 500); {"path": None} when the window is 0."""
    window = report_window() if window is None else window
    if window == 0:
        return {"path": None}
    L = Lake(lake).require()
    out = os.path.join(L.root, "reports", f"tick={tick}.html")
    return write_report(L.root, out, max(0, tick - window + 1), tick)
