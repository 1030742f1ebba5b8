"""The dataset catalog on many small files: planning a point lookup with the catalog against
reading every footer, the catalog's size and build time, and the whole lookup against the
peers on the same files.

    python benches/catalog.py [--files 10000] [--runs 5] [--catalog-only] [--data-dir DIR]
        [--out benches/results]

The dataset is TPC-H lineitem SF1 (``compare.py`` builds ``sf1/raw``) split in file order
into ``--files`` files (about 600 rows each at 10,000), written by pyarrow with a page index.
Lookups: ``l_orderkey = k`` (files are in key order: the catalog's bounds rule out the
others) and ``l_partkey = k`` (unsorted: the catalog's bloom filters do). pqindex's times
are cold for its metadata cache (cleared before each run: a fresh process sees the same),
so "without the catalog" means reading every footer; the peers run warm (their best case).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import compare
import pqindex
import pyarrow.parquet as pq


def split_dataset(raw: Path, out: Path, files: int) -> None:
    if out.exists() and len(list(out.glob("*.parquet"))) == files:
        return
    out.mkdir(parents=True, exist_ok=True)
    table = pq.read_table(raw)
    per_file = -(-table.num_rows // files)
    for i in range(files):
        part = table.slice(i * per_file, per_file)
        pq.write_table(part, out / f"part-{i:05d}.parquet", write_page_index=True)


def timed(runs: int, action: Callable[[], Any], before: Callable[[], None]) -> tuple[float, Any]:
    """Median of ``runs`` runs of ``action``, each after ``before`` (untimed)."""
    before()
    action()
    seconds, result = [], None
    for _ in range(runs):
        before()
        start = time.perf_counter()
        result = action()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--catalog-only",
        action="store_true",
        help="pqindex with the catalog only: no every-footer planning, no peers",
    )
    parser.add_argument("--data-dir", default="/tmp/pqindex-bench")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = parser.parse_args()

    raw = Path(args.data_dir) / "sf1" / "raw" / "lineitem.parquet"
    if not raw.exists():
        sys.exit(f"{raw} is missing: run `python benches/compare.py` once to generate it")
    root = Path(args.data_dir) / "sf1" / f"files-{args.files}"
    start = time.perf_counter()
    split_dataset(raw, root, args.files)
    print(f"{args.files} files in {root} ({time.perf_counter() - start:.1f} s)", flush=True)

    start = time.perf_counter()
    catalog = pqindex.Catalog.build(root, ["l_orderkey", "l_partkey"], bloom=["l_partkey"])
    build = time.perf_counter() - start
    report = catalog.report() or {}
    data_bytes = sum(f.stat().st_size for f in root.glob("*.parquet"))
    print(f"catalog built in {build:.1f} s, {report.get('bytes', 0):,} B", flush=True)

    sample = pq.read_table(root / f"part-{args.files // 2:05d}.parquet")
    orderkey = sample.column("l_orderkey")[7].as_py()
    partkey = sample.column("l_partkey")[7].as_py()
    queries = {
        "orderkey_point": f"l_orderkey = {orderkey}",
        "partkey_point": f"l_partkey = {partkey}",
    }
    results: dict[str, Any] = {
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "pqindex": pqindex.__version__,
        },
        "files": args.files,
        "data_bytes": data_bytes,
        "catalog_bytes": report.get("bytes"),
        "catalog_build_seconds": build,
        "queries": {},
    }
    for name, where in queries.items():
        entry: dict[str, Any] = {"where": where}
        labels = (
            (("catalog", True),) if args.catalog_only else (("catalog", True), ("footers", False))
        )
        for label, use in labels:

            def plan(use: bool = use, where: str = where) -> Any:
                return pqindex.scan(root, where=where, catalog=use)

            def lookup(use: bool = use, where: str = where) -> Any:
                s = pqindex.scan(root, where=where, catalog=use)
                return s.to_arrow(), s.metrics()

            plan_s, _ = timed(args.runs, plan, pqindex.clear_metadata_cache)
            total_s, (table, m) = timed(args.runs, lookup, pqindex.clear_metadata_cache)
            pqindex.clear_metadata_cache()
            warm_s, _ = timed(args.runs, lookup, lambda: None)
            warm_plan_s, _ = timed(args.runs, plan, lambda: None)
            entry[label] = {
                "plan_seconds": plan_s,
                "warm_plan_seconds": warm_plan_s,
                "seconds": total_s,
                "warm_seconds": warm_s,
                "rows": table.num_rows,
                "bytes_read": m["bytes_read"],
                "footers_read": m["footers_read"],
                "files_pruned_by_catalog": m["files_pruned_by_catalog"],
            }
            print(
                f"{name} [{label}]: plan {plan_s * 1e3:.1f} ms, lookup {total_s * 1e3:.1f} ms "
                f"(warm {warm_s * 1e3:.1f} ms, warm plan {warm_plan_s * 1e3:.2f} ms), "
                f"{m['bytes_read']:,} B, {m['footers_read']} footers read, "
                f"{m['files_pruned_by_catalog']} files pruned by the catalog",
                flush=True,
            )
        query = compare.Query(name, None, None)
        peers: dict[str, Any] = {}
        engines = (
            () if args.catalog_only else (compare.Duckdb(), compare.Datafusion(), compare.Polars())
        )
        for engine in engines:
            engine.open(root, f"files{args.files}")
            sql_query = _with_where(query, where)
            run = engine.prepare(sql_query)
            seconds, r = timed(args.runs, run, lambda: None)
            peers[engine.name] = {"seconds": seconds, "rows": r.table.num_rows}
            assert r.table.num_rows == entry["catalog"]["rows"], (engine.name, name)
            print(f"  {engine.name}: {seconds * 1e3:.1f} ms", flush=True)
        entry["peers"] = peers
        if peers:
            fastest = min(p["seconds"] for p in peers.values())
            entry["speedup_vs_fastest"] = fastest / entry["catalog"]["seconds"]
            entry["warm_speedup_vs_fastest"] = fastest / entry["catalog"]["warm_seconds"]
        results["queries"][name] = entry

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"catalog-{args.files}"
    (out / f"{stem}.json").write_text(json.dumps(results, indent=2))
    (out / f"{stem}.md").write_text(markdown(results))
    print(f"wrote {out / stem}.md and .json")


def _with_where(query: compare.Query, where: str) -> Any:
    """A compare.Query whose SQL condition is ``where`` (a column = integer)."""
    column, value = (part.strip() for part in where.split("="))
    return compare.Query(query.name, compare.Cmp(column, "=", int(value)), None)


def markdown(r: dict[str, Any]) -> str:
    lines = [
        f"# The catalog on {r['files']:,} files ({r['data_bytes'] / 1e6:.0f} MB)",
        "",
        f"Catalog: {r['catalog_bytes']:,} B, built in {r['catalog_build_seconds']:.1f} s.",
        "",
        "Cold: the process's metadata cache (footers and catalogs) cleared before each run, as "
        "in a new process; warm: kept between runs.",
        "",
        "| query | planning | cold plan ms | cold lookup ms | warm plan ms | warm lookup ms "
        "| footers read (cold) | files pruned by the catalog | bytes read (cold) | rows |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, q in r["queries"].items():
        for label in ("catalog", "footers"):
            if label not in q:
                continue
            x = q[label]
            warm_plan = x.get("warm_plan_seconds")
            lines.append(
                f"| {name} | {'with the catalog' if label == 'catalog' else 'every footer'} | "
                f"{x['plan_seconds'] * 1e3:.1f} | {x['seconds'] * 1e3:.1f} | "
                f"{'n/a' if warm_plan is None else f'{warm_plan * 1e3:.2f}'} | "
                f"{x['warm_seconds'] * 1e3:.1f} | "
                f"{x['footers_read']:,} | {x['files_pruned_by_catalog']:,} | "
                f"{x['bytes_read']:,} | {x['rows']} |"
            )
    names = list(next(iter(r["queries"].values()))["peers"])
    if not names:
        return "\n".join(lines) + "\n"
    lines += ["", "Peers on the same files (warm), ms:", ""]
    lines += [
        "| query | "
        + " | ".join(names)
        + " | pqindex, catalog, cold | pqindex, catalog, warm | speed-up cold / warm |"
    ]
    lines += ["|---|" + "---:|" * (len(names) + 3)]
    for name, q in r["queries"].items():
        peers = " | ".join(f"{p['seconds'] * 1e3:.1f}" for p in q["peers"].values())
        lines.append(
            f"| {name} | {peers} | {q['catalog']['seconds'] * 1e3:.1f} | "
            f"{q['catalog']['warm_seconds'] * 1e3:.1f} | {q['speedup_vs_fastest']:.1f}x / "
            f"{q['warm_speedup_vs_fastest']:.1f}x |"
        )
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
