"""The stream read a block at a time (reasoning.stream.parse_block) gives exactly what the
line-by-line reader gives: the same slices, facts, line numbers, rejections (reasons and
order) and ignored counts, on random mixtures of canonical, late, out-of-order, gapped,
unknown, periodic and malformed lines; and Slice.frames() holds the same facts as Slice.facts()."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasoning.stream as S
from reasoning.compiler import compile_program

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
def _line(draw, tick: int, clean: bool) -> str:
    kind = draw(st.sampled_from(["hot", "seen", "spaces"] if clean else
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
    clean = draw(st.booleans())  # whole blocks read set-at-a-time, or mostly line by line
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
    got = S.parse_block(lines, 1, CP, "s", -1, None)
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
    got = S.parse_block(lines, 1, CP, "s", -1, None)
    if "9)" in bad:
        assert isinstance(got, list) and isinstance(got[50], S.Rejection)
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
    feed = S.Prefetched(rd2, depth=1)
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
    feed = S.Prefetched(Broken(lines, CP, "s"))
    assert next(feed).tick == 0
    with pytest.raises(OSError, match="disk gone"):
        next(feed)
    # a consumer that stops early: the thread, waiting to hand over a slice, ends at close()
    many = [json.dumps({"tick": t, "fact": f"Hot(wt1, {t})"}) for t in range(200)]
    feed = S.Prefetched(S.StreamReader(many, CP, "s"), depth=1)
    assert next(feed).tick == 0
    t0 = time.perf_counter()
    feed.close()
    assert not feed._thread.is_alive() and time.perf_counter() - t0 < 1.0
