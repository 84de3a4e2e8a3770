"""Engine benchmark (issue: online engine): the wind-turbine program with N devices, random
hot readings and random delays within δ over many ticks.  Prints facts/s, per-tick time
(median, p99, first vs last decile) and the state size per tick.

    .venv/bin/python bench/engine.py --devices 1000 10000 100000 --ticks 1000
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reasoning.compiler import compile_program  # noqa: E402
from reasoning.engine import Engine  # noqa: E402
from reasoning.patterns import Fact  # noqa: E402

PROGRAM = """
#query OK(X, T).
#delay Hot = 3.
{overrides}
Flag(X, T) :- Hot(X, T).
Cool(X, T+1) :- Flag(X, T), Flag(X, T+1).
Shdn(X, T+1) :- Cool(X, T), Flag(X, T+1).
OK(X, T-1) :- not Shdn(X, T).
"""


def workload(n: int, ticks: int, p_hot: float, seed: int, n_override: int = 100):
    """Program text and the stream: slices[τ] = facts arriving at τ (delay ≤ δ(device))."""
    rnd = random.Random(seed)
    devices = [f"wt{i}" for i in range(n)]
    delays = {d: 3 for d in devices}
    over = []
    for d in devices[:n_override]:  # per-instance δ (002 §3) for a subset of devices
        delays[d] = rnd.randint(0, 2)
        over.append(f"#delay Hot({d}, T) = {delays[d]}.")
    slices: list[list[Fact]] = [[] for _ in range(ticks + 4)]
    hot = [False] * n
    for t in range(ticks):
        for i, d in enumerate(devices):
            # bursts: a hot device tends to stay hot (so shutdowns happen)
            hot[i] = rnd.random() < (0.6 if hot[i] else p_hot)
            if hot[i]:
                slices[t + rnd.randint(0, delays[d])].append(Fact("Hot", (d,), t))
    return PROGRAM.format(overrides="\n".join(over)), slices[:ticks]


def run(n: int, ticks: int, p_hot: float, seed: int, quiet: bool = False) -> dict:
    text, slices = workload(n, ticks, p_hot, seed)
    cp = compile_program(text, "<bench>")
    eng = Engine(cp)
    times, sizes = [], []
    n_facts = 0
    definite = 0
    t_all = time.perf_counter()
    c_all = time.process_time()
    for tau, facts in enumerate(slices):
        t0 = time.perf_counter()
        rep = eng.step(facts, tau, snapshot=False)
        times.append(time.perf_counter() - t0)
        sizes.append(rep.state_size)
        n_facts += len(facts)
        definite += len(rep.new_definite)
    wall = time.perf_counter() - t_all
    cpu = time.process_time() - c_all
    dec = max(1, ticks // 10)
    res = {
        "devices": n, "ticks": ticks, "facts": n_facts, "wall_s": wall,
        "facts_per_s": n_facts / wall if wall else 0.0,
        "cpu_s": cpu, "facts_per_cpu_s": n_facts / cpu if cpu else 0.0,
        "tick_median_ms": statistics.median(times) * 1e3,
        "tick_p99_ms": sorted(times)[int(0.99 * (len(times) - 1))] * 1e3,
        "tick_first_decile_ms": statistics.mean(times[:dec]) * 1e3,
        "tick_last_decile_ms": statistics.mean(times[-dec:]) * 1e3,
        "state_first_decile": statistics.mean(sizes[:dec]),
        "state_last_decile": statistics.mean(sizes[-dec:]),
        "state_max": max(sizes),
        "window_last": sum(len(s) for s in eng.window.values()),
        "definite_emitted": definite,
    }
    if not quiet:
        step = max(1, ticks // 10)
        print(f"  state size per tick (every {step}th): "
              + " ".join(str(sizes[i]) for i in range(0, ticks, step)))
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--devices", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--ticks", type=int, default=1000)
    ap.add_argument("--p-hot", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    cols = ["devices", "ticks", "facts", "wall_s", "facts_per_s", "facts_per_cpu_s",
            "tick_median_ms",
            "tick_p99_ms", "tick_first_decile_ms", "tick_last_decile_ms",
            "state_first_decile", "state_last_decile", "state_max", "definite_emitted"]
    rows = []
    for n in args.devices:
        print(f"N = {n} devices, {args.ticks} ticks, p_hot = {args.p_hot}")
        rows.append(run(n, args.ticks, args.p_hot, args.seed))
    print()
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(f"{r[c]:.1f}" if isinstance(r[c], float) else str(r[c]) for c in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
