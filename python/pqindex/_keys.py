"""Join keys for ``pqindex.scan(source, keys=..., on=...)``: the rows of ``source`` whose key
is among ``keys`` (a left semi join; a NULL key matches nothing).

``keys`` is anything Arrow can give columns from (a pyarrow Table, RecordBatch, Array or
ChunkedArray, a polars DataFrame or Series, any object with ``__arrow_c_stream__``) or a
Python sequence: of values for one key column, of tuples for several. ``on`` names the
source's key columns; a table of keys gives them by name when it has columns of those
names, else in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pqindex._errors import InvalidArgumentError


def key_columns(on: str | Sequence[str] | None) -> list[str] | None:
    """``on`` as a list of column names."""
    if on is None:
        return None
    names = [on] if isinstance(on, str) else list(on)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise InvalidArgumentError(f"on must name one or more columns, got {on!r}")
    return names


def key_table(keys: Any, on: list[str]) -> Any:
    """The keys as a pyarrow Table whose columns are the key columns in ``on``'s order."""
    try:
        import pyarrow as pa
    except ImportError as e:  # pragma: no cover - pyarrow ships with the test extras
        raise ImportError("keys= needs pyarrow: pip install pyarrow") from e
    if isinstance(keys, pa.Table | pa.RecordBatch):
        table = pa.table(keys)
    elif isinstance(keys, pa.Array | pa.ChunkedArray):
        table = pa.table({on[0]: keys})
    elif hasattr(keys, "__arrow_c_stream__"):
        try:
            table = pa.table(keys)
        except (pa.ArrowInvalid, TypeError):  # a stream of one column (a polars Series)
            table = pa.table({on[0]: pa.chunked_array(keys)})
    elif hasattr(keys, "__arrow_c_array__"):
        table = pa.table(pa.record_batch(keys))
    elif hasattr(keys, "to_arrow"):  # a polars Series, and the like
        table = _from_arrow(keys.to_arrow(), on, pa)
    elif isinstance(keys, Sequence | set | frozenset) and not isinstance(keys, str | bytes):
        table = _from_python(list(keys), on, pa)
    else:
        raise InvalidArgumentError(
            f"keys must be Arrow data or a sequence of values, not {type(keys).__name__}"
        )
    if table.num_columns == 1 and len(on) == 1:
        return table.rename_columns(on)
    if all(name in table.column_names for name in on):
        return table.select(on)
    if table.num_columns != len(on):
        raise InvalidArgumentError(
            f"keys have columns {table.column_names}; on names {len(on)} key columns {on}"
        )
    return table.rename_columns(on)


def _from_arrow(data: Any, on: list[str], pa: Any) -> Any:
    if isinstance(data, pa.Table | pa.RecordBatch):
        return pa.table(data)
    return pa.table({on[0]: data})


def _from_python(values: list[Any], on: list[str], pa: Any) -> Any:
    if len(on) == 1:
        return pa.table({on[0]: pa.array(values)})
    rows = [tuple(v) for v in values]
    if any(len(r) != len(on) for r in rows):
        raise InvalidArgumentError(f"each key must be a tuple of {len(on)} values")
    return pa.table({name: pa.array([r[i] for r in rows]) for i, name in enumerate(on)})
