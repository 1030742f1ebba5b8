#!/usr/bin/env bash
# The main job: set up, then a PySpark pipeline on local Spark: generate TPC-H lineitem and
# part, write lineitem with Spark, index it and build its catalog with pqindex.spark, and run
# the queries a pipeline runs with pqindex.spark.read and with Spark's reader, printing time,
# rows, bytes fetched and what pqindex skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python scripts/pipeline.py "$@"
