"""What a lake's history costs every tick: a lake whose ticks log holds N ticks (synthetic
rows appended to a real 9-tick lake of Example 13, four phases a tick, as runs log them),
timed the way a tick reads it (jobs.table.store: the log, `done`, the last completed tick, the
vacuum cuts) and as `hypo lake status` reads it.  One JSON object per N.

    .venv/bin/python bench/ticks_log.py --ticks 1000 10000 100000
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def base_lake(d: str) -> str:
    lake = os.path.join(d, "lake")
    hypo = [sys.executable, "-m", "hypo_cli", "lake", "--lake", lake]
    env = {**os.environ, "GX_ANALYTICS_ENABLED": "false"}
    for args in (["init", "--program", str(ROOT / "examples" / "wind_turbines.tdl")],
                 ["ingest", str(ROOT / "examples" / "wind_turbines.jsonl")],
                 ["run", "--from", "0", "--to", "8", "--executor", "local"]):
        subprocess.run(hypo + args, check=True, cwd=str(ROOT), env=env,
                       stdout=subprocess.DEVNULL)
    return lake


def add_history(lake: str, first: int, n: int) -> None:
    """Ticks first .. first+n-1 as four log rows each (start, state, answers, done), one
    file."""
    import pyarrow as pa

    from jobs.table import delta
    from jobs.table.store import Lake

    L = Lake(lake)
    done8 = L.done()[8]
    schema = delta.arrow_schema("ticks")
    cols: dict = {k: [] for k in schema.names}
    for t in range(first, first + n):
        for ph in ("start", "state", "answers", "done"):
            r = dict(done8, tick=t, phase=ph, run=f"r{t:011d}",
                     ts=f"2026-11-25T{8 + t // 3_600_000:02d}:{t // 60_000 % 60:02d}:"
                        f"{t // 1000 % 60:02d}.{t % 1000:03d}+00:00")
            for k in schema.names:
                cols[k].append(r.get(k))
    data = pa.Table.from_pydict(cols, schema=schema)
    act = delta.write_file(L.path("ticks"), "ticks", data, "log", {},
                           name=f"synthetic-{first}-{n}.parquet")
    delta.commit(L._ticks_table(), "ticks", [act], mode="append",
                 metadata={"phase": "synthetic"}, exclusive=False)


def measure(lake: str, repeat: int) -> dict:
    from jobs.lake import lake_status
    from jobs.table.store import Lake

    tick, status = [], []
    for _ in range(repeat):
        L = Lake(lake)
        t0 = time.perf_counter()
        log = L.ticks_log()
        done = L.done(log)
        last = L.last_tick(done)
        for cut in ("state_from", "answers_from"):  # (absent before vacuum: A/B runs)
            if hasattr(L, cut):
                getattr(L, cut)(log)
        _ = done[last]
        tick.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        lake_status(lake)
        status.append(time.perf_counter() - t0)
    return {"last_tick": last, "log_rows": len(log),
            "tick_read_s": round(statistics.median(tick), 3),
            "status_s": round(statistics.median(status), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ticks", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hypo-ticks-log-") as d:
        lake = base_lake(d)
        have = 9  # ticks 0..8: the real run
        for n in sorted(args.ticks):
            if n > have:
                add_history(lake, have, n - have)
                have = n
            print(json.dumps({"ticks": have, **measure(lake, args.repeat)}), flush=True)


if __name__ == "__main__":
    main()
