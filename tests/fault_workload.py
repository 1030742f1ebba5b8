"""What the fault tests and the soak do to a dataset on the S3 test server, and how each
answer is judged.

A dataset is a few Parquet files with a page index, uploaded under a prefix; the local
copies are the reference. Every operation ends in one outcome: ``ok`` (the answer is
exactly right), ``error:<Class>`` (a typed pqindex error, which is allowed), ``untyped:...``
(any other exception: a bug) or ``wrong`` (rows or an object that are not right: a bug).
Objects are checked by reading them straight from the store (boto3, not through the
proxy): whole, readable by pyarrow, with the reference's rows.
"""

from __future__ import annotations

import io
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROWS_PER_FILE = 10_000

#: SQL for pqindex and the same condition as a pyarrow expression (None: every row).
PREDICATES: list[tuple[str | None, pc.Expression | None]] = [
    (None, None),
    ("id = 1234", pc.field("id") == 1234),
    ("id BETWEEN 5000 AND 5999", (pc.field("id") >= 5000) & (pc.field("id") <= 5999)),
    ("k = 'c' AND v < 100", (pc.field("k") == "c") & (pc.field("v") < 100)),
    ("v IS NULL", pc.field("v").is_null()),
    (
        "id IN (7, 20007, 29999) OR k = 'h'",
        pc.field("id").isin([7, 20007, 29999]) | (pc.field("k") == "h"),
    ),
    ("s = 'row-17321'", pc.field("s") == "row-17321"),
    ("v >= 990 OR id < 50", (pc.field("v") >= 990) | (pc.field("id") < 50)),
]

INDEX_CHOICES: list[Callable[[], Any]] = [
    lambda: [pqindex.BloomIndex("s")],
    lambda: [pqindex.DistinctIndex("k")],
    lambda: [pqindex.BloomIndex("s"), pqindex.DistinctIndex("k")],
]


def make_file_table(n: int, start: int, seed: int) -> pa.Table:
    rng = random.Random(seed)
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "k": pa.array(
                [None if rng.random() < 0.1 else "abcdefgh"[rng.randrange(8)] for _ in ids]
            ),
            "v": pa.array(
                [None if rng.random() < 0.1 else rng.randrange(1000) for _ in ids], pa.int64()
            ),
            "s": pa.array([f"row-{i}" for i in ids]),
        }
    )


@dataclass
class Dataset:
    """Files on the store under ``bucket/prefix`` and their local copies."""

    bucket: str
    prefix: str
    local: Path
    names: list[str]
    table: pa.Table
    by_name: dict[str, pa.Table] = field(default_factory=dict)
    replaced: int = 0

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}/"

    def object_url(self, name: str) -> str:
        return f"s3://{self.bucket}/{self.prefix}/{name}"

    def replacer(self, client: Any) -> Callable[[str], None]:
        """The proxy's ``replace`` fault for this dataset: the object is uploaded again
        from a copy laid out differently (the same rows, another ETag), so references stay
        right while every read planned against the old version meets a new one."""

        def replace(bucket_and_key: str) -> None:
            bucket, _, key = bucket_and_key.partition("/")
            name = key.rsplit("/", 1)[-1]
            if bucket != self.bucket or name not in self.by_name:
                return
            self.replaced += 1
            variant = self.local / f"{name}.{self.replaced % 2}.variant"
            client.upload_file(str(variant), bucket, key)

        return replace

    def reference(self, expr: pc.Expression | None) -> list[tuple[Any, ...]]:
        table = self.table if expr is None else self.table.filter(expr)
        return rows_of(table)


def rows_of(table: pa.Table) -> list[tuple[Any, ...]]:
    """The rows as sorted tuples of (id, k, v, s), whatever the column types."""
    cols = [table.column(c).to_pylist() for c in ("id", "k", "v", "s")]
    return sorted(zip(*cols, strict=True))


def make_dataset(client: Any, bucket: str, prefix: str, local: Path, files: int = 3) -> Dataset:
    """Write ``files`` files locally (small pages, a page index) and upload them."""
    local.mkdir(parents=True, exist_ok=True)
    names, tables = [], {}
    for i in range(files):
        name = f"part-{i}.parquet"
        t = make_file_table(ROWS_PER_FILE, i * ROWS_PER_FILE, seed=i)
        pq.write_table(
            t,
            local / name,
            row_group_size=2_500,
            data_page_size=4096,
            write_page_index=True,
        )
        client.upload_file(str(local / name), bucket, f"{prefix}/{name}")
        for n, rows in enumerate((1_000, 5_000)):
            pq.write_table(t, local / f"{name}.{n}.variant", row_group_size=rows)
        names.append(name)
        tables[name] = t
    table = pa.concat_tables(tables[n] for n in names)
    return Dataset(bucket, prefix, local, names, table, tables)


def typed(e: BaseException) -> bool:
    return isinstance(e, pqindex.PqindexError)


def outcome_of(e: BaseException) -> str:
    name = type(e).__name__
    return f"error:{name}" if typed(e) else f"untyped:{name}: {e}"


@dataclass
class Tally:
    """Outcomes by kind, the slowest call, and the retries scans reported."""

    outcomes: dict[str, int] = field(default_factory=dict)
    #: The first message of each kind of error, to read after a run.
    examples: dict[str, str] = field(default_factory=dict)
    retries: int = 0
    slowest: float = 0.0
    wrong: list[str] = field(default_factory=list)

    def add(self, outcome: str, seconds: float, detail: str = "") -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        if outcome != "ok":
            self.examples.setdefault(outcome, detail[:300])
        self.slowest = max(self.slowest, seconds)
        if outcome == "wrong" or outcome.startswith("untyped"):
            self.wrong.append(f"{outcome} {detail}")

    def merge(self, other: Tally) -> None:
        for k, v in other.outcomes.items():
            self.outcomes[k] = self.outcomes.get(k, 0) + v
        for k, e in other.examples.items():
            self.examples.setdefault(k, e)
        self.retries += other.retries
        self.slowest = max(self.slowest, other.slowest)
        self.wrong.extend(other.wrong)

    @property
    def bad(self) -> int:
        return len(self.wrong)


def checked_scan(ds: Dataset, opts: dict[str, Any], rng: random.Random, tally: Tally) -> None:
    """One scan with a random predicate, its rows compared with the reference."""
    where, expr = rng.choice(PREDICATES)
    started = time.monotonic()
    try:
        scan = pqindex.scan(ds.url, where=where, storage_options=opts)
        got = rows_of(scan.to_arrow())
        tally.retries += scan.metrics()["retries"]
    except Exception as e:
        tally.add(outcome_of(e), time.monotonic() - started, f"scan {where!r}: {e}")
        return
    outcome = "ok" if got == ds.reference(expr) else "wrong"
    tally.add(outcome, time.monotonic() - started, f"scan {where!r}: {len(got)} rows")


def stored_object(client: Any, ds: Dataset, name: str) -> bytes:
    return bytes(client.get_object(Bucket=ds.bucket, Key=f"{ds.prefix}/{name}")["Body"].read())


def indexes_in(data: bytes) -> frozenset[str]:
    """The embedded index locators a file's footer names."""
    meta = pq.ParquetFile(io.BytesIO(data)).metadata.metadata or {}
    return frozenset(k.decode() for k in meta if k.startswith(b"pqindex.index."))


def object_is_whole(client: Any, ds: Dataset, name: str) -> tuple[bool, frozenset[str]]:
    """Whether the stored object reads as the reference's rows; its index locators."""
    data = stored_object(client, ds, name)
    try:
        table = pq.read_table(io.BytesIO(data))
    except Exception:
        return False, frozenset()
    return rows_of(table) == rows_of(ds.by_name[name]), indexes_in(data)


def checked_index_change(
    client: Any,
    ds: Dataset,
    opts: dict[str, Any],
    rng: random.Random,
    tally: Tally,
    sole_writer: bool = True,
) -> None:
    """``add_indexes`` or ``drop_indexes`` on one object; afterwards the stored object must
    be whole, with the reference's rows, and (when no one else writes it) hold indexes
    after an add that succeeded and none after a drop that succeeded."""
    name = rng.choice(ds.names)
    url = ds.object_url(name)
    _, before = object_is_whole(client, ds, name)
    add = rng.random() < 0.6
    started = time.monotonic()
    try:
        if add:
            pqindex.add_indexes(url, rng.choice(INDEX_CHOICES)(), storage_options=opts)
        else:
            pqindex.drop_indexes(url, storage_options=opts)
        outcome = "ok"
        detail = ""
    except Exception as e:
        outcome, detail = outcome_of(e), str(e)
    elapsed = time.monotonic() - started
    whole, after = object_is_whole(client, ds, name)
    if not whole:
        tally.add("wrong", elapsed, f"{'add' if add else 'drop'} left {name} torn")
        return
    if outcome == "ok" and sole_writer and not add and after:
        tally.add("wrong", elapsed, f"drop_indexes succeeded but {name} has {sorted(after)}")
        return
    if outcome == "ok" and sole_writer and add and not after:
        tally.add("wrong", elapsed, f"add_indexes succeeded but {name} has none")
        return
    what = f"{'add' if add else 'drop'} {name} ({len(before)} -> {len(after)})"
    tally.add(outcome, elapsed, f"{what}: {detail}")


def checked_catalog(ds: Dataset, opts: dict[str, Any], rng: random.Random, tally: Tally) -> None:
    """Build (or refresh) the prefix's catalog; then a scan that may use it must be right."""
    started = time.monotonic()
    try:
        root = ds.url.rstrip("/")
        catalog = pqindex.Catalog.open(root, storage_options=opts)
        if catalog is None or rng.random() < 0.5:
            pqindex.Catalog.build(root, ["id", "v"], storage_options=opts)
        else:
            catalog.refresh()
        outcome, detail = "ok", ""
    except Exception as e:
        outcome, detail = outcome_of(e), str(e)
    tally.add(outcome, time.monotonic() - started, f"catalog: {detail}")
    checked_scan(ds, opts, rng, tally)
