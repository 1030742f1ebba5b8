"""A condition's prunable filters, read on the client and confirmed by Spark.

Where Spark's own pushed filters are out of reach (a Spark Connect session, or a source
Spark cannot read), the condition is read on the client (``_sql`` for text, ``_column`` for
a Connect ``Column``) and nothing of that reading is trusted until Spark confirms it:

1. Spark types each literal (an analysis of ``SELECT <literals>``), but for those whose type
   their spelling fixes (``_literal_values.written_type``: integers, decimals, dates).
2. The reading is rendered back with every literal cast to the type of the column it is
   compared with, and Spark must analyse the rendering to the same plan as the caller's
   condition (``DataFrame.sameSemantics``). That one check proves the structure (operator
   precedence, what ``a.b`` names, BETWEEN, IN, LIKE) and the coercion: the comparison
   happens in the column's own type, with the literal cast to it, exactly as in the
   filters Spark pushes into a scan. A conjunct that fails (``int_col = 2.5``: Spark casts
   the column, not the literal) is left to Spark alone.
3. The cast literals' values, of the column's type, make the ``pyspark.sql.datasource``
   filters ``_predicate`` translates. Spark evaluates those not certain from their text
   (``_literal_values``).

So pqindex never interprets Spark SQL syntax or coercion itself; a reading Spark does not
confirm only costs pruning.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from pyspark.sql import types as T
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

from pqindex.spark import _coercion, _column, _condition, _literal_values, _sql
from pqindex.spark._condition import (
    AndNode,
    Between,
    BoolRef,
    Cmp,
    Condition,
    InList,
    Like,
    Lit,
    Node,
    NotNode,
    OrNode,
    Ref,
    StringFn,
)
from pqindex.spark._predicate import And, Or, Widened, resolve
from pqindex.spark._render import Casts, ColumnRenderer, SqlRenderer
from pqindex.spark._session import is_connect_column

_OPS: dict[str, type[Filter]] = {
    "=": EqualTo,
    "<": LessThan,
    "<=": LessThanOrEqual,
    ">": GreaterThan,
    ">=": GreaterThanOrEqual,
    "<=>": EqualNullSafe,
}
_SUPPORTED = (
    T.BooleanType,
    T.ByteType,
    T.ShortType,
    T.IntegerType,
    T.LongType,
    T.FloatType,
    T.DoubleType,
    T.DecimalType,
    T.StringType,
    T.BinaryType,
    T.DateType,
    T.TimestampType,
    T.TimestampNTZType,
)


def read_condition(base: Any, where: Any) -> Condition | None:
    """``where`` (SQL text, a classic or a Connect ``Column``) read into conjuncts."""
    if isinstance(where, str):
        return _sql.parse(where)
    if is_connect_column(where):
        text = _column.sql_text(where)
        return _sql.parse(text) if text is not None else _column.parse(where)
    if hasattr(where, "_jc"):  # a classic Column: Spark's SQL for its analysed condition
        plan = base.where(where)._jdf.queryExecution().analyzed()
        return _sql.parse(str(plan.condition().sql()))
    return None


@dataclass
class Confirmed:
    """What Spark confirmed of a condition: the filters, and the trees and literal values
    they came from."""

    filters: list[Filter] = field(default_factory=list)
    condition: Condition | None = None
    nodes: list[Node] = field(default_factory=list)
    values: dict[int, Any] = field(default_factory=dict)
    #: Literals compared in a type wider than their column's.
    widened: set[int] = field(default_factory=set)

    @property
    def complete(self) -> bool:
        """Whether every conjunct was read and confirmed."""
        return self.condition is not None and len(self.nodes) == len(self.condition.conjuncts)


def pushed_filters(base: Any, where: Any) -> Confirmed:
    """The conjuncts of ``base.where(where)`` that Spark confirms, as filters whose values
    have their column's type (none when nothing can prune)."""
    condition = read_condition(base, where)
    if condition is None:
        return Confirmed()
    check = _Check(base, condition, base.schema)
    try:
        return check.confirm(where)
    except Exception:
        # Anything Spark refuses here (a literal it cannot type, an invalid condition) is
        # Spark's to report when the query runs; pruning just does without it.
        return Confirmed(condition=condition)


class _Check:
    def __init__(self, base: Any, condition: Condition, schema: T.StructType) -> None:
        self.base = base
        self.spark = base.sparkSession
        self.condition = condition
        self.schema = schema
        self.sql = all(isinstance(c.original, str) for c in condition.conjuncts)
        self.widened: set[int] = set()

    def confirm(self, where: Any) -> Confirmed:
        result = Confirmed(condition=self.condition)
        candidates = [
            c.node
            for c in self.condition.conjuncts
            if c.node is not None and self._columns_supported(c.node)
        ]
        if not candidates:
            return result
        literal_types = self._literal_types()
        casts = self._coerce(candidates, literal_types)
        result.nodes = self._confirmed(where, casts)
        if result.nodes:
            result.values = self._values(result.nodes, casts, literal_types)
        self.widened = result.widened = casts.widened
        for node in result.nodes:
            f = self._filter(node, result.values)
            if f is not None:
                result.filters.append(f)
        return result

    def _type(self, ref: Ref) -> T.DataType | None:
        column = resolve(ref.path, self.schema)
        return None if column is None else column[1]

    def _column_type(self, ref: Ref) -> T.DataType:
        data_type = self._type(ref)
        assert data_type is not None
        return data_type

    def _columns_supported(self, node: Node) -> bool:
        for ref in _condition.refs(node):
            data_type = self._type(ref)
            if not isinstance(data_type, _SUPPORTED):
                return False
            if getattr(data_type, "collation", "UTF8_BINARY") not in ("UTF8_BINARY", None):
                return False
        return True

    def _literal_types(self) -> list[T.DataType]:
        if not self.condition.literals:
            return []
        known = [
            _literal_values.written_type(lit) if self.sql else None
            for lit in self.condition.literals
        ]
        asked = [i for i, t in enumerate(known) if t is None]
        if asked:
            fields = self._select([self._literal(i, None) for i in asked]).schema.fields
            # One field per literal asked (strict): every gap is filled.
            for i, f in zip(asked, fields, strict=True):
                known[i] = f.dataType
        return cast(list[T.DataType], known)

    def _coerce(self, nodes: list[Node], literal_types: list[T.DataType]) -> Casts:
        """How each comparison is expected to be typed (``_coercion.common_type``); a
        comparison with no such type leaves its conjunct to Spark."""
        casts = Casts()
        for node in nodes:
            for use in _comparisons(node):
                column = self._type(use.ref)
                assert column is not None
                # A BETWEEN's bounds are compared one by one (``lo <= x AND x <= hi``).
                groups = [(lit,) for lit in use.lits] if use.between else [use.lits]
                for lits in groups:
                    common: T.DataType | None = column
                    # IN lists are typed by their items' types (no literal's own digits).
                    own = {
                        lit.index: None if use.in_list else self._own_decimal(lit.index, column)
                        for lit in lits
                    }
                    for lit in lits:
                        if common is not None:
                            typed = own[lit.index] or literal_types[lit.index]
                            common = _coercion.common_type(common, typed)
                    if common is None:
                        casts.refused.update(lit.index for lit in lits)
                        continue
                    # Spark casts a whole IN list, column included, once any type differs.
                    cast_all = use.in_list and (
                        common != column or any(literal_types[i.index] != common for i in lits)
                    )
                    for lit in lits:
                        if cast_all or literal_types[lit.index] != common:
                            via = own[lit.index]
                            casts.literal[lit.index] = common if via is None else (via, common)
                        if cast_all or common != column:
                            casts.column[lit.index] = (column, common)
                        if common != column:
                            casts.widened.add(lit.index)
        return casts

    def _own_decimal(self, index: int, column: T.DataType) -> T.DecimalType | None:
        """The DECIMAL Spark gives an integer literal compared with a DECIMAL column: of
        the literal's own digits (``l_quantity < 5`` compares with ``CAST(5 AS
        DECIMAL(1,0))`` widened to the column's type), not of its integer type's."""
        if not isinstance(column, T.DecimalType):
            return None
        lit = self.condition.literals[index]
        if isinstance(lit, str):
            text = lit.strip()
            digits = text.lstrip("+-")
            if not digits.isdigit() or not digits.isascii():
                return None
        else:
            value = getattr(lit, "_value", None)
            if type(value) is not int:
                return None
            digits = str(abs(value))
        precision = max(1, len(digits.lstrip("0")))
        return T.DecimalType(precision, 0) if precision <= 38 else None

    def _confirmed(self, where: Any, casts: Casts) -> list[Node]:
        """The conjunct trees whose rendering Spark analyses as the caller's conjunct."""
        confirmed = self._structure(where, casts)
        betweens = [b for node in confirmed for b in _betweens(node)]
        if betweens:
            # Spark types a BETWEEN's bounds only when it replaces it by two comparisons,
            # after analysis: confirm their typing on those comparisons.
            plain = self._renderer(Casts())
            cast = self._renderer(casts)
            bounds = [
                Cmp(op, b.ref, lit) for b in betweens for op, lit in ((">=", b.low), ("<=", b.high))
            ]
            if not self._same(
                self._and([plain(c) for c in bounds]), self._and([cast(c) for c in bounds])
            ):
                confirmed = [n for n in confirmed if not _betweens(n)]
        return confirmed

    def _structure(self, where: Any, casts: Casts) -> list[Node]:
        render = self._renderer(casts)
        conjuncts = self.condition.conjuncts
        usable = [
            c.node is not None
            and self._columns_supported(c.node)
            and not any(lit.index in casts.refused for _, lit in _condition.literal_uses(c.node))
            for c in conjuncts
        ]
        whole = [
            render(c.node) if ok and c.node is not None else self._original(c.original)
            for c, ok in zip(conjuncts, usable, strict=True)
        ]
        if self._same(where, self._and(whole)):
            return [c.node for c, ok in zip(conjuncts, usable, strict=True) if ok and c.node]
        # Check each conjunct alone, once the split itself is confirmed (an AND inside a
        # construct the reader does not know must not pass for a conjunct).
        if len(conjuncts) < 2 or not self._same(
            where, self._and([self._original(c.original) for c in conjuncts])
        ):
            return []
        return [
            c.node
            for c, ok in zip(conjuncts, usable, strict=True)
            if ok and c.node is not None and self._same(c.original, render(c.node))
        ]

    def _values(
        self, nodes: list[Node], casts: Casts, literal_types: list[T.DataType]
    ) -> dict[int, Any]:
        """Literal index -> its value, cast as in the confirmed rendering, as Python: from
        the text where it is certain (``_literal_values``), else evaluated by Spark."""
        indices = sorted(
            {lit.index for n in nodes for _, lit in _condition.literal_uses(n)}
            | {lit.index for n in nodes for lit in _condition.other_literals(n)}
        )
        values: dict[int, Any] = {}
        for index in indices:
            cast = casts.literal.get(index)
            target = cast[1] if isinstance(cast, tuple) else cast
            known = _literal_values.value(
                self.condition.literals[index], literal_types[index], target
            )
            if known is not _literal_values.UNKNOWN:
                values[index] = known
        asked = [i for i in indices if i not in values]
        if not asked:
            return values
        exprs = [self._literal(i, casts.literal.get(i), try_cast=True) for i in asked]
        table = self._select(exprs).toArrow()
        for position, index in enumerate(asked):
            try:
                values[index] = table.column(position)[0].as_py()
            except (OverflowError, ValueError):  # beyond Python's datetime range
                values[index] = _UNREPRESENTABLE
        return values

    # --- building filters -----------------------------------------------------------------

    def _filter(self, node: Node, values: dict[int, Any]) -> Filter | None:
        """The filter of a confirmed tree; None for the parts it cannot state (dropping them
        under AND only widens; under OR or NOT the whole branch goes)."""
        if isinstance(node, AndNode):
            left, right = self._filter(node.left, values), self._filter(node.right, values)
            if left is None or right is None:
                return left or right
            return And(left, right)
        if isinstance(node, OrNode):
            left, right = self._filter(node.left, values), self._filter(node.right, values)
            return None if left is None or right is None else Or(left, right)
        if isinstance(node, NotNode):
            child = self._strict(node.child, values)
            return None if child is None else Not(child)
        return self._strict(node, values)

    def _strict(self, node: Node, values: dict[int, Any]) -> Filter | None:
        """The filter of ``node`` with nothing dropped (what NOT may wrap)."""
        if isinstance(node, (AndNode, OrNode)):
            left, right = self._strict(node.left, values), self._strict(node.right, values)
            if left is None or right is None:
                return None
            return And(left, right) if isinstance(node, AndNode) else Or(left, right)
        if isinstance(node, NotNode):
            child = self._strict(node.child, values)
            return None if child is None else Not(child)
        path = node.ref.path
        if isinstance(node, _condition.IsNull):
            return IsNotNull(path) if node.negated else IsNull(path)
        if isinstance(node, BoolRef):
            return EqualTo(path, True) if isinstance(self._type(node.ref), T.BooleanType) else None
        if isinstance(node, Cmp):
            value = values.get(node.lit.index, _UNREPRESENTABLE)
            if value is _UNREPRESENTABLE or (value is None and node.op != "<=>"):
                return None
            if node.op == "<=>" and value is None:
                return IsNull(path)
            if node.lit.index in self.widened:
                return _coercion.restate(node.op, path, value, self._column_type(node.ref))
            if node.op == "<>":
                return Not(EqualTo(path, value))
            return _OPS[node.op](path, value)  # type: ignore[call-arg]
        if isinstance(node, Between):
            low, high = values.get(node.low.index), values.get(node.high.index)
            if low in (None, _UNREPRESENTABLE) or high in (None, _UNREPRESENTABLE):
                return None
            if node.low.index in self.widened:
                column = self._column_type(node.ref)
                above = _coercion.restate(">=", path, low, column)
                below = _coercion.restate("<=", path, high, column)
                if above is None or below is None:
                    return None
                both = And(above, below)
            else:
                both = And(GreaterThanOrEqual(path, low), LessThanOrEqual(path, high))
            return Not(both) if node.negated else both
        if isinstance(node, InList):
            items = tuple(values.get(i.index, _UNREPRESENTABLE) for i in node.items)
            if _UNREPRESENTABLE in items:
                return None
            if node.items[0].index in self.widened:
                column = self._column_type(node.ref)
                # Items the column cannot hold never match: the list without them keeps the
                # same rows.
                held = [_coercion.restate_in(v, column) for v in items]
                items = tuple(v for ok, v in held if ok)
                if not items:
                    return None
            return Not(In(path, items)) if node.negated else In(path, items)
        if isinstance(node, StringFn):
            text = values.get(node.text.index)
            if not isinstance(text, str):
                return None
            return _STRING_FILTERS[node.name](path, text)
        if isinstance(node, Like):
            return self._like(node, values)
        return None

    def _like(self, node: Like, values: dict[int, Any]) -> Filter | None:
        """A LIKE pattern as Spark's string filters: ``p`` an equality, ``p%`` a prefix,
        ``%p`` a suffix, ``%p%`` a substring, exactly; any other pattern the AND of its
        pieces' filters, which keeps every matching row and maybe more (never negated)."""
        pattern = values.get(node.pattern.index)
        escape = "\\" if node.escape is None else values.get(node.escape.index)
        if not isinstance(pattern, str) or not isinstance(escape, str) or len(escape) != 1:
            return None
        tokens = _like_tokens(pattern, escape)
        if tokens is None:
            return None
        path = node.ref.path
        exact: Filter | None = None
        match tokens:
            case [str(text)]:
                exact = EqualTo(path, text)
            case [str(text), _Wild.ANY]:
                exact = StringStartsWith(path, text)
            case [_Wild.ANY, str(text)]:
                exact = StringEndsWith(path, text)
            case [_Wild.ANY, str(text), _Wild.ANY]:
                exact = StringContains(path, text)
            case [_Wild.ANY]:
                exact = IsNotNull(path)
        if exact is not None:
            return Not(exact) if node.negated else exact
        if node.negated:
            return None
        parts: list[Filter] = []
        for i, t in enumerate(tokens):
            if not isinstance(t, str) or not t:
                continue
            if i == 0:
                parts.append(StringStartsWith(path, t))
            elif i == len(tokens) - 1:
                parts.append(StringEndsWith(path, t))
            else:
                parts.append(StringContains(path, t))
        if not parts:
            return None
        combined = parts[0]
        for p in parts[1:]:
            combined = And(combined, p)
        return Widened(combined)

    # --- talking to Spark ---------------------------------------------------------------

    def _same(self, a: Any, b: Any) -> bool:
        return bool(self.base.where(a).sameSemantics(self.base.where(b)))

    def _select(self, exprs: list[Any]) -> Any:
        one = self.spark.range(1)
        if self.sql:
            return one.selectExpr(*(f"{e} AS `c{i}`" for i, e in enumerate(exprs)))
        return one.select(*(e.alias(f"c{i}") for i, e in enumerate(exprs)))

    def _original(self, original: Any) -> Any:
        return f"({original})" if self.sql else original

    def _and(self, parts: list[Any]) -> Any:
        if self.sql:
            return " AND ".join(parts)
        out = parts[0]
        for p in parts[1:]:
            out = out & p
        return out

    def _literal(
        self,
        index: int,
        cast: T.DataType | tuple[T.DataType, T.DataType] | None,
        try_cast: bool = False,
    ) -> Any:
        lit = self.condition.literals[index]
        via, to = cast if isinstance(cast, tuple) else (None, cast)
        if self.sql:
            if to is None:
                return lit
            if via is not None:
                lit = f"CAST({lit} AS {via.simpleString()})"
            return f"{'TRY_CAST' if try_cast else 'CAST'}({lit} AS {to.simpleString()})"
        from pyspark.sql.connect.column import Column
        from pyspark.sql.connect.expressions import CastExpression

        if to is None:
            return Column(lit)
        if via is not None:
            lit = CastExpression(lit, via)
        return Column(CastExpression(lit, to, "try" if try_cast else None))

    def _renderer(self, casts: Casts) -> Callable[[Node], Any]:
        literals = self.condition.literals
        if self.sql:
            sql = SqlRenderer(self._literal, literals, casts)
            return lambda node: "(" + sql.render(node) + ")"
        return ColumnRenderer(self._literal, literals, casts).render


_UNREPRESENTABLE = object()


@dataclass(frozen=True)
class _Comparison:
    """A column compared with literals typed together (one comparison, a BETWEEN's bounds,
    an IN list's items)."""

    ref: Ref
    lits: tuple[Lit, ...]
    in_list: bool = False
    between: bool = False


_STRING_FILTERS: dict[str, Callable[[tuple[str, ...], str], Filter]] = {
    "startswith": StringStartsWith,
    "endswith": StringEndsWith,
    "contains": StringContains,
}


class _Wild(enum.Enum):
    """A LIKE wildcard."""

    ANY = "%"
    ONE = "_"


def _like_tokens(pattern: str, escape: str) -> list[str | _Wild] | None:
    """A LIKE pattern as literal runs and wildcards (None when it ends with its escape
    character)."""
    tokens: list[str | _Wild] = []
    literal: str | None = None
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == escape:
            if i + 1 >= len(pattern):
                return None
            literal = (literal or "") + pattern[i + 1]
            i += 2
            continue
        if c in "%_":
            if literal is not None:
                tokens.append(literal)
                literal = None
            wild = _Wild(c)
            if not (wild is _Wild.ANY and tokens and tokens[-1] is _Wild.ANY):
                tokens.append(wild)
        else:
            literal = (literal or "") + c
        i += 1
    if literal is not None:
        tokens.append(literal)
    return tokens


def _comparisons(node: Node) -> list[_Comparison]:
    if isinstance(node, (AndNode, OrNode)):
        return _comparisons(node.left) + _comparisons(node.right)
    if isinstance(node, NotNode):
        return _comparisons(node.child)
    if isinstance(node, (Cmp, StringFn)):
        return [_Comparison(node.ref, (node.lit if isinstance(node, Cmp) else node.text,))]
    if isinstance(node, Between):
        return [_Comparison(node.ref, (node.low, node.high), between=True)]
    if isinstance(node, InList):
        return [_Comparison(node.ref, node.items, in_list=True)]
    return []


def _betweens(node: Node) -> list[Between]:
    if isinstance(node, (AndNode, OrNode)):
        return _betweens(node.left) + _betweens(node.right)
    if isinstance(node, NotNode):
        return _betweens(node.child)
    return [node] if isinstance(node, Between) else []
