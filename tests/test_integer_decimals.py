"""Decimals stored as 32- or 64-bit integers, decoded straight into 128-bit values.

A whole row group read with no filter decodes these chunks outside the arrow reader:
dictionaries widened once, keys gathered, plain values widened as read, levels for NULLs.
Every writer's layout must read as DuckDB reads it: pages of version 1 and 2, dictionaries
that fall back to plain part way, NULLs, compression or none, batches that cut pages.
"""

from __future__ import annotations

import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_differential import duckdb_table

ROWS = 24_000


def decimals_table(nulls: bool, seed: int = 7) -> pa.Table:
    """Two decimals (one fits INT32, one INT64) of few distinct values then many (so a
    dictionary falls back to plain), beside a string and an integer."""
    rng = random.Random(seed)

    def value(i: int, digits: int) -> Decimal | None:
        if nulls and (i % 11 == 0 or 9_000 <= i < 10_500):
            return None
        n = rng.randrange(40) if i < ROWS // 2 else rng.randrange(-(10**digits) + 1, 10**digits)
        return Decimal(n).scaleb(-2)

    table = pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "small": pa.array([value(i, 9) for i in range(ROWS)], pa.decimal128(9, 2)),
            "large": pa.array([value(i, 18) for i in range(ROWS)], pa.decimal128(18, 2)),
            "s": pa.array([f"s{i % 13}" for i in range(ROWS)]),
        }
    )
    if nulls:
        # Every value NULL: an empty dictionary, pages of levels only.
        table = table.append_column("none", pa.nulls(ROWS, pa.decimal128(12, 3)))
    return table


def required(table: pa.Table) -> pa.Table:
    return table.cast(pa.schema([f.with_nullable(False) for f in table.schema]))


def write(path: Path, table: pa.Table, **options: Any) -> Path:
    pq.write_table(
        table,
        path,
        store_decimal_as_integer=True,
        row_group_size=10_000,
        dictionary_pagesize_limit=2 * 1024,
        data_page_size=4 * 1024,
        write_batch_size=500,
        write_page_index=True,
        **options,
    )
    return path


def physical_types(path: Path) -> dict[str, str]:
    md = pq.ParquetFile(path).metadata
    return {
        md.schema.column(i).name: md.schema.column(i).physical_type for i in range(md.num_columns)
    }


def matches_duckdb(con: Any, path: Path, columns: list[str], batch_size: int) -> dict[str, int]:
    scan = pqindex.scan(str(path), columns=columns, batch_size=batch_size)
    got = scan.to_arrow()
    want = duckdb_table(con, f"SELECT {', '.join(columns)} FROM read_parquet('{path}')")
    assert got.schema.names == columns
    assert got.sort_by("id").equals(want.sort_by("id").cast(got.schema))
    return scan.metrics()


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("compression", ["snappy", "none"])
@pytest.mark.parametrize("nulls", ["nulls", "required"])
@pytest.mark.parametrize("dictionary", [True, False])
def test_integer_decimals_read_as_duckdb_reads_them(
    tmp_path: Path, version: str, compression: str, nulls: str, dictionary: bool, duckdb_con: Any
) -> None:
    table = decimals_table(nulls == "nulls")
    if nulls == "required":
        table = required(table)
    path = write(
        tmp_path / "d.parquet",
        table,
        data_page_version=version,
        compression=compression,
        use_dictionary=dictionary,
    )
    assert physical_types(path)["small"] == "INT32"
    assert physical_types(path)["large"] == "INT64"
    row_groups = pq.ParquetFile(path).metadata.num_row_groups
    # Batches that end inside pages, that hold several pages, and a row group in one.
    for batch_size in (777, 4096, 10_000):
        every = ["id", "small", "large", "s"] + (["none"] if nulls == "nulls" else [])
        m = matches_duckdb(duckdb_con, path, every, batch_size)
        assert m["decimal_chunks_decoded"] == (len(every) - 2) * row_groups
        m = matches_duckdb(duckdb_con, path, ["large", "id"], batch_size)
        assert m["decimal_chunks_decoded"] == row_groups


def test_decimals_written_by_duckdb(tmp_path: Path, duckdb_con: Any) -> None:
    path = tmp_path / "duck.parquet"
    duckdb_con.sql(
        f"""COPY (SELECT i AS id,
                        CASE WHEN i % 7 = 0 THEN NULL ELSE (i % 50)::DECIMAL(9, 2) END AS small,
                        (i * 1234567)::DECIMAL(18, 3) AS large
                 FROM range({ROWS}) t(i))
            TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 8192)"""
    )
    assert physical_types(path)["small"] == "INT32"
    m = matches_duckdb(duckdb_con, path, ["id", "small", "large"], 5000)
    assert m["decimal_chunks_decoded"] > 0


def test_fixed_length_decimals_and_reads_of_some_pages_stay_with_the_arrow_reader(
    tmp_path: Path, duckdb_con: Any
) -> None:
    table = decimals_table(True)
    flba = tmp_path / "flba.parquet"
    pq.write_table(table, flba, row_group_size=10_000)
    assert physical_types(flba)["small"] == "FIXED_LEN_BYTE_ARRAY"
    m = matches_duckdb(duckdb_con, flba, ["id", "small", "large"], 4096)
    assert m["decimal_chunks_decoded"] == 0

    # The page index selects a few pages: the arrow reader reads them.
    ints = write(tmp_path / "ints.parquet", table)
    scan = pqindex.scan(str(ints), where="id BETWEEN 100 AND 300", columns=["id", "large"])
    assert scan.to_arrow().num_rows == 201
    assert scan.metrics()["pages_pruned"] > 0
    assert scan.metrics()["decimal_chunks_decoded"] == 0


def levels_length_offset(data: bytes, first_value: int) -> int:
    """Where the 4-byte length of the definition levels before the plain value
    `first_value` (the first of its page) sits."""
    at = data.index(first_value.to_bytes(8, "little", signed=True))
    for length in range(1, 16):
        if int.from_bytes(data[at - 4 - length : at - length], "little") == length:
            return at - 4 - length
    raise AssertionError("no levels length before the value")


def test_damaged_levels_are_an_invalid_file(tmp_path: Path) -> None:
    first = 0x0102_0304_0506_0708
    table = pa.table(
        {"d": pa.array([Decimal(first + i).scaleb(-2) for i in range(1000)], pa.decimal128(18, 2))}
    )
    path = write(tmp_path / "levels.parquet", table, compression="none", use_dictionary=False)
    data = bytearray(path.read_bytes())
    at = levels_length_offset(bytes(data), first)
    assert pqindex.scan(str(path)).to_arrow().equals(table)
    data[at : at + 4] = (0xFFFF_FFF0).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    pqindex.clear_metadata_cache()
    with pytest.raises(pqindex.InvalidFileError, match=r"levels\.parquet"):
        pqindex.scan(str(path)).to_arrow()


@pytest.mark.parametrize("seed", range(8))
def test_damaged_pages_fail_or_read_every_row(tmp_path: Path, seed: int) -> None:
    """Bytes damaged in uncompressed pages (levels, keys, dictionaries, plain values): a
    pqindex error naming the file, or every row, never a panic or a shorter result."""
    table = decimals_table(True, seed)
    path = write(tmp_path / "pages.parquet", table, compression="none")
    md = pq.ParquetFile(path).metadata
    rng = random.Random(seed)
    data = bytearray(path.read_bytes())
    for r in range(md.num_row_groups):
        chunk = md.row_group(r).column(1 + rng.randrange(2))
        start = chunk.dictionary_page_offset or chunk.data_page_offset
        at = start + 16 + rng.randrange(chunk.total_compressed_size - 32)
        data[at : at + 4] = rng.randbytes(4)
    path.write_bytes(bytes(data))
    pqindex.clear_metadata_cache()
    scan = pqindex.scan(str(path), columns=["id", "small", "large"], batch_size=3000)
    try:
        rows = scan.to_arrow().num_rows
    except pqindex.PqindexError as e:
        assert "pages.parquet" in str(e)
    else:
        assert rows == ROWS


SELECTIVE = [
    ("s = 's3'", ["id", "s", "small", "large"]),
    ("s = 's5'", ["s", "large"]),
    ("s IN ('s1', 's12') AND id > 100", ["id", "s", "large", "small"]),
    ("small IS NULL", ["id", "small", "large", "none"]),
    ("small > 0.3", ["small", "large", "id"]),
    ("id >= 0", ["id", "large", "small"]),
    ("s = 'none'", ["id", "s", "small"]),
]


def test_a_few_matches_read_only_their_pages(tmp_path: Path, duckdb_con: Any) -> None:
    """Matches in a few pages: the arrow reader fetches only those pages of the other
    decimals, so they are not decoded here (that reads every page)."""
    table = decimals_table(True)
    path = write(tmp_path / "few.parquet", table)
    needle = table.column("large")[20_000].as_py()
    where = f"large = {needle}"
    scan = pqindex.scan(str(path), where=where, columns=["large", "small", "id"], threads=1)
    got = scan.to_arrow()
    sql = f"SELECT large, small, id FROM read_parquet('{path}') WHERE {where}"
    assert got.sort_by("id").equals(duckdb_table(duckdb_con, sql).sort_by("id").cast(got.schema))
    assert got.num_rows >= 1
    assert scan.metrics()["decimal_chunks_decoded"] == 0


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
@pytest.mark.parametrize(("where", "columns"), SELECTIVE)
def test_integer_decimals_after_a_predicate_pass_read_as_duckdb_reads_them(
    tmp_path: Path,
    version: str,
    dictionary: bool,
    where: str,
    columns: list[str],
    duckdb_con: Any,
) -> None:
    """The predicate's columns are in the output, so they are decoded first; the decimals
    gather only the matching rows' values. One thread: no spare threads share the columns
    out instead."""
    path = write(
        tmp_path / "d.parquet",
        decimals_table(True),
        data_page_version=version,
        use_dictionary=dictionary,
    )
    want = duckdb_table(
        duckdb_con, f"SELECT {', '.join(columns)} FROM read_parquet('{path}') WHERE {where}"
    )
    for batch_size in (777, 4096):
        scan = pqindex.scan(
            str(path), where=where, columns=columns, batch_size=batch_size, threads=1
        )
        got = scan.to_arrow()
        assert got.schema.names == columns
        order = [(c, "ascending") for c in columns]
        assert got.sort_by(order).equals(want.sort_by(order).cast(got.schema))
        if want.num_rows:
            assert scan.metrics()["decimal_chunks_decoded"] > 0
