"""Benchmark of a lake tick of a program under modular evaluation (issue 45): `w3` of
bench/windows.py (three 31-tick diamonds lifted into kept auxiliary predicates) over N
constants, ticks 0..K on the chosen executor (`row`: the row engine on the driver; `spark`:
the row engine in the tick's one Spark task).  Prints, per tick from --from on: seconds, S_τ
rows, the row engine's phase and Spark jobs/tasks; then the median and the driver's peak
memory over its size after the first tick.

    .venv/bin/python bench/lake_modular.py --constants 1000 --ticks 40 --from 35
    .venv/bin/python bench/lake_modular.py --constants 100 --ticks 20 --executor spark
"""
from __future__ import annotations

import __main__
import argparse
import json
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))
__main__.__file__ = __file__  # great_expectations' import looks at it (see README)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--constants", type=int, default=100)
    ap.add_argument("--ticks", type=int, default=20, help="the last tick run")
    ap.add_argument("--from", dest="first", type=int, default=1, help="first tick reported")
    ap.add_argument("--p", type=float, default=0.05)
    ap.add_argument("--executor", default="row", choices=["row", "spark", "auto"])
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args(argv)

    import windows as W
    from jobs import lake as api
    from jobs.table.store import Lake

    random.seed(1)
    d = tempfile.mkdtemp(prefix="hypo-lake-modular-")
    try:
        prog = os.path.join(d, "w3.tdl")
        with open(prog, "w") as fh:
            fh.write(W.ours(W.PROGRAMS["w3"]))
        stream = os.path.join(d, "w3.jsonl")
        with open(stream, "w") as fh:
            for e, c, t in sorted(W.facts(args.constants, args.ticks + 1, args.p, 1),
                                  key=lambda f: f[2]):
                fh.write(json.dumps({"tick": t, "pred": e, "args": [c], "time": t}) + "\n")
        lake = os.path.join(d, "lake")
        api.init(lake, prog)
        assert Lake(lake).program_info["derived"], "w3 is kept modular"
        api.ingest(lake, None, [stream])
        secs = []
        peak0 = None
        print("| tick | s | S_τ rows | engine s | Spark jobs / tasks |")
        print("|---|---|---|---|---|")
        for t in range(args.ticks + 1):
            t0 = time.perf_counter()
            s = api.run_tick(lake, t, args.master if args.executor == "spark" else None,
                             executor=args.executor)
            dt = time.perf_counter() - t0
            if peak0 is None:
                peak0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            if t < args.first:
                continue
            secs.append(dt)
            c = s["counts"]
            eng = sum(v for k, v in s["seconds"].items() if k.startswith(("engine", "the tick")))
            jobs = (f"{c['spark_jobs']} / {c['spark_tasks']}" if "spark_jobs" in c else "–")
            print(f"| {t} | {dt:.2f} | {c['state_rows']} | {eng:.2f} | {jobs} |")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(f"\n{args.executor} executor, {args.constants} constants: median "
              f"{statistics.median(secs):.2f} s a tick (ticks {args.first}..{args.ticks}); "
              f"peak memory {(peak - peak0) / 1024:.0f} MB over the process after tick 0")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
