"""A partition key of a program's templates: one argument position per predicate such that
every template has a variable at that position of its head and of each of its literals, so
that a tick of Algorithm 1 splits by that variable's value — each part's answers, hypotheses
and window facts depend on the facts and state rows of its own key values only.  The Spark
executor runs the columnar plan once per part (jobs/tick/spark_partitioned.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from reasoning.semantics.patterns import ETemplate, LitPattern


@dataclass(frozen=True)
class PartitionKey:
    """pos: predicate → argument position of the key (heads and literals alike);
    var: template id → index of its key variable."""

    pos: tuple[tuple[str, int], ...]
    var: tuple[int, ...]

    def positions(self) -> dict[str, int]:
        return dict(self.pos)


def _var_positions(lit: LitPattern, v: int) -> set[int]:
    return {i for i, (isvar, x) in enumerate(lit.args) if isvar and x == v}


def partition_key(templates: Sequence[ETemplate]) -> Optional[PartitionKey]:
    """The key, or None where a tick cannot be split: a template without positive
    literals or with negated ones (step 3 may then make an answer of the negated literal's
    evidence alone, the key unbound: `B(X, 0)` for every X but the excluded ones, whose
    exclusions come from every key), a head or literal without a variable shared by all
    of them (a constant or no argument there), periodic or modular (derived) literals, or
    positions that differ between templates of one predicate."""
    if not templates:
        return None
    cands: list[dict[int, list[LitPattern]]] = []
    for tp in templates:
        if not tp.pos or tp.neg or tp.der or tp.periodic:
            return None
        lits = (tp.head, *tp.lits)
        shared = None
        for lit in lits:
            vs = {x for isvar, x in lit.args if isvar}
            shared = vs if shared is None else shared & vs
        if not shared:
            return None
        cands.append({v: list(lits) for v in sorted(shared)})
    # allowed positions per predicate, narrowed to a fixpoint: a template keeps a candidate
    # variable only if it sits at an allowed position of every literal's predicate
    allowed: dict[str, set[int]] = {}
    for c in cands:
        for lits in c.values():
            for lit in lits:
                allowed.setdefault(lit.pred, set(range(len(lit.args))))
    changed = True
    while changed:
        changed = False
        seen: dict[str, set[int]] = {p: set() for p in allowed}
        for c in cands:
            for v in list(c):
                if any(not (_var_positions(lit, v) & allowed[lit.pred]) for lit in c[v]):
                    del c[v]
                    changed = True
                    continue
                for lit in c[v]:
                    seen[lit.pred] |= _var_positions(lit, v) & allowed[lit.pred]
            if not c:
                return None
        for p, s in seen.items():
            if s != allowed[p]:
                allowed[p] = s
                changed = True
    # one position per predicate (the first allowed), then one variable per template
    pos = {p: min(s) for p, s in allowed.items() if s}
    var = []
    for c in cands:
        fit = [v for v, lits in c.items() if all(pos.get(l.pred) in _var_positions(l, v)
                                                 for l in lits)]
        if not fit:
            return None
        var.append(fit[0])
    return PartitionKey(tuple(sorted(pos.items())), tuple(var))
