"""The prunable skeleton of a Spark condition, as read on the client.

A condition (SQL text or a Spark Connect ``Column``) is split into its top-level conjuncts;
each conjunct is either read into the small tree below (comparisons of one column with
literals, combined with AND, OR and NOT) or kept opaque. Literals stay as the caller wrote
them (SQL text, or the Connect literal expression): Spark, not this module, says what they
mean. ``_client_filters`` then asks Spark to confirm the reading and to evaluate the
literals before anything prunes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Ref:
    """A column path (``("st", "a")`` for a struct field) as written."""

    path: tuple[str, ...]


@dataclass(frozen=True)
class Lit:
    """The ``index``-th literal of the condition."""

    index: int


@dataclass(frozen=True)
class Cmp:
    """``ref op lit`` (``lit op ref`` when ``literal_first``); ``op`` is one of ``=``,
    ``<>``, ``<``, ``<=``, ``>``, ``>=``, ``<=>``."""

    op: str
    ref: Ref
    lit: Lit
    literal_first: bool = False


@dataclass(frozen=True)
class Between:
    ref: Ref
    low: Lit
    high: Lit
    negated: bool = False


@dataclass(frozen=True)
class InList:
    ref: Ref
    items: tuple[Lit, ...]
    negated: bool = False


@dataclass(frozen=True)
class IsNull:
    ref: Ref
    negated: bool = False


@dataclass(frozen=True)
class Like:
    """``ref LIKE pattern [ESCAPE escape]``; ``escape`` is the escape literal, if any."""

    ref: Ref
    pattern: Lit
    escape: Lit | None = None
    negated: bool = False


#: Spark's string functions that make a condition, by their SQL names.
STRING_FUNCTIONS = ("startswith", "endswith", "contains")


@dataclass(frozen=True)
class StringFn:
    """``startswith(ref, lit)``, ``endswith`` or ``contains``, as Connect's
    ``Column.startswith`` (etc.) builds it; ``name`` is the lower-case function name."""

    name: str
    ref: Ref
    text: Lit


@dataclass(frozen=True)
class BoolRef:
    """A boolean column used as a condition by itself."""

    ref: Ref


@dataclass(frozen=True)
class AndNode:
    left: Node
    right: Node


@dataclass(frozen=True)
class OrNode:
    left: Node
    right: Node


@dataclass(frozen=True)
class NotNode:
    child: Node


Node = Cmp | Between | InList | IsNull | Like | StringFn | BoolRef | AndNode | OrNode | NotNode


@dataclass(frozen=True)
class Conjunct:
    """One top-level conjunct: its tree (None when not understood) and the caller's own
    form of it (SQL text or a Column), which is what Spark checks the tree against."""

    node: Node | None
    original: Any


@dataclass(frozen=True)
class Condition:
    """A condition read on the client: its conjuncts and its literals, by ``Lit.index``."""

    conjuncts: tuple[Conjunct, ...]
    literals: tuple[Any, ...]


class NotUnderstood(Exception):
    """Raised while reading a conjunct that uses anything outside the skeleton."""


def refs(node: Node) -> list[Ref]:
    """The column references of a tree."""
    if isinstance(node, (AndNode, OrNode)):
        return refs(node.left) + refs(node.right)
    if isinstance(node, NotNode):
        return refs(node.child)
    return [node.ref]


def literal_uses(node: Node) -> list[tuple[Ref, Lit]]:
    """Each literal compared with a column, with that column (patterns and escapes are not
    compared with the column, so they are left out)."""
    if isinstance(node, (AndNode, OrNode)):
        return literal_uses(node.left) + literal_uses(node.right)
    if isinstance(node, NotNode):
        return literal_uses(node.child)
    if isinstance(node, Cmp):
        return [(node.ref, node.lit)]
    if isinstance(node, Between):
        return [(node.ref, node.low), (node.ref, node.high)]
    if isinstance(node, InList):
        return [(node.ref, item) for item in node.items]
    if isinstance(node, StringFn):
        return [(node.ref, node.text)]
    return []


def other_literals(node: Node) -> list[Lit]:
    """LIKE patterns and escapes: literals evaluated as they are."""
    if isinstance(node, (AndNode, OrNode)):
        return other_literals(node.left) + other_literals(node.right)
    if isinstance(node, NotNode):
        return other_literals(node.child)
    if isinstance(node, Like):
        return [node.pattern] + ([node.escape] if node.escape is not None else [])
    return []


def split_name(attribute: str) -> tuple[str, ...]:
    """``a.b`` as ("a", "b"); backticks quote names holding dots (``` `a.b`.c ```)."""
    parts, current, quoted, i = [], "", False, 0
    while i < len(attribute):
        c = attribute[i]
        if c == "`":
            if quoted and attribute[i + 1 : i + 2] == "`":
                current += "`"
                i += 1
            else:
                quoted = not quoted
        elif c == "." and not quoted:
            parts.append(current)
            current = ""
        else:
            current += c
        i += 1
    parts.append(current)
    return tuple(parts)
