"""Which in-process executor runs the set-at-a-time plan: Polars (backend.py) or numpy arrays
with compiled joins (arrays.py), and the Polars view the renderer reads either through."""
from __future__ import annotations

import copy
import os

from ..errors import HypoError

BACKENDS = ("polars", "arrays")
ENV = "HYPO_BACKEND"


def default_backend(name: str | None = None):
    """The backend named (or by $HYPO_BACKEND; Polars by default) as a fresh instance."""
    name = (name or os.environ.get(ENV) or "polars").strip().lower()
    if name == "polars":
        from .backend import PolarsBackend

        return PolarsBackend()
    if name == "arrays":
        from .arrays import ArraysBackend

        return ArraysBackend()
    raise HypoError(f"unknown in-process backend {name!r} (${ENV} or --backend: "
                    f"{' or '.join(BACKENDS)})")


def polars_view(eng):
    """The engine as the renderer reads it when its backend is not Polars: the same
    templates and layouts with a Polars backend (its frames converted by B.to_polars);
    None when the engine's backend is Polars or Spark (the renderer reads it directly)."""
    if getattr(eng.B, "name", None) != "arrays":
        return None
    from .backend import PolarsBackend

    view = copy.copy(eng)
    view.B = PolarsBackend()
    # what reads S or W reads the engine's own frames with its own backend
    view.answers, view.row_view, view.window_facts = eng.answers, eng.row_view, \
        eng.window_facts
    return view
