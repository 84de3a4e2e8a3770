"""Which in-process executor runs the set-at-a-time plan — numpy arrays with compiled joins
(arrays/, the default) or Polars (polars.py) — and the Polars view the renderer reads
the arrays executor's frames through.  The lake's tick job picks its own (Polars on the
driver, or Spark)."""
from __future__ import annotations

import copy
import os

from reasoning.language.errors import HypoError

BACKENDS = ("arrays", "polars")
ENV = "HYPO_BACKEND"


def default_backend(name: str | None = None):
    """The backend named (or by $HYPO_BACKEND; arrays by default) as a fresh instance."""
    name = (name or os.environ.get(ENV) or "arrays").strip().lower()
    if name == "polars":
        from reasoning.columnar.backends.polars import PolarsBackend

        return PolarsBackend()
    if name == "arrays":
        from reasoning.columnar.backends.arrays import ArraysBackend

        return ArraysBackend()
    raise HypoError(f"unknown in-process backend {name!r} (${ENV} or --backend: "
                    f"{' or '.join(BACKENDS)})")


def polars_view(eng):
    """The engine as the renderer reads it when its backend is not Polars: the same
    templates and layouts with a Polars backend (its frames converted by B.to_polars);
    None when the engine's backend is Polars or Spark (the renderer reads it directly)."""
    if getattr(eng.B, "name", None) != "arrays":
        return None
    from reasoning.columnar.backends.polars import PolarsBackend

    view = copy.copy(eng)
    view.B = PolarsBackend()
    # what reads S or W reads the engine's own frames with its own backend
    view.answers, view.row_view, view.window_facts = eng.answers, eng.row_view, \
        eng.window_facts
    return view
