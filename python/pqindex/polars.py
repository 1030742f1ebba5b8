"""``pqindex.polars.scan``: a pqindex scan as a polars LazyFrame.

polars hands an IO plugin (``polars.io.plugins.register_io_source``) the columns a query
needs, its predicate and a row limit, and applies neither the predicate nor the limit
again: the source must yield exactly the rows ``predicate`` keeps among the first
``n_rows``. So every batch is filtered by polars itself with the expression it handed
over; pqindex only prunes with a translation of that expression into its structured
predicate (``docs/predicates.md``), which may keep more rows than the expression, never
fewer: a part it cannot express is dropped under AND and makes an enclosing OR unknown,
and NOT is taken only of parts translated exactly (NULLs included).

The limit comes before the predicate (``lf.head(2).filter(...)`` hands over both), so with
a limit the first ``n_rows`` rows are read unpruned and then filtered.

polars and pqindex compare alike where it matters: floats in one total order (NaN above
every number and equal to itself, -0.0 equal to 0.0), strings by their bytes, zoned
timestamps as instants in any unit, NULL as SQL does (``eq_missing`` and ``is_in`` with
``nulls_equal`` are spelled out with IS NULL). NaN and infinite literals reach the source
as JSON ``null`` and are not translated; neither are regexes beyond literals joined by
``.`` wildcards, nor anything computed (arithmetic, two columns, string lengths). A cast
that keeps order is looked through; a 64-bit integer cast to Float64, which rounds, is
compared as the integer with bounds a double's step wider.

The expression's structure is visible only through ``Expr.meta.serialize(format="json")``,
which polars documents as unstable across versions. Translation is on only for the polars
versions whose JSON was checked (``TESTED_POLARS``) and after a probe of the running polars
gives the shapes expected; otherwise scans read without pruning and polars filters, which
is slower but as exact.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl
from polars.io.plugins import register_io_source

from pqindex import _engine_literals as lit
from pqindex._engine_literals import Predicate

if TYPE_CHECKING:
    from pqindex._native import Scan, StorageOptions

#: polars versions (major.minor) whose predicate JSON the translation was written against.
TESTED_POLARS = ("2.1",)

_COMPARISONS = {"Eq": "=", "NotEq": "!=", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}
_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_UNITS = {"Nanoseconds": "ns", "Microseconds": "us", "Milliseconds": "ms"}

_SIGNED = {"Int8": 8, "Int16": 16, "Int32": 32, "Int64": 64, "Int128": 128}
_UNSIGNED = {"UInt8": 8, "UInt16": 16, "UInt32": 32, "UInt64": 64, "UInt128": 128}
#: Integers a double holds exactly: a wider one compared with a Float64 column is rounded.
_EXACT_IN_DOUBLE = 2**53
#: Regex characters that are not themselves; escaped they are.
_REGEX_META = frozenset("\\.+*?()|[]{}^$")


def scan(
    source: Any,
    *,
    batch_size: int | None = None,
    threads: int | None = None,
    catalog: bool = True,
    storage_options: StorageOptions | None = None,
    version: int | None = None,
    timestamp: Any = None,
    snapshot_id: int | None = None,
    keys: Any = None,
    on: str | Sequence[str] | None = None,
    read_ahead: int | None = None,
    on_scan: Callable[[Scan], object] | None = None,
) -> pl.LazyFrame:
    """A LazyFrame over ``source`` (anything ``pqindex.scan`` takes, with its options) whose
    filters prune files, row groups and pages before polars sees a row.

    The schema is planned now, so a missing source or a bad option fails here. Each
    ``collect`` plans a scan of its own with the query's columns and predicate; ``on_scan``
    is called with each planned ``pqindex.Scan`` (its ``metrics()`` and ``explain()`` say
    what was pruned once the query has read it).
    """
    import pqindex

    options: dict[str, Any] = {"catalog": catalog}
    for name, value in (
        ("batch_size", batch_size),
        ("threads", threads),
        ("storage_options", storage_options),
        ("version", version),
        ("timestamp", timestamp),
        ("snapshot_id", snapshot_id),
        ("keys", keys),
        ("on", on),
        ("read_ahead", read_ahead),
    ):
        if value is not None:
            options[name] = value
    arrow_schema = _arrow_schema(pqindex.scan(source, string_view=True, **options))
    schema = pl.DataFrame(arrow_schema.empty_table()).schema
    names = list(schema)
    prune = pushdown_supported()

    def io_source(
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        if n_rows is not None and n_rows <= 0:
            return
        wanted = names if with_columns is None else list(with_columns)
        needed = set(wanted)
        where = None
        if predicate is not None:
            needed.update(predicate.meta.root_names())
            # A limit is taken before the predicate: pruning would change which rows are first.
            if prune and n_rows is None:
                where = _pruning(predicate, schema)
        # polars may ask for no column (a row count); one column still carries the rows.
        read = [c for c in names if c in needed] or names[:1]
        if predicate is not None:
            # What polars refuses (a comparison of mismatched types) fails even when pruning
            # leaves no batch to filter.
            pl.DataFrame(schema={c: schema[c] for c in read}).filter(predicate)
        # Without a pruning predicate the scan reads units in file order: its limit is the
        # first n_rows rows, and it stops fetching there.
        limit = n_rows if where is None else None
        try:
            planned = pqindex.scan(
                source, where=where, columns=read, string_view=True, limit=limit, **options
            )
        except (pqindex.PredicateError, pqindex.UnsupportedError):
            if where is None:
                raise
            # A translation pqindex cannot plan prunes nothing; polars still filters.
            planned = pqindex.scan(source, columns=read, string_view=True, **options)
        if on_scan is not None:
            on_scan(planned)
        yield from _frames(planned, predicate, wanted, n_rows)

    explain: dict[str, Any] = {
        "explain_name": "pqindex",
        "explain_detail": str(source) if isinstance(source, str) else type(source).__name__,
    }
    accepted = inspect.signature(register_io_source).parameters
    return register_io_source(
        io_source, schema=schema, **{k: v for k, v in explain.items() if k in accepted}
    )


def _pruning(predicate: pl.Expr, schema: Mapping[str, pl.DataType]) -> Predicate | None:
    """The translation, or None (no pruning) for an expression it fails on: pruning is
    optional, the rows come out right either way."""
    try:
        return translate(predicate, schema)
    except Exception:
        return None


def _arrow_schema(scan: Scan) -> Any:
    import pyarrow as pa

    return pa.schema(scan)


def _frames(
    scan: Scan, predicate: pl.Expr | None, wanted: list[str], n_rows: int | None
) -> Iterator[pl.DataFrame]:
    """The scan's batches as frames: the first ``n_rows`` rows, then filtered by polars."""
    import pyarrow as pa

    reader = pa.RecordBatchReader.from_stream(scan)
    left = n_rows
    try:
        for batch in reader:
            if left is not None:
                batch = batch.slice(0, left)
                left -= batch.num_rows
            frame = pl.DataFrame(batch)
            if predicate is not None:
                frame = frame.filter(predicate)
            if wanted:
                frame = frame.select(wanted)
            if frame.height:
                yield frame
            if left == 0:
                break
    finally:
        reader.close()


@functools.cache
def pushdown_supported() -> bool:
    """Whether predicates are translated: a tested polars version whose io source receives
    a probe predicate in the JSON shapes the translation reads."""
    if ".".join(pl.__version__.split(".")[:2]) not in TESTED_POLARS:
        return False
    try:
        return _probe()
    except Exception:
        return False


def _probe() -> bool:
    import datetime as dt

    schema = pl.Schema(
        [
            ("a", pl.Int64()),
            ("s", pl.String()),
            ("t", pl.Datetime("us", "UTC")),
            ("f", pl.Float32()),
        ]
    )
    received: list[pl.Expr | None] = []

    def source(
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        received.append(predicate)
        yield pl.DataFrame(schema=schema)

    utc = dt.timezone.utc
    expression = (
        (pl.col("a") > 3)
        & pl.col("s").str.starts_with("x")
        & pl.col("a").is_in([5, None])
        & pl.col("t").is_between(
            dt.datetime(2020, 1, 1, tzinfo=utc), dt.datetime(2021, 1, 1, tzinfo=utc), "left"
        )
        & ((pl.col("f") == 0.5) | pl.col("s").is_null())
    )
    register_io_source(source, schema=schema).filter(expression).collect()
    if len(received) != 1 or received[0] is None:
        return False
    got = translate(received[0], schema)
    a, s, t, f = (lit.column(c) for c in "astf")
    expected = [
        lit.call(">", a, lit.integer(3)),
        lit.call("starts_with", s, lit.string("x")),
        lit.call("in", a, lit.integer(5)),
        lit.call(">=", t, {"lit": "2020-01-01 00:00:00.000000+00:00", "type": "TIMESTAMPTZ"}),
        lit.call("<", t, {"lit": "2021-01-01 00:00:00.000000+00:00", "type": "TIMESTAMPTZ"}),
        lit.call("or", lit.call("=", f, lit.floating("0.5", "REAL")), lit.call("is_null", s)),
    ]
    return got is not None and _conjuncts(got) == sorted(json.dumps(e) for e in expected)


def _conjuncts(predicate: Predicate) -> list[str]:
    if predicate.get("op") == "and":
        return sorted(c for arg in predicate["args"] for c in _conjuncts(arg))
    return [json.dumps(predicate)]


def translate(predicate: pl.Expr, schema: Mapping[str, pl.DataType]) -> Predicate | None:
    """pqindex's structured predicate keeping at least the rows ``predicate`` keeps over a
    source of ``schema``, or None when nothing of it can prune. It reads the expression as
    polars hands it to an io source (optimised, literals typed)."""
    tree = json.loads(predicate.meta.serialize(format="json"), parse_float=str)
    translated = _Translator(schema).predicate(tree)
    return None if translated is None else translated.expr


@dataclass(frozen=True)
class _Translated:
    """A pqindex predicate and whether it is exact: true, false and NULL on exactly the
    rows where the polars expression is (only an exact one may be negated)."""

    expr: Predicate
    exact: bool


@dataclass(frozen=True)
class _Value:
    """A literal as polars typed it: ``kind`` names the value's type; floats are kept as
    their text, timestamps as (count, unit, zoned)."""

    kind: str
    value: Any


@dataclass(frozen=True)
class _Operand:
    """A column and the polars type it compares as: its own, or the one of a cast that
    keeps order. ``rounded`` marks a 64-bit integer cast to Float64, which polars rounds
    (pqindex casts no integer wider than 32 bits to DOUBLE): it compares as the bare
    column, widened by a double's step."""

    expr: Predicate
    dtype: pl.DataType
    cast: bool = False
    rounded: bool = False


def _and(parts: Sequence[_Translated]) -> _Translated | None:
    args: list[Predicate] = []
    for part in parts:
        expr = part.expr
        args.extend(expr["args"] if expr.get("op") == "and" else [expr])
    # TRUE is AND's identity, NULLs included.
    args = [a for a in args if a != {"lit": True}] or args[:1]
    if not args:
        return None
    exact = all(p.exact for p in parts)
    return _Translated(args[0] if len(args) == 1 else {"op": "and", "args": args}, exact)


def _or(parts: Sequence[_Translated]) -> _Translated:
    args: list[Predicate] = []
    for part in parts:
        expr = part.expr
        args.extend(expr["args"] if expr.get("op") == "or" else [expr])
    # FALSE is OR's identity, NULLs included.
    args = [a for a in args if a != {"lit": False}] or args[:1]
    expr = args[0] if len(args) == 1 else {"op": "or", "args": args}
    return _Translated(expr, all(p.exact for p in parts))


def _not(part: _Translated) -> _Translated | None:
    return _Translated(lit.call("not", part.expr), True) if part.exact else None


_FALSE = _Translated(lit.boolean(False), True)


class _Translator:
    """One expression's translation, against the source's schema."""

    def __init__(self, schema: Mapping[str, pl.DataType]) -> None:
        self.schema = schema

    # Boolean structure.

    def predicate(self, node: Any) -> _Translated | None:
        kind, body = _variant(node)
        if kind == "BinaryExpr":
            return self.binary(body)
        if kind == "Function":
            return self.function(body)
        if kind == "Ternary":
            return self.ternary(body)
        if kind == "Column":
            dtype = self.schema.get(body) if isinstance(body, str) else None
            return _Translated(lit.column(body), True) if dtype == pl.Boolean else None
        if kind == "Literal":
            value = self.value(node)
            if value is not None and value.kind in ("bool", "null"):
                return _Translated(lit.boolean(value.value), True)
        return None

    def binary(self, body: Any) -> _Translated | None:
        op, left, right = body.get("op"), body.get("left"), body.get("right")
        if op in ("And", "LogicalAnd"):
            kept = [t for t in (self.predicate(left), self.predicate(right)) if t is not None]
            translated = _and(kept)
            # Leaving a side out keeps more rows: still a widening, no longer exact.
            if translated is not None and len(kept) < 2:
                return _Translated(translated.expr, False)
            return translated
        if op in ("Or", "LogicalOr", "Xor"):
            a, b = self.predicate(left), self.predicate(right)
            if a is None or b is None:
                return None
            if op != "Xor":
                return _or([a, b])
            not_a, not_b = _not(a), _not(b)
            if not_a is None or not_b is None:
                return None
            both = [_and([a, not_b]), _and([not_a, b])]
            return _or([p for p in both if p is not None])
        if op in _COMPARISONS:
            return self.comparison(_COMPARISONS[op], left, right)
        if op in ("EqValidity", "NotEqValidity"):
            return self.missing(op == "EqValidity", left, right)
        return None

    def ternary(self, body: Any) -> _Translated | None:
        """``when(p).then(a).otherwise(b)`` keeps a row where p and a hold, or where b does:
        widened to (p AND a) OR b, with a NULL or false branch left out."""
        condition = self.predicate(body.get("predicate"))
        branches: list[_Translated | None] = []
        for key in ("truthy", "falsy"):
            node = body.get(key)
            if self.never_true(node):
                branches.append(None)
                continue
            translated = self.predicate(node)
            if translated is None:
                return None
            branches.append(translated)
        truthy, falsy = branches
        parts = []
        if truthy is not None:
            kept = _and([t for t in (condition, truthy) if t is not None])
            if kept is not None:
                parts.append(kept)
        if falsy is not None:
            parts.append(falsy)
        if not parts:
            return _Translated(lit.boolean(False), False)
        widened = parts[0] if len(parts) == 1 else _or(parts)
        return _Translated(widened.expr, False)

    def never_true(self, node: Any) -> bool:
        """A literal false or NULL (cast or not), which keeps no row."""
        kind, body = _variant(node)
        if kind == "Cast":
            return self.never_true(body.get("expr"))
        value = self.value(node) if kind == "Literal" else None
        return value is not None and (value.kind == "null" or value.value is False)

    # Functions.

    def function(self, body: Any) -> _Translated | None:
        inputs = body.get("input")
        function = body.get("function")
        if not isinstance(inputs, list) or not inputs:
            return None
        kind, spec = _variant(function)
        if kind == "Boolean":
            return self.boolean_function(spec, inputs)
        if kind == "StringExpr":
            return self.string_function(spec, inputs)
        return None

    def boolean_function(self, spec: Any, inputs: list[Any]) -> _Translated | None:
        name, options = _variant(spec)
        if name == "Not" and len(inputs) == 1:
            child = self.predicate(inputs[0])
            return None if child is None else _not(child)
        if name in ("IsNull", "IsNotNull") and len(inputs) == 1:
            operand = self.operand(inputs[0])
            if operand is None:
                return None
            return _Translated(lit.call(_snake(name), operand.expr), True)
        if name in ("IsNan", "IsNotNan") and len(inputs) == 1:
            operand = self.operand(inputs[0])
            nan = None if operand is None or operand.cast else _nan(operand.dtype)
            if operand is None or nan is None:
                return None
            # NaN equals itself in polars and in pqindex; NULL stays NULL in both.
            return _Translated(lit.call("=" if name == "IsNan" else "!=", operand.expr, nan), True)
        if name == "IsIn" and len(inputs) == 2 and isinstance(options, dict):
            return self.membership(inputs[0], inputs[1], bool(options.get("nulls_equal")))
        if name == "IsBetween" and len(inputs) == 3 and isinstance(options, dict):
            closed = options.get("closed")
            if closed not in ("Both", "Left", "Right", "None"):
                return None
            low = self.comparison(">=" if closed in ("Both", "Left") else ">", *inputs[:2])
            high = self.comparison(
                "<=" if closed in ("Both", "Right") else "<", inputs[0], inputs[2]
            )
            kept = [t for t in (low, high) if t is not None]
            translated = _and(kept)
            if translated is not None and len(kept) < 2:
                return _Translated(translated.expr, False)
            return translated
        return None

    def string_function(self, spec: Any, inputs: list[Any]) -> _Translated | None:
        name, options = _variant(spec)
        if len(inputs) != 2:
            return None
        operand = self.operand(inputs[0])
        pattern = self.value(inputs[1])
        if operand is None or operand.dtype != pl.String or pattern is None:
            return None
        if pattern.kind != "str":
            return None
        text: str = pattern.value
        if name in ("StartsWith", "EndsWith"):
            return _Translated(lit.call(_snake(name), operand.expr, lit.string(text)), True)
        if name == "Contains" and isinstance(options, dict):
            if options.get("literal"):
                return _Translated(lit.call("contains", operand.expr, lit.string(text)), True)
            return _regex(operand.expr, text)
        return None

    # Comparisons.

    def comparison(self, op: str, left: Any, right: Any) -> _Translated | None:
        operand, value = self.operand(left), self.value(right)
        if operand is None or value is None:
            operand, value, op = self.operand(right), self.value(left), _FLIPPED[op]
        if operand is None or value is None:
            return None
        if operand.rounded:
            return _rounded_comparison(op, operand.expr, value)
        literal = _literal(value, operand.dtype)
        if literal is None:
            return None
        return _Translated(lit.call(op, operand.expr, literal), True)

    def missing(self, equal: bool, left: Any, right: Any) -> _Translated | None:
        """``eq_missing``/``ne_missing``: NULL equals NULL only, and the answer is never NULL."""
        operand, value = self.operand(left), self.value(right)
        if operand is None or value is None:
            operand, value = self.operand(right), self.value(left)
        if operand is None or value is None or operand.rounded:
            return None
        if value.kind == "null":
            return _Translated(lit.call("is_null" if equal else "is_not_null", operand.expr), True)
        literal = _literal(value, operand.dtype)
        if literal is None:
            return None
        if equal:
            return _and(
                [
                    _Translated(lit.call("is_not_null", operand.expr), True),
                    _Translated(lit.call("=", operand.expr, literal), True),
                ]
            )
        return _or(
            [
                _Translated(lit.call("is_null", operand.expr), True),
                _Translated(lit.call("!=", operand.expr, literal), True),
            ]
        )

    def membership(self, column: Any, values: Any, nulls_equal: bool) -> _Translated | None:
        """``is_in``. Without ``nulls_equal`` a NULL in the list is ignored (no row is then
        NULL but the NULL ones, unlike SQL); with it, NULL rows match a listed NULL."""
        operand = self.operand(column)
        listed = self.list_values(values)
        if operand is None or listed is None or operand.rounded:
            return None
        literals = []
        has_null = False
        for value in listed:
            if value.kind == "null":
                has_null = True
                continue
            literal = _literal(value, operand.dtype)
            if literal is None:
                return None
            literals.append(literal)
        member = _Translated(lit.call("in", operand.expr, *literals), True) if literals else _FALSE
        if not nulls_equal:
            return member if not has_null else _Translated(member.expr, False)
        if has_null:
            null = _Translated(lit.call("is_null", operand.expr), True)
            return null if not literals else _or([member, null])
        if not literals:
            return _FALSE
        return _and([_Translated(lit.call("is_not_null", operand.expr), True), member])

    # Operands and values.

    def operand(self, node: Any) -> _Operand | None:
        kind, body = _variant(node)
        if kind == "Column" and isinstance(body, str):
            dtype = self.schema.get(body)
            return None if dtype is None else _Operand(lit.column(body), dtype)
        if kind == "Cast" and isinstance(body, dict):
            inner = self.operand(body.get("expr"))
            target = _variant(body.get("dtype"))
            if inner is None or target[0] != "Literal" or not isinstance(target[1], str):
                return None
            return _cast(inner, target[1])
        return None

    def value(self, node: Any) -> _Value | None:
        kind, body = _variant(node)
        if kind != "Literal":
            return None
        form, scalar = _variant(body)
        if form == "Dyn":
            dyn, value = _variant(scalar)
            if dyn == "Int" and isinstance(value, int):
                return _Value("int", value)
            if dyn == "Float" and isinstance(value, str):
                return _Value("float64", value)
            if dyn == "Str" and isinstance(value, str):
                return _Value("str", value)
            return None
        if form != "Scalar":
            return None
        dtype, value = _variant(scalar)
        if dtype in _SIGNED or dtype in _UNSIGNED:
            return _Value("int", value) if isinstance(value, int) else None
        if dtype in ("Float64", "Float32"):
            # NaN and the infinities serialise as JSON null: which one is unknown.
            return _Value(dtype.lower(), value) if isinstance(value, str) else None
        if dtype == "String" and isinstance(value, str):
            return _Value("str", value)
        if dtype == "Boolean" and isinstance(value, bool):
            return _Value("bool", value)
        if dtype == "Binary" and isinstance(value, list):
            return _Value("bin", bytes(value))
        if dtype == "Date" and isinstance(value, int):
            return _Value("date", value)
        if dtype == "Time" and isinstance(value, int):
            return _Value("time", value)
        if dtype == "Datetime" and isinstance(value, list) and len(value) == 3:
            count, unit, zone = value
            if isinstance(count, int) and unit in _UNITS:
                return _Value("datetime", (count, _UNITS[unit], zone is not None))
            return None
        if dtype == "Decimal" and isinstance(value, list) and len(value) == 3:
            unscaled, _precision, scale = value
            if isinstance(unscaled, int) and isinstance(scale, int):
                return _Value("decimal", (unscaled, scale))
            return None
        if dtype == "Null":
            return _Value("null", None)
        return None

    def list_values(self, node: Any) -> list[_Value] | None:
        """The values of an ``is_in`` list: an Arrow IPC stream of one column."""
        kind, body = _variant(node)
        if kind != "Literal":
            return None
        form, scalar = _variant(body)
        dtype, payload = _variant(scalar)
        if form != "Scalar" or dtype != "List" or not isinstance(payload, list):
            return None
        import pyarrow as pa

        try:
            table = pa.ipc.open_stream(bytes(payload)).read_all()
        except (pa.ArrowException, ValueError):
            return None
        if table.num_columns != 1:
            return None
        values = []
        for scalar_value in table.column(0):
            value = _arrow_value(scalar_value)
            if value is None:
                return None
            values.append(value)
        return values


def _variant(node: Any) -> tuple[str | None, Any]:
    """A serde enum variant: ``{"Name": body}`` or a bare ``"Name"``."""
    if isinstance(node, str):
        return node, None
    if isinstance(node, dict) and len(node) == 1:
        ((name, body),) = node.items()
        return name, body
    return None, None


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def _cast(inner: _Operand, target: str) -> _Operand | None:
    """A cast that keeps the order of values: an integer into a wider integer or a
    Float32 or an integer into Float64. The column compares as itself (pqindex compares
    a column with a literal of a wider type exactly), except that a 64-bit integer cast
    to Float64 is rounded first."""
    source = str(inner.dtype)
    if inner.cast:
        return None
    if target == "Float64":
        if source == "Float32" or _SIGNED.get(source, 64) < 64 or _UNSIGNED.get(source, 64) < 64:
            return _Operand(inner.expr, pl.Float64(), cast=True)
        if source in _SIGNED or source in _UNSIGNED:
            return _Operand(inner.expr, pl.Float64(), cast=True, rounded=True)
        return None
    if target in _SIGNED or target in _UNSIGNED:
        wide = _SIGNED.get(target) or _UNSIGNED[target]
        if source in _SIGNED and target in _SIGNED and _SIGNED[source] <= wide:
            return _Operand(inner.expr, inner.dtype, cast=True)
        if source in _UNSIGNED and (
            (target in _UNSIGNED and _UNSIGNED[source] <= wide)
            or (target in _SIGNED and _UNSIGNED[source] < wide)
        ):
            return _Operand(inner.expr, inner.dtype, cast=True)
    return None


def _rounded_comparison(op: str, column: Predicate, value: _Value) -> _Translated | None:
    """``cast(x, Float64) op v`` for a 64-bit integer x, which polars rounds to a double
    first, as a comparison of x itself: rounding keeps order and keeps v, so the cast
    value passes ``> v`` only if x does, and ``>= v`` only if x passes ``> v``'s
    predecessor (a double's step below). Wider whether pqindex compares x with the double
    exactly or rounded."""
    if value.kind != "float64":
        return None
    v = float(value.value)
    if not math.isfinite(v):
        return None
    below, above = (
        lit.floating(math.nextafter(v, -math.inf)),
        lit.floating(math.nextafter(v, math.inf)),
    )
    exact = lit.floating(v)
    if op in (">", "<", "!="):
        return _Translated(lit.call(op, column, exact), False)
    if op == ">=":
        return _Translated(lit.call(">", column, below), False)
    if op == "<=":
        return _Translated(lit.call("<", column, above), False)
    return _Translated(
        lit.call("and", lit.call(">", column, below), lit.call("<", column, above)), False
    )


def _nan(dtype: pl.DataType) -> Predicate | None:
    if dtype == pl.Float64:
        return lit.floating("NaN")
    if dtype == pl.Float32:
        return lit.floating("NaN", "REAL")
    return None


def _literal(value: _Value, dtype: pl.DataType) -> Predicate | None:
    """``value`` as a literal compared with a column of ``dtype`` exactly as polars
    compares them, or None."""
    kind, v = value.kind, value.value
    if kind == "null":
        return lit.boolean(None)
    if dtype.is_integer():
        return lit.integer(v) if kind == "int" else None
    if dtype == pl.Float64:
        if kind == "float64":
            return lit.floating(v)
        if kind == "int" and abs(v) <= _EXACT_IN_DOUBLE:
            return lit.integer(v)
        return None
    if dtype == pl.Float32:
        return lit.floating(v, "REAL") if kind == "float32" else None
    if dtype == pl.String:
        return lit.string(v) if kind == "str" else None
    if dtype == pl.Binary:
        return lit.blob(v) if kind == "bin" else None
    if dtype == pl.Boolean:
        return lit.boolean(v) if kind == "bool" else None
    if dtype == pl.Date:
        return lit.date(v) if kind == "date" else None
    if dtype == pl.Time:
        return lit.time(v) if kind == "time" else None
    if isinstance(dtype, pl.Datetime):
        if kind != "datetime":
            return None
        count, unit, zoned = v
        # A zoned column compares instants, a naive one wall clocks; polars refuses a mix.
        if zoned != (dtype.time_zone is not None):
            return None
        return lit.timestamp(count, unit, zoned)
    if isinstance(dtype, pl.Decimal):
        return lit.decimal(*v) if kind == "decimal" else None
    return None


def _arrow_value(scalar: Any) -> _Value | None:
    """An element of an ``is_in`` list (a pyarrow scalar) as a polars-typed value."""
    import pyarrow as pa

    kind = scalar.type
    if not scalar.is_valid:
        return _Value("null", None)
    if pa.types.is_integer(kind):
        return _Value("int", int(scalar.as_py()))
    if pa.types.is_float64(kind) or pa.types.is_float32(kind):
        name = "float64" if pa.types.is_float64(kind) else "float32"
        rendered = lit.floating(float(scalar.as_py()))
        return _Value(name, rendered["lit"])
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return _Value("str", str(scalar.as_py()))
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_binary_view(kind):
        return _Value("bin", bytes(scalar.as_py()))
    if pa.types.is_boolean(kind):
        return _Value("bool", bool(scalar.as_py()))
    if pa.types.is_date32(kind):
        return _Value("date", int(scalar.value))
    if pa.types.is_timestamp(kind):
        return _Value("datetime", (int(scalar.value), kind.unit, kind.tz is not None))
    if pa.types.is_time64(kind) and kind.unit == "ns":
        return _Value("time", int(scalar.value))
    if pa.types.is_decimal(kind):
        parts = lit.decimal_parts(scalar.as_py())
        return None if parts is None else _Value("decimal", parts)
    return None


def _regex(column: Predicate, pattern: str) -> _Translated | None:
    """A regex search (``str.contains`` without ``literal``) as what pqindex can prune
    with: exact for a plain or anchored literal; otherwise, for literals joined by ``.``
    wildcards and optional characters, a LIKE of the literal runs (wider: ``%`` also
    matches the newline ``.`` does not); None for anything else (classes, groups,
    alternation, flags, escapes such as ``\\d``)."""
    i, n = 0, len(pattern)
    start = pattern.startswith("^")
    if start:
        i = 1
    end = False
    runs: list[list[str]] = [[]]
    while i < n:
        c = pattern[i]
        if c == "$" and i == n - 1:
            end = True
            break
        if c == "\\":
            if i + 1 >= n or pattern[i + 1] not in _REGEX_META:
                return None
            char, i = pattern[i + 1], i + 2
        elif c == ".":
            i += 1
            if i < n and pattern[i] in "*+?":
                i += 1
            if i < n and pattern[i] == "?":
                i += 1
            runs.append([])
            continue
        elif c in _REGEX_META:
            return None
        else:
            char, i = c, i + 1
        if i < n and pattern[i] == "{":
            return None
        if i < n and pattern[i] in "*?+":
            repeated = pattern[i] == "+"
            i += 1
            if i < n and pattern[i] == "?":
                i += 1
            if repeated:
                runs[-1].append(char)
            runs.append([])
            continue
        runs[-1].append(char)
    texts = ["".join(r) for r in runs]
    if len(texts) == 1:
        whole = lit.string(texts[0])
        if start and end:
            return _Translated(lit.call("=", column, whole), True)
        op = "starts_with" if start else "ends_with" if end else "contains"
        return _Translated(lit.call(op, column, whole), True)
    # Literal runs with a wildcard between each two, and around them unless anchored.
    pieces = [] if start else ["%"]
    for k, text in enumerate(texts):
        if k:
            pieces.append("%")
        if text:
            pieces.append(_like_escape(text))
    if not end:
        pieces.append("%")
    like = "".join(p for k, p in enumerate(pieces) if p != "%" or pieces[k - 1 : k] != ["%"])
    return _Translated({"op": "like", "args": [column, lit.string(like)], "escape": "\\"}, False)


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
