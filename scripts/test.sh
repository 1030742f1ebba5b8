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
cargo clippy --workspace --all-targets --features pqindex-core/fuzzing -- -D warnings

echo "== cargo test / doc"
cargo test -p pqindex-core --features fuzzing
RUSTDOCFLAGS="-D warnings" cargo doc -p pqindex-core --no-deps --document-private-items -q

echo "== ruff / mypy"
.venv/bin/ruff check python tests benches scripts
.venv/bin/ruff format --check python tests benches scripts
.venv/bin/mypy
.venv/bin/python -m mypy.stubtest pqindex._native --allowlist python/stubtest-allowlist.txt

echo "== pytest"
.venv/bin/python -m pytest -q --spark "$@"

# The same rows with every unit decoded by the parquet crate's stock reader: the oracle a
# wrong row is bisected with.
echo "== pytest, stock decoding (PQINDEX_DECODE=stock)"
PQINDEX_DECODE=stock .venv/bin/python -m pytest -q --spark "$@" \
    tests/test_differential.py tests/test_corpus.py tests/test_delta.py tests/test_iceberg.py \
    tests/test_keys.py tests/test_string_predicates.py tests/test_structured_predicate.py \
    tests/test_wild_types.py tests/test_catalog.py tests/test_limit.py tests/test_top_k.py

# pqindex[spark] alone, as a classic-session user installs it (no Connect extras, so no
# grpcio): the wheel, installed into an environment of its own, against local Spark.
echo "== Spark tests with pqindex[spark] only (classic sessions; the wheel in .venv-classic)"
rm -rf target/wheels-classic
VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH" .venv/bin/maturin build --release -q -o target/wheels-classic
python3 -m venv --clear .venv-classic
.venv-classic/bin/python -m pip install -q "$(ls target/wheels-classic/pqindex-*.whl)[spark]" pytest numpy duckdb
if .venv-classic/bin/python -c "import grpc" 2>/dev/null; then
    echo "grpcio is installed with pqindex[spark] alone" >&2
    exit 1
fi
.venv-classic/bin/python -m pytest -q --spark -p no:cacheprovider tests/test_spark_classic_only.py \
    tests/test_spark_datasource.py tests/test_spark_sql.py tests/test_spark_tables_by_name.py
