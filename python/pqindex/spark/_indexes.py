"""``pqindex.spark.build_indexes``: add embedded indexes to every file of a dataset, one
Spark task per group of files, each file rewritten crash-safely by ``pqindex.add_indexes``.

A Delta or Iceberg table's files are never rewritten: their indexes go to one Puffin file
beside the table (``docs/tables.md``), built by ``pqindex.add_indexes`` on the driver, which
must reach the table's files."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pqindex
from pqindex._indexes import IndexDefinition, check_definitions
from pqindex._native import list_files
from pqindex.spark._guard import guarded
from pqindex.spark._session import default_parallelism
from pqindex.spark._storage import is_remote, storage_options_for

_REPORT_SCHEMA = (
    "file string, kinds string, skipped boolean, bytes_added long, seconds double, error string"
)


def _table_report(spark: Any, table: Any, definitions: list[IndexDefinition]) -> Any:
    """Index a table's files into its Puffin file, as one report row (``file`` the Puffin
    file written, ``bytes_added`` its size)."""
    start = time.perf_counter()
    report = pqindex.add_indexes(table, definitions)
    kinds = ",".join(sorted({d.kind for d in definitions}))
    row = (
        str(report.get("index_file", "")),
        kinds,
        False,
        int(report.get("bytes", 0)),
        time.perf_counter() - start,
        None,
    )
    return spark.createDataFrame([row], _REPORT_SCHEMA)


def dataset_files(
    source: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None
) -> list[str]:
    """The data files of ``source`` under Spark's path rules (names starting with ``_`` or
    ``.`` are not data), listed by the core as every pqindex read lists them."""
    path = os.fspath(source)
    if not is_remote([path]):
        path = os.path.abspath(path)
    return list_files(path, storage_options=storage_options)


def _identities(index: IndexDefinition) -> list[tuple[str, str, str]]:
    """(kind, column, granularity) of each index the definition makes: what identifies an
    index in a file."""
    return index.identities()


@dataclass
class _IndexTask:
    """The function ``mapInArrow`` runs: index each file named in its rows."""

    indexes: list[IndexDefinition]
    storage_options: dict[str, Any] | None = None

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        report: dict[str, list[Any]] = {
            "file": [],
            "kinds": [],
            "skipped": [],
            "bytes_added": [],
            "seconds": [],
            "error": [],
        }
        kinds = ",".join(sorted({k for i in self.indexes for k, _, _ in _identities(i)}))
        options = self.storage_options
        for batch in batches:
            for path in batch.column(0).to_pylist():
                start = time.perf_counter()
                skipped, added, error = False, 0, None
                try:
                    present = {
                        (ix["kind"], ix["columns"][0], ix["granularity"])
                        for ix in pqindex.list_indexes(path, storage_options=options)
                    }
                    missing = [i for i in self.indexes if not set(_identities(i)) <= present]
                    if missing:
                        r = pqindex.add_indexes(path, missing, storage_options=options)
                        added = r["bytes_after"] - r["bytes_before"]
                    else:
                        skipped = True
                except Exception as e:  # one bad file must not fail the others
                    error = f"{type(e).__name__}: {e}"
                report["file"].append(path)
                report["kinds"].append(kinds)
                report["skipped"].append(skipped)
                report["bytes_added"].append(added)
                report["seconds"].append(time.perf_counter() - start)
                report["error"].append(error)
        yield pa.RecordBatch.from_pydict(
            report,
            schema=pa.schema(
                [
                    ("file", pa.string()),
                    ("kinds", pa.string()),
                    ("skipped", pa.bool_()),
                    ("bytes_added", pa.int64()),
                    ("seconds", pa.float64()),
                    ("error", pa.string()),
                ]
            ),
        )


def build_indexes(
    spark: Any,
    source: Any,
    indexes: Sequence[IndexDefinition],
    *,
    parallelism: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Any:
    """Add ``indexes`` to every data file of ``source`` in parallel and return a report
    DataFrame: ``file``, ``kinds``, ``skipped`` (the file already had every index with the
    same kind, column and granularity), ``bytes_added``, ``seconds``, ``error`` (one file
    failing does not stop the others). Running it again is safe: indexed files are skipped.

    An object-store dataset (``s3a://...``) is listed by pqindex and each object is replaced
    by its indexed copy; credentials come from ``storage_options`` or the session's
    ``fs.s3a.*`` settings.
    """
    definitions = list(indexes)
    if not definitions:
        raise pqindex.InvalidArgumentError("build_indexes needs at least one index definition")
    check_definitions(definitions)
    from pqindex.spark._read import _table_format

    if _table_format(source) is not None:
        return _table_report(spark, source, definitions)
    options = storage_options_for(spark, [os.fspath(source)], storage_options)
    files = dataset_files(source, options)
    slices = max(1, min(len(files), parallelism or default_parallelism(spark)))
    paths = spark.createDataFrame([(f,) for f in files], "path string").repartition(slices)
    return paths.mapInArrow(guarded(_IndexTask(definitions, options)), _REPORT_SCHEMA)
