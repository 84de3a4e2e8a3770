"""The LALR tables of grammar.lark, generated ahead and stored as JSON package data
(grammar_tables.json): loading them takes ~7 ms where analysing the grammar takes 50-85 ms,
at every start of `hypo`.

The stored tables are used only if they were generated from this very grammar text (its
SHA-256), by this lark version, with these parser options; otherwise the parser is built
from the grammar as before, so a stale file can cost time but never change a parse.
tests/test_grammar_tables.py fails when the file is stale.  Regenerate it with

    .venv/bin/python -m reasoning.language.grammar_tables

JSON has neither tuples nor non-string keys, which lark's serialised parser uses (the
contextual lexer is keyed by parser state): those are written as one-key objects tagged
"\\u0000t" (a tuple's items) and "\\u0000d" (a dict's [key, value] pairs).  No pickle: the
file is data, read with json.loads.
"""
from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
from typing import Any, Optional

import lark
from lark import Lark

GRAMMAR = "grammar.lark"
TABLES = "grammar_tables.json"
OPTIONS = {"parser": "lalr", "propagate_positions": True, "maybe_placeholders": False,
           "start": ["start", "single_atom"]}
_TUPLE, _DICT = "\x00t", "\x00d"


def grammar_text() -> str:
    return importlib.resources.files("reasoning.language").joinpath(GRAMMAR).read_text(encoding="utf-8")


def fingerprint(text: str) -> dict:
    """What the tables depend on: the grammar text, lark's version and the options."""
    return {"grammar_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "lark": lark.__version__, "options": OPTIONS}


def build(text: str) -> Lark:
    """The parser analysed from the grammar text (the slow path, and the reference)."""
    return Lark(text, **OPTIONS)


def load_parser() -> Lark:
    """The parser of grammar.lark: from the stored tables when they are current, else built."""
    text = grammar_text()
    got = _load_stored(fingerprint(text))
    return got if got is not None else build(text)


def _load_stored(want: dict) -> Optional[Lark]:
    try:
        raw = importlib.resources.files("reasoning.language").joinpath(TABLES).read_text(encoding="utf-8")
        stored = json.loads(raw, object_hook=_decode)
    except (OSError, ValueError):
        return None
    if not isinstance(stored, dict) or stored.get("fingerprint") != want:
        return None
    try:
        return Lark._load_from_dict(stored["data"], stored["memo"])
    except Exception:  # noqa: BLE001 — unreadable tables: analyse the grammar instead
        return None


def serialise(parser: Lark, text: str) -> str:
    """The JSON file's text for a parser built from `text`."""
    from lark.grammar import Rule
    from lark.lexer import TerminalDef

    data, memo = parser.memo_serialize([TerminalDef, Rule])
    return json.dumps({"fingerprint": fingerprint(text), "data": _encode(data),
                       "memo": _encode(memo)}, sort_keys=True, separators=(",", ":")) + "\n"


def _encode(x: Any) -> Any:
    if isinstance(x, dict):
        if all(isinstance(k, str) for k in x):
            return {k: _encode(v) for k, v in x.items()}
        return {_DICT: [[_encode(k), _encode(v)] for k, v in x.items()]}
    if isinstance(x, tuple):
        return {_TUPLE: [_encode(v) for v in x]}
    if isinstance(x, list):
        return [_encode(v) for v in x]
    if x is None or isinstance(x, (str, int, float, bool)):
        return x
    raise TypeError(f"grammar tables: cannot store a {type(x).__name__}")


def _decode(obj: dict) -> Any:
    if len(obj) == 1:
        if _TUPLE in obj:
            return tuple(obj[_TUPLE])
        if _DICT in obj:
            return {(tuple(k) if isinstance(k, list) else k): v for k, v in obj[_DICT]}
    return obj


def main() -> int:
    """Regenerate grammar_tables.json next to this module."""
    text = grammar_text()
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), TABLES)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(serialise(build(text), text))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
