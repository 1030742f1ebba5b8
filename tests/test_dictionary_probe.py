"""Row groups ruled out by their dictionary pages before any data page is read.

A chunk whose data pages are all dictionary encoded holds no value its dictionary lacks, so
an `=` or `IN` whose values are not in it cannot match its row group, even where the
statistics' bounds hold the values. The reader asks that page first; when the row group may
match it reads no more bytes than without asking. Every type a dictionary holds must be
compared as the writer stored it, NULLs never match, and chunks that fell back to plain
pages are never ruled out by their dictionary. DuckDB is the referee. (Dictionary pages
declaring hostile sizes, asked this way, are in `test_hostile_sizes.py`.)
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_differential import duckdb_table

ROWS = 6_000
GROUP = 1_000


def value_table() -> pa.Table:
    """Fifty values spread wide in every type a dictionary can hold, with NULLs: even
    multiples of a step, so odd ones lie inside every chunk's bounds but are absent (and
    planning, which expects a value inside wide bounds to be absent from a few rows, asks
    the dictionaries). `i8` holds 0..98 in steps of 2: planning expects any of those values
    to be there and reads its pages. `id` orders the rows."""

    def nulled(values: list[Any]) -> list[Any]:
        return [None if i % 17 == 0 else v for i, v in enumerate(values)]

    evens = [2 * (i % 50) for i in range(ROWS)]
    day = dt.date(2020, 1, 1)
    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "i32": pa.array(nulled([v * 1_000 for v in evens]), pa.int32()),
            "i64": pa.array(nulled([v * 1_000_000_007 for v in evens]), pa.int64()),
            "i8": pa.array(nulled(evens), pa.int8()),
            "u32": pa.array(nulled([4_000_000_000 + v * 1_000 for v in evens]), pa.uint32()),
            "f64": pa.array(nulled([v / 4 - 2.0 for v in evens]), pa.float64()),
            "f32": pa.array(nulled([v / 4 - 2.0 for v in evens]), pa.float32()),
            "s": pa.array(nulled([f"v{v:03d}" for v in evens])),
            "b": pa.array(nulled([bytes([v, 0, v]) for v in evens]), pa.binary()),
            "d": pa.array(nulled([day + dt.timedelta(days=40 * v) for v in evens]), pa.date32()),
            "ts": pa.array(
                nulled([dt.datetime(2020, 1, 1) + dt.timedelta(seconds=1_000 * v) for v in evens]),
                pa.timestamp("us"),
            ),
            "dec": pa.array(
                nulled([Decimal(1_000 * v).scaleb(-2) for v in evens]), pa.decimal128(9, 2)
            ),
            "wide": pa.array(
                nulled([Decimal(1_000 * (v - 50)).scaleb(-2) for v in evens]), pa.decimal128(30, 2)
            ),
        }
    )


@pytest.fixture(scope="module", params=["pyarrow", "pyarrow-no-page-index", "pqindex"])
def values_file(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("probe") / f"{request.param}.parquet"
    table = value_table()
    if request.param == "pqindex":
        pqindex.write(table, path, row_group_size=GROUP, compression="snappy")
    else:
        pq.write_table(
            table,
            path,
            row_group_size=GROUP,
            write_page_index=request.param == "pyarrow",
            store_decimal_as_integer=True,
        )
    return path


#: (predicate, whether its dictionaries rule out every row group)
CASES = [
    ("i32 = 7000", True),
    ("i32 = 8000", False),
    ("i32 IN (1000, 3000, 97000)", True),
    ("i32 IN (1000, 98000)", False),
    ("i64 = 7000000049", True),
    ("i64 = 8000000056", False),
    ("i8 = 9", False),
    ("u32 = 4000001000", True),
    ("u32 = 4000098000", False),
    ("f64 = -1.75", True),
    ("f64 = -1.5", False),
    ("f64 = 0.0", False),
    ("f32 = -1.75", True),
    ("f32 IN (-0.0, 0.25)", False),
    ("s = 'v001'", True),
    ("s IN ('v001', 'v098')", False),
    ("s = 'v0011'", True),
    ("b = X'010001'", True),
    ("b = X'020002'", False),
    ("d = DATE '2020-02-10'", True),
    ("d = DATE '2020-03-21'", False),
    ("ts = TIMESTAMP '2020-01-01 00:16:40'", True),
    ("ts = TIMESTAMP '2020-01-01 00:33:20'", False),
    ("dec = 10.00", True),
    ("dec = 20.00", False),
    ("wide = -490.00", True),
    ("wide = -480.00", False),
    # NULLs never equal anything; an IS NULL beside the probe keeps the row groups.
    ("i32 = 7000 OR i32 IS NULL", False),
    ("i32 = 7000 OR s = 'v001'", True),
    ("i32 = 7000 OR s = 'v002'", False),
    ("i32 = 8000 AND s = 'v001'", True),
    ("i32 NOT IN (7000, 9000)", False),
    ("NOT (i32 = 7000)", False),
    ("i32 = 7000 OR id = 5", False),
]


def all_dictionary_encoded(path: Path, where: str) -> bool:
    """Whether every chunk of the columns `where` names has a dictionary page (arrow-rs
    writes fixed-length byte arrays without one)."""
    md = pq.ParquetFile(path).metadata
    named = [i for i, n in enumerate(md.schema.names) if re.search(rf"\b{n}\b", where)]
    return all(
        md.row_group(r).column(c).has_dictionary_page
        for r in range(md.num_row_groups)
        for c in named
    )


@pytest.mark.parametrize(("where", "ruled_out"), CASES)
def test_rows_match_duckdb(values_file: Path, where: str, ruled_out: bool, duckdb_con: Any) -> None:
    scan = pqindex.scan(str(values_file), where=where)
    got = scan.to_arrow().sort_by("id")
    want = duckdb_table(
        duckdb_con, f"SELECT * FROM read_parquet('{values_file}') WHERE {where}"
    ).sort_by("id")
    assert got.num_rows == want.num_rows
    assert got.equals(want.cast(got.schema))
    m = scan.metrics()
    units = m["units"]
    if ruled_out and all_dictionary_encoded(values_file, where):
        assert units > 0, "the statistics alone must not rule these out"
        assert m["units_pruned_by_dictionary"] == units
        assert m["pages_read"] == 0
    else:
        assert m["units_pruned_by_dictionary"] < max(units, 1) or units == 0


def test_a_row_group_that_may_match_reads_no_more_bytes(values_file: Path) -> None:
    """A present value costs what the same rows cost asked as a range, which is not probed."""
    probed = pqindex.scan(str(values_file), where="i32 = 8000", columns=["id", "i32"])
    ranged = pqindex.scan(
        str(values_file), where="i32 >= 8000 AND i32 <= 8000", columns=["id", "i32"]
    )
    assert probed.to_arrow().equals(ranged.to_arrow())
    p, r = probed.metrics(), ranged.metrics()
    assert p["dictionary_pages_probed"] > 0 and r["dictionary_pages_probed"] == 0
    assert p["units_pruned_by_dictionary"] == 0
    assert p["bytes_read"] == r["bytes_read"]
    assert p["pages_read"] == r["pages_read"]


def test_an_absent_value_reads_only_dictionary_pages(values_file: Path) -> None:
    absent = pqindex.scan(str(values_file), where="s = 'v001'")
    assert absent.to_arrow().num_rows == 0
    present = pqindex.scan(str(values_file), where="s = 'v002'")
    assert present.to_arrow().num_rows > 0
    a = absent.metrics()
    md = pq.ParquetFile(values_file).metadata
    column = md.schema.names.index("s")
    dictionaries = sum(
        md.row_group(r).column(column).data_page_offset
        - md.row_group(r).column(column).dictionary_page_offset
        for r in range(md.num_row_groups)
    )
    assert a["dictionary_pages_probed"] == md.num_row_groups
    assert f"ruling out {md.num_row_groups} units" in absent.explain()
    assert a["bytes_read"] <= dictionaries + present.metrics()["bytes_read"] // 4
    assert a["bytes_read"] < present.metrics()["bytes_read"]


def test_chunks_that_fell_back_to_plain_pages_are_not_ruled_out(
    tmp_path: Path, duckdb_con: Any
) -> None:
    """Past its dictionary's size limit a chunk goes on in plain pages, whose values the
    dictionary does not hold: such a chunk is never asked."""
    n = 40_000
    table = pa.table(
        {"k": pa.array(range(n), pa.int64()), "s": [f"distinct-{i:08d}" for i in range(n)]}
    )
    path = tmp_path / "fallback.parquet"
    pq.write_table(
        table,
        path,
        row_group_size=n,
        dictionary_pagesize_limit=8 * 1024,
        data_page_size=4 * 1024,
        write_page_index=True,
    )
    for where in ["k = 39000", "s = 'distinct-00039000'", "s IN ('distinct-00000001', 'x')"]:
        scan = pqindex.scan(str(path), where=where)
        got = scan.to_arrow()
        want = duckdb_table(duckdb_con, f"SELECT * FROM read_parquet('{path}') WHERE {where}")
        assert got.num_rows == want.num_rows == 1
        assert scan.metrics()["dictionary_pages_probed"] == 0


def test_the_dictionary_answers_where_a_larger_bloom_filter_would(tmp_path: Path) -> None:
    """Small files, each a sorted slice of keys with gaps, with a Parquet bloom filter on the
    key: a dictionary page smaller than the bloom filter rules a file out for fewer bytes,
    and costs nothing where the key is there; the bloom filter is not read."""
    root = tmp_path / "small"
    root.mkdir()
    for f in range(4):
        keys = [4 * (f * 3_000 + i) for i in range(3_000)]
        pqindex.write(
            pa.table({"k": pa.array(keys, pa.int64()), "v": [str(k) for k in keys]}),
            root / f"part-{f}.parquet",
            bloom_filter_columns=["k"],
        )
    pqindex.Catalog.build(str(root))
    for where, rows in [("k IN (4, 12001)", 1), ("k = 12001", 0), ("k = 24004", 1)]:
        scan = pqindex.scan(str(root), where=where)
        assert scan.to_arrow().num_rows == rows
        m = scan.metrics()
        assert m["footers_from_catalog"] > 0
        assert m["bloom_filters_read"] == 0
        assert m["dictionary_pages_probed"] > 0
        if rows == 0:
            assert m["units_pruned_by_dictionary"] == m["units"] > 0
            assert m["pages_read"] == 0
