"""On a classic session: the filters Spark itself would push into the Parquet scan.

Spark parses, analyses and optimises the condition; the physical plan then carries the parts
a file source may use (``FileSourceScanExec.partitionFilters`` and ``dataFilters``), which
``DataSourceStrategy.translateFilter`` turns into ``org.apache.spark.sql.sources.Filter``
objects: the same language the Python data source receives. They are read here through py4j
and rebuilt as ``pyspark.sql.datasource`` filters with Python values of the column's type,
for ``_predicate.translate``.

This needs the JVM, so it only serves classic sessions reading local or Hadoop paths. It
prunes more than the client-side verification can: Spark's optimiser unwraps casts
(``int_col = 5L``), folds constants and derives filters the condition does not spell out.
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any

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

from pqindex.spark._condition import split_name
from pqindex.spark._predicate import AlwaysFalse, And, Or

_SOURCES = "org.apache.spark.sql.sources."
_EPOCH = datetime.datetime(1970, 1, 1)
_BINARY: dict[str, type[Filter]] = {
    "EqualTo": EqualTo,
    "EqualNullSafe": EqualNullSafe,
    "GreaterThan": GreaterThan,
    "GreaterThanOrEqual": GreaterThanOrEqual,
    "LessThan": LessThan,
    "LessThanOrEqual": LessThanOrEqual,
    "StringStartsWith": StringStartsWith,
    "StringEndsWith": StringEndsWith,
    "StringContains": StringContains,
}


class _Unknown(Exception):
    """A filter or value this module does not rebuild."""


def scan_filters(spark: Any, filtered_df: Any) -> list[Filter] | None:
    """The filters Spark pushes into the Parquet scans of ``filtered_df`` (partition filters
    first), or None when its plan has no file scan (a source Spark cannot read)."""
    jvm = spark._jvm
    strategy = getattr(
        getattr(jvm.org.apache.spark.sql.execution.datasources, "DataSourceStrategy$"), "MODULE$"
    )
    utils = getattr(getattr(jvm.org.apache.spark.sql.catalyst.util, "DateTimeUtils$"), "MODULE$")
    scans = _file_scans(filtered_df._jdf.queryExecution().sparkPlan())
    if not scans:
        return None
    out: list[Filter] = []
    for scan in scans:
        for expressions in (scan.partitionFilters(), scan.dataFilters()):
            it = expressions.iterator()
            while it.hasNext():
                translated = strategy.translateFilter(it.next(), True)
                if translated.isDefined():
                    try:
                        out.append(_rebuild(translated.get(), utils))
                    except _Unknown:
                        continue  # a conjunct left to Spark: the AND only widens
    return out


def referenced_columns(filtered_df: Any) -> list[str]:
    """Top-level columns the analysed condition of ``filtered_df`` refers to."""
    plan = filtered_df._jdf.queryExecution().analyzed()
    names: list[str] = []
    stack = [plan]
    while stack:
        node = stack.pop()
        if node.getClass().getSimpleName() == "Filter":
            refs = node.condition().references().toSeq()
            names.extend(str(refs.apply(i).name()) for i in range(refs.size()))
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    return names


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


def _rebuild(f: Any, utils: Any) -> Filter:
    kind = f.getClass().getName()
    if not kind.startswith(_SOURCES):
        raise _Unknown(kind)
    kind = kind[len(_SOURCES) :]
    if kind == "And":
        return _and(f, utils)
    if kind == "Or":
        return Or(_rebuild(f.left(), utils), _rebuild(f.right(), utils))
    if kind == "Not":
        return Not(_rebuild(f.child(), utils))
    if kind == "AlwaysFalse":
        return AlwaysFalse()
    if kind == "AlwaysTrue":
        raise _Unknown(kind)  # prunes nothing
    path = split_name(str(f.attribute()))
    if kind == "IsNull":
        return IsNull(path)
    if kind == "IsNotNull":
        return IsNotNull(path)
    if kind == "In":
        return In(path, tuple(_value(v, utils) for v in f.values()))
    cls = _BINARY.get(kind)
    if cls is None:
        raise _Unknown(kind)
    return cls(path, _value(f.value(), utils))  # type: ignore[call-arg]


def _and(f: Any, utils: Any) -> Filter:
    """An AND keeps whichever side it can rebuild (dropping a side widens)."""
    sides = []
    for side in (f.left(), f.right()):
        try:
            sides.append(_rebuild(side, utils))
        except _Unknown:
            continue
    if not sides:
        raise _Unknown("And")
    return sides[0] if len(sides) == 1 else And(sides[0], sides[1])


def _value(value: Any, utils: Any) -> Any:
    """A JVM value (as py4j hands it over) as the Python value pushed filters carry."""
    if value is None or isinstance(value, (bool, int, float, str, bytes, bytearray)):
        return bytes(value) if isinstance(value, bytearray) else value
    if isinstance(value, decimal.Decimal):
        return value
    java_class = _java_class(value)
    try:
        if java_class == "java.sql.Date":
            return _EPOCH.date() + datetime.timedelta(days=int(utils.fromJavaDate(value)))
        if java_class == "java.time.LocalDate":
            return _EPOCH.date() + datetime.timedelta(days=int(utils.localDateToDays(value)))
        if java_class == "java.sql.Timestamp":
            return _instant(int(utils.fromJavaTimestamp(value)))
        if java_class == "java.time.Instant":
            return _instant(int(utils.instantToMicros(value)))
        if java_class == "java.time.LocalDateTime":
            micros = int(utils.localDateTimeToMicros(value))
            return _EPOCH + datetime.timedelta(microseconds=micros)
    except OverflowError as error:  # beyond Python's years 1 to 9999
        raise _Unknown(java_class) from error
    raise _Unknown(java_class)


def _instant(micros: int) -> datetime.datetime:
    return (_EPOCH + datetime.timedelta(microseconds=micros)).replace(tzinfo=datetime.timezone.utc)


def _java_class(value: Any) -> str | None:
    get_class = getattr(value, "getClass", None)
    if get_class is None:
        return None
    try:
        return str(get_class().getName())
    except Exception:
        return None
