"""Where reading on the driver stops paying: time ``pqindex.spark.read(...).toArrow()`` with
the rows read on the driver (``createDataFrame``) and in executors (``mapInArrow``), for plans
of growing selected bytes, on TPC-H lineitem sorted by ``l_orderkey``.

    python benches/spark_threshold.py --data pqindex-data/sf1/pqindex-written [--runs 3]

The crossover is what ``pqindex.spark.DRIVER_READ_BYTES`` is set from (benches/HISTORY.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

WIDTHS = [1, 100, 1_000, 10_000, 50_000, 200_000, 600_000]


def timed(
    spark: Any, path: str, where: str, driver_read_bytes: int, runs: int
) -> tuple[float, int]:
    import pqindex.spark

    times, selected = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        scan = pqindex.spark.plan(spark, path, where, driver_read_bytes=driver_read_bytes)
        scan.to_df().toArrow()
        times.append(time.perf_counter() - start)
        selected = scan.selected_bytes
    return statistics.median(times), selected


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", required=True, help="lineitem sorted by l_orderkey")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.driver.memory", "4g")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    print(f"{'orderkeys':>10} {'selected bytes':>15} {'driver s':>9} {'executors s':>12}")
    for width in WIDTHS:
        where = f"l_orderkey BETWEEN 1000000 AND {1_000_000 + width}"
        on_driver, selected = timed(spark, args.data, where, 1 << 62, args.runs)
        in_executors, _ = timed(spark, args.data, where, 0, args.runs)
        print(f"{width:>10} {selected:>15,} {on_driver:>9.3f} {in_executors:>12.3f}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
