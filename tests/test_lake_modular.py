"""Programs under modular evaluation in the lake (issue 45): their derived literals are
decided by the row engine, so every tick of such a lake runs on the `row` executor, S_τ
travelling through the state table between ticks (each tick a new engine); the answers
equal `hypo run`'s at every tick.  The lake records the predicates it keeps at init and
refuses to go on under another choice."""
from __future__ import annotations

import json
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings

from jobs import lake as api
from jobs.errors import LakeDamaged, ProgramMismatch
from jobs.table.store import Lake
from lakehelp import hypo, lake_lines, reference
from tests.gen import cases
from tests.helpers import budget
from tests.test_modular import _branching, _branching_stream, _until


def _write_stream(path: str, stream: dict) -> str:
    """tick -> [Fact] as the lake's JSONL (rows in tick order)."""
    with open(path, "w", encoding="utf-8") as fh:
        for tick in sorted(stream):
            for f in stream[tick]:
                fh.write(json.dumps({"tick": tick, "pred": f.pred, "args": list(f.args),
                                     "time": f.time}) + "\n")
    return path


def _equal_every_tick(lake: str, program: str, stream: str, until: int) -> int:
    ref = reference(program, stream, until)
    shown = 0
    for t in range(until + 1):
        got = lake_lines(lake, t)
        assert sorted(got) == sorted(ref.get(t, [])), f"tick {t}"
        shown += sum(json.loads(x)["status"] in ("definite", "hypothetical") for x in got)
    return shown


def test_a_program_over_the_budget_runs_in_the_lake_on_the_row_executor(tmp_path):
    """The branching program (refused unfolded) in a lake: every tick on `row` whatever
    was asked, said in the tick's line; its answers, derived hypotheses included, equal
    `hypo run`'s at every tick; verify finds the lake sound."""
    prog = str(tmp_path / "b.tdl")
    with open(prog, "w") as fh:
        fh.write(_branching(12))
    stream = _write_stream(str(tmp_path / "s.jsonl"), _branching_stream(12))
    lake = str(tmp_path / "lake")
    code, out, err = hypo("lake", "--lake", lake, "init", "--program", prog)
    assert code == 0, err
    info = Lake(lake).program_info
    assert info["modular"] == "auto" and info["derived"] == [f"A{i}" for i in range(3, 10)]
    assert hypo("lake", "--lake", lake, "ingest", stream)[0] == 0
    code, out, err = hypo("lake", "--lake", lake, "run", "--from", "0", "--to", "10",
                          "--executor", "local")
    assert code == 0, err
    assert out.count("row executor (derived literals)") == 11, out
    assert _equal_every_tick(lake, prog, stream, 10) > 0
    assert any('"derived"' in x for t in range(11) for x in lake_lines(lake, t))
    code, out, err = hypo("lake", "--lake", lake, "verify")
    assert code == 0, out + err


def test_the_lake_keeps_the_modular_choice_it_was_made_with(tmp_path, monkeypatch):
    """init records the mode and the predicates kept; init again under another choice is
    refused in one line (S_τ is held in the templates of the first), and so is a lake whose
    recorded choice no longer matches what its mode keeps."""
    prog = str(tmp_path / "b.tdl")
    with open(prog, "w") as fh:
        fh.write(_branching(4))  # within the budget: auto unfolds, always keeps
    lake = str(tmp_path / "lake")
    monkeypatch.setenv("HYPO_MODULAR", "always")
    code, out, err = hypo("lake", "--lake", lake, "init", "--program", prog)
    assert code == 0, err
    assert Lake(lake).program_info["derived"] == [f"A{i}" for i in range(5)]
    monkeypatch.delenv("HYPO_MODULAR")
    assert Lake(lake).program.modular  # the recorded mode, not $HYPO_MODULAR's default
    code, out, err = hypo("lake", "--lake", lake, "init", "--program", prog)
    assert code == 0, err  # again, nothing asked: the mode it was made with
    code, _, err = hypo("lake", "--lake", lake, "init", "--program", prog, "--modular", "never")
    assert code != 0 and len(err.strip().splitlines()) == 1, err
    assert "every predicate unfolded" in err and "Traceback" not in err
    path = os.path.join(lake, "_hypo", "program.json")
    with open(path) as fh:
        info = json.load(fh)
    info["derived"] = ["A0"]
    with open(path, "w") as fh:
        json.dump(info, fh)
    with pytest.raises(ProgramMismatch, match="S_τ was made keeping A0"):
        Lake(lake).program
    info["modular"] = "bogus"  # a damaged program.json names itself, not $HYPO_MODULAR
    with open(path, "w") as fh:
        json.dump(info, fh)
    with pytest.raises(LakeDamaged, match='program.json: "modular" is "bogus"'):
        Lake(lake).program


@pytest.mark.slow
@pytest.mark.parametrize("multi_time", [False, True], ids=["one_time", "multi_time"])
def test_random_programs_kept_in_the_lake_equal_hypo_run(tmp_path_factory, multi_time):
    """Random programs (delays, per-instance δ, rigid atoms, negation; with multi_time some
    rules of two time variables) with every IDB literal kept (`always`): the lake, a new
    row engine every tick from the state table, gives `hypo run --modular always`'s answers
    at every tick."""
    kept = [0]

    # (with two time variables about one program in eight keeps a predicate)
    @settings(max_examples=budget(12 if not multi_time else 40), deadline=None,
              derandomize=True, suppress_health_check=list(HealthCheck))
    @given(cases(negation=True, multi_time=multi_time))
    def check(case):
        tmp = tmp_path_factory.mktemp("m")
        prog = str(tmp / "p.tdl")
        with open(prog, "w") as fh:
            fh.write(case.text)
        stream = _write_stream(str(tmp / "s.jsonl"), case.stream)
        lake = str(tmp / "lake")
        api.init(lake, prog, modular="always")
        if not Lake(lake).program_info["derived"]:
            return
        kept[0] += 1
        api.ingest(lake, None, [stream])
        until = _until(case)
        api.run_range(lake, 0, until, executor="auto")
        old = os.environ.get("HYPO_MODULAR")
        os.environ["HYPO_MODULAR"] = "always"
        try:
            _equal_every_tick(lake, prog, stream, until)
        finally:
            if old is None:
                del os.environ["HYPO_MODULAR"]
            else:
                os.environ["HYPO_MODULAR"] = old

    check()
    assert kept[0] >= 3


@pytest.mark.parametrize("seed", [0, 1])
def test_a_derived_literal_read_ahead_in_the_lake_equals_hypo_run(tmp_path, monkeypatch, seed):
    """A caller reads its derived predicate two ticks ahead (`P(X, T+2)`): step 2 creates
    P's answers ahead of τ, and a lake tick's new row engine resumes where the previous
    tick's left them (Engine.resume_ahead); the answers equal `hypo run`'s at every tick."""
    monkeypatch.setenv("HYPO_MODULAR", "always")
    prog = str(tmp_path / "p.tdl")
    with open(prog, "w") as fh:
        fh.write("#query Q(X, T).\n#delay E = 1.\n#delay F = 2.\n"
                 "P(X, T) :- E(X, T), F(X, T-1).\nP(X, T) :- F(X, T), not E(X, T).\n"
                 "Q(X, T) :- G(X, T), P(X, T+2), not P(X, T+1).\n")
    rnd = random.Random(seed)
    rows = sorted(({"tick": t + rnd.randint(0, d), "pred": p, "args": [x], "time": t}
                   for t in range(14) for x in ("a", "b") for p, d in (("E", 1), ("F", 2),
                                                                        ("G", 0))
                   if rnd.random() < 0.5), key=lambda r: r["tick"])
    stream = str(tmp_path / "s.jsonl")
    with open(stream, "w") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    lake = str(tmp_path / "lake")
    api.init(lake, prog)
    assert Lake(lake).program_info["derived"] == ["P"]
    api.ingest(lake, None, [stream])
    api.run_range(lake, 0, 20)
    assert _equal_every_tick(lake, prog, stream, 20) > 0


def test_a_rule_whose_diamonds_multiply_past_the_budget_runs_in_the_lake(tmp_path):
    """Three `Diamondminus[0,30]` in one rule (refused before issue 45; metric.py lifts
    each into an auxiliary predicate, modular evaluation keeps them): init records them,
    every tick equals `hypo run`, and the answers name the operators as written."""
    from reasoning.semantics.patterns import Fact

    prog = str(tmp_path / "d.tdl")
    with open(prog, "w") as fh:
        fh.write("#query P(X, T).\n#delay B = 1.\nP(X, T) :- Diamondminus[0,30] A(X, T), "
                 "Diamondminus[0,30] B(X, T), Diamondminus[0,30] C(X, T).\n")
    rnd = random.Random(5)
    stream: dict = {}
    for t in range(8):
        for p in ("A", "B", "C"):
            for c in ("a", "b"):
                if rnd.random() < 0.3:
                    late = rnd.randint(0, 1) if p == "B" else 0
                    stream.setdefault(t + late, []).append(Fact(p, (c,), t))
    path = _write_stream(str(tmp_path / "s.jsonl"), stream)
    lake = str(tmp_path / "lake")
    assert hypo("lake", "--lake", lake, "init", "--program", prog)[0] == 0
    derived = Lake(lake).program_info["derived"]
    assert len(derived) == 3 and all(p.startswith("__Diamondminus0_30_") for p in derived)
    assert hypo("lake", "--lake", lake, "ingest", path)[0] == 0
    code, out, err = hypo("lake", "--lake", lake, "run", "--from", "0", "--to", "9")
    assert code == 0, err
    assert _equal_every_tick(lake, prog, path, 9) > 0
    text = "".join(lake_lines(lake, 9))
    assert "Diamondminus[0,30] " in text and "__" not in text


def test_where_a_tick_of_a_modular_program_runs(monkeypatch):
    """choose_executor for a program under modular evaluation: the row engine always —
    on the driver for `row`, `local`, and `auto` while the tick fits the driver; in the one
    task of the partitioned plan's Spark job for `spark`, and `auto` beyond (the relational
    plan has no such task: the driver)."""
    from reasoning.language.compiler import compile_program
    from jobs.tick import job

    cp = compile_program(_branching(12), "b.tdl")
    assert cp.modular

    def where(executor, rows=100):
        ctx = job.TickContext(lake=None, tau=0, run="r", cp=cp, executor=executor)
        return job.choose_executor(ctx, rows, 0)

    monkeypatch.setenv("HYPO_LAKE_LOCAL_MAX", "1000")
    assert [where(e) for e in ("row", "local", "spark", "auto")] == [
        "row", "row", "spark", "row"]
    assert where("auto", rows=1001) == "spark"
    monkeypatch.setattr(job, "SPARK_PLAN", "relational")
    assert [where(e, rows=1001) for e in ("spark", "auto")] == ["row", "row"]
