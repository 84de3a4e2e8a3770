#!/usr/bin/env bash
# Entrypoint of the hypo image: prepare the metadata DB, then start one component.
#
#   hypo-entrypoint [--dry-run] COMPONENT [ARGS...]
#
# COMPONENT
#   api-server | scheduler | dag-processor | triggerer
#                  an Airflow 3 component: first the metadata DB — `airflow db migrate` when
#                  HYPO_DB_MIGRATE=true (the default; Airflow serialises concurrent migrations
#                  with a lock), else wait until another container has migrated it
#                  (`airflow db check-migrations`) — then `exec airflow COMPONENT ARGS`
#   init           migrate the DB, create the lake's landing directory, and exit
#   demo [N]       the wind-turbine example through the DAG in this container (SQLite in a
#                  temporary AIRFLOW_HOME, local Spark): land the stream, run ticks 0..N
#                  (default 8), print the answers per tick
#   spark-master | spark-worker
#                  a Spark standalone master (port 7077) or worker (joins $SPARK_MASTER_URL,
#                  default spark://spark-master:7077) with the same Python and packages
#   spark-connect  a Spark Connect server on $SPARK_MASTER_URL, listening on 0.0.0.0:15002
#                  (scripts/spark-connect-server.sh): the DAG's tasks then use
#                  HYPO_SPARK_MASTER=sc://spark-connect:15002 instead of a JVM each
#   anything else  run as a command (airflow …, hypo lake status, bash, …)
#
# --dry-run (or HYPO_ENTRYPOINT_DRY_RUN=1) prints the commands instead of running them.
set -euo pipefail

DRY="${HYPO_ENTRYPOINT_DRY_RUN:-0}"
if [ "${1:-}" = "--dry-run" ]; then
  DRY=1
  shift
fi
COMPONENT="${1:-api-server}"
[ $# -gt 0 ] && shift

AIRFLOW="${AIRFLOW_BIN:-airflow}"
PYTHON="${PYTHON_BIN:-python}"
HYPO_HOME="${HYPO_HOME:-/opt/hypo}"
LAKE="${HYPO_LAKE:-/data/lake}"

say() { echo "hypo-entrypoint: $*" >&2; }

# run CMD…: a step (printed with --dry-run); start CMD…: the last one, exec'd.
run() {
  if [ "$DRY" = 1 ]; then
    echo "+ $*"
  else
    "$@"
  fi
}
# run_quiet LOG CMD…: a step whose output goes to LOG (its tail is shown if it fails)
run_quiet() {
  local log="$1"
  shift
  if [ "$DRY" = 1 ]; then
    echo "+ $* >$log"
    return
  fi
  "$@" >"$log" 2>&1 || { tail -n 30 "$log" >&2; say "failed: $* (log: $log)"; exit 1; }
}
start() {
  if [ "$DRY" = 1 ]; then
    echo "+ exec $*"
    exit 0
  fi
  exec "$@"
}

db_url() {
  echo "${AIRFLOW__DATABASE__SQL_ALCHEMY_CONN:-sqlite:///${AIRFLOW_HOME:-/opt/airflow}/airflow.db}"
}

prepare_db() {
  if [ "${HYPO_DB_MIGRATE:-true}" = true ]; then
    case "$(db_url)" in
      sqlite*) say "metadata DB is SQLite: fine for one container / the local demo only; use PostgreSQL (docker/compose.yaml) for several components" ;;
    esac
    run "$AIRFLOW" db migrate
  else
    run "$AIRFLOW" db check-migrations --migration-wait-timeout "${HYPO_DB_WAIT:-300}"
  fi
}

case "$COMPONENT" in
  api-server|scheduler|dag-processor|triggerer)
    prepare_db
    start "$AIRFLOW" "$COMPONENT" "$@"
    ;;
  init)
    HYPO_DB_MIGRATE=true prepare_db
    run mkdir -p "$LAKE/landing"
    say "metadata DB migrated; lake directory $LAKE (producers write $LAKE/landing/tick=<τ>/ then _READY)"
    ;;
  demo)
    UNTIL="${1:-8}"
    if [ "$DRY" = 1 ]; then HOME_DIR=/tmp/hypo-demo-airflow.XXXXXX
    else HOME_DIR="$(mktemp -d /tmp/hypo-demo-airflow.XXXXXX)"; fi
    DEMO_LAKE="${HYPO_DEMO_LAKE:-/tmp/hypo-demo-lake}"
    export AIRFLOW_HOME="$HOME_DIR"
    export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="sqlite:///$HOME_DIR/airflow.db"
    run_quiet "$HOME_DIR/migrate.log" "$AIRFLOW" db migrate
    run "$PYTHON" "$HYPO_HOME/scripts/land_stream.py" "$HYPO_HOME/examples/wind_turbines.jsonl" \
      --lake "$DEMO_LAKE" --until "$UNTIL"
    start "$PYTHON" "$HYPO_HOME/dags/run_local.py" --from 0 --to "$UNTIL" --lake "$DEMO_LAKE" \
      --program "$HYPO_HOME/examples/wind_turbines.tdl" \
      --compare "$HYPO_HOME/examples/wind_turbines.jsonl"
    ;;
  spark-master)
    start spark-class org.apache.spark.deploy.master.Master --host 0.0.0.0 \
      --port "${SPARK_MASTER_PORT:-7077}" --webui-port "${SPARK_MASTER_WEBUI_PORT:-8081}" "$@"
    ;;
  spark-worker)
    start spark-class org.apache.spark.deploy.worker.Worker \
      --cores "${SPARK_WORKER_CORES:-2}" --memory "${SPARK_WORKER_MEMORY:-4g}" \
      --webui-port "${SPARK_WORKER_WEBUI_PORT:-8082}" "$@" \
      "${SPARK_MASTER_URL:-spark://spark-master:7077}"
    ;;
  spark-connect)
    export HYPO_SPARK_CONNECT_HOST="${HYPO_SPARK_CONNECT_HOST:-0.0.0.0}" HYPO_CODE="$HYPO_HOME"
    export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$PYTHON}"
    start bash "$HYPO_HOME/scripts/spark-connect-server.sh" \
      "${SPARK_MASTER_URL:-spark://spark-master:7077}" "$@"
    ;;
  *)
    start "$COMPONENT" "$@"
    ;;
esac
