"""Selective reads from an S3-compatible store with latency on every request.

moto's S3 server runs on loopback behind a proxy that sleeps ``--latency-ms`` before every
request and counts them (``tests/s3server.py``). The dataset (by default TPC-H lineitem SF1
as Spark writes it, from ``benches/compare.py``'s data directory) is uploaded once. Each
engine then runs each query over the same endpoint:

* pqindex, with cold metadata (``clear_metadata_cache()`` before every run), warm, warm
  with ``list_cache_ttl`` set (the listing reused, as DataFusion's is by default), and warm
  with ``data_cache_size`` set as well (fetched ranges kept, as DuckDB's are by default);
* pyarrow (``pq.read_table`` with ``filters`` over ``pyarrow.fs.S3FileSystem``);
* polars (``scan_parquet("s3://...", storage_options=...)``, filter and select pushed down);
* DataFusion (its ``AmazonS3`` store, ``pushdown_filters`` and ``reorder_filters`` on; one
  session, so its footer cache and its listing cache (on by default) are warm after the
  first run);
* DuckDB with the httpfs extension from PyPI. The extension is built for one DuckDB
  release, so DuckDB runs in a virtualenv of its own (``--duckdb-venv``, created on first
  use with the matching ``duckdb`` and ``duckdb-extension-httpfs``).

Reported per query and engine: median, min and max wall time over ``--runs`` runs (after
one unmeasured run), rows, and requests per run as the proxy counted them (listing
included). Results go to ``benches/results/object_store.{md,json}``.

    python benches/object_store.py --source /tmp/pqindex-bench/sf1/spark_plain
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import pqindex  # noqa: E402
from s3server import ACCESS_KEY, REGION, SECRET_KEY, S3Server, s3_server  # noqa: E402

BUCKET = "bench"
PREFIX = "lineitem"
DUCKDB_VERSION = "1.5.5"


@dataclass
class Query:
    name: str
    where: str
    columns: list[str] | None  # None: SELECT *
    pyarrow_filter: list[tuple[str, str, Any]]

    def sql(self, table: str) -> str:
        cols = ", ".join(self.columns) if self.columns else "*"
        return f"SELECT {cols} FROM {table} WHERE {self.where}"


def pick_queries(source: Path) -> list[Query]:
    files = sorted(p for p in source.glob("*.parquet"))
    first = pq.ParquetFile(files[0])
    keys = first.read_row_group(first.num_row_groups // 2, columns=["l_orderkey", "l_partkey"])
    mid = keys.num_rows // 2
    orderkey = keys.column("l_orderkey")[mid].as_py()
    partkey = keys.column("l_partkey")[mid].as_py()
    return [
        Query(
            "point_sorted",
            f"l_orderkey = {orderkey}",
            None,
            [("l_orderkey", "=", orderkey)],
        ),
        Query(
            "point_sorted_key",
            f"l_orderkey = {orderkey}",
            ["l_orderkey"],
            [("l_orderkey", "=", orderkey)],
        ),
        Query(
            "range_sorted_narrow",
            f"l_orderkey BETWEEN {orderkey} AND {orderkey + 1000}",
            ["l_orderkey", "l_quantity", "l_extendedprice"],
            [("l_orderkey", ">=", orderkey), ("l_orderkey", "<=", orderkey + 1000)],
        ),
        Query(
            "point_unsorted",
            f"l_partkey = {partkey}",
            ["l_orderkey", "l_partkey", "l_quantity"],
            [("l_partkey", "=", partkey)],
        ),
    ]


@dataclass
class Result:
    engine: str
    query: str
    times: list[float]
    rows: int
    requests: list[int]
    note: str = ""

    def row(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "query": self.query,
            "median_ms": statistics.median(self.times) * 1000,
            "min_ms": min(self.times) * 1000,
            "max_ms": max(self.times) * 1000,
            "rows": self.rows,
            "requests": statistics.median(self.requests),
            "note": self.note,
        }


def measure(
    server: S3Server, runs: int, fn: Callable[[], int], before: Callable[[], None] | None = None
) -> tuple[list[float], int, list[int]]:
    if before:
        before()
    fn()  # unmeasured: connections, imports, first-use costs
    times, requests, rows = [], [], 0
    for _ in range(runs):
        if before:
            before()
        server.proxy.reset()
        t = time.perf_counter()
        rows = fn()
        times.append(time.perf_counter() - t)
        requests.append(server.proxy.requests)
    return times, rows, requests


PQINDEX_MODES = {
    "cold": ("pqindex (cold metadata)", {}),
    "warm": ("pqindex (warm metadata)", {}),
    "listing": ("pqindex (warm, listing cached)", {"list_cache_ttl": 600}),
    "data": (
        "pqindex (warm, listing and data cached)",
        {"list_cache_ttl": 600, "data_cache_size": 1 << 30},
    ),
}


def run_pqindex(server: S3Server, q: Query, runs: int, mode: str) -> Result:
    """Cold: no footer cached. Warm: footers cached, the prefix listed by every scan.
    ``listing``: the listing reused too, as DataFusion's default listing cache does.
    ``data``: fetched ranges kept in memory as well, as DuckDB's default data cache does."""
    name, extra = PQINDEX_MODES[mode]
    opts = server.options(**extra)
    url = f"s3://{BUCKET}/{PREFIX}/"

    def once() -> int:
        return (
            pqindex.scan(url, where=q.where, columns=q.columns, storage_options=opts)
            .to_arrow()
            .num_rows
        )

    cold = pqindex.clear_metadata_cache if mode == "cold" else None
    times, rows, reqs = measure(server, runs, once, cold)
    return Result(name, q.name, times, rows, reqs)


def run_pyarrow(server: S3Server, q: Query, runs: int) -> Result:
    from pyarrow import fs

    s3 = fs.S3FileSystem(
        access_key=ACCESS_KEY,
        secret_key=SECRET_KEY,
        region=REGION,
        endpoint_override=server.proxy.endpoint.removeprefix("http://"),
        scheme="http",
    )

    def once() -> int:
        t = pq.read_table(
            f"{BUCKET}/{PREFIX}/", filesystem=s3, filters=q.pyarrow_filter, columns=q.columns
        )
        return t.num_rows

    times, rows, reqs = measure(server, runs, once)
    return Result("pyarrow", q.name, times, rows, reqs)


def run_polars(server: S3Server, q: Query, runs: int) -> Result:
    import polars as pl

    opts = {
        "aws_endpoint_url": server.proxy.endpoint,
        "aws_access_key_id": ACCESS_KEY,
        "aws_secret_access_key": SECRET_KEY,
        "aws_region": REGION,
        "aws_allow_http": "true",
    }

    def once() -> int:
        frame = pl.scan_parquet(f"s3://{BUCKET}/{PREFIX}/*.parquet", storage_options=opts)
        frame = frame.filter(pl.sql_expr(q.where))
        if q.columns:
            frame = frame.select(q.columns)
        return frame.collect().height

    times, rows, reqs = measure(server, runs, once)
    return Result("polars", q.name, times, rows, reqs)


def run_datafusion(server: S3Server, q: Query, runs: int) -> Result:
    from datafusion import SessionConfig, SessionContext
    from datafusion.object_store import AmazonS3

    config = (
        SessionConfig()
        .set("datafusion.execution.parquet.pushdown_filters", "true")
        .set("datafusion.execution.parquet.reorder_filters", "true")
    )
    ctx = SessionContext(config)
    store = AmazonS3(
        bucket_name=BUCKET,
        region=REGION,
        access_key_id=ACCESS_KEY,
        secret_access_key=SECRET_KEY,
        endpoint=server.proxy.endpoint,
        allow_http=True,
    )
    ctx.register_object_store("s3://", store, BUCKET)
    ctx.register_parquet("lineitem", f"s3://{BUCKET}/{PREFIX}/")
    sql = q.sql("lineitem")

    def once() -> int:
        return ctx.sql(sql).to_arrow_table().num_rows

    times, rows, reqs = measure(server, runs, once)
    return Result("datafusion", q.name, times, rows, reqs)


DUCKDB_SCRIPT = textwrap.dedent(
    """
    import json, os, sys, time, urllib.request
    import duckdb, duckdb_extension_httpfs as ext
    args = json.loads(sys.argv[1])
    con = duckdb.connect()
    lib = os.path.join(os.path.dirname(ext.__file__), "extensions",
                       "v" + duckdb.__version__, "httpfs.duckdb_extension")
    con.execute(f"LOAD '{lib}'")
    for statement in args["settings"]:
        con.execute(statement)
    host = args["endpoint"].removeprefix("http://")
    con.execute(f\"\"\"CREATE SECRET s (TYPE s3, KEY_ID '{args['key']}',
        SECRET '{args['secret']}', REGION '{args['region']}', ENDPOINT '{host}',
        URL_STYLE 'path', USE_SSL false)\"\"\")
    def count():
        return json.loads(urllib.request.urlopen(args["counter"]).read())["requests"]
    out = []
    sql = args["sql"]
    con.sql(sql).fetchall()
    for _ in range(args["runs"]):
        before = count()
        t = time.perf_counter()
        rows = len(con.sql(sql).fetchall())
        out.append((time.perf_counter() - t, rows, count() - before))
    print(json.dumps(out))
    """
)


def duckdb_python(venv: Path) -> Path:
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "-q",
                f"duckdb=={DUCKDB_VERSION}",
                f"duckdb-extension-httpfs=={DUCKDB_VERSION}",
            ],
            check=True,
        )
    return python


class Counter:
    """The proxy's request count over HTTP, for DuckDB in its own process."""

    def __init__(self, server: S3Server) -> None:
        import http.server
        import threading

        proxy = server.proxy

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = json.dumps({"requests": proxy.requests}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"


def run_duckdb(
    server: S3Server, q: Query, runs: int, python: Path, counter: Counter, cache: bool
) -> Result:
    args = {
        # DuckDB keeps fetched byte ranges of remote files in memory between queries (the
        # external file cache, on by default): its warm runs re-read nothing but the glob.
        "settings": [] if cache else ["SET enable_external_file_cache = false"],
        "endpoint": server.proxy.endpoint,
        "key": ACCESS_KEY,
        "secret": SECRET_KEY,
        "region": REGION,
        "sql": q.sql(f"read_parquet('s3://{BUCKET}/{PREFIX}/*.parquet')"),
        "runs": runs,
        "counter": counter.url,
    }
    out = subprocess.run(
        [str(python), "-c", DUCKDB_SCRIPT, json.dumps(args)],
        check=True,
        capture_output=True,
        text=True,
    )
    measured = json.loads(out.stdout)
    return Result(
        f"duckdb {DUCKDB_VERSION} httpfs (data cache {'on, default' if cache else 'off'})",
        q.name,
        [m[0] for m in measured],
        measured[-1][1],
        [m[2] for m in measured],
    )


def serve_ranges_from_memory() -> None:
    """moto re-reads a whole object from its spool file for every ranged GET (about 50 ms on
    a 100 MB object, serialized by the GIL), which no real store does. Keep each object's
    bytes in memory, so a request costs what the proxy adds plus the range itself."""
    from moto.s3.models import FakeKey

    stored = FakeKey.value

    def get(self: Any) -> bytes:
        cached = self.__dict__.get("_bench_value")
        if cached is None:
            cached = self.__dict__["_bench_value"] = stored.fget(self)
        return cached

    def put(self: Any, value: bytes) -> None:
        self.__dict__.pop("_bench_value", None)
        stored.fset(self, value)

    FakeKey.value = property(get, put)


def upload(server: S3Server, source: Path) -> int:
    client = server.client()
    client.create_bucket(Bucket=BUCKET)
    total = 0
    for f in sorted(source.glob("*.parquet")):
        client.upload_file(str(f), BUCKET, f"{PREFIX}/{f.name}")
        total += f.stat().st_size
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, default=Path("/tmp/pqindex-bench/sf1/spark_plain"))
    ap.add_argument("--latency-ms", type=float, default=20.0)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--engines", default="pqindex,pyarrow,polars,datafusion,duckdb")
    ap.add_argument("--duckdb-venv", type=Path, default=Path("/tmp/pqindex-bench/duckdb-httpfs"))
    ap.add_argument("--out", type=Path, default=HERE / "results" / "object_store")
    args = ap.parse_args()
    engines = set(args.engines.split(","))
    queries = pick_queries(args.source)
    results: list[Result] = []
    serve_ranges_from_memory()
    with s3_server() as server:
        size = upload(server, args.source)
        server.proxy.delay = args.latency_ms / 1000
        counter = Counter(server) if "duckdb" in engines else None
        python = duckdb_python(args.duckdb_venv) if "duckdb" in engines else None
        for q in queries:
            if "pqindex" in engines:
                for mode in PQINDEX_MODES:
                    results.append(run_pqindex(server, q, args.runs, mode))
            if "pyarrow" in engines:
                results.append(run_pyarrow(server, q, args.runs))
            if "polars" in engines:
                results.append(run_polars(server, q, args.runs))
            if "datafusion" in engines:
                results.append(run_datafusion(server, q, args.runs))
            if python is not None and counter is not None:
                for cache in (True, False):
                    results.append(run_duckdb(server, q, args.runs, python, counter, cache))
            for r in results:
                if r.query == q.name:
                    print(json.dumps(r.row()), flush=True)
    rows = [r.row() for r in results]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "source": str(args.source),
        "files": len(list(args.source.glob("*.parquet"))),
        "bytes": size,
        "latency_ms": args.latency_ms,
        "runs": args.runs,
        "queries": {q.name: q.sql("lineitem") for q in queries},
        "versions": {"pyarrow": pa.__version__},
    }
    args.out.with_suffix(".json").write_text(json.dumps({"meta": meta, "results": rows}, indent=2))
    lines = [
        f"# Object store: {meta['files']} files, {size / 1e6:.0f} MB, "
        f"{args.latency_ms:g} ms per request, {args.runs} runs",
        "",
    ]
    for q in queries:
        lines += [
            f"## {q.name}: `{q.sql('lineitem')}`",
            "",
            "| engine | median ms | min | max | rows | requests |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for r in rows:
            if r["query"] == q.name:
                lines.append(
                    f"| {r['engine']} | {r['median_ms']:.0f} | {r['min_ms']:.0f} | "
                    f"{r['max_ms']:.0f} | {r['rows']} | {r['requests']:g} |"
                )
        lines.append("")
    args.out.with_suffix(".md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
