#!/usr/bin/env bash
# A Spark standalone cluster on this machine, from the installed pyspark (issue 42):
#
#   scripts/spark-cluster.sh start [--workers N] [--cores C] [--memory M] [--connect]
#                                    a master and N workers on 127.0.0.1 (default 2 workers,
#                                    1 core and 2g each); waits until the master sees N ALIVE
#                                    workers, then prints the master URL (spark://127.0.0.1:P);
#                                    --connect: also a Spark Connect server on the cluster (one
#                                    long-lived driver for every client), its URL printed last
#                                    (sc://127.0.0.1:C)
#   scripts/spark-cluster.sh connect (re)starts the Spark Connect server of a running cluster
#                                    if it is not running (a lost server: the DAG's retries
#                                    then go through); prints its URL
#   scripts/spark-cluster.sh status  master URL, workers alive, pids (exit 1: nothing runs)
#   scripts/spark-cluster.sh stop    stops every process start started (by pid; waits; the
#                                    executors the workers launched too); idempotent
#
# Then: hypo lake run … --executor spark --master spark://127.0.0.1:7077 (or sc://127.0.0.1:15002
# through the Connect server), or HYPO_SPARK_MASTER=… for the DAG (docs/spark.md).
#
# Environment:
#   HYPO_SPARK_CLUSTER_DIR         the cluster's folder: <repo>/.spark-cluster (git-ignored);
#                                  master/ and worker-i/ each hold their pid, log (and the
#                                  worker's work/ folder: the executors' stdout/stderr)
#   HYPO_SPARK_MASTER_PORT         7077   the master's RPC port (the URL's)
#   HYPO_SPARK_MASTER_WEBUI_PORT   8090   the master's web UI and JSON status (/json/)
#   HYPO_SPARK_WORKER_WEBUI_PORT   8091   worker i's web UI is this + i - 1 (0: any free port)
#                                  (the defaults keep clear of Airflow's 8080 and Spark's
#                                  own 8080/8081)
#   HYPO_SPARK_CONNECT_PORT        15002  the Spark Connect server's gRPC port (--connect)
#   HYPO_SPARK_START_TIMEOUT       120    seconds start waits for the workers (three JVMs
#                                  starting at once took 81 s on a loaded 2-core machine)
#   PYSPARK_PYTHON                 the Python of the executors (default: <repo>/.venv/bin/python,
#                                  else python3 on PATH); it must import pyspark, whose
#                                  folder is SPARK_HOME
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${HYPO_SPARK_CLUSTER_DIR:-$ROOT/.spark-cluster}"
PORT="${HYPO_SPARK_MASTER_PORT:-7077}"
WEBUI="${HYPO_SPARK_MASTER_WEBUI_PORT:-8090}"
WWEBUI="${HYPO_SPARK_WORKER_WEBUI_PORT:-8091}"
TIMEOUT="${HYPO_SPARK_START_TIMEOUT:-120}"
CPORT="${HYPO_SPARK_CONNECT_PORT:-15002}"
WORKERS=2 CORES=1 MEMORY=2g CONNECT=0

usage() { sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "spark-cluster: $*" >&2; exit 1; }

cmd="${1:-}"
[ -n "$cmd" ] || usage
shift
while [ $# -gt 0 ]; do
  case "$1" in
    --workers) WORKERS="${2:?}"; shift 2 ;;
    --cores) CORES="${2:?}"; shift 2 ;;
    --memory) MEMORY="${2:?}"; shift 2 ;;
    --connect) CONNECT=1; shift ;;
    -h|--help) usage ;;
    *) die "unknown option $1" ;;
  esac
done
[[ "$WORKERS" =~ ^[1-9][0-9]*$ ]] || die "--workers must be a positive number, not '$WORKERS'"
[[ "$CORES" =~ ^[1-9][0-9]*$ ]] || die "--cores must be a positive number, not '$CORES'"

python_exe() {
  if [ -n "${PYSPARK_PYTHON:-}" ]; then echo "$PYSPARK_PYTHON"
  elif [ -x "$ROOT/.venv/bin/python" ]; then echo "$ROOT/.venv/bin/python"
  else command -v python3 || die "no python3 on PATH (set PYSPARK_PYTHON)"; fi
}

# pid of a process start started, if it still runs (the pid file's pid, and its command line
# is still that JVM: a recycled pid is not ours)
alive_pid() {  # alive_pid <folder> <class>
  local f="$1/pid" pid
  [ -f "$f" ] || return 1
  pid="$(cat "$f")"
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$2" || return 1
  echo "$pid"
}

# the descendants of a pid (a worker's executors and their Python workers)
descendants() {
  local p c
  for p in "$@"; do
    for c in $(ps -o pid= --ppid "$p" 2>/dev/null); do
      echo "$c"
      descendants "$c"
    done
  done
}

# the master's view: "<alive workers> <state>" from its JSON endpoint
master_json() {
  "$(python_exe)" - "$1" <<'EOF' 2>/dev/null
import json, sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/json/", timeout=5) as r:
    d = json.load(r)
alive = [w for w in d.get("workers", []) if w.get("state") == "ALIVE"]
print(len(alive), d.get("status", "?"))
EOF
}

load_env() {  # the ports a running cluster was started with
  if [ -f "$DIR/cluster.env" ]; then
    # shellcheck disable=SC1091
    . "$DIR/cluster.env"
  fi
}

processes() {  # "<name> <pid>" of every process of the cluster that still runs
  local d pid
  if pid="$(alive_pid "$DIR/connect" SparkConnectServer)"; then echo "connect $pid"; fi
  if pid="$(alive_pid "$DIR/master" deploy.master.Master)"; then echo "master $pid"; fi
  for d in "$DIR"/worker-*; do
    [ -d "$d" ] || continue
    if pid="$(alive_pid "$d" deploy.worker.Worker)"; then echo "$(basename "$d") $pid"; fi
  done
}

status() {
  load_env
  local procs
  procs="$(processes)"
  if [ -z "$procs" ]; then
    echo "no Spark cluster runs (folder $DIR)"
    return 1
  fi
  local view
  view="$(master_json "$WEBUI" || echo "? unreachable")"
  echo "master spark://127.0.0.1:$PORT (web UI http://127.0.0.1:$WEBUI, status ${view#* })"
  echo "workers alive: ${view%% *}"
  if echo "$procs" | grep -q "^connect "; then echo "connect sc://127.0.0.1:${CPORT}"; fi
  echo "$procs" | while read -r name pid; do echo "  $name pid $pid (log $DIR/$name/log)"; done
}

stop() {
  local procs pids="" all p i
  procs="$(processes)"
  if [ -z "$procs" ]; then
    echo "no Spark cluster runs"
    rm -f "$DIR/cluster.env"
    return 0
  fi
  # the Connect server (a driver) and the workers first (they kill their executors), then
  # the master
  pids="$(echo "$procs" | awk '$1 != "master" {print $2}') $(echo "$procs" | awk '$1 == "master" {print $2}')"
  # shellcheck disable=SC2086
  all="$(descendants $pids) $pids"
  # shellcheck disable=SC2086
  kill -TERM $pids 2>/dev/null || true
  for i in $(seq 1 40); do
    p=""
    for x in $all; do kill -0 "$x" 2>/dev/null && p="$p $x"; done
    [ -z "$p" ] && break
    [ "$i" = 20 ] && kill -TERM $p 2>/dev/null || true   # the executors, if a worker left them
    sleep 0.5
  done
  if [ -n "$p" ]; then
    echo "spark-cluster: killing$p (did not stop in 20 s)" >&2
    # shellcheck disable=SC2086
    kill -KILL $p 2>/dev/null || true
    sleep 0.5
  fi
  rm -f "$DIR/cluster.env" "$DIR"/master/pid "$DIR"/worker-*/pid "$DIR"/connect/pid
  echo "stopped:$(echo "$procs" | awk '{printf " %s (pid %s)", $1, $2}')"
}

# py, spark_home and the environment of the JVMs start and connect launch
spark_env() {
  py="$(python_exe)"
  spark_home="$("$py" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null)" \
    || die "$py cannot import pyspark (set PYSPARK_PYTHON to the project's Python)"
  [ -x "$spark_home/bin/spark-class" ] || die "no $spark_home/bin/spark-class"
  command -v java >/dev/null || [ -n "${JAVA_HOME:-}" ] || die "no java on PATH (Java 17 is needed)"
  export SPARK_HOME="$spark_home" PYSPARK_PYTHON="$py" PYSPARK_DRIVER_PYTHON="$py"
  export SPARK_LOCAL_IP=127.0.0.1 GX_ANALYTICS_ENABLED=false
}

start() {
  if [ -n "$(processes)" ]; then
    load_env
    echo "spark-cluster: already running (stop it first to change it)" >&2
    status >&2 || true
    echo "spark://127.0.0.1:$PORT"
    return 0
  fi
  local py spark_home
  spark_env
  rm -rf "$DIR"/master "$DIR"/worker-* "$DIR"/connect
  mkdir -p "$DIR/master"
  cat >"$DIR/cluster.env" <<EOF
PORT=$PORT
WEBUI=$WEBUI
WORKERS=$WORKERS
CPORT=$CPORT
EOF
  # no REST submission server: its fixed port (6066) would clash between two clusters
  export SPARK_MASTER_OPTS="${SPARK_MASTER_OPTS:-} -Dspark.master.rest.enabled=false"
  nohup "$spark_home/bin/spark-class" org.apache.spark.deploy.master.Master \
    --host 127.0.0.1 --port "$PORT" --webui-port "$WEBUI" \
    >"$DIR/master/log" 2>&1 </dev/null &
  echo $! >"$DIR/master/pid"
  local i d logs="$DIR/master/log"
  for i in $(seq 1 "$WORKERS"); do
    d="$DIR/worker-$i"
    mkdir -p "$d/work"
    nohup "$spark_home/bin/spark-class" org.apache.spark.deploy.worker.Worker \
      "spark://127.0.0.1:$PORT" --host 127.0.0.1 --cores "$CORES" --memory "$MEMORY" \
      --webui-port "$([ "$WWEBUI" = 0 ] && echo 0 || echo $((WWEBUI + i - 1)))" \
      --work-dir "$d/work" \
      >"$d/log" 2>&1 </dev/null &
    echo $! >"$d/pid"
    logs="$logs $d/log"
  done
  local t0=$SECONDS view n=0
  while :; do
    view="$(master_json "$WEBUI" || true)"
    n="${view%% *}"
    [ "${n:-0}" -ge "$WORKERS" ] 2>/dev/null && break
    if ! alive_pid "$DIR/master" deploy.master.Master >/dev/null; then
      echo "spark-cluster: the master exited; its log ($DIR/master/log) ends:" >&2
      tail -n 15 "$DIR/master/log" >&2 || true
      stop >/dev/null
      exit 1
    fi
    if [ $((SECONDS - t0)) -ge "$TIMEOUT" ]; then
      echo "spark-cluster: ${n:-0} of $WORKERS worker(s) ALIVE after ${TIMEOUT} s" \
           "(HYPO_SPARK_START_TIMEOUT); see the logs: $logs" >&2
      stop >/dev/null
      exit 1
    fi
    sleep 1
  done
  echo "spark-cluster: master and $WORKERS worker(s) ($CORES core(s), $MEMORY each) up in" \
       "$((SECONDS - t0)) s; web UI http://127.0.0.1:$WEBUI; logs under $DIR" >&2
  echo "spark://127.0.0.1:$PORT"
  [ "$CONNECT" = 1 ] && start_connect
  return 0
}

# A Spark Connect server on the cluster (scripts/spark-connect-server.sh: its settings and
# why): one long-lived driver that the DAG's tasks and `hypo lake --master sc://…` use
# instead of a JVM each (issue 43)
start_connect() {  # (after spark_env: SPARK_HOME and PYSPARK_PYTHON are exported)
  local pid t0=$SECONDS
  mkdir -p "$DIR/connect"
  HYPO_SPARK_CONNECT_PORT="$CPORT" HYPO_SPARK_CONNECT_HOST=127.0.0.1 \
    nohup bash "$ROOT/scripts/spark-connect-server.sh" "spark://127.0.0.1:$PORT" \
    >"$DIR/connect/log" 2>&1 </dev/null &
  pid=$!
  echo $pid >"$DIR/connect/pid"
  while ! grep -q "Spark Connect server started" "$DIR/connect/log" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "spark-cluster: the Connect server exited; its log ($DIR/connect/log) ends:" >&2
      tail -n 15 "$DIR/connect/log" >&2 || true
      connect_failed "$pid"
    fi
    if [ $((SECONDS - t0)) -ge "$TIMEOUT" ]; then
      echo "spark-cluster: the Connect server did not start in ${TIMEOUT} s; see $DIR/connect/log" >&2
      connect_failed "$pid"
    fi
    sleep 1
  done
  echo "spark-cluster: Spark Connect server up in $((SECONDS - t0)) s (log $DIR/connect/log)" >&2
  echo "sc://127.0.0.1:$CPORT"
}

# a Connect server that did not come up: the whole cluster stopped if `start` started it,
# only the server if `connect` did (the cluster keeps running)
connect_failed() {
  if [ "$cmd" = connect ]; then
    kill -TERM "$1" 2>/dev/null || true
    rm -f "$DIR/connect/pid"
  else
    stop >/dev/null
  fi
  exit 1
}

restart_connect() {
  local py spark_home pid
  if [ -z "$(processes)" ]; then
    die "no Spark cluster runs: start one with \`scripts/spark-cluster.sh start --connect\`"
  fi
  load_env
  if pid="$(alive_pid "$DIR/connect" SparkConnectServer)"; then
    echo "spark-cluster: the Connect server already runs (pid $pid)" >&2
    echo "sc://127.0.0.1:$CPORT"
    return 0
  fi
  alive_pid "$DIR/master" deploy.master.Master >/dev/null \
    || die "the cluster's master is not running: stop, then start the cluster"
  spark_env
  rm -rf "$DIR/connect"
  start_connect
}

case "$cmd" in
  start) start ;;
  connect) restart_connect ;;
  stop) stop ;;
  status) status ;;
  *) usage ;;
esac
