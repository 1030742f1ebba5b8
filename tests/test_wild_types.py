"""Types and evidence found in files from other writers: each predicate's rows against
DuckDB's over the same file, and evidence that cannot be trusted never pruning."""

from __future__ import annotations

import datetime as dt
import decimal
import struct
import uuid
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest


def _rows(path: Path, where: Any) -> int:
    return pqindex.scan(path, where).to_arrow().num_rows


def _referee(con: Any, path: Path, where: str) -> int:
    return int(con.sql(f"SELECT count(*) FROM '{path}' WHERE {where}").fetchall()[0][0])


def _agree(con: Any, path: Path, predicates: list[str]) -> None:
    for where in predicates:
        assert _rows(path, where) == _referee(con, path, where), where


def test_time_columns_and_literals(data_dir: Path, duckdb_con: Any) -> None:
    path = data_dir / "time.parquet"
    table = pa.table(
        {
            "t32": pa.array([dt.time(1, 2, 3), dt.time(12, 0, 0, 123000), None], pa.time32("ms")),
            "t64": pa.array([dt.time(1, 2, 3, 4), dt.time(23, 59, 59, 999999), None]),
            "tn": pa.array([3_723_000_000_001, 5, None], pa.time64("ns")),
        }
    )
    pq.write_table(table, path, row_group_size=1)
    _agree(
        duckdb_con,
        path,
        [
            "t32 > TIME '01:02:03'",
            "t32 = '12:00:00.123'",
            "t64 < TIME '12:00'",
            "t64 BETWEEN '01:00' AND '02:00'",
            "tn = TIME '01:02:03'",
            "tn > '01:02:03'",
            "t32 IS NULL",
        ],
    )


def test_timestamp_literals_of_every_precision(data_dir: Path, duckdb_con: Any) -> None:
    path = data_dir / "ts.parquet"
    values = [0, 1_500, 999, None]
    pq.write_table(pa.table({"ms": pa.array(values, pa.timestamp("ms"))}), path)
    _agree(
        duckdb_con,
        path,
        [
            "ms = TIMESTAMP_MS '1970-01-01 00:00:01.5'",
            "ms < TIMESTAMP_S '1970-01-01 00:00:01.4'",
            "ms >= TIMESTAMP_NS '1970-01-01 00:00:00.000000001'",
            "ms = TIMESTAMP_US '1970-01-01 00:00:00.999'",
            "ms IN (TIMESTAMP_MS '1970-01-01 00:00:00.9994', TIMESTAMP '1970-01-01')",
        ],
    )
    # A typed string's type word inside a string is left alone.
    assert _rows(path, "ms IS NOT NULL AND 'TIMESTAMP_MS ''x''' <> 'y'") == 3


@pytest.mark.parametrize("name", ["zeros", "nonzeros"])
def test_float16_predicates(data_dir: Path, duckdb_con: Any, name: str) -> None:
    path = data_dir / "f16.parquet"
    raw = [None, 1.0, -2.0, float("nan"), 0.0, -0.0, 65504.0, 0.5]
    if name == "zeros":
        raw = [None, 0.0, -0.0, float("nan"), 0.0]
    values = pa.array([None if v is None else v for v in raw], pa.float32()).cast(pa.float16())
    pq.write_table(pa.table({"x": values}), path, row_group_size=3, write_page_index=True)
    _agree(
        duckdb_con,
        path,
        [
            "x > 0",
            "x IS NULL",
            "x = 1",
            "x < -1",
            "x = 'NaN'",
            "x != 0",
            "x = 0.5",
            "x = 0.1",
            "x IN (0, 65504)",
            "x >= -0.0",
        ],
    )


def test_uuid_columns_compare_with_uuid_text(data_dir: Path, duckdb_con: Any) -> None:
    path = data_dir / "uuid.parquet"
    ids = [
        uuid.UUID(int=i * 0x1234_5678_9ABC_DEF0_1122_3344_5566_7788 % (1 << 128))
        for i in range(1, 50)
    ]
    text = ", ".join(f"'{u}'::UUID" for u in ids)
    duckdb_con.execute(f"COPY (SELECT unnest([{text}]) AS u) TO '{path}' (FORMAT parquet)")
    present = str(ids[7])
    _agree(
        duckdb_con,
        path,
        [
            f"u = '{present}'",
            f"u = '{{{present.upper()}}}'",
            f"u = '{present.replace('-', '')}'",
            f"u > '{present}'",
            f"u IN ('{ids[3]}', '{uuid.UUID(int=5)}')",
        ],
    )
    with pytest.raises(pqindex.PredicateError, match="not a UUID"):
        _rows(path, "u = 'no uuid'")


def test_fixed_size_binary_against_bytes_of_another_length(data_dir: Path, duckdb_con: Any) -> None:
    path = data_dir / "fsb.parquet"
    values = pa.array([b"\x00\x01\x02\x03", b"\xff\xff\xff\xff", b"\x10\x00\x00\x00"], pa.binary(4))
    pq.write_table(pa.table({"f": values}), path)
    _agree(
        duckdb_con,
        path,
        [
            "f < '\\xFF\\xFF\\xFF'::BLOB",
            "f > '\\x10'::BLOB",
            "f = '\\x00\\x01'::BLOB",
        ],
    )


def test_decimal_literals_beyond_the_declared_precision(data_dir: Path) -> None:
    """A file may hold a value beyond its column's precision (the reader does not check):
    a literal of that value must find it."""
    path = data_dir / "dec.parquet"
    big = decimal.Decimal("922337203685477580700.92230685477500000")
    wide = pa.array([big, decimal.Decimal("1.5")], pa.decimal128(38, 17))
    # Viewed as DECIMAL(36, 17) (no check), as the file in the wild declared it.
    pq.write_table(pa.table({"d": wide.view(pa.decimal128(36, 17))}), path)
    assert pa.table(pqindex.scan(path)).schema.field("d").type == pa.decimal128(36, 17)
    assert _rows(path, f"d = {big}") == 1
    assert _rows(path, f"d >= {big}") == 1
    assert _rows(path, "d < 2") == 1


def _unsigned_sign_extended(path: Path) -> None:
    """A UINT_8 column whose writer stored 255 as the INT32 -1 (sign-extended), with
    statistics to match: readers keep the low 8 bits and read 255."""
    pq.write_table(
        pa.table({"x": pa.array([1, 2, 255, 254], pa.uint8())}),
        path,
        use_dictionary=False,
        compression="none",
        write_statistics=True,
    )
    data = bytearray(path.read_bytes())
    for value in (255, 254):
        plain = struct.pack("<i", value)
        signed = struct.pack("<i", value - 256)
        at = 0
        while (at := data.find(plain, at)) != -1:
            data[at : at + 4] = signed
            at += 4
    path.write_bytes(bytes(data))


def test_unsigned_values_written_sign_extended(data_dir: Path) -> None:
    path = data_dir / "u8.parquet"
    _unsigned_sign_extended(path)
    assert pa.table(pqindex.scan(path)).column("x").to_pylist() == [1, 2, 255, 254]
    assert _rows(path, "x = 255") == 1
    assert _rows(path, "x >= 254") == 2
    assert _rows(path, "x IN (255, 7)") == 1
    pqindex.add_indexes(path, [pqindex.DistinctIndex("x"), pqindex.BloomIndex("x")])
    assert _rows(path, "x = 255") == 1
    assert _rows(path, "x IN (254, 3)") == 1


def test_a_column_index_calling_required_pages_null_is_not_believed(data_dir: Path) -> None:
    """parquet-mr 1.13 writes, for REQUIRED columns without statistics, a column index
    whose every page is a null page: believed, it rules out every row."""
    path = data_dir / "nullpages.parquet"
    schema = pa.schema([pa.field("b", pa.int64(), nullable=False)])
    table = pa.table({"b": pa.array(range(600), pa.int64())}, schema=schema)
    pq.write_table(table, path, write_page_index=True, data_page_size=512, write_batch_size=50)
    data = bytearray(path.read_bytes())
    # null_pages is the column index's first field: a list<bool> whose elements follow.
    at = _column_index_offset(path)
    assert data[at] == 0x19
    header = data[at + 1]
    count, elem = header >> 4, header & 0x0F
    assert elem in (1, 2) and count < 15
    for i in range(count):
        data[at + 2 + i] = 1  # true
    path.write_bytes(bytes(data))
    pqindex.clear_metadata_cache()
    assert _rows(path, '"b" >= -1000') == 600
    assert _rows(path, '"b" = 599') == 1


def _column_index_offset(path: Path) -> int:
    """The column index offset of the first chunk, from the footer's Thrift."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from corpus.writers import decode_struct

    data = path.read_bytes()
    footer = struct.unpack("<I", data[-8:-4])[0]
    meta, _ = decode_struct(data[len(data) - 8 - footer : -8])
    groups = next(f for f in meta if f.id == 4).value.items
    chunk = next(f for f in groups[0] if f.id == 1).value.items[0]
    return int(next(f for f in chunk if f.id == 6).value)
