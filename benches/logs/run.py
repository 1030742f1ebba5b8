"""The log-search benchmark: every query of queries.py through pqindex and its peers, each
engine in a process of its own, rows checked to agree.

    python benches/logs/run.py /tmp/logbench/10m [--engines pqindex,duckdb,datafusion,
        polars,chdb,spark] [--queries 'trace_*,first_ok'] [--runs 3]
        [--pqindex-features has_token,top_k,limit] [--out /tmp/logbench/results]

Engines, each as its experts run it over the same files: pqindex (``pqindex.scan``, the
embedded indexes of indexes.py if the files have them); DuckDB (``read_parquet``,
defaults); DataFusion (``register_parquet``; ``pushdown_filters``, ``reorder_filters`` and
``enable_page_index`` on); polars (``scan_parquet`` with expressions, defaults); chDB
(ClickHouse's ``file(..., Parquet)``, defaults); Spark (classic, ``local[2]``, its Parquet
reader, ``spark.read.parquet`` as a temporary view, ``toArrow()``).

Engines run one after another, each in a fresh process that opens the data once, then per
query one untimed warm-up and ``--runs`` timed runs (warm: the page cache and each engine's
own caches hold what the warm-up left). A time is the median. Results are kept and compared
across engines: the same multiset of rows, or for a ``LIMIT`` without ``ORDER BY`` the
right count of rows that each satisfy the predicate. Bytes: pqindex's
``metrics()['bytes_read']``; for the peers the growth of ``rchar`` (bytes returned by
read-type system calls, from /proc/<pid>/io) of the process that reads (Spark: its JVM).

Output: ``logs-<rows>.csv`` and ``logs-<rows>.md`` in ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import fnmatch
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.compute as pc  # type: ignore[import-untyped,unused-ignore]

sys.path.insert(0, str(Path(__file__).resolve().parent))  # queries, run as a script

import queries as qmod

TRY_AGAIN = 75  # a worker's exit status: start it again a little later
RETRIES = (15, 30, 60, 60)  # seconds to wait before each new start
ENGINES = ("pqindex", "duckdb", "datafusion", "polars", "chdb", "spark")
PEERS = tuple(e for e in ENGINES if e != "pqindex")


# ---------------------------------------------------------------------------------------------
# Measuring


def rchar(pid: int | str = "self") -> int:
    """Bytes the process has read through read-type system calls so far."""
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    raise RuntimeError("no rchar in /proc/io")


@dataclass
class Run:
    seconds: float
    table: Any
    bytes_read: int | None  # as the engine reports it
    rchar: int | None
    metrics: dict[str, Any] = field(default_factory=dict)


class Engine:
    """``open`` once per process, ``prepare`` once per query (untimed), then the returned
    callable runs the query once."""

    name = ""

    def open(self, root: Path) -> None:
        self.root = root

    def prepare(self, query: qmod.LogQuery) -> Callable[[], Run]:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def timed(self, action: Callable[[], Any], pid: int | str = "self") -> Run:
        before = rchar(pid)
        start = time.perf_counter()
        table = action()
        seconds = time.perf_counter() - start
        return Run(seconds, table, None, rchar(pid) - before)


class Pqindex(Engine):
    name = "pqindex"

    def open(self, root: Path) -> None:
        """Fails with TRY_AGAIN while the extension and its Python files disagree (the
        extension is rebuilt in place from time to time)."""
        import pqindex

        super().open(root)
        try:
            pqindex.scan(str(root), where="status = -1").to_arrow()
        except Exception as e:
            print(f"  pqindex not usable yet: {type(e).__name__}: {e}", file=sys.stderr)
            sys.exit(TRY_AGAIN)

    def prepare(self, query: qmod.LogQuery) -> Callable[[], Run]:
        source = str(self.root)

        def run() -> Run:
            before = rchar()
            start = time.perf_counter()
            result = query.pqindex(source)
            seconds = time.perf_counter() - start
            read = rchar() - before
            bytes_read = int(result.metrics["bytes_read"])
            return Run(seconds, result.table, bytes_read, read, result.metrics)

        return run


class Duckdb(Engine):
    name = "duckdb"

    def open(self, root: Path) -> None:
        import duckdb

        super().open(root)
        self.con = duckdb.connect()
        self.con.execute("SET TimeZone = 'UTC'")

    def prepare(self, query: qmod.LogQuery) -> Callable[[], Run]:
        sql = query.sql("duckdb", f"read_parquet('{self.root}/*.parquet')")
        return lambda: self.timed(lambda: self.con.sql(sql).to_arrow_table())


class Datafusion(Engine):
    name = "datafusion"
    SETTINGS: ClassVar[dict[str, str]] = {
        "datafusion.execution.parquet.pushdown_filters": "true",
        "datafusion.execution.parquet.reorder_filters": "true",
        "datafusion.execution.parquet.enable_page_index": "true",
    }

    def open(self, root: Path) -> None:
        from datafusion import SessionConfig, SessionContext

        super().open(root)
        config = SessionConfig()
        for key, value in self.SETTINGS.items():
            config = config.set(key, value)
        self.ctx = SessionContext(config)
        self.ctx.register_parquet("logs", str(root))

    def prepare(self, query: qmod.LogQuery) -> Callable[[], Run]:
        sql = query.sql("datafusion", "logs")
        return lambda: self.timed(lambda: self.ctx.sql(sql).to_arrow_table())


class Polars(Engine):
    name = "polars"

    def prepare(self, query: qmod.LogQuery) -> Callable[[], Run]:
        import polars as pl

        glob = f"{self.root}/*.parquet"
        predicate = query.polars()

        def action() -> Any:
            frame = pl.scan_parquet(glob).filter(predicate)
            if query.order_by:
                frame = frame.sort(query.order_by, descending=True)
            if query.limit is not None:
                frame = frame.head(query.limit)
            return frame.collect().to_arrow()

        return lambda: self.timed(action)


class Chdb(Engine):
    name = "chdb"

    def open(self, root: Path) -> None:
        import chdb

        super().open(root)
        self.con = chdb.connect(":memory:")  # type: ignore[no-untyped-call]

    def prepare(self, query: qmod.LogQuery) -> Callable[[], Run]:
        sql = query.sql("chdb", f"file('{self.root}/*.parquet', Parquet)")
        return lambda: self.timed(lambda: self.con.query(sql, "ArrowTable"))

    def close(self) -> None:
        self.con.close()


class Spark(Engine):
    name = "spark"
    CONF: ClassVar[dict[str, str]] = {
        "spark.master": "local[2]",
        "spark.driver.memory": "4g",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
    }

    def open(self, root: Path) -> None:
        from pyspark.sql import SparkSession

        super().open(root)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = SparkSession.builder.appName("pqindex-logs")
        for key, value in self.CONF.items():
            builder = builder.config(key, value)
        self.spark = builder.getOrCreate()
        self.spark.sparkContext.setLogLevel("ERROR")
        jvm: Any = self.spark.sparkContext._jvm
        self.pid = int(jvm.java.lang.ProcessHandle.current().pid())
        self.spark.read.parquet(str(root)).createOrReplaceTempView("logs")

    def prepare(self, query: qmod.LogQuery) -> Callable[[], Run]:
        sql = query.sql("spark", "logs")
        return lambda: self.timed(lambda: self.spark.sql(sql).toArrow(), self.pid)

    def close(self) -> None:
        self.spark.stop()


ENGINE_CLASSES: dict[str, type[Engine]] = {
    e.name: e for e in (Pqindex, Duckdb, Datafusion, Polars, Chdb, Spark)
}


# ---------------------------------------------------------------------------------------------
# One engine's process


@dataclass
class Cell:
    """One engine's answer to one query."""

    query: str
    engine: str
    seconds: list[float] = field(default_factory=list)
    warmup_seconds: float | None = None
    rows: int | None = None
    bytes_read: int | None = None  # as the engine reports it (pqindex)
    rchar: int | None = None  # growth of the reading process's rchar
    metrics: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    check: str = ""  # "ok", "mismatch: ...", "" before checking

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.seconds)

    def median_ms(self) -> float:
        return statistics.median(self.seconds) * 1000


def plain(table: Any) -> Any:
    """The table with strings as plain ``string``: every engine's flavour of string (large,
    view) compares, and IPC writes, the same way."""
    fields = []
    for f in table.schema:
        t = f.type
        if pa.types.is_large_string(t) or pa.types.is_string_view(t):
            t = pa.string()
        fields.append(pa.field(f.name, t))
    return table.cast(pa.schema(fields))


def worker(args: argparse.Namespace) -> None:
    """Run every chosen query on one engine; write cells (JSON) and result tables (IPC)."""
    for name in args.pqindex_features:
        qmod.FEATURES[name] = True
    root = Path(args.data)
    chosen = select_queries(qmod.build(qmod.load_literals(root)), args.queries)
    engine = ENGINE_CLASSES[args.worker]()
    load = os.getloadavg()[0]
    start = time.perf_counter()
    engine.open(root)
    open_s = time.perf_counter() - start
    out = Path(args.result_dir)
    cells = []
    for query in chosen:
        cell = Cell(query.name, engine.name)
        try:
            action = engine.prepare(query)
            cell.warmup_seconds = action().seconds
            last = None
            for _ in range(args.runs):
                last = action()
                cell.seconds.append(last.seconds)
            assert last is not None
            cell.rows = last.table.num_rows
            cell.bytes_read = last.bytes_read
            cell.rchar = last.rchar
            cell.metrics = last.metrics
            with pa.OSFile(str(out / f"{engine.name}.{query.name}.arrow"), "wb") as sink:
                table = plain(last.table)
                with pa.ipc.new_file(sink, table.schema) as w:
                    w.write_table(table)
        except Exception as e:
            cell.error = f"{type(e).__name__}: {e}"[:500]
        print(
            f"  {engine.name:10s} {query.name:16s} "
            + (
                f"{cell.median_ms():9.1f} ms  rows={cell.rows}  bytes={human(cell.bytes_read)}"
                f"  rchar={human(cell.rchar)}"
                if cell.ok
                else f"ERROR {cell.error}"
            ),
            file=sys.stderr,
            flush=True,
        )
        cells.append(asdict(cell))
    engine.close()
    (out / f"{engine.name}.json").write_text(
        json.dumps({"open_s": open_s, "load": load, "cells": cells})
    )


# ---------------------------------------------------------------------------------------------
# Checking


def canonical(table: Any) -> list[tuple[Any, ...]]:
    """The rows as sorted tuples, columns by name, timestamps as integer microseconds."""
    table = table.select(sorted(table.column_names))
    columns = []
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_timestamp(column.type):
            column = pc.cast(pc.cast(column, pa.timestamp("us", tz="UTC")), pa.int64())
        elif pa.types.is_integer(column.type):
            column = pc.cast(column, pa.int64())
        columns.append(column.to_pylist())
    return sorted(zip(*columns, strict=True), key=repr)


def read_result(result_dir: Path, engine: str, query: str) -> Any:
    with pa.memory_map(str(result_dir / f"{engine}.{query}.arrow")) as source:
        return pa.ipc.open_file(source).read_all()


def check_limit(query: qmod.LogQuery, table: Any) -> str:
    """``ok`` if ``table`` has ``query.limit`` rows (fewer only if fewer match: not here),
    every one satisfying the predicate."""
    import duckdb

    if table.num_rows != query.limit:
        return f"mismatch: {table.num_rows} rows, not {query.limit}"
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("result", table)
    bad = con.execute(f"SELECT count(*) FROM result WHERE NOT ({query.where['duckdb']})")
    row = bad.fetchone()
    assert row is not None
    return "ok" if row[0] == 0 else f"mismatch: {row[0]} rows fail the predicate"


def check(cells: list[Cell], chosen: list[qmod.LogQuery], result_dir: Path) -> None:
    """Fill each cell's ``check``: rows agree with the first engine's (pqindex's when run)."""
    for query in chosen:
        done = [c for c in cells if c.query == query.name and c.ok]
        if query.check == "limit":
            for c in done:
                c.check = check_limit(query, read_result(result_dir, c.engine, query.name))
            continue
        reference: list[tuple[Any, ...]] | None = None
        for c in done:
            rows = canonical(read_result(result_dir, c.engine, query.name))
            if reference is None:
                reference, ref_engine = rows, c.engine
                c.check = "ok"
            elif rows == reference:
                c.check = "ok"
            else:
                c.check = f"mismatch: {len(rows)} rows vs {len(reference)} of {ref_engine}"


# ---------------------------------------------------------------------------------------------
# Reports


def human(n: int | None) -> str:
    if n is None:
        return "-"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} B"


def fmt_ms(ms: float) -> str:
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}"


def geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    system = f"{platform.system()} {platform.release()}"
    return f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, {system}"


def versions(engines: list[str]) -> str:
    import importlib.metadata as md

    packages = {
        "pqindex": "pqindex",
        "duckdb": "duckdb",
        "datafusion": "datafusion",
        "polars": "polars",
        "chdb": "chdb",
        "spark": "pyspark",
    }
    out = []
    for e in engines:
        try:
            out.append(f"{packages[e]} {md.version(packages[e])}")
        except md.PackageNotFoundError:
            out.append(f"{packages[e]} (not installed as a package)")
    return ", ".join(out)


def markdown(
    cells: list[Cell], chosen: list[qmod.LogQuery], engines: list[str], header: list[str]
) -> str:
    """Per query each engine's median ms, pqindex's speed-up over the fastest peer, and
    pqindex's bytes; geometric means last."""
    by = {(c.query, c.engine): c for c in cells}
    peers = [e for e in engines if e != "pqindex"]
    cols = [*engines, "fastest peer / pqindex", "pqindex bytes"]
    lines = [
        *header,
        "",
        "| query | " + " | ".join(cols) + " |",
        "|---" + "|---:" * len(cols) + "|",
    ]
    speedups: list[float] = []
    per_engine: dict[str, list[float]] = {e: [] for e in engines}
    for q in chosen:
        row = [q.name]
        for e in engines:
            c = by.get((q.name, e))
            if c is None:
                row.append("")
            elif not c.ok:
                row.append("error")
            else:
                text = fmt_ms(c.median_ms())
                if c.check != "ok":
                    text += " (rows differ)"
                row.append(text)
                if c.check == "ok":
                    per_engine[e].append(c.median_ms())
        mine = by.get((q.name, "pqindex"))
        fine = [by[(q.name, p)] for p in peers if (q.name, p) in by]
        fine = [c for c in fine if c.ok and c.check == "ok"]
        fastest = min(fine, key=lambda c: c.median_ms()) if fine else None
        if mine is not None and mine.ok and mine.check == "ok" and fastest is not None:
            ratio = fastest.median_ms() / mine.median_ms()
            speedups.append(ratio)
            row.append(f"{ratio:.2f}x ({fastest.engine})")
        else:
            row.append("")
        row.append(human(mine.bytes_read) if mine is not None and mine.ok else "")
        lines.append("| " + " | ".join(row) + " |")
    geo = [fmt_ms(geomean(per_engine[e])) if per_engine[e] else "" for e in engines]
    mean = f"{geomean(speedups):.2f}x" if speedups else ""
    lines.append("| **geometric mean** | " + " | ".join(geo) + f" | {mean} | |")
    return "\n".join(lines) + "\n"


def write_csv(path: Path, cells: list[Cell]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "query",
                "engine",
                "median_ms",
                "min_ms",
                "max_ms",
                "warmup_ms",
                "runs",
                "rows",
                "bytes_read",
                "rchar",
                "check",
                "error",
            ]
        )
        for c in cells:
            w.writerow(
                [
                    c.query,
                    c.engine,
                    f"{c.median_ms():.3f}" if c.ok else "",
                    f"{min(c.seconds) * 1000:.3f}" if c.ok else "",
                    f"{max(c.seconds) * 1000:.3f}" if c.ok else "",
                    f"{c.warmup_seconds * 1000:.3f}" if c.warmup_seconds is not None else "",
                    len(c.seconds),
                    c.rows if c.rows is not None else "",
                    c.bytes_read if c.bytes_read is not None else "",
                    c.rchar if c.rchar is not None else "",
                    c.check,
                    c.error or "",
                ]
            )


# ---------------------------------------------------------------------------------------------
# Driver


def select_queries(all_queries: list[qmod.LogQuery], patterns: str) -> list[qmod.LogQuery]:
    wanted = [p.strip() for p in patterns.split(",") if p.strip()]
    chosen = [q for q in all_queries if any(fnmatch.fnmatch(q.name, p) for p in wanted)]
    if not chosen:
        raise SystemExit(f"no query matches {patterns!r}")
    return chosen


def names(text: str, known: Sequence[str], what: str) -> list[str]:
    out = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in out if n not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("data", type=Path, help="a directory written by generate.py")
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--queries", default="*", help="comma-separated name patterns")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--pqindex-features", default="", help=", ".join(qmod.FEATURES))
    p.add_argument("--out", type=Path, default=Path("/tmp/logbench/results"))
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--result-dir", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.pqindex_features = names(args.pqindex_features, list(qmod.FEATURES), "feature")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return
    engines = names(args.engines, ENGINES, "engine")
    literals = qmod.load_literals(args.data)
    chosen = select_queries(qmod.build(literals), args.queries)
    args.out.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now(dt.timezone.utc)
    cells: list[Cell] = []
    opened: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="logbench-") as tmp:
        for engine in engines:
            print(f"{engine} ...", flush=True)
            cmd = [
                sys.executable,
                str(Path(__file__).resolve()),
                str(args.data),
                "--worker",
                engine,
                "--result-dir",
                tmp,
                "--queries",
                args.queries,
                "--runs",
                str(args.runs),
                "--pqindex-features",
                ",".join(args.pqindex_features),
            ]
            start = time.perf_counter()
            done = subprocess.run(cmd, check=False)
            for wait in RETRIES:
                if done.returncode != TRY_AGAIN:
                    break
                time.sleep(wait)
                done = subprocess.run(cmd, check=False)
            report = Path(tmp) / f"{engine}.json"
            if done.returncode != 0 or not report.exists():
                print(f"  {engine}: process failed (exit {done.returncode})", flush=True)
                cells += [Cell(q.name, engine, error="process failed") for q in chosen]
                continue
            data = json.loads(report.read_text())
            opened[engine] = (data["open_s"], data["load"])
            cells += [Cell(**c) for c in data["cells"]]
            print(f"  {engine}: {time.perf_counter() - start:.0f} s", flush=True)
        check(cells, chosen, Path(tmp))
    for c in cells:
        if c.ok and c.check != "ok":
            print(f"  {c.engine} {c.query}: {c.check}", flush=True)
    stem = args.out / f"logs-{literals['rows']}"
    write_csv(stem.with_suffix(".csv"), cells)
    index_report = args.data / "_indexes.json"
    indexes = json.loads(index_report.read_text()) if index_report.exists() else None
    header = [
        f"{literals['rows']:,} rows in {literals['files']} files, "
        f"{human(literals['data_bytes'])} of Parquet"
        + (
            f" + {human(indexes['total_index_bytes'])} of embedded indexes"
            if indexes
            else " (no embedded indexes)"
        )
        + f"; {started:%Y-%m-%d}, {machine()}.",
        f"Warm, median of {args.runs} after one warm-up, in ms; {versions(engines)}.",
        "Engine start (opening the data) in s, and the 1-minute load average as each "
        "engine's process started (other work shares the machine): "
        + ", ".join(f"{e} {s:.1f} (load {load:.1f})" for e, (s, load) in opened.items())
        + ".",
    ]
    text = markdown(cells, chosen, engines, header)
    stem.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
