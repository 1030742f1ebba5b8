"""pqindex.polars.scan: a LazyFrame whose filters prune files, row groups and pages.

The translation of polars expressions into pqindex predicates is checked operator by
operator against what an io source actually receives (the optimised expression), and
the rows against polars' own Parquet reader over random predicates (NULLs, NaN and -0.0,
strings, dates, timestamps naive and zoned in three units, decimals, casts), with limits,
over loose files, a Delta table and an Iceberg table.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pl = pytest.importorskip("polars")
import pqindex.polars as pqp  # noqa: E402
from polars.io.plugins import register_io_source  # noqa: E402

UTC = dt.timezone.utc
ROWS_PER_FILE = 1500
FILES = 2
NS_2020 = 1_577_836_800 * 10**9

STRINGS = ["", "a", "ab", "abc", "b%c", "b_c", "x\ny", "é", "zz", "a.c", "aXc"] + [
    f"v{i:02d}" for i in range(30)
]
FLOATS = [-2.5, -0.0, 0.0, 0.1, 1.0, 3.75, 1e300, math.inf, -math.inf, math.nan]


def make_table(start: int, n: int, seed: int) -> pa.Table:
    """``n`` rows numbered by ``k`` from ``start``; every other column draws from a small
    domain with NULLs, NaN, -0.0 and infinities. Rows are clustered on one column or
    another (by seed), so that predicates on them prune pages, row groups and files."""
    rng = random.Random(seed)

    def maybe(value: Any, nulls: float = 0.1) -> Any:
        return None if rng.random() < nulls else value

    def floats() -> list[Any]:
        out = []
        for _ in range(n):
            v = rng.choice(FLOATS) if rng.random() < 0.4 else round(rng.gauss(0, 10), 2)
            out.append(maybe(v))
        return out

    days = [rng.randint(-400, 400) for _ in range(n)]
    ns = [NS_2020 + d * 86_400_000_000_000 + rng.randrange(100_000_000_000_000) for d in days]
    table = pa.table(
        {
            "i": pa.array([maybe(rng.randint(-20, 20)) for _ in range(n)], pa.int64()),
            "i32": pa.array([maybe(rng.randint(-1000, 1000)) for _ in range(n)], pa.int32()),
            "f": pa.array(floats(), pa.float64()),
            "f32": pa.array(floats(), pa.float32()),
            "s": pa.array([maybe(rng.choice(STRINGS)) for _ in range(n)], pa.string()),
            "d": pa.array(
                [maybe(dt.date(2020, 1, 1) + dt.timedelta(d)) for d in days], pa.date32()
            ),
            "ts": pa.array([maybe(v // 1000) for v in ns], pa.timestamp("us")),
            "tz": pa.array([maybe(v // 1000 + 7) for v in ns], pa.timestamp("us", tz="UTC")),
            "tn": pa.array([maybe(v) for v in ns], pa.timestamp("ns")),
            "tzb": pa.array(
                [maybe(v // 1_000_000) for v in ns], pa.timestamp("ms", tz="Europe/Berlin")
            ),
            "b": pa.array([maybe(rng.random() < 0.5) for _ in range(n)], pa.bool_()),
            "m": pa.array(
                [maybe(Decimal(rng.randint(-500, 500)) / 100) for _ in range(n)],
                pa.decimal128(10, 2),
            ),
        }
    )
    keys = [("d", "ascending")] if seed % 2 == 0 else [("s", "ascending"), ("f", "ascending")]
    table = table.sort_by(keys)
    return table.add_column(0, "k", pa.array(range(start, start + n), pa.int64()))


def write(table: pa.Table, path: Path) -> None:
    pq.write_table(table, path, row_group_size=300, write_page_index=True, data_page_size=512)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("polars-source")
    for f in range(FILES):
        write(make_table(f * ROWS_PER_FILE, ROWS_PER_FILE, seed=f), root / f"part-{f}.parquet")
    return root


@pytest.fixture(scope="module")
def reference(dataset: Path) -> pl.DataFrame:
    return pl.read_parquet(str(dataset / "*.parquet"))


def rows(frame: pl.DataFrame) -> Counter[str]:
    """A frame's rows as a multiset (NaN, -0.0 and NULL spelled apart by repr)."""
    return Counter(repr(r) for r in frame.rows())


# What an io source receives, and its translation, operator by operator.

SCHEMA = pl.Schema(
    [
        ("i", pl.Int64()),
        ("i32", pl.Int32()),
        ("u8", pl.UInt8()),
        ("f", pl.Float64()),
        ("f32", pl.Float32()),
        ("s", pl.String()),
        ("d", pl.Date()),
        ("t", pl.Datetime("us")),
        ("tn", pl.Datetime("ns")),
        ("tz", pl.Datetime("us", "UTC")),
        ("tzm", pl.Datetime("ms", "Europe/Berlin")),
        ("b", pl.Boolean()),
        ("m", pl.Decimal(10, 2)),
        ("tm", pl.Time()),
        ("bin", pl.Binary()),
    ]
)


def handed(expr: pl.Expr, schema: pl.Schema = SCHEMA) -> pl.Expr | None:
    """The predicate a polars io source is given for ``filter(expr)``."""
    received: list[pl.Expr | None] = []

    def source(
        with_columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None, _: Any
    ) -> Iterator[pl.DataFrame]:
        received.append(predicate)
        yield pl.DataFrame(schema=schema)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        register_io_source(source, schema=schema).filter(expr).collect()
    return received[0]


def C(name: str) -> dict[str, Any]:
    return {"col": name}


def L(value: Any, type_: str | None = None) -> dict[str, Any]:
    return {"lit": value} if type_ is None else {"lit": value, "type": type_}


def op(name: str, *args: Any, **extra: Any) -> dict[str, Any]:
    return {"op": name, "args": list(args), **extra}


def D(text: str) -> dict[str, Any]:
    return L(text, "DOUBLE")


col = pl.col
TRANSLATIONS: list[tuple[str, pl.Expr, dict[str, Any] | None]] = [
    ("eq", col("i") == 3, op("=", C("i"), L(3))),
    ("ne", col("i") != 3, op("!=", C("i"), L(3))),
    ("lt", col("i") < 3, op("<", C("i"), L(3))),
    ("le", col("i") <= 3, op("<=", C("i"), L(3))),
    ("gt", col("i") > 3, op(">", C("i"), L(3))),
    ("ge", col("i") >= 3, op(">=", C("i"), L(3))),
    ("literal on the left", 3 < col("i"), op(">", C("i"), L(3))),
    ("int32", col("i32") > 5, op(">", C("i32"), L(5))),
    ("int32 beyond its range: folded to false", col("i32") > 10**10, L(False)),
    ("uint8 below its range: folded", col("u8") > -1, op("is_not_null", C("u8"))),
    (
        "widening int cast: the column itself",
        col("i32").cast(pl.Int64) > 3,
        op(">", C("i32"), L(3)),
    ),
    (
        "int64 against a float: rounded, so a double's step wider",
        col("i") == 2.5,
        op(
            "and",
            op(">", C("i"), D("2.4999999999999996")),
            op("<", C("i"), D("2.5000000000000004")),
        ),
    ),
    (
        "int64 cast to a double: rounded",
        col("i").cast(pl.Float64) > 3.0,
        op(">", C("i"), D("3.0")),
    ),
    ("int32 against a float: the column", col("i32") < 2.5, op("<", C("i32"), D("2.5"))),
    (
        "float32 cast to a double: the column",
        col("f32").cast(pl.Float64) == 0.1,
        op("=", C("f32"), D("0.1")),
    ),
    ("double", col("f") == 0.1, op("=", C("f"), D("0.1"))),
    ("float32 keeps its own value", col("f32") == 0.1, op("=", C("f32"), L("0.1", "REAL"))),
    ("NaN literal (serialised as null): unknown", col("f") == math.nan, None),
    ("infinite literal: unknown", col("f") < math.inf, None),
    ("negative zero", col("f") < -0.0, op("<", C("f"), D("-0.0"))),
    ("is_nan", col("f").is_nan(), op("=", C("f"), D("NaN"))),
    ("is_not_nan", col("f32").is_not_nan(), op("!=", C("f32"), L("NaN", "REAL"))),
    (
        "is_in floats with NaN",
        col("f").is_in([1.0, math.nan]),
        op("in", C("f"), D("1.0"), D("NaN")),
    ),
    ("string", col("s") == "x", op("=", C("s"), L("x"))),
    ("string order", col("s") <= "x", op("<=", C("s"), L("x"))),
    ("is_in", col("s").is_in(["a", "b"]), op("in", C("s"), L("a"), L("b"))),
    ("not is_in", ~col("i").is_in([1, 2]), op("not", op("in", C("i"), L(1), L(2)))),
    ("is_in with NULL: the values", col("i").is_in([1, None]), op("in", C("i"), L(1))),
    # NULL in the list makes no row NULL in polars, unlike SQL: not negated.
    ("not is_in with NULL: unknown", ~col("i").is_in([1, None]), None),
    (
        "is_in nulls_equal with NULL",
        col("i").is_in([1, None], nulls_equal=True),
        op("or", op("in", C("i"), L(1)), op("is_null", C("i"))),
    ),
    (
        "is_in nulls_equal without NULL",
        col("i").is_in([1, 2], nulls_equal=True),
        op("and", op("is_not_null", C("i")), op("in", C("i"), L(1), L(2))),
    ),
    ("is_in nothing", col("i").is_in([]), L(False)),
    (
        "between",
        col("i").is_between(1, 5),
        op("and", op(">=", C("i"), L(1)), op("<=", C("i"), L(5))),
    ),
    (
        "between left",
        col("i").is_between(1, 5, closed="left"),
        op("and", op(">=", C("i"), L(1)), op("<", C("i"), L(5))),
    ),
    (
        "between right",
        col("i").is_between(1, 5, closed="right"),
        op("and", op(">", C("i"), L(1)), op("<=", C("i"), L(5))),
    ),
    (
        "between open",
        col("f").is_between(1.0, 5.0, closed="none"),
        op("and", op(">", C("f"), D("1.0")), op("<", C("f"), D("5.0"))),
    ),
    (
        "contains literal",
        col("s").str.contains("a.c", literal=True),
        op("contains", C("s"), L("a.c")),
    ),
    ("regex of a literal", col("s").str.contains("abc"), op("contains", C("s"), L("abc"))),
    ("regex escape", col("s").str.contains(r"b\.c"), op("contains", C("s"), L("b.c"))),
    ("regex anchored start", col("s").str.contains("^ab"), op("starts_with", C("s"), L("ab"))),
    ("regex anchored end", col("s").str.contains("c$"), op("ends_with", C("s"), L("c"))),
    ("regex anchored both", col("s").str.contains("^abc$"), op("=", C("s"), L("abc"))),
    (
        "regex wildcard: a LIKE, wider",
        col("s").str.contains("a.c"),
        op("like", C("s"), L("%a%c%"), escape="\\"),
    ),
    (
        "regex repetition and LIKE escapes",
        col("s").str.contains("^x_+y.*"),
        op("like", C("s"), L("x\\_%y%"), escape="\\"),
    ),
    (
        "regex optional character",
        col("s").str.contains("ab?c$"),
        op("like", C("s"), L("%a%c"), escape="\\"),
    ),
    ("regex alternation: unknown", col("s").str.contains("a|b"), None),
    ("regex class: unknown", col("s").str.contains("[ab]c"), None),
    ("regex escape class: unknown", col("s").str.contains(r"\d"), None),
    ("regex flags: unknown", col("s").str.contains("(?i)ab"), None),
    ("not of a wider LIKE: unknown", ~col("s").str.contains("a.c"), None),
    ("starts_with", col("s").str.starts_with("ab"), op("starts_with", C("s"), L("ab"))),
    ("ends_with", col("s").str.ends_with("ab"), op("ends_with", C("s"), L("ab"))),
    ("starts_with a column: unknown", col("s").str.starts_with(col("s")), None),
    ("date", col("d") > dt.date(2020, 1, 1), op(">", C("d"), L("2020-01-01", "DATE"))),
    ("date in", col("d").is_in([dt.date(2020, 1, 1)]), op("in", C("d"), L("2020-01-01", "DATE"))),
    (
        "timestamp",
        col("t") > dt.datetime(2020, 1, 1, 1, 2, 3, 456789),
        op(">", C("t"), L("2020-01-01 01:02:03.456789", "TIMESTAMP")),
    ),
    (
        "nanosecond column, microsecond literal",
        col("tn") >= dt.datetime(2020, 1, 1, 1, 2, 3, 456789),
        op(">=", C("tn"), L("2020-01-01 01:02:03.456789", "TIMESTAMP")),
    ),
    (
        "nanosecond literal",
        col("tn") < pl.lit(NS_2020 + 1).cast(pl.Datetime("ns")),
        op("<", C("tn"), L("2020-01-01 00:00:00.000000001", "TIMESTAMP_NS")),
    ),
    (
        "zoned",
        col("tz") > dt.datetime(2020, 1, 1, tzinfo=UTC),
        op(">", C("tz"), L("2020-01-01 00:00:00.000000+00:00", "TIMESTAMPTZ")),
    ),
    (
        "zoned column in ms and another zone: the instant",
        col("tzm") == dt.datetime(2020, 1, 1, 12, tzinfo=UTC),
        op("=", C("tzm"), L("2020-01-01 12:00:00.000000+00:00", "TIMESTAMPTZ")),
    ),
    ("time", col("tm") > dt.time(12), op(">", C("tm"), L("12:00:00.000000", "TIME"))),
    ("decimal", col("m") == Decimal("1.25"), op("=", C("m"), L("1.25", "DECIMAL(38,2)"))),
    ("decimal against a float: unknown", col("m") > 1.5, None),
    (
        "binary",
        col("bin") == b"ab",
        op("=", C("bin"), {"lit": "6162", "type": "BLOB", "encoding": "hex"}),
    ),
    ("boolean column", col("b"), C("b")),
    ("not boolean column", ~col("b"), op("not", C("b"))),
    ("boolean literal", pl.lit(True), L(True)),
    ("is_null", col("i").is_null(), op("is_null", C("i"))),
    ("is_not_null", col("s").is_not_null(), op("is_not_null", C("s"))),
    (
        "eq_missing: never NULL",
        col("i").eq_missing(3),
        op("and", op("is_not_null", C("i")), op("=", C("i"), L(3))),
    ),
    ("eq_missing NULL", col("i").eq_missing(None), op("is_null", C("i"))),
    (
        "ne_missing: never NULL",
        col("i").ne_missing(3),
        op("or", op("is_null", C("i")), op("!=", C("i"), L(3))),
    ),
    (
        "or",
        (col("i") == 1) | (col("s") == "x"),
        op("or", op("=", C("i"), L(1)), op("=", C("s"), L("x"))),
    ),
    ("or with an unknown side: unknown", (col("i") == 1) | (col("i") + 1 > 3), None),
    (
        "and with an unknown side: the other",
        (col("i") == 1) & (col("i") + 1 > 3),
        op("=", C("i"), L(1)),
    ),
    ("not of a part with an unknown side: unknown", ~((col("i") == 1) & (col("i") + 1 > 3)), None),
    (
        "xor of exact parts",
        (col("i") == 1) ^ col("b"),
        op(
            "or",
            op("and", op("=", C("i"), L(1)), op("not", C("b"))),
            op("and", op("not", op("=", C("i"), L(1))), C("b")),
        ),
    ),
    (
        "any_horizontal",
        pl.any_horizontal(col("i") > 1, col("i") < 0),
        op("or", op(">", C("i"), L(1)), op("<", C("i"), L(0))),
    ),
    (
        "when/then/otherwise: the branches that can hold",
        pl.when(col("i").is_null()).then(None).otherwise(col("i").is_in([1, 2])),
        op("in", C("i"), L(1), L(2)),
    ),
    (
        "when/then/otherwise with a condition",
        pl.when(col("s") == "a").then(col("i") > 1).otherwise(False),
        op("and", op("=", C("s"), L("a")), op(">", C("i"), L(1))),
    ),
    ("two columns: unknown", col("i") > col("i32"), None),
    ("arithmetic: unknown", col("i") + 1 > 3, None),
]


PUSHDOWN = pytest.mark.skipif(
    not pqp.pushdown_supported(), reason="predicates are translated for tested polars versions"
)


@PUSHDOWN
@pytest.mark.parametrize(
    ("name", "expr", "expected"), TRANSLATIONS, ids=[c[0] for c in TRANSLATIONS]
)
def test_translation(name: str, expr: pl.Expr, expected: dict[str, Any] | None) -> None:
    predicate = handed(expr)
    assert predicate is not None
    assert pqp.translate(predicate, SCHEMA) == expected


@PUSHDOWN
def test_translations_plan_in_pqindex(tmp_path: Path) -> None:
    """Every translation of the table above over a file with those columns is a
    predicate pqindex plans (no PredicateError for a shape the translator emits)."""
    table = pa.table({name: pa.nulls(1) for name in SCHEMA}).cast(
        pl.DataFrame(schema=SCHEMA).to_arrow().schema
    )
    path = tmp_path / "all-types.parquet"
    pq.write_table(table, path)
    for _name, _expr, expected in TRANSLATIONS:
        if expected is not None:
            pqindex.scan(str(path), where=expected).to_arrow()


def test_pushdown_is_on_for_the_tested_version() -> None:
    assert pqp.pushdown_supported() == (
        ".".join(pl.__version__.split(".")[:2]) in pqp.TESTED_POLARS
    )


# Random predicates against polars' own reader.


class Exprs:
    """Random polars predicates over the dataset's columns: literals drawn from the data,
    their neighbours and the special values; every operator the translator reads (and
    some it does not), combined with &, | and ~ up to depth 3."""

    def __init__(self, frame: pl.DataFrame, seed: int, columns: list[str] | None = None):
        self.rng = random.Random(seed)
        self.frame = frame
        self.columns = columns or frame.columns
        self.values = {
            c: frame[c].drop_nulls().unique().sort().to_list() for c in self.columns if c != "tn"
        }
        if "tn" in self.columns:
            self.values["tn"] = frame["tn"].drop_nulls().cast(pl.Int64).unique().sort().to_list()

    def generate(self) -> pl.Expr:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # comparisons with None, generated on purpose
            return self.expr(self.rng.randint(0, 3))

    def expr(self, depth: int) -> pl.Expr:
        if depth == 0 or self.rng.random() < 0.3:
            return self.atom()
        form = self.rng.choices(["and", "or", "not", "when"], [40, 40, 15, 5])[0]
        if form == "not":
            return ~self.expr(depth - 1)
        if form == "when":
            then = self.rng.choice([None, False, True]) if self.rng.random() < 0.4 else None
            return (
                pl.when(self.expr(depth - 1))
                .then(self.expr(depth - 1) if then is None else pl.lit(then))
                .otherwise(self.expr(depth - 1))
            )
        parts = [self.expr(depth - 1) for _ in range(self.rng.randint(2, 3))]
        if self.rng.random() < 0.1:
            return (pl.all_horizontal if form == "and" else pl.any_horizontal)(*parts)
        out = parts[0]
        for p in parts[1:]:
            out = (out & p) if form == "and" else (out | p)
        return out

    def literal(self, c: str) -> Any:
        rng = self.rng
        values = self.values[c]
        v = rng.choice(values)
        roll = rng.random()
        if c in ("k", "i", "i32"):
            if roll < 0.1:
                return rng.choice([0, -1, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)])
            return v + rng.choice([0, 0, -1, 1])
        if c in ("f", "f32"):
            if roll < 0.3:
                return rng.choice(FLOATS)
            if roll < 0.5 and math.isfinite(v):
                return math.nextafter(v, rng.choice([math.inf, -math.inf]))
            return v
        if c == "s":
            if roll < 0.15:
                return v[: rng.randint(0, len(v))]
            if roll < 0.25:
                return v + "a"
            return v
        if c == "d":
            return v + dt.timedelta(days=rng.choice([0, 0, -1, 1]))
        if c in ("ts", "tz"):
            return v + dt.timedelta(microseconds=rng.choice([0, 0, -1, 1]))
        if c == "tzb":
            v = v + dt.timedelta(milliseconds=rng.choice([0, 0, -1, 1]))
            return v.astimezone(UTC) if roll < 0.3 else v
        if c == "tn":
            ns = v + rng.choice([0, 0, -1, 1, 1000])
            return pl.lit(ns).cast(pl.Datetime("ns"))
        if c == "m":
            return v + rng.choice([Decimal(0), Decimal("0.01"), Decimal("-0.01")])
        if c == "b":
            return rng.random() < 0.5
        return v

    def column(self, c: str) -> pl.Expr:
        """The column, now and then inside a cast polars or the user would write."""
        if self.rng.random() < 0.08:
            if c in ("i32",):
                return pl.col(c).cast(pl.Int64)
            if c == "f32":
                return pl.col(c).cast(pl.Float64)
        return pl.col(c)

    def atom(self) -> pl.Expr:
        rng = self.rng
        c = rng.choice(self.columns)
        x = self.column(c)
        if c == "b":
            form = rng.randrange(5)
            if form == 0:
                return x
            if form == 1:
                return ~x
            if form == 2:
                return x == self.literal(c)
            if form == 3:
                return x.is_null()
            return x.is_in([True, None][: rng.randint(1, 2)], nulls_equal=rng.random() < 0.5)
        forms = ["compare", "between", "in", "null", "missing"]
        weights = [45, 12, 15, 10, 6]
        if c == "s":
            forms.append("string")
            weights.append(25)
        if c in ("f", "f32"):
            forms.append("nan")
            weights.append(6)
        if c == "i":
            forms.append("float cast")
            weights.append(5)
        form = rng.choices(forms, weights)[0]
        if form == "compare":
            ops = ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]
            name = rng.choice(ops)
            value = self.literal(c)
            if rng.random() < 0.02:
                value = None
            if rng.random() < 0.15 and not isinstance(value, pl.Expr):
                flipped = {
                    "__lt__": "__gt__",
                    "__le__": "__ge__",
                    "__gt__": "__lt__",
                    "__ge__": "__le__",
                }
                return getattr(pl.lit(value), flipped.get(name, name))(x)
            return getattr(x, name)(value)
        if form == "between":
            low, high = self.literal(c), self.literal(c)
            closed = rng.choice(["both", "left", "right", "none"])
            return x.is_between(low, high, closed=closed)
        if form == "in":
            if c == "tn":
                ns = [rng.choice(self.values[c]) + rng.choice([0, 1]) for _ in range(3)]
                return x.is_in(pl.Series(ns, dtype=pl.Int64).cast(pl.Datetime("ns")))
            items = [self.literal(c) for _ in range(rng.randint(1, 4))]
            if c == "tzb":  # one list, one zone
                items = [x.astimezone(items[0].tzinfo) for x in items]
            if rng.random() < 0.2:
                items.append(None)
            return x.is_in(items, nulls_equal=rng.random() < 0.3)
        if form == "null":
            return x.is_null() if rng.random() < 0.5 else x.is_not_null()
        if form == "missing":
            value = None if rng.random() < 0.2 else self.literal(c)
            return x.eq_missing(value) if rng.random() < 0.5 else x.ne_missing(value)
        if form == "nan":
            return x.is_nan() if rng.random() < 0.5 else x.is_not_nan()
        if form == "float cast":
            value = rng.choice([2.5, -0.0, 3.0, 1e300, 19.999])
            return getattr(x.cast(pl.Float64), rng.choice(["__lt__", "__ge__", "__eq__"]))(value)
        # Strings.
        kind = rng.choice(["starts_with", "ends_with", "contains", "regex"])
        text = self.literal(c)
        if kind == "regex":
            pattern = rng.choice(
                [
                    "a.c",
                    "^ab",
                    "c$",
                    "^abc$",
                    "b%c",
                    r"b\.c",
                    "v0.",
                    "^v.*1$",
                    "é",
                    "x.y",
                    "a+",
                    "ab*c",
                    "(a|b)",
                    "[ab]c",
                    r"\d",
                    "(?i)AB",
                    "",
                    "^$",
                    "_",
                    "^v1+",
                ]
            )
            return x.str.contains(pattern)
        if kind == "contains":
            return x.str.contains(text, literal=True)
        return getattr(x.str, kind)(text)


def check(
    lf: pl.LazyFrame,
    refs: list[pl.LazyFrame],
    expr: pl.Expr,
    columns: list[str],
    engine: str,
) -> None:
    """The same rows as the first of ``refs`` that answers ``filter(expr).select(columns)``,
    or an error if none does. (polars 2.1's own Parquet reader raises for some predicates
    it evaluates in memory, comparing row group statistics of zoned timestamps with a
    literal of another zone; a frame in memory is the second referee.)"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = None
        for ref in refs:
            try:
                want = ref.filter(expr).select(columns).collect()
                break
            except Exception:
                continue
        if want is None:
            with pytest.raises(Exception):  # noqa: B017 - polars raises what it raises
                lf.filter(expr).select(columns).collect(engine=engine)
            return
        got = lf.filter(expr).select(columns).collect(engine=engine)
    if rows(got) != rows(want):
        predicate = handed(expr, lf.collect_schema())
        translated = None if predicate is None else pqp.translate(predicate, lf.collect_schema())
        raise AssertionError(
            f"{expr}\ntranslated: {translated}\ngot {got.height} rows, want {want.height}"
        )


def test_random_predicates_match_scan_parquet(dataset: Path, full: bool) -> None:
    lf = pqp.scan(str(dataset))
    ref = pl.scan_parquet(str(dataset / "*.parquet"))
    frame = ref.collect()
    gen = Exprs(frame, seed=1)
    rng = random.Random(2)
    for case in range(2000 if full else 300):
        expr = gen.generate()
        columns = (
            rng.sample(frame.columns, rng.randint(1, 3)) if rng.random() < 0.7 else frame.columns
        )
        check(lf, [ref, frame.lazy()], expr, columns, "streaming" if case % 4 == 0 else "in-memory")


def test_limits_match_scan_parquet(dataset: Path) -> None:
    """``filter(e).head(n)``: n of the rows (order is the scan's); ``head(n).filter(e)``: the
    first n rows filtered, which pqindex cannot prune (its order is the files')."""
    lf = pqp.scan(str(dataset))
    frame = pl.read_parquet(str(dataset / "*.parquet"))  # in the files' order
    ref = frame.lazy()
    gen = Exprs(frame, seed=3)
    rng = random.Random(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(60):
            expr = gen.generate()
            n = rng.choice([0, 1, 5, 301, 2000, 5000])
            try:
                want_all = rows(ref.filter(expr).collect())
            except Exception:
                continue
            got = lf.filter(expr).head(n).collect()
            assert got.height == min(n, want_all.total()), expr
            assert not rows(got) - want_all, expr
            first = lf.head(n).filter(expr).collect()
            want_first = ref.head(n).filter(expr).collect()
            assert list(map(repr, first.rows())) == list(map(repr, want_first.rows())), expr


@PUSHDOWN
def test_a_selective_predicate_prunes(dataset: Path, reference: pl.DataFrame) -> None:
    scans: list[pqindex.Scan] = []
    lf = pqp.scan(str(dataset), on_scan=scans.append)
    expr = (pl.col("k") >= 1234) & (pl.col("k") < 1240) & pl.col("s").is_not_null()
    got = lf.filter(expr).select("k", "s").collect()
    assert rows(got) == rows(reference.filter(expr).select("k", "s"))
    metrics = scans[-1].metrics()
    assert metrics["files_pruned"] == 1
    assert metrics["rows_selected"] < ROWS_PER_FILE // 4
    # As planned from the translation directly.
    predicate = handed(expr, lf.collect_schema())
    assert predicate is not None
    where = pqp.translate(predicate, lf.collect_schema())
    direct = pqindex.scan(str(dataset), where=where, columns=["k", "s"])
    assert direct.metrics()["rows_selected"] == metrics["rows_selected"]


def test_a_limit_before_the_filter_is_not_pruned(dataset: Path, reference: pl.DataFrame) -> None:
    scans: list[pqindex.Scan] = []
    lf = pqp.scan(str(dataset), on_scan=scans.append)
    got = lf.head(10).filter(pl.col("k") > 2000).collect()
    assert got.height == 0
    assert scans[-1].metrics()["rows_selected"] == FILES * ROWS_PER_FILE


def test_a_head_stops_reading_at_its_rows(dataset: Path, reference: pl.DataFrame) -> None:
    scans: list[pqindex.Scan] = []
    got = pqp.scan(str(dataset), on_scan=scans.append).head(7).collect()
    assert rows(got) == rows(reference.head(7))
    m = scans[-1].metrics()
    assert m["rows_scanned"] < ROWS_PER_FILE, m
    assert m["units_read"] <= 1, m  # the stream may stop before its unit is counted


def test_counts_projections_and_typed_errors(dataset: Path, reference: pl.DataFrame) -> None:
    lf = pqp.scan(str(dataset))
    expr = pl.col("i") > 3
    assert lf.filter(expr).select(pl.len()).collect().item() == reference.filter(expr).height
    assert lf.select(pl.len()).collect().item() == reference.height
    assert lf.filter(pl.col("k") == 7).select("s").collect().columns == ["s"]
    assert lf.collect_schema() == reference.schema
    with pytest.raises(pqindex.NotFoundError):
        pqp.scan(str(dataset / "missing"))


def test_an_untested_polars_version_filters_without_pruning(
    dataset: Path, reference: pl.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pqp, "TESTED_POLARS", ())
    pqp.pushdown_supported.cache_clear()
    try:
        scans: list[pqindex.Scan] = []
        lf = pqp.scan(str(dataset), on_scan=scans.append)
        expr = pl.col("k") == 17
        assert rows(lf.filter(expr).collect()) == rows(reference.filter(expr))
        assert scans[-1].metrics()["rows_selected"] == FILES * ROWS_PER_FILE
    finally:
        monkeypatch.undo()
        pqp.pushdown_supported.cache_clear()


# Tables.

TABLE_COLUMNS = ["k", "i", "i32", "f", "f32", "s", "d", "tz", "b", "m"]


def random_table_checks(lf: pl.LazyFrame, frame: pl.DataFrame, seed: int, n: int) -> None:
    gen = Exprs(frame, seed=seed, columns=TABLE_COLUMNS)
    rng = random.Random(seed)
    for _ in range(n):
        expr = gen.generate()
        columns = rng.sample(TABLE_COLUMNS, rng.randint(1, 3))
        check(lf, [frame.lazy()], expr, columns, "in-memory")


@PUSHDOWN
def test_delta_table(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    path = tmp_path / "delta"
    for f in range(2):
        part = make_table(f * 700, 700, seed=10 + f).select(TABLE_COLUMNS)
        deltalake.write_deltalake(str(path), part, mode="append")
    frame = pl.DataFrame(deltalake.DeltaTable(str(path)).to_pyarrow_table())
    lf = pqp.scan(str(path))
    random_table_checks(lf, frame, seed=5, n=40)
    first = pqp.scan(str(path), version=0)
    assert first.select(pl.len()).collect().item() == 700
    scans: list[pqindex.Scan] = []
    pruned = pqp.scan(str(path), on_scan=scans.append).filter(pl.col("k") > 1390).collect()
    assert sorted(pruned["k"].to_list()) == list(range(1391, 1400))
    assert scans[-1].metrics()["files_pruned_by_table_stats"] == 1


@PUSHDOWN
def test_iceberg_table(tmp_path: Path) -> None:
    pytest.importorskip("pyiceberg")
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("db")
    parts = [make_table(f * 700, 700, seed=20 + f).select(TABLE_COLUMNS) for f in range(2)]
    table = catalog.create_table("db.t", schema=parts[0].schema)
    for part in parts:
        table.append(part)
    table = catalog.load_table("db.t")
    frame = pl.DataFrame(table.scan().to_arrow())
    lf = pqp.scan(table)
    random_table_checks(lf, frame, seed=6, n=40)
    first = table.history()[0].snapshot_id
    assert pqp.scan(table, snapshot_id=first).select(pl.len()).collect().item() == 700
    scans: list[pqindex.Scan] = []
    pruned = pqp.scan(table, on_scan=scans.append).filter(pl.col("k") < 3).collect()
    assert sorted(pruned["k"].to_list()) == [0, 1, 2]
    assert scans[-1].metrics()["files_pruned_by_table_stats"] == 1


def test_on_scan_sees_each_collect(dataset: Path) -> None:
    seen: list[Callable[[], dict[str, int]]] = []
    lf = pqp.scan(str(dataset), on_scan=lambda s: seen.append(s.metrics))
    lf.filter(pl.col("k") == 1).collect()
    lf.filter(pl.col("k") == 2).collect()
    assert len(seen) == 2
