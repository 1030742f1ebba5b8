"""The SF10 sorted-key lookups of the Impala set, run back to back and after a pause.

    python benches/lookup_pause.py [--data-dir /tmp/pqindex-bench] [--runs 30] [--pause-ms 50]
                                   [--busy]

``benches/compare.py`` runs each engine's query after the other engines' (round-robin), so
each timed lookup follows a pause. On a virtual machine a pause leaves the caches cold and
the cores idle: the same lookup then costs about twice its CPU time. This prints, per
lookup, the median wall and CPU time (ms) of ``--runs`` reads of
``pqindex.scan(...).to_arrow()`` in this process, run back to back, then each after a
``--pause-ms`` sleep. The layout is compare.py's ``spark_impala`` at SF10
(``python benches/compare.py --sf 10 --layouts spark_impala`` writes it). To compare two
builds, run it under each in turn (``PYTHONPATH``).

``--busy`` adds a third figure: after a pause with every core kept busy by processes of the
lowest priority, which yield to the lookup at once. The cores then never go idle, so what
the pause still costs is the caches; the rest of the pause's cost is the cores waking up.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
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


@contextlib.contextmanager
def busy_cores() -> Iterator[None]:
    """Every core kept busy by a spinning process at the lowest priority (nice 19)."""
    spin = "import os\nos.nice(19)\nwhile True:\n    pass"
    procs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.5)
        yield
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", type=Path, default=Path("/tmp/pqindex-bench"))
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--pause-ms", type=float, default=50.0)
    p.add_argument(
        "--busy", action="store_true", help="also pause with every core kept busy at nice 19"
    )
    args = p.parse_args()
    path = args.data_dir / "sf10" / "spark_impala"
    if not path.is_dir():
        raise SystemExit(
            f"{path} is missing: python benches/compare.py --sf 10 --layouts spark_impala"
        )
    busy = f" {'paused, cores busy':>18s}" if args.busy else ""
    header = f"{'lookup':24s} {'back to back':>18s} {'after a pause':>18s}{busy}"
    print(f"{header}   (wall / CPU ms)")
    for name, where in LOOKUPS.items():
        figures = [
            measure(path, where, args.runs, 0.0),
            measure(path, where, args.runs, args.pause_ms / 1e3),
        ]
        if args.busy:
            with busy_cores():
                figures.append(measure(path, where, args.runs, args.pause_ms / 1e3))
        print(f"{name:24s}" + "".join(f" {w:9.2f} / {c:6.2f}" for w, c in figures))


if __name__ == "__main__":
    main()
