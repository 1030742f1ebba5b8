"""The predicate IR of the peer queries, written once, and its renderings: SQL text
(pqindex, DuckDB, DataFusion, Spark), pyarrow dataset expressions and polars
expressions."""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.dataset as ds  # type: ignore[import-untyped,unused-ignore]

Value = int | str | Decimal | dt.date


@dataclass(frozen=True)
class Cmp:
    column: str
    op: str  # one of OPS
    value: Value


@dataclass(frozen=True)
class Between:
    column: str
    low: Value
    high: Value


@dataclass(frozen=True)
class In:
    column: str
    values: tuple[Value, ...]


@dataclass(frozen=True)
class And:
    parts: tuple[Pred, ...]


@dataclass(frozen=True)
class Or:
    parts: tuple[Pred, ...]


Pred = Cmp | Between | In | And | Or

OPS: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def sql_literal(value: Value) -> str:
    """A literal every SQL dialect here reads the same way (DATE '...' for dates)."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    return str(value)


def to_sql(pred: Pred) -> str:
    """SQL text for pqindex, DuckDB, DataFusion and Spark."""
    if isinstance(pred, Cmp):
        return f"{pred.column} {pred.op} {sql_literal(pred.value)}"
    if isinstance(pred, Between):
        return f"{pred.column} BETWEEN {sql_literal(pred.low)} AND {sql_literal(pred.high)}"
    if isinstance(pred, In):
        return f"{pred.column} IN ({', '.join(sql_literal(v) for v in pred.values)})"
    joiner = " AND " if isinstance(pred, And) else " OR "
    return joiner.join(f"({to_sql(p)})" for p in pred.parts)


def arrow_literal(value: Value) -> Any:
    """Decimals and dates as typed scalars: pyarrow will not compare decimal128(15, 2) with
    a plain int literal."""
    return pa.scalar(value) if isinstance(value, Decimal | dt.date) else value


def to_pyarrow(pred: Pred) -> Any:
    """A pyarrow.dataset expression."""
    if isinstance(pred, Cmp):
        return OPS[pred.op](ds.field(pred.column), arrow_literal(pred.value))
    if isinstance(pred, Between):
        f = ds.field(pred.column)
        return (f >= arrow_literal(pred.low)) & (f <= arrow_literal(pred.high))
    if isinstance(pred, In):
        return ds.field(pred.column).isin(list(pred.values))
    combine = operator.and_ if isinstance(pred, And) else operator.or_
    exprs = [to_pyarrow(p) for p in pred.parts]
    out = exprs[0]
    for expr in exprs[1:]:
        out = combine(out, expr)
    return out


def to_polars(pred: Pred) -> Any:
    """A polars expression."""
    import polars as pl

    if isinstance(pred, Cmp):
        return OPS[pred.op](pl.col(pred.column), pred.value)
    if isinstance(pred, Between):
        return pl.col(pred.column).is_between(pred.low, pred.high)
    if isinstance(pred, In):
        return pl.col(pred.column).is_in(list(pred.values))
    combine = operator.and_ if isinstance(pred, And) else operator.or_
    exprs = [to_polars(p) for p in pred.parts]
    out = exprs[0]
    for expr in exprs[1:]:
        out = combine(out, expr)
    return out
