"""pqindex.duckdb: a pqindex source registered in DuckDB, pruned by the filters DuckDB
pushes into it.

The translation of pyarrow Expressions into pqindex predicates is checked operator by
operator, with the shapes DuckDB builds; the rows against DuckDB's own ``read_parquet``
over random predicates (tests/predicates.py, plus string matching), with projections,
limits and counts; pruning through ``on_scan``; and the plain-stream fallback.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

duckdb = pytest.importorskip("duckdb")
import pqindex.duckdb as pqd  # noqa: E402
from conftest import duckdb_referee  # noqa: E402
from predicates import PredicateGenerator  # noqa: E402

ROWS_PER_FILE = 1500
FILES = 2
STRINGS = ["", "a", "ab", "abc", "b%c", "b_c", "x\ny", "é", "zz", "a.c", "it's"] + [
    f"v{i:02d}" for i in range(30)
]
FLOATS = [-2.5, -0.0, 0.0, 0.1, 1.0, 3.75, 1e300, math.inf, -math.inf, math.nan]
US_2020 = 1_577_836_800_000_000


def make_table(start: int, n: int, seed: int) -> pa.Table:
    """``n`` rows numbered by ``k`` from ``start``, clustered on ``d`` or on ``s`` (by
    seed) so that predicates prune; NULLs, NaN, -0.0 and infinities throughout."""
    rng = random.Random(seed)

    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.1 else value

    def floats() -> list[Any]:
        return [
            maybe(rng.choice(FLOATS) if rng.random() < 0.4 else round(rng.gauss(0, 10), 2))
            for _ in range(n)
        ]

    days = [rng.randint(-400, 400) for _ in range(n)]
    us = [US_2020 + d * 86_400_000_000 + rng.randrange(100_000_000_000) for d in days]
    table = pa.table(
        {
            "i": pa.array([maybe(rng.randint(-20, 20)) for _ in range(n)], pa.int64()),
            "i32": pa.array([maybe(rng.randint(-1000, 1000)) for _ in range(n)], pa.int32()),
            "u8": pa.array([maybe(rng.randint(0, 255)) for _ in range(n)], pa.uint8()),
            "f": pa.array(floats(), pa.float64()),
            "f32": pa.array(floats(), pa.float32()),
            "s": pa.array([maybe(rng.choice(STRINGS)) for _ in range(n)], pa.string()),
            "bin": pa.array([maybe(bytes([rng.randrange(4)] * 2)) for _ in range(n)], pa.binary()),
            "d": pa.array(
                [maybe(dt.date(2020, 1, 1) + dt.timedelta(d)) for d in days], pa.date32()
            ),
            "ts": pa.array([maybe(v) for v in us], pa.timestamp("us")),
            "tms": pa.array([maybe(v // 1000) for v in us], pa.timestamp("ms")),
            "tz": pa.array([maybe(v + 7) for v in us], pa.timestamp("us", tz="UTC")),
            "tzms": pa.array([maybe(v // 1000) for v in us], pa.timestamp("ms", tz="UTC")),
            "tn": pa.array([maybe(v * 1000 + rng.randrange(1000)) for v in us], pa.timestamp("ns")),
            "tm": pa.array(
                [maybe(dt.time(rng.randrange(24), rng.randrange(60))) for _ in range(n)],
                pa.time64("us"),
            ),
            "b": pa.array([maybe(rng.random() < 0.5) for _ in range(n)], pa.bool_()),
            "m": pa.array(
                [maybe(Decimal(rng.randint(-500, 500)) / 100) for _ in range(n)],
                pa.decimal128(10, 2),
            ),
            "st": pa.array(
                [maybe({"x": rng.randint(0, 9), "y": rng.choice(STRINGS)}) for _ in range(n)],
                pa.struct([("x", pa.int32()), ("y", pa.string())]),
            ),
        }
    )
    keys = [("d", "ascending")] if seed % 2 == 0 else [("s", "ascending"), ("f", "ascending")]
    table = table.sort_by(keys)
    return table.add_column(0, "k", pa.array(range(start, start + n), pa.int64()))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("duckdb-route")
    for f in range(FILES):
        table = make_table(f * ROWS_PER_FILE, ROWS_PER_FILE, seed=f)
        pq.write_table(
            table,
            root / f"part-{f}.parquet",
            row_group_size=300,
            write_page_index=True,
            data_page_size=512,
        )
    return root


@pytest.fixture(scope="module")
def table(dataset: Path) -> pa.Table:
    return pq.read_table(dataset)


def connect() -> Any:
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    return con


def rows(result: list[tuple[Any, ...]]) -> Counter[str]:
    return Counter(map(repr, result))


# The translation, operator by operator.

SCHEMA = pa.schema(
    [
        ("i", pa.int64()),
        ("f", pa.float64()),
        ("f32", pa.float32()),
        ("s", pa.string()),
        ("ls", pa.large_string()),
        ("bin", pa.binary()),
        ("fb", pa.binary(2)),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us")),
        ("tz", pa.timestamp("ms", tz="UTC")),
        ("tm", pa.time32("ms")),
        ("b", pa.bool_()),
        ("m", pa.decimal128(10, 2)),
        ("st", pa.struct([("x", pa.int32())])),
        ("dict", pa.dictionary(pa.int32(), pa.string())),
    ]
)


def C(name: str | list[str]) -> dict[str, Any]:
    return {"col": name}


def L(value: Any, type_: str | None = None) -> dict[str, Any]:
    return {"lit": value} if type_ is None else {"lit": value, "type": type_}


def op(name: str, *args: Any) -> dict[str, Any]:
    return {"op": name, "args": list(args)}


def D(text: str) -> dict[str, Any]:
    return L(text, "DOUBLE")


F = pc.field
NULL_BOOL = pa.scalar(None, pa.bool_())


def isin(field: Any, values: list[Any], kind: Any, skip_nulls: bool = False) -> Any:
    return pc.is_in(field, value_set=pa.array(values, kind), skip_nulls=skip_nulls)


def strict_in(name: str, values: list[Any], kind: Any) -> Any:
    """IN as DuckDB hands it over: NULL for a NULL row."""
    return pc.if_else(F(name).is_valid(), F(name).isin(pa.array(values, kind)), NULL_BOOL)


TRANSLATIONS: list[tuple[str, Any, dict[str, Any] | None]] = [
    ("eq", F("i") == 3, op("=", C("i"), L(3))),
    ("ne", F("i") != 3, op("!=", C("i"), L(3))),
    ("lt", F("i") < 3, op("<", C("i"), L(3))),
    ("le", F("i") <= 3, op("<=", C("i"), L(3))),
    ("gt", F("i") > 3, op(">", C("i"), L(3))),
    ("ge", F("i") >= 3, op(">=", C("i"), L(3))),
    ("literal on the left", pc.less(pc.scalar(3), F("i")), op(">", C("i"), L(3))),
    (
        "and",
        (F("i") > 1) & (F("s") == "x"),
        op("and", op(">", C("i"), L(1)), op("=", C("s"), L("x"))),
    ),
    (
        "or",
        (F("i") > 1) | (F("s") == "x"),
        op("or", op(">", C("i"), L(1)), op("=", C("s"), L("x"))),
    ),
    ("not", ~(F("i") > 1), op("not", op(">", C("i"), L(1)))),
    ("and with an unknown side", (F("i") > 1) & (F("i") == F("f")), op(">", C("i"), L(1))),
    ("or with an unknown side: unknown", (F("i") > 1) | (F("i") == F("f")), None),
    ("not of a widened and: unknown", ~((F("i") > 1) & (F("i") == F("f"))), None),
    # Plain "and" is NULL where either side is: not SQL's AND, so never negated.
    ("not of a plain and: unknown", ~pc.and_(F("i") > 1, F("b")), None),
    ("plain and", pc.and_(F("i") > 1, F("b")), op("and", op(">", C("i"), L(1)), C("b"))),
    ("double", F("f") < 0.5, op("<", C("f"), D("0.5"))),
    ("negative zero", F("f") <= -0.0, op("<=", C("f"), D("-0.0"))),
    (
        "float32",
        F("f32") == pa.scalar(0.1, pa.float32()),
        op("=", C("f32"), L("0.10000000149011612", "REAL")),
    ),
    # NaN is above every number in pqindex, nowhere in pyarrow: wider, not negated.
    ("greater on floats", F("f") > 1.0, op(">", C("f"), D("1.0"))),
    ("not greater on floats: unknown", ~(F("f") > 1.0), None),
    ("not less on floats", ~(F("f") < 1.0), op("not", op("<", C("f"), D("1.0")))),
    ("NaN literal, not equal: every non-NULL row", F("f") != math.nan, op("is_not_null", C("f"))),
    ("NaN literal, equal: wider", F("f") == math.nan, op("=", C("f"), D("NaN"))),
    ("infinity", F("f") < math.inf, op("<", C("f"), D("Infinity"))),
    ("x != x is a NaN test", F("f") != F("f"), op("=", C("f"), D("NaN"))),
    ("is_nan", pc.is_nan(F("f32")), op("=", C("f32"), L("NaN", "REAL"))),
    ("string", F("s") == "it's", op("=", C("s"), L("it's"))),
    ("large string", F("ls") >= "b", op(">=", C("ls"), L("b"))),
    (
        "binary",
        F("bin") == b"\x00\x01",
        op("=", C("bin"), {"lit": "0001", "type": "BLOB", "encoding": "hex"}),
    ),
    (
        "fixed binary",
        F("fb") < pa.scalar(b"ab", pa.binary(2)),
        op("<", C("fb"), {"lit": "6162", "type": "BLOB", "encoding": "hex"}),
    ),
    ("date", F("d") > pa.scalar(dt.date(2020, 1, 5)), op(">", C("d"), L("2020-01-05", "DATE"))),
    (
        "timestamp",
        F("ts") >= pa.scalar(dt.datetime(2020, 1, 1, 1, 2, 3, 4), pa.timestamp("us")),
        op(">=", C("ts"), L("2020-01-01 01:02:03.000004", "TIMESTAMP")),
    ),
    (
        "zoned in the column's unit",
        F("tz") > pa.scalar(1_577_836_800_500, pa.timestamp("ms", tz="UTC")),
        op(">", C("tz"), L("2020-01-01 00:00:00.500000+00:00", "TIMESTAMPTZ")),
    ),
    (
        "zoned against naive: unknown",
        F("tz") > pa.scalar(dt.datetime(2020, 1, 1), pa.timestamp("ms")),
        None,
    ),
    (
        "time",
        F("tm") < pa.scalar(3_600_000, pa.time32("ms")),
        op("<", C("tm"), L("01:00:00.000000", "TIME")),
    ),
    (
        "decimal",
        F("m") == pa.scalar(Decimal("1.25"), pa.decimal128(10, 2)),
        op("=", C("m"), L("1.25", "DECIMAL(38,2)")),
    ),
    ("decimal against a float: unknown", F("m") == 1.25, None),
    ("boolean column", F("b"), C("b")),
    ("not boolean column", ~F("b"), op("not", C("b"))),
    ("boolean literal", pc.scalar(False), L(False)),
    ("struct field", F("st", "x") == 3, op("=", C(["st", "x"]), L(3))),
    ("dictionary", F("dict") == "a", op("=", C("dict"), L("a"))),
    ("is_null", F("i").is_null(), op("is_null", C("i"))),
    ("is_valid", F("i").is_valid(), op("is_not_null", C("i"))),
    (
        "is_null with NaN",
        F("f").is_null(nan_is_null=True),
        op("or", op("is_null", C("f")), op("=", C("f"), D("NaN"))),
    ),
    (
        "IN as DuckDB hands it over",
        strict_in("i", [1, 2], pa.int64()),
        op("in", C("i"), L(1), L(2)),
    ),
    (
        "NOT IN as DuckDB hands it over",
        ~strict_in("s", ["a"], pa.string()),
        op("not", op("in", C("s"), L("a"))),
    ),
    # pyarrow compares floats in a set by their bits: -0.0 is not 0.0; pqindex is wider.
    ("IN of floats: wider", strict_in("f", [0.0], pa.float64()), op("in", C("f"), D("0.0"))),
    ("NOT IN of floats: unknown", ~strict_in("f", [0.0], pa.float64()), None),
    (
        "is_in matching a NULL row to nothing",
        isin(F("i"), [1], pa.int64()),
        op("and", op("is_not_null", C("i")), op("in", C("i"), L(1))),
    ),
    (
        "is_in matching a NULL row to a NULL",
        isin(F("i"), [1, None], pa.int64()),
        op("or", op("in", C("i"), L(1)), op("is_null", C("i"))),
    ),
    (
        "is_in skipping NULL",
        isin(F("i"), [1, None], pa.int64(), skip_nulls=True),
        op("and", op("is_not_null", C("i")), op("in", C("i"), L(1))),
    ),
    (
        "if_else widened to its branches",
        pc.if_else(F("b"), F("i") > 1, F("i") < -1),
        op("or", op("and", C("b"), op(">", C("i"), L(1))), op("<", C("i"), L(-1))),
    ),
    (
        "a zoned comparison between two of the column's points",
        pc.if_else(F("tz").is_valid(), pa.scalar(False), NULL_BOOL),
        L(False),
    ),
    ("a function: unknown", pc.starts_with(F("s"), "a"), None),
]


@pytest.mark.parametrize(
    ("name", "expr", "expected"), TRANSLATIONS, ids=[c[0] for c in TRANSLATIONS]
)
def test_translation(name: str, expr: Any, expected: dict[str, Any] | None) -> None:
    assert pqd.translate(expr, SCHEMA) == expected


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [(2, op("in", C("i"), L(1))), (3, op("in", C("i"), L(1)))],
    ids=["emit_null", "inconclusive"],
)
def test_is_in_null_behaviours_pyarrow_cannot_spell(behaviour: int, expected: Any) -> None:
    """EMIT_NULL (a NULL row is NULL) and INCONCLUSIVE (a NULL in the set makes a miss
    NULL), which only C++ and Substrait producers build."""
    kind = pa.struct([("value_set", pa.list_(pa.int64())), ("null_matching_behavior", pa.uint32())])
    options = pa.scalar({"value_set": [1, None], "null_matching_behavior": behaviour}, kind)
    translated = pqd._Translator(SCHEMA).membership(pqd._Field(("i",)), options)
    assert translated is not None and translated.expr == expected
    assert translated.exact == (behaviour == 2)


def test_translations_plan_in_pqindex(tmp_path: Path) -> None:
    """Each translation above is a predicate pqindex plans over a file of those columns."""
    path = tmp_path / "all-types.parquet"
    pq.write_table(SCHEMA.empty_table(), path)
    for _name, _expr, expected in TRANSLATIONS:
        if expected is not None:
            pqindex.scan(str(path), where=expected).to_arrow()


def test_expressions_read_back_with_their_columns() -> None:
    expr = (F("st", "x") == 3) & F("b") | F("s").isin(pa.array(["a"]))
    assert pqd.referenced_columns(expr) == {"st", "b", "s"}
    tree = pqd.expression_tree(expr)
    assert tree is not None


@pytest.mark.skipif(int(duckdb.__version__.split(".")[0]) < 2, reason="DuckDB 2's Arrow scan")
def test_the_probe_finds_pushdown() -> None:
    assert pqd.pushdown_supported()


# Random predicates against read_parquet.

STRING_ATOMS = [
    "s LIKE 'v1%'",
    "s LIKE '%c'",
    "s LIKE 'b\\_c' ESCAPE '\\'",
    "s ILIKE 'AB%'",
    "starts_with(s, 'v0')",
    "contains(s, 'b')",
    "s = 'it''s'",
    "s > 'v2' AND s < 'v25'",
    "s IN ('a', 'ab', NULL)",
    "s NOT IN ('a', 'ab')",
    '"st"."y" = \'a\'',
    "bin = '\\x01\\x01'::BLOB",
    "tm < TIME '06:00:00'",
    "tzms >= TIMESTAMPTZ '2020-06-01 00:00:00.0005+00'",
    "tz = TIMESTAMPTZ '2020-06-01 00:00:00+00'",
    "tn > TIMESTAMP_NS '2020-06-01 00:00:00.000000001'",
    "f32 = 0.1",
    "f = 'NaN'::DOUBLE",
    "f > 3 OR f IS NULL",
    "u8 BETWEEN 10 AND 20",
    "k % 7 = 0",
]


def test_random_predicates_match_read_parquet(dataset: Path, table: pa.Table, full: bool) -> None:
    con, ref = connect(), duckdb_referee()
    pqd.register(con, "t", str(dataset))
    source = f"read_parquet('{dataset}/*.parquet')"
    gen = PredicateGenerator(table, seed=7)
    rng = random.Random(8)
    names = table.column_names
    try:
        for case in range(2000 if full else 200):
            where = rng.choice(STRING_ATOMS) if case % 6 == 0 else gen.generate().sql
            columns = ", ".join(
                f'"{c}"'
                for c in (rng.sample(names, rng.randint(1, 3)) if rng.random() < 0.7 else names)
            )
            try:
                want = ref.sql(f"SELECT {columns} FROM {source} WHERE {where}").fetchall()
            except duckdb.Error:
                with pytest.raises(duckdb.Error):
                    con.sql(f"SELECT {columns} FROM t WHERE {where}").fetchall()
                continue
            got = con.sql(f"SELECT {columns} FROM t WHERE {where}").fetchall()
            assert rows(got) == rows(want), where
            if case % 25 == 0:
                count = con.sql(f"SELECT count(*) FROM t WHERE {where}").fetchall()[0]
                assert count == (len(want),), where
                limited = con.sql(f"SELECT {columns} FROM t WHERE {where} LIMIT 3").fetchall()
                assert len(limited) == min(3, len(want)) and not rows(limited) - rows(want), where
    finally:
        con.close()
        ref.close()


def test_a_selective_filter_prunes(dataset: Path, table: pa.Table) -> None:
    scans: list[pqindex.Scan] = []
    con = connect()
    pqd.register(con, "t", str(dataset), on_scan=scans.append)
    got = con.sql("SELECT k, s FROM t WHERE k BETWEEN 1600 AND 1605 AND s IS NOT NULL").fetchall()
    want = pq.read_table(dataset).filter(
        (pc.field("k") >= 1600) & (pc.field("k") <= 1605) & pc.field("s").is_valid()
    )
    assert rows(got) == rows(list(zip(want["k"].to_pylist(), want["s"].to_pylist(), strict=True)))
    metrics = scans[-1].metrics()
    assert metrics["files_pruned"] == 1
    assert metrics["rows_selected"] < ROWS_PER_FILE // 4
    con.close()


def test_the_dataset_answers_pyarrow_calls(dataset: Path, table: pa.Table) -> None:
    dataset_ = pqd.dataset(str(dataset))
    assert isinstance(dataset_, pqd.PqindexDataset)
    expr = (pc.field("i") > 3) & (pc.field("k") < 2000)
    want = table.filter(expr)
    assert dataset_.to_table(filter=expr).num_rows == want.num_rows
    assert dataset_.count_rows(filter=expr) == want.num_rows
    assert dataset_.head(5, columns=["s"]).column_names == ["s"]
    scanner = dataset_.scanner(columns=["s"], filter=expr)
    assert scanner.predicate == op("and", op(">", C("i"), L(3)), op("<", C("k"), L(2000)))
    assert scanner.to_reader().read_all().num_rows == want.num_rows


def test_without_pushdown_a_stream_is_read_whole(
    dataset: Path, table: pa.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pqd, "pushdown_supported", lambda: False)
    scans: list[pqindex.Scan] = []
    source = pqd.dataset(str(dataset), on_scan=scans.append)
    assert isinstance(source, pqd.ArrowStream)
    con = connect()
    con.register("t", source)
    for _ in range(2):  # planned afresh per query
        assert con.sql("SELECT count(*) FROM t WHERE k < 10").fetchall()[0] == (10,)
    assert len(scans) == 2 and scans[-1].metrics()["rows_selected"] == FILES * ROWS_PER_FILE
    con.close()


def test_delta_table(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    path = tmp_path / "delta"
    columns = ["k", "i", "f", "s", "d", "tz", "b", "m"]
    for f in range(2):
        deltalake.write_deltalake(
            str(path), make_table(f * 700, 700, seed=f).select(columns), mode="append"
        )
    con = connect()
    pqd.register(con, "t", str(path))
    con.register("ref", deltalake.DeltaTable(str(path)).to_pyarrow_table())
    for where in ["k > 1390", "s = 'v01' OR i IN (1, 2)", "d < DATE '2019-06-01'", "f <= 0"]:
        got = con.sql(f"SELECT * FROM t WHERE {where}").fetchall()
        assert rows(got) == rows(con.sql(f"SELECT * FROM ref WHERE {where}").fetchall()), where
    con.close()


def test_a_file_of_views_is_declared_without_them(tmp_path: Path) -> None:
    """pqindex reads a file written with view types as views; declared as such, DuckDB
    would push no filter."""
    path = tmp_path / "views.parquet"
    strings = pa.array([f"v{i % 50}" for i in range(2000)], pa.string_view())
    pq.write_table(pa.table({"s": strings, "k": range(2000)}), path, row_group_size=200)
    source = pqd.dataset(str(path))
    assert source.schema.field("s").type == pa.large_string()
    scans: list[pqindex.Scan] = []
    con = connect()
    pqd.register(con, "t", str(path), on_scan=scans.append)
    assert con.sql("SELECT count(*), min(k) FROM t WHERE s = 'v7'").fetchall() == [(40, 7)]
    assert scans[-1].metrics()["rows_matched"] == 40
    con.close()
