"""Delta and Iceberg tables through ``pqindex.spark``: ``read`` plans a table from its own
metadata as ``pqindex.scan`` does (deletes applied, columns under the table's names, time
travel) on classic and Spark Connect sessions, reading on the driver or in executors, and
returns the rows the format's own reader returns; ``build_indexes`` indexes a table's files
without changing them. Spark here has no Delta or Iceberg reader: the referees are
``deltalake`` and ``pyiceberg``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pqindex
import pqindex.spark
import pyarrow as pa
import pytest

deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyroaring")
pytest.importorskip("pyiceberg")

from delta_tables import add_deletion_vectors, add_paths, alter_columns  # noqa: E402
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402

ROWS = 6_000


def batch(start: int, n: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "region": pa.array(["EU", "US", "APAC"][i % 3] for i in range(start, start + n)),
            "amount": pa.array([float(i % 997) for i in range(start, start + n)]),
        }
    )


def rows(table: Any) -> list[tuple[Any, ...]]:
    data = table if isinstance(table, pa.Table) else table.toArrow()
    return sorted((tuple(r.values()) for r in data.to_pylist()), key=repr)


def delta_table(path: Path, version: int | None = None) -> pa.Table:
    """The table as deltalake reads it (its scan honours deletion vectors)."""
    return pa.table(deltalake.DeltaTable(str(path), version=version).scan())


def referee(table: pa.Table, where: Any) -> list[tuple[Any, ...]]:
    import duckdb

    con = duckdb.connect()
    con.register("t", table)
    return rows(con.execute(f"SELECT * FROM t WHERE {where}").to_arrow_table())


@pytest.fixture(scope="module")
def delta(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three appends, deletion vectors on the first file, a renamed column (mapping)."""
    path = tmp_path_factory.mktemp("delta") / "events"
    props = deltalake.WriterProperties(max_row_group_size=1_000, data_page_row_count_limit=200)
    for i in range(3):
        deltalake.write_deltalake(
            str(path),
            batch(i * ROWS // 3, ROWS // 3),
            mode="append",
            writer_properties=props,
            configuration={"delta.columnMapping.mode": "name"},
        )
    first = add_paths(path)[0]
    add_deletion_vectors(path, {first: list(range(0, 2_000, 3))})
    alter_columns(path, rename={"amount": "value"})
    return path


@pytest.fixture(scope="module")
def iceberg(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("iceberg")
    catalog = SqlCatalog("t", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/wh")
    catalog.create_namespace("db")
    table = catalog.create_table("db.events", schema=batch(0, 1).schema)
    for i in range(3):
        table.append(batch(i * ROWS // 3, ROWS // 3))
    table.delete("id < 300")
    return catalog.load_table("db.events")


@pytest.mark.parametrize("driver_read_bytes", [1 << 30, 0], ids=["driver", "executors"])
@pytest.mark.parametrize("where", ["id BETWEEN 100 AND 2500 AND region = 'EU'", "value > 990"])
def test_delta_reads_equal_deltalake(
    spark: Any, delta: Path, where: str, driver_read_bytes: int
) -> None:
    expected = referee(delta_table(delta), where)
    assert expected
    df = pqindex.spark.read(spark, delta, where=where, driver_read_bytes=driver_read_bytes)
    assert df.columns == ["id", "region", "value"]
    assert rows(df) == expected


def test_delta_time_travel(spark: Any, delta: Path) -> None:
    expected = rows(delta_table(delta, version=1))
    got = pqindex.spark.read(spark, delta, version=1, driver_read_bytes=0)
    assert rows(got) == expected


@pytest.mark.parametrize("driver_read_bytes", [1 << 30, 0], ids=["driver", "executors"])
def test_iceberg_reads_equal_pyiceberg(spark: Any, iceberg: Any, driver_read_bytes: int) -> None:
    where = "id BETWEEN 200 AND 4000 AND amount < 500"
    expected = referee(iceberg.scan().to_arrow(), where)
    assert expected
    got = pqindex.spark.read(spark, iceberg, where=where, driver_read_bytes=driver_read_bytes)
    assert rows(got) == expected


def test_build_indexes_on_a_table(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    props = deltalake.WriterProperties(data_page_row_count_limit=100)
    for i in range(2):
        deltalake.write_deltalake(
            str(path), batch(i * 1_000, 1_000), mode="append", writer_properties=props
        )
    before = {p.name: p.stat().st_mtime_ns for p in path.glob("*.parquet")}
    report = pqindex.spark.build_indexes(spark, path, [pqindex.DistinctIndex("id")])
    assert report.count() == 1
    assert {p.name: p.stat().st_mtime_ns for p in path.glob("*.parquet")} == before
    listed = pqindex.list_indexes(path)
    assert {i["kind"] for i in listed} == {"distinct"} and len(listed) == 2
    where = "id = 1234"
    plan = pqindex.spark.plan(spark, path, where=where)
    assert rows(plan.to_df()) == referee(delta_table(path), where)
    m = plan.metrics()
    assert m["indexes_read"] == 1 and m["rows_selected"] <= 100, m
    # The table reads as before for every other reader.
    assert delta_table(path).num_rows == 2_000
