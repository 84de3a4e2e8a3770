"""The order of `hypo run`'s lines within a tick (session.answers_at)."""
from __future__ import annotations

import json


def test_the_row_engines_sort_keys_order_lines_as_json_dumps_sort_keys_does():
    """answers_at sorts a tick's lines by session.sorted_json (orjson, no spaces, UTF-8)
    instead of json.dumps(sort_keys=True): the same order for any answer-shaped objects —
    strings with quotes, separators and control characters, big integers (json's path)."""
    from hypothesis import given, settings, strategies as st

    from reasoning.run.session import sorted_json

    text = st.text(alphabet=st.characters(blacklist_categories=("Cs",))
                   | st.sampled_from(list('",:[]{}\\ \n\x1f')), max_size=6)
    value = st.recursive(st.none() | st.booleans() | st.integers(-10 ** 20, 10 ** 20) | text,
                         lambda c: st.lists(c, max_size=3) | st.dictionaries(text, c, max_size=3),
                         max_leaves=8)
    obj = st.dictionaries(st.sampled_from(["deadline", "derived", "evidence", "query", "tick",
                                           "substitution", "a,b", 'x"']), value, max_size=5)

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(st.lists(obj, min_size=2, max_size=6))
    def check(objs):
        def canon(o):
            return json.dumps(o, sort_keys=True, ensure_ascii=False)
        assert [canon(o) for o in sorted(objs, key=canon)] == \
            [canon(o) for o in sorted(objs, key=sorted_json)]

    check()
    assert sorted_json({"a": "\ud800", "b": 2 ** 70}) == \
        b'{"a":"\xed\xa0\x80","b":1180591620717411303424}'  # (orjson refuses both)
