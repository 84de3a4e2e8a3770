#!/usr/bin/env python3
"""Run the hypo_ticks DAG locally for ticks a..b with `dag.test`, one DAG run per tick, in
this process (Airflow on SQLite, local Spark, local Delta lake), and print the answers of
each tick.  Used by scripts/demo.sh and the tests; also the simplest way to (re-)run a range
without a scheduler:

    python dags/run_local.py --from 0 --to 8                  # lake/ and the wind turbines
    python dags/run_local.py --from 2 --to 3 --lake /data/lake    # re-run ticks 2..3

Each run has the logical date epoch + τ × unit (see hypo_ticks.tick_of).  The slices must be
landed (<lake>/landing/tick=<τ>/_READY; scripts/land_stream.py).  Ticks run in order and the
loop stops at the first failed run (depends_on_past would hold every later run anyway); the
failed task's log is printed.  Airflow's and Spark's own logging go to --log (default
$AIRFLOW_HOME/logs/run_local.log) unless --verbose.

Environment: AIRFLOW_HOME (default <repo>/airflow_home; the SQLite DB is migrated on first
use), HYPO_LAKE / HYPO_PROGRAM / HYPO_SPARK_MASTER as defaults of --lake / --program /
--master, HYPO_EPOCH / HYPO_TICK_UNIT for the tick grid, HYPO_RETRIES (default 0 here: a
local run fails fast instead of waiting for retries).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, Optional

DAGS = Path(__file__).resolve().parent
ROOT = DAGS.parent


def airflow_env(home: Optional[str] = None) -> dict:
    """The isolated Airflow settings of a local run (set before airflow is imported)."""
    env = {
        "AIRFLOW_HOME": home or os.environ.get("AIRFLOW_HOME") or str(ROOT / "airflow_home"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__UNIT_TEST_MODE": os.environ.get("AIRFLOW__CORE__UNIT_TEST_MODE", "False"),
        "GX_ANALYTICS_ENABLED": "false",
    }
    env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = os.environ.get(
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", f"sqlite:///{env['AIRFLOW_HOME']}/airflow.db")
    return env


def migrate_if_needed(env: dict) -> None:
    db = Path(env["AIRFLOW_HOME"]) / "airflow.db"
    if env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("sqlite") and db.exists():
        return
    Path(env["AIRFLOW_HOME"]).mkdir(parents=True, exist_ok=True)
    r = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"],
                       env={**os.environ, **env}, capture_output=True, text=True)
    if r.returncode:
        sys.stderr.write(r.stdout[-4000:] + r.stderr[-4000:])
        raise SystemExit("run_local: `airflow db migrate` failed")


@contextlib.contextmanager
def redirected(path: Optional[str]) -> Iterator[None]:
    """Send fds 1 and 2 (Python, Airflow, the JVM) to a file; None: leave them alone."""
    if path is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in (fd, *saved):
            os.close(f)


def load_dag():
    if str(DAGS) not in sys.path:
        sys.path.insert(0, str(DAGS))
    import hypo_ticks

    return hypo_ticks, hypo_ticks.dag_object


def xcom(dr, task_id: str):
    """The return value of a task of a finished run (None if absent)."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as s:
        q = XComModel.get_many(run_id=dr.run_id, dag_ids=dr.dag_id, task_ids=task_id,
                               key="return_value")
        row = s.scalars(q).first()
        return None if row is None else XComModel.deserialize_value(row)


def failed_tasks(dr) -> list:
    from airflow.utils.state import TaskInstanceState

    return [ti for ti in dr.get_task_instances() if ti.state in
            (TaskInstanceState.FAILED, TaskInstanceState.UPSTREAM_FAILED)]


def run_tick(dag, mod, tau: int, conf: dict, log_path: Optional[str]):
    """One DAG run (dag.test) for tick τ; returns the DagRun."""
    ld = mod.date_of(tau)
    with redirected(log_path):
        return dag.test(logical_date=ld, run_after=ld, run_conf=conf)


def print_tick(mod, lake: str, tau: int, dr, out=sys.stdout) -> None:
    from jobs import lake as api

    cur = api.read_answers(lake, tau, "all")
    prev = api.read_answers(lake, tau - 1, "all") if tau > 0 else []
    s = mod.summarize(tau, cur, prev)
    t = xcom(dr, "tick") or {}
    ing = xcom(dr, "ingest") or {}
    c = t.get("counts", {})
    head = f"tick {tau} ({mod.date_of(tau).date().isoformat()}): "
    if ing.get("batch") is None and not c.get("facts"):
        head += "empty slice"
    else:
        head += f"{c.get('accepted', 0)} fact(s) accepted"
    q = t.get("quarantined", 0)
    if q:
        head += f", {q} row(s) quarantined"
    head += f" — {s['answers']} answer(s)"
    out.write(head + "\n")
    new_def = set(s["new_definite"])
    for line in s["lines"]:
        out.write(f"  {line}{'   (new)' if line in new_def and line.startswith('hyp') else ''}\n")
    for a in s["refuted"]:
        out.write(f"  refuted       {a}\n")
    out.flush()


def compare(program: str, stream: str, lake: str, start: int, end: int) -> list[int]:
    """Ticks whose answers in the lake differ from `hypo run --format jsonl`'s."""
    import io

    from jobs import lake as api
    from reasoning.cli.main import main as hypo

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        hypo(["run", program, "--stream", stream, "--format", "jsonl", "--until", str(end)])
    ref: dict[int, list] = {}
    for line in out.getvalue().splitlines():
        o = json.loads(line)
        if o.get("status") != "none":
            ref.setdefault(o["tick"], []).append(o)
    key = lambda o: json.dumps(o, sort_keys=True)  # noqa: E731
    return [t for t in range(start, end + 1)
            if sorted(api.read_answers(lake, t), key=key) != sorted(ref.get(t, []), key=key)]


def task_log_tail(dr, log_path: Optional[str], n: int = 40) -> str:
    """The error lines of the failed run for the terminal."""
    lines = []
    for ti in failed_tasks(dr):
        lines.append(f"task {ti.task_id} of tick run {dr.run_id}: {ti.state}")
    if log_path and os.path.exists(log_path):
        with open(log_path, encoding="utf-8", errors="replace") as fh:
            text = fh.read().splitlines()
        keep = [ln for ln in text if any(w in ln for w in ("error", "Error", "ERROR", "Fail"))]
        lines += keep[-n:]
        lines.append(f"(full log: {log_path})")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--from", dest="start", type=int, default=0)
    p.add_argument("--to", dest="end", type=int, required=True)
    p.add_argument("--lake", default=os.environ.get("HYPO_LAKE"))
    p.add_argument("--program", default=os.environ.get("HYPO_PROGRAM"))
    p.add_argument("--master", default=os.environ.get("HYPO_SPARK_MASTER"))
    p.add_argument("--airflow-home")
    p.add_argument("--log", help="where Airflow/Spark logging goes (default "
                   "$AIRFLOW_HOME/logs/run_local.log)")
    p.add_argument("--verbose", action="store_true", help="leave Airflow/Spark logging on the "
                   "terminal")
    p.add_argument("--json", action="store_true", help="print the answers of each tick as "
                   "`hypo lake answers` JSON lines instead of text")
    p.add_argument("--compare", metavar="STREAM", help="at the end, check that the lake's "
                   "answers of every tick equal `hypo run PROGRAM --stream STREAM`'s")
    a = p.parse_args(argv)
    env = airflow_env(a.airflow_home)
    os.environ.update(env)
    migrate_if_needed(env)
    log_path = None if a.verbose else (a.log or os.path.join(env["AIRFLOW_HOME"], "logs",
                                                                "run_local.log"))
    if log_path:
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
    # a local run fails fast: Airflow's retries (with back-off) are for deployments
    os.environ.setdefault("HYPO_RETRIES", "0")
    with redirected(log_path):
        mod, dag = load_dag()
    # always the full conf: an in-process dag.test leaves a run's conf in the task params
    conf = {"lake": a.lake or dag.params["lake"], "program": a.program or dag.params["program"],
            "spark_master": a.master or dag.params["spark_master"]}
    lake = mod.resolve(conf["lake"])
    print(f"hypo_ticks: ticks {a.start}..{a.end} on lake {lake} (epoch {mod.EPOCH.isoformat()}, "
          f"one tick per {mod.format_duration(mod.UNIT)}); Airflow home {env['AIRFLOW_HOME']}",
          flush=True)
    for tau in range(a.start, a.end + 1):
        t0 = time.time()
        dr = run_tick(dag, mod, tau, conf, log_path)
        if str(dr.state) != "success":
            print(f"tick {tau}: DAG run {dr.run_id} {dr.state}", file=sys.stderr)
            print(task_log_tail(dr, log_path), file=sys.stderr)
            return 1
        if a.json:
            from jobs import lake as api

            objs = api.read_answers(lake, tau)
            if not objs:
                print(json.dumps({"tick": tau, "query": api.lake_status(lake)["program"]["query"],
                                  "status": "none"}))
            for o in objs:
                print(json.dumps(o, ensure_ascii=False))
        else:
            print_tick(mod, lake, tau, dr)
        if a.verbose:
            print(f"(tick {tau}: {time.time() - t0:.1f} s)", flush=True)
    if a.compare:
        bad = compare(mod.resolve(conf["program"]), a.compare, lake, a.start, a.end)
        if bad:
            print(f"check: the lake's answers differ from `hypo run` at tick(s) "
                  f"{', '.join(map(str, bad))}", file=sys.stderr)
            return 1
        print(f"check: the lake's answers of ticks {a.start}..{a.end} equal `hypo run "
              f"{os.path.relpath(conf['program'])} --stream {os.path.relpath(a.compare)}`'s")
    with redirected(log_path):  # Spark's goodbye goes to the log too
        from jobs.tick.spark import active

        s = active()
        if s is not None:
            s.stop()
        import logging

        logging.getLogger("py4j").setLevel(logging.WARNING)  # its goodbye comes at exit
    return 0


if __name__ == "__main__":
    sys.exit(main())
