"""The one Spark filter translator and the client-side reading of conditions.

The pure parts (reading SQL text, the translation and its exactness rule, restating a
comparison made in a wider type) are checked without Spark; what Spark confirms of a
condition is checked against a real session, classic and Spark Connect. The rows themselves
are refereed by ``test_spark_read``'s differential test, which runs on both kinds too.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark")

from pqindex.spark import _coercion, _sql  # noqa: E402
from pqindex.spark._condition import (  # noqa: E402
    AndNode,
    Between,
    Cmp,
    InList,
    Like,
    Lit,
    NotNode,
    OrNode,
    Ref,
)
from pqindex.spark._predicate import (  # noqa: E402
    AlwaysFalse,
    And,
    Or,
    Widened,
    translate,
    translate_all,
)
from pyspark.sql import types as T  # noqa: E402
from pyspark.sql.datasource import (  # noqa: E402
    EqualNullSafe,
    EqualTo,
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

SCHEMA = T.StructType(
    [
        T.StructField("k", T.LongType()),
        T.StructField("i8", T.ByteType()),
        T.StructField("i32", T.IntegerType()),
        T.StructField("f32", T.FloatType()),
        T.StructField("f64", T.DoubleType()),
        T.StructField("dec", T.DecimalType(9, 2)),
        T.StructField("s", T.StringType()),
        T.StructField("bin", T.BinaryType()),
        T.StructField("b", T.BooleanType()),
        T.StructField("d", T.DateType()),
        T.StructField("ts", T.TimestampType()),
        T.StructField("ntz", T.TimestampNTZType()),
        T.StructField("st", T.StructType([T.StructField("a", T.IntegerType())])),
        T.StructField("we.ird", T.IntegerType()),
        T.StructField("lc", T.StringType("UTF8_LCASE")),
    ]
)

# --- reading SQL text ----------------------------------------------------------------------


def test_sql_reads_the_skeleton_and_keeps_literals_as_written() -> None:
    condition = _sql.parse(
        "k BETWEEN 1 AND 5L AND NOT (s = 'it''s' OR `we.ird` IN (1, NULL)) "
        "AND 5 < st.a AND s LIKE 'a!%%' ESCAPE '!'"
    )
    nodes = [c.node for c in condition.conjuncts]
    assert nodes == [
        Between(Ref(("k",)), Lit(0), Lit(1)),
        NotNode(
            OrNode(
                Cmp("=", Ref(("s",)), Lit(2)),
                InList(Ref(("we.ird",)), (Lit(3), Lit(4))),
            )
        ),
        Cmp(">", Ref(("st", "a")), Lit(5), literal_first=True),
        Like(Ref(("s",)), Lit(6), Lit(7)),
    ]
    assert condition.literals == ("1", "5L", "'it''s'", "1", "NULL", "5", "'a!%%'", "'!'")


def test_sql_splits_only_top_level_conjuncts() -> None:
    """An AND inside BETWEEN or CASE ... END is not a conjunct boundary, one inside
    parentheses around a whole conjunct is, and a conjunct with anything unknown is kept
    whole and opaque."""
    condition = _sql.parse(
        "CASE WHEN k = 1 AND i8 = 2 THEN true END AND (k = 1 AND s = 'x') "
        "AND k BETWEEN 1 AND 2 AND upper(s) = 'X'"
    )
    originals = [c.original for c in condition.conjuncts]
    assert originals == [
        "CASE WHEN k = 1 AND i8 = 2 THEN true END",
        "k = 1",
        "s = 'x'",
        "k BETWEEN 1 AND 2",
        "upper(s) = 'X'",
    ]
    assert [c.node is None for c in condition.conjuncts] == [True, False, False, False, True]
    nested = _sql.parse("((k = 1 AND s = 'x') OR k = 2)").conjuncts
    assert len(nested) == 1 and isinstance(nested[0].node, OrNode)
    assert isinstance(nested[0].node.left, AndNode)


@pytest.mark.parametrize(
    "text",
    ["k + 1 = 2", "k = s", "f(k) = 1", "k = 1 = TRUE", "k IS TRUE", "k IN (SELECT 1)", "'a"],
)
def test_sql_refuses_what_it_does_not_know(text: str) -> None:
    assert [c.node for c in _sql.parse(text).conjuncts] == [None]


# --- the translation and its exactness rule -------------------------------------------------


def pred(f: Any) -> tuple[dict[str, Any], bool] | None:
    t = translate(f, SCHEMA)
    return None if t is None else (t.predicate, t.exact)


def col(name: str | list[str]) -> dict[str, Any]:
    return {"col": name}


def lit(value: Any, type_: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"lit": value, **({} if type_ is None else {"type": type_}), **extra}


def op(name: str, *args: Any) -> dict[str, Any]:
    return {"op": name, "args": list(args)}


def test_translation_of_each_filter() -> None:
    utc = dt.timezone.utc
    assert pred(EqualTo(("k",), 5)) == (op("=", col("k"), lit(5)), True)
    assert pred(EqualTo(("st", "a"), 5)) == (op("=", col(["st", "a"]), lit(5)), True)
    assert pred(EqualTo(("ST", "A"), 5)) == (op("=", col(["st", "a"]), lit(5)), True)
    assert pred(EqualTo(("we.ird",), 5)) == (op("=", col("we.ird"), lit(5)), True)
    assert pred(LessThan(("f32",), float("nan"))) == (op("<", col("f32"), lit("NaN", "REAL")), True)
    assert pred(GreaterThan(("f64",), 0.1)) == (op(">", col("f64"), lit("0.1", "DOUBLE")), True)
    assert pred(GreaterThan(("f64",), -math.inf)) == (
        op(">", col("f64"), lit("-Infinity", "DOUBLE")),
        True,
    )
    assert pred(GreaterThan(("dec",), Decimal("1.50"))) == (
        op(">", col("dec"), lit("1.50", "DECIMAL(3,2)")),
        True,
    )
    assert pred(EqualTo(("dec",), Decimal("-0.05"))) == (
        op("=", col("dec"), lit("-0.05", "DECIMAL(2,2)")),
        True,
    )
    assert pred(EqualTo(("s",), "it's")) == (op("=", col("s"), lit("it's")), True)
    assert pred(EqualTo(("bin",), b"\x00\xff")) == (
        op("=", col("bin"), lit("00ff", "BLOB", encoding="hex")),
        True,
    )
    assert pred(EqualTo(("b",), False)) == (op("=", col("b"), lit(False)), True)
    assert pred(EqualTo(("d",), dt.date(2020, 1, 2))) == (
        op("=", col("d"), lit("2020-01-02", "DATE")),
        True,
    )
    moment = dt.datetime(2020, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert pred(LessThanOrEqual(("ts",), moment)) == (
        op("<=", col("ts"), lit("2020-01-02 01:04:05.000006+00:00", "TIMESTAMPTZ")),
        True,
    )
    assert pred(EqualTo(("ntz",), dt.datetime(2020, 1, 2))) == (
        op("=", col("ntz"), lit("2020-01-02 00:00:00.000000", "TIMESTAMP")),
        True,
    )
    # A value of another type, a collated string, an unknown column, a FLOAT column's value
    # that is no FLOAT, an integer no float holds: nothing to push.
    assert pred(EqualTo(("ts",), dt.datetime(2020, 1, 2))) is None
    assert pred(EqualTo(("ntz",), dt.datetime(2020, 1, 2, tzinfo=utc))) is None
    assert pred(EqualTo(("lc",), "a")) is None
    assert pred(EqualTo(("nope",), 1)) is None
    assert pred(EqualTo(("k",), True)) is None
    assert pred(EqualTo(("k",), 1 << 63)) is None
    assert pred(EqualTo(("f32",), 0.1)) is None
    assert pred(EqualTo(("f64",), 2**53 + 1)) is None


def test_exactness_rule() -> None:
    """Only exact translations may be negated; anything wider (a dropped AND side, <=>, an
    IN list holding NULL, a prefix) may not."""
    k5, unknown = EqualTo(("k",), 5), EqualTo(("nope",), 1)
    k5_pred = op("=", col("k"), lit(5))
    assert pred(Not(k5)) == (op("not", k5_pred), True)
    assert pred(And(k5, unknown)) == (k5_pred, False)
    assert pred(Not(And(k5, unknown))) is None
    assert pred(Or(k5, unknown)) is None
    assert pred(EqualNullSafe(("k",), 5)) == (k5_pred, False)
    assert pred(Not(EqualNullSafe(("k",), 5))) is None
    assert pred(EqualNullSafe(("k",), None)) == (op("is_null", col("k")), True)
    assert pred(In(("k",), (1, None))) == (op("in", col("k"), lit(1)), False)
    assert pred(Not(In(("k",), (1, None)))) is None
    assert pred(Not(In(("k",), (1, 2)))) == (op("not", op("in", col("k"), lit(1), lit(2))), True)
    assert pred(StringStartsWith(("s",), "ab")) == (op("starts_with", col("s"), lit("ab")), True)
    assert pred(Not(StringEndsWith(("s",), "ab"))) == (
        op("not", op("ends_with", col("s"), lit("ab"))),
        True,
    )
    assert pred(StringContains(("s",), "a'b")) == (op("contains", col("s"), lit("a'b")), True)
    assert pred(StringContains(("lc",), "a")) is None  # a collated string
    widened = Widened(And(StringStartsWith(("s",), "a"), StringContains(("s",), "b")))
    assert pred(widened) == (
        op("and", op("starts_with", col("s"), lit("a")), op("contains", col("s"), lit("b"))),
        False,
    )
    assert pred(Not(widened)) is None
    assert pred(IsNull(("s",))) == (op("is_null", col("s")), True)
    assert pred(AlwaysFalse()) == (lit(False), True)
    both = translate_all([k5, unknown, IsNotNull(("s",))], SCHEMA)
    assert both is not None and both.predicate == op("and", k5_pred, op("is_not_null", col("s")))
    assert not both.exact


def test_decimal_literals_of_up_to_38_digits_are_pushed() -> None:
    """A DECIMAL literal carries its own digits, so no cast rounds it; 38 digits fit (a
    longer one does not fit any DECIMAL, and is not pushed)."""
    wide = T.StructType([T.StructField("d", T.DecimalType(38, 10))])
    long = Decimal("9999999999999999999999999999.9999999999")
    translated = translate(EqualTo(("d",), long), wide)
    assert translated is not None
    assert translated.predicate["args"][1] == lit(str(long), "DECIMAL(38,10)")
    assert translate(EqualTo(("d",), Decimal(10**31)), wide) is not None
    assert translate(EqualTo(("d",), Decimal("1E+40")), wide) is None
    assert translate(EqualTo(("d",), Decimal("1E-39")), wide) is None


# --- the translation never narrows: pqindex's rows against Spark's semantics --------------

#: A column of each type, as Spark types it and as the Parquet file holds it.
REFEREE_COLUMNS = {
    "k": (T.LongType(), "int64"),
    "i32": (T.IntegerType(), "int32"),
    "f32": (T.FloatType(), "float32"),
    "f64": (T.DoubleType(), "float64"),
    "dec": (T.DecimalType(9, 2), "decimal(9,2)"),
    "big": (T.DecimalType(38, 10), "decimal(38,10)"),
    "s": (T.StringType(), "string"),
    "bin": (T.BinaryType(), "binary"),
    "b": (T.BooleanType(), "bool"),
    "d": (T.DateType(), "date"),
    "ts": (T.TimestampType(), "timestamp_utc"),
    "ntz": (T.TimestampNTZType(), "timestamp"),
    "st": (T.StructType([T.StructField("a", T.IntegerType())]), "struct"),
}
REFEREE_SCHEMA = T.StructType([T.StructField(n, t) for n, (t, _) in REFEREE_COLUMNS.items()])


def _referee_rows(rng: Any, n: int) -> list[dict[str, Any]]:
    import struct

    def f32(x: float) -> float:
        return float(struct.unpack("f", struct.pack("f", x))[0])

    def double() -> float:
        # Any double, most with 17 significant digits (which JSON numbers lose).
        bits = rng.getrandbits(62) | (rng.getrandbits(1) << 63)
        return float(struct.unpack("d", struct.pack("Q", bits))[0])

    specials = [float("nan"), -0.0, 0.0, float("inf"), float("-inf")]
    base_ts = dt.datetime(2021, 1, 1, tzinfo=dt.timezone.utc)
    rows = []
    for i in range(n):

        def maybe(value: Any) -> Any:
            return None if rng.random() < 0.08 else value

        rows.append(
            {
                "rid": i,
                "k": maybe(i * 3 - 200),
                "i32": maybe(rng.randint(-50, 50)),
                "f32": maybe(
                    f32(rng.choice(specials) if rng.random() < 0.15 else rng.uniform(-9, 9))
                ),
                "f64": maybe(rng.choice(specials) if rng.random() < 0.1 else double()),
                "dec": maybe(Decimal(rng.randint(-99999, 99999)) / 100),
                "big": maybe(Decimal(rng.randint(-(10**38) + 1, 10**38 - 1)).scaleb(-10)),
                "s": maybe(rng.choice(["", "a", "ab", "abc", "it's", "a\\b", "ümlaut", "b%_"])),
                "bin": maybe(bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 3)))),
                "b": maybe(rng.random() < 0.5),
                "d": maybe(dt.date(2020, 1, 1) + dt.timedelta(days=i // 7)),
                "ts": maybe(base_ts + dt.timedelta(microseconds=i * 999_983)),
                "ntz": maybe(dt.datetime(2021, 1, 1) + dt.timedelta(microseconds=i * 7_777_777)),
                "st": maybe({"a": maybe(i % 13)}),
            }
        )
    return rows


def _spark_value(row: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = row
    for part in path:
        if value is None:
            return None
        value = value[part]
    return value


def _order(x: Any) -> Any:
    """Spark's order of a value: NaN above every other float."""
    if isinstance(x, float):
        return (1, 0.0) if math.isnan(x) else (0, x)
    return x


def _holds(f: Any, row: dict[str, Any]) -> bool | None:
    """``f`` on ``row`` as Spark evaluates it: True, False or NULL (None)."""
    if isinstance(f, And):
        a, b = _holds(f.left, row), _holds(f.right, row)
        return False if a is False or b is False else (None if None in (a, b) else True)
    if isinstance(f, Or):
        a, b = _holds(f.left, row), _holds(f.right, row)
        return True if a is True or b is True else (None if None in (a, b) else False)
    if isinstance(f, Not):
        inner = _holds(f.child, row)
        return None if inner is None else not inner
    x = _spark_value(row, f.attribute)
    if isinstance(f, IsNull):
        return x is None
    if isinstance(f, IsNotNull):
        return x is not None
    if isinstance(f, EqualNullSafe):
        return (x is None and f.value is None) or (
            x is not None and f.value is not None and _order(x) == _order(f.value)
        )
    if x is None:
        return None
    if isinstance(f, In):
        if any(v is not None and _order(x) == _order(v) for v in f.value):
            return True
        return None if None in f.value else False
    if isinstance(f, StringStartsWith):
        return bool(x.startswith(f.value))
    if isinstance(f, StringEndsWith):
        return bool(x.endswith(f.value))
    if isinstance(f, StringContains):
        return f.value in x
    compare = {
        EqualTo: lambda a, b: a == b,
        GreaterThan: lambda a, b: a > b,
        GreaterThanOrEqual: lambda a, b: a >= b,
        LessThan: lambda a, b: a < b,
        LessThanOrEqual: lambda a, b: a <= b,
    }[type(f)]
    return bool(compare(_order(x), _order(f.value)))


def _values_near(rng: Any, rows: list[dict[str, Any]], path: tuple[str, ...]) -> Any:
    present = [v for r in rows if (v := _spark_value(r, path)) is not None]
    value = rng.choice(present)
    if rng.random() < 0.5 or isinstance(value, (bool, str, bytes)):
        return value
    if isinstance(value, float):
        if path == ("f32",):
            return value
        return math.nextafter(value, rng.choice([math.inf, -math.inf]))
    step = {
        Decimal: Decimal("0.01") if path == ("dec",) else Decimal("1E-10"),
        int: 1,
        dt.date: dt.timedelta(days=1),
        dt.datetime: dt.timedelta(microseconds=1),
    }[type(value)]
    return value + step if rng.random() < 0.5 else value - step


def _random_filter(rng: Any, rows: list[dict[str, Any]], depth: int = 0) -> Any:
    if depth < 2 and rng.random() < 0.35:
        kind = rng.choice([And, Or, Not])
        if kind is Not:
            return Not(_random_filter(rng, rows, depth + 1))
        return kind(_random_filter(rng, rows, depth + 1), _random_filter(rng, rows, depth + 1))
    name = rng.choice(list(REFEREE_COLUMNS))
    path: tuple[str, ...] = ("st", "a") if name == "st" else (name,)
    value = _values_near(rng, rows, path)
    kinds: list[Any] = [EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual]
    kinds += [EqualNullSafe, In, IsNull, IsNotNull]
    if name == "s":
        kinds += [StringStartsWith, StringEndsWith, StringContains]
    kind = rng.choice(kinds)
    if kind in (IsNull, IsNotNull):
        return kind(path)
    if kind is In:
        items = [value, _values_near(rng, rows, path)] + ([None] if rng.random() < 0.2 else [])
        return In(path, tuple(items))
    if kind in (StringStartsWith, StringEndsWith, StringContains):
        return kind(path, value[: rng.randint(0, len(value))])
    return kind(path, value)


def test_pqindex_keeps_every_row_the_filter_keeps(tmp_path: Any) -> None:
    """Random filters of every type, translated and planned by pqindex over a file of
    small pages (so that statistics and the page index prune): pqindex returns every row
    Spark's semantics keep, and exactly those when the translation says it is exact. A
    narrowing translation (a literal rounded, a bound off by one, a lost NULL or NaN rule)
    fails here."""
    import random

    import pqindex
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(20260101)
    rows = _referee_rows(rng, 600)
    arrow_types = {
        "int64": pa.int64(),
        "int32": pa.int32(),
        "float32": pa.float32(),
        "float64": pa.float64(),
        "decimal(9,2)": pa.decimal128(9, 2),
        "decimal(38,10)": pa.decimal128(38, 10),
        "string": pa.string(),
        "binary": pa.binary(),
        "bool": pa.bool_(),
        "date": pa.date32(),
        "timestamp_utc": pa.timestamp("us", "UTC"),
        "timestamp": pa.timestamp("us"),
        "struct": pa.struct([pa.field("a", pa.int32())]),
    }
    columns = {"rid": pa.array([r["rid"] for r in rows], pa.int64())}
    for name, (_, kind) in REFEREE_COLUMNS.items():
        columns[name] = pa.array([r[name] for r in rows], arrow_types[kind])
    path = tmp_path / "referee.parquet"
    pq.write_table(
        pa.table(columns), path, row_group_size=60, data_page_size=256, write_page_index=True
    )
    checked = exact = 0
    for _ in range(400):
        f = _random_filter(rng, rows)
        translated = translate(f, REFEREE_SCHEMA)
        if translated is None:
            continue
        got = set(
            pqindex.scan(path, where=translated.predicate, columns=["rid"])
            .to_arrow()
            .column("rid")
            .to_pylist()
        )
        want = {r["rid"] for r in rows if _holds(f, r) is True}
        assert want <= got, (f, translated.predicate, sorted(want - got)[:5])
        if translated.exact:
            assert got == want, (f, translated.predicate, sorted(got - want)[:5])
            exact += 1
        checked += 1
    assert checked > 300 and exact > 200, (checked, exact)


# --- comparisons in a wider type --------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "value", "column", "expected"),
    [
        ("=", 5, T.ByteType(), EqualTo(("c",), 5)),
        ("=", 300, T.ByteType(), None),
        ("<", Decimal("2.5"), T.IntegerType(), LessThanOrEqual(("c",), 2)),
        (">", Decimal("2.5"), T.IntegerType(), GreaterThanOrEqual(("c",), 3)),
        (">=", Decimal("-2.5"), T.IntegerType(), GreaterThanOrEqual(("c",), -2)),
        ("<", 1000, T.ByteType(), LessThanOrEqual(("c",), 127)),
        (">", 1000, T.ByteType(), None),
        (
            ">=",
            Decimal("32.985"),
            T.DecimalType(9, 2),
            GreaterThanOrEqual(("c",), Decimal("32.99")),
        ),
        ("<>", Decimal("1.5"), T.DecimalType(9, 2), Not(EqualTo(("c",), Decimal("1.50")))),
        ("=", 0.1, T.FloatType(), None),
        ("=", 0.5, T.FloatType(), EqualTo(("c",), 0.5)),
        ("<", 0.1, T.FloatType(), LessThanOrEqual(("c",), 0.09999999403953552)),
        (">", 0.1, T.FloatType(), GreaterThanOrEqual(("c",), 0.10000000149011612)),
        ("<=>", 7, T.ShortType(), EqualNullSafe(("c",), 7)),
    ],
)
def test_restated_in_the_column_type(op: str, value: Any, column: Any, expected: Any) -> None:
    assert _coercion.restate(op, ("c",), value, column) == expected


def test_common_types_keep_the_column_exact() -> None:
    assert _coercion.common_type(T.ByteType(), T.IntegerType()) == T.IntegerType()
    assert _coercion.common_type(T.LongType(), T.IntegerType()) == T.LongType()
    assert _coercion.common_type(T.IntegerType(), T.DecimalType(2, 1)) == T.DecimalType(11, 1)
    assert _coercion.common_type(T.FloatType(), T.DecimalType(2, 1)) == T.DoubleType()
    assert _coercion.common_type(T.DecimalType(9, 2), T.DoubleType()) is None
    assert _coercion.common_type(T.LongType(), T.DoubleType()) is None
    assert _coercion.common_type(T.DecimalType(38, 10), T.DecimalType(38, 0)) is None


# --- what Spark confirms, on a real session --------------------------------------------------

UTC = dt.timezone.utc


@pytest.fixture(scope="module")
def base(spark: Any) -> Any:
    """An empty DataFrame of ``SCHEMA`` (confirmation only needs Spark's analyser)."""
    return spark.createDataFrame([], SCHEMA)


CONFIRMED = [
    ("k = 5", [EqualTo(("k",), 5)]),
    ("K = 5L AND i8 = 5", [EqualTo(("K",), 5), EqualTo(("i8",), 5)]),
    ("i32 = 2.5", []),  # Spark compares in DECIMAL: no INT equals 2.5, nothing to prune
    ("dec >= 32.985", [GreaterThanOrEqual(("dec",), Decimal("32.99"))]),
    # An integer literal becomes a DECIMAL of its own digits before it is widened.
    ("dec < 5 AND dec = -12", [LessThan(("dec",), Decimal("5.00")), EqualTo(("dec",), -12)]),
    ("dec IN (1, 20)", [In(("dec",), (Decimal("1.00"), Decimal("20.00")))]),
    ("f32 > 0.1", [GreaterThanOrEqual(("f32",), 0.10000000149011612)]),
    ("f64 = 0.1", [EqualTo(("f64",), 0.1)]),
    (
        "s = 'it\\'s' OR s = 'a\\\\b' OR s = \"dq\"",
        [Or(Or(EqualTo(("s",), "it's"), EqualTo(("s",), "a\\b")), EqualTo(("s",), "dq"))],
    ),
    (
        "st.a >= 3 AND `we.ird` IN (1, 2)",
        [GreaterThanOrEqual(("st", "a"), 3), In(("we.ird",), (1, 2))],
    ),
    ("upper(s) = 'X' AND k > 3", [GreaterThan(("k",), 3)]),
    ("CASE WHEN k = 1 AND i8 = 2 THEN true END AND k < 9", [LessThan(("k",), 9)]),
    (
        "k NOT BETWEEN 1 AND 5",
        [Not(And(GreaterThanOrEqual(("k",), 1), LessThanOrEqual(("k",), 5)))],
    ),
    (
        "s LIKE 'ab%' AND s NOT LIKE 'abc' AND s LIKE 'a_%'",
        [
            StringStartsWith(("s",), "ab"),
            Not(EqualTo(("s",), "abc")),
            Widened(StringStartsWith(("s",), "a")),
        ],
    ),
    (
        "s LIKE '%ab%' AND s NOT LIKE '%cd' AND s LIKE 'x%y_z' AND s NOT LIKE 'x%y'",
        [
            StringContains(("s",), "ab"),
            Not(StringEndsWith(("s",), "cd")),
            Widened(
                And(
                    And(StringStartsWith(("s",), "x"), StringContains(("s",), "y")),
                    StringEndsWith(("s",), "z"),
                )
            ),
        ],
    ),
    ("s LIKE 'a!%%' ESCAPE '!'", [StringStartsWith(("s",), "a%")]),
    ("b AND NOT b", [EqualTo(("b",), True), Not(EqualTo(("b",), True))]),
    (
        "d = DATE '2020-01-02' AND ts > DATE '2020-01-02'",
        [
            EqualTo(("d",), dt.date(2020, 1, 2)),
            GreaterThan(("ts",), dt.datetime(2020, 1, 2, tzinfo=UTC)),
        ],
    ),
    (
        "ntz < TIMESTAMP_NTZ '2020-01-02 03:04:05.000006'",
        [LessThan(("ntz",), dt.datetime(2020, 1, 2, 3, 4, 5, 6))],
    ),
    ("bin = X'00FF' AND k <=> NULL", [EqualTo(("bin",), b"\x00\xff"), IsNull(("k",))]),
    ("lc = 'a' AND k = k", []),  # a collated string, two columns
]


@pytest.mark.parametrize(("where", "expected"), CONFIRMED, ids=[w for w, _ in CONFIRMED])
def test_spark_confirms_the_reading(base: Any, where: str, expected: list[Any]) -> None:
    from pqindex.spark._client_filters import pushed_filters

    assert pushed_filters(base, where).filters == expected


def test_a_column_condition_is_read_like_its_text(spark: Any, base: Any) -> None:
    from pqindex.spark._client_filters import pushed_filters
    from pyspark.sql import functions as F

    column = (
        (F.col("k") > 5)
        & F.col("s").startswith("ab")
        & F.col("s").endswith("yz")
        & F.col("s").contains("m")
        & ~F.col("st.a").isin(1, 2)
        & F.col("dec").eqNullSafe(Decimal("1.5"))
        & F.expr("i8 BETWEEN 1 AND 3")
        & (F.lit(3) >= F.col("i32"))
        & F.col("b")
    )
    assert pushed_filters(base, column).filters == [
        GreaterThan(("k",), 5),
        StringStartsWith(("s",), "ab"),
        StringEndsWith(("s",), "yz"),
        StringContains(("s",), "m"),
        Not(In(("st", "a"), (1, 2))),
        EqualNullSafe(("dec",), Decimal("1.50")),
        And(GreaterThanOrEqual(("i8",), 1), LessThanOrEqual(("i8",), 3)),
        LessThanOrEqual(("i32",), 3),
        EqualTo(("b",), True),
    ]


PORTABLE = [
    ("k BETWEEN 1 AND 5 AND s <> 'x' AND d = DATE '2020-01-02'", True),
    ("NOT (dec > 1.5 OR k IN (1, 2)) AND st.a IS NULL", True),
    ("s = 'a\\\\b'", False),  # one backslash to Spark, two to pqindex
    ('s = "x"', False),  # a string to Spark, a column to pqindex
    ("i8 = 5", False),  # compared in INT by Spark
    ("f64 > 0.5", False),  # a DOUBLE in Spark, a DECIMAL literal to pqindex
    ("ts > TIMESTAMP '2020-01-02 00:00:00'", False),  # the session's time zone
    ("k = 5 AND upper(s) = 'X'", False),  # not every conjunct confirmed
    ("k <=> 5", False),
]


@pytest.mark.parametrize(("where", "portable"), PORTABLE, ids=[w for w, _ in PORTABLE])
def test_conditions_pqindex_reads_as_spark_does(base: Any, where: str, portable: bool) -> None:
    from pqindex.spark._client_filters import pushed_filters
    from pqindex.spark._portable import as_written

    assert as_written(where, pushed_filters(base, where)) is portable


#: (literal as written, the type Spark casts it to or None, whether its value is certain
#: from the text alone).
LITERAL_VALUES = [
    ("2520353", None, True),
    ("2520353", "bigint", True),
    ("- 7", "tinyint", True),
    ("300", "tinyint", False),  # TRY_CAST overflows to NULL: Spark's to say
    ("3000000000", None, True),
    ("5", "decimal(15,2)", True),
    ("50000.00", "decimal(15,2)", True),
    (".5", "decimal(4,3)", True),
    ("50000.005", "decimal(15,2)", False),  # would round
    ("123456789", "decimal(9,2)", False),  # beyond the precision
    ("16777216", "float", True),
    ("16777217", "float", False),  # not a float
    ("9007199254740993", "double", False),
    ("'a b'", None, True),
    ("'it''s'", None, False),
    ("'a\\\\b'", None, False),  # escapes are Spark's
    ("DATE '1995-03-15'", None, True),
    ("DATE '1995-3-15'", None, False),
    ("'1995-03-15'", "date", False),  # a string parsed as a date
    ("1.5e0", None, False),
]


@pytest.mark.parametrize(("text", "target", "certain"), LITERAL_VALUES)
def test_literal_values_known_from_their_text_are_sparks(
    spark: Any, text: str, target: str | None, certain: bool
) -> None:
    """The values pqindex reads off a literal's text (and so does not ask Spark to evaluate)
    are the values Spark's own cast gives, of the same Python type."""
    from pqindex.spark import _literal_values

    one = spark.range(1)
    literal_type = one.selectExpr(f"{text} AS c").schema[0].dataType
    to = (
        None
        if target is None
        else one.selectExpr(f"CAST(NULL AS {target}) AS c").schema[0].dataType
    )
    known = _literal_values.value(text, literal_type, to)
    assert (known is not _literal_values.UNKNOWN) == certain
    if certain:
        cast = text if target is None else f"TRY_CAST({text} AS {target})"
        sparks = one.selectExpr(f"{cast} AS c").toArrow().column(0)[0].as_py()
        assert known == sparks
        assert type(known) is type(sparks)
        if isinstance(sparks, Decimal):
            assert known.as_tuple().exponent == sparks.as_tuple().exponent


#: Literals whose type pqindex reads off the text (None: Spark is asked).
LITERAL_TYPES = [
    "1",
    "2147483647",
    "2147483648",
    "-2147483647",
    "- 2147483648",
    "9223372036854775807",
    "99999999999999999999",
    "50000.00",
    "0.05",
    ".5",
    "10.",
    "050.10",
    "true",
    "FALSE",
    "DATE '1995-03-15'",
    "DATE '1995-02-30'",
    "'abc'",
    "5L",
    "1.5e0",
]


@pytest.mark.parametrize("text", LITERAL_TYPES)
def test_literal_types_known_from_their_text_are_sparks(spark: Any, text: str) -> None:
    """A type pqindex reads off a literal's spelling (and so does not ask Spark for) is the
    type Spark's parser gives it."""
    from pqindex.spark import _literal_values

    known = _literal_values.written_type(text)
    unknown = ("- 2147483648", "99999999999999999999", "'abc'", "5L", "1.5e0", "DATE '1995-02-30'")
    if text in unknown:
        assert known is None
        return
    assert known is not None
    assert spark.range(1).selectExpr(f"{text} AS c").schema[0].dataType == known
