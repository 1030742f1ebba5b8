"""A corpus of small Parquet files from every writer available here, for the "files in the
wild" test (``tests/test_corpus.py``, ``scripts/corpus.py``).

Readers disagree on files, not on tables: the same rows written by pyarrow, DuckDB, polars,
fastparquet and the parquet crate come out with different physical types, encodings, page
layouts, statistics and footers, and old writers left layouts no current writer produces.
So this module writes the same kinds of rows many ways:

* pyarrow: every encoding it writes, every codec, data page v1 and v2, page index and
  statistics on and off, every logical type it writes, nested types, NULL-heavy and NaN
  columns, empty row groups, legacy format options;
* DuckDB ``COPY ... TO`` with its options, polars ``write_parquet``, fastparquet (when
  installed), the parquet crate through ``pqindex.write``;
* crafted files (bottom of the module): a pyarrow file whose footer (Thrift compact
  protocol, decoded and re-encoded here) or page bytes are patched into layouts that
  writers of other times produced: INT96 outside 1677-2262, legacy 2-level lists, maps
  annotated ``MAP_KEY_VALUE``, dictionary page offsets of 0, a chunk whose last page runs
  past ``total_compressed_size``, untrustworthy deprecated statistics.

A file whose rows no reader here can be trusted to get right gets a sidecar
``<name>.expected.arrow`` (Arrow IPC) holding the rows it was written from; ``check.py``
prefers it as the referee.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import random
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

EXPECTED_SUFFIX = ".expected.arrow"


@dataclass(frozen=True)
class CorpusFile:
    """One written file: where, by which writer, and what is special about it."""

    path: str
    writer: str
    note: str


@dataclass
class Corpus:
    """What :func:`write_corpus` wrote, and the writers or variants it had to skip."""

    root: str
    files: list[CorpusFile] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------

EPOCH_DATE = dt.date(1970, 1, 1)
WORDS = (
    "apple",
    "Apple",
    "banana",
    "cherry",
    "",
    " ",
    "a'b",
    "50%_off",
    "back\\slash",
    "naïve",
    "日本語",
    "emoji \U0001f600",
    "zzz",
    "x" * 70,  # longer than some writers' statistics truncation
    "y" * 200 + "end",
)


def _nulls(rng: random.Random, values: list[Any], rate: float) -> list[Any]:
    return [None if rng.random() < rate else v for v in values]


def _pick(rng: random.Random, n: int, pool: list[Any], rate: float = 0.1) -> list[Any]:
    """``n`` values, every pool value at least once when n allows, a ``rate`` of NULLs."""
    values = [pool[i] if i < len(pool) else rng.choice(pool) for i in range(n)]
    rng.shuffle(values)
    return _nulls(rng, values, rate)


def _ints(rng: random.Random, n: int, bits: int, signed: bool) -> list[int]:
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    pool = [lo, hi, 0, 1, lo + 1, hi - 1] + [rng.randint(lo, hi) for _ in range(40)]
    pool += [rng.randint(-100, 100) if signed else rng.randint(0, 200) for _ in range(40)]
    return _pick(rng, n, pool)


def _decimals(rng: random.Random, n: int, precision: int, scale: int) -> list[Decimal | None]:
    top = 10**precision - 1
    pool = [top, -top, 0, 1, -1] + [rng.randint(-top, top) for _ in range(30)]
    pool += [rng.randint(-999, 999) for _ in range(30)]
    wide = Context(prec=100)  # the default 28 digits would round 38-digit values
    return _pick(rng, n, [Decimal(v).scaleb(-scale, context=wide) for v in pool])


def _floats(rng: random.Random, n: int, big: float) -> list[float | None]:
    pool = [math.nan, -0.0, 0.0, math.inf, -math.inf, big, -big, 1.5, -2.25, 0.1]
    pool += [round(rng.uniform(-1000, 1000), 3) for _ in range(60)]
    return _pick(rng, n, pool)


def _micros(rng: random.Random, lo_year: int, hi_year: int) -> int:
    lo = (dt.datetime(lo_year, 1, 1) - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    hi = (dt.datetime(hi_year, 1, 1) - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    return rng.randint(lo, hi)


def _timestamps(rng: random.Random, n: int, unit: str, wide: bool) -> list[int | None]:
    """Timestamps as integers in ``unit``; ``wide`` adds years 1 and 9999 (not for ns)."""
    per_us = {"s": 10**-6, "ms": 10**-3, "us": 1, "ns": 1000}[unit]
    pool = [int(_micros(rng, 1950, 2100) * per_us) for _ in range(60)] + [0, -1]
    if wide:
        pool += [int(_micros(rng, 1, 2) * per_us), int(_micros(rng, 9998, 9999) * per_us)]
    return _pick(rng, n, pool)


def types_table(n: int = 300, seed: int = 0) -> pa.Table:
    """One column of every logical type pyarrow writes, NULLs sprinkled in every column."""
    rng = random.Random(seed)
    cols: dict[str, pa.Array] = {"id": pa.array(range(n), pa.int64())}
    for bits in (8, 16, 32, 64):
        cols[f"i{bits}"] = pa.array(_ints(rng, n, bits, True), getattr(pa, f"int{bits}")())
        cols[f"u{bits}"] = pa.array(_ints(rng, n, bits, False), getattr(pa, f"uint{bits}")())
    f16 = _floats(rng, n, 65504.0)
    cols["f16"] = pa.array(
        [None if v is None else np.float16(v) for v in f16], pa.float16(), from_pandas=False
    )
    cols["f32"] = pa.array(_floats(rng, n, 3.4028234663852886e38), pa.float32())
    cols["f64"] = pa.array(_floats(rng, n, 1.7976931348623157e308), pa.float64())
    for precision, scale in ((4, 2), (9, 3), (18, 6), (38, 10), (38, 0)):
        values = _decimals(rng, n, precision, scale)
        cols[f"dec{precision}_{scale}"] = pa.array(values, pa.decimal128(precision, scale))
    for precision, scale in ((40, 5), (76, 20)):
        values = _decimals(rng, n, precision, scale)
        cols[f"dec{precision}_{scale}"] = pa.array(values, pa.decimal256(precision, scale))
    days = _pick(
        rng, n, [-719162, 2932896, 0, -1] + [rng.randint(-20000, 40000) for _ in range(50)]
    )
    cols["date32"] = pa.array(days, pa.date32())
    day_us = 86_400_000_000
    times_us = _pick(rng, n, [0, day_us - 1] + [rng.randrange(day_us) for _ in range(50)])
    cols["time32_ms"] = pa.array([None if v is None else v // 1000 for v in times_us], "time32[ms]")
    cols["time64_us"] = pa.array(times_us, pa.time64("us"))
    times_ns = [None if v is None else v * 1000 + 7 for v in times_us]
    cols["time64_ns"] = pa.array(times_ns, pa.time64("ns"))
    for unit in ("s", "ms", "us", "ns"):
        stamps = _timestamps(rng, n, unit, wide=unit != "ns")
        cols[f"ts_{unit}"] = pa.array(stamps, pa.timestamp(unit))
        zone = {"s": "UTC", "ms": "Europe/Paris", "us": "UTC", "ns": "America/New_York"}[unit]
        stamps = _timestamps(rng, n, unit, wide=unit != "ns")
        cols[f"ts_{unit}_tz"] = pa.array(stamps, pa.timestamp(unit, tz=zone))
    cols["s"] = pa.array(_pick(rng, n, list(WORDS)), pa.string())
    cols["ls"] = pa.array(_pick(rng, n, list(WORDS)), pa.large_string())
    blobs = [b"", b"\x00", b"\xff\xfe", b"abc", b"\x00abc\x00", bytes(range(32))]
    cols["bin"] = pa.array(_pick(rng, n, blobs), pa.binary())
    fixed = [b"\x00\x00\x00\x00", b"\xff\xff\xff\xff", b"abcd", b"ab\x00d", b"\x7f\x80\x81\x82"]
    cols["fsb"] = pa.array(_pick(rng, n, fixed), pa.binary(4))
    cols["bool"] = pa.array(_pick(rng, n, [True, False]), pa.bool_())
    dict_words = pa.array(_pick(rng, n, ["red", "green", "blue", "", "violet"]))
    cols["dict_s"] = dict_words.dictionary_encode()
    cols["dict_i"] = pa.array(_pick(rng, n, [10, -5, 2**40, 0]), pa.int64()).dictionary_encode()
    return pa.table(cols)


def nested_table(n: int = 200, seed: int = 1) -> pa.Table:
    """Structs, lists, large lists, maps and their nestings, with NULLs at every level."""
    rng = random.Random(seed)

    def maybe(value: Any, rate: float = 0.12) -> Any:
        return None if rng.random() < rate else value

    def small_list(make: Callable[[], Any]) -> list[Any] | None:
        items = [maybe(make(), 0.1) for _ in range(rng.choice([0, 1, 2, 3, 5]))]
        return None if rng.random() < 0.12 else items

    def word() -> str:
        return rng.choice(WORDS[:12])

    rows: dict[str, list[Any]] = {
        "id": list(range(n)),
        "st": [
            maybe(
                {
                    "a": maybe(rng.randint(-50, 50)),
                    "b": maybe(word()),
                    "c": maybe({"d": maybe(rng.uniform(-1, 1)), "e": maybe(rng.randint(0, 30000))}),
                }
            )
            for _ in range(n)
        ],
        "li": [small_list(lambda: rng.randint(-9, 9)) for _ in range(n)],
        "lli": [small_list(word) for _ in range(n)],
        "m": [
            maybe([(f"k{rng.randint(0, 5)}", maybe(rng.randint(0, 99))) for _ in range(2)])
            for _ in range(n)
        ],
        "ls_st": [
            small_list(lambda: {"x": maybe(rng.randint(-3, 3)), "y": maybe(word())})
            for _ in range(n)
        ],
        "st_li": [
            maybe({"tags": small_list(word), "n": maybe(rng.randint(0, 9))}) for _ in range(n)
        ],
        "lol": [small_list(lambda: small_list(lambda: rng.randint(-100, 100))) for _ in range(n)],
    }
    schema = pa.schema(
        [
            ("id", pa.int64()),
            (
                "st",
                pa.struct(
                    [
                        ("a", pa.int32()),
                        ("b", pa.string()),
                        ("c", pa.struct([("d", pa.float64()), ("e", pa.date32())])),
                    ]
                ),
            ),
            ("li", pa.list_(pa.int32())),
            ("lli", pa.large_list(pa.string())),
            ("m", pa.map_(pa.string(), pa.int64())),
            ("ls_st", pa.list_(pa.struct([("x", pa.int16()), ("y", pa.string())]))),
            ("st_li", pa.struct([("tags", pa.list_(pa.string())), ("n", pa.int8())])),
            ("lol", pa.list_(pa.list_(pa.int8()))),
        ]
    )
    return pa.table(rows, schema=schema)


def narrow_table(n: int = 400, seed: int = 2) -> pa.Table:
    """A few common columns, for the option matrix (codecs, page versions, encodings)."""
    t = types_table(n, seed)
    return t.select(["id", "i32", "i64", "f64", "s", "ts_us_tz", "dec9_3", "date32", "bool"])


# --------------------------------------------------------------------------------------------
# pyarrow
# --------------------------------------------------------------------------------------------

SMALL_PAGES: dict[str, Any] = {"data_page_size": 512, "write_batch_size": 32}
CODECS = ("snappy", "gzip", "zstd", "lz4", "brotli", "none")

# Which columns of types_table each non-dictionary encoding applies to (pyarrow refuses the
# others): the physical types the Parquet spec allows the encoding for.
ENCODING_COLUMNS = {
    "PLAIN": None,  # every column
    "DELTA_BINARY_PACKED": ["id", "i8", "i32", "u32", "i64", "u64", "date32", "ts_ms", "ts_ns"],
    "DELTA_LENGTH_BYTE_ARRAY": ["id", "s", "ls", "bin"],
    "DELTA_BYTE_ARRAY": ["id", "s", "ls", "bin", "fsb", "dec38_10", "dec76_20", "f16"],
    "BYTE_STREAM_SPLIT": ["id", "f16", "f32", "f64", "i32", "i64", "fsb", "dec18_6", "dec38_10"],
}


def _pyarrow(
    corpus: Corpus, name: str, table: pa.Table, note: str, **options: Any
) -> CorpusFile | None:
    """Writes ``table`` with pyarrow, or records why pyarrow refused the options."""
    path = os.path.join(corpus.root, "pyarrow", name + ".parquet")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        pq.write_table(table, path, **options)
    except (pa.ArrowException, OSError, ValueError, TypeError) as error:
        corpus.skipped.append(f"pyarrow {name}: {type(error).__name__}: {error}")
        return None
    written = CorpusFile(path, "pyarrow", note)
    corpus.files.append(written)
    return written


def write_pyarrow(corpus: Corpus) -> None:
    """The pyarrow part: types x page versions, codecs, encodings, options, edge layouts."""
    types, nested, narrow = types_table(), nested_table(), narrow_table()
    rg = {"row_group_size": 100}
    for version in ("1.0", "2.0"):
        _pyarrow(
            corpus,
            f"types-dict-v{version[0]}",
            types,
            f"every type, dictionary, page v{version}",
            data_page_version=version,
            write_page_index=True,
            **rg,
            **SMALL_PAGES,
        )
        _pyarrow(
            corpus,
            f"types-plain-v{version[0]}",
            types,
            f"every type, PLAIN, page v{version}",
            data_page_version=version,
            use_dictionary=False,
            write_page_index=True,
            **rg,
            **SMALL_PAGES,
        )
        _pyarrow(
            corpus,
            f"nested-v{version[0]}",
            nested,
            f"nested types, page v{version}",
            data_page_version=version,
            write_page_index=True,
            row_group_size=70,
            **SMALL_PAGES,
        )
    for codec in CODECS:
        for version in ("1.0", "2.0"):
            _pyarrow(
                corpus,
                f"codec-{codec}-v{version[0]}",
                narrow,
                f"{codec}, page v{version}",
                compression=codec,
                data_page_version=version,
                **rg,
                **SMALL_PAGES,
            )
    for encoding, columns in ENCODING_COLUMNS.items():
        table = types if columns is None else types.select(columns)
        table = _undictionary(table)
        for version in ("1.0", "2.0"):
            _pyarrow(
                corpus,
                f"enc-{encoding.lower()}-v{version[0]}",
                table,
                f"{encoding}, page v{version}",
                use_dictionary=False,
                column_encoding={c: encoding for c in table.column_names if c != "id"},
                data_page_version=version,
                write_page_index=True,
                **rg,
                **SMALL_PAGES,
            )
    for page_index in (True, False):
        for stats in (True, False):
            _pyarrow(
                corpus,
                f"index-{'on' if page_index else 'off'}-stats-{'on' if stats else 'off'}",
                narrow,
                f"page index {page_index}, statistics {stats}",
                write_page_index=page_index,
                write_statistics=stats,
                **rg,
                **SMALL_PAGES,
            )
    _pyarrow_options(corpus, types, narrow, nested)
    _pyarrow_edges(corpus)


def _undictionary(table: pa.Table) -> pa.Table:
    """Arrow dictionary columns decoded: pyarrow refuses non-dictionary encodings for them."""
    columns = [
        c.dictionary_decode() if pa.types.is_dictionary(c.type) else c
        for c in (table.column(i).combine_chunks() for i in range(table.num_columns))
    ]
    return pa.table(columns, names=table.column_names)


def _pyarrow_options(corpus: Corpus, types: pa.Table, narrow: pa.Table, nested: pa.Table) -> None:
    """pyarrow's less travelled options, each alone."""
    rg = {"row_group_size": 100, **SMALL_PAGES}
    _pyarrow(
        corpus,
        "types-no-arrow-schema",
        types,
        "no ARROW:schema: types from the Parquet schema alone",
        store_schema=False,
        **rg,
    )
    _pyarrow(
        corpus,
        "types-format-1.0",
        types,
        "format version 1.0: PLAIN_DICTIONARY, converted types only",
        version="1.0",
        coerce_timestamps="us",  # 1.0 has no nanoseconds
        allow_truncated_timestamps=True,
        **rg,
    )
    _pyarrow(
        corpus,
        "types-int96",
        types.select(["id", "ts_ns", "ts_ns_tz", "ts_ms"]),
        "INT96 timestamps (in range)",
        use_deprecated_int96_timestamps=True,
        **rg,
    )
    _pyarrow(
        corpus,
        "types-coerce-ms",
        types.select(["id", "ts_s", "ts_us", "ts_ns", "ts_us_tz"]),
        "timestamps coerced to ms",
        coerce_timestamps="ms",
        allow_truncated_timestamps=True,
        **rg,
    )
    _pyarrow(
        corpus,
        "types-decimal-as-int",
        types.select(["id", "dec4_2", "dec9_3", "dec18_6", "dec38_10"]),
        "decimals stored as INT32/INT64 where they fit",
        store_decimal_as_integer=True,
        **rg,
    )
    _pyarrow(
        corpus,
        "types-time-utc",
        types.select(["id", "time32_ms", "time64_us", "time64_ns"]),
        "TIME with isAdjustedToUTC=true",
        write_time_adjusted_to_utc=True,
        **rg,
    )
    _pyarrow(
        corpus,
        "dict-fallback",
        types.select(["id", "s", "i64", "f64", "bin"]),
        "dictionary overflows mid-chunk: dictionary pages then PLAIN pages",
        dictionary_pagesize_limit=64,
        **rg,
    )
    _pyarrow(
        corpus,
        "byte-stream-split-all",
        narrow,
        "use_byte_stream_split for the numeric columns",
        use_dictionary=False,
        use_byte_stream_split=["i32", "i64", "f64", "date32"],
        **rg,
    )
    _pyarrow(
        corpus,
        "checksums",
        narrow,
        "page CRCs",
        write_page_checksum=True,
        data_page_version="2.0",
        **rg,
    )
    _pyarrow(
        corpus,
        "bloom",
        narrow,
        "bloom filters",
        bloom_filter_options={c: {"ndv": 100, "fpp": 0.05} for c in ("i32", "s", "i64")},
        **rg,
    )
    _pyarrow(
        corpus,
        "sorted",
        narrow.sort_by("i64"),
        "sorting_columns declared",
        sorting_columns=[pq.SortingColumn(narrow.column_names.index("i64"))],
        write_page_index=True,
        **rg,
    )
    _pyarrow(
        corpus,
        "content-defined-chunking",
        narrow,
        "content-defined chunking of pages",
        use_content_defined_chunking=True,
        **rg,
    )
    _pyarrow(
        corpus,
        "nested-noncompliant",
        nested,
        "use_compliant_nested_type=False (list items named 'item')",
        use_compliant_nested_type=False,
        **rg,
    )
    _pyarrow(
        corpus,
        "one-row-per-page",
        narrow.slice(0, 60),
        "a page per row",
        max_rows_per_page=1,
        write_page_index=True,
        row_group_size=25,
    )
    _pyarrow(
        corpus,
        "many-row-groups",
        narrow,
        "row groups of 7 rows",
        row_group_size=7,
        write_page_index=True,
    )


def _pyarrow_edges(corpus: Corpus) -> None:
    """NULL-heavy and all-NULL columns, NaN and -0.0, empty row groups, an empty file."""
    rng = random.Random(5)
    n = 300
    sparse = {
        "id": pa.array(range(n), pa.int64()),
        "i": pa.array(_nulls(rng, list(range(n)), 0.97), pa.int32()),
        "s": pa.array(_nulls(rng, [f"v{i % 13}" for i in range(n)], 0.97)),
        "f": pa.array(_nulls(rng, [i / 7 for i in range(n)], 0.97), pa.float64()),
        "all_null_i": pa.array([None] * n, pa.int64()),
        "all_null_s": pa.array([None] * n, pa.string()),
        "all_null_ts": pa.array([None] * n, pa.timestamp("us")),
        "null_type": pa.nulls(n),
        # NULL in the first row group only, then values: statistics differ by row group.
        "first_null": pa.array([None] * 100 + list(range(n - 100)), pa.int32()),
    }
    table = pa.table(sparse)
    for page_index in (True, False):
        _pyarrow(
            corpus,
            f"nulls-index-{'on' if page_index else 'off'}",
            table,
            "NULL-heavy and all-NULL columns",
            row_group_size=100,
            write_page_index=page_index,
            **SMALL_PAGES,
        )
    specials = [math.nan, -0.0, 0.0, math.inf, -math.inf, None, 1.0, -1.0]
    floats = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "f32": pa.array([specials[i % 8] for i in range(n)], pa.float32()),
            "f64": pa.array([specials[(i * 3) % 8] for i in range(n)], pa.float64()),
            "nan_only": pa.array([math.nan if i % 5 else None for i in range(n)], pa.float64()),
            "neg_zero": pa.array([-0.0 if i % 2 else 0.0 for i in range(n)], pa.float32()),
            "f16": pa.array(
                [
                    np.float16(v) if v is not None else None
                    for v in (specials[(i * 5) % 8] for i in range(n))
                ],
                pa.float16(),
            ),
        }
    )
    for page_index in (True, False):
        _pyarrow(
            corpus,
            f"floats-special-index-{'on' if page_index else 'off'}",
            floats,
            "NaN, -0.0, infinities",
            row_group_size=60,
            write_page_index=page_index,
            **SMALL_PAGES,
        )
    narrow = narrow_table(120, 9)
    path = os.path.join(corpus.root, "pyarrow", "empty-row-groups.parquet")
    with pq.ParquetWriter(path, narrow.schema, write_page_index=True) as writer:
        writer.write_table(narrow.slice(0, 0))
        writer.write_table(narrow.slice(0, 50))
        writer.write_table(narrow.slice(0, 0))
        writer.write_table(narrow.slice(50))
        writer.write_table(narrow.slice(0, 0))
    corpus.files.append(CorpusFile(path, "pyarrow", "empty row groups first, between, last"))
    _pyarrow(corpus, "zero-rows", narrow.slice(0, 0), "no rows at all")
    _pyarrow(corpus, "one-row", narrow.slice(3, 1), "a single row")
    _pyarrow(
        corpus,
        "no-row-groups-schema-only",
        pa.table({"a": pa.array([], pa.int32())}),
        "an empty int32 column",
    )


# --------------------------------------------------------------------------------------------
# DuckDB
# --------------------------------------------------------------------------------------------

# Every DuckDB type that COPY writes, NULLs every 7th row; the row number drives the values.
DUCKDB_SELECT = """
SELECT
  i AS id,
  CASE WHEN i % 7 = 1 THEN NULL ELSE ((i * 37) % 256 - 128)::TINYINT END AS i8,
  CASE WHEN i % 7 = 2 THEN NULL ELSE ((i * 997) % 65536 - 32768)::SMALLINT END AS i16,
  CASE WHEN i % 7 = 3 THEN NULL ELSE (i * 7919 - 1000000)::INTEGER END AS i32,
  CASE WHEN i % 7 = 4 THEN NULL ELSE (i * 1000000007 - 9000000000000)::BIGINT END AS i64,
  CASE WHEN i % 7 = 5 THEN NULL ELSE (i::HUGEINT * 170141183460469231731687303715884105)
    END AS hugeint,
  CASE WHEN i % 7 = 6 THEN NULL ELSE ((i * 13) % 256)::UTINYINT END AS u8,
  ((i * 31) % 65536)::USMALLINT AS u16,
  CASE WHEN i % 7 = 0 THEN NULL ELSE (i * 16777259 % 4294967296)::UINTEGER END AS u32,
  CASE WHEN i % 11 = 0 THEN 18446744073709551615::UBIGINT ELSE (i * 99991)::UBIGINT END AS u64,
  CASE i % 9 WHEN 0 THEN 'NaN'::FLOAT WHEN 1 THEN '-0.0'::FLOAT WHEN 2 THEN NULL
    WHEN 3 THEN 'inf'::FLOAT ELSE (i / 3)::FLOAT END AS f32,
  CASE i % 8 WHEN 0 THEN 'NaN'::DOUBLE WHEN 1 THEN '-0.0'::DOUBLE WHEN 2 THEN NULL
    WHEN 3 THEN '-inf'::DOUBLE ELSE i / 7 END AS f64,
  CASE WHEN i % 7 = 1 THEN NULL ELSE ((i % 1999) - 999) / 10 END::DECIMAL(4, 1) AS dec4_1,
  ((i * 12345.678) % 999999.999 - 500000)::DECIMAL(9, 3) AS dec9_3,
  CASE WHEN i % 7 = 2 THEN NULL ELSE (i * 1234567.891011)::DECIMAL(18, 6) END AS dec18_6,
  CASE WHEN i % 5 = 0 THEN 9999999999999999999999999999.9999999999::DECIMAL(38, 10)
    ELSE (i * -123456789.0123456789)::DECIMAL(38, 10) END AS dec38_10,
  CASE WHEN i % 7 = 3 THEN NULL ELSE DATE '1970-01-01' + (i * 37 - 5000)::INTEGER END AS d,
  CASE WHEN i % 7 = 4 THEN NULL ELSE TIME '00:00:00' + INTERVAL (i * 7919) SECOND END AS t,
  (TIME '00:00:00' + INTERVAL (i * 7) SECOND)::TIMETZ AS ttz,
  CASE WHEN i % 7 = 5 THEN NULL ELSE TIMESTAMP '2001-02-03 04:05:06.789012'
    + INTERVAL (i * 86399) SECOND END AS ts,
  (TIMESTAMP '2020-01-01' + INTERVAL (i * 3600) SECOND)::TIMESTAMP_S AS ts_s,
  (TIMESTAMP '1900-01-01' + INTERVAL (i * 86400123) MILLISECOND)::TIMESTAMP_MS AS ts_ms,
  (TIMESTAMP '2262-01-01' - INTERVAL (i * 1000003) SECOND)::TIMESTAMP_NS AS ts_ns,
  CASE WHEN i % 7 = 6 THEN NULL ELSE TIMESTAMPTZ '2024-03-31 01:30:00+00'
    + INTERVAL (i * 600) SECOND END AS tstz,
  INTERVAL (i) DAY + INTERVAL (i % 13) MONTH AS iv,
  CASE WHEN i % 7 = 0 THEN NULL ELSE md5(i::VARCHAR)::UUID END AS uuid,
  CASE WHEN i % 7 = 1 THEN NULL ELSE
    ['apple', 'Banana', '', 'naïve', '日本語', '50%_off', 'a''b', repeat('x', 70)][i % 8 + 1]
    END AS s,
  CASE WHEN i % 7 = 2 THEN NULL ELSE ('\\x00\\xFF' || i::VARCHAR)::BLOB END AS blob,
  CASE WHEN i % 7 = 3 THEN NULL ELSE i % 3 = 0 END AS bool,
  ['sad', 'ok', 'happy'][i % 3 + 1]::mood AS mood,
  CASE WHEN i % 7 = 4 THEN NULL ELSE [i, NULL, i * 2][1:(i % 4)] END AS li,
  CASE WHEN i % 7 = 5 THEN NULL ELSE {'a': i % 10, 'b': 'n' || (i % 4)::VARCHAR,
    'c': {'d': (i % 5)::DOUBLE}} END AS st,
  MAP(['k' || (i % 3)::VARCHAR], [i]) AS m,
  [i, i + 1, i + 2]::INTEGER[3] AS arr,
  ('{"k": ' || i::VARCHAR || '}')::JSON AS js
FROM range({n}) t(i)
"""

DUCKDB_OPTIONS: tuple[tuple[str, str], ...] = (
    ("default", ""),
    ("v2", "PARQUET_VERSION v2"),
    ("uncompressed", "COMPRESSION uncompressed"),
    ("gzip", "COMPRESSION gzip"),
    ("zstd-v2", "COMPRESSION zstd, PARQUET_VERSION v2"),
    ("lz4", "COMPRESSION lz4"),
    ("lz4-raw", "COMPRESSION lz4_raw"),
    ("brotli", "COMPRESSION brotli"),
    ("small-row-groups", "ROW_GROUP_SIZE 64"),
    ("dict-limit", "DICTIONARY_SIZE_LIMIT 16, STRING_DICTIONARY_PAGE_SIZE_LIMIT 64"),
    ("no-dict", "DICTIONARY_COMPRESSION_RATIO_THRESHOLD -1, ROW_GROUP_SIZE 100"),
    ("bloom-tight", "BLOOM_FILTER_FALSE_POSITIVE_RATIO 0.001"),
    ("kv-field-ids", "FIELD_IDS 'auto', KV_METADATA {k: 'v'}"),
    ("tiny", ""),  # 6 rows: statistics then decide alone (see DUCKDB_ROWS)
)
DUCKDB_ROWS = {"tiny": 6}  # rows per variant; 300 unless named here


def write_duckdb(corpus: Corpus, con: Any | None = None) -> None:
    """DuckDB's COPY with each option set: types, encodings and layouts of DuckDB's writer."""
    try:
        import duckdb
    except ImportError:
        corpus.skipped.append("duckdb: not installed")
        return
    own = con is None
    db: Any = duckdb.connect() if con is None else con
    out = os.path.join(corpus.root, "duckdb")
    os.makedirs(out, exist_ok=True)
    try:
        db.execute("CREATE TYPE IF NOT EXISTS mood AS ENUM ('sad', 'ok', 'happy')")
        for name, options in DUCKDB_OPTIONS:
            select = DUCKDB_SELECT.replace("{n}", str(DUCKDB_ROWS.get(name, 300)))
            path = os.path.join(out, f"{name}.parquet")
            extra = f", {options}" if options else ""
            try:
                db.execute(f"COPY ({select}) TO '{path}' (FORMAT parquet{extra})")
            except duckdb.Error as error:
                corpus.skipped.append(f"duckdb {name}: {error}")
                continue
            corpus.files.append(CorpusFile(path, "duckdb", options or "defaults"))
    finally:
        if own:
            db.close()


# --------------------------------------------------------------------------------------------
# polars
# --------------------------------------------------------------------------------------------


def polars_frame(n: int = 300, seed: int = 3) -> Any:
    """polars' own types: Int128, Categorical, Enum, Array, Duration, Time, Decimal, ..."""
    import polars as pl

    rng = random.Random(seed)
    base = pl.from_arrow(
        types_table(n, seed).select(
            [
                "id",
                "i8",
                "i16",
                "i32",
                "i64",
                "u8",
                "u16",
                "u32",
                "u64",
                "f32",
                "f64",
                "dec38_10",
                "dec18_6",
                "date32",
                "time64_ns",
                "ts_ms",
                "ts_us_tz",
                "ts_ns",
                "s",
                "bin",
                "bool",
            ]
        )
    )
    assert isinstance(base, pl.DataFrame)
    words = ["red", "green", "blue", None]
    return base.with_columns(
        pl.Series("cat", [rng.choice(words) for _ in range(n)], dtype=pl.Categorical),
        pl.Series(
            "enum", [rng.choice(words) for _ in range(n)], dtype=pl.Enum(["red", "green", "blue"])
        ),
        pl.Series(
            "dur",
            [None if i % 5 == 0 else dt.timedelta(seconds=i * 37) for i in range(n)],
            dtype=pl.Duration("us"),
        ),
        pl.Series("arr", [[i, i + 1] for i in range(n)], dtype=pl.Array(pl.Int32, 2)),
        pl.Series(
            "lst",
            [None if i % 6 == 0 else list(range(i % 4)) for i in range(n)],
            dtype=pl.List(pl.Int64),
        ),
        pl.Series("st", [{"a": i % 10, "b": rng.choice(words)} for i in range(n)]),
        pl.Series("nul", [None] * n, dtype=pl.Null),
    )


POLARS_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("default", {}),
    ("uncompressed", {"compression": "uncompressed"}),
    ("snappy", {"compression": "snappy"}),
    ("gzip", {"compression": "gzip"}),
    ("lz4", {"compression": "lz4"}),
    ("brotli", {"compression": "brotli"}),
    ("no-stats", {"statistics": False}),
    ("full-stats", {"statistics": "full"}),
    ("small-groups-pages", {"row_group_size": 50, "data_page_size": 256}),
    ("via-pyarrow", {"use_pyarrow": True, "row_group_size": 100}),
)


def write_polars(corpus: Corpus) -> None:
    """polars' native writer (and its pyarrow path) with each option."""
    try:
        import polars  # noqa: F401
    except ImportError:
        corpus.skipped.append("polars: not installed")
        return
    import polars as pl

    frame = polars_frame()
    out = os.path.join(corpus.root, "polars")
    os.makedirs(out, exist_ok=True)
    # Int128 on its own: pyarrow cannot read the file, pqindex refuses all of it.
    wide = pl.DataFrame(
        {
            "id": range(50),
            "i128": pl.Series(
                [None if i % 9 == 0 else (i - 25) * 10**30 for i in range(50)], dtype=pl.Int128
            ),
        }
    )
    options_list = [("int128", {}), *POLARS_OPTIONS]
    for name, options in options_list:
        path = os.path.join(out, f"{name}.parquet")
        data = wide if name == "int128" else frame
        try:
            data.write_parquet(path, **options)
        except Exception as error:  # polars' errors share no useful base class
            corpus.skipped.append(f"polars {name}: {type(error).__name__}: {error}")
            continue
        corpus.files.append(CorpusFile(path, "polars", repr(options) if options else "defaults"))


# --------------------------------------------------------------------------------------------
# fastparquet
# --------------------------------------------------------------------------------------------


def fastparquet_frame(n: int = 300, seed: int = 4) -> Any:
    """A pandas frame of the types fastparquet writes (it writes from pandas only)."""
    import pandas as pd

    rng = random.Random(seed)
    stamps = pd.to_datetime([_micros(rng, 1950, 2100) * 1000 for _ in range(n)], unit="ns")
    return pd.DataFrame(
        {
            "id": np.arange(n, dtype=np.int64),
            "i8": np.array([rng.randint(-128, 127) for _ in range(n)], dtype=np.int8),
            "i32": np.array([rng.randint(-(2**31), 2**31 - 1) for _ in range(n)], np.int32),
            "u16": np.array([rng.randint(0, 65535) for _ in range(n)], dtype=np.uint16),
            "u64": np.array([rng.randint(0, 2**64 - 1) for _ in range(n)], dtype=np.uint64),
            "nullable": pd.array(_nulls(rng, list(range(n)), 0.3), dtype="Int64"),
            "f32": np.array(_floats(rng, n, 1e30), dtype=np.float32),
            "f64": np.array([math.nan if v is None else v for v in _floats(rng, n, 1e300)]),
            "s": [rng.choice(WORDS) if rng.random() > 0.1 else None for _ in range(n)],
            "b": [bytes([rng.randrange(256)]) * rng.randint(0, 3) for _ in range(n)],
            "bool": [rng.random() < 0.5 for _ in range(n)],
            "ts": stamps,
            "ts_tz": stamps.tz_localize("UTC").tz_convert("Asia/Tokyo"),
            "cat": pd.Categorical([rng.choice(["lo", "mid", "hi"]) for _ in range(n)]),
        }
    )


FASTPARQUET_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("default", {}),
    ("int96", {"times": "int96"}),
    ("row-groups", {"row_group_offsets": [0, 50, 120, 250]}),
    ("snappy", {"compression": "SNAPPY"}),
    ("gzip", {"compression": "GZIP"}),
    ("zstd", {"compression": "ZSTD"}),
    ("lz4", {"compression": "LZ4"}),
    ("brotli", {"compression": "BROTLI"}),
    ("no-stats", {"stats": False}),
    (
        "no-nulls",
        {"has_nulls": False, "object_encoding": {"s": "utf8", "b": "bytes", "cat": "utf8"}},
    ),
)


def write_fastparquet(corpus: Corpus) -> None:
    """fastparquet with each option; the frame loses what an option cannot write."""
    try:
        import fastparquet
    except ImportError:
        corpus.skipped.append("fastparquet: not installed")
        return
    frame = fastparquet_frame()
    out = os.path.join(corpus.root, "fastparquet")
    os.makedirs(out, exist_ok=True)
    for name, options in FASTPARQUET_OPTIONS:
        path = os.path.join(out, f"{name}.parquet")
        data = frame
        if not options.get("has_nulls", True):  # every column must then be free of NULLs
            data = frame.drop(columns=["nullable"]).assign(s=frame["s"].fillna("none"))
        try:
            fastparquet.write(path, data, **options)
        except Exception as error:  # fastparquet raises what its codecs raise
            corpus.skipped.append(f"fastparquet {name}: {type(error).__name__}: {error}")
            continue
        corpus.files.append(CorpusFile(path, "fastparquet", repr(options) if options else ""))


# --------------------------------------------------------------------------------------------
# The parquet crate, through pqindex.write
# --------------------------------------------------------------------------------------------

PQINDEX_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("default", {}),
    ("small-pages", {"row_group_size": 100, "page_row_limit": 16}),
    ("snappy-bloom", {"compression": "snappy", "bloom_filter_columns": ["s", "i64"]}),
    ("uncompressed", {"compression": "uncompressed", "row_group_size": 64}),
    ("gzip", {"compression": "gzip"}),
    ("lz4", {"compression": "lz4"}),
)


def write_pqindex(corpus: Corpus) -> None:
    """arrow-rs' writer, as pqindex.write drives it (page index always on)."""
    try:
        import pqindex
    except ImportError:
        corpus.skipped.append("pqindex.write: pqindex not importable")
        return
    out = os.path.join(corpus.root, "pqindex")
    os.makedirs(out, exist_ok=True)
    tables = {"types": types_table(300, 6), "nested": nested_table(150, 7)}
    for table_name, table in tables.items():
        for name, options in PQINDEX_OPTIONS:
            if table_name == "nested" and name not in ("default", "small-pages"):
                continue
            if "bloom_filter_columns" in options and table_name != "types":
                continue
            path = os.path.join(out, f"{table_name}-{name}.parquet")
            try:
                pqindex.write(table, path, **options)
            except Exception as error:  # a type the writer refuses is news, not a failure
                corpus.skipped.append(f"pqindex.write {table_name}-{name}: {error}")
                continue
            corpus.files.append(CorpusFile(path, "pqindex", f"{table_name} {options}"))


# --------------------------------------------------------------------------------------------
# Thrift compact protocol (the Parquet footer's encoding), enough to patch footers
# --------------------------------------------------------------------------------------------
#
# A struct is a list of Fields in file order. Values: bool, int (i8/i16/i32/i64), float,
# bytes (binary/string), ThriftList, and nested structs (list[Field]). Decoding then
# encoding a footer gives back the same bytes, which _rewrite_footer checks before editing.


class T:
    """Compact protocol type ids."""

    BOOL = 1  # BOOLEAN_TRUE; BOOLEAN_FALSE (2) is folded into it with the value
    BYTE = 3
    I16 = 4
    I32 = 5
    I64 = 6
    DOUBLE = 7
    BINARY = 8
    LIST = 9
    SET = 10
    MAP = 11
    STRUCT = 12


@dataclass
class Field:
    id: int
    type: int
    value: Any


@dataclass
class ThriftList:
    elem_type: int
    items: list[Any]


Struct = list[Field]


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _unzigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def _read_value(buf: bytes, pos: int, ttype: int) -> tuple[Any, int]:
    if ttype in (1, 2):  # a bool inside a list or map: one byte
        return buf[pos] == 1, pos + 1
    if ttype == T.BYTE:
        return struct.unpack_from("<b", buf, pos)[0], pos + 1
    if ttype in (T.I16, T.I32, T.I64):
        n, pos = _read_varint(buf, pos)
        return _unzigzag(n), pos
    if ttype == T.DOUBLE:
        return struct.unpack_from("<d", buf, pos)[0], pos + 8
    if ttype == T.BINARY:
        size, pos = _read_varint(buf, pos)
        return bytes(buf[pos : pos + size]), pos + size
    if ttype in (T.LIST, T.SET):
        header = buf[pos]
        pos += 1
        size, elem_type = header >> 4, header & 0x0F
        if size == 15:
            size, pos = _read_varint(buf, pos)
        items = []
        for _ in range(size):
            item, pos = _read_value(buf, pos, elem_type)
            items.append(item)
        return ThriftList(elem_type, items), pos
    if ttype == T.STRUCT:
        return decode_struct(buf, pos)
    raise ValueError(f"thrift type {ttype} not handled (maps do not occur in footers)")


def decode_struct(buf: bytes, pos: int = 0) -> tuple[Struct, int]:
    """A compact-protocol struct at ``pos``: its fields and the position after its STOP."""
    fields: Struct = []
    last = 0
    while True:
        header = buf[pos]
        pos += 1
        if header == 0:
            return fields, pos
        delta, ttype = header >> 4, header & 0x0F
        if delta:
            fid = last + delta
        else:
            raw, pos = _read_varint(buf, pos)
            fid = _unzigzag(raw)
        if ttype in (1, 2):
            fields.append(Field(fid, T.BOOL, ttype == 1))
        else:
            value, pos = _read_value(buf, pos, ttype)
            fields.append(Field(fid, ttype, value))
        last = fid


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


def _encode_value(ttype: int, value: Any) -> bytes:
    if ttype in (1, 2):
        return b"\x01" if value else b"\x02"
    if ttype == T.BYTE:
        return struct.pack("<b", value)
    if ttype in (T.I16, T.I32, T.I64):
        return _varint(_zigzag(value))
    if ttype == T.DOUBLE:
        return struct.pack("<d", value)
    if ttype == T.BINARY:
        return _varint(len(value)) + bytes(value)
    if ttype in (T.LIST, T.SET):
        size = len(value.items)
        head = (
            bytes([(size << 4) | value.elem_type])
            if size < 15
            else (bytes([0xF0 | value.elem_type]) + _varint(size))
        )
        return head + b"".join(_encode_value(value.elem_type, v) for v in value.items)
    if ttype == T.STRUCT:
        return encode_struct(value)
    raise ValueError(f"thrift type {ttype} not handled")


def encode_struct(fields: Struct) -> bytes:
    """The compact-protocol bytes of a struct (field headers as deltas when they fit)."""
    out = bytearray()
    last = 0
    for f in fields:
        wire = (1 if f.value else 2) if f.type == T.BOOL else f.type
        delta = f.id - last
        if 0 < delta <= 15:
            out.append((delta << 4) | wire)
        else:
            out.append(wire)
            out += _varint(_zigzag(f.id))
        if f.type != T.BOOL:
            out += _encode_value(f.type, f.value)
        last = f.id
    out.append(0)
    return bytes(out)


def get(fields: Struct, fid: int, default: Any = None) -> Any:
    return next((f.value for f in fields if f.id == fid), default)


def put(fields: Struct, fid: int, ttype: int, value: Any) -> None:
    """Sets field ``fid``, keeping the fields in id order (as writers emit them)."""
    for f in fields:
        if f.id == fid:
            f.type, f.value = ttype, value
            return
    fields.append(Field(fid, ttype, value))
    fields.sort(key=lambda f: f.id)


def drop(fields: Struct, fid: int) -> None:
    fields[:] = [f for f in fields if f.id != fid]


# Field ids of parquet.thrift used below.
FMD_SCHEMA, FMD_ROW_GROUPS, FMD_KV, FMD_CREATED_BY, FMD_COLUMN_ORDERS = 2, 4, 5, 6, 7
SE_TYPE, SE_REPETITION, SE_NAME, SE_CHILDREN, SE_CONVERTED, SE_LOGICAL = 1, 3, 4, 5, 6, 10
RG_COLUMNS = 1
CC_META, CC_COLUMN_INDEX_OFFSET, CC_COLUMN_INDEX_LENGTH = 3, 6, 7
CI_NULL_PAGES, CI_MIN_VALUES, CI_MAX_VALUES, CI_NULL_COUNTS = 1, 2, 3, 5
CM_ENCODINGS = 2
CM_PATH, CM_TOTAL_COMPRESSED, CM_DATA_PAGE, CM_DICT_PAGE, CM_STATS = 3, 7, 9, 11, 12
ST_MAX, ST_MIN, ST_MAX_VALUE, ST_MIN_VALUE = 1, 2, 5, 6
REQUIRED, OPTIONAL, REPEATED = 0, 1, 2
CONVERTED_MAP, CONVERTED_MAP_KEY_VALUE = 1, 2
PHYSICAL_INT32 = 1


def _rewrite_footer(path: str, edit: Callable[[Struct], None]) -> None:
    """Decodes the footer of ``path``, lets ``edit`` change it, and writes it back."""
    _rewrite_file(path, lambda meta, data, append: edit(meta))


def _rewrite_file(path: str, edit: Callable[[Struct, bytes, Callable[[bytes], int]], None]) -> None:
    """Like _rewrite_footer, but ``edit`` also sees the file's bytes and may ``append``
    structures between the old body and the footer (``append`` returns their offset)."""
    data = Path(path).read_bytes()
    assert data[-4:] == b"PAR1", path
    length = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - length
    footer = data[start : start + length]
    meta, end = decode_struct(footer)
    assert end == length and encode_struct(meta) == footer, "thrift round trip changed bytes"
    body = bytearray(data[:start])

    def append(extra: bytes) -> int:
        at = len(body)
        body.extend(extra)
        return at

    edit(meta, data, append)
    new = encode_struct(meta)
    Path(path).write_bytes(bytes(body) + new + len(new).to_bytes(4, "little") + b"PAR1")


def _chunks(meta: Struct) -> Iterator[Struct]:
    """Every column chunk's ColumnMetaData."""
    for row_group in get(meta, FMD_ROW_GROUPS).items:
        for chunk in get(row_group, RG_COLUMNS).items:
            yield get(chunk, CC_META)


def _schema(meta: Struct) -> list[Struct]:
    elements: list[Struct] = get(meta, FMD_SCHEMA).items
    return elements


def _named(meta: Struct, name: str) -> int:
    return next(i for i, e in enumerate(_schema(meta)) if get(e, SE_NAME) == name.encode())


def _set_paths(meta: Struct, old: list[str], new: list[str]) -> None:
    for chunk in _chunks(meta):
        path = get(chunk, CM_PATH)
        if [p.decode() for p in path.items] == old:
            path.items = [p.encode() for p in new]


# --------------------------------------------------------------------------------------------
# Crafted files
# --------------------------------------------------------------------------------------------

# Julian day of 1970-01-01; date.toordinal() + JULIAN_OFFSET is a date's Julian day.
JULIAN_EPOCH = 2_440_588
JULIAN_OFFSET = JULIAN_EPOCH - EPOCH_DATE.toordinal()
INT96_MOMENTS = (  # (label, date, microseconds into the day)
    ("in range", dt.date(2001, 2, 3), 45_296_789_012),
    ("in range", dt.date(1970, 1, 1), 0),
    ("year 1500", dt.date(1500, 6, 15), 3_600_000_000),
    ("year 1", dt.date(1, 1, 1), 1),
    ("year 1677 just before ns range", dt.date(1677, 9, 20), 0),
    ("year 2262 just after ns range", dt.date(2262, 4, 12), 0),
    ("year 3000", dt.date(3000, 12, 31), 86_399_999_999),
    ("year 9999", dt.date(9999, 12, 31), 86_399_999_999),
)


def _write_expected(path: str, table: pa.Table) -> None:
    with pa.OSFile(path + EXPECTED_SUFFIX, "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)


def _crafted(corpus: Corpus, name: str, note: str, expected: pa.Table | None = None) -> str:
    path = os.path.join(corpus.root, "crafted", name + ".parquet")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    corpus.files.append(CorpusFile(path, "crafted", note))
    if expected is not None:
        _write_expected(path, expected)
    return path


def craft_int96(corpus: Corpus) -> None:
    """INT96 (8 bytes nanoseconds of the day, 4 bytes Julian day, little-endian) with years
    1 to 9999: pyarrow writes in-range placeholders as PLAIN, uncompressed, without
    statistics; each placeholder's 12 bytes are then found in the file and replaced. Years
    outside 1677-2262 do not fit 64-bit nanoseconds; a reader must not wrap them."""
    n = len(INT96_MOMENTS)
    placeholders = [
        dt.datetime(2000, 1, 1) + dt.timedelta(days=i, microseconds=123_457 + i) for i in range(n)
    ]
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int32()),
            "ts": pa.array(placeholders, pa.timestamp("ns")),
            "label": [m[0] for m in INT96_MOMENTS],
        }
    )
    micros = []
    for moment in INT96_MOMENTS:
        days = moment[1].toordinal() - EPOCH_DATE.toordinal()
        micros.append(days * 86_400_000_000 + moment[2])
    expected = table.set_column(1, "ts", pa.array(micros, pa.timestamp("us")))
    path = _crafted(corpus, "int96-out-of-range", "INT96 years 1..9999", expected)
    pq.write_table(
        table,
        path,
        use_deprecated_int96_timestamps=True,
        use_dictionary=False,
        compression="none",
        write_statistics=False,
        store_schema=False,
    )
    data = bytearray(Path(path).read_bytes())
    for placeholder, (_, date, in_day_us) in zip(placeholders, INT96_MOMENTS, strict=True):
        nanos = (
            (placeholder - dt.datetime.combine(placeholder.date(), dt.time()))
            // dt.timedelta(microseconds=1)
            * 1000
        )
        julian = placeholder.date().toordinal() + JULIAN_OFFSET
        old = struct.pack("<qI", nanos, julian)
        assert data.count(old) == 1, "placeholder INT96 not found exactly once"
        at = data.index(old)
        data[at : at + 12] = struct.pack("<qI", in_day_us * 1000, date.toordinal() + JULIAN_OFFSET)
    Path(path).write_bytes(bytes(data))


def _legacy_list_base(
    corpus: Corpus, name: str, note: str, table: pa.Table
) -> tuple[str, pa.Table]:
    path = _crafted(corpus, name, note, table)
    pq.write_table(table, path, store_schema=False, row_group_size=40, **SMALL_PAGES)
    return path, table


def craft_legacy_lists(corpus: Corpus) -> None:
    """Lists in the shapes the spec's backward-compatibility rules describe. Each starts as
    a 3-level list whose elements are required, whose levels equal those of the 2-level
    form, so only the schema (and the chunks' paths) change, not the pages."""
    rng = random.Random(11)
    n = 120

    def lists(make: Callable[[], Any], nullable: bool) -> list[Any]:
        return [
            None if nullable and rng.random() < 0.15 else [make() for _ in range(rng.randint(0, 4))]
            for _ in range(n)
        ]

    ids = pa.array(range(n), pa.int64())
    # 1. optional group a (LIST) { repeated int32 array; }
    two_level = pa.table(
        {
            "id": ids,
            "a": pa.array(
                lists(lambda: rng.randint(-50, 50), True),
                pa.list_(pa.field("element", pa.int32(), nullable=False)),
            ),
        }
    )
    path, _ = _legacy_list_base(
        corpus,
        "list-2level-primitive",
        "optional group a (LIST) { repeated int32 array }",
        two_level,
    )

    def two_level_primitive(meta: Struct) -> None:
        schema = _schema(meta)
        at = _named(meta, "a")
        del schema[at + 1]  # the repeated group "list"
        element = schema[at + 1]
        put(element, SE_REPETITION, T.I32, REPEATED)
        put(element, SE_NAME, T.BINARY, b"array")
        _set_paths(meta, ["a", "list", "element"], ["a", "array"])

    _rewrite_footer(path, two_level_primitive)

    # 2. repeated int32 a; (a bare repeated field: a required list of required elements)
    bare = pa.table(
        {
            "id": ids,
            "a": pa.array(
                lists(lambda: rng.randint(-50, 50), False),
                pa.list_(pa.field("element", pa.int32(), nullable=False)),
            ),
        }
    )
    bare = bare.cast(
        pa.schema([bare.schema.field("id"), bare.schema.field("a").with_nullable(False)])
    )
    path, _ = _legacy_list_base(corpus, "list-bare-repeated", "repeated int32 a", bare)

    def bare_repeated(meta: Struct) -> None:
        schema = _schema(meta)
        at = _named(meta, "a")
        leaf = schema[at + 2]
        put(leaf, SE_REPETITION, T.I32, REPEATED)
        put(leaf, SE_NAME, T.BINARY, b"a")
        schema[at : at + 3] = [leaf]
        _set_paths(meta, ["a", "list", "element"], ["a"])

    _rewrite_footer(path, bare_repeated)

    # 3. optional group a (LIST) { repeated group array { required int32 x; } } and the
    #    "a_tuple" spelling: a one-field repeated group so named is the element itself.
    item = pa.struct([pa.field("x", pa.int32(), nullable=False)])
    one_field = pa.table(
        {
            "id": ids,
            "a": pa.array(
                lists(lambda: {"x": rng.randint(0, 9)}, True),
                pa.list_(pa.field("element", item, nullable=False)),
            ),
        }
    )
    for group in ("array", "a_tuple"):
        path, _ = _legacy_list_base(
            corpus,
            f"list-2level-{group.replace('_', '-')}",
            f"optional group a (LIST) {{ repeated group {group} {{ required int32 x }} }}",
            one_field,
        )

        def one_field_group(meta: Struct, group: str = group) -> None:
            schema = _schema(meta)
            at = _named(meta, "a")
            del schema[at + 1]
            element = schema[at + 1]
            put(element, SE_REPETITION, T.I32, REPEATED)
            put(element, SE_NAME, T.BINARY, group.encode())
            _set_paths(meta, ["a", "list", "element", "x"], ["a", group, "x"])

        _rewrite_footer(path, one_field_group)

    # 4. optional group a (LIST) { repeated group element { required int32 x; required
    #    binary y (UTF8); } }: a repeated group of two fields is the element.
    item2 = pa.struct(
        [pa.field("x", pa.int32(), nullable=False), pa.field("y", pa.string(), nullable=False)]
    )
    two_fields = pa.table(
        {
            "id": ids,
            "a": pa.array(
                lists(lambda: {"x": rng.randint(0, 9), "y": rng.choice(WORDS)}, True),
                pa.list_(pa.field("element", item2, nullable=False)),
            ),
        }
    )
    path, _ = _legacy_list_base(
        corpus, "list-2level-struct", "repeated group of two fields is the element", two_fields
    )

    def two_field_group(meta: Struct) -> None:
        schema = _schema(meta)
        at = _named(meta, "a")
        del schema[at + 1]
        put(schema[at + 1], SE_REPETITION, T.I32, REPEATED)
        for leaf in ("x", "y"):
            _set_paths(meta, ["a", "list", "element", leaf], ["a", "element", leaf])

    _rewrite_footer(path, two_field_group)


def craft_legacy_maps(corpus: Corpus) -> None:
    """Maps as older writers annotated them: the key-value group MAP_KEY_VALUE (and the
    map only by converted type, no logical type), or MAP_KEY_VALUE on the outer group in
    place of MAP, which the spec says to read as MAP."""
    rng = random.Random(12)
    n = 100
    maps = [
        None
        if rng.random() < 0.15
        else [
            (f"k{j}", None if rng.random() < 0.2 else rng.randint(0, 99))
            for j in range(rng.randint(0, 3))
        ]
        for _ in range(n)
    ]
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "m": pa.array(maps, pa.map_(pa.string(), pa.int32())),
        }
    )
    for variant in ("inner", "outer"):
        path = _crafted(
            corpus,
            f"map-key-value-{variant}",
            "key_value group annotated MAP_KEY_VALUE"
            if variant == "inner"
            else "outer group annotated MAP_KEY_VALUE instead of MAP",
            table,
        )
        pq.write_table(table, path, store_schema=False, row_group_size=40)

        def annotate(meta: Struct, variant: str = variant) -> None:
            schema = _schema(meta)
            at = _named(meta, "m")
            outer, inner = schema[at], schema[at + 1]
            drop(outer, SE_LOGICAL)
            if variant == "inner":
                put(outer, SE_CONVERTED, T.I32, CONVERTED_MAP)
                put(inner, SE_CONVERTED, T.I32, CONVERTED_MAP_KEY_VALUE)
                put(inner, SE_NAME, T.BINARY, b"map")
                for leaf in ("key", "value"):
                    _set_paths(meta, ["m", "key_value", leaf], ["m", "map", leaf])
            else:
                put(outer, SE_CONVERTED, T.I32, CONVERTED_MAP_KEY_VALUE)
                drop(inner, SE_CONVERTED)

        _rewrite_footer(path, annotate)


def craft_dictionary_offsets(corpus: Corpus) -> None:
    """Dictionary pages that the footer mislocates as old writers did: ``data_page_offset``
    at the dictionary page and ``dictionary_page_offset`` 0, or absent."""
    table = narrow_table(300, 13)
    for variant in ("zero", "absent"):
        path = _crafted(
            corpus,
            f"dict-page-offset-{variant}",
            f"dictionary_page_offset {variant}, data_page_offset at the dictionary page",
            table,
        )
        pq.write_table(table, path, row_group_size=100, **SMALL_PAGES)

        def mislocate(meta: Struct, variant: str = variant) -> None:
            for chunk in _chunks(meta):
                dictionary = get(chunk, CM_DICT_PAGE)
                if dictionary is None:
                    continue
                put(chunk, CM_DATA_PAGE, T.I64, dictionary)
                if variant == "zero":
                    put(chunk, CM_DICT_PAGE, T.I64, 0)
                else:
                    drop(chunk, CM_DICT_PAGE)

        _rewrite_footer(path, mislocate)


def craft_short_chunks(corpus: Corpus) -> None:
    """Every column chunk's ``total_compressed_size`` a few bytes short of its pages, so
    the last page runs past the declared end (seen in files of old parquet-mr writers)."""
    table = narrow_table(300, 14)
    for codec in ("none", "snappy"):
        path = _crafted(
            corpus,
            f"chunk-size-short-{codec}",
            f"total_compressed_size 3 bytes short ({codec})",
            table,
        )
        pq.write_table(table, path, compression=codec, row_group_size=100, **SMALL_PAGES)

        def shorten(meta: Struct) -> None:
            for chunk in _chunks(meta):
                put(chunk, CM_TOTAL_COMPRESSED, T.I64, get(chunk, CM_TOTAL_COMPRESSED) - 3)

        _rewrite_footer(path, shorten)


def _signed_bytes_key(value: bytes) -> list[int]:
    return [b - 256 if b > 127 else b for b in value]


def craft_deprecated_statistics(corpus: Corpus) -> None:
    """Statistics only in the deprecated ``min``/``max`` fields, ordered as old parquet-mr
    ordered them: byte arrays by signed bytes, unsigned integers as signed. The spec says
    such statistics hold only for signed types; a reader trusting them for strings or
    unsigned columns prunes rows that match. ``created_by`` names parquet-mr 1.6.0, whose
    binary statistics readers know to distrust (PARQUET-251)."""
    strings = ["a", "b", "é", "zz", "\u00ff", "m"] * 10
    uints = [1, 2, 3_000_000_000, 7, 4_294_967_295, 10] * 10
    table = pa.table(
        {
            "id": pa.array(range(len(strings)), pa.int64()),
            "s": pa.array(strings, pa.string()),
            "u": pa.array(uints, pa.uint32()),
        }
    )
    path = _crafted(corpus, "stats-deprecated-signed", "deprecated min/max in signed order", table)
    pq.write_table(table, path, store_schema=False, use_dictionary=False)
    encoded = {
        "s": [s.encode() for s in strings],
        "u": [struct.pack("<i", v - 2**32 if v >= 2**31 else v) for v in uints],
    }

    def deprecate(meta: Struct) -> None:
        drop(meta, FMD_COLUMN_ORDERS)
        put(meta, FMD_CREATED_BY, T.BINARY, b"parquet-mr version 1.6.0 (build abcd)")
        for chunk in _chunks(meta):
            name = get(chunk, CM_PATH).items[0].decode()
            stats = get(chunk, CM_STATS)
            if name not in encoded or stats is None:
                continue
            values = encoded[name]
            key = _signed_bytes_key if name == "s" else (lambda b: struct.unpack("<i", b)[0])
            drop(stats, ST_MIN_VALUE)
            drop(stats, ST_MAX_VALUE)
            put(stats, ST_MAX, T.BINARY, max(values, key=key))
            put(stats, ST_MIN, T.BINARY, min(values, key=key))

    _rewrite_footer(path, deprecate)


def craft_column_index_null_pages(corpus: Corpus) -> None:
    """The column index parquet-mr 1.13 writes for REQUIRED columns without statistics
    (as in parquet-testing's ``datapage_v1-*-checksum.parquet``): every page flagged a
    null page, empty min/max, NULL counts -1, and no chunk statistics. A REQUIRED column
    has no NULL pages, so the flags are false; a reader must not prune with them."""
    rng = random.Random(15)
    n = 600
    schema = pa.schema(
        [pa.field("a", pa.int32(), nullable=False), pa.field("b", pa.int32(), nullable=False)]
    )
    table = pa.table(
        {
            "a": [rng.randint(-(2**31), 2**31 - 1) for _ in range(n)],
            "b": [rng.randint(-1000, 1000) for _ in range(n)],
        },
        schema=schema,
    )
    path = _crafted(
        corpus,
        "column-index-null-pages-required",
        "parquet-mr's column index for REQUIRED columns: all pages 'null pages'",
        table,
    )
    pq.write_table(
        table,
        path,
        write_page_index=True,
        use_dictionary=False,
        row_group_size=300,
        data_page_size=512,
        write_batch_size=100,
        compression="none",
    )

    def null_pages(meta: Struct, data: bytes, append: Callable[[bytes], int]) -> None:
        for row_group in get(meta, FMD_ROW_GROUPS).items:
            for chunk in get(row_group, RG_COLUMNS).items:
                offset, length = (
                    get(chunk, CC_COLUMN_INDEX_OFFSET),
                    get(chunk, CC_COLUMN_INDEX_LENGTH),
                )
                index, _ = decode_struct(data[offset : offset + length])
                pages = len(get(index, CI_NULL_PAGES).items)
                put(index, CI_NULL_PAGES, T.LIST, ThriftList(T.BOOL, [True] * pages))
                put(index, CI_MIN_VALUES, T.LIST, ThriftList(T.BINARY, [b""] * pages))
                put(index, CI_MAX_VALUES, T.LIST, ThriftList(T.BINARY, [b""] * pages))
                put(index, CI_NULL_COUNTS, T.LIST, ThriftList(T.I64, [-1] * pages))
                encoded = encode_struct(index)
                put(chunk, CC_COLUMN_INDEX_OFFSET, T.I64, append(encoded))
                put(chunk, CC_COLUMN_INDEX_LENGTH, T.I32, len(encoded))
                drop(get(chunk, CC_META), CM_STATS)

    _rewrite_file(path, null_pages)


def craft_thrift_list_types(corpus: Corpus) -> None:
    """Footer lists whose declared element type differs from parquet.thrift's: each
    chunk's ``encodings`` (list<i32>) declared list<i16>, as some writers emitted (and as
    parquet-testing's ``dict-page-offset-zero.parquet`` has). Compact protocol encodes
    i16 and i32 alike, so only the header byte changes; readers in other languages take
    the values."""
    table = narrow_table(200, 16)
    path = _crafted(corpus, "thrift-list-i16-encodings", "encodings declared list<i16>", table)
    pq.write_table(table, path, row_group_size=100)

    def retype(meta: Struct) -> None:
        for chunk in _chunks(meta):
            get(chunk, CM_ENCODINGS).elem_type = T.I16

    _rewrite_footer(path, retype)


def write_crafted(corpus: Corpus) -> None:
    """Layouts no writer here produces, made by patching pyarrow files."""
    craft_int96(corpus)
    craft_legacy_lists(corpus)
    craft_legacy_maps(corpus)
    craft_dictionary_offsets(corpus)
    craft_short_chunks(corpus)
    craft_deprecated_statistics(corpus)
    craft_column_index_null_pages(corpus)
    craft_thrift_list_types(corpus)


# --------------------------------------------------------------------------------------------

WRITERS: dict[str, Callable[[Corpus], None]] = {
    "pyarrow": write_pyarrow,
    "duckdb": write_duckdb,
    "polars": write_polars,
    "fastparquet": write_fastparquet,
    "pqindex": write_pqindex,
    "crafted": write_crafted,
}


def write_corpus(root: str | os.PathLike[str], writers: tuple[str, ...] | None = None) -> Corpus:
    """Writes the corpus under ``root`` (a subdirectory per writer); returns what it wrote."""
    corpus = Corpus(os.fspath(root))
    os.makedirs(corpus.root, exist_ok=True)
    for name, write in WRITERS.items():
        if writers is None or name in writers:
            write(corpus)
    return corpus
