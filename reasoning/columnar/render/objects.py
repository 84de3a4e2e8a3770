"""The object builder: S_τ's answers (002 Alg. 1) as explain.py's JSONL objects, row by row."""
from __future__ import annotations

import json
from typing import Optional

from reasoning.semantics.explain import (answer_key_text, DEFINITE, HYPOTHETICAL, PENDING,
                                         answer_object)
from reasoning.util.gcpause import frozen_survivors
from reasoning.columnar.layout import INT, OBJ

# a handful of new rows (at most PYTHON_NEW_ROWS, with at most PYTHON_NEW_ELEMENTS excluded
# constants in all) are rendered by the object builder from the executor's own rows: the
# string plan costs ~20 Polars operations (~2.5 ms) whatever the height, the builder ~20 µs
# a row plus ~0.7 µs an excluded constant.  Measured on the turbines (one new `OK(X, T)`
# with X ∉ {…} a tick): 1 840 constants 2.5 ms by the builder against 4.7 ms by the plan;
# 20 000 constants 14–16 ms against 8–9 ms
PYTHON_NEW_ROWS = 64
PYTHON_NEW_ELEMENTS = 8_000


class Deferred:
    """A frame _render_python will give once the rows of every such frame are read."""

    __slots__ = ("i",)

    def __init__(self, i: int):
        self.i = i


class ObjectRows:
    """Renderer's rows built in Python (a mixin): rows with nogoods over several variables
    (`excluded_combinations`), rows with periodic time domains, rows with nogoods on Spark,
    and — for `hypo run` on the arrays executor — a tick's few new rows (PYTHON_NEW_ROWS)."""

    def _few(self, df) -> bool:
        """Are a frame's rows few enough for the object builder (PYTHON_NEW_ROWS)?"""
        NB = self._native.B
        if df.n > PYTHON_NEW_ROWS:
            return False
        if df.n == 0 or not NB.any_nonempty_list(df, "ng"):
            return True
        lens = NB.column_list(NB.select(df, [NB.alias(NB.list_len(NB.col("ng")), "_n")]), "_n")
        return sum(x or 0 for x in lens) <= PYTHON_NEW_ELEMENTS

    def _render_python(self, k: int, P, df, tau: int, native: bool = False):
        """Rows with nogoods (X ∉ {…}): the object built like Explainer.render (native: df
        is a frame of the native executor, read there)."""
        defer = getattr(self, "_defer", None)
        if defer is not None and not native:  # read with the others in one pass (_flush)
            defer.append((k, P, df, tau))
            return Deferred(len(defer) - 1)
        return self._python_frame(k, P, (self._native.B if native else self.B).rows(df), tau,
                                  native)

    def _flush(self, parts: list) -> list:
        """parts with each Deferred replaced by its frame: the rows of every deferred frame
        read at once (rows_many: on Spark one job instead of one a frame)."""
        defer, self._defer = self._defer, None
        if not defer:
            return parts
        B = self.B
        many = getattr(B, "rows_many", None)
        got = many([d[2] for d in defer]) if many is not None else [B.rows(d[2]) for d in defer]
        done = [self._python_frame(k, P, rows, tau) for (k, P, _, tau), rows in zip(defer, got)]
        return [done[p.i] if isinstance(p, Deferred) else p for p in parts]

    def _python_frame(self, k: int, P, src_rows, tau: int, native: bool = False):
        """The rendered frame of rows read from the executor (_render_python)."""
        from reasoning.columnar.layout import STRLIST

        B = self.B
        tp = self.eng.templates[k]
        lay = self.eng.layouts[k]
        rows = []
        with frozen_survivors():  # an answer may carry 10⁵–10⁶ exclusions (tuples, strings)
            for r in src_rows:
                rows.append(self._python_row(tp, lay, r, tau))
        self.stats["python_rows" if not native else "python_few"] += len(rows)
        schema = {"grp": INT, "skey": OBJ, "line": OBJ, "akey": OBJ, "status": OBJ}
        if self._table:
            schema.update(query=OBJ, substitution=OBJ, excluded=OBJ,
                          excluded_combinations=OBJ, evidence=STRLIST, hypotheses=STRLIST,
                          deadline=INT, atom=OBJ)
        return B.from_rows(rows, schema)

    def _python_row(self, tp, lay, r: dict, tau: int) -> dict:
        """One row with nogoods rendered by explain.answer_object (its nogoods decoded in
        their stored, sorted order)."""
        from reasoning.semantics.explain import format_atom_answer
        from reasoning.columnar.layout import row_to_answer, split_nogood_list

        a = row_to_answer(lay, r, nogoods=False)
        obj = render_object(tp, a, tau, r["dl"], split=split_nogood_list(r["ng"]))
        row = {"grp": 0 if obj["query"] == self.main_q else 1,
               "skey": json.dumps(obj, sort_keys=True, ensure_ascii=False),
               "line": json.dumps(obj, ensure_ascii=False),
               "akey": answer_key_text(obj), "status": obj["status"]}
        if self._table:
            row.update(query=obj["query"],
                       substitution=json.dumps(obj["substitution"], sort_keys=True,
                                               ensure_ascii=False),
                       excluded=json.dumps(obj["excluded"], sort_keys=True,
                                           ensure_ascii=False),
                       excluded_combinations=json.dumps(
                           obj["excluded_combinations"], sort_keys=True, ensure_ascii=False)
                       if "excluded_combinations" in obj else None,
                       evidence=obj["evidence"], hypotheses=obj["hypotheses"],
                       deadline=obj["deadline"], atom=format_atom_answer(obj))
        return row


def render_object(tp, a, tick: int, deadline: Optional[int], ng=None,
                  split: Optional[tuple] = None) -> dict:
    """explain.Explainer.render with the deadline given (and the nogoods, if given, instead
    of a.ng: as nogoods, or split as layout.split_nogood_list gives them)."""
    st = DEFINITE if len(a.ev) == len(tp.lits) else (HYPOTHETICAL if a.ev else PENDING)
    return answer_object(tp, a, a.b, a.ng if ng is None else ng, tick, st,
                         None if st == DEFINITE else deadline, split)
