"""Type stubs of the native module built from ``rust/python``."""

from collections.abc import Callable, Mapping, Sequence
from os import PathLike
from typing import Any, Literal, Protocol, TypedDict, final

class _ArrowStream(Protocol):
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...

class _ArrowArray(Protocol):
    def __arrow_c_array__(
        self, requested_schema: object | None = None
    ) -> tuple[object, object]: ...

StrPath = str | PathLike[str]
Source = StrPath | Sequence[StrPath]
# Options of the object store a URL names (endpoint, region, credentials, max_in_flight,
# coalesce_gap, footer_hint, max_retries, retry_timeout, list_cache_ttl, data_cache_size).
StorageOptions = Mapping[str, str | int | float | bool]
# A condition: SQL text as DuckDB reads it, or the structured form (docs/predicates.md).
Where = str | dict[str, Any]
# Who decodes pages: pqindex's decoders, or the parquet crate's stock reader alone.
Decode = Literal["pqindex", "stock"]

class Decryption(TypedDict, total=False):
    """Keys of files under Parquet modular encryption (``docs/encryption.md``)."""

    footer_key: bytes
    column_keys: Mapping[str, bytes]
    aad_prefix: bytes
    key_retriever: Callable[[bytes], bytes]
    verify_footer: bool

__version__: str
#: A scan's counter names, in the order ``Scan.metrics()`` gives them.
METRIC_NAMES: list[str]
#: The counters reading a scan's units adds to.
READ_METRIC_NAMES: list[str]

@final
class Scan:
    """A planned scan: pruned down to the pages that can match, read on demand.

    The rows are consumed once, through ``__arrow_c_stream__`` or ``to_arrow()``.
    """

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def __arrow_c_schema__(self) -> object: ...
    def to_arrow(self) -> Any: ...
    def to_arrow_within(self, max_bytes: int) -> Any | None: ...
    def explain(self) -> str: ...
    def metrics(self) -> dict[str, int]: ...
    def units(self) -> Any:
        """The plan's units (file identity, row group, row ranges, estimated bytes) as a
        pyarrow Table, for ``read_units`` in another process."""
    @property
    def warnings(self) -> list[str]:
        """Embedded indexes planning skipped (damaged, unknown version, not this file's)."""
    @property
    def catalog_root(self) -> str | None:
        """The dataset root whose catalog planning used, if any."""
    @property
    def now_ns(self) -> int:
        """What ``now()`` and ``current_date`` folded to, in ns since the epoch."""

@final
class Aggregation:
    """The one-row answer of ``aggregate``, with how it was obtained."""

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def __arrow_c_schema__(self) -> object: ...
    def to_arrow(self) -> Any: ...
    def explain(self) -> str: ...
    def metrics(self) -> dict[str, int]: ...
    @property
    def warnings(self) -> list[str]: ...

def aggregate(
    source: Source,
    select: str,
    where: Where | None = None,
    *,
    threads: int | None = None,
    storage_options: StorageOptions | None = None,
    version: int | None = None,
    timestamp_ms: int | None = None,
) -> Aggregation:
    """Compute ``select`` (count(*), count, min, max, sum, avg) over the rows of ``source``
    satisfying ``where``, answering from aggregates indexes where every row of a unit
    satisfies it and reading data pages only for the rest."""

def aggregate_table(
    files: _ArrowStream | _ArrowArray | None,
    schema: object,
    select: str,
    where: Where | None = None,
    *,
    root: str,
    version: int,
    index_files: Sequence[str] = (),
    threads: int | None = None,
    storage_options: StorageOptions | None = None,
    cache_key: str | None = None,
) -> Aggregation:
    """``aggregate`` over a table snapshot planned elsewhere (an Iceberg table's): ``files``
    and ``schema`` as ``scan_table`` takes them."""

@final
class Catalog:
    """A dataset's catalog (``<dataset>/_pqindex/``): per data file its identity, row
    counts, column summaries, bloom filters and footer with page index. ``scan`` of the
    dataset directory uses it automatically; files added or changed since it was built are
    planned from their own footers."""

    @staticmethod
    def build(
        source: StrPath,
        columns: Sequence[str] = (),
        *,
        bloom: Sequence[str] | None = None,
        fpp: float = 0.01,
        progress: Callable[[int, int], None] | None = None,
        storage_options: StorageOptions | None = None,
    ) -> Catalog: ...
    @staticmethod
    def default_columns(
        source: StrPath, *, storage_options: StorageOptions | None = None
    ) -> list[str]:
        """The columns ``build`` summarises when given none: every column statistics can
        bound (struct fields by dotted path)."""
    @staticmethod
    def open(
        source: StrPath, *, storage_options: StorageOptions | None = None
    ) -> Catalog | None: ...
    def refresh(self, *, progress: Callable[[int, int], None] | None = None) -> Catalog:
        """The next version: files added or changed summarised, removed ones dropped,
        unchanged ones kept unless their footer copy no longer decodes (then mended)."""
    def seed_metadata_cache(self) -> int: ...
    def freshness(self) -> dict[str, int]:
        """Data files described as they are, changed, added and removed since."""
    def report(self) -> dict[str, int] | None:
        """What the build or refresh that made this catalog did: ``version``, ``files``,
        ``added``, ``changed``, ``removed``, ``kept``, ``mended``, ``bytes``."""
    @property
    def version(self) -> int: ...
    @property
    def root(self) -> str: ...
    @property
    def num_files(self) -> int: ...
    @property
    def columns(self) -> list[str]: ...
    @property
    def bloom_columns(self) -> list[str]: ...

def catalog_rows(
    root: str, paths: Sequence[str], columns: Sequence[tuple[str, bool, float]]
) -> Any:
    """Catalog rows (a pyarrow Table) summarising ``paths`` below the dataset ``root``."""

def write_catalog(
    root: str, columns: Sequence[tuple[str, bool, float]], rows: _ArrowStream | _ArrowArray
) -> Catalog:
    """Write ``rows`` from ``catalog_rows`` as the next catalog version of ``root``."""

@final
class FileMetadata:
    """The parsed footer of one Parquet file."""

    path: str
    size: int
    footer_length: int
    num_rows: int
    num_row_groups: int
    created_by: str | None
    has_page_index: bool
    def __arrow_c_schema__(self) -> object: ...
    def key_value_metadata(self) -> dict[str, str]: ...
    def indexes(self) -> list[dict[str, Any]]:
        """The footer's ``pqindex.index.<n>`` locators in key order, parsed or with the
        ``error`` that kept each from parsing."""
    def row_groups(self) -> Any: ...
    def columns(self) -> Any: ...
    def pages(self) -> Any: ...

def scan(
    source: Source,
    where: Where | None = None,
    columns: Sequence[str] | None = None,
    batch_size: int = 65536,
    threads: int | None = None,
    *,
    catalog: bool = True,
    storage_options: StorageOptions | None = None,
    version: int | None = None,
    timestamp_ms: int | None = None,
    keys: _ArrowStream | _ArrowArray | None = None,
    on: Sequence[str] | None = None,
    read_ahead: int | None = None,
    string_view: bool = False,
    decode: Decode | None = None,
    limit: int | None = None,
    order_by: Sequence[tuple[str, bool]] | None = None,
    decryption: Decryption | None = None,
) -> Scan: ...
def scan_table(
    files: _ArrowStream | _ArrowArray | None,
    schema: object,
    *,
    root: str,
    version: int,
    index_files: Sequence[str] = (),
    where: Where | None = None,
    columns: Sequence[str] | None = None,
    batch_size: int = 65536,
    threads: int | None = None,
    storage_options: StorageOptions | None = None,
    keys: _ArrowStream | _ArrowArray | None = None,
    on: Sequence[str] | None = None,
    cache_key: str | None = None,
    read_ahead: int | None = None,
    string_view: bool = False,
    decode: Decode | None = None,
    limit: int | None = None,
    order_by: Sequence[tuple[str, bool]] | None = None,
) -> Scan:
    """Plan a scan of a table snapshot planned elsewhere (an Iceberg table's): ``files`` one
    row per data file (path, size, records, deleted positions, ``min:``/``max:``/``nulls:``
    bounds per leaf), ``schema`` the table's columns with their field ids."""

def is_object_url(path: str) -> bool: ...
def list_files(source: Source, *, storage_options: StorageOptions | None = None) -> list[str]: ...
def read_units(
    units: _ArrowStream | _ArrowArray,
    *,
    now_ns: int,
    where: Where | None = None,
    columns: Sequence[str] | None = None,
    batch_size: int = 65536,
    threads: int | None = None,
    catalog: str | None = None,
    storage_options: StorageOptions | None = None,
    read_ahead: int | None = None,
    keys: _ArrowStream | _ArrowArray | None = None,
    on: Sequence[str] | None = None,
    decode: Decode | None = None,
    limit: int | None = None,
    order_by: Sequence[tuple[str, bool]] | None = None,
) -> Scan: ...
def set_read_ahead(read_ahead_bytes: int) -> None:
    """Bound what a scan's stream holds for row groups ahead of the consumer (fetched pages
    and decoded batches), for scans that do not name their own ``read_ahead``."""

def read_ahead() -> int:
    """The read-ahead budget, in bytes, of scans that do not name their own: the last
    ``set_read_ahead``, else ``PQINDEX_READ_AHEAD`` from the environment, else 256 MiB."""

def read_metadata(
    path: StrPath,
    *,
    page_index: bool = True,
    storage_options: StorageOptions | None = None,
    decryption: Decryption | None = None,
) -> FileMetadata: ...
def write(
    data: _ArrowStream | _ArrowArray,
    path: StrPath,
    *,
    row_group_size: int | None = None,
    page_row_limit: int | None = None,
    bloom_filter_columns: Sequence[str] | None = None,
    bloom_filter_fpp: float = 0.01,
    compression: Literal["uncompressed", "snappy", "zstd", "lz4", "gzip"] = "zstd",
    storage_options: StorageOptions | None = None,
) -> None: ...
def upload(local: str, url: str, *, storage_options: StorageOptions | None = None) -> None: ...
def list_objects(url: str, *, storage_options: StorageOptions | None = None) -> list[str]: ...
def delete_objects(
    urls: Sequence[str], *, storage_options: StorageOptions | None = None
) -> None: ...
def add_indexes(
    path: StrPath,
    definitions: Sequence[Any],
    *,
    storage_options: StorageOptions | None = None,
    in_place: bool = False,
) -> dict[str, Any]:
    """Build and embed the indexes ``definitions`` (``pqindex.IndexDefinition`` objects)
    define."""

def recover(path: str) -> str:
    """Finish or discard an interrupted in-place index change."""

def index_kinds() -> list[dict[str, Any]]:
    """Every kind of embedded index as the registry describes it: name, class_name,
    cli_flag, doc, multi_column, granularities (the first is the default) and params."""

def table_format(path: str) -> str | None:
    """``"delta"`` or ``"iceberg"`` when the local directory ``path`` is a table's."""

def change_table_indexes(
    path: str,
    definitions: Sequence[Any],
    *,
    drop: bool = False,
    kind: str | None = None,
    columns: Sequence[str] | None = None,
    granularity: str | None = None,
) -> dict[str, Any]:
    """Build ``definitions`` for every live file of the Delta table at ``path`` and, with
    ``drop``, leave out the kept indexes matching every filter given: a new Puffin file in
    its ``_pqindex/indexes/`` directory replaces the old ones."""

def change_snapshot_indexes(
    files: _ArrowStream | _ArrowArray,
    schema: object,
    definitions: Sequence[Any],
    *,
    root: str,
    version: int,
    index_files: Sequence[str],
    dir: str,
    fields: Mapping[str, Sequence[int]],
    drop: bool = False,
    kind: str | None = None,
    columns: Sequence[str] | None = None,
    granularity: str | None = None,
) -> dict[str, Any]:
    """``change_table_indexes`` for the files of a snapshot planned elsewhere (an Iceberg
    table's): the new Puffin file goes to ``dir``."""

def table_indexes(root: str, index_files: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The indexes the Puffin files of a table keep (a Delta table's own when
    ``index_files`` is None)."""

def check_index(definition: Any) -> list[tuple[str, str, str]]:
    """Check one index definition; (kind, column, stored granularity) of each index it
    makes."""

def drop_indexes(
    path: StrPath,
    *,
    kind: str | None = None,
    columns: Sequence[str] | None = None,
    granularity: str | None = None,
    storage_options: StorageOptions | None = None,
    in_place: bool = False,
) -> dict[str, Any]: ...
def list_indexes(
    path: StrPath, *, storage_options: StorageOptions | None = None
) -> list[dict[str, Any]]: ...
def verify(
    path: StrPath, *, storage_options: StorageOptions | None = None
) -> list[dict[str, Any]]: ...
def approx_distinct(
    source: Source, column: str, *, storage_options: StorageOptions | None = None
) -> dict[str, Any]: ...
def metadata_cache_info() -> dict[str, int]: ...
def set_metadata_cache_capacity(capacity_bytes: int) -> None: ...
def clear_metadata_cache() -> None: ...
