"""Seeded random Arrow tables and the writers that turn them into Parquet fixtures.

The differential suite needs data that makes pruning *decide* something, so the tables are
built to hit the places where pruning goes wrong:

* values come from small per-column domains, so equality predicates match rows and the
  literals the predicate generator draws from the data are meaningful;
* every domain includes the awkward values of its type (NaN, -0.0, +-inf, type min/max,
  empty and non-ASCII strings, strings longer than the 64 bytes writers truncate statistics
  to, pre-epoch dates and timestamps with sub-second parts);
* some columns are sorted (one descending, one sorted float with NaN sprinkled in) and
  others come in runs of one value, so page and row-group statistics are narrow and prune,
  and some pages hold only NaN, only -0.0 or only nulls;
* 10-30% of each column is null.

A second, hand-made table (:func:`make_edge_table`) has row groups of four rows, each
isolating one boundary (see ``EDGE_GROUPS``).

Each writer returns a :class:`Written`: what to hand ``pqindex.scan``, the data files DuckDB
reads as the referee, and the table as it went to the writer (after the type conversions the
writer needed), from which the predicate generator draws its literals.
"""

from __future__ import annotations

import glob
import math
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

DEFAULT_ROWS = 3000

# Columns sorted ascending / descending: they give narrow page statistics, so page pruning fires.
SORTED_ASC = frozenset({"id", "i32", "u32", "f64", "dec15_3", "str", "date", "ts_us", "ts_ms_tz"})
SORTED_DESC = frozenset({"i16"})

# Columns whose values come in runs (a value repeated up to 80 times): pages then hold few
# distinct values, so page statistics prune on these too, and some pages hold only NaN,
# only -0.0 or only nulls.
CLUSTERED = frozenset(
    {
        "i8",
        "u8",
        "u64",
        "f32",
        "dec7_2",
        "bin",
        "lstr",
        "ts_ms",
        "ts_s_tz",
        "ts_ns_tz",
        "bool",
        "s.a",
    }
)

# Columns only ever projected, never used in predicates (the contract excludes them).
PROJECTION_ONLY = frozenset({"li", "m"})

# Columns each writer puts a bloom filter on (names that exist in every writer's table).
BLOOM_COLUMNS = ("i64", "str", "dec30_5", "f64", "date", "u16")

NS_PER_UNIT = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}

# Instants stay inside 1900..2200: every unit (ns included) can hold them, and so can Spark.
MIN_EPOCH_S = -2_208_988_800  # 1900-01-01
MAX_EPOCH_S = 7_258_118_400  # 2200-01-01

STRING_POOL = [
    "",
    " ",
    "a",
    "A",
    "Z",
    "aa",
    "ab",
    "abc",
    "abcd",
    "app",
    "apple",
    "apples",
    "applesauce",
    "banana",
    "O'Brien",
    "a\\b",
    "tab\there",
    "zebra",
    "Zebra",
    "é",
    "e\u0301",
    "ß",
    "straße",
    "ñandú",
    "日本",
    "日本語",
    "🎉",
    "\u00ff",
    "\x7f",
    "x" * 63,
    "x" * 64,
    "x" * 65,
    "x" * 70 + "a",
    "x" * 70 + "b",
    "y" * 62 + "日本",  # the multi-byte character straddles the 64-byte truncation point
    "y" * 62 + "日本" + "z",
]

BINARY_POOL = [
    b"",
    b"\x00",
    b"\x00\x00",
    b"\x00abc",
    b"\x01",
    b"\x7f",
    b"\x80",
    b"\xff",
    b"\xff\xfe",
    b"\xff\xff",
    b"ab",
    b"abc",
    b"abd",
    b"\xaa" * 70 + b"\x01",
    b"\xaa" * 70 + b"\x02",
]

# Hive partition values: plain letters, so every engine infers a string column.
HIVE_VALUES = ("x", "y", "z")


# --------------------------------------------------------------------------------------------
# Domains: the distinct non-null values a column draws from.
# --------------------------------------------------------------------------------------------


def _int_domain(rng: np.random.Generator, type_: pa.DataType) -> list[int]:
    """Mostly small numbers (so values repeat), plus the type's extremes now and then."""
    info = np.iinfo(type_.to_pandas_dtype())
    low, high = max(int(info.min), -60), min(int(info.max), 60)
    size = int(rng.integers(8, 40))
    values = {int(v) for v in rng.integers(low, high + 1, size)}
    if rng.random() < 0.6:
        values.update({int(info.min), int(info.max)})
    if type_.bit_width >= 32:
        wide = rng.integers(
            int(info.min) // 2,
            int(info.max) // 2,
            4,
            dtype=np.int64 if info.min < 0 else np.uint64,
        )
        values.update(int(v) for v in wide)
    if type_ == pa.uint64():
        values.update({2**63, 2**63 + 1, 2**64 - 2})  # above int64's range: signedness bugs show
    return sorted(values)


def _float_domain(rng: np.random.Generator, type_: pa.DataType) -> list[float]:
    """Round numbers, the IEEE specials, and extremes of the float width."""
    specials = [
        float("nan"),
        -0.0,
        0.0,
        float("inf"),
        float("-inf"),
        1.0,
        -1.0,
        0.1,
        0.5,
        -2.5,
    ]
    if type_ == pa.float32():
        extremes = [
            3.4028234663852886e38,
            -3.4028234663852886e38,
            1.401298464324817e-45,
            16777217.0,
        ]
    else:
        extremes = [
            1.7976931348623157e308,
            -1.7976931348623157e308,
            5e-324,
            1e-300,
            9007199254740993.0,
        ]
    randoms = [round(float(v), 2) for v in rng.normal(0, 100, int(rng.integers(10, 40)))]
    picked = specials + [v for v in extremes if rng.random() < 0.5] + randoms
    np_type = np.float32 if type_ == pa.float32() else np.float64
    return [float(np_type(v)) for v in picked]


def _decimal_domain(rng: np.random.Generator, type_: pa.Decimal128Type) -> list[Decimal]:
    """Small unscaled values, some large ones, and the precision's min/max."""
    p, s = type_.precision, type_.scale
    top = 10**p - 1
    unscaled = {int(v) for v in rng.integers(-3000, 3000, int(rng.integers(10, 40)))}
    unscaled.update(int(rng.integers(-(2**62), 2**62)) % top for _ in range(3))
    unscaled.update({0, top, -top})
    exact = Context(prec=60)  # the default context rounds to 28 digits
    return sorted(Decimal(u).scaleb(-s, exact) for u in unscaled)


def _string_domain(rng: np.random.Generator) -> list[str]:
    """Part of the fixed pool of awkward strings, plus random words with shared prefixes."""
    pool = [s for s in STRING_POOL if rng.random() < 0.7]
    prefixes = ["pre", "prefix", "pref", "p"]
    letters = list("abcxyz")
    for _ in range(int(rng.integers(5, 20))):
        suffix = "".join(rng.choice(letters, int(rng.integers(0, 4))))
        pool.append(str(rng.choice(prefixes)) + suffix)
    return sorted(set(pool))


def _binary_domain(rng: np.random.Generator) -> list[bytes]:
    pool = [b for b in BINARY_POOL if rng.random() < 0.7]
    for _ in range(int(rng.integers(3, 10))):
        pool.append(bytes(int(x) for x in rng.integers(0, 256, int(rng.integers(1, 6)))))
    return sorted(set(pool))


def _date_domain(rng: np.random.Generator) -> list[int]:
    """Days since the epoch, 1900..2200, including the epoch and the day before it."""
    days = {
        int(v)
        for v in rng.integers(MIN_EPOCH_S // 86400, MAX_EPOCH_S // 86400, int(rng.integers(10, 50)))
    }
    days.update({0, -1, 10956, 11016})  # 1970-01-01, 1969-12-31, 2000-01-01, 2000-02-29
    days.update(int(v) for v in rng.integers(18000, 18100, 10))  # a dense cluster: values repeat
    return sorted(days)


def _timestamp_domain(rng: np.random.Generator, unit: str) -> list[int]:
    """Instants in the column's unit: midnights, pre-epoch values, sub-second parts."""
    per_s = NS_PER_UNIT["s"] // NS_PER_UNIT[unit]
    seconds = [int(v) for v in rng.integers(MIN_EPOCH_S, MAX_EPOCH_S, int(rng.integers(10, 40)))]
    seconds += [
        int(v) * 86400 for v in rng.integers(18000, 18030, 5)
    ]  # midnights: DATE literals hit
    seconds += [0, -1, 1]
    values = set()
    for s in seconds:
        fraction = int(rng.integers(0, per_s)) if per_s > 1 and rng.random() < 0.6 else 0
        if unit == "ns" and rng.random() < 0.5:
            fraction -= fraction % 1000  # half of the ns values are whole microseconds
        values.add(s * per_s + fraction)
    return sorted(values)


# --------------------------------------------------------------------------------------------
# Columns
# --------------------------------------------------------------------------------------------


def _order_key(value: Any) -> Any:
    """Sort key matching Parquet's statistics order: bytes for strings, NaN last for floats."""
    if isinstance(value, str):
        return (0, value.encode())
    if _is_nan(value):
        return (1, 0.0)
    return (0, value)


def _sample(
    rng: np.random.Generator,
    domain: Sequence[Any],
    n: int,
    name: str,
    null_fraction: float,
) -> list[Any]:
    """Draws ``n`` values from ``domain``; sorted columns keep their order around the nulls."""
    if name in CLUSTERED:
        values = _runs(rng, domain, n)
    else:
        values = [domain[i] for i in rng.integers(0, len(domain), n)]
    nulls = rng.random(n) < null_fraction
    if name in SORTED_ASC or name in SORTED_DESC:
        # NaN is sprinkled like the nulls, not bunched at the end: pages then mix NaN with
        # narrow min/max statistics, the case where NaN-blind pruning drops rows.
        regular = sorted(
            (v for v in values if not _is_nan(v)),
            key=_order_key,
            reverse=name in SORTED_DESC,
        )
        nans = len(values) - len(regular)
        nan_slots = {int(i) for i in rng.choice(n, nans, replace=False)} if nans else set()
        it = iter(regular)
        values = [float("nan") if i in nan_slots else next(it) for i in range(n)]
    return [None if null else v for v, null in zip(values, nulls, strict=True)]


def _runs(rng: np.random.Generator, domain: Sequence[Any], n: int) -> list[Any]:
    values: list[Any] = []
    while len(values) < n:
        values += [domain[int(rng.integers(0, len(domain)))]] * int(rng.integers(1, 81))
    return values[:n]


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _struct_column(rng: np.random.Generator, n: int) -> pa.Array:
    """``s`` with fields ``a`` (int32) and ``b`` (string); the struct and each field may be null."""
    a = _sample(rng, list(range(-5, 21)), n, "s.a", 0.15)
    b = _sample(rng, _string_domain(rng), n, "s.b", 0.15)
    mask = rng.random(n) < 0.1
    children = [pa.array(a, pa.int32()), pa.array(b, pa.string())]
    return pa.StructArray.from_arrays(children, names=["a", "b"], mask=pa.array(mask))


def _list_column(rng: np.random.Generator, n: int) -> pa.Array:
    rows = [[int(x) for x in rng.integers(0, 10, int(rng.integers(0, 4)))] for _ in range(n)]
    return pa.array([None if rng.random() < 0.15 else r for r in rows], pa.list_(pa.int32()))


def _map_column(rng: np.random.Generator, n: int) -> pa.Array:
    keys = ["k1", "k2", "k3"]
    rows: list[Any] = []
    for _ in range(n):
        chosen = rng.choice(keys, int(rng.integers(0, 3)), replace=False)
        rows.append(
            None if rng.random() < 0.15 else [(str(k), int(rng.integers(0, 100))) for k in chosen]
        )
    return pa.array(rows, pa.map_(pa.string(), pa.int32()))


def _scalar_columns() -> list[tuple[str, pa.DataType, Callable[[np.random.Generator], list[Any]]]]:
    """(name, type, domain) of every column a predicate may use, in table order."""
    cols: list[tuple[str, pa.DataType, Callable[[np.random.Generator], list[Any]]]] = []
    for name, t in [
        ("i8", pa.int8()),
        ("i16", pa.int16()),
        ("i32", pa.int32()),
        ("i64", pa.int64()),
        ("u8", pa.uint8()),
        ("u16", pa.uint16()),
        ("u32", pa.uint32()),
        ("u64", pa.uint64()),
    ]:
        cols.append((name, t, lambda rng, t=t: _int_domain(rng, t)))
    for name, t in [("f32", pa.float32()), ("f64", pa.float64())]:
        cols.append((name, t, lambda rng, t=t: _float_domain(rng, t)))
    for name, t in [
        ("dec7_2", pa.decimal128(7, 2)),
        ("dec15_3", pa.decimal128(15, 3)),
        ("dec30_5", pa.decimal128(30, 5)),
    ]:
        cols.append((name, t, lambda rng, t=t: _decimal_domain(rng, t)))
    cols.append(("str", pa.string(), _string_domain))
    cols.append(("bin", pa.binary(), _binary_domain))
    cols.append(("lstr", pa.large_string(), _string_domain))
    cols.append(("date", pa.date32(), _date_domain))
    for tz in (None, "UTC"):
        for unit in ("s", "ms", "us", "ns"):
            name = f"ts_{unit}" + ("_tz" if tz else "")
            cols.append(
                (
                    name,
                    pa.timestamp(unit, tz),
                    lambda rng, unit=unit: _timestamp_domain(rng, unit),
                )
            )
    cols.append(("bool", pa.bool_(), lambda rng: [False, True]))
    return cols


def make_table(seed: int, n_rows: int = DEFAULT_ROWS) -> pa.Table:
    """The differential suite's table: every column type the contract lists, seeded."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, pa.Array] = {"id": pa.array(np.arange(n_rows), pa.int64())}
    for name, type_, domain_of in _scalar_columns():
        null_fraction = float(rng.uniform(0.1, 0.3))
        values = _sample(rng, domain_of(rng), n_rows, name, null_fraction)
        arrays[name] = _to_array(values, type_)
    arrays["s"] = _struct_column(rng, n_rows)
    arrays["li"] = _list_column(rng, n_rows)
    arrays["m"] = _map_column(rng, n_rows)
    return pa.table(arrays)


def _to_array(values: list[Any], type_: pa.DataType) -> pa.Array:
    """Builds an array; dates and timestamps arrive as integers in the storage unit."""
    if pa.types.is_date32(type_):
        return pa.array(values, pa.int32()).cast(type_)
    if pa.types.is_timestamp(type_):
        return pa.array(values, pa.int64()).cast(type_)
    return pa.array(values, type_)


def make_pruning_table(n_rows: int = 20_000, seed: int = 0) -> pa.Table:
    """A table for the pruning test: ``id`` sorted and unique, ``h`` unique even numbers in
    random order (so an odd literal inside min/max is absent: only a bloom filter rules it out),
    and a payload string column."""
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": pa.array(np.arange(n_rows), pa.int64()),
            "h": pa.array(rng.permutation(n_rows).astype(np.int64) * 2, pa.int64()),
            "payload": pa.array([f"row-{i}" for i in range(n_rows)], pa.string()),
        }
    )


# NaNs of several bit patterns (quiet, negative, signalling), written as "nan:<bits>" in
# EDGE_GROUPS and turned into exactly those bits: a bloom filter hashes the bits, so a reader
# that probes only the canonical NaN misses the others.
NAN64 = ("nan:7ff8000000000000", "nan:fff8000000000000", "nan:7ff0000000000001")
NAN32 = ("nan:7fc00000", "nan:ffc00000", "nan:7f800001")
EDGE_GROUP_ROWS = 4

# The edge table: each column lists row groups of EDGE_GROUP_ROWS values, chosen so that one
# row group's statistics (or bloom filter) decide a boundary: only -0.0, only NaN (of
# different bit patterns), unsigned values above the signed maximum, negative decimals in
# big-endian bytes, bytes above 0x7f, strings equal in their first 64 bytes, UTF-8 order.
_D = Decimal
EDGE_GROUPS: dict[str, tuple[pa.DataType, list[list[Any]]]] = {
    "f64": (
        pa.float64(),
        [
            [-0.0, -0.0, None, -0.0],
            [0.0, 1.0, 0.0, 2.0],
            [NAN64[0], 1.0, NAN64[0], 1.0],
            [NAN64[1], 5.0, NAN64[2], 5.0],
            [float("inf"), float("inf"), None, None],
            [float("-inf"), -1.0, float("-inf"), -1.0],
            [None, None, None, None],
            [NAN64[1], NAN64[1], NAN64[2], NAN64[0]],
            [1.7976931348623157e308, 5e-324, -5e-324, 0.5],
        ],
    ),
    "f32": (
        pa.float32(),
        [
            [-0.0, None, -0.0, -0.0],
            [NAN32[1], NAN32[2], NAN32[0], NAN32[1]],
            [0.1, 0.1, 0.5, None],
            [NAN32[0], 2.5, 2.5, NAN32[0]],
            [float("inf"), 3.4028234663852886e38, None, 1.0],
            [float("-inf"), -3.4028234663852886e38, -1.0, None],
            [1.401298464324817e-45, 0.0, -0.0, 16777216.0],
            [None, None, None, None],
            [0.0, 0.0, 0.0, 0.0],
        ],
    ),
    "u64": (
        pa.uint64(),
        [
            [2**63, 2**63 + 5, 2**64 - 1, 2**63],
            [0, 1, 2, 3],
            [2**63 - 1, 2**63 - 1, None, None],
            [2**64 - 1, 2**64 - 1, 2**64 - 1, None],
            [0, 2**64 - 1, 5, 7],
            [None, None, None, None],
            [9, 9, 9, 9],
            [2**63, None, 2**63, 1],
            [100, 200, 300, 400],
        ],
    ),
    "u32": (
        pa.uint32(),
        [
            [2**31, 2**32 - 1, 2**31 + 1, None],
            [0, 1, 2**31 - 1, 7],
            [2**32 - 1, 2**32 - 1, None, 2**32 - 1],
            [None, None, None, None],
            [5, 6, 7, 8],
            [2**31, 2**31, 2**31, 2**31],
            [0, 0, None, 0],
            [3000000000, 4000000000, 1, 2],
            [2**31 - 1, 2**31, 2**31 - 1, 2**31],
        ],
    ),
    "u8": (
        pa.uint8(),
        [
            [255, 255, 128, None],
            [0, 1, 127, 128],
            [200, 201, 202, 203],
            [None, None, None, None],
            [0, 0, 0, 0],
            [127, 127, 127, 127],
            [128, 129, 130, 131],
            [255, None, 0, None],
            [64, 65, 66, 67],
        ],
    ),
    "i64": (
        pa.int64(),
        [
            [-(2**63), -(2**63), None, -(2**63)],
            [2**63 - 1, 2**63 - 1, 2**63 - 1, 2**63 - 1],
            [-1, 0, 1, None],
            [None, None, None, None],
            [-(2**63), 2**63 - 1, 0, 0],
            [10, 20, 30, 40],
            [-40, -30, -20, -10],
            [7, 7, 7, 7],
            [2**53 + 1, 2**53, 2**53 - 1, None],
        ],
    ),
    "dec7_2": (
        pa.decimal128(7, 2),
        [
            [_D("-99999.99"), _D("-0.01"), None, _D("-5.00")],
            [_D("0.00"), _D("0.01"), _D("99999.99"), _D("1.50")],
            [_D("-1.00"), _D("1.00"), _D("-1.00"), _D("1.00")],
            [None, None, None, None],
            [_D("12.34")] * 4,
            [_D("-12.34")] * 4,
            [_D("0.00"), None, _D("0.00"), None],
            [_D("1.01"), _D("1.02"), _D("1.03"), _D("1.04")],
            [_D("-99999.99"), _D("99999.99"), _D("0.00"), _D("0.00")],
        ],
    ),
    "dec30_5": (
        pa.decimal128(30, 5),
        [
            [_D("-1234567890123456789012345.12345"), _D("-0.00001"), None, _D("-1.00000")],
            [_D("0.00000"), _D("0.00001"), _D("9999999999999999999999999.99999"), _D("1.5")],
            [_D("-1.00000"), _D("1.00000"), None, None],
            [None, None, None, None],
            [_D("-0.00001")] * 4,
            [_D("255.00000"), _D("256.00000"), _D("-255.00000"), _D("-256.00000")],
            [_D("128.00000"), _D("127.00000"), _D("-128.00000"), _D("-127.00000")],
            [_D("0.00000")] * 4,
            [_D("-9999999999999999999999999.99999"), _D("0"), _D("1"), _D("2")],
        ],
    ),
    "str": (
        pa.string(),
        [
            ["", "", None, ""],
            ["a", "ab", "abc", "b"],
            ["x" * 64 + "a", "x" * 64 + "b", "x" * 64 + "c", None],
            ["x" * 64, "x" * 63, "x" * 64 + "\U0001f600", "x" * 65],
            ["é", "ß", "日本", "🎉"],
            ["\x7f", "\u0080", "\uffff", "\U0010ffff"],
            [None, None, None, None],
            ["y" * 62 + "日本", "y" * 62 + "日", "y" * 63, "y" * 62 + "日本語"],
            ["O'Brien", "a\\b", "tab\there", " "],
        ],
    ),
    "bin": (
        pa.binary(),
        [
            [b"\x00", b"\x00\x00", b"", None],
            [b"\xff", b"\xff\xff", b"\xfe", b"\xff"],
            [b"\x7f", b"\x80", b"\x81", b"\x7e"],
            [None, None, None, None],
            [b"\xaa" * 70 + b"\x01", b"\xaa" * 70 + b"\x02", b"\xaa" * 64, None],
            [b"abc", b"abd", b"ab", b"abcd"],
            [b"", b"", b"", b""],
            [b"\x80\x00", b"\x80", b"\x7f\xff", b"\x00\xff"],
            [b"z", None, b"z", None],
        ],
    ),
    "date": (
        pa.date32(),
        [
            [-1, -1, None, -2],
            [0, 1, 2, 3],
            [-25567, -25566, -25000, -20000],
            [None, None, None, None],
            [18000, 18000, 18000, 18000],
            [84000, 84001, None, 84002],
            [-1, 0, 1, None],
            [11016, 11016, 11017, 11015],
            [10956, None, 10956, None],
        ],
    ),
    "ts_us_tz": (
        pa.timestamp("us", "UTC"),
        [
            [-1, -1_000_000, -1_500_000, None],
            [0, 1, 999_999, 1_000_000],
            [-1, 0, 1, None],
            [None, None, None, None],
            [86_400_000_000 * 18000] * 4,
            [86_400_000_000 * 18000 - 1, 86_400_000_000 * 18000 + 1, None, None],
            [-2_208_988_800_000_000, -2_208_988_799_999_999, None, 0],
            [1_500_000, 1_500_001, 1_499_999, 2_000_000],
            [7_258_118_399_999_999, 7_258_118_400_000_000, None, None],
        ],
    ),
    "ts_ns": (
        pa.timestamp("ns"),
        [
            [1, 999, 1000, 1001],
            [-1, -999, -1000, -1001],
            [None, None, None, None],
            [0, 0, 0, 0],
            [1_000_000_000, 1_000_000_001, 999_999_999, None],
            [86_400_000_000_000 * 18000 + 500] * 4,
            [-9_000_000_000_000_000_000, 9_000_000_000_000_000_000, None, 0],
            [123_456_789, 123_456_000, 123_457_000, None],
            [5, None, 5, None],
        ],
    ),
}


def make_edge_table() -> pa.Table:
    """Row groups of EDGE_GROUP_ROWS rows that each pin one boundary (see EDGE_GROUPS);
    ``id`` numbers the rows."""
    groups = len(next(iter(EDGE_GROUPS.values()))[1])
    arrays = {"id": pa.array(range(groups * EDGE_GROUP_ROWS), pa.int64())}
    for name, (type_, column_groups) in EDGE_GROUPS.items():
        values = [v for group in column_groups for v in group]
        arrays[name] = _edge_array(values, type_)
    return pa.table(arrays)


def _edge_array(values: list[Any], type_: pa.DataType) -> pa.Array:
    if not pa.types.is_floating(type_):
        return _to_array(values, type_)
    float_type, bits_type = (
        (np.float32, np.uint32) if type_ == pa.float32() else (np.float64, np.uint64)
    )
    bits = [
        int(v[4:], 16)
        if isinstance(v, str)
        else int(np.array([0.0 if v is None else v], float_type).view(bits_type)[0])
        for v in values
    ]
    data = np.array(bits, dtype=bits_type).view(float_type)
    return pa.array(data, type_, mask=np.array([v is None for v in values]))


def write_edge_fixture(writer: str, table: pa.Table, out_dir: str) -> Written:
    """The edge table with one row group per EDGE_GROUP_ROWS rows, pages of 2 rows and a
    bloom filter on every column."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{writer}.parquet")
    blooms = [c for c in table.column_names if c != "id"]
    if writer == "arrow-rs":
        import pqindex

        pqindex.write(
            table,
            path,
            row_group_size=EDGE_GROUP_ROWS,
            page_row_limit=2,
            bloom_filter_columns=blooms,
        )
    else:
        options = _pyarrow_options(EDGE_GROUP_ROWS, 2)
        options["write_batch_size"] = 2
        options["bloom_filter_options"] = {c: {"ndv": 8, "fpp": 0.01} for c in blooms}
        if writer == "pyarrow-nodict":
            options["use_dictionary"] = False
        pq.write_table(table, path, **options)
    return Written(f"{writer}-edge", path, [path], table)


# --------------------------------------------------------------------------------------------
# Writers
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Written:
    """A Parquet fixture: how to scan it with pqindex and how DuckDB reads the same rows."""

    writer: str
    source: str | list[str]  # what pqindex.scan receives: a file, a directory or a list
    files: list[str]  # the data files, for DuckDB's read_parquet
    table: pa.Table  # the rows as they went to the writer
    hive: bool = False

    def duckdb_relation(self) -> str:
        """The ``read_parquet(...)`` call that reads exactly this fixture's rows."""
        files = ", ".join(_sql_string(f) for f in self.files)
        hive = "true" if self.hive else "false"
        return f"read_parquet([{files}], hive_partitioning = {hive})"


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _pyarrow_options(row_group_size: int, page_rows: int) -> dict[str, Any]:
    """Small pages and several row groups, so statistics at both levels have work to do."""
    return {
        "row_group_size": max(row_group_size, 1),
        "data_page_size": 1024,
        "write_batch_size": min(64, page_rows),
        "max_rows_per_page": page_rows,
        "write_page_index": True,
        "compression": "zstd",
    }


def _bloom_options(table: pa.Table) -> dict[str, Any]:
    return {c: {"ndv": 200, "fpp": 0.01} for c in BLOOM_COLUMNS if c in table.column_names}


def write_pyarrow(table: pa.Table, out_dir: str, variant: str = "pyarrow") -> Written:
    """pyarrow variants: ``pyarrow`` (dictionary, page index, bloom filters),
    ``pyarrow-nodict`` (plain encoding, data page v2, bloom filters),
    ``pyarrow-decint`` (decimals stored as INT32/INT64) and
    ``pyarrow-noindex`` (no page index, two files passed as a list)."""
    os.makedirs(out_dir, exist_ok=True)
    n = table.num_rows
    options = _pyarrow_options(n // 6, 100)
    if variant == "pyarrow":
        options["bloom_filter_options"] = _bloom_options(table)
    elif variant == "pyarrow-nodict":
        options.update(
            _pyarrow_options(n // 9, 37),  # odd sizes: pages end anywhere in a row group
            use_dictionary=False,
            data_page_version="2.0",
            bloom_filter_options=_bloom_options(table),
        )
    elif variant == "pyarrow-decint":
        options.update(_pyarrow_options(n // 3, 250), store_decimal_as_integer=True)
    elif variant == "pyarrow-noindex":
        options["write_page_index"] = False
        half = table.num_rows // 2
        files = [os.path.join(out_dir, f"part-{i}.parquet") for i in range(2)]
        pq.write_table(table.slice(0, half), files[0], **options)
        pq.write_table(table.slice(half), files[1], **options)
        return Written(variant, files, files, table)
    else:
        raise ValueError(f"unknown pyarrow variant {variant!r}")
    path = os.path.join(out_dir, "data.parquet")
    pq.write_table(table, path, **options)
    return Written(variant, path, [path], table)


def write_pyarrow_hive(table: pa.Table, out_dir: str, seed: int) -> Written:
    """A hive-partitioned directory (``part=x/...``) with the junk real directories carry.

    ``_SUCCESS``, ``.crc`` files, a ``_temporary`` directory and a hidden file must all be
    skipped; the ``_temporary`` file is valid Parquet with extra rows, so reading it would
    show up as a row mismatch, and the hidden one is garbage, so reading it raises.
    """
    rng = np.random.default_rng(seed + 1000)
    part = pa.array([HIVE_VALUES[i] for i in rng.integers(0, len(HIVE_VALUES), table.num_rows)])
    options = _pyarrow_options(table.num_rows // 36, 20)  # a file holds about 1/6 of the rows
    files, pieces = [], []
    for value in HIVE_VALUES:
        piece = table.filter(pc.equal(part, value))
        directory = os.path.join(out_dir, f"part={value}")
        os.makedirs(directory, exist_ok=True)
        for i, chunk in enumerate(
            [piece.slice(0, piece.num_rows // 2), piece.slice(piece.num_rows // 2)]
        ):
            path = os.path.join(directory, f"chunk-{i}.parquet")
            pq.write_table(chunk, path, **options)
            files.append(path)
        pieces.append(piece.append_column("part", pa.array([value] * piece.num_rows, pa.string())))
    _add_directory_junk(out_dir, table)
    return Written("pyarrow-hive", out_dir, files, pa.concat_tables(pieces), hive=True)


def _add_directory_junk(out_dir: str, table: pa.Table) -> None:
    open(os.path.join(out_dir, "_SUCCESS"), "wb").close()
    with open(os.path.join(out_dir, "part=x", ".chunk-0.parquet.crc"), "wb") as f:
        f.write(b"not parquet")
    with open(os.path.join(out_dir, ".hidden.parquet"), "wb") as f:
        f.write(b"not parquet either")
    temporary = os.path.join(out_dir, "part=y", "_temporary", "0")
    os.makedirs(temporary, exist_ok=True)
    pq.write_table(table.slice(0, 10), os.path.join(temporary, "leftover.parquet"))


def write_arrow_rs(table: pa.Table, out_dir: str) -> Written:
    """The Rust arrow-rs writer behind ``pqindex.write``: page index, small pages, blooms.

    Second-unit timestamps go in as milliseconds: ``pqindex.write`` stores ``timestamp[s]``
    as a bare INT64 without a TIMESTAMP logical type, which DuckDB (the referee) and pyarrow
    read as BIGINT (``test_write_keeps_timestamp_types`` covers that separately).
    """
    import pqindex

    table = _seconds_to_millis(table)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "data.parquet")
    blooms = [c for c in BLOOM_COLUMNS if c in table.column_names]
    pqindex.write(
        table,
        path,
        row_group_size=max(table.num_rows // 5, 1),
        page_row_limit=64,
        bloom_filter_columns=blooms,
    )
    return Written("arrow-rs", path, [path], table)


def _seconds_to_millis(table: pa.Table) -> pa.Table:
    for i, f in enumerate(table.schema):
        if pa.types.is_timestamp(f.type) and f.type.unit == "s":
            column = table.column(i).cast(pa.timestamp("ms", f.type.tz))
            table = table.set_column(i, f.name, column)
    return table


def write_duckdb(table: pa.Table, out_dir: str, con: Any) -> Written:
    """DuckDB's own writer. Its row groups are multiples of 2048 rows, so ``ROW_GROUP_SIZE``
    is as small as DuckDB allows."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "data.parquet")
    name = f"datagen_{abs(hash(out_dir))}"
    # A cursor of its own: no unfinished result of the caller's connection gets in the way.
    cursor = con.cursor()
    try:
        cursor.register(name, table)
        options = "FORMAT parquet, ROW_GROUP_SIZE 1024"
        cursor.execute(f"COPY (SELECT * FROM {name}) TO {_sql_string(path)} ({options})")
        cursor.fetchall()
    finally:
        cursor.close()
    return Written("duckdb", path, [path], table)


def spark_compatible(table: pa.Table) -> pa.Table:
    """The table with the types Spark can write: unsigned ints widen to the next signed type
    (uint64 to decimal(20,0)), timestamps become microseconds, large strings plain strings."""
    columns = []
    for f in table.schema:
        col = table.column(f.name)
        t = f.type
        if t == pa.uint8():
            col = col.cast(pa.int16())
        elif t == pa.uint16():
            col = col.cast(pa.int32())
        elif t == pa.uint32():
            col = col.cast(pa.int64())
        elif t == pa.uint64():
            col = col.cast(pa.decimal128(20, 0))
        elif pa.types.is_timestamp(t):
            col = col.cast(pa.timestamp("us", t.tz), safe=False)
        elif t == pa.large_string():
            col = col.cast(pa.string())
        columns.append(col)
    return pa.table(columns, names=table.column_names)


def write_spark(
    table: pa.Table,
    out_dir: str,
    spark: Any,
    int96: bool = False,
    bloom_columns: Sequence[str] = BLOOM_COLUMNS,
    compression: str = "snappy",
) -> Written:
    """A Spark-written directory: two part files, small pages, bloom filters on a few columns.

    ``int96`` writes time-zone-aware timestamps as INT96, as Spark did for years (and as
    most Spark-written data in the wild still is). ``compression`` is Spark's codec name;
    parquet-java's Zstandard frames, unlike other writers', do not declare their size.
    """
    table = spark_compatible(table)
    # Naive Arrow timestamps become TIMESTAMP_NTZ (written with isAdjustedToUTC=false), the
    # UTC ones Spark's TIMESTAMP: both kinds of column end up in the files.
    previous_type = spark.conf.get("spark.sql.timestampType")
    spark.conf.set("spark.sql.timestampType", "TIMESTAMP_NTZ")
    try:
        frame = spark.createDataFrame(table)
    finally:
        spark.conf.set("spark.sql.timestampType", previous_type)
    writer = frame.repartition(2).write.mode("overwrite")
    options = {
        "compression": compression,
        "parquet.page.row.count.limit": "64",
        "parquet.page.size": "2048",
        "parquet.block.size": "16384",
        "parquet.block.size.row.check.min": "50",
        "parquet.block.size.row.check.max": "200",
        "parquet.page.size.row.check.min": "16",
    }
    for column in bloom_columns:
        if column in table.column_names:
            options[f"parquet.bloom.filter.enabled#{column}"] = "true"
            options[f"parquet.bloom.filter.expected.ndv#{column}"] = "200"
    for key, value in options.items():
        writer = writer.option(key, value)
    timestamp_type = "INT96" if int96 else "TIMESTAMP_MICROS"
    previous = spark.conf.get("spark.sql.parquet.outputTimestampType")
    spark.conf.set("spark.sql.parquet.outputTimestampType", timestamp_type)
    try:
        writer.parquet(out_dir)
    finally:
        spark.conf.set("spark.sql.parquet.outputTimestampType", previous)
    files = sorted(glob.glob(os.path.join(out_dir, "part-*.parquet")))
    return Written("spark-int96" if int96 else "spark", out_dir, files, table)


WRITERS = (
    "pyarrow",
    "pyarrow-nodict",
    "pyarrow-decint",
    "pyarrow-noindex",
    "pyarrow-hive",
    "arrow-rs",
    "duckdb",
)
SPARK_WRITERS = ("spark", "spark-int96")


def write_fixture(
    writer: str,
    seed: int,
    out_dir: str,
    *,
    n_rows: int = DEFAULT_ROWS,
    duckdb_con: Any = None,
    spark: Any = None,
) -> Written:
    """Generates the seeded table and writes it with ``writer`` into a fresh ``out_dir``."""
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    table = make_table(seed, n_rows)
    if writer.startswith("pyarrow-hive"):
        return write_pyarrow_hive(table, out_dir, seed)
    if writer.startswith("pyarrow"):
        return write_pyarrow(table, out_dir, writer)
    if writer == "arrow-rs":
        return write_arrow_rs(table, out_dir)
    if writer == "duckdb":
        return write_duckdb(table, out_dir, duckdb_con)
    if writer in SPARK_WRITERS:
        # The INT96 files in Zstandard, the others in Snappy, Spark's default.
        int96 = writer == "spark-int96"
        return write_spark(
            table, out_dir, spark, int96=int96, compression="zstd" if int96 else "snappy"
        )
    raise ValueError(f"unknown writer {writer!r}")
