"""Tests of the reference evaluator (`reasoning.semantics.reference`), the test oracle of 002_…txt semantics."""
from __future__ import annotations

import itertools
import time as clock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasoning.semantics.reference import NotStratified, active_domain, answers, evaluate, history
from reasoning.language.syntax import Atom, Const, Literal, Program, Rule, Time, Var

# ----------------------------------------------------------------------------------------
# Hand-built IR helpers:  A("Flag", "X", t="T+1"),  A("Hot", "wt1", t=0),  A("Type", "X")
# Upper-case argument names are variables, everything else is a constant.
# ----------------------------------------------------------------------------------------


def _term(s: str):
    return Var(s) if s[:1].isupper() else Const(s)


def _time(t):
    if t is None:
        return None
    if isinstance(t, int):
        return Time(None, t)
    for sign in "+-":
        if sign in t:
            var, k = t.split(sign)
            return Time(var, int(k) if sign == "+" else -int(k))
    return Time(t, 0)


def A(pred: str, *args: str, t=None) -> Atom:
    return Atom(pred, tuple(_term(a) for a in args), _time(t))


def pos(atom: Atom) -> Literal:
    return Literal(atom, True)


def neg(atom: Atom) -> Literal:
    return Literal(atom, False)


def R(head: Atom, *body) -> Rule:
    return Rule(head, tuple(b if isinstance(b, Literal) else pos(b) for b in body))


def prog(*rules: Rule, facts=(), domain=(), query=None, rigid=None) -> Program:
    return Program(
        rules=tuple(rules),
        facts=tuple(Rule(f) for f in facts),
        domain=tuple(domain),
        query=query,
        rigid=rigid or {},
    )


WIND = prog(
    R(A("Flag", "X", t="T"), A("Hot", "X", t="T")),
    R(A("Cool", "X", t="T+1"), A("Flag", "X", t="T"), A("Flag", "X", t="T+1")),
    R(A("Shdn", "X", t="T+1"), A("Cool", "X", t="T"), A("Flag", "X", t="T+1")),
    R(A("OK", "X", t="T-1"), neg(A("Shdn", "X", t="T"))),
    domain=("wt1", "wt2"),
    query=A("OK", "X", t="T"),
)
HOT = [A("Hot", "wt1", t=k) for k in range(3)]


# ----------------------------------------------------------------------------------------
# (1) wind turbines, no delays
# ----------------------------------------------------------------------------------------


def test_wind_turbines():
    m = evaluate(WIND, HOT, horizon=10)
    assert A("Shdn", "wt1", t=2) in m
    assert A("OK", "wt1", t=1) not in m
    assert A("OK", "wt2", t=1) in m
    assert A("OK", "wt1", t=0) in m
    assert {a for a in m if a.pred == "Shdn"} == {A("Shdn", "wt1", t=2)}
    assert {a for a in m if a.pred == "Cool"} == {A("Cool", "wt1", t=1), A("Cool", "wt1", t=2)}
    assert {a for a in m if a.pred == "Flag"} == {A("Flag", "wt1", t=k) for k in range(3)}
    # inputs are part of the model
    assert set(HOT) <= m
    # OK holds everywhere except wt1@1, including at the horizon (Shdn(_, 11) is false there)
    oks = {a for a in m if a.pred == "OK"}
    expected = {A("OK", x, t=k) for x in ("wt1", "wt2") for k in range(11)} - {A("OK", "wt1", t=1)}
    assert oks == expected


WIND_TEXT = """
#domain wt1, wt2.
#query OK(X, T).
Flag(X, T) :- Hot(X, T).
Cool(X, T+1) :- Flag(X, T), Flag(X, T+1).
Shdn(X, T+1) :- Cool(X, T), Flag(X, T+1).
OK(X, T-1) :- not Shdn(X, T).
"""


def test_wind_turbines_parsed_program_agrees():
    parser = pytest.importorskip("reasoning.language.parser")
    p = parser.parse_program(WIND_TEXT, "wind.hypo")
    assert evaluate(p, HOT, horizon=8) == evaluate(WIND, HOT, horizon=8)


def test_wind_turbines_domain_from_facts_only():
    # without #domain, wt2 is unknown: OK(X, T-1) only ranges over the active domain
    p = prog(*WIND.rules)
    m = evaluate(p, HOT, horizon=5)
    assert {a.args[0].value for a in m if a.pred == "OK"} == {"wt1"}
    m2 = evaluate(p, HOT, horizon=5, domain=["wt2"])
    assert A("OK", "wt2", t=1) in m2


def test_wind_turbines_answers():
    ans = answers(WIND, WIND.query, HOT, horizon=6)
    assert (("T", 1), ("X", "wt1")) not in ans
    assert (("T", 0), ("X", "wt1")) in ans
    assert (("T", 1), ("X", "wt2")) in ans
    # query defaults to the program's query
    assert answers(WIND, None, HOT, horizon=6) == ans
    # query with a constant and a shifted time variable
    q = A("OK", "wt1", t="S+1")
    ans2 = answers(WIND, q, HOT, horizon=6)
    assert ans2 == {(("S", k),) for k in range(0, 6) if k + 1 != 1}
    # ground query: {()} if true, empty otherwise
    assert answers(WIND, A("Shdn", "wt1", t=2), HOT, horizon=6) == {()}
    assert answers(WIND, A("Shdn", "wt1", t=3), HOT, horizon=6) == frozenset()


# ----------------------------------------------------------------------------------------
# (2) time-stratified negation alternates over time
# ----------------------------------------------------------------------------------------


def test_alternation_with_rigid_guard():
    p = prog(
        R(A("P", "X", t="T+1"), neg(A("P", "X", t="T")), A("G", "X")),
        facts=[A("G", "a")],
        domain=("b",),
        rigid={"G": 1},
    )
    m = evaluate(p, [], horizon=9)
    assert {a for a in m if a.pred == "P"} == {A("P", "a", t=k) for k in range(1, 10, 2)}
    assert A("G", "a") in m  # rigid program facts belong to the model


def test_alternation_with_edb_guard_and_seed():
    p = prog(R(A("P", "X", t="T+1"), neg(A("P", "X", t="T")), A("G", "X", t="T")))
    facts = [A("P", "a", t=0)] + [A("G", "a", t=k) for k in range(8)]
    m = evaluate(p, facts, horizon=8)
    assert {a.time.offset for a in m if a.pred == "P"} == {0, 2, 4, 6, 8}
    # the guard stops at 7, so P(a, 9) would need G(a, 8): horizon 12 adds nothing odd after 8
    m = evaluate(p, facts, horizon=12)
    assert {a.time.offset for a in m if a.pred == "P"} == {0, 2, 4, 6, 8}


def test_mutual_recursion_through_time_is_stratified():
    # P and Q depend negatively on each other, but only on earlier time points
    p = prog(
        R(A("P", "X", t="T+1"), A("D", "X"), neg(A("Q", "X", t="T"))),
        R(A("Q", "X", t="T+1"), A("P", "X", t="T")),
        facts=[A("D", "a")],
    )
    m = evaluate(p, [], horizon=6)
    # t: 0   1   2   3   4   5   6
    # P: -   +   +   -   -   +   +      P@t+1 iff not Q@t
    # Q: -   -   +   +   -   -   +      Q@t+1 iff P@t
    assert {a.time.offset for a in m if a.pred == "P"} == {1, 2, 5, 6}
    assert {a.time.offset for a in m if a.pred == "Q"} == {2, 3, 6}


# ----------------------------------------------------------------------------------------
# (3) non-stratified programs
# ----------------------------------------------------------------------------------------


def test_self_negation_same_time_not_stratified():
    p = prog(R(A("P", "X", t="T"), neg(A("P", "X", t="T")), A("R", "X", t="T")))
    with pytest.raises(NotStratified, match="P"):
        evaluate(p, [A("R", "a", t=0)], horizon=3)


def test_negative_cycle_between_predicates_not_stratified():
    p = prog(
        R(A("P", "X", t="T"), A("R", "X", t="T"), neg(A("Q", "X", t="T"))),
        R(A("Q", "X", t="T"), A("P", "X", t="T")),
    )
    with pytest.raises(NotStratified) as err:
        evaluate(p, [], horizon=2)
    assert "P" in str(err.value) and "Q" in str(err.value)


def test_negative_cycle_through_future_and_past_not_stratified():
    # P@t depends negatively on Q@t+1, which depends positively on P@t: a cycle.
    p = prog(
        R(A("P", "X", t="T"), A("R", "X"), neg(A("Q", "X", t="T+1"))),
        R(A("Q", "X", t="T+1"), A("P", "X", t="T")),
    )
    with pytest.raises(NotStratified):
        evaluate(p, [], horizon=4)


def test_rigid_negative_cycle_not_stratified():
    p = prog(R(A("P", "X"), A("R", "X"), neg(A("P", "X"))))
    with pytest.raises(NotStratified, match="P"):
        evaluate(p, [A("R", "a")], horizon=0)


# ----------------------------------------------------------------------------------------
# (4) negative times are discarded
# ----------------------------------------------------------------------------------------


def test_negative_times_discarded():
    p = prog(R(A("OK", "X", t="T-1"), neg(A("Shdn", "X", t="T"))), domain=("a",))
    m = evaluate(p, [A("Shdn", "a", t=0)], horizon=4)
    assert all(a.time.offset >= 0 for a in m if a.time is not None)
    # OK(a, 4) holds: Shdn(a, 5) lies beyond the horizon, hence is false
    assert {a.time.offset for a in m if a.pred == "OK"} == {0, 1, 2, 3, 4}


def test_negative_body_time_discards_instance():
    # at T=0 the body atom E(X, T-1) would be at time -1: the instance is discarded
    p = prog(R(A("P", "X", t="T"), A("R", "X"), neg(A("E", "X", t="T-1"))), facts=[A("R", "a")])
    m = evaluate(p, [], horizon=3)
    assert {a.time.offset for a in m if a.pred == "P"} == {1, 2, 3}


def test_facts_outside_window_ignored():
    p = prog(R(A("P", "X", t="T"), A("E", "X", t="T")))
    m = evaluate(p, [A("E", "a", t=5), A("E", "a", t=1)], horizon=3)
    assert m == {A("E", "a", t=1), A("P", "a", t=1)}


# ----------------------------------------------------------------------------------------
# (5) several temporal variables in one rule
# ----------------------------------------------------------------------------------------


def test_multiple_time_variables():
    p = prog(R(A("Defective", "X", t=0), A("Temp", "X", "high", t="T1"), A("Temp", "X", "na", t="T2")))
    facts = [
        A("Temp", "s1", "high", t=3),
        A("Temp", "s1", "na", t=7),
        A("Temp", "s2", "high", t=1),
        A("Temp", "s3", "na", t=0),
    ]
    m = evaluate(p, facts, horizon=10)
    assert {a for a in m if a.pred == "Defective"} == {A("Defective", "s1", t=0)}
    # the fact at 7 lies beyond horizon 5: treated as absent
    m = evaluate(p, facts, horizon=5)
    assert not any(a.pred == "Defective" for a in m)


def test_head_only_time_variable_ranges_over_window():
    p = prog(R(A("Always", "X", t="T"), A("R", "X")), facts=[A("R", "a")])
    m = evaluate(p, [], horizon=4)
    assert {a.time.offset for a in m if a.pred == "Always"} == set(range(5))


# ----------------------------------------------------------------------------------------
# (6) rigid facts in bodies
# ----------------------------------------------------------------------------------------


def test_rigid_facts_in_bodies():
    p = prog(
        R(A("Alarm", "X", t="T"), A("Hot", "X", t="T"), A("Type", "X", "turbine")),
        R(A("Big", "X"), A("Type", "X", "turbine")),
        R(A("Quiet", "X", t="T"), A("Type", "X", "Y"), neg(A("Big", "X")), neg(A("Hot", "X", t="T"))),
        facts=[A("Type", "wt1", "turbine"), A("Type", "p1", "pump")],
        rigid={"Type": 2, "Big": 1},
    )
    m = evaluate(p, [A("Hot", "wt1", t=1), A("Hot", "p1", t=1)], horizon=2)
    assert {a for a in m if a.pred == "Alarm"} == {A("Alarm", "wt1", t=1)}
    assert {a for a in m if a.pred == "Big"} == {A("Big", "wt1")}
    assert {a for a in m if a.pred == "Quiet"} == {A("Quiet", "p1", t=0), A("Quiet", "p1", t=2)}
    assert A("Type", "p1", "pump") in m


# ----------------------------------------------------------------------------------------
# recursion inside a stratum, negation over a recursive lower stratum
# ----------------------------------------------------------------------------------------


def test_recursion_within_a_time_point_and_negation_above_it():
    p = prog(
        R(A("Reach", "X", "Y", t="T"), A("Edge", "X", "Y", t="T")),
        R(A("Reach", "X", "Z", t="T"), A("Reach", "X", "Y", t="T"), A("Edge", "Y", "Z", t="T")),
        R(A("Unreach", "X", "Y", t="T"), A("Node", "X"), A("Node", "Y"), neg(A("Reach", "X", "Y", t="T"))),
        facts=[A("Node", n) for n in "abcd"],
    )
    facts = [A("Edge", "a", "b", t=0), A("Edge", "b", "c", t=0), A("Edge", "c", "d", t=1)]
    m = evaluate(p, facts, horizon=1)
    reach0 = {(a.args[0].value, a.args[1].value) for a in m if a.pred == "Reach" and a.time.offset == 0}
    assert reach0 == {("a", "b"), ("b", "c"), ("a", "c")}
    unreach0 = {(a.args[0].value, a.args[1].value) for a in m if a.pred == "Unreach" and a.time.offset == 0}
    assert unreach0 == set(itertools.product("abcd", repeat=2)) - reach0
    assert A("Reach", "c", "d", t=1) in m and A("Reach", "a", "d", t=1) not in m


def test_long_horizon_no_recursion_error():
    p = prog(
        R(A("P", "X", t="T+1"), A("P", "X", t="T")),
        R(A("Q", "X", t="T+1"), A("P", "X", t="T"), neg(A("Q", "X", t="T"))),
    )
    m = evaluate(p, [A("P", "a", t=0)], horizon=300)
    assert A("P", "a", t=300) in m
    assert {a.time.offset for a in m if a.pred == "Q"} == set(range(1, 301, 2))


def test_performance_small_workload():
    consts = [f"c{i}" for i in range(6)]
    p = prog(
        R(A("A1", "X", t="T"), A("E", "X", "Y", t="T")),
        R(A("A2", "X", "Z", t="T+1"), A("E", "X", "Y", t="T"), A("E", "Y", "Z", t="T")),
        R(A("A3", "X", t="T"), A("A1", "X", t="T"), neg(A("A2", "X", "X", t="T"))),
        R(A("A4", "X", t="T-1"), neg(A("A3", "X", t="T"))),
        R(A("A5", "X", t="T+1"), A("A4", "X", t="T"), neg(A("A5", "X", t="T"))),
    )
    facts = [A("E", consts[i], consts[(i + k) % 6], t=t) for t in range(40) for i in range(6) for k in (1, 2) if (i + t) % 3]
    start = clock.perf_counter()
    m = evaluate(p, facts, horizon=40)
    assert clock.perf_counter() - start < 5.0
    assert any(a.pred == "A5" for a in m)


# ----------------------------------------------------------------------------------------
# history, active domain, input checks
# ----------------------------------------------------------------------------------------


def test_history():
    stream = [(0, A("Hot", "a", t=0)), (2, A("Hot", "a", t=1)), (1, A("Hot", "b", t=1))]
    assert history(stream, 0) == [A("Hot", "a", t=0)]
    assert history(stream, 1) == [A("Hot", "a", t=0), A("Hot", "b", t=1)]
    assert history(stream, 5) == [s[1] for s in stream]
    assert history(iter(stream), -1) == []


def test_active_domain():
    p = prog(
        R(A("P", "X", "k", t="T"), A("E", "X", t="T")),
        facts=[A("Type", "r")],
        domain=("d",),
        query=A("P", "X", "q", t="T"),
    )
    assert active_domain(p, [A("E", "f", t=0)], ["x"]) == {"k", "r", "d", "q", "f", "x"}


def test_non_ground_fact_rejected():
    with pytest.raises(ValueError):
        evaluate(prog(), [A("E", "X", t=0)], horizon=1)


# ----------------------------------------------------------------------------------------
# (7) property test: positive nonrecursive programs are monotone in the facts
# ----------------------------------------------------------------------------------------

CONSTS = ("a", "b", "c")
HORIZON = 5
# name -> number of object arguments; R is rigid, E0/E1 are EDB, I0..I2 are IDB
EDB = {"E0": 1, "E1": 2, "R": 1}
IDB = {"I0": 1, "I1": 2, "I2": 1}
RIGID = {"R"}


@st.composite
def _body_atom(draw, preds):
    pred = draw(st.sampled_from(sorted(preds)))
    n = {**EDB, **IDB}[pred]
    args = tuple(draw(st.sampled_from(["X", "Y", "Z", "a"])) for _ in range(n))
    t = None if pred in RIGID else draw(st.sampled_from(["T", "T+1", "T-1", "T", 0, 2]))
    return A(pred, *args, t=t)


@st.composite
def _program(draw):
    rules = []
    for k, (head, n) in enumerate(IDB.items()):
        allowed = set(EDB) | set(list(IDB)[:k])  # only lower IDB predicates: nonrecursive
        for _ in range(draw(st.integers(1, 2))):
            body = draw(st.lists(_body_atom(allowed), min_size=1, max_size=3))
            bvars = sorted({v for b in body for v in b.object_variables()}) or ["b"]
            args = tuple(draw(st.sampled_from(bvars + ["c"])) for _ in range(n))
            t = draw(st.sampled_from(["T", "T+1", "T-1"]))
            rules.append(R(A(head, *args, t=t), *body))
    return prog(*rules)


def _ground_fact():
    def mk(pred, args, t):
        return A(pred, *args, t=None if pred in RIGID else t)

    return st.builds(
        mk,
        st.sampled_from(sorted(EDB)),
        st.sampled_from(sorted(set(itertools.product(CONSTS, repeat=1)) | set(itertools.product(CONSTS, repeat=2)))),
        st.integers(0, HORIZON),
    ).filter(lambda a: len(a.args) == EDB[a.pred])


def _closed_under_rules(p: Program, m: frozenset) -> bool:
    """Brute force: every ground instance over CONSTS x 0..HORIZON with a true body has a true head."""
    for rule in p.rules:
        atoms = [rule.head] + [lit.atom for lit in rule.body]
        ovars = sorted({v for a in atoms for v in a.object_variables()})
        tvars = sorted({a.time.var for a in atoms if a.time is not None and a.time.var is not None})
        for ovals in itertools.product(CONSTS, repeat=len(ovars)):
            for tvals in itertools.product(range(HORIZON + 2), repeat=len(tvars)):
                env = {**dict(zip(ovars, ovals)), **dict(zip(tvars, tvals))}

                def inst(atom):
                    args = tuple(Const(env[t.name]) if isinstance(t, Var) else t for t in atom.args)
                    tm = atom.time
                    if tm is not None:
                        tm = Time(None, (0 if tm.var is None else env[tm.var]) + tm.offset)
                    return Atom(atom.pred, args, tm)

                head, body = inst(rule.head), [inst(a) for a in atoms[1:]]
                times = [a.time.offset for a in [head] + body if a.time is not None]
                if any(t < 0 or t > HORIZON for t in times):
                    continue
                if all(b in m for b in body) and head not in m:
                    return False
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_program(), st.sets(_ground_fact(), max_size=12), st.sets(_ground_fact(), max_size=8))
def test_positive_nonrecursive_monotone(p, f1, f2):
    small = evaluate(p, f1, HORIZON, domain=CONSTS)
    big = evaluate(p, f1 | f2, HORIZON, domain=CONSTS)
    assert small <= big
    assert set(f1) <= small
    assert _closed_under_rules(p, big)
