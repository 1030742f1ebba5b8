"""Peak memory of pqindex reads: a streamed ``SELECT *``, a point lookup, and a Spark
executor task, each in a fresh process.

    python benches/memory.py --file lineitem.parquet [--cases stream,lookup,spark]
        [--read-ahead BYTES] [--threads N] [--out benches/results/memory.json]

Every case runs in its own interpreter. It imports pyarrow and pqindex, takes the
process's resident set (``VmRSS``) as its baseline, resets the kernel's high-water mark
(``echo 5 > /proc/self/clear_refs``) and runs; the figure is ``VmHWM`` at the end minus
the baseline: what the read added to the interpreter's own memory at its peak.

- ``stream``: ``pqindex.scan(file)`` with every column, consumed batch by batch through
  ``pyarrow.RecordBatchReader.from_stream`` (each batch dropped before the next);
- ``lookup``: ``pqindex.scan(file, where="l_orderkey = <a key in the middle>").to_arrow()``;
- ``spark``: ``pqindex.spark.read(spark, file)`` over every column on ``local[2]``,
  written to Spark's ``noop`` sink. The figure is the Python workers' (Spark's executor
  side runs pqindex there): a first job imports pqindex in each worker and resets its
  high-water mark; after the read, every worker's ``VmHWM`` minus that baseline, the
  largest reported.

``--read-ahead`` passes ``read_ahead`` to the scan (pqindex builds that have it), and to
Spark's workers as ``PQINDEX_READ_AHEAD``; without it the default applies. The file is any
TPC-H lineitem, e.g. from
``tpchgen-cli parquet -s 10 --tables lineitem -o benches/data/memory/sf10``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

MIB = 1 << 20


def status_kib(field: str, pid: str = "self") -> int:
    """A ``/proc/<pid>/status`` memory field (``VmRSS``, ``VmHWM``), in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def reset_peak() -> int:
    """Reset this process's high-water mark to its current RSS and return that, in bytes."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return status_kib("VmRSS") * 1024


def scan_options(args: argparse.Namespace) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    if args.read_ahead is not None:
        opts["read_ahead"] = args.read_ahead
    if args.threads is not None:
        opts["threads"] = args.threads
    return opts


# --- the cases, each run in a child process -------------------------------------------------


def case_stream(args: argparse.Namespace) -> dict[str, Any]:
    import pqindex
    import pyarrow as pa

    baseline = reset_peak()
    start = time.perf_counter()
    scan = pqindex.scan(args.file, **scan_options(args))
    rows = batches = 0
    for batch in pa.RecordBatchReader.from_stream(scan):
        rows += batch.num_rows
        batches += 1
        del batch
    return {
        "baseline": baseline,
        "peak": status_kib("VmHWM") * 1024,
        "rows": rows,
        "batches": batches,
        "seconds": time.perf_counter() - start,
    }


def case_lookup(args: argparse.Namespace) -> dict[str, Any]:
    import pqindex
    import pyarrow.parquet as pq

    md = pq.ParquetFile(args.file).metadata
    middle = md.row_group(md.num_row_groups // 2).column(0).statistics
    key = int(middle.min) if middle is not None and middle.has_min_max else 1
    baseline = reset_peak()
    start = time.perf_counter()
    table = pqindex.scan(args.file, where=f"l_orderkey = {key}", **scan_options(args)).to_arrow()
    return {
        "baseline": baseline,
        "peak": status_kib("VmHWM") * 1024,
        "rows": table.num_rows,
        "seconds": time.perf_counter() - start,
    }


def _worker_start(batches: Any) -> Any:
    """In each Python worker: import what a read imports, reset the high-water mark and
    report the pid and baseline."""
    import pqindex  # noqa: F401
    import pyarrow as pa

    for _ in batches:
        pass
    yield pa.record_batch({"pid": [os.getpid()], "baseline": [reset_peak()]})


def parent(pid: str) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[1]


def spark_workers() -> list[str]:
    """Pids of live Python processes this process's Spark started (its daemon and the
    workers it forked), not other programs' Spark workers."""
    me = str(os.getpid())
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not any(b"pyspark.daemon" in c or b"pyspark.worker" in c for c in cmd):
            continue
        ancestor: str | None = pid
        while ancestor not in (None, "0", "1", me):
            ancestor = parent(ancestor)
        if ancestor == me:
            pids.append(pid)
    return pids


def case_spark(args: argparse.Namespace) -> dict[str, Any]:
    import pqindex.spark
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    if args.read_ahead is not None:
        # Spark's Python workers inherit the driver's environment in local mode.
        os.environ["PQINDEX_READ_AHEAD"] = str(args.read_ahead)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("pqindex-memory")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "2g")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    # Two tasks at once, each in a worker: after this job both workers have imported
    # pqindex and reset their marks.
    warm = spark.range(0, 2, numPartitions=2).mapInArrow(_worker_start, "pid long, baseline long")
    baselines = {str(r.pid): r.baseline for r in warm.collect()}
    options: dict[str, Any] = {}
    if args.spark_partitions:
        options["partitions"] = args.spark_partitions
    start = time.perf_counter()
    scan = pqindex.spark.plan(spark, args.file, **options)
    df = scan.to_df()
    df.write.format("noop").mode("overwrite").save()
    seconds = time.perf_counter() - start
    per_worker = {}
    base = min(baselines.values())
    for pid in spark_workers():
        try:
            hwm = status_kib("VmHWM", pid) * 1024
        except (OSError, KeyError):
            continue
        per_worker[pid] = hwm - baselines.get(pid, base)
    rows = scan.metrics()["rows_matched"]
    spark.stop()
    return {
        "baseline": base,
        "peak": base + max(per_worker.values()),
        "workers": per_worker,
        "known_workers": sorted(baselines),
        "rows": rows,
        "seconds": seconds,
    }


CASES = {"stream": case_stream, "lookup": case_lookup, "spark": case_spark}


# --- the parent ------------------------------------------------------------------------------


def run_case(case: str, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", case, "--file", str(args.file)]
    if args.read_ahead is not None:
        cmd += ["--read-ahead", str(args.read_ahead)]
    if args.threads is not None:
        cmd += ["--threads", str(args.threads)]
    if args.spark_partitions:
        cmd += ["--spark-partitions", str(args.spark_partitions)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--file", type=Path, required=True)
    p.add_argument("--cases", default="stream,lookup,spark")
    p.add_argument("--read-ahead", type=int, default=None)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--spark-partitions", type=int, default=None)
    p.add_argument("--runs", type=int, default=1, help="runs per case; the largest peak counts")
    p.add_argument("--out", type=Path, default=None, help="append the results here (JSON lines)")
    p.add_argument("--child", choices=sorted(CASES), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(CASES[args.child](args)))
        return

    import pqindex

    size = args.file.stat().st_size
    print(f"{args.file} ({size / 1e9:.2f} GB); load {os.getloadavg()}")
    for case in args.cases.split(","):
        results = [run_case(case, args) for _ in range(args.runs)]
        worst = max(results, key=lambda r: r["peak"] - r["baseline"])
        added = (worst["peak"] - worst["baseline"]) / MIB
        print(
            f"{case:7s} peak {added:8.1f} MiB above a {worst['baseline'] / MIB:.0f} MiB baseline; "
            f"{worst['rows']:,} rows in {worst['seconds']:.1f} s"
        )
        if args.out:
            record = {
                "case": case,
                "file": str(args.file),
                "file_bytes": size,
                "read_ahead": args.read_ahead,
                "threads": args.threads,
                "pqindex": pqindex.__version__,
                "load": os.getloadavg(),
                "added_mib": round(added, 1),
                "runs": results,
            }
            with args.out.open("a") as f:
                f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
