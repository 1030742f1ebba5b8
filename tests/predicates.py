"""A seeded generator of SQL WHERE predicates over a table's columns.

Literals are drawn from the data itself (values present in the column, their neighbours,
values strictly between two present values, the column type's min/max and just beyond, and
the special values: NaN, +-inf, -0.0, the empty string), because random literals almost never
hit the boundaries where pruning decides. Atoms use every operator the contract lists; they
are combined with AND/OR/NOT up to depth 3. Predicates are trees (:class:`Node`), so a
failing one can be shrunk to a minimal reproducer (:func:`shrink`).

Every predicate is SQL that DuckDB accepts with ``TimeZone='UTC'``; the contract says pqindex
reads SQL as DuckDB does, so whatever DuckDB answers is the expected result. Some literal
forms are deliberately subtle under DuckDB's typing rules and are kept because they are what
users write: ``"f32" = 0.1`` (a DECIMAL literal, cast to FLOAT: true for the float32 0.1)
versus ``"f32" = 0.1e0`` (a DOUBLE: false), ``"ts_s" = TIMESTAMP '... .5'``, integer columns
against fractional or out-of-range literals, decimal literals with more scale than the column.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

COMPARISONS = ("=", "!=", "<>", "<", "<=", ">", ">=")
NS_PER_UNIT = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
# A literal's step in each unit; TIMESTAMP literals stop at microseconds, so ns steps by 1 us.
US_PER_UNIT = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 1}
EPOCH = dt.datetime(1970, 1, 1)
EPOCH_DATE = dt.date(1970, 1, 1)
US_PER_DAY = 86_400_000_000

# Timestamp literals DuckDB can cast to TIMESTAMP_NS: a literal outside 1677..2262 compared
# with a nanosecond column is a conversion error in DuckDB, not a predicate.
NS_SAFE_US = (-9_200_000_000_000_000, 9_200_000_000_000_000)

PROJECTION_ONLY = frozenset({"li", "m"})
F32_MAX = 3.4028234663852886e38
ITEMS = "\x00items\x00"  # placeholder for an IN list's items in an atom's SQL


@dataclass(frozen=True)
class Column:
    """A column a predicate may use: its SQL spelling, kind, type and distinct values.

    ``values`` are in the generator's working form: ints for integers, days for dates,
    integers in the column's unit for timestamps, Decimal, float, str, bytes, bool.
    """

    sql: str
    name: str  # the top-level column it belongs to (a projection keeps or drops it)
    kind: str
    type: pa.DataType
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Literal:
    """A literal's SQL text with a key that orders it among the column's literals."""

    key: Any
    sql: str


@dataclass(frozen=True)
class Node:
    """A predicate as a tree, so a failing one can be shrunk to a minimal reproducer.

    ``op`` is ``atom`` (``sql`` holds its text), ``and``, ``or`` or ``not``. ``bare`` marks a
    child rendered without parentheses (an AND under an OR, where precedence allows it).
    """

    op: str
    children: tuple[Node, ...] = ()
    sql: str = ""
    columns: frozenset[str] = frozenset()
    bare: bool = False
    items: tuple[str, ...] = ()  # an IN list's items, spliced into ``sql`` at ITEMS

    def render(self) -> str:
        if self.op == "atom":
            return self.sql.replace(ITEMS, ", ".join(self.items))
        if self.op == "not":
            return f"NOT ({self.children[0].render()})"
        joiner = " AND " if self.op == "and" else " OR "
        return joiner.join(c.render() if c.bare else f"({c.render()})" for c in self.children)

    def smaller(self) -> Iterator[Node]:
        """Strictly smaller predicates: each child alone, the node without one child, and
        the node with one child replaced by a smaller version of it."""
        if self.op == "atom":
            if len(self.items) > 1:  # an IN list loses one item
                for i in range(len(self.items)):
                    yield replace(self, items=self.items[:i] + self.items[i + 1 :])
            return
        for child in self.children:
            yield replace(child, bare=False)
        if self.op in ("and", "or") and len(self.children) > 2:
            for i in range(len(self.children)):
                yield self._with_children(self.children[:i] + self.children[i + 1 :])
        for i, child in enumerate(self.children):
            for smaller in child.smaller():
                kept = replace(smaller, bare=child.bare and smaller.op != "or")
                yield self._with_children((*self.children[:i], kept, *self.children[i + 1 :]))

    def _with_children(self, children: tuple[Node, ...]) -> Node:
        columns = frozenset().union(*(c.columns for c in children))
        return replace(self, children=children, columns=columns)


@dataclass(frozen=True)
class Predicate:
    sql: str
    columns: frozenset[str]  # top-level columns the predicate reads
    tree: Node | None = None

    @staticmethod
    def of(tree: Node) -> Predicate:
        return Predicate(tree.render(), tree.columns, tree)


def shrink(
    predicate: Predicate, fails: Callable[[Predicate], bool], budget: int = 200
) -> Predicate:
    """Greedily replaces ``predicate`` by smaller ones that still fail, within ``budget`` tries."""
    if predicate.tree is None:
        return predicate
    current, tries, progress = predicate.tree, 0, True
    while progress and tries < budget:
        progress = False
        for candidate in current.smaller():
            tries += 1
            if fails(Predicate.of(candidate)):
                current, progress = candidate, True
                break
            if tries >= budget:
                break
    return Predicate.of(current)


def _kind(type_: pa.DataType) -> str | None:
    checks: list[tuple[Callable[[pa.DataType], bool], str]] = [
        (pa.types.is_boolean, "bool"),
        (pa.types.is_integer, "int"),
        (pa.types.is_floating, "float"),
        (pa.types.is_decimal, "decimal"),
        (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t), "string"),
        (lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t), "binary"),
        (pa.types.is_date32, "date"),
        (pa.types.is_timestamp, "timestamp"),
    ]
    for check, kind in checks:
        if check(type_):
            return kind
    return None


def _distinct(array: pa.ChunkedArray | pa.Array) -> tuple[Any, ...]:
    """Distinct non-null values in working form (see :class:`Column`)."""
    values = pc.unique(pc.drop_null(array))
    type_ = values.type
    if pa.types.is_timestamp(type_):
        values = values.cast(pa.int64())
    elif pa.types.is_date32(type_):
        values = values.cast(pa.int32())
    return tuple(values.to_pylist())


def columns_of(table: pa.Table) -> list[Column]:
    """Every column (and struct field) a predicate may use, with its distinct values."""
    columns = []
    for field in table.schema:
        if field.name in PROJECTION_ONLY:
            continue
        if pa.types.is_struct(field.type):
            struct = table.column(field.name).combine_chunks()
            for child in field.type:
                kind = _kind(child.type)
                if kind is None:
                    continue
                values = _distinct(pc.struct_field(struct, child.name))
                sql = f'"{field.name}"."{child.name}"'
                columns.append(Column(sql, field.name, kind, child.type, values))
            continue
        kind = _kind(field.type)
        if kind is None:
            continue
        values = _distinct(table.column(field.name))
        columns.append(Column(f'"{field.name}"', field.name, kind, field.type, values))
    return columns


# --------------------------------------------------------------------------------------------
# Literal formatting
# --------------------------------------------------------------------------------------------


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def blob_text(data: bytes) -> str:
    """DuckDB's text form of a BLOB: printable ASCII as is, every other byte as ``\\xHH``."""
    out = []
    for byte in data:
        if 0x20 <= byte < 0x7F and byte not in (0x5C, 0x27):
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02X}")
    return "".join(out)


def float_sql(value: float, double_form: bool = False) -> str:
    """A float literal. Finite values without an exponent read as DECIMAL in DuckDB (cast
    to the column's type); ``double_form`` appends ``e0`` so DuckDB reads a DOUBLE."""
    if math.isnan(value):
        return "CAST('NaN' AS DOUBLE)"
    if math.isinf(value):
        return "CAST('Infinity' AS DOUBLE)" if value > 0 else "CAST('-Infinity' AS DOUBLE)"
    if value == 0 and math.copysign(1, value) < 0:
        return "CAST('-0.0' AS DOUBLE)" if double_form else "-0.0"
    text = repr(value)
    if double_form and "e" not in text:
        text += "e0"
    return text


def decimal_sql(value: Decimal) -> str:
    return format(value, "f")


def date_sql(days: int) -> str:
    return f"DATE '{(EPOCH_DATE + dt.timedelta(days=days)).isoformat()}'"


def timestamp_sql(micros: int) -> str:
    moment = EPOCH + dt.timedelta(microseconds=micros)
    return f"TIMESTAMP '{moment.isoformat(sep=' ')}'"


def literal_sql(type_: pa.DataType, value: Any) -> str:
    """The plainest SQL literal for a value in working form (see :class:`Column`)."""
    if pa.types.is_timestamp(type_):
        return timestamp_sql(value * NS_PER_UNIT[type_.unit] // 1000)
    if pa.types.is_date32(type_):
        return date_sql(value)
    if pa.types.is_floating(type_):
        return float_sql(value)
    if pa.types.is_decimal(type_):
        return decimal_sql(value)
    if pa.types.is_binary(type_) or pa.types.is_large_binary(type_):
        return f"CAST({sql_string(blob_text(value))} AS BLOB)"
    if isinstance(value, str):
        return sql_string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _float_key(value: float) -> tuple[int, float]:
    """DuckDB's float order: NaN above everything, -0.0 equal to 0.0."""
    return (1, 0.0) if math.isnan(value) else (0, value + 0.0)


# --------------------------------------------------------------------------------------------
# Literal choice: present values, neighbours, values between, edges, specials
# --------------------------------------------------------------------------------------------


class Literals:
    """Draws literals for a column from its values; one method per column kind."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def for_column(self, column: Column) -> Literal:
        return getattr(self, f"_{column.kind}")(column)

    def _pick(self, column: Column, default: Any) -> Any:
        return self.rng.choice(column.values) if column.values else default

    def _strategy(self) -> str:
        return self.rng.choices(["present", "neighbour", "between", "edge"], [55, 17, 13, 15])[0]

    def _int(self, column: Column) -> Literal:
        info = np.iinfo(column.type.to_pandas_dtype())
        v = self._pick(column, 0)
        strategy = self._strategy()
        if strategy == "neighbour":
            v += self.rng.choice((-1, 1))
        elif strategy == "between":
            half = Decimal(v) + Decimal("0.5") * self.rng.choice((-1, 1))
            return Literal(half, decimal_sql(half))
        elif strategy == "edge":
            v = self.rng.choice(
                [int(info.min), int(info.max), int(info.min) - 1, int(info.max) + 1, 0]
            )
        if self.rng.random() < 0.03:
            return Literal(v, f"{v}.0e0")  # a DOUBLE literal against an integer column
        return Literal(v, str(v))

    def _float(self, column: Column) -> Literal:
        v = self._pick(column, 0.0)
        strategy = self._strategy()
        is_f32 = column.type == pa.float32()
        if strategy == "neighbour" and math.isfinite(v):
            v = _next_float(v, self.rng.choice((-math.inf, math.inf)), is_f32)
        elif strategy == "between" and len(column.values) > 1:
            finite = sorted(x for x in column.values if math.isfinite(x))
            i = self.rng.randrange(len(finite) - 1) if len(finite) > 1 else 0
            v = (finite[i] + finite[min(i + 1, len(finite) - 1)]) / 2
        elif strategy == "edge":
            v = self.rng.choice(
                [
                    math.nan,
                    math.inf,
                    -math.inf,
                    -0.0,
                    0.0,
                    1.7976931348623157e308,
                    -3.4028234663852886e38,
                    1e39,
                    5e-324,
                ]
            )
        if is_f32 and abs(v) <= F32_MAX and self.rng.random() < 0.3:
            # The float32's shortest text ("0.1"): DuckDB casts it to FLOAT, so it matches.
            return Literal(_float_key(v), str(np.float32(v)))
        return Literal(_float_key(v), float_sql(v, double_form=self.rng.random() < 0.2))

    def _decimal(self, column: Column) -> Literal:
        scale = column.type.scale
        step = Decimal(1).scaleb(-scale)
        top = Decimal(10**column.type.precision - 1).scaleb(-scale)
        v = self._pick(column, Decimal(0))
        strategy = self._strategy()
        if strategy == "neighbour":
            v += step * self.rng.choice((-1, 1))
        elif strategy == "between":
            v += step / 2  # one more digit of scale than the column has
        elif strategy == "edge":
            v = self.rng.choice([top, -top, top + step, -top - step, Decimal(0)])
        if self.rng.random() < 0.03:
            return Literal(v, float_sql(float(v), double_form=True))  # DuckDB compares in DOUBLE
        if v == v.to_integral_value() and self.rng.random() < 0.5:
            return Literal(v, str(int(v)))
        return Literal(v, decimal_sql(v))

    def _string(self, column: Column) -> Literal:
        v = self._pick(column, "")
        strategy = self._strategy()
        if strategy == "neighbour":
            v = self.rng.choice([v + " ", v + "a", v[:-1]])
        elif strategy == "between" and v:
            v = v[:-1] + chr(min(ord(v[-1]) + 1, 0x10FFFF))
        elif strategy == "edge":
            v = self.rng.choice(["", "zzzz", "\U0001f600", "x" * 64, "y" * 62 + "日"])
        if 0xD800 <= ord(v[-1:] or "a") <= 0xDFFF:  # a surrogate is not UTF-8
            v = v[:-1]
        return Literal(v.encode(), sql_string(v))

    def _binary(self, column: Column) -> Literal:
        v = self._pick(column, b"")
        strategy = self._strategy()
        if strategy == "neighbour":
            v = self.rng.choice([v + b"\x00", v + b"a", v[:-1]])
        elif strategy == "between" and v and v[-1] < 255:
            v = v[:-1] + bytes([v[-1] + 1])
        elif strategy == "edge":
            v = self.rng.choice([b"", b"\xff\xff\xff", b"\x00"])
        text = sql_string(blob_text(v))
        # A plain string literal compared with a BLOB column is cast to BLOB by DuckDB.
        return Literal(v, text if self.rng.random() < 0.3 else f"CAST({text} AS BLOB)")

    def _date(self, column: Column) -> Literal:
        days = self._pick(column, 0)
        strategy = self._strategy()
        if strategy == "neighbour":
            days += self.rng.choice((-1, 1))
        elif strategy == "between":
            # A timestamp literal against a date column: DuckDB compares as timestamps.
            micros = days * US_PER_DAY + self.rng.choice([1, US_PER_DAY // 2])
            return Literal(micros / US_PER_DAY, timestamp_sql(micros))
        elif strategy == "edge":
            days = self.rng.choice([-719162, 2932896, 0, -1])  # 0001-01-01, 9999-12-31
        if self.rng.random() < 0.1:
            iso = (EPOCH_DATE + dt.timedelta(days=days)).isoformat()
            return Literal(days, f"CAST('{iso}' AS DATE)")
        return Literal(days, date_sql(days))

    def _timestamp(self, column: Column) -> Literal:
        unit = column.type.unit
        value = self._pick(column, 0)
        micros = (value * NS_PER_UNIT[unit]) // 1000
        strategy = self._strategy()
        if strategy == "neighbour":
            micros += US_PER_UNIT[unit] * self.rng.choice((-1, 1))
        elif strategy == "between":
            micros += max(US_PER_UNIT[unit] // 2, 1)
        elif strategy == "edge":
            micros = self.rng.choice(self._timestamp_edges(unit))
        if self.rng.random() < 0.12 and self._date_fits(unit, micros):
            days = micros // US_PER_DAY  # a DATE literal: midnight of that day
            return Literal(days * US_PER_DAY, date_sql(days))
        if self.rng.random() < 0.08:
            text = (EPOCH + dt.timedelta(microseconds=micros)).isoformat(sep=" ")
            return Literal(micros, f"CAST('{text}' AS TIMESTAMP)")
        return Literal(micros, timestamp_sql(micros))

    @staticmethod
    def _timestamp_edges(unit: str) -> list[int]:
        if unit == "ns":
            return [-9_100_000_000_000_000, 9_100_000_000_000_000, 0, -1]
        return [
            -62_135_596_800_000_000,
            253_402_300_799_999_999,
            0,
            -1,
        ]  # 0001-01-01 .. 9999-12-31

    @staticmethod
    def _date_fits(unit: str, micros: int) -> bool:
        return unit != "ns" or NS_SAFE_US[0] <= micros <= NS_SAFE_US[1]

    def _bool(self, column: Column) -> Literal:
        v = self.rng.random() < 0.5
        return Literal(v, "true" if v else "false")


def _next_float(value: float, toward: float, is_f32: bool) -> float:
    if is_f32:
        with np.errstate(over="ignore"):  # the neighbour of float32's max is inf
            return float(np.nextafter(np.float32(value), np.float32(toward)))
    return math.nextafter(value, toward)


# --------------------------------------------------------------------------------------------
# Predicates
# --------------------------------------------------------------------------------------------


class PredicateGenerator:
    """Random predicates over a table: ``generate()`` returns one :class:`Predicate`.

    ``column_casts`` allows ``CAST(column AS type)`` on the column side, limited to the
    casts that keep every value and its order (int to BIGINT, float to DOUBLE, date to
    TIMESTAMP): pqindex rejects lossy ones such as CAST(ts AS DATE) with UnsupportedError
    by design, and the suite only generates predicates both engines accept.
    """

    def __init__(
        self,
        table: pa.Table,
        seed: int,
        *,
        column_casts: bool = True,
        max_depth: int = 3,
    ):
        self.rng = random.Random(seed)
        self.columns = columns_of(table)
        self.literals = Literals(self.rng)
        self.column_casts = column_casts
        self.max_depth = max_depth

    def generate(self) -> Predicate:
        return Predicate.of(self._expr(self.rng.randint(0, self.max_depth)))

    def _expr(self, depth: int) -> Node:
        if depth == 0 or self.rng.random() < 0.25:
            return self._atom()
        choice = self.rng.choices(["and", "or", "not"], [40, 40, 20])[0]
        if choice == "not":
            child = self._expr(depth - 1)
            return Node("not", (child,), columns=child.columns)
        children = tuple(
            self._bare_if_allowed(self._expr(depth - 1), choice)
            for _ in range(self.rng.randint(2, 3))
        )
        return Node(choice, children, columns=frozenset().union(*(c.columns for c in children)))

    def _bare_if_allowed(self, child: Node, parent: str) -> Node:
        """Children go in parentheses, except (sometimes) an AND or an atom under an OR,
        where SQL's precedence makes them unnecessary: the parser's precedence gets tested."""
        if parent == "or" and child.op in ("and", "atom", "not") and self.rng.random() < 0.3:
            return replace(child, bare=True)
        return child

    def _atom(self) -> Node:
        column = self.rng.choice(self.columns)
        if column.kind == "bool":
            return Node("atom", sql=self._bool_atom(column), columns=frozenset({column.name}))
        expr = self._column_expr(column)
        form = self.rng.choices(
            ["compare", "between", "in", "null", "null_literal"], [50, 15, 18, 12, 5]
        )[0]
        columns = frozenset({column.name})
        if form == "in":
            sql, items = self._in(expr, column)
            return Node("atom", sql=sql, columns=columns, items=items)
        sql = getattr(self, f"_{form}")(expr, column)
        return Node("atom", sql=sql, columns=columns)

    def _column_expr(self, column: Column) -> str:
        """The column as the predicate spells it: now and then inside a widening CAST."""
        if not self.column_casts or self.rng.random() > 0.06:
            return column.sql
        t = column.type
        if pa.types.is_integer(t) and t != pa.uint64():
            return f"CAST({column.sql} AS BIGINT)"
        if t == pa.float32():
            return f"CAST({column.sql} AS DOUBLE)"
        if pa.types.is_date32(t):
            return f"CAST({column.sql} AS TIMESTAMP)"
        return column.sql

    def _compare(self, expr: str, column: Column) -> str:
        op = self.rng.choice(COMPARISONS)
        literal = self.literals.for_column(column)
        if self.rng.random() < 0.15:
            return f"{literal.sql} {op} {expr}"  # literal on the left
        return f"{expr} {op} {literal.sql}"

    def _between(self, expr: str, column: Column) -> str:
        low, high = self.literals.for_column(column), self.literals.for_column(column)
        if (low.key > high.key) != (self.rng.random() < 0.15):  # now and then, an empty range
            low, high = high, low
        negate = "NOT " if self.rng.random() < 0.25 else ""
        return f"{expr} {negate}BETWEEN {low.sql} AND {high.sql}"

    def _in(self, expr: str, column: Column) -> tuple[str, tuple[str, ...]]:
        """``expr [NOT] IN (...)``: the SQL with an ITEMS placeholder, and the items."""
        items = [self.literals.for_column(column).sql for _ in range(self.rng.randint(1, 5))]
        if self.rng.random() < 0.2:
            items.insert(self.rng.randrange(len(items) + 1), "NULL")
        negate = "NOT " if self.rng.random() < 0.3 else ""
        return f"{expr} {negate}IN ({ITEMS})", tuple(items)

    def _null(self, expr: str, column: Column) -> str:
        return f"{expr} IS {'NOT ' if self.rng.random() < 0.5 else ''}NULL"

    def _null_literal(self, expr: str, column: Column) -> str:
        """A comparison with NULL is NULL: no row matches, and none under NOT either."""
        return f"{expr} {self.rng.choice(COMPARISONS)} NULL"

    def _bool_atom(self, column: Column) -> str:
        """A boolean column bare, negated, compared, in a list or tested for NULL."""
        form = self.rng.randrange(6)
        literal = self.literals.for_column(column).sql
        if form == 0:
            return column.sql
        if form == 1:
            return f"NOT {column.sql}"
        if form == 2:
            return f"{column.sql} = {literal}"
        if form == 3:
            return f"{column.sql} {self.rng.choice(COMPARISONS)} {literal}"
        if form == 4:
            return f"{column.sql} IN ({literal}, NULL)"
        return self._null(column.sql, column)
