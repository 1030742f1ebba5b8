"""A Spark Connect ``Column`` condition read into the skeleton of ``_condition``.

A Connect ``Column`` is an expression tree on the client (``pyspark.sql.connect
.expressions``): functions by name (``and``, ``==``, ``in``, ``startsWith``, ...), column
references, literal values with their Spark type, SQL text from ``F.expr``. The tree is read
as written; literal leaves are kept as expressions for Spark to cast and evaluate.

Only Connect columns come here (``_session.is_connect_column``): the connect modules this
imports need the connect extras, which a classic-only install lacks.
"""

from __future__ import annotations

from typing import Any

from pqindex.spark import _sql
from pqindex.spark._condition import (
    AndNode,
    BoolRef,
    Cmp,
    Condition,
    Conjunct,
    InList,
    IsNull,
    Like,
    Lit,
    Node,
    NotNode,
    NotUnderstood,
    OrNode,
    Ref,
    StringFn,
    split_name,
)

_COMPARISONS = {"==": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "<=>": "<=>"}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def sql_text(column: Any) -> str | None:
    """The SQL text of a column built by ``F.expr(text)``, else None."""
    from pyspark.sql.connect.expressions import SQLExpression

    expr = getattr(column, "_expr", None)
    return expr._expr if isinstance(expr, SQLExpression) else None


def parse(column: Any) -> Condition:
    """The conjuncts of a Connect ``Column`` (split at its top-level ``and``s)."""
    from pyspark.sql.connect.column import Column

    reader = _Reader()
    conjuncts = []
    for expr in _conjuncts(column._expr):
        start = len(reader.literals)
        try:
            node = reader.node(expr)
        except NotUnderstood:
            del reader.literals[start:]
            node = None
        conjuncts.append(Conjunct(node, Column(expr)))
    return Condition(tuple(conjuncts), tuple(reader.literals))


def _conjuncts(expr: Any) -> list[Any]:
    if _function(expr, "and") is not None:
        return [c for arg in expr._args for c in _conjuncts(arg)]
    return [expr]


def _function(expr: Any, *names: str) -> list[Any] | None:
    """The arguments of ``expr`` if it calls one of ``names``."""
    from pyspark.sql.connect.expressions import UnresolvedFunction

    if isinstance(expr, UnresolvedFunction) and expr._name in names and not expr._is_distinct:
        return list(expr._args)
    return None


class _Reader:
    def __init__(self) -> None:
        self.literals: list[Any] = []

    def node(self, expr: Any) -> Node:
        from pyspark.sql.connect.expressions import SQLExpression

        if isinstance(expr, SQLExpression):
            return self.sql(expr._expr)
        for name, cls in (("and", AndNode), ("or", OrNode)):
            args = _function(expr, name)
            if args is not None and len(args) == 2:
                return cls(self.node(args[0]), self.node(args[1]))
        args = _function(expr, "not", "!")
        if args is not None and len(args) == 1:
            return NotNode(self.node(args[0]))
        for name in ("isNull", "isnull", "isNotNull", "isnotnull"):
            args = _function(expr, name)
            if args is not None and len(args) == 1:
                return IsNull(self.ref(args[0]), negated="ot" in name)
        for name, op in _COMPARISONS.items():
            args = _function(expr, name)
            if args is not None and len(args) == 2:
                left, right = args
                if self.is_literal(right):
                    return Cmp(op, self.ref(left), self.literal(right))
                if self.is_literal(left):
                    return Cmp(_FLIPPED.get(op, op), self.ref(right), self.literal(left), True)
                raise NotUnderstood(name)
        args = _function(expr, "in")
        if args is not None and len(args) >= 2:
            return InList(self.ref(args[0]), tuple(self.literal(a) for a in args[1:]))
        for fn, names in (
            ("startswith", ("startsWith", "startswith")),
            ("endswith", ("endsWith", "endswith")),
            ("contains", ("contains",)),
        ):
            args = _function(expr, *names)
            if args is not None and len(args) == 2:
                return StringFn(fn, self.ref(args[0]), self.literal(args[1]))
        args = _function(expr, "like")
        if args is not None and len(args) == 2:
            return Like(self.ref(args[0]), self.literal(args[1]))
        return BoolRef(self.ref(expr))

    def sql(self, text: str) -> Node:
        """An ``F.expr`` leaf: its text read as one SQL condition, its literals kept as
        ``F.expr`` columns' expressions."""
        from pyspark.sql.connect.expressions import SQLExpression

        condition = _sql.parse(text)
        if len(condition.conjuncts) != 1 or condition.conjuncts[0].node is None:
            raise NotUnderstood(text)
        offset = len(self.literals)
        self.literals.extend(SQLExpression(t) for t in condition.literals)
        return _shift(condition.conjuncts[0].node, offset)

    def ref(self, expr: Any) -> Ref:
        from pyspark.sql.connect.expressions import (
            ColumnReference,
            LiteralExpression,
            UnresolvedExtractValue,
        )

        if isinstance(expr, ColumnReference) and expr._plan_id is None:
            # As Spark splits it: dots separate fields, backticks quote a name.
            return Ref(split_name(expr._unparsed_identifier))
        if isinstance(expr, UnresolvedExtractValue):
            field = expr._extraction
            if isinstance(field, LiteralExpression) and isinstance(field._value, str):
                return Ref((*self.ref(expr._child).path, field._value))
        raise NotUnderstood(type(expr).__name__)

    @staticmethod
    def is_literal(expr: Any) -> bool:
        from pyspark.sql.connect.expressions import CastExpression, LiteralExpression

        if isinstance(expr, CastExpression):
            return _Reader.is_literal(expr._expr)
        return isinstance(expr, LiteralExpression)

    def literal(self, expr: Any) -> Lit:
        if not self.is_literal(expr):
            raise NotUnderstood(type(expr).__name__)
        self.literals.append(expr)
        return Lit(len(self.literals) - 1)


def _shift(node: Node, offset: int) -> Node:
    """``node`` with its literal indices moved by ``offset``."""
    from dataclasses import fields, replace

    changes: dict[str, Any] = {}
    for f in fields(node):
        value = getattr(node, f.name)
        if isinstance(value, Lit):
            changes[f.name] = Lit(value.index + offset)
        elif isinstance(value, tuple) and value and isinstance(value[0], Lit):
            changes[f.name] = tuple(Lit(v.index + offset) for v in value)
        elif f.name in ("left", "right", "child"):
            changes[f.name] = _shift(value, offset)
    return replace(node, **changes)
