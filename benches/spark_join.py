"""Join-key pruning in Spark (issue 20): the lineitem rows of a few hundred parts, through
Spark's own join and through pqindex.spark's keyed read, on lineitem as Spark writes it, with
and without a page distinct index on ``l_partkey``.

    python benches/spark_join.py [--sf 1] [--runs 5] [--spark-mode classic|connect|both]
        [--layout spark_plain] [--part-filter SQL] [--data-dir /tmp/pqindex-bench]
        [--out benches/results] [--tag NAME]

The keys: TPC-H ``part`` (tpchgen-cli) filtered by ``--part-filter`` (default: one brand in
one container, and at scale factors above 1 a size cap, so about 200 parts at every scale
from 1 up). The fact table: compare.py's layout (default ``spark_plain``, Spark's writer with
parquet-mr's defaults), shared with compare.py under ``--data-dir``, and a copy of it with a
page distinct index on ``l_partkey`` added by ``pqindex.spark.build_indexes``.

Engines, each on both lineitem copies and in each Spark mode:

- ``spark_join``: ``spark.read.parquet(lineitem).join(part.where(filter), l_partkey =
  p_partkey, "left_semi")``, with adaptive execution, runtime bloom filters and dynamic
  pruning on (the plan Spark chose is kept in the JSON);
- ``pqindex_keys``: ``pqindex.spark.plan(spark, lineitem, keys=part.where(filter)
  .select("p_partkey"), on="l_partkey").to_df()``.

Each is timed from building the DataFrames (both read and filter ``part`` themselves) to
``toArrow()``; warm: one untimed run, then ``--runs`` runs taking turns, median. Every cell
must return the same multiset of rows. Bytes: pqindex's ``metrics()["bytes_read"]``
(driver and executors); for Spark's join, the growth of the JVM's ``rchar`` (local mode: the
executors, and the Spark Connect server, are that JVM). Results:
``benches/results/spark-join-sf<sf>.{md,json}``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import hashlib
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script

import compare
import compare_spark_env as spark_env

#: Spark's own join at its best: these are Spark 4's defaults, set so a run shows them.
JOIN_CONF = {
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.optimizer.runtime.bloomFilter.enabled": "true",
    "spark.sql.optimizer.dynamicPartitionPruning.enabled": "true",
}
#: The plan features looked for in Spark's executed plan (AQE's final plan).
PLAN_FEATURES = {
    "runtime bloom filter": "might_contain",
    "dynamic pruning": "dynamicpruning",
    "broadcast join": "BroadcastHashJoin",
    "shuffled join": "SortMergeJoin",
}
TARGET = 5.0  # pqindex.spark with the index at least this many times faster than Spark's join
INDEXED = "_INDEXED"  # marker of a finished indexed copy (readers skip names starting "_")


def default_part_filter(sf: float) -> str:
    """One brand in one container is 1/1,000 of the parts (200 at SF1); above SF1 a cap on
    ``p_size`` (uniform over 1-50) keeps about 200."""
    base = "p_brand = 'Brand#23' AND p_container = 'MED BOX'"
    if sf <= 1:
        return base
    return f"{base} AND p_size <= {max(1, round(50 / sf))}"


def generate_part(root: Path, sf: float) -> Path:
    """TPC-H part from tpchgen-cli, generated once per scale factor."""
    out = root / "raw-part" / "part.parquet"
    if out.exists():
        return out
    print(f"generating TPC-H part at SF{sf:g} ...", flush=True)
    exe = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
    tmp = root / "raw-part.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run(
        [exe, "parquet", "-s", f"{sf:g}", "--tables", "part", "-o", str(tmp)], check=True
    )
    shutil.rmtree(root / "raw-part", ignore_errors=True)
    tmp.rename(root / "raw-part")
    return out


def indexed_copy(spark: Any, source: Path) -> Path:
    """A copy of ``source`` with a page distinct index on ``l_partkey`` in every file, made
    once and reused while its marker exists."""
    import pqindex
    import pqindex.spark

    out = source.parent / f"{source.name}_distinct_l_partkey"
    if (out / INDEXED).exists():
        return out
    print(f"copying {source.name} and indexing l_partkey ...", flush=True)
    tmp = source.parent / f"{out.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source, tmp)
    start = time.perf_counter()
    index = pqindex.DistinctIndex("l_partkey")
    report = pqindex.spark.build_indexes(spark, tmp, [index])
    table = report.toArrow()
    errors = [e for e in table.column("error").to_pylist() if e]
    if errors:
        raise SystemExit(f"build_indexes failed: {errors[0]}")
    added = sum(table.column("bytes_added").to_pylist())
    print(
        f"  {table.num_rows} files indexed in {time.perf_counter() - start:.1f} s, "
        f"{compare.human_bytes(added)} of index",
        flush=True,
    )
    (tmp / INDEXED).write_text(json.dumps({"files": table.num_rows, "bytes_added": added}))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


# ---------------------------------------------------------------------------------------------
# The two ways to run the join


@dataclass(frozen=True)
class Job:
    """What every engine is given: the part file, its filter and a lineitem directory."""

    part: Path
    part_filter: str
    lineitem: Path


def keys_frame(spark: Any, job: Job) -> Any:
    return spark.read.parquet(str(job.part)).where(job.part_filter).select("p_partkey")


def spark_join(spark: Any, job: Job) -> tuple[Any, Any]:
    """Spark's own left semi join; the DataFrame is returned for its plan."""
    lineitem = spark.read.parquet(str(job.lineitem))
    keys = keys_frame(spark, job)
    df = lineitem.join(keys, lineitem["l_partkey"] == keys["p_partkey"], "left_semi")
    return df.toArrow(), df


def pqindex_keys(spark: Any, job: Job) -> tuple[Any, Any]:
    """pqindex.spark's keyed read; the plan is returned for its metrics."""
    import pqindex.spark

    scan = pqindex.spark.plan(spark, str(job.lineitem), keys=keys_frame(spark, job), on="l_partkey")
    return scan.to_df().toArrow(), scan


ENGINES: dict[str, Callable[[Any, Job], tuple[Any, Any]]] = {
    "spark_join": spark_join,
    "pqindex_keys": pqindex_keys,
}


@dataclass
class Cell:
    engine: str
    mode: str  # classic or connect
    lineitem: str  # plain or indexed
    seconds: list[float] = field(default_factory=list)
    bytes_runs: list[int] = field(default_factory=list)
    rows: int | None = None
    digest: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    mismatch: bool = False

    @property
    def name(self) -> str:
        return self.engine + ("_connect" if self.mode == "connect" else "")

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.seconds)

    def median_ms(self) -> float:
        return statistics.median(self.seconds) * 1000

    def bytes_read(self) -> int | None:
        return int(statistics.median(self.bytes_runs)) if self.bytes_runs else None


def multiset_digest(table: Any) -> str:
    """Row count and a hash of the sorted rows (columns by name): equal for equal multisets."""
    names = sorted(table.column_names)
    rows = sorted(
        (tuple(compare.normal(v) for v in row.values()) for row in table.select(names).to_pylist()),
        key=repr,
    )
    digest = hashlib.sha256(repr(rows).encode()).hexdigest()[:16]
    return f"{table.num_rows}:{digest}"


class Runner:
    """Runs one cell once: the action in its session, with the bytes it read."""

    def __init__(self, sessions: spark_env.Sessions, jobs: dict[str, Job]) -> None:
        self.sessions = sessions
        self.jobs = jobs
        self.jvm = spark_env.jvm_pid(sessions.classic)

    def session(self, mode: str) -> Any:
        return self.sessions.connect if mode == "connect" else self.sessions.classic

    @contextlib.contextmanager
    def mode(self, mode: str) -> Iterator[None]:
        with spark_env.connect_mode() if mode == "connect" else contextlib.nullcontext():
            yield

    def once(self, cell: Cell, keep: bool) -> None:
        job = self.jobs[cell.lineitem]
        with self.mode(cell.mode):
            before = spark_env.rchar_of(self.jvm)
            start = time.perf_counter()
            table, handle = ENGINES[cell.engine](self.session(cell.mode), job)
            seconds = time.perf_counter() - start
            jvm_rchar = spark_env.rchar_of(self.jvm) - before
            metrics = dict(handle.metrics()) if cell.engine == "pqindex_keys" else {}
        if cell.engine == "pqindex_keys":
            metrics["on_driver"] = handle.on_driver
            read = int(metrics["bytes_read"])
        else:
            read = jvm_rchar
        metrics["jvm_rchar"] = jvm_rchar
        if keep:
            cell.seconds.append(seconds)
            cell.bytes_runs.append(read)
        cell.rows = table.num_rows
        cell.digest = multiset_digest(table)
        cell.metrics = metrics


def attempt(cell: Cell, step: Callable[[], None]) -> None:
    if cell.error is not None:
        return
    try:
        step()
    except Exception as e:
        cell.error = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}"[:300]


def measure(runner: Runner, cells: list[Cell], runs: int) -> None:
    """A warm-up per cell, then the timed runs taking turns, each round starting with the
    next cell, so that other work on the machine falls on all of them alike."""
    for cell in cells:
        print(f"  warm-up {cell.name} on {cell.lineitem} lineitem", flush=True)
        attempt(cell, functools.partial(runner.once, cell, keep=False))
    for r in range(runs):
        shift = r % len(cells)
        for cell in cells[shift:] + cells[:shift]:
            attempt(cell, functools.partial(runner.once, cell, keep=True))
    done = [c for c in cells if c.ok]
    reference = statistics.mode(c.digest for c in done) if done else None
    for cell in done:
        cell.mismatch = cell.digest != reference
        if cell.mismatch:
            print(f"!!! ROW MISMATCH !!! {cell.name} {cell.lineitem}: {cell.digest}", flush=True)


def spark_plan(spark: Any, job: Job) -> str:
    """Spark's executed plan of its join (adaptive execution's final plan, after a run)."""
    _, df = spark_join(spark, job)
    return str(df._jdf.queryExecution().executedPlan().toString())


# ---------------------------------------------------------------------------------------------
# Report


def ratio_lines(cells: list[Cell]) -> list[str]:
    """pqindex's keyed read against Spark's join on the plain files, per mode."""
    index = {(c.engine, c.mode, c.lineitem): c for c in cells}
    lines = []
    for mode in dict.fromkeys(c.mode for c in cells):
        spark = index.get(("spark_join", mode, "plain"))
        if spark is None or not spark.ok or spark.mismatch:
            continue
        for lineitem in ("plain", "indexed"):
            mine = index.get(("pqindex_keys", mode, lineitem))
            if mine is None or not mine.ok or mine.mismatch:
                continue
            speedup = spark.median_ms() / mine.median_ms()
            met = ""
            if lineitem == "indexed":
                met = f" (target {TARGET:g}x: {'met' if speedup >= TARGET else 'not met'})"
            lines.append(
                f"- {mode}: pqindex.spark keyed read, {lineitem} lineitem, "
                f"{compare.fmt_ms(mine.median_ms())} ms against Spark's join "
                f"{compare.fmt_ms(spark.median_ms())} ms: speed-up {speedup:.2f}x{met}"
            )
    return lines


def pages_text(cell: Cell) -> str:
    """Pages pqindex kept of those its plan considered (all columns)."""
    pages = cell.metrics.get("pages")
    if pages is None:
        return ""
    return f"{pages - cell.metrics.get('pages_pruned', 0):,} of {pages:,}"


def key_pages(lineitem: Path, rows: int) -> dict[str, float]:
    """``l_partkey``'s page count over the files, and how many pages ``rows`` matching rows
    would touch if they fell at random (P * (1 - (1 - 1/P) ** rows))."""
    import pqindex

    pages = 0
    for f in compare.data_files(lineitem):
        table = pqindex.read_metadata(f).pages()
        pages += sum(1 for c in table.column("column").to_pylist() if c == "l_partkey")
    expected = pages * (1 - (1 - 1 / pages) ** rows) if pages else 0.0
    return {"rows": rows, "pages": pages, "expected_hit": expected}


def markdown(cells: list[Cell], context: dict[str, Any]) -> str:
    m = context["machine"]
    lines = [
        f"# Join-key pruning in Spark: TPC-H SF{context['sf']:g}",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB RAM. Load average at "
        f"start {' '.join(m['loadavg'])}, at end {' '.join(context['loadavg_end'])}"
        + (
            " (more than the cores: other work shared the machine, times are inflated)"
            if float(context["loadavg_end"][0]) > (m["cores"] or 1)
            else ""
        )
        + ".",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in context["versions"].items()) + ".",
        "",
        f"Command: `{context['command']}` ({context['total_seconds'] / 60:.1f} min in all, "
        f"{context['started']}).",
        "",
        f"Keys: `SELECT p_partkey FROM part WHERE {context['part_filter']}`: "
        f"{context['keys']:,} parts. lineitem: the `{context['layout']}` layout "
        f"({context['lineitem_files']} files, {compare.human_bytes(context['lineitem_bytes'])}); "
        f"indexed: a copy with a page distinct index on `l_partkey` "
        f"(+{compare.human_bytes(context['index_bytes'])}).",
        "",
        "Spark's join: `lineitem.join(part.where(filter), l_partkey = p_partkey, "
        "'left_semi')` with "
        + ", ".join(f"`{k}={v}`" for k, v in JOIN_CONF.items())
        + ". Its executed plan has: "
        + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in context["plan_features"].items())
        + " (plan in the JSON). pqindex: `pqindex.spark.plan(spark, lineitem, "
        "keys=part.where(filter).select('p_partkey'), on='l_partkey').to_df()`.",
        "",
        f"Each cell: median wall time in ms over {context['runs']} warm runs [min-max], after "
        "one warm-up run, from building the DataFrames to `toArrow()`; bytes read in one run "
        "(pqindex: its metrics, driver and executors; Spark: the JVM's rchar growth); rows. "
        "`_connect`: through a Spark Connect client of a local server in the same JVM.",
        "",
        "| engine | lineitem | median ms [min-max] | bytes | rows | pages kept (pqindex) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for c in cells:
        if c.ok:
            ms = [s * 1000 for s in c.seconds]
            text = (
                f"{compare.fmt_ms(c.median_ms())} [{compare.fmt_ms(min(ms))}-"
                f"{compare.fmt_ms(max(ms))}] | {compare.human_bytes(c.bytes_read())} | "
                f"{c.rows:,}" + (" **MISMATCH**" if c.mismatch else "") + f" | {pages_text(c)}"
            )
        else:
            text = f"**ERROR** {c.error} | | | "
        lines.append(f"| {c.name} | {c.lineitem} | {text} |")
    spread = context["key_pages"]
    lines += [
        "",
        f"The matching rows ({spread['rows']:,}) are scattered over lineitem: `l_partkey` has "
        f"{spread['pages']:,} pages, of which {spread['expected_hit']:,.0f} are expected to "
        "hold a matching row if they fall at random. Only the others can be pruned by any "
        "page-level evidence.",
        "",
        f"Target (issue 20): pqindex.spark's keyed read with the index at least {TARGET:g}x "
        "faster than Spark's join, same rows.",
        "",
        *ratio_lines(cells),
        "",
    ]
    problems = [c for c in cells if c.error or c.mismatch]
    lines.append(
        f"Rows: every cell returned the same {cells[0].rows:,} rows (multiset)."
        if not problems and cells and cells[0].rows is not None
        else f"Row mismatches and errors: {len(problems)}"
    )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Entry point


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    here = Path(__file__).resolve().parent
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    p.add_argument("--runs", type=int, default=5, help="timed warm runs per cell (default 5)")
    p.add_argument(
        "--spark-mode", choices=("classic", "connect", "both"), default="both", help="default both"
    )
    p.add_argument(
        "--layout",
        default="spark_plain",
        choices=[lay.name for lay in compare.LAYOUTS if lay.needs_spark],
        help="compare.py's Spark-written layout to use as lineitem (default spark_plain)",
    )
    p.add_argument("--part-filter", default=None, help="SQL over part (default: see above)")
    p.add_argument("--data-dir", type=Path, default=Path("/tmp/pqindex-bench"))
    p.add_argument("--out", type=Path, default=here / "results")
    p.add_argument("--spark-memory", default="6g", help="spark.driver.memory (default 6g)")
    p.add_argument("--tag", default="", help="suffix of the result files (default none)")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    started = time.perf_counter()
    context: dict[str, Any] = {
        "sf": args.sf,
        "runs": args.runs,
        "command": shlex.join(["python", *sys.argv]),
        "started": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": compare.machine(),
        "versions": compare.versions(),
        "spark_mode": args.spark_mode,
        "layout": args.layout,
        "join_conf": JOIN_CONF,
        "part_filter": args.part_filter or default_part_filter(args.sf),
    }
    root = args.data_dir / f"sf{args.sf:g}"
    raw = compare.generate_raw(root, args.sf)
    part = generate_part(root, args.sf)
    modes = ["classic", "connect"] if args.spark_mode == "both" else [args.spark_mode]
    sessions = spark_env.start_sessions(
        args.spark_memory, root / "spark-warehouse", connect="connect" in modes, conf=JOIN_CONF
    )
    classic = sessions.classic
    layout = next(lay for lay in compare.LAYOUTS if lay.name == args.layout)
    plain = compare.build_layout(layout, raw, root, classic)
    indexed = indexed_copy(classic, plain)
    files = compare.data_files(plain)
    context |= {
        "lineitem_files": len(files),
        "lineitem_bytes": sum(f.stat().st_size for f in files),
        "index_bytes": json.loads((indexed / INDEXED).read_text())["bytes_added"],
    }
    jobs = {
        "plain": Job(part, context["part_filter"], plain),
        "indexed": Job(part, context["part_filter"], indexed),
    }
    context["keys"] = keys_frame(classic, jobs["plain"]).count()
    print(f"{context['keys']} keys: {context['part_filter']}", flush=True)
    if "connect" in modes:
        with spark_env.connect_mode():
            for key, value in JOIN_CONF.items():
                sessions.connect.conf.set(key, value)

    cells = [
        Cell(engine, mode, lineitem)
        for mode in modes
        for engine in ENGINES
        for lineitem in ("plain", "indexed")
    ]
    measure(Runner(sessions, jobs), cells, args.runs)
    rows = next((c.rows for c in cells if c.ok and not c.mismatch), None) or 0
    context["key_pages"] = key_pages(plain, rows)
    plan = spark_plan(classic, jobs["plain"])
    context["spark_plan"] = plan
    context["plan_features"] = {k: v.lower() in plan.lower() for k, v in PLAN_FEATURES.items()}
    context["total_seconds"] = time.perf_counter() - started
    context["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
    sessions.stop()

    args.out.mkdir(parents=True, exist_ok=True)
    name = f"spark-join-sf{args.sf:g}" + (f"-{args.tag}" if args.tag else "")
    md = markdown(cells, context)
    (args.out / f"{name}.md").write_text(md)
    raw_out = {
        **context,
        "cells": [
            asdict(c) | {"name": c.name, "median_ms": c.median_ms() if c.ok else None}
            for c in cells
        ],
    }
    (args.out / f"{name}.json").write_text(json.dumps(raw_out, indent=1, default=str) + "\n")
    print(f"\nwrote {args.out / name}.md and .json\n")
    print(md)


if __name__ == "__main__":
    main()
