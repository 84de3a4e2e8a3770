"""Confidence in the lake (issue 13; 002 §8): opt-in per lake (`hypo lake init --confidence`).

The arrival model of reasoning/confidence.py is continued from S_{τ-1}'s `model` row, fed
D|τ's accepted facts and S_τ's answers of every query (pending included), and written back
as S_τ's `model` row; each main-query answer gets its confidence in the answers table (the
`confidence` column, and the `json` line as `hypo run --format jsonl --all --confidence`
prints it).  This runs on the driver: the model is sequential (one small object per pattern
key) but its input is the tick's answers, so it costs what `hypo run --confidence` costs
(README "Confidence").
"""
from __future__ import annotations

import json
from typing import Iterable, Optional

from reasoning.confidence import Confidence, line_with_confidence
from reasoning.explain import format_atom_answer

MODEL = "model"


def enabled(info: dict) -> bool:
    """Whether the lake (its program.json) was initialised with --confidence."""
    return bool(info.get("confidence"))


def previous_model(B, prev) -> Optional[str]:
    """The `model` row's JSON of S_{τ-1} (None: no previous state, or none written)."""
    from reasoning.columnar.layout import OBJ

    if prev is None:
        return None
    rows = B.rows(B.select(B.filter(prev, B.col("kind") == B.lit(MODEL, OBJ)), [B.col("info")]))
    return rows[0]["info"] if rows else None


def tick_confidence(cp, prev_info: Optional[str], tau: int, facts: Iterable,
                    objs_all: list[dict], has_prev: bool = False) -> Confidence:
    """The model after tick τ, ready to give the confidences of S_τ's answers.  A previous
    state without its model row, or with one that does not load, is damage (LakeDamaged):
    starting the model again would silently change every later confidence."""
    from .damage import VERIFY_HINT
    from .errors import LakeDamaged

    conf = Confidence(cp)
    if has_prev and prev_info is None:
        raise LakeDamaged(f"state tick={tau - 1}: no confidence model row (this lake was made "
                          f"with --confidence); {VERIFY_HINT}")
    if prev_info:
        try:
            conf.load(prev_info)
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise LakeDamaged(f"state tick={tau - 1}: its confidence model row does not load "
                              f"({type(e).__name__}: {str(e)[:120]}); {VERIFY_HINT}") from None
    conf.observe(tau, facts, objs_all)
    return conf


def model_row(conf: Confidence) -> dict:
    return {"kind": MODEL, "info": conf.dump()}




def answer_rows(objs: list[dict], conf: Optional[Confidence]) -> list[dict]:
    """Rows of the answers table (before renaming: akey, skey, line) for answer objects,
    with their confidence when `conf` is given."""
    from reasoning.columnar.render import answer_key_text

    out = []
    for o in objs:
        c = conf.of(o) if conf is not None else None
        out.append({
            "query": o["query"], "status": o["status"],
            "substitution": json.dumps(o["substitution"], sort_keys=True, ensure_ascii=False),
            "excluded": json.dumps(o["excluded"], sort_keys=True, ensure_ascii=False),
            "excluded_combinations": json.dumps(o["excluded_combinations"], sort_keys=True,
                                                ensure_ascii=False)
            if "excluded_combinations" in o else None,
            "evidence": o["evidence"], "hypotheses": o["hypotheses"],
            "deadline": o["deadline"], "atom": format_atom_answer(o),
            "akey": answer_key_text(o),
            "skey": json.dumps(o, sort_keys=True, ensure_ascii=False),
            "line": json.dumps(o, ensure_ascii=False) if c is None else
            line_with_confidence(o, c),
            "confidence": None if c is None else round(c, 3)})
    return out


def with_confidence(B, answers_df, main: list[dict], conf: Confidence):
    """The renderer's answers frame (the main query's `objs`) with each answer's confidence
    and its line as `hypo run --confidence` prints it: joined on the sort key."""
    from reasoning.columnar.layout import FLOAT, OBJ

    rows = []
    for o in main:
        c = conf.of(o)
        rows.append({"_skey": json.dumps(o, sort_keys=True, ensure_ascii=False),
                     "_line": line_with_confidence(o, c), "confidence": round(c, 3)})
    cf = B.from_rows(rows, {"_skey": OBJ, "_line": OBJ, "confidence": FLOAT})
    cols = [c for c in B.columns(answers_df) if c not in ("line", "confidence")]
    out = B.select(B.join(answers_df, cf, ["skey"], ["_skey"]),
                   [B.col(c) for c in cols] + [B.alias(B.col("_line"), "line"),
                                               B.col("confidence")])
    n, m = B.height(out), B.height(answers_df)
    if n != m or n != len(rows):  # the renderer's sort key is json.dumps(obj, sort_keys=True)
        raise RuntimeError(f"confidence: {n} of {m} rendered answers matched {len(rows)} "
                           f"answer objects")
    return out


def answer_schema() -> dict:
    from reasoning.columnar.layout import FLOAT, INT, OBJ, STRLIST

    return {"query": OBJ, "status": OBJ, "substitution": OBJ, "excluded": OBJ,
            "excluded_combinations": OBJ, "evidence": STRLIST, "hypotheses": STRLIST,
            "deadline": INT, "atom": OBJ, "akey": OBJ, "skey": OBJ, "line": OBJ,
            "confidence": FLOAT}
