"""The one Spark filter translator and the client-side reading of conditions.

The pure parts (reading SQL text, the translation and its exactness rule, restating a
comparison made in a wider type) are checked without Spark; what Spark confirms of a
condition is checked against a real session, classic and Spark Connect. The rows themselves
are refereed by ``test_spark_read``'s differential test, which runs on both kinds too.
"""

from __future__ import annotations

import datetime as dt
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
from pqindex.spark._predicate import And, Or, Widened, translate, translate_all  # noqa: E402
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


def sql(f: Any) -> tuple[str, bool] | None:
    t = translate(f, SCHEMA)
    return None if t is None else (t.sql, t.exact)


def test_translation_of_each_filter() -> None:
    utc = dt.timezone.utc
    assert sql(EqualTo(("k",), 5)) == ('"k" = 5', True)
    assert sql(EqualTo(("st", "a"), 5)) == ('"st"."a" = 5', True)
    assert sql(EqualTo(("ST", "A"), 5)) == ('"st"."a" = 5', True)
    assert sql(EqualTo(("we.ird",), 5)) == ('"we.ird" = 5', True)
    assert sql(LessThan(("f32",), float("nan"))) == ("\"f32\" < CAST('NaN' AS REAL)", True)
    assert sql(GreaterThan(("dec",), Decimal("1.50"))) == ('"dec" > 1.50', True)
    assert sql(EqualTo(("s",), "it's")) == ("\"s\" = 'it''s'", True)
    assert sql(EqualTo(("bin",), b"\x00\xff")) == ("\"bin\" = X'00FF'", True)
    assert sql(EqualTo(("d",), dt.date(2020, 1, 2))) == ("\"d\" = DATE '2020-01-02'", True)
    moment = dt.datetime(2020, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert sql(LessThanOrEqual(("ts",), moment)) == (
        "\"ts\" <= TIMESTAMPTZ '2020-01-02 01:04:05.000006+00:00'",
        True,
    )
    assert sql(EqualTo(("ntz",), dt.datetime(2020, 1, 2))) == (
        "\"ntz\" = TIMESTAMP '2020-01-02 00:00:00.000000'",
        True,
    )
    # A value of another type, a collated string, an unknown column: nothing to push.
    assert sql(EqualTo(("ts",), dt.datetime(2020, 1, 2))) is None
    assert sql(EqualTo(("ntz",), dt.datetime(2020, 1, 2, tzinfo=utc))) is None
    assert sql(EqualTo(("lc",), "a")) is None
    assert sql(EqualTo(("nope",), 1)) is None
    assert sql(EqualTo(("k",), True)) is None


def test_exactness_rule() -> None:
    """Only exact translations may be negated; anything wider (a dropped AND side, <=>, an
    IN list holding NULL, a prefix) may not."""
    k5, unknown = EqualTo(("k",), 5), EqualTo(("nope",), 1)
    assert sql(Not(k5)) == ('NOT ("k" = 5)', True)
    assert sql(And(k5, unknown)) == ('"k" = 5', False)
    assert sql(Not(And(k5, unknown))) is None
    assert sql(Or(k5, unknown)) is None
    assert sql(EqualNullSafe(("k",), 5)) == ('"k" = 5', False)
    assert sql(Not(EqualNullSafe(("k",), 5))) is None
    assert sql(EqualNullSafe(("k",), None)) == ('"k" IS NULL', True)
    assert sql(In(("k",), (1, None))) == ('"k" IN (1)', False)
    assert sql(Not(In(("k",), (1, None)))) is None
    assert sql(Not(In(("k",), (1, 2)))) == ('NOT ("k" IN (1, 2))', True)
    assert sql(StringStartsWith(("s",), "ab")) == ("starts_with(\"s\", 'ab')", True)
    assert sql(Not(StringEndsWith(("s",), "ab"))) == ("NOT (ends_with(\"s\", 'ab'))", True)
    assert sql(StringContains(("s",), "a'b")) == ("contains(\"s\", 'a''b')", True)
    assert sql(StringContains(("lc",), "a")) is None  # a collated string
    widened = Widened(And(StringStartsWith(("s",), "a"), StringContains(("s",), "b")))
    assert sql(widened) == ("(starts_with(\"s\", 'a')) AND (contains(\"s\", 'b'))", False)
    assert sql(Not(widened)) is None
    assert sql(IsNull(("s",))) == ('"s" IS NULL', True)
    both = translate_all([k5, unknown, IsNotNull(("s",))], SCHEMA)
    assert both is not None and both.sql == '("k" = 5) AND ("s" IS NOT NULL)'
    assert not both.exact


def test_long_decimal_literals_are_not_pushed() -> None:
    """The core reads decimal literals of up to 28 significant digits exactly; a longer one
    would be rounded and prune rows that match."""
    wide = T.StructType([T.StructField("d", T.DecimalType(38, 10))])
    long = Decimal("9999999999999999999999999999.9999999999")
    assert translate(EqualTo(("d",), long), wide) is None
    assert translate(EqualTo(("d",), Decimal(10**31)), wide) is not None


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
