"""How the commands print: aligned text tables, strict JSON, sizes for people, a progress
bar on terminals, and per-file results that keep going past a bad file."""

from __future__ import annotations

import datetime as dt
import json
import math
import sys
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, TextIO

import pqindex

Json = dict[str, Any]

#: What a single file can raise without the command as a whole being wrong: reported for
#: that file (or as the command's error) rather than as a traceback.
FILE_ERRORS = (pqindex.PqindexError, OSError, ValueError)


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
    print(json.dumps(json_safe(doc), indent=2, allow_nan=False))


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


def clip(text: str, width: int | None) -> str:
    """``text`` cut to ``width`` characters, the cut marked with an ellipsis."""
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
    cells = [[clip(_cell(v, null), max_width) for v in row] for row in rows]
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
        self.close()

    def update(self, done: int) -> None:
        """Redraws the bar for ``done`` files finished."""
        if not self.enabled:
            return
        filled = self._width * done // self._total
        bar = "#" * filled + "." * (self._width - filled)
        self._stream.write(f"\r[{bar}] {done}/{self._total} files")
        self._stream.flush()

    def close(self) -> None:
        """Ends the bar's line, so what is printed next starts on a line of its own."""
        if self.enabled:
            self._stream.write("\n")
            self._stream.flush()


class LazyProgress:
    """A ``progress(done, total)`` callback for the native API: the bar is drawn once the
    total is known, which only the callee finds out."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._bar: ProgressBar | None = None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            self._bar = ProgressBar(total, self._stream)
            self._bar.update(0)
        self._bar.update(done)

    def close(self) -> None:
        """Ends the bar's line if one was drawn."""
        if self._bar is not None:
            self._bar.close()


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


def failed_count(results: Sequence[Json]) -> int:
    """How many of ``for_each_file``'s results are failures."""
    return sum(1 for r in results if r["error"] is not None)
