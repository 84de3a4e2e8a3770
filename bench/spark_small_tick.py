"""Benchmark of a small Spark tick (issue 42's "a small tick ≤ 5 s"): Example 13's ticks 0..8
on the Spark executor in one driver process, with Spark's event log on.  Per tick: seconds,
Spark jobs, stages and tasks, and how the seconds split between the jobs themselves (the
event log's job spans) and the driver (building and planning the DataFrame program, the
Delta commits).

    .venv/bin/python bench/spark_small_tick.py                       # local[2]
    .venv/bin/python bench/spark_small_tick.py --master spark://127.0.0.1:7077
"""
from __future__ import annotations

import __main__
import argparse
import contextlib
import glob
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
__main__.__file__ = __file__  # great_expectations' import looks at it (see README)


def _events(folder: str) -> list[dict]:
    out = []
    for f in sorted(glob.glob(os.path.join(folder, "*"))):
        with open(f, encoding="utf-8") as fh:
            out += [json.loads(line) for line in fh]
    return out


def _example13_lake(path: str) -> str:
    from hypo_cli import main as hypo

    for argv in (["lake", "--lake", path, "init", "--program",
                  os.path.join(ROOT, "examples", "wind_turbines.tdl")],
                 ["lake", "--lake", path, "ingest",
                  os.path.join(ROOT, "examples", "wind_turbines.jsonl")]):
        with contextlib.redirect_stdout(io.StringIO()):
            if hypo(argv) != 0:
                raise SystemExit(f"hypo {' '.join(argv)} failed")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--ticks", type=int, default=9)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="hypo-small-tick-")
    ev = os.path.join(work, "events")
    os.makedirs(ev)
    os.environ["HYPO_SPARK_CONF"] = ",".join(filter(None, [
        os.environ.get("HYPO_SPARK_CONF", ""), "spark.eventLog.enabled=true",
        f"spark.eventLog.dir=file://{ev}", "spark.eventLog.compress=false",
        "spark.eventLog.rolling.enabled=false"]))
    from jobs import lake as api
    from jobs.tick.spark import session
    lake = _example13_lake(os.path.join(work, "lake"))
    t0 = time.time()
    spark = session(a.master)
    print(f"session on {a.master}: {time.time() - t0:.1f} s")
    marks = []
    for tau in range(a.ticks):
        t0 = time.time()
        api.run_tick(lake, tau, executor="spark", master=a.master)
        marks.append((t0, time.time()))
    spark.stop()
    jobs, stages, tasks = {}, [], []
    for e in _events(ev):
        k = e["Event"]
        if k == "SparkListenerJobStart":
            jobs[e["Job ID"]] = [e["Submission Time"] / 1000, None]
        elif k == "SparkListenerJobEnd":
            jobs[e["Job ID"]][1] = e["Completion Time"] / 1000
        elif k == "SparkListenerStageCompleted":
            stages.append(e["Stage Info"].get("Submission Time", 0) / 1000)
        elif k == "SparkListenerTaskEnd":
            tasks.append(e["Task Info"]["Launch Time"] / 1000)
    print("| tick | s | Spark jobs | stages | tasks | in the jobs | on the driver |")
    print("|---|---|---|---|---|---|---|")
    walls = []
    for tau, (s, e) in enumerate(marks):
        js = [j for j in jobs.values() if s <= j[0] <= e and j[1]]
        injob = sum(j[1] - j[0] for j in js)
        walls.append(e - s)
        print(f"| {tau} | {e - s:.2f} | {len(js)} | {sum(s <= x <= e for x in stages)} | "
              f"{sum(s <= x <= e for x in tasks)} | {injob:.2f} | {e - s - injob:.2f} |")
    if len(walls) > 1:
        print(f"median of ticks 1..{len(walls) - 1}: {statistics.median(walls[1:]):.2f} s")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
