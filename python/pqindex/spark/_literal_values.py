"""The value of a plainly written literal after Spark's cast, without asking Spark.

Confirming a condition on the client (``_client_filters``) ends with the cast literals'
values. Spark can evaluate them (a job: tens of milliseconds, a round trip on Spark Connect),
but for the literals conditions are mostly made of the value is certain from the text and the
types Spark's analysis gave: an integer, a decimal with a point, a string in single quotes
with no escapes, ``DATE 'yyyy-mm-dd'``, each cast to a type that holds it exactly. Anything
else (overflow, rounding, escapes, other spellings, timestamps with their time zones) is
``UNKNOWN`` and left to Spark.

The same holds of the literal's own type where the grammar fixes it (``written_type``): an
integer is INT, else BIGINT, a number with a point a DECIMAL of its digits, ``DATE '...'`` a
DATE, whatever the session's settings. Strings are not among them: their collation is the
session's default.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

from pyspark.sql import types as T

#: A literal whose value only Spark can tell.
UNKNOWN: Any = object()

_INTEGER = re.compile(r"([+-]?)\s*([0-9]+)\Z")
_DECIMAL = re.compile(r"([+-]?)\s*([0-9]+\.[0-9]*|\.[0-9]+)\Z")
_STRING = re.compile(r"'([^'\\]*)'\Z")
_DATE = re.compile(r"DATE\s*'([0-9]{4})-([0-9]{2})-([0-9]{2})'\Z", re.IGNORECASE)

_INTEGRAL_BITS: dict[type[T.DataType], int] = {
    T.ByteType: 8,
    T.ShortType: 16,
    T.IntegerType: 32,
    T.LongType: 64,
}
#: Integers a float type holds exactly: every one up to 2 ** mantissa bits.
_FLOAT_EXACT: dict[type[T.DataType], int] = {T.FloatType: 2**24, T.DoubleType: 2**53}


def value(literal: Any, literal_type: T.DataType, target: T.DataType | None) -> Any:
    """``literal`` (its SQL text, or a Connect literal expression) of Spark type
    ``literal_type``, cast to ``target`` (None: not cast), as the Python value Spark's
    evaluation would give; ``UNKNOWN`` when that is not certain."""
    written = _written(literal, literal_type)
    if written is UNKNOWN:
        return UNKNOWN
    to = literal_type if target is None else target
    if isinstance(written, bool):
        return written if isinstance(to, T.BooleanType) else UNKNOWN
    if isinstance(written, int):
        return _integer(written, to)
    if isinstance(written, Decimal):
        return _decimal(written, to)
    if isinstance(written, str | dt.date):
        # Strings and dates only as their own type: other casts parse or format them.
        return written if target is None or target == literal_type else UNKNOWN
    return UNKNOWN


def written_type(literal: Any) -> T.DataType | None:
    """The type Spark's parser gives the SQL text ``literal``, where only its spelling
    decides it; None for anything else (Spark is asked). A wrong answer costs pruning, not
    rows: the rendering cast by these types must still analyse as the caller's condition."""
    if not isinstance(literal, str):
        return None
    text = literal.strip()
    if m := _INTEGER.match(text):
        v = int(m.group(1) + m.group(2))
        # A signed number may parse as a negated literal: at the edge of a type the two
        # readings differ (-2147483648 as INT, or 2147483648 negated as BIGINT).
        if v in (-(2**31), -(2**63)):
            return None
        if -(2**31) <= v < 2**31:
            return T.IntegerType()
        return T.LongType() if -(2**63) <= v < 2**63 else None
    if m := _DECIMAL.match(text):
        d = Decimal(m.group(1) + m.group(2))
        _, digits, exponent = d.as_tuple()
        if not isinstance(exponent, int):
            return None
        scale = -exponent
        # Java's BigDecimal precision: the unscaled value's digits (one for zero).
        unscaled = int("".join(map(str, digits)) or "0")
        precision = max(len(str(unscaled)), scale)
        return T.DecimalType(precision, scale) if precision <= 38 else None
    if text.lower() in ("true", "false"):
        return T.BooleanType()
    if _written(text, T.DateType()) is not UNKNOWN:
        return T.DateType()
    return None


def _written(literal: Any, literal_type: T.DataType) -> Any:
    """The value ``literal`` spells in its own type ``literal_type``."""
    if not isinstance(literal, str):
        raw = getattr(literal, "_value", UNKNOWN)
        if isinstance(raw, bool):
            return raw if isinstance(literal_type, T.BooleanType) else UNKNOWN
        if isinstance(raw, int) and type(literal_type) in _INTEGRAL_BITS:
            return raw
        if type(raw) is str and isinstance(literal_type, T.StringType):
            return raw
        return UNKNOWN
    text = literal.strip()
    if type(literal_type) in _INTEGRAL_BITS and (m := _INTEGER.match(text)):
        return int(m.group(1) + m.group(2))
    if isinstance(literal_type, T.DecimalType) and (m := _DECIMAL.match(text)):
        return Decimal(m.group(1) + m.group(2))
    if isinstance(literal_type, T.StringType) and (m := _STRING.match(text)):
        return m.group(1)
    if isinstance(literal_type, T.DateType) and (m := _DATE.match(text)):
        try:
            return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return UNKNOWN
    return UNKNOWN


def _integer(v: int, to: T.DataType) -> Any:
    bits = _INTEGRAL_BITS.get(type(to))
    if bits is not None:
        return v if -(2 ** (bits - 1)) <= v < 2 ** (bits - 1) else UNKNOWN
    if isinstance(to, T.DecimalType):
        return _decimal(Decimal(v), to)
    exact = _FLOAT_EXACT.get(type(to))
    if exact is not None:
        return float(v) if abs(v) <= exact else UNKNOWN
    return UNKNOWN


def _decimal(d: Decimal, to: T.DataType) -> Any:
    """``d`` as a DECIMAL(p, s): only without rounding and within its precision."""
    if not isinstance(to, T.DecimalType):
        return UNKNOWN
    exponent = d.as_tuple().exponent
    if not isinstance(exponent, int) or -exponent > to.scale:
        return UNKNOWN
    scaled = d.quantize(Decimal(1).scaleb(-to.scale))
    digits = len(scaled.as_tuple().digits)
    return scaled if digits <= to.precision else UNKNOWN
