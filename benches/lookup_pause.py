"""The SF10 sorted-key lookups of the Impala set, run back to back and after a pause.

    python benches/lookup_pause.py [--data-dir /tmp/pqindex-bench] [--runs 30] [--pause-ms 50]

``benches/compare.py`` runs each engine's query after the other engines' (round-robin), so
each timed lookup follows a pause, and on a virtual machine a pause leaves the caches cold:
the same lookup then costs about twice its CPU time. This prints, per lookup, the median wall
and CPU time (ms) of ``--runs`` reads of ``pqindex.scan(...).to_arrow()`` in this process,
run back to back, then each after a ``--pause-ms`` sleep. The layout is compare.py's
``spark_impala`` at SF10 (``python benches/compare.py --sf 10 --layouts spark_impala``
writes it). To compare two builds, run it under each in turn (``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from pathlib import Path

import pqindex

LOOKUPS = {
    "l_orderkey = 1": "l_orderkey = 1",
    "l_orderkey = 41995046": "l_orderkey = 41995046",
    "l_orderkey < 1000": "l_orderkey < 1000",
    "l_orderkey BETWEEN ...": "l_orderkey BETWEEN 18598822 AND 18598922",
}


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(path: Path, where: str, runs: int, pause: float) -> tuple[float, float]:
    """Median wall and CPU ms of ``runs`` reads, each after ``pause`` seconds of sleep."""
    for _ in range(3):
        pqindex.scan(path, where=where).to_arrow()
    walls, cpus = [], []
    for _ in range(runs):
        if pause:
            time.sleep(pause)
        cpu, start = cpu_seconds(), time.perf_counter()
        pqindex.scan(path, where=where).to_arrow()
        walls.append(time.perf_counter() - start)
        cpus.append(cpu_seconds() - cpu)
    return statistics.median(walls) * 1e3, statistics.median(cpus) * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", type=Path, default=Path("/tmp/pqindex-bench"))
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--pause-ms", type=float, default=50.0)
    args = p.parse_args()
    path = args.data_dir / "sf10" / "spark_impala"
    if not path.is_dir():
        raise SystemExit(
            f"{path} is missing: python benches/compare.py --sf 10 --layouts spark_impala"
        )
    print(f"{'lookup':24s} {'back to back':>18s} {'after a pause':>18s}   (wall / CPU ms)")
    for name, where in LOOKUPS.items():
        back = measure(path, where, args.runs, 0.0)
        paused = measure(path, where, args.runs, args.pause_ms / 1e3)
        print(f"{name:24s} {back[0]:8.2f} / {back[1]:6.2f} {paused[0]:9.2f} / {paused[1]:6.2f}")


if __name__ == "__main__":
    main()
