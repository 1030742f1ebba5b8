"""User code type-checks against pqindex's stubs: the quick start's calls, the index
classes made at import with their own arguments, and the scan options, under
``mypy --strict``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

USER_CODE = """
import pqindex

scan = pqindex.scan("events/", where="user_id = 42", columns=["ts", "message"],
                    order_by="ts desc", limit=100)
table = scan.to_arrow()
print(scan.explain(), scan.metrics()["bytes_read"])
pqindex.scan("events/", where={"op": "has_token", "args": [{"col": "message"}, {"lit": "timeout"}]},
             limit=10)
indexes = [
    pqindex.BloomIndex("trace_id", granularity="page"),
    pqindex.NgramIndex("message", n=4),
    pqindex.TokenIndex("message"),
    pqindex.DistinctIndex("user_id"),
]
pqindex.add_indexes("events/part-0.parquet", indexes)
"""


def test_user_code_type_checks(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    code = tmp_path / "user_code.py"
    code.write_text(USER_CODE)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(code)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
