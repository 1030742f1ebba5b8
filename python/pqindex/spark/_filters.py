"""Spark's own filters, as Spark pushes them to a Parquet scan, turned into pqindex SQL.

Spark parses and analyses the user's condition; the physical plan then carries the parts a
file source may use (``FileSourceScanExec.dataFilters`` and ``partitionFilters``), which
Spark itself translates into the small, stable ``org.apache.spark.sql.sources.Filter``
language. Those are what this module reads: every literal there already has the column's
type, so there is nothing left to coerce.

The translation may only widen: the pqindex predicate must hold for every row Spark's
condition keeps, because Spark's condition is applied again to what pqindex returns. An
unknown filter under AND is dropped (which widens); under OR or NOT the whole branch is.
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from typing import Any

_SOURCES = "org.apache.spark.sql.sources."


@dataclass(frozen=True)
class Translated:
    """pqindex SQL and whether it keeps exactly the rows the filter keeps, NULLs included
    (only exact translations may be negated)."""

    sql: str
    exact: bool


def pushed_predicate(spark: Any, filtered_df: Any) -> str | None:
    """The pqindex predicate for the filters Spark would push into the Parquet scan of
    ``filtered_df``, or None when nothing can prune."""
    jvm = spark._jvm
    strategy = getattr(
        getattr(jvm.org.apache.spark.sql.execution.datasources, "DataSourceStrategy$"), "MODULE$"
    )
    utils = getattr(getattr(jvm.org.apache.spark.sql.catalyst.util, "DateTimeUtils$"), "MODULE$")
    schema = filtered_df.schema
    parts: list[str] = []
    for scan in _file_scans(filtered_df._jdf.queryExecution().sparkPlan()):
        for expressions in (scan.partitionFilters(), scan.dataFilters()):
            it = expressions.iterator()
            while it.hasNext():
                translated = strategy.translateFilter(it.next(), True)
                if translated.isDefined():
                    t = _translate(translated.get(), schema, utils)
                    if t is not None and t.sql != "TRUE":
                        parts.append(t.sql)
    if not parts:
        return None
    return " AND ".join(f"({p})" for p in parts)


def _file_scans(plan: Any) -> list[Any]:
    found: list[Any] = []
    stack = [plan]
    while stack:
        node = stack.pop()
        if node.getClass().getSimpleName() == "FileSourceScanExec":
            found.append(node)
        children = node.children().iterator()
        while children.hasNext():
            stack.append(children.next())
    return found


def _translate(f: Any, schema: Any, utils: Any) -> Translated | None:
    kind = f.getClass().getName()
    if not kind.startswith(_SOURCES):
        return None
    kind = kind[len(_SOURCES) :]
    if kind == "AlwaysTrue":
        return Translated("TRUE", True)
    if kind == "AlwaysFalse":
        return Translated("FALSE", True)
    if kind == "And":
        left, right = _translate(f.left(), schema, utils), _translate(f.right(), schema, utils)
        if left is None or right is None:
            # Dropping one side of an AND keeps more rows: still safe, no longer exact.
            kept = left or right
            return None if kept is None else Translated(kept.sql, False)
        return Translated(f"({left.sql}) AND ({right.sql})", left.exact and right.exact)
    if kind == "Or":
        left, right = _translate(f.left(), schema, utils), _translate(f.right(), schema, utils)
        if left is None or right is None:
            return None
        return Translated(f"({left.sql}) OR ({right.sql})", left.exact and right.exact)
    if kind == "Not":
        child = _translate(f.child(), schema, utils)
        if child is None or not child.exact:
            return None
        return Translated(f"NOT ({child.sql})", True)

    column = _column(f.attribute(), schema)
    if column is None:
        return None
    name, data_type = column
    if kind in ("IsNull", "IsNotNull"):
        return Translated(f"{name} IS {'' if kind == 'IsNull' else 'NOT '}NULL", True)
    comparisons = {
        "EqualTo": "=",
        "GreaterThan": ">",
        "GreaterThanOrEqual": ">=",
        "LessThan": "<",
        "LessThanOrEqual": "<=",
    }
    if kind in comparisons or kind == "EqualNullSafe":
        value = _literal(f.value(), data_type, utils)
        if value is None:
            return None
        # a <=> v keeps NULL rows out like a = v, but its negation keeps them: not exact.
        return Translated(f"{name} {comparisons.get(kind, '=')} {value}", kind != "EqualNullSafe")
    if kind == "In":
        values = [_literal(v, data_type, utils) for v in f.values()]
        if any(v is None for v in values) or not values:
            return None
        return Translated(f"{name} IN ({', '.join(v for v in values if v)})", True)
    if kind == "StringStartsWith" and _is_plain_string(data_type):
        # Every string with the prefix sorts at or after it.
        return Translated(f"{name} >= {_string(f.value())}", False)
    return None


def _column(attribute: str, schema: Any) -> tuple[str, Any] | None:
    """The quoted pqindex name and Spark type of a filter's attribute (``a.b`` for a struct
    field, backticks around names that hold dots)."""
    from pyspark.sql.types import StructType

    parts = _split_attribute(attribute)
    data_type: Any = schema
    quoted = []
    for part in parts:
        if not isinstance(data_type, StructType):
            return None
        match = [f for f in data_type.fields if f.name == part] or [
            f for f in data_type.fields if f.name.lower() == part.lower()
        ]
        if len(match) != 1:
            return None
        quoted.append('"' + match[0].name.replace('"', '""') + '"')
        data_type = match[0].dataType
    return ".".join(quoted), data_type


def _split_attribute(attribute: str) -> list[str]:
    parts, current, quoted, i = [], "", False, 0
    while i < len(attribute):
        c = attribute[i]
        if c == "`":
            if quoted and attribute[i + 1 : i + 2] == "`":
                current += "`"
                i += 1
            else:
                quoted = not quoted
        elif c == "." and not quoted:
            parts.append(current)
            current = ""
        else:
            current += c
        i += 1
    parts.append(current)
    return parts


def _is_plain_string(data_type: Any) -> bool:
    from pyspark.sql.types import StringType

    # Collated strings (UTF8_LCASE, ICU) compare differently from bytes.
    collation = getattr(data_type, "collation", "UTF8_BINARY")
    return isinstance(data_type, StringType) and collation in ("UTF8_BINARY", None)


def _string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def scalar_literal(value: Any, data_type: Any) -> str | None:
    """A boolean, number or string ``value`` as a pqindex literal of the Spark type
    ``data_type``; None for other values, or when the type would compare differently."""
    from pyspark.sql import types as T

    if isinstance(data_type, T.BooleanType) and isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    integral = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
    if isinstance(data_type, integral) and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(data_type, T.FloatType) and isinstance(value, float):
        return f"CAST('{_float_text(value)}' AS REAL)"
    if isinstance(data_type, T.DoubleType) and isinstance(value, float):
        return f"CAST('{_float_text(value)}' AS DOUBLE)"
    if _is_plain_string(data_type) and isinstance(value, str):
        return _string(value)
    if isinstance(data_type, T.DecimalType) and isinstance(value, decimal.Decimal):
        return format(value, "f") if value.is_finite() else None
    return None


def _literal(value: Any, data_type: Any, utils: Any) -> str | None:
    """``value`` (a JVM object as py4j hands it over) as a pqindex literal of ``data_type``."""
    from pyspark.sql import types as T

    if value is None:
        return None
    scalar = scalar_literal(value, data_type)
    if scalar is not None:
        return scalar
    java_class = _java_class(value)
    if isinstance(data_type, T.DateType):
        if java_class == "java.sql.Date":
            days = utils.fromJavaDate(value)
        elif java_class == "java.time.LocalDate":
            days = utils.localDateToDays(value)
        else:
            return None
        return f"DATE '{_date_text(int(days))}'"
    if isinstance(data_type, T.TimestampType):
        if java_class == "java.sql.Timestamp":
            micros = utils.fromJavaTimestamp(value)
        elif java_class == "java.time.Instant":
            micros = utils.instantToMicros(value)
        else:
            return None
        return f"TIMESTAMPTZ '{_timestamp_text(int(micros))}+00:00'"
    if isinstance(data_type, T.TimestampNTZType) and java_class == "java.time.LocalDateTime":
        return f"TIMESTAMP '{_timestamp_text(int(utils.localDateTimeToMicros(value)))}'"
    return None


def _java_class(value: Any) -> str | None:
    get_class = getattr(value, "getClass", None)
    if get_class is None:
        return None
    try:
        return str(get_class().getName())
    except Exception:
        return None


def _date_text(days: int) -> str:
    """ISO text of a day number; proleptic Gregorian, like Spark and pqindex."""
    return _civil(days)


def _timestamp_text(micros: int) -> str:
    days, rest = divmod(micros, 86_400_000_000)
    seconds, fraction = divmod(rest, 1_000_000)
    hms = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return f"{_civil(days)} {hms}.{fraction:06d}"


def _civil(days: int) -> str:
    """Year, month and day of a day number, for any year (Python's date stops at 9999)."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    y += m <= 2
    return f"{y:04d}-{m:02d}-{d:02d}" if y >= 0 else f"-{-y:04d}-{m:02d}-{d:02d}"
