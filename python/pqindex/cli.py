"""The ``pqindex`` command: look inside Parquet files, manage their embedded indexes and run
scans from the shell.

``inspect`` summarises a footer, ``index add|drop|list|verify`` manage embedded indexes over
many files, ``scan`` prints the rows a predicate selects. Every command takes ``--json`` for
one machine-readable document on stdout.

Exit status: 0 on success; 1 when a file of a multi-file command failed or an index is
damaged; 2 on a usage error or an error that stops the command (a missing or damaged file,
a bad predicate), reported as one ``pqindex: error: ...`` line on stderr.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import struct
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TextIO

import pqindex

Json = dict[str, Any]

GRANULARITIES = ("file", "row_group", "page")
KINDS = ("distinct", "bloom", "page_minmax", "hll", "aggregates")
INDEX_KEY_PREFIX = "pqindex.index."

#: What a single file can raise without the command as a whole being wrong: reported for
#: that file (or as the command's error) rather than as a traceback.
FILE_ERRORS = (pqindex.PqindexError, OSError, ValueError)


class CliError(Exception):
    """A command-line mistake found after parsing (no index asked for, no files found)."""


# --- output helpers ------------------------------------------------------------------------


def json_safe(value: object) -> object:
    """``value`` as plain JSON data: Arrow's dates, decimals, bytes and non-finite floats
    have no JSON form, so they become strings (bytes as hex) instead of failing the dump."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return str(value)


def print_json(doc: object) -> None:
    """One JSON document on stdout; ``allow_nan=False`` guarantees it is strict JSON."""
    print(json.dumps(doc, indent=2, allow_nan=False))


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _cell(value: object, null: str) -> str:
    """How one value reads in a text table: booleans as yes/no, containers as JSON."""
    if value is None:
        return null
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def _clip(text: str, width: int | None) -> str:
    return text if width is None or len(text) <= width else text[: width - 1] + "…"


def format_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    null: str = "-",
    max_width: int | None = None,
) -> str:
    """Aligned text columns, numbers right-aligned so their digits line up; cells longer
    than ``max_width`` are cut so one long value cannot stretch a whole table."""
    cells = [[_clip(_cell(v, null), max_width) for v in row] for row in rows]
    numeric = [
        any(_is_number(row[i]) for row in rows)
        and all(_is_number(row[i]) or row[i] is None for row in rows)
        for i in range(len(headers))
    ]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        padded = (
            v.rjust(w) if right else v.ljust(w)
            for v, w, right in zip(values, widths, numeric, strict=True)
        )
        return "  ".join(padded).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, cells)])


def human_bytes(n: int) -> str:
    """A size in the largest binary unit that keeps it at or above 1, for quick reading."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def error_message(exc: BaseException) -> str:
    """An exception's message on one line, so each error is one line of stderr."""
    lines = [part.strip() for part in str(exc).splitlines() if part.strip()]
    return " ".join(lines) or type(exc).__name__


# --- files and progress --------------------------------------------------------------------


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def expand_paths(paths: Iterable[str]) -> list[str]:
    """Files named directly, plus the ``*.parquet`` files under each directory, skipping
    names starting with ``_`` or ``.`` at every level as Spark does (``_SUCCESS``,
    ``_temporary/``, ``.crc`` files are not data)."""
    files: list[str] = []
    for path in paths:
        if not os.path.exists(path):
            raise pqindex.NotFoundError(f"{path}: no such file or directory")
        if not os.path.isdir(path):
            files.append(path)
            continue
        found = sorted(_parquet_files(path))
        if not found:
            raise CliError(f"{path}: no Parquet files in this directory")
        files.extend(found)
    return files


def _parquet_files(directory: str) -> Iterator[str]:
    for root, dirs, names in os.walk(directory):
        dirs[:] = [d for d in dirs if not _hidden(d)]
        for name in names:
            if name.endswith(".parquet") and not _hidden(name):
                yield os.path.join(root, name)


class ProgressBar:
    """``[#####.....] 12/40 files`` redrawn in place on stderr, only for several files on a
    terminal so that logs and pipes get no control characters."""

    def __init__(self, total: int, stream: TextIO | None = None, width: int = 30) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._total = total
        self._width = width
        self.enabled = total > 1 and self._stream.isatty()

    def __enter__(self) -> ProgressBar:
        self.update(0)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.enabled:
            self._stream.write("\n")
            self._stream.flush()

    def update(self, done: int) -> None:
        """Redraws the bar for ``done`` files finished."""
        if not self.enabled:
            return
        filled = self._width * done // self._total
        bar = "#" * filled + "." * (self._width - filled)
        self._stream.write(f"\r[{bar}] {done}/{self._total} files")
        self._stream.flush()


def for_each_file(paths: Sequence[str], action: Callable[[str], Json]) -> list[Json]:
    """``action`` on every file, a failure recorded as that file's ``error`` so one bad file
    does not stop the others."""
    results: list[Json] = []
    with ProgressBar(len(paths)) as progress:
        for done, path in enumerate(paths, 1):
            try:
                result = {"path": path, **action(path), "error": None}
            except FILE_ERRORS as exc:
                result = {"path": path, "error": error_message(exc)}
            results.append(result)
            progress.update(done)
    return results


# --- inspect -------------------------------------------------------------------------------


def footer_length(path: str) -> int:
    """The Thrift footer's length, from the four bytes before the closing ``PAR1``."""
    with open(path, "rb") as f:
        f.seek(-8, os.SEEK_END)
        return int(struct.unpack("<I", f.read(4))[0])


def embedded_indexes(kv: dict[str, str]) -> list[Json]:
    """The footer's ``pqindex.index.<n>`` locators in key order; an unparseable one is kept
    with an ``error`` so a damaged entry shows up instead of vanishing."""
    found: list[tuple[int, Json]] = []
    for key, value in kv.items():
        number = key.removeprefix(INDEX_KEY_PREFIX)
        if number == key or not number.isdigit():
            continue
        try:
            locator = json.loads(value)
        except ValueError:
            locator = None
        if not isinstance(locator, dict):
            locator = {"error": f"locator is not a JSON object: {_clip(value, 60)!r}"}
        found.append((int(number), {"key": key, **locator}))
    return [locator for _, locator in sorted(found, key=lambda item: item[0])]


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


def inspect_file(path: str) -> Json:
    """Everything ``inspect`` reports about one file, as JSON data."""
    md = pqindex.read_metadata(path)
    size = os.path.getsize(path)
    chunks = _column_chunks(md.columns(), md.pages())
    indexes = embedded_indexes(md.key_value_metadata())
    index_bytes = sum(int(loc.get("length") or 0) for loc in indexes)
    return {
        "path": md.path,
        "size_bytes": size,
        "num_rows": md.num_rows,
        "num_row_groups": md.num_row_groups,
        "created_by": md.created_by,
        "footer_length": footer_length(path),
        "row_groups": md.row_groups().to_pylist(),
        "columns": [_column_summary(c) for c in _group_by_column(chunks).values()],
        "column_chunks": chunks,
        "indexes": indexes,
        "index_bytes": index_bytes,
        "index_share": index_bytes / size if size else 0.0,
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


def _index_rows(indexes: list[Json]) -> list[list[object]]:
    return [
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


def _print_indexes(doc: Json) -> None:
    indexes = doc["indexes"]
    if not indexes:
        print("\nembedded indexes: none")
        return
    share = f"{100 * doc['index_share']:.2f}%"
    print(f"\nembedded indexes: {len(indexes)}, {doc['index_bytes']} bytes ({share} of the file)")
    headers = ["kind", "columns", "granularity", "offset", "length", "error"]
    print(format_table(headers, _index_rows(indexes)))


def cmd_inspect(args: argparse.Namespace) -> int:
    """``pqindex inspect FILE``."""
    doc = inspect_file(args.file)
    if args.json:
        print_json(json_safe(doc))
        return 0
    _print_header(doc)
    _print_row_groups(doc)
    _print_columns(doc)
    _print_page_index(doc)
    _print_indexes(doc)
    return 0


# --- index ---------------------------------------------------------------------------------


def _api(name: str) -> Any:
    """A pqindex index function by name, with a clear error when the installed build does
    not have it."""
    func = getattr(pqindex, name, None)
    if func is None:
        raise CliError(f"this pqindex build has no index support (pqindex.{name} is missing)")
    return func


@dataclass(frozen=True)
class IndexSpec:
    """One index asked for on the command line."""

    kind: str
    column: str
    granularity: str | None = None
    fpp: float | None = None

    def build(self) -> Any:
        """The pqindex index object to pass to ``add_indexes``."""
        if self.kind == "distinct":
            return _api("DistinctIndex")(self.column, self.granularity)
        if self.kind == "bloom":
            return _api("BloomIndex")(self.column, self.granularity, self.fpp)
        if self.kind == "page_minmax":
            return _api("MinMaxIndex")(self.column)
        if self.kind == "aggregates":
            return _api("AggregateIndex")(self.column, self.granularity)
        return _api("HllIndex")(self.column)

    def matches(self, locator: Json) -> bool:
        """Whether ``locator`` is the index this spec adds (HLL has no granularity option,
        so any granularity matches it)."""
        return (
            locator.get("kind") == self.kind
            and locator.get("columns") == [self.column]
            and (self.granularity is None or locator.get("granularity") == self.granularity)
        )


def _spec_parts(text: str, form: str, optional: int) -> list[str]:
    """``COL`` and up to ``optional`` ``:``-separated parts after it, empty when left out."""
    parts = text.split(":")
    if not parts[0] or len(parts) > 1 + optional:
        raise argparse.ArgumentTypeError(f"expected {form}, got {text!r}")
    return parts + [""] * (1 + optional - len(parts))


def _granularity(text: str, default: str) -> str:
    if not text:
        return default
    if text not in GRANULARITIES:
        raise argparse.ArgumentTypeError(
            f"granularity must be one of {', '.join(GRANULARITIES)}, got {text!r}"
        )
    return text


def _fpp(text: str) -> float:
    if not text:
        return 0.01
    try:
        fpp = float(text)
    except ValueError:
        fpp = math.nan
    if not 0.0 < fpp < 1.0:
        raise argparse.ArgumentTypeError(f"false positive rate must be in (0, 1), got {text!r}")
    return fpp


def parse_distinct(text: str) -> IndexSpec:
    """``COL[:GRAN]``, page granularity by default."""
    column, gran = _spec_parts(text, "COL[:GRAN]", 1)
    return IndexSpec("distinct", column, _granularity(gran, "page"))


def parse_bloom(text: str) -> IndexSpec:
    """``COL[:GRAN[:FPP]]``, row-group granularity and 1% false positives by default."""
    column, gran, fpp = _spec_parts(text, "COL[:GRAN[:FPP]]", 2)
    return IndexSpec("bloom", column, _granularity(gran, "row_group"), _fpp(fpp))


def parse_hll(text: str) -> IndexSpec:
    """``COL``."""
    (column,) = _spec_parts(text, "COL", 0)
    return IndexSpec("hll", column)


def parse_minmax(text: str) -> IndexSpec:
    """``COL``: page bounds, for files without a page index."""
    (column,) = _spec_parts(text, "COL", 0)
    return IndexSpec("page_minmax", column, "page")


def parse_aggregates(text: str) -> IndexSpec:
    """``COL[:GRAN]``, page granularity by default."""
    column, gran = _spec_parts(text, "COL[:GRAN]", 1)
    return IndexSpec("aggregates", column, _granularity(gran, "page"))


def describe_index(locator: Json) -> str:
    """``kind(col, ...) granularity``, the identity of an index in one short string."""
    columns = ", ".join(locator.get("columns") or [])
    return f"{locator.get('kind')}({columns}) {locator.get('granularity')}"


def _identity(locator: Json) -> tuple[object, ...]:
    return (locator.get("kind"), tuple(locator.get("columns") or []), locator.get("granularity"))


def _rewrite_rows(results: list[Json], changed_key: str) -> list[list[object]]:
    rows: list[list[object]] = []
    for r in results:
        changed = r.get(changed_key)
        rows.append(
            [
                r["path"],
                "; ".join(map(describe_index, changed)) if changed else None,
                len(r["indexes"]) if "indexes" in r else None,
                r.get("bytes_before"),
                r.get("bytes_after"),
                f"{r['seconds']:.2f}" if "seconds" in r else None,
                r["error"],
            ]
        )
    return rows


def _print_rewrites(results: list[Json], changed_key: str, as_json: bool) -> int:
    """The per-file table (or JSON) of ``index add`` and ``index drop``; 1 if a file failed."""
    failed = sum(1 for r in results if r["error"] is not None)
    if as_json:
        print_json(json_safe({"files": results, "failed": failed}))
        return 1 if failed else 0
    label = changed_key.replace("_", " ")
    headers = ["file", label, "in file", "bytes before", "bytes after", "seconds", "error"]
    print(format_table(headers, _rewrite_rows(results, changed_key)))
    for r in results:
        for damaged in r.get("dropped_damaged") or []:
            print(f"note: {r['path']}: dropped a damaged index: {damaged}")
    if failed:
        print(f"{failed} of {len(results)} files failed", file=sys.stderr)
    return 1 if failed else 0


def cmd_index_add(args: argparse.Namespace) -> int:
    """``pqindex index add PATH... --distinct/--bloom/--hll/--minmax/--aggregates``."""
    specs: list[IndexSpec] = [
        *args.distinct,
        *args.bloom,
        *args.hll,
        *args.minmax,
        *args.aggregates,
    ]
    if not specs:
        raise CliError(
            "index add: give at least one of --distinct, --bloom, --hll, --minmax, --aggregates"
        )
    paths = expand_paths(args.paths)
    add_indexes = _api("add_indexes")
    indexes = [spec.build() for spec in specs]

    def add(path: str) -> Json:
        result = dict(add_indexes(path, indexes))
        result["added"] = [loc for loc in result["indexes"] if any(s.matches(loc) for s in specs)]
        return result

    return _print_rewrites(for_each_file(paths, add), "added", args.json)


def cmd_index_drop(args: argparse.Namespace) -> int:
    """``pqindex index drop PATH... [--kind] [--column] [--granularity]``; no filter drops
    every index."""
    paths = expand_paths(args.paths)
    list_indexes, drop_indexes = _api("list_indexes"), _api("drop_indexes")

    def drop(path: str) -> Json:
        before = list(list_indexes(path))
        result = dict(
            drop_indexes(path, kind=args.kind, columns=args.column, granularity=args.granularity)
        )
        kept = {_identity(loc) for loc in result["indexes"]}
        result["dropped"] = [loc for loc in before if _identity(loc) not in kept]
        return result

    return _print_rewrites(for_each_file(paths, drop), "dropped", args.json)


def _locator_rows(results: list[Json], with_status: bool) -> list[list[object]]:
    """One row per index, and one per file without any (or whose reading failed)."""
    rows: list[list[object]] = []
    for r in results:
        indexes = r.get("indexes") or []
        status: list[object] = [None] if with_status else []
        if not indexes:
            kind = "(none)" if r["error"] is None else None
            rows.append([r["path"], kind, None, None, None, None, *status, r["error"]])
        for loc in indexes:
            status = ["ok" if loc.get("ok") else "DAMAGED"] if with_status else []
            rows.append(
                [
                    r["path"],
                    loc.get("kind"),
                    ", ".join(loc.get("columns") or []),
                    loc.get("granularity"),
                    loc.get("offset"),
                    loc.get("length"),
                    *status,
                    loc.get("error"),
                ]
            )
    return rows


def cmd_index_list(args: argparse.Namespace) -> int:
    """``pqindex index list PATH...``; 1 if a file could not be read."""
    list_indexes = _api("list_indexes")
    results = for_each_file(expand_paths(args.paths), lambda p: {"indexes": list(list_indexes(p))})
    failed = sum(1 for r in results if r["error"] is not None)
    if args.json:
        print_json(json_safe({"files": results, "failed": failed}))
    else:
        headers = ["file", "kind", "columns", "granularity", "offset", "length", "error"]
        print(format_table(headers, _locator_rows(results, with_status=False)))
    return 1 if failed else 0


def cmd_index_verify(args: argparse.Namespace) -> int:
    """``pqindex index verify PATH...``; 1 if an index is damaged or a file unreadable."""
    verify = _api("verify")
    results = for_each_file(expand_paths(args.paths), lambda p: {"indexes": list(verify(p))})
    failed = sum(1 for r in results if r["error"] is not None)
    checked = [loc for r in results for loc in r.get("indexes") or []]
    damaged = sum(1 for loc in checked if not loc.get("ok"))
    if args.json:
        doc = {
            "files": results,
            "failed": failed,
            "damaged": damaged,
            "ok": not (failed or damaged),
        }
        print_json(json_safe(doc))
    else:
        headers = ["file", "kind", "columns", "granularity", "offset", "length", "status"]
        print(format_table([*headers, "error"], _locator_rows(results, with_status=True)))
        counts = f"{damaged} damaged, {failed} files unreadable"
        print(f"{len(checked)} indexes in {len(results)} files: {counts}")
    return 1 if failed or damaged else 0


# --- scan ----------------------------------------------------------------------------------


def _record_batches(scan: Any) -> Iterator[Any]:
    """The scan's batches, streamed when pyarrow can import a stream (15+) so a large
    result is never held whole."""
    import pyarrow as pa

    from_stream = getattr(pa.RecordBatchReader, "from_stream", None)
    if from_stream is not None:
        yield from from_stream(scan)
    else:
        yield from scan.to_arrow().to_batches()


def read_head(scan: Any, limit: int) -> tuple[list[str], list[list[object]], int]:
    """Column names, the first ``limit`` rows (JSON-safe values) and the total row count;
    the scan is read to the end so the count and metrics are complete."""
    import pyarrow as pa

    names = list(pa.schema(scan).names)
    head: list[list[object]] = []
    total = 0
    for batch in _record_batches(scan):
        if len(head) < limit:
            part = batch.slice(0, limit - len(head))
            columns = [[json_safe(v) for v in col.to_pylist()] for col in part.columns]
            head.extend([col[i] for col in columns] for i in range(part.num_rows))
        total += batch.num_rows
    return names, head, total


def _columns_arg(text: str) -> list[str]:
    """``a,b,c``; an empty string selects no columns (the rows are only counted)."""
    return [name.strip() for name in text.split(",") if name.strip()]


def _limit_arg(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _print_scan(names: list[str], head: list[list[object]], total: int) -> None:
    if names and head:
        print(format_table(names, head, null="null", max_width=40))
    noun = "row" if total == 1 else "rows"
    truncated = names and len(head) < total
    print(f"(first {len(head)} of {total} {noun})" if truncated else f"({total} {noun})")


def cmd_scan(args: argparse.Namespace) -> int:
    """``pqindex scan SOURCE``; the plan is explained before the rows are read, metrics
    are taken after."""
    source = args.source[0] if len(args.source) == 1 else args.source
    scan = pqindex.scan(source, where=args.where, columns=args.columns)
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
    _print_scan(names, head, total)
    if args.metrics:
        print()
        print(format_table(["metric", "value"], list(metrics.items())))
    return 0


def cmd_aggregate(args: argparse.Namespace) -> int:
    """``pqindex aggregate SOURCE SELECT``: one row of aggregates."""
    source = args.source[0] if len(args.source) == 1 else args.source
    result = pqindex.aggregate(source, args.select, args.where)
    explain = result.explain()
    names, head, _ = read_head(result, 1)
    metrics = result.metrics()
    if args.json:
        row = dict(zip(names, head[0], strict=True)) if head else {}
        print_json(json_safe({"row": row, "metrics": metrics, "explain": explain}))
        return 0
    if args.explain:
        print(explain.rstrip("\n"))
        print()
    _print_scan(names, head, len(head))
    if args.metrics:
        print()
        print(format_table(["metric", "value"], list(metrics.items())))
    return 0


# --- command line --------------------------------------------------------------------------


def _add_paths(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="Parquet files, or directories searched recursively for *.parquet",
    )


def _add_index_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    index = commands.add_parser("index", help="add, drop, list or verify embedded indexes")
    sub = index.add_subparsers(dest="index_command", metavar="COMMAND", required=True)

    add = sub.add_parser("add", parents=[common], help="add indexes to files")
    _add_paths(add)
    add.add_argument(
        "--distinct",
        type=parse_distinct,
        action="append",
        default=[],
        metavar="COL[:GRAN]",
        help="distinct-value index; GRAN is file, row_group or page (default page)",
    )
    add.add_argument(
        "--bloom",
        type=parse_bloom,
        action="append",
        default=[],
        metavar="COL[:GRAN[:FPP]]",
        help="bloom filter index (default row_group, false positive rate 0.01)",
    )
    add.add_argument(
        "--hll", type=parse_hll, action="append", default=[], metavar="COL", help="HLL sketch"
    )
    add.add_argument(
        "--minmax",
        type=parse_minmax,
        action="append",
        default=[],
        metavar="COL",
        help="page min/max, for files written without a page index",
    )
    add.add_argument(
        "--aggregates",
        type=parse_aggregates,
        action="append",
        default=[],
        metavar="COL[:GRAN]",
        help="count, nulls, min, max and sum per unit, for `pqindex aggregate` (default page)",
    )
    add.set_defaults(run=cmd_index_add)

    drop = sub.add_parser("drop", parents=[common], help="drop indexes (all without a filter)")
    _add_paths(drop)
    drop.add_argument("--kind", choices=KINDS, help="only indexes of this kind")
    drop.add_argument(
        "--column",
        action="append",
        metavar="C",
        help="only indexes on this column (repeat for a multi-column index)",
    )
    drop.add_argument("--granularity", choices=GRANULARITIES, help="only this granularity")
    drop.set_defaults(run=cmd_index_drop)

    listing = sub.add_parser("list", parents=[common], help="list the indexes in files")
    _add_paths(listing)
    listing.set_defaults(run=cmd_index_list)

    verify = sub.add_parser("verify", parents=[common], help="check every index's checksum")
    _add_paths(verify)
    verify.set_defaults(run=cmd_index_verify)


def _add_scan_command(commands: Any, common: argparse.ArgumentParser) -> None:
    scan = commands.add_parser("scan", parents=[common], help="print the rows a predicate selects")
    scan.add_argument(
        "source", nargs="+", metavar="SOURCE", help="a file, a directory or several files"
    )
    scan.add_argument("--where", metavar="SQL", help="predicate, in DuckDB's SQL")
    scan.add_argument(
        "--columns", type=_columns_arg, metavar="a,b", help="columns to read (default all)"
    )
    scan.add_argument(
        "--limit", type=_limit_arg, default=20, metavar="N", help="rows to print (default 20)"
    )
    scan.add_argument("--explain", action="store_true", help="print the plan before the rows")
    scan.add_argument("--metrics", action="store_true", help="print the counters after the rows")
    scan.set_defaults(run=cmd_scan)


class _LazyProgress:
    """A ``progress(done, total)`` callback drawing a ``ProgressBar`` once the total is known."""

    def __init__(self) -> None:
        self._bar: ProgressBar | None = None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            self._bar = ProgressBar(total)
            self._bar.update(0)
        self._bar.update(done)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)


def _catalog_doc(catalog: Any) -> Json:
    return {
        "root": catalog.root,
        "version": catalog.version,
        "files": catalog.num_files,
        "columns": catalog.columns,
        "bloom_columns": catalog.bloom_columns,
        "report": catalog.report(),
    }


def _print_catalog(doc: Json, as_json: bool) -> None:
    if as_json:
        print_json(json_safe(doc))
        return
    rows: list[list[object]] = [
        ["catalog", os.path.join(doc["root"], "_pqindex")],
        ["version", doc["version"]],
        ["files", doc["files"]],
        ["columns", ", ".join(doc["columns"]) or "-"],
        ["bloom filters", ", ".join(doc["bloom_columns"]) or "-"],
    ]
    for key, value in (doc.get("report") or {}).items():
        if key not in ("version", "files"):
            rows.append([key, value])
    for key, value in (doc.get("freshness") or {}).items():
        rows.append([key, value])
    print(format_table(["", ""], rows))


def cmd_catalog_build(args: argparse.Namespace) -> int:
    """``pqindex catalog build DATASET --columns a,b --bloom a``."""
    progress = _LazyProgress()
    try:
        catalog = pqindex.Catalog.build(
            args.dataset,
            args.columns or [],
            bloom=args.bloom if args.bloom is not None else None,
            fpp=args.fpp,
            progress=progress,
        )
    finally:
        progress.close()
    _print_catalog(_catalog_doc(catalog), args.json)
    return 0


def _open_catalog(dataset: str) -> Any:
    catalog = pqindex.Catalog.open(dataset)
    if catalog is None:
        raise CliError(f"{dataset}: no catalog (build one with `pqindex catalog build`)")
    return catalog


def cmd_catalog_refresh(args: argparse.Namespace) -> int:
    """``pqindex catalog refresh DATASET``: a new version for what changed."""
    progress = _LazyProgress()
    try:
        catalog = _open_catalog(args.dataset).refresh(progress=progress)
    finally:
        progress.close()
    _print_catalog(_catalog_doc(catalog), args.json)
    return 0


def cmd_catalog_show(args: argparse.Namespace) -> int:
    """``pqindex catalog show DATASET``: the current version and how fresh it is."""
    catalog = _open_catalog(args.dataset)
    doc = _catalog_doc(catalog)
    doc["freshness"] = catalog.freshness()
    _print_catalog(doc, args.json)
    return 0


def _add_catalog_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    catalog = commands.add_parser("catalog", help="build, refresh or show a dataset's catalog")
    sub = catalog.add_subparsers(dest="catalog_command", metavar="COMMAND", required=True)
    build = sub.add_parser("build", parents=[common], help="build the catalog of a dataset")
    build.add_argument("dataset", metavar="DATASET", help="the dataset directory")
    build.add_argument(
        "--columns", type=_columns_arg, metavar="a,b", help="columns to summarise (min/max)"
    )
    build.add_argument(
        "--bloom",
        type=_columns_arg,
        metavar="a,b",
        help="columns with a per-file bloom filter (default: the --columns)",
    )
    build.add_argument("--fpp", type=_fpp, default=0.01, help="bloom false positive rate")
    build.set_defaults(run=cmd_catalog_build)
    refresh = sub.add_parser("refresh", parents=[common], help="update it for changed files")
    refresh.add_argument("dataset", metavar="DATASET")
    refresh.set_defaults(run=cmd_catalog_refresh)
    show = sub.add_parser("show", parents=[common], help="its version, columns and freshness")
    show.add_argument("dataset", metavar="DATASET")
    show.set_defaults(run=cmd_catalog_show)


def _add_aggregate_command(commands: Any, common: argparse.ArgumentParser) -> None:
    agg = commands.add_parser(
        "aggregate", parents=[common], help="count, min, max, sum, avg, from indexes where possible"
    )
    agg.add_argument("source", nargs="+", metavar="SOURCE", help="a file, a directory or files")
    agg.add_argument("--select", required=True, metavar="SQL", help="e.g. 'count(*), sum(x)'")
    agg.add_argument("--where", metavar="SQL", help="predicate, in DuckDB's SQL")
    agg.add_argument("--explain", action="store_true", help="print the plan before the row")
    agg.add_argument("--metrics", action="store_true", help="print the counters after the row")
    agg.set_defaults(run=cmd_aggregate)


def build_parser() -> argparse.ArgumentParser:
    """The ``pqindex`` argument parser with all its subcommands."""
    parser = argparse.ArgumentParser(
        prog="pqindex", description="Inspect Parquet files, manage embedded indexes, run scans."
    )
    parser.add_argument("--version", action="version", version=f"pqindex {pqindex.__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print one JSON document")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    inspect = commands.add_parser("inspect", parents=[common], help="summarise a file's footer")
    inspect.add_argument("file", metavar="FILE")
    inspect.set_defaults(run=cmd_inspect)
    _add_index_commands(commands, common)
    _add_scan_command(commands, common)
    _add_aggregate_command(commands, common)
    _add_catalog_commands(commands, common)
    return parser


def _silence_stdout() -> None:
    """Points stdout at /dev/null after the reader went away (``| head``), so the final
    flush at exit does not raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Runs one command and returns its exit status (see the module docstring)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed the usage error or the help
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return int(args.run(args))
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except (CliError, *FILE_ERRORS) as exc:
        print(f"pqindex: error: {error_message(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
