"""Fuzzing the front doors (issue 11, acceptance): the program parser and `hypo check`, and
ingest of JSONL/CSV/Parquet bytes.  Whatever the input: no traceback (only a ProgramError
with a location, or a quarantine row with a reason), no hang (pytest-timeout), bounded
memory (tracemalloc peak), and no line lost (every input line is a fact row or a
quarantine row).  The stream reader has its own fuzz test in test_stream_hostile.py."""
from __future__ import annotations

import contextlib
import io
import json
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.ingest.files import read_files
from reasoning.cli.main import main as hypo_main
from reasoning.language.compiler import compile_file, compile_program
from reasoning.language.errors import HypoError, ProgramError
from tests.helpers import EXAMPLES

EXAMPLE_TEXTS = [p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.tdl"))]
TOKENS = ["#query", "#delay", "#domain", "#rigid", "not", "¬", ":-", "->", "→", "∧", "(", ")",
          ",", ".", "=", "/", "+", "-", "T", "X", "Y", "T+1", "T-1", "Hot", "Flag", "OK",
          "wt1", "0", "1", "2", "9" * 19, "1" + "0" * 4400, "%", "\n", " ", "\t", "\"",
          "'", "\x00", "\x1b[31m", "é", "😀", "[", "]", "{", "}",
          "Boxminus", "⟐", "Diamondplus", "Since", "[1,2]", "[0,inf)", "*", "∞", "__",
          "Maint(wt1, 3 + 7n)", "n", "7n", "0n", " until ", "99", "Maint", "Crew(site, 4n)"]
SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=list(HealthCheck))
MEMORY = 64 * 2 ** 20  # bytes a single parse may allocate


def _compile_ok_or_located(text: str) -> None:
    """compile_program either succeeds or raises a ProgramError naming FILE:LINE:COL."""
    tracemalloc.start()
    try:
        compile_program(text, "fuzz.tdl")
    except ProgramError as e:
        msg = e.format()
        assert msg.startswith("fuzz.tdl:") or "fuzz.tdl" in msg, msg
        assert "Traceback" not in msg
    except HypoError:
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < MEMORY, f"{peak} bytes for {len(text)} characters"


@pytest.mark.timeout(600)
@SETTINGS
@given(st.lists(st.sampled_from(TOKENS), max_size=60).map("".join))
def test_token_soup_programs(text):
    _compile_ok_or_located(text)


@pytest.mark.timeout(600)
@SETTINGS
@given(st.sampled_from(EXAMPLE_TEXTS), st.integers(0, 10 ** 6), st.integers(0, 10 ** 6),
       st.sampled_from(TOKENS + [""]), st.sampled_from(["insert", "delete", "replace"]))
def test_mutated_example_programs(base, i, j, tok, op):
    """One edit of an example program: a token inserted, a span deleted or replaced."""
    i %= len(base) + 1
    j = i + (j % 12)
    if op == "insert":
        text = base[:i] + tok + base[i:]
    elif op == "delete":
        text = base[:i] + base[j:]
    else:
        text = base[:i] + tok + base[j:]
    _compile_ok_or_located(text)


@pytest.mark.timeout(600)
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=400))
def test_hypo_check_on_bytes(tmp_path_factory, data):
    """`hypo check FILE` on arbitrary bytes: exit 0 or 2, one error, never a traceback."""
    p = tmp_path_factory.mktemp("fz") / "p.tdl"
    p.write_bytes(data)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = hypo_main(["check", str(p)])
    assert rc in (0, 2), err.getvalue()
    assert "Traceback" not in err.getvalue()


# ---------------------------------------------------------------- ingest
CP = compile_file(str(EXAMPLES / "wind_turbines.tdl"))

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats(allow_nan=True)
    | st.text(max_size=20) | st.sampled_from(["Hot(wt1, 1)", "Hot(wt1, 99999999999999999999)",
                                             "Hot(wt1)", "Foo(a, 1)", "Hot(wt1, -1)"]),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4),
    max_leaves=12)
_rows = st.fixed_dictionaries({}, optional={"tick": _json_values, "fact": _json_values,
                                            "pred": _json_values, "args": _json_values,
                                            "time": _json_values})
_lines = st.one_of(
    _rows.map(lambda o: json.dumps(o).encode()),
    st.binary(max_size=80).filter(lambda b: b"\n" not in b and b"\r" not in b),
    st.sampled_from([b"[" * 3000 + b"]" * 3000, b'{"tick": 1, "fact": "Hot(wt1, 1)"',
                     b'{"tick": ' + b"9" * 5000 + b', "fact": "Hot(wt1, 1)"}',
                     b'{"tick": 1, "fact": "Hot(wt1, 1)"}', b"\xff\xfe", b"   "]))


def _count(parsed) -> int:
    """Lines accounted for: facts, quarantined lines, and heartbeats ({"tick": N} alone: a
    live producer's progress, counted and neither a fact nor a rejection)."""
    return len(parsed) + len(parsed.rejected) + parsed.heartbeats


@pytest.mark.timeout(900)
@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_lines, min_size=1, max_size=25), st.sampled_from([None, 1]))
def test_ingest_jsonl_loses_no_line(tmp_path_factory, lines, tick):
    p = tmp_path_factory.mktemp("fz") / "s.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    tracemalloc.start()
    try:
        parsed, unreadable = read_files([str(p)], CP, tick)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert not unreadable
    bom = b"\xef\xbb\xbf"  # dropped from the file's first line (Excel's CSV UTF-8)
    nonblank = sum(1 for i, l in enumerate(lines)
                   if (l[3:] if i == 0 and l.startswith(bom) else l).strip())
    assert _count(parsed) >= nonblank, (len(parsed), parsed.rejected)
    for r in parsed.rejected:
        assert r["reason_code"] and r["reason"]
    assert peak < MEMORY


_cells = st.one_of(st.text(max_size=12), st.sampled_from(
    ["Hot", "wt1", "1", "-1", "9" * 30, "1" + "0" * 5000, "", '"', "a,b", "wt1;wt2"]))


@pytest.mark.timeout(900)
@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.lists(_cells, min_size=0, max_size=5), min_size=1, max_size=20),
       st.sampled_from(["pred,args,time", "tick,pred,args,time", "pred,args", "x"]))
def test_ingest_csv_loses_no_row(tmp_path_factory, rows, header):
    import csv

    p = tmp_path_factory.mktemp("fz") / "s.csv"
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header.split(","))
    for r in rows:
        w.writerow(r)
    p.write_text(buf.getvalue(), encoding="utf-8")
    parsed, unreadable = read_files([str(p)], CP, 1)
    assert not unreadable or _count(parsed) >= 1
    for r in parsed.rejected:
        assert r["reason_code"] and r["reason"]


@pytest.mark.timeout(600)
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(min_size=0, max_size=600))
def test_ingest_parquet_garbage_is_an_unreadable_file(tmp_path_factory, data):
    p = tmp_path_factory.mktemp("fz") / "s.parquet"
    p.write_bytes(b"PAR1" + data)
    parsed, unreadable = read_files([str(p)], CP, 1)
    assert unreadable or _count(parsed) >= 0


_OPS = ["Boxminus", "Diamondminus", "Boxplus", "Diamondplus", "not Boxminus",
        "not Diamondminus", "Since", "not Since"]


@st.composite
def _windows(draw):
    """Rules of wide windows (issue 44.4): up to three operators of up to 5 000 ticks in one
    rule, and a second rule with a window over the first's head."""
    def lit(name: str) -> str:
        op = draw(st.sampled_from(_OPS))
        lo = draw(st.integers(0, 3))
        hi = lo + draw(st.sampled_from([0, 1, 7, 63, 300, 400, 1000, 4095, 5000]))
        if op.endswith("Since"):
            neg = "not " if op.startswith("not") else ""
            return f"{neg}A{name}(X,T) Since[{lo},{hi}] B{name}(X,T)"
        return f"{op}[{lo},{hi}] E{name}(X,T)"

    body = ", ".join(lit(str(i)) for i in range(draw(st.integers(1, 3))))
    text = f"#query P(X, T).\nQ(X,T) :- G(X,T), {body}.\n"
    if draw(st.booleans()):
        return text + f"P(X,T) :- {lit('9').replace('E9', 'Q')}, H(X,T).\n"
    return text + "P(X,T) :- Q(X,T).\n"


@pytest.mark.timeout(900)
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(_windows())
def test_wide_windows_compile_or_are_refused_at_once(text):
    """A program of wide windows compiles, or is refused with a located error by the
    translation's or pre-processing's budgets — never minutes of silence (the timeout)."""
    try:
        compile_program(text, "fuzz.tdl")
    except ProgramError as e:
        assert e.format().startswith("fuzz.tdl:"), e.format()
