"""What a figure is measured with: wall time and rchar growth, the load average, and
the machine and package versions a report names."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The benches directory: where compare_spark_env and this package are imported from, and
#: where results go by default (benches/out, not kept in git).
BENCHES = Path(__file__).resolve().parents[1]


def loadavg() -> float:
    """The 1-minute load average, kept with each figure to tell a busy machine apart."""
    return float(Path("/proc/loadavg").read_text().split()[0])


def rchar() -> int:
    """Bytes this process has read through read-type system calls so far."""
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    raise RuntimeError("/proc/self/io has no rchar")


def rchar_overhead() -> int:
    """What reading /proc/self/io itself adds to rchar, subtracted from every delta."""
    deltas = []
    for _ in range(5):
        before = rchar()
        deltas.append(rchar() - before)
    return min(deltas)


RCHAR_OVERHEAD = rchar_overhead()


@dataclass
class Run:
    seconds: float
    table: Any
    bytes_read: int | None
    rchar: int | None = None
    metrics: dict[str, Any] = field(default_factory=dict)


class Meter:
    """Wall time and rchar growth of the code inside ``with Meter() as m:``."""

    seconds = 0.0
    read = 0

    def __enter__(self) -> Meter:
        self._rchar = rchar()
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._start
        self.read = rchar() - self._rchar - RCHAR_OVERHEAD


def machine() -> dict[str, Any]:
    """CPU, cores, memory and load, from /proc."""
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kb / 1024**2, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
    }


def versions() -> dict[str, str]:
    found = {}
    for package in (
        "pqindex",
        "pyarrow",
        "duckdb",
        "datafusion",
        "polars",
        "pyspark",
        "tpchgen-cli",
    ):
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found
