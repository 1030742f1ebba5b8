"""Faults on the network path: moto's S3 on loopback behind a proxy that breaks answers
(``fault_proxy.py``). Every scan, index change, catalog build and Spark read either
returns exactly the right rows or raises a typed pqindex error, within ``retry_timeout``
and never leaving a torn object behind.

A seeded random schedule runs over a mixed workload (the default suite runs a short one;
``--full`` runs a longer one, ``PQINDEX_FAULT_SECONDS`` long); one targeted test per fault
type shows each is survived by retrying; persistent faults show the deadline.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fault_proxy import FAULTS, FaultProxy, Request, Schedule, data_reads, only, puts
from fault_workload import (
    PREDICATES,
    Dataset,
    Tally,
    checked_catalog,
    checked_index_change,
    checked_scan,
    make_dataset,
    object_is_whole,
    rows_of,
    stored_object,
)
from s3server import S3Server, s3_server

BUCKET = "faults"
#: One attempt's limit and the whole request's deadline, small so stalls cost little.
TIMEOUT = 0.5
RETRY_TIMEOUT = 8.0


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    pytest.importorskip("moto.server")
    with s3_server() as server:
        server.client().create_bucket(Bucket=BUCKET)
        yield server


@pytest.fixture(scope="module")
def proxy(s3: S3Server) -> Iterator[FaultProxy]:
    host, port = s3.endpoint.removeprefix("http://").split(":")
    p = FaultProxy((host, int(port)), stall_seconds=1.5).start()
    yield p
    p.stop()


@pytest.fixture(autouse=True)
def _no_faults_between_tests(proxy: FaultProxy) -> Iterator[None]:
    pqindex.clear_metadata_cache()
    proxy.schedule, proxy.on_replace = None, None
    proxy.reset_counts()
    yield
    proxy.schedule, proxy.on_replace = None, None


def options(s3: S3Server, proxy: FaultProxy, **extra: Any) -> dict[str, Any]:
    return {
        **s3.options(through_proxy=False),
        "endpoint": proxy.endpoint,
        "timeout": TIMEOUT,
        "retry_timeout": RETRY_TIMEOUT,
        **extra,
    }


@pytest.fixture(scope="module")
def ds(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return make_dataset(s3.client(), BUCKET, "data", tmp_path_factory.mktemp("faults"))


def assert_clean(tally: Tally) -> None:
    assert tally.bad == 0, tally.wrong


def run_schedule(
    s3: S3Server, proxy: FaultProxy, ds: Dataset, seed: int, seconds: float, ops: int
) -> Tally:
    """Scans, index changes and catalog builds, in a seeded order, under a seeded fault
    schedule, until ``ops`` operations or ``seconds`` have passed."""
    rng = random.Random(seed)
    weights = {f: 1.0 for f in FAULTS}
    # Stalls cost a timeout each and replacements fail the operation: fewer of them.
    weights.update(stall=0.3, replace=0.3)
    proxy.schedule = Schedule(seed=seed, rate=0.2, weights=weights)
    proxy.on_replace = ds.replacer(s3.client())
    opts = options(s3, proxy)
    tally = Tally()
    client = s3.client()
    deadline = time.monotonic() + seconds
    done = 0
    while done < ops and time.monotonic() < deadline:
        pqindex.clear_metadata_cache()
        roll = rng.random()
        if roll < 0.6:
            checked_scan(ds, opts, rng, tally)
        elif roll < 0.85:
            checked_index_change(client, ds, opts, rng, tally)
        else:
            checked_catalog(ds, opts, rng, tally)
        done += 1
    proxy.schedule, proxy.on_replace = None, None
    return tally


def test_a_seeded_random_schedule_of_faults(s3: S3Server, proxy: FaultProxy, ds: Dataset) -> None:
    """Scans (rows compared with pyarrow's reading of the local copies), add/drop_indexes
    (the stored object whole after each) and catalog builds under a 20% fault rate."""
    tally = run_schedule(s3, proxy, ds, seed=22, seconds=15, ops=40)
    counts = proxy.counts()
    assert_clean(tally)
    assert counts["faults_total"] >= 10, counts
    assert tally.retries > 0
    assert tally.outcomes.get("ok", 0) >= len([o for o in tally.outcomes if o != "ok"])
    # Each operation is a handful of requests, each ending within retry_timeout.
    assert tally.slowest < 4 * RETRY_TIMEOUT


@pytest.mark.slow
def test_a_long_random_schedule(s3: S3Server, proxy: FaultProxy, ds: Dataset) -> None:
    """The same workload for ``PQINDEX_FAULT_SECONDS`` (120 by default), a new seed every
    30 seconds."""
    end = time.monotonic() + float(os.environ.get("PQINDEX_FAULT_SECONDS", "120"))
    total, seed = Tally(), 1000
    while (left := end - time.monotonic()) > 1:
        total.merge(run_schedule(s3, proxy, ds, seed=seed, seconds=min(30, left), ops=10_000))
        seed += 1
    assert_clean(total)
    assert total.outcomes.get("ok", 0) > 0


# -- one fault at a time ----------------------------------------------------------------

#: Faults a read survives by retrying; ``replace`` is not one (the planned version is gone).
RETRIED = [f for f in FAULTS if f != "replace"]


@pytest.mark.parametrize("fault", RETRIED)
def test_each_fault_on_reads_is_retried(
    s3: S3Server, proxy: FaultProxy, ds: Dataset, fault: str
) -> None:
    """The first two ranged reads (the footer's, then pages') meet the fault; the scan
    still returns exactly the right rows, and its metrics count the retries."""
    proxy.schedule = only(fault, count=2, select=data_reads)
    where, expr = PREDICATES[2]
    scan = pqindex.scan(ds.url, where=where, storage_options=options(s3, proxy))
    assert rows_of(scan.to_arrow()) == ds.reference(expr)
    assert proxy.counts()["faults"] == {fault: 2}
    assert scan.metrics()["retries"] >= 2
    assert proxy.counts()["repeats_after_fault"] >= 2


@pytest.mark.parametrize("fault", ["reset", "status_503", "truncate", "short_length", "stall"])
def test_listings_and_heads_are_retried(
    s3: S3Server, proxy: FaultProxy, ds: Dataset, fault: str
) -> None:
    """Listing pages (XML cut short, say) and HEADs are retried like reads."""

    def listing_or_head(req: Request) -> bool:
        return req.is_listing or req.method == "HEAD"

    proxy.schedule = only(fault, count=2, select=listing_or_head)
    opts = options(s3, proxy)
    got = pqindex.scan(ds.url, where="id < 10", storage_options=opts).to_arrow()
    assert rows_of(got) == [r for r in ds.reference(None) if r[0] < 10]
    one = pqindex.scan(ds.object_url(ds.names[0]), where="id = 3", storage_options=opts)
    assert [r[0] for r in rows_of(one.to_arrow())] == [3]
    assert proxy.counts()["faults_total"] >= 1


def test_persistent_errors_end_within_retry_timeout(
    s3: S3Server, proxy: FaultProxy, ds: Dataset
) -> None:
    proxy.schedule = only("status_503", select=data_reads)
    opts = options(s3, proxy, retry_timeout=2, max_retries=100)
    started = time.monotonic()
    with pytest.raises(pqindex.StorageError):
        pqindex.scan(ds.url, where="id = 1", storage_options=opts).to_arrow()
    assert time.monotonic() - started < 2 + 1.5


def test_persistent_stalls_end_within_retry_timeout(
    s3: S3Server, proxy: FaultProxy, ds: Dataset
) -> None:
    """A store that takes the request and never answers: each attempt times out after
    ``timeout``, and the request gives up at ``retry_timeout`` (which object_store alone
    checks only between attempts)."""
    proxy.schedule = only("stall", select=data_reads)
    proxy.stall_seconds = 30
    try:
        opts = options(s3, proxy, retry_timeout=2, timeout=10)
        started = time.monotonic()
        with pytest.raises(pqindex.StorageError, match="retry_timeout"):
            pqindex.scan(ds.url, where="id = 1", storage_options=opts).to_arrow()
        assert time.monotonic() - started < 2 + 1.5
    finally:
        proxy.stall_seconds = 1.5


def test_short_bodies_are_never_returned_as_data(
    s3: S3Server, proxy: FaultProxy, ds: Dataset
) -> None:
    """Every ranged read answered with a consistent but short Content-Length: the scan
    fails with a storage error; it never decodes the short bytes."""
    proxy.schedule = only("short_length", select=data_reads)
    with pytest.raises(pqindex.StorageError, match="bytes for a read of"):
        pqindex.scan(
            ds.url, where="id = 1", storage_options=options(s3, proxy, max_retries=2)
        ).to_arrow()


def test_an_object_replaced_between_two_ranged_reads(
    s3: S3Server, proxy: FaultProxy, ds: Dataset, tmp_path: Path
) -> None:
    """The footer is read from one version; just before the pages are read the object
    is replaced. The scan fails with FileChangedError (reads name the planned ETag), or
    returns the rows of one version whole; never a mix."""
    client = s3.client()
    name = "swap.parquet"
    old = pa.table({"id": pa.array(range(1000), pa.int64())})
    new = pa.table({"id": pa.array(range(500, 1500), pa.int64())})
    for version, table in (("old", old), ("new", new)):
        pq.write_table(
            table, tmp_path / f"{version}.parquet", data_page_size=1024, write_page_index=True
        )
    client.upload_file(str(tmp_path / "old.parquet"), BUCKET, f"swap/{name}")
    replaced = threading.Event()

    def replace(key: str) -> None:
        if not replaced.is_set():
            replaced.set()
            client.upload_file(str(tmp_path / "new.parquet"), BUCKET, key.split("/", 1)[1])

    reads: list[int] = []

    def second_ranged_read(req: Request) -> bool:
        if not data_reads(req):
            return False
        reads.append(1)
        return len(reads) == 2

    proxy.on_replace = replace
    proxy.schedule = only("replace", count=1, select=second_ranged_read)
    url = f"s3://{BUCKET}/swap/{name}"
    try:
        got = pqindex.scan(url, where="id >= 900", storage_options=options(s3, proxy)).to_arrow()
    except pqindex.FileChangedError:
        pass
    else:
        ids = sorted(got.column("id").to_pylist())
        assert ids in (list(range(900, 1000)), list(range(900, 1500)))
    assert replaced.is_set()


# -- writes -----------------------------------------------------------------------------


def fresh_object(s3: S3Server, ds: Dataset, name: str) -> str:
    """A copy of the first data file under ``name``, without indexes."""
    src = ds.local / ds.names[0]
    s3.client().upload_file(str(src), ds.bucket, f"{ds.prefix}-w/{name}")
    return f"s3://{ds.bucket}/{ds.prefix}-w/{name}"


def test_a_failed_upload_leaves_the_old_object(
    s3: S3Server, proxy: FaultProxy, ds: Dataset
) -> None:
    url = fresh_object(s3, ds, "keep.parquet")
    key = url.split("/", 3)[3]
    before = bytes(s3.client().get_object(Bucket=BUCKET, Key=key)["Body"].read())
    proxy.schedule = only("status_500", select=puts)
    opts = options(s3, proxy, retry_timeout=2)
    with pytest.raises(pqindex.StorageError):
        pqindex.add_indexes(url, [pqindex.BloomIndex("s")], storage_options=opts)
    after = bytes(s3.client().get_object(Bucket=BUCKET, Key=key)["Body"].read())
    assert after == before


@pytest.mark.parametrize("fault", ["reset", "stall", "status_503"])
def test_a_put_whose_answer_is_lost_still_lands_once(
    s3: S3Server, proxy: FaultProxy, ds: Dataset, fault: str
) -> None:
    """The store takes the conditional PUT but the answer never arrives (reset, stall)
    or a throttled one comes first: the retry is refused by the store (If-Match no longer
    holds), pqindex sees that the object is its own upload, and add_indexes succeeds."""
    url = fresh_object(s3, ds, f"lost-{fault}.parquet")
    proxy.schedule = only(fault, count=1, select=puts)
    report = pqindex.add_indexes(url, [pqindex.BloomIndex("s")], storage_options=options(s3, proxy))
    assert [i["kind"] for i in report["indexes"]] == ["bloom"]
    assert proxy.counts()["faults"] == {fault: 1}
    proxy.schedule = None
    listed = pqindex.list_indexes(url, storage_options=options(s3, proxy))
    assert [i["kind"] for i in listed] == ["bloom"]


def test_concurrent_writers_of_one_object_do_not_overwrite_each_other(
    s3: S3Server, proxy: FaultProxy, ds: Dataset, tmp_path: Path
) -> None:
    """Another writer replaces the object after add_indexes read it and before its upload
    lands: the conditional put (If-Match on the ETag read) fails with FileChangedError and
    the other writer's object stays."""
    url = fresh_object(s3, ds, "contended.parquet")
    key = url.split("/", 3)[3]
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), other)
    client = s3.client()

    def other_writer(_: str) -> None:
        client.upload_file(str(other), BUCKET, key)

    def replace_at_put(req: Request) -> bool:
        if req.method == "PUT":
            other_writer(req.key)
        return False

    proxy.schedule = Schedule(rate=0.0, select=replace_at_put)
    with pytest.raises(pqindex.FileChangedError):
        pqindex.add_indexes(url, [pqindex.BloomIndex("s")], storage_options=options(s3, proxy))
    assert bytes(client.get_object(Bucket=BUCKET, Key=key)["Body"].read()) == other.read_bytes()


def test_index_changes_under_faults_leave_whole_objects(
    s3: S3Server, proxy: FaultProxy, ds: Dataset
) -> None:
    rng = random.Random(7)
    proxy.schedule = Schedule(seed=7, rate=0.3)
    tally = Tally()
    for _ in range(8):
        checked_index_change(s3.client(), ds, options(s3, proxy), rng, tally)
    assert_clean(tally)
    for name in ds.names:
        assert object_is_whole(s3.client(), ds, name)[0]
        assert stored_object(s3.client(), ds, name)[:4] == b"PAR1"


def test_catalog_builds_under_faults(s3: S3Server, proxy: FaultProxy, ds: Dataset) -> None:
    rng = random.Random(5)
    proxy.schedule = Schedule(seed=5, rate=0.3)
    tally = Tally()
    for _ in range(2):
        checked_catalog(ds, options(s3, proxy), rng, tally)
    proxy.schedule = None
    assert_clean(tally)
    cat = pqindex.Catalog.open(ds.url.rstrip("/"), storage_options=options(s3, proxy))
    assert cat.num_files == len(ds.names)
    scan = pqindex.scan(ds.url, where="id = 1234", storage_options=options(s3, proxy))
    assert rows_of(scan.to_arrow()) == ds.reference(PREDICATES[1][1])


@pytest.mark.parametrize("fault", ["short_length", "truncate", "reset"])
def test_catalog_reads_are_whole_or_retried(
    s3: S3Server, proxy: FaultProxy, ds: Dataset, fault: str
) -> None:
    """The catalog's pointer and version are read whole (no range of a known size): a
    body cut short, even under a Content-Length that agrees with it, is read again."""
    root = ds.url.rstrip("/")
    built = pqindex.Catalog.build(root, ["id", "v"], storage_options=options(s3, proxy))
    pqindex.clear_metadata_cache()

    def catalog_files(req: Request) -> bool:
        return req.method == "GET" and "/_pqindex/" in req.target

    proxy.schedule = only(fault, count=2, select=catalog_files)
    cat = pqindex.Catalog.open(root, storage_options=options(s3, proxy))
    assert cat is not None and cat.version == built.version
    assert proxy.counts()["faults"] == {fault: 2}
    scan = pqindex.scan(ds.url, where="id = 1234", storage_options=options(s3, proxy))
    assert rows_of(scan.to_arrow()) == ds.reference(PREDICATES[1][1])


def test_timeout_options_are_seconds_or_durations(
    s3: S3Server, proxy: FaultProxy, ds: Dataset
) -> None:
    for value in (1, 2.5, "3", "1500ms", "2s"):
        opts = options(s3, proxy, timeout=value, connect_timeout=value)
        assert pqindex.scan(ds.url, where="id = 5", storage_options=opts).to_arrow().num_rows == 1
    with pytest.raises(pqindex.InvalidArgumentError, match="timeout"):
        pqindex.scan(ds.url, storage_options=options(s3, proxy, timeout=-1))
    with pytest.raises(pqindex.InvalidArgumentError, match="timeout"):
        pqindex.scan(ds.url, storage_options=options(s3, proxy, timeout="soon"))


@pytest.mark.spark
def test_spark_reads_under_faults(spark: Any, s3: S3Server, proxy: FaultProxy, ds: Dataset) -> None:
    """Executors read through the faulty proxy: the rows are right, or the job fails
    with the pqindex error named."""
    import pqindex.spark

    proxy.schedule = Schedule(seed=3, rate=0.15)
    where, expr = PREDICATES[3]
    opts = options(s3, proxy)
    try:
        plan = pqindex.spark.plan(spark, ds.url, where, driver_read_bytes=0, storage_options=opts)
        got = rows_of(plan.to_df().toArrow())
    except Exception as e:
        assert any(n in str(e) for n in ("StorageError", "FileChangedError")), e
        return
    assert got == ds.reference(expr)
    assert plan.executor_metrics()["requests"] > 0
    assert proxy.counts()["faults_total"] > 0
