"""spark.read.format("pqindex"): the Python Data Source over the same planner and reader
returns the rows Spark's own Parquet reader returns."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.spark

PREDICATES = [
    "k BETWEEN 100 AND 140 AND s IN ('s-3', 's-4')",
    "(d = DATE '2020-01-05' OR k > 4990) AND NOT (k < 4900) AND dec >= 12.5",
    "ts > TIMESTAMP '2021-01-01 01:23:00' AND s IS NULL",
    "f = 'NaN' OR k + 1 = 11",
]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> str:
    n = 5000
    table = pa.table(
        {
            "k": pa.array(range(n), pa.int64()),
            "s": pa.array([None if i % 17 == 0 else f"s-{i % 9}" for i in range(n)]),
            "d": pa.array(
                [datetime.date(2020, 1, 1) + datetime.timedelta(days=i % 30) for i in range(n)]
            ),
            "dec": pa.array([decimal.Decimal(i) / 100 for i in range(n)], pa.decimal128(9, 2)),
            "ts": pa.array(
                [i * 1_000_000 + 1_609_459_200_000_000 for i in range(n)], pa.timestamp("us", "UTC")
            ),
            "f": pa.array([float("nan") if i % 101 == 0 else i / 7 for i in range(n)]),
        }
    )
    path = tmp_path_factory.mktemp("ds") / "t.parquet"
    pq.write_table(table, path, row_group_size=1000, data_page_size=2048, write_page_index=True)
    return str(path)


def _reference(spark: Any, path: str, where: str) -> list[str]:
    """Spark's reader without Parquet filter pushdown, whose NaN pruning drops rows."""
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try:
        return sorted(map(str, spark.read.parquet(path).where(where).collect()))
    finally:
        spark.conf.unset("spark.sql.parquet.filterPushdown")


def test_rows_equal_spark(spark: Any, dataset: str) -> None:
    import pqindex.spark

    pqindex.spark.register(spark, filter_pushdown=True)
    try:
        for where in PREDICATES:
            df = spark.read.format("pqindex").load(dataset)
            got = sorted(map(str, df.where(where).collect()))
            assert got == _reference(spark, dataset, where), where
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")


def test_schema_is_sparks(spark: Any, dataset: str) -> None:
    import pqindex.spark

    pqindex.spark.register(spark)
    assert spark.read.format("pqindex").load(dataset).schema == spark.read.parquet(dataset).schema


def test_reusing_a_dataframe_without_pushdown_is_safe(spark: Any, dataset: str) -> None:
    import pqindex.spark

    pqindex.spark.register(spark)
    df = spark.read.format("pqindex").load(dataset)
    assert df.where("k = 7").count() == 1
    assert df.count() == 5000


@pytest.mark.xfail(
    strict=True,
    reason="PySpark 4.1-4.3 reuse the partitions planned for pushed filters on the loaded "
    "relation for a later query without pushable filters (fixed in later Spark)",
)
def test_reusing_a_dataframe_with_pushdown(spark: Any, dataset: str) -> None:
    import pqindex.spark

    pqindex.spark.register(spark, filter_pushdown=True)
    try:
        df = spark.read.format("pqindex").load(dataset)
        assert df.where("k = 7").count() == 1
        assert df.count() == 5000
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")
