"""pqindex: selective queries over Parquet that read only the pages that can match."""

from pqindex._errors import (
    FileChangedError,
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
from pqindex._native import (
    FileMetadata,
    Scan,
    __version__,
    clear_metadata_cache,
    metadata_cache_info,
    read_metadata,
    scan,
    set_metadata_cache_capacity,
    write,
)

__all__ = [
    "FileChangedError",
    "FileMetadata",
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
    "__version__",
    "clear_metadata_cache",
    "metadata_cache_info",
    "read_metadata",
    "scan",
    "set_metadata_cache_capacity",
    "write",
]
