"""Lake job pieces that need no Spark: partition key, input parsing, Delta helpers, data
quality reasons, and the CLI's one-line errors for user mistakes."""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jobs import delta
from jobs.generate import random_case, turbine_program
from jobs.ingest import read_files
from jobs.partition import find_key
from lakehelp import hypo, write_program
from reasoning.compiler import compile_file, compile_program
from reasoning.patterns import Fact

TURBINES = "examples/wind_turbines.tdl"


# ------------------------------------------------------------------ partition key
def test_turbine_key_is_x():
    pk = find_key(compile_file(TURBINES))
    assert not pk.single
    assert pk.positions == {"Hot": 0, "OK": 0, "Shdn": 0}
    assert set(pk.key_var_name.values()) == {"X"}
    assert pk.fact_key(Fact("Hot", ("wt2",), 3)) == "wt2"


def test_key_needs_the_variable_in_every_literal():
    prog, _ = random_case(3)  # A(X, T) :- p(X, T), q(Y, T): Y breaks every position
    pk = find_key(compile_program(prog))
    assert pk.single and "no argument position" in pk.reason
    assert pk.answer_key(0, (None, None)) == "*"


def test_key_search_backtracks_over_positions():
    # the key of P is its second argument, of E its first
    text = ("#query P(A, X, T).\n#delay E = 1.\n"
            "P(A, X, T) :- E(X, A, T), not Q(X, T).\nQ(X, T) :- E(X, b, T).\n")
    pk = find_key(compile_program(text))
    assert not pk.single
    assert pk.positions["P"] == 1 and pk.positions["E"] == 0 and pk.positions["Q"] == 0


def test_rigid_predicates_mean_one_partition():
    text = "#query OK(X, T).\n#rigid Type/2.\nType(wt1, big).\nOK(X, T) :- Hot(X, T), Type(X, big).\n"
    pk = find_key(compile_program(text))
    assert pk.single and "rigid" in pk.reason


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
    import pandas as pd

    from jobs.dq import validate_frame

    cp = compile_file(TURBINES)
    rows = [("Hot", ["wt1"], 3), ("Shdn", ["wt1"], 3), ("Foo", ["a"], 1), ("Hot", ["a", "b"], 1),
            ("Hot", ["wt1"], 5), ("Hot", ["wt3"], 1), ("Hot", ["wt1"], -1), ("Hot", ["wt2"], 0)]
    pdf = pd.DataFrame({"tick": [3] * len(rows), "pred": [r[0] for r in rows],
                        "args": [r[1] for r in rows], "time": [r[2] for r in rows],
                        "source": "s", "line": range(len(rows)), "batch": "b"})
    out, summary = validate_frame(pdf, cp, "k")
    assert list(out["reason_code"]) == [None, "idb_predicate", "unknown_predicate", "arity",
                                        "future_time", "late", "negative_time", None]
    from reasoning.stream import validate

    assert out["reason"].iloc[5] == validate(cp, Fact("Hot", ("wt3",), 1), 3)
    unexpected = {s["expectation"]: s["unexpected_count"] for s in summary
                  if s["unexpected_count"]}
    assert unexpected["expect_column_values_to_be_in_set"] == 2
    assert unexpected["expect_column_pair_values_to_be_equal"] == 1


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
