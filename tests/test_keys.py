"""Join keys: ``pqindex.scan(source, keys=..., on=...)`` returns the rows of ``source`` whose
key is among ``keys`` (a left semi join: a NULL key matches nothing), as DuckDB's SEMI JOIN
does, and prunes files, row groups and pages with the keys however many there are."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import duckdb_referee

ROWS = 40_000


@pytest.fixture(scope="module")
def table() -> pa.Table:
    rng = random.Random(3)
    unsorted = list(range(ROWS))
    rng.shuffle(unsorted)
    return pa.table(
        {
            "k": pa.array(range(ROWS), pa.int64()),
            "u": pa.array(unsorted, pa.int64()),
            "g": pa.array([i % 13 for i in range(ROWS)], pa.int32()),
            "s": pa.array([None if i % 101 == 0 else f"s{i % 500}" for i in range(ROWS)]),
            "d": pa.array([float(i % 7) / 2 for i in range(ROWS)], pa.float64()),
        }
    )


@pytest.fixture(scope="module")
def path(table: pa.Table, tmp_path_factory: pytest.TempPathFactory) -> str:
    out = str(tmp_path_factory.mktemp("keys") / "t.parquet")
    pq.write_table(
        table,
        out,
        row_group_size=10_000,
        data_page_size=1024,
        write_batch_size=100,
        max_rows_per_page=500,
        write_page_index=True,
    )
    return out


def semi_join(path: str, keys: pa.Table, on: list[str], where: str | None = None) -> list[int]:
    con = duckdb_referee()
    con.register("keys", keys)
    cond = " AND ".join(f't."{c}" = keys."{c}"' for c in on)
    sql = f"SELECT t.k FROM read_parquet('{path}') t SEMI JOIN keys ON ({cond})"
    if where:
        sql += f" WHERE {where}"
    return sorted(r[0] for r in con.execute(sql).fetchall())


def scan_keys(path: str, keys: Any, on: Any, where: str | None = None) -> tuple[list[int], Any]:
    scan = pqindex.scan(path, where=where, columns=["k"], keys=keys, on=on)
    return sorted(scan.to_arrow().column("k").to_pylist()), scan.metrics()


def test_keys_in_every_form_select_the_same_rows(path: str) -> None:
    values = [5, 17, 17, 39_999, 1_000_000, None]
    expected = semi_join(path, pa.table({"u": pa.array(values, pa.int64())}), ["u"])
    assert len(expected) == 3
    polars = pytest.importorskip("polars")
    for keys in [
        values,
        pa.array(values, pa.int32()),
        pa.chunked_array([pa.array(values[:3]), pa.array(values[3:])]),
        pa.table({"whatever": values}),
        pa.record_batch({"u": values}),
        polars.Series("u", values),
        polars.DataFrame({"u": values}),
        set(values),
    ]:
        assert scan_keys(path, keys, "u")[0] == expected, type(keys)


def test_keys_prune_pages_and_combine_with_where(path: str) -> None:
    keys = pa.table({"k": [10, 20_000, 20_001, 39_998]})
    rows, m = scan_keys(path, keys, "k")
    assert rows == [10, 20_000, 20_001, 39_998]
    assert m["rows_selected"] <= 3 * 500, m
    rows, _ = scan_keys(path, keys, ["k"], where="k > 15000 AND s IS NOT NULL")
    assert rows == semi_join(path, keys, ["k"], "k > 15000 AND s IS NOT NULL")
    rows, m = scan_keys(path, pa.table({"k": pa.array([], pa.int64())}), "k")
    assert rows == [] and m["pages_read"] == 0


def test_a_distinct_index_prunes_an_unsorted_key(path: str, tmp_path: Path) -> None:
    indexed = tmp_path / "indexed.parquet"
    indexed.write_bytes(Path(path).read_bytes())
    pqindex.add_indexes(indexed, [pqindex.DistinctIndex("u")])
    keys = pa.table({"u": [3, 33_333, 7]})
    rows, plain = scan_keys(path, keys, "u")
    rows_indexed, m = scan_keys(str(indexed), keys, "u")
    assert rows == rows_indexed == semi_join(path, keys, ["u"])
    assert plain["rows_selected"] == ROWS
    assert m["rows_selected"] <= 3 * 500, m


def test_indexes_of_files_in_key_order_answer_for_many_keys(
    table: pa.Table, tmp_path: Path
) -> None:
    """Files in key order, each with page distinct and bloom indexes on the key: a file is
    asked only about the keys within its bounds, and every file answers as DuckDB does,
    including one whose first row group holds only NULL keys."""
    folder = tmp_path / "ordered"
    folder.mkdir()
    quarter = ROWS // 4
    for i in range(4):
        part = table.slice(i * quarter, quarter).select(["k", "u"])
        # Every third value, so keys within a page's bounds may be absent from it.
        part = part.set_column(0, "k", pc.multiply(part["k"], 3))
        if i == 3:
            nulls = pa.nulls(2_000, pa.int64())
            part = pa.table(
                {"k": pa.concat_arrays([nulls, part["k"].combine_chunks()[2_000:]]), "u": part["u"]}
            )
        out = folder / f"part-{i}.parquet"
        pq.write_table(
            part, out, row_group_size=2_000, max_rows_per_page=500, write_page_index=True
        )
        indexes = [pqindex.DistinctIndex("k"), pqindex.BloomIndex("k", granularity="page")]
        pqindex.add_indexes(out, indexes)
    rng = random.Random(11)
    # Mostly keys no file holds (negative, or past the last), and a few within.
    values = [rng.randrange(-(2**40), -1) for _ in range(20_000)]
    values += [rng.randrange(3 * ROWS, 2**40) for _ in range(20_000)]
    values += [*rng.sample(range(3 * ROWS), 90), None]
    keys = pa.table({"k": pa.array(values, pa.int64())})
    con = duckdb_referee()
    con.register("keys", keys)
    expected = sorted(
        r[0]
        for r in con.execute(
            f"SELECT t.k FROM read_parquet('{folder}/*.parquet') t SEMI JOIN keys USING (k)"
        ).fetchall()
    )
    rows, m = scan_keys(str(folder), keys, "k")
    assert rows == expected and 20 < len(rows) <= 30
    assert m["rows_pruned_by_index"] > 0 and m["rows_selected"] <= 30 * 500, m


def test_several_key_columns_match_as_tuples(path: str) -> None:
    keys = pa.table({"g": [1, 2, 3, None, 4], "s": ["s1", "s2", "s499", "s3", None]})
    expected = semi_join(path, keys, ["g", "s"])
    assert expected
    assert scan_keys(path, keys, ["g", "s"])[0] == expected
    # Python tuples, and key columns named out of order in the table.
    tuples = [(1, "s1"), (2, "s2"), (3, "s499")]
    assert scan_keys(path, tuples, ["g", "s"])[0] == expected
    assert scan_keys(path, keys.select(["s", "g"]), ["g", "s"])[0] == expected


def test_string_and_float_keys(path: str) -> None:
    for on, keys in [
        ("s", pa.table({"s": ["s7", "s499", "nope", None]})),
        ("d", pa.table({"d": [0.5, -0.0, 9.0]})),
    ]:
        assert scan_keys(path, keys, on)[0] == semi_join(path, keys, [on])


def test_large_key_sets_of_every_shape_match_as_duckdb(path: str) -> None:
    """Sets searched by a hash (keys spread over the whole 64-bit range), by a bitmap (keys
    within a short span), and strings, each larger than a batch, on several row groups."""
    rng = random.Random(5)
    shapes = {
        "sparse": [rng.randrange(-(2**62), 2**62) for _ in range(50_000)] + list(range(0, ROWS, 7)),
        "dense": list(range(5, ROWS * 3, 3)),
    }
    for name, values in shapes.items():
        keys = pa.table({"u": pa.array(values, pa.int64())})
        rows = scan_keys(path, keys, "u")[0]
        assert rows and rows == semi_join(path, keys, ["u"]), name
    # One past each end of the column's values: nothing.
    assert scan_keys(path, pa.table({"u": pa.array([-1, ROWS], pa.int64())}), "u")[0] == []
    strings = pa.table({"s": [f"s{i}" for i in range(0, 20_000, 3)] + [None]})
    rows = scan_keys(path, strings, "s")[0]
    assert rows and rows == semi_join(path, strings, ["s"])


def test_a_million_keys_plan_and_filter_quickly(path: str) -> None:
    keys = pa.table({"u": pa.array(range(0, 2_000_000, 2), pa.int64())})
    start = time.perf_counter()
    rows, _ = scan_keys(path, keys, "u")
    elapsed = time.perf_counter() - start
    assert rows == semi_join(path, keys, ["u"])
    assert elapsed < 10, elapsed


def test_bad_keys_are_refused(path: str) -> None:
    with pytest.raises(pqindex.InvalidArgumentError):
        pqindex.scan(path, keys=[1, 2])
    with pytest.raises(pqindex.InvalidArgumentError):
        pqindex.scan(path, on="k")
    with pytest.raises(pqindex.PredicateError):
        pqindex.scan(path, keys=[1], on="nope")
    with pytest.raises(pqindex.InvalidArgumentError):
        pqindex.scan(path, keys=[(1, 2, 3)], on=["k", "g"])
    with pytest.raises(pqindex.PredicateError):
        pqindex.scan(path, keys=pa.table({"k": [[1]]}), on="k")
