"""Check pqindex against its referees over any directory of Parquet files.

    python scripts/corpus.py /path/to/parquet-testing          # every *.parquet under it
    python scripts/corpus.py --generate /tmp/corpus            # write the corpus, then check
    python scripts/corpus.py DIR --jobs 2 --per-column 6 --json out.json

Prints the summary (files, operations, outcomes per folder) and every disagreement: file,
operation, what pqindex answered and what the referee answered. Each file is read whole
(against pyarrow, or the rows it was written from), its footer compared, and a few
predicates per column compared with DuckDB (``tests/corpus/check.py``). Files run in worker
processes, so a crash or a hang is reported against the file and stage it happened in.
Exits 1 when some outcome is a wrong value, wrong rows, an untyped error or a crash.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from corpus import check, writers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", help="where the Parquet files are (searched recursively)")
    parser.add_argument(
        "--generate", action="store_true", help="first write the generated corpus there"
    )
    parser.add_argument("--jobs", type=int, default=2, help="worker processes side by side")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds without progress")
    parser.add_argument("--per-column", type=int, default=4, help="predicates per column")
    parser.add_argument("--combos", type=int, default=4, help="AND/OR/NOT predicates per file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-isolate", action="store_true", help="run in this process")
    parser.add_argument("--quiet", action="store_true", help="the table only")
    parser.add_argument("--json", metavar="PATH", help="also write every outcome as JSON")
    args = parser.parse_args(argv)

    root = Path(args.directory)
    if args.generate:
        corpus = writers.write_corpus(root)
        print(f"wrote {len(corpus.files)} files under {root}", file=sys.stderr)
        for skipped in corpus.skipped:
            print(f"  skipped: {skipped}", file=sys.stderr)
    paths = check.find_parquet_files(root)
    if not paths:
        print(f"no *.parquet under {root}", file=sys.stderr)
        return 2
    started = time.monotonic()
    done = [0]

    def progress(report: check.FileReport) -> None:
        done[0] += 1
        bad = sum(o.kind in check.FAILING for o in report.outcomes)
        mark = f"  {bad} failing" if bad else ""
        print(f"[{done[0]}/{len(paths)}] {report.file}{mark}", file=sys.stderr)

    summary = check.check_paths(
        paths,
        root=str(root),
        isolate=not args.no_isolate,
        jobs=args.jobs,
        timeout=args.timeout,
        seed=args.seed,
        per_column=args.per_column,
        combos=args.combos,
        progress=None if args.quiet else progress,
    )
    print(summary.render(disagreements=not args.quiet, notes=not args.quiet))
    print(f"\n{len(paths)} files in {time.monotonic() - started:.1f} s")
    if args.json:
        Path(args.json).write_text(
            json.dumps([dataclasses.asdict(r) for r in summary.reports], indent=1)
        )
    return 1 if any(o.kind in check.FAILING for o in summary.outcomes()) else 0


if __name__ == "__main__":
    sys.exit(main())
