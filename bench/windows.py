"""Window programs (issue 45): hypo's executors against MeTeoR's semi-naive materialisation.

A positive program of metric operators (`Diamondminus`, `Boxminus`) over three EDB
predicates, `--constants` constants, `--ticks` ticks, each EDB atom true with probability
`--p` at each tick (facts arrive on time).  Per executor (`auto`, the default; `row`;
`columnar`) it times the run in process (Session.step tick by tick) and end to end (`hypo
run --format jsonl` of the stream file, whose definite answers are compared), and MeTeoR
2.0.0 (004's reasoner, a test dependency) materialising the same facts (a fact at tick k as the interval (k−1, k]).  The
definite answers after the last deadline are compared with MeTeoR's at the integer points
(the run fails if they differ).  Figures only, nothing asserted.

    .venv/bin/python bench/windows.py                      # 100 constants × 200 ticks
    .venv/bin/python bench/windows.py --program w1 --constants 30 100 300 --ticks 100
    .venv/bin/python bench/windows.py --program w3 --constants 10 100 --p 0.05 --engine auto
    .venv/bin/python bench/windows.py --family 210 --constants 3 --ticks 20 [--bound 10]
    .venv/bin/python bench/windows.py --family 60 --executors --constants 3 --ticks 12
    .venv/bin/python bench/windows.py --program w1 --engine row --windows unfold literal
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (head, [(operator or None, lo, hi, predicate)]) per rule; the first rule's head is queried
PROGRAMS = {
    "w1": [("P2", [("Boxminus", 0, 1, "P1"), ("Diamondminus", 1, 3, "E3")]),
           ("P1", [("Diamondminus", 0, 2, "E1"), (None, 0, 0, "E2")])],
    "w2": [("P3", [("Boxminus", 0, 2, "P2")]),
           ("P2", [("Diamondminus", 0, 2, "P1"), (None, 0, 0, "E3")]),
           ("P1", [("Diamondminus", 0, 3, "E1"), ("Boxminus", 0, 1, "E2")])],
    # one rule past metric translation's 4 096 rules: its windows lifted and kept (issue 45)
    "w3": [("P", [("Diamondminus", 0, 30, "E1"), ("Diamondminus", 0, 30, "E2"),
                  ("Diamondminus", 0, 30, "E3")])],
}
EDB = ("E1", "E2", "E3")


def ours(rules) -> str:
    def lit(op, lo, hi, p):
        return f"{p}(X, T)" if op is None else f"{op}[{lo},{hi}] {p}(X, T)"
    return (f"#query {rules[0][0]}(X, T).\n"
            + "".join(f"{h}(X, T) :- {', '.join(lit(*b) for b in body)}.\n" for h, body in rules))


def theirs(rules) -> list[str]:
    def lit(op, lo, hi, p):
        return f"{p}(X)" if op is None else f"{op}[{lo},{hi}]{p}(X)"
    return [f"{h}(X):-" + ",".join(lit(*b) for b in body) for h, body in rules]


def facts(constants: int, ticks: int, p: float, seed: int) -> list[tuple[str, str, int]]:
    rnd = random.Random(seed)
    return [(e, f"c{i}", t) for t in range(ticks) for e in EDB for i in range(constants)
            if rnd.random() < p]


def run_hypo(text: str, fs, ticks: int, engine: str, windows: str = "unfold") -> tuple[float, str]:
    """In process (Session.step tick by tick, nothing rendered): seconds, the executor."""
    from reasoning.language.compiler import compile_program
    from reasoning.run.session import Session
    from reasoning.semantics.patterns import Fact

    cp = compile_program(text, "windows.tdl", windows=windows)
    stream: dict = {}
    for e, c, t in fs:
        stream.setdefault(t, []).append(Fact(e, (c,), t))
    _warm()
    t0 = time.perf_counter()
    sess = Session(cp, engine=engine)
    for tau in range(ticks + 8):  # every window's deadline passed (bounds ≤ 5)
        sess.step(stream.get(tau, []), tau)
    return time.perf_counter() - t0, sess.why()


def _warm() -> None:
    """The executors' modules imported and the kernels loaded before the clock starts, as
    MeTeoR's are (the first configuration timed paid them, 0.1–0.2 s), and the previous
    run's garbage collected (after MeTeoR's, the first run paid up to 0.2 s for it)."""
    from reasoning.columnar import ColumnarEngine  # noqa: F401
    from reasoning.columnar.backends.choice import default_backend

    default_backend()
    gc.collect()


def run_cli(text: str, fs, ticks: int, engine: str, windows: str = "unfold") -> tuple[float, set]:
    """End to end: `hypo run --format jsonl` of the stream file (process start included):
    seconds, the definite answers (constant, tick) it printed."""
    with tempfile.TemporaryDirectory() as d:
        prog, stream = os.path.join(d, "w.tdl"), os.path.join(d, "w.jsonl")
        Path(prog).write_text(text)
        with open(stream, "w") as fh:
            for e, c, t in sorted(fs, key=lambda f: f[2]):
                fh.write(json.dumps({"tick": t, "fact": f"{e}({c}, {t})"}) + "\n")
        t0 = time.perf_counter()
        out = subprocess.run([str(ROOT / ".venv" / "bin" / "hypo"), "run", prog, "--stream",
                              stream, "--format", "jsonl", "--engine", engine, "--until",
                              str(ticks + 7), "--windows", windows], check=True,
                             capture_output=True, text=True)
        dt = time.perf_counter() - t0
    definite = set()
    for line in out.stdout.splitlines():
        o = json.loads(line)
        if o.get("status") == "definite":
            definite.add((o["substitution"]["X"], o["substitution"]["T"]))
    return dt, definite


def run_meteor(rules, fs, ticks: int, query: str) -> tuple[float, set]:
    """MeTeoR's semi-naive materialisation: seconds, the query's atoms at integer points."""
    return run_meteor_rules(theirs(rules), fs, ticks + 8, query)


def run_meteor_rules(theirs: list[str], fs, upto: int, query: str) -> tuple[float, set]:
    """MeTeoR on its own rule texts, the query's atoms at the integer points 0..upto − 1."""
    from meteor_reasoner.materialization.materialize import materialize
    from meteor_reasoner.utils.loader import load_dataset, load_program

    runs: dict = {}  # consecutive ticks as one interval (MeTeoR's boxes need them coalesced)
    for e, c, t in sorted(fs):
        r = runs.setdefault((e, c), [])
        if r and r[-1][1] == t - 1:
            r[-1][1] = t
        else:
            r.append([t, t])
    gc.collect()  # (the previous runs' garbage is not this run's)
    t0 = time.perf_counter()
    data = load_dataset([f"{e}({c})@({lo - 1},{hi}]" for (e, c), r in runs.items()
                         for lo, hi in r])
    program = load_program(theirs)
    with contextlib.redirect_stdout(io.StringIO()):  # it prints every iteration
        materialize(data, program, mode="seminaive", K=20)
    dt = time.perf_counter() - t0
    out = set()
    for ent, ivs in data.get(query, {}).items():
        for t in range(upto):
            if any((iv.left_value < t or (iv.left_value == t and not iv.left_open)) and
                   (t < iv.right_value or (t == iv.right_value and not iv.right_open))
                   for iv in ivs):
                out.add((ent[0].name, t))
    return dt, out


def family(n: int, seed: int, hi_max: int = 5) -> list[tuple[str, list[str], bool]]:
    """Issue 45's family: 2–4 levels of IDB predicates over E1, E2, 1–2 rules each of 1–3
    window literals (boxes, diamonds, Since) with bounds up to hi_max over the two levels
    below: (our text, MeTeoR's rules, whether it has a Since — MeTeoR 2.0.0's Since does
    not follow 004's definition, tests/test_metric.py, so those are not compared)."""
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        levels = rnd.randint(2, 4)
        ours, theirs, since = [], [], False
        for level in range(1, levels + 1):
            lower = ["E1", "E2"] + [f"P{j}" for j in range(max(1, level - 2), level)]
            for _ in range(rnd.randint(1, 2)):
                lits, mlits = [], []
                for _ in range(rnd.randint(1, 3)):
                    op = "Since" if rnd.random() < 0.1 else rnd.choice(["Boxminus",
                                                                        "Diamondminus"])
                    lo = rnd.randint(0, 2)
                    hi = min(hi_max, lo + rnd.randint(0, hi_max))
                    p, q = rnd.choice(lower), rnd.choice(lower)
                    if op == "Since":
                        since = True
                        lits.append(f"{p}(X, T) Since[{lo},{hi}] {q}(X, T)")
                        mlits.append(f"{p}(X)Since[{lo},{hi}]{q}(X)")
                    else:
                        lits.append(f"{op}[{lo},{hi}] {p}(X, T)")
                        mlits.append(f"{op}[{lo},{hi}]{p}(X)")
                ours.append(f"P{level}(X, T) :- {', '.join(lits)}.")
                theirs.append(f"P{level}(X):-" + ",".join(mlits))
        out.append((f"#query P{levels}(X, T).\n" + "\n".join(ours) + "\n", theirs, since))
    return out


def run_family(n: int, seed: int, hi_max: int, constants: int, ticks: int) -> int:
    """Per program: `hypo check` (compile, in process) and a run's seconds, refused or
    not, and — without Since — agreement with MeTeoR after the last deadline."""
    from reasoning.language.compiler import compile_program
    from reasoning.language.errors import ProgramError

    rnd = random.Random(seed + 1)
    stats = {"programs": n, "refused unfolded": 0, "refused": 0, "kept": 0, "agree": 0,
             "disagree": 0, "not compared (Since)": 0}
    worst_check = worst_run = 0.0
    bad = []
    for text, rules, since in family(n, seed, hi_max):
        try:
            compile_program(text, "f.tdl", modular="never")
        except ProgramError:
            stats["refused unfolded"] += 1
        gc.collect()  # (the previous program's garbage is not this one's, as in _warm)
        t0 = time.perf_counter()
        try:
            cp = compile_program(text, "f.tdl")
        except ProgramError as e:
            stats["refused"] += 1
            bad.append(("refused", text, e.message[:120]))
            continue
        worst_check = max(worst_check, time.perf_counter() - t0)
        stats["kept"] += bool(cp.modular)
        fs = [(e, f"c{i}", t) for t in range(ticks) for e in EDB[:2] for i in range(constants)
              if rnd.random() < 0.6]
        gc.collect()
        t0 = time.perf_counter()
        _, got = _run_until(cp, fs, ticks + 4 * (hi_max + 1) + 4)
        worst_run = max(worst_run, time.perf_counter() - t0)
        if since:
            stats["not compared (Since)"] += 1
            continue
        _, want = run_meteor_rules(theirs=rules, fs=fs, upto=ticks, query=cp.main.atom.pred)
        got = {(c, t) for c, t in got if t < ticks}  # (every deadline of those has passed)
        if got == want:
            stats["agree"] += 1
        else:
            stats["disagree"] += 1
            bad.append(("disagree", text, sorted(got ^ want)[:6]))
    print(json.dumps(stats))
    print(f"slowest hypo check {worst_check:.3f} s, slowest run {worst_run:.3f} s")
    for b in bad[:5]:
        print(*b, sep="\n  ")
    return 0 if not bad else 1


def compare_family(n: int, seed: int, hi_max: int, constants: int, ticks: int) -> int:
    """Issue 45's family kept modular (`modular="always"`) on the row engine and the
    columnar executor side by side: every tick's lines (every query, pending included)
    compared, each executor's seconds (ticks and lines) summed."""
    from reasoning.language.compiler import compile_program
    from reasoning.run.session import Session
    from reasoning.semantics.patterns import Fact

    rnd = random.Random(seed + 1)
    stats = {"programs": n, "kept": 0, "same": 0, "differ": 0}
    secs = {"row": 0.0, "columnar": 0.0}
    for text, _, _ in family(n, seed, hi_max):
        cp = compile_program(text, "f.tdl", modular="always")
        if not cp.modular:
            continue
        stats["kept"] += 1
        stream: dict = {}
        for t in range(ticks):
            for e in EDB[:2]:
                for i in range(constants):
                    if rnd.random() < 0.6:
                        stream.setdefault(t, []).append(Fact(e, (f"c{i}",), t))
        sess = {e: Session(cp, engine=e) for e in secs}
        same = True
        for tau in range(ticks + 4 * (hi_max + 1) + 4):
            lines = {}
            for e, ss in sess.items():
                t0 = time.perf_counter()
                ss.step(stream.get(tau, []), tau)
                lines[e] = ss.lines(True, True)
                secs[e] += time.perf_counter() - t0
            if lines["row"] != lines["columnar"]:
                same = False
                print(f"DIFFER at tick {tau}:\n{text}", file=sys.stderr)
                break
        stats["same" if same else "differ"] += 1
    print(json.dumps(stats))
    print(f"row {secs['row']:.1f} s, columnar {secs['columnar']:.1f} s (ticks and lines)")
    return 0 if not stats["differ"] else 1


def _run_until(cp, fs, until: int) -> tuple[float, set]:
    from reasoning.run.session import Session
    from reasoning.semantics.patterns import Fact

    stream: dict = {}
    for e, c, t in fs:
        stream.setdefault(t, []).append(Fact(e, (c,), t))
    sess = Session(cp)
    got = set()
    t0 = time.perf_counter()
    for tau in range(until + 1):
        sess.step(stream.get(tau, []), tau)
        got |= {(o["substitution"]["X"], o["substitution"]["T"])
                for o in sess.objects(False, False, True) if o["status"] == "definite"}
    return time.perf_counter() - t0, got


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--program", choices=sorted(PROGRAMS), nargs="+", default=["w2"])
    ap.add_argument("--constants", type=int, nargs="+", default=[100])
    ap.add_argument("--ticks", type=int, default=200)
    ap.add_argument("--p", type=float, default=0.4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--engine", nargs="+", default=["auto", "row", "columnar"])
    ap.add_argument("--windows", nargs="+", default=["unfold"], choices=["unfold", "literal"],
                    help="positive diamonds unfolded, or one literal each (issue 45.2)")
    ap.add_argument("--family", type=int, metavar="N",
                    help="instead: N random programs of issue 45's family (--bound, "
                         "--constants, --ticks of their streams)")
    ap.add_argument("--bound", type=int, default=5, help="--family: window bounds up to")
    ap.add_argument("--executors", action="store_true",
                    help="--family: kept modular, the row engine against the columnar "
                         "executor (lines every tick, seconds)")
    args = ap.parse_args(argv)
    if args.family and args.executors:
        return compare_family(args.family, args.seed, args.bound, args.constants[0],
                              args.ticks)
    if args.family:
        return run_family(args.family, args.seed, args.bound, args.constants[0], args.ticks)
    print("| program | constants × ticks | facts | what | in process s | `hypo run` s | "
          "definite | executor |\n|---|---|---|---|---|---|---|---|")
    for name in args.program:
        rules = PROGRAMS[name]
        text = ours(rules)
        for n in args.constants:
            fs = facts(n, args.ticks, args.p, args.seed)
            ms, mdef = run_meteor(rules, fs, args.ticks, rules[0][0])
            size = f"{n} × {args.ticks}"
            print(f"| {name} | {size} | {len(fs)} | MeTeoR semi-naive | {ms:.2f} | – | "
                  f"{len(mdef)} | – |", flush=True)
            for eng, win in [(e, w) for w in args.windows for e in args.engine]:
                s, why = run_hypo(text, fs, args.ticks, eng, win)
                e2e, d = run_cli(text, fs, args.ticks, eng, win)
                # (MeTeoR's points are 0..ticks+7; a past window from 0 makes later heads
                # definite already: those are not compared)
                d = {x for x in d if x[1] < args.ticks + 8}
                if d != mdef:
                    print(f"DISAGREE {name} {n} {eng}: ours−MeTeoR {sorted(d - mdef)[:5]}, "
                          f"MeTeoR−ours {sorted(mdef - d)[:5]}", file=sys.stderr)
                    return 1
                what = f"hypo `{eng}`" + ("" if win == "unfold" else f", `--windows {win}`")
                print(f"| {name} | {size} | {len(fs)} | {what} | {s:.2f} | {e2e:.2f} | "
                      f"{len(d)} | {why} |", flush=True)
    return 0


if __name__ == "__main__":
    import __main__
    __main__.__file__ = __file__  # (see scripts/setup.sh: PySpark's connect check)
    sys.exit(main())
