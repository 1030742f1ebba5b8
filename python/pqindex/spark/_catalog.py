"""``pqindex.spark.build_catalog``: summarise every file of a dataset in Spark tasks, then
write the catalog on the driver as one new version (see ``pqindex.Catalog``)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pqindex
from pqindex.spark._guard import guarded
from pqindex.spark._indexes import dataset_files
from pqindex.spark._session import default_parallelism


@dataclass
class _SummariseTask:
    """The function ``mapInArrow`` runs: catalog rows for the files of its partition, as
    Arrow IPC (the rows' column names hold dots, which Spark schemas do not take)."""

    root: str
    columns: list[tuple[str, bool, float]]

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from pqindex._native import catalog_rows

        for batch in batches:
            paths = batch.column(0).to_pylist()
            if not paths:
                continue
            rows = catalog_rows(self.root, paths, self.columns)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, rows.schema) as writer:
                writer.write_table(rows)
            yield pa.RecordBatch.from_pydict(
                {"rows": [sink.getvalue().to_pybytes()]},
                schema=pa.schema([("rows", pa.binary())]),
            )


def build_catalog(
    spark: Any,
    source: str | os.PathLike[str],
    columns: Sequence[str] = (),
    *,
    bloom: Sequence[str] | None = None,
    fpp: float = 0.01,
    parallelism: int | None = None,
) -> pqindex.Catalog:
    """Build the catalog of the dataset directory ``source`` with the files summarised in
    parallel by Spark: the same catalog ``pqindex.Catalog.build`` writes. The directory is
    local (or mounted) on the driver and the executors: the core's summaries of a file
    (``catalog_rows``) do not take ``storage_options`` yet."""
    import pyarrow as pa

    root = os.path.abspath(os.fspath(source))
    if not os.path.isdir(root):
        raise pqindex.SourceError(f"{root}: a catalog describes a dataset directory")
    if not 0.0 < fpp < 1.0:
        raise pqindex.InvalidArgumentError(f"fpp must be between 0 and 1; got {fpp!r}")
    blooms = list(columns) if bloom is None else list(bloom)
    if not columns:
        # As Catalog.build: every column statistics can bound, blooms only where asked.
        columns = pqindex.Catalog.default_columns(root)
    names = list(dict.fromkeys([*columns, *blooms]))
    specs = [(name, name in blooms, fpp) for name in names]
    files = dataset_files(root)
    slices = max(1, min(len(files), parallelism or default_parallelism(spark)))
    paths = spark.createDataFrame([(f,) for f in files], "path string").repartition(slices)
    parts = paths.mapInArrow(guarded(_SummariseTask(root, specs)), "rows binary").collect()
    tables = [pa.ipc.open_stream(row["rows"]).read_all() for row in parts]
    rows = pa.concat_tables(tables) if tables else None
    if rows is None:
        raise pqindex.SourceError(f"{root}: no data files to catalog")
    return pqindex._native.write_catalog(root, specs, rows)
