"""Step 1 of the full-seed templates of one layout as one table (columnar/step1_family.py)
against step 1 template by template (step1_evidence.step1_full): the same S_τ and the same
definite answers at every tick, on both in-process backends — on random programs (delays,
per-instance delays, negation, several temporal variables) and on the window programs
whose unfolding it was built for."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasoning.columnar import ColumnarEngine
from reasoning.columnar.backends.arrays.backend import ArraysBackend
from reasoning.columnar.backends.polars import PolarsBackend
from reasoning.language.compiler import compile_program
from tests.gen import cases
from tests.helpers import budget, facts

WINDOWS = """\
#query P3(X, T).
#delay E2 = 1.
P3(X, T) :- Boxminus[0,2] P2(X, T).
P2(X, T) :- Diamondminus[0,2] P1(X, T), E3(X, T).
P1(X, T) :- Diamondminus[0,3] E1(X, T), Boxminus[0,1] E2(X, T).
"""


def _key(a) -> tuple:
    return (a.tid, str(a.b), tuple(sorted(a.ev)), tuple(sorted(map(str, a.ng))))


def _same_run(cp, stream: dict, until: int, backend) -> tuple[int, int]:
    """Run the program with and without families; S_τ, exp/dlp and the new definite
    answers equal at every tick.  The number of templates in families, and of ticks whose
    tail (fresh rows, drop_redundant, drop_answered) the family step did for a template."""
    fused = ColumnarEngine(cp, backend=backend())
    alone = ColumnarEngine(cp, backend=backend())
    alone.families = []
    tails = 0
    for tau in range(until + 1):
        fs = stream.get(tau, [])
        r1 = fused.step(fs, tau)
        tails += bool(fused.fam_done)
        r2 = alone.step(fs, tau)
        a1 = sorted(map(_key, r1.snapshot))
        a2 = sorted(map(_key, r2.snapshot))
        assert a1 == a2, (tau, sorted(set(a1) ^ set(a2)))
        assert sorted(map(_key, r1.new_definite)) == sorted(map(_key, r2.new_definite)), tau
        assert _deadlines(fused) == _deadlines(alone), tau
    return sum(len(f.tids) for f in fused.families), tails


def _deadlines(eng) -> list:
    """Every row's binding, E, exp, dlp, unb and birth tick."""
    B = eng.B
    out = []
    for k, parts in enumerate(eng.S):
        for P, A in parts.items():
            for r in B.rows(A):
                out.append((k, tuple(sorted((c, str(v)) for c, v in r.items()))))
    return sorted(out)


def _stream(n: int, ticks: int, seed: int) -> dict:
    import random

    rnd = random.Random(seed)
    out: dict = {}
    for t in range(ticks):
        for e, late in (("E1", 0), ("E2", 1), ("E3", 0)):
            for i in range(n):
                if rnd.random() < 0.5:
                    out.setdefault(t + rnd.randint(0, late), []).append(f"{e}(c{i}, {t})")
    return facts(*[(tau, f) for tau, fs in sorted(out.items()) for f in fs])


@pytest.mark.parametrize("backend", [ArraysBackend, PolarsBackend])
def test_a_window_program_is_one_family_and_runs_the_same(backend):
    """The 25 unfolded templates of a three-level window program form one family; with
    late facts of E2 (δ = 1) its run is the template-by-template run, and so is the tail
    of its ticks done on the family's table."""
    cp = compile_program(WINDOWS, "<windows>")
    n, tails = _same_run(cp, _stream(4, 14, 7), 20, backend)
    assert n == len(ColumnarEngine(cp).templates) == 25
    assert tails >= 15


def test_templates_outside_a_family_keep_step1_full():
    """A template with nogoods of its own, a periodic domain or literals on two time
    variables is not in a family; a layout with one template makes none."""
    cp = compile_program("#query Q(X, T).\nQ(X, T) :- p(X, T), p(X, T+1).\n", "<one>")
    assert ColumnarEngine(cp).families == []
    cp = compile_program("#query Q(X, T).\nQ(X, T) :- Diamondminus[0,2] p(X, T), "
                         "q(X, S), r(X, T).\n", "<two>")
    assert ColumnarEngine(cp).families == []


@settings(max_examples=budget(90, "columnar"), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases(negation=True, multi_time=True), st.sampled_from([ArraysBackend, PolarsBackend]))
def test_random_programs_run_the_same_with_and_without_families(case, backend):
    cp = compile_program(case.text, "<gen>")
    _same_run(cp, case.stream, case.horizon + 8, backend)


@settings(max_examples=budget(60, "columnar"), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases(negation=False, multi_time=True))
def test_random_positive_programs_run_the_same_with_the_tail_on_the_family(case):
    """Positive programs (one head per family, so about a tenth of them do the tick's tail
    on the family's table: step1_family._tail) against the template-by-template run."""
    cp = compile_program(case.text, "<gen>")
    _same_run(cp, case.stream, case.horizon + 8, ArraysBackend)
