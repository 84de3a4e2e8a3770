"""Benchmark of a small tick under a real Airflow scheduler (issue 43: "≤ 10 s from the
sensor's success to `publish` done, with the Spark executor").  It runs the real-scheduler
test (tests/test_airflow_scheduler.py: `airflow standalone` with the LocalExecutor on a
PostgreSQL started on loopback, a 1-worker standalone cluster with a Spark Connect server,
Example 13's ticks 0..3 caught up, then a backfill) and prints, per caught-up tick, the
seconds from the slice sensor's success to `publish` done and the tasks' own seconds, read
from Airflow's metadata database.

    .venv/bin/python bench/airflow_tick.py
"""
from __future__ import annotations

import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPAN = re.compile(r"airflow tick span (\S+): sensor success -> publish done ([\d.]+) s "
                  r"\((.*)\)")


def main() -> int:
    t0 = time.time()
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                        "tests/test_airflow_scheduler.py", "-k", "catchup"],
                       cwd=ROOT, capture_output=True, text=True)
    spans = [m.groups() for m in SPAN.finditer(p.stdout)]
    if p.returncode or not spans:
        print(p.stdout[-4000:], p.stderr[-2000:], sep="\n")
        print(f"the real-scheduler test failed (exit {p.returncode})")
        return 1
    print("| dag run | sensor success -> publish done | the tasks' own seconds |")
    print("|---|---|---|")
    for run_id, s, own in spans:
        print(f"| {run_id} | {float(s):.1f} s | {own} |")
    print(f"median: {statistics.median(float(s) for _, s, _ in spans):.1f} s over "
          f"{len(spans)} ticks; the whole test (cluster, Connect server, PostgreSQL, "
          f"Airflow, catchup, backfill) {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
