"""Live streams (`hypo run --stream -`, a FIFO): every tick is answered as soon as its slice
is complete — not when thousands of lines have come, nor when the next slice is complete —
and a heartbeat line `{"tick": N}` completes the ticks before N without a fact."""
from __future__ import annotations

import io
import json
import os
import select
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.ingest.files import Parsed, read_jsonl
from reasoning.language.compiler import compile_file
from reasoning.stream.blocks import Heartbeat
from reasoning.stream.reader import StreamReader
from reasoning.stream.slices import Slice
from reasoning.stream.sources import LiveLines
from tests.helpers import EXAMPLES, ROOT

TDL = str(EXAMPLES / "wind_turbines.tdl")
CP = compile_file(TDL)

PIECES = st.sampled_from([b"a", b"{\"tick\": 1}", b"\n", b"\r\n", b"\r", b"\xef\xbb\xbf",
                          "é€𝄞".encode(), b"\xff", b"\xc3", b" ", b"x" * 40])


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=40), st.integers(1, 9))
def test_live_lines_are_the_lines_open_reads(pieces, chunk):
    """LiveLines decodes and splits as a text file is read (UTF-8, a leading byte-order
    mark dropped, bad bytes replaced, universal newlines), whatever the reads' sizes."""
    data = b"".join(pieces)
    want = list(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", errors="replace"))
    r, w = os.pipe()
    os.write(w, data[chunk:])  # under a pipe's buffer
    os.close(w)
    live = LiveLines(r, first=data[:chunk], owner=open(r, "rb"), chunk=chunk)
    got: list = []
    while True:
        block = live.available(4)
        if not block:
            break
        got += block
    live.close()
    assert got == want


def test_live_lines_return_what_is_there_without_waiting_for_more():
    r, w = os.pipe()
    live = LiveLines(r, owner=open(r, "rb"))
    os.write(w, b'{"tick": 0}\n{"tick"')
    assert live.available(4096) == ['{"tick": 0}\n']  # does not wait for 4 096 lines
    os.write(w, b': 1}\n')
    os.close(w)
    assert live.available(4096) == ['{"tick": 1}\n']
    assert live.available(4096) == []
    live.close()


def _items(text: str, live: bool) -> list:
    if live:
        r, w = os.pipe()
        os.write(w, text.encode())
        os.close(w)
        src = LiveLines(r, owner=open(r, "rb"))
    else:
        src = io.StringIO(text)
    rd = StreamReader(src, CP, "s.jsonl", 100_000)
    out = []
    for x in rd.column_slices():
        out.append(("beat", x.tick) if isinstance(x, Heartbeat) else
                   (x.tick, [str(f) for f in x.facts()]))
    return out


def test_heartbeats_complete_the_ticks_before_them():
    text = "\n".join([
        '{"tick": 0, "fact": "Hot(wt1, 0)"}',
        '{"tick": 3}',  # ticks 0..2 are complete
        '{"tick": 3, "fact": "Hot(wt1, 3)"}',  # facts of tick 3 may still come
        '{"tick": 5}',
        '{"tick": 4, "fact": "Hot(wt1, 4)"}',  # out of order after the heartbeat of tick 5
    ]) + "\n"
    assert _items(text, live=False) == [(0, ["Hot(wt1, 0)"]), ("beat", 3),
                                        (3, ["Hot(wt1, 3)"]), ("beat", 5)]
    # a live source also marks the first fact of each slice (its tick's predecessors done)
    assert _items(text, live=True) == [("beat", 0), (0, ["Hot(wt1, 0)"]), ("beat", 3),
                                       ("beat", 3), (3, ["Hot(wt1, 3)"]), ("beat", 5)]


def _hypo(*argv, stdin=None):
    return subprocess.run([sys.executable, "-m", "reasoning.cli.main", *argv], input=stdin,
                          capture_output=True, text=True, cwd=str(ROOT))


def test_a_heartbeat_is_not_a_rejection_and_extends_the_run(tmp_path):
    s = tmp_path / "s.jsonl"
    s.write_text('{"tick": 0, "fact": "Hot(wt1, 0)"}\n{"tick": 9}\n')
    p = _hypo("run", TDL, "--stream", str(s), "--format", "jsonl")
    assert p.returncode == 0, p.stderr
    assert "0 rejected, 1 heartbeat(s)" in p.stderr
    ticks = [json.loads(l)["tick"] for l in p.stdout.splitlines()]
    assert ticks[-1] > 9  # run past the heartbeat's tick, as past a fact's
    same = _hypo("run", TDL, "--stream", str(s), "--format", "jsonl", "--until",
                 str(ticks[-1]))
    assert same.stdout == p.stdout
    piped = _hypo("run", TDL, "--stream", "-", "--format", "jsonl", stdin=s.read_text())
    assert piped.stdout == p.stdout


def _read_until(proc, want: str, timeout: float = 120) -> str:
    """stdout of a running process up to a line containing `want`."""
    got = ""
    end = time.monotonic() + timeout
    fd = proc.stdout.fileno()
    while want not in got:
        left = end - time.monotonic()
        assert left > 0, f"no {want!r} within {timeout} s; got {got!r}"
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 1 << 16).decode()
            assert chunk, f"end of output before {want!r}; got {got!r}"
            got += chunk
    return got


@pytest.mark.parametrize("engine", ["row", "columnar"])
def test_a_live_run_answers_each_tick_once_its_slice_is_complete(engine):
    proc = subprocess.Popen([sys.executable, "-m", "reasoning.cli.main", "run", TDL, "--stream",
                             "-", "--format", "jsonl", "--engine", engine],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=str(ROOT))
    try:
        w = proc.stdin
        w.write(b'{"tick": 0, "fact": "Hot(wt1, 0)"}\n{"tick": 1, "fact": "Hot(wt1, 1)"}\n')
        w.flush()
        got = _read_until(proc, '"tick": 0,')  # tick 1's first line completed tick 0
        assert '"tick": 1,' not in got  # tick 1 may still get facts
        w.write(b'{"tick": 4}\n')  # a heartbeat: ticks 1..3 are complete
        w.flush()
        got = _read_until(proc, '"tick": 3,')
        assert '"tick": 4,' not in got
        w.close()
        rest = proc.stdout.read().decode()
        err = proc.stderr.read().decode()
        assert proc.wait(120) == 0, err
        assert '"tick": 4,' in rest and "1 heartbeat(s)" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_the_lake_counts_heartbeats_and_quarantines_nothing(tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_text('{"tick": 2, "fact": "Hot(wt1, 2)"}\n{"tick": 3}\n{"tick": -3}\n')
    out = Parsed()
    read_jsonl(str(f), CP, None, out)
    assert out.pred == ["Hot"] and out.heartbeats == 1
    assert [r["reason_code"] for r in out.rejected] == ["wrong_type"]
    out = Parsed()
    read_jsonl(str(f), CP, 2, out)  # a slice named by --tick: another tick's heartbeat too
    assert out.heartbeats == 1 and [r["line"] for r in out.rejected] == [3]


def test_an_empty_slice_is_not_a_heartbeat():
    assert not isinstance(Slice(3), Heartbeat)


def test_a_line_without_end_on_a_pipe_keeps_memory_bounded():
    """A 4 MB line from a live source: only its first MAX_LINE + 1 characters are kept, and
    it is rejected as too long; the lines around it are read."""
    import threading

    from reasoning.stream.blocks import MAX_LINE

    r, w = os.pipe()
    big = b'{"tick": 0, "fact": "' + b"x" * (4 << 20) + b'"}\n'

    def produce():
        os.write(w, b'{"tick": 0, "fact": "Hot(wt1, 0)"}\n')
        for i in range(0, len(big), 1 << 16):
            os.write(w, big[i:i + (1 << 16)])
        os.write(w, b'{"tick": 1, "fact": "Hot(wt1, 1)"}')  # the last line, no newline
        os.close(w)

    threading.Thread(target=produce, daemon=True).start()
    live = LiveLines(r, owner=open(r, "rb"))
    lines, most = [], 0
    while True:
        got = live.available(4096)
        most = max(most, len(live._tail))
        if not got:
            break
        lines += got
    live.close()
    assert most <= MAX_LINE + 1 and len(lines) == 3
    assert len(lines[1]) == MAX_LINE + 2 and lines[2] == '{"tick": 1, "fact": "Hot(wt1, 1)"}'
    rd = StreamReader(lines, CP, "s.jsonl")
    assert [str(f) for sl in rd.column_slices() if isinstance(sl, Slice)
            for f in sl.facts()] == ["Hot(wt1, 0)", "Hot(wt1, 1)"]
    assert ["longer than" in x.reason for x in rd.rejected] == [True]
