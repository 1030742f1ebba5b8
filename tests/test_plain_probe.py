"""Data pages ruled out by searching their plain values for the bytes an `=` or `IN` needs.

A PLAIN page of a string or fixed-length binary column holds every non-null value's plain
encoding; a page whose bytes hold none of the values asked has no matching row, and its
rows are not read. Pages that are dictionary encoded hold keys and are kept, NULLs never
match, a value found where it is not a whole value only keeps a page, and a value in most
pages stops the search. DuckDB is the referee.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_differential import duckdb_table

ROWS = 40_000


def string_of(i: int) -> str | None:
    """Unique strings, with NULLs, empty strings, a value in every page (`same`), and values
    that hold another value inside them: `row-...x`, and one holding the next row's whole
    plain encoding (its 4-byte length and its bytes)."""
    if i % 13 == 0:
        return None
    if i % 997 == 0:
        return ""
    if i % 50 == 0:
        return "same"
    if i % 1_001 == 1:
        return f"\n\x00\x00\x00row-{i + 1:06d}"
    if i % 1_001 == 3:
        return f"row-{i + 1:06d}x"
    return f"row-{i:06d}"


def shuffled(i: int) -> int:
    """Row `i`'s place in a fixed shuffle of the rows (7,919 is prime to `ROWS`): a column
    of these has pages whose bounds span nearly every value."""
    return i * 7_919 % ROWS


def needle_table() -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "s": pa.array([string_of(i) for i in range(ROWS)], pa.string()),
            "b": pa.array(
                [None if i % 11 == 0 else f"{shuffled(i):05d}".encode() for i in range(ROWS)],
                pa.binary(5),
            ),
            "dec": pa.array(
                [None if i % 7 == 0 else Decimal(shuffled(i)).scaleb(-2) for i in range(ROWS)],
                pa.decimal128(20, 2),
            ),
        }
    )


WRITERS = ["pyarrow-snappy", "pyarrow-zstd", "pyarrow-none", "pyarrow-fallback", "pqindex"]


@pytest.fixture(scope="module", params=WRITERS)
def needle_file(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("plain") / f"{request.param}.parquet"
    table = needle_table()
    if request.param == "pqindex":
        pqindex.write(table, path, row_group_size=20_000, page_row_limit=1_000)
        return path
    codec = request.param.split("-")[1]
    fallback = codec == "fallback"
    pq.write_table(
        table,
        path,
        row_group_size=20_000,
        compression="snappy" if fallback else codec,
        # A dictionary that fills after a few pages: the chunk's later pages are plain.
        use_dictionary=["s"] if fallback else False,
        dictionary_pagesize_limit=4_096,
        data_page_size=8_192,
        write_batch_size=500,
        write_page_index=True,
        store_decimal_as_integer=False,
    )
    return path


CASES = [
    "s = 'row-001234'",
    "s = 'row-1234'",
    "s = 'row-039999'",
    "s = 'row-000007'",
    "s = 'same'",
    "s = ''",
    "s = 'row-001003'",
    "s = 'row-001005x'",
    "s IN ('row-000007', 'row-039998', 'nope')",
    "s IN ('nope', 'none')",
    "s = 'row-001234' AND id > 1000",
    "s = 'row-001234' AND id < 1000",
    "s = 'row-001234' OR id = 5",
    "s NOT IN ('row-001234')",
    "s = 'row-001234' AND b = X'3031323334'",
    "b = X'3031323334'",
    "b = X'3031323335'",
    "b IN (X'3030303030', X'3339393939')",
    "dec = 12.34",
    "dec = 12.35",
    "dec = 7.00",
    "dec IN (0.01, 399.99)",
    # Patterns: a page lacking a literal piece every match contains is ruled out.
    "s LIKE '%001234%'",
    "s LIKE 'row-0012%'",
    "s LIKE '%-0399_9'",
    "s LIKE 'row%001%x'",
    "s LIKE '%zzz%'",
    "s ILIKE '%ROW-001234%'",
    "s NOT LIKE '%1%'",
    "contains(s, '-00123')",
    "regexp_matches(s, 'row-0012[0-9]4')",
    "regexp_matches(s, '(?i)ROW-001234')",
    "s LIKE '%001234%' OR id = 7",
    # Pieces a match starts or ends with, found inside other values too.
    "s LIKE 'ow-0012%'",
    "s LIKE '%row-00123'",
    "s LIKE 'row-0012%'",
    "s LIKE '%01235x'",
    "starts_with(s, 'row-0399')",
    "ends_with(s, '4x')",
    "regexp_matches(s, '^row-0012')",
    "s LIKE 'row-001003'",
]


@pytest.mark.parametrize("where", CASES)
def test_rows_match_duckdb(needle_file: Path, where: str, duckdb_con: Any) -> None:
    got = pqindex.scan(str(needle_file), where=where).to_arrow().sort_by("id")
    expected = duckdb_table(
        duckdb_con,
        f"SELECT * FROM read_parquet('{needle_file}') WHERE {duckdb_where(where)} ORDER BY id",
    )
    assert got.column("id").to_pylist() == expected.column("id").to_pylist()
    assert got.column("s").to_pylist() == expected.column("s").to_pylist()
    assert got.column("dec").to_pylist() == expected.column("dec").to_pylist()


def duckdb_where(where: str) -> str:
    """`where` in DuckDB's syntax: a blob literal is `'\\x30...'::BLOB`."""
    out = []
    for part in where.split("X'"):
        if not out:
            out.append(part)
            continue
        hexed, rest = part.split("'", 1)
        pairs = "".join(f"\\x{hexed[i : i + 2]}" for i in range(0, len(hexed), 2))
        out.append(f"'{pairs}'::BLOB{rest}")
    return "".join(out)


def write_pages(path: Path, row_group_size: int, use_dictionary: bool | list[str]) -> Path:
    """`needle_table()` in pages of about 1,000 rows, with the page index; decimals as
    fixed-length binaries."""
    pq.write_table(
        needle_table(),
        path,
        row_group_size=row_group_size,
        use_dictionary=use_dictionary,
        data_page_size=8_192,
        write_batch_size=500,
        write_page_index=True,
        store_decimal_as_integer=False,
    )
    return path


def only_row_1234_page_searched(path: Path, where: str) -> dict[str, int]:
    """The metrics of `where` on `path`, which only row 1234 matches: every page of both
    row groups was searched, and all but the one holding the row were ruled out."""
    scan = pqindex.scan(str(path), where=where)
    assert scan.to_arrow().column("id").to_pylist() == [1234]
    m = scan.metrics()
    assert m["plain_pages_searched"] >= 2 * 8
    assert m["pages_ruled_out_by_values"] == m["plain_pages_searched"] - 1
    return m


def test_only_the_page_holding_a_needle_is_read(tmp_path: Path) -> None:
    path = write_pages(tmp_path / "plain.parquet", 20_000, use_dictionary=False)
    m = only_row_1234_page_searched(path, "s = 'row-001234'")
    # Only that page's rows were read.
    assert m["rows_scanned"] <= 1_000
    # A value in no page reads no row.
    absent = pqindex.scan(str(path), where="s IN ('row-1234', 'row-01234')")
    assert absent.to_arrow().num_rows == 0
    assert absent.metrics()["rows_scanned"] == 0
    # A value whose plain encoding lies inside another value keeps the page, and only the
    # whole value matches.
    inside = pqindex.scan(str(path), where="s = 'row-001003'")
    assert inside.to_arrow().column("id").to_pylist() == [1003]
    # Fixed-length binaries and decimals stored as them are searched the same way.
    # (`b` is NULL on every 11th row, `dec` on every 7th.)
    for where, nulls in [("b = X'3031323334'", 11), ("dec = 12.34", 7)]:
        fixed = pqindex.scan(str(path), where=where)
        assert fixed.to_arrow().column("id").to_pylist() == [
            i for i in range(ROWS) if shuffled(i) == 1234 and i % nulls
        ]
        assert fixed.metrics()["pages_ruled_out_by_values"] > 0


def test_pages_lacking_a_pattern_piece_are_not_read(tmp_path: Path) -> None:
    path = write_pages(tmp_path / "plain.parquet", 20_000, use_dictionary=False)
    only_row_1234_page_searched(path, "s LIKE '%001234%'")
    # Every piece must be there: `row-` is in every page, `x` ends a value in one page of
    # 1,001 rows, and `9x` in a few of them.
    both = pqindex.scan(str(path), where="s LIKE 'row-%9x'")
    expected = [
        i for i in range(ROWS) if (v := string_of(i)) and v.startswith("row-") and v.endswith("9x")
    ]
    assert both.to_arrow().column("id").to_pylist() == expected
    assert both.metrics()["pages_ruled_out_by_values"] > 0
    # A piece a match starts (ends) with counts only where a value can start (end): found
    # only inside other values, it rules every page out.
    for where in ["s LIKE 'ow-0012%'", "s LIKE '%ow-0012'"]:
        anchored = pqindex.scan(str(path), where=where)
        assert anchored.to_arrow().num_rows == 0
        m = anchored.metrics()
        assert m["pages_ruled_out_by_values"] == m["plain_pages_searched"] > 0
    # A case-insensitive pattern may match another spelling: nothing is searched.
    folded = pqindex.scan(str(path), where="s ILIKE '%ROW-001234%'")
    assert folded.to_arrow().column("id").to_pylist() == [1234]
    assert folded.metrics()["plain_pages_searched"] == 0


def test_a_value_in_every_page_stops_the_search(tmp_path: Path) -> None:
    path = write_pages(tmp_path / "plain.parquet", ROWS, use_dictionary=False)
    scan = pqindex.scan(str(path), where="s = 'same'")
    expected = [i for i in range(ROWS) if string_of(i) == "same"]
    assert scan.to_arrow().column("id").to_pylist() == expected
    m = scan.metrics()
    assert m["pages_ruled_out_by_values"] == 0
    pages = pqindex.scan(str(path), columns=["s"]).metrics()["pages"]
    assert pages >= 40
    assert 0 < m["plain_pages_searched"] <= 16


def test_dictionary_pages_are_kept_unsearched(tmp_path: Path) -> None:
    path = write_pages(tmp_path / "dictionary.parquet", ROWS, use_dictionary=["s"])
    # Every page is dictionary encoded: none is searched, and the rows are right.
    scan = pqindex.scan(str(path), where="s = 'row-001234'")
    assert scan.to_arrow().column("id").to_pylist() == [1234]
    assert scan.metrics()["plain_pages_searched"] == 0
