#!/usr/bin/env bash
# The main job: set up, generate TPC-H lineitem, write it with page indexes and bloom
# filters, and run selective queries, printing what pqindex pruned and read.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python scripts/demo.py "$@"
