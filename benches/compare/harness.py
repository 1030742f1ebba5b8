"""Running and checking: a warm-up per engine, the timed runs round-robin, and the rows
of every engine checked against the majority."""

from __future__ import annotations

import datetime as dt
import gc
import hashlib
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.compute as pc  # type: ignore[import-untyped,unused-ignore]

from .cold import Cold, measure_cold
from .engines import Engine
from .formatting import fmt_ms, human_bytes
from .meters import Run, loadavg
from .queries import Query

SMALL_RESULT = 2_000  # results up to this many rows are compared row by row


@dataclass
class Cell:
    layout: str
    query: str
    engine: str
    seconds: list[float] = field(default_factory=list)
    warmup_seconds: float | None = None
    bytes_runs: list[int | None] = field(default_factory=list)
    rchar_runs: list[int | None] = field(default_factory=list)
    rows: int | None = None
    fingerprint: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    skipped: str | None = None
    mismatch: bool = False
    loadavg: float | None = None  # 1-minute load when the cell started: other work on the box
    cold_process_s: list[float] = field(default_factory=list)  # fresh process, start to rows
    cold_new_file_s: list[float] = field(default_factory=list)  # first query on unseen files
    cold_error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.skipped is None and bool(self.seconds)

    def median_ms(self) -> float:
        return statistics.median(self.seconds) * 1000

    def bytes_read(self) -> int | None:
        known = [b for b in self.bytes_runs if b is not None]
        return int(statistics.median(known)) if known else None

    def cold_ms(self, mode: str) -> float | None:
        """Median cold time of ``mode`` (one of COLD_MODES), if measured without error."""
        seconds: list[float] = getattr(self, f"cold_{mode}_s")
        if not seconds or self.cold_error:
            return None
        return statistics.median(seconds) * 1000


def normal(value: Any) -> Any:
    """A value as every engine's Arrow output agrees on it (decimal scale, string flavour)."""
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def fingerprint(table: Any) -> str:
    """Row count plus the sorted rows (small results) or the column sums (large ones)."""
    names = sorted(table.column_names)
    table = table.select(names)
    if table.num_rows <= SMALL_RESULT:
        rows = sorted(
            (tuple(normal(v) for v in row.values()) for row in table.to_pylist()), key=repr
        )
        body = repr(rows)
    else:
        sums = {}
        for name in names:
            column = table.column(name)
            if pa.types.is_integer(column.type) or pa.types.is_decimal(column.type):
                sums[name] = normal(pc.sum(column).as_py())
        body = repr(sorted(sums.items()))
    digest = hashlib.sha256(body.encode()).hexdigest()[:16]
    return f"{table.num_rows}:{digest}"


@dataclass
class Trial:
    """One engine's query in flight: the cell it fills, its action and its latest run."""

    cell: Cell
    engine: Engine
    action: Callable[[], Run] | None = None
    last: Run | None = None


def attempt(trial: Trial, step: Callable[[Trial], None]) -> None:
    """Run one step of a trial; an error is recorded in its cell and ends the trial."""
    if trial.cell.error is not None or trial.cell.skipped is not None:
        return
    try:
        step(trial)
    except Exception as e:
        trial.cell.error = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}"[:300]
        trial.last = None


def warm_up(trial: Trial, query: Query) -> None:
    trial.action = trial.engine.prepare(query)
    trial.last = trial.action()
    trial.cell.warmup_seconds = trial.last.seconds


def timed_run(trial: Trial) -> None:
    assert trial.action is not None
    trial.last = None  # free the previous result before the next run allocates its own
    gc.collect()
    run = trial.action()
    trial.last = run
    trial.cell.seconds.append(run.seconds)
    trial.cell.bytes_runs.append(run.bytes_read)
    trial.cell.rchar_runs.append(run.rchar)


def finish(trial: Trial) -> None:
    assert trial.last is not None
    trial.cell.rows = trial.last.table.num_rows
    trial.cell.fingerprint = fingerprint(trial.last.table)
    trial.cell.metrics = trial.last.metrics
    trial.last = None


def measure(trials: list[Trial], query: Query, runs: int) -> None:
    """A warm-up per engine, then the timed runs round-robin, starting each round with the
    next engine, so that load from other work on the machine falls on all engines alike."""
    for trial in trials:
        attempt(trial, lambda t: warm_up(t, query))
    for r in range(runs):
        shift = r % max(1, len(trials))
        for trial in trials[shift:] + trials[:shift]:
            attempt(trial, timed_run)
    for trial in trials:
        attempt(trial, finish)


def check_agreement(cells: list[Cell]) -> None:
    """Mark cells whose result differs from the majority (DuckDB breaks ties)."""
    done = [c for c in cells if c.ok and c.fingerprint is not None]
    votes = Counter(c.fingerprint for c in done)
    if len(votes) <= 1:
        return
    top = max(votes.values())
    leaders = [fp for fp, n in votes.items() if n == top]
    duck = next((c.fingerprint for c in done if c.engine == "duckdb"), None)
    agreed = duck if duck in leaders else leaders[0]
    for c in done:
        if c.fingerprint != agreed:
            c.mismatch = True
            print(
                f"!!! ROW MISMATCH !!! {c.layout} {c.query} {c.engine}: {c.rows} rows "
                f"({c.fingerprint}), majority {agreed}",
                flush=True,
            )


def progress(cell: Cell) -> None:
    if cell.skipped:
        return
    if cell.error:
        print(f"  {cell.engine:21} ERROR {cell.error}", flush=True)
        return
    b = cell.bytes_read()
    print(
        f"  {cell.engine:21} {cell.median_ms():10.1f} ms  [{min(cell.seconds) * 1000:.1f}-"
        f"{max(cell.seconds) * 1000:.1f}]  {cell.rows:>9,} rows  "
        f"{human_bytes(b):>10}{cold_text(cell, ' ')}",
        flush=True,
    )


def cold_text(cell: Cell, sep: str) -> str:
    """Cold figures of a cell (fresh process / new file), or its cold error."""
    if cell.cold_error:
        return f"{sep}cold **ERROR** {cell.cold_error[:80]}"
    process, new_file = cell.cold_ms("process"), cell.cold_ms("new_file")
    if process is None and new_file is None:
        return ""
    texts = ["n/a" if v is None else fmt_ms(v) for v in (process, new_file)]
    return f"{sep}cold {texts[0]} / {texts[1]} ms"


def run_all(
    layouts: dict[str, tuple[Path, list[Query]]],
    engines: list[Engine],
    runs: int,
    cold: Cold | None = None,
) -> list[Cell]:
    cells: list[Cell] = []
    for layout, (path, queries) in layouts.items():
        for engine in engines:
            if engine.unavailable() is None:
                engine.open(path, layout)
        for query in queries:
            print(f"{layout} / {query.name}: {query.sql_where() or '(no predicate)'}", flush=True)
            row: list[Cell] = []
            trials: list[Trial] = []
            for engine in engines:
                cell = Cell(layout, query.name, engine.name, loadavg=loadavg())
                cell.skipped = engine.unavailable()
                row.append(cell)
                trials.append(Trial(cell, engine))
            measure(trials, query, runs)
            if cold is not None:
                measure_cold(trials, query, cold)
            for cell in row:
                progress(cell)
            check_agreement(row)
            cells.extend(row)
    return cells
