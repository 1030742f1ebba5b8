"""Indexed reads in Spark: plan on the driver with the Rust core, read the selected pages where
that is cheapest, and let Spark apply its own condition last unless pqindex's is proven the
same.

The driver (the Python process holding the session: the Spark driver on a classic session,
the client on Spark Connect) takes the schema from pqindex's own plan, typed as Spark's
Parquet reader types it (``_schema``; Spark's ``spark.read.parquet`` only for what that does
not cover), and turns what Spark confirms of ``where`` into a pqindex predicate, which may
only widen: the condition read on the client and confirmed by Spark's analyser
(``_client_filters``), or, over ``spark.read.parquet``, the filters Spark pushes into its own
Parquet scan (``_jvm_filters``, classic sessions). Both become one predicate through
``_predicate``. Few rows are read on the driver and handed over with ``createDataFrame``;
many rows pruned no better than Spark's own reader prunes go to that reader; the rest are
read in executors: the plan's units travel as Arrow IPC blobs in a small DataFrame, and
``mapInArrow`` rebuilds the scan from them and streams the rows, failing the task if a file
changed since planning.

Object-store sources (``s3a://``, ``s3://``, ``gs://``, ...) are read by pqindex alone, on
the driver and in executors, so Spark needs no s3a connector: the schema comes from pqindex,
and credentials from ``storage_options`` or the session's ``fs.s3a.*`` settings.

A string naming a catalog table (``"db.events"``) is read from the table's location, as
Spark reads the table (``_tables``).

Delta and Iceberg tables (a Delta table's directory, a pyiceberg ``Table``) are planned by
pqindex from the table's own metadata, as ``pqindex.scan`` plans them (deletes applied,
columns under the table's names); their schema too comes from pqindex, since Spark here has
no Delta or Iceberg reader. Executors read a table's units in the table's terms: the units
carry the table's columns.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pqindex
from pqindex.spark import _client_filters, _jvm_filters, _portable, _schema, _tables
from pqindex.spark._arrow import arrow_schema, conform
from pqindex.spark._datasource import shown
from pqindex.spark._guard import guarded
from pqindex.spark._metrics import (
    EXECUTOR_KEYS,
    Observed,
    accumulator,
    counter_row,
    with_metrics_column,
    with_null_counters,
)
from pqindex.spark._predicate import conjunction, literal, translate_all
from pqindex.spark._session import default_parallelism, empty_frame, is_connect
from pqindex.spark._sql import tokenize
from pqindex.spark._storage import is_remote, storage_options_for
from pqindex.spark._units import balanced_groups, ipc_bytes, task_read_ahead

#: Plans that fetch less than this (estimated compressed bytes of the selected pages) are
#: read on the driver and handed to Spark with ``createDataFrame``: a driver reads selected
#: pages at hundreds of MB/s, so below it starting a job costs more than the read, as long
#: as few rows come back (``DRIVER_RESULT_BYTES``). It also bounds what a driver read that
#: stops for many rows has cost: its first rows may come only after most of a row group.
#: Measured in benches/HISTORY.md ("Where rows are read").
DRIVER_READ_BYTES = 128 * 1024 * 1024
#: A read on the driver stops once its rows take more than this as Arrow: handing rows over
#: with ``createDataFrame`` costs tens of milliseconds a MB, more than a job's start-up
#: beyond this.
DRIVER_RESULT_BYTES = 2 * 1024 * 1024
#: Spark's own Parquet reader takes over a read it prunes alike when the rows expected back
#: are at least this share of the rows selected for reading: late materialisation then
#: saves little. Below it pqindex reads them, in executors (at SF10 a date needle of 0.04%
#: of the rows took 2.5 s there against 4.2-4.8 s for Spark's reader; at 2%, `l_quantity =
#: 1`, the two tie).
SPARK_READER_SHARE = 0.05
#: Join keys up to this many distinct ones are collected to the driver and prune exactly
#: as an IN list; beyond it, only their range (min and max per key column) prunes.
MAX_KEYS = 1_000_000
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_UNKNOWN = object()


def _total(units: Any, column: str) -> int:
    """The sum of ``column`` of a plan's units table (``Scan.units()``)."""
    return int(sum(units.column(column).to_pylist()))


def _unselective(units: Any) -> bool:
    """Whether the rows the footers' statistics expect are at least
    ``SPARK_READER_SHARE`` of the rows the units select for reading."""
    return _total(units, "expected_rows") >= SPARK_READER_SHARE * _total(units, "selected_rows")


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
        driver_result_bytes: int = DRIVER_RESULT_BYTES,
        spark_reader: bool = True,
        partitions: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        keys: Any = None,
        on: str | Sequence[str] | None = None,
        max_keys: int = MAX_KEYS,
        version: int | None = None,
        timestamp: Any = None,
        snapshot_id: int | None = None,
        limit: int | None = None,
        order_by: Any = None,
    ) -> None:
        from pqindex._scan import order_keys

        #: ``(column, descending)`` pairs: which rows ``limit`` keeps (NULLs last).
        self.order_by = order_keys(order_by)
        if self.order_by is not None and limit is None:
            raise pqindex.InvalidArgumentError(
                "order_by needs a limit: the read returns the first rows in that order"
            )
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise pqindex.InvalidArgumentError(
                f"limit must be a non-negative integer, not {limit!r}"
            )
        #: At most this many rows: Spark's ``limit``, and each task stops reading there
        #: when pqindex's rows are already the answer's.
        self.limit = limit
        self._spark = spark
        self._connect = is_connect(spark)
        #: The catalog table ``source`` names, if it names one rather than a path.
        self.catalog_table: _tables.CatalogTable | None = None
        if _tables.is_table(spark, source):
            self.catalog_table = _tables.resolve(spark, source, storage_options)
            source = self.catalog_table.location
        self._source = source
        self._table = _table_format(source)
        self._time_travel = {"version": version, "timestamp": timestamp, "snapshot_id": snapshot_id}
        self._paths = [source.location()] if self._table == "iceberg" else _paths(source)
        self._storage_options = storage_options_for(spark, self._paths, storage_options)
        if self._table == "iceberg":
            from pqindex import _iceberg

            table_options = _iceberg.storage_options(source)
            self._storage_options = {**table_options, **(self._storage_options or {})} or None
        self._where = where
        self._batch_size = batch_size
        self._keys = _Keys.of(spark, keys, on, max_keys)
        #: What pqindex was given of ``where``: the caller's SQL text where pqindex reads it
        #: exactly as Spark does, else a structured predicate (docs/predicates.md) made from
        #: what Spark confirmed; None when nothing can prune.
        self.predicate: str | dict[str, Any] | None = None
        #: Whether pqindex's predicate means exactly Spark's condition, so that Spark
        #: need not apply it again.
        self.exact = False
        self._driver_result_bytes = driver_result_bytes
        self._spark_reader = spark_reader
        #: Where the rows were read, once ``to_df()`` ran: ``"driver"``, ``"executors"``,
        #: ``"spark"`` (Spark's own Parquet reader) or ``"nowhere"`` (nothing can match).
        self.read_by: str | None = None
        self._partitions = partitions
        self._accumulator: Any = None
        self._observed: Observed | None = None
        self._df: Any = None
        self._columns = list(columns) if columns is not None else None
        #: Set when the first plan shows Spark's own reader should read: many rows, pruned
        #: only as Spark prunes. Nothing more is planned or confirmed then.
        self._spark_takes_over = False
        #: The plan's units (``Scan.units()``).
        self._units: Any = None
        #: The Spark schema of a local dataset as pqindex's plan read it (``_schema``):
        #: ``_UNKNOWN`` until asked, ``None`` where only Spark can tell it.
        self._local_schema: Any = _UNKNOWN
        probe, base = self._pqindex_base(where)
        if self._spark_takes_over and probe is not None:
            self._plan: pqindex.Scan = probe
            self.selected_bytes = _total(self._units, "selected_bytes")
            self.expected_bytes = _total(self._units, "expected_bytes")
            self.on_driver = False
            return
        if base is None:
            # Only Spark can tell the schema of this local dataset.
            base = self._spark_frame()
            self.predicate = self._pushed(base)
        self._columns = list(columns) if columns is not None else list(base.columns)
        condition = [] if self.exact else self._condition_columns(base)
        extra = condition + (self._keys.on if self._keys else [])
        needed = self._columns + [c for c in dict.fromkeys(extra) if c not in self._columns]
        needed = self._check_columns(base, needed)
        self._output = _selected_schema(base, self._columns)
        self._read_schema = (
            self._output if needed == self._columns else _selected_schema(base, needed)
        )
        if probe is not None and needed == list(base.columns):
            self._plan = probe
        else:
            self._plan = self._scan(needed, self.predicate)
        self._units = self._plan.units()
        self.selected_bytes = _total(self._units, "selected_bytes")
        #: What the footers' statistics expect the rows to take as Arrow (few where they
        #: cannot tell).
        self.expected_bytes = _total(self._units, "expected_bytes")
        #: Whether the read starts on the driver (it moves away if many rows come back):
        #: few selected pages, and not many rows expected.
        self.on_driver = self.selected_bytes < driver_read_bytes and not self._known_large()

    # --- planning -------------------------------------------------------------------------

    def _scan(self, columns: list[str] | None, where: str | dict[str, Any] | None) -> pqindex.Scan:
        keys = self._keys
        if keys is not None and keys.range is not None:
            # Never SQL text here: the text is tried as written only without a key range.
            assert not isinstance(where, str)
            where = keys.range if where is None else conjunction([where, keys.range])
        return pqindex.scan(
            self._paths if self._table is None else self._source,
            where=where,
            columns=columns,
            batch_size=self._batch_size,
            storage_options=self._storage_options,
            **{k: v for k, v in self._time_travel.items() if v is not None},
            keys=None if keys is None else keys.table,
            on=None if keys is None or keys.table is None else keys.on,
        )

    def _pqindex_base(self, where: Any) -> tuple[pqindex.Scan | None, Any]:
        """The schema comes from a pqindex plan of every column: Spark may have no s3a
        connector (and has no Delta or Iceberg reader here), and for local files asking
        Spark (``spark.read.parquet``) costs more than the rest of a selective read. SQL
        text is tried as written first, so that planning prunes (and lists and opens files)
        once; that plan is kept only if pqindex reads the text exactly as Spark does, else
        planning starts again from what Spark confirms. ``(None, None)`` for a local
        dataset whose Spark schema only Spark can tell (``_schema``)."""
        import pyarrow as pa
        from pyspark.sql.pandas.types import from_arrow_schema

        local = self._table is None and not is_remote(self._paths)
        probe: pqindex.Scan | None = None
        if isinstance(where, str) and (self._keys is None or self._keys.range is None):
            try:
                probe = self._scan(None, where)
            except (pqindex.PredicateError, pqindex.UnsupportedError):
                probe = None
        written = probe is not None
        if probe is not None and self._spark_reader and self._spark_reads_alike(probe):
            width = len(pa.schema(probe))
            share = len(self._columns) / max(1, width) if self._columns is not None else 1.0
            units = probe.units()
            if (
                units.num_rows
                and _total(units, "expected_bytes") * share > self._driver_result_bytes
                and _unselective(units)
            ):
                self._spark_takes_over = True
                self._units = units
                return probe, None
        if probe is None:
            probe = self._scan(None, None)
        if local:
            schema = self._spark_schema_of(probe)
            if schema is None:
                return None, None
        else:
            schema = _nullable(from_arrow_schema(pa.schema(probe)))
            table = self._parquet_table()
            if table is not None:
                _tables.check_types(self._spark, table, schema)
                schema = table.schema
        base = empty_frame(self._spark, schema)
        if where is None:
            return probe, base
        confirmed = _client_filters.pushed_filters(base, where)
        if written and isinstance(where, str) and _portable.as_written(where, confirmed):
            self.predicate = where
            self.exact = True
            return probe, base
        translated = translate_all(confirmed.filters, base.schema)
        self.predicate = translated.predicate if translated is not None else None
        # The probe is the plan only if it was made with the predicate now chosen.
        return (probe if self.predicate is None and not written else None), base

    def _spark_schema_of(self, plan: pqindex.Scan) -> Any | None:
        """The Spark schema of this local dataset from ``plan`` (of every column), or
        ``None`` when only Spark can tell it."""
        import pyarrow as pa

        if self._local_schema is _UNKNOWN:
            found = _schema.spark_schema(self._spark, pa.schema(plan), self._paths)
            table = self._parquet_table()
            if table is not None:
                # The files typed as the table declares them, or refused; only Spark can
                # then say how a partitioned table's columns are typed.
                _tables.check_types(self._spark, table, found)
                found = None if found is None else table.schema
            self._local_schema = found
        return self._local_schema

    def _parquet_table(self) -> _tables.CatalogTable | None:
        """The catalog Parquet table read, if ``source`` named one."""
        table = self.catalog_table
        return table if table is not None and table.schema is not None else None

    def _spark_frame(self) -> Any:
        """``spark.read.parquet(source)``, typed as the catalog table declares it for a
        table read by name."""
        table = self._parquet_table()
        reader = self._spark.read if table is None else self._spark.read.schema(table.schema)
        return reader.parquet(*self._paths)

    def _pushed(self, base: Any) -> dict[str, Any] | None:
        """The pqindex predicate for what Spark confirms of ``where``."""
        if self._where is None:
            return None
        filters = None
        if not self._connect:
            filters = _jvm_filters.scan_filters(self._spark, base.where(self._where))
        if filters is None:
            filters = _client_filters.pushed_filters(base, self._where).filters
        translated = translate_all(filters, base.schema)
        return translated.predicate if translated is not None else None

    def _condition_columns(self, base: Any) -> list[str]:
        """Top-level columns ``where`` refers to (read too, for Spark's final filter)."""
        if self._where is None:
            return []
        if not self._connect:
            return _jvm_filters.referenced_columns(base.where(self._where))
        # On the client: every column whose name the condition spells (more is harmless);
        # ``_check_columns`` has Spark confirm that nothing is missing.
        text = self._where if isinstance(self._where, str) else str(self._where)
        words = {t.text.lower() for t in tokenize(text) if t.kind in ("ident", "quoted")}
        return [
            c
            for c in base.columns
            if c.lower() in words or (not _IDENTIFIER.match(c) and c in text)
        ]

    def _check_columns(self, base: Any, needed: list[str]) -> list[str]:
        """``needed``, or every column if Spark cannot evaluate the condition over
        ``needed`` alone (only possible for columns found on the client)."""
        if self._where is None or self.exact or not self._connect:
            return needed  # an exact condition is not Spark's to evaluate again
        if needed == list(base.columns):
            return needed
        try:
            base.select(*needed).where(self._where).schema  # noqa: B018 (an analysis)
        except Exception:
            return list(base.columns)
        return needed

    # --- the DataFrame --------------------------------------------------------------------

    def to_df(self) -> Any:
        """The DataFrame of the matching rows (built once; reading happens on actions)."""
        if self._df is None:
            self._df = self._build()
        return self._df

    def _build(self) -> Any:
        df = self._filtered()
        if self.order_by is not None:
            from pyspark.sql import functions as F

            missing = [c for c, _ in self.order_by if c not in df.columns]
            if missing:
                raise pqindex.InvalidArgumentError(
                    f"order_by columns {missing} are not among the columns read {df.columns}"
                )
            df = df.orderBy(
                *[
                    F.col(c).desc_nulls_last() if d else F.col(c).asc_nulls_last()
                    for c, d in self.order_by
                ]
            )
        return df if self.limit is None else df.limit(self.limit)

    def _filtered(self) -> Any:
        spark = self._spark
        df = self._rows()
        if self.read_by == "spark":
            return df
        if self._where is not None and not self.exact:
            df = df.where(self._where)
        joined = self._keys is not None and not self._keys.exact
        if self._keys is not None and joined:
            # Only the keys' range was pushed: the semi join makes it exact (and puts the
            # key columns first, so the output is selected again below).
            df = df.join(self._keys.frame(spark), on=self._keys.on, how="left_semi")
        if not joined and list(self._read_schema.fieldNames()) == list(self._output.fieldNames()):
            return df
        return df.select(*self._output.fieldNames())

    def _rows(self) -> Any:
        """The DataFrame of the rows read, from wherever reading them is cheapest (sets
        ``read_by``)."""
        if self._spark_takes_over:
            self.read_by = "spark"
            return self._sparks_own_read()
        if self._units.num_rows == 0:
            self.read_by = "nowhere"
            return empty_frame(self._spark, self._read_schema)
        if self.on_driver:
            df = self._read_on_driver()
            if df is not None:
                self.read_by = "driver"
                return df
            # Many rows after all: a selective read would have been planned elsewhere.
            to_spark = True
        else:
            to_spark = self._known_large() and (self._where is None or _unselective(self._units))
        if to_spark and self._spark_reader and self._spark_reads_alike(self._plan):
            # Many rows, a good share of those read, and nothing pruned that Spark's own
            # reader does not prune too: its vectorised reader hands rows to Spark without
            # a trip through Python.
            self.read_by = "spark"
            return self._sparks_own_read()
        self.read_by = "executors"
        return self._distributed()

    def _known_large(self) -> bool:
        """Whether many rows are expected to come back, before reading: every selected
        row of a plan with no condition (which takes more room as Arrow than its compressed
        pages), or rows the footers' statistics expect to pass ``driver_result_bytes`` (a
        range over a fifth of a column's bounds, say). A driver read would stop for them
        only after most of its work."""
        if self._keys is not None:
            return False
        if self._where is None:
            return self.selected_bytes > self._driver_result_bytes
        return self.expected_bytes > self._driver_result_bytes

    def _spark_reads_alike(self, plan: pqindex.Scan) -> bool:
        """Whether Spark's own Parquet reader can take this read over at no loss: a local
        Parquet dataset with no join keys, pruned only by what Spark's reader also uses
        (statistics, the page index, Parquet bloom filters), not by pqindex's embedded
        indexes or catalog."""
        if self._table is not None or self._keys is not None or is_remote(self._paths):
            return False
        m = plan.metrics()
        beyond = ("files_pruned_by_index", "row_groups_pruned_by_index", "rows_pruned_by_index")
        return not any(m.get(k, 0) for k in (*beyond, "files_pruned_by_catalog"))

    def _sparks_own_read(self) -> Any:
        """``spark.read.parquet(source).where(where).select(columns)``, as Spark reads it,
        given the schema where pqindex's plan has read it as Spark would: Spark then skips
        inferring it (listing the files, reading a footer in a job of its own), which took
        longer than pqindex's whole plan (``benches/HISTORY.md``, "Spark's own reader")."""
        reader = self._spark.read
        # Taken over at the first plan (of every column), the schema is not asked yet.
        schema = self._local_schema
        if self._spark_takes_over:
            schema = self._spark_schema_of(self._plan)
        if schema is not None and schema is not _UNKNOWN:
            reader = reader.schema(schema)
        table = self._parquet_table()
        df = self._spark.table(table.name) if table is not None else reader.parquet(*self._paths)
        if self._where is not None:
            df = df.where(self._where)
        if self._spark_takes_over:
            return df if self._columns is None else df.select(*self._columns)
        return df.select(*self._output.fieldNames())

    def _read_on_driver(self) -> Any | None:
        """The rows read here as a DataFrame; None, having stopped, when they take more than
        ``driver_result_bytes`` as Arrow."""
        import pyarrow as pa

        target = arrow_schema(self._read_schema)
        table = self._plan.to_arrow_within(self._driver_result_bytes)
        if table is None:
            return None
        batches = [conform(b, target) for b in table.to_batches()]
        if not batches:
            return empty_frame(self._spark, self._read_schema)
        # The Spark schema says what Arrow cannot: a naive timestamp is TIMESTAMP_NTZ.
        table = pa.Table.from_batches(batches, schema=target)
        return self._spark.createDataFrame(table, schema=self._read_schema)

    def _distributed(self) -> Any:
        import pyarrow as pa

        spark = self._spark
        groups = balanced_groups(
            self._units, self._partitions or max(1, default_parallelism(spark) * 2)
        )
        blobs = [ipc_bytes(self._units.take(g)) for g in groups]
        schema = with_metrics_column(self._read_schema) if self._connect else self._read_schema
        read = _ReadUnits(
            catalog=self._plan.catalog_root,
            storage_options=self._storage_options,
            now_ns=self._plan.now_ns,
            where=self.predicate,
            columns=list(self._read_schema.fieldNames()),
            batch_size=self._batch_size,
            target=arrow_schema(schema),
        )
        if self.limit is not None and (self._where is None or self.exact) and self._keys is None:
            # Spark filters no row of these again: a task stops once it has the limit (its
            # top rows, with an order), and Spark takes the first of all tasks' rows.
            read.limit = self.limit
            read_columns = set(self._read_schema.fieldNames())
            if self.order_by is not None and all(c in read_columns for c, _ in self.order_by):
                read.order_by = self.order_by
        if self._keys is not None and self._keys.exact:
            # Every key travels with the tasks, so they return the semi join's rows.
            read.keys, read.on = ipc_bytes(self._keys.table), list(self._keys.on)
        if self._connect:
            # One row per group: Spark runs a local relation's rows as that many tasks (up
            # to its parallelism) without a shuffle.
            plan = pa.table({"part": list(range(len(blobs))), "units": blobs})
            self._observed = Observed()
            rows = spark.createDataFrame(plan).mapInArrow(guarded(read), schema)
            return self._observed.attach(rows)
        sc = spark.sparkContext
        read.accumulator = self._accumulator = accumulator(spark)
        parts = sc.parallelize(list(enumerate(blobs)), len(blobs))
        plan_df = spark.createDataFrame(parts, "part int, units binary")
        return plan_df.mapInArrow(guarded(read), schema)

    # --- what happened --------------------------------------------------------------------

    def explain(self) -> str:
        """The driver's plan, the pushed predicate, where rows are read, and what executors
        fetched so far."""
        lines = [
            "pqindex Spark read",
            f"  spark condition: {self._where!r}",
            f"  pushed to pqindex: {shown(self.predicate)}"
            + (" (exactly Spark's condition: Spark does not apply it again)" if self.exact else ""),
            f"  read {self._placement()}: "
            f"{self._units.num_rows} units, ~{self.selected_bytes} bytes of selected pages, "
            f"~{self.expected_bytes} bytes of rows expected",
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

    def _placement(self) -> str:
        if self.read_by is None and self._spark_takes_over:
            return "by Spark's own Parquet reader (many rows expected; pruned only as Spark prunes)"
        if self.read_by is None:
            return (
                "on the driver (unless many rows come back)" if self.on_driver else "in executors"
            )
        return {
            "driver": "on the driver",
            "executors": "in executors",
            "spark": "by Spark's own Parquet reader (many rows; pruned only as Spark prunes)",
            "nowhere": "nowhere (no page can match)",
        }[self.read_by]

    def executor_metrics(self) -> dict[str, int]:
        """Read counters summed over the executors' tasks, once an action ran: over every
        action on a classic session (an accumulator), over the first one on Spark Connect
        (an observation)."""
        if self._accumulator is not None:
            return dict(self._accumulator.value)
        if self._observed is not None:
            return self._observed.value()
        return {}

    def metrics(self) -> dict[str, int]:
        """Planning counters, and reading counters from wherever the rows were read: the
        reading counters (``bytes_read``, ``requests``, ``footers_read``, ...) add the
        driver's (planning, or a read on the driver) and the executors'."""
        plan = self._plan.metrics()
        executors = self.executor_metrics()
        out = dict(plan)
        for key in EXECUTOR_KEYS:
            out[key] = plan.get(key, 0) + executors.get(key, 0)
        out["executor_bytes_read"] = executors.get("bytes_read", 0)
        out["selected_bytes"] = self.selected_bytes
        out["expected_bytes"] = self.expected_bytes
        return out


@dataclass
class _ReadUnits:
    """The function ``mapInArrow`` runs in executors: one row per group of units. Its
    counters go to ``accumulator`` (classic) or, when ``target`` ends with the counters'
    column, into one extra row per group (Spark Connect; see ``_metrics``)."""

    catalog: str | None
    now_ns: int
    where: str | dict[str, Any] | None
    columns: list[str]
    batch_size: int
    target: Any
    accumulator: Any = None
    storage_options: dict[str, Any] | None = None
    #: The collected join keys (Arrow IPC) and their columns, for a keyed read.
    keys: bytes | None = None
    on: list[str] | None = None
    #: Rows a task needs at most (set only when Spark filters none of them again), and
    #: which: the first in this order.
    limit: int | None = None
    order_by: list[tuple[str, bool]] | None = None

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from pqindex._native import read_units

        in_rows = self.accumulator is None  # the counters travel as rows (Spark Connect)
        data_target = pa.schema(list(self.target)[:-1]) if in_rows else self.target
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
                    read_ahead=task_read_ahead(),
                    keys=None if self.keys is None else pa.ipc.open_stream(self.keys).read_all(),
                    on=self.on,
                    limit=self.limit,
                    order_by=self.order_by,
                )
                for out in pa.RecordBatchReader.from_stream(scan):
                    rows = conform(out, data_target)
                    yield with_null_counters(rows, self.target) if in_rows else rows
                m = scan.metrics()
                counters = {k: m[k] for k in EXECUTOR_KEYS}
                if in_rows:
                    yield counter_row(self.target, counters)
                else:
                    self.accumulator.add(counters)


@dataclass
class _Keys:
    """Join keys for a read: the distinct keys collected to the driver (``table``), or only
    their range when there are more than ``max_keys`` (``range``, a structured predicate),
    and where they came from, for Spark's semi join."""

    on: list[str]
    source: Any
    table: Any = None
    range: dict[str, Any] | None = None

    @property
    def exact(self) -> bool:
        """Whether pqindex's own filter is the semi join (every key collected)."""
        return self.table is not None

    @staticmethod
    def of(spark: Any, keys: Any, on: Any, max_keys: int) -> _Keys | None:
        from pqindex._keys import key_columns, key_table

        names = key_columns(on)
        if (keys is None) != (names is None):
            raise pqindex.InvalidArgumentError("keys and on go together")
        if keys is None or names is None:
            return None
        if not _is_spark_frame(keys):
            return _Keys(names, None, key_table(keys, names))
        chosen = keys.select(*names) if all(n in keys.columns for n in names) else keys
        if len(chosen.columns) != len(names):
            raise pqindex.InvalidArgumentError(
                f"keys have columns {chosen.columns}; on names {len(names)} key columns"
            )
        chosen = chosen.toDF(*names).dropna()
        # Collected as they are first (a shuffle-free job) and made distinct here; Spark's
        # distinct runs only when more than max_keys rows come back.
        rows = chosen.limit(max_keys + 1).toArrow()
        if rows.num_rows <= max_keys:
            return _Keys(names, chosen, _distinct_rows(rows, names))
        chosen = chosen.distinct()
        collected = chosen.limit(max_keys + 1).toArrow()
        if collected.num_rows <= max_keys:
            return _Keys(names, chosen, collected)
        from pyspark.sql import functions as F

        bounds = chosen.agg(
            *(F.min(n).alias(f"lo{i}") for i, n in enumerate(names)),
            *(F.max(n).alias(f"hi{i}") for i, n in enumerate(names)),
        ).toArrow()
        parts = []
        for i, n in enumerate(names):
            lo, hi = bounds.column(f"lo{i}")[0].as_py(), bounds.column(f"hi{i}")[0].as_py()
            low, high = _bound(lo), _bound(hi)
            if low is not None and high is not None:
                parts.append({"op": "between", "args": [{"col": n}, low, high]})
        return _Keys(names, chosen, None, conjunction(parts) if parts else None)

    def frame(self, spark: Any) -> Any:
        """The keys as a Spark DataFrame, for the semi join."""
        if self.source is not None:
            return self.source
        return spark.createDataFrame(self.table)


def _distinct_rows(table: Any, names: list[str]) -> Any:
    """``table``'s distinct rows; ``table`` itself for key types Arrow cannot group (a
    repeated key only repeats an IN list's item)."""
    import pyarrow as pa

    try:
        return table.group_by(names, use_threads=False).aggregate([]).select(names)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        return table


def _table_format(source: Any) -> str | None:
    """``"iceberg"`` for a pyiceberg Table, ``"delta"`` for a Delta table's directory."""
    import os

    from pqindex import _iceberg, _native

    if _iceberg.is_table(source):
        return "iceberg"
    if isinstance(source, str | os.PathLike):
        found = _native.table_format(os.fspath(source))
        return None if found is None else str(found)
    return None


def _is_spark_frame(value: Any) -> bool:
    return type(value).__name__ == "DataFrame" and hasattr(value, "sparkSession")


def _bound(value: Any) -> dict[str, Any] | None:
    """A key's bound as a structured literal: numbers, strings and dates (a bound of another
    type is not pushed; Spark's semi join still keeps the result exact)."""
    import datetime as dt
    from decimal import Decimal

    from pyspark.sql import types as T

    spark_type: T.DataType
    if isinstance(value, bool) or value is None or isinstance(value, dt.datetime):
        return None
    if isinstance(value, int | Decimal):
        spark_type = T.DecimalType(38, 0) if isinstance(value, Decimal) else T.LongType()
        if isinstance(value, int) and not -(1 << 63) <= value < 1 << 63:
            value, spark_type = Decimal(value), T.DecimalType(38, 0)
    elif isinstance(value, str):
        spark_type = T.StringType()
    elif isinstance(value, dt.date):
        spark_type = T.DateType()
    else:
        return None
    return literal(value, spark_type)


def _nullable(schema: Any) -> Any:
    """``schema`` with nullable top-level columns, as Spark's Parquet reader reports them."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(f.name, f.dataType, True, f.metadata) for f in schema])


def _selected_schema(df: Any, columns: list[str]) -> Any:
    """The schema of ``df.select(*columns)``. Where each column names one of ``df``'s
    fields exactly, and no other field spells it in another case, that is those fields,
    taken from ``df``'s schema (cached by PySpark) without asking Spark to analyse the
    select; anything else (nested paths, quoting, case) Spark resolves."""
    from pyspark.sql import types as T

    schema = df.schema
    names = schema.fieldNames()
    if columns == names:
        return schema
    spellings = Counter(n.lower() for n in names)
    if all(_IDENTIFIER.match(c) and c in names and spellings[c.lower()] == 1 for c in columns):
        return T.StructType([schema[c] for c in columns])
    return df.select(*columns).schema


def read(
    spark: Any,
    source: Any,
    where: Any = None,
    columns: Sequence[str] | None = None,
    **options: Any,
) -> Any:
    """The rows of ``spark.read.parquet(source).where(where).select(columns)``, reading only
    the pages that can match. ``where`` is SQL text or a ``pyspark.sql.Column``. ``source``
    is a Parquet file, a directory or a list of them, a Delta table's directory, a pyiceberg
    ``Table``, or the name of a catalog table (``"db.events"``; a string that cannot be a
    path and that ``spark.catalog.tableExists`` knows), read as Spark reads that table.

    With ``keys`` (a Spark DataFrame, an Arrow table or array, or a Python sequence) and
    ``on`` (the key column or columns), only the rows whose key is among the keys: a left
    semi join, SQL NULL semantics. Up to ``max_keys`` distinct keys are collected to the
    driver and prune files, row groups and pages as an IN list would; more keys prune by
    their range only. Spark's semi join keeps the result exact.

    ``limit`` returns at most that many of the rows (``df.limit(n)``), each task stopping
    once it has them where pqindex's rows need no filtering by Spark; with ``order_by``
    (``"ts desc"``, ``[("ts", "desc"), "k"]``, as ``pqindex.scan`` takes it) the first
    rows in that order, NULLs last: each task reads only the pages that can hold one of
    its top rows, and Spark orders their union."""
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
