"""Peer comparison: the same selective queries over TPC-H lineitem through pqindex, pyarrow,
DuckDB, DataFusion, polars and Spark (classic and Spark Connect), on eight Parquet layouts.

    python benches/compare.py [--sf 1] [--runs 5] [--engines pqindex,duckdb,...]
        [--layouts sorted,...] [--queries 'point_*,full_scan*'] [--no-spark]
        [--spark-mode classic|connect|both] [--cold [--cold-runs 1]]
        [--data-dir /tmp/pqindex-bench] [--out benches/results] [--tag NAME]

The ``spark_impala`` layout runs its own ten queries (the page-index queries of Impala's
study); every other layout runs the standard eighteen. See benches/README.md.

Every figure is warm: one warm-up run per engine, layout and query, then ``--runs`` timed
runs (median, min, max). Rows must agree across engines before a time counts; a disagreement
is printed and recorded. Bytes are what each engine asked storage for in one run: pqindex's
own ``bytes_read``; for in-process peers the growth of ``rchar`` in ``/proc/self/io`` (bytes
returned by read-type system calls, page cache or not); for Spark the same growth in the
driver JVM, whose threads are the local executors (see compare_spark_env for why not Spark's
own input metrics). Data is generated once per scale factor under --data-dir and reused.

With ``--cold``, each engine also answers each query in fresh Python processes (see
``cold_runs``): once timed from the process's start to the result (imports, session start-up
and footers included; the page cache stays warm), once timed from after a first query on
another file to the result (the first query on files the process has never seen).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import fnmatch
import gc
import hashlib
import importlib.metadata
import itertools
import json
import math
import operator
import os
import pickle
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.compute as pc  # type: ignore[import-untyped,unused-ignore]
import pyarrow.dataset as ds  # type: ignore[import-untyped,unused-ignore]
import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

sys.path.insert(0, str(Path(__file__).resolve().parent))  # compare_spark_env, run as a script

import compare_spark_env as spark_env

# ---------------------------------------------------------------------------------------------
# Predicates: written once, translated for each engine.

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


# ---------------------------------------------------------------------------------------------
# Queries


@dataclass(frozen=True)
class Query:
    name: str
    where: Pred | None
    columns: tuple[str, ...] | None  # None: SELECT *

    def select_list(self) -> str:
        return ", ".join(self.columns) if self.columns else "*"

    def sql_where(self) -> str | None:
        return to_sql(self.where) if self.where is not None else None


@dataclass(frozen=True)
class Keys:
    """Values read from the data, so every lookup hits existing rows."""

    orderkey_point: int
    partkey_point: int
    orderkey_range: int
    orderkey_in: tuple[int, ...]
    orderkey_and: int
    and_span: int
    orderkey_or: int
    partkey_or: int
    comment: str
    orderkey_mid: int
    suppkey_point: int


NARROW = ("l_orderkey", "l_partkey", "l_extendedprice")
WIDE_RANGE = (dt.date(1994, 1, 1), dt.date(1994, 8, 31))  # about 10% of lineitem
DATE_EQ = dt.date(1995, 3, 15)


def build_queries(keys: Keys) -> list[Query]:
    """Each predicate with SELECT * and a narrow projection, except where * adds nothing but
    bulk (the wide range and the full scan)."""
    k = keys
    preds: list[tuple[str, Pred | None, tuple[str, ...], bool]] = [
        ("point_sorted", Cmp("l_orderkey", "=", k.orderkey_point), NARROW, True),
        ("point_unsorted", Cmp("l_partkey", "=", k.partkey_point), NARROW, True),
        (
            "range_narrow",
            Between("l_orderkey", k.orderkey_range, k.orderkey_range + 100),
            NARROW,
            True,
        ),
        (
            "range_wide_date",
            Between("l_shipdate", *WIDE_RANGE),
            ("l_orderkey", "l_shipdate", "l_extendedprice"),
            False,
        ),
        ("in_list", In("l_orderkey", k.orderkey_in), NARROW, True),
        (
            "and_multi",
            And(
                (
                    Between("l_orderkey", k.orderkey_and, k.orderkey_and + k.and_span),
                    Cmp("l_quantity", "<", Decimal(5)),
                )
            ),
            ("l_orderkey", "l_quantity", "l_extendedprice"),
            True,
        ),
        (
            "or_two_columns",
            Or((Cmp("l_orderkey", "=", k.orderkey_or), Cmp("l_partkey", "=", k.partkey_or))),
            NARROW,
            True,
        ),
        ("string_needle", Cmp("l_comment", "=", k.comment), ("l_orderkey", "l_comment"), True),
        (
            "date_eq",
            Cmp("l_shipdate", "=", DATE_EQ),
            ("l_orderkey", "l_shipdate", "l_extendedprice"),
            True,
        ),
        ("full_scan", None, ("l_quantity", "l_extendedprice", "l_discount"), False),
    ]
    queries: list[Query] = []
    for name, pred, narrow, with_star in preds:
        if with_star:
            queries.append(Query(f"{name}.star", pred, None))
        queries.append(Query(f"{name}.narrow", pred, narrow))
    return queries


IMPALA_PRICE = (Decimal("50000.00"), Decimal("50010.00"))


def build_impala_queries(keys: Keys) -> list[Query]:
    """The ten page-index queries, after Impala's study of Parquet page indexes ("Speeding Up
    SELECT Queries with Parquet Page Indexes"): SELECT * with a point lookup or a narrow
    range on the sorted key (the page index narrows them to a page or two per file), and
    selective predicates on unsorted columns (the page index can rule out little; the
    readers differ in how they evaluate them and fetch the other columns)."""
    k = keys
    preds: list[tuple[str, Pred]] = [
        ("orderkey_first", Cmp("l_orderkey", "=", 1)),
        ("orderkey_mid", Cmp("l_orderkey", "=", k.orderkey_mid)),
        ("orderkey_lt_1000", Cmp("l_orderkey", "<", 1000)),
        ("orderkey_range", Between("l_orderkey", k.orderkey_range, k.orderkey_range + 100)),
        ("partkey_eq", Cmp("l_partkey", "=", k.partkey_point)),
        ("suppkey_eq", Cmp("l_suppkey", "=", k.suppkey_point)),
        ("shipdate_eq", Cmp("l_shipdate", "=", DATE_EQ)),
        ("extendedprice_range", Between("l_extendedprice", *IMPALA_PRICE)),
        ("quantity_eq_1", Cmp("l_quantity", "=", Decimal(1))),
        ("comment_eq", Cmp("l_comment", "=", k.comment)),
    ]
    return [Query(f"impala_{name}", pred, None) for name, pred in preds]


#: The query sets a layout can run, by name.
QUERY_SETS: dict[str, Callable[[Keys], list[Query]]] = {
    "standard": build_queries,
    "impala": build_impala_queries,
}


# ---------------------------------------------------------------------------------------------
# Data: TPC-H lineitem and its layouts

BLOOM_COLUMNS = ("l_orderkey", "l_partkey", "l_suppkey", "l_comment")
PAGE_ROWS = 20_000
ROW_GROUP_ROWS = 1_000_000
SMALL_FILES = 2_000
DONE = "_SUCCESS"  # Spark's marker; readers skip names starting with "_"
#: spark_impala: rows per file (20 files at SF10, as in Impala's study) and parquet-mr's
#: row-group size, large enough that each file is one row group.
IMPALA_FILE_ROWS = 3_000_000
IMPALA_ROW_GROUP_BYTES = 1 << 30


@dataclass(frozen=True)
class Layout:
    name: str
    description: str
    needs_spark: bool
    query_set: str = "standard"


LAYOUTS = [
    Layout(
        "sorted",
        "sorted by l_orderkey, pqindex.write: 1M-row row groups, 20,000-row pages, page index, "
        "bloom filters on " + ", ".join(BLOOM_COLUMNS),
        False,
    ),
    Layout("spark_plain", "as Spark writes it (parquet-mr defaults, df.write.parquet)", True),
    Layout(
        "spark_bloom",
        "as Spark writes it, with parquet-mr bloom filters (default size) on "
        + ", ".join(BLOOM_COLUMNS)
        + " (parquet-mr leaves out the filter of a column chunk whose pages are all "
        "dictionary-encoded)",
        True,
    ),
    Layout(
        "shuffled",
        "rows shuffled, pqindex.write: 1M-row row groups, 20,000-row pages, page index, "
        "bloom filters on " + ", ".join(BLOOM_COLUMNS),
        False,
    ),
    Layout(
        "small_files",
        f"{SMALL_FILES:,} files split by l_orderkey range, pqindex.write, same options as sorted",
        False,
    ),
    Layout(
        "small_files_catalog",
        "copies of the small_files files with a pqindex catalog: bounds on l_orderkey, "
        "l_partkey, l_suppkey, l_shipdate; bloom filters on " + ", ".join(BLOOM_COLUMNS),
        False,
    ),
    Layout(
        "small_files_default_catalog",
        "copies of the small_files files with a pqindex catalog built by "
        "pqindex.Catalog.build(path) with its default arguments (every column it can bound, "
        "no bloom filters)",
        False,
    ),
    Layout(
        "spark_impala",
        f"as Spark writes it with {PAGE_ROWS:,}-row pages (parquet.page.row.count.limit), "
        f"range-partitioned by l_orderkey into one file per {IMPALA_FILE_ROWS:,} rows (20 at "
        "SF10), each sorted by l_orderkey and one row group (parquet.block.size 1 GiB); "
        "runs the ten Impala page-index queries",
        True,
        "impala",
    ),
]


def generate_raw(root: Path, sf: float) -> Path:
    """lineitem from tpchgen-cli (in l_orderkey order), generated once per scale factor."""
    raw = root / "raw" / "lineitem.parquet"
    if raw.exists():
        return raw
    print(f"generating TPC-H lineitem at SF{sf:g} ...", flush=True)
    exe = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
    tmp = root / "raw.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run(
        [exe, "parquet", "-s", f"{sf:g}", "--tables", "lineitem", "-o", str(tmp)], check=True
    )
    shutil.rmtree(root / "raw", ignore_errors=True)
    tmp.rename(root / "raw")
    return raw


def plain_string_schema(schema: Any) -> Any:
    """The schema with string_view as string: pyarrow 26 cannot filter string_view columns,
    and a file's stored Arrow schema decides what pyarrow and pqindex hand back."""
    return pa.schema(
        [f.with_type(pa.string()) if f.type == pa.string_view() else f for f in schema]
    )


def batches(path: Path, schema: Any) -> Iterator[Any]:
    """Record batches of a Parquet file, cast to ``schema``."""
    source = pq.ParquetFile(path)
    for batch in source.iter_batches(batch_size=65_536):
        yield batch.cast(schema)


def pqindex_write(data: Any, path: Path) -> None:
    """One file written the way every pqindex layout here is written."""
    import pqindex

    pqindex.write(
        data,
        path,
        row_group_size=ROW_GROUP_ROWS,
        page_row_limit=PAGE_ROWS,
        bloom_filter_columns=list(BLOOM_COLUMNS),
    )


def write_sorted(raw: Path, out: Path) -> None:
    """tpchgen-cli already writes lineitem in l_orderkey order: stream it through."""
    schema = plain_string_schema(pq.read_schema(raw))
    pqindex_write(
        pa.RecordBatchReader.from_batches(schema, batches(raw, schema)), out / "part-0.parquet"
    )


def write_shuffled(raw: Path, out: Path) -> None:
    """Shuffle with DuckDB (ordered by a hash of the primary key, so reruns give the same
    file and larger scale factors spill to disk), then rewrite with pqindex."""
    import duckdb

    schema = plain_string_schema(pq.read_schema(raw))
    tmp = out / "_shuffled.tmp.parquet"
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT * FROM read_parquet('{raw}') ORDER BY hash(l_orderkey, l_linenumber)) "
        f"TO '{tmp}' (FORMAT parquet)"
    )
    con.close()
    pqindex_write(
        pa.RecordBatchReader.from_batches(schema, batches(tmp, schema)), out / "part-0.parquet"
    )
    tmp.unlink()


def write_small_files(raw: Path, out: Path) -> None:
    """Split the (l_orderkey-ordered) raw file into SMALL_FILES equal-width key ranges."""
    schema = plain_string_schema(pq.read_schema(raw))
    max_key = int(pc.max(pq.read_table(raw, columns=["l_orderkey"]).column(0)).as_py())
    pending: list[Any] = []
    current = 0

    def flush() -> None:
        if pending:
            pqindex_write(
                pa.Table.from_batches(pending, schema), out / f"part-{current:05d}.parquet"
            )
            pending.clear()

    for batch in batches(raw, schema):
        keys = batch.column("l_orderkey").to_numpy()
        buckets = (keys - 1) * SMALL_FILES // max_key
        if np.any(np.diff(buckets) < 0):
            raise SystemExit("raw lineitem is not ordered by l_orderkey")
        start = 0
        for end in [*(np.flatnonzero(np.diff(buckets)) + 1).tolist(), len(keys)]:
            bucket = int(buckets[start])
            if bucket != current:
                flush()
                current = bucket
            pending.append(batch.slice(start, end - start))
            start = end
    flush()


def copy_small_files(raw: Path, out: Path) -> None:
    """Copies of the small_files layout's files. Not hard links: a new link changes the
    inode's change time, which is part of a file's identity, so one layout's links would
    make another's catalog stale."""
    small = next(lay for lay in LAYOUTS if lay.name == "small_files")
    source = build_layout(small, raw, out.parent, None)
    for f in data_files(source):
        shutil.copyfile(f, out / f.name)


def write_small_files_catalog(raw: Path, out: Path) -> None:
    """Copies of the small_files layout's files, and a catalog of them."""
    import pqindex

    copy_small_files(raw, out)
    columns = ["l_orderkey", "l_partkey", "l_suppkey", "l_shipdate"]
    pqindex.Catalog.build(out, columns, bloom=list(BLOOM_COLUMNS))


def write_small_files_default_catalog(raw: Path, out: Path) -> None:
    """Copies of the small_files layout's files, and a catalog built as a new user builds
    one: ``Catalog.build(path)``, nothing else."""
    import pqindex

    copy_small_files(raw, out)
    pqindex.Catalog.build(out)


def write_spark_impala(spark: Any, raw: Path, out: Path) -> None:
    """lineitem as Spark writes it for Impala's study: a file per IMPALA_FILE_ROWS rows in
    l_orderkey ranges, each sorted and one row group, with PAGE_ROWS-row pages."""
    rows = pq.ParquetFile(raw).metadata.num_rows
    spark_env.write_spark_layout(
        spark,
        raw,
        out,
        files=max(1, round(rows / IMPALA_FILE_ROWS)),
        sort_by=("l_orderkey", "l_linenumber"),
        page_rows=PAGE_ROWS,
        row_group_bytes=IMPALA_ROW_GROUP_BYTES,
    )


def build_layout(layout: Layout, raw: Path, root: Path, spark: Any) -> Path:
    """The layout's directory, written once and reused while its marker file exists."""
    out = root / layout.name
    if (out / DONE).exists():
        return out
    print(f"writing layout {layout.name} ...", flush=True)
    tmp = root / f"{layout.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    start = time.perf_counter()
    if layout.name == "spark_impala":
        write_spark_impala(spark, raw, tmp)
    elif layout.needs_spark:
        bloom = BLOOM_COLUMNS if layout.name == "spark_bloom" else ()
        spark_env.write_spark_layout(spark, raw, tmp, bloom)
    else:
        tmp.mkdir(parents=True)
        writers = {
            "sorted": write_sorted,
            "shuffled": write_shuffled,
            "small_files": write_small_files,
            "small_files_catalog": write_small_files_catalog,
            "small_files_default_catalog": write_small_files_default_catalog,
        }
        writers[layout.name](raw, tmp)
        (tmp / DONE).touch()
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    print(f"  {layout.name} written in {time.perf_counter() - start:.1f} s", flush=True)
    return out


def data_files(path: Path) -> list[Path]:
    """The Parquet files of a layout, by Spark's rules (no _ or . prefixes)."""
    return sorted(p for p in path.glob("*.parquet") if not p.name.startswith(("_", ".")))


def describe_files(path: Path) -> dict[str, Any]:
    """File count, bytes, row groups, and which columns carry bloom filters and a page index
    (from the footers), so the report shows what each reader had to work with."""
    import pqindex

    files = data_files(path)
    blooms: set[str] = set()
    page_index = False
    row_groups = 0
    for f in files:
        meta = pqindex.read_metadata(f)
        row_groups += meta.num_row_groups
        if f == files[0]:
            columns = meta.columns().to_pylist()
            blooms = {c["column"] for c in columns if c["has_bloom_filter"]}
            page_index = any(c["has_page_index"] for c in columns)
    return {
        "files": len(files),
        "bytes": sum(f.stat().st_size for f in files),
        "row_groups": row_groups,
        "bloom_filter_columns": sorted(blooms),
        "page_index": page_index,
    }


def pick_keys(raw: Path) -> Keys:
    """Read existing values at fixed fractions of the (l_orderkey-ordered) raw file."""
    source = pq.ParquetFile(raw)
    meta = source.metadata
    starts = list(
        itertools.accumulate(
            (meta.row_group(i).num_rows for i in range(meta.num_row_groups)), initial=0
        )
    )
    cache: dict[int, Any] = {}

    def row(fraction: float) -> dict[str, Any]:
        index = int(fraction * (meta.num_rows - 1))
        group = next(i for i in range(meta.num_row_groups) if starts[i + 1] > index)
        if group not in cache:
            cache[group] = source.read_row_group(
                group, columns=["l_orderkey", "l_partkey", "l_suppkey", "l_comment"]
            )
        values: dict[str, Any] = cache[group].slice(index - starts[group], 1).to_pylist()[0]
        return values

    max_key = int(row(1.0)["l_orderkey"])
    return Keys(
        orderkey_point=row(0.42)["l_orderkey"],
        partkey_point=row(0.73)["l_partkey"],
        orderkey_range=row(0.31)["l_orderkey"],
        orderkey_in=tuple(row(0.05 + i / 10)["l_orderkey"] for i in range(10)),
        orderkey_and=row(0.55)["l_orderkey"],
        and_span=max_key // 20,
        orderkey_or=row(0.12)["l_orderkey"],
        partkey_or=row(0.88)["l_partkey"],
        comment=row(0.5)["l_comment"],
        orderkey_mid=row(0.7)["l_orderkey"],
        suppkey_point=row(0.61)["l_suppkey"],
    )


# ---------------------------------------------------------------------------------------------
# Measurement


def loadavg() -> float:
    """The 1-minute load average, kept with each figure to tell a busy machine apart."""
    return float(Path("/proc/loadavg").read_text().split()[0])


def rchar() -> int:
    """Bytes this process has read through read-type system calls so far."""
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    raise RuntimeError("/proc/self/io has no rchar")


def rchar_overhead() -> int:
    """What reading /proc/self/io itself adds to rchar, subtracted from every delta."""
    deltas = []
    for _ in range(5):
        before = rchar()
        deltas.append(rchar() - before)
    return min(deltas)


RCHAR_OVERHEAD = rchar_overhead()


@dataclass
class Run:
    seconds: float
    table: Any
    bytes_read: int | None
    rchar: int | None = None
    metrics: dict[str, Any] = field(default_factory=dict)


class Meter:
    """Wall time and rchar growth of the code inside ``with Meter() as m:``."""

    seconds = 0.0
    read = 0

    def __enter__(self) -> Meter:
        self._rchar = rchar()
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._start
        self.read = rchar() - self._rchar - RCHAR_OVERHEAD


# ---------------------------------------------------------------------------------------------
# Engines: ``open`` once per layout, ``prepare`` once per query (work that is not timed), then
# the returned callable runs the query once and is timed.


class Engine:
    name: ClassVar[str]
    needs_spark: ClassVar[bool] = False
    bytes_source: ClassVar[str]

    def unavailable(self) -> str | None:
        """Why this engine cannot run here, or None."""
        return None

    def open(self, path: Path, layout: str) -> None:
        self.path = path
        self.layout = layout

    def prepare(self, query: Query) -> Callable[[], Run]:
        raise NotImplementedError

    def cold_program(self, query: Query) -> str:
        """Python source for a fresh process: the imports and set-up the engine needs, then
        ``run(path)``, the query over the layout directory ``path`` as an Arrow table. A
        user's script as written, so the process imports only what this engine needs."""
        raise NotImplementedError

    def cold_env(self) -> dict[str, str]:
        """Environment variables the fresh process needs (None-valued: removed)."""
        return {}

    def cold_cleanup(self) -> str:
        """Source run after the timed part (stopping a session)."""
        return ""


class Pqindex(Engine):
    name = "pqindex"
    bytes_source = "Scan.metrics()['bytes_read'] (rchar kept in the JSON as a cross-check)"

    def prepare(self, query: Query) -> Callable[[], Run]:
        import pqindex

        where = query.sql_where()
        columns = list(query.columns) if query.columns else None

        def run() -> Run:
            with Meter() as m:
                scan = pqindex.scan(self.path, where=where, columns=columns)
                table = scan.to_arrow()
            metrics = scan.metrics()
            return Run(m.seconds, table, int(metrics["bytes_read"]), m.read, dict(metrics))

        return run

    def cold_program(self, query: Query) -> str:
        columns = list(query.columns) if query.columns else None
        return f"""
import pqindex

def run(path):
    return pqindex.scan(path, where={query.sql_where()!r}, columns={columns!r}).to_arrow()
"""


class Pyarrow(Engine):
    name = "pyarrow"
    bytes_source = "rchar delta"

    def prepare(self, query: Query) -> Callable[[], Run]:
        filters = to_pyarrow(query.where) if query.where is not None else None
        columns = list(query.columns) if query.columns else None

        def run() -> Run:
            with Meter() as m:
                table = pq.read_table(self.path, filters=filters, columns=columns)
            return Run(m.seconds, table, m.read, m.read)

        return run

    def cold_program(self, query: Query) -> str:
        filters = to_pyarrow(query.where) if query.where is not None else None
        columns = list(query.columns) if query.columns else None
        return f"""
import pickle
import pyarrow.parquet as pq

FILTERS = pickle.loads({pickle.dumps(filters)!r})

def run(path):
    return pq.read_table(path, filters=FILTERS, columns={columns!r})
"""


class Duckdb(Engine):
    name = "duckdb"
    bytes_source = "rchar delta"

    def __init__(self) -> None:
        import duckdb

        self.con = duckdb.connect()

    @staticmethod
    def sql(path: Path | str, query: Query) -> str:
        sql = f"SELECT {query.select_list()} FROM read_parquet('{path}/*.parquet')"
        if query.where is not None:
            sql += f" WHERE {query.sql_where()}"
        return sql

    def cold_program(self, query: Query) -> str:
        head, tail = self.sql("\0", query).split("\0")
        return f"""
import duckdb

con = duckdb.connect()

def run(path):
    return con.sql({head!r} + path + {tail!r}).to_arrow_table()
"""

    def prepare(self, query: Query) -> Callable[[], Run]:
        sql = self.sql(self.path, query)

        def run() -> Run:
            with Meter() as m:
                table = self.con.sql(sql).to_arrow_table()
            return Run(m.seconds, table, m.read, m.read)

        return run


class Datafusion(Engine):
    name = "datafusion"
    bytes_source = "rchar delta"

    SETTINGS: ClassVar[dict[str, str]] = {
        "datafusion.execution.parquet.pushdown_filters": "true",
        "datafusion.execution.parquet.reorder_filters": "true",
    }

    def __init__(self) -> None:
        from datafusion import SessionConfig, SessionContext

        config = SessionConfig()
        for key, value in self.SETTINGS.items():
            config = config.set(key, value)
        self.ctx = SessionContext(config)

    def cold_program(self, query: Query) -> str:
        where = f" WHERE {query.sql_where()}" if query.where is not None else ""
        return f"""
from datafusion import SessionConfig, SessionContext

config = SessionConfig()
for key, value in {self.SETTINGS!r}.items():
    config = config.set(key, value)
ctx = SessionContext(config)
tables = []

def run(path):
    tables.append(f"lineitem_{{len(tables)}}")
    ctx.register_parquet(tables[-1], path)
    return ctx.sql(f"SELECT {query.select_list()} FROM {{tables[-1]}}{where}").to_arrow_table()
"""

    def open(self, path: Path, layout: str) -> None:
        super().open(path, layout)
        self.table = f"lineitem_{layout}"
        if not self.ctx.table_exist(self.table):
            self.ctx.register_parquet(self.table, str(path))

    def prepare(self, query: Query) -> Callable[[], Run]:
        sql = f"SELECT {query.select_list()} FROM {self.table}"
        if query.where is not None:
            sql += f" WHERE {query.sql_where()}"

        def run() -> Run:
            with Meter() as m:
                table = self.ctx.sql(sql).to_arrow_table()
            return Run(m.seconds, table, m.read, m.read)

        return run


class Polars(Engine):
    name = "polars"
    bytes_source = "rchar delta"

    def prepare(self, query: Query) -> Callable[[], Run]:
        import polars as pl

        glob = f"{self.path}/*.parquet"
        where = to_polars(query.where) if query.where is not None else None
        columns = list(query.columns) if query.columns else None

        def run() -> Run:
            with Meter() as m:
                frame = pl.scan_parquet(glob)
                if where is not None:
                    frame = frame.filter(where)
                if columns is not None:
                    frame = frame.select(columns)
                result = frame.collect()
            return Run(m.seconds, result.to_arrow(), m.read, m.read)

        return run

    def cold_program(self, query: Query) -> str:
        where = to_polars(query.where) if query.where is not None else None
        columns = list(query.columns) if query.columns else None
        return f"""
import pickle
import polars as pl

WHERE = pickle.loads({pickle.dumps(where)!r})

def run(path):
    frame = pl.scan_parquet(path + "/*.parquet")
    if WHERE is not None:
        frame = frame.filter(WHERE)
    if {columns!r} is not None:
        frame = frame.select({columns!r})
    return frame.collect().to_arrow()
"""


class SparkEngine(Engine):
    """Spark's own reader. Timed: building the DataFrame (file listing, schema, analysis) and
    ``toArrow()``; the JSON keeps the two parts apart (``dataframe_ms``, ``action_ms``).

    ``spark`` is the local Spark in this process (the Spark Connect server too, when one was
    started); the ``*_connect`` engines build their DataFrames through ``client``, a Spark
    Connect session on that server. Both run their jobs in the same JVM, whose ``rchar``
    growth stands for the bytes read either way."""

    name = "spark"
    needs_spark = True
    connect: ClassVar[bool] = False
    bytes_source = (
        "rchar delta of the driver JVM (Spark's task input metrics, which miss vectored "
        "reads, are in the JSON as input_bytes)"
    )
    spark: Any = None
    client: Any = None
    connect_url: str | None = None
    driver_memory = "6g"
    warehouse: Path | None = None
    runs = 0

    def unavailable(self) -> str | None:
        if self.spark is None:
            return "Spark not started (--no-spark)"
        if self.connect and self.client is None:
            return "no Spark Connect server (--spark-mode classic)"
        return None

    @property
    def session(self) -> Any:
        """The session DataFrames are built on: the Connect client or the classic one."""
        return self.client if self.connect else self.spark

    def dataframe(self, query: Query) -> tuple[Any, Any]:
        """The DataFrame, and the object that reports pqindex metrics (none here)."""
        df = self.session.read.parquet(str(self.path))
        if query.where is not None:
            df = df.where(query.sql_where())
        if query.columns:
            df = df.select(*query.columns)
        return df, None

    def prepare(self, query: Query) -> Callable[[], Run]:
        # Job groups are thread-local in the JVM: a Connect query runs on a server thread,
        # where a group set from here does not reach, so input_bytes is classic-only.
        meter = None if self.connect else spark_env.SparkInputBytes(self.spark)
        jvm = spark_env.jvm_pid(self.spark)

        def run() -> Run:
            SparkEngine.runs += 1
            group = f"compare-{SparkEngine.runs}"
            if meter is not None:
                meter.set_group(group)
            workers = spark_env.python_worker_rchar()
            jvm_before = spark_env.rchar_of(jvm)
            with spark_env.connect_mode() if self.connect else contextlib.nullcontext():
                start = time.perf_counter()
                df, scan = self.dataframe(query)
                built = time.perf_counter()
                table = df.toArrow()
                end = time.perf_counter()
                metrics: dict[str, Any] = {
                    "dataframe_ms": (built - start) * 1000,
                    "action_ms": (end - built) * 1000,
                    "jvm_rchar": spark_env.rchar_of(jvm) - jvm_before,
                    "worker_rchar": spark_env.worker_rchar_delta(
                        workers, spark_env.python_worker_rchar()
                    ),
                    "input_bytes": None if meter is None else meter.bytes_for_group(group),
                }
                if scan is not None:
                    metrics["pqindex"] = dict(scan.metrics())
                    metrics["on_driver"] = getattr(scan, "on_driver", None)
            return Run(end - start, table, self.bytes_of(metrics), None, metrics)

        return run

    def bytes_of(self, metrics: dict[str, Any]) -> int | None:
        """Which of the measured figures stands for the bytes this engine read."""
        return int(metrics["jvm_rchar"])

    # A fresh process starts its own local Spark (classic), or connects to this process's
    # Connect server (a new client session on a warm server, as a notebook reconnecting).

    def cold_program(self, query: Query) -> str:
        if self.connect:
            session = f"""
import os

os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
from pyspark.sql.connect.session import SparkSession

spark = SparkSession.builder.remote({self.connect_url!r}).getOrCreate()
"""
        else:
            session = f"""
import sys
from pathlib import Path

sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
import compare_spark_env

spark = compare_spark_env.start_spark({self.driver_memory!r}, Path({str(self.warehouse)!r}))
"""
        return session + self.cold_run_source(query)

    def cold_run_source(self, query: Query) -> str:
        return f"""
def run(path):
    df = spark.read.parquet(path)
    if {query.sql_where()!r} is not None:
        df = df.where({query.sql_where()!r})
    if {query.columns!r}:
        df = df.select(*{query.columns!r})
    return df.toArrow()
"""

    def cold_env(self) -> dict[str, str]:
        return {"PYSPARK_PYTHON": sys.executable}

    def cold_cleanup(self) -> str:
        return "spark.stop()"


# ----- pqindex via Spark ---------------------------------------------------------------------
# ``plan(spark, source, where=..., columns=...)`` plans on the driver (the Python process
# holding the session: on Spark Connect, the client) and reads there too when the selection
# is small; ``to_df()`` gives the DataFrame and ``metrics()["bytes_read"]`` what the driver and
# the executors fetched (on Spark Connect, the executors' share comes back as observed
# metrics of the first action). With only ``read(...)`` (a DataFrame), bytes fall back to the
# rchar growth of the PySpark Python workers, which misses reads on the driver.


class PqindexSpark(SparkEngine):
    name = "pqindex_spark"
    bytes_source = (
        "pqindex.spark plan metrics()['bytes_read'] (driver and executors; "
        "else rchar delta of the PySpark Python workers)"
    )

    def unavailable(self) -> str | None:
        try:
            import pqindex.spark  # type: ignore[import-not-found,unused-ignore]
        except ImportError as e:
            return f"pqindex.spark not importable ({e})"
        if not hasattr(pqindex.spark, "plan") and not hasattr(pqindex.spark, "read"):
            return "pqindex.spark has neither plan() nor read()"
        return super().unavailable()

    def dataframe(self, query: Query) -> tuple[Any, Any]:
        import pqindex.spark  # type: ignore[import-not-found,unused-ignore]

        columns = list(query.columns) if query.columns else None
        args = (self.session, str(self.path))
        if hasattr(pqindex.spark, "plan"):
            scan = pqindex.spark.plan(*args, where=query.sql_where(), columns=columns)
            return scan.to_df(), scan
        return pqindex.spark.read(*args, where=query.sql_where(), columns=columns), None

    def bytes_of(self, metrics: dict[str, Any]) -> int | None:
        if "pqindex" in metrics:
            return int(metrics["pqindex"]["bytes_read"])
        return int(metrics["worker_rchar"])

    def cold_run_source(self, query: Query) -> str:
        columns = list(query.columns) if query.columns else None
        return f"""
import pqindex.spark

def run(path):
    scan = pqindex.spark.plan(spark, path, where={query.sql_where()!r}, columns={columns!r})
    return scan.to_df().toArrow()
"""


class SparkConnect(SparkEngine):
    """Spark's own reader through a Spark Connect client."""

    name = "spark_connect"
    connect = True
    bytes_source = "rchar delta of the JVM serving Spark Connect (this process's local Spark)"


class PqindexSparkConnect(PqindexSpark):
    """pqindex.spark through a Spark Connect client."""

    name = "pqindex_spark_connect"
    connect = True
    bytes_source = (
        "pqindex.spark plan metrics()['bytes_read'] (the client's reads, and the executors' "
        "as observed metrics)"
    )


ENGINES: dict[str, type[Engine]] = {
    e.name: e
    for e in (
        Pqindex,
        Pyarrow,
        Duckdb,
        Datafusion,
        Polars,
        SparkEngine,
        PqindexSpark,
        SparkConnect,
        PqindexSparkConnect,
    )
}
PQINDEX_ENGINES = {"pqindex", "pqindex_spark", "pqindex_spark_connect"}
#: --spark-mode connect runs these in place of the classic engines; both runs both.
CONNECT_TWINS = {"spark": "spark_connect", "pqindex_spark": "pqindex_spark_connect"}
#: pqindex via Spark and the Spark reader it is held against, per mode.
SPARK_PAIRS = (("pqindex_spark", "spark"), ("pqindex_spark_connect", "spark_connect"))


# ---------------------------------------------------------------------------------------------
# Running and checking

SMALL_RESULT = 2_000  # results up to this many rows are compared row by row


@dataclass
class Cell:
    layout: str
    query: str
    engine: str
    seconds: list[float] = field(default_factory=list)
    warmup_seconds: float | None = None
    bytes_runs: list[int | None] = field(default_factory=list)
    rchar_runs: list[int | None] = field(default_factory=list)
    rows: int | None = None
    fingerprint: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    skipped: str | None = None
    mismatch: bool = False
    loadavg: float | None = None  # 1-minute load when the cell started: other work on the box
    cold_process_s: list[float] = field(default_factory=list)  # fresh process, start to rows
    cold_new_file_s: list[float] = field(default_factory=list)  # first query on unseen files
    cold_error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.skipped is None and bool(self.seconds)

    def median_ms(self) -> float:
        return statistics.median(self.seconds) * 1000

    def bytes_read(self) -> int | None:
        known = [b for b in self.bytes_runs if b is not None]
        return int(statistics.median(known)) if known else None

    def cold_ms(self, mode: str) -> float | None:
        """Median cold time of ``mode`` (one of COLD_MODES), if measured without error."""
        seconds: list[float] = getattr(self, f"cold_{mode}_s")
        if not seconds or self.cold_error:
            return None
        return statistics.median(seconds) * 1000


def normal(value: Any) -> Any:
    """A value as every engine's Arrow output agrees on it (decimal scale, string flavour)."""
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def fingerprint(table: Any) -> str:
    """Row count plus the sorted rows (small results) or the column sums (large ones)."""
    names = sorted(table.column_names)
    table = table.select(names)
    if table.num_rows <= SMALL_RESULT:
        rows = sorted(
            (tuple(normal(v) for v in row.values()) for row in table.to_pylist()), key=repr
        )
        body = repr(rows)
    else:
        sums = {}
        for name in names:
            column = table.column(name)
            if pa.types.is_integer(column.type) or pa.types.is_decimal(column.type):
                sums[name] = normal(pc.sum(column).as_py())
        body = repr(sorted(sums.items()))
    digest = hashlib.sha256(body.encode()).hexdigest()[:16]
    return f"{table.num_rows}:{digest}"


@dataclass
class Trial:
    """One engine's query in flight: the cell it fills, its action and its latest run."""

    cell: Cell
    engine: Engine
    action: Callable[[], Run] | None = None
    last: Run | None = None


def attempt(trial: Trial, step: Callable[[Trial], None]) -> None:
    """Run one step of a trial; an error is recorded in its cell and ends the trial."""
    if trial.cell.error is not None or trial.cell.skipped is not None:
        return
    try:
        step(trial)
    except Exception as e:
        trial.cell.error = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}"[:300]
        trial.last = None


def warm_up(trial: Trial, query: Query) -> None:
    trial.action = trial.engine.prepare(query)
    trial.last = trial.action()
    trial.cell.warmup_seconds = trial.last.seconds


def timed_run(trial: Trial) -> None:
    assert trial.action is not None
    trial.last = None  # free the previous result before the next run allocates its own
    gc.collect()
    run = trial.action()
    trial.last = run
    trial.cell.seconds.append(run.seconds)
    trial.cell.bytes_runs.append(run.bytes_read)
    trial.cell.rchar_runs.append(run.rchar)


def finish(trial: Trial) -> None:
    assert trial.last is not None
    trial.cell.rows = trial.last.table.num_rows
    trial.cell.fingerprint = fingerprint(trial.last.table)
    trial.cell.metrics = trial.last.metrics
    trial.last = None


def measure(trials: list[Trial], query: Query, runs: int) -> None:
    """A warm-up per engine, then the timed runs round-robin, starting each round with the
    next engine, so that load from other work on the machine falls on all engines alike."""
    for trial in trials:
        attempt(trial, lambda t: warm_up(t, query))
    for r in range(runs):
        shift = r % max(1, len(trials))
        for trial in trials[shift:] + trials[:shift]:
            attempt(trial, timed_run)
    for trial in trials:
        attempt(trial, finish)


def check_agreement(cells: list[Cell]) -> None:
    """Mark cells whose result differs from the majority (DuckDB breaks ties)."""
    done = [c for c in cells if c.ok and c.fingerprint is not None]
    votes = Counter(c.fingerprint for c in done)
    if len(votes) <= 1:
        return
    top = max(votes.values())
    leaders = [fp for fp, n in votes.items() if n == top]
    duck = next((c.fingerprint for c in done if c.engine == "duckdb"), None)
    agreed = duck if duck in leaders else leaders[0]
    for c in done:
        if c.fingerprint != agreed:
            c.mismatch = True
            print(
                f"!!! ROW MISMATCH !!! {c.layout} {c.query} {c.engine}: {c.rows} rows "
                f"({c.fingerprint}), majority {agreed}",
                flush=True,
            )


def progress(cell: Cell) -> None:
    if cell.skipped:
        return
    if cell.error:
        print(f"  {cell.engine:21} ERROR {cell.error}", flush=True)
        return
    b = cell.bytes_read()
    print(
        f"  {cell.engine:21} {cell.median_ms():10.1f} ms  [{min(cell.seconds) * 1000:.1f}-"
        f"{max(cell.seconds) * 1000:.1f}]  {cell.rows:>9,} rows  "
        f"{human_bytes(b):>10}{cold_text(cell, ' ')}",
        flush=True,
    )


def cold_text(cell: Cell, sep: str) -> str:
    """Cold figures of a cell (fresh process / new file), or its cold error."""
    if cell.cold_error:
        return f"{sep}cold **ERROR** {cell.cold_error[:80]}"
    process, new_file = cell.cold_ms("process"), cell.cold_ms("new_file")
    if process is None and new_file is None:
        return ""
    texts = ["n/a" if v is None else fmt_ms(v) for v in (process, new_file)]
    return f"{sep}cold {texts[0]} / {texts[1]} ms"


@dataclass(frozen=True)
class Cold:
    """How to measure cold figures: runs per mode, and the directory of a small file every
    engine reads first in the new-file mode."""

    runs: int
    warmup: Path


COLD_MODES = ("process", "new_file")
COLD_MARK = "COLD-RESULT "
COLD_TIMEOUT = 1800


def cold_source(engine: Engine, query: Query, mode: str, path: Path, warmup: Path) -> str:
    """The program a fresh process runs: the engine's imports and set-up, the query, and
    then (untimed) the result's fingerprint on stdout. In ``new_file`` mode the query first
    runs on ``warmup``, and only the run on ``path`` is timed."""
    lines = ["import time", engine.cold_program(query)]
    if mode == "new_file":
        lines += [f"run({str(warmup)!r})", "start = time.monotonic()"]
    lines += [
        f"table = run({str(path)!r})",
        "end = time.monotonic()",
        "import json, sys",
        f"sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})",
        "from compare import fingerprint",
        f"seconds = end - start if {mode == 'new_file'!r} else None",
        "out = {'end': end, 'seconds': seconds, 'fingerprint': fingerprint(table)}",
        f"print({COLD_MARK!r} + json.dumps(out), flush=True)",
        engine.cold_cleanup(),
    ]
    return "\n".join(lines) + "\n"


def cold_run(
    engine: Engine, query: Query, mode: str, path: Path, warmup: Path
) -> tuple[float, str]:
    """Seconds of one cold run and its rows' fingerprint. ``process``: from just before the
    process is spawned to the result (time.monotonic is one clock for every process)."""
    env = {k: v for k, v in os.environ.items() if k != spark_env.CONNECT_ENV}
    env |= engine.cold_env()
    program = cold_source(engine, query, mode, path, warmup)
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        env=env,
        timeout=COLD_TIMEOUT,
        check=False,
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith(COLD_MARK)), None)
    if line is None:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"exit {proc.returncode}: {tail}")
    out = json.loads(line[len(COLD_MARK) :])
    seconds = out["seconds"] if mode == "new_file" else out["end"] - start
    return float(seconds), str(out["fingerprint"])


def measure_cold(trials: list[Trial], query: Query, cold: Cold) -> None:
    """Cold runs of every engine whose warm runs finished, after them (page cache warm)."""
    for trial in trials:
        cell = trial.cell
        if not cell.ok:
            continue
        for mode in COLD_MODES:
            for _ in range(cold.runs):
                try:
                    seconds, found = cold_run(
                        trial.engine, query, mode, trial.engine.path, cold.warmup
                    )
                except Exception as e:
                    cell.cold_error = f"{mode}: {type(e).__name__}: {e}"[:300]
                    break
                getattr(cell, f"cold_{mode}_s").append(seconds)
                if found != cell.fingerprint:
                    cell.cold_error = f"{mode}: rows {found} differ from the warm runs'"
            if cell.cold_error:
                break


def run_all(
    layouts: dict[str, tuple[Path, list[Query]]],
    engines: list[Engine],
    runs: int,
    cold: Cold | None = None,
) -> list[Cell]:
    cells: list[Cell] = []
    for layout, (path, queries) in layouts.items():
        for engine in engines:
            if engine.unavailable() is None:
                engine.open(path, layout)
        for query in queries:
            print(f"{layout} / {query.name}: {query.sql_where() or '(no predicate)'}", flush=True)
            row: list[Cell] = []
            trials: list[Trial] = []
            for engine in engines:
                cell = Cell(layout, query.name, engine.name, loadavg=loadavg())
                cell.skipped = engine.unavailable()
                row.append(cell)
                trials.append(Trial(cell, engine))
            measure(trials, query, runs)
            if cold is not None:
                measure_cold(trials, query, cold)
            for cell in row:
                progress(cell)
            check_agreement(row)
            cells.extend(row)
    return cells


# ---------------------------------------------------------------------------------------------
# Reporting


def human_bytes(n: int | None) -> str:
    if n is None:
        return "n/a"
    value = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.3g} {unit}"
        value /= 1000
    raise AssertionError


def plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def fmt_ms(ms: float) -> str:
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def machine() -> dict[str, Any]:
    """CPU, cores, memory and load, from /proc."""
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kb / 1024**2, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
    }


def versions() -> dict[str, str]:
    found = {}
    for package in (
        "pqindex",
        "pyarrow",
        "duckdb",
        "datafusion",
        "polars",
        "pyspark",
        "tpchgen-cli",
    ):
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def peers(cells: list[Cell]) -> list[Cell]:
    """Peer cells that count: finished and agreeing with the majority."""
    return [c for c in cells if c.engine not in PQINDEX_ENGINES and c.ok and not c.mismatch]


@dataclass
class Comparison:
    layout: str
    query: str
    pqindex_ms: float
    fastest: str
    fastest_ms: float
    pqindex_bytes: int | None
    fewest: str | None
    fewest_bytes: int | None
    pqindex_spread: tuple[float, float] = (0.0, 0.0)  # fastest and slowest run, ms
    fastest_spread: tuple[float, float] = (0.0, 0.0)

    @property
    def time_ratio(self) -> float:
        return self.pqindex_ms / self.fastest_ms

    @property
    def slower_beyond_spread(self) -> bool:
        """Every pqindex run slower than every run of the fastest peer: a difference the
        run's own spread does not cover."""
        return self.pqindex_spread[0] > self.fastest_spread[1]

    @property
    def bytes_ratio(self) -> float | None:
        if self.pqindex_bytes is None or not self.fewest_bytes:
            return None
        return self.pqindex_bytes / self.fewest_bytes


def compare(cells: list[Cell]) -> list[Comparison]:
    """pqindex against the fastest and the most frugal peer, per layout and query."""
    out = []
    for (layout, query), group in itertools.groupby(cells, key=lambda c: (c.layout, c.query)):
        row = list(group)
        mine = next((c for c in row if c.engine == "pqindex" and c.ok), None)
        others = peers(row)
        if mine is None or not others:
            continue
        fastest = min(others, key=Cell.median_ms)
        with_bytes = [c for c in others if c.bytes_read() is not None]
        fewest = min(with_bytes, key=lambda c: c.bytes_read() or 0) if with_bytes else None
        out.append(
            Comparison(
                layout,
                query,
                mine.median_ms(),
                fastest.engine,
                fastest.median_ms(),
                mine.bytes_read(),
                fewest.engine if fewest else None,
                fewest.bytes_read() if fewest else None,
                spread_ms(mine),
                spread_ms(fastest),
            )
        )
    return out


def spread_ms(cell: Cell) -> tuple[float, float]:
    return min(cell.seconds) * 1000, max(cell.seconds) * 1000


def load_text(cells: list[Cell], cores: int) -> str:
    """Load during the run, with a warning when other work competed for the cores."""
    loads = sorted(c.loadavg for c in cells if c.loadavg is not None)
    if not loads:
        return "n/a"
    text = f"median {statistics.median(loads):.2f}, max {loads[-1]:.2f}"
    if statistics.median(loads) > cores:
        text += f" (more than {cores} cores: other work shared the machine, times are inflated)"
    return text


def geomean(values: Sequence[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else math.nan


def cell_text(cell: Cell | None) -> str:
    if cell is None:
        return ""
    if cell.skipped:
        return "skipped"
    if cell.error:
        return f"**ERROR** {cell.error[:80]}"
    ms = [s * 1000 for s in cell.seconds]
    text = (
        f"{fmt_ms(cell.median_ms())} [{fmt_ms(min(ms))}-{fmt_ms(max(ms))}]"
        f"<br>{human_bytes(cell.bytes_read())}<br>{cell.rows:,} rows{cold_text(cell, '<br>')}"
    )
    return f"**MISMATCH** {text}" if cell.mismatch else text


def markdown(
    cells: list[Cell],
    context: dict[str, Any],
    engines: list[str],
    queries: dict[str, list[Query]],
) -> str:
    sf = context["sf"]
    lines = [f"# pqindex and its peers on TPC-H lineitem, SF{sf:g}", ""]
    m = context["machine"]
    lines += [
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB RAM, "
        f"Linux {m['kernel']}, Python {m['python']}. Load average at start "
        f"{' '.join(m['loadavg'])}, at end {' '.join(context['loadavg_end'])}; "
        f"1-minute load sampled per cell: {load_text(cells, m['cores'])}.",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in context["versions"].items()) + ".",
        "",
        f"Command: `{context['command']}` ({context['total_seconds'] / 60:.1f} min in all, "
        f"{context['started']}).",
        "",
        f"Each cell: median wall time in ms over {plural(context['runs'], 'warm run')} "
        "[min-max], after one warm-up run; bytes requested from storage in one run (median); "
        "rows returned. "
        "Warm means the OS page cache holds the files and each engine keeps whatever it caches "
        "between queries (pqindex its parsed footers and page indexes). Times include planning "
        "and materialising the result as Arrow (polars: a DataFrame); for the Spark engines, "
        "building the DataFrame (listing, schema, analysis; pqindex.spark also plans, and "
        "reads small selections on the driver, there) plus `toArrow()` (the JSON keeps "
        "`dataframe_ms` and `action_ms` apart). Spark engines whose name ends in `_connect` "
        "build their DataFrames through a Spark Connect client of a local server in the same "
        "JVM as the classic session.",
        "",
    ]
    if context.get("cold_runs"):
        lines += [
            f"Cold (median of {plural(context['cold_runs'], 'run')}, `cold A / B ms` in a "
            "cell): A is the query in a fresh Python process, timed from just before the "
            "process is spawned to the result as Arrow (interpreter start, imports, the "
            "engine's set-up (a local Spark starts its JVM; a Connect client connects to the "
            "running server), footers and everything else a first query needs; the page "
            "cache stays warm). B is the first query on files the process has never seen: a "
            "fresh process runs the query on a small other file first, untimed, then the "
            "timed query on the layout.",
            "",
        ]
    lines += [
        "Bytes: "
        + "; ".join(f"{name}: {ENGINES[name].bytes_source}" for name in engines)
        + ". rchar counts what read-type system calls returned, so the page cache does not "
        "hide it; mmap-ed reads would not be counted.",
        "",
        "## Layouts",
        "",
    ]
    for name, info in context["layouts"].items():
        lines.append(
            f"- **{name}**: {info['description']}. {plural(info['files'], 'file')}, "
            f"{human_bytes(info['bytes'])}, {info['row_groups']:,} row groups; bloom filters "
            "(first file): "
            f"{', '.join(info['bloom_filter_columns']) or 'none'}; page index: "
            f"{'yes' if info['page_index'] else 'no'}."
        )
    lines += ["", "## Queries", ""]
    for query_set, listed in queries.items():
        users = [n for n, info in context["layouts"].items() if info["query_set"] == query_set]
        lines += [f"{query_set.capitalize()} set (layouts {', '.join(users)}):", ""]
        for q in listed:
            where = f" WHERE {q.sql_where()}" if q.where is not None else ""
            lines.append(f"- `{q.name}`: `SELECT {q.select_list()} FROM lineitem{where}`")
        lines.append("")
    lines += ["## Results", ""]
    lines.append("| layout | query | " + " | ".join(engines) + " |")
    lines.append("|---|---|" + "---:|" * len(engines))
    index = {(c.layout, c.query, c.engine): c for c in cells}
    for (layout, query), _ in itertools.groupby(cells, key=lambda c: (c.layout, c.query)):
        texts = [cell_text(index.get((layout, query, e))) for e in engines]
        lines.append(f"| {layout} | {query} | " + " | ".join(texts) + " |")
    lines += summary(cells)
    return "\n".join(lines) + "\n"


def summary(cells: list[Cell]) -> list[str]:
    rows = compare(cells)
    lines = [
        "",
        "## Summary: pqindex against the fastest peer and the fewest-bytes peer",
        "",
        "Ratios are pqindex / peer (below 1: pqindex faster or reads less). Peers whose rows "
        "disagree with the majority do not count.",
        "",
        "| layout | query | pqindex ms | fastest peer | peer ms | time ratio | pqindex bytes "
        "| fewest-bytes peer | peer bytes | bytes ratio |",
        "|---|---|---:|---|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        br = r.bytes_ratio
        lines.append(
            f"| {r.layout} | {r.query} | {fmt_ms(r.pqindex_ms)} | {r.fastest} | "
            f"{fmt_ms(r.fastest_ms)} | {r.time_ratio:.2f} | {human_bytes(r.pqindex_bytes)} | "
            f"{r.fewest or 'n/a'} | {human_bytes(r.fewest_bytes)} | "
            f"{'n/a' if br is None else f'{br:.2f}'} |"
        )
    lines += ["", "Geometric mean of the time ratio (and of the bytes ratio):", ""]
    for layout in dict.fromkeys(r.layout for r in rows):
        part = [r for r in rows if r.layout == layout]
        lines.append(f"- {layout}: {geomean_text(part)}")
    lines.append(f"- all: {geomean_text(rows)}")
    slower = [r for r in rows if r.time_ratio > 1]
    beyond = [r for r in slower if r.slower_beyond_spread]
    heavier = [r for r in rows if (r.bytes_ratio or 0) > 1]
    lines += [
        "",
        f"pqindex slower than the fastest peer: {len(slower)} of {len(rows)} by the medians; "
        f"beyond the run's spread (pqindex's fastest run slower than the peer's slowest): "
        f"{len(beyond)}",
        "",
    ]
    lines += [
        f"- {r.layout} {r.query}: {fmt_ms(r.pqindex_ms)} ms "
        f"[{fmt_ms(r.pqindex_spread[0])}-{fmt_ms(r.pqindex_spread[1])}] vs {r.fastest} "
        f"{fmt_ms(r.fastest_ms)} ms [{fmt_ms(r.fastest_spread[0])}-{fmt_ms(r.fastest_spread[1])}] "
        f"(x{r.time_ratio:.2f}, {'beyond' if r.slower_beyond_spread else 'within'} the spread)"
        for r in slower
    ]
    lines += ["", f"pqindex reads more bytes than the fewest-bytes peer: {len(heavier)}", ""]
    lines += [
        f"- {r.layout} {r.query}: {human_bytes(r.pqindex_bytes)} vs {r.fewest} "
        f"{human_bytes(r.fewest_bytes)} (x{r.bytes_ratio or 0:.2f})"
        for r in heavier
    ]
    lines += spark_summary(cells)
    lines += cold_summary(cells)
    problems = [c for c in cells if c.mismatch or c.error or c.cold_error]
    lines += ["", f"Row mismatches and errors: {len(problems)}", ""]
    lines += [
        f"- {c.layout} {c.query} {c.engine}: "
        + (
            f"MISMATCH, {c.rows} rows ({c.fingerprint})"
            if c.mismatch
            else f"{c.error or ''}{' cold: ' + c.cold_error if c.cold_error else ''}"
        )
        for c in problems
    ]
    skipped = sorted({(c.engine, c.skipped) for c in cells if c.skipped})
    if skipped:
        lines += ["", "Skipped: " + "; ".join(f"{e} ({why})" for e, why in skipped)]
    return lines


def spark_summary(cells: list[Cell]) -> list[str]:
    """pqindex via Spark against Spark's own reader, per mode, when both ran."""
    index = {(c.layout, c.query, c.engine): c for c in cells}
    lines: list[str] = []
    for mine_name, theirs_name in SPARK_PAIRS:
        pairs = [
            (c, index.get((c.layout, c.query, theirs_name)))
            for c in cells
            if c.engine == mine_name and c.ok and not c.mismatch
        ]
        rows = [(mine, spark) for mine, spark in pairs if spark is not None and spark.ok]
        if not rows:
            continue
        lines += ["", f"{mine_name} against {theirs_name} (time ratio):", ""]
        lines += [
            f"- {m.layout} {m.query}: {fmt_ms(m.median_ms())} ms vs {fmt_ms(s.median_ms())} ms "
            f"(x{m.median_ms() / s.median_ms():.2f})"
            for m, s in rows
        ]
        for layout in dict.fromkeys(m.layout for m, _ in rows):
            ratios = [m.median_ms() / s.median_ms() for m, s in rows if m.layout == layout]
            slower = sum(r > 1 for r in ratios)
            lines.append(
                f"- geometric mean, {layout}: x{geomean(ratios):.2f} over {len(ratios)} "
                f"queries, slower on {slower}"
            )
        ratios = [m.median_ms() / s.median_ms() for m, s in rows]
        lines.append(f"- geometric mean: x{geomean(ratios):.2f} over {len(rows)} queries")
    return lines


def cold_summary(cells: list[Cell]) -> list[str]:
    """pqindex's cold figures against the fastest peer's, per mode."""
    lines: list[str] = []
    for mode, what in (("process", "fresh process"), ("new_file", "first query on new files")):
        ratios = []
        for (layout, query), group in itertools.groupby(cells, key=lambda c: (c.layout, c.query)):
            row = list(group)
            mine = next((c for c in row if c.engine == "pqindex"), None)
            others = [c for c in peers(row) if c.cold_ms(mode) is not None]
            ours = mine.cold_ms(mode) if mine is not None else None
            if ours is None or not others:
                continue
            best = min(others, key=lambda c: c.cold_ms(mode) or math.inf)
            theirs = best.cold_ms(mode) or math.nan
            ratios.append((layout, query, ours, best.engine, theirs))
        if not ratios:
            continue
        lines += ["", f"Cold, {what}: pqindex against the fastest peer:", ""]
        lines += [
            f"- {layout} {query}: {fmt_ms(ours)} ms vs {engine} {fmt_ms(theirs)} ms "
            f"(x{ours / theirs:.2f})"
            for layout, query, ours, engine, theirs in ratios
        ]
        mean = geomean([ours / theirs for _, _, ours, _, theirs in ratios])
        lines.append(f"- geometric mean: x{mean:.2f} over {len(ratios)} queries")
    return lines


def geomean_text(rows: list[Comparison]) -> str:
    times = geomean([r.time_ratio for r in rows])
    ratios = [b for r in rows if (b := r.bytes_ratio) is not None and b > 0]
    return f"time x{times:.2f}, bytes x{geomean(ratios):.2f} over {len(rows)} queries"


def chart(cells: list[Cell], engines: list[str], path: Path, title: str) -> bool:
    """Median times on a log scale: one panel per layout, one bar per engine and query
    (False, and no chart, without matplotlib)."""
    try:
        import matplotlib
    except ImportError:
        return False

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layouts = list(dict.fromkeys(c.layout for c in cells))
    queries = list(dict.fromkeys(c.query for c in cells))
    index = {(c.layout, c.query, c.engine): c for c in cells}
    fig, axes = plt.subplots(
        len(layouts),
        1,
        figsize=(max(12, len(queries) * 1.1), 3.6 * len(layouts)),
        squeeze=False,
        sharey=True,
    )
    width = 0.8 / max(1, len(engines))
    for ax, layout in zip(axes[:, 0], layouts, strict=True):
        for i, engine in enumerate(engines):
            xs, ys = [], []
            for j, query in enumerate(queries):
                c = index.get((layout, query, engine))
                if c is not None and c.ok:
                    xs.append(j + (i - (len(engines) - 1) / 2) * width)
                    ys.append(c.median_ms())
            ax.bar(xs, ys, width, label=engine, color=f"C{i}")
        ax.set_yscale("log")
        ax.set_ylabel("median ms")
        ax.set_title(layout, loc="left", fontsize=10)
        ax.set_xticks(range(len(queries)))
        ax.set_xticklabels(queries, rotation=30, ha="right", fontsize=8)
        ax.grid(axis="y", which="both", alpha=0.3)
    axes[0, 0].legend(ncols=len(engines), fontsize=8, loc="upper left")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ---------------------------------------------------------------------------------------------
# Entry point


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    here = Path(__file__).resolve().parent
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    p.add_argument("--runs", type=int, default=5, help="timed warm runs per cell (default 5)")
    p.add_argument("--engines", default=",".join(ENGINES), help="comma list: " + ",".join(ENGINES))
    p.add_argument(
        "--layouts",
        default=",".join(layout.name for layout in LAYOUTS),
        help="comma list of layouts",
    )
    p.add_argument("--queries", default="*", help="comma list of query names or globs")
    p.add_argument("--no-spark", action="store_true", help="skip Spark layouts and engines")
    p.add_argument("--data-dir", type=Path, default=Path("/tmp/pqindex-bench"))
    p.add_argument("--out", type=Path, default=here / "results")
    p.add_argument("--spark-memory", default="6g", help="spark.driver.memory (default 6g)")
    p.add_argument(
        "--spark-mode",
        choices=("classic", "connect", "both"),
        default="classic",
        help="run the Spark engines on a classic session, through a Spark Connect client "
        "(as spark_connect, pqindex_spark_connect), or both (default classic)",
    )
    p.add_argument(
        "--cold",
        action="store_true",
        help="also time each engine's first query in fresh processes (see the docstring)",
    )
    p.add_argument("--cold-runs", type=int, default=1, help="cold runs per mode (default 1)")
    p.add_argument(
        "--tag", default="", help="suffix of the result files: compare-sf1-TAG.md (default none)"
    )
    return p.parse_args(argv)


def chosen(names: str, known: Sequence[str], what: str) -> list[str]:
    picked = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in picked if n not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return picked


def select_layouts(names: str, no_spark: bool) -> list[Layout]:
    """The layouts asked for, without the Spark-written ones under --no-spark."""
    picked = chosen(names, [layout.name for layout in LAYOUTS], "layouts")
    return [
        layout
        for layout in LAYOUTS
        if layout.name in picked and not (no_spark and layout.needs_spark)
    ]


def select_queries(patterns: str, keys: Keys, query_set: str = "standard") -> list[Query]:
    """Queries of a set whose name matches a glob, or whose base name (before the dot) is
    given."""
    globs = [p.strip() for p in patterns.split(",") if p.strip()]
    return [
        q
        for q in QUERY_SETS[query_set](keys)
        if any(fnmatch.fnmatch(q.name, g) or q.name.startswith(g + ".") for g in globs)
    ]


def select_engines(names: str, mode: str, no_spark: bool) -> list[str]:
    """The engines asked for, with the Spark ones in the modes asked for."""
    picked = chosen(names, list(ENGINES), "engines")
    out: list[str] = []
    for name in picked:
        twin = CONNECT_TWINS.get(name)
        if twin is None:
            out.append(name)
            continue
        if mode in ("classic", "both"):
            out.append(name)
        if mode in ("connect", "both"):
            out.append(twin)
    out = list(dict.fromkeys(out))
    if no_spark:
        out = [e for e in out if not ENGINES[e].needs_spark]
    return out


def write_cold_warmup(raw: Path, root: Path) -> Path:
    """A directory with one small lineitem file (the raw file's first rows, pqindex.write):
    what a cold process reads before the layout in the new-file mode."""
    out = root / "cold-warmup"
    if (out / DONE).exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    schema = plain_string_schema(pq.read_schema(raw))
    first = next(pq.ParquetFile(raw).iter_batches(batch_size=10_000)).cast(schema)
    pqindex_write(pa.Table.from_batches([first], schema), out / "part-0.parquet")
    (out / DONE).touch()
    return out


def needs_spark(layouts: list[Layout], engine_names: list[str], root: Path) -> bool:
    """Start Spark only for a Spark engine or a Spark layout not yet on disk."""
    unbuilt = any(lay.needs_spark and not (root / lay.name / DONE).exists() for lay in layouts)
    return unbuilt or any(ENGINES[name].needs_spark for name in engine_names)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    started = time.perf_counter()
    context: dict[str, Any] = {
        "sf": args.sf,
        "runs": args.runs,
        "command": shlex.join(["python", *sys.argv]),
        "started": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": machine(),
        "versions": versions(),
    }
    engine_names = select_engines(args.engines, args.spark_mode, args.no_spark)
    layouts = select_layouts(args.layouts, args.no_spark)
    context["spark_mode"] = args.spark_mode
    context["cold_runs"] = args.cold_runs if args.cold else 0

    root = args.data_dir / f"sf{args.sf:g}"
    raw = generate_raw(root, args.sf)
    sessions = None
    if needs_spark(layouts, engine_names, root):
        connect = any(getattr(ENGINES[name], "connect", False) for name in engine_names)
        sessions = spark_env.start_sessions(
            args.spark_memory, root / "spark-warehouse", connect=connect
        )
        SparkEngine.spark = sessions.classic
        SparkEngine.client = sessions.connect
        SparkEngine.connect_url = sessions.connect_url
        SparkEngine.driver_memory = args.spark_memory
        SparkEngine.warehouse = root / "spark-warehouse-cold"
    spark = sessions.classic if sessions is not None else None
    paths = {lay.name: build_layout(lay, raw, root, spark) for lay in layouts}
    context["layouts"] = {
        lay.name: {
            "description": lay.description,
            "query_set": lay.query_set,
            **describe_files(paths[lay.name]),
        }
        for lay in layouts
    }
    keys = pick_keys(raw)
    context["keys"] = asdict(keys)
    queries = {
        query_set: select_queries(args.queries, keys, query_set)
        for query_set in dict.fromkeys(lay.query_set for lay in layouts)
    }
    plan = {lay.name: (paths[lay.name], queries[lay.query_set]) for lay in layouts}
    cold = Cold(args.cold_runs, write_cold_warmup(raw, root)) if args.cold else None

    engines = [ENGINES[name]() for name in engine_names]
    cells = run_all(plan, engines, args.runs, cold)

    context["total_seconds"] = time.perf_counter() - started
    context["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
    write_results(args.out, cells, context, engine_names, queries, args.tag)
    if sessions is not None:
        sessions.stop()


def write_results(
    out: Path,
    cells: list[Cell],
    context: dict[str, Any],
    engines: list[str],
    queries: dict[str, list[Query]],
    tag: str = "",
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    name = f"compare-sf{context['sf']:g}" + (f"-{tag}" if tag else "")

    def stem(suffix: str) -> Path:  # not with_suffix: "sf0.1" holds a dot
        return out / f"{name}{suffix}"

    md = markdown(cells, context, engines, queries)
    stem(".md").write_text(md)
    raw = {
        **context,
        "queries": [
            {"set": query_set, "name": q.name, "where": q.sql_where(), "columns": q.columns}
            for query_set, listed in queries.items()
            for q in listed
        ],
        "cells": [
            asdict(c)
            | {
                "median_ms": c.median_ms() if c.ok else None,
                "bytes": c.bytes_read(),
                **{f"cold_{mode}_ms": c.cold_ms(mode) for mode in COLD_MODES},
            }
            for c in cells
        ],
        "comparisons": [
            asdict(r) | {"time_ratio": r.time_ratio, "bytes_ratio": r.bytes_ratio}
            for r in compare(cells)
        ],
    }
    stem(".json").write_text(json.dumps(raw, indent=1, default=str) + "\n")
    charted = chart(
        cells,
        engines,
        stem(".png"),
        f"TPC-H lineitem SF{context['sf']:g}, warm, median ms (log)",
    )
    kinds = ".json and .png" if charted else ".json (no .png: matplotlib is not installed)"
    print(f"\nwrote {out / name}.md, {kinds} in {context['total_seconds'] / 60:.1f} min")
    print("\n".join(summary(cells)))


if __name__ == "__main__":
    main()
