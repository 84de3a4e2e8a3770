"""`hypo lake vacuum` (jobs/maintenance/retention.py): bounded storage.  Removing old ticks' S_τ keeps
every tick's answers and history, leaves a lake `verify` finds clean, refuses exactly the
re-runs that would read a removed S_τ (and says which can still run), and the ticks after
the cut re-run to the same answers; Delta VACUUM deletes replaced files only."""
from __future__ import annotations

import json
import os

import pytest

from lakehelp import copy_lake, hypo

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAM = os.path.join(ROOT, "examples", "wind_turbines.tdl")
STREAM = os.path.join(ROOT, "examples", "wind_turbines.jsonl")


@pytest.fixture(scope="module")
def lake8(tmp_path_factory):
    lake = str(tmp_path_factory.mktemp("vac") / "lake")
    assert hypo("lake", "--lake", lake, "init", "--program", PROGRAM)[0] == 0
    assert hypo("lake", "--lake", lake, "ingest", STREAM)[0] == 0
    rc, out, err = hypo("lake", "--lake", lake, "run", "--from", "0", "--to", "8",
                        "--executor", "local")
    assert rc == 0, err
    return lake


def _lake(lake8, tmp_path) -> tuple[str, callable]:
    lake = copy_lake(lake8, str(tmp_path / "lake"))
    return lake, (lambda *a: hypo("lake", "--lake", lake, *a))


def _answers(H, ticks) -> dict:
    out = {}
    for t in ticks:
        rc, o, e = H("answers", "--tick", str(t), "--status", "all")
        assert rc == 0, e
        out[t] = o
    return out


def _state_ticks(lake) -> set:
    return {d for d in os.listdir(os.path.join(lake, "state")) if d.startswith("tick=")}


def test_keep_state_keeps_answers_and_refuses_only_reruns_below_the_cut(lake8, tmp_path):
    lake, H = _lake(lake8, tmp_path)
    before = _answers(H, range(9))
    hist = H("history", "OK(wt2, 1)")[1]
    rc, out, err = H("vacuum", "--keep-state", "3", "--dry-run")
    assert rc == 0 and "would remove S_τ of 6 tick(s) before tick 6" in out, out + err
    assert len(_state_ticks(lake)) == 9  # a dry run changes nothing
    rc, out, err = H("vacuum", "--keep-state", "3", "--retain-hours", "0")
    assert rc == 2 and "--force" in err, err  # could delete a running tick's files
    rc, out, err = H("vacuum", "--keep-state", "3", "--retain-hours", "0", "--force")
    assert rc == 0, err
    assert "removed S_τ of 6 tick(s) before tick 6" in out and "ticks from 7 on" in out, out
    assert _state_ticks(lake) == {"tick=6", "tick=7", "tick=8"}  # directories dropped too
    assert _answers(H, range(9)) == before
    assert H("history", "OK(wt2, 1)")[1] == hist
    rc, out, err = H("verify")
    assert rc == 0 and "no damage found" in out, out + err
    rc, out, err = H("status")
    assert rc == 0 and "state kept from tick 6" in out and "completed: 0..8" in out, out
    assert "incomplete" not in out
    for args in (("run", "--from", "6", "--to", "8"), ("tick", "3")):
        rc, out, err = H(*args, "--executor", "local")
        assert rc == 2 and "cannot run now: S_" in err and "re-run from tick 0" in err, err
        assert "only ticks from 7 on" in err
    rc, out, err = H("run", "--from", "7", "--to", "10", "--executor", "local")
    assert rc == 0, err
    after = _answers(H, range(11))
    assert {t: after[t] for t in range(9)} == before  # the re-run of 7..8 changed nothing
    rc, out, err = H("vacuum", "--keep-state", "5", "--dry-run")
    assert rc == 0 and "nothing to remove (S_τ kept from tick 6" in out, out
    rc, out, err = H("report", "--out", str(tmp_path / "r.html"))
    assert rc == 0 and "report of ticks 0..10" in out, out + err


def test_late_facts_below_the_cut_are_taken_by_a_rerun_from_tick_0(lake8, tmp_path):
    """Facts are kept: a re-run from tick 0 computes every S_τ again, takes in the late
    facts and answers as `hypo run` does; the next vacuum removes the old states again."""
    lake, H = _lake(lake8, tmp_path)
    assert H("vacuum", "--keep-state", "2", "--retain-hours", "0", "--force")[0] == 0
    late = tmp_path / "late.jsonl"
    late.write_text('{"tick": 3, "fact": "Hot(wt3, 3)"}\n')
    assert H("ingest", str(late))[0] == 0
    rc, out, err = H("status")
    assert "late facts: tick 3: 1 row(s)" in out, out
    assert "S_2 was removed by `hypo lake vacuum`: re-run from tick 0 (`hypo lake run " \
           "--from 0 --to 8`" in out, out
    assert "ticks from 8 on can be re-run by themselves" in out
    rc, out, err = H("run", "--from", "0", "--to", "8", "--executor", "local")
    assert rc == 0, err
    st = H("status")[1]
    assert "late facts" not in st and "stale" not in st, st
    merged = tmp_path / "all.jsonl"
    merged.write_text(open(STREAM).read() + late.read_text())
    rc, ref, err = hypo("run", PROGRAM, "--stream", str(merged), "--format", "jsonl", "--all",
                        "--until", "8", "--no-skip")
    assert rc == 0, err
    want: dict = {}
    for line in ref.splitlines():
        o = json.loads(line)
        if o["status"] != "none":
            want.setdefault(o["tick"], []).append(o)
    for t in range(9):
        rc, got, err = H("answers", "--tick", str(t), "--status", "all")
        got = [json.loads(x) for x in got.splitlines() if json.loads(x)["status"] != "none"]
        key = lambda o: json.dumps(o, sort_keys=True)  # noqa: E731
        assert sorted(got, key=key) == sorted(want.get(t, []), key=key), t
    assert len(_state_ticks(lake)) == 9  # every S_τ again, until the next vacuum
    assert "removed S_τ of 7 tick(s)" in H("vacuum", "--retain-hours", "0", "--force")[1]
    assert _state_ticks(lake) == {"tick=7", "tick=8"}


def test_vacuum_deletes_only_files_no_recent_version_needs(lake8, tmp_path):
    from jobs.maintenance.retention import vacuum

    lake, H = _lake(lake8, tmp_path)
    before = _answers(H, range(9))
    assert H("run", "--from", "7", "--to", "8", "--executor", "local")[0] == 0  # replaces
    r = vacuum(lake)  # default: a week; the replaced files are minutes old
    assert sum(r["deleted_files"].values()) == 0 and r["state"]["from"] == 0
    r = vacuum(lake, retain_hours=0, force=True)
    assert r["deleted_files"]["state"] == 2 and r["deleted_files"]["answers"] == 2, r
    assert r["deleted_files"]["facts"] == 0 and r["state"]["removed_partitions"] == 0
    assert _answers(H, range(9)) == before
    assert len(_state_ticks(lake)) == 9
    rc, out, err = H("verify", "--deep")
    assert rc == 0, out + err
    for bad, msg in ((("--keep-state", "0"), "≥ 1"), (("--keep-answers", "-2"), "natural"), (("--retain-hours", "-1"), "natural"),
                     (("--retain-hours", "1e9"), "natural")):
        rc, out, err = H("vacuum", *bad)
        assert rc == 2 and msg in err and "Traceback" not in err, err


def test_the_dag_reads_its_retention_settings():
    from dags.hypo_ticks import parse_count

    assert parse_count("0", "X") == 0 and parse_count(" 1000 ", "X") == 1000
    for bad in ("-1", "1.5", "", "٣", "9" * 30):
        with pytest.raises(ValueError, match="X"):
            parse_count(bad, "X")


def test_a_vacuum_while_a_tick_runs_fails_the_tick_cleanly(lake8, tmp_path):
    """Both commit to the state table conditionally: the tick that loses is refused with one
    line, nothing half-written, and its re-run gives the answers of the first run."""
    from jobs import lake as api
    from jobs.tick import job as tickjob
    from jobs.errors import LakeError
    from jobs.maintenance.retention import vacuum

    lake, H = _lake(lake8, tmp_path)
    before = _answers(H, [8])
    got = []

    def hook(phase, tau):
        if phase == "after_validate" and tau == 8 and not got:
            got.append(vacuum(lake, keep_state=2))

    tickjob.HOOKS.append(hook)
    try:
        with pytest.raises(LakeError, match="moved from version"):
            api.run_tick(lake, 8, executor="local")
    finally:
        tickjob.HOOKS.remove(hook)
    assert got and got[0]["state"]["from"] == 7
    rc, out, err = H("verify")
    assert rc == 0, out + err
    assert H("run", "--from", "8", "--to", "8", "--executor", "local")[0] == 0
    assert _answers(H, [8]) == before


def test_the_api_refuses_ticks_past_2_to_the_60(lake8):
    """The CLI's tick arguments are bounded (reasoning.cli.main.tick_arg); the API is too, so a
    range ending at 2⁶³ is one error, not an OverflowError inside delta-rs mid-run."""
    from jobs import lake as api
    from jobs.errors import LakeError

    for start, end in ((9, 2 ** 63), (-1, 3), (2 ** 60, 2 ** 60)):
        with pytest.raises(LakeError, match="2\\^60"):
            list(api.run_ticks(lake8, start, end, executor="local"))
    with pytest.raises(LakeError, match="2\\^60"):
        api.run_tick(lake8, 2 ** 63, executor="local")


def test_keep_answers_starts_answers_history_and_report_at_the_cut(lake8, tmp_path):
    lake, H = _lake(lake8, tmp_path)
    before = _answers(H, range(9))
    hist = H("history", "OK(wt2, 5)")[1]
    rc, out, err = H("vacuum", "--keep-answers", "4", "--keep-state", "6", "--retain-hours",
                     "0", "--force")
    assert rc == 0, err
    assert "answers: removed the answers of 5 tick(s) before tick 5" in out, out
    assert "state: removed S_τ of 3 tick(s) before tick 3" in out, out
    assert _answers(H, range(5, 9)) == {t: before[t] for t in range(5, 9)}
    rc, out, err = H("answers", "--tick", "4")
    assert rc == 2 and "answers of tick 4 were removed" in err and "from tick 5 on" in err, err
    rc, out, err = H("history", "OK(wt2, 5)")
    assert rc == 0 and "answers before tick 5 were removed" in out, out
    assert out.splitlines()[1:] == [x for x in hist.splitlines()[1:]
                                    if int(x.split()[1]) >= 5], (out, hist)
    rc, out, err = H("report", "--from", "2", "--out", str(tmp_path / "r.html"))
    assert rc == 0 and "report of ticks 5..8" in out, out + err
    html = (tmp_path / "r.html").read_text()
    assert "removed by `hypo lake vacuum --keep-answers`" in html.replace("&#x60;", "`")
    rc, out, err = H("report", "--to", "4", "--out", str(tmp_path / "r2.html"))
    assert rc == 2 and "were removed" in err, err
    rc, out, err = H("verify")
    assert rc == 0, out + err
    rc, out, err = H("status")
    assert "answers kept from tick 5" in out and "state kept from tick 3" in out, out
    # the ticks after both cuts re-run to the same answers
    assert H("run", "--from", "6", "--to", "9", "--executor", "local")[0] == 0
    assert _answers(H, range(6, 9)) == {t: before[t] for t in range(6, 9)}


def test_vacuum_of_a_missing_or_damaged_lake_is_one_line(lake8, tmp_path):
    rc, out, err = hypo("lake", "--lake", str(tmp_path / "none"), "vacuum")
    assert rc == 2 and "no lake at" in err and "Traceback" not in err, err
    lake, H = _lake(lake8, tmp_path)
    log = os.path.join(lake, "state", "_delta_log", "00000000000000000009.json")
    with open(log, "w") as fh:
        fh.write("garbage\n")
    rc, out, err = H("vacuum", "--keep-state", "2")
    assert rc == 2 and "00000000000000000009.json" in err and len(err.splitlines()) == 1, err
    assert "Traceback" not in err


def test_an_interrupted_vacuum_is_completed_by_the_next(lake8, tmp_path, monkeypatch):
    """The cut is logged before the partitions go: if the process dies between the two, the
    lake refuses the re-runs below the cut, and the next vacuum (any options) removes what
    the interrupted one left."""
    from jobs.maintenance import retention

    lake, H = _lake(lake8, tmp_path)
    real = retention.delta.commit

    def dies_at_the_state(dt, kind, *a, **k):
        if kind == "state":
            raise KeyboardInterrupt("killed")
        return real(dt, kind, *a, **k)

    monkeypatch.setattr(retention.delta, "commit", dies_at_the_state)
    with pytest.raises(KeyboardInterrupt):
        retention.vacuum(lake, keep_state=3)
    monkeypatch.setattr(retention.delta, "commit", real)
    assert len(_state_ticks(lake)) == 9  # nothing removed, but the cut is in force
    rc, out, err = H("run", "--from", "5", "--to", "8", "--executor", "local")
    assert rc == 2 and "cannot run now" in err, err
    rc, out, err = H("vacuum", "--retain-hours", "0", "--force")
    assert rc == 0 and "state: removed S_τ of 6 tick(s) before tick 6" in out, out
    assert _state_ticks(lake) == {"tick=6", "tick=7", "tick=8"}
    rc, out, err = H("verify")
    assert rc == 0, out + err
