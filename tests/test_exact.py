"""Exact schematic answers (issue 10, reasoning/exact.py): every ground instance of a printed
hypothetical answer is a hypothetical answer of 002_…txt — its positive hypotheses not yet
arrived and still future-possible by their own δ, its head not already definite."""
from __future__ import annotations

import itertools
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings

from reasoning.compiler import compile_program
from reasoning.engine import Engine
from reasoning.exact import natural_bounds, time_floors
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


MAX_INSTANCES = 2000  # ground instances of one answer the property tests enumerate


class TooMany(Exception):
    """An answer with more ground instances than MAX_INSTANCES: the example is skipped."""


def _instances(tp, a, domain, tau=None, floors=None, lo=0, every=False):
    """The bindings of a's unbound query (head) variables (every: and existential ones)
    over the domain, minus nogoods;
    with τ, also its unbound time variables from their floor (or natural bound, or lo) to a
    bound past every floor (τ + 1 + the largest offset)."""
    lits = (tp.head,) + (tuple(tp.lits[i] for i in tp.pos) if every else ())
    free = sorted({x for lp in lits for isvar, x in lp.args if isvar and a.b[x] is None})
    ranges = [domain] * len(free)
    if tau is not None:
        nat = natural_bounds(tp)
        tv = sorted({tp.lits[i].tvar for i in tp.pos if tp.lits[i].tvar is not None
                     and a.b[tp.lits[i].tvar] is None and i not in a.ev})
        free += tv
        top = tau + 1 + max(abs(lp.toff) for lp in (tp.head,) + tp.lits)  # past every floor
        ranges += [range(max(floors.get(v, nat[v]), nat[v], lo), top + 1) for v in tv]
    if math.prod(len(r) for r in ranges) > MAX_INSTANCES:
        raise TooMany
    for values in itertools.product(*ranges):
        g = dict(zip(free, values))
        if any(all(g.get(v) == c for v, c in n) for n in a.ng):
            continue
        yield tuple(g.get(i, v) for i, v in enumerate(a.b))


def _valid_times(tp, b) -> bool:
    """Every time term of the instance is natural and admitted (pre-processing's bounds,
    periodic domains)."""
    if any(t is not None and t < 0 for t in [tp.head.instantiate(b)[1]]
           + [lp.instantiate(b)[1] for lp in tp.lits]):
        return False
    if any(b[v] is not None and b[v] < k for v, k in tp.time_min):
        return False
    return all(b[v] is None or d.admits(b[v]) for v, d in tp.periodic)


def _waiting(tp, a, b, tau, cp, arrived, definite) -> bool:
    """The instance b of answer a is a hypothetical answer at τ: its positive hypotheses
    (with their times bound) have not arrived and can still arrive (some instance, for one
    with an existential variable), its head is not definite."""
    if (tp.head.instantiate(b)) in definite:
        return False
    for i in tp.pos:
        if i in a.ev:
            continue
        args, t = tp.lits[i].instantiate(b)
        if t is None:
            continue
        p = tp.lits[i].pred
        if None not in args and (p, args, t) in arrived:
            return False
        if t + cp.delays.atom(p, args) <= tau:  # no instance can still arrive
            return False
    return True


@by_engine
@pytest.mark.parametrize("multi_time", [False, True], ids=["one_time_var", "multi_time"])
def test_printed_hypothetical_answers_are_exact(engine, multi_time):
    """Over #domain (and times, for unbound time variables): every instance
    of every printed hypothetical answer waits only for facts that have not arrived and can
    still arrive, and is not already definite."""

    @settings(max_examples=budget(150, engine), deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(cases(negation=not multi_time, multi_time=multi_time))
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
                floors = time_floors(tp, a.b, a.ev, tau)
                for b in _instances(tp, a, cp.domain, tau, floors):
                    if not _valid_times(tp, b):
                        continue
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


def _without_past(eng) -> None:
    """The engine as it was before exact.py's "past": unbound time variables never split."""
    ex = eng.exact
    eng.exact = type(ex)(ex.templates, ex.delays, ex.rigid, past=False)
    eng._track = [m or c for m, c in zip(eng.exact.may_ng, eng._born_check)]


def _ground_instances(sess, cp, tau, arrived, definite, valid_only):
    """(template, evidence, binding) of every instance (times: _instances) of the main query's
    hypothetical answers: from their floors, or (valid_only, the engine without "past")
    only those that are hypothetical answers at τ."""
    eng = sess.row
    # below τ - δ - offset no instance of a hypothesis on the variable can still arrive
    lo = tau - max([cp.delays.max(p) for p in cp.analysis.edb] + [0]) - max(
        abs(lp.toff) for tp in eng.templates for lp in (tp.head,) + tp.lits)
    out = set()
    for a in sess.answers():
        tp = eng.templates[a.tid]
        if tp.qid != 0 or not a.ev or len(a.ev) == len(tp.lits):
            continue
        floors = {} if valid_only else time_floors(tp, a.b, a.ev, tau)
        for b in _instances(tp, a, cp.domain, tau, floors, lo, every=True):
            if _valid_times(tp, b) and (
                    not valid_only or _waiting(tp, a, b, tau, cp, arrived, definite)):
                out.add((a.tid, a.ev, b))
    return out


@settings(max_examples=budget(60), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases(negation=False, multi_time=True))
def test_past_instances_are_split_off_not_lost(case):
    """The instances of the answers of Algorithm 1 without "past" that are hypothetical
    answers are exactly the instances of the answers with it: splitting
    off the instances whose time reached τ loses none and keeps no other."""
    cp = compile_program(case.text, "<gen>")
    new, old = Session(cp, engine="row"), Session(cp, engine="row")
    _without_past(old.row)
    arrived: set = set()
    definite: set = set()
    for tau in range(_until(cp, case) + 1):
        facts = case.stream.get(tau, [])
        new.step(facts, tau)
        old.step(facts, tau)
        arrived |= {(f.pred, f.args, f.time) for f in facts}
        for a in new.answers():
            tp = new.row.templates[a.tid]
            if tp.qid == 0 and len(a.ev) == len(tp.lits):
                definite.add(tp.head.instantiate(a.b))
        try:
            got = _ground_instances(new, cp, tau, arrived, definite, False)
            want = _ground_instances(old, cp, tau, arrived, definite, True)
        except TooMany:
            return
        assert got == want, (tau, sorted(got - want, key=str)[:5], sorted(want - got, key=str)[:5])


@by_engine
def test_an_unbound_time_variable_covers_only_the_future(engine):
    """Alarm(X, T) :- A(X, T), B(X, T2): after B(d1, 0), the answer waits for A(d1, T) at
    every T; at tick τ the instances T ≤ τ have arrived or split off (δ(A) = 2: each with
    its own deadline), so the schematic answer is printed for T ≥ τ + 1."""
    text = """#query Alarm(X, T).
#delay A = 2.
#delay B = 2.
Alarm(X, T) :- A(X, T), B(X, T2).
"""
    got = lines(text, {0: [Fact("B", ("d1",), 0)], 3: [Fact("A", ("d1",), 3)]}, 4, engine)
    hyp = {(o["tick"], json.dumps(o["substitution"], sort_keys=True),
            json.dumps(o.get("time_from")), o["deadline"])
           for o in got if o["status"] == "hypothetical"}
    assert hyp == {
        (0, '{"T": 0, "X": "d1"}', "null", 2), (0, '{"X": "d1"}', '{"T": 1}', None),
        (1, '{"T": 0, "X": "d1"}', "null", 2), (1, '{"T": 1, "X": "d1"}', "null", 3),
        (1, '{"X": "d1"}', '{"T": 2}', None),
        (2, '{"T": 1, "X": "d1"}', "null", 3), (2, '{"T": 2, "X": "d1"}', "null", 4),
        (2, '{"X": "d1"}', '{"T": 3}', None),
        (3, '{"T": 2, "X": "d1"}', "null", 4), (3, '{"X": "d1"}', '{"T": 4}', None),
        (4, '{"T": 4, "X": "d1"}', "null", 6), (4, '{"X": "d1"}', '{"T": 5}', None)}
    assert [(o["tick"], o["substitution"]) for o in got if o["status"] == "definite"] == [
        (3, {"X": "d1", "T": 3})]
    # δ(A) = 0: nothing waits for a past instance
    got = lines(text.replace("#delay A = 2.", "#delay A = 0."),
                {0: [Fact("B", ("d1",), 0)], 3: [Fact("A", ("d1",), 3)]}, 4, engine)
    assert [(o["tick"], o["substitution"], o.get("time_from")) for o in got
            if o["status"] == "hypothetical"] == [
        (t, {"X": "d1"}, {"T": t + 1}) for t in range(5)]
