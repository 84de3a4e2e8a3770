"""The change feed of answers (issue 43): the `current` table, one row per shown answer, kept
by a MERGE per tick with Delta's change data feed on; `hypo lake changes --from a --to b`
(read from the feed) equals `hypo run --changes --format jsonl` for those ticks — on Example
13, on random programs with negation (new, updated, decided and refuted answers), across a
quiet stretch, after a crash between a tick's `done` and its MERGE; a forgotten answer is a
delete in the feed."""
from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from jobs import lake as api
from jobs.ingest.generate import random_case, write_jsonl
from jobs.table import current
from jobs.table.store import Lake
from lakehelp import hypo, lake_changes, run_changes, until_of, write_program

TURBINES = "examples/wind_turbines.tdl"
STREAM = "examples/wind_turbines.jsonl"


def _lake(tmp_path, program: str, stream: str, name: str = "lake") -> tuple[str, int]:
    lake = str(tmp_path / name)
    until = until_of(program, stream)
    api.init(lake, program)
    api.ingest(lake, None, [stream])
    api.run_range(lake, 0, until, executor="local")
    return lake, until


def _feed(lake: str) -> list[dict]:
    dt = DeltaTable(f"{lake}/current")
    return pa.table(dt.load_cdf(starting_version=1, ending_version=dt.version()).read_all()
                    ).select(["_change_type", "_commit_version", "answer_key", "status",
                              "tick"]).to_pylist()


def test_example13_changes_equal_hypo_run_changes(tmp_path):
    lake, until = _lake(tmp_path, TURBINES, STREAM)
    ref = run_changes(TURBINES, STREAM, until)
    assert ref and lake_changes(lake, 0, until) == ref
    for a, b in ((0, 3), (3, 5), (4, 4), (6, until)):
        assert lake_changes(lake, a, b) == [x for x in ref if a <= int(x[9:x.index(",")]) <= b]
    # a decided answer is forgotten a tick later: a delete in the feed, nothing printed
    feed = _feed(lake)
    dels = [r for r in feed if r["_change_type"] == "delete"]
    assert dels and all(r["status"] == "definite" for r in dels)
    # one row per answer shown at the newest tick
    now = DeltaTable(f"{lake}/current").to_pyarrow_table().to_pylist()
    assert [r["tick"] for r in now] == [until] and now[0]["change"] == "decided"


@pytest.mark.parametrize("seed", [2, 4, 5, 7, 9, 11])
def test_random_programs_with_negation(tmp_path, seed):
    text, rows = random_case(seed, n_devices=5, n_times=6)
    prog = write_program(tmp_path, text)
    stream = str(tmp_path / "s.jsonl")
    write_jsonl(rows, stream)
    lake, until = _lake(tmp_path, prog, stream)
    assert lake_changes(lake, 0, until) == run_changes(prog, stream, until), seed


KINDS = "#query B(X, T).\nB(X, T) :- p(X, T), q(X, T+1), q(X, T+2).\n"
KINDS_STREAM = [{"tick": 0, "fact": "p(a, 0)"}, {"tick": 0, "fact": "p(b, 0)"},
                {"tick": 0, "fact": "p(c, 0)"}, {"tick": 1, "fact": "q(a, 1)"},
                {"tick": 1, "fact": "q(b, 1)"}, {"tick": 2, "fact": "q(a, 2)"}]


def test_every_kind_of_change_new_updated_decided_refuted(tmp_path):
    """a: new, updated, decided; b: new, updated, refuted; c: new, refuted — and the feed's
    rows: the refuted rows deleted a tick later, the decided one once forgotten."""
    prog = write_program(tmp_path, KINDS)
    stream = str(tmp_path / "s.jsonl")
    write_jsonl(KINDS_STREAM, stream)
    lake, until = _lake(tmp_path, prog, stream)
    ref = run_changes(prog, stream, until)
    assert {x.split('"change": "')[1].split('"')[0] for x in ref} == {
        "new", "updated", "decided", "refuted"}
    assert lake_changes(lake, 0, until) == ref
    feed = _feed(lake)
    by = {}
    order = {"insert": 0, "update_preimage": 1, "update_postimage": 2, "delete": 3}
    for r in sorted(feed, key=lambda r: (r["_commit_version"], order[r["_change_type"]])):
        key = r["answer_key"].split('"X", "')[1][0]
        by.setdefault(key, []).append((r["_change_type"], r["status"]))
    assert by["c"] == [("insert", "hypothetical"), ("update_preimage", "hypothetical"),
                       ("update_postimage", "refuted"), ("delete", "refuted")], by
    assert by["a"][-2:] == [("update_postimage", "definite"), ("delete", "definite")], by


def test_a_crash_after_done_loses_no_change_and_a_backfill_keeps_the_table(tmp_path):
    text, rows = random_case(4, n_devices=5, n_times=6)
    prog = write_program(tmp_path, text)
    stream = str(tmp_path / "s.jsonl")
    write_jsonl(rows, stream)
    lake, until = _lake(tmp_path, prog, stream)
    ref = run_changes(prog, stream, until)
    # the same lake where ticks 2..4 ran but their MERGEs did not (a crash after `done`)
    other = str(tmp_path / "other")
    api.init(other, prog)
    api.ingest(other, None, [stream])
    api.run_range(other, 0, 1, executor="local")
    real = current.catch_up
    try:
        current.catch_up = lambda L, tau, *a, **k: {}
        api.run_range(other, 2, 4, executor="local")
    finally:
        current.catch_up = real
    api.run_range(other, 5, until, executor="local")  # tick 5 catches up 2..5
    assert lake_changes(other, 0, until) == ref
    v = DeltaTable(f"{lake}/current").version()
    api.run_range(lake, 2, 3, executor="local")  # a backfill: the table holds tick `until`
    assert DeltaTable(f"{lake}/current").version() == v
    assert lake_changes(lake, 0, until) == ref


def test_a_lake_without_the_table_starts_its_feed_at_the_next_tick(tmp_path):
    lake, until = _lake(tmp_path, TURBINES, STREAM)
    shutil.rmtree(f"{lake}/current")
    rc, out, err = hypo("lake", "--lake", lake, "changes")
    assert rc == 2 and "no `current` table yet" in err
    api.run_range(lake, until, until, executor="local")
    rc, out, err = hypo("lake", "--lake", lake, "changes", "--from", "0")
    assert rc == 2 and f"starts at tick {until}" in err, err
    assert lake_changes(lake, until, until) == [
        x for x in run_changes(TURBINES, STREAM, until) if f'"tick": {until},' in x]
    rc, out, err = hypo("lake", "--lake", lake, "changes", "--from", "5", "--to", "4")
    assert rc == 2 and "--from 5 is after --to 4" in err, err


def test_the_feed_survives_a_vacuum(tmp_path):
    """VACUUM commits to `current` too (no tick in them): the next tick still knows the tick
    the table holds, and the feed stays readable (delta-rs keeps the change data files)."""
    lake, until = _lake(tmp_path, TURBINES, STREAM)
    rc, out, err = hypo("lake", "--lake", lake, "vacuum", "--keep-answers", "4",
                        "--retain-hours", "0", "--force")
    assert rc == 0, err
    api.run_range(lake, until + 1, until + 1, executor="local")
    assert lake_changes(lake, 0, until + 1) == run_changes(TURBINES, STREAM, until + 1)


def test_a_damaged_feed_log_is_named_not_taken_for_a_missing_table(tmp_path):
    lake, until = _lake(tmp_path, TURBINES, STREAM)
    os.remove(os.path.join(lake, "current", "_delta_log", f"{3:020d}.json"))
    rc, out, err = hypo("lake", "--lake", lake, "changes")
    assert rc == 2 and "current version 3" in err and "00000000000000000003.json" in err, err
    assert "no `current` table yet" not in err and "Traceback" not in err


def test_verify_checks_the_feed_and_changes_names_a_damaged_file(tmp_path):
    """`verify` checks the `current` table too — its live files and the change data files
    its kept commits name — and `hypo lake changes` over a damaged change data file is one
    line naming it (it was a delta-rs traceback); removing the table starts a new feed."""
    from jobs.maintenance.verify import verify

    lake, until = _lake(tmp_path, TURBINES, STREAM)
    got = verify(lake, deep=True)
    assert got["ok"] and "current" in got["checked"], got
    cdc = sorted(os.listdir(os.path.join(lake, "current", "_change_data")))
    with open(os.path.join(lake, "current", "_change_data", cdc[0]), "wb") as fh:
        fh.write(b"garbage")
    got = verify(lake)
    assert not got["ok"] and any(cdc[0] in x and "a change data file" in x and
                                 "remove the `current` table" in x for x in got["lines"]), got
    rc, out, err = hypo("lake", "--lake", lake, "changes")
    assert rc == 2 and cdc[0] in err and "hypo lake verify" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    shutil.rmtree(os.path.join(lake, "current"))  # the advice: a new feed from the next tick
    assert verify(lake)["ok"]
    api.run_range(lake, until + 1, until + 2, executor="local")
    assert verify(lake, deep=True)["ok"]
    assert lake_changes(lake, until + 2, until + 2) == [
        x for x in run_changes(TURBINES, STREAM, until + 2) if f'"tick": {until + 2},' in x]
