"""Text search: n-gram and token page indexes on ``l_comment`` of TPC-H lineitem as Spark
writes it, against DuckDB, polars and DataFusion (pushdown_filters and reorder_filters on);
what the indexes cost to build and keep; and how much of an index a lookup reads, locally
and on an S3 server with 20 ms per request.

    python benches/text_search.py [--sf 1] [--runs 5] [--layout spark|pyarrow]
        [--engines pqindex,duckdb,polars,datafusion] [--s3-latency 0.02] [--no-s3]
        [--data-dir /tmp/pqindex-bench] [--out benches/results]

``--layout spark`` rewrites tpchgen's lineitem with Spark as ``compare.py`` does (its
``spark_plain`` layout, reused when built); ``--layout pyarrow`` writes what Spark writes
without Spark: one row group per file of about 128 MB of input, pages of at most 20,000 rows
and 1 MiB, dictionary encoding with parquet-mr's 1 MiB fallback, Snappy, a page index.

The Spark files are hard-linked into a work directory and indexed there (``add_indexes``
writes a new file and renames it over the link, so the layout itself is never changed):
``NgramIndex("l_comment")`` and ``TokenIndex("l_comment")`` at page granularity. A copy
sorted by ``l_comment`` (DuckDB's sort, written by pqindex as compare.py's sorted layout)
takes the prefix search. The literals are picked from the data: the word, and the pair of
adjacent words, found in the fewest rows (ties: the longest, then the first in byte
order), and the first ten bytes of the middle row's comment as the prefix.

Every time is warm (one untimed run first), the median of --runs, engines interleaved as in
compare.py, rows checked to agree. Bytes: pqindex's ``bytes_read``; the peers' growth of
``rchar`` in /proc/self/io (compare.py's Meter).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

sys.path.insert(0, str(Path(__file__).resolve().parent))  # compare, run as a script

import compare
import pqindex

COLUMN = "l_comment"
INDEXES = {
    "ngram": pqindex.NgramIndex(COLUMN, granularity="page"),
    "token": pqindex.TokenIndex(COLUMN, granularity="page"),
}
SPARK_PAGE_ROWS = 20_000  # parquet-mr's page row count limit
SPARK_PAGE_BYTES = 1 << 20  # parquet-mr's page size and dictionary page size
SPARK_SPLIT_BYTES = 128 << 20  # Spark's maxPartitionBytes: one output file per input split
TARGET = 20.0  # substring searches: times faster than the fastest peer


# ---------------------------------------------------------------------------------------------
# Data


def write_spark_like(raw: Path, out: Path) -> None:
    """What Spark writes from ``raw`` (see the module doc), written with pyarrow."""
    source = pq.ParquetFile(raw)
    splits = max(1, -(-raw.stat().st_size // SPARK_SPLIT_BYTES))
    per_file = -(-source.metadata.num_rows // splits)
    schema = compare.plain_string_schema(source.schema_arrow)
    batches = compare.batches(raw, schema)
    pending: list[Any] = []
    for n in range(splits):
        rows = 0
        while rows < per_file:
            batch = next(batches, None)
            if batch is None:
                break
            take = min(batch.num_rows, per_file - rows)
            pending.append(batch.slice(0, take))
            if take < batch.num_rows:
                batches = _prepend(batch.slice(take), batches)
            rows += take
        if not rows:
            break
        pq.write_table(
            pa.Table.from_batches(pending, schema),
            out / f"part-{n:05d}-pyarrow.snappy.parquet",
            row_group_size=rows,
            max_rows_per_page=SPARK_PAGE_ROWS,
            data_page_size=SPARK_PAGE_BYTES,
            dictionary_pagesize_limit=SPARK_PAGE_BYTES,
            compression="snappy",
            write_page_index=True,
        )
        pending.clear()
    (out / compare.DONE).touch()


def _prepend(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


def source_layout(args: argparse.Namespace, root: Path, raw: Path) -> Path:
    """The Spark-written files (built once, reused while their marker exists)."""
    if args.layout == "spark":
        layout = next(x for x in compare.LAYOUTS if x.name == "spark_plain")
        if (root / layout.name / compare.DONE).exists():
            return root / layout.name
        spark = compare.spark_env.start_spark("4g", root / "spark-warehouse")
        try:
            return compare.build_layout(layout, raw, root, spark)
        finally:
            spark.stop()
    out = root / "spark_like_pyarrow"
    if not (out / compare.DONE).exists():
        print("writing the Spark-like layout with pyarrow ...", flush=True)
        tmp = root / "spark_like_pyarrow.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        write_spark_like(raw, tmp)
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
    return out


def sorted_layout(raw: Path, root: Path) -> Path:
    """lineitem sorted by l_comment, written as compare.py writes its sorted layout."""
    out = root / "sorted_by_comment"
    if (out / compare.DONE).exists():
        return out
    import duckdb

    print("writing lineitem sorted by l_comment ...", flush=True)
    tmp = root / "sorted_by_comment.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    sorted_raw = tmp / "_sorted.tmp.parquet"
    con = duckdb.connect()
    con.execute(f"SET temp_directory = '{tmp}'")
    con.execute("SET memory_limit = '4GB'")
    con.execute(
        f"COPY (SELECT * FROM read_parquet('{raw}') ORDER BY {COLUMN}) TO '{sorted_raw}' "
        "(FORMAT parquet)"
    )
    con.close()
    schema = compare.plain_string_schema(pq.read_schema(raw))
    compare.pqindex_write(
        pa.RecordBatchReader.from_batches(schema, compare.batches(sorted_raw, schema)),
        tmp / "part-0.parquet",
    )
    sorted_raw.unlink()
    (tmp / compare.DONE).touch()
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def linked_copy(source: Path, dest: Path) -> list[Path]:
    """``source``'s data files hard-linked into a fresh ``dest``."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    files = []
    for f in compare.data_files(source):
        os.link(f, dest / f.name)
        files.append(dest / f.name)
    return files


# ---------------------------------------------------------------------------------------------
# Literals, from the data


@dataclass(frozen=True)
class Literals:
    word: str
    word_rows: int
    pair: str
    pair_rows: int
    prefix: str
    prefix_rows: int


SAMPLE_ROWS = 1_000_000  # candidates come from the first rows; counts from every row
CANDIDATES = 12


def pick_literals(raw: Path) -> Literals:
    """The rarest whole word and pair of adjacent words of l_comment, and a prefix.

    Candidates are the least frequent words (pairs) inside the comments of the first
    SAMPLE_ROWS rows (a comment's first and last words may be cut); the one found as a
    substring in the fewest rows of the whole column wins (ties: the longest, then the
    first in byte order).
    """
    import duckdb

    con = duckdb.connect()
    src = f"read_parquet('{raw}')"
    con.execute(
        f"CREATE TEMP TABLE words AS SELECT string_split({COLUMN}, ' ') AS w "
        f"FROM (SELECT {COLUMN} FROM {src} LIMIT {SAMPLE_ROWS})"
    )

    def rarest(sql: str, pattern: str) -> list[str]:
        rows = con.execute(
            f"SELECT t FROM ({sql}) WHERE regexp_full_match(t, '{pattern}') "
            f"GROUP BY t ORDER BY count(*), length(t) DESC, t LIMIT {CANDIDATES}"
        ).fetchall()
        return [r[0] for r in rows]

    words = rarest("SELECT unnest(w[2:len(w) - 1]) AS t FROM words", "[A-Za-z]{4,}")
    pairs = rarest(
        "SELECT unnest(list_transform(range(2, len(w) - 1), "
        "lambda i: w[i] || ' ' || w[i + 1])) AS t FROM words",
        "[A-Za-z]{3,} [A-Za-z]{3,}",
    )
    candidates = words + pairs
    sums = ", ".join(f"count(*) FILTER (WHERE contains({COLUMN}, ?))" for _ in candidates)
    counted = con.execute(f"SELECT {sums} FROM {src}", candidates).fetchone()
    assert counted is not None
    counts = dict(zip(candidates, counted, strict=True))

    def best(group: list[str]) -> tuple[str, int]:
        n, _, t = min((counts[t], -len(t), t) for t in group if counts[t] > 0)
        return t, n

    word, word_rows = best(words)
    pair, pair_rows = best(pairs)
    middle = con.execute(
        f"SELECT {COLUMN} FROM {src} LIMIT 1 OFFSET (SELECT count(*) // 2 FROM {src})"
    ).fetchone()
    assert middle is not None
    prefix = str(middle[0])[:10]
    prefix_rows = con.execute(
        f"SELECT count(*) FROM {src} WHERE starts_with({COLUMN}, ?)", [prefix]
    ).fetchone()
    assert prefix_rows is not None
    return Literals(word, word_rows, pair, pair_rows, prefix, int(prefix_rows[0]))


# ---------------------------------------------------------------------------------------------
# Queries and engines


def quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@dataclass(frozen=True)
class TextQuery:
    """A ``SELECT *`` with one string predicate, in each engine's terms (compare.py's
    engines read ``name``, ``where``, ``columns``, ``select_list`` and ``sql_where``)."""

    name: str
    sql: str  # pqindex, DuckDB and DataFusion
    kind: str  # contains | starts_with
    literal: str
    columns: tuple[str, ...] | None = None

    @property
    def where(self) -> str:
        return self.sql

    def select_list(self) -> str:
        return "*"

    def sql_where(self) -> str:
        return self.sql

    def polars(self) -> Any:
        import polars as pl

        col = pl.col(COLUMN).str
        if self.kind == "contains":
            return col.contains(self.literal, literal=True)
        return col.starts_with(self.literal)


ABSENT = "zyzzyva"  # a word the generator never writes (checked): a search that finds nothing


def queries(lit: Literals) -> dict[str, TextQuery]:
    return {
        "contains_absent": TextQuery(
            "contains_absent", f"contains({COLUMN}, {quote(ABSENT)})", "contains", ABSENT
        ),
        "like_pair": TextQuery(
            "like_pair", f"{COLUMN} LIKE {quote('%' + lit.pair + '%')}", "contains", lit.pair
        ),
        "contains_word": TextQuery(
            "contains_word", f"contains({COLUMN}, {quote(lit.word)})", "contains", lit.word
        ),
        "prefix": TextQuery(
            "prefix", f"{COLUMN} LIKE {quote(lit.prefix + '%')}", "starts_with", lit.prefix
        ),
    }


SUBSTRING_QUERIES = ("like_pair", "contains_word", "contains_absent")


class Polars(compare.Polars):
    """compare.py's polars, with the string predicate as a polars expression."""

    def prepare(self, query: Any) -> Callable[[], compare.Run]:
        import polars as pl

        glob = f"{self.path}/*.parquet"
        where = query.polars()

        def run() -> compare.Run:
            with compare.Meter() as m:
                result = pl.scan_parquet(glob).filter(where).collect()
            return compare.Run(m.seconds, result.to_arrow(), m.read, m.read)

        return run


ENGINES: dict[str, type[compare.Engine]] = {
    "pqindex": compare.Pqindex,
    "duckdb": compare.Duckdb,
    "polars": Polars,
    "datafusion": compare.Datafusion,
}


# ---------------------------------------------------------------------------------------------
# Index cost


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def index_sizes(files: list[Path]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for f in files:
        for ix in pqindex.list_indexes(f):
            sizes[ix["kind"]] = sizes.get(ix["kind"], 0) + int(ix["length"])
    return sizes


def build_indexes(files: list[Path], data_bytes: int) -> dict[str, Any]:
    """Add each kind on its own (timed; ``add_indexes`` also copies each file), next to a
    full scan of the column by pqindex and by DuckDB."""
    import duckdb

    out: dict[str, Any] = {}
    directory = files[0].parent
    scan_s, table = timed(lambda: pqindex.scan(directory, columns=[COLUMN]).to_arrow())
    column_bytes = sum(
        pq.ParquetFile(f).metadata.row_group(rg).column(c).total_compressed_size
        for f in files
        for rg in range(pq.ParquetFile(f).metadata.num_row_groups)
        for c in [pq.ParquetFile(f).schema_arrow.get_field_index(COLUMN)]
    )
    con = duckdb.connect()
    duck_s, _ = timed(
        lambda: con.sql(
            f"SELECT count({COLUMN}) FROM read_parquet('{directory}/*.parquet')"
        ).fetchall()
    )
    out["column_scan"] = {
        "rows": table.num_rows,
        "column_bytes": column_bytes,
        "pqindex_seconds": scan_s,
        "duckdb_count_seconds": duck_s,
    }
    before = index_sizes(files)
    for kind, definition in INDEXES.items():
        seconds, _ = timed(lambda d=definition: [pqindex.add_indexes(f, [d]) for f in files])
        size = index_sizes(files).get(kind, 0) - before.get(kind, 0)
        out[kind] = {
            "build_seconds": seconds,
            "bytes": size,
            "percent_of_data": 100 * size / data_bytes,
        }
        print(
            f"  {kind}: built in {seconds:.1f} s, {size / 1e6:.2f} MB "
            f"({100 * size / data_bytes:.2f} % of the data)",
            flush=True,
        )
    return out


# ---------------------------------------------------------------------------------------------
# Index reads: how much of each index a lookup fetches, locally and on S3


LOOKUP_INDEXES = {
    "distinct": pqindex.DistinctIndex("l_partkey", granularity="page"),
    "bloom": pqindex.BloomIndex(COLUMN, granularity="page"),
}


@dataclass(frozen=True)
class Lookup:
    name: str
    where: str
    directory: str  # under the work directory: unsorted (text indexes) or lookups
    kinds: tuple[str, ...]  # the indexes that may answer: their size is the index's


def lookups(qs: dict[str, TextQuery], raw: Path) -> list[Lookup]:
    """The substring searches, and the issue's two needles (a page distinct index on
    l_partkey, a page bloom index on l_comment) on their own copy of the files."""
    keys = compare.pick_keys(raw)
    out = [Lookup(q, qs[q].sql, "unsorted", tuple(INDEXES)) for q in SUBSTRING_QUERIES]
    out.append(Lookup("partkey_eq", f"l_partkey = {keys.partkey_point}", "lookups", ("distinct",)))
    out.append(Lookup("comment_eq", f"{COLUMN} = {quote(keys.comment)}", "lookups", ("bloom",)))
    return out


@dataclass
class LookupRead:
    name: str
    where: str
    place: str  # local | s3
    cache: str  # cold | warm (footers cached)
    rows: int
    ms: float
    bytes_read: int
    index_bytes_read: int
    index_bytes: int
    requests: int
    pages_read: int


def lookup_reads(
    base: str,
    todo: list[Lookup],
    sizes: dict[str, dict[str, int]],
    place: str,
    options: dict[str, Any] | None,
    runs: int,
) -> list[LookupRead]:
    """Each lookup cold (metadata cache cleared) and warm (median of ``runs``)."""
    out = []
    for lookup in todo:
        source = f"{base}/{lookup.directory}/"
        size = sum(sizes[lookup.directory].get(k, 0) for k in lookup.kinds)
        for cache in ("cold", "warm"):
            seconds: list[float] = []
            scan: Any = None
            rows = 0
            for _ in range(runs if cache == "warm" else 1):
                if cache == "cold":
                    pqindex.clear_metadata_cache()
                start = time.perf_counter()
                scan = pqindex.scan(source, where=lookup.where, storage_options=options)
                rows = scan.to_arrow().num_rows
                seconds.append(time.perf_counter() - start)
            m = scan.metrics()
            r = LookupRead(
                lookup.name,
                lookup.where,
                place,
                cache,
                rows,
                statistics.median(seconds) * 1000,
                int(m["bytes_read"]),
                int(m["index_bytes_read"]),
                size,
                int(m["requests"]) - int(m["list_requests"]),
                int(m["pages_read"]),
            )
            out.append(r)
            print(
                f"  {place} {cache} {lookup.name}: {rows} rows, {r.ms:.1f} ms, "
                f"{r.bytes_read:,} B, index {r.index_bytes_read:,} of {size:,} B, "
                f"{r.requests} requests",
                flush=True,
            )
    return out


def s3_lookup_reads(
    work: Path,
    todo: list[Lookup],
    sizes: dict[str, dict[str, int]],
    latency: float,
    runs: int,
) -> list[LookupRead]:
    """The same lookups through moto's S3 server behind tests/s3server.py's LatencyProxy,
    which adds ``latency`` to every request."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from s3server import s3_server

    with s3_server() as s3:
        client = s3.client()
        client.create_bucket(Bucket="bench")
        for directory in sorted({x.directory for x in todo}):
            for f in compare.data_files(work / directory):
                client.upload_file(str(f), "bench", f"{directory}/{f.name}")
        s3.proxy.delay = latency
        return lookup_reads("s3://bench", todo, sizes, "s3", s3.options(), runs)


# ---------------------------------------------------------------------------------------------
# The issue's repro: what a lookup fetches against its physical need


def lookup_repro(work: Path) -> list[dict[str, Any]]:
    """tests/test_index_reads.py's files (600,000 rows by pyarrow, one row group, 20,000-row
    pages; distinct, bloom, n-gram and token indexes): each lookup's bytes against the
    physical need computed there, locally (cold and warm) and on the S3 server (cold, with
    the proxy's latency for counting round trips, and warm), with the same row read through
    the page index of the sorted ``id`` as the baseline."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import test_index_reads as t
    from s3server import s3_server

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    files = t.write_files(work)
    rows: list[dict[str, Any]] = []
    baseline = {
        name: t.Case("none (page index)", name, f"id = {t.ROW}") for name in ("lookups", "tokens")
    }
    todo = [
        ("baseline", baseline["lookups"]),
        *files.cases.items(),
        ("baseline", baseline["tokens"]),
    ]
    with s3_server() as s3:
        client = s3.client()
        client.create_bucket(Bucket=t.BUCKET)
        for name in ("lookups", "tokens"):
            client.upload_file(str(work / f"{name}.parquet"), t.BUCKET, f"{name}.parquet")
        for name, case in todo:
            path = work / f"{case.file}.parquet"
            need = t.physical_need(path, [t.ROW])
            row: dict[str, Any] = {
                "case": name,
                "index": case.kind,
                "where": case.where,
                "need": need,
            }
            pqindex.clear_metadata_cache()
            for cache in ("local_cold", "local_warm"):
                m = pqindex.scan(path, where=case.where)
                assert m.to_arrow().num_rows == 1
                row[cache] = {k: int(v) for k, v in m.metrics().items() if k in REPRO_METRICS}
            url = f"s3://{t.BUCKET}/{case.file}.parquet"
            cold = t.timed_scan(s3, url, case.where)
            row["s3_cold"] = {k: v for k, v in cold.metrics.items() if k in REPRO_METRICS}
            row["s3_cold"]["round_trips"] = cold.round_trips
            m = pqindex.scan(url, where=case.where, storage_options=s3.options())
            assert m.to_arrow().num_rows == 1
            row["s3_warm"] = {k: int(v) for k, v in m.metrics().items() if k in REPRO_METRICS}
            rows.append(row)
            print(
                f"  {name}: need {need:,} B; local cold {row['local_cold']['bytes_read']:,}, "
                f"warm {row['local_warm']['bytes_read']:,}; S3 cold "
                f"{row['s3_cold']['bytes_read']:,} in {cold.round_trips} round trips, warm "
                f"{row['s3_warm']['bytes_read']:,}; "
                f"index {row['local_cold']['index_bytes_read']:,}",
                flush=True,
            )
    return rows


REPRO_METRICS = ("bytes_read", "index_bytes_read", "requests", "list_requests")


def repro_markdown(rows: list[dict[str, Any]], context: dict[str, Any]) -> str:
    hb = compare.human_bytes
    lines = [
        "# Lookup reads against the physical need (issue 21's repro)",
        "",
        f"`{context['command']}` at {context['commit']}, {context['started']}; load average "
        f"{' '.join(context['machine']['loadavg'])} ({context['machine']['cores']} cores, "
        "shared). 600,000 rows by pyarrow, one row group, 20,000-row pages; `SELECT *` of "
        "one row. Need = the row's page in every column, the dictionary pages those pages "
        "use, the footer and the page index (tests/test_index_reads.py). Target: at most "
        "1.1 x need + 64 KiB, index at most 64 KiB; on S3 at most one round trip more than "
        "the baseline. S3 cold reads the store's 512 KiB footer hint (the index blocks at "
        "the file's end, not the page index); S3 warm has the footer cached.",
        "",
        "| case | where | need | local cold | local warm | S3 cold (round trips) | S3 warm "
        "| index read |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def x(r: dict[str, Any], key: str) -> str:
        return f"{hb(r[key]['bytes_read'])} (x{r[key]['bytes_read'] / r['need']:.3f})"

    for r in rows:
        lines.append(
            f"| {r['case']} | `{r['where'][:40]}` | {hb(r['need'])} | {x(r, 'local_cold')} | "
            f"{x(r, 'local_warm')} | {x(r, 's3_cold')} ({r['s3_cold']['round_trips']}) | "
            f"{x(r, 's3_warm')} | {hb(r['local_cold']['index_bytes_read'])} |"
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Report


@dataclass
class Report:
    context: dict[str, Any]
    literals: Literals
    build: dict[str, Any]
    cells: list[compare.Cell] = field(default_factory=list)
    lookups: list[LookupRead] = field(default_factory=list)


def speedups(cells: list[compare.Cell]) -> list[dict[str, Any]]:
    out = []
    for c in compare.compare(cells):
        out.append(
            {
                "layout": c.layout,
                "query": c.query,
                "pqindex_ms": c.pqindex_ms,
                "fastest": c.fastest,
                "fastest_ms": c.fastest_ms,
                "speedup": c.fastest_ms / c.pqindex_ms,
                "pqindex_bytes": c.pqindex_bytes,
                "fewest": c.fewest,
                "fewest_bytes": c.fewest_bytes,
            }
        )
    return out


def markdown(r: Report, engines: list[str], qs: dict[str, TextQuery]) -> str:
    ctx = r.context
    lit = r.literals
    hb = compare.human_bytes
    lines = [
        f"# Text search on TPC-H lineitem SF{ctx['sf']:g} ({ctx['layout_description']})",
        "",
        f"`{ctx['command']}` at {ctx['commit']}, {ctx['started']}; load average "
        f"{' '.join(ctx['machine']['loadavg'])} at the start, "
        f"{' '.join(ctx['loadavg_end'])} at the end "
        f"({ctx['machine']['cores']} cores, shared with other work). "
        f"{ctx['files']} files, {hb(ctx['data_bytes'])}. Warm, median of {ctx['runs']} runs.",
        "",
        "Literals picked from the data: the word `" + lit.word + f"` ({lit.word_rows} rows), "
        f"the pair `{lit.pair}` ({lit.pair_rows} rows), the prefix `{lit.prefix}` "
        f"({lit.prefix_rows} rows).",
        "",
        "| layout | query | " + " | ".join(engines) + " |",
        "|---|---|" + "---|" * len(engines),
    ]
    by_key = {(c.layout, c.query, c.engine): c for c in r.cells}
    for layout, query in dict.fromkeys((c.layout, c.query) for c in r.cells):
        row = [layout, f"{query}: `{qs[query].sql}`"]
        for e in engines:
            c = by_key.get((layout, query, e))
            if c is None or not c.ok:
                row.append(c.error or c.skipped or "" if c else "")
                continue
            mark = " **rows differ**" if c.mismatch else ""
            row.append(
                f"{compare.fmt_ms(c.median_ms())} ms<br>{hb(c.bytes_read())}<br>"
                f"{c.rows:,} rows{mark}"
            )
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "| layout | query | pqindex | fastest peer | speed-up | target |"]
    lines.append("|---|---|---|---|---|---|")
    for s in speedups(r.cells):
        target = (
            ("met" if s["speedup"] >= TARGET else "not met")
            if s["query"] in SUBSTRING_QUERIES
            else "-"
        )
        lines.append(
            f"| {s['layout']} | {s['query']} | {compare.fmt_ms(s['pqindex_ms'])} ms | "
            f"{s['fastest']} {compare.fmt_ms(s['fastest_ms'])} ms | x{s['speedup']:.1f} | "
            f"{target} |"
        )
    scan = r.build["column_scan"]
    lines += [
        "",
        f"Index cost (page granularity, on {ctx['files']} files; build time includes "
        "add_indexes copying each file):",
        "",
        "| index | bytes | % of the data | build | full scan of the column |",
        "|---|---|---|---|---|",
    ]
    for kind in INDEXES:
        b = r.build[kind]
        lines.append(
            f"| {kind} | {hb(b['bytes'])} | {b['percent_of_data']:.2f} % | "
            f"{b['build_seconds']:.1f} s | pqindex {scan['pqindex_seconds']:.2f} s, "
            f"DuckDB count {scan['duckdb_count_seconds']:.2f} s "
            f"({hb(scan['column_bytes'])} compressed) |"
        )
    lines += [
        "",
        "Index reads of single lookups (`SELECT *`): bytes of the index fetched against its "
        "whole size; cold = metadata cache cleared, warm = footers cached (median of "
        f"{ctx['runs']}); S3 = moto behind a proxy adding {ctx['s3_latency'] * 1000:.0f} ms "
        "to every request:",
        "",
        "| where | place | cache | rows | ms | bytes read | index read / index size | requests |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for x in r.lookups:
        lines.append(
            f"| {x.name}: `{x.where[:60]}` | {x.place} | {x.cache} | {x.rows} | {x.ms:.1f} | "
            f"{hb(x.bytes_read)} | {hb(x.index_bytes_read)} / {hb(x.index_bytes)} "
            f"({100 * x.index_bytes_read / max(1, x.index_bytes):.2f} %) | {x.requests} |"
        )
    return "\n".join(lines) + "\n"


def write(out: Path, r: Report, engines: list[str], qs: dict[str, TextQuery]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"text-search-sf{r.context['sf']:g}"
    stem.with_suffix(".md").write_text(markdown(r, engines, qs))
    data = {
        **r.context,
        "literals": asdict(r.literals),
        "queries": {k: q.sql for k, q in qs.items()},
        "build": r.build,
        "cells": [
            asdict(c) | {"median_ms": c.median_ms() if c.ok else None, "bytes": c.bytes_read()}
            for c in r.cells
        ],
        "speedups": speedups(r.cells),
        "lookups": [asdict(x) for x in r.lookups],
    }
    stem.with_suffix(".json").write_text(json.dumps(data, indent=1, default=str) + "\n")
    print(f"wrote {stem}.md and .json")


# ---------------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--sf", type=float, default=1.0)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--layout", choices=["spark", "pyarrow"], default="spark")
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--s3-latency", type=float, default=0.02)
    p.add_argument("--no-s3", action="store_true")
    p.add_argument("--data-dir", type=Path, default=Path("/tmp/pqindex-bench"))
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    p.add_argument(
        "--lookup-repro",
        action="store_true",
        help="only the issue's 600,000-row repro: lookup bytes against the physical need",
    )
    return p.parse_args()


def commit() -> str:
    import subprocess

    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent,
    )
    return head.stdout.strip() or "unknown"


def main() -> None:
    args = parse_args()
    if args.lookup_repro:
        context = {
            "command": shlex.join(["python", *sys.argv]),
            "commit": commit(),
            "started": dt.datetime.now().isoformat(timespec="seconds"),
            "machine": compare.machine(),
        }
        rows = lookup_repro(args.data_dir / "text-search" / "repro")
        args.out.mkdir(parents=True, exist_ok=True)
        stem = args.out / "text-search-lookups"
        stem.with_suffix(".md").write_text(repro_markdown(rows, context))
        stem.with_suffix(".json").write_text(json.dumps({**context, "rows": rows}, indent=1) + "\n")
        print(f"wrote {stem}.md and .json")
        return
    engines = compare.chosen(args.engines, list(ENGINES), "engines")
    root = args.data_dir / f"sf{args.sf:g}"
    raw = compare.generate_raw(root, args.sf)
    source = source_layout(args, root, raw)
    work = args.data_dir / "text-search" / f"sf{args.sf:g}"
    files = linked_copy(source, work / "unsorted")
    data_bytes = sum(f.stat().st_size for f in files)
    context: dict[str, Any] = {
        "sf": args.sf,
        "runs": args.runs,
        "layout": args.layout,
        "layout_description": (
            "as Spark writes it" if args.layout == "spark" else "written by pyarrow as Spark does"
        ),
        "source": str(source),
        "files": len(files),
        "data_bytes": data_bytes,
        "command": shlex.join(["python", *sys.argv]),
        "commit": commit(),
        "started": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": compare.machine(),
        "versions": compare.versions(),
        "s3_latency": args.s3_latency,
    }
    print(f"{len(files)} files, {data_bytes / 1e6:.0f} MB; picking literals ...", flush=True)
    literals = pick_literals(raw)
    print(f"  {literals}", flush=True)
    print("indexing l_comment ...", flush=True)
    build = build_indexes(files, data_bytes)
    ordered = linked_copy(sorted_layout(raw, root), work / "sorted")
    for f in ordered:
        pqindex.add_indexes(f, list(INDEXES.values()))
    report = Report(context, literals, build)

    qs = queries(literals)
    layouts = {"spark_unsorted": work / "unsorted", "sorted_by_comment": work / "sorted"}
    instances = [ENGINES[name]() for name in engines]
    report.cells = compare.run_all(
        {"spark_unsorted": layouts["spark_unsorted"]}, list(qs.values()), instances, args.runs
    )
    report.cells += compare.run_all(
        {"sorted_by_comment": layouts["sorted_by_comment"]}, [qs["prefix"]], instances, args.runs
    )
    for c in report.cells:
        if c.mismatch:
            print(f"!!! rows differ: {c.layout} {c.query} {c.engine}", flush=True)

    print("index reads of single lookups ...", flush=True)
    for f in linked_copy(source, work / "lookups"):
        pqindex.add_indexes(f, list(LOOKUP_INDEXES.values()))
    todo = lookups(qs, raw)
    sizes = {d: index_sizes(compare.data_files(work / d)) for d in ("unsorted", "lookups")}
    context["index_sizes"] = sizes
    report.lookups = lookup_reads(str(work), todo, sizes, "local", None, args.runs)
    if not args.no_s3:
        report.lookups += s3_lookup_reads(work, todo, sizes, args.s3_latency, args.runs)

    context["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
    write(args.out, report, engines, qs)


if __name__ == "__main__":
    main()
