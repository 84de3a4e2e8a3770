"""The stream reader: JSON lines read slice by slice into D|τ, Algorithm 1's input (002 §6).

A stream line is `{"tick": 3, "fact": "Hot(wt1, 1)"}`: the fact arrives in slice D|3.
Bad lines and invalid facts are rejected with a reason and counted, never dropped
silently and never fatal.
"""
from __future__ import annotations

from typing import Iterable, Iterator, Optional

from reasoning.language.compiler import CompiledProgram
from reasoning.semantics.patterns import Fact
from reasoning.stream.blocks import (BLOCK_CHARS, BLOCK_LINES, Heartbeat, Ignored, edb_meta,
                                     parse_block)
from reasoning.stream.facts import Rejection
from reasoning.stream.scanned import Scanned
from reasoning.stream.slices import Slice, Stream
from reasoning.stream.sources import BoundedBlocks, LiveLines, bounded_lines, open_stream


class StreamReader:
    """A JSON-lines stream read slice by slice, in arrival order: memory is one slice and one
    block of lines (BLOCK_LINES, BLOCK_CHARS; plus the rejections not yet reported), not the
    whole stream.  An otherwise valid line whose
    tick is before a tick already seen is rejected ("out of order")."""

    def __init__(self, lines: Iterable[str], cp: CompiledProgram, source: str = "<stream>",
                 max_gap: Optional[int] = None):
        self.max_gap = max_gap
        self._live = lines if isinstance(lines, LiveLines) else None
        # a file: read in chunks, split in C (BoundedBlocks); other sources line by line
        self._blocks = BoundedBlocks(lines) if hasattr(lines, "read") and hasattr(
            lines, "readline") and self._live is None else None
        self.lines = None if self._blocks is not None else (
            bounded_lines(lines) if hasattr(lines, "readline") else iter(lines))
        self.cp = cp
        self.source = source
        self.rejected: list[Rejection] = []  # all, in line order
        self.ignored: dict[str, int] = {}  # declared-but-unused predicate -> facts
        self._unreported = 0
        self.last_tick = -1  # of the accepted facts
        self.done = False
        self._no = 0
        self._eof = False
        self._meta = None  # edb_meta(cp), at the first block
        self.block_counts: dict = {}  # parse_block's counts: blocks scanned in C or not
        self.heartbeats = 0  # accepted {"tick": N} lines

    @property
    def live(self) -> bool:
        """Read from a live source (LiveLines): lines are parsed as they come."""
        return self._live is not None

    def take_rejected(self) -> list[Rejection]:
        """The rejections found since the last call."""
        got = self.rejected[self._unreported:]
        self._unreported = len(self.rejected)
        return got

    def _read_block(self) -> list[str]:
        """The next BLOCK_LINES lines, fewer if they exceed BLOCK_CHARS characters; from a
        live source (LiveLines: a pipe, a FIFO, a terminal) only the lines already there
        (waiting for one at least), so a slice is answered as soon as it is complete."""
        if self._live is not None:
            return self._live.available(BLOCK_LINES)
        if self._blocks is not None:
            block = self._blocks.take(BLOCK_LINES, BLOCK_CHARS)
            if not block:
                self._eof = True
            return block
        block: list[str] = []
        size = 0
        for raw in self.lines:
            block.append(raw)
            size += len(raw)
            if len(block) >= BLOCK_LINES or size >= BLOCK_CHARS:
                return block
        self._eof = True
        return block

    def _items(self):
        """Accepted input in line order: frames of whole clean blocks, or (tick, fact,
        line) one by one (rejections are recorded as their lines are reached)."""
        while not self._eof:
            block = self._read_block()
            if not block:
                break
            if self._meta is None:
                self._meta = edb_meta(self.cp)
            got = parse_block(block, self._no + 1, self.cp, self.source, self.last_tick,
                              self.max_gap, self._meta, self.block_counts)
            if not isinstance(got, list):
                self._no += len(block)
                self.last_tick = got.last_tick if isinstance(got, Scanned) else \
                    got.get_column("tick")[-1]
                yield got
                continue
            for r in got:
                self._no += 1
                if r is None:
                    continue
                if isinstance(r, Rejection):
                    self.rejected.append(r)
                    continue
                if isinstance(r, Ignored):
                    self.ignored[r.pred] = self.ignored.get(r.pred, 0) + 1
                    continue
                beat = isinstance(r, Heartbeat)
                tick, f = (r.tick, f'{{"tick": {r.tick}}}') if beat else r
                if tick < self.last_tick:
                    self.rejected.append(Rejection(
                        f"out of order: tick {tick} after tick {self.last_tick} (a stream is "
                        f"read in arrival order)", str(f), tick, self._no, self.source))
                    continue
                if self.max_gap is not None and tick > max(self.last_tick, 0) + self.max_gap:
                    self.rejected.append(Rejection(
                        f"tick {tick} is more than {self.max_gap} ticks after tick "
                        f"{max(self.last_tick, 0)}: a likely wrong tick (raise --max-gap if "
                        f"the gap is real)", str(f), tick, self._no, self.source))
                    continue
                self.last_tick = tick
                if beat:
                    self.heartbeats += 1
                    yield r
                    continue
                yield tick, f, self._no
        self.done = True

    def column_slices(self) -> Iterator:
        """Every tick's accepted facts as a Slice, in increasing τ (memory: one block and
        one slice); a heartbeat line {"tick": N} as a Heartbeat, after the slices before N
        (which it completes) — from a live source also the first fact of each slice, as
        the Heartbeat of its tick."""
        cur: Optional[Slice] = None
        for item in self._items():
            if isinstance(item, Heartbeat):
                if cur is not None and cur.tick < item.tick:
                    yield cur
                    cur = None
                yield item
                continue
            parts = [(item[0], item)] if isinstance(item, tuple) else (
                item.tick_parts() if isinstance(item, Scanned) else [
                    (tick, part) for (tick,), part in
                    item.partition_by("tick", maintain_order=True, as_dict=True).items()])
            for tick, part in parts:
                if cur is None or cur.tick != tick:
                    if cur is not None:
                        yield cur
                    if self._live is not None:  # the ticks before it are complete: a live
                        yield Heartbeat(tick, self._no)  # run answers them now
                    cur = Slice(tick)
                if isinstance(part, tuple):
                    cur.add_entry(part[1], part[2])
                else:
                    cur.add_frame(part)
        if cur is not None:
            yield cur

    def slices(self) -> Iterator[tuple[int, list[tuple[Fact, int]]]]:
        """(τ, [(fact, line)]) for every tick with accepted facts, in increasing τ."""
        for sl in self.column_slices():
            if not isinstance(sl, Heartbeat):
                yield sl.tick, sl.entries()


def read_stream(lines: Iterable[str], cp: CompiledProgram, source: str = "<stream>") -> Stream:
    """Parse and validate a whole JSON-lines stream; every bad line becomes a Rejection."""
    st = Stream()
    rd = StreamReader(lines, cp, source)
    for tick, entries in rd.slices():
        st.slices[tick].extend(entries)
    st.rejected = rd.rejected
    return st


def read_stream_file(path: str, cp: CompiledProgram) -> Stream:
    """Read a whole stream file (see open_stream)."""
    with open_stream(path) as fh:
        return read_stream(fh, cp, path)
