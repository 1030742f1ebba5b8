"""``pqindex.spark.read``: the rows must be exactly Spark's own, on both read paths.

The referee is Spark's native Parquet reader with ``spark.sql.parquet.filterPushdown`` off:
with it on, parquet-mr prunes row groups with float statistics that leave NaN out, so Spark
drops NaN rows its own SQL semantics keep (``test_spark_pushdown_drops_nan_rows`` documents
that). Everything else runs Spark's defaults (ANSI on, session time zone UTC).

The differential test runs each read path separately (a bug in one must not hide behind
the other) and batches its cases: the referee's and pqindex's rows of every case become
``(case, JSON text of the row)`` in one union, collected by a single Spark job and compared
as multisets, with each case's schema compared too (JSON would not show an int read as a
long). Planning a case costs hundreds of Py4J round trips, so cases are planned in a few
threads.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import multiprocessing
import os
import pickle
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Context, Decimal
from functools import reduce
from pathlib import Path
from typing import Any

import numpy as np
import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import full_run

# Run sizes: (seeds, cases per table and read path). Default: 2 writers x 1 seed x 2 paths
# x 20 = 80 cases; full: 2 x 3 x 2 x 100 = 1,200.
DEFAULT_SIZE = (range(1), 20)
FULL_SIZE = (range(3), 100)
N_ROWS = 1500
HUGE = 1 << 62  # driver_read_bytes that keeps every read on the driver
PUSHDOWN = "spark.sql.parquet.filterPushdown"
JSON_OPTIONS = {  # to_json keeps microseconds only with these
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
}
MAX_REPORTED = 8
MAX_ROWS_SHOWN = 5
PLANNING_THREADS = 4
# On Spark Connect the translation is the same whatever the read path, so the quick run
# covers each writer once and each read path once; --full runs every combination.
CONNECT_QUICK = {("pyarrow", "driver"), ("spark", "executor")}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """(writer, seed) pairs for the differential test; more seeds with --full."""
    if "writer_seed" in metafunc.fixturenames:
        seeds, _ = FULL_SIZE if full_run(metafunc.config) else DEFAULT_SIZE
        pairs = [(w, s) for w in ("pyarrow", "spark") for s in seeds]
        metafunc.parametrize("writer_seed", pairs, ids=[f"{w}-seed{s}" for w, s in pairs])


# --------------------------------------------------------------------------------------------
# The table: every Spark type the contract covers, with nulls and the awkward values
# --------------------------------------------------------------------------------------------

EPOCH = dt.datetime(1970, 1, 1)
US_PER_DAY = 86_400_000_000
MIN_US, MAX_US = -2_208_988_800_000_000, 7_258_118_400_000_000  # 1900 .. 2200
STRINGS = [
    "",
    " ",
    "a",
    "A",
    "ab",
    "abc",
    "apple",
    "applesauce",
    "banana",
    "O'Brien",
    "a\\b",
    "é",
    "e\u0301",
    "straße",
    "日本",
    "日本語",
    "🎉",
    "x" * 64,
    "x" * 70 + "a",
    "pre",
    "prefix",
    "prefab",
    "pref",
]
BINARIES = [b"", b"\x00", b"\x00\x01", b"\x7f", b"\x80", b"\xff", b"\xff\xfe", b"ab", b"abc"]
FLOAT_SPECIALS = [math.nan, -0.0, 0.0, math.inf, -math.inf, 1.0, -1.0, 0.5, -2.5]
DECIMALS = {"d9": (9, 2), "d18": (18, 4), "d38": (38, 10)}
SORTED = frozenset({"id", "i32", "f64", "s", "dt", "ts"})  # narrow page statistics
RUNS = frozenset({"i8", "f32", "d9", "bin", "b", "ntz"})  # values repeated in runs


def _decimal_domain(rng: np.random.Generator, precision: int, scale: int) -> list[Decimal]:
    top = 10**precision - 1
    unscaled = {int(v) for v in rng.integers(-5000, 5000, 25)}
    unscaled.update({0, top, -top, top // 3})
    exact = Context(prec=60)  # the default context rounds to 28 digits
    return sorted(Decimal(u).scaleb(-scale, exact) for u in unscaled)


def _domains(rng: np.random.Generator) -> dict[str, tuple[pa.DataType, list[Any]]]:
    """Each column's type and distinct non-null values (dates as days, timestamps as us)."""

    def ints(low: int, high: int) -> list[int]:
        """Small values (so they repeat) and the type's extremes."""
        return sorted({int(v) for v in rng.integers(-50, 51, 25)} | {low, high})

    def floats(f32: bool) -> list[float]:
        values = FLOAT_SPECIALS + [round(float(v), 2) for v in rng.normal(0, 50, 20)]
        if f32:
            return [float(np.float32(v)) for v in values]
        return [*values, 1.7976931348623157e308, 5e-324]

    days = sorted({int(v) for v in rng.integers(MIN_US // US_PER_DAY, MAX_US // US_PER_DAY, 30)})
    instants = {int(v) for v in rng.integers(MIN_US, MAX_US, 30)}
    instants |= {int(v) * US_PER_DAY for v in rng.integers(18000, 18010, 4)}  # midnights
    instants |= {-1, 0, 1}
    domains: dict[str, tuple[pa.DataType, list[Any]]] = {
        "i8": (pa.int8(), ints(-128, 127)),
        "i16": (pa.int16(), ints(-(2**15), 2**15 - 1)),
        "i32": (pa.int32(), ints(-(2**31), 2**31 - 1)),
        "i64": (pa.int64(), ints(-(2**63), 2**63 - 1)),
        "f32": (pa.float32(), floats(True)),
        "f64": (pa.float64(), floats(False)),
    }
    for name, (p, s) in DECIMALS.items():
        domains[name] = (pa.decimal128(p, s), _decimal_domain(rng, p, s))
    domains["s"] = (pa.string(), STRINGS)
    domains["bin"] = (pa.binary(), BINARIES)
    domains["b"] = (pa.bool_(), [False, True])
    domains["dt"] = (pa.date32(), [*days, 0, -1, 10957])
    domains["ts"] = (pa.timestamp("us", "UTC"), sorted(instants))
    domains["ntz"] = (pa.timestamp("us"), sorted(instants))
    return domains


def _column_values(rng: np.random.Generator, name: str, domain: list[Any], n: int) -> list[Any]:
    """``n`` values from ``domain``: sorted, in runs or uniform, with 10-25% nulls."""
    if name in RUNS:
        values: list[Any] = []
        while len(values) < n:
            values += [domain[int(rng.integers(0, len(domain)))]] * int(rng.integers(1, 60))
        values = values[:n]
    else:
        values = [domain[int(i)] for i in rng.integers(0, len(domain), n)]
    if name in SORTED:
        nan = [v for v in values if isinstance(v, float) and math.isnan(v)]
        rest = sorted(v for v in values if not (isinstance(v, float) and math.isnan(v)))
        slots = set(rng.choice(n, len(nan), replace=False).tolist()) if nan else set()
        it = iter(rest)
        values = [math.nan if i in slots else next(it) for i in range(n)]
    nulls = rng.random(n) < rng.uniform(0.1, 0.25)
    return [None if null else v for v, null in zip(values, nulls, strict=True)]


def make_table(seed: int, n: int = N_ROWS) -> pa.Table:
    """The seeded table of the differential test: ``id`` numbers the rows."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, pa.Array] = {"id": pa.array(np.arange(n), pa.int64())}
    for name, (type_, domain) in _domains(rng).items():
        values = _column_values(rng, name, domain, n)
        if pa.types.is_date32(type_):
            arrays[name] = pa.array(values, pa.int32()).cast(type_)
        elif pa.types.is_timestamp(type_):
            arrays[name] = pa.array(values, pa.int64()).cast(type_)
        else:
            arrays[name] = pa.array(values, type_)
    a = _column_values(rng, "st.a", list(range(-5, 20)), n)
    b = _column_values(rng, "st.b", STRINGS, n)
    arrays["st"] = pa.StructArray.from_arrays(
        [pa.array(a, pa.int32()), pa.array(b, pa.string())],
        names=["a", "b"],
        mask=pa.array(rng.random(n) < 0.1),
    )
    return pa.table(arrays)


SPARK_WRITE_OPTIONS = {  # parquet-mr: row groups of ~16 KB, pages of at most 64 rows
    "parquet.block.size": "16384",
    "parquet.block.size.row.check.min": "50",
    "parquet.block.size.row.check.max": "200",
    "parquet.page.size": "1024",
    "parquet.page.size.row.check.min": "16",
    "parquet.page.row.count.limit": "64",
    "parquet.bloom.filter.enabled#i64": "true",
    "parquet.bloom.filter.enabled#s": "true",
}


def write_table(writer: str, table: pa.Table, out_dir: Path, spark: Any) -> str:
    """The table as one pyarrow file (row groups of 300 rows, pages of at most 40 rows, a
    page index) or as a Spark-written directory of two part files in ``id`` order (so the
    sorted columns stay sorted and statistics prune), with Spark's default timestamp
    encoding."""
    if writer == "spark":
        # Naive Arrow timestamps become TIMESTAMP_NTZ, UTC ones Spark's TIMESTAMP.
        with spark_confs(spark, {"spark.sql.timestampType": "TIMESTAMP_NTZ"}):
            frame = spark.createDataFrame(table)
        ordered = frame.repartitionByRange(2, "id").sortWithinPartitions("id")
        ordered.write.options(**SPARK_WRITE_OPTIONS).parquet(str(out_dir))
        return str(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = str(out_dir / "data.parquet")
    pq.write_table(
        table,
        path,
        row_group_size=300,
        data_page_size=512,
        write_batch_size=40,
        max_rows_per_page=40,
        write_page_index=True,
        compression="zstd",
    )
    return path


# --------------------------------------------------------------------------------------------
# Spark SQL predicates drawn from the data
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Col:
    """A column a predicate may use: its Spark SQL spelling, top-level column, kind, and
    distinct non-null values (as ``to_pylist`` gives them)."""

    sql: str
    top: str
    kind: str
    values: tuple[Any, ...]


def _kind(type_: pa.DataType) -> str:
    if pa.types.is_timestamp(type_):
        return "ts" if type_.tz else "ntz"
    if pa.types.is_floating(type_):
        return "f32" if type_ == pa.float32() else "f64"
    for check, kind in (
        (pa.types.is_boolean, "bool"),
        (pa.types.is_integer, "int"),
        (pa.types.is_decimal, "decimal"),
        (pa.types.is_string, "string"),
        (pa.types.is_binary, "binary"),
        (pa.types.is_date32, "date"),
    ):
        if check(type_):
            return kind
    raise AssertionError(f"no predicate kind for {type_}")


def predicate_columns(table: pa.Table) -> list[Col]:
    cols = []
    for f in table.schema:
        if f.name == "id":
            continue
        if pa.types.is_struct(f.type):
            struct = table.column(f.name).combine_chunks()
            for i, child in enumerate(f.type):
                values = struct.field(i).drop_null().unique().to_pylist()
                cols.append(Col(f"{f.name}.{child.name}", f.name, _kind(child.type), tuple(values)))
            continue
        values = table.column(f.name).drop_null().unique().to_pylist()
        cols.append(Col(f.name, f.name, _kind(f.type), tuple(values)))
    return cols


def spark_string(text: str) -> str:
    """A Spark SQL string literal (backslash escapes, as Spark's parser reads them)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def like_escape(text: str) -> str:
    """``text`` as a LIKE pattern that matches it literally (``\\`` is LIKE's escape)."""
    return "".join("\\" + c if c in "\\%_" else c for c in text)


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def _timestamp_text(micros: int) -> str:
    return (EPOCH + dt.timedelta(microseconds=micros)).strftime("%Y-%m-%d %H:%M:%S.%f")


def _micros(value: dt.datetime) -> int:
    naive = value.replace(tzinfo=None) if value.tzinfo else value
    return (naive - EPOCH) // dt.timedelta(microseconds=1)


class Literals:
    """Literals for a column: present values (mostly), neighbours, and edge values."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def __call__(self, col: Col) -> str:
        v = self.rng.choice(col.values) if col.values else None
        return str(getattr(self, f"_{col.kind}")(v, self.rng.random()))

    def _int(self, v: int, roll: float) -> str:
        if roll < 0.15:
            v += self.rng.choice((-1, 1))
        elif roll < 0.22:
            v = self.rng.choice([-(2**63), 2**63 - 1, 2**31, 300, -129, 0])
        elif roll < 0.27:
            return f"{v}.5"  # a decimal literal against an integer column
        return str(v)

    def _float(self, v: float, roll: float, type_name: str, f32: bool) -> str:
        if roll < 0.12 and math.isfinite(v):
            v = float(np.nextafter(np.float32(v), np.float32(math.inf))) if f32 else v + 0.25
        elif roll < 0.3:
            v = self.rng.choice([math.nan, math.inf, -math.inf, -0.0, 0.0, 1e300])
            if f32 and abs(v) > 3e38 and math.isfinite(v):
                v = 3.4028234663852886e38
        if self.rng.random() < 0.2 and math.isfinite(v) and v == round(v, 2) and abs(v) < 1e6:
            return format(Decimal(repr(v)), "f")  # a decimal literal: Spark compares as DOUBLE
        return f"CAST('{_float_text(v)}' AS {type_name})"

    def _f32(self, v: float, roll: float) -> str:
        return self._float(v, roll, "FLOAT", True)

    def _f64(self, v: float, roll: float) -> str:
        return self._float(v, roll, "DOUBLE", False)

    def _decimal(self, v: Decimal, roll: float) -> str:
        step = Decimal(1).scaleb(int(v.as_tuple().exponent))
        if roll < 0.15:
            v += step * self.rng.choice((-1, 1))
        elif roll < 0.25:
            v += step / 2  # one more digit of scale than the column has
        text = format(v, "f")
        return text + "BD" if self.rng.random() < 0.2 else text

    def _string(self, v: str, roll: float) -> str:
        if roll < 0.15:
            v = self.rng.choice([v + "a", v[:-1], v + " "])
        elif roll < 0.22:
            v = self.rng.choice(["", "zzz", "日", "x" * 64, "\U0001f600"])
        return spark_string(v)

    def _binary(self, v: bytes, roll: float) -> str:
        if roll < 0.2:
            v = self.rng.choice([v + b"\x00", v[:-1], b"\xff\xff\xff"])
        return f"X'{v.hex().upper()}'"

    def _bool(self, v: bool, roll: float) -> str:
        return "true" if v else "false"

    def _date(self, v: dt.date, roll: float) -> str:
        if roll < 0.2:
            v += dt.timedelta(days=self.rng.choice((-1, 1)))
        return f"DATE '{v.isoformat()}'"

    def _ts(self, v: dt.datetime, roll: float) -> str:
        micros = _micros(v)
        if roll < 0.1:
            return f"DATE '{(EPOCH + dt.timedelta(microseconds=micros)).date().isoformat()}'"
        if roll < 0.25:
            micros += self.rng.choice((-1, 1, US_PER_DAY))
        return f"TIMESTAMP '{_timestamp_text(micros)}'"

    def _ntz(self, v: dt.datetime, roll: float) -> str:
        micros = _micros(v)
        if roll < 0.2:
            micros += self.rng.choice((-1, 1, -US_PER_DAY))
        return f"TIMESTAMP_NTZ '{_timestamp_text(micros)}'"


@dataclass(frozen=True)
class Predicate:
    sql: str
    columns: frozenset[str]  # top-level columns it reads


class PredicateGenerator:
    """Random Spark SQL conditions: comparisons (including ``<=>``), BETWEEN, [NOT] IN,
    IS [NOT] NULL, LIKE prefixes, booleans, expressions Spark cannot push, and AND/OR/NOT
    up to depth 3."""

    def __init__(self, table: pa.Table, seed: int) -> None:
        self.rng = random.Random(seed)
        self.columns = predicate_columns(table)
        self.by_name = {c.sql: c for c in self.columns}
        self.literal = Literals(self.rng)

    def generate(self) -> Predicate:
        sql, columns = self._expr(self.rng.randint(0, 3))
        return Predicate(sql, frozenset(columns))

    def _expr(self, depth: int) -> tuple[str, set[str]]:
        if depth == 0 or self.rng.random() < 0.25:
            return self._atom()
        op = self.rng.choices(["AND", "OR", "NOT"], [40, 40, 20])[0]
        if op == "NOT":
            sql, cols = self._expr(depth - 1)
            return f"NOT ({sql})", cols
        parts = [self._expr(depth - 1) for _ in range(self.rng.randint(2, 3))]
        return f" {op} ".join(f"({s})" for s, _ in parts), set().union(*(c for _, c in parts))

    def _atom(self) -> tuple[str, set[str]]:
        if self.rng.random() < 0.1:
            return self._unpushable()
        col = self.rng.choice(self.columns)
        lit = self.literal
        if col.kind == "bool":
            form = self.rng.choice([col.sql, f"NOT {col.sql}", f"{col.sql} = {lit(col)}"])
            return self._maybe_null_test(col, form), {col.top}
        form = self.rng.choices(["cmp", "between", "in", "like"], [55, 15, 18, 12])[0]
        if form == "cmp":
            op = self.rng.choice(["=", "!=", "<>", "<", "<=", ">", ">=", "<=>"])
            sql = f"{col.sql} {op} {lit(col)}"
        elif form == "between":
            low, high = sorted([lit(col), lit(col)])  # text order: some ranges are empty
            sql = f"{col.sql} BETWEEN {low} AND {high}"
        elif form == "in":
            items = [lit(col) for _ in range(self.rng.randint(1, 4))]
            if self.rng.random() < 0.1:
                items.append("NULL")
            sql = f"{col.sql} {self.rng.choice(['IN', 'NOT IN'])} ({', '.join(items)})"
        elif col.kind == "string":
            # Prefixes, suffixes, substrings (pushed as Spark's string filters) and other
            # patterns (pushed as the AND of their pieces), some negated.
            value = self.rng.choice(col.values) if col.values else ""
            a = self.rng.randint(0, len(value))
            piece = like_escape(value[a : self.rng.randint(a, len(value))])
            other = like_escape(value[: self.rng.randint(0, len(value))])
            shape = self.rng.choice(["p%", "p%", "%p", "%p%", "p%q", "%p_q%"])
            pattern = shape.replace("p", "\x00").replace("q", other).replace("\x00", piece)
            not_ = "NOT " if self.rng.random() < 0.2 else ""
            sql = f"{col.sql} {not_}LIKE {spark_string(pattern)}"
        else:
            sql = f"{col.sql} = {lit(col)}"
        return self._maybe_null_test(col, sql), {col.top}

    def _maybe_null_test(self, col: Col, sql: str) -> str:
        if self.rng.random() < 0.12:
            return f"{col.sql} IS {self.rng.choice(['', 'NOT '])}NULL"
        return sql

    def _unpushable(self) -> tuple[str, set[str]]:
        """Conditions Spark does not push to the Parquet scan: pqindex must leave them to
        Spark (and still prune with whatever else is pushed)."""
        rng, cols = self.rng, self.by_name
        s = rng.choice(cols["s"].values)
        forms: list[tuple[Callable[[], str], set[str]]] = [
            (lambda: f"i16 + 1 = {rng.choice(cols['i16'].values) + 1}", {"i16"}),
            (lambda: f"upper(s) = {spark_string(s.upper())}", {"s"}),
            (lambda: f"length(s) > {rng.randint(0, 5)}", {"s"}),
            (lambda: f"abs(f64) > {rng.choice([0.5, 1, 10])}", {"f64"}),
            (lambda: f"coalesce(i8, 0) = {rng.choice(cols['i8'].values)}", {"i8"}),
            (lambda: f"st.a * 2 = {2 * rng.choice(cols['st.a'].values)}", {"st"}),
            (lambda: f"s LIKE {spark_string('%' + like_escape(s[-1:]))}", {"s"}),
            (lambda: f"hour(ts) = {rng.randint(0, 3)}", {"ts"}),
            (lambda: f"i32 % 3 = {rng.randint(-2, 2)}", {"i32"}),
        ]
        make, columns = rng.choice(forms)
        return make(), columns


# --------------------------------------------------------------------------------------------
# Comparing with the referee
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def spark_confs(spark: Any, settings: dict[str, str]) -> Iterator[None]:
    """SQL confs set for the block, restored afterwards."""
    previous = {name: spark.conf.get(name) for name in settings}
    for name, value in settings.items():
        spark.conf.set(name, value)
    try:
        yield
    finally:
        for name, value in previous.items():
            spark.conf.set(name, value)


def refereeing(spark: Any) -> contextlib.AbstractContextManager[None]:
    """Where the referee's queries run: no Parquet filter pushdown (see the module
    docstring), and interpreted expressions, because every case has a new condition and
    compiling each one costs more than evaluating it over a few thousand rows."""
    return spark_confs(
        spark,
        {
            PUSHDOWN: "false",
            "spark.sql.codegen.wholeStage": "false",
            "spark.sql.codegen.factoryMode": "NO_CODEGEN",
        },
    )


def referee(base: Any, where: Any, columns: Sequence[str] | None = None) -> Any:
    """Spark's own answer over ``base = spark.read.parquet(source)``; run it inside
    ``refereeing(spark)``."""
    df = base.where(where)
    return df.select(*columns) if columns is not None else df


def as_rows(df: Any, case: int) -> Any:
    """``(case, row)`` with the row as JSON text: comparable whatever the projection."""
    from pyspark.sql import functions as F

    row = F.to_json(F.struct(*[df[c] for c in df.columns]), JSON_OPTIONS)
    return df.select(F.lit(case).alias("case"), row.alias("row"))


def type_names(schema: Any) -> list[tuple[str, str]]:
    """Column names and Spark types (nullability aside: Spark's own reader says nullable)."""
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


@dataclass(frozen=True)
class Case:
    """One comparison: a condition and a projection, with read options."""

    index: int
    predicate: Predicate
    columns: list[str] | None
    batch_size: int
    partitions: int | None

    def describe(self, source: str, path: str) -> str:
        limit = "HUGE" if path == "driver" else "0"
        return (
            f"case {self.index}: pqindex.spark.read(spark, {source!r}, "
            f"where={self.predicate.sql!r}, columns={self.columns!r}, "
            f"batch_size={self.batch_size}, partitions={self.partitions}, "
            f"driver_read_bytes={limit})"
        )


def make_cases(table: pa.Table, seed: int, count: int) -> list[Case]:
    """Half the cases project columns, most of those leaving out every predicate column
    (pqindex must then read columns for Spark's filter that the caller did not ask for)."""
    generator = PredicateGenerator(table, seed)
    rng = random.Random(seed * 7919 + 1)
    names = table.column_names
    cases = []
    for index in range(count):
        predicate = generator.generate()
        roll = rng.random()
        rest = [n for n in names if n not in predicate.columns]
        if roll < 0.5 or not rest:
            columns = None
        elif roll < 0.65:
            columns = rng.sample(names, rng.randint(1, 5))
        else:
            columns = rng.sample(rest, rng.randint(1, min(4, len(rest))))
        cases.append(
            Case(
                index,
                predicate,
                columns,
                batch_size=rng.choice([65536, 65536, 100, 7]),
                partitions=rng.choice([None, 1, 2]),
            )
        )
    return cases


@dataclass
class Prepared:
    """One case's DataFrames (built, not run) and what planning already got wrong."""

    case: Case
    ref: Any  # Spark's DataFrame for the case: its schema is the expected one
    got: Any = None
    scan: Any = None
    problems: list[str] = field(default_factory=list)


def prepare(spark: Any, source: str, base: Any, case: Case, path: str) -> Prepared:
    """Plans the case on the requested path and compares the schemas."""
    import pqindex.spark as pqs

    where = case.predicate.sql
    prepared = Prepared(case, referee(base, where, case.columns))
    try:
        scan = pqs.plan(
            spark,
            source,
            where,
            case.columns,
            batch_size=case.batch_size,
            driver_read_bytes=HUGE if path == "driver" else 0,
            partitions=case.partitions,
        )
        prepared.scan = scan
        prepared.got = scan.to_df()
    except Exception as error:  # any error is a finding: Spark accepts the condition
        prepared.problems.append(f"planning raised {type(error).__name__}: {error}")
        return prepared
    if scan.on_driver != (path == "driver"):
        prepared.problems.append(f"on_driver={scan.on_driver} on the {path} path")
    want, got = type_names(prepared.ref.schema), type_names(prepared.got.schema)
    if want != got:
        prepared.problems.append(f"schema: Spark {want}, pqindex {got}")
    return prepared


def collect_rows(parts: Sequence[Any], cases: Iterable[int]) -> dict[int, Counter[str]]:
    """The ``(case, row)`` rows of all ``parts``, in one Spark job, as a multiset per case."""
    rows: dict[int, Counter[str]] = {case: Counter() for case in cases}
    for r in reduce(lambda a, b: a.unionAll(b), parts).collect():
        rows[r["case"]][r["row"]] += 1
    return rows


def collect_by_case(frames: Sequence[tuple[int, Any]]) -> dict[int, Counter[str]]:
    """Every frame's JSON rows, in one Spark job."""
    return collect_rows([as_rows(df, case) for case, df in frames], [c for c, _ in frames])


def referee_rows(base: Any, cases: Sequence[Case]) -> Any:
    """Spark's answer to every case, ``(case, row)``, from one scan of ``base``: each row
    carries the projections of the cases whose condition is TRUE for it, which is what
    ``base.where(condition).select(columns)`` keeps, without one scan per case."""
    from pyspark.sql import functions as F

    kept = []
    for case in cases:
        columns = case.columns if case.columns is not None else base.columns
        row = F.to_json(F.struct(*[base[c] for c in columns]), JSON_OPTIONS)
        entry = F.struct(F.lit(case.index).alias("case"), row.alias("row"))
        kept.append(F.when(F.expr(case.predicate.sql), entry))
    exploded = base.select(F.explode(F.array(*kept)).alias("kept"))
    return exploded.where("kept IS NOT NULL").select("kept.case", "kept.row")


def row_differences(want: Counter[str], got: Counter[str]) -> list[str]:
    lines = [f"Spark returned {want.total()} rows, pqindex {got.total()}"]
    for label, rows in (("missing from pqindex", want - got), ("extra in pqindex", got - want)):
        if rows:
            lines.append(f"{label} ({rows.total()} rows), first ones:")
            lines += [f"  {row[:400]}" for row in sorted(rows.elements())[:MAX_ROWS_SHOWN]]
    return lines


@dataclass
class Outcome:
    """What a batch of cases found: failure reports, Spark's row count per case, and how
    many plans pruned something (row groups or pages)."""

    reports: list[str] = field(default_factory=list)
    rows: dict[int, int] = field(default_factory=dict)
    pruning: int = 0


def run_cases(spark: Any, source: str, cases: Sequence[Case], path: str) -> Outcome:
    """Runs the cases on one read path and compares each with Spark.

    Planning runs in a few threads (it is mostly waiting for the JVM); all rows come back in
    one job. If that job fails, the cases run one by one to find the ones that fail it.
    """
    base = spark.read.parquet(source)
    with ThreadPoolExecutor(PLANNING_THREADS) as pool:
        prepared = list(pool.map(lambda c: prepare(spark, source, base, c, path), cases))

    def collect(batch: Sequence[Prepared]) -> dict[int, Counter[str]]:
        """Spark's rows under ``case``, pqindex's under ``-1 - case``."""
        parts = [referee_rows(base, [p.case for p in batch])]
        parts += [as_rows(p.got, -1 - p.case.index) for p in batch if p.got is not None]
        keys = [p.case.index for p in batch]
        keys += [-1 - p.case.index for p in batch if p.got is not None]
        with refereeing(spark):
            return collect_rows(parts, keys)

    try:
        rows = collect(prepared)
    except Exception:
        rows = {}
        for p in prepared:
            try:
                rows.update(collect([p]))
            except Exception as error:
                p.problems.append(f"the job raised: {str(error)[:2000]}")
    outcome = Outcome()
    for p in prepared:
        want, got = rows.get(p.case.index), rows.get(-1 - p.case.index)
        if want is not None:
            outcome.rows[p.case.index] = want.total()
        if want is not None and got is not None:
            if want != got:
                p.problems += row_differences(want, got)
            m = p.scan.metrics()
            if m["rows_matched"] < want.total():  # pqindex's predicate may only widen Spark's
                p.problems.append(f"metrics: rows_matched={m['rows_matched']} < {want.total()}")
            outcome.pruning += m["row_groups_pruned_by_stats"] + m["pages_pruned"] > 0
        if p.problems:
            pushed = p.scan.predicate if p.scan is not None else "(not planned)"
            lines = [*p.problems, f"pushed to pqindex: {pushed}"]
            report = [p.case.describe(source, path), *("  " + x for x in lines)]
            outcome.reports.append("\n".join(report))
    return outcome


def assert_no_reports(reports: list[str], total: int, label: str) -> None:
    if reports:
        shown = "\n\n".join(reports[:MAX_REPORTED])
        pytest.fail(
            f"{len(reports)} of {total} cases disagree with Spark ({label}):\n\n{shown}",
            pytrace=False,
        )


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def written(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, int], Any]:
    """``written(writer, seed)``: the seeded table and its Parquet source, written once per
    module (both read paths use the same files)."""
    cache: dict[tuple[str, int], tuple[pa.Table, str]] = {}

    def get(writer: str, seed: int) -> tuple[pa.Table, str]:
        if (writer, seed) not in cache:
            table = make_table(seed)
            out = tmp_path_factory.mktemp(f"{writer}-seed{seed}") / "data"
            cache[writer, seed] = (table, write_table(writer, table, out, spark))
        return cache[writer, seed]

    return get


@pytest.mark.parametrize(
    "path",
    [
        "driver",
        "executor",
    ],
)
def test_read_matches_spark(
    writer_seed: tuple[str, int], path: str, written: Any, spark: Any, full: bool
) -> None:
    """The differential test: random conditions over every type, with and without
    projections, on one read path, against Spark's own reader."""
    from pqindex.spark._session import is_connect

    writer, seed = writer_seed
    if not full and is_connect(spark) and (writer, path) not in CONNECT_QUICK:
        pytest.skip("the quick run checks Spark Connect on one read path per writer")
    table, source = written(writer, seed)
    count = (FULL_SIZE if full else DEFAULT_SIZE)[1]
    cases = make_cases(table, seed * 2 + (path == "driver"), count)
    outcome = run_cases(spark, source, cases, path)
    assert_no_reports(outcome.reports, len(cases), f"writer={writer} seed={seed} path={path}")
    # The comparison means something only if the cases select varied amounts of rows and
    # pruning decided something.
    some = sum(1 for n in outcome.rows.values() if 0 < n < table.num_rows)
    assert some >= len(cases) // 3, f"only {some} of {len(cases)} cases select some rows"
    assert outcome.pruning >= len(cases) // 10, f"only {outcome.pruning} plans pruned anything"


def test_spark_pushdown_drops_nan_rows(spark: Any, data_dir: Path) -> None:
    """Why the referee turns ``spark.sql.parquet.filterPushdown`` off: with it on, parquet-mr
    prunes row groups whose float statistics (which leave NaN out) exclude the literal, so
    Spark drops NaN rows that its SQL semantics keep (NaN = NaN, NaN above +inf). pqindex
    returns them; Spark without pushdown agrees."""
    import pqindex.spark as pqs

    path = str(data_dir / "nan.parquet")
    values = [1.0, math.nan, 2.0, 3.0, 4.0, 5.0, math.nan, 6.0]
    table = pa.table({"id": pa.array(range(8), pa.int64()), "f": pa.array(values)})
    pq.write_table(table, path, row_group_size=4)
    nan_rows = Counter({'{"id":1}': 1, '{"id":6}': 1})
    wheres = ["f = CAST('NaN' AS DOUBLE)", "f > 10.0"]
    got = collect_by_case(
        [
            (2 * i + j, pqs.read(spark, path, where, ["id"], driver_read_bytes=limit))
            for i, where in enumerate(wheres)
            for j, limit in enumerate((HUGE, 0))
        ]
    )
    base = spark.read.parquet(path)
    with refereeing(spark):
        want = collect_by_case([(i, referee(base, w, ["id"])) for i, w in enumerate(wheres)])
    with spark_confs(spark, {PUSHDOWN: "true"}):
        pushed = collect_by_case([(i, referee(base, w, ["id"])) for i, w in enumerate(wheres)])
    for i, where in enumerate(wheres):
        assert got[2 * i] == got[2 * i + 1] == want[i] == nan_rows, (where, got, want)
        assert pushed[i].total() < nan_rows.total(), (
            f"Spark with filter pushdown now returns the NaN rows for {where!r}: the referee "
            "may not need pushdown off any more"
        )


def write_sorted(path: Path, n: int = 100_000) -> pa.Table:
    """``k`` sorted and unique, a string payload; row groups of 20,000 rows, pages of at
    most 500 rows, plain encoding (so reading a page needs no dictionary page)."""
    table = pa.table(
        {
            "k": pa.array(np.arange(n), pa.int64()),
            "payload": pa.array([f"payload-{i:07d}" for i in range(n)]),
        }
    )
    pq.write_table(
        table,
        str(path),
        row_group_size=20_000,
        max_rows_per_page=500,
        write_batch_size=500,
        data_page_size=1 << 20,
        use_dictionary=False,
        write_page_index=True,
    )
    return table


def test_executor_path_reads_only_matching_pages(spark: Any, data_dir: Path) -> None:
    """An equality on a sorted column, read in executors, fetches a page or two per column
    instead of the file, and the pushed predicate carries the equality."""
    import pqindex.spark as pqs

    path = data_dir / "sorted.parquet"
    write_sorted(path, 200_000)
    scan = pqs.plan(spark, str(path), "k = 54321", driver_read_bytes=0)
    # As written (``k = 54321``) where Spark confirms pqindex reads it alike, else the
    # structured predicate of Spark's filters.
    pushed = scan.predicate
    assert pushed == "k = 54321" or '{"lit": 54321}' in json.dumps(pushed), pushed
    assert not scan.on_driver
    rows = [r.asDict() for r in scan.to_df().collect()]
    assert rows == [{"k": 54321, "payload": "payload-0054321"}]
    m = scan.metrics()
    size = os.path.getsize(path)
    assert 0 < m["executor_bytes_read"] < size / 10, (size, m)
    # Executors fetch the selected pages plus at most the metadata planning read.
    planning_bytes = m["bytes_read"] - m["executor_bytes_read"]
    assert m["executor_bytes_read"] <= planning_bytes + m["selected_bytes"], m
    assert 1 <= m["pages_read"] <= 4, m  # one page of each column, not 400
    assert m["rows_matched"] == 1, m
    assert m["row_groups_pruned_by_stats"] == m["row_groups"] - 1 == 9, m
    assert scan.executor_metrics()["bytes_read"] == m["executor_bytes_read"]
    assert "54321" in scan.explain()


def test_limit_reads_few_rows_in_executors(spark: Any, data_dir: Path) -> None:
    """``limit=`` gives that many of Spark's rows; executors stop reading once they have
    them when pqindex's rows need no filtering by Spark."""
    import pqindex.spark as pqs

    path = data_dir / "sorted_limit.parquet"
    write_sorted(path, 200_000)
    scan = pqs.plan(spark, str(path), "k >= 1000", limit=7, driver_read_bytes=0)
    rows = scan.to_df().collect()
    assert len(rows) == 7 and all(r["k"] >= 1000 for r in rows)
    m = scan.metrics()
    if scan.read_by == "executors" and scan.exact:
        assert m["executor_bytes_read"] < os.path.getsize(path) / 10, m
    # A condition Spark filters again (not exact for pqindex) still gives exactly 7 rows.
    rows = pqs.read(spark, str(path), "k % 1000 = 3", limit=7).collect()
    assert len(rows) == 7 and all(r["k"] % 1000 == 3 for r in rows)
    with pytest.raises(pqindex.InvalidArgumentError):
        pqs.read(spark, str(path), limit=-1)


def test_order_by_with_limit_gives_sparks_first_rows(spark: Any, data_dir: Path) -> None:
    import pqindex.spark as pqs
    from pyspark.sql import functions as F

    path = data_dir / "sorted_top.parquet"
    write_sorted(path, 200_000)
    base = spark.read.parquet(str(path))
    for where, order, spark_order, k in [
        ("k >= 1000", "k desc", [F.col("k").desc_nulls_last()], 5),
        (None, [("k", "asc")], [F.col("k").asc_nulls_last()], 3),
        ("k % 7 = 3", [("payload", "desc")], [F.col("payload").desc_nulls_last()], 4),
    ]:
        want_df = base if where is None else base.where(where)
        want = [r["k"] for r in want_df.orderBy(*spark_order).limit(k).collect()]
        for driver_read_bytes in (1 << 30, 0):
            got = pqs.read(
                spark,
                str(path),
                where,
                order_by=order,
                limit=k,
                driver_read_bytes=driver_read_bytes,
            ).collect()
            assert [r["k"] for r in got] == want, (where, order, driver_read_bytes)
    with pytest.raises(pqindex.InvalidArgumentError, match="needs a limit"):
        pqs.read(spark, str(path), order_by="k desc")


def test_driver_read_bytes_decides_the_path(spark: Any, data_dir: Path) -> None:
    """Plans estimated below ``driver_read_bytes`` read on the driver, others in executors;
    the default threshold is ``DRIVER_READ_BYTES``."""
    import pqindex.spark as pqs

    path = str(data_dir / "sorted.parquet")
    write_sorted(Path(path), 20_000)
    where = "k BETWEEN 1000 AND 9000"
    selected = pqs.plan(spark, path, where).selected_bytes
    assert selected > 0
    assert not pqs.plan(spark, path, where, driver_read_bytes=selected).on_driver
    assert pqs.plan(spark, path, where, driver_read_bytes=selected + 1).on_driver
    assert pqs.plan(spark, path, where).on_driver == (selected < pqs.DRIVER_READ_BYTES)


def test_many_rows_leave_the_driver(spark: Any, data_dir: Path) -> None:
    """A driver read stops once its rows take more than ``driver_result_bytes``. Many rows
    pruned only as Spark's own Parquet reader prunes (statistics, the page index) go to that
    reader, or to executors with ``spark_reader=False``; few rows stay on the driver; a read
    with no condition is known to be large before reading. Rows are Spark's everywhere."""
    import pqindex.spark as pqs

    path = str(data_dir / "placement.parquet")
    write_sorted(Path(path), 100_000)
    referee = spark.read.parquet(path)
    small = {"driver_result_bytes": 64 * 1024}
    cases: list[tuple[str | None, dict[str, Any], str]] = [
        ("k < 50", small, "driver"),
        ("k >= 10000", small, "spark"),
        ("k >= 10000", {**small, "spark_reader": False}, "executors"),
        (None, small, "spark"),
        (None, {**small, "spark_reader": False}, "executors"),
    ]
    for where, options, place in cases:
        scan = pqs.plan(spark, path, where, **options)
        # Every case selects less than DRIVER_READ_BYTES; the many rows are known before
        # reading, from the plan or the footers' statistics.
        assert scan.on_driver == (place == "driver")
        df = scan.to_df()
        assert scan.read_by == place, (where, options)
        said = {"driver": "on the driver", "spark": "by Spark's own", "executors": "in executors"}
        assert f"read {said[place]}" in scan.explain()
        want = referee if where is None else referee.where(where)
        got_keys = sorted(r.k for r in df.select("k").collect())
        assert got_keys == sorted(r.k for r in want.select("k").collect()), (where, options)
        assert scan.selected_bytes > 0


def test_a_read_handed_to_sparks_reader_gives_it_the_schema_pqindex_read(
    spark: Any, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark's own reader, taking a read over, is given the schema from pqindex's plan, so
    it does not infer it again; the rows and types are Spark's own."""
    import pqindex.spark as pqs

    path = str(data_dir / "handed.parquet")
    write_sorted(Path(path), 100_000)
    reader_class = type(spark.read)
    given: list[Any] = []
    real_schema = reader_class.schema

    def schema(self: Any, s: Any) -> Any:
        given.append(s)
        return real_schema(self, s)

    monkeypatch.setattr(reader_class, "schema", schema)
    scan = pqs.plan(spark, path, "k >= 10000", driver_result_bytes=64 * 1024)
    df = scan.to_df()
    assert scan.read_by == "spark"
    monkeypatch.undo()
    own = spark.read.parquet(path)
    assert given == [own.schema]
    assert df.schema == own.schema
    assert sorted(df.collect()) == sorted(own.where("k >= 10000").collect())


def test_reads_the_statistics_expect_to_be_large_never_start_on_the_driver(
    spark: Any, data_dir: Path
) -> None:
    """Rows the footers' statistics expect to pass ``driver_result_bytes`` (most of a
    sorted key's range) go straight to Spark's reader, or to executors: no driver read
    starts only to stop. Where the statistics cannot tell (a string equality), the driver
    tries."""
    import pqindex.spark as pqs

    path = str(data_dir / "expected.parquet")
    write_sorted(Path(path), 100_000)
    small = {"driver_result_bytes": 64 * 1024}
    wide = pqs.plan(spark, path, "k >= 10000", **small)
    # 90% of 100,000 rows of an int64 and a 15-character string.
    assert 90_000 * 8 < wide.expected_bytes < 90_000 * 40
    assert "read by Spark's own Parquet reader (many rows expected" in wide.explain()
    assert wide.to_df().count() == 90_000
    assert wide.read_by == "spark"
    assert wide.metrics()["rows_scanned"] == 0
    narrow = pqs.plan(spark, path, "k >= 10000", ["k"], **small)
    assert narrow.to_df().count() == 90_000 and narrow.read_by == "spark"
    assert wide.to_df().schema == spark.read.parquet(path).schema
    scan = pqs.plan(spark, path, "k >= 10000", spark_reader=False, **small)
    assert scan.to_df().count() == 90_000
    assert scan.read_by == "executors"
    assert scan._plan.metrics()["rows_scanned"] == 0  # nothing read on the driver
    needle = pqs.plan(spark, path, "payload = 'payload-0012345'", **small)
    assert needle.expected_bytes == 0
    assert [r.k for r in needle.to_df().collect()] == [12345]
    assert needle.read_by == "driver"
    # Many rows, but few of those read (2%, where no page can be skipped): pqindex's late
    # materialisation reads them, in executors, not Spark's reader.
    scattered = str(data_dir / "scattered.parquet")
    u = np.random.default_rng(7).permutation(100_000)
    pq.write_table(pa.table({"u": pa.array(u, pa.int64())}), scattered, row_group_size=20_000)
    scan = pqs.plan(spark, scattered, "u < 2000", driver_result_bytes=1000)
    assert scan.expected_bytes > 1000 and not scan.on_driver
    assert sorted(r.u for r in scan.to_df().collect()) == list(range(2000))
    assert scan.read_by == "executors"


def test_reads_pruned_by_embedded_indexes_stay_in_pqindex(spark: Any, data_dir: Path) -> None:
    """Many rows whose row groups an embedded index rules out (statistics cannot) are not
    handed to Spark's reader, which would read every row group: executors read them."""
    import pqindex.spark as pqs

    path = str(data_dir / "indexed-placement.parquet")
    n = 100_000
    rows = np.arange(n)
    # Row groups of 20,000 rows: the first half holds even parts, the second odd ones, each
    # spanning 0-999, so only the distinct index tells them apart.
    part = np.where(rows < n // 2, (rows * 2) % 1000, (rows * 2 + 1) % 1000)
    pq.write_table(
        pa.table({"id": pa.array(rows, pa.int64()), "part": pa.array(part, pa.int64())}),
        path,
        row_group_size=20_000,
    )
    pqindex.add_indexes(path, [pqindex.DistinctIndex("part")])
    where = "part IN (1, 3, 5, 7, 9)"
    scan = pqs.plan(spark, path, where, driver_result_bytes=1)
    df = scan.to_df()
    assert scan.metrics()["row_groups_pruned_by_index"] > 0
    assert scan.read_by == "executors"
    want = spark.read.parquet(path).where(where).select("id")
    assert sorted(r.id for r in df.select("id").collect()) == sorted(r.id for r in want.collect())


def test_only_conditions_read_alike_skip_sparks_filter(spark: Any, data_dir: Path) -> None:
    """Where Spark confirms pqindex reads the text as Spark does (where the schema comes
    from pqindex's own plan, on either kind of session), pqindex's filter is the exact one and Spark
    does not apply the condition again. A backslash in a string literal (an escape to
    Spark, a character to pqindex) and ``f > 0.1`` (DOUBLE in Spark, REAL in pqindex) are
    not read alike: they are translated from what Spark confirms, and Spark's filter
    stays. Rows are Spark's."""
    import pqindex.spark as pqs

    path = data_dir / "awkward.parquet"
    pq.write_table(
        pa.table(
            {
                "id": pa.array(range(400), pa.int64()),
                "s": [["a\\b", "a\\\\b", "ab"][i % 3] for i in range(400)],
                "f": pa.array([(i % 7) / 20 for i in range(400)], pa.float32()),
            }
        ),
        path,
    )
    referee = spark.read.parquet(str(path))
    cases = {"id = 7 OR id > 390": True, "s = 'a\\\\b'": False, "f > 0.1": False}
    for where, alike in cases.items():
        for limit in (HUGE, 0):
            plan = pqs.plan(spark, str(path), where, driver_read_bytes=limit)
            assert plan.exact == alike, where
            want = sorted(r.id for r in referee.where(where).select("id").collect())
            got = sorted(r.id for r in plan.to_df().select("id").collect())
            assert want and got == want, (where, limit)


def test_where_column_works_like_text(spark: Any, data_dir: Path) -> None:
    """A ``pyspark.sql.Column`` condition pushes the same predicate and returns the same
    rows as the SQL text, on both paths."""
    import pqindex.spark as pqs
    from pyspark.sql import functions as F

    path = str(data_dir / "sorted.parquet")
    write_sorted(Path(path), 20_000)
    conditions = [
        ("k = 5", F.col("k") == 5),
        (
            "k > 19990 AND payload LIKE 'payload-00199%'",
            (F.col("k") > 19990) & F.col("payload").startswith("payload-00199"),
        ),
    ]
    frames = []
    for i, (text, column) in enumerate(conditions):
        for j, limit in enumerate((HUGE, 0)):
            by_text = pqs.plan(spark, path, text, driver_read_bytes=limit)
            by_column = pqs.plan(spark, path, column, driver_read_bytes=limit)
            assert by_text.predicate is not None and by_column.predicate is not None
            frames += [(4 * i + 2 * j, by_text.to_df()), (4 * i + 2 * j + 1, by_column.to_df())]
    got = collect_by_case(frames)
    base = spark.read.parquet(path)
    with refereeing(spark):
        expected = collect_by_case([(i, referee(base, t)) for i, (t, _) in enumerate(conditions)])
    for case, rows in got.items():
        assert rows == expected[case // 4], (conditions[case // 4][0], case, rows)
    assert [expected[i].total() for i in range(len(conditions))] == [1, 9]


def test_hive_partitions_prune_files(spark: Any, data_dir: Path) -> None:
    """Spark's partition filters (int and string partition columns) prune whole files, and
    the rows, partition columns included, are Spark's."""
    import pqindex.spark as pqs

    n = 600
    table = pa.table(
        {
            "k": pa.array(range(n), pa.int64()),
            "p": pa.array([i % 3 for i in range(n)], pa.int32()),
            "q": pa.array(["a", "b", "c", "d"][i % 4] for i in range(n)),
            "v": pa.array([(i * 37 % 101) / 100 for i in range(n)]),
        }
    )
    out = str(data_dir / "hive")
    spark.createDataFrame(table).repartition(2).write.partitionBy("p", "q").parquet(out)
    cases: list[tuple[str, list[str] | None]] = [
        ("p = 1", None),
        ("q = 'b' AND k > 100", None),
        ("p IN (0, 2) AND q != 'a'", ["k", "v"]),
        ("p = 1 OR q = 'c'", None),
        ("q LIKE 'd%'", ["k"]),
        ("p = 2 AND v > 0.5", ["v", "q"]),
    ]
    base = spark.read.parquet(out)
    refs = [referee(base, where, columns) for where, columns in cases]
    frames, scans = [], []
    for i, (where, columns) in enumerate(cases):
        for j, limit in enumerate((HUGE, 0)):
            scan = pqs.plan(spark, out, where, columns, driver_read_bytes=limit)
            df = scan.to_df()
            assert type_names(df.schema) == type_names(refs[i].schema), where
            frames.append((2 * i + j, df))
            scans.append(scan)
    got = collect_by_case(frames)
    with refereeing(spark):
        want = collect_by_case(list(enumerate(refs)))
    for case, rows in got.items():
        where = cases[case // 2][0]
        assert rows == want[case // 2], (where, row_differences(want[case // 2], rows))
        assert want[case // 2].total() > 0, where
        m = scans[case].metrics()
        assert m["files_pruned"] > 0, (where, m)


@pytest.mark.parametrize(
    ("path", "how"), [("executor", "in place"), ("executor", "replaced"), ("driver", "in place")]
)
def test_file_rewritten_after_planning_fails(
    spark: Any, data_dir: Path, path: str, how: str
) -> None:
    """A file rewritten between ``plan()`` and the action fails the read with
    FileChangedError; the stale plan never returns rows."""
    import pqindex.spark as pqs

    file = data_dir / "changing.parquet"
    write_sorted(file, 20_000)
    scan = pqs.plan(spark, str(file), "k < 100", driver_read_bytes=HUGE if path == "driver" else 0)
    assert scan.on_driver == (path == "driver")
    if how == "replaced":
        write_sorted(data_dir / "new.parquet", 30_000)
        os.replace(data_dir / "new.parquet", file)
    else:
        write_sorted(file, 30_000)
    with pytest.raises(Exception) as info:
        scan.to_df().collect()
    message = str(info.value)
    assert "file changed since the scan was planned" in message, message[:3000]
    if path == "driver":
        assert isinstance(info.value, pqindex.FileChangedError)
    else:
        assert "FileChangedError" in message, message[:3000]


@pytest.mark.parametrize(
    ("path", "emptiness"),
    [
        ("driver", "pruned"),
        ("driver", "filtered"),
        ("executor", "pruned"),
        ("executor", "filtered"),
    ],
)
def test_empty_result_has_spark_schema(spark: Any, written: Any, path: str, emptiness: str) -> None:
    """No matching rows gives an empty DataFrame with Spark's schema, whether statistics
    rule out everything (no units) or the units hold no matching row."""
    import pqindex.spark as pqs

    _, source = written("pyarrow", 0)
    where = "id < 0" if emptiness == "pruned" else "id > 10 AND id < 11"
    scan = pqs.plan(spark, source, where, driver_read_bytes=HUGE if path == "driver" else 0)
    units = scan.metrics()["units"]
    assert (units == 0) == (emptiness == "pruned"), scan.metrics()
    df = scan.to_df()
    ref = referee(spark.read.parquet(source), where)
    assert type_names(df.schema) == type_names(ref.schema)
    assert df.collect() == []


def test_driver_path_keeps_timestamp_ntz(spark: Any, data_dir: Path) -> None:
    """A timestamp_ntz column read on the driver stays timestamp_ntz (as on the executors)."""
    import pqindex.spark as pqs

    path = str(data_dir / "ntz.parquet")
    ntz = pa.array([0, 86_400_000_000], pa.int64()).cast(pa.timestamp("us"))
    pq.write_table(pa.table({"k": pa.array([1, 2], pa.int64()), "ntz": ntz}), path)
    want = type_names(spark.read.parquet(path).schema)
    assert want == [("k", "bigint"), ("ntz", "timestamp_ntz")]
    assert type_names(pqs.read(spark, path, "k = 1", driver_read_bytes=0).schema) == want
    assert type_names(pqs.read(spark, path, "k = 1", driver_read_bytes=HUGE).schema) == want


# --- the executors' function and the units, outside Spark ---------------------------------------


class Recorder:
    """Stands in for the Spark accumulator: picklable, keeps what ``add`` was given."""

    def __init__(self) -> None:
        self.added: list[dict[str, int]] = []

    def add(self, value: dict[str, int]) -> None:
        self.added.append(value)


def ipc_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def write_units_fixture(data_dir: Path) -> str:
    """Five row groups of 200 rows with an int, a string and a UTC timestamp."""
    n = 1000
    path = str(data_dir / "units.parquet")
    table = pa.table(
        {
            "k": pa.array(range(n), pa.int64()),
            "s": pa.array([f"s{i % 17}" for i in range(n)]),
            "ts": pa.array([i * 3_600_000_000 for i in range(n)], pa.int64()).cast(
                pa.timestamp("us", "UTC")
            ),
        }
    )
    pq.write_table(table, path, row_group_size=200, max_rows_per_page=50, write_page_index=True)
    return path


UNITS_WHERE = '"k" BETWEEN 150 AND 720 AND "s" != \'s3\' AND "ts" < now()'
UNITS_COLUMNS = ["s", "k"]


def test_read_function_pickles(data_dir: Path) -> None:
    """The function ``mapInArrow`` ships to executors survives pickle and cloudpickle, and
    the copy reads the plan's units into exactly the scan's rows."""
    cloudpickle = pytest.importorskip("pyspark.cloudpickle")  # what Spark pickles with
    from pqindex.spark._read import _ReadUnits

    path = write_units_fixture(data_dir)
    expected = pqindex.scan(path, where=UNITS_WHERE, columns=UNITS_COLUMNS).to_arrow()
    plan = pqindex.scan(path, where=UNITS_WHERE, columns=UNITS_COLUMNS)
    batch = pa.record_batch(
        [pa.array([0], pa.int32()), pa.array([ipc_bytes(plan.units())], pa.binary())],
        names=["part", "units"],
    )
    function = _ReadUnits(
        catalog=None,
        now_ns=plan.now_ns,
        where=UNITS_WHERE,
        columns=UNITS_COLUMNS,
        batch_size=64,
        target=expected.schema,
        accumulator=Recorder(),
    )
    for module in (pickle, cloudpickle):
        clone = module.loads(module.dumps(function))
        assert clone is not function
        got = pa.Table.from_batches(list(clone(iter([batch]))), schema=expected.schema)
        assert got.sort_by("k").equals(expected.sort_by("k")), module.__name__
        assert expected.num_rows > 0
        assert [m["rows_matched"] for m in clone.accumulator.added] == [expected.num_rows]


def read_units_in_child(blob: bytes, now_ns: int, where: str, columns: list[str]) -> bytes:
    """Runs in a child process: the scan rebuilt from its units, its rows as Arrow IPC."""
    from pqindex._native import read_units

    units = pa.ipc.open_stream(blob).read_all()
    return ipc_bytes(read_units(units, now_ns=now_ns, where=where, columns=columns).to_arrow())


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_units_read_in_child_process(method: str, data_dir: Path) -> None:
    """A plan's units, sent as Arrow IPC with ``now_ns``, read in a forked or spawned child
    (after the parent used pqindex's threads), split in two, give exactly the scan's rows."""
    path = write_units_fixture(data_dir)
    expected = pqindex.scan(path, where=UNITS_WHERE, columns=UNITS_COLUMNS, threads=2).to_arrow()
    plan = pqindex.scan(path, where=UNITS_WHERE, columns=UNITS_COLUMNS)
    units = plan.units()
    assert units.num_rows >= 2
    halves = [units.slice(0, units.num_rows // 2), units.slice(units.num_rows // 2)]
    context = multiprocessing.get_context(method)
    with context.Pool(1) as pool:
        pending = [
            pool.apply_async(
                read_units_in_child, (ipc_bytes(h), plan.now_ns, UNITS_WHERE, UNITS_COLUMNS)
            )
            for h in halves
        ]
        parts = [pa.ipc.open_stream(p.get(timeout=120)).read_all() for p in pending]
    got = pa.concat_tables(parts)
    assert expected.num_rows > 0
    assert got.sort_by("k").equals(expected.sort_by("k"))


def test_import_pqindex_does_not_import_pyspark() -> None:
    """``import pqindex`` stays light: neither pyspark nor py4j nor pqindex.spark."""
    code = (
        "import sys, pqindex; print(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('pyspark', 'py4j') or m.startswith('pqindex.spark')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "[]", result.stdout


def test_a_selected_schema_is_the_one_spark_gives_the_select(spark: Any) -> None:
    """Columns named exactly take their fields from the schema without an analysis; the
    result is what Spark's analysis of the select gives, and Spark still resolves what is
    not plainly one field (another case, a nested path, a clash of spellings)."""
    from pqindex.spark._read import _selected_schema
    from pyspark.sql import types as T

    inner = T.StructType([T.StructField("x", T.LongType())])
    fields = [
        T.StructField("k", T.LongType(), False),
        T.StructField("s", T.StringType(), True, {"comment": "kept"}),
        T.StructField("n", inner),
    ]
    df = spark.createDataFrame([], T.StructType(fields))
    for columns in (["s", "k"], ["k", "k"], ["S"], ["n.x"], ["n"], ["k", "s", "n"]):
        assert _selected_schema(df, columns) == df.select(*columns).schema, columns
    with spark_confs(spark, {"spark.sql.caseSensitive": "true"}):
        clash = spark.createDataFrame([], "a long, A string")
        assert _selected_schema(clash, ["A"]) == clash.select("A").schema


def test_an_empty_base_frame_is_kept_per_session_and_schema(spark: Any) -> None:
    """The empty frame conditions are analysed against is made once per session and
    schema on a classic session (each costs several JVM calls), and stays empty."""
    from pqindex.spark._session import empty_frame, is_connect
    from pyspark.sql import types as T

    one = T.StructType([T.StructField("k", T.LongType())])
    other = T.StructType([T.StructField("k", T.StringType())])
    first = empty_frame(spark, one)
    assert first.schema == one and first.count() == 0
    assert empty_frame(spark, other).schema == other
    assert (empty_frame(spark, one) is first) != is_connect(spark)
    assert empty_frame(spark, one).where("k = 1").count() == 0
