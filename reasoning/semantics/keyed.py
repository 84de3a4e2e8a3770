"""A tick's printed lines with their keys, as Python lists: what the renderer hands to
`hypo run`'s printer and to `--changes` (issue 9) without a round trip through a data frame."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import compress

COLUMNS = ("grp", "skey", "line", "akey", "status")


@dataclass(frozen=True)
class KeyedLines:
    """Rows (grp: 0 for the main query else 1, skey: the line's sort key — its object as
    json.dumps(sort_keys=True), or its position where the rows came in printing order —, line, akey: explain.answer_key's text, status), one list a
    column, of the tick whose `"tick": τ` the lines and sort keys carry."""

    grp: list
    skey: list
    line: list
    akey: list
    status: list
    # whether a line may print a `time_from` floor (the object builder's; the row
    # formatters never do): --changes compares those relative to the tick
    floors: bool = True

    @property
    def height(self) -> int:
        return len(self.line)

    @classmethod
    def empty(cls) -> "KeyedLines":
        return cls([], [], [], [], [])

    @classmethod
    def of(cls, rows) -> "KeyedLines":
        """rows as KeyedLines: None (no line), a frame with the columns COLUMNS, or already
        KeyedLines."""
        if rows is None:
            return cls.empty()
        if isinstance(rows, KeyedLines):
            return rows
        return cls(*(rows.get_column(c).to_list() for c in COLUMNS))

    @classmethod
    def from_objects(cls, objs: list, main_q: str, line=None, ordered: bool = False
                     ) -> "KeyedLines":
        """The rows of answer objects (explain.py's), main_q the main query's text; line(o)
        the printed line (default json.dumps); ordered: the objects are distinct and in
        printing order already (session.answers_at's), so a row's sort key is its
        position."""
        import json

        from reasoning.semantics.explain import answer_key_text

        dumps = json.dumps
        return cls([0 if o["query"] == main_q else 1 for o in objs],
                   list(range(len(objs))) if ordered else
                   [dumps(o, sort_keys=True, ensure_ascii=False) for o in objs],
                   [line(o) if line is not None else dumps(o, ensure_ascii=False)
                    for o in objs],
                   [answer_key_text(o) for o in objs], [o["status"] for o in objs])

    @classmethod
    def concat(cls, parts: list) -> "KeyedLines":
        if len(parts) == 1:
            return parts[0]
        cols = [[] for _ in COLUMNS]
        for p in parts:
            for c, xs in zip(cols, (p.grp, p.skey, p.line, p.akey, p.status)):
                c.extend(xs)
        return cls(*cols, floors=any(p.floors for p in parts))

    def compress(self, mask) -> "KeyedLines":
        """The rows where mask (a sequence of booleans) holds."""
        m = list(mask)
        return KeyedLines(*(list(compress(xs, m)) for xs in
                            (self.grp, self.skey, self.line, self.akey, self.status)),
                          floors=self.floors)

    def distinct(self) -> "KeyedLines":
        """One row per sort key (the first): two rows that print the same line once."""
        if len(set(self.skey)) == self.height:  # (the common case, in C)
            return self
        seen: set = set()
        return self.compress([not (s in seen or seen.add(s)) for s in self.skey])

    def retick(self, old: int, tau: int) -> "KeyedLines":
        """These rows of tick `old` as rows of tick τ: the tick is the line's first field
        and the sort key's last (columnar/render/cache.py's _untick)."""
        if old == tau:
            return self
        pre, npre = f'{{"tick": {tau}, ', len(f'{{"tick": {old}, ')
        suf, nsuf = f', "tick": {tau}}}', len(f', "tick": {old}}}')
        return KeyedLines(self.grp, [s[:-nsuf] + suf for s in self.skey],
                          [pre + x[npre:] for x in self.line], self.akey, self.status,
                          self.floors)

    def order(self, rows: list) -> list:
        """Row numbers `rows` sorted in printing order, by (grp, skey) — Python's sort of ~10³
        string keys costs ~0.1 ms, Polars' ~0.5.  (Sort keys are distinct once distinct():
        no order among ties.)"""
        sk, g = self.skey, self.grp
        if not g or g.count(g[0]) == len(g):
            return sorted(rows, key=sk.__getitem__)
        return sorted(rows, key=lambda i: (g[i], sk[i]))

    def sorted_lines(self) -> list:
        """The lines in printing order."""
        return [self.line[i] for i in self.order(range(self.height))]

    def to_polars(self):
        import polars as pl

        return pl.DataFrame(
            {"grp": pl.Series(self.grp, dtype=pl.Int64),
             "skey": pl.Series(self.skey, dtype=pl.String),
             "line": pl.Series(self.line, dtype=pl.String),
             "akey": pl.Series(self.akey, dtype=pl.String),
             "status": pl.Series(self.status, dtype=pl.String)})


def concat_rendered(parts: list):
    """Rendered rows of several parts (KeyedLines or frames of COLUMNS) as one: KeyedLines
    when every part is, else a Polars frame."""
    if all(isinstance(p, KeyedLines) for p in parts):
        return KeyedLines.concat(parts)
    import polars as pl

    frames = [p.to_polars() if isinstance(p, KeyedLines) else p for p in parts]
    return pl.concat(frames) if len(frames) > 1 else frames[0]
