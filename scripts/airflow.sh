#!/usr/bin/env bash
# Airflow for real on the embedded defaults (SQLite, LocalExecutor, local Spark, ./lake):
#
#   scripts/airflow.sh                 start scheduler + dag-processor + api-server
#                                      (`airflow standalone`; Ctrl-C stops them all)
#   scripts/airflow.sh dates A B       the logical dates of ticks A..B (for backfill)
#   scripts/airflow.sh backfill A B    re-run ticks A..B on the running scheduler
#   scripts/airflow.sh ARGS…           any airflow command in this environment
#
# Environment: AIRFLOW_HOME (default <repo>/airflow_home), HYPO_AIRFLOW_PORT (8080),
# HYPO_EPOCH / HYPO_TICK_UNIT (the tick grid: logical date = epoch + τ × unit), HYPO_LAKE,
# HYPO_PROGRAM, HYPO_SPARK_MASTER (the DAG's params).  Catchup creates one run per tick
# whose interval has ended since HYPO_EPOCH: land those slices (scripts/land_stream.py,
# an empty slice is a `_READY` marker alone) or their sensors fail after
# HYPO_SLICE_TIMEOUT; set HYPO_EPOCH close to now for a new stream.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ -x "$ROOT/.venv/bin/airflow" ] || bash "$ROOT/scripts/setup.sh"
export PATH="$ROOT/.venv/bin:$PATH"
export AIRFLOW_HOME="${AIRFLOW_HOME:-$ROOT/airflow_home}"
export AIRFLOW__CORE__DAGS_FOLDER="$ROOT/dags"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__EXECUTOR="${AIRFLOW__CORE__EXECUTOR:-LocalExecutor}"
export AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION=False
export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="${AIRFLOW__DATABASE__SQL_ALCHEMY_CONN:-sqlite:///$AIRFLOW_HOME/airflow.db}"
export AIRFLOW__API__PORT="${HYPO_AIRFLOW_PORT:-8080}"
export AIRFLOW__API__BASE_URL="${AIRFLOW__API__BASE_URL:-http://localhost:${HYPO_AIRFLOW_PORT:-8080}}"
# a task's start (PATCH …/run) is not idempotent: when the api-server, busy or starting on
# SQLite, answers it after the worker's 5 s default, the retry finds the task running and
# the task fails — wait longer before giving up
export AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT="${AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT:-30}"
export GX_ANALYTICS_ENABLED=false PYSPARK_PYTHON="$ROOT/.venv/bin/python"
mkdir -p "$AIRFLOW_HOME"
cd "$ROOT"

dates() {  # the logical dates of ticks $1..$2 on the DAG's grid
  python -W ignore - "$1" "$2" <<'EOF'
import sys
sys.path.insert(0, "dags")
from hypo_ticks import date_of
a, b = int(sys.argv[1]), int(sys.argv[2])
if b < a:
    raise SystemExit(f"airflow.sh: ticks {a}..{b}: the range is empty")
print(date_of(a).isoformat(), date_of(b).isoformat())
EOF
}

case "${1:-standalone}" in
  dates)
    [ $# -eq 3 ] || { echo "usage: scripts/airflow.sh dates A B" >&2; exit 2; }
    dates "$2" "$3" ;;
  backfill)
    [ $# -eq 3 ] || { echo "usage: scripts/airflow.sh backfill A B" >&2; exit 2; }
    read -r FROM TO < <(dates "$2" "$3")
    # SQLite has one writer: under load the running scheduler can hold the database past
    # SQLite's busy timeout, and the backfill's transaction (rolled back whole) fails with
    # "database is locked" — try again, a few times, for that error only
    for attempt in 1 2 3 4 5; do
      set +e
      OUT="$(airflow backfill create --dag-id hypo_ticks --from-date "$FROM" --to-date "$TO" \
        --reprocess-behavior completed --max-active-runs 1 2>&1)"
      RC=$?
      set -e
      if [ $RC -eq 0 ] || ! grep -q "database is locked" <<<"$OUT" || [ $attempt -eq 5 ]; then
        printf '%s\n' "$OUT"
        exit $RC
      fi
      echo "scripts/airflow.sh: the metadata database was locked (attempt $attempt of 5); retrying" >&2
      sleep $((attempt * ${HYPO_AIRFLOW_RETRY_SLEEP:-3}))
    done ;;
  standalone)
    airflow db migrate >/dev/null
    exec airflow standalone ;;
  *)
    exec airflow "$@" ;;
esac
