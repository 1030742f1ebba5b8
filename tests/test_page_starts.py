"""A lookup's rows near the start of their pages: only the pages' starts are decompressed.

Each page a lookup returns rows of is decompressed up to its last selected row, the rest of
it filled with values no read takes. Columns of every kind pqindex reads in part (dictionary
keys, plain fixed-width values and byte arrays, with and without NULLs), in pages of version
1 and 2, Snappy and Zstandard, against DuckDB.
"""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_differential import duckdb_table

ROWS = 120_000


def table() -> pa.Table:
    keys = range(ROWS)
    day = dt.date(1995, 1, 1)
    return pa.table(
        {
            "k": pa.array([i * 2 for i in keys], pa.int64()),
            "kn": pa.array([None if i % 9 == 4 else i for i in keys], pa.int64()),
            "comment": pa.array(
                [
                    None if i % 17 == 3 else f"comment {i * 31 % 9973} " + "z" * (i % 23)
                    for i in keys
                ]
            ),
            "price": pa.array([None if i % 5 == 1 else i * 1.25 for i in keys], pa.float64()),
            "amount": pa.array(
                [decimal.Decimal(i * 7 % 100_000) / 100 for i in keys], pa.decimal128(12, 2)
            ),
            "day": pa.array([day + dt.timedelta(days=i * 13 % 2500) for i in keys], pa.date32()),
            "flag": pa.array([i % 3 == 0 for i in keys], pa.bool_()),
            "code": pa.array(
                [(i * 7919 % 65536).to_bytes(4, "big") * 4 for i in keys], pa.binary(16)
            ),
            "mode": pa.array(
                [None if i % 29 == 7 else ("AIR", "RAIL", "SHIP")[i % 3] for i in keys]
            ),
        }
    )


@pytest.fixture(scope="module", params=[("1.0", "snappy"), ("2.0", "snappy"), ("1.0", "zstd")])
def large_pages(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Pages of tens of thousands of rows, dictionary encoded but for the comments, prices,
    amounts and codes."""
    version, codec = request.param
    path = tmp_path_factory.mktemp("starts") / f"v{version}-{codec}.parquet"
    pq.write_table(
        table(),
        path,
        compression=codec,
        data_page_size=512 * 1024,
        data_page_version=version,
        write_batch_size=20_000,
        use_dictionary=["k", "kn", "day", "flag", "mode"],
        write_page_index=True,
    )
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups == 1
    index = pq.ParquetFile(path).metadata.row_group(0).column(0)
    assert index.has_offset_index
    return path


CASES = [
    # At a page's start, near it, in its middle, at its end; runs and IN lists.
    "k = 0",
    "k = 2",
    "k < 600",
    "k = 40000",
    "k = 40002 OR k = 40100",
    "k BETWEEN 41000 AND 41200",
    "k = 79998",
    "k IN (6, 40010, 120000, 200000)",
    "kn = 5 OR kn = 6",
    "kn < 30 AND kn IS NOT NULL",
    "k >= 239990",
    "k = 100000 AND mode = 'SHIP'",
    "k < 100 AND comment IS NULL",
    # Past the first 64 KiB of a page's fixed-width values: decoded from their block.
    "k = 60000",
    "k BETWEEN 70000 AND 70400",
    "k = 199998 OR k = 200100",
    "kn = 31001 OR kn = 31002",
]


@pytest.mark.parametrize("where", CASES)
def test_lookups_read_from_page_starts_match_duckdb(
    large_pages: Path, where: str, duckdb_con: Any
) -> None:
    path = large_pages
    scan = pqindex.scan(str(path), where=where)
    got = scan.to_arrow()
    want = duckdb_table(duckdb_con, f"SELECT * FROM read_parquet('{path}') WHERE {where}")
    assert got.num_rows == want.num_rows > 0
    assert got.sort_by("k").equals(want.sort_by("k").cast(got.schema))
    assert scan.metrics()["pages_pruned"] > 0


def test_each_column_read_alone_matches_duckdb(large_pages: Path, duckdb_con: Any) -> None:
    """Each column as the only output beside the key, so that no other column shares its
    thread."""
    for column in table().column_names[1:]:
        # Rows at a page's start, and from the middle of one.
        for where in ["k BETWEEN 40002 AND 40100", "k BETWEEN 70002 AND 70100"]:
            got = pqindex.scan(str(large_pages), where=where, columns=["k", column]).to_arrow()
            sql = f"SELECT k, {column} FROM read_parquet('{large_pages}') WHERE {where}"
            want = duckdb_table(duckdb_con, sql)
            assert got.num_rows == 50
            assert got.sort_by("k").equals(want.sort_by("k").cast(got.schema)), column


@pytest.mark.parametrize("where", ["k = 2", "k = 30000", None])
def test_a_damaged_page_is_an_invalid_file_read_in_part_or_whole(
    tmp_path: Path, where: str | None
) -> None:
    """A data page whose Snappy stream is damaged raises InvalidFileError naming the file,
    whether a lookup decompresses only its start, passes over it to a later block (row
    15,000), or a scan decompresses all of it."""
    path = tmp_path / "damaged-page.parquet"
    pq.write_table(
        table(),
        path,
        compression="snappy",
        data_page_size=512 * 1024,
        write_batch_size=20_000,
        use_dictionary=["k"],
        write_page_index=True,
    )
    price = pq.ParquetFile(path).metadata.row_group(0).column(3)
    assert price.path_in_schema == "price" and not price.has_dictionary_page
    # Early in the first page's stream, past its header: copies reaching 4 GiB back.
    at = price.data_page_offset + 200
    data = bytearray(path.read_bytes())
    data[at : at + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    pqindex.clear_metadata_cache()
    with pytest.raises(pqindex.InvalidFileError, match="Snappy") as info:
        pqindex.scan(str(path), where=where).to_arrow()
    assert "damaged-page.parquet" in str(info.value)
    if where == "k = 2":
        # Row 1 is at the page's start: only the start is decompressed, by pqindex's own
        # decoder of a stream's start.
        assert "a copy from" in str(info.value)
