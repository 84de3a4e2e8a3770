"""Calibration of `hypo run --confidence` (002 §8 "confidence levels"), pruning at
`--max-state N`, and the cost of the confidences, on bench/engine.py's workloads.

  calibration  every announced confidence of a non-definite answer (any query, pending
               included; one record per answer and tick) against its outcome: confirmed if
               an answer of the same query and substitution became definite later, else
               refuted (answers still open at the end are left out).  10 bins, the observed
               confirmation rate per bin, the Brier score, and the Brier score of the constant
               base rate (a reference: skill = 1 − Brier / base).  Lossy variants drop a
               fraction of the facts at random before the run.
  pruning      the row engine with `--max-state N`: main-query answers that became definite
               without pruning and not with it (lost), and the state rows saved (mean, peak);
               the control keeps as many answers chosen at random (lost % (random)).
  cost         the columnar executor at 10⁴ devices: ms per tick of Algorithm 1 and of the
               confidences (rendering S_τ's objects, the model's update, the printed lines).

    .venv/bin/python bench/confidence.py --devices 300 --ticks 120 --drop 0 0.1 0.3
    .venv/bin/python bench/confidence.py --cost --devices 10000 --ticks 20
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.engine import workload  # noqa: E402


def _facts(slices, drop: float, seed: int):
    from reasoning.semantics.patterns import Fact

    rnd = random.Random(seed + 1)
    return [[Fact(p, a, t) for p, a, t in s if not (drop and rnd.random() < drop)]
            for s in slices]


def _key(o: dict) -> tuple:
    return o["query"], json.dumps(o["substitution"], sort_keys=True)


def calibrate(wl: str, n: int, ticks: int, drop: float, seed: int, engine: str = "row") -> dict:
    """Announced confidences vs outcomes on one workload (module doc)."""
    from reasoning.language.compiler import compile_program
    from reasoning.insight.confidence import Confidence
    from reasoning.run.session import Session

    text, slices = workload(wl, n, ticks, seed)
    cp = compile_program(text, "<bench>")
    facts = _facts(slices, drop, seed)
    sess = Session(cp, engine=engine)
    conf = Confidence(cp)
    main = str(cp.main.atom)
    extra = max([cp.delays.max(p) for p in cp.analysis.edb] or [0]) + 8
    recs = []  # (group, key, confidence, tick)
    confirmed: dict = {}
    last_seen: dict = {}
    for tau in range(ticks + extra):
        fs = facts[tau] if tau < len(facts) else []
        sess.step(fs, tau)
        objs = sess.objects(True, True, False)
        conf.observe(tau, fs, objs)
        for o in objs:
            k = _key(o)
            if o["status"] == "definite":
                confirmed.setdefault(k, tau)
                continue
            last_seen[k] = tau
            grp = ("main " if o["query"] == main else "aux ") + o["status"]
            recs.append((grp, k, conf.of(o), tau))
    end = ticks + extra - 1
    rows = [(g, c, 1.0 if (k in confirmed and confirmed[k] >= t) else 0.0)
            for g, k, c, t in recs if k in confirmed or last_seen[k] < end]
    out = {"workload": wl, "devices": n, "ticks": ticks, "drop": drop,
           "model": conf.model.summary()[:1]}
    out["all"] = _reliability([(c, y) for _, c, y in rows])
    for g in sorted({g for g, _, _ in rows}):
        out[g] = _reliability([(c, y) for gg, c, y in rows if gg == g])
    return out


def _reliability(pairs: list) -> dict:
    """10 bins of announced confidence: n, mean confidence, observed rate; Brier scores."""
    if not pairs:
        return {"n": 0}
    bins = [[] for _ in range(10)]
    for c, y in pairs:
        bins[min(int(c * 10), 9)].append((c, y))
    rate = sum(y for _, y in pairs) / len(pairs)
    brier = sum((c - y) ** 2 for c, y in pairs) / len(pairs)
    base = sum((rate - y) ** 2 for _, y in pairs) / len(pairs)
    return {"n": len(pairs), "rate": round(rate, 3), "brier": round(brier, 4),
            "brier_base_rate": round(base, 4),
            "skill": round(1 - brier / base, 3) if base else None,
            "bins": [{"bin": f"{i / 10:.1f}-{(i + 1) / 10:.1f}", "n": len(b),
                      "mean_conf": round(statistics.mean(c for c, _ in b), 3),
                      "observed": round(statistics.mean(y for _, y in b), 3)}
                     for i, b in enumerate(bins) if b]}


def prune(wl: str, n: int, ticks: int, max_state, seed: int, drop: float = 0.0,
          randomly: bool = False, engine: str = "row") -> dict:
    """The row engine with --max-state N (None: no pruning): definite main-query answers
    and the state size after each tick."""
    import io
    from types import SimpleNamespace

    from reasoning.run.pruning import Pruner
    from reasoning.language.compiler import compile_program
    from reasoning.run.session import Session

    text, slices = workload(wl, n, ticks, seed)
    cp = compile_program(text, "<bench>")
    facts = _facts(slices, drop, seed)
    sess = Session(cp, engine=engine)
    args = SimpleNamespace(confidence=False, min_confidence=None, max_state=max_state,
                           all_queries=False, all=False, ground=False)
    pr = Pruner(args, cp, sess, io.StringIO())
    if randomly:  # the control: the same number of answers kept, chosen at random
        rnd = random.Random(seed + 2)
        pr.order = lambda x: rnd.random()
    definite, sizes = set(), []
    t0 = time.perf_counter()
    for tau, fs in enumerate(facts):
        sess.step(fs, tau)
        pr.tick(tau, fs)
        for o in sess.objects(False, False, False):
            if o["status"] == "definite":
                definite.add(_key(o))
        sizes.append(len(sess.row.answers) if sess.row is not None else
                     sum(f.height for parts in sess.col.S for f in parts.values()))
    return {"max_state": max_state, "definite": definite, "mean_state": statistics.mean(sizes),
            "peak_state": max(sizes), "pruned": pr.n_over,
            "seconds": round(time.perf_counter() - t0, 2)}


def pruning_table(wl: str, n: int, ticks: int, sizes: list, seed: int, drop: float) -> list:
    base = prune(wl, n, ticks, None, seed, drop)
    rows = []
    for N in sizes:
        r = prune(wl, n, ticks, N, seed, drop)
        lost = len(base["definite"] - r["definite"])
        rr = prune(wl, n, ticks, N, seed, drop, randomly=True)
        lost_random = len(base["definite"] - rr["definite"])
        rows.append({"workload": wl, "devices": n, "drop": drop, "max_state": N,
                     "pruned": r["pruned"], "definite_lost": lost,
                     "definite_total": len(base["definite"]),
                     "lost_pct": round(100 * lost / max(1, len(base["definite"])), 1),
                     "lost_pct_random": round(100 * lost_random / max(1, len(base["definite"])),
                                              1),
                     "mean_state": round(r["mean_state"], 1),
                     "mean_state_unpruned": round(base["mean_state"], 1),
                     "saved_pct": round(100 * (1 - r["mean_state"] / base["mean_state"]), 1)
                     if base["mean_state"] else 0.0,
                     "peak_state": r["peak_state"], "peak_state_unpruned": base["peak_state"]})
    return rows


def cost(wl: str, n: int, ticks: int, seed: int, engine: str = "columnar") -> dict:
    """ms per tick: Algorithm 1 alone, and the confidences on top (module doc)."""
    from reasoning.language.compiler import compile_program
    from reasoning.insight.confidence import Confidence, line_with_confidence
    from reasoning.run.session import Session

    text, slices = workload(wl, n, ticks, seed)
    cp = compile_program(text, "<bench>")
    facts = _facts(slices, 0.0, seed)
    sess = Session(cp, engine=engine)
    conf = Confidence(cp)
    main = str(cp.main.atom)
    step, lines, extra = [], [], []
    for tau, fs in enumerate(facts):
        t0 = time.perf_counter()
        sess.step(fs, tau)
        t1 = time.perf_counter()
        sess.lines()
        t2 = time.perf_counter()
        objs = sess.objects(True, True, False)
        conf.observe(tau, fs, objs)
        [line_with_confidence(o, conf.of(o)) for o in objs  # what hypo run prints
         if o["query"] == main and o["status"] != "pending"]
        t3 = time.perf_counter()
        step.append(t1 - t0)
        lines.append(t2 - t1)
        extra.append(t3 - t2)
    med = lambda xs: round(statistics.median(xs) * 1e3, 1)  # noqa: E731
    return {"workload": wl, "engine": engine, "devices": n, "ticks": ticks,
            "step_ms": med(step), "lines_ms": med(lines), "confidence_ms": med(extra),
            "objects_per_tick": len(objs)}


def _md(res: dict) -> str:
    out = [f"### {res['workload']} devices {res['devices']} ticks {res['ticks']} "
           f"drop {res['drop']}"]
    for g, r in res.items():
        if not isinstance(r, dict) or "n" not in r or not r["n"]:
            continue
        out.append(f"{g}: n {r['n']}, confirmed {r['rate']}, Brier {r['brier']} "
                   f"(base rate {r['brier_base_rate']}, skill {r['skill']})")
        out.append("| bin | n | mean confidence | observed |\n|---|---|---|---|")
        out.extend(f"| {b['bin']} | {b['n']} | {b['mean_conf']} | {b['observed']} |"
                   for b in r["bins"])
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", nargs="+", default=["turbines", "malfunction"])
    ap.add_argument("--devices", type=int, default=300)
    ap.add_argument("--ticks", type=int, default=120)
    ap.add_argument("--drop", type=float, nargs="+", default=[0.0, 0.1, 0.3])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--max-state", type=int, nargs="*", default=[1000, 300, 100, 30])
    ap.add_argument("--cost", action="store_true", help="only the cost at --devices")
    ap.add_argument("--format", choices=["markdown", "json"], default="markdown")
    args = ap.parse_args(argv)
    if args.cost:
        for wl in args.workload:
            print(json.dumps(cost(wl, args.devices, args.ticks, args.seed)), flush=True)
        return 0
    for wl in args.workload:
        for d in args.drop:
            r = calibrate(wl, args.devices, args.ticks, d, args.seed)
            print(json.dumps(r) if args.format == "json" else _md(r), flush=True)
    if args.max_state:
        rows = []
        for wl in args.workload:
            rows += pruning_table(wl, args.devices, args.ticks, args.max_state, args.seed, 0.0)
        if args.format == "json":
            for r in rows:
                print(json.dumps(r))
        else:
            print("| workload | devices | --max-state | pruned | definite lost | lost % | "
                  "lost % (random) | mean state (unpruned) | saved % | peak state (unpruned) |"
                  "\n|---|---|---|---|---|---|---|---|---|---|")
            for r in rows:
                print(f"| {r['workload']} | {r['devices']} | {r['max_state']} | {r['pruned']} "
                      f"| {r['definite_lost']} / {r['definite_total']} | {r['lost_pct']} | "
                      f"{r['lost_pct_random']} | "
                      f"{r['mean_state']} ({r['mean_state_unpruned']}) | {r['saved_pct']} | "
                      f"{r['peak_state']} ({r['peak_state_unpruned']}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
