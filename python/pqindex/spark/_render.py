"""How ``_client_filters`` shows Spark its reading of a condition: the skeleton rendered
back as Spark SQL text or as a Spark Connect ``Column``, each literal and column cast as
``Casts`` says, for ``DataFrame.sameSemantics`` to compare with the caller's condition."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from pyspark.sql import types as T

from pqindex.spark import _coercion, _condition
from pqindex.spark._condition import (
    AndNode,
    Between,
    Cmp,
    InList,
    Like,
    Lit,
    Node,
    NotNode,
    OrNode,
    Ref,
    StringFn,
)

#: A literal's cast: one type, or (for an integer literal compared in a DECIMAL) the
#: literal's own DECIMAL and then the comparison's, as Spark's analyser writes it.
LiteralCast: TypeAlias = T.DataType | tuple[T.DataType, T.DataType]

#: ``literal(index, cast)``: the condition's literal as the caller wrote it (SQL text or a
#: Connect ``Column``), cast as ``cast`` says if given.
Literal = Callable[[int, LiteralCast | None], Any]

#: The names Connect's ``Column`` methods give the string functions.
_CONNECT_NAMES = {"startswith": "startsWith", "endswith": "endsWith", "contains": "contains"}


@dataclass
class Casts:
    """How a reading is rendered for Spark to confirm: the type each literal is cast to,
    the type the column of each literal's comparison is cast to (when Spark compares in a
    wider type than the column's own, or casts a whole IN list), and literals of
    comparisons no type was found for."""

    literal: dict[int, LiteralCast] = field(default_factory=dict)
    column: dict[int, tuple[T.DataType, T.DataType]] = field(default_factory=dict)
    widened: set[int] = field(default_factory=set)
    refused: set[int] = field(default_factory=set)


def _quote(path: tuple[str, ...]) -> str:
    return ".".join("`" + p.replace("`", "``") + "`" for p in path)


class SqlRenderer:
    """A tree as Spark SQL text, literals as written (cast where ``casts`` says)."""

    def __init__(self, literal: Literal, literals: Sequence[Any], casts: Casts) -> None:
        self.literal = literal
        self.literals = literals
        self.casts = casts

    def lit(self, lit: Lit) -> str:
        return str(self.literal(lit.index, self.casts.literal.get(lit.index)))

    def ref(self, ref: Ref, lit: Lit) -> str:
        out = _quote(ref.path)
        if lit.index in self.casts.column:
            for step in _coercion.cast_chain(*self.casts.column[lit.index]):
                out = f"CAST({out} AS {step.simpleString()})"
        return out

    def render(self, node: Node) -> str:
        if isinstance(node, (AndNode, OrNode)):
            op = "AND" if isinstance(node, AndNode) else "OR"
            return f"({self.render(node.left)}) {op} ({self.render(node.right)})"
        if isinstance(node, NotNode):
            return f"NOT ({self.render(node.child)})"
        ref = _quote(node.ref.path)
        not_ = "NOT " if getattr(node, "negated", False) else ""
        if isinstance(node, Cmp):
            ref = self.ref(node.ref, node.lit)
            if node.literal_first:
                op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(node.op, node.op)
                return f"{self.lit(node.lit)} {op} {ref}"
            return f"{ref} {node.op} {self.lit(node.lit)}"
        if isinstance(node, Between):  # as written: Spark types the bounds later
            low, high = (
                self.literals[node.low.index],
                self.literals[node.high.index],
            )
            return f"{ref} {not_}BETWEEN {low} AND {high}"
        if isinstance(node, InList):
            column = self.ref(node.ref, node.items[0])
            return f"{column} {not_}IN ({', '.join(self.lit(i) for i in node.items)})"
        if isinstance(node, _condition.IsNull):
            return f"{ref} IS {not_}NULL"
        if isinstance(node, Like):
            escape = "" if node.escape is None else f" ESCAPE {self.lit(node.escape)}"
            return f"{ref} {not_}LIKE {self.lit(node.pattern)}{escape}"
        if isinstance(node, StringFn):
            return f"{node.name}({ref}, {self.lit(node.text)})"
        return ref  # BoolRef


class ColumnRenderer:
    """A tree as a Spark Connect ``Column``, literals as given (cast where ``casts``
    says)."""

    def __init__(self, literal: Literal, literals: Sequence[Any], casts: Casts) -> None:
        self.literal = literal
        self.literals = literals
        self.casts = casts

    def render(self, node: Node) -> Any:
        from pyspark.sql.connect.column import Column

        return Column(self.expr(node))

    def lit(self, lit: Lit) -> Any:
        return self.literal(lit.index, self.casts.literal.get(lit.index))._expr

    def ref(self, ref: Ref, lit: Lit) -> Any:
        from pyspark.sql.connect.expressions import CastExpression, ColumnReference

        out: Any = ColumnReference(_quote(ref.path))
        if lit.index in self.casts.column:
            for step in _coercion.cast_chain(*self.casts.column[lit.index]):
                out = CastExpression(out, step)
        return out

    def expr(self, node: Node) -> Any:
        from pyspark.sql.connect.expressions import ColumnReference, UnresolvedFunction

        def call(name: str, *args: Any) -> Any:
            return UnresolvedFunction(name, list(args))

        if isinstance(node, (AndNode, OrNode)):
            name = "and" if isinstance(node, AndNode) else "or"
            return call(name, self.expr(node.left), self.expr(node.right))
        if isinstance(node, NotNode):
            return call("not", self.expr(node.child))
        ref = ColumnReference(_quote(node.ref.path))
        out: Any
        if isinstance(node, Cmp):
            ref = self.ref(node.ref, node.lit)
            op = "==" if node.op in ("=", "<>") else node.op
            if node.literal_first:
                op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
                out = call(op, self.lit(node.lit), ref)
            else:
                out = call(op, ref, self.lit(node.lit))
            return call("not", out) if node.op == "<>" else out
        if isinstance(node, Between):  # as written: Spark types the bounds later
            literals = self.literals
            out = call("between", ref, literals[node.low.index], literals[node.high.index])
        elif isinstance(node, InList):
            out = call("in", self.ref(node.ref, node.items[0]), *(self.lit(i) for i in node.items))
        elif isinstance(node, _condition.IsNull):
            return call("isNotNull" if node.negated else "isNull", ref)
        elif isinstance(node, Like):
            extra = [] if node.escape is None else [self.lit(node.escape)]
            out = call("like", ref, self.lit(node.pattern), *extra)
        elif isinstance(node, StringFn):
            return call(_CONNECT_NAMES[node.name], ref, self.lit(node.text))
        else:
            return ref
        return call("not", out) if getattr(node, "negated", False) else out
