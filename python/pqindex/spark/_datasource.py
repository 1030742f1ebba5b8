"""``spark.read.format("pqindex")``: the same planner and reader behind Spark's Python Data
Source API (PySpark 4.1 or later), on classic and Spark Connect sessions alike.

    pqindex.spark.register(spark)
    df = spark.read.format("pqindex").option("where", "l_orderkey < 1000").load("lineitem/")
    df.where("l_partkey = 7")      # Spark's filter, applied to the rows pqindex returns

What prunes is the source's own options, which pqindex applies exactly: ``where`` (a pqindex
condition, SQL text as DuckDB reads it or a structured predicate as JSON,
docs/predicates.md), ``columns`` and ``limit``; Spark then applies the query's filters to
the rows. Spark's pushed filters (``pushFilters``) prune too only where PySpark plans each
scan for itself (5.0 on, SPARK-58551). PySpark 4.1 to 4.3 keep one planned read per loaded
relation (``PythonDataSourceV2.readInfo``: the partitions and the pickled reader with its
pushed filters) and reuse it for any later scan of that relation that pushes no filter (a
query without a condition, an OR, the other side of a union, a cached or temporary view),
so partitions pruned for one query's filters lose rows in the next. No reader can notice:
a reused scan runs no Python at all. ``register`` therefore keeps pushdown off there, and a
plan that depends only on options is right for every query on the relation.

Options:

- the source: ``path`` (a file, a directory, a Delta table's directory, or several paths
  separated by commas), ``iceberg`` (an Iceberg table's metadata file, read through
  pyiceberg; ``iceberg.<key>`` its FileIO properties), or a catalog table resolved on the
  driver with ``table_options``; time travel with ``version``, ``timestamp``,
  ``snapshot_id``;
- pruning: ``where``, ``columns`` (comma separated), ``limit``, and ``order_by`` with
  ``limit`` (``"ts desc"``, or a JSON list of names and ``[name, "desc"]`` pairs: the first
  rows in that order, NULLs last, read by one task from the pages that can hold them);
- ``batch_size``, ``partitions`` (how many to plan; twice the cluster's parallelism when
  registered);
- storage settings: ``storage.<key>`` for any ``storage_options`` key, or Hadoop's
  ``fs.s3a.*`` keys.

Spark unpickles these classes in its Python workers (on the driver to plan, in executors to
read), so this module is pickled by value (``_guard.register``) and imports pqindex only
inside functions, after ``require_pqindex`` has checked that the worker can. ``read`` uses
only its partition's value and the options: PySpark pickles the read function before it
calls ``partitions``, so what planning learns (``now()``, the catalog) travels in each
partition.
"""

from __future__ import annotations

import json
import logging
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from pqindex.spark._guard import require_pqindex

#: Why pushdown stays off on PySpark 4.1 to 4.3, said once per process.
REUSE_REASON = (
    "pqindex data source: Spark's filter pushdown stays off on Spark {version}. PySpark 4.1 "
    "to 4.3 keep the read planned for one query's pushed filters on the loaded relation "
    "(PythonDataSourceV2.readInfo) and reuse it for later queries on that relation, which "
    "then lose rows (fixed for Spark 5.0 by SPARK-58551). Prune with the source's options "
    "instead: spark.read.format('pqindex').option('where', ...).option('columns', ...)."
)
_LOG = logging.getLogger("pqindex.spark.datasource")
_warned = False


def pushdown_is_scoped(version: str) -> bool:
    """Whether Spark ``version`` plans each scan of a Python data source for itself, so
    that pruning with its pushed filters is safe (Spark 5.0 and later)."""
    found = re.match(r"\s*(\d+)", version)
    return found is not None and int(found.group(1)) >= 5


def register(spark: Any, *, filter_pushdown: bool | None = None) -> None:
    """Make ``spark.read.format("pqindex")`` available in this session.

    Spark's pushed filters prune only on Spark 5.0 and later; on 4.1 to 4.3 pushdown stays
    off (the reason is warned once per process) and the ``where`` option prunes instead.
    ``filter_pushdown=True`` forces it on there: a DataFrame loaded from the source then
    returns wrong rows when reused (see the module documentation)."""
    global _warned
    import pqindex
    from pqindex.spark import _guard
    from pqindex.spark._session import default_parallelism

    version = str(spark.version)
    scoped = pushdown_is_scoped(version)
    pushdown = scoped if filter_pushdown is None else filter_pushdown
    if pushdown and not scoped:
        warnings.warn(
            f"pqindex data source: filter pushdown forced on Spark {version}, which reuses "
            "the read planned for one query's pushed filters in later queries on the same "
            "loaded DataFrame, view or table: such queries LOSE ROWS. Load a fresh DataFrame "
            "for every query, use it once, and never cache it or make it a view; or prune "
            "with the 'where' option instead.",
            UserWarning,
            stacklevel=3,
        )
    elif filter_pushdown is None and not scoped and not _warned:
        _warned = True
        warnings.warn(REUSE_REASON.format(version=version), UserWarning, stacklevel=3)
    # Carried to the workers with the class: the message when they lack pqindex, and how
    # many partitions to plan (the workers cannot ask the cluster).
    PqindexDataSource.driver_version = pqindex.__version__
    PqindexDataSource.default_partitions = max(1, 2 * default_parallelism(spark))
    _guard.register()
    if pushdown:
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


@dataclass
class Settings:
    """The data source's options, read once (picklable: readers carry them)."""

    paths: list[str] = field(default_factory=list)
    #: An Iceberg table's metadata file, and its FileIO properties.
    iceberg: str | None = None
    iceberg_properties: dict[str, str] = field(default_factory=dict)
    time_travel: dict[str, Any] = field(default_factory=dict)
    where: str | dict[str, Any] | None = None
    columns: list[str] | None = None
    limit: int | None = None
    #: ``(column, descending)`` pairs: which rows ``limit`` keeps.
    order_by: list[tuple[str, bool]] | None = None
    batch_size: int = 65536
    partitions: int = 4
    storage_options: dict[str, str] | None = None
    #: The catalog table the options were resolved from, and its schema (JSON).
    table: str | None = None
    table_schema: str | None = None

    def describe(self) -> str:
        """The source as messages name it."""
        if self.table:
            return f"table {self.table}"
        return f"iceberg table {self.iceberg}" if self.iceberg else ",".join(self.paths)


def settings(options: Mapping[str, str], default_partitions: int = 4) -> Settings:
    """``Settings`` from data source options; ``InvalidArgumentError`` for bad ones."""
    import pqindex
    from pqindex.spark._storage import from_options

    opts = {str(k).lower(): str(v) for k, v in options.items() if v is not None}

    def number(key: str, default: int | None, low: int) -> int | None:
        text = opts.get(key)
        if text is None:
            return default
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise pqindex.InvalidArgumentError(
                f"data source option {key} must be an integer of at least {low}, not {text!r}"
            )
        return value

    path = opts.get("path") or opts.get("paths") or ""
    out = Settings(
        paths=[p for p in path.split(",") if p],
        iceberg=opts.get("iceberg") or None,
        iceberg_properties={
            k[len("iceberg.") :]: v for k, v in opts.items() if k.startswith("iceberg.")
        },
        where=condition(opts.get("where")),
        columns=column_list(opts.get("columns")),
        limit=number("limit", None, 0),
        order_by=order_list(opts.get("order_by")),
        batch_size=number("batch_size", 65536, 1) or 65536,
        partitions=number("partitions", default_partitions, 1) or default_partitions,
        storage_options=from_options(opts),
        table=opts.get("table") or None,
        table_schema=opts.get("table_schema") or None,
    )
    for key in ("version", "snapshot_id"):
        value = number(key, None, 0)
        if value is not None:
            out.time_travel[key] = value
    if opts.get("timestamp"):
        out.time_travel["timestamp"] = opts["timestamp"]
    if out.table and not out.paths:
        raise pqindex.InvalidArgumentError(
            f"the data source cannot look table {out.table} up in Spark's catalog from its "
            "Python worker: resolve it on the driver with "
            "spark.read.format('pqindex').options(**pqindex.spark.table_options(spark, "
            f"{out.table!r})).load()"
        )
    if out.order_by is not None and out.columns is not None:
        outside = [c for c, _ in out.order_by if c not in out.columns]
        if outside:
            raise pqindex.InvalidArgumentError(
                f"the order_by option names {outside}, which the columns option leaves out"
            )
    if out.order_by is not None and out.limit is None:
        raise pqindex.InvalidArgumentError(
            "the order_by option needs a limit option: the source returns the first rows in "
            "that order"
        )
    if bool(out.paths) == bool(out.iceberg):
        raise pqindex.InvalidArgumentError(
            "spark.read.format('pqindex') needs a path (load(path) or the path option) or "
            "an iceberg metadata file (the iceberg option), one of them"
        )
    return out


def condition(text: str | None) -> str | dict[str, Any] | None:
    """The ``where`` option: pqindex SQL text, or a structured predicate as JSON."""
    if text is None or not text.strip():
        return None
    if text.lstrip().startswith("{"):
        import pqindex

        try:
            document = json.loads(text)
        except ValueError as error:
            raise pqindex.PredicateError(f"the where option is not JSON: {error}") from error
        if not isinstance(document, dict):
            raise pqindex.PredicateError("the where option's JSON must be an object")
        return document
    return text


def option_json(key: str, text: str) -> list[Any]:
    """The JSON list an option holds; ``InvalidArgumentError`` for anything else."""
    import pqindex

    try:
        value = json.loads(text)
    except ValueError as error:
        raise pqindex.InvalidArgumentError(f"the {key} option is not JSON: {error}") from error
    if not isinstance(value, list):
        raise pqindex.InvalidArgumentError(f"the {key} option's JSON must be a list")
    return value


def order_list(text: str | None) -> list[tuple[str, bool]] | None:
    """The ``order_by`` option: ``"ts desc, k"``, or a JSON list of names and
    ``[name, "asc" | "desc"]`` pairs."""
    from pqindex._scan import order_keys

    if text is None or not text.strip():
        return None
    if text.lstrip().startswith("["):
        items = [tuple(i) if isinstance(i, list) else i for i in option_json("order_by", text)]
        return order_keys(items)
    return order_keys([part for part in text.split(",") if part.strip()])


def column_list(text: str | None) -> list[str] | None:
    """The ``columns`` option: names separated by commas, or a JSON list of names."""
    if text is None or not text.strip():
        return None
    if text.lstrip().startswith("["):
        names = option_json("columns", text)
        return [str(n) for n in names]
    return [c.strip() for c in text.split(",") if c.strip()]


def source_of(s: Settings) -> Any:
    """What ``pqindex.scan`` plans: an Iceberg table, one path as itself (a Delta table's
    directory is read as a table), or the list of paths."""
    if s.iceberg:
        from pyiceberg.table import StaticTable

        return StaticTable.from_metadata(s.iceberg, s.iceberg_properties)
    return s.paths[0] if len(s.paths) == 1 else list(s.paths)


def with_pushed(where: str | dict[str, Any] | None, pushed: dict[str, Any] | None) -> Any:
    """The ``where`` option and Spark's pushed filters, both; SQL text and a structured
    predicate cannot be combined, so beside a SQL ``where`` only the option prunes (which
    only widens: Spark applies its filters anyway)."""
    if pushed is None or isinstance(where, str):
        return where
    return pushed if where is None else {"op": "and", "args": [where, pushed]}


def schema_of(s: Settings) -> StructType:
    """The source's Spark schema: the catalog table's, else as Spark's Parquet reader would
    type pqindex's reading of the files, of the ``columns`` option's columns."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    import pqindex

    if s.table_schema:
        schema = StructType.fromJson(json.loads(s.table_schema))
    else:
        scan = pqindex.scan(source_of(s), storage_options=s.storage_options, **s.time_travel)
        arrow = pa.schema(scan)
        fields = [pa.field(f.name, spark_arrow_type(f.type), True) for f in arrow]
        schema = from_arrow_schema(pa.schema(fields))
    if s.columns is None:
        return schema
    by_name = {f.name: f for f in schema.fields}
    missing = [c for c in s.columns if c not in by_name]
    if missing:
        raise pqindex.InvalidArgumentError(
            f"the columns option names {missing}, which {s.describe()} does not have "
            f"(columns: {list(by_name)})"
        )
    return StructType([by_name[c] for c in s.columns])


@dataclass
class Planned:
    """A plan of the source and its partitions (groups of unit indices)."""

    scan: Any
    units: Any
    groups: list[list[int]]
    where: str | dict[str, Any] | None

    def partition_values(self) -> list[dict[str, Any]]:
        """Each partition's value: its units (Arrow IPC) and what reading them needs."""
        from pqindex.spark._units import ipc_bytes

        return [
            {
                "units": ipc_bytes(self.units.take(g)),
                "now_ns": self.scan.now_ns,
                "catalog": self.scan.catalog_root,
                "where": self.where,
            }
            for g in self.groups
        ]

    def summary(self, s: Settings) -> str:
        m = self.scan.metrics()
        selected = sum(self.units.column("selected_bytes").to_pylist())
        return (
            f"pqindex data source {s.describe()}: where {shown(self.where)}; "
            f"{len(self.groups)} partitions, {self.units.num_rows} units, ~{selected} bytes "
            f"of selected pages; pruned {m.get('files_pruned', 0)} of {m.get('files', 0)} "
            f"files, {m.get('row_groups_pruned_by_stats', 0)} of {m.get('row_groups', 0)} "
            f"row groups by statistics, {m.get('pages_pruned', 0)} of {m.get('pages', 0)} pages"
        )


def plan(s: Settings, columns: Sequence[str], pushed: dict[str, Any] | None = None) -> Planned:
    """Plan the source's read of ``columns`` with the ``where`` option and, where Spark's
    pushdown is trusted, its pushed filters."""
    import pqindex
    from pqindex.spark._units import balanced_groups

    where = with_pushed(s.where, pushed)
    scan = pqindex.scan(
        source_of(s),
        where=where,
        columns=list(columns),
        batch_size=s.batch_size,
        storage_options=s.storage_options,
        **s.time_travel,
    )
    units = scan.units()
    # A limit is read by one task, which stops after it: exact, with no count to guess.
    count = 1 if s.limit is not None else s.partitions
    return Planned(scan, units, balanced_groups(units, count), where)


def shown(where: Any) -> str:
    """A condition as logs and ``explain`` print it."""
    if where is None:
        return "(nothing)"
    return where if isinstance(where, str) else json.dumps(where)


class PqindexDataSource(DataSource):
    """See the module documentation for the options."""

    driver_version: str | None = None
    default_partitions: int = 4

    @classmethod
    def name(cls) -> str:
        return "pqindex"

    def _settings(self) -> Settings:
        require_pqindex(self.driver_version)
        return settings(dict(self.options), self.default_partitions)

    def schema(self) -> StructType:
        return schema_of(self._settings())

    def reader(self, schema: StructType) -> DataSourceReader:
        reader = _Reader(self._settings(), schema)
        reader.driver_version = self.driver_version
        return reader


class _PushdownDataSource(PqindexDataSource):
    """The same source with a reader that takes Spark's pushed filters (Spark refuses a
    reader with ``pushFilters`` while filter pushdown is off)."""

    def reader(self, schema: StructType) -> DataSourceReader:
        reader = _PushdownReader(self._settings(), schema)
        reader.driver_version = self.driver_version
        return reader


class _Reader(DataSourceReader):
    def __init__(self, s: Settings, schema: StructType) -> None:
        self.settings = s
        self.schema = schema
        self.pushed: dict[str, Any] | None = None
        self.driver_version: str | None = None

    def partitions(self) -> Sequence[InputPartition]:
        require_pqindex(self.driver_version)
        planned = plan(self.settings, self.schema.fieldNames(), self.pushed)
        if _LOG.level == logging.NOTSET:
            # Spark's Python workers collect INFO records when worker logging is on
            # (spark.sql.pyspark.worker.logging.enabled; spark.tvf.python_worker_logs()).
            _LOG.setLevel(logging.INFO)
        _LOG.info(planned.summary(self.settings))
        values = planned.partition_values()
        if not values:
            return [InputPartition(None)]
        return [InputPartition(v) for v in values]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        require_pqindex(self.driver_version)
        import pyarrow as pa

        from pqindex._native import read_units
        from pqindex.spark._arrow import arrow_schema, conform
        from pqindex.spark._units import task_read_ahead

        value = partition.value
        if value is None:
            return
        s = self.settings
        target = arrow_schema(self.schema)
        scan = read_units(
            pa.ipc.open_stream(value["units"]).read_all(),
            now_ns=value["now_ns"],
            where=value["where"],
            columns=self.schema.fieldNames(),
            batch_size=s.batch_size,
            catalog=value["catalog"],
            storage_options=s.storage_options,
            read_ahead=task_read_ahead(),
            limit=s.limit,
            order_by=s.order_by,
        )
        # The core stops at the limit itself.
        for batch in pa.RecordBatchReader.from_stream(scan):
            yield conform(batch, target)


class _PushdownReader(_Reader):
    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        require_pqindex(self.driver_version)
        from pqindex.spark._predicate import translate_all

        translated = translate_all(filters, self.schema)
        self.pushed = translated.predicate if translated is not None else None
        # Spark evaluates every filter again: the pqindex predicate only prunes.
        yield from filters
