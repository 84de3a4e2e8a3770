"""The partition key a Spark tick is split by (reasoning/columnar/partitioning.py)."""
from __future__ import annotations

import pytest

from reasoning.columnar.partitioning import partition_key
from reasoning.language.compiler import compile_program
from reasoning.semantics.patterns import compile_templates


def key(text: str):
    return partition_key(compile_templates(compile_program(text).queries))


def test_the_malfunction_example_splits_by_its_device():
    k = key(open("examples/malfunction.tdl").read())
    assert k is not None and k.positions() == {"Malf": 0, "Temp": 0}


@pytest.mark.parametrize("text,why", [
    (open("examples/wind_turbines.tdl").read(), "a template of negated literals only"),
    ("#query B(X, T).\nB(X, T) :- q(X, T), not A(X, T).\nA(X, T) :- p(X, T).\n",
     "a negated literal"),
    ("#query B(X, T).\nB(X, T) :- p(X, T), q(Y, T).\n", "no variable in every literal"),
    ("#query B(X, T).\nB(X, T) :- p(X, a, T), p(b, X, T).\n",
     "the variable at different positions of p"),
    ("#query B(T).\nB(T) :- p(X, T).\n", "the head has no argument"),
])
def test_no_key_where_a_tick_cannot_be_split(text, why):
    assert key(text) is None, why


def test_one_position_per_predicate_across_templates():
    k = key("#query B(X, T).\nB(X, T) :- p(X, Y, T), q(Y, X, T).\n"
            "B(X, T) :- p(X, Z, T), r(X, T).\n")
    assert k is not None
    assert k.positions() == {"B": 0, "p": 0, "q": 1, "r": 0}


@pytest.mark.parametrize("bad", ["x", "0", "-2", "1.5"])
def test_a_bad_task_count_is_one_error_line(monkeypatch, bad):
    from jobs.errors import LakeError
    from jobs.tick.spark_partitioned import parts_for

    monkeypatch.setenv("HYPO_SPARK_PARTS", bad)
    k = key(open("examples/malfunction.tdl").read())
    with pytest.raises(LakeError, match="HYPO_SPARK_PARTS"):
        parts_for(None, k, 10 ** 6, False)
