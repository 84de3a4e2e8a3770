"""docker/: the entrypoint (run directly with bash, --dry-run), the compose file (validated by
`docker compose config` when a compose client is installed — no engine needed — and checked
structurally always), and lint-level checks of the Dockerfile.  No Docker engine is needed."""
from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCKER = ROOT / "docker"
ENTRYPOINT = DOCKER / "entrypoint.sh"
COMPOSE = DOCKER / "compose.yaml"
DOCKERFILE = DOCKER / "Dockerfile"
AIRFLOW_COMPONENTS = {"api-server", "scheduler", "dag-processor", "triggerer"}


def entry(*args: str, **env: str) -> list[str]:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("HYPO_", "AIRFLOW", "SPARK_"))}
    r = subprocess.run(["bash", str(ENTRYPOINT), "--dry-run", *args], capture_output=True,
                       text=True, env={**base, **env}, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


# ====================================================================== entrypoint
def test_entrypoint_is_valid_bash():
    r = subprocess.run(["bash", "-n", str(ENTRYPOINT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert os.access(ENTRYPOINT, os.X_OK)
    if shutil.which("shellcheck"):
        r = subprocess.run(["shellcheck", str(ENTRYPOINT)], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout


@pytest.mark.parametrize("component", sorted(AIRFLOW_COMPONENTS))
def test_entrypoint_migrates_then_starts_the_component(component):
    assert entry(component) == ["+ airflow db migrate", f"+ exec airflow {component}"]
    assert entry(component, "--port", "9090", HYPO_DB_MIGRATE="false") == [
        "+ airflow db check-migrations --migration-wait-timeout 300",
        f"+ exec airflow {component} --port 9090"]


def test_entrypoint_default_component_and_sqlite_warning():
    r = subprocess.run(["bash", str(ENTRYPOINT), "--dry-run"], capture_output=True, text=True,
                       env={"PATH": os.environ["PATH"]})
    assert r.stdout.splitlines() == ["+ airflow db migrate", "+ exec airflow api-server"]
    assert "SQLite" in r.stderr and "PostgreSQL" in r.stderr
    pg = "postgresql+psycopg2://airflow:x@postgres/airflow"
    r = subprocess.run(["bash", str(ENTRYPOINT), "--dry-run", "scheduler"], capture_output=True,
                       text=True, env={"PATH": os.environ["PATH"],
                                       "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": pg})
    assert "SQLite" not in r.stderr


def test_entrypoint_init_demo_spark_and_passthrough():
    assert entry("init", HYPO_LAKE="/data/lake", HYPO_DB_MIGRATE="false") == [
        "+ airflow db migrate", "+ mkdir -p /data/lake/landing"]
    demo = entry("demo", "3", HYPO_HOME="/opt/hypo")
    assert demo[0].startswith("+ airflow db migrate >/tmp/hypo-demo-airflow")
    assert demo[1] == ("+ python /opt/hypo/scripts/land_stream.py "
                       "/opt/hypo/examples/wind_turbines.jsonl --lake /tmp/hypo-demo-lake "
                       "--until 3")
    assert demo[2].startswith("+ exec python /opt/hypo/dags/run_local.py --from 0 --to 3 ")
    assert "--compare /opt/hypo/examples/wind_turbines.jsonl" in demo[2]
    assert entry("spark-master") == [
        "+ exec spark-class org.apache.spark.deploy.master.Master --host 0.0.0.0 --port 7077 "
        "--webui-port 8081"]
    assert entry("spark-worker", SPARK_MASTER_URL="spark://m:7077")[-1].endswith(
        "--webui-port 8082 spark://m:7077")
    assert entry("spark-connect", HYPO_HOME="/opt/hypo") == [
        "+ exec bash /opt/hypo/scripts/spark-connect-server.sh spark://spark-master:7077"]
    assert entry("hypo", "lake", "status") == ["+ exec hypo lake status"]
    assert entry("airflow", "dags", "list") == ["+ exec airflow dags list"]


def test_entrypoint_env_dry_run_and_real_passthrough(tmp_path):
    assert entry("scheduler", HYPO_ENTRYPOINT_DRY_RUN="1")[-1] == "+ exec airflow scheduler"
    r = subprocess.run(["bash", str(ENTRYPOINT), "echo", "hello"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0 and r.stdout == "hello\n"


# ====================================================================== compose
def compose_client() -> list[str] | None:
    """A compose client that can render a file without an engine, or None."""
    for cmd in (["docker", "compose"], ["docker-compose"]):
        if not shutil.which(cmd[0]):
            continue
        r = subprocess.run(cmd + ["version"], capture_output=True, text=True)
        if r.returncode == 0 and re.search(r"v?2\.\d+", r.stdout):
            return cmd
    return None


def test_compose_config_is_valid():
    cmd = compose_client()
    if cmd is None:
        pytest.skip("no Docker Compose v2 client here (`docker compose` plugin or a v2 "
                    "`docker-compose`); the structural checks below still run")
    for profile in ([], ["--profile", "*"]):
        r = subprocess.run(cmd + ["-f", str(COMPOSE), *profile, "config", "-q"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
    r = subprocess.run(cmd + ["-f", str(COMPOSE), "--profile", "*", "config", "--services"],
                       capture_output=True, text=True, timeout=60)
    assert set(r.stdout.split()) == {
        "postgres", "airflow-init", "airflow-api-server", "airflow-scheduler",
        "airflow-dag-processor", "hypo-cli", "spark-master", "spark-worker", "spark-connect"}


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())  # resolves the anchors and merge keys


def test_compose_structure(compose):
    svc = compose["services"]
    assert set(compose["volumes"]) == {"postgres-data", "airflow-logs", "hypo-lake"}
    assert svc["postgres"]["image"].startswith("postgres:")
    hypo = {k: v for k, v in svc.items() if k != "postgres"}
    for name, s in hypo.items():
        assert s["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}, name
        env = s["environment"]
        assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg2://")
        assert "@postgres:5432/" in env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
        assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == \
            "http://airflow-api-server:8080/execution/"
        assert env["AIRFLOW__API_AUTH__JWT_SECRET"]  # one secret for all components
        assert env["HYPO_LAKE"] == "/data/lake"
        comp = s["command"][0]
        assert comp in AIRFLOW_COMPONENTS | {"init", "spark-master", "spark-worker",
                                             "spark-connect", "hypo"}
    airflow = {n for n, s in hypo.items() if s["command"][0] in AIRFLOW_COMPONENTS}
    assert {hypo[n]["command"][0] for n in airflow} == {"api-server", "scheduler",
                                                        "dag-processor"}
    for n in airflow:  # they wait for the init service's migration
        assert hypo[n]["environment"]["HYPO_DB_MIGRATE"] == "false"
        assert hypo[n]["depends_on"]["airflow-init"]["condition"] == \
            "service_completed_successfully"
        assert hypo[n]["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert "airflow-logs:/opt/airflow/logs" in hypo[n]["volumes"]
    assert svc["airflow-init"]["environment"]["HYPO_DB_MIGRATE"] == "true"
    # the lake volume wherever tasks (LocalExecutor: the scheduler) or Spark executors run
    for n in ("airflow-scheduler", "airflow-init", "spark-worker", "spark-connect", "hypo-cli"):
        assert "hypo-lake:/data/lake" in svc[n]["volumes"], n
    assert svc["airflow-api-server"]["ports"] == ["${HYPO_PORT:-8080}:8080"]
    assert "spark.driver.host=airflow-scheduler" in \
        svc["airflow-scheduler"]["environment"]["PYSPARK_SUBMIT_ARGS"]
    assert svc["airflow-scheduler"]["environment"]["HYPO_SPARK_MASTER"].startswith(
        "${HYPO_SPARK_MASTER")
    assert svc["spark-worker"]["environment"]["SPARK_MASTER_URL"] == "spark://spark-master:7077"
    assert svc["spark-connect"]["environment"]["SPARK_MASTER_URL"] == "spark://spark-master:7077"
    assert {svc[n]["profiles"][0] for n in ("spark-master", "spark-worker", "spark-connect")} \
        == {"spark"}


# ====================================================================== Dockerfile
def instructions() -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            op, _, rest = line.partition(" ")
            out.append((op.upper(), " ".join(rest.split())))
    return out


def test_dockerfile_lint():
    ins = instructions()
    args = {r.split("=", 1)[0]: r.split("=", 1)[1] for op, r in ins if op == "ARG" and "=" in r}
    [frm] = [r for op, r in ins if op == "FROM"]
    base = args.get(frm.strip("${}"), frm)
    # a pinned base: python 3.11 slim bookworm with a full patch version (or a digest)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", base), base
    runs = [r for op, r in ins if op == "RUN"]
    apt = next(r for r in runs if "apt-get install" in r)
    assert "openjdk-17-jre-headless" in apt and "--no-install-recommends" in apt
    assert "apt-get update" in apt and "rm -rf /var/lib/apt/lists/*" in apt
    copies = [r for op, r in ins if op == "COPY"]
    i_req = next(i for i, (op, r) in enumerate(ins) if op == "COPY" and "requirements.txt" in r)
    i_pip = next(i for i, (op, r) in enumerate(ins)
                 if op == "RUN" and "pip install -r requirements.txt" in r)
    i_src = next(i for i, (op, r) in enumerate(ins) if op == "COPY" and r.startswith("reasoning/"))
    assert i_req < i_pip < i_src  # dependencies cached apart from the sources
    assert any("pip install --no-deps" in r for r in runs)  # no unpinned resolution
    env = " ".join(r for op, r in ins if op == "ENV")
    for want in ("AIRFLOW_HOME=", "HYPO_LAKE=/data/lake", "JAVA_HOME=",
                 "AIRFLOW__CORE__DAGS_FOLDER=/opt/hypo/dags", "GX_ANALYTICS_ENABLED=false"):
        assert want in env, want
    user = [r for op, r in ins if op == "USER"]
    assert user and user[-1] not in ("root", "0")
    assert [r for op, r in ins if op == "ENTRYPOINT"] == [
        '["/usr/bin/tini", "--", "/usr/local/bin/hypo-entrypoint"]']
    assert not any(op == "ADD" for op, _ in ins)
    # every COPY source exists and is let through by docker/Dockerfile.dockerignore
    ignore = [ln.strip() for ln in (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()
              if ln.strip() and not ln.startswith("#")]
    for c in copies:
        src = c.split()[0]
        assert (ROOT / src).exists(), src
        assert _included(src.rstrip("/"), ignore), f"{src} is excluded by the dockerignore"
    assert not _included(".venv", ignore) and not _included("lake", ignore)
    assert not _included("reasoning/__pycache__", ignore)
    # the C row kernels are built in the image (a compiler installed and removed in the same
    # layer), never copied from the build machine, and the image checks they load
    assert not _included("reasoning/native/_ckernels.cpython-311-x86_64-linux-gnu.so", ignore)
    build = next(r for r in runs if "pip install --no-deps -e ." in r)  # setup.py builds them
    assert build.index("apt-get install") < build.index("pip install --no-deps -e .") \
        < build.index("apt-get purge") and "gcc" in build
    assert "kernels.IMPL == 'c'" in build


def _included(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last matching pattern wins (`!` re-includes)."""
    keep = True
    for p in patterns:
        neg = p.startswith("!")
        pat = p[1:] if neg else p
        pat = pat.rstrip("/")
        if fnmatch.fnmatch(path, pat) or fnmatch.fnmatch(path, pat.replace("**/", "")) \
                or (pat.startswith("**/") and fnmatch.fnmatch(Path(path).name, pat[3:])):
            keep = neg
    return keep


def test_the_postgresql_drivers_are_pinned():
    """compose's PostgreSQL metadata database needs psycopg2 and asyncpg: pinned in
    requirements.txt (the real-scheduler test runs on PostgreSQL too), which the image
    installs."""
    pins = {ln.split("==")[0].lower(): ln for ln in (ROOT / "requirements.txt").read_text()
            .splitlines() if "==" in ln and not ln.startswith("#")}
    for pkg in ("psycopg2-binary", "asyncpg"):
        assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", pins[pkg]), pins.get(pkg)
    assert "pip install -r requirements.txt" in DOCKERFILE.read_text()