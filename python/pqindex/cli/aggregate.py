"""``pqindex aggregate SOURCE --select ...``: one row of aggregates, answered from
aggregates indexes where every row of a unit satisfies the predicate."""

from __future__ import annotations

import argparse
from typing import Any

import pqindex
from pqindex.cli.arguments import source_arg, storage_options
from pqindex.cli.output import print_json
from pqindex.cli.scan import print_metrics, print_rows, read_head


def run(args: argparse.Namespace) -> int:
    """``pqindex aggregate SOURCE --select SQL [--where SQL]``."""
    result = pqindex.aggregate(
        source_arg(args.source), args.select, args.where, storage_options=storage_options(args)
    )
    explain = result.explain()
    names, head, _ = read_head(result, 1)
    metrics = result.metrics()
    if args.json:
        row = dict(zip(names, head[0], strict=True)) if head else {}
        print_json({"row": row, "metrics": metrics, "explain": explain})
        return 0
    if args.explain:
        print(explain.rstrip("\n"))
        print()
    print_rows(names, head, len(head))
    if args.metrics:
        print_metrics(metrics)
    return 0


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``aggregate`` to the command parsers."""
    agg = commands.add_parser(
        "aggregate", parents=[common], help="count, min, max, sum, avg, from indexes where possible"
    )
    agg.add_argument(
        "source", nargs="+", metavar="SOURCE", help="a file, a directory or files (or URLs)"
    )
    agg.add_argument("--select", required=True, metavar="SQL", help="e.g. 'count(*), sum(x)'")
    agg.add_argument("--where", metavar="SQL", help="predicate, in DuckDB's SQL")
    agg.add_argument("--explain", action="store_true", help="print the plan before the row")
    agg.add_argument("--metrics", action="store_true", help="print the counters after the row")
    agg.set_defaults(run=run)
