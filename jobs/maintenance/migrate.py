"""`hypo lake migrate`: a lake's state table from hypo-state/1 to the current layout."""
from __future__ import annotations

import json
import os
import shutil
from typing import Optional

import pyarrow as pa

from reasoning.util.atomic import write_json

from jobs.table import delta
from jobs.table.store import Lake
from schemas.lake import STATE_FORMAT


def _v1_answers(cp, rows: list[dict]) -> tuple[list, list]:
    """Answers and window facts of a hypo-state/1 state (binding / evidence_idx / nogoods
    as JSON by variable name)."""
    from reasoning.semantics.answer import Answer
    from reasoning.semantics.patterns import Fact, compile_templates

    tps = compile_templates(cp.queries)
    answers, window = [], []
    for r in rows:
        if r["kind"] == "fact":
            window.append(Fact(r["pred"], tuple(r["args"]), int(r["time"])))
        elif r["kind"] == "answer":
            tp = tps[int(r["template"])]
            idx = {n: i for i, n in enumerate(tp.names)}
            b = [None] * len(tp.names)
            for n, v in json.loads(r["binding"]).items():
                b[idx[n]] = v
            ng = frozenset(tuple(sorted((idx[v], c) for v, c in n))
                           for n in json.loads(r["nogoods"]))
            answers.append(Answer(tp.tid, tuple(b), frozenset(int(i) for i in r["evidence_idx"]),
                                  ng))
    return answers, window


def migrate(lake: str, master: Optional[str] = None) -> dict:
    """Convert the state table of a lake written by an earlier version (hypo-state/1: one
    overwrite per tick, rows in the row engine's form) to hypo-state/2 (one partition per
    tick, the set-at-a-time layout).  Every completed tick's S_τ is converted and committed
    as its own version; the ticks log is repointed at them; the old table is kept under
    _hypo/state-v1/.  Facts, answers and quarantine keep their layout."""
    import pyarrow.parquet as pq

    from reasoning.columnar import ColumnarEngine

    from jobs.table.state import answer_state_rows
    from jobs.tick.job import STATE_FILE_COLS, digest_files

    L = Lake(lake).require()
    cur = L.path("state")
    if "vals" in delta.table_columns(L.table("state")):
        return {"migrated": False, "message": f"the lake at {L.root} already has the current "
                                              f"layout ({STATE_FORMAT}): nothing to do"}
    cp = L.program
    eng = ColumnarEngine(cp)
    log = L.ticks_log()
    done = L.done(log)
    tmp = cur + ".migrating"
    if os.path.exists(tmp):
        shutil.rmtree(tmp)
    delta.create_table(tmp, "state", {"program": L.program_info["hash"], "migrated": "v1"})
    new_rows: dict[int, dict] = {}
    for tick in sorted(done):
        row = done[tick]
        old = delta.open_table(cur, row["state_version"])
        rows = []
        for a in pa.table(old.get_add_actions(flatten=True)).to_pylist():
            rows.extend(pq.read_table(os.path.join(cur, a["path"])).to_pylist())
        answers, window = _v1_answers(cp, rows)
        data = pa.Table.from_pylist(answer_state_rows(eng, answers, window, cp),
                                    schema=delta.arrow_schema("state", with_partitions=False))
        rel = f"tick={tick}/migrated"
        act = delta.write_file(tmp, "state", data, rel, {"tick": str(tick)},
                               name=f"v1-{row['state_version']}.parquet")
        n, dg, _ = digest_files([os.path.join(tmp, act.path)], STATE_FILE_COLS)
        dt = delta.open_table(tmp)
        v = delta.commit(dt, "state", [act], mode="overwrite",
                         partition_filters=[("tick", "=", str(tick))],
                         metadata={"tick": str(tick), "run": "migrate", "digest": dg,
                                   "program": cp.text_hash})
        new_rows[tick] = {"state_version": v, "state_digest": dg, "state_rows": n}
    backup = os.path.join(L.meta_dir, "state-v1")
    if os.path.exists(backup):
        shutil.rmtree(backup)
    os.replace(cur, backup)
    os.replace(tmp, cur)
    for tick in sorted(done):
        row = dict(done[tick])
        n = new_rows[tick]
        prev = new_rows.get(tick - 1, {}).get("state_version", -1)
        counts = json.loads(row.get("counts") or "{}")
        counts["state_rows"] = n["state_rows"]
        # repoint: the latest done row of the tick names the migrated version
        L.log(tick, f"migrate-{row['run']}"[:24], "done", **{
            **{k: v for k, v in row.items()
               if k not in ("tick", "run", "phase", "ts", "program", "counts")},
            "state_version": n["state_version"], "state_digest": n["state_digest"],
            "prev_state_version": prev}, counts=counts)
    with open(os.path.join(L.meta_dir, "program.json"), encoding="utf-8") as fh:
        info = json.load(fh)
    info["state_format"] = STATE_FORMAT
    info.pop("partition", None)
    write_json(os.path.join(L.meta_dir, "program.json"), info, indent=2, ensure_ascii=False)
    return {"migrated": True, "ticks": sorted(done),
            "message": f"migrated the state of {len(done)} tick(s) to {STATE_FORMAT}; the old "
                       f"table is kept in {backup}"}
