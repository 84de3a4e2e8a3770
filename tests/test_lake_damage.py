"""A damaged lake (issue 11.6): every command that meets a missing or unreadable file says so
in one line naming the table, version and file (exit 2, nothing committed, never a
quarantined row); `hypo lake verify` lists each problem with what to do (exit 1); following
its advice gives back the undamaged lake's answers — no row lost or invented."""
from __future__ import annotations

import glob
import os
import shutil

import pytest

from jobs import lake as api
from lakehelp import api_lines, hypo

TURBINES = "examples/wind_turbines.tdl"
STREAM = "examples/wind_turbines.jsonl"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    lake = str(tmp_path_factory.mktemp("damage") / "base")
    assert hypo("lake", "--lake", lake, "init", "--program", TURBINES)[0] == 0
    assert hypo("lake", "--lake", lake, "ingest", STREAM)[0] == 0
    api.run_range(lake, 0, 8, executor="local")
    return lake


def _copy(base, tmp_path) -> str:
    lake = str(tmp_path / "lake")
    shutil.copytree(base, lake)
    return lake


def _last_log(lake: str, table: str) -> str:
    return sorted(glob.glob(os.path.join(lake, table, "_delta_log", "*.json")))[-1]


def _truncate(f: str, n: int) -> None:
    with open(f, "rb") as fh:
        data = fh.read()
    with open(f, "wb") as fh:
        fh.write(data[:n])


def _damage(lake: str, case: str) -> str:
    """Apply one kind of damage; return the file (relative to the lake) it hit."""
    if case == "truncated_last_log":
        f = _last_log(lake, "state")
        _truncate(f, 50)
    elif case == "garbage_last_log":
        f = _last_log(lake, "facts")
        with open(f, "w") as fh:
            fh.write("garbage{{\n")
    elif case == "missing_middle_log":
        f = os.path.join(lake, "answers", "_delta_log", f"{3:020d}.json")
        os.remove(f)
    elif case == "truncated_ticks_log":
        f = _last_log(lake, "_hypo/ticks")
        _truncate(f, 30)
    elif case == "corrupt_ticks_file":
        f = sorted(glob.glob(os.path.join(lake, "_hypo", "ticks", "log", "*.parquet")))[-1]
        with open(f, "w") as fh:
            fh.write("junk")
    elif case == "truncated_program_json":
        f = os.path.join(lake, "_hypo", "program.json")
        _truncate(f, 20)
    elif case == "deleted_state_file":
        f = glob.glob(os.path.join(lake, "state", "tick=8", "*", "*.parquet"))[0]
        os.remove(f)
    elif case == "truncated_answers_file":
        f = glob.glob(os.path.join(lake, "answers", "tick=5", "*", "*.parquet"))[0]
        _truncate(f, 100)
    elif case == "deleted_facts_file":
        f = glob.glob(os.path.join(lake, "facts", "tick=3", "*.parquet"))[0]
        os.remove(f)
    else:
        raise AssertionError(case)
    return os.path.relpath(f, lake)


# case -> commands that must fail in one line naming the damaged file
CASES = {
    "truncated_last_log": ["status", "tick 9", "tick 3"],
    "garbage_last_log": ["status", "tick 3"],
    "missing_middle_log": ["status", "answers --tick 5", "tick 9"],
    "truncated_ticks_log": ["status", "answers --tick 8", "tick 9"],
    "corrupt_ticks_file": ["status", "answers --tick 2", "tick 9"],
    "truncated_program_json": ["status", "tick 9"],
    "deleted_state_file": ["tick 9", "status"],
    "truncated_answers_file": ["answers --tick 5"],
    "deleted_facts_file": ["tick 3", "status"],
}


def _snapshot(lake: str) -> dict:
    """Every file under the lake with its size (to see that a failed command wrote nothing)."""
    out = {}
    for d, _, fs in os.walk(lake):
        for f in fs:
            p = os.path.join(d, f)
            out[os.path.relpath(p, lake)] = os.path.getsize(p)
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_damage_is_one_line_naming_the_file_and_verify_says_what_to_do(base, tmp_path, case):
    lake = _copy(base, tmp_path)
    hit = _damage(lake, case)
    rc, out, err = hypo("lake", "--lake", lake, "verify")
    assert rc == 1, (out, err)
    damaged = [l for l in out.splitlines() if l.startswith("damaged: ")]
    assert damaged and hit in damaged[0], out
    assert " — " in damaged[0]  # what to do
    before = _snapshot(lake)
    for cmd in CASES[case]:
        argv = cmd.split()
        if argv[0] == "tick":
            argv += ["--executor", "local"]
        rc, out, err = hypo("lake", "--lake", lake, *argv)
        if cmd == "status" and case in ("deleted_state_file", "deleted_facts_file"):
            assert rc == 1 and "DAMAGED" in out and "hypo lake verify" in out, (cmd, out, err)
            continue
        assert rc == 2, (cmd, rc, out, err)
        lines = [l for l in err.splitlines() if l.strip()]
        assert len(lines) == 1 and "Traceback" not in err, (cmd, err)
        assert os.path.basename(hit) in lines[0] or hit in lines[0], (cmd, err)
        assert _snapshot(lake) == before, f"{cmd} wrote to a damaged lake"


def test_a_deleted_facts_file_is_an_error_of_the_tick_not_a_quarantined_row(base, tmp_path):
    lake = _copy(base, tmp_path)
    _damage(lake, "deleted_facts_file")
    before = api.lake_status(lake)
    rc, out, err = hypo("lake", "--lake", lake, "tick", "3", "--executor", "local")
    assert rc == 2 and "facts version 1" in err and "the file is missing" in err, err
    after = api.lake_status(lake)
    assert after["versions"] == before["versions"]  # nothing committed, not even the log
    assert after["quarantine"]["total"] == 0


def _answers(lake: str) -> dict:
    return {t: api_lines(lake, t, "all", "OK(X, T)") for t in range(9)}


@pytest.mark.parametrize("case", ["deleted_state_file", "truncated_answers_file",
                                  "truncated_last_log"])
def test_following_verify_gives_back_the_same_answers(base, tmp_path, case):
    """The advice of verify, followed: the lake is whole again, answers equal the undamaged
    lake's tick by tick."""
    lake = _copy(base, tmp_path)
    _damage(lake, case)
    r = api_verify(lake)
    assert not r["ok"]
    if case == "truncated_last_log":  # move the damaged last commit aside, as advised
        f = _last_log(lake, "state")
        os.rename(f, f + ".damaged")
        r = api_verify(lake)
        assert not r["ok"] and "re-run the tick" in r["lines"][0], r["lines"]
    t = int(r["lines"][0].split("--from ")[1].split()[0])
    api.run_range(lake, t, t, executor="local")
    r = api_verify(lake)
    assert r["ok"], r["lines"]
    assert _answers(lake) == _answers(base)


def api_verify(lake: str) -> dict:
    from jobs.maintenance.verify import verify

    return verify(lake)


def _corrupt_inside(f: str) -> None:
    """Overwrite the data pages, keeping the size and the footer intact."""
    with open(f, "rb") as fh:
        data = bytearray(fh.read())
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    for i in range(4, min(footer, 68)):  # the first page header and data, after "PAR1"
        data[i] = 0x55
    with open(f, "wb") as fh:
        fh.write(bytes(data))


@pytest.mark.parametrize("executor", ["local", pytest.param("spark", marks=pytest.mark.slow)])
def test_damage_inside_a_state_file_is_named_by_the_tick_and_verify_deep(base, tmp_path,
                                                                         executor):
    """A state file of the right size with an intact footer but damaged pages: the footer
    checks pass, the tick's reader fails — the tick names the file in one line (exit 2,
    nothing committed), and `verify --deep` (not the quick `verify`) finds it."""
    from deltalake import DeltaTable

    lake = _copy(base, tmp_path)
    f = [u for u in DeltaTable(os.path.join(lake, "state")).file_uris() if "tick=8" in u][0]
    f = f.removeprefix("file://")
    _corrupt_inside(f)
    hit = os.path.relpath(f, lake)
    before = _snapshot(lake)
    rc, out, err = hypo("lake", "--lake", lake, "tick", "9", "--executor", executor)
    lines = [l for l in err.splitlines() if l.startswith("hypo lake: error")]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert hit in lines[0] and "cannot be decoded" in lines[0] and "--deep" in lines[0], err
    # found while reading, after the run logged its start: no table changed (the ticks log
    # has the start row of an incomplete run, as after any crash)
    tables = {k: v for k, v in _snapshot(lake).items() if not k.startswith("_hypo/ticks")}
    assert tables == {k: v for k, v in before.items() if not k.startswith("_hypo/ticks")}
    assert hypo("lake", "--lake", lake, "verify")[0] == 0
    rc, out, err = hypo("lake", "--lake", lake, "verify", "--deep")
    assert rc == 1 and hit in out and "re-run the tick" in out, out


def test_verify_of_a_whole_lake(base):
    rc, out, err = hypo("lake", "--lake", base, "verify")
    assert rc == 0 and "no damage found" in out, (out, err)
    rc, out, err = hypo("lake", "--lake", base, "verify", "--format", "json")
    assert rc == 0 and '"ok": true' in out
    rc, out, err = hypo("lake", "--lake", base, "verify", "--deep")
    assert rc == 0 and "no damage found" in out, (out, err)


def test_after_a_backfill_current_is_the_last_completed_partition(base, tmp_path):
    """Issue 14.1: re-running ticks 2..3 after 0..8 leaves S_8 current: the README's view
    (partition tick = the ticks log's last `done`) gives S_8, and `status` says so."""
    import pyarrow.compute as pc

    from jobs.table import delta

    lake = _copy(base, tmp_path)
    before = api_lines(lake, 8, "all", "OK(X, T)")
    api.run_range(lake, 2, 3, executor="local")
    ticks = delta.read_arrow(os.path.join(lake, "_hypo", "ticks"), "ticks")
    last = max(r["tick"] for r in ticks.to_pylist() if r["phase"] == "done")
    assert last == 8
    state = delta.read_arrow(os.path.join(lake, "state"), "state")
    cur = state.filter(pc.equal(state.column("tick"), last))
    st = api.lake_status(lake)
    assert st["last_tick"] == 8 and cur.num_rows == st["last"]["counts"]["state_rows"]
    rc, out, _ = hypo("lake", "--lake", lake, "status")
    assert rc == 0 and "current (tick 8, partition tick=8)" in out
    assert api_lines(lake, 8, "all", "OK(X, T)") == before


def test_nulls_in_a_required_column_name_the_table_version_and_file(base, tmp_path):
    """Issue 44.6: a valid Parquet file of the answers table with nulls in `json` / `status`
    (what its readers cannot do without) is damage named in one line — table, version, file —
    by `answers`, `history` and `report`, not a TypeError from inside."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    lake = _copy(base, tmp_path)
    files = sorted(glob.glob(os.path.join(lake, "answers", "tick=3", "**", "*.parquet"),
                             recursive=True))
    assert files
    t = pq.read_table(files[0])
    i = t.schema.get_field_index("json")
    t = t.set_column(i, "json", pa.nulls(t.num_rows, pa.string()))
    pq.write_table(t, files[0])
    for argv in (["answers", "--tick", "3"], ["history", "OK(wt2, 1)"]):
        rc, out, err = hypo("lake", "--lake", lake, *argv)
        lines = [x for x in err.splitlines() if x.strip()]
        assert rc == 2 and len(lines) == 1 and "Traceback" not in err, (argv, rc, err)
        assert "answers" in lines[0] and "version" in lines[0] and \
            os.path.basename(files[0]) in lines[0] and "without a json" in lines[0], lines[0]
    rc, out, err = hypo("lake", "--lake", lake, "verify", "--deep")
    assert rc == 1 and os.path.basename(files[0]) in out, (out, err)
    from jobs.table.damage import data_file_problem  # deep: the nulls, whatever the size

    assert data_file_problem(files[0], deep=True, required=("json",)).endswith(
        "without a json (a required column)")
    assert data_file_problem(files[0], deep=False, required=("json",)) is None


def test_a_missing_last_answers_commit_is_refused_not_papered_over(base, tmp_path):
    """Issue 44.5: the answers table's last commit file (tick 8's) deleted.  Reading tick 8
    and running tick 9 (or a backfill of tick 3) are refused with the verify hint — a tick
    committed now would take version 9 and tick 8's answers would be gone for good; the
    repair verify advises (re-run tick 8) is allowed and gives back the same answers."""
    lake = _copy(base, tmp_path)
    before = api_lines(lake, 8, "all")
    last = _last_log(lake, "answers")
    os.remove(last)
    for argv in (["answers", "--tick", "8"], ["tick", "9"], ["tick", "3"]):
        rc, out, err = hypo("lake", "--lake", lake, *argv)
        assert rc == 2 and "hypo lake verify" in err and "Traceback" not in err, (argv, err)
    rc, out, err = hypo("lake", "--lake", lake, "tick", "9")
    assert "records version" in err and "written by tick 8" in err and "tick 9 was not run" in err, err
    assert not os.path.exists(last)  # nothing was written
    rc, out, err = hypo("lake", "--lake", lake, "verify")
    assert "hypo lake run --from 8 --to 8" in out + err, out + err
    assert hypo("lake", "--lake", lake, "run", "--from", "8", "--to", "8")[0] == 0
    assert api_lines(lake, 8, "all") == before
    assert hypo("lake", "--lake", lake, "tick", "9")[0] == 0


def test_a_lost_facts_commit_is_named_and_recoverable(base, tmp_path):
    """Issue 44.11: the facts table's commit deleted made the facts vanish with `verify`
    clean (and a tick would have run on fewer facts).  The ticks log records the facts
    version each tick read: verify names the loss, ticks are refused, and the advice
    recovers — ingesting the same files again."""
    lake = _copy(base, tmp_path)
    before = api_lines(lake, 8, "all")
    os.remove(_last_log(lake, "facts"))
    rc, out, err = hypo("lake", "--lake", lake, "verify")
    assert rc == 1, out + err
    assert "facts version 1: facts/_delta_log: tick 0 read version 1, but the table ends at " \
           "version 0" in out + err, out + err
    assert "hypo lake ingest` of the same files" in out + err
    rc, out, err = hypo("lake", "--lake", lake, "tick", "9")
    assert rc == 2 and "facts: the ticks log records version 1 read by tick 0" in err, err
    assert hypo("lake", "--lake", lake, "ingest", STREAM)[0] == 0  # the facts again
    assert hypo("lake", "--lake", lake, "run", "--from", "8", "--to", "8")[0] == 0
    rc, out, err = hypo("lake", "--lake", lake, "verify")
    assert rc == 0, out + err
    assert api_lines(lake, 8, "all") == before


def test_lost_quarantine_and_dq_commits_of_a_tick_are_named(tmp_path):
    """The quarantine rows a tick wrote (its version in the ticks log) and its data-quality
    rows (its record _hypo/dq/tick=τ.json): deleted last commits are named by verify, the
    next tick is refused, and re-running the tick writes them again."""
    lake = str(tmp_path / "lake")
    stream = tmp_path / "s.jsonl"
    stream.write_text('{"tick": 0, "fact": "Hot(wt1, 0)"}\n{"tick": 0, "fact": "Hot(wt2, 5)"}\n')
    assert hypo("lake", "--lake", lake, "init", "--program", TURBINES)[0] == 0
    assert hypo("lake", "--lake", lake, "ingest", str(stream))[0] == 0
    api.run_range(lake, 0, 0, executor="local")
    os.remove(_last_log(lake, "quarantine"))
    os.remove(_last_log(lake, "dq"))
    rc, out, err = hypo("lake", "--lake", lake, "verify")
    assert rc == 1 and "quarantine" in out + err and "tick 0 wrote version" in out + err, \
        out + err
    assert "dq/tick=0: tick 0 recorded" in out + err and "--from 0 --to 0" in out + err
    rc, out, err = hypo("lake", "--lake", lake, "tick", "1")
    assert rc == 2 and "quarantine: the ticks log records version" in err, err
    assert hypo("lake", "--lake", lake, "run", "--from", "0", "--to", "0")[0] == 0
    assert hypo("lake", "--lake", lake, "verify")[0] == 0


def test_a_deleted_program_json_is_restored_by_init_not_by_removing_the_lake(base, tmp_path):
    """Issue 44.11: with _hypo/program.json deleted, `status` said "no lake" and `init`
    advised removing the directory — the facts with it.  Now every command names the
    missing file, and `init` with the lake's program rewrites it (another program, query or
    --confidence is refused, nothing changed); the lake then answers as before."""
    lake = _copy(base, tmp_path)
    before = api_lines(lake, 8, "all")
    os.remove(os.path.join(lake, "_hypo", "program.json"))
    rc, out, err = hypo("lake", "--lake", lake, "status")
    assert rc == 2 and "has its tables but no _hypo/program.json" in err, err
    rc, out, err = hypo("lake", "--lake", lake, "verify")
    assert rc == 1 and "_hypo/program.json: the file is missing" in out + err, out + err
    for argv in (["--program", "examples/inconsistent.tdl"],
                 ["--program", TURBINES, "--confidence"]):
        rc, out, err = hypo("lake", "--lake", lake, "init", *argv)
        assert rc == 2 and "nothing was changed" in err and "remove" not in err, err
        assert not os.path.exists(os.path.join(lake, "_hypo", "program.json"))
    rc, out, err = hypo("lake", "--lake", lake, "init", "--program", TURBINES)
    assert rc == 0 and "restored" in out, out + err
    assert hypo("lake", "--lake", lake, "verify")[0] == 0
    assert api_lines(lake, 8, "all") == before
    assert hypo("lake", "--lake", lake, "tick", "9")[0] == 0


@pytest.mark.parametrize("col,executor", [("ev", "local"), ("template", "local"),
                                          ("kind", "local"), ("ev", "row"), ("kind", "row")])
def test_nulls_in_a_state_file_are_damage_not_an_old_layout(base, tmp_path, col, executor):
    """Issue 44.11: a state file whose size and footer are intact but with nulls where its
    rows' kind needs values passed `verify --deep`; the next tick then computed on (a null
    ev read as no evidence), crashed (a null template) or advised `hypo lake migrate` (no
    kind), which had nothing to do.  Now verify --deep names the file and the tick refuses
    with the repair: re-running the tick that wrote it."""
    from lakehelp import null_state_column

    lake = _copy(base, tmp_path)
    null_state_column(lake, 7, col)
    assert hypo("lake", "--lake", lake, "verify")[0] == 0  # the footer is fine
    rc, out, err = hypo("lake", "--lake", lake, "verify", "--deep")
    assert rc == 1 and "(a damaged file)" in out + err and "--from 7 --to 7" in out + err, \
        out + err
    rc, out, err = hypo("lake", "--lake", lake, "tick", "8", "--executor", executor)
    assert rc == 2 and "the state of tick 7 has" in err and "migrate" not in err, err
    assert "hypo lake run --from 7 --to 7" in err and "Traceback" not in err
    assert hypo("lake", "--lake", lake, "run", "--from", "7", "--to", "8")[0] == 0
    assert hypo("lake", "--lake", lake, "verify", "--deep")[0] == 0
