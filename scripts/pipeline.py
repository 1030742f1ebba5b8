"""The main job: a PySpark pipeline on local Spark and local files, as a data team runs it.

1. generate TPC-H ``lineitem`` and ``part`` with tpchgen-cli (scale configurable);
2. write ``lineitem`` with Spark's own writer (``df.write.parquet``: parquet-mr defaults,
   the layout most lakes hold);
3. index it with ``pqindex.spark.build_indexes`` (a page distinct index on the unsorted
   ``l_partkey``, n-gram and token indexes on ``l_comment``) and build its catalog with
   ``pqindex.spark.build_catalog``; other readers still read the files as before;
4. run the queries a pipeline runs through ``pqindex.spark.read``, through Spark SQL over a
   ``CREATE TEMPORARY VIEW ... USING pqindex`` view, and through Spark's own reader:
   point lookups on the sorted and the unsorted key, a needle, a substring search, and a
   keyed join (the lineitems of the parts one brand sells in one container); check that the
   rows agree and print time, bytes fetched and why pqindex fetched less.

    python scripts/pipeline.py [--scale 1] [--data pqindex-data] [--runs 3]

Bytes: pqindex counts what it fetched (footers, indexes, pages, on the driver and in the
executors); for Spark's reader, the growth of the driver JVM's ``rchar`` (local mode runs
the executors in that JVM) while the action runs. Times are warm: each query runs once
untimed, then ``--runs`` times; the median is shown.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@dataclass
class Query:
    name: str
    where: str | None
    columns: list[str] | None
    #: A keyed join: (keys DataFrame, lineitem's key column, the keys' column).
    join: tuple[Any, str, str] | None = None


#: Where pqindex.spark read a query's rows (``SparkScan.read_by``), as printed.
READ_BY = {
    "driver": "read on driver",
    "executors": "read in executors",
    "spark": "read by Spark's reader",
    "nowhere": "nothing to read",
}


class Progress:
    """One line per step, with the time since the start."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.start = total, 0, time.perf_counter()

    def step(self, text: str) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.start
        print(f"[{self.done:>2}/{self.total}] {elapsed:7.1f}s  {text}", flush=True)


def generate(scale: float, data: Path) -> Path:
    raw = data / f"sf{scale:g}" / "raw"
    if not (raw / "lineitem.parquet").exists() or not (raw / "part.parquet").exists():
        exe = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
        subprocess.run(
            [exe, "parquet", "-s", str(scale), "--tables", "lineitem,part", "-o", str(raw)],
            check=True,
        )
    return raw


def start_spark() -> Any:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("pqindex-pipeline")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def jvm_rchar(spark: Any) -> int:
    pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    return 0


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def pick_keys(spark: Any, raw: Path) -> dict[str, Any]:
    """Keys of one existing row; below SF1 (fewer, sparser order keys) a smaller modulus
    finds one."""
    df = spark.read.parquet(str(raw / "lineitem.parquet"))
    df = df.select("l_orderkey", "l_partkey", "l_comment")
    for condition in ("l_orderkey % 1000003 = 17", "l_orderkey % 997 = 5", "true"):
        row = df.where(condition).first()
        if row is not None:
            return {"orderkey": row[0], "partkey": row[1], "comment": row[2]}
    raise SystemExit(f"{raw}: no rows")


def rare_words(source: str, comment: str) -> str:
    """Two adjacent words of ``comment`` that few other comments hold (counted with the
    n-gram index, which makes each count a few milliseconds)."""
    import pqindex

    words = comment.split()
    best, best_rows = " ".join(words[:2]), None
    for a, b in itertools.pairwise(words):
        text = f"{a} {b}"
        if len(text) < 8 or "'" in text or "%" in text or "_" in text:
            continue
        where = f"contains(l_comment, {sql_string(text)})"
        scan = pqindex.scan(source, where=where, columns=["l_orderkey"])
        n = scan.to_arrow().num_rows
        if best_rows is None or n < best_rows:
            best, best_rows = text, n
    return best


def queries(spark: Any, raw: Path, keys: dict[str, Any], pair: str) -> list[Query]:
    k, p = keys["orderkey"], keys["partkey"]
    needle = sql_string(keys["comment"])
    parts = (
        spark.read.parquet(str(raw / "part.parquet"))
        .where("p_brand = 'Brand#23' AND p_container = 'MED BOX'")
        .select("p_partkey")
    )
    return [
        Query("point lookup, sorted key", f"l_orderkey = {k}", ["l_orderkey", "l_comment"]),
        Query("point lookup, unsorted key", f"l_partkey = {p}", None),
        Query("needle (string equality)", f"l_comment = {needle}", ["l_orderkey", "l_comment"]),
        Query(
            "substring search",
            f"l_comment LIKE {sql_string('%' + pair + '%')}",
            ["l_orderkey", "l_comment"],
        ),
        Query(
            "keyed join (parts of a brand)",
            "l_quantity < 25",
            ["l_orderkey", "l_partkey", "l_quantity", "l_extendedprice"],
            join=(parts, "l_partkey", "p_partkey"),
        ),
    ]


def pqindex_read(spark: Any, source: str, q: Query) -> tuple[Any, dict[str, Any]]:
    import pqindex.spark

    keys = on = None
    if q.join is not None:
        frame, on, theirs = q.join
        keys = frame.withColumnRenamed(theirs, on)
    scan = pqindex.spark.plan(spark, source, q.where, q.columns, keys=keys, on=on)
    table = scan.to_df().toArrow()
    return table, scan.metrics() | {"at": scan.read_by}


def spark_literal(text: str) -> str:
    """``text`` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_read(spark: Any, source: str, q: Query) -> Any:
    """The query in Spark SQL over ``USING pqindex`` temporary views: the condition and the
    columns are the source's options (what prunes on Spark 4.x), the join is Spark's."""
    import pqindex.spark

    pqindex.spark.register(spark)
    options = {"path": source}
    if q.where:
        options["where"] = q.where
    if q.columns:
        options["columns"] = ",".join(q.columns)
    spelled = ", ".join(f"{k} {spark_literal(v)}" for k, v in options.items())
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW pq_lineitem USING pqindex OPTIONS ({spelled})")
    if q.join is None:
        return spark.sql("SELECT * FROM pq_lineitem").toArrow()
    frame, ours, theirs = q.join
    frame.createOrReplaceTempView("pq_keys")
    return spark.sql(
        f"SELECT l.* FROM pq_lineitem l LEFT SEMI JOIN pq_keys k ON l.{ours} = k.{theirs}"
    ).toArrow()


def spark_read(spark: Any, source: str, q: Query) -> Any:
    df = spark.read.parquet(source)
    if q.where:
        df = df.where(q.where)
    if q.join is not None:
        frame, ours, theirs = q.join
        df = df.join(frame, df[ours] == frame[theirs], "left_semi")
    return (df.select(*q.columns) if q.columns else df).toArrow()


def measured(runs: int, action: Callable[[], Any]) -> tuple[float, Any]:
    action()  # warm: footers cached, the JVM's code compiled
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def same_rows(a: Any, b: Any) -> bool:
    def key(r: dict[str, Any]) -> str:
        return repr(sorted(r.items()))

    return a.num_rows == b.num_rows and sorted(map(key, a.to_pylist())) == sorted(
        map(key, b.to_pylist())
    )


def why(m: dict[str, Any]) -> str:
    """What pqindex skipped, in words."""
    parts = []
    if m.get("files_pruned"):
        parts.append(f"{m['files_pruned']} of {m['files']} files skipped")
    if m.get("pages"):
        parts.append(f"{m['pages'] - m['pages_pruned']} of {m['pages']} pages kept")
    used = m.get("indexes_read", 0) - m.get("indexes_declined", 0)
    if used:
        parts.append(f"{used} indexes used ({m.get('index_bytes_read', 0):,} B)")
    if m.get("indexes_declined"):
        parts.append(f"{m['indexes_declined']} indexes not worth asking")
    return "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor")
    parser.add_argument("--data", type=Path, default=Path("pqindex-data"), help="data directory")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per query (median)")
    args = parser.parse_args()

    progress = Progress(7 + 5)
    raw = generate(args.scale, args.data.resolve())
    progress.step(f"TPC-H lineitem and part SF{args.scale:g} generated: {raw}")
    spark = start_spark()
    progress.step(f"Spark {spark.version} started (local[2])")

    import pqindex
    import pqindex.spark

    lineitem = args.data.resolve() / f"sf{args.scale:g}" / "lineitem"
    if not (lineitem / "_SUCCESS").exists():
        spark.read.parquet(str(raw / "lineitem.parquet")).write.mode("overwrite").parquet(
            str(lineitem)
        )
    progress.step(f"lineitem written by Spark's writer (parquet-mr defaults): {lineitem}")
    start = time.perf_counter()
    report = pqindex.spark.build_indexes(
        spark,
        lineitem,
        [
            pqindex.DistinctIndex("l_partkey"),
            pqindex.BloomIndex("l_comment", granularity="page"),
            pqindex.NgramIndex("l_comment"),
            pqindex.TokenIndex("l_comment"),
        ],
    ).toArrow()
    added = sum(report.column("bytes_added").to_pylist())
    progress.step(
        f"indexes built by pqindex.spark.build_indexes in {time.perf_counter() - start:.1f} s: "
        f"{report.num_rows} files, {added / 1e6:.1f} MB of indexes (distinct l_partkey; "
        "page bloom, n-gram and token l_comment)"
    )
    pqindex.spark.build_catalog(spark, lineitem, ["l_orderkey", "l_partkey", "l_shipdate"])
    progress.step("catalog built by pqindex.spark.build_catalog (bounds of three columns)")
    keys = pick_keys(spark, raw)
    pair = rare_words(str(lineitem), keys["comment"])
    progress.step(f"keys picked from the data; searching for {pair!r}")

    source = str(lineitem)
    results = []
    for q in queries(spark, raw, keys, pair):
        pqindex.clear_metadata_cache()
        ours_s, (ours, m) = measured(args.runs, lambda q=q: pqindex_read(spark, source, q))
        before = jvm_rchar(spark)
        theirs = spark_read(spark, source, q)
        spark_bytes = jvm_rchar(spark) - before
        theirs_s, theirs = measured(args.runs, lambda q=q: spark_read(spark, source, q))
        sql_s, in_sql = measured(args.runs, lambda q=q: sql_read(spark, source, q))
        if not same_rows(ours, theirs):
            raise SystemExit(f"{q.name}: pqindex.spark.read and Spark disagree")
        if not same_rows(in_sql.select(theirs.column_names), theirs):
            raise SystemExit(f"{q.name}: Spark SQL over USING pqindex and Spark disagree")
        results.append((q, ours.num_rows, ours_s, sql_s, theirs_s, m, spark_bytes))
        progress.step(f"{q.name}: {ours.num_rows} rows, results agree")
    spark.stop()

    header = (
        f"{'query':30} {'rows':>6} {'pqindex s':>10} {'SQL s':>7} {'spark s':>8} {'faster':>7} "
        f"{'pqindex bytes':>14} {'spark bytes':>13}  why"
    )
    print()
    print(header)
    print("-" * len(header))
    for q, rows, ours_s, sql_s, theirs_s, m, spark_bytes in results:
        print(
            f"{q.name:30} {rows:>6} {ours_s:>10.3f} {sql_s:>7.3f} {theirs_s:>8.3f} "
            f"{theirs_s / ours_s:>6.1f}x "
            f"{m['bytes_read']:>14,} {spark_bytes:>13,}  {why(m)} ({READ_BY[m['at']]})"
        )
    print(
        f"\nwarm, median of {args.runs} runs; every query returned the same rows from "
        "pqindex.spark.read, Spark SQL over a USING pqindex view (SQL s) and Spark's reader"
    )


if __name__ == "__main__":
    main()
