"""Keyed scans with many keys: the lineitem rows whose ``l_orderkey`` is one of N keys (a
left semi join), N from a hundred to a million, through pqindex and its peers.

    python benches/keys.py [--sf 1] [--runs 3] [--keys 100,10000,100000,1000000]
        [--layouts sorted,shuffled] [--data-dir /tmp/pqindex-bench] [--out benches/results]
        [--tag NAME]

The keys are drawn at random (fixed seed) from ``1..max(l_orderkey)``: TPC-H uses one order
key in four, so about a quarter of them hold rows. The fact table is compare.py's layout,
shared with it under ``--data-dir`` (``sorted``: in key order with 20,000-row pages;
``shuffled``: the same rows in random order, where every page holds keys; ``small_files``:
2,000 files in key order). ``small_files_distinct`` is made here: copies of the
``small_files`` files, each with a page distinct index on ``l_orderkey`` (the index a join
key gets; other engines read the same files and ignore it).

Engines, each asked for the three narrow columns of compare.py:

- ``pqindex``: ``pqindex.scan(path, keys=keys, on="l_orderkey", columns=...).to_arrow()``;
- ``duckdb``: ``SELECT ... FROM read_parquet(...) SEMI JOIN keys ON l_orderkey = k``;
- ``polars``: ``pl.scan_parquet(...).join(keys, left_on="l_orderkey", right_on="k",
  how="semi").collect()``;
- ``pyarrow``: ``pyarrow.dataset`` with ``field("l_orderkey").isin(keys)``.

The keys are an Arrow table in memory for every engine, and each engine's time includes what
it does with them. All engines run in this one process: one untimed run each, then
``--runs`` rounds in which each runs once; the median. Every engine must return the same
number of rows and the same sum of ``l_orderkey``. Results:
``benches/results/keys-sf<sf>[-tag].{md,json}``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script

import compare
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

COLUMNS = list(compare.NARROW)


def key_table(n: int, max_key: int, seed: int) -> Any:
    """``n`` distinct keys drawn evenly from ``1..max_key``, in random order."""
    rng = np.random.default_rng(seed)
    keys = rng.choice(max_key, size=min(n, max_key), replace=False) + 1
    return pa.table({"k": pa.array(keys, pa.int64())})


def distinct_layout(root: Path, raw: Path) -> Path:
    """``small_files`` copied, with a page distinct index on ``l_orderkey`` in each file;
    written once and kept while its marker exists."""
    import shutil

    import pqindex

    out = root / "small_files_distinct"
    if (out / compare.DONE).exists():
        return out
    source = next(lay for lay in compare.LAYOUTS if lay.name == "small_files")
    plain = compare.build_layout(source, raw, root, None)
    tmp = root / "small_files_distinct.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    index = pqindex.DistinctIndex("l_orderkey", granularity="page")
    for f in compare.data_files(plain):
        shutil.copyfile(f, tmp / f.name)
        pqindex.add_indexes(str(tmp / f.name), [index])
    (tmp / compare.DONE).touch()
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def engines(path: Path) -> dict[str, Callable[[Any], Any]]:
    import duckdb
    import polars as pl
    import pqindex

    files = [str(f) for f in compare.data_files(path)]
    con = duckdb.connect()
    con.execute("SET threads = 2")
    select = ", ".join(COLUMNS)

    def run_pqindex(keys: Any) -> Any:
        return pqindex.scan(path, keys=keys, on="l_orderkey", columns=COLUMNS).to_arrow()

    def run_duckdb(keys: Any) -> Any:
        con.register("keys", keys)
        try:
            listed = ", ".join(f"'{f}'" for f in files)
            return con.sql(
                f"SELECT {select} FROM read_parquet([{listed}]) SEMI JOIN keys ON l_orderkey = k"
            ).to_arrow_table()
        finally:
            con.unregister("keys")

    def run_polars(keys: Any) -> Any:
        frame = pl.scan_parquet(files).select(COLUMNS)
        right = pl.from_arrow(keys).lazy()  # type: ignore[union-attr]
        return frame.join(right, left_on="l_orderkey", right_on="k", how="semi").collect()

    dataset = pads.dataset(files, format="parquet")

    def run_pyarrow(keys: Any) -> Any:
        return dataset.to_table(
            columns=COLUMNS, filter=pads.field("l_orderkey").isin(keys.column("k"))
        )

    return {
        "pqindex": run_pqindex,
        "duckdb": run_duckdb,
        "polars": run_polars,
        "pyarrow": run_pyarrow,
    }


def answer(result: Any) -> tuple[int, int]:
    """Rows and the sum of ``l_orderkey``: what every engine must agree on."""
    table = result.to_arrow() if hasattr(result, "to_arrow") else result
    column = table.column("l_orderkey")
    total = pc.sum(column).as_py() if table.num_rows else 0
    return table.num_rows, int(total or 0)


def measure(
    runners: dict[str, Callable[[Any], Any]], keys: Any, runs: int
) -> dict[str, tuple[list[float], tuple[int, int]]]:
    """Each engine once untimed, then ``runs`` rounds in which every engine runs once, so
    that the machine's drift falls on all of them alike."""
    answers = {name: answer(run(keys)) for name, run in runners.items()}
    times: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(runs):
        for name, run in runners.items():
            start = time.perf_counter()
            result = run(keys)
            times[name].append((time.perf_counter() - start) * 1e3)
            answers[name] = answer(result)
    return {name: (times[name], answers[name]) for name in runners}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sf", type=float, default=1)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--keys", default="100,10000,100000,1000000")
    p.add_argument("--layouts", default="sorted,shuffled")
    p.add_argument("--engines", default="pqindex,duckdb,polars,pyarrow")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--data-dir", type=Path, default=Path("/tmp/pqindex-bench"))
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    p.add_argument("--tag", default="")
    args = p.parse_args()

    root = args.data_dir / f"sf{args.sf:g}"
    raw = compare.generate_raw(root, args.sf)
    max_key = int(pc.max(compare.pq.read_table(raw, columns=["l_orderkey"]).column(0)).as_py())
    counts = [int(n) for n in args.keys.split(",")]
    wanted = args.engines.split(",")
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    rows: list[dict[str, Any]] = []
    for name in args.layouts.split(","):
        if name == "small_files_distinct":
            path = distinct_layout(root, raw)
        else:
            layout = next(lay for lay in compare.LAYOUTS if lay.name == name)
            path = compare.build_layout(layout, raw, root, None)
        runners = {k: v for k, v in engines(path).items() if k in wanted}
        for n in counts:
            keys = key_table(n, max_key, args.seed)
            measured = measure(runners, keys, args.runs)
            answers = {engine: got for engine, (_, got) in measured.items()}
            for engine, (times, got) in measured.items():
                row = {
                    "layout": name,
                    "keys": n,
                    "engine": engine,
                    "median_ms": statistics.median(times),
                    "times_ms": times,
                    "rows": got[0],
                }
                rows.append(row)
                print(
                    f"{name:9} {n:>9,} keys {engine:8} {row['median_ms']:9.1f} ms "
                    f"[{min(times):.1f}-{max(times):.1f}] {got[0]:,} rows",
                    flush=True,
                )
            if len(set(answers.values())) != 1:
                raise SystemExit(f"engines disagree on {name}, {n} keys: {answers}")
    write(args, started, rows)


def write(args: argparse.Namespace, started: str, rows: list[dict[str, Any]]) -> None:
    stem = f"keys-sf{args.sf:g}" + (f"-{args.tag}" if args.tag else "")
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {
        "sf": args.sf,
        "runs": args.runs,
        "command": " ".join(sys.argv),
        "started": started,
        "machine": compare.machine(),
        "versions": compare.versions(),
        "rows": rows,
    }
    (args.out / f"{stem}.json").write_text(json.dumps(doc, indent=1))
    engines = list(dict.fromkeys(r["engine"] for r in rows))
    lines = [
        f"# Keyed scans at SF{args.sf:g}",
        "",
        f"`{doc['command']}`, started {started}. Median wall time in ms over {args.runs} warm "
        "runs [min-max]; every engine returned the same rows (count and key sum).",
        "",
        "| layout | keys | rows | " + " | ".join(engines) + " | pqindex / fastest peer |",
        "|---|---|---|" + "---|" * len(engines) + "---|",
    ]
    groups: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["layout"], r["keys"]), {})[r["engine"]] = r
    for (layout, n), cells in groups.items():
        peers = [c["median_ms"] for e, c in cells.items() if e != "pqindex"]
        ratio = (
            f"x{cells['pqindex']['median_ms'] / min(peers):.2f}"
            if peers and "pqindex" in cells
            else "-"
        )
        texts = [
            f"{c['median_ms']:.1f} [{min(c['times_ms']):.1f}-{max(c['times_ms']):.1f}]"
            if (c := cells.get(e))
            else "-"
            for e in engines
        ]
        rows_returned = next(iter(cells.values()))["rows"]
        lines.append(
            f"| {layout} | {n:,} | {rows_returned:,} | " + " | ".join(texts) + f" | {ratio} |"
        )
    (args.out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / stem}.md", flush=True)


if __name__ == "__main__":
    main()
