"""Whether pqindex reads a Spark SQL condition exactly as Spark does.

pqindex speaks SQL as DuckDB reads it, Spark its own dialect: ``'a\\\\b'`` is one backslash
to Spark and two to pqindex, ``"x"`` is a string to Spark and a column to pqindex, and
``float_col > 0.1`` compares in DOUBLE in Spark and in REAL in pqindex. So a condition is
handed to pqindex as written only when every part of it is in the small common ground, and
Spark has confirmed the reading (``_client_filters``): comparisons, BETWEEN, IN and IS NULL
of plain column names with integers, plain decimals, quote-free strings without escapes,
``DATE 'yyyy-mm-dd'`` and booleans, compared in the column's own type, whose values Spark
evaluated to the very numbers, text and dates the literals spell.
"""

from __future__ import annotations

import datetime
import decimal
import re
from typing import Any

from pqindex.spark import _condition
from pqindex.spark._client_filters import Confirmed
from pqindex.spark._condition import AndNode, Between, Cmp, InList, Node, NotNode, OrNode

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INTEGER = re.compile(r"-?[0-9]+\Z")
_DECIMAL = re.compile(r"-?[0-9]+\.[0-9]+\Z")
_STRING = re.compile(r"'[^'\\]*'\Z")
_DATE = re.compile(r"DATE\s*'([0-9]{4}-[0-9]{2}-[0-9]{2})'\Z", re.IGNORECASE)


def as_written(text: str, confirmed: Confirmed) -> bool:
    """Whether ``text`` means to pqindex exactly what it means to Spark."""
    condition = confirmed.condition
    if condition is None or not confirmed.complete or "--" in text or "/*" in text:
        return False
    for node in confirmed.nodes:
        if not _common(node):
            return False
        for _, lit in _condition.literal_uses(node):
            if lit.index in confirmed.widened:  # compared in a type wider than the column's
                return False
            if not _spells(condition.literals[lit.index], confirmed.values.get(lit.index)):
                return False
    return True


def _common(node: Node) -> bool:
    if isinstance(node, (AndNode, OrNode)):
        return _common(node.left) and _common(node.right)
    if isinstance(node, NotNode):
        return _common(node.child)
    if isinstance(node, Cmp) and node.op == "<=>":
        return False
    if not isinstance(node, (Cmp, Between, InList, _condition.IsNull)):
        return False
    return all(_NAME.match(part) for part in node.ref.path)


def _spells(text: str, value: Any) -> bool:
    """Whether the literal ``text`` spells ``value`` (Spark's value, cast to the column's
    type) in a form both dialects read alike."""
    if text.upper() in ("TRUE", "FALSE"):
        return isinstance(value, bool) and value == (text.upper() == "TRUE")
    if _INTEGER.match(text):
        return (
            isinstance(value, (int, decimal.Decimal))
            and not isinstance(value, bool)
            and (value == int(text))
        )
    if _DECIMAL.match(text):
        return isinstance(value, decimal.Decimal) and value == decimal.Decimal(text)
    if _STRING.match(text):
        return isinstance(value, str) and value == text[1:-1]
    date = _DATE.match(text)
    if date:
        return (
            isinstance(value, datetime.date)
            and not isinstance(value, datetime.datetime)
            and value.isoformat() == date.group(1)
        )
    return False
