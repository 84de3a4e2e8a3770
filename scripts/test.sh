#!/usr/bin/env bash
# README command 2: set up .venv/ and run the whole test suite (unit, property, Spark, Airflow).
# The suite runs on HYPO_TEST_WORKERS pytest-xdist workers (default: the usable CPUs, at most
# 2; 0 or 1 runs it in this one process, e.g. for --pdb).  A test file runs whole on one worker, so
# its module-scoped fixtures (the Spark session, Example 13's lake) are built once.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
cd "$ROOT"
# Debian packages some tests need, installed where missing: the PostgreSQL server for the
# real-scheduler test (Airflow's metadata database as in production; the test starts its own
# server on loopback) and headless chromium for the lifecycle report's browser test
DEBS=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || DEBS+=(postgresql)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
  || DEBS+=(chromium)
if [ "${#DEBS[@]}" -gt 0 ]; then
  echo "test: installing Debian's ${DEBS[*]} (the Airflow scheduler and report browser tests)" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${DEBS[@]}" \
    >/dev/null
fi
export GX_ANALYTICS_ENABLED=false PYSPARK_PYTHON="$ROOT/.venv/bin/python"
if [ -z "${HYPO_TEST_WORKERS:-}" ]; then
  HYPO_TEST_WORKERS=$(.venv/bin/python -c 'import os; print(min(2, len(os.sched_getaffinity(0))))')
fi
XDIST=()
if [ "$HYPO_TEST_WORKERS" -gt 1 ] 2>/dev/null; then
  XDIST=(-n "$HYPO_TEST_WORKERS" --dist loadfile --no-loadscope-reorder)
fi
exec .venv/bin/python -m pytest "${XDIST[@]}" "$@"
