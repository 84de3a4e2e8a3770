"""The Python API (reasoning/api.py, docs/api.md): the documented example runs, and the
API's answers equal `hypo run --format jsonl`'s at every tick on every executor."""
from __future__ import annotations

import contextlib
import io
import json
import re
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pytest

import reasoning
from reasoning import ProgramError, Reasoner, compile_file, compile_program
from reasoning.cli.main import main as hypo

ROOT = Path(__file__).resolve().parent.parent


def _jsonl_by_tick(argv) -> tuple[dict[int, list[dict]], int]:
    """hypo run's answers by tick, and how many stream lines it rejected."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = hypo(argv)
    rejected = sum(": rejected (tick" in x for x in err.getvalue().splitlines())
    assert rc == (1 if rejected else 0)
    by = defaultdict(list)
    for line in out.getvalue().splitlines():
        o = json.loads(line)
        if o.get("status") != "none":
            by[o["tick"]].append(o)
    return by, rejected


def test_the_documented_example_runs(capsys):
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "docs/api.md", "exec"), {})
    out = capsys.readouterr().out
    assert "bad.tdl:1:" in out and "error:" in out


@pytest.mark.parametrize("executor", ["row", "columnar", "auto"])
@pytest.mark.parametrize("name", ["wind_turbines", "windows", "calendar"])
def test_answers_equal_hypo_run(name, executor):
    prog, stream = ROOT / "examples" / f"{name}.tdl", ROOT / "examples" / f"{name}.jsonl"
    want, rejected = _jsonl_by_tick(["run", str(prog), "--stream", str(stream), "--format", "jsonl",
                           "--engine", executor, "--all-queries"])
    by_tick = defaultdict(list)
    for line in stream.read_text().splitlines():
        o = json.loads(line)
        by_tick[o["tick"]].append(o["fact"])
    r = Reasoner(compile_file(str(prog)), executor=executor, all_queries=True)
    refused = 0
    for tau in range(max(want) + 1):
        t = r.feed(by_tick.get(tau, []), tick=tau)
        refused += len(t.rejected)
        assert t.answers == want.get(tau, []), tau
    assert refused == rejected


def test_facts_in_every_form_and_refusals():
    cp = compile_file(str(ROOT / "examples" / "wind_turbines.tdl"))
    texts, tuples, arrow = (Reasoner(cp) for _ in range(3))
    a = texts.feed(["Hot(wt1, 0)", "Hot(wt2, 0)"])
    b = tuples.feed([("Hot", ("wt1",), 0), {"pred": "Hot", "args": ["wt2"], "time": 0}])
    c = arrow.feed(pa.table({"pred": ["Hot", "Hot"], "args": [["wt1"], ["wt2"]],
                             "time": [0, 0]}))
    assert a.answers == b.answers == c.answers and a.accepted == b.accepted == c.accepted == 2
    d = Reasoner(cp).feed(pa.table({"fact": ["Hot(wt1, 0)", "Hot(wt1, 5)", "Hot(wt1"]}))
    assert d.accepted == 1 and len(d.rejected) == 2
    assert "after its arrival tick 0" in d.rejected[0].reason
    late = Reasoner(cp)
    late.feed([], tick=4)
    t = late.feed(["Hot(wt1, 0)"])  # δ(wt1) = 2: due by tick 2
    assert t.tick == 5 and t.accepted == 0 and "late" in t.rejected[0].reason
    with pytest.raises(ValueError, match="after the last tick fed"):
        late.feed([], tick=5)
    with pytest.raises(TypeError):
        late.feed("Hot(wt1, 6)")


def test_arrow_answers_and_errors():
    r = Reasoner(compile_file(str(ROOT / "examples" / "wind_turbines.tdl")))
    assert r.answers() == [] and r.tick == -1
    r.feed(["Hot(wt1, 0)"])
    r.feed([])
    t = r.answers_arrow(include_pending=True)
    assert t.column_names == list(reasoning.ANSWER_FIELDS) and t.num_rows >= 1
    with pytest.raises(ProgramError) as e:
        compile_program("OK(X, T) :- Hot(X).", file="bad.tdl")
    assert str(e.value).startswith("bad.tdl:1:")
    with pytest.raises(ValueError, match="unknown executor"):
        Reasoner(r.program, executor="gpu")
