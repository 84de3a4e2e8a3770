"""One wide window, unfolded or as one literal (issue 45.2): `P(X, T) :- Diamondminus[0,W]
A(X, T), B(X, T)` over `--constants` constants (A with p = 0.05, B with p = 0.3 a tick),
the row engine's `Session.step` tick by tick, nothing printed: seconds, S_τ's size at the
end and the definite answers (which must be equal).  Figures only, nothing asserted.

    .venv/bin/python bench/wide_window.py                       # W = 1000, 300 ticks
    .venv/bin/python bench/wide_window.py --ticks 1500
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def run(mode: str, width: int, constants: int, ticks: int) -> tuple[float, float, int, int, int]:
    from reasoning.language.compiler import compile_program
    from reasoning.run.session import Session
    from reasoning.semantics.patterns import Fact

    text = f"#query P(X, T).\nP(X, T) :- Diamondminus[0,{width}] A(X, T), B(X, T).\n"
    rnd = random.Random(1)
    stream = {t: [Fact(p, (f"c{i}",), t) for i in range(constants)
                  for p, q in (("A", 0.05), ("B", 0.3)) if rnd.random() < q]
              for t in range(ticks)}
    t0 = time.perf_counter()
    cp = compile_program(text, "w.tdl", windows=mode)
    tc = time.perf_counter() - t0
    t0 = time.perf_counter()
    sess = Session(cp, engine="row")
    definite = 0
    for t in range(ticks):
        definite += len(sess.step(stream[t], t).new_definite)
    return tc, time.perf_counter() - t0, len(cp.main.templates), sess.state_size, definite


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--width", type=int, default=1000)
    ap.add_argument("--constants", type=int, default=10)
    ap.add_argument("--ticks", type=int, default=300)
    args = ap.parse_args(argv)
    print("| windows | templates | compile s | ticks s | S_τ at the end | definite |\n"
          "|---|---|---|---|---|---|")
    for mode in ("unfold", "literal"):
        tc, tt, n, size, d = run(mode, args.width, args.constants, args.ticks)
        print(f"| {mode} | {n} | {tc:.2f} | {tt:.2f} | {size} | {d} |", flush=True)
    return 0


if __name__ == "__main__":
    import __main__
    __main__.__file__ = __file__  # (see scripts/setup.sh: PySpark's connect check)
    sys.exit(main())
