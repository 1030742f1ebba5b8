"""Catalog tables by name, through ``pqindex.spark.read`` and the data source's options
(``table_options``), on classic and Spark Connect sessions: Parquet tables written by
``saveAsTable`` into the session's warehouse, external ones over existing files,
partitioned ones, and Delta locations return Spark's rows for the table; views, other
providers and tables whose files Spark does not read as its location's are refused by
name."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")

from pqindex.spark import _tables

DB = "pqnames"
N = 3000


def data(start: int = 0, n: int = N) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "s": pa.array([f"s{i % 7}" for i in range(start, start + n)]),
            "part": pa.array([i % 3 for i in range(start, start + n)], pa.int64()),
        }
    )


def rows(df: Any) -> list[str]:
    return sorted(map(str, df.collect()))


@pytest.fixture(scope="module")
def tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Managed and external Parquet tables (partitioned or not), a view, a temporary view,
    a JSON table and an external partitioned table whose partitions are not registered."""
    root = tmp_path_factory.mktemp("names")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")
    frame = spark.createDataFrame(data().to_pandas())
    frame.write.mode("overwrite").saveAsTable(f"{DB}.managed")
    frame.write.mode("overwrite").partitionBy("part").saveAsTable(f"{DB}.managed_part")
    external = root / "external"
    external.mkdir()
    for i in range(3):
        pq.write_table(data(i * 1000, 1000), external / f"f{i}.parquet", row_group_size=250)
    spark.sql(f"CREATE TABLE {DB}.external USING parquet LOCATION '{external}'")
    spark.sql(
        f"CREATE TABLE {DB}.mistyped (id STRING, s STRING, part BIGINT) USING parquet "
        f"LOCATION '{external}'"
    )
    partitioned = root / "external_part"
    pq.write_to_dataset(data(), str(partitioned), partition_cols=["part"])
    spark.sql(
        f"CREATE TABLE {DB}.external_part (id BIGINT, s STRING, part BIGINT) USING parquet "
        f"PARTITIONED BY (part) LOCATION '{partitioned}'"
    )
    spark.sql(f"CREATE OR REPLACE VIEW {DB}.a_view AS SELECT * FROM {DB}.managed WHERE id > 5")
    spark.table(f"{DB}.managed").createOrReplaceTempView("pqnames_temp")
    spark.range(3).write.mode("overwrite").format("json").saveAsTable(f"{DB}.as_json")
    yield {"external": external, "partitioned": partitioned}
    spark.catalog.dropTempView("pqnames_temp")
    spark.sql(f"DROP DATABASE IF EXISTS {DB} CASCADE")


WHERE = "id BETWEEN 100 AND 1900 AND s <> 's3'"


@pytest.mark.parametrize("name", ["managed", "managed_part", "external"])
@pytest.mark.parametrize("driver_read_bytes", [1 << 30, 0], ids=["driver", "executors"])
def test_parquet_tables_read_as_spark_reads_them(
    spark: Any, tables: dict[str, Any], name: str, driver_read_bytes: int
) -> None:
    import pqindex.spark

    table = f"{DB}.{name}"
    scan = pqindex.spark.plan(spark, table, WHERE, driver_read_bytes=driver_read_bytes)
    assert scan.catalog_table is not None and scan.catalog_table.provider == "parquet"
    got = scan.to_df()
    want = spark.table(table).where(WHERE)
    assert got.schema == want.schema
    assert rows(got) == rows(want)
    where = "part = 1 AND id < 50"
    assert rows(pqindex.spark.read(spark, table, where, ["s", "id"])) == rows(
        spark.table(table).where(where).select("s", "id")
    )


def test_partitions_prune_by_the_tables_types(spark: Any, tables: dict[str, Any]) -> None:
    import pqindex.spark

    scan = pqindex.spark.plan(spark, f"{DB}.managed_part", "part = 2 AND id > 10")
    assert rows(scan.to_df()) == rows(
        spark.table(f"{DB}.managed_part").where("part = 2 AND id > 10")
    )
    assert scan.metrics()["files_pruned_by_partition"] >= 2


def test_unregistered_partitions_are_refused_until_repaired(
    spark: Any, tables: dict[str, Any]
) -> None:
    """Spark reads no rows from an external table over partition directories it has not
    registered; pqindex would read them all, so it refuses until MSCK REPAIR TABLE."""
    import pqindex.spark

    table = f"{DB}.external_part"
    assert spark.table(table).count() == 0
    with pytest.raises(pqindex.SourceError, match=f"MSCK REPAIR TABLE {table}"):
        pqindex.spark.read(spark, table, "id < 10")
    spark.sql(f"MSCK REPAIR TABLE {table}")
    try:
        got = pqindex.spark.read(spark, table, "id < 100 AND part = 1")
        want = spark.table(table).where("id < 100 AND part = 1")
        assert got.schema == want.schema
        assert rows(got) == rows(want) and rows(want)
    finally:
        spark.sql(f"ALTER TABLE {table} DROP IF EXISTS PARTITION (part = 0)")
        spark.sql(f"ALTER TABLE {table} DROP IF EXISTS PARTITION (part = 1)")
        spark.sql(f"ALTER TABLE {table} DROP IF EXISTS PARTITION (part = 2)")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (f"{DB}.a_view", "is a view"),
        ("pqnames_temp", "is a temporary view"),
        (f"{DB}.as_json", "stored as json"),
        (f"{DB}.mistyped", "declares columns"),
    ],
)
def test_what_pqindex_does_not_read_is_refused_by_name(
    spark: Any, tables: dict[str, Any], name: str, message: str
) -> None:
    import pqindex.spark

    with pytest.raises(pqindex.SourceError, match=message) as raised:
        pqindex.spark.read(spark, name, "id < 5").collect()
    assert name in str(raised.value)
    with pytest.raises(pqindex.SourceError, match=message):
        pqindex.spark.table_options(spark, name)


def test_the_data_source_reads_a_table_by_options(spark: Any, tables: dict[str, Any]) -> None:
    import pqindex.spark

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pqindex.spark.register(spark)
    for name in ("managed_part", "external"):
        table = f"{DB}.{name}"
        options = pqindex.spark.table_options(spark, table)
        df = spark.read.format("pqindex").options(**options).option("where", "id < 700").load()
        want = spark.table(table).where("id < 700")
        assert df.schema == want.schema
        assert rows(df.where("s = 's2'")) == rows(want.where("s = 's2'"))
        planned = pqindex.spark.explain_source(spark, table=table, where="id < 700")
        assert planned.metrics()["rows_selected"] <= N


def test_a_delta_provider_reads_its_location(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table whose provider is delta is read as pqindex reads a Delta directory. Spark
    here has no Delta connector to create one, so the catalog's answer is stood in for."""
    deltalake = pytest.importorskip("deltalake")
    import pqindex.spark

    location = tmp_path / "lake"
    for i in range(2):
        deltalake.write_deltalake(str(location), data(i * N, N), mode="append")
    described = {"type": "EXTERNAL", "provider": "delta", "location": f"file:{location}"}
    monkeypatch.setattr(_tables, "is_table", lambda spark, source: source == "lake.events")
    monkeypatch.setattr(_tables, "describe", lambda spark, name: described)
    got = pqindex.spark.read(spark, "lake.events", "id >= 5990 AND part = 0")
    want = [r for r in pa.table(deltalake.DeltaTable(str(location)).scan()).to_pylist()]
    expected = sorted(r["id"] for r in want if r["id"] >= 5990 and r["part"] == 0)
    assert sorted(r.id for r in got.collect()) == expected
    assert pqindex.spark.table_options(spark, "lake.events") == {
        "path": str(location),
        "table": "lake.events",
    }


def test_paths_stay_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A string is a table name only when it cannot be a path."""
    monkeypatch.chdir(tmp_path)
    assert _tables.looks_like_name("db.events")
    assert _tables.looks_like_name("events")
    for path in ("data/events", "./events", "s3://b/events", "C:\\events", "file:events", " "):
        assert not _tables.looks_like_name(path), path
    os.mkdir("db.events")
    assert not _tables.looks_like_name("db.events")
    assert _tables.local_location("file:/tmp/a%20b/t") == "/tmp/a b/t"
    assert _tables.local_location("s3a://bucket/t") == "s3a://bucket/t"
