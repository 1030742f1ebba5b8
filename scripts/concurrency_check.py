"""Scans of one local file while another process changes its indexes, the way issue 22
measured it: a reader process scans a 300,000-row file in a loop (three predicates, every
answer checked against pyarrow) while a writer process alternates ``add_indexes`` and
``drop_indexes`` on the same file, each an atomic replace by rename.

    python scripts/concurrency_check.py [--seconds 40] [--rows 300000] [--json]
    python scripts/concurrency_check.py --forks 200

Prints scans, rewrites and failures (wrong rows or any exception); exits 1 on a failure.
A scan must read the file it planned, so a rename between planning and reading does not
abort it.

With ``--forks N`` it instead forks N children while two threads of the parent scan in a
loop (so the fork lands at any point of a scan, thread starts and exits included); each
child scans once and must finish within 10 s. Prints the children that hung.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import pqindex
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

PREDICATES = ['"u" = 123457', "\"s\" = 'value-4242'", '"k" BETWEEN 150000 AND 150999']


def make_table(n: int) -> pa.Table:
    rng = np.random.default_rng(22)
    u = rng.permutation(n)
    return pa.table(
        {
            "k": pa.array(np.arange(n), pa.int64()),
            "u": pa.array(u, pa.int64()),
            "s": pa.array([f"value-{x % 50_000}" for x in u]),
        }
    )


def expected(table: pa.Table) -> list[list[int]]:
    masks = [
        pc.equal(table["u"], 123457),
        pc.equal(table["s"], "value-4242"),
        pc.and_(pc.greater_equal(table["k"], 150000), pc.less_equal(table["k"], 150999)),
    ]
    return [sorted(table.filter(m).column("k").to_pylist()) for m in masks]


def reader(path: str, rows: int, seconds: float, out: Any) -> None:
    want = expected(make_table(rows))
    scans, failures = 0, []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        i = scans % len(PREDICATES)
        try:
            got = sorted(pqindex.scan(path, PREDICATES[i]).to_arrow().column("k").to_pylist())
            if got != want[i]:
                failures.append(f"{PREDICATES[i]}: {len(got)} rows, expected {len(want[i])}")
        except Exception:
            failures.append(traceback.format_exc(limit=2))
        scans += 1
    out.put({"scans": scans, "scan_failures": failures})


def writer(path: str, seconds: float, out: Any) -> None:
    rewrites, failures = 0, []
    indexes = [
        pqindex.DistinctIndex("u", granularity="page"),
        pqindex.BloomIndex("s", granularity="page"),
    ]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if rewrites % 2 == 0:
                pqindex.add_indexes(path, indexes)
            else:
                pqindex.drop_indexes(path)
        except Exception:
            failures.append(traceback.format_exc(limit=2))
        rewrites += 1
    out.put({"rewrites": rewrites, "rewrite_failures": failures})


def forks(path: str, n: int) -> dict[str, Any]:
    """Fork ``n`` children while two threads scan ``path``; count the children that hang."""
    pqindex.scan(path, PREDICATES[0]).to_arrow()  # lazy imports done before any fork
    stop = threading.Event()

    def scan_forever() -> None:
        while not stop.is_set():
            pqindex.clear_metadata_cache()
            pqindex.scan(path, PREDICATES[0]).to_arrow()

    threads = [threading.Thread(target=scan_forever) for _ in range(2)]
    for t in threads:
        t.start()
    hung = failed = 0
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            rows = pqindex.scan(path, PREDICATES[0]).to_arrow().num_rows
            os._exit(0 if rows == 1 else 3)
        deadline = time.monotonic() + 10
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                failed += os.waitstatus_to_exitcode(status) != 0
                break
            if time.monotonic() > deadline:
                hung += 1
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                break
            time.sleep(0.005)
    stop.set()
    for t in threads:
        t.join()
    return {"forks": n, "children_hung": hung, "children_failed": failed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--forks", type=int, default=0, help="run the fork check instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = str(Path(d) / "t.parquet")
        pq.write_table(make_table(args.rows), path, row_group_size=50_000, write_page_index=True)
        if args.forks:
            found = forks(path, args.forks)
            print(
                json.dumps(found) if args.json else "\n".join(f"{k}: {v}" for k, v in found.items())
            )
            return 1 if found["children_hung"] or found["children_failed"] else 0
        ctx = mp.get_context("spawn")
        out: Any = ctx.Queue()
        procs = [
            ctx.Process(target=reader, args=(path, args.rows, args.seconds, out)),
            ctx.Process(target=writer, args=(path, args.seconds, out)),
        ]
        for p in procs:
            p.start()
        result: dict[str, Any] = {}
        for _ in procs:
            result.update(out.get(timeout=args.seconds + 120))
        for p in procs:
            p.join()
        leftovers = sorted(p.name for p in Path(d).iterdir() if p.name != "t.parquet")
    failures = result["scan_failures"] + result["rewrite_failures"]
    summary = {
        "rows": args.rows,
        "seconds": args.seconds,
        "scans": result["scans"],
        "rewrites": result["rewrites"],
        "scan_failures": len(result["scan_failures"]),
        "rewrite_failures": len(result["rewrite_failures"]),
        "temporary_files_left": leftovers,
    }
    if args.json:
        print(json.dumps(summary))
    else:
        for k, v in summary.items():
            print(f"{k}: {v}")
        for f in failures[:5]:
            print("failure:", f, file=sys.stderr)
    return 1 if failures or leftovers else 0


if __name__ == "__main__":
    sys.exit(main())
