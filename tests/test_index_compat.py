"""Files with embedded indexes stay ordinary Parquet: pyarrow, DuckDB, polars, DataFusion
and Spark read the same schema and the same rows from a file before and after indexes of
every kind (distinct, bloom and aggregates at file, row-group and page granularity, hll,
page_minmax) were added,
with and without filters; the footer still parses and describes the same row groups,
column chunks, statistics, page indexes and bloom filters (data pages are not re-encoded).

Sources are written by pyarrow, DuckDB and ``pqindex.write``, and (in the Spark test) by
Spark itself.
"""

from __future__ import annotations

import datetime as dt
import math
import shutil
import warnings
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pqindex
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

N_ROWS = 8_000
WRITERS = ("pyarrow", "duckdb", "pqindex")
INDEXED_COLUMNS = ("id", "k", "s", "d", "d9", "f", "u32", "day", "ts", "bin", "b")
GRANULARITIES = ("file", "row_group", "page")


# --------------------------------------------------------------------------------------------
# Data and files
# --------------------------------------------------------------------------------------------


@cache
def make_table(spark_types: bool = False) -> pa.Table:
    """Seeded rows of the types indexes cover. ``spark_types``: only types Spark writes (no
    unsigned ints, no second-unit timestamps)."""
    rng = np.random.default_rng(77)
    n = N_ROWS
    f = [float(v) for v in np.round(rng.normal(0, 50, n), 2)]
    for i in range(0, n, 89):
        f[i] = -0.0
    for i in range(3, n, 97):
        f[i] = 0.0
    for i in range(5, n, 113):
        f[i] = math.nan
    columns: dict[str, pa.Array] = {
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "k": pa.array(rng.permutation(n).astype(np.int64) * 3),
        "s": pa.array(
            [
                None if i % 11 == 0 else f"s{int(v):03d}"
                for i, v in enumerate(rng.integers(0, 300, n))
            ],
            pa.string(),
        ),
        "d": pa.array(
            [Decimal(int(v) * 1_000_000_007).scaleb(-2) for v in rng.integers(-(10**9), 10**9, n)],
            pa.decimal128(20, 2),
        ),
        "d9": pa.array(
            [Decimal(int(v)).scaleb(-2) for v in rng.integers(-(10**6), 10**6, n)],
            pa.decimal128(9, 2),
        ),
        "f": pa.array(f, pa.float64()),
        "u32": pa.array(rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)),
        "day": pa.array(
            [dt.date(2010, 1, 1) + dt.timedelta(days=int(v)) for v in rng.integers(0, 5000, n)],
            pa.date32(),
        ),
        "ts": pa.array(
            [
                dt.datetime(2022, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=int(v))
                for v in rng.integers(0, 10**13, n)
            ],
            pa.timestamp("us", tz="UTC"),
        ),
        "bin": pa.array(
            [bytes(rng.integers(0, 256, int(rng.integers(0, 5)))) for _ in range(n)], pa.binary()
        ),
        "b": pa.array(
            [None if i % 7 == 0 else bool(v) for i, v in enumerate(rng.integers(0, 2, n))]
        ),
    }
    if spark_types:
        columns["u32"] = columns["u32"].cast(pa.int64())
    return pa.table(columns)


# distinct, bloom and aggregates at three granularities, hll, page_minmax.
INDEXES_PER_COLUMN = 11


def every_index(columns: tuple[str, ...] = INDEXED_COLUMNS) -> list[Any]:
    indexes: list[Any] = []
    for c in columns:
        indexes += [pqindex.DistinctIndex(c, g) for g in GRANULARITIES]
        indexes += [pqindex.BloomIndex(c, g) for g in GRANULARITIES]
        indexes += [pqindex.AggregateIndex(c, g) for g in GRANULARITIES]
        indexes.append(pqindex.HllIndex(c))
        indexes.append(pqindex.MinMaxIndex(c))
    return indexes


def write_source(writer: str, table: pa.Table, path: Path) -> None:
    if writer == "pyarrow":
        pq.write_table(
            table,
            path,
            row_group_size=2_000,
            max_rows_per_page=300,
            write_page_index=True,
            bloom_filter_options={"s": {"ndv": 300, "fpp": 0.01}},
        )
    elif writer == "duckdb":
        import duckdb

        con = duckdb.connect()
        try:
            con.register("source_table", table)
            con.execute(
                f"COPY (SELECT * FROM source_table) TO '{path}' "
                "(FORMAT parquet, ROW_GROUP_SIZE 2048, DATA_PAGE_SIZE_LIMIT 4096)"
            )
        finally:
            con.close()
    elif writer == "pqindex":
        pqindex.write(
            table, path, row_group_size=2_000, page_row_limit=300, bloom_filter_columns=["s"]
        )
    else:
        raise ValueError(writer)


@pytest.fixture(scope="module", params=WRITERS)
def pair(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """(the file as its writer left it, a copy with every kind of index on every column)."""
    root = tmp_path_factory.mktemp(f"compat-{request.param}")
    original, indexed = root / "original.parquet", root / "indexed.parquet"
    write_source(request.param, make_table(), original)
    shutil.copyfile(original, indexed)
    report = pqindex.add_indexes(indexed, every_index())
    assert len(report["indexes"]) == INDEXES_PER_COLUMN * len(INDEXED_COLUMNS)
    assert all(c["ok"] for c in pqindex.verify(indexed))
    assert indexed.stat().st_size > original.stat().st_size
    return original, indexed


def predicates() -> list[tuple[str, list[Any]]]:
    """(SQL, the same as pyarrow filters) pairs; the first ones match rows."""
    t = make_table()
    k = t.column("k")[1234].as_py()
    s = t.column("s")[4321].as_py()
    d9 = t.column("d9")[77].as_py()
    day = t.column("day")[99].as_py()
    return [
        (f"k = {k}", [("k", "=", k)]),
        (f"k IN ({k}, 1, 7)", [("k", "in", [k, 1, 7])]),
        (f"s = '{s}'", [("s", "=", s)]),
        (f"s = '{s}' OR k = {k}", [[("s", "=", s)], [("k", "=", k)]]),
        (f"d9 = {d9}", [("d9", "=", d9)]),
        ("f = 0.0", [("f", "=", 0.0)]),
        (f"day = DATE '{day.isoformat()}'", [("day", "=", day)]),
        ("k > 20000 AND k < 20100", [("k", ">", 20000), ("k", "<", 20100)]),
        ("k = 1", [("k", "=", 1)]),  # no row: k is a multiple of 3
        ("s = 'nope'", [("s", "=", "nope")]),
    ]


SQL_WHERES = [sql for sql, _ in predicates()]


# --------------------------------------------------------------------------------------------
# Comparing tables
# --------------------------------------------------------------------------------------------

NAN_SENTINEL = -9.87e300


def canonical(table: pa.Table) -> pa.Table:
    """Sorted by id, NaN replaced by a sentinel (NaN != NaN in Arrow's equality), schema
    metadata dropped."""
    columns = []
    for field in table.schema:
        column = table.column(field.name)
        if pa.types.is_string_view(field.type) or pa.types.is_large_string(field.type):
            column = column.cast(pa.string())
        elif pa.types.is_binary_view(field.type) or pa.types.is_large_binary(field.type):
            column = column.cast(pa.binary())
        if pa.types.is_floating(field.type):
            column = pc.if_else(pc.is_nan(column), pa.scalar(NAN_SENTINEL, field.type), column)
        columns.append(column)
    return pa.table(columns, names=table.column_names).sort_by("id")


def assert_same(before: pa.Table, after: pa.Table, what: str) -> None:
    assert after.schema.remove_metadata() == before.schema.remove_metadata(), what
    assert after.num_rows == before.num_rows, what
    a, b = canonical(before), canonical(after)
    if not a.equals(b):
        differing = [n for n in a.column_names if not a.column(n).equals(b.column(n))]
        pytest.fail(f"{what}: same row count, different values in {differing}")


def expected_ids(where: str) -> list[int]:
    """The ids matching ``where`` according to DuckDB over the in-memory table."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute("SET TimeZone='UTC'")
        con.register("t", make_table())
        return sorted(r[0] for r in con.sql(f"SELECT id FROM t WHERE {where}").fetchall())
    finally:
        con.close()


# --------------------------------------------------------------------------------------------
# The footer: still Parquet, same row groups and column chunks
# --------------------------------------------------------------------------------------------


def _nan_free(facts: dict[str, Any]) -> dict[str, Any]:
    """NaN statistics (parquet-mr writes them) as text, so equal dicts compare equal."""
    return {k: "NaN" if isinstance(v, float) and math.isnan(v) else v for k, v in facts.items()}


def chunk_facts(md: pq.FileMetaData) -> list[dict[str, Any]]:
    facts = []
    for r in range(md.num_row_groups):
        rg = md.row_group(r)
        facts.append({"num_rows": rg.num_rows, "total_byte_size": rg.total_byte_size})
        for c in range(rg.num_columns):
            col = rg.column(c)
            stats = col.statistics
            facts.append(
                {
                    "path": col.path_in_schema,
                    "physical_type": col.physical_type,
                    "compression": col.compression,
                    "encodings": sorted(col.encodings),
                    "data_page_offset": col.data_page_offset,
                    "dictionary_page_offset": col.dictionary_page_offset,
                    "total_compressed_size": col.total_compressed_size,
                    "total_uncompressed_size": col.total_uncompressed_size,
                    "num_values": col.num_values,
                    "has_column_index": col.has_column_index,
                    "has_offset_index": col.has_offset_index,
                    "statistics": None if stats is None else _nan_free(stats.to_dict()),
                }
            )
    return facts


def footer_start(path: Path) -> int:
    data = path.read_bytes()
    return len(data) - 8 - int.from_bytes(data[-8:-4], "little")


def test_the_footer_describes_the_same_file(pair: tuple[Path, Path]) -> None:
    original, indexed = pair
    before, after = pq.ParquetFile(original).metadata, pq.ParquetFile(indexed).metadata
    assert (after.num_rows, after.num_row_groups, after.num_columns) == (
        before.num_rows,
        before.num_row_groups,
        before.num_columns,
    )
    assert after.schema.equals(before.schema)
    assert pq.ParquetFile(indexed).schema_arrow == pq.ParquetFile(original).schema_arrow
    # Row groups and column chunks: same sizes and offsets (pages were not re-encoded).
    assert chunk_facts(after) == chunk_facts(before)
    # Key/value metadata: the writer's entries kept as they were, plus the locators.
    kv_before = dict(before.metadata or {})
    kv_after = dict(after.metadata or {})
    added = {k for k in kv_after if k.startswith(b"pqindex.index.")}
    assert len(added) == INDEXES_PER_COLUMN * len(INDEXED_COLUMNS)
    assert {k: v for k, v in kv_after.items() if k not in added} == kv_before
    # The Parquet bytes before the index area are the original ones.
    body = footer_start(original)
    assert indexed.read_bytes()[:body] == original.read_bytes()[:body]
    # Page indexes and Parquet bloom filters are still where the footer says.
    md_before, md_after = pqindex.read_metadata(original), pqindex.read_metadata(indexed)
    assert md_after.pages().equals(md_before.pages())
    assert md_after.columns().equals(md_before.columns())
    assert md_after.row_groups().equals(md_before.row_groups())


# A compact-protocol reader for the footer, to compare every Thrift field.


def parse_footer(data: bytes) -> dict[int, Any]:
    """The footer's FileMetaData as nested {field id: value} (Thrift compact protocol)."""
    length = int.from_bytes(data[-8:-4], "little")
    buf = data[-8 - length : -8]
    pos = 0

    def varint() -> int:
        nonlocal pos
        shift = result = 0
        while True:
            byte = buf[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result
            shift += 7

    def zigzag() -> int:
        v = varint()
        return (v >> 1) ^ -(v & 1)

    def value(kind: int) -> Any:
        nonlocal pos
        if kind in (1, 2):
            return kind == 1
        if kind == 3:
            pos += 1
            return buf[pos - 1]
        if kind in (4, 5, 6):
            return zigzag()
        if kind == 7:
            pos += 8
            return bytes(buf[pos - 8 : pos])
        if kind == 8:
            size = varint()
            pos += size
            return bytes(buf[pos - size : pos])
        if kind in (9, 10):
            header = buf[pos]
            pos += 1
            size, element = header >> 4, header & 15
            if size == 15:
                size = varint()
            if element in (1, 2):
                pos += size
                return [b == 1 for b in buf[pos - size : pos]]
            return [value(element) for _ in range(size)]
        if kind == 11:
            size = varint()
            if not size:
                return []
            types = buf[pos]
            pos += 1
            return [(value(types >> 4), value(types & 15)) for _ in range(size)]
        if kind == 12:
            return struct()
        raise ValueError(f"thrift type {kind}")

    def struct() -> dict[int, Any]:
        nonlocal pos
        out: dict[int, Any] = {}
        last = 0
        while True:
            header = buf[pos]
            pos += 1
            if header == 0:
                return out
            delta = header >> 4
            last = last + delta if delta else zigzag()
            out[last] = value(header & 15)

    return struct()


def lost_fields(before: Any, after: Any, path: str = "") -> list[str]:
    """Fields present in ``before`` and missing or different in ``after`` (lists of
    encodings compare as sets; fields ``after`` adds are fine)."""
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for key, value in before.items():
            if key not in after:
                out.append(f"{path}/{key} dropped")
            else:
                out += lost_fields(value, after[key], f"{path}/{key}")
        return out
    if isinstance(before, list) and isinstance(after, list):
        if len(before) != len(after):
            return [f"{path}: {len(before)} elements, now {len(after)}"]
        if path.endswith("/3/2"):  # ColumnMetaData.encodings: a set
            return [] if sorted(before) == sorted(after) else [f"{path} changed"]
        return [
            e
            for i, (x, y) in enumerate(zip(before, after, strict=True))
            for e in lost_fields(x, y, f"{path}[{i}]")
        ]
    return [] if before == after else [f"{path} changed"]


def test_the_footer_keeps_every_field(pair: tuple[Path, Path]) -> None:
    """Only the key/value entries change: every other field of the footer survives as its
    writer wrote it, fields arrow-rs does not know (DuckDB's Statistics field 9) and the
    ones it would drop (encoding_stats, deprecated min/max) included."""
    original, indexed = pair
    before, after = parse_footer(original.read_bytes()), parse_footer(indexed.read_bytes())
    before.pop(5, None), after.pop(5, None)  # key/value metadata: compared above
    assert lost_fields(before, after) == []
    assert before == after


def test_dropping_every_index_gives_the_original_file_back(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    original, indexed = pair
    copy = tmp_path / "copy.parquet"
    shutil.copyfile(indexed, copy)
    pqindex.drop_indexes(copy)
    assert copy.read_bytes() == original.read_bytes()


# --------------------------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------------------------


def test_pyarrow_reads_the_same(pair: tuple[Path, Path]) -> None:
    original, indexed = pair
    assert_same(pq.read_table(original), pq.read_table(indexed), "read_table")
    for r in range(pq.ParquetFile(original).num_row_groups):
        assert_same(
            pq.ParquetFile(original).read_row_group(r),
            pq.ParquetFile(indexed).read_row_group(r),
            f"row group {r}",
        )
    for sql, filters in predicates():
        before = pq.read_table(original, filters=filters)
        after = pq.read_table(indexed, filters=filters)
        assert_same(before, after, f"filters={filters}")
        assert sorted(after.column("id").to_pylist()) == expected_ids(sql), sql
    # The Arrow dataset API, with statistics pushdown on row groups.
    import pyarrow.dataset as ds

    for path in (original, indexed):
        k = make_table().column("k")[42].as_py()
        got = ds.dataset(path).to_table(filter=ds.field("k") == k)
        assert got.column("id").to_pylist() == [42]


def test_duckdb_reads_the_same(pair: tuple[Path, Path]) -> None:
    import duckdb

    original, indexed = pair
    con = duckdb.connect()  # default settings: filter pushdown and statistics in use
    try:
        con.execute("SET TimeZone='UTC'")

        def read(path: Path, where: str | None) -> pa.Table:
            query = f"SELECT * FROM read_parquet('{path}')" + (f" WHERE {where}" if where else "")
            return con.sql(query).to_arrow_table()

        assert_same(read(original, None), read(indexed, None), "duckdb")
        for where in SQL_WHERES:
            after = read(indexed, where)
            assert_same(read(original, where), after, f"duckdb WHERE {where}")
            assert sorted(after.column("id").to_pylist()) == expected_ids(where), where
        ((count,),) = con.sql(f"SELECT count(*) FROM read_parquet('{indexed}')").fetchall()
        assert count == N_ROWS
        # DuckDB lists the file's key/value metadata; the locators are just entries.
        keys = {
            r[0]
            for r in con.sql(f"SELECT decode(key) FROM parquet_kv_metadata('{indexed}')").fetchall()
        }
        assert sum(
            1 for key in keys if key.startswith("pqindex.index.")
        ) == INDEXES_PER_COLUMN * len(INDEXED_COLUMNS)
    finally:
        con.close()


def test_polars_reads_the_same(pair: tuple[Path, Path]) -> None:
    pl = pytest.importorskip("polars")
    original, indexed = pair
    assert_same(pl.read_parquet(original).to_arrow(), pl.read_parquet(indexed).to_arrow(), "polars")
    t = make_table()
    k, s = t.column("k")[1234].as_py(), t.column("s")[4321].as_py()
    filters = {
        f"k = {k}": pl.col("k") == k,
        f"s = '{s}'": pl.col("s") == s,
        "f = 0.0": pl.col("f") == 0.0,
        f"k IN ({k}, 1, 7)": pl.col("k").is_in([k, 1, 7]),
        "k = 1": pl.col("k") == 1,
        "k > 20000 AND k < 20100": (pl.col("k") > 20000) & (pl.col("k") < 20100),
    }
    for sql, expression in filters.items():
        before = pl.scan_parquet(original).filter(expression).collect().to_arrow()
        after = pl.scan_parquet(indexed).filter(expression).collect().to_arrow()
        assert_same(before, after, f"polars filter {sql}")
        assert sorted(after.column("id").to_pylist()) == expected_ids(sql), sql
    # Only some columns, with the row-group statistics in play.
    projected = pl.scan_parquet(indexed).filter(pl.col("k") == k).select(["id", "s"]).collect()
    assert projected["id"].to_list() == [1234]


def test_datafusion_reads_the_same(pair: tuple[Path, Path]) -> None:
    datafusion = pytest.importorskip("datafusion")
    original, indexed = pair
    config = (
        datafusion.SessionConfig()
        .set("datafusion.execution.parquet.pushdown_filters", "true")
        .set("datafusion.execution.parquet.reorder_filters", "true")
        .set("datafusion.execution.parquet.enable_page_index", "true")
        .set("datafusion.execution.parquet.bloom_filter_on_read", "true")
        .set("datafusion.execution.time_zone", "UTC")
    )
    ctx = datafusion.SessionContext(config)
    ctx.register_parquet("original", str(original))
    ctx.register_parquet("indexed", str(indexed))

    def read(table: str, where: str | None) -> pa.Table:
        query = f"SELECT * FROM {table}" + (f" WHERE {where}" if where else "")
        return ctx.sql(query).to_arrow_table()

    assert_same(read("original", None), read("indexed", None), "datafusion")
    t = make_table()
    k, s = t.column("k")[1234].as_py(), t.column("s")[4321].as_py()
    d9 = t.column("d9")[77].as_py()
    # DataFusion's SQL: typed literals where its coercion differs from DuckDB's.
    wheres = {
        f"k = {k}": f"k = {k}",
        f"k IN ({k}, 1, 7)": f"k IN ({k}, 1, 7)",
        f"s = '{s}'": f"s = '{s}'",
        f"s = '{s}' OR k = {k}": f"s = '{s}' OR k = {k}",
        f"d9 = {d9}": f"d9 = CAST({d9} AS DECIMAL(9, 2))",
        "f = 0.0": "f = 0.0",
        "k = 1": "k = 1",
        "s = 'nope'": "s = 'nope'",
    }
    for sql, where in wheres.items():
        before, after = read("original", where), read("indexed", where)
        assert_same(before, after, f"datafusion WHERE {where}")
        assert sorted(after.column("id").to_pylist()) == expected_ids(sql), sql


def test_pqindex_reads_the_same(pair: tuple[Path, Path]) -> None:
    original, indexed = pair
    for where in SQL_WHERES:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pqindex.IndexWarning)
            after = pqindex.scan(indexed, where=where).to_arrow()
        before = pqindex.scan(original, where=where).to_arrow()
        assert_same(before, after, f"pqindex WHERE {where}")
        assert sorted(after.column("id").to_pylist()) == expected_ids(where), where


# --------------------------------------------------------------------------------------------
# Locators carried into other files by other writers
# --------------------------------------------------------------------------------------------


def test_locators_copied_into_another_file_are_skipped(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    """A file rewritten by another tool may carry the old file's locators (pyarrow reads a
    footer's key/value metadata into the schema when the file has no Arrow schema of its
    own, and writes it back; other tools copy footer metadata on purpose). They name blocks
    that are not in the new file: skipped with a warning, rows exact, and the next
    add_indexes drops them."""
    _, indexed = pair
    footer = pq.read_metadata(indexed).metadata or {}
    locators = {k: v for k, v in footer.items() if k.startswith(b"pqindex.index.")}
    assert len(locators) == INDEXES_PER_COLUMN * len(INDEXED_COLUMNS)
    copy = tmp_path / "copy.parquet"
    rows = pq.read_table(indexed)
    pq.write_table(rows.replace_schema_metadata(locators), copy, row_group_size=7_000)
    stale = [k for k in pq.read_metadata(copy).metadata or {} if k.startswith(b"pqindex.index.")]
    assert len(stale) == len(locators)
    assert not any(c["ok"] for c in pqindex.verify(copy))
    k = make_table().column("k")[1234].as_py()
    with pytest.warns(pqindex.IndexWarning):
        got = pqindex.scan(copy, where=f"k = {k}").to_arrow()
    assert got.column("id").to_pylist() == [1234]
    report = pqindex.add_indexes(copy, [pqindex.DistinctIndex("k")])
    assert len(report["dropped_damaged"]) == len(stale)
    assert [(i["kind"], i["columns"]) for i in pqindex.list_indexes(copy)] == [("distinct", ["k"])]
    assert all(c["ok"] for c in pqindex.verify(copy))


def test_scan_results_do_not_carry_locators(pair: tuple[Path, Path]) -> None:
    _, indexed = pair
    metadata = pqindex.scan(indexed, where="k = 3").to_arrow().schema.metadata or {}
    assert [k for k in metadata if k.startswith(b"pqindex.index.")] == []


# --------------------------------------------------------------------------------------------
# Spark
# --------------------------------------------------------------------------------------------

SPARK_WHERES = (
    "k = {k}",
    "k IN ({k}, 1, 7)",
    "s = '{s}'",
    "s = '{s}' OR k = {k}",
    "f = 0.0",
    "d9 = {d9}",
    "day = DATE '{day}'",
    "k = 1",
    "s = 'nope'",
    "k > 20000 AND k < 20100",
)


def _spark_sources(spark: Any, root: Path) -> dict[str, Path]:
    """The Spark-compatible table written by Spark (a directory of two part files with
    bloom filters and small pages), pyarrow and pqindex.write."""
    table = make_table(spark_types=True)
    out = {}
    frame = spark.createDataFrame(table)
    spark_dir = root / "spark"
    (
        frame.repartition(2)
        .write.option("parquet.page.row.count.limit", "300")
        .option("parquet.block.size", "65536")
        .option("parquet.bloom.filter.enabled#s", "true")
        .option("parquet.bloom.filter.expected.ndv#s", "300")
        .parquet(str(spark_dir))
    )
    out["spark"] = spark_dir
    for writer in ("pyarrow", "pqindex"):
        directory = root / writer
        directory.mkdir()
        write_source(writer, table, directory / "part-0.parquet")
        out[writer] = directory
    return out


def _part_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix == ".parquet")


@pytest.mark.spark
def test_spark_reads_the_same(spark: Any, tmp_path: Path) -> None:
    table = make_table(spark_types=True)
    values = {
        "k": table.column("k")[1234].as_py(),
        "s": table.column("s")[4321].as_py(),
        "d9": table.column("d9")[77].as_py(),
        "day": table.column("day")[99].as_py().isoformat(),
    }
    for writer, original in _spark_sources(spark, tmp_path).items():
        indexed = tmp_path / f"{writer}-indexed"
        shutil.copytree(original, indexed)
        parts = _part_files(indexed)
        assert parts, writer
        for part, before_part in zip(parts, _part_files(original), strict=True):
            pqindex.add_indexes(part, every_index())
            assert chunk_facts(pq.ParquetFile(part).metadata) == chunk_facts(
                pq.ParquetFile(before_part).metadata
            ), part
            assert all(c["ok"] for c in pqindex.verify(part))

        # Spark's local file system keeps a .crc beside each file; a stale one would make
        # Spark refuse the rewritten file, so none may be left for a rewritten part.
        crcs = {p.name for p in indexed.iterdir() if p.name.endswith(".crc")}
        stale = {f".{part.name}.crc" for part in parts} & crcs
        assert stale == set(), stale
        if writer == "spark":
            assert any(p.name.endswith(".parquet.crc") for p in original.iterdir())

        before_df, after_df = spark.read.parquet(str(original)), spark.read.parquet(str(indexed))
        assert after_df.schema == before_df.schema, writer
        assert_same(before_df.toArrow(), after_df.toArrow(), f"spark ({writer})")
        for template in SPARK_WHERES:
            where = template.format(**values)
            before = before_df.where(where).toArrow()
            after = after_df.where(where).toArrow()
            assert_same(before, after, f"spark ({writer}) WHERE {where}")
            assert sorted(after.column("id").to_pylist()) == expected_ids(where), (writer, where)
        # pqindex reads Spark's indexed files through its indexes.
        k = values["k"]
        with warnings.catch_warnings():
            warnings.simplefilter("error", pqindex.IndexWarning)
            scan = pqindex.scan(indexed, where=f"k = {k}")
            assert scan.to_arrow().column("id").to_pylist() == [1234]
        assert scan.metrics()["indexes_read"] >= 1
