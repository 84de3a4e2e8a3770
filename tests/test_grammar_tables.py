"""The LALR tables stored ahead (reasoning/language/grammar_tables.json) are the grammar's own: current,
equal to a freshly built parser's, and ignored (the grammar is analysed) when stale."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning.language import grammar_tables as gt
from reasoning.language import parser as P
from reasoning.language.errors import ProgramError

ROOT = Path(__file__).resolve().parents[1]
REGEN = ".venv/bin/python -m reasoning.language.grammar_tables"


@pytest.fixture(scope="module")
def built():
    return gt.build(gt.grammar_text())


def test_stored_tables_are_current():
    stored = gt._load_stored(gt.fingerprint(gt.grammar_text()))
    assert stored is not None, f"reasoning/language/grammar_tables.json is stale: run {REGEN}"


def _rule(r) -> tuple:
    o = r.options
    return (str(r.origin.name), tuple(str(x.name) for x in r.expansion), str(r.alias), r.order,
            o.keep_all_tokens, o.expand1, repr(o.priority), repr(o.empty_indices))


def test_stored_tables_equal_the_built_parser(built):
    """Equal up to numbering: lark numbers the LALR states in an order that depends on the
    process's string hashing, so the file is compared by content, not bytes."""
    stored = gt._load_stored(gt.fingerprint(gt.grammar_text()))
    assert stored is not None, f"regenerate with {REGEN}"
    assert sorted(map(_rule, stored.rules)) == sorted(map(_rule, built.rules))
    assert sorted((t.name, repr(t.pattern), t.priority) for t in stored.terminals) == \
        sorted((t.name, repr(t.pattern), t.priority) for t in built.terminals)
    st_, bt = stored.parser.parser.parser.parse_table, built.parser.parser.parser.parse_table
    assert len(st_.states) == len(bt.states)
    assert sorted(len(a) for a in st_.states.values()) == sorted(len(a) for a in bt.states.values())


def test_stale_tables_are_not_used(monkeypatch):
    want = dict(gt.fingerprint(gt.grammar_text()), grammar_sha256="0" * 64)
    assert gt._load_stored(want) is None
    monkeypatch.setattr(gt, "fingerprint", lambda text: want)
    assert gt.load_parser().parse("p(a, 1).", start="start") is not None  # built instead


def test_unreadable_tables_are_not_used(monkeypatch):
    import importlib.resources

    class Broken:
        def joinpath(self, name):
            return self

        def read_text(self, encoding=None):
            return '{"fingerprint": 1, "data": {"\\u0000t": 3'

    monkeypatch.setattr(importlib.resources, "files", lambda pkg: Broken())
    assert gt._load_stored(gt.fingerprint("")) is None


def _outcome(parser, text: str):
    try:
        return ("tree", parser.parse(text, start="start"))
    except Exception as e:  # noqa: BLE001 — compared by type and position
        return ("error", type(e).__name__, getattr(e, "line", None), getattr(e, "column", None),
                sorted(getattr(e, "expected", None) or getattr(e, "allowed", None) or ()))


def test_every_example_parses_the_same(built):
    stored = P._lark()
    files = sorted(ROOT.glob("examples/*.tdl")) + sorted(ROOT.glob("tests/**/*.tdl"))
    assert files
    for f in files:
        text = f.read_text(encoding="utf-8")
        assert _outcome(stored, text) == _outcome(built, text), f


_PIECES = ["p(X, T)", "q(a, 3)", ":-", "<-", ",", "&", "not", "~", ".", "#query", "#delay",
           "#rigid", "=", "T+1", "(", ")", "inf", "\"s\"", "%c\n", "\n", " ", "[0, 2]", "-"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=14))
def test_random_texts_parse_or_fail_the_same(built, pieces):
    text = " ".join(pieces)
    assert _outcome(P._lark(), text) == _outcome(built, text)


def test_errors_read_the_same_with_the_stored_tables():
    with pytest.raises(ProgramError) as e:
        P.parse_program("p(X, T) :- q(X T).")
    assert "expected" in str(e.value)
