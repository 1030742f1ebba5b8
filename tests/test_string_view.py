"""`scan(..., string_view=True)`: top-level string and binary columns come out as Arrow views.

The rows are those of the default output (DuckDB is the referee) whatever path reads them:
no predicate, a row filter, the predicate pass with late materialisation, spare threads
sharing columns, keys, dictionary-encoded and plain pages, partition values. Nested strings
keep their type, and the views are consumed as they are by pyarrow, DuckDB and polars.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_differential import canonical_rows, duckdb_table

ROWS = 30_000
MODES = ("AIR", "MAIL", "RAIL", "SHIP", "TRUCK")


def table() -> pa.Table:
    """Short dictionary strings, long unique strings (past a view's 12 inline bytes),
    binaries, a large string, a list of strings; NULLs and empty values in each."""

    def text(i: int) -> str | None:
        if i % 17 == 0:
            return None
        return "" if i % 101 == 0 else f"a rather long comment, number {i:06d}"

    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "mode": pa.array([None if i % 23 == 0 else MODES[i % 5] for i in range(ROWS)]),
            "comment": pa.array([text(i) for i in range(ROWS)], pa.string()),
            "raw": pa.array(
                [None if i % 19 == 0 else f"{i * 7 % ROWS:05d}".encode() for i in range(ROWS)],
                pa.binary(),
            ),
            "big": pa.array([text(i + 1) for i in range(ROWS)], pa.large_string()),
            "tags": pa.array(
                [None if i % 29 == 0 else [MODES[i % 5], f"t{i % 7}"] for i in range(ROWS)],
                pa.list_(pa.string()),
            ),
        }
    )


WRITERS = ["pyarrow", "pyarrow-plain", "pqindex"]


@pytest.fixture(scope="module", params=WRITERS)
def dataset(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two hive partitions of the table, written with the page index and small pages."""
    root = tmp_path_factory.mktemp("views") / request.param
    data = table()
    for part, (start, stop) in {"p=x": (0, ROWS // 2), "p=y": (ROWS // 2, ROWS)}.items():
        (root / part).mkdir(parents=True)
        path = root / part / "part-0.parquet"
        piece = data.slice(start, stop - start)
        if request.param == "pqindex":
            pqindex.write(piece, path, row_group_size=5_000, page_row_limit=500)
        else:
            pq.write_table(
                piece,
                path,
                row_group_size=5_000,
                use_dictionary=request.param == "pyarrow",
                data_page_size=4_096,
                write_batch_size=500,
                write_page_index=True,
            )
    return root


CASES: list[tuple[str | None, list[str] | None]] = [
    (None, None),
    (None, ["comment", "mode", "raw"]),
    ("id BETWEEN 1000 AND 1200", None),
    ("id BETWEEN 1000 AND 1200", ["big", "p"]),
    ("mode = 'RAIL'", None),
    ("mode = 'RAIL' AND id < 9000", ["comment"]),
    ("comment = 'a rather long comment, number 004321'", None),
    ("comment LIKE '%number 0043%'", ["id", "comment", "tags"]),
    ("comment IS NULL OR comment = ''", ["id", "raw"]),
    ("raw = X'3030303037'", None),
    ("big > 'a rather long comment, number 029000' AND p = 'y'", None),
    ("mode IN ('AIR', 'SHIP') AND id > 29000", ["mode", "id"]),
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("where", "columns"), CASES)
def test_rows_match_duckdb_as_views(
    dataset: Path, where: str | None, columns: list[str] | None, threads: int, duckdb_con: Any
) -> None:
    scan = pqindex.scan(str(dataset), where, columns, threads=threads, string_view=True)
    got = scan.to_arrow()
    projection = "*" if columns is None else ", ".join(columns)
    query = (
        f"SELECT {projection} FROM read_parquet('{dataset}/*/*.parquet', hive_partitioning=1)"
        + (f" WHERE {duckdb_where(where)}" if where else "")
    )
    expected = duckdb_table(duckdb_con, query)
    assert got.column_names == expected.column_names
    assert canonical_rows(got, got.column_names) == canonical_rows(expected, got.column_names)
    assert got.num_rows == expected.num_rows
    for field in got.schema:
        assert field.type == view_type(field.name), field


def view_type(name: str) -> pa.DataType:
    """The type `name` comes out in with `string_view=True`."""
    return {
        "id": pa.int64(),
        "mode": pa.string_view(),
        "comment": pa.string_view(),
        "raw": pa.binary_view(),
        "big": pa.string_view(),
        "tags": pa.list_(pa.string()),
        "p": pa.string_view(),
    }[name]


def duckdb_where(where: str) -> str:
    """`where` in DuckDB's syntax: a blob literal is `'\\x30...'::BLOB`."""
    if "X'" not in where:
        return where
    head, rest = where.split("X'", 1)
    hexed, tail = rest.split("'", 1)
    pairs = "".join(f"\\x{hexed[i : i + 2]}" for i in range(0, len(hexed), 2))
    return f"{head}'{pairs}'::BLOB{tail}"


def test_the_default_output_keeps_its_types(dataset: Path) -> None:
    schema = pa.schema(pqindex.scan(str(dataset)))
    assert schema.field("comment").type == pa.string()
    assert schema.field("big").type == pa.large_string()
    assert schema.field("raw").type == pa.binary()
    viewed = pa.schema(pqindex.scan(str(dataset), string_view=True))
    assert [f.type for f in viewed] == [view_type(f.name) for f in viewed]


def test_views_are_consumed_as_they_are(dataset: Path) -> None:
    where = "id < 3000"
    plain = pqindex.scan(str(dataset), where).to_arrow().sort_by("id")
    stream = pa.RecordBatchReader.from_stream(pqindex.scan(str(dataset), where, string_view=True))
    assert stream.schema.field("comment").type == pa.string_view()
    viewed = stream.read_all()
    # pyarrow's compute has no `take` of views: sorted once cast back.
    assert viewed.cast(plain.schema).sort_by("id").equals(plain)

    import duckdb

    con = duckdb.connect()
    con.register("v", viewed)
    got = con.sql("SELECT count(*), count(comment), max(comment), max(raw) FROM v").fetchall()
    assert got == [
        (
            3000,
            plain["comment"].drop_null().__len__(),
            max(plain["comment"].drop_null().to_pylist()),
            max(plain["raw"].drop_null().to_pylist()),
        )
    ]

    pl = pytest.importorskip("polars")
    frame = pl.from_arrow(viewed).sort("id")
    assert frame["comment"].dtype == pl.String
    assert frame["comment"].to_list() == plain["comment"].to_pylist()


def test_keys_and_views(dataset: Path) -> None:
    keys = pa.table({"comment": ["a rather long comment, number 000007", "nope", None]})
    got = pqindex.scan(
        str(dataset), columns=["id", "comment"], keys=keys, on="comment", string_view=True
    ).to_arrow()
    assert got.schema.field("comment").type == pa.string_view()
    assert got.column("id").to_pylist() == [7]


def test_a_selective_read_keeps_only_its_rows_strings(dataset: Path) -> None:
    """A view points into the page it was decoded from: a few rows of long strings are
    copied out rather than keep their pages alive."""
    where = "id BETWEEN 12000 AND 12009"
    viewed = pqindex.scan(str(dataset), where, ["comment", "big"], string_view=True).to_arrow()
    plain = pqindex.scan(str(dataset), where, ["comment", "big"]).to_arrow()
    assert viewed.num_rows == plain.num_rows == 10
    assert viewed.cast(plain.schema).equals(plain)
    assert viewed.get_total_buffer_size() < 4 * plain.get_total_buffer_size() + 4096
