"""S_τ of Algorithm 1 (002 §6) as tables: set-semantic insertion, fresh answers, load/save."""
from __future__ import annotations

from typing import Iterable, Optional

from reasoning.row.engine import Engine as RowEngine
from reasoning.columnar.fallback import answer_rows
from reasoning.columnar.layout import INT, row_to_answer

# a partition's pattern: the set of the template's variables its rows bind (engine.py)
Pattern = frozenset


def add(eng, k: int, P: Pattern, df, fresh_only: bool = False) -> None:
    """Insert rows into S (set semantics: an answer already there keeps its row).
    fresh_only: the rows cannot equal a row already there (step 1 of a full-seed
    template on validated facts: a kept row with a seeded binding has every seeded
    literal in E, so its fact arrived before and a new one would be a duplicate)."""
    B = eng.B
    if df is None or B.is_empty(df):
        return
    keys = eng._keys(P)
    if not eng.may_ng[k]:  # every ng is empty: not a key (list keys cost ~15%)
        keys.remove("ng")
    df = B.unique(df, keys)
    cur = eng.S[k].get(P)
    if fresh_only and cur is not None:
        eng.S[k][P] = B.materialize(B.concat([cur, df]))
    elif cur is not None and not B.is_empty(cur):
        df = B.join(df, eng._sel(cur, keys), keys, keys, how="anti", nulls_equal=True)
        if not B.is_empty(df):
            eng.S[k][P] = B.materialize(B.concat([cur, df]))
    else:
        eng.S[k][P] = B.materialize(df)


def fresh_rows(eng, tau: int) -> dict:
    """The definite answers new at τ, per partition."""
    B = eng.B
    out = {}
    for k in range(len(eng.templates)):
        full = eng.layouts[k].full_mask
        for P, a in eng.S[k].items():
            done = eng.tail_done(k, a)
            if done is not None:  # (step1_family's tail made them)
                if done.fresh is not None:
                    out[(k, P)] = done.fresh
                continue
            f = B.materialize(B.filter(a, (B.col("born") == B.lit(tau, INT)) &
                                       (B.col("ev") == B.lit(full, INT))))
            if not B.is_empty(f):
                out[(k, P)] = f
    return out


def answers(eng, frames: Optional[dict] = None) -> list:
    """S_τ as row-engine Answers (tests, fallback, rendering of rare options)."""
    B = eng.B
    out = []
    items = frames.items() if frames is not None else (
        ((k, P), A) for k in range(len(eng.templates)) for P, A in eng.S[k].items())
    for (k, P), A in items:
        lay = eng.layouts[k]
        out.extend(row_to_answer(lay, r) for r in B.rows(A))
    return out


def row_view(eng, window: bool = False) -> RowEngine:
    """The row engine holding S_τ (for the rare paths that use its algorithms); window:
    with W and step 2's head times created ahead (rendering derived literals' ways)."""
    view = RowEngine(eng.cp, eng.forget)
    view.tau = eng.tau
    for a in answers(eng):
        view.add(a, eng.tau)
    view._info.clear()
    view.fresh_definite = set()
    if window:
        for f in eng.window_facts():
            view.window[(f.pred, f.time)].add(f.args)
        view.resume_ahead(eng.tau)
    return view


def load_answers(eng, answers: Iterable, tick: int) -> None:
    """Replace S by the given row-engine Answers (exp/dlp/unb recomputed), at tick."""
    B = eng.B
    by: dict = {}
    for a in answers:
        P = Pattern(i for i, v in enumerate(a.b) if v is not None)
        by.setdefault((a.tid, P), []).append(a)
    eng.S = [{} for _ in eng.templates]
    for (k, P), lst in by.items():
        rows = answer_rows(eng, k, P, lst, tick, born=-1)
        eng.S[k][P] = B.from_rows(rows, eng._schema(k, P))
    eng.tau = tick
    eng.tool.resume_ahead(tick)  # (step 2's head times created ahead: Engine.step2_times)
