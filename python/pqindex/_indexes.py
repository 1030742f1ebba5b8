"""Embedded index definitions and the functions that add them to files.

An index is identified in a file by (kind, columns, granularity): adding one with the same
identity replaces it, and different granularities of one kind coexist.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pqindex import _native
from pqindex._errors import InvalidArgumentError

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

    def _spec(self) -> tuple[str, str, str, float]:
        return ("distinct", self.column, self.granularity, 0.0)


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

    def _spec(self) -> tuple[str, str, str, float]:
        return ("bloom", self.column, self.granularity, self.fpp)


@dataclass(frozen=True)
class HllIndex:
    """A HyperLogLog sketch of ``column`` per column chunk (2^14 registers: 0.81 % standard
    error), which ``approx_distinct`` merges across files."""

    column: str

    def _spec(self) -> tuple[str, str, str, float]:
        return ("hll", self.column, "row_group", 0.0)


IndexDefinition = DistinctIndex | BloomIndex | HllIndex


def _specs(indexes: Sequence[IndexDefinition]) -> list[tuple[str, str, str, float]]:
    specs = []
    for index in indexes:
        if not isinstance(index, DistinctIndex | BloomIndex | HllIndex):
            raise InvalidArgumentError(
                f"not an index definition: {index!r} (use pqindex.DistinctIndex, "
                "pqindex.BloomIndex or pqindex.HllIndex)"
            )
        specs.append(index._spec())
    return specs


def add_indexes(path: Any, indexes: Sequence[IndexDefinition]) -> dict[str, Any]:
    """Build ``indexes`` over the Parquet file at ``path`` and embed them.

    Data pages are never re-encoded: the file's Parquet bytes are copied beside it with the
    new index area and footer, then renamed over it, so ``path`` always holds either the old
    file or the new one. Returns the indexes now in the file, the sizes before and after,
    and the seconds taken.
    """
    specs = _specs(indexes)
    start = time.perf_counter()
    report: dict[str, Any] = _native.add_indexes(path, specs)
    report["seconds"] = time.perf_counter() - start
    return report


def drop_indexes(
    path: Any,
    *,
    kind: str | None = None,
    columns: Sequence[str] | None = None,
    granularity: str | None = None,
) -> dict[str, Any]:
    """Remove the embedded indexes matching every given filter (all when none is given)."""
    start = time.perf_counter()
    report: dict[str, Any] = _native.drop_indexes(
        path,
        kind=kind,
        columns=None if columns is None else list(columns),
        granularity=granularity,
    )
    report["seconds"] = time.perf_counter() - start
    return report
