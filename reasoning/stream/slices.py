"""The slices D|τ as read (002 §2, the τ-slice of a dataset): Slice, one tick; Stream, all."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterator, Optional

from reasoning.semantics.patterns import Fact
from reasoning.stream.facts import Rejection
from reasoning.stream.scanned import Scanned, entry_columns, merged_columns


@dataclass
class Stream:
    """Accepted facts per arrival tick, plus the rejected lines."""

    slices: dict[int, list[tuple[Fact, int]]] = field(default_factory=lambda: defaultdict(list))
    rejected: list[Rejection] = field(default_factory=list)

    @property
    def last_tick(self) -> int:
        return max(self.slices, default=-1)


class Slice:
    """D|τ as read, in line order: chunks that are either frames (no, tick, pred, args, t)
    of canonical lines read set-at-a-time, Scanned rows of blocks the C scanner read, or
    lists of (Fact, line)."""

    def __init__(self, tick: int):
        self.tick = tick
        self.chunks: list = []
        self.n = 0
        self._entries: Optional[list] = None
        self._frames: Optional[dict] = None
        self._cols: Optional[dict] | bool = False  # columns(): not yet computed
        # (backend name, its input frames): the columnar executor's conversion of frames()
        # done ahead by the reading thread (Session.prepare_slice), or None
        self.ready: Optional[tuple] = None

    def add_frame(self, df) -> None:
        self.chunks.append(df)
        self.n += df.height
        self._changed()

    def add_entry(self, f: Fact, no: int) -> None:
        self._changed()
        if not self.chunks or not isinstance(self.chunks[-1], list):
            self.chunks.append([])
        self.chunks[-1].append((f, no))
        self.n += 1

    def _changed(self) -> None:
        """Forget the forms built from the chunks (a chunk was added)."""
        self._entries = self._frames = self.ready = None
        self._cols = False  # columns(): not yet computed

    def __len__(self) -> int:
        return self.n

    def entries(self) -> list[tuple[Fact, int]]:
        """[(fact, line)] in line order."""
        if self._entries is None:
            out: list = []
            for c in self.chunks:
                if isinstance(c, list):
                    out.extend(c)
                elif isinstance(c, Scanned):
                    out.extend(c.entries())
                else:  # the columns as lists (a select costs ~0.1 ms: small slices)
                    out.extend((Fact(p, tuple(a), t), no) for no, p, a, t in
                               zip(*(c.get_column(x).to_list()
                                     for x in ("no", "pred", "args", "t"))))
            self._entries = out
        return self._entries

    def facts(self) -> list[Fact]:
        return [f for f, _ in self.entries()]

    def columns(self) -> Optional[dict]:
        """{pred: {"a0": [...], …, "t": int64 array}} when every chunk is Scanned or read
        line by line (the engine's from_columns input, built without a frame), else
        None."""
        if self._cols is False:
            self._cols = None
            parts = [c.columns() if isinstance(c, Scanned) else
                     entry_columns(c) if isinstance(c, list) else None for c in self.chunks]
            if all(p is not None for p in parts):  # (no chunk: no fact, {})
                self._cols = parts[0] if len(parts) == 1 else merged_columns(parts)
        return self._cols

    def frames(self) -> dict:
        """{pred: frame (a0.., t)}: the columnar executor's D|τ, built without Fact objects
        (once: a reading thread may have built them ahead)."""
        if self._frames is None:
            self._frames = self._build_frames()
        return self._frames

    def _build_frames(self) -> dict:
        import polars as pl

        from reasoning.columnar.layout import acol, facts_by_pred

        parts: dict = {}
        runs: list = []  # the chunks, consecutive frames concatenated (one partition each)
        for c in self.chunks:
            if isinstance(c, Scanned):
                c = c.to_frame()
            if not isinstance(c, list) and runs and not isinstance(runs[-1], list):
                runs[-1] = pl.concat([runs[-1], c], rechunk=False)
            else:
                runs.append(c)
        for c in runs:
            if isinstance(c, list):
                for p, cols in facts_by_pred(f for f, _ in c).items():
                    sch = {k: (pl.Int64 if k == "t" else pl.String) for k in cols}
                    parts.setdefault(p, []).append(pl.DataFrame(cols, schema=sch))
                continue
            preds = c.get_column("pred")
            if c.height and preds.n_unique() == 1:  # one predicate (0.2 ms less a tick)
                groups = [(preds[0], c)]
            else:
                groups = [(p, g) for (p,), g in c.partition_by(
                    "pred", maintain_order=True, as_dict=True).items()]
            for p, g in groups:
                args = g.get_column("args")
                n = len(args[0]) if g.height else 0
                flat = args.explode() if n else None  # (a third of list.get's select)
                if flat is not None and flat.len() == g.height * n:  # n arguments a fact
                    cols = [flat.alias(acol(0))] if n == 1 else [
                        flat.gather_every(n, i).alias(acol(i)) for i in range(n)]
                    parts.setdefault(p, []).append(pl.DataFrame(cols + [g.get_column("t")]))
                    continue
                parts.setdefault(p, []).append(g.select(
                    *[pl.col("args").list.get(i).alias(acol(i)) for i in range(n)],
                    pl.col("t")))
        return {p: (fs[0] if len(fs) == 1 else pl.concat(fs)) for p, fs in parts.items()}


def iter_ticks(st: Stream, until: int) -> Iterator[tuple[int, list[Fact]]]:
    for t in range(until + 1):
        yield t, [f for f, _ in st.slices.get(t, ())]
