"""Embedded index definitions and the functions that add them to files.

The index classes (``DistinctIndex``, ``BloomIndex``, ...) are made here from the Rust
registry of index kinds (``pqindex._native.index_kinds()``): their fields, defaults,
documentation and checks all come from there, so a kind added in Rust appears in Python,
the command line and Spark with no Python change.

An index is identified in a file by (kind, columns, granularity): adding one with the same
identity replaces it, and different granularities of one kind coexist.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pqindex import _native
from pqindex._errors import InvalidArgumentError, SourceError

if TYPE_CHECKING:
    from pqindex._native import StorageOptions

GRANULARITIES = ("file", "row_group", "page")


class IndexDefinition:
    """The definition of one embedded index (or one per column, for kinds that take
    several). Instances are frozen dataclasses made from the registry; they compare,
    hash and pickle by value, so Spark can ship them to executors."""

    #: The kind's stored name (``"distinct"``, ``"page_minmax"``, ...).
    kind: ClassVar[str]
    #: The registry's description of the kind.
    kind_info: ClassVar[dict[str, Any]]
    # Fields of the kinds' dataclasses: ``column`` for one column, ``columns`` for several.
    column: str
    columns: tuple[str, ...]

    if TYPE_CHECKING:
        # Each kind's class takes its own arguments (the registry's parameters), which a
        # type checker cannot see in classes made at import.
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

    @property
    def index_columns(self) -> tuple[str, ...]:
        """The indexed columns (one index each)."""
        if self.kind_info["multi_column"]:
            return tuple(self.columns)
        return (self.column,)

    @property
    def index_granularity(self) -> str:
        """The granularity asked for (the kind's only one when it has no choice)."""
        granularities: list[str] = self.kind_info["granularities"]
        return str(getattr(self, "granularity", granularities[0]))

    @property
    def index_params(self) -> dict[str, Any]:
        """The kind's parameters, by name."""
        return {p["name"]: getattr(self, p["name"]) for p in self.kind_info["params"]}

    def identities(self) -> list[tuple[str, str, str]]:
        """(kind, column, granularity as stored) of each index this definition makes:
        what identifies an index in a file."""
        return [(k, c, g) for k, c, g in _native.check_index(self)]


def _define(info: dict[str, Any]) -> type[IndexDefinition]:
    """The dataclass of one kind: its column (or columns), granularity when it has a
    choice, and parameters, in that order, checked by Rust on construction."""
    fields: list[Any] = []
    if info["multi_column"]:
        fields.append(("columns", Any))
    else:
        fields.append(("column", str))
    granularities = info["granularities"]
    if len(granularities) > 1:
        fields.append(("granularity", str, dataclasses.field(default=granularities[0])))
    for p in info["params"]:
        fields.append((p["name"], Any, dataclasses.field(default=p["default"])))

    def __post_init__(self: Any) -> None:
        if info["multi_column"]:
            columns = self.columns
            columns = (columns,) if isinstance(columns, str) else tuple(columns)
            if not columns:
                raise InvalidArgumentError(f"{info['class_name']} needs at least one column")
            object.__setattr__(self, "columns", columns)
        if len(granularities) > 1 and self.granularity not in GRANULARITIES:
            raise InvalidArgumentError(
                f"granularity must be one of {', '.join(GRANULARITIES)}; got {self.granularity!r}"
            )
        _native.check_index(self)

    cls = dataclasses.make_dataclass(
        info["class_name"],
        fields,
        bases=(IndexDefinition,),
        frozen=True,
        namespace={
            "__post_init__": __post_init__,
            "__doc__": info["doc"] + _signature_doc(info),
            "kind": info["name"],
            "kind_info": info,
        },
    )
    cls.__module__ = __name__
    return cls


def _signature_doc(info: dict[str, Any]) -> str:
    lines = []
    if len(info["granularities"]) > 1:
        lines.append(
            f"granularity: one of {', '.join(repr(g) for g in info['granularities'])} "
            f"(default {info['granularities'][0]!r})"
        )
    for p in info["params"]:
        lines.append(f"{p['name']}: {p['doc']} (default {p['default']!r})")
    return ("\n\n" + "\n".join(lines)) if lines else ""


#: Every index class, by class name, in the registry's order.
INDEX_CLASSES: dict[str, type[IndexDefinition]] = {}
for _info in _native.index_kinds():
    _cls = _define(_info)
    INDEX_CLASSES[_cls.__name__] = _cls
    # Pickle finds the classes here by name.
    globals()[_cls.__name__] = _cls


def index_class(kind: str) -> type[IndexDefinition]:
    """The class of the index kind stored as ``kind`` (``"distinct"``)."""
    for cls in INDEX_CLASSES.values():
        if cls.kind == kind:
            return cls
    raise InvalidArgumentError(f"unknown index kind {kind!r}")


def check_definitions(indexes: Sequence[IndexDefinition]) -> list[IndexDefinition]:
    """``indexes`` as a list, refusing anything that is not an index definition."""
    out = list(indexes)
    for index in out:
        if not isinstance(index, IndexDefinition):
            raise InvalidArgumentError(
                f"not an index definition: {index!r} (use pqindex."
                + ", pqindex.".join(INDEX_CLASSES)
                + ")"
            )
    return out


def add_indexes(
    path: Any,
    indexes: Sequence[IndexDefinition],
    *,
    storage_options: StorageOptions | None = None,
    in_place: bool = False,
) -> dict[str, Any]:
    """Build ``indexes`` over the Parquet file at ``path`` and embed them.

    Data pages are never re-encoded: the file's Parquet bytes are copied beside it with the
    new index area and footer, then renamed over it, so ``path`` always holds either the old
    file or the new one. Returns the indexes now in the file, the sizes before and after,
    and the seconds taken.

    ``in_place=True`` (local files too large to copy) rewrites only the file's tail (index
    blocks and footer) under a journal beside it: a crash at any point leaves a file that
    ``pqindex.recover(path)`` completes to the new one (a journal not yet complete is
    discarded, the file being untouched). Readers other than pqindex that open the file
    while its tail is rewritten may find it broken; ``docs/reliability.md`` says more.

    An object (``s3://...``) cannot be changed in place: it is copied to a local working
    file, indexed there and uploaded as a new object that replaces it in one put. If the
    object was replaced meanwhile, the upload is refused (``FileChangedError``).
    """
    definitions = check_definitions(indexes)
    start = time.perf_counter()
    table = _table(path)
    report: dict[str, Any]
    if table == "iceberg":
        from pqindex import _iceberg

        report = _iceberg.change_indexes(path, definitions)
    elif table == "delta":
        report = _native.change_table_indexes(os.fspath(path), definitions)
        report.pop("blobs_json", None)
    else:
        report = _native.add_indexes(
            path, definitions, storage_options=storage_options, in_place=in_place
        )
    report["seconds"] = time.perf_counter() - start
    return report


def _table(source: Any) -> str | None:
    """``"iceberg"`` for a pyiceberg Table, ``"delta"`` for a local Delta table's directory,
    else None (a Parquet file)."""
    from pqindex import _iceberg

    if _iceberg.is_table(source):
        return "iceberg"
    if isinstance(source, (str, os.PathLike)):
        found = _native.table_format(os.fspath(source))
        if found == "iceberg":
            raise SourceError(
                f"{os.fspath(source)} is an Iceberg table: pass the pyiceberg Table to index it"
            )
        return found
    return None


def list_indexes(
    path: Any, *, storage_options: StorageOptions | None = None
) -> list[dict[str, Any]]:
    """The indexes of the Parquet file at ``path`` (its footer's locators), or of a table's
    files (a Delta table's directory, or a pyiceberg Table): one dict per index, naming
    the data file and its size for a table."""
    table = _table(path)
    if table == "iceberg":
        from pqindex import _iceberg

        return _iceberg.list_indexes(path)
    if table == "delta":
        return _native.table_indexes(os.fspath(path))
    return _native.list_indexes(path, storage_options=storage_options)


def drop_indexes(
    path: Any,
    *,
    kind: str | None = None,
    columns: Sequence[str] | None = None,
    granularity: str | None = None,
    stale: bool = False,
    storage_options: StorageOptions | None = None,
    in_place: bool = False,
) -> dict[str, Any]:
    """Remove the indexes matching every given filter (all when none is given);
    ``in_place`` as for ``add_indexes``.

    For a table (a Delta table's directory or a pyiceberg Table) the indexes of its live
    files are rewritten into a new index file without the selected ones, and the entries
    of files the table no longer holds are cleaned up with them; ``stale=True`` does only
    the clean-up."""
    start = time.perf_counter()
    report: dict[str, Any]
    table = _table(path)
    if stale and table is None:
        raise InvalidArgumentError("stale=True cleans up a table's indexes: pass a table")
    if table is not None:
        filters: dict[str, Any] = {
            "drop": not stale,
            "kind": kind,
            "columns": None if columns is None else list(columns),
            "granularity": granularity,
        }
        if table == "iceberg":
            from pqindex import _iceberg

            report = _iceberg.change_indexes(path, [], filters)
        else:
            report = _native.change_table_indexes(os.fspath(path), [], **filters)
            report.pop("blobs_json", None)
        report["seconds"] = time.perf_counter() - start
        return report
    report = _native.drop_indexes(
        path,
        kind=kind,
        columns=None if columns is None else list(columns),
        granularity=granularity,
        storage_options=storage_options,
        in_place=in_place,
    )
    report["seconds"] = time.perf_counter() - start
    return report


def recover(path: str | os.PathLike[str]) -> str:
    """Finish or discard an interrupted in-place index change of the local file ``path``
    (``add_indexes(..., in_place=True)`` killed midway): ``"completed"`` when the change had
    started (the file now holds the new indexes), ``"discarded"`` when it had not (the file
    was never touched), ``"nothing"`` when none was pending."""
    return _native.recover(os.fspath(path))
