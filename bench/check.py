"""`hypo check` benchmark: parse → well-formedness → analysis → pre-processing into 𝐐 and
P_Q (002 §2, Example 4) on generated programs of N rules, in-process (compile_program) and,
with --cli, end to end (`hypo check FILE` in a subprocess).

Shapes (each with a small P_Q: what must stay near-linear in N):
  chain        A1(T) :- A0(T).  …  AN(T) :- AN-1(T).   query AN(T); one template {A0(T)}
  wide         P(T) :- A1(T), …, AN(T).  Ai(T) :- Bi(T).   one template of N hypotheses
  independent  Pi(X, T) :- Ri(X, T), not Si(X, T-1).  for i < N; query P0(X, T)
  explode      P(T) :- A0(T), …, Ak(T) with two rules per Ai (k = log2 N): 2^(k+1)
               derivations; reports the time to the template-budget error
  diamond      P(X, T) :- Diamondminus[0,N-1] E(X, T).   N one-literal templates (a window
               past 4 096 ticks: the time to the error)
  since        P(X, T) :- not A(X, T) Since[0,N-1] B(X, T).   N(N+1)/2 literals (past
               65 536: the time to the translation's error)

    .venv/bin/python bench/check.py                          # N = 10^2, 10^3, 10^4
    .venv/bin/python bench/check.py --sizes 100 1000 10000 --shapes chain wide --cli
    .venv/bin/python bench/check.py --format json

Goals are read from the printed figures, never asserted in tests.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHAPES = ("chain", "wide", "independent", "explode", "diamond", "since")


def chain(n: int) -> str:
    """A nonrecursive chain of n rules, query on its top."""
    lines = [f"#query A{n}(T).", "#delay A0 = 1."]
    lines += [f"A{i}(T) :- A{i - 1}(T)." for i in range(1, n + 1)]
    return "\n".join(lines) + "\n"


def wide(n: int) -> str:
    """One rule of n IDB body atoms, each defined by one rule over its own stream."""
    lines = ["#query P(T).", "#delay B1 = 1."]
    lines.append("P(T) :- " + ", ".join(f"A{i}(T)" for i in range(1, n + 1)) + ".")
    lines += [f"A{i}(T) :- B{i}(T)." for i in range(1, n + 1)]
    return "\n".join(lines) + "\n"


def independent(n: int) -> str:
    """n unrelated rules with negation; the query reaches one of them."""
    lines = ["#query P0(X, T).", "#delay R0 = 1."]
    lines += [f"P{i}(X, T) :- R{i}(X, T), not S{i}(X, T-1)." for i in range(n)]
    return "\n".join(lines) + "\n"


def explode(k: int) -> str:
    """P(T) :- A0(T), …, Ak(T) with Ai(T) :- Bi(T). and Ai(T) :- Ci(T).: 2^(k+1) templates."""
    lines = ["#query P(T)."]
    lines += [f"#delay B{i} = 1.\n#delay C{i} = 1." for i in range(k + 1)]
    lines.append("P(T) :- " + ", ".join(f"A{i}(T)" for i in range(k + 1)) + ".")
    for i in range(k + 1):
        lines += [f"A{i}(T) :- B{i}(T).", f"A{i}(T) :- C{i}(T)."]
    return "\n".join(lines) + "\n"


def program(shape: str, n: int) -> str:
    """The program text of a shape at size n (explode: k = log2 n)."""
    if shape == "explode":
        return explode(max(1, round(math.log2(n))))
    if shape == "diamond":
        return f"#query P(X, T).\nP(X, T) :- Diamondminus[0,{n - 1}] E(X, T).\n"
    if shape == "since":
        return f"#query P(X, T).\nP(X, T) :- not A(X, T) Since[0,{n - 1}] B(X, T).\n"
    return {"chain": chain, "wide": wide, "independent": independent}[shape](n)


def measure(shape: str, n: int, cli: bool) -> dict:
    """Seconds for compile_program (and `hypo check` end to end with cli)."""
    from reasoning.language.compiler import compile_program, describe_text
    from reasoning.language.errors import ProgramError

    text = program(shape, n)
    rules = text.count(":-")
    t0 = time.perf_counter()
    try:
        cp = compile_program(text, f"<{shape}>")
        describe_text(cp)
        result = f"{sum(len(q.templates) for q in cp.queries)} templates"
    except ProgramError as e:
        result = "error: " + e.message[:70]
    row = {"shape": shape, "n": n, "rules": rules, "seconds": time.perf_counter() - t0,
           "result": result}
    if cli:
        row["cli_seconds"] = _cli(text)
    return row


def _cli(text: str) -> float:
    """Wall time of `hypo check FILE` (a fresh process: imports included)."""
    with tempfile.NamedTemporaryFile("w", suffix=".tdl", delete=False) as fh:
        fh.write(text)
    try:
        hypo = ROOT / ".venv" / "bin" / "hypo"
        t0 = time.perf_counter()
        subprocess.run([str(hypo), "check", fh.name], capture_output=True, check=False)
        return time.perf_counter() - t0
    finally:
        os.unlink(fh.name)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    ap.add_argument("--cli", action="store_true", help="also time `hypo check` end to end")
    ap.add_argument("--format", choices=["text", "json"], default="text")
    args = ap.parse_args(argv)
    for shape in args.shapes:
        for n in args.sizes:
            row = measure(shape, n, args.cli)
            if args.format == "json":
                print(json.dumps(row), flush=True)
                continue
            cli = f"  cli {row['cli_seconds']:7.3f} s" if args.cli else ""
            print(f"{shape:<12} N={n:<6} rules={row['rules']:<6} check {row['seconds']:7.3f} s"
                  f"{cli}  {row['result']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
