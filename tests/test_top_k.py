"""``scan(..., order_by=..., limit=k)``: the first ``k`` rows in that order, NULLs last, as
DuckDB's ``ORDER BY ... NULLS LAST LIMIT k`` gives them (ties compared by their order
values), reading only the row groups that can hold one of them.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import duckdb_referee

ROWS = 30_000


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> str:
    rng = random.Random(11)
    base = dt.datetime(2024, 1, 1)
    # Time-ordered like a log: ts grows, with a few rows out of order and some NULLs.
    ts = [base + dt.timedelta(seconds=i + rng.randint(-30, 30)) for i in range(ROWS)]
    table = pa.table(
        {
            "k": pa.array(range(ROWS), pa.int64()),
            "ts": pa.array(
                [None if i % 997 == 5 else t for i, t in enumerate(ts)], pa.timestamp("us")
            ),
            "level": pa.array([rng.choice(["INFO", "WARN", "ERROR", None]) for _ in range(ROWS)]),
            "n": pa.array(
                [None if rng.random() < 0.3 else rng.randrange(50) for _ in range(ROWS)], pa.int32()
            ),
            "x": pa.array(
                [
                    math.nan
                    if rng.random() < 0.01
                    else None
                    if rng.random() < 0.1
                    else rng.random()
                    for _ in range(ROWS)
                ],
                pa.float64(),
            ),
            "only_null": pa.array([None if i < ROWS - 100 else i for i in range(ROWS)], pa.int64()),
        }
    )
    out = str(tmp_path_factory.mktemp("topk") / "t.parquet")
    pqindex.write(table, out, row_group_size=2_000, page_row_limit=500)
    return out


def order_sql(order: list[tuple[str, str]]) -> str:
    return ", ".join(f"{c} {d.upper()} NULLS LAST" for c, d in order)


def expected(
    path: str, where: str | None, order: list[tuple[str, str]], k: int
) -> list[tuple[Any, ...]]:
    cols = ", ".join(c for c, _ in order)
    filt = f"WHERE {where}" if where else ""
    sql = f"SELECT {cols} FROM read_parquet('{path}') {filt} ORDER BY {order_sql(order)} LIMIT {k}"
    return [tuple(r) for r in duckdb_referee().execute(sql).fetchall()]


def got(
    path: str, where: str | None, order: list[tuple[str, str]], k: int
) -> tuple[list[tuple[Any, ...]], Any]:
    cols = sorted({c for c, _ in order} | {"k"})
    scan = pqindex.scan(path, where=where, columns=cols, order_by=order, limit=k)
    table = scan.to_arrow()
    rows = list(zip(*(table.column(c).to_pylist() for c, _ in order), strict=True))
    return rows, scan


def same(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> bool:
    def norm(v: Any) -> Any:
        return "NaN" if isinstance(v, float) and math.isnan(v) else v

    return [tuple(map(norm, r)) for r in a] == [tuple(map(norm, r)) for r in b]


CASES = [
    (None, [("ts", "desc")]),
    (None, [("ts", "asc")]),
    ("level = 'ERROR'", [("ts", "desc")]),
    ("k < 100 OR k > 29900", [("ts", "desc")]),
    (None, [("n", "desc"), ("k", "asc")]),
    (None, [("n", "asc"), ("ts", "desc")]),
    (None, [("level", "desc"), ("k", "desc")]),
    (None, [("x", "desc")]),
    (None, [("x", "asc")]),
    ("n IS NULL", [("only_null", "desc")]),
    (None, [("only_null", "asc"), ("k", "asc")]),
    ("level = 'nothing'", [("ts", "desc")]),
]


@pytest.mark.parametrize("where,order", CASES)
@pytest.mark.parametrize("k", [1, 10, 150, 5000])
def test_top_rows_are_duckdbs(
    path: str, where: str | None, order: list[tuple[str, str]], k: int
) -> None:
    rows, _ = got(path, where, order, k)
    want = expected(path, where, order, k)
    assert same(rows, want), (where, order, k, rows[:5], want[:5])


def test_newest_rows_read_only_the_newest_pages(path: str) -> None:
    where = "level = 'ERROR'"
    rows, scan = got(path, where, [("ts", "desc")], 100)
    assert len(rows) == 100
    whole = pqindex.scan(path, where=where, columns=["k", "ts"])
    whole.to_arrow()
    m, w = scan.metrics(), whole.metrics()
    # A quarter of the rows are ERROR rows: the newest pages of 500 rows hold the 100.
    assert m["rows_scanned"] <= 3_000, m
    assert m["bytes_read"] * 3 < w["bytes_read"], (m, w)


def test_a_float_order_is_read_whole(path: str) -> None:
    # NaN sorts above every number and statistics leave it out: no row group is skipped.
    _, scan = got(path, None, [("x", "desc")], 5)
    assert scan.metrics()["units_read"] == ROWS // 2_000


def test_order_by_forms(path: str) -> None:
    want = expected(path, None, [("ts", "desc")], 3)
    for form in ("ts desc", ["ts DESC"], [("ts", "desc")], ("ts", "desc")):
        scan = pqindex.scan(path, columns=["ts"], order_by=form, limit=3)
        assert [(v,) for v in scan.to_arrow().column("ts").to_pylist()] == want, form


def test_bad_order_by_is_a_typed_error(path: str) -> None:
    with pytest.raises(pqindex.InvalidArgumentError, match="not among the columns"):
        pqindex.scan(path, columns=["k"], order_by="ts desc", limit=3)
    with pytest.raises(pqindex.InvalidArgumentError, match="needs a limit"):
        pqindex.scan(path, order_by="ts desc")
    with pytest.raises(pqindex.InvalidArgumentError):
        pqindex.scan(path, order_by=[("ts", "sideways")], limit=3)
    with pytest.raises(pqindex.InvalidArgumentError):
        pqindex.scan(path, order_by=[], limit=3)


def test_partition_values_bound_their_files(tmp_path: Path) -> None:
    for day in range(10):
        d = tmp_path / f"day={day}"
        d.mkdir()
        pq.write_table(pa.table({"k": list(range(day * 100, day * 100 + 100))}), d / "f.parquet")
    scan = pqindex.scan(
        str(tmp_path), columns=["day", "k"], order_by=[("day", "desc"), ("k", "asc")], limit=5
    )
    table = scan.to_arrow()
    assert table.column("k").to_pylist() == [900, 901, 902, 903, 904]
    assert scan.metrics()["units_read"] == 1


def test_top_k_over_a_delta_table_with_deletes(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    uri = str(tmp_path / "delta")
    deltalake.write_deltalake(uri, pa.table({"k": pa.array(range(1000), pa.int64())}))
    deltalake.DeltaTable(uri).delete("k >= 990")
    table = pqindex.scan(uri, columns=["k"], order_by="k desc", limit=3).to_arrow()
    assert table.column("k").to_pylist() == [989, 988, 987]


def test_explain_says_what_the_limit_does(path: str) -> None:
    top = pqindex.scan(path, columns=["ts"], order_by="ts desc", limit=3).explain()
    assert "top:         3 rows by ts desc" in top
    assert "limit:       5 rows" in pqindex.scan(path, limit=5).explain()
