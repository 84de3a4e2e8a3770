"""The reader's slices D|τ read a few ticks ahead of the engine by a thread (Prefetched)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

from reasoning.stream.slices import Slice

if TYPE_CHECKING:
    from reasoning.stream.reader import StreamReader


class Prefetched:
    """StreamReader.column_slices() read up to `depth` slices ahead of the engine by a
    thread, so parsing the next slices overlaps the current tick (Polars releases the GIL
    while it parses) — once a block has been read the general way: while every block is
    scanned in C (parse_block's counts) reading costs less than what a second thread costs
    the tick loop on a 2-core machine (GIL hand-overs; measured 3–8 % of `hypo run`), so
    the caller reads them itself.  Each slice carries the rejections found while reading
    it: take_rejected() returns those of the slices handed out so far — what
    StreamReader.take_rejected() gives when the caller reads the same slices itself.  The
    reader's other state (rejected, ignored, last_tick) is read once iteration has ended.
    An error of the reader is raised where the slice it prevented would have been handed
    out.  threaded=False never starts the thread (a FIFO or a terminal: a read may block
    for ever, and a file cannot be closed while another thread is blocked reading it)."""

    def __init__(self, reader: "StreamReader", depth: int = 2, threaded: bool = True):
        self.reader = reader
        # called on each slice by the reading thread before it is handed out (work done
        # ahead of the tick, Session.prepare_slice); set once the consumer exists
        self.prepare: Optional[Callable[[Slice], None]] = None
        self._rej: list = []
        self._done = False
        self._slices = reader.column_slices()
        self._direct = True  # read in the caller's thread (until the thread starts)
        self._may_thread = threaded
        self._depth = depth
        self._thread = None

    def _start(self) -> None:
        """Hand the rest of the slices over to a reading thread."""
        import queue
        import threading

        self._direct = False
        self._q: "queue.Queue" = queue.Queue(self._depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, name="hypo-stream", daemon=True)
        try:  # json.loads of a deeply nested line recurses: a main thread's stack
            old = threading.stack_size(64 << 20)
        except (ValueError, RuntimeError):
            old = None
        try:
            self._thread.start()
        finally:
            if old is not None:
                threading.stack_size(old)

    def _put(self, item) -> bool:
        import queue

        while not self._stop.is_set():
            try:
                self._q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self) -> None:
        r = self.reader
        try:
            for sl in self._slices:
                prepare = self.prepare
                if prepare is not None and isinstance(sl, Slice):
                    prepare(sl)
                if not self._put((sl, r.take_rejected(), None)):
                    return
            self._put((None, r.take_rejected(), None))
        except BaseException as e:  # noqa: BLE001 — raised again in the reading thread
            self._put((None, r.take_rejected(), e))

    def __iter__(self) -> "Prefetched":
        return self

    def __next__(self) -> Slice:
        if self._done:
            raise StopIteration
        if self._direct:  # read here
            try:
                sl = next(self._slices)
            except StopIteration:
                self._done = True
                raise
            finally:
                self._rej.extend(self.reader.take_rejected())
            if self._may_thread and self.reader.block_counts.get("general"):
                self._start()
            return sl
        sl, rej, exc = self._q.get()
        self._rej.extend(rej)
        if exc is not None or sl is None:
            self._done = True
            self._thread.join()
            if exc is not None:
                raise exc
            raise StopIteration
        return sl

    def take_rejected(self) -> list:
        got, self._rej = self._rej, []
        return got

    def close(self) -> None:
        """Stop the thread: at once if it waits to hand a slice over, else once its current
        block is parsed (a regular file's read does not block for long)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=1.0)
