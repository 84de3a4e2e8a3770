"""Python work over many small acyclic objects without the cyclic collector rescanning the
heap: the collector is paused, and what survives is moved to its permanent generation
(gc.freeze) — merely pausing defers the postponed collections to the caller's next
allocation (reasoning/row/engine.py Engine.step measured it: 25–35 % of a `hypo run` loop).

The permanent generation is never collected, so a reference cycle that becomes garbage
before a freeze — made in the block, or by the caller between blocks — would stay in memory
for good (issue 44: the row engine's step leaked one such cycle per local-mgu search, and
the max RSS grew linearly with the ticks).  The freezes are therefore bounded: when the
permanent generation has grown past twice its size after the last full collection (plus
FLOOR objects), it is unfrozen, collected and frozen again — a full collection each time
the frozen heap doubles, amortised O(1) per frozen object.  Its size is counted by walking
it (gc.get_freeze_count: ~15 ns an object on CPython 3.11, 30 ms at 2 · 10⁶), so it is
counted only when an O(1) estimate of its growth since the last count (the collector's
young-generation allocation count and the older generations' sizes at each freeze: an
over-estimate under churn) could have reached the bound, or a quarter of the last count —
each walk is then paid for by as many allocations as it visits objects.  Under churn (the
count finds the heap grown by less than a sixteenth: what was frozen died since — the row
engine's answers, `hypo run`'s lines) that share doubles at each count, up to the whole
last count (23 walks instead of 62 in a window program's `hypo run`); more growth brings
it back to a quarter, so a heap that grows is overshot by at most one such share."""
from __future__ import annotations

import contextlib
import gc
import threading

FLOOR = 100_000  # frozen objects a process may gain before any collection (~10 MB)

_lock = threading.Lock()
_base = -1  # the permanent generation's size after the last full collection (-1: not yet)
_counted = 0  # its size at the last count
_grown = 0  # the estimated objects frozen since that count
_blind = 0  # freezes since that count whose estimate missed the older generations
SHARE = 4  # a count once the estimate reaches a 1/SHARE of the heap counted last (at most)
_share = SHARE  # … a 1/_share: halved down to 1 while counts find no growth (churn)
BLIND_MAX = 64  # freezes between two counts at the most, while other threads run
stats = {"counts": 0, "collections": 0}  # (read by tests and bench/memory.py)


@contextlib.contextmanager
def frozen_survivors():
    """Pause the cyclic GC for the block; freeze the survivors after it (acyclic data only:
    reference counting still frees them; a cycle made inside is collected only when the
    frozen heap has doubled — see the module doc)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            try:
                _freeze()
            finally:
                gc.enable()


def _freeze() -> None:
    """gc.freeze, and a full collection of the permanent generation if it has doubled."""
    global _base, _counted, _grown, _blind, _share
    with _lock:
        # what this freeze moves: the young generation's allocations (net of frees) since the
        # last collection or freeze, and the objects collections moved to the older ones
        if threading.active_count() > 1:
            # gc.get_objects hands out a reference to every tracked object: another thread's
            # tuple still being built (refcount 1 required) then fails with "SystemError:
            # Objects/tupleobject.c: bad argument to internal function" (seen with Great
            # Expectations' pandas beside the row engine's lake tick).  The young
            # generation's counter only, then, and a count (a walk of the permanent
            # generation, which takes no reference) at least every BLIND_MAX freezes for
            # what collections moved to the older ones — a quarter of the last count a
            # freeze, as before, walked a heap of millions of objects every 4 ticks (17×
            # slower row-engine loops in a process with Spark's threads).
            est = gc.get_count()[0]
            _blind += 1
        else:
            est = gc.get_count()[0] + len(gc.get_objects(1)) + len(gc.get_objects(2))
        gc.freeze()
        if _base < 0:
            _base = _counted = gc.get_freeze_count()
            _blind = 0
            stats["counts"] += 1
            return
        _grown += est
        limit = 2 * _base + FLOOR
        if _grown < max(limit - _counted, (_counted + FLOOR) // _share) and _blind < BLIND_MAX:
            return
        before, _counted, _grown, _blind = _counted, gc.get_freeze_count(), 0, 0
        stats["counts"] += 1
        # churn (what was frozen died since; the heap grew by under a sixteenth): the next
        # count waits for twice the estimate, up to the heap's size; more growth brings it
        # back to a quarter
        _share = max(_share // 2, 1) if _counted <= before + before // 16 else SHARE
        if _counted > limit:
            collect_frozen()


def collect_frozen() -> None:
    """Collect the permanent generation's garbage (cycles frozen after they became garbage)
    and freeze the survivors again: a full collection, O(the tracked heap)."""
    global _base, _counted, _grown, _blind, _share
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    _base = _counted = gc.get_freeze_count()
    _grown = _blind = 0
    _share = SHARE
    stats["collections"] += 1
