#!/usr/bin/env bash
# The `spark` tests against a real Spark Thrift server: Java if absent, pyspark (which ships Spark and its
# Thrift server) in a venv of its own, the server on 127.0.0.1:10000, the tests, the server stopped by its PID.
# Usage: bash scripts/spark_ci.sh [PYTEST]   (PYTEST defaults to .venv/bin/pytest; run from anywhere)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTEST=${1:-.venv/bin/pytest}
SPARK_VENV=${SOPHROSYNE_SPARK_VENV:-.venv-spark}
PYSPARK=pyspark==4.3.0
PORT=10000
started=$(date +%s)

if ! command -v java >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
if [ ! -x "$SPARK_VENV/bin/python" ] || ! "$SPARK_VENV/bin/python" -c "import pyspark" 2>/dev/null; then
  python3 -m venv "$SPARK_VENV" && "$SPARK_VENV/bin/pip" install -q "$PYSPARK"
fi
SPARK_HOME=$("$SPARK_VENV/bin/python" -c "import os, pyspark; print(os.path.dirname(pyspark.__file__))")
export SPARK_HOME
echo "spark: java and $PYSPARK ready in $(( $(date +%s) - started )) s"

# The server's own files (warehouse, logs) stay out of the tree; the test data are Parquet files the tests write.
RUN=$(mktemp -d)
# The pip package has no start-thriftserver.sh: the server's class is submitted as sbin's script would.
# local-cluster[1,2,1024]: one worker with the machine's two cores, its executor a JVM apart from the driver (with
# local[2] one query that exhausts the memory stops the SparkContext for good; docs/policy.md); 512 MB each.
# From the run folder: the server writes derby.log (and any metastore) into its working directory.
(cd "$RUN" && exec "$SPARK_HOME/bin/spark-submit" --class org.apache.spark.sql.hive.thriftserver.HiveThriftServer2 \
  --master 'local-cluster[1,2,1024]' --driver-memory 512m --conf spark.executor.memory=512m --conf spark.ui.enabled=false \
  --conf spark.sql.catalogImplementation=in-memory --conf "spark.sql.warehouse.dir=$RUN/warehouse" \
  --hiveconf hive.server2.thrift.bind.host=127.0.0.1 --hiveconf hive.server2.thrift.port=$PORT \
  spark-internal >"$RUN/thrift.log" 2>&1) &
SERVER=$!
stop() {
  kill "$SERVER" 2>/dev/null || true
  wait "$SERVER" 2>/dev/null || true
  rm -rf "$RUN"
}
trap stop EXIT

# About 25 s to an open port on two cores; the first session answers some seconds later (the tests wait).
for _ in $(seq 1 180); do
  if (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; then break; fi
  if ! kill -0 "$SERVER" 2>/dev/null; then tail -n 40 "$RUN/thrift.log"; echo "spark: the Thrift server exited"; exit 1; fi
  sleep 1
done
(exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null || { tail -n 40 "$RUN/thrift.log"; echo "spark: no port $PORT"; exit 1; }
echo "spark: Thrift server (pid $SERVER) listening on 127.0.0.1:$PORT after $(( $(date +%s) - started )) s"

# The tests load their data (the demo database and the HR test schema, as Parquet, analyzed) themselves.
status=0
"$PYTEST" -m spark -n 0 || status=$?
echo "spark: the Spark part took $(( $(date +%s) - started )) s"
exit $status
