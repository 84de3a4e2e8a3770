"""The Renderer: S_τ (002 Alg. 1) as printed lines, each frame by the path that suits it."""
from __future__ import annotations

from reasoning.semantics.keyed import KeyedLines, concat_rendered
from reasoning.columnar.layout import INT
from reasoning.columnar.render.cache import RenderCache
from reasoning.columnar.render.deadlines import Deadlines
from reasoning.columnar.render.formatted import FormattedRows
from reasoning.columnar.render.objects import ObjectRows
from reasoning.columnar.render.plan import StringPlan


class Renderer(RenderCache, FormattedRows, ObjectRows, StringPlan):
    """Renders a ColumnarEngine's tables (a tick's snapshot) as JSON lines."""

    def __init__(self, eng, native=None):
        """eng: the engine as rendered (its backend builds the strings); native: the engine
        itself when it runs on another backend (arrays): its frames are what lines() takes,
        their deadlines are computed there and only the rows printed are converted."""
        self.eng = eng
        self.B = eng.B
        self.main_q = str(eng.cp.main.atom)
        self.stats = {"python_rows": 0, "python_few": 0, "formatted": 0, "formatted_c": 0}
        self._native = native
        # the deadlines of the frames lines() takes, on their own backend (native's if given)
        self._deadlines = Deadlines(eng if native is None else native, self.stats)
        self._table = False  # rendering the lake's answers-table columns
        self._memo = None  # (frames, options, rendered) of the last call of lines()
        # (k, P) -> the previous tick's rows: their line bodies (_render_cached), or (key
        # columns, rendered rows, their tick) (_render_native_cached)
        self._rcache: dict = {}
        self._rmiss: dict = {}  # (k, P) -> ticks in a row whose look-up hit no row
        self._rcache_gen = None  # the native executor's id generation they were made in
        self._plain = False  # while rendering rows whose strings need no JSON escape
        self._static_plain: dict = {}  # k -> the template's static texts need none
        self._formatters: dict = {}  # (k, P, with nogoods) -> its row formatter (rowformat.py)

    def lines(self, frames: dict, tau: int, all_queries: bool = False,
              include_pending: bool = False, with_keys: bool = False, table: bool = False):
        """The printed answer set of tick τ (main query unless all_queries), sorted as
        `hypo run` prints it: (query ≠ main, json.dumps(obj, sort_keys=True)).  With
        with_keys: a frame of (grp, skey, line, akey, status) instead of the list, unsorted
        (--changes sorts what it prints); with table: the lake's answers-table columns
        (unsorted).  Only the answers asked for are rendered (memo on the frames and the
        options)."""
        B = self.B
        memo = self._memo
        opts = (tau, table, all_queries, include_pending)
        if memo is not None and memo[0] is frames and memo[1] == opts:
            out = memo[2]
        else:
            self._table = table
            out = self._render_all(frames, tau, all_queries, include_pending)
            self._memo = (frames, opts, out)
        if isinstance(out, KeyedLines):
            if not out.height:
                return [] if not (with_keys or table) else None
            return out.to_polars() if table else out if with_keys else out.sorted_lines()
        if out is None or (B.cheap_checks and B.is_empty(out)):
            return [] if not (with_keys or table) else None
        if table or with_keys:
            return out
        return B.column_list(B.sort(out, ["grp", "skey"]), "line")

    def _render_all(self, frames: dict, tau: int, every: bool, pending: bool = True):
        """The rendered answers of every query (or of the main one), pending ones included if
        asked: only the rows printed are rendered."""
        B = self.B
        eng = self.eng
        src = self._deadlines  # the frames' own backend: filters and deadlines
        NB = src.B
        shown = {k for k, tp in enumerate(eng.templates) if tp.qid == eng.main_qid or every}
        needed = set(shown)
        as_l: set = set()  # templates whose answers some deadline looks at
        todo = list(shown)
        while todo:  # deadlines look at the answers of negated predicates (recursively)
            k = todo.pop()
            tp = eng.templates[k]
            for j in tp.neg:
                for k2 in eng.by_head.get(tp.lits[j].pred, ()):
                    as_l.add(k2)
                    if k2 not in needed:
                        needed.add(k2)
                        todo.append(k2)
        todo_frames = {}
        for (k, P), df in frames.items():
            if k not in needed:
                continue
            if k in shown and not pending and k not in as_l:
                # pending rows are not printed and no deadline reads them: none computed
                df = NB.filter(df, NB.col("ev") != NB.lit(0, INT))
            todo_frames[(k, P)] = df
        dls = src.deadlines(todo_frames, tau)
        parts = []
        # where each read of the data is a job (Spark), the rows the object builder renders
        # are read at the end, all at once (objects.py _flush)
        self._defer = [] if not B.cheap_checks and self._native is None else None
        cache = self._columns_only()
        kept: dict = {}
        for (k, P), df in dls.items():
            if k not in shown:
                continue
            if not pending and k in as_l:
                df = NB.filter(df, NB.col("ev") != NB.lit(0, INT))
            if self._native is not None:
                if NB.is_empty(df):
                    continue
                if cache and not self._time_constrained(k, P):
                    df, got = self._render_native_cached(k, P, df, tau, kept)
                    if got is not None:
                        parts.append(got)
                    if df is None:
                        continue
                    parts.extend(self._render(k, P, NB.to_polars(df), tau))
                    continue
                df = NB.to_polars(df)
            if not B.is_empty(df):
                if cache and not self._time_constrained(k, P):
                    df, got = self._render_cached(k, P, df, tau, kept)
                    if got is not None:
                        parts.append(got)
                    if B.is_empty(df):
                        continue
                parts.extend(self._render(k, P, df, tau))
        if self._defer is not None:
            parts = self._flush(parts)
        if cache:
            self._rcache = kept
            if self._native is not None:
                self._rcache_gen = NB.generation()
        if not parts:
            return None
        if any(isinstance(p, KeyedLines) for p in parts):
            out = concat_rendered(parts)
            if isinstance(out, KeyedLines):
                return out.distinct()
        else:
            out = B.concat(parts)
        if B.name == "polars" and out.get_column("skey").n_unique() == out.height:
            return out  # (the common case: no two rows print the same; ~5× cheaper a check)
        return B.unique(out, ["skey"])

    def _time_constrained(self, k: int, P) -> bool:
        """Rows of pattern P print time constraints (the object builder renders them): they
        leave a variable constrained by periodic facts unbound, or the time variable of a
        literal (its floor, exact.py "past")."""
        tp = self.eng.templates[k]
        return any(v not in P for v, _ in tp.periodic) or any(
            lp.tvar is not None and lp.tvar not in P for lp in tp.lits)

    def _columns_only(self) -> bool:
        """Rendering for `hypo run` on Polars: the in-process shortcuts (_render_cached,
        _json_sets) apply; the lake's table columns and Spark take the general plan."""
        return self.B.name == "polars" and not self._table

    def _render(self, k: int, P, df, tau: int, keep: tuple = ()) -> list:
        B = self.B
        eng = self.eng
        if self._time_constrained(k, P):  # prints its time constraint: the object builder
            return [self._render_python(k, P, df, tau)]
        has_ng = eng.may_ng[k] and (not B.cheap_checks or B.any_nonempty_list(df, "ng"))
        out = []
        exc = None
        if has_ng:
            names = self._exclusion_names(k, P) if B.name == "polars" else None
            slow = B.list_len(B.col("ng")) > B.lit(0, INT)
            if names is not None:  # single-variable nogoods render as columns; `*` (combos)
                slow = slow & B.list_any_prefix(B.col("ng"), "*")  # in Python
                exc = self._excluded_exprs(names)
            ng_rows = B.filter(df, slow)
            df = B.filter(df, ~slow)
            if not (B.cheap_checks and B.is_empty(ng_rows)):
                out.append(self._render_python(k, P, ng_rows, tau))
        if B.is_empty(df):
            return out
        self._plain = self._columns_only() and self._plain_rows(k, P, df)
        try:
            out.append(self._render_rows(k, P, df, tau, keep, exc))
        finally:
            self._plain = False
        return out
