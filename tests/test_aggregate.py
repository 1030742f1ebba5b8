"""``pqindex.aggregate``: count, min, max, sum and avg equal DuckDB's (exactly for integers
and decimals, within 1e-9 relative for floats) for every writer, with and without
aggregates indexes of each granularity, over predicates that make pages certain, uncertain
and empty; the index answers what it can and the rest is read; damaged indexes are skipped
with a warning; what cannot be aggregated is refused with a typed error.
"""

from __future__ import annotations

import math
import shutil
import warnings
from decimal import Decimal
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pytest
from test_indexes import WRITERS, make_table, write_source

NUMERIC = ("id", "k", "d20", "d18", "d9", "f", "i8", "u32", "u64")
ORDERED = ("lo", "hi", "day", "ts", "ts_ms", "bin", "b")
GRANULARITIES = ("none", "page", "row_group", "file")
PREDICATES = (
    None,
    "id < 4321",  # sorted: most pages certain, one straddles
    "id >= 1000 AND id < 9000",
    "id < 100 OR id > 11000",
    "k < 5000",  # unsorted: few pages certain
    "lo = 'red'",  # NULLs: never certain through the index
    "f > 0",  # NaN and NULL
    "id > 999999",  # nothing
    "id < 4321 AND lo IS NOT NULL",
)


def select_list() -> str:
    calls = ["count(*)"]
    for c in NUMERIC:
        calls += [f"count({c})", f"min({c})", f"max({c})", f"sum({c})", f"avg({c})"]
    for c in ORDERED:
        calls += [f"count({c})", f"min({c})", f"max({c})"]
    return ", ".join(calls)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory, duckdb_con: Any) -> dict[str, Path]:
    """Per (writer, granularity) a file with aggregates indexes on every column."""
    root = tmp_path_factory.mktemp("aggregate")
    out = {}
    for writer in WRITERS:
        base = root / f"{writer}.parquet"
        write_source(writer, make_table(), base, duckdb_con)
        for g in GRANULARITIES:
            path = root / f"{writer}-{g}.parquet"
            shutil.copyfile(base, path)
            if g != "none":
                pqindex.add_indexes(
                    path, [pqindex.AggregateIndex(NUMERIC + ORDERED, granularity=g)]
                )
            out[f"{writer}-{g}"] = path
    return out


def same(got: Any, want: Any) -> bool:
    if got is None or want is None:
        return got is None and want is None
    if isinstance(want, float) or isinstance(got, float):
        g, w = float(got), float(want)
        if math.isnan(w) or math.isnan(g):
            return math.isnan(w) and math.isnan(g)
        return g == w or abs(g - w) <= 1e-9 * max(abs(g), abs(w))
    if isinstance(want, Decimal | int) and isinstance(got, Decimal | int):
        return Decimal(got) == Decimal(want)
    return bool(got == want)


def duckdb_row(con: Any, path: Path, select: str, where: str | None) -> dict[str, Any]:
    sql = f"SELECT {select} FROM read_parquet('{path}')"
    if where:
        sql += f" WHERE {where}"
    relation = con.sql(sql)
    for method in ("to_arrow_table", "fetch_arrow_table"):
        if hasattr(relation, method):
            rows: list[dict[str, Any]] = getattr(relation, method)().to_pylist()
            return rows[0]
    rows = relation.arrow().read_all().to_pylist()
    return rows[0]


def our_row(path: Path, select: str, where: str | None) -> tuple[dict[str, Any], Any]:
    a = pqindex.aggregate(path, select, where)
    rows = pa.table(a).to_pylist()
    assert len(rows) == 1
    return rows[0], a


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("granularity", GRANULARITIES)
def test_aggregates_equal_duckdb(
    files: dict[str, Path], duckdb_con: Any, writer: str, granularity: str
) -> None:
    path = files[f"{writer}-{granularity}"]
    select = select_list()
    for where in PREDICATES:
        want = duckdb_row(duckdb_con, path, select, where)
        got, _ = our_row(path, select, where)
        assert len(got) == len(want), where
        wrong = {
            name: (g, w)
            for name, g, w in zip(got, got.values(), want.values(), strict=True)
            if not same(g, w)
        }
        assert not wrong, f"{writer}/{granularity} where {where}: {wrong}"


@pytest.mark.parametrize("writer", WRITERS)
def test_the_index_answers_certain_pages(files: dict[str, Path], writer: str) -> None:
    """On the sorted column the page index makes most pages certain; with page aggregates
    only the pages straddling the bounds are read, without them every selected one."""
    select = "count(*), sum(d18), min(f), max(hi)"
    where = "id >= 1000 AND id < 9000"
    _, plain = our_row(files[f"{writer}-none"], select, where)
    _, indexed = our_row(files[f"{writer}-page"], select, where)
    m0, m1 = plain.metrics(), indexed.metrics()
    assert m0["rows_from_index"] == 0
    assert m0["rows_to_read"] >= 3 * 8000
    # With a page index or without one (DuckDB's, pyarrow's without), the indexes' own
    # page bounds on ``id`` make every page but those at the bounds certain.
    assert m1["rows_from_index"] >= 3 * 7000
    assert m1["rows_to_read"] <= m0["rows_to_read"] / 5
    if m0["pages_read"]:  # counted from the OffsetIndex
        assert m1["pages_read"] < m0["pages_read"] / 5
    assert "answered by" in indexed.explain()


def test_count_star_needs_no_index(files: dict[str, Path]) -> None:
    got, a = our_row(files["pyarrow-none"], "count(*) AS n", "id < 4321")
    assert got == {"n": 4321}
    m = a.metrics()
    assert m["rows_to_read"] <= 500  # the one page holding id 4320 and 4321
    assert m["rows_from_index"] == 4321 - m["rows_matched"]


def test_damaged_index_is_skipped_with_a_warning(
    files: dict[str, Path], duckdb_con: Any, tmp_path: Path
) -> None:
    path = tmp_path / "damaged.parquet"
    shutil.copyfile(files["pyarrow-page"], path)
    located = [ix for ix in pqindex.list_indexes(path) if ix["columns"] == ["d18"]]
    data = bytearray(path.read_bytes())
    data[located[0]["offset"] + 40] ^= 0xFF
    path.write_bytes(bytes(data))
    select, where = "sum(d18), max(d18), count(*)", "id < 4321"
    want = duckdb_row(duckdb_con, path, select, where)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got, a = our_row(path, select, where)
    assert list(got.values()) == list(want.values())
    assert any(issubclass(w.category, pqindex.IndexWarning) for w in caught)
    assert a.warnings


@pytest.mark.parametrize(
    ("select", "error"),
    [
        ("sum(lo)", pqindex.UnsupportedError),
        ("avg(day)", pqindex.UnsupportedError),
        ("median(id)", pqindex.PredicateError),
        ("id", pqindex.PredicateError),
        ("count(DISTINCT id)", pqindex.PredicateError),
        ("sum(nope)", pqindex.InvalidArgumentError),
    ],
)
def test_what_cannot_be_aggregated_is_refused(
    files: dict[str, Path], select: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        pqindex.aggregate(files["pyarrow-none"], select)


@pytest.mark.parametrize(
    ("travel", "message"),
    [
        ({"version": 1}, "apply to tables"),
        ({"timestamp": "2026-01-01"}, "apply to tables"),
        ({"timestamp": "yesterday"}, "ISO-8601"),
        ({"snapshot_id": 1}, "Iceberg"),
    ],
)
def test_time_travel_on_loose_files_is_refused(
    files: dict[str, Path], travel: dict[str, Any], message: str
) -> None:
    with pytest.raises(pqindex.InvalidArgumentError, match=message):
        pqindex.aggregate(files["pyarrow-none"], "count(*)", **travel)


def test_results_carry_duckdb_types(files: dict[str, Path]) -> None:
    t = pa.table(pqindex.aggregate(files["pqindex-page"], "count(*), sum(i8), sum(d9), sum(f)"))
    assert t.schema.types == [
        pa.int64(),
        pa.decimal128(38, 0),
        pa.decimal128(38, 2),
        pa.float64(),
    ]


def test_a_sum_beyond_decimal_38_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "big.parquet"
    big = Decimal(9 * 10**37)
    pa_table = pa.table({"d": pa.array([big] * 20, pa.decimal128(38, 0))})
    pqindex.write(pa_table, path, indexes=[pqindex.AggregateIndex("d")])
    with pytest.raises(pqindex.InvalidArgumentError, match="overflows"):
        pqindex.aggregate(path, "sum(d)")
    got = pa.table(pqindex.aggregate(path, "max(d), count(d)")).to_pylist()[0]
    assert list(got.values()) == [big, 20]
