"""Cold figures: each engine's query in fresh Python processes, timed from the
process's start, or from after a first query on another file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import compare_spark_env as spark_env

from .engines import Engine
from .meters import BENCHES
from .queries import Query

if TYPE_CHECKING:
    from .harness import Trial


@dataclass(frozen=True)
class Cold:
    """How to measure cold figures: runs per mode, and the directory of a small file every
    engine reads first in the new-file mode."""

    runs: int
    warmup: Path


COLD_MODES = ("process", "new_file")
COLD_MARK = "COLD-RESULT "
COLD_TIMEOUT = 1800


def cold_source(engine: Engine, query: Query, mode: str, path: Path, warmup: Path) -> str:
    """The program a fresh process runs: the engine's imports and set-up, the query, and
    then (untimed) the result's fingerprint on stdout. In ``new_file`` mode the query first
    runs on ``warmup``, and only the run on ``path`` is timed."""
    lines = ["import time", engine.cold_program(query)]
    if mode == "new_file":
        lines += [f"run({str(warmup)!r})", "start = time.monotonic()"]
    lines += [
        f"table = run({str(path)!r})",
        "end = time.monotonic()",
        "import json, sys",
        f"sys.path.insert(0, {str(BENCHES)!r})",
        "from compare import fingerprint",
        f"seconds = end - start if {mode == 'new_file'!r} else None",
        "out = {'end': end, 'seconds': seconds, 'fingerprint': fingerprint(table)}",
        f"print({COLD_MARK!r} + json.dumps(out), flush=True)",
        engine.cold_cleanup(),
    ]
    return "\n".join(lines) + "\n"


def cold_run(
    engine: Engine, query: Query, mode: str, path: Path, warmup: Path
) -> tuple[float, str]:
    """Seconds of one cold run and its rows' fingerprint. ``process``: from just before the
    process is spawned to the result (time.monotonic is one clock for every process)."""
    env = {k: v for k, v in os.environ.items() if k != spark_env.CONNECT_ENV}
    env |= engine.cold_env()
    program = cold_source(engine, query, mode, path, warmup)
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        env=env,
        timeout=COLD_TIMEOUT,
        check=False,
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith(COLD_MARK)), None)
    if line is None:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"exit {proc.returncode}: {tail}")
    out = json.loads(line[len(COLD_MARK) :])
    seconds = out["seconds"] if mode == "new_file" else out["end"] - start
    return float(seconds), str(out["fingerprint"])


def measure_cold(trials: list[Trial], query: Query, cold: Cold) -> None:
    """Cold runs of every engine whose warm runs finished, after them (page cache warm)."""
    for trial in trials:
        cell = trial.cell
        if not cell.ok:
            continue
        for mode in COLD_MODES:
            for _ in range(cold.runs):
                try:
                    seconds, found = cold_run(
                        trial.engine, query, mode, trial.engine.path, cold.warmup
                    )
                except Exception as e:
                    cell.cold_error = f"{mode}: {type(e).__name__}: {e}"[:300]
                    break
                getattr(cell, f"cold_{mode}_s").append(seconds)
                if found != cell.fingerprint:
                    cell.cold_error = f"{mode}: rows {found} differ from the warm runs'"
            if cell.cold_error:
                break
