"""The stream read a block at a time (reasoning.stream.blocks.parse_block) gives exactly what the
line-by-line reader gives: the same slices, facts, line numbers, rejections (reasons and
order) and ignored counts, on random mixtures of canonical, late, out-of-order, gapped,
unknown, periodic and malformed lines; and Slice.frames() holds the same facts as Slice.facts()."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasoning.stream.blocks as blocks
import reasoning.stream.reader as S
from reasoning.language.compiler import compile_program
from reasoning.stream.facts import Rejection
from reasoning.stream.prefetch import Prefetched
from reasoning.stream.slices import Slice

PROGRAM = """
#query OK(X, T).
#delay Hot = 1.
#delay Hot(wt1, T) = 3.
#delay Hot(wt2, T) = 0.
#delay Seen = 2.
#delay Seen(wt1, Y, T) = 3.
#delay Spare = 1.
Flag(X, T) :- Hot(X, T).
Cool(X, T+1) :- Flag(X, T), Flag(X, T+1).
OK(X, T) :- Seen(X, Y, T), not Cool(X, T), not Calendar(X, T).
Calendar(wt1, 2 + 5n).
"""
CP = compile_program(PROGRAM, "<block>")
DEVICES = ["wt1", "wt2", "wt3", "a_b", "7"]


@st.composite
def _line(draw, tick: int, clean) -> str:
    kind = draw(st.sampled_from(["hot", "seen"] if clean == "exact" else
                                ["hot", "seen", "spaces"] if clean else
        ["hot"] * 6 + ["seen"] * 3 + ["late", "future", "spare", "unknown", "arity", "idb",
                                      "quoted", "spaces", "badjson", "blank", "big",
                                      "periodic"]))
    d = draw(st.sampled_from(DEVICES))
    t = max(0, tick - draw(st.integers(0, 3)))
    if kind == "hot":
        return json.dumps({"tick": tick, "fact": f"Hot({d}, {t})"})
    if kind == "seen":
        return json.dumps({"tick": tick, "fact": f"Seen({d}, {draw(st.sampled_from(DEVICES))}, {t})"})
    if kind == "late":
        return json.dumps({"tick": tick + 5, "fact": f"Hot({d}, {tick})"})
    if kind == "future":
        return json.dumps({"tick": tick, "fact": f"Hot({d}, {tick + 1})"})
    if kind == "spare":
        return json.dumps({"tick": tick, "fact": f"Spare({d}, {t})"})
    if kind == "unknown":
        return json.dumps({"tick": tick, "fact": f"Hott({d}, {t})"})
    if kind == "arity":
        return json.dumps({"tick": tick, "fact": f"Hot({d}, {d}, {t})"})
    if kind == "idb":
        return json.dumps({"tick": tick, "fact": f"Flag({d}, {t})"})
    if kind == "periodic":  # given by the program: rejected
        return json.dumps({"tick": tick, "fact": f"Calendar({d}, {t})"})
    if kind == "quoted":
        return json.dumps({"tick": tick, "fact": f'Hot("{d} x", {t})'})
    if kind == "spaces":
        return f'  {{ "tick" :{tick},"fact":"Hot( {d} ,{t} )" }}  \n'
    if kind == "badjson":
        return '{"tick": ' + str(tick) + ', "fact": "Hot(wt1, 1)"'
    if kind == "big":
        return json.dumps({"tick": tick, "fact": f"Hot({d}, {'9' * 19})"})
    return "   "


@st.composite
def _stream(draw):
    n = draw(st.integers(60, 400))
    # whole blocks read set-at-a-time (exactly as json.dumps writes them: the C scanner's),
    # or mostly line by line
    clean = draw(st.sampled_from(["exact", True, False]))
    tick = 0
    out = []
    for _ in range(n):
        step = draw(st.sampled_from([0] * 8 + [1, 1, 2, 9] + ([] if clean else [-1])))
        tick = max(0, tick + step)
        out.append(draw(_line(tick, clean)))
    return out


def _read(lines, max_gap, block: bool):
    old = S.BLOCK_LINES
    if not block:
        S.BLOCK_LINES = 1  # blocks of one line: parse_line, line by line
    try:
        rd = S.StreamReader(list(lines), CP, "s.jsonl", max_gap)
        got = [(sl.tick, [(str(f), no) for f, no in sl.entries()], sl) for sl in
               rd.column_slices()]
    finally:
        S.BLOCK_LINES = old
    return got, [str(r) for r in rd.rejected], dict(rd.ignored), rd.last_tick


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(_stream(), st.sampled_from([None, 3, 20]), st.sampled_from([64, 100, 4096]))
def test_blocks_read_like_lines(lines, max_gap, block_lines):
    old = S.BLOCK_LINES
    S.BLOCK_LINES = block_lines
    try:
        got, rej, ign, last = _read(lines, max_gap, True)
    finally:
        S.BLOCK_LINES = old
    want, wrej, wign, wlast = _read(lines, max_gap, False)
    assert [(t, e) for t, e, _ in got] == [(t, e) for t, e, _ in want]
    assert rej == wrej and ign == wign and last == wlast
    for _, entries, sl in got:  # the executor's D|τ: the same facts as the entries
        fr = sl.frames()
        rows = sorted((p, tuple(r[:-1]), r[-1]) for p, df in fr.items() for r in df.iter_rows())
        assert rows == sorted((f.pred, f.args, f.time) for f in sl.facts())
        for p, df in fr.items():
            n = CP.analysis.edb[p] - 1
            assert df.columns == [f"a{i}" for i in range(n)] + ["t"]


def test_a_clean_block_is_one_frame():
    lines = [json.dumps({"tick": t // 10, "fact": f"Hot(wt{t % 10}, {t // 10})"})
             for t in range(500)]
    got = blocks.parse_block(lines, 1, CP, "s", -1, None)
    assert not isinstance(got, list) and got.height == 500
    sl = list(S.StreamReader(lines, CP).column_slices())
    assert [s.tick for s in sl] == list(range(50)) and all(len(s) == 10 for s in sl)
    assert all(not isinstance(c, list) for s in sl for c in s.chunks)


@pytest.mark.parametrize("bad", ['{"tick": 3, "fact": "Hot(wt1, 3)"}',  # out of order
                                 '{"tick": 2, "fact": "Hot(wt1, 9)"}'])  # after its tick
def test_one_bad_line_sends_its_block_line_by_line(bad):
    lines = [json.dumps({"tick": 4 + t // 10, "fact": f"Hot(wt{t % 10}, {4 + t // 10})"})
             for t in range(100)]
    lines[50] = bad
    got = blocks.parse_block(lines, 1, CP, "s", -1, None)
    if "9)" in bad:
        assert isinstance(got, list) and isinstance(got[50], Rejection)
    rd = S.StreamReader(lines, CP, "s")
    n = sum(len(s) for s in rd.column_slices())
    assert n == 99 and len(rd.rejected) == 1 and rd.rejected[0].line == 51


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(_stream(), st.sampled_from([None, 3]))
def test_prefetched_slices_and_rejections_are_the_readers(lines, max_gap):
    """`hypo run` reads the stream a few slices ahead on a thread (stream.Prefetched): the
    same slices, and after each slice the rejections of the lines read up to it."""
    def direct():
        rd = S.StreamReader(list(lines), CP, "s.jsonl", max_gap)
        return [(sl.tick, [(str(f), no) for f, no in sl.entries()],
                 [str(r) for r in rd.take_rejected()]) for sl in rd.column_slices()] + \
            [(None, [], [str(r) for r in rd.take_rejected()])], rd

    want, rd1 = direct()
    rd2 = S.StreamReader(list(lines), CP, "s.jsonl", max_gap)
    feed = Prefetched(rd2, depth=1)
    got = [(sl.tick, [(str(f), no) for f, no in sl.entries()],
            [str(r) for r in feed.take_rejected()]) for sl in feed]
    got.append((None, [], [str(r) for r in feed.take_rejected()]))
    feed.close()
    assert got == want
    assert rd2.last_tick == rd1.last_tick and dict(rd2.ignored) == dict(rd1.ignored)


def test_prefetched_raises_the_readers_error_and_stops_when_closed():
    import time

    class Broken(S.StreamReader):
        def column_slices(self):
            yield from list(super().column_slices())[:1]
            raise OSError("disk gone")

    lines = [json.dumps({"tick": t, "fact": f"Hot(wt1, {t})"}) for t in range(5)]
    feed = Prefetched(Broken(lines, CP, "s"))
    assert next(feed).tick == 0
    with pytest.raises(OSError, match="disk gone"):
        next(feed)
    # a consumer that stops early: the thread, waiting to hand over a slice, ends at close()
    # (lines spaced otherwise than json.dumps: read the general way, so by the thread)
    many = [f'{{"tick": {t}, "fact": "Hot(wt1, {t})" }}' for t in range(200)]
    feed = Prefetched(S.StreamReader(many, CP, "s"), depth=1)
    assert next(feed).tick == 0
    t0 = time.perf_counter()
    feed.close()
    assert not feed._thread.is_alive() and time.perf_counter() - t0 < 1.0


@pytest.mark.parametrize("exact", [True, False])
def test_prefetched_reads_ahead_once_a_block_is_read_the_general_way(exact):
    """Blocks the C scanner reads are read by the caller (no thread); from the first block
    read the general way on, a thread reads ahead; the slices and rejections are the same."""
    old = S.BLOCK_LINES
    S.BLOCK_LINES = 100
    try:
        lines = [json.dumps({"tick": t // 10, "fact": f"Hot(wt{t % 7}, {t // 10})"})
                 for t in range(1000)]
        if not exact:  # a line spaced otherwise; a future fact, rejected
            lines[450] = lines[450] + " "
            lines[700] = json.dumps({"tick": 70, "fact": "Hot(wt1, 99)"})
        feed = Prefetched(S.StreamReader(lines, CP, "s"))
        got = [(sl.tick, len(sl)) for sl in feed]
        rej = [str(r) for r in feed.take_rejected()]
        feed.close()
    finally:
        S.BLOCK_LINES = old
    want = [(sl.tick, len(sl)) for sl in S.StreamReader(lines, CP, "s").column_slices()]
    assert got == want and len(rej) == (0 if exact else 1)
    assert exact or "Hot(wt1, 99)" in rej[0]
    if exact and blocks._scanner() is not None:
        assert feed._thread is None
    if not exact:
        assert feed._thread is not None and not feed._thread.is_alive()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(["Hot", "Seen", "Spare"]), st.sampled_from(DEVICES),
                          st.sampled_from(DEVICES), st.integers(0, 4), st.integers(0, 2)),
                min_size=64, max_size=300),
       st.sampled_from([None, 1, 20]), st.sampled_from([-1, 0, 3]))
def test_the_c_scanner_gives_the_polars_frame(rows, max_gap, after):
    """A block written exactly as json.dumps writes it: the C scanner's frame (when it takes
    the block) is the frame of the Polars path, and it declines exactly the blocks that path
    does not take whole (late for a predicate's or an instance's δ, wildcard patterns
    included; out of order; past max_gap)."""
    if blocks._scanner() is None:
        pytest.skip("no C kernels")
    lines, tick = [], 0
    for pred, d, y, step, lag in rows:
        tick += step // 3  # mostly 0
        t = max(0, tick - lag)
        fact = f"Seen({d}, {y}, {t})" if pred == "Seen" else f"{pred}({d}, {t})"
        lines.append(json.dumps({"tick": tick, "fact": fact}))
    meta = blocks.edb_meta(CP)
    got = blocks._scan_block(lines, 7, CP, after, max_gap, meta)
    old = blocks._scanner
    blocks._scanner = lambda: None
    try:
        want = blocks.parse_block(lines, 7, CP, "s", after, max_gap, meta)
    finally:
        blocks._scanner = old
    if got is None:
        assert isinstance(want, list)
    else:
        assert not isinstance(want, list)
        frame = got.to_frame()
        assert frame.schema == want.schema and frame.equals(want)
        _columns_are_the_frames(got)


def _columns_are_the_frames(scanned):
    """Each tick's Slice.columns() (the engine's input from scanned blocks, no frame) holds
    the columns of its frames() (the general path), split between two chunks or not."""
    for tick, part in scanned.tick_parts():
        halves = [part] if part.height < 2 else [part.rows(0, part.height // 2),
                                                 part.rows(part.height // 2, part.height)]
        sl, ref = Slice(tick), Slice(tick)
        for h in halves:
            sl.add_frame(h)
            ref.add_frame(h.to_frame())
        cols, frames = sl.columns(), ref.frames()
        assert cols is not None and sorted(cols) == sorted(frames)
        for p, df in frames.items():
            assert list(cols[p]) == df.columns
            for c in df.columns:
                assert list(cols[p][c]) == df.get_column(c).to_list(), (p, c)
        assert [(str(f), no) for f, no in sl.entries()] == \
            [(str(f), no) for f, no in ref.entries()]


# (a line; whether it is written exactly as json.dumps writes a canonical fact line)
_ODD = [('{"tick": 01, "fact": "Hot(wt1, 1)"}', False),
        ('{"tick": 1, "fact": "Hot(wt1, 01)"}', True),
        ('{"tick": 1, "fact": "Hot(Wt1, 1)"}', False), ('{"tick": 1, "fact": "Hot(wt1,1)"}', False),
        ('{"tick": 1, "fact": "Hot(wt1, 1)"} ', False),
        ('{"tick": 1, "fact": "Hot(wt1, 1)"}\r\n', False),
        ('{"tick": 1, "fact": "Hot(wt1, 1)"}\n\n', False),
        ('{"tick": 1, "fact": "Hot(wt1, 1))"}', False), ('{"tick": 1, "fact": "Hot(wt1, 1"}', False),
        ('{"tick": 1, "fact": "Hot(wt1, 1)", "x": 1}', False),
        ('{"tick": 1, "fact": "Hot(wt1, ' + "9" * 19 + ')"}', True),
        ('{"tick": 1, "fact": "Hot(wt1, ' + "9" * 4300 + ')"}', True),
        ('{"tick": 1, "fact": "Hot(wt1, ' + "9" * 70000 + ')"}', False),  # > MAX_LINE
        ('{"tick": 1, "fact": "Hot(w\u00e9, 1)"}', False), ('{"tick": 1, "fact": "Hot()"}', False),
        ('{"tick": ' + "9" * 19 + ', "fact": "Hot(wt1, 1)"}', False),
        ('{"tick": 1, "fact": "1Hot(wt1, 1)"}', False),
        ('{"tick": 1, "fact": "Hot(wt1, , 1)"}', False), ('{"tick": 1, "fact": "Hot(wt1, 1)"', False),
        ('{"tick": 1, "fact": "Hot(wt1, x)"}', True),
        ('{"tick": 1, "fact": "Hot(wt1, wt2, 1)"}', True),
        ('{"tick": 1, "fact": "Flag(wt1, 1)"}', True), ('{"tick": 1, "fact": "Hott(wt1, 1)"}', True),
        ('{"tick": 0, "fact": "Hot(wt1, 0)"}', True), ('{"tick": 1, "fact": "Hot(wt1, 2)"}', True)]


@pytest.mark.parametrize("line,exact", _ODD)
def test_one_odd_line_in_a_block_the_c_scanner_reads(line, exact):
    """One line not written exactly, or not a fact accepted as it stands, among lines the C
    scanner reads: the scanner declines a block with a line not written exactly; the
    frame it gives is the Polars path's; the block reads as the line-by-line reader reads
    it."""
    if blocks._scanner() is None:
        pytest.skip("no C kernels")
    lines = [json.dumps({"tick": 1, "fact": f"Hot(wt{i}, 1)"}) for i in range(70)]
    lines[33] = line
    assert (blocks._scanner()(lines, blocks.MAX_LINE, {}) is not None) == exact
    got = blocks._scan_block(lines, 1, CP, -1, None, blocks.edb_meta(CP))
    old = blocks._scanner
    blocks._scanner = lambda: None
    try:
        want = blocks.parse_block(lines, 1, CP, "s", -1, None)
    finally:
        blocks._scanner = old
    assert got is None or (not isinstance(want, list) and got.to_frame().equals(want))
    (got, rej, ign, _), (want, wrej, wign, _) = (_read(lines, None, b) for b in (True, False))
    assert [(t, e) for t, e, _ in got] == [(t, e) for t, e, _ in want]
    assert rej == wrej and ign == wign


@st.composite
def _mutated_line(draw) -> str:
    """A canonical fact line, then a few random edits (insert, delete, replace a character
    with one of the line's alphabet or any ASCII one)."""
    pred = draw(st.sampled_from(["Hot", "Seen", "p", "Q_1"]))
    args = draw(st.lists(st.sampled_from(["wt1", "a_B9", "7", "007", "x"]), max_size=3))
    t = draw(st.integers(0, 10 ** 19))
    line = json.dumps({"tick": draw(st.integers(0, 10 ** 19)),
                       "fact": f"{pred}({', '.join(args + [str(t)])})"})
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(line)))
        c = draw(st.sampled_from(list('{}"(), :0123456789aZ_\n\r\t\\') + [chr(0), chr(127)]))
        op = draw(st.sampled_from(["ins", "del", "rep"]))
        line = (line[:i] + c + line[i:] if op == "ins" else
                line[:i] + line[i + 1:] if op == "del" else line[:i] + c + line[i + 1:])
    return line + draw(st.sampled_from(["", "\n"]))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_mutated_line(), min_size=1, max_size=20))
def test_the_c_scanner_round_trips_what_it_takes(lines):
    """Fuzzed lines: the C scanner either declines the block or gives fields from which every
    line is written back exactly (without its newline) — it never takes a line that is not
    written exactly as json.dumps writes a canonical fact line."""
    import re

    scan = blocks._scanner()
    if scan is None:
        pytest.skip("no C kernels")
    got = scan(lines, blocks.MAX_LINE, {})
    exact = re.compile(blocks._BLOCK_EXACT)
    if got is None:
        assert not all(exact.fullmatch(x) and len(x) <= blocks.MAX_LINE for x in lines)
        return
    ticks, ts, pid, preds, nargs, flat, dx = got
    at = 0
    for i, line in enumerate(lines):
        k = int(nargs[i])
        args = flat[at:at + k]
        at += k
        body = line[:-1] if line.endswith("\n") else line
        last = body[body.rindex(", ") + 2 if k else body.index("(") + 1:body.rindex(")")]
        assert body == json.dumps({"tick": int(ticks[i]),
                                   "fact": f"{preds[pid[i]]}({', '.join(args + [last])})"})
        assert ts[i] == (int(last) if last.isdigit() and len(last) <= 18 else -1)
        assert exact.fullmatch(line) and dx[i] == -1
    assert at == len(flat)
