"""Indexed reads in Spark: plan on the driver with the Rust core, read the selected pages in
the executors with ``mapInArrow``, and let Spark apply its own condition last.

The driver lets Spark parse and analyse ``where`` over ``spark.read.parquet(source)``, turns
the filters Spark would push into a Parquet scan into a pqindex predicate (which may only
widen), and plans files, row groups and pages with it. The plan's units (file identity, row
group, row ranges) are grouped into partitions of about equal fetched bytes, keeping each
file's units together so an executor reads each footer once. Each partition carries its
units as a small Arrow IPC blob; executors rebuild the scan from it and stream the rows,
failing the task if a file changed since planning. Spark's own condition is then applied to
those rows, so results are exactly Spark's whatever the translation could express.

Object-store sources (``s3a://``, ``s3://``, ``gs://``, ...) are read by pqindex alone, on
the driver and in executors, so Spark needs no s3a connector: the schema comes from pqindex,
a SQL ``where`` is pushed as written, and credentials come from ``storage_options`` or the
session's ``fs.s3a.*`` settings.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pqindex
from pqindex.spark._arrow import arrow_schema, conform
from pqindex.spark._filters import pushed_predicate
from pqindex.spark._storage import is_remote, storage_options_for

#: Plans that fetch less than this (estimated compressed bytes of the selected pages) are
#: read on the driver and handed to Spark with ``createDataFrame``: below it, starting a job
#: costs more than the read. Measured in benches/spark_threshold.py (see benches/README.md).
DRIVER_READ_BYTES = 4 * 1024 * 1024


def _metrics_param() -> Any:
    from pyspark.accumulators import AccumulatorParam

    class DictSum(AccumulatorParam):  # type: ignore[type-arg]
        def zero(self, value: dict[str, int]) -> dict[str, int]:
            return {}

        def addInPlace(self, a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
            for k, v in b.items():
                a[k] = a.get(k, 0) + v
            return a

    return DictSum()


def _paths(source: Any) -> list[str]:
    import os

    if isinstance(source, (str, os.PathLike)):
        return [os.fspath(source)]
    return [os.fspath(p) for p in source]


class SparkScan:
    """A pqindex plan of a Spark read; ``to_df()`` gives the DataFrame."""

    def __init__(
        self,
        spark: Any,
        source: Any,
        where: Any = None,
        columns: Sequence[str] | None = None,
        *,
        batch_size: int = 65536,
        driver_read_bytes: int = DRIVER_READ_BYTES,
        partitions: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        self._spark = spark
        self._paths = _paths(source)
        self._storage_options = storage_options_for(spark, self._paths, storage_options)
        remote = is_remote(self._paths)
        probe: pqindex.Scan | None = None
        if remote:
            # Spark's own reader may lack an s3a connector here: the schema comes from a
            # pqindex plan of every column, with a SQL `where` pushed as written (so it
            # prunes as the real plan will, and is that plan when every column is read).
            import pyarrow as pa
            from pyspark.sql.pandas.types import from_arrow_schema

            self.predicate = where if isinstance(where, str) else None
            try:
                probe = self._scan(None, batch_size)
            except (pqindex.PredicateError, pqindex.UnsupportedError):
                # SQL text pqindex does not read the way Spark does: Spark's condition alone.
                self.predicate = None
                probe = self._scan(None, batch_size)
            base = spark.createDataFrame([], from_arrow_schema(pa.schema(probe)))
        else:
            base = spark.read.parquet(*self._paths)
        filtered = base.where(where) if where is not None else base
        self._where = where
        self._columns = list(columns) if columns is not None else list(base.columns)
        self._output = _selected_schema(base, self._columns)
        # Columns the final Spark filter needs, read too and dropped after it.
        needed = list(self._output.fieldNames())
        for name in _referenced_columns(filtered) if where is not None else []:
            if name not in needed:
                needed.append(name)
        self._read_schema = (
            self._output if needed == self._columns else _selected_schema(base, needed)
        )
        if probe is not None and needed == base.columns:
            self._plan = probe
        elif remote:
            self._plan = self._scan(needed, batch_size)
        else:
            self.predicate = pushed_predicate(spark, filtered) if where is not None else None
            self._plan = self._scan(needed, batch_size)
        self._units = self._plan.units()
        self.selected_bytes = int(sum(self._units.column("selected_bytes").to_pylist()))
        self.on_driver = self.selected_bytes < driver_read_bytes
        self._partitions = partitions
        self._batch_size = batch_size
        self._accumulator: Any = None

    def _scan(self, columns: list[str] | None, batch_size: int) -> pqindex.Scan:
        return pqindex.scan(
            self._paths,
            where=self.predicate,
            columns=columns,
            batch_size=batch_size,
            storage_options=self._storage_options,
        )

    def to_df(self) -> Any:
        """The DataFrame of the matching rows (built once; reading happens on actions)."""
        spark = self._spark
        target = arrow_schema(self._read_schema)
        if self._units.num_rows == 0:
            df = spark.createDataFrame([], self._read_schema)
        elif self.on_driver:
            import pyarrow as pa

            batches = [conform(b, target) for b in self._plan.to_arrow().to_batches()]
            if batches:
                # The Spark schema says what Arrow cannot: a naive timestamp is TIMESTAMP_NTZ.
                table = pa.Table.from_batches(batches, schema=target)
                df = spark.createDataFrame(table, schema=self._read_schema)
            else:
                df = spark.createDataFrame([], self._read_schema)
        else:
            df = self._distributed(target)
        if self._where is not None:
            df = df.where(self._where)
        if self._read_schema is self._output:
            return df
        return df.select(*self._output.fieldNames())

    def _distributed(self, target: Any) -> Any:
        spark = self._spark
        sc = spark.sparkContext
        groups = _balanced_groups(
            self._units, self._partitions or max(1, sc.defaultParallelism * 2)
        )
        blobs = [(i, _ipc_bytes(self._units.take(g))) for i, g in enumerate(groups)]
        self._accumulator = sc.accumulator({}, _metrics_param())
        read = _ReadUnits(
            catalog=self._plan.catalog_root,
            storage_options=self._storage_options,
            now_ns=self._plan.now_ns,
            where=self.predicate,
            columns=list(self._read_schema.fieldNames()),
            batch_size=self._batch_size,
            target=target,
            accumulator=self._accumulator,
        )
        plan_df = spark.createDataFrame(sc.parallelize(blobs, len(blobs)), "part int, units binary")
        return plan_df.mapInArrow(read, self._read_schema)

    def explain(self) -> str:
        """The driver's plan, the pushed predicate, where rows are read, and what executors
        fetched so far."""
        lines = [
            "pqindex Spark read",
            f"  spark condition: {self._where!r}",
            f"  pushed to pqindex: {self.predicate or '(nothing)'}",
            f"  read {'on the driver' if self.on_driver else 'in executors'}: "
            f"{self._units.num_rows} units, ~{self.selected_bytes} bytes of selected pages",
        ]
        executors = self.executor_metrics()
        if executors:
            lines.append(
                "  executors fetched: "
                + ", ".join(
                    f"{k}={executors.get(k, 0)}"
                    for k in ("bytes_read", "pages_read", "rows_scanned", "rows_matched")
                )
            )
        return "\n".join(lines) + "\n" + self._plan.explain()

    def executor_metrics(self) -> dict[str, int]:
        """Read counters summed over the executors' tasks (after an action ran)."""
        if self._accumulator is None:
            return {}
        return dict(self._accumulator.value)

    def metrics(self) -> dict[str, int]:
        """Planning counters, and reading counters from wherever the rows were read.
        ``bytes_read`` counts the driver's planning reads plus the executors' reads."""
        plan = self._plan.metrics()
        executors = self.executor_metrics()
        out = dict(plan)
        for key in (
            "pages_read",
            "dictionary_pages_read",
            "dictionary_pages_skipped",
            "rows_scanned",
            "rows_matched",
        ):
            out[key] = plan.get(key, 0) + executors.get(key, 0)
        out["bytes_read"] = plan["bytes_read"] + executors.get("bytes_read", 0)
        out["executor_bytes_read"] = executors.get("bytes_read", 0)
        out["selected_bytes"] = self.selected_bytes
        return out


@dataclass
class _ReadUnits:
    """The function ``mapInArrow`` runs in executors: one row per group of units."""

    catalog: str | None
    now_ns: int
    where: str | None
    columns: list[str]
    batch_size: int
    target: Any
    accumulator: Any
    storage_options: dict[str, Any] | None = None

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from pqindex._native import read_units

        for batch in batches:
            for blob in batch.column("units").to_pylist():
                units = pa.ipc.open_stream(blob).read_all()
                scan = read_units(
                    units,
                    now_ns=self.now_ns,
                    where=self.where,
                    columns=self.columns,
                    batch_size=self.batch_size,
                    catalog=self.catalog,
                    storage_options=self.storage_options,
                )
                for out in pa.RecordBatchReader.from_stream(scan):
                    yield conform(out, self.target)
                m = scan.metrics()
                self.accumulator.add(
                    {
                        k: m[k]
                        for k in (
                            "bytes_read",
                            "requests",
                            "pages_read",
                            "dictionary_pages_read",
                            "dictionary_pages_skipped",
                            "rows_scanned",
                            "rows_matched",
                            "footers_read",
                            "footer_cache_hits",
                        )
                    }
                )


def _ipc_bytes(table: Any) -> bytes:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def _balanced_groups(units: Any, partitions: int) -> list[list[int]]:
    """Consecutive runs of unit indices (plan order keeps a file's units together) of about
    ``total / partitions`` estimated bytes each."""
    sizes = [max(1, int(b)) for b in units.column("selected_bytes").to_pylist()]
    if not sizes:
        return []
    parts = max(1, min(partitions, len(sizes)))
    target = math.ceil(sum(sizes) / parts)
    groups: list[list[int]] = [[]]
    filled = 0
    for i, size in enumerate(sizes):
        if groups[-1] and filled + size > target and len(groups) < parts:
            groups.append([])
            filled = 0
        groups[-1].append(i)
        filled += size
    return groups


def _selected_schema(df: Any, columns: list[str]) -> Any:
    """The schema of ``df.select(*columns)``; ``df``'s own (cached by PySpark) when that is
    every column in order, which saves Spark an analysis."""
    if columns == list(df.columns):
        return df.schema
    return df.select(*columns).schema


def _referenced_columns(filtered_df: Any) -> list[str]:
    """Top-level columns the analysed condition of ``filtered_df`` refers to."""
    plan = filtered_df._jdf.queryExecution().analyzed()
    names: list[str] = []
    stack = [plan]
    while stack:
        node = stack.pop()
        if node.getClass().getSimpleName() == "Filter":
            refs = node.condition().references().toSeq()
            names.extend(str(refs.apply(i).name()) for i in range(refs.size()))
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    return names


def read(
    spark: Any,
    source: Any,
    where: Any = None,
    columns: Sequence[str] | None = None,
    **options: Any,
) -> Any:
    """The rows of ``spark.read.parquet(source).where(where).select(columns)``, reading only
    the pages that can match. ``where`` is SQL text or a ``pyspark.sql.Column``."""
    return SparkScan(spark, source, where, columns, **options).to_df()


def plan(
    spark: Any,
    source: Any,
    where: Any = None,
    columns: Sequence[str] | None = None,
    **options: Any,
) -> SparkScan:
    """Like ``read``, but returns the plan: ``to_df()``, ``explain()``, ``metrics()``."""
    return SparkScan(spark, source, where, columns, **options)
