"""Footer parsing against pyarrow on a wide file, and a metadata-cache hit against a cold
parse, in one run.

    python benches/footer.py [--runs 21] [--data-dir /tmp/pqindex-bench] [--out benches/results]

The file is 1,000 Int64 columns x 20 row groups of 1,000 rows, written by pqindex.write
(page index on). Timed, each a median of ``--runs``:

- ``pyarrow.parquet.read_metadata`` (footer only; pyarrow keeps no cache);
- ``pqindex.read_metadata(page_index=False)`` with the metadata cache cleared first: the
  footer alone, the same work as pyarrow's;
- ``pqindex.read_metadata`` with the cache cleared first: footer *and* page index, so it does
  more than pyarrow;
- ``pqindex.read_metadata`` again with the cache warm (a hit), against the cold footer and
  page index read.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pqindex
import pyarrow as pa
import pyarrow.parquet as pq

COLUMNS = 1_000
ROW_GROUPS = 20
ROWS_PER_GROUP = 1_000


def wide_file(data_dir: Path) -> Path:
    path = data_dir / "footer" / f"wide-{COLUMNS}x{ROW_GROUPS}.parquet"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    rows = ROW_GROUPS * ROWS_PER_GROUP
    table = pa.table({f"c{i:04d}": rng.integers(0, 1 << 40, rows) for i in range(COLUMNS)})
    pqindex.write(table, path, row_group_size=ROWS_PER_GROUP)
    return path


def median_ms(run: Callable[[], Any], runs: int, before: Callable[[], None] | None = None) -> float:
    times = []
    for _ in range(runs + 1):  # the first run warms the page cache and is dropped
        if before is not None:
            before()
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times[1:])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--runs", type=int, default=21)
    p.add_argument("--data-dir", type=Path, default=Path("/tmp/pqindex-bench"))
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = p.parse_args()

    path = wide_file(args.data_dir)
    md = pq.read_metadata(path)
    assert md.num_columns == COLUMNS and md.num_row_groups == ROW_GROUPS
    pyarrow_ms = median_ms(lambda: pq.read_metadata(path), args.runs)
    footer_ms = median_ms(
        lambda: pqindex.read_metadata(path, page_index=False),
        args.runs,
        before=pqindex.clear_metadata_cache,
    )
    cold_ms = median_ms(
        lambda: pqindex.read_metadata(path), args.runs, before=pqindex.clear_metadata_cache
    )
    pqindex.read_metadata(path)
    warm_ms = median_ms(lambda: pqindex.read_metadata(path), args.runs)
    result = {
        "file": {
            "columns": COLUMNS,
            "row_groups": ROW_GROUPS,
            "bytes": path.stat().st_size,
            "footer_bytes": md.serialized_size,
        },
        "runs": args.runs,
        "pyarrow_read_metadata_ms": pyarrow_ms,
        "pqindex_footer_cold_ms": footer_ms,
        "pqindex_cold_ms": cold_ms,
        "pqindex_cache_hit_ms": warm_ms,
        "pyarrow_over_pqindex_footer": pyarrow_ms / footer_ms,
        "pyarrow_over_pqindex_cold": pyarrow_ms / cold_ms,
        "cold_over_hit": cold_ms / warm_ms,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "footer.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
