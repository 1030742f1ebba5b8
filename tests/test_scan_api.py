"""The Scan object: Arrow interop, projection, batching, sources, metrics, nested types."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

N = 1000

METRIC_KEYS = {
    "files",
    "files_pruned",
    "row_groups",
    "row_groups_pruned_by_stats",
    "row_groups_pruned_by_bloom",
    "pages",
    "pages_pruned",
    "rows_scanned",
    "rows_matched",
    "bytes_read",
}


def _table(n: int = N) -> pa.Table:
    return pa.table(
        {
            "k": pa.array(range(n), pa.int64()),
            "s": [f"s{i % 50}" for i in range(n)],
            "f": pa.array([i / 2 for i in range(n)], pa.float64()),
        }
    )


@pytest.fixture
def simple(data_dir: Path) -> Path:
    path = data_dir / "simple.parquet"
    pq.write_table(_table(), path, write_page_index=True, row_group_size=250)
    return path


# --- Arrow interop --------------------------------------------------------------------------


def test_pa_table(simple: Path) -> None:
    got = pa.table(pqindex.scan(simple, '"k" < 5'))
    assert got.equals(_table().slice(0, 5))


def test_schema_capsule(simple: Path) -> None:
    assert pa.schema(pqindex.scan(simple, columns=["s", "k"])).names == ["s", "k"]


def test_polars(simple: Path) -> None:
    pl = pytest.importorskip("polars")
    df = pl.DataFrame(pqindex.scan(simple, '"k" < 5'))
    assert df.columns == ["k", "s", "f"]
    assert df["k"].to_list() == [0, 1, 2, 3, 4]
    reader = pa.RecordBatchReader.from_stream(pqindex.scan(simple, '"k" < 5'))
    assert pl.from_arrow(reader).shape == (5, 3)


def test_duckdb(simple: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    scan_obj = pqindex.scan(simple, '"k" < 5')  # noqa: F841 (read by DuckDB by name)
    assert duckdb.sql("select count(*), sum(k) from scan_obj").fetchall() == [(5, 10)]
    rows = duckdb.from_arrow(pqindex.scan(simple, '"k" < 2')).fetchall()
    assert rows == [(0, "s0", 0.0), (1, "s1", 0.5)]


def test_requested_schema_cast(simple: Path) -> None:
    req = pa.schema([("k", pa.int32()), ("s", pa.large_string()), ("f", pa.float64())])
    got = pa.RecordBatchReader.from_stream(pqindex.scan(simple, '"k" < 3'), schema=req).read_all()
    assert got.schema == req
    assert got["k"].to_pylist() == [0, 1, 2]
    assert got["s"].to_pylist() == ["s0", "s1", "s2"]


def test_requested_schema_reordered(simple: Path) -> None:
    req = pa.schema([("s", pa.string()), ("f", pa.float64()), ("k", pa.int64())])
    got = pa.RecordBatchReader.from_stream(pqindex.scan(simple, '"k" < 3'), schema=req).read_all()
    assert got.schema == req
    assert got["k"].to_pylist() == [0, 1, 2]


def test_requested_schema_overflow_not_silent(simple: Path) -> None:
    req = pa.schema([("k", pa.int8()), ("s", pa.string()), ("f", pa.float64())])
    scan = pqindex.scan(simple, '"k" >= 126 AND "k" < 130')
    try:
        got = pa.RecordBatchReader.from_stream(scan, schema=req).read_all()
    except (pqindex.PqindexError, pa.ArrowException):
        return  # refusing the cast is fine
    assert got["k"].to_pylist() == [126, 127, 128, 129]  # ignoring the request is fine too


# --- projection and batching ----------------------------------------------------------------


def test_columns_in_requested_order(simple: Path) -> None:
    got = pqindex.scan(simple, '"k" < 3', columns=["f", "k"]).to_arrow()
    assert got.column_names == ["f", "k"]
    assert got.equals(_table().slice(0, 3).select(["f", "k"]))


def test_empty_columns_keeps_row_count(simple: Path) -> None:
    got = pqindex.scan(simple, '"k" < 7', columns=[]).to_arrow()
    assert got.num_columns == 0
    assert got.num_rows == 7


@pytest.mark.parametrize("batch_size", [1, 100, 333])
def test_batch_size(simple: Path, batch_size: int) -> None:
    reader = pa.RecordBatchReader.from_stream(pqindex.scan(simple, batch_size=batch_size))
    sizes = [b.num_rows for b in reader]
    assert sum(sizes) == N
    assert max(sizes) <= batch_size


# --- sources --------------------------------------------------------------------------------


def test_directory_skips_underscore_and_dot(data_dir: Path) -> None:
    t = _table(100)
    (data_dir / "sub").mkdir()
    (data_dir / "_tmp").mkdir()
    (data_dir / ".hidden").mkdir()
    pq.write_table(t, data_dir / "a.parquet")
    pq.write_table(t, data_dir / "sub" / "b.parquet")
    pq.write_table(t, data_dir / "_tmp" / "c.parquet")
    pq.write_table(t, data_dir / ".hidden" / "d.parquet")
    pq.write_table(t, data_dir / "_common_metadata.parquet")
    pq.write_table(t, data_dir / ".e.parquet")
    (data_dir / "_SUCCESS").write_text("")
    (data_dir / ".a.parquet.crc").write_bytes(b"junk")
    scan = pqindex.scan(data_dir)
    assert scan.to_arrow().num_rows == 200
    assert scan.metrics()["files"] == 2


@pytest.fixture
def hive(data_dir: Path) -> Path:
    for year in (2020, 2021):
        for cat in ("a", "b"):
            part = data_dir / f"year={year}" / f"cat={cat}"
            part.mkdir(parents=True)
            pq.write_table(_table(100), part / "part-0.parquet")
    return data_dir


def test_hive_partitions_become_columns(hive: Path) -> None:
    got = pqindex.scan(hive).to_arrow()
    assert got.num_rows == 400
    assert {"year", "cat"} <= set(got.column_names)
    pairs = {(r["year"], r["cat"]) for r in got.select(["year", "cat"]).to_pylist()}
    assert pairs == {(2020, "a"), (2020, "b"), (2021, "a"), (2021, "b")}


def test_hive_partitions_prune_files(hive: Path) -> None:
    scan = pqindex.scan(hive, '"year" = 2021 AND "k" < 10', columns=["year", "cat", "k"])
    got = scan.to_arrow()
    assert got.num_rows == 20
    assert set(got["year"].to_pylist()) == {2021}
    m = scan.metrics()
    assert m["files"] == 4
    assert m["files_pruned_by_partition"] == 2
    scan = pqindex.scan(hive, "\"cat\" = 'b'", columns=["cat", "k"])
    got = scan.to_arrow()
    assert got.num_rows == 200 and set(got["cat"].to_pylist()) == {"b"}
    assert scan.metrics()["files_pruned_by_partition"] == 2
    assert "pruned by partition values" in scan.explain()


def test_list_of_files(data_dir: Path) -> None:
    a, b = data_dir / "a.parquet", data_dir / "b.parquet"
    pq.write_table(_table(100), a)
    pq.write_table(_table(50), b)
    scan = pqindex.scan([a, str(b)], '"k" < 10')
    assert scan.to_arrow().num_rows == 20
    assert scan.metrics()["files"] == 2


# --- explain / metrics ----------------------------------------------------------------------


def test_explain_and_metrics(simple: Path) -> None:
    scan = pqindex.scan(simple, '"k" < 10')
    text = scan.explain()
    assert '"k" < 10' in text
    assert "3 pruned by statistics" in text
    assert "simple.parquet" in text
    assert scan.to_arrow().num_rows == 10
    m = scan.metrics()
    assert METRIC_KEYS <= set(m)
    assert all(isinstance(v, int) for v in m.values())
    assert m["files"] == 1 and m["files_pruned"] == 0
    assert m["row_groups"] == 4 and m["row_groups_pruned_by_stats"] == 3
    assert m["rows_scanned"] == 250 and m["rows_matched"] == 10
    assert m["bytes_read"] > 0
    assert "10 matched" in scan.explain()


def test_bloom_pruning_counted(data_dir: Path) -> None:
    path = data_dir / "bloom.parquet"
    values = list(range(0, 20000, 2))  # only even numbers
    random.Random(7).shuffle(values)  # every row group's and page's bounds hold 5001
    t = pa.table({"k": pa.array(values, pa.int64()), "s": [f"v{v}" for v in values]})
    pqindex.write(t, path, bloom_filter_columns=["k", "s"], row_group_size=1000)
    # `k`'s chunks are all dictionary encoded, in dictionary pages smaller than its filters:
    # those are asked instead, before the data pages.
    scan = pqindex.scan(path, '"k" = 5001')  # inside every row group's min/max, absent
    assert scan.to_arrow().num_rows == 0
    m = scan.metrics()
    assert m["row_groups_pruned_by_stats"] == 0
    assert m["row_groups_pruned_by_bloom"] + m["units_pruned_by_dictionary"] == 10
    assert m["pages_read"] == 0
    scan = pqindex.scan(path, "\"s\" = 'v5001'")
    assert scan.to_arrow().num_rows == 0
    assert scan.metrics()["row_groups_pruned_by_bloom"] > 0
    scan = pqindex.scan(path, '"k" = 5000')  # present: never ruled out
    assert scan.to_arrow().num_rows == 1
    m = scan.metrics()
    assert m["row_groups_pruned_by_bloom"] + m["units_pruned_by_dictionary"] == 9


def test_no_bloom_filter_read_where_the_page_index_leaves_a_page(data_dir: Path) -> None:
    path = data_dir / "bloom_sorted.parquet"
    # Sorted and sparse: a row group spans 2,000,000 values with 1,000 rows.
    values = list(range(0, 20_000_000, 2000))
    t = pa.table({"k": pa.array(values, pa.int64())})
    pqindex.write(t, path, bloom_filter_columns=["k"], row_group_size=1000, page_row_limit=100)
    # Statistics keep one row group, whose page index keeps one page: its dictionary page,
    # which reading that page needs anyway, costs less than the row group's filter and is
    # exact; asked first, it rules the row group out.
    scan = pqindex.scan(path, '"k" = 5001000')
    assert scan.to_arrow().num_rows == 0
    m = scan.metrics()
    assert m["row_groups_pruned_by_stats"] == 9
    assert m["bloom_filters_read"] == 0 and m["pages_read"] == 0
    assert m["units_pruned_by_dictionary"] == 1
    bytes_without = m["bytes_read"]
    assert pqindex.scan(path, '"k" = 5000000').to_arrow().num_rows == 1
    # An IN-list over every page of the row group is worth asking the row group about: its
    # dictionary page, smaller than its filter, rules it out before any data page.
    absent = ", ".join(str(v) for v in range(4_001_000, 6_000_000, 200_000))
    scan = pqindex.scan(path, f'"k" IN ({absent})')
    assert scan.to_arrow().num_rows == 0
    m = scan.metrics()
    assert m["bloom_filters_read"] == 0 and m["units_pruned_by_dictionary"] == 1
    assert m["pages_read"] == 0
    assert bytes_without > 0
    # Unless the row group is dense in the values asked about: 1,000 rows over 1,000
    # values hold almost any ten of them, and the filter would rule nothing out.
    dense = data_dir / "bloom_dense.parquet"
    t = pa.table({"k": pa.array([v * 7919 % 1000 for v in range(10_000)], pa.int64())})
    pqindex.write(t, dense, bloom_filter_columns=["k"], row_group_size=1000, page_row_limit=100)
    present = ", ".join(str(v) for v in range(0, 1000, 100))
    scan = pqindex.scan(dense, f'"k" IN ({present})')
    assert scan.to_arrow().num_rows == 100
    m = scan.metrics()
    assert m["bloom_filters_read"] == 0 and m["row_groups_pruned_by_stats"] == 0


# --- now() / current_date -------------------------------------------------------------------


def test_now_and_current_date(data_dir: Path) -> None:
    path = data_dir / "time.parquet"
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    today = dt.datetime.now(dt.timezone.utc).date()
    ts = [now - dt.timedelta(days=10), now + dt.timedelta(days=10), now - dt.timedelta(days=2)]
    days = [today - dt.timedelta(days=10), today + dt.timedelta(days=10), today]
    t = pa.table(
        {
            "ts": pa.array(ts, pa.timestamp("us")),
            "tstz": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "d": pa.array(days, pa.date32()),
        }
    )
    pq.write_table(t, path)
    cases = {
        '"ts" < now()': 2,
        '"tstz" < now()': 2,
        '"ts" > current_timestamp': 1,
        '"d" < current_date': 1,
        '"d" = current_date': 1,
        '"d" >= current_date': 2,
    }
    for where, expected in cases.items():
        assert pqindex.scan(path, where).to_arrow().num_rows == expected, where


# --- nested types ---------------------------------------------------------------------------


def _nested() -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(6), pa.int64()),
            "st": pa.array(
                [{"a": i, "b": {"c": str(i), "d": [i, None]}} if i != 3 else None for i in range(6)]
            ),
            "li": pa.array([[1, 2], [], None, [None], [5], [6, 7, 8]], pa.list_(pa.int32())),
            "ls": pa.array([[{"x": 1}], None, [], [{"x": None}], [{"x": 5}], [{"x": 6}]]),
            "m": pa.array(
                [[("a", 1)], [], None, [("b", 2), ("c", None)], [("d", 4)], [("e", 5)]],
                pa.map_(pa.string(), pa.int64()),
            ),
            "lli": pa.array(
                [[[1], [2, 3]], None, [[]], [None], [[5]], [[6]]], pa.list_(pa.list_(pa.int64()))
            ),
        }
    )


@pytest.fixture
def nested(data_dir: Path) -> Path:
    path = data_dir / "nested.parquet"
    pq.write_table(_nested(), path, write_page_index=True)
    return path


def test_nested_read_back(nested: Path) -> None:
    expected = pq.read_table(nested)
    got = pqindex.scan(nested).to_arrow()
    assert got.column_names == expected.column_names
    for name in expected.column_names:
        assert got[name].to_pylist() == expected[name].to_pylist(), name


@pytest.mark.parametrize("cols", [["m", "st"], ["lli", "id"], ["ls"], ["li", "m", "lli"]])
def test_nested_projected(nested: Path, cols: list[str]) -> None:
    expected = pq.read_table(nested, columns=cols).slice(2)
    got = pqindex.scan(nested, '"id" >= 2', columns=cols).to_arrow()
    assert got.column_names == cols
    for name in cols:
        assert got[name].to_pylist() == expected[name].to_pylist(), name


def test_struct_field_predicate(nested: Path) -> None:
    got = pqindex.scan(nested, '"st"."a" > 1', columns=["id"]).to_arrow()
    assert got["id"].to_pylist() == [2, 4, 5]
    got = pqindex.scan(nested, '"st"."b"."c" = \'4\'', columns=["id"]).to_arrow()
    assert got["id"].to_pylist() == [4]


def test_nested_roundtrip_through_write(data_dir: Path) -> None:
    path = data_dir / "w.parquet"
    pqindex.write(_nested(), path)
    got = pqindex.scan(path).to_arrow()
    for name in _nested().column_names:
        assert got[name].to_pylist() == _nested()[name].to_pylist(), name


def test_to_arrow_within_reads_all_or_stops(data_dir: Path) -> None:
    """``to_arrow_within(max_bytes)`` is ``to_arrow()`` while the rows fit, ``None`` once
    they take more; either way the scan is consumed, and errors keep their pqindex type."""
    path = data_dir / "within.parquet"
    pq.write_table(_table(100_000), path, row_group_size=10_000)
    where = "k < 5000"
    want = pqindex.scan(path, where=where, batch_size=1000).to_arrow()
    scan = pqindex.scan(path, where=where, batch_size=1000)
    assert scan.to_arrow_within(1 << 30).equals(want)
    with pytest.raises(pqindex.ScanConsumedError):
        scan.to_arrow()
    big = pqindex.scan(path, batch_size=1000)
    assert big.to_arrow_within(64 * 1024) is None
    with pytest.raises(pqindex.ScanConsumedError):
        big.to_arrow_within(1 << 30)
    changed = pqindex.scan(path, where=where)
    pq.write_table(_table(200), path)
    with pytest.raises(pqindex.FileChangedError):
        changed.to_arrow_within(1 << 30)


def test_units_expect_rows_from_the_statistics(data_dir: Path) -> None:
    """Each unit says how many rows the footers' statistics expect it to return (values
    spread evenly between a row group's bounds, conjuncts independent; few where the bounds
    cannot tell), and what they take as Arrow."""
    path = data_dir / "expect.parquet"
    n = 100_000
    t = pa.table(
        {
            "k": pa.array(range(n), pa.int64()),
            "q": pa.array([1 + i * 7 % 50 for i in range(n)], pa.int64()),
            "s": [f"v{i:06d}" for i in range(n)],
        }
    )
    pq.write_table(t, path, row_group_size=n // 4, write_page_index=True)

    def expected(where: str | None) -> tuple[int, int]:
        units = pqindex.scan(path, where).units()
        rows = sum(units.column("expected_rows").to_pylist())
        return rows, sum(units.column("expected_bytes").to_pylist())

    rows, size = expected(None)
    assert rows == n and 8 * 2 * n < size < 40 * n
    # Half of every row group's q bounds (1..50); a tenth of k's range, in one row group.
    assert abs(expected("q <= 25")[0] - n * 24 / 49) < n * 0.01
    assert abs(expected("k < 10000")[0] - 10_000) <= 4
    assert abs(expected("k < 10000 AND q <= 25")[0] - 10_000 * 24 / 49) < n * 0.01
    # Two bounds of one column keep one interval (they do not multiply).
    assert abs(expected("k BETWEEN 1000 AND 1999")[0] - 1000) <= 4
    assert abs(expected("k >= 1000 AND q <= 25 AND k < 2000")[0] - 1000 * 24 / 49) <= 4
    assert expected("k = 77")[0] == 1
    assert expected("k = 77 OR q > 60")[0] == 1
    # A string equality: the bounds cannot tell, so few.
    assert expected("s = 'v000077'") == (0, 0)
