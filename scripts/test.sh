#!/usr/bin/env bash
# Everything CI checks: formatting and lints, Rust unit tests, and the pytest suite
# (DuckDB differential tests and local Spark tests included). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

echo "== layers of the Rust core (imports point down, no cycles)"
.venv/bin/python scripts/check_layers.py

echo "== cargo fmt / clippy"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings

echo "== cargo test"
cargo test -p pqindex-core

echo "== ruff / mypy"
.venv/bin/ruff check python tests benches scripts
.venv/bin/ruff format --check python tests benches scripts
.venv/bin/mypy
.venv/bin/python -m mypy.stubtest pqindex._native --allowlist python/stubtest-allowlist.txt

echo "== pytest"
.venv/bin/python -m pytest -q --spark "$@"
