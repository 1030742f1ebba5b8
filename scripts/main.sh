#!/usr/bin/env bash
# The main job: set up, then a PySpark pipeline on local Spark: generate TPC-H lineitem, write
# it with Spark and with pqindex.spark.write, and run selective queries with pqindex.spark.read
# and with Spark's reader, printing time, rows and bytes fetched for both.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python scripts/pipeline.py "$@"
