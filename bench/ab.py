"""A/B of the tick loop, in process or end to end: this checkout against a git revision.

The build machine's speed drifts by up to 1.6x between minutes, so two separate runs of
bench/engine.py cannot show a 5-10 % change.  This runs both sides on the same generated
stream, in the same venv, in up to three ways:

  wall          --rounds runs of each side, interleaved (A B A B ...), one fresh interpreter
                a run: facts/s of each run, and the best and median of each side
  e2e           --rounds runs of each side, interleaved, of `hypo run --format jsonl
                --changes` on the stream written to a file (the whole process: start-up,
                reading, the ticks, rendering, writing to a pipe): seconds of each run, the
                best and median of each side, and whether both printed the same bytes
  instructions  one run of each side under valgrind's callgrind (both at once: instruction
                counts do not depend on the load): the process's instructions, setup
                (imports, the generated stream) included — the same for both sides, so the
                difference is the tick loop's.  Deterministic; blind to cache misses, so
                check memory-bound changes (10^5 devices) by wall time

    .venv/bin/python bench/ab.py --base HEAD~3 --workload turbines --devices 10000 \
        --ticks 50 --mode wall instructions --rounds 5

The base revision is checked out as a git worktree under the system's temporary directory
(removed afterwards unless --keep); its C kernels are built on first import, like a fresh
clone's.  Prints one JSON object per mode (--format json) or a few lines of text.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bench_argv(python: str, args) -> list[str]:
    return [python, "bench/engine.py", "--in-process", "--format", "json", "--engine",
            args.engine, "--workload", args.workload, "--devices", str(args.devices),
            "--ticks", str(args.ticks), "--seed", str(args.seed), "--threads", "1",
            "--backend", args.backend]


def _last_json(text: str) -> dict:
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("bench/engine.py printed no JSON line:\n" + text[-2000:])


def wall(sides: dict, args) -> dict:
    """Interleaved runs: facts/s per side."""
    got: dict = {name: [] for name in sides}
    defs: dict = {name: set() for name in sides}
    for _ in range(args.rounds):
        for name, tree in sides.items():
            p = subprocess.run(_bench_argv(args.python, args), cwd=tree, capture_output=True,
                               text=True, check=True)
            r = _last_json(p.stdout)
            got[name].append(r["facts_per_s"])
            defs[name].add(r["definite"])
    out = {"mode": "wall", "facts_per_s": got,
           "best": {n: max(v) for n, v in got.items()},
           "median": {n: int(statistics.median(v)) for n, v in got.items()},
           "definite": {n: sorted(v) for n, v in defs.items()}}
    out["best_ratio"] = round(out["best"]["this"] / out["best"]["base"], 3)
    return out


def e2e(sides: dict, args) -> dict:
    """Interleaved `hypo run --format jsonl --changes` processes: seconds per side."""
    import hashlib
    import time

    sys.path.insert(0, str(ROOT))
    from bench.engine import write_workload

    tmp = Path(tempfile.mkdtemp(prefix="hypo-ab-e2e-"))
    prog, stream = write_workload(args.workload, args.devices, args.ticks, args.seed, tmp)
    argv = [args.python, "-m", "reasoning.cli.main", "run", prog, "--stream", stream,
            "--format", "jsonl", "--changes", "--engine", args.engine, "--backend",
            args.backend, "--until", str(args.ticks - 1)]
    got: dict = {name: [] for name in sides}
    digests: dict = {name: set() for name in sides}
    try:
        for _ in range(args.rounds):
            for name, tree in sides.items():
                t0 = time.perf_counter()
                p = subprocess.run(argv, cwd=tree, capture_output=True, check=True)
                got[name].append(round(time.perf_counter() - t0, 3))
                digests[name].add(hashlib.md5(p.stdout).hexdigest())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = {"mode": "e2e", "seconds": got, "best": {n: min(v) for n, v in got.items()},
           "median": {n: statistics.median(v) for n, v in got.items()},
           "same_output": len(digests["base"] | digests["this"]) == 1}
    out["best_ratio"] = round(out["best"]["this"] / out["best"]["base"], 3)
    return out


def instructions(sides: dict, args) -> dict:
    """Callgrind's instruction count of one run per side (both sides at once)."""
    if shutil.which("valgrind") is None:
        return {"mode": "instructions", "error": "valgrind is not installed"}
    tmp = Path(tempfile.mkdtemp(prefix="hypo-ab-cg-"))
    procs = {}
    for name, tree in sides.items():
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp / name}.out",
                *_bench_argv(args.python, args)]
        procs[name] = subprocess.Popen(argv, cwd=tree, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
    counts, defs = {}, {}
    for name, p in procs.items():
        out, err = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"{name}: callgrind run failed:\n{err[-2000:]}")
        defs[name] = _last_json(out)["definite"]
        for line in (tmp / f"{name}.out").read_text().splitlines():
            if line.startswith("totals:"):
                counts[name] = int(line.split()[1])
    shutil.rmtree(tmp, ignore_errors=True)
    return {"mode": "instructions", "instructions": counts, "definite": defs,
            "change": round(counts["this"] / counts["base"] - 1, 4)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the git revision to compare against")
    ap.add_argument("--workload", default="turbines", choices=["turbines", "malfunction"])
    ap.add_argument("--devices", type=int, default=10000)
    ap.add_argument("--ticks", type=int, default=50)
    ap.add_argument("--engine", default="columnar", choices=["row", "columnar", "auto"])
    ap.add_argument("--backend", default="arrays", choices=["arrays", "polars"])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--mode", nargs="+", default=["wall"],
                    choices=["wall", "e2e", "instructions"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="keep the base worktree")
    ap.add_argument("--format", choices=["text", "json"], default="text")
    args = ap.parse_args(argv)
    args.python = str(ROOT / ".venv" / "bin" / "python")
    rev = subprocess.run(["git", "rev-parse", "--verify", args.base + "^{commit}"], cwd=ROOT,
                         capture_output=True, text=True)
    if rev.returncode != 0:
        print(f"bench/ab.py: {args.base!r} is not a revision of this repository",
              file=sys.stderr)
        return 2
    base = Path(tempfile.mkdtemp(prefix="hypo-ab-")) / "base"
    subprocess.run(["git", "worktree", "add", "--detach", str(base), rev.stdout.strip()],
                   cwd=ROOT, check=True, capture_output=True)
    try:
        sides = {"base": base, "this": ROOT}
        for tree in sides.values():  # a fresh worktree compiles its C kernels on first import
            subprocess.run([args.python, "-c", "import reasoning.native.kernels"], cwd=tree,
                           check=True, capture_output=True)
            # ... and its modules' bytecode: without this the base side paid ~0.6 G
            # instructions (6 % of a turbine run) compiling sources the other side had cached
            subprocess.run([args.python, "-m", "compileall", "-q", "reasoning", "bench"],
                           cwd=tree, check=True, capture_output=True)
        modes = {"wall": wall, "e2e": e2e, "instructions": instructions}
        results = [modes[m](sides, args) for m in args.mode]
    finally:
        if not args.keep:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT,
                           capture_output=True)
            shutil.rmtree(base.parent, ignore_errors=True)
    head = {"base": args.base, "workload": args.workload, "devices": args.devices,
            "ticks": args.ticks, "engine": args.engine, "backend": args.backend}
    for r in results:
        if args.format == "json":
            print(json.dumps({**head, **r}))
        elif r["mode"] == "wall":
            print(f"wall, {args.rounds} interleaved rounds: base best {r['best']['base']} "
                  f"median {r['median']['base']}; this best {r['best']['this']} median "
                  f"{r['median']['this']} facts/s (best ×{r['best_ratio']})")
        elif r["mode"] == "e2e":
            print(f"hypo run --changes, {args.rounds} interleaved rounds: base best "
                  f"{r['best']['base']} median {r['median']['base']} s; this best "
                  f"{r['best']['this']} median {r['median']['this']} s (best ×{r['best_ratio']}"
                  f"; {'the same' if r['same_output'] else 'DIFFERENT'} output)")
        elif "error" in r:
            print(f"instructions: {r['error']}")
        else:
            c = r["instructions"]
            print(f"instructions: base {c['base']:,} this {c['this']:,} "
                  f"({r['change']:+.1%}, setup included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
