"""Iceberg tables, planned from their manifests with pyiceberg (``pip install
pqindex[iceberg]``) and read by pqindex's core.

pyiceberg lists the snapshot's data files with their record counts and per-column bounds
and null counts (by field id), and matches delete files to them. Here that becomes plain
data for the core: one row per data file (path, size, records, the positions its position
deletes or deletion vector remove, bounds decoded into the table's column types), and the
table's schema in Arrow with each field's id. The core then plans it as it plans a Delta
table: files ruled out by their bounds unopened, columns matched by field id (renames and
dropped columns), deleted rows left out before any page is read.

Equality deletes are refused, as pyiceberg's own reader refuses them: a file's rows cannot
be narrowed by them before reading.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pqindex import _native
from pqindex._errors import NotFoundError, SourceError, UnsupportedError

if TYPE_CHECKING:
    from pqindex._native import Decode, Where

# The name every index file pqindex writes starts with; others' statistics files are not
# pqindex's to replace or remove.
INDEX_FILE_PREFIX = "pqindex-"


def is_table(source: Any) -> bool:
    """Whether ``source`` is a pyiceberg ``Table`` (without importing pyiceberg)."""
    return any(
        c.__module__.startswith("pyiceberg.") and c.__name__ == "Table"
        for c in type(source).__mro__
    )


def _name(table: Any) -> str:
    """The table's identifier as users write it (``db.events``)."""
    name = table.name()
    return ".".join(name) if isinstance(name, tuple) else str(name)


def _local(path: str) -> str:
    """A file URL as pqindex opens it (object-store URLs stay URLs)."""
    return path[len("file://") :] if path.startswith("file://") else path


def _snapshot(table: Any, snapshot_id: int | None, timestamp_ms: int | None) -> Any:
    if snapshot_id is not None and timestamp_ms is not None:
        raise SourceError("give a snapshot_id or a timestamp, not both")
    if snapshot_id is not None:
        snapshot = table.snapshot_by_id(snapshot_id)
        if snapshot is None:
            raise NotFoundError(f"Iceberg table {_name(table)}: no snapshot {snapshot_id}")
        return snapshot
    if timestamp_ms is not None:
        snapshot = table.snapshot_as_of_timestamp(timestamp_ms)
        if snapshot is None:
            raise NotFoundError(
                f"Iceberg table {_name(table)}: no snapshot at or before {timestamp_ms} ms"
            )
        return snapshot
    return table.current_snapshot()


def _leaves(schema: Any) -> list[tuple[str, Any, Any]]:
    """(dotted name, field id, primitive type) of every primitive field outside lists and
    maps: the columns bounds can be kept for."""
    from pyiceberg.types import NestedField, StructType

    out: list[tuple[str, Any, Any]] = []

    def visit(prefix: str, field: NestedField) -> None:
        name = f"{prefix}{field.name}"
        if isinstance(field.field_type, StructType):
            for child in field.field_type.fields:
                visit(name + ".", child)
        elif field.field_type.is_primitive:
            out.append((name, field.field_id, field.field_type))

    for f in schema.fields:
        visit("", f)
    return out


# Planned snapshots, newest use last: a snapshot never changes, so its file rows (under one
# schema) are planned once per process. pyiceberg reads and decodes every manifest on each
# plan_files(), about a second per 10,000 files.
_PLANNED: OrderedDict[tuple[str, int, int], Any] = OrderedDict()
_PLANNED_MAX = 16
_PLANNED_LOCK = threading.Lock()


def _files_table(table: Any, snapshot: Any, schema: Any) -> Any:
    """One row per data file of ``snapshot``: what the core plans with."""
    key = (str(table.metadata.table_uuid), snapshot.snapshot_id, schema.schema_id)
    with _PLANNED_LOCK:
        found = _PLANNED.get(key)
        if found is not None:
            _PLANNED.move_to_end(key)
            return found
    planned = _plan_files(table, snapshot, schema)
    with _PLANNED_LOCK:
        _PLANNED[key] = planned
        while len(_PLANNED) > _PLANNED_MAX:
            _PLANNED.popitem(last=False)
    return planned


def _plan_files(table: Any, snapshot: Any, schema: Any) -> Any:
    import pyarrow as pa
    from pyiceberg.conversions import from_bytes
    from pyiceberg.io.pyarrow import _read_deletes, schema_to_pyarrow

    try:
        tasks = list(table.scan(snapshot_id=snapshot.snapshot_id).plan_files())
    except ValueError as e:
        if "equality deletes" in str(e):
            raise UnsupportedError(
                f"Iceberg table {_name(table)}: equality deletes are not supported "
                f"(a file's rows cannot be narrowed by them before reading): {e}"
            ) from e
        raise _metadata_error(table, e) from e
    except Exception as e:
        raise _metadata_error(table, e) from e
    leaves = _leaves(schema)
    arrow_schema = schema_to_pyarrow(schema)
    arrow_types = {name: _arrow_type(arrow_schema, name) for name, _, _ in leaves}
    deletes_read: dict[str, dict[str, Any]] = {}
    identity = _identity_columns(table, schema)
    paths, sizes, records, deleted, identities = [], [], [], [], []
    # ``from_bytes`` dispatches on the type at every call; a table of many files and
    # columns decodes a bound per file and leaf, so each leaf's decoder is looked up once.
    decoders: list[tuple[str, Any, Any, Any]] = [
        (name, field_id, ptype, from_bytes.dispatch(type(ptype)))
        for name, field_id, ptype in leaves
    ]
    mins: dict[str, list[Any]] = {name: [] for name, _, _ in leaves}
    maxs: dict[str, list[Any]] = {name: [] for name, _, _ in leaves}
    nulls: dict[str, list[Any]] = {name: [] for name, _, _ in leaves}
    for task in tasks:
        f = task.file
        paths.append(_local(f.file_path))
        sizes.append(f.file_size_in_bytes)
        records.append(f.record_count)
        positions: set[int] = set()
        for d in task.delete_files:
            key = d.file_path
            if key not in deletes_read:
                deletes_read[key] = _read_deletes(table.io, d)
            hits = deletes_read[key].get(f.file_path)
            if hits is not None:
                positions.update(hits.to_pylist())
        deleted.append(sorted(positions) if task.delete_files else None)
        identities.append(identity.get(f.spec_id))
        lower, upper = f.lower_bounds or {}, f.upper_bounds or {}
        counts = f.null_value_counts or {}
        for name, field_id, ptype, decode in decoders:
            lo, hi = lower.get(field_id), upper.get(field_id)
            mins[name].append(None if lo is None else decode(ptype, lo))
            maxs[name].append(None if hi is None else decode(ptype, hi))
            nulls[name].append(counts.get(field_id))
    columns: dict[str, Any] = {
        "path": pa.array(paths, pa.string()),
        "size": pa.array(sizes, pa.int64()),
        "records": pa.array(records, pa.int64()),
        "deleted": pa.array(deleted, pa.list_(pa.int64())),
        "identity": pa.array(identities, pa.list_(pa.string())),
    }
    for name, _, _ in leaves:
        columns[f"min:{name}"] = _bounds(mins[name], arrow_types[name])
        columns[f"max:{name}"] = _bounds(maxs[name], arrow_types[name])
        columns[f"nulls:{name}"] = pa.array(nulls[name], pa.int64())
    return pa.table(columns)


def _metadata_error(table: Any, e: Exception) -> Exception:
    """A typed error for a snapshot whose manifests cannot be read (missing, truncated or
    damaged), naming the table; the message of pyiceberg's error names the file."""
    if isinstance(e, FileNotFoundError):
        return NotFoundError(f"Iceberg table {_name(table)}: a metadata file is missing: {e}")
    return SourceError(
        f"Iceberg table {_name(table)}: its manifests cannot be read ({type(e).__name__}: {e})"
    )


def _identity_columns(table: Any, schema: Any) -> dict[int, list[str]]:
    """Per partition spec id, the top-level columns of ``schema`` it partitions by identity.
    A data file lacking one of them (migrated from a Hive table) holds its value only in
    the manifest; the core refuses such a file rather than read the column as NULL."""
    from pyiceberg.transforms import IdentityTransform

    out: dict[int, list[str]] = {}
    for spec_id, spec in table.specs().items():
        names = []
        for field in spec.fields:
            if not isinstance(field.transform, IdentityTransform):
                continue
            name = schema.find_column_name(field.source_id)
            if name is not None and "." not in name:
                names.append(name)
        if names:
            out[spec_id] = names
    return out


def _arrow_type(schema: Any, dotted: str) -> Any:
    """The Arrow type of the (possibly nested) field ``dotted`` of ``schema``."""
    parts = dotted.split(".")
    field = schema.field(parts[0])
    for part in parts[1:]:
        field = field.type.field(part)
    return field.type


def _bounds(values: list[Any], arrow_type: Any) -> Any:
    """Decoded bounds as an array of the column's type; a bound that does not convert
    (a type the core does not prune on) is left out."""
    import pyarrow as pa

    try:
        return pa.array(values, arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return pa.nulls(len(values), arrow_type)


# pyiceberg FileIO properties and the object_store keys pqindex reads them as.
_STORAGE_KEYS = {
    "s3.endpoint": "endpoint",
    "s3.access-key-id": "access_key_id",
    "s3.secret-access-key": "secret_access_key",
    "s3.session-token": "session_token",
    "s3.region": "region",
    "s3.force-virtual-addressing": "virtual_hosted_style_request",
    "adls.account-name": "account_name",
    "adls.account-key": "account_key",
    "adls.sas-token": "sas_key",
    "gcs.oauth2.token": "bearer_token",
}
# pyiceberg's client-wide fallbacks for the S3 keys.
_CLIENT_KEYS = {
    "client.access-key-id": "access_key_id",
    "client.secret-access-key": "secret_access_key",
    "client.session-token": "session_token",
    "client.region": "region",
}


def storage_options(table: Any) -> dict[str, str]:
    """The storage options the table's FileIO is configured with, as object_store keys."""
    props = getattr(table.io, "properties", {}) or {}
    out: dict[str, str] = {}
    for keys in (_CLIENT_KEYS, _STORAGE_KEYS):  # the specific keys win
        for key, option in keys.items():
            if props.get(key) is not None:
                out[option] = str(props[key])
    return out


def _snapshot_args(
    table: Any,
    snapshot_id: int | None,
    timestamp_ms: int | None,
    options: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """What the core takes of a snapshot of ``table`` (its current one, ``snapshot_id``,
    or the one current at ``timestamp_ms``): its files, schema, root, version, index
    files, storage options and the key its converted files are kept under."""
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    snapshot = _snapshot(table, snapshot_id, timestamp_ms)
    schemas = table.schemas()
    if snapshot is None:
        schema = table.schema()
        files = None
        version = -1
        cache_key = None
    else:
        # As pyiceberg reads: the table's current schema for its current snapshot (renames
        # make no snapshot), the snapshot's own when traveling back in time.
        current = snapshot_id is None and timestamp_ms is None
        schema = table.schema() if current else schemas.get(snapshot.schema_id, table.schema())
        files = _files_table(table, snapshot, schema)
        version = snapshot.snapshot_id
        cache_key = f"iceberg:{table.metadata.table_uuid}:{version}:{schema.schema_id}"
    return {
        "files": files,
        "schema": schema_to_pyarrow(schema),
        "root": _local(table.location()),
        "version": version,
        "index_files": index_files(table),
        "storage_options": {**storage_options(table), **(options or {})} or None,
        "cache_key": cache_key,
    }


def scan(
    table: Any,
    where: Where | None,
    columns: Sequence[str] | None,
    batch_size: int,
    threads: int | None,
    *,
    snapshot_id: int | None,
    timestamp_ms: int | None,
    options: Mapping[str, Any] | None = None,
    keys: Any = None,
    on: Sequence[str] | None = None,
    read_ahead: int | None = None,
    string_view: bool = False,
    decode: Decode | None = None,
    limit: int | None = None,
    order_by: Sequence[tuple[str, bool]] | None = None,
) -> Any:
    """A pqindex scan of an Iceberg table's snapshot (see the module doc). The object
    store is reached with the table's FileIO properties, ``options`` over them."""
    return _native.scan_table(
        **_snapshot_args(table, snapshot_id, timestamp_ms, options),
        where=where,
        columns=None if columns is None else list(columns),
        batch_size=batch_size,
        threads=threads,
        keys=keys,
        on=None if on is None else list(on),
        read_ahead=read_ahead,
        string_view=string_view,
        decode=decode,
        limit=limit,
        order_by=order_by,
    )


def aggregate(
    table: Any,
    select: str,
    where: Where | None,
    *,
    threads: int | None,
    snapshot_id: int | None,
    timestamp_ms: int | None,
    options: Mapping[str, Any] | None = None,
) -> Any:
    """``pqindex.aggregate`` over an Iceberg table's snapshot: the rows a scan of it
    holds."""
    args = _snapshot_args(table, snapshot_id, timestamp_ms, options)
    files, schema = args.pop("files"), args.pop("schema")
    return _native.aggregate_table(files, schema, select, where, threads=threads, **args)


def index_files(table: Any) -> list[str]:
    """The pqindex Puffin files the table registers as statistics files, newest snapshot
    first (the newest holds every index still valid; its entries win)."""
    sequence = {s.snapshot_id: s.sequence_number for s in table.snapshots()}
    stats = sorted(
        (s for s in table.metadata.statistics if _ours(s)),
        key=lambda s: sequence.get(s.snapshot_id, -1),
        reverse=True,
    )
    return [_local(s.statistics_path) for s in stats]


def _field_ids(schema: Any) -> dict[str, list[int]]:
    return {name: [field_id] for name, field_id, _ in _leaves(schema)}


def _ours(statistics: Any) -> bool:
    """Whether a registered statistics file is one pqindex wrote (by its name)."""
    return bool(statistics.statistics_path.rsplit("/", 1)[-1].startswith(INDEX_FILE_PREFIX))


def change_indexes(
    table: Any, definitions: list[Any], filters: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Build ``definitions`` for every data file of the table's current snapshot (and,
    with ``filters``, leave out the kept indexes they select) into a new Puffin file in
    the table's metadata directory, registered as the current snapshot's statistics file
    (where orphan-file removal leaves it). The new file keeps every still-valid index, so
    the earlier pqindex statistics files are unregistered and removed in the same commit.
    Data files are not touched.

    A statistics file another writer registered for the current snapshot is refused, not
    replaced: the table keeps one per snapshot."""
    import os

    from pyiceberg.io.pyarrow import schema_to_pyarrow
    from pyiceberg.table.statistics import StatisticsFile

    snapshot = table.current_snapshot()
    if snapshot is None:
        raise SourceError(f"Iceberg table {_name(table)} has no snapshot: nothing to index")
    registered = list(table.metadata.statistics)
    foreign = [s for s in registered if s.snapshot_id == snapshot.snapshot_id and not _ours(s)]
    if foreign:
        raise UnsupportedError(
            f"Iceberg table {_name(table)}: its current snapshot has the statistics file "
            f"{foreign[0].statistics_path}, which another writer registered; pqindex would "
            "replace it"
        )
    schema = table.schema()
    files = _files_table(table, snapshot, schema)
    root = _local(table.location())
    report: dict[str, Any] = _native.change_snapshot_indexes(
        files,
        schema_to_pyarrow(schema),
        definitions,
        root=root,
        version=snapshot.snapshot_id,
        index_files=index_files(table),
        dir=f"{root}/metadata",
        fields=_field_ids(schema),
        **(filters or {}),
    )
    # The file's blobs are listed in its own footer. The table metadata lists none of them:
    # readers of the metadata (pyiceberg among them) accept only the blob types the Iceberg
    # specification names, and pqindex's are its own.
    report.pop("blobs_json")
    statistics = StatisticsFile.model_validate(
        {
            "snapshot-id": snapshot.snapshot_id,
            "statistics-path": f"file://{report['index_file']}",
            "file-size-in-bytes": report["bytes"],
            "file-footer-size-in-bytes": report["footer_bytes"],
            "blob-metadata": [],
        }
    )
    earlier = [s for s in registered if _ours(s) and s.snapshot_id != snapshot.snapshot_id]
    try:
        with table.transaction() as tx:
            # One update per removal: an update keeps only its last removal.
            for s in earlier:
                tx.update_statistics().remove_statistics(s.snapshot_id).commit()
            tx.update_statistics().set_statistics(statistics).commit()
    except BaseException:
        os.remove(report["index_file"])
        raise
    for s in registered:
        if _ours(s) and _local(s.statistics_path) != report["index_file"]:
            try:
                os.remove(_local(s.statistics_path))
            except FileNotFoundError:
                pass
    return report


def list_indexes(table: Any) -> list[dict[str, Any]]:
    """The indexes the table's registered Puffin files keep for its files."""
    result: list[dict[str, Any]] = _native.table_indexes(
        _local(table.location()), index_files(table)
    )
    return result
