"""The embedded indexes a user of the current API would add to log files, what they cost to
build, and how large they are beside the data.

    python benches/logs/indexes.py /tmp/logbench/10m [--json out.json]

Each kind is added to every file on its own (``pqindex.add_indexes``, which also copies the
file: the figure is what a user waits for), at page granularity:

- ``BloomIndex("trace_id")``: trace ids are random hex, so page bounds rule nothing out; a
  bloom filter per page answers "which pages may hold this trace".
- ``DistinctIndex("user_id")``: user ids repeat (Zipf), a lookup wants the pages of one.
- ``NgramIndex("message")`` and ``TokenIndex("message")``: substring and whole-word
  searches inside the message text.

Adding the indexes again replaces them (same kind, column and granularity), so the script
can be rerun on indexed files.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pqindex

INDEXES: dict[str, Any] = {
    "bloom(trace_id)": pqindex.BloomIndex("trace_id", granularity="page"),
    "distinct(user_id)": pqindex.DistinctIndex("user_id", granularity="page"),
    "ngram(message)": pqindex.NgramIndex("message", granularity="page"),
    "token(message)": pqindex.TokenIndex("message", granularity="page"),
}
#: The file index.json goes to in the data directory ("_" first: readers skip it).
REPORT = "_indexes.json"


@dataclass
class Built:
    name: str
    seconds: float
    bytes: int
    percent_of_data: float


def data_files(root: Path) -> list[Path]:
    return sorted(root.glob("*.parquet"))


def index_bytes(files: list[Path]) -> dict[tuple[str, str], int]:
    """Bytes of each (kind, column) of index over ``files``."""
    sizes: dict[tuple[str, str], int] = {}
    for f in files:
        for ix in pqindex.list_indexes(f):
            key = (str(ix["kind"]), ",".join(ix["columns"]))
            sizes[key] = sizes.get(key, 0) + int(ix["length"])
    return sizes


def parquet_bytes(files: list[Path]) -> int:
    """The Parquet data without embedded indexes: the files' size less their index blocks."""
    total = sum(f.stat().st_size for f in files)
    return total - sum(index_bytes(files).values())


def build(root: Path) -> dict[str, Any]:
    """Add every index of INDEXES to every file under ``root``, one kind at a time."""
    files = data_files(root)
    data = parquet_bytes(files)
    built: list[Built] = []
    for name, definition in INDEXES.items():
        start = time.perf_counter()
        for f in files:
            pqindex.add_indexes(f, [definition])
        seconds = time.perf_counter() - start
        column = definition.column
        size = index_bytes(files).get((definition.kind, column), 0)
        built.append(Built(name, seconds, size, 100 * size / data))
        print(
            f"  {name}: {seconds:.1f} s, {size / 1e6:.2f} MB ({100 * size / data:.2f} % of data)",
            flush=True,
        )
    report = {
        "files": len(files),
        "data_bytes": data,
        "indexes": [asdict(b) for b in built],
        "total_index_bytes": sum(b.bytes for b in built),
        "total_seconds": sum(b.seconds for b in built),
    }
    (root / REPORT).write_text(json.dumps(report, indent=2) + "\n")
    return report


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("root", type=Path)
    args = p.parse_args(argv)
    report = build(args.root)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
