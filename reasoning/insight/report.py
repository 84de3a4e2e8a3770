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
ARRIVAL_ROWS = 60  # rows at most of the arrival-model table
LABEL_MAX_PX = 420  # widest label column of the timeline (longer labels end in "…")

COLORS = {"definite": "#1f6fb2", "hypothetical": "#e08214", "pending": "#8c8c8c",
          "refuted": "#c62828", "pending_refuted": "#ad1457", "quarantined": "#6a3d9a",
          CONFIRMED: "#2e7d32", REFUTED: "#c62828", OPEN: "#f2b01e"}
SERIES = ("definite", "hypothetical", "pending", "refuted", "pending_refuted", "quarantined")
SERIES_NAME = {"pending_refuted": "refuted while pending"}


def esc(x) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def text_width(s: str, px: float = 11) -> float:
    """A generous estimate of the width of `s` in the report's sans-serif at `px` (no font
    metrics offline: an average glyph is ~0.55 em; wide and non-ASCII ones count more)."""
    w = 0.0
    for c in s:
        w += (0.8 if c in "MW@%mw" or c.isupper() else 0.3 if c in " il.,;:|!'()[]{}"
              else 0.9 if ord(c) > 127 else 0.58)
    return w * px


def fit_text(s: str, width: float, px: float = 11) -> str:
    """`s` if it fits in `width` pixels, else its longest prefix that fits followed by "…"."""
    if text_width(s, px) <= width:
        return s
    lo, hi = 0, len(s)
    while lo < hi:  # the longest prefix p with p + "…" fitting
        mid = (lo + hi + 1) // 2
        if text_width(s[:mid] + "…", px) <= width:
            lo = mid
        else:
            hi = mid - 1
    return s[:lo].rstrip() + "…"


def _label(x: float, y: float, text: str, width: float, cls: str = "yl") -> str:
    """An SVG label that fits `width` pixels; a shortened one keeps the full text as its
    tooltip (a <title>)."""
    shown = fit_text(text, width)
    tip = "" if shown == text else f"<title>{esc(text)}</title>"
    return f'<text x="{x}" y="{y}" class="{cls}">{esc(shown)}{tip}</text>'


def _ylabel(x: float, y: float, text: str) -> str:
    """A vertical axis title, centred at (x, y)."""
    return (f'<text x="{x}" y="{y:.1f}" class="tl axt" transform="rotate(-90 {x} {y:.1f})">'
            f'{esc(text)}</text>')


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
    """The x axis from tick `start` to `end`: ticks at round steps, and `start` itself
    unless a round tick is closer to it than half a step (the axis says where it begins)."""
    out = [f'<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}" class="axis"/>']
    step = _nice_step(end + 1 - start)
    first = start - start % step + (step if start % step else 0)
    ticks = list(range(first, end + 1, step))
    if start not in ticks and (not ticks or ticks[0] - start >= step / 2):
        ticks.insert(0, start)
    for t in ticks:
        x = xof(t)
        out.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" class="axis"/>'
                   f'<text x="{x:.1f}" y="{y + 15}" class="tl">{t}</text>')
    return out


def counts_svg(d: ReportData) -> str:
    """Per-tick counts of definite, hypothetical, pending, refuted, refuted-while-pending
    answers and quarantined rows."""
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
        for s in SERIES[:5]:
            put(s, c.tick, getattr(c, s))
    for t, q in d.quarantined.items():
        put("quarantined", t, int(q))
    flat = [s for s in SERIES if not any(series[s])]
    legend = {s: SERIES_NAME.get(s, s) + (
        " (0 throughout)" if s in flat else f" (max {max(v)})"
        if s in ("definite", "hypothetical", "pending") else f" (total {total[s]})")
        for s, v in series.items()}
    W, H, L, T, B = 900, 270, 62, 12, 40
    R = int(max(160, 42 + max(text_width(t, 12) for t in legend.values())))
    Z = 8  # the zero line sits this far above the axis: a series at 0 is not hidden by it
    ymax = max([1] + [max(v) for v in series.values() if v])
    span = max(d.end + 1 - d.start, 1)

    def xof(t):
        return L + (t - d.start + 0.5) / span * (W - L - R)

    def yof(v):
        return T + (1 - v / ymax) * (H - T - B - Z)

    out = [f'<svg id="counts" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" role="img" aria-label="answers per tick">']
    ystep = _nice_step(ymax, 5)
    for v in range(0, ymax + 1, ystep):
        y = yof(v)
        out.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W - R}" y2="{y:.1f}" class="grid"/>'
                   f'<text x="{L - 6}" y="{y + 4:.1f}" class="yl">{v}</text>')
    out += _xaxis(L, W - R, H - B, d.start, d.end, xof)
    # series that are 0 at every tick would all lie on the zero line, one over the other:
    # each is drawn dashed on its own lane just around it, so every colour shows
    for i, s in enumerate(SERIES):
        name = SERIES_NAME.get(s, s)
        dy, dash = 0.0, ""
        if s in flat:
            dy = (flat.index(s) - (len(flat) - 1) / 2) * 2.5
            dash = ' stroke-dasharray="6,3"'
        pts = " ".join(f"{xof(t):.1f},{yof(v) + dy:.1f}" for t, v in zip(xs, series[s]))
        out.append(f'<polyline class="series" data-series="{s}" points="{pts}" fill="none" '
                   f'stroke="{COLORS[s]}" stroke-width="2"{dash}>'
                   f'<title>{esc(legend[s])}</title></polyline>')
        if len(xs) <= 60 and s not in flat:
            for t, v in zip(xs, series[s]):
                out.append(f'<circle cx="{xof(t):.1f}" cy="{yof(v) + dy:.1f}" r="2.5" '
                           f'fill="{COLORS[s]}"><title>tick {t}: {v} {esc(name)}</title></circle>')
        ly = T + 10 + i * 18
        out.append(f'<rect x="{W - R + 12}" y="{ly - 8}" width="12" height="4" '
                   f'fill="{COLORS[s]}"/><text x="{W - R + 30}" y="{ly - 3}" class="lg">'
                   f'{esc(legend[s])}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 4}" class="tl axt">tick</text>')
    out.append(_ylabel(14, (T + H - B) / 2, "answers (rows) per tick"))
    out.append("</svg>")
    return "\n".join(out)


def timeline_range(d: ReportData, chosen: list) -> tuple[int, int]:
    """The ticks the timeline's axis spans: from the first announcement drawn to the last
    decision (an open bar: the tick after the range) or deadline drawn, a tick at least
    past each announcement (a mark for an answer definite at once) — not the whole
    range of the report, where 80 bars of a few ticks would be squeezed to its left end."""
    lo = min(lc.first for lc in chosen)
    hi = max(max(lc.decided if lc.decided is not None else d.end + 1,
                 lc.deadline + 1 if lc.deadline is not None else 0, lc.first + 1) for lc in chosen)
    lo, hi = max(lo, d.start), min(hi, d.end + 1)
    return lo, max(hi, lo + 1)


def timeline_svg(d: ReportData, chosen: list) -> str:
    """One bar per answer from its announcement to its decision, coloured by outcome, with
    its deadline marked; the axis spans the bars drawn (timeline_range)."""
    W, row = 900, 14
    lo, hi = timeline_range(d, chosen)
    L = int(min(LABEL_MAX_PX, max(120, 30 + max(text_width(lc.label) for lc in chosen))))
    R = max(20, 4 * len(str(hi)))  # room for half of the last tick's label
    H = 54 + row * max(len(chosen), 1)
    span = hi - lo  # an open bar runs to end + 1

    def xof(t):
        return L + (min(max(t, lo), hi) - lo) / span * (W - L - R)

    out = [f'<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" role="img" aria-label="answer timeline">']
    out += _xaxis(L, W - R, H - 40, lo, hi, xof)
    for i, lc in enumerate(chosen):
        y = 8 + i * row
        end = lc.decided if lc.decided is not None else d.end + 1
        x0, x1 = xof(lc.first), xof(end)
        w = max(x1 - x0, 3)
        dl = "" if lc.deadline is None else f", deadline {lc.deadline}"
        dec = f"decided at {lc.decided}" if lc.decided is not None else "still open"
        tip = esc(f"{lc.label}: announced at {lc.first} ({lc.first_status}), {lc.outcome}, "
                  f"{dec}{dl}")
        out.append(_label(L - 6, y + 10, lc.label, L - 28)
                   + f'<rect class="bar {lc.outcome}" x="{x0:.1f}" y="{y + 2}" width="{w:.1f}" '
                   f'height="{row - 4}" fill="{COLORS[lc.outcome]}"><title>{tip}</title></rect>')
        if lc.deadline is not None:
            xd = xof(lc.deadline + 1)  # decided by the end of the deadline tick
            out.append(f'<line class="deadline" x1="{xd:.1f}" y1="{y}" x2="{xd:.1f}" '
                       f'y2="{y + row}" stroke="#222" stroke-width="1.5" '
                       f'stroke-dasharray="2,1"><title>deadline {lc.deadline}</title></line>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 8}" class="tl axt">tick (ticks {lo}..{hi}: '
               f'the bars drawn)</text>')
    out.append(_ylabel(10, (8 + H - 40) / 2, "answer"))
    out.append("</svg>")
    return "\n".join(out)


def gained_svg(values: list) -> str:
    """Histogram of ticks gained per confirmed answer (announced → definite)."""
    W, H, L, R, T, B = 600, 220, 62, 20, 12, 34
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
    out.append(f'<text x="{(W + L) / 2}" y="{H - 4}" class="tl axt">ticks gained (decided − '
               f'announced)</text>')
    out.append(_ylabel(14, (T + H - B) / 2, "confirmed answers"))
    out.append("</svg>")
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
    W, H, L, R, T, B = 330, 300, 58, 14, 12, 40
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
    out.append(f'<text x="{L + side / 2}" y="{H - 6}" class="tl axt">announced confidence'
               f'</text>')
    out.append(_ylabel(14, T + side / 2, "observed confirmation rate"))
    out.append("</svg>")
    return "\n".join(out)


def _confidence_section(d: ReportData) -> list:
    rows, brier = reliability(d.calibration or [])
    n = len(d.calibration or [])
    rate = sum(y for _, y in d.calibration) / n if n else 0.0
    base = rate * (1 - rate)
    yes = int(sum(y for _, y in d.calibration or []))
    shown = sum(c.hypothetical + c.pending for c in d.lifecycles.ticks)
    of = (f" of the {shown} hypothetical and pending answer-ticks plotted above (the others: "
          f"answers still open at the end)" if n <= shown else "")
    parts = ["<h2>Confidence</h2>",
             f'<p class=note>each announcement of a hypothetical or pending answer of the main '
             f'query — one per answer and tick it is shown — with its confidence (hypo run '
             f'--confidence, or a lake made with --confidence: docs/confidence.md) against its '
             f'outcome (confirmed: the same query and substitution became definite then or '
             f'later; announcements of answers still open are left out): '
             f'<span id="cal-n">{n}</span> announcement(s){of}: <span id="cal-yes">{yes}</span> '
             f'confirmed, <span id="cal-no">{n - yes}</span> not (announcements of the answers '
             f'counted above as refuted or refuted while pending; an answer whose exclusions '
             f'grew, X ∉ {{a}} → X ∉ {{a, b}}, before it became definite is confirmed here and '
             f'refuted above, as --changes shows it); observed rate {rate:.3f}, Brier score '
             f'<b id="brier">{brier:.4f}</b> (the constant base rate scores {base:.4f}); the '
             f'dashed diagonal is perfect calibration.</p>']
    if rows:
        parts.append(reliability_svg(rows))
        parts.append(_table(["confidence", "announcements", "mean confidence", "confirmed"],
                            [(f"{lo:.1f}–{lo + 0.1:.1f}", k, f"{m:.3f}", f"{o:.3f}")
                             for lo, k, m, o in rows], "reliability"))
    if d.arrival_model:
        am = d.arrival_model
        shown = am[:ARRIVAL_ROWS]
        more = (f"; showing the first {len(shown)} of {len(am)} rows" if len(am) > len(shown)
                else f" ({len(am)} rows)")
        parts.append(f'<p class=note id="arrival-note">the arrival model at the end of the run, '
                     f'per predicate (*) and #delay instance pattern{more}:</p>')
        parts.append(_table(["predicate", "pattern", "δ", "arrived", "expected atoms decided",
                             "of which arrived", "P(arrives)", "mean delay"],
                            [(r["pred"], r["pattern"], r["delta"], r["arrived"], r["expected"],
                              r["confirmed"], r["p_arrives"],
                              "" if r["mean_delay"] is None else r["mean_delay"])
                             for r in shown], "arrival"))
    return parts


# ---------------------------------------------------------------------- tables
def _table(head: list, rows: list, cls: str = "") -> str:
    h = "".join(f"<th>{esc(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>'


def _drop_empty_columns(head: list, rows: list, keep: int = 1) -> tuple[list, list]:
    """Without the columns (after the first `keep`) that are empty in every row."""
    cols = [i for i in range(len(head))
            if i < keep or any(r[i] not in ("", None) for r in rows)]
    return [head[i] for i in cols], [[r[i] for i in cols] for r in rows]


def _collapse_clean(rows: list) -> tuple[list, bool]:
    """Quality rows [tick, facts, accepted, quarantined, reasons, (checked, failed)] with each
    run of consecutive ticks that quarantined nothing and failed no expectation (all checked,
    or none) made one row ["a..b", facts summed, accepted summed, 0, "", (checked summed, 0),
    ""] — the same row repeated tick after tick; the number of ticks is the last column."""
    out: list = []  # [first, last, row]
    for r in rows:
        t, clean = r[0], not r[3] and not r[4] and not r[6]
        prev = out[-1] if out else None
        if (clean and prev is not None and prev[3] and isinstance(t, int)
                and t == prev[1] + 1 and (prev[2][5] is None) == (r[5] is None)):
            p = prev[2]
            prev[1] = t
            for i in (1, 2):
                if isinstance(p[i], int) and isinstance(r[i], int):
                    p[i] += r[i]
                else:
                    p[i] = ""
            p[5] = None if p[5] is None else [p[5][0] + r[5][0], 0]
        else:
            out.append([t, t, list(r), clean])
    merged = any(a != b for a, b, _, _ in out)
    return [[a if a == b else f"{a}..{b}"] + r[1:] + [b - a + 1] for a, b, r, _ in out], merged


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
td{overflow-wrap:anywhere;max-width:420px} table.slowest td:first-child{max-width:460px}
table.quality td{max-width:320px}
svg text{font-family:sans-serif;font-size:11px;fill:#222}
svg .tl{text-anchor:middle} svg .yl{text-anchor:end} svg .lg{font-size:12px}
svg .axis{stroke:#444} svg .grid{stroke:#e5e5e5} svg .axt{font-size:12px;fill:#444}
.kpi{margin:6px 0} .kpi span{display:inline-block;margin:0 4px} .kpi span.sep{margin-left:28px}
.sw{display:inline-block;width:10px;height:10px;margin-right:4px}
"""


def _kpi(key: str, label: str, n: int, color: Optional[str] = None) -> str:
    sw = "" if color is None else f'<i class="sw" style="background:{color}"></i>'
    return f'<span>{sw}{label}: <b id="kpi-{key}">{n}</b></span>'


def _header_counts(lcs, gained: list) -> str:
    """Every answer of the run counted once: the announced ones by outcome, and the pending
    ones never announced (gone while pending, or still pending) — so the header adds up,
    and matches the confidence section, which counts pending announcements too."""
    oc = lcs.outcomes()
    med = sorted(gained)[len(gained) // 2] if gained else None
    was_pending = sum(1 for lc in lcs.all if lc.pending_since is not None)
    n_pend = lcs.pending_refuted + lcs.pending_open
    line1 = ('<p class="kpi">' + _kpi("announced", "answers announced", len(lcs.all)) + " = "
             + " + ".join(_kpi(k, k, oc[k], COLORS[k]) for k in (CONFIRMED, REFUTED, OPEN))
             + (f'<span class="sep">median ticks gained: <b>{med}</b></span>'
                if med is not None else "")
             + "</p>")
    line2 = ('<p class="kpi">' + _kpi("never-announced", "pending answers never announced",
                                      n_pend) + " = "
             + _kpi("pending-refuted", "refuted while pending", lcs.pending_refuted,
                    COLORS["pending_refuted"]) + " + "
             + _kpi("pending-open", "still pending", lcs.pending_open, COLORS["pending"])
             + "</p>")
    note = (f'<p class=note>every answer of the main query counted once: announced (shown as '
            f'hypothetical or definite; {was_pending} of them were pending first) and decided '
            f'— confirmed: became definite; refuted: gone without becoming definite — or '
            f'still open; and pending answers (no evidence yet: not announced) that were gone '
            f'before being announced or are still pending at the end.  {len(lcs.all) + n_pend}'
            f' answer(s) in all.</p>')
    return line1 + line2 + note


def _slowest_section(d: ReportData, last: int) -> list:
    """The answers that took longest to be decided; none of them when none waited (all
    definite when first announced), and said so when the waits are all equal."""
    lcs = d.lifecycles
    waited = [lc for lc in lcs.all if lc.wait(last) > 0]
    parts = ["<h2>Slowest-deciding answers</h2>"]
    if not lcs.all:
        return parts + ["<p>no answer was announced</p>"]
    if not waited:
        return parts + [f'<p class=note id="slowest-none">every answer was definite when first '
                        f'announced ({len(lcs.all)} answer(s), 0 ticks waited each): no answer '
                        f'was slower than another.</p>']
    chosen = lcs.slowest(min(SLOWEST, len(waited)))
    waits = {lc.wait(last) for lc in waited}
    at_once = len(lcs.all) - len(waited)
    why = (f"the {len(chosen)} of {len(waited)} answer(s) that waited at least one tick "
           f"between announcement and decision (open ones: up to the end) that waited longest, "
           f"ties by announcement" if len(waited) > len(chosen) else
           f"all {len(waited)} answer(s) that waited at least one tick between announcement "
           f"and decision (open ones: up to the end), longest first")
    if len(waits) == 1 and len(waited) > len(chosen):
        why = (f"all {len(waited)} answer(s) that waited waited {waits.pop()} tick(s): the "
               f"first {len(chosen)} announced")
    if at_once:
        why += (f"; {at_once} answer(s) were definite when first announced (0 ticks) and are "
                f"not listed")
    conf = d.calibration is not None
    rows = [(lc.label, lc.first,
             lc.first_status + ("" if lc.pending_since is None
                                else f" (pending from {lc.pending_since})"),
             lc.outcome, "" if lc.decided is None else lc.decided, lc.wait(last),
             "" if lc.deadline is None else lc.deadline)
            + (() if not conf else ("" if lc.confidence is None else
                                    f"{lc.confidence:.3f}",)) for lc in chosen]
    head = ["answer", "announced", "as", "outcome", "decided", "ticks waited", "deadline"]
    if conf:
        head.append("confidence when announced")
        why += ("; confidence when announced: the answer's confidence at the tick it was "
                "first shown as hypothetical or definite (1 for definite)")
    parts.append(f'<p class=note id="slowest-note">{esc(why)}.</p>')
    parts.append(_table(head, rows, "slowest"))
    return parts


def _quality_section(d: ReportData) -> list:
    """Quarantined rows by reason (each reason once, with its counts), then per tick —
    consecutive clean ticks as one row, the columns empty at every tick left out."""
    parts = ["<h2>Quarantine and data quality</h2>"]
    if d.quality_note:
        parts.append(f"<p class=note>{esc(d.quality_note)}</p>")
    if not d.quality:
        return parts
    by: dict = {}  # reason -> [rows, ticks, first, last]
    for q in d.quality:
        for k, v in (q.get("reasons") or {}).items():
            e = by.setdefault(k, [0, 0, q["tick"], q["tick"]])
            e[0] += v
            e[1] += 1
            e[3] = q["tick"]
    if by:
        parts.append(_table(["reason", "rows quarantined", "ticks", "first tick", "last tick"],
                            [(k, *v) for k, v in sorted(by.items(), key=lambda kv: -kv[1][0])],
                            "reasons"))
    else:
        parts.append('<p class=note id="no-quarantine">no row was quarantined in this range.'
                     '</p>')
    raw = [[q["tick"], q.get("facts", ""), q.get("accepted", ""), q.get("quarantined", 0),
            "; ".join(f"{v} × {k}" for k, v in sorted((q.get("reasons") or {}).items())),
            None if q.get("dq_checked") is None else [q["dq_checked"],
                                                      len(q.get("dq_failed") or [])],
            "; ".join(q.get("dq_failed") or [])] for q in d.quality]
    qrows, merged = _collapse_clean(raw)
    for r in qrows:
        r[5] = "" if r[5] is None else f"{r[5][0] - r[5][1]}/{r[5][0]} passed"
    head = ["tick", "facts", "accepted", "quarantined", "reasons", "expectations",
            "failed expectations"] + (["ticks"] if merged else [])
    if not merged:
        qrows = [r[:-1] for r in qrows]
    head, qrows = _drop_empty_columns(head, qrows)
    qrows, note = _cap_rows(qrows, "rows")
    said = (f"<p class=note>per tick ({len(d.quality)} ticks"
            + ("; a run of consecutive ticks that quarantined nothing and failed no "
               "expectation is one row a..b, its counts summed, its number of ticks in the "
               "last column" if merged else "")
            + "; columns empty at every tick are left out):</p>")
    parts.append(said + note + _table(head, qrows, "quality"))
    return parts


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
    parts.append(_header_counts(lcs, gained))

    parts.append("<h2>Answers per tick</h2>")
    parts.append('<p class=note>definite, hypothetical and pending answers of the main query '
                 'at each tick; refuted: hypothetical answers gone at that tick without '
                 'becoming definite; refuted while pending: pending answers, never announced, '
                 'gone at that tick; quarantined: input rows refused for that tick.  A series '
                 'at 0 throughout is dashed, on a lane of its own along the zero line.</p>')
    parts.append(counts_svg(d))

    parts.append("<h2>Answer timeline</h2>")
    parts.append('<p class=note>one bar per answer over the ticks it was hypothetical, from '
                 'its first announcement to its decision (a confirmed answer is definite at '
                 'the tick its bar ends at; a refuted one is gone at that tick; an answer '
                 'definite at once is a thin mark): <i class="sw" style="background:%s"></i>'
                 'confirmed (became definite) <i class="sw" style="background:%s"></i>refuted '
                 '<i class="sw" style="background:%s"></i>still open; the dashed mark is the '
                 'deadline (decided by the end of that tick).  The axis spans the bars drawn; '
                 'a label too long for its column ends in "…" (the full answer is its '
                 'tooltip, and the bar\'s).</p>'
                 % (COLORS[CONFIRMED], COLORS[REFUTED], COLORS[OPEN]))
    if left:
        if not any(lc.wait(last) for lc in lcs.all):
            left += ("; every answer was definite when first announced, so the "
                     "“slowest” are simply the next ones announced")
        parts.append(f'<p class="note" id="left-out">{esc(left)}</p>')
    parts.append(timeline_svg(d, chosen) if chosen else "<p>no answer was announced</p>")

    parts.append("<h2>How early answers were announced</h2>")
    parts.append(f'<p class=note>per confirmed answer, the ticks between its first '
                 f'announcement (as a hypothetical answer) and the tick it became definite: '
                 f'how much sooner it was known than by waiting for certainty (0: definite at '
                 f'once). {len(gained)} confirmed answer(s), '
                 f'{sum(1 for g in gained if g > 0)} announced early, '
                 f'{sum(gained)} tick(s) gained in all; {oc[REFUTED]} hypothetical answer(s) '
                 f'were refuted, and {lcs.pending_refuted} pending answer(s) were refuted '
                 f'before being announced.</p>')
    parts.append(gained_svg(gained))

    parts.extend(_slowest_section(d, last))
    if d.calibration is not None:
        parts.extend(_confidence_section(d))

    parts.extend(_quality_section(d))

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
