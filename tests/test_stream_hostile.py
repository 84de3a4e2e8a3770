"""The stream reader under hostile input (issue 11.1, 11.2, 11.8, 11.9): every line is
accepted or rejected with a reason, never a traceback; the canonical fast path and the
general path agree; slices are read in arrival order."""
from __future__ import annotations

import json
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasoning.language.compiler import compile_file
from reasoning.stream.blocks import JSON_SPACE, parse_line
from reasoning.stream.facts import MAX_TIME, Rejection
from reasoning.stream.reader import StreamReader, read_stream
from tests.helpers import EXAMPLES, ROOT

CP = compile_file(str(EXAMPLES / "wind_turbines.tdl"))
HUGE = "1" + "0" * 5000


def _reasons(lines: list[str]) -> list[str]:
    return [r.reason for r in read_stream(lines, CP).rejected]


def test_integers_past_the_machine_range_are_rejected_with_a_reason():
    lines = [f'{{"tick": {HUGE}, "fact": "Hot(wt1, 1)"}}',
             f'{{"tick": 1, "fact": "Hot(wt1, {HUGE})"}}',
             f'{{"tick": {2 ** 64}, "fact": "Hot(wt1, 1)"}}',
             f'{{"tick": {MAX_TIME}, "fact": "Hot(wt1, {MAX_TIME})"}}',
             f'{{"tick": 1, "fact": "Hot(wt1, {MAX_TIME})"}}']
    got = _reasons(lines)
    assert len(got) == 5
    assert "4 300 digits" in got[0]
    assert all("out of range" in r for r in got[1:4]), got
    assert "after its arrival tick" in got[4] or "out of range" in got[4]


def test_deeply_nested_json_is_rejected():
    got = _reasons(["[" * 5000 + "]" * 5000, '{"a": ' * 3000 + "1" + "}" * 3000])
    assert len(got) == 2 and all("invalid JSON" in r for r in got), got


def test_a_raw_control_character_in_json_is_named_once():
    got = _reasons(['{"tick": 0, "fact": "Hot(wt1\x00, 0)"}'])
    assert got == ["invalid JSON (Invalid control character at column 29)"], got


def test_control_characters_are_escaped_when_reported():
    r = Rejection("bad", 'Hot(wt1\x1b[31m, 1)', 1, 3, "s.jsonl")
    assert "\x1b" not in str(r) and "\\x1b" in str(r)


def test_lines_out_of_order_are_rejected_and_slices_come_in_order():
    lines = ['{"tick": 0, "fact": "Hot(wt1, 0)"}', '{"tick": 2, "fact": "Hot(wt1, 2)"}',
             '{"tick": 1, "fact": "Hot(wt2, 1)"}', '{"tick": 2, "fact": "Hot(wt2, 2)"}']
    rd = StreamReader(lines, CP, "s")
    got = [(t, [str(f) for f, _ in e]) for t, e in rd.slices()]
    assert got == [(0, ["Hot(wt1, 0)"]), (2, ["Hot(wt1, 2)", "Hot(wt2, 2)"])]
    assert [r.line for r in rd.rejected] == [3] and "out of order" in rd.rejected[0].reason


def test_the_reader_holds_one_slice_not_the_stream():
    """A generator of lines is consumed a block at a time (the rest is not read ahead)."""
    from reasoning.stream.blocks import BLOCK_LINES

    read = []

    def lines():
        for t in range(3 * BLOCK_LINES):
            read.append(t)
            yield json.dumps({"tick": t, "fact": f"Hot(wt1, {t})"})

    it = StreamReader(lines(), CP).slices()
    assert next(it)[0] == 0 and len(read) == BLOCK_LINES
    for t in range(1, BLOCK_LINES - 1):
        assert next(it)[0] == t
    assert len(read) == BLOCK_LINES  # the last slice of a block closes with the next block
    assert next(it)[0] == BLOCK_LINES - 1 and len(read) == 2 * BLOCK_LINES


def test_a_block_of_long_lines_is_cut_short():
    """Blocks are bounded in characters too: long lines are read fewer at a time."""
    from reasoning.stream.blocks import BLOCK_CHARS

    read = []
    pad = " " * 60000

    def lines():
        for t in range(200):
            read.append(t)
            yield json.dumps({"tick": t, "fact": f"Hot(wt1, {t})"}) + pad

    rd = StreamReader(lines(), CP)
    it = rd.slices()
    assert next(it)[0] == 0 and len(read) * 60000 <= BLOCK_CHARS + 60000
    assert [t for t, _ in it] == list(range(1, 200)) and not rd.rejected


def _general(raw: str, no: int):
    """parse_line without its fast path (json.loads and the fact parser)."""
    import reasoning.stream.blocks as S

    fast, S._FAST = S._FAST, __import__("re").compile(r"(?!)")
    try:
        return S.parse_line(raw, no, CP, "s")
    finally:
        S._FAST = fast


def _same(a, b) -> bool:
    if isinstance(a, Rejection) and isinstance(b, Rejection):
        return (a.reason, a.text, a.tick) == (b.reason, b.text, b.tick)
    return a == b


ARG = st.one_of(st.sampled_from(["wt1", "wt2", "x", "0", "007", "X", "", " ", "a b", '"q"']),
                st.text(max_size=6))
FACT = st.builds(lambda p, a, t: f"{p}({', '.join(a + [t])})",
                 st.sampled_from(["Hot", "Shdn", "Cold", "hot", ""]),
                 st.lists(ARG, max_size=2),
                 st.one_of(st.integers(-3, 12).map(str), st.just(HUGE),
                           st.integers(MAX_TIME - 2, 2 ** 64).map(str), st.text(max_size=4)))
LINE = st.one_of(
    st.builds(lambda t, f: json.dumps({"tick": t, "fact": f}),
              st.one_of(st.integers(-2, 12), st.integers(MAX_TIME - 2, 2 ** 70)), FACT),
    st.builds(lambda t, f, sp: '{' + sp + '"tick"' + sp + ':' + str(t) + ',"fact":'
              + json.dumps(f, ensure_ascii=False) + sp + '}', st.integers(0, 12), FACT,
              st.sampled_from(["", " ", "\t", "  "])),
    st.text(max_size=40),
    st.builds(lambda n: "[" * n + "]" * n, st.integers(0, 3000)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(LINE, max_size=12))
def test_fuzz_the_reader_never_raises_and_the_fast_path_agrees(lines):
    rd = StreamReader(lines, CP, "s")
    accepted = sum(len(e) for _, e in rd.slices())
    assert accepted + len(rd.rejected) == sum(1 for l in lines if l.strip(JSON_SPACE))  # none lost
    for no, raw in enumerate(lines, 1):
        assert _same(parse_line(raw, no, CP, "s"), _general(raw, no)), raw


def test_hypo_run_survives_a_hostile_stream(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join([
        '{"tick": 0, "fact": "Hot(wt1, 0)"}', f'{{"tick": {HUGE}, "fact": "Hot(wt1, 1)"}}',
        "[" * 5000 + "]" * 5000, '{"tick": 1, "fact": "Hot(wt1\\u001b[2J, 1)"}',
        f'{{"tick": 1, "fact": "Hot(wt1, {HUGE})"}}']) + "\n")
    r = subprocess.run([sys.executable, "-m", "reasoning.cli.main", "run",
                        str(EXAMPLES / "wind_turbines.tdl"), "--stream", str(p), "--format",
                        "jsonl"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and "\x1b" not in r.stderr
    assert "1 facts accepted, 0 duplicates ignored, 4 rejected" in r.stderr.splitlines()[-1]


def test_a_closed_pipe_is_not_an_error(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text("".join(json.dumps({"tick": t, "fact": f"Hot(wt{t % 3 + 1}, {t})"}) + "\n"
                         for t in range(3000)))
    cmd = (f"{sys.executable} -m reasoning.cli.main run {EXAMPLES / 'wind_turbines.tdl'} "
           f"--stream {p} --format jsonl --engine row | head -1")
    r = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and "Traceback" not in r.stderr and "error" not in r.stderr, r.stderr


def test_a_duplicate_at_the_last_allowed_tick_is_caught():
    """Hot(wt1, 0) again at tick 2 = 0 + δ(wt1): still a duplicate (issue 11.4)."""
    from reasoning.semantics.patterns import Fact
    from reasoning.run.session import Session

    for engine in ("row", "columnar"):
        s = Session(CP, engine=engine)
        reps = [s.step([Fact("Hot", ("wt1",), 0)] if t in (0, 2) else [], t) for t in range(4)]
        assert [r.duplicates for r in reps] == [0, 0, 1, 0], engine


def test_an_implausible_jump_is_rejected_not_run_for_days(tmp_path):
    """One line at tick 1 767 225 600 would print every tick in between (issue 11.3)."""
    p = tmp_path / "s.jsonl"
    p.write_text('{"tick": 0, "fact": "Hot(wt1, 0)"}\n'
                 '{"tick": 1767225600, "fact": "Hot(wt1, 1767225600)"}\n')
    r = subprocess.run([sys.executable, "-m", "reasoning.cli.main", "run",
                        str(EXAMPLES / "wind_turbines.tdl"), "--stream", str(p), "--format",
                        "jsonl"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "raise --max-gap" in r.stderr
    assert len(r.stdout.splitlines()) < 20


def test_structured_rows_read_as_the_lake_reads_them(tmp_path):
    """{"tick", "pred", "args", "time"} rows — what producers write to the lake — are read by
    `hypo run` too, with the lake's rules and reasons (one parser: stream.facts.structured_fact),
    so `hypo run` can check a lake fed that way."""
    from jobs.ingest.files import Parsed, read_jsonl

    rows = ['{"tick": 1, "pred": "Hot", "args": ["wt1"], "time": 1}',
            '{"tick": 1, "pred": "Hot", "args": "wt2", "time": 0}',
            '{"tick": 1, "fact": "Hot(wt3, 1)"}',
            '{"tick": 1, "pred": "Hot", "args": [1], "time": 1}',
            '{"tick": 1, "pred": "Hot(", "args": ["a"], "time": 1}',
            '{"tick": 1, "pred": "Hot", "args": ["a"], "time": "1"}',
            '{"tick": 1, "pred": "Hot", "args": ["a"], "time": ' + HUGE + '}']
    st = read_stream(rows, CP)
    assert sorted(str(f) for f, _ in st.slices[1]) == ["Hot(wt1, 1)", "Hot(wt2, 0)",
                                                        "Hot(wt3, 1)"]
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(rows) + "\n")
    out = Parsed()
    read_jsonl(str(p), CP, None, out)
    assert sorted(zip(out.pred, map(tuple, out.args), out.time)) == [
        ("Hot", ("wt1",), 1), ("Hot", ("wt2",), 0), ("Hot", ("wt3",), 1)]
    lake = [r["reason"] for r in out.rejected]
    run = [r.reason for r in st.rejected]
    assert run[:3] == lake[:3] == ['"args" must be a list of strings',
                                   '"pred" must be a predicate name (a string)',
                                   '"time" must be an integer']
    assert len(run) == 4 and "4 300 digits" in run[3]


def test_a_gzip_stream_is_read_and_a_damaged_one_is_one_line(tmp_path):
    """`--stream s.jsonl.gz` (a `.gz` name and gzip's magic bytes) prints what the plain file prints; a
    truncated archive ends the run with one line naming the file and the last line read."""
    import gzip

    plain = (EXAMPLES / "wind_turbines.jsonl").read_bytes()
    gz = tmp_path / "s.jsonl.gz"
    gz.write_bytes(gzip.compress(plain))
    prog = str(EXAMPLES / "wind_turbines.tdl")

    def run(stream):
        return subprocess.run([sys.executable, "-m", "reasoning.cli.main", "run", prog, "--stream",
                               str(stream), "--format", "jsonl"], capture_output=True,
                              text=True, cwd=str(ROOT))

    a, b = run(EXAMPLES / "wind_turbines.jsonl"), run(gz)
    assert b.returncode == a.returncode == 0 and a.stdout == b.stdout
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(plain)[:-12])  # the end of the data and its trailer cut off
    c = run(cut)
    assert c.returncode == 2 and "Traceback" not in c.stderr
    assert c.stderr.strip().splitlines()[-1].startswith(f"hypo: error: {cut}: damaged gzip data")


def test_gzip_data_on_standard_input_or_a_nameless_pipe_is_decompressed(tmp_path):
    """`gzip -c s | hypo run … --stream -` and `--stream <(gzip -c s)`: a pipe has no name to
    go by, so gzip's magic bytes decide (peeked at, not consumed; no text starts with them);
    plain text through the same pipe is read as before, and damage is one line."""
    import gzip
    import os
    import threading

    plain = (EXAMPLES / "wind_turbines.jsonl").read_bytes()
    prog = str(EXAMPLES / "wind_turbines.tdl")

    def run(stream, data):
        return subprocess.run([sys.executable, "-m", "reasoning.cli.main", "run", prog, "--stream",
                               stream, "--format", "jsonl"], input=data, capture_output=True,
                              cwd=str(ROOT))

    want = run(str(EXAMPLES / "wind_turbines.jsonl"), b"")
    assert want.returncode == 0
    assert run("-", gzip.compress(plain)).stdout == want.stdout
    assert run("-", plain).stdout == want.stdout
    cut = run("-", gzip.compress(plain)[:-12])
    assert cut.returncode == 2 and b"Traceback" not in cut.stderr
    assert cut.stderr.strip().splitlines()[-1].startswith(b"hypo: error: <stdin>: damaged gzip")
    fifo = str(tmp_path / "feed")
    os.mkfifo(fifo)
    w = threading.Thread(target=lambda: open(fifo, "wb").write(gzip.compress(plain)),
                         daemon=True)
    w.start()
    assert run(fifo, b"").stdout == want.stdout
    w.join(timeout=10)


def test_a_huge_line_in_a_file_is_rejected_without_holding_it(tmp_path):
    """A line of 3 MB (a one-line JSON array, a binary file without newlines) between two
    facts: only its first MAX_LINE + 1 characters are held, it is rejected as too long, and
    the facts around it are read — from a plain file and from a gzip one."""
    import gzip

    from reasoning.stream.blocks import MAX_LINE
    from reasoning.stream.reader import read_stream_file
    from reasoning.stream.sources import bounded_lines, open_stream

    big = '[' + ','.join(['{"tick": 0, "fact": "Hot(wt1, 0)"}'] * 90_000) + ']'
    text = ('{"tick": 0, "fact": "Hot(wt1, 0)"}\n' + big + '\n'
            '{"tick": 1, "fact": "Hot(wt1, 1)"}\n' + big)  # the last one without a newline
    plain = tmp_path / "s.jsonl"
    plain.write_text(text)
    packed = tmp_path / "s.jsonl.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    with open_stream(str(plain)) as fh:
        got = list(bounded_lines(fh))
    assert [len(x) for x in got] == [35, MAX_LINE + 1, 35, MAX_LINE + 1]
    for path in (plain, packed):
        st = read_stream_file(str(path), CP)
        assert {t: [str(f) for f, _ in v] for t, v in st.slices.items()} == {
            0: ["Hot(wt1, 0)"], 1: ["Hot(wt1, 1)"]}
        assert [(r.line, "longer than" in r.reason) for r in st.rejected] == [(2, True),
                                                                              (4, True)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.sampled_from("ab\n")), max_size=40),
       st.integers(1, 9), st.integers(1, 7), st.integers(1, 60))
def test_bounded_blocks_give_bounded_lines_lines(runs, chunk, per_block, chars):
    """The chunked reader (BoundedBlocks) gives the lines bounded_lines gives, in order, with
    the same cuts of long lines, whatever the chunk and block sizes (MAX_LINE shrunk to 8 so
    that the cuts fall across chunk boundaries)."""
    import io

    import reasoning.stream.sources as stream

    text = "".join(c * n for n, c in runs)
    old = stream.MAX_LINE
    stream.MAX_LINE = 8
    try:
        want = list(stream.bounded_lines(io.StringIO(text)))
        bb = stream.BoundedBlocks(io.StringIO(text), chunk=chunk)
        got: list = []
        while True:
            block = bb.take(per_block, chars)
            if not block:
                break
            assert len(block) <= per_block
            assert len(block) == 1 or sum(map(len, block[:-1])) < chars
            got.extend(block)
    finally:
        stream.MAX_LINE = old
    assert got == want
