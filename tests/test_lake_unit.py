"""Lake job pieces that need no Spark: the state layout, relational validation, input
parsing, Delta helpers, data quality reasons, migration, and the CLI's one-line errors for
user mistakes."""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.table import delta
from jobs.ingest.generate import turbine_program
from jobs.ingest.files import read_files
from lakehelp import check_lake_equals_run, hypo, lake_lines, write_program
from reasoning.language.compiler import compile_file
from reasoning.semantics.patterns import Fact

TURBINES = "examples/wind_turbines.tdl"


# ------------------------------------------------------------------ state layout
def test_state_rows_roundtrip_every_tick_of_example13():
    """S_τ as state rows (jobs/table/state.py, hypo-state/2) and back gives the engine's S_τ."""
    from jobs.table.state import rows_to_answers, state_frame
    from reasoning.columnar import ColumnarEngine
    from reasoning.stream.reader import read_stream_file

    cp = compile_file(TURBINES)
    st = read_stream_file("examples/wind_turbines.jsonl", cp)
    eng = ColumnarEngine(cp)
    for t in range(9):
        eng.step([f for f, _ in st.slices.get(t, ())], t, snapshot=False)
        rows = state_frame(eng.B, eng, cp).to_dicts()
        answers, window = rows_to_answers(cp, rows)
        key = lambda a: (a.tid, str(a.b), sorted(a.ev), sorted(map(str, a.ng)))  # noqa: E731
        assert sorted(map(key, answers)) == sorted(map(key, eng.answers())), t
        assert sorted(window) == sorted(eng.window_facts()), t
        assert sum(r["kind"] == "meta" for r in rows) == 1


# ------------------------------------------------------------------ validation
def test_relational_reasons_are_hypo_runs():
    """jobs/ingest/validate.py refuses the rows reasoning.stream.facts.validate refuses, with its text."""
    import polars as pl

    from jobs.ingest.validate import with_duplicates, with_reasons
    from reasoning.columnar.backends.polars import PolarsBackend
    from reasoning.stream.facts import validate

    cp = compile_file(TURBINES)
    rows = [("Hot", ["wt1"], 2), ("Foo", ["a"], 1), ("Shdn", ["wt1"], 2), ("Hot", ["a", "b"], 2),
            ("Hot", ["wt2"], 5), ("Hot", ["wt3"], 0), ("Hot", ["wt3"], -1), ("Hot", ["wt1"], 2),
            ("Hot", ["wt2"], 1), (None, ["x"], 1)]
    df = pl.DataFrame({"tick": [2] * len(rows), "pred": [r[0] for r in rows],
                       "args": [r[1] for r in rows], "time": [r[2] for r in rows],
                       "source": ["s"] * len(rows), "line": list(range(1, len(rows) + 1)),
                       "batch": ["b"] * len(rows)})
    B = PolarsBackend()
    win = pl.DataFrame({"pred": ["Hot"], "args": [["wt2"]], "time": [1]})
    out = with_duplicates(B, with_reasons(B, df, cp, 2), win, 2).sort("line").to_dicts()
    for (pred, args, t), got in zip(rows, out):
        if pred is None:
            assert got["reason_code"] == "wrong_type"
            continue
        want = validate(cp, Fact(pred, tuple(args), t), 2)
        if want is None:
            continue
        assert got["reason"] == want, (pred, args, t)
    assert out[0]["reason"] is None and out[7]["reason_code"] == "duplicate"
    assert out[8]["reason"] == "duplicate: this fact already arrived at an earlier tick"


# ------------------------------------------------------------------ input files
def _write(path, data: bytes) -> str:
    with open(path, "wb") as fh:
        fh.write(data)
    return str(path)


def test_bad_jsonl_lines_are_rows_of_the_quarantine(tmp_path):
    cp = compile_file(TURBINES)
    lines = [
        b'{"tick": 2, "fact": "Hot(wt1, 2)"}',
        b'{"tick": 2, "pred": "Hot", "args": ["wt2"], "time": 1}',
        b'{"tick": 2, "fact": "Hot(wt1, 2)"',  # truncated JSON
        b'{"tick": "two", "fact": "Hot(wt1, 2)"}',  # wrong type
        b'{"tick": 2, "fact": 17}',
        b'{"tick": 2, "pred": "Hot", "args": "wt1", "time": "1"}',
        b'{"tick": 2, "fact": "Hot(wt1, "}',  # parse error
        b'{"tick": 3, "fact": "Hot(wt1, 3)"}',  # another slice
        b'[1, 2]',
        b'\xff\xfe\x00garbage\x80',
        b'{"tick": 2, "fact": "' + b"x" * 70000 + b'"}',  # over-long line
        b'',
        b'{"tick": 2, "fact": "Foo(a, 1)"}',  # parses; refused later (unknown predicate)
    ]
    f = _write(tmp_path / "s.jsonl", b"\n".join(lines) + b"\n")
    parsed, unreadable = read_files([f], cp, 2)
    assert not unreadable
    assert len(parsed) == 3
    assert parsed.pred == ["Hot", "Hot", "Foo"] and parsed.args[1] == ["wt2"]
    codes = [r["reason_code"] for r in parsed.rejected]
    assert codes == ["bad_json", "wrong_type", "wrong_type", "wrong_type", "parse_error",
                     "wrong_tick", "bad_json", "bad_encoding", "too_long"]
    by_line = {r["line"]: r for r in parsed.rejected}
    assert by_line[3]["raw"].startswith('{"tick": 2, "fact"')
    assert by_line[11]["raw_bytes"] > 70000 and len(by_line[11]["raw"]) <= 65536
    assert "\\xff" in by_line[10]["raw"]  # undecodable bytes kept as escapes
    # every non-empty line is a fact row or a quarantine row
    assert len(parsed) + len(parsed.rejected) == len([l for l in lines if l])


def test_csv_and_parquet_inputs(tmp_path):
    cp = compile_file(TURBINES)
    csv_f = _write(tmp_path / "s.csv", b"pred,args,time\nHot,wt1,1\nHot,wt2;wt3,x\nHot,wt2\n"
                                       b"Hot,wt3,0\n")
    parsed, _ = read_files([csv_f], cp, 1)
    assert parsed.args == [["wt1"], ["wt3"]]
    assert [r["reason_code"] for r in parsed.rejected] == ["wrong_type", "wrong_type"]
    fact_csv = _write(tmp_path / "f.csv", b"tick,fact\n1,\"Hot(wt1, 1)\"\n2,\"Hot(wt2, 2)\"\n")
    parsed, _ = read_files([fact_csv], cp, None)
    assert parsed.tick == [1, 2]
    pq.write_table(pa.table({"pred": ["Hot", "Hot", None], "args": [["wt1"], ["wt2"], ["x"]],
                             "time": [1, 2, 3]}), tmp_path / "ok.parquet")
    parsed, unreadable = read_files([str(tmp_path / "ok.parquet")], cp, 2)
    assert parsed.time == [1, 2] and [r["reason_code"] for r in parsed.rejected] == ["wrong_type"]
    pq.write_table(pa.table({"pred": ["Hot"], "args": [["wt1"]], "time": ["1"]}),
                   tmp_path / "types.parquet")
    parsed, _ = read_files([str(tmp_path / "types.parquet")], cp, 2)
    assert [r["reason_code"] for r in parsed.rejected] == ["wrong_type"]
    junk = _write(tmp_path / "junk.parquet", os.urandom(300))
    parsed, unreadable = read_files([junk], cp, 2)
    assert unreadable == [junk]
    assert parsed.rejected[0]["reason_code"] == "unreadable_file"


# ------------------------------------------------------------------ Delta helpers
def test_exclusive_commit_conflicts_and_partitions(tmp_path):
    path = str(tmp_path / "answers")
    delta.create_table(path, "answers")
    a, b = delta.open_table(path), delta.open_table(path)
    rows = pa.Table.from_pylist([{"query": "OK(X, T)", "status": "pending", "json": "{}",
                                  "sort_key": "{}"}])
    act = delta.write_file(path, "answers", rows, "tick=3/x", {"tick": "3"})
    assert delta.commit(a, "answers", [act], metadata={"tick": "3"}) == 1
    act2 = delta.write_file(path, "answers", rows, "tick=3/y", {"tick": "3"})
    with pytest.raises(delta.CommitConflict, match="moved from version 0 to 1"):
        delta.commit(b, "answers", [act2], mode="overwrite",
                     partition_filters=[("tick", "=", "3")])
    got = delta.read_arrow(path, "answers", partitions={"tick": 3})
    assert got.column("tick").to_pylist() == [3] and got.column("status").to_pylist() == ["pending"]
    assert json.loads(act.stats)["numRecords"] == 1
    assert delta.history(path)[0]["tick"] == "3"


# ------------------------------------------------------------------ data quality
def test_dq_reasons_are_those_of_hypo_run():
    """The relational validation (the local executor's; Spark runs the same plan) gives
    `hypo run`'s reasons, and Great Expectations counts the same failures."""
    import polars as pl

    from jobs.ingest.validate import gx_summary, with_reasons
    from reasoning.columnar.backends.polars import PolarsBackend

    cp = compile_file(TURBINES)
    rows = [("Hot", ["wt1"], 3), ("Shdn", ["wt1"], 3), ("Foo", ["a"], 1), ("Hot", ["a", "b"], 1),
            ("Hot", ["wt1"], 5), ("Hot", ["wt3"], 1), ("Hot", ["wt1"], -1), ("Hot", ["wt2"], 0)]
    df = pl.DataFrame({"tick": [3] * len(rows), "pred": [r[0] for r in rows],
                       "args": [r[1] for r in rows], "time": [r[2] for r in rows],
                       "source": ["s"] * len(rows), "line": list(range(len(rows))),
                       "batch": ["b"] * len(rows)})
    B = PolarsBackend()
    out = with_reasons(B, df, cp, 3).sort("line")
    assert out.get_column("reason_code").to_list() == [
        None, "idb_predicate", "unknown_predicate", "arity", "future_time", "late",
        "negative_time", None]
    from reasoning.stream.facts import validate

    assert out.get_column("reason").to_list()[5] == validate(cp, Fact("Hot", ("wt3",), 1), 3)
    summary = gx_summary(B, out, cp, "k")
    unexpected = {s["expectation"]: s["unexpected_count"] for s in summary
                  if s["unexpected_count"]}
    assert unexpected["expect_column_values_to_be_in_set"] == 2
    assert unexpected["expect_column_pair_values_to_be_equal"] == 1
    # a large slice is validated in chunks (bounded memory): the same summary, summed
    import jobs.ingest.validate as jv

    old = jv.GX_CHUNK_ROWS
    try:
        jv.GX_CHUNK_ROWS = 3
        assert gx_summary(B, out, cp, "k") == summary
    finally:
        jv.GX_CHUNK_ROWS = old


# ------------------------------------------------------------------ CLI errors (no Spark)
def test_cli_user_mistakes_are_one_line_exit_2(tmp_path):
    lake = str(tmp_path / "lake")
    rc, out, err = hypo("lake", "--lake", lake, "status")
    assert rc == 2 and err.count("\n") == 1 and "no lake at" in err and "Traceback" not in err
    rc, out, err = hypo("lake", "--lake", lake, "init", "--program", TURBINES)
    assert rc == 0 and "created" in out
    rc, out, err = hypo("lake", "init", "--lake", lake, "--program", TURBINES)
    assert rc == 0 and "already initialised" in out
    other = write_program(tmp_path, turbine_program({"d1": 2}))
    rc, out, err = hypo("lake", "--lake", lake, "init", "--program", other)
    assert rc == 2 and "program mismatch" in err and err.count("\n") == 1
    rc, out, err = hypo("lake", "--lake", lake, "tick", "3")
    assert rc == 2 and "cannot run before tick 2" in err and err.count("\n") == 1
    rc, out, err = hypo("lake", "--lake", lake, "tick", "0", "--program", other)
    assert rc == 2 and "program mismatch" in err
    rc, out, err = hypo("lake", "--lake", lake, "answers")
    assert rc == 2 and "no tick" in err
    rc, out, err = hypo("lake", "--lake", lake, "ingest", str(tmp_path / "missing.jsonl"))
    assert rc == 2 and "no such file" in err
    rc, out, err = hypo("lake", "--lake", lake, "ingest", str(tmp_path))
    assert rc == 2 and "is a directory" in err
    rc, out, err = hypo("lake", "--lake", lake, "history", "OK(X, 1)")
    assert rc == 2 and "not ground" in err
    rc, out, err = hypo("lake", "--lake", lake, "history", "Hot(wt1, 1)")
    assert rc == 2 and "not an instance" in err
    rc, out, err = hypo("lake", "--lake", lake, "frobnicate")
    assert rc == 2 and "invalid choice" in err and err.count("\n") == 1
    with open(os.path.join(lake, "_hypo", "program.tdl"), "a") as fh:
        fh.write("% edited\n")
    rc, out, err = hypo("lake", "--lake", lake, "tick", "0")
    assert rc == 2 and "was modified" in err


def test_program_errors_keep_their_location(tmp_path):
    bad = write_program(tmp_path, "#query OK(X, T).\nOK(X, T) :- Hot(X, T\n")
    rc, out, err = hypo("lake", "--lake", str(tmp_path / "l"), "init", "--program", bad)
    assert rc == 2 and "p.tdl:" in err and "Traceback" not in err


# ------------------------------------------------------------------ migration
def _v1_lake(tmp_path, ticks: int):
    """A lake as the previous version wrote it: state table in the row engine's form
    (hypo-state/1, one overwrite per tick), ticks 0..ticks-1 done."""
    from deltalake import DeltaTable, Schema
    from deltalake.transaction import CommitProperties, create_table_with_add_actions

    from jobs import lake as api
    from jobs.table.store import Lake
    from reasoning.row.engine import Engine
    from reasoning.row.rows import STATE_COLUMNS, to_rows
    from reasoning.stream.reader import read_stream_file

    lake = str(tmp_path / "lake")
    api.init(lake, TURBINES)
    api.ingest(lake, None, ["examples/wind_turbines.jsonl"])
    L = Lake(lake)
    path = L.path("state")
    import shutil

    shutil.rmtree(path)
    typ = {"string": pa.string(), "long": pa.int64(), "array<long>": pa.list_(pa.int64()),
           "array<string>": pa.list_(pa.string())}
    v1 = pa.schema([(n, typ[t]) for n, t in STATE_COLUMNS.items()])
    os.makedirs(path)
    create_table_with_add_actions(path, Schema.from_arrow(v1), [], mode="error", name="state")
    cp = compile_file(TURBINES)
    st = read_stream_file("examples/wind_turbines.jsonl", cp)
    eng = Engine(cp)
    prev = -1
    for t in range(ticks):
        eng.step([f for f, _ in st.slices.get(t, ())], t)
        rel = f"v-{t}.parquet"
        pq.write_table(pa.Table.from_pylist(to_rows(eng), schema=v1), os.path.join(path, rel))
        DeltaTable(path).create_write_transaction(
            [delta.file_action(path, rel, {})], mode="overwrite", schema=v1,
            commit_properties=CommitProperties(custom_metadata={"tick": str(t)}))
        v = DeltaTable(path).version()
        L.log(t, f"old{t}", "done", state_version=v, prev_state_version=prev,
              state_digest=f"d{t}", answers_version=0, answers_digest="-",
              facts_version=1, counts={})
        prev = v
    return lake


def test_a_v1_lake_is_refused_then_migrated_and_continues(tmp_path):
    from jobs import lake as api
    from jobs.errors import LakeError
    from lakehelp import api_lines, reference

    lake = _v1_lake(tmp_path, 4)
    with pytest.raises(LakeError, match="hypo lake migrate"):
        api.run_tick(lake, 4, executor="local")
    r = api.migrate(lake)
    assert r["migrated"] and r["ticks"] == [0, 1, 2, 3]
    assert not api.migrate(lake)["migrated"]  # idempotent
    api.run_range(lake, 4, 8, executor="local")
    ref = reference(TURBINES, "examples/wind_turbines.jsonl", 8, all_=True)
    for t in range(4, 9):
        assert api_lines(lake, t, "all", "OK(X, T)") == ref[t], t
    assert os.path.isdir(os.path.join(lake, "_hypo", "state-v1"))


@pytest.mark.parametrize("stagger", [0.0, 0.3])
def test_concurrent_ingests_of_one_slice_commit_exactly_once(tmp_path, stagger):
    """Two `hypo lake ingest --tick 0` of the same file, together or staggered (issue
    11.5): one commit of the batch, every file the log references exists, no orphan left by
    the loser, and both exit 0."""
    import subprocess
    import sys
    import time

    from jobs import lake as api

    lake = str(tmp_path / "lake")
    api.init(lake, TURBINES)
    rows = [json.dumps({"tick": 0, "fact": f"Hot(wt{i % 3 + 1}, 0)"}) for i in range(3)]
    rows.append('{"tick": 0, "fact": "Hot(wt1 0)"}')  # one quarantined row
    f = _write(tmp_path / "s.jsonl", ("\n".join(rows) + "\n").encode())
    cmd = [sys.executable, "-m", "hypo_cli", "lake", "--lake", lake, "ingest", "--tick",
           "0", f]
    procs = []
    for _ in range(2):
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, cwd=os.getcwd()))
        time.sleep(stagger)
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert all("Traceback" not in e for _, e in outs)
    for kind, n in (("facts", 3), ("quarantine", 1)):
        path = os.path.join(lake, kind)
        dt = delta.open_table(path)
        commits = [h for h in dt.history() if h.get("batch")]
        assert len(commits) == 1, (kind, commits)
        files = dt.file_uris()
        assert all(os.path.exists(u.replace("file://", "")) for u in files)
        assert sum(pq.read_table(u.replace("file://", "")).num_rows for u in files) == n
        on_disk = [os.path.join(d, x) for d, _, xs in os.walk(path) if "_delta_log" not in d
                   for x in xs if x.endswith(".parquet")]
        assert len(on_disk) == len(files), (kind, on_disk, files)


def test_a_program_with_a_byte_order_mark_inits_and_runs_the_lake(tmp_path):
    """The program file as a Windows editor saves it (BOM, CRLF): init stores it, a tick
    checked against the same file runs; a program that is not text is refused in one line."""
    import pytest

    from jobs import lake as api
    from jobs.errors import LakeMissing

    prog = tmp_path / "p.tdl"
    prog.write_bytes("\ufeff#query Q(X, T).\r\nQ(X, T) :- A(X, T).\r\n".encode("utf-8"))
    lake = str(tmp_path / "lake")
    api.init(lake, str(prog))
    s = _write(tmp_path / "s.jsonl", b'{"tick": 0, "fact": "A(a, 0)"}\n')
    api.ingest(lake, 0, [s])
    got = api.run_tick(lake, 0, executor="local", program=str(prog))
    assert lake_lines(lake, 0, "definite"), got
    bad = _write(tmp_path / "bad.tdl", b"\xff\xfe#query")
    with pytest.raises(LakeMissing, match="not UTF-8 text"):
        api.run_tick(lake, 1, executor="local", program=bad)
    # a report's --to far past the completed ticks is clamped to them (it used to walk
    # every tick number of the range: --to 10¹¹ ran for hours)
    from jobs.audit.report import lake_report

    d = lake_report(lake, 0, 10 ** 11)
    assert (d.start, d.end) == (0, 0)


def test_a_program_past_the_state_layout_is_refused_at_init(tmp_path):
    """The state table stores evidence as an int64 bit mask: a template of 63 literals is
    refused by `init` in one line (it used to fail at the first tick), and no lake is left."""
    rc, out, err = hypo("lake", "--lake", str(tmp_path / "lake"), "init", "--program",
                        write_program(tmp_path, "#query Q(X, T).\nQ(X, T) :- " + ", ".join(
                            f"A{i}(X, T)" for i in range(63)) + ".\n"))
    assert rc == 2 and "63 literals" in err and "`hypo run` answers this program" in err, err
    assert len(err.strip().splitlines()) == 1 and not os.path.exists(tmp_path / "lake")


def test_gzip_files_are_read_and_a_damaged_one_keeps_its_first_lines(tmp_path):
    """`.jsonl.gz` / `.csv.gz` (name and magic bytes) are read like the plain files; a
    truncated archive keeps the lines before the damage and quarantines one row saying where
    it broke; the landing directory lists compressed files too."""
    import gzip

    cp = compile_file(TURBINES)
    lines = "".join(f'{{"tick": 0, "fact": "Hot(wt{i}, 0)"}}\n' for i in range(3000))
    jl = _write(tmp_path / "s.jsonl.gz", gzip.compress(lines.encode()))
    cs = _write(tmp_path / "s.csv.gz", gzip.compress(b'tick,fact\n0,"Hot(wtc, 0)"\n'))
    cut = _write(tmp_path / "cut.jsonl.gz", gzip.compress(lines.encode())[:3000])
    parsed, unreadable = read_files([jl, cs], cp, None)
    assert not unreadable and not parsed.rejected and len(parsed) == 3001
    parsed, _ = read_files([cut], cp, None)
    assert 0 < len(parsed) < 3000 and len(parsed.rejected) == 1
    r = parsed.rejected[0]
    assert r["reason_code"] == "bad_encoding" and "damaged gzip data" in r["reason"]
    assert r["line"] == max(parsed.line) + 1

    from jobs import lake as api

    lake = str(tmp_path / "lake")
    api.init(lake, TURBINES)
    land = os.path.join(lake, "landing", "tick=0")
    os.makedirs(land)
    os.replace(cs, os.path.join(land, "s.csv.gz"))
    assert api.ingest(lake, 0, [])["accepted"] == 1


def test_a_byte_order_mark_at_the_start_of_a_file_is_not_a_bad_row(tmp_path):
    """Excel's "CSV UTF-8" and some JSONL writers start the file with a byte-order mark:
    the header (or first line) is read without it."""
    cp = compile_file(TURBINES)
    cs = _write(tmp_path / "s.csv", b'\xef\xbb\xbftick,fact\n0,"Hot(wt1, 0)"\n')
    jl = _write(tmp_path / "s.jsonl", b'\xef\xbb\xbf{"tick": 0, "fact": "Hot(wt2, 0)"}\n')
    parsed, unreadable = read_files([cs, jl], cp, None)
    assert not unreadable and not parsed.rejected and sorted(a[0] for a in parsed.args) == \
        ["wt1", "wt2"]


def test_integers_past_the_machine_range_are_quarantined_not_the_batch(tmp_path):
    """Ticks or times ≥ 2⁶⁰, 2⁶⁴ or of 5 000 digits, and deeply nested JSON, in JSONL and CSV:
    each row goes to quarantine with its reason, the good rows stay (issue 11.1, 11.2)."""
    cp = compile_file(TURBINES)
    huge = "1" + "0" * 5000
    jl = _write(tmp_path / "s.jsonl", "\n".join([
        '{"tick": 5, "fact": "Hot(wt1, 5)"}',
        '{"tick": 5, "fact": "Hot(wt2, ' + huge + ')"}',
        '{"tick": 5, "fact": "Hot(wt2, 18446744073709551616)"}',
        '{"tick": 18446744073709551616, "fact": "Hot(wt1, 5)"}',
        '{"tick": ' + huge + ', "fact": "Hot(wt1, 5)"}',
        '{"tick": 5, "pred": "Hot", "args": ["wt3"], "time": 18446744073709551616}',
        "[" * 5000 + "]" * 5000]).encode() + b"\n")
    cs = _write(tmp_path / "s.csv", ("tick,fact\n5,\"Hot(wt3, 5)\"\n" + huge + ",\"Hot(wt1, 5)\"\n"
                                     "5,\"Hot(wt2, 1" + "0" * 30 + ")\"\n").encode())
    parsed, unreadable = read_files([jl, cs], cp, None)
    assert not unreadable and len(parsed) == 2
    assert len(parsed.rejected) == 8
    assert all(r["reason_code"] in ("out_of_range", "bad_json", "parse_error")
               for r in parsed.rejected)
    assert all("Traceback" not in r["reason"] for r in parsed.rejected)


def test_facts_ingested_while_a_tick_runs_are_reported_late_until_it_is_rerun(tmp_path):
    """An ingest that commits facts of tick τ while tick τ runs (after it read its slice)
    cannot warn — the tick is not done yet — and the tick's answers lack those facts:
    `status` names the tick and the rows (partition rows now > rows the tick read) and the
    re-run to do; after it, nothing is late."""
    from jobs import lake as api
    from jobs.tick import job as tickjob

    lake = str(tmp_path / "lake")
    api.init(lake, TURBINES)
    api.ingest(lake, 0, [_write(tmp_path / "a.jsonl", b'{"tick": 0, "fact": "Hot(wt1, 0)"}\n')])
    racer = _write(tmp_path / "b.jsonl", b'{"tick": 0, "fact": "Hot(wt9, 0)"}\n'
                                          b'{"tick": 0, "fact": "Hot(wt8, 0)"}\n')
    got = []

    def hook(phase, tau):
        if phase == "after_validate" and tau == 0 and not got:
            got.append(api.ingest(lake, 0, [racer]))

    tickjob.HOOKS.append(hook)
    try:
        api.run_tick(lake, 0, executor="local")
    finally:
        tickjob.HOOKS.remove(hook)
    assert got and got[0]["accepted"] == 2 and "warning" not in got[0]
    assert api.lake_status(lake)["late_facts"] == api.late_ticks(lake) == {0: 2}
    rc, out, err = hypo("lake", "--lake", lake, "status")
    assert rc == 0 and "late facts: tick 0: 2 row(s) ingested after the tick ran" in out, out
    assert "hypo lake run --from 0 --to 0" in out
    api.run_range(lake, 0, 0, executor="local")
    assert api.lake_status(lake)["late_facts"] == {}


def test_reingest_of_a_clean_slice_says_nothing_to_do(tmp_path):
    """Issue 14.2: a clean slice writes to `facts` only; its re-ingest (a backfill) is
    recognised as such, not reported as accepted again with an "already processed" warning."""
    from jobs import lake as api

    lake = str(tmp_path / "lake")
    api.init(lake, TURBINES)
    s = tmp_path / "s.jsonl"
    s.write_text('{"tick": 0, "fact": "Hot(wt1, 0)"}\n{"tick": 0, "fact": "Hot(wt2, 0)"}\n')
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"tick": 0, "fact": \n')
    first = api.ingest(lake, 0, [str(s)])
    assert first["accepted"] == 2 and not first["skipped"]
    api.run_tick(lake, 0, executor="local")
    v = api.lake_status(lake)["versions"]
    assert api.ingest(lake, 0, [str(bad)])["rejected"] == 1  # quarantine only
    for files in ([str(s)], [str(bad)]):
        again = api.ingest(lake, 0, files)
        assert again["skipped"] and "already ingested" in again["message"], again
        assert "warning" not in again
    rc, out, err = hypo("lake", "--lake", lake, "ingest", "--tick", "0", str(s))
    assert rc == 0 and "already ingested" in out, out
    after = api.lake_status(lake)["versions"]
    assert after["facts"] == v["facts"]


def test_ingest_reads_a_fifo_or_a_pipe_once(tmp_path):
    """A FIFO (or a shell's `<(…)` pipe) is read once into a spooled copy: ingest reads a
    file more than once (its SHA-256, then its rows), and the second read of a pipe used to
    wait for ever.  Rows and quarantined lines name the path given; the copy is removed; the
    same content ingested again from a file is recognised as the same batch."""
    import threading

    from deltalake import DeltaTable

    from jobs import lake as api

    lake = str(tmp_path / "lake")
    api.init(lake, TURBINES)
    text = '{"tick": 0, "fact": "Hot(wt1, 0)"}\nnot json\n{"tick": 1, "fact": "Hot(wt2, 1)"}\n'
    fifo = str(tmp_path / "feed")
    os.mkfifo(fifo)

    def write():
        with open(fifo, "w") as fh:
            fh.write(text)

    w = threading.Thread(target=write, daemon=True)
    w.start()
    got = api.ingest(lake, None, [fifo])
    w.join(timeout=10)
    assert got["accepted"] == 2 and got["rejected"] == 1 and got["files"] == [fifo]
    q = DeltaTable(os.path.join(lake, "quarantine")).to_pandas()
    f = DeltaTable(os.path.join(lake, "facts")).to_pandas()
    assert set(q["source"]) == {fifo} and list(q["line"]) == [2]
    assert set(f["source"]) == {fifo} and sorted(f["line"]) == [1, 3]
    assert not os.listdir(os.path.join(lake, "_hypo", "spool"))
    plain = tmp_path / "feed.jsonl"
    plain.write_text(text)
    again = api.ingest(lake, None, [str(plain)])
    assert again["skipped"] and "already ingested" in again["message"]


def test_declared_unused_facts_are_ignored_in_the_lake_and_hints_match_hypo_run(tmp_path):
    """Issue 10 in the lake: the relational validation gives `ignored` (counted, never
    quarantined) and the same "did you mean" reasons as `hypo run`."""
    import polars as pl

    from jobs import lake as api
    from jobs.ingest.validate import with_hints, with_reasons
    from reasoning.columnar.backends.polars import PolarsBackend
    from reasoning.stream.facts import validate

    prog = tmp_path / "p.tdl"
    prog.write_text("#query P(X, T).\n#delay A = 0.\n#delay Other = 1.\n#delay B(x, T) = 1.\n"
                    "P(X, T) :- A(X, T).\n")
    cp = compile_file(str(prog))
    rows = [("A", ["a"], 0), ("Other", ["a"], 0), ("Other", [], 0), ("B", ["a"], 0),
            ("B", ["a", "b"], 0), ("a", ["a"], 0), ("Q", ["a"], 0)]
    df = pl.DataFrame({"tick": [0] * len(rows), "pred": [r[0] for r in rows],
                       "args": [r[1] for r in rows], "time": [r[2] for r in rows],
                       "source": ["s"] * len(rows), "line": list(range(len(rows))),
                       "batch": ["b"] * len(rows)})
    B = PolarsBackend()
    out = with_hints(B, with_reasons(B, df, cp, 0), cp).sort("line")
    assert out.get_column("reason_code").to_list() == [
        None, "ignored", "ignored", "ignored", "arity", "unknown_predicate", "unknown_predicate"]
    for (p, a, t), why in zip(rows, out.get_column("reason").to_list()):
        assert why == validate(cp, Fact(p, tuple(a), t), 0)
    lake = str(tmp_path / "lake")
    api.init(lake, str(prog))
    s = tmp_path / "s.jsonl"
    s.write_text("".join(json.dumps({"tick": 0, "fact": f"{p}({', '.join(a + [str(t)])})"})
                         + "\n" for p, a, t in rows))
    api.ingest(lake, 0, [str(s)])
    c = api.run_tick(lake, 0, executor="local")["counts"]
    assert (c["accepted"], c["ignored"], c["rejected"]) == (1, 3, 3), c
    q = delta.read_arrow(os.path.join(lake, "quarantine"), "quarantine",
                         columns=["reason_code", "reason"]).to_pylist()
    assert sorted(r["reason_code"] for r in q) == ["arity", "unknown_predicate",
                                                    "unknown_predicate"]
    assert any("did you mean A?" in r["reason"] for r in q)


def test_lake_report_errors_are_one_line(tmp_path):
    lake = str(tmp_path / "lake")
    assert hypo("lake", "--lake", lake, "init", "--program", TURBINES)[0] == 0
    rc, out, err = hypo("lake", "--lake", lake, "report", "--out", str(tmp_path / "r.html"))
    assert rc == 2 and err.count("\n") == 1 and "no tick of the lake" in err
    rc, out, err = hypo("lake", "--lake", lake, "report", "--from", "3", "--to", "1")
    assert rc == 2 and err.count("\n") == 1
    assert not os.path.exists(tmp_path / "r.html")


def test_report_window_from_the_environment(tmp_path, monkeypatch):
    from jobs.errors import LakeError
    from jobs.audit.report import publish_report, report_window

    monkeypatch.delenv("HYPO_REPORT_TICKS", raising=False)
    assert report_window() == 500
    monkeypatch.setenv("HYPO_REPORT_TICKS", "0")
    assert publish_report(str(tmp_path / "nolake"), 3) == {"path": None}
    monkeypatch.setenv("HYPO_REPORT_TICKS", "many")
    with pytest.raises(LakeError, match="not a number"):
        report_window()


def test_large_local_frames_are_written_as_parallel_files(tmp_path, monkeypatch):
    """The local executor writes a large table as one file per CPU (threads): the lake still
    equals `hypo run` at every tick, and a state version made of several files reads back
    whole (forced here with a tiny split size)."""
    from deltalake import DeltaTable

    from jobs.table import adapters
    from jobs.tick import resources

    monkeypatch.setattr(adapters, "LOCAL_FILE_ROWS", 1)
    monkeypatch.setattr(resources.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    lake = str(tmp_path / "lake")
    check_lake_equals_run(lake, "examples/wind_turbines.tdl", "examples/wind_turbines.jsonl",
                          "OK(X, T)")
    dirs: dict = {}
    for f in DeltaTable(os.path.join(lake, "state")).file_uris():
        d = os.path.dirname(f)
        dirs[d] = dirs.get(d, 0) + 1
    assert max(dirs.values()) == 3  # three CPUs: three files for a tick with ≥ 3 rows


# ------------------------------------------------------------------ executor choice
def test_auto_executor_keeps_the_tick_on_the_driver_while_it_fits(monkeypatch):
    """auto on a local or a cluster master: the driver (Polars) while the tick's estimated
    peak fits the memory available, Spark beyond (Spark never overtook the driver where
    measured); the 500 000-row rule where the memory is unknown; HYPO_LAKE_LOCAL_MAX
    overrides both; a forced executor is kept."""
    import jobs.tick.job as tk
    from jobs.tick import resources

    monkeypatch.delenv("HYPO_LAKE_LOCAL_MAX", raising=False)
    monkeypatch.setattr(resources, "available_memory", lambda: 8 * 2**30)

    from reasoning.language.compiler import compile_file, compile_program

    turbines = compile_file("examples/wind_turbines.tdl")

    def pick(master, rows, executor="auto", cp=turbines):
        ctx = tk.TickContext(None, 3, "r", cp, executor, master)
        return tk.choose_executor(ctx, rows, 0)

    fits = int(tk.LOCAL_MEMORY_SHARE * 8 * 2**30 / tk.LOCAL_BYTES_PER_ROW)
    assert pick("local[2]", 1_000_000) == "local"
    assert pick("local", fits) == "local"
    assert pick("local[*]", fits + 1) == "spark"
    assert pick("spark://head:7077", fits) == "local"
    assert pick("spark://head:7077", fits + 1) == "spark"
    assert pick("sc://head:15002", fits) == "local"
    assert pick("local[2]", 10, "spark") == "spark"
    kept = compile_program("#query P(T).\nP(T) :- A(T).\nA(T) :- B(T).\n", "m.tdl",
                           modular="always")  # derived literals: only the row engine
    # (the row engine: on the driver, or in the Spark job's one task — test_lake_modular)
    assert kept.modular and pick("local[2]", 10, "local", kept) == "row"
    assert pick("local[2]", 10, "spark", kept) == "spark"
    assert pick("local[2]", 10, cp=kept) == "row"
    monkeypatch.setenv("HYPO_LAKE_LOCAL_MAX", "100")
    assert pick("local[2]", 101) == "spark" and pick("local[2]", 100) == "local"
    monkeypatch.delenv("HYPO_LAKE_LOCAL_MAX")
    monkeypatch.setattr(resources, "available_memory", lambda: None)
    assert pick("local[2]", 500_001) == "spark"
    assert pick("spark://head:7077", 500_000) == "local"
    assert pick("spark://head:7077", 500_001) == "spark"
    monkeypatch.undo()
    got = resources.available_memory()
    assert got is None or got > 0


def test_local_reader_conforms_files_of_different_schemas(tmp_path):
    """The local executor reads a partition's files one by one into the table's schema: a
    producer's file with a narrower integer type, missing optional columns or extra ones is
    read like Spark reads it (nulls for the missing, extra columns ignored)."""
    import polars as pl

    from jobs.table.adapters import LocalIO

    a, b = str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")
    pl.DataFrame({"pred": ["Hot"], "args": [["wt1"]],
                  "time": pl.Series([1], dtype=pl.Int32)}).write_parquet(a)
    pl.DataFrame({"pred": ["Hot"], "args": [["wt2"]], "time": [2], "source": ["s"],
                  "line": [3], "batch": ["b"], "extra": [1]}).write_parquet(b)
    for files in ([a, b], [b, a]):
        df = LocalIO().read(files, "facts")
        assert df.columns == ["pred", "args", "time", "source", "line", "batch"]
        assert df.schema["time"] == pl.Int64
        assert sorted(df.get_column("time").to_list()) == [1, 2]
        assert df.get_column("source").null_count() == 1
    assert LocalIO().read([], "facts").height == 0


def _dq_doc(lake: str, tau: int) -> dict:
    from jobs.table.store import Lake

    doc = json.loads(open(os.path.join(Lake(lake).meta_dir, "dq", f"tick={tau}.json")).read())
    doc.pop("run")
    return doc


def test_gx_beside_the_engine_records_the_same_dq(tmp_path, monkeypatch):
    """The local executor runs GX on a thread beside the engine: the tick's data-quality
    record (and its answers) are those of GX run before the engine."""
    import jobs.ingest.validate as jv
    from jobs import lake as api

    s = tmp_path / "s.jsonl"
    s.write_text('{"tick": 0, "fact": "Hot(wt1, 0)"}\n{"tick": 0, "fact": "Hot(wt2, 0)"}\n'
                 '{"tick": 0, "fact": "Hot(wt2, 0)"}\n{"tick": 0, "fact": "Hot(wt3, 9)"}\n'
                 '{"tick": 0, "fact": "Cold(wt1, 0)"}\n')
    from jobs.tick import resources

    got = {}
    for beside, cpus in ((True, 2), (False, 2), (True, 1)):
        monkeypatch.setattr(jv, "GX_BESIDE", beside)
        monkeypatch.setattr(resources, "usable_cpus", lambda: cpus)
        lake = str(tmp_path / f"lake{beside}{cpus}")
        api.init(lake, TURBINES)
        api.ingest(lake, 0, [str(s)])
        r = api.run_tick(lake, 0, executor="local")
        # on one CPU GX runs before the engine, as with the option off
        assert any(k.startswith("GX") for k in r["seconds"]) == (beside and cpus > 1), \
            r["seconds"]
        got[beside, cpus] = (_dq_doc(lake, 0), r["counts"], r["answers_digest"])
    assert got[True, 2] == got[False, 2] == got[True, 1]
    assert got[True, 2][0]["expectations"] and not got[True, 2][0]["success"]


def test_gx_beside_drops_only_its_own_output_and_reraises(capsys):
    import sys
    import threading

    from jobs.ingest.validate import GXBeside

    go = threading.Event()

    def noisy():
        go.wait(5)
        print("from GX")
        print("from GX", file=sys.stderr)
        return [{"expectation": "x"}]

    out0, err0 = sys.stdout, sys.stderr
    b = GXBeside(noisy)
    print("from the engine")
    go.set()
    assert b.result() == [{"expectation": "x"}]
    assert sys.stdout is out0 and sys.stderr is err0
    seen = capsys.readouterr()
    assert "from the engine" in seen.out and "from GX" not in seen.out + seen.err

    def boom():
        raise ValueError("GX failed")

    with pytest.raises(ValueError, match="GX failed"):
        GXBeside(boom).result()
    assert sys.stdout is out0 and sys.stderr is err0
    b = GXBeside(lambda: go.wait(5))
    b.close()  # a tick that failed first: the streams are given back at once
    assert sys.stdout is out0 and sys.stderr is err0


def test_ingest_of_a_nameless_pipe_of_gzip_data(tmp_path):
    """`hypo lake ingest <(gzip -c s.jsonl)`: the spooled copy of a pipe whose name says no
    format is decompressed when it starts with gzip's magic bytes."""
    import gzip
    import threading

    from jobs import lake as api

    lake = str(tmp_path / "lake")
    api.init(lake, TURBINES)
    text = b'{"tick": 0, "fact": "Hot(wt1, 0)"}\n{"tick": 1, "fact": "Hot(wt2, 1)"}\n'
    fifo = str(tmp_path / "63")
    os.mkfifo(fifo)
    w = threading.Thread(target=lambda: open(fifo, "wb").write(gzip.compress(text)),
                         daemon=True)
    w.start()
    got = api.ingest(lake, None, [fifo])
    w.join(timeout=10)
    assert got["accepted"] == 2 and got["rejected"] == 0, got
    assert not os.listdir(os.path.join(lake, "_hypo", "spool"))


def test_the_ticks_log_is_compacted_by_optimize_and_read_in_one_scan(tmp_path, monkeypatch):
    """Past 64 files the ticks log's small files are bin-packed (Delta OPTIMIZE) — every row
    kept, in order —, the replaced files are deleted once past the retention, and a damaged
    file is still named when the one-scan read fails."""
    from jobs.table import store
    from jobs.errors import LakeDamaged
    from jobs.table.store import Lake

    lake = str(tmp_path / "lake")
    from jobs import lake as api

    api.init(lake, TURBINES)
    L = Lake(lake)
    for i in range(70):
        L.log(i, f"r{i:011d}", "start", facts_version=0)
    monkeypatch.setattr(store, "LOG_RETENTION_HOURS", 0)
    L.log(70, "r00000000070", "done", facts_version=0, counts={"facts": 0})
    assert len(L.table("ticks").file_uris()) < 8
    on_disk = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(lake, "_hypo", "ticks"))
               if "_delta_log" not in d for f in fs if f.endswith(".parquet")]
    assert len(on_disk) == len(L.table("ticks").file_uris()), on_disk
    log = Lake(lake).ticks_log()
    assert [r["tick"] for r in log] == list(range(71))
    assert Lake(lake).done()[70]["run"] == "r00000000070"
    L.log(71, "r00000000071", "start", facts_version=0)
    small = [f for f in L.table("ticks").file_uris() if "00000071-start" in f][0]
    with open(small.removeprefix("file://"), "r+b") as fh:
        fh.truncate(20)
    with pytest.raises(LakeDamaged, match="00000071-start"):
        Lake(lake).ticks_log()


# ------------------------------------------------------------------ unbound time variables
ALARM = """#query Alarm(X, T).
#delay A = 2.
#delay B = 2.
Alarm(X, T) :- A(X, T), B(X, T2).
"""


def test_unbound_time_variable_lake_equals_run_and_history(tmp_path):
    """exact.py "past" in the lake: every tick equals `hypo run` (the answers for T ≥ τ+1
    and the split-off instances), state rows included; history follows Alarm(d1, 1) from the
    schematic answer (T ≥ 1) to its own answer, refuted when A(d1, 1) can no longer
    arrive, and Alarm(d1, 3) to its confirmation."""
    from jobs import lake as api

    program = write_program(tmp_path, ALARM)
    stream = os.path.join(str(tmp_path), "s.jsonl")
    with open(stream, "w", encoding="utf-8") as fh:
        fh.write('{"tick": 0, "fact": "B(d1, 0)"}\n{"tick": 3, "fact": "A(d1, 3)"}\n')
    lake = str(tmp_path / "lake")
    check_lake_equals_run(lake, program, stream, "Alarm(X, T)")
    ev = api.history(lake, "Alarm(d1, 1)")
    assert [(e["tick"], e["status"], e["exact"]) for e in ev] == [
        (0, "hypothetical", False), (1, "hypothetical", True), (2, "hypothetical", True),
        (3, "refuted", False)]
    ev = api.history(lake, "Alarm(d1, 3)")
    assert [(e["tick"], e["status"]) for e in ev][-1] == (3, "definite")
    assert all(not e["exact"] for e in ev[:-1])  # `Alarm(d1, T) for T ≥ …` covered it


def test_init_refuses_a_directory_holding_other_files(tmp_path):
    """A mistyped --lake (a home directory, a repository) gets no tables mixed in: init
    wants a new or empty directory, or one holding only the producers' landing/."""
    from jobs import lake as api
    from jobs.errors import LakeError

    d = tmp_path / "mine"
    (d / "photos").mkdir(parents=True)
    (d / "notes.txt").write_text("x")
    with pytest.raises(LakeError, match=r"is not empty \(notes.txt, photos\)"):
        api.init(str(d), TURBINES)
    assert sorted(os.listdir(d)) == ["notes.txt", "photos"]
    rc, _, err = hypo("lake", "--lake", str(d), "init", "--program", TURBINES)
    assert rc == 2 and "is not empty" in err and "Traceback" not in err
    landed = tmp_path / "landed"
    (landed / "landing" / "tick=0").mkdir(parents=True)
    assert api.init(str(landed), TURBINES)["created"]
    assert not api.init(str(landed), TURBINES)["created"]  # the lake itself: idempotent


_VALUES = st.one_of(st.text(max_size=6), st.sampled_from(["2020-01-01", "12", "true", "null",
                                                          '"', "\\", "\n", "é", "\u2028"]),
                    st.integers(min_value=-2**70, max_value=2**70))


@settings(max_examples=150, deadline=None)
@given(subs=st.lists(st.dictionaries(st.sampled_from(["X", "Y", "T", 'Z"']), _VALUES,
                                     max_size=3), max_size=8),
       want=st.dictionaries(st.sampled_from(["X", "Y", "T", 'Z"']), _VALUES, max_size=3),
       ascii_=st.booleans())
def test_the_history_prefilter_keeps_every_answer_that_covers_the_atom(subs, want, ascii_):
    """`hypo lake history` parses only the substitutions Arrow keeps (jobs.audit.queries._may_cover): it
    must keep every answer `_covers` accepts, whatever the values (quotes, line separators,
    text Arrow would read as a date or a number, integers past 2⁶³)."""
    from jobs.audit.queries import _covers, _may_cover

    col = pa.chunked_array([[json.dumps(s, ensure_ascii=ascii_, sort_keys=True)
                             for s in subs]], pa.string())
    keep = _may_cover(col, want).to_pylist()
    assert len(keep) == len(subs)
    for s, k in zip(subs, keep):
        if _covers({"substitution": s, "excluded": {}}, want):
            assert k, (s, want)


def test_the_history_prefilter_drops_answers_bound_to_other_values():
    from jobs.audit.queries import _may_cover

    subs = ['{"T": 3, "X": "wt1"}', '{"T": 4, "X": "wt1"}', '{"X": "wt2"}', '{"T": 3}', "{}",
            None]
    col = pa.chunked_array([subs], pa.string())
    assert _may_cover(col, {"X": "wt1", "T": 3}).to_pylist() == [True, False, False, True,
                                                                 True, True]
