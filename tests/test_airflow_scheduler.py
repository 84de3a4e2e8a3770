"""A real Airflow scheduler (issues 14, 43): `scripts/airflow.sh` starts `airflow standalone`
(scheduler, dag-processor, api-server, triggerer; LocalExecutor) on a temporary AIRFLOW_HOME
with its metadata database on PostgreSQL, as in production (docker/compose.yaml): Debian's
server started by the test on the loopback address (tests/pghelp.py); SQLite stays the
embedded default of the demo and `dag.test`.  Catchup runs ticks 0..3, `scripts/airflow.sh
backfill 1 2` re-runs two of them, and the lake's answers equal `hypo run` with the state's
current partition S_3.  Waits follow the scheduler's progress (runs moving, the scheduler
alive), and a failure says what it was doing.  Every process it started is stopped.  The
tick tasks run on Spark through a Spark Connect server (`scripts/spark-cluster.sh start
--workers 1 --connect`; HYPO_SPARK_MASTER=sc://…, HYPO_LAKE_EXECUTOR=spark): one long-lived
driver, no JVM in a task's process."""
from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.lakehelp import reference
from tests.pghelp import postgres

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = str(ROOT / "examples" / "wind_turbines.tdl")
STREAM = str(ROOT / "examples" / "wind_turbines.jsonl")
SCRIPT = str(ROOT / "scripts" / "airflow.sh")

pytestmark = [pytest.mark.slow, pytest.mark.airflow]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def pg_url():
    with postgres() as url:
        yield url


@pytest.fixture
def connect_url(tmp_path):
    """A 1-worker standalone cluster with a Spark Connect server (scripts/spark-cluster.sh
    start --connect) on free loopback ports: the one long-lived Spark the tick tasks use."""
    import socket
    import sys

    socks = [socket.socket() for _ in range(3)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    port, webui, cport = (s.getsockname()[1] for s in socks)
    for s in socks:
        s.close()
    env = {**os.environ, "HYPO_SPARK_CLUSTER_DIR": str(tmp_path / "cluster"),
           "HYPO_SPARK_MASTER_PORT": str(port), "HYPO_SPARK_MASTER_WEBUI_PORT": str(webui),
           "HYPO_SPARK_WORKER_WEBUI_PORT": "0", "HYPO_SPARK_CONNECT_PORT": str(cport),
           "PYSPARK_PYTHON": sys.executable, "HYPO_SPARK_SHUFFLE_PARTITIONS": "1"}
    cluster = [str(ROOT / "scripts" / "spark-cluster.sh")]
    r = subprocess.run(["bash", *cluster, "start", "--workers", "1", "--connect"], env=env,
                       cwd=ROOT, text=True, capture_output=True, timeout=600)
    try:
        assert r.returncode == 0, r.stderr[-3000:]
        yield r.stdout.strip().splitlines()[-1]
    finally:
        stop = subprocess.run(["bash", *cluster, "stop"], env=env, cwd=ROOT, text=True,
                              capture_output=True, timeout=300)
        assert stop.returncode == 0, stop.stderr
        st = subprocess.run(["bash", *cluster, "status"], env=env, cwd=ROOT, text=True,
                            capture_output=True, timeout=120)
        assert st.returncode == 1, st.stdout  # nothing of the cluster is left


@pytest.fixture
def scheduler(tmp_path, pg_url, connect_url):
    """(env, lake, log, proc): a running standalone Airflow on PostgreSQL whose DAG has ticks
    0..3 to catch up, its tick tasks on Spark through the Connect server."""
    # one tick a day, epoch 4 days back: ticks 0..3 are due, and tick 4 only becomes due if
    # the test crosses midnight (with hourly ticks a run crossing the hour got a tick-4 run
    # whose poking sensor outlived the scheduler's SIGTERM)
    now = dt.datetime.now(dt.timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    lake = tmp_path / "lake"
    env = {**os.environ,
           "AIRFLOW_HOME": str(tmp_path / "airflow"), "HYPO_LAKE": str(lake),
           "HYPO_PROGRAM": PROGRAM, "HYPO_AIRFLOW_PORT": str(_free_port()),
           "HYPO_EPOCH": (now - dt.timedelta(days=4)).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "HYPO_TICK_UNIT": "1d", "HYPO_SLICE_POKE": "2s", "HYPO_RETRIES": "0",
           "HYPO_LAKE_EXECUTOR": "spark", "HYPO_SPARK_MASTER": connect_url}
    for k in [k for k in env if k.startswith("AIRFLOW__")]:
        del env[k]  # the developer's or the suite's settings: the script's defaults apply
    env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = pg_url
    subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "scripts/land_stream.py", STREAM,
                    "--lake", str(lake), "--until", "3"], cwd=ROOT, env=env, check=True,
                   capture_output=True)
    log = open(tmp_path / "standalone.log", "w")
    proc = subprocess.Popen(["bash", SCRIPT], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield env, str(lake), tmp_path / "standalone.log", proc
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        end = time.monotonic() + 60  # the api-server's workers take a few seconds
        while (leftover := _alive_in_group(proc.pid)) and time.monotonic() < end:
            time.sleep(1)
        if leftover:  # nothing of the process group is left behind
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
        assert not leftover, f"airflow standalone left processes behind: {leftover}"


def _alive_in_group(pgid: int) -> list[str]:
    """Processes of the group that still run (zombies waiting for a reaper do not)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(stat[:stat.rindex(")") + 1])
    return out


def _runs(env) -> list[dict]:
    r = subprocess.run(["bash", SCRIPT, "dags", "list-runs", "hypo_ticks", "-o", "json"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    if r.returncode:
        return []
    for line in r.stdout.splitlines():  # log lines ("… [warning ] …") come before it
        if line.startswith("[{") or line.strip() == "[]":
            try:
                return json.loads(line)
            except ValueError:
                return []
    return []


def _wait(env, log: Path, proc, done, what: str, stall: float = 420, cap: float = 2400,
          watched=lambda r: True) -> list[dict]:
    """Poll the runs until done(runs), as long as the scheduler makes progress: the test
    fails when no run changed state and the log did not grow for `stall` seconds (CI's
    shared machines: a loaded scheduler is slow, not stuck), when the scheduler is gone, or
    after `cap` seconds in all.  A failed run among the watched ones fails the test (a run
    the scheduler makes for a tick past the stream — the test crossed midnight, UTC, and the
    daily schedule made tick 4 due — fails on its missing slice, as it should).  The failure
    says what the scheduler was doing: the runs and their states, whether it was alive, how
    long since the last progress, the log's tail."""
    start = last = time.monotonic()
    seen, size = None, -1
    runs: list = []
    why = f"no progress for {stall:.0f} s"
    while True:
        runs = _runs(env)
        if any(r["state"] == "failed" and watched(r) for r in runs):
            why = "a run failed"
            break
        if done(runs):
            return runs
        now = time.monotonic()
        sig = sorted((r["run_id"], r["state"]) for r in runs)
        grown = log.stat().st_size if log.exists() else 0
        if sig != seen or grown != size:
            seen, size, last = sig, grown, now
        if proc.poll() is not None:
            why = f"the scheduler exited (code {proc.returncode})"
            break
        if now - last > stall:
            break
        if now - start > cap:
            why = f"still not done after {cap:.0f} s although it made progress"
            break
        time.sleep(5)
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
    pytest.fail(f"{what}: {why} (last progress {time.monotonic() - last:.0f} s ago, "
                f"{time.monotonic() - start:.0f} s in all); runs "
                f"{[(r['run_id'], r['state']) for r in runs]}\n{_why_tasks_failed(env, log)}"
                f"\n--- the log's tail ---\n{tail}")


def _tick_spans(url: str) -> list[str]:
    """Per dag run, from the metadata database: seconds from the slice sensor's success to
    `publish` done (issue 43's "a small tick ≤ 10 s under a real scheduler"), and the
    `ingest`, `tick` and `publish` tasks' own seconds."""
    import sqlalchemy as sa

    eng = sa.create_engine(url)
    try:
        with eng.connect() as c:
            rows = c.execute(sa.text(
                "SELECT run_id, task_id, start_date, end_date FROM task_instance "
                "WHERE dag_id = 'hypo_ticks' AND state = 'success'")).fetchall()
    finally:
        eng.dispose()
    runs: dict = {}
    for run_id, task, start, end in rows:
        runs.setdefault(run_id, {})[task] = (start, end)
    out = []
    for run_id, t in sorted(runs.items()):
        if not {"wait_for_slice", "publish"} <= set(t):
            continue
        own = ", ".join(f"{k} {(t[k][1] - t[k][0]).total_seconds():.1f} s"
                        for k in ("ingest", "tick", "publish") if k in t)
        span = (t["publish"][1] - t["wait_for_slice"][1]).total_seconds()
        out.append(f"airflow tick span {run_id}: sensor success -> publish done {span:.1f} s "
                   f"({own})")
    return out


def _why_tasks_failed(env, log: Path) -> str:
    """What a failure needs to be understood (CI keeps no temporary files): the scheduler's
    lines about failed or errored tasks and the end of every task's own log file."""
    out = []
    if log.exists():
        keys = ("FAILED", "failed with", "Executor", "ERROR", "Traceback", "error]")
        hits = [x for x in log.read_text(errors="replace").splitlines()
                if any(k in x for k in keys)]
        out.append("--- the log's lines on failures ---\n" + "\n".join(h[:600] for h in hits[-40:]))
    logs = Path(env["AIRFLOW_HOME"]) / "logs"
    for f in sorted(logs.rglob("*.log")) if logs.exists() else []:
        if "dag_processor" in f.parts or "scheduler" in f.parts:
            continue
        out.append(f"--- {f.relative_to(logs)} ---\n{f.read_text(errors='replace')[-2500:]}")
    return "\n".join(out)


def test_catchup_then_backfill_under_a_real_scheduler(scheduler):
    from jobs import lake as api

    env, lake, log, proc = scheduler
    epoch = dt.datetime.strptime(env["HYPO_EPOCH"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=dt.timezone.utc)

    def tick(r) -> int:
        return int((dt.datetime.fromisoformat(r["logical_date"]) - epoch) // dt.timedelta(days=1))

    def caught_up(runs):
        ok = {tick(r) for r in runs if r["state"] == "success"}
        return {0, 1, 2, 3} <= ok

    def in_stream(r) -> bool:
        return tick(r) <= 3

    _wait(env, log, proc, caught_up, "catchup of ticks 0..3", watched=in_stream)
    for line in _tick_spans(env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]):
        print(line)  # (the figure of bench/airflow_tick.py: printed, never asserted)
    before = {t: api.read_answers(lake, t, "all") for t in range(4)}
    started = dt.datetime.now(dt.timezone.utc)
    r = subprocess.run(["bash", SCRIPT, "backfill", "1", "2"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]

    def backfilled(runs):
        # a backfill of completed ticks re-runs their dag runs (same run ids)
        again = {tick(x) for x in runs if x["state"] == "success" and x["start_date"]
                 and dt.datetime.fromisoformat(x["start_date"]) > started}
        return {1, 2} <= again

    _wait(env, log, proc, backfilled, "backfill of ticks 1..2", watched=in_stream)
    ref: dict[int, list] = {}
    for t, lines in reference(PROGRAM, STREAM, 3, all_=True).items():
        ref[t] = [json.loads(x) for x in lines if json.loads(x).get("status") != "none"]
    key = lambda o: json.dumps(o, sort_keys=True)  # noqa: E731
    for t in range(4):
        got = api.read_answers(lake, t, "all")
        assert sorted(got, key=key) == sorted(ref.get(t, []), key=key), t
        assert sorted(got, key=key) == sorted(before[t], key=key), t
    # the current state is the last completed tick's partition, S_3 (issue 14.1), whatever
    # the backfill wrote last (a run for tick 4 exists only if the test crossed the hour)
    import pyarrow.compute as pc

    from jobs.table import delta

    st = api.lake_status(lake)
    # every tick ran on Spark, through the Connect server (no JVM in a task's process)
    from jobs.table.store import Lake

    done = Lake(lake).done()
    ran = [json.loads(done[t]["counts"])["executor"] for t in range(4)]
    assert ran == ["spark"] * 4, ran
    last = st["last_tick"]
    assert last >= 3
    state = delta.read_arrow(os.path.join(lake, "state"), "state")
    cur = state.filter(pc.equal(state.column("tick"), last))
    assert cur.num_rows == st["last"]["counts"]["state_rows"] > 0


@pytest.mark.parametrize("failures,rc", [(2, 0), (9, 1)])
def test_backfill_retries_only_a_locked_database(tmp_path, failures, rc):
    """`scripts/airflow.sh backfill` tries again when SQLite was locked by the scheduler (CI
    saw it under load), up to 5 times; any other failure is returned at once (a fake
    `airflow` in a copy of the repository's layout)."""
    import shutil
    import sys

    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, root / "scripts" / "airflow.sh")
    shutil.copytree(ROOT / "dags", root / "dags")
    venv = root / ".venv"
    (venv / "bin").mkdir(parents=True)
    real = Path(sys.prefix)
    shutil.copy(real / "pyvenv.cfg", venv / "pyvenv.cfg")
    (venv / "lib").symlink_to(real / "lib")
    (venv / "bin" / "python").symlink_to(Path(sys.executable))
    count = tmp_path / "count"
    fake = venv / "bin" / "airflow"
    fake.write_text(f"""#!/bin/bash
n=$(cat {count} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {count}
if [ $n -le {failures} ]; then echo "(sqlite3.OperationalError) database is locked"; exit 1; fi
echo "created"
""")
    fake.chmod(0o755)
    env = {**os.environ, "HYPO_AIRFLOW_RETRY_SLEEP": "0", "AIRFLOW_HOME": str(tmp_path / "ah")}
    r = subprocess.run(["bash", str(root / "scripts" / "airflow.sh"), "backfill", "1", "2"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == rc, r.stdout + r.stderr
    assert int(count.read_text()) == min(failures + 1, 5)
    assert ("created" in r.stdout) == (rc == 0)
    fake.write_text("#!/bin/bash\necho 'some other failure'; exit 3\n")
    count.unlink()
    r = subprocess.run(["bash", str(root / "scripts" / "airflow.sh"), "backfill", "1", "2"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 3 and "some other failure" in r.stdout and "retrying" not in r.stderr
    # a backfill running already is an answer, unless a locked attempt of this command left
    # it (Airflow commits the backfill before its runs): then it is removed and retried
    busy = "AlreadyRunningBackfill: Another backfill is running for Dag hypo_ticks."
    fake.write_text(f"#!/bin/bash\necho '{busy}'; exit 1\n")
    r = subprocess.run(["bash", str(root / "scripts" / "airflow.sh"), "backfill", "1", "2"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "Another backfill" in r.stdout and "retrying" not in r.stderr
    fake.write_text(f"""#!/bin/bash
n=$(cat {count} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {count}
if [ $n -eq 1 ]; then echo "(sqlite3.OperationalError) database is locked"; exit 1; fi
if [ $n -eq 2 ]; then echo '{busy}'; exit 1; fi
echo "created"
""")
    r = subprocess.run(["bash", str(root / "scripts" / "airflow.sh"), "backfill", "1", "2"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "created" in r.stdout, r.stdout + r.stderr
    assert int(count.read_text()) == 3


def test_backfill_leftover_is_removed(tmp_path):
    """The clean-up `scripts/airflow.sh backfill` runs after a locked attempt, on a real
    metadata database: a backfill created since the command started with no finished run is
    removed (with its runs), an older one or one with a finished run is kept."""
    from datetime import datetime, timedelta, timezone

    src = Path(SCRIPT).read_text()
    i = src.index("import sys\nfrom datetime import datetime, timezone")
    code = src[i:src.index("\nEOF\n", i)]
    home = tmp_path / "ah"
    home.mkdir()
    env = {**os.environ, "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db"}
    airflow = str(Path(SCRIPT).parent.parent / ".venv" / "bin" / "airflow")
    subprocess.run([airflow, "db", "migrate"], env=env, check=True, capture_output=True,
                   timeout=600)
    now = datetime.now(timezone.utc)
    setup = f"""
from datetime import datetime, timezone
from airflow.models.backfill import Backfill
from airflow.utils.session import create_session
d = datetime(2021, 1, 1, tzinfo=timezone.utc)
with create_session() as s:
    for created in ({(now - timedelta(hours=1)).isoformat()!r}, {now.isoformat()!r}):
        s.add(Backfill(dag_id="hypo_ticks", from_date=d, to_date=d, max_active_runs=1,
                       dag_run_conf={{}}, created_at=datetime.fromisoformat(created)))
"""
    py = str(Path(SCRIPT).parent.parent / ".venv" / "bin" / "python")
    subprocess.run([py, "-W", "ignore", "-c", setup], env=env, check=True, timeout=300)
    since = (now - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S")
    r = subprocess.run([py, "-W", "ignore", "-", since], input=code, env=env, text=True,
                       capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "removed backfill 2" in r.stdout and "backfill 1" not in r.stdout
    count = ("from airflow.models.backfill import Backfill\n"
             "from airflow.utils.session import create_session\n"
             "with create_session() as s: print(s.query(Backfill).count())")
    r = subprocess.run([py, "-W", "ignore", "-c", count], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.stdout.strip().splitlines()[-1] == "1"
