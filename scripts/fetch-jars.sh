#!/usr/bin/env bash
# Fetch the JVM jars the Spark path needs (delta-spark and its dependencies) from Maven
# Central into <venv>/hypo-jars/ (sys.prefix of HYPO_PYTHON, default .venv/bin/python; the
# image: /usr/local/hypo-jars) — at set-up, never at run time (jobs/tick/spark.py points
# spark.jars at this folder).  Idempotent: a stamp of the wanted artifacts skips the fetch.
# A jar whose artifact pyspark already ships (hadoop, jackson, parquet, scala-library, …) is
# left out: Spark's own copy is the one on the classpath, a second version would only shadow
# or conflict.  Called by scripts/setup.sh; needs `mvn` (Debian's maven) and the network once.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# delta-spark for Spark 4.2 (Scala 2.13): 4.4.0 is the newest release on Maven Central built
# for Spark 4.2 (4.4.1 exists on PyPI only); requirements.txt pins the Python package to it
DELTA_VERSION="4.4.0"
ARTIFACTS=("io.delta:delta-spark_4.2_2.13:$DELTA_VERSION")
PY="${HYPO_PYTHON:-.venv/bin/python}"
DEST="$("$PY" -c 'import sys; print(sys.prefix)')/hypo-jars"
STAMP="$DEST/.artifacts"
PYSPARK_JARS="$("$PY" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
WANT="${ARTIFACTS[*]} $(ls "$PYSPARK_JARS" | sha256sum | cut -c1-16)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && ls "$DEST"/delta-spark_*.jar >/dev/null 2>&1; then
  exit 0
fi
if ! command -v mvn >/dev/null 2>&1; then
  echo "setup: installing Maven (Debian's maven) to fetch the delta-spark jars" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq maven >/dev/null
fi
echo "setup: fetching ${ARTIFACTS[*]} and its dependencies from Maven Central" >&2
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# the jackson modules pyspark lacks, at the version of the jackson it ships (one jackson)
JACKSON="$(ls "$PYSPARK_JARS" | sed -nE 's/^jackson-databind-([0-9][^j]*)\.jar$/\1/p' | head -1)"
{
  echo '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
  echo '<groupId>hypo</groupId><artifactId>hypo-jars</artifactId><version>1</version>'
  echo '<packaging>pom</packaging>'
  if [ -n "$JACKSON" ]; then
    echo '<dependencyManagement><dependencies>'
    for a in jackson-datatype-jdk8 jackson-core jackson-databind jackson-annotations; do
      g=com.fasterxml.jackson.core; [ "$a" = jackson-datatype-jdk8 ] && g=com.fasterxml.jackson.datatype
      v="$JACKSON"; [ "$a" = jackson-annotations ] && v="${JACKSON%.*}"
      echo "<dependency><groupId>$g</groupId><artifactId>$a</artifactId><version>$v</version></dependency>"
    done
    echo '</dependencies></dependencyManagement>'
  fi
  echo '<dependencies>'
  for c in "${ARTIFACTS[@]}"; do
    IFS=: read -r g a v <<<"$c"
    echo "<dependency><groupId>$g</groupId><artifactId>$a</artifactId><version>$v</version></dependency>"
  done
  echo '</dependencies></project>'
} >"$WORK/pom.xml"
if ! mvn -q -B -f "$WORK/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
     -DoutputDirectory="$WORK/jars" >"$WORK/mvn.log" 2>&1; then
  tail -20 "$WORK/mvn.log" >&2
  echo "setup: Maven could not fetch ${ARTIFACTS[*]} (Maven Central unreachable?)" >&2
  exit 1
fi
rm -rf "$DEST"
mkdir -p "$DEST"
# Spark's copy wins: an artifact pyspark ships (any version) is not added again;
# commons-logging is jcl-over-slf4j's classes in Spark
SHIPPED="$(ls "$PYSPARK_JARS")"
for f in "$WORK"/jars/*.jar; do
  base="$(basename "$f" | sed -E 's/-[0-9][^-]*(-[0-9]+)?\.jar$//')"
  if grep -q "^$base-[0-9]" <<<"$SHIPPED" || [ "$base" = commons-logging ]; then
    continue
  fi
  cp "$f" "$DEST/"
done
echo "$WANT" >"$STAMP"
echo "setup: $(ls "$DEST"/*.jar | wc -l) jars in $DEST" >&2
