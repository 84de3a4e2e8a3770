"""What the change feed costs a lake tick (issue 43): the MERGE into `current` after each
tick's `done` (jobs/table/current.py), as the tick's phase "change feed (current)", next to
the whole tick; then `hypo lake changes` over the ticks run.

    .venv/bin/python bench/changefeed.py                        # Example 13 + 50 000 turbines
    .venv/bin/python bench/changefeed.py --devices 10000 --empty 20

Local executor (the feed is written on the driver whichever executor ran the tick)."""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

PHASE = "change feed (current)"


def _tick(api, lake: str, t: int) -> tuple[dict, float]:
    t0 = time.perf_counter()
    s = api.run_tick(lake, t, executor="local")
    return s, time.perf_counter() - t0


def example13(api, work: str, empty: int) -> None:
    """Ticks after Example 13's stream: no facts, one answer decided and forgotten a tick."""
    lake = os.path.join(work, "e13")
    api.init(lake, os.path.join(ROOT, "examples/wind_turbines.tdl"))
    api.ingest(lake, None, [os.path.join(ROOT, "examples/wind_turbines.jsonl")])
    api.run_range(lake, 0, 8, executor="local")
    tot, feed = [], []
    for t in range(9, 9 + empty):
        s, dt = _tick(api, lake, t)
        tot.append(dt)
        feed.append(s["seconds"].get(PHASE, 0.0))
    print(f"Example 13, {empty} empty ticks: tick median {statistics.median(tot):.3f} s, "
          f"change feed median {statistics.median(feed):.3f} s, most {max(feed):.3f} s")


def turbines(api, work: str, devices: int) -> None:
    from jobs.ingest.generate import turbine_program, turbine_stream, write_jsonl

    delays, rows = turbine_stream(devices, 4, max_delay=1, seed=3, width=6)
    prog, stream = os.path.join(work, "t.tdl"), os.path.join(work, "t.jsonl")
    with open(prog, "w") as fh:
        fh.write(turbine_program(delays))
    write_jsonl(rows, stream)
    lake = os.path.join(work, "turbines")
    api.init(lake, prog)
    api.ingest(lake, None, [stream])
    print(f"{devices} turbines: tick, facts, answers shown, tick s, change feed s")
    for t in range(6):
        s, dt = _tick(api, lake, t)
        c = s["counts"]
        shown = c.get("definite", 0) + c.get("hypothetical", 0)
        print(f"  {t}  {c['facts']:>7}  {shown:>7}  {dt:7.2f}  {s['seconds'].get(PHASE, 0):6.2f}")
    t0 = time.perf_counter()
    n = len(api.changes(lake, 0, 5))
    print(f"  hypo lake changes --from 0 --to 5: {n} lines in {time.perf_counter() - t0:.2f} s")


def main() -> None:
    import __main__

    __main__.__file__ = __file__  # great_expectations' import reaches PySpark's connect check
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, default=50_000)
    ap.add_argument("--empty", type=int, default=50, help="empty ticks after Example 13")
    args = ap.parse_args()
    from jobs import lake as api

    work = tempfile.mkdtemp(prefix="hypo-bench-feed-")
    try:
        example13(api, work, args.empty)
        turbines(api, work, args.devices)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
