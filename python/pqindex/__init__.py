"""pqindex: selective queries over Parquet that read only the pages that can match."""

from typing import TYPE_CHECKING

from pqindex._aggregate import aggregate
from pqindex._errors import (
    EncryptedFileError,
    FileChangedError,
    IndexWarning,
    InvalidArgumentError,
    InvalidFileError,
    InvalidIndexError,
    NotFoundError,
    PqindexError,
    PredicateError,
    ScanConsumedError,
    SourceError,
    StorageError,
    UnsupportedError,
)
from pqindex._indexes import INDEX_CLASSES as _INDEX_CLASSES
from pqindex._indexes import IndexDefinition, add_indexes, drop_indexes, list_indexes, recover
from pqindex._native import (
    Aggregation,
    Catalog,
    FileMetadata,
    Scan,
    __version__,
    approx_distinct,
    clear_metadata_cache,
    metadata_cache_info,
    read_ahead,
    read_metadata,
    set_metadata_cache_capacity,
    set_read_ahead,
    verify,
)
from pqindex._scan import scan
from pqindex._write import write

if TYPE_CHECKING:
    # The index classes (DistinctIndex, BloomIndex, ...) come from the Rust registry of
    # index kinds at import; type checkers see them through this.
    def __getattr__(name: str) -> type[IndexDefinition]: ...


globals().update(_INDEX_CLASSES)

__all__ = [
    *_INDEX_CLASSES,
    "Aggregation",
    "Catalog",
    "FileChangedError",
    "FileMetadata",
    "IndexDefinition",
    "IndexWarning",
    "InvalidArgumentError",
    "InvalidFileError",
    "InvalidIndexError",
    "NotFoundError",
    "PqindexError",
    "PredicateError",
    "Scan",
    "ScanConsumedError",
    "SourceError",
    "StorageError",
    "UnsupportedError",
    "EncryptedFileError",
    "__version__",
    "add_indexes",
    "aggregate",
    "approx_distinct",
    "clear_metadata_cache",
    "drop_indexes",
    "list_indexes",
    "metadata_cache_info",
    "read_ahead",
    "read_metadata",
    "recover",
    "scan",
    "set_metadata_cache_capacity",
    "set_read_ahead",
    "verify",
    "write",
]
