"""The extension's allocator asks the kernel for ordinary pages, not transparent huge pages,
unless the environment says otherwise (``MIMALLOC_ALLOW_THP``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

THP_MODE = Path("/sys/kernel/mm/transparent_hugepage/enabled")

#: Scans a file, keeps the result, and prints the process's anonymous huge pages in kB.
CHILD = """
import sys
import pqindex
table = pqindex.scan(sys.argv[1]).to_arrow()
assert table.num_rows == int(sys.argv[2])
huge = 0
for line in open("/proc/self/smaps"):
    if line.startswith("AnonHugePages:"):
        huge += int(line.split()[1])
print(huge)
"""


def huge_pages_kb(path: Path, rows: int, **env: str) -> int:
    environ = {k: v for k, v in os.environ.items() if k != "MIMALLOC_ALLOW_THP"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(rows)],
        env=environ | env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return int(out.stdout.strip())


@pytest.mark.skipif(
    not THP_MODE.exists() or "[madvise]" not in THP_MODE.read_text(),
    reason="huge pages are given on request only where the kernel's mode is madvise",
)
def test_scans_take_no_transparent_huge_pages_unless_asked(tmp_path: Path) -> None:
    """64 MB of decoded columns in ordinary pages; with `MIMALLOC_ALLOW_THP=1` the same scan
    maps huge pages (so the measure can see them)."""
    rows = 4_000_000
    path = tmp_path / "wide.parquet"
    table = pa.table(
        {"a": pa.array(range(rows), pa.int64()), "b": pa.array(range(rows), pa.int64())}
    )
    pq.write_table(table, path, row_group_size=1_000_000)
    assert huge_pages_kb(path, rows) == 0
    assert huge_pages_kb(path, rows, MIMALLOC_ALLOW_THP="1") > 0
