"""Dictionary pages are read only when a selected page uses them.

Writers fall back from dictionary to plain encoding part way through a chunk when the
dictionary grows too large; a lookup that selects only plain pages must give the same rows
without reading the dictionary. DuckDB is the referee.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_differential import duckdb_table

ROWS = 60_000


def fallback_table() -> pa.Table:
    """A sorted key of distinct values (falls back early), a string of distinct values
    (falls back too), a low-cardinality column (never falls back) and nulls."""
    keys = list(range(ROWS))
    return pa.table(
        {
            "k": pa.array(keys, pa.int64()),
            "s": pa.array([None if i % 97 == 0 else f"name-{i:06d}" for i in keys]),
            "g": pa.array([i % 7 for i in keys], pa.int32()),
        }
    )


@pytest.fixture(scope="module", params=["1.0", "2.0"])
def fallback_file(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Written by pyarrow with data pages of version 1 or 2 (their headers differ)."""
    path = tmp_path_factory.mktemp("fallback") / f"v{request.param}.parquet"
    pq.write_table(
        fallback_table(),
        path,
        row_group_size=30_000,
        dictionary_pagesize_limit=16 * 1024,
        data_page_size=8 * 1024,
        data_page_version=request.param,
        write_batch_size=1_000,
        write_page_index=True,
    )
    return path


def dictionary_chunks(path: Path) -> int:
    md = pq.ParquetFile(path).metadata
    return sum(
        md.row_group(r).column(c).has_dictionary_page
        for r in range(md.num_row_groups)
        for c in range(md.num_columns)
    )


CASES = [
    ("k = 25000", ["k"]),
    ("k = 25000", None),
    ("k BETWEEN 20000 AND 20500", ["k", "s"]),
    ("k = 3", ["k", "s", "g"]),
    ("k IN (5, 29000, 59999)", None),
    ("s = 'name-040000'", ["s", "k"]),
    ("s IS NULL AND k > 50000", ["k", "s"]),
    ("g = 3 AND k > 59000", ["g", "k"]),
    (None, ["k", "s"]),
]


@pytest.mark.parametrize(("where", "columns"), CASES)
def test_rows_match_duckdb(
    fallback_file: Path, where: str | None, columns: list[str] | None, duckdb_con: Any
) -> None:
    assert dictionary_chunks(fallback_file) > 0
    scan = pqindex.scan(str(fallback_file), where=where, columns=columns)
    got = scan.to_arrow()
    sql = f"SELECT {', '.join(columns) if columns else '*'} FROM read_parquet('{fallback_file}')"
    if where:
        sql += f" WHERE {where}"
    want = duckdb_table(duckdb_con, sql)
    assert got.sort_by("k").equals(want.sort_by("k").cast(got.schema))


def test_a_lookup_in_plain_pages_skips_the_dictionary(fallback_file: Path) -> None:
    scan = pqindex.scan(str(fallback_file), where="k = 25000", columns=["k"])
    assert scan.to_arrow().column("k").to_pylist() == [25000]
    m = scan.metrics()
    assert m["dictionary_pages_skipped"] == 1
    assert m["dictionary_pages_read"] == 0
    assert m["pages_read"] == 1
    assert "1 not needed" in scan.explain()


def test_a_lookup_in_dictionary_pages_reads_the_dictionary(fallback_file: Path) -> None:
    """The first pages of each chunk are dictionary encoded."""
    scan = pqindex.scan(str(fallback_file), where="k = 3", columns=["k", "g"])
    assert scan.to_arrow().column("k").to_pylist() == [3]
    m = scan.metrics()
    assert m["dictionary_pages_skipped"] == 0
    assert m["dictionary_pages_read"] == 2


def test_a_full_scan_reads_every_dictionary(fallback_file: Path) -> None:
    scan = pqindex.scan(str(fallback_file))
    assert scan.to_arrow().num_rows == ROWS
    m = scan.metrics()
    assert m["dictionary_pages_skipped"] == 0
    assert m["dictionary_pages_read"] == dictionary_chunks(fallback_file)


def strings_file(path: Path) -> Path:
    """Seven string columns of 50,000 rows in 20,000-row row groups: short and long values,
    NULLs, multibyte text, a column stored as a dictionary type, and one whose chunks fall
    back to plain pages; and `q`, an integer spreading each of its 50 values over the rows."""
    n = 50_000
    modes = ["AIR", "RAIL", "TRUCK", "REG AIR", "FOB", "MAIL", "SHIP"]
    table = pa.table(
        {
            "flag": [("A", "N", "R")[i % 3] for i in range(n)],
            "mode": [None if i % 13 == 0 else modes[i * 7 % 7] for i in range(n)],
            "inst": [
                ("DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN")[i % 4]
                for i in range(n)
            ],
            "long": [f"a comment longer than thirty-two bytes, number {i % 5}" for i in range(n)],
            "uni": [("žluťoučký", "ünï", "日本語")[i % 3] for i in range(n)],
            "coded": pa.array([("x", "y")[i % 2] for i in range(n)]).dictionary_encode(),
            "fallback": [f"distinct-{i:08d}" for i in range(n)],
            "q": [i * 7_919 % 50 for i in range(n)],
        }
    )
    pq.write_table(
        table,
        path,
        row_group_size=20_000,
        dictionary_pagesize_limit=64 * 1024,
        write_page_index=True,
    )
    md = pq.ParquetFile(path).metadata
    fallback = md.schema.names.index("fallback")
    assert "PLAIN" in md.row_group(0).column(fallback).encodings
    return path


def test_strings_of_dictionary_chunks_read_as_pyarrow_reads_them(tmp_path: Path) -> None:
    """String columns whose pages are all dictionary encoded are read as dictionaries and
    expanded by pqindex, in many small batches. A chunk that falls back to plain pages,
    and a column stored as a dictionary type, are read as before. Every value and type
    equals pyarrow's."""
    path = strings_file(tmp_path / "strings.parquet")
    want = pq.read_table(path)
    for columns in (None, ["inst", "mode"], ["uni", "flag", "coded"]):
        got = pqindex.scan(str(path), columns=columns, batch_size=1_000).to_arrow()
        expected = want if columns is None else want.select(columns)
        assert got.schema.types == expected.schema.types, columns
        assert got.equals(expected), columns


@pytest.mark.parametrize(
    "where",
    ["q = 1", "q IN (3, 4)", "q < 40", "q = 1 AND flag = 'N'", "q = 99", "mode IS NULL"],
)
def test_strings_of_dictionary_chunks_under_a_filter_read_as_duckdb_reads_them(
    tmp_path: Path, where: str, duckdb_con: Any
) -> None:
    """Under a filter whose column is in the output, the other string columns of
    dictionary-only chunks are read as keys, filtered, and expanded: scattered rows (one
    in fifty), dense rows, none, and NULLs. Every value equals DuckDB's, every type the
    file's."""
    path = strings_file(tmp_path / "strings.parquet")
    query = f"SELECT * FROM read_parquet('{path}') WHERE {where} ORDER BY fallback"
    schema = pq.read_schema(path)
    # A dictionary column equals another by its values, whatever its dictionary holds.
    plain = pa.schema([pa.field(f.name, pa.string()) if f.name == "coded" else f for f in schema])
    want = duckdb_table(duckdb_con, query).cast(plain)
    for batch_size in (1_000, 65_536):
        got = pqindex.scan(str(path), where=where, batch_size=batch_size).to_arrow()
        assert got.schema.types == schema.types, where
        assert got.sort_by("fallback").cast(plain).equals(want), where


# A lookup of a few pages decodes only the dictionary entries they use: a writer numbers
# entries as it meets values, so the pages of a sorted column's start use the first ones.
CUT_ROWS = 80_000


@pytest.fixture(scope="module", params=[("1.0", "snappy"), ("2.0", "snappy"), ("1.0", "zstd")])
def large_dictionary_file(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Dictionaries of hundreds of kilobytes over pages of about a thousand rows: a sorted
    key with NULLs, sorted strings, and keys in a random order."""
    version, codec = request.param
    keys = range(CUT_ROWS)
    table = pa.table(
        {
            "k": pa.array([None if i % 11 == 5 else i * 2 for i in keys], pa.int64()),
            "s": pa.array([f"customer#{i // 3:09d}" for i in keys]),
            "r": pa.array([i * 7_919 % 40_000 for i in keys], pa.int64()),
            "d": pa.array([float(i // 4) for i in keys], pa.float64()),
        }
    )
    path = tmp_path_factory.mktemp("cut") / f"v{version}-{codec}.parquet"
    pq.write_table(
        table,
        path,
        compression=codec,
        data_page_size=8 * 1024,
        data_page_version=version,
        write_batch_size=1_000,
        write_page_index=True,
    )
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups == 1
    assert all(md.row_group(0).column(c).has_dictionary_page for c in range(4))
    return path


CUT_CASES = [
    "k = 0",
    "k = 2",
    "k < 500",
    "k = 60000",
    "k BETWEEN 99990 AND 100900",
    "k IN (4, 30000, 159998)",
    "k = 159998",
    "k IS NULL AND k < 100",
    "s = 'customer#000000001'",
    "s >= 'customer#000013300' AND s < 'customer#000013400'",
    "d = 3.0",
    "d BETWEEN 15000 AND 15010",
    "r = 7919",
    "k < 100 OR r = 12",
]


def requested(scan: pqindex.Scan) -> list[tuple[int, int]]:
    """The byte ranges a scan read from its file, from its `explain()`."""
    ranges = []
    for line in scan.explain().splitlines():
        if line.endswith(" B)"):
            start, end = line.split()[-3].split("-")
            ranges.append((int(start), int(end)))
    return ranges


@pytest.mark.parametrize("where", CUT_CASES)
def test_lookups_that_cut_dictionaries_match_duckdb(
    large_dictionary_file: Path, where: str, duckdb_con: Any
) -> None:
    path = large_dictionary_file
    scan = pqindex.scan(str(path), where=where)
    got = scan.to_arrow()
    want = duckdb_table(duckdb_con, f"SELECT * FROM read_parquet('{path}') WHERE {where}")
    assert got.num_rows == want.num_rows
    key = [("k", "ascending"), ("s", "ascending"), ("r", "ascending")]
    assert got.sort_by(key).equals(want.sort_by(key).cast(got.schema))
    # The lookups on the sorted columns read a few pages, not the whole chunk, and
    # pages read before their dictionary are not fetched again.
    if "r =" not in where:
        assert scan.metrics()["pages_pruned"] > 0
    requests = requested(scan)
    assert requests
    assert len(requests) == len(set(requests)), requests


@pytest.mark.parametrize("where", ["k = 2", "k < 500", "s = 'customer#000000001'"])
def test_a_lookup_fetches_only_the_start_of_a_large_dictionary(
    large_dictionary_file: Path, where: str
) -> None:
    """A lookup in the first pages of each chunk, which use only the first entries of its
    dictionary, reads only the start of each large dictionary page from the file: all of a
    page smaller than 64 KiB, or of one whose size only its whole stream tells (Zstandard
    byte arrays). A Zstandard page is read to the end of the 128 KiB block holding the
    entries used: most of these pages."""
    path = large_dictionary_file
    scan = pqindex.scan(str(path), where=where)
    assert scan.to_arrow().num_rows > 0
    ranges = requested(scan)
    rg = pq.ParquetFile(path).metadata.row_group(0)
    in_part = 0
    for c in range(rg.num_columns):
        chunk = rg.column(c)
        start, end = chunk.dictionary_page_offset, chunk.data_page_offset
        read = sum(max(0, min(e, end) - max(s, start)) for s, e in ranges)
        sized = chunk.compression == "SNAPPY" or chunk.physical_type != "BYTE_ARRAY"
        if end - start >= 64 * 1024 and sized:
            # A Snappy page to the entries used; a Zstandard one to their block's end.
            share = 4 if chunk.compression == "SNAPPY" else 1
            assert 0 < read * share < end - start, (chunk.path_in_schema, read, end - start)
            in_part += 1
        else:
            assert read >= end - start, (chunk.path_in_schema, read, end - start)
    assert in_part >= 2


@pytest.mark.parametrize("where", ["k = 2", None])
def test_a_damaged_dictionary_is_an_invalid_file_cut_or_whole(
    tmp_path: Path, where: str | None
) -> None:
    """A dictionary page whose Snappy stream is damaged raises InvalidFileError naming the
    file, whether a lookup decompresses only its start or a scan all of it."""
    path = tmp_path / "damaged-dictionary.parquet"
    keys = range(CUT_ROWS)
    table = pa.table({"k": pa.array([i * 2 for i in keys], pa.int64()), "v": list(keys)})
    pq.write_table(
        table,
        path,
        compression="snappy",
        data_page_size=8 * 1024,
        write_batch_size=1_000,
        write_page_index=True,
    )
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)
    assert chunk.has_dictionary_page
    assert chunk.data_page_offset - chunk.dictionary_page_offset > 64 * 1024
    # Early in the dictionary's stream, past its header: copies reaching 4 GiB back.
    at = chunk.dictionary_page_offset + 200
    data = bytearray(path.read_bytes())
    data[at : at + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    pqindex.clear_metadata_cache()
    with pytest.raises(pqindex.InvalidFileError, match="Snappy") as info:
        pqindex.scan(str(path), where=where).to_arrow()
    assert "damaged-dictionary.parquet" in str(info.value)
    if where:
        # The lookup's first page uses the dictionary's first entries: only its start is
        # decompressed, by pqindex's own decoder of a stream's start.
        assert "a copy from" in str(info.value)
