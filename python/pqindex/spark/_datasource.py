"""``spark.read.format("pqindex")``: the same planner and reader behind Spark's Python Data
Source API (PySpark 4.1 or later), on classic and Spark Connect sessions alike.

Spark hands the reader its pushed filters (``pushFilters``); ``_predicate`` translates them
(only ever wider), the plan's units become the input partitions, and each partition is read
with the Rust reader. Every filter is also returned to Spark, which evaluates it again on the
rows, so results are Spark's whatever the translation expressed.

Spark unpickles these classes in its Python workers (on the driver to plan, in executors to
read), so this module is pickled by value (``_guard.register``) and imports pqindex only
inside methods, after ``require_pqindex`` has checked that the worker can.

    pqindex.spark.register(spark, filter_pushdown=True)
    spark.read.format("pqindex").load("lineitem/").where("l_orderkey = 42")

Options: ``path`` (a file, a directory or several paths separated by commas),
``batch_size``, ``partitions``, and storage settings: ``storage.<key>`` for any
``storage_options`` key, or Hadoop's ``fs.s3a.*`` keys.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from pqindex.spark._guard import require_pqindex


def register(spark: Any, *, filter_pushdown: bool = False) -> None:
    """Make ``spark.read.format("pqindex")`` available in this session.

    ``filter_pushdown=True`` switches on Spark's Python data source filter pushdown (off by
    default in Spark), which is what lets the planner prune. PySpark 4.1 to 4.3 keep the
    partitions planned for one query's pushed filters on the loaded DataFrame and reuse them
    for a later query on the same DataFrame that pushes no filters, which then misses rows:
    with pushdown on, load a fresh DataFrame for each query (later Spark versions scope the
    planned read to its scan)."""
    import pqindex
    from pqindex.spark import _guard

    # Carried to the workers with the class, for the message when they lack pqindex.
    PqindexDataSource.driver_version = pqindex.__version__
    _guard.register()
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
    """See the module documentation for the options."""

    driver_version: str | None = None

    @classmethod
    def name(cls) -> str:
        return "pqindex"

    def _paths(self) -> list[str]:
        path = self.options.get("path") or self.options.get("paths")
        if not path:
            require_pqindex(self.driver_version)
            import pqindex

            raise pqindex.InvalidArgumentError(
                "spark.read.format('pqindex').load(path) needs a path"
            )
        return [p for p in str(path).split(",") if p]

    def _storage_options(self) -> dict[str, str] | None:
        require_pqindex(self.driver_version)
        from pqindex.spark._storage import from_options

        return from_options(dict(self.options))

    def schema(self) -> StructType:
        require_pqindex(self.driver_version)
        import pyarrow as pa
        from pyspark.sql.pandas.types import from_arrow_schema

        import pqindex

        arrow = pa.schema(pqindex.scan(self._paths(), storage_options=self._storage_options()))
        fields = [pa.field(f.name, spark_arrow_type(f.type), True) for f in arrow]
        return from_arrow_schema(pa.schema(fields))

    def reader(self, schema: StructType) -> DataSourceReader:
        reader = _Reader(self._paths(), schema, dict(self.options), self._storage_options())
        reader.driver_version = self.driver_version
        return reader


class _PushdownDataSource(PqindexDataSource):
    """The same source with a reader that takes Spark's pushed filters (Spark refuses a
    reader with ``pushFilters`` while filter pushdown is off)."""

    def reader(self, schema: StructType) -> DataSourceReader:
        options = dict(self.options)
        reader = _PushdownReader(self._paths(), schema, options, self._storage_options())
        reader.driver_version = self.driver_version
        return reader


class _Reader(DataSourceReader):
    def __init__(
        self,
        paths: list[str],
        schema: StructType,
        options: dict[str, str],
        storage_options: dict[str, str] | None,
    ) -> None:
        self.paths = paths
        self.schema = schema
        self.batch_size = int(options.get("batch_size", 65536))
        self.partition_count = int(options.get("partitions", 4))
        self.storage_options = storage_options
        self.where: str | None = None
        self.now_ns = 0
        self.driver_version: str | None = None

    def partitions(self) -> Sequence[InputPartition]:
        require_pqindex(self.driver_version)
        import pqindex
        from pqindex.spark._units import balanced_groups, ipc_bytes

        scan = pqindex.scan(
            self.paths,
            where=self.where,
            columns=self.schema.fieldNames(),
            storage_options=self.storage_options,
        )
        self.now_ns = scan.now_ns
        units = scan.units()
        groups = balanced_groups(units, self.partition_count)
        if not groups:
            return [InputPartition(None)]
        return [InputPartition(ipc_bytes(units.take(g))) for g in groups]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        require_pqindex(self.driver_version)
        import pyarrow as pa

        from pqindex._native import read_units
        from pqindex.spark._arrow import arrow_schema, conform
        from pqindex.spark._units import task_read_ahead

        if partition.value is None:
            return
        target = arrow_schema(self.schema)
        scan = read_units(
            pa.ipc.open_stream(partition.value).read_all(),
            now_ns=self.now_ns,
            where=self.where,
            columns=self.schema.fieldNames(),
            batch_size=self.batch_size,
            storage_options=self.storage_options,
            read_ahead=task_read_ahead(),
        )
        for batch in pa.RecordBatchReader.from_stream(scan):
            yield conform(batch, target)


class _PushdownReader(_Reader):
    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        require_pqindex(self.driver_version)
        from pqindex.spark._predicate import translate_all

        translated = translate_all(filters, self.schema)
        self.where = translated.sql if translated is not None else None
        # Spark evaluates every filter again: the pqindex predicate only prunes.
        yield from filters
