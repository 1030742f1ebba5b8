"""``pqindex scan SOURCE``: the rows a predicate selects, with the plan and its counters;
also the row printing ``aggregate`` shares."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

import pqindex
from pqindex.cli.arguments import columns_arg, source_arg, storage_options
from pqindex.cli.output import format_table, json_safe, print_json


def _record_batches(result: Any) -> Iterator[Any]:
    """The result's batches, streamed when pyarrow can import a stream (15+) so a large
    result is never held whole."""
    import pyarrow as pa

    from_stream = getattr(pa.RecordBatchReader, "from_stream", None)
    if from_stream is not None:
        yield from from_stream(result)
    else:
        yield from result.to_arrow().to_batches()


def read_head(result: Any, limit: int) -> tuple[list[str], list[list[object]], int]:
    """Column names, the first ``limit`` rows (JSON-safe values) and the total row count;
    the result is read to the end so the count and metrics are complete."""
    import pyarrow as pa

    names = list(pa.schema(result).names)
    head: list[list[object]] = []
    total = 0
    for batch in _record_batches(result):
        if len(head) < limit:
            part = batch.slice(0, limit - len(head))
            columns = [[json_safe(v) for v in col.to_pylist()] for col in part.columns]
            head.extend([col[i] for col in columns] for i in range(part.num_rows))
        total += batch.num_rows
    return names, head, total


def print_rows(names: list[str], head: list[list[object]], total: int) -> None:
    """The rows as a table, then how many there are (and that only the first were shown)."""
    if names and head:
        print(format_table(names, head, null="null", max_width=40))
    noun = "row" if total == 1 else "rows"
    truncated = names and len(head) < total
    print(f"(first {len(head)} of {total} {noun})" if truncated else f"({total} {noun})")


def print_metrics(metrics: dict[str, int]) -> None:
    """The counters, after a blank line."""
    print()
    print(format_table(["metric", "value"], list(metrics.items())))


def _limit_arg(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    """``pqindex scan SOURCE``; the plan is explained before the rows are read, metrics
    are taken after."""
    scan = pqindex.scan(
        source_arg(args.source),
        where=args.where,
        columns=args.columns,
        storage_options=storage_options(args),
    )
    explain = scan.explain()
    if args.explain and not args.json:
        print(explain.rstrip("\n"))
        print()
    names, head, total = read_head(scan, args.limit)
    metrics = scan.metrics()
    if args.json:
        rows = [dict(zip(names, row, strict=True)) for row in head]
        print_json({"rows": rows, "num_rows": total, "metrics": metrics, "explain": explain})
        return 0
    print_rows(names, head, total)
    if args.metrics:
        print_metrics(metrics)
    return 0


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``scan`` to the command parsers."""
    scan = commands.add_parser("scan", parents=[common], help="print the rows a predicate selects")
    scan.add_argument(
        "source",
        nargs="+",
        metavar="SOURCE",
        help="a file, a directory or several files (paths or object URLs)",
    )
    scan.add_argument("--where", metavar="SQL", help="predicate, in DuckDB's SQL")
    scan.add_argument(
        "--columns", type=columns_arg, metavar="a,b", help="columns to read (default all)"
    )
    scan.add_argument(
        "--limit", type=_limit_arg, default=20, metavar="N", help="rows to print (default 20)"
    )
    scan.add_argument("--explain", action="store_true", help="print the plan before the rows")
    scan.add_argument("--metrics", action="store_true", help="print the counters after the rows")
    scan.set_defaults(run=run)
