"""Python work over many small acyclic objects without the cyclic collector rescanning the
heap: the collector is paused, and what survives is moved to its permanent generation
(gc.freeze) — merely pausing defers the postponed collections to the caller's next
allocation (reasoning/row/engine.py Engine.step measured it: 25–35 % of a `hypo run` loop)."""
from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def frozen_survivors():
    """Pause the cyclic GC for the block; freeze the survivors after it (acyclic data only:
    reference counting still frees them; a cycle made inside would leak)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.enable()
