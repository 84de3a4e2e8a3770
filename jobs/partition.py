"""The program's partition key: a position pos(p) per predicate such that in every template
of every query the head and all literals carry the same variable at their key positions.

Then answers and facts with different key values never interact (a fact can only match a
literal whose key variable it binds, and a negated literal can only be proven by answers
with the same key value or with the key unbound), so S_τ splits by key value; the answers
with an unbound key variable ("global" answers) are replicated to every group and merged
afterwards (see jobs/tick.py).  If no such key exists, or the program has rigid predicates or
other oddities, everything is one partition (key "*").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from reasoning.compiler import CompiledProgram
from reasoning.patterns import ETemplate, Fact, compile_templates
from reasoning.syntax import Var

SINGLE = "*"


@dataclass(frozen=True)
class PartitionKey:
    positions: dict  # pred -> object-argument index
    single: bool
    reason: str
    head_var: dict = field(default_factory=dict)  # template id -> var index of the key in its head
    key_var_name: dict = field(default_factory=dict)  # template id -> name of that variable

    def describe(self) -> str:
        if self.single:
            return f"single partition ({self.reason})"
        pos = ", ".join(f"{p}[{i}]" for p, i in sorted(self.positions.items()))
        return f"key positions {pos}"

    def to_json(self) -> dict:
        return {"single": self.single, "reason": self.reason, "positions": dict(self.positions)}

    def fact_key(self, f: Fact) -> str:
        if self.single:
            return SINGLE
        return f.args[self.positions[f.pred]]

    def answer_key(self, tid: int, b) -> Optional[str]:
        """The key value of a schematic answer (None: unbound, a global answer)."""
        if self.single:
            return SINGLE
        v = b[self.head_var[tid]]
        return None if v is None else str(v)


def _single(reason: str) -> PartitionKey:
    return PartitionKey({}, True, reason)


def find_key(cp: CompiledProgram) -> PartitionKey:
    an = cp.analysis
    if an.rigid:
        return _single("the program has rigid predicates")
    groups = []  # per template: list of atoms (head first)
    arity: dict[str, int] = {}
    order: list[str] = []
    for q in cp.queries:
        for t in q.templates:
            if t.nogoods:
                return _single("a template has disequality constraints")
            atoms = [t.head] + [l.atom for l in t.literals]
            groups.append(atoms)
            for a in atoms:
                if a.pred not in arity:
                    order.append(a.pred)
                arity[a.pred] = len(a.args)
    for p, n in an.edb.items():
        if p not in arity:
            arity[p] = n - 1  # unused EDB predicate: any position will do
    if any(n == 0 for n in arity.values()):
        zero = sorted(p for p, n in arity.items() if n == 0)
        return _single(f"predicate {zero[0]} has no object argument")
    by_pred: dict[str, list[int]] = {p: [] for p in arity}
    for gi, atoms in enumerate(groups):
        for a in atoms:
            by_pred[a.pred].append(gi)
    order.sort(key=lambda p: -len(by_pred[p]))
    assign: dict[str, int] = {}

    def ok(p: str) -> bool:
        for gi in by_pred[p]:
            term = None
            for a in groups[gi]:
                if a.pred not in assign:
                    continue
                t = a.args[assign[a.pred]]
                if not isinstance(t, Var):
                    return False
                if term is None:
                    term = t
                elif t != term:
                    return False
        return True

    def go(i: int) -> bool:
        if i == len(order):
            return True
        p = order[i]
        for k in range(arity[p]):
            assign[p] = k
            if ok(p) and go(i + 1):
                return True
        del assign[p]
        return False

    if not go(0):
        return _single("no argument position is shared by every literal of every template")
    for p in arity:
        assign.setdefault(p, 0)
    head_var, names = {}, {}
    for tp in compile_templates(cp.queries):
        isvar, x = tp.head.args[assign[tp.head.pred]]
        assert isvar
        head_var[tp.tid] = x
        names[tp.tid] = tp.names[x]
    return PartitionKey(dict(assign), False, "", head_var, names)


def key_var_index(pk: PartitionKey, tp: ETemplate) -> Optional[int]:
    return None if pk.single else pk.head_var[tp.tid]
