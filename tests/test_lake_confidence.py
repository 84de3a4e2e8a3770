"""Confidence in the lake (issue 13; jobs/tick/confidence.py): a lake made with `--confidence`
gives each answer the confidence `hypo run --confidence` gives it, tick by tick, with the
plan on the driver and with the row engine (the Spark plan: tests/test_lake_spark.py); the
arrival model travels in S_τ's `model` row; lakes without it have a null column."""
from __future__ import annotations

import json
import random

import pytest

from jobs.table import delta
from jobs import lake as api
from jobs.errors import ProgramMismatch
from jobs.ingest.generate import random_case, turbine_program, turbine_stream, write_jsonl
from lakehelp import hypo, until_of, write_program

TURBINES = "examples/wind_turbines.tdl"
STREAM = "examples/wind_turbines.jsonl"


def reference_confidence(program: str, stream: str, until: int) -> dict[int, list[str]]:
    """tick -> `hypo run --format jsonl --all --confidence --no-skip` lines (sorted)."""
    rc, out, err = hypo("run", program, "--stream", stream, "--format", "jsonl", "--all",
                        "--confidence", "--no-skip", "--until", str(until))
    assert rc in (0, 1), err
    by: dict[int, list[str]] = {}
    for line in out.splitlines():
        o = json.loads(line)
        if o.get("status") != "none":
            by.setdefault(o["tick"], []).append(json.dumps(o, sort_keys=True))
    return {t: sorted(v) for t, v in by.items()}


def lake_confidence_lines(lake: str, tick: int) -> list[str]:
    return sorted(json.dumps(o, sort_keys=True) for o in api.read_answers(lake, tick, "all"))


def lossy(rows: list[dict], drop: float, seed: int) -> list[dict]:
    """The stream with a fraction of its facts lost (002 §8's lossy channel)."""
    rnd = random.Random(seed)
    return [r for r in rows if rnd.random() >= drop]


def _check_equal(tmp_path, program: str, stream: str, executor: str, last: int = 0) -> int:
    """The lake's answers equal hypo run's at every tick; ticks run with `executor` (only
    the `last` ones if last > 0, the others on the driver: the model crosses executors)."""
    until = until_of(program, stream)
    lake = str(tmp_path / f"lake-{executor}")
    api.init(lake, program, None, True)
    api.ingest(lake, None, [stream])
    first = max(0, until - last + 1) if last else 0
    if first:
        api.run_range(lake, 0, first - 1, executor="local")
    api.run_range(lake, first, until, executor=executor)
    ref = reference_confidence(program, stream, until)
    n = 0
    for t in range(until + 1):
        got = lake_confidence_lines(lake, t)
        assert got == ref.get(t, []), f"tick {t} ({executor})"
        n += sum(1 for x in got if json.loads(x)["confidence"] not in (0.0, 1.0))
    return n


@pytest.mark.parametrize("executor", ["local", "row"])
def test_example13_confidences_equal_hypo_run(tmp_path, executor):
    _check_equal(tmp_path, TURBINES, STREAM, executor)


@pytest.mark.parametrize("seed,executor", [(3, "local"), (5, "row"), (8, "local")])
def test_generated_lossy_turbines_confidences_equal_hypo_run(tmp_path, seed, executor):
    """12 turbines with their own δ, 25% of the facts lost: the model learns non-trivial
    delay distributions and arrival rates, continued tick by tick through the state."""
    delays, rows = turbine_stream(12, 8, max_delay=3, seed=seed)
    prog = write_program(tmp_path, turbine_program(delays))
    stream = str(tmp_path / "s.jsonl")
    write_jsonl(lossy(rows, 0.25, seed), stream)
    assert _check_equal(tmp_path, prog, stream, executor) > 0  # not only 0 and 1


@pytest.mark.parametrize("seed", [1, 2])
def test_random_programs_with_negation_confidences_equal_hypo_run(tmp_path, seed):
    text, rows = random_case(seed, n_devices=4, n_times=5)
    prog = write_program(tmp_path, text)
    stream = str(tmp_path / "s.jsonl")
    write_jsonl(rows, stream)
    _check_equal(tmp_path, prog, stream, "local")


def test_model_row_in_state_and_null_column_without_confidence(tmp_path):
    on, off = str(tmp_path / "on"), str(tmp_path / "off")
    api.init(on, TURBINES, None, True)
    api.init(off, TURBINES)
    for lake in (on, off):
        api.ingest(lake, None, [STREAM])
        api.run_range(lake, 0, 3)
    st = delta.read_arrow(f"{on}/state", "state", columns=["tick", "kind", "info"]).to_pylist()
    models = {r["tick"]: json.loads(r["info"]) for r in st if r["kind"] == "model"}
    assert sorted(models) == [0, 1, 2, 3]
    assert models[3]["stats"] and "waiting" in models[3]
    a_on = delta.read_arrow(f"{on}/answers", "answers", columns=["confidence", "json"]).to_pylist()
    assert a_on and all(r["confidence"] == json.loads(r["json"])["confidence"] for r in a_on)
    a_off = delta.read_arrow(f"{off}/answers", "answers",
                             columns=["confidence", "json"]).to_pylist()
    assert a_off and all(r["confidence"] is None and "confidence" not in json.loads(r["json"])
                         for r in a_off)
    assert not [r for r in delta.read_arrow(f"{off}/state", "state", columns=["kind"]).to_pylist()
                if r["kind"] == "model"]


def test_confidence_cannot_be_switched_on_an_existing_lake(tmp_path):
    lake = str(tmp_path / "lake")
    api.init(lake, TURBINES)
    with pytest.raises(ProgramMismatch, match="without --confidence"):
        api.init(lake, TURBINES, None, True)
    assert api.init(lake, TURBINES)["created"] is False
    rc, out, err = hypo("lake", "--lake", str(tmp_path / "l2"), "init", "--program", TURBINES,
                        "--confidence")
    assert rc == 0 and "with confidence" in out, err


def test_lake_report_shows_calibration_and_the_arrival_model(tmp_path):
    """`hypo lake report` of a lake made with --confidence: the reliability plot with the
    Brier score, the announced confidences, and the model as S_τ's `model` row holds it."""
    from jobs.audit.report import lake_report
    from reasoning.insight.report import render

    delays, rows = turbine_stream(12, 8, max_delay=3, seed=3)
    prog = write_program(tmp_path, turbine_program(delays))
    stream = str(tmp_path / "s.jsonl")
    write_jsonl(lossy(rows, 0.25, 3), stream)
    lake = str(tmp_path / "lake")
    api.init(lake, prog, None, True)
    api.ingest(lake, None, [stream])
    api.run_range(lake, 0, until_of(prog, stream))
    d = lake_report(lake)
    assert d.calibration and all(0.0 <= c <= 1.0 and y in (0.0, 1.0) for c, y in d.calibration)
    assert d.arrival_model and d.arrival_model[0]["pred"] == "Hot"
    lcs = d.lifecycles.all
    # the turbines' OK answers are pending, then definite: announced definite, confidence 1
    # (their confidences while pending are the calibration's announcements)
    assert any(c < 1.0 for c, _ in d.calibration)
    assert all(lc.confidence == 1.0 for lc in lcs if lc.first_status == "definite")
    html = render(d)
    assert 'id="brier"' in html and "<h2>Confidence</h2>" in html
    plain = str(tmp_path / "plain")
    api.init(plain, prog)
    api.ingest(plain, None, [stream])
    api.run_range(plain, 0, 3)
    assert lake_report(plain).calibration is None


@pytest.mark.parametrize("info", [None, "{not json", '{"stats": [["Hot"]]}', '"text"'])
def test_a_missing_or_damaged_model_row_is_damage_not_a_fresh_start(info):
    from jobs.tick.confidence import tick_confidence
    from jobs.errors import LakeDamaged
    from reasoning.language.compiler import compile_file

    cp = compile_file(TURBINES)
    with pytest.raises(LakeDamaged, match="state tick=4: .*hypo lake verify"):
        tick_confidence(cp, info, 5, [], [], has_prev=True)
    assert tick_confidence(cp, None, 0, [], []).model.stats == {}
