"""TPC-H lineitem (SF1) sorted by l_orderkey with 20,000-row pages: a point lookup on the
key fetches only the data pages whose row ranges hold matching rows, plus their dictionary
pages, and returns what DuckDB returns."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pqindex
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

PAGE_ROWS = 20_000


@pytest.fixture(scope="module")
def lineitem(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tpch")
    exe = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
    subprocess.run(
        [exe, "parquet", "-s", "1", "--tables", "lineitem", "-o", str(root / "raw")],
        check=True,
        capture_output=True,
    )
    source = pq.ParquetFile(root / "raw" / "lineitem.parquet")
    reader = pa.RecordBatchReader.from_batches(
        source.schema_arrow, source.iter_batches(batch_size=65536)
    )
    path = root / "lineitem.parquet"
    pqindex.write(reader, path, row_group_size=1_000_000, page_row_limit=PAGE_ROWS)
    return path


def expected_pages(path: Path, where_key: int, columns: list[str]) -> int:
    """Data pages of `columns` whose row ranges hold a row with l_orderkey = where_key."""
    keys = pq.read_table(path, columns=["l_orderkey"]).column(0)
    rows = pc.indices_nonzero(pc.equal(keys, where_key)).to_pylist()
    md = pqindex.read_metadata(path)
    starts = md.row_groups().column("num_rows").to_pylist()
    rg_first = [sum(starts[:i]) for i in range(len(starts))]
    pages = md.pages().to_pylist()
    hit = set()
    for p in pages:
        if p["column"] not in columns:
            continue
        lo = rg_first[p["row_group"]] + p["first_row"]
        hi = lo + p["row_count"]
        if any(lo <= r < hi for r in rows):
            hit.add((p["row_group"], p["column"], p["page"]))
    return len(hit)


def test_pages_hold_the_row_count_limit(lineitem: Path) -> None:
    """Pages start on multiples of the limit; the exception is the page where a column's
    dictionary outgrew its page and the column fell back to plain encoding (one per column
    chunk at most), and the page after it, which runs to the next boundary."""
    counts = pqindex.read_metadata(lineitem).pages().column("row_count").to_pylist()
    chunks = len(pqindex.read_metadata(lineitem).columns())
    assert max(counts) < 2 * PAGE_ROWS
    assert counts.count(PAGE_ROWS) >= len(counts) - 3 * chunks


@pytest.mark.parametrize("key", [1, 4_200_007, 5_999_975, 3_000_001])
def test_point_lookup_reads_only_matching_pages(lineitem: Path, key: int) -> None:
    columns = ["l_orderkey", "l_partkey", "l_comment"]
    pqindex.clear_metadata_cache()
    scan = pqindex.scan(lineitem, where=f"l_orderkey = {key}", columns=columns)
    got = scan.to_arrow()
    m = scan.metrics()

    want = duckdb.sql(
        f"SELECT l_orderkey, l_partkey, l_comment FROM read_parquet('{lineitem}') "
        f"WHERE l_orderkey = {key}"
    ).to_arrow_table()
    assert sorted(got.to_pylist(), key=repr) == sorted(want.to_pylist(), key=repr)
    assert got.num_rows == m["rows_matched"] > 0

    assert m["pages_read"] == expected_pages(lineitem, key, columns)
    assert m["pages_read"] <= 2 * len(columns)
    assert m["dictionary_pages_read"] <= len(columns) * m["units"]
    assert m["row_groups_pruned_by_stats"] >= m["row_groups"] - 2
    assert m["rows_scanned"] <= 2 * PAGE_ROWS

    # Page and byte counts are deterministic.
    pqindex.clear_metadata_cache()
    again = pqindex.scan(lineitem, where=f"l_orderkey = {key}", columns=columns)
    again.to_arrow()
    assert again.metrics()["bytes_read"] == m["bytes_read"]
    assert again.metrics()["pages_read"] == m["pages_read"]


def test_warm_metadata_reads_no_footer(lineitem: Path) -> None:
    pqindex.scan(lineitem, where="l_orderkey = 42").to_arrow()
    warm = pqindex.scan(lineitem, where="l_orderkey = 42", columns=["l_orderkey"])
    warm.to_arrow()
    m = warm.metrics()
    assert m["footers_read"] == 0
    assert m["page_indexes_read"] == 0
    assert m["pages_read"] == 1
