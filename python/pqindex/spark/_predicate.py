"""The one translation from Spark's filter language to a pqindex predicate.

Every Spark entry point ends here: the filters Spark pushes into a classic Parquet scan
(``_jvm_filters``), the filters it pushes into the Python data source (``_datasource``), and
conditions verified on the client (``_client_filters``). All three speak the small language
of ``pyspark.sql.datasource`` filters (``EqualTo(("a", "b"), 5)``, ``In``, ``Not``, ...),
extended here with ``And`` and ``Or``; every value already has its column's type, as Spark
guarantees for the filters it pushes.

The translation may only widen: the pqindex predicate must hold for every row the filter
keeps, because Spark's own condition is applied to what pqindex returns. A filter it cannot
express is dropped under AND (which widens) and makes a whole OR or NOT branch unknown.

Exactness rule: a translation is exact when it keeps exactly the rows the filter keeps,
NULLs included, comparing values as Spark compares them. Only an exact translation may be
negated (``NOT`` of a wider predicate would be narrower). ``x <=> v`` (which keeps NULL rows
under NOT), an ``IN`` list holding NULL, a prefix match and anything with a dropped part are
not exact.
"""

from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import types as T
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)


@dataclass(frozen=True)
class And(Filter):
    """Both filters hold (Spark pushes nested ANDs inside ORs and NOTs this way)."""

    left: Filter
    right: Filter


@dataclass(frozen=True)
class Or(Filter):
    """Either filter holds."""

    left: Filter
    right: Filter


@dataclass(frozen=True)
class Widened(Filter):
    """``child`` keeps every row the condition it stands for keeps, and maybe more (a LIKE
    pattern as the AND of its pieces): translated as ``child``, never exact."""

    child: Filter


@dataclass(frozen=True)
class AlwaysFalse(Filter):
    """No row: what Spark pushes for a condition it folded to FALSE."""


@dataclass(frozen=True)
class Translated:
    """pqindex SQL and whether it keeps exactly the rows the filter keeps."""

    sql: str
    exact: bool


#: pqindex reads decimal literals of at most this many significant digits exactly (a longer
#: one is rounded, which would prune rows that match).
_MAX_DIGITS = 28

_COMPARISONS: dict[type[Filter], str] = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}


def translate_all(filters: Sequence[Filter], schema: T.StructType) -> Translated | None:
    """The AND of ``filters`` (what Spark pushes is a list of conjuncts), or None when none
    can prune."""
    parts = [t for f in filters if (t := translate(f, schema)) is not None]
    if not parts:
        return None
    exact = all(p.exact for p in parts) and len(parts) == len(filters)
    if len(parts) == 1:
        return Translated(parts[0].sql, exact)
    return Translated(" AND ".join(f"({p.sql})" for p in parts), exact)


def translate(f: Filter, schema: T.StructType) -> Translated | None:
    """pqindex SQL keeping at least the rows ``f`` keeps, or None."""
    if isinstance(f, AlwaysFalse):
        return Translated("FALSE", True)
    if isinstance(f, And):
        left, right = translate(f.left, schema), translate(f.right, schema)
        if left is None or right is None:
            # Dropping one side of an AND keeps more rows: still safe, no longer exact.
            kept = left or right
            return None if kept is None else Translated(kept.sql, False)
        return Translated(f"({left.sql}) AND ({right.sql})", left.exact and right.exact)
    if isinstance(f, Or):
        left, right = translate(f.left, schema), translate(f.right, schema)
        if left is None or right is None:
            return None
        return Translated(f"({left.sql}) OR ({right.sql})", left.exact and right.exact)
    if isinstance(f, Widened):
        child = translate(f.child, schema)
        return None if child is None else Translated(child.sql, False)
    if isinstance(f, Not):
        child = translate(f.child, schema)
        if child is None or not child.exact:
            return None
        return Translated(f"NOT ({child.sql})", True)
    return _leaf(f, schema)


def _leaf(f: Filter, schema: T.StructType) -> Translated | None:
    column = resolve(getattr(f, "attribute", ()), schema)
    if column is None:
        return None
    name, data_type = column
    if isinstance(f, IsNull):
        return Translated(f"{name} IS NULL", True)
    if isinstance(f, IsNotNull):
        return Translated(f"{name} IS NOT NULL", True)
    if isinstance(f, EqualNullSafe):
        if f.value is None:
            return Translated(f"{name} IS NULL", True)
        value = literal(f.value, data_type)
        # a <=> v keeps NULL rows out like a = v, but its negation keeps them: not exact.
        return None if value is None else Translated(f"{name} = {value}", False)
    op = _COMPARISONS.get(type(f))
    if op is not None:
        value = literal(getattr(f, "value", None), data_type)
        return None if value is None else Translated(f"{name} {op} {value}", True)
    if isinstance(f, In):
        present = [v for v in f.value if v is not None]
        values = [literal(v, data_type) for v in present]
        if not values or any(v is None for v in values):
            return None
        # NULL in the list makes non-matching rows NULL rather than FALSE: drop it and the
        # list still keeps the matching rows, but its negation would keep too many.
        exact = len(present) == len(f.value)
        return Translated(f"{name} IN ({', '.join(v for v in values if v)})", exact)
    function = _STRING_FUNCTIONS.get(type(f))
    text = getattr(f, "value", None)
    if function is not None and _is_plain_string(data_type) and isinstance(text, str):
        # Spark compares UTF8_BINARY strings by their bytes, as pqindex does.
        return Translated(f"{function}({name}, {_string(text)})", True)
    return None


_STRING_FUNCTIONS: dict[type, str] = {
    StringStartsWith: "starts_with",
    StringEndsWith: "ends_with",
    StringContains: "contains",
}


def resolve(path: Sequence[str], schema: T.StructType) -> tuple[str, T.DataType] | None:
    """The quoted pqindex name (``"a"."b"`` for a struct field) and Spark type of a column
    path, matched as Spark does: exactly, else case-insensitively if that is unambiguous."""
    data_type: T.DataType = schema
    quoted = []
    if not path:
        return None
    for part in path:
        if not isinstance(data_type, T.StructType):
            return None
        match = [f for f in data_type.fields if f.name == part] or [
            f for f in data_type.fields if f.name.lower() == part.lower()
        ]
        if len(match) != 1:
            return None
        quoted.append('"' + match[0].name.replace('"', '""') + '"')
        data_type = match[0].dataType
    return ".".join(quoted), data_type


def _is_plain_string(data_type: T.DataType) -> bool:
    # Collated strings (UTF8_LCASE, ICU) compare differently from bytes.
    collation = getattr(data_type, "collation", "UTF8_BINARY")
    return isinstance(data_type, T.StringType) and collation in ("UTF8_BINARY", None)


def literal(value: Any, data_type: T.DataType) -> str | None:
    """``value`` (a Python value of the Spark type ``data_type``, as pushed filters carry
    them) as a pqindex literal of that type; None when pqindex would compare it
    differently or the value does not fit the type."""
    if value is None:
        return None
    if isinstance(data_type, T.BooleanType):
        return ("TRUE" if value else "FALSE") if isinstance(value, bool) else None
    if isinstance(value, bool):
        return None
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return str(value) if isinstance(value, int) else None
    if isinstance(data_type, (T.FloatType, T.DoubleType)) and isinstance(value, (int, float)):
        name = "REAL" if isinstance(data_type, T.FloatType) else "DOUBLE"
        return f"CAST('{_float_text(float(value))}' AS {name})"
    if isinstance(data_type, T.DecimalType) and isinstance(value, (int, decimal.Decimal)):
        number = decimal.Decimal(value)
        if not number.is_finite() or _significant_digits(number) > _MAX_DIGITS:
            return None
        return format(number, "f")
    if _is_plain_string(data_type):
        return _string(value) if isinstance(value, str) else None
    if isinstance(data_type, T.BinaryType) and isinstance(value, (bytes, bytearray)):
        return f"X'{bytes(value).hex().upper()}'"
    if isinstance(data_type, T.DateType):
        if isinstance(value, datetime.datetime) or not isinstance(value, datetime.date):
            return None
        return f"DATE '{value.isoformat()}'"
    if isinstance(data_type, T.TimestampType) and isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            return None
        utc = value.astimezone(datetime.timezone.utc)
        return f"TIMESTAMPTZ '{_iso(utc)}+00:00'"
    if isinstance(data_type, T.TimestampNTZType) and isinstance(value, datetime.datetime):
        return None if value.tzinfo is not None else f"TIMESTAMP '{_iso(value)}'"
    return None


def _significant_digits(number: decimal.Decimal) -> int:
    digits = "".join(map(str, number.as_tuple().digits)).strip("0")
    return len(digits)


def _iso(value: datetime.datetime) -> str:
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d} " + value.strftime("%H:%M:%S.%f")


def _string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)
