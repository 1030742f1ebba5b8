"""The structured predicate (``where=`` as a dict, docs/predicates.md): the same rows as
the SQL text it stands for, and typed errors for documents that are not one."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest


def col(name: str | list[str]) -> dict[str, Any]:
    return {"col": name}


def lit(value: Any, type_: str | None = None) -> dict[str, Any]:
    return {"lit": value} if type_ is None else {"lit": value, "type": type_}


def op(name: str, *args: Any, **extra: Any) -> dict[str, Any]:
    return {"op": name, "args": list(args), **extra}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("structured") / "t.parquet"
    n = 2_000
    table = pa.table(
        {
            "k": pa.array(range(n), pa.int64()),
            "s": [None if i % 13 == 0 else f"v{i % 40:02d}" for i in range(n)],
            "d": pa.array(
                [dt.date(2024, 1, 1) + dt.timedelta(days=i % 60) for i in range(n)], pa.date32()
            ),
            "x": pa.array([i / 7 if i % 11 else float("nan") for i in range(n)], pa.float64()),
            "m": pa.array([i * 125 for i in range(n)], pa.decimal128(12, 2)),
            "st": pa.array([{"a": i % 5} for i in range(n)]),
            "b": pa.array([bytes([i % 256]) for i in range(n)], pa.binary()),
        }
    )
    pq.write_table(table, path, row_group_size=500, write_page_index=True, data_page_size=2048)
    return path


CASES: list[tuple[dict[str, Any], str]] = [
    (op("=", col("k"), lit(7)), "k = 7"),
    (op("and", op(">=", col("k"), lit(100)), op("<", col("k"), lit(120))), "k >= 100 AND k < 120"),
    (op("or", op("=", col("s"), lit("v01")), op("is_null", col("s"))), "s = 'v01' OR s IS NULL"),
    (op("not", op("in", col("s"), lit("v01"), lit("v02"))), "NOT s IN ('v01', 'v02')"),
    (op("not_in", col("k"), lit(1), lit(2), lit(3)), "k NOT IN (1, 2, 3)"),
    (
        op("between", col("d"), lit("2024-01-10", "DATE"), lit("2024-01-12", "DATE")),
        "d BETWEEN DATE '2024-01-10' AND DATE '2024-01-12'",
    ),
    (op(">", col("x"), lit(100.5)), "x > 100.5::DOUBLE"),
    (op("=", col("x"), lit("NaN", "DOUBLE")), "x = 'NaN'::DOUBLE"),
    (op("=", col("m"), lit("12.50", "DECIMAL(12,2)")), "m = 12.50"),
    (op("like", col("s"), lit("v1%")), "s LIKE 'v1%'"),
    (op("not_ilike", col("s"), lit("V2_")), "s NOT ILIKE 'V2_'"),
    (op("like", col("s"), lit("v!_%"), escape="!"), "s LIKE 'v!_%' ESCAPE '!'"),
    (op("starts_with", col("s"), lit("v3")), "starts_with(s, 'v3')"),
    (op("regexp_matches", col("s"), lit("^v[0-2]5$")), "regexp_matches(s, '^v[0-2]5$')"),
    # has_token: a whole token, as the regular expression DuckDB is given for it.
    (
        op("has_token", col("s"), lit("v07")),
        "regexp_matches(s, '(^|[^\\pL\\pN])v07($|[^\\pL\\pN])')",
    ),
    (
        op("has_token", col("s"), lit("v0")),
        "regexp_matches(s, '(^|[^\\pL\\pN])v0($|[^\\pL\\pN])')",
    ),
    (op("=", col(["st", "a"]), lit(3)), "st.a = 3"),
    (op("=", col("b"), {"lit": "07", "type": "BLOB", "encoding": "hex"}), "b = '\\x07'::BLOB"),
    (op("=", col("b"), {"lit": "Bw==", "type": "BLOB", "encoding": "base64"}), "b = '\\x07'::BLOB"),
    (op("<", op("cast", col("k"), type="HUGEINT"), lit(3.5)), "CAST(k AS HUGEINT) < 3.5::DOUBLE"),
    (op("in", col("k"), *[lit(i) for i in range(0, 2_000, 3)]), "k % 3 = 0"),
    (lit(False), "FALSE"),
]


@pytest.mark.parametrize("where, sql", CASES, ids=[c[1][:40] for c in CASES])
def test_the_same_rows_as_sql(source: Path, duckdb_con: Any, where: Any, sql: str) -> None:
    got = pqindex.scan(source, where).to_arrow().sort_by("k")
    want = duckdb_con.sql(f"SELECT * FROM '{source}' WHERE {sql} ORDER BY k").arrow()
    if hasattr(want, "read_all"):
        want = want.read_all()
    assert got.column("k").to_pylist() == want.column("k").to_pylist()
    # The same pruning as the SQL spelling, where pqindex reads that spelling.
    if "%" not in sql:
        planned = pqindex.scan(source, where).metrics()["rows_selected"]
        assert planned == pqindex.scan(source, sql).metrics()["rows_selected"]


def test_explain_shows_the_document(source: Path) -> None:
    where = op("=", col("k"), lit(7))
    assert '"op": "="' in pqindex.scan(source, where).explain()


@pytest.mark.parametrize(
    "where",
    [
        {"op": "=", "args": [{"col": "k"}]},
        {"op": "frobnicate", "args": []},
        {"col": 7},
        {"lit": [1, 2]},
        {"lit": "x", "type": "NO SUCH TYPE"},
        {"op": "=", "args": [{"col": "k"}, {"lit": "zz", "type": "BLOB", "encoding": "hex"}]},
        {"op": "=", "args": [{"col": "nope"}, {"lit": 1}]},
        {"op": "=", "args": [{"col": "k"}, {"lit": dt.date(2024, 1, 1)}]},
    ],
)
def test_malformed_documents_are_predicate_errors(source: Path, where: Any) -> None:
    with pytest.raises((pqindex.PredicateError, pqindex.UnsupportedError)):
        pqindex.scan(source, where)


def test_where_of_another_kind_is_a_type_error(source: Path) -> None:
    with pytest.raises(TypeError, match="SQL text"):
        pqindex.scan(source, [1, 2])  # type: ignore[arg-type]


def test_aggregate_takes_the_structured_form(source: Path) -> None:
    where = op("<", col("k"), lit(10))
    result = pqindex.aggregate(source, "count(*)", where=where)
    assert result.to_arrow().column(0).to_pylist() == [10]
