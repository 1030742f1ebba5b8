"""Join-key pruning in Spark: ``pqindex.spark.read(spark, source, where, keys=..., on=...)``
returns exactly the rows of Spark's own left semi join, on classic and Spark Connect
sessions, read on the driver or in executors, with keys as a Spark DataFrame, an Arrow
table or a Python sequence, and prunes pages with them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pqindex
import pqindex.spark
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROWS = 30_000


@pytest.fixture(scope="module")
def fact(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A fact table: ``part`` unsorted, ``order`` sorted, a page distinct index on ``part``."""
    out = tmp_path_factory.mktemp("fact") / "fact.parquet"
    table = pa.table(
        {
            "order": pa.array(range(ROWS), pa.int64()),
            "part": pa.array([(i * 7919) % 30011 for i in range(ROWS)], pa.int64()),
            "flag": pa.array([None if i % 17 == 0 else "AN"[i % 2] for i in range(ROWS)]),
            "price": pa.array([float(i % 1000) for i in range(ROWS)]),
        }
    )
    pq.write_table(
        table, out, row_group_size=10_000, max_rows_per_page=1_000, write_page_index=True
    )
    pqindex.add_indexes(out, [pqindex.DistinctIndex("part")])
    return str(out)


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(d.values()) for d in df.toArrow().to_pylist()), key=repr)


def spark_semi_join(spark: Any, path: str, keys: Any, on: list[str], where: str | None) -> Any:
    base = spark.read.parquet(path)
    if where:
        base = base.where(where)
    return base.join(keys, on=on, how="left_semi").select(*base.columns)


@pytest.mark.parametrize("driver_read_bytes", [1 << 30, 0], ids=["driver", "executors"])
def test_keyed_reads_equal_sparks_semi_join(spark: Any, fact: str, driver_read_bytes: int) -> None:
    parts = spark.createDataFrame(
        pa.table({"part": pa.array([5, 77, 1999, None, 5], pa.int64()), "other": [1, 2, 3, 4, 5]})
    )
    expected = rows(spark_semi_join(spark, fact, parts.select("part"), ["part"], "price < 500"))
    assert expected
    plan = pqindex.spark.plan(
        spark,
        fact,
        where="price < 500",
        keys=parts,
        on="part",
        driver_read_bytes=driver_read_bytes,
    )
    assert rows(plan.to_df()) == expected
    # The distinct index leaves only the pages holding the keys.
    m = plan.metrics()
    assert m["rows_selected"] <= 3 * 1_000, m
    # Wherever the rows are read, only the semi join's rows leave the read (no join after).
    assert m["rows_matched"] == len(expected), m
    for keys in ([5, 77, 1999, None], pa.table({"part": [5, 77, 1999]})):
        got = pqindex.spark.read(
            spark,
            fact,
            where="price < 500",
            keys=keys,
            on="part",
            driver_read_bytes=driver_read_bytes,
        )
        assert rows(got) == expected


def test_several_key_columns(spark: Any, fact: str) -> None:
    keys = pa.table({"part": [5, 77, 3, None], "flag": ["A", "N", None, "A"]})
    expected = rows(
        spark_semi_join(spark, fact, spark.createDataFrame(keys), ["part", "flag"], None)
    )
    got = pqindex.spark.read(
        spark, fact, keys=keys, on=["part", "flag"], columns=["order", "price"]
    )
    assert rows(got) == sorted(((o, p) for o, _, _, p in expected), key=repr)


def test_many_keys_prune_by_their_range(spark: Any, fact: str) -> None:
    keys = spark.range(100, 200).toDF("order")
    expected = rows(spark_semi_join(spark, fact, keys, ["order"], None))
    plan = pqindex.spark.plan(spark, fact, keys=keys, on="order", max_keys=10)
    assert rows(plan.to_df()) == expected
    assert plan.metrics()["rows_selected"] <= 2 * 1_000


def test_repeated_keys_are_collected_once_each(spark: Any, fact: str) -> None:
    """Keys repeated past ``max_keys`` rows but with few distinct values are still
    collected (made distinct by Spark once the rows alone are too many) and read as the
    exact semi join, without Spark's join after the read."""
    keys = spark.range(0, 60).selectExpr("CAST(id % 4 AS BIGINT) * 1000 AS order")
    expected = rows(spark_semi_join(spark, fact, keys, ["order"], None))
    assert len(expected) == 4
    for max_keys in (10, 100):  # fewer and more than the 60 rows
        plan = pqindex.spark.plan(spark, fact, keys=keys, on="order", max_keys=max_keys)
        assert rows(plan.to_df()) == expected
        assert plan.metrics()["rows_matched"] == 4


def test_keys_need_on(spark: Any, fact: str, tmp_path: Path) -> None:
    with pytest.raises(pqindex.InvalidArgumentError):
        pqindex.spark.read(spark, fact, keys=[1, 2])
