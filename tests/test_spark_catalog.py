"""``pqindex.spark.build_catalog`` and reads that plan with the catalog, on classic and Spark
Connect sessions: the catalog Spark builds is the one ``pqindex.Catalog.build`` writes, and a
read of the dataset rules files out with it, on the driver and in the executors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.spark

FILES = 12


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """Files whose ``s`` values are disjoint (``s<file>-<n>``) and whose ``k`` overlap, so
    only a bloom on ``s`` tells the files apart."""
    root = tmp_path / "ds"
    root.mkdir()
    for i in range(FILES):
        n = 500
        table = pa.table(
            {
                "k": pa.array([(j * 7 + i) % 1000 for j in range(n)], pa.int64()),
                "s": pa.array([f"s{i}-{j % 9}" for j in range(n)]),
            }
        )
        pq.write_table(table, root / f"part-{i:04d}.parquet", write_page_index=True)
    return root


def test_build_catalog_then_read_with_it(spark: Any, dataset: Path) -> None:
    import pqindex.spark as pqs

    catalog = pqs.build_catalog(spark, dataset, ["k", "s"], bloom=["s"], parallelism=3)
    assert catalog.num_files == FILES and catalog.bloom_columns == ["s"]
    assert pqindex.Catalog.open(dataset) is not None
    pqindex.clear_metadata_cache()
    where = "s = 's5-3'"
    expected = sorted(r.k for r in spark.read.parquet(str(dataset)).where(where).collect())
    for driver_read_bytes in (0, 1 << 30):  # executors, then the driver
        scan = pqs.plan(spark, str(dataset), where, driver_read_bytes=driver_read_bytes)
        assert sorted(r.k for r in scan.to_df().collect()) == expected
        m = scan.metrics()
        assert m["files_pruned_by_catalog"] == FILES - 1, m
        assert m["footers_read"] == 0, m
        assert "catalog:" in scan.explain()
        if driver_read_bytes == 0:
            executors = scan.executor_metrics()
            assert executors["footers_read"] == 0 and executors["bytes_read"] > 0, executors
    # Planned from the catalog alone, every scan answers as DuckDB does.
    import duckdb

    for where in ("s = 's5-3'", "k IN (3, 500, 999)", "k < 20 OR s = 's0-0'", "s = 'absent'"):
        pqindex.clear_metadata_cache()
        got = pqindex.scan(dataset, where=where)
        sql = f"SELECT count(*) FROM read_parquet('{dataset}/*.parquet') WHERE {where}"
        assert got.to_arrow().num_rows == duckdb.sql(sql).fetchall()[0][0], where
        assert got.metrics()["footers_read"] == 0, where
    assert pqs.build_catalog(spark, dataset, ["k"]).version == 2


def test_the_data_source_plans_with_the_catalog(spark: Any, dataset: Path) -> None:
    """``spark.read.format("pqindex")`` plans with the dataset's catalog too, and its tasks
    read the units the catalog kept."""
    import warnings

    import pqindex.spark as pqs

    pqs.build_catalog(spark, dataset, ["k", "s"], bloom=["s"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pqs.register(spark)
    where = "s = 's7-1'"
    pqindex.clear_metadata_cache()
    planned = pqs.explain_source(spark, str(dataset), where=where)
    assert planned.metrics()["files_pruned_by_catalog"] == FILES - 1
    assert "catalog:" in planned.explain()
    df = spark.read.format("pqindex").option("where", where).load(str(dataset))
    expected = sorted(r.k for r in spark.read.parquet(str(dataset)).where(where).collect())
    assert sorted(r.k for r in df.collect()) == expected and expected
    assert sorted(r.k for r in df.where("k > 500").collect()) == [k for k in expected if k > 500]
