"""Confidence of hypothetical answers (002 §8): the arrival model on hand-made arrival
patterns, confidences of definite and hypothetical answers, both executors, pruning, and
the default output unchanged without the flags."""
from __future__ import annotations

import json

import pytest

from reasoning.language.analysis import Delays
from reasoning.cli.main import main
from reasoning.language.compiler import compile_program
from reasoning.insight.confidence import ArrivalModel, Confidence, parse_hyp
from reasoning.semantics.patterns import Fact
from reasoning.run.session import Session
from reasoning.language.syntax import DelayDecl
from tests.helpers import EXAMPLES

TDL = str(EXAMPLES / "wind_turbines.tdl")
STREAM = str(EXAMPLES / "wind_turbines.jsonl")

MALF = """
#query Malf(X, T).
#delay Temp = 2.
Temp(X, high, T) -> Flag(X, T).
Flag(X, T) ∧ Flag(X, T+1) → Cool(X, T+1).
Cool(X, T) ∧ Flag(X, T+1) → Shdn(X, T+1).
Shdn(X, T) -> Malf(X, T-2).
"""


def model(default=3, pats=()):
    decls = [DelayDecl("Hot", default)] + [DelayDecl("Hot", d, (c,)) for c, d in pats]
    return ArrivalModel(Delays.from_decls(decls), {"Hot"})


def test_parse_hypothesis():
    assert parse_hyp("not Shdn(X, 3)") == (True, "Shdn", ((True, "X"),), 3)
    assert parse_hyp("Temp(wt1, high, 0)") == (False, "Temp", ((False, "wt1"), (False, "high")), 0)


def test_prior_without_data():
    m = model()
    assert m.arrives(("Hot", -1)) == pytest.approx(0.5, abs=1e-3)
    assert m.cdf(("Hot", -1), 0) == pytest.approx(1 / 4)  # Laplace over d ∈ 0..3
    assert m.p_by_deadline("Hot", ("a",), 10, 5) == pytest.approx(0.5, abs=1e-3)  # future


def test_delay_distribution_per_pattern():
    m = model(default=3, pats=[("fast", 1)])
    for t in range(20):
        m.observe_fact("Hot", ("slow",), t, t + 3)  # always the whole δ
        m.observe_fact("Hot", ("fast",), t, t)  # always at once
    slow, fast = m.key("Hot", ("slow",)), m.key("Hot", ("fast",))
    assert slow == ("Hot", -1) and fast == ("Hot", 0)
    assert m.cdf(slow, 2) == pytest.approx(3 / 24)  # (0 + 3) / (20 + 4)
    assert m.cdf(fast, 0) == pytest.approx(21 / 22)
    # summary: one row per key, the predicate's row first
    rows = m.summary()
    assert rows[0]["pattern"] == "*" and {r["pattern"] for r in rows} >= {"default", "Hot(fast, T)"}


def test_arrival_rate_learned_from_expected_atoms():
    m = model(default=0)
    tau = 0
    for i in range(40):  # 40 future atoms expected, 30 arrive
        m.expect("Hot", (f"d{i}",), 5, tau)
    for i in range(30):
        m.observe_fact("Hot", (f"d{i}",), 5, 5)
    m.end_tick(5)
    assert not m.waiting
    assert m.arrives(("Hot", None)) == pytest.approx(31 / 42, abs=1e-3)


def test_late_atoms_condition_on_elapsed_delay():
    """An atom still missing late in its δ is less likely than a fresh one when most arrive
    early; the moment fit recovers a from atoms first expected at k0 > 0."""
    m = model(default=3)
    for i in range(200):
        m.observe_fact("Hot", (f"x{i}",), 0, 0)  # arrivals: all at d = 0
    fresh = m.p_by_deadline("Hot", ("a",), 10, 10)
    late = m.p_by_deadline("Hot", ("a",), 10, 12)
    assert 0 < late < fresh < m.arrives(m.key("Hot", ("a",)))
    assert m.p_by_deadline("Hot", ("a",), 10, 13) == 0.0  # past its deadline


def _run_conf(engine, facts_by_tick, ticks, text=MALF):
    cp = compile_program(text, "<t>")
    sess = Session(cp, engine=engine)
    conf = Confidence(cp)
    out = []
    for tau in range(ticks):
        fs = facts_by_tick.get(tau, [])
        sess.step(fs, tau)
        objs = sess.objects(True, True, False)
        conf.observe(tau, fs, objs)
        out.append([(o["query"], o["status"], json.dumps(o["substitution"]), conf.of(o))
                    for o in objs])
    return out


def test_definite_one_hypothetical_between_and_monotone():
    # wt1 hot at 0, 1, 2: Malf(wt1, 0) hypothetical at 0 and 1, definite at 2
    facts = {t: [Fact("Temp", ("wt1", "high"), t)] for t in range(3)}
    ticks = _run_conf("row", facts, 3)
    key = ("Malf(X, T)", json.dumps({"X": "wt1", "T": 0}))
    seen = [[c for q, s, sub, c in tk if (q, sub) == key] for tk in ticks]
    assert all(0 < c[0] < 1 for c in seen[:2])
    assert seen[0][0] < seen[1][0]  # evidence arrived: more likely
    defs = [c for tk in ticks for q, s, sub, c in tk if s == "definite"]
    assert defs and all(c == 1.0 for c in defs)


@pytest.mark.parametrize("program,stream", [("turbines", None), ("malf", None)])
def test_row_and_columnar_same_confidences(program, stream, capsys):
    if program == "turbines":
        argv = ["run", TDL, "--stream", STREAM]
    else:
        import tempfile
        d = tempfile.mkdtemp()
        p, s = f"{d}/m.tdl", f"{d}/m.jsonl"
        open(p, "w").write(MALF)
        rows = sorted((t + late, dev, t) for t, dev, late in [
            (0, "a", 0), (1, "a", 2), (1, "b", 0), (2, "a", 0), (3, "b", 1), (4, "b", 0),
            (5, "c", 2), (6, "c", 0)])
        with open(s, "w") as fh:
            for tick, dev, t in rows:
                fh.write(json.dumps({"tick": tick, "fact": f"Temp({dev}, high, {t})"}) + "\n")
        argv = ["run", p, "--stream", s]
    outs = []
    for eng in ("row", "columnar"):
        assert main(argv + ["--format", "jsonl", "--confidence", "--all", "--all-queries",
                            "--engine", eng]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]
    objs = [json.loads(l) for l in outs[0].splitlines()]
    confs = [o["confidence"] for o in objs if "confidence" in o]
    assert confs and any(0 < c < 1 for c in confs)
    assert all(o["confidence"] == 1.0 for o in objs if o["status"] == "definite")
    assert all(list(o)[-1] == "confidence" for o in objs if o["status"] != "none")


def test_default_output_unchanged_without_flags(capsys):
    base = ["run", TDL, "--stream", STREAM, "--engine", "row"]
    for fmt in (["--format", "jsonl"], ["--format", "jsonl", "--changes"], ["--all"]):
        assert main(base + fmt) == 0
        plain = capsys.readouterr().out
        assert "confidence" not in plain
        assert main(base + fmt + ["--confidence"]) == 0
        withc = capsys.readouterr().out
        assert "confidence" in withc
        if fmt[:2] == ["--format", "jsonl"] and "--changes" not in fmt:
            stripped = []
            for l in withc.splitlines():
                o = json.loads(l)
                o.pop("confidence", None)
                stripped.append(json.dumps(o, ensure_ascii=False))
            assert stripped == plain.splitlines()
        if fmt == ["--all"]:
            import re
            pat = r"; confidence [0-9.]+(?=\])|  \[confidence [0-9.]+\]"
            assert re.sub(pat, "", withc) == plain


@pytest.mark.parametrize("engine", ["row", "columnar"])
def test_pruning_counts_and_never_drops_definite(engine, capsys):
    base = ["run", TDL, "--stream", STREAM, "--format", "jsonl", "--all", "--engine", engine]
    assert main(base) == 0
    full = [json.loads(l) for l in capsys.readouterr().out.splitlines()]
    assert main(base + ["--max-state", "1", "--min-confidence", "0.99"]) == 0
    cap = capsys.readouterr()
    pruned = [json.loads(l) for l in cap.out.splitlines()]
    per_tick = [l for l in cap.err.splitlines() if ": pruned " in l]
    n = sum(int(l.split("pruned ")[1].split()[0]) for l in per_tick)
    assert n > 0 and f", {n} answer(s) pruned" in cap.err
    assert "removed from S_τ" in cap.err
    by_tick: dict = {}
    for o in pruned:
        if o["status"] in ("hypothetical", "pending"):
            by_tick[o["tick"]] = by_tick.get(o["tick"], 0) + 1
    assert all(v <= 1 for v in by_tick.values())
    # definite answers are never pruned; on this program the pruned answers' definite
    # versions still come (OK's answers are pending only): the definite lines are the same
    def defs(objs):
        return [json.dumps(o, sort_keys=True) for o in objs if o["status"] == "definite"]
    assert set(defs(pruned)) <= set(defs(full))


def test_row_pruning_shrinks_state():
    from types import SimpleNamespace
    import io

    from reasoning.run.pruning import Pruner

    cp = compile_program(MALF, "<t>")
    sizes = {}
    for N in (None, 2):
        sess = Session(cp, engine="row")
        pr = Pruner(SimpleNamespace(confidence=False, min_confidence=None, max_state=N,
                                     all_queries=False, all=False, ground=False), cp, sess,
                     io.StringIO())
        peak = 0
        for tau in range(8):
            fs = [Fact("Temp", (d, "high"), tau) for d in ("a", "b", "c", "d", "e")]
            sess.step(fs, tau)
            pr.tick(tau, fs)
            main_nd = [a for a in sess.row.answers if sess.row.templates[a.tid].qid == 0
                       and not sess.row.is_definite(a)]
            if N is not None:
                assert len(main_nd) <= N
            peak = max(peak, len(sess.row.answers))
        sizes[N] = peak
    assert sizes[2] < sizes[None]


def test_context_previous_instant_bursts():
    """Bursts: an atom whose previous instant arrived is learned to be more likely."""
    m = model(default=0)
    for t in range(1, 60):
        for i in range(10):
            dev = (f"d{i}",)
            m.expect("Hot", dev, t, t - 1)
            burst = i < 5  # d0..d4 always hot, d5..d9 never
            if burst:
                m.observe_fact("Hot", dev, t, t)
        m.end_tick(t)
    key = m.key("Hot", ("d0",))
    assert m.arrives(key, True) > 0.9 > 0.1 > m.arrives(key, False)
    assert 0.3 < m.arrives(key) < 0.7


@pytest.mark.parametrize("wl", ["turbines", "malfunction"])
def test_row_and_columnar_same_confidences_on_bench_workloads(wl, tmp_path, capsys):
    """bench/engine.py's workloads (per-instance #delay patterns, negation, bursts), every
    output mode that shows confidences: the same bytes from both executors."""
    from bench.engine import write_workload

    prog, stream = write_workload(wl, 25, 20, 5, tmp_path)
    for mode in (["--format", "jsonl", "--all", "--all-queries"], ["--format", "jsonl",
                 "--changes", "--all"], ["--format", "jsonl", "--ground"], ["--all"],
                 ["--format", "jsonl", "--all", "--max-state", "3"]):
        outs = []
        for eng in ("row", "columnar"):
            assert main(["run", str(prog), "--stream", str(stream), "--confidence",
                         "--engine", eng] + mode) == 0
            outs.append(capsys.readouterr().out)
        assert outs[0] == outs[1], mode  # --max-state: both prune S_τ the same way


def test_key_of_is_the_rendered_answer_key():
    from bench.engine import workload
    from reasoning.semantics.explain import key_of
    from reasoning.semantics.explain import Explainer, answer_key

    text, slices = workload("turbines", 20, 15, seed=3)
    cp = compile_program(text, "<t>")
    sess = Session(cp, engine="row")
    n = 0
    for tau, s in enumerate(slices):
        sess.step([Fact(p, a, t) for p, a, t in s], tau)
        ex = Explainer(sess.row)
        for a in sess.row.answers:
            assert key_of(sess.row.templates[a.tid], a) == answer_key(ex.render(a, tau))
            n += 1
    assert n > 100


@pytest.mark.parametrize("engine", ["row", "columnar"])
def test_confidence_reads_metric_operators_in_hypotheses(engine, capsys):
    """A hypothesis printed as a metric operator (`not A(…) Since[1,2] B(…)`, an auxiliary
    predicate) is read back as that predicate: the run completes with a confidence on
    every line, the same with both executors."""
    tdl, stream = str(EXAMPLES / "windows.tdl"), str(EXAMPLES / "windows.jsonl")
    assert main(["run", tdl, "--stream", stream, "--format", "jsonl", "--all",
                 "--engine", engine, "--confidence"]) == 0
    out = capsys.readouterr().out
    objs = [json.loads(l) for l in out.splitlines()]
    assert any("Since[" in h for o in objs for h in o.get("evidence", []) + o.get("hypotheses", []))
    assert all(0.0 <= o["confidence"] <= 1.0 for o in objs if "confidence" in o)
    assert all("confidence" in o for o in objs if o.get("status") in ("hypothetical", "definite"))
    if engine == "columnar":
        assert main(["run", tdl, "--stream", stream, "--format", "jsonl", "--all",
                     "--engine", "row", "--confidence"]) == 0
        assert capsys.readouterr().out == out


def test_parse_aux_is_the_inverse_of_render_aux():
    from reasoning.language.compiler import compile_file
    from reasoning.language.metric import parse_aux, render_aux

    compile_file(str(EXAMPLES / "windows.tdl"))
    got = parse_aux('Quiet(wt2, 3) Since[1,2] Service(wt2, 3)')
    assert got is not None and got[1:] == (("wt2",), "3")
    assert render_aux(got[0], ["wt2"], lambda d: str(3 + d)) == \
        'Quiet(wt2, 3) Since[1,2] Service(wt2, 3)'
    assert parse_aux('Quiet(X, T+1) Since[1,2] Service(X, T+1)')[1:] == (("X",), "T+1")
    assert parse_aux('Quiet(wt2, 3) Since[1,2] Service(wt1, 3)') is None  # not one instance
    assert parse_hyp('not Quiet(wt2, 3) Since[1,2] Service(wt2, 3)')[1:] == (
        got[0], ((False, "wt2"),), 3)


@pytest.mark.parametrize("flag", [["--min-confidence", "2"], ["--min-confidence", "nan"],
                                  ["--min-confidence", "x"], ["--max-state", "-1"],
                                  ["--max-state", "9" * 30], ["--report", "/"]])
def test_bad_flags_are_usage_errors(flag, capsys):
    try:
        rc = main(["run", TDL, "--stream", STREAM] + flag)
    except SystemExit as e:  # argparse
        rc = e.code
    assert rc == 2
    err = capsys.readouterr().err
    assert "error" in err and "Traceback" not in err
