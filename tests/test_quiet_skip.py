"""Quiet stretches cost O(margin), not O(gap) (issue 11.3): `hypo run` prints one line for a
stretch of ticks without facts in which nothing can be reported, and rebuilds S_τ before
the next slice by replaying a margin (session.quiet_margin).  Expanded back to one line
per tick, its output equals `--no-skip` on random programs with gaps, on both executors
and in every output mode."""
from __future__ import annotations

import io
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasoning.cli.main import _run, build_parser
from reasoning.language.compiler import compile_file, compile_program
from reasoning.row.engine import Engine
from reasoning.semantics.patterns import Fact
from reasoning.run.session import quiet_margin
from reasoning.stream.reader import StreamReader
from tests.gen import cases
from tests.helpers import ENGINES, EXAMPLES, budget

NEG = """#query Alert(X, T).
#delay Hot = 1.
#delay Ack = 2.
Alert(X, T) :- Hot(X, T), not Ack(X, T).
"""
MODES = {"jsonl": ["--format", "jsonl"], "changes": ["--format", "jsonl", "--changes"],
         "text": ["--format", "text"]}


def _hypo_run(cp, text: str, argv: list[str]) -> tuple[str, str]:
    args = build_parser().parse_args(["run", "p.tdl", "--stream", "s.jsonl", *argv])
    out, err = io.StringIO(), io.StringIO()
    _run(args, cp, StreamReader(io.StringIO(text), cp, "s.jsonl", None), out, err)
    return out.getvalue(), err.getvalue()


_TEXT_SKIP = re.compile(r"^ticks (\d+)\.\.(\d+): 0 fact\(s\), nothing to report")


def _expand(out: str) -> list[str]:
    """One line per tick again: the skip line becomes the lines `--no-skip` prints."""
    lines = []
    for line in out.splitlines():
        m = _TEXT_SKIP.match(line)
        if m:
            lines += [f"tick {t}: 0 fact(s)" for t in range(int(m[1]), int(m[2]) + 1)]
            continue
        if line.startswith("{") and '"through"' in line:
            o = json.loads(line)
            lines += [json.dumps({"tick": t, "query": o["query"], "status": "none"})
                      for t in range(o["tick"], o["through"] + 1)]
            continue
        lines.append(line)
    return lines


def _stream_text(stream: dict) -> str:
    return "".join(json.dumps({"tick": t, "fact": str(f)}) + "\n"
                   for t in sorted(stream) for f in stream[t])


def _with_gap(stream: dict, k: int, gap: int) -> dict:
    """Slices from tick k on move `gap` ticks later, with their facts' times."""
    out: dict = {}
    for t, fs in stream.items():
        for f in fs:
            if t < k:
                out.setdefault(t, []).append(f)
            elif f.time >= k:
                out.setdefault(t + gap, []).append(Fact(f.pred, f.args, f.time + gap))
    return out


def test_a_quiet_stretch_is_one_line_and_costs_the_margin_only():
    cp = compile_file(str(EXAMPLES / "malfunction.tdl"))
    m = quiet_margin(Engine(cp))
    assert m is not None
    stream = {0: [Fact("Temp", ("d1", "high"), 0)], 1: [Fact("Temp", ("d1", "high"), 1)],
              10 ** 9: [Fact("Temp", ("d1", "high"), 10 ** 9)]}
    for engine in ENGINES:
        out, err = _hypo_run(cp, _stream_text(stream), ["--format", "jsonl", "--engine",
                                                        engine])
        skip = [json.loads(l) for l in out.splitlines() if '"through"' in l]
        assert len(skip) == 1 and skip[0]["through"] == 10 ** 9 - m - 1, out
        assert len(out.splitlines()) < 4 * m + 20
        assert "processed ticks 0..1000000" in err, err


def test_a_program_that_reports_every_tick_is_not_skipped():
    """Wind turbines: OK(X, T) becomes definite at every tick (¬Shdn), so every tick prints."""
    cp = compile_file(str(EXAMPLES / "wind_turbines.tdl"))
    stream = {0: [Fact("Hot", ("wt1",), 0)], 300: [Fact("Hot", ("wt1",), 300)]}
    out, _ = _hypo_run(cp, _stream_text(stream), ["--format", "jsonl"])
    assert '"through"' not in out
    assert {json.loads(l)["tick"] for l in out.splitlines()} >= set(range(301))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mode", sorted(MODES))
def test_skipping_equals_no_skip_on_the_examples(engine, mode):
    for prog, stream in (
            ("malfunction.tdl", {0: [Fact("Temp", ("d1", "high"), 0)],
                                 1: [Fact("Temp", ("d1", "high"), 1)],
                                 60: [Fact("Temp", ("d1", "high"), 60)],
                                 61: [Fact("Temp", ("d1", "high"), 61)]}),
            (NEG, {0: [Fact("Hot", ("a",), 0)], 1: [Fact("Ack", ("a",), 0)],
                   2: [Fact("Hot", ("b",), 2)], 150: [Fact("Hot", ("a",), 150)]})):
        cp = (compile_program(prog, "neg.tdl") if prog == NEG
              else compile_file(str(EXAMPLES / prog)))
        text = _stream_text(stream)
        argv = MODES[mode] + ["--engine", engine]
        skipped, err1 = _hypo_run(cp, text, argv)
        every, err2 = _hypo_run(cp, text, argv + ["--no-skip"])
        assert _expand(skipped) == every.splitlines() and err1 == err2, prog
        if mode != "changes":
            assert len(skipped.splitlines()) < len(every.splitlines()) - 20, prog  # it skipped


def test_skipping_equals_no_skip_on_random_programs_with_gaps():
    """The row engine on random programs (the columnar executor restarts the same way and is
    compared on the examples above: its per-operation cost makes 200-tick runs slow)."""
    engine = "row"

    @settings(max_examples=budget(25, engine),
              deadline=None, suppress_health_check=list(HealthCheck))
    @given(cases(), st.integers(1, 4), st.integers(0, 5), st.sampled_from(sorted(MODES)))
    def check(case, k, extra, mode):
        cp = compile_program(case.text, "p.tdl")
        m = quiet_margin(Engine(cp))
        if m is None:
            return
        text = _stream_text(_with_gap(case.stream, k, 2 * m + 3 + extra))
        argv = MODES[mode] + ["--engine", engine]
        skipped, err1 = _hypo_run(cp, text, argv)
        every, err2 = _hypo_run(cp, text, argv + ["--no-skip"])
        assert _expand(skipped) == every.splitlines()
        assert err1 == err2

    check()
