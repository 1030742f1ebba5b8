#!/usr/bin/env bash
# Set up a fresh machine: a virtualenv in .venv with the test and development tools, and
# pqindex built (release) and installed into it. Safe to run again: it only rebuilds what
# changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# The extras in pyproject.toml are the single list of what tests and tools need.
extras=$(.venv/bin/python - <<'PY'
import tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]
print("\n".join(deps["test"] + deps["dev"] + deps["bench"]))
PY
)
mapfile -t requirements <<< "$extras"
.venv/bin/python -m pip install -q "${requirements[@]}"
rustup component add rustfmt clippy >/dev/null 2>&1 || true
VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH" .venv/bin/maturin develop --release -q
