"""``pqindex.write``: a Parquet file with the page index, bloom filters and embedded indexes."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pqindex import _native
from pqindex._errors import InvalidArgumentError
from pqindex._indexes import IndexDefinition, add_indexes

if TYPE_CHECKING:
    from pqindex._native import StorageOptions

Compression = Literal["uncompressed", "snappy", "zstd", "lz4", "gzip"]


def _sorted(data: Any, sort_by: Sequence[str]) -> Any:
    """The rows of ``data`` ordered by ``sort_by`` (ascending, nulls last)."""
    try:
        import pyarrow as pa
    except ImportError as e:  # pragma: no cover - pyarrow is there in every test setup
        raise InvalidArgumentError("sort_by needs pyarrow installed") from e
    if hasattr(data, "__arrow_c_stream__"):
        table = pa.RecordBatchReader.from_stream(data).read_all()
    else:
        table = pa.table(pa.record_batch(data))
    return table.sort_by([(c, "ascending") for c in sort_by])


def write(
    data: Any,
    path: Any,
    *,
    indexes: Sequence[IndexDefinition] = (),
    row_group_size: int | None = None,
    page_row_limit: int | None = None,
    bloom_filter_columns: Sequence[str] | None = None,
    bloom_filter_fpp: float = 0.01,
    sort_by: Sequence[str] | None = None,
    compression: Compression = "zstd",
    storage_options: StorageOptions | None = None,
) -> None:
    """Write ``data`` (anything with ``__arrow_c_stream__`` or ``__arrow_c_array__``) to
    ``path`` as Parquet with the page index, Parquet bloom filters on
    ``bloom_filter_columns`` and the embedded ``indexes``.

    The file appears atomically (written under a temporary name, then renamed); embedded
    indexes are added the same way, so ``path`` never holds a partial file. An object-store
    URL (``s3://...``, with ``storage_options``) is written locally first and uploaded in
    one put, so readers see the old object or the new one.
    """
    if sort_by:
        data = _sorted(data, sort_by)
    target = os.fspath(path)
    if _native.is_object_url(target):
        with tempfile.TemporaryDirectory(prefix="pqindex-write-") as scratch:
            local = os.path.join(scratch, "object.parquet")
            write(
                data,
                local,
                indexes=indexes,
                row_group_size=row_group_size,
                page_row_limit=page_row_limit,
                bloom_filter_columns=bloom_filter_columns,
                bloom_filter_fpp=bloom_filter_fpp,
                compression=compression,
            )
            _native.upload(local, target, storage_options=storage_options)
        return
    # With indexes, the file is finished under a hidden name beside the target, so a
    # failure while indexing leaves the target untouched.
    out = target
    if indexes:
        head, name = os.path.split(target)
        out = os.path.join(head, f".{name}.pqindex-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        _native.write(
            data,
            out,
            row_group_size=row_group_size,
            page_row_limit=page_row_limit,
            bloom_filter_columns=bloom_filter_columns,
            bloom_filter_fpp=bloom_filter_fpp,
            compression=compression,
        )
        if indexes:
            add_indexes(out, indexes)
            os.replace(out, target)
    finally:
        if out != target and os.path.exists(out):
            os.remove(out)
