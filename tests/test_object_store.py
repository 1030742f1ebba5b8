"""Reading Parquet from an S3-compatible store: moto's server on loopback, behind a proxy that
counts requests (and adds latency or faults where a test asks).

DuckDB reading the same files locally is the referee for rows; the proxy's count is the
referee for ``metrics()["requests"]``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datagen import make_pruning_table, write_pyarrow_hive
from s3server import S3Server, s3_server
from test_differential import duckdb_table

BUCKET = "lake"


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    pytest.importorskip("moto.server")
    with s3_server() as server:
        server.client().create_bucket(Bucket=BUCKET)
        yield server


@pytest.fixture(autouse=True)
def _cold_cache() -> None:
    pqindex.clear_metadata_cache()


def upload_dir(s3: S3Server, local: Path, prefix: str) -> None:
    client = s3.client()
    for root, _, files in os.walk(local):
        for name in files:
            path = Path(root, name)
            key = f"{prefix}/{path.relative_to(local).as_posix()}"
            client.upload_file(str(path), BUCKET, key)


@pytest.fixture(scope="module")
def hive(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """A hive-partitioned dataset (with _SUCCESS, .crc, _temporary and hidden junk) on the
    store and on disk."""
    local = tmp_path_factory.mktemp("hive")
    write_pyarrow_hive(make_pruning_table(6000), str(local), seed=3)
    upload_dir(s3, local, "hive")
    return f"s3://{BUCKET}/hive/", local


@pytest.fixture(scope="module")
def sorted_file(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """One file sorted on ``id``, with small pages and a page index."""
    path = tmp_path_factory.mktemp("sorted") / "sorted.parquet"
    pq.write_table(
        make_pruning_table(200_000),
        path,
        row_group_size=50_000,
        max_rows_per_page=2_000,
        write_batch_size=1_000,
        write_page_index=True,
    )
    s3.client().upload_file(str(path), BUCKET, "sorted/part-0.parquet")
    return f"s3://{BUCKET}/sorted/", path


PREDICATES = [
    None,
    "id = 4321",
    "id BETWEEN 100 AND 900 OR h IN (2, 4, 7)",
    "part = 'b' AND id > 5000",
    "payload IN ('row-12', 'row-4000') OR payload >= 'row-999'",
    "id IS NULL",
]


@pytest.mark.parametrize("where", PREDICATES)
def test_rows_match_duckdb_and_the_local_scan(
    s3: S3Server, hive: tuple[str, Path], where: str | None, duckdb_con: Any
) -> None:
    url, local = hive
    got = pqindex.scan(url, where=where, storage_options=s3.options()).to_arrow()
    files = sorted(str(p) for p in local.glob("part=*/*.parquet"))
    sql = f"SELECT * FROM read_parquet({files!r}, hive_partitioning = true)"
    if where:
        sql += f" WHERE {where}"
    want = duckdb_table(duckdb_con, sql)
    key = [("id", "ascending")]
    assert got.num_rows == want.num_rows
    assert got.sort_by(key).column("id").to_pylist() == want.sort_by(key).column("id").to_pylist()
    assert got.sort_by(key).column("part").to_pylist() == [
        str(v) for v in want.sort_by(key).column("part").to_pylist()
    ]
    local_scan = pqindex.scan(str(local), where=where).to_arrow()
    assert got.sort_by(key).equals(local_scan.sort_by(key))


def test_point_lookup_requests(s3: S3Server, sorted_file: tuple[str, Path]) -> None:
    """Cold: the listing, one suffix read (footer and page index), one data read. Warm
    metadata: the listing and the data read. The store's count agrees with metrics()."""
    url, _ = sorted_file
    opts = s3.options()
    s3.proxy.reset()
    scan = pqindex.scan(url, where="id = 123456", storage_options=opts)
    assert scan.to_arrow().column("id").to_pylist() == [123456]
    m = scan.metrics()
    assert m["requests"] == s3.proxy.requests
    assert m["list_requests"] == 1
    assert m["requests"] - m["list_requests"] <= 3
    assert m["footers_read"] == 1

    s3.proxy.reset()
    warm = pqindex.scan(url, where="id = 123457", storage_options=opts)
    assert warm.to_arrow().column("id").to_pylist() == [123457]
    w = warm.metrics()
    assert w["footer_cache_hits"] == 1
    assert w["requests"] == s3.proxy.requests
    assert w["requests"] - w["list_requests"] == 1
    assert "requests" in warm.explain()


def test_a_range_reads_only_its_pages(s3: S3Server, sorted_file: tuple[str, Path]) -> None:
    url, local = sorted_file
    scan = pqindex.scan(url, where="id BETWEEN 1000 AND 1999", storage_options=s3.options())
    assert scan.to_arrow().num_rows == 1000
    assert scan.metrics()["bytes_read"] < os.path.getsize(local) / 2


def test_scans_from_asyncio(s3: S3Server, sorted_file: tuple[str, Path]) -> None:
    """Called from a coroutine on an event loop's thread and from the loop's worker threads
    (as async applications call blocking libraries), the object-store reads run on
    pqindex's own I/O runtime and return the same rows."""
    import asyncio

    url, _ = sorted_file

    def read() -> int:
        where = "id BETWEEN 10 AND 19"
        return pqindex.scan(url, where=where, storage_options=s3.options()).to_arrow().num_rows

    async def both() -> list[int]:
        on_loop = read()
        in_threads = await asyncio.gather(*(asyncio.to_thread(read) for _ in range(3)))
        return [on_loop, *in_threads]

    assert asyncio.run(both()) == [10, 10, 10, 10]


def test_s3a_urls_and_single_objects(s3: S3Server, sorted_file: tuple[str, Path]) -> None:
    opts = s3.options()
    one = f"s3a://{BUCKET}/sorted/part-0.parquet"
    single = pqindex.scan(one, where="id = 7", storage_options=opts)
    assert single.to_arrow().num_rows == 1
    assert single.metrics()["list_requests"] == 1  # one HEAD: a file name is not listed
    both = [one, f"s3://{BUCKET}/sorted/part-0.parquet"]
    assert pqindex.scan(both, where="id = 7", storage_options=opts).to_arrow().num_rows == 2


def test_aggregate_and_metadata(s3: S3Server, sorted_file: tuple[str, Path]) -> None:
    url, _ = sorted_file
    opts = s3.options()
    a = pqindex.aggregate(url, "count(*), sum(id)", where="id < 1000", storage_options=opts)
    assert a.to_arrow().to_pylist() == [{"count(*)": 1000, "sum(id)": Decimal(499500)}]
    md = pqindex.read_metadata(f"{url}part-0.parquet", storage_options=opts)
    assert md.num_rows == 200_000


def scan_then_replace(s3: S3Server, tmp_path: Path, prefix: str) -> Any:
    """A scan of ``prefix`` planned against one object, which is then replaced."""
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({"x": list(range(1000))}), path)
    client = s3.client()
    client.upload_file(str(path), BUCKET, f"{prefix}/v.parquet")
    scan = pqindex.scan(f"s3://{BUCKET}/{prefix}/", where="x = 5", storage_options=s3.options())
    pq.write_table(pa.table({"x": list(range(5, 2000))}), path)
    client.upload_file(str(path), BUCKET, f"{prefix}/v.parquet")
    return scan


def test_a_replaced_object_is_never_read_with_a_stale_plan(s3: S3Server, tmp_path: Path) -> None:
    opts = s3.options()
    scan = scan_then_replace(s3, tmp_path, "replaced")
    with pytest.raises(pqindex.FileChangedError, match="ETag"):
        scan.to_arrow()
    # A new scan sees the new object, and the cached footer of the old one is not used.
    again = pqindex.scan(f"s3://{BUCKET}/replaced/", where="x < 7", storage_options=opts)
    assert again.to_arrow().column("x").to_pylist() == [5, 6]
    assert again.metrics()["footer_cache_hits"] == 0


def test_a_store_that_ignores_if_match_still_fails_the_read(s3: S3Server, tmp_path: Path) -> None:
    """The ETag the store names in its answer is checked too."""
    scan = scan_then_replace(s3, tmp_path, "ignored")

    def drop_if_match(request: bytes) -> bytes:
        head, sep, body = request.partition(b"\r\n\r\n")
        lines = [h for h in head.split(b"\r\n") if not h.lower().startswith(b"if-match:")]
        return b"\r\n".join(lines) + sep + body

    s3.proxy.rewrite = drop_if_match
    try:
        with pytest.raises(pqindex.FileChangedError, match="ETag"):
            scan.to_arrow()
    finally:
        s3.proxy.rewrite = None


def test_missing_objects_and_bad_options(s3: S3Server) -> None:
    opts = s3.options()
    with pytest.raises(pqindex.NotFoundError):
        pqindex.scan(f"s3://{BUCKET}/nothing/here.parquet", storage_options=opts)
    with pytest.raises(pqindex.InvalidArgumentError, match="endpont"):
        pqindex.scan(f"s3://{BUCKET}/x/", storage_options={"endpont": "http://x"})
    with pytest.raises(pqindex.InvalidArgumentError, match="object-store"):
        pqindex.scan(__file__, storage_options=opts)
    with pytest.raises(TypeError):
        pqindex.scan(f"s3://{BUCKET}/x/", storage_options={"max_retries": [1]})
    with pytest.raises(pqindex.InvalidArgumentError, match="max_in_flight"):
        pqindex.scan(f"s3://{BUCKET}/x/", storage_options={**opts, "max_in_flight": "many"})
    with pytest.raises(pqindex.InvalidArgumentError, match="retry_timeout"):
        pqindex.scan(f"s3://{BUCKET}/x/", storage_options={**opts, "retry_timeout": -1})
    with pytest.raises(pqindex.SourceError, match="mixes local paths"):
        pqindex.scan([f"s3://{BUCKET}/sorted/part-0.parquet", __file__], storage_options=opts)
    with pytest.raises(pqindex.InvalidArgumentError, match=r"not a valid URL|recognise"):
        pqindex.scan("s3://", storage_options=opts)


def _http_error(status: int, code: str) -> bytes:
    body = f"<Error><Code>{code}</Code><Message>{code}</Message></Error>".encode()
    return (
        f"HTTP/1.1 {status} {code}\r\nContent-Type: application/xml\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


class Faults:
    """Answer the first ``count`` GETs of data with ``response`` instead of the store."""

    def __init__(self, response: bytes, count: int) -> None:
        self.response, self.left, self.lock = response, count, threading.Lock()

    def __call__(self, request: bytes) -> bytes | None:
        if not request.startswith(b"GET ") or b"list-type" in request.split(b"\r\n")[0]:
            return None
        with self.lock:
            if self.left == 0:
                return None
            self.left -= 1
        return self.response


@pytest.fixture
def faults(s3: S3Server) -> Iterator[S3Server]:
    yield s3
    s3.proxy.fault = None


def test_transient_errors_are_retried(faults: S3Server, sorted_file: tuple[str, Path]) -> None:
    url, _ = sorted_file
    faults.proxy.fault = Faults(_http_error(503, "SlowDown"), count=2)
    scan = pqindex.scan(url, where="id = 99", storage_options=faults.options())
    assert scan.to_arrow().column("id").to_pylist() == [99]


def test_persistent_errors_give_up_within_bounds(
    faults: S3Server, sorted_file: tuple[str, Path]
) -> None:
    url, _ = sorted_file
    faults.proxy.fault = Faults(_http_error(500, "InternalError"), count=1_000_000)
    opts = faults.options(max_retries=2, retry_timeout=5)
    started = time.monotonic()
    with pytest.raises(pqindex.StorageError):
        pqindex.scan(url, where="id = 99", storage_options=opts).to_arrow()
    assert time.monotonic() - started < 30


def test_access_denied_is_a_storage_error(faults: S3Server, sorted_file: tuple[str, Path]) -> None:
    url, _ = sorted_file
    faults.proxy.fault = Faults(_http_error(403, "AccessDenied"), count=1_000_000)
    with pytest.raises(pqindex.StorageError, match=r"(?i)denied|forbidden|403"):
        pqindex.scan(url, where="id = 1", storage_options=faults.options()).to_arrow()


def test_truncated_responses_are_errors_or_retried(
    faults: S3Server, sorted_file: tuple[str, Path]
) -> None:
    """A response whose body stops short: the read is retried or fails; it never returns
    short bytes as if they were the range."""
    url, _ = sorted_file
    short = (
        b"HTTP/1.1 206 Partial Content\r\nContent-Length: 100000\r\n"
        b"Content-Range: bytes 0-99999/100000\r\nConnection: close\r\n\r\nPAR1"
    )
    faults.proxy.fault = Faults(short, count=1)
    try:
        rows = pqindex.scan(url, where="id = 5", storage_options=faults.options()).to_arrow()
    except pqindex.PqindexError:
        return
    assert rows.column("id").to_pylist() == [5]


def test_write_and_index_objects(s3: S3Server) -> None:
    """pqindex.write and add_indexes on s3:// replace the object in one put; reads use the
    embedded index."""
    opts = s3.options()
    url = f"s3://{BUCKET}/written/w.parquet"
    table = make_pruning_table(30_000)
    pqindex.write(table, url, row_group_size=10_000, storage_options=opts)
    got = pqindex.scan(url, where="h = 20", storage_options=opts).to_arrow()
    assert got.to_pylist() == table.filter(pa.compute.equal(table["h"], 20)).to_pylist()

    report = pqindex.add_indexes(url, [pqindex.DistinctIndex("payload")], storage_options=opts)
    assert [i["kind"] for i in report["indexes"]] == ["distinct"]
    assert report["bytes_after"] > report["bytes_before"]
    listed = pqindex.list_indexes(url, storage_options=opts)
    assert [i["columns"] for i in listed] == [["payload"]]
    absent = pqindex.scan(url, where="payload = 'row-12345x'", storage_options=opts)
    assert absent.to_arrow().num_rows == 0
    assert absent.metrics()["files_pruned_by_index"] == 1

    dropped = pqindex.drop_indexes(url, storage_options=opts)
    assert dropped["indexes"] == []
    assert pqindex.list_indexes(url, storage_options=opts) == []

    with_index = f"s3://{BUCKET}/written/with-index.parquet"
    pqindex.write(table, with_index, indexes=[pqindex.BloomIndex("h")], storage_options=opts)
    assert [i["kind"] for i in pqindex.list_indexes(with_index, storage_options=opts)] == ["bloom"]
    assert pqindex.scan(with_index, where="h = 21", storage_options=opts).to_arrow().num_rows == 0


def test_partition_pruned_objects_are_never_opened(s3: S3Server, hive: tuple[str, Path]) -> None:
    url, local = hive
    scan = pqindex.scan(url, where="part = 'y'", storage_options=s3.options())
    m = scan.metrics()
    opened = m["files"] - m["files_pruned_by_partition"]
    assert m["files_pruned_by_partition"] > 0
    assert m["footers_read"] == opened
    rows = scan.to_arrow().num_rows
    assert rows > 0
    assert rows == pqindex.scan(str(local), where="part = 'y'").to_arrow().num_rows


def test_footers_of_many_objects_arrive_in_one_wave(s3: S3Server, tmp_path: Path) -> None:
    """Cold, every footer is fetched at once: the listing, one tail read per file (footer
    and page index), then the data."""
    client = s3.client()
    for i in range(4):
        path = tmp_path / f"f{i}.parquet"
        pq.write_table(pa.table({"x": list(range(i * 1000, (i + 1) * 1000))}), path)
        client.upload_file(str(path), BUCKET, f"many/f{i}.parquet")
    s3.proxy.reset()
    scan = pqindex.scan(f"s3://{BUCKET}/many/", where="x = 2500", storage_options=s3.options())
    assert scan.to_arrow().column("x").to_pylist() == [2500]
    m = scan.metrics()
    assert (m["footers_read"], m["footer_cache_hits"]) == (4, 0)
    assert m["requests"] == s3.proxy.requests == 1 + 4 + 1


def test_a_catalog_on_the_store_rules_out_objects(s3: S3Server, tmp_path: Path) -> None:
    """A catalog under the prefix is found through the listing; kept objects' footers come
    from it, pruned objects are never read, and an object added later is still found."""
    client = s3.client()
    for i in range(6):
        path = tmp_path / f"c{i}.parquet"
        pq.write_table(pa.table({"x": list(range(i * 1000, (i + 1) * 1000))}), path)
        client.upload_file(str(path), BUCKET, f"cataloged/c{i}.parquet")
    opts = s3.options()
    url = f"s3://{BUCKET}/cataloged"
    catalog = pqindex.Catalog.build(url, ["x"], storage_options=opts)
    assert catalog.num_files == 6
    assert pqindex.Catalog.open(url, storage_options=opts).version == catalog.version

    pqindex.clear_metadata_cache()
    s3.proxy.reset()
    scan = pqindex.scan(url, where="x = 4321", storage_options=opts)
    assert scan.to_arrow().column("x").to_pylist() == [4321]
    m = scan.metrics()
    assert m["files_pruned_by_catalog"] == 5
    assert m["footers_read"] == 0 and m["footers_from_catalog"] == 1
    # Besides the listing: the catalog's pointer, its version's HEAD, the version itself
    # (not read by this process before), and the kept object's data.
    assert m["requests"] - m["list_requests"] == 3 + 1 == s3.proxy.requests - 1
    s3.proxy.reset()
    again = pqindex.scan(url, where="x = 4322", storage_options=opts)
    assert again.metrics()["requests"] == s3.proxy.requests == 1 + 2, "planned: no version GET"
    assert scan.catalog_root is not None

    extra = tmp_path / "c9.parquet"
    pq.write_table(pa.table({"x": [99_999]}), extra)
    client.upload_file(str(extra), BUCKET, "cataloged/c9.parquet")
    late = pqindex.scan(url, where="x = 99999", storage_options=opts)
    assert late.to_arrow().column("x").to_pylist() == [99_999]
    assert late.metrics()["files_not_in_catalog"] == 1
    refreshed = catalog.refresh()
    assert refreshed.num_files == 7 and refreshed.report()["added"] == 1


def test_a_lookup_in_plain_pages_is_one_request_warm(s3: S3Server, tmp_path: Path) -> None:
    """A sorted key's chunk falls back to plain pages early; its dictionary page, megabytes
    before the page a lookup selects in real files, is not fetched. Warm metadata: the
    listing and one data request."""
    path = tmp_path / "fallback.parquet"
    pq.write_table(
        pa.table({"k": pa.array(range(100_000), pa.int64())}),
        path,
        dictionary_pagesize_limit=16 * 1024,
        data_page_size=8 * 1024,
        write_page_index=True,
    )
    s3.client().upload_file(str(path), BUCKET, "fallback/f.parquet")
    url, opts = f"s3://{BUCKET}/fallback/", s3.options()
    cold = pqindex.scan(url, where="k = 70000", columns=["k"], storage_options=opts)
    assert cold.to_arrow().column("k").to_pylist() == [70000]
    assert cold.metrics()["dictionary_pages_skipped"] == 1
    s3.proxy.reset()
    warm = pqindex.scan(url, where="k = 70001", columns=["k"], storage_options=opts)
    assert warm.to_arrow().column("k").to_pylist() == [70001]
    m = warm.metrics()
    assert (m["requests"], m["list_requests"]) == (s3.proxy.requests, 1)
    assert m["requests"] - m["list_requests"] == 1
    assert m["dictionary_pages_read"] == 0


def test_a_listing_is_reused_within_its_ttl(s3: S3Server, tmp_path: Path) -> None:
    """Without ``list_cache_ttl`` every scan lists (a new object is seen at once); with it,
    scans reuse the listing until an object read fails or pqindex writes to the store."""
    client = s3.client()
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"x": list(range(100))}), path)
    client.upload_file(str(path), BUCKET, "ttl/a.parquet")
    url = f"s3://{BUCKET}/ttl/"

    def scan(opts: dict[str, Any]) -> tuple[list[int], int]:
        s = pqindex.scan(url, where="x >= 99", storage_options=opts)
        return sorted(s.to_arrow().column("x").to_pylist()), s.metrics()["list_requests"]

    ttl = s3.options(list_cache_ttl=600)
    assert scan(ttl) == ([99], 1)
    assert scan(ttl) == ([99], 0)
    pq.write_table(pa.table({"x": [100]}), tmp_path / "b.parquet")
    client.upload_file(str(tmp_path / "b.parquet"), BUCKET, "ttl/b.parquet")
    assert scan(s3.options()) == ([99, 100], 1), "no ttl: the new object is seen"
    # Other options give another store; the same ttl options again reuse this one's listing.
    assert scan(ttl) == ([99, 100], 1)
    assert scan(ttl) == ([99, 100], 0)

    # Replaced behind the cache's back: the read fails, and the next scan lists again.
    pq.write_table(pa.table({"x": [99, 101]}), path)
    client.upload_file(str(path), BUCKET, "ttl/a.parquet")
    with pytest.raises(pqindex.FileChangedError):
        scan(ttl)
    assert scan(ttl) == ([99, 100, 101], 1)

    # A write through pqindex drops the cached listings of its store.
    pqindex.write(pa.table({"x": [102]}), f"{url}c.parquet", storage_options=ttl)
    assert scan(ttl) == ([99, 100, 101, 102], 1)
    with pytest.raises(pqindex.InvalidArgumentError, match="list_cache_ttl"):
        pqindex.scan(url, storage_options=s3.options(list_cache_ttl="soon"))
    with pytest.raises(pqindex.InvalidArgumentError, match="data_cache_size"):
        pqindex.scan(url, storage_options=s3.options(data_cache_size=-1))


def test_data_cache_serves_repeated_reads_of_the_same_version(s3: S3Server, tmp_path: Path) -> None:
    """With ``data_cache_size``, a repeated query fetches no data; a replaced object (a new
    ETag) is fetched anew; a budget too small for a range keeps nothing."""
    client = s3.client()
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"x": list(range(50_000))}), path, write_page_index=True)
    client.upload_file(str(path), BUCKET, "cached/d.parquet")
    url = f"s3://{BUCKET}/cached/"

    def scan(opts: dict[str, Any]) -> tuple[list[int], int]:
        """The rows, and the requests reading them took (planning's are not counted)."""
        where = "x IN (7, 10007, 20007, 30007, 40007, 50007)"
        s = pqindex.scan(url, where=where, storage_options=opts)
        s3.proxy.reset()
        rows = sorted(s.to_arrow().column("x").to_pylist())
        return rows, s3.proxy.requests

    first = [7, 10007, 20007, 30007, 40007]
    cached = s3.options(data_cache_size=64 << 20)
    assert scan(cached) == (first, 1)
    assert scan(cached) == (first, 0)

    pq.write_table(pa.table({"x": list(range(100, 50_100))}), path, write_page_index=True)
    client.upload_file(str(path), BUCKET, "cached/d.parquet")
    assert scan(cached) == ([*first[1:], 50007], 1)

    tiny = s3.options(data_cache_size=16)
    assert scan(tiny) == ([*first[1:], 50007], 1)
    assert scan(tiny) == ([*first[1:], 50007], 1)
