"""Which type Spark compares a column and a literal in, and comparisons in a wider type
restated in the column's own.

``tinyint_col = 5`` compares in INT: Spark casts the column, not the literal. Its optimiser
then states the comparison in the column's type again (``UnwrapCastInBinaryComparison``),
which is why such filters reach a Parquet scan. The client-side reading does the same here,
but only for widenings that keep every value and its order (integers to wider integers or
decimals, decimals to wider decimals, FLOAT to DOUBLE, small integers to floating point), so
that ``CAST(col AS W) op v`` has exactly the rows of a comparison of ``col`` with a value of
its own type. ``common_type`` is a guess that Spark's analyser confirms or refutes
(``_client_filters``); ``restate`` is exact arithmetic.
"""

from __future__ import annotations

import decimal
import math
from typing import Any

from pyspark.sql import types as T
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    LessThan,
    LessThanOrEqual,
    Not,
)

_INTEGRAL_DIGITS: dict[type, int] = {
    T.ByteType: 3,
    T.ShortType: 5,
    T.IntegerType: 10,
    T.LongType: 20,
}
_INTEGRAL_BITS: dict[type, int] = {
    T.ByteType: 8,
    T.ShortType: 16,
    T.IntegerType: 32,
    T.LongType: 64,
}


def common_type(column: T.DataType, literal: T.DataType) -> T.DataType | None:
    """The type Spark is expected to compare ``column`` and ``literal`` in when the column
    keeps all its values and their order there; None when it would not (the comparison
    is then left to Spark)."""
    if literal == column or isinstance(literal, T.NullType):
        return column
    c, lit = _kind(column), _kind(literal)
    if c == "integral" and lit == "integral":
        return column if _bits(column) >= _bits(literal) else literal
    if c in ("integral", "decimal") and lit in ("integral", "decimal"):
        return _wider_decimal(_as_decimal(column), _as_decimal(literal))
    if isinstance(column, T.DoubleType) and lit in ("integral", "decimal", "float"):
        return column
    if isinstance(column, T.FloatType):
        return column if lit == "integral" else T.DoubleType()
    if c == "integral" and lit == "float":
        # INT and smaller fit a DOUBLE exactly; only BYTE and SHORT fit a FLOAT.
        wide = T.DoubleType() if isinstance(literal, T.DoubleType) else T.FloatType()
        limit = 32 if isinstance(wide, T.DoubleType) else 16
        return wide if _bits(column) <= limit else None
    if c == "other" and lit == "other":
        return column  # dates, timestamps, strings: Spark casts the literal, if anything
    return None


def cast_chain(column: T.DataType, common: T.DataType) -> list[T.DataType]:
    """The casts Spark puts on the column to compare it in ``common``: an integer goes
    through its own DECIMAL first."""
    if _kind(column) == "integral" and isinstance(common, T.DecimalType):
        return [_as_decimal(column), common]
    return [common]


def _kind(t: T.DataType) -> str:
    if type(t) in _INTEGRAL_BITS:
        return "integral"
    if isinstance(t, T.DecimalType):
        return "decimal"
    if isinstance(t, (T.FloatType, T.DoubleType)):
        return "float"
    return "other"


def _bits(t: T.DataType) -> int:
    return _INTEGRAL_BITS[type(t)]


def _as_decimal(t: T.DataType) -> T.DecimalType:
    if isinstance(t, T.DecimalType):
        return t
    return T.DecimalType(_INTEGRAL_DIGITS[type(t)], 0)


def _wider_decimal(a: T.DecimalType, b: T.DecimalType) -> T.DataType | None:
    scale = max(a.scale, b.scale)
    precision = scale + max(a.precision - a.scale, b.precision - b.scale)
    return T.DecimalType(precision, scale) if precision <= 38 else None


def restate(op: str, path: tuple[str, ...], value: Any, column: T.DataType) -> Filter | None:
    """``CAST(path AS W) op value`` (``value`` of the wider type W) as a filter on the
    column's own type with exactly the same rows; None if there is none to state (the
    value lies outside the column's values, so the comparison does not prune)."""
    if value is None:
        return None
    domain = _Domain(column)
    exact = domain.exact(value)
    if op in ("=", "<=>", "<>"):
        if exact is None:
            return None
        equal: Filter = (EqualNullSafe if op == "<=>" else EqualTo)(path, exact)
        return Not(equal) if op == "<>" else equal
    if exact is not None:
        cls = {"<": LessThan, "<=": LessThanOrEqual, ">": GreaterThan, ">=": GreaterThanOrEqual}
        return cls[op](path, exact)
    if op in ("<", "<="):
        below = domain.floor(value)
        return None if below is None else LessThanOrEqual(path, below)
    above = domain.ceil(value)
    return None if above is None else GreaterThanOrEqual(path, above)


def restate_in(value: Any, column: T.DataType) -> tuple[bool, Any]:
    """An IN item in the column's type: (True, value) if the column can hold it (or it is
    NULL), else (False, None): the item can never match."""
    if value is None:
        return True, None
    exact = _Domain(column).exact(value)
    return exact is not None, exact


class _Domain:
    """The values of a numeric column type: integers in a range, decimals of a scale and
    precision, or FLOAT values."""

    def __init__(self, column: T.DataType) -> None:
        self.column = column
        if type(column) in _INTEGRAL_BITS:
            bits = _bits(column)
            self.low: Any = -(1 << (bits - 1))
            self.high: Any = (1 << (bits - 1)) - 1
            self.quantum: Any = decimal.Decimal(1)
        elif isinstance(column, T.DecimalType):
            self.quantum = decimal.Decimal(1).scaleb(-column.scale)
            self.high = decimal.Decimal(10).scaleb(column.precision - column.scale) - self.quantum
            self.low = -self.high

    def exact(self, value: Any) -> Any:
        if isinstance(self.column, T.FloatType):
            return _float32_exact(value)
        if isinstance(self.column, T.DoubleType):
            return float(value) if isinstance(value, float) else None
        number = _decimal(value)
        if number is None or not self.low <= number <= self.high:
            return None
        if number % self.quantum != 0:
            return None
        return self._typed(number)

    def floor(self, value: Any) -> Any:
        if isinstance(self.column, T.FloatType):
            return _float32_toward(value, -math.inf)
        number = _decimal(value)
        if number is None or number < self.low:
            return None
        return self._typed(min(self.high, _quantize(number, self.quantum, decimal.ROUND_FLOOR)))

    def ceil(self, value: Any) -> Any:
        if isinstance(self.column, T.FloatType):
            return _float32_toward(value, math.inf)
        number = _decimal(value)
        if number is None or number > self.high:
            return None
        return self._typed(max(self.low, _quantize(number, self.quantum, decimal.ROUND_CEILING)))

    def _typed(self, number: decimal.Decimal) -> Any:
        if isinstance(self.column, T.DecimalType):
            return number.quantize(self.quantum)
        return int(number)


def _decimal(value: Any) -> decimal.Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return decimal.Decimal(value) if math.isfinite(value) else None
    if isinstance(value, (int, decimal.Decimal)):
        return decimal.Decimal(value)
    return None


def _quantize(number: decimal.Decimal, quantum: decimal.Decimal, rounding: str) -> decimal.Decimal:
    context = decimal.Context(prec=80, rounding=rounding)
    return number.quantize(quantum, context=context)


def _float32_exact(value: Any) -> float | None:
    import numpy as np

    if not isinstance(value, float):
        return None
    f = float(np.float32(value))
    return f if f == value or (math.isnan(f) and math.isnan(value)) else None


def _float32_toward(value: Any, direction: float) -> float | None:
    """The FLOAT nearest ``value`` on the side of ``direction`` (``value`` is not a FLOAT)."""
    import numpy as np

    if not isinstance(value, float) or math.isnan(value):
        return None
    with np.errstate(over="ignore"):
        f = np.float32(value)
    if (direction < 0 and float(f) > value) or (direction > 0 and float(f) < value):
        f = np.nextafter(f, np.float32(direction))
    return float(f)
