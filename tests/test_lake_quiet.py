"""`hypo lake run` skips quiet stretches as `hypo run` does (reasoning.run.session.quiet_stretch):
a tick far in the future, or a long gap between facts, costs O(margin) ticks, not one
Delta commit per tick of the gap.  The lake keeps answering like `hypo run` at every tick."""
from __future__ import annotations

import json
import os

import pytest

from lakehelp import copy_lake, hypo, lake_changes, reference, write_program

pytestmark = pytest.mark.slow

PROGRAM = """#query P(X, T).
P(X, T) :- A(X, T), B(X, T+1).
P(X, T) :- B(X, T+2).
"""
FAR = 10 ** 12
FACTS = [(0, "A(d1, 0)"), (1, "B(d1, 1)"), (1, "A(d2, 1)"), (60, "A(d1, 60)"),
         (61, "B(d1, 61)"), (FAR, f"A(d1, {FAR})"), (FAR + 1, f"B(d1, {FAR + 1})")]


def _stream(path, facts) -> str:
    with open(path, "w") as fh:
        for t, f in facts:
            fh.write(json.dumps({"tick": t, "fact": f}) + "\n")
    return str(path)


def _run_view(program: str, stream: str) -> dict[int, list[str]]:
    """tick -> `hypo run --format jsonl`'s lines (quiet stretches skipped, then expanded)."""
    rc, out, err = hypo("run", program, "--stream", stream, "--format", "jsonl", "--max-gap",
                        str(FAR))
    assert rc == 0, err
    by: dict[int, list[str]] = {}
    for line in out.splitlines():
        o = json.loads(line)
        if "through" in o:
            by[o["tick"]] = [line]  # the stretch o["tick"]..o["through"]: one line
        else:
            by.setdefault(o["tick"], []).append(line)
    return by


def _none(t: int) -> list[str]:
    return [json.dumps({"tick": t, "query": "P(X, T)", "status": "none"})]


@pytest.fixture(scope="module")
def quiet_lake(tmp_path_factory):
    d = tmp_path_factory.mktemp("quiet")
    prog = write_program(d, PROGRAM)
    stream = _stream(d / "s.jsonl", FACTS)
    lake = str(d / "lake")
    assert hypo("lake", "--lake", lake, "init", "--program", prog)[0] == 0
    assert hypo("lake", "--lake", lake, "ingest", stream, "--max-gap", str(FAR))[0] == 0
    rc, out, err = hypo("lake", "--lake", lake, "run", "--executor", "local")
    assert rc == 0, err
    return d, prog, stream, lake, out


def test_lake_run_skips_quiet_stretches_and_answers_like_hypo_run(quiet_lake):
    from jobs import lake as api

    d, prog, stream, lake, out = quiet_lake
    lines = out.splitlines()
    skipped = [x for x in lines if x.startswith("ticks ")]
    assert [x.split(":")[0] for x in skipped] == ["ticks 16..45", f"ticks 76..{FAR - 15}"], out
    assert len(lines) < 80, out  # not one line (one tick job) per tick of the gaps
    st = api.lake_status(lake)
    assert st["quiet_stretches"] == [[16, 45], [76, FAR - 15]]
    assert st["last_tick"] == int(lines[-1].split(":")[0].split()[1]) > FAR + 1
    rc, text, _ = hypo("lake", "--lake", lake, "status")
    assert f"completed: 0..{st['last_tick']}   (skipped quiet stretches: 16..45, 76..{FAR - 15})" \
        in text, text
    # every tick of the lake answers what `hypo run` prints (none inside a stretch)
    ref = _run_view(prog, stream)
    ticks = list(range(0, 80)) + list(range(FAR - 40, st["last_tick"] + 1))
    for t in ticks:
        got = [json.dumps(o, ensure_ascii=False) for o in api.read_answers(lake, t)] or _none(t)
        want = ref.get(t)
        if want is None or "through" in want[0]:
            want = _none(t)  # inside (or at the start of) one of hypo run's stretches
        assert got == want, t
    # the change feed across both stretches (one of 10⁵ ticks) is `hypo run --changes`
    rc, feed, err = hypo("run", prog, "--stream", stream, "--format", "jsonl", "--max-gap",
                         str(FAR), "--changes", "--until", str(st["last_tick"]))
    assert rc == 0, err
    assert lake_changes(lake, 0, st["last_tick"]) == feed.splitlines()
    # pending answers included: at and after a stretch, S_τ rebuilt by the replay is the
    # state a tick-by-tick run has (hypo run --all --no-skip as the reference)
    full = reference(prog, stream, 80, all_=True)
    for t in list(range(0, 16)) + list(range(45, 76)):
        got = [json.dumps(o, ensure_ascii=False) for o in api.read_answers(lake, t, "all")]
        assert (got or _none(t)) == full[t], t
    with pytest.raises(Exception, match="quiet stretch 16..45 that `hypo lake run` skipped"):
        api.read_answers(lake, 30, "all")


def test_a_tick_inside_a_stretch_and_late_facts_there_say_where_to_rerun(quiet_lake, tmp_path):
    from jobs import lake as api

    d, prog, stream, lake0, _ = quiet_lake
    lake = copy_lake(lake0, str(tmp_path / "lake"))
    rc, out, err = hypo("lake", "--lake", lake, "tick", "31", "--executor", "local")
    assert rc == 2 and "ticks 16..45 are a quiet stretch" in err, err
    assert "hypo lake run --from 16 --to 46" in err
    late = _stream(tmp_path / "late.jsonl", [(30, "A(d3, 30)")])
    rc, out, err = hypo("lake", "--lake", lake, "ingest", late)
    assert rc == 0 and "tick(s) 30 were already processed" in out + err, out + err
    assert "--from 16 " in out + err
    st = api.lake_status(lake)
    assert st["late_facts"] == {30: 1} and st["late_rerun_from"] == 16
    rc, out, err = hypo("lake", "--lake", lake, "run", "--from", "16", "--to", "48",
                        "--executor", "local")
    assert rc == 0, err
    assert api.lake_status(lake)["late_facts"] == {}
    merged = _stream(tmp_path / "all.jsonl", sorted(FACTS + [(30, "A(d3, 30)")]))
    full = reference(prog, merged, 48)
    for t in range(16, 49):
        got = [json.dumps(o, ensure_ascii=False) for o in api.read_answers(lake, t)] or _none(t)
        assert got == full[t], t


def test_skip_is_off_with_no_skip_and_in_the_report(quiet_lake, tmp_path):
    d, prog, stream, lake0, _ = quiet_lake
    rc, out, err = hypo("lake", "--lake", lake0, "report", "--to", "50",
                        "--out", str(tmp_path / "r.html"))
    assert rc == 0, err
    html = open(tmp_path / "r.html", encoding="utf-8").read()
    assert "quiet stretches skipped by `hypo lake run`" in html and "16..45" in html
    assert "not completed" not in html
    lake = str(tmp_path / "fresh")
    assert hypo("lake", "--lake", lake, "init", "--program", prog)[0] == 0
    assert hypo("lake", "--lake", lake, "ingest", _stream(tmp_path / "s.jsonl", FACTS[:3]))[0] == 0
    rc, out, err = hypo("lake", "--lake", lake, "run", "--to", "20", "--no-skip",
                        "--executor", "local")
    assert rc == 0 and "quiet stretch" not in out and len(out.splitlines()) == 21, out
    assert os.path.isdir(os.path.join(lake, "state", "tick=18"))


def test_a_far_tick_is_quarantined_at_ingest_unless_the_gap_is_allowed(tmp_path):
    """As `hypo run --max-gap` rejects it: a row more than 100 000 ticks after the lake's
    previous fact tick is quarantined (far_tick), the rest of the batch kept; the same files
    ingested again with a larger --max-gap add exactly the refused rows, once."""
    from jobs import lake as api
    from jobs.ingest.files import far_ticks

    assert far_ticks({0, 5}, {7, 200_010, 200_020, 300_050}, 100_000) == {
        200_010: "tick 200010 is more than 100000 ticks after tick 7: a likely wrong tick "
                 "(raise --max-gap if the gap is real)",
        200_020: "tick 200020 is more than 100000 ticks after tick 7: a likely wrong tick "
                 "(raise --max-gap if the gap is real)",
        300_050: "tick 300050 is more than 100000 ticks after tick 7: a likely wrong tick "
                 "(raise --max-gap if the gap is real)"}
    assert far_ticks(set(), {150_000}, 100_000) and not far_ticks({60_000}, {150_000}, 100_000)
    prog = write_program(tmp_path, PROGRAM)
    stream = _stream(tmp_path / "s.jsonl", FACTS)
    lake = str(tmp_path / "lake")
    api.init(lake, prog)
    r = api.ingest(lake, None, [stream])
    assert r["accepted"] == 5 and r["reasons"] == {"far_tick": 2}, r
    rc, out, err = hypo("lake", "--lake", lake, "ingest", stream)
    assert rc == 0 and "already ingested" in out, out
    r = api.ingest(lake, None, [stream], max_gap=FAR)
    assert r["accepted"] == 2 and r["by_tick"] == {FAR: 1, FAR + 1: 1}, r
    assert api.ingest(lake, None, [stream], max_gap=2 * FAR)["skipped"]
    assert api.lake_status(lake)["rows"]["facts"] == 7
    rc, out, err = hypo("lake", "--lake", lake, "ingest", "--max-gap", "-1", stream)
    assert rc == 2 and "argument --max-gap: expected a natural number below 2^60" in err
    for argv in (["run", "--to", str(10 ** 30)], ["tick", "-1"], ["answers", "--tick", "x"]):
        rc, out, err = hypo("lake", "--lake", lake, *argv)
        assert rc == 2 and "expected a natural number below 2^60" in err, argv
        assert err.count("\n") == 1, err
    with pytest.raises(Exception, match="--max-gap -1 is negative"):
        api.ingest(lake, None, [stream], max_gap=-1)


def test_verify_accepts_stretches_and_ticks_without_answers(quiet_lake, tmp_path):
    """A tick with no answer writes no answers partition; `verify` reported it as damage."""
    from jobs import lake as api
    from jobs.maintenance.verify import verify

    assert verify(quiet_lake[3])["ok"]
    lake = str(tmp_path / "lake")
    api.init(lake, os.path.join(os.path.dirname(__file__), "..", "examples", "malfunction.tdl"))
    s = api.run_range(lake, 0, 1, executor="local")
    assert [x["counts"]["answers"] for x in s] == [0, 0]
    r = verify(lake)
    assert r["ok"], r["lines"]
