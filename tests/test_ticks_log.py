"""The ticks log read in Arrow (jobs.table.store.TicksLog, Done): the same `done` rows, last
completed tick, quiet stretches, vacuum cuts and late facts as the row-by-row reading it
replaced, on random logs (re-runs, interleaved runs, stretches, vacuums)."""
from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.table import delta
from jobs.audit.queries import late_facts
from jobs.table.store import PHASES, Done, Lake, TicksLog, stretches


def _old_done(rows: list[dict]) -> dict:
    out = {}
    for r in sorted(rows, key=lambda r: (r["ts"], r["tick"], PHASES.index(r["phase"])
                                         if r["phase"] in PHASES else 9)):
        if r["phase"] == "done":
            out[r["tick"]] = r
    return out


@st.composite
def logs(draw):
    schema = delta.arrow_schema("ticks")
    rows, clock = [], 0
    for _ in range(draw(st.integers(0, 40))):
        clock += draw(st.integers(0, 2))  # equal timestamps happen (millisecond clock)
        tick = draw(st.integers(0, 25))
        kind = draw(st.sampled_from(["run", "run", "run", "partial", "stretch", "vacuum"]))
        run = f"r{len(rows):04d}"
        ts = f"2026-11-25T07:00:{clock:02d}.000+00:00"
        counts: dict = {"facts": draw(st.integers(0, 3))}
        phases = list(PHASES)
        if kind == "partial":
            phases = phases[:draw(st.integers(1, 3))]
        elif kind == "stretch":
            counts = {"facts": 0, "quiet_from": max(0, tick - draw(st.integers(1, 5)))}
        elif kind == "vacuum":
            phases = ["vacuum"]
            counts = {"state_from": tick, "answers_from": draw(st.integers(0, tick))}
        for ph in phases:
            rows.append({"tick": tick, "run": run, "phase": ph, "ts": ts, "program": "h",
                         "state_version": len(rows), "answers_version": len(rows),
                         "counts": json.dumps(counts, sort_keys=True)})
    table = pa.Table.from_pylist([{k: r.get(k) for k in schema.names} for r in rows],
                                 schema=schema)
    return rows, table


@settings(max_examples=300, deadline=None)
@given(logs(), st.lists(st.tuples(st.integers(0, 25), st.one_of(st.none(),
                                                              st.integers(0, 5))), max_size=8))
def test_arrow_log_reads_as_the_rows_did(log, fact_files):
    rows, table = log
    tl = TicksLog(table)
    old = _old_done(rows)
    new = Lake("/nonexistent").done(tl)
    assert isinstance(new, Done)
    assert sorted(new) == sorted(old) and len(new) == len(old)
    for t in old:  # the latest row of a tick (equal timestamps: the later-logged one or
        assert new[t]["ts"] == old[t]["ts"]  # another of the same instant)
    assert dict(new.items()).keys() == old.keys()
    if all(sum(1 for r in rows if r["tick"] == t and r["phase"] == "done") <= 1 for t in old):
        assert stretches(new) == stretches(old)
        # the numpy scan (Done) against the tick-by-tick walk (a plain dict)
        assert Lake("/nonexistent").last_tick(new) == Lake("/nonexistent").last_tick(old)
        adds = [{"partition.tick": t, "num_records": n} for t, n in fact_files]
        assert late_facts(adds, new) == late_facts(adds, old)
    for kind in ("state", "answers"):
        key = f"{kind}_from"
        want = max([json.loads(r["counts"]).get(key, 0) for r in rows if r["phase"] == "vacuum"]
                   + [0])
        assert Lake("/nonexistent").kept_from(kind, tl) == want
        assert Lake("/nonexistent").kept_from(kind, rows) == want
    assert [r["run"] for r in tl] == [r["run"] for r in sorted(
        rows, key=lambda r: (r["ts"], r["tick"], PHASES.index(r["phase"])
                             if r["phase"] in PHASES else 9))]
    assert Counter(r["tick"] for r in tl) == Counter(r["tick"] for r in rows)
    latest: dict = {}
    for r in tl:  # the rows in logged order: a tick's last phase row
        if r["phase"] in PHASES:
            latest[r["tick"]] = r["phase"]
    assert tl.latest_phases() == latest
