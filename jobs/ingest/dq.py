"""Data quality of a slice D|τ with Great Expectations, before the engine uses it.

The expectation suite (run by jobs/ingest/validate.py on the slice after its relational validation:
by GX's Spark execution engine on the Spark executor, with pandas on the local one) is the
tick's dq record.  The expectations:

  schema             the slice has the facts columns; pred, args and time are present
  no IDB predicates  pred ∈ EDB predicates of the program (IDB, rigid, periodic, unknown
                     refused)
  arities            len(args) + 1 = arity(pred)
  time ≥ 0           timestamps are natural numbers
  time ≤ τ           no fact from the future of its arrival tick
  lateness           τ ≤ time + δ(fact): arrived while still future-possible

A row failing any of these checks goes to quarantine with the reason reasoning.stream.facts.validate
gives (the same text `hypo run` prints: jobs/ingest/validate.py computes it relationally), so the
lake and `hypo run` refuse the same facts.
"""
from __future__ import annotations

import os

from reasoning.language.compiler import CompiledProgram
from reasoning.language.declared import declared_unused

GX_COLUMNS = ["tick", "pred", "time", "n_args", "arity", "latest"]


def expectations(cp: CompiledProgram) -> list:
    """The suite, over the columns it checks (GX_COLUMNS: the slice's schema is checked from
    the Parquet footers before; carrying the argument lists and lineage strings through
    Great Expectations cost 30 s per 10⁶ rows, the narrow frame 0.7 s)."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx

    E = gx.expectations
    return [
        E.ExpectTableColumnsToMatchSet(column_set=GX_COLUMNS, exact_match=True),
        E.ExpectColumnValuesToNotBeNull(column="pred"),
        E.ExpectColumnValuesToNotBeNull(column="time"),
        E.ExpectColumnValuesToNotBeNull(column="n_args"),
        E.ExpectColumnValuesToBeInSet(column="pred", value_set=sorted(
            set(cp.analysis.edb) | set(declared_unused(cp)))),
        E.ExpectColumnPairValuesToBeEqual(column_A="n_args", column_B="arity",
                                          ignore_row_if="either_value_is_missing"),
        E.ExpectColumnValuesToBeBetween(column="time", min_value=0),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="tick", column_B="time", or_equal=True,
                                                  ignore_row_if="either_value_is_missing"),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="latest", column_B="tick",
                                                  or_equal=True,
                                                  ignore_row_if="either_value_is_missing"),
    ]


def _label(cfg) -> tuple[str, str]:
    kw = {k: v for k, v in cfg.kwargs.items() if k in ("column", "column_A", "column_B")}
    import json

    return cfg.type, json.dumps(kw, sort_keys=True)


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
