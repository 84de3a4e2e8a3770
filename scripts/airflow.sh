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
# `airflow standalone` starts the scheduler and the api-server together: on a loaded machine
# the scheduler queues the first tasks before the api-server listens, and a worker gives up
# on "connection refused" after its 5 default attempts (~10 s; CI saw a catchup run fail so)
# — keep trying for a minute or two
export AIRFLOW__WORKERS__EXECUTION_API_RETRIES="${AIRFLOW__WORKERS__EXECUTION_API_RETRIES:-12}"
export AIRFLOW__WORKERS__EXECUTION_API_RETRY_WAIT_MAX="${AIRFLOW__WORKERS__EXECUTION_API_RETRY_WAIT_MAX:-20}"
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
    # SQLite's busy timeout, and `backfill create` fails with "database is locked" — try
    # again, a few times, for that error only.  Airflow commits the backfill before its runs
    # and removes it after a lock error only if it can: a backfill left behind makes the
    # next attempt fail with "Another backfill is running", so after a lock error that
    # failure is retried too, once the backfill this command left (created since it started,
    # no run finished) is removed.
    STARTED="$(date -u +%Y-%m-%dT%H:%M:%S)"
    LOCKED=0
    for attempt in 1 2 3 4 5; do
      set +e
      OUT="$(airflow backfill create --dag-id hypo_ticks --from-date "$FROM" --to-date "$TO" \
        --reprocess-behavior completed --max-active-runs 1 2>&1)"
      RC=$?
      set -e
      RETRY=0
      if [ $RC -ne 0 ]; then
        if grep -q "database is locked" <<<"$OUT"; then
          RETRY=1
        elif [ $LOCKED -eq 1 ] && grep -q "Another backfill is running" <<<"$OUT"; then
          RETRY=1
        fi
      fi
      if [ $RETRY -eq 0 ] || [ $attempt -eq 5 ]; then
        printf '%s\n' "$OUT"
        exit $RC
      fi
      LOCKED=1
      echo "scripts/airflow.sh: the metadata database was locked (attempt $attempt of 5); retrying" >&2
      sleep $((attempt * ${HYPO_AIRFLOW_RETRY_SLEEP:-3}))
      python -W ignore - "$STARTED" >&2 <<'EOF' || echo "scripts/airflow.sh: could not look for a backfill the failed attempt left (the next attempt reports one)" >&2
import sys
from datetime import datetime, timezone

from sqlalchemy import delete, func, select

from airflow.models.backfill import Backfill, BackfillDagRun
from airflow.models.dagrun import DagRun
from airflow.utils.session import create_session

since = datetime.fromisoformat(sys.argv[1]).replace(tzinfo=timezone.utc)
with create_session() as s:  # commits at the end
    for b in s.scalars(select(Backfill).where(
            Backfill.dag_id == "hypo_ticks", Backfill.completed_at.is_(None),
            Backfill.created_at >= since)).all():
        if s.scalar(select(func.count()).select_from(DagRun).where(
                DagRun.backfill_id == b.id, DagRun.end_date.is_not(None))):
            continue  # a run of it finished: not a leftover of a failed create
        s.execute(delete(BackfillDagRun).where(BackfillDagRun.backfill_id == b.id))
        s.execute(delete(DagRun).where(DagRun.backfill_id == b.id))
        s.delete(b)
        print(f"scripts/airflow.sh: removed backfill {b.id}, left by the failed attempt")
EOF
    done ;;
  standalone)
    airflow db migrate >/dev/null
    exec airflow standalone ;;
  *)
    exec airflow "$@" ;;
esac
