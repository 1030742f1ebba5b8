"""The comparison engine of the "files in the wild" corpus: pqindex against referees, file
by file, every outcome classified.

For one file:

1. ``read``: the whole file through ``pqindex.scan(path).to_arrow()`` against the rows the
   file was written from (a ``.expected.arrow`` sidecar, see ``writers.py``), else
   ``pyarrow.parquet.read_table``, else DuckDB's ``read_parquet``. Values are compared in
   a canonical form (timestamps as instants whatever their unit or zone, strings as their
   bytes, NaN equal to NaN, -0.0 to 0.0, dictionaries decoded); types are compared after
   the documented equivalences (large and view layouts, dictionaries, list item names)
   and their differences recorded, not failed.
2. ``metadata``: ``pqindex.read_metadata`` against pyarrow's footer: rows, row groups,
   column paths, physical types, codecs, value and NULL counts, chunk sizes.
3. ``where: ...``: for every queryable column and struct leaf, a few predicates (``=``,
   ``<``, ``>=``, ``IN``, ``IS [NOT] NULL``, ``BETWEEN``, ``LIKE``...) with literals drawn
   from the column's values and beyond, pqindex's rows against DuckDB's. DuckDB reads the
   file with ``read_parquet`` (set up as ``tests/conftest.py``'s referee) when its rows
   agree with step 1's reference, else it queries that reference registered as a table.

Every operation ends as one of KINDS. ``check_paths`` runs files in worker processes, so
that a crash (a signal, a hang) is recorded against the file and stage it happened in
rather than ending the run.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import json
import math
import os
import queue
import random
import re
import struct
import subprocess
import sys
import threading
import traceback
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

TESTS_DIR = Path(__file__).resolve().parent.parent
if str(TESTS_DIR) not in sys.path:  # predicates.py and conftest.py import as plain modules
    sys.path.insert(0, str(TESTS_DIR))

from conftest import DUCKDB_SETUP  # noqa: E402
from predicates import Column, Literals, sql_string  # noqa: E402

from corpus.writers import EXPECTED_SUFFIX  # noqa: E402

KINDS = (
    "agree",
    "wrong-value",
    "wrong-rows",
    "pqindex-error-typed",
    "pqindex-error-untyped",
    "referee-error",
    "crash",
)
#: The kinds that are defects whatever the file: the others are agreement, a typed refusal,
#: or the referee's own failure.
FAILING = frozenset({"wrong-value", "wrong-rows", "pqindex-error-untyped", "crash"})
NAN = "NaN"
NS_PER_UNIT = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
MAX_DETAIL = 600


# --------------------------------------------------------------------------------------------
# Outcomes
# --------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """One operation on one file and how it ended; ``pqindex``/``referee`` say what each
    side answered, short."""

    file: str
    operation: str
    kind: str
    pqindex: str = ""
    referee: str = ""
    referee_name: str = ""
    detail: str = ""


@dataclass
class FileReport:
    """Everything checked on one file, with type differences and notes on the referees."""

    file: str
    outcomes: list[Outcome] = field(default_factory=list)
    type_differences: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, operation: str, kind: str, **info: str) -> Outcome:
        outcome = Outcome(self.file, operation, kind, **{k: _cut(v) for k, v in info.items()})
        self.outcomes.append(outcome)
        return outcome


@dataclass
class Summary:
    """The outcomes of a run over many files, with the tables to print."""

    root: str
    reports: list[FileReport] = field(default_factory=list)

    def outcomes(self) -> list[Outcome]:
        return [o for r in self.reports for o in r.outcomes]

    def counts(self) -> Counter[str]:
        return Counter(o.kind for o in self.outcomes())

    def disagreements(self) -> list[Outcome]:
        return [o for o in self.outcomes() if o.kind != "agree"]

    def group(self, file: str) -> str:
        """The folder a file sits in under the root: a writer, or parquet-testing's data/."""
        relative = os.path.relpath(file, self.root) if self.root else file
        return os.path.dirname(relative) or "."

    def table(self) -> str:
        """Files, operations and outcome kinds, overall and per folder."""
        counts = self.counts()
        groups: dict[str, Counter[str]] = {}
        files: Counter[str] = Counter()
        for report in self.reports:
            g = self.group(report.file)
            files[g] += 1
            groups.setdefault(g, Counter()).update(o.kind for o in report.outcomes)
        head = ["folder", "files", "ops", *KINDS]
        rows = [
            [g, str(files[g]), str(sum(c.values())), *(str(c[k]) for k in KINDS)]
            for g, c in sorted(groups.items())
        ]
        rows.append(
            [
                "TOTAL",
                str(len(self.reports)),
                str(sum(counts.values())),
                *(str(counts[k]) for k in KINDS),
            ]
        )
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        lines = [
            "  ".join(
                c.rjust(w) if i else c.ljust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
            for row in [head, *rows]
        ]
        lines.insert(1, "-" * len(lines[0]))
        lines.insert(-1, "-" * len(lines[0]))
        return "\n".join(lines)

    def reasons(self) -> str:
        """The disagreements grouped by kind and message (numbers, quoted text and paths
        blanked out), most frequent first: one line per distinct defect or refusal."""
        groups: dict[tuple[str, str], list[Outcome]] = {}
        for o in self.disagreements():
            text = (
                o.pqindex
                if o.kind.startswith(("pqindex", "crash"))
                else (o.referee if o.kind == "referee-error" else (o.detail or o.pqindex))
            )
            if o.kind.startswith("wrong") and o.operation.startswith("where"):
                text = "predicate rows differ"
            text = text.replace(o.file, "<file>")
            text = re.sub(r'predicate ".*?": ', 'predicate "…": ', text)
            text = re.sub(r"\(([\w.]+)\)$", "(…)", text)
            text = re.sub(r"'[^']*'", "'…'", text)
            key = (o.kind, re.sub(r"\d+", "N", text).split("\n")[0][:110])
            groups.setdefault(key, []).append(o)
        lines = []
        for (kind, text), items in sorted(
            groups.items(), key=lambda kv: (KINDS.index(kv[0][0]), -len(kv[1]))
        ):
            files = sorted({self.relative(o.file) for o in items})
            shown = ", ".join(files[:3]) + (f" +{len(files) - 3}" if len(files) > 3 else "")
            lines.append(f"{len(items):6d}  {kind:22s}  {text}\n{'':8}in {shown}")
        return "disagreements by reason:\n" + "\n".join(lines) if lines else ""

    def render(self, *, disagreements: bool = True, notes: bool = True) -> str:
        """The table, the reasons, then each disagreement (file, operation, pqindex vs
        referee)."""
        parts = [self.table()]
        if self.reasons():
            parts.append(self.reasons())
        if disagreements:
            for o in self.disagreements():
                lines = [f"[{o.kind}] {self.relative(o.file)} :: {o.operation}"]
                if o.pqindex:
                    lines.append(f"    pqindex: {o.pqindex}")
                if o.referee or o.referee_name:
                    lines.append(f"    referee ({o.referee_name}): {o.referee}")
                if o.detail:
                    lines.append(f"    {o.detail}")
                parts.append("\n".join(lines))
        if notes:
            types = [
                f"{self.relative(r.file)}: {t}" for r in self.reports for t in r.type_differences
            ]
            if types:
                parts.append("type differences (pqindex vs reference):\n  " + "\n  ".join(types))
            extra = [f"{self.relative(r.file)}: {n}" for r in self.reports for n in r.notes]
            if extra:
                parts.append("referee notes:\n  " + "\n  ".join(extra))
        return "\n\n".join(parts)

    def relative(self, file: str) -> str:
        return os.path.relpath(file, self.root) if self.root else file


def _cut(text: str, limit: int = MAX_DETAIL) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def classify_error(error: BaseException) -> str:
    """A Rust panic (pyo3's PanicException) is a crash; a PqindexError is a typed refusal;
    anything else pqindex lets out is untyped."""
    import pqindex

    if type(error).__name__ == "PanicException":
        return "crash"
    if isinstance(error, pqindex.PqindexError):
        return "pqindex-error-typed"
    return "pqindex-error-untyped"


def _guard(call: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    """``call()``'s result, or the exception it raised (panics included: they are
    BaseExceptions), never letting KeyboardInterrupt through silently."""
    try:
        return call(), None
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # a PanicException derives from BaseException
        return None, error


# --------------------------------------------------------------------------------------------
# Canonical values
# --------------------------------------------------------------------------------------------


class Instant(NamedTuple):
    """A timestamp as nanoseconds since the epoch, naive counted as UTC."""

    ns: int

    def __repr__(self) -> str:
        seconds, ns = divmod(self.ns, 1_000_000_000)
        try:
            moment = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds)
        except OverflowError:
            return f"Instant({self.ns})"
        return f"{moment.isoformat(sep=' ')}.{ns:09d}"


class Day(NamedTuple):
    days: int

    def __repr__(self) -> str:
        try:
            return (dt.date(1970, 1, 1) + dt.timedelta(days=self.days)).isoformat()
        except OverflowError:
            return f"Day({self.days})"


class TimeOfDay(NamedTuple):
    ns: int

    def __repr__(self) -> str:
        seconds, ns = divmod(self.ns, 1_000_000_000)
        return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{ns:09d}"


class Span(NamedTuple):
    ns: int


def _ints(array: pa.Array, factor: int = 1) -> list[int | None]:
    t = array.type
    narrow = pa.types.is_date32(t) or (pa.types.is_time(t) and t.bit_width == 32)
    raw = array.cast(pa.int32() if narrow else pa.int64()).to_pylist()
    return [None if v is None else v * factor for v in raw]


def canonical(array: pa.Array | pa.ChunkedArray) -> list[Any]:
    """Engine-neutral, hashable Python values of an Arrow array, recursively: what "the
    same value" means between pqindex, pyarrow and DuckDB."""
    if str(array.type) == "day_time_interval":  # pyarrow cannot wrap these arrays in Python
        return _day_time(array)
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks else pa.array([], array.type)
    t = array.type
    if isinstance(t, pa.BaseExtensionType):
        return canonical(array.storage)
    if pa.types.is_dictionary(t):
        return canonical(array.dictionary_decode())
    if pa.types.is_run_end_encoded(t):
        return canonical(pc.run_end_decode(array))
    if pa.types.is_null(t):
        return [None] * len(array)
    if pa.types.is_timestamp(t):
        return [None if v is None else Instant(v) for v in _ints(array, NS_PER_UNIT[t.unit])]
    if pa.types.is_date32(t):
        return [None if v is None else Day(v) for v in _ints(array)]
    if pa.types.is_date64(t):
        return [None if v is None else Day(v // 86_400_000) for v in _ints(array)]
    if pa.types.is_time(t):
        return [None if v is None else TimeOfDay(v) for v in _ints(array, NS_PER_UNIT[t.unit])]
    if pa.types.is_duration(t):
        return [None if v is None else Span(v) for v in _ints(array, NS_PER_UNIT[t.unit])]
    if pa.types.is_float16(t):
        return canonical(array.cast(pa.float32()))
    if pa.types.is_interval(t):  # month_day_nano
        return [None if v is None else tuple(v) for v in array.to_pylist()]
    if pa.types.is_floating(t):
        return [_float(v) for v in array.to_pylist()]
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return [None if v is None else v.encode() for v in array.to_pylist()]
    if pa.types.is_struct(t):
        return _canonical_struct(array)
    if pa.types.is_map(t):
        # list_flatten has no map kernel: cut the entries (all of them) by the offsets.
        keys, items = (canonical(c) for c in array.values.flatten())
        pairs = list(zip(keys, items, strict=True))
        offsets = array.offsets.to_pylist()
        valid = array.is_valid().to_pylist()
        return [
            tuple(pairs[offsets[i] : offsets[i + 1]]) if valid[i] else None
            for i in range(len(array))
        ]
    if (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    ):
        return _regroup(array, canonical(array.flatten()))
    values = array.to_pylist()
    return [tuple(v) if isinstance(v, list) else v for v in values]


def _day_time(array: pa.Array | pa.ChunkedArray) -> list[Any]:
    """(months, days, nanoseconds) of a day_time interval column. pyarrow cannot wrap such
    arrays in Python, so each batch goes through IPC and is read back as int64: the low
    32 bits are the days, the high 32 the milliseconds."""
    out: list[Any] = []
    for batch in pa.table({"v": array}).to_batches():
        raw = pa.ipc.read_record_batch(batch.serialize(), pa.schema([("v", pa.int64())]))
        for v in raw.column(0).to_pylist():
            if v is None:
                out.append(None)
                continue
            days, millis = struct.unpack("<ii", struct.pack("<q", v))
            out.append((0, days, millis * 1_000_000))
    return out


def _interval_bytes(value: Any) -> Any:
    """Parquet's INTERVAL (12 bytes: months, days, milliseconds) as (months, days, ns)."""
    if isinstance(value, bytes) and len(value) == 12:
        months, days, millis = struct.unpack("<III", value)
        return (months, days, millis * 1_000_000)
    return value


def _float(value: float | None) -> Any:
    if value is None:
        return None
    return NAN if math.isnan(value) else value + 0.0


def _canonical_struct(array: pa.StructArray) -> list[Any]:
    names = [array.type.field(i).name for i in range(array.type.num_fields)]
    children = [canonical(child) for child in array.flatten()]
    valid = array.is_valid().to_pylist()
    return [
        tuple((n, c[i]) for n, c in zip(names, children, strict=True)) if valid[i] else None
        for i in range(len(array))
    ]


def _regroup(array: pa.Array, flat: list[Any]) -> list[Any]:
    """Cuts a list array's flattened (canonical) values back into one tuple per row."""
    lengths = pc.list_value_length(array).to_pylist()
    out: list[Any] = []
    at = 0
    for length in lengths:
        if length is None:
            out.append(None)
        else:
            out.append(tuple(flat[at : at + length]))
            at += length
    return out


def _family(t: pa.DataType) -> str:
    while isinstance(t, pa.BaseExtensionType) or pa.types.is_dictionary(t):
        t = t.storage_type if isinstance(t, pa.BaseExtensionType) else t.value_type
    if pa.types.is_decimal(t):
        return "decimal"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_fixed_size_binary(t) and t.byte_width in (12, 16):
        return f"bytes{t.byte_width}"
    if pa.types.is_interval(t) or str(t) == "day_time_interval":
        return "interval"
    if pa.types.is_duration(t):
        return "duration"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    return str(t)


def _uuid_text(v: Any) -> Any:
    return str(uuid.UUID(bytes=v)).encode() if isinstance(v, bytes) and len(v) == 16 else v


def _float12(v: Any) -> Any:
    return float(f"{float(v):.12g}") if isinstance(v, (Decimal, float)) else v


# How to map both sides' canonical values where the engines give one (possibly nested) column
# different families of type: DuckDB reads DECIMAL wider than 38 digits as DOUBLE (to 12
# digits: the two conversions may differ by an ulp), hands UUIDs out as text and reads an
# Arrow duration as INTERVAL; pyarrow reads Parquet's INTERVAL as its 12 bytes.
BRIDGES: dict[frozenset[str], Callable[[Any], Any]] = {
    frozenset({"decimal", "float"}): _float12,
    frozenset({"bytes16", "string"}): _uuid_text,
    frozenset({"bytes12", "interval"}): lambda v: _interval_bytes(v),
    frozenset({"duration", "interval"}): lambda v: (0, 0, v.ns) if isinstance(v, Span) else v,
}


def _unwrap(t: pa.DataType) -> pa.DataType:
    while isinstance(t, pa.BaseExtensionType) or pa.types.is_dictionary(t):
        t = t.storage_type if isinstance(t, pa.BaseExtensionType) else t.value_type
    return t


def _family_pairs(a: pa.DataType, b: pa.DataType) -> set[frozenset[str]]:
    """The pairs of differing leaf families between two types, walking both trees."""
    a, b = _unwrap(a), _unwrap(b)
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        names = {f.name for f in b}
        return set().union(
            *(_family_pairs(f.type, b.field(f.name).type) for f in a if f.name in names)
        )
    if pa.types.is_map(a) and pa.types.is_map(b):
        return _family_pairs(a.key_type, b.key_type) | _family_pairs(a.item_type, b.item_type)
    if _is_list(a) and _is_list(b):
        return _family_pairs(a.value_type, b.value_type)
    fa, fb = _family(a), _family(b)
    return {frozenset({fa, fb})} if fa != fb else set()


def _is_list(t: pa.DataType) -> bool:
    return any(
        check(t)
        for check in (
            pa.types.is_list,
            pa.types.is_large_list,
            pa.types.is_fixed_size_list,
            pa.types.is_list_view,
            pa.types.is_large_list_view,
        )
    )


def _deep(bridge: Callable[[Any], Any], value: Any) -> Any:
    """``bridge`` applied to every scalar inside a canonical (nested) value."""
    if isinstance(value, tuple) and not isinstance(value, (Instant, Day, TimeOfDay, Span)):
        return tuple(_deep(bridge, v) for v in value)
    return bridge(value)


def bridged(ref_type: pa.DataType, got_type: pa.DataType) -> Callable[[Any], Any] | None:
    """The mapping (see BRIDGES) both sides' values need before they compare, if any."""
    chosen = [BRIDGES[p] for p in _family_pairs(ref_type, got_type) if p in BRIDGES]
    if not chosen:
        return None

    def bridge(v: Any) -> Any:
        for f in chosen:
            v = f(v)
        return v

    if pa.types.is_nested(_unwrap(ref_type)) or pa.types.is_nested(_unwrap(got_type)):
        return lambda v: _deep(bridge, v)
    return bridge


def canonical_pair(ref: pa.ChunkedArray, got: pa.ChunkedArray) -> tuple[list[Any], list[Any]]:
    """Both columns canonical, bridged where their types' families differ."""
    a, b = canonical(ref), canonical(got)
    bridge = bridged(ref.type, got.type)
    if bridge is not None:
        a, b = [bridge(v) for v in a], [bridge(v) for v in b]
    return a, b


def normal_type(t: pa.DataType) -> pa.DataType:
    """A type with the equivalences the contract allows folded: dictionary to its values,
    large and view layouts to the plain ones, list item names and nullability ignored."""
    if pa.types.is_dictionary(t):
        return normal_type(t.value_type)
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_list_view(t)
        or (pa.types.is_large_list_view(t))
    ):
        return pa.list_(normal_type(t.value_type))
    if pa.types.is_map(t):
        return pa.map_(normal_type(t.key_type), normal_type(t.item_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, normal_type(f.type)) for f in t])
    return t


def _short_values(values: Iterable[Any], limit: int = 4) -> str:
    shown = [repr(v)[:80] for v in list(values)[:limit]]
    return "[" + ", ".join(shown) + "]"


# --------------------------------------------------------------------------------------------
# Referees
# --------------------------------------------------------------------------------------------


def duckdb_referee() -> Any:
    """A DuckDB connection set up as tests/conftest.py's referee."""
    import duckdb

    con = duckdb.connect()
    for statement in DUCKDB_SETUP:
        con.execute(statement)
    return con


def duckdb_table(con: Any, query: str) -> pa.Table:
    relation = con.sql(query)
    for method in ("to_arrow_table", "fetch_arrow_table"):
        if hasattr(relation, method):
            return getattr(relation, method)()
    return relation.arrow().read_all()


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_expected(path: str) -> pa.Table | None:
    sidecar = path + EXPECTED_SUFFIX
    if not os.path.exists(sidecar):
        return None
    with pa.memory_map(sidecar) as source:
        return pa.ipc.open_file(source).read_all()


def pyarrow_read(path: str) -> pa.Table:
    """pyarrow's rows. pyarrow reads INT96 in nanoseconds, wrapping years outside
    1677-2262, or in a coarser unit, truncating: each column that the two reads disagree
    on comes from the microsecond read when the nanosecond one wrapped."""
    table = pq.read_table(path)
    if not any(pa.types.is_timestamp(f.type) and f.type.unit == "ns" for f in table.schema):
        return table
    coarse = pq.read_table(path, coerce_int96_timestamp_unit="us")
    for i, name in enumerate(table.column_names):
        fine, wide = table.column(i), coarse.column(i)
        if fine.type == wide.type or not pa.types.is_timestamp(fine.type):
            continue
        a, b = canonical(fine), canonical(wide)
        wrapped = any(
            x is not None and y is not None and x.ns // 1000 != y.ns // 1000
            for x, y in zip(a, b, strict=True)
        )
        if wrapped:
            table = table.set_column(i, name, wide)
    return table


# --------------------------------------------------------------------------------------------
# Whole-file read
# --------------------------------------------------------------------------------------------


def compare_tables(ref: pa.Table, got: pa.Table) -> tuple[str, str, list[str]]:
    """(kind, detail, agreeing columns) of pqindex's whole read against the reference."""
    if got.column_names != ref.column_names:
        return (
            "wrong-value",
            f"columns: reference {ref.column_names}, pqindex {got.column_names}",
            [],
        )
    if got.num_rows != ref.num_rows:
        return "wrong-rows", f"rows: reference {ref.num_rows}, pqindex {got.num_rows}", []
    agreeing, bad = [], []
    for name in ref.column_names:
        pair, error = _guard(lambda: canonical_pair(ref.column(name), got.column(name)))  # noqa: B023
        if error is not None:
            bad.append(f"{name}: the harness cannot compare it: {_error_text(error)[:200]}")
            continue
        a, b = pair
        if a == b:
            agreeing.append(name)
            continue
        if Counter(a) == Counter(b):
            bad.append(f"{name}: same values in another order")
            continue
        first = next(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y)
        differing = sum(x != y for x, y in zip(a, b, strict=True))
        bad.append(
            f"{name}: {differing} of {len(a)} values differ, first at row {first}: "
            f"reference {repr(a[first])[:120]}, pqindex {repr(b[first])[:120]}"
        )
    if bad:
        return "wrong-value", "; ".join(bad), agreeing
    return "agree", "", agreeing


def type_differences(ref: pa.Schema, got: pa.Schema) -> list[str]:
    out = []
    for f in ref:
        if f.name not in got.names:
            continue
        g = got.field(f.name)
        if normal_type(f.type) != normal_type(g.type):
            out.append(f"{f.name}: reference {f.type}, pqindex {g.type}")
    return out


# --------------------------------------------------------------------------------------------
# Metadata
# --------------------------------------------------------------------------------------------


def compare_metadata(path: str, report: FileReport) -> None:
    import pqindex

    ref, ref_error = _guard(lambda: pq.ParquetFile(path).metadata)
    got, got_error = _guard(lambda: pqindex.read_metadata(path))
    if got_error is not None:
        kind = classify_error(got_error) if ref_error is None else "referee-error"
        report.add(
            "metadata",
            kind,
            pqindex=_error_text(got_error),
            referee=_error_text(ref_error) if ref_error else "ok",
            referee_name="pyarrow",
        )
        return
    if ref_error is not None:
        report.add(
            "metadata",
            "referee-error",
            pqindex="ok",
            referee=_error_text(ref_error),
            referee_name="pyarrow",
        )
        return
    problems = []
    if got.num_rows != ref.num_rows:
        problems.append(f"num_rows: pyarrow {ref.num_rows}, pqindex {got.num_rows}")
    if got.num_row_groups != ref.num_row_groups:
        problems.append(f"row groups: pyarrow {ref.num_row_groups}, pqindex {got.num_row_groups}")
    else:
        groups, got_columns = _guard(lambda: (got.row_groups(), got.columns()))[0] or (None, None)
        if groups is None:
            problems.append("row_groups()/columns() raised")
        else:
            problems += _metadata_rows(ref, groups, got_columns)
    if problems:
        report.add(
            "metadata", "wrong-value", detail="; ".join(problems[:6]), referee_name="pyarrow"
        )
    else:
        report.add("metadata", "agree", referee_name="pyarrow")


def _codec(name: Any) -> str:
    """A codec's family: pqindex adds the level (``ZSTD(ZstdLevel(3))``); pyarrow calls
    LZ4_RAW "LZ4" and the Hadoop framing of LZ4 "UNKNOWN" or "LZ4_HADOOP"."""
    base = str(name).upper().split("(")[0]
    return "LZ4" if base in {"LZ4", "LZ4_RAW", "LZ4_HADOOP", "UNKNOWN"} else base


CHUNK_FIELDS = ("physical_type", "compression", "num_values", "compressed_size", "null_count")


def _metadata_rows(ref: Any, groups: pa.Table, columns: pa.Table) -> list[str]:
    problems = []
    got_rows = groups.column("num_rows").to_pylist()
    ref_rows = [ref.row_group(i).num_rows for i in range(ref.num_row_groups)]
    if got_rows != ref_rows:
        problems.append(f"row group rows: pyarrow {ref_rows}, pqindex {got_rows}")
    got_chunks = {(r["row_group"], r["column"]): r for r in columns.to_pylist()}
    for i in range(ref.num_row_groups):
        group = ref.row_group(i)
        for j in range(group.num_columns):
            chunk = group.column(j)
            mine = got_chunks.get((i, chunk.path_in_schema))
            if mine is None:
                problems.append(f"row group {i}: no column {chunk.path_in_schema!r} in pqindex")
                continue
            stats = chunk.statistics
            expected = {
                "physical_type": chunk.physical_type,
                "compression": chunk.compression,
                "num_values": chunk.num_values,
                "compressed_size": chunk.total_compressed_size,
                "null_count": stats.null_count
                if stats is not None and stats.has_null_count
                else None,
            }
            for key in CHUNK_FIELDS:
                want, have = expected[key], mine.get(key)
                if key == "null_count" and want is None:
                    continue
                if key == "compression" and _codec(want) == _codec(have):
                    continue
                if want != have:
                    problems.append(
                        f"rg {i} {chunk.path_in_schema} {key}: pyarrow {want}, pqindex {have}"
                    )
    return problems


# --------------------------------------------------------------------------------------------
# Predicates
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Leaf:
    """A column a predicate can name: its SQL, the top-level column, DuckDB's type name, and
    its values in DuckDB's Arrow form."""

    sql: str
    top: str
    duck_type: str
    values: pa.Array


def _kind(duck_type: str, arrow_type: pa.DataType) -> str | None:
    """The literal family of a column, from DuckDB's type name (DuckDB is the referee)."""
    t = duck_type.upper()
    if t == "BOOLEAN":
        return "bool"
    if t in {
        "TINYINT",
        "SMALLINT",
        "INTEGER",
        "BIGINT",
        "UTINYINT",
        "USMALLINT",
        "UINTEGER",
        "UBIGINT",
    }:
        return "int"
    if t in {"HUGEINT", "UHUGEINT"}:
        return "hugeint"
    if t in {"FLOAT", "DOUBLE"}:
        return "float"
    if t.startswith("DECIMAL"):
        return "decimal" if pa.types.is_decimal(arrow_type) else None
    if t == "VARCHAR" or t.startswith("ENUM"):
        return "string"
    if t == "BLOB":
        return "binary"
    if t == "DATE":
        return "date"
    if t.startswith("TIMESTAMP"):
        return "timestamp" if pa.types.is_timestamp(arrow_type) else None
    if t == "TIME":
        return "time"
    if t == "TIME WITH TIME ZONE":
        return "timetz"
    if t == "UUID":
        return "uuid"
    return None


def leaves(con: Any, relation: str, table: pa.Table) -> list[Leaf]:
    """Top-level primitive columns and struct leaves (any depth) DuckDB can type."""
    out: list[Leaf] = []

    def visit(sql: str, top: str, array: pa.Array) -> None:
        t = array.type
        if pa.types.is_struct(t):
            for i, child in enumerate(t):
                visit(f"{sql}.{quote(child.name)}", top, array.flatten()[i])
            return
        if pa.types.is_nested(t):
            return
        described, error = _guard(
            lambda: con.sql(f"DESCRIBE SELECT {sql} AS c FROM {relation}").fetchall()
        )
        if error is None and described:
            out.append(Leaf(sql, top, described[0][1], array))

    for name in table.column_names:
        column = table.column(name)
        array = column.combine_chunks() if column.num_chunks else pa.array([], column.type)
        visit(quote(name), name, array)
    return out


def _distinct(array: pa.Array) -> tuple[Any, ...]:
    values = pc.unique(pc.drop_null(array))
    t = values.type
    if isinstance(t, pa.BaseExtensionType):
        values = values.storage
        t = values.type
    if pa.types.is_dictionary(t):
        values = values.dictionary_decode()
        t = values.type
    if pa.types.is_timestamp(t) or pa.types.is_time(t):
        values = values.cast(pa.int64())
    elif pa.types.is_date32(t):
        values = values.cast(pa.int32())
    elif pa.types.is_float16(t):
        values = values.cast(pa.float32())
    out = values.to_pylist()
    if pa.types.is_string_view(t) or pa.types.is_large_string(t):
        out = [str(v) for v in out]
    return tuple(sorted(out, key=repr))


def _value_type(t: pa.DataType) -> pa.DataType:
    while isinstance(t, pa.BaseExtensionType) or pa.types.is_dictionary(t):
        t = t.storage_type if isinstance(t, pa.BaseExtensionType) else t.value_type
    return t


class Atoms:
    """Random predicates over one leaf, with literals from :class:`predicates.Literals`
    (values present, neighbours, between, type edges, NaN, ...) plus TIME, UUID and LIKE
    patterns, which that generator does not make."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.literals = Literals(rng)

    def literal(self, leaf: Leaf, kind: str, values: tuple[Any, ...]) -> str:
        """A literal for the leaf; a neighbour past year 9999 cannot be spelled, so such
        draws are retried."""
        for _ in range(20):
            try:
                return self._literal(leaf, kind, values)
            except (OverflowError, ValueError):
                continue
        return "NULL"

    def _literal(self, leaf: Leaf, kind: str, values: tuple[Any, ...]) -> str:
        t = _value_type(leaf.values.type)
        if kind == "time" or kind == "timetz":
            return self._time(values, t, kind)
        if kind == "uuid":
            return self._uuid(values)
        if kind == "hugeint":
            v = self.rng.choice([*values, 0, 2**127 - 1, -(2**127)]) if values else 0
            return str(int(v))
        if kind == "float" and pa.types.is_float16(t):
            t = pa.float32()
        if kind == "string" and not (pa.types.is_string(t)):
            t = pa.string()
        if kind == "timestamp" and values and self.rng.random() < 0.25:
            return self._typed_timestamp(t, self.rng.choice(values))
        column = Column(leaf.sql, leaf.top, kind, t, values)
        return self.literals.for_column(column).sql

    def _time(self, values: tuple[Any, ...], t: pa.DataType, kind: str) -> str:
        ns_per = NS_PER_UNIT[t.unit] if pa.types.is_time(t) else 1000
        pool = [int(v) * ns_per // 1000 for v in values] or [0]
        us = self.rng.choice([*pool, 0, 86_399_999_999])
        us = max(0, min(86_399_999_999, us + self.rng.choice([0, 0, 1, -1, 500_000])))
        seconds, micros = divmod(us, 1_000_000)
        text = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{micros:06d}"
        return f"TIMETZ '{text}+00'" if kind == "timetz" else f"TIME '{text}'"

    def _typed_timestamp(self, t: pa.DataType, value: int) -> str:
        """A present value as ``TIMESTAMP_NS '...'`` (all nine digits) for a nanosecond
        column, or as ``TIMESTAMPTZ '...+00'`` for a zoned one; else as ``TIMESTAMP_MS``."""
        ns = value * NS_PER_UNIT[t.unit]
        seconds, fraction = divmod(ns, 1_000_000_000)
        moment = (dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds)).isoformat(sep=" ")
        if t.tz is not None:
            return f"TIMESTAMPTZ '{moment}.{fraction // 1000:06d}+00'"
        if t.unit == "ns":
            return f"TIMESTAMP_NS '{moment}.{fraction:09d}'"
        return f"TIMESTAMP_MS '{moment}.{fraction // 1_000_000:03d}'"

    def _uuid(self, values: tuple[Any, ...]) -> str:
        pool = [str(v) for v in values] + [
            "00000000-0000-0000-0000-000000000000",
            "ffffffff-ffff-ffff-ffff-ffffffffffff",
        ]
        text = sql_string(self.rng.choice(pool))
        return text if self.rng.random() < 0.5 else f"CAST({text} AS UUID)"

    def like(self, values: tuple[Any, ...]) -> str:
        """A LIKE pattern from a present value: prefix, suffix, infix, a ``_`` wildcard."""
        text = str(self.rng.choice(values)) if values else "abc"
        cut = max(1, len(text) // 2)
        form = self.rng.randrange(6)
        if form == 0:
            pattern = text[:cut] + "%"
        elif form == 1:
            pattern = "%" + text[-cut:]
        elif form == 2:
            pattern = "%" + text[1 : cut + 1] + "%"
        elif form == 3 and text:
            pattern = "_" + text[1:]
        elif form == 4:
            pattern = "zz%qq"
        else:
            pattern = text
        op = self.rng.choice(["LIKE", "LIKE", "NOT LIKE", "ILIKE"])
        return f"{op} {sql_string(pattern)}"

    def atoms(self, leaf: Leaf, count: int) -> list[str]:
        """``count`` predicates on ``leaf`` (none if DuckDB's type has no literal form)."""
        kind = _kind(leaf.duck_type, _value_type(leaf.values.type))
        if kind is None:
            return []
        values = _distinct(leaf.values)
        if kind == "bool":
            forms = [
                leaf.sql,
                f"NOT {leaf.sql}",
                f"{leaf.sql} = true",
                f"{leaf.sql} IS NULL",
                f"{leaf.sql} != false",
                f"{leaf.sql} IS NOT NULL",
            ]
            self.rng.shuffle(forms)
            return forms[:count]
        shapes = ["=", "<", ">=", "in", "null", "between", "!=", "notnull", "<=", ">", "notin"]
        if kind == "string":
            shapes += ["like", "like"]
        self.rng.shuffle(shapes)
        if "=" in shapes[count:]:  # an equality on a present value is the most useful one
            shapes.insert(0, "=")
        out = []

        def lit() -> str:
            return self.literal(leaf, kind, values)

        for shape in shapes[:count]:
            if shape == "null":
                out.append(f"{leaf.sql} IS NULL")
            elif shape == "notnull":
                out.append(f"{leaf.sql} IS NOT NULL")
            elif shape == "like":
                out.append(f"{leaf.sql} {self.like(values)}")
            elif shape in ("in", "notin"):
                items = ", ".join(lit() for _ in range(self.rng.randint(1, 4)))
                out.append(f"{leaf.sql} {'NOT ' if shape == 'notin' else ''}IN ({items})")
            elif shape == "between":
                out.append(f"{leaf.sql} BETWEEN {lit()} AND {lit()}")
            else:
                out.append(f"{leaf.sql} {shape} {lit()}")
        return out


@dataclass
class Referee:
    """Where DuckDB reads the rows for the predicates, and under what name."""

    relation: str
    name: str
    table: pa.Table | None = None  # its whole read, for the literals


def run_predicates(
    path: str,
    report: FileReport,
    con: Any,
    referee: Referee,
    good_columns: Sequence[str],
    *,
    rng: random.Random,
    per_column: int,
    combos: int,
    stage: Callable[[str], None],
) -> None:
    """Every leaf's atoms and a few AND/OR/NOT combinations, pqindex against DuckDB."""
    assert referee.table is not None
    found = leaves(con, referee.relation, referee.table)
    atoms = Atoms(rng)
    identity = _identity_columns(referee.table, good_columns)
    cases: list[tuple[str, set[str]]] = []
    for leaf in found:
        for atom in atoms.atoms(leaf, per_column):
            cases.append((atom, {leaf.top}))
    singles = list(cases)
    for _ in range(combos if len(singles) >= 2 else 0):
        (a, ca), (b, cb) = rng.sample(singles, 2)
        joiner = rng.choice([" AND ", " OR "])
        sql = f"({a}){joiner}({b})"
        cases.append((f"NOT ({sql})" if rng.random() < 0.3 else sql, ca | cb))
    for i, (where, tops) in enumerate(cases):
        stage(f"where #{i}: {where}")
        check_predicate(path, report, con, referee, where, tops, identity, good_columns)


def _identity_columns(table: pa.Table, good: Sequence[str]) -> list[str]:
    """Up to two top-level primitive columns that read right and tell rows apart best: they
    go in every projection, so that a wrong row shows even where the predicate's column
    has the right values."""
    scored = []
    for name in good:
        if name not in table.column_names:
            continue
        column = table.column(name)
        if pa.types.is_nested(column.type):
            continue
        scored.append(
            (
                len(
                    pc.unique(
                        column.combine_chunks() if column.num_chunks else pa.array([], column.type)
                    )
                ),
                name,
            )
        )
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [name for _, name in scored[:2]]


def check_predicate(
    path: str,
    report: FileReport,
    con: Any,
    referee: Referee,
    where: str,
    tops: set[str],
    identity: Sequence[str],
    good_columns: Sequence[str],
) -> None:
    """One predicate: the rows over the identity columns and the predicate's columns that
    read right; with none of those, the row counts."""
    import pqindex

    shown = [c for c in identity] + sorted(c for c in tops if c in good_columns)
    columns = list(dict.fromkeys(shown)) or sorted(tops)
    counts_only = not shown
    projection = ", ".join(quote(c) for c in columns)
    query = f"SELECT {projection} FROM {referee.relation} WHERE {where}"
    operation = f"where: {where}"
    expected, ref_error = _guard(lambda: duckdb_table(con, query))
    got, got_error = _guard(lambda: pqindex.scan(path, where=where, columns=columns).to_arrow())
    if ref_error is not None:
        report.add(
            operation,
            "referee-error",
            pqindex=_error_text(got_error) if got_error else f"{got.num_rows} rows",
            referee=_error_text(ref_error),
            referee_name=referee.name,
        )
        return
    if got_error is not None:
        report.add(
            operation,
            classify_error(got_error),
            pqindex=_error_text(got_error),
            referee=f"{expected.num_rows} rows",
            referee_name=referee.name,
        )
        return
    info = {"referee_name": referee.name, "detail": f"columns={columns}"}
    if got.num_rows != expected.num_rows:
        report.add(
            operation,
            "wrong-rows",
            pqindex=f"{got.num_rows} rows",
            referee=f"{expected.num_rows} rows",
            **info,
        )
        return
    if counts_only or got.column_names != expected.column_names:
        if got.column_names != expected.column_names and not counts_only:
            report.add(
                operation,
                "wrong-value",
                pqindex=f"columns {got.column_names}",
                referee=f"columns {expected.column_names}",
                **info,
            )
        else:
            report.add(operation, "agree", **info)
        return
    pairs = [canonical_pair(expected.column(c), got.column(c)) for c in columns]
    want = Counter(zip(*(p[0] for p in pairs), strict=True))
    have = Counter(zip(*(p[1] for p in pairs), strict=True))
    if want == have:
        report.add(operation, "agree", **info)
        return
    missing, extra = want - have, have - want
    report.add(
        operation,
        "wrong-value",
        pqindex=f"{got.num_rows} rows; not in the referee's: {_short_values(extra.elements())}",
        referee=f"{expected.num_rows} rows; not in pqindex's: {_short_values(missing.elements())}",
        **info,
    )


# --------------------------------------------------------------------------------------------
# One file
# --------------------------------------------------------------------------------------------


def _seed(path: str, seed: int) -> int:
    digest = hashlib.sha256(f"{seed}:{os.path.basename(path)}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def check_file(
    path: str,
    *,
    con: Any | None = None,
    seed: int = 0,
    per_column: int = 4,
    combos: int = 4,
    stage: Callable[[str], None] | None = None,
) -> FileReport:
    """Read, metadata and predicates on one file: see the module docstring."""
    import pqindex

    own = con is None
    db: Any = duckdb_referee() if con is None else con
    stage = stage or (lambda _: None)
    report = FileReport(path)
    try:
        stage("metadata")
        compare_metadata(path, report)
        stage("reference read")
        reference, reference_name = _reference(path, db, report)
        stage("pqindex read")
        got, got_error = _guard(lambda: pqindex.scan(path).to_arrow())
        good: list[str] = []
        if reference is None:
            report.add(
                "read",
                "referee-error",
                pqindex=_error_text(got_error) if got_error else f"{got.num_rows} rows",
                referee="no referee could read the file",
                referee_name="expected/pyarrow/duckdb",
            )
        elif got_error is not None:
            report.add(
                "read",
                classify_error(got_error),
                pqindex=_error_text(got_error),
                referee=f"{reference.num_rows} rows",
                referee_name=reference_name,
            )
        else:
            kind, detail, good = compare_tables(reference, got)
            report.type_differences += type_differences(reference.schema, got.schema)
            report.add(
                "read",
                kind,
                pqindex=f"{got.num_rows} rows",
                referee=f"{reference.num_rows} rows",
                referee_name=reference_name,
                detail=detail,
            )
        stage("predicate referee")
        referee = _predicate_referee(path, db, reference, reference_name, report)
        if referee is not None:
            run_predicates(
                path,
                report,
                db,
                referee,
                good,
                rng=random.Random(_seed(path, seed)),
                per_column=per_column,
                combos=combos,
                stage=stage,
            )
    finally:
        _guard(lambda: db.unregister("corpus_reference"))
        if own:
            db.close()
    return report


def _reference(path: str, con: Any, report: FileReport) -> tuple[pa.Table | None, str]:
    """The rows pqindex's whole read must equal: the sidecar, pyarrow's, or DuckDB's."""
    expected = read_expected(path)
    if expected is not None:
        return expected, "expected"
    table, error = _guard(lambda: pyarrow_read(path))
    if error is None:
        return table, "pyarrow"
    report.notes.append(f"pyarrow cannot read it: {_cut(_error_text(error), 200)}")
    query = f"SELECT * FROM read_parquet({sql_string(path)})"
    table, error = _guard(lambda: duckdb_table(con, query))
    if error is None:
        return table, "duckdb"
    report.notes.append(f"duckdb cannot read it: {_cut(_error_text(error), 200)}")
    return None, ""


def _predicate_referee(
    path: str, con: Any, reference: pa.Table | None, reference_name: str, report: FileReport
) -> Referee | None:
    """DuckDB over ``read_parquet`` when it reads the same rows as the reference; else
    DuckDB over the reference registered as a table; else ``read_parquet`` with the
    columns it reads differently left out; None when nothing works."""
    relation = f"read_parquet({sql_string(path)})"
    duck, error = _guard(lambda: duckdb_table(con, f"SELECT * FROM {relation}"))
    if error is not None:
        if reference is not None:
            report.notes.append(f"duckdb read_parquet fails: {_cut(_error_text(error), 200)}")
        return _registered(con, reference, reference_name, report)
    if reference is None or reference_name == "duckdb":
        return Referee(relation, "duckdb read_parquet", duck)
    bad = _differing_columns(reference, duck)
    if not bad:
        return Referee(relation, "duckdb read_parquet", duck)
    report.notes.append(
        f"duckdb read_parquet reads differently from {reference_name}: "
        f"{_cut('; '.join(bad.values()), 300)}"
    )
    registered = _registered(con, reference, reference_name, report)
    if registered is not None:
        return registered
    keep = [c for c in duck.column_names if c not in bad]
    return Referee(relation, "duckdb read_parquet", duck.select(keep)) if keep else None


def _differing_columns(reference: pa.Table, duck: pa.Table) -> dict[str, str]:
    """The columns DuckDB reads differently from the reference (all, if the shapes differ)."""
    if reference.column_names != duck.column_names or reference.num_rows != duck.num_rows:
        return {c: f"shape: {duck.num_rows} rows {duck.column_names}" for c in duck.column_names}
    bad = {}
    for name in reference.column_names:
        pair, error = _guard(lambda: canonical_pair(reference.column(name), duck.column(name)))  # noqa: B023
        if error is not None:
            bad[name] = f"{name}: not comparable ({_error_text(error)[:100]})"
            continue
        a, b = pair
        if a != b:
            first = next(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y)
            bad[name] = f"{name} row {first}: {repr(a[first])[:60]} vs {repr(b[first])[:60]}"
    return bad


def _registrable(table: pa.Table) -> pa.Table:
    """The reference with the types DuckDB cannot import from Arrow (half floats) widened."""

    def widen(t: pa.DataType) -> pa.DataType:
        if pa.types.is_float16(t):
            return pa.float32()
        if pa.types.is_struct(t):
            return pa.struct([f.with_type(widen(f.type)) for f in t])
        return t

    schema = pa.schema([f.with_type(widen(f.type)) for f in table.schema])
    return table if schema == table.schema else table.cast(schema)


def _registered(
    con: Any, reference: pa.Table | None, reference_name: str, report: FileReport
) -> Referee | None:
    if reference is None:
        return None
    _, error = _guard(lambda: con.register("corpus_reference", _registrable(reference)))
    if error is None:
        table, error = _guard(lambda: duckdb_table(con, "SELECT * FROM corpus_reference"))
        if error is None:
            return Referee("corpus_reference", f"duckdb over {reference_name} rows", table)
    report.notes.append(f"duckdb cannot query the {reference_name} rows: {_cut(str(error), 200)}")
    return None


# --------------------------------------------------------------------------------------------
# Many files, in worker processes
# --------------------------------------------------------------------------------------------


def find_parquet_files(root: str | os.PathLike[str]) -> list[str]:
    """Every ``*.parquet`` under ``root``, and every other file that ends in Parquet's magic
    (``PAR1``, or ``PARE`` for an encrypted footer: ``*.parquet.encrypted``), sorted."""
    found = []
    for path in Path(root).rglob("*"):
        if not path.is_file() or path.name.endswith(EXPECTED_SUFFIX):
            continue
        if path.suffix == ".parquet" or _parquet_magic(path):
            found.append(str(path))
    return sorted(found)


def _parquet_magic(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() < 12:
                return False
            f.seek(-4, os.SEEK_END)
            return f.read(4) in (b"PAR1", b"PARE")
    except OSError:
        return False


def _report_from_json(data: dict[str, Any]) -> FileReport:
    outcomes = [Outcome(**o) for o in data.pop("outcomes")]
    return FileReport(outcomes=outcomes, **data)


def _crash_report(path: str, stage: str, why: str) -> FileReport:
    report = FileReport(path)
    report.add(stage or "start", "crash", pqindex=why, detail=f"while: {stage}")
    return report


def _run_worker_chain(
    paths: list[str],
    options: dict[str, Any],
    timeout: float,
    out: list[FileReport],
    progress: Callable[[FileReport], None] | None,
) -> None:
    """Feeds ``paths`` to a worker process; when it dies or hangs, records a crash for the
    file and stage it was in and starts a new worker for the rest."""
    remaining = list(paths)
    while remaining:
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]),
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "corpus.check", "--worker", json.dumps(options)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert proc.stdin and proc.stdout and proc.stderr
        proc.stdin.write(json.dumps(remaining))
        proc.stdin.close()
        lines: queue.Queue[str | None] = queue.Queue()
        errors: deque[str] = deque(maxlen=15)
        threading.Thread(target=_pump, args=(proc.stdout, lines.put), daemon=True).start()
        threading.Thread(target=_pump, args=(proc.stderr, errors.append), daemon=True).start()
        current, stage = remaining[0], "start"
        started = False  # the interpreter and its imports get a grace period
        while True:
            try:
                line = lines.get(timeout=timeout if started else timeout + 60)
            except queue.Empty:
                proc.kill()
                proc.wait()
                why = f"no progress in {timeout:g} s (killed)"
                break
            started = True
            if line is None:
                code = proc.wait()
                why = f"worker exited with {code}" + (
                    f"; stderr: {' | '.join(e for e in errors if e)}" if errors else ""
                )
                break
            event = json.loads(line)
            if event["event"] == "start":
                current, stage = event["file"], "start"
            elif event["event"] == "stage":
                stage = event["stage"]
            elif event["event"] == "report":
                report = _report_from_json(event["report"])
                out.append(report)
                if progress:
                    progress(report)
                remaining.remove(report.file)
        if not remaining:
            return
        if current in remaining:
            crashed = _crash_report(current, stage, why)
            out.append(crashed)
            if progress:
                progress(crashed)
            remaining.remove(current)


def _pump(stream: Any, put: Callable[[Any], None]) -> None:
    for line in stream:
        put(line.rstrip("\n"))
    put(None)


def check_paths(
    paths: Sequence[str],
    *,
    root: str = "",
    isolate: bool = True,
    jobs: int = 1,
    timeout: float = 120.0,
    seed: int = 0,
    per_column: int = 4,
    combos: int = 4,
    progress: Callable[[FileReport], None] | None = None,
) -> Summary:
    """Checks every file; with ``isolate``, in ``jobs`` worker processes side by side."""
    options = {"seed": seed, "per_column": per_column, "combos": combos}
    summary = Summary(root)
    if not isolate:
        con = duckdb_referee()
        try:
            for path in paths:
                report = check_file(path, con=con, seed=seed, per_column=per_column, combos=combos)
                summary.reports.append(report)
                if progress:
                    progress(report)
        finally:
            con.close()
        return summary
    shares = [list(paths[i::jobs]) for i in range(max(jobs, 1))]
    results: list[list[FileReport]] = [[] for _ in shares]
    threads = [
        threading.Thread(
            target=_run_worker_chain, args=(share, options, timeout, results[i], progress)
        )
        for i, share in enumerate(shares)
        if share
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    order = {p: i for i, p in enumerate(paths)}
    summary.reports = sorted((r for rs in results for r in rs), key=lambda r: order[r.file])
    return summary


def _worker(options: dict[str, Any]) -> None:
    """The worker's loop: file paths (JSON) on stdin; start, stage and report events
    (JSON lines) on stdout, flushed, so the parent knows where a crash happened."""
    paths = json.loads(sys.stdin.read())
    out = sys.stdout
    sys.stdout = sys.stderr  # a stray print must not corrupt the event stream

    def emit(event: dict[str, Any]) -> None:
        out.write(json.dumps(event) + "\n")
        out.flush()

    con = duckdb_referee()
    for path in paths:
        emit({"event": "start", "file": path})
        try:
            report = check_file(
                path, con=con, stage=lambda s: emit({"event": "stage", "stage": s}), **options
            )
        except Exception:  # the harness's own failure: reported, the run goes on
            report = FileReport(path)
            report.add("harness error", "referee-error", detail=traceback.format_exc()[-500:])
        emit({"event": "report", "report": dataclasses.asdict(report)})


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", metavar="OPTIONS")
    args = parser.parse_args(argv)
    if args.worker is not None:
        _worker(json.loads(args.worker))


if __name__ == "__main__":
    main()


__all__ = [
    "FAILING",
    "KINDS",
    "FileReport",
    "Outcome",
    "Summary",
    "check_file",
    "check_paths",
    "find_parquet_files",
]
