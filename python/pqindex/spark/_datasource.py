"""``spark.read.format("pqindex")``: the same planner and reader behind Spark's Python Data
Source API (PySpark 4.1 or later, for filter pushdown).

Spark hands the data source its pushed filters (``pushFilters``); they are translated into
a pqindex predicate (only ever wider), the plan's units become the input partitions, and
each partition is read with the Rust reader. Every filter is also returned to Spark, which
evaluates it again on the rows, so results are Spark's whatever the translation expressed.

    pqindex.spark.register(spark, filter_pushdown=True)
    spark.read.format("pqindex").load("lineitem/").where("l_orderkey = 42")
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
)
from pyspark.sql.types import StructType

from pqindex.spark._filters import scalar_literal

_COMPARISONS = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}


def register(spark: Any, *, filter_pushdown: bool = False) -> None:
    """Make ``spark.read.format("pqindex")`` available in this session.

    ``filter_pushdown=True`` switches on Spark's Python data source filter pushdown (off by
    default in Spark), which is what lets the planner prune. PySpark 4.1 to 4.3 keep the
    partitions planned for one query's pushed filters on the loaded DataFrame and reuse them
    for a later query on the same DataFrame that pushes no filters, which then misses rows:
    with pushdown on, load a fresh DataFrame for each query (later Spark versions scope the
    planned read to its scan)."""
    if filter_pushdown:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
        spark.dataSource.register(_PushdownDataSource)
    else:
        spark.dataSource.register(PqindexDataSource)


def spark_arrow_type(t: Any) -> Any:
    """The Arrow type Spark's Parquet reader would give a column stored as ``t``."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        return spark_arrow_type(t.value_type)
    unsigned = {8: pa.int16(), 16: pa.int32(), 32: pa.int64(), 64: pa.decimal128(20, 0)}
    if pa.types.is_unsigned_integer(t):
        return unsigned[t.bit_width]
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", "UTC" if t.tz is not None else None)
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return pa.binary()
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, spark_arrow_type(f.type), f.nullable) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(spark_arrow_type(t.value_type))
    if pa.types.is_map(t):
        return pa.map_(spark_arrow_type(t.key_type), spark_arrow_type(t.item_type))
    return t


class PqindexDataSource(DataSource):
    """Options: ``path`` (a file, a directory or several paths separated by commas),
    ``batch_size`` and ``partitions``."""

    @classmethod
    def name(cls) -> str:
        return "pqindex"

    def _paths(self) -> list[str]:
        path = self.options.get("path") or self.options.get("paths")
        if not path:
            raise ValueError("spark.read.format('pqindex').load(path) needs a path")
        return [p for p in str(path).split(",") if p]

    def schema(self) -> StructType:
        import pyarrow as pa
        from pyspark.sql.pandas.types import from_arrow_schema

        import pqindex

        arrow = pa.schema(pqindex.scan(self._paths()))
        fields = [pa.field(f.name, spark_arrow_type(f.type), f.nullable) for f in arrow]
        return from_arrow_schema(pa.schema(fields))

    def reader(self, schema: StructType) -> DataSourceReader:
        return _Reader(self._paths(), schema, dict(self.options))


class _PushdownDataSource(PqindexDataSource):
    """The same source with a reader that takes Spark's pushed filters (Spark refuses a
    reader with ``pushFilters`` while filter pushdown is off)."""

    def reader(self, schema: StructType) -> DataSourceReader:
        return _PushdownReader(self._paths(), schema, dict(self.options))


class _Reader(DataSourceReader):
    def __init__(self, paths: list[str], schema: StructType, options: dict[str, str]) -> None:
        self.paths = paths
        self.schema = schema
        self.batch_size = int(options.get("batch_size", 65536))
        self.partition_count = int(options.get("partitions", 4))
        self.where: str | None = None
        self.now_ns = 0

    def partitions(self) -> Sequence[InputPartition]:
        import pqindex
        from pqindex.spark._read import _balanced_groups, _ipc_bytes

        scan = pqindex.scan(self.paths, where=self.where, columns=self.schema.fieldNames())
        self.now_ns = scan.now_ns
        units = scan.units()
        groups = _balanced_groups(units, self.partition_count)
        if not groups:
            return [InputPartition(None)]
        return [InputPartition(_ipc_bytes(units.take(g))) for g in groups]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import pyarrow as pa

        from pqindex._native import read_units
        from pqindex.spark._arrow import arrow_schema, conform

        if partition.value is None:
            return
        target = arrow_schema(self.schema)
        scan = read_units(
            pa.ipc.open_stream(partition.value).read_all(),
            now_ns=self.now_ns,
            where=self.where,
            columns=self.schema.fieldNames(),
            batch_size=self.batch_size,
        )
        for batch in pa.RecordBatchReader.from_stream(scan):
            yield conform(batch, target)


class _PushdownReader(_Reader):
    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        parts = [sql for f in filters if (sql := _translate(f, self.schema)) is not None]
        self.where = " AND ".join(f"({p})" for p in parts) if parts else None
        # Spark evaluates every filter again: the pqindex predicate only prunes.
        yield from filters


def _translate(f: Filter, schema: StructType) -> str | None:
    """pqindex SQL keeping at least the rows ``f`` keeps (exactly, NULLs included, so that
    NOT may wrap it), or None."""
    if isinstance(f, Not):
        inner = _translate(f.child, schema)
        exact = not isinstance(f.child, EqualNullSafe)
        return f"NOT ({inner})" if inner is not None and exact else None
    column = _column(f.attribute, schema) if hasattr(f, "attribute") else None
    if column is None:
        return None
    name, data_type = column
    if isinstance(f, IsNull):
        return f"{name} IS NULL"
    if isinstance(f, IsNotNull):
        return f"{name} IS NOT NULL"
    if isinstance(f, In):
        values = [_literal(v, data_type) for v in f.value]
        if not values or any(v is None for v in values):
            return None
        return f"{name} IN ({', '.join(v for v in values if v is not None)})"
    op = "=" if isinstance(f, EqualNullSafe) else _COMPARISONS.get(type(f))
    if op is None:
        return None
    value = _literal(getattr(f, "value", None), data_type)
    return None if value is None else f"{name} {op} {value}"


def _column(path: tuple[str, ...], schema: StructType) -> tuple[str, Any] | None:
    data_type: Any = schema
    quoted = []
    for part in path:
        if not isinstance(data_type, StructType):
            return None
        match = [f for f in data_type.fields if f.name == part]
        if len(match) != 1:
            return None
        quoted.append('"' + part.replace('"', '""') + '"')
        data_type = match[0].dataType
    return ".".join(quoted), data_type


def _literal(value: Any, data_type: Any) -> str | None:
    """A Python value of a pushed filter as a pqindex literal of the column's Spark type
    (dates and datetimes here; the rest as Spark's own pushed filters are translated)."""
    from pyspark.sql import types as T

    if value is None:
        return None
    scalar = scalar_literal(value, data_type)
    if scalar is not None:
        return scalar
    if isinstance(data_type, T.TimestampType) and isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            return None
        utc = value.astimezone(datetime.timezone.utc)
        return f"TIMESTAMPTZ '{utc.strftime('%Y-%m-%d %H:%M:%S.%f')}+00:00'"
    if isinstance(data_type, T.TimestampNTZType) and isinstance(value, datetime.datetime):
        return f"TIMESTAMP '{value.strftime('%Y-%m-%d %H:%M:%S.%f')}'"
    if isinstance(data_type, T.DateType) and isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    return None
