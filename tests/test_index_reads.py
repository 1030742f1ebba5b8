"""An indexed lookup reads a small part of its index and little more than the data it needs.

Issue 21's repro: a 600,000-row file written by pyarrow (one row group, 20,000-row pages)
with a page distinct index on a random int64 ``u``, a page bloom index on a random string
``s``, and n-gram and token indexes on a text column ``t``. Each lookup selects one row, and
``SELECT *`` must fetch at most 1.1 x its physical need plus 64 KiB of index. The physical
need is computed here from the file's metadata and the matching rows, independently of the
core: the pages of every column that hold those rows, the dictionary pages those pages use
(from their headers), the footer and the page index.

On the S3 test server the index costs at most one round trip more than reading the same
pages found through the page index (``id`` is sorted), counted at the proxy: requests sent
together arrive together, a request that waits for an answer arrives a latency later.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pqindex
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from s3server import S3Server, s3_server

ROWS = 600_000
PAGE_ROWS = 20_000
ROW = 123_457  # the row every lookup finds (page 6: dictionary-encoded in some columns)
INDEX_BUDGET = 64 * 1024
# Common words and the random token of every row use the letters a-m (and digits) only; the
# planted words use others, so no other page holds their n-grams.
COMMON = (
    "black deck head jade face bead cage fade glad lake milk hall bill calm dime film gild hike "
    "jamb kale"
).split()
RARE = "quorzyx"
PHRASE = "turnsoy vyptrox"
BUCKET = "lake"


def make_table() -> pa.Table:
    rng = np.random.default_rng(21)
    words = [pa.array(np.array(COMMON)[rng.integers(0, len(COMMON), ROWS)]) for _ in range(5)]
    alphabet = np.frombuffer(b"abcdefghijklm0123456789", dtype=np.uint8)
    letters = alphabet[rng.integers(0, len(alphabet), (ROWS, 6))].view("S6").ravel()
    words.append(pa.array(letters).cast(pa.string()))
    text = pc.binary_join_element_wise(*words, " ").to_pylist()
    text[ROW] = f"{text[ROW][:10]} {RARE} {PHRASE} {text[ROW][10:]}"
    hexes = pc.utf8_lpad(pa.array(rng.integers(0, 2**62, ROWS)).cast(pa.string()), 19, "0")
    return pa.table(
        {
            "id": pa.array(np.arange(ROWS, dtype=np.int64)),
            "u": pa.array(rng.integers(0, 2**62, ROWS)),
            "s": pc.binary_join_element_wise("s", hexes, ""),
            "t": pa.array(text, pa.string()),
            "v": pa.array(rng.random(ROWS)),
        }
    )


@dataclass(frozen=True)
class Case:
    kind: str
    file: str
    where: str


@dataclass(frozen=True)
class Files:
    dir: Path
    cases: dict[str, Case]


CASES = ["distinct-eq", "bloom-eq", "ngram-contains", "ngram-like", "token-contains", "token-like"]


def write_files(d: Path) -> Files:
    """``lookups.parquet`` (distinct on u, bloom on s, n-gram on t) and ``tokens.parquet``
    (token on t) in ``d``: the same rows, as pyarrow writes them."""
    table = make_table()
    raw = d / "raw.parquet"
    pq.write_table(
        table,
        raw,
        row_group_size=ROWS,
        max_rows_per_page=PAGE_ROWS,
        write_batch_size=PAGE_ROWS,
        data_page_size=1 << 30,
        write_page_index=True,
    )
    indexes = {
        "lookups": [
            pqindex.DistinctIndex("u"),
            pqindex.BloomIndex("s", granularity="page"),
            pqindex.NgramIndex("t"),
        ],
        "tokens": [pqindex.TokenIndex("t")],
    }
    for name, defs in indexes.items():
        shutil.copyfile(raw, d / f"{name}.parquet")
        pqindex.add_indexes(d / f"{name}.parquet", defs)
        # Each index is far larger than the budget: reading one whole would show.
        for ix in pqindex.list_indexes(d / f"{name}.parquet"):
            assert ix["length"] > 2 * INDEX_BUDGET, ix
    row = table.slice(ROW, 1).to_pylist()[0]
    cases = [
        Case("distinct", "lookups", f"u = {row['u']}"),
        Case("bloom", "lookups", f"s = '{row['s']}'"),
        Case("ngram", "lookups", f"contains(t, '{RARE}')"),
        Case("ngram", "lookups", f"t LIKE '%{PHRASE}%'"),
        Case("token", "tokens", f"contains(t, ' {RARE} ')"),
        Case("token", "tokens", f"t LIKE '% {PHRASE} %'"),
    ]
    return Files(d, dict(zip(CASES, cases, strict=True)))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Files:
    return write_files(tmp_path_factory.mktemp("index_reads"))


# ---------------------------------------------------------------------------------------------
# The physical need, from the file's metadata


def _varint(b: bytes, i: int) -> tuple[int, int]:
    shift = out = 0
    while True:
        x = b[i]
        i += 1
        out |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return out, i


def _zigzag(b: bytes, i: int) -> tuple[int, int]:
    v, i = _varint(b, i)
    return (v >> 1) ^ -(v & 1), i


def page_encoding(path: Path, offset: int) -> int:
    """The encoding of the data page at ``offset``, from its Thrift compact ``PageHeader``:
    i32 fields 1-4, then ``data_page_header`` (field 5; the encoding is its field 2) or
    ``data_page_header_v2`` (field 8; field 4)."""
    with open(path, "rb") as f:
        f.seek(offset)
        b = f.read(256)
    i, field = 0, 0
    while True:
        head = b[i]
        i += 1
        delta, kind = head >> 4, head & 0x0F
        field = field + delta if delta else _zigzag(b, i)[0]
        if kind == 5:  # i32
            _, i = _zigzag(b, i)
            continue
        assert kind == 12 and field in (5, 8), f"unexpected page header field {field}"
        wanted, inner = (2 if field == 5 else 4), 0
        while True:
            head = b[i]
            i += 1
            inner += head >> 4
            assert head & 0x0F == 5, "data page header fields before the encoding are i32"
            value, i = _zigzag(b, i)
            if inner == wanted:
                return value


DICTIONARY_ENCODINGS = {2, 8}  # PLAIN_DICTIONARY, RLE_DICTIONARY


def physical_need(path: Path, rows: list[int]) -> int:
    """Bytes ``SELECT *`` of ``rows`` (of row group 0) must fetch: the pages holding them in
    every column, the dictionary pages those pages use, the footer and the page index (the
    bytes between the column chunks and the footer that are neither index blocks nor bloom
    filters)."""
    meta = pq.ParquetFile(path).metadata
    footer = 8 + meta.serialized_size
    pages = pqindex.read_metadata(path).pages().to_pylist()
    need, data_end, blooms = footer, 0, 0
    group = meta.row_group(0)
    for c in range(group.num_columns):
        chunk = group.column(c)
        start = (
            chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
        )
        data_end = max(data_end, start + chunk.total_compressed_size)
        mine = [p for p in pages if p["row_group"] == 0 and p["column"] == chunk.path_in_schema]
        chosen = [
            p
            for p in mine
            if any(p["first_row"] <= r < p["first_row"] + p["row_count"] for r in rows)
        ]
        need += sum(p["compressed_size"] for p in chosen)
        if chunk.has_dictionary_page and any(
            page_encoding(path, p["offset"]) in DICTIONARY_ENCODINGS for p in chosen
        ):
            need += mine[0]["offset"] - chunk.dictionary_page_offset
    for column in pqindex.read_metadata(path).columns().to_pylist():
        blooms += column["bloom_filter_length"] or 0
    blocks = sum(ix["length"] for ix in pqindex.list_indexes(path))
    page_index = path.stat().st_size - footer - data_end - blocks - blooms
    assert page_index > 0
    return need + page_index


def check_reads(scan: Any, need: int, kind: str) -> dict[str, int]:
    """The rows are the planted one; the bytes are within the target."""
    ids = scan.to_arrow().column("id").to_pylist()
    m = scan.metrics()
    assert ids == [ROW]
    assert kind in scan.explain()
    assert 0 < m["index_bytes_read"] <= INDEX_BUDGET, m
    assert m["bytes_read"] <= 1.1 * need + INDEX_BUDGET, (m["bytes_read"], need, scan.explain())
    return dict(m)


@pytest.mark.parametrize("case", CASES)
def test_local_lookups_read_what_they_need(files: Files, case: str) -> None:
    c = files.cases[case]
    path = files.dir / f"{c.file}.parquet"
    need = physical_need(path, [ROW])
    pqindex.clear_metadata_cache()
    check_reads(pqindex.scan(path, where=c.where), need, c.kind)  # cold
    check_reads(pqindex.scan(path, where=c.where), need, c.kind)  # footer cached


def test_need_is_what_a_scan_without_indexes_reads_at_best(files: Files) -> None:
    """The referee's own check: reading the row through the sorted ``id`` (the page index
    finds its page, no embedded index is opened) fetches the need and little else."""
    path = files.dir / "lookups.parquet"
    need = physical_need(path, [ROW])
    pqindex.clear_metadata_cache()
    scan = pqindex.scan(path, where=f"id = {ROW}")
    assert scan.to_arrow().column("id").to_pylist() == [ROW]
    m = scan.metrics()
    assert m["index_bytes_read"] == 0
    assert need <= m["bytes_read"] <= 1.1 * need + INDEX_BUDGET


# ---------------------------------------------------------------------------------------------
# On an object store

LATENCY = 0.15


@pytest.fixture(scope="module")
def s3(files: Files) -> Iterator[S3Server]:
    pytest.importorskip("moto.server")
    with s3_server() as server:
        client = server.client()
        client.create_bucket(Bucket=BUCKET)
        for name in ("lookups", "tokens"):
            client.upload_file(str(files.dir / f"{name}.parquet"), BUCKET, f"{name}.parquet")
        yield server


@dataclass
class Timed:
    metrics: dict[str, int]
    round_trips: int
    ids: list[int]


def timed_scan(s3: S3Server, url: str, where: str) -> Timed:
    """A cold scan through the proxy with LATENCY per request. A request sent only once
    another was answered arrives at least LATENCY after it; requests sent together arrive
    within the machine's jitter. Round trips: the longest chain of arrivals that far apart."""
    arrivals: list[float] = []

    def note(_: bytes) -> None:
        arrivals.append(time.monotonic())

    pqindex.clear_metadata_cache()
    s3.proxy.delay, s3.proxy.fault = LATENCY, note
    try:
        scan = pqindex.scan(url, where=where, storage_options=s3.options())
        ids = scan.to_arrow().column("id").to_pylist()
    finally:
        s3.proxy.delay, s3.proxy.fault = 0.0, None
    trips, last = 0, -LATENCY
    for t in sorted(arrivals):
        if t - last >= 0.9 * LATENCY:
            trips += 1
            last = t
    m = dict(scan.metrics())
    assert m["requests"] == len(arrivals)
    return Timed(m, trips, ids)


@pytest.fixture(scope="module")
def baselines(s3: S3Server) -> dict[str, Timed]:
    """Per file, the cold read of the row through the page index of the sorted ``id``."""
    return {
        name: timed_scan(s3, f"s3://{BUCKET}/{name}.parquet", f"id = {ROW}")
        for name in ("lookups", "tokens")
    }


@pytest.mark.parametrize("case", CASES)
def test_s3_lookups_cost_one_round_trip_and_little_index(
    files: Files, s3: S3Server, baselines: dict[str, Timed], case: str
) -> None:
    c = files.cases[case]
    path = files.dir / f"{c.file}.parquet"
    url = f"s3://{BUCKET}/{c.file}.parquet"
    base = baselines[c.file]
    got = timed_scan(s3, url, c.where)
    assert base.ids == got.ids == [ROW]
    assert got.round_trips <= base.round_trips + 1, (got.round_trips, base.round_trips)
    # Cold, both read the same footer, page index and pages: the index adds its part.
    assert got.metrics["bytes_read"] <= base.metrics["bytes_read"] + INDEX_BUDGET, (got, base)
    assert 0 < got.metrics["index_bytes_read"] <= INDEX_BUDGET
    # With the footer cached, the target itself.
    scan = pqindex.scan(url, where=c.where, storage_options=s3.options())
    check_reads(scan, physical_need(path, [ROW]), c.kind)


def test_s3_bytes_agree_with_the_store(files: Files, s3: S3Server) -> None:
    s3.proxy.reset()
    pqindex.clear_metadata_cache()
    scan = pqindex.scan(
        f"s3://{BUCKET}/lookups.parquet",
        where=files.cases["distinct-eq"].where,
        storage_options=s3.options(),
    )
    assert scan.to_arrow().num_rows == 1
    assert scan.metrics()["requests"] == s3.proxy.requests
