"""spark.read.format("pqindex"): the Python Data Source over the same planner and reader
returns the rows Spark's own Parquet reader returns, however often a loaded DataFrame is
reused; what prunes is the source's options (``where``, ``columns``, ``limit``), since
PySpark 4.1 to 4.3 reuse a read planned for pushed filters in later queries."""

from __future__ import annotations

import datetime
import decimal
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")

from pqindex.spark import _datasource

ROWS = 5000


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> str:
    n = ROWS
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


def register(spark: Any, **kwargs: Any) -> None:
    """``pqindex.spark.register`` without its once-per-process note on PySpark 4."""
    import pqindex.spark

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pqindex.spark.register(spark, **kwargs)


def rows(df: Any) -> list[str]:
    return sorted(map(str, df.collect()))


def _reference(spark: Any, path: str, where: str) -> list[str]:
    """Spark's reader without Parquet filter pushdown, whose NaN pruning drops rows."""
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try:
        return rows(spark.read.parquet(path).where(where))
    finally:
        spark.conf.unset("spark.sql.parquet.filterPushdown")


PREDICATES = [
    "k BETWEEN 100 AND 140 AND s IN ('s-3', 's-4')",
    "(d = DATE '2020-01-05' OR k > 4990) AND NOT (k < 4900) AND dec >= 12.5",
    "ts > TIMESTAMP '2021-01-01 01:23:00' AND s IS NULL",
    "f = 'NaN' OR k + 1 = 11",
]


def test_rows_equal_spark(spark: Any, dataset: str) -> None:
    register(spark)
    df = spark.read.format("pqindex").load(dataset)
    for where in PREDICATES:
        assert rows(df.where(where)) == _reference(spark, dataset, where), where


def test_schema_is_sparks(spark: Any, dataset: str) -> None:
    register(spark)
    assert spark.read.format("pqindex").load(dataset).schema == spark.read.parquet(dataset).schema


#: Queries on one loaded DataFrame, in order: each must return Spark's rows whatever ran on
#: the same DataFrame before (PySpark 4.1-4.3 reuse a relation's planned read).
QUERIES: list[tuple[str, Callable[[Any, Any, str], Any]]] = [
    ("one condition", lambda df, spark, v: df.where("k = 7")),
    ("none", lambda df, spark, v: df),
    ("count", lambda df, spark, v: spark.createDataFrame([(df.count(),)], "n long")),
    ("another condition", lambda df, spark, v: df.where("k IN (1, 4990) AND s IS NOT NULL")),
    ("an OR", lambda df, spark, v: df.where("k = 1 OR k = 4000")),
    ("a union", lambda df, spark, v: df.where("k = 3").union(df.where("k = 4001"))),
    (
        "a self-join",
        lambda df, spark, v: (
            df.where("k < 20")
            .select("k", "s")
            .join(df.where("k BETWEEN 10 AND 30").select("k", "d"), "k")
        ),
    ),
    ("a projection", lambda df, spark, v: df.select("k", "dec")),
    ("a view, filtered", lambda df, spark, v: spark.sql(f"SELECT * FROM {v} WHERE k = 6")),
    ("the view", lambda df, spark, v: spark.sql(f"SELECT k, s FROM {v}")),
    ("after the view", lambda df, spark, v: df.where("s = 's-5' AND k > 4900")),
]


@pytest.fixture
def reused(spark: Any, dataset: str) -> Iterator[Callable[[Any, str], None]]:
    """Run ``QUERIES`` on a loaded DataFrame and on Spark's own reader's, reused alike,
    then cached."""
    views: list[str] = []

    def run(loaded: Any, name: str) -> None:
        reference = spark.read.parquet(dataset)
        if name.endswith("where"):
            reference = reference.where("k < 3000 AND s <> 's-1'")
        for frame, view in ((loaded, f"pq_{name}"), (reference, f"ref_{name}")):
            frame.createOrReplaceTempView(view)
            views.append(view)
        for cached in (False, True):
            if cached:
                loaded, reference = loaded.cache(), reference.cache()
            for label, query in QUERIES:
                got = rows(query(loaded, spark, f"pq_{name}"))
                want = rows(query(reference, spark, f"ref_{name}"))
                assert got == want, (name, label, "cached" if cached else "")
        loaded.unpersist()
        reference.unpersist()

    yield run
    for view in views:
        spark.catalog.dropTempView(view)


def test_a_reused_dataframe_returns_sparks_rows(
    spark: Any, dataset: str, reused: Callable[[Any, str], None]
) -> None:
    """With the default registration, one loaded DataFrame (and one loaded with a ``where``
    option) answers every query as Spark's Parquet reader does: none, conditions, a union,
    a self-join, a temporary view through SQL, then all of them again once cached."""
    register(spark)
    reused(spark.read.format("pqindex").load(dataset), "plain")
    loaded = spark.read.format("pqindex").option("where", "k < 3000 AND s <> 's-1'")
    reused(loaded.load(dataset), "where")


def test_forced_pushdown_loses_rows_on_pyspark_4(spark: Any, dataset: str) -> None:
    """Why pushdown stays off on PySpark 4.1 to 4.3: the partitions planned for one query's
    pushed filters are reused by the next query on the same DataFrame, which pushes none,
    and rows are lost. This documents Spark's behaviour; Spark 5.0 plans each scan."""
    import pqindex.spark

    if _datasource.pushdown_is_scoped(spark.version):
        pytest.skip(f"Spark {spark.version} plans each scan for itself")
    with pytest.warns(UserWarning, match="LOSE ROWS"):
        pqindex.spark.register(spark, filter_pushdown=True)
    try:
        # Used once, a freshly loaded DataFrame prunes with Spark's filters and is right
        # (the pushdown Spark 5.0 gets).
        for where in PREDICATES:
            fresh = spark.read.format("pqindex").load(dataset)
            assert rows(fresh.where(where)) == _reference(spark, dataset, where), where
        df = spark.read.format("pqindex").load(dataset)
        assert df.where("k = 7").count() == 1
        assert df.count() < ROWS  # Spark's own reader: 5000
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")
        register(spark)


def test_pushdown_by_spark_version(spark: Any) -> None:
    """On by default only where Spark plans each scan (5.0 on); on 4.x the reason is
    warned once per process."""
    import pqindex.spark

    assert not _datasource.pushdown_is_scoped("4.3.0")
    assert _datasource.pushdown_is_scoped("5.0.0-SNAPSHOT")
    assert _datasource.pushdown_is_scoped("5.1.2")
    if _datasource.pushdown_is_scoped(spark.version):
        pytest.skip("pushdown is on")
    _datasource._warned = False
    with pytest.warns(UserWarning, match="SPARK-58551.*'where'"):
        pqindex.spark.register(spark)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pqindex.spark.register(spark)  # said once
        pqindex.spark.register(spark, filter_pushdown=False)
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled", "false") == "false"


WHERE_OPTIONS = [
    ("k < 300 AND s = 's-3'", "k < 300 AND s = 's-3'"),
    (
        '{"op": "and", "args": [{"op": ">=", "args": [{"col": "k"}, {"lit": 4000}]}, '
        '{"op": "=", "args": [{"col": "dec"}, {"lit": "41.50", "type": "DECIMAL(4,2)"}]}]}',
        "k >= 4000 AND dec = 41.50",
    ),
    ('{"op": "=", "args": [{"col": "f"}, {"lit": "NaN", "type": "DOUBLE"}]}', "isnan(f)"),
]


@pytest.mark.parametrize(("option", "spark_sql"), WHERE_OPTIONS, ids=["sql", "json", "nan"])
def test_where_option_prunes_and_is_applied_exactly(
    spark: Any, dataset: str, option: str, spark_sql: str
) -> None:
    """The ``where`` option (pqindex SQL text or a JSON structured predicate) is applied
    exactly by pqindex, and Spark's own filter still applies on top."""
    import pqindex.spark

    register(spark)
    df = spark.read.format("pqindex").option("where", option).load(dataset)
    reference = spark.read.parquet(dataset).where(spark_sql)
    assert rows(df) == _reference(spark, dataset, spark_sql)
    assert rows(df.where("k % 2 = 0")) == rows(reference.where("k % 2 = 0"))
    planned = pqindex.spark.explain_source(spark, dataset, where=option)
    assert planned.metrics()["row_groups_pruned_by_stats"] >= 3 or "NaN" in option
    assert planned.predicate == _datasource.condition(option)


def test_columns_and_limit_options(spark: Any, dataset: str) -> None:
    register(spark)
    reader = spark.read.format("pqindex").option("columns", "s, k")
    df = reader.option("where", "k >= 2000").load(dataset)
    assert df.columns == ["s", "k"]
    assert rows(df) == rows(spark.read.parquet(dataset).where("k >= 2000").select("s", "k"))
    for limit, expected in ((0, 0), (7, 7), (10_000, ROWS - 2000)):
        limited = reader.option("where", "k >= 2000").option("limit", str(limit)).load(dataset)
        got = limited.collect()
        assert len(got) == expected, limit
        assert all(r.k >= 2000 for r in got)
        # Spark's filter applies to the limited rows.
        assert limited.where("k < 0").count() == 0
    with pytest.raises(Exception, match="does not have"):
        spark.read.format("pqindex").option("columns", "k,nope").load(dataset).collect()
    with pytest.raises(Exception, match="limit must be an integer"):
        spark.read.format("pqindex").option("limit", "-1").load(dataset).collect()


def test_order_by_and_limit_options(spark: Any, dataset: str) -> None:
    from pyspark.sql import functions as F

    register(spark)
    base = spark.read.parquet(dataset)
    for order, spark_order in (
        ("k desc", [F.col("k").desc_nulls_last()]),
        ('[["s", "desc"], "k"]', [F.col("s").desc_nulls_last(), F.col("k").asc_nulls_last()]),
    ):
        df = (
            spark.read.format("pqindex")
            .option("where", "k >= 100")
            .option("order_by", order)
            .option("limit", "6")
            .load(dataset)
        )
        want = base.where("k >= 100").orderBy(*spark_order)
        assert [r.k for r in df.collect()] == [r.k for r in want.limit(6).collect()], order
    with pytest.raises(Exception, match="needs a limit"):
        spark.read.format("pqindex").option("order_by", "k").load(dataset).collect()
    with pytest.raises(Exception, match="leaves out"):
        reader = spark.read.format("pqindex").option("columns", "s").option("limit", "3")
        reader.option("order_by", "k").load(dataset).collect()
    with pytest.raises(Exception, match="order_by option is not JSON"):
        reader = spark.read.format("pqindex").option("limit", "3")
        reader.option("order_by", '["k"').load(dataset).collect()


def test_bad_option_values_are_typed_errors() -> None:
    import pqindex

    for options in (
        {"order_by": '["k"'},
        {"columns": '["a", 1'},
        {"columns": "[1] x"},
        {"order_by": "[]"},
    ):
        with pytest.raises(pqindex.InvalidArgumentError):
            _datasource.settings({"path": "x", "limit": "1", **options})


def test_now_reaches_the_read(spark: Any, dataset: str) -> None:
    """``now()`` is folded once at planning and carried in each partition: read by a
    read function pickled before planning ran, it would otherwise be the epoch."""
    register(spark)
    df = spark.read.format("pqindex").option("where", "ts < now() AND k < 50").load(dataset)
    assert df.count() == 50


def test_partitions_have_about_equal_bytes() -> None:
    from pqindex.spark._units import balanced_groups

    def sums(sizes: list[int], parts: int) -> list[int]:
        groups = balanced_groups(pa.table({"selected_bytes": sizes}), parts)
        flat = [i for g in groups for i in g]
        assert flat == list(range(len(sizes)))  # consecutive runs, every unit once
        return [sum(sizes[i] for i in g) for g in groups]

    assert sums([30, 30, 30, 30], 3) == [30, 60, 30]
    assert sums([5] * 12, 4) == [15, 15, 15, 15]
    assert sums([100, 1, 1, 1], 2) == [100, 3]
    assert sums([10] * 3, 8) == [10, 10, 10]
    assert max(sums([7, 9, 3, 8, 1, 5, 6, 2, 4, 9, 7, 3], 3)) <= 64 / 3 + 9 / 2


def test_explain_source_and_the_planning_log(spark: Any, dataset: str) -> None:
    """What the source plans is visible on the driver (on Connect too), and Spark's
    worker logs the same summary when worker logging is on."""
    import pqindex.spark

    register(spark)
    planned = pqindex.spark.explain_source(spark, dataset, where="k < 1500", partitions=3)
    assert planned.predicate == "k < 1500"
    assert len(planned.partitions) <= 3 and sum(p["units"] for p in planned.partitions) >= 1
    assert planned.metrics()["row_groups_pruned_by_stats"] == 3
    text = planned.explain()
    assert "pruned 0 of 1 files, 3 of 5 row groups by statistics" in text
    assert "pqindex scan" in text
    spark.conf.set("spark.sql.pyspark.worker.logging.enabled", "true")
    try:
        df = spark.read.format("pqindex").option("where", "k < 1500").load(dataset)
        assert df.count() == 1500
        logs = spark.tvf.python_worker_logs().where("msg LIKE 'pqindex data source%'")
        assert any("3 of 5 row groups" in r.msg for r in logs.collect())
    finally:
        spark.conf.unset("spark.sql.pyspark.worker.logging.enabled")


def test_missing_table_option_resolution_is_explained(spark: Any) -> None:
    register(spark)
    with pytest.raises(Exception, match="table_options"):
        spark.read.format("pqindex").option("table", "db.nope").load().collect()


def test_delta_and_iceberg_sources(spark: Any, tmp_path: Path) -> None:
    """A Delta table's directory as the path, an Iceberg table's metadata file as the
    ``iceberg`` option: read as ``pqindex.spark.read`` reads them."""
    deltalake = pytest.importorskip("deltalake")
    pytest.importorskip("pyiceberg")
    pytest.importorskip("sqlalchemy")
    from pyiceberg.catalog.sql import SqlCatalog

    def batch(start: int, n: int) -> pa.Table:
        return pa.table(
            {
                "id": pa.array(range(start, start + n), pa.int64()),
                "region": pa.array(["EU", "US", "APAC"][i % 3] for i in range(start, start + n)),
            }
        )

    register(spark)
    delta = tmp_path / "delta"
    for i in range(3):
        deltalake.write_deltalake(str(delta), batch(i * 1000, 1000), mode="append")
    df = spark.read.format("pqindex").option("where", "id >= 1500").load(str(delta))
    want = sorted(r["id"] for r in pa.table(deltalake.DeltaTable(str(delta)).scan()).to_pylist())
    assert sorted(r.id for r in df.where("region = 'EU'").collect()) == [
        i for i in want if i >= 1500 and i % 3 == 0
    ]
    old = spark.read.format("pqindex").option("version", "0").load(str(delta))
    assert old.count() == 1000

    catalog = SqlCatalog(
        "t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/wh"
    )
    catalog.create_namespace("db")
    table = catalog.create_table("db.events", schema=batch(0, 1).schema)
    for i in range(2):
        table.append(batch(i * 1000, 1000))
    table.delete("id < 300")
    table = catalog.load_table("db.events")
    loaded = spark.read.format("pqindex").option("iceberg", table.metadata_location).load()
    assert sorted(r.id for r in loaded.where("id < 400").collect()) == list(range(300, 400))
