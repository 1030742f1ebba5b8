"""Embedded indexes on TPC-H lineitem as plain Spark writes it: what each index kind costs
(build time, bytes added) and what it saves (bytes fetched, time), against the same files
without indexes (page index and late materialisation still on) and against the peers.

    python benches/embedded_indexes.py [--source DIR] [--sf 1] [--runs 5]
        [--data-dir /tmp/pqindex-bench] [--out benches/results]

``--source`` is a directory of Spark-written lineitem files; without it the Spark layout
of ``compare.py`` is built (or reused) under --data-dir. The files are copied: the source
is never changed. Every time is warm (metadata cached, one untimed run first), the median
of --runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import compare
import pqindex


@dataclass(frozen=True)
class Config:
    """One set of indexes, measured on its own."""

    name: str
    indexes: tuple[pqindex.IndexDefinition, ...]
    queries: tuple[str, ...]


def timed(runs: int, action: Callable[[], Any]) -> tuple[float, Any]:
    """Median seconds of ``runs`` warm runs of ``action`` and its last result."""
    action()
    seconds = []
    result = None
    for _ in range(runs):
        start = time.perf_counter()
        result = action()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), result


def pqindex_query(path: Path, where: str, columns: list[str] | None) -> Callable[[], Any]:
    def run() -> Any:
        scan = pqindex.scan(path, where=where, columns=columns)
        table = scan.to_arrow()
        return table, scan.metrics()

    return run


def source_layout(args: argparse.Namespace) -> Path:
    if args.source:
        return Path(args.source)
    root = Path(args.data_dir) / f"sf{args.sf:g}"
    raw = compare.generate_raw(root, args.sf)
    layout = next(x for x in compare.LAYOUTS if x.name == "spark_plain")
    spark = compare.spark_env.start_spark("4g", root / "warehouse")
    try:
        return compare.build_layout(layout, raw, root, spark)
    finally:
        spark.stop()


def pick_values(path: Path) -> dict[str, Any]:
    """An existing l_partkey and an existing l_comment, from the middle of the data."""
    scan = pqindex.scan(path, columns=["l_partkey", "l_comment", "l_orderkey"])
    table = scan.to_arrow()
    row = table.slice(table.num_rows // 2 + 12_345, 1).to_pylist()[0]
    return {"partkey": row["l_partkey"], "comment": row["l_comment"]}


def index_bytes(files: list[Path]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for f in files:
        for ix in pqindex.list_indexes(f):
            key = f"{ix['kind']}({ix['columns'][0]}, {ix['granularity']})"
            sizes[key] = sizes.get(key, 0) + int(ix["length"])
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source")
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data-dir", default="/tmp/pqindex-bench")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = parser.parse_args()

    source = source_layout(args)
    work = Path(args.data_dir) / "embedded-indexes"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    files = []
    for f in compare.data_files(source):
        shutil.copyfile(f, work / f.name)
        files.append(work / f.name)
    data_bytes = sum(f.stat().st_size for f in files)
    values = pick_values(work)
    comment = values["comment"].replace("'", "''")
    queries = {
        "partkey_point": (f"l_partkey = {values['partkey']}", ["l_orderkey", "l_partkey"]),
        "comment_needle": (f"l_comment = '{comment}'", None),
    }
    configs = [
        Config("distinct(page)", (pqindex.DistinctIndex("l_partkey"),), ("partkey_point",)),
        Config(
            "distinct(page) on l_comment",
            (pqindex.DistinctIndex("l_comment"),),
            ("comment_needle",),
        ),
        Config(
            "bloom(page, fpp 0.01)",
            (
                pqindex.BloomIndex("l_partkey", granularity="page"),
                pqindex.BloomIndex("l_comment", granularity="page"),
            ),
            ("partkey_point", "comment_needle"),
        ),
        Config(
            "distinct(row_group)",
            (
                pqindex.DistinctIndex("l_partkey", granularity="row_group"),
                pqindex.DistinctIndex("l_comment", granularity="row_group"),
            ),
            ("partkey_point", "comment_needle"),
        ),
    ]
    results: dict[str, Any] = {
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "pqindex": pqindex.__version__,
        },
        "source": str(source),
        "files": len(files),
        "data_bytes": data_bytes,
        "queries": {k: v[0] for k, v in queries.items()},
        "baseline": {},
        "configs": [],
        "peers": {},
    }

    print(f"{len(files)} files, {data_bytes / 1e6:.1f} MB; baseline without indexes", flush=True)
    for name, (where, columns) in queries.items():
        seconds, (table, m) = timed(args.runs, pqindex_query(work, where, columns))
        results["baseline"][name] = {
            "seconds": seconds,
            "rows": table.num_rows,
            "bytes_read": m["bytes_read"],
            "pages_read": m["pages_read"],
        }
        print(f"  {name}: {table.num_rows} rows, {m['bytes_read']:,} B, {seconds * 1e3:.1f} ms")

    for column in ("l_partkey", "l_comment"):
        seconds, _ = timed(1, lambda c=column: pqindex.scan(work, columns=[c]).to_arrow())
        results.setdefault("full_scan_seconds", {})[column] = seconds

    for config in configs:
        print(f"{config.name}:", flush=True)
        start = time.perf_counter()
        for f in files:
            pqindex.add_indexes(f, config.indexes)
        build = time.perf_counter() - start
        sizes = index_bytes(files)
        entry: dict[str, Any] = {
            "name": config.name,
            "build_seconds": build,
            "index_bytes": sizes,
            "overhead": sum(sizes.values()) / data_bytes,
            "queries": {},
        }
        for name in config.queries:
            where, columns = queries[name]
            seconds, (table, m) = timed(args.runs, pqindex_query(work, where, columns))
            base = results["baseline"][name]
            assert table.num_rows == base["rows"], (config.name, name)
            entry["queries"][name] = {
                "seconds": seconds,
                "bytes_read": m["bytes_read"],
                "pages_read": m["pages_read"],
                "bytes_ratio": m["bytes_read"] / base["bytes_read"],
                "speedup": base["seconds"] / seconds,
            }
            print(
                f"  {name}: {m['bytes_read']:,} B ({m['bytes_read'] / base['bytes_read']:.3f} of "
                f"baseline), {seconds * 1e3:.2f} ms, pages {m['pages_read']}",
                flush=True,
            )
        print(f"  built in {build:.1f} s; {sum(sizes.values()):,} B of indexes", flush=True)
        results["configs"].append(entry)
        for f in files:
            pqindex.drop_indexes(f)

    # HyperLogLog: its size, build time and error against the exact count.
    start = time.perf_counter()
    for f in files:
        pqindex.add_indexes(f, [pqindex.HllIndex("l_partkey"), pqindex.HllIndex("l_comment")])
    hll_build = time.perf_counter() - start
    import duckdb

    hll: dict[str, Any] = {"build_seconds": hll_build, "index_bytes": index_bytes(files)}
    for column in ("l_partkey", "l_comment"):
        exact = duckdb.sql(
            f"SELECT count(DISTINCT {column}) FROM read_parquet('{work}/*.parquet')"
        ).fetchall()[0][0]
        seconds, est = timed(args.runs, lambda c=column: pqindex.approx_distinct(work, c))
        hll[column] = {
            "exact": exact,
            "estimate": est["estimate"],
            "relative_error": est["estimate"] / exact - 1,
            "standard_error": est["standard_error"],
            "seconds": seconds,
        }
        print(f"hll {column}: {est['estimate']} vs exact {exact} in {seconds * 1e3:.1f} ms")
    results["hll"] = hll
    for f in files:
        pqindex.drop_indexes(f)

    results["aggregates"] = measure_aggregates(work, files, data_bytes, args.runs)
    results["page_minmax"] = measure_page_minmax(work, files, args.runs)

    # Peers on the comment needle, on the same files.
    for f in files:
        pqindex.add_indexes(f, [pqindex.DistinctIndex("l_comment")])
    where, _ = queries["comment_needle"]
    query = compare.Query("comment_needle", compare.Cmp("l_comment", "=", values["comment"]), None)
    for engine in (compare.Duckdb(), compare.Datafusion(), compare.Polars()):
        engine.open(work, "indexed")
        run = engine.prepare(query)
        seconds, r = timed(args.runs, run)
        results["peers"][engine.name] = {"seconds": seconds, "rows": r.table.num_rows}
        print(f"{engine.name}: {seconds * 1e3:.1f} ms, {r.table.num_rows} rows", flush=True)
    seconds, (table, m) = timed(args.runs, pqindex_query(work, where, None))
    fastest = min(p["seconds"] for p in results["peers"].values())
    results["peers"]["pqindex"] = {"seconds": seconds, "rows": table.num_rows}
    results["peers"]["speedup_vs_fastest"] = fastest / seconds
    print(f"pqindex: {seconds * 1e3:.2f} ms ({fastest / seconds:.1f}x the fastest peer)")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"embedded-indexes-sf{args.sf:g}"
    (out / f"{stem}.json").write_text(json.dumps(results, indent=2, default=str))
    (out / f"{stem}.md").write_text(markdown(results))
    print(f"wrote {out / stem}.md and .json")


AGG_SELECT = "count(*), sum(l_quantity)"
AGG_WHERE = "l_orderkey < 3000000"


def measure_aggregates(work: Path, files: list[Path], data_bytes: int, runs: int) -> dict[str, Any]:
    """``aggregate`` before and after a page aggregates index on l_quantity, against DuckDB."""
    import duckdb

    def run() -> Any:
        a = pqindex.aggregate(work, AGG_SELECT, AGG_WHERE)
        row = pa_row(a)
        return row, a.metrics()

    con = duckdb.connect()
    sql = f"SELECT {AGG_SELECT} FROM read_parquet('{work}/*.parquet') WHERE {AGG_WHERE}"
    duck_seconds, duck = timed(runs, lambda: con.sql(sql).fetchall()[0])
    out: dict[str, Any] = {"select": AGG_SELECT, "where": AGG_WHERE, "duckdb": list(duck)}
    out["duckdb_seconds"] = duck_seconds
    seconds, (row, m) = timed(runs, run)
    out["before"] = {"seconds": seconds, "row": row, **pick(m)}
    start = time.perf_counter()
    for f in files:
        pqindex.add_indexes(f, [pqindex.AggregateIndex("l_quantity")])
    build = time.perf_counter() - start
    sizes = index_bytes(files)
    seconds, (row, m) = timed(runs, run)
    out["after"] = {"seconds": seconds, "row": row, **pick(m)}
    out["build_seconds"] = build
    out["index_bytes"] = sum(sizes.values())
    out["overhead"] = out["index_bytes"] / data_bytes
    for state in ("before", "after"):
        got = out[state]["row"]
        assert [int(got[0]), got[1]] == [int(duck[0]), duck[1]], (state, got, duck)
    print(
        f"aggregate {AGG_SELECT} WHERE {AGG_WHERE}: {out['before']['bytes_read']:,} B / "
        f"{out['before']['seconds'] * 1e3:.1f} ms -> {out['after']['bytes_read']:,} B / "
        f"{out['after']['seconds'] * 1e3:.2f} ms, pages read {out['after']['pages_read']}; "
        f"DuckDB {duck_seconds * 1e3:.1f} ms",
        flush=True,
    )
    for f in files:
        pqindex.drop_indexes(f)
    return out


def pa_row(a: Any) -> list[Any]:
    import pyarrow as pa

    return list(pa.table(a).to_pylist()[0].values())


def pick(m: dict[str, int]) -> dict[str, int]:
    keys = ("bytes_read", "pages_read", "rows_from_index", "rows_to_read", "rows_scanned")
    return {k: m[k] for k in keys if k in m}


def measure_page_minmax(work: Path, files: list[Path], runs: int) -> dict[str, Any]:
    """A narrow l_orderkey range in a copy of the first file without a page index (as old
    writers leave it), before and after a page_minmax index on l_orderkey."""
    import pyarrow.parquet as pq

    old = work.parent / "no-page-index.parquet"
    pq.write_table(
        pq.read_table(files[0]),
        old,
        row_group_size=10_000_000,
        max_rows_per_page=20_000,
        write_page_index=False,
    )
    key = pq.read_table(old, columns=["l_orderkey"]).column("l_orderkey")[1_000_000].as_py()
    where = f"l_orderkey BETWEEN {key} AND {key + 100}"

    def run() -> Any:
        scan = pqindex.scan(old, where=where)
        table = scan.to_arrow()
        return table.num_rows, scan.metrics()

    seconds, (rows, m) = timed(runs, run)
    out: dict[str, Any] = {"where": where, "before": {"seconds": seconds, "rows": rows, **pick(m)}}
    start = time.perf_counter()
    pqindex.add_indexes(old, [pqindex.MinMaxIndex("l_orderkey")])
    out["build_seconds"] = time.perf_counter() - start
    out["index_bytes"] = sum(index_bytes([old]).values())
    out["overhead"] = out["index_bytes"] / old.stat().st_size
    seconds, (rows2, m) = timed(runs, run)
    assert rows2 == rows
    out["after"] = {"seconds": seconds, "rows": rows2, **pick(m)}
    print(
        f"page_minmax ({where}, no page index): {out['before']['bytes_read']:,} B -> "
        f"{out['after']['bytes_read']:,} B, {out['index_bytes']:,} B of index",
        flush=True,
    )
    old.unlink()
    return out


def markdown(r: dict[str, Any]) -> str:
    lines = [
        f"# Embedded indexes on lineitem as Spark writes it ({r['files']} files, "
        f"{r['data_bytes'] / 1e6:.1f} MB)",
        "",
        "Queries: " + "; ".join(f"`{k}`: `{v}`" for k, v in r["queries"].items()),
        "",
        "| indexes | build s | index MB | overhead | query | bytes fetched | of baseline "
        "| ms | speed-up | pages read |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for name, b in r["baseline"].items():
        lines.append(
            f"| none (page index) | | | | {name} | {b['bytes_read']:,} | 1 | "
            f"{b['seconds'] * 1e3:.1f} | 1 | {b['pages_read']} |"
        )
    for c in r["configs"]:
        for q, m in c["queries"].items():
            lines.append(
                f"| {c['name']} | {c['build_seconds']:.1f} | "
                f"{sum(c['index_bytes'].values()) / 1e6:.2f} | {c['overhead']:.1%} | {q} | "
                f"{m['bytes_read']:,} | {m['bytes_ratio']:.3f} | {m['seconds'] * 1e3:.2f} | "
                f"{m['speedup']:.1f}x | {m['pages_read']} |"
            )
    lines += ["", "Full scan of one column (reference for build times): "]
    lines += [f"- {c}: {s:.2f} s" for c, s in r["full_scan_seconds"].items()]
    h = r["hll"]
    lines += [
        "",
        f"HyperLogLog sketches (2^14 registers per column chunk): built in "
        f"{h['build_seconds']:.1f} s, {sum(h['index_bytes'].values()):,} B.",
        "",
        "| column | exact distinct | estimate | error | standard error | ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for c in ("l_partkey", "l_comment"):
        x = h[c]
        lines.append(
            f"| {c} | {x['exact']:,} | {x['estimate']:,} | {x['relative_error']:+.2%} | "
            f"{x['standard_error']:.2%} | {x['seconds'] * 1e3:.1f} |"
        )
    a = r["aggregates"]
    lines += [
        "",
        f'`aggregate(source, "{a["select"]}", where="{a["where"]}")` with a page '
        f"aggregates index on l_quantity (built in {a['build_seconds']:.1f} s, "
        f"{a['index_bytes']:,} B, {a['overhead']:.2%} overhead); answer equals DuckDB's "
        f"{a['duckdb']}:",
        "",
        "| | bytes fetched | pages read | rows answered by the index | rows read | ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for state in ("before", "after"):
        x = a[state]
        lines.append(
            f"| {state} | {x['bytes_read']:,} | {x['pages_read']} | "
            f"{x.get('rows_from_index', 0):,} | {x.get('rows_to_read', 0):,} | "
            f"{x['seconds'] * 1e3:.2f} |"
        )
    lines.append(f"| DuckDB | | | | | {a['duckdb_seconds'] * 1e3:.2f} |")
    mm = r["page_minmax"]
    lines += [
        "",
        f"page_minmax on l_orderkey in a copy of the first file written without a page index "
        f"(built in {mm['build_seconds']:.1f} s, {mm['index_bytes']:,} B, "
        f"{mm['overhead']:.3%} overhead), `{mm['where']}`:",
        "",
        "| | bytes fetched | ms |",
        "|---|---:|---:|",
    ]
    for state in ("before", "after"):
        x = mm[state]
        lines.append(f"| {state} | {x['bytes_read']:,} | {x['seconds'] * 1e3:.2f} |")
    p = r["peers"]
    lines += [
        "",
        "`comment_needle` (SELECT *) with the distinct index on l_comment, against the peers "
        "on the same files:",
        "",
        "| engine | ms |",
        "|---|---:|",
    ]
    for name, v in p.items():
        if isinstance(v, dict):
            lines.append(f"| {name} | {v['seconds'] * 1e3:.2f} |")
    lines += ["", f"pqindex is {p['speedup_vs_fastest']:.1f}x faster than the fastest peer.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
