"""reasoning/insight/lifecycle.py on hand-made answer sequences, and reasoning/insight/report.py's HTML."""
from __future__ import annotations

import re

import pytest

from reasoning.insight.lifecycle import CONFIRMED, OPEN, REFUTED, build
from reasoning.insight.report import ReportData, render

Q = "OK(X, T)"


def ans(x, t, status, deadline=None, excluded=None):
    return {"tick": 0, "query": Q, "status": status, "substitution": {"X": x, "T": t},
            "excluded": excluded or {}, "evidence": [], "hypotheses": [] if status ==
            "definite" else [f"not Shdn({x}, {t + 1})"], "deadline": deadline}


def sequence():
    """a: announced at 1, confirmed at 3; b: announced at 1, refuted at 2; c: announced at 2,
    still open at 4; d: definite at once at 2 (then forgotten); p: pending only."""
    return [
        (0, [ans("p", 0, "pending")]),
        (1, [ans("a", 1, "hypothetical", 3), ans("b", 1, "hypothetical", 2)]),
        (2, [ans("a", 1, "hypothetical", 3), ans("c", 2, "hypothetical", 9),
             ans("d", 0, "definite")]),
        (3, [ans("a", 1, "definite"), ans("c", 2, "hypothetical", 9)]),
        (4, [ans("c", 2, "hypothetical", 10), ans("p", 0, "pending")]),
    ]


def test_lifecycle_of_hand_made_sequence():
    lcs = build(sequence())
    by = {lc.label: lc for lc in lcs.all}
    assert list(by) == ["OK(a, 1)", "OK(b, 1)", "OK(c, 2)", "OK(d, 0)"]  # pending: never
    a, b, c, d = by["OK(a, 1)"], by["OK(b, 1)"], by["OK(c, 2)"], by["OK(d, 0)"]
    assert (a.first, a.decided, a.outcome, a.deadline, a.gained) == (1, 3, CONFIRMED, 3, 2)
    assert (b.first, b.decided, b.outcome, b.deadline, b.gained) == (1, 2, REFUTED, 2, None)
    assert (c.first, c.decided, c.outcome, c.deadline) == (2, None, OPEN, 10)
    assert (d.first, d.decided, d.outcome, d.gained, d.first_status) == (2, 2, CONFIRMED, 0,
                                                                         "definite")
    assert lcs.outcomes() == {CONFIRMED: 2, REFUTED: 1, OPEN: 1}
    assert sorted(lcs.gained()) == [0, 2]
    counts = [(c.tick, c.definite, c.hypothetical, c.pending, c.refuted, c.confirmed)
              for c in lcs.ticks]
    assert counts == [(0, 0, 0, 1, 0, 0), (1, 0, 2, 0, 0, 0), (2, 1, 2, 0, 1, 0),
                      (3, 1, 1, 0, 0, 1), (4, 0, 1, 1, 0, 0)]
    assert [lc.label for lc in lcs.slowest(2)] == ["OK(c, 2)", "OK(a, 1)"]  # 3 ticks, 2 ticks


def test_lifecycle_gaps_kept_definite_and_reappearing():
    seq = [(0, [ans("a", 0, "hypothetical", 1)]),
           (5, []),  # ticks 1..4 skipped (a quiet stretch): refuted at 1
           (6, [ans("a", 0, "hypothetical", 7)]),  # back: a new lifecycle
           (7, [ans("a", 0, "definite")]),
           (8, [ans("a", 0, "definite")])]  # kept (--no-forget): nothing new
    lcs = build(seq)
    assert [(lc.first, lc.decided, lc.outcome) for lc in lcs.all] == [(0, 1, REFUTED),
                                                                       (6, 7, CONFIRMED)]
    with pytest.raises(ValueError):
        lcs.observe(8, [])


def test_exclusions_are_part_of_the_identity():
    seq = [(0, [ans("X", 1, "hypothetical", 3, {"X": ["wt1"]})]),
           (1, [ans("X", 1, "hypothetical", 3, {"X": ["wt1", "wt2"]})])]
    for s in seq:
        for o in s[1]:
            del o["substitution"]["X"]
    lcs = build(seq)
    assert [(lc.label, lc.outcome) for lc in lcs.all] == [
        ("OK(X, 1) for X ∉ {wt1}", REFUTED), ("OK(X, 1) for X ∉ {wt1, wt2}", OPEN)]


def test_timeline_cap_says_what_was_left_out():
    seq = [(t, [ans(f"d{i}", t, "hypothetical", t + 1) for i in range(50)]) for t in range(3)]
    lcs = build(seq)
    assert len(lcs.all) == 150
    chosen, left = lcs.timeline(20)
    assert len(chosen) == 20 and "130 left out" in left
    assert chosen[:10] == lcs.all[:10]


def _data(lcs, **kw):
    return ReportData(title="t", source="s", start=0, end=lcs.last_tick, lifecycles=lcs,
                      query=Q, **kw)


def test_report_has_plots_and_escapes_user_text():
    bad = '<script>alert(1)</script>'
    seq = sequence() + [(5, [ans(bad, 5, "hypothetical", 6)])]
    html = render(_data(build(seq), program_text=f'% {bad}\nP("{bad}", T) :- Q(T).',
                        program_file=bad, quality=[{"tick": 5, "facts": 1, "accepted": 0,
                                                    "quarantined": 1, "reasons": {bad: 1},
                                                    "dq_checked": 9, "dq_failed": [bad]}]))
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    for i in ("counts", "timeline", "gained"):
        assert f'<svg id="{i}"' in html
    assert len(re.findall(r'<rect class="bar ', html)) == 5
    assert 'class="bar refuted"' in html and 'class="bar open"' in html
    assert html.count('class="deadline"') == 4  # a, b, c, the script one; d is definite
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html


def test_report_of_a_large_run_stays_small():
    seq = [(t, [ans(f"dev{i}", t, "hypothetical", t + 2) for i in range(10_000)])
           for t in range(3)]
    lcs = build(seq)
    html = render(_data(lcs))
    assert len(lcs.all) == 30_000
    assert len(re.findall(r'<rect class="bar ', html)) == 80
    assert "29920 left out" in html
    assert len(html) < 200_000


def _points(svg: str) -> dict:
    return {s: p for s, p in re.findall(r'data-series="(\w+)" points="([^"]*)"', svg)}


@pytest.mark.parametrize("end,n_points", [(4, 5), (1_000, 501), (10 ** 12, 600)])
def test_the_counts_plot_of_a_long_range_is_built_from_the_ticks_with_counts(end, n_points):
    """`hypo run --until 10¹²` skips quiet stretches; its report's range is 10¹² ticks: the
    counts plot has at most PLOT_POINTS points per series (the maximum of each bucket of
    ticks) and is built without walking the range (it used to be a MemoryError)."""
    from reasoning.insight.report import counts_svg

    lcs = build(sequence())
    d = ReportData(title="t", source="s", start=0, end=end, lifecycles=lcs, query=Q,
                   quarantined={2: 3, end: 1})
    svg = counts_svg(d)
    pts = _points(svg)
    assert all(len(p.split()) == n_points for p in pts.values())
    ys = lambda s: [float(p.split(",")[1]) for p in pts[s].split()]  # noqa: E731
    assert min(ys("definite")) < max(ys("definite"))  # tick 2's or 3's definite answer shows
    assert "quarantined (total 4)" in svg and "refuted (total 1)" in svg
