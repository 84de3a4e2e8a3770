"""The Airflow DAG (dags/hypo_ticks.py): parses cleanly, derives τ from the logical date, and
— run tick by tick with dag.test on SQLite, local Spark and a local Delta lake — gives the
answers `hypo run` gives, re-runs ranges idempotently, quarantines malformed rows, and stops
at a failed tick with a readable error.

One Airflow home (migrated once) and one Spark session (the tasks run in this process) for
the whole module; the scenarios share one lake where they can.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import os
from pathlib import Path

import pytest

from tests.airflow_fixtures import (DAG_ID, DAGS, ROOT, airflow_db, asset_events,  # noqa: F401
                                    blocked_by_past, hypo_dag, hypo_run_jsonl, reset_runs,
                                    run_ticks, ti_states, xcom)

pytestmark = pytest.mark.airflow

PROGRAM = str(ROOT / "examples" / "wind_turbines.tdl")
STREAM = str(ROOT / "examples" / "wind_turbines.jsonl")
UTC = dt.timezone.utc


def land(lake: Path, tick: int, lines: list, name: str = "slice.jsonl") -> None:
    d = lake / "landing" / f"tick={tick}"
    d.mkdir(parents=True, exist_ok=True)
    if lines:
        (d / name).write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n"
                                      for x in lines))
    (d / "_READY").write_text("")


def land_example(lake: Path, ticks: int) -> None:
    """Example 13's stream landed as the slices of ticks 0..ticks-1 (empty ones declared)."""
    slices: dict[int, list] = {}
    for line in open(STREAM, encoding="utf-8"):
        slices.setdefault(json.loads(line)["tick"], []).append(line.rstrip("\n"))
    for tau in range(ticks):
        land(lake, tau, slices.get(tau, []))


def conf_for(lake) -> dict:
    return {"lake": str(lake), "program": PROGRAM, "spark_master": "local[2]"}


# ====================================================================== parsing (fast)
def test_dagbag_has_no_import_errors(hypo_dag):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS))
    assert bag.import_errors == {}
    assert list(bag.dags) == [DAG_ID]  # run_local.py is in .airflowignore
    d = bag.dags[DAG_ID]
    assert d.catchup is True and d.max_active_runs == 1
    assert d.start_date == dt.datetime(2026, 1, 1, tzinfo=UTC)
    assert [t.task_id for t in d.topological_sort()] == [
        "prepare", "wait_for_slice", "ingest", "tick", "publish"]
    for t in d.tasks:
        assert t.depends_on_past and t.wait_for_downstream, t.task_id
        assert t.retry_exponential_backoff, t.task_id
    s = d.task_dict["wait_for_slice"]
    # the suite's fixtures poke every 1 s, below RESCHEDULE_FROM: poke mode (issue 14.4)
    mod, _ = hypo_dag
    poke = mod.parse_duration(os.environ.get("HYPO_SLICE_POKE", "60s"), "HYPO_SLICE_POKE")
    assert s.mode == ("poke" if poke < mod.RESCHEDULE_FROM else "reschedule") and s.soft_fail is False and s.timeout > 0
    assert [o.name for o in d.task_dict["publish"].outlets] == ["hypo_answers"]
    assert {k: d.params[k] for k in d.params} == {
        "lake": "./lake", "program": "examples/wind_turbines.tdl", "spark_master": "local[2]",
        "confidence": False}


def test_production_settings_and_env_defaults(hypo_dag, monkeypatch):
    """Retries with back-off by default; params, epoch and unit come from the environment."""
    import importlib.util

    mod, _ = hypo_dag
    for k in ("HYPO_RETRIES", "HYPO_SLICE_POKE", "HYPO_SLICE_TIMEOUT"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HYPO_LAKE", "/data/lake")
    monkeypatch.setenv("HYPO_PROGRAM", "/opt/p.tdl")
    monkeypatch.setenv("HYPO_SPARK_MASTER", "spark://spark-master:7077")
    monkeypatch.setenv("HYPO_EPOCH", "2026-03-01T06:00:00Z")
    monkeypatch.setenv("HYPO_TICK_UNIT", "15m")
    monkeypatch.setenv("HYPO_CONFIDENCE", "1")
    monkeypatch.setenv("HYPO_KEEP_STATE", "1000")
    spec = importlib.util.spec_from_file_location("hypo_ticks_env", DAGS / "hypo_ticks.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    d = m.dag_object
    assert {k: d.params[k] for k in d.params} == {
        "lake": "/data/lake", "program": "/opt/p.tdl", "spark_master": "spark://spark-master:7077",
        "confidence": True}
    t = d.task_dict["tick"]
    assert t.retries == 2 and t.retry_delay == dt.timedelta(minutes=1)
    assert t.max_retry_delay == dt.timedelta(minutes=30)
    assert d.task_dict["wait_for_slice"].timeout == 6 * 3600
    assert m.answers_asset().uri == "hypo://localhost/data/lake/answers"
    assert d.start_date == dt.datetime(2026, 3, 1, 6, tzinfo=UTC)
    assert m.tick_of(dt.datetime(2026, 3, 1, 7, 30, tzinfo=UTC)) == 6
    assert d.task_dict["wait_for_slice"].mode == "reschedule"
    assert (m.KEEP_STATE, m.KEEP_ANSWERS, m.RETAIN_HOURS) == (1000, 0, 168)
    # a short poke interval keeps the worker slot (reschedule races the scheduler: issue 14.4)
    monkeypatch.setenv("HYPO_SLICE_POKE", "5s")
    spec.loader.exec_module(m)
    assert m.dag_object.task_dict["wait_for_slice"].mode == "poke"


@pytest.mark.parametrize("var,value,allowed", [
    ("HYPO_RETRIES", "abc", "whole number ≥ 0"), ("HYPO_RETRIES", "1e3", "whole number ≥ 0"),
    ("HYPO_RETRIES", "-1", "whole number ≥ 0"),
    ("HYPO_TICK_UNIT", "99999999999999999999w", "at most 36500d"),
    ("HYPO_SLICE_POKE", "99999999999999w", "at most 36500d"),
    ("HYPO_SLICE_TIMEOUT", "9" * 40, "positive duration"),
])
def test_a_bad_setting_is_one_line_naming_it(hypo_dag, monkeypatch, var, value, allowed):
    """Issue 44.7: a parse-time setting the DAG cannot use fails the import with one line that
    names the variable, its value and what is allowed — no int() or timedelta overflow from
    inside, and a negative retry count is refused, not accepted."""
    import importlib.util

    monkeypatch.setenv(var, value)
    spec = importlib.util.spec_from_file_location("hypo_ticks_bad", DAGS / "hypo_ticks.py")
    m = importlib.util.module_from_spec(spec)
    with pytest.raises(ValueError) as e:
        spec.loader.exec_module(m)
    msg = str(e.value)
    assert type(e.value) is ValueError and e.value.__cause__ is None and "\n" not in msg
    assert msg.startswith(f"{var}: {value!r}") and allowed in msg, msg


def test_a_bad_setting_is_the_dagbags_import_error(hypo_dag, monkeypatch):
    from airflow.dag_processing.dagbag import DagBag

    monkeypatch.setenv("HYPO_RETRIES", "abc")
    bag = DagBag(dag_folder=str(DAGS))
    (err,) = bag.import_errors.values()
    assert err.strip().splitlines()[-1] == \
        "ValueError: HYPO_RETRIES: 'abc' is not a whole number ≥ 0"


def test_tick_of_logical_date(hypo_dag):
    from airflow.sdk.exceptions import AirflowFailException

    mod, dag = hypo_dag
    assert mod.tick_of(dt.datetime(2026, 1, 1, tzinfo=UTC)) == 0
    assert mod.tick_of(dt.datetime(2026, 1, 6, tzinfo=UTC)) == 5
    for tau in (0, 1, 17, 365):
        assert mod.tick_of(mod.date_of(tau)) == tau
    hour = mod.parse_duration("1h")
    epoch = mod.parse_epoch("2026-01-01T00:00:00")  # naive = UTC
    assert mod.tick_of(dt.datetime(2026, 1, 2, 3, tzinfo=UTC), epoch, hour) == 27
    import pendulum  # what Airflow hands the tasks

    assert mod.tick_of(pendulum.datetime(2026, 1, 4, tz="UTC")) == 3
    assert mod.tick_of(pendulum.datetime(2026, 1, 4, 1, tz="Europe/Paris")) == 3
    for bad in (dt.datetime(2026, 1, 4, 12, tzinfo=UTC), dt.datetime(2025, 12, 31, tzinfo=UTC),
                None):
        with pytest.raises(AirflowFailException, match="logical date"):
            mod.tick_of(bad)
    with pytest.raises(ValueError, match="positive duration"):
        mod.parse_duration("1 fortnight")
    assert mod.format_duration(mod.parse_duration("90m")) == "90m"
    # the schedule: consecutive logical dates are consecutive ticks from 0
    from airflow.serialization.serialized_objects import DagSerialization

    sdag = DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag))
    infos = list(sdag.iter_dagrun_infos_between(mod.date_of(0), mod.date_of(4)))
    assert [mod.tick_of(i.logical_date) for i in infos] == [0, 1, 2, 3, 4]


def test_slice_status(hypo_dag, tmp_path):
    mod, _ = hypo_dag
    assert mod.slice_status(str(tmp_path), 3) == {
        "dir": str(tmp_path / "landing" / "tick=3"), "ready": False, "files": [],
        "unexpected": []}
    land(tmp_path, 3, [])
    s = mod.slice_status(str(tmp_path), 3)
    assert s["ready"] and s["files"] == [] and s["unexpected"] == []  # declared empty
    d = tmp_path / "landing" / "tick=4"
    d.mkdir(parents=True)
    for n in ("b.csv", "a.jsonl", "c.parquet", "_SUCCESS", ".a.jsonl.crc", "notes.txt"):
        (d / n).write_text("")
    s = mod.slice_status(str(tmp_path), 4)
    assert not s["ready"]
    assert [os.path.basename(f) for f in s["files"]] == ["a.jsonl", "b.csv", "c.parquet"]
    assert s["unexpected"] == ["notes.txt"]


def test_summary_lifecycle(hypo_dag):
    mod, _ = hypo_dag

    def ans(status, sub, hyps=(), ev=(), deadline=None, excl=None):
        return {"tick": 0, "query": "OK(X, T)", "status": status, "substitution": sub,
                "excluded": excl or {}, "evidence": list(ev), "hypotheses": list(hyps),
                "deadline": deadline}

    prev = [ans("hypothetical", {"X": "wt1", "T": 1}, ["not Shdn(wt1, 2)"], ["Hot(wt1, 0)"], 4),
            ans("hypothetical", {"X": "wt2", "T": 1}, ["not Shdn(wt2, 2)"], ["Hot(wt2, 0)"], 4),
            ans("pending", {"T": 3}, ["not Shdn(X, 4)"], deadline=7)]
    cur = [ans("definite", {"X": "wt1", "T": 1}, ev=["not Shdn(wt1, 2)"]),
           ans("hypothetical", {"X": "wt3", "T": 2}, ["not Shdn(wt3, 3)"], ["Hot(wt3, 1)"], 5),
           ans("pending", {"T": 3}, ["not Shdn(X, 4)"], deadline=7)]
    s = mod.summarize(2, cur, prev)
    assert s["new_definite"] == ["definite      OK(wt1, 1)   because not Shdn(wt1, 2)"]
    assert s["new_hypothetical"] == [
        "hypothetical  OK(wt3, 2)   if not Shdn(wt3, 3)   [decided by tick 5; evidence: "
        "Hot(wt3, 1)]"]
    assert s["refuted"] == ["OK(wt2, 1)"]
    assert (s["answers"], s["definite"], s["hypothetical"], s["pending"]) == (2, 1, 1, 1)
    text = mod.summary_text(s)
    assert "1 new definite, 1 new hypothetical, 1 refuted" in text
    assert "refuted       OK(wt2, 1)" in text


def test_missing_slice_is_not_an_empty_slice(hypo_dag, tmp_path, caplog):
    """No _READY: the sensor times out and the run fails; nothing is computed for the tick."""
    mod, dag = hypo_dag
    reset_runs()
    caplog.set_level(logging.INFO)
    lake = tmp_path / "lake"
    (lake / "landing" / "tick=0").mkdir(parents=True)
    (lake / "landing" / "tick=0" / "slice.jsonl").write_text('{"fact": "Hot(wt1, 0)"}\n')
    [dr] = run_ticks(mod, dag, 0, 0, conf_for(lake))
    assert str(dr.state) == "failed"
    assert ti_states(dr)["wait_for_slice"] == "failed"
    assert ti_states(dr)["tick"] == "upstream_failed"
    out = caplog.text
    assert "slice 0 not ready: no _READY marker" in out and "1 data file(s)" in out
    assert "an empty slice is declared by _READY alone" in out
    assert not (lake / "facts" / "_delta_log" / "00000000000000000001.json").exists()


def test_program_error_fails_the_run_readably(hypo_dag, tmp_path, caplog):
    mod, dag = hypo_dag
    reset_runs()
    caplog.set_level(logging.INFO)
    lake = tmp_path / "lake"
    land(lake, 0, [])
    conf = {**conf_for(lake), "program": str(ROOT / "examples" / "not_stratified.tdl")}
    [dr] = run_ticks(mod, dag, 0, 0, conf)
    assert str(dr.state) == "failed" and ti_states(dr)["prepare"] == "failed"
    out = caplog.text
    assert "not_stratified.tdl:3:1: error: program is not T-stratified" in out
    # the scheduler would not start any task of the next tick
    scheduled, reasons = blocked_by_past(mod, dag, 1, conf)
    assert scheduled == [] and any("depends_on_past" in r for r in reasons)
    reset_runs()


# ====================================================================== runs (Spark)
@pytest.fixture(scope="module")
def one_pass(hypo_dag, tmp_path_factory):
    """Example 13 landed as per-tick slices (empty ticks declared) and ticks 0..5 run through
    the DAG in one pass; returns the lake and what it held after the pass."""
    mod, dag = hypo_dag
    reset_runs()
    lake = tmp_path_factory.mktemp("dag") / "lake"
    land_example(lake, 6)
    runs = run_ticks(mod, dag, 0, 5, conf_for(lake))
    assert [str(r.state) for r in runs] == ["success"] * 6, [ti_states(r) for r in runs]
    return {"lake": str(lake), "runs": runs, "snapshot": snapshot(str(lake), 5)}


def snapshot(lake: str, last: int) -> dict:
    """Answers of every tick (all statuses), the current state table and the last digests."""
    from deltalake import DeltaTable

    from jobs import lake as api

    st = DeltaTable(os.path.join(lake, "state")).to_pyarrow_table().to_pylist()
    status = api.lake_status(lake)
    return {"answers": {t: api.read_answers(lake, t, "all") for t in range(last + 1)},
            "state": sorted(json.dumps(r, sort_keys=True, default=str) for r in st),
            "last_tick": status["last_tick"], "digests": status["last"]}


@pytest.mark.slow
def test_dag_answers_equal_hypo_run(one_pass):
    """Per tick, the answers read back from the lake are `hypo run --format jsonl`'s."""
    from jobs import lake as api

    lake = one_pass["lake"]
    for all_, status in ((False, None), (True, "all")):
        ref: dict[int, list] = {}
        for o in hypo_run_jsonl(PROGRAM, STREAM, until=5, all_=all_):
            if o.get("status") != "none":
                ref.setdefault(o["tick"], []).append(o)
        for tau in range(6):
            got = api.read_answers(lake, tau, status)
            key = lambda o: json.dumps(o, sort_keys=True)  # noqa: E731
            assert sorted(got, key=key) == sorted(ref.get(tau, []), key=key), (tau, status)
    assert ref[5] and any(o["status"] == "definite" for o in ref[5])


@pytest.mark.slow
def test_publish_emits_asset_and_summary(one_pass):
    runs = one_pass["runs"]
    ev = asset_events()
    assert {e["name"] for e in ev} == {"hypo_answers"}
    ticks = sorted(e["extra"]["tick"] for e in ev if e["extra"]["lake"] == one_pass["lake"])
    assert ticks == [0, 1, 2, 3, 4, 5]
    p4 = xcom(runs[4], "publish")
    assert p4["tick"] == 4 and p4["new_definite"] == [
        "definite      OK(X, 2) for X ∉ {wt1}   because not Shdn(X, 3)",
        "definite      OK(wt2, 1)   because not Shdn(wt2, 2)"]
    assert xcom(runs[1], "ingest")["batch"] is None  # tick 1: declared empty
    # the lifecycle report of each tick, written under reports/ by a rename (no temp left)
    rep = os.path.join(one_pass["lake"], "reports")
    assert sorted(os.listdir(rep)) == [f"tick={t}.html" for t in range(6)]
    assert p4["report"] == os.path.join(rep, "tick=4.html")
    html = open(p4["report"], encoding="utf-8").read()
    assert '<svg id="timeline"' in html and "ticks 0..4" in html


@pytest.mark.slow
def test_rerun_range_then_continue_gives_the_same_lake(hypo_dag, one_pass):
    """Backfill: re-run ticks 2..3 (as `airflow backfill create … --reprocess-behavior
    completed` would) then 4..5: the same answers per tick and the same final state as the
    one pass 0..5."""
    mod, dag = hypo_dag
    from jobs import lake as api

    lake = one_pass["lake"]
    facts = api.lake_status(lake)["rows"]["facts"]
    for a, b in ((2, 3), (4, 5)):
        runs = run_ticks(mod, dag, a, b, conf_for(lake))
        assert [str(r.state) for r in runs] == ["success"] * (b - a + 1)
    assert api.lake_status(lake)["rows"]["facts"] == facts  # re-ingesting added nothing
    again = snapshot(lake, 5)
    first = one_pass["snapshot"]
    assert again["answers"] == first["answers"]
    assert again["state"] == first["state"]
    assert again["last_tick"] == first["last_tick"] == 5
    assert again["digests"]["state_digest"] == first["digests"]["state_digest"]
    assert again["digests"]["answers_digest"] == first["digests"]["answers_digest"]


@pytest.mark.slow
def test_malformed_slice_is_quarantined_and_the_tick_succeeds(hypo_dag, one_pass, caplog):
    from deltalake import DeltaTable

    from jobs import lake as api

    mod, dag = hypo_dag
    caplog.set_level(logging.INFO)
    lake = Path(one_pass["lake"])
    land(lake, 6, [
        {"tick": 6, "fact": "Hot(wt2, 6)"},                 # good
        '{"tick": 6, "fact": "Hot(wt3, 6)"',                 # truncated JSON
        {"tick": 6, "fact": "Cold(wt1, 6)"},                 # unknown predicate
        {"tick": 6, "fact": "Hot(wt1, wt2, 6)"},             # wrong arity
        {"tick": 6, "fact": "Hot(wt1, 9)"},                  # from the future
        {"tick": 6, "fact": "Shdn(wt1, 6)"},                 # IDB predicate
        {"tick": 6, "pred": "Hot", "args": ["wt3"], "time": 6},  # good (structured)
    ])
    caplog.clear()
    [dr] = run_ticks(mod, dag, 6, 6, conf_for(lake))
    assert str(dr.state) == "success", ti_states(dr)
    t = xcom(dr, "tick")
    assert t["counts"]["accepted"] == 2
    assert t["quarantined"] == 5
    q = DeltaTable(str(lake / "quarantine")).to_pyarrow_table().to_pylist()
    mine = [r for r in q if (r["source"] or "").endswith("tick=6/slice.jsonl")]
    assert sorted(r["line"] for r in mine) == [2, 3, 4, 5, 6]
    out = caplog.text
    assert "5 row(s) quarantined" in out and "slice.jsonl:2" in out
    ref = hypo_run_jsonl(PROGRAM, str(_stream_with(lake, 6)), until=6, all_=True)
    key = lambda o: json.dumps(o, sort_keys=True)  # noqa: E731
    assert sorted(api.read_answers(str(lake), 6, "all"), key=key) == sorted(
        [o for o in ref if o["tick"] == 6 and o.get("status") != "none"], key=key)


def _stream_with(lake: Path, tick: int) -> Path:
    """Example 13 plus the good rows of the malformed slice, as a `hypo run` stream."""
    p = lake.parent / "stream6.jsonl"
    lines = open(STREAM, encoding="utf-8").read().splitlines()
    lines += [json.dumps({"tick": tick, "fact": "Hot(wt2, 6)"}),
              json.dumps({"tick": tick, "fact": "Hot(wt3, 6)"})]
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.slow
def test_failed_tick_stops_later_ticks(hypo_dag, tmp_path, caplog):
    """Tick 1's slice never arrives: its run fails, the scheduler would not start tick 2, and
    a manual run of tick 2 (not chained by depends_on_past in Airflow) is refused by the lake
    with a readable message."""
    mod, dag = hypo_dag
    reset_runs()
    caplog.set_level(logging.INFO)
    lake = tmp_path / "lake"
    land(lake, 0, [])
    land(lake, 2, [])
    conf = conf_for(lake)
    runs = run_ticks(mod, dag, 0, 1, conf)
    assert [str(r.state) for r in runs] == ["success", "failed"]
    scheduled, reasons = blocked_by_past(mod, dag, 2, conf)
    # prepare(1) succeeded, but the task after it did not: wait_for_downstream holds tick 2
    assert scheduled == [] and any("wait_for_downstream is True" in r for r in reasons)
    reset_runs()
    caplog.clear()
    [dr] = run_ticks(mod, dag, 2, 2, conf)
    assert str(dr.state) == "failed" and ti_states(dr)["tick"] == "failed"
    out = caplog.text
    assert "tick 2 cannot run before tick 1 has completed" in out
    reset_runs()


@pytest.mark.slow
def test_keep_state_and_answers_bound_the_lake_and_refuse_reruns_below_it(hypo_dag, tmp_path, caplog,
                                                                 monkeypatch):
    """HYPO_KEEP_STATE=2, HYPO_KEEP_ANSWERS=1: after each tick the tick task removes older
    S_τ and answers (jobs/maintenance/retention.py; publish still finds τ-1's); the answers kept are
    those of a lake that keeps everything, and a backfill of a tick whose S_{τ-1} is gone
    fails readably."""
    mod, dag = hypo_dag
    from deltalake import DeltaTable

    from jobs import lake as api

    monkeypatch.setattr(mod, "KEEP_STATE", 2)
    monkeypatch.setattr(mod, "KEEP_ANSWERS", 1)  # publish needs τ-1's: 2 are kept
    reset_runs()
    caplog.set_level(logging.INFO)
    lake = tmp_path / "lake"
    land_example(lake, 4)
    runs = run_ticks(mod, dag, 0, 3, conf_for(lake))
    assert [str(r.state) for r in runs] == ["success"] * 4, [ti_states(r) for r in runs]
    ticks = set(DeltaTable(str(lake / "state")).to_pyarrow_table(columns=["tick"])["tick"]
                .to_pylist())
    assert ticks == {2, 3} and "vacuum: S_τ kept from tick 2, answers from tick 2" in caplog.text
    ref: dict[int, list] = {}
    for o in hypo_run_jsonl(PROGRAM, STREAM, until=3, all_=True):
        if o.get("status") != "none":
            ref.setdefault(o["tick"], []).append(o)
    key = lambda o: json.dumps(o, sort_keys=True)  # noqa: E731
    for tau in range(2, 4):
        got = api.read_answers(str(lake), tau, "all")
        assert sorted(got, key=key) == sorted(ref.get(tau, []), key=key), tau
    with pytest.raises(api.LakeError, match="answers of tick 1 were removed"):
        api.read_answers(str(lake), 1, "all")
    reset_runs()
    caplog.clear()
    [dr] = run_ticks(mod, dag, 1, 1, conf_for(lake))
    assert str(dr.state) == "failed" and ti_states(dr)["tick"] == "failed"
    assert "tick 1 cannot run now: S_0" in caplog.text and "re-run from tick 0" in caplog.text
    reset_runs()


SETTINGS = ["HYPO_RETRIES", "HYPO_TICK_UNIT", "HYPO_SLICE_POKE", "HYPO_SLICE_TIMEOUT",
            "HYPO_EPOCH", "HYPO_KEEP_STATE", "HYPO_KEEP_ANSWERS", "HYPO_RETAIN_HOURS",
            "HYPO_RETRY_DELAY", "HYPO_MAX_RETRY_DELAY", "HYPO_TICK_TIMEOUT",
            "HYPO_REPORT_TICKS", "HYPO_CONFIDENCE"]


def test_random_settings_import_or_fail_in_one_line(hypo_dag, monkeypatch):
    """Issue 44's fuzz, bad settings: any text in any setting the DAG reads at parse time
    imports, or fails with one line naming the variable and its value (no traceback from
    inside int(), timedelta or datetime)."""
    import importlib.util

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    values = st.one_of(st.text(max_size=30), st.from_regex(r"-?[0-9]{1,25}[smhdw]?", fullmatch=True),
                       st.sampled_from(["", " ", "0", "-0", "1e3", "inf", "nan", "0x10", "1_000",
                                        "٣", "2026-13-01T00:00:00Z", "10000000000d"]))

    @settings(max_examples=120, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(SETTINGS), values)
    def check(var, value):
        if "\x00" in value:
            return  # (an environment value cannot hold NUL)
        monkeypatch.setenv(var, value)
        spec = importlib.util.spec_from_file_location("hypo_ticks_fuzz", DAGS / "hypo_ticks.py")
        m = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(m)
        except ValueError as e:
            msg = str(e)
            assert type(e) is ValueError and "\n" not in msg, (var, value, msg)
            assert msg.startswith(f"{var}: "), (var, value, msg)
        finally:
            monkeypatch.delenv(var)

    check()
