#!/usr/bin/env bash
# The Spark Connect server of hypo (issue 43): one long-lived Spark driver on a cluster that
# the DAG's tick tasks and `hypo lake … --master sc://…` use instead of a JVM each.  Runs in
# the foreground (exec spark-submit); scripts/spark-cluster.sh start --connect runs it in the
# background on its loopback cluster, the image's entrypoint (`spark-connect`) in compose.
#
#   scripts/spark-connect-server.sh MASTER_URL
#
# Environment:
#   SPARK_HOME                     the installed pyspark folder (default: found from PYTHON)
#   PYSPARK_PYTHON                 the Python of the driver and the executors (default python3)
#   HYPO_SPARK_JARS                the delta-spark jars' folder (default: <its prefix>/hypo-jars)
#   HYPO_SPARK_CONNECT_HOST        the address the server listens on (default 127.0.0.1)
#   HYPO_SPARK_CONNECT_PORT        its gRPC port (default 15002)
#   HYPO_SPARK_SHUFFLE_PARTITIONS  spark.sql.shuffle.partitions (default 4)
#   HYPO_CODE                      the project's folder on the executors' PYTHONPATH
#
# The settings are the sessions' of jobs/tick/spark.py (Delta's extension and catalog,
# adaptive execution off, no broadcast joins, UTC), plus Python workers without a daemon and
# not reused: Spark 4.2 keys an executor's Python workers by the Connect session and never
# frees them (SPARK-54055, after 4.2), so every DAG task — a session of its own — left a
# daemon and a worker (~280 MB) on each executor for good; a session's workers would not be
# reused by the next task anyway.
set -euo pipefail
MASTER="${1:?usage: spark-connect-server.sh MASTER_URL}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYSPARK_PYTHON:-python3}"
SPARK_HOME="${SPARK_HOME:-$("$PY" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')}"
VERSION="$("$PY" -c 'import pyspark; print(pyspark.__version__)')"
CJAR="$SPARK_HOME/jars/spark-connect_2.13-$VERSION.jar"
[ -f "$CJAR" ] || { echo "spark-connect-server: no $CJAR (the Spark Connect server of pyspark)" >&2; exit 1; }
JARS_DIR="${HYPO_SPARK_JARS:-$("$PY" -c 'import sys; print(sys.prefix)')/hypo-jars}"
JARS="$(ls "$JARS_DIR"/*.jar 2>/dev/null | paste -sd, -)"
[ -n "$JARS" ] || { echo "spark-connect-server: no delta-spark jars in $JARS_DIR: run bash scripts/setup.sh" >&2; exit 1; }
exec "$SPARK_HOME/bin/spark-submit" --class org.apache.spark.sql.connect.service.SparkConnectServer \
  --master "$MASTER" --name hypo-connect \
  --conf "spark.connect.grpc.binding.address=${HYPO_SPARK_CONNECT_HOST:-127.0.0.1}" \
  --conf "spark.connect.grpc.binding.port=${HYPO_SPARK_CONNECT_PORT:-15002}" \
  --conf "spark.jars=$JARS" \
  --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension \
  --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog \
  --conf spark.databricks.delta.snapshotPartitions=1 \
  --conf spark.python.use.daemon=false --conf spark.python.worker.reuse=false \
  --conf spark.sql.adaptive.enabled=false --conf spark.sql.autoBroadcastJoinThreshold=-1 \
  --conf spark.sql.session.timeZone=UTC --conf spark.ui.showConsoleProgress=false \
  --conf "spark.sql.shuffle.partitions=${HYPO_SPARK_SHUFFLE_PARTITIONS:-4}" \
  --conf "spark.executorEnv.PYTHONPATH=${HYPO_CODE:-$ROOT}" \
  --conf spark.executorEnv.GX_ANALYTICS_ENABLED=false \
  --conf "spark.pyspark.python=$PY" --conf "spark.pyspark.driver.python=$PY" \
  "$CJAR"
