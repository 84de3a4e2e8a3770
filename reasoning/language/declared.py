"""Stream predicates declared with `#delay` that no rule uses (issue 10): a stream is often
shared by several programs, so their facts are accepted and ignored (counted, not
rejected); and the "did you mean" hint for an undeclared, unused predicate (a typo)."""
from __future__ import annotations

from typing import Optional

from reasoning.language.compiler import CompiledProgram

IGNORED = "declared in #delay, used by no rule: ignored"


def declared_unused(cp: CompiledProgram) -> dict[str, Optional[int]]:
    """pred -> arity (from a #delay instance pattern; None: not known) of the predicates
    that `#delay` declares and no rule uses."""
    an = cp.analysis
    out: dict[str, Optional[int]] = {}
    for d in cp.program.delays:
        if d.pred in an.edb or d.pred in an.idb or d.pred in an.rigid:
            continue
        n = None if d.pattern is None else len(d.pattern) + 1
        if d.pred not in out or out[d.pred] is None:
            out[d.pred] = n
    return out
