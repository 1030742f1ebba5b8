"""``pqindex.aggregate``: count, min, max, sum and avg over the rows a predicate keeps, of
loose Parquet files, a Delta table's directory, or an Iceberg table (a pyiceberg
``Table``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pqindex import _native
from pqindex._errors import InvalidArgumentError
from pqindex._scan import timestamp_ms

if TYPE_CHECKING:
    from pqindex._native import Aggregation, StorageOptions, Where


def aggregate(
    source: Any,
    select: str,
    where: Where | None = None,
    *,
    threads: int | None = None,
    storage_options: StorageOptions | None = None,
    version: int | None = None,
    timestamp: Any = None,
    snapshot_id: int | None = None,
) -> Aggregation:
    """Compute ``select`` (count(*), count, min, max, sum, avg) over the rows of ``source``
    satisfying ``where``, answering from aggregates indexes where every row of a unit
    satisfies it and reading data pages only for the rest.

    ``source`` is what ``scan`` takes: Parquet files or a directory of them, the directory
    of a Delta table (its latest version, or ``version``, or the one current at
    ``timestamp``), or a pyiceberg ``Table`` (its current snapshot, or ``snapshot_id``, or
    the one current at ``timestamp``). A table's rows are the ones a scan of it returns:
    its deletes applied, its columns under their current names. A whole table's
    ``count(*)`` comes from its metadata (its files' record counts less their deleted
    rows), no file opened.
    """
    from pqindex import _iceberg

    if _iceberg.is_table(source):
        if version is not None:
            raise InvalidArgumentError("an Iceberg table takes snapshot_id, not version")
        return _iceberg.aggregate(  # type: ignore[no-any-return]
            source,
            select,
            where,
            threads=threads,
            snapshot_id=snapshot_id,
            timestamp_ms=timestamp_ms(timestamp),
            options=storage_options,
        )
    if snapshot_id is not None:
        raise InvalidArgumentError("snapshot_id applies to Iceberg tables (pyiceberg Table)")
    return _native.aggregate(
        source,
        select,
        where,
        threads=threads,
        storage_options=storage_options,
        version=version,
        timestamp_ms=timestamp_ms(timestamp),
    )
