"""Delta and Iceberg tables on an S3-compatible store (moto on loopback, behind a counting
proxy): planned from their metadata on the store, read with the same storage options,
and answered as their own readers answer."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pytest
from s3server import ACCESS_KEY, REGION, SECRET_KEY, S3Server, s3_server
from test_object_store import upload_dir

deltalake = pytest.importorskip("deltalake")

BUCKET = "lake"


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    pytest.importorskip("moto.server")
    with s3_server() as server:
        server.client().create_bucket(Bucket=BUCKET)
        yield server


def batch(start: int, n: int) -> pa.Table:
    rng = random.Random(start)
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "u": pa.array([rng.randrange(10_000) for _ in range(n)], pa.int64()),
            "s": pa.array([None if i % 7 == 0 else f"s{i % 31}" for i in range(n)], pa.string()),
        }
    )


def referee(s3: S3Server, url: str, version: int | None = None) -> pa.Table:
    """The table as deltalake reads it from the store."""
    opts = {
        "AWS_ENDPOINT_URL": s3.endpoint,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": REGION,
        "AWS_ALLOW_HTTP": "true",
    }
    return pa.table(deltalake.DeltaTable(url, version=version, storage_options=opts).scan())


def rows(table: pa.Table, where: str | None = None) -> list[tuple[Any, ...]]:
    import duckdb

    con = duckdb.connect()
    con.register("t", table)
    sql = "SELECT id, u, s FROM t" + (f" WHERE {where}" if where else "")
    return sorted(con.execute(sql).fetchall(), key=repr)


@pytest.fixture(scope="module")
def delta(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """A Delta table (appends, a delete, a checkpoint, indexes of ``u``) written locally,
    then uploaded."""
    local = tmp_path_factory.mktemp("delta-s3") / "t"
    props = deltalake.WriterProperties(max_row_group_size=1000, data_page_row_count_limit=200)
    for i in range(3):
        deltalake.write_deltalake(
            str(local), batch(i * 3000, 3000), mode="append", writer_properties=props
        )
    deltalake.DeltaTable(str(local)).delete("id < 100")  # rewrites the first file
    deltalake.DeltaTable(str(local)).create_checkpoint()
    pqindex.add_indexes(str(local), [pqindex.DistinctIndex("u")])
    upload_dir(s3, local, "delta/t")
    return f"s3://{BUCKET}/delta/t", local


@pytest.mark.parametrize("where", [None, "id = 4321", "u BETWEEN 2000 AND 2100", "s IS NULL"])
def test_a_delta_table_on_the_store_reads_as_deltalake_reads_it(
    s3: S3Server, delta: tuple[str, Path], where: str | None
) -> None:
    url, _ = delta
    opts = s3.options()
    ref = referee(s3, url)
    scan = pqindex.scan(url, where=where, storage_options=opts)
    assert rows(scan.to_arrow()) == rows(ref, where)


def test_a_delta_point_lookup_reads_little_of_the_store(
    s3: S3Server, delta: tuple[str, Path]
) -> None:
    url, _ = delta
    opts = s3.options()
    pqindex.scan(url, where="id = 4321", storage_options=opts).to_arrow()
    full = pqindex.scan(url, storage_options=opts)
    full.to_arrow()
    point = pqindex.scan(url, where="id = 4321", storage_options=opts)
    assert point.to_arrow().num_rows == 1
    m = point.metrics()
    assert m["files_pruned_by_table_stats"] == 2
    assert m["bytes_read"] < full.metrics()["bytes_read"] / 5
    assert m["requests"] < full.metrics()["requests"]


def test_a_delta_tables_indexes_are_read_from_the_store(
    s3: S3Server, delta: tuple[str, Path]
) -> None:
    url, local = delta
    needle = batch(3000, 3000).column("u")[17].as_py()
    where = f"u = {needle}"
    scan = pqindex.scan(url, where=where, storage_options=s3.options())
    assert rows(scan.to_arrow()) == rows(referee(s3, url), where)
    assert scan.metrics()["indexes_read"] >= 1
    listed = pqindex.list_indexes(str(local))
    assert len(listed) == 3


def test_time_travel_on_the_store(s3: S3Server, delta: tuple[str, Path]) -> None:
    url, _ = delta
    got = pqindex.scan(url, version=1, storage_options=s3.options()).to_arrow()
    assert rows(got) == rows(referee(s3, url, version=1))


def test_a_delta_table_on_the_store_aggregates_as_it_reads(
    s3: S3Server, delta: tuple[str, Path]
) -> None:
    """``aggregate`` reaches the table's log through the same storage options as ``scan``,
    at the latest version or an earlier one."""
    import duckdb

    url, _ = delta
    for version in (None, 1):
        con = duckdb.connect()
        con.register("t", referee(s3, url, version=version))
        for select, where in [("count(*)", None), ("count(*), max(id), sum(u)", "u < 5000")]:
            agg = pqindex.aggregate(
                url, select, where, version=version, storage_options=s3.options()
            )
            sql = f"SELECT {select} FROM t" + (f" WHERE {where}" if where else "")
            want = con.execute(sql).fetchone()
            assert tuple(pa.table(agg).to_pylist()[0].values()) == want, (version, where)


def test_wrong_credentials_and_missing_tables_give_typed_errors(
    s3: S3Server, delta: tuple[str, Path]
) -> None:
    url, _ = delta
    with pytest.raises(pqindex.NotFoundError):
        pqindex.scan(f"s3://{BUCKET}/delta/nothing-here", storage_options=s3.options()).to_arrow()
    bad = s3.options(max_retries="0")
    bad["endpoint"] = "http://127.0.0.1:9"  # nothing listens
    with pytest.raises(pqindex.PqindexError):
        pqindex.scan(url, storage_options=bad).to_arrow()


def test_a_file_of_deletion_vectors_is_fetched_once(s3: S3Server, tmp_path: Path) -> None:
    """The deletion vectors of six data files packed in one object, as Delta Spark writes
    them: planning fetches that object once, not once per data file."""
    pytest.importorskip("pyroaring")
    from delta_tables import add_deletion_vectors, add_paths

    local = tmp_path / "t"
    for i in range(6):
        deltalake.write_deltalake(str(local), batch(i * 500, 500), mode="append")
    files = add_paths(local)
    rng = random.Random(3)
    deletes = {f: sorted(rng.sample(range(500), 40)) for f in files}
    add_deletion_vectors(local, deletes, {f: "u" for f in files}, packed=True)
    upload_dir(s3, local, "delta/packed")
    url = f"s3://{BUCKET}/delta/packed"
    fetched: list[bytes] = []

    def note(request: bytes) -> None:
        line = request.split(b"\r\n", 1)[0]
        if b"deletion_vector_" in line:
            fetched.append(line)

    s3.proxy.fault = note  # forwards every request (it answers none)
    try:
        got = pqindex.scan(url, storage_options=s3.options()).to_arrow()
    finally:
        s3.proxy.fault = None
    assert got.num_rows == 6 * 500 - 6 * 40
    assert rows(got) == rows(referee(s3, url))
    assert len(fetched) == 1, fetched


@pytest.fixture(scope="module")
def iceberg(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """An Iceberg table whose warehouse is on the store (a SQL catalog on local SQLite)."""
    sql = pytest.importorskip("pyiceberg.catalog.sql")
    db = tmp_path_factory.mktemp("iceberg-s3") / "catalog.db"
    catalog = sql.SqlCatalog(
        "s3",
        uri=f"sqlite:///{db}",
        warehouse=f"s3://{BUCKET}/warehouse",
        **{
            "s3.endpoint": s3.endpoint,
            "s3.access-key-id": ACCESS_KEY,
            "s3.secret-access-key": SECRET_KEY,
            "s3.region": REGION,
        },
    )
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", schema=batch(0, 1).schema)
    for i in range(3):
        t.append(batch(i * 3000, 3000))
    t.delete("u < 1000")
    return catalog.load_table("db.t")


@pytest.mark.parametrize("where", [None, "id = 4321", "u BETWEEN 2000 AND 2100", "s IS NULL"])
def test_an_iceberg_table_on_the_store_reads_as_pyiceberg_reads_it(
    iceberg: Any, where: str | None
) -> None:
    """The storage options come from the table's own FileIO properties."""
    ref = iceberg.scan().to_arrow()
    got = pqindex.scan(iceberg, where=where).to_arrow()
    assert rows(got) == rows(ref, where)
