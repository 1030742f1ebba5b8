"""``pqindex inspect FILE``: what a file's footer says (sizes, row groups, columns, page
index, embedded indexes), all of it as ``read_metadata`` reports it."""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pqindex
from pqindex.cli.arguments import storage_options
from pqindex.cli.output import Json, format_table, human_bytes, print_json

if TYPE_CHECKING:
    from pqindex._native import StorageOptions


def _has_statistics(chunk: Json) -> bool:
    return any(chunk.get(k) is not None for k in ("min", "max", "null_count"))


def _column_chunks(columns: Any, pages: Any) -> list[Json]:
    """One record per column chunk, with its encodings as a list, whether it has
    statistics, and how many pages its page index lists (None without one)."""
    groups, names = pages["row_group"].to_pylist(), pages["column"].to_pylist()
    counts = Counter(zip(groups, names, strict=True))
    chunks = []
    for chunk in columns.to_pylist():
        key = (chunk["row_group"], chunk["column"])
        chunk["encodings"] = [e for e in (chunk["encodings"] or "").split(",") if e]
        chunk["has_statistics"] = _has_statistics(chunk)
        chunk["pages"] = counts.get(key) if chunk["has_page_index"] else None
        chunks.append(chunk)
    return chunks


def _sum_or_none(values: Iterable[int | None]) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _column_summary(chunks: list[Json]) -> Json:
    """One column over all its row groups: sizes summed, encodings merged, and the
    ``has_*`` flags true only when every chunk has the structure."""
    first = chunks[0]
    encodings = list(dict.fromkeys(e for c in chunks for e in c["encodings"]))
    return {
        "column": first["column"],
        "physical_type": first["physical_type"],
        "logical_type": first["logical_type"],
        "compression": first["compression"],
        "chunks": len(chunks),
        "compressed_size": sum(c["compressed_size"] for c in chunks),
        "uncompressed_size": sum(c["uncompressed_size"] for c in chunks),
        "encodings": encodings,
        "has_statistics": all(c["has_statistics"] for c in chunks),
        "has_page_index": all(c["has_page_index"] for c in chunks),
        "has_bloom_filter": all(c["has_bloom_filter"] for c in chunks),
        "bloom_filter_length": _sum_or_none(c["bloom_filter_length"] for c in chunks),
        "pages": _sum_or_none(c["pages"] for c in chunks),
    }


def _group_by_column(chunks: list[Json]) -> dict[str, list[Json]]:
    grouped: dict[str, list[Json]] = {}
    for chunk in chunks:
        grouped.setdefault(chunk["column"], []).append(chunk)
    return grouped


def _locators(md: pqindex.FileMetadata) -> list[Json]:
    """The footer's index locators, each led by its key so a listing reads key first."""
    return [{"key": loc["key"], **loc} for loc in md.indexes()]


def inspect_file(path: str, options: StorageOptions | None = None) -> Json:
    """Everything ``inspect`` reports about one file, as JSON data."""
    md = pqindex.read_metadata(path, storage_options=options)
    chunks = _column_chunks(md.columns(), md.pages())
    indexes = _locators(md)
    index_bytes = sum(int(loc.get("length") or 0) for loc in indexes)
    return {
        "path": md.path,
        "size_bytes": md.size,
        "num_rows": md.num_rows,
        "num_row_groups": md.num_row_groups,
        "created_by": md.created_by,
        "footer_length": md.footer_length,
        "row_groups": md.row_groups().to_pylist(),
        "columns": [_column_summary(c) for c in _group_by_column(chunks).values()],
        "column_chunks": chunks,
        "indexes": indexes,
        "index_bytes": index_bytes,
        "index_share": index_bytes / md.size if md.size else 0.0,
    }


def _flag(chunks: list[Json], key: str) -> str:
    """yes, no, or ``k/n`` when only some of a column's chunks have the structure."""
    have = sum(1 for c in chunks if c[key])
    return "yes" if have == len(chunks) else "no" if have == 0 else f"{have}/{len(chunks)}"


def _print_header(doc: Json) -> None:
    fields = [
        ("file", doc["path"]),
        ("size", f"{doc['size_bytes']} bytes ({human_bytes(doc['size_bytes'])})"),
        ("rows", doc["num_rows"]),
        ("row groups", doc["num_row_groups"]),
        ("created by", doc["created_by"] or "-"),
        ("footer length", f"{doc['footer_length']} bytes"),
    ]
    for name, value in fields:
        print(f"{name:<15}{value}")


def _print_row_groups(doc: Json) -> None:
    rows = [
        [rg["row_group"], rg["num_rows"], rg["total_byte_size"], rg["compressed_size"]]
        for rg in doc["row_groups"]
    ]
    print("\nrow groups")
    print(format_table(["row group", "rows", "uncompressed bytes", "compressed bytes"], rows))


def _print_columns(doc: Json) -> None:
    grouped = _group_by_column(doc["column_chunks"])
    rows = [
        [
            col["column"],
            col["physical_type"],
            col["logical_type"],
            col["compressed_size"],
            ",".join(col["encodings"]),
            _flag(grouped[col["column"]], "has_statistics"),
            _flag(grouped[col["column"]], "has_page_index"),
            _flag(grouped[col["column"]], "has_bloom_filter"),
            col["bloom_filter_length"],
        ]
        for col in doc["columns"]
    ]
    headers = ["column", "physical", "logical", "compressed bytes", "encodings"]
    headers += ["statistics", "page index", "bloom filter", "bloom bytes"]
    print("\ncolumns")
    print(format_table(headers, rows))


def _print_page_index(doc: Json) -> None:
    rows = []
    for column, chunks in _group_by_column(doc["column_chunks"]).items():
        pages = [c["pages"] for c in chunks if c["pages"] is not None]
        if pages:
            mean = f"{sum(pages) / len(pages):.1f}"
            rows.append([column, len(pages), sum(pages), min(pages), mean, max(pages)])
    if not rows:
        print("\npage index: none")
        return
    print("\npage index (pages per column chunk)")
    print(format_table(["column", "chunks", "pages", "min", "mean", "max"], rows))


def _print_indexes(doc: Json) -> None:
    indexes = doc["indexes"]
    if not indexes:
        print("\nembedded indexes: none")
        return
    share = f"{100 * doc['index_share']:.2f}%"
    print(f"\nembedded indexes: {len(indexes)}, {doc['index_bytes']} bytes ({share} of the file)")
    rows = [
        [
            loc.get("kind"),
            ", ".join(loc.get("columns") or []),
            loc.get("granularity"),
            loc.get("offset"),
            loc.get("length"),
            loc.get("error"),
        ]
        for loc in indexes
    ]
    print(format_table(["kind", "columns", "granularity", "offset", "length", "error"], rows))


def run(args: argparse.Namespace) -> int:
    """``pqindex inspect FILE``."""
    doc = inspect_file(args.file, storage_options(args))
    if args.json:
        print_json(doc)
        return 0
    _print_header(doc)
    _print_row_groups(doc)
    _print_columns(doc)
    _print_page_index(doc)
    _print_indexes(doc)
    return 0


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``inspect`` to the command parsers."""
    inspect = commands.add_parser("inspect", parents=[common], help="summarise a file's footer")
    inspect.add_argument("file", metavar="FILE", help="a Parquet file or object URL")
    inspect.set_defaults(run=run)
