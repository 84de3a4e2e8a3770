"""Issue 44, "the report, as an operator sees it": the lifecycle report's defects found in
headless Chromium at 200 turbines × 100 ticks, one regression test each (the HTML and the
data, not the look: tests/test_report_browser.py opens it in a real browser)."""
from __future__ import annotations

import html as _html
import re

from reasoning.insight.lifecycle import CONFIRMED, OPEN, REFUTED, build
from reasoning.insight.report import (ARRIVAL_ROWS, LABEL_MAX_PX, ReportData, counts_svg,
                                      fit_text, gained_svg, reliability_svg, render,
                                      text_width, timeline_range, timeline_svg)

Q = "OK(X, T)"


def ans(x, t, status, deadline=None, confidence=None, excluded=None):
    o = {"tick": 0, "query": Q, "status": status, "substitution": {"X": x, "T": t},
         "excluded": excluded or {}, "evidence": [],
         "hypotheses": [] if status == "definite" else [f"not Shdn({x}, {t + 1})"],
         "deadline": deadline}
    if confidence is not None:
        o["confidence"] = confidence
    return o


def data(lcs, end=None, **kw):
    return ReportData(title="t", source="s", start=0,
                      end=lcs.last_tick if end is None else end, lifecycles=lcs, query=Q, **kw)


def section(html: str, title: str) -> str:
    """The HTML from <h2>title</h2> to the next <h2>."""
    a = html.index(f"<h2>{title}</h2>")
    b = html.find("<h2>", a + 4)
    return html[a:b if b >= 0 else len(html)]


def kpi(html: str, key: str) -> int:
    return int(re.search(rf'id="kpi-{key}">(\d+)<', html).group(1))


# ------------------------------------------------------------------ 1. arrival-model rows
def _arrival(n):
    return [{"pred": "Hot", "pattern": f"Hot(d{i:03d}, T)", "delta": 1, "arrived": 5,
             "expected": 6, "confirmed": 5, "p_arrives": 0.8, "mean_delay": 0.5}
            for i in range(n)]


def test_the_arrival_model_table_says_how_many_rows_it_shows():
    lcs = build([(0, [ans("a", 0, "hypothetical", 1)]), (1, [ans("a", 0, "definite")])])
    out = render(data(lcs, calibration=[(0.5, 1.0)], arrival_model=_arrival(131)))
    conf = section(out, "Confidence")
    assert "showing the first 60 of 131 rows" in conf
    table = conf[conf.index('<table class="arrival">'):]
    assert table.count("<tr>") == 1 + ARRIVAL_ROWS  # the head and 60 rows
    out = render(data(lcs, calibration=[(0.5, 1.0)], arrival_model=_arrival(7)))
    assert "(7 rows)" in section(out, "Confidence") and "showing" not in section(out,
                                                                                   "Confidence")


# ------------------------------------------------------------------ 2. header counts
def pending_sequence():
    """p: pending, gone at 2 (never announced: refuted while pending); q: pending at 0,
    hypothetical at 1, definite at 2 (announced, pending first); r: pending, definite at 1
    (definite when announced); s: pending throughout (still pending); h: hypothetical,
    refuted at 2; o: hypothetical, open."""
    return [
        (0, [ans("p", 0, "pending", confidence=0.4), ans("q", 0, "pending", confidence=0.6),
             ans("r", 0, "pending", confidence=0.891), ans("s", 0, "pending", confidence=0.5)]),
        (1, [ans("p", 0, "pending", confidence=0.4), ans("q", 0, "hypothetical", 2, 0.7),
             ans("r", 0, "definite", confidence=1.0), ans("s", 0, "pending", confidence=0.5),
             ans("h", 1, "hypothetical", 3, 0.3), ans("o", 1, "hypothetical", 9, 0.2)]),
        (2, [ans("q", 0, "definite", confidence=1.0), ans("s", 0, "pending", confidence=0.5),
             ans("o", 1, "hypothetical", 9, 0.2)]),
        (3, [ans("s", 0, "pending", confidence=0.5), ans("o", 1, "pending", 9, 0.2)]),
    ]


def test_pending_answers_gone_without_being_announced_are_counted():
    lcs = build(pending_sequence())
    assert lcs.outcomes() == {CONFIRMED: 2, REFUTED: 1, OPEN: 1}  # q, r; h; o
    assert lcs.pending_refuted == 1 and lcs.pending_open == 1  # p; s
    assert [c.pending_refuted for c in lcs.ticks] == [0, 0, 1, 0]
    by = {lc.label: lc for lc in lcs.all}
    assert by["OK(q, 0)"].pending_since == 0 and by["OK(r, 0)"].pending_since == 0
    assert by["OK(h, 1)"].pending_since is None


def test_the_header_counts_add_up_and_name_answers_refuted_while_pending():
    lcs = build(pending_sequence())
    out = render(data(lcs))
    announced = kpi(out, "announced")
    assert announced == len(lcs.all) == 4
    assert announced == kpi(out, CONFIRMED) + kpi(out, REFUTED) + kpi(out, OPEN)
    assert (kpi(out, CONFIRMED), kpi(out, REFUTED), kpi(out, OPEN)) == (2, 1, 1)
    never = kpi(out, "never-announced")
    assert never == kpi(out, "pending-refuted") + kpi(out, "pending-open") == 2
    assert "refuted while pending" in out and "6 answer(s) in all" in out
    assert "2 of them were pending first" in out
    svg = counts_svg(data(lcs))  # and per tick, in the plot
    assert "refuted while pending (total 1)" in svg


def test_the_confidence_section_reconciles_with_the_header():
    """The operator's report: "refuted 0" next to an observed rate of 0.823 — the
    unconfirmed announcements were pending answers' ticks, now counted in the header; the
    section says what an announcement is and splits them."""
    from reasoning.insight.lifecycle import Calibration

    seq = pending_sequence()
    cal = Calibration()
    for t, objs in seq:
        for o in objs:
            cal.observe(t, (o["query"], o["substitution"]["X"]), o["status"], o["confidence"])
    lcs = build(seq)
    d = data(lcs, calibration=cal.records(3))
    out = render(d)
    conf = section(out, "Confidence")
    n = int(re.search(r'id="cal-n">(\d+)<', conf).group(1))
    yes = int(re.search(r'id="cal-yes">(\d+)<', conf).group(1))
    no = int(re.search(r'id="cal-no">(\d+)<', conf).group(1))
    assert n == len(d.calibration) == 6  # p ×2, q ×2, r, h (decided); s, o: open
    assert (yes, no) == (3, 3)  # q ×2, r; p ×2 (refuted while pending), h (refuted)
    plotted = sum(c.hypothetical + c.pending for c in lcs.ticks)
    assert f"of the {plotted} hypothetical and pending answer-ticks" in conf
    assert "one per answer and tick" in conf and "refuted while pending" in conf
    # the header names where the unconfirmed ones are
    assert kpi(out, REFUTED) + kpi(out, "pending-refuted") > 0


# ------------------------------------------------------------------ 3. confidence column
def test_an_answer_announced_definite_shows_confidence_1():
    """r was pending with confidence 0.891, then definite at once: announced definite, its
    confidence when announced is 1 — not the 0.891 it had while pending (not announced)."""
    lcs = build(pending_sequence())
    by = {lc.label: lc for lc in lcs.all}
    assert by["OK(r, 0)"].first_status == "definite" and by["OK(r, 0)"].confidence == 1.0
    assert by["OK(q, 0)"].confidence == 0.7  # hypothetical at 1, not the 0.6 of tick 0
    out = render(data(lcs, calibration=[(0.7, 1.0)]))
    slow = section(out, "Slowest-deciding answers")
    assert "confidence when announced" in slow
    rows = re.findall(r"<tr>(.*?)</tr>", slow[slow.index("<tbody>"):])
    cells = [re.findall(r"<td>(.*?)</td>", r) for r in rows]
    for c in cells:
        if c[2].startswith("definite"):
            assert c[-1] == "1.000"
    q = next(c for c in cells if c[0] == "OK(q, 0)")
    assert q[2] == "hypothetical (pending from 0)" and q[-1] == "0.700"
    assert "0.891" not in out


def test_hypo_run_report_confidence_of_definite_answers_is_1(tmp_path):
    """End to end: `hypo run --confidence --report` on generated turbines; every answer
    announced definite shows 1.000, and the header adds up."""
    from jobs.ingest.generate import turbine_program, turbine_stream, write_jsonl
    from lakehelp import hypo, write_program

    delays, rows = turbine_stream(6, 25, seed=5)
    prog = write_program(tmp_path, turbine_program(delays))
    stream = str(tmp_path / "s.jsonl")
    write_jsonl(rows, stream)
    path = str(tmp_path / "r.html")
    rc, out, err = hypo("run", prog, "--stream", stream, "--format", "jsonl", "--confidence",
                        "--report", path)
    assert rc == 0, err
    page = open(path, encoding="utf-8").read()
    assert kpi(page, "announced") == kpi(page, CONFIRMED) + kpi(page, REFUTED) + kpi(page, OPEN)
    assert kpi(page, "never-announced") == (kpi(page, "pending-refuted")
                                            + kpi(page, "pending-open"))
    slow = section(page, "Slowest-deciding answers")
    for r in re.findall(r"<tr>(.*?)</tr>", slow):
        c = re.findall(r"<td>(.*?)</td>", r)
        if c and c[2].startswith("definite"):
            assert c[-1] == "1.000", c


# ------------------------------------------------------------------ 4. timeline axis
def _ticks_of(svg: str) -> list[int]:
    return [int(v) for v in re.findall(r'class="tl">(\d+)</text>', svg)]


def test_the_timeline_axis_fits_the_bars_drawn():
    """80 answers definite at once within ticks 0..11 of a 0..107 report: the axis spans
    the bars, not the whole range (the bars were squeezed into its first tenth)."""
    seq = [(t, [ans(f"d{i}", t, "definite") for i in range(8)]) for t in range(10)]
    lcs = build(seq)
    d = data(lcs, end=107)
    chosen, _ = lcs.timeline(80)
    lo, hi = timeline_range(d, chosen)
    assert (lo, hi) == (0, 9 + 1)
    svg = timeline_svg(d, chosen)
    assert max(_ticks_of(svg)) <= hi and 100 not in _ticks_of(svg)
    xs = [float(x) for x in re.findall(r'<rect class="bar \w+" x="([\d.]+)"', svg)]
    assert max(xs) - min(xs) > 500  # the bars spread over the plot's width (900 px)
    # an open answer's bar still runs to the end of the report
    lcs2 = build([(0, [ans("a", 0, "hypothetical", 50)]), (107, [ans("a", 0, "hypothetical",
                                                                     50)])])
    assert timeline_range(data(lcs2), lcs2.all) == (0, 108)


# ------------------------------------------------------------------ 5. slowest table
def test_slowest_says_every_answer_was_definite_at_once_instead_of_a_top_20():
    seq = [(t, [ans(f"d{i}", t, "definite") for i in range(30)]) for t in range(3)]
    out = render(data(build(seq)))
    slow = section(out, "Slowest-deciding answers")
    assert "every answer was definite when first announced" in slow
    assert 'class="slowest"' not in slow
    assert "every answer was definite when first announced" in out[out.index('id="left-out"'):]


def test_slowest_lists_only_answers_that_waited_and_says_how_many_did_not():
    seq = [(0, [ans("w1", 0, "hypothetical", 2), ans("w2", 0, "hypothetical", 3)]
            + [ans(f"d{i}", 0, "definite") for i in range(30)]),
           (1, [ans("w1", 0, "hypothetical", 2), ans("w2", 0, "hypothetical", 3)]),
           (2, [ans("w1", 0, "definite"), ans("w2", 0, "hypothetical", 3)])]
    slow = section(render(data(build(seq))), "Slowest-deciding answers")
    assert slow.count("<tr>") == 1 + 2  # the head, w2 (open: 3 ticks), w1 (2 ticks)
    assert slow.index("OK(w2, 0)") < slow.index("OK(w1, 0)")
    assert "30 answer(s) were definite when first announced" in slow


def test_slowest_says_when_every_wait_is_the_same():
    seq = [(0, [ans(f"d{i}", 0, "hypothetical", 1) for i in range(30)]),
           (1, [ans(f"d{i}", 0, "definite") for i in range(30)])]
    slow = section(render(data(build(seq))), "Slowest-deciding answers")
    assert "all 30 answer(s) that waited waited 1 tick(s): the first 20 announced" in slow


# ------------------------------------------------------------------ 6. series at 0
def test_series_at_zero_throughout_are_drawn_visibly():
    lcs = build([(t, [ans("a", t, "definite")]) for t in range(5)])
    svg = counts_svg(data(lcs))
    lines = dict(re.findall(r'<polyline class="series" data-series="(\w+)" points="([^"]*)"',
                            svg))
    assert len(lines) == 6
    flat = ["hypothetical", "pending", "refuted", "pending_refuted", "quarantined"]
    ys = {s: {float(p.split(",")[1]) for p in lines[s].split()} for s in flat}
    assert all(len(v) == 1 for v in ys.values())
    assert len({v.pop() for v in ys.values()}) == len(flat)  # each on a lane of its own
    axis_y = float(re.search(r'<line x1="[\d.]+" y1="([\d.]+)" x2="[\d.]+" y2="\1" '
                             r'class="axis"/>', svg).group(1))
    for s in flat:
        assert re.search(rf'data-series="{s}" points="[^"]*" fill="none" stroke="[^"]*" '
                         rf'stroke-width="2" stroke-dasharray', svg)
        assert all(float(p.split(",")[1]) < axis_y for p in lines[s].split())  # not under it
    assert svg.count("(0 throughout)") == 2 * len(flat)  # legend and tooltip


# ------------------------------------------------------------------ 7. axis labels
def test_every_axis_is_labelled():
    lcs = build(pending_sequence())
    d = data(lcs)
    chosen, _ = lcs.timeline(80)
    for svg, x, y in [(counts_svg(d), "tick", "answers (rows) per tick"),
                      (timeline_svg(d, chosen), "tick (ticks", "answer"),
                      (gained_svg([0, 1, 1, 3]), "ticks gained", "confirmed answers"),
                      (reliability_svg([(0.5, 3, 0.55, 0.6)]), "announced confidence",
                       "observed confirmation rate")]:
        titles = re.findall(r'<text [^>]*class="tl axt"[^>]*>([^<]*)</text>', svg)
        assert len(titles) == 2, titles
        assert titles[0].startswith(x) and titles[1] == y
        assert 'transform="rotate(-90' in svg


# ------------------------------------------------------------------ 8. long labels
def test_labels_that_fit_are_whole_and_long_ones_keep_the_full_answer_as_tooltip():
    devs = [f"d{i:03d}" for i in range(60)]
    long_ex = {"X": devs}
    medium = {"X": devs[:5]}  # 'OK(X, 1) for X ∉ {d000, …, d004}': 44 characters
    bad = "<script>alert(1)</script>" * 4
    seq = [(0, [ans("X", 1, "hypothetical", 2, excluded=long_ex),
                ans("X", 2, "hypothetical", 2, excluded=medium),
                ans(bad, 0, "hypothetical", 2)])]
    for o in seq[0][1][:2]:
        del o["substitution"]["X"]
    lcs = build(seq)
    labels = [lc.label for lc in lcs.all]
    assert len(labels[1]) > 42
    svg = timeline_svg(data(lcs), lcs.all)
    texts = re.findall(r'<text x="[\d.]+" y="[\d.]+" class="yl">(.*?)</text>', svg)
    assert len(texts) == 3
    shown_long, shown_medium, shown_bad = texts
    assert shown_medium == _html.escape(labels[1])  # fits: whole, no tooltip
    for shown, full in ((shown_long, labels[0]), (shown_bad, labels[2])):
        assert "…<title>" in shown and shown.endswith(f"<title>{_html.escape(full)}</title>")
    assert "<script" not in svg
    # the label column grows to the widest label, up to LABEL_MAX_PX
    assert text_width(fit_text(labels[0], 300)) <= 300 < text_width(labels[0])


# ------------------------------------------------------------------ 9. quarantine table
def test_the_quarantine_table_drops_empty_columns_and_collapses_repeated_rows():
    reason = "expected a time term (natural number, variable, or T+k) as the last argument"
    quality = ([{"tick": 0, "facts": 5, "accepted": 3, "quarantined": 2,
                 "reasons": {reason: 1, "late": 1}}]
               + [{"tick": t, "facts": 4, "accepted": 4, "quarantined": 0, "reasons": {}}
                  for t in range(1, 60)]
               + [{"tick": 60, "facts": 2, "accepted": 1, "quarantined": 1,
                   "reasons": {reason: 1}}])
    lcs = build([(0, [ans("a", 0, "definite")])])
    q = section(render(data(lcs, end=60, quality=quality)), "Quarantine and data quality")
    table = q[q.index('<table class="quality">'):]
    head = re.findall(r"<th>(.*?)</th>", table)
    assert head == ["tick", "facts", "accepted", "quarantined", "reasons", "ticks"]
    rows = [re.findall(r"<td>(.*?)</td>", r) for r in re.findall(r"<tr>(.*?)</tr>", table)][1:]
    assert [r[0] for r in rows] == ["0", "1..59", "60"]
    assert rows[1][1:4] == ["236", "236", "0"] and rows[1][-1] == "59"
    reasons = q[q.index('<table class="reasons">'):q.index('<table class="quality">')]
    assert reasons.count(_html.escape(reason)) == 1  # once, with its counts
    assert re.search(r"<td>2</td><td>2</td><td>0</td><td>60</td>", reasons)


def test_the_lake_quality_table_keeps_its_expectations():
    quality = [{"tick": t, "facts": 1, "accepted": 1, "quarantined": 0, "reasons": {},
                "dq_checked": 9, "dq_failed": []} for t in range(3)]
    lcs = build([(0, [ans("a", 0, "definite")])])
    q = section(render(data(lcs, end=2, quality=quality)), "Quarantine and data quality")
    assert "27/27 passed" in q and "no row was quarantined" in q
    head = re.findall(r"<th>(.*?)</th>", q)
    assert "expectations" in head and "failed expectations" not in head and "reasons" not in head


def test_tables_wrap_long_text():
    out = render(data(build([(0, [ans("a", 0, "definite")])])))
    assert "overflow-wrap:anywhere" in out and "max-width" in out


def test_reason_head_is_the_reason_before_its_details():
    from reasoning.run.runreport import reason_head

    assert reason_head("late: arrived at tick 13 but δ(Hot(…)) = 3") == "late"
    assert (reason_head("unknown predicate Nope (EDB predicates: Hot)")
            == "unknown predicate Nope (EDB predicates: Hot)")
    long = reason_head("expected a time term (natural number, variable, or T+k) as the last "
                       "argument of temporal predicate Hot/3 at column 14")
    assert len(long) <= 81 and long.endswith("…") and not long.endswith(" …")


def test_the_x_axis_says_where_it_begins():
    from reasoning.insight.report import _xaxis

    def labels(start, end):
        return [int(v) for v in re.findall(r'class="tl">(\d+)</text>',
                                           "".join(_xaxis(0, 500, 10, start, end, float)))]

    assert labels(1, 49) == [1, 10, 20, 30, 40]  # was 10..40: where does it begin?
    assert labels(0, 107) == [0, 20, 40, 60, 80, 100]
    assert labels(9, 49)[:2] == [10, 20]  # 9 and 10 would overlap: the round one only
