"""Stream sources read as bounded lines: a file in chunks, gzip, stdin, a pipe, a FIFO."""
from __future__ import annotations

from typing import Iterator

from reasoning.language.errors import HypoError
from reasoning.stream.blocks import BLOCK_LINES, MAX_LINE

STDIN = "-"  # --stream -: standard input
GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: str) -> bool:
    """A regular file named `….gz` that starts with gzip's magic bytes (a pipe cannot be
    peeked at; a damaged text file that happens to start with them is still text)."""
    import os
    import stat

    if not path.lower().endswith(".gz"):
        return False
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as fh:
            return fh.read(2) == GZIP_MAGIC
    except OSError:
        return False


class DamagedArchive(HypoError):
    """A gzip stream that ends early or whose data is corrupt."""


class _GzipLines:
    """A gzip-compressed stream file's lines (as open_stream's), the archive's damage a
    one-line DamagedArchive naming the last line read."""

    def __init__(self, path: str, fileobj=None):
        import gzip

        self.path = path
        self.fh = gzip.open(fileobj if fileobj is not None else path, "rt",
                            encoding="utf-8-sig", errors="replace")

    def __enter__(self) -> "_GzipLines":
        return self

    def __exit__(self, *exc) -> None:
        self.fh.close()

    def close(self) -> None:
        self.fh.close()

    def __iter__(self):
        import zlib

        no = 0
        try:
            for line in bounded_lines(self.fh):
                no += 1
                yield line
        except (OSError, EOFError, zlib.error) as e:
            raise DamagedArchive(f"{self.path}: damaged gzip data after line {no}: {e}") from None


class BoundedBlocks:
    """bounded_lines a block at a time: the file is read in chunks of `chunk` characters and
    split into lines in C — one Python step per line (readline, the block loop) cost ~2 µs,
    0.2 s of a 10⁵-line stream, all of it holding the interpreter lock that the prefetching
    thread shares with the engine.  The same lines, each with its newline: one longer than
    MAX_LINE + 1 characters (newline included) keeps its first MAX_LINE + 1, and the rest of
    it is skipped as it is read (memory stays one chunk and one line)."""

    def __init__(self, fh, chunk: int = 1 << 20):
        self._read = fh.read
        self.chunk = chunk
        self._lines: list[str] = []
        self._pos = 0
        self._carry = ""  # the start of a line whose newline is not read yet
        self._skipping = False  # inside a line already cut at MAX_LINE + 1 characters
        self.eof = False

    def _fill(self, want: int) -> None:
        """Read until `want` complete lines are buffered or the file has ended."""
        cap = MAX_LINE + 1
        while len(self._lines) - self._pos < want and not self.eof:
            text = self._read(self.chunk)
            if not text:
                self.eof = True
                if self._carry:  # a last line without newline
                    self._lines.append(self._carry)
                    self._carry = ""
                return
            if self._skipping:
                nl = text.find("\n")
                if nl < 0:
                    continue
                text = text[nl + 1:]
                self._skipping = False
            parts = text.split("\n")
            parts[0] = self._carry + parts[0]
            carry = parts.pop()
            if parts:
                if max(map(len, parts)) >= cap:  # readline(cap) gives a long line's start
                    got = [p[:cap] if len(p) >= cap else p + "\n" for p in parts]
                else:
                    got = [p + "\n" for p in parts]
                if self._pos:
                    del self._lines[:self._pos]
                    self._pos = 0
                self._lines.extend(got)
            if len(carry) > cap:  # a line past the bound before its newline: cut it here
                self._lines.append(carry[:cap])
                carry = ""
                self._skipping = True
            self._carry = carry

    def take(self, max_lines: int, max_chars: int) -> list[str]:
        """The next `max_lines` lines, fewer if they exceed `max_chars` characters together
        (at least one), fewer at the end of the file; [] once it has ended."""
        self._fill(max_lines)
        start = self._pos
        end = min(start + max_lines, len(self._lines))
        block = self._lines[start:end]
        if len(block) > 1 and sum(map(len, block)) >= max_chars:
            size = 0
            for i, line in enumerate(block):
                size += len(line)
                if size >= max_chars:
                    block = block[:i + 1]
                    break
        self._pos = start + len(block)
        return block


def bounded_lines(fh) -> Iterator[str]:
    """A text file's lines, memory bounded on a line without end: one past MAX_LINE keeps its
    first MAX_LINE + 1 characters (parse_line rejects it as too long) and the rest of it is
    skipped a block at a time (iterating the file held the whole line: a 200 MB one-line
    file took 420 MB)."""
    read = fh.readline
    while True:
        line = read(MAX_LINE + 1)
        if not line:
            return
        if len(line) > MAX_LINE and not line.endswith("\n"):
            while True:
                rest = read(1 << 20)
                if not rest or rest.endswith("\n"):
                    break
        yield line


class LiveLines:
    """The lines of a live source (a pipe, a FIFO, a terminal) as they come: available()
    returns the complete lines read so far, waiting only while there is none — a block read
    would wait for thousands of lines, and a live run would answer nothing until then.
    Decoded as open() decodes text: UTF-8 (a leading byte-order mark dropped, undecodable
    bytes replaced), universal newlines.  `first`: bytes already taken from the source (a
    peek at gzip's magic); `owner`: the file object closed with it."""

    WAIT = 0.25  # s: a wait for data wakes this often, so Ctrl-C is handled

    def __init__(self, fd: int, first: bytes = b"", owner=None, chunk: int = 1 << 16):
        import codecs
        import io

        self.fd = fd
        self.owner = owner
        self.chunk = chunk
        self._first = first
        self._dec = io.IncrementalNewlineDecoder(
            codecs.getincrementaldecoder("utf-8-sig")(errors="replace"), translate=True)
        self._tail = ""
        self._long = False  # inside a line past MAX_LINE: its rest is not kept
        self._eof = False

    def available(self, most: int) -> list[str]:
        """The complete lines there are (at least one, waiting for it; more than `most` only
        from one read), each with its "\n" — the stream's last line may lack it; [] at the
        end of the stream."""
        out: list[str] = []
        while not self._eof and (not out or (len(out) < most and self._ready(0))):
            data = self._read()
            self._eof = not data
            text = self._dec.decode(data, final=self._eof)
            if text:
                self._split(text, out)
        if self._eof and (self._tail or self._long):
            out.append(self._tail)
            self._tail, self._long = "", False
        return out

    def _split(self, text: str, out: list) -> None:
        """Append the complete lines of tail + text to out; keep the rest.  Memory stays
        bounded on a line without end: past MAX_LINE only its first MAX_LINE + 1 characters
        are kept (parse_line rejects it as too long, like a file's)."""
        parts = text.split("\n")
        last = parts.pop()
        for p in parts:
            out.append(self._keep(p) + "\n")
            self._tail, self._long = "", False
        self._tail = self._keep(last)

    def _keep(self, piece: str) -> str:
        if self._long:
            return self._tail
        line = self._tail + piece
        if len(line) > MAX_LINE:
            self._long = True
            return line[:MAX_LINE + 1]
        return line

    def _read(self) -> bytes:
        import os

        if self._first:
            data, self._first = self._first, b""
            return data
        # a read blocked in the kernel is not interrupted by a signal that another thread
        # (Polars' pool) receives: wait in short selects, so Python runs its handlers
        while not self._ready(self.WAIT):
            pass
        return os.read(self.fd, self.chunk)

    def _ready(self, wait: float) -> bool:
        """Bytes can be read without blocking (or the source cannot be polled)."""
        import select

        if self._first:
            return True
        try:
            return bool(select.select([self.fd], [], [], wait)[0])
        except (OSError, ValueError):
            return True

    def __iter__(self):
        while True:
            got = self.available(BLOCK_LINES)
            if not got:
                return
            yield from got

    def __enter__(self) -> "LiveLines":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.owner is not None:
            self.owner.close()


def open_stream(path: str):
    """A stream file's lines (undecodable bytes are replaced, and so rejected by parsing; a
    leading byte-order mark is dropped; a gzip file is decompressed); `-` is standard
    input.  A source that is not a regular file is read as its lines come (LiveLines)."""
    import os
    import stat

    if path == STDIN:
        import sys

        raw = open(sys.stdin.fileno(), "rb", closefd=False)
    elif is_gzip(path):
        return _GzipLines(path)
    elif not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO, a terminal: lines as they come
        raw = open(path, "rb")
        if not unnamed_stream(path):
            return LiveLines(raw.fileno(), owner=raw)
    else:
        return open(path, encoding="utf-8-sig", errors="replace")
    # a pipe without a data file's name (`-`, `<(gzip -c …)`): gzip if it starts with gzip's
    # magic bytes (no text does: 0x8b is not UTF-8), peeked at without consuming them
    if raw.peek(2)[:2] == GZIP_MAGIC:
        return _GzipLines(stream_name(path), raw)
    # what the peek buffered (one read of the source's, so no waiting), then the source
    return LiveLines(raw.fileno(), first=raw.read1(1 << 20), owner=raw)


def unnamed_stream(path: str) -> bool:
    """A name that says nothing of the format (`/dev/fd/63`, `/dev/stdin`) or ends .gz."""
    low = path.lower()
    return low.endswith(".gz") or not low.endswith((".jsonl", ".ndjson", ".json", ".csv",
                                                    ".txt", ".parquet", ".pq"))


def stream_name(path: str) -> str:
    """The name a stream's lines are reported under (file:line)."""
    return "<stdin>" if path == STDIN else path
