"""``scan(..., limit=n)``: at most ``n`` rows, each satisfying ``where`` (DuckDB's rows
being the referee), read from the units that find rows soonest, and without fetching what
the rows do not need.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import duckdb_referee

ROWS = 40_000


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> str:
    rng = random.Random(3)
    table = pa.table(
        {
            "k": pa.array(range(ROWS), pa.int64()),
            "g": pa.array([rng.randrange(100) for _ in range(ROWS)], pa.int32()),
            "s": pa.array(
                [
                    None if rng.random() < 0.1 else f"value {rng.randrange(10**6)}"
                    for _ in range(ROWS)
                ]
            ),
        }
    )
    out = str(tmp_path_factory.mktemp("limit") / "t.parquet")
    pqindex.write(table, out, row_group_size=5_000, page_row_limit=500)
    return out


def matching(path: str, where: str) -> set[int]:
    rows = duckdb_referee().execute(f"SELECT k FROM read_parquet('{path}') WHERE {where}")
    return {r[0] for r in rows.fetchall()}


def limited(path: str, where: str | None, limit: int, **options: Any) -> tuple[list[int], Any]:
    scan = pqindex.scan(path, where=where, columns=["k", "s"], limit=limit, **options)
    return scan.to_arrow().column("k").to_pylist(), scan


@pytest.mark.parametrize(
    "where",
    [
        "g = 7",
        "g < 50 AND s LIKE '%1%'",
        "k >= 39990",
        "k BETWEEN 12345 AND 12400 OR k = 3",
        "s IS NULL",
        "g = 1000",
        "k > 10 AND g IN (3, 4, 5)",
    ],
)
@pytest.mark.parametrize("limit", [0, 1, 7, 600, 100_000])
def test_limited_rows_satisfy_the_predicate(path: str, where: str, limit: int) -> None:
    want = matching(path, where)
    got, _ = limited(path, where, limit)
    assert len(got) == min(limit, len(want)), (where, limit)
    assert len(set(got)) == len(got)
    assert set(got) <= want


def test_an_unselective_limit_reads_little(tmp_path: Path) -> None:
    rows = 400_000
    table = pa.table(
        {
            "k": pa.array(range(rows), pa.int64()),
            "s": pa.array([f"message number {i} of many" for i in range(rows)]),
        }
    )
    path = str(tmp_path / "big.parquet")
    pqindex.write(table, path, row_group_size=50_000, page_row_limit=2_000)
    everything = pqindex.scan(path, columns=["k", "s"])
    everything.to_arrow()
    got, scan = limited(path, None, 10)
    assert len(got) == 10
    m, whole = scan.metrics(), everything.metrics()
    assert m["rows_scanned"] <= 2_000, m
    # The footer, and the first pages of each column with their dictionaries.
    assert m["bytes_read"] * 5 < whole["bytes_read"], (m, whole)
    # The first piece holds the rows: the stream stops, maybe before its unit is counted.
    assert m["units_read"] <= 1, m


def test_row_groups_every_row_of_which_matches_come_first(path: str) -> None:
    # Only the last row group (k from 35000) is wholly within k >= 34250; the row group
    # before it matches in part (its page from 34000 holds rows on both sides) and comes
    # after.
    got, _ = limited(path, "k >= 34250", 3)
    assert all(k >= 35_000 for k in got), got


def test_limit_applies_after_deletes(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    table = pa.table({"k": pa.array(range(1000), pa.int64()), "s": ["x"] * 1000})
    uri = str(tmp_path / "delta")
    deltalake.write_deltalake(uri, table)
    deltalake.DeltaTable(uri).delete("k < 900")
    got = pqindex.scan(uri, columns=["k"], limit=50).to_arrow().column("k").to_pylist()
    assert len(got) == 50 and all(k >= 900 for k in got)


def test_bad_limits_are_typed_errors(path: str) -> None:
    for bad in (-1, 1.5, "3", True):
        with pytest.raises(pqindex.InvalidArgumentError):
            pqindex.scan(path, limit=bad)  # type: ignore[arg-type]


def test_limit_zero_keeps_the_schema(path: str) -> None:
    table = pqindex.scan(path, columns=["k", "s"], limit=0).to_arrow()
    assert table.num_rows == 0 and table.column_names == ["k", "s"]


def test_stock_decoding_limits_alike(path: str) -> None:
    got, _ = limited(path, "g = 7", 25, decode="stock")
    assert len(got) == 25 and set(got) <= matching(path, "g = 7")


def test_pyarrow_file_with_limit(tmp_path: Path) -> None:
    # A file another writer made, no page index: row groups are the units.
    out = str(tmp_path / "p.parquet")
    pq.write_table(pa.table({"k": list(range(10_000))}), out, row_group_size=1000)
    got = pqindex.scan(out, where="k > 4000", limit=5).to_arrow()
    assert got.num_rows == 5 and all(k > 4000 for k in got.column("k").to_pylist())
