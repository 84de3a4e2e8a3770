"""Per-operation floor of the in-process executor's candidates, on the shapes of a turbine
tick at 10⁴ devices (bench/engine.py's turbines): what one relational operation costs in
the engine's Polars backend, as numpy over interned integer keys, as the bare compiled
kernels (C, built at install time by setup.py), and through the arrays backend
(reasoning/columnar/backends/arrays/: the same operation as the engine calls it, interned columns
and the compiled row kernels).

A turbine tick at 10⁴ devices is ~180 backend operations; the issue's goal (300 000
facts/s) leaves 6.3 ms a tick, i.e. ~35 µs an operation.  This prints, one JSON object per
operation and size, the microseconds each candidate takes (median of --repeat runs):

    .venv/bin/python bench/kernels.py [--repeat 300] [--format text|json]

The numpy and C columns join on one packed int64 key (device id · 2²⁰ + time), i.e.
constants interned to integers at ingest: the executor they stand for would keep every
object column as interned ids and render strings only at the output.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _time(fn, repeat: int) -> float:
    """Median microseconds of fn() (after one warm-up call)."""
    fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return round(statistics.median(out) * 1e6, 1)


def frames(n_left: int, n_right: int, seed: int = 1):
    """(state-like rows, fact-like rows) as Polars frames and as packed numpy keys."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    ld, lt = rng.integers(0, 10_000, n_left), rng.integers(0, 50, n_left)
    rd, rt = rng.integers(0, 10_000, n_right), rng.integers(0, 50, n_right)
    L = pl.DataFrame({"v0": [f"wt{i}" for i in ld], "v1": lt, "ev": rng.integers(0, 8, n_left),
                      "exp": rng.integers(0, 60, n_left)})
    R = pl.DataFrame({"a0": [f"wt{i}" for i in rd], "t": rt})
    lk = (ld.astype(np.int64) << 20) | lt
    rk = (rd.astype(np.int64) << 20) | rt
    cols = {"k": lk, "ev": L["ev"].to_numpy(), "exp": L["exp"].to_numpy()}
    return L, R, lk, rk, cols


def numpy_ops(lk, rk, cols):
    import numpy as np

    def take(idx):
        return {c: a[idx] for c, a in cols.items()}

    def inner():
        order = np.argsort(rk, kind="stable")
        srt = rk[order]
        lo = np.searchsorted(srt, lk, "left")
        hi = np.searchsorted(srt, lk, "right")
        cnt = hi - lo
        li = np.repeat(np.arange(len(lk)), cnt)
        starts = np.repeat(lo - np.cumsum(cnt) + cnt, cnt)
        ri = order[starts + np.arange(len(li))]
        return take(li), ri

    def semi():
        return take(np.isin(lk, rk))

    def anti():
        return take(~np.isin(lk, rk))

    def filt():
        return take(cols["exp"] > 25)

    def unique():
        _, first = np.unique(cols["k"], return_index=True)
        return take(np.sort(first))

    return {"join_inner": inner, "join_semi": semi, "join_anti": anti, "filter": filt,
            "unique": unique}


def bare_ops(impl: str, lk, rk, cols):
    """The compiled implementation ("c") of the engine's row kernels
    (reasoning/native/kernels.py) on the packed key as a one-column key matrix: the bare
    kernel, without the backend's column handling."""
    import numpy as np

    from reasoning.native import kernels

    code = kernels.implementation(impl)
    if code is None:
        return {}
    L, R = lk.reshape(-1, 1), rk.reshape(-1, 1)
    okl, okr = np.ones(len(lk), bool), np.ones(len(rk), bool)
    bits = kernels._table_bits(max(len(rk), 1))

    def take(idx):
        return {c: a[idx] for c, a in cols.items()}

    def inner():
        li, ri = code.join_rows(L, okl, R, okr, bits, False)
        return take(li), ri

    def semi():
        return take(code.member_rows(L, okl, R, okr, bits))

    def anti():
        return take(~code.member_rows(L, okl, R, okr, bits))

    return {"join_inner": inner, "join_semi": semi, "join_anti": anti}


def polars_ops(L, R):
    import polars as pl

    from reasoning.columnar.backends.polars import PolarsBackend

    B = PolarsBackend()
    return {
        "join_inner": lambda: B.join(L, R, ["v0", "v1"], ["a0", "t"], "inner"),
        "join_semi": lambda: B.join(L, R, ["v0", "v1"], ["a0", "t"], "semi"),
        "join_anti": lambda: B.join(L, R, ["v0", "v1"], ["a0", "t"], "anti"),
        "filter": lambda: B.filter(L, pl.col("exp") > 25),
        "unique": lambda: B.unique(L, ["v0", "v1"]),
    }


def arrays_ops(L, R):
    """The same operations through the arrays backend, on L and R interned once."""
    from reasoning.columnar.backends.arrays import ArraysBackend

    B = ArraysBackend()
    La, Ra = B.adopt(L), B.adopt(R)
    return {
        "join_inner": lambda: B.join(La, Ra, ["v0", "v1"], ["a0", "t"], "inner"),
        "join_semi": lambda: B.join(La, Ra, ["v0", "v1"], ["a0", "t"], "semi"),
        "join_anti": lambda: B.join(La, Ra, ["v0", "v1"], ["a0", "t"], "anti"),
        "filter": lambda: B.filter(La, B.col("exp") > B.lit(25)),
        "unique": lambda: B.unique(La, ["v0", "v1"]),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=300)
    ap.add_argument("--format", choices=["text", "json"], default="text")
    ap.add_argument("--threads", type=int, default=1, help="Polars threads (default 1)")
    args = ap.parse_args(argv)
    os.environ["POLARS_MAX_THREADS"] = str(args.threads)
    # the shapes of the turbine tick's largest and smallest operations (10⁴ devices)
    for n_left, n_right in ((5426, 1480), (1, 4)):
        L, R, lk, rk, cols = frames(n_left, n_right)
        cands = {"polars": polars_ops(L, R), "arrays": arrays_ops(L, R),
                 "numpy": numpy_ops(lk, rk, cols), "c": bare_ops("c", lk, rk, cols)}
        for op in cands["polars"]:
            row = {"op": op, "left_rows": n_left, "right_rows": n_right}
            for name, ops in cands.items():
                row[f"{name}_us"] = _time(ops[op], args.repeat) if op in ops else None
            if args.format == "json":
                print(json.dumps(row), flush=True)
            else:
                print(f"{op:11s} {n_left:>5} x {n_right:<5} " + "  ".join(
                    f"{n} {row[f'{n}_us'] if row[f'{n}_us'] is not None else '-':>8} µs"
                    for n in cands), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
