"""The one translation from Spark's filter language to a pqindex predicate: the
structured form (docs/predicates.md), data rather than SQL text, so no literal is rendered
for the core to parse again.

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
import struct
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
    """A pqindex structured predicate (docs/predicates.md) and whether it keeps exactly the
    rows the filter keeps."""

    predicate: dict[str, Any]
    exact: bool


#: The most significant digits of a decimal literal: pqindex reads typed DECIMAL literals
#: of up to 38 digits exactly (a longer one does not fit any DECIMAL).
_MAX_DIGITS = 38
_I64 = (-(1 << 63), (1 << 63) - 1)

_COMPARISONS: dict[type[Filter], str] = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}


def _op(name: str, *args: dict[str, Any]) -> dict[str, Any]:
    return {"op": name, "args": list(args)}


def conjunction(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The AND of structured predicates (one stays itself)."""
    return parts[0] if len(parts) == 1 else _op("and", *parts)


def translate_all(filters: Sequence[Filter], schema: T.StructType) -> Translated | None:
    """The AND of ``filters`` (what Spark pushes is a list of conjuncts), or None when none
    can prune."""
    parts = [t for f in filters if (t := translate(f, schema)) is not None]
    if not parts:
        return None
    exact = all(p.exact for p in parts) and len(parts) == len(filters)
    return Translated(conjunction([p.predicate for p in parts]), exact)


def translate(f: Filter, schema: T.StructType) -> Translated | None:
    """A structured predicate keeping at least the rows ``f`` keeps, or None."""
    if isinstance(f, AlwaysFalse):
        return Translated({"lit": False}, True)
    if isinstance(f, And):
        left, right = translate(f.left, schema), translate(f.right, schema)
        if left is None or right is None:
            # Dropping one side of an AND keeps more rows: still safe, no longer exact.
            kept = left or right
            return None if kept is None else Translated(kept.predicate, False)
        return Translated(_op("and", left.predicate, right.predicate), left.exact and right.exact)
    if isinstance(f, Or):
        left, right = translate(f.left, schema), translate(f.right, schema)
        if left is None or right is None:
            return None
        return Translated(_op("or", left.predicate, right.predicate), left.exact and right.exact)
    if isinstance(f, Widened):
        child = translate(f.child, schema)
        return None if child is None else Translated(child.predicate, False)
    if isinstance(f, Not):
        child = translate(f.child, schema)
        if child is None or not child.exact:
            return None
        return Translated(_op("not", child.predicate), True)
    return _leaf(f, schema)


def _leaf(f: Filter, schema: T.StructType) -> Translated | None:
    column = resolve(getattr(f, "attribute", ()), schema)
    if column is None:
        return None
    path, data_type = column
    col: dict[str, Any] = {"col": path[0] if len(path) == 1 else list(path)}
    if isinstance(f, IsNull):
        return Translated(_op("is_null", col), True)
    if isinstance(f, IsNotNull):
        return Translated(_op("is_not_null", col), True)
    if isinstance(f, EqualNullSafe):
        if f.value is None:
            return Translated(_op("is_null", col), True)
        value = literal(f.value, data_type)
        # a <=> v keeps NULL rows out like a = v, but its negation keeps them: not exact.
        return None if value is None else Translated(_op("=", col, value), False)
    op = _COMPARISONS.get(type(f))
    if op is not None:
        value = literal(getattr(f, "value", None), data_type)
        return None if value is None else Translated(_op(op, col, value), True)
    if isinstance(f, In):
        present = [v for v in f.value if v is not None]
        values = [literal(v, data_type) for v in present]
        if not values or any(v is None for v in values):
            return None
        # NULL in the list makes non-matching rows NULL rather than FALSE: drop it and the
        # list still keeps the matching rows, but its negation would keep too many.
        exact = len(present) == len(f.value)
        return Translated(_op("in", col, *(v for v in values if v is not None)), exact)
    function = _STRING_FUNCTIONS.get(type(f))
    text = getattr(f, "value", None)
    if function is not None and _is_plain_string(data_type) and isinstance(text, str):
        # Spark compares UTF8_BINARY strings by their bytes, as pqindex does.
        return Translated(_op(function, col, {"lit": text}), True)
    return None


_STRING_FUNCTIONS: dict[type, str] = {
    StringStartsWith: "starts_with",
    StringEndsWith: "ends_with",
    StringContains: "contains",
}


def resolve(path: Sequence[str], schema: T.StructType) -> tuple[tuple[str, ...], T.DataType] | None:
    """The field names (as the schema spells them) and Spark type of a column path,
    matched as Spark does: exactly, else case-insensitively if that is unambiguous."""
    data_type: T.DataType = schema
    names: list[str] = []
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
        names.append(match[0].name)
        data_type = match[0].dataType
    return tuple(names), data_type


def _is_plain_string(data_type: T.DataType) -> bool:
    # Collated strings (UTF8_LCASE, ICU) compare differently from bytes.
    collation = getattr(data_type, "collation", "UTF8_BINARY")
    return isinstance(data_type, T.StringType) and collation in ("UTF8_BINARY", None)


def literal(value: Any, data_type: T.DataType) -> dict[str, Any] | None:
    """``value`` (a Python value of the Spark type ``data_type``, as pushed filters carry
    them) as a structured literal of that type; None when pqindex would compare it
    differently or the value does not fit the type.

    Numbers other than 64-bit integers travel as typed text: JSON numbers are doubles, and
    the core's JSON reader parses them to the nearest double only approximately, so a
    DOUBLE given as a JSON number could miss the very value it names."""
    if value is None:
        return None
    if isinstance(data_type, T.BooleanType):
        return {"lit": value} if isinstance(value, bool) else None
    if isinstance(value, bool):
        return None
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        ok = isinstance(value, int) and _I64[0] <= value <= _I64[1]
        return {"lit": value} if ok else None
    if isinstance(data_type, (T.FloatType, T.DoubleType)) and isinstance(value, (int, float)):
        number = _float_value(value, single=isinstance(data_type, T.FloatType))
        if number is None:
            return None
        name = "REAL" if isinstance(data_type, T.FloatType) else "DOUBLE"
        return {"lit": _float_text(number), "type": name}
    if isinstance(data_type, T.DecimalType) and isinstance(value, (int, decimal.Decimal)):
        return _decimal(decimal.Decimal(value))
    if _is_plain_string(data_type):
        return {"lit": value} if isinstance(value, str) else None
    if isinstance(data_type, T.BinaryType) and isinstance(value, (bytes, bytearray)):
        return {"lit": bytes(value).hex(), "type": "BLOB", "encoding": "hex"}
    if isinstance(data_type, T.DateType):
        if isinstance(value, datetime.datetime) or not isinstance(value, datetime.date):
            return None
        return {"lit": value.isoformat(), "type": "DATE"}
    if isinstance(data_type, T.TimestampType) and isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            return None
        utc = value.astimezone(datetime.timezone.utc)
        return {"lit": f"{_iso(utc)}+00:00", "type": "TIMESTAMPTZ"}
    if isinstance(data_type, T.TimestampNTZType) and isinstance(value, datetime.datetime):
        return None if value.tzinfo is not None else {"lit": _iso(value), "type": "TIMESTAMP"}
    return None


def _decimal(number: decimal.Decimal) -> dict[str, Any] | None:
    """A DECIMAL literal of the value's own digits, so that no cast rounds it."""
    if not number.is_finite():
        return None
    text = format(number, "f")
    whole, _, fraction = text.lstrip("-").partition(".")
    scale = len(fraction)
    precision = max(1, len(whole.lstrip("0")) + scale, scale)
    if precision > _MAX_DIGITS:
        return None
    return {"lit": text, "type": f"DECIMAL({precision},{scale})"}


def _float_value(value: int | float, single: bool) -> float | None:
    """``value`` as the float it is, if it is one exactly (a FLOAT's value for ``single``):
    a rounded value would compare differently."""
    try:
        number = float(value)
        if single and math.isfinite(number):
            number = struct.unpack("f", struct.pack("f", number))[0]
    except OverflowError:
        return None
    if math.isnan(number):
        return number if isinstance(value, float) else None
    return number if number == value else None


def _iso(value: datetime.datetime) -> str:
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d} " + value.strftime("%H:%M:%S.%f")


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)
