"""The turbine benchmark (issue 6): the online engine vs (a) recompute and (b) watermark.

    python -m bench.compare [--devices 50] [--ticks 1000] [--seed 0] [--out bench/out]

Workload: the wind-turbine program of the main paper's Example 1/13 over N devices
wt1..wtN.  Device k has its own delay bound δ_k ∈ 0..MAX_DELAY (`#delay Hot(wtk, T) = δ_k`);
each of its hot readings (a two-state Markov chain per device, so shutdowns happen) arrives
a uniformly random 0..δ_k ticks after its timestamp.  Ticks 0..TICKS are processed; facts
arriving after the last tick are cut off.

Per tick we time: ours = `Engine.step` for the query Shdn(X, T) plus `Engine.step` for the
query OK(X, T) (two engines); (a) = building the clingo text, grounding and solving over
D_τ, once per query; (b) = the same over the window of released facts, once per query.
Answers are compared (the run fails if they disagree), and for each answer we record the
tick at which ours first reported it as hypothetical (with evidence) and as definite, the
tick (a) reported it, and the tick (b) released it.  For Shdn(x, t), "first evidence" is
the first arrival of one of Hot(x, t-2), Hot(x, t-1), Hot(x, t).

Prints a table and writes bench/out/compare.png and bench/out/compare.json.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time as clock
from pathlib import Path
from typing import Optional

from bench.clingo_baseline import ClingoProgram, Ours, Recompute, Watermark, max_delay
from reasoning.language.compiler import compile_program
from reasoning.language.parser import parse_atom
from reasoning.semantics.patterns import Fact

MAX_DELAY = 3
P_START, P_STAY = 0.12, 0.6  # Markov chain of "hot": start a hot spell, stay hot


def program_text(devices: int, delays: list[int]) -> str:
    names = [f"wt{k}" for k in range(1, devices + 1)]
    lines = ["% wind turbines, benchmark workload (bench/compare.py)",
             "#query OK(X, T).", f"#domain {', '.join(names)}.", f"#delay Hot = {MAX_DELAY}."]
    lines += [f"#delay Hot({n}, T) = {d}." for n, d in zip(names, delays)]
    lines += ["Flag(X, T) :- Hot(X, T).",
              "Cool(X, T+1) :- Flag(X, T), Flag(X, T+1).",
              "Shdn(X, T+1) :- Cool(X, T), Flag(X, T+1).",
              "OK(X, T-1) :- not Shdn(X, T)."]
    return "\n".join(lines) + "\n"


def workload(devices: int, ticks: int, seed: int):
    """(program text, stream tick -> [Fact], arrival of every fact)."""
    rnd = random.Random(seed)
    delays = [rnd.randint(0, MAX_DELAY) for _ in range(devices)]
    stream: dict[int, list[Fact]] = {}
    arrival: dict[Fact, int] = {}
    for k in range(devices):
        hot = False
        for t in range(ticks + 1):
            hot = rnd.random() < (P_STAY if hot else P_START)
            if not hot:
                continue
            f = Fact("Hot", (f"wt{k + 1}",), t)
            a = t + rnd.randint(0, delays[k])
            if a <= ticks:
                stream.setdefault(a, []).append(f)
                arrival[f] = a
    return program_text(devices, delays), stream, arrival


def _t(key: tuple) -> int:
    return dict(key)["T"]


def run(devices: int = 50, ticks: int = 1000, seed: int = 0, out: Path = Path("bench/out"),
        plot: bool = True, quiet: bool = False) -> dict:
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    text, stream, arrival = workload(devices, ticks, seed)
    cp = compile_program(text, "<bench>")
    maxd = max_delay(cp)
    domain = cp.domain
    queries = {"Shdn": parse_atom("Shdn(X, T)"), "OK": parse_atom("OK(X, T)")}
    ours, rec, wm, cls = {}, {}, {}, {}
    for q, atom in queries.items():
        qcp = compile_program(text.replace("#query OK(X, T).", f"#query {atom}."), "<bench>")
        ours[q] = Ours(qcp, domain)
        cls[q] = ClingoProgram(qcp)
        rec[q] = Recompute(cls[q], maxd, domain)
        wm[q] = Watermark(cls[q], maxd, domain)
    n_facts = sum(len(v) for v in stream.values())
    say(f"workload: N = {devices} devices, ticks 0..{ticks}, seed {seed}, {n_facts} Hot facts, "
        f"max δ = {maxd}, per-device δ = {dict(sorted((k, cp.delays.ground('Hot', (k,))) for k in domain[:8]))}"
        f"{' …' if devices > 8 else ''}")
    say(f"look-ahead need(Shdn) = {cls['Shdn'].need}, need(OK) = {cls['OK'].need}; "
        f"watermark w = τ - {maxd}")

    first = {q: {"hyp": {}, "def": {}, "rec": {}, "wm": {}} for q in queries}
    so_far = {q: set() for q in queries}
    rows = []
    disagreements: list[str] = []
    facts_so_far = 0
    for tau in range(ticks + 1):
        facts = stream.get(tau, [])
        facts_so_far += len(facts)
        row = {"tau": tau, "facts": facts_so_far, "ours": 0.0, "rec": 0.0, "wm": 0.0,
               "ours_cpu": 0.0, "rec_cpu": 0.0, "wm_cpu": 0.0}
        for q in queries:
            hyp, dfn, dt = ours[q].step(facts, tau)
            row["ours"] += dt
            row["ours_cpu"] += ours[q].last_cpu
            for k in hyp | dfn:
                first[q]["hyp"].setdefault(k, tau)
            for k in dfn:
                first[q]["def"].setdefault(k, tau)
            so_far[q] |= dfn
            t0, c0 = clock.perf_counter(), clock.process_time()
            rel, _ = wm[q].step(facts, tau)
            row["wm"] += clock.perf_counter() - t0
            row["wm_cpu"] += clock.process_time() - c0
            for k in rel:
                first[q]["wm"].setdefault(k, tau)
            t0, c0 = clock.perf_counter(), clock.process_time()
            new, _ = rec[q].step(facts, tau)
            row["rec"] += clock.perf_counter() - t0
            row["rec_cpu"] += clock.process_time() - c0
            for k in new:
                first[q]["rec"].setdefault(k, tau)
            # (a) is sound: all it reports ours has as definite; for Shdn (positive) equal
            if not new <= so_far[q]:
                disagreements.append(f"τ={tau} {q}: (a) has {sorted(new - so_far[q])[:3]}")
            if q == "Shdn" and len(rec[q].reported) != len(so_far[q]):
                disagreements.append(f"τ={tau} Shdn: ours {sorted(so_far[q] - rec[q].reported)[:3]}")
        rows.append(row)
        if not quiet and tau % max(1, ticks // 10) == 0:
            r = row
            say(f"  τ={tau:5d}  |D_τ|={r['facts']:6d}  ours {r['ours'] * 1e3:8.2f} ms   "
                f"(a) {(r['rec'] or 0) * 1e3:8.2f} ms   (b) {r['wm'] * 1e3:8.2f} ms")

    # ------------------------------------------------------------------ final answers
    final = {q: cls[q].closed_world([f for v in stream.values() for f in v], ticks + 2).answers
             for q in queries}
    settled = ticks - maxd - 1  # answers whose time t <= settled are final by the last tick
    for q in queries:
        extra = so_far[q] - set(final[q])
        if extra:
            disagreements.append(f"{q}: ours definite but not final: {sorted(extra)[:3]}")
        want = {k for k, t in final[q].items() if t <= settled}
        got = {k for k in so_far[q] if _t(k) <= settled}
        if got != want:
            disagreements.append(f"{q}: ours {len(got)} vs final {len(want)} answers")
        wgot = {k for k in first[q]["wm"] if _t(k) <= settled - cls[q].need}
        wwant = {k for k in want if _t(k) <= settled - cls[q].need}
        if wgot != wwant:
            disagreements.append(f"{q}: watermark {len(wgot)} vs final {len(wwant)}")
    refuted = {k for k in first["Shdn"]["hyp"] if k not in final["Shdn"]
               and _t(k) <= settled}

    # ------------------------------------------------------------------ latencies
    def ev_first(k) -> Optional[int]:
        x, t = dict(k)["X"], _t(k)
        ticks_ = [arrival.get(Fact("Hot", (x,), s)) for s in (t - 2, t - 1, t)]
        return min(a for a in ticks_ if a is not None)

    lat = {"shdn_hyp": [], "shdn_def": [], "shdn_rec": [], "shdn_wm": [],
           "ok_def": [], "ok_rec": [], "ok_wm": []}
    horizon = ticks - maxd - 1  # answers that (b) had the chance to release
    for k, t in final["Shdn"].items():
        if t > horizon - cls["Shdn"].need:
            continue
        e = ev_first(k)
        lat["shdn_hyp"].append(first["Shdn"]["hyp"][k] - e)
        lat["shdn_def"].append(first["Shdn"]["def"][k] - e)
        if k in first["Shdn"]["rec"]:
            lat["shdn_rec"].append(first["Shdn"]["rec"][k] - e)
        lat["shdn_wm"].append(first["Shdn"]["wm"][k] - e)
    for k, t in final["OK"].items():
        if t > horizon - cls["OK"].need:
            continue
        lat["ok_def"].append(first["OK"]["def"][k] - t)
        if k in first["OK"]["rec"]:
            lat["ok_rec"].append(first["OK"]["rec"][k] - t)
        lat["ok_wm"].append(first["OK"]["wm"][k] - t)

    # ------------------------------------------------------------------ summary
    def med(xs):
        return statistics.median(xs) if xs else float("nan")

    def mean_ms(sel, key):
        xs = [r[key] for r in sel]
        return 1e3 * statistics.fmean(xs) if xs else float("nan")

    last = rows[-1]
    tail = rows[-10:]
    early = [r for r in rows if 10 <= r["tau"] < 110] or rows[:10]
    late = rows[-100:]
    summary = {
        "devices": devices, "ticks": ticks, "seed": seed, "facts": n_facts, "max_delay": maxd,
        "ours_ms_at_last": last["ours"] * 1e3, "rec_ms_at_last": last["rec"] * 1e3,
        "wm_ms_at_last": last["wm"] * 1e3,
        "ours_ms_last10": mean_ms(tail, "ours"), "rec_ms_last10": mean_ms(tail, "rec"),
        "wm_ms_last10": mean_ms(tail, "wm"),
        "ours_ms_early": mean_ms(early, "ours"), "ours_ms_late": mean_ms(late, "ours"),
        "rec_ms_early": mean_ms(early, "rec"), "rec_ms_late": mean_ms(late, "rec"),
        "buckets": buckets(rows),
        "speedup_at_last": last["rec"] / last["ours"] if last["ours"] else float("inf"),
        "speedup_median_last10": (statistics.median(r["rec"] for r in tail)
                                  / statistics.median(r["ours"] for r in tail)),
        "speedup_cpu_median_last10": (statistics.median(r["rec_cpu"] for r in tail)
                                      / max(1e-9, statistics.median(r["ours_cpu"] for r in tail))),
        "speedup_last10": mean_ms(tail, "rec") / mean_ms(tail, "ours"),
        "ours_total_s": sum(r["ours"] for r in rows),
        "rec_total_s": sum(r["rec"] for r in rows),
        "wm_total_s": sum(r["wm"] for r in rows),
        "shdn_answers": len(lat["shdn_hyp"]), "ok_answers": len(lat["ok_def"]),
        "shdn_refuted_hypotheticals": len(refuted),
        "median": {k: med(v) for k, v in lat.items()},
        "mean": {k: (statistics.fmean(v) if v else float("nan")) for k, v in lat.items()},
        "disagreements": disagreements,
        "agree": not disagreements,
    }
    if not quiet:
        print_table(summary)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps(
        {"summary": summary, "per_tick": rows, "latency": lat}, indent=1))
    if plot:
        draw(rows, lat, summary, out / "compare.png")
        say(f"wrote {out / 'compare.png'} and {out / 'compare.json'}")
    return summary


def buckets(rows: list[dict]) -> list[dict]:
    """Median per-tick times over blocks of ~1/10 of the run (the flatness check)."""
    size = max(1, len(rows) // 10)
    starts = list(range(0, len(rows), size))
    if len(starts) > 1 and len(rows) - starts[-1] < size:
        starts.pop()  # the remainder joins the last block
    out = []
    for j, i in enumerate(starts):
        sel = rows[i:(starts[j + 1] if j + 1 < len(starts) else len(rows))]
        out.append({"from": sel[0]["tau"], "to": sel[-1]["tau"], "facts": sel[-1]["facts"],
                    **{k: 1e3 * statistics.median(r[k] for r in sel)
                       for k in ("ours", "rec", "wm", "ours_cpu", "rec_cpu", "wm_cpu")}})
    return out


def print_table(s: dict) -> None:
    m, a = s["median"], s["mean"]
    print()
    print(f"N = {s['devices']} devices, τ = 0..{s['ticks']}, {s['facts']} facts, max δ = "
          f"{s['max_delay']}, seed {s['seed']}")
    print()
    def line(label, facts, ours, rec, wm, ratio):
        cols = [f"{facts:>10}", f"{ours:>8}", f"{rec:>15}", f"{wm:>15}", f"{ratio:>10}"]
        print(f"  {label:<28}" + "".join(cols))

    def f2(x):
        return f"{x:.2f}"

    line("median wall ms per tick", "|D_τ|", "ours", "(a) recompute", "(b) watermark", "(a)/ours")
    for b in s["buckets"]:
        line(f"τ = {b['from']}..{b['to']}", b["facts"], f2(b["ours"]), f2(b["rec"]),
             f2(b["wm"]), f"{b['rec'] / b['ours']:.0f}x")
    line("median CPU ms per tick", "", "", "", "", "")
    for b in s["buckets"]:
        line(f"τ = {b['from']}..{b['to']}", "", f2(b["ours_cpu"]), f2(b["rec_cpu"]),
             f2(b["wm_cpu"]), f"{b['rec_cpu'] / b['ours_cpu']:.0f}x")
    line("wall ms", "", "", "", "", "")
    line(f"τ = {s['ticks']} (single tick)", "", f2(s["ours_ms_at_last"]),
         f2(s["rec_ms_at_last"]), f2(s["wm_ms_at_last"]), f"{s['speedup_at_last']:.0f}x")
    line("mean of the last 10 ticks", "", f2(s["ours_ms_last10"]), f2(s["rec_ms_last10"]),
         f2(s["wm_ms_last10"]), f"{s['speedup_last10']:.0f}x")
    line("total over the run (s)", "", f2(s["ours_total_s"]), f2(s["rec_total_s"]),
         f2(s["wm_total_s"]), "")
    print(f"  speed-up of ours over (a) at τ = {s['ticks']}: {s['speedup_at_last']:.0f}x "
          f"(ratio of medians over the last 10 ticks: {s['speedup_median_last10']:.0f}x)")
    print()
    print("latency (ticks)                                   median   mean")
    rows = [
        ("Shdn: first evidence -> ours first report (hyp.)", "shdn_hyp"),
        ("Shdn: first evidence -> ours definite", "shdn_def"),
        ("Shdn: first evidence -> (a) recompute report", "shdn_rec"),
        ("Shdn: first evidence -> (b) watermark release", "shdn_wm"),
        ("OK:   answer time t -> ours definite", "ok_def"),
        ("OK:   answer time t -> (a) recompute report", "ok_rec"),
        ("OK:   answer time t -> (b) watermark release", "ok_wm"),
    ]
    for label, k in rows:
        print(f"  {label:<48s} {m[k]:6.1f} {a[k]:6.2f}")
    print(f"  ({s['shdn_answers']} Shdn answers, {s['ok_answers']} OK answers; "
          f"{s['shdn_refuted_hypotheticals']} hypothetical Shdn answers later refuted)")
    print()
    bs = s["buckets"]
    flat = bs[-1]["ours"] / bs[1]["ours"] if len(bs) > 1 else 1.0
    grow = bs[-1]["rec"] / bs[1]["rec"] if len(bs) > 1 else 1.0
    goals = [
        (f"ours flat in τ (median of the last block / of the second block = {flat:.2f}; "
         f"(a): {grow:.1f})", flat < 1.5),
        (f"ours >= 50x faster than (a) at τ = {s['ticks']} "
         f"({s['speedup_median_last10']:.0f}x wall, {s['speedup_cpu_median_last10']:.0f}x CPU; "
         f"medians of the last 10 ticks)",
         s["speedup_median_last10"] >= 50),
        (f"median ticks from first evidence to our first report = 0 ({m['shdn_hyp']:g})",
         m["shdn_hyp"] == 0),
        (f"watermark median delay to any report >= max δ = {s['max_delay']} "
         f"({m['shdn_wm']:g} for Shdn, {m['ok_wm']:g} for OK after t)",
         m["shdn_wm"] >= s["max_delay"]),
    ]
    print("goals (issue 6):")
    for text, ok in goals:
        print(f"  [{'met' if ok else 'NOT met'}] {text}")
    print()
    print("answers agree (ours = (a) = (b) = clingo over the whole stream):",
          "yes" if s["agree"] else "NO: " + "; ".join(s["disagreements"][:5]))


def draw(rows, lat, s, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(16, 4.8))
    series = [("ours (Shdn + OK engines)", [(r["tau"], r["ours"]) for r in rows]),
              ("(a) recompute (clingo)", [(r["tau"], r["rec"]) for r in rows]),
              ("(b) watermark (clingo, window)", [(r["tau"], r["wm"]) for r in rows])]
    for (label, pts), color in zip(series, ["C0", "C1", "C2"]):
        xs, ys = [t for t, _ in pts], [v * 1e3 for _, v in pts]
        ax1.plot(xs, ys, lw=0.5, alpha=0.35, color=color)
        w = max(1, len(ys) // 40)
        roll = [statistics.median(ys[max(0, i - w):i + w + 1]) for i in range(len(ys))]
        ax1.plot(xs, roll, lw=1.6, color=color, label=f"{label} (rolling median)")
    ax1.set_yscale("log")
    ax1.set_xlabel("tick τ")
    ax1.set_ylabel("wall time per tick (ms)")
    ax1.set_title(f"per-tick time, N = {s['devices']}")
    ax1.legend(fontsize=8)
    bins = range(0, max([0] + lat["shdn_wm"] + lat["shdn_def"]) + 2)
    ax2.hist([lat["shdn_hyp"], lat["shdn_def"], lat["shdn_wm"]], bins=bins, align="left",
             label=["ours: first report (hypothetical)", "ours: definite", "(b) watermark"])
    ax2.set_xlabel("ticks from first evidence")
    ax2.set_ylabel("Shdn answers")
    ax2.set_title("Shdn(X, T): latency to first information")
    ax2.legend(fontsize=8)
    bins = range(0, max([0] + lat["ok_wm"] + lat["ok_def"]) + 2)
    ax3.hist([lat["ok_def"], lat["ok_wm"]], bins=bins, align="left",
             label=["ours: definite", "(b) watermark"])
    ax3.set_xlabel("ticks after the answer's time t")
    ax3.set_ylabel("OK answers")
    ax3.set_title("OK(X, T): latency to report")
    ax3.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__.split("\n")[0])
    p.add_argument("--devices", type=int, default=50, help="N turbines (default 50)")
    p.add_argument("--ticks", type=int, default=1000, help="last tick τ (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=str(Path(__file__).resolve().parent / "out"))
    p.add_argument("--no-plot", action="store_true")
    args = p.parse_args(argv)
    s = run(args.devices, args.ticks, args.seed, Path(args.out), not args.no_plot)
    return 0 if s["agree"] else 1


if __name__ == "__main__":
    sys.exit(main())
