"""Columns stored as 32- or 64-bit integers (integers, dates, timestamps, and decimals),
decoded straight into their Arrow arrays.

A whole row group read with no filter, and the columns read after a predicate pass whose
matches reach every page, decode these chunks outside the arrow reader: dictionaries
converted once, keys gathered, plain values converted as read, levels for NULLs. Every
writer's layout must read as DuckDB reads it: pages of version 1 and 2, dictionaries that
fall back to plain part way, NULLs, compression or none, batches that cut pages. Types
whose Arrow values are not the stored integers as they are stay with the arrow reader.
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
        # Every column but the string.
        assert m["integer_chunks_decoded"] == (len(every) - 1) * row_groups
        m = matches_duckdb(duckdb_con, path, ["large", "id"], batch_size)
        assert m["integer_chunks_decoded"] == 2 * row_groups


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
    assert m["integer_chunks_decoded"] > 0


def test_fixed_length_decimals_and_reads_of_some_pages_stay_with_the_arrow_reader(
    tmp_path: Path, duckdb_con: Any
) -> None:
    table = decimals_table(True)
    flba = tmp_path / "flba.parquet"
    pq.write_table(table, flba, row_group_size=10_000)
    assert physical_types(flba)["small"] == "FIXED_LEN_BYTE_ARRAY"
    m = matches_duckdb(duckdb_con, flba, ["id", "small", "large"], 4096)
    # Only the 64-bit integer key.
    assert m["integer_chunks_decoded"] == pq.ParquetFile(flba).metadata.num_row_groups

    # The page index selects a few pages: the arrow reader reads them.
    ints = write(tmp_path / "ints.parquet", table)
    scan = pqindex.scan(str(ints), where="id BETWEEN 100 AND 300", columns=["id", "large"])
    assert scan.to_arrow().num_rows == 201
    assert scan.metrics()["pages_pruned"] > 0
    assert scan.metrics()["integer_chunks_decoded"] == 0


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
    filtered = pqindex.scan(str(path), where="d > 0", columns=["d"], threads=1)
    assert filtered.to_arrow().equals(table)
    assert filtered.metrics()["integer_chunks_decoded"] > 0
    data[at : at + 4] = (0xFFFF_FFF0).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    pqindex.clear_metadata_cache()
    with pytest.raises(pqindex.InvalidFileError, match=r"levels\.parquet"):
        pqindex.scan(str(path)).to_arrow()
    # The predicate pass that tests the column as it decodes it fails the same way.
    scan = pqindex.scan(str(path), where="d > 0", columns=["d"], threads=1)
    with pytest.raises(pqindex.InvalidFileError, match=r"levels\.parquet"):
        scan.to_arrow()


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
    columns, so they are not decoded here (that reads every page)."""
    table = decimals_table(True)
    path = write(tmp_path / "few.parquet", table)
    needle = table.column("large")[20_000].as_py()
    where = f"large = {needle}"
    scan = pqindex.scan(str(path), where=where, columns=["large", "small", "id"], threads=1)
    got = scan.to_arrow()
    sql = f"SELECT large, small, id FROM read_parquet('{path}') WHERE {where}"
    assert got.sort_by("id").equals(duckdb_table(duckdb_con, sql).sort_by("id").cast(got.schema))
    assert got.num_rows >= 1
    # Only the predicate's own column is decoded here, in the row groups it reads whole.
    alone = pqindex.scan(str(path), where=where, columns=["large"], threads=1)
    assert alone.to_arrow().num_rows == got.num_rows
    assert scan.metrics()["integer_chunks_decoded"] == alone.metrics()["integer_chunks_decoded"]


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
@pytest.mark.parametrize(("where", "columns"), SELECTIVE)
def test_integer_columns_after_a_predicate_pass_read_as_duckdb_reads_them(
    tmp_path: Path,
    version: str,
    dictionary: bool,
    where: str,
    columns: list[str],
    duckdb_con: Any,
) -> None:
    """The predicate's columns are in the output, so they are decoded first; the other
    integer-stored columns gather only the matching rows' values. One thread: no spare
    threads share the columns out instead."""
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
            assert scan.metrics()["integer_chunks_decoded"] > 0


def integers_table(nulls: bool, seed: int = 11) -> pa.Table:
    """Integers, dates and timestamps of every unit, of few distinct values then many (so a
    dictionary falls back to plain), beside a string to filter on."""
    rng = random.Random(seed)

    def value(i: int, low: int, high: int) -> int | None:
        if nulls and (i % 13 == 0 or 5_000 <= i < 6_200):
            return None
        return rng.randrange(30) + low // 2 if i < ROWS // 2 else rng.randrange(low, high)

    day = 10_000
    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "i32": pa.array([value(i, -(2**31), 2**31) for i in range(ROWS)], pa.int32()),
            "i64": pa.array([value(i, -(2**63), 2**63) for i in range(ROWS)], pa.int64()),
            "day": pa.array([value(i, 0, 40_000) for i in range(ROWS)], pa.int32()).cast(
                pa.date32()
            ),
            "ms": pa.array([value(i, 0, day * 86_400_000) for i in range(ROWS)], pa.int64()).cast(
                pa.timestamp("ms")
            ),
            "us": pa.array(
                [value(i, 0, day * 86_400_000_000) for i in range(ROWS)], pa.int64()
            ).cast(pa.timestamp("us", tz="UTC")),
            "ns": pa.array([value(i, 0, 2**62) for i in range(ROWS)], pa.int64()).cast(
                pa.timestamp("ns")
            ),
            "s": pa.array([f"s{i % 13}" for i in range(ROWS)]),
        }
    )


INTEGERS = ["id", "i32", "i64", "day", "ms", "us", "ns"]


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("nulls", ["nulls", "required"])
@pytest.mark.parametrize("dictionary", [True, False])
def test_integers_dates_and_timestamps_read_as_duckdb_reads_them(
    tmp_path: Path, version: str, nulls: str, dictionary: bool, duckdb_con: Any
) -> None:
    table = integers_table(nulls == "nulls")
    if nulls == "required":
        table = required(table)
    path = write(
        tmp_path / "i.parquet",
        table,
        data_page_version=version,
        use_dictionary=dictionary,
        coerce_timestamps=None,
        allow_truncated_timestamps=False,
    )
    row_groups = pq.ParquetFile(path).metadata.num_row_groups
    for batch_size in (777, 10_000):
        m = matches_duckdb(duckdb_con, path, [*INTEGERS, "s"], batch_size)
        assert m["integer_chunks_decoded"] == len(INTEGERS) * row_groups
    # After a predicate pass on the string: the matches reach every page. With `id` in
    # the predicate, it comes from the pass, and the page index narrows the first row
    # group to some of its pages, which the arrow reader reads.
    passes = {
        "s = 's4'": len(INTEGERS) * row_groups,
        "s IN ('s1', 's2') AND id > 3000": (len(INTEGERS) - 1) * (row_groups - 1),
    }
    # A predicate on one integer-stored column in the output: the pass tests it as it is
    # decoded (a dictionary once for all its keys), then the others gather.
    # Each matches rows of every page, or (`IS NULL` of a required column) none. With
    # NULLs, a page of the other columns inside the run of NULL rows may hold no match:
    # that one is left to the arrow reader.
    tested = []
    for where in (
        "i32 < -1073741800 OR i32 > 0",
        "day IS NULL",
        "day IS NOT NULL AND day < DATE '1975-01-01'",
        "i64 IN (-4611686018427387904, -4611686018427387903) OR i64 > 4611686018427387904",
        "us < TIMESTAMP '1970-01-01 00:00:00.000010+00' OR us > TIMESTAMP '1990-06-01 00:00:00+00'",
    ):
        passes[where] = len(INTEGERS) * row_groups
        tested.append(where)
    for where, decoded in passes.items():
        columns = ["s", *INTEGERS]
        scan = pqindex.scan(str(path), where=where, columns=columns, batch_size=1000, threads=1)
        got = scan.to_arrow()
        sql = f"SELECT {', '.join(columns)} FROM read_parquet('{path}') WHERE {where}"
        want = duckdb_table(duckdb_con, sql)
        assert got.num_rows == want.num_rows
        assert got.sort_by("id").equals(want.sort_by("id").cast(got.schema))
        if want.num_rows == 0:
            # The statistics (no NULL) rule every row group out.
            assert nulls == "required"
            decoded = 0
        if nulls == "nulls" and where in tested:
            assert row_groups < scan.metrics()["integer_chunks_decoded"] <= decoded
        else:
            assert scan.metrics()["integer_chunks_decoded"] == decoded


def test_types_that_are_not_the_stored_integers_stay_with_the_arrow_reader(
    tmp_path: Path, duckdb_con: Any
) -> None:
    """Narrow and unsigned integers, 64-bit dates and times are converted from what is
    stored: the arrow reader reads them, and only the plain 64-bit key comes here."""
    n = 5_000
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "i8": pa.array([i % 100 - 50 for i in range(n)], pa.int8()),
            "i16": pa.array([i * 7 % 30_000 for i in range(n)], pa.int16()),
            "u32": pa.array([(i * 2_654_435_761) % 2**32 for i in range(n)], pa.uint32()),
            "u64": pa.array(
                [(i * 11_400_714_819_323_198_485) % 2**64 for i in range(n)], pa.uint64()
            ),
            "d64": pa.array([i * 86_400_000 for i in range(n)], pa.date64()),
            "t32": pa.array([i * 1000 % 86_400_000 for i in range(n)], pa.time32("ms")),
            "t64": pa.array([i * 10**6 % (86_400 * 10**6) for i in range(n)], pa.time64("us")),
        }
    )
    path = write(tmp_path / "other.parquet", table)
    scan = pqindex.scan(str(path))
    got = scan.to_arrow()
    assert got.equals(table)
    want = duckdb_table(duckdb_con, f"SELECT id, i8, i16, u32, u64 FROM read_parquet('{path}')")
    assert got.select(want.schema.names).equals(want.cast(got.select(want.schema.names).schema))
    assert scan.metrics()["integer_chunks_decoded"] == pq.ParquetFile(path).metadata.num_row_groups
