#!/usr/bin/env bash
# README command 2: set up .venv/ and run the whole test suite (unit, property, Spark, Airflow).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
cd "$ROOT"
export GX_ANALYTICS_ENABLED=false PYSPARK_PYTHON="$ROOT/.venv/bin/python"
exec .venv/bin/python -m pytest "$@"
