"""``pqindex.scan``: plan a scan of loose Parquet files, a Delta table's directory (at a
version or a point in time), or an Iceberg table (a pyiceberg ``Table``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pqindex import _native
from pqindex._errors import InvalidArgumentError, UnsupportedError
from pqindex._keys import key_columns, key_table

if TYPE_CHECKING:
    from pqindex._native import Decode, Decryption, Scan, StorageOptions, Where


def timestamp_ms(value: Any) -> int | None:
    """``value`` (a datetime, naive meaning UTC; an ISO-8601 string; or ms since the epoch)
    as milliseconds since the epoch."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidArgumentError(f"timestamp must be a datetime, text or ms, not {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError as e:
            raise InvalidArgumentError(f"timestamp {value!r} is not ISO-8601 text") from e
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return int(value.timestamp() * 1000)
    raise InvalidArgumentError(f"timestamp must be a datetime, text or ms, not {value!r}")


#: ``order_by``: a column, ``"column desc"``, or a list of those and ``(column, "asc" |
#: "desc")`` pairs.
OrderBy = str | tuple[str, str] | Sequence[str | tuple[str, str]]


def order_keys(order_by: OrderBy | None) -> list[tuple[str, bool]] | None:
    """``order_by`` as ``(column, descending)`` pairs."""
    if order_by is None:
        return None
    items: Sequence[Any] = (
        [order_by]
        if isinstance(order_by, str)
        or (
            isinstance(order_by, tuple)
            and len(order_by) == 2
            and isinstance(order_by[1], str)
            and order_by[1].lower() in ("asc", "desc")
        )
        else order_by
    )
    keys = []
    for item in items:
        if isinstance(item, str):
            name, _, direction = item.strip().rpartition(" ")
            if not name or direction.lower() not in ("asc", "desc"):
                name, direction = item.strip(), "asc"
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
            name, direction = item
        else:
            raise InvalidArgumentError(
                f"order_by item {item!r} is not a column or (column, 'asc'|'desc')"
            )
        if not isinstance(direction, str) or direction.lower() not in ("asc", "desc"):
            raise InvalidArgumentError(f"order_by direction {direction!r} is not 'asc' or 'desc'")
        keys.append((name.strip(), direction.lower() == "desc"))
    if not keys:
        raise InvalidArgumentError("order_by names no column")
    return keys


def scan(
    source: Any,
    where: Where | None = None,
    columns: Sequence[str] | None = None,
    batch_size: int = 65536,
    threads: int | None = None,
    *,
    catalog: bool = True,
    storage_options: StorageOptions | None = None,
    version: int | None = None,
    timestamp: Any = None,
    snapshot_id: int | None = None,
    keys: Any = None,
    on: str | Sequence[str] | None = None,
    read_ahead: int | None = None,
    string_view: bool = False,
    decode: Decode | None = None,
    limit: int | None = None,
    order_by: OrderBy | None = None,
    decryption: Decryption | None = None,
) -> Scan:
    """Plan a scan of ``source``, pruning with ``where`` (SQL as DuckDB reads it).

    With ``keys`` and ``on``, only the rows whose ``on`` columns hold one of the keys (a
    left semi join, SQL NULL semantics: a NULL key matches nothing); files, row groups and
    pages are pruned with the keys as with an IN list, however many there are (see
    ``pqindex._keys`` for the forms keys take).

    ``source`` is a Parquet file, a directory of them (hive partitions from ``key=value``
    directories), a list of files, the directory of a Delta table (the latest version, or
    ``version``, or the version current at ``timestamp``), or a pyiceberg ``Table`` (its
    current snapshot, or ``snapshot_id``, or the one current at ``timestamp``). A table is
    read as its metadata says: only the snapshot's files, its partition values and
    statistics, its deletes applied, its columns under their current names.

    ``read_ahead`` bounds, in bytes, what the scan's stream holds for row groups ahead of
    the one the consumer is reading (their fetched pages and decoded batches); by default
    the process-wide ``pqindex.read_ahead()`` (256 MiB; ``pqindex.set_read_ahead``).

    With ``string_view=True``, string and binary columns come out as Arrow views
    (``string_view``, ``binary_view``), the layout polars and DuckDB hold strings in: a
    page decodes into views of its own bytes, or of its dictionary's, instead of a copy of
    every value, which makes wide reads of string columns cheaper. Nested strings (in
    lists and structs) keep their type. Ask for views when handing the scan to polars
    (``polars.DataFrame(scan)``), which otherwise converts every string into a view.

    ``decode="stock"`` reads every unit with the parquet crate's own reader (its row
    selection and row filter) instead of pqindex's decoders: the same rows, usually
    slower; for checking a result against the crate's reading (``PQINDEX_DECODE=stock`` in
    the environment does the same for every scan).

    ``limit`` returns at most that many rows: the first rows that satisfy ``where`` in the
    order the scan reads its units, which puts first the row groups whose statistics prove
    that every row matches. The scan stops fetching once it has them.

    ``order_by`` (with ``limit``) makes them the first rows in that order, NULLs last as
    in DuckDB: a column name, ``"ts desc"``, or a list of names and ``(name, "desc")``
    pairs. Only the row groups whose statistics can hold one of those rows are read; the
    order columns must be among ``columns``.

    ``decryption`` reads files under Parquet modular encryption: a dict with the
    ``footer_key`` and ``column_keys`` (by column path) as bytes, or a ``key_retriever``
    called with the key metadata a file stores and returning its key, and an
    ``aad_prefix`` where the file does not store its own (``docs/encryption.md``). Without
    it an encrypted file raises :class:`EncryptedFileError`.
    """
    order = order_keys(order_by)
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise InvalidArgumentError(f"limit must be a non-negative integer, not {limit!r}")
    from pqindex import _iceberg

    on_columns = key_columns(on)
    if (keys is None) != (on_columns is None):
        raise InvalidArgumentError("keys and on go together")
    key_data = None if keys is None or on_columns is None else key_table(keys, on_columns)
    if _iceberg.is_table(source):
        if decryption is not None:
            raise UnsupportedError("decryption= applies to Parquet files and Delta tables")
        if version is not None:
            raise InvalidArgumentError("an Iceberg table takes snapshot_id, not version")
        planned: Scan = _iceberg.scan(
            source,
            where,
            columns,
            batch_size,
            threads,
            snapshot_id=snapshot_id,
            timestamp_ms=timestamp_ms(timestamp),
            options=storage_options,
            keys=key_data,
            on=on_columns,
            read_ahead=read_ahead,
            string_view=string_view,
            decode=decode,
            limit=limit,
            order_by=order,
        )
        return planned
    if snapshot_id is not None:
        raise InvalidArgumentError("snapshot_id applies to Iceberg tables (pyiceberg Table)")
    return _native.scan(
        source,
        where,
        columns,
        batch_size,
        threads,
        catalog=catalog,
        storage_options=storage_options,
        version=version,
        timestamp_ms=timestamp_ms(timestamp),
        keys=key_data,
        on=on_columns,
        read_ahead=read_ahead,
        string_view=string_view,
        decode=decode,
        limit=limit,
        order_by=order,
        decryption=decryption,
    )
