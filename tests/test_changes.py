"""`hypo run --changes` (reasoning/run/changes.py): replaying the changes gives every tick's full
answer set, with `time_from` floors compared relative to the tick — an answer that waits
for ever on an unbound time variable is printed when it changes, not at every tick."""
from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings

from reasoning.run.changes import Changes, relative_time_from
from reasoning.language.compiler import compile_program
from reasoning.semantics.explain import answer_key
from reasoning.semantics.patterns import Fact
from reasoning.run.session import Session
from tests.gen import cases
from tests.helpers import ENGINES, budget

by_engine = pytest.mark.parametrize("engine", ENGINES)

NEG_TIME = """#query P3(X, T).
#delay E1 = 0.
#delay E2 = 0.
P3(X, T) :- E1(X, T), E2(X, S).
P3(X, T) :- not E1(X, T+1), E2(X, S).
"""


def full_and_changes(text: str, stream: dict, until: int, engine: str, pending: bool = True):
    """Per tick the full printed set (--no-forget; pending answers too unless not pending)
    and the --changes lines, as objects."""
    cp = compile_program(text, "<t>")
    sess = Session(cp, engine=engine, forget=False)
    ch, as_text = Changes(), Changes()
    full, changes = {}, {}
    for tau in range(until + 1):
        sess.step(stream.get(tau, []), tau)
        full[tau] = [json.loads(x) for x in sess.lines(False, pending)]
        keyed = sess.keyed(False, pending)
        lines = ch.update(tau, keyed)
        # what `hypo run` writes: the same lines, joined (the C kernel join_lines)
        assert as_text.update_text(tau, keyed) == "".join(x + "\n" for x in lines)
        changes[tau] = [json.loads(x) for x in lines]
    return full, changes


def _akey(o: dict) -> tuple:
    """The answer's identity, as --changes keys its lines (explain.answer_key)."""
    return answer_key(o)


def replay(changes: dict, until: int) -> dict:
    """Every tick's set from the changes: an answer's lines are replaced by the printed ones,
    refuted answers dropped; a line printed at t0 stands at τ with time_from + (τ − t0)."""
    state: dict = {}  # answer key -> [(t0, line object)]
    out = {}
    for tau in range(until + 1):
        printed: dict = {}
        for o in changes.get(tau, []):
            o = dict(o)
            change = o.pop("change")
            if change == "refuted":
                state.pop(_akey(o), None)
            else:
                printed.setdefault(_akey(o), []).append((tau, o))
        state.update(printed)
        now = set()
        for lines in state.values():
            for t0, o in lines:
                o = dict(o, tick=tau)
                if "time_from" in o:
                    o["time_from"] = {v: f + tau - t0 for v, f in o["time_from"].items()}
                if "derived" in o:
                    o["derived"] = {k: [_narrowed_at(w, t0, tau) for w in ways]
                                    for k, ways in o["derived"].items()}
                now.add(json.dumps(o, sort_keys=True))
        out[tau] = now
    return out


def _narrowed_at(way: dict, t0: int, tau: int) -> dict:
    """A derived way printed at t0 as it stands at τ: a narrowed window whose first open
    tick L had started (L ≤ t0 + 1) has it τ − t0 later (changes.relative_narrowed)."""
    m = re.fullmatch(r"(Diamondminus|Diamondplus)\[(\d+),(\d+)\] (.*), (\d+)\)",
                     way["hypotheses"][0]) if len(way["hypotheses"]) == 1 else None
    if m is None or way["evidence"]:
        return way
    op, a, b, atom, t = m[1], int(m[2]), int(m[3]), m[4], int(m[5])
    first = t - b if op == "Diamondminus" else t + a
    if first - t0 > 1:
        return way
    a, b = (a, b - (tau - t0)) if op == "Diamondminus" else (a + (tau - t0), b)
    return dict(way, hypotheses=[f"{op}[{a},{b}] {atom}, {t})"])


def _sets(full: dict) -> dict:
    return {t: {json.dumps(o, sort_keys=True) for o in objs} for t, objs in full.items()}


def test_relative_time_from():
    line = '"status": "hypothetical", "deadline": null, "time_from": {"S": 12, "T": 3}}'
    assert relative_time_from(line, 10) == (
        '"status": "hypothetical", "deadline": null, "time_from": {"S": 2, "T": -7}}')
    assert relative_time_from('"time_from_x": 3', 1) == '"time_from_x": 3'


@by_engine
def test_an_answer_waiting_for_ever_is_printed_once(engine):
    """No fact binds S: each tick's P3 answer waits for E2(X, S) for S ≥ its floor, which
    moves on by one a tick.  --changes prints it when it is new (and when the late E2 fact
    decides it), not at every tick: the output grows linearly, not quadratically."""
    until = 40
    stream = {3: [Fact("E1", ("a",), 3)], until: [Fact("E2", ("a",), until)]}
    full, changes = full_and_changes(NEG_TIME, stream, until, engine, pending=False)
    assert replay(changes, until) == _sets(full)
    lines = [o for t in changes.values() for o in t]
    assert not [o for o in lines if o["change"] == "updated"]
    # before E2's fact: one `new` line per tick's answer (two at tick 3: X = a apart)
    assert len([o for o in lines if o["tick"] < until]) == until
    # the full output meanwhile: t answers at tick t, one more (X = a's) from tick 3 on
    assert sum(len(full[t]) for t in range(until)) == until * (until - 1) // 2 + until - 3


@pytest.mark.parametrize("multi_time", [False, "query"])
@by_engine
def test_changes_replay_to_the_full_sets_on_random_programs(engine, multi_time):
    """Row and columnar: replaying --changes (time_from relative to the tick) gives every
    tick's full set, on random programs with negation, delays and a second temporal
    variable."""

    @settings(max_examples=budget(40, engine), deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(cases(negation=True, multi_time=multi_time))
    def check(case):
        until = case.horizon + 6
        full, changes = full_and_changes(case.text, case.stream, until, engine)
        assert replay(changes, until) == _sets(full)

    check()


def test_update_text_joins_the_lines_in_c_and_in_python(monkeypatch):
    """update_text() is update()'s lines each ended by a newline: ASCII lines joined by the
    C kernel, a non-ASCII one (a constant `café`) in Python, and without the kernels."""
    import reasoning.run.changes as changes_mod
    from reasoning.native import kernels

    text = "#query P(X, T).\n#delay E = 1.\nP(X, T) :- E(X, T), not F(X, T).\n#delay F = 1.\n"
    stream = {0: [Fact("E", ("a",), 0), Fact("E", ("café",), 0)], 1: [Fact("F", ("a",), 0)]}
    expected = {}
    for c_kernels in (True, False):
        if not c_kernels:
            monkeypatch.setattr(changes_mod.kernels, "c_only", lambda name: None)
        cp = compile_program(text, "<t>")
        sess = Session(cp, engine="columnar", forget=False)
        ch, as_text = Changes(), Changes()
        for tau in range(4):
            sess.step(stream.get(tau, []), tau)
            keyed = sess.keyed(False, True)
            got = as_text.update_text(tau, keyed)
            assert got == "".join(x + "\n" for x in ch.update(tau, keyed))
            assert expected.setdefault(tau, got) == got
    assert "café" in expected[0] and '"refuted"' in "".join(expected.values())
    join = kernels.c_only("join_lines")
    if join is not None:
        assert join(["{x: 1, a", "{x: 1, b"], [1, 0], ["H", "G"], [0, 1], 6) == "Hb\nGa\n"
        assert join(["é"], [0], ["H"], [0], 0) is None


@pytest.mark.parametrize("op", ["Diamondminus", "Diamondplus"])
def test_narrowed_windows_are_no_change_as_they_narrow(op, monkeypatch):
    """A lifted diamond's way narrowed to its open ticks (`Diamondminus[0,15] E1(c, 125)`)
    narrows by one every tick: --changes compares its first open tick relative to the tick
    (changes.relative_narrowed), so an answer waiting on it is not updated at every tick,
    and the replay (first open tick moved on) still gives every tick's full set."""
    import random

    text = (f"#query P(X, T).\n#delay C = 1.\nP(X, T) :- {op}[0,30] A(X, T), {op}[0,30] "
            f"B(X, T), Diamondminus[0,30] C(X, T).\n")
    rnd = random.Random(3)
    stream: dict = {}
    for t in range(30):
        for e in "ABC":
            for c in "ab":
                if rnd.random() < 0.08:
                    stream.setdefault(t + (rnd.randint(0, 1) if e == "C" else 0),
                                      []).append(Fact(e, (c,), t))
    until = 40
    full, changes = full_and_changes(text, stream, until, "row", pending=False)
    assert replay(changes, until) == _sets(full)
    lines = [o for t in changes.values() for o in t]
    narrowed = [o for o in lines if any(w["hypotheses"][0].startswith(op[:9])
                                        for ws in o.get("derived", {}).values() for w in ws)]
    assert narrowed  # (the windows are printed narrowed)
    from reasoning.semantics.explain import Explainer

    monkeypatch.setattr(Explainer, "narrow", False)  # (each open tick its own way)
    full1, changes1 = full_and_changes(text, stream, until, "row", pending=False)
    assert replay(changes1, until) == _sets(full1)
    updated = [len([o for t in ch.values() for o in t if o["change"] == "updated"])
               for ch in (changes, changes1)]
    assert updated[0] * 4 < updated[1], updated  # (Diamondplus: 73 and 946 lines)
