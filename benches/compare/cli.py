"""Peer comparison: the same selective queries over TPC-H lineitem through pqindex, pyarrow,
DuckDB, DataFusion, polars and Spark (classic and Spark Connect), on eight Parquet layouts.

    python benches/compare.py [--sf 1] [--runs 5] [--engines pqindex,duckdb,...]
        [--layouts sorted,...] [--queries 'point_*,full_scan*'] [--no-spark]
        [--spark-mode classic|connect|both] [--cold [--cold-runs 1]]
        [--data-dir /tmp/pqindex-bench] [--out benches/out] [--tag NAME]

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
``compare/cold.py``): once timed from the process's start to the result (imports, session start-up
and footers included; the page cache stays warm), once timed from after a first query on
another file to the result (the first query on files the process has never seen).
"""

from __future__ import annotations

import argparse
import datetime as dt
import fnmatch
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import compare_spark_env as spark_env

from .cold import Cold
from .data import (
    DONE,
    LAYOUTS,
    Layout,
    build_layout,
    describe_files,
    generate_raw,
    pick_keys,
    write_cold_warmup,
)
from .engines import CONNECT_TWINS, ENGINES, SparkEngine
from .harness import run_all
from .meters import BENCHES, machine, versions
from .queries import QUERY_SETS, Keys, Query
from .report import write_results


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
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
    p.add_argument("--out", type=Path, default=BENCHES / "out")
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
