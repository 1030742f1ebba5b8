"""The report of a run: the Markdown tables and summaries, the JSON and the chart."""

from __future__ import annotations

import itertools
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .charts import chart
from .cold import COLD_MODES
from .engines import ENGINES, PQINDEX_ENGINES, SPARK_PAIRS
from .formatting import fmt_ms, human_bytes, plural
from .harness import Cell, cold_text
from .queries import Query


def peers(cells: list[Cell]) -> list[Cell]:
    """Peer cells that count: finished and agreeing with the majority."""
    return [c for c in cells if c.engine not in PQINDEX_ENGINES and c.ok and not c.mismatch]


@dataclass
class Comparison:
    layout: str
    query: str
    pqindex_ms: float
    fastest: str
    fastest_ms: float
    pqindex_bytes: int | None
    fewest: str | None
    fewest_bytes: int | None
    pqindex_spread: tuple[float, float] = (0.0, 0.0)  # fastest and slowest run, ms
    fastest_spread: tuple[float, float] = (0.0, 0.0)

    @property
    def time_ratio(self) -> float:
        return self.pqindex_ms / self.fastest_ms

    @property
    def slower_beyond_spread(self) -> bool:
        """Every pqindex run slower than every run of the fastest peer: a difference the
        run's own spread does not cover."""
        return self.pqindex_spread[0] > self.fastest_spread[1]

    @property
    def bytes_ratio(self) -> float | None:
        if self.pqindex_bytes is None or not self.fewest_bytes:
            return None
        return self.pqindex_bytes / self.fewest_bytes


def compare(cells: list[Cell]) -> list[Comparison]:
    """pqindex against the fastest and the most frugal peer, per layout and query."""
    out = []
    for (layout, query), group in itertools.groupby(cells, key=lambda c: (c.layout, c.query)):
        row = list(group)
        mine = next((c for c in row if c.engine == "pqindex" and c.ok), None)
        others = peers(row)
        if mine is None or not others:
            continue
        fastest = min(others, key=Cell.median_ms)
        with_bytes = [c for c in others if c.bytes_read() is not None]
        fewest = min(with_bytes, key=lambda c: c.bytes_read() or 0) if with_bytes else None
        out.append(
            Comparison(
                layout,
                query,
                mine.median_ms(),
                fastest.engine,
                fastest.median_ms(),
                mine.bytes_read(),
                fewest.engine if fewest else None,
                fewest.bytes_read() if fewest else None,
                spread_ms(mine),
                spread_ms(fastest),
            )
        )
    return out


def spread_ms(cell: Cell) -> tuple[float, float]:
    return min(cell.seconds) * 1000, max(cell.seconds) * 1000


def load_text(cells: list[Cell], cores: int) -> str:
    """Load during the run, with a warning when other work competed for the cores."""
    loads = sorted(c.loadavg for c in cells if c.loadavg is not None)
    if not loads:
        return "n/a"
    text = f"median {statistics.median(loads):.2f}, max {loads[-1]:.2f}"
    if statistics.median(loads) > cores:
        text += f" (more than {cores} cores: other work shared the machine, times are inflated)"
    return text


def geomean(values: Sequence[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else math.nan


def cell_text(cell: Cell | None) -> str:
    if cell is None:
        return ""
    if cell.skipped:
        return "skipped"
    if cell.error:
        return f"**ERROR** {cell.error[:80]}"
    ms = [s * 1000 for s in cell.seconds]
    text = (
        f"{fmt_ms(cell.median_ms())} [{fmt_ms(min(ms))}-{fmt_ms(max(ms))}]"
        f"<br>{human_bytes(cell.bytes_read())}<br>{cell.rows:,} rows{cold_text(cell, '<br>')}"
    )
    return f"**MISMATCH** {text}" if cell.mismatch else text


def markdown(
    cells: list[Cell],
    context: dict[str, Any],
    engines: list[str],
    queries: dict[str, list[Query]],
) -> str:
    sf = context["sf"]
    lines = [f"# pqindex and its peers on TPC-H lineitem, SF{sf:g}", ""]
    m = context["machine"]
    lines += [
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB RAM, "
        f"Linux {m['kernel']}, Python {m['python']}. Load average at start "
        f"{' '.join(m['loadavg'])}, at end {' '.join(context['loadavg_end'])}; "
        f"1-minute load sampled per cell: {load_text(cells, m['cores'])}.",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in context["versions"].items()) + ".",
        "",
        f"Command: `{context['command']}` ({context['total_seconds'] / 60:.1f} min in all, "
        f"{context['started']}).",
        "",
        f"Each cell: median wall time in ms over {plural(context['runs'], 'warm run')} "
        "[min-max], after one warm-up run; bytes requested from storage in one run (median); "
        "rows returned. "
        "Warm means the OS page cache holds the files and each engine keeps whatever it caches "
        "between queries (pqindex its parsed footers and page indexes). Times include planning "
        "and materialising the result as Arrow (polars: a DataFrame); for the Spark engines, "
        "building the DataFrame (listing, schema, analysis; pqindex.spark also plans, and "
        "reads small selections on the driver, there) plus `toArrow()` (the JSON keeps "
        "`dataframe_ms` and `action_ms` apart). Spark engines whose name ends in `_connect` "
        "build their DataFrames through a Spark Connect client of a local server in the same "
        "JVM as the classic session.",
        "",
    ]
    if context.get("cold_runs"):
        lines += [
            f"Cold (median of {plural(context['cold_runs'], 'run')}, `cold A / B ms` in a "
            "cell): A is the query in a fresh Python process, timed from just before the "
            "process is spawned to the result as Arrow (interpreter start, imports, the "
            "engine's set-up (a local Spark starts its JVM; a Connect client connects to the "
            "running server), footers and everything else a first query needs; the page "
            "cache stays warm). B is the first query on files the process has never seen: a "
            "fresh process runs the query on a small other file first, untimed, then the "
            "timed query on the layout.",
            "",
        ]
    lines += [
        "Bytes: "
        + "; ".join(f"{name}: {ENGINES[name].bytes_source}" for name in engines)
        + ". rchar counts what read-type system calls returned, so the page cache does not "
        "hide it; mmap-ed reads would not be counted.",
        "",
        "## Layouts",
        "",
    ]
    for name, info in context["layouts"].items():
        lines.append(
            f"- **{name}**: {info['description']}. {plural(info['files'], 'file')}, "
            f"{human_bytes(info['bytes'])}, {info['row_groups']:,} row groups; bloom filters "
            "(first file): "
            f"{', '.join(info['bloom_filter_columns']) or 'none'}; page index: "
            f"{'yes' if info['page_index'] else 'no'}."
        )
    lines += ["", "## Queries", ""]
    for query_set, listed in queries.items():
        users = [n for n, info in context["layouts"].items() if info["query_set"] == query_set]
        lines += [f"{query_set.capitalize()} set (layouts {', '.join(users)}):", ""]
        for q in listed:
            where = f" WHERE {q.sql_where()}" if q.where is not None else ""
            lines.append(f"- `{q.name}`: `SELECT {q.select_list()} FROM lineitem{where}`")
        lines.append("")
    lines += ["## Results", ""]
    lines.append("| layout | query | " + " | ".join(engines) + " |")
    lines.append("|---|---|" + "---:|" * len(engines))
    index = {(c.layout, c.query, c.engine): c for c in cells}
    for (layout, query), _ in itertools.groupby(cells, key=lambda c: (c.layout, c.query)):
        texts = [cell_text(index.get((layout, query, e))) for e in engines]
        lines.append(f"| {layout} | {query} | " + " | ".join(texts) + " |")
    lines += summary(cells)
    return "\n".join(lines) + "\n"


def summary(cells: list[Cell]) -> list[str]:
    rows = compare(cells)
    lines = [
        "",
        "## Summary: pqindex against the fastest peer and the fewest-bytes peer",
        "",
        "Ratios are pqindex / peer (below 1: pqindex faster or reads less). Peers whose rows "
        "disagree with the majority do not count.",
        "",
        "| layout | query | pqindex ms | fastest peer | peer ms | time ratio | pqindex bytes "
        "| fewest-bytes peer | peer bytes | bytes ratio |",
        "|---|---|---:|---|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        br = r.bytes_ratio
        lines.append(
            f"| {r.layout} | {r.query} | {fmt_ms(r.pqindex_ms)} | {r.fastest} | "
            f"{fmt_ms(r.fastest_ms)} | {r.time_ratio:.2f} | {human_bytes(r.pqindex_bytes)} | "
            f"{r.fewest or 'n/a'} | {human_bytes(r.fewest_bytes)} | "
            f"{'n/a' if br is None else f'{br:.2f}'} |"
        )
    lines += ["", "Geometric mean of the time ratio (and of the bytes ratio):", ""]
    for layout in dict.fromkeys(r.layout for r in rows):
        part = [r for r in rows if r.layout == layout]
        lines.append(f"- {layout}: {geomean_text(part)}")
    lines.append(f"- all: {geomean_text(rows)}")
    slower = [r for r in rows if r.time_ratio > 1]
    beyond = [r for r in slower if r.slower_beyond_spread]
    heavier = [r for r in rows if (r.bytes_ratio or 0) > 1]
    lines += [
        "",
        f"pqindex slower than the fastest peer: {len(slower)} of {len(rows)} by the medians; "
        f"beyond the run's spread (pqindex's fastest run slower than the peer's slowest): "
        f"{len(beyond)}",
        "",
    ]
    lines += [
        f"- {r.layout} {r.query}: {fmt_ms(r.pqindex_ms)} ms "
        f"[{fmt_ms(r.pqindex_spread[0])}-{fmt_ms(r.pqindex_spread[1])}] vs {r.fastest} "
        f"{fmt_ms(r.fastest_ms)} ms [{fmt_ms(r.fastest_spread[0])}-{fmt_ms(r.fastest_spread[1])}] "
        f"(x{r.time_ratio:.2f}, {'beyond' if r.slower_beyond_spread else 'within'} the spread)"
        for r in slower
    ]
    lines += ["", f"pqindex reads more bytes than the fewest-bytes peer: {len(heavier)}", ""]
    lines += [
        f"- {r.layout} {r.query}: {human_bytes(r.pqindex_bytes)} vs {r.fewest} "
        f"{human_bytes(r.fewest_bytes)} (x{r.bytes_ratio or 0:.2f})"
        for r in heavier
    ]
    lines += spark_summary(cells)
    lines += cold_summary(cells)
    problems = [c for c in cells if c.mismatch or c.error or c.cold_error]
    lines += ["", f"Row mismatches and errors: {len(problems)}", ""]
    lines += [
        f"- {c.layout} {c.query} {c.engine}: "
        + (
            f"MISMATCH, {c.rows} rows ({c.fingerprint})"
            if c.mismatch
            else f"{c.error or ''}{' cold: ' + c.cold_error if c.cold_error else ''}"
        )
        for c in problems
    ]
    skipped = sorted({(c.engine, c.skipped) for c in cells if c.skipped})
    if skipped:
        lines += ["", "Skipped: " + "; ".join(f"{e} ({why})" for e, why in skipped)]
    return lines


def spark_summary(cells: list[Cell]) -> list[str]:
    """pqindex via Spark against Spark's own reader, per mode, when both ran."""
    index = {(c.layout, c.query, c.engine): c for c in cells}
    lines: list[str] = []
    for mine_name, theirs_name in SPARK_PAIRS:
        pairs = [
            (c, index.get((c.layout, c.query, theirs_name)))
            for c in cells
            if c.engine == mine_name and c.ok and not c.mismatch
        ]
        rows = [(mine, spark) for mine, spark in pairs if spark is not None and spark.ok]
        if not rows:
            continue
        lines += ["", f"{mine_name} against {theirs_name} (time ratio):", ""]
        lines += [
            f"- {m.layout} {m.query}: {fmt_ms(m.median_ms())} ms vs {fmt_ms(s.median_ms())} ms "
            f"(x{m.median_ms() / s.median_ms():.2f})"
            for m, s in rows
        ]
        for layout in dict.fromkeys(m.layout for m, _ in rows):
            ratios = [m.median_ms() / s.median_ms() for m, s in rows if m.layout == layout]
            slower = sum(r > 1 for r in ratios)
            lines.append(
                f"- geometric mean, {layout}: x{geomean(ratios):.2f} over {len(ratios)} "
                f"queries, slower on {slower}"
            )
        ratios = [m.median_ms() / s.median_ms() for m, s in rows]
        lines.append(f"- geometric mean: x{geomean(ratios):.2f} over {len(rows)} queries")
    return lines


def cold_summary(cells: list[Cell]) -> list[str]:
    """pqindex's cold figures against the fastest peer's, per mode."""
    lines: list[str] = []
    for mode, what in (("process", "fresh process"), ("new_file", "first query on new files")):
        ratios = []
        for (layout, query), group in itertools.groupby(cells, key=lambda c: (c.layout, c.query)):
            row = list(group)
            mine = next((c for c in row if c.engine == "pqindex"), None)
            others = [c for c in peers(row) if c.cold_ms(mode) is not None]
            ours = mine.cold_ms(mode) if mine is not None else None
            if ours is None or not others:
                continue
            best = min(others, key=lambda c: c.cold_ms(mode) or math.inf)
            theirs = best.cold_ms(mode) or math.nan
            ratios.append((layout, query, ours, best.engine, theirs))
        if not ratios:
            continue
        lines += ["", f"Cold, {what}: pqindex against the fastest peer:", ""]
        lines += [
            f"- {layout} {query}: {fmt_ms(ours)} ms vs {engine} {fmt_ms(theirs)} ms "
            f"(x{ours / theirs:.2f})"
            for layout, query, ours, engine, theirs in ratios
        ]
        mean = geomean([ours / theirs for _, _, ours, _, theirs in ratios])
        lines.append(f"- geometric mean: x{mean:.2f} over {len(ratios)} queries")
    return lines


def geomean_text(rows: list[Comparison]) -> str:
    times = geomean([r.time_ratio for r in rows])
    ratios = [b for r in rows if (b := r.bytes_ratio) is not None and b > 0]
    return f"time x{times:.2f}, bytes x{geomean(ratios):.2f} over {len(rows)} queries"


def write_results(
    out: Path,
    cells: list[Cell],
    context: dict[str, Any],
    engines: list[str],
    queries: dict[str, list[Query]],
    tag: str = "",
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    name = f"compare-sf{context['sf']:g}" + (f"-{tag}" if tag else "")

    def stem(suffix: str) -> Path:  # not with_suffix: "sf0.1" holds a dot
        return out / f"{name}{suffix}"

    md = markdown(cells, context, engines, queries)
    stem(".md").write_text(md)
    raw = {
        **context,
        "queries": [
            {"set": query_set, "name": q.name, "where": q.sql_where(), "columns": q.columns}
            for query_set, listed in queries.items()
            for q in listed
        ],
        "cells": [
            asdict(c)
            | {
                "median_ms": c.median_ms() if c.ok else None,
                "bytes": c.bytes_read(),
                **{f"cold_{mode}_ms": c.cold_ms(mode) for mode in COLD_MODES},
            }
            for c in cells
        ],
        "comparisons": [
            asdict(r) | {"time_ratio": r.time_ratio, "bytes_ratio": r.bytes_ratio}
            for r in compare(cells)
        ],
    }
    stem(".json").write_text(json.dumps(raw, indent=1, default=str) + "\n")
    charted = chart(
        cells,
        engines,
        stem(".png"),
        f"TPC-H lineitem SF{context['sf']:g}, warm, median ms (log)",
    )
    kinds = ".json and .png" if charted else ".json (no .png: matplotlib is not installed)"
    print(f"\nwrote {out / name}.md, {kinds} in {context['total_seconds'] / 60:.1f} min")
    print("\n".join(summary(cells)))
