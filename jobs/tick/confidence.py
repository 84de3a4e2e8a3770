"""Confidence in the lake (issue 13; 002 §8): opt-in per lake (`hypo lake init --confidence`).

The arrival model of reasoning/insight/confidence.py is continued from S_{τ-1}'s `model` row, fed
D|τ's accepted facts and S_τ's answers of every query (pending included), and written back
as S_τ's `model` row; each main-query answer gets its confidence in the answers table (the
`confidence` column, and the `json` line as `hypo run --format jsonl --all --confidence`
prints it).  This runs on the driver: the model is sequential (one small object per pattern
key) but its input is the tick's answers, so it costs what `hypo run --confidence` costs
(docs/confidence.md).
"""
from __future__ import annotations

from typing import Iterable, Optional

from reasoning.insight.confidence import Confidence

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
    from jobs.table.damage import VERIFY_HINT
    from jobs.errors import LakeDamaged

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
