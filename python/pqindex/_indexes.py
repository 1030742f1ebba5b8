"""Embedded index definitions and the functions that add them to files.

An index is identified in a file by (kind, columns, granularity): adding one with the same
identity replaces it, and different granularities of one kind coexist.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pqindex import _native
from pqindex._errors import InvalidArgumentError

if TYPE_CHECKING:
    from pqindex._native import StorageOptions

Granularity = Literal["file", "row_group", "page"]
_GRANULARITIES = ("file", "row_group", "page")


def _check_granularity(granularity: str) -> None:
    if granularity not in _GRANULARITIES:
        raise InvalidArgumentError(
            f"granularity must be one of {', '.join(_GRANULARITIES)}; got {granularity!r}"
        )


@dataclass(frozen=True)
class DistinctIndex:
    """The distinct values of ``column`` per file, row group or page, with postings (value →
    row groups or pages), so an equality or IN lookup on an unsorted column reads only the
    pages that hold the value. A lookup fetches a small header and one hash bucket."""

    column: str
    granularity: Granularity = "page"

    def __post_init__(self) -> None:
        _check_granularity(self.granularity)

    def _specs(self) -> list[tuple[str, str, str, float]]:
        return [("distinct", self.column, self.granularity, 0.0)]


@dataclass(frozen=True)
class BloomIndex:
    """Split-block bloom filters over ``column`` per file, row group or page, each sized
    for the values it holds and folded to the false-positive rate ``fpp``."""

    column: str
    granularity: Granularity = "row_group"
    fpp: float = 0.01

    def __post_init__(self) -> None:
        _check_granularity(self.granularity)
        if not 0.0 < self.fpp < 1.0:
            raise InvalidArgumentError(f"fpp must be between 0 and 1; got {self.fpp!r}")

    def _specs(self) -> list[tuple[str, str, str, float]]:
        return [("bloom", self.column, self.granularity, self.fpp)]


@dataclass(frozen=True)
class HllIndex:
    """A HyperLogLog sketch of ``column`` per column chunk (2^14 registers: 0.81 % standard
    error), which ``approx_distinct`` merges across files."""

    column: str

    def _specs(self) -> list[tuple[str, str, str, float]]:
        return [("hll", self.column, "row_group", 0.0)]


@dataclass(frozen=True)
class MinMaxIndex:
    """The exact min, max and null count of each page of ``column``, for files written
    without a page index: the planner prunes pages with it as with a ColumnIndex."""

    column: str

    def _specs(self) -> list[tuple[str, str, str, float]]:
        return [("page_minmax", self.column, "page", 0.0)]


@dataclass(frozen=True)
class AggregateIndex:
    """Count, null count, NaN count, exact min and max and exact sum of each of ``columns``
    per file, row group or page (one index per column), from which ``aggregate`` answers
    for the units where the predicate holds on every row."""

    columns: str | Sequence[str]
    granularity: Granularity = "page"

    def __post_init__(self) -> None:
        _check_granularity(self.granularity)
        if isinstance(self.columns, str):
            object.__setattr__(self, "columns", (self.columns,))
        else:
            object.__setattr__(self, "columns", tuple(self.columns))
        if not self.columns:
            raise InvalidArgumentError("AggregateIndex needs at least one column")

    def _specs(self) -> list[tuple[str, str, str, float]]:
        return [("aggregates", c, self.granularity, 0.0) for c in self.columns]


IndexDefinition = DistinctIndex | BloomIndex | HllIndex | MinMaxIndex | AggregateIndex
_KINDS = (DistinctIndex, BloomIndex, HllIndex, MinMaxIndex, AggregateIndex)


def _specs(indexes: Sequence[IndexDefinition]) -> list[tuple[str, str, str, float]]:
    specs = []
    for index in indexes:
        if not isinstance(index, _KINDS):
            raise InvalidArgumentError(
                f"not an index definition: {index!r} (use pqindex.DistinctIndex, "
                "BloomIndex, HllIndex, MinMaxIndex or AggregateIndex)"
            )
        specs.extend(index._specs())
    return specs


def add_indexes(
    path: Any,
    indexes: Sequence[IndexDefinition],
    *,
    storage_options: StorageOptions | None = None,
) -> dict[str, Any]:
    """Build ``indexes`` over the Parquet file at ``path`` and embed them.

    Data pages are never re-encoded: the file's Parquet bytes are copied beside it with the
    new index area and footer, then renamed over it, so ``path`` always holds either the old
    file or the new one. Returns the indexes now in the file, the sizes before and after,
    and the seconds taken.

    An object (``s3://...``) cannot be changed in place: it is copied to a local working
    file, indexed there and uploaded as a new object that replaces it in one put. If the
    object was replaced meanwhile, the upload is refused (``FileChangedError``).
    """
    specs = _specs(indexes)
    start = time.perf_counter()
    report: dict[str, Any] = _native.add_indexes(path, specs, storage_options=storage_options)
    report["seconds"] = time.perf_counter() - start
    return report


def drop_indexes(
    path: Any,
    *,
    kind: str | None = None,
    columns: Sequence[str] | None = None,
    granularity: str | None = None,
    storage_options: StorageOptions | None = None,
) -> dict[str, Any]:
    """Remove the embedded indexes matching every given filter (all when none is given)."""
    start = time.perf_counter()
    report: dict[str, Any] = _native.drop_indexes(
        path,
        kind=kind,
        columns=None if columns is None else list(columns),
        granularity=granularity,
        storage_options=storage_options,
    )
    report["seconds"] = time.perf_counter() - start
    return report
