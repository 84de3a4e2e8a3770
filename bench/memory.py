"""Memory benchmark (issue 44): the resident set of a long run whose state is flat.

examples/malfunction.tdl with --devices devices (100 by default), each hot with p = 0.5 per
tick (bench/engine.py's malfunction workload, generated tick by tick so the stream itself
takes no memory), through Session.step_slice as `hypo run` hands each slice over; one fresh
interpreter per engine.  At each checkpoint tick it prints the process's current and peak
RSS, the objects the cyclic collector tracks (gc.get_objects(), including the frozen ones:
the permanent generation gcpause.frozen_survivors moves the survivors to) and the state's
size.  A flat state must give a flat RSS: before issue 44's fix the row engine (and `auto`,
which stays on it below 80 facts a slice for this program) froze one reference cycle per
local-mgu search and grew by ~60 KB a tick (99 MB at tick 1 000, 641 MB at tick 10 000).
Figures only, nothing asserted (tests/test_regressions_44.py asserts the bound on a small run).

    .venv/bin/python bench/memory.py
    .venv/bin/python bench/memory.py --engine row --checkpoints 1000 10000 50000 --lines
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

MALFUNCTION = (ROOT / "examples" / "malfunction.tdl").read_text()


def rss_mb() -> float:
    """The current resident set (MB), from /proc (the peak where it is not available)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    except OSError:
        return peak_mb()


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


def slices(devices: int, ticks: int, seed: int):
    """Each tick's stream.Slice of the malfunction workload (as bench/engine.py's _inputs
    builds them), made when it is due."""
    import numpy as np

    from reasoning.stream.scanned import Scanned
    from reasoning.stream.slices import Slice

    rnd = random.Random(seed)
    names = [f"wt{i}" for i in range(devices)]
    no = 1
    for tau in range(ticks):
        hot = [d for d in names if rnd.random() < 0.5]
        sl = Slice(tau)
        if hot:
            k = len(hot)
            sl.add_frame(Scanned.of(
                no, np.full(k, tau, np.int64), np.full(k, tau, np.int64),
                np.zeros(k, np.int64), ["Temp"], np.full(k, 2, np.int64),
                [x for d in hot for x in (d, "high")]))
        no += len(hot)
        yield sl


def run(engine: str, devices: int, checkpoints: list[int], seed: int, lines: bool) -> list:
    from reasoning.columnar.backends.choice import default_backend
    from reasoning.language.compiler import compile_program
    from reasoning.util.gcpause import stats
    from reasoning.run.session import Session

    cp = compile_program(MALFUNCTION, "<bench>")
    sess = Session(cp, engine=engine, backend=default_backend())
    out = []
    marks = set(checkpoints)
    t0 = time.perf_counter()
    for tau, sl in enumerate(slices(devices, max(checkpoints), seed)):
        rep = sess.step_slice(sl, tau)
        if lines:
            sess.lines(False, False)
        if tau + 1 in marks:
            out.append({"engine": engine, "executor": sess.executor, "devices": devices,
                        "tick": tau + 1, "rss_mb": round(rss_mb(), 1),
                        "peak_rss_mb": round(peak_mb(), 1),
                        "gc_objects": len(gc.get_objects()),
                        "frozen": gc.get_freeze_count(), "state": rep.state_size,
                        "frozen_collections": stats["collections"],
                        "seconds": round(time.perf_counter() - t0, 1)})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engine", nargs="+", default=["row", "columnar", "auto"],
                    choices=["row", "columnar", "auto"])
    ap.add_argument("--devices", type=int, default=100)
    ap.add_argument("--checkpoints", type=int, nargs="+", default=[1000, 10000],
                    help="ticks after which the figures are printed (the run's length is "
                         "the last)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--lines", action="store_true",
                    help="also build the printed lines every tick (as `hypo run` does)")
    ap.add_argument("--format", choices=["text", "json"], default="text")
    ap.add_argument("--in-process", action="store_true",
                    help="run in this process (by default each engine in a fresh one: "
                         "the peak RSS is the process's)")
    args = ap.parse_args(argv)
    for eng in args.engine:
        if args.in_process:
            rows = run(eng, args.devices, sorted(args.checkpoints), args.seed, args.lines)
        else:
            argv = [sys.executable, str(Path(__file__).resolve()), "--in-process",
                    "--format", "json", "--engine", eng, "--devices", str(args.devices),
                    "--seed", str(args.seed), "--checkpoints",
                    *map(str, args.checkpoints)] + (["--lines"] if args.lines else [])
            p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=str(ROOT), text=True)
            if p.returncode != 0:
                raise SystemExit(f"memory run failed ({eng}):\n{p.stderr[-2000:]}")
            rows = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
        for r in rows:
            if args.format == "json":
                print(json.dumps(r), flush=True)
            else:
                print(f"{r['engine']:9s} ({r['executor']:8s}) devices {r['devices']:>5} tick "
                      f"{r['tick']:>6}  rss {r['rss_mb']:7.1f} MB  peak {r['peak_rss_mb']:7.1f}"
                      f" MB  tracked {r['gc_objects'] + r['frozen']:>8} (frozen {r['frozen']:>8}, "
                      f"{r['frozen_collections']} collections)  state {r['state']:>5}  "
                      f"{r['seconds']:7.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
