"""Airflow test set-up for the DAG tests (imported by tests/test_dag*.py only, so the rest of
the suite never pays for Airflow).

Importing this module points Airflow at a fresh temporary AIRFLOW_HOME (SQLite, no example
DAGs, DAGS_FOLDER = dags/) *before* airflow is imported, with fast DAG settings for tests
(no retries, 1 s sensor pokes, 3 s slice timeout).  `airflow_db` migrates it once per session;
`hypo_dag` is the parsed DAG module and its DAG object.
"""
from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DAGS = ROOT / "dags"
DAG_ID = "hypo_ticks"

_HOME = tempfile.mkdtemp(prefix="hypo-airflow-test-")
atexit.register(shutil.rmtree, _HOME, True)
AIRFLOW_ENV = {
    "AIRFLOW_HOME": _HOME,
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_HOME}/airflow.db",
    "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    "GX_ANALYTICS_ENABLED": "false",
    # the DAG's parse-time settings for tests
    "HYPO_RETRIES": "0",
    "HYPO_SLICE_POKE": "1s",
    "HYPO_SLICE_TIMEOUT": "3s",
}
if "airflow" in sys.modules and os.environ.get("AIRFLOW_HOME") != _HOME:
    _other = os.environ.get("AIRFLOW_HOME", "~/airflow")
    raise RuntimeError(f"airflow was imported before tests/airflow_fixtures.py (AIRFLOW_HOME "
                       f"{_other}); import the fixtures first so the tests get an isolated home")
os.environ.update(AIRFLOW_ENV)
DEPLOY_ENV = ("HYPO_LAKE", "HYPO_PROGRAM", "HYPO_SPARK_MASTER", "HYPO_EPOCH", "HYPO_TICK_UNIT",
              "HYPO_HOME")


@pytest.fixture(scope="session")
def airflow_db() -> str:
    """`airflow db migrate` of the test home, once (≈3 s)."""
    r = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"],
                       env={**os.environ, **AIRFLOW_ENV}, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return _HOME


@pytest.fixture(scope="session")
def hypo_dag(airflow_db):
    """(the dags/hypo_ticks module, its DAG)."""
    if str(DAGS) not in sys.path:
        sys.path.insert(0, str(DAGS))
    saved = {k: os.environ.pop(k) for k in DEPLOY_ENV if k in os.environ}
    try:  # parsed with the embedded defaults, whatever the developer's shell says
        import hypo_ticks
    finally:
        os.environ.update(saved)
    yield hypo_ticks, hypo_ticks.dag_object
    from pyspark.sql import SparkSession  # the tasks ran in this process: stop their session

    s = SparkSession.getActiveSession()
    if s is not None:
        s.stop()
    import logging

    logging.getLogger("py4j").setLevel(logging.WARNING)  # no "Closing down" at exit


def reset_runs() -> None:
    """Forget every run of the DAG (scenarios share the DB but not their runs)."""
    from sqlalchemy import delete

    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session() as s:
        s.execute(delete(DagRun).where(DagRun.dag_id == DAG_ID))


def run_ticks(mod, dag, start: int, end: int, conf: dict) -> list:
    """dag.test for ticks start..end in order (the tests' backfill loop); stops at the first
    run that does not succeed."""
    out = []
    for tau in range(start, end + 1):
        ld = mod.date_of(tau)
        dr = dag.test(logical_date=ld, run_after=ld, run_conf=conf)
        out.append(dr)
        if str(dr.state) != "success":
            break
    return out


def ti_states(dr) -> dict:
    return {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}


def xcom(dr, task_id: str):
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as s:
        row = s.scalars(XComModel.get_many(run_id=dr.run_id, dag_ids=DAG_ID, task_ids=task_id,
                                           key="return_value")).first()
        return None if row is None else XComModel.deserialize_value(row)


def blocked_by_past(mod, dag, tau: int, conf: dict) -> tuple[list, list]:
    """What the scheduler would do with the run of tick τ after the earlier runs: (the task
    instances it would schedule now, why the first task may not run).

    With catchup=True, Airflow chains depends_on_past through *scheduled* (and backfill)
    runs only, never manual ones — and dag.test makes manual runs.  So the earlier runs are
    relabelled as scheduled, and the run of τ is created as the scheduler creates it."""
    from sqlalchemy import update

    from airflow.models.dagrun import DagRun
    from airflow.serialization.serialized_objects import DagSerialization
    from airflow.ti_deps.dep_context import DepContext
    from airflow.utils.session import create_session
    from airflow.utils.state import DagRunState
    from airflow.utils.types import DagRunTriggeredByType, DagRunType

    sdag = DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag))
    ld = mod.date_of(tau)
    with create_session() as s:
        s.execute(update(DagRun).where(DagRun.dag_id == DAG_ID)
                  .values(run_type=DagRunType.SCHEDULED))
    with create_session() as s:
        dr = sdag.create_dagrun(run_id=f"scheduled__{ld.isoformat()}", logical_date=ld,
                                data_interval=(ld, ld + mod.UNIT), run_after=ld + mod.UNIT,
                                conf=conf, run_type=DagRunType.SCHEDULED,
                                state=DagRunState.RUNNING,
                                triggered_by=DagRunTriggeredByType.TIMETABLE, session=s)
        schedulable, _ = dr.update_state(session=s)
        ti = dr.get_task_instance("prepare", session=s)
        ti.task = sdag.get_task("prepare")
        reasons = [d.reason for d in ti.get_failed_dep_statuses(dep_context=DepContext(),
                                                                session=s)]
        return [t.task_id for t in schedulable], reasons


def asset_events(tick: int | None = None) -> list[dict]:
    from sqlalchemy import select

    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session

    with create_session() as s:
        rows = s.execute(select(AssetModel.name, AssetModel.uri, AssetEvent.extra)
                         .join(AssetModel, AssetEvent.asset_id == AssetModel.id)).all()
    out = [{"name": n, "uri": u, "extra": e} for n, u, e in rows]
    return [e for e in out if tick is None or (e["extra"] or {}).get("tick") == tick]


def hypo_run_jsonl(program: str, stream: str, until: int, all_: bool = False) -> list[dict]:
    """`hypo run PROGRAM --stream FILE --format jsonl` (in-process), as objects."""
    import io

    from reasoning.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["run", program, "--stream", stream, "--format", "jsonl", "--until",
                   str(until), "--no-skip"] + (["--all"] if all_ else []))
    assert rc == 0, err.getvalue()
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]
