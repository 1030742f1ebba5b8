"""TPC-H lineitem from tpchgen-cli and the layouts written from it, once per scale
factor and reused while their marker file exists."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import compare_spark_env as spark_env
import numpy as np
import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.compute as pc  # type: ignore[import-untyped,unused-ignore]
import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

from .queries import Keys

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
