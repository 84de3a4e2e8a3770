"""The lifecycle report in a real browser: Debian's headless chromium, driven over the DevTools
protocol on a pipe (--remote-debugging-pipe: JSON messages ending in NUL on fds 3 and 4), opens
the report of a small lake (local executor, no Spark) and of `hypo run --report`, and checks
that the plots are drawn, that the page made no request but its own file, logged no console
error, threw nothing and opened no dialog (a `<script>` in a constant stays text)."""
from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import tempfile
import time

import pytest

from lakehelp import hypo, write_program

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium); "
                             "the report's browser test needs a real headless browser")

BAD = "<script>alert(1)</script>"
STREAM = [
    {"tick": 0, "fact": "Hot(wt1, 0)"},
    {"tick": 0, "fact": f'Hot("{BAD}", 0)'},
    {"tick": 1, "fact": f'Hot("{BAD}", 1)'},
    {"tick": 1, "fact": "Nope(a, 1)"},  # quarantined: unknown predicate
    {"tick": 2, "fact": "Hot(wt1, 2)"},
    {"tick": 2, "fact": "Hot(wt2, 0)"},
    {"tick": 3, "fact": "Hot(wt1, 1)"},
    {"tick": 3, "fact": "Hot(wt3, 2)"},
]


def _onto_3_4(r: int, w: int) -> None:
    """In the child: r on fd 3, w on fd 4 (via fds ≥ 10, so neither clobbers the other)."""
    import fcntl

    a, b = fcntl.fcntl(r, fcntl.F_DUPFD, 10), fcntl.fcntl(w, fcntl.F_DUPFD, 10)
    os.dup2(a, 3)
    os.dup2(b, 4)


class DevTools:
    """A minimal DevTools-protocol client over chromium's --remote-debugging-pipe."""

    def __init__(self, user_dir: str):
        r3, w3 = os.pipe()  # we write commands, chromium reads fd 3
        r4, w4 = os.pipe()  # chromium writes fd 4, we read
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--disable-sync",
             "--disable-background-networking", "--disable-component-update",
             f"--user-data-dir={user_dir}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            # preexec_fn runs before the child closes the fds not kept: keep 3 and 4
            pass_fds=(3, 4, r3, w4), preexec_fn=lambda: _onto_3_4(r3, w4))
        os.close(r3)
        os.close(w4)
        self.w, self.r = w3, r4
        self.buf = b""
        self.next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 30) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        end = time.monotonic() + timeout
        while True:
            m = self._read(end - time.monotonic())
            if m is None:
                raise TimeoutError(f"no answer to {method}")
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method: str, timeout: float = 30) -> dict:
        end = time.monotonic() + timeout
        for e in self.events:
            if e.get("method") == method:
                return e
        while True:
            m = self._read(end - time.monotonic())
            if m is None:
                raise TimeoutError(f"no event {method}")
            self.events.append(m)
            if m.get("method") == method:
                return m

    def _read(self, timeout: float):
        while b"\0" not in self.buf:
            if timeout <= 0:
                return None
            ready, _, _ = select.select([self.r], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(self.r, 1 << 16)
            if not chunk:
                return None
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except Exception:  # noqa: BLE001 - closing anyway
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.w)
        os.close(self.r)


CHECK = """(() => {
  const q = s => document.querySelectorAll(s).length;
  return {
    counts_series: q('svg#counts polyline.series'),
    timeline_bars: q('svg#timeline rect.bar'),
    refuted_bars: q('svg#timeline rect.bar.refuted'),
    confirmed_bars: q('svg#timeline rect.bar.confirmed'),
    deadlines: q('svg#timeline line.deadline'),
    histogram_bars: q('svg#gained rect.hbar'),
    slowest_rows: q('table.slowest tbody tr'),
    reliability_points: q('svg#reliability circle'),
    quality_rows: q('table.quality tbody tr'),
    scripts: q('script'),
    counts_width: document.querySelector('svg#counts').getBoundingClientRect().width,
    // issue 44: no SVG text (labels, legends, axis titles) drawn outside its picture, no
    // table wider than the page's column, every axis titled
    texts_outside: [...document.querySelectorAll('svg text')].filter(t => {
      const s = t.ownerSVGElement.getBoundingClientRect(), b = t.getBoundingClientRect();
      return b.left < s.left - 1 || b.right > s.right + 1 || b.top < s.top - 1
             || b.bottom > s.bottom + 1;
    }).map(t => t.textContent),
    widest_table: Math.max(0, ...[...document.querySelectorAll('table')].map(
      t => t.getBoundingClientRect().width)),
    body_width: document.body.getBoundingClientRect().width,
    axis_titles: q('svg text.axt'),
    timeline_height: document.querySelector('svg#timeline').getBoundingClientRect().height,
    text: document.body.innerText,
  };
})()"""


def open_report(path: str) -> tuple[dict, dict]:
    """Load the file in headless chromium; (the page's measurements, what happened)."""
    url = "file://" + os.path.abspath(path)
    with tempfile.TemporaryDirectory() as ud:
        dt = DevTools(ud)
        try:
            tid = dt.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            sid = dt.send("Target.attachToTarget", {"targetId": tid, "flatten": True})["sessionId"]
            for m in ("Page.enable", "Runtime.enable", "Log.enable", "Network.enable"):
                dt.send(m, session=sid)
            dt.events.clear()
            dt.send("Page.navigate", {"url": url}, session=sid)
            dt.wait_event("Page.loadEventFired")
            time.sleep(0.3)  # late console messages or requests
            got = dt.send("Runtime.evaluate", {"expression": CHECK, "returnByValue": True},
                          session=sid)["result"]["value"]
            events = list(dt.events)
        finally:
            dt.close()
    requests = [e["params"]["request"]["url"] for e in events
                if e.get("method") == "Network.requestWillBeSent"]
    happened = {
        "requests": requests,
        "other_requests": [u for u in requests if u != url],
        "console_errors": [e["params"] for e in events
                           if (e.get("method") == "Runtime.consoleAPICalled"
                               and e["params"].get("type") in ("error", "warning", "assert"))
                           or (e.get("method") == "Log.entryAdded"
                               and e["params"]["entry"].get("level") in ("error", "warning"))],
        "exceptions": [e["params"] for e in events if e.get("method") == "Runtime.exceptionThrown"],
        "dialogs": [e["params"] for e in events
                    if e.get("method") == "Page.javascriptDialogOpening"],
    }
    return got, happened


def _stream(tmp) -> str:
    p = os.path.join(str(tmp), "s.jsonl")
    with open(p, "w", encoding="utf-8") as fh:
        for r in STREAM:
            fh.write(json.dumps(r) + "\n")
    return p


def _assert_clean(got: dict, happened: dict, path: str):
    assert happened["requests"], "the page's own load was not seen (DevTools events missing)"
    assert happened["other_requests"] == [], happened["other_requests"]
    assert happened["console_errors"] == [], happened["console_errors"]
    assert happened["exceptions"] == [] and happened["dialogs"] == []
    assert got["scripts"] == 0
    assert BAD in got["text"]  # shown as text
    assert got["counts_series"] == 6 and got["counts_width"] > 500
    assert got["texts_outside"] == [], got["texts_outside"]
    assert got["widest_table"] <= got["body_width"] + 1, (got["widest_table"], got["body_width"])
    assert got["axis_titles"] >= 6  # x and y of the counts, timeline and histogram
    assert got["timeline_bars"] >= 3 and got["timeline_height"] > 40
    assert got["refuted_bars"] >= 1 and got["confirmed_bars"] >= 1 and got["deadlines"] >= 1
    assert got["histogram_bars"] >= 1 and got["slowest_rows"] >= 3
    assert os.path.getsize(path) < 100_000


@pytest.fixture(scope="module")
def small_lake(tmp_path_factory):
    """The stream above through the lake (local executor, no Spark), ticks 0..7."""
    tmp = tmp_path_factory.mktemp("report")
    lake = str(tmp / "lake")
    prog = "examples/wind_turbines.tdl"
    mp = pytest.MonkeyPatch()
    mp.setenv("HYPO_LAKE_EXECUTOR", "local")
    try:
        assert hypo("lake", "--lake", lake, "init", "--program", prog, "--query",
                    "Shdn(X, T)")[0] == 0
        assert hypo("lake", "--lake", lake, "ingest", _stream(tmp))[0] == 0
        rc, out, err = hypo("lake", "--lake", lake, "run", "--from", "0", "--to", "7",
                            "--executor", "local")
        assert rc == 0, err
    finally:
        mp.undo()
    return {"lake": lake, "stream": _stream(tmp), "program": prog}


def test_lake_lifecycles_equal_hypo_runs(small_lake):
    """The lake reader (answer_key and atom columns) gives the lifecycles `hypo run`'s answer
    objects give (explain.answer_key, format_atom_answer)."""
    from collections import defaultdict

    from jobs.audit.report import lake_report
    from reasoning.insight.lifecycle import build

    rc, out, err = hypo("run", small_lake["program"], "--stream", small_lake["stream"],
                        "--query", "Shdn(X, T)", "--format", "jsonl", "--all", "--no-skip",
                        "--until", "7")
    by = defaultdict(list)
    for line in out.splitlines():
        o = json.loads(line)
        by[o["tick"]].append(o)
    ref = build(sorted(by.items()))
    got = lake_report(small_lake["lake"]).lifecycles
    fields = lambda lc: (lc.label, lc.first, lc.first_status, lc.decided, lc.outcome,  # noqa
                         lc.deadline)
    assert [fields(lc) for lc in got.all] == [fields(lc) for lc in ref.all]
    assert got.ticks == ref.ticks
    assert {lc.outcome for lc in got.all} == {"confirmed", "refuted"}


@needs_chromium
def test_lake_report_renders_offline_in_chromium(small_lake, tmp_path):
    lake = small_lake["lake"]
    path = str(tmp_path / "r.html")
    rc, out, err = hypo("lake", "--lake", lake, "report", "--out", path)
    assert rc == 0, err
    assert "report of ticks 0..7" in out and "refuted while pending" in out
    got, happened = open_report(path)
    _assert_clean(got, happened, path)
    # ticks 0, 1 (a row quarantined), 2..3 (nothing quarantined, the suite passed: one row,
    # counts summed), 4..7 (no facts, no suite)
    assert got["quality_rows"] == 4 and "1 × unknown_predicate" in got["text"]
    assert "9/9 passed" in got["text"] and "18/18 passed" in got["text"]  # GX per slice
    assert "Shdn(X, T+1) :- Cool(X, T), Flag(X, T+1)." in got["text"]  # the program


@needs_chromium
def test_hypo_run_report_renders_offline_in_chromium(tmp_path):
    path = str(tmp_path / "run.html")
    prog = write_program(tmp_path, open("examples/wind_turbines.tdl").read())
    rc, out, err = hypo("run", prog, "--stream", _stream(tmp_path), "--query", "Shdn(X, T)",
                        "--format", "jsonl", "--changes", "--report", path)
    assert rc == 1 and "unknown predicate" in err  # Nope(a, 1) rejected
    got, happened = open_report(path)
    _assert_clean(got, happened, path)
    assert "unknown predicate" in got["text"]


@needs_chromium
def test_hypo_run_confidence_report_renders_offline_in_chromium(tmp_path):
    """--report with --confidence: the reliability plot, the Brier score, the arrival model."""
    path = str(tmp_path / "conf.html")
    prog = write_program(tmp_path, open("examples/wind_turbines.tdl").read())
    rc, out, err = hypo("run", prog, "--stream", _stream(tmp_path), "--query", "Shdn(X, T)",
                        "--format", "jsonl", "--confidence", "--report", path)
    assert rc == 1
    got, happened = open_report(path)
    _assert_clean(got, happened, path)
    assert got["reliability_points"] > 0
    assert "Brier score" in got["text"] and "P(arrives)" in got["text"]
    assert "confidence when announced" in got["text"]
