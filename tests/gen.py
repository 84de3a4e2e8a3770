"""Hypothesis strategies: random nonrecursive, T-stratified programs and δ-respecting streams."""
from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from reasoning.semantics.patterns import Fact

CONSTS = ("a", "b", "c")
EDB = ("E1", "E2")


@dataclass
class Case:
    text: str
    positive: bool
    stream: dict  # tick -> [Fact]
    facts_by_time: list  # all facts
    horizon: int  # last fact timestamp + 1


def _offset(k: int) -> str:
    return "T" if k == 0 else (f"T+{k}" if k > 0 else f"T-{-k}")


@st.composite
def programs(draw, negation: bool = True, n_idb: int = 3, extras: bool = True,
             multi_time: bool = False):
    """Layered IDB predicates P1..Pn over EDB E1, E2 (and J(X, Y, T), rigid R/1, constants);
    X in every atom but the extras.  multi_time: some rules get a second temporal variable
    S (Ronca et al.'s multiple temporal variables), positive or also under negation;
    multi_time="query": only the query predicate's rules (nothing negates them: a negated
    predicate whose rules wait for some future S is never decided, while an oracle that
    sees the whole finite stream decides it)."""
    lines = []
    uses_j = uses_r = False
    delays = {}
    for e in EDB:
        d = draw(st.integers(0, 2))
        delays[e] = d
        lines.append(f"#delay {e} = {d}.")
    if draw(st.booleans()):
        d = draw(st.integers(0, 3))
        lines.append(f"#delay E1(a, T) = {d}.")
    lines.append("#domain a, b, c.")
    has_neg = False
    for i in range(1, n_idb + 1):
        lower = list(EDB) + [f"P{j}" for j in range(1, i)]
        for _ in range(draw(st.integers(1, 2))):
            h = draw(st.integers(-1, 1))
            n = draw(st.integers(1, 3))
            body = []
            for _k in range(n):
                q = draw(st.sampled_from(lower))
                k = draw(st.integers(-2, 1))
                neg = negation and draw(st.integers(0, 3)) == 0
                body.append((q, k, neg))
            if all(neg for _, _, neg in body) and draw(st.booleans()):
                body[0] = (body[0][0], body[0][1], False)
            has_neg = has_neg or any(neg for _, _, neg in body)
            lits = [("not " if neg else "") + f"{q}(X, {_offset(k)})" for q, k, neg in body]
            if extras and draw(st.integers(0, 3)) == 0:  # a join through Y (local mgus)
                k = draw(st.integers(-1, 0))
                lits.append(f"J(X, Y, {_offset(k)})")
                if draw(st.booleans()):
                    lits.append(f"E1(Y, {_offset(draw(st.integers(-1, 0)))})")
                uses_j = True
            if extras and draw(st.integers(0, 4)) == 0:  # rigid background knowledge
                lits.append(("not " if negation and draw(st.booleans()) else "") + "R(X)")
                uses_r = True
            if extras and draw(st.integers(0, 5)) == 0:  # a constant argument
                lits.append(f"E2(b, {_offset(draw(st.integers(-1, 0)))})")
            if multi_time and (multi_time != "query" or i == n_idb) and \
                    draw(st.integers(0, 3)) == 0:  # a second temporal variable
                lits.append("E2(X, S)")
                if negation and draw(st.booleans()):
                    lits.append("not E1(X, S)")
            lines.append(f"P{i}(X, {_offset(h)}) :- {', '.join(lits)}.")
    lines.insert(0, f"#query P{n_idb}(X, T).")
    if uses_r:
        lines.append("#rigid R/1.")
        lines.append("R(a). R(c).")
    if uses_j:
        lines.append(f"#delay J = {draw(st.integers(0, 2))}.")
    rules = "\n".join(l for l in lines if ":-" in l)
    lines = [l for l in lines if not l.startswith("#delay") or
             f"{l.split()[1].split('(')[0]}(" in rules]
    return "\n".join(lines) + "\n", not has_neg, delays


@st.composite
def cases(draw, negation: bool = True, horizon: int = 5, multi_time: bool = False):
    text, positive, delays = draw(programs(negation=negation, extras=draw(st.booleans()),
                                           multi_time=multi_time))
    per_a = None
    dj = 0
    for line in text.splitlines():
        if line.startswith("#delay E1(a, T)"):
            per_a = int(line.split("=")[1].strip(" ."))
        if line.startswith("#delay J ="):
            dj = int(line.split("=")[1].strip(" ."))
    stream: dict = {}
    all_facts = []
    for t in range(horizon):
        for e in EDB:
            for c in CONSTS:
                if draw(st.integers(0, 9)) < 4:
                    d = per_a if (e == "E1" and c == "a" and per_a is not None) else delays[e]
                    arrival = t + draw(st.integers(0, d))
                    f = Fact(e, (c,), t)
                    stream.setdefault(arrival, []).append(f)
                    all_facts.append(f)
        if "J(" in text:
            for c in CONSTS:
                for c2 in CONSTS:
                    if draw(st.integers(0, 9)) < 2:
                        f = Fact("J", (c, c2), t)
                        stream.setdefault(t + draw(st.integers(0, dj)), []).append(f)
                        all_facts.append(f)
    return Case(text, positive, stream, all_facts, horizon)
