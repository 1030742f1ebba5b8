"""The exceptions pqindex raises; all share the base class :class:`PqindexError`.

Each also derives from the built-in exception a caller would expect, so ``except
FileNotFoundError`` or ``except ValueError`` keep working.
"""


class PqindexError(Exception):
    """Base class of every error raised by pqindex."""


class NotFoundError(PqindexError, FileNotFoundError):
    """A file or directory named by the caller does not exist."""


class InvalidFileError(PqindexError, ValueError):
    """A file is not Parquet, or its footer, page index or bloom filter is damaged."""


class EncryptedFileError(PqindexError, ValueError):
    """A file is encrypted (Parquet modular encryption) and ``decryption=`` gives no keys
    for it, or keys that do not decrypt it."""


class InvalidIndexError(InvalidFileError):
    """An embedded index is damaged, truncated or of a version this pqindex does not read."""


class PredicateError(PqindexError, ValueError):
    """A predicate cannot be parsed, names an unknown column, or has a literal of the wrong type."""


class InvalidArgumentError(PqindexError, ValueError):
    """An argument other than the predicate is invalid (an unknown name in ``columns``)."""


class UnsupportedError(PqindexError, NotImplementedError):
    """Valid input that pqindex does not handle (a predicate on a list column, for instance)."""


class SourceError(PqindexError, ValueError):
    """A source cannot be read as loose Parquet files (a Delta or Iceberg table, say)."""


class FileChangedError(PqindexError):
    """A file changed between planning a scan and reading it."""


class StorageError(PqindexError, OSError):
    """Reading from or writing to storage failed."""


class ScanConsumedError(PqindexError):
    """The rows of a scan were already consumed."""


class IndexWarning(UserWarning):
    """An embedded index was skipped (damaged, of an unknown version, or not describing its
    file); the scan planned without it and its results are still exact."""
