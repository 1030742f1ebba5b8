"""Decode-bound reads against polars, pyarrow and DuckDB: whole columns of TPC-H lineitem as
Spark writes it, with no predicate.

    python benches/full_scan.py [--layout /tmp/pqindex-bench/sf1/spark_impala] [--runs 9]
        [--rounds 3] [--out benches/results]

The layout is compare.py's (``python benches/compare.py --sf 1 --layouts spark_impala``
writes it). Reads, each to an Arrow table (polars: a DataFrame; ``pqindex-views``: pqindex with
``string_view=True``, strings as Arrow views as polars holds them; ``pqindex-polars``:
those views as a polars DataFrame, ``polars.DataFrame(scan)``; ``pqindex-polars-utf8``:
the same without views):

- ``*``: every column;
- ``strings``: the four dictionary-encoded string columns (``l_shipinstruct``,
  ``l_shipmode``, ``l_returnflag``, ``l_linestatus``);
- ``decimals``: ``l_quantity, l_extendedprice, l_discount`` (compare.py's
  ``full_scan.narrow``).

Each engine runs in its own process, one warm-up read then ``--runs`` timed reads per case;
the engines take turns for ``--rounds`` rounds, and a cell is the median of the rounds'
medians. Results: ``full-scan-<layout>.{md,json}`` under ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
from pathlib import Path

CASES = {
    "*": None,
    "strings": ["l_shipinstruct", "l_shipmode", "l_returnflag", "l_linestatus"],
    "decimals": ["l_quantity", "l_extendedprice", "l_discount"],
}
ENGINES = (
    "pqindex",
    "pqindex-views",
    "pqindex-polars",
    "pqindex-polars-utf8",
    "polars",
    "pyarrow",
    "duckdb",
)
#: pqindex's own reads: the default output, strings as views (``string_view=True``), and
#: a scan handed to polars as a DataFrame (through the Arrow C stream), with views and
#: without.
OURS = ("pqindex", "pqindex-views", "pqindex-polars", "pqindex-polars-utf8")

#: One engine's reads, run in a fresh interpreter: prints {case: median ms}.
PROGRAM = """
import json, statistics, sys, time
engine, layout, runs, cases = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
glob = layout + "/*.parquet"
if engine.startswith("pqindex-polars"):
    import pqindex
    import polars as pl
    views = engine == "pqindex-polars"
    read = lambda cols: pl.DataFrame(pqindex.scan(layout, columns=cols, string_view=views))
elif engine.startswith("pqindex"):
    import pqindex
    views = engine == "pqindex-views"
    read = lambda cols: pqindex.scan(layout, columns=cols, string_view=views).to_arrow()
elif engine == "polars":
    import polars as pl
    def read(cols):
        frame = pl.scan_parquet(glob)
        return (frame if cols is None else frame.select(cols)).collect()
elif engine == "pyarrow":
    import pyarrow.dataset as ds
    read = lambda cols: ds.dataset(layout, format="parquet").to_table(columns=cols)
else:
    import duckdb
    con = duckdb.connect()
    read = lambda cols: con.sql(
        f"SELECT {'*' if cols is None else ', '.join(cols)} FROM read_parquet('{glob}')"
    ).to_arrow_table()
out = {}
for name, cols in cases.items():
    read(cols)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        read(cols)
        times.append((time.perf_counter() - start) * 1e3)
    out[name] = statistics.median(times)
print(json.dumps(out))
"""


def run(engine: str, layout: Path, runs: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, engine, str(layout), str(runs), json.dumps(CASES)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--layout", type=Path, default=Path("/tmp/pqindex-bench/sf1/spark_impala"))
    p.add_argument("--runs", type=int, default=9)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = p.parse_args()
    if not any(args.layout.glob("*.parquet")):
        sys.exit(
            f"no Parquet files in {args.layout}: write the layout first "
            "(python benches/compare.py --sf 1 --layouts spark_impala)"
        )
    rounds: dict[str, list[dict[str, float]]] = {e: [] for e in ENGINES}
    for r in range(args.rounds):
        for engine in ENGINES:
            rounds[engine].append(run(engine, args.layout, args.runs))
            print(f"round {r + 1} {engine}: {rounds[engine][-1]}", flush=True)
    cells = {e: {c: statistics.median(x[c] for x in rounds[e]) for c in CASES} for e in ENGINES}
    lines = [
        f"# Decode-bound reads of `{args.layout}`",
        "",
        f"Command: `python benches/full_scan.py --layout {args.layout} --runs {args.runs} "
        f"--rounds {args.rounds}` ({dt.datetime.now().isoformat(timespec='seconds')}). "
        "Median over the rounds of each round's median, in ms; each of pqindex's reads / "
        "fastest peer last.",
        "",
        "| read | "
        + " | ".join(ENGINES)
        + " | "
        + " | ".join(f"{e} / fastest peer" for e in OURS)
        + " |",
        "|---|" + "---:|" * (len(ENGINES) + len(OURS)),
    ]
    for c in CASES:
        fastest = min(cells[e][c] for e in ENGINES if e not in OURS)
        row = " | ".join(f"{cells[e][c]:.1f}" for e in ENGINES)
        ratios = " | ".join(f"x{cells[e][c] / fastest:.2f}" for e in OURS)
        lines.append(f"| `{c}` | {row} | {ratios} |")
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"full-scan-{args.layout.parent.name}-{args.layout.name}"
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    stem.with_suffix(".json").write_text(json.dumps({"cells": cells, "rounds": rounds}, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
