"""Writing a DataFrame as Parquet that pqindex prunes well, from inside Spark tasks.

Each task streams its rows through ``mapInArrow`` into the Rust writer (page statistics,
so a page index; bloom filters; pages of a fixed row count). A file is named after the task's
partition, the partition values it holds and the job, and appears by an atomic rename, so a
retried or speculative attempt replaces what an earlier attempt wrote instead of adding a
second copy. The driver writes ``_SUCCESS`` last; a failed job removes its files. On an
object store each file is finished locally and uploaded whole, which is as atomic as a put.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pqindex
from pqindex._native import delete_objects, list_objects, upload
from pqindex.spark._guard import guarded
from pqindex.spark._session import functions, is_connect
from pqindex.spark._storage import is_remote, storage_options_for

#: Spark's and Hive's directory value for a NULL partition value.
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"

_REPORT_SCHEMA = "file string, rows long, bytes long"


def write(
    df: Any,
    path: str | os.PathLike[str],
    *,
    mode: str = "error",
    partition_by: Sequence[str] | None = None,
    sort_within_partitions: Sequence[str] | None = None,
    cluster_by: Sequence[str] | None = None,
    bloom_filter_columns: Sequence[str] | None = None,
    indexes: Sequence[pqindex.IndexDefinition] = (),
    page_row_limit: int | None = 20_000,
    row_group_size: int = 1024 * 1024,
    compression: str = "zstd",
    storage_options: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Write ``df`` under ``path`` (hive-style ``key=value`` directories for
    ``partition_by``), rows sorted within each task by ``sort_within_partitions``, or
    clustered by several columns together with ``cluster_by`` (a Z-order: rows are
    range-partitioned and sorted by the interleaved bits of each column's position between
    its minimum and maximum, so every one of those columns keeps tight page and row-group
    ranges). Each file gets the page index, Parquet bloom filters on
    ``bloom_filter_columns`` and the embedded ``indexes`` before it appears. Returns one
    record per file written: ``file``, ``rows``, ``bytes``.

    ``mode`` is ``"error"`` (refuse a non-empty directory) or ``"overwrite"``.

    An object-store ``path`` (``s3a://bucket/prefix``) is written by the tasks themselves,
    each file uploaded whole once finished, so Spark needs no s3a connector; credentials come
    from ``storage_options`` or the session's ``fs.s3a.*`` settings."""
    if mode not in ("error", "overwrite"):
        raise pqindex.InvalidArgumentError(f"mode must be 'error' or 'overwrite', not {mode!r}")
    remote = is_remote([os.fspath(path)])
    store = (
        _ObjectPrefix(
            os.fspath(path), storage_options_for(spark_of(df), [os.fspath(path)], storage_options)
        )
        if remote
        else None
    )
    root = store.root if store is not None else os.path.abspath(os.fspath(path))
    if store is not None:
        existing = store.files()
        if existing:
            if mode == "error":
                raise pqindex.InvalidArgumentError(
                    f"{root} exists and is not empty; pass mode='overwrite' to replace it"
                )
            store.delete(existing)
    else:
        if os.path.isdir(root) and os.listdir(root):
            if mode == "error":
                raise pqindex.InvalidArgumentError(
                    f"{root} exists and is not empty; pass mode='overwrite' to replace it"
                )
            shutil.rmtree(root)
        os.makedirs(root, exist_ok=True)

    keys = list(partition_by or [])
    sort = list(sort_within_partitions or [])
    cluster = list(cluster_by or [])
    unknown = [c for c in keys + sort + cluster if c not in df.columns]
    if unknown:
        raise pqindex.InvalidArgumentError(f"unknown columns {unknown} (columns: {df.columns})")
    if cluster and sort:
        raise pqindex.InvalidArgumentError("give cluster_by or sort_within_partitions, not both")
    if cluster:
        df = _z_ordered(df, cluster, keys)
    elif keys or sort:
        df = df.sortWithinPartitions(*keys, *sort)
    job = uuid.uuid4().hex[:12]
    task = _WriteTask(
        root=root,
        job=job,
        partition_by=keys,
        storage_options=store.options if store is not None else None,
        remote=store is not None,
        options={
            "page_row_limit": page_row_limit,
            "row_group_size": row_group_size,
            "bloom_filter_columns": list(bloom_filter_columns or []),
            "indexes": list(indexes),
            "compression": compression,
        },
    )
    try:
        report = [r.asDict() for r in df.mapInArrow(guarded(task), _REPORT_SCHEMA).collect()]
    except BaseException:
        if store is not None:
            store.delete([f for f in store.files() if job in f])
        else:
            _remove_job_files(root, job)
        raise
    if store is None:
        # Attempts killed mid-file (a lost executor) leave hidden temporaries named after
        # the job's files; their retries wrote the files themselves.
        _remove_job_files(root, job, hidden_only=True)
    if store is not None:
        store.put_empty("_SUCCESS")
    else:
        with open(os.path.join(root, "_SUCCESS"), "wb"):
            pass
    return sorted(report, key=lambda r: str(r["file"]))


#: Bits of each column's position in the Z-order value (at most 4 columns fit in 63 bits).
_Z_BITS = 15
_Z_COLUMN = "__pqindex_z"


def _z_ordered(df: Any, columns: list[str], keys: list[str]) -> Any:
    """``df`` range-partitioned and sorted by a Z-order of ``columns``: each column's value
    is placed on 2**15 even steps between its minimum and maximum, and the steps' bits are
    interleaved. Numeric, date and timestamp columns only."""
    from pyspark.sql import types as T

    F = functions(df.sparkSession)

    if len(columns) > 4:
        raise pqindex.InvalidArgumentError("cluster_by takes at most 4 columns")
    types = {f.name: f.dataType for f in df.schema.fields}
    numeric: list[Any] = []
    for c in columns:
        t = types[c]
        if isinstance(t, T.DateType):
            numeric.append(F.unix_date(F.col(c)).cast("double"))
        elif isinstance(t, (T.TimestampType, T.TimestampNTZType)):
            numeric.append(F.unix_micros(F.col(c).cast("timestamp")).cast("double"))
        elif isinstance(t, T.NumericType):
            numeric.append(F.col(c).cast("double"))
        else:
            raise pqindex.UnsupportedError(
                f"cluster_by needs numeric, date or timestamp columns; {c} is {t.simpleString()}"
            )
    bounds = df.agg(*[F.min(e) for e in numeric], *[F.max(e) for e in numeric]).first()
    steps = (1 << _Z_BITS) - 1
    positions = []
    for i, e in enumerate(numeric):
        lo, hi = bounds[i], bounds[len(numeric) + i]
        if lo is None or hi is None or hi <= lo:
            positions.append(F.lit(0).cast("long"))
            continue
        scaled = F.floor((e - F.lit(lo)) / F.lit(hi - lo) * F.lit(steps))
        positions.append(F.coalesce(scaled.cast("long"), F.lit(0).cast("long")))
    z = F.lit(0).cast("long")
    for bit in range(_Z_BITS):
        for j, p in enumerate(positions):
            taken = F.shiftleft(F.shiftright(p, bit).bitwiseAND(1), bit * len(positions) + j)
            z = z.bitwiseOR(taken)
    with_z = df.withColumn(_Z_COLUMN, z)
    if is_connect(df.sparkSession):
        # No RDD to ask for the partition count: Spark picks it (and adaptive execution
        # may merge small ranges).
        ranged = with_z.repartitionByRange(_Z_COLUMN)
    else:
        ranged = with_z.repartitionByRange(max(1, df.rdd.getNumPartitions()), _Z_COLUMN)
    return ranged.sortWithinPartitions(*keys, _Z_COLUMN).drop(_Z_COLUMN)


def spark_of(df: Any) -> Any:
    return df.sparkSession


@dataclass
class _ObjectPrefix:
    """The object-store prefix a write goes to."""

    url: str
    options: dict[str, Any] | None

    @property
    def root(self) -> str:
        return self.url.rstrip("/")

    def files(self) -> list[str]:
        return list_objects(self.root, storage_options=self.options)

    def delete(self, urls: list[str]) -> None:
        delete_objects(urls, storage_options=self.options)

    def put_empty(self, name: str) -> None:
        with tempfile.TemporaryDirectory(prefix="pqindex-write-") as scratch:
            marker = os.path.join(scratch, name)
            open(marker, "wb").close()
            upload(marker, f"{self.root}/{name}", storage_options=self.options)


def _remove_job_files(root: str, job: str, hidden_only: bool = False) -> None:
    for directory, _, names in os.walk(root):
        for name in names:
            if job in name and (not hidden_only or name.startswith(".")):
                os.remove(os.path.join(directory, name))


def _partition_dir(keys: Sequence[str], values: Sequence[Any]) -> str:
    """``k1=v1/k2=v2`` as Spark writes it: values as text, escaped like Spark escapes path
    names, NULL as the Hive default partition."""
    parts = []
    for k, v in zip(keys, values, strict=True):
        text = NULL_PARTITION if v is None else _partition_text(v)
        parts.append(f"{quote(k, safe='')}={quote(text, safe=' ')}")
    return "/".join(parts)


def _partition_text(v: Any) -> str:
    import datetime

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, datetime.datetime):
        return v.isoformat(sep=" ")
    return str(v)


@dataclass
class _WriteTask:
    """The function ``mapInArrow`` runs in each task."""

    root: str
    job: str
    partition_by: list[str]
    options: dict[str, Any]
    storage_options: dict[str, Any] | None = None
    remote: bool = False

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        from pyspark import TaskContext

        context = TaskContext.get()
        task = context.partitionId() if context is not None else 0
        report: dict[str, list[Any]] = {"file": [], "rows": [], "bytes": []}
        for values, run in _runs(batches, self.partition_by):
            relative = _partition_dir(self.partition_by, values)
            index = len(report["file"])
            name = f"part-{task:05d}-{index:03d}-{self.job}.parquet"
            if self.remote:
                target = "/".join(p for p in (self.root, relative, name) if p)
            else:
                directory = os.path.join(self.root, relative)
                os.makedirs(directory, exist_ok=True)
                target = os.path.join(directory, name)
            rows = [0]

            def counted(run: Any = run, rows: list[int] = rows) -> Iterator[Any]:
                for batch in run:
                    rows[0] += batch.num_rows
                    yield batch

            reader = pa.RecordBatchReader.from_batches(run.schema, counted())
            if self.remote:
                # Finished locally, then uploaded whole: the object appears complete.
                with tempfile.TemporaryDirectory(prefix="pqindex-task-") as scratch:
                    local = os.path.join(scratch, name)
                    pqindex.write(reader, local, **self.options)
                    size = os.stat(local).st_size
                    upload(local, target, storage_options=self.storage_options)
            else:
                pqindex.write(reader, target, **self.options)
                size = os.stat(target).st_size
            report["file"].append(target)
            report["rows"].append(rows[0])
            report["bytes"].append(size)
        yield pa.RecordBatch.from_pydict(
            report,
            schema=pa.schema([("file", pa.string()), ("rows", pa.int64()), ("bytes", pa.int64())]),
        )


def _runs(batches: Iterator[Any], keys: list[str]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Consecutive rows with equal partition values, each as a RecordBatchReader without the
    partition columns. Rows arrive sorted by the keys, so each value comes once per task."""
    import pyarrow as pa

    pending = _split(batches, keys)
    first = next(pending, None)
    while first is not None:
        values, batch = first
        schema = batch.drop_columns(keys).schema if keys else batch.schema
        following: list[tuple[tuple[Any, ...], Any] | None] = [None]

        def run(
            values: tuple[Any, ...] = values,
            batch: Any = batch,
            following: list[tuple[tuple[Any, ...], Any] | None] = following,
        ) -> Iterator[Any]:
            yield batch.drop_columns(keys) if keys else batch
            for item in pending:
                if item[0] != values:
                    following[0] = item
                    return
                yield item[1].drop_columns(keys) if keys else item[1]

        reader = pa.RecordBatchReader.from_batches(schema, run())
        yield values, reader
        # The writer consumed the run; carry on from the first batch of the next one.
        first = following[0]


def _split(batches: Iterator[Any], keys: list[str]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Batches cut where the partition values change, each with its values."""
    for batch in batches:
        if batch.num_rows == 0:
            continue
        if not keys:
            yield (), batch
            continue
        columns = [batch.column(k).to_pylist() for k in keys]
        start = 0
        for i in range(1, batch.num_rows + 1):
            if i == batch.num_rows or any(c[i] != c[start] for c in columns):
                yield tuple(c[start] for c in columns), batch.slice(start, i - start)
                start = i
