"""pqindex.spark on an S3-compatible store (moto's server on loopback, behind the counting
proxy of ``s3server``), on classic and Spark Connect sessions: Spark has no s3a connector
here, so pqindex reads, writes and indexes the objects itself.

The referee for rows is Spark's own reader over a local copy of the same files.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datagen import make_pruning_table, write_pyarrow_hive
from pqindex.spark._session import is_connect
from s3server import ACCESS_KEY, REGION, SECRET_KEY, S3Server, s3_server

pytestmark = pytest.mark.spark

BUCKET = "spark-lake"


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    pytest.importorskip("moto.server")
    with s3_server() as server:
        server.client().create_bucket(Bucket=BUCKET)
        yield server


def upload_dir(s3: S3Server, local: Path, prefix: str) -> None:
    client = s3.client()
    for root, _, files in os.walk(local):
        for name in files:
            path = Path(root, name)
            client.upload_file(str(path), BUCKET, f"{prefix}/{path.relative_to(local).as_posix()}")


@pytest.fixture(scope="module")
def hive(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """A hive-partitioned dataset (with the junk real directories carry), on the store and
    on disk."""
    local = tmp_path_factory.mktemp("hive")
    write_pyarrow_hive(make_pruning_table(6000), str(local), seed=3)
    upload_dir(s3, local, "hive")
    return f"s3a://{BUCKET}/hive/", local


@pytest.fixture(scope="module")
def awkward(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """Values whose SQL spelling pqindex and Spark read differently: backslashes, and FLOAT
    values compared with decimal literals (Spark compares them as DOUBLE)."""
    local = tmp_path_factory.mktemp("awkward") / "a.parquet"
    n = 2000
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "s": pa.array(["a\\b" if i % 7 == 0 else f"s{i % 5}" for i in range(n)]),
            "f": pa.array([0.1 * (i % 4) for i in range(n)], pa.float32()),
        }
    )
    pq.write_table(table, local, row_group_size=500, write_page_index=True)
    s3.client().upload_file(str(local), BUCKET, "awkward/a.parquet")
    return f"s3a://{BUCKET}/awkward/a.parquet", local


def sorted_ids(df: Any) -> list[int]:
    return sorted(r["id"] for r in df.select("id").collect())


def test_reads_objects_in_executors(spark: Any, s3: S3Server, hive: tuple[str, Path]) -> None:
    """Executors read the selected pages from the store; a condition pqindex reads as Spark
    does is handed to it as written."""
    import pqindex.spark

    url, local = hive
    where = "id BETWEEN 100 AND 2500 AND part <> 'a'"
    columns = ["id", "payload", "part"]
    plan = pqindex.spark.plan(
        spark, url, where, columns, driver_read_bytes=0, storage_options=s3.options()
    )
    assert plan.predicate == where
    got = plan.to_df().toArrow()
    want = pqindex.scan(str(local), where=where, columns=columns).to_arrow()
    key = [("id", "ascending")]
    assert got.sort_by(key).to_pylist() == want.sort_by(key).to_pylist()
    assert plan.executor_metrics()["requests"] > 0


def test_plans_an_object_source_once(spark: Any, s3: S3Server, hive: tuple[str, Path]) -> None:
    """Reading every column, the plan that gives Spark the schema is the plan: its requests
    are all the planning made (one listing), and partitions the predicate rules out are
    never opened."""
    import pqindex.spark

    url, local = hive
    where = "part = 'y' AND h < 3000"
    pqindex.clear_metadata_cache()
    s3.proxy.reset()
    plan = pqindex.spark.plan(spark, url, where, storage_options=s3.options())
    m = plan.metrics()
    assert m["requests"] == s3.proxy.requests and m["list_requests"] == 1, m
    assert m["files_pruned_by_partition"] > 0
    assert m["footers_read"] == m["files"] - m["files_pruned_by_partition"]
    got = sorted(plan.to_df().toArrow().column("id").to_pylist())
    want = sorted(pqindex.scan(str(local), where=where).to_arrow().column("id").to_pylist())
    assert got == want and got


def test_conditions_pqindex_reads_differently_are_translated(
    spark: Any, s3: S3Server, awkward: tuple[str, Path]
) -> None:
    """``s = 'a\\\\b'`` is one backslash to Spark and two to pqindex; ``f > 0.1`` compares
    in DOUBLE in Spark and in REAL in pqindex. Planned as written, both lost rows; they are
    planned from what Spark confirms instead, and the rows are Spark's."""
    import pqindex.spark

    url, local = awkward
    referee = spark.read.parquet(str(local))
    for where in ("s = 'a\\\\b'", "f > 0.1"):
        plan = pqindex.spark.plan(spark, url, where, storage_options=s3.options())
        assert plan.predicate is not None and plan.predicate != where, where
        want = sorted_ids(referee.where(where))
        assert want and sorted_ids(plan.to_df()) == want, where


def test_store_settings_from_the_session_conf(
    spark: Any, s3: S3Server, awkward: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fs.s3a.*`` set on the session (and ``spark.hadoop.fs.s3a.*`` on a classic one) are
    what a Spark job on S3 is configured with, and pqindex takes them too. A Spark Connect
    server shows its clients no secrets, so there the credentials come from the standard
    chain (here the environment), and the read runs on the client."""
    import pqindex.spark

    url, _ = awkward
    settings = {
        "fs.s3a.endpoint": s3.proxy.endpoint.removeprefix("http://"),
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.path.style.access": "true",
        "fs.s3a.endpoint.region": REGION,
    }
    connect = is_connect(spark)
    if connect:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    else:
        # Hadoop keys given as Spark settings; the plain key set on the session wins.
        settings = {
            "spark.hadoop.fs.s3a.endpoint": "http://wrong.invalid:1",
            "spark.hadoop.fs.s3a.access.key": ACCESS_KEY,
            "fs.s3a.secret.key": SECRET_KEY,
            **settings,
        }
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        limit = 1 << 40 if connect else 0
        df = pqindex.spark.read(spark, url, "id IN (3, 1500)", driver_read_bytes=limit)
        assert sorted_ids(df) == [3, 1500]
    finally:
        for k in settings:
            spark.conf.unset(k)


def test_writes_and_indexes_objects(spark: Any, s3: S3Server) -> None:
    """pqindex.spark.write uploads each task's file whole and _SUCCESS last; build_indexes
    rewrites every object once."""
    import pqindex.spark

    opts = s3.options()
    url = f"s3a://{BUCKET}/out-{uuid.uuid4().hex[:8]}"
    df = spark.range(0, 3000).selectExpr("id", "cast(id % 3 as string) as k").repartition(2)
    report = pqindex.spark.write(df, url, partition_by=["k"], storage_options=opts)
    assert sum(r["rows"] for r in report) == 3000
    with pytest.raises(pqindex.InvalidArgumentError, match="not empty"):
        pqindex.spark.write(df, url, storage_options=opts)
    built = pqindex.spark.build_indexes(
        spark, url, [pqindex.DistinctIndex("id")], storage_options=opts
    ).collect()
    assert len(built) == len(report) and all(r.error is None for r in built)
    again = pqindex.spark.build_indexes(
        spark, url, [pqindex.DistinctIndex("id")], storage_options=opts
    ).collect()
    assert all(r.skipped for r in again)
    scan = pqindex.scan(url, where="id = 2999 AND k = '2'", storage_options=opts)
    assert scan.to_arrow().column("id").to_pylist() == [2999]


def test_data_source_takes_storage_options(
    spark: Any, s3: S3Server, awkward: tuple[str, Path]
) -> None:
    """``spark.read.format("pqindex")`` reads objects with ``storage.<key>`` options."""
    import pqindex.spark

    url, local = awkward
    pqindex.spark.register(spark)
    options = {f"storage.{k}": str(v) for k, v in s3.options().items()}
    df = spark.read.format("pqindex").options(**options).load(url).where("id IN (7, 1999)")
    assert sorted_ids(df) == [7, 1999]
    assert df.schema == spark.read.parquet(str(local)).schema
