"""Exact schematic answers (issue 10, reasoning/exact.py): every ground instance of a printed
hypothetical answer is a hypothetical answer of 002_…txt — its positive hypotheses not yet
arrived and still future-possible by their own δ, its head not already definite."""
from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings

from reasoning.compiler import compile_program
from reasoning.engine import Engine
from reasoning.explain import static_horizons
from reasoning.patterns import Fact
from reasoning.session import Session
from tests.gen import cases
from tests.helpers import ENGINES, budget

by_engine = pytest.mark.parametrize("engine", ENGINES)

PAIR = """#query Pair(X, T).
#delay Link = 1.
Pair(X, T) :- Link(X, Y, T), Link(Y, Z, T).
"""
ALERT = """#query Alert(X, T).
#delay Hot = 2.
#delay Hot(wt1, T) = 0.
#delay Alarm = 0.
Alert(X, T) :- Alarm(T), Hot(X, T).
"""


def lines(text: str, stream: dict, until: int, engine: str) -> list[dict]:
    cp = compile_program(text, "<t>")
    sess = Session(cp, engine=engine)
    out = []
    for tau in range(until + 1):
        sess.step(stream.get(tau, []), tau)
        out += [json.loads(x) for x in sess.lines(False, False)]
    return out


@by_engine
def test_a_binding_through_an_arrived_fact_is_excluded(engine):
    """A local mgu binds X = b through Link(b, b, 0): the unrefined answer excludes it."""
    got = lines(PAIR, {0: [Fact("Link", ("b", "b"), 0)]}, 1, engine)
    hyp = [o for o in got if o["status"] == "hypothetical"]
    assert [(o["tick"], o["hypotheses"], o["excluded"]) for o in hyp] == [
        (0, ["Link(X, b, 0)"], {"X": ["b"]})]
    assert [(o["tick"], o["substitution"]) for o in got if o["status"] == "definite"] == [
        (0, {"X": "b", "T": 0})]


@by_engine
def test_an_instance_whose_own_delay_ran_out_is_excluded(engine):
    """Hot(wt1, 0) cannot arrive after tick 0 (δ = 0): X ∉ {wt1} from tick 0 on."""
    got = lines(ALERT, {0: [Fact("Alarm", (), 0)]}, 2, engine)
    hyp = [(o["tick"], o["excluded"], o["deadline"]) for o in got if o["status"] == "hypothetical"]
    assert hyp == [(0, {"X": ["wt1"]}, 2), (1, {"X": ["wt1"]}, 2)]


@by_engine
def test_a_run_out_default_leaves_the_open_patterns(engine):
    """The default δ has run out but Hot(wt2, T) = 3 has not: only X = wt2 stays."""
    text = ALERT.replace("#delay Hot = 2.", "#delay Hot = 1.\n#delay Hot(wt2, T) = 3.")
    got = lines(text, {0: [Fact("Alarm", (), 0)]}, 4, engine)
    hyp = [(o["tick"], o["substitution"], o["excluded"], o["hypotheses"])
           for o in got if o["status"] == "hypothetical"]
    assert hyp == [
        (0, {"T": 0}, {"X": ["wt1"]}, ["Hot(X, 0)"]),
        (1, {"T": 0, "X": "wt2"}, {}, ["Hot(wt2, 0)"]),
        (2, {"T": 0, "X": "wt2"}, {}, ["Hot(wt2, 0)"]),
    ]


@by_engine
def test_an_instance_already_definite_through_another_rule_is_excluded(engine):
    """P(c, 0) is definite by the second rule: the first rule's answer excludes X = c."""
    text = """#query P(X, T).
#delay A = 0.
#delay B = 2.
#delay C = 0.
P(X, T) :- A(T), B(X, T).
P(X, T) :- C(X, T).
"""
    got = lines(text, {0: [Fact("A", (), 0), Fact("C", ("c",), 0)]}, 1, engine)
    hyp = [(o["tick"], o["excluded"]) for o in got if o["status"] == "hypothetical"]
    assert hyp == [(0, {"X": ["c"]}), (1, {"X": ["c"]})]


# ------------------------------------------------------------------ the property


def _until(cp, case) -> int:
    rel = static_horizons(Engine(cp))
    return case.horizon + 2 + max([v for v in rel.values() if v is not None] + [3]) + 3


def _instances(tp, a, domain):
    """The bindings of a's unbound query (head) variables over the domain, minus nogoods."""
    free = sorted({x for isvar, x in tp.head.args if isvar and a.b[x] is None})
    for values in itertools.product(domain, repeat=len(free)):
        g = dict(zip(free, values))
        if any(all(g.get(v) == c for v, c in n) for n in a.ng):
            continue
        yield tuple(g.get(i, v) for i, v in enumerate(a.b))


@by_engine
def test_printed_hypothetical_answers_are_exact(engine):
    """Over #domain: every instance of every printed hypothetical answer waits only for
    facts that have not arrived and can still arrive, and is not already definite."""

    @settings(max_examples=budget(150, engine), deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(cases())
    def check(case):
        cp = compile_program(case.text, "<gen>")
        sess = Session(cp, engine=engine)
        arrived: set = set()
        definite: set = set()
        for tau in range(_until(cp, case) + 1):
            facts = case.stream.get(tau, [])
            sess.step(facts, tau)
            arrived |= {(f.pred, f.args, f.time) for f in facts}
            snap = sess.answers()
            eng = sess.row or sess.col.tool
            main = [a for a in snap if eng.templates[a.tid].qid == 0]
            for a in main:
                tp = eng.templates[a.tid]
                if len(a.ev) == len(tp.lits):
                    hargs, ht = tp.head.instantiate(a.b)
                    definite.add((hargs, ht))
            for a in main:
                tp = eng.templates[a.tid]
                if not a.ev or len(a.ev) == len(tp.lits):
                    continue  # pending (not printed) or definite
                for b in _instances(tp, a, cp.domain):
                    hargs, ht = tp.head.instantiate(b)
                    assert (hargs, ht) not in definite, (tau, tp.head.pred, hargs, ht, a)
                    for i in tp.pos:
                        if i in a.ev:
                            continue
                        args, t = tp.lits[i].instantiate(b)
                        if t is None or None in args:
                            continue
                        p = tp.lits[i].pred
                        assert (p, args, t) not in arrived, (tau, p, args, t, a)
                        assert t + cp.delays.ground(p, args) > tau, (tau, p, args, t, a)

    check()
