"""The lifecycle report: one self-contained HTML file (inline SVG drawn here, inline CSS, no
script, no font, no request) for a range of ticks.

`render(ReportData) -> str`.  The data come from `hypo run --report` (reasoning/cli/main.py) or
from the lake (jobs/audit/report.py); this module only draws.  Every piece of user text (constants
can be arbitrary quoted strings, the program, file names, reasons) goes through `esc`.
"""
from __future__ import annotations

import datetime as _dt
import html
from dataclasses import dataclass, field
from typing import Optional

from reasoning.insight.lifecycle import CONFIRMED, OPEN, REFUTED, Lifecycles

TIMELINE_CAP = 80  # bars drawn at most (the first and the slowest; the rest are counted)
SLOWEST = 20  # rows of the slowest-deciding table
TABLE_TICKS = 200  # rows at most in the per-tick tables
PLOT_POINTS = 600  # points per series at most (larger ranges: per-bucket maximum)

COLORS = {"definite": "#1f6fb2", "hypothetical": "#e08214", "pending": "#8c8c8c",
          "refuted": "#c62828", "quarantined": "#6a3d9a",
          CONFIRMED: "#2e7d32", REFUTED: "#c62828", OPEN: "#f2b01e"}
SERIES = ("definite", "hypothetical", "pending", "refuted", "quarantined")


def esc(x) -> str:
    return html.escape("" if x is None else str(x), quote=True)


@dataclass
class ReportData:
    title: str
    source: str  # where the data come from (a lake directory, or the program and stream)
    start: int
    end: int
    lifecycles: Lifecycles
    quarantined: dict = field(default_factory=dict)  # tick -> rows quarantined
    quality: Optional[list] = None  # per tick: {tick, facts, accepted, quarantined,
    #                                  reasons: {code: n}, dq_checked, dq_failed: [str]}
    quality_note: str = ""  # why quality is missing or partial
    program_text: str = ""
    program_hash: str = ""
    program_file: str = ""
    query: str = ""
    versions: Optional[list] = None  # per tick: {tick, facts_version, state_version, …}
    current_versions: Optional[dict] = None  # table -> latest version
    notes: list = field(default_factory=list)
    calibration: Optional[list] = None  # (announced confidence, 1 confirmed | 0 refuted)
    first_confidence: Optional[dict] = None  # answer label -> confidence when announced
    arrival_model: Optional[list] = None  # confidence.ArrivalModel.summary()
    generated: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc)
                           .isoformat(timespec="seconds"))


# ---------------------------------------------------------------------- SVG pieces
def _nice_step(span: float, target: int = 8) -> int:
    raw = max(span / max(target, 1), 1)
    mag = 10 ** (len(str(int(raw))) - 1)
    for m in (1, 2, 5, 10):
        if m * mag >= raw:
            return int(m * mag)
    return int(10 * mag)


def _xaxis(x0, x1, y, start, end, xof) -> list[str]:
    out = [f'<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}" class="axis"/>']
    step = _nice_step(end + 1 - start)
    t = start - start % step if start % step else start
    while t <= end:
        if t >= start:
            x = xof(t)
            out.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" class="axis"/>'
                       f'<text x="{x:.1f}" y="{y + 15}" class="tl">{t}</text>')
        t += step
    return out


def counts_svg(d: ReportData) -> str:
    """Per-tick counts of definite, hypothetical, pending, refuted, quarantined."""
    # points: every tick, or over a long range the maximum of each bucket of ticks — built
    # from the ticks that have counts (a `hypo run --until 10¹²` skips quiet stretches: its
    # range is not walked tick by tick)
    n_ticks = max(d.end + 1 - d.start, 0)
    bucket = max(1, -(-n_ticks // PLOT_POINTS))
    xs = list(range(d.start, d.end + 1, bucket))
    series = {s: [0] * len(xs) for s in SERIES}
    total = {s: 0 for s in SERIES}

    def put(s: str, t: int, v: int) -> None:
        if d.start <= t <= d.end:
            i = (t - d.start) // bucket
            series[s][i] = max(series[s][i], v)
            total[s] += v

    for c in d.lifecycles.ticks:
        for s in SERIES[:4]:
            put(s, c.tick, getattr(c, s))
    for t, q in d.quarantined.items():
        put("quarantined", t, int(q))
    legend = {s: (f"total {total[s]}" if s in ("refuted", "quarantined") else
                  f"max {max(v, default=0)}") for s, v in series.items()}
    W, H, L, R, T, B = 900, 270, 50, 160, 12, 40
    ymax = max([1] + [max(v) for v in series.values() if v])
    span = max(d.end + 1 - d.start, 1)

    def xof(t):
        return L + (t - d.start + 0.5) / span * (W - L - R)

    def yof(v):
        return T + (1 - v / ymax) * (H - T - B)

    out = [f'<svg id="counts" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" role="img" aria-label="answers per tick">']
    ystep = _nice_step(ymax, 5)
    for v in range(0, ymax + 1, ystep):
        y = yof(v)
        out.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W - R}" y2="{y:.1f}" class="grid"/>'
                   f'<text x="{L - 6}" y="{y + 4:.1f}" class="yl">{v}</text>')
    out += _xaxis(L, W - R, H - B, d.start, d.end, xof)
    for i, s in enumerate(SERIES):
        pts = " ".join(f"{xof(t):.1f},{yof(v):.1f}" for t, v in zip(xs, series[s]))
        out.append(f'<polyline class="series" data-series="{s}" points="{pts}" fill="none" '
                   f'stroke="{COLORS[s]}" stroke-width="2"/>')
        if len(xs) <= 60:
            for t, v in zip(xs, series[s]):
                out.append(f'<circle cx="{xof(t):.1f}" cy="{yof(v):.1f}" r="2.5" '
                           f'fill="{COLORS[s]}"><title>tick {t}: {v} {s}</title></circle>')
        ly = T + 10 + i * 18
        out.append(f'<rect x="{W - R + 12}" y="{ly - 8}" width="12" height="4" '
                   f'fill="{COLORS[s]}"/><text x="{W - R + 30}" y="{ly - 3}" class="lg">'
                   f'{s} ({legend[s]})</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 4}" class="tl">tick</text>')
    out.append("</svg>")
    return "\n".join(out)


def timeline_svg(d: ReportData, chosen: list) -> str:
    """One bar per answer from its announcement to its decision, coloured by outcome, with
    its deadline marked."""
    W, L, row = 900, 260, 14
    R = max(20, 4 * len(str(d.end + 1)))  # room for half of the last tick's label
    H = 40 + row * max(len(chosen), 1)
    span = max(d.end + 2 - d.start, 1)  # an open bar runs to end + 1

    def xof(t):
        return L + (min(max(t, d.start), d.end + 1) - d.start) / span * (W - L - R)

    out = [f'<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" role="img" aria-label="answer timeline">']
    out += _xaxis(L, W - R, H - 25, d.start, d.end, xof)
    for i, lc in enumerate(chosen):
        y = 8 + i * row
        end = lc.decided if lc.decided is not None else d.end + 1
        x0, x1 = xof(lc.first), xof(end)
        w = max(x1 - x0, 3)
        label = lc.label if len(lc.label) <= 42 else lc.label[:41] + "…"
        dl = "" if lc.deadline is None else f", deadline {lc.deadline}"
        dec = f"decided at {lc.decided}" if lc.decided is not None else "still open"
        tip = esc(f"{lc.label}: announced at {lc.first} ({lc.first_status}), {lc.outcome}, "
                  f"{dec}{dl}")
        out.append(f'<text x="{L - 6}" y="{y + 10}" class="yl">{esc(label)}</text>'
                   f'<rect class="bar {lc.outcome}" x="{x0:.1f}" y="{y + 2}" width="{w:.1f}" '
                   f'height="{row - 4}" fill="{COLORS[lc.outcome]}"><title>{tip}</title></rect>')
        if lc.deadline is not None:
            xd = xof(lc.deadline + 1)  # decided by the end of the deadline tick
            out.append(f'<line class="deadline" x1="{xd:.1f}" y1="{y}" x2="{xd:.1f}" '
                       f'y2="{y + row}" stroke="#222" stroke-width="1.5" '
                       f'stroke-dasharray="2,1"><title>deadline {lc.deadline}</title></line>')
    out.append("</svg>")
    return "\n".join(out)


def gained_svg(values: list) -> str:
    """Histogram of ticks gained per confirmed answer (announced → definite)."""
    W, H, L, R, T, B = 600, 220, 50, 20, 12, 34
    top = max(values, default=0)
    nb = min(top + 1, 40)  # the last bin holds everything ≥ nb - 1
    bins = [0] * max(nb, 1)
    for v in values:
        bins[min(v, nb - 1)] += 1
    ymax = max(bins + [1])
    bw = min((W - L - R) / len(bins), 60)
    out = [f'<svg id="gained" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" role="img" aria-label="ticks gained histogram">']
    ystep = _nice_step(ymax, 4)
    for v in range(0, ymax + 1, ystep):
        y = T + (1 - v / ymax) * (H - T - B)
        out.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W - R}" y2="{y:.1f}" class="grid"/>'
                   f'<text x="{L - 6}" y="{y + 4:.1f}" class="yl">{v}</text>')
    for i, n in enumerate(bins):
        h = n / ymax * (H - T - B)
        x = L + i * bw
        lab = f"≥{i}" if i == len(bins) - 1 and top > i else str(i)
        out.append(f'<rect class="hbar" x="{x + 1:.1f}" y="{H - B - h:.1f}" width="{bw - 2:.1f}" '
                   f'height="{h:.1f}" fill="{COLORS[CONFIRMED]}"><title>{n} answer(s) gained '
                   f'{lab} tick(s)</title></rect>')
        if len(bins) <= 20 or i % 5 == 0:
            out.append(f'<text x="{x + bw / 2:.1f}" y="{H - B + 14}" class="tl">{lab}</text>')
    out.append(f'<text x="{(W + L) / 2}" y="{H - 4}" class="tl">ticks gained (decided − '
               f'announced)</text></svg>')
    return "\n".join(out)


def reliability(pairs: list, nbins: int = 10) -> tuple[list, float]:
    """Bins of announced confidence: (low, n, mean confidence, observed rate); Brier score."""
    bins: list = [[] for _ in range(nbins)]
    for c, y in pairs:
        bins[min(int(c * nbins), nbins - 1)].append((c, y))
    rows = [(i / nbins, len(b), sum(c for c, _ in b) / len(b), sum(y for _, y in b) / len(b))
            for i, b in enumerate(bins) if b]
    brier = sum((c - y) ** 2 for c, y in pairs) / len(pairs) if pairs else 0.0
    return rows, brier


def reliability_svg(rows: list) -> str:
    """Observed confirmation rate against announced confidence (the diagonal: calibrated)."""
    W, H, L, R, T, B = 320, 300, 44, 14, 12, 40
    side = min(W - L - R, H - T - B)
    nmax = max([n for _, n, _, _ in rows] + [1])

    def xy(c, o):
        return L + c * side, T + (1 - o) * side

    out = [f'<svg id="reliability" xmlns="http://www.w3.org/2000/svg" width="{W}" '
           f'height="{H}" viewBox="0 0 {W} {H}" role="img" aria-label="reliability plot">']
    for v in (0, 0.25, 0.5, 0.75, 1):
        x, y = xy(v, v)
        out.append(f'<line x1="{L}" y1="{y:.1f}" x2="{L + side}" y2="{y:.1f}" class="grid"/>'
                   f'<text x="{L - 6}" y="{y + 4:.1f}" class="yl">{v:g}</text>'
                   f'<text x="{x:.1f}" y="{T + side + 15}" class="tl">{v:g}</text>')
    x0, y0 = xy(0, 0)
    x1, y1 = xy(1, 1)
    out.append(f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y1}" stroke="#999" '
               f'stroke-dasharray="4,3"/>')
    pts = [xy(m, o) for _, _, m, o in rows]
    if len(pts) > 1:
        out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>'
                   % (COLORS["hypothetical"], " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)))
    for (lo, n, m, o), (x, y) in zip(rows, pts):
        r = 2.5 + 5 * (n / nmax) ** 0.5
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" fill="{COLORS["hypothetical"]}">'
                   f'<title>confidence {lo:.1f}–{lo + 0.1:.1f}: {n} announcement(s), mean '
                   f'{m:.3f}, confirmed {o:.3f}</title></circle>')
    out.append(f'<text x="{L + side / 2}" y="{H - 6}" class="tl">announced confidence '
               f'(observed rate on the y axis)</text></svg>')
    return "\n".join(out)


def _confidence_section(d: ReportData) -> list:
    rows, brier = reliability(d.calibration or [])
    n = len(d.calibration or [])
    rate = sum(y for _, y in d.calibration) / n if n else 0.0
    base = rate * (1 - rate)
    parts = ["<h2>Confidence</h2>",
             f'<p class=note>each announcement of a hypothetical or pending answer of the main '
             f'query with its confidence (hypo run --confidence, or a lake made with --confidence: '
             f'docs/confidence.md) against '
             f'its outcome (confirmed: the same query and substitution became definite; open '
             f'answers left out): {n} announcement(s), observed rate {rate:.3f}, Brier score '
             f'<b id="brier">{brier:.4f}</b> (the constant base rate scores {base:.4f}); the '
             f'dashed diagonal is perfect calibration.</p>']
    if rows:
        parts.append(reliability_svg(rows))
        parts.append(_table(["confidence", "announcements", "mean confidence", "confirmed"],
                            [(f"{lo:.1f}–{lo + 0.1:.1f}", k, f"{m:.3f}", f"{o:.3f}")
                             for lo, k, m, o in rows], "reliability"))
    if d.arrival_model:
        parts.append("<p class=note>the arrival model at the end of the run, per predicate "
                     "(*) and #delay instance pattern:</p>")
        parts.append(_table(["predicate", "pattern", "δ", "arrived", "expected atoms decided",
                             "of which arrived", "P(arrives)", "mean delay"],
                            [(r["pred"], r["pattern"], r["delta"], r["arrived"], r["expected"],
                              r["confirmed"], r["p_arrives"],
                              "" if r["mean_delay"] is None else r["mean_delay"])
                             for r in d.arrival_model[:60]], "arrival"))
    return parts


# ---------------------------------------------------------------------- tables
def _table(head: list, rows: list, cls: str = "") -> str:
    h = "".join(f"<th>{esc(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>'


def _cap_rows(rows: list, what: str) -> tuple[list, str]:
    if len(rows) <= TABLE_TICKS:
        return rows, ""
    return rows[-TABLE_TICKS:], (f"<p class=note>showing the last {TABLE_TICKS} of {len(rows)} "
                                 f"{esc(what)}</p>")


CSS = """
body{font-family:sans-serif;margin:24px;color:#222;max-width:1000px}
h1{font-size:22px} h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3} .note{color:#555;font-size:13px}
pre{background:#f7f7f7;padding:8px;font-size:12px;overflow:auto;max-height:400px}
svg text{font-family:sans-serif;font-size:11px;fill:#222}
svg .tl{text-anchor:middle} svg .yl{text-anchor:end} svg .lg{font-size:12px}
svg .axis{stroke:#444} svg .grid{stroke:#e5e5e5}
.kpi span{display:inline-block;margin-right:18px}
.sw{display:inline-block;width:10px;height:10px;margin-right:4px}
"""


def render(d: ReportData) -> str:
    lcs = d.lifecycles
    oc = lcs.outcomes()
    gained = lcs.gained()
    chosen, left = lcs.timeline(TIMELINE_CAP)
    last = lcs.last_tick if lcs.last_tick is not None else d.end
    parts = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
             "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
             "style-src 'unsafe-inline'; img-src data:\">",
             f"<title>{esc(d.title)}</title><style>{CSS}</style></head><body>",
             f"<h1>{esc(d.title)}</h1>",
             f'<p class=note>ticks {d.start}..{d.end} · {esc(d.source)} · query '
             f'<code>{esc(d.query)}</code> · generated {esc(d.generated)}</p>']
    for n in d.notes:
        parts.append(f"<p class=note>{esc(n)}</p>")
    med = sorted(gained)[len(gained) // 2] if gained else None
    parts.append(
        '<p class="kpi">' + "".join(
            f'<span><i class="sw" style="background:{COLORS[k]}"></i>{k}: <b>{oc[k]}</b></span>'
            for k in (CONFIRMED, REFUTED, OPEN))
        + f"<span>answers announced: <b>{len(lcs.all)}</b></span>"
        + (f"<span>median ticks gained: <b>{med}</b></span>" if med is not None else "")
        + "</p>")

    parts.append("<h2>Answers per tick</h2>")
    parts.append('<p class=note>definite, hypothetical and pending answers of the main query '
                 'at each tick; refuted: hypothetical answers gone at that tick without '
                 'becoming definite; quarantined: input rows refused for that tick.</p>')
    parts.append(counts_svg(d))

    parts.append("<h2>Answer timeline</h2>")
    parts.append('<p class=note>one bar per answer over the ticks it was hypothetical, from '
                 'its first announcement to its decision (a confirmed answer is definite at '
                 'the tick its bar ends at; a refuted one is gone at that tick): <i class="sw" style="background:%s"></i>confirmed (became '
                 'definite) <i class="sw" style="background:%s"></i>refuted '
                 '<i class="sw" style="background:%s"></i>still open; the dashed mark is the '
                 'deadline (decided by the end of that tick).</p>'
                 % (COLORS[CONFIRMED], COLORS[REFUTED], COLORS[OPEN]))
    if left:
        parts.append(f'<p class="note" id="left-out">{esc(left)}</p>')
    parts.append(timeline_svg(d, chosen) if chosen else "<p>no answer was announced</p>")

    parts.append("<h2>How early answers were announced</h2>")
    parts.append(f'<p class=note>per confirmed answer, the ticks between its first '
                 f'announcement (as a hypothetical answer) and the tick it became definite: '
                 f'how much sooner it was known than by waiting for certainty (0: definite at '
                 f'once). {len(gained)} confirmed answer(s), '
                 f'{sum(1 for g in gained if g > 0)} announced early, '
                 f'{sum(gained)} tick(s) gained in all; {oc[REFUTED]} hypothetical answer(s) '
                 f'were refuted.</p>')
    parts.append(gained_svg(gained))

    parts.append("<h2>Slowest-deciding answers</h2>")
    fc = d.first_confidence
    rows = [(lc.label, lc.first, lc.first_status, lc.outcome,
             "" if lc.decided is None else lc.decided, lc.wait(last),
             "" if lc.deadline is None else lc.deadline)
            + (() if fc is None else (fc.get(lc.label, ""),)) for lc in lcs.slowest(SLOWEST)]
    parts.append(_table(["answer", "announced", "as", "outcome", "decided", "ticks waited",
                         "deadline"] + ([] if fc is None else ["confidence (announced)"]),
                        rows, "slowest") if rows else "<p>none</p>")
    if d.calibration is not None:
        parts.extend(_confidence_section(d))

    parts.append("<h2>Quarantine and data quality</h2>")
    if d.quality_note:
        parts.append(f"<p class=note>{esc(d.quality_note)}</p>")
    if d.quality:
        qrows = [(q["tick"], q.get("facts", ""), q.get("accepted", ""), q.get("quarantined", 0),
                  ", ".join(f"{k} {v}" for k, v in sorted((q.get("reasons") or {}).items())),
                  "" if q.get("dq_checked") is None else
                  f"{q['dq_checked'] - len(q.get('dq_failed') or [])}/{q['dq_checked']} passed",
                  "; ".join(q.get("dq_failed") or [])) for q in d.quality]
        qrows, note = _cap_rows(qrows, "ticks")
        parts.append(note + _table(["tick", "facts", "accepted", "quarantined", "reasons",
                                    "expectations", "failed expectations"], qrows, "quality"))

    parts.append("<h2>Provenance</h2>")
    parts.append(f"<p>program <code>{esc(d.program_file)}</code> sha256 "
                 f"<code>{esc(d.program_hash)}</code></p>")
    if d.current_versions:
        parts.append("<p>lake table versions now: " + esc(", ".join(
            f"{k} v{v}" for k, v in d.current_versions.items())) + "</p>")
    if d.versions:
        cols = [c for c in ("facts_version", "prev_state_version", "state_version",
                            "answers_version", "quarantine_version") if any(c in v for v in
                                                                              d.versions)]
        vrows = [[v["tick"], v.get("run", "")] + [v.get(c, "") for c in cols]
                 for v in d.versions]
        vrows, note = _cap_rows(vrows, "ticks")
        parts.append("<p class=note>the table versions each tick was computed from and "
                     "committed (the ticks log):</p>" + note
                     + _table(["tick", "run"] + [c.replace("_version", "") for c in cols],
                              vrows, "versions"))
    if d.program_text:
        parts.append(f"<pre id=program>{esc(d.program_text)}</pre>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write(path: str, text: str) -> None:
    """Write the report atomically (reasoning/util/atomic.py)."""
    from reasoning.util.atomic import write_text

    try:
        write_text(path, text)
    except OSError as e:  # a full disk under an opened file has no file name: give it one
        raise OSError(e.errno, e.strerror, e.filename or path) from None
