"""Write the fuzz targets' fixtures and seed corpora (``fuzz/fixtures/``, ``fuzz/corpus/``).

Every seed is small (a few KB) and real: one table written by pyarrow, arrow-rs
(``pqindex.write``), DuckDB and Spark, with page indexes, Parquet bloom filters and
pqindex's embedded indexes of every kind (``pqindex.add_indexes``); the payloads, blocks
and locators of those indexes; catalogs and units tables pqindex made of them; predicates.

    python scripts/fuzz_seeds.py [--no-spark]

The targets and `rust/core/src/fuzzing.rs` rely on the table's columns (``PREDICATES``
there names them) and on ``fuzz/fixtures/data.parquet`` being the file the payload seeds
were built over (an index whose units do not fit its file is ignored, never decoded).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import io
import random
import shutil
import struct
import sys
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pqindex
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
FUZZ = ROOT / "fuzz"
sys.path.insert(0, str(ROOT / "tests"))

ROWS = 120
ROW_GROUP = 40
PAGE_ROWS = 10
#: As in fuzzing.rs: the column an index seed's first byte picks, and the granularities.
INDEX_COLUMNS = ["id", "name", "score", "day", "tag", "amount"]
GRANULARITIES = ["file", "row_group", "page"]
FIXTURE = "data.parquet"
HEADER_LEN, CHECKSUM_LEN = 16, 4


def table() -> pa.Table:
    """The table every seed file holds: each type the predicates use, some nulls, ids
    shuffled so that no index is trivially sorted."""
    rng = random.Random(22)
    ids = list(range(ROWS))
    rng.shuffle(ids)
    start = dt.datetime(2024, 1, 1)
    return pa.table(
        {
            "id": pa.array([None if i % 37 == 5 else i for i in ids], pa.int64()),
            "name": pa.array([None if i % 41 == 3 else f"n{i}" for i in ids], pa.string()),
            "tag": pa.array([["red", "green", "blue"][i % 3] for i in ids], pa.string()),
            "score": pa.array([rng.random() for _ in ids], pa.float64()),
            "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 200) for i in ids]),
            "ts": pa.array([start + dt.timedelta(minutes=7 * i) for i in ids], pa.timestamp("us")),
            "amount": pa.array([Decimal(i * 7 % 1000) / 100 for i in ids], pa.decimal128(9, 2)),
            "flag": pa.array([None if i % 11 == 0 else i % 2 == 0 for i in ids], pa.bool_()),
        }
    )


#: Predicates beyond the generator's: functions, casts, patterns, time, nesting.
EXTRA_PREDICATES = [
    "id = 42",
    "id IN (7, 150, 299) OR name = 'n12'",
    "tag = 'green' AND score > 0.5",
    "name LIKE '%12%' AND name NOT ILIKE 'N1_'",
    "starts_with(name, 'n1') OR ends_with(tag, 'en') OR contains(name, '99')",
    "regexp_matches(name, '^n[0-9]+$', 'i')",
    "day >= DATE '2024-03-01' OR amount < 10.5",
    "ts < TIMESTAMP '2024-01-02 00:00:00' OR flag IS NULL",
    "ts >= now() - INTERVAL 30 DAY AND day < current_date",
    "CAST(id AS DOUBLE) BETWEEN 1e1 AND 2.5e2",
    "NOT (id <> 5) AND NOT flag",
    "amount = CAST('1.25' AS DECIMAL(9,2)) OR score IS NOT DISTINCT FROM NULL",
    '"ID" = 3 OR "Name" IN (\'n1\', NULL)',
]


def index_definitions() -> list[Any]:
    """An index of every kind, on the columns the seeds' predicates ask about."""
    return [
        pqindex.DistinctIndex("id", granularity="page"),
        pqindex.DistinctIndex("tag", granularity="row_group"),
        pqindex.BloomIndex("name", granularity="row_group"),
        pqindex.MinMaxIndex("score"),
        pqindex.AggregateIndex("amount", granularity="row_group"),
        pqindex.NgramIndex("name", granularity="row_group", fpp=0.1),
        pqindex.TokenIndex("name", granularity="file", fpp=0.1),
    ]


def write_pyarrow(t: pa.Table, path: Path, bloom: bool = True) -> None:
    pq.write_table(
        t,
        path,
        row_group_size=ROW_GROUP,
        max_rows_per_page=PAGE_ROWS,
        write_page_index=True,
        compression="snappy",
        bloom_filter_options={"id": {"ndv": ROWS, "fpp": 0.05}} if bloom else None,
    )


def write_arrow_rs(t: pa.Table, path: Path) -> None:
    pqindex.write(
        t,
        path,
        row_group_size=ROW_GROUP,
        page_row_limit=PAGE_ROWS,
        bloom_filter_columns=["id", "name"],
        compression="zstd",
    )


def write_duckdb(t: pa.Table, path: Path) -> None:
    con = duckdb.connect()
    con.register("t", t)
    con.execute(f"COPY t TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE {ROW_GROUP})")
    con.close()


def write_spark(t: pa.Table, path: Path) -> None:
    """A local Spark session writes the table (parquet-mr: column indexes, blooms on id)."""
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .appName("fuzz-seeds")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "512m")
        .getOrCreate()
    )
    try:
        df = spark.createDataFrame(t.to_pandas()).coalesce(1)
        out = Path(tempfile.mkdtemp(prefix="fuzz-spark-"))
        (
            df.write.mode("overwrite")
            .option("parquet.block.size", 4096)
            .option("parquet.page.row.count.limit", PAGE_ROWS)
            .option("parquet.page.size", 1024)
            .option("parquet.bloom.filter.enabled#id", "true")
            .option("parquet.bloom.filter.expected.ndv#id", ROWS)
            .parquet(str(out / "t"))
        )
        part = next((out / "t").glob("part-*.parquet"))
        shutil.copy(part, path)
        shutil.rmtree(out)
    finally:
        spark.stop()


def page_start_seeds(work: Path) -> None:
    """Files of the table's columns in 1,500-row pages, ids in order: a lookup's rows at the
    start of their pages, which are read only that far (``read::page_prefix``). Pages of
    version 1 and Snappy, and of version 2 and Zstandard; numbers and names plain."""
    n = 1_500
    rng = random.Random(23)
    start = dt.datetime(2024, 1, 1)
    t = pa.table(
        {
            "id": pa.array([None if i % 37 == 5 else i for i in range(n)], pa.int64()),
            "name": pa.array([None if i % 41 == 3 else f"n{i}" for i in range(n)], pa.string()),
            "tag": pa.array([["red", "green", "blue"][i % 3] for i in range(n)], pa.string()),
            "score": pa.array([rng.random() for _ in range(n)], pa.float64()),
            "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 200) for i in range(n)]),
            "ts": pa.array(
                [start + dt.timedelta(minutes=7 * i) for i in range(n)], pa.timestamp("us")
            ),
            "amount": pa.array(
                [Decimal(i * 7 % 1000) / 100 for i in range(n)], pa.decimal128(9, 2)
            ),
            "flag": pa.array([None if i % 11 == 0 else i % 2 == 0 for i in range(n)], pa.bool_()),
        }
    )
    for version, codec in (("1.0", "snappy"), ("2.0", "zstd")):
        path = work / f"page-starts-v{version}-{codec}.parquet"
        pq.write_table(
            t,
            path,
            compression=codec,
            data_page_version=version,
            data_page_size=1 << 20,
            use_dictionary=["id", "tag", "day", "flag"],
            write_page_index=True,
        )
        save("scan_file", path.read_bytes(), path.stem)


def snappy_seeds() -> None:
    """Snappy streams for ``snappy_start``, each after the two bytes saying how much of it
    (in eights of a byte) is wanted: pages of numbers and of strings as Snappy's reference
    compressor (pyarrow's) writes them, a start of two thirds wanted; hand-made elements of
    every kind (runs repeating 1 to 7 bytes, a long literal, copies with 1-, 2- and 4-byte
    offsets); and a second 64 KiB block copying from the first, where no window may start."""

    def varint(n: int) -> bytes:
        out = bytearray()
        while n >= 0x80:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        out.append(n)
        return bytes(out)

    def seed(want: int, stream: bytes) -> None:
        save("snappy_start", struct.pack("<H", want // 8) + stream)

    rng = random.Random(5)
    numbers = b"".join(struct.pack("<q", rng.randrange(1 << 21)) for _ in range(3000))
    keys = b"".join(struct.pack("<q", 1000 + i // 3) for i in range(3000))
    words = ["carefully", "final", "deposits", "above", "the", "slyly", "ironic"]
    texts = [" ".join(rng.choices(words, k=rng.randrange(2, 6))).encode() for _ in range(1500)]
    strings = b"".join(struct.pack("<i", len(t)) + t for t in texts)
    for raw in (numbers, keys, strings):
        seed(len(raw) * 2 // 3, pa.compress(raw, codec="snappy", asbytes=True))
    elements, n = bytearray([59 << 2]) + bytes(range(60)), 60
    for period in range(1, 8):
        elements += bytes([(63 << 2) | 2]) + struct.pack("<H", period)
        n += 64
    elements += bytes([61 << 2]) + struct.pack("<H", 199) + bytes(range(200))
    elements += bytes([(1 << 5) | (7 << 2) | 1, 0x10])  # 11 bytes from 272 back
    elements += bytes([(39 << 2) | 3]) + struct.pack("<I", 300)  # 40 bytes from 300 back
    n += 200 + 11 + 40
    seed(n, varint(n) + bytes(elements))
    elements, n = bytearray([0, ord("z")]), 1
    elements += bytes([(63 << 2) | 2, 1, 0]) * 1023 + bytes([(62 << 2) | 2, 1, 0])
    elements += bytes([(63 << 2) | 3, 0, 0, 1, 0]) * 64  # 64 bytes from 65,536 back
    n += 1023 * 64 + 63 + 64 * 64
    seed(n, varint(n) + bytes(elements))


def save(target: str, data: bytes, name: str | None = None) -> None:
    d = FUZZ / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    name = name or hashlib.sha1(data).hexdigest()[:16]
    (d / name).write_bytes(data)


def bloom_ranges(path: Path) -> list[tuple[int, int]]:
    """(offset, length) of each Parquet bloom filter of ``path``, as DuckDB reports them
    (header and bitset; a writer that leaves the length out gets the next 4 KB)."""
    rows = duckdb.sql(
        f"SELECT bloom_filter_offset, bloom_filter_length FROM parquet_metadata('{path}') "
        "WHERE bloom_filter_offset IS NOT NULL"
    ).fetchall()
    return [(o, length or 4096) for o, length in rows]


def blocks(path: Path) -> list[tuple[dict[str, Any], bytes]]:
    """Each embedded index of ``path``: its locator and its block."""
    data = path.read_bytes()
    out = []
    for loc in pqindex.read_metadata(path).indexes():
        if loc.get("error"):
            continue
        out.append((loc, data[loc["offset"] : loc["offset"] + loc["length"]]))
    return out


def index_seeds(fixture: Path, work: Path) -> None:
    """Payloads (after the pick byte), whole blocks and locators of every kind, each built
    over the fixture at each granularity the kind takes, on the columns it suits."""
    columns_for = {
        "distinct": ["id", "tag", "day"],
        "bloom": ["name", "id", "amount"],
        "hll": ["id", "name"],
        "page_minmax": ["score", "id", "day"],
        "aggregates": ["amount", "score", "id"],
        "ngram": ["name", "tag"],
        "token": ["name"],
    }
    for kind in pqindex._native.index_kinds():
        name, cls = kind["name"], getattr(pqindex, kind["class_name"])
        for column in columns_for[name]:
            for g in kind["granularities"]:
                copy = work / f"{name}-{column}-{g}.parquet"
                shutil.copy(fixture, copy)
                args = {"granularity": g} if len(kind["granularities"]) > 1 else {}
                pqindex.add_indexes(copy, [cls(column, **args)])
                for loc, block in blocks(copy):
                    pick = GRANULARITIES.index(loc["granularity"]) * len(INDEX_COLUMNS)
                    pick += INDEX_COLUMNS.index(column)
                    payload = block[HEADER_LEN:-CHECKSUM_LEN]
                    save(f"index_{name.removeprefix('page_')}", bytes([pick]) + payload)
                    if g == kind["granularities"][0]:
                        save("container", block)
                copy.unlink()


def catalog_seeds(fixture: Path, work: Path) -> None:
    """Catalogs of a dataset holding the fixture: default columns, and chosen ones with
    blooms."""
    for i, (columns, bloom) in enumerate([((), None), (("id", "name", "tag"), ("id", "name"))]):
        root = work / f"catalog{i}"
        root.mkdir()
        shutil.copy(fixture, root / FIXTURE)
        pqindex.Catalog.build(root, list(columns), bloom=list(bloom) if bloom else None)
        current = (root / "_pqindex" / "CURRENT").read_text().strip()
        save("catalog", (root / "_pqindex" / current).read_bytes())


def ipc(t: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return sink.getvalue()


def units_seeds(fixture: Path, work: Path) -> None:
    """Units tables of scans of the fixture (paths name it), loose and hive-partitioned."""
    loose = work / "units"
    loose.mkdir()
    shutil.copy(fixture, loose / FIXTURE)
    part = work / "units_hive" / "p=3"
    part.mkdir(parents=True)
    shutil.copy(fixture, part / FIXTURE)
    sources = [(loose / FIXTURE, w) for w in (None, "id = 42", "id BETWEEN 100 AND 140")]
    sources.append((work / "units_hive", "p = 3 AND name LIKE '%12%'"))
    for source, where in sources:
        units = pqindex.scan(str(source), where).units()
        save("units", ipc(units))


def predicate_seeds(t: pa.Table) -> None:
    from predicates import PredicateGenerator

    gen = PredicateGenerator(t, seed=22)
    texts = EXTRA_PREDICATES + [gen.generate().sql for _ in range(40)]
    for text in texts:
        save("predicate", text.encode())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark-written seed")
    args = parser.parse_args()
    for d in ("corpus", "fixtures"):
        shutil.rmtree(FUZZ / d, ignore_errors=True)
    (FUZZ / "fixtures").mkdir(parents=True)
    t = table()
    fixture = FUZZ / "fixtures" / FIXTURE
    write_pyarrow(t, fixture, bloom=False)
    indexed = FUZZ / "fixtures" / "indexed.parquet"
    shutil.copy(fixture, indexed)
    pqindex.add_indexes(indexed, index_definitions())
    with tempfile.TemporaryDirectory(prefix="fuzz-seeds-") as tmp:
        work = Path(tmp)
        writers = {
            "pyarrow": write_pyarrow,
            "arrow_rs": write_arrow_rs,
            "duckdb": write_duckdb,
        }
        if not args.no_spark:
            writers["spark"] = write_spark
        for name, write in writers.items():
            plain = work / f"{name}.parquet"
            write(t, plain)
            with_indexes = work / f"{name}-indexed.parquet"
            shutil.copy(plain, with_indexes)
            pqindex.add_indexes(with_indexes, index_definitions())
            for f in (plain, with_indexes):
                save("scan_file", f.read_bytes(), f.stem)
            save("footer", plain.read_bytes(), plain.stem)
            md = pqindex.read_metadata(plain)
            data = plain.read_bytes()
            pages = md.pages().to_pylist()
            for p in pages[:: max(1, len(pages) // 6)]:
                save("page_header", data[p["offset"] : p["offset"] + 64])
            for offset, length in bloom_ranges(plain):
                save("bloom", data[offset : offset + length])
        save("footer", indexed.read_bytes(), "indexed")
        for key, text in pqindex.read_metadata(indexed).key_value_metadata().items():
            if key.startswith("pqindex.index."):
                save("locator", text.encode())
        page_start_seeds(work)
        snappy_seeds()
        index_seeds(fixture, work)
        catalog_seeds(fixture, work)
        units_seeds(fixture, work)
    predicate_seeds(t)
    total = sum(f.stat().st_size for f in (FUZZ / "corpus").rglob("*") if f.is_file())
    counts = {d.name: len(list(d.iterdir())) for d in sorted((FUZZ / "corpus").iterdir())}
    print(f"{sum(counts.values())} seeds, {total} bytes: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
