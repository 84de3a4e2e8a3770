"""Data quality of a slice D|τ with Great Expectations, before the engine uses it.

The tick job validates the slice distributed: each Spark partition of the slice is a pandas
DataFrame validated against one expectation suite (built once per Python process and
program, ephemeral context), and the per-partition results are summed into the tick's dq
record.  The expectations:

  schema             the slice has the facts columns; pred, args and time are present
  no IDB predicates  pred ∈ EDB predicates of the program (IDB, rigid, unknown refused)
  arities            len(args) + 1 = arity(pred)
  time ≥ 0           timestamps are natural numbers
  time ≤ τ           no fact from the future of its arrival tick
  lateness           τ ≤ time + δ(fact): arrived while still future-possible

A row failing any expectation goes to quarantine with the reason reasoning.stream.validate
gives (the same text `hypo run` prints), so the lake and `hypo run` refuse the same facts.
"""
from __future__ import annotations

import os
from typing import Any, Optional

import pandas as pd

from reasoning.compiler import CompiledProgram
from reasoning.patterns import Fact
from reasoning.stream import validate

FACT_COLUMNS = ["tick", "pred", "args", "time", "source", "line", "batch"]
_SUITES: dict[str, Any] = {}


def reason_code(cp: CompiledProgram, f: Fact, tick: int) -> Optional[str]:
    """The category of validate()'s verdict (same order of checks)."""
    an = cp.analysis
    if f.pred in an.rigid:
        return "rigid_predicate"
    if f.pred in an.idb:
        return "idb_predicate"
    if f.pred not in an.edb:
        return "unknown_predicate"
    if len(f.args) + 1 != an.edb[f.pred]:
        return "arity"
    if f.time < 0:
        return "negative_time"
    if f.time > tick:
        return "future_time"
    if tick > f.time + cp.delays.ground(f.pred, f.args):
        return "late"
    return None


def expectations(cp: CompiledProgram) -> list:
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx

    E = gx.expectations
    return [
        E.ExpectTableColumnsToMatchSet(column_set=FACT_COLUMNS + ["rid", "n_args", "arity",
                                                                  "latest"], exact_match=True),
        E.ExpectColumnValuesToNotBeNull(column="pred"),
        E.ExpectColumnValuesToNotBeNull(column="time"),
        E.ExpectColumnValuesToNotBeNull(column="n_args"),
        E.ExpectColumnValuesToBeInSet(column="pred", value_set=sorted(cp.analysis.edb)),
        E.ExpectColumnPairValuesToBeEqual(column_A="n_args", column_B="arity",
                                          ignore_row_if="either_value_is_missing"),
        E.ExpectColumnValuesToBeBetween(column="time", min_value=0),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="tick", column_B="time", or_equal=True,
                                                  ignore_row_if="either_value_is_missing"),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="latest", column_B="tick",
                                                  or_equal=True,
                                                  ignore_row_if="either_value_is_missing"),
    ]


def _suite(cp: CompiledProgram, key: str):
    """(batch definition, suite) for this program, built once per process."""
    got = _SUITES.get(key)
    if got is not None:
        return got
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import logging

    import great_expectations as gx

    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    ctx = gx.get_context(mode="ephemeral")
    try:
        from great_expectations.data_context.types.base import ProgressBarsConfig

        ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    except Exception:  # noqa: BLE001 - cosmetic only
        pass
    bd = ctx.data_sources.add_pandas("slice").add_dataframe_asset("facts") \
        .add_batch_definition_whole_dataframe("whole")
    suite = ctx.suites.add(gx.ExpectationSuite(f"slice-{key[:12]}", expectations=expectations(cp)))
    _SUITES[key] = (bd, suite)
    return bd, suite


def _label(cfg) -> tuple[str, str]:
    kw = {k: v for k, v in cfg.kwargs.items() if k in ("column", "column_A", "column_B")}
    import json

    return cfg.type, json.dumps(kw, sort_keys=True)


def validate_frame(pdf: pd.DataFrame, cp: CompiledProgram, key: str
                   ) -> tuple[pd.DataFrame, list[dict]]:
    """Validate one chunk of a slice: returns the chunk with `reason_code`, `reason` (None:
    accepted) and the per-expectation summary [{expectation, kwargs, element_count,
    unexpected_count}]."""
    pdf = pdf.reset_index(drop=True)
    n = len(pdf)
    facts: list[Optional[Fact]] = []
    n_args, arity, latest = [], [], []
    edb = cp.analysis.edb
    for pred, args, t in zip(pdf["pred"], pdf["args"], pdf["time"]):
        if pred is None or args is None or t is None or pd.isna(t):
            facts.append(None)
            n_args.append(None)
            arity.append(None)
            latest.append(None)
            continue
        f = Fact(str(pred), tuple(str(a) for a in args), int(t))
        facts.append(f)
        n_args.append(len(f.args) + 1)
        ar = edb.get(f.pred)
        arity.append(ar)
        latest.append(f.time + cp.delays.ground(f.pred, f.args) if ar == len(f.args) + 1 else None)
    frame = pd.DataFrame({
        "rid": range(n),
        **{c: pdf[c] for c in FACT_COLUMNS},
        "n_args": pd.array(n_args, dtype="Int64"),
        "arity": pd.array(arity, dtype="Int64"),
        "latest": pd.array(latest, dtype="Int64"),
    })
    frame["time"] = frame["time"].astype("Int64")
    frame["tick"] = frame["tick"].astype("Int64")
    bd, suite = _suite(cp, key)
    res = bd.get_batch(batch_parameters={"dataframe": frame}).validate(
        suite, result_format={"result_format": "COMPLETE", "unexpected_index_column_names": ["rid"]})
    failed: dict[int, str] = {}
    summary = []
    for r in res.results:
        typ, kw = _label(r.expectation_config)
        rr = r.result or {}
        summary.append({"expectation": typ, "kwargs": kw, "element_count": rr.get("element_count", n),
                        "unexpected_count": rr.get("unexpected_count", 0 if r.success else n),
                        "success": bool(r.success)})
        for u in rr.get("unexpected_index_list") or []:
            rid = int(u["rid"]) if isinstance(u, dict) else int(u)
            failed.setdefault(rid, typ)
    codes, reasons = [], []
    for rid, (f, t) in enumerate(zip(facts, pdf["tick"])):
        if f is None:
            codes.append("wrong_type")
            reasons.append("pred, args and time are required")
            continue
        why = validate(cp, f, int(t))
        if why is not None:
            codes.append(reason_code(cp, f, int(t)))
            reasons.append(why)
        elif rid in failed:
            codes.append("dq")
            reasons.append(f"failed {failed[rid]}")
        else:
            codes.append(None)
            reasons.append(None)
    out = pdf.copy()
    out["reason_code"] = codes
    out["reason"] = reasons
    return out, summary


def empty_summary(cp: CompiledProgram) -> list[dict]:
    """The summary of an empty slice (every expectation trivially met)."""
    import json

    out = []
    for e in expectations(cp):
        d = e.model_dump() if hasattr(e, "model_dump") else {}
        kw = {k: d[k] for k in ("column", "column_A", "column_B") if d.get(k) is not None}
        out.append({"expectation": e.expectation_type, "kwargs": json.dumps(kw, sort_keys=True),
                    "element_count": 0, "unexpected_count": 0, "success": True})
    return out


def merge_summaries(parts: list[list[dict]]) -> list[dict]:
    acc: dict[tuple, dict] = {}
    for part in parts:
        for s in part:
            k = (s["expectation"], s["kwargs"])
            cur = acc.get(k)
            if cur is None:
                acc[k] = dict(s)
            else:
                cur["element_count"] = (cur["element_count"] or 0) + (s["element_count"] or 0)
                cur["unexpected_count"] = (cur["unexpected_count"] or 0) + (s["unexpected_count"] or 0)
                cur["success"] = cur["success"] and s["success"]
    return sorted(acc.values(), key=lambda s: (s["expectation"], s["kwargs"]))
