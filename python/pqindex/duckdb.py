"""``pqindex.duckdb``: pqindex scans as DuckDB tables, pruned by DuckDB's own filters.

DuckDB (2.0) pushes a query's columns and filters into a pyarrow Dataset it is given: it
calls the dataset's ``scanner(columns=, filter=)`` with the filter as a pyarrow compute
Expression, and drops its own filter, so the scanner must return exactly the rows the
Expression keeps. DuckDB calls that method through the object's class, so a Python
subclass of ``pyarrow.dataset.InMemoryDataset`` that overrides it receives the pushdown.
``dataset()`` builds one declaring the scan's schema over no rows (strings as ``string``,
never a view type, which makes DuckDB push no filter at all).

Its ``scanner`` translates the Expression into pqindex's structured predicate (widening
only: a part it cannot express is dropped under AND and makes an enclosing OR unknown, NOT
is taken only of exact parts), plans a pqindex scan with it and the columns needed, and
filters every batch with the Expression itself, under pyarrow's semantics (which DuckDB
checked are its own before pushing the filter). LIMIT and join filters are not pushed;
the reader is pulled lazily, so a LIMIT stops reading early.

None of this is a documented DuckDB or pyarrow contract: neither that DuckDB dispatches
``scanner`` through the class, nor that pyarrow lets Python subclass a Dataset. So the
first ``dataset()`` of a process runs a tiny query over such a subclass, and if DuckDB does
not call its ``scanner`` or gets other rows, ``dataset()`` returns an ``ArrowStream``
instead: every column of a scan planned afresh per query, read whole by DuckDB, correct
but without pushdown (``pushdown_supported()`` says which).
"""

from __future__ import annotations

import ctypes
import functools
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from pqindex import _engine_literals as lit
from pqindex._engine_literals import Predicate

if TYPE_CHECKING:
    from pqindex._native import Scan, StorageOptions

_COMPARISONS = {
    "equal": "=",
    "not_equal": "!=",
    "less": "<",
    "less_equal": "<=",
    "greater": ">",
    "greater_equal": ">=",
}
_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
# pyarrow's SetLookupOptions.null_matching_behavior.
_MATCH, _SKIP, _EMIT_NULL = 0, 1, 2


def dataset(
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
) -> PqindexDataset | ArrowStream:
    """``source`` (anything ``pqindex.scan`` takes, with its options) as an object for
    ``con.register`` or a replacement scan; each query plans a scan of its own.

    The schema is planned now, so a missing source or a bad option fails here.
    ``on_scan`` is called with each planned ``pqindex.Scan`` (its ``metrics()`` say what
    was pruned once the query has read it).
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
    schema = _without_views(pa.schema(pqindex.scan(source, **options)))
    if pushdown_supported():
        return PqindexDataset(source, options, schema, on_scan)
    return ArrowStream(source, options, schema, on_scan)


def _without_views(schema: Any) -> Any:
    """``schema`` with view types as their plain counterparts: a file written with views
    reads back as views, and DuckDB pushes no filter into a dataset declaring one."""

    def plain(kind: Any) -> Any:
        t = pa.types
        if t.is_string_view(kind):
            return pa.large_string()
        if t.is_binary_view(kind):
            return pa.large_binary()
        if t.is_list(kind) or t.is_large_list(kind):
            item = kind.value_field
            make = pa.list_ if t.is_list(kind) else pa.large_list
            return make(item.with_type(plain(item.type)))
        if t.is_struct(kind):
            return pa.struct(
                [kind.field(i).with_type(plain(kind.field(i).type)) for i in range(kind.num_fields)]
            )
        return kind

    return pa.schema([f.with_type(plain(f.type)) for f in schema], metadata=schema.metadata)


def register(con: Any, name: str, source: Any, **scan_options: Any) -> Any:
    """Register ``source`` as the view ``name`` of the DuckDB connection ``con``."""
    return con.register(name, dataset(source, **scan_options))


class ArrowStream:
    """A source's rows as an Arrow stream, every column of a scan planned afresh each time
    the stream is opened (what DuckDB reads when it does not push into a dataset)."""

    def __init__(
        self,
        source: Any,
        options: dict[str, Any],
        schema: Any,
        on_scan: Callable[[Scan], object] | None,
    ) -> None:
        self._source = source
        self._options = options
        self.schema = schema
        self._on_scan = on_scan

    def __arrow_c_schema__(self) -> object:
        return self.schema.__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        import pqindex

        planned = pqindex.scan(self._source, **self._options)
        if self._on_scan is not None:
            self._on_scan(planned)
        return planned.__arrow_c_stream__(requested_schema)


class PqindexDataset(ds.InMemoryDataset):  # type: ignore[misc]
    """A Dataset declaring a pqindex source's schema whose ``scanner`` reads it, pruned by
    the filter it is given and filtered by it exactly. Other Dataset methods
    (``to_table``, ``to_batches``, ``head``, ``count_rows``) go through ``scanner`` too."""

    def __init__(
        self,
        source: Any,
        options: dict[str, Any],
        schema: Any,
        on_scan: Callable[[Scan], object] | None = None,
    ) -> None:
        super().__init__(schema.empty_table())
        self._source = source
        self._options = options
        self._declared = schema
        self._on_scan = on_scan

    def scanner(
        self, columns: Sequence[str] | None = None, filter: Any = None, **kwargs: Any
    ) -> Scanner:
        """The rows ``filter`` keeps, narrowed to ``columns``; other options are ignored."""
        return Scanner(self._read, self._declared, columns, filter)

    def _read(self, columns: list[str], where: Predicate | None) -> Iterator[Any]:
        import pqindex

        try:
            planned = pqindex.scan(self._source, where=where, columns=columns, **self._options)
        except (pqindex.PredicateError, pqindex.UnsupportedError):
            if where is None:
                raise
            # A translation pqindex cannot plan prunes nothing; the filter is still applied.
            planned = pqindex.scan(self._source, columns=columns, **self._options)
        if self._on_scan is not None:
            self._on_scan(planned)
        return _batches(planned)


def _batches(scan: Scan) -> Iterator[Any]:
    reader = pa.RecordBatchReader.from_stream(scan)
    try:
        yield from reader
    finally:
        reader.close()


class Scanner:
    """What ``PqindexDataset.scanner`` returns: a plan that reads when asked for rows."""

    def __init__(
        self,
        read: Callable[[list[str], Predicate | None], Iterator[Any]],
        schema: Any,
        columns: Sequence[str] | None,
        filter: Any,
    ) -> None:
        if filter is not None and not isinstance(filter, pc.Expression):
            raise TypeError(f"filter must be a pyarrow compute Expression, not {filter!r}")
        self._read = read
        self.dataset_schema = schema
        self._names = list(schema.names if columns is None else columns)
        self.projected_schema = pa.schema([schema.field(c) for c in self._names])
        self._filter = filter
        self._where = None if filter is None else _pruning(filter, schema)
        referenced = None if filter is None else referenced_columns(filter)
        if referenced is None:
            # An Expression that does not serialise: read every column so it can filter.
            needed = set(schema.names) if filter is not None else set(self._names)
        else:
            needed = set(self._names) | referenced
        # A row count asks for no column: one column still carries the rows.
        self._columns = [c for c in schema.names if c in needed] or schema.names[:1]

    @property
    def predicate(self) -> Predicate | None:
        """The pqindex predicate the scan is pruned with (wider than the filter)."""
        return self._where

    def to_batches(self) -> Iterator[Any]:
        batches = self._read(self._columns, self._where)
        return self._filtered(batches)

    def _filtered(self, batches: Iterator[Any]) -> Iterator[Any]:
        read = pa.schema([self.dataset_schema.field(c) for c in self._columns])
        for batch in batches:
            batch = batch.select(self._columns)
            if batch.schema != read:
                batch = batch.cast(read)  # views, as declared
            if self._filter is not None:
                batch = batch.filter(self._filter)
            yield batch.select(self._names)

    def to_reader(self) -> Any:
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def to_table(self) -> Any:
        return pa.Table.from_batches(list(self.to_batches()), schema=self.projected_schema)

    def head(self, num_rows: int) -> Any:
        kept, count = [], 0
        batches = self.to_batches()
        for batch in batches:
            if count >= num_rows:
                break
            kept.append(batch.slice(0, num_rows - count))
            count += kept[-1].num_rows
        return pa.Table.from_batches(kept, schema=self.projected_schema)

    def count_rows(self) -> int:
        return sum(batch.num_rows for batch in self.to_batches())

    def take(self, indices: Any) -> Any:
        return self.to_table().take(indices)


@functools.cache
def pushdown_supported() -> bool:
    """Whether DuckDB calls a Dataset subclass's ``scanner`` and returns its rows as they
    are: a query over a three-row probe, once per process."""
    try:
        import duckdb
    except ImportError:
        return False
    table = pa.table({"a": pa.array([1, 2, 3], pa.int64()), "s": ["x", "y", "z"]})
    calls: list[tuple[Any, Any]] = []

    class Probe(ds.InMemoryDataset):  # type: ignore[misc]
        def scanner(
            self, columns: Sequence[str] | None = None, filter: Any = None, **kwargs: Any
        ) -> Scanner:
            calls.append((columns, filter))
            return Scanner(
                lambda names, where: iter(table.to_batches()), table.schema, columns, filter
            )

    try:
        con = duckdb.connect()
        try:
            con.register("pqindex_probe", Probe(table.schema.empty_table()))
            rows = con.sql("SELECT s FROM pqindex_probe WHERE a > 1 ORDER BY s").fetchall()
        finally:
            con.close()
    except Exception:
        return False
    return bool(calls) and rows == [("y",), ("z",)]


# The Expression's structure.


@dataclass(frozen=True)
class _Call:
    name: str
    args: tuple[_Node, ...]
    options: Any  # a pyarrow StructScalar of the function's options, or None


@dataclass(frozen=True)
class _Field:
    path: tuple[str, ...]


@dataclass(frozen=True)
class _Literal:
    scalar: Any


_Node = _Call | _Field | _Literal


class _ArrowSchema(ctypes.Structure):
    """The Arrow C data interface's ArrowSchema."""

    _fields_ = (
        ("format", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("metadata", ctypes.c_void_p),
        ("flags", ctypes.c_int64),
        ("n_children", ctypes.c_int64),
        ("children", ctypes.c_void_p),
        ("dictionary", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    )


_RELEASE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _metadata_pairs(schema: Any) -> list[tuple[str, str]]:
    """A schema's key-value metadata in order, repeated keys kept (``schema.metadata`` is
    a dict), read from its export through the C data interface, whose encoding is
    specified: an int32 count, then each key and value as an int32 length and bytes."""
    exported = _ArrowSchema()
    schema._export_to_c(ctypes.addressof(exported))
    try:
        pairs: list[tuple[str, str]] = []
        address = exported.metadata
        if not address:
            return pairs

        def int32(at: int) -> int:
            value: int = struct.unpack("<i", ctypes.string_at(at, 4))[0]
            return value

        (count, offset) = int32(address), 4
        for _ in range(count):
            texts = []
            for _part in range(2):
                length = int32(address + offset)
                texts.append(ctypes.string_at(address + offset + 4, length).decode())
                offset += 4 + length
            pairs.append((texts[0], texts[1]))
        return pairs
    finally:
        if exported.release:
            _RELEASE(exported.release)(ctypes.addressof(exported))


def expression_tree(expression: Any) -> _Node | None:
    """The tree of a pyarrow compute Expression, from its own serialisation (what pickling
    it writes): an Arrow IPC file whose schema metadata lists the nodes in prefix order
    (``call``/``end``, ``field_ref``, ``nested_field_ref``, ``literal``, ``options``) and
    whose columns hold the literals and options as typed one-row arrays."""
    try:
        _deserialize, (buffer,) = expression.__reduce__()
        reader = pa.ipc.open_file(buffer)
        pairs = _metadata_pairs(reader.schema)
        values = reader.get_batch(0) if reader.num_record_batches else None
    except Exception:
        return None
    position = 0

    def scalar(index: str) -> Any:
        if values is None:
            raise ValueError("no literal columns")
        return values.column(int(index))[0]

    def node() -> _Node:
        nonlocal position
        key, value = pairs[position]
        position += 1
        if key == "literal":
            return _Literal(scalar(value))
        if key == "field_ref":
            return _Field((value,))
        if key == "nested_field_ref":
            path: list[str] = []
            for _ in range(int(value)):
                part = node()
                if not isinstance(part, _Field):
                    raise ValueError("a nested field reference holds field references")
                path.extend(part.path)
            return _Field(tuple(path))
        if key == "call":
            args: list[_Node] = []
            options = None
            while pairs[position][0] != "end":
                if pairs[position][0] == "options":
                    options = scalar(pairs[position][1])
                    position += 1
                else:
                    args.append(node())
            position += 1
            return _Call(value, tuple(args), options)
        raise ValueError(f"unknown expression node {key!r}")

    try:
        tree = node()
    except (IndexError, ValueError, KeyError):
        return None
    return tree if position == len(pairs) else None


def referenced_columns(expression: Any) -> set[str] | None:
    """The top-level columns an Expression reads, or None if it does not serialise."""
    tree = expression_tree(expression)
    if tree is None:
        return None
    found: set[str] = set()
    pending: list[_Node] = [tree]
    while pending:
        current = pending.pop()
        if isinstance(current, _Field):
            found.add(current.path[0])
        elif isinstance(current, _Call):
            pending.extend(current.args)
    return found


def translate(expression: Any, schema: Any) -> Predicate | None:
    """pqindex's structured predicate keeping at least the rows the pyarrow Expression
    keeps over ``schema`` (pyarrow's semantics), or None when nothing of it can prune."""
    tree = expression_tree(expression)
    if tree is None:
        return None
    translated = _Translator(schema).predicate(tree)
    return None if translated is None else translated.expr


def _pruning(expression: Any, schema: Any) -> Predicate | None:
    """The translation, or None (no pruning) for an Expression it fails on: pruning is
    optional, the rows come out right either way."""
    try:
        return translate(expression, schema)
    except Exception:
        return None


@dataclass(frozen=True)
class _Translated:
    """A pqindex predicate and whether it is exact: true, false and NULL on exactly the
    rows where the Expression is (only an exact one may be negated)."""

    expr: Predicate
    exact: bool


def _and(parts: Sequence[_Translated], exact: bool = True) -> _Translated | None:
    args: list[Predicate] = []
    for part in parts:
        expr = part.expr
        args.extend(expr["args"] if expr.get("op") == "and" else [expr])
    # TRUE is AND's identity, NULLs included.
    args = [a for a in args if a != {"lit": True}] or args[:1]
    if not args:
        return None
    exact = exact and all(p.exact for p in parts)
    return _Translated(args[0] if len(args) == 1 else {"op": "and", "args": args}, exact)


def _or(parts: Sequence[_Translated], exact: bool = True) -> _Translated:
    args: list[Predicate] = []
    for part in parts:
        expr = part.expr
        args.extend(expr["args"] if expr.get("op") == "or" else [expr])
    # FALSE is OR's identity, NULLs included.
    args = [a for a in args if a != {"lit": False}] or args[:1]
    exact = exact and all(p.exact for p in parts)
    return _Translated(args[0] if len(args) == 1 else {"op": "or", "args": args}, exact)


def _widened(part: _Translated | None) -> _Translated | None:
    return None if part is None else _Translated(part.expr, False)


_FALSE = _Translated(lit.boolean(False), True)


class _Translator:
    """One Expression's translation, against the declared schema."""

    def __init__(self, schema: Any) -> None:
        self.schema = schema

    def predicate(self, node: _Node) -> _Translated | None:
        if isinstance(node, _Literal):
            scalar = node.scalar
            if pa.types.is_boolean(scalar.type) or pa.types.is_null(scalar.type):
                return _Translated(lit.boolean(scalar.as_py()), True)
            return None
        if isinstance(node, _Field):
            kind = self.field_type(node)
            if kind is None or not pa.types.is_boolean(kind):
                return None
            return _Translated(self.column(node), True)
        name, args = node.name, node.args
        if name in ("and_kleene", "and", "and_") and len(args) == 2:
            kept = [t for t in map(self.predicate, args) if t is not None]
            # Leaving a side out keeps more rows: still a widening, no longer exact. Plain
            # "and" is NULL where either side is, unlike SQL: never exact.
            return _and(kept, exact=len(kept) == 2 and name == "and_kleene")
        if name in ("or_kleene", "or", "or_") and len(args) == 2:
            sides = [self.predicate(a) for a in args]
            if sides[0] is None or sides[1] is None:
                return None
            return _or([sides[0], sides[1]], exact=name == "or_kleene")
        if name == "invert" and len(args) == 1:
            child = self.predicate(args[0])
            if child is None or not child.exact:
                return None
            return _Translated(lit.call("not", child.expr), True)
        if name in ("is_null", "is_valid") and len(args) == 1:
            return self.null_test(name == "is_null", args[0], node.options)
        if name == "is_nan" and len(args) == 1:
            kind = self.field_type(args[0])
            nan = None if kind is None else _nan(kind)
            if not isinstance(args[0], _Field) or nan is None:
                return None
            return _Translated(lit.call("=", self.column(args[0]), nan), True)
        if name in _COMPARISONS and len(args) == 2:
            return self.comparison(_COMPARISONS[name], args[0], args[1])
        if name == "is_in" and len(args) == 1:
            return self.membership(args[0], node.options)
        if name == "if_else" and len(args) == 3:
            return self.if_else(*args)
        return None

    def field_type(self, node: _Node) -> Any:
        """The value type of a field reference, or None (not a field, or not found)."""
        if not isinstance(node, _Field):
            return None
        kind: Any = self.schema
        for depth, part in enumerate(node.path):
            fields = kind if depth == 0 else (kind if pa.types.is_struct(kind) else None)
            if fields is None:
                return None
            index = fields.get_field_index(part)
            if index < 0:
                return None
            kind = fields.field(index).type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        return kind

    def column(self, node: _Field) -> Predicate:
        path = node.path
        return {"col": path[0] if len(path) == 1 else list(path)}

    def null_test(self, is_null: bool, operand: _Node, options: Any) -> _Translated | None:
        kind = self.field_type(operand)
        if kind is None or not isinstance(operand, _Field):
            return None
        column = self.column(operand)
        test = _Translated(lit.call("is_null" if is_null else "is_not_null", column), True)
        nan_is_null = options is not None and bool(options["nan_is_null"].as_py())
        if not nan_is_null or not pa.types.is_floating(kind):
            return test
        nan = _nan(kind)
        if nan is None:
            return None
        if is_null:
            return _or([test, _Translated(lit.call("=", column, nan), True)])
        return _and([test, _Translated(lit.call("!=", column, nan), True)])

    def comparison(self, op: str, left: _Node, right: _Node) -> _Translated | None:
        if isinstance(left, _Literal) and isinstance(right, _Field):
            left, right, op = right, left, _FLIPPED[op]
        kind = self.field_type(left)
        if kind is None or not isinstance(left, _Field):
            return None
        column = self.column(left)
        if isinstance(right, _Field):
            # x != x is how a NaN test reads (NaN alone is unequal to itself).
            if right.path == left.path and op == "!=" and (nan := _nan(kind)) is not None:
                return _Translated(lit.call("=", column, nan), True)
            return None
        if not isinstance(right, _Literal) or not _comparable(kind, right.scalar.type):
            return None
        literal = lit.arrow_scalar(right.scalar)
        if literal is None:
            return None
        if not pa.types.is_floating(kind):
            return _Translated(lit.call(op, column, literal), True)
        # pyarrow compares floats as IEEE 754 does: NaN is unequal to everything and
        # neither above nor below it; pqindex orders NaN above every number, equal to
        # itself. Both take -0.0 for 0.0.
        value = right.scalar.as_py()
        if value is not None and value != value:
            if op == "!=":
                return _Translated(lit.call("is_not_null", column), False)
            return _Translated(lit.call(op, column, literal), False)
        return _Translated(lit.call(op, column, literal), op not in (">", ">="))

    def membership(self, operand: _Node, options: Any) -> _Translated | None:
        """``is_in``: a NULL row matches a NULL in the set under MATCH and nothing under
        SKIP (never NULL), is NULL under EMIT_NULL; a NULL in the set otherwise matches no
        value. pyarrow compares floats by their bits (-0.0 is not 0.0), pqindex as numbers:
        wider."""
        kind = self.field_type(operand)
        if kind is None or not isinstance(operand, _Field) or options is None:
            return None
        value_set = options["value_set"].values
        behaviour = _null_matching(options)
        if value_set is None or behaviour is None or not _comparable(kind, value_set.type):
            return None
        column = self.column(operand)
        literals = []
        has_null = False
        for scalar in value_set:
            if not scalar.is_valid:
                has_null = True
                continue
            literal = lit.arrow_scalar(scalar)
            if literal is None:
                return None
            literals.append(literal)
        exact = not pa.types.is_floating(kind)
        member = _Translated(lit.call("in", column, *literals), exact) if literals else _FALSE
        if behaviour == _EMIT_NULL:
            return member
        if behaviour == _MATCH and has_null:
            null = _Translated(lit.call("is_null", column), True)
            return null if not literals else _or([member, null])
        if behaviour in (_MATCH, _SKIP):
            return _and([_Translated(lit.call("is_not_null", column), True), member])
        return _widened(member)

    def if_else(self, condition: _Node, then: _Node, otherwise: _Node) -> _Translated | None:
        """A row is kept where the condition holds and ``then`` does, or where it does not
        and ``otherwise`` does: widened to (condition AND then) OR otherwise, a NULL or
        false branch left out. ``if_else(is_valid(x), is_in(x, ...), null)`` (how DuckDB
        hands over IN) is SQL's IN exactly."""
        strict = self.strict_membership(condition, then, otherwise)
        if strict is not None:
            return strict
        parts = []
        if not _never_true(then):
            translated = self.predicate(then)
            if translated is None:
                return None
            guard = self.predicate(condition)
            kept = _and([t for t in (guard, translated) if t is not None])
            if kept is not None:
                parts.append(kept)
        if not _never_true(otherwise):
            translated = self.predicate(otherwise)
            if translated is None:
                return None
            parts.append(translated)
        if not parts:
            return _Translated(lit.boolean(False), False)
        return _widened(_or(parts))

    def strict_membership(
        self, condition: _Node, then: _Node, otherwise: _Node
    ) -> _Translated | None:
        if not (
            isinstance(condition, _Call)
            and condition.name == "is_valid"
            and len(condition.args) == 1
            and isinstance(then, _Call)
            and then.name == "is_in"
            and then.args == condition.args
            and isinstance(otherwise, _Literal)
            and not otherwise.scalar.is_valid
            and then.options is not None
        ):
            return None
        operand = then.args[0]
        kind = self.field_type(operand)
        value_set = then.options["value_set"].values
        if kind is None or not isinstance(operand, _Field) or value_set is None:
            return None
        if value_set.null_count or not _comparable(kind, value_set.type):
            return None
        literals = [lit.arrow_scalar(s) for s in value_set]
        if not literals or any(x is None for x in literals):
            return None
        args = [x for x in literals if x is not None]
        exact = not pa.types.is_floating(kind)
        return _Translated(lit.call("in", self.column(operand), *args), exact)


def _null_matching(options: Any) -> int | None:
    """SetLookupOptions' NULL handling (older pyarrow spells it ``skip_nulls``)."""
    names = {options.type.field(i).name for i in range(options.type.num_fields)}
    if "null_matching_behavior" in names:
        return int(options["null_matching_behavior"].as_py())
    if "skip_nulls" in names:
        return _SKIP if options["skip_nulls"].as_py() else _MATCH
    return None


def _never_true(node: _Node) -> bool:
    """A literal false or NULL, which keeps no row."""
    if not isinstance(node, _Literal):
        return False
    scalar = node.scalar
    return not scalar.is_valid or (pa.types.is_boolean(scalar.type) and scalar.as_py() is False)


def _nan(kind: Any) -> Predicate | None:
    if pa.types.is_float64(kind):
        return lit.floating("NaN")
    if pa.types.is_float32(kind):
        return lit.floating("NaN", "REAL")
    return None


def _comparable(column: Any, value: Any) -> bool:
    """Whether pqindex compares a column of type ``column`` with a literal of type
    ``value`` as pyarrow does: same kind of value (numbers with numbers, an instant with
    an instant, a wall clock with a wall clock)."""
    t = pa.types
    if t.is_dictionary(value):
        value = value.value_type
    if t.is_null(value):
        return True
    if t.is_integer(column):
        return bool(t.is_integer(value))
    if t.is_floating(column):
        return bool((t.is_floating(value) and not t.is_float16(value)) or t.is_integer(value))
    checks = (
        lambda k: t.is_string(k) or t.is_large_string(k) or t.is_string_view(k),
        lambda k: (
            t.is_binary(k)
            or t.is_large_binary(k)
            or t.is_fixed_size_binary(k)
            or t.is_binary_view(k)
        ),
        t.is_boolean,
        t.is_date32,
        t.is_time,
        t.is_decimal,
    )
    for check in checks:
        if check(column):
            return bool(check(value))
    if t.is_timestamp(column):
        return bool(t.is_timestamp(value) and (value.tz is None) == (column.tz is None))
    return False
