"""Engine benchmark: Algorithm 1's executors on generated streams, tick loop in-process
(and, with --e2e, `hypo run` end to end).  One JSON object per run with --format json:

  {"engine", "workload", "devices", "ticks", "facts", "facts_per_s", "median_tick_ms",
   "p99_tick_ms", "state_first_decile", "state_last_decile", "definite"}

definite: the number of main-query answers that became definite during the run (each
answer once); every engine must print the same.  Each engine gets every tick's slice as
`hypo run`'s stream reader hands it over (a stream.Slice of the parsed block's frame,
through Session.step_slice), so the conversion to its own input is in its tick time.
Also printed: seconds and cpu_seconds of the tick loop, and with --e2e the whole `hypo run`
process's e2e_seconds and e2e_cpu_seconds with their ratios to the loop's (CPU time is what
the process itself used: other loads of a shared machine inflate it less than wall time),
the bytes it printed, and e2e_write_floor_seconds: an interpreter that only starts and
writes those bytes through the same pipe (no `hypo run` printing them can be faster).

Workloads:
  turbines     examples/wind_turbines.tdl's program with δ = 3 and per-device overrides for
               100 devices (delays and negation on); bursty hot readings, each arriving
               within its device's δ
  malfunction  examples/malfunction.tdl (positive, δ = 0 — the papers' Java engine's
               setting); every device hot with p = 0.5 per tick

    .venv/bin/python bench/engine.py --engine row columnar --devices 1000 10000 --ticks 1000
    .venv/bin/python bench/engine.py --engine columnar --devices 100000 --ticks 100 \
        --workload malfunction --format json
    .venv/bin/python bench/engine.py --engine columnar --devices 10000 --ticks 50 --e2e

Goals are read from the printed figures (docs/performance.md, "Goals"), never asserted
in tests.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# as `hypo run` does (reasoning/cli/main.py): no spinning OpenBLAS threads beside the timed loop
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

TURBINES = """
#query OK(X, T).
#delay Hot = 3.
{overrides}
Flag(X, T) :- Hot(X, T).
Cool(X, T+1) :- Flag(X, T), Flag(X, T+1).
Shdn(X, T+1) :- Cool(X, T), Flag(X, T+1).
OK(X, T-1) :- not Shdn(X, T).
"""
MALFUNCTION = (ROOT / "examples" / "malfunction.tdl").read_text()


def workload(name: str, n: int, ticks: int, seed: int = 7, p_hot: float = 0.1,
             n_override: int = 100):
    """(program text, slices: per arrival tick the list of (pred, args, time))."""
    rnd = random.Random(seed)
    devices = [f"wt{i}" for i in range(n)]
    slices: list[list] = [[] for _ in range(ticks + 4)]
    if name == "malfunction":
        for t in range(ticks):
            for d in devices:
                if rnd.random() < 0.5:
                    slices[t].append(("Temp", (d, "high"), t))
        return MALFUNCTION, slices[:ticks]
    delays = {d: 3 for d in devices}
    over = []
    for d in devices[:n_override]:  # per-instance δ (002 §3) for a subset of devices
        delays[d] = rnd.randint(0, 2)
        over.append(f"#delay Hot({d}, T) = {delays[d]}.")
    hot = [False] * n
    for t in range(ticks):
        for i, d in enumerate(devices):
            hot[i] = rnd.random() < (0.6 if hot[i] else p_hot)  # bursts
            if hot[i]:
                slices[t + rnd.randint(0, delays[d])].append(("Hot", (d,), t))
    return TURBINES.format(overrides="\n".join(over)), slices[:ticks]


def _inputs(slices):
    """Every tick's slice as `hypo run`'s stream reader hands it to any engine: a
    stream.Slice holding the block as the C scanner reads canonical lines (a
    scanned.Scanned; Session.step_slice turns it into Fact objects for the row engine, into
    per-predicate columns for the columnar one)."""
    import numpy as np

    from reasoning.stream.scanned import Scanned
    from reasoning.stream.slices import Slice

    out = []
    no = 1
    for tau, s in enumerate(slices):
        sl = Slice(tau)
        if s:
            preds = sorted({p for p, _, _ in s})
            at = {p: i for i, p in enumerate(preds)}
            sl.add_frame(Scanned.of(
                no, np.full(len(s), tau, np.int64), np.array([t for _, _, t in s], np.int64),
                np.array([at[p] for p, _, _ in s], np.int64), preds,
                np.array([len(a) for _, a, _ in s], np.int64), [x for _, a, _ in s for x in a]))
        no += len(s)
        out.append(sl)
    return out


def run(engine: str, wl: str, n: int, ticks: int, seed: int) -> dict:
    from reasoning.columnar.backends.choice import default_backend
    from reasoning.language.compiler import compile_program
    from reasoning.run.session import Session

    text, slices = workload(wl, n, ticks, seed)
    cp = compile_program(text, "<bench>")
    sess = Session(cp, engine=engine, backend=default_backend())
    inputs = _inputs(slices)
    times, sizes = [], []
    n_facts = definite = 0
    c_all = time.process_time()
    t_all = time.perf_counter()
    for tau, facts in enumerate(inputs):
        t0 = time.perf_counter()
        rep = sess.step_slice(facts, tau)
        times.append(time.perf_counter() - t0)
        sizes.append(rep.state_size)
        n_facts += len(slices[tau])
        if sess.col is not None:
            definite += sum(sess.col.B.height(f) for (k, _), f in rep.fresh.items()
                            if sess.col.templates[k].qid == 0)
        else:
            definite += len(rep.new_definite)
    wall = time.perf_counter() - t_all
    cpu = time.process_time() - c_all
    dec = max(1, ticks // 10)
    return {"engine": engine, "workload": wl, "devices": n, "ticks": ticks, "facts": n_facts,
            "facts_per_s": round(n_facts / wall) if wall else 0,
            "median_tick_ms": round(statistics.median(times) * 1e3, 2),
            "p99_tick_ms": round(sorted(times)[int(0.99 * (len(times) - 1))] * 1e3, 2),
            "state_first_decile": round(statistics.mean(sizes[:dec]), 1),
            "state_last_decile": round(statistics.mean(sizes[-dec:]), 1),
            "definite": definite, "seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
            "executor_at_end": sess.executor,
            "backend": sess.col.B.name if sess.col is not None else None}


def write_workload(wl: str, n: int, ticks: int, seed: int, d) -> tuple[str, str]:
    """The workload as files in directory d, as a user hands them to `hypo run`: (program,
    JSON-lines stream) paths."""
    text, slices = workload(wl, n, ticks, seed)
    prog = os.path.join(d, "p.tdl")
    stream = os.path.join(d, "s.jsonl")
    Path(prog).write_text(text)
    with open(stream, "w") as fh:
        for tau, s in enumerate(slices):
            for p, a, t in s:
                fh.write(json.dumps({"tick": tau, "fact": f"{p}({', '.join(a + (str(t),))})"})
                         + "\n")
    return prog, stream


def e2e(engine: str, wl: str, n: int, ticks: int, seed: int, changes: bool = True) -> dict:
    """`hypo run --format jsonl [--changes]` as a user runs it, timed as a whole process."""
    d = tempfile.mkdtemp(prefix="hypo-bench-")
    prog, stream = write_workload(wl, n, ticks, seed, d)
    argv = [sys.executable, "-m", "reasoning.cli.main", "run", prog, "--stream", stream,
            "--format", "jsonl", "--engine", engine, "--until", str(ticks - 1)]
    if changes:
        argv.append("--changes")
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(ROOT))
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    # the floor of any `hypo run` printing these bytes: an interpreter that only starts and
    # writes them, through the same pipe (616 000 lines, 161 MB for malfunction at 10⁴ × 50)
    out = os.path.join(d, "out.jsonl")
    Path(out).write_bytes(p.stdout)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import shutil, sys; shutil.copyfileobj("
                    f"open({out!r}, 'rb'), sys.stdout.buffer, 1 << 20)"],
                   stdout=subprocess.PIPE, check=True)
    floor = time.perf_counter() - t0
    return {"e2e_seconds": round(wall, 3), "e2e_cpu_seconds": round(cpu, 3),
            "e2e_exit": p.returncode,
            "e2e_output_lines": p.stdout.count(b"\n"), "e2e_output_bytes": len(p.stdout),
            "e2e_write_floor_seconds": round(floor, 3), "e2e_changes": changes}


def _isolated(engine: str, wl: str, n: int, ticks: int, seed: int) -> dict:
    """run() in a fresh interpreter (its tick loop timed there, as in-process)."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--in-process", "--format", "json",
            "--engine", engine, "--workload", wl, "--devices", str(n), "--ticks", str(ticks),
            "--seed", str(seed), "--threads", os.environ["POLARS_MAX_THREADS"],
            "--backend", os.environ.get("HYPO_BACKEND", "arrays")]
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(ROOT),
                       text=True)
    if p.returncode != 0:
        raise SystemExit(f"bench run failed ({engine} {wl} {n}):\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engine", nargs="+", default=["row", "columnar"],
                    choices=["row", "columnar", "auto"])
    ap.add_argument("--devices", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--ticks", type=int, default=1000)
    ap.add_argument("--workload", nargs="+", default=["turbines"],
                    choices=["turbines", "malfunction"])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--backend", nargs="+", default=["arrays"], choices=["arrays", "polars"],
                    help="in-process backends of the columnar executor to time (each run "
                         "of columnar/auto once per backend; $HYPO_BACKEND in its process)")
    ap.add_argument("--threads", type=int, default=1,
                    help="Polars threads (the goals are per core; default 1)")
    ap.add_argument("--e2e", action="store_true",
                    help="also time `hypo run --format jsonl --changes` end to end")
    ap.add_argument("--format", choices=["text", "json"], default="text")
    ap.add_argument("--in-process", action="store_true",
                    help="run every measurement in this process (by default each runs in a "
                         "fresh one: a later run in the same process measured up to 10%% "
                         "slower)")
    args = ap.parse_args(argv)
    os.environ["POLARS_MAX_THREADS"] = str(args.threads)
    rows = []
    runs = [(eng, be) for eng in args.engine
            for be in (args.backend if eng != "row" else [None])]
    for wl in args.workload:
        for n in args.devices:
            for eng, be in runs:
                if be is not None:
                    os.environ["HYPO_BACKEND"] = be  # this process, _isolated's and e2e's
                r = run(eng, wl, n, args.ticks, args.seed) if args.in_process else \
                    _isolated(eng, wl, n, args.ticks, args.seed)
                if args.e2e:
                    r.update(e2e(eng, wl, n, args.ticks, args.seed))
                    r["e2e_over_engine"] = round(r["e2e_seconds"] / r["seconds"], 2) \
                        if r["seconds"] else None
                    r["e2e_cpu_over_engine"] = round(r["e2e_cpu_seconds"] / r["cpu_seconds"],
                                                     2) if r["cpu_seconds"] else None
                rows.append(r)
                if args.format == "json":
                    print(json.dumps(r), flush=True)
                else:
                    print(f"{wl:12s} {eng + ('/' + be if be else ''):16s} devices {n:>7} "
                          f"ticks {args.ticks:>5} "
                          f"facts {r['facts']:>9} {r['facts_per_s']:>9} facts/s  tick "
                          f"{r['median_tick_ms']:>8.2f} ms (p99 {r['p99_tick_ms']:>8.2f})  state "
                          f"{r['state_first_decile']:.0f}->{r['state_last_decile']:.0f}  "
                          f"definite {r['definite']}"
                          + (f"  e2e {r['e2e_seconds']} s ({r['e2e_over_engine']}x; CPU "
                             f"{r['e2e_cpu_seconds']} s, {r['e2e_cpu_over_engine']}x; "
                             f"writing its {r['e2e_output_bytes']} bytes alone "
                             f"{r['e2e_write_floor_seconds']} s)"
                             if args.e2e else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
