"""Values handed over by query engines (polars, DuckDB through pyarrow) as literals of
pqindex's structured predicate (docs/predicates.md).

An engine hands a value already typed; it must reach pqindex as exactly that value of
that type. Every literal here is therefore text cast to a named type (or a JSON value that
means itself), never a float that pqindex would read back rounded: a ``REAL`` stays the
float32 it was, a timestamp keeps its nanoseconds, a decimal its digits. A value with no
exact literal is ``None``, which the translators treat as "cannot prune".
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

Predicate = dict[str, Any]

_NS_PER = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
_NS_PER_DAY = 86_400_000_000_000
#: The dates every pqindex literal type reads (DuckDB prints others with era suffixes).
_MIN_YEAR, _MAX_YEAR = 1, 9999
#: pqindex reads decimal literals of at most this many digits exactly.
_MAX_DECIMAL_DIGITS = 38


def column(name: str) -> Predicate:
    return {"col": name}


def call(op: str, *args: Predicate) -> Predicate:
    return {"op": op, "args": list(args)}


def boolean(value: bool | None) -> Predicate:
    return {"lit": value}


def integer(value: int) -> Predicate:
    return {"lit": value}


def string(value: str) -> Predicate:
    return {"lit": value}


def blob(value: bytes) -> Predicate:
    return {"lit": value.hex(), "type": "BLOB", "encoding": "hex"}


def floating(value: float | str, type_name: str = "DOUBLE") -> Predicate:
    """A DOUBLE or REAL: ``value`` is a float or the engine's own decimal text for it (read
    by pqindex straight into the type, so a float32's text is never rounded through a
    double first)."""
    if isinstance(value, float):
        if math.isnan(value):
            text = "NaN"
        elif math.isinf(value):
            text = "Infinity" if value > 0 else "-Infinity"
        else:
            text = repr(value)
    else:
        text = value
    return {"lit": text, "type": type_name}


def decimal(unscaled: int, scale: int) -> Predicate | None:
    """The decimal ``unscaled * 10**-scale``."""
    digits = str(abs(unscaled))
    if scale < 0 or scale > _MAX_DECIMAL_DIGITS or len(digits) > _MAX_DECIMAL_DIGITS:
        return None
    digits = digits.rjust(scale + 1, "0")
    text = digits if scale == 0 else f"{digits[:-scale]}.{digits[-scale:]}"
    if unscaled < 0:
        text = "-" + text
    return {"lit": text, "type": f"DECIMAL({_MAX_DECIMAL_DIGITS},{scale})"}


def decimal_parts(value: Decimal) -> tuple[int, int] | None:
    """A Python Decimal (as pyarrow gives a decimal scalar) as (unscaled, scale)."""
    if not value.is_finite():
        return None
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        return None
    unscaled = int("".join(map(str, digits)) or "0")
    if exponent > 0:
        unscaled *= 10**exponent
        exponent = 0
    return (-unscaled if sign else unscaled), -exponent


def decimal_value(value: Decimal) -> Predicate | None:
    """A Python Decimal, exactly."""
    parts = decimal_parts(value)
    return None if parts is None else decimal(*parts)


def _civil(days: int) -> tuple[int, int, int] | None:
    """Year, month and day of a count of days since 1970-01-01 (proleptic Gregorian)."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    if not _MIN_YEAR <= year <= _MAX_YEAR:
        return None
    return year, month, day


def _day(year: int, month: int, day: int) -> str:
    return f"{year:04d}-{month:02d}-{day:02d}"


def date(days: int) -> Predicate | None:
    """The date ``days`` after 1970-01-01."""
    civil = _civil(days)
    if civil is None:
        return None
    return {"lit": _day(*civil), "type": "DATE"}


def _clock(ns: int, digits: int) -> str:
    """``HH:MM:SS.f...`` of ``ns`` nanoseconds into a day, with ``digits`` fraction digits."""
    seconds, fraction = divmod(ns, 1_000_000_000)
    hours, rest = divmod(seconds, 3600)
    text = f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
    if digits:
        text += "." + str(fraction).rjust(9, "0")[:digits]
    return text


def timestamp(value: int, unit: str, zoned: bool) -> Predicate | None:
    """A timestamp of ``value`` ``unit`` s since the epoch: an instant (UTC) if ``zoned``,
    a wall clock otherwise. Microsecond values are ``TIMESTAMP``/``TIMESTAMPTZ``; finer
    ones ``TIMESTAMP_NS`` (naive literals compare with zoned columns as UTC)."""
    ns = value * _NS_PER[unit]
    days, into_day = divmod(ns, _NS_PER_DAY)
    civil = _civil(days)
    if civil is None:
        return None
    day = _day(*civil)
    if ns % 1000 == 0:
        text = f"{day} {_clock(into_day, 6)}"
        return (
            {"lit": text + "+00:00", "type": "TIMESTAMPTZ"}
            if zoned
            else {
                "lit": text,
                "type": "TIMESTAMP",
            }
        )
    return {"lit": f"{day} {_clock(into_day, 9)}", "type": "TIMESTAMP_NS"}


def time(ns: int) -> Predicate | None:
    """A time of day, ``ns`` nanoseconds after midnight; TIME literals stop at microseconds."""
    if ns % 1000 or not 0 <= ns < _NS_PER_DAY:
        return None
    return {"lit": _clock(ns, 6), "type": "TIME"}


def arrow_scalar(scalar: Any) -> Predicate | None:
    """A pyarrow scalar as a literal of its own type, or None where pqindex has none."""
    import pyarrow as pa

    kind = scalar.type
    if pa.types.is_dictionary(kind):
        return arrow_scalar(scalar.value) if scalar.is_valid else boolean(None)
    if not scalar.is_valid:
        return boolean(None)
    if pa.types.is_boolean(kind):
        return boolean(bool(scalar.as_py()))
    if pa.types.is_integer(kind):
        return integer(int(scalar.as_py()))
    if pa.types.is_float64(kind):
        return floating(float(scalar.as_py()))
    if pa.types.is_float32(kind):
        # The float32's exact value as a double; read as REAL it is that float32 again.
        return floating(float(scalar.as_py()), "REAL")
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return string(str(scalar.as_py()))
    if (
        pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_fixed_size_binary(kind)
        or pa.types.is_binary_view(kind)
    ):
        return blob(bytes(scalar.as_py()))
    if pa.types.is_date32(kind):
        return date(int(scalar.value))
    if pa.types.is_timestamp(kind):
        return timestamp(int(scalar.value), kind.unit, kind.tz is not None)
    if pa.types.is_time(kind):
        return time(int(scalar.value) * _NS_PER[kind.unit])
    if pa.types.is_decimal(kind):
        return decimal_value(scalar.as_py())
    return None
